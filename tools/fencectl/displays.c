/* SPDX-License-Identifier: MIT */
/*
 * fencectl dump: fencelined's dump, then the display service's (docs/fencectl.md,
 * "displays") when one runs for this user. Both are views their service
 * writes; this only joins them: a text section after fencelined's, or a
 * "displays" member spliced into fencelined's JSON object. A display
 * service that does not run is not started (fl_introspect_display_dump()
 * never starts one) and adds nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "fencectl.h"

/* A whole view into a NUL-terminated malloc()ed string (the caller's), or NULL with *@err. */
static char *slurp(int fd, size_t *ret_len, int *err)
{
	size_t len = 0;
	char *text;

	*err = fl_introspect_read(fd, NULL, 0, &len);
	if (*err != -ENOBUFS)
		return NULL;
	text = malloc(len + 1);
	if (!text) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = fl_introspect_read(fd, text, len + 1, ret_len);
	if (*err) {
		free(text);
		return NULL;
	}
	return text;
}

static size_t trim(const char *s, size_t len)
{
	while (len && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	return len;
}

int fencectl_dump(bool json)
{
	char *daemon = NULL, *displays = NULL;
	size_t dlen = 0, plen = 0;
	int r, dr, fd = -1;

	r = fencectl_request_dump(VIEW_DUMP, json ? FL_INTROSPECT_JSON : 0, 0, &fd);
	if (r == -ENOENT)
		return fencectl_no_daemon();
	if (r == 0) {
		daemon = slurp(fd, &dlen, &r);
		close(fd);
		fd = -1;
	}
	if (r < 0)
		goto out;
	dr = fl_introspect_display_dump(json ? FL_INTROSPECT_JSON : 0, &fd);
	if (dr == 0) {
		displays = slurp(fd, &plen, &dr);
		close(fd);
	}
	if (dr < 0 && dr != -ENOENT)
		fprintf(stderr, "fencectl dump: the display service did not answer: %s\n",
			strerror(-dr));
	if (json) {
		/* fencelined's object, its closing brace taken off to add one member. */
		dlen = trim(daemon, dlen);
		if (!dlen || daemon[dlen - 1] != '}') {
			r = -EPROTO;
			goto out;
		}
		fwrite(daemon, 1, dlen - 1, stdout);
		if (displays) {
			fputs(",\"displays\":", stdout);
			fwrite(displays, 1, trim(displays, plen), stdout);
		}
		fputs("}\n", stdout);
	} else {
		fwrite(daemon, 1, dlen, stdout);
		if (displays)
			printf("\ndisplays:\n--------------\n%s", displays);
	}
	if (dr < 0 && dr != -ENOENT)
		r = dr;
out:
	free(daemon);
	free(displays);
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "fencectl dump: %s\n", strerror(r < 0 ? -r : EIO));
		return 1;
	}
	return 0;
}

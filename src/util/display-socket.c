/* SPDX-License-Identifier: MIT */
/*
 * Where the display service's socket lives (util.h): beside fencelined's,
 * by fl__socket_path()'s rule, one per display choice ($FENCELINE_DISPLAY,
 * docs/display.md, "Choosing the output"). A file of its own, so that
 * fencelined, which links util statically, carries nothing of the display.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "util.h"

static const char *const spec_names[] = { "auto", "virtual", "window", "terminal", "kms" };

int fl__display_spec_parse(const char *spec, struct fl__display_spec *ret)
{
	const char *colon;
	size_t n;

	memset(ret, 0, sizeof(*ret));
	if (!spec || !spec[0])
		return -EINVAL;
	colon = strchr(spec, ':');
	n = colon ? (size_t)(colon - spec) : strlen(spec);
	for (size_t i = 0; i < sizeof(spec_names) / sizeof(spec_names[0]); i++)
		if (strlen(spec_names[i]) == n && !strncmp(spec, spec_names[i], n))
			strcpy(ret->driver, spec_names[i]);
	if (!ret->driver[0])
		return -EINVAL;
	if (!colon)
		return 0;
	/* Only a card and a terminal are places; the argument becomes a driver option. */
	if (strcmp(ret->driver, "kms") && strcmp(ret->driver, "terminal"))
		return -EINVAL;
	colon++;
	if (!colon[0] || strlen(colon) >= sizeof(ret->where) || strpbrk(colon, ", \t\n"))
		return -EINVAL;
	/* A card by its name or path, a terminal by its path: "kms:card0", "terminal:/dev/pts/3". */
	n = (size_t)snprintf(ret->where, sizeof(ret->where), "%s%s",
			     !strcmp(ret->driver, "kms") && !strchr(colon, '/') ? "/dev/dri/" : "",
			     colon);
	return n < sizeof(ret->where) && ret->where[0] == '/' ? 0 : -EINVAL;
}

const char *fl__display_spec_names(void)
{
	return "auto, virtual, window, terminal[:TTY], kms[:CARD]";
}

int fl__display_socket_path(char *buf, size_t cap)
{
	const char *env = getenv("FENCELINE_DISPLAY_SOCKET");
	const char *choice = getenv("FENCELINE_DISPLAY");
	struct fl__display_spec spec;
	char *slash;
	int n, r;

	if (env && env[0])
		n = snprintf(buf, cap, "%s", env);
	else {
		/* fencelined's directory, chosen (and its traps refused) by the same rule. */
		r = fl__socket_path(buf, cap);
		if (r < 0)
			return r;
		slash = strrchr(buf, '/');
		if (slash)
			slash[1] = '\0';
		else
			buf[0] = '\0';
		n = (int)strlen(buf);
		if (choice && choice[0]) {
			/* One service per choice, as X has one server per $DISPLAY. */
			if (fl__display_spec_parse(choice, &spec) < 0)
				return -EINVAL;
			n += snprintf(buf + n, cap - (size_t)n, "displayd-%s", spec.driver);
			for (const char *w = spec.where; *w && (size_t)n + 2 < cap; w++)
				buf[n++] = *w == '/' ? '-' : *w;
			if ((size_t)n < cap)
				buf[n] = '\0';
			n += snprintf(buf + n, cap - (size_t)n, ".sock");
		} else
			n += snprintf(buf + n, cap - (size_t)n, "displayd.sock");
	}
	if (n < 0 || (size_t)n >= cap || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

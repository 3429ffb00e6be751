/* SPDX-License-Identifier: MIT */
/*
 * fencectl heaps: the allocation service's heaps and what each client holds,
 * like ION's debugfs heap files, or as JSON (docs/fencectl.md, "heaps"). The
 * daemon writes it (DUMP with FL_DUMP_HEAPS); this only copies it out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "heaps.h"
#include "protocol.h"

const char fencectl_heaps_usage[] =
	"usage: fencectl heaps [--json]\n"
	"\n"
	"The daemon's heaps (system, carveout): for each, the clients holding buffers\n"
	"from it (comm, pid, bytes, buffers, peak), the totals and high-water marks,\n"
	"and a carveout's free space; then each client's total over all heaps, with\n"
	"the per-client limit and the allocations it refused.\n"
	"\n"
	"  --json   one JSON object instead of text; schema in docs/fencectl.md\n";

enum { EXIT_USAGE = 2, EXIT_NO_DAEMON = 3 };

int fencectl_heaps(int argc, char **argv)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct fl_msg_dump body = { FL_DUMP_HEAPS, 0 };
	char buf[65536];
	int r, fd = -1;
	ssize_t n;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			body.flags |= FL_DUMP_JSON;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(fencectl_heaps_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "fencectl heaps: unknown argument '%s'\n%s", argv[i],
				fencectl_heaps_usage);
			return EXIT_USAGE;
		}
	}
	fl__client_set_no_spawn(true);
	r = fl__client_call(FL_OP_DUMP, 0, &body, sizeof(body), NULL, 0, 0, reply, sizeof(reply),
			    &fd);
	if (r >= 0)
		r = fl__client_reply_status(reply);
	if (r >= 0 && fd < 0)
		r = -EPROTO;
	if (r == -ENOENT) {
		fprintf(stderr, "fencectl: no fenceline daemon runs for this user (socket: %s)\n",
			getenv("FENCELINE_SOCKET") ? getenv("FENCELINE_SOCKET") : "the default");
		return EXIT_NO_DAEMON;
	}
	while (r >= 0 && (n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0)
			r = -errno;
		else if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			r = -EIO;
	}
	if (fd >= 0)
		close(fd);
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "fencectl heaps: %s\n", strerror(r < 0 ? -r : EIO));
		return 1;
	}
	return 0;
}

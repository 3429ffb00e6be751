/* SPDX-License-Identifier: MIT */
/*
 * fencectl: look at the synchronization state of the machine (docs/fencectl.md).
 * It asks the running daemon and never starts one: looking must not change
 * what is looked at.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "protocol.h"

static const char usage_text[] =
	"usage: fencectl [--socket PATH] COMMAND [ARGS...]\n"
	"\n"
	"Shows what the fenceline daemon holds: timelines, fences, and the processes\n"
	"that hold their fds. It never starts a daemon.\n"
	"\n"
	"commands:\n"
	"  dump [--json]    every timeline, fence and client, like the kernel's sync\n"
	"                   debugfs file but with processes\n"
	"  help [COMMAND]   this text, or a command's\n"
	"\n"
	"options:\n"
	"  --socket PATH    the daemon's socket (default: $FENCELINE_SOCKET, else\n"
	"                   $XDG_RUNTIME_DIR/fenceline.sock, else /tmp/fenceline-$UID/)\n"
	"\n"
	"Exit status: 0 done, 1 error, 2 usage, 3 no daemon runs (so no fences exist).\n";

static const char dump_usage[] =
	"usage: fencectl dump [--json]\n"
	"\n"
	"Every live timeline (name, driver, value, pending points, the process owning\n"
	"its counter, the processes holding its fd) and fence (name, status, points,\n"
	"holders), and every connected client (pid, comm, objects made).\n"
	"\n"
	"  --json   one JSON object instead of text; schema in docs/fencectl.md\n";

enum { EXIT_USAGE = 2, EXIT_NO_DAEMON = 3 };

/* Copy the daemon's dump (a sealed memfd) to stdout. */
static int copy_out(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return -EIO;
	return n < 0 ? -errno : 0;
}

static int cmd_dump(int argc, char **argv)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct fl_msg_dump body = { 0, 0 };
	int r, fd = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			body.flags |= FL_DUMP_JSON;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(dump_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "fencectl dump: unknown argument '%s'\n%s", argv[i],
				dump_usage);
			return EXIT_USAGE;
		}
	}
	fl__client_set_no_spawn(true);
	r = fl__client_call(FL_OP_DUMP, 0, &body, sizeof(body), NULL, 0, 0, reply, sizeof(reply),
			    &fd);
	if (r >= 0)
		r = fl__client_reply_status(reply);
	if (r == -ENOENT) {
		fprintf(stderr, "fencectl: no fenceline daemon runs for this user (socket: %s)\n",
			getenv("FENCELINE_SOCKET") ? getenv("FENCELINE_SOCKET") : "the default");
		return EXIT_NO_DAEMON;
	}
	if (r >= 0 && fd < 0)
		r = -EPROTO;
	if (r >= 0)
		r = copy_out(fd);
	if (fd >= 0)
		close(fd);
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "fencectl dump: %s\n", strerror(r < 0 ? -r : EIO));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			setenv("FENCELINE_SOCKET", argv[i + 1], 1);
			i += 2;
			continue;
		}
		fprintf(stderr, "fencectl: unknown option '%s'\n%s", argv[i], usage_text);
		return EXIT_USAGE;
	}
	if (i >= argc) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[i], "dump"))
		return cmd_dump(argc - i, argv + i);
	if (!strcmp(argv[i], "help")) {
		if (i + 1 < argc && !strcmp(argv[i + 1], "dump"))
			fputs(dump_usage, stdout);
		else
			fputs(usage_text, stdout);
		return 0;
	}
	fprintf(stderr, "fencectl: unknown command '%s'\n%s", argv[i], usage_text);
	return EXIT_USAGE;
}

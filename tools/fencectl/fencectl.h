/* SPDX-License-Identifier: MIT */
/* What fencectl's commands share (fencectl.c). Private to tools/fencectl. */
#ifndef FENCECTL_H
#define FENCECTL_H

#include <stdbool.h>
#include <sys/types.h>

enum { EXIT_USAGE = 2, EXIT_NO_DAEMON = 3, EXIT_FOUND = 4 };

/* The daemon's views (<fenceline/introspect.h>), one per command that shows one. */
enum fencectl_view { VIEW_DUMP, VIEW_FDS, VIEW_WAITS, VIEW_STATS, VIEW_HEAPS };

/* Copy a sealed memfd from the daemon to stdout. Return: 0 or -errno. */
int fencectl_copy_out(int fd);
/*
 * Ask for @view (FL_INTROSPECT_* @flags; @pid for VIEW_FDS, else 0): its
 * sealed memfd in *ret_fd. Return: 0 or -errno; -ENOENT: no daemon.
 */
int fencectl_request_dump(enum fencectl_view view, unsigned int flags, pid_t pid, int *ret_fd);
/* Say that no daemon runs; returns EXIT_NO_DAEMON. */
int fencectl_no_daemon(void);

/* observe.c: @view (FL_INTROSPECT_* @flags) copied to stdout; the exit status. */
int fencectl_view(const char *cmd, enum fencectl_view view, unsigned int flags);
/*
 * The [--json] [--reset] arguments of a view command (@reset NULL: no
 * --reset). Return: -1 to go on, else the exit status (--help, usage error).
 */
int fencectl_parse_flags(int argc, char **argv, const char *cmd, const char *usage, bool *json,
			 bool *reset);

/* observe.c */
extern const char deadlocks_usage[], stats_usage[], trace_usage[], watch_usage[];
int cmd_deadlocks(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_trace(int argc, char **argv);
/* displays.c: dump, with the display service's devices when it runs; the exit status. */
int fencectl_dump(bool json);
/* watch.c */
int cmd_watch(int argc, char **argv);

#endif /* FENCECTL_H */

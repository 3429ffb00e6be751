/* SPDX-License-Identifier: MIT */
/* What fencectl's commands share (fencectl.c). Private to tools/fencectl. */
#ifndef FENCECTL_H
#define FENCECTL_H

#include <stdbool.h>
#include <stdint.h>

enum { EXIT_USAGE = 2, EXIT_NO_DAEMON = 3, EXIT_FOUND = 4 };

/* Copy a sealed memfd from the daemon to stdout. Return: 0 or -errno. */
int fencectl_copy_out(int fd);
/* One DUMP request (FL_DUMP_* @flags): its sealed memfd in *ret_fd. -ENOENT: no daemon. */
int fencectl_request_dump(uint32_t flags, uint32_t pid, int *ret_fd);
/* Say that no daemon runs; returns EXIT_NO_DAEMON. */
int fencectl_no_daemon(void);

/* observe.c: a DUMP view (FL_DUMP_* @flags) copied to stdout; the exit status. */
int fencectl_view(const char *cmd, uint32_t flags);
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
/* watch.c */
int cmd_watch(int argc, char **argv);

#endif /* FENCECTL_H */

/* SPDX-License-Identifier: MIT */
/* What fencectl's commands share (fencectl.c). Private to tools/fencectl. */
#ifndef FENCECTL_H
#define FENCECTL_H

#include <stdint.h>

enum { EXIT_USAGE = 2, EXIT_NO_DAEMON = 3, EXIT_FOUND = 4 };

/* Copy a sealed memfd from the daemon to stdout. Return: 0 or -errno. */
int fencectl_copy_out(int fd);
/* One DUMP request (FL_DUMP_* @flags): its sealed memfd in *ret_fd. -ENOENT: no daemon. */
int fencectl_request_dump(uint32_t flags, uint32_t pid, int *ret_fd);
/* Say that no daemon runs; returns EXIT_NO_DAEMON. */
int fencectl_no_daemon(void);

/* observe.c */
extern const char deadlocks_usage[], stats_usage[], trace_usage[], watch_usage[];
int cmd_deadlocks(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_trace(int argc, char **argv);
/* watch.c */
int cmd_watch(int argc, char **argv);

#endif /* FENCECTL_H */

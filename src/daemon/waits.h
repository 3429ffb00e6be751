/* SPDX-License-Identifier: MIT */
/*
 * waits.c and deadlock.c: the waits clients report (waits.c keeps them),
 * as the deadlock detector (deadlock.c) reads them. Loop thread only.
 */
#ifndef FLD_WAITS_H
#define FLD_WAITS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <fenceline/fence.h>

struct wait {
	struct fl_fence_cb cb; /* first: the callback finds the wait from it */
	struct wait *prev, *next;
	const void *client;
	pid_t pid, tid;
	uint64_t token;
	struct fl_fence *f;
	uint64_t fence_id;
	uint64_t begin_ns;
	int timeout_ms;
	int notify_fd; /* ours: a non-blocking pipe end or an AF_UNIX socket (notify_take()) */
	bool notify_sock;
	bool refused; /* got -EDEADLK; its WAIT_END is on the way */
};

/* waits.c: the waits in progress, newest first, and how many. */
extern struct wait *fld_waits;
extern unsigned int fld_nwaits;

/* deadlock.c: free what the detector found (the daemon exits). */
void fld_deadlocks_forget(void);

#endif /* FLD_WAITS_H */

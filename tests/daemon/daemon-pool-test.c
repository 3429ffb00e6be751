/* SPDX-License-Identifier: MIT */
/*
 * The pool of fence fds fencelined makes ahead (client.c): a loop that
 * makes fences of a timeline it owns, as fl-displayd does every frame,
 * must not wait for a refill once the first fill has come, provided the
 * daemon answers each fill before the pool runs dry. The test makes sure
 * that it has (it waits until the answer is in the connection, without
 * reading it), so nothing here depends on timing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "runner.h"

/* The SOCK_SEQPACKET sockets open in this process, as bits by fd (the first 1024 fds). */
static void seqpackets(unsigned char set[128])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	fl_assert(d != NULL);
	memset(set, 0, 128);
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), type = 0;
		socklen_t len = sizeof(type);
		struct stat st;

		if (e->d_name[0] == '.' || fd == dirfd(d) || fd >= 1024 || fstat(fd, &st) < 0 ||
		    !S_ISSOCK(st.st_mode))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_SEQPACKET)
			set[fd / 8] |= (unsigned char)(1u << (fd % 8));
	}
	closedir(d);
}

/* The socket in @after but not in @before: the connection just made. */
static int new_socket(const unsigned char before[128], const unsigned char after[128])
{
	int found = -1;

	for (int fd = 0; fd < 1024; fd++)
		if ((after[fd / 8] & ~before[fd / 8]) & (1u << (fd % 8))) {
			fl_assert_int_eq(found, -1);
			found = fd;
		}
	fl_assert(found >= 0);
	return found;
}

static struct fl_introspect_client_stats stats(void)
{
	struct fl_introspect_client_stats s;

	fl_assert_int_eq(fl_introspect_client_stats(&s, sizeof(s)), 0);
	return s;
}

FL_TEST(a_loop_making_fences_waits_for_the_pool_only_once)
{
	enum { FENCES = 200 };
	struct fl_introspect_client_stats before, after;
	unsigned char was[128], is[128];
	int tl = -1, fences[FENCES], conn;

	/* The pool is not given back while this loop waits for the daemon. */
	setenv("FENCELINE_POOL_IDLE_MS", "0", 1);
	fl_daemon_disconnect();
	seqpackets(was);
	fl_assert_int_eq(fl_timeline_fd_create("pool-loop", 0, &tl), 0);
	seqpackets(is);
	conn = new_socket(was, is);
	before = stats();
	for (int i = 0; i < FENCES; i++) {
		struct fl_introspect_client_stats now;

		/* Not reached yet: made with one message, no answer awaited. */
		fl_assert_int_eq(fl_fence_fd_create(tl, (uint64_t)i + 1, "pool-loop", &fences[i]),
				 0);
		now = stats();
		/*
		 * A fill is on its way: let its answer arrive (only fills are
		 * answered here), as a daemon that keeps up would have it by
		 * the time the pool runs low.
		 */
		if (now.pool_fills > now.pool_fills_taken) {
			struct pollfd p = { conn, POLLIN, 0 };

			fl_assert_int_eq(poll(&p, 1, 10000), 1);
		}
	}
	after = stats();
	fl_assert(after.pool_fills - before.pool_fills > FENCES / 32);
	/* The first fill only: every later one was asked for ahead and taken as it came. */
	if (after.pool_waits - before.pool_waits != 1)
		fl__test_fail(__FILE__, __LINE__,
			      "%llu of %d fence creations waited for a pool fill (%llu fills)",
			      after.pool_waits - before.pool_waits, FENCES,
			      after.pool_fills - before.pool_fills);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, FENCES), 0);
	for (int i = 0; i < FENCES; i++) {
		fl_assert_int_eq(fl_fence_fd_wait(fences[i], 10000), 0);
		close(fences[i]);
	}
	close(tl);
	unsetenv("FENCELINE_POOL_IDLE_MS");
}

FL_TEST(client_stats_take_the_callers_size)
{
	struct fl_introspect_client_stats s;
	unsigned char big[sizeof(s) + 8];

	fl_assert_int_eq(fl_introspect_client_stats(NULL, sizeof(s)), -EINVAL);
	fl_assert_int_eq(fl_introspect_client_stats(&s, 0), -EINVAL);
	memset(big, 0xa5, sizeof(big));
	fl_assert_int_eq(fl_introspect_client_stats((void *)big, sizeof(big)), 0);
	/* A caller built with a larger struct: what this library does not know stays untouched. */
	for (size_t i = sizeof(s); i < sizeof(big); i++)
		fl_assert_int_eq(big[i], 0xa5);
}

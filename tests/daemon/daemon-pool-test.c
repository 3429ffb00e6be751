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

#include "helpers.h"
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

/*
 * The pool's gate times about one fence in 256, at random, by a fill of
 * one fd made for it alone. When that was a connection's first fence, the
 * pool was left empty with no fill ahead, and the next fence waited for
 * one (so did a one-way merge, and a test that stopped the daemon then got
 * -ETIMEDOUT). A first fence is never such a sample: it waits for a fill
 * anyway. Enough fresh connections that a sample comes up for certain.
 */
FL_TEST_TIMEOUT(a_connections_first_fence_leaves_fds_pooled_ahead, 120)
{
	enum { CONNECTIONS = 3000 };

	setenv("FENCELINE_POOL_IDLE_MS", "0", 1);
	for (int i = 0; i < CONNECTIONS; i++) {
		struct fl_introspect_client_stats before, after;
		int tl, f1, f2;

		fl_daemon_disconnect();
		fl_assert_int_eq(fl_timeline_fd_create("first-fence", 0, &tl), 0);
		fl_assert_int_eq(fl_fence_fd_create(tl, 1, "first", &f1), 0);
		before = stats();
		fl_assert_int_eq(fl_fence_fd_create(tl, 2, "second", &f2), 0);
		after = stats();
		if (after.pool_waits != before.pool_waits)
			fl__test_fail(__FILE__, __LINE__,
				      "connection %d: the second fence waited for the pool", i);
		close(f1);
		close(f2);
		close(tl);
	}
	unsetenv("FENCELINE_POOL_IDLE_MS");
	fl_daemon_disconnect();
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

/*
 * Makes @n fences of @tl (values from @from on, none reached), signals
 * them all, waits for each and closes it.
 */
static void fences_signal_and_close(int tl, int n, uint64_t from)
{
	int *fences = calloc((size_t)n, sizeof(*fences));

	fl_assert(fences != NULL);
	for (int i = 0; i < n; i++)
		fl_assert_int_eq(fl_fence_fd_create(tl, from + (uint64_t)i, "gate", &fences[i]), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, (uint64_t)n), 0);
	for (int i = 0; i < n; i++) {
		fl_assert_int_eq(fl_fence_fd_wait(fences[i], 10000), 0);
		close(fences[i]);
	}
	free(fences);
}

/*
 * With FENCELINE_POOL_COST fixing the costs (docs/env-vars.md), the pool's
 * gate decides in a known number of fences: dearer than a round trip, the
 * pool steps aside and each fence waits for an fd of its own (the fds
 * already made are used up first); cheaper, it stays.
 */
static void fdpool_gate_case(const char *costs, bool pays)
{
	struct fl_introspect_client_stats st, before;
	int tl = -1, fds;

	setenv("FENCELINE_POOL_COST", costs, 1);
	setenv("FENCELINE_POOL_IDLE_MS", "0", 1);
	fl_daemon_disconnect();
	fl_assert_int_eq(fl_timeline_fd_create("gate", 0, &tl), 0);
	fds = fl_test_count_fds();
	/* 16 samples of each way, by turns (the first fence waits: no sample). */
	fences_signal_and_close(tl, 40, 1);
	st = stats();
	fl_assert_int_eq(st.pool_pooled, (pays ? 1 : 0));
	fl_assert_int_eq(st.pool_offs, (pays ? 0 : 1));
	fl_assert_int_eq(st.pool_pooled_ns, (pays ? 500 : 2000));
	fl_assert_int_eq(st.pool_bare_ns, 1000);

	before = stats();
	fences_signal_and_close(tl, 80, 41);
	st = stats();
	if (pays) {
		/* Fills of 4 fds and more (how many wait depends on the daemon's speed). */
		fl_assert(st.pool_fills - before.pool_fills <= 80 / 4 + 1);
	} else {
		/* At most a fill's worth (32) came from fds made before the pool stepped aside. */
		fl_assert(st.pool_waits - before.pool_waits >= 80 - 32);
		fl_assert(st.pool_fills - before.pool_fills >= 80 - 32);
	}
	fl_assert_int_eq(st.pool_pooled, (pays ? 1 : 0));
	/* Nothing kept beyond the pool's own fds: at most 32 ready and their signal ends. */
	fl_assert(fl_test_count_fds() <= fds + 2 * 32);
	close(tl);
	/* A new connection starts afresh (and leaves no fd of the old one). */
	unsetenv("FENCELINE_POOL_COST");
	unsetenv("FENCELINE_POOL_IDLE_MS");
	fl_daemon_disconnect();
	fl_assert(fl_test_count_fds() < fds);
}

FL_TEST(pool_of_fence_fds_that_does_not_pay_steps_aside)
{
	fdpool_gate_case("2000/1000", false);
}

FL_TEST(pool_of_fence_fds_that_pays_stays)
{
	fdpool_gate_case("500/1000", true);
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

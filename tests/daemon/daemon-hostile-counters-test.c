/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world, shared counters (the owned-timeline fast path): timelines
 * without one, fence fds closed early, counters limited per client and
 * unmapped once dead, and the sync point only the daemon can complete.
 *
 * Each test that can checks the daemon's own fds (/proc/PID/fd) return to
 * their count from before, since a leak inside the daemon is invisible to
 * the runner's check of the test process. Helpers: daemon-hostile.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>

#include "daemon-helpers.h"
#include "daemon-hostile.h"
#include "helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"
#include "statuspage.h"

/* ---- a timeline without a shared counter ---- */

/* The @nth (from 1) lowest fd number process @pid does not have open. */
static int nth_free_fd(pid_t pid, int nth)
{
	static bool open_fd[FD_MAP_SIZE];

	open_fd_map(pid, open_fd);
	for (int fd = 0; fd < FD_MAP_SIZE; fd++)
		if (!open_fd[fd] && --nth == 0)
			return fd;
	fl_assert(!"no free fd number");
	return -1;
}

/*
 * The shared counters process @pid has mapped (each daemon-made one is
 * named so): distinct memfds, as the daemon maps each twice (its own view
 * and its timeline's).
 */
static int counter_mappings(pid_t pid)
{
	char path[64], line[4096];
	unsigned long inodes[256];
	FILE *maps;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	fl_assert(maps != NULL);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long ino = 0;
		int i;

		if (!strstr(line, "memfd:fenceline-timeline"))
			continue;
		/* address perms offset dev inode path */
		fl_assert_int_eq(sscanf(line, "%*s %*s %*s %*s %lu", &ino), 1);
		for (i = 0; i < n && inodes[i] != ino; i++)
			;
		if (i == n) {
			fl_assert(n < (int)(sizeof(inodes) / sizeof(inodes[0])));
			inodes[n++] = ino;
		}
	}
	fclose(maps);
	return n;
}

/*
 * A daemon that cannot make a timeline's counter (out of fds right after
 * the timeline's own pair) still makes the timeline, without
 * FL_BIND_F_SHARED; TIMELINE_SYNC of it is -EINVAL and keeps the
 * connection. And the counters of dead timelines are unmapped again.
 */
FL_TEST(timeline_without_counter_sync_is_einval_and_dead_counters_are_unmapped)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} req = { { FL_OP_TIMELINE_CREATE, 0, 3, sizeof(struct fl_msg_timeline_create) },
		  { "no-counter", 0, 0 } };
	struct fl_msg_bind_reply rep;
	struct rlimit saved;
	char path[256];
	int s, s2, keep, tl, base, fds[RAW_MAX_FDS], r;
	uint32_t kept, handle, h2, seq = 10;
	unsigned int n, m, m3;
	uint64_t deadline;
	pid_t d;

	dl_runtime_path("nocounter.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	base = dl_daemon_fd_baseline(d);
	s = raw_connect_to(path);
	raw_hello(s);
	/* A timeline that lives throughout, so the counts below are of one more. */
	keep = raw_timeline_create(s, 2, "keep", &kept);
	fl_assert_int_eq(counter_mappings(d), 1);
	(void)dl_daemon_fd_baseline(d);

	/* Room for exactly the timeline's socket pair: the memfd does not fit. */
	fl_assert_int_eq(prlimit(d, RLIMIT_NOFILE, NULL, &saved), 0);
	set_fd_limit(d, (rlim_t)nth_free_fd(d, 2) + 1);
	raw_send(s, &req, sizeof(req), NULL, 0);
	r = raw_reply_fds(s, FL_OP_TIMELINE_CREATE, 3, &rep, sizeof(rep), fds, RAW_MAX_FDS, &n);
	fl_assert_int_eq(prlimit(d, RLIMIT_NOFILE, &saved, NULL), 0);
	fl_assert_int_eq(r, 0);
	fl_assert_int_eq(rep.flags, 0);
	fl_assert_int_eq(n, 1);
	fl_assert_int_ne(rep.handle, UINT32_MAX);
	tl = fds[0];
	handle = rep.handle;
	fl_assert_int_eq(counter_mappings(d), 1);

	/* Nothing to catch up with: -EINVAL, for its creator and for whoever bound it. */
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), -EINVAL);
	raw_ping_ok(s, seq++);
	s2 = raw_connect_to(path);
	raw_hello(s2);
	fl_assert_int_eq(raw_bind(s2, seq++, tl, &h2), 0);
	fl_assert_int_eq(raw_timeline_sync(s2, seq++, h2), -EINVAL);
	/* The timeline works through the daemon alone. */
	raw_pool_fill_ok(s2, seq++, 1, 0, fds);
	raw_fence_new_ok(s2, seq++, 1, h2, 0);
	fl_assert_int_eq(raw_timeline_signal(s, seq++, handle, 1), 0);
	dl_expect_fence_status(fds[0], FL_STATUS_SIGNALED);
	close(fds[0]);
	fl_assert_int_eq(raw_get_value(s2, seq++, tl), 1);
	/* The one with a counter is unaffected. */
	fl_assert_int_eq(raw_timeline_sync(s, seq++, kept), 0);
	raw_ping_ok(s2, seq++);
	close(s2);
	close(tl);

	/*
	 * Signal ends out of fds: room for the kick pipe, one pipe, and one fd
	 * of the next pipe's two: one fence fd, its end and the kick pipe come
	 * back. Then room for one pipe: it comes with its end, which is the
	 * core's own and costs the daemon no fd more (a copy did, until
	 * 2026-12-07). Then room for less than a pipe: -EMFILE, and the
	 * connection stays.
	 */
	{
		struct fl_msg_pool_reply prep, prep2, prep3;
		int r2, r3;

		/* The fds of what we closed are free (the count settles) before counting. */
		(void)dl_daemon_fd_baseline(d);
		set_fd_limit(d, (rlim_t)nth_free_fd(d, 5) + 1);
		raw_send_pool_fill(s, seq, 4, FL_POOL_F_SIGNAL_ENDS);
		r = raw_reply_fds(s, FL_OP_POOL_FILL, seq++, &prep, sizeof(prep), fds, RAW_MAX_FDS,
				  &n);
		/* Answered once the daemon closed what it sent of its own. */
		raw_ping_ok(s, seq++);
		set_fd_limit(d, (rlim_t)nth_free_fd(d, 2) + 1);
		raw_send_pool_fill(s, seq, 1, FL_POOL_F_SIGNAL_ENDS);
		r2 = raw_reply_fds(s, FL_OP_POOL_FILL, seq++, &prep2, sizeof(prep2), &fds[3],
				   RAW_MAX_FDS - 3, &m);
		raw_ping_ok(s, seq++);
		set_fd_limit(d, (rlim_t)nth_free_fd(d, 1) + 1);
		raw_send_pool_fill(s, seq, 1, FL_POOL_F_SIGNAL_ENDS);
		r3 = raw_reply_fds(s, FL_OP_POOL_FILL, seq++, &prep3, sizeof(prep3), &fds[6],
				   RAW_MAX_FDS - 6, &m3);
		fl_assert_int_eq(prlimit(d, RLIMIT_NOFILE, &saved, NULL), 0);
		fl_assert_int_eq(r, 0);
		fl_assert_int_eq(prep.first, 0);
		fl_assert_int_eq(prep.count, 1);
		fl_assert_int_eq(n, 3);
		fl_assert_int_eq(r2, 0);
		fl_assert_int_eq(prep2.first, 1);
		fl_assert_int_eq(prep2.count, 1);
		fl_assert_int_eq(m, 3);
		fl_assert_int_eq(r3, -EMFILE);
		fl_assert_int_eq(m3, 0);
		close_fds(&fds[3], 3);
	}
	raw_ping_ok(s, seq++);
	expect_end_of(fds[0], fds[1], 0x5107);
	expect_fence_pipe(fds[2]);
	raw_fence_new_ok(s, seq++, 1, kept, 0);
	fl_assert_int_eq(raw_timeline_signal(s, seq++, kept, 1), 0);
	dl_expect_fence_status(fds[0], FL_STATUS_SIGNALED);
	close_fds(fds, 3);
	close(keep);

	/* Each creation unmaps the counters of dead timelines: only its own stays. */
	deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	do {
		fl_assert(fl_test_now_ns() < deadline);
		fl_test_sleep_ms(10);
		tl = raw_timeline_create(s, seq++, "collect", &handle);
		m = counter_mappings(d);
		close(tl);
	} while (m != 1);
	close(s);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
}

/*
 * A fence fd closed before the daemon has made it a fence (FENCE_NEW is
 * one-way) is released by the daemon's fd watcher as soon as the daemon
 * registers it: when the watcher was a thread (as it still is in library
 * processes), possibly while the loop was still attaching it to the fence.
 * Thousands of them, under ASan, catch a sink freed too early.
 */
static void closed_early_child(const char *path, pid_t d)
{
	int tl;

	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	fl_assert_int_eq(fl_daemon_connect(), d);
	tl = new_timeline("closed-early");
	for (int i = 0; i < 5000; i++) {
		int f = new_fence(tl, (uint64_t)i + 1, "gone");

		close(f);
		if (i % 64 == 63)
			fl_daemon_flush();
	}
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 5000), 0);
	close(tl);
	library_round();
	fl_daemon_disconnect();
	_exit(0);
}

FL_TEST(fence_fds_closed_before_the_daemon_made_them_are_released_once)
{
	pid_t d = child_on_own_daemon("early.sock", closed_early_child);

	/* Still the same daemon: it did not crash on the way. */
	fl_assert_int_eq(kill(d, 0), 0);
	dl_daemon_stop(d);
}

/* TIMELINE_CREATE: 1 if the reply came with a shared counter (closed here), 0 if not. */
static int raw_create_has_counter(int sock, uint32_t seq, int *ret_tl)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} req = { { FL_OP_TIMELINE_CREATE, 0, seq, sizeof(struct fl_msg_timeline_create) },
		  { "many", 0, 0 } };
	struct fl_msg_bind_reply rep;
	int fds[RAW_MAX_FDS];
	unsigned int n;

	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply_fds(sock, FL_OP_TIMELINE_CREATE, seq, &rep, sizeof(rep), fds,
				       RAW_MAX_FDS, &n),
			 0);
	fl_assert_int_eq(n, rep.flags & FL_BIND_F_SHARED ? 2u : 1u);
	if (n == 2)
		close(fds[1]);
	*ret_tl = fds[0];
	return n == 2;
}

/*
 * Each counter costs the daemon a page: a client gets them for 64 live
 * timelines (as many as the library tracks), the rest work through the
 * daemon, and a timeline that dies gives its counter back.
 */
FL_TEST(shared_counters_are_limited_per_client_and_given_back)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	int s, tl[70], extra, base;
	uint32_t seq = 100;
	pid_t d;

	dl_runtime_path("counters.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	base = dl_daemon_fd_baseline(d);
	s = raw_connect_to(path);
	raw_hello(s);
	for (int i = 0; i < 70; i++)
		fl_assert_int_eq(raw_create_has_counter(s, seq++, &tl[i]), i < 64);
	/* Still a timeline like any other. */
	fl_assert_int_eq(raw_inc(s, seq++, tl[69], 1), 0);
	close(tl[3]);
	close(tl[69]);
	/* The daemon sees the closes between requests (its fd watcher): give it a moment. */
	for (int tries = 0;; tries++) {
		int has = raw_create_has_counter(s, seq++, &extra);

		close(extra);
		if (has)
			break;
		fl_assert(tries < 200);
		fl_test_sleep_ms(10);
	}
	for (int i = 0; i < 69; i++)
		if (i != 3)
			close(tl[i]);
	close(s);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
}

static uint64_t sync_at(struct fl_proto_shared_timeline *ctr)
{
	return __atomic_load_n(&ctr->sync_at, __ATOMIC_SEQ_CST);
}

/*
 * sync_at is the lowest pending value the daemon must complete itself:
 * every fence but the owner's own with a kept signal end. A client can
 * claim FL_MSG_F_KEPT only for a slot that came with an end, on a timeline
 * it owns; everything else counts. On a 32-bit timeline a value is the
 * counter value at which its low half reaches it, wrap-aware.
 */
FL_TEST(sync_at_is_the_lowest_point_only_the_daemon_can_complete)
{
	struct fl_proto_shared_timeline *ctr, *ctr32;
	uint32_t seq = 1, slot = 0, handle, h2, h32;
	int s = raw_connect(), s2 = raw_connect(), mfd, mfd32, tl, tl32, bare[1], f[5], g[3], w[2];

	raw_hello(s);
	raw_hello(s2);
	tl = raw_timeline_create_flags(s, seq++, "sync-at", 0, &handle, &mfd);
	ctr = counter_map(mfd);
	fl_assert(sync_at(ctr) == UINT64_MAX);

	/* A slot without a signal end: KEPT is not believed. */
	raw_pool_fill_ok(s, seq++, 1, slot, bare);
	raw_fence_new_flags_ok(s, seq++, FL_MSG_F_KEPT, 5, handle, slot++);
	fl_assert_int_eq(sync_at(ctr), 5);
	/* With its end, the owner's own; without the flag, the daemon's. */
	raw_pool_fill_ends_ok(s, seq++, 2, slot, f);
	raw_fence_new_flags_ok(s, seq++, FL_MSG_F_KEPT, 3, handle, slot++);
	fl_assert_int_eq(sync_at(ctr), 5);
	raw_fence_new_flags_ok(s, seq++, 0, 4, handle, slot++);
	fl_assert_int_eq(sync_at(ctr), 4);
	/* Another connection is no owner, signal end or not. */
	fl_assert_int_eq(raw_bind(s2, seq++, tl, &h2), 0);
	raw_pool_fill_ends_ok(s2, seq++, 1, 0, g);
	raw_fence_new_flags_ok(s2, seq++, FL_MSG_F_KEPT, 2, h2, 0);
	fl_assert_int_eq(sync_at(ctr), 2);

	/* Each catch-up raises it past the points it completed. */
	counter_set(ctr, 2);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(sync_at(ctr), 4);
	dl_expect_fence_status(g[0], FL_STATUS_SIGNALED);
	/*
	 * The kept fence at 3: complete for the daemon once it catches up,
	 * but ours to close (we hold its only write end): until then its fd
	 * is not ready; then it is, and the daemon answers for it.
	 */
	counter_set(ctr, 3);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(sync_at(ctr), 4);
	fl_assert_int_eq(raw_fence_status(s2, seq++, f[0]), FL_STATUS_SIGNALED);
	{
		struct pollfd pf = { .fd = f[0], .events = POLLIN };

		fl_assert_int_eq(poll(&pf, 1, 0), 0);
	}
	close(f[2]);
	f[2] = -1;
	dl_expect_fence_status(f[0], FL_STATUS_SIGNALED);
	counter_set(ctr, 5);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert(sync_at(ctr) == UINT64_MAX);
	dl_expect_fence_status(f[1], FL_STATUS_SIGNALED);
	dl_expect_fence_status(bare[0], FL_STATUS_SIGNALED);
	/* A point born signalled is nobody's to wait for. */
	close(bare[0]);
	raw_pool_fill_ok(s, seq++, 1, slot, bare);
	raw_fence_new_flags_ok(s, seq++, 0, 5, handle, slot++);
	fl_assert(sync_at(ctr) == UINT64_MAX);
	dl_expect_fence_status(bare[0], FL_STATUS_SIGNALED);
	close(bare[0]);

	tl32 = raw_timeline_create_flags(s, seq++, "sync-at-32", FL_SW_SYNC_32BIT, &h32, &mfd32);
	ctr32 = counter_map(mfd32);
	fl_assert(sync_at(ctr32) == UINT64_MAX);
	/* 0x20 ahead across the wrap: reached when the counter gets 0x20 further. */
	counter_set(ctr32, 0xfffffff0u);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, h32), 0);
	raw_pool_fill_ok(s, seq++, 1, slot, bare);
	raw_fence_new_flags_ok(s, seq++, 0, 0x10, h32, slot++);
	fl_assert(sync_at(ctr32) == 0x100000010ull);
	/* Exactly 2^31 ahead is still ahead (sw_sync's compare); 2^31 + 1 is behind. */
	raw_pool_fill_ok(s, seq++, 2, slot, w);
	raw_fence_new_flags_ok(s, seq++, 0, 0x7ffffff0u, h32, slot++);
	raw_fence_new_flags_ok(s, seq++, 0, 0x7ffffff1u, h32, slot++);
	fl_assert(sync_at(ctr32) == 0x100000010ull);
	dl_expect_fence_status(w[1], FL_STATUS_SIGNALED);
	counter_set(ctr32, 0x100000010ull);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, h32), 0);
	dl_expect_fence_status(bare[0], FL_STATUS_SIGNALED);
	fl_assert(sync_at(ctr32) == 0x17ffffff0ull);
	close(bare[0]);

	counter_unmap(ctr32);
	counter_unmap(ctr);
	close_fds(f, 5);
	close_fds(g, 3);
	close_fds(w, 2);
	close(mfd32);
	close(mfd);
	close(tl32);
	close(tl);
	close(s2);
	close(s);
}

/*
 * Points the daemon must complete cost it 8 bytes each until it does: a
 * client that makes thousands far ahead (and drops their fds) only makes
 * its own signals wait for the daemon from then on (sync_at 0).
 */
FL_TEST(more_than_4096_points_for_the_daemon_make_the_owner_always_sync)
{
	struct fl_proto_shared_timeline *ctr;
	uint32_t seq = 1, slot = 0, handle;
	int s = raw_connect(), mfd, tl, fds[32];

	raw_hello(s);
	tl = raw_timeline_create_flags(s, seq++, "many", 0, &handle, &mfd);
	ctr = counter_map(mfd);
	for (int batch = 0; batch < 4097 / 32 + 1; batch++) {
		raw_pool_fill_ok(s, seq++, 32, slot, fds);
		for (int i = 0; i < 32; i++, slot++)
			raw_send_fence_new(s, seq++, 0, 1000000 - (uint64_t)slot, handle, slot);
		raw_ping_ok(s, seq++);
		close_fds(fds, 32);
		fl_assert_int_eq(sync_at(ctr), slot <= 4096 ? 1000000 - (uint64_t)(slot - 1) : 0);
	}
	counter_set(ctr, 2000000);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(sync_at(ctr), 0);
	counter_unmap(ctr);
	close(mfd);
	close(tl);
	close(s);
}

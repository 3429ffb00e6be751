/* SPDX-License-Identifier: MIT */
/*
 * The library's side of the daemon connection under a hostile or unlucky
 * program and a hostile or unlucky daemon: a program that closes or dup2()s
 * over the fds the library opened (close_range() after fork, a daemon
 * closing everything), the first call after the daemon died, fence
 * creation at a low RLIMIT_NOFILE, the pooled fence fds given back once the
 * program is idle, a daemon that stopped answering (SIGSTOP, or a listener
 * that never answers), and a daemon socket that belongs to another user.
 * Each test that changes the process (fds, limits, uid) does it in a forked
 * child, which gets its own connection.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <android/sync.h>
#include <sw_sync.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "helpers.h"
#include "runner.h"

#ifndef FL_FENCELINED
#error "the build passes FL_FENCELINED, the path of the daemon"
#endif

/* The program's own sockets, which the library must never touch. */
#define PROGRAM_SOCKS 48

struct program_socks {
	int mine[PROGRAM_SOCKS]; /* the program's ends, at the numbers the library had */
	int peer[PROGRAM_SOCKS]; /* where anything written into them shows up */
	ino_t ino[PROGRAM_SOCKS];
	int n;
};

static ino_t inode_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return 0;
	return st.st_ino;
}

/* Socket pairs of the program: they take the lowest free numbers, the library's old ones. */
static void program_socks_open(struct program_socks *p, int n)
{
	p->n = 0;
	for (int i = 0; i < n; i++) {
		int sv[2];

		fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		p->mine[i] = sv[0];
		p->peer[i] = sv[1];
		p->ino[i] = inode_of(sv[0]);
		p->n++;
	}
}

/* Nothing was written into, read from, closed or shut down in the program's sockets. */
static void program_socks_untouched(const struct program_socks *p)
{
	for (int i = 0; i < p->n; i++) {
		fl_assert(inode_of(p->mine[i]) == p->ino[i]);
		fl_assert_int_eq(fl_test_poll_fd(p->peer[i], POLLIN, 0), 0);
		fl_assert_int_eq(fl_test_poll_fd(p->mine[i], POLLIN, 0), 0);
	}
}

/* @fd, which the library just returned, is none of the program's. */
static void not_a_program_fd(const struct program_socks *p, int fd)
{
	ino_t ino = inode_of(fd);

	fl_assert(ino != 0);
	for (int i = 0; i < p->n; i++) {
		fl_assert_int_ne(fd, p->mine[i]);
		fl_assert_int_ne(fd, p->peer[i]);
		fl_assert(ino != p->ino[i]);
	}
}

static void program_socks_close(struct program_socks *p)
{
	for (int i = 0; i < p->n; i++) {
		close(p->mine[i]);
		close(p->peer[i]);
	}
	p->n = 0;
}

/*
 * The whole API on the libsync and fd calls: timelines, fences (one
 * signalled by its owner through a kept signal end), a merge, info and a
 * wait; every fd returned is checked against the program's.
 */
static void use_the_api(const struct program_socks *p)
{
	struct sync_file_info *info;
	int tl = sw_sync_timeline_create(), f1, f2, m;

	fl_assert(tl >= 0);
	not_a_program_fd(p, tl);
	f1 = sw_sync_fence_create(tl, "one", 1);
	fl_assert(f1 >= 0);
	not_a_program_fd(p, f1);
	f2 = sw_sync_fence_create(tl, "two", 2);
	fl_assert(f2 >= 0);
	not_a_program_fd(p, f2);
	m = sync_merge("both", f1, f2);
	fl_assert(m >= 0);
	not_a_program_fd(p, m);
	fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(sync_wait(f1, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(f2), FL_STATUS_ACTIVE);
	fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(sync_wait(m, DL_LONG_WAIT_MS), 0);
	info = sync_file_info(m);
	fl_assert(info != NULL);
	fl_assert_int_eq(info->status, 1);
	sync_file_info_free(info);
	close(m);
	close(f2);
	close(f1);
	close(tl);
}

/*
 * Make the library open every kind of fd it has: the connection, pooled
 * fence fds with signal ends (an owned timeline), a kept signal end and the
 * connection watcher. Returns the timeline and a pending fence (the caller's).
 */
static void library_busy(int *ret_tl, int *ret_fence)
{
	int tl = sw_sync_timeline_create(), f;

	fl_assert(tl >= 0);
	/* Two fills: the second one asks for signal ends, now that a timeline is ours. */
	for (int i = 0; i < 6; i++) {
		f = sw_sync_fence_create(tl, "warm", 100);
		fl_assert(f >= 0);
		close(f);
	}
	f = sw_sync_fence_create(tl, "pending", 1);
	fl_assert(f >= 0);
	*ret_tl = tl;
	*ret_fence = f;
}

FL_TEST(close_range_over_the_library_fds_leaves_program_sockets_untouched)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct program_socks p;
		int tl, f;

		library_busy(&tl, &f);
		/* A daemon after fork, or a sandbox: everything above stderr goes. */
		fl_assert_int_eq((int)syscall(SYS_close_range, 3u, ~0u, 0u), 0);
		program_socks_open(&p, PROGRAM_SOCKS);
		use_the_api(&p);
		use_the_api(&p);
		program_socks_untouched(&p);
		fl_daemon_disconnect();
		program_socks_untouched(&p);
		use_the_api(&p);
		program_socks_untouched(&p);
		program_socks_close(&p);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/*
 * dup2() of the program's own socket over every fd the library opened
 * (the connection first of all), as a program that reuses "its" numbers.
 */
FL_TEST(dup2_over_the_library_fds_leaves_program_sockets_untouched)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct fl_test_fd_snapshot before, after;
		struct program_socks p;
		int tl, f, victims[FL_TEST_SNAPSHOT_MAX], nvictims = 0;

		fl_daemon_disconnect();
		fl_test_fd_snapshot(&before);
		library_busy(&tl, &f);
		fl_test_fd_snapshot(&after);
		program_socks_open(&p, 1);
		for (int i = 0; i < after.n; i++) {
			bool old = false;

			for (int j = 0; j < before.n; j++)
				old |= before.fds[j] == after.fds[i] &&
				       !strcmp(before.links[j], after.links[i]);
			if (!old && after.fds[i] != tl && after.fds[i] != f &&
			    after.fds[i] != p.mine[0] && after.fds[i] != p.peer[0])
				victims[nvictims++] = after.fds[i];
		}
		/* The connection, the pool, signal ends, the watcher's copy and eventfd. */
		fl_assert(nvictims >= 4);
		for (int i = 0; i < nvictims; i++)
			fl_assert_int_eq(dup2(p.mine[0], victims[i]), victims[i]);
		use_the_api(&p);
		fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
		fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
		program_socks_untouched(&p);
		fl_daemon_disconnect();
		/* Still the program's: the library closed none of them. */
		for (int i = 0; i < nvictims; i++)
			fl_assert(inode_of(victims[i]) == p.ino[0]);
		use_the_api(&p);
		program_socks_untouched(&p);
		close(f);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/* The daemon dies while this process is connected and idle: the next call just works. */
FL_TEST(first_call_after_daemon_sigkill_starts_a_new_daemon)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		int tl = sw_sync_timeline_create(), tl2, f;
		pid_t old = fl_daemon_connect();

		fl_assert(tl >= 0);
		fl_assert(old > 0);
		fl_assert_int_eq(kill(old, SIGKILL), 0);
		/* The timeline fd hangs up once the daemon is gone. */
		fl_assert(fl_test_poll_fd(tl, POLLIN, DL_LONG_WAIT_MS) & POLLHUP);
		tl2 = sw_sync_timeline_create();
		if (tl2 < 0)
			fl__test_fail(__FILE__, __LINE__, "first call after the death: %s",
				      strerror(errno));
		f = sw_sync_fence_create(tl2, "f", 1);
		fl_assert(f >= 0);
		fl_assert_int_eq(sw_sync_timeline_inc(tl2, 1), 0);
		fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
		fl_assert(fl_daemon_connect() != old);
		close(f);
		close(tl2);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/* The fd API's first call too, and a fence of a live timeline after the death. */
FL_TEST(first_fd_api_call_after_daemon_sigkill_works)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		int tl = -1, tl2 = -1;
		pid_t old = fl_daemon_connect();

		fl_assert(old > 0);
		fl_assert_int_eq(kill(old, SIGKILL), 0);
		/* Wait until it is gone: signal 0 fails once it has been reaped. */
		for (int i = 0; i < DL_LONG_WAIT_MS && kill(old, 0) == 0; i++)
			fl_test_sleep_ms(1);
		fl_assert_int_eq(fl_timeline_fd_create("after", 0, &tl), 0);
		fl_assert_int_eq(fl_timeline_fd_create("after2", 0, &tl2), 0);
		close(tl2);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

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

/*
 * The tests below reuse the library's numbers while the library sits idle.
 * The watcher gives an idle pool back from its own thread (500 ms after the
 * last call), and Linux has no "close this number if it is still that
 * file": a program that dup2()s over a pooled fd in the microsecond
 * between the watcher's identity check and its close() loses that fd (it
 * happened here under ASan, about one run in 40). That race is documented
 * (architecture.md, the threat model); what is tested here are the
 * library's own calls, so the give-back is off.
 */
static void pool_kept_while_idle(void)
{
	fl_assert_int_eq(setenv("FENCELINE_POOL_IDLE_MS", "0", 1), 0);
	fl_daemon_disconnect(); /* read at the next connection */
}

FL_TEST(close_range_over_the_library_fds_leaves_program_sockets_untouched)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct program_socks p;
		int tl, f;

		pool_kept_while_idle();
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
		bool sock[FL_TEST_SNAPSHOT_MAX];

		pool_kept_while_idle();
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
			    after.fds[i] != p.mine[0] && after.fds[i] != p.peer[0]) {
				sock[nvictims] = !strncmp(after.links[i], "socket:", 7);
				victims[nvictims++] = after.fds[i];
			}
		}
		/* The connection, the pool, signal ends, the watcher's copy and eventfd. */
		fl_assert(nvictims >= 4);
		/*
		 * The connection last: its loss makes the daemon drop us, and the
		 * watcher thread then closes the kept signal ends in the
		 * background (daemon.md, "The library's fds"), a check and a
		 * close that a dup2() landing in between would defeat (seen under
		 * TSan). Taken last, every other number is the program's by then.
		 */
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < nvictims; i++)
				if (sock[i] == (pass == 1))
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

/*
 * Connects and returns the connection's number (the one fd the library
 * keeps from connecting), then makes the library busy (library_busy()).
 */
static int connection_of_a_busy_library(int *ret_tl, int *ret_fence)
{
	struct fl_test_fd_snapshot before;
	char link[128];
	int conn;

	pool_kept_while_idle();
	fl_test_fd_snapshot(&before);
	fl_assert(fl_daemon_connect() > 0);
	fl_assert_int_eq(fl_test_fds_new_since(&before, link, sizeof(link)), 1);
	fl_assert(strstr(link, "socket:") != NULL);
	fl_assert_int_eq(sscanf(link, "fd %d", &conn), 1);
	library_busy(ret_tl, ret_fence);
	return conn;
}

/*
 * An owner whose connection's number the program took (a dup2() over it,
 * while the program holds a copy of the connection, which stays open: the
 * daemon does not drop us) still signals its own fences: the counter and
 * the kept ends are its own, so its fence signals instead of failing as
 * one whose end was given up. (Without that copy the connection closes,
 * the daemon drops us, and the watcher gives the kept ends up: the fences
 * fail, -ENOENT, as an owner's that let go of its library's fds.)
 */
FL_TEST(owner_signals_its_fences_after_the_program_took_the_connection_number)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct program_socks p;
		int tl, f, conn = connection_of_a_busy_library(&tl, &f), copy = dup(conn);

		fl_assert(copy >= 0);
		program_socks_open(&p, 1);
		fl_assert_int_eq(dup2(p.mine[0], conn), conn);
		fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
		fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
		fl_assert_int_eq(fl_fence_fd_get_status(f), FL_STATUS_SIGNALED);
		program_socks_untouched(&p);
		close(copy);
		close(f);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/*
 * The same owner's step reaching another process's fence, which only the
 * daemon completes: it is told through a new connection.
 */
FL_TEST(owner_step_reaches_the_daemon_after_the_program_took_the_connection_number)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct program_socks p;
		int tl, f, conn = connection_of_a_busy_library(&tl, &f), copy = dup(conn), made[2];
		pid_t other;
		char byte;

		/*
		 * No fence of ours at that value: the daemon catches up by itself
		 * when it sees an end it left to us hang up.
		 */
		fl_assert(copy >= 0);
		close(f);
		fl_assert_int_eq(pipe2(made, O_CLOEXEC), 0);
		other = dl_fork();
		if (other == 0) {
			int g = sw_sync_fence_create(tl, "g", 1);

			fl_assert(g >= 0);
			fl_daemon_flush();
			fl_assert_int_eq(write(made[1], "m", 1), 1);
			/* A bare poll(): a library wait would have the daemon catch up itself. */
			fl_assert(fl_test_poll_fd(g, POLLIN, DL_LONG_WAIT_MS) & POLLIN);
			fl_assert_int_eq(fl_fence_fd_get_status(g), FL_STATUS_SIGNALED);
			close(g);
			_exit(0);
		}
		dl_read_all(made[0], &byte, 1);
		close(made[0]);
		close(made[1]);
		program_socks_open(&p, 1);
		fl_assert_int_eq(dup2(p.mine[0], conn), conn);
		fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
		dl_wait_child_ok(other);
		program_socks_untouched(&p);
		close(copy);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/*
 * A process forks while its library's watcher thread runs, and the child
 * starts a watcher of its own and disconnects. glibc gives the child's new
 * thread the stack, and so the pthread_t, of the parent's watcher, which
 * the child never had: a pthread_join() or pthread_detach() of it made gcc
 * 12's ThreadSanitizer (which keeps the parent's threads after fork) find
 * two threads of that id and kill the program ("dup thread with used id").
 */
FL_TEST(a_child_forked_while_the_watcher_runs_starts_and_ends_its_own)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		int tl, f;

		pool_kept_while_idle();
		library_busy(&tl, &f); /* a pending fence kept: the watcher runs */
		for (int round = 0; round < 2; round++) {
			pid_t child = dl_fork();

			if (child == 0) {
				int tl2, f2;

				library_busy(&tl2, &f2);
				fl_daemon_disconnect(); /* ends the child's own watcher */
				close(f2);
				close(tl2);
				_exit(0);
			}
			dl_wait_child_ok(child);
		}
		fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
		fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
		close(f);
		close(tl);
		fl_daemon_disconnect();
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/* The daemon dies while this process is connected and idle: the next call just works. */
FL_TEST(first_call_after_daemon_sigkill_starts_a_new_daemon)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		int tl = sw_sync_timeline_create(), tl2, f, f0;
		pid_t old = fl_daemon_connect();

		fl_assert(tl >= 0);
		fl_assert(old > 0);
		f0 = sw_sync_fence_create(tl, "f0", 1);
		fl_assert(f0 >= 0);
		fl_assert_int_eq(kill(old, SIGKILL), 0);
		/* The timeline fd hangs up once the daemon is gone. */
		fl_assert(fl_test_poll_fd(tl, POLLIN, DL_LONG_WAIT_MS) & POLLHUP);
		/* What daemon.md and compat.md say of a crash's fences. */
		fl_assert_int_eq(sync_wait(f0, DL_LONG_WAIT_MS), 0);
		errno = 0;
		fl_assert(sync_file_info(f0) == NULL);
		fl_assert_int_eq(errno, ECONNRESET);
		fl_assert_int_eq(fl_fence_fd_get_status(f0), -ECONNRESET);
		close(f0);
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

/* fl_daemon_connect() after the death names the daemon that serves now, not the dead one. */
FL_TEST(daemon_connect_after_daemon_sigkill_names_the_new_daemon)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		pid_t old = fl_daemon_connect(), now;

		fl_assert(old > 0);
		fl_assert_int_eq(kill(old, SIGKILL), 0);
		for (int i = 0; i < DL_LONG_WAIT_MS && kill(old, 0) == 0; i++)
			fl_test_sleep_ms(1);
		now = fl_daemon_connect();
		fl_assert(now > 0);
		fl_assert_int_ne(now, old);
		fl_assert_int_eq(kill(now, 0), 0);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/*
 * Fences up to the process's fd limit: creation fails only when the fd
 * table is really full, with EMFILE, and the connection survives it.
 */
static void fences_up_to_fd_limit(rlim_t limit)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct rlimit rl;
		int tl, *fences, n = 0, f, probe;

		fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
		if (rl.rlim_max < limit)
			fl_test_skip("hard fd limit %lu below %lu", (unsigned long)rl.rlim_max,
				     (unsigned long)limit);
		rl.rlim_cur = limit;
		fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
		fences = calloc(limit, sizeof(*fences));
		fl_assert(fences != NULL);
		tl = sw_sync_timeline_create();
		fl_assert(tl >= 0);
		for (;;) {
			f = sw_sync_fence_create(tl, "f", (uint32_t)n + 1);
			if (f < 0)
				break;
			fl_assert(n < (int)limit);
			fences[n++] = f;
		}
		if (errno != EMFILE)
			fl__test_fail(__FILE__, __LINE__, "fence %d of %lu failed with %s", n + 1,
				      (unsigned long)limit, strerror(errno));
		/* Only a full table says EMFILE: nothing failed early. */
		probe = dup(0);
		fl_assert_int_eq(probe, -1);
		fl_assert_int_eq(errno, EMFILE);
		/* The connection is still there: one fd closed, one fence more. */
		close(fences[--n]);
		f = sw_sync_fence_create(tl, "again", (uint32_t)n + 1);
		fl_assert(f >= 0);
		fences[n++] = f;
		fl_assert_int_eq(sw_sync_timeline_inc(tl, (uint32_t)n), 0);
		for (int i = 0; i < n; i += 7)
			fl_assert_int_eq(sync_wait(fences[i], DL_LONG_WAIT_MS), 0);
		for (int i = 0; i < n; i++)
			close(fences[i]);
		close(tl);
		free(fences);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

FL_TEST(fence_creation_at_fd_limit_64_goes_up_to_emfile)
{
	fences_up_to_fd_limit(64);
}

FL_TEST(fence_creation_at_fd_limit_128_goes_up_to_emfile)
{
	fences_up_to_fd_limit(128);
}

FL_TEST(fence_creation_at_fd_limit_1024_goes_up_to_emfile)
{
	fences_up_to_fd_limit(1024);
}

/*
 * Every fd opened since @base is closed again, however long the library's
 * idle period takes on a loaded machine (it is 500 ms by default; only a
 * hang reaches DL_LONG_WAIT_MS).
 */
static void wait_fds_back(const struct fl_test_fd_snapshot *base)
{
	for (int i = 0; i < DL_LONG_WAIT_MS / 10 && fl_test_fds_new_since(base, NULL, 0) > 0; i++)
		fl_test_sleep_ms(10);
	fl_test_expect_new_fds(base, 0);
}

/* Make and drop fences and merges, as a program that is then idle would. */
static void make_and_drop_fences(int count)
{
	int tl = sw_sync_timeline_create(), prev = -1;

	fl_assert(tl >= 0);
	for (int i = 0; i < count; i++) {
		int f = sw_sync_fence_create(tl, "f", (uint32_t)i + 1), m;

		fl_assert(f >= 0);
		if (prev >= 0) {
			m = sync_merge("m", prev, f);
			fl_assert(m >= 0);
			close(m);
			close(prev);
		}
		prev = f;
	}
	fl_assert_int_eq(sw_sync_timeline_inc(tl, (uint32_t)count), 0);
	close(prev);
	close(tl);
}

FL_TEST(pooled_fds_go_back_once_the_program_is_idle)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct fl_test_fd_snapshot base;
		int f, tl;

		fl_assert(fl_daemon_connect() > 0);
		fl_test_fd_snapshot(&base);
		make_and_drop_fences(300);
		/* No call from here on: the library gives its fds back by itself. */
		wait_fds_back(&base);
		/* And works as before afterwards. */
		tl = sw_sync_timeline_create();
		fl_assert(tl >= 0);
		f = sw_sync_fence_create(tl, "after", 1);
		fl_assert(f >= 0);
		fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
		fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
		close(f);
		close(tl);
		wait_fds_back(&base);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/* Pending fences the program dropped: the signal ends the library kept for them go back too. */
FL_TEST(signal_ends_of_dropped_pending_fences_go_back_once_idle)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct fl_test_fd_snapshot base;
		int tl, f;

		fl_assert(fl_daemon_connect() > 0);
		tl = sw_sync_timeline_create();
		fl_assert(tl >= 0);
		fl_test_fd_snapshot(&base);
		/* Never signalled: the ends would wait for a signal that does not come. */
		for (int i = 0; i < 100; i++) {
			f = sw_sync_fence_create(tl, "dropped", (uint32_t)i + 1);
			fl_assert(f >= 0);
			close(f);
		}
		wait_fds_back(&base);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/* FENCELINE_POOL_MAX=0: no fd kept ready at all, and fences still work. */
FL_TEST(no_pool_keeps_no_fd_ready)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct fl_test_fd_snapshot base;
		int tl, f;

		setenv("FENCELINE_POOL_MAX", "0", 1);
		fl_assert(fl_daemon_connect() > 0);
		fl_test_fd_snapshot(&base);
		tl = sw_sync_timeline_create();
		fl_assert(tl >= 0);
		f = sw_sync_fence_create(tl, "one", 1);
		fl_assert(f >= 0);
		/* The timeline, the fence, and at most its kept signal end and the watcher's two. */
		fl_assert(fl_test_fds_new_since(&base, NULL, 0) <= 5);
		fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
		fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
		close(f);
		close(tl);
		make_and_drop_fences(40);
		wait_fds_back(&base);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/* Every thread of @pid is stopped (state T): the SIGSTOP has taken effect. */
static bool process_stopped(pid_t pid)
{
	char path[64], buf[512];
	const char *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'T';
}

/*
 * A daemon that stopped answering: requests give ETIMEDOUT, on the
 * connection that was open and on new ones, and work again once it
 * answers. The bound (2 s) only has to outlast one round trip on a busy
 * machine; the calls meant to time out take it whole.
 */
FL_TEST(requests_to_a_stopped_daemon_time_out)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		char path[256];
		pid_t daemon;
		int tl, tl2 = -1, f;

		dl_runtime_path("stopped.sock", path, sizeof(path));
		daemon = dl_daemon_start(path, NULL);
		setenv("FENCELINE_SOCKET", path, 1);
		setenv("FENCELINE_REQUEST_TIMEOUT_MS", "2000", 1);
		fl_assert_int_eq(fl_daemon_connect(), daemon);
		fl_assert_int_eq(fl_timeline_fd_create("t", 0, &tl), 0);
		fl_assert_int_eq(kill(daemon, SIGSTOP), 0);
		while (!process_stopped(daemon))
			fl_test_sleep_ms(1);
		/* The open connection: the reply never comes. */
		fl_assert_int_eq(fl_timeline_fd_create("t2", 0, &tl2), -ETIMEDOUT);
		fl_assert_int_eq(tl2, -1);
		/* A new connection: HELLO goes unanswered. */
		fl_assert_int_eq(fl_daemon_connect(), -ETIMEDOUT);
		f = -1;
		fl_assert_int_eq(fl_fence_fd_create(tl, 1, "f", &f), -ETIMEDOUT);
		fl_assert_int_eq(f, -1);
		fl_assert_int_eq(kill(daemon, SIGCONT), 0);
		unsetenv("FENCELINE_REQUEST_TIMEOUT_MS");
		fl_assert_int_eq(fl_daemon_connect(), daemon);
		fl_assert_int_eq(fl_fence_fd_create(tl, 1, "f", &f), 0);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(f, DL_LONG_WAIT_MS), 0);
		close(f);
		close(tl);
		fl_daemon_disconnect();
		dl_daemon_stop(daemon);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/* A listening socket nobody accepts on or answers: connecting gives ETIMEDOUT. */
FL_TEST(silent_listener_times_out)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), early[4], tl = -1;

		fl_assert(l >= 0);
		dl_runtime_path("silent.sock", a.sun_path, sizeof(a.sun_path));
		fl_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
		fl_assert_int_eq(listen(l, 4), 0);
		setenv("FENCELINE_SOCKET", a.sun_path, 1);
		setenv("FENCELINE_REQUEST_TIMEOUT_MS", "200", 1);
		/* Accepted by the kernel, never by anyone: HELLO goes unanswered. */
		fl_assert_int_eq(fl_daemon_connect(), -ETIMEDOUT);
		fl_assert_int_eq(fl_timeline_fd_create("t", 0, &tl), -ETIMEDOUT);
		fl_assert_int_eq(tl, -1);
		/* A full backlog: connect() itself waits. */
		for (int i = 0; i < 4; i++) {
			early[i] =
				socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
			fl_assert(early[i] >= 0);
			(void)!connect(early[i], (struct sockaddr *)&a, sizeof(a));
		}
		fl_assert_int_eq(fl_daemon_connect(), -ETIMEDOUT);
		for (int i = 0; i < 4; i++)
			close(early[i]);
		close(l);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/*
 * The request timeout bounds requests, not waits on fences: a process
 * whose requests may take 50 ms waits 600 ms for fences another process
 * signals (that one with the default bound, so that nothing here depends
 * on a request being quick).
 */
FL_TEST(request_timeout_does_not_cut_fence_waits_short)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		int tl, f1, f2, go[2];
		pid_t signaller;
		char byte;

		fl_assert_int_eq(fl_timeline_fd_create("slow", 0, &tl), 0);
		fl_assert_int_eq(fl_fence_fd_create(tl, 1, "f1", &f1), 0);
		fl_assert_int_eq(fl_fence_fd_create(tl, 2, "f2", &f2), 0);
		fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
		signaller = dl_fork();
		if (signaller == 0) {
			close(go[1]);
			for (int i = 0; i < 2; i++) {
				dl_read_all(go[0], &byte, 1);
				fl_test_sleep_ms(600);
				fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
			}
			_exit(0);
		}
		close(go[0]);
		fl_daemon_disconnect();
		setenv("FENCELINE_REQUEST_TIMEOUT_MS", "50", 1);
		dl_write_all(go[1], "1", 1);
		fl_assert_int_eq(fl_fence_fd_wait(f1, -1), 0);
		dl_write_all(go[1], "2", 1);
		fl_assert_int_eq(sync_wait(f2, -1), 0);
		fl_assert_int_eq(fl_fence_fd_get_status(f2), FL_STATUS_SIGNALED);
		dl_wait_child_ok(signaller);
		close(go[1]);
		close(f2);
		close(f1);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

static void need_root(void)
{
	if (geteuid() != 0)
		fl_test_skip("needs root, to act as two users");
}

/* A uid nobody on this machine uses, for a test that takes it on. */
static uid_t spare_uid(int i)
{
	return (uid_t)(61000 + (getpid() % 2000) * 2 + i);
}

/*
 * A "daemon" listening as another user: the library hangs up at once,
 * sending it nothing, before it could believe anything it answers.
 */
FL_TEST(daemon_socket_of_another_user_is_refused)
{
	pid_t pid;

	need_root();
	pid = dl_fork();
	if (pid == 0) {
		char dir[] = "/tmp/fl-peer-XXXXXX", path[64];
		int ready[2], done[2];
		pid_t other;
		char byte;

		fl_assert(mkdtemp(dir) != NULL);
		fl_assert_int_eq(chmod(dir, 0777), 0);
		snprintf(path, sizeof(path), "%s/fenceline.sock", dir);
		fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
		fl_assert_int_eq(pipe2(done, O_CLOEXEC), 0);
		other = dl_fork();
		if (other == 0) {
			struct sockaddr_un a = { .sun_family = AF_UNIX };
			int l, c;
			ssize_t n;
			char buf[64];

			fl_assert_int_eq(setgid(spare_uid(0)), 0);
			fl_assert_int_eq(setuid(spare_uid(0)), 0);
			l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
			snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
			fl_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
			fl_assert_int_eq(chmod(path, 0666), 0);
			fl_assert_int_eq(listen(l, 4), 0);
			dl_write_all(ready[1], "r", 1);
			dl_read_all(done[0], &byte, 1);
			/* The library connected and said nothing. */
			c = accept(l, NULL, NULL);
			fl_assert(c >= 0);
			n = recv(c, buf, sizeof(buf), MSG_DONTWAIT);
			fl_assert(n <= 0);
			_exit(0);
		}
		dl_read_all(ready[0], &byte, 1);
		setenv("FENCELINE_SOCKET", path, 1);
		setenv("FENCELINE_REQUEST_TIMEOUT_MS", "5000", 1);
		fl_assert_int_eq(fl_daemon_connect(), -EPERM);
		dl_write_all(done[1], "d", 1);
		dl_wait_child_ok(other);
		unlink(path);
		rmdir(dir);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

/*
 * Another user made /tmp/fenceline-UID first: the library falls back to a
 * directory only this user can have made ($HOME/.fenceline here, as the
 * test's uid has no /run/user directory) and works.
 */
static void squatted_directory(bool daemon_by_hand)
{
	pid_t pid;

	need_root();
	pid = dl_fork();
	if (pid == 0) {
		uid_t me = spare_uid(0), squatter = spare_uid(1);
		char squat[64], home[] = "/tmp/fl-home-XXXXXX", sock[128], run[64];
		struct stat st;
		pid_t user;

		snprintf(run, sizeof(run), "/run/user/%u", (unsigned int)me);
		if (stat(run, &st) == 0)
			fl_test_skip("%s exists", run);
		snprintf(squat, sizeof(squat), "/tmp/fenceline-%u", (unsigned int)me);
		fl_assert(mkdir(squat, 0755) == 0 || errno == EEXIST);
		fl_assert_int_eq(chown(squat, squatter, squatter), 0);
		fl_assert(mkdtemp(home) != NULL);
		fl_assert_int_eq(chown(home, me, me), 0);
		snprintf(sock, sizeof(sock), "%s/.fenceline/fenceline.sock", home);
		user = dl_fork();
		if (user == 0) {
			pid_t daemon;
			int tl, f;

			fl_assert_int_eq(setgid(me), 0);
			fl_assert_int_eq(setuid(me), 0);
			unsetenv("XDG_RUNTIME_DIR");
			unsetenv("FENCELINE_SOCKET");
			setenv("HOME", home, 1);
			if (daemon_by_hand) {
				/* fencelined started without --socket picks the same place. */
				pid_t d = dl_fork();

				if (d == 0) {
					execl(FL_FENCELINED, FL_FENCELINED, "--foreground",
					      (char *)NULL);
					_exit(127);
				}
				for (int i = 0; i < DL_LONG_WAIT_MS && stat(sock, &st) != 0; i++) {
					fl_assert(waitpid(d, NULL, WNOHANG) == 0);
					fl_test_sleep_ms(1);
				}
				daemon = fl_daemon_connect();
				fl_assert_int_eq(daemon, d);
			} else {
				daemon = fl_daemon_connect();
				fl_assert(daemon > 0);
			}
			fl_assert_int_eq(stat(sock, &st), 0);
			fl_assert(S_ISSOCK(st.st_mode));
			tl = sw_sync_timeline_create();
			fl_assert(tl >= 0);
			f = sw_sync_fence_create(tl, "f", 1);
			fl_assert(f >= 0);
			fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
			fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
			close(f);
			close(tl);
			fl_daemon_disconnect();
			fl_assert_int_eq(kill(daemon, SIGTERM), 0);
			_exit(0);
		}
		dl_wait_child_ok(user);
		/* The daemon removes its socket as it exits. */
		for (int i = 0; i < DL_LONG_WAIT_MS && stat(sock, &st) == 0; i++)
			fl_test_sleep_ms(1);
		rmdir(squat);
		snprintf(sock, sizeof(sock), "%s/.fenceline/fenceline.sock.lock", home);
		unlink(sock);
		snprintf(sock, sizeof(sock), "%s/.fenceline", home);
		rmdir(sock);
		fl_assert_int_eq(rmdir(home), 0);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

FL_TEST(squatted_tmp_socket_directory_falls_back_to_a_private_one)
{
	squatted_directory(false);
}

/* The daemon started by hand (no --socket) follows the same rule (src/util/socket-path.c). */
FL_TEST(daemon_started_by_hand_avoids_a_squatted_directory_too)
{
	squatted_directory(true);
}

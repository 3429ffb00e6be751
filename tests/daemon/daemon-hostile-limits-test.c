/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world, per-client limits and quotas: timelines and fences per
 * client, pipe fences giving their quota back, and a daemon out of fds
 * (EMFILE) that keeps its clients.
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

/* ---- limits ---- */

static void limits_child(const char *path)
{
	int tl[3], f[6], m = -1, r;
	uint64_t deadline;

	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	tl[0] = new_timeline("limit-0");
	tl[1] = new_timeline("limit-1");
	fl_assert_int_eq(fl_timeline_fd_create("limit-2", 0, &tl[2]), -EMFILE);

	for (int i = 0; i < 4; i++)
		f[i] = new_fence(tl[0], (uint64_t)i + 1, "ok");
	/* The fifth is accepted here and failed by the daemon. */
	f[4] = new_fence(tl[0], 5, "over");
	dl_expect_fence_status(f[4], -EMFILE);
	/*
	 * A merge goes one-way into a pooled fd when the pool has one: then,
	 * as a fence made over the quota, the daemon fails it (never
	 * signalled); without one, the pool's fill is refused at once.
	 */
	r = fl_fence_fd_merge(f[0], f[1], "over", 0, &m);
	if (r == 0) {
		dl_expect_fence_status(m, -EMFILE);
		close(m);
	} else {
		fl_assert_int_eq(r, -EMFILE);
	}
	for (int i = 0; i < 4; i++)
		fl_assert_int_eq(fl_fence_fd_get_status(f[i]), FL_STATUS_ACTIVE);

	/* Closing frees room, once the daemon has seen the last copy go. */
	close(f[0]);
	deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	for (;;) {
		f[5] = new_fence(tl[0], 6, "room");
		fl_daemon_flush();
		r = fl_fence_fd_get_status(f[5]);
		if (r != -EMFILE)
			break;
		close(f[5]);
		fl_assert(fl_test_now_ns() < deadline);
		fl_test_sleep_ms(5);
	}
	fl_assert_int_eq(r, FL_STATUS_ACTIVE);

	close(tl[1]);
	for (;;) {
		r = fl_timeline_fd_create("limit-2", 0, &tl[2]);
		if (r != -EMFILE)
			break;
		fl_assert(fl_test_now_ns() < deadline);
		fl_test_sleep_ms(5);
	}
	fl_assert_int_eq(r, 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl[0], 6), 0);
	for (int i = 1; i < 4; i++)
		dl_expect_fence_status(f[i], FL_STATUS_SIGNALED);
	dl_expect_fence_status(f[5], FL_STATUS_SIGNALED);
	/*
	 * The refused one stays failed, though our step passed its value
	 * and we kept its signal end: the daemon flagged the timeline before
	 * it failed the pipe, so the step looked before writing.
	 */
	dl_expect_fence_status(f[4], -EMFILE);
	close(f[4]);
	_exit(0);
}

FL_TEST(daemon_limits_timelines_and_fences_per_client)
{
	static const char *const limits[] = {
		"--max-fences", "4", "--max-timelines", "2", "--idle-timeout", "0", NULL
	};
	char path[256];
	pid_t d, pid;
	int base;

	dl_runtime_path("limits.sock", path, sizeof(path));
	d = dl_daemon_start(path, limits);
	base = dl_daemon_fd_baseline(d);
	/* The test process is connected elsewhere: a child picks the socket first thing. */
	pid = dl_fork();
	if (pid == 0)
		limits_child(path);
	dl_wait_child_ok(pid);
	/* Twice: the limits count live objects, and the first client's are all gone. */
	pid = dl_fork();
	if (pid == 0)
		limits_child(path);
	dl_wait_child_ok(pid);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
}

/*
 * A process that owns no timeline gets pipe fence fds, whose completed
 * fences the daemon only learns are closed when it sweeps them. Creating
 * and closing born-signalled fences far past --max-fences and the fd quota
 * must still work: the quotas count them only until a sweep.
 */
static void pipe_fences_child(int tl)
{
	struct stat st;
	int fd;

	for (int i = 0; i < 200; i++) {
		fd = new_fence(tl, 0, "born-signalled");
		if (i == 0) {
			fl_assert_int_eq(fstat(fd, &st), 0);
			fl_assert(S_ISFIFO(st.st_mode));
		}
		dl_expect_fence_status(fd, FL_STATUS_SIGNALED);
		close(fd);
	}
	_exit(0);
}

/*
 * @child makes and closes fences of a timeline it does not own, under a
 * daemon of 8 fences and 40 fds per process at most, named @name.
 */
static void under_small_quotas(const char *name, void (*child)(int tl))
{
	static const char *const limits[] = {
		"--max-fences", "8", "--max-fds-per-process", "40", "--idle-timeout", "0", NULL
	};
	char path[256], sock[64];
	pid_t d, pid;

	snprintf(sock, sizeof(sock), "%s.sock", name);
	dl_runtime_path(sock, path, sizeof(path));
	d = dl_daemon_start(path, limits);
	pid = dl_fork();
	if (pid == 0) {
		pid_t maker;
		int tl;

		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		/* Made here, used by a child: that one owns no timeline. */
		tl = new_timeline(name);
		maker = dl_fork();
		if (maker == 0)
			child(tl);
		dl_wait_child_ok(maker);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);
}

FL_TEST(closed_completed_pipe_fences_give_their_quota_back)
{
	under_small_quotas("pipe-quota", pipe_fences_child);
}

/*
 * The same for pending pipe fences: the daemon learns that a pending
 * fence's fd was closed everywhere from a sweep of its new fences' write
 * ends, which it runs before it refuses a quota. Creating and closing
 * pending fences far past --max-fences and the fd quota must work.
 */
static void pending_pipe_fences_child(int tl)
{
	struct stat st;
	int fd;

	for (int i = 0; i < 200; i++) {
		fd = new_fence(tl, 1, "pending");
		if (i == 0) {
			fl_assert_int_eq(fstat(fd, &st), 0);
			fl_assert(S_ISFIFO(st.st_mode));
		}
		fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
		close(fd);
	}
	_exit(0);
}

FL_TEST(closed_pending_pipe_fences_give_their_quota_back)
{
	under_small_quotas("pipe-pending-quota", pending_pipe_fences_child);
}

/* The highest fd number process @pid has open (@lowest_free: else the lowest it has not). */
static int fd_number(pid_t pid, bool lowest_free)
{
	static bool open_fd[FD_MAP_SIZE];
	int top = open_fd_map(pid, open_fd);

	if (lowest_free)
		for (int fd = 0; fd <= top; fd++)
			if (!open_fd[fd])
				return fd;
	return top;
}

static void out_of_fds_child(const char *path, pid_t daemon)
{
	int tl, unbound, f[64], n = 0, m = -1, r;
	struct rlimit saved;
	uint64_t value;
	pid_t other;

	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	fl_assert_int_eq(fl_daemon_connect(), daemon);
	tl = new_timeline("out-of-fds");
	/* A timeline the next connection has not bound: its first fence must bind it. */
	unbound = new_timeline("unbound");
	fl_daemon_disconnect();
	fl_assert_int_eq(fl_daemon_connect(), daemon);
	f[n++] = new_fence(tl, 1, "first");
	f[n++] = new_fence(tl, 1, "second");
	fl_daemon_flush(); /* both made before the limit drops */
	fl_assert_int_eq(fl_fence_fd_get_status(f[1]), FL_STATUS_ACTIVE);
	fl_assert_int_eq(prlimit(daemon, RLIMIT_NOFILE, NULL, &saved), 0);

	/* No fd above the ones it has: every new fence must fail, not hang or cut us off. */
	set_fd_limit(daemon, (rlim_t)fd_number(daemon, false) + 1);
	for (;;) {
		fl_assert(n < (int)(sizeof(f) / sizeof(f[0])));
		/*
		 * The fence fds the library keeps ready still work (the daemon
		 * made them before); once they are used up, getting more fails.
		 */
		r = fl_fence_fd_create(tl, 1, "over", &f[n]);
		if (r < 0)
			break;
		fl_daemon_flush();
		r = fl_fence_fd_get_status(f[n++]);
		if (r != FL_STATUS_ACTIVE)
			break;
	}
	fl_assert_int_eq(r, -EMFILE);

	/*
	 * A failed request can leave a hole in its fd table; with the limit at
	 * the lowest free number it has none, and every call fails with -EMFILE.
	 */
	set_fd_limit(daemon, (rlim_t)fd_number(daemon, true));
	fl_assert_int_eq(fl_fence_fd_merge(f[0], f[1], "over", 0, &m), -EMFILE);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &value), -EMFILE);
	fl_assert_int_eq(fl_fence_fd_create(unbound, 1, "bind", &m), -EMFILE);
	/* A new client hears it too, through the fd the daemon keeps in reserve. */
	other = dl_fork();
	if (other == 0)
		_exit(fl_daemon_connect() == -EMFILE ? 0 : 1);
	dl_wait_child_ok(other);

	/* Room again: the same connection works on. */
	fl_assert_int_eq(prlimit(daemon, RLIMIT_NOFILE, &saved, NULL), 0);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &value), 0);
	fl_assert_int_eq(fl_fence_fd_merge(f[0], f[1], "room", 0, &m), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	dl_expect_fence_status(m, FL_STATUS_SIGNALED);
	close(m);
	for (int i = 0; i < n; i++)
		close(f[i]);
	close(unbound);
	close(tl);
	_exit(0);
}

FL_TEST(daemon_out_of_fds_fails_requests_with_emfile_and_keeps_clients)
{
	dl_daemon_stop(child_on_own_daemon("nofds.sock", out_of_fds_child));
}

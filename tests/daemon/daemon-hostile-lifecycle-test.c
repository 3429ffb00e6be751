/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world, start-up and exit: many processes starting a daemon at
 * once, the idle exit, and a daemon killed under waiters and owners.
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

/*
 * The daemon's death, for pipe fence fds: its write ends close without a
 * record, every waiter (another process too) wakes with -ECONNRESET, and
 * reading the status starts no new daemon.
 */
static bool someone_listens(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool yes;

	fl_assert(s >= 0);
	fl_assert(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	yes = connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(s);
	return yes;
}

/*
 * Pending fence @fd is waited on here and by a forked waiter while daemon
 * @daemon is SIGKILLed: both waits, and the status after, end in
 * -ECONNRESET, and nobody hangs.
 */
static void kill_daemon_under_waiters(pid_t daemon, int fd)
{
	int ready[2];
	pid_t waiter;
	char byte;

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	waiter = dl_fork();
	if (waiter == 0) {
		close(ready[0]);
		fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
		dl_write_all(ready[1], "r", 1);
		fl_assert_int_eq(fl_fence_fd_wait(fd, DL_LONG_WAIT_MS), -ECONNRESET);
		_exit(0);
	}
	close(ready[1]);
	dl_read_all(ready[0], &byte, 1);
	close(ready[0]);
	fl_assert_int_eq(kill(daemon, SIGKILL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, DL_LONG_WAIT_MS), -ECONNRESET);
	dl_wait_child_ok(waiter);
	dl_expect_fence_status(fd, -ECONNRESET);
}

static void pipe_death_maker(int tl, const char *path)
{
	int fd = new_fence(tl, 1, "doomed");
	struct stat st;
	pid_t daemon;

	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert(S_ISFIFO(st.st_mode));
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	daemon = fl_daemon_connect();
	fl_assert(daemon > 0);
	kill_daemon_under_waiters(daemon, fd);
	/* Nobody answers there now: the status read did not start a daemon. */
	fl_assert(!someone_listens(path));
	close(fd);
	_exit(0);
}

FL_TEST(daemon_sigkill_fails_pending_pipe_fences_and_no_waiter_hangs)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	pid_t d, pid;

	dl_runtime_path("pipe-death.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	pid = dl_fork();
	if (pid == 0) {
		pid_t maker;
		int tl;

		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		tl = new_timeline("pipe-death");
		maker = dl_fork();
		if (maker == 0)
			pipe_death_maker(tl, path);
		dl_wait_child_ok(maker);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);
}

/*
 * The same for an owner's own fence, whose only write end the owner keeps:
 * when the daemon dies, the owner's watcher sees the kick pipe hang up and
 * closes its end, so every waiter (the owner, another process) wakes, with
 * -ECONNRESET, never success.
 */
FL_TEST(daemon_sigkill_fails_an_owners_kept_fences_and_no_waiter_hangs)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	pid_t d, pid;

	dl_runtime_path("owner-death.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	pid = dl_fork();
	if (pid == 0) {
		struct stat st;
		int tl, fd;

		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		tl = new_timeline("owner-death");
		fd = new_fence(tl, 1, "kept");
		fl_assert_int_eq(fstat(fd, &st), 0);
		fl_assert(S_ISFIFO(st.st_mode));
		fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
		kill_daemon_under_waiters(d, fd);
		close(fd);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);
}

/* ---- start-up and exit ---- */

#define RACERS 16

FL_TEST(processes_starting_at_once_get_exactly_one_daemon)
{
	char path[256];
	int go[2], results[2];
	pid_t pids[RACERS], first = 0;

	dl_runtime_path("race.sock", path, sizeof(path));
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(results, O_CLOEXEC), 0);
	for (int i = 0; i < RACERS; i++) {
		pids[i] = dl_fork();
		if (pids[i] == 0) {
			char byte;
			int32_t pid;

			close(go[1]);
			close(results[0]);
			fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
			/* Blocks until the test closes the write end: everyone at once. */
			fl_assert_int_eq(read(go[0], &byte, 1), 0);
			pid = fl_daemon_connect();
			dl_write_all(results[1], &pid, sizeof(pid));
			_exit(0);
		}
	}
	close(go[0]);
	close(results[1]);
	close(go[1]);
	for (int i = 0; i < RACERS; i++) {
		int32_t pid;

		dl_read_all(results[0], &pid, sizeof(pid));
		fl_assert(pid > 0);
		if (!first)
			first = pid;
		fl_assert_int_eq(pid, first);
	}
	for (int i = 0; i < RACERS; i++)
		dl_wait_child_ok(pids[i]);
	close(results[0]);
	/* The daemon is not our child and nobody uses it any more. */
	kill(first, SIGTERM);
}

/* Daemon @d exits with status 0 within DL_LONG_WAIT_MS, as after its idle period. */
static void expect_idle_exit(pid_t d)
{
	uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	int status;
	pid_t r;

	while ((r = waitpid(d, &status, WNOHANG)) == 0 && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(10);
	if (r == 0) {
		kill(d, SIGKILL);
		waitpid(d, &status, 0);
		fl__test_fail(__FILE__, __LINE__,
			      "daemon still running long after its idle period");
	}
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
}

/*
 * A daemon waits for its clients without a timeout, so its idle clock must
 * restart when the last one leaves: measured from before a long quiet
 * connection, the idle period would be over the moment it closed, and a
 * client arriving just then would find the daemon gone.
 */
FL_TEST(idle_period_starts_when_the_last_client_leaves)
{
	static const char *const idle[] = { "--idle-timeout", "300", NULL };
	char path[256];
	int status;
	pid_t d, pid;

	dl_runtime_path("idle-late.sock", path, sizeof(path));
	d = dl_daemon_start(path, idle);
	pid = dl_fork();
	if (pid == 0) {
		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		fl_assert_int_eq(fl_daemon_connect(), d);
		fl_test_sleep_ms(900); /* three idle periods, connected and quiet */
		fl_daemon_disconnect();
		_exit(0);
	}
	dl_wait_child_ok(pid);
	fl_test_sleep_ms(100);
	fl_assert_int_eq(waitpid(d, &status, WNOHANG), 0);

	expect_idle_exit(d);
}

FL_TEST(idle_daemon_stays_while_a_fence_fd_lives_then_exits)
{
	static const char *const idle[] = { "--idle-timeout", "200", NULL };
	char path[256];
	int sv[2], fence, status;
	uint64_t deadline;
	pid_t d, pid, r;

	dl_runtime_path("idle.sock", path, sizeof(path));
	d = dl_daemon_start(path, idle);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = dl_fork();
	if (pid == 0) {
		int tl, f;

		close(sv[0]);
		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		fl_assert_int_eq(fl_daemon_connect(), d);
		tl = new_timeline("idle");
		f = new_fence(tl, 1, "kept");
		fl_daemon_flush();
		dl_send_fd(sv[1], f);
		_exit(0);
	}
	close(sv[1]);
	fence = dl_recv_fd(sv[0]);
	close(sv[0]);
	dl_wait_child_ok(pid);

	/* No client is connected, but our fence fd is the daemon's: five idle timeouts. */
	fl_test_sleep_ms(1000);
	fl_assert_int_eq(waitpid(d, &status, WNOHANG), 0);
	/*
	 * Its owner exited, so the timeline died, and the daemon answers that
	 * (the owner kept the fence's only write end: its exit closed it
	 * without a record, so only the daemon knows). Asked, then left.
	 */
	fl_daemon_disconnect();
	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	dl_expect_fence_status(fence, -ENOENT);
	fl_daemon_disconnect();
	fl_test_sleep_ms(500);
	fl_assert_int_eq(waitpid(d, &status, WNOHANG), 0);

	close(fence);
	deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	while ((r = waitpid(d, &status, WNOHANG)) == 0 && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(10);
	if (r == 0) {
		kill(d, SIGKILL);
		waitpid(d, &status, 0);
		fl__test_fail(__FILE__, __LINE__, "daemon still running after the last fd closed");
	}
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
	fl_assert_errno(access(path, F_OK), ENOENT);
}

/*
 * The last client can go while the loop answers parked DUMPs (its reply
 * cannot be sent: it closed its connection after asking). The loop then
 * waits again with a timeout, so that the idle period still ends it.
 */
FL_TEST(idle_daemon_exits_when_its_last_client_left_with_a_dump_parked)
{
	static const char *const idle[] = { "--idle-timeout", "200", NULL };
	char path[256];
	pid_t d;
	int s;

	dl_runtime_path("idle-dump.sock", path, sizeof(path));
	d = dl_daemon_start(path, idle);
	s = raw_connect_to(path);
	raw_hello(s);
	/* Parked until a walk of /proc is done: we are gone by then. */
	raw_send_dump(s, 9);
	close(s);

	expect_idle_exit(d);
}

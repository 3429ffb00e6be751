/* SPDX-License-Identifier: MIT */
/*
 * The fd API (<fenceline/shared.h>) across processes, served by fencelined:
 * fences signalled from another process, fds inherited through fork and
 * exec or passed with SCM_RIGHTS, merges of other processes' fences, the
 * fences a timeline's owner completes itself (its counter shared with the
 * daemon, 32-bit wrap-around included), the death of a timeline's owner
 * and of the daemon itself, threads and fork racing requests, in-process
 * mode, and the libsync compat calls.
 * The daemon's robustness (hostile peers, limits, start-up, idle exit,
 * many clients): daemon-hostile-*-test.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <android/sync.h>
#include <sw_sync.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>

#include "daemon-helpers.h"
#include "helpers.h"
#include "runner.h"

#ifndef FL_EXEC_CHILD
#error "the build passes FL_EXEC_CHILD, the path of daemon-exec-child"
#endif

static int new_timeline(const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_timeline_fd_create(name, 0, &fd), 0);
	return fd;
}

static int new_fence(int tl, uint64_t value, const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_fd_create(tl, value, name, &fd), 0);
	return fd;
}

static int new_merge(int a, int b, const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_fd_merge(a, b, name, 0, &fd), 0);
	return fd;
}

static void socketpair_or_fail(int sv[2])
{
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

FL_TEST(fence_signalled_by_forked_child_through_timeline_fd_wakes_parent)
{
	int tl = new_timeline("parent-tl");
	int fence = new_fence(tl, 1, "parent-fence");
	pid_t pid;

	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
	pid = dl_fork();
	if (pid == 0) {
		/* The child's own connection signals the parent's timeline. */
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		_exit(0);
	}
	dl_expect_fence_status(fence, FL_STATUS_SIGNALED);
	dl_wait_child_ok(pid);
	{
		uint64_t v = 0;

		fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
		fl_assert_int_eq(v, 1);
	}
	close(fence);
	close(tl);
}

FL_TEST(fence_created_by_forked_child_is_waited_by_parent)
{
	int sv[2], go[2], fence;
	struct fl_fence_info info;
	struct fl_sync_pt_info pt;
	pid_t pid;
	char byte = 'g';

	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	pid = dl_fork();
	if (pid == 0) {
		int tl = new_timeline("child-tl");
		int f = new_fence(tl, 3, "child-fence");

		close(sv[0]);
		close(go[1]);
		dl_send_fd(sv[1], f);
		close(f);
		dl_read_all(go[0], &byte, 1);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 3), 0);
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	fence = dl_recv_fd(sv[0]);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 0), -ETIME);
	fl_assert_int_eq(fl_fence_fd_get_info(fence, &info, &pt, 1), 1);
	fl_assert_str_eq(info.name, "child-fence");
	fl_assert_str_eq(pt.timeline_name, "child-tl");
	fl_assert_int_eq(pt.value, 3);
	dl_write_all(go[1], &byte, 1);
	fl_assert_int_eq(fl_fence_fd_wait(fence, DL_LONG_WAIT_MS), 0);
	dl_wait_child_ok(pid);
	/* The creator has exited; the signalled fence keeps its status. */
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_SIGNALED);
	close(fence);
	close(sv[0]);
	close(go[1]);
}

FL_TEST(fence_and_timeline_fds_survive_fork_and_exec)
{
	int tl = new_timeline("exec-tl");
	int fence = new_fence(tl, 1, "exec-fence");
	uint64_t v = 0;
	pid_t pid;

	/* Inherited only where the flag is cleared: in the child, before exec. */
	pid = dl_fork();
	if (pid == 0) {
		char a[16], b[16];

		fcntl(tl, F_SETFD, 0);
		fcntl(fence, F_SETFD, 0);
		snprintf(a, sizeof(a), "%d", tl);
		snprintf(b, sizeof(b), "%d", fence);
		execl(FL_EXEC_CHILD, FL_EXEC_CHILD, a, b, (char *)NULL);
		_exit(127);
	}
	dl_wait_child_ok(pid);
	/* The exec'd program signalled our timeline. */
	dl_expect_fence_status(fence, FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	fl_assert_int_eq(v, 1);
	close(fence);
	close(tl);
}

/*
 * Process A makes a fence and sends it to B; B merges it with a fence of
 * its own timeline and sends the merge back; A hands it to the test
 * process. Both signal and exit; the merge outlives them.
 */
static void merge_peer_a(int to_b, int to_test, int go)
{
	int tl = new_timeline("tl-a");
	int fa = new_fence(tl, 1, "fence-a");
	int merged;
	char byte;

	dl_send_fd(to_b, fa);
	merged = dl_recv_fd(to_b);
	fl_assert_int_eq(fl_fence_fd_get_info(merged, NULL, NULL, 0), 0);
	dl_send_fd(to_test, merged);
	dl_read_all(go, &byte, 1);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	dl_expect_fence_status(fa, FL_STATUS_SIGNALED);
	close(merged);
	close(fa);
	close(tl);
	_exit(0);
}

static void merge_peer_b(int to_a, int go)
{
	int tl = new_timeline("tl-b");
	int fb = new_fence(tl, 2, "fence-b");
	int fa = dl_recv_fd(to_a);
	int merged = new_merge(fa, fb, "a+b");
	char byte;

	dl_send_fd(to_a, merged);
	dl_read_all(go, &byte, 1);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 2), 0);
	close(merged);
	close(fa);
	close(fb);
	close(tl);
	_exit(0);
}

FL_TEST(merge_of_fences_from_two_processes_outlives_both)
{
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	int ab[2], at[2], go[2], merged, again;
	pid_t a, b;

	socketpair_or_fail(ab);
	socketpair_or_fail(at);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	a = dl_fork();
	if (a == 0) {
		close(ab[1]);
		close(at[0]);
		close(go[1]);
		merge_peer_a(ab[0], at[1], go[0]);
	}
	b = dl_fork();
	if (b == 0) {
		close(ab[0]);
		close(at[0]);
		close(at[1]);
		close(go[1]);
		merge_peer_b(ab[1], go[0]);
	}
	close(ab[0]);
	close(ab[1]);
	close(at[1]);
	close(go[0]);

	merged = dl_recv_fd(at[0]);
	fl_assert_int_eq(fl_fence_fd_get_info(merged, &info, pts, 2), 2);
	fl_assert_str_eq(info.name, "a+b");
	fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(info.num_points, 2);
	fl_assert_int_eq(fl_fence_fd_wait(merged, 0), -ETIME);

	dl_write_all(go[1], "gg", 2);
	dl_wait_child_ok(a);
	dl_wait_child_ok(b);

	/* Both makers are gone; the merge completed and still answers. */
	dl_expect_fence_status(merged, FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_info(merged, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_str_eq(info.name, "a+b");
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(pts[i].status, FL_STATUS_SIGNALED);
		fl_assert(!strcmp(pts[i].timeline_name, "tl-a") ||
			  !strcmp(pts[i].timeline_name, "tl-b"));
		fl_assert_int_eq(pts[i].value, strcmp(pts[i].timeline_name, "tl-a") ? 2 : 1);
	}
	fl_assert(strcmp(pts[0].timeline_name, pts[1].timeline_name) != 0);
	/* And it can still be merged by a process that made none of it. */
	again = new_merge(merged, merged, "again");
	dl_expect_fence_status(again, FL_STATUS_SIGNALED);
	close(again);
	close(merged);
	close(at[0]);
	close(go[1]);
}

FL_TEST(merge_pending_when_makers_exit_fails_with_enoent)
{
	int ab[2], at[2], merged;
	pid_t a, b;

	/* Like above, but the makers exit without signalling: their timelines die. */
	socketpair_or_fail(ab);
	socketpair_or_fail(at);
	a = dl_fork();
	if (a == 0) {
		int tl = new_timeline("tl-a"), fa = new_fence(tl, 1, "fence-a"), m;

		dl_send_fd(ab[0], fa);
		m = dl_recv_fd(ab[0]);
		dl_send_fd(at[1], m);
		_exit(0);
	}
	b = dl_fork();
	if (b == 0) {
		int tl = new_timeline("tl-b"), fb = new_fence(tl, 1, "fence-b");
		int fa = dl_recv_fd(ab[1]);

		dl_send_fd(ab[1], new_merge(fa, fb, "a+b"));
		_exit(0);
	}
	close(ab[0]);
	close(ab[1]);
	close(at[1]);
	merged = dl_recv_fd(at[0]);
	dl_wait_child_ok(a);
	dl_wait_child_ok(b);
	dl_expect_fence_status(merged, -ENOENT);
	close(merged);
	close(at[0]);
}

FL_TEST(fence_of_sigkilled_timeline_owner_completes_with_enoent)
{
	int sv[2], ready[2], fence;
	pid_t owner, waiter;
	char byte;

	socketpair_or_fail(sv);
	owner = dl_fork();
	if (owner == 0) {
		/* The only copy of the timeline fd lives here. */
		int tl = new_timeline("owner-tl");
		int f = new_fence(tl, 5, "owned");

		close(sv[0]);
		dl_send_fd(sv[1], f);
		close(f);
		for (;;)
			pause();
	}
	close(sv[1]);
	fence = dl_recv_fd(sv[0]);
	close(sv[0]);
	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	waiter = dl_fork();
	if (waiter == 0) {
		close(ready[0]);
		fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
		dl_write_all(ready[1], "r", 1);
		dl_expect_fence_status(fence, -ENOENT);
		_exit(0);
	}
	close(ready[1]);
	dl_read_all(ready[0], &byte, 1);
	close(ready[0]);
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
	fl_assert_int_eq(kill(owner, SIGKILL), 0);
	fl_assert_int_eq(waitpid(owner, NULL, 0), owner);
	dl_wait_child_ok(waiter);
	dl_expect_fence_status(fence, -ENOENT);
	close(fence);
}

struct blocked_wait {
	pthread_t thread;
	int fd;
	bool libsync; /* sync_wait() instead of fl_fence_fd_wait() */
	atomic_bool started;
	int ret, err;
};

static void *blocked_wait_main(void *data)
{
	struct blocked_wait *w = data;

	atomic_store(&w->started, true);
	if (w->libsync) {
		w->ret = sync_wait(w->fd, -1);
		w->err = errno;
	} else {
		w->ret = fl_fence_fd_wait(w->fd, -1);
	}
	return NULL;
}

FL_TEST(daemon_sigkill_fails_pending_fences_and_a_new_daemon_takes_over)
{
	struct blocked_wait w[2] = { { .libsync = false }, { .libsync = true } };
	int tl = new_timeline("doomed");
	int f1 = new_fence(tl, 1, "f1"), f2 = new_fence(tl, 2, "f2");
	int compat_tl = sw_sync_timeline_create();
	int f3, tl2, f4, ready[2], r;
	pid_t old, now, waiter;
	uint64_t v;
	char byte;

	fl_assert(compat_tl >= 0);
	f3 = sw_sync_fence_create(compat_tl, "f3", 1);
	fl_assert(f3 >= 0);
	old = fl_daemon_connect();
	fl_assert(old > 0);

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	waiter = dl_fork();
	if (waiter == 0) {
		close(ready[0]);
		fl_assert_int_eq(fl_fence_fd_get_status(f2), FL_STATUS_ACTIVE);
		dl_write_all(ready[1], "r", 1);
		fl_assert_int_eq(fl_fence_fd_wait(f2, DL_LONG_WAIT_MS), -ECONNRESET);
		_exit(0);
	}
	close(ready[1]);
	dl_read_all(ready[0], &byte, 1);
	close(ready[0]);

	w[0].fd = f1;
	w[1].fd = f3;
	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_create(&w[i].thread, NULL, blocked_wait_main, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		while (!atomic_load(&w[i].started))
			fl_test_sleep_ms(1);
	/* Give them a moment to block; if they have not yet, they find the fence failed. */
	fl_test_sleep_ms(50);

	fl_assert_int_eq(kill(old, SIGKILL), 0);

	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_join(w[i].thread, NULL), 0);
	fl_assert_int_eq(w[0].ret, -ECONNRESET);
	fl_assert_int_eq(w[1].ret, 0); /* completed; the info says how */
	dl_wait_child_ok(waiter);
	dl_expect_fence_status(f1, -ECONNRESET);
	dl_expect_fence_status(f2, -ECONNRESET);
	dl_expect_fence_status(f3, -ECONNRESET);

	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), -ECONNRESET);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), -ECONNRESET);
	r = -1;
	fl_assert_int_eq(fl_fence_fd_create(tl, 3, "late", &r), -ECONNRESET);
	fl_assert_int_eq(r, -1);
	errno = 0;
	fl_assert_int_eq(sw_sync_timeline_inc(compat_tl, 1), -1);
	fl_assert_int_eq(errno, ECONNRESET);

	/* The next creation starts a new daemon, which works. */
	tl2 = new_timeline("reborn");
	now = fl_daemon_connect();
	fl_assert(now > 0);
	fl_assert_int_ne(now, old);
	f4 = new_fence(tl2, 1, "f4");
	fl_assert_int_eq(fl_fence_fd_wait(f4, 0), -ETIME);
	fl_assert_int_eq(fl_timeline_fd_inc(tl2, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(f4, DL_LONG_WAIT_MS), 0);
	/* A fence of the dead daemon cannot be merged with one of the new one. */
	r = -1;
	fl_assert(fl_fence_fd_merge(f1, f4, NULL, 0, &r) < 0);
	fl_assert_int_eq(r, -1);

	close(f4);
	close(tl2);
	close(f3);
	close(compat_tl);
	close(f2);
	close(f1);
	close(tl);
}

/*
 * Timelines this process created are its own: the daemon shares their
 * counter with it, and fl_timeline_fd_inc() completes the fences it made on
 * them itself, through a copy of each fence's signal end, before asking the
 * daemon to catch up with the rest.
 */

/* Readable now, without waiting and without asking the daemon. */
static bool fence_fd_readable(int fd)
{
	return fl_test_poll_fd(fd, POLLIN, 0) & POLLIN;
}

/*
 * Every thread of @pid is stopped (state T): a SIGSTOP has taken effect,
 * not just been sent.
 */
static bool process_stopped(pid_t pid)
{
	char path[320], buf[512];
	struct dirent *de;
	bool all = true;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (all && (de = readdir(dir))) {
		const char *p;
		size_t n;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* that thread is gone */
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		/* "tid (comm) S ...": comm may hold anything, so from the last ')'. */
		p = strrchr(buf, ')');
		all = p && p[1] == ' ' && p[2] == 'T';
	}
	closedir(dir);
	return all;
}

/*
 * A daemon this test stops must not stay stopped when the test fails: it
 * runs in a session of its own, out of reach of the runner's kill of the
 * test's process group. The guard, in a process group of its own too,
 * sends it SIGCONT once every copy of the returned fd is closed: by the
 * test when done, or by the exit of a test that failed an assertion.
 */
static int cont_guard_start(pid_t daemon, pid_t *ret_pid)
{
	int p[2];
	pid_t pid;
	char byte;

	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = dl_fork();
	if (pid == 0) {
		/* No library call: its copies of the test's fds go when it exits. */
		setpgid(0, 0);
		close(p[1]);
		while (read(p[0], &byte, 1) < 0 && errno == EINTR)
			;
		kill(daemon, SIGCONT);
		_exit(0);
	}
	/* Both sides, so the runner's group kill cannot catch it in between. */
	setpgid(pid, pid);
	close(p[0]);
	*ret_pid = pid;
	return p[1];
}

struct inc_thread {
	pthread_t thread;
	int tl;
	uint64_t count;
	atomic_bool done;
	int ret;
};

static void *inc_thread_main(void *data)
{
	struct inc_thread *t = data;

	t->ret = fl_timeline_fd_inc(t->tl, t->count);
	atomic_store(&t->done, true);
	return NULL;
}

/*
 * The daemon stopped by daemon_stop(): from there to daemon_resume(), no
 * fork() while another thread is in a library call (fork() takes the
 * connection's lock). An assertion that fails in between is safe: the
 * guard resumes the daemon when the test process exits.
 */
struct stopped_daemon {
	pid_t pid, guard;
	int guard_fd;
	bool stopped; /* seen stopped: the SIGSTOP took effect */
};

static void daemon_stop(struct stopped_daemon *d)
{
	uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;

	d->pid = fl_daemon_connect();
	fl_assert(d->pid > 0);
	d->guard_fd = cont_guard_start(d->pid, &d->guard);
	fl_assert_int_eq(kill(d->pid, SIGSTOP), 0);
	while (!(d->stopped = process_stopped(d->pid)) && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(1);
}

static void daemon_resume(struct stopped_daemon *d)
{
	kill(d->pid, SIGCONT);
	close(d->guard_fd);
	dl_wait_child_ok(d->guard);
	fl_assert(d->stopped);
}

struct stopped_inc {
	bool seen; /* @until said yes while the daemon was stopped */
	bool returned_early; /* the inc returned while the daemon was stopped */
	int ret; /* what the inc returned once the daemon ran again */
};

/*
 * fl_timeline_fd_inc(@tl, @count) in a thread while the daemon is
 * stopped, polling @until(@arg) until it says yes (or DL_LONG_WAIT_MS):
 * what the owner completes itself, it completes without the daemon. The
 * inc itself returns without the daemon only if it reached no point the
 * daemon must complete: with @may_return, give it until the deadline to
 * return. No library call on this thread meanwhile: the inc thread holds
 * the connection while it waits for a reply.
 */
static void inc_while_daemon_stopped(int tl, uint64_t count, bool (*until)(void *), void *arg,
				     bool may_return, struct stopped_inc *out)
{
	uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	struct inc_thread inc = { .tl = tl, .count = count };
	struct stopped_daemon d;
	bool started = false;

	*out = (struct stopped_inc){ .ret = 1 };
	daemon_stop(&d);
	if (d.stopped)
		started = pthread_create(&inc.thread, NULL, inc_thread_main, &inc) == 0;
	while (started && !(out->seen = until(arg)) && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(1);
	while (started && may_return && !atomic_load(&inc.done) && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(1);
	out->returned_early = atomic_load(&inc.done);
	daemon_resume(&d);
	fl_assert(started);
	fl_assert_int_eq(pthread_join(inc.thread, NULL), 0);
	out->ret = inc.ret;
}

/* For inc_while_daemon_stopped(): @arg points to an fd, readable yet? */
static bool fd_readable_cb(void *arg)
{
	return fence_fd_readable(*(const int *)arg);
}

FL_TEST(owner_signal_wakes_other_process_while_daemon_is_stopped)
{
	int tl = new_timeline("owned"), fence = new_fence(tl, 1, "owned-fence");
	int ready[2], woke[2];
	struct stopped_inc si;
	uint64_t v = 0;
	pid_t waiter;
	char byte;

	/*
	 * Our timeline, so the fence came from a pool with signal ends; the
	 * flush makes sure the daemon has made it too before it stops.
	 */
	fl_daemon_flush();
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(woke, O_CLOEXEC), 0);
	waiter = dl_fork();
	if (waiter == 0) {
		struct fl_fence_info info;

		close(ready[0]);
		close(woke[0]);
		/* Its own connection, while the daemon still answers. */
		fl_assert(fl_daemon_connect() > 0);
		/*
		 * It has made no fence, so fl_fence_fd_get_status() has nothing
		 * to flush and only reads the fd: no wait on the stopped daemon.
		 */
		fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
		dl_write_all(ready[1], "r", 1);
		fl_assert(fl_test_poll_fd(fence, POLLIN, DL_LONG_WAIT_MS) & POLLIN);
		fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_SIGNALED);
		dl_write_all(woke[1], "w", 1);
		/* Once the daemon runs again, it agrees. */
		fl_assert_int_eq(fl_fence_fd_get_info(fence, &info, NULL, 0), 0);
		fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
		_exit(0);
	}
	close(ready[1]);
	close(woke[1]);
	dl_read_all(ready[0], &byte, 1);
	close(ready[0]);

	/* The waiter reads the record our inc wrote: one hop, no daemon. */
	inc_while_daemon_stopped(tl, 1, fd_readable_cb, &woke[0], true, &si);
	if (!si.seen) {
		kill(waiter, SIGKILL);
		waitpid(waiter, NULL, 0);
		fl__test_fail(__FILE__, __LINE__,
			      "the waiter did not wake while the daemon was stopped");
	}
	/* Nothing else waited on that point: the inc did not wait for the daemon either. */
	fl_assert(si.returned_early);
	fl_assert_int_eq(si.ret, 0);
	dl_wait_child_ok(waiter);
	close(woke[0]);
	dl_expect_fence_status(fence, FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	fl_assert_int_eq(v, 1);
	close(fence);
	close(tl);
}

/*
 * A merged fence has a sink only the daemon writes: an inc that reaches
 * its point waits for the daemon (as SW_SYNC_IOC_INC returns with every
 * point signalled), one that reaches only the owner's fences does not.
 */
FL_TEST(owner_inc_waits_for_stopped_daemon_only_when_it_reaches_a_merged_point)
{
	int tl = new_timeline("owned");
	int f1 = new_fence(tl, 1, "f1"), f2 = new_fence(tl, 2, "f2"), m = new_merge(f2, f2, "m");
	struct stopped_inc si;
	uint64_t v = 0;

	fl_daemon_flush();
	inc_while_daemon_stopped(tl, 1, fd_readable_cb, &f1, true, &si);
	fl_assert(si.seen);
	fl_assert(si.returned_early);
	fl_assert_int_eq(si.ret, 0);
	fl_assert(!fence_fd_readable(f2));
	fl_assert(!fence_fd_readable(m));

	/* f2 is ours, so it wakes with the daemon stopped; m and the inc wait. */
	inc_while_daemon_stopped(tl, 1, fd_readable_cb, &f2, false, &si);
	fl_assert(si.seen);
	fl_assert(!si.returned_early);
	fl_assert_int_eq(si.ret, 0);
	fl_assert(fence_fd_readable(m));
	dl_expect_fence_status(m, FL_STATUS_SIGNALED);
	dl_expect_fence_status(f2, FL_STATUS_SIGNALED);
	dl_expect_fence_status(f1, FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	fl_assert_int_eq(v, 2);

	/* Past every point the daemon must complete: no waiting from now on. */
	close(m);
	m = new_fence(tl, 3, "f3");
	fl_daemon_flush();
	inc_while_daemon_stopped(tl, 1, fd_readable_cb, &m, true, &si);
	fl_assert(si.returned_early);
	fl_assert_int_eq(si.ret, 0);
	close(m);
	close(f2);
	close(f1);
	close(tl);
}

FL_TEST(daemon_catches_up_with_owner_counter_before_answering_other_clients)
{
	int tl = new_timeline("owned"), fence = new_fence(tl, 1, "owned-fence");
	struct inc_thread inc = { .tl = tl, .count = 1 };
	struct stopped_daemon d;
	int ready[2], go[2];
	bool signalled;
	pid_t asker;
	char byte;

	fl_daemon_flush();
	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	asker = dl_fork();
	if (asker == 0) {
		struct fl_fence_info info;
		int m;

		close(ready[0]);
		close(go[1]);
		fl_assert(fl_daemon_connect() > 0);
		dl_write_all(ready[1], "r", 1);
		dl_read_all(go[0], &byte, 1);
		/*
		 * Queued at the stopped daemon before the owner signals, so
		 * likely read before the owner's TIMELINE_SYNC: by then the
		 * counter says 1 and the fence fd reads as signalled, so the
		 * answer must say so too.
		 */
		fl_assert_int_eq(fl_fence_fd_get_info(fence, &info, NULL, 0), 0);
		fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
		m = new_merge(fence, fence, "after");
		fl_assert(fence_fd_readable(m));
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	dl_read_all(ready[0], &byte, 1);
	close(ready[0]);

	daemon_stop(&d);
	dl_write_all(go[1], "g", 1);
	/* Time to queue its request (were it late, the test would only prove less). */
	fl_test_sleep_ms(100);
	fl_assert_int_eq(pthread_create(&inc.thread, NULL, inc_thread_main, &inc), 0);
	/* The owner has added to the counter once the fence reads as signalled. */
	signalled = fl_test_poll_fd(fence, POLLIN, DL_LONG_WAIT_MS) & POLLIN;
	daemon_resume(&d);
	fl_assert(signalled);
	fl_assert_int_eq(pthread_join(inc.thread, NULL), 0);
	fl_assert_int_eq(inc.ret, 0);
	dl_wait_child_ok(asker);
	dl_expect_fence_status(fence, FL_STATUS_SIGNALED);
	close(go[1]);
	close(fence);
	close(tl);
}

FL_TEST(merged_fence_of_owner_fence_signals_when_owner_inc_returns)
{
	struct fl_sync_pt_info pts[2], pt;
	struct fl_fence_info info;
	int tl = new_timeline("owned"), tl2 = new_timeline("other");
	int f = new_fence(tl, 1, "f"), g = new_fence(tl2, 1, "g");
	int merged, sv[2], go[2], theirs;
	pid_t pid;

	fl_assert_int_eq(fl_timeline_fd_inc(tl2, 1), 0);
	dl_expect_fence_status(g, FL_STATUS_SIGNALED);
	merged = new_merge(f, g, "f+g");
	fl_assert_int_eq(fl_fence_fd_get_status(merged), FL_STATUS_ACTIVE);

	/* A fence on our timeline that another process made: the daemon's to complete. */
	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	pid = dl_fork();
	if (pid == 0) {
		char byte;
		int h;

		close(sv[0]);
		close(go[1]);
		h = new_fence(tl, 2, "theirs");
		dl_send_fd(sv[1], h);
		/* Alive until the parent has looked: only its fd outlives it otherwise. */
		dl_read_all(go[0], &byte, 1);
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	theirs = dl_recv_fd(sv[0]);
	close(sv[0]);
	fl_assert_int_eq(fl_fence_fd_get_status(theirs), FL_STATUS_ACTIVE);

	/*
	 * We complete f ourselves; the merge is the daemon's, done before it
	 * answers our inc: readable the moment the inc returns, no waiting.
	 */
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert(fence_fd_readable(f));
	fl_assert(fence_fd_readable(merged));
	fl_assert_int_eq(fl_fence_fd_get_info(merged, &info, pts, 2), 2);
	fl_assert_str_eq(info.name, "f+g");
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(pts[0].status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(pts[1].status, FL_STATUS_SIGNALED);
	fl_assert(!fence_fd_readable(theirs));
	fl_assert_int_eq(fl_fence_fd_get_status(theirs), FL_STATUS_ACTIVE);

	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert(fence_fd_readable(theirs));
	fl_assert_int_eq(fl_fence_fd_get_info(theirs, &info, &pt, 1), 1);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_str_eq(info.name, "theirs");
	fl_assert_int_eq(pt.value, 2);
	dl_expect_fence_status(theirs, FL_STATUS_SIGNALED);

	dl_write_all(go[1], "g", 1);
	dl_wait_child_ok(pid);
	close(go[1]);
	close(theirs);
	close(merged);
	close(g);
	close(f);
	close(tl2);
	close(tl);
}

static void child_inc(int tl, uint64_t count)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		/* Not the owner here: the child's own connection, through the daemon. */
		fl_assert_int_eq(fl_timeline_fd_inc(tl, count), 0);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

FL_TEST(forked_child_signals_owner_timeline_through_daemon_and_counter_stays_shared)
{
	int tl = new_timeline("shared");
	int f1 = new_fence(tl, 1, "f1"), f2 = new_fence(tl, 2, "f2"), f3 = new_fence(tl, 3, "f3");
	struct stopped_inc si;
	uint64_t v = 0;

	fl_daemon_flush();
	child_inc(tl, 1);
	/* Its inc returned once the daemon had completed the point, for every process. */
	fl_assert(fence_fd_readable(f1));
	fl_assert_int_eq(fl_fence_fd_get_status(f1), FL_STATUS_SIGNALED);
	fl_assert(!fence_fd_readable(f2));
	fl_assert_int_eq(fl_fence_fd_get_status(f2), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	fl_assert_int_eq(v, 1);

	/*
	 * The owner adds on top of the child's step, not from a count of its
	 * own: it reaches 2 and completes f2 itself, daemon stopped or not.
	 */
	inc_while_daemon_stopped(tl, 1, fd_readable_cb, &f2, true, &si);
	fl_assert(si.seen);
	fl_assert(si.returned_early);
	fl_assert_int_eq(si.ret, 0);
	fl_assert_int_eq(fl_fence_fd_get_status(f2), FL_STATUS_SIGNALED);
	fl_assert(!fence_fd_readable(f3));
	fl_assert_int_eq(fl_fence_fd_get_status(f3), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	fl_assert_int_eq(v, 2);

	/* And the daemon on top of the owner's. */
	child_inc(tl, 1);
	fl_assert(fence_fd_readable(f3));
	fl_assert_int_eq(fl_fence_fd_get_status(f3), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	fl_assert_int_eq(v, 3);
	/* f1 is the daemon's and ours both: still one clean record. */
	dl_expect_fence_status(f1, FL_STATUS_SIGNALED);
	close(f3);
	close(f2);
	close(f1);
	close(tl);
}

FL_TEST(daemon_sigkill_while_owner_idle_fails_owner_fences_elsewhere)
{
	int sv[2], go[2], fence;
	pid_t daemon, owner;

	daemon = fl_daemon_connect();
	fl_assert(daemon > 0);
	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	owner = dl_fork();
	if (owner == 0) {
		int tl, f, tl2, f2;
		char byte;

		close(sv[0]);
		close(go[1]);
		tl = new_timeline("idle-owner");
		f = new_fence(tl, 1, "kept");
		fl_daemon_flush();
		dl_send_fd(sv[1], f);
		/* Idle, in no library call: only its watcher thread can act. */
		dl_read_all(go[0], &byte, 1);
		dl_expect_fence_status(f, -ECONNRESET);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), -ECONNRESET);
		/* Owning again works, on the next daemon. */
		tl2 = new_timeline("owner-again");
		f2 = new_fence(tl2, 1, "f2");
		fl_assert_int_eq(fl_timeline_fd_inc(tl2, 1), 0);
		fl_assert(fence_fd_readable(f2));
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	fence = dl_recv_fd(sv[0]);
	close(sv[0]);
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);

	/*
	 * The daemon's end of the fence goes with it, but the owner still
	 * holds the signal end: only its watcher closing that gives us
	 * end-of-file instead of a fence that never completes.
	 */
	fl_assert_int_eq(kill(daemon, SIGKILL), 0);
	dl_expect_fence_status(fence, -ECONNRESET);

	dl_write_all(go[1], "x", 1);
	dl_wait_child_ok(owner);
	close(go[1]);
	close(fence);
}

/*
 * A 32-bit owned timeline against an in-process 32-bit sw_sync timeline
 * (the model) given the same steps: the owner's fast path, the daemon's
 * steps of more than INT32_MAX and the wrap-around must all agree with it.
 */
struct wrap_fence {
	char letter;
	int fd;
	struct fl_fence *model;
};

struct wrap {
	int tl;
	struct fl_timeline *model;
	struct wrap_fence fences[8];
	int n;
};

static void wrap_fence_new(struct wrap *w, char letter, uint32_t value)
{
	struct wrap_fence *f;
	char name[2] = { letter, 0 };

	fl_assert(w->n < (int)(sizeof(w->fences) / sizeof(w->fences[0])));
	f = &w->fences[w->n++];
	f->letter = letter;
	f->fd = new_fence(w->tl, value, name);
	fl_assert_int_eq(fl_sw_sync_fence_create(w->model, value, name, &f->model), 0);
	/* Made by the daemon, so a zero-timeout poll() tells. */
	fl_daemon_flush();
}

static void wrap_inc(struct wrap *w, uint32_t count)
{
	fl_assert_int_eq(fl_timeline_fd_inc(w->tl, count), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(w->model, count), 0);
}

/*
 * Right after the last inc returned: the value is @value, and exactly the
 * fences named in @signalled are readable, in the model as in the daemon.
 */
#define wrap_check(w, value, signalled) wrap__check(__LINE__, w, value, signalled)
static void wrap__check(int line, struct wrap *w, uint32_t value, const char *signalled)
{
	uint64_t v = 0;

	fl_assert_int_eq(fl_sw_sync_timeline_get_value(w->model, &v), 0);
	if (v != value)
		fl__test_fail(__FILE__, line, "model at 0x%llx, want 0x%x", (unsigned long long)v,
			      value);
	fl_assert_int_eq(fl_timeline_fd_get_value(w->tl, &v), 0);
	if (v != value)
		fl__test_fail(__FILE__, line, "timeline fd at 0x%llx, want 0x%x",
			      (unsigned long long)v, value);
	for (int i = 0; i < w->n; i++) {
		const struct wrap_fence *f = &w->fences[i];
		bool want = strchr(signalled, f->letter) != NULL;
		bool model = fl_fence_get_status(f->model) == FL_STATUS_SIGNALED;
		bool got = fence_fd_readable(f->fd);
		int status = fl_fence_fd_get_status(f->fd);

		if (model != want)
			fl__test_fail(__FILE__, line, "fence %c: sw_sync says %s", f->letter,
				      model ? "signalled" : "pending");
		if (got != want || status != (want ? FL_STATUS_SIGNALED : FL_STATUS_ACTIVE))
			fl__test_fail(__FILE__, line, "fence %c: %s, status %d; want %s", f->letter,
				      got ? "readable" : "not readable", status,
				      want ? "signalled" : "pending");
	}
}

FL_TEST(owner_signal_on_32bit_timeline_wraps_like_sw_sync)
{
	struct wrap w = { .n = 0 };
	struct stopped_inc si;

	fl_assert_int_eq(fl_timeline_fd_create("wrap", FL_SW_SYNC_32BIT, &w.tl), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_create("wrap-model", FL_SW_SYNC_32BIT, &w.model), 0);

	wrap_fence_new(&w, 'a', 0x40000000);
	/* More than 2^31 ahead is behind: signalled when made. */
	wrap_fence_new(&w, 'z', 0x80000001);
	wrap_check(&w, 0, "z");

	/* Above INT32_MAX: not the owner's fast path, the daemon's steps. */
	wrap_inc(&w, 0x80000000);
	wrap_check(&w, 0x80000000, "az");
	/* At most INT32_MAX: the owner's fast path. */
	wrap_inc(&w, 0x7ffffff0);
	wrap_check(&w, 0xfffffff0, "az");

	wrap_fence_new(&w, 'b', 0xfffffff8);
	wrap_fence_new(&w, 'c', 4); /* after the wrap */
	wrap_fence_new(&w, 'd', 0xfffffff0); /* the value itself: signalled */
	/* Exactly 2^31 behind compares as ahead (INT32_MIN): pending. */
	wrap_fence_new(&w, 'e', 0x7ffffff0);
	wrap_check(&w, 0xfffffff0, "azd");

	/*
	 * Through 2^32: b passes, c not yet (the value is 0). The owner
	 * completes b itself, so with the daemon stopped.
	 */
	/* Every point it reaches is its own, so it does not wait (sync_at, wrap-aware). */
	inc_while_daemon_stopped(w.tl, 0x10, fd_readable_cb, &w.fences[2].fd /* b */, true, &si);
	fl_assert(si.seen);
	fl_assert(si.returned_early);
	fl_assert_int_eq(si.ret, 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(w.model, 0x10), 0);
	wrap_check(&w, 0, "azdb");
	wrap_inc(&w, 4);
	wrap_check(&w, 4, "azdbc");

	/*
	 * A step of 2^32 - 1 lands just below where it started, but the
	 * daemon takes it in INT32_MAX steps like the kernel: f (0x10 ahead)
	 * and e are passed on the way.
	 */
	wrap_fence_new(&w, 'f', 0x14);
	wrap_check(&w, 4, "azdbc");
	wrap_inc(&w, 0xffffffff);
	wrap_check(&w, 3, "azdbcef");

	/*
	 * The owner still completes its fences itself, without the daemon,
	 * after the daemon's steps and the wraps: g, made at 3, is its own
	 * (the counter is past 2^33 by now: only the low 32 bits may count).
	 */
	wrap_fence_new(&w, 'g', 5);
	inc_while_daemon_stopped(w.tl, 2, fd_readable_cb, &w.fences[7].fd /* g */, true, &si);
	fl_assert(si.seen);
	fl_assert(si.returned_early);
	fl_assert_int_eq(si.ret, 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(w.model, 2), 0);
	wrap_check(&w, 5, "azdbcefg");

	for (int i = 0; i < w.n; i++) {
		close(w.fences[i].fd);
		fl_fence_unref(w.fences[i].model);
	}
	fl_timeline_unref(w.model);
	close(w.tl);
}

/* Threads: each loops over its own timeline through the shared connection. */
#define THREADS	     8
#define THREAD_ITERS 200
#define FORKS	     6

struct hammer_thread {
	pthread_t thread;
	int index;
	atomic_bool *stop;
	int iterations;
	char error[160];
};

/* Records the first failure and leaves the loop; @cond is evaluated once. */
#define thread_check(t, cond)                                                             \
	do {                                                                              \
		if (!(cond)) {                                                            \
			snprintf((t)->error, sizeof((t)->error), "thread %d iter %d: %s", \
				 (t)->index, (t)->iterations, #cond);                     \
			goto out;                                                         \
		}                                                                         \
	} while (0)

static void *hammer_thread_main(void *data)
{
	struct hammer_thread *t = data;
	int tl = -1, shared = -1, mine = -1, merged = -1;
	struct fl_sync_pt_info pt;
	struct fl_fence_info info;
	uint64_t v = 0, got;
	char name[32];

	snprintf(name, sizeof(name), "thread-%d", t->index);
	thread_check(t, fl_timeline_fd_create(name, 0, &tl) == 0);
	while (t->iterations < THREAD_ITERS || !atomic_load(t->stop)) {
		thread_check(t, fl_fence_fd_create(tl, v + 1, "a", &mine) == 0);
		thread_check(t, fl_fence_fd_create(tl, v + 2, "b", &shared) == 0);
		thread_check(t, fl_fence_fd_merge(mine, shared, name, 0, &merged) == 0);
		thread_check(t, fl_fence_fd_get_info(merged, &info, &pt, 1) == 1);
		thread_check(t,
			     info.num_points == 1 && pt.value == v + 2 && !strcmp(info.name, name));
		thread_check(t, fl_fence_fd_wait(merged, 0) == -ETIME);
		thread_check(t, fl_timeline_fd_inc(tl, 1) == 0);
		thread_check(t, fl_fence_fd_wait(mine, DL_LONG_WAIT_MS) == 0);
		thread_check(t, fl_fence_fd_get_status(merged) == FL_STATUS_ACTIVE);
		thread_check(t, fl_timeline_fd_inc(tl, 1) == 0);
		thread_check(t, fl_fence_fd_wait(merged, DL_LONG_WAIT_MS) == 0);
		v += 2;
		thread_check(t, fl_timeline_fd_get_value(tl, &got) == 0 && got == v);
		close(merged);
		close(shared);
		close(mine);
		merged = shared = mine = -1;
		t->iterations++;
	}
out:
	if (merged >= 0)
		close(merged);
	if (shared >= 0)
		close(shared);
	if (mine >= 0)
		close(mine);
	if (tl >= 0)
		close(tl);
	return NULL;
}

static void forked_child_uses_library(void)
{
	int tl = new_timeline("forked"), f = new_fence(tl, 1, "forked"), m;

	m = new_merge(f, f, "forked-m");
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(m, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(m, NULL, NULL, 0), 0);
	_exit(0);
}

FL_TEST(threads_share_connection_and_fork_mid_request_keeps_stream_intact)
{
	struct hammer_thread t[THREADS];
	atomic_bool stop = false;
	pid_t pid;

	for (int i = 0; i < THREADS; i++) {
		t[i] = (struct hammer_thread){ .index = i, .stop = &stop };
		fl_assert_int_eq(pthread_create(&t[i].thread, NULL, hammer_thread_main, &t[i]), 0);
	}
	/* Fork while the threads are in the middle of their requests. */
	for (int i = 0; i < FORKS; i++) {
		fl_test_sleep_ms(5);
		pid = dl_fork();
		if (pid == 0)
			forked_child_uses_library();
		dl_wait_child_ok(pid);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < THREADS; i++) {
		fl_assert_int_eq(pthread_join(t[i].thread, NULL), 0);
		if (t[i].error[0])
			fl__test_fail(__FILE__, __LINE__, "%s", t[i].error);
		fl_assert_int_ge(t[i].iterations, THREAD_ITERS);
	}
	/* The parent's connection still works after all that. */
	pid = dl_fork();
	if (pid == 0)
		forked_child_uses_library();
	dl_wait_child_ok(pid);
	{
		int tl = new_timeline("after"), f = new_fence(tl, 1, NULL);

		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(f, DL_LONG_WAIT_MS), 0);
		close(f);
		close(tl);
	}
}

FL_TEST(in_process_mode_starts_no_daemon_and_its_fences_wait_elsewhere)
{
	char path[256], lock[300];
	int sv[2], go[2], fence;
	pid_t pid;
	char byte = 'g';

	dl_runtime_path("in-process.sock", path, sizeof(path));
	snprintf(lock, sizeof(lock), "%s.lock", path);
	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	pid = dl_fork();
	if (pid == 0) {
		int tl, f, m;
		struct fl_fence_info info;

		close(sv[0]);
		close(go[1]);
		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
		tl = new_timeline("local");
		f = new_fence(tl, 1, "local-fence");
		m = new_merge(f, f, "local-merge");
		fl_assert_int_eq(fl_fence_fd_get_info(m, &info, NULL, 0), 0);
		fl_assert_str_eq(info.name, "local-merge");
		dl_send_fd(sv[1], m);
		dl_read_all(go[0], &byte, 1);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		dl_expect_fence_status(f, FL_STATUS_SIGNALED);
		/* Nothing of ours ever needed a daemon. */
		fl_assert_int_eq(access(path, F_OK), -1);
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	fence = dl_recv_fd(sv[0]);
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 0), -ETIME);
	dl_write_all(go[1], &byte, 1);
	fl_assert_int_eq(fl_fence_fd_wait(fence, DL_LONG_WAIT_MS), 0);
	dl_wait_child_ok(pid);
	fl_assert_errno(access(path, F_OK), ENOENT);
	fl_assert_errno(access(lock, F_OK), ENOENT);
	close(fence);
	close(sv[0]);
	close(go[1]);
}

FL_TEST(libsync_fence_sent_to_another_process_is_waited_merged_and_queried)
{
	struct sync_file_info *info;
	int sv[2], go[2], fence, own_tl, own, merged;
	pid_t pid;
	char byte = 'g';

	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	pid = dl_fork();
	if (pid == 0) {
		int tl = sw_sync_timeline_create(), f;

		close(sv[0]);
		close(go[1]);
		fl_assert(tl >= 0);
		f = sw_sync_fence_create(tl, "compat-fence", 1);
		fl_assert(f >= 0);
		dl_send_fd(sv[1], f);
		dl_read_all(go[0], &byte, 1);
		fl_assert_int_eq(sw_sync_timeline_inc(tl, 1), 0);
		fl_assert_int_eq(sync_wait(f, DL_LONG_WAIT_MS), 0);
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	fence = dl_recv_fd(sv[0]);
	fl_assert_errno(sync_wait(fence, 0), ETIME);
	info = sync_file_info(fence);
	fl_assert(info);
	fl_assert_str_eq(info->name, "compat-fence");
	fl_assert_int_eq(info->status, 0);
	fl_assert_int_eq(info->num_fences, 1);
	fl_assert_int_eq(sync_get_fence_info(info)[0].status, 0);
	sync_file_info_free(info);

	own_tl = sw_sync_timeline_create();
	fl_assert(own_tl >= 0);
	own = sw_sync_fence_create(own_tl, "own", 1);
	fl_assert(own >= 0);
	merged = sync_merge("compat-merged", fence, own);
	fl_assert(merged >= 0);
	info = sync_file_info(merged);
	fl_assert(info);
	fl_assert_str_eq(info->name, "compat-merged");
	fl_assert_int_eq(info->num_fences, 2);
	fl_assert_int_eq(info->status, 0);
	sync_file_info_free(info);

	dl_write_all(go[1], &byte, 1);
	fl_assert_int_eq(sync_wait(fence, DL_LONG_WAIT_MS), 0);
	fl_assert_errno(sync_wait(merged, 0), ETIME);
	fl_assert_int_eq(sw_sync_timeline_inc(own_tl, 1), 0);
	fl_assert_int_eq(sync_wait(merged, DL_LONG_WAIT_MS), 0);
	dl_wait_child_ok(pid);
	info = sync_file_info(merged);
	fl_assert(info);
	fl_assert_int_eq(info->status, 1);
	for (uint32_t i = 0; i < info->num_fences; i++)
		fl_assert_int_eq(sync_get_fence_info(info)[i].status, 1);
	sync_file_info_free(info);
	close(merged);
	close(own);
	close(own_tl);
	close(fence);
	close(sv[0]);
	close(go[1]);
}

/*
 * An owner's signal ends and its connection watcher (a thread with two fds)
 * go with the connection: a program that counts its fds right after
 * fl_daemon_disconnect() must find every one of them closed.
 */
FL_TEST(disconnect_closes_signal_ends_and_the_watcher_at_once)
{
	int before, tl, f[3];

	fl_daemon_disconnect();
	before = dl_proc_fd_count(getpid());
	for (int round = 0; round < 20; round++) {
		tl = new_timeline("watched");
		for (int i = 0; i < 3; i++)
			f[i] = new_fence(tl, (uint64_t)i + 1, "kept");
		fl_daemon_flush();
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		for (int i = 0; i < 3; i++)
			close(f[i]);
		close(tl);
		fl_daemon_disconnect();
		fl_assert_int_eq(dl_proc_fd_count(getpid()), before);
	}
}

/*
 * Once its pool is grown, the library asks for the next fds ahead of need,
 * and that reply may still be on its way when the next request waits for
 * its own: every kind of request must read past it, in order, and the fds
 * it brings must be used or closed (none leaked, none reused twice).
 */
FL_TEST(pool_fill_sent_ahead_never_gets_in_the_way_of_replies)
{
	struct fl_fence_info info;
	int before, tl, other, f, m, held;
	uint64_t v = 0;

	fl_daemon_disconnect();
	before = dl_proc_fd_count(getpid());
	tl = new_timeline("ahead");
	other = new_timeline("ahead-other");
	held = new_fence(other, 1, "held");
	for (int i = 1; i <= 300; i++) {
		f = new_fence(tl, (uint64_t)i, "f");
		/* A different request after each fence: the pending fill's reply comes first. */
		switch (i % 5) {
		case 0:
			fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
			fl_assert_int_eq(v, (uint64_t)i - 1);
			break;
		case 1:
			fl_assert_int_eq(fl_fence_fd_get_info(f, &info, NULL, 0), 0);
			fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
			break;
		case 2:
			m = new_merge(f, held, "m");
			fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
			close(m);
			break;
		case 3:
			fl_daemon_flush();
			break;
		default: {
			/* A creation with fds in its reply, and a fence on the new timeline. */
			int t = new_timeline("ahead-more"), g = new_fence(t, 1, "g");

			fl_assert_int_eq(fl_timeline_fd_inc(t, 1), 0);
			dl_expect_fence_status(g, FL_STATUS_SIGNALED);
			close(g);
			close(t);
			break;
		}
		}
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		dl_expect_fence_status(f, FL_STATUS_SIGNALED);
		close(f);
	}
	close(held);
	close(other);
	close(tl);
	fl_daemon_disconnect();
	fl_assert_int_eq(dl_proc_fd_count(getpid()), before);
}

static bool polls_ready(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1;
}

/*
 * A fence for a value already reached is born signalled: like a sync_file,
 * its fd polls ready the moment creation returns, in the timeline's owner
 * and in a process that cannot see the owner's counter.
 */
FL_TEST(fence_for_a_reached_value_polls_ready_at_once_in_every_process)
{
	int tl = new_timeline("reached"), f;
	pid_t pid;

	fl_assert_int_eq(fl_timeline_fd_inc(tl, 5), 0);
	/* Many, back to back: a daemon answering late would be caught by one. */
	for (int i = 0; i < 200; i++) {
		f = new_fence(tl, 3, "behind");
		fl_assert(polls_ready(f));
		close(f);
	}
	f = new_fence(tl, 6, "ahead");
	fl_assert(!polls_ready(f));
	pid = dl_fork();
	if (pid == 0) {
		int h = new_fence(tl, 7, "child-ahead"), ok = !polls_ready(h);

		for (int i = 0; i < 200 && ok; i++) {
			int g = new_fence(tl, 5, "child-behind");

			ok = polls_ready(g);
			close(g);
		}
		_exit(ok ? 0 : 1);
	}
	dl_wait_child_ok(pid);
	close(f);
	close(tl);
}

/*
 * FL_MERGE_MAINLINE leaves out completed points: also one the owner
 * completed on its own, which the daemon has not looked at yet.
 */
FL_TEST(mainline_merge_leaves_out_a_point_the_owner_completed_alone)
{
	int tl = new_timeline("owner"), other = new_timeline("other");
	int a = new_fence(tl, 1, "a"), b = new_fence(other, 1, "b"), m = -1;
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;

	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert(polls_ready(a));
	fl_assert_int_eq(fl_fence_fd_merge(a, b, "", FL_MERGE_WAIT_ALL | FL_MERGE_MAINLINE, &m), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 1);
	fl_assert_str_eq(info.name, "");
	fl_assert_str_eq(pts[0].timeline_name, "other");
	close(m);
	close(a);
	close(b);
	close(tl);
	close(other);
}

/* Deadlines live with the fence in the daemon: set in one process, read in another. */
FL_TEST(deadline_set_in_one_process_is_read_in_another)
{
	int tl = new_timeline("dl"), other = new_timeline("dl2");
	int f = new_fence(tl, 1, "f"), g = new_fence(other, 1, "g"), m;
	uint64_t ns = 0;
	pid_t pid;

	fl_assert_int_eq(fl_fence_fd_get_deadline(f, &ns), -ENOENT);
	pid = dl_fork();
	if (pid == 0)
		_exit(fl_fence_fd_set_deadline(f, 777) == 0 ? 0 : 1);
	dl_wait_child_ok(pid);
	fl_assert_int_eq(fl_fence_fd_get_deadline(f, &ns), 0);
	fl_assert_int_eq(ns, 777);
	m = new_merge(f, g, "m");
	fl_assert_int_eq(fl_fence_fd_set_deadline(m, 500), 0);
	fl_assert_int_eq(fl_fence_fd_get_deadline(m, &ns), -EINVAL);
	fl_assert_int_eq(fl_fence_fd_get_deadline(g, &ns), 0);
	fl_assert_int_eq(ns, 500);
	fl_assert_int_eq(fl_fence_fd_get_deadline(f, &ns), 0);
	fl_assert_int_eq(ns, 500);
	close(m);
	close(f);
	close(g);
	close(tl);
	close(other);
}

/*
 * Closing the last copy of a sw_sync fd fails its pending fences before
 * close() returns (IGT checks it); fl_timeline_fd_close() does the same,
 * and with another copy open, the timeline lives.
 */
FL_TEST(timeline_fd_close_fails_pending_fences_before_it_returns)
{
	for (int i = 0; i < 50; i++) {
		int tl = new_timeline("closing"), f = new_fence(tl, 1, "pending");
		int copy = dup(tl);

		fl_assert_int_ge(copy, 0);
		fl_assert_int_eq(fl_timeline_fd_close(copy), 0);
		fl_assert(!polls_ready(f));
		fl_assert_int_eq(fl_timeline_fd_close(tl), 0);
		fl_assert(polls_ready(f));
		fl_assert_int_eq(fl_fence_fd_get_status(f), -ENOENT);
		close(f);
	}
	fl_assert_int_eq(fl_timeline_fd_close(-1), -EBADF);
}

/*
 * A fence fd made by the daemon for a forked child (its own connection,
 * not the timeline's owner: the read end of a pipe), received here as any
 * holder of a fence fd would.
 */
static int child_made_fence(int tl, uint64_t value)
{
	int sv[2], fd;
	pid_t pid;

	socketpair_or_fail(sv);
	pid = dl_fork();
	if (pid == 0) {
		close(sv[0]);
		dl_send_fd(sv[1], new_fence(tl, value, "paged"));
		_exit(0);
	}
	close(sv[1]);
	fd = dl_recv_fd(sv[0]);
	close(sv[0]);
	dl_wait_child_ok(pid);
	return fd;
}

/* Read whatever the pipe holds (its status records), as an event loop that drains fds would. */
static void drain(int fd)
{
	char buf[64];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

/*
 * The status of the daemon's pipe fence fds comes from the page it maps to
 * its clients: exact (a failure's error too) with the records read out of
 * the pipes and the daemon stopped, so no request could have answered it.
 * The reader has closed every fd it did not need, its connection and
 * whatever came with it included: the page is a mapping, not an fd.
 */
FL_TEST(daemon_fence_status_comes_from_the_page_without_asking_the_daemon)
{
	int tl = new_timeline("paged"), doomed = new_timeline("paged-doomed");
	int done = child_made_fence(tl, 1), pending = child_made_fence(tl, 2);
	int failed = child_made_fence(doomed, 1), ready[2], go[2];
	struct stopped_daemon d;
	pid_t reader;
	char byte;

	fl_assert_int_eq(fl_fence_fd_get_status(done), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(done, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(fl_timeline_fd_close(doomed), 0);
	fl_assert_int_eq(fl_fence_fd_wait(failed, DL_LONG_WAIT_MS), -ENOENT);
	drain(done);
	drain(failed);

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	reader = dl_fork();
	if (reader == 0) {
		/* Were it to ask the stopped daemon, it would fail after this long, not hang. */
		setenv("FENCELINE_REQUEST_TIMEOUT_MS", "2000", 1);
		fl_assert(fl_daemon_connect() > 0);
		for (int fd = 3; fd < 1024; fd++)
			if (fd != done && fd != pending && fd != failed && fd != ready[1] &&
			    fd != go[0])
				close(fd);
		dl_write_all(ready[1], "r", 1);
		dl_read_all(go[0], &byte, 1);
		fl_assert_int_eq(fl_fence_fd_get_status(done), FL_STATUS_SIGNALED);
		fl_assert_int_eq(fl_fence_fd_get_status(failed), -ENOENT);
		fl_assert_int_eq(fl_fence_fd_get_status(pending), FL_STATUS_ACTIVE);
		fl_assert_int_eq(fl_fence_fd_wait(done, 0), 0);
		fl_assert_int_eq(fl_fence_fd_wait(failed, 0), -ENOENT);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	dl_read_all(ready[0], &byte, 1);
	daemon_stop(&d);
	dl_write_all(go[1], "g", 1);
	dl_wait_child_ok(reader);
	daemon_resume(&d);
	close(ready[0]);
	close(go[1]);
	/* The daemon, running again, agrees; the pending one still signals. */
	fl_assert_int_eq(fl_fence_fd_get_status(done), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_status(failed), -ENOENT);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pending, DL_LONG_WAIT_MS), 0);
	close(done);
	close(pending);
	close(failed);
	close(tl);
}

/*
 * The page of a daemon that died still says "active" for the fences it
 * left pending (nobody is left to write it), but their pipes are at
 * end-of-file: the status is taken from the page only while the pipe
 * agrees, so they read as failed, and a wait on them ends instead of
 * spinning on a ready fd that reads as active.
 */
FL_TEST(daemon_pipe_fence_pending_when_the_daemon_dies_fails_though_its_page_said_active)
{
	int tl = new_timeline("dying"), fd = child_made_fence(tl, 1);
	pid_t old = fl_daemon_connect();

	fl_assert(old > 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(kill(old, SIGKILL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, DL_LONG_WAIT_MS), -ECONNRESET);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), -ECONNRESET);
	close(fd);
	close(tl);
}

/*
 * A process with one fd left connects: its socket takes it, and the status
 * page that comes with HELLO's reply, which the kernel cannot install, is
 * only a page less (statuses come from the pipes), not a failed connection.
 */
FL_TEST(connecting_with_one_free_fd_goes_on_without_the_status_page)
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		struct rlimit rl;
		int fds[64], n = 0, fd, tl;

		fl_daemon_disconnect();
		fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
		rl.rlim_cur = 64;
		fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
		while (n < 64 && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
			fds[n++] = fd;
		fl_assert(n > 0 && n < 64);
		close(fds[--n]);
		fl_assert(fl_daemon_connect() > 0);
		/* The connection works; room again for a timeline. */
		for (int i = 0; i < 4; i++)
			close(fds[--n]);
		tl = new_timeline("one-fd-left");
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

static void rebound_round(int *tl, int *first, int *second, int n)
{
	for (int i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "rebound-%d", i);
		tl[i] = new_timeline(name);
		first[i] = new_fence(tl[i], 1, "first");
	}
	for (int i = 0; i < n; i++)
		second[i] = new_fence(tl[i], 2, "second");
	for (int i = 0; i < n; i++) {
		fl_assert_int_eq(fl_fence_fd_get_status(first[i]), FL_STATUS_ACTIVE);
		fl_assert_int_eq(fl_timeline_fd_inc(tl[i], 2), 0);
		dl_expect_fence_status(first[i], FL_STATUS_SIGNALED);
		dl_expect_fence_status(second[i], FL_STATUS_SIGNALED);
		close(first[i]);
		close(second[i]);
		close(tl[i]);
	}
}

/*
 * The library caches which handle each timeline fd has on its connection;
 * when that cache forgets a timeline this process owns (another timeline
 * took its slot), the next fence binds it again and the daemon answers the
 * handle it already has. That is still our timeline: its kept signal ends
 * must stay, or their fences fail (-ENOENT) when nothing went wrong.
 * Sixty-four owned timelines in the cache's 256 slots all but surely share
 * one.
 */
FL_TEST(a_rebound_owned_timeline_keeps_its_fences)
{
	enum { N = 64, ROUNDS = 4 };
	int tl[N], first[N], second[N];

	/* Rounds of new timelines, new inodes: a collision in every run, not most. */
	for (int round = 0; round < ROUNDS; round++)
		rebound_round(tl, first, second, N);
}

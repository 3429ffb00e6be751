/* SPDX-License-Identifier: MIT */
/*
 * The fd API (<fenceline/shared.h>) across processes, served by fencelined:
 * fences signalled from another process, fds inherited through fork and
 * exec or passed with SCM_RIGHTS, merges of other processes' fences, the
 * death of a timeline's owner and of the daemon itself, threads and fork
 * racing requests, in-process mode, the libsync compat calls, and the
 * status page. The fences a timeline's owner completes itself:
 * daemon-owner-test.c. Helpers both share: daemon-procs.h.
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
#include "daemon-procs.h"
#include "helpers.h"
#include "runner.h"

#ifndef FL_EXEC_CHILD
#error "the build passes FL_EXEC_CHILD, the path of daemon-exec-child"
#endif

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

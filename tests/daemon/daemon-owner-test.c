/* SPDX-License-Identifier: MIT */
/*
 * The fences a timeline's owner completes itself, its counter shared with
 * fencelined: other processes woken while the daemon is stopped, the
 * daemon catching up with the counter, merges of owned points, a forked
 * child signalling through the daemon, the daemon's death under an idle
 * owner, 32-bit wrap-around as sw_sync does it, and a rebound owned
 * timeline. The rest of the fd API across processes: daemon-test.c.
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
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <android/sync.h>
#include <sw_sync.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/fenceline.h>
#include <fenceline/introspect.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>

#include "daemon-helpers.h"
#include "daemon-procs.h"
#include "helpers.h"
#include "runner.h"

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
		/* No pool: the merge is a request the daemon answers (not FENCE_MERGE_INTO). */
		fl_assert_int_eq(setenv("FENCELINE_POOL_MAX", "0", 1), 0);
		fl_assert(fl_daemon_connect() > 0);
		dl_write_all(ready[1], "r", 1);
		dl_read_all(go[0], &byte, 1);
		/*
		 * Queued at the stopped daemon before the owner signals, so
		 * likely read before the owner's TIMELINE_SYNC: by then the
		 * counter says 1 and the fence fd reads as signalled, so the
		 * merge must be too. (Info is answered from the status page
		 * without the daemon: active while the fd is not ready.)
		 */
		m = new_merge(fence, fence, "after");
		fl_assert(fence_fd_readable(m));
		fl_assert_int_eq(fl_fence_fd_get_info(fence, &info, NULL, 0), 0);
		fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
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

/*
 * The owner writes its record into a fence's pipe itself; when every fd of
 * the fence was closed, nobody reads that pipe, and the write must not
 * raise SIGPIPE (its default action kills the program), nor leave it
 * pending or blocked for the program. With RWF_NOSIGNAL (Linux 6.18) no
 * signal is raised at all; without, the write is made with SIGPIPE blocked.
 */
FL_TEST(owner_signal_of_a_fence_nobody_holds_raises_no_sigpipe)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old;
	int tl = new_timeline("no-reader");
	sigset_t mask, pending;
	uint64_t v = 0;

	fl_assert_int_eq(sigaction(SIGPIPE, &dfl, &old), 0);
	for (int i = 0; i < 8; i++)
		close(new_fence(tl, (uint64_t)i + 1, "dropped"));
	fl_daemon_flush();
	for (int i = 0; i < 8; i++)
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	fl_assert_int_eq(v, 8);
	fl_assert_int_eq(sigpending(&pending), 0);
	fl_assert(!sigismember(&pending, SIGPIPE));
	fl_assert_int_eq(pthread_sigmask(SIG_SETMASK, NULL, &mask), 0);
	fl_assert(!sigismember(&mask, SIGPIPE));
	fl_assert_int_eq(sigaction(SIGPIPE, &old, NULL), 0);
	close(tl);
}

struct nonowner_inc {
	pthread_t thread;
	int tl, fence;
	atomic_bool done;
	bool ready; /* the fence fd was ready when the inc returned */
	bool fail; /* fl_timeline_fd_fail_pending(-EIO) instead of an inc */
	int ret;
};

static void *nonowner_inc_main(void *data)
{
	struct nonowner_inc *t = data;

	t->ret = t->fail ? fl_timeline_fd_fail_pending(t->tl, -EIO) : fl_timeline_fd_inc(t->tl, 1);
	t->ready = fence_fd_readable(t->fence);
	atomic_store(&t->done, true);
	return NULL;
}

/*
 * SW_SYNC_IOC_INC returns with every point it reached signalled, for
 * everyone. A point whose signal end a stopped owner keeps cannot be: the
 * daemon has no write end of it. So the inc of a process that is not the
 * owner waits until the owner has closed the ends it was told of (its
 * connection watcher, no call of its program), and returns with the fd
 * ready. Before, it returned as soon as the daemon had written the kick,
 * and the fence was still pending while the owner was stopped.
 *
 * And a merge of that fence (made by the daemon: we do not own the
 * timeline) is never ready, nor reads complete, before the fence's own fd:
 * while the owner is stopped both are pending, and both are complete when
 * the inc returns. Before, the daemon completed the merge as soon as the
 * step reached the point, for as long as the owner stayed stopped.
 */
static void nonowner_step_with_owner_stopped(bool fail, bool kill_owner)
{
	int sv[2], go[2], hgo[2], tl, fence, merged, status;
	struct nonowner_inc inc = { .fail = fail };
	uint64_t deadline;
	pid_t owner, helper;
	char byte = 'g';

	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(hgo, O_CLOEXEC), 0);
	owner = dl_fork();
	if (owner == 0) {
		int otl, f;

		close(sv[0]);
		close(go[1]);
		otl = new_timeline("stopped-owner");
		f = new_fence(otl, 1, "kept");
		fl_daemon_flush();
		dl_send_fd(sv[1], otl);
		dl_send_fd(sv[1], f);
		/* Idle, in no library call: its watcher thread completes what it is told of. */
		dl_read_all(go[0], &byte, 1);
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	tl = dl_recv_fd(sv[0]);
	fence = dl_recv_fd(sv[0]);
	close(sv[0]);
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
	merged = new_merge(fence, fence, "of-the-kept");

	/*
	 * Tells us when the daemon has taken the step. Forked before the inc
	 * starts: a fork waits for a thread that holds the connection.
	 */
	helper = dl_fork();
	if (helper == 0) {
		uint64_t v = 0;

		close(hgo[1]);
		dl_read_all(hgo[0], &byte, 1);
		deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
		if (fail) {
			/*
			 * A failure shows nowhere before the owner closes its end
			 * (the fd is not ready): time for the daemon to take it
			 * (were it late, the test would only prove less).
			 */
			fl_test_sleep_ms(200);
			_exit(0);
		}
		while (fl_timeline_fd_get_value(tl, &v) == 0 && v < 1 &&
		       fl_test_now_ns() < deadline)
			fl_test_sleep_ms(1);
		_exit(v == 1 ? 0 : 1);
	}
	close(hgo[0]);

	fl_assert_int_eq(kill(owner, SIGSTOP), 0);
	fl_assert_int_eq(waitpid(owner, &status, WUNTRACED), owner);
	fl_assert(WIFSTOPPED(status));
	inc.tl = tl;
	inc.fence = fence;
	fl_assert_int_eq(pthread_create(&inc.thread, NULL, nonowner_inc_main, &inc), 0);
	dl_write_all(hgo[1], "g", 1);
	dl_wait_child_ok(helper);
	/* The step is taken: an inc that does not wait for the owner returns now. */
	deadline = fl_test_now_ns() + 500 * 1000000ull;
	while (!atomic_load(&inc.done) && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(1);
	fl_assert(!atomic_load(&inc.done) || inc.ready);
	if (!atomic_load(&inc.done)) {
		/* The owner's end is still open: the fence is pending, so is its merge. */
		fl_assert(!fence_fd_readable(fence));
		fl_assert(!fence_fd_readable(merged));
		fl_assert_int_eq(fl_fence_fd_get_status(merged), FL_STATUS_ACTIVE);
	}

	if (kill_owner) {
		/*
		 * Killed, it closes nothing itself: its ends close with it, and
		 * what the step reached completes as it was reached, the merge
		 * with its fence. The inc is answered when the owner's
		 * connection goes, which may be a moment before the exiting
		 * process closed its other fds (architecture.md): checked once
		 * it is gone.
		 */
		fl_assert_int_eq(kill(owner, SIGKILL), 0);
		fl_assert_int_eq(waitpid(owner, &status, 0), owner);
		fl_assert_int_eq(pthread_join(inc.thread, NULL), 0);
		fl_assert_int_eq(inc.ret, 0);
		/* Ready: at its end, with no record (POLLHUP), the status from the page. */
		fl_assert(fl_test_poll_fd(fence, POLLIN, 0) != 0);
		fl_assert(fence_fd_readable(merged));
		fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_SIGNALED);
		fl_assert_int_eq(fl_fence_fd_get_status(merged), FL_STATUS_SIGNALED);
	} else {
		fl_assert_int_eq(kill(owner, SIGCONT), 0);
		fl_assert_int_eq(pthread_join(inc.thread, NULL), 0);
		fl_assert_int_eq(inc.ret, fail ? 1 : 0);
		fl_assert(inc.ready);
		fl_assert_int_eq(fl_fence_fd_get_status(fence), fail ? -EIO : FL_STATUS_SIGNALED);
		fl_assert(fence_fd_readable(merged));
		fl_assert_int_eq(fl_fence_fd_get_status(merged), fail ? -EIO : FL_STATUS_SIGNALED);
		dl_write_all(go[1], "g", 1);
		dl_wait_child_ok(owner);
	}
	close(go[1]);
	close(hgo[1]);
	close(merged);
	close(fence);
	close(tl);
}

/* Whether this process has a thread named @name (the library's names its own). */
static bool has_thread(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool found = false;

	fl_assert(d);
	while (!found && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f))
			found = strncmp(comm, name, strlen(name)) == 0;
		if (f)
			fclose(f);
	}
	closedir(d);
	return found;
}

/*
 * An owner whose last fence was closed by everyone lets go of its signal
 * end, and, idle with nothing kept, its connection watcher goes: nobody
 * reads its kick pipe any more. The daemon, which learns that nobody holds
 * the fence only at its next sweep, may still kick the owner about it when
 * another process steps the timeline past it. That step must not wait for
 * an acknowledgement nobody will send: the watcher says it goes
 * (FL_KICK_ACK_GONE). Before, the step waited for the whole request
 * timeout, then failed with -ETIMEDOUT (found by the fence-state fuzzer).
 * The daemon is stopped while the owner lets go, so that it cannot have
 * swept the fence before the step.
 */
FL_TEST(nonowner_inc_does_not_wait_for_an_owner_whose_watcher_went)
{
	int sv[2], go[2], tl;
	struct stopped_daemon d;
	pid_t owner;
	char byte = 'g';

	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	owner = dl_fork();
	if (owner == 0) {
		uint64_t deadline;
		int otl, f;

		close(sv[0]);
		close(go[1]);
		/* Read when this process connects: an idle watcher goes after 20 ms. */
		fl_assert_int_eq(setenv("FENCELINE_POOL_IDLE_MS", "20", 1), 0);
		otl = new_timeline("left-owner");
		f = new_fence(otl, 1, "dropped");
		fl_daemon_flush();
		dl_send_fd(sv[1], otl);
		dl_read_all(go[0], &byte, 1); /* the daemon is stopped */
		close(f);
		deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
		while (has_thread("fl-conn-watch") && fl_test_now_ns() < deadline)
			fl_test_sleep_ms(5);
		fl_assert(!has_thread("fl-conn-watch"));
		dl_write_all(sv[1], "w", 1);
		dl_read_all(go[0], &byte, 1);
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	tl = dl_recv_fd(sv[0]);
	daemon_stop(&d);
	fl_assert(d.stopped);
	dl_write_all(go[1], "g", 1);
	dl_read_all(sv[0], &byte, 1);
	daemon_resume(&d);
	/* The request timeout is 10 s: a step that waited for the owner fails with -ETIMEDOUT. */
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	dl_write_all(go[1], "g", 1);
	dl_wait_child_ok(owner);
	close(go[1]);
	close(sv[0]);
	close(tl);
}

FL_TEST(nonowner_inc_returns_only_with_the_stopped_owners_fence_ready)
{
	nonowner_step_with_owner_stopped(false, false);
}

/*
 * The same, the stopped owner then killed: its connection goes, and with
 * it the points held for its close (the kept end closes with the
 * process); the inc returns with the fence and its merge both signalled.
 */
FL_TEST(nonowner_inc_with_the_stopped_owner_killed_completes_the_fence_and_its_merge)
{
	nonowner_step_with_owner_stopped(false, true);
}

/*
 * The same for fl_timeline_fd_fail_pending() of a process that is not the
 * owner: when it returns, the owner's kept fence is failed for everyone,
 * its fd ready (before, it returned at once, and a reader could see the
 * fence active after it had been seen failed: found by the fence-state
 * fuzzer).
 */
FL_TEST(nonowner_fail_returns_only_with_the_stopped_owners_fence_failed)
{
	nonowner_step_with_owner_stopped(true, false);
}

/*
 * Two processes, each the owner of one timeline and signalling the other's
 * at the same time: each inc waits until the other owner closed the ends
 * it was kicked for, and each owner's watcher must do that while its own
 * thread waits for such an inc's answer. A watcher that left the kicks to
 * the waiting thread (as it may for the answers of ordinary requests)
 * would wait for it forever, and it for the other process.
 */
FL_TEST(two_owners_signalling_each_others_timeline_do_not_wait_for_each_other)
{
	enum { N = 24 };
	int sv[2], go[2], x, fx[N], y, fy[N];
	pid_t pid;

	socketpair_or_fail(sv);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	/*
	 * Forked before either process keeps an end: a child started while
	 * the parent's connection watcher runs may give its own watcher that
	 * thread's stack, which ThreadSanitizer takes for a second thread of
	 * one id ("dup thread with used id").
	 */
	pid = dl_fork();
	if (pid == 0) {
		char byte;

		close(sv[0]);
		close(go[1]);
		y = new_timeline("y");
		for (int i = 0; i < N; i++)
			fy[i] = new_fence(y, (uint64_t)i + 1, "fy");
		fl_daemon_flush();
		dl_send_fd(sv[1], y);
		/* The parent's: signalled from here through the daemon. */
		x = dl_recv_fd(sv[1]);
		dl_read_all(go[0], &byte, 1);
		for (int i = 0; i < N; i++)
			fl_assert_int_eq(fl_timeline_fd_inc(x, 1), 0);
		for (int i = 0; i < N; i++)
			dl_expect_fence_status(fy[i], FL_STATUS_SIGNALED);
		_exit(0);
	}
	close(sv[1]);
	close(go[0]);
	x = new_timeline("x");
	for (int i = 0; i < N; i++)
		fx[i] = new_fence(x, (uint64_t)i + 1, "fx");
	fl_daemon_flush();
	y = dl_recv_fd(sv[0]);
	dl_send_fd(sv[0], x);
	close(sv[0]);
	dl_write_all(go[1], "g", 1);
	for (int i = 0; i < N; i++)
		fl_assert_int_eq(fl_timeline_fd_inc(y, 1), 0);
	dl_wait_child_ok(pid);
	for (int i = 0; i < N; i++) {
		dl_expect_fence_status(fx[i], FL_STATUS_SIGNALED);
		close(fx[i]);
	}
	close(go[1]);
	close(y);
	close(x);
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

/*
 * The owner's fences, each signalled by its own step before the daemon
 * read its (one-way) creation: the daemon finds the owner's end closed
 * and writes no kick, which would only wake the owner's watcher thread.
 */
FL_TEST(an_owner_that_signals_its_fences_before_the_daemon_reads_them_gets_no_kicks)
{
	struct fl_introspect_client_stats s0, s1;
	int tl = new_timeline("no-kicks"), f;

	f = new_fence(tl, 1, "first"); /* the pool's first fill */
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	close(f);
	fl_daemon_flush();
	fl_assert_int_eq(fl_introspect_client_stats(&s0, sizeof(s0)), 0);
	for (uint64_t v = 2; v < 66; v++) {
		f = new_fence(tl, v, "own");
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert(fence_fd_readable(f));
		close(f);
	}
	/* A round trip: every creation is read, and any kick is in the pipe before the reply. */
	fl_daemon_flush();
	fl_daemon_flush();
	fl_assert_int_eq(fl_introspect_client_stats(&s1, sizeof(s1)), 0);
	fl_assert_int_eq(s1.kicks - s0.kicks, 0);
	fl_timeline_fd_close(tl);
}

#define MANY_KEPT 300

struct steps_thread {
	pthread_t thread;
	int tl;
	unsigned int steps;
	atomic_bool done;
	int ret;
};

static void *steps_thread_main(void *data)
{
	struct steps_thread *t = data;

	t->ret = 0;
	for (unsigned int i = 0; i < t->steps && t->ret == 0; i++)
		t->ret = fl_timeline_fd_inc(t->tl, 1);
	atomic_store(&t->done, true);
	return NULL;
}

/*
 * An owner whose fd limit is high keeps the signal ends of hundreds of
 * pending fences, so that it completes each of them itself, one step at a
 * time, while the daemon is stopped, as sw_sync signals any number of
 * pending points with nobody else scheduled. With the 64 ends it used to
 * keep at most, every step past the 64th waited for the daemon.
 */
FL_TEST(an_owner_with_a_high_fd_limit_completes_hundreds_of_pending_fences_itself)
{
	struct steps_thread t = { .steps = MANY_KEPT };
	uint64_t deadline;
	struct stopped_daemon d;
	struct rlimit rl;
	int fds[MANY_KEPT];
	bool started = false, all_ready = true;
	unsigned int i;

	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2048 + 4 * MANY_KEPT)
		fl_test_skip("RLIMIT_NOFILE's hard limit %lu is too low",
			     (unsigned long)rl.rlim_max);
	rl.rlim_cur = 2048 + 4 * MANY_KEPT; /* room for 64 + MANY_KEPT + 256 ends */
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	/* A new connection: what it may keep follows the limit it finds. */
	fl_daemon_disconnect();
	t.tl = new_timeline("many-kept");
	for (i = 0; i < MANY_KEPT; i++)
		fds[i] = new_fence(t.tl, i + 1, "kept");
	fl_daemon_flush();

	daemon_stop(&d);
	if (d.stopped)
		started = pthread_create(&t.thread, NULL, steps_thread_main, &t) == 0;
	deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	while (started && !atomic_load(&t.done) && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(1);
	for (i = 0; started && atomic_load(&t.done) && i < MANY_KEPT; i++)
		all_ready = all_ready && fence_fd_readable(fds[i]);
	daemon_resume(&d);
	fl_assert(started);
	fl_assert_int_eq(pthread_join(t.thread, NULL), 0);
	fl_assert(i == MANY_KEPT);
	fl_assert(all_ready);
	fl_assert_int_eq(t.ret, 0);
	for (i = 0; i < MANY_KEPT; i++) {
		dl_expect_fence_status(fds[i], FL_STATUS_SIGNALED);
		close(fds[i]);
	}
	close(t.tl);
}

/*
 * The ends an owner keeps are listed in signal order while fences come for
 * rising values; one made for an earlier value than the last (here every
 * other one) makes each step look at them all. Either way a step completes
 * exactly the fences it reached, on a 64-bit and a 32-bit timeline, across
 * the 32-bit wrap too.
 */
#define KEPT_ORDER_N 10

FL_TEST(an_owners_step_completes_exactly_the_kept_fences_it_reaches_in_any_order)
{
	static const uint64_t order[KEPT_ORDER_N] = { 3, 1, 2, 6, 4, 5, 9, 7, 8, 10 };
	int fds[KEPT_ORDER_N];

	for (int pass = 0; pass < 4; pass++) {
		bool is32 = pass >= 2, sorted = pass % 2;
		/* A 32-bit timeline starts 5 before the wrap. */
		uint64_t base = is32 ? 0xFFFFFFFBull : 0;
		int tl;

		fl_assert_int_eq(fl_timeline_fd_create(is32 ? "kept-32" : "kept-64",
						       is32 ? FL_SW_SYNC_32BIT : 0, &tl),
				 0);
		if (base)
			fl_assert_int_eq(fl_timeline_fd_inc(tl, base), 0);
		for (size_t i = 0; i < KEPT_ORDER_N; i++) {
			uint64_t v = sorted ? i + 1 : order[i];

			fds[v - 1] = new_fence(tl, is32 ? (uint32_t)(base + v) : base + v, "kept");
		}
		fl_daemon_flush();
		for (size_t step = 1; step <= KEPT_ORDER_N; step++) {
			fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
			for (size_t v = 1; v <= KEPT_ORDER_N; v++)
				fl_assert_int_eq(fence_fd_readable(fds[v - 1]), v <= step);
		}
		for (size_t i = 0; i < KEPT_ORDER_N; i++) {
			dl_expect_fence_status(fds[i], FL_STATUS_SIGNALED);
			close(fds[i]);
		}
		close(tl);
	}
}

/*
 * Pending fences the owner made and dropped leave their signal ends with
 * nobody to write to. Once the ends fill the room the fd limit gives, the
 * ones nobody holds go at once, and count as ends that did not pay, so
 * that the pool stops bringing them: the program does not hold the room's
 * worth of dead fds until its connection idles (with room for thousands,
 * thousands of fds).
 */
FL_TEST(an_owner_that_drops_pending_fences_does_not_hold_their_ends)
{
	unsigned int room = 64 + (4096 - 1024) / 4;
	struct rlimit rl;
	int tl, before;

	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 4096)
		fl_test_skip("RLIMIT_NOFILE's hard limit %lu is too low",
			     (unsigned long)rl.rlim_max);
	rl.rlim_cur = 4096;
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	fl_daemon_disconnect();
	tl = new_timeline("dropped");
	close(new_fence(tl, 1000, "first"));
	before = fl_test_count_fds();
	for (unsigned int i = 0; i < 4 * room; i++)
		close(new_fence(tl, 1000, "dropped"));
	/* The pool's fds and their ends come and go; the room's worth would stay. */
	fl_assert(fl_test_count_fds() - before < (int)room / 2);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1000), 0);
	close(tl);
}

/*
 * Another process's fl_timeline_fd_fail_pending() and the owner's inc race
 * on a fence whose signal end the owner keeps: whichever the daemon took
 * first must be what every reader sees. Here the daemon has failed the
 * fence (the owner's info says so) but the kick that tells the owner may
 * not have been read when the owner's inc reaches the fence: the inc must
 * write the failure into the end, not "signalled" (32 bytes in the pipe,
 * which a reader without the status page takes for signalled). Before, it
 * wrote "signalled" whenever it ran ahead of its connection watcher: 0 to
 * 3 rounds in 150 here (found by the fence-state fuzzer in CI).
 */
FL_TEST(an_owners_inc_after_another_process_failed_its_fence_keeps_the_failure)
{
	enum { ROUNDS = 500 };
	int sv[2], tl;
	pid_t owner;
	char byte;

	socketpair_or_fail(sv);
	owner = dl_fork();
	if (owner == 0) {
		int otl, bad = 0;

		close(sv[0]);
		otl = new_timeline("raced");
		dl_send_fd(sv[1], otl);
		for (int i = 1; i <= ROUNDS; i++) {
			struct fl_fence_info info;
			struct fl_sync_pt_info pt;
			int f = new_fence(otl, (uint64_t)i, "kept"), queued = -1;
			uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;

			fl_daemon_flush();
			dl_write_all(sv[1], "f", 1); /* the parent fails it now */
			do
				fl_assert(fl_fence_fd_get_info(f, &info, &pt, 1) >= 0);
			while (info.status == 0 && fl_test_now_ns() < deadline);
			fl_assert_int_eq(info.status, -ETIMEDOUT);
			/* The daemon failed it; our watcher may or may not have heard. */
			fl_assert_int_eq(fl_timeline_fd_inc(otl, 1), 0);
			fl_assert(fence_fd_readable(f));
			fl_assert_int_eq(ioctl(f, FIONREAD, &queued), 0);
			/* One 16-byte record: failed; two: signalled (protocol.md). */
			bad += queued != 16;
			fl_assert_int_eq(fl_fence_fd_get_status(f), -ETIMEDOUT);
			close(f);
			dl_read_all(sv[1], &byte, 1); /* its fail_pending returned */
		}
		if (bad)
			fprintf(stderr, "%d of %d fences failed by the daemon read signalled\n",
				bad, ROUNDS);
		_exit(bad ? 1 : 0);
	}
	close(sv[1]);
	tl = dl_recv_fd(sv[0]);
	for (int i = 0; i < ROUNDS; i++) {
		dl_read_all(sv[0], &byte, 1);
		fl_assert_int_eq(fl_timeline_fd_fail_pending(tl, -ETIMEDOUT), 1);
		dl_write_all(sv[0], "d", 1);
	}
	dl_wait_child_ok(owner);
	close(sv[0]);
	close(tl);
}

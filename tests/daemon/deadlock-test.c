/* SPDX-License-Identifier: MIT */
/*
 * Deadlock detection through the daemon: processes that wait on each
 * other's fences forever are found, and the wait that closed the cycle gets
 * -EDEADLK if it asked (FL_WAIT_DEADLOCK_ERROR), else the last of the
 * cycle's waits that asked, whatever order they began in. Waits that can still end
 * (another thread will signal) must never be refused. fencectl's report of
 * the same situations is checked by tests/fencectl-observe-test.py.
 *
 * Each process in a cycle makes its own timeline, so that it alone holds
 * it: a process holding a timeline's fd could signal it, and the parent
 * holds none.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <android/sync.h>
#include <fenceline/fenceline.h>
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>

#include "daemon-helpers.h"
#include "runner.h"

/* Long enough that only a detector that failed gets there. */
#define NEVER_MS 20000

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

static void send_fd(int sock, int fd)
{
	fl_assert_int_eq(fl_send(sock, "f", 1, &fd, 1), 0);
}

static int recv_fd(int sock)
{
	char c;
	size_t len;
	int fd = -1;
	unsigned int n = 0;

	fl_assert_int_eq(fl_recv(sock, &c, 1, &len, &fd, 1, &n), 0);
	fl_assert_int_eq(n, 1);
	return fd;
}

static void pair(int sv[2])
{
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/*
 * One member of a ring of @n processes: make a timeline and a fence on it,
 * pass the fence to the next member, get the previous member's, and wait
 * on it (merged with one of our own fences that has signalled already, if
 * @merge: the cycle then runs through merged fences). The member that
 * waits last asks for EDEADLK, gets it, and breaks the cycle by signalling;
 * everybody's wait then ends.
 */
static void ring_member(int index, int n, int to_next, int from_prev, int go, bool merge)
{
	char name[32];
	int tl, mine, theirs, wait_on, r;
	char c;

	snprintf(name, sizeof(name), "ring-%d", index);
	tl = new_timeline(name);
	snprintf(name, sizeof(name), "ring-%d-fence", index);
	/* With @merge, value 1 is the one already reached. */
	mine = new_fence(tl, merge ? 2 : 1, name);
	send_fd(to_next, mine);
	theirs = recv_fd(from_prev);
	wait_on = theirs;
	if (merge) {
		int done = new_fence(tl, 1, "already");

		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_merge(theirs, done, "ring-merge", 0, &wait_on), 0);
		close(done);
	}
	/* The last member starts waiting once everybody else does. */
	fl_assert_int_eq(read(go, &c, 1), 1);
	if (index == n - 1) {
		usleep(300000);
		r = fl_fence_fd_wait_flags(wait_on, NEVER_MS, FL_WAIT_DEADLOCK_ERROR);
		fl_assert_int_eq(r, -EDEADLK);
		/* Break the cycle: our fence signals, the others follow in turn. */
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(wait_on, NEVER_MS), 0);
	} else {
		/* These asked for nothing: they wait until the cycle is broken. */
		fl_assert_int_eq(fl_fence_fd_wait(wait_on, NEVER_MS), 0);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	}
	if (wait_on != theirs)
		close(wait_on);
	close(theirs);
	close(mine);
	close(tl);
}

static void ring(int n, bool merge)
{
	int links[8][2], go[2];
	pid_t pids[8];

	fl_assert(n <= 8);
	for (int i = 0; i < n; i++)
		pair(links[i]);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	for (int i = 0; i < n; i++) {
		pids[i] = dl_fork();
		if (pids[i] == 0) {
			close(go[1]);
			/* Member i sends on link i and receives on link i - 1. */
			ring_member(i, n, links[i][0], links[(i + n - 1) % n][1], go[0], merge);
			_exit(0);
		}
	}
	close(go[0]);
	fl_assert_int_eq(write(go[1], "gogogogo", (size_t)n), n);
	close(go[1]);
	for (int i = 0; i < n; i++)
		dl_wait_child_ok(pids[i]);
	for (int i = 0; i < n; i++) {
		close(links[i][0]);
		close(links[i][1]);
	}
}

FL_TEST_TIMEOUT(two_process_cycle_gives_edeadlk_to_the_wait_that_closed_it, 120)
{
	ring(2, false);
}

FL_TEST_TIMEOUT(three_process_cycle_through_merged_fences_gives_edeadlk, 120)
{
	ring(3, true);
}

/* True once the daemon's detector reports a cycle (fencectl deadlocks, in JSON). */
static bool cycle_reported(void)
{
	char buf[16384];
	size_t len = 0;
	int fd = -1;

	fl_assert_int_eq(fl_introspect_dump_waits(FL_INTROSPECT_JSON, &fd), 0);
	fl_assert_int_eq(fl_introspect_read(fd, buf, sizeof(buf) - 1, &len), 0);
	close(fd);
	buf[len] = '\0';
	return strstr(buf, "\"kind\":\"cycle\"") != NULL;
}

/* Waits (up to NEVER_MS) for the notify fd of @w; returns what it said. */
static int notified(struct fl_wait_report *w, int fence)
{
	struct pollfd p[2] = { { w->notify_fd, POLLIN, 0 }, { fence, POLLIN, 0 } };

	fl_assert_int_eq(poll(p, 2, NEVER_MS), 1);
	fl_assert(p[0].revents & POLLIN);
	return fl_fence_fd_wait_notified(w);
}

enum asker { ASKS_FIRST, ASKS_AFTER_THE_REPORT };

/*
 * Two processes wait on each other's fence. Member 0 asks for EDEADLK but
 * is not the last to begin waiting: with ASKS_FIRST its wait begins (and
 * the daemon has it) before member 1's, which asks for nothing; with
 * ASKS_AFTER_THE_REPORT it first waits without asking until the detector
 * has reported the cycle, then asks in a new wait on the same fence. The
 * order in which processes begin to wait is the scheduler's; a wait that
 * asked must hear of a cycle it is in either way.
 */
static void asker_member(int index, int to_next, int from_prev, int go_next, int go_mine,
			 enum asker how)
{
	int tl = new_timeline(index ? "asked-1" : "asked-0");
	int mine = new_fence(tl, 1, "asked-fence"), theirs;
	struct fl_wait_report w;
	char c = 'g';

	send_fd(to_next, mine);
	theirs = recv_fd(from_prev);
	if (index == 1) {
		fl_assert_int_eq(read(go_mine, &c, 1), 1);
		fl_assert_int_eq(fl_fence_fd_wait(theirs, NEVER_MS), 0);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	} else {
		fl_assert_int_eq(
			fl_fence_fd_wait_begin(theirs, -1,
					       how == ASKS_FIRST ? FL_WAIT_DEADLOCK_ERROR : 0, &w),
			0);
		fl_assert(w.token != 0);
		fl_daemon_flush(); /* the daemon has our wait before member 1 begins its own */
		fl_assert_int_eq(write(go_next, &c, 1), 1);
		if (how == ASKS_AFTER_THE_REPORT) {
			for (int i = 0; i < NEVER_MS / 10 && !cycle_reported(); i++)
				usleep(10000);
			fl_assert(cycle_reported());
			fl_fence_fd_wait_end(&w, -ETIME);
			fl_assert_int_eq(
				fl_fence_fd_wait_begin(theirs, -1, FL_WAIT_DEADLOCK_ERROR, &w), 0);
		}
		fl_assert_int_eq(notified(&w, theirs), -EDEADLK);
		fl_fence_fd_wait_end(&w, -EDEADLK);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(theirs, NEVER_MS), 0);
	}
	close(theirs);
	close(mine);
	close(tl);
}

static void asker_pair(enum asker how)
{
	int links[2][2], go[2];
	pid_t pids[2];

	for (int i = 0; i < 2; i++)
		pair(links[i]);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	for (int i = 0; i < 2; i++) {
		pids[i] = dl_fork();
		if (pids[i] == 0) {
			asker_member(i, links[i][0], links[(i + 1) % 2][1], go[1], go[0], how);
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]);
	for (int i = 0; i < 2; i++)
		dl_wait_child_ok(pids[i]);
	for (int i = 0; i < 2; i++) {
		close(links[i][0]);
		close(links[i][1]);
	}
}

FL_TEST_TIMEOUT(a_wait_that_asked_gets_edeadlk_when_a_later_wait_closes_the_cycle, 120)
{
	asker_pair(ASKS_FIRST);
}

FL_TEST_TIMEOUT(a_wait_that_asks_after_the_cycle_was_reported_gets_edeadlk, 120)
{
	asker_pair(ASKS_AFTER_THE_REPORT);
}

FL_TEST_TIMEOUT(process_waiting_on_itself_deadlocks_when_it_has_no_other_thread, 120)
{
	int tl = new_timeline("self");
	int f = new_fence(tl, 1, "self-fence");

	/* Its only thread waits on a timeline only it holds: nothing can end it. */
	fl_assert_int_eq(fl_fence_fd_wait_flags(f, NEVER_MS, FL_WAIT_DEADLOCK_ERROR), -EDEADLK);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(f, NEVER_MS), 0);
	close(f);
	close(tl);
}

struct later {
	int tl;
	unsigned int ms;
};

static void *signal_later(void *arg)
{
	struct later *l = arg;

	usleep(l->ms * 1000);
	fl_timeline_fd_inc(l->tl, 1);
	return NULL;
}

FL_TEST_TIMEOUT(wait_on_own_timeline_is_no_deadlock_while_another_thread_runs, 120)
{
	struct later l = { new_timeline("threaded"), 1500 };
	int f = new_fence(l.tl, 1, "threaded-fence");
	pthread_t t;

	/* The detector looks several times meanwhile; the other thread can signal. */
	fl_assert_int_eq(pthread_create(&t, NULL, signal_later, &l), 0);
	fl_assert_int_eq(fl_fence_fd_wait_flags(f, NEVER_MS, FL_WAIT_DEADLOCK_ERROR), 0);
	pthread_join(t, NULL);
	close(f);
	close(l.tl);
}

FL_TEST_TIMEOUT(wait_on_another_process_that_can_still_signal_is_no_deadlock, 120)
{
	int tl = new_timeline("other");
	int f = new_fence(tl, 1, "other-fence");
	pid_t pid = dl_fork();

	if (pid == 0) {
		/* Not waiting on anything: it signals when it is ready. */
		usleep(1500000);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		_exit(0);
	}
	close(tl); /* only the child can signal now */
	fl_assert_int_eq(fl_fence_fd_wait_flags(f, NEVER_MS, FL_WAIT_DEADLOCK_ERROR), 0);
	dl_wait_child_ok(pid);
	close(f);
}

FL_TEST_TIMEOUT(sync_wait_fails_with_edeadlk_when_asked_by_environment, 120)
{
	int tl = new_timeline("env");
	int f = new_fence(tl, 1, "env-fence");

	setenv("FENCELINE_WAIT_EDEADLK", "1", 1);
	errno = 0;
	fl_assert_int_eq(sync_wait(f, NEVER_MS), -1);
	fl_assert_int_eq(errno, EDEADLK);
	unsetenv("FENCELINE_WAIT_EDEADLK");
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(sync_wait(f, NEVER_MS), 0);
	close(f);
	close(tl);
}

FL_TEST(wait_helpers_report_nothing_for_a_signalled_fence_or_a_pipe)
{
	int tl = new_timeline("helpers"), f = new_fence(tl, 1, "helpers-fence");
	struct fl_wait_report w;
	int p[2];

	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_fence_fd_wait_begin(p[0], -1, FL_WAIT_DEADLOCK_ERROR, &w), 0);
	fl_assert(w.token == 0 && w.notify_fd == -1);
	fl_fence_fd_wait_end(&w, -ETIME);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(f, NEVER_MS), 0);
	fl_assert_int_eq(fl_fence_fd_wait_begin(f, -1, FL_WAIT_DEADLOCK_ERROR, &w), 0);
	fl_assert(w.token == 0 && w.notify_fd == -1);
	close(p[0]);
	close(p[1]);
	close(f);
	close(tl);
}

FL_TEST(wait_helpers_report_a_pending_fence_and_clean_up)
{
	int tl = new_timeline("helpers"), f = new_fence(tl, 1, "helpers-fence");
	struct fl_wait_report w;

	fl_assert_int_eq(fl_fence_fd_wait_begin(f, 100, FL_WAIT_DEADLOCK_ERROR, &w), 0);
	fl_assert(w.token != 0 && w.notify_fd >= 0);
	/* Nothing said yet: keep waiting. */
	fl_assert_int_eq(fl_fence_fd_wait_notified(&w), 0);
	fl_fence_fd_wait_end(&w, -ETIME);
	fl_assert(w.token == 0 && w.notify_fd == -1);
	close(f);
	close(tl);
}

/* SPDX-License-Identifier: MIT */
/*
 * fl_fence_fd_get_info() (and libsync's sync_file_info()) of the daemon's
 * pipe fence fds from the info records of its status page, with no round
 * trip (docs/architecture.md, "The status page"): answered while the daemon
 * is stopped, exact under a concurrent signaller, never signalled before
 * the fd is ready, and the daemon's answer wherever the page cannot be
 * exact (an active merge's points, more points than a record holds).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <android/sync.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "daemon-procs.h"
#include "helpers.h"
#include "runner.h"
#include "seccomp-forbid.h"

/* A fence fd made by another process (so no fd of ours backs it), as a holder would get it. */
static int child_made_fence(int tl, uint64_t value, const char *name)
{
	int sv[2], fd;
	pid_t pid;

	socketpair_or_fail(sv);
	pid = dl_fork();
	if (pid == 0) {
		close(sv[0]);
		dl_send_fd(sv[1], new_fence(tl, value, name));
		_exit(0);
	}
	close(sv[1]);
	fd = dl_recv_fd(sv[0]);
	close(sv[0]);
	dl_wait_child_ok(pid);
	return fd;
}

static void signal_to(int tl, uint64_t count)
{
	fl_assert_int_eq(fl_timeline_fd_inc(tl, count), 0);
}

/*
 * Runs @fn(@arg) in a child connected before the daemon is stopped, while
 * it is: a request to the daemon would fail (the child's request timeout),
 * so whatever @fn checks was answered without the daemon.
 */
static void while_daemon_stopped(void (*fn)(void *), void *arg)
{
	struct stopped_daemon d;
	int ready[2], go[2];
	pid_t child;
	char byte;

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	child = dl_fork();
	if (child == 0) {
		setenv("FENCELINE_REQUEST_TIMEOUT_MS", "2000", 1);
		fl_assert(fl_daemon_connect() > 0);
		dl_write_all(ready[1], "r", 1);
		dl_read_all(go[0], &byte, 1);
		fn(arg);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	dl_read_all(ready[0], &byte, 1);
	daemon_stop(&d);
	dl_write_all(go[1], "g", 1);
	dl_wait_child_ok(child);
	daemon_resume(&d);
	close(ready[0]);
	close(go[1]);
}

struct fences {
	int pending, pending_merge, done_merge, failed, many;
	uint64_t done_stamp[2];
};

static void check_from_page(void *arg)
{
	const struct fences *f = arg;
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	struct sync_file_info *si;

	/* An active one-point fence: the point is the fence. */
	fl_assert_int_eq(fl_fence_fd_get_info(f->pending, &info, pts, 2), 1);
	fl_assert_str_eq(info.name, "pending");
	fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(info.num_points, 1);
	fl_assert_int_eq(info.timestamp_ns, 0);
	fl_assert_str_eq(pts[0].timeline_name, "info-a");
	fl_assert_int_eq(pts[0].status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(pts[0].timestamp_ns, 0);
	fl_assert_int_eq(pts[0].value, 2);

	/* A signalled merge: every point final. */
	fl_assert_int_eq(fl_fence_fd_get_info(f->done_merge, &info, pts, 2), 2);
	fl_assert_str_eq(info.name, "done-merge");
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(info.num_points, 2);
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(pts[i].status, FL_STATUS_SIGNALED);
		fl_assert_int_eq(pts[i].timestamp_ns, f->done_stamp[i]);
		fl_assert(pts[i].timestamp_ns > 0 && pts[i].timestamp_ns <= info.timestamp_ns);
	}
	fl_assert(info.timestamp_ns == pts[0].timestamp_ns ||
		  info.timestamp_ns == pts[1].timestamp_ns);

	/* A failed fence, its error and its point's. */
	fl_assert_int_eq(fl_fence_fd_get_info(f->failed, &info, pts, 1), 1);
	fl_assert_int_eq(info.status, -EIO);
	fl_assert_int_eq(pts[0].status, -EIO);
	fl_assert(info.timestamp_ns > 0);

	/* Count-only queries: an active merge and one with more points than a record holds. */
	fl_assert_int_eq(fl_fence_fd_get_info(f->pending_merge, &info, NULL, 0), 0);
	fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(info.num_points, 2);
	fl_assert_int_eq(fl_fence_fd_get_info(f->many, &info, NULL, 0), 0);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(info.num_points, 6);

	/* libsync's two calls. */
	si = sync_file_info(f->done_merge);
	fl_assert(si);
	fl_assert_int_eq(si->status, 1);
	fl_assert_int_eq(si->num_fences, 2);
	fl_assert_int_eq(sync_get_fence_info(si)[1].status, 1);
	sync_file_info_free(si);
}

static int merge_all(const int *fds, int n, const char *name)
{
	int m = new_merge(fds[0], fds[1], name);

	for (int i = 2; i < n; i++) {
		int next = new_merge(m, fds[i], name);

		close(m);
		m = next;
	}
	return m;
}

/*
 * Info across processes from the page, answered while the daemon is
 * stopped: pending, signalled, failed, merged; and the merged fence's
 * points as the daemon gives them (a round trip before the stop).
 */
FL_TEST(info_across_processes_comes_from_the_status_page)
{
	int a = new_timeline("info-a"), b = new_timeline("info-b"), c = new_timeline("info-c");
	int tls[6], leaves[6], pa, pb, da, db;
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	struct fences f;

	f.pending = child_made_fence(a, 2, "pending");
	pa = child_made_fence(a, 3, "pa");
	pb = child_made_fence(b, 3, "pb");
	f.pending_merge = new_merge(pa, pb, "pending-merge");
	da = child_made_fence(a, 1, "da");
	db = child_made_fence(b, 1, "db");
	f.done_merge = new_merge(da, db, "done-merge");
	f.failed = child_made_fence(c, 1, "failed");
	for (int i = 0; i < 6; i++) {
		tls[i] = new_timeline("info-many");
		leaves[i] = child_made_fence(tls[i], 1, "leaf");
	}
	f.many = merge_all(leaves, 6, "many");
	signal_to(a, 1);
	signal_to(b, 1);
	fl_assert(fl_timeline_fd_fail_pending(c, -EIO) >= 0);
	for (int i = 0; i < 6; i++)
		signal_to(tls[i], 1);
	fl_assert_int_eq(fl_fence_fd_wait(f.done_merge, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(fl_fence_fd_wait(f.many, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(fl_fence_fd_wait(f.failed, DL_LONG_WAIT_MS), -EIO);
	fl_assert_int_eq(fl_fence_fd_get_info(f.done_merge, &info, pts, 2), 2);
	f.done_stamp[0] = pts[0].timestamp_ns;
	f.done_stamp[1] = pts[1].timestamp_ns;

	while_daemon_stopped(check_from_page, &f);

	/* More points than a record holds: the daemon's answer, every one of them. */
	{
		struct fl_sync_pt_info many[6];

		fl_assert_int_eq(fl_fence_fd_get_info(f.many, &info, many, 6), 6);
		for (int i = 0; i < 6; i++) {
			fl_assert_int_eq(many[i].status, FL_STATUS_SIGNALED);
			fl_assert_int_eq(many[i].value, 1);
		}
	}
	for (int i = 0; i < 6; i++) {
		close(leaves[i]);
		close(tls[i]);
	}
	close(f.many);
	close(f.failed);
	close(f.done_merge);
	close(f.pending_merge);
	close(f.pending);
	close(da);
	close(db);
	close(pa);
	close(pb);
	close(a);
	close(b);
	close(c);
}

/* Two timelines, a fence of another process's on each at 1, and their merge. */
struct pair {
	int tl[2], f[2], m;
};

static void pair_make(struct pair *p, const char *name)
{
	for (int i = 0; i < 2; i++) {
		p->tl[i] = new_timeline(name);
		p->f[i] = child_made_fence(p->tl[i], 1, name);
	}
	p->m = new_merge(p->f[0], p->f[1], name);
}

static void pair_close(struct pair *p)
{
	close(p->m);
	for (int i = 0; i < 2; i++) {
		close(p->f[i]);
		close(p->tl[i]);
	}
}

/*
 * An active merge's points change without the merge: one point signalled
 * shows at once (the daemon answers those), and a merge that failed early
 * while a point is pending shows that point as it is.
 */
FL_TEST(info_of_merges_shows_each_point_as_it_is)
{
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	struct pair p;
	int m, a, b;

	pair_make(&p, "merge");
	m = p.m;
	a = p.tl[0];
	b = p.tl[1];
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(pts[0].status + pts[1].status, 0);
	signal_to(a, 1);
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(pts[0].status + pts[1].status, 1);
	/* b fails: the merge fails with it, a's point stays signalled. */
	fl_assert(fl_timeline_fd_fail_pending(b, -ETIMEDOUT) >= 0);
	fl_assert_int_eq(fl_fence_fd_wait(m, DL_LONG_WAIT_MS), -ETIMEDOUT);
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, -ETIMEDOUT);
	fl_assert(pts[0].status == FL_STATUS_SIGNALED || pts[1].status == FL_STATUS_SIGNALED);
	fl_assert(pts[0].status == -ETIMEDOUT || pts[1].status == -ETIMEDOUT);
	pair_close(&p);
}

/*
 * A merge that failed while another of its points is pending: the page
 * answers its own status, and the pending point comes from the daemon,
 * exact when it signals later.
 */
FL_TEST(info_of_a_failed_merge_with_a_pending_point_follows_that_point)
{
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	struct pair p;
	int sa = -1, m;

	pair_make(&p, "fail");
	m = p.m;
	fl_assert(fl_timeline_fd_fail_pending(p.tl[1], -EIO) >= 0);
	fl_assert_int_eq(fl_fence_fd_wait(m, DL_LONG_WAIT_MS), -EIO);
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, -EIO);
	for (int i = 0; i < 2; i++)
		if (pts[i].status != -EIO)
			sa = i;
	fl_assert(sa >= 0);
	fl_assert_int_eq(pts[sa].status, FL_STATUS_ACTIVE);
	signal_to(p.tl[0], 1);
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, -EIO);
	fl_assert_int_eq(pts[sa].status, FL_STATUS_SIGNALED);
	pair_close(&p);
}

/* A holder that read()s the records out changes nothing for the others' info. */
FL_TEST(info_stays_exact_when_a_holder_reads_the_records_out)
{
	struct fl_sync_pt_info pts[2], before[2];
	struct fl_fence_info info, info_before;
	struct pair p;
	int sv[2], m, own;
	pid_t holder;

	pair_make(&p, "drained");
	m = p.m;
	own = new_fence(p.tl[0], 1, "own");
	signal_to(p.tl[0], 1);
	signal_to(p.tl[1], 1);
	fl_assert_int_eq(fl_fence_fd_wait(m, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(fl_fence_fd_wait(own, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info_before, before, 2), 2);
	socketpair_or_fail(sv);
	holder = dl_fork();
	if (holder == 0) {
		char buf[64];
		int got[2];

		close(sv[0]);
		got[0] = dl_recv_fd(sv[1]);
		got[1] = dl_recv_fd(sv[1]);
		for (int i = 0; i < 2; i++) {
			fcntl(got[i], F_SETFL, O_NONBLOCK);
			while (read(got[i], buf, sizeof(buf)) > 0)
				;
		}
		_exit(0);
	}
	close(sv[1]);
	dl_send_fd(sv[0], m);
	dl_send_fd(sv[0], own);
	dl_wait_child_ok(holder);
	close(sv[0]);
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(info.timestamp_ns, info_before.timestamp_ns);
	fl_assert_int_eq(pts[0].timestamp_ns, before[0].timestamp_ns);
	fl_assert_int_eq(pts[1].timestamp_ns, before[1].timestamp_ns);
	fl_assert_int_eq(fl_fence_fd_get_info(own, &info, pts, 1), 1);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(pts[0].status, FL_STATUS_SIGNALED);
	fl_assert(info.timestamp_ns > 0);
	close(own);
	pair_close(&p);
}

/*
 * The daemon dies with fences pending: their info never says signalled
 * (its page, still mapped by a reader that owns nothing and so has not
 * noticed, says active, but the pipes are at end-of-file), and a fence it
 * completed before keeps its final info.
 */
FL_TEST(info_after_the_daemon_dies_never_says_signalled)
{
	int tl = new_timeline("info-dying"), done = child_made_fence(tl, 1, "done");
	int pending = child_made_fence(tl, 2, "pending"), ready[2], go[2];
	pid_t old = fl_daemon_connect(), reader;
	char byte;

	fl_assert(old > 0);
	signal_to(tl, 1);
	fl_assert_int_eq(fl_fence_fd_wait(done, DL_LONG_WAIT_MS), 0);
	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	reader = dl_fork();
	if (reader == 0) {
		struct fl_sync_pt_info pts[1];
		struct fl_fence_info info;
		int r;

		fl_assert(fl_daemon_connect() > 0);
		fl_assert_int_eq(fl_fence_fd_get_info(pending, &info, pts, 1), 1);
		fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
		dl_write_all(ready[1], "r", 1);
		dl_read_all(go[0], &byte, 1);
		/* First (the page is still mapped): what the daemon completed stays so. */
		fl_assert_int_eq(fl_fence_fd_get_info(done, &info, pts, 1), 1);
		fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
		fl_assert_int_eq(pts[0].status, FL_STATUS_SIGNALED);
		r = fl_fence_fd_get_info(pending, &info, pts, 1);
		if (r >= 0)
			fl_assert(info.status < 0 && pts[0].status <= 0);
		else
			fl_assert_int_eq(r, -ECONNRESET);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	dl_read_all(ready[0], &byte, 1);
	fl_assert_int_eq(kill(old, SIGKILL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pending, DL_LONG_WAIT_MS), -ECONNRESET);
	dl_write_all(go[1], "g", 1);
	dl_wait_child_ok(reader);
	close(ready[0]);
	close(go[1]);
	close(done);
	close(pending);
	close(tl);
}

/*
 * Readers in threads while another signals fence after fence: info never
 * says signalled before the fd is ready, never active once it was ready,
 * and a one-point fence's point agrees with it (no torn record).
 */
#define CONC_FENCES  64
#define CONC_READERS 2

struct conc {
	int fds[CONC_FENCES];
	int tl;
	atomic_bool stop;
};

static void *reader_main(void *data)
{
	struct conc *c = data;

	while (!atomic_load(&c->stop))
		for (int i = 0; i < CONC_FENCES; i++) {
			struct fl_sync_pt_info pt;
			struct fl_fence_info info;
			bool ready_before = polls_ready(c->fds[i]);

			fl_assert_int_eq(fl_fence_fd_get_info(c->fds[i], &info, &pt, 1), 1);
			if (ready_before)
				fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
			if (info.status != FL_STATUS_ACTIVE)
				fl_assert(polls_ready(c->fds[i]));
			fl_assert_int_eq(pt.status, info.status);
			fl_assert_int_eq(pt.timestamp_ns, info.timestamp_ns);
			fl_assert_int_eq(pt.value, (uint64_t)i + 1);
		}
	return NULL;
}

FL_TEST(info_under_a_concurrent_signaller_is_never_torn_or_early)
{
	struct conc c = { .stop = false };
	pthread_t readers[CONC_READERS];

	c.tl = new_timeline("info-conc");
	for (int i = 0; i < CONC_FENCES; i++)
		c.fds[i] = child_made_fence(c.tl, (uint64_t)i + 1, "conc");
	for (int i = 0; i < CONC_READERS; i++)
		fl_assert_int_eq(pthread_create(&readers[i], NULL, reader_main, &c), 0);
	for (int i = 0; i < CONC_FENCES; i++)
		signal_to(c.tl, 1);
	fl_assert_int_eq(fl_fence_fd_wait(c.fds[CONC_FENCES - 1], DL_LONG_WAIT_MS), 0);
	atomic_store(&c.stop, true);
	for (int i = 0; i < CONC_READERS; i++)
		fl_assert_int_eq(pthread_join(readers[i], NULL), 0);
	for (int i = 0; i < CONC_FENCES; i++)
		close(c.fds[i]);
	close(c.tl);
}

/* The owner's view of its merge @m of two fences at 1: status @st, points @p0 and @p1. */
static void expect_own_merge(int m, int st, int p0, int p1)
{
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;

	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_str_eq(info.name, "own-merge");
	fl_assert_int_eq(info.status, st);
	fl_assert_int_eq(info.num_points, 2);
	fl_assert_int_eq(pts[0].status, p0);
	fl_assert_int_eq(pts[1].status, p1);
	for (int i = 0; i < 2; i++) {
		fl_assert_str_eq(pts[i].timeline_name, "own-tl");
		fl_assert_int_eq(pts[i].value, 1);
		fl_assert_int_eq(pts[i].timestamp_ns != 0, pts[i].status != 0);
	}
}

/*
 * An active merge whose pending points are all on timelines this process
 * owns: its counters are those timelines' values, so info is answered
 * from the page while the daemon is stopped (a round trip would time out),
 * also after newer fences evicted its record and one round trip had the
 * daemon publish it again. Once a point is reached the daemon answers, as
 * exact as ever.
 */
FL_TEST(an_owners_active_merge_of_its_own_timelines_is_answered_without_the_daemon)
{
	struct stopped_daemon d;
	int tl[2], f[2], m, more, filler[256];

	setenv("FENCELINE_REQUEST_TIMEOUT_MS", "2000", 1);
	fl_daemon_disconnect();
	for (int i = 0; i < 2; i++) {
		tl[i] = new_timeline("own-tl");
		f[i] = new_fence(tl[i], 1, "own");
	}
	m = new_merge(f[0], f[1], "own-merge");
	daemon_stop(&d);
	expect_own_merge(m, FL_STATUS_ACTIVE, FL_STATUS_ACTIVE, FL_STATUS_ACTIVE);
	daemon_resume(&d);

	/* Twice the info table's slots of newer live fences: its record is evicted. */
	more = new_timeline("more");
	for (int i = 0; i < 256; i++)
		filler[i] = new_fence(more, 1, "filler");
	fl_daemon_flush();
	expect_own_merge(m, FL_STATUS_ACTIVE, FL_STATUS_ACTIVE, FL_STATUS_ACTIVE);
	daemon_stop(&d);
	expect_own_merge(m, FL_STATUS_ACTIVE, FL_STATUS_ACTIVE, FL_STATUS_ACTIVE);
	daemon_resume(&d);

	signal_to(tl[0], 1);
	expect_own_merge(m, FL_STATUS_ACTIVE, FL_STATUS_SIGNALED, FL_STATUS_ACTIVE);
	signal_to(tl[1], 1);
	fl_assert(polls_ready(m));
	expect_own_merge(m, FL_STATUS_SIGNALED, FL_STATUS_SIGNALED, FL_STATUS_SIGNALED);
	for (int i = 0; i < 256; i++)
		close(filler[i]);
	close(more);
	close(m);
	for (int i = 0; i < 2; i++) {
		close(f[i]);
		close(tl[i]);
	}
	unsetenv("FENCELINE_REQUEST_TIMEOUT_MS");
}

struct stamped {
	int fd[2];
	uint64_t stamp[2];
};

static void check_without_timestamps(void *arg)
{
	const struct stamped *s = arg;
	struct fl_sync_pt_info pt;
	struct fl_fence_info info;

	for (int i = 0; i < 2; i++) {
		/* The page's answer, with the pipe's timestamp: the daemon is stopped. */
		fl_assert_int_eq(fl_fence_fd_get_info(s->fd[i], &info, &pt, 1), 1);
		fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
		fl_assert_int_eq(info.timestamp_ns, s->stamp[i]);
		fl_assert_int_eq(pt.timestamp_ns, s->stamp[i]);
	}
	fl_assert_int_eq(fl_test_forbid_scratch_pipes(), 0);
	for (int i = 0; i < 2; i++) {
		memset(&pt, 0xff, sizeof(pt));
		fl_assert_int_eq(fl_fence_fd_get_info_flags(s->fd[i], FL_INFO_NO_TIMESTAMPS, &info,
							    &pt, 1),
				 1);
		fl_assert_str_eq(info.name, i ? "held" : "owned");
		fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
		fl_assert_int_eq(info.num_points, 1);
		fl_assert_int_eq(info.timestamp_ns, 0);
		fl_assert_str_eq(pt.timeline_name, "stampless");
		fl_assert_int_eq(pt.status, FL_STATUS_SIGNALED);
		fl_assert_int_eq(pt.value, 1 + (uint64_t)i);
		fl_assert_int_eq(pt.timestamp_ns, 0);
		fl_assert_int_eq(fl_fence_fd_get_info_flags(s->fd[i], FL_INFO_NO_TIMESTAMPS, &info,
							    NULL, 0),
				 0);
		fl_assert_int_eq(info.timestamp_ns, 0);
	}
}

/*
 * FL_INFO_NO_TIMESTAMPS: a signalled one-point fence's info from the page
 * costs no scratch pipe (the child dies at its first pipe2() or tee()),
 * for the owner's own fence and another process's; its timestamps read 0,
 * and without the flag they are still the pipe's.
 */
FL_TEST(info_without_timestamps_peeks_no_pipe)
{
	int tl = new_timeline("stampless");
	struct fl_sync_pt_info pt;
	struct fl_fence_info info;
	struct stamped s;

	if (!fl_test_can_forbid())
		fl_test_skip("no seccomp audit arch known for this machine");
	s.fd[0] = new_fence(tl, 1, "owned");
	s.fd[1] = child_made_fence(tl, 2, "held");
	signal_to(tl, 2);
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(fl_fence_fd_wait(s.fd[i], DL_LONG_WAIT_MS), 0);
		/* A round trip where the page is behind: then it is not. */
		fl_assert_int_eq(fl_fence_fd_get_info(s.fd[i], &info, &pt, 1), 1);
		fl_assert(pt.timestamp_ns > 0);
		s.stamp[i] = pt.timestamp_ns;
	}
	while_daemon_stopped(check_without_timestamps, &s);
	close(s.fd[0]);
	close(s.fd[1]);
	close(tl);
}

/*
 * A merge of two fences that the status page lists as signalled is
 * signalled too: made into a pooled fd that this owner completes through
 * its signal end, it returns while the daemon is stopped (a round trip
 * would time out) with its fd ready. Once the daemon runs it knows the
 * merge as the round trip makes it: one that keeps its points has both,
 * with their own times; a mainline one is the kernel's stub.
 */
FL_TEST(a_merge_of_signalled_fences_needs_no_round_trip)
{
	static const char *const names[2] = { "plain", "mainline" };
	struct fl_sync_pt_info pts[2], in;
	struct fl_fence_info info;
	struct stopped_daemon d;
	int tl[2], f[2], m[2], r[2];
	bool ready[2];
	uint64_t stamp[2];

	setenv("FENCELINE_REQUEST_TIMEOUT_MS", "2000", 1);
	/* The pooled fds must still be there after the set-up, however slow (idle give-back). */
	setenv("FENCELINE_POOL_IDLE_MS", "0", 1);
	fl_daemon_disconnect();
	for (int i = 0; i < 2; i++) {
		tl[i] = new_timeline("merged-signalled");
		f[i] = new_fence(tl[i], 1, i ? "b" : "a");
		signal_to(tl[i], 1);
	}
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(fl_fence_fd_get_info(f[i], &info, &in, 1), 1);
		fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
		stamp[i] = in.timestamp_ns;
	}
	daemon_stop(&d);
	for (int i = 0; i < 2; i++) {
		r[i] = fl_fence_fd_merge(f[0], f[1], names[i], i ? FL_MERGE_MAINLINE : 0, &m[i]);
		ready[i] = r[i] == 0 && polls_ready(m[i]);
	}
	daemon_resume(&d);
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(r[i], 0);
		fl_assert(ready[i]);
		fl_assert_int_eq(fl_fence_fd_get_status(m[i]), FL_STATUS_SIGNALED);
	}
	fl_assert_int_eq(fl_fence_fd_get_info(m[0], &info, pts, 2), 2);
	fl_assert_str_eq(info.name, "plain");
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	for (int i = 0; i < 2; i++) {
		fl_assert_str_eq(pts[i].timeline_name, "merged-signalled");
		fl_assert_int_eq(pts[i].status, FL_STATUS_SIGNALED);
		fl_assert_int_eq(pts[i].value, 1);
		/* Sorted by timeline: the first made first. */
		fl_assert_int_eq(pts[i].timestamp_ns, stamp[i]);
	}
	fl_assert_int_eq(fl_fence_fd_get_info(m[1], &info, pts, 2), 1);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_str_eq(pts[0].driver_name, "stub");
	fl_assert(info.timestamp_ns != 0);
	fl_assert_int_eq(pts[0].timestamp_ns, info.timestamp_ns);
	for (int i = 0; i < 2; i++) {
		close(m[i]);
		close(f[i]);
		close(tl[i]);
	}
	unsetenv("FENCELINE_REQUEST_TIMEOUT_MS");
}

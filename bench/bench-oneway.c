/* SPDX-License-Identifier: MIT */
/*
 * Part of section daemon: the calls issue 20 wants without a wait for
 * the daemon (docs/architecture.md, "No waiting for the daemon"), against
 * what the same work costs in one process. A merge of the daemon's pending
 * fences (by their owner, and by a process that only holds them: a round
 * trip, as a one-way merge could not be exact), a fence born signalled on
 * an owned timeline, a deadline hint (both one-way); the baselines are the
 * core's merge and creation without an fd, plus one poll(0) on a fence
 * fd, which is what reading such a result costs anyway.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#include <fenceline/sw_sync.h>

#include "bench.h"

struct oneway_ctx {
	struct fl_bench_fd_pair p; /* the daemon's pending fences on two timelines: first */
	int tl; /* an owned timeline */
	struct fl_fence *fa, *fb; /* the core's, in this process */
	struct fl_timeline *itl;
};

/* The in-process merge, and the poll(0) any reader of a fence fd pays. */
static double b_inproc_merge_poll(void *arg, long ops)
{
	struct oneway_ctx *c = arg;
	struct pollfd p = { .fd = c->p.a, .events = POLLIN };
	uint64_t t0 = fl__bench_now_ns();
	struct fl_fence *m;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_fence_merge(c->fa, c->fb, "bench", 0, &m), "fl_fence_merge");
		fl_fence_unref(m);
		if (poll(&p, 1, 0) < 0)
			fl__bench_die("poll", errno);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_born_fd(void *arg, long ops)
{
	struct oneway_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	int f;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_fence_fd_create(c->tl, 1, "born", &f), "fl_fence_fd_create");
		close(f);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_inproc_born_poll(void *arg, long ops)
{
	struct oneway_ctx *c = arg;
	struct pollfd p = { .fd = c->p.a, .events = POLLIN };
	uint64_t t0 = fl__bench_now_ns();
	struct fl_fence *f;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_sw_sync_fence_create(c->itl, 1, "born", &f),
				"fl_sw_sync_fence_create");
		fl_fence_unref(f);
		if (poll(&p, 1, 0) < 0)
			fl__bench_die("poll", errno);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_deadline(void *arg, long ops)
{
	struct oneway_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		fl__bench_check(fl_fence_fd_set_deadline(c->p.a, t0 + (uint64_t)i),
				"fl_fence_fd_set_deadline");
	return fl__bench_per_op(t0, ops);
}

static double b_poll0(void *arg, long ops)
{
	struct oneway_ctx *c = arg;
	struct pollfd p = { .fd = c->p.a, .events = POLLIN };
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		if (poll(&p, 1, 0) < 0)
			fl__bench_die("poll", errno);
	return fl__bench_per_op(t0, ops);
}

/*
 * The merge in a process that only holds the fences (inherited over fork,
 * as SCM_RIGHTS would bring them): its own connection and pool.
 */
static double merge_by_holder(struct oneway_ctx *c, long ops)
{
	double v = -1;
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		fl__bench_die("pipe", errno);
	pid = fork();
	if (pid < 0)
		fl__bench_die("fork", errno);
	if (pid == 0) {
		close(p[0]);
		v = fl__bench_batch_median(fl__bench_fd_merge, c, ops);
		_exit(write(p[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &v, sizeof(v)) != sizeof(v))
		fl__bench_die("holder's merge", EIO);
	close(p[0]);
	waitpid(pid, NULL, 0);
	return v;
}

/*
 * The floor under any exact merge across processes (docs/benchmarks.md,
 * "Floors"): the kernel's errno for a bad input needs each input fd looked
 * at, and the fd returned must be checked to be still ours (the program may
 * have closed it and reused the number: issue 15), one syscall each, as no
 * Linux call tells several fds' identities at once. Telling the daemon is
 * not counted.
 */
static void merge_floor(int a, int b, int out)
{
	struct statx stx;
	struct stat st;

	if (statx(a, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_INO,
		  &stx) < 0 ||
	    statx(b, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_INO,
		  &stx) < 0 ||
	    fstat(out, &st) < 0)
		fl__bench_die("merge floor: stat", errno);
}

/*
 * One call at a time, the daemon kept in step (an info, which waits for
 * everything sent before it, every 32 calls, outside the timed window), so
 * that a sample is what the call costs its caller, not a full socket
 * buffer's back-pressure: each call beside its in-process baseline.
 */
static void call_p50(struct oneway_ctx *c, long n)
{
	static const char *const names[] = { "daemon_merge_call_p50",
					     "baseline_inproc_merge_poll0_call_p50",
					     "daemon_create_born_signaled_call_p50",
					     "baseline_inproc_create_signaled_poll0_call_p50",
					     "daemon_set_deadline_call_p50",
					     "baseline_poll0_call_p50",
					     "floor_merge_fd_checks_call_p50" };
	struct pollfd p = { .fd = c->p.a, .events = POLLIN };
	uint64_t *s[7];
	struct fl_bench_lat st;
	struct fl_fence *f;
	int fd, out[2];

	/* The floor's stand-in for the pooled fd a merge returns. */
	if (pipe2(out, O_CLOEXEC) < 0)
		fl__bench_die("pipe2", errno);
	for (int k = 0; k < 7; k++)
		if (!(s[k] = calloc((size_t)n, sizeof(uint64_t))))
			fl__bench_die("calloc", ENOMEM);
	for (long i = 0; i < n; i++) {
		uint64_t t0 = fl__bench_now_ns(), t1;

		fl__bench_check(fl_fence_fd_merge(c->p.a, c->p.b, "bench", 0, &fd),
				"fl_fence_fd_merge");
		t1 = fl__bench_now_ns();
		s[0][i] = t1 - t0;
		close(fd);
		t0 = fl__bench_now_ns();
		fl__bench_check(fl_fence_merge(c->fa, c->fb, "bench", 0, &f), "fl_fence_merge");
		fl_fence_unref(f);
		(void)poll(&p, 1, 0);
		s[1][i] = fl__bench_now_ns() - t0;
		t0 = fl__bench_now_ns();
		fl__bench_check(fl_fence_fd_create(c->tl, 1, "born", &fd), "fl_fence_fd_create");
		s[2][i] = fl__bench_now_ns() - t0;
		close(fd);
		t0 = fl__bench_now_ns();
		fl__bench_check(fl_sw_sync_fence_create(c->itl, 1, "born", &f),
				"fl_sw_sync_fence_create");
		fl_fence_unref(f);
		(void)poll(&p, 1, 0);
		s[3][i] = fl__bench_now_ns() - t0;
		t0 = fl__bench_now_ns();
		fl__bench_check(fl_fence_fd_set_deadline(c->p.a, t0), "fl_fence_fd_set_deadline");
		s[4][i] = fl__bench_now_ns() - t0;
		t0 = fl__bench_now_ns();
		(void)poll(&p, 1, 0);
		s[5][i] = fl__bench_now_ns() - t0;
		t0 = fl__bench_now_ns();
		merge_floor(c->p.a, c->p.b, out[0]);
		s[6][i] = fl__bench_now_ns() - t0;
		if (i % 32 == 31)
			fl__bench_check(fl_fence_fd_get_info(c->p.a, NULL, NULL, 0),
					"fl_fence_fd_get_info");
	}
	for (int k = 0; k < 7; k++) {
		fl__bench_lat_stats(s[k], (size_t)n, &st);
		fl__bench_out(names[k], st.p50, "ns");
		free(s[k]);
	}
	close(out[0]);
	close(out[1]);
}

void fl__bench_daemon_oneway(void)
{
	long ops = fl__bench_iters(10000, 500);
	struct fl_timeline *itl2;
	struct oneway_ctx c;
	int tl1, tl2;

	fl__bench_comment("daemon 2b: calls that do not wait for the daemon, ns per op (median of "
			  "%d batches), against the same in one process plus one poll(0)",
			  FL_BENCH_REPS);
	fl__bench_check(fl_timeline_fd_create("oneway-a", 0, &tl1), "fl_timeline_fd_create");
	fl__bench_check(fl_timeline_fd_create("oneway-b", 0, &tl2), "fl_timeline_fd_create");
	fl__bench_check(fl_timeline_fd_create("oneway-born", 0, &c.tl), "fl_timeline_fd_create");
	fl__bench_check(fl_timeline_fd_inc(c.tl, 1), "fl_timeline_fd_inc");
	fl__bench_check(fl_fence_fd_create(tl1, 1, "a", &c.p.a), "fl_fence_fd_create");
	fl__bench_check(fl_fence_fd_create(tl2, 1, "b", &c.p.b), "fl_fence_fd_create");
	fl__bench_check(fl_sw_sync_timeline_create("oneway-ia", 0, &c.itl),
			"fl_sw_sync_timeline_create");
	fl__bench_check(fl_sw_sync_timeline_create("oneway-ib", 0, &itl2),
			"fl_sw_sync_timeline_create");
	fl__bench_check(fl_sw_sync_fence_create(c.itl, 5, "a", &c.fa), "fl_sw_sync_fence_create");
	fl__bench_check(fl_sw_sync_fence_create(itl2, 5, "b", &c.fb), "fl_sw_sync_fence_create");
	fl__bench_check(fl_sw_sync_timeline_inc(c.itl, 1), "fl_sw_sync_timeline_inc");
	fl_daemon_flush();

	fl__bench_out("daemon_merge_2tl_owner", fl__bench_batch_median(fl__bench_fd_merge, &c, ops),
		      "ns");
	fl__bench_out("daemon_merge_2tl_holder", merge_by_holder(&c, ops), "ns");
	fl__bench_out("baseline_inproc_merge_poll0",
		      fl__bench_batch_median(b_inproc_merge_poll, &c, ops), "ns");
	fl__bench_out("daemon_create_born_signaled_fd", fl__bench_batch_median(b_born_fd, &c, ops),
		      "ns");
	fl__bench_out("baseline_inproc_create_signaled_poll0",
		      fl__bench_batch_median(b_inproc_born_poll, &c, ops), "ns");
	fl__bench_out("daemon_set_deadline", fl__bench_batch_median(b_deadline, &c, ops), "ns");
	fl__bench_out("baseline_poll0_pending", fl__bench_batch_median(b_poll0, &c, ops), "ns");
	call_p50(&c, fl__bench_iters(5000, 500));
	/* The issue 20 target: a merge across processes <= 3x the in-process one plus a poll(0). */
	fl__bench_ratio("ratio_daemon_merge_call_over_inproc_merge_poll0_p50",
			"daemon_merge_call_p50", "baseline_inproc_merge_poll0_call_p50");
	fl__bench_ratio("ratio_floor_merge_fd_checks_over_inproc_merge_poll0_p50",
			"floor_merge_fd_checks_call_p50", "baseline_inproc_merge_poll0_call_p50");
	fl__bench_ratio("ratio_daemon_create_born_signaled_call_over_inproc_poll0_p50",
			"daemon_create_born_signaled_call_p50",
			"baseline_inproc_create_signaled_poll0_call_p50");
	fl__bench_ratio("ratio_daemon_set_deadline_call_over_poll0_p50",
			"daemon_set_deadline_call_p50", "baseline_poll0_call_p50");
	fl__bench_ratio("ratio_daemon_merge_owner_over_inproc_merge_poll0",
			"daemon_merge_2tl_owner", "baseline_inproc_merge_poll0");
	fl__bench_ratio("ratio_daemon_merge_holder_over_inproc_merge_poll0",
			"daemon_merge_2tl_holder", "baseline_inproc_merge_poll0");
	fl__bench_ratio("ratio_daemon_create_born_signaled_over_inproc_poll0",
			"daemon_create_born_signaled_fd", "baseline_inproc_create_signaled_poll0");
	fl__bench_ratio("ratio_daemon_set_deadline_over_poll0", "daemon_set_deadline",
			"baseline_poll0_pending");
	fl__bench_ratio("ratio_daemon_merge_owner_over_roundtrip", "daemon_merge_2tl_owner",
			"baseline_seqpacket_roundtrip");
	fl__bench_ratio("ratio_daemon_create_born_signaled_over_roundtrip",
			"daemon_create_born_signaled_fd", "baseline_seqpacket_roundtrip");
	fl__bench_ratio("ratio_daemon_set_deadline_over_roundtrip", "daemon_set_deadline",
			"baseline_seqpacket_roundtrip");

	fl_fence_unref(c.fa);
	fl_fence_unref(c.fb);
	fl_timeline_unref(c.itl);
	fl_timeline_unref(itl2);
	close(c.p.a);
	close(c.p.b);
	close(c.tl);
	close(tl1);
	close(tl2);
}

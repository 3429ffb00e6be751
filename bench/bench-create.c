/* SPDX-License-Identifier: MIT */
/*
 * Section "create": what making, merging and inspecting a fence costs,
 * next to the syscalls a kernel-backed fence would need (a socketpair or an
 * eventfd per fence, and getppid as the price of one trivial syscall).
 */
#include <errno.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "bench.h"

struct create_ctx {
	struct fl_timeline *tl;
	struct fl_fence *a, *b, *merged;
};

static double b_socketpair(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();
	int sv[2];

	for (long i = 0; i < ops; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			fl__bench_die("socketpair", errno);
		close(sv[0]);
		close(sv[1]);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_eventfd(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		int fd = eventfd(0, EFD_CLOEXEC);

		if (fd < 0)
			fl__bench_die("eventfd", errno);
		close(fd);
	}
	return fl__bench_per_op(t0, ops);
}

/* The timeline sits at 0, so a fence at 1 is pending; the unref removes its
 * point again, which keeps the timeline's pending set empty between ops. */
static double b_create_nofd(void *arg, long ops)
{
	struct create_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct fl_fence *f;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_sw_sync_fence_create(c->tl, 1, "bench", &f),
				"fl_sw_sync_fence_create");
		fl_fence_unref(f);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_create_fd(void *arg, long ops)
{
	struct create_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct fl_fence *f;
	int fd;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_sw_sync_fence_create(c->tl, 1, "bench", &f),
				"fl_sw_sync_fence_create");
		fl__bench_check(fl_fence_export_fd(f, &fd), "fl_fence_export_fd");
		close(fd);
		fl_fence_unref(f);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_create_signaled(void *arg, long ops)
{
	struct create_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct fl_fence *f;

	/* Value 0 has been reached by every timeline: born signalled. */
	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_sw_sync_fence_create(c->tl, 0, "bench", &f),
				"fl_sw_sync_fence_create");
		fl_fence_unref(f);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_merge(void *arg, long ops)
{
	struct create_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct fl_fence *m;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_fence_merge(c->a, c->b, "bench", 0, &m), "fl_fence_merge");
		fl_fence_unref(m);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_info1(void *arg, long ops)
{
	struct create_ctx *c = arg;
	struct fl_sync_pt_info pts[1];
	struct fl_fence_info info;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		fl__bench_check(fl_fence_get_info(c->a, &info, pts, 1), "fl_fence_get_info");
	return fl__bench_per_op(t0, ops);
}

static double b_info2(void *arg, long ops)
{
	struct create_ctx *c = arg;
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		fl__bench_check(fl_fence_get_info(c->merged, &info, pts, 2), "fl_fence_get_info");
	return fl__bench_per_op(t0, ops);
}

/* inc(1) with nothing pending: the floor under every signal. The timeline
 * only moves forward, so the fences at 1 elsewhere use their own one. */
static double b_inc_noop(void *arg, long ops)
{
	struct fl_timeline *tl = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		fl__bench_check(fl_sw_sync_timeline_inc(tl, 1), "fl_sw_sync_timeline_inc");
	return fl__bench_per_op(t0, ops);
}

static void run(const char *name, fl_bench_batch_fn fn, void *arg, long ops)
{
	fl__bench_out(name, fl__bench_batch_median(fn, arg, ops), "ns");
}

void fl__bench_create(void)
{
	long cheap = fl__bench_iters(100000, 5000), fds = fl__bench_iters(20000, 1000);
	struct fl_timeline *tl2, *tl_inc;
	struct create_ctx c = { 0 };

	fl__bench_comment("section create: ns per operation, median of %d batches", FL_BENCH_REPS);
	fl__bench_check(fl_sw_sync_timeline_create("bench-a", 0, &c.tl),
			"fl_sw_sync_timeline_create");
	fl__bench_check(fl_sw_sync_timeline_create("bench-b", 0, &tl2),
			"fl_sw_sync_timeline_create");
	fl__bench_check(fl_sw_sync_timeline_create("bench-inc", 0, &tl_inc),
			"fl_sw_sync_timeline_create");
	fl__bench_check(fl_sw_sync_fence_create(c.tl, 1, "a", &c.a), "fl_sw_sync_fence_create");
	fl__bench_check(fl_sw_sync_fence_create(tl2, 1, "b", &c.b), "fl_sw_sync_fence_create");
	fl__bench_check(fl_fence_merge(c.a, c.b, "ab", 0, &c.merged), "fl_fence_merge");
	if (fl_fence_get_num_points(c.merged) != 2)
		fl__bench_comment("warning: merged fence has %d points, expected 2",
				  fl_fence_get_num_points(c.merged));

	run("create_fence_nofd", b_create_nofd, &c, cheap);
	run("create_fence_signaled", b_create_signaled, &c, cheap);
	run("create_fence_fd", b_create_fd, &c, fds);
	run("merge_2tl", b_merge, &c, cheap);
	run("info_1pt", b_info1, &c, cheap);
	run("info_2pt", b_info2, &c, cheap);
	run("inc_noop", b_inc_noop, tl_inc, cheap);
	run("baseline_socketpair_close", b_socketpair, NULL, fds);
	run("baseline_eventfd_close", b_eventfd, NULL, fds);

	fl__bench_ratio("ratio_socketpair_over_create_fence_nofd", "baseline_socketpair_close",
			"create_fence_nofd");
	fl__bench_ratio("ratio_eventfd_over_create_fence_nofd", "baseline_eventfd_close",
			"create_fence_nofd");
	fl__bench_ratio("ratio_create_fence_fd_over_socketpair", "create_fence_fd",
			"baseline_socketpair_close");
	fl__bench_ratio("ratio_create_fence_nofd_over_getppid", "create_fence_nofd",
			"baseline_getppid");
	fl__bench_ratio("ratio_create_fence_signaled_over_getppid", "create_fence_signaled",
			"baseline_getppid");
	fl__bench_ratio("ratio_create_fence_fd_over_getppid", "create_fence_fd",
			"baseline_getppid");
	fl__bench_ratio("ratio_merge_2tl_over_getppid", "merge_2tl", "baseline_getppid");
	fl__bench_ratio("ratio_info_1pt_over_getppid", "info_1pt", "baseline_getppid");
	fl__bench_ratio("ratio_info_2pt_over_getppid", "info_2pt", "baseline_getppid");
	fl__bench_ratio("ratio_inc_noop_over_getppid", "inc_noop", "baseline_getppid");
	fl__bench_ratio("ratio_socketpair_over_getppid", "baseline_socketpair_close",
			"baseline_getppid");

	fl_fence_unref(c.merged);
	fl_fence_unref(c.a);
	fl_fence_unref(c.b);
	fl_timeline_unref(c.tl);
	fl_timeline_unref(tl2);
	fl_timeline_unref(tl_inc);
}

/* SPDX-License-Identifier: MIT */
/*
 * Section "inc": what fl_sw_sync_timeline_inc() costs as the number of
 * pending points grows. A signal that completes k of n pending points should
 * cost O(k log n): (a) signalling exactly one point stays nearly flat from
 * n = 1 to n = 100000, and (b) the per-point cost of signalling all n stays
 * nearly flat too. A linear scan of the pending set would instead make (a)
 * grow with n.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <fenceline/fenceline.h>

#include "bench.h"

static const long sizes[] = { 1, 1000, 100000 };
#define NR_SIZES (sizeof(sizes) / sizeof(sizes[0]))

static void check(int r, const char *what)
{
	if (r < 0)
		fl__bench_die(what, r);
}

static struct fl_fence **alloc_fences(long n)
{
	struct fl_fence **f = calloc((size_t)n, sizeof(*f));

	if (!f)
		fl__bench_die("calloc", ENOMEM);
	return f;
}

/* Fences at @base+1 .. @base+@n on @tl, which must stand at @base. */
static void prefill(struct fl_timeline *tl, struct fl_fence **f, long n, uint64_t base)
{
	for (long i = 0; i < n; i++)
		check(fl_sw_sync_fence_create(tl, base + (uint64_t)i + 1, "bench", &f[i]),
		      "fl_sw_sync_fence_create");
}

static void unref_all(struct fl_fence **f, long n)
{
	for (long i = 0; i < n; i++)
		f[i] = fl_fence_unref(f[i]);
}

static double clock_pair_p50(long samples)
{
	uint64_t *s = calloc((size_t)samples, sizeof(*s));
	struct fl_bench_lat lat;

	if (!s)
		fl__bench_die("calloc", ENOMEM);
	for (long i = 0; i < samples; i++) {
		uint64_t t0 = fl__bench_now_ns();

		s[i] = fl__bench_now_ns() - t0;
	}
	fl__bench_lat_stats(s, (size_t)samples, &lat);
	free(s);
	return lat.p50;
}

/*
 * (a) Exactly @n points pending before every inc(1), which signals the
 * earliest. Keeping the count at @n needs a new point after each inc, which
 * must not be timed, so this figure is per sample (one inc between two
 * clock reads, the clock pair's own median subtracted) rather than a batch.
 */
static void signal_one(long n, long samples, double overhead)
{
	struct fl_fence **ring = alloc_fences(n);
	uint64_t *s = calloc((size_t)samples, sizeof(*s));
	long warmup = samples / 10, head = 0, bad = 0;
	uint64_t next = (uint64_t)n + 1;
	struct fl_timeline *tl;
	struct fl_bench_lat lat;

	if (!s)
		fl__bench_die("calloc", ENOMEM);
	check(fl_sw_sync_timeline_create("bench-inc1", 0, &tl), "fl_sw_sync_timeline_create");
	prefill(tl, ring, n, 0);
	for (long i = -warmup; i < samples; i++) {
		uint64_t t0 = fl__bench_now_ns(), t1;

		check(fl_sw_sync_timeline_inc(tl, 1), "fl_sw_sync_timeline_inc");
		t1 = fl__bench_now_ns();
		if (i >= 0)
			s[i] = t1 - t0;
		if (fl_fence_get_status(ring[head]) != FL_STATUS_SIGNALED)
			bad++;
		fl_fence_unref(ring[head]);
		check(fl_sw_sync_fence_create(tl, next++, "bench", &ring[head]),
		      "fl_sw_sync_fence_create");
		head = (head + 1) % n;
	}
	if (bad)
		fl__bench_comment("warning: %ld incs did not signal the earliest point", bad);
	fl__bench_lat_stats(s, (size_t)samples, &lat);
	fl__bench_outf(lat.p50 - overhead, "ns", "inc1_signal1_pending%ld_p50", n);
	fl__bench_outf(lat.p99 - overhead, "ns", "inc1_signal1_pending%ld_p99", n);
	unref_all(ring, n);
	fl_timeline_unref(tl);
	free(ring);
	free(s);
}

struct drain_ctx {
	struct fl_timeline *tl;
	uint64_t base;
	double overhead;
	long n;
};

/* Kernel-comparable drain: @ops points pending, then @ops inc(1) calls in
 * one timed batch, so the pending count falls from @ops to 0. */
static double b_drain(void *arg, long ops)
{
	struct drain_ctx *c = arg;
	struct fl_fence **f = alloc_fences(ops);
	uint64_t t0;
	double r;

	prefill(c->tl, f, ops, c->base);
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++)
		check(fl_sw_sync_timeline_inc(c->tl, 1), "fl_sw_sync_timeline_inc");
	r = (double)(fl__bench_now_ns() - t0) / (double)ops;
	c->base += (uint64_t)ops;
	unref_all(f, ops);
	free(f);
	return r;
}

/* (b) @c->n points pending, one inc(n) signals them all; the batch is that
 * one call, repeated until @ops points have been signalled. */
static double b_signal_all(void *arg, long ops)
{
	struct drain_ctx *c = arg;
	long calls = ops / c->n > 0 ? ops / c->n : 1;
	struct fl_fence **f = alloc_fences(c->n);
	uint64_t total = 0;

	for (long k = 0; k < calls; k++) {
		uint64_t t0;

		prefill(c->tl, f, c->n, c->base);
		t0 = fl__bench_now_ns();
		check(fl_sw_sync_timeline_inc(c->tl, (uint64_t)c->n), "fl_sw_sync_timeline_inc");
		total += fl__bench_now_ns() - t0;
		c->base += (uint64_t)c->n;
		unref_all(f, c->n);
	}
	free(f);
	return ((double)total - c->overhead * (double)calls) / ((double)calls * (double)c->n);
}

void fl__bench_inc(void)
{
	long samples = fl__bench_iters(20000, 2000), points = fl__bench_iters(100000, 10000);
	double overhead = clock_pair_p50(samples);
	char num[64], den[64], name[96];

	fl__bench_comment("section inc: (a) per-sample p50/p99 of one inc(1) signalling 1 of N "
			  "(clock pair subtracted), (b) per point of one inc(N) signalling all N");
	fl__bench_out("clock_pair_overhead_p50", overhead, "ns");
	for (size_t i = 0; i < NR_SIZES; i++)
		signal_one(sizes[i], samples, overhead);
	for (size_t i = 0; i < NR_SIZES; i++) {
		struct drain_ctx c = { .overhead = overhead, .n = sizes[i] };

		check(fl_sw_sync_timeline_create("bench-all", 0, &c.tl),
		      "fl_sw_sync_timeline_create");
		fl__bench_outf(fl__bench_batch_median(b_signal_all, &c, points), "ns",
			       "inc_signal_all%ld_per_point", sizes[i]);
		fl_timeline_unref(c.tl);
	}
	for (size_t i = 1; i < NR_SIZES; i++) {
		struct drain_ctx c = { .overhead = overhead };

		check(fl_sw_sync_timeline_create("bench-drain", 0, &c.tl),
		      "fl_sw_sync_timeline_create");
		fl__bench_outf(fl__bench_batch_median(b_drain, &c, sizes[i]), "ns",
			       "inc1_drain_pending%ld", sizes[i]);
		fl_timeline_unref(c.tl);
	}

	fl__bench_comment("a scan of the pending set would push the pending100000/pending1 ratio "
			  "towards 100000; O(log n) keeps it a small constant");
	for (size_t i = 1; i < NR_SIZES; i++) {
		snprintf(num, sizeof(num), "inc1_signal1_pending%ld_p50", sizes[i]);
		snprintf(den, sizeof(den), "inc1_signal1_pending%ld_p50", sizes[0]);
		snprintf(name, sizeof(name), "ratio_signal1_pending%ld_over_pending1", sizes[i]);
		fl__bench_ratio(name, num, den);
	}
	for (size_t i = 1; i < NR_SIZES; i++) {
		snprintf(num, sizeof(num), "inc_signal_all%ld_per_point", sizes[i]);
		snprintf(den, sizeof(den), "inc_signal_all%ld_per_point", sizes[0]);
		snprintf(name, sizeof(name), "ratio_signal_all%ld_over_all1_per_point", sizes[i]);
		fl__bench_ratio(name, num, den);
	}
	fl__bench_ratio("ratio_inc1_drain_pending1000_over_getppid", "inc1_drain_pending1000",
			"baseline_getppid");
	fl__bench_ratio("ratio_signal_all1000_per_point_over_getppid",
			"inc_signal_all1000_per_point", "baseline_getppid");
}

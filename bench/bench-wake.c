/* SPDX-License-Identifier: MIT */
/*
 * Section "wake": time from the signalling call to the moment a blocked
 * waiter runs again. Fence fds are compared with an eventfd (the cheapest
 * pollable kernel object), fl_fence_wait() with a pthread condition
 * variable. The signaller only signals once the kernel shows the waiter
 * asleep (state S in /proc/self/task/<tid>/stat), so every sample is a real
 * wake-up and not a race won by the waiter.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "bench.h"

enum wake_kind { WAKE_FENCE_POLL, WAKE_EVENTFD_POLL, WAKE_FENCE_WAIT, WAKE_CONDVAR };

static const char *const kind_names[] = {
	[WAKE_FENCE_POLL] = "fence_poll",
	[WAKE_EVENTFD_POLL] = "eventfd_poll",
	[WAKE_FENCE_WAIT] = "fence_wait",
	[WAKE_CONDVAR] = "condvar",
};

/* Long enough never to fire on a healthy run; a sample that hits it is
 * counted as bad instead of hanging the benchmark. */
#define WAKE_TIMEOUT_MS 10000

struct wake_ctx {
	enum wake_kind kind;
	int waiter_cpu;
	long n;
	_Atomic long posted, ready, done;
	_Atomic int tid;
	/* The object of the current sample, published by @posted. */
	int fd;
	struct fl_fence *fence;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	long flag;
	/* Wake time of each sample, 0 if the wait failed. */
	uint64_t *t1;
};

static void spin_until(_Atomic long *v, long want)
{
	while (atomic_load(v) < want)
		sched_yield();
}

static int cond_wait_for(struct wake_ctx *c, long want)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAKE_TIMEOUT_MS / 1000;
	while (c->flag < want && r == 0)
		r = pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	return c->flag >= want;
}

static void *waiter(void *arg)
{
	struct wake_ctx *c = arg;
	int r = fl__bench_pin(c->waiter_cpu);

	if (r < 0)
		fl__bench_die("pin waiter", r);
	atomic_store(&c->tid, (int)gettid());
	for (long i = 0; i < c->n; i++) {
		struct pollfd pfd = { .events = POLLIN };
		uint64_t t = 0, v;
		int ok = 0;

		spin_until(&c->posted, i + 1);
		switch (c->kind) {
		case WAKE_FENCE_POLL:
		case WAKE_EVENTFD_POLL:
			pfd.fd = c->fd;
			atomic_store(&c->ready, i + 1);
			ok = poll(&pfd, 1, WAKE_TIMEOUT_MS) == 1 && (pfd.revents & POLLIN);
			t = fl__bench_now_ns();
			if (c->kind == WAKE_EVENTFD_POLL && read(c->fd, &v, sizeof(v)) != sizeof(v))
				ok = 0;
			break;
		case WAKE_FENCE_WAIT:
			atomic_store(&c->ready, i + 1);
			ok = fl_fence_wait(c->fence, WAKE_TIMEOUT_MS) == 0;
			t = fl__bench_now_ns();
			break;
		case WAKE_CONDVAR:
			pthread_mutex_lock(&c->mu);
			atomic_store(&c->ready, i + 1);
			ok = cond_wait_for(c, i + 1);
			t = fl__bench_now_ns();
			pthread_mutex_unlock(&c->mu);
			break;
		}
		c->t1[i] = ok ? t : 0;
		atomic_store(&c->done, i + 1);
	}
	return NULL;
}

static void check(int r, const char *what)
{
	if (r < 0)
		fl__bench_die(what, r);
}

/* Returns 0, or -ENODEV if the CPUs needed are not available. */
static int wake_case(enum wake_kind kind, int same_cpu, long samples)
{
	const char *where = same_cpu ? "same" : "cross";
	long warmup = samples / 20, n = samples + warmup, m = 0, bad = 0, awake = 0;
	struct wake_ctx c = { .kind = kind, .waiter_cpu = same_cpu ? 0 : 1, .n = n };
	uint64_t *lat = calloc((size_t)samples, sizeof(*lat));
	struct fl_timeline *tl = NULL;
	struct fl_bench_lat st;
	pthread_t th;
	int statfd, r;

	c.t1 = calloc((size_t)n, sizeof(*c.t1));
	if (!lat || !c.t1)
		fl__bench_die("calloc", ENOMEM);
	if (!same_cpu && fl__bench_nr_cpus() < 2) {
		free(lat);
		free(c.t1);
		return -ENODEV;
	}
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	c.fd = -1;
	if (kind == WAKE_EVENTFD_POLL) {
		c.fd = eventfd(0, EFD_CLOEXEC);
		if (c.fd < 0)
			fl__bench_die("eventfd", errno);
	}
	if (kind == WAKE_FENCE_POLL || kind == WAKE_FENCE_WAIT)
		check(fl_sw_sync_timeline_create("bench-wake", 0, &tl),
		      "fl_sw_sync_timeline_create");

	r = fl__bench_pin(0);
	if (r < 0)
		fl__bench_die("pin signaller", r);
	r = pthread_create(&th, NULL, waiter, &c);
	if (r)
		fl__bench_die("pthread_create", r);
	while (atomic_load(&c.tid) == 0)
		sched_yield();
	statfd = fl__bench_open_task_stat(atomic_load(&c.tid));
	if (statfd < 0)
		fl__bench_die("open /proc/self/task/<tid>/stat", statfd);

	for (long i = 0; i < n; i++) {
		uint64_t one = 1, t0;

		/* Making the fence is set-up, outside the timed window. */
		if (kind == WAKE_FENCE_POLL || kind == WAKE_FENCE_WAIT) {
			check(fl_sw_sync_fence_create(tl, (uint64_t)i + 1, "wake", &c.fence),
			      "fl_sw_sync_fence_create");
			if (kind == WAKE_FENCE_POLL)
				check(fl_fence_export_fd(c.fence, &c.fd), "fl_fence_export_fd");
		}
		atomic_store(&c.posted, i + 1);
		spin_until(&c.ready, i + 1);
		if (fl__bench_wait_asleep(statfd, 1000000000u) < 0)
			awake++;

		t0 = fl__bench_now_ns();
		switch (kind) {
		case WAKE_FENCE_POLL:
		case WAKE_FENCE_WAIT:
			check(fl_sw_sync_timeline_inc(tl, 1), "fl_sw_sync_timeline_inc");
			break;
		case WAKE_EVENTFD_POLL:
			if (write(c.fd, &one, sizeof(one)) != sizeof(one))
				fl__bench_die("eventfd write", errno);
			break;
		case WAKE_CONDVAR:
			/* Signalling after the unlock spares the woken waiter
			 * from blocking again on the mutex: the best case of
			 * the baseline. */
			pthread_mutex_lock(&c.mu);
			c.flag = i + 1;
			pthread_mutex_unlock(&c.mu);
			pthread_cond_signal(&c.cv);
			break;
		}
		spin_until(&c.done, i + 1);

		if (i >= warmup) {
			if (c.t1[i] == 0 || c.t1[i] < t0)
				bad++;
			else
				lat[m++] = c.t1[i] - t0;
		}
		if (kind == WAKE_FENCE_POLL) {
			close(c.fd);
			c.fd = -1;
		}
		c.fence = fl_fence_unref(c.fence);
	}
	pthread_join(th, NULL);
	fl__bench_unpin();
	close(statfd);
	if (c.fd >= 0)
		close(c.fd);
	fl_timeline_unref(tl);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);

	if (bad || awake)
		fl__bench_comment(
			"warning: wake_%s_%s: %ld failed waits, %ld signals sent before the "
			"waiter was seen asleep",
			kind_names[kind], where, bad, awake);
	fl__bench_lat_stats(lat, (size_t)m, &st);
	fl__bench_outf(st.min, "ns", "wake_%s_%s_min", kind_names[kind], where);
	fl__bench_outf(st.p50, "ns", "wake_%s_%s_p50", kind_names[kind], where);
	fl__bench_outf(st.p99, "ns", "wake_%s_%s_p99", kind_names[kind], where);
	fl__bench_outf((double)m, "samples", "wake_%s_%s_samples", kind_names[kind], where);
	free(lat);
	free(c.t1);
	return 0;
}

static void ratios(const char *where)
{
	static const char *const stats[] = { "p50", "p99" };
	char name[96], num[64], den[64];

	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "ratio_wake_fence_over_eventfd_%s_%s", where,
			 stats[i]);
		snprintf(num, sizeof(num), "wake_fence_poll_%s_%s", where, stats[i]);
		snprintf(den, sizeof(den), "wake_eventfd_poll_%s_%s", where, stats[i]);
		fl__bench_ratio(name, num, den);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "ratio_wake_wait_over_condvar_%s_%s", where, stats[i]);
		snprintf(num, sizeof(num), "wake_fence_wait_%s_%s", where, stats[i]);
		snprintf(den, sizeof(den), "wake_condvar_%s_%s", where, stats[i]);
		fl__bench_ratio(name, num, den);
	}
}

void fl__bench_wake(void)
{
	long samples = fl__bench_iters(10000, 1000);

	fl__bench_comment("section wake: signal -> waiter running, ns per sample; cross = waiter "
			  "and signaller on different CPUs, same = both on one CPU");
	for (int same = 0; same <= 1; same++) {
		const char *where = same ? "same" : "cross";
		int skipped = 0;

		for (int k = WAKE_FENCE_POLL; k <= WAKE_CONDVAR; k++)
			if (wake_case((enum wake_kind)k, same, samples) == -ENODEV)
				skipped = 1;
		if (skipped)
			fl__bench_comment("skip: wake %s needs 2 usable CPUs", where);
		else
			ratios(where);
	}
}

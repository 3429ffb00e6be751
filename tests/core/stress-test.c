/* SPDX-License-Identifier: MIT */
/*
 * Multi-threaded stress: signal ordering seen by concurrent observers,
 * thread ping-pong through timelines, random merges checked against a
 * model, fd churn and callback churn racing signals.
 *
 * Sizes are chosen so that each test takes a few seconds at most on two
 * cores under TSan. Random choices come from fixed seeds, so a failure
 * replays the same operations (though not the same interleaving).
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

typedef void *(*thread_main_t)(void *);

static uint64_t rng_next(uint64_t *state)
{
	/* xorshift64*: good enough to pick timelines and values. */
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static unsigned int rng_below(uint64_t *state, unsigned int bound)
{
	return (unsigned int)(rng_next(state) >> 32) % bound;
}

static void join_all(pthread_t *threads, int n)
{
	for (int i = 0; i < n; i++)
		fl_assert_int_eq(pthread_join(threads[i], NULL), 0);
}

/*
 * Several producers increment one timeline by 1 while waiters walk its
 * fences in value order and scanners probe random fences: whoever sees a
 * fence signalled must see every earlier fence signalled, and the counter
 * at or past it.
 */
enum { ORDER_FENCES = 3000, ORDER_PRODUCERS = 3, ORDER_WAITERS = 2, ORDER_SCANNERS = 2 };

struct order {
	struct fl_timeline *tl;
	struct fl_fence *fences[ORDER_FENCES + 1]; /* index = value; [0] unused */
	atomic_int incs_left;
	atomic_int waiters_done;
};

struct order_thread {
	struct order *o;
	uint64_t seed;
};

static void expect_earlier_signaled(struct order *o, uint64_t *rng, unsigned int value)
{
	fl_assert_int_ge(fl_test_timeline_value(o->tl), value);
	if (value > 1) {
		unsigned int earlier = 1 + rng_below(rng, value - 1);

		fl_assert_int_eq(fl_fence_get_status(o->fences[value - 1]), FL_STATUS_SIGNALED);
		fl_assert_int_eq(fl_fence_get_status(o->fences[earlier]), FL_STATUS_SIGNALED);
	}
}

static void *order_producer(void *arg)
{
	struct order_thread *t = arg;

	while (atomic_fetch_sub(&t->o->incs_left, 1) > 0) {
		fl_assert_int_eq(fl_sw_sync_timeline_inc(t->o->tl, 1), 0);
		if (rng_below(&t->seed, 16) == 0)
			sched_yield();
	}
	return NULL;
}

static void *order_waiter(void *arg)
{
	struct order_thread *t = arg;

	for (unsigned int v = 1; v <= ORDER_FENCES; v++) {
		fl_assert_int_eq(fl_fence_wait(t->o->fences[v], -1), 0);
		expect_earlier_signaled(t->o, &t->seed, v);
	}
	atomic_fetch_add(&t->o->waiters_done, 1);
	return NULL;
}

static void *order_scanner(void *arg)
{
	struct order_thread *t = arg;

	while (atomic_load(&t->o->waiters_done) < ORDER_WAITERS) {
		unsigned int v = 1 + rng_below(&t->seed, ORDER_FENCES);
		int status = fl_fence_get_status(t->o->fences[v]);

		fl_assert(status == FL_STATUS_ACTIVE || status == FL_STATUS_SIGNALED);
		if (status == FL_STATUS_SIGNALED)
			expect_earlier_signaled(t->o, &t->seed, v);
	}
	return NULL;
}

static thread_main_t order_role(int i)
{
	if (i < ORDER_WAITERS)
		return order_waiter;
	if (i < ORDER_WAITERS + ORDER_SCANNERS)
		return order_scanner;
	return order_producer;
}

FL_TEST(concurrent_observers_see_points_signal_in_value_order)
{
	enum { N = ORDER_PRODUCERS + ORDER_WAITERS + ORDER_SCANNERS };
	struct order *o = calloc(1, sizeof(*o));
	struct order_thread args[N];
	pthread_t threads[N];

	fl_assert(o);
	o->tl = fl_test_timeline_new("order");
	atomic_init(&o->incs_left, ORDER_FENCES);
	atomic_init(&o->waiters_done, 0);
	for (unsigned int v = 1; v <= ORDER_FENCES; v++)
		o->fences[v] = fl_test_fence_new(o->tl, v, NULL);

	for (int i = 0; i < N; i++) {
		thread_main_t fn = order_role(i);

		args[i] = (struct order_thread){ .o = o, .seed = 0x9e3779b97f4a7c15ull * (i + 1) };
		fl_assert_int_eq(pthread_create(&threads[i], NULL, fn, &args[i]), 0);
	}
	join_all(threads, N);
	fl_assert_int_eq(fl_test_timeline_value(o->tl), ORDER_FENCES);

	for (unsigned int v = 1; v <= ORDER_FENCES; v++)
		fl_fence_unref(o->fences[v]);
	fl_timeline_unref(o->tl);
	free(o);
}

/*
 * The kernel selftest's two threads on one timeline: thread t waits for
 * 2i + t, checks and bumps a plain shared counter, then increments the
 * timeline, handing over to the other thread. The counter is not atomic:
 * only the fences order the accesses.
 */
enum { SHARED_ROUNDS = 20000 };

struct shared {
	struct fl_timeline *tl;
	unsigned int counter;
};

struct shared_thread {
	struct shared *s;
	unsigned int id;
};

static void *shared_main(void *arg)
{
	struct shared_thread *t = arg;

	for (unsigned int i = 0; i < SHARED_ROUNDS; i++) {
		unsigned int value = 2 * i + t->id;
		struct fl_fence *fence = fl_test_fence_new(t->s->tl, value, NULL);

		fl_assert_int_eq(fl_fence_wait(fence, -1), 0);
		fl_assert_int_eq(t->s->counter, value);
		t->s->counter++;
		fl_assert_int_eq(fl_sw_sync_timeline_inc(t->s->tl, 1), 0);
		fl_fence_unref(fence);
	}
	return NULL;
}

FL_TEST(two_threads_take_turns_on_one_timeline)
{
	struct shared s = { .tl = fl_test_timeline_new("shared") };
	struct shared_thread args[2] = { { &s, 0 }, { &s, 1 } };
	pthread_t threads[2];

	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_create(&threads[i], NULL, shared_main, &args[i]), 0);
	join_all(threads, 2);
	fl_assert_int_eq(s.counter, 2 * SHARED_ROUNDS);
	fl_assert_int_eq(fl_test_timeline_value(s.tl), 2 * SHARED_ROUNDS);

	fl_timeline_unref(s.tl);
}

/*
 * Ping-pong through two timelines: the pinger owns "ping" and waits on
 * "pong", the ponger the reverse. Each side checks the ball the other one
 * wrote before signalling.
 */
enum { PING_ROUNDS = 20000 };

struct ping_pong {
	struct fl_timeline *ping, *pong;
	uint64_t ball;
};

static void *ponger_main(void *arg)
{
	struct ping_pong *pp = arg;

	for (uint64_t i = 1; i <= PING_ROUNDS; i++) {
		struct fl_fence *fence = fl_test_fence_new(pp->ping, i, NULL);

		fl_assert_int_eq(fl_fence_wait(fence, -1), 0);
		fl_assert_int_eq(pp->ball, 2 * i - 1);
		pp->ball = 2 * i;
		fl_assert_int_eq(fl_sw_sync_timeline_inc(pp->pong, 1), 0);
		fl_fence_unref(fence);
	}
	return NULL;
}

FL_TEST(ping_pong_between_two_threads_on_two_timelines)
{
	struct ping_pong pp = { .ping = fl_test_timeline_new("ping"),
				.pong = fl_test_timeline_new("pong") };
	pthread_t ponger;

	fl_assert_int_eq(pthread_create(&ponger, NULL, ponger_main, &pp), 0);
	for (uint64_t i = 1; i <= PING_ROUNDS; i++) {
		struct fl_fence *fence = fl_test_fence_new(pp.pong, i, NULL);

		pp.ball = 2 * i - 1;
		fl_assert_int_eq(fl_sw_sync_timeline_inc(pp.ping, 1), 0);
		fl_assert_int_eq(fl_fence_wait(fence, -1), 0);
		fl_assert_int_eq(pp.ball, 2 * i);
		fl_fence_unref(fence);
	}
	fl_assert_int_eq(pthread_join(ponger, NULL), 0);

	fl_timeline_unref(pp.pong);
	fl_timeline_unref(pp.ping);
}

/*
 * Random merges by several threads across 16 timelines, checked against a
 * model: a merged fence holds one point per member timeline, at the
 * largest value merged in for it, and is signalled iff every member's
 * counter has reached that value.
 */
enum {
	MERGE_TIMELINES = 16,
	MERGE_THREADS = 4,
	MERGE_FENCES = 48, /* per thread */
	MERGE_MAX_VALUE = 200,
	MERGE_EARLY_INCS = 400,
	MERGE_ROUNDS = 6,
};

struct model_fence {
	struct fl_fence *fence;
	uint64_t max[MERGE_TIMELINES]; /* 0: not a member */
	bool wait_all;
};

struct merge_world {
	struct fl_timeline *tls[MERGE_TIMELINES];
	uint64_t ids[MERGE_TIMELINES];
	struct model_fence fences[MERGE_THREADS][MERGE_FENCES];
	atomic_int incs_left;
};

struct merge_thread {
	struct merge_world *w;
	int id;
	uint64_t seed;
};

static int timeline_index(struct merge_world *w, uint64_t id)
{
	for (int t = 0; t < MERGE_TIMELINES; t++)
		if (w->ids[t] == id)
			return t;
	return -1;
}

/* Valid at any time: a fence seen signalled has all its members' counters
 * past their points (the counter moves before points signal). */
static void check_signaled_implies_counters(struct merge_world *w, struct model_fence *m)
{
	if (fl_fence_get_status(m->fence) != FL_STATUS_SIGNALED)
		return;
	for (int t = 0; t < MERGE_TIMELINES; t++)
		if (m->max[t])
			fl_assert_int_ge(fl_test_timeline_value(w->tls[t]), m->max[t]);
}

/* Only valid while no thread increments. */
static void check_exact(struct merge_world *w, struct model_fence *m, const uint64_t *counters)
{
	struct fl_sync_pt_info points[MERGE_TIMELINES];
	struct fl_fence_info info;
	int members = 0, expect = FL_STATUS_SIGNALED;

	for (int t = 0; t < MERGE_TIMELINES; t++) {
		if (!m->max[t])
			continue;
		members++;
		if (counters[t] < m->max[t])
			expect = FL_STATUS_ACTIVE;
	}
	fl_assert_int_eq(fl_fence_get_status(m->fence), expect);
	fl_assert_int_eq(fl_fence_get_num_points(m->fence), members);
	fl_assert_int_eq(fl_fence_get_info(m->fence, &info, points, MERGE_TIMELINES), members);
	fl_assert_int_eq(info.status, expect);
	fl_assert_int_eq(info.num_points, members);
	for (int i = 0; i < members; i++) {
		int t = timeline_index(w, points[i].timeline_id);

		fl_assert(t >= 0);
		fl_assert_int_eq(points[i].value, m->max[t]);
		fl_assert_int_eq(points[i].status, counters[t] >= m->max[t]);
		if (i > 0)
			fl_assert(points[i - 1].timeline_id < points[i].timeline_id);
	}
}

static void check_all_exact(struct merge_world *w)
{
	uint64_t counters[MERGE_TIMELINES];

	for (int t = 0; t < MERGE_TIMELINES; t++)
		counters[t] = fl_test_timeline_value(w->tls[t]);
	for (int i = 0; i < MERGE_THREADS; i++)
		for (int k = 0; k < MERGE_FENCES; k++)
			check_exact(w, &w->fences[i][k], counters);
}

static void merge_into(struct model_fence *acc, struct fl_fence *fence, const uint64_t *max,
		       unsigned int flags)
{
	struct fl_fence *merged = NULL;

	fl_assert_int_eq(fl_fence_merge(acc->fence, fence, NULL, flags, &merged), 0);
	fl_fence_unref(acc->fence);
	acc->fence = merged;
	for (int t = 0; t < MERGE_TIMELINES; t++)
		if (max[t] > acc->max[t])
			acc->max[t] = max[t];
}

static void *merge_builder(void *arg)
{
	struct merge_thread *mt = arg;
	struct merge_world *w = mt->w;

	for (int k = 0; k < MERGE_FENCES; k++) {
		struct model_fence *acc = &w->fences[mt->id][k];
		unsigned int steps = 1 + rng_below(&mt->seed, 8);

		for (unsigned int s = 0; s < steps; s++) {
			unsigned int flags = rng_below(&mt->seed, 4) ? 0 : FL_MERGE_WAIT_ALL;
			uint64_t max[MERGE_TIMELINES] = { 0 };
			int t = (int)rng_below(&mt->seed, MERGE_TIMELINES);
			struct fl_fence *fence;

			max[t] = 1 + rng_below(&mt->seed, MERGE_MAX_VALUE);
			fence = fl_test_fence_new(w->tls[t], max[t], NULL);
			if (!acc->fence) {
				acc->fence = fence;
				memcpy(acc->max, max, sizeof(max));
				continue;
			}
			merge_into(acc, fence, max, flags);
			fl_fence_unref(fence);

			/* Fold in one of our earlier merged fences now and
			 * then, so that merges of merges are covered. */
			if (k > 0 && rng_below(&mt->seed, 3) == 0) {
				struct model_fence *old =
					&w->fences[mt->id][rng_below(&mt->seed, k)];

				merge_into(acc, old->fence, old->max, flags);
			}
		}
		check_signaled_implies_counters(w, acc);
	}
	return NULL;
}

static void *merge_incrementer(void *arg)
{
	struct merge_thread *mt = arg;

	while (atomic_fetch_sub(&mt->w->incs_left, 1) > 0) {
		unsigned int t = rng_below(&mt->seed, MERGE_TIMELINES);

		fl_assert_int_eq(
			fl_sw_sync_timeline_inc(mt->w->tls[t], 1 + rng_below(&mt->seed, 3)), 0);
	}
	return NULL;
}

static void *merge_checker(void *arg)
{
	struct merge_thread *mt = arg;
	struct merge_world *w = mt->w;

	while (atomic_load(&w->incs_left) > 0) {
		int i = (int)rng_below(&mt->seed, MERGE_THREADS);
		int k = (int)rng_below(&mt->seed, MERGE_FENCES);

		check_signaled_implies_counters(w, &w->fences[i][k]);
	}
	return NULL;
}

/* Runs @n threads of @fn plus an incrementer; the checker reads the model,
 * so it only runs while no builder writes it. */
static void run_merge_threads(struct merge_world *w, thread_main_t fn, int n, int incs,
			      uint64_t seed)
{
	struct merge_thread args[MERGE_THREADS + 2];
	pthread_t threads[MERGE_THREADS + 2];
	int total = fn == merge_builder ? n + 1 : n + 2;

	atomic_store(&w->incs_left, incs);
	for (int i = 0; i < total; i++) {
		thread_main_t f = i < n ? fn : i == n ? merge_incrementer : merge_checker;

		args[i] = (struct merge_thread){ .w = w, .id = i, .seed = seed * (i + 3) };
		fl_assert_int_eq(pthread_create(&threads[i], NULL, f, &args[i]), 0);
	}
	join_all(threads, total);
}

FL_TEST(random_concurrent_merges_match_the_model)
{
	struct merge_world *w = calloc(1, sizeof(*w));
	uint64_t counters[MERGE_TIMELINES];

	fl_assert(w);
	for (int t = 0; t < MERGE_TIMELINES; t++) {
		w->tls[t] = fl_test_timeline_new("merge");
		w->ids[t] = fl_timeline_get_id(w->tls[t]);
	}

	/* Build the fences while the timelines move under them. */
	run_merge_threads(w, merge_builder, MERGE_THREADS, MERGE_EARLY_INCS, 0x1234567ull);
	check_all_exact(w);

	/* Then advance, checking on the fly and exactly after each round. */
	for (int round = 0; round < MERGE_ROUNDS; round++) {
		run_merge_threads(w, merge_incrementer, 2, 120, 0x7654321ull + round);
		check_all_exact(w);
	}

	/* Timeline death fails exactly the fences that were still pending. */
	for (int t = 0; t < MERGE_TIMELINES; t++) {
		counters[t] = fl_test_timeline_value(w->tls[t]);
		fl_timeline_kill(w->tls[t]);
	}
	for (int i = 0; i < MERGE_THREADS; i++) {
		for (int k = 0; k < MERGE_FENCES; k++) {
			struct model_fence *m = &w->fences[i][k];
			int expect = FL_STATUS_SIGNALED;

			for (int t = 0; t < MERGE_TIMELINES; t++)
				if (m->max[t] > counters[t])
					expect = -ENOENT;
			fl_assert_int_eq(fl_fence_get_status(m->fence), expect);
			fl_assert_int_eq(fl_fence_wait(m->fence, 0), expect == 1 ? 0 : expect);
			fl_fence_unref(m->fence);
		}
	}
	free(w);
}

/*
 * Four threads create, export, look up, poll and close fence fds while one
 * of them keeps the timeline moving; afterwards no fd is left behind.
 */
enum { FD_THREADS = 4, FD_ROUNDS = 1500 };

struct fd_churn {
	struct fl_timeline *tl;
	uint64_t seed;
	bool incs;
};

static void *fd_churn_main(void *arg)
{
	struct fd_churn *c = arg;

	for (int i = 0; i < FD_ROUNDS; i++) {
		/* An offset of 0 gives a fence signalled at birth. */
		unsigned int offset = rng_below(&c->seed, 4);
		struct fl_fence *fence =
			fl_test_fence_new(c->tl, fl_test_timeline_value(c->tl) + offset, NULL);
		struct fl_fence *found = NULL;
		struct pollfd pfd = { .events = POLLIN };

		fl_assert_int_eq(fl_fence_export_fd(fence, &pfd.fd), 0);
		fl_assert(fcntl(pfd.fd, F_GETFD) & FD_CLOEXEC);
		fl_assert_int_eq(fl_fence_from_fd(pfd.fd, &found), 0);
		fl_assert(found == fence);
		found = fl_fence_unref(found);
		if (rng_below(&c->seed, 4) == 0)
			fl_assert(fl_fence_get_fd(fence) >= 0);

		/* Another thread's inc may have set the status and not yet
		 * written the fd, so only a readable fd implies a status. */
		fl_assert(poll(&pfd, 1, 0) >= 0);
		if (offset == 0)
			fl_assert_int_eq(pfd.revents, POLLIN | POLLHUP);
		if (pfd.revents & POLLIN) {
			fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_SIGNALED);
			fl_assert_int_eq(fl_fence_fd_get_status(pfd.fd), FL_STATUS_SIGNALED);
		}
		close(pfd.fd);
		fl_fence_unref(fence);
		if (c->incs)
			fl_assert_int_eq(fl_sw_sync_timeline_inc(c->tl, 1), 0);
	}
	return NULL;
}

FL_TEST(concurrent_fd_export_and_close_leaves_no_fd_behind)
{
	struct fd_churn args[FD_THREADS];
	pthread_t threads[FD_THREADS];
	struct fl_test_fd_snapshot start;
	struct fl_timeline *tl;

	fl_test_fd_snapshot(&start);
	tl = fl_test_timeline_new("fd-churn");

	for (int i = 0; i < FD_THREADS; i++) {
		args[i] = (struct fd_churn){ .tl = tl, .seed = 0xfdull * (i + 1), .incs = i == 0 };
		fl_assert_int_eq(pthread_create(&threads[i], NULL, fd_churn_main, &args[i]), 0);
	}
	join_all(threads, FD_THREADS);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 10), 0);
	fl_timeline_unref(tl);
	fl_test_wait_fds_back(&start);
}

/*
 * Callback threads add callbacks to the fences at the front of a timeline
 * and cancel about half of them, while the signaller advances it. Every
 * record ends in exactly one of: refused (already signalled), cancelled
 * (and never run), or run once.
 */
enum { CB_FENCES = 3000, CB_THREADS = 2 };

struct cb_slot {
	struct fl_fence_cb cb;
	atomic_int runs;
	atomic_int running;
	atomic_bool cancelled;
	atomic_int late_runs;
	int add_ret;
	int remove_ret;
};

struct cb_churn {
	struct fl_timeline *tl;
	struct fl_fence *fences[CB_FENCES + 1];
	struct cb_slot slots[CB_THREADS][CB_FENCES + 1];
	atomic_uint progress[CB_THREADS];
};

struct cb_thread {
	struct cb_churn *c;
	int id;
	uint64_t seed;
};

static void churn_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct cb_slot *slot = container_of(cb, struct cb_slot, cb);

	atomic_store(&slot->running, 1);
	if (atomic_load(&slot->cancelled))
		atomic_fetch_add(&slot->late_runs, 1);
	atomic_fetch_add(&slot->runs, 1);
	/* Widen the window in which other records are removed while this
	 * one runs. */
	sched_yield();
	atomic_store(&slot->running, 0);
}

static void *cb_adder(void *arg)
{
	struct cb_thread *t = arg;
	struct cb_churn *c = t->c;

	for (unsigned int v = 1; v <= CB_FENCES; v++) {
		struct cb_slot *slot = &c->slots[t->id][v];

		/* Stay near the signaller, which stays near us. */
		while (fl_test_timeline_value(c->tl) + 2 < v)
			sched_yield();
		slot->add_ret = fl_fence_add_callback(c->fences[v], &slot->cb, churn_cb);
		fl_assert(slot->add_ret == 0 || slot->add_ret == -ENOENT);
		if (slot->add_ret == 0 && rng_below(&t->seed, 2)) {
			slot->remove_ret = fl_fence_remove_callback(c->fences[v], &slot->cb);
			if (slot->remove_ret == 1)
				atomic_store(&slot->cancelled, true);
			/* Not removed: then it ran, and has returned. */
			else
				fl_assert(atomic_load(&slot->runs) == 1 &&
					  !atomic_load(&slot->running));
		}
		atomic_store(&c->progress[t->id], v);
	}
	return NULL;
}

static unsigned int slowest_adder(struct cb_churn *c)
{
	unsigned int min = CB_FENCES;

	for (int i = 0; i < CB_THREADS; i++) {
		unsigned int p = atomic_load(&c->progress[i]);

		if (p < min)
			min = p;
	}
	return min;
}

FL_TEST(concurrent_add_and_remove_callback_racing_signal)
{
	struct cb_churn *c = calloc(1, sizeof(*c));
	struct cb_thread args[CB_THREADS];
	pthread_t threads[CB_THREADS];
	int ran = 0, cancelled = 0, refused = 0;

	fl_assert(c);
	c->tl = fl_test_timeline_new("cb-churn");
	for (unsigned int v = 1; v <= CB_FENCES; v++)
		c->fences[v] = fl_test_fence_new(c->tl, v, NULL);
	for (int i = 0; i < CB_THREADS; i++) {
		args[i] = (struct cb_thread){ .c = c, .id = i, .seed = 0xcbull * (i + 1) };
		fl_assert_int_eq(pthread_create(&threads[i], NULL, cb_adder, &args[i]), 0);
	}

	/* The signaller passes a fence only once both adders are done with
	 * the one before, and adders run at most two fences ahead of it, so
	 * adds, removes and signals meet on the same fences. */
	for (unsigned int v = 1; v <= CB_FENCES; v++) {
		while (slowest_adder(c) + 1 < v)
			sched_yield();
		fl_assert_int_eq(fl_sw_sync_timeline_inc(c->tl, 1), 0);
	}
	join_all(threads, CB_THREADS);

	for (int i = 0; i < CB_THREADS; i++) {
		for (unsigned int v = 1; v <= CB_FENCES; v++) {
			struct cb_slot *slot = &c->slots[i][v];
			int runs = atomic_load(&slot->runs);

			fl_assert_int_eq(atomic_load(&slot->late_runs), 0);
			if (slot->add_ret == -ENOENT) {
				fl_assert_int_eq(runs, 0);
				refused++;
			} else if (slot->remove_ret == 1) {
				fl_assert_int_eq(runs, 0);
				cancelled++;
			} else {
				fl_assert_int_eq(runs, 1);
				ran++;
			}
		}
	}
	fl_assert_int_eq(ran + cancelled + refused, CB_THREADS * CB_FENCES);

	for (unsigned int v = 1; v <= CB_FENCES; v++)
		fl_fence_unref(c->fences[v]);
	fl_timeline_unref(c->tl);
	free(c);
}

/*
 * Fences abandoned (fds closed, references dropped) while another thread
 * signals their timeline and a third looks their fds up: each fence is
 * freed either by its last reference or by its completion, never both;
 * a fence given a callback before it was abandoned still runs it once;
 * and every point is gone in the end.
 */
struct abandon_state {
	struct fl_timeline *tl;
	atomic_bool stop;
	atomic_int callbacks_added, callbacks_run;
	atomic_int shared_fd; /* a live fence fd for the lookup thread, or -1 */
};

static void abandon_cb(struct fl_fence *f, struct fl_fence_cb *cb)
{
	struct fl_test_order_cb *ocb = (struct fl_test_order_cb *)cb;

	(void)f;
	atomic_fetch_add((atomic_int *)ocb->log, 1);
	free(ocb);
}

static void *abandon_signaller(void *arg)
{
	struct abandon_state *st = arg;

	while (!atomic_load(&st->stop)) {
		fl_assert_int_eq(fl_sw_sync_timeline_inc(st->tl, 1), 0);
		sched_yield();
	}
	return NULL;
}

static void *abandon_looker(void *arg)
{
	struct abandon_state *st = arg;

	while (!atomic_load(&st->stop)) {
		int fd = atomic_exchange(&st->shared_fd, -1);
		struct fl_fence *f;

		if (fd < 0) {
			sched_yield();
			continue;
		}
		/* A reference taken while the maker abandons it: the fence stays whole. */
		if (fl_fence_from_fd(fd, &f) == 0) {
			fl_fence_get_status(f);
			fl_fence_unref(f);
		}
		close(fd);
	}
	return NULL;
}

FL_TEST_TIMEOUT(abandoned_fences_race_signals_and_lookups, 120)
{
	struct abandon_state st = { .tl = fl_test_timeline_new("abandon-race"), .shared_fd = -1 };
	pthread_t sig, look;
	uint64_t rng = 15;
	int fd;

	fl_assert_int_eq(pthread_create(&sig, NULL, abandon_signaller, &st), 0);
	fl_assert_int_eq(pthread_create(&look, NULL, abandon_looker, &st), 0);
	for (int i = 0; i < 3000; i++) {
		uint64_t ahead = 1 + rng_below(&rng, 40);
		struct fl_fence *f =
			fl_test_fence_new(st.tl, fl_test_timeline_value(st.tl) + ahead, NULL);

		if (rng_below(&rng, 4) == 0) {
			struct fl_test_order_cb *cb = calloc(1, sizeof(*cb));

			fl_assert(cb != NULL);
			cb->log = (uint64_t *)&st.callbacks_run;
			if (fl_fence_add_callback(f, &cb->cb, abandon_cb) == 0)
				atomic_fetch_add(&st.callbacks_added, 1);
			else
				free(cb);
		}
		fd = fl_test_export_fd(f);
		if (rng_below(&rng, 3) == 0) {
			int old = atomic_exchange(&st.shared_fd, dup(fd));

			if (old >= 0)
				close(old);
		}
		close(fd);
		fl_fence_unref(f);
	}
	atomic_store(&st.stop, true);
	pthread_join(sig, NULL);
	pthread_join(look, NULL);
	fd = atomic_exchange(&st.shared_fd, -1);
	if (fd >= 0)
		close(fd);
	/* Far enough for every fence made: what is left pending has its callback. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(st.tl, 100), 0);
	fl_assert_int_eq(atomic_load(&st.callbacks_run), atomic_load(&st.callbacks_added));
	fl_assert_int_eq(fl_timeline_get_pending_count(st.tl), 0);
	fl_timeline_unref(st.tl);
}

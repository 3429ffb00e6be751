/* SPDX-License-Identifier: MIT */
/*
 * fl_fence_add_callback() and fl_fence_remove_callback(): exactly-once
 * delivery in the signalling thread, the already-signalled and cancel
 * cases, re-entrancy from inside a callback, lifetime (a queued callback
 * keeps its fence alive; a callback may drop the last reference and free
 * its own record) and cancel racing signal.
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

struct record {
	struct fl_fence_cb cb;
	atomic_int runs;
	pthread_t thread;
	int status; /* fl_fence_get_status() seen inside the callback */
};

static void record_init(struct record *rec)
{
	memset(rec, 0, sizeof(*rec));
	atomic_init(&rec->runs, 0);
	rec->status = 99;
}

static void record_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct record *rec = container_of(cb, struct record, cb);

	rec->thread = pthread_self();
	rec->status = fl_fence_get_status(fence);
	atomic_fetch_add(&rec->runs, 1);
}

struct incer {
	struct fl_timeline *tl;
	uint64_t count;
	pthread_t self;
};

static void *incer_main(void *arg)
{
	struct incer *inc = arg;

	inc->self = pthread_self();
	fl_assert_int_eq(fl_sw_sync_timeline_inc(inc->tl, inc->count), 0);
	return NULL;
}

FL_TEST(callback_runs_once_in_signalling_thread)
{
	struct fl_timeline *tl = fl_test_timeline_new("once");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, "once");
	struct incer inc = { .tl = tl, .count = 1 };
	struct record rec;
	pthread_t thread;

	record_init(&rec);
	fl_assert_int_eq(fl_fence_add_callback(fence, &rec.cb, record_cb), 0);
	fl_assert(rec.cb.func == record_cb);
	fl_assert_int_eq(atomic_load(&rec.runs), 0);

	fl_assert_int_eq(pthread_create(&thread, NULL, incer_main, &inc), 0);
	fl_assert_int_eq(pthread_join(thread, NULL), 0);
	fl_assert_int_eq(atomic_load(&rec.runs), 1);
	fl_assert(pthread_equal(rec.thread, inc.self));
	fl_assert_int_eq(rec.status, FL_STATUS_SIGNALED);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 5), 0);
	fl_assert_int_eq(atomic_load(&rec.runs), 1);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(several_callbacks_on_one_fence_each_run_once)
{
	enum { N = 5 };
	struct fl_timeline *tl = fl_test_timeline_new("several");
	struct fl_fence *fence = fl_test_fence_new(tl, 3, NULL);
	struct record rec[N];

	for (int i = 0; i < N; i++) {
		record_init(&rec[i]);
		fl_assert_int_eq(fl_fence_add_callback(fence, &rec[i].cb, record_cb), 0);
	}
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 2), 0);
	for (int i = 0; i < N; i++)
		fl_assert_int_eq(atomic_load(&rec[i].runs), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(atomic_load(&rec[i].runs), 1);
		fl_assert(pthread_equal(rec[i].thread, pthread_self()));
	}

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(add_callback_on_signaled_fence_returns_enoent_and_does_not_call)
{
	struct fl_timeline *tl = fl_test_timeline_new("late");
	struct fl_fence *born = fl_test_fence_new(tl, 0, NULL);
	struct fl_fence *later = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *failed;
	struct record rec;

	record_init(&rec);
	fl_assert_int_eq(fl_fence_add_callback(born, &rec.cb, record_cb), -ENOENT);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_add_callback(later, &rec.cb, record_cb), -ENOENT);

	failed = fl_test_fence_new(tl, 10, NULL);
	fl_timeline_kill(tl);
	fl_assert_int_eq(fl_fence_get_status(failed), -ENOENT);
	fl_assert_int_eq(fl_fence_add_callback(failed, &rec.cb, record_cb), -ENOENT);

	fl_assert_int_eq(atomic_load(&rec.runs), 0);
	fl_assert_int_eq(fl_fence_remove_callback(failed, &rec.cb), 0);

	fl_fence_unref(failed);
	fl_fence_unref(later);
	fl_fence_unref(born);
}

FL_TEST(remove_callback_before_signal_returns_one_and_it_never_runs)
{
	struct fl_timeline *tl = fl_test_timeline_new("cancel");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct record rec;

	record_init(&rec);
	fl_assert_int_eq(fl_fence_add_callback(fence, &rec.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_remove_callback(fence, &rec.cb), 1);
	fl_assert_int_eq(fl_fence_remove_callback(fence, &rec.cb), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(atomic_load(&rec.runs), 0);

	/* A removed record may be queued again. */
	fence = fl_fence_unref(fence);
	fence = fl_test_fence_new(tl, 2, NULL);
	fl_assert_int_eq(fl_fence_add_callback(fence, &rec.cb, record_cb), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(atomic_load(&rec.runs), 1);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(remove_callback_after_it_ran_returns_zero)
{
	struct fl_timeline *tl = fl_test_timeline_new("ran");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct record rec;

	record_init(&rec);
	fl_assert_int_eq(fl_fence_add_callback(fence, &rec.cb, record_cb), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(atomic_load(&rec.runs), 1);
	fl_assert_int_eq(fl_fence_remove_callback(fence, &rec.cb), 0);
	fl_assert_int_eq(atomic_load(&rec.runs), 1);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(add_and_remove_callback_reject_bad_arguments)
{
	struct fl_timeline *tl = fl_test_timeline_new("args");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *other = fl_test_fence_new(tl, 2, NULL);
	struct record rec;

	record_init(&rec);
	fl_assert_int_eq(fl_fence_add_callback(NULL, &rec.cb, record_cb), -EINVAL);
	fl_assert_int_eq(fl_fence_add_callback(fence, NULL, record_cb), -EINVAL);
	fl_assert_int_eq(fl_fence_add_callback(fence, &rec.cb, NULL), -EINVAL);
	fl_assert_int_eq(fl_fence_remove_callback(NULL, &rec.cb), -EINVAL);
	fl_assert_int_eq(fl_fence_remove_callback(fence, NULL), -EINVAL);

	fl_assert_int_eq(fl_fence_add_callback(fence, &rec.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_remove_callback(other, &rec.cb), -EINVAL);
	fl_assert_int_eq(fl_fence_remove_callback(fence, &rec.cb), 1);
	fl_assert_int_eq(atomic_load(&rec.runs), 0);

	fl_fence_unref(other);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

struct self_remover {
	struct fl_fence_cb cb;
	int removed;
	int runs;
};

static void self_remove_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct self_remover *sr = container_of(cb, struct self_remover, cb);

	sr->runs++;
	sr->removed = fl_fence_remove_callback(fence, cb);
}

FL_TEST_TIMEOUT(remove_callback_from_inside_itself_returns_zero, 10)
{
	struct fl_timeline *tl = fl_test_timeline_new("self");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct self_remover sr = { .removed = 99 };

	fl_assert_int_eq(fl_fence_add_callback(fence, &sr.cb, self_remove_cb), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(sr.runs, 1);
	fl_assert_int_eq(sr.removed, 0);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

struct remover {
	struct fl_fence_cb cb;
	struct record *victim; /* queued after us on the same fence */
	int removed;
};

static void remove_other_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct remover *r = container_of(cb, struct remover, cb);

	r->removed = fl_fence_remove_callback(fence, &r->victim->cb);
}

FL_TEST_TIMEOUT(callback_removing_a_later_callback_of_its_fence_stops_it, 10)
{
	struct fl_timeline *tl = fl_test_timeline_new("remove-other");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct record before, victim, after;
	struct remover r = { .victim = &victim, .removed = 99 };

	record_init(&before);
	record_init(&victim);
	record_init(&after);
	fl_assert_int_eq(fl_fence_add_callback(fence, &before.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(fence, &r.cb, remove_other_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(fence, &victim.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(fence, &after.cb, record_cb), 0);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(r.removed, 1);
	fl_assert_int_eq(atomic_load(&victim.runs), 0);
	fl_assert_int_eq(atomic_load(&before.runs), 1);
	fl_assert_int_eq(atomic_load(&after.runs), 1);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

/*
 * While one callback of a fence runs (held up on a semaphore, not on a
 * fence), another thread removes a later callback of the same fence: the
 * removal wins, so that callback must never run.
 */
struct stalled {
	struct fl_fence_cb cb;
	sem_t entered, release;
};

static void stalled_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct stalled *st = container_of(cb, struct stalled, cb);

	sem_post(&st->entered);
	while (sem_wait(&st->release) < 0)
		;
}

FL_TEST_TIMEOUT(remove_of_a_queued_callback_while_another_runs_returns_one, 10)
{
	struct fl_timeline *tl = fl_test_timeline_new("remove-during");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct incer inc = { .tl = tl, .count = 1 };
	struct record victim, after;
	struct stalled st;
	pthread_t thread;

	record_init(&victim);
	record_init(&after);
	fl_assert_int_eq(sem_init(&st.entered, 0, 0), 0);
	fl_assert_int_eq(sem_init(&st.release, 0, 0), 0);
	fl_assert_int_eq(fl_fence_add_callback(fence, &st.cb, stalled_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(fence, &victim.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(fence, &after.cb, record_cb), 0);

	fl_assert_int_eq(pthread_create(&thread, NULL, incer_main, &inc), 0);
	while (sem_wait(&st.entered) < 0)
		;
	fl_assert_int_eq(fl_fence_remove_callback(fence, &victim.cb), 1);
	sem_post(&st.release);
	fl_assert_int_eq(pthread_join(thread, NULL), 0);

	fl_assert_int_eq(atomic_load(&victim.runs), 0);
	fl_assert_int_eq(atomic_load(&after.runs), 1);
	fl_assert_int_eq(fl_fence_remove_callback(fence, &st.cb), 0);

	sem_destroy(&st.release);
	sem_destroy(&st.entered);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

struct chain {
	struct fl_fence_cb cb;
	struct fl_fence *next_pending; /* borrowed */
	struct fl_fence *next_signaled; /* borrowed */
	struct fl_timeline *next_tl; /* borrowed; inc'ed from inside when set */
	struct record pending_rec;
	struct record signaled_rec;
	int add_pending_ret;
	int add_signaled_ret;
	int inc_ret;
	int runs;
};

static void chain_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct chain *c = container_of(cb, struct chain, cb);

	c->runs++;
	c->add_pending_ret = fl_fence_add_callback(c->next_pending, &c->pending_rec.cb, record_cb);
	c->add_signaled_ret =
		fl_fence_add_callback(c->next_signaled, &c->signaled_rec.cb, record_cb);
	if (c->next_tl)
		c->inc_ret = fl_sw_sync_timeline_inc(c->next_tl, 1);
}

static void chain_init(struct chain *c)
{
	memset(c, 0, sizeof(*c));
	record_init(&c->pending_rec);
	record_init(&c->signaled_rec);
	c->add_pending_ret = c->add_signaled_ret = c->inc_ret = 99;
}

FL_TEST_TIMEOUT(callback_can_add_callbacks_to_other_fences, 10)
{
	struct fl_timeline *tl1 = fl_test_timeline_new("first");
	struct fl_timeline *tl2 = fl_test_timeline_new("second");
	struct fl_fence *first = fl_test_fence_new(tl1, 1, NULL);
	struct fl_fence *second = fl_test_fence_new(tl2, 1, NULL);
	struct fl_fence *done = fl_test_fence_new(tl2, 0, NULL);
	struct chain c;

	chain_init(&c);
	c.next_pending = second;
	c.next_signaled = done;
	fl_assert_int_eq(fl_fence_add_callback(first, &c.cb, chain_cb), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl1, 1), 0);
	fl_assert_int_eq(c.runs, 1);
	fl_assert_int_eq(c.add_pending_ret, 0);
	fl_assert_int_eq(c.add_signaled_ret, -ENOENT);
	fl_assert_int_eq(atomic_load(&c.pending_rec.runs), 0);
	fl_assert_int_eq(atomic_load(&c.signaled_rec.runs), 0);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl2, 1), 0);
	fl_assert_int_eq(atomic_load(&c.pending_rec.runs), 1);
	fl_assert_int_eq(c.pending_rec.status, FL_STATUS_SIGNALED);

	fl_fence_unref(done);
	fl_fence_unref(second);
	fl_fence_unref(first);
	fl_timeline_unref(tl2);
	fl_timeline_unref(tl1);
}

FL_TEST_TIMEOUT(callback_can_signal_another_timeline, 10)
{
	struct fl_timeline *tl1 = fl_test_timeline_new("first");
	struct fl_timeline *tl2 = fl_test_timeline_new("second");
	struct fl_fence *first = fl_test_fence_new(tl1, 1, NULL);
	struct fl_fence *second = fl_test_fence_new(tl2, 1, NULL);
	struct fl_fence *done = fl_test_fence_new(tl1, 0, NULL);
	struct record rec;
	struct chain c;

	record_init(&rec);
	chain_init(&c);
	c.next_pending = fl_test_fence_new(tl2, 2, NULL);
	c.next_signaled = done;
	c.next_tl = tl2;
	fl_assert_int_eq(fl_fence_add_callback(second, &rec.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(first, &c.cb, chain_cb), 0);

	/* Signalling tl1 runs chain_cb, which signals tl2, which runs
	 * record_cb, all nested in this thread. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl1, 1), 0);
	fl_assert_int_eq(c.runs, 1);
	fl_assert_int_eq(c.inc_ret, 0);
	fl_assert_int_eq(atomic_load(&rec.runs), 1);
	fl_assert(pthread_equal(rec.thread, pthread_self()));
	fl_assert_int_eq(fl_fence_get_status(second), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_get_status(c.next_pending), FL_STATUS_ACTIVE);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl2, 1), 0);
	fl_assert_int_eq(atomic_load(&c.pending_rec.runs), 1);

	fl_fence_unref(c.next_pending);
	fl_fence_unref(done);
	fl_fence_unref(second);
	fl_fence_unref(first);
	fl_timeline_unref(tl2);
	fl_timeline_unref(tl1);
}

struct owning_record {
	struct fl_fence_cb cb;
	struct fl_fence *fence; /* the record's own reference */
	atomic_int *runs;
	int status;
	int *statuses;
};

static void unref_and_free_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct owning_record *rec = container_of(cb, struct owning_record, cb);

	fl_assert(fence == rec->fence);
	if (rec->statuses)
		*rec->statuses = fl_fence_get_status(fence);
	atomic_fetch_add(rec->runs, 1);
	fl_fence_unref(rec->fence);
	free(rec);
}

static void add_owning_record(struct fl_fence *fence, atomic_int *runs, int *status)
{
	struct owning_record *rec = calloc(1, sizeof(*rec));

	fl_assert(rec);
	rec->fence = fl_fence_ref(fence);
	rec->runs = runs;
	rec->statuses = status;
	fl_assert_int_eq(fl_fence_add_callback(fence, &rec->cb, unref_and_free_cb), 0);
}

/* Meant to be run under ASan: any touch of the record or the fence after
 * the callback freed them is reported there. */
FL_TEST(callback_may_unref_its_fence_and_free_its_record)
{
	struct fl_timeline *tl = fl_test_timeline_new("selfish");
	struct fl_timeline *other = fl_test_timeline_new("other");
	struct fl_fence *a = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *b = fl_test_fence_new(other, 1, NULL);
	struct fl_fence *merged = NULL;
	struct fl_fence *doomed = fl_test_fence_new(tl, 5, NULL);
	atomic_int runs;
	int doomed_status = 99;

	atomic_init(&runs, 0);
	fl_assert_int_eq(fl_fence_merge(a, b, NULL, 0, &merged), 0);

	/* Every user reference goes: the records hold the only ones. */
	for (int i = 0; i < 3; i++)
		add_owning_record(a, &runs, NULL);
	add_owning_record(merged, &runs, NULL);
	add_owning_record(doomed, &runs, &doomed_status);
	a = fl_fence_unref(a);
	merged = fl_fence_unref(merged);
	doomed = fl_fence_unref(doomed);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(atomic_load(&runs), 3);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(other, 1), 0);
	fl_assert_int_eq(atomic_load(&runs), 4);
	fl_timeline_kill(tl);
	fl_assert_int_eq(atomic_load(&runs), 5);
	fl_assert_int_eq(doomed_status, -ENOENT);

	fl_fence_unref(b);
	fl_timeline_unref(other);
}

struct keepalive {
	struct fl_fence_cb cb;
	int runs;
	int status;
	int num_points;
	char name[FL_NAME_MAX];
};

static void keepalive_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct keepalive *k = container_of(cb, struct keepalive, cb);

	k->runs++;
	k->status = fl_fence_get_status(fence);
	k->num_points = fl_fence_get_num_points(fence);
	snprintf(k->name, sizeof(k->name), "%s", fl_fence_get_name(fence));
}

FL_TEST(queued_callback_keeps_fence_alive_after_last_unref)
{
	struct fl_timeline *tl = fl_test_timeline_new("keep");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, "kept-alive");
	struct keepalive k = { .status = 99 };

	fl_assert_int_eq(fl_fence_add_callback(fence, &k.cb, keepalive_cb), 0);
	fence = fl_fence_unref(fence);
	fl_assert(fence == NULL);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(k.runs, 1);
	fl_assert_int_eq(k.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(k.num_points, 1);
	fl_assert_str_eq(k.name, "kept-alive");

	fl_timeline_unref(tl);
}

FL_TEST(callbacks_on_fences_of_destroyed_timeline_fire_with_enoent)
{
	struct fl_timeline *tl = fl_test_timeline_new("dying");
	struct fl_fence *f1 = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *f2 = fl_test_fence_new(tl, 2, "unowned");
	struct record r1, r2;
	struct keepalive k = { .status = 99 };

	record_init(&r1);
	record_init(&r2);
	fl_assert_int_eq(fl_fence_add_callback(f1, &r1.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(f1, &r2.cb, record_cb), 0);
	fl_assert_int_eq(fl_fence_add_callback(f2, &k.cb, keepalive_cb), 0);
	f2 = fl_fence_unref(f2);

	fl_timeline_kill(tl);
	fl_assert_int_eq(atomic_load(&r1.runs), 1);
	fl_assert_int_eq(atomic_load(&r2.runs), 1);
	fl_assert_int_eq(r1.status, -ENOENT);
	fl_assert_int_eq(r2.status, -ENOENT);
	fl_assert(pthread_equal(r1.thread, pthread_self()));
	fl_assert_int_eq(k.runs, 1);
	fl_assert_int_eq(k.status, -ENOENT);
	fl_assert_str_eq(k.name, "unowned");

	fl_fence_unref(f1);
}

/*
 * One thread signals while the other cancels. Whatever the interleaving,
 * exactly one side wins, and once remove has returned the callback is
 * neither running nor going to run.
 */
enum { RACE_ROUNDS = 2000 };

struct race {
	struct fl_timeline *tl;
	struct fl_fence_cb cb;
	pthread_barrier_t start, end;
	atomic_int ran;
	atomic_int remove_returned;
	atomic_int late_runs; /* callback observed remove_returned */
};

static void race_cb(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct race *r = container_of(cb, struct race, cb);

	if (atomic_load(&r->remove_returned))
		atomic_fetch_add(&r->late_runs, 1);
	atomic_fetch_add(&r->ran, 1);
	/* Widen the window in which remove must wait for us. */
	sched_yield();
	if (atomic_load(&r->remove_returned))
		atomic_fetch_add(&r->late_runs, 1);
}

static void *race_signaller(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_ROUNDS; i++) {
		pthread_barrier_wait(&r->start);
		fl_assert_int_eq(fl_sw_sync_timeline_inc(r->tl, 1), 0);
		pthread_barrier_wait(&r->end);
	}
	return NULL;
}

FL_TEST_TIMEOUT(remove_callback_racing_signal_has_exactly_one_winner, 60)
{
	struct race r;
	pthread_t thread;
	int removed_total = 0, ran_total = 0;

	memset(&r, 0, sizeof(r));
	r.tl = fl_test_timeline_new("race");
	fl_assert_int_eq(pthread_barrier_init(&r.start, NULL, 2), 0);
	fl_assert_int_eq(pthread_barrier_init(&r.end, NULL, 2), 0);
	fl_assert_int_eq(pthread_create(&thread, NULL, race_signaller, &r), 0);

	for (int i = 0; i < RACE_ROUNDS; i++) {
		struct fl_fence *fence = fl_test_fence_new(r.tl, (uint64_t)i + 1, NULL);
		int ret;

		atomic_store(&r.ran, 0);
		atomic_store(&r.remove_returned, 0);
		fl_assert_int_eq(fl_fence_add_callback(fence, &r.cb, race_cb), 0);

		pthread_barrier_wait(&r.start);
		ret = fl_fence_remove_callback(fence, &r.cb);
		atomic_store(&r.remove_returned, 1);
		pthread_barrier_wait(&r.end);

		fl_assert(ret == 0 || ret == 1);
		fl_assert_int_eq(atomic_load(&r.ran) + ret, 1);
		fl_assert_int_eq(atomic_load(&r.late_runs), 0);
		fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_SIGNALED);
		removed_total += ret;
		ran_total += atomic_load(&r.ran);
		fl_fence_unref(fence);
	}
	fl_assert_int_eq(pthread_join(thread, NULL), 0);
	fl_assert_int_eq(removed_total + ran_total, RACE_ROUNDS);

	pthread_barrier_destroy(&r.end);
	pthread_barrier_destroy(&r.start);
	fl_timeline_unref(r.tl);
}

/* SPDX-License-Identifier: MIT */
/*
 * The libsync compat API under threads: the stress tests of Android's
 * libsync and of the kernel selftests (with smaller loops), and their
 * random merges with a fixed seed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <android/sync.h>
#include <sw_sync.h>

#include "libsync-helpers.h"
#include "runner.h"

/* Selftest 8 / AOSP StressTest.TwoThreadsSharedTimeline, with fewer rounds. */
enum { TWO_THREADS_ROUNDS = 4096 };

struct shared_timeline {
	int tl;
	int counter;
};

struct two_threads_arg {
	struct shared_timeline *shared;
	int id;
	bool ok;
};

static void *two_threads_worker(void *data)
{
	struct two_threads_arg *arg = data;
	struct shared_timeline *s = arg->shared;

	arg->ok = false;
	for (int i = 0; i < TWO_THREADS_ROUNDS; i++) {
		int f = sw_sync_fence_create(s->tl, "fence", (unsigned)(2 * i + arg->id));

		if (f < 0 || sync_wait(f, -1) != 0)
			return NULL;
		/*
		 * The fence orders the two threads; relaxed atomics only keep
		 * TSan, which cannot see ordering through poll(), quiet.
		 */
		if (__atomic_load_n(&s->counter, __ATOMIC_RELAXED) != 2 * i + arg->id) {
			close(f);
			return NULL;
		}
		__atomic_store_n(&s->counter, 2 * i + arg->id + 1, __ATOMIC_RELAXED);
		if (sw_sync_timeline_inc(s->tl, 1) != 0)
			return NULL;
		close(f);
	}
	arg->ok = true;
	return NULL;
}

FL_TEST(two_threads_alternate_on_shared_timeline)
{
	struct shared_timeline s = { .tl = ls_timeline() };
	struct two_threads_arg args[2] = { { &s, 0, false }, { &s, 1, false } };
	pthread_t t[2];

	for (int k = 0; k < 2; k++)
		fl_assert_int_eq(pthread_create(&t[k], NULL, two_threads_worker, &args[k]), 0);
	for (int k = 0; k < 2; k++)
		fl_assert_int_eq(pthread_join(t[k], NULL), 0);
	fl_assert(args[0].ok && args[1].ok);
	fl_assert_int_eq(s.counter, 2 * TWO_THREADS_ROUNDS);
	close(s.tl);
}

/* Selftest 9 / AOSP ConsumerStressTest.MultiProducerSingleConsumer, smaller. */
enum { PRODUCERS = 4, PRODUCER_ROUNDS = 512 };

struct mpsc {
	int consumer_tl;
	int producer_tl[PRODUCERS];
	pthread_mutex_t lock;
	int counter;
};

struct producer_arg {
	struct mpsc *m;
	int id;
	bool ok;
};

/* Waits by polling the info, as AOSP's producers do for one id in eight. */
static bool busy_wait_signaled(int fd)
{
	for (;;) {
		struct sync_file_info *i = sync_file_info(fd);
		struct sync_fence_info *e;
		uint32_t signaled = 0;

		if (!i)
			return false;
		e = sync_get_fence_info(i);
		for (uint32_t k = 0; k < i->num_fences; k++) {
			if (e[k].status < 0) {
				sync_file_info_free(i);
				return false;
			}
			signaled += e[k].status == 1;
		}
		if (signaled == i->num_fences) {
			sync_file_info_free(i);
			return true;
		}
		sync_file_info_free(i);
		sched_yield();
	}
}

static void *producer(void *data)
{
	struct producer_arg *arg = data;
	struct mpsc *m = arg->m;

	arg->ok = false;
	for (int i = 0; i < PRODUCER_ROUNDS; i++) {
		int f = sw_sync_fence_create(m->consumer_tl, "fence", (unsigned)i);
		bool waited;

		if (f < 0)
			return NULL;
		waited = arg->id == 0 ? busy_wait_signaled(f) : sync_wait(f, -1) == 0;
		close(f);
		if (!waited)
			return NULL;
		pthread_mutex_lock(&m->lock);
		m->counter++;
		pthread_mutex_unlock(&m->lock);
		if (sw_sync_timeline_inc(m->producer_tl[arg->id], 1) != 0)
			return NULL;
	}
	arg->ok = true;
	return NULL;
}

FL_TEST(producers_and_consumer_stay_in_lockstep)
{
	struct mpsc m = { .consumer_tl = ls_timeline(), .lock = PTHREAD_MUTEX_INITIALIZER };
	struct producer_arg args[PRODUCERS];
	pthread_t t[PRODUCERS];
	int counter;

	for (int k = 0; k < PRODUCERS; k++)
		m.producer_tl[k] = ls_timeline();
	for (int k = 0; k < PRODUCERS; k++) {
		args[k] = (struct producer_arg){ &m, k, false };
		fl_assert_int_eq(pthread_create(&t[k], NULL, producer, &args[k]), 0);
	}
	for (int it = 1; it <= PRODUCER_ROUNDS; it++) {
		int acc = ls_fence(m.producer_tl[0], "name", (unsigned)it);

		for (int k = 1; k < PRODUCERS; k++) {
			int f = ls_fence(m.producer_tl[k], "name", (unsigned)it);
			int next = ls_merge("name", acc, f);

			close(f);
			close(acc);
			acc = next;
		}
		fl_assert_int_eq(sync_wait(acc, -1), 0);
		close(acc);
		pthread_mutex_lock(&m.lock);
		counter = m.counter;
		pthread_mutex_unlock(&m.lock);
		fl_assert_int_eq(counter, PRODUCERS * it);
		ls_inc(m.consumer_tl, 1);
	}
	for (int k = 0; k < PRODUCERS; k++) {
		fl_assert_int_eq(pthread_join(t[k], NULL), 0);
		fl_assert(args[k].ok);
		close(m.producer_tl[k]);
	}
	close(m.consumer_tl);
}

/* Selftest 10 / AOSP MergeStressTest.RandomMerge, smaller and with a fixed seed. */
enum { RANDOM_TIMELINES = 16, RANDOM_MERGES = 256 };

FL_TEST(random_merges_keep_one_point_per_timeline)
{
	int tl[RANDOM_TIMELINES];
	long max[RANDOM_TIMELINES];
	unsigned int seed = 12345;
	uint32_t touched = 1;
	int acc;

	for (int k = 0; k < RANDOM_TIMELINES; k++) {
		tl[k] = ls_timeline();
		max[k] = -1;
	}
	/* Born signalled, and still one of the entries: fenceline keeps signalled points. */
	acc = ls_fence(tl[0], "name", 0);
	max[0] = 0;
	for (int i = 0; i < RANDOM_MERGES; i++) {
		int k = rand_r(&seed) % RANDOM_TIMELINES;
		unsigned value = (unsigned)rand_r(&seed) & 0x7fffffffu;
		int f = ls_fence(tl[k], "name", value);
		int next = ls_merge("name", acc, f);

		close(f);
		close(acc);
		acc = next;
		if (max[k] < 0)
			touched++;
		if ((long)value > max[k])
			max[k] = value;
		ls_check_modern_legacy_agree(acc);
	}
	fl_assert_int_eq(ls_size_of(acc), touched);
	for (int k = 0; k < RANDOM_TIMELINES; k++) {
		if (max[k] < 0)
			continue;
		fl_assert_errno(sync_wait(acc, 0), ETIME);
		ls_inc(tl[k], (unsigned)max[k]);
	}
	fl_assert_int_eq(sync_wait(acc, 0), 0);
	close(acc);
	for (int k = 0; k < RANDOM_TIMELINES; k++)
		close(tl[k]);
}

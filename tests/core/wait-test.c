/* SPDX-License-Identifier: MIT */
/*
 * fl_fence_wait(): the three timeout modes, blocking until another thread
 * signals, errors, many waiters, signals delivered to the waiting thread,
 * FL_MERGE_WAIT_ALL, and the memory ordering a waiter may rely on.
 *
 * No test asserts an upper bound on time: a wait may always take longer
 * on a loaded machine. Where a test wants the waiter to be asleep before it
 * signals (so that the wake-up path is what runs), it watches the thread's
 * state in /proc; if that never shows, the test is weaker but still right.
 */
/* For gettid() and RUSAGE_THREAD. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

#define MS 1000000ull

struct waiter {
	pthread_t thread;
	struct fl_fence *fence; /* borrowed from the test */
	int timeout_ms;
	atomic_int tid;
	atomic_int done;
	int ret;
	uint64_t elapsed_ns;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	uint64_t start = fl_test_now_ns();

	atomic_store(&w->tid, (int)gettid());
	w->ret = fl_fence_wait(w->fence, w->timeout_ms);
	w->elapsed_ns = fl_test_now_ns() - start;
	atomic_store(&w->done, 1);
	return NULL;
}

static void waiter_start(struct waiter *w, struct fl_fence *fence, int timeout_ms)
{
	w->fence = fence;
	w->timeout_ms = timeout_ms;
	atomic_init(&w->tid, 0);
	atomic_init(&w->done, 0);
	w->ret = 1;
	w->elapsed_ns = 0;
	fl_assert_int_eq(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

static void waiter_join(struct waiter *w)
{
	fl_assert_int_eq(pthread_join(w->thread, NULL), 0);
}

static char thread_state(int tid)
{
	char path[64], buf[512];
	ssize_t len;
	char *paren;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 'X';
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 'X';
	buf[len] = '\0';
	/* The thread name may contain spaces and parentheses; the state
	 * follows the last ')'. */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren[2] : 'X';
}

/* Give up after about 2 s: the wait is then only less likely to be asleep,
 * which weakens the test but does not make it wrong. */
static void waiter_until_asleep(struct waiter *w)
{
	int seen = 0;

	for (int i = 0; i < 2000 && !atomic_load(&w->done); i++) {
		int tid = atomic_load(&w->tid);

		seen = tid && thread_state(tid) == 'S' ? seen + 1 : 0;
		if (seen == 2)
			return;
		fl_test_sleep_ms(1);
	}
}

FL_TEST(wait_returns_zero_when_fence_signaled)
{
	struct fl_timeline *tl = fl_test_timeline_new("wait");
	struct fl_fence *fence = fl_test_fence_new(tl, 2, NULL);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 2), 0);
	fl_assert_int_eq(fl_fence_wait(fence, -1), 0);
	fl_assert_int_eq(fl_fence_wait(fence, 0), 0);
	fl_assert_int_eq(fl_fence_wait(fence, 1000), 0);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_SIGNALED);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(wait_on_fence_born_signaled_returns_zero)
{
	struct fl_timeline *tl = fl_test_timeline_new("born");
	struct fl_fence *at_zero = fl_test_fence_new(tl, 0, NULL);
	struct fl_fence *passed;

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 5), 0);
	passed = fl_test_fence_new(tl, 3, NULL);
	fl_assert_int_eq(fl_fence_get_status(at_zero), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_get_status(passed), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_wait(at_zero, 0), 0);
	fl_assert_int_eq(fl_fence_wait(passed, -1), 0);
	fl_assert_int_eq(fl_fence_wait(passed, 50), 0);

	fl_fence_unref(passed);
	fl_fence_unref(at_zero);
	fl_timeline_unref(tl);
}

FL_TEST(wait_rejects_null_fence)
{
	fl_assert_int_eq(fl_fence_wait(NULL, -1), -EINVAL);
	fl_assert_int_eq(fl_fence_wait(NULL, 0), -EINVAL);
}

/*
 * A zero timeout is a status check: it must neither sleep nor print the
 * timeout dump. Sleeping is detected by voluntary context switches of this
 * thread rather than by time; a few are tolerated for incidental lock
 * contention, 100 calls that each slept would show 100.
 */
FL_TEST(wait_with_zero_timeout_on_pending_fence_returns_etime_without_sleeping)
{
	struct fl_timeline *tl = fl_test_timeline_new("zero");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	FILE *capture = tmpfile();
	int saved_stderr = dup(STDERR_FILENO);
	struct rusage before, after;
	struct stat st;

	fl_assert(capture);
	fl_assert(saved_stderr >= 0);
	fflush(stderr);
	fl_assert(dup2(fileno(capture), STDERR_FILENO) >= 0);

	fl_assert_int_eq(fl_fence_wait(fence, 0), -ETIME);
	fl_assert_int_eq(getrusage(RUSAGE_THREAD, &before), 0);
	for (int i = 0; i < 100; i++)
		fl_assert_int_eq(fl_fence_wait(fence, 0), -ETIME);
	fl_assert_int_eq(getrusage(RUSAGE_THREAD, &after), 0);

	fflush(stderr);
	fl_assert(dup2(saved_stderr, STDERR_FILENO) >= 0);
	close(saved_stderr);
	fl_assert_int_eq(fstat(fileno(capture), &st), 0);
	fclose(capture);

	fl_assert(after.ru_nvcsw - before.ru_nvcsw < 10);
	fl_assert_int_eq(st.st_size, 0);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_ACTIVE);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(wait_with_positive_timeout_returns_etime_after_timeout)
{
	struct fl_timeline *tl = fl_test_timeline_new("timeout");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	uint64_t start;

	setenv("FENCELINE_DUMP_ON_TIMEOUT", "0", 1);
	start = fl_test_now_ns();
	fl_assert_int_eq(fl_fence_wait(fence, 50), -ETIME);
	fl_assert_int_ge(fl_test_now_ns() - start, 50 * MS);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_ACTIVE);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(wait_with_timeout_returns_zero_when_signaled_in_time)
{
	struct fl_timeline *tl = fl_test_timeline_new("in-time");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct waiter w;

	waiter_start(&w, fence, 60000);
	waiter_until_asleep(&w);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	waiter_join(&w);
	fl_assert_int_eq(w.ret, 0);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(wait_forever_blocks_until_another_thread_incs)
{
	struct fl_timeline *tl = fl_test_timeline_new("forever");
	struct fl_fence *fence = fl_test_fence_new(tl, 2, NULL);
	struct waiter w;

	waiter_start(&w, fence, -1);
	waiter_until_asleep(&w);
	fl_assert(!atomic_load(&w.done));

	/* Half way is not enough. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_test_sleep_ms(20);
	fl_assert(!atomic_load(&w.done));

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	waiter_join(&w);
	fl_assert_int_eq(w.ret, 0);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(wait_returns_enoent_when_timeline_destroyed_while_blocked)
{
	struct fl_timeline *tl = fl_test_timeline_new("doomed");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct waiter w;

	waiter_start(&w, fence, -1);
	waiter_until_asleep(&w);
	fl_timeline_kill(tl);
	waiter_join(&w);
	fl_assert_int_eq(w.ret, -ENOENT);
	fl_assert_int_eq(fl_fence_get_status(fence), -ENOENT);
	fl_assert_int_eq(fl_fence_wait(fence, 0), -ENOENT);

	fl_fence_unref(fence);
}

FL_TEST(wait_returns_enoent_when_last_timeline_handle_dropped_while_blocked)
{
	struct fl_timeline *tl = fl_test_timeline_new("dropped");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct waiter w;

	waiter_start(&w, fence, 60000);
	waiter_until_asleep(&w);
	fl_timeline_unref(tl);
	waiter_join(&w);
	fl_assert_int_eq(w.ret, -ENOENT);

	fl_fence_unref(fence);
}

FL_TEST(many_waiters_on_one_fence_all_wake)
{
	enum { N = 8 };
	struct fl_timeline *tl = fl_test_timeline_new("crowd");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct waiter w[N];

	for (int i = 0; i < N; i++)
		waiter_start(&w[i], fence, i % 2 ? -1 : 60000);
	for (int i = 0; i < N; i++)
		waiter_until_asleep(&w[i]);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	for (int i = 0; i < N; i++) {
		waiter_join(&w[i]);
		fl_assert_int_eq(w[i].ret, 0);
	}

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

static atomic_int sigusr1_count;

static void on_sigusr1(int sig)
{
	atomic_fetch_add(&sigusr1_count, 1);
}

/* No SA_RESTART: a wait built on an interruptible syscall that does not
 * retry would see EINTR. */
static void install_sigusr1(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	fl_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&sigusr1_count, 0);
}

/* Returns false if the waiter finished before the signal could be sent. */
static bool interrupt_waiter(struct waiter *w)
{
	int before = atomic_load(&sigusr1_count);

	waiter_until_asleep(w);
	if (atomic_load(&w->done))
		return false;
	fl_assert_int_eq(pthread_kill(w->thread, SIGUSR1), 0);
	for (int i = 0; atomic_load(&sigusr1_count) == before; i++) {
		fl_assert(i < 10000);
		fl_test_sleep_ms(1);
	}
	return true;
}

FL_TEST(wait_forever_is_not_ended_by_signals)
{
	struct fl_timeline *tl = fl_test_timeline_new("signals");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct waiter w;

	install_sigusr1();
	waiter_start(&w, fence, -1);
	for (int i = 0; i < 5; i++) {
		fl_assert(interrupt_waiter(&w));
		fl_test_sleep_ms(5);
		fl_assert(!atomic_load(&w.done));
	}
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	waiter_join(&w);
	fl_assert_int_eq(w.ret, 0);
	fl_assert_int_ge(atomic_load(&sigusr1_count), 5);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(timed_wait_keeps_waiting_across_signals)
{
	struct fl_timeline *tl = fl_test_timeline_new("signals-timed");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct waiter w;

	setenv("FENCELINE_DUMP_ON_TIMEOUT", "0", 1);
	install_sigusr1();
	waiter_start(&w, fence, 300);
	for (int i = 0; i < 3; i++)
		if (!interrupt_waiter(&w))
			break;
	waiter_join(&w);
	fl_assert_int_eq(w.ret, -ETIME);
	fl_assert_int_ge(w.elapsed_ns, 300 * MS);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(wait_all_merge_with_error_returns_after_every_point_completed)
{
	struct fl_timeline *tl_a = fl_test_timeline_new("a");
	struct fl_timeline *tl_b = fl_test_timeline_new("b");
	struct fl_fence *a = fl_test_fence_new(tl_a, 1, NULL);
	struct fl_fence *b = fl_test_fence_new(tl_b, 1, NULL);
	struct fl_fence *all = NULL, *any = NULL;
	struct waiter w;

	fl_assert_int_eq(fl_fence_merge(a, b, "all", FL_MERGE_WAIT_ALL, &all), 0);
	fl_assert_int_eq(fl_fence_merge(a, b, "any", 0, &any), 0);

	waiter_start(&w, all, -1);
	waiter_until_asleep(&w);
	fl_timeline_kill(tl_a);

	fl_assert_int_eq(fl_fence_get_status(a), -ENOENT);
	fl_assert_int_eq(fl_fence_get_status(any), -ENOENT);
	fl_assert_int_eq(fl_fence_wait(any, -1), -ENOENT);
	fl_assert_int_eq(fl_fence_get_status(all), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_wait(all, 0), -ETIME);
	fl_test_sleep_ms(20);
	fl_assert(!atomic_load(&w.done));

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl_b, 1), 0);
	waiter_join(&w);
	fl_assert_int_eq(w.ret, -ENOENT);
	fl_assert_int_eq(fl_fence_get_status(all), -ENOENT);

	fl_fence_unref(any);
	fl_fence_unref(all);
	fl_fence_unref(b);
	fl_fence_unref(a);
	fl_timeline_unref(tl_b);
}

enum { VISIBILITY_ROUNDS = 2000 };

struct payload {
	uint64_t seq;
	uint64_t square;
	char text[48];
};

struct visibility {
	struct fl_timeline *tl;
	struct payload data[VISIBILITY_ROUNDS + 1];
};

static void *visibility_producer(void *arg)
{
	struct visibility *v = arg;

	for (uint64_t i = 1; i <= VISIBILITY_ROUNDS; i++) {
		/* Plain stores: only the inc/wait pair orders them for the
		 * consumer (and tells TSan so). */
		v->data[i].seq = i;
		v->data[i].square = i * i;
		snprintf(v->data[i].text, sizeof(v->data[i].text), "payload %llu",
			 (unsigned long long)i);
		fl_assert_int_eq(fl_sw_sync_timeline_inc(v->tl, 1), 0);
	}
	return NULL;
}

FL_TEST(writes_before_inc_are_visible_after_wait_returns)
{
	struct visibility *v = calloc(1, sizeof(*v));
	struct fl_fence **fences = calloc(VISIBILITY_ROUNDS + 1, sizeof(*fences));
	pthread_t producer;
	char expect[48];

	fl_assert(v && fences);
	v->tl = fl_test_timeline_new("visibility");
	for (uint64_t i = 1; i <= VISIBILITY_ROUNDS; i++)
		fences[i] = fl_test_fence_new(v->tl, i, NULL);

	fl_assert_int_eq(pthread_create(&producer, NULL, visibility_producer, v), 0);
	for (uint64_t i = 1; i <= VISIBILITY_ROUNDS; i++) {
		fl_assert_int_eq(fl_fence_wait(fences[i], -1), 0);
		fl_assert_int_eq(v->data[i].seq, i);
		fl_assert_int_eq(v->data[i].square, i * i);
		snprintf(expect, sizeof(expect), "payload %llu", (unsigned long long)i);
		fl_assert_str_eq(v->data[i].text, expect);
		fl_fence_unref(fences[i]);
	}
	fl_assert_int_eq(pthread_join(producer, NULL), 0);

	fl_timeline_unref(v->tl);
	free(fences);
	free(v);
}

/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

uint64_t fl__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fl__name_copy(char *dst, size_t size, const char *src)
{
	size_t n = 0;

	if (src) {
		n = strnlen(src, size - 1);
		memcpy(dst, src, n);
	}
	memset(dst + n, 0, size - n);
}

int fl__futex_wait(atomic_int *word, int expected, int64_t timeout_ns)
{
	struct timespec ts, *tsp = NULL;
	long r;

	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tsp = &ts;
	}
	/* Relative timeout; the caller recomputes what is left after EINTR. */
	r = syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0);
	if (r == 0)
		return 0;
	if (errno == ETIMEDOUT)
		return -ETIMEDOUT;
	if (errno == EINTR)
		return -EINTR;
	return 0; /* EAGAIN: the value already changed */
}

void fl__futex_wake_all(atomic_int *word)
{
	syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* What a thread started by fl__thread_start() runs first. */
struct thread_start {
	void *(*fn)(void *);
	void *arg;
	atomic_int started;
};

static void *thread_trampoline(void *data)
{
	struct thread_start *t = data;
	void *(*fn)(void *) = t->fn;
	void *arg = t->arg;

	/* @t is the starter's, on its stack: not touched after this (a late wake is harmless). */
	atomic_store(&t->started, 1);
	fl__futex_wake_all(&t->started);
	return fn(arg);
}

int fl__thread_start(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct thread_start t = { fn, arg, 0 };
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(thread, attr, thread_trampoline, &t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (r == 0 && !atomic_load(&t.started))
		(void)fl__futex_wait(&t.started, 0, -1);
	return r;
}

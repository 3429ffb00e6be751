/* SPDX-License-Identifier: MIT */
/*
 * The event loop (loop.h): epoll for the fd sources, one timerfd in the
 * same set for every timer (a min-heap by deadline decides when it goes
 * off), and a list of idle sources.
 *
 * Removal is deferred: a source removed while a dispatch runs is marked,
 * unlinked from what would call it again, and freed once the dispatch is
 * over, because the events epoll_wait() fetched and the list of due timers
 * may still point at it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "list.h"
#include "loop.h"
#include "util.h"

enum kind { SRC_FD, SRC_TIMER, SRC_IDLE };

struct fl_loop_source {
	struct fl_loop *loop;
	enum kind kind;
	bool removed;
	void *data;
	fl_loop_fd_fn fd_fn;
	fl_loop_fn fn;
	struct fl_server_link all; /* in loop->sources while not removed */
	struct fl_loop_source *gc_next; /* in loop->removed */
	/* fd sources */
	int fd;
	uint32_t events;
	bool paused; /* out of the epoll set (fl__loop_fd_pause()) */
	/* timer sources */
	uint64_t deadline, period_ns, seq;
	size_t heap_at; /* index in loop->heap, NOT_IN_HEAP when disarmed */
	bool due; /* on the due list of the dispatch in progress, still to fire */
	struct fl_loop_source *due_next;
	/* idle sources */
	struct fl_server_link idle; /* in loop->idles while pending */
};

#define NOT_IN_HEAP SIZE_MAX

struct fl_loop {
	int epfd, tfd;
	uint64_t armed_ns; /* the timerfd's deadline; 0: not set, or it went off */
	struct fl_loop_source **heap;
	size_t nheap, heap_cap, ntimers;
	uint64_t seq; /* arms so far: orders timers with equal deadlines */
	struct fl_server_link sources, idles;
	struct fl_loop_source *removed; /* freed when the dispatch ends */
	bool dispatching;
};

struct fl_loop *fl__loop_create(void)
{
	struct fl_loop *loop = calloc(1, sizeof(*loop));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!loop)
		return NULL;
	fl__server_link_init(&loop->sources);
	fl__server_link_init(&loop->idles);
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ev.data.ptr = loop; /* the timerfd: no source has the loop's address */
	if (loop->epfd < 0 || loop->tfd < 0 ||
	    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->tfd, &ev) < 0) {
		int err = errno;

		if (loop->epfd >= 0)
			close(loop->epfd);
		if (loop->tfd >= 0)
			close(loop->tfd);
		free(loop);
		errno = err;
		return NULL;
	}
	return loop;
}

static void free_removed(struct fl_loop *loop)
{
	while (loop->removed) {
		struct fl_loop_source *s = loop->removed;

		loop->removed = s->gc_next;
		free(s);
	}
}

void fl__loop_destroy(struct fl_loop *loop)
{
	if (!loop)
		return;
	while (loop->sources.next != &loop->sources) {
		struct fl_loop_source *s =
			FL_SERVER_CONTAINER_OF(loop->sources.next, struct fl_loop_source, all);

		fl__server_link_del(&s->all);
		free(s);
	}
	free_removed(loop);
	free(loop->heap);
	close(loop->tfd);
	close(loop->epfd);
	free(loop);
}

static struct fl_loop_source *source_new(struct fl_loop *loop, enum kind kind, void *data)
{
	struct fl_loop_source *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->loop = loop;
	s->kind = kind;
	s->data = data;
	s->fd = -1;
	s->heap_at = NOT_IN_HEAP;
	fl__server_link_init(&s->idle);
	fl__server_link_add_tail(&loop->sources, &s->all);
	return s;
}

struct fl_loop_source *fl__loop_add_fd(struct fl_loop *loop, int fd, uint32_t events,
				       fl_loop_fd_fn fn, void *data)
{
	struct fl_loop_source *s = source_new(loop, SRC_FD, data);
	struct epoll_event ev = { .events = events };

	if (!s)
		return NULL;
	s->fd = fd;
	s->events = events;
	s->fd_fn = fn;
	ev.data.ptr = s;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = errno;

		fl__server_link_del(&s->all);
		free(s);
		errno = err;
		return NULL;
	}
	return s;
}

int fl__loop_fd_update(struct fl_loop_source *s, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };

	if (!s->paused && epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0)
		return -errno;
	s->events = events;
	return 0;
}

int fl__loop_fd_pause(struct fl_loop_source *s, bool pause)
{
	struct epoll_event ev = { .events = s->events, .data.ptr = s };

	if (s->removed || s->kind != SRC_FD)
		return -EINVAL;
	if (s->paused == pause)
		return 0;
	if (epoll_ctl(s->loop->epfd, pause ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, s->fd, &ev) < 0)
		return -errno;
	s->paused = pause;
	return 0;
}

/* Min-heap of armed timers by (deadline, seq). */
static bool earlier(const struct fl_loop_source *a, const struct fl_loop_source *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_set(struct fl_loop *loop, size_t i, struct fl_loop_source *s)
{
	loop->heap[i] = s;
	s->heap_at = i;
}

static void heap_up(struct fl_loop *loop, size_t i)
{
	struct fl_loop_source *s = loop->heap[i];

	while (i > 0 && earlier(s, loop->heap[(i - 1) / 2])) {
		heap_set(loop, i, loop->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(loop, i, s);
}

static void heap_down(struct fl_loop *loop, size_t i)
{
	struct fl_loop_source *s = loop->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= loop->nheap)
			break;
		if (c + 1 < loop->nheap && earlier(loop->heap[c + 1], loop->heap[c]))
			c++;
		if (!earlier(loop->heap[c], s))
			break;
		heap_set(loop, i, loop->heap[c]);
		i = c;
	}
	heap_set(loop, i, s);
}

static void heap_del(struct fl_loop *loop, struct fl_loop_source *s)
{
	size_t i = s->heap_at;
	struct fl_loop_source *last;

	if (i == NOT_IN_HEAP)
		return;
	s->heap_at = NOT_IN_HEAP;
	last = loop->heap[--loop->nheap];
	if (last == s)
		return;
	heap_set(loop, i, last);
	heap_down(loop, i);
	heap_up(loop, last->heap_at);
}

/* Insert @s (not in the heap) at its deadline: fl__loop_add_timer() made room. */
static void heap_add(struct fl_loop *loop, struct fl_loop_source *s)
{
	s->seq = ++loop->seq;
	loop->heap[loop->nheap] = s;
	s->heap_at = loop->nheap++;
	heap_up(loop, s->heap_at);
}

struct fl_loop_source *fl__loop_add_timer(struct fl_loop *loop, fl_loop_fn fn, void *data)
{
	struct fl_loop_source *s = source_new(loop, SRC_TIMER, data);

	if (!s)
		return NULL;
	s->fn = fn;
	/* Room for every timer up front: arming one can then never fail. */
	if (loop->heap_cap <= loop->ntimers) {
		size_t cap = 2 * loop->heap_cap + 16;
		struct fl_loop_source **h = realloc(loop->heap, cap * sizeof(*h));

		if (!h) {
			fl__server_link_del(&s->all);
			free(s);
			errno = ENOMEM;
			return NULL;
		}
		loop->heap = h;
		loop->heap_cap = cap;
	}
	loop->ntimers++;
	return s;
}

void fl__loop_timer_arm(struct fl_loop_source *s, uint64_t deadline_ns, uint64_t period_ns)
{
	struct fl_loop *loop = s->loop;

	if (s->removed)
		return;
	s->due = false;
	if (s->heap_at != NOT_IN_HEAP) {
		if (deadline_ns == s->deadline && period_ns == s->period_ns)
			return; /* a pass that asks for the same again: keep its place */
		heap_del(loop, s);
	}
	s->deadline = deadline_ns;
	s->period_ns = period_ns;
	if (deadline_ns)
		heap_add(loop, s);
}

void fl__loop_timer_arm_ms(struct fl_loop_source *s, int ms)
{
	if (ms < 0)
		fl__loop_timer_arm(s, 0, 0);
	else
		fl__loop_timer_arm(s, fl__now_ns() + (uint64_t)ms * 1000000ull, 0);
}

uint64_t fl__loop_timer_deadline(const struct fl_loop_source *s)
{
	return s->heap_at == NOT_IN_HEAP ? 0 : s->deadline;
}

struct fl_loop_source *fl__loop_add_idle(struct fl_loop *loop, fl_loop_fn fn, void *data)
{
	struct fl_loop_source *s = source_new(loop, SRC_IDLE, data);

	if (!s)
		return NULL;
	s->fn = fn;
	fl__server_link_add_tail(&loop->idles, &s->idle);
	return s;
}

void fl__loop_source_remove(struct fl_loop_source *s)
{
	struct fl_loop *loop;

	if (!s || s->removed)
		return;
	loop = s->loop;
	s->removed = true;
	s->due = false;
	if (s->kind == SRC_FD && !s->paused)
		epoll_ctl(loop->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	if (s->kind == SRC_TIMER) {
		heap_del(loop, s);
		loop->ntimers--;
	}
	fl__server_link_del(&s->idle);
	fl__server_link_del(&s->all);
	if (loop->dispatching) {
		s->gc_next = loop->removed;
		loop->removed = s;
	} else {
		free(s);
	}
}

/* Run the idle sources pending now; those they add wait for the next dispatch. */
static void run_idles(struct fl_loop *loop)
{
	struct fl_server_link batch;

	if (loop->idles.next == &loop->idles)
		return;
	/* Move the pending ones to a list of their own. */
	batch.next = loop->idles.next;
	batch.prev = loop->idles.prev;
	batch.next->prev = &batch;
	batch.prev->next = &batch;
	fl__server_link_init(&loop->idles);
	while (batch.next != &batch) {
		struct fl_loop_source *s =
			FL_SERVER_CONTAINER_OF(batch.next, struct fl_loop_source, idle);

		fl__server_link_del(&s->idle);
		s->fn(s->data);
		fl__loop_source_remove(s);
	}
}

/* Set the timerfd for the earliest timer, if it is not set early enough. Return: the epoll timeout. */
static int timers_prepare(struct fl_loop *loop, int timeout_ms)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t top, now;

	if (!loop->nheap)
		return timeout_ms;
	top = loop->heap[0]->deadline;
	now = fl__now_ns();
	if (top <= now)
		return 0;
	if (loop->armed_ns && loop->armed_ns <= top + FL_LOOP_TIMER_SLACK_NS)
		return timeout_ms;
	its.it_value.tv_sec = (time_t)(top / 1000000000ull);
	its.it_value.tv_nsec = (long)(top % 1000000000ull);
	if (timerfd_settime(loop->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
		loop->armed_ns = top;
		return timeout_ms;
	}
	/* Cannot happen with a valid deadline; fall back to epoll's own timeout. */
	{
		uint64_t ms = (top - now + 999999) / 1000000;

		if (timeout_ms < 0 || (uint64_t)timeout_ms > ms)
			timeout_ms = ms > INT32_MAX ? INT32_MAX : (int)ms;
	}
	return timeout_ms;
}

/* Fire the timers due now, in deadline order; a timer armed again meanwhile waits for its new deadline. */
static void timers_run(struct fl_loop *loop)
{
	struct fl_loop_source *due = NULL, **tail = &due;
	uint64_t now;

	if (!loop->nheap)
		return;
	now = fl__now_ns();
	while (loop->nheap && loop->heap[0]->deadline <= now) {
		struct fl_loop_source *s = loop->heap[0];

		heap_del(loop, s);
		s->due = true;
		s->due_next = NULL;
		*tail = s;
		tail = &s->due_next;
		if (s->period_ns) {
			uint64_t missed = (now - s->deadline) / s->period_ns + 1;

			s->deadline += missed * s->period_ns;
			heap_add(loop, s);
		}
	}
	for (struct fl_loop_source *s = due; s; s = s->due_next) {
		if (!s->due)
			continue; /* removed, disarmed or armed again by an earlier callback */
		s->due = false;
		s->fn(s->data);
	}
}

int fl__loop_dispatch(struct fl_loop *loop, int timeout_ms)
{
	struct epoll_event evs[FL_LOOP_MAX_EVENTS];
	int n, err = 0;

	loop->dispatching = true;
	run_idles(loop);
	if (loop->idles.next != &loop->idles)
		timeout_ms = 0;
	timeout_ms = timers_prepare(loop, timeout_ms);
	n = epoll_wait(loop->epfd, evs, FL_LOOP_MAX_EVENTS, timeout_ms);
	if (n < 0)
		err = -errno;
	for (int i = 0; i < n; i++) {
		struct fl_loop_source *s = evs[i].data.ptr;

		if (evs[i].data.ptr == loop) {
			uint64_t expirations;

			(void)!read(loop->tfd, &expirations, sizeof(expirations));
			loop->armed_ns = 0;
			continue;
		}
		if (s->removed)
			continue;
		s->fd_fn(s->fd, evs[i].events, s->data);
	}
	timers_run(loop);
	loop->dispatching = false;
	free_removed(loop);
	return err;
}

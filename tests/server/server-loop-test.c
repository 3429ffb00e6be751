/* SPDX-License-Identifier: MIT */
/*
 * The server framework's event loop (src/server/loop.h): fd readiness,
 * timers in order and cancelled, idle sources, removal from inside
 * callbacks, and no fd left behind. No test asserts a duration: a timer
 * that never fired shows as a test timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "loop.h"
#include "runner.h"
#include "util.h"

struct rec {
	int calls;
	uint32_t events;
	int fd;
	/* for order checks */
	int *log, *nlog, id;
	/* another source to remove, or this one, from the callback */
	struct fl_loop_source *remove, **self;
	uint64_t deadline, fired_at;
};

static void on_fd(int fd, uint32_t events, void *data)
{
	struct rec *r = data;

	r->calls++;
	r->events = events;
	r->fd = fd;
	if (r->log)
		r->log[(*r->nlog)++] = r->id;
	if (r->remove) {
		/* Once: the source is freed after this dispatch. */
		fl__loop_source_remove(r->remove);
		r->remove = NULL;
	}
}

static void on_timer(void *data)
{
	struct rec *r = data;

	r->calls++;
	r->fired_at = fl__now_ns();
	if (r->log)
		r->log[(*r->nlog)++] = r->id;
	if (r->remove) {
		/* Once: the source is freed after this dispatch. */
		fl__loop_source_remove(r->remove);
		r->remove = NULL;
	}
}

static void make_pipe(int p[2])
{
	fl_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
}

FL_TEST(loop_fd_source_called_when_ready_only)
{
	struct fl_loop *loop = fl__loop_create();
	struct rec r = { 0 };
	struct fl_loop_source *s;
	int p[2];

	fl_assert(loop);
	make_pipe(p);
	s = fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r);
	fl_assert(s);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(r.calls, 0);
	fl_assert_int_eq(write(p[1], "x", 1), 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(r.calls, 1);
	fl_assert_int_eq(r.fd, p[0]);
	fl_assert(r.events & EPOLLIN);
	/* Level-triggered: still readable, called again. */
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(r.calls, 2);
	/* Asking for nothing stops the calls while the data stays. */
	fl_assert_int_eq(fl__loop_fd_update(s, 0), 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(r.calls, 2);
	fl_assert_int_eq(fl__loop_fd_update(s, EPOLLIN), 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(r.calls, 3);
	fl__loop_destroy(loop);
	close(p[0]);
	close(p[1]);
}

/*
 * Paused, an fd is not reported even hung up (which events 0 still
 * reports); resumed, at once if it is ready, with the events asked for
 * while it was paused. Removing a paused source leaves nothing behind.
 */
FL_TEST(loop_fd_paused_reports_nothing_not_even_a_hang_up_until_resumed)
{
	struct fl_loop *loop = fl__loop_create();
	struct rec r = { 0 }, other = { 0 };
	struct fl_loop_source *s, *t;
	int p[2], q[2];

	fl_assert(loop);
	make_pipe(p);
	make_pipe(q);
	s = fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r);
	t = fl__loop_add_fd(loop, q[0], EPOLLIN, on_fd, &other);
	fl_assert(s && t);
	fl_assert_int_eq(write(p[1], "x", 1), 1);
	fl_assert_int_eq(fl__loop_fd_pause(s, true), 0);
	fl_assert_int_eq(fl__loop_fd_pause(s, true), 0); /* already */
	close(p[1]); /* a hang-up too */
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(r.calls, 0);
	/* Updated while paused: takes effect on resuming. */
	fl_assert_int_eq(fl__loop_fd_update(s, 0), 0);
	fl_assert_int_eq(fl__loop_fd_pause(s, false), 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(r.calls, 1);
	fl_assert(r.events & EPOLLHUP);
	fl_assert(!(r.events & EPOLLIN));
	fl_assert_int_eq(fl__loop_fd_update(s, EPOLLIN), 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(r.calls, 2);
	fl_assert(r.events & EPOLLIN);
	/* Paused, then removed: the fd may be added again (it left the set). */
	fl_assert_int_eq(fl__loop_fd_pause(s, true), 0);
	fl__loop_source_remove(s);
	s = fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r);
	fl_assert(s);
	fl_assert_int_eq(other.calls, 0);
	fl__loop_destroy(loop);
	close(p[0]);
	close(q[0]);
	close(q[1]);
}

FL_TEST(loop_fd_added_twice_fails_eexist_and_removed_fd_can_be_added_again)
{
	struct fl_loop *loop = fl__loop_create();
	struct rec r = { 0 };
	struct fl_loop_source *s;
	int p[2];

	make_pipe(p);
	s = fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r);
	fl_assert(s);
	errno = 0;
	fl_assert(!fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r));
	fl_assert_int_eq(errno, EEXIST);
	fl__loop_source_remove(s);
	s = fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r);
	fl_assert(s);
	fl__loop_destroy(loop);
	close(p[0]);
	close(p[1]);
}

FL_TEST(loop_fd_source_removing_itself_is_not_called_again)
{
	struct fl_loop *loop = fl__loop_create();
	struct rec r = { 0 };
	int p[2];

	make_pipe(p);
	r.remove = fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r);
	fl_assert_int_eq(write(p[1], "x", 1), 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(r.calls, 1);
	/* Still readable, but gone from the loop. */
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(r.calls, 1);
	fl__loop_destroy(loop);
	close(p[0]);
	close(p[1]);
}

/*
 * Two fds ready in the same dispatch, each removing the other: whichever
 * epoll reports first, the other is never called, although its event was
 * fetched in the same epoll_wait().
 */
FL_TEST(loop_source_removed_by_another_callback_is_not_called)
{
	struct fl_loop *loop = fl__loop_create();
	struct rec a = { 0 }, b = { 0 };
	int p[2], q[2];

	make_pipe(p);
	make_pipe(q);
	fl_assert_int_eq(write(p[1], "x", 1), 1);
	fl_assert_int_eq(write(q[1], "x", 1), 1);
	a.remove = fl__loop_add_fd(loop, q[0], EPOLLIN, on_fd, &b);
	b.remove = fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &a);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(a.calls + b.calls, 1);
	/* The survivor, still readable, is called again; the removed one never. */
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(a.calls ? a.calls : b.calls, 2);
	fl_assert_int_eq(a.calls ? b.calls : a.calls, 0);
	fl__loop_destroy(loop);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* Deadlines in the past: all due in one dispatch, so their order is the loop's, not the clock's. */
FL_TEST(loop_timers_fire_in_deadline_order_then_arm_order)
{
	struct fl_loop *loop = fl__loop_create();
	int log[8], nlog = 0;
	struct rec r[5];
	/* ids 0..4 armed at these deadlines */
	const uint64_t at[5] = { 30, 10, 20, 10, 5 };
	const int want[5] = { 4, 1, 3, 2, 0 };

	for (int i = 0; i < 5; i++) {
		struct fl_loop_source *t;

		r[i] = (struct rec){ .log = log, .nlog = &nlog, .id = i };
		t = fl__loop_add_timer(loop, on_timer, &r[i]);
		fl_assert(t);
		fl__loop_timer_arm(t, at[i], 0);
		fl_assert_int_eq(fl__loop_timer_deadline(t), at[i]);
	}
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(nlog, 5);
	for (int i = 0; i < 5; i++)
		fl_assert_int_eq(log[i], want[i]);
	/* One-shot: disarmed after firing. */
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(nlog, 5);
	fl__loop_destroy(loop);
}

FL_TEST(loop_timer_in_future_wakes_the_wait_no_sooner_than_its_deadline)
{
	struct fl_loop *loop = fl__loop_create();
	struct rec r = { 0 };
	struct fl_loop_source *t = fl__loop_add_timer(loop, on_timer, &r);
	uint64_t deadline = fl__now_ns() + 3000000ull;

	fl__loop_timer_arm(t, deadline, 0);
	/* Blocks until the timerfd goes off (a timer never armed would hang here). */
	while (!r.calls)
		fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(r.calls, 1);
	fl_assert_int_ge(r.fired_at, deadline);
	fl_assert_int_eq(fl__loop_timer_deadline(t), 0);
	/* Then earlier than the timerfd was last set for: it is set again. */
	r.calls = 0;
	fl__loop_timer_arm_ms(t, 50);
	fl__loop_timer_arm_ms(t, 1);
	while (!r.calls)
		fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl__loop_destroy(loop);
}

FL_TEST(loop_timer_disarmed_or_removed_before_its_turn_never_fires)
{
	struct fl_loop *loop = fl__loop_create();
	int log[8], nlog = 0;
	struct rec a = { .log = log, .nlog = &nlog, .id = 0 };
	struct rec b = { .log = log, .nlog = &nlog, .id = 1 };
	struct rec c = { .log = log, .nlog = &nlog, .id = 2 };
	struct rec d = { .log = log, .nlog = &nlog, .id = 3 };
	struct fl_loop_source *ta = fl__loop_add_timer(loop, on_timer, &a);
	struct fl_loop_source *tb = fl__loop_add_timer(loop, on_timer, &b);
	struct fl_loop_source *tc = fl__loop_add_timer(loop, on_timer, &c);
	struct fl_loop_source *td = fl__loop_add_timer(loop, on_timer, &d);

	/* a fires first and removes b, due in the same dispatch. */
	fl__loop_timer_arm(ta, 1, 0);
	fl__loop_timer_arm(tb, 2, 0);
	a.remove = tb;
	/* c is disarmed (ms < 0) before any dispatch, d removed. */
	fl__loop_timer_arm(tc, 3, 0);
	fl__loop_timer_arm_ms(tc, -1);
	fl_assert_int_eq(fl__loop_timer_deadline(tc), 0);
	fl__loop_timer_arm(td, 4, 0);
	fl__loop_source_remove(td);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(nlog, 1);
	fl_assert_int_eq(log[0], 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(nlog, 1);
	fl__loop_destroy(loop);
}

struct rearm {
	struct fl_loop_source *t;
	int calls, max;
};

static void on_rearm_past(void *data)
{
	struct rearm *r = data;

	r->calls++;
	/* Due again at once: the next dispatch, not this one (or it never returns). */
	fl__loop_timer_arm(r->t, 1, 0);
}

FL_TEST(loop_timer_armed_again_in_its_callback_fires_once_per_dispatch)
{
	struct fl_loop *loop = fl__loop_create();
	struct rearm r = { 0 };

	r.t = fl__loop_add_timer(loop, on_rearm_past, &r);
	fl__loop_timer_arm(r.t, 1, 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(r.calls, 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(r.calls, 2);
	fl__loop_destroy(loop);
}

static void on_periodic(void *data)
{
	struct rearm *r = data;

	if (++r->calls == r->max)
		fl__loop_source_remove(r->t);
}

FL_TEST(loop_periodic_timer_fires_until_removed_from_its_callback)
{
	struct fl_loop *loop = fl__loop_create();
	struct rearm r = { .max = 3 };
	uint64_t first = fl__now_ns() + 1000000ull;

	r.t = fl__loop_add_timer(loop, on_periodic, &r);
	fl__loop_timer_arm(r.t, first, 1000000ull);
	while (r.calls < 3)
		fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	/* Removed: nothing is left to wake the loop, so a wait would not return. */
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(r.calls, 3);
	fl__loop_destroy(loop);
}

struct idle_rec {
	struct fl_loop *loop;
	int calls;
	bool add_another;
	struct idle_rec *another;
};

static void on_idle(void *data)
{
	struct idle_rec *r = data;

	r->calls++;
	if (r->add_another)
		fl_assert(fl__loop_add_idle(r->loop, on_idle, r->another));
}

FL_TEST(loop_idle_runs_once_before_waiting_and_can_be_cancelled)
{
	struct fl_loop *loop = fl__loop_create();
	struct idle_rec a = { loop }, b = { loop }, c = { loop };
	struct fl_loop_source *sc;

	a.add_another = true;
	a.another = &b;
	fl_assert(fl__loop_add_idle(loop, on_idle, &a));
	sc = fl__loop_add_idle(loop, on_idle, &c);
	fl__loop_source_remove(sc);
	/* Nothing else in the loop: with an idle pending it must not block. */
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(a.calls, 1);
	fl_assert_int_eq(b.calls, 0); /* added by an idle: the next dispatch */
	fl_assert_int_eq(c.calls, 0);
	/* b was pending when this dispatch began: it runs, then the wait is a poll. */
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(a.calls, 1);
	fl_assert_int_eq(b.calls, 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(b.calls, 1);
	fl__loop_destroy(loop);
}

/* The loop's own fds (epoll, timerfd) go with it; the fd sources' fds stay the caller's. */
FL_TEST(loop_destroy_closes_its_own_fds_only)
{
	struct fl_test_fd_snapshot base;
	struct fl_loop *loop;
	struct rec r = { 0 };
	int p[2];

	make_pipe(p);
	fl_test_fd_snapshot(&base);
	loop = fl__loop_create();
	fl_assert(fl__loop_add_fd(loop, p[0], EPOLLIN, on_fd, &r));
	fl_assert(fl__loop_add_timer(loop, on_timer, &r));
	fl_assert(fl__loop_add_idle(loop, on_timer, &r));
	fl_test_expect_new_fds(&base, 2);
	fl__loop_destroy(loop);
	fl_test_expect_new_fds(&base, 0);
	fl_assert_int_eq(write(p[1], "x", 1), 1);
	close(p[0]);
	close(p[1]);
	fl_assert_int_eq(r.calls, 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * The server framework's event loop: one thread waits on an epoll set and
 * calls back the sources that are ready (docs/architecture.md, "The server
 * framework"). It knows nothing of any service or protocol.
 *
 * Three kinds of source, each a struct fl_loop_source owned by the loop:
 *  - fd sources: a callback when the fd is ready for the epoll events asked for;
 *  - timer sources: a callback at a CLOCK_MONOTONIC deadline, once or every period;
 *  - idle sources: a callback once, before the loop next waits.
 * A source is removed with fl__loop_source_remove(), also from inside any
 * callback, its own included: a removed source is never called again,
 * even for an event the current dispatch has already fetched, and its
 * memory is freed when the dispatch is done with it. Adding, changing and
 * removing sources from callbacks is safe.
 *
 * The loop is not thread-safe: every call is made from the thread that
 * dispatches it. It is modelled on libwayland's wl_event_loop.
 */
#ifndef FL_SERVER_LOOP_H
#define FL_SERVER_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct fl_loop;
struct fl_loop_source;

/*
 * The fd is ready: @events is what epoll reported (EPOLLIN, EPOLLOUT,
 * EPOLLHUP, EPOLLERR...), @data what the source was added with.
 */
typedef void (*fl_loop_fd_fn)(int fd, uint32_t events, void *data);
/* A timer's deadline came, or an idle source's turn. */
typedef void (*fl_loop_fn)(void *data);

/*
 * The most epoll events one dispatch fetches; the rest are reported by
 * the next one. A caller that collects ready sources in one dispatch (to
 * serve them in an order of its own) needs room for this many.
 */
#define FL_LOOP_MAX_EVENTS 64

/*
 * A timer fires no sooner than its deadline and, unless the loop is busy,
 * at most this much later: the loop moves its timerfd only when a deadline
 * comes more than this much earlier than the one it is set for, so that a
 * timer pushed back and forth a little on every pass costs no syscall.
 */
#define FL_LOOP_TIMER_SLACK_NS 1000000ull

/**
 * fl__loop_create() - a new loop with no sources
 *
 * Return: the loop, owned by the caller (fl__loop_destroy()), or NULL with
 * errno set (epoll_create1()'s and timerfd_create()'s errors, ENOMEM).
 */
struct fl_loop *fl__loop_create(void);

/**
 * fl__loop_destroy() - free @loop and every source still in it
 *
 * Calls nothing back and closes no fd of an fd source (they are the
 * caller's). Not from inside a callback of @loop. NULL is ignored.
 */
void fl__loop_destroy(struct fl_loop *loop);

/**
 * fl__loop_add_fd() - call @fn when @fd is ready for @events
 * @events: epoll events (EPOLLIN, EPOLLOUT...; level-triggered unless
 *          EPOLLET); 0 keeps the fd in the set but reports nothing, except
 *          EPOLLHUP and EPOLLERR, which epoll reports whatever was asked.
 *
 * The loop does not take @fd: remove the source before closing it (a
 * closed fd's number reused by another file would be a different file).
 *
 * Return: the source, owned by the loop, or NULL with errno set
 * (epoll_ctl()'s errors: EEXIST if @fd is in the loop already; ENOMEM).
 */
struct fl_loop_source *fl__loop_add_fd(struct fl_loop *loop, int fd, uint32_t events,
				       fl_loop_fd_fn fn, void *data);

/**
 * fl__loop_fd_update() - ask an fd source for @events instead
 *
 * Return: 0, or epoll_ctl()'s -errno.
 */
int fl__loop_fd_update(struct fl_loop_source *source, uint32_t events);

/**
 * fl__loop_fd_pause() - take an fd source out of the epoll set, or put it back
 * @pause: true: nothing of the fd is reported, not even EPOLLHUP or
 *         EPOLLERR; false: as before, and at once if it is ready then
 *
 * For an fd that stays ready (level-triggered) while its owner will not
 * act on it for a while: left in the set, it would make every dispatch
 * return at once. fl__loop_fd_update() while paused takes effect on
 * resuming.
 *
 * Return: 0 (also when already so), -EINVAL (not an fd source, or
 * removed), or epoll_ctl()'s -errno (-ENOMEM resuming).
 */
int fl__loop_fd_pause(struct fl_loop_source *source, bool pause);

/**
 * fl__loop_add_timer() - a timer source that calls @fn, not armed yet
 *
 * Return: the source, owned by the loop, or NULL (errno ENOMEM).
 */
struct fl_loop_source *fl__loop_add_timer(struct fl_loop *loop, fl_loop_fn fn, void *data);

/**
 * fl__loop_timer_arm() - call the timer's callback at @deadline_ns
 * @deadline_ns: CLOCK_MONOTONIC ns (fl__now_ns()); one in the past fires
 *               at the next dispatch. 0 disarms the timer.
 * @period_ns: 0: once; else it fires again every @period_ns after
 *             @deadline_ns, skipping the periods the loop was too busy
 *             to run it in, until disarmed or armed again.
 *
 * Arming a timer again replaces its deadline and period. Costs no syscall
 * unless the new deadline is the loop's earliest by more than
 * FL_LOOP_TIMER_SLACK_NS. Timers due in the same dispatch fire in the
 * order of their deadlines, and those with the same deadline in the
 * order they were armed.
 */
void fl__loop_timer_arm(struct fl_loop_source *source, uint64_t deadline_ns, uint64_t period_ns);

/**
 * fl__loop_timer_arm_ms() - fire once @ms milliseconds from now; @ms < 0 disarms
 *
 * The shape of the "ms until it wants to run again, -1: never" that the
 * daemon's parts return.
 */
void fl__loop_timer_arm_ms(struct fl_loop_source *source, int ms);

/** fl__loop_timer_deadline() - the timer's deadline, 0 when it is not armed. */
uint64_t fl__loop_timer_deadline(const struct fl_loop_source *source);

/**
 * fl__loop_add_idle() - call @fn once, before the loop next waits
 *
 * The loop then removes the source by itself: the pointer is invalid once
 * @fn has been called (remove it before that to cancel). Idle sources run
 * in the order they were added; one added by an idle callback runs in the
 * next dispatch, which does not block for it.
 *
 * Return: the source, owned by the loop, or NULL (errno ENOMEM).
 */
struct fl_loop_source *fl__loop_add_idle(struct fl_loop *loop, fl_loop_fn fn, void *data);

/**
 * fl__loop_source_remove() - remove @source from its loop: it is never
 * called again. For an fd source, takes the fd out of the epoll set (so
 * call it before closing the fd). NULL is ignored.
 */
void fl__loop_source_remove(struct fl_loop_source *source);

/**
 * fl__loop_dispatch() - run the idle sources, wait for at most @timeout_ms
 * (-1: until something is ready) and call what became ready: the fd sources
 * in epoll's order, then the timers that are due
 *
 * Waits not at all when idle sources are pending or a timer is due.
 *
 * Context: not from inside a callback of the same loop.
 * Return: 0, or epoll_wait()'s -errno (-EINTR when a signal interrupted it).
 */
int fl__loop_dispatch(struct fl_loop *loop, int timeout_ms);

#endif /* FL_SERVER_LOOP_H */

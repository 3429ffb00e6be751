/* SPDX-License-Identifier: MIT */
/*
 * The owner's half of a shared counter (counter.c): a timeline this
 * process created through the daemon comes with a page whose counter is
 * the timeline's value, which the daemon's shared_counter driver applies
 * (src/drivers/shared_counter). Private to src/client; the caller
 * (client.c, under its connection's lock) keeps which timeline each
 * counter belongs to.
 */
#ifndef FL_CLIENT_COUNTER_H
#define FL_CLIENT_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol.h"

struct fl__counter {
	struct fl_proto_shared_timeline *page;
	bool is32;
};

/*
 * fl__counter_map() - map the page the daemon sent with TIMELINE_CREATE
 * @memfd: its memfd (borrowed: the caller closes it)
 * @is32: the timeline is a 32-bit one (FL_SW_SYNC_32BIT)
 * Return: 0, or mmap()'s negative errno.
 */
int fl__counter_map(struct fl__counter *c, int memfd, bool is32);

/* fl__counter_unmap() - let go of the page (the daemon keeps its own). */
void fl__counter_unmap(struct fl__counter *c);

/* fl__counter_read() - the counter's value now. */
uint64_t fl__counter_read(const struct fl__counter *c);

/*
 * fl__counter_reached() - has the counter, at @now, reached a fence at
 * @value? With the daemon's comparison (wrap-aware for 32-bit timelines).
 */
bool fl__counter_reached(const struct fl__counter *c, uint64_t now, uint64_t value);

/*
 * fl__counter_add() - add @count (a 32-bit timeline: its low half) to the
 * counter, stamped with *@stamp_ns (in: the caller's time, 0 for now;
 * out: the stamp used), which the page holds before the addition is seen
 * @ret_now: the counter after the addition
 * Return: 0; -EINVAL for a given stamp after now or before the page's
 * last one; -ENOSYS for a step that is the daemon's to apply (on a 32-bit
 * timeline above INT32_MAX, which it applies in steps; on a 64-bit one
 * past 2^64, a wrap). The counter is left alone on error.
 */
int fl__counter_add(struct fl__counter *c, uint64_t count, uint64_t *stamp_ns, uint64_t *ret_now);

/*
 * fl__counter_needs_daemon() - after a step to @now, must the daemon
 * complete points before the step counts as done? It publishes the
 * lowest value of a point only it can complete (sync_at): fences of other
 * processes, merges.
 */
bool fl__counter_needs_daemon(const struct fl__counter *c, uint64_t now);

#endif /* FL_CLIENT_COUNTER_H */

/* SPDX-License-Identifier: MIT */
/*
 * What the two counter drivers share: a timeline whose time is a counter
 * with the kernel sw_sync's semantics (64-bit, or 32-bit with wrap-around
 * and INT_MAX steps). sw_sync advances its counter itself; shared_counter
 * applies what another process added to a counter in shared memory. Both
 * look like sw_sync to whoever holds their fds (the driver name, the
 * driver data, the printed values, the deadlines), so those ops are
 * written once, here. Public driver API only, as for any driver.
 */
#ifndef FL_COUNTER_TIMELINE_H
#define FL_COUNTER_TIMELINE_H

#ifndef FL_USE_UNSTABLE_DRIVER_API
#define FL_USE_UNSTABLE_DRIVER_API
#endif
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <fenceline/driver/timeline.h>

#include "wrap32.h"

/* The start of each counter driver's timeline data: the value its points are checked against. */
struct counter_tl {
	_Atomic uint64_t value;
	bool is32;
};

static inline struct counter_tl *counter_of(const struct fl_timeline *tl)
{
	return fl_timeline_get_driver_data(tl);
}

static inline int counter_has_signaled(struct fl_sync_pt *pt)
{
	const struct counter_tl *c = counter_of(fl_sync_pt_get_timeline(pt));

	return fl__value_reached(c->is32, atomic_load(&c->value), fl_sync_pt_get_value(pt));
}

static inline int counter_compare32(const struct fl_sync_pt *a, const struct fl_sync_pt *b)
{
	return fl__wrap32_cmp((uint32_t)fl_sync_pt_get_value(a), (uint32_t)fl_sync_pt_get_value(b));
}

/* The kernel's sw_sync driver data: the point's value as a u32. */
static inline int counter_fill_driver_data(const struct fl_sync_pt *pt, void *data, size_t size)
{
	uint32_t v = (uint32_t)fl_sync_pt_get_value(pt);

	if (size < sizeof(v))
		return -ENOMEM;
	memcpy(data, &v, sizeof(v));
	return sizeof(v);
}

/*
 * Each point keeps the earliest deadline set on it, as the kernel's sync_pt
 * does (timeline_fence_set_deadline()). Under the timeline's lock.
 */
struct counter_pt {
	uint64_t deadline_ns;
	bool has_deadline;
};

static inline void counter_set_deadline(struct fl_sync_pt *pt, uint64_t deadline_ns)
{
	struct counter_pt *p = fl_sync_pt_get_driver_data(pt);

	if (!p->has_deadline || deadline_ns < p->deadline_ns)
		p->deadline_ns = deadline_ns;
	p->has_deadline = true;
}

static inline int counter_get_deadline(const struct fl_sync_pt *pt, uint64_t *ret_ns)
{
	const struct counter_pt *p = fl_sync_pt_get_driver_data(pt);

	if (!p->has_deadline)
		return -ENOENT;
	*ret_ns = p->deadline_ns;
	return 0;
}

static inline void counter_timeline_value_str64(struct fl_timeline *tl, char *str, size_t size)
{
	snprintf(str, size, "%" PRIu64, (uint64_t)atomic_load(&counter_of(tl)->value));
}

static inline void counter_timeline_value_str32(struct fl_timeline *tl, char *str, size_t size)
{
	/* The kernel prints its counter as a signed int. */
	snprintf(str, size, "%d", (int32_t)(uint32_t)atomic_load(&counter_of(tl)->value));
}

static inline void counter_pt_value_str64(const struct fl_sync_pt *pt, char *str, size_t size)
{
	snprintf(str, size, "%" PRIu64, fl_sync_pt_get_value(pt));
}

static inline void counter_pt_value_str32(const struct fl_sync_pt *pt, char *str, size_t size)
{
	snprintf(str, size, "%u", (uint32_t)fl_sync_pt_get_value(pt));
}

/*
 * The ops both drivers' tables share, 64-bit and 32-bit. Every one is named
 * "sw_sync": that is what a holder of the fd sees, as on the kernel.
 */
#define COUNTER_OPS_COMMON                                                                  \
	.driver_name = "sw_sync", .pt_data_size = sizeof(struct counter_pt),                \
	.has_signaled = counter_has_signaled, .fill_driver_data = counter_fill_driver_data, \
	.set_deadline = counter_set_deadline, .get_deadline = counter_get_deadline
#define COUNTER_OPS64                                                           \
	COUNTER_OPS_COMMON, .timeline_value_str = counter_timeline_value_str64, \
			    .pt_value_str = counter_pt_value_str64
#define COUNTER_OPS32                                                           \
	COUNTER_OPS_COMMON, .compare = counter_compare32,                       \
			    .timeline_value_str = counter_timeline_value_str32, \
			    .pt_value_str = counter_pt_value_str32

/*
 * Add @count to the value and signal; on a 32-bit timeline only the low
 * 32 bits count and, like the kernel, increments above INT_MAX go in
 * INT_MAX steps, so that the wrap-around comparison sees every point
 * passed on the way.
 */
static inline void counter_advance(struct fl_timeline *tl, struct counter_tl *c, uint64_t count)
{
	if (!c->is32) {
		atomic_fetch_add(&c->value, count);
		fl_timeline_signal(tl);
		return;
	}
	count = (uint32_t)count;
	do {
		uint64_t step = count > INT_MAX ? INT_MAX : count;

		atomic_fetch_add(&c->value, step);
		fl_timeline_signal(tl);
		count -= step;
	} while (count);
}

/* The value as its driver's callers see it: a 32-bit counter's low half. */
static inline uint64_t counter_get_value(const struct counter_tl *c)
{
	uint64_t v = atomic_load(&c->value);

	return c->is32 ? (uint32_t)v : v;
}

#endif /* FL_COUNTER_TIMELINE_H */

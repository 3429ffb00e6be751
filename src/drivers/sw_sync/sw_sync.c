/* SPDX-License-Identifier: MIT */
/*
 * sw_sync: a timeline whose value is a counter that software advances, like
 * the kernel's drivers/dma-buf/sw_sync.c. Written against the public driver
 * API only: the core does the ordering, waiting and bookkeeping; this file
 * only says whether the counter has passed a point (counter-timeline.h,
 * shared with the shared_counter driver).
 */
#define FL_USE_UNSTABLE_DRIVER_API
#include <errno.h>
#include <stdlib.h>

#include <fenceline/driver/timeline.h>
#include <fenceline/sw_sync.h>

#include "counter-timeline.h"

/* The driver data is a struct counter_tl that only fl_sw_sync_timeline_inc() moves. */
static void release_timeline(struct fl_timeline *tl)
{
	free(counter_of(tl));
}

static const struct fl_timeline_ops sw_sync_ops64 = {
	COUNTER_OPS64,
	.release_timeline = release_timeline,
};

static const struct fl_timeline_ops sw_sync_ops32 = {
	COUNTER_OPS32,
	.release_timeline = release_timeline,
};

FL_EXPORT int fl_timeline_is_sw_sync(const struct fl_timeline *tl)
{
	const struct fl_timeline_ops *ops = fl_timeline_get_ops(tl);

	return ops == &sw_sync_ops64 || ops == &sw_sync_ops32;
}

FL_EXPORT int fl_sw_sync_timeline_create(const char *name, unsigned int flags,
					 struct fl_timeline **ret_timeline)
{
	struct counter_tl *sw;
	int r;

	if (!ret_timeline || (flags & ~(unsigned int)FL_SW_SYNC_32BIT))
		return -EINVAL;
	sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	sw->is32 = flags & FL_SW_SYNC_32BIT;
	r = fl_timeline_create((flags & FL_SW_SYNC_32BIT) ? &sw_sync_ops32 : &sw_sync_ops64,
			       name ? name : "sw_sync", sw, ret_timeline);
	if (r < 0)
		free(sw);
	return r;
}

FL_EXPORT int fl_sw_sync_timeline_inc(struct fl_timeline *tl, uint64_t count)
{
	if (!tl || !fl_timeline_is_sw_sync(tl))
		return -EINVAL;
	if (fl_timeline_is_alive(tl) != 1)
		return -ENOENT;
	counter_advance(tl, counter_of(tl), count);
	return 0;
}

FL_EXPORT int fl_sw_sync_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
				      struct fl_fence **ret_fence)
{
	if (!tl || !ret_fence || !fl_timeline_is_sw_sync(tl))
		return -EINVAL;
	if (counter_of(tl)->is32)
		value = (uint32_t)value;
	return fl_fence_create(tl, value, name, NULL, NULL, ret_fence);
}

FL_EXPORT int fl_sw_sync_timeline_get_value(struct fl_timeline *tl, uint64_t *ret_value)
{
	if (!tl || !ret_value || !fl_timeline_is_sw_sync(tl))
		return -EINVAL;
	*ret_value = counter_get_value(counter_of(tl));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * sw_sync: a timeline whose value is a counter that software advances, like
 * the kernel's drivers/dma-buf/sw_sync.c. Written against the public driver
 * API only: the core does the ordering, waiting and bookkeeping; this file
 * only says whether the counter has passed a point.
 */
#define FL_USE_UNSTABLE_DRIVER_API
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <fenceline/driver/timeline.h>
#include <fenceline/sw_sync.h>

struct sw_timeline {
	_Atomic uint64_t value;
	unsigned int flags;
	/*
	 * An attached counter (fl_sw_sync_timeline_attach_counter()): what it
	 * gained since @synced is yet to be applied to @value. @sync_lock
	 * makes each gain applied once, whichever thread catches up;
	 * @counter is set once, under it, and read with an acquire load.
	 */
	uint64_t *counter;
	void *map;
	size_t map_size;
	uint64_t synced;
	pthread_mutex_t sync_lock;
};

static struct sw_timeline *sw_of(const struct fl_timeline *tl)
{
	return fl_timeline_get_driver_data(tl);
}

static int has_signaled64(struct fl_sync_pt *pt)
{
	const struct sw_timeline *sw = sw_of(fl_sync_pt_get_timeline(pt));

	return atomic_load(&sw->value) >= fl_sync_pt_get_value(pt);
}

/* The kernel's comparison: a 32-bit signed difference, so values wrap around. */
static int cmp32(uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	return (int32_t)(a - b) < 0 ? -1 : 1;
}

static int has_signaled32(struct fl_sync_pt *pt)
{
	const struct sw_timeline *sw = sw_of(fl_sync_pt_get_timeline(pt));

	return cmp32((uint32_t)atomic_load(&sw->value), (uint32_t)fl_sync_pt_get_value(pt)) >= 0;
}

static int compare32(const struct fl_sync_pt *a, const struct fl_sync_pt *b)
{
	return cmp32((uint32_t)fl_sync_pt_get_value(a), (uint32_t)fl_sync_pt_get_value(b));
}

static int fill_driver_data(const struct fl_sync_pt *pt, void *data, size_t size)
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
struct sw_pt {
	uint64_t deadline_ns;
	bool has_deadline;
};

static void set_deadline(struct fl_sync_pt *pt, uint64_t deadline_ns)
{
	struct sw_pt *p = fl_sync_pt_get_driver_data(pt);

	if (!p->has_deadline || deadline_ns < p->deadline_ns)
		p->deadline_ns = deadline_ns;
	p->has_deadline = true;
}

static int get_deadline(const struct fl_sync_pt *pt, uint64_t *ret_ns)
{
	const struct sw_pt *p = fl_sync_pt_get_driver_data(pt);

	if (!p->has_deadline)
		return -ENOENT;
	*ret_ns = p->deadline_ns;
	return 0;
}

static void timeline_value_str64(struct fl_timeline *tl, char *str, size_t size)
{
	snprintf(str, size, "%" PRIu64, (uint64_t)atomic_load(&sw_of(tl)->value));
}

static void timeline_value_str32(struct fl_timeline *tl, char *str, size_t size)
{
	/* The kernel prints its counter as a signed int. */
	snprintf(str, size, "%d", (int32_t)(uint32_t)atomic_load(&sw_of(tl)->value));
}

static void pt_value_str64(const struct fl_sync_pt *pt, char *str, size_t size)
{
	snprintf(str, size, "%" PRIu64, fl_sync_pt_get_value(pt));
}

static void pt_value_str32(const struct fl_sync_pt *pt, char *str, size_t size)
{
	snprintf(str, size, "%u", (uint32_t)fl_sync_pt_get_value(pt));
}

static void release_timeline(struct fl_timeline *tl)
{
	struct sw_timeline *sw = sw_of(tl);

	if (sw->map)
		munmap(sw->map, sw->map_size);
	pthread_mutex_destroy(&sw->sync_lock);
	free(sw);
}

/*
 * Add @count to the value and signal; on a 32-bit timeline only the low
 * 32 bits count and, like the kernel, increments above INT_MAX go in
 * INT_MAX steps, so that the wrap-around comparison sees every point
 * passed on the way.
 */
static void advance(struct fl_timeline *tl, struct sw_timeline *sw, uint64_t count)
{
	if (!(sw->flags & FL_SW_SYNC_32BIT)) {
		atomic_fetch_add(&sw->value, count);
		fl_timeline_signal(tl);
		return;
	}
	count = (uint32_t)count;
	do {
		uint64_t step = count > INT_MAX ? INT_MAX : count;

		atomic_fetch_add(&sw->value, step);
		fl_timeline_signal(tl);
		count -= step;
	} while (count);
}

/* Apply what the attached counter gained since the last time. */
static uint64_t *counter_of(struct sw_timeline *sw)
{
	return __atomic_load_n(&sw->counter, __ATOMIC_ACQUIRE);
}

static void catch_up(struct fl_timeline *tl, struct sw_timeline *sw)
{
	uint64_t target, delta;

	pthread_mutex_lock(&sw->sync_lock);
	target = __atomic_load_n(sw->counter, __ATOMIC_SEQ_CST);
	delta = target - sw->synced;
	sw->synced = target;
	if (delta && (sw->flags & FL_SW_SYNC_32BIT)) {
		/*
		 * More than one wrap passes nothing a single wrap does not:
		 * keep the walk short whatever was written to the counter.
		 */
		if (delta > (1ull << 33))
			delta = (1ull << 32) + (uint32_t)delta;
		while (delta) {
			uint64_t step = delta > UINT32_MAX ? INT_MAX : delta;

			advance(tl, sw, step);
			delta -= step;
		}
	} else if (delta) {
		advance(tl, sw, delta);
	}
	pthread_mutex_unlock(&sw->sync_lock);
}

static void dying(struct fl_timeline *tl)
{
	struct sw_timeline *sw = sw_of(tl);

	if (counter_of(sw))
		catch_up(tl, sw);
}

static const struct fl_timeline_ops sw_sync_ops64 = {
	.driver_name = "sw_sync",
	.pt_data_size = sizeof(struct sw_pt),
	.has_signaled = has_signaled64,
	.fill_driver_data = fill_driver_data,
	.timeline_value_str = timeline_value_str64,
	.pt_value_str = pt_value_str64,
	.release_timeline = release_timeline,
	.dying = dying,
	.set_deadline = set_deadline,
	.get_deadline = get_deadline,
};

static const struct fl_timeline_ops sw_sync_ops32 = {
	.driver_name = "sw_sync",
	.pt_data_size = sizeof(struct sw_pt),
	.has_signaled = has_signaled32,
	.compare = compare32,
	.fill_driver_data = fill_driver_data,
	.timeline_value_str = timeline_value_str32,
	.pt_value_str = pt_value_str32,
	.release_timeline = release_timeline,
	.dying = dying,
	.set_deadline = set_deadline,
	.get_deadline = get_deadline,
};

FL_EXPORT int fl_timeline_is_sw_sync(const struct fl_timeline *tl)
{
	const struct fl_timeline_ops *ops = fl_timeline_get_ops(tl);

	return ops == &sw_sync_ops64 || ops == &sw_sync_ops32;
}

FL_EXPORT int fl_sw_sync_timeline_create(const char *name, unsigned int flags,
					 struct fl_timeline **ret_timeline)
{
	struct sw_timeline *sw;
	int r;

	if (!ret_timeline || (flags & ~(unsigned int)FL_SW_SYNC_32BIT))
		return -EINVAL;
	sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	sw->flags = flags;
	pthread_mutex_init(&sw->sync_lock, NULL);
	r = fl_timeline_create((flags & FL_SW_SYNC_32BIT) ? &sw_sync_ops32 : &sw_sync_ops64,
			       name ? name : "sw_sync", sw, ret_timeline);
	if (r < 0) {
		pthread_mutex_destroy(&sw->sync_lock);
		free(sw);
	}
	return r;
}

FL_EXPORT int fl_sw_sync_timeline_inc(struct fl_timeline *tl, uint64_t count)
{
	struct sw_timeline *sw;

	if (!tl || !fl_timeline_is_sw_sync(tl))
		return -EINVAL;
	if (fl_timeline_is_alive(tl) != 1)
		return -ENOENT;
	sw = sw_of(tl);
	if (!counter_of(sw)) {
		advance(tl, sw, count);
		return 0;
	}
	if (sw->flags & FL_SW_SYNC_32BIT)
		count = (uint32_t)count;
	__atomic_add_fetch(counter_of(sw), count, __ATOMIC_SEQ_CST);
	catch_up(tl, sw);
	return 0;
}

FL_EXPORT int fl_sw_sync_timeline_attach_counter(struct fl_timeline *tl, void *map, size_t map_size,
						 uint64_t *counter)
{
	struct sw_timeline *sw;
	int r = 0;

	if (!tl || !map || !counter || !fl_timeline_is_sw_sync(tl) ||
	    (uintptr_t)counter % sizeof(*counter) || (char *)counter < (char *)map ||
	    (size_t)((char *)counter - (char *)map) + sizeof(*counter) > map_size)
		return -EINVAL;
	sw = sw_of(tl);
	pthread_mutex_lock(&sw->sync_lock);
	if (sw->counter) {
		r = -EBUSY;
	} else {
		sw->synced = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
		sw->map = map;
		sw->map_size = map_size;
		__atomic_store_n(&sw->counter, counter, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sw->sync_lock);
	return r;
}

FL_EXPORT int fl_sw_sync_timeline_catch_up(struct fl_timeline *tl)
{
	struct sw_timeline *sw;

	if (!tl || !fl_timeline_is_sw_sync(tl))
		return -EINVAL;
	sw = sw_of(tl);
	if (counter_of(sw))
		catch_up(tl, sw);
	return fl_timeline_is_alive(tl) == 1 ? 0 : -ENOENT;
}

FL_EXPORT int fl_sw_sync_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
				      struct fl_fence **ret_fence)
{
	if (!tl || !ret_fence || !fl_timeline_is_sw_sync(tl))
		return -EINVAL;
	if (sw_of(tl)->flags & FL_SW_SYNC_32BIT)
		value = (uint32_t)value;
	return fl_fence_create(tl, value, name, NULL, NULL, ret_fence);
}

FL_EXPORT int fl_sw_sync_timeline_get_value(struct fl_timeline *tl, uint64_t *ret_value)
{
	struct sw_timeline *sw;

	if (!tl || !ret_value || !fl_timeline_is_sw_sync(tl))
		return -EINVAL;
	sw = sw_of(tl);
	*ret_value = atomic_load(&sw->value);
	if (sw->flags & FL_SW_SYNC_32BIT)
		*ret_value = (uint32_t)*ret_value;
	return 0;
}

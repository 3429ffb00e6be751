/* SPDX-License-Identifier: MIT */
/*
 * shared_counter: a timeline whose counter another process advances in
 * shared memory (shared_counter.h). Written against the public driver API
 * only, as sw_sync is, and with sw_sync's semantics (counter-timeline.h):
 * this file adds only where the counter lives and how its gains are
 * applied.
 */
#define FL_USE_UNSTABLE_DRIVER_API
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <fenceline/driver/timeline.h>
#include <fenceline/sw_sync.h>

#include "counter-timeline.h"
#include "shared_counter.h"

struct shared_counter {
	struct counter_tl applied; /* first: counter-timeline.h's ops read it */
	/*
	 * What @counter gained since @synced is yet to be applied to
	 * @applied. @sync_lock makes each gain applied once, whichever
	 * thread catches up.
	 */
	uint64_t *counter;
	uint64_t *failed; /* fl__shared_counter_set_failed_word(); NULL: none */
	uint64_t synced;
	pthread_mutex_t sync_lock;
	void *map;
	size_t map_size;
};

static struct shared_counter *shared_of(const struct fl_timeline *tl)
{
	return fl_timeline_get_driver_data(tl);
}

static void catch_up(struct fl_timeline *tl, struct shared_counter *sc)
{
	uint64_t target, delta;

	pthread_mutex_lock(&sc->sync_lock);
	target = __atomic_load_n(sc->counter, __ATOMIC_SEQ_CST);
	delta = target - sc->synced;
	sc->synced = target;
	if (delta && sc->applied.is32) {
		/*
		 * More than one wrap passes nothing a single wrap does not:
		 * keep the walk short whatever was written to the counter.
		 */
		if (delta > (1ull << 33))
			delta = (1ull << 32) + (uint32_t)delta;
		while (delta) {
			uint64_t step = delta > UINT32_MAX ? INT_MAX : delta;

			counter_advance(tl, &sc->applied, step);
			delta -= step;
		}
	} else if (delta) {
		counter_advance(tl, &sc->applied, delta);
	}
	pthread_mutex_unlock(&sc->sync_lock);
}

/* The writer may have moved the counter and gone: what it reached is signalled, not failed. */
static void dying(struct fl_timeline *tl)
{
	struct shared_counter *sc = shared_of(tl);

	/* Before the catch-up and before the core fails what is pending (after this returns). */
	if (sc->failed)
		__atomic_add_fetch(sc->failed, 1, __ATOMIC_SEQ_CST);
	catch_up(tl, sc);
}

static void release_timeline(struct fl_timeline *tl)
{
	struct shared_counter *sc = shared_of(tl);

	munmap(sc->map, sc->map_size);
	pthread_mutex_destroy(&sc->sync_lock);
	free(sc);
}

static const struct fl_timeline_ops shared_counter_ops64 = {
	COUNTER_OPS64,
	.release_timeline = release_timeline,
	.dying = dying,
};

static const struct fl_timeline_ops shared_counter_ops32 = {
	COUNTER_OPS32,
	.release_timeline = release_timeline,
	.dying = dying,
};

bool fl__timeline_is_shared_counter(const struct fl_timeline *tl)
{
	const struct fl_timeline_ops *ops = fl_timeline_get_ops(tl);

	return ops == &shared_counter_ops64 || ops == &shared_counter_ops32;
}

int fl__shared_counter_timeline_create(const char *name, unsigned int flags, void *map,
				       size_t map_size, uint64_t *counter,
				       struct fl_timeline **ret_timeline)
{
	struct shared_counter *sc;
	int r;

	if (!ret_timeline || !map || !counter || (flags & ~(unsigned int)FL_SW_SYNC_32BIT) ||
	    (uintptr_t)counter % sizeof(*counter) || (char *)counter < (char *)map ||
	    (size_t)((char *)counter - (char *)map) + sizeof(*counter) > map_size)
		return -EINVAL;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->applied.is32 = flags & FL_SW_SYNC_32BIT;
	sc->counter = counter;
	sc->synced = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
	sc->map = map;
	sc->map_size = map_size;
	pthread_mutex_init(&sc->sync_lock, NULL);
	r = fl_timeline_create(sc->applied.is32 ? &shared_counter_ops32 : &shared_counter_ops64,
			       name ? name : "sw_sync", sc, ret_timeline);
	if (r < 0) {
		pthread_mutex_destroy(&sc->sync_lock);
		free(sc);
	}
	return r;
}

int fl__shared_counter_set_failed_word(struct fl_timeline *tl, uint64_t *word)
{
	struct shared_counter *sc;

	if (!tl || !fl__timeline_is_shared_counter(tl))
		return -EINVAL;
	sc = shared_of(tl);
	if (word && ((uintptr_t)word % sizeof(*word) || (char *)word < (char *)sc->map ||
		     (size_t)((char *)word - (char *)sc->map) + sizeof(*word) > sc->map_size))
		return -EINVAL;
	sc->failed = word;
	return 0;
}

int fl__shared_counter_catch_up(struct fl_timeline *tl)
{
	if (!tl || !fl__timeline_is_shared_counter(tl))
		return -EINVAL;
	catch_up(tl, shared_of(tl));
	return fl_timeline_is_alive(tl) == 1 ? 0 : -ENOENT;
}

int fl__shared_counter_inc(struct fl_timeline *tl, uint64_t count)
{
	struct shared_counter *sc;

	if (!tl || !fl__timeline_is_shared_counter(tl))
		return -EINVAL;
	if (fl_timeline_is_alive(tl) != 1)
		return -ENOENT;
	sc = shared_of(tl);
	if (sc->applied.is32)
		count = (uint32_t)count;
	__atomic_add_fetch(sc->counter, count, __ATOMIC_SEQ_CST);
	catch_up(tl, sc);
	return 0;
}

int fl__shared_counter_get_value(struct fl_timeline *tl, uint64_t *ret_value)
{
	if (!tl || !ret_value || !fl__timeline_is_shared_counter(tl))
		return -EINVAL;
	*ret_value = counter_get_value(&shared_of(tl)->applied);
	return 0;
}

int fl__shared_counter_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
				    struct fl_fence **ret_fence)
{
	if (!tl || !ret_fence || !fl__timeline_is_shared_counter(tl))
		return -EINVAL;
	if (shared_of(tl)->applied.is32)
		value = (uint32_t)value;
	return fl_fence_create(tl, value, name, NULL, NULL, ret_fence);
}

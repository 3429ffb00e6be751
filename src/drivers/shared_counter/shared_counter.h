/* SPDX-License-Identifier: MIT */
/*
 * shared_counter: a timeline driver whose time is a 64-bit counter in
 * memory shared with another process, which adds to it directly. The
 * timeline applies what the counter gained when asked to catch up, and
 * once more when it dies. fencelined's sync service gives each owned
 * timeline one (src/daemon/shared.c, its half of the owner's fast path;
 * the owner's half is src/client/counter.c). Its fds look like sw_sync's
 * to their holders, with sw_sync's semantics (counter-timeline.h).
 *
 * Internal: built into the daemon only, not into libfenceline.
 */
#ifndef FL_SHARED_COUNTER_H
#define FL_SHARED_COUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fl_fence;
struct fl_timeline;

/*
 * fl__shared_counter_timeline_create() - a timeline driven by @counter
 * @name: the timeline's name, truncated to 31 bytes; NULL gives "sw_sync"
 * @flags: 0 or FL_SW_SYNC_32BIT (<fenceline/sw_sync.h>): a 32-bit value,
 *	compared with wrap-around, whose steps above INT_MAX are applied in
 *	INT_MAX steps
 * @map: a mapping (from mmap()) the timeline takes over on success: it is
 *	munmap()ped when the timeline's memory is freed
 * @map_size: its length
 * @counter: the counter, 8-byte aligned, inside @map, accessed with
 *	sequentially consistent atomics; its value now counts as applied
 * @ret_timeline: on success, the new timeline's handle, the caller's
 *
 * What the counter gains (modulo 2^64; a 32-bit timeline's only in its
 * low half) is applied as a step of that size: whenever
 * fl__shared_counter_catch_up() is called, in every
 * fl__shared_counter_inc(), and once more when the timeline dies, so that
 * the points the counter reached complete as signalled, not with -ENOENT.
 * Return: 0; -EINVAL (NULL, unknown flags, @counter misaligned or outside
 * @map: the mapping stays the caller's); -ENOMEM.
 */
int fl__shared_counter_timeline_create(const char *name, unsigned int flags, void *map,
				       size_t map_size, uint64_t *counter,
				       struct fl_timeline **ret_timeline);

/*
 * fl__shared_counter_set_failed_word() - the word (8-byte aligned, inside
 * the timeline's map) that the driver counts up (seq_cst) when the
 * timeline dies, before it catches up with the counter and before the
 * core fails its pending points; NULL: none. Set it before the
 * timeline can die (one thread).
 * Return: 0; -EINVAL (not a shared_counter timeline, @word misplaced).
 */
int fl__shared_counter_set_failed_word(struct fl_timeline *tl, uint64_t *word);

/* fl__timeline_is_shared_counter() - whether @tl was made by the above. */
bool fl__timeline_is_shared_counter(const struct fl_timeline *tl);

/*
 * fl__shared_counter_catch_up() - apply what the counter gained
 *
 * Signals, in value order, the points the counter passed since the last
 * catch-up before it returns; any thread may call it, each gain is applied
 * once. Return: 0; -EINVAL (not a shared_counter timeline); -ENOENT if
 * the timeline is dead.
 */
int fl__shared_counter_catch_up(struct fl_timeline *tl);

/*
 * fl__shared_counter_inc() - add @count to the counter and catch up
 * (a 32-bit timeline's: only @count's low 32 bits). Return: 0; -EINVAL;
 * -ENOENT if the timeline is dead (the counter is left alone).
 */
int fl__shared_counter_inc(struct fl_timeline *tl, uint64_t count);

/*
 * fl__shared_counter_get_value() - the value applied so far (a 32-bit
 * timeline's low half), not what the counter may hold beyond it.
 * Return: 0 or -EINVAL.
 */
int fl__shared_counter_get_value(struct fl_timeline *tl, uint64_t *ret_value);

/*
 * fl__shared_counter_fence_create() - a fence that signals at @value (a
 * 32-bit timeline's: @value's low half), as fl_sw_sync_fence_create().
 * Return: 0, -EINVAL or -ENOMEM.
 */
int fl__shared_counter_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
				    struct fl_fence **ret_fence);

#endif /* FL_SHARED_COUNTER_H */

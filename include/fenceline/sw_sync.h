/* SPDX-License-Identifier: MIT */
/**
 * DOC: sw_sync - the software counter timeline
 *
 * A timeline whose value is a counter starting at 0 that only software
 * advances, like the kernel's sw_sync test driver. A fence created at value
 * v signals once the counter reaches v (at once if it already has);
 * fl_sw_sync_timeline_inc() advances the counter and signals every point it
 * passed, in value order.
 *
 * Values are 64-bit by default. %FL_SW_SYNC_32BIT gives the kernel's
 * semantics instead: a 32-bit counter compared with wrap-around (a point
 * more than 2^31 ahead counts as already passed) and increments above
 * INT_MAX applied in INT_MAX steps.
 *
 * Tear a sw_sync timeline down with fl_timeline_kill() or
 * fl_timeline_unref() (<fenceline/timeline.h>).
 */
#ifndef FENCELINE_SW_SYNC_H
#define FENCELINE_SW_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

struct fl_fence;
struct fl_timeline;

/** Flags for fl_sw_sync_timeline_create(). */
enum fl_sw_sync_flags {
	/** 32-bit counter with the kernel's wrap-around comparison. */
	FL_SW_SYNC_32BIT = 1u << 0,
};

/**
 * fl_sw_sync_timeline_create() - create a software counter timeline at 0
 * @name: the timeline's name, truncated to 31 bytes; NULL gives "sw_sync"
 * @flags: 0 or %FL_SW_SYNC_32BIT
 * @ret_timeline: on success, the new timeline's handle, owned by the caller
 * Return: 0, -EINVAL (unknown flags) or -ENOMEM.
 */
FL_EXPORT int fl_sw_sync_timeline_create(const char *name, unsigned int flags,
					 struct fl_timeline **ret_timeline);

/**
 * fl_sw_sync_timeline_inc() - advance the counter and signal what it passed
 * @tl: a sw_sync timeline (borrowed)
 * @count: how much to add (with %FL_SW_SYNC_32BIT, only the low 32 bits count)
 *
 * Points at or below the new value signal in value order before this
 * returns; their fences' callbacks run in this thread.
 * Return: 0; -EINVAL if @tl is NULL or not a sw_sync timeline; -ENOENT if
 * the timeline is dead.
 */
FL_EXPORT int fl_sw_sync_timeline_inc(struct fl_timeline *tl, uint64_t count);

/**
 * fl_sw_sync_fence_create() - create a fence that signals at @value
 * @tl: a sw_sync timeline (borrowed)
 * @value: the counter value at which the fence signals
 * @name: the fence's name, truncated to 31 bytes; NULL gives a generated one
 * @ret_fence: on success, the new fence, owned by the caller
 *
 * A @value the counter has already reached gives a fence that is signalled
 * at birth (timestamp = now). On a dead timeline the fence is born failed
 * with -ENOENT.
 * Return: 0, -EINVAL (NULL or not a sw_sync timeline) or -ENOMEM.
 */
FL_EXPORT int fl_sw_sync_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
				      struct fl_fence **ret_fence);

/**
 * fl_sw_sync_timeline_get_value() - the counter's current value
 * @tl: a sw_sync timeline (borrowed)
 * @ret_value: on success, the value
 * Return: 0, or -EINVAL if @tl is NULL or not a sw_sync timeline.
 */
FL_EXPORT int fl_sw_sync_timeline_get_value(struct fl_timeline *tl, uint64_t *ret_value);

/**
 * fl_timeline_is_sw_sync() - whether @tl was made by fl_sw_sync_timeline_create()
 * @tl: the timeline (borrowed)
 * Return: 1 or 0.
 */
FL_EXPORT int fl_timeline_is_sw_sync(const struct fl_timeline *tl);

FL_END_DECLS

#endif /* FENCELINE_SW_SYNC_H */

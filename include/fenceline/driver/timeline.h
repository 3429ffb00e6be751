/* SPDX-License-Identifier: MIT */
/**
 * DOC: timeline drivers
 *
 * A driver supplies a timeline's notion of time; the core does everything
 * else (pending-point bookkeeping, ordering, merging, waiting, callbacks,
 * fds, locking, timestamps). A driver fills one const struct fl_timeline_ops
 * and implements, at minimum, has_signaled(): a cheap check, like poll()'s,
 * of whether the hardware (or counter) has passed a point.
 *
 * Contract: a driver calls fl_timeline_signal() whenever its counter may
 * have moved. Points are kept in signal order (the compare op, or the
 * 64-bit value): if a point has signalled, every earlier point on the same
 * timeline must have signalled too. The core relies on that to check only
 * points that can have changed.
 *
 * This API may change between releases; define FL_USE_UNSTABLE_DRIVER_API
 * to acknowledge it.
 */
#ifndef FENCELINE_DRIVER_TIMELINE_H
#define FENCELINE_DRIVER_TIMELINE_H

#ifndef FL_USE_UNSTABLE_DRIVER_API
#error "The fenceline driver API is unstable: define FL_USE_UNSTABLE_DRIVER_API to use it"
#endif

#include <stddef.h>
#include <stdint.h>

#include <fenceline/fence.h>
#include <fenceline/timeline.h>

FL_BEGIN_DECLS

struct fl_sync_pt;

/**
 * struct fl_timeline_ops - what a timeline driver implements
 *
 * @driver_name: mandatory. Static string, at most 31 bytes, reported in info
 *	and the dump.
 *
 * @pt_data_size: bytes of driver-private data the core allocates (zeroed)
 *	with each point; see fl_sync_pt_get_driver_data(). May be 0.
 *
 * @has_signaled: mandatory. Return 1 if @pt has signalled, 0 if not yet, or
 *	a negative errno if it failed. Context: called with the timeline's
 *	lock held, from the thread calling fl_timeline_signal() or creating a
 *	point; must not block, allocate, or call into fenceline. Called once
 *	when a point is created and then only while the point is the earliest
 *	pending one; once it returns nonzero it is never asked again.
 *
 * @compare: optional. Return < 0 if @a signals before @b, 0 if together,
 *	> 0 if after. Context: with or without the timeline lock held; must
 *	depend only on the two points (their values and driver data) and must
 *	not block. Used to
 *	keep pending points in signal order and, in merges, to keep the later
 *	of two points on this timeline. NULL: compare the 64-bit values.
 *
 * @dup: optional. Called when a merge copies @src into a new fence: the core
 *	has made @dst on the same timeline with the same value and status;
 *	the driver copies its private data. Return 0 or a negative errno
 *	(the merge then fails with it). Context: no lock held, may allocate.
 *	NULL: merged fences share the point itself (the usual case).
 *
 * @fill_driver_data: optional. Write driver-private bytes describing @pt
 *	into @data (capacity @size); return the number written or a negative
 *	errno (-ENOMEM when @size is too small). Context: no lock held.
 *	NULL: no driver data.
 *
 * @timeline_value_str: optional. Print the timeline's current value into
 *	@str (capacity @size, NUL-terminated). Context: may be called with
 *	the timeline lock held; must not block. NULL: no value in the dump.
 *
 * @pt_value_str: optional. Print @pt's value into @str. Same context.
 *	NULL: the core prints the 64-bit value.
 *
 * @release_pt: optional. Called just before a point's memory is freed.
 *	Context: no lock held.
 *
 * @release_timeline: optional. Called just before the timeline's memory is
 *	freed: after it died and its last point was freed. Context: no lock.
 *
 * @dying: optional. Called once when the timeline dies (its last handle
 *	went, or fl_timeline_kill()), before the core fails its pending
 *	points with -ENOENT: the last chance for a driver whose counter moved
 *	without a fl_timeline_signal() yet (e.g. a counter another process
 *	writes) to signal what it reached. Context: no lock held; may call
 *	fl_timeline_signal(); any thread that drops the last handle.
 *
 * @set_deadline: optional. A waiter would like @pt to signal by
 *	@deadline_ns (CLOCK_MONOTONIC), a hint like dma_fence_set_deadline():
 *	the driver may record it or act on it. Called only for a point still
 *	pending, once per fl_fence_set_deadline() of a fence holding it.
 *	Context: with the timeline's lock held; must not block or call into
 *	fenceline. NULL: deadlines are ignored.
 *
 * @get_deadline: optional. Report the deadline recorded for @pt in
 *	*@ret_ns: return 0, or -ENOENT if none was set. Context: with the
 *	timeline's lock held. NULL: fl_fence_get_deadline() answers -EINVAL.
 */
struct fl_timeline_ops {
	const char *driver_name;
	size_t pt_data_size;
	int (*has_signaled)(struct fl_sync_pt *pt);
	int (*compare)(const struct fl_sync_pt *a, const struct fl_sync_pt *b);
	int (*dup)(struct fl_sync_pt *dst, const struct fl_sync_pt *src);
	int (*fill_driver_data)(const struct fl_sync_pt *pt, void *data, size_t size);
	void (*timeline_value_str)(struct fl_timeline *tl, char *str, size_t size);
	void (*pt_value_str)(const struct fl_sync_pt *pt, char *str, size_t size);
	void (*release_pt)(struct fl_sync_pt *pt);
	void (*release_timeline)(struct fl_timeline *tl);
	void (*dying)(struct fl_timeline *tl);
	void (*set_deadline)(struct fl_sync_pt *pt, uint64_t deadline_ns);
	int (*get_deadline)(const struct fl_sync_pt *pt, uint64_t *ret_ns);
};

/**
 * fl_timeline_watch_fd() - signal @tl when @fd becomes readable
 * @tl: the timeline (borrowed; the watch holds a handle until it fires)
 * @fd: an fd that polls readable (POLLIN) when the driver's counter has
 *	moved, e.g. an eventfd, a device fd or a kernel sync_file; on success
 *	it belongs to the core, which closes it once the watch fires
 *
 * For drivers whose time is kept outside the process: the core's fd
 * watcher (the watcher thread, or fencelined's loop) polls @fd and, once it
 * is readable, hangs up or errs, calls fl_timeline_signal(@tl) and drops
 * the watch. One-shot: to watch again, register a new fd (a dup()).
 * Because the watch holds a handle, @tl lives (its points do not fail with
 * -ENOENT) at least until then. A forked child does not inherit watches.
 * Return: 0; -EINVAL (NULL @tl, negative @fd, or an fd that cannot be
 * polled, such as a regular file); -EBADF (@fd is not open); -EEXIST (@fd
 * is watched already); -ENOSPC (the user's epoll watches are used up);
 * -ENOMEM, -EMFILE, -ENFILE. On failure @fd stays the caller's.
 */
FL_EXPORT int fl_timeline_watch_fd(struct fl_timeline *tl, int fd);

/**
 * fl_timeline_create() - create a timeline driven by @ops
 * @ops: the driver's ops table (borrowed; must outlive the timeline)
 * @name: the timeline's name, truncated to 31 bytes; NULL gives the
 *	driver's name
 * @driver_data: opaque pointer for the driver, see
 *	fl_timeline_get_driver_data(); may be NULL
 * @ret_timeline: on success, the new timeline's handle, owned by the caller
 * Return: 0, -EINVAL (NULL @ops, no driver_name or has_signaled) or -ENOMEM.
 */
FL_EXPORT int fl_timeline_create(const struct fl_timeline_ops *ops, const char *name,
				 void *driver_data, struct fl_timeline **ret_timeline);

/**
 * fl_timeline_get_driver_data() - the @driver_data given at creation
 * @tl: the timeline (borrowed)
 * Return: the pointer, or NULL.
 */
FL_EXPORT void *fl_timeline_get_driver_data(const struct fl_timeline *tl);

/**
 * fl_timeline_get_ops() - the ops table the timeline was created with
 * @tl: the timeline (borrowed)
 *
 * Drivers compare it with their own table to check a timeline's type.
 * Return: the table, or NULL for NULL.
 */
FL_EXPORT const struct fl_timeline_ops *fl_timeline_get_ops(const struct fl_timeline *tl);

/**
 * fl_fence_create() - create a point at @value on @tl and a fence holding it
 * @tl: the timeline (borrowed)
 * @value: the point's value (its meaning is the driver's)
 * @name: the fence's name, truncated to 31 bytes; NULL or "" gives
 *	"<timeline>-<value>"
 * @init: optional; called with the new point before it is checked, to set
 *	up driver data (no lock held); may be NULL
 * @init_data: passed to @init as its second argument
 * @ret_fence: on success, the new fence, owned by the caller
 *
 * The point is checked at once (has_signaled()): a point already passed is
 * born signalled (timestamp = now), one on a dead timeline is born failed
 * with -ENOENT; otherwise it joins the timeline's pending points.
 * Return: 0, -EINVAL or -ENOMEM.
 */
FL_EXPORT int fl_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
			      void (*init)(struct fl_sync_pt *pt, void *data), void *init_data,
			      struct fl_fence **ret_fence);

/**
 * fl_sync_pt_get_value() - the point's value
 * @pt: the point (borrowed)
 * Return: the value given to fl_fence_create().
 */
FL_EXPORT uint64_t fl_sync_pt_get_value(const struct fl_sync_pt *pt);

/**
 * fl_sync_pt_get_timeline() - the point's timeline
 * @pt: the point (borrowed)
 * Return: the timeline, borrowed (valid while @pt is).
 */
FL_EXPORT struct fl_timeline *fl_sync_pt_get_timeline(const struct fl_sync_pt *pt);

/**
 * fl_sync_pt_get_driver_data() - the point's driver-private area
 * @pt: the point (borrowed)
 * Return: pointer to ops->pt_data_size zero-initialised bytes (NULL if 0).
 */
FL_EXPORT void *fl_sync_pt_get_driver_data(const struct fl_sync_pt *pt);

/**
 * fl_sync_pt_get_status() - the point's status (0, 1 or a negative errno)
 * @pt: the point (borrowed)
 * Return: the status.
 */
FL_EXPORT int fl_sync_pt_get_status(const struct fl_sync_pt *pt);

FL_END_DECLS

#endif /* FENCELINE_DRIVER_TIMELINE_H */

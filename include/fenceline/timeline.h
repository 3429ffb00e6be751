/* SPDX-License-Identifier: MIT */
/**
 * DOC: timelines
 *
 * A timeline is a monotonically advancing counter owned by one driver
 * instance (a GPU ring, a display controller, the software sw_sync counter).
 * Sync points sit on a timeline at a value; a point signals once the timeline
 * has passed it. A timeline handle is the right to signal it: when the last
 * handle goes away (fl_timeline_unref() of the last handle, or
 * fl_timeline_kill()), the timeline dies and every point still pending on
 * it signals with -ENOENT, so no waiter ever hangs on a dead timeline. The
 * memory lives on, invisibly, while points still refer to it.
 *
 * Timelines are created by a driver: fl_sw_sync_timeline_create() for the
 * software counter, or fl_timeline_create() in <fenceline/driver/timeline.h>
 * for your own.
 */
#ifndef FENCELINE_TIMELINE_H
#define FENCELINE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

struct fl_timeline;

/**
 * fl_timeline_ref() - take another handle on a timeline
 * @tl: the timeline (borrowed); may be NULL
 *
 * The new handle keeps the timeline alive: it dies only when every handle
 * is gone. Ownership: the caller owns the returned handle.
 * Return: @tl.
 */
FL_EXPORT struct fl_timeline *fl_timeline_ref(struct fl_timeline *tl);

/**
 * fl_timeline_unref() - drop a handle on a timeline
 * @tl: the timeline; may be NULL (then nothing happens)
 *
 * When the last handle is dropped the timeline dies: points still pending on
 * it are signalled with -ENOENT (in value order) before this returns, and
 * their fences' callbacks run in this thread.
 * Ownership: consumes the caller's handle.
 * Return: NULL, so that ``tl = fl_timeline_unref(tl);`` clears the pointer.
 */
FL_EXPORT struct fl_timeline *fl_timeline_unref(struct fl_timeline *tl);

/**
 * fl_timeline_kill() - kill a timeline now and drop the caller's handle
 * @tl: the timeline; may be NULL (then nothing happens)
 *
 * Like the kernel's sync_timeline_destroy(): the timeline is marked dead even
 * if other handles exist, every pending point signals with -ENOENT, and
 * later points created on it are born with -ENOENT. Other handles stay valid
 * (they only see a dead timeline), and the memory lives on while they or
 * points refer to it: this frees nothing itself.
 * Ownership: consumes the caller's handle, as fl_timeline_unref() does.
 */
FL_EXPORT void fl_timeline_kill(struct fl_timeline *tl);

/**
 * fl_timeline_destroy() - the old name of fl_timeline_kill()
 * @tl: the timeline; may be NULL (then nothing happens)
 *
 * Deprecated: the name said it frees the timeline, which it does not while
 * other handles or points hold it. The same function as fl_timeline_kill(),
 * exported under this name too; the next release still has it, the one
 * after drops it (docs/changelog.md).
 */
FL_EXPORT void fl_timeline_destroy(struct fl_timeline *tl)
	FL_DEPRECATED("fl_timeline_destroy() frees nothing: use fl_timeline_kill()");

/**
 * fl_timeline_signal() - tell the core that points of @tl may have signalled
 * @tl: the timeline (borrowed)
 *
 * Called by the timeline's driver after its counter moved. The core asks the
 * driver's has_signaled() about pending points in signal order, starting
 * with the earliest, and stops at the first one that has not signalled: a
 * signal that completes k of n pending points costs O(k log n). Completed
 * points get their status and a CLOCK_MONOTONIC timestamp, and the fences
 * that became complete run their callbacks, wake their waiters and make
 * their fds readable, all in the calling thread before this returns.
 * Return: the number of points that completed (>= 0), or -EINVAL.
 * Context: any thread; not from inside the driver's own ops.
 */
FL_EXPORT int fl_timeline_signal(struct fl_timeline *tl);

/**
 * fl_timeline_fail_pending() - fail the work still pending on @tl, and go on
 * @tl: the timeline (borrowed)
 * @status: the error every pending point completes with, -4095 to -1:
 *	-EIO for a context that was reset, -ETIMEDOUT for a hang (the
 *	kernel's dma_fence_set_error() before a signal)
 *
 * The per-context recovery of a GPU reset: points the driver's counter has
 * reached complete as signalled first, then every point still pending
 * completes with @status (its fences, and merges of them, with it; their
 * waiters wake), all stamped now. The timeline stays alive, its counter
 * where it was: points made afterwards are pending as usual, so the
 * producer carries on with its next frames. Other timelines are not
 * touched. Not in the kernel's sw_sync uapi, whose emulation stays exact.
 * Return: how many points failed (>= 0); -EINVAL (@tl NULL, @status out of
 * range); -ENOENT (the timeline was killed).
 * Context: any thread; not from inside the driver's own ops.
 */
FL_EXPORT int fl_timeline_fail_pending(struct fl_timeline *tl, int status);

/**
 * fl_timeline_get_name() - the timeline's name (at most 31 bytes + NUL)
 * @tl: the timeline (borrowed)
 * Return: a string owned by @tl, valid while @tl is; "" for NULL.
 */
FL_EXPORT const char *fl_timeline_get_name(const struct fl_timeline *tl);

/**
 * fl_timeline_get_driver_name() - the name of the timeline's driver
 * @tl: the timeline (borrowed)
 * Return: a static string owned by the driver; "" for NULL.
 */
FL_EXPORT const char *fl_timeline_get_driver_name(const struct fl_timeline *tl);

/**
 * fl_timeline_get_id() - a process-unique, never reused id of the timeline
 * @tl: the timeline (borrowed)
 *
 * Ids increase in creation order (like the kernel's fence context); merged
 * fences list their points sorted by it.
 * Return: the id (> 0), or 0 for NULL.
 */
FL_EXPORT uint64_t fl_timeline_get_id(const struct fl_timeline *tl);

/**
 * fl_timeline_is_alive() - whether the timeline can still signal
 * @tl: the timeline (borrowed)
 * Return: 1 while alive, 0 once dead (destroyed or every handle gone),
 * -EINVAL for NULL.
 */
FL_EXPORT int fl_timeline_is_alive(const struct fl_timeline *tl);

/**
 * fl_timeline_get_pending_count() - number of points still pending
 * @tl: the timeline (borrowed)
 * Return: the count (>= 0), or -EINVAL for NULL.
 */
FL_EXPORT int fl_timeline_get_pending_count(struct fl_timeline *tl);

/**
 * fl_timeline_get_value_str() - the timeline's current value as text
 * @tl: the timeline (borrowed)
 * @buf: where to write (NUL-terminated, truncated to @size)
 * @size: size of @buf in bytes
 *
 * Uses the driver's timeline_value_str op; without it, writes "".
 * Return: 0, or -EINVAL.
 */
FL_EXPORT int fl_timeline_get_value_str(struct fl_timeline *tl, char *buf, size_t size);

/**
 * fl_timeline_export_fd() - make a file descriptor that is a handle on @tl
 * @tl: the timeline (borrowed)
 * @ret_fd: on success, a new O_CLOEXEC fd owned by the caller
 *
 * The fd (and every dup of it, in any process) counts as one handle: when
 * the last copy is closed the core drops that handle, and if it was the
 * last one the timeline dies and its pending points fail with -ENOENT,
 * even if no thread ever calls into fenceline again (a core thread watches
 * for the close). This is what makes sw_sync-style "close the timeline fd"
 * work. fl_timeline_from_fd() maps the fd back to the timeline.
 * Return: 0, -EINVAL, -EMFILE, -ENFILE or -ENOMEM.
 */
FL_EXPORT int fl_timeline_export_fd(struct fl_timeline *tl, int *ret_fd);

/**
 * fl_timeline_from_fd() - find the timeline behind a timeline fd
 * @fd: an fd from fl_timeline_export_fd(), or a dup of one (borrowed)
 * @ret_timeline: on success, a new handle owned by the caller
 * Return: 0; -EBADF if @fd is not open; -ENOTTY if it is not a timeline fd
 * of this process.
 */
FL_EXPORT int fl_timeline_from_fd(int fd, struct fl_timeline **ret_timeline);

FL_END_DECLS

#endif /* FENCELINE_TIMELINE_H */

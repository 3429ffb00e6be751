/* SPDX-License-Identifier: MIT */
/**
 * DOC: fences
 *
 * A fence is an immutable set of sync points (at most one per timeline) plus
 * a 32-byte name. Its status is:
 *
 * - the error of the first failed point (in the fence's point order) as soon
 *   as any point has failed — unless the fence was made with
 *   %FL_MERGE_WAIT_ALL, which waits for every point like the kernel's
 *   dma_fence_array;
 * - otherwise %FL_STATUS_SIGNALED once every point has signalled;
 * - otherwise %FL_STATUS_ACTIVE.
 *
 * The status changes once, from active to final, and never again.
 *
 * Fences are reference counted (fl_fence_ref(), fl_fence_unref()). A fence
 * that somebody waits on (a callback, a blocking wait or an exported fd) is
 * kept alive by the core until it signals, even if every user reference is
 * dropped, so that its fds and callbacks always complete. Once nothing waits
 * on it any more (its fds closed everywhere, no callback, no blocking wait,
 * no fd from fl_fence_get_fd()) and no reference is left, a pending fence
 * is freed, and with it its points that no other fence holds, as the
 * kernel frees a sync_pt with its last reference.
 *
 * Any fence can be exported as a file descriptor (fl_fence_export_fd(),
 * fl_fence_get_fd()). The fd is the read end of a pipe whose write end only
 * the core holds; when the fence signals, with or without an error, the
 * core writes a status record into it and closes the write end, so the fd
 * becomes ready (POLLIN and POLLHUP; a holder that read the record out
 * leaves POLLHUP alone) and stays so. Plain poll(), select() and epoll
 * work on it with no call into the library, in any thread and, once passed
 * with SCM_RIGHTS or inherited, in any process. Nothing a holder does to
 * its copy (read, write, fcntl, close) changes what the others see. Its
 * status: fl_fence_fd_get_status(). No fd exists for a fence until someone
 * asks for one. (Fence fds of the daemon, <fenceline/shared.h>, are still
 * socket pairs: see docs/architecture.md.)
 */
#ifndef FENCELINE_FENCE_H
#define FENCELINE_FENCE_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

struct fl_fence;
struct fl_timeline;

/** Fence and sync point status values (errors are negative errnos). */
enum fl_status {
	FL_STATUS_ACTIVE = 0,
	FL_STATUS_SIGNALED = 1,
};

/** Maximum length of fence and timeline names, including the NUL. */
#define FL_NAME_MAX 32

/**
 * enum fl_merge_flags - flags for fl_fence_merge()
 * @FL_MERGE_WAIT_ALL: the new fence completes only when every point has
 *	completed, reporting the first error in point order (the kernel's
 *	dma_fence_array behaviour). Without it the fence fails as soon as any
 *	point fails (fenceline's and Android's original behaviour).
 * @FL_MERGE_MAINLINE: the merge rules of today's kernel (sync_file.c and
 *	dma_fence_unwrap_merge()), for exact emulation of its uapi: points that
 *	have already completed, signalled or failed, are left out (so their
 *	errors are lost); if none is left, the fence is one signalled point on
 *	the "stub" timeline of the "stub" driver, stamped with the latest
 *	timestamp of the points left out; and the name is kept as given, even
 *	empty. Use it with %FL_MERGE_WAIT_ALL, as the kernel always waits.
 */
enum fl_merge_flags {
	FL_MERGE_WAIT_ALL = 1u << 0,
	FL_MERGE_MAINLINE = 1u << 1,
};

/**
 * struct fl_fence_info - summary of a fence, filled by fl_fence_get_info()
 * @name: the fence's name, NUL-terminated
 * @status: 0 active, 1 signalled, < 0 the error
 * @num_points: how many points the fence holds (all of them, even when the
 *	caller's array was shorter)
 * @timestamp_ns: CLOCK_MONOTONIC time at which the fence completed (the
 *	latest point timestamp, or the failing point's), 0 while active
 */
struct fl_fence_info {
	char name[FL_NAME_MAX];
	int32_t status;
	uint32_t num_points;
	uint64_t timestamp_ns;
};

/**
 * struct fl_sync_pt_info - one point of a fence, filled by fl_fence_get_info()
 * @timeline_name: name of the point's timeline
 * @driver_name: name of the timeline's driver
 * @status: 0 active, 1 signalled, < 0 the error
 * @flags: reserved, 0
 * @timestamp_ns: CLOCK_MONOTONIC time of the status change, 0 while active
 * @value: the point's value on its timeline
 * @timeline_id: fl_timeline_get_id() of the point's timeline
 */
struct fl_sync_pt_info {
	char timeline_name[FL_NAME_MAX];
	char driver_name[FL_NAME_MAX];
	int32_t status;
	uint32_t flags;
	uint64_t timestamp_ns;
	uint64_t value;
	uint64_t timeline_id;
};

struct fl_fence_cb;

/**
 * typedef fl_fence_cb_t - callback run once when a fence completes
 * @fence: the fence (borrowed; valid for the duration of the call)
 * @cb: the record passed to fl_fence_add_callback()
 *
 * Runs in the thread that completed the fence (the one calling
 * fl_timeline_signal(), or the one whose fl_fence_add_callback() armed a
 * fence that had already completed its points), with no fenceline lock
 * held. It may create, merge, signal, unref and add callbacks to other
 * fences, and may free @cb. It must not block waiting on a fence.
 */
typedef void (*fl_fence_cb_t)(struct fl_fence *fence, struct fl_fence_cb *cb);

/**
 * struct fl_fence_cb - caller-allocated record of an async waiter
 * @func: the callback; set by fl_fence_add_callback()
 *
 * The other fields are private to the core. The record must stay valid
 * until the callback has run or fl_fence_remove_callback() has returned.
 */
struct fl_fence_cb {
	fl_fence_cb_t func;
	/* private */
	struct fl_fence_cb *next;
	struct fl_fence_cb **pprev;
	struct fl_fence *fence;
};

/**
 * fl_fence_ref() - take a reference on a fence
 * @fence: the fence (borrowed); may be NULL
 * Return: @fence. Ownership: the caller owns the new reference.
 */
FL_EXPORT struct fl_fence *fl_fence_ref(struct fl_fence *fence);

/**
 * fl_fence_unref() - drop a reference on a fence
 * @fence: the fence; may be NULL (then nothing happens)
 * Return: NULL. Ownership: consumes the caller's reference.
 */
FL_EXPORT struct fl_fence *fl_fence_unref(struct fl_fence *fence);

/**
 * fl_fence_merge() - make a fence that completes when both inputs have
 * @a: first fence (borrowed)
 * @b: second fence (borrowed); may be @a
 * @name: name of the new fence, truncated to 31 bytes; NULL or "" gives
 *	"merged" (with %FL_MERGE_MAINLINE: "")
 * @flags: 0, or %FL_MERGE_WAIT_ALL and %FL_MERGE_MAINLINE or'd
 * @ret_fence: on success, the new fence, owned by the caller
 *
 * The new fence holds the union of the points of @a and @b with at most one
 * point per timeline: the later one by the timeline driver's compare op. A
 * point that has already failed wins over one that has not, so an error
 * that has happened survives every merge (the kernel drops it). Points are
 * sorted by timeline id, so the result does not depend on argument order,
 * and a chain of merges stays bounded by the number of timelines involved.
 * Merging a fence with itself gives a new fence with the same points.
 * %FL_MERGE_MAINLINE changes these rules to the kernel's (see above).
 * Return: 0, -EINVAL (NULL argument, unknown flag) or -ENOMEM.
 */
FL_EXPORT int fl_fence_merge(struct fl_fence *a, struct fl_fence *b, const char *name,
			     unsigned int flags, struct fl_fence **ret_fence);

/**
 * fl_fence_set_deadline() - tell the fence's drivers by when it is wanted
 * @fence: the fence (borrowed)
 * @deadline_ns: CLOCK_MONOTONIC time by which a waiter would like the
 *	fence to have signalled (a compositor: the next vblank)
 *
 * A hint, like the kernel's SYNC_IOC_SET_DEADLINE: each point still
 * pending is passed to its driver's set_deadline op; drivers without one
 * ignore it, and so does a fence that has completed. sw_sync records the
 * earliest deadline of each point (fl_fence_get_deadline()).
 * Return: 0, or -EINVAL for NULL.
 */
FL_EXPORT int fl_fence_set_deadline(struct fl_fence *fence, uint64_t deadline_ns);

/**
 * fl_fence_get_deadline() - the deadline recorded for a one-point fence
 * @fence: the fence (borrowed)
 * @ret_ns: on success, the earliest deadline set on the point
 *
 * Like sw_sync's SW_SYNC_GET_DEADLINE: only a fence of exactly one point
 * whose driver records deadlines (sw_sync does) has one; a merge of two
 * or more points has none.
 * Return: 0; -ENOENT if no deadline was set on the point; -EINVAL for
 * NULL, a fence of several points, or a driver that records no deadlines.
 */
FL_EXPORT int fl_fence_get_deadline(struct fl_fence *fence, uint64_t *ret_ns);

/**
 * fl_fence_get_status() - current status of a fence, without blocking
 * @fence: the fence (borrowed)
 * Return: 0 active, 1 signalled, a negative errno if the fence failed, or
 * -EINVAL for NULL.
 */
FL_EXPORT int fl_fence_get_status(struct fl_fence *fence);

/**
 * fl_fence_wait() - block until a fence completes or the timeout expires
 * @fence: the fence (borrowed)
 * @timeout_ms: < 0 waits forever, 0 only checks, > 0 waits at most that long
 *
 * Signals delivered to the thread do not end the wait early (the remaining
 * time is kept). When a wait with @timeout_ms > 0 times out, the debug dump
 * is written to stderr (see fl_debug_dump(); FENCELINE_DUMP_ON_TIMEOUT=0
 * turns that off).
 * Return: 0 if the fence signalled, its (negative) error if it failed,
 * -ETIME on timeout, -EINVAL for NULL. Unlike poll() on a kernel sync_file,
 * the waiter learns that the fence failed.
 * Context: any thread except from inside a fence callback.
 */
FL_EXPORT int fl_fence_wait(struct fl_fence *fence, int timeout_ms);

/**
 * fl_fence_add_callback() - run @func once when @fence completes
 * @fence: the fence (borrowed)
 * @cb: caller-allocated record, not currently queued anywhere
 * @func: the callback
 *
 * The callback runs exactly once, after the fence completes, unless
 * fl_fence_remove_callback() removes it first. If the fence has already
 * completed, the callback is not queued and not called.
 * Return: 0 if queued, -ENOENT if the fence has already completed,
 * -EINVAL for a NULL argument.
 * Ownership: @cb stays the caller's; the core keeps @fence alive while the
 * callback is queued.
 */
FL_EXPORT int fl_fence_add_callback(struct fl_fence *fence, struct fl_fence_cb *cb,
				    fl_fence_cb_t func);

/**
 * fl_fence_remove_callback() - cancel a queued callback
 * @fence: the fence the callback was added to (borrowed)
 * @cb: the record
 *
 * After this returns the callback is not running and will never run: if
 * another thread is running it right now, this waits for it to return
 * (unless called from inside that very callback).
 * Return: 1 if the callback was removed before it ran, 0 if it had already
 * run (or was never queued), -EINVAL for a NULL argument or a @cb queued on
 * another fence.
 */
FL_EXPORT int fl_fence_remove_callback(struct fl_fence *fence, struct fl_fence_cb *cb);

/**
 * fl_fence_get_name() - the fence's name
 * @fence: the fence (borrowed)
 * Return: a string owned by @fence (at most 31 bytes), "" for NULL.
 */
FL_EXPORT const char *fl_fence_get_name(const struct fl_fence *fence);

/**
 * fl_fence_get_num_points() - how many points the fence holds
 * @fence: the fence (borrowed)
 * Return: the count (>= 1), or -EINVAL for NULL.
 */
FL_EXPORT int fl_fence_get_num_points(const struct fl_fence *fence);

/**
 * fl_fence_get_info() - status, name and per-point details of a fence
 * @fence: the fence (borrowed)
 * @ret_info: filled with the summary; may be NULL
 * @points: array of @max_points entries to fill, in point order; may be
 *	NULL when @max_points is 0 (the count-then-fill pattern: call once
 *	with 0 to learn @ret_info->num_points, then again with an array)
 * @max_points: capacity of @points
 *
 * Return: the number of entries written to @points (<= @max_points), or
 * -EINVAL.
 */
FL_EXPORT int fl_fence_get_info(struct fl_fence *fence, struct fl_fence_info *ret_info,
				struct fl_sync_pt_info *points, uint32_t max_points);

/**
 * fl_fence_get_point_driver_data() - driver-private bytes of one point
 * @fence: the fence (borrowed)
 * @index: the point's index in fence order (< fl_fence_get_num_points())
 * @buf: destination
 * @size: capacity of @buf
 *
 * Uses the driver's fill_driver_data op (sw_sync writes its 32-bit value).
 * Return: bytes written (0 if the driver has no such op), -EINVAL for bad
 * arguments, or the driver's error (e.g. -ENOMEM if @size is too small).
 */
FL_EXPORT int fl_fence_get_point_driver_data(struct fl_fence *fence, uint32_t index, void *buf,
					     size_t size);

/**
 * fl_fence_export_fd() - make a new pollable file descriptor for a fence
 * @fence: the fence (borrowed)
 * @ret_fd: on success, a new O_CLOEXEC fd owned by the caller
 *
 * The fd becomes readable when the fence completes (see the DOC above) and
 * stays so. Every call makes a new fd. Like a kernel sync_file, the fd holds
 * a reference on the fence: the fence object lives at least until every
 * copy of the fd (dups, and copies in other processes) is closed, so
 * fl_fence_from_fd() works on it until then. In-process, each fd costs two
 * descriptors of this process (the fd and the core's end of the pair, which
 * the core closes shortly after the last copy of the fd is closed): count
 * that against RLIMIT_NOFILE. The fd has mode 0, so that no holder but
 * root can open a second copy of the pipe through /proc/self/fd.
 * Return: 0, -EINVAL, -EMFILE, -ENFILE or -ENOMEM.
 */
FL_EXPORT int fl_fence_export_fd(struct fl_fence *fence, int *ret_fd);

/**
 * fl_fence_get_fd() - the fence's own pollable fd
 * @fence: the fence (borrowed)
 *
 * Like fl_fence_export_fd(), but the fd is made once and owned by the
 * fence: do not close it; it is valid while the caller holds a reference.
 * Return: the fd (>= 0), or -EINVAL, -EMFILE, -ENFILE, -ENOMEM.
 */
FL_EXPORT int fl_fence_get_fd(struct fl_fence *fence);

/**
 * fl_fence_from_fd() - find the fence behind a fenceline fence fd
 * @fd: an fd from fl_fence_export_fd() or fl_fence_get_fd(), or a dup of
 *	one, in this process (borrowed)
 * @ret_fence: on success, a new reference owned by the caller
 * Return: 0; -EBADF if @fd is not open; -ENOTTY if it is not a fence fd of
 * a fence still alive in this process.
 */
FL_EXPORT int fl_fence_from_fd(int fd, struct fl_fence **ret_fence);

/**
 * fl_fence_fd_get_status() - status of a fence fd, from the fd alone
 * @fd: a fenceline fence fd (borrowed), possibly received from another
 *	process
 *
 * In the process whose core made the fd, the status comes from the core,
 * never from bytes in the fd, so no holder can change it. In another
 * process (the fd inherited or received), it is the status record in the
 * pipe, copied out with tee() and left there; a daemon's fd (a socket) has
 * its record peeked. No call into the process that owns the fence.
 * Return: 0 active, 1 signalled, the fence's negative error, -ECONNRESET if
 * the signalling side went away without completing the fence (in another
 * process: also when a holder there read the record out of the pipe),
 * -EBADF if @fd is not open, -ENOTTY if it is not a fenceline fence fd. An
 * unrelated AF_UNIX stream socket with nothing to read, or a pipe of mode 0
 * with nothing in it, looks like an active fence (0): in-process,
 * fl_fence_from_fd() tells them apart.
 */
FL_EXPORT int fl_fence_fd_get_status(int fd);

/**
 * fl_fence_fd_wait() - wait on a fence fd and report how it completed
 * @fd: a fenceline fence fd (borrowed)
 * @timeout_ms: < 0 forever, 0 only checks, > 0 at most that long
 *
 * In daemon mode, a wait that is about to block on a fence of the daemon
 * is reported to it first (one message, no reply), so that `fencectl
 * deadlocks` and `fencectl trace` see who waits on what; a fence already
 * complete costs nothing more. Set FENCELINE_WAIT_EDEADLK=1 to have every
 * wait behave as fl_fence_fd_wait_flags() with FL_WAIT_DEADLOCK_ERROR.
 * Return: like fl_fence_wait(): 0, the fence's error, -ETIME, or -EBADF,
 * -ENOTTY, -ECONNRESET as for fl_fence_fd_get_status().
 */
FL_EXPORT int fl_fence_fd_wait(int fd, int timeout_ms);

/**
 * FL_WAIT_DEADLOCK_ERROR - fl_fence_fd_wait_flags(): fail with -EDEADLK
 * instead of blocking for good when the daemon finds that this wait is the
 * one that closed a cycle of waits (docs/fencectl.md, "deadlocks")
 */
#define FL_WAIT_DEADLOCK_ERROR 1u

/**
 * fl_fence_fd_wait_flags() - fl_fence_fd_wait() with options
 * @fd: a fenceline fence fd (borrowed)
 * @timeout_ms: < 0 forever, 0 only checks, > 0 at most that long
 * @flags: 0 or FL_WAIT_DEADLOCK_ERROR
 *
 * With FL_WAIT_DEADLOCK_ERROR the wait also polls a pipe the daemon answers
 * on: if this thread's wait closes a cycle (every thread of every process
 * in it waits on a fence that only another process of the cycle can
 * signal), the daemon's detector, which looks at waits older than 100 ms
 * every 250 ms, makes it return -EDEADLK within about a second (a cycle
 * closed by a wait that did not ask: the last of its waits that asked
 * gets it, see docs/fencectl.md). The other
 * waiters of the cycle keep waiting: the caller is expected to break the
 * cycle (signal its timelines with an error, drop work). In-process fences
 * and kernel sync_files are waited on as by fl_fence_fd_wait().
 * Return: as fl_fence_fd_wait(), plus -EDEADLK; -EINVAL for unknown @flags.
 */
FL_EXPORT int fl_fence_fd_wait_flags(int fd, int timeout_ms, unsigned int flags);

FL_END_DECLS

#endif /* FENCELINE_FENCE_H */

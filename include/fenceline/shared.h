/* SPDX-License-Identifier: MIT */
/**
 * DOC: shared timelines and fences - the fd API that works across processes
 *
 * These functions name timelines and fences by file descriptor only, like
 * the kernel's sw_sync and sync_file, so the objects can live anywhere:
 *
 * - in **daemon mode** (the default) they live in fencelined, which the
 *   library starts on first use (see docs/daemon.md). Timeline and fence
 *   fds then work in every process that holds a copy: passed with
 *   SCM_RIGHTS (<fenceline/transfer.h>), inherited through fork() and
 *   exec() (clear O_CLOEXEC first), or dup'd. A timeline dies, failing its
 *   pending points with -ENOENT, when the last copy of its fd is closed in
 *   every process (a SIGKILLed owner included); a fence lives while any
 *   copy of its fd is open or another fence holds it.
 * - in **in-process mode** they live in this process's core (no daemon, no
 *   socket): choose it with fl_mode_set() or FENCELINE_MODE=in-process.
 *   Such fence fds still wait (poll, fl_fence_fd_wait()) correctly in other
 *   processes, but only this process can merge or query them.
 *
 * Waiting never talks to the daemon: a fence fd is readable once the fence
 * has completed, and fl_fence_fd_get_status() reads the status from the fd.
 * Merging and querying pass the fds themselves to the daemon as proof of
 * possession; nothing can be looked up by a guessable id.
 *
 * If the daemon dies, every fence fd it served becomes readable with status
 * -ECONNRESET, calls on its timeline fds fail with -ECONNRESET, and the
 * next call that creates something starts a new daemon. These calls may be
 * made from any number of threads, and in the child after fork().
 *
 * Errors: in daemon mode, a call that talks to the daemon may return the
 * daemon errors of <fenceline/fenceline.h> (``-ECONNREFUSED``,
 * ``-ECONNRESET``, ``-ETIMEDOUT``, ``-EPROTO``...) besides those its own
 * documentation names.
 */
#ifndef FENCELINE_SHARED_H
#define FENCELINE_SHARED_H

#include <stdint.h>

#include <fenceline/export.h>
#include <fenceline/fence.h>

FL_BEGIN_DECLS

/**
 * enum fl_mode - where new fd-API objects live
 * @FL_MODE_DAEMON: in fencelined, usable from every process (the default)
 * @FL_MODE_IN_PROCESS: in this process's core; no daemon is ever started
 */
enum fl_mode {
	FL_MODE_DAEMON = 0,
	FL_MODE_IN_PROCESS = 1,
};

/**
 * fl_mode_set() - choose where timelines made from now on live
 * @mode: %FL_MODE_DAEMON or %FL_MODE_IN_PROCESS
 *
 * Overrides FENCELINE_MODE ("daemon" or "in-process") for this process:
 * the mode of the default context (<fenceline/context.h>, where a library
 * gets a mode of its own).
 * Existing fds keep working whatever the mode; fences of both kinds can be
 * waited on together, but merging an in-process fence with a daemon fence
 * fails with -ENOENT.
 * Return: 0, or -EINVAL for an unknown mode.
 */
FL_EXPORT int fl_mode_set(enum fl_mode mode);

/**
 * fl_mode_get() - the mode new timelines get
 * Return: the mode last set, else the one FENCELINE_MODE names, else
 * %FL_MODE_DAEMON.
 */
FL_EXPORT enum fl_mode fl_mode_get(void);

/**
 * fl_timeline_fd_create() - create a sw_sync timeline and return its fd
 * @name: the timeline's name, truncated to 31 bytes; NULL gives "sw_sync"
 * @flags: 0 or %FL_SW_SYNC_32BIT (<fenceline/sw_sync.h>)
 * @ret_fd: on success, a new O_CLOEXEC fd owned by the caller: the handle
 *	through which the timeline is signalled
 * Return: 0; -EINVAL (bad flags or pointer); -EMFILE, -ENFILE, -ENOMEM;
 * -EMFILE also when the daemon's per-client timeline limit is reached;
 * -EACCES if the daemon refuses this user; -ECONNREFUSED if no daemon
 * answers and none could be started.
 */
FL_EXPORT int fl_timeline_fd_create(const char *name, unsigned int flags, int *ret_fd);

/**
 * fl_timeline_fd_inc() - advance a timeline and signal the points it passed
 * @timeline_fd: a timeline fd (borrowed)
 * @count: how much to add
 *
 * Like SW_SYNC_IOC_INC: when this returns, every fence fd of a point at or
 * below the new value is readable, in every process. In the process that
 * created the timeline, the fences it made complete without a hop through
 * the daemon, and the call waits for the daemon only if it reached a point
 * that only the daemon can complete (a merged fence, another process's).
 * In any other process, a point whose fence the creating process made is
 * readable only once that process closed its end (its library's watcher
 * thread does, with no call of the program): the call waits for it, so a
 * stopped creator holds it until it runs again, dies or disconnects, or
 * the request times out (FENCELINE_REQUEST_TIMEOUT_MS, the step taken).
 * Return: 0; -EBADF if @timeline_fd is not open; -ENOTTY if it is not a
 * timeline fd; -ECONNRESET if the daemon serving it has died; -ETIMEDOUT
 * if the daemon's answer took longer than the request timeout.
 */
FL_EXPORT int fl_timeline_fd_inc(int timeline_fd, uint64_t count);

/**
 * fl_timeline_fd_inc_at() - fl_timeline_fd_inc() whose points get a given time
 * @timeline_fd: a timeline fd (borrowed)
 * @count: how much to add
 * @timestamp_ns: the CLOCK_MONOTONIC time the points this step completes
 *	report (fl_fence_fd_get_info(), sync_file_info()): when the event
 *	they stand for happened, such as the vsync a display flipped at,
 *	rather than when this call ran
 *
 * The time must have come: not after the clock when the call is made
 * (no slack: a time the caller has already seen happen is always in the
 * past, and a future one could sort a later plain step's points before
 * this one's). It must not be before the time the timeline's previous
 * step gave its points, so a timeline's points complete in time order.
 * In the process that created a daemon timeline the previous step is
 * this process's own last one: a step another process took in between
 * through the daemon is not seen by that check. A kernel-compatible sw_sync
 * timeline (SW_SYNC_IOC_INC, sw_sync_timeline_inc()) is unchanged: its
 * points get the time they complete.
 * Return: as fl_timeline_fd_inc(); -EINVAL for a @timestamp_ns of 0,
 * after now, or before the previous step's (nothing changes then);
 * -EPROTONOSUPPORT from a daemon too old to take a time, when the step
 * has to go through it.
 */
FL_EXPORT int fl_timeline_fd_inc_at(int timeline_fd, uint64_t count, uint64_t timestamp_ns);

/**
 * fl_timeline_fd_fail_pending() - fail a timeline's pending work and go on
 * (fl_timeline_fail_pending() for a timeline fd)
 * @timeline_fd: a timeline fd (borrowed)
 * @status: what every pending point completes with, -4095 to -1: -EIO for
 *	a context that was reset, -ETIMEDOUT for a hang
 *
 * A producer's reset without touching anyone else: points its counter has
 * reached signal first; every point still pending fails with @status, in
 * every process (fence fds poll ready, their info says @status; merges
 * holding them fail too). The timeline lives on at its value, so the
 * producer's next fences are pending as usual. Any holder of the timeline
 * fd may call it, as any may step it. Not part of the kernel's sw_sync
 * uapi (its emulation stays exact); daemon traces show it as a "fail"
 * event (docs/trace-format.md).
 * Return: how many points failed (>= 0); -EINVAL (@status out of range);
 * as fl_timeline_fd_inc() otherwise; -ENOENT for a timeline that died;
 * -EOPNOTSUPP from a daemon too old to know the call.
 */
FL_EXPORT int fl_timeline_fd_fail_pending(int timeline_fd, int status);

/**
 * fl_timeline_fd_get_value() - the timeline's current value
 * @timeline_fd: a timeline fd (borrowed)
 * @ret_value: the value
 * Return: as fl_timeline_fd_inc(), or -EINVAL for a NULL @ret_value.
 */
FL_EXPORT int fl_timeline_fd_get_value(int timeline_fd, uint64_t *ret_value);

/**
 * fl_timeline_fd_close() - close a timeline fd as the kernel closes sw_sync's
 * @fd: a timeline fd (consumed, whatever the result)
 *
 * Like close(), and if this was the last copy of the fd anywhere, returns
 * only once the timeline has died in the daemon: every fence still pending
 * on it has failed with -ENOENT and its fd polls ready. A plain close() gets
 * there a moment later. Costs one round trip to the daemon for a socket,
 * and one more first when fences this process made without waiting
 * (fl_fence_fd_create()) are still on their way to the daemon: they go
 * first, so that they are fences of the timeline when it dies. (After a
 * plain close(), or the exit of the timeline's last holder, such a fence
 * may read -ENOENT without being a fence the daemon knows: info -ENOTTY.)
 * In in-process mode, and in a process that has not talked to the daemon
 * yet (a copy inherited through fork() or exec()), it is a plain close().
 * Return: 0, or close()'s error: -EBADF, -EINTR, -EIO.
 */
FL_EXPORT int fl_timeline_fd_close(int fd);

/**
 * fl_fence_fd_create() - create a fence that signals when the timeline
 * reaches @value
 * @timeline_fd: a timeline fd (borrowed)
 * @value: the point's value; at or below the current value gives a fence
 *	that has already signalled
 * @name: the fence's name, truncated to 31 bytes; NULL gives ""
 * @ret_fd: on success, a new O_CLOEXEC fence fd owned by the caller
 *
 * For a daemon timeline that this process created, this does not wait for
 * the daemon: the request is queued behind earlier ones of this process, so
 * a later fl_timeline_fd_inc(), merge or info sees the fence; for a value
 * reached, the fd is completed here (signalled, stamped now) and polls
 * ready when this returns, as a kernel sync_file would. For another
 * process's timeline, whose value this process cannot see, it waits for
 * the daemon's answer, for the same reason. A request the daemon
 * then refuses (a per-client fence limit, a @timeline_fd that is not a
 * timeline) completes the fence with that error (-EMFILE, -ENOTTY) instead
 * of failing here.
 * Return: 0; -EINVAL; -EBADF if @timeline_fd is not open; -EMFILE, -ENFILE,
 * -ENOMEM; -ENOTTY for an in-process @timeline_fd that is not a timeline;
 * -ECONNRESET if the daemon serving it has died.
 */
FL_EXPORT int fl_fence_fd_create(int timeline_fd, uint64_t value, const char *name, int *ret_fd);

/**
 * fl_fence_fd_merge() - make a fence fd that completes when both inputs have
 * @fd1: a fence fd (borrowed)
 * @fd2: a fence fd (borrowed)
 * @name: the new fence's name, truncated to 31 bytes; NULL gives ""
 * @flags: 0, or %FL_MERGE_WAIT_ALL and %FL_MERGE_MAINLINE or'd (see
 *	fl_fence_merge())
 * @ret_fd: on success, a new O_CLOEXEC fence fd owned by the caller
 *
 * The new fence lives on even when every process that made its inputs has
 * exited. Both fds must be fences of the same home (the daemon, or this
 * process in in-process mode).
 * Return: 0; -EINVAL; -EBADF if @fd1 is not open; -ENOTTY if @fd1 is not
 * a fence fd; -ENOENT if @fd2 is not a fence fd of the same home (the
 * kernel's SYNC_IOC_MERGE answers); -EMFILE, -ENFILE, -ENOMEM;
 * -ECONNRESET if the daemon serving them has died.
 */
FL_EXPORT int fl_fence_fd_merge(int fd1, int fd2, const char *name, unsigned int flags,
				int *ret_fd);

/**
 * fl_fence_fd_get_info() - status, name and points of a fence, by fd
 * @fd: a fence fd (borrowed)
 * @ret_info: filled with the summary; may be NULL
 * @points: array of @max_points entries to fill in point order; may be NULL
 *	when @max_points is 0
 * @max_points: capacity of @points
 *
 * fl_fence_fd_get_info_flags() with @flags 0.
 * Return: the number of entries written, or -EINVAL, -EBADF, -ENOTTY (not
 * a fence fd of this process or of the daemon), -ECONNRESET.
 */
FL_EXPORT int fl_fence_fd_get_info(int fd, struct fl_fence_info *ret_info,
				   struct fl_sync_pt_info *points, uint32_t max_points);

/**
 * FL_INFO_NO_TIMESTAMPS - fl_fence_fd_get_info_flags(): the caller does not
 * read the timestamps, so the call need not find them; they read 0
 */
#define FL_INFO_NO_TIMESTAMPS 1u

/**
 * fl_fence_fd_get_info_flags() - fl_fence_fd_get_info() with options
 * @fd: a fence fd (borrowed)
 * @flags: 0 or FL_INFO_NO_TIMESTAMPS
 * @ret_info: filled with the summary; may be NULL
 * @points: array of @max_points entries to fill in point order; may be NULL
 *	when @max_points is 0
 * @max_points: capacity of @points
 *
 * A signalled one-point fence of the daemon reports the time its completer
 * wrote into its pipe, which costs a scratch pipe, a tee() and a read() in
 * the calling process (docs/architecture.md, "The status page"). A caller
 * that wants only the count, the name or the status (the first call of
 * count-then-fill, a check that @fd is a fence) passes
 * FL_INFO_NO_TIMESTAMPS: then @ret_info's and every entry's timestamp_ns
 * read 0, and everything else is as with @flags 0.
 * Return: as fl_fence_fd_get_info(); -EINVAL also for an unknown flag.
 */
FL_EXPORT int fl_fence_fd_get_info_flags(int fd, unsigned int flags, struct fl_fence_info *ret_info,
					 struct fl_sync_pt_info *points, uint32_t max_points);

/**
 * fl_fence_fd_import() - a fence fd that completes with a kernel sync_file
 * @sync_file_fd: a kernel sync_file fd, e.g. from a GPU driver (borrowed)
 * @name: the fence's name, truncated to 31 bytes; NULL or "" gives the
 *	sync_file's own name
 * @ret_fd: on success, a new O_CLOEXEC fence fd owned by the caller
 *
 * fl_sync_file_import() where the fence fds live: in daemon mode the
 * daemon takes a copy of @sync_file_fd and watches it, so the new fence
 * can be merged with other daemon fences and outlives this process.
 * Return: 0; -EBADF (@sync_file_fd not open); -EINVAL (not a sync_file);
 * -EMFILE, -ENFILE, -ENOMEM; -ECONNRESET if the daemon has died.
 */
FL_EXPORT int fl_fence_fd_import(int sync_file_fd, const char *name, int *ret_fd);

/**
 * fl_fence_fd_set_deadline() - fl_fence_set_deadline() on a fence fd
 * @fd: a fence fd (borrowed)
 * @deadline_ns: CLOCK_MONOTONIC time by which the fence is wanted
 *
 * Works across processes: any holder of a copy of the fd can set a
 * deadline and any other read it back (fl_fence_fd_get_deadline()). On a
 * fence of the daemon's that its status page lists, the deadline is sent
 * without waiting for the daemon: this process reads it back at once,
 * another one once the daemon has read the request (it serves clients in
 * turn, so within one of its passes).
 * Return: 0, or -EBADF, -ENOTTY (not a fence fd), -ECONNRESET.
 */
FL_EXPORT int fl_fence_fd_set_deadline(int fd, uint64_t deadline_ns);

/**
 * fl_fence_fd_get_deadline() - fl_fence_get_deadline() on a fence fd
 * @fd: a fence fd (borrowed)
 * @ret_ns: on success, the earliest deadline set on the fence's point
 * Return: 0; -ENOENT if none was set; -EINVAL for a fence of several points
 * or of a driver that records no deadlines (sw_sync does); -EBADF, -ENOTTY
 * (not a fence fd), -ECONNRESET.
 */
FL_EXPORT int fl_fence_fd_get_deadline(int fd, uint64_t *ret_ns);

/**
 * fl_daemon_connect() - make sure a daemon answers, starting one if needed
 *
 * The fd API connects on first use by itself; call this to pay the start-up
 * cost early or to check the set-up (socket path, permissions).
 * Return: the daemon's pid (> 0), or -EACCES (refused: another user's
 * daemon), -EPROTONOSUPPORT (a daemon of another protocol version),
 * -ECONNREFUSED (none answers and none could be started), -ENAMETOOLONG
 * (socket path), -EPERM (an unsafe socket directory).
 */
FL_EXPORT int fl_daemon_connect(void);

/**
 * fl_daemon_flush() - wait until the daemon has made this process's fences
 *
 * fl_fence_fd_create() on a daemon timeline does not wait for the daemon,
 * so for a few microseconds a fence made for a value the timeline has
 * already reached may not yet read as signalled through a plain poll().
 * fl_fence_fd_get_status(), fl_fence_fd_wait() and libsync's sync_wait()
 * call this first, so they never see that; call it yourself before a
 * zero-timeout poll() that must see it. Costs one round trip to the
 * daemon, and nothing when no creation is outstanding. Other processes
 * never see the gap: the daemon handles a creation before any request that
 * names the new fd.
 */
FL_EXPORT void fl_daemon_flush(void);

/**
 * fl_daemon_disconnect() - close this process's connection to the daemon
 *
 * To create fences without waiting, the library keeps a few fence fds ready
 * (up to 32, handed out by the daemon, and close-on-exec), besides its one
 * connection. This flushes (fl_daemon_flush()), then closes both, for a
 * program that counts its fds (a leak check) or is about to lower its fd
 * limit. Every fence and timeline fd stays valid: they live as long as
 * their fds. The next call that needs the daemon connects again. Never
 * fails; does nothing when not connected.
 */
FL_EXPORT void fl_daemon_disconnect(void);

/**
 * struct fl_wait_report - a wait announced with fl_fence_fd_wait_begin()
 * @token: the daemon's name for the wait (0: nothing was reported)
 * @notify_fd: -1, or (FL_WAIT_DEADLOCK_ERROR) an fd to poll for POLLIN
 *	beside the fence: when it is readable, call
 *	fl_fence_fd_wait_notified(). It belongs to the report: only
 *	fl_fence_fd_wait_end() closes it.
 */
struct fl_wait_report {
	uint64_t token;
	int notify_fd;
};

/**
 * fl_fence_fd_wait_begin() - announce that this thread blocks on a fence fd
 * @fd: the fence fd about to be polled (borrowed)
 * @timeout_ms: how long the caller will wait (-1: no limit); shown by
 *	fencectl and traces
 * @flags: 0 or FL_WAIT_DEADLOCK_ERROR (see fl_fence_fd_wait_flags())
 * @ret: filled in; pass it to fl_fence_fd_wait_end()
 *
 * For event loops that poll fence fds themselves: fl_fence_fd_wait() and
 * libsync's sync_wait() do this for you. The report lets the daemon see who
 * waits on what (fencectl dump and deadlocks, traces). Call it only when
 * the loop will really block on @fd (the fence is still active), and call
 * fl_fence_fd_wait_end() when the loop stops waiting. A fence that is not
 * the daemon's (in-process, kernel sync_file), in-process mode, or no
 * daemon running: nothing is reported, @ret->token is 0. Never starts a
 * daemon; costs one message, no reply.
 * Return: 0 (also when nothing was reported), -EINVAL for a NULL @ret or
 * unknown @flags, -EMFILE/-ENFILE if the notify pipe cannot be made.
 */
FL_EXPORT int fl_fence_fd_wait_begin(int fd, int timeout_ms, unsigned int flags,
				     struct fl_wait_report *ret);

/**
 * fl_fence_fd_wait_notified() - read what the daemon said on @w's notify_fd
 * @w: a report from fl_fence_fd_wait_begin()
 *
 * Return: -EDEADLK when this wait closed a deadlock cycle (stop waiting and
 * break it), or 0: nothing for this wait (keep waiting). Once the daemon is
 * done with the wait (the fence completed) the fd polls hung up: stop
 * polling it then.
 */
FL_EXPORT int fl_fence_fd_wait_notified(struct fl_wait_report *w);

/**
 * fl_fence_fd_wait_end() - the wait announced by @w is over
 * @w: the report; its notify_fd is closed and its token cleared
 * @result: 1 if the loop stopped because the fence completed (the daemon
 *	ends such waits by itself, so nothing is sent), else what the wait
 *	came to: -ETIME, -EDEADLK, another -errno
 */
FL_EXPORT void fl_fence_fd_wait_end(struct fl_wait_report *w, int result);

FL_END_DECLS

#endif /* FENCELINE_SHARED_H */

/* SPDX-License-Identifier: MIT */
/**
 * DOC: introspect - what the daemon holds, for tools (unstable)
 *
 * The requests `fencectl` makes (docs/fencectl.md): the daemon's dump and
 * its views (fds by process, waits and deadlocks, statistics, heaps),
 * trace sessions, and the daemon's pid. A tool uses these instead of the
 * wire protocol.
 *
 * **Unstable.** The calls, their flags and the formats of what they return
 * may change in any release, and the symbols are in a version node of
 * their own (FENCELINE_INTROSPECT_0) so that a change is visible to the
 * dynamic linker. Define FL_USE_UNSTABLE_INTROSPECT_API to acknowledge it.
 *
 * **Never starts a daemon.** Looking must not change what is looked at:
 * every call asks the daemon that runs for this user (the socket of
 * $FENCELINE_SOCKET or the default, docs/daemon.md), and with none running
 * it fails with -ENOENT. It uses this process's connection to the daemon
 * (connecting when there is none), the same one the fd API
 * (<fenceline/shared.h>) uses, whatever fl_mode_set() chose for
 * timelines; $FENCELINE_REQUEST_TIMEOUT_MS bounds each request (read at
 * each connection), and a daemon that does not answer in time gives
 * -ETIMEDOUT.
 *
 * **What comes back.** The views are sealed memfds: regular files that
 * nobody can change, holding text or JSON (formats and schemas in
 * docs/fencectl.md). The caller owns the fd and closes it; read it with
 * read() or pread(), or whole with fl_introspect_read().
 *
 * **Errors** every call that asks the daemon may return besides its own:
 * -ENOENT (no daemon runs), -ECONNRESET (it went away during the request),
 * -ETIMEDOUT (it did not answer in time), -EACCES or -EPERM (the daemon or
 * the socket belongs to another user), -EPROTONOSUPPORT (it speaks another
 * protocol version), -EPROTO (an answer that makes no sense), -EMFILE or
 * -ENFILE (no fd left for the answer), -ENOMEM.
 *
 * Threads: any thread; the requests of one process go over its one
 * connection, one at a time.
 */
#ifndef FENCELINE_INTROSPECT_H
#define FENCELINE_INTROSPECT_H

#ifndef FL_USE_UNSTABLE_INTROSPECT_API
#error "The fenceline introspection API is unstable: define FL_USE_UNSTABLE_INTROSPECT_API to use it"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

/** fl_introspect_dump() and its views: JSON instead of text. */
#define FL_INTROSPECT_JSON (1u << 0)
/** fl_introspect_dump_stats(): after this answer, the daemon starts counting afresh. */
#define FL_INTROSPECT_RESET (1u << 1)

/**
 * fl_introspect_dump() - every timeline, fence, waiter and client of the daemon
 * @flags: 0 or %FL_INTROSPECT_JSON
 * @ret_fd: on success, a sealed memfd (O_CLOEXEC) holding the dump, owned
 *	by the caller, who close()s it; written on success only
 *
 * What `fencectl dump` prints: each live timeline (name, driver, value,
 * pending points, the process owning its counter, the processes holding
 * its fd), each fence (name, status, points, holders), the waits in
 * progress and each connected client. The daemon first catches up with the
 * counters that owners signal without it, so values are current.
 * Return: 0; -EINVAL (@ret_fd NULL, or an unknown flag); a connection error
 * (see the top of this header: -ENOENT when no daemon runs).
 */
FL_EXPORT int fl_introspect_dump(unsigned int flags, int *ret_fd);

/**
 * fl_introspect_dump_fds() - the fence and timeline fds each process holds
 * @pid: only this process, or 0 for every process
 * @flags: 0 or %FL_INTROSPECT_JSON
 * @ret_fd: as fl_introspect_dump()'s
 *
 * What `fencectl fds` prints: for each process holding fds of the daemon,
 * how many fences (and how many of them pending) and timelines, and each
 * one's name, status and age. A process holding none is not listed.
 * Return: 0; -EINVAL (@ret_fd NULL, @pid negative, or an unknown flag); a
 * connection error.
 */
FL_EXPORT int fl_introspect_dump_fds(pid_t pid, unsigned int flags, int *ret_fd);

/**
 * fl_introspect_dump_waits() - the waits in progress, and the deadlocks found
 * @flags: 0 or %FL_INTROSPECT_JSON
 * @ret_fd: as fl_introspect_dump()'s
 *
 * What `fencectl deadlocks` prints: each blocking wait the library reported
 * (process, thread, fence, for how long), the cycles of waits that can
 * never end and the waits on fences nobody can signal any more, found now,
 * and the last findings. In JSON, `"deadlocks":[]` and `"never_signal":[]`
 * say that nothing is found now.
 * Return: 0; -EINVAL (@ret_fd NULL or an unknown flag); a connection error.
 */
FL_EXPORT int fl_introspect_dump_waits(unsigned int flags, int *ret_fd);

/**
 * fl_introspect_dump_stats() - fence latency and wait statistics
 * @flags: %FL_INTROSPECT_JSON, %FL_INTROSPECT_RESET, both, or 0
 * @ret_fd: as fl_introspect_dump()'s
 *
 * What `fencectl stats` prints: per timeline and per fence name, the
 * fences completed and failed, create-to-signal latency, blocking waits
 * and their time, as percentiles, since the daemon started or the last
 * reset. With %FL_INTROSPECT_RESET the daemon starts counting afresh
 * right after writing this answer (nothing is lost between the two).
 * Return: 0; -EINVAL (@ret_fd NULL or an unknown flag); a connection error.
 */
FL_EXPORT int fl_introspect_dump_stats(unsigned int flags, int *ret_fd);

/**
 * fl_introspect_dump_heaps() - the daemon's heaps and what each client holds
 * @flags: 0 or %FL_INTROSPECT_JSON
 * @ret_fd: as fl_introspect_dump()'s
 *
 * What `fencectl heaps` prints: the allocation service's heaps
 * (<fenceline/heap-daemon.h>), the clients holding buffers from each (pid,
 * comm, bytes, buffers, peak), totals, limits and refusals.
 * Return: 0; -EINVAL (@ret_fd NULL or an unknown flag); a connection error.
 */
FL_EXPORT int fl_introspect_dump_heaps(unsigned int flags, int *ret_fd);

/**
 * fl_introspect_trace_start() - start recording a trace of everything the daemon sees
 * @max_events: keep at most this many events (beyond it they are counted,
 *	not kept); 0 for the daemon's default. The daemon's own cap applies
 *	whatever is asked.
 *
 * One session runs at a time, system-wide for this daemon. It belongs to
 * this process's connection: it ends, unread, when that connection does
 * (the process exits, or calls fl_daemon_disconnect()), and only this
 * process can stop it. While it records, timeline owners tell the daemon
 * of every signal (a round trip each), so stop it when done.
 * Return: 0; -EBUSY (a session is recording already, this process's
 * included); a connection error.
 */
FL_EXPORT int fl_introspect_trace_start(unsigned int max_events);

/**
 * fl_introspect_trace_stop() - end this process's trace session and get the trace
 * @ret_fd: on success, a sealed memfd (O_CLOEXEC) holding the trace in
 *	Chrome's JSON trace format (docs/trace-format.md), owned by the
 *	caller, who close()s it; written on success only
 *
 * Return: 0; -EINVAL (@ret_fd NULL); -ENOENT (no session is recording, or
 * no daemon runs: either way there is no trace to get); -EPERM (another
 * process's session is recording); -ENOMEM or -EMFILE (the daemon could
 * not write the trace: the session is over all the same, its events
 * lost); a connection error.
 */
FL_EXPORT int fl_introspect_trace_stop(int *ret_fd);

/**
 * fl_introspect_read() - read a whole view or trace into a buffer
 * @fd: a memfd from one of the calls above (borrowed), or any regular
 *	file; read from its start with pread(), so its offset does not move
 * @buf: where the contents go, NUL-terminated; may be NULL when @cap is 0
 * @cap: the size of @buf, which must leave room for the NUL
 * @ret_len: the length of the contents, without the NUL: on success, what
 *	was written to @buf; with -ENOBUFS, the length a buffer of at least
 *	@ret_len + 1 bytes will take
 *
 * Call it with @cap 0 first to learn the size, or with a buffer that is
 * probably large enough. The view fds are sealed, so their length never
 * changes. A view of text or JSON holds no NUL of its own.
 * Return: 0; -EINVAL (@ret_len NULL, @buf NULL with @cap not 0, or @fd not
 * a regular file); -EBADF (@fd is not open); -ENOBUFS (@cap is too small:
 * nothing but *@ret_len was written); -EFBIG (the contents do not fit in
 * this process's address space); -EIO or another read() error.
 */
FL_EXPORT int fl_introspect_read(int fd, char *buf, size_t cap, size_t *ret_len);

/**
 * fl_introspect_display_dump() - the display service's devices, screens and post queues
 * @flags: 0 or %FL_INTROSPECT_JSON
 * @ret_fd: as fl_introspect_dump()'s
 *
 * What `fencectl dump` shows under "displays": for each device of
 * fl-displayd (docs/display.md) its interfaces (DPMS, connection, mode,
 * last vsync), the post on screen, each queued post with its age and
 * buffers and, for each acquire fence it still waits for, the fence's
 * points and who should signal them (the timeline's owner and the
 * processes holding its fd, as fencelined finds them), and its counters.
 * Asks fl-displayd, not fencelined, over a connection of its own made for
 * this call only, and never starts it: with no display service running
 * (nothing listens on its socket, $FENCELINE_DISPLAY_SOCKET or the
 * default) it fails with -ENOENT. $FENCELINE_REQUEST_TIMEOUT_MS bounds
 * the request.
 * Return: 0; -EINVAL (@ret_fd NULL or an unknown flag); -ENOENT (no
 * display service runs); -EOPNOTSUPP (a service too old to dump); a
 * connection error as the top of this header lists them.
 */
FL_EXPORT int fl_introspect_display_dump(unsigned int flags, int *ret_fd);

/**
 * enum fl_trace_display_type - what a display service tells a trace
 * @FL_TRACE_DISPLAY_POST: a post was queued: @post, @pid (its client),
 *	@buffers, @acquire (how many acquire fences it waits for)
 * @FL_TRACE_DISPLAY_ACQUIRE: one of @post's acquire fences, for buffer
 *	@index; its fd comes with the event, so the trace names the fence
 * @FL_TRACE_DISPLAY_ACQUIRED: that acquire fence finished: @status 0, or
 *	why it failed (-ETIME: it timed out)
 * @FL_TRACE_DISPLAY_FLIP: @post reached the screen at @ts_ns: @vsync_ns
 *	the vsync of interface @index that flipped it (0: none paced it),
 *	@ready_ns when it became ready (its last acquire fence signalled, or
 *	it was queued)
 * @FL_TRACE_DISPLAY_VSYNC: a vsync of interface @index at @ts_ns
 * @FL_TRACE_DISPLAY_RELEASE: @post's buffers were let go: post @by_post
 *	is on screen
 * @FL_TRACE_DISPLAY_DROP: @post will never show (@status: why)
 */
enum fl_trace_display_type {
	FL_TRACE_DISPLAY_POST = 1,
	FL_TRACE_DISPLAY_ACQUIRE = 2,
	FL_TRACE_DISPLAY_ACQUIRED = 3,
	FL_TRACE_DISPLAY_FLIP = 4,
	FL_TRACE_DISPLAY_VSYNC = 5,
	FL_TRACE_DISPLAY_RELEASE = 6,
	FL_TRACE_DISPLAY_DROP = 7,
};

/**
 * struct fl_trace_display_event - one event of a display service for the trace
 * @type: enum fl_trace_display_type
 * @device: the display device's id
 * @post: the post's sequence number on its device
 * @ts_ns: when it happened, CLOCK_MONOTONIC; not 0
 * @vsync_ns: FLIP: see enum fl_trace_display_type; else 0
 * @ready_ns: FLIP: see there; else 0
 * @by_post: RELEASE: see there; else 0
 * @status: ACQUIRED, DROP: 0 or a negative errno; else 0
 * @pid: POST: the client that posted; else 0
 * @index: ACQUIRE, ACQUIRED: the buffer; FLIP, VSYNC: the interface (at
 *	most 65535)
 * @buffers: POST: how many buffers
 * @acquire: POST: how many acquire fences
 */
struct fl_trace_display_event {
	uint32_t type;
	uint32_t device;
	uint64_t post;
	uint64_t ts_ns;
	uint64_t vsync_ns;
	uint64_t ready_ns;
	uint64_t by_post;
	int32_t status;
	uint32_t pid;
	uint32_t index;
	uint32_t buffers;
	uint32_t acquire;
};

/**
 * fl_introspect_tracing() - whether the daemon records a trace now
 *
 * Reads a flag in the status page this process's connection mapped: no
 * syscall, no request, no connection made. A process that has not talked
 * to the daemon yet (or whose daemon predates the flag) reads false.
 * Return: true while a `fencectl trace` session records.
 */
FL_EXPORT bool fl_introspect_tracing(void);

/**
 * fl_introspect_trace_display() - add a display service's event to the trace
 * @ev: the event (borrowed)
 * @fence_fd: an ACQUIRE's acquire fence (borrowed; the daemon names it by
 *	its id in the trace), or -1
 *
 * For fl-displayd (docs/tracing.md, "Display events"): one one-way message
 * to the daemon while a session records (fl_introspect_tracing()), and
 * nothing at all otherwise. The daemon files the event on the display
 * track of @ev->device; an event that arrives after the session ended is
 * dropped.
 * Return: 0 (sent); -ENOENT (no session records: nothing sent); -EINVAL
 * (@ev NULL, an unknown type, @ts_ns 0, a positive @status, an @index
 * above 65535, or a fence
 * with another type than ACQUIRE); -EBADF (@fence_fd not open); a
 * connection error.
 */
FL_EXPORT int fl_introspect_trace_display(const struct fl_trace_display_event *ev, int fence_fd);

/**
 * fl_introspect_get_daemon_pid() - the pid of the daemon that answers
 * @ret_pid: on success, the daemon's pid; written on success only
 *
 * The daemon this process is connected to, connecting first if need be
 * (the daemon's own view, from its greeting). `fencectl` reads that
 * process's fd limit, which is every client's (docs/daemon.md, "File
 * descriptor limits").
 * Return: 0; -EINVAL (@ret_pid NULL); a connection error.
 */
FL_EXPORT int fl_introspect_get_daemon_pid(pid_t *ret_pid);

/**
 * struct fl_introspect_client_stats - this process's side of its daemon
 * connection, counted since the process started (a forked child starts
 * from 0)
 * @pool_fills: POOL_FILL requests sent: batches of fence fds the daemon
 *	makes ahead, so that creating a fence of a bound timeline sends one
 *	message and waits for nothing
 * @pool_fills_taken: their replies taken into the pool
 * @pool_waits: fence creations that found the pool empty and waited for a
 *	fill, each a blocking round trip to the daemon (the first fence of a
 *	connection always does; a steady loop of creations should not)
 * @pool_pooled: 1 while the pool makes fds ahead; 0 once its gate found
 *	that it does not pay in this process (each fence then waits for a
 *	fill of one fd, until the gate tries the pool again)
 * @pool_pooled_ns: the gate's estimate of what a fence's fd costs from the
 *	pool (the fills, polls and receipts that keep it), in ns; 0: no sample yet
 * @pool_bare_ns: its estimate of a round trip that makes one fd, in ns
 * @pool_offs: how often the gate turned the pool off
 * @kicks: kicks read from the daemon: it completed a fence whose signal end
 *	this process kept (another process's step on its timeline, a failure,
 *	or a step the daemon saw first), so this process wrote that end's
 *	record and closed it. A process that signals its own fences sees few.
 *
 * The gate's figures are those of the current connection (a new one
 * starts afresh). Fields may be added at the end; a caller passes the
 * size it knows.
 */
struct fl_introspect_client_stats {
	unsigned long long pool_fills;
	unsigned long long pool_fills_taken;
	unsigned long long pool_waits;
	unsigned long long pool_pooled;
	unsigned long long pool_pooled_ns;
	unsigned long long pool_bare_ns;
	unsigned long long pool_offs;
	unsigned long long kicks;
};

/**
 * fl_introspect_client_stats() - read this process's client counters
 * @ret: filled with the first @size bytes of the counters (the caller's)
 * @size: sizeof(*@ret) as the caller was built with; at most the size
 *	this library knows is written, and a larger @size leaves the rest
 *	of @ret untouched
 *
 * Asks nobody: never connects and never starts a daemon.
 * Return: 0; -EINVAL (@ret NULL or @size 0).
 */
FL_EXPORT int fl_introspect_client_stats(struct fl_introspect_client_stats *ret, size_t size);

FL_END_DECLS

#endif /* FENCELINE_INTROSPECT_H */

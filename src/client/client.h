/* SPDX-License-Identifier: MIT */
/*
 * The library's side of the daemon connection (client.c), used by the fd
 * API (fdapi.c). Private to src/client.
 */
#ifndef FL_CLIENT_H
#define FL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"

/*
 * fl__client_call() - send one request and, unless @oneway, wait for its
 * reply
 * @op, @flags, @body, @body_len: the request (the header is filled here)
 * @fds, @nfds: fds sent with it (borrowed: the caller closes its copies)
 * @oneway: do not wait for a reply
 * @reply, @reply_cap: buffer for the whole reply packet (header included);
 *	may be NULL when @oneway
 * @ret_fd: if not NULL, receives the fd a reply carries (or -1)
 *
 * Connects (starting a daemon) first if this process has no connection,
 * including in a child after fork(). A connection that fails mid-call is
 * dropped, so the next call reconnects. Other threads' requests go out
 * while this one waits for its reply (client.c: pipelined); a disconnect
 * meanwhile (fl__client_disconnect()) fails it with -ECONNRESET.
 * Return: the reply's length (>= sizeof(struct fl_msg_hdr) +
 * sizeof(struct fl_msg_reply)), 0 for a one-way request, or a negative
 * errno: -ECONNRESET if the daemon went away, -ETIMEDOUT if it did not
 * answer in time (the connection is dropped), -EMFILE if the fd the reply
 * carried did not fit in our fd table (the connection stays), -EPROTO for
 * a reply that makes no sense, or a connect error (see fl_daemon_connect()).
 */
int fl__client_call(uint32_t op, uint32_t flags, const void *body, size_t body_len, const int *fds,
		    unsigned int nfds, int oneway, void *reply, size_t reply_cap, int *ret_fd);

/*
 * fl__client_call_no_spawn() - fl__client_call() for a request that only
 * a running daemon can answer (a fence it made), or that must not start
 * one (introspect.c): connects if need be, but never starts a daemon
 * (-ENOENT, -ECONNREFUSED or another connect error when none answers)
 */
int fl__client_call_no_spawn(uint32_t op, const void *body, size_t body_len, const int *fds,
			     unsigned int nfds, void *reply, size_t reply_cap, int *ret_fd);

/* The status field of a reply packet returned by fl__client_call(). */
/*
 * fl__client_call_on() - a request without fds that names a handle from
 * the connection of @generation (see fl__client_fence_new())
 *
 * Return: like fl__client_call(); -ESTALE when that connection is gone
 * (the request was not sent: bind again).
 */
int fl__client_call_on(unsigned int generation, uint32_t op, const void *body, size_t body_len,
		       void *reply, size_t reply_cap);

int32_t fl__client_reply_status(const void *reply);

/*
 * Wait until the daemon has handled every one-way request this process
 * sent (fence creations), so that a fence made for a value the timeline
 * has already passed reads as signalled at once. Free when there are none.
 * Born-signalled fences of our own timelines, ready already, are left to
 * fl__client_flush_all().
 */
void fl__client_flush(void);

/*
 * fl__client_flush_all() - fl__client_flush(), born-signalled fences
 * included: before a timeline's close (the daemon must make them before it
 * sees the timeline die), fl_daemon_flush() and a disconnect.
 */
void fl__client_flush_all(void);

/*
 * fl__client_sync_closes() - PING with FL_MSG_F_AFTER_CLOSES on the live
 * connection, if there is one: returns once the daemon has handled the fds
 * this process closed before. Never connects (or starts a daemon) for it.
 */
void fl__client_sync_closes(void);

/*
 * fl__client_fence_new() - make a fence of a bound timeline from a pooled fd
 * @generation: fl__client_generation() when @handle was bound
 * @handle: from TIMELINE_BIND on that connection
 * @reply_wanted: wait for the daemon's answer; else one-way, and the fd
 *	carries any failure as its status
 * @ret_fd: the fence fd, the caller's
 *
 * Return: 0; -ESTALE when the connection of @generation is gone (bind
 * again); a connection error; with @reply_wanted, the daemon's error.
 */
int fl__client_fence_new(unsigned int generation, uint32_t handle, uint64_t value, const char *name,
			 bool reply_wanted, int *ret_fd);

/*
 * fl__client_merge_signalled() - the merge of two fence fds (borrowed) that
 * the status page lists as signalled, without a round trip: the oldest
 * pooled fd, completed as signalled through its signal end, is made the
 * merge with a one-way FENCE_MERGE_INTO (the inputs' statuses are final,
 * so the merge's is too, and its fd is ready when this returns)
 * @ret_fd: the merged fence's fd, the caller's
 * Return: 0; -EAGAIN (nothing done: no connection, an older daemon, no
 * pooled fd with a signal end at hand, or the send failed: merge with the
 * round trip).
 */
int fl__client_merge_signalled(int fd1, int fd2, const char *name, uint32_t flags, int *ret_fd);

/* A pending point a one-way merge names: on a timeline this process owns, by the daemon's id. */
struct fl__merge_point {
	uint64_t timeline_id;
	uint64_t value;
};

/*
 * fl__client_kept_point() - the point of the fence fd with read end (@dev,
 * @ino), if it is one of ours whose signal end we keep (pending, unless
 * our counter reached it or the daemon failed it since: the caller checks
 * with fl__client_merge_oneway()), in *@ret. For fences whose info record
 * the daemon has not published yet or evicted.
 * Return: 0, or -ENOENT.
 */
int fl__client_kept_point(dev_t dev, ino_t ino, struct fl__merge_point *ret);

/*
 * fl__client_merge_oneway() - the merge of two fence fds (borrowed) whose
 * pending points, @pts (@npts of them, at most 8), all lie on timelines
 * this process owns and that its counters have not reached, made without
 * a round trip: a one-way FENCE_MERGE_INTO into the oldest pooled fd,
 * which the daemon completes when the inputs do. Exact as the round trip
 * (docs/architecture.md, "No waiting for the daemon"): until the daemon
 * has answered a later request, this process's next step of those
 * timelines goes through the daemon (TIMELINE_SYNC); another process's
 * step makes the daemon read our queue before it answers; and a step that
 * raced the send makes this call wait for the daemon (a PING).
 * @ret_fd: the merged fence's fd, the caller's
 * Return: 0; -EAGAIN (nothing done: no connection, a daemon of sync
 * version < FL_MERGE_ONEWAY_SINCE, no pooled fd at hand, a point no longer
 * pending or not ours, or the send failed: merge with the round trip).
 */
int fl__client_merge_oneway(int fd1, int fd2, const char *name, uint32_t flags,
			    const struct fl__merge_point *pts, unsigned int npts, int *ret_fd);

/*
 * fl__client_oneway_fd() - a one-way request about @fd (borrowed) on the
 * connection we have, if its daemon serves @op
 * Return: 0 (sent); -EAGAIN (not sent: no connection, an older daemon, or
 * the connection just failed: ask with a round trip); -EBADF (@fd is not
 * open; not sent).
 */
int fl__client_oneway_fd(uint32_t op, const void *body, size_t body_len, int fd);

/*
 * fl__client_timeline_create() - TIMELINE_CREATE
 * @ret_fd: the timeline fd, the caller's
 * @ret_handle: its handle on the connection (UINT32_MAX: none)
 * @ret_generation: that connection's generation
 *
 * When the daemon gives the timeline a shared counter, this process owns
 * it: fl__client_owned_signal() signals it.
 * Return: 0, a connection error, or the daemon's error.
 */
int fl__client_timeline_create(const char *name, unsigned int flags, int *ret_fd,
			       uint32_t *ret_handle, unsigned int *ret_generation);

/*
 * fl__client_owned_point() - where a point (@value on the timeline whose
 * id is @timeline_id, as info's points name it) stands, if this process
 * owns that timeline on its current connection: its counter is the
 * timeline's value.
 * Return: 1 reached, 0 not reached, -1 not a timeline this process owns
 * (or a daemon that does not say its timelines' ids), or one of whose
 * points failed (the daemon marks it first): the counter no longer tells.
 */
int fl__client_owned_point(uint64_t timeline_id, uint64_t value);

/*
 * fl__client_owned_signal() - add @count to a timeline this process owns
 *
 * Adds to the shared counter, stamped with @stamp_ns (0: now; else
 * -EINVAL when after now or before this owner's last stamp, and nothing
 * changes), completes the fences of that timeline this process made (writing their records itself, so their waiters wake
 * without a hop through the daemon), then waits until the daemon has
 * completed every other point.
 * Return: 0; -ENOSYS when the timeline is not owned here or the step is
 * one for the daemon (send TIMELINE_SIGNAL instead); -ESTALE when the
 * connection of @generation is gone (nothing added); -EINPROGRESS when
 * @count was added but the daemon must complete other points and the
 * connection's fd is no longer ours (the caller has the daemon catch up:
 * TIMELINE_INC of 0 with the timeline fd); a connection error or the
 * daemon's (-ENOENT: the timeline is dead).
 */
int fl__client_owned_signal(unsigned int generation, uint32_t handle, uint64_t count,
			    uint64_t stamp_ns);

/*
 * fl__client_bound() - TIMELINE_BIND of @timeline_fd (borrowed) on the
 * connection of @generation answered @handle: if it named another timeline
 * this process owned, that one is gone (the daemon reuses handles); if it
 * is the owned timeline itself (bound again after the library's cache
 * forgot it), it stays owned.
 */
void fl__client_bound(unsigned int generation, uint32_t handle, int timeline_fd);

/*
 * Has this process (since it started, or since its fork()) connected to a
 * daemon? In in-process mode only a daemon context (<fenceline/context.h>)
 * connects: then daemon fds of ours exist, and their waits are reported.
 */
bool fl__client_in_use(void);

/* Changes whenever this process's connection (so maybe its daemon) changes. */
unsigned int fl__client_generation(void);

/* Connect if needed; the daemon's pid (> 0) or a negative errno. */
int fl__client_daemon_pid(void);
/* fl__client_daemon_pid() that never starts a daemon (-ENOENT when none runs). */
int fl__client_daemon_pid_no_spawn(void);

/*
 * fl__client_report() - a one-way report (WAIT_BEGIN, WAIT_END) that nothing
 * later has to wait for: unlike a one-way fl__client_call(), it leaves no
 * flush owing. Connects if needed but never starts a daemon (a fence fd of
 * a daemon means one runs).
 * Return: 0, or a connection error.
 */
int fl__client_report(uint32_t op, uint32_t flags, const void *body, size_t body_len,
		      const int *fds, unsigned int nfds);
/* Close the connection and the pooled fence fds (the next call reconnects). */
void fl__client_disconnect(void);

/*
 * The generation of the connection that answered the calling thread's last
 * successful fl__client_call(): what a handle in that answer belongs to.
 */
unsigned int fl__client_answered_generation(void);

/* What fl_introspect_client_stats() reports (client.c counts it under its lock). */
struct fl__client_stats {
	uint64_t pool_fills, pool_fills_taken, pool_waits;
	/* The pool's gate (fdpool-gate.c), filled in by fl__client_stats(). */
	uint64_t pool_pooled, pool_pooled_ns, pool_bare_ns, pool_offs;
	uint64_t kicks; /* kicks read from the kick pipe */
};

void fl__client_stats(struct fl__client_stats *ret);

#endif /* FL_CLIENT_H */

/* SPDX-License-Identifier: MIT */
/*
 * fencelined's parts share this: the connection (struct client) and the
 * peers it is charged to, and the calls between the daemon's files.
 */
#ifndef FLD_DAEMON_H
#define FLD_DAEMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"
#include "server.h"
#include "service.h"

struct fl_fence;
struct fl_timeline;
struct fl_loop_source;
struct fl__sink;

/*
 * A peer, as SO_PEERCRED names it: one process, or one uid. Quotas count
 * per peer, not per connection, because a process may open any number of
 * connections: every daemon fd held on a peer's behalf (its connections,
 * pooled fence fds, fences, timelines, notify fds, heap buffers) counts
 * for its process and for its uid. Refcounted by the clients naming it.
 */
struct peer {
	struct peer *next;
	bool is_uid;
	unsigned int id; /* the pid or the uid */
	unsigned int refs;
	atomic_uint fds; /* daemon fds held for it */
	atomic_uint fences, timelines; /* live objects it made (--max-fences, --max-timelines) */
	unsigned long refused; /* for the log: a line at the 1st, 2nd, 4th... */
};

struct client {
	/* Its socket (conn.fd, -1 once disconnected), credentials and services' state. */
	struct fl_server_conn conn;
	struct peer *proc, *user; /* its process and its uid */
	bool greeted;
	atomic_int refs; /* the connection, plus one per live object it made */
	atomic_int timelines, fences; /* live objects it made */
	/* TIMELINE_BIND: handle -> the timeline fd's inode and the timeline's id. */
	struct handle {
		dev_t dev;
		ino_t ino;
		uint64_t id;
	} * handles;
	uint32_t nhandles, handles_cap;
	/*
	 * POOL_FILL: fence fds handed out, oldest first, with what we keep of
	 * each: a pipe's write end in the core (@pipe) or, where pipes cannot
	 * be used, a socket pair's end (@sink).
	 */
	struct pooled {
		int sink; /* -1 for a pipe */
		struct fl__sink *pipe;
		dev_t dev;
		ino_t ino;
		bool end_given; /* a copy of our end went with it (FL_POOL_F_SIGNAL_ENDS) */
		struct pooled *index_next; /* in pool_index, while handed out */
		struct client *client; /* whose pool it is in, while indexed */
	} pool[FL_PROTO_POOL_MAX];
	uint32_t pool_head, pool_count; /* pool[head % MAX] holds slot pool_slot */
	uint32_t pool_slot; /* the slot number of the oldest pooled fd */
	unsigned int nshared; /* shared counters it owns (shared_tl.owner) */
	/*
	 * Its kick pipe, -1 until it asked for pipe signal ends: a struct
	 * fl_proto_kick in it tells the owner that a fence whose signal end it
	 * kept was completed here (see given_done()). The read end goes with every POOL_FILL reply with
	 * pipe signal ends.
	 */
	int kick, kick_r;
	/* Kicks written into it, and how many it said it read (KICK_ACK): kickwait.c. */
	uint64_t kicks_sent, kicks_acked;
	bool kick_unread; /* it said FL_KICK_ACK_GONE, and has had no kick pipe since */
	bool reading; /* its requests are being handled, further up the stack */
	/*
	 * Waits for its queue to be read (struct fld_queue_mark): other
	 * clients' steps (kickwait.c), requests kept aside (defer.c) and a
	 * trace's STOP (observe.c); how many of its requests were read, and
	 * (counted while anyone waits) how often its queue was found empty.
	 */
	unsigned int queue_waits;
	uint64_t reads, empties;
	uint64_t debt_ns, debt_at_ns; /* loop time it took recently, as of debt_at_ns */
	unsigned int parked; /* DUMPs waiting for a walk of /proc (see dump_step()) */
	/* Its request kept aside (defer.c), which stops its reading. */
	struct deferred *deferred;
	/*
	 * Out of the loop's set while it is not read (parked or deferred):
	 * on conn.c's list of those, which holds a reference.
	 */
	bool paused;
	struct client *paused_next;
};

/* The quotas (limits.c), for fld_log_quota(). */
enum quota { Q_FDS_PROCESS, Q_FDS_UID, Q_FENCES, Q_TIMELINES };

/*
 * Timelines with a shared counter (struct fl_proto_shared_timeline): the
 * counter is the timeline's value (its shared_counter driver has a mapping
 * of its own that lives as long as the timeline, so that it catches up
 * when the timeline dies, after this entry may be gone). Found again by the
 * timeline fd's inode and the timeline's id, like handles, so holding one
 * keeps no timeline alive.
 */
struct shared_tl {
	struct shared_tl *next; /* in its hash bucket */
	struct fl_proto_shared_timeline *page; /* ours, for sync_at */
	struct client *owner; /* its creator, while connected */
	dev_t dev;
	ino_t ino;
	uint64_t id;
	uint64_t synced; /* the counter when we last caught up */
	uint64_t stamp; /* the timestamp the last catch-up gave its points */
	/*
	 * Min-heap of the values of points we must complete ourselves (see
	 * sync_at); its top is sync_at. A heap grown past MUST_MAX, or one
	 * we could not grow, is given up: sync_at stays 0 (always sync).
	 */
	uint64_t *must;
	uint32_t nmust, must_cap;
	bool must_lost;
	bool is32;
	/*
	 * A step not the owner's went through here (fld_timeline_add()):
	 * only such a step reaches a fence that the owner's own steps do
	 * not complete (op_fence_new()'s kick).
	 */
	bool stepped_by_others;
	/*
	 * Such a step reached fences the owner keeps the ends of, and their
	 * points are held until the owner closes them (fld_gate_reached()):
	 * meanwhile every step of the owner syncs (sync_at 0), so that its
	 * TIMELINE_SYNC lets go of those its step closed before it returns.
	 */
	bool holds;
	int mfd; /* the page's memfd, until fld_shared_own() hands it out */
};

static inline struct client *client_of(struct fl_server_conn *conn)
{
	return FL_SERVER_CONTAINER_OF(conn, struct client, conn);
}

extern struct server_config fld_cfg; /* conn.c: the daemon's options */
/* conn.c: the services and the connected clients (fl__server_conn_next()). */
extern struct fl_server *fld_server;
/* limits.c: daemon fds one process, and one uid other than ours, may have us hold. */
extern unsigned int fld_max_fds_process, fld_max_fds_uid;
/* limits.c: fences and timelines gone since the last malloc_trim(). */
extern atomic_uint fld_released;
extern int fld_status_page_fd; /* sync.c: -1 without a status page */
/* limits.c: the daemon's effective uid (it never changes it), read once: no geteuid() a request. */
uid_t fld_euid(void);
extern const struct fl_server_service_ops fld_core_service, fld_sync_service, fld_observe_service;

/*
 * Between the daemon's files: each is defined in the file named, where the
 * static function of the same name without fld_ was before the split.
 */
/* conn.c: replies (false: the client was hung up on), refusals, the scheduler's debt, reading. */
bool fld_reply_send_fds(struct client *c, const struct fl_msg_hdr *req, const void *body,
			size_t len, const int *fds, unsigned int nfds);
bool fld_reply_send(struct client *c, const struct fl_msg_hdr *req, const void *body, size_t len,
		    int fd);
bool fld_reply_status(struct client *c, const struct fl_msg_hdr *req, int status);
bool fld_reject(struct client *c, const struct fl_msg_hdr *req, int status, const char *why);
int fld_fds_refused(struct client *c, const char *what);
uint64_t fld_client_debt(struct client *c, uint64_t now);
int fld_client_readable(struct client *c, int max, uint64_t budget_ns);
/* Nothing is queued on @c's connection (or it is gone): one ioctl(SIOCINQ). */
bool fld_client_queue_empty(const struct client *c);
/*
 * A point in a client's stream of requests, for the three waits until
 * what it had queued by then is read, in its own turns: another client's
 * step (kickwait.c), a request kept aside (defer.c) and a trace's STOP
 * (observe.c). A wait counts itself in the client's queue_waits while it
 * holds a mark: only then does a read of the client look whether it left
 * the queue empty. After each read of a client (not one further up the
 * stack) conn.c tells the three (fld_kickwait_read(), fld_defer_read(),
 * fld_trace_stop_read()).
 */
struct fld_queue_mark {
	uint64_t empties, reads;
};
struct fld_queue_mark fld_queue_mark(const struct client *c);
/*
 * Whether what @c had queued at @m is read: its queue was found empty
 * since (while a wait was counted), @max more of its requests were read
 * (one that keeps sending cannot keep a wait going), or @c is gone.
 */
bool fld_queue_passed(const struct client *c, struct fld_queue_mark m, uint64_t max);
/* Run @c's request @q again (defer.c), with its @nfds @fds (closed after, set to -1). */
void fld_client_rerun(struct client *c, const struct fl_proto_request *q, int *fds, int nfds);
/* Close an fd @c sent us, as its requests' fds are closed (received.c). */
void fld_close_received(struct client *c, int fd);
/*
 * Requests of a timeline's owner read for another client's step at most,
 * and how many the step waits for at most (shared.c, kickwait.c): an
 * owner that keeps sending cannot keep the step waiting.
 */
#define FLD_OWNER_READ_MAX 1024

/*
 * limits.c: peers, the quotas of daemon fds (fds_*) and of objects, the
 * release callbacks of the core.
 */
struct peer *fld_peer_get(bool is_uid, unsigned int id);
void fld_client_unref(struct client *c);
unsigned int fld_room_of(const struct peer *p, unsigned int max);
unsigned int fld_fds_room(const struct client *c);
unsigned int fld_fds_room_for(const struct client *c, unsigned int need);
unsigned int fld_fds_room_now(const struct client *c);
void fld_fds_add(struct client *c, unsigned int n);
void fld_fds_sub(struct client *c, unsigned int n);
int fld_fds_charge(struct client *c, unsigned int n, const char *what);
void fld_log_quota(struct client *c, const char *what, enum quota q, unsigned int limit,
		   unsigned int held);
int fld_objects_charge(struct client *c, bool timeline);
void fld_objects_uncharge(struct client *c, bool timeline);
void fld_release_fence(void *owner);
void fld_release_timeline(void *owner);
bool fld_uid_allowed(uid_t uid);

/*
 * pool.c: pooled fds and their index, adopting a client's fds, making
 * ours, @c's fence behind @fd.
 */
void fld_pool_index_add(struct client *c, struct pooled *p);
void fld_pool_index_del(struct pooled *p);
void fld_pooled_drop(struct pooled *p, int status);
int fld_adopt(struct client *c, struct fl_fence *f, int *fds);
int fld_fence_fd_new(struct client *c, struct fl_fence *f, int *ret_fd);
bool fld_reply_fd(struct client *c, const struct fl_msg_hdr *req, int r, int fd);
/*
 * fld_fence_of() - the fence behind @fd, sent by @c, in *@ret (a reference)
 *
 * Return: 0; -ENOENT when @fd is no fence of ours; or -EINPROGRESS: @fd is
 * a pooled fd whose maker's queue still holds its FENCE_NEW, and the
 * request at hand is kept aside to run again later (defer.c). The handler
 * then returns true at once, having changed nothing.
 */
int fld_fence_of(struct client *c, int fd, struct fl_fence **ret);
/* The client whose pool holds the fd of @dev and @ino, not yet made a fence; or NULL. */
struct client *fld_pool_index_client(dev_t dev, ino_t ino);
/* fld_fence_of()'s reading of a maker's queue inline, at most. */
#define FLD_FENCE_OF_READ_NS 1000000ull

/*
 * defer.c: a request kept aside until its fd's maker's queue is read
 * (fld_fence_of()). fld_defer() asks for it during the request (0, or
 * -EBUSY/-EDEADLK/-ENOMEM: it cannot wait; -EMFILE: its fds, charged to
 * the client's quotas while it waits, would not fit); fld_defer_take() keeps it
 * after its handler returned, its fds moved out of @fds, and its client is
 * read no more until fld_defer_run() runs it again (fld_client_rerun()),
 * once fld_defer_read() or fld_defer_client_gone() found its maker done.
 * fld_defer_drop_asked() forgets an ask nobody took.
 */
int fld_defer(struct client *c, struct client *maker, dev_t dev, ino_t ino);
bool fld_defer_take(struct client *c, const struct fl_proto_request *q, int *fds, int nfds);
void fld_defer_drop_asked(void);
void fld_defer_read(struct client *maker);
bool fld_defer_any_ready(void);
void fld_defer_run(void);
void fld_defer_client_gone(struct client *c);

/* shared.c: owned timelines' shared counters and the kick pipes. */
int fld_shared_timeline_create(struct client *c, const char *name, unsigned int flags,
			       struct fl_timeline **ret_tl, int *ret_fd, struct shared_tl **ret_s);
int fld_shared_own(struct client *c, struct shared_tl *s, struct fl_timeline *tl, int fd,
		   bool bound);
bool fld_timeline_is_sw_sync(const struct fl_timeline *tl);
int fld_timeline_get_value(struct fl_timeline *tl, uint64_t *ret_value);
int fld_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
		     struct fl_fence **ret_fence);
struct shared_tl *fld_shared_find(struct fl_timeline *tl);
/*
 * fld_shared_mark_failing_tl() - @tl's owner must no longer take a pending
 * point's status from its counter alone, nor write into a kept end without
 * looking (the page's failed word); nothing for a timeline without a page.
 */
void fld_shared_mark_failing_tl(struct fl_timeline *tl);
int fld_shared_sync(struct shared_tl *s, struct fl_timeline *tl);
/*
 * fld_shared_sync_end_seen() - fld_shared_sync(), and whether it found
 * every write end of the owner's pipe fence @f closed (the owner completed
 * it, or lost its end): then nobody keeps an end to kick.
 */
bool fld_shared_sync_end_seen(struct shared_tl *s, struct fl_timeline *tl, struct fl_fence *f);
void fld_shared_sync_tl(struct fl_timeline *tl);
void fld_shared_sync_fence(struct fl_fence *f);
void fld_shared_fence_points(struct fl_fence *f, bool must, const struct client *mine);
void fld_shared_must(struct shared_tl *s, struct fl_timeline *tl, uint64_t value);
void fld_shared_must_tl(struct fl_timeline *tl, uint64_t value);
void fld_shared_collect(void);
void fld_shared_disown(struct client *c);
void fld_shared_free_all(void);
void fld_publish_all(void);
int fld_timeline_add(struct client *c, struct fl_timeline *tl, uint64_t count, uint64_t stamp_ns);
/* TIMELINE_FAIL: @tl's pending points fail with @status. Return: how many, or -errno. */
int fld_timeline_fail(struct client *c, struct fl_timeline *tl, int status);
void fld_kick_send(struct client *c, uint32_t slot, struct fl_fence *f);

/*
 * kickwait.c: a step of @c (fld_kickwait_begin() before it) whose kicks to
 * another process's kept ends asked for a KICK_ACK (fld_kickwait_wanted(),
 * fld_kickwait_sent() for each) is answered by fld_kickwait_reply() only
 * once that owner acknowledged them (fld_kickwait_ack()) or is gone.
 */
void fld_kickwait_begin(struct client *c);
/*
 * The step being handled, kept aside while another client's requests are
 * read in the middle of it (fld_client_readable()): a step among them
 * would otherwise take its place and answer it without its kicks' wait.
 */
struct fld_kickwait_step {
	struct client *stepping, *owner;
	uint64_t seq;
	bool drain;
	struct fld_queue_mark mark;
};
void fld_kickwait_save(struct fld_kickwait_step *st);
void fld_kickwait_restore(const struct fld_kickwait_step *st);
bool fld_kickwait_wanted(const struct client *owner);
void fld_kickwait_sent(struct client *owner);
bool fld_kickwait_reply(struct client *c, const struct fl_msg_hdr *req, int status);
/* fld_kickwait_reply() for TIMELINE_FAIL, whose reply (@status 0) carries @value. */
bool fld_kickwait_reply_value(struct client *c, const struct fl_msg_hdr *req, int status,
			      uint64_t value);
void fld_kickwait_ack(struct client *c, uint64_t count);
/*
 * The step being handled waits, besides, until @owner's requests queued
 * before it are read (its queue found empty since, FLD_OWNER_READ_MAX of
 * them read, or @owner gone): the step found @owner's queue not empty.
 */
void fld_kickwait_drain(struct client *owner);
/* After fld_client_readable() read @c: the steps waiting for @c's queue it lets go. */
void fld_kickwait_read(struct client *c);
void fld_kickwait_client_gone(struct client *c);
void fld_given_done(void *owner, uint64_t slot, int status, uint64_t ts);
/* fl__pt_gate_set_hook()'s: hold a kept fence another's step reached until its owner's KICK_ACK. */
uint64_t fld_gate_reached(void *owner, uint64_t slot, int status, uint64_t ts);
/* TIMELINE_SYNC of @s's owner: the held points whose ends it closed go (fld_gate_reached()). */
void fld_shared_holds_settle(struct shared_tl *s, struct fl_timeline *tl);
/* KICK_ACK of @c: what it let go no longer makes its steps sync. */
void fld_shared_holds_acked(struct client *c);
void fld_owner_end_closed(struct fl_fence *f);
pid_t fld_owner_of(const void *timeline, void *arg);

/* core.c: answer the deferred PINGs (after the loop ran the fd watcher). */
void fld_answer_deferred_pings(void);

/* observe.c: the service's end when the daemon exits. */
void fld_observe_stop(void);
/* After fld_client_readable() read @k: a parked trace STOP that waited for it may be done. */
void fld_trace_stop_read(struct client *k);

#endif /* FLD_DAEMON_H */

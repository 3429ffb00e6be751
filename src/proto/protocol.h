/* SPDX-License-Identifier: MIT */
/*
 * The wire protocol between the library and fencelined (docs/protocol.md is
 * the prose version; keep both in step and bump FL_PROTO_VERSION on any
 * incompatible change).
 *
 * One SOCK_SEQPACKET connection per client process. Every message is one
 * packet: a 16-byte header, an op-specific body of exactly the size the op
 * defines, and up to FL_PROTO_MAX_FDS descriptors as SCM_RIGHTS. Integers
 * are host byte order (the peers share a machine). Requests are answered in
 * order, each reply echoing the request's seq; FENCE_CREATE and FENCE_NEW
 * are one-way unless they set FL_MSG_F_REPLY.
 *
 * Private to src/: the daemon, the client and the fuzz target include it.
 */
#ifndef FL_PROTOCOL_H
#define FL_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/*
 * The core version: framing, the header, HELLO and PING. Peers of another
 * core version cannot talk at all; HELLO's first word stays the version in
 * every one, so that each can tell the other so. Bump it only for a change
 * no service version can describe; a service's ops change with its own.
 */
#define FL_PROTO_VERSION  9
#define FL_PROTO_NAME_LEN 32
#define FL_PROTO_MAX_FDS  4
/* The largest request; replies may be up to FL_PROTO_MAX_REPLY. */
#define FL_PROTO_MAX_REQUEST 64
/* Fence fds per POOL_FILL reply, and pooled per client at most. */
#define FL_PROTO_POOL_FILL_MAX 32
#define FL_PROTO_POOL_MAX      64
/* Timelines a client may bind (TIMELINE_BIND handles). */
#define FL_PROTO_MAX_HANDLES 4096
/* Points per FENCE_INFO reply: keeps a reply well inside a socket buffer. */
#define FL_PROTO_MAX_INFO_POINTS 64

/*
 * The services and their versions. A service owns a range of op numbers and
 * has a version of its own, raised when it gains an op or a flag (never
 * changing an existing one: that is a new op); HELLO says which services a
 * client speaks, in which version, and the daemon answers what it serves
 * of them (docs/protocol.md, "Services and versions"). Ids index HELLO's
 * versions[]; ids up to FL_PROTO_MAX_SERVICES - 1 not listed are free for
 * services to come.
 */
enum fl_proto_service_id {
	FL_PROTO_SVC_SYNC = 0, /* timelines and fences */
	FL_PROTO_SVC_HEAP = 1, /* the allocation service */
	FL_PROTO_SVC_OBSERVE = 2, /* dump, trace, waits */
	FL_PROTO_SVC_CORE = 0xff, /* HELLO, PING: not negotiated (FL_PROTO_VERSION) */
};
#define FL_PROTO_MAX_SERVICES	 8

#define FL_PROTO_SYNC_VERSION	 6
#define FL_PROTO_HEAP_VERSION	 1
#define FL_PROTO_OBSERVE_VERSION 2

/* HELLO's services[] of a peer that speaks every service of this version. */
#define FL_PROTO_SERVICES_ALL                                                          \
	{                                                                              \
		FL_PROTO_SYNC_VERSION, FL_PROTO_HEAP_VERSION, FL_PROTO_OBSERVE_VERSION \
	}

/*
 * Op numbers: a range per service, so that a number alone says whose it
 * is. 128..255 are free for services to come; a number past 255 is never
 * an op.
 */
#define FL_PROTO_CORE_FIRST    1u
#define FL_PROTO_CORE_LAST     15u
#define FL_PROTO_SYNC_FIRST    16u
#define FL_PROTO_SYNC_LAST     63u
#define FL_PROTO_HEAP_FIRST    64u
#define FL_PROTO_HEAP_LAST     95u
#define FL_PROTO_OBSERVE_FIRST 96u
#define FL_PROTO_OBSERVE_LAST  127u

enum fl_proto_op {
	/* core */
	FL_OP_HELLO = 1, /* body hello; reply hello_reply (+ 1 fd, the status page) */
	FL_OP_PING = 2, /* no body; reply: status */
	/* sync (since version 1) */
	FL_OP_TIMELINE_CREATE = 16, /* body timeline_create; reply bind_reply + 1 fd */
	FL_OP_TIMELINE_INC = 17, /* body timeline_inc, fds {timeline}; reply: status */
	FL_OP_TIMELINE_GET_VALUE = 18, /* no body, fds {timeline}; reply value_reply */
	FL_OP_FENCE_CREATE = 19, /* body fence_create, fds {timeline, sink, user} */
	FL_OP_FENCE_MERGE =
		20, /* body fence_merge, fds {a, b}; reply: status (+ 1 fd, the fence) */
	FL_OP_FENCE_INFO = 21, /* body fence_info, fds {fence}; reply info_reply */
	FL_OP_TIMELINE_BIND = 22, /* no body, fds {timeline}; reply bind_reply */
	FL_OP_POOL_FILL = 23, /* body pool_fill; reply pool_reply + count fds */
	FL_OP_FENCE_NEW = 24, /* body fence_new, no fds */
	FL_OP_TIMELINE_SIGNAL = 25, /* body timeline_signal, no fds; reply: status */
	FL_OP_TIMELINE_SYNC = 26, /* body timeline_sync, no fds; reply: status */
	FL_OP_FENCE_SET_DEADLINE = 27, /* body fence_set_deadline, fds {fence}; reply: status */
	FL_OP_FENCE_GET_DEADLINE = 28, /* no body, fds {fence}; reply value_reply */
	FL_OP_FENCE_IMPORT = 29, /* body fence_import, fds {sync_file}; reply: status (+ 1 fd) */
	FL_OP_FENCE_RETURN = 30, /* no body, fds {signal end}; one-way */
	/* sync since version 2 */
	FL_OP_TIMELINE_INC_AT = 31, /* body timeline_inc_at, fds {timeline}; reply: status */
	/* sync since version 3 */
	FL_OP_TIMELINE_FAIL = 32, /* body timeline_fail, fds {timeline}; reply: status + count */
	/* sync since version 4 */
	FL_OP_FENCE_MERGE_INTO = 40, /* body fence_merge_into, fds {a, b}; one-way */
	FL_OP_FENCE_HINT_DEADLINE = 41, /* body fence_set_deadline, fds {fence}; one-way */
	FL_OP_KICK_ACK = 50, /* body kick_ack, no fds; one-way */
	/* heap (since version 1) */
	FL_OP_HEAP_ALLOC = 64, /* body heap_alloc, no fds; reply heap_alloc_reply + 1 fd */
	FL_OP_HEAP_FREE = 65, /* body heap_free, fds {buffer} or none; reply heap_free_reply */
	FL_OP_HEAP_INFO = 66, /* body heap_info, no fds; reply heap_info_reply */
	/* observe (since version 1) */
	FL_OP_DUMP = 96, /* body dump, no fds; reply: status + 1 fd (the dump) */
	FL_OP_WAIT_BEGIN = 97, /* body wait_begin, fds {fence} or {fence, notify}; one-way */
	FL_OP_WAIT_END = 98, /* body wait_end, no fds; one-way */
	FL_OP_TRACE = 99, /* body trace; reply: status (+ 1 fd, the trace, for STOP) */
	/* observe since version 2 */
	FL_OP_TRACE_EVENT = 100, /* body trace_event, fds {} or {fence} (FL_MSG_F_FENCE); one-way */
};

/* Set in a reply's op. */
#define FL_OP_REPLY 0x80000000u

/* Header flags. */
enum fl_msg_flags {
	FL_MSG_F_REPLY = 1u << 0, /* FENCE_CREATE, FENCE_NEW: answer even on success */
	/*
	 * FENCE_NEW by a timeline's owner, on a slot filled with a signal end
	 * that it kept: it completes the fence itself, so its counter reaching
	 * the value needs no TIMELINE_SYNC (struct fl_proto_shared_timeline).
	 */
	FL_MSG_F_KEPT = 1u << 1,
	/*
	 * PING: answer only once every fenceline fd closed before the request
	 * was sent has been handled (a last timeline fd closed: its pending
	 * fences have failed), as closing a kernel sw_sync fd does at once.
	 */
	FL_MSG_F_AFTER_CLOSES = 1u << 2,
	/*
	 * WAIT_BEGIN: a second fd follows the fence, the write end of a pipe
	 * the waiter polls too: should its wait be the one that closes a
	 * deadlock cycle, the daemon writes the wait's token and -EDEADLK
	 * (struct fl_msg_wait_notify) into it. The daemon closes it when the
	 * wait ends.
	 */
	FL_MSG_F_NOTIFY = 1u << 3,
	/* TRACE_EVENT of type FL_PROTO_TRACE_ACQUIRE: the fence's fd comes with it. */
	FL_MSG_F_FENCE = 1u << 4,
};

struct fl_msg_hdr {
	uint32_t op;
	uint32_t flags;
	uint32_t seq; /* chosen by the client, echoed in the reply */
	uint32_t len; /* bytes after the header */
};

/*
 * The first request. @version comes first in every core version, so that
 * a daemon can refuse another one with -EPROTONOSUPPORT whatever the rest.
 * @services[id] is the version of service id the client speaks, 0 for none.
 */
struct fl_msg_hello {
	uint32_t version; /* FL_PROTO_VERSION */
	uint32_t flags; /* 0 */
	uint32_t services[FL_PROTO_MAX_SERVICES];
};

struct fl_msg_timeline_create {
	char name[FL_PROTO_NAME_LEN]; /* NUL-terminated */
	uint32_t flags; /* 0 or FL_SW_SYNC_32BIT */
	uint32_t pad; /* 0 */
};

struct fl_msg_timeline_inc {
	uint64_t count;
};

/*
 * TIMELINE_INC with the timestamp its points get: CLOCK_MONOTONIC, not
 * after the daemon's clock, not before the timeline's previous stamp.
 */
struct fl_msg_timeline_inc_at {
	uint64_t count;
	uint64_t timestamp_ns;
};

/* Fail the timeline's pending points with @status (-4095 to -1): fl_timeline_fd_fail_pending(). */
struct fl_msg_timeline_fail {
	int32_t status;
	uint32_t pad;
};

struct fl_msg_fence_create {
	uint64_t value;
	char name[FL_PROTO_NAME_LEN];
};

struct fl_msg_fence_merge {
	char name[FL_PROTO_NAME_LEN];
	uint32_t flags; /* FL_MERGE_WAIT_ALL, FL_MERGE_MAINLINE or both */
	uint32_t pad; /* 0 */
};

/*
 * FENCE_MERGE_INTO (one-way): the pooled fd @slot (the oldest left, as
 * FENCE_NEW's) becomes the merge of fds a and b. The client checked both
 * to be the daemon's pending pipe fences; if they are not fences when the
 * daemon gets to it, the slot's fd fails (-ENOENT) and never signals.
 * Since sync version 6 (FL_MERGE_ONEWAY_SINCE) the daemon does not catch
 * up with the sender's own counters for it: a pending point of a timeline
 * the sender owns is completed by the sender's next TIMELINE_SYNC, which
 * the sender owes for every step of such a timeline until it has read a
 * reply to a request sent after the merge; and before the sender sends
 * it, it sets its page's @oneway_merges (struct fl_proto_shared_timeline),
 * so that another client's step of the timeline makes the daemon read the
 * sender's queue before answering.
 */
struct fl_msg_fence_merge_into {
	char name[FL_PROTO_NAME_LEN];
	uint32_t flags; /* FL_MERGE_WAIT_ALL, FL_MERGE_MAINLINE or both */
	uint32_t slot;
};
#define FL_MERGE_ONEWAY_SINCE 6 /* the sync version whose daemon serves pending one-way merges */

struct fl_msg_fence_set_deadline {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
};

struct fl_msg_fence_import {
	char name[FL_PROTO_NAME_LEN]; /* "" for the sync_file's own */
};

/* The daemon's state for fencectl: a sealed memfd holding text or JSON (docs/fencectl.md). */
struct fl_msg_dump {
	uint32_t flags; /* FL_DUMP_JSON, at most one view: FDS, DEADLOCKS, STATS, HEAPS */
	uint32_t pid; /* FL_DUMP_FDS: only this process; 0 for all */
};

#define FL_DUMP_JSON	  1u /* JSON instead of text */
#define FL_DUMP_FDS	  2u /* by process: what each holds (fencectl fds) */
#define FL_DUMP_DEADLOCKS 4u /* the waits, and the deadlocks found (fencectl deadlocks) */
#define FL_DUMP_STATS	  8u /* latency and wait histograms (fencectl stats) */
#define FL_DUMP_RESET	  16u /* with FL_DUMP_STATS: then start counting afresh */
#define FL_DUMP_HEAPS	  32u /* the daemon's heaps and each client's share (fencectl heaps) */

/*
 * A thread of the sender is about to block on @fence until it completes or
 * @timeout_ms (-1: none) passes; @token is the sender's name for this wait
 * (unique among its waits in progress). The daemon ends the wait itself
 * when the fence completes; the sender sends WAIT_END only when it stopped
 * waiting for another reason (timeout, error, EDEADLK).
 */
struct fl_msg_wait_begin {
	uint64_t token;
	uint32_t tid; /* the waiting thread */
	int32_t timeout_ms;
};

struct fl_msg_wait_end {
	uint64_t token;
	int32_t result; /* -ETIME, -EDEADLK, another -errno, or 0 */
	uint32_t pad; /* 0 */
};

/* What the daemon writes into a WAIT_BEGIN's notify pipe. */
struct fl_msg_wait_notify {
	uint64_t token;
	int32_t status; /* -EDEADLK */
	uint32_t pad;
};

/* TRACE: start recording events system-wide, or stop and get them. */
struct fl_msg_trace {
	uint32_t cmd; /* FL_TRACE_START, FL_TRACE_STOP */
	uint32_t max_events; /* START: 0 for the default; beyond it events are counted, not kept */
};

#define FL_TRACE_START 1u
#define FL_TRACE_STOP  2u

/*
 * TRACE_EVENT: another service's event for the trace session that records
 * (the display service's posts, flips, vsyncs, releases: docs/protocol.md),
 * sent only while the status page says a session records. The daemon
 * drops it when none does. @type is enum fl_trace_display_type of
 * <fenceline/introspect.h> (1..7); @a and @b are the type's (POST:
 * buffers, acquire fences; FLIP: vsync_ns, ready_ns; RELEASE: by_post).
 * 48 bytes: a request is at most FL_PROTO_MAX_REQUEST.
 */
struct fl_msg_trace_event {
	uint16_t type;
	uint16_t index; /* buffer (ACQUIRE, ACQUIRED) or interface (FLIP, VSYNC) */
	uint32_t device;
	uint64_t post;
	uint64_t ts_ns; /* CLOCK_MONOTONIC, not 0 */
	uint64_t a, b;
	int32_t status; /* 0 or -errno */
	uint32_t pid; /* the post's client (POST) */
};
#define FL_PROTO_TRACE_EVENT_TYPES 7u
#define FL_PROTO_TRACE_ACQUIRE	   2u

/*
 * The allocation service (docs/heap.md, "Through the daemon"): a buffer of
 * @size bytes from the daemon's heap @heap, charged to this connection
 * until HEAP_FREE or the connection's end. @flags are the heap's
 * (fl_heap_alloc()); @group, if not 0, tags the buffer for a HEAP_FREE of
 * the whole group.
 */
struct fl_msg_heap_alloc {
	char heap[FL_PROTO_NAME_LEN]; /* NUL-terminated, not empty */
	uint64_t size;
	uint32_t flags;
	uint32_t group;
};

/*
 * With one fd: free that buffer (@group 0). Without: free every buffer of
 * @group (not 0) this connection allocated.
 */
struct fl_msg_heap_free {
	uint32_t group;
	uint32_t pad; /* 0 */
};

/* This connection's share of heap @heap, or of all heaps for "". */
struct fl_msg_heap_info {
	char heap[FL_PROTO_NAME_LEN]; /* NUL-terminated */
};

struct fl_msg_fence_info {
	uint32_t first; /* index of the first point wanted */
	uint32_t max; /* at most this many, <= FL_PROTO_MAX_INFO_POINTS */
};

/*
 * Ask for @count (1..FL_PROTO_POOL_FILL_MAX) fence fds not yet bound to a
 * fence. With FL_POOL_F_SIGNAL_ENDS the reply carries 2 * count fds: the
 * count fence fds, then in the same order a copy of the daemon's end of
 * each (its "signal end"), so that the client can complete a fence of a
 * timeline it owns itself (see struct fl_proto_shared_timeline). The fence
 * fds are pipe read ends and the signal ends copies of their write ends;
 * where the daemon cannot use pipes (FENCELINE_FD_KIND=socket), socket
 * pairs. A pipe fence made with FL_MSG_F_KEPT is the owner's to complete:
 * the daemon closes its own write end, so the owner's (which gets the
 * status record, twice for a success, and is then closed) is the only one
 * left, and every write end closed is the fd's readiness. If the counter
 * had not reached the fence when that happened, the daemon fails it with
 * -ENOENT. A kept end whose fence the daemon completed (another process
 * signalled, the timeline died) is the owner's to close: the daemon writes
 * a struct fl_proto_kick into the connection's kick pipe. The kick pipe's
 * read end comes last, after the signal ends, in every reply with pipe
 * signal ends (2 * count + 1 fds); its hang-up tells the owner that the
 * daemon dropped it or died.
 */
struct fl_msg_pool_fill {
	uint32_t count;
	uint32_t flags; /* FL_POOL_F_SIGNAL_ENDS, FL_POOL_F_INODES */
};

#define FL_POOL_F_SIGNAL_ENDS 1u
/*
 * Sync 5: where the fds are pipes, the reply's struct fl_msg_pool_reply is
 * followed by count u64s, each slot's pipe inode number (st_ino), which its
 * fence fd and its signal end share: the client records its fds' identity
 * from them and one fstat() per reply (its pipefs st_dev, and that the
 * first inode is what it says), not one per fd. Socket pairs: none follow.
 */
#define FL_POOL_F_INODES     2u
#define FL_POOL_INODES_SINCE 5 /* the sync version that added FL_POOL_F_INODES */

/*
 * Make the pooled fd @slot a fence of the bound timeline @handle. Pooled
 * fds are used in the order the daemon handed them out: @slot must be the
 * oldest one left (slots count up from 0 per connection).
 */
struct fl_msg_fence_new {
	uint64_t value;
	char name[FL_PROTO_NAME_LEN];
	uint32_t handle;
	uint32_t slot;
};

/*
 * FENCE_RETURN (one-way, no body): the owner gives a kept pipe signal end
 * back before it lets go of its connection (fl_daemon_disconnect(), a
 * request that timed out), so that the daemon completes that fence again
 * instead of failing it when the end is closed. Anything else is closed.
 */

/* TIMELINE_INC of a bound timeline, without sending its fd. */
struct fl_msg_timeline_signal {
	uint64_t count;
	uint32_t handle;
	uint32_t pad; /* 0 */
};

/*
 * Bring a timeline this connection owns (it created it and got its shared
 * counter) up to the counter's value: the client added to the counter and
 * completed its own fences; the daemon completes every other point.
 */
struct fl_msg_timeline_sync {
	uint32_t handle;
	uint32_t pad; /* 0 */
};

/*
 * The shared counter of an owned timeline: a memfd page the daemon sends
 * with TIMELINE_CREATE's reply (FL_BIND_F_SHARED) and maps itself. It is
 * the timeline's value: whoever signals adds to it atomically (the owner
 * directly, everybody else through the daemon), and the daemon brings its
 * timeline up to it before every request that could see the timeline.
 * With FL_SW_SYNC_32BIT only the low 32 bits count. The daemon trusts it
 * for nothing but that value: a client can only scribble on its own.
 *
 * @sync_at is the daemon's: the lowest value of a pending point it must
 * complete itself (every fence but those made with FL_MSG_F_KEPT; merges),
 * UINT64_MAX for none; on a 32-bit timeline, the counter value at which the
 * low half reaches the point's, wrap-aware. An owner whose
 * addition takes the counter to @sync_at or beyond sends TIMELINE_SYNC and
 * waits for its answer; below it, nobody waits for the daemon, which
 * catches up when a request looks at the timeline or the timeline dies.
 * The daemon lowers @sync_at before it reads the counter, and the owner
 * adds before it reads @sync_at, so one of them always sees the other.
 * 0 while a trace runs, and while points another client's step reached
 * are held for the owner's close of their kept ends (fld_gate_reached()).
 */
struct fl_proto_shared_timeline {
	uint64_t value; /* accessed with __atomic builtins, seq_cst */
	uint64_t sync_at; /* written by the daemon only; seq_cst */
	/*
	 * The owner's: CLOCK_MONOTONIC time, stored just before each addition.
	 * The daemon gives the points an addition reached this timestamp
	 * (kept between its last one and now), so info and traces show when
	 * the owner signalled, not when the daemon caught up.
	 */
	uint64_t stamp_ns;
	/*
	 * Written by the daemon before it sends the page: the timeline's id
	 * (fl_timeline_get_id(), the timeline_id of info's points), so that
	 * the owner can tell its own timelines' points apart in info records.
	 * 0 from an older daemon (ids start at 1). Release/acquire.
	 */
	uint64_t id;
	/*
	 * Counted up by the daemon (never down; an older daemon sets 1 once)
	 * before any of the timeline's points fails (TIMELINE_FAIL, the
	 * timeline's death, a fence of it whose owner lost its signal end)
	 * and before it writes a refused FENCE_NEW's failure into its pooled
	 * pipe. Non-zero: a pending point is not told by the counter alone,
	 * and the owner looks into a kept end's pipe before it writes. Moved
	 * since the owner's last look: before it writes the kept ends a step
	 * reached, the owner sends PING and reads its kick pipe, so
	 * a kept fence the daemon failed gets the failure, not "signalled".
	 * The daemon counts before it reads @value, the owner reads this
	 * after adding to @value, both seq_cst: one of them sees the other.
	 */
	uint64_t failed;
	/*
	 * The owner's: set (never cleared) before its first FENCE_MERGE_INTO
	 * naming a pending point of the timeline (sync version 6). While it
	 * is set, a step or failure of the timeline by another client makes
	 * the daemon read what the owner queued before answering it, so a
	 * one-way merge sent before that step completes with it. The daemon
	 * sets its counter before it reads this, the owner this before it
	 * sends and reads the counter after (all seq_cst). A lying owner only
	 * has its own queue read early.
	 */
	uint64_t oneway_merges;
	uint64_t reserved[2];
};

/*
 * What the daemon writes into an owner's kick pipe (struct
 * fl_msg_pool_fill) for a fence whose pipe signal end the owner kept, and
 * which the daemon completed without the owner's counter reaching it:
 * another process signalled the timeline through the daemon (also past it
 * by wrapping around), the timeline died, or the owner's own step went
 * through the daemon. The owner writes the fence's record (@status,
 * @timestamp_ns) into its end and closes it. @slot is the pooled slot the
 * fence was made of (FENCE_NEW's): unique on the connection, where a
 * pipe's inode would be reused once the owner closed it.
 */
struct fl_proto_kick {
	uint64_t slot;
	uint64_t timestamp_ns;
	int32_t status;
	uint32_t flags; /* 0 or FL_KICK_F_ACK (sync 4; was pad) */
};
/*
 * Another process's step waits for this kick: once its end is closed, the
 * owner sends KICK_ACK with how many kicks it has read from this pipe.
 */
#define FL_KICK_F_ACK	  1u
#define FL_KICK_ACK_SINCE 4 /* the sync version whose owners send KICK_ACK */
/*
 * KICK_ACK's count when the owner stops reading its kick pipe (its watcher
 * idled out, nothing kept): every kick sent is taken as read, and no step
 * waits for this owner until its next fill brings the kick pipe back.
 */
#define FL_KICK_ACK_GONE UINT64_MAX

/*
 * KICK_ACK (one-way, sync 4): the owner has read @count kicks from its
 * kick pipe so far (all of them, in order) and closed the ends they named.
 */
struct fl_msg_kick_ack {
	uint64_t count;
};
#define FL_PROTO_SHARED_SIZE 4096

/* Every reply starts with this after the header. */
struct fl_msg_reply {
	int32_t status; /* 0 or a negative errno */
	uint32_t pad;
};

struct fl_msg_hello_reply {
	struct fl_msg_reply r;
	uint32_t version;
	uint32_t pid; /* the daemon's */
	uint32_t max_timelines; /* per client */
	uint32_t max_fences; /* per client */
	uint32_t flags; /* FL_HELLO_F_STATUS_PAGE, FL_HELLO_F_INFO_PAGE */
	uint32_t pad; /* 0 */
	/*
	 * What the daemon serves of each service the client asked for: the
	 * lower of both versions, 0 for a service it lacks (or one not asked).
	 */
	uint32_t services[FL_PROTO_MAX_SERVICES];
};

/*
 * One fd follows: the daemon's status page (src/util/statuspage.h), a
 * sealed memfd the client maps read-only to read the statuses of the
 * daemon's pipe fence fds without asking. Only for clients of the daemon's
 * own uid: it shows every fence's inode and status.
 */
#define FL_HELLO_F_STATUS_PAGE 1u

/*
 * With FL_HELLO_F_STATUS_PAGE, to a client that speaks sync 4 or later: a
 * second fd follows, the info page (src/util/statuspage.h), from which the
 * client answers fl_fence_fd_get_info() of the daemon's pipe fence fds.
 */
#define FL_HELLO_F_INFO_PAGE 2u

struct fl_msg_bind_reply {
	struct fl_msg_reply r;
	uint32_t handle; /* names the timeline on this connection; UINT32_MAX: none */
	uint32_t flags; /* TIMELINE_CREATE: FL_BIND_F_SHARED, else 0 */
};

/* A second fd follows the timeline's: its shared counter page. */
#define FL_BIND_F_SHARED 1u

struct fl_msg_pool_reply {
	struct fl_msg_reply r;
	uint32_t first; /* slot of the first fd */
	uint32_t count; /* fds attached, in slot order */
};

struct fl_msg_heap_alloc_reply {
	struct fl_msg_reply r;
	uint32_t heap_id; /* the heap's ION-style id */
	uint32_t pad;
	uint64_t size; /* the buffer's, rounded up to whole pages */
};

struct fl_msg_heap_free_reply {
	struct fl_msg_reply r;
	uint64_t freed; /* buffers freed */
};

struct fl_msg_heap_info_reply {
	struct fl_msg_reply r;
	uint64_t limit; /* bytes this connection may hold in all heaps; 0: none */
	uint64_t bytes, buffers; /* this connection's live buffers */
	uint64_t peak_bytes, peak_buffers;
	uint64_t refused; /* allocations refused for the limit */
	/* The heap as a whole (all clients); 0 for "". */
	uint64_t heap_capacity, heap_allocated, heap_buffers;
};

struct fl_msg_value_reply {
	struct fl_msg_reply r;
	uint64_t value;
};

struct fl_msg_point {
	char timeline_name[FL_PROTO_NAME_LEN];
	char driver_name[FL_PROTO_NAME_LEN];
	int32_t status;
	uint32_t flags;
	uint64_t timestamp_ns;
	uint64_t value;
	uint64_t timeline_id;
};

struct fl_msg_info_reply {
	struct fl_msg_reply r;
	char name[FL_PROTO_NAME_LEN];
	int32_t status;
	uint32_t num_points; /* all of the fence's points */
	uint64_t timestamp_ns;
	uint32_t first, count; /* points[] holds count points from first */
	/* struct fl_msg_point points[count]; */
};

#define FL_PROTO_MAX_REPLY                                              \
	(sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_info_reply) + \
	 FL_PROTO_MAX_INFO_POINTS * sizeof(struct fl_msg_point))

/* A request, decoded and checked; bodies point into the caller's buffer. */
struct fl_proto_request {
	struct fl_msg_hdr hdr;
	union {
		struct fl_msg_hello hello;
		struct fl_msg_timeline_create timeline_create;
		struct fl_msg_timeline_inc timeline_inc;
		struct fl_msg_timeline_inc_at timeline_inc_at;
		struct fl_msg_timeline_fail timeline_fail;
		struct fl_msg_kick_ack kick_ack;
		struct fl_msg_fence_create fence_create;
		struct fl_msg_fence_merge fence_merge;
		struct fl_msg_fence_merge_into fence_merge_into;
		struct fl_msg_fence_info fence_info;
		struct fl_msg_fence_set_deadline fence_set_deadline;
		struct fl_msg_fence_import fence_import;
		struct fl_msg_dump dump;
		struct fl_msg_wait_begin wait_begin;
		struct fl_msg_wait_end wait_end;
		struct fl_msg_trace trace;
		struct fl_msg_trace_event trace_event;
		struct fl_msg_heap_alloc heap_alloc;
		struct fl_msg_heap_free heap_free;
		struct fl_msg_heap_info heap_info;
		struct fl_msg_pool_fill pool_fill;
		struct fl_msg_fence_new fence_new;
		struct fl_msg_timeline_signal timeline_signal;
		struct fl_msg_timeline_sync timeline_sync;
	} u;
	unsigned int nfds;
};

/* One op of a service, as the decoder knows it. */
struct fl_proto_op_desc {
	const char *name; /* NULL: no op of this number */
	uint16_t size; /* of its body, exactly */
	uint8_t since; /* the service version that added it */
};

/*
 * A service's decoder (src/proto/<service>.c): its op range and the checks
 * of its bodies. Header flags and fd counts are not the decoder's: the
 * daemon's service op tables hold those (src/server/service.h).
 */
struct fl_proto_service {
	const char *name;
	uint32_t id; /* enum fl_proto_service_id */
	uint32_t version; /* the highest it decodes */
	uint32_t first, last;
	const struct fl_proto_op_desc *ops; /* ops[op - first] */
	/* @r holds a known op's body of the right size: 0, or -EINVAL. */
	int (*check)(const struct fl_proto_request *r);
};

extern const struct fl_proto_service fl__proto_core, fl__proto_sync, fl__proto_heap,
	fl__proto_observe;

/*
 * fl__proto_service_of() - the service owning the number @op (whether or
 * not it has an op of that number), or NULL for a number of no service
 */
const struct fl_proto_service *fl__proto_service_of(uint32_t op);

/*
 * fl__proto_decode_request() - check one received packet
 * @buf, @len: the packet
 * @nfds: how many fds came with it
 * @truncated: the packet or its fds did not fit (MSG_TRUNC or MSG_CTRUNC)
 * @ret: filled on success; on failure ret->hdr holds what could be read
 *	(zeroed if not even the header), so the daemon can answer by seq
 *
 * Checks the framing (sizes, op) and hands the body to its service's
 * decoder: names NUL-terminated, reserved fields zero, value ranges. The
 * header flags and the fd count are the service op table's to check
 * (fl__server_dispatch()); only where a body says how many fds come
 * (HEAP_FREE's group) does the decoder look at @nfds.
 * Return: 0, or the errno to answer with: -EPROTO (too short, sizes
 * disagree, truncated), -EOPNOTSUPP (unknown op), -EINVAL (bad reserved
 * field, name or value), -EPROTONOSUPPORT (HELLO of another core version,
 * whatever its size).
 */
int fl__proto_decode_request(const void *buf, size_t len, unsigned int nfds, int truncated,
			     struct fl_proto_request *ret);

/* The body size of a request of @op (-1 for an unknown op). */
int fl__proto_request_size(uint32_t op);

/*
 * fl__proto_op_since() - the service and its version a request of @op
 * needs: *@ret_service is an enum fl_proto_service_id.
 * Return: the version (FL_PROTO_SVC_CORE: FL_PROTO_VERSION), or -1 for an
 * unknown op.
 */
int fl__proto_op_since(uint32_t op, uint32_t *ret_service);

/* A human name for an op, for logs ("?" if unknown). */
const char *fl__proto_op_name(uint32_t op);

#endif /* FL_PROTOCOL_H */

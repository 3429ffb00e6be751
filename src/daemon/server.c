/* SPDX-License-Identifier: MIT */
/*
 * fencelined's event loop: accept clients, check who they are, decode each
 * request (src/proto), act on the core, answer. The core itself is the
 * unchanged in-process one; the daemon only adds fds that clients made
 * (host.h) and per-client accounting.
 *
 * The loop is one thread, and so is everything that changes a client's
 * counters: the core's fd watcher has no thread here (the loop runs it,
 * fl__watcher_host_fd(), so its release callbacks come from the loop), and
 * the closer thread of received.c only closes, reporting back through
 * fld_received_reap(). The counters' atomics date from when the watcher
 * was a thread of its own; nothing relies on them now.
 */
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fence.h>
#include <fenceline/sw_sync.h>
#include <fenceline/sync_file.h>
#include <fenceline/timeline.h>

#include "heapsvc.h"
#include "host.h"
#include "protocol.h"
#include "server.h"
#include "statuspage.h"
#include "transport.h"
#include "util.h"

/*
 * PINGs with FL_MSG_F_AFTER_CLOSES, answered after the loop has run the fd
 * watcher (a client the watcher's releases name may not be freed before
 * the loop is done with its events). Each holds a reference on its client.
 */
struct deferred_ping {
	struct client *c;
	struct fl_msg_hdr hdr;
	struct deferred_ping *next;
};
static struct deferred_ping *deferred_pings;

/*
 * Scheduling by cost, not by count: a DUMP walks /proc and costs as much
 * as thousands of fence requests, so "64 requests of one client, then the
 * others" let a client with DUMPs in flight hold everyone else up (a
 * bystander's PING p99 went from 0.03 to 26 ms). Instead:
 *  - a client's turn ends after BATCH requests or TURN_NS of the loop's
 *    time, whichever comes first (one DUMP ends it);
 *  - a pass over the ready clients ends after ROUND_NS: the clients not
 *    served are reported again by the next epoll_wait(), together with
 *    those that became ready meanwhile;
 *  - each pass serves the ready clients in the order of their debt, the
 *    loop time they took recently (halved every DEBT_HALF_LIFE_NS), so a
 *    client that asks little is answered before those that ask much.
 * A bystander thus waits for at most one expensive request in progress.
 */
#define BATCH		  64
#define LOOP_EVENTS	  64 /* events one epoll_wait() returns at most */
#define TURN_NS		  200000ull
#define ROUND_NS	  200000ull
#define DEBT_HALF_LIFE_NS 100000000ull
/*
 * Passes in a row that the handling of closed fds waits for clients whose
 * turn ended with requests left (see fld_serve()).
 */
#define DISPATCH_PUT_OFF_MAX 8
/* This pass left requests unread (a turn or the round ran out). */
static bool served_in_part;
static unsigned int dispatch_put_off;

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
	int fd;
	uid_t uid;
	pid_t pid;
	struct peer *proc, *user; /* its process and its uid */
	unsigned int heap_buffers; /* buffers it holds (each a daemon fd) */
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
	struct fld_heap_client *heap; /* its buffers (heapsvc.c); NULL: none yet */
	bool reading; /* its requests are being handled, further up the stack */
	uint64_t debt_ns, debt_at_ns; /* loop time it took recently, as of debt_at_ns */
	unsigned int parked; /* DUMPs waiting for a walk of /proc (see dump_step()) */
	struct client *prev, *next;
};

/*
 * Timelines with a shared counter (struct fl_proto_shared_timeline): the
 * counter is the timeline's value (its sw_sync driver has the counter
 * attached, through a mapping of its own that lives as long as the
 * timeline, so that it catches up when the timeline dies, after this entry
 * may be gone). Found again by the
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
};

#define MUST_MAX 4096

/*
 * Counters a client may own at once (the library tracks as many). Each one
 * costs the daemon a page of shared memory, so a client with thousands of
 * timelines gets counters for the first ones only; the others work through
 * the daemon.
 */
#define SHARED_PER_CLIENT 64
/* Hash buckets by timeline id (ids count up, so the low bits spread them). */
#define SHARED_BUCKETS 256

static struct shared_tl *shared[SHARED_BUCKETS];
static unsigned int nshared;

static void shared_disown(struct client *c);
static void publish_all(void);
static struct server_config cfg;
static struct client *tracer; /* the client whose trace session runs */
/* Fences and timelines gone since the last malloc_trim() (see trim_if_due()). */
static atomic_uint released;
static struct client *clients;
static struct client *zombies; /* disconnected; freed after the events at hand */
static unsigned int nclients;
static int epfd = -1;

/*
 * The log's rate limit: a token bucket of FLD_LOG_BURST lines, refilled at
 * FLD_LOG_PER_SEC a second, for the whole daemon (hostile clients come in
 * any number of connections and processes, so no per-peer bucket could
 * bound the total). Lines beyond it are counted, and the count is logged
 * as soon as a token is back (fld_log_flush()). Tokens are in thousandths.
 */
static struct {
	uint64_t tokens, last_ns;
	unsigned long suppressed;
	bool started;
} logq;

static bool log_take(void)
{
	uint64_t now = fl__now_ns();

	if (!logq.started) {
		logq.started = true;
		logq.tokens = FLD_LOG_BURST * 1000ull;
		logq.last_ns = now;
	}
	logq.tokens += (now - logq.last_ns) * FLD_LOG_PER_SEC / 1000000ull;
	logq.last_ns = now;
	if (logq.tokens > FLD_LOG_BURST * 1000ull)
		logq.tokens = FLD_LOG_BURST * 1000ull;
	if (logq.tokens < 1000)
		return false;
	logq.tokens -= 1000;
	return true;
}

static void log_line(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void log_line(const char *fmt, va_list ap)
{
	fprintf(stderr, "fencelined[%d]: ", (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void log_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

/* The suppressed lines' count, written with the token of the line that follows it. */
static void log_suppressed(void)
{
	if (!logq.suppressed)
		return;
	log_printf("%lu messages suppressed (log rate limit: %u lines a second)", logq.suppressed,
		   FLD_LOG_PER_SEC);
	logq.suppressed = 0;
}

void fld_log(const char *fmt, ...)
{
	va_list ap;

	if (!log_take()) {
		logq.suppressed++;
		return;
	}
	log_suppressed();
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

int fld_log_flush(void)
{
	if (!logq.suppressed)
		return -1;
	if (log_take()) {
		log_suppressed();
		return -1;
	}
	/* Until the bucket holds a whole token again. */
	return (int)((1000 - logq.tokens) * 1000 / FLD_LOG_PER_SEC / 1000) + 1;
}

static struct peer *peers;
/* Daemon fds one process, and one uid other than ours, may have us hold. */
static unsigned int max_fds_process, max_fds_uid;

/* The peer (@is_uid, @id), made on first use, with a reference; NULL: out of memory. */
static struct peer *peer_get(bool is_uid, unsigned int id)
{
	struct peer *p;

	for (p = peers; p; p = p->next)
		if (p->is_uid == is_uid && p->id == id) {
			p->refs++;
			return p;
		}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->is_uid = is_uid;
	p->id = id;
	p->refs = 1;
	p->next = peers;
	peers = p;
	return p;
}

static void peer_put(struct peer *p)
{
	if (!p || --p->refs)
		return;
	for (struct peer **pp = &peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p);
}

static void client_unref(struct client *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1) {
		peer_put(c->proc);
		peer_put(c->user);
		free(c);
	}
}

static bool is_pow2(unsigned long n)
{
	return n && !(n & (n - 1));
}

/* Whether @c's uid has a quota of its own: every uid but the daemon's. */
static bool uid_limited(const struct client *c)
{
	return c->uid != geteuid();
}

static unsigned int room_of(const struct peer *p, unsigned int max)
{
	unsigned int used = atomic_load(&p->fds);

	return used < max ? max - used : 0;
}

/* How many more daemon fds @c may have us hold, by its process's and its uid's quotas. */
static unsigned int fds_room_now(const struct client *c)
{
	unsigned int room = room_of(c->proc, max_fds_process);

	if (uid_limited(c))
		room = FL_MIN(room, room_of(c->user, max_fds_uid));
	return room;
}

/*
 * A completed pipe fence holds no daemon fd, but counts as one until a
 * sweep finds every copy of it closed: sweep before refusing.
 */
static unsigned int fds_room_for(const struct client *c, unsigned int need)
{
	unsigned int room = fds_room_now(c);

	if (room < need && fl__watcher_sweep())
		room = fds_room_now(c);
	return room;
}

static unsigned int fds_room(const struct client *c)
{
	return fds_room_for(c, 1);
}

static void fds_add(struct client *c, unsigned int n)
{
	atomic_fetch_add(&c->proc->fds, n);
	atomic_fetch_add(&c->user->fds, n);
}

static void fds_sub(struct client *c, unsigned int n)
{
	atomic_fetch_sub(&c->proc->fds, n);
	atomic_fetch_sub(&c->user->fds, n);
}

/* The quotas, for log_quota(): what they count, and the option that sets each. */
enum quota { Q_FDS_PROCESS, Q_FDS_UID, Q_FENCES, Q_TIMELINES };

static const struct {
	const char *option, *held;
} quotas[] = {
	[Q_FDS_PROCESS] = { "--max-fds-per-process", "of the daemon's fds" },
	[Q_FDS_UID] = { "--max-fds-per-uid", "of the daemon's fds" },
	[Q_FENCES] = { "--max-fences", "live fences" },
	[Q_TIMELINES] = { "--max-timelines", "live timelines" },
};

/*
 * Say who was refused @what, by which quota (@limit, @held now), for
 * whoever reads the log: a peer that keeps trying gets a line at its 1st,
 * 2nd, 4th, 8th... refusal.
 */
static void log_quota(struct client *c, const char *what, enum quota q, unsigned int limit,
		      unsigned int held)
{
	struct peer *p = q == Q_FDS_UID ? c->user : c->proc;
	char comm[32];

	if (!is_pow2(++p->refused))
		return;
	fld_comm_of(c->pid, comm, sizeof(comm));
	if (q == Q_FDS_UID)
		fld_log("uid %u: its processes hold %u %s, the most one other uid may (%s %u); "
			"refusing %s to pid %d (%s) with EMFILE (%lu refusals)",
			(unsigned int)c->uid, held, quotas[q].held, quotas[q].option, limit, what,
			(int)c->pid, comm, p->refused);
	else
		fld_log("pid %d (%s, uid %u): holds %u %s, the most one process may (%s %u); "
			"refusing %s with EMFILE (%lu refusals)",
			(int)c->pid, comm, (unsigned int)c->uid, held, quotas[q].held,
			quotas[q].option, limit, what, p->refused);
}

/* Log why @c gets no more fds (its process's quota, or its uid's). Always -EMFILE. */
static int fds_refused(struct client *c, const char *what)
{
	if (!room_of(c->proc, max_fds_process))
		log_quota(c, what, Q_FDS_PROCESS, max_fds_process, atomic_load(&c->proc->fds));
	else
		log_quota(c, what, Q_FDS_UID, max_fds_uid, atomic_load(&c->user->fds));
	return -EMFILE;
}

/* Count @n more daemon fds for @c, within its quotas: 0, or -EMFILE (logged). */
static int fds_charge(struct client *c, unsigned int n, const char *what)
{
	if (fds_room_for(c, n) < n)
		return fds_refused(c, what);
	fds_add(c, n);
	return 0;
}

/*
 * Close @fd, which @c sent (received.c): one the closer thread takes counts
 * as @c's daemon fd until it is closed. Return: true when that leaves @c
 * over a quota (the caller hangs up on it: its fds are stuck closing).
 */
static bool close_received(struct client *c, int fd)
{
	if (!fld_received_close(fd, c))
		return false;
	fds_add(c, 1);
	atomic_fetch_add(&c->refs, 1);
	return fds_room_now(c) == 0;
}

/* One more live fence (@timeline false) or timeline for @c, within --max-*: 0 or -EMFILE. */
static int objects_charge(struct client *c, bool timeline)
{
	atomic_uint *n = timeline ? &c->proc->timelines : &c->proc->fences;
	unsigned int max = timeline ? cfg.max_timelines : cfg.max_fences;

	/*
	 * Completed pipe fences closed everywhere count until a sweep finds
	 * them gone: sweep before refusing (only at the limit, so a client
	 * that sits there costs a sweep per refused request).
	 */
	if (!timeline && atomic_load(n) >= max)
		(void)fl__watcher_sweep();
	if (atomic_load(n) >= max) {
		log_quota(c, timeline ? "a timeline" : "a fence", timeline ? Q_TIMELINES : Q_FENCES,
			  max, atomic_load(n));
		return -EMFILE;
	}
	atomic_fetch_add(n, 1);
	atomic_fetch_add(timeline ? &c->timelines : &c->fences, 1);
	return 0;
}

static void objects_uncharge(struct client *c, bool timeline)
{
	atomic_fetch_sub(timeline ? &c->proc->timelines : &c->proc->fences, 1);
	atomic_fetch_sub(timeline ? &c->timelines : &c->fences, 1);
}

void fld_notify_closed(const void *client)
{
	struct client *c = (struct client *)client;

	fds_sub(c, 1);
	client_unref(c);
}

static void release_timeline(void *owner)
{
	struct client *c = owner;

	objects_uncharge(c, true);
	fds_sub(c, 1);
	atomic_fetch_add(&released, 1);
	client_unref(c);
}

static void release_fence(void *owner)
{
	struct client *c = owner;

	objects_uncharge(c, false);
	fds_sub(c, 1);
	atomic_fetch_add(&released, 1);
	client_unref(c);
}

static bool uid_allowed(uid_t uid)
{
	if (uid == geteuid() || cfg.allow_all)
		return true;
	for (unsigned int i = 0; i < cfg.n_allow; i++)
		if (cfg.allow[i] == uid)
			return true;
	return false;
}

/*
 * Pooled fds handed out and not yet made fences of, by inode. A fence fd
 * that nobody knows yet may be a pooled fd whose FENCE_NEW is still queued
 * on its client's connection (FENCE_NEW is one-way, and the client may
 * pass the fd on at once); the index names that one client, so that
 * fence_of() reads on that connection alone, at the cost of a lookup,
 * instead of every connection's (a request with a bogus fd would
 * otherwise cost one recvmsg() per connection: with 5000 idle
 * connections, a flood of them took a bystander's PING p99 to 2.9 ms).
 */
static struct pooled **pool_index;
static size_t pool_index_size, pool_index_count;

static size_t pool_bucket(dev_t dev, ino_t ino, size_t size)
{
	return (size_t)(((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dev) & (size - 1);
}

/* Index @p of @c; a table that cannot grow just gets longer chains. */
static void pool_index_add(struct client *c, struct pooled *p)
{
	size_t b;

	if (pool_index_count >= pool_index_size) {
		size_t size = pool_index_size ? pool_index_size * 2 : 256;
		struct pooled **t = calloc(size, sizeof(*t));

		if (t || !pool_index) {
			for (size_t i = 0; t && i < pool_index_size; i++)
				for (struct pooled *q = pool_index[i], *next; q; q = next) {
					next = q->index_next;
					b = pool_bucket(q->dev, q->ino, size);
					q->index_next = t[b];
					t[b] = q;
				}
			if (!t) {
				p->client = NULL; /* no table at all: not indexed */
				return;
			}
			free(pool_index);
			pool_index = t;
			pool_index_size = size;
		}
	}
	b = pool_bucket(p->dev, p->ino, pool_index_size);
	p->client = c;
	p->index_next = pool_index[b];
	pool_index[b] = p;
	pool_index_count++;
}

static void pool_index_del(struct pooled *p)
{
	if (!p->client)
		return;
	for (struct pooled **pp = &pool_index[pool_bucket(p->dev, p->ino, pool_index_size)]; *pp;
	     pp = &(*pp)->index_next)
		if (*pp == p) {
			*pp = p->index_next;
			pool_index_count--;
			break;
		}
	p->client = NULL;
	p->index_next = NULL;
}

/* The client whose pool holds the fd of inode (@dev, @ino), or NULL. */
static struct client *pool_index_client(dev_t dev, ino_t ino)
{
	if (!pool_index)
		return NULL;
	for (struct pooled *p = pool_index[pool_bucket(dev, ino, pool_index_size)]; p;
	     p = p->index_next)
		if (p->ino == ino && p->dev == dev)
			return p->client;
	return NULL;
}

/* A pooled fd that will not become a fence: its holders read @status. */
static void pooled_drop(struct pooled *p, int status)
{
	if (p->pipe)
		fl__fence_pipe_discard(p->pipe, status);
	else if (status == -ECONNRESET)
		close(p->sink); /* a socket's end-of-file reads as -ECONNRESET */
	else
		fl__fd_pair_fail(p->sink, status);
	p->pipe = NULL;
	p->sink = -1;
}

static void disconnect(struct client *c, const char *why)
{
	if (why)
		fld_log("client pid %d uid %u: %s; disconnecting", (int)c->pid,
			(unsigned int)c->uid, why);
	epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	/* The connection, its pooled fds and its buffers were ours on its behalf. */
	fds_sub(c, 1 + c->pool_count + c->heap_buffers);
	c->heap_buffers = 0;
	/* Pooled fds it never used read as the connection's end. */
	for (; c->pool_count; c->pool_count--, c->pool_head++) {
		pool_index_del(&c->pool[c->pool_head % FL_PROTO_POOL_MAX]);
		pooled_drop(&c->pool[c->pool_head % FL_PROTO_POOL_MAX], -ECONNRESET);
	}
	shared_disown(c);
	if (c->kick >= 0) {
		/* Its owner's watcher sees the hang-up and closes what it kept. */
		close(c->kick);
		close(c->kick_r);
		c->kick = c->kick_r = -1;
		fds_sub(c, 2);
	}
	fld_waits_client_gone(c);
	if (tracer == c) {
		int fd;

		/* Its trace goes with it. */
		tracer = NULL;
		if (fld_trace_stop(&fd) == 0)
			close(fd);
		publish_all();
	}
	fld_heapsvc_client_end(c->heap);
	c->heap = NULL;
	free(c->handles);
	c->handles = NULL;
	c->nhandles = c->handles_cap = 0;
	if (c->prev)
		c->prev->next = c->next;
	else
		clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	nclients--;
	/* Events already fetched may still name it: free it after them. */
	c->prev = NULL;
	c->next = zombies;
	zombies = c;
}

static void bury_zombies(void)
{
	while (zombies) {
		struct client *c = zombies;

		zombies = c->next;
		client_unref(c);
	}
}

/* Send one reply packet. false: the client is gone or not reading; drop it. */
static bool reply_send_fds(struct client *c, const struct fl_msg_hdr *req, const void *body,
			   size_t len, const int *fds, unsigned int nfds)
{
	struct fl_msg_hdr h = { req->op | FL_OP_REPLY, 0, req->seq, (uint32_t)len };
	ssize_t n = fl__proto_send(c->fd, &h, sizeof(h), body, len, fds, nfds, MSG_DONTWAIT);

	if (n == (ssize_t)(sizeof(h) + len))
		return true;
	if (n == -EAGAIN)
		disconnect(c, "does not read its replies");
	else if (n < 0 && n != -EPIPE && n != -ECONNRESET)
		disconnect(c, strerror((int)-n)); /* ours, not the client's: say so */
	else
		disconnect(c, NULL);
	return false;
}

static bool reply_send(struct client *c, const struct fl_msg_hdr *req, const void *body, size_t len,
		       int fd)
{
	return reply_send_fds(c, req, body, len, &fd, fd >= 0 ? 1 : 0);
}

static bool reply_status(struct client *c, const struct fl_msg_hdr *req, int status)
{
	struct fl_msg_reply r = { status, 0 };

	return reply_send(c, req, &r, sizeof(r), -1);
}

/* Answer a protocol violation, then drop the client. Always false. */
static bool reject(struct client *c, const struct fl_msg_hdr *req, int status, const char *why)
{
	if (reply_status(c, req, status))
		disconnect(c, why);
	return false;
}

static int client_readable(struct client *c, int max, uint64_t budget_ns);
static uint64_t client_debt(struct client *c, uint64_t now);
static int bind_handle(struct client *c, int fd, uint64_t id);
static int fence_of(struct client *c, int fd, struct fl_fence **ret);

/* The sw_sync timeline behind a client's fd, or -ENOTTY as the kernel would say. */
static int timeline_of(int fd, struct fl_timeline **ret)
{
	int r = fl_timeline_from_fd(fd, ret);

	if (r < 0)
		return -ENOTTY;
	if (!fl_timeline_is_sw_sync(*ret)) {
		fl_timeline_unref(*ret);
		return -ENOTTY;
	}
	return 0;
}

/* The live timeline of @s (a reference), or NULL once it is gone. */
static struct fl_timeline *shared_timeline(struct shared_tl *s)
{
	struct fl_timeline *tl;

	if (fl__timeline_from_key(s->dev, s->ino, &tl) < 0)
		return NULL;
	if (fl_timeline_get_id(tl) != s->id) {
		fl_timeline_unref(tl);
		return NULL;
	}
	return tl;
}

static struct shared_tl *shared_find_id(uint64_t id)
{
	for (struct shared_tl *s = shared[id % SHARED_BUCKETS]; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static struct shared_tl *shared_find(struct fl_timeline *tl)
{
	return nshared ? shared_find_id(fl_timeline_get_id(tl)) : NULL;
}

static void must_publish(struct shared_tl *s)
{
	uint64_t at = s->must_lost ? 0 : s->nmust ? s->must[0] : UINT64_MAX;

	/* While a trace runs, the owner syncs on every step: the trace sees it when it happens. */
	if (fld_tracing)
		at = 0;
	__atomic_store_n(&s->page->sync_at, at, __ATOMIC_SEQ_CST);
}

/* Every shared counter's sync_at again: a trace session started or ended. */
static void publish_all(void)
{
	for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
		for (struct shared_tl *s = shared[b]; s; s = s->next)
			must_publish(s);
}

/* Pop the points the timeline reached (at @value) off the must heap. */
static void must_pop_reached(struct shared_tl *s, uint64_t value)
{
	while (s->nmust && s->must[0] <= value) {
		uint64_t last = s->must[--s->nmust];
		uint32_t i = 0;

		for (;;) {
			uint32_t c = 2 * i + 1;

			if (c >= s->nmust)
				break;
			if (c + 1 < s->nmust && s->must[c + 1] < s->must[c])
				c++;
			if (last <= s->must[c])
				break;
			s->must[i] = s->must[c];
			i = c;
		}
		if (s->nmust)
			s->must[i] = last;
	}
}

static void must_push(struct shared_tl *s, uint64_t value)
{
	uint32_t i;

	/*
	 * Only the values count, not how many points have them: skip the
	 * common repeat (merges with one fence waiting on this timeline).
	 */
	if (s->must_lost || (s->nmust && s->must[0] == value))
		return;
	if (s->nmust == s->must_cap) {
		uint32_t cap = s->must_cap ? s->must_cap * 2 : 16;
		uint64_t *m = cap <= MUST_MAX ? realloc(s->must, cap * sizeof(*m)) : NULL;

		if (!m) {
			free(s->must);
			s->must = NULL;
			s->nmust = s->must_cap = 0;
			s->must_lost = true;
			return;
		}
		s->must = m;
		s->must_cap = cap;
	}
	for (i = s->nmust++; i > 0 && s->must[(i - 1) / 2] > value; i = (i - 1) / 2)
		s->must[i] = s->must[(i - 1) / 2];
	s->must[i] = value;
}

/*
 * Bring @tl up to its shared counter (its driver applies the difference,
 * modulo 2^64, as sw_sync's counter would: any value is taken as the
 * owner's, who can only hurt its own timeline), then raise sync_at past
 * the points that completed.
 * Return: 0, or -ENOENT when the timeline is dead.
 */
static int shared_sync(struct shared_tl *s, struct fl_timeline *tl)
{
	uint64_t value, before = s->synced;
	int r;

	/*
	 * Owners' ends closed before this catch-up are judged by the counter
	 * as it was (owner_end_closed()): a fence whose owner lost its end
	 * fails, even if this catch-up would reach it.
	 */
	fl__fence_pipe_ends_check();

	s->synced = __atomic_load_n(&s->page->value, __ATOMIC_SEQ_CST);
	if (s->synced != before) {
		/*
		 * The owner stamps the time before each addition: the points
		 * it reached get that time, not ours (we may look much later).
		 * It can only lie about its own timeline; still, keep the
		 * stamp between the last one and now.
		 */
		uint64_t stamp = __atomic_load_n(&s->page->stamp_ns, __ATOMIC_SEQ_CST);
		uint64_t now = fl__now_ns();

		if (stamp > now || stamp < s->stamp)
			stamp = now;
		s->stamp = stamp;
		fl__timeline_signal_stamp(stamp);
		if (fld_tracing)
			fld_trace_signal(s->id, s->is32 ? (uint32_t)before : before,
					 s->is32 ? (uint32_t)s->synced : s->synced,
					 s->owner ? s->owner->pid : 0, stamp, 0);
	}
	r = fl_sw_sync_timeline_catch_up(tl);
	fl__timeline_signal_stamp(0);
	/* A 32-bit timeline's value is the counter's low half; its heap holds counter values. */
	if (s->nmust &&
	    (s->is32 ? (value = s->synced, 0) : fl_sw_sync_timeline_get_value(tl, &value)) == 0) {
		must_pop_reached(s, value);
		must_publish(s);
	}
	return r;
}

/*
 * A pending point at @value on @tl that only we can complete: make the
 * owner wake us when its counter gets there. sync_at goes down before we
 * read the counter (in shared_sync()), so an addition we do not see yet
 * sees the new sync_at.
 */
static void shared_must(struct shared_tl *s, struct fl_timeline *tl, uint64_t value)
{
	if (!s->is32) {
		must_push(s, value);
	} else if ((int32_t)((uint32_t)s->synced - (uint32_t)value) < 0) {
		/*
		 * A 32-bit value is reached when the counter's low 32 bits pass
		 * it, wrap-aware (sw_sync's cmp32; up to 2^31 ahead is ahead):
		 * as the counter only grows, that is when it reaches this
		 * 64-bit value. One behind or further ahead is passed already.
		 */
		must_push(s, s->synced + (uint32_t)((uint32_t)value - (uint32_t)s->synced));
	}
	must_publish(s);
	shared_sync(s, tl);
}

/*
 * An owner completes its fences before it tells us, so a fence fd can read
 * as signalled while its point here is not yet. So before the daemon looks
 * at a timeline for a request (creating a fence on it, its value, a merge
 * or info of a fence with a point on it), it catches up with the counter.
 */
static void shared_sync_tl(struct fl_timeline *tl)
{
	struct shared_tl *s = shared_find(tl);

	if (s)
		shared_sync(s, tl);
}

/*
 * For each pending point of @f on a timeline with a counter: catch up with
 * it (@must false), or also count the point as one we must complete (@must
 * true). Without memory to list the points, every counter is done.
 */
static void shared_fence_points(struct fl_fence *f, bool must)
{
	struct fl_sync_pt_info few[8], *pts = few;
	int n = fl_fence_get_num_points(f), got;

	if (!nshared || n <= 0)
		return;
	if (n > (int)FL_ARRAY_SIZE(few) && !(pts = calloc((size_t)n, sizeof(*pts)))) {
		for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
			for (struct shared_tl *s = shared[b]; s; s = s->next) {
				struct fl_timeline *tl = shared_timeline(s);

				if (!tl)
					continue;
				if (must) {
					free(s->must);
					s->must = NULL;
					s->nmust = s->must_cap = 0;
					s->must_lost = true;
					must_publish(s);
				}
				shared_sync(s, tl);
				fl_timeline_unref(tl);
			}
		return;
	}
	got = fl_fence_get_info(f, NULL, pts, (uint32_t)n);
	for (int i = 0; i < got; i++) {
		struct shared_tl *s;
		struct fl_timeline *tl;

		if (pts[i].status != 0 || !(s = shared_find_id(pts[i].timeline_id)) ||
		    (!must && __atomic_load_n(&s->page->value, __ATOMIC_SEQ_CST) == s->synced))
			continue;
		tl = shared_timeline(s);
		if (!tl)
			continue;
		if (must)
			shared_must(s, tl, pts[i].value);
		else
			shared_sync(s, tl);
		fl_timeline_unref(tl);
	}
	if (pts != few)
		free(pts);
}

static void shared_sync_fence(struct fl_fence *f)
{
	shared_fence_points(f, false);
}

/* Catch up with every owner's counter: a view of everything must not lag. */
void fld_shared_sync_all(void)
{
	for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
		for (struct shared_tl *s = shared[b]; s; s = s->next) {
			struct fl_timeline *tl = shared_timeline(s);

			if (tl) {
				shared_sync(s, tl);
				fl_timeline_unref(tl);
			}
		}
}

static void shared_free(struct shared_tl **pp)
{
	struct shared_tl *s = *pp;

	*pp = s->next;
	if (s->owner)
		s->owner->nshared--;
	munmap(s->page, FL_PROTO_SHARED_SIZE);
	free(s->must);
	free(s);
	nshared--;
}

/* Free the counters of timelines that are gone (on creation: O(counters)). */
static void shared_collect(void)
{
	for (unsigned int b = 0; nshared && b < SHARED_BUCKETS; b++)
		for (struct shared_tl **pp = &shared[b], *s; (s = *pp);) {
			struct fl_timeline *tl = shared_timeline(s);

			if (tl) {
				fl_timeline_unref(tl);
				pp = &s->next;
			} else {
				shared_free(pp);
			}
		}
}

/* A client goes: its counters stay with their timelines, without an owner. */
static void shared_disown(struct client *c)
{
	for (unsigned int b = 0; c->nshared && b < SHARED_BUCKETS; b++)
		for (struct shared_tl *s = shared[b]; s; s = s->next)
			if (s->owner == c) {
				s->owner = NULL;
				c->nshared--;
			}
}

/*
 * Give a new timeline (its fd: @fd) a shared counter. Return: the memfd to
 * send its creator (sealed, so nobody can shrink it under our mapping), or
 * a negative errno: the timeline then works through the daemon only.
 */
static int shared_new(struct client *c, struct fl_timeline *tl, int fd, bool is32)
{
	struct fl_proto_shared_timeline *drv;
	struct shared_tl *s;
	int mfd = -1, r;

	if (c->nshared >= SHARED_PER_CLIENT)
		return -EMFILE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = fl__fd_identity(fd, &s->dev, &s->ino, NULL); /* a timeline fd: a pipe */
	if (r < 0)
		goto fail;
	mfd = memfd_create("fenceline-timeline", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0 || ftruncate(mfd, FL_PROTO_SHARED_SIZE) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		r = -errno;
		goto fail;
	}
	s->page = mmap(NULL, FL_PROTO_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (s->page == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	drv = mmap(NULL, FL_PROTO_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (drv == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	r = fl_sw_sync_timeline_attach_counter(tl, drv, FL_PROTO_SHARED_SIZE, &drv->value);
	if (r < 0) {
		munmap(drv, FL_PROTO_SHARED_SIZE);
		goto fail;
	}
	s->id = fl_timeline_get_id(tl);
	s->is32 = is32;
	must_publish(s);
	s->owner = c;
	c->nshared++;
	s->next = shared[s->id % SHARED_BUCKETS];
	shared[s->id % SHARED_BUCKETS] = s;
	nshared++;
	return mfd;
fail:
	if (s->page && s->page != MAP_FAILED)
		munmap(s->page, FL_PROTO_SHARED_SIZE);
	if (mfd >= 0)
		close(mfd);
	free(s);
	return r;
}

/*
 * given_done(): a kept fence completed here. Its owner holds the only write
 * end, so tell it (a struct fl_proto_kick in its kick pipe) when that
 * completion is not the owner's doing: a failure (its timeline died), or a
 * step not through its counter (kick_all). Not for catching up with the
 * owner's counter (it closed its ends of what it reached itself), nor
 * while handling the end's close (kick_none). The write never blocks: our
 * end is non-blocking and nobody else has that file; an owner that does
 * not read its kick pipe only delays its own fences.
 */
static int kick_all, kick_none;

static void kick_write(struct client *c, uint64_t slot, int status, uint64_t ts)
{
	struct fl_proto_kick k = { slot, ts, status, 0 };

	if (c && c->kick >= 0)
		(void)!write(c->kick, &k, sizeof(k));
}

static void given_done(void *owner, uint64_t slot, int status, uint64_t ts)
{
	if (!kick_none && (kick_all || status < 0))
		kick_write(owner, slot, status, ts);
}

/* Tell @c of @f, complete already, made of its pooled @slot, whose end it may have kept. */
static void kick_send(struct client *c, uint32_t slot, struct fl_fence *f)
{
	struct fl_fence_info info;

	if (fl_fence_get_info(f, &info, NULL, 0) >= 0 && info.status != 0)
		kick_write(c, slot, info.status, info.timestamp_ns);
}

/* TIMELINE_INC and TIMELINE_SIGNAL: through the counter if there is one. */
static int timeline_add(struct client *c, struct fl_timeline *tl, uint64_t count)
{
	struct shared_tl *s = shared_find(tl);
	uint64_t before = 0, after = 0, ts = 0;
	int r;

	/* Caught up first, so the trace tells the owner's steps from this one. */
	if (s)
		shared_sync(s, tl);
	if (fld_tracing)
		fl_sw_sync_timeline_get_value(tl, &before);
	/*
	 * The points this step reaches carry the time the trace gives the
	 * step (the core would read the clock again: an arrow from the signal
	 * to a wait it released would start where no signal is). And a step
	 * taken here through the owner's counter is this client's, not one of
	 * the owner's at the owner's last stamp: shared_sync() must not see it.
	 */
	ts = fl__now_ns();
	fl__timeline_signal_stamp(ts);
	/* Not the owner's counter: its kept ends of fences this step reaches are told (given_done()). */
	kick_all++;
	r = fl_sw_sync_timeline_inc(tl, count);
	kick_all--;
	fl__timeline_signal_stamp(0);
	if (r == 0 && s) {
		s->synced += s->is32 ? (uint32_t)count : count;
		r = shared_sync(s, tl);
	}
	if (fld_tracing && fl_sw_sync_timeline_get_value(tl, &after) == 0)
		fld_trace_signal(fl_timeline_get_id(tl), before, after, c->pid, ts, r);
	return r;
}

/* A new fence @f on @tl (at @value) that we must complete: see shared_must(). */
static void shared_must_tl(struct fl_timeline *tl, uint64_t value)
{
	struct shared_tl *s = shared_find(tl);

	if (s)
		shared_must(s, tl, value);
}

/* The status page's fd (fl__status_page_create()), -1 without one. */
static int status_page_fd = -1;

/*
 * Every write end of an owner's pipe fence is closed (fl__fence_pipe_give()):
 * its holders see it ready. That is a completion only if the owner's
 * counter reached the fence; otherwise the owner lost its end before it
 * got there (it died, or the program closed the library's fds), and the
 * fence fails with -ENOENT, as the kernel fails the pending points of a
 * sw_sync timeline that goes away: ready must never read as signalled
 * before it is.
 */
static void owner_end_closed(struct fl_fence *f)
{
	int n;

	/* Its owner has no end to close (nor those it closed with it). */
	kick_none++;
	shared_sync_fence(f);
	n = fl_fence_get_status(f) == 0 ? fl__fence_fail_pending(f, -ENOENT) : 0;
	kick_none--;
	if (n > 0)
		fld_log("an owner's fence '%s' failed: its signal end was closed before its "
			"timeline reached it",
			fl_fence_get_name(f));
}

/* Is @fd a pipe whose every write end is closed? */
static bool pipe_at_eof(int fd)
{
	struct pollfd pf = { .fd = fd, .events = 0 };
	struct fl__fd_stat st;

	return fl__fd_stat(fd, &st) == 0 && S_ISFIFO(st.mode) && poll(&pf, 1, 0) == 1 &&
	       (pf.revents & POLLHUP);
}

static bool op_hello(struct client *c, const struct fl_proto_request *q)
{
	struct fl_msg_hello_reply r = {
		{ 0, 0 }, FL_PROTO_VERSION, (uint32_t)getpid(), cfg.max_timelines, cfg.max_fences
	};
	/*
	 * Not for another uid (--allow-uid): the page shows the inode and
	 * status of every fence of every client. Such a client reads its
	 * fences' statuses from the pipes and asks us, as without a page.
	 */
	bool page = status_page_fd >= 0 && c->uid == geteuid();

	if (page)
		r.flags = FL_HELLO_F_STATUS_PAGE;
	c->greeted = true;
	return reply_send(c, &q->hdr, &r, sizeof(r), page ? status_page_fd : -1);
}

/* @c's kick pipe, made on first use. Return: 0, or -EMFILE over its quota, or a pipe2() error. */
static int kick_open(struct client *c)
{
	int p[2];

	if (c->kick >= 0)
		return 0;
	if (fds_charge(c, 2, "its kick pipe") < 0)
		return -EMFILE;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		fds_sub(c, 2);
		return -errno;
	}
	/* Nobody but root may reopen it through /proc to write kicks of its own. */
	(void)fchmod(p[0], 0);
	c->kick_r = p[0];
	c->kick = p[1];
	return 0;
}

static bool op_timeline_create(struct client *c, const struct fl_proto_request *q)
{
	struct fl_msg_bind_reply rep = { { 0, 0 }, UINT32_MAX, 0 };
	struct fl_timeline *tl;
	int r, fds[2] = { -1, -1 };
	bool ok;

	if (objects_charge(c, true) < 0)
		return reply_status(c, &q->hdr, -EMFILE);
	if (fds_charge(c, 1, "a timeline") < 0) {
		objects_uncharge(c, true);
		return reply_status(c, &q->hdr, -EMFILE);
	}
	shared_collect();
	r = fl_sw_sync_timeline_create(q->u.timeline_create.name, q->u.timeline_create.flags, &tl);
	if (r < 0) {
		objects_uncharge(c, true);
		fds_sub(c, 1);
	} else {
		atomic_fetch_add(&c->refs, 1);
		r = fl__timeline_export_fd_tracked(tl, &fds[0], release_timeline, c);
		if (r < 0) {
			objects_uncharge(c, true);
			fds_sub(c, 1);
			atomic_fetch_sub(&c->refs, 1);
		} else {
			/* Bound already, so its first fence needs no TIMELINE_BIND. */
			int h = bind_handle(c, fds[0], fl_timeline_get_id(tl));

			if (h >= 0) {
				rep.handle = (uint32_t)h;
				/* Without a handle it could not name it in TIMELINE_SYNC. */
				fds[1] = shared_new(c, tl, fds[0], q->u.timeline_create.flags != 0);
				if (fds[1] >= 0)
					rep.flags = FL_BIND_F_SHARED;
			}
			fld_trace_timeline_new(c->pid, fl_timeline_get_id(tl),
					       fl_timeline_get_name(tl), 0);
		}
		fl_timeline_unref(tl); /* the fd is the only handle */
	}
	if (r < 0)
		return reply_status(c, &q->hdr, r);

	ok = reply_send_fds(c, &q->hdr, &rep, sizeof(rep), fds, fds[1] >= 0 ? 2 : 1);
	/* The client's copies (if it got them) are the handle and its counter now. */
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return ok;
}

static bool op_timeline_inc(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_timeline *tl;
	int r = timeline_of(fds[0], &tl);

	if (r == 0) {
		r = timeline_add(c, tl, q->u.timeline_inc.count);
		fl_timeline_unref(tl);
	}
	return reply_status(c, &q->hdr, r);
}

static bool op_timeline_get_value(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_msg_value_reply rep = { { 0, 0 }, 0 };
	struct fl_timeline *tl;
	int r = timeline_of(fds[0], &tl);

	if (r == 0) {
		shared_sync_tl(tl);
		r = fl_sw_sync_timeline_get_value(tl, &rep.value);
		fl_timeline_unref(tl);
	}
	if (r < 0)
		return reply_status(c, &q->hdr, r);
	return reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
}

/*
 * Give a new fence the client's pair (@fds[0] sink, @fds[1] user end; both
 * consumed). A pair that is not one is a lying client: -EBADMSG.
 */
static int adopt(struct client *c, struct fl_fence *f, int *fds)
{
	int r;

	r = objects_charge(c, false);
	if (r == 0 && (r = fds_charge(c, 1, "a fence")) < 0)
		objects_uncharge(c, false);
	if (r < 0) {
		fl__fd_pair_fail(fds[0], -EMFILE);
		close(fds[1]);
		fds[0] = fds[1] = -1;
		return -EMFILE;
	}
	atomic_fetch_add(&c->refs, 1);
	r = fl__fence_adopt_fds(f, fds[0], fds[1], release_fence, c);
	fds[0] = fds[1] = -1;
	if (r < 0) {
		objects_uncharge(c, false);
		fds_sub(c, 1);
		atomic_fetch_sub(&c->refs, 1);
		/* Only fds that are not a socket pair are the client's fault. */
		if (r == -EBADF || r == -ENOTSOCK || r == -ENOTTY || r == -EINVAL || r == -EEXIST)
			return -EBADMSG;
		return r;
	}
	return 0;
}

/*
 * A fence fd of @f made here, for @c, to go with the reply (FENCE_MERGE,
 * FENCE_IMPORT): the read end of a pipe whose write end the core keeps, or
 * a socket pair's end where pipes cannot be used (fl__fence_pipes_ok()).
 * Charged to @c as adopt() charges. Return: 0 and *ret_fd (the caller
 * sends it and closes it), -EMFILE over a quota, or another error.
 */
static int fence_fd_new(struct client *c, struct fl_fence *f, int *ret_fd)
{
	struct fl__sink *s;
	dev_t dev;
	ino_t ino;
	int r, sv[2];

	r = objects_charge(c, false);
	if (r == 0 && (r = fds_charge(c, 1, "a fence")) < 0)
		objects_uncharge(c, false);
	if (r < 0)
		return -EMFILE;
	atomic_fetch_add(&c->refs, 1);
	if (fl__fence_pipes_ok()) {
		r = fl__fence_pipe_new(&s, ret_fd, NULL, NULL);
		/* Adopted while we hold the read end: its last close cannot come first. */
		if (r == 0 && (r = fl__fence_pipe_adopt(f, s, release_fence, c)) < 0)
			close(*ret_fd);
	} else {
		r = fl__socketpair_cloexec(sv);
		if (r == 0 && (r = fl__fd_inode(sv[1], &dev, &ino)) < 0) {
			close(sv[0]);
			close(sv[1]);
		} else if (r == 0) {
			/* Closes the sink on failure. */
			r = fl__fence_adopt_sink(f, sv[0], dev, ino, release_fence, c);
			if (r < 0)
				close(sv[1]);
			else
				*ret_fd = sv[1];
		}
	}
	if (r < 0) {
		objects_uncharge(c, false);
		fds_sub(c, 1);
		atomic_fetch_sub(&c->refs, 1);
	}
	return r;
}

/* The reply to a request that made a fence fd: the status, with the fd on success. */
static bool reply_fence_fd(struct client *c, const struct fl_msg_hdr *req, int r, int fd)
{
	struct fl_msg_reply ok = { 0, 0 };
	bool alive;

	if (r < 0)
		return reply_status(c, req, r);
	alive = reply_send(c, req, &ok, sizeof(ok), fd);
	close(fd);
	return alive;
}

static bool op_fence_create(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_timeline *tl;
	struct fl_fence *f;
	int r;

	/*
	 * The pair is written to and closed wherever the fence goes: only
	 * sockets may be (anything else could block the loop: received.c).
	 */
	if (!fld_received_inline(fds[1]) || !fld_received_inline(fds[2]))
		return reject(c, &q->hdr, -EBADMSG,
			      "FENCE_CREATE with fds that are not a socket pair");
	r = timeline_of(fds[0], &tl);
	if (r == 0) {
		/* Made before we catch up with the counter, as in op_fence_new(). */
		r = fl_sw_sync_fence_create(tl, q->u.fence_create.value, q->u.fence_create.name,
					    &f);
		if (r == 0) {
			r = adopt(c, f, &fds[1]);
			if (r == 0)
				fld_trace_fence_new(c->pid, f, "create", 0, 0);
			fl_fence_unref(f);
		}
		/* Nobody else holds its sink: ours to complete. */
		if (r == 0)
			shared_must_tl(tl, q->u.fence_create.value);
		fl_timeline_unref(tl);
	}
	if (r == -EBADMSG)
		return reject(c, &q->hdr, r, "FENCE_CREATE with fds that are not a socket pair");
	if (r < 0 && fds[1] >= 0) {
		/* One-way: the fence fd carries the answer. */
		fl__fd_pair_fail(fds[1], r);
		fds[1] = -1;
	}
	/* A one-way create has its answer in the fence fd: a reply would be unexpected. */
	if (q->hdr.flags & FL_MSG_F_REPLY)
		return reply_status(c, &q->hdr, r);
	return true;
}

/*
 * TIMELINE_BIND: remember the timeline behind @fds[0] for this connection,
 * so that FENCE_NEW can name it without sending the fd. The client proved
 * it holds the timeline by sending it; the handle names the fd's inode and
 * the timeline's id, so it never stands for another timeline later.
 */
static int bind_handle(struct client *c, int fd, uint64_t id)
{
	struct fl_timeline *tl;
	dev_t dev;
	ino_t ino;
	uint32_t i;
	int r = fl__fd_identity(fd, &dev, &ino, NULL); /* a timeline fd: a pipe */

	if (r < 0)
		return r;
	for (i = 0; i < c->nhandles; i++)
		if (c->handles[i].ino == ino && c->handles[i].dev == dev)
			break;
	if (i == c->nhandles) {
		/* A slot whose timeline is gone is reused first. */
		for (i = 0; i < c->nhandles; i++)
			if (fl__timeline_from_key(c->handles[i].dev, c->handles[i].ino, &tl) < 0)
				break;
			else
				fl_timeline_unref(tl);
	}
	if (i == c->handles_cap) {
		uint32_t cap = c->handles_cap ? c->handles_cap * 2 : 16;
		struct handle *h;

		if (cap > FL_PROTO_MAX_HANDLES)
			return -EMFILE;
		h = realloc(c->handles, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		c->handles = h;
		c->handles_cap = cap;
	}
	if (i == c->nhandles)
		c->nhandles++;
	c->handles[i] = (struct handle){ dev, ino, id };
	return (int)i;
}

static bool op_timeline_bind(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_msg_bind_reply rep = { { 0, 0 }, 0, 0 };
	struct fl_timeline *tl;
	uint64_t id;
	int r = timeline_of(fds[0], &tl);

	if (r < 0)
		return reply_status(c, &q->hdr, r);
	id = fl_timeline_get_id(tl);
	fl_timeline_unref(tl);
	r = bind_handle(c, fds[0], id);
	if (r < 0)
		return reply_status(c, &q->hdr, r);
	rep.handle = (uint32_t)r;
	return reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
}

/*
 * POOL_FILL: hand out fence fds that FENCE_NEW makes fences of later: the
 * read ends of pipes whose write ends the core keeps, so that no holder can
 * shut them down, write into them or make them ready early; socket pairs
 * where pipes cannot be used (fl__fence_pipes_ok()). With signal ends (an
 * owner's pool), a copy of each pipe's write end goes with it: a fence the
 * owner keeps the end of (FL_MSG_F_KEPT) is then completed by the owner's
 * record and close, and the core gives up its own end (see op_fence_new()).
 */
static bool op_pool_fill(struct client *c, const struct fl_proto_request *q)
{
	struct fl_msg_pool_reply rep = { { 0, 0 }, c->pool_slot + c->pool_count, 0 };
	/* The fence fds, then (FL_POOL_F_SIGNAL_ENDS) copies of our ends, and the kick pipe. */
	int user[2 * FL_PROTO_POOL_FILL_MAX + 1];
	uint32_t want = q->u.pool_fill.count, n = 0;
	bool ends = q->u.pool_fill.flags & FL_POOL_F_SIGNAL_ENDS, alive;
	bool pipes = fl__fence_pipes_ok();
	int r = 0;

	if (want > FL_PROTO_POOL_MAX - c->pool_count)
		return reply_status(c, &q->hdr, -ENOSPC);
	/* Pipe signal ends are of use only with a kick pipe (given_done()); without one, none. */
	if (ends && pipes && kick_open(c) < 0)
		ends = false;
	/* Each pooled pair's sink is a daemon fd held for it: as many as its quotas allow. */
	want = FL_MIN(want, fds_room(c));
	if (!want)
		return reply_status(c, &q->hdr, fds_refused(c, "fence fds for its pool"));
	for (; n < want; n++) {
		struct pooled *p = &c->pool[(c->pool_head + c->pool_count + n) % FL_PROTO_POOL_MAX];
		int sv[2];

		if (pipes) {
			r = fl__fence_pipe_new(&p->pipe, &user[n], &p->dev, &p->ino);
			if (r == 0 && ends &&
			    (r = fl__fence_pipe_end(p->pipe, user[n],
						    &user[FL_PROTO_POOL_FILL_MAX + n])) < 0) {
				fl__fence_pipe_discard(p->pipe, r);
				close(user[n]);
			}
			if (r < 0)
				break;
			p->sink = -1;
			p->end_given = ends;
			continue;
		}
		p->pipe = NULL;
		r = fl__socketpair_cloexec(sv);
		if (r == 0) {
			r = fl__fd_inode(sv[1], &p->dev, &p->ino);
			if (r < 0) {
				close(sv[0]);
				close(sv[1]);
			}
		}
		if (r == 0 && ends) {
			user[FL_PROTO_POOL_FILL_MAX + n] = fcntl(sv[0], F_DUPFD_CLOEXEC, 0);
			if (user[FL_PROTO_POOL_FILL_MAX + n] < 0) {
				r = -errno;
				close(sv[0]);
				close(sv[1]);
			}
		}
		if (r < 0)
			break;
		p->sink = sv[0];
		p->end_given = ends;
		user[n] = sv[1];
	}
	/* Out of fds after a few: hand out what we have. */
	if (n == 0)
		return reply_status(c, &q->hdr, r);
	rep.count = n;
	if (ends)
		memmove(&user[n], &user[FL_PROTO_POOL_FILL_MAX], n * sizeof(int));
	/* Last, so that it is the first to go where the client's fd table is full. */
	if (ends && pipes)
		user[2 * n] = c->kick_r;
	alive = reply_send_fds(c, &q->hdr, &rep, sizeof(rep), user,
			       ends ? 2 * n + (pipes ? 1 : 0) : n);
	for (uint32_t i = 0; i < (ends ? 2 * n : n); i++)
		close(user[i]);
	if (!alive) {
		for (uint32_t i = 0; i < n; i++)
			pooled_drop(
				&c->pool[(c->pool_head + c->pool_count + i) % FL_PROTO_POOL_MAX],
				-ECONNRESET);
		return false;
	}
	for (uint32_t i = 0; i < n; i++)
		pool_index_add(c, &c->pool[(c->pool_head + c->pool_count + i) % FL_PROTO_POOL_MAX]);
	c->pool_count += n;
	fds_add(c, n);
	return true;
}

/* The live timeline behind @handle: 0, or -ENOENT (gone, or another has its inode now). */
static int handle_timeline(struct client *c, uint32_t handle, struct fl_timeline **ret)
{
	int r = fl__timeline_from_key(c->handles[handle].dev, c->handles[handle].ino, ret);

	if (r == 0 && fl_timeline_get_id(*ret) != c->handles[handle].id) {
		fl_timeline_unref(*ret);
		r = -ENOENT;
	}
	return r;
}

/* TIMELINE_SIGNAL: TIMELINE_INC on a bound timeline. */
static bool op_timeline_signal(struct client *c, const struct fl_proto_request *q)
{
	struct fl_timeline *tl;
	int r;

	if (q->u.timeline_signal.handle >= c->nhandles)
		return reject(c, &q->hdr, -EBADMSG,
			      "TIMELINE_SIGNAL names a timeline it did not bind");
	r = handle_timeline(c, q->u.timeline_signal.handle, &tl);
	if (r == 0) {
		r = timeline_add(c, tl, q->u.timeline_signal.count);
		fl_timeline_unref(tl);
	}
	return reply_status(c, &q->hdr, r);
}

/*
 * TIMELINE_SYNC: the owner added to the counter and completed its own
 * fences; we complete every other point.
 */
static bool op_timeline_sync(struct client *c, const struct fl_proto_request *q)
{
	struct fl_timeline *tl;
	struct shared_tl *s;
	int r;

	if (q->u.timeline_sync.handle >= c->nhandles)
		return reject(c, &q->hdr, -EBADMSG,
			      "TIMELINE_SYNC names a timeline it did not bind");
	r = handle_timeline(c, q->u.timeline_sync.handle, &tl);
	if (r == 0) {
		s = shared_find(tl);
		r = s ? shared_sync(s, tl) : -EINVAL;
		fl_timeline_unref(tl);
	}
	return reply_status(c, &q->hdr, r);
}

/* FENCE_NEW: the oldest pooled fd becomes a fence of a bound timeline. */
static bool op_fence_new(struct client *c, const struct fl_proto_request *q)
{
	const struct fl_msg_fence_new *b = &q->u.fence_new;
	struct fl_timeline *tl = NULL;
	struct fl_fence *f = NULL;
	struct shared_tl *s;
	struct pooled p;
	int r;

	if (!c->pool_count || b->slot != c->pool_slot)
		return reject(c, &q->hdr, -EBADMSG, "FENCE_NEW names a slot it was not given");
	pool_index_del(&c->pool[c->pool_head % FL_PROTO_POOL_MAX]);
	p = c->pool[c->pool_head % FL_PROTO_POOL_MAX];
	c->pool_head++;
	c->pool_count--;
	c->pool_slot++;
	if (b->handle >= c->nhandles) {
		pooled_drop(&p, -EBADMSG);
		fds_sub(c, 1);
		return reject(c, &q->hdr, -EBADMSG, "FENCE_NEW names a timeline it did not bind");
	}
	r = handle_timeline(c, b->handle, &tl);
	if (r < 0)
		tl = NULL;
	/* The pooled sink was counted already: it is the fence's daemon fd now, or closed below. */
	if (r == 0)
		r = objects_charge(c, false);
	/*
	 * Made before we catch up with the owner's counter (shared_must()
	 * does, below): the owner may have signalled past this value after
	 * sending this request, and then the fence signals with the others,
	 * one timestamp for all, as a kernel fence made before the INC would.
	 */
	if (r == 0 && (r = fl_sw_sync_fence_create(tl, b->value, b->name, &f)) < 0)
		objects_uncharge(c, false);
	if (r == 0) {
		atomic_fetch_add(&c->refs, 1);
		r = p.pipe ? fl__fence_pipe_adopt(f, p.pipe, release_fence, c)
			   : fl__fence_adopt_sink(f, p.sink, p.dev, p.ino, release_fence, c);
		if (r == 0)
			fld_trace_fence_new(c->pid, f, "create", 0, 0);
		if (r < 0) {
			objects_uncharge(c, false);
			fds_sub(c, 1);
			atomic_fetch_sub(&c->refs, 1);
		}
	} else {
		pooled_drop(&p, r);
		fds_sub(c, 1);
	}
	/*
	 * The owner completes a fence whose signal end it kept when its
	 * counter gets there; it can only claim that for its own timeline and
	 * a slot that came with an end (else it would only delay its own).
	 * A pipe's: our write end goes, so the owner's close is the fd's
	 * readiness; owner_end_closed() then checks that it was a completion.
	 */
	if (r == 0 && (s = shared_find(tl))) {
		if (!((q->hdr.flags & FL_MSG_F_KEPT) && p.end_given && s->owner == c)) {
			shared_must(s, tl, b->value);
		} else if (p.pipe) {
			fl__fence_pipe_give(p.pipe, b->slot);
			/*
			 * Another process may have reached it before the owner
			 * could see: then the owner's end must go. Only this
			 * fence is told: the others the catch-up completes,
			 * the owner's counter reached.
			 */
			shared_sync(s, tl);
			if (fl_fence_get_status(f) != 0)
				kick_send(c, b->slot, f);
		}
	}
	fl_fence_unref(f);
	if (tl)
		fl_timeline_unref(tl);
	if (q->hdr.flags & FL_MSG_F_REPLY)
		return reply_status(c, &q->hdr, r);
	return true;
}

/* FENCE_RETURN: an owner gives a kept pipe signal end back before it disconnects. */
static bool op_fence_return(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_fence *f;

	(void)c;
	(void)q;
	/* Only a pipe can be one: any other file is left to the loop (received.c). */
	if (!fld_received_inline(fds[0]))
		return true;
	(void)fl__fence_pipe_return(fds[0], &f); /* consumes it; its close never waits */
	fds[0] = -1;
	/* Ours to complete again, when the counter gets there. */
	if (f) {
		shared_fence_points(f, true);
		fl_fence_unref(f);
	}
	return true;
}

static bool op_fence_merge(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_fence *a = NULL, *b = NULL, *m = NULL;
	int r, fd = -1;

	uint64_t ida = 0, idb = 0;

	if (fence_of(c, fds[0], &a) < 0)
		r = -ENOTTY;
	else if (fence_of(c, fds[1], &b) < 0)
		r = -ENOENT;
	else {
		shared_sync_fence(a);
		shared_sync_fence(b);
		r = fl_fence_merge(a, b, q->u.fence_merge.name, q->u.fence_merge.flags, &m);
		/* The merged fence has a sink of its own, which only we write. */
		if (r == 0)
			shared_fence_points(m, true);
	}
	if (a) {
		ida = fl__fence_id(a);
		fl_fence_unref(a);
	}
	if (b) {
		idb = fl__fence_id(b);
		fl_fence_unref(b);
	}
	if (r == 0) {
		r = fence_fd_new(c, m, &fd);
		if (r == 0)
			fld_trace_fence_new(c->pid, m, "merge", ida, idb);
		fl_fence_unref(m);
	}
	return reply_fence_fd(c, &q->hdr, r, fd);
}

static bool op_fence_info(struct client *c, const struct fl_proto_request *q, int *fds)
{
	unsigned char buf[FL_PROTO_MAX_REPLY];
	struct fl_msg_info_reply rep;
	struct fl_sync_pt_info *pts = NULL;
	struct fl_fence_info info;
	struct fl_fence *f;
	uint32_t first = q->u.fence_info.first, want = q->u.fence_info.max, n;
	int r;

	if (fence_of(c, fds[0], &f) < 0)
		return reply_status(c, &q->hdr, -ENOTTY);
	shared_sync_fence(f);
	/*
	 * An owner's pipe fence whose every write end is closed reads as
	 * ready: never answer "active" for it (its reader would spin), even
	 * if the end's EPOLLHUP is still queued in our loop.
	 */
	if (fl_fence_get_status(f) == 0 && pipe_at_eof(fds[0]))
		owner_end_closed(f);
	n = (uint32_t)fl_fence_get_num_points(f);
	if (first > n) {
		fl_fence_unref(f);
		return reply_status(c, &q->hdr, -EINVAL);
	}
	want = FL_MIN(want, n - first);
	if (first + want) {
		pts = calloc(first + want, sizeof(*pts));
		if (!pts) {
			fl_fence_unref(f);
			return reply_status(c, &q->hdr, -ENOMEM);
		}
	}
	r = fl_fence_get_info(f, &info, pts, first + want);
	fl_fence_unref(f);
	if (r < 0) {
		free(pts);
		return reply_status(c, &q->hdr, r);
	}
	memset(&rep, 0, sizeof(rep));
	memcpy(rep.name, info.name, sizeof(rep.name));
	rep.status = info.status;
	rep.num_points = info.num_points;
	rep.timestamp_ns = info.timestamp_ns;
	rep.first = first;
	rep.count = want;
	memcpy(buf, &rep, sizeof(rep));
	for (uint32_t i = 0; i < want; i++) {
		const struct fl_sync_pt_info *s = &pts[first + i];
		struct fl_msg_point p;

		memset(&p, 0, sizeof(p));
		memcpy(p.timeline_name, s->timeline_name, sizeof(p.timeline_name));
		memcpy(p.driver_name, s->driver_name, sizeof(p.driver_name));
		p.status = s->status;
		p.flags = s->flags;
		p.timestamp_ns = s->timestamp_ns;
		p.value = s->value;
		p.timeline_id = s->timeline_id;
		memcpy(buf + sizeof(rep) + i * sizeof(p), &p, sizeof(p));
	}
	free(pts);
	return reply_send(c, &q->hdr, buf, sizeof(rep) + want * sizeof(struct fl_msg_point), -1);
}

/* Whether @fd is a kernel sync_file ("anon_inode:sync_file" in /proc/self/fd). */
static bool is_sync_file(int fd)
{
	static const char name[] = "anon_inode:sync_file";
	char path[40], link[sizeof(name) + 1];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	return n == (ssize_t)sizeof(name) - 1 && !memcmp(link, name, sizeof(name) - 1);
}

/* A kernel sync_file as a fence (the kernel uapi emulation merges with them). */
static bool op_fence_import(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_fence *f;
	int r, fd = -1;

	/*
	 * The import's ioctl() would be the file's own: a FUSE file's is a
	 * request its server may never answer. procfs names a sync_file
	 * without asking any filesystem; anything else is left to the loop.
	 */
	if (!is_sync_file(fds[0]))
		return reply_status(c, &q->hdr, -EINVAL);
	r = fl_sync_file_import(fds[0], q->u.fence_import.name, &f);
	close(fds[0]); /* the import took its own copy; an anonymous inode's close never waits */
	fds[0] = -1;
	if (r == 0) {
		r = fence_fd_new(c, f, &fd);
		if (r == 0)
			fld_trace_fence_new(c->pid, f, "import", 0, 0);
		fl_fence_unref(f);
	}
	return reply_fence_fd(c, &q->hdr, r, fd);
}

static bool op_fence_set_deadline(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_fence *f;
	int r;

	if (fence_of(c, fds[0], &f) < 0)
		return reply_status(c, &q->hdr, -ENOTTY);
	/* Points the owner has completed are not told: the kernel skips signalled ones. */
	shared_sync_fence(f);
	r = fl_fence_set_deadline(f, q->u.fence_set_deadline.deadline_ns);
	if (r == 0)
		fld_trace_deadline(c->pid, fl__fence_id(f), q->u.fence_set_deadline.deadline_ns);
	fl_fence_unref(f);
	return reply_status(c, &q->hdr, r);
}

static bool op_fence_get_deadline(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_msg_value_reply rep = { { 0, 0 }, 0 };
	struct fl_fence *f;
	int r;

	if (fence_of(c, fds[0], &f) < 0)
		return reply_status(c, &q->hdr, -ENOTTY);
	r = fl_fence_get_deadline(f, &rep.value);
	fl_fence_unref(f);
	if (r < 0)
		return reply_status(c, &q->hdr, r);
	return reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
}

/* fld_owner_fn: the connected creator of a timeline with a shared counter. */
static pid_t owner_of(const void *timeline, void *arg)
{
	struct shared_tl *s = shared_find((struct fl_timeline *)timeline);

	(void)arg;
	return s && s->owner ? s->owner->pid : 0;
}

/*
 * DUMP (fencectl): every object as it is now, so first catch up with every
 * owner's counter (our view of an owned timeline lags until asked).
 */
/* Write the dump @hdr asked for (@flags, @pid), holders from @scan (NULL: walk now), and answer. */
static bool view_answer(struct client *c, const struct fl_msg_hdr *hdr, uint32_t flags,
			const struct fld_scan *scan);

static bool dump_answer(struct client *c, const struct fl_msg_hdr *hdr, uint32_t flags,
			uint32_t pid, const struct fld_scan *scan)
{
	struct fld_client_info *infos = calloc(nclients ? nclients : 1, sizeof(*infos));
	size_t n = 0;
	int r, fd = -1;
	bool ok;

	if (flags & FL_DUMP_DEADLOCKS) {
		free(infos);
		return view_answer(c, hdr, flags, scan);
	}
	if (!infos)
		return reply_status(c, hdr, -ENOMEM);
	fld_shared_sync_all();
	for (struct client *k = clients; k && n < nclients; k = k->next)
		infos[n++] = (struct fld_client_info){ k->pid, k->uid,
						       (unsigned int)atomic_load(&k->timelines),
						       (unsigned int)atomic_load(&k->fences) };
	r = fld_dump_write(flags & FL_DUMP_JSON, flags & FL_DUMP_FDS, (pid_t)pid, infos, n,
			   owner_of, NULL, scan, &fd);
	free(infos);
	if (r < 0)
		return reply_status(c, hdr, r);
	ok = reply_send(c, hdr, &(struct fl_msg_reply){ 0, 0 }, sizeof(struct fl_msg_reply), fd);
	close(fd);
	return ok;
}

/*
 * DUMPs waiting for a walk of /proc that started after they arrived, in
 * arrival order. The walk is done a few processes at a time between other
 * clients' turns (dump_step()), and one walk answers every DUMP parked
 * before it started: a flood of DUMPs costs one walk at a time, and never
 * holds up the loop for a whole walk. A client with a DUMP parked is not
 * read until it is answered, so its replies keep their order. Each holds
 * a reference on its client.
 */
struct parked_dump {
	struct client *c;
	struct fl_msg_hdr hdr;
	uint32_t flags, pid;
	uint64_t walk; /* the walk it needs: the first started after it arrived */
	struct parked_dump *next;
};
static struct parked_dump *parked, **parked_tail = &parked;
static struct fld_scan *walk; /* the walk in progress, or the last one */
static uint64_t walks; /* walks started; the one in @walk is number @walks */
static bool walk_done;
/*
 * Walks take at most half of the loop's time: the next one starts no
 * sooner than the last one's busy time after it ended, so a flood of
 * DUMPs leaves the daemon time for everyone else. A parked client stays
 * in the epoll set, so while it has requests queued the loop does not
 * sleep between walks, it polls: measured, that answered a bystander
 * under a flood faster (p99 0.54 against 0.78-2.3 ms here) than taking
 * parked clients out of the set and sleeping.
 */
static uint64_t walk_busy_ns, next_walk_ns;
/*
 * The deadlock detector's periodic check needs who holds which timeline
 * when a process is blocked: it gets a walk like a parked DUMP (the walk
 * number it waits for; 0: none), and one walk serves both.
 */
static uint64_t detector_walk;

#define WALK_STEP_NS 100000ull /* a walk's share of each pass of the loop */
#define ANSWER_NS    200000ull /* and the parked DUMPs' answers' */

static void unpark(struct parked_dump *d, const struct fld_scan *scan)
{
	struct client *c = d->c;
	uint64_t start = fl__now_ns();

	if (c->fd >= 0)
		dump_answer(c, &d->hdr, d->flags, d->pid, scan);
	c->parked--;
	client_debt(c, start);
	c->debt_ns += fl__now_ns() - start;
	client_unref(c);
	free(d);
}

/*
 * Some of the parked DUMPs' work. Return: ms until it wants to run again
 * (0: at once), -1 when nothing is parked.
 */
static int dump_step(void)
{
	uint64_t start = fl__now_ns(), need;

	if (!parked && !detector_walk)
		return -1;
	if (walk && !walk_done) {
		walk_done = fld_scan_step(walk, WALK_STEP_NS);
		walk_busy_ns += fl__now_ns() - start;
		if (walk_done)
			next_walk_ns = fl__now_ns() + walk_busy_ns;
		return 0;
	}
	need = parked ? parked->walk : UINT64_MAX;
	if (detector_walk)
		need = FL_MIN(need, detector_walk);
	if (!walk || need > walks) {
		if (start < next_walk_ns)
			return (int)((next_walk_ns - start + 999999) / 1000000);
		fld_scan_free(walk);
		walk = fld_scan_start();
		walks++;
		walk_done = false;
		walk_busy_ns = 0;
		if (!walk) {
			/* Out of memory for a walk: each one walks on its own. */
			if (detector_walk) {
				detector_walk = 0;
				fld_waits_walked(NULL);
			}
			while (parked) {
				struct parked_dump *d = parked;

				parked = d->next;
				unpark(d, NULL);
			}
			parked_tail = &parked;
			return -1;
		}
		return 0;
	}
	if (detector_walk && detector_walk <= walks) {
		detector_walk = 0;
		fld_waits_walked(walk);
	}
	while (parked && parked->walk <= walks) {
		struct parked_dump *d = parked;

		parked = d->next;
		if (!parked)
			parked_tail = &parked;
		unpark(d, walk);
		if (fl__now_ns() - start >= ANSWER_NS)
			break;
	}
	return parked ? 0 : -1;
}

static bool op_dump(struct client *c, const struct fl_proto_request *q)
{
	struct parked_dump *d;
	int r, fd = -1;
	bool ok;

	if (q->u.dump.flags & FL_DUMP_HEAPS) {
		r = fld_heapsvc_dump(q->u.dump.flags & FL_DUMP_JSON, &fd);
		if (r < 0)
			return reply_status(c, &q->hdr, r);
		ok = reply_send(c, &q->hdr, &(struct fl_msg_reply){ 0, 0 },
				sizeof(struct fl_msg_reply), fd);
		close(fd);
		return ok;
	}
	d = malloc(sizeof(*d));
	if (!d)
		return dump_answer(c, &q->hdr, q->u.dump.flags, q->u.dump.pid, NULL);
	*d = (struct parked_dump){ c, q->hdr, q->u.dump.flags, q->u.dump.pid, walks + 1, NULL };
	atomic_fetch_add(&c->refs, 1);
	c->parked++;
	*parked_tail = d;
	parked_tail = &d->next;
	return true;
}

/*
 * DUMP's other views: deadlocks (parked like the others: the detector
 * wants the holders from @scan) and stats, written here rather than by
 * dump.c.
 */
static bool view_answer(struct client *c, const struct fl_msg_hdr *hdr, uint32_t flags,
			const struct fld_scan *scan)
{
	bool json = flags & FL_DUMP_JSON;
	char *text = NULL;
	size_t len = 0;
	int r, fd = -1;
	FILE *out;
	bool ok;

	/* Owned timelines' values, as the report shows them, are caught up first. */
	fld_shared_sync_all();
	out = open_memstream(&text, &len);
	if (!out)
		return reply_status(c, hdr, -ENOMEM);
	if (flags & FL_DUMP_DEADLOCKS)
		r = fld_deadlocks_write(out, json, scan);
	else
		r = fld_stats_write(out, json, flags & FL_DUMP_RESET);
	if (fclose(out) != 0 || !text)
		r = -ENOMEM;
	if (r == 0)
		r = fld_memfd_sealed(text, len, &fd);
	free(text);
	if (r < 0)
		return reply_status(c, hdr, r);
	ok = reply_send(c, hdr, &(struct fl_msg_reply){ 0, 0 }, sizeof(struct fl_msg_reply), fd);
	close(fd);
	return ok;
}

static bool op_dump_view(struct client *c, const struct fl_proto_request *q)
{
	return view_answer(c, &q->hdr, q->u.dump.flags, NULL);
}

/* WAIT_BEGIN: one-way; a fence we do not know (in-process, gone) is not our business. */
static bool op_wait_begin(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_fence *f;
	int notify = -1;

	if (fl_fence_from_fd(fds[0], &f) < 0)
		return true;
	/* A notify fd is a daemon fd held for it: within its quotas, or the wait has none. */
	if ((q->hdr.flags & FL_MSG_F_NOTIFY) && fds_charge(c, 1, "a notify fd") == 0) {
		notify = fds[1];
		fds[1] = -1;
		/* Until waits.c closes it (fld_notify_closed()). */
		atomic_fetch_add(&c->refs, 1);
	}
	if (fld_wait_begin(c, c->pid, &q->u.wait_begin, f, notify) == -EMFILE)
		fld_log("client pid %d: more than its share of waits; not tracking more",
			(int)c->pid);
	fl_fence_unref(f);
	return true;
}

static bool op_wait_end(struct client *c, const struct fl_proto_request *q)
{
	fld_wait_end(c, q->u.wait_end.token, q->u.wait_end.result);
	return true;
}

/* TRACE: one session at a time, owned by the client that started it. */
static bool op_trace(struct client *c, const struct fl_proto_request *q)
{
	int r, fd = -1;
	bool ok;

	if (q->u.trace.cmd == FL_TRACE_START) {
		r = fld_trace_start(c->pid, q->u.trace.max_events, cfg.trace_max_events);
		if (r == 0) {
			tracer = c;
			publish_all();
		}
		return reply_status(c, &q->hdr, r);
	}
	if (tracer != c)
		return reply_status(c, &q->hdr, fld_tracing ? -EPERM : -ENOENT);
	/* Waits still going on are part of the picture. */
	fld_waits_trace_pending();
	tracer = NULL;
	r = fld_trace_stop(&fd);
	publish_all();
	if (r < 0)
		return reply_status(c, &q->hdr, r);
	ok = reply_send(c, &q->hdr, &(struct fl_msg_reply){ 0, 0 }, sizeof(struct fl_msg_reply),
			fd);
	close(fd);
	return ok;
}

/* The allocation service (heapsvc.c): the daemon keeps its fd of the buffer. */
static bool op_heap_alloc(struct client *c, const struct fl_proto_request *q)
{
	struct fl_msg_heap_alloc_reply rep;
	int fd, r = fds_charge(c, 1, "a buffer");

	if (r == 0 && (r = fld_heapsvc_alloc(&c->heap, c->pid, &q->u.heap_alloc, &rep, &fd)) < 0)
		fds_sub(c, 1);
	if (r < 0)
		return reply_status(c, &q->hdr, r);
	c->heap_buffers++;
	return reply_send(c, &q->hdr, &rep, sizeof(rep), fd);
}

static bool op_heap_free(struct client *c, const struct fl_proto_request *q, int *fds)
{
	struct fl_msg_heap_free_reply rep = { { 0, 0 }, 0 };

	rep.r.status =
		fld_heapsvc_free(c->heap, q->nfds ? fds[0] : -1, q->u.heap_free.group, &rep.freed);
	fds_sub(c, (unsigned int)rep.freed);
	c->heap_buffers -= (unsigned int)rep.freed;
	if (rep.r.status < 0)
		return reply_status(c, &q->hdr, rep.r.status);
	return reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
}

static bool op_heap_info(struct client *c, const struct fl_proto_request *q)
{
	struct fl_msg_heap_info_reply rep;
	int r = fld_heapsvc_info(c->heap, q->u.heap_info.heap, &rep);

	if (r < 0)
		return reply_status(c, &q->hdr, r);
	return reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
}

static bool op_ping(struct client *c, const struct fl_proto_request *q)
{
	struct deferred_ping *d;

	if (!(q->hdr.flags & FL_MSG_F_AFTER_CLOSES))
		return reply_status(c, &q->hdr, 0);
	d = malloc(sizeof(*d));
	if (!d)
		return reply_status(c, &q->hdr, -ENOMEM);
	atomic_fetch_add(&c->refs, 1);
	*d = (struct deferred_ping){ c, q->hdr, deferred_pings };
	deferred_pings = d;
	return true;
}

/*
 * The fds the deferred PINGs' senders closed before sending them hung up
 * in the kernel then, so the watcher has them now: handle them, then answer.
 */
static void answer_deferred_pings(void)
{
	if (!deferred_pings)
		return;
	fl__watcher_dispatch();
	/* A new pending fence's last close shows in no epoll set: look for those too. */
	(void)fl__watcher_sweep_fresh();
	while (deferred_pings) {
		struct deferred_ping *d = deferred_pings;

		deferred_pings = d->next;
		if (d->c->fd >= 0)
			reply_status(d->c, &d->hdr, 0);
		client_unref(d->c);
		free(d);
	}
}

/*
 * A fence fd we do not know may be a pooled fd whose FENCE_NEW its client
 * sent (one-way) before passing the fd on, still unread on that client's
 * connection: causality guarantees it is queued by now. So before
 * answering "not a fence", handle what that client has queued. Not a
 * client being read further up the stack (its FENCE_NEW, if any, came
 * before the request at hand); a disconnected one has fd -1.
 */
static int fence_of(struct client *c, int fd, struct fl_fence **ret)
{
	struct client *maker;
	dev_t dev;
	ino_t ino;

	if (fl_fence_from_fd(fd, ret) == 0)
		return 0;
	if (fl__fd_identity(fd, &dev, &ino, NULL) < 0)
		return -ENOENT;
	maker = pool_index_client(dev, ino);
	/*
	 * A client with a DUMP parked is read once it is answered; the
	 * library sends DUMP only as a round trip, so no FENCE_NEW of its
	 * waits behind one (and answering it now would walk /proc in one go).
	 */
	if (!maker || maker == c || maker->reading || maker->parked)
		return -ENOENT;
	/*
	 * One request at a time, until that FENCE_NEW is handled (the fd
	 * leaves the index) or nothing is queued: what was queued before the
	 * fd was passed is finite, and a client that keeps sending cannot
	 * keep us here.
	 */
	while (maker->fd >= 0 && !maker->parked && pool_index_client(dev, ino) == maker)
		if (client_readable(maker, 1, 0) == 0)
			break;
	return fl_fence_from_fd(fd, ret);
}

/* Act on one decoded request. false: the client was disconnected. */
static bool dispatch(struct client *c, const struct fl_proto_request *q, int *fds)
{
	if (!c->greeted && q->hdr.op != FL_OP_HELLO)
		return reject(c, &q->hdr, -EPROTO, "first request is not HELLO");
	switch (q->hdr.op) {
	case FL_OP_HELLO:
		return op_hello(c, q);
	case FL_OP_TIMELINE_CREATE:
		return op_timeline_create(c, q);
	case FL_OP_TIMELINE_INC:
		return op_timeline_inc(c, q, fds);
	case FL_OP_TIMELINE_GET_VALUE:
		return op_timeline_get_value(c, q, fds);
	case FL_OP_FENCE_CREATE:
		return op_fence_create(c, q, fds);
	case FL_OP_FENCE_MERGE:
		return op_fence_merge(c, q, fds);
	case FL_OP_FENCE_INFO:
		return op_fence_info(c, q, fds);
	case FL_OP_TIMELINE_BIND:
		return op_timeline_bind(c, q, fds);
	case FL_OP_POOL_FILL:
		return op_pool_fill(c, q);
	case FL_OP_FENCE_NEW:
		return op_fence_new(c, q);
	case FL_OP_TIMELINE_SIGNAL:
		return op_timeline_signal(c, q);
	case FL_OP_TIMELINE_SYNC:
		return op_timeline_sync(c, q);
	case FL_OP_FENCE_SET_DEADLINE:
		return op_fence_set_deadline(c, q, fds);
	case FL_OP_FENCE_GET_DEADLINE:
		return op_fence_get_deadline(c, q, fds);
	case FL_OP_FENCE_IMPORT:
		return op_fence_import(c, q, fds);
	case FL_OP_DUMP:
		if (q->u.dump.flags & FL_DUMP_STATS)
			return op_dump_view(c, q);
		return op_dump(c, q);
	case FL_OP_WAIT_BEGIN:
		return op_wait_begin(c, q, fds);
	case FL_OP_WAIT_END:
		return op_wait_end(c, q);
	case FL_OP_TRACE:
		return op_trace(c, q);
	case FL_OP_HEAP_ALLOC:
		return op_heap_alloc(c, q);
	case FL_OP_HEAP_FREE:
		return op_heap_free(c, q, fds);
	case FL_OP_HEAP_INFO:
		return op_heap_info(c, q);
	case FL_OP_FENCE_RETURN:
		return op_fence_return(c, q, fds);
	default: /* FL_OP_PING */
		return op_ping(c, q);
	}
}

/*
 * The kernel could not give us every fd of a request (MSG_CTRUNC with room
 * to spare in our buffer): this daemon is out of fds, which is not the
 * client's fault. Answer -EMFILE as the request would have been answered
 * (a fence whose sink arrived fails with it) and keep the client.
 * Return: false when @buf is not a request with fds we know.
 */
static bool shed_out_of_fds(struct client *c, const unsigned char *buf, ssize_t n, int *fds,
			    int nfds)
{
	static bool logged;
	struct fl_msg_hdr h;
	int sink = -1;

	if (n < (ssize_t)sizeof(h))
		return false;
	memcpy(&h, buf, sizeof(h));
	switch (h.op) {
	case FL_OP_FENCE_CREATE:
		sink = 1;
		break;
	case FL_OP_FENCE_MERGE:
	case FL_OP_FENCE_IMPORT:
	case FL_OP_TIMELINE_INC:
	case FL_OP_TIMELINE_GET_VALUE:
	case FL_OP_TIMELINE_BIND:
	case FL_OP_FENCE_INFO:
	case FL_OP_FENCE_SET_DEADLINE:
	case FL_OP_FENCE_GET_DEADLINE:
	case FL_OP_HEAP_FREE:
		break;
	default:
		return false;
	}
	if (!logged) {
		fld_log("out of fds (raise the limit: docs/daemon.md); failing requests "
			"with "
			"EMFILE");
		logged = true;
	}
	/* Only a socket takes the record: anything else is closed as sent. */
	if (sink >= 0 && sink < nfds && fld_received_inline(fds[sink])) {
		fl__fd_pair_fail(fds[sink], -EMFILE);
		fds[sink] = -1;
	}
	for (int k = 0; k < nfds; k++)
		if (fds[k] >= 0)
			close_received(c, fds[k]);
	if (h.op == FL_OP_FENCE_CREATE && !(h.flags & FL_MSG_F_REPLY))
		return true;
	reply_status(c, &h, -EMFILE);
	return true;
}

static int client_read_some(struct client *c, int max, uint64_t start, uint64_t budget_ns);

/* @c's debt now: halved for every half-life gone by since it was last updated. */
static uint64_t client_debt(struct client *c, uint64_t now)
{
	uint64_t halves = (now - c->debt_at_ns) / DEBT_HALF_LIFE_NS;

	c->debt_ns = halves >= 64 ? 0 : c->debt_ns >> halves;
	c->debt_at_ns += halves * DEBT_HALF_LIFE_NS;
	return c->debt_ns;
}

/*
 * Read and handle up to @max requests, or until they took @budget_ns of
 * the loop's time (0: no limit); the time goes on the client's debt.
 */
/* Handle up to @max of @c's requests (within @budget_ns, 0: any time). Return: 0 when none was queued. */
static int client_readable(struct client *c, int max, uint64_t budget_ns)
{
	bool was = c->reading;
	uint64_t start = fl__now_ns(), now;
	int n;

	c->reading = true;
	n = client_read_some(c, max, start, budget_ns);
	c->reading = was;
	now = fl__now_ns();
	client_debt(c, now);
	c->debt_ns += now - start;
	return n;
}

static int client_read_some(struct client *c, int max, uint64_t start, uint64_t budget_ns)
{
	int i = 0;

	/* A parked DUMP stops the reading: its reply comes first. */
	for (; i < max && c->fd >= 0 && !c->parked; i++) {
		unsigned char buf[FL_PROTO_MAX_REQUEST];
		struct fl_proto_request q;
		int fds[FL_PROTO_MAX_FDS], nfds, r;
		/* Room for exactly the fds a request may carry: the kernel closes the rest. */
		struct fl__proto_rx rx = { .fds = fds,
					   .max_fds = FL_PROTO_MAX_FDS,
					   .room = FL_PROTO_MAX_FDS };
		bool bad_cmsg, alive, stuck = false;
		unsigned int trunc;
		ssize_t n;

		r = fl__proto_recv(c->fd, buf, sizeof(buf), NULL, 0, MSG_DONTWAIT, &rx);
		if (r < 0) {
			if (r != -EAGAIN)
				disconnect(c, r == -ECONNRESET ? NULL : strerror(-r));
			return i;
		}
		n = (ssize_t)rx.len;
		nfds = (int)rx.nfds;
		bad_cmsg = rx.flags & (FL__PROTO_RX_FOREIGN | FL__PROTO_RX_EXTRA);
		trunc = rx.flags & (FL__PROTO_RX_TRUNC | FL__PROTO_RX_CTRUNC);
		if (n == 0 && nfds == 0) {
			disconnect(c, NULL); /* EOF: the client closed or died */
			return i;
		}
		if (trunc == FL__PROTO_RX_CTRUNC && !bad_cmsg && nfds < FL_PROTO_MAX_FDS &&
		    shed_out_of_fds(c, buf, n, fds, nfds))
			continue;
		r = fl__proto_decode_request(buf, (size_t)n, (unsigned int)nfds, bad_cmsg || trunc,
					     &q);
		if (r < 0) {
			char why[96];

			snprintf(why, sizeof(why), "malformed %s request (%s)",
				 fl__proto_op_name(q.hdr.op), strerror(-r));
			for (int k = 0; k < nfds; k++)
				close_received(c, fds[k]);
			if (n >= (ssize_t)sizeof(struct fl_msg_hdr))
				reject(c, &q.hdr, r, why);
			else
				disconnect(c, why);
			return i + 1;
		}
		alive = dispatch(c, &q, fds);
		for (int k = 0; k < nfds; k++)
			if (fds[k] >= 0)
				stuck |= close_received(c, fds[k]);
		if (!alive || c->fd < 0)
			return i + 1;
		if (stuck) {
			/* Each request could add one more: stop reading them. */
			fds_refused(c, "more of its fds stuck closing");
			disconnect(c, "its fds do not close (docs/daemon.md)");
			return i + 1;
		}
		if (budget_ns && fl__now_ns() - start >= budget_ns) {
			served_in_part = true;
			return i + 1;
		}
	}
	served_in_part = true;
	return i;
}

/* Answer a connection we will not serve with @status and hang up. */
static void turn_away(int fd, int status)
{
	struct fl_msg_hdr h = { FL_OP_HELLO | FL_OP_REPLY, 0, 0, sizeof(struct fl_msg_reply) };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_reply r;
	} no = { h, { status, 0 } };
	char hello[64];

	(void)!send(fd, &no, sizeof(no), MSG_DONTWAIT | MSG_NOSIGNAL);
	/*
	 * Closing with its HELLO unread would reset the connection, and the
	 * peer would see ECONNRESET instead of our answer: read it first.
	 */
	while (recv(fd, hello, sizeof(hello), MSG_DONTWAIT) > 0)
		;
	close(fd);
}

/*
 * An fd kept in reserve, so that a daemon out of fds can still accept a
 * client to tell it so (-EMFILE) instead of leaving it waiting in the
 * backlog, and the listening socket does not report readable forever.
 */
static int spare_fd = -1;

/*
 * Without a spare (or when even it cannot be used: the limit was lowered
 * under us), stop listening for a moment rather than spin on a listening
 * socket that stays readable; the clients wait in the backlog.
 */
#define LISTEN_PAUSE_MS 100
static uint64_t listen_paused_until;

static bool accept_out_of_fds(int lfd)
{
	int fd = -1;

	if (spare_fd >= 0) {
		int err;

		close(spare_fd);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		err = errno;
		if (fd >= 0)
			turn_away(fd, -EMFILE);
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return true;
		if (err == EAGAIN)
			return false; /* nobody else is waiting */
	}
	if (!listen_paused_until) {
		struct epoll_event ev = { .events = 0, .data.ptr = NULL };

		fld_log("cannot accept clients: out of fds; pausing");
		ev.data.ptr = (void *)&listen_paused_until; /* never reported with no events */
		epoll_ctl(epfd, EPOLL_CTL_MOD, lfd, &ev);
		listen_paused_until = fl__now_ns() + LISTEN_PAUSE_MS * 1000000ull;
	}
	return false;
}

/* Listen again once the pause is over; returns the epoll timeout it needs. */
static int resume_listening(int *lfd, int timeout)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = lfd };
	uint64_t now = fl__now_ns();
	int left;

	if (!listen_paused_until)
		return timeout;
	if (now >= listen_paused_until) {
		listen_paused_until = 0;
		epoll_ctl(epfd, EPOLL_CTL_MOD, *lfd, &ev);
		return timeout;
	}
	left = (int)((listen_paused_until - now + 999999) / 1000000);
	return timeout < 0 || left < timeout ? left : timeout;
}

static void accept_clients(int lfd)
{
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct client *c;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if ((errno != EMFILE && errno != ENFILE) || !accept_out_of_fds(lfd))
				return;
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			close(fd);
			continue;
		}
		if (!uid_allowed(cred.uid)) {
			fld_log("refusing pid %d: uid %u is not allowed (see --allow-uid)",
				(int)cred.pid, (unsigned int)cred.uid);
			turn_away(fd, -EACCES);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			turn_away(fd, -ENOMEM);
			continue;
		}
		c->fd = fd;
		c->kick = c->kick_r = -1;
		c->uid = cred.uid;
		c->pid = cred.pid;
		c->debt_at_ns = fl__now_ns();
		atomic_init(&c->refs, 1);
		c->proc = peer_get(false, (unsigned int)cred.pid);
		c->user = peer_get(true, (unsigned int)cred.uid);
		if (!c->proc || !c->user || fds_charge(c, 1, "a connection") < 0) {
			turn_away(fd, c->proc && c->user ? -EMFILE : -ENOMEM);
			client_unref(c);
			continue;
		}
		ev.data.ptr = c;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			fds_sub(c, 1);
			client_unref(c);
			continue;
		}
		c->next = clients;
		if (clients)
			clients->prev = c;
		clients = c;
		nclients++;
	}
}

/*
 * Give memory back after busy times: a daemon that held 100000 fences kept
 * their ~48 MiB of freed heap, and one that made and freed fences fast kept
 * ~35 MiB, because the allocator only trims the top of the heap and freed
 * fences are spread all over it. Trimming walks the heap, so at most once a
 * second, and only after many fences went.
 */
#define TRIM_AFTER_RELEASES 8192
#define TRIM_INTERVAL_NS    1000000000ull

static uint64_t last_trim_ns;

/* Whether a trim is due: the loop's poll timeout then wakes it for one. */
static bool trim_pending(void)
{
	return atomic_load(&released) >= TRIM_AFTER_RELEASES;
}

static void trim_if_due(void)
{
	uint64_t now;

	if (!trim_pending())
		return;
	now = fl__now_ns();
	if (now - last_trim_ns < TRIM_INTERVAL_NS)
		return;
	atomic_store(&released, 0);
	last_trim_ns = now;
	malloc_trim(0);
}

/* One pass over the clients epoll reported: see BATCH for the rules. */
static void serve_ready(struct client **ready, int n)
{
	uint64_t now = fl__now_ns(), round_start = now, debt[LOOP_EVENTS];

	/* Least debt first; ties keep epoll's order, which rotates. */
	for (int i = 0; i < n; i++) {
		struct client *c = ready[i];
		uint64_t d = client_debt(c, now);
		int k = i;

		for (; k > 0 && debt[k - 1] > d; k--) {
			ready[k] = ready[k - 1];
			debt[k] = debt[k - 1];
		}
		ready[k] = c;
		debt[k] = d;
	}
	for (int i = 0; i < n; i++) {
		/* The rest are reported again at once, with whoever became ready meanwhile. */
		if (i && fl__now_ns() - round_start >= ROUND_NS) {
			served_in_part = true;
			break;
		}
		if (ready[i]->fd >= 0 && !ready[i]->parked)
			client_readable(ready[i], BATCH, TURN_NS);
	}
}

int fld_serve(int lfd, const struct server_config *config)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	uint64_t idle_since = fl__now_ns();
	sigset_t sigs;
	int sfd, wfd, rfd;

	cfg = *config;
	{
		struct rlimit rl;
		rlim_t half = 512;

		/* Half of ours by default: one process, or one other user, cannot take them all. */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			half = FL_MAX(rl.rlim_cur / 2, half);
		half = FL_MIN(half, (rlim_t)INT32_MAX);
		max_fds_process = cfg.max_fds_process ? cfg.max_fds_process : (unsigned int)half;
		max_fds_uid = cfg.max_fds_uid ? cfg.max_fds_uid : (unsigned int)half;
		if (cfg.foreground)
			fld_log("daemon fds per process at most %u, per other uid %u",
				max_fds_process, max_fds_uid);
	}
	fld_trace_init();
	if (fld_heapsvc_init(cfg.carveout_bytes, cfg.heap_limit) < 0)
		return -ENOMEM;
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return -errno;
	ev.data.ptr = &lfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);
	ev.data.ptr = &sfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
	/*
	 * The core's fd watcher runs here, between requests: one thread, so
	 * no lock ping-pong or wake-ups of a second one under load.
	 */
	wfd = fl__watcher_host_fd();
	if (wfd < 0)
		return wfd;
	fl__fence_pipe_set_hooks(owner_end_closed, given_done);
	ev.data.ptr = &wfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, wfd, &ev);
	/* Clients' fds whose close() may wait are closed by a thread, which reports here. */
	rfd = fld_received_init();
	if (rfd < 0)
		return rfd;
	ev.data.ptr = &rfd;
	epoll_ctl(epfd, EPOLL_CTL_ADD, rfd, &ev);
	/* Without it, clients read statuses from the pipes and ask us: slower, not wrong. */
	status_page_fd = fl__status_page_create();
	if (status_page_fd < 0)
		fld_log("no status page: %s", strerror(-status_page_fd));

	for (;;) {
		struct epoll_event evs[LOOP_EVENTS];
		/* While nobody is connected, look at the idle clock now and then. */
		int timeout = resume_listening(&lfd, nclients || !cfg.idle_ms ? -1 : 100);

		if (trim_pending()) {
			/* Wake for the trim as soon as it is allowed, not a full interval later. */
			uint64_t since = fl__now_ns() - last_trim_ns;
			int due = since >= TRIM_INTERVAL_NS
					  ? 0
					  : (int)((TRIM_INTERVAL_NS - since + 999999) / 1000000);

			if (timeout < 0 || timeout > due)
				timeout = due;
		}
		/* The deadlock detector runs while waits are in progress. */
		bool want_walk;
		int check = fld_waits_check(&want_walk);

		if (want_walk && !detector_walk)
			detector_walk = walks + 1;
		if (check >= 0 && (timeout < 0 || timeout > check))
			timeout = check;
		/* Parked DUMPs' walk and answers go on between the clients' turns. */
		check = dump_step();
		if (check >= 0 && (timeout < 0 || timeout > check))
			timeout = check;
		/* Lines the rate limit held back are counted in the log once it allows. */
		check = fld_log_flush();
		if (check >= 0 && (timeout < 0 || timeout > check))
			timeout = check;
		/* Completed pipe fences are swept now and then (fl__watcher_timeout_ms()). */
		check = fl__watcher_timeout_ms();
		if (check >= 0 && (timeout < 0 || timeout > check))
			timeout = check;
		/*
		 * The steps above may have let the last client go (a parked
		 * DUMP's reply could not be sent): look at the idle clock again
		 * soon, or nothing would wake us to end the idle period.
		 */
		if (!nclients && cfg.idle_ms && (timeout < 0 || timeout > 100))
			timeout = 100;
		int n = epoll_wait(epfd, evs, FL_ARRAY_SIZE(evs), timeout);

		if (n < 0 && errno != EINTR)
			return -errno;
		/* Busy until now: the idle period starts when the last client leaves. */
		if (nclients || fl__sink_count())
			idle_since = fl__now_ns();
		bool watch = false, reap = false;
		struct client *ready[FL_ARRAY_SIZE(evs)];
		int nready = 0;

		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &wfd) {
				watch = true;
			} else if (evs[i].data.ptr == &rfd) {
				reap = true;
			} else if (evs[i].data.ptr == &lfd) {
				accept_clients(lfd);
			} else if (evs[i].data.ptr == &sfd) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
					fld_log("signal %u: exiting", si.ssi_signo);
					goto out;
				}
			} else {
				ready[nready++] = evs[i].data.ptr;
			}
		}
		served_in_part = false;
		serve_ready(ready, nready);
		/*
		 * After the events at hand: a release can free a client they
		 * name. And after the requests clients sent before they closed
		 * an fd: a client whose turn ended with requests left (a fence
		 * of a timeline whose fd it closed next) gets its next turns
		 * first, a few passes at most, so that nobody can hold off the
		 * closes for long. The watcher's fd stays ready meanwhile.
		 */
		if ((watch || fl__watcher_timeout_ms() == 0) &&
		    (!served_in_part || ++dispatch_put_off > DISPATCH_PUT_OFF_MAX)) {
			fl__watcher_dispatch();
			dispatch_put_off = 0;
		}
		/* Owners' ends closed meanwhile; nothing woke us for them. */
		fl__fence_pipe_ends_check();
		if (reap)
			fld_received_reap();
		answer_deferred_pings();
		bury_zombies();
		trim_if_due();
		if (nclients || fl__sink_count()) {
			idle_since = fl__now_ns();
		} else if (cfg.idle_ms &&
			   fl__now_ns() - idle_since >= (uint64_t)cfg.idle_ms * 1000000ull) {
			if (cfg.foreground)
				fld_log("idle for %u ms: exiting", cfg.idle_ms);
			break;
		}
	}
out:
	fld_log_flush();
	while (parked) {
		struct parked_dump *d = parked;

		parked = d->next;
		d->c->parked--;
		client_unref(d->c);
		free(d);
	}
	parked_tail = &parked;
	fld_scan_free(walk);
	walk = NULL;
	answer_deferred_pings();
	while (clients)
		disconnect(clients, NULL);
	bury_zombies();
	fld_heapsvc_fini();
	for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
		while (shared[b])
			shared_free(&shared[b]);
	fld_waits_shutdown();
	fld_trace_shutdown();
	close(sfd);
	close(epfd);
	if (spare_fd >= 0)
		close(spare_fd);
	return 0;
}

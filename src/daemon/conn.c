/* SPDX-License-Identifier: MIT */
/*
 * fencelined's glue to the server framework (src/server): whom it serves
 * (--allow-uid, the peers' quotas) and how it turns a peer away, reading
 * and decoding each request (src/proto) and handing it to the service that
 * owns its op (src/server/service.h), the replies, and the pass of the loop
 * (fld_serve()) that schedules clients by cost. Accepting, the connections'
 * sockets, sending without blocking and the end of a connection are the
 * framework's (acceptor.h, conn.h).
 *
 * The loop is one thread, and so is everything that changes a client's
 * counters: the core's fd watcher has no thread here (the loop runs it,
 * fl__watcher_host_fd(), so its release callbacks come from the loop), and
 * the closer thread of received.c only closes, reporting back through
 * fld_received_reap(). The counters' atomics date from when the watcher
 * was a thread of its own; nothing relies on them now.
 */
#include <linux/sockios.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acceptor.h"
#include "daemon.h"
#include "heapsvc.h"
#include "host.h"
#include "loop.h"
#include "start.h"
#include "statuspage.h"
#include "transport.h"
#include "util.h"

struct server_config fld_cfg;
static struct fl_loop *loop;
struct fl_server *fld_server;

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
/*
 * fl__fence_pipe_ends_checks() when this turn began: a request that
 * looked spares the loop its look.
 */
static unsigned int ends_checks;
static unsigned int dispatch_put_off;

/* Log why @c gets no more fds (its process's quota, or its uid's). Always -EMFILE. */
static int fds_refused(struct client *c, const char *what)
{
	if (!fld_room_of(c->proc, fld_max_fds_process))
		fld_log_quota(c, what, Q_FDS_PROCESS, fld_max_fds_process,
			      atomic_load(&c->proc->fds));
	else
		fld_log_quota(c, what, Q_FDS_UID, fld_max_fds_uid, atomic_load(&c->user->fds));
	return -EMFILE;
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
	fld_fds_add(c, 1);
	atomic_fetch_add(&c->refs, 1);
	return fld_fds_room_now(c) == 0;
}

static void disconnect(struct client *c, const char *why)
{
	fl__server_conn_disconnect(&c->conn, why);
}

/* The framework ends a connection (fl__server_conn_disconnect()). */
static void host_disconnecting(struct fl_server_conn *conn, const char *why)
{
	struct client *c = client_of(conn);

	if (why)
		fld_log("client pid %d uid %u: %s; disconnecting", (int)c->conn.pid,
			(unsigned int)c->conn.uid, why);
	/* The connection was ours on its behalf. */
	fld_fds_sub(c, 1);
}

/* After the pass that disconnected it: its live objects may still hold it. */
static void host_release(struct fl_server_conn *conn)
{
	fld_client_unref(client_of(conn));
}

/* Send one reply packet. false: the client is gone or not reading; it was dropped. */
static bool reply_send_fds(struct client *c, const struct fl_msg_hdr *req, const void *body,
			   size_t len, const int *fds, unsigned int nfds)
{
	return fl__server_reply(&c->conn, req, body, len, fds, nfds);
}

bool fld_reply_send(struct client *c, const struct fl_msg_hdr *req, const void *body, size_t len,
		    int fd)
{
	return reply_send_fds(c, req, body, len, &fd, fd >= 0 ? 1 : 0);
}

bool fld_reply_status(struct client *c, const struct fl_msg_hdr *req, int status)
{
	struct fl_msg_reply r = { status, 0 };

	return fld_reply_send(c, req, &r, sizeof(r), -1);
}

/* The host's calls for the services (server.h). */
bool fld_conn_reply(struct fl_server_conn *conn, const struct fl_msg_hdr *req, const void *body,
		    size_t len, int fd)
{
	return fld_reply_send(client_of(conn), req, body, len, fd);
}

bool fld_conn_reply_status(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status)
{
	return fld_reply_status(client_of(conn), req, status);
}

int fld_conn_fds_charge(struct fl_server_conn *conn, unsigned int n, const char *what)
{
	return fld_fds_charge(client_of(conn), n, what);
}

void fld_conn_fds_uncharge(struct fl_server_conn *conn, unsigned int n)
{
	fld_fds_sub(client_of(conn), n);
}

/* Answer a protocol violation, then drop the client. Always false. */
static bool reject(struct client *c, const struct fl_msg_hdr *req, int status, const char *why)
{
	if (fld_reply_status(c, req, status))
		disconnect(c, why);
	return false;
}

static bool host_reject(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status,
			const char *why)
{
	return reject(client_of(conn), req, status, why);
}

static void client_ready(struct fl_server_conn *conn);

static const struct fl_server_host_ops host_ops = {
	.reject = host_reject,
	.readable = client_ready,
	.disconnecting = host_disconnecting,
	.release = host_release,
};

/* Act on one decoded request. false: the client was disconnected. */
static bool dispatch(struct client *c, const struct fl_proto_request *q, int *fds)
{
	if (!c->greeted && q->hdr.op != FL_OP_HELLO)
		return reject(c, &q->hdr, -EPROTO, "first request is not HELLO");
	return fl__server_dispatch(fld_server, &c->conn, q, fds);
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
	fld_reply_status(c, &h, -EMFILE);
	return true;
}

static int client_read_some(struct client *c, int max, uint64_t start, uint64_t budget_ns,
			    bool *empty);
static void queue_read(struct client *c, int n, bool empty);

/* @c's debt now: halved for every half-life gone by since it was last updated. */
uint64_t fld_client_debt(struct client *c, uint64_t now)
{
	uint64_t halves = (now - c->debt_at_ns) / DEBT_HALF_LIFE_NS;

	c->debt_ns = halves >= 64 ? 0 : c->debt_ns >> halves;
	c->debt_at_ns += halves * DEBT_HALF_LIFE_NS;
	return c->debt_ns;
}

/*
 * Read and handle up to @max of @c's requests, or until they took
 * @budget_ns of the loop's time (0: no limit); the time goes on the
 * client's debt. Return: how many were read, 0 when none was queued.
 */
int fld_client_readable(struct client *c, int max, uint64_t budget_ns)
{
	bool was = c->reading, empty = false;
	uint64_t start = fl__now_ns(), now;
	struct fld_kickwait_step st;
	int n;

	c->reading = true;
	fld_kickwait_save(&st);
	n = client_read_some(c, max, start, budget_ns, &empty);
	fld_kickwait_restore(&st);
	c->reading = was;
	/* Read further up the stack: that read ends later, and looks then. */
	if (was)
		c->reads += (uint64_t)n;
	else
		queue_read(c, n, empty);
	now = fl__now_ns();
	fld_client_debt(c, now);
	c->debt_ns += now - start;
	return n;
}

struct fld_queue_mark fld_queue_mark(const struct client *c)
{
	return (struct fld_queue_mark){ c->empties, c->reads };
}

bool fld_queue_passed(const struct client *c, struct fld_queue_mark m, uint64_t max)
{
	return c->conn.fd < 0 || c->empties != m.empties || c->reads - m.reads >= max;
}

/*
 * After @n of @c's requests were read, not further up the stack (@empty:
 * the read stopped at an empty queue): the waits for its queue may be over.
 */
static void queue_read(struct client *c, int n, bool empty)
{
	c->reads += (uint64_t)n;
	if (!c->queue_waits)
		return;
	/*
	 * Looked at whatever ended the read (a turn's end, a parked DUMP, a
	 * request kept aside): a queue emptied by it may never be reported
	 * readable again.
	 */
	if (empty || fld_client_queue_empty(c))
		c->empties++;
	fld_kickwait_read(c);
	fld_defer_read(c);
	fld_trace_stop_read(c);
}

bool fld_client_queue_empty(const struct client *c)
{
	int n = 0;

	/* A request kept aside (defer.c) is still to be handled. */
	if (c->deferred && c->conn.fd >= 0)
		return false;
	/* SIOCINQ of a SOCK_SEQPACKET socket: the length of the next message. */
	return c->conn.fd < 0 || ioctl(c->conn.fd, SIOCINQ, &n) < 0 || n == 0;
}

/*
 * Run one decoded request of @c, then close the fds its handler left
 * (setting them to -1), unless it was kept aside to run again (defer.c).
 * Return: false when @c was disconnected.
 */
static bool handle(struct client *c, const struct fl_proto_request *q, int *fds, int nfds)
{
	struct fld_rx rxs;
	bool alive, stuck = false;

	fld_rx_begin(&rxs, fds, nfds);
	alive = dispatch(c, q, fds);
	if (alive && c->conn.fd >= 0)
		(void)fld_defer_take(c, q, fds, nfds);
	fld_defer_drop_asked();
	for (int k = 0; k < nfds; k++)
		if (fds[k] >= 0) {
			stuck |= close_received(c, fds[k]);
			fds[k] = -1;
		}
	fld_rx_end(&rxs);
	if (!alive || c->conn.fd < 0)
		return false;
	if (stuck) {
		/* Each request could add one more: stop reading them. */
		fds_refused(c, "more of its fds stuck closing");
		disconnect(c, "its fds do not close (docs/daemon.md)");
		return false;
	}
	return true;
}

void fld_close_received(struct client *c, int fd)
{
	(void)close_received(c, fd);
}

void fld_client_rerun(struct client *c, const struct fl_proto_request *q, int *fds, int nfds)
{
	bool was = c->reading;
	uint64_t start = fl__now_ns(), now;
	struct fld_kickwait_step st;

	c->reading = true;
	fld_kickwait_save(&st);
	(void)handle(c, q, fds, nfds);
	fld_kickwait_restore(&st);
	c->reading = was;
	/* A read of @c's requests, for whoever waits for its queue. */
	if (!was)
		queue_read(c, 1, false);
	now = fl__now_ns();
	fld_client_debt(c, now);
	c->debt_ns += now - start;
}

/* *@empty: the read stopped because nothing more was queued. */
static int client_read_some(struct client *c, int max, uint64_t start, uint64_t budget_ns,
			    bool *empty)
{
	int i = 0;

	/* A parked DUMP or a request kept aside stops the reading: its reply comes first. */
	for (; i < max && c->conn.fd >= 0 && !c->parked && !c->deferred; i++) {
		unsigned char buf[FL_PROTO_MAX_REQUEST];
		struct fl_proto_request q;
		int fds[FL_PROTO_MAX_FDS], nfds, r;
		struct fl_server_msg rx;
		bool bad_cmsg;
		unsigned int trunc;
		ssize_t n;

		/* Room for exactly the fds a request may carry: the kernel closes the rest. */
		r = fl__server_conn_recv(&c->conn, buf, sizeof(buf), fds, FL_PROTO_MAX_FDS, &rx);
		if (r <= 0) {
			*empty = true;
			return i; /* none queued, or it went (end of file, an error) */
		}
		n = (ssize_t)rx.len;
		nfds = (int)rx.nfds;
		bad_cmsg = rx.flags & (FL__PROTO_RX_FOREIGN | FL__PROTO_RX_EXTRA);
		trunc = rx.flags & (FL__PROTO_RX_TRUNC | FL__PROTO_RX_CTRUNC);
		if (trunc == FL__PROTO_RX_CTRUNC && !bad_cmsg && nfds < FL_PROTO_MAX_FDS &&
		    shed_out_of_fds(c, buf, n, fds, nfds))
			continue;
		r = fl__proto_decode_request(buf, (size_t)n, (unsigned int)nfds, bad_cmsg || trunc,
					     &q);
		if (r < 0) {
			char why[96];

			snprintf(why, sizeof(why), "malformed %s request (%s)",
				 fl__proto_op_name(q.hdr.op), strerror(-r));
			/* Not malformed: another version's library (only HELLO gets this). */
			if (r == -EPROTONOSUPPORT) {
				uint32_t v;

				memcpy(&v, buf + sizeof(struct fl_msg_hdr), sizeof(v));
				snprintf(why, sizeof(why),
					 "HELLO of protocol version %u; this daemon speaks %d", v,
					 FL_PROTO_VERSION);
			}
			for (int k = 0; k < nfds; k++)
				close_received(c, fds[k]);
			if (n >= (ssize_t)sizeof(struct fl_msg_hdr))
				reject(c, &q.hdr, r, why);
			else
				disconnect(c, why);
			return i + 1;
		}
		if (!handle(c, &q, fds, nfds) || c->deferred)
			return i + 1;
		if (budget_ns && fl__now_ns() - start >= budget_ns) {
			served_in_part = true;
			return i + 1;
		}
	}
	served_in_part = true;
	return i;
}

/* The listening socket in the loop (NULL once stopping). */
static struct fl_acceptor *acceptor;

/* Our refusal of a connection: one HELLO reply with @status (fl__acceptor_turn_away()). */
static void refuse(int fd, int status, void *data)
{
	struct fl_msg_hdr h = { FL_OP_HELLO | FL_OP_REPLY, 0, 0, sizeof(struct fl_msg_reply) };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_reply r;
	} no = { h, { status, 0 } };

	(void)data;
	(void)!send(fd, &no, sizeof(no), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void accept_paused(void *data)
{
	(void)data;
	fld_log("cannot accept clients: out of fds; pausing");
}

/*
 * The clients the loop found readable in this pass, served after it in
 * the order of their debt (serve_ready()).
 */
static struct client *readable[FL_LOOP_MAX_EVENTS];
static int nreadable;

static void client_ready(struct fl_server_conn *conn)
{
	readable[nreadable++] = client_of(conn);
}

/* SIGTERM, SIGINT or SIGHUP came: the loop ends after this dispatch. */
static bool stopping;

/* A peer connected (acceptor.h): serve it, or turn it away. */
static void accepted(struct fl_acceptor *acc, int fd, pid_t pid, uid_t uid, void *data)
{
	struct client *c;

	(void)data;
	if (!fld_uid_allowed(uid)) {
		fld_log("refusing pid %d: uid %u is not allowed (see --allow-uid)", (int)pid,
			(unsigned int)uid);
		fl__acceptor_turn_away(acc, fd, -EACCES);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fl__acceptor_turn_away(acc, fd, -ENOMEM);
		return;
	}
	fl__server_conn_init(&c->conn, pid, uid);
	c->kick = c->kick_r = -1;
	c->debt_at_ns = fl__now_ns();
	atomic_init(&c->refs, 1);
	c->proc = fld_peer_get(false, (unsigned int)pid);
	c->user = fld_peer_get(true, (unsigned int)uid);
	if (!c->proc || !c->user || fld_fds_charge(c, 1, "a connection") < 0) {
		fl__acceptor_turn_away(acc, fd, c->proc && c->user ? -EMFILE : -ENOMEM);
		fld_client_unref(c);
		return;
	}
	if (fl__server_conn_start(fld_server, &c->conn, fd, pid, uid) < 0) {
		close(fd);
		fld_fds_sub(c, 1);
		fld_client_unref(c);
	}
}

static const struct fl_acceptor_ops acceptor_ops = {
	.accepted = accepted,
	.refuse = refuse,
	.paused = accept_paused,
};

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

/* Whether a trim is due: the loop's trim timer then wakes it for one. */
static bool trim_pending(void)
{
	return atomic_load(&fld_released) >= TRIM_AFTER_RELEASES;
}

static void trim_if_due(void)
{
	uint64_t now;

	if (!trim_pending())
		return;
	now = fl__now_ns();
	if (now - last_trim_ns < TRIM_INTERVAL_NS)
		return;
	atomic_store(&fld_released, 0);
	last_trim_ns = now;
	malloc_trim(0);
}

/*
 * Clients that are not read until a request of theirs is answered (a
 * parked DUMP or trace STOP, a request kept aside) leave the loop's set
 * meanwhile: what they send after it, or their hang-up, would keep their
 * socket ready, and every pass of the loop would return at once (a client
 * that sent a PING behind each DUMP had the daemon spin through each walk
 * of /proc). Their queue and hang-up wait in the socket; they are back in
 * the set before the next dispatch after their answer.
 */
static struct client *paused;
uint64_t fld_loop_passes;

static void client_pause(struct client *c)
{
	if (c->paused || fl__server_conn_pause(&c->conn, true) < 0)
		return;
	c->paused = true;
	atomic_fetch_add(&c->refs, 1);
	c->paused_next = paused;
	paused = c;
}

/* Before the loop waits: those answered meanwhile are read again (@all: every one, at exit). */
static void clients_resume(bool all)
{
	for (struct client **p = &paused; *p;) {
		struct client *c = *p;
		int r = 0;

		if (!all && c->conn.fd >= 0 && (c->parked || c->deferred)) {
			p = &c->paused_next;
			continue;
		}
		*p = c->paused_next;
		c->paused = false;
		if (c->conn.fd >= 0)
			r = fl__server_conn_pause(&c->conn, false);
		/* Left out of the set it would never be read again. */
		if (r < 0)
			disconnect(c, "cannot be watched any more (out of memory)");
		fld_client_unref(c);
	}
}

/* One pass over the clients epoll reported: see BATCH for the rules. */
static void serve_ready(struct client **ready, int n)
{
	uint64_t now = fl__now_ns(), round_start = now, debt[FL_LOOP_MAX_EVENTS];

	/* Least debt first; ties keep epoll's order, which rotates. */
	for (int i = 0; i < n; i++) {
		struct client *c = ready[i];
		uint64_t d = fld_client_debt(c, now);
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
		if (ready[i]->conn.fd < 0)
			continue;
		if (ready[i]->parked || ready[i]->deferred)
			client_pause(ready[i]);
		else
			fld_client_readable(ready[i], BATCH, TURN_NS);
	}
}

/*
 * The steps each pass takes besides the clients and the services' own (the
 * log's count of suppressed lines, the watcher's sweeps, a trim, the idle
 * clock) run at every pass and say when they want the next one: each has a
 * timer that only wakes the loop for it.
 */
static struct fl_loop_source *log_timer, *sweep_timer, *trim_timer, *idle_timer;

static void step_due(void *data)
{
	(void)data;
}

/* The flags of the fds whose work waits for the end of the pass. */
static bool watch, reap;

static void set_flag(int fd, uint32_t events, void *data)
{
	(void)fd;
	(void)events;
	*(bool *)data = true;
}

static void on_signal(int sfd, uint32_t events, void *data)
{
	struct signalfd_siginfo si;

	(void)events;
	(void)data;
	if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		fld_log("signal %u: exiting", si.ssi_signo);
		stopping = true;
		/* A client accepted now would only be hung up on. */
		fl__acceptor_destroy(acceptor);
		acceptor = NULL;
	}
}

/* The loop and the sources of fld_serve(). Return: 0, or -errno. */
static int loop_setup(int lfd, int sfd, int wfd, int rfd)
{
	loop = fl__loop_create();
	if (!loop)
		return -errno;
	acceptor = fl__acceptor_create(loop, lfd, &acceptor_ops, NULL);
	if (!acceptor || !fl__loop_add_fd(loop, sfd, EPOLLIN, on_signal, NULL) ||
	    !fl__loop_add_fd(loop, wfd, EPOLLIN, set_flag, &watch) ||
	    !fl__loop_add_fd(loop, rfd, EPOLLIN, set_flag, &reap))
		return -errno;
	log_timer = fl__loop_add_timer(loop, step_due, NULL);
	sweep_timer = fl__loop_add_timer(loop, step_due, NULL);
	trim_timer = fl__loop_add_timer(loop, step_due, NULL);
	idle_timer = fl__loop_add_timer(loop, step_due, NULL);
	if (!log_timer || !sweep_timer || !trim_timer || !idle_timer)
		return -ENOMEM;
	/* The services, in the order a connection's end reaches them. */
	fld_server = fl__server_create(loop, &host_ops);
	if (!fld_server)
		return -ENOMEM;
	if (fl__server_add_service(fld_server, &fld_core_service, NULL) < 0 ||
	    fl__server_add_service(fld_server, &fld_sync_service, NULL) < 0 ||
	    fl__server_add_service(fld_server, &fld_observe_service, NULL) < 0 ||
	    fl__server_add_service(fld_server, &fld_heap_service, NULL) < 0)
		return -ENOMEM;
	return 0;
}

int fld_serve(int lfd, const struct server_config *config)
{
	uint64_t idle_since = fl__now_ns();
	int sfd, wfd, rfd, r;

	fld_cfg = *config;
	{
		struct rlimit rl;
		rlim_t half = 512;

		/* Half of ours by default: one process, or one other user, cannot take them all. */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			half = FL_MAX(rl.rlim_cur / 2, half);
		half = FL_MIN(half, (rlim_t)INT32_MAX);
		fld_max_fds_process =
			fld_cfg.max_fds_process ? fld_cfg.max_fds_process : (unsigned int)half;
		fld_max_fds_uid = fld_cfg.max_fds_uid ? fld_cfg.max_fds_uid : (unsigned int)half;
		if (fld_cfg.foreground)
			fld_log("daemon fds per process at most %u, per other uid %u",
				fld_max_fds_process, fld_max_fds_uid);
	}
	fld_trace_init();
	if (fld_heapsvc_init(fld_cfg.carveout_bytes, fld_cfg.heap_limit) < 0)
		return -ENOMEM;
	sfd = fl__server_stop_signals();
	if (sfd < 0)
		return sfd;
	/*
	 * The core's fd watcher runs here, between requests: one thread, so
	 * no lock ping-pong or wake-ups of a second one under load.
	 */
	wfd = fl__watcher_host_fd();
	if (wfd < 0)
		return wfd;
	fl__fence_pipe_set_hooks(fld_owner_end_closed, fld_given_done);
	/* A kept fence another process's step reaches waits for its owner's close (fl__pt_gate_close()). */
	fl__pt_gate_set_hook(fld_gate_reached);
	/* Clients' fds whose close() may wait are closed by a thread, which reports here. */
	rfd = fld_received_init();
	if (rfd < 0)
		return rfd;
	r = loop_setup(lfd, sfd, wfd, rfd);
	if (r < 0)
		return r;
	/* Without it, clients read statuses from the pipes and ask us: slower, not wrong. */
	fld_status_page_fd = fl__status_page_create();
	if (fld_status_page_fd < 0)
		fld_log("no status page: %s", strerror(-fld_status_page_fd));

	for (;;) {
		/* While nobody is connected, look at the idle clock now and then. */
		fl__loop_timer_arm_ms(idle_timer,
				      fl__server_conn_count(fld_server) || !fld_cfg.idle_ms ? -1
											    : 100);
		/* Wake for the trim as soon as it is allowed, not a full interval later. */
		if (trim_pending())
			fl__loop_timer_arm(trim_timer, last_trim_ns + TRIM_INTERVAL_NS, 0);
		else
			fl__loop_timer_arm(trim_timer, 0, 0);
		/*
		 * The services' own steps: the deadlock detector while waits
		 * are in progress, the parked DUMPs' walk and answers.
		 */
		fl__server_prepare(fld_server);
		/* Lines the rate limit held back are counted in the log once it allows. */
		fl__loop_timer_arm_ms(log_timer, fld_log_flush());
		/* Completed pipe fences are swept now and then (fl__watcher_timeout_ms()). */
		fl__loop_timer_arm_ms(sweep_timer, fl__watcher_timeout_ms());
		/*
		 * The steps above may have let the last client go (a parked
		 * DUMP's reply could not be sent): look at the idle clock again
		 * soon, or nothing would wake us to end the idle period.
		 */
		if (!fl__server_conn_count(fld_server) && fld_cfg.idle_ms &&
		    !fl__loop_timer_deadline(idle_timer))
			fl__loop_timer_arm_ms(idle_timer, 100);
		watch = reap = false;
		nreadable = 0;
		clients_resume(false);
		/* A request to run again (defer.c) does not wait for the next event. */
		r = fl__loop_dispatch(loop, fld_defer_any_ready() ? 0 : -1);
		fld_loop_passes++;
		if (r < 0 && r != -EINTR)
			return r;
		if (stopping)
			goto out;
		/* Busy until now: the idle period starts when the last client leaves. */
		if (fl__server_conn_count(fld_server) || fl__sink_count())
			idle_since = fl__now_ns();
		served_in_part = false;
		ends_checks = fl__fence_pipe_ends_checks();
		serve_ready(readable, nreadable);
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
		/*
		 * Owners' ends closed meanwhile; nothing woke us for them.
		 * Unless a request looked already (a catch-up with an owner's
		 * counter does): the exact checks are those before answering,
		 * this one only notices ends sooner than the next request.
		 */
		if (fl__fence_pipe_ends_checks() == ends_checks)
			fl__fence_pipe_ends_check();
		if (reap)
			fld_received_reap();
		fld_answer_deferred_pings();
		fld_defer_run();
		trim_if_due();
		if (fl__server_conn_count(fld_server) || fl__sink_count()) {
			idle_since = fl__now_ns();
		} else if (fld_cfg.idle_ms &&
			   fl__now_ns() - idle_since >= (uint64_t)fld_cfg.idle_ms * 1000000ull) {
			if (fld_cfg.foreground)
				fld_log("idle for %u ms: exiting", fld_cfg.idle_ms);
			break;
		}
	}
out:
	fld_log_flush();
	fld_observe_stop();
	clients_resume(true);
	while (fl__server_conn_count(fld_server))
		disconnect(client_of(fl__server_conn_next(fld_server, NULL)), NULL);
	fl__server_release_gone(fld_server);
	fld_heapsvc_fini();
	fld_shared_free_all();
	fld_waits_shutdown();
	fld_trace_shutdown();
	fl__acceptor_destroy(acceptor);
	acceptor = NULL;
	fl__server_destroy(fld_server);
	fld_server = NULL;
	fl__loop_destroy(loop);
	loop = NULL;
	close(sfd);
	return 0;
}

/* For the other files: the same, by a name of the daemon's. */
bool fld_reply_send_fds(struct client *c, const struct fl_msg_hdr *req, const void *body,
			size_t len, const int *fds, unsigned int nfds)
{
	return reply_send_fds(c, req, body, len, fds, nfds);
}

int fld_fds_refused(struct client *c, const char *what)
{
	return fds_refused(c, what);
}

bool fld_reject(struct client *c, const struct fl_msg_hdr *req, int status, const char *why)
{
	return reject(c, req, status, why);
}

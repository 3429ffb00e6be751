/* SPDX-License-Identifier: MIT */
/*
 * Requests of any number of threads pipelined over one SOCK_SEQPACKET
 * connection to a service (rpc.h), for both of the library's clients.
 *
 * Why pipelined: a thread waiting for a slow answer (a DUMP, a post the
 * display service takes long to check, a service that is busy or stopped)
 * must not hold up every other thread's request. The lock guards the
 * connection's state and is held to send a request, never across the wait
 * for its answer. A service answers a connection's requests mostly in
 * order, but not always (fencelined answers a PING with
 * FL_MSG_F_AFTER_CLOSES after the requests read with it), so answers go by
 * the sequence number each request carries and its reply echoes: a thread
 * that waits registers a struct fl__rpc_waiter, and whichever waiting
 * thread is reading (one at a time, the lock released while it blocks in
 * recvmsg()) hands each reply, with its fds, to the waiter of its number,
 * or to the owner (ops->unclaimed: fencelined's pool fills sent ahead).
 * The others sleep on the condition. A connection that goes (the service
 * died, a disconnect, a reply out of step) fails every waiter at once.
 * After fork() the child must not use the parent's connection (their
 * requests and replies would interleave), so it closes its copy and makes
 * its own on first use.
 *
 * The connection's fd has an identity (service.h): the program may have
 * closed our number and opened its own there, so it is checked once per
 * call before anything is sent (client.c's top comment says why that
 * check is sound).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc.h"
#include "transport.h"
#include "util.h"

static void close_fds(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

int fl__rpc_check(const void *buf, int n, uint32_t op, uint32_t seq)
{
	struct fl_msg_hdr h;

	if (n < (int)(sizeof(h) + sizeof(struct fl_msg_reply)))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.op != (op | FL_OP_REPLY) || h.seq != seq || h.len != n - sizeof(h))
		return -EPROTO;
	return 0;
}

int32_t fl__rpc_status(const void *reply)
{
	struct fl_msg_reply r;

	memcpy(&r, (const char *)reply + sizeof(struct fl_msg_hdr), sizeof(r));
	return r.status;
}

void fl__rpc_fail_waiters_locked(struct fl__rpc *rpc, int err)
{
	for (struct fl__rpc_waiter *w = rpc->waiters; w; w = w->next) {
		w->n = err;
		w->nfds = 0;
		w->done = true;
	}
	rpc->waiters = NULL;
	pthread_cond_broadcast(&rpc->cond);
}

void fl__rpc_drop_locked(struct fl__rpc *rpc)
{
	if (rpc->ops->dropping)
		rpc->ops->dropping();
	if (rpc->reading && rpc->fd >= 0 && rpc->read_fd == rpc->fd &&
	    fl__fdid_is(rpc->fd, &rpc->id)) {
		/*
		 * A thread is in recvmsg() on it: wake it (end of file) and
		 * leave the close to it, so that the number is not reused
		 * under it.
		 */
		shutdown(rpc->fd, SHUT_RDWR);
		rpc->orphan_fd = rpc->fd;
		rpc->orphan_id = rpc->id;
	} else {
		fl__fdid_close(rpc->fd, &rpc->id);
	}
	rpc->fd = -1;
	fl__rpc_fail_waiters_locked(rpc, -ECONNRESET);
	if (rpc->ops->dropped)
		rpc->ops->dropped();
}

void fl__rpc_lost_locked(struct fl__rpc *rpc, unsigned int generation)
{
	if (rpc->fd >= 0 && fl__rpc_generation(rpc) == generation)
		fl__rpc_drop_locked(rpc);
}

bool fl__rpc_live_locked(struct fl__rpc *rpc)
{
	if (rpc->fd < 0)
		return false;
	if (fl__fdid_is(rpc->fd, &rpc->id))
		return true;
	FL_LOG(rpc->ops->what, "fd %d is no longer our connection: connecting again", rpc->fd);
	rpc->fd = -1;
	fl__rpc_drop_locked(rpc);
	return false;
}

int fl__rpc_connect_locked(struct fl__rpc *rpc, int (*connect)(void *arg), void *arg)
{
	struct fdid id;
	int fd;

	while (rpc->connecting)
		pthread_cond_wait(&rpc->cond, &rpc->lock);
	/* A fork() drops the child's copy (fl__rpc_forked_locked()), so a live fd is ours. */
	if (fl__rpc_live_locked(rpc))
		return 0;
	rpc->connecting = true;
	pthread_mutex_unlock(&rpc->lock);
	fd = connect(arg);
	if (fd >= 0 && fl__fdid_get(fd, &id) < 0) {
		close(fd);
		fd = -EBADF;
	}
	pthread_mutex_lock(&rpc->lock);
	rpc->connecting = false;
	pthread_cond_broadcast(&rpc->cond);
	if (fd < 0)
		return fd;
	rpc->fd = fd;
	rpc->id = id;
	rpc->seq = 0;
	atomic_fetch_add(&rpc->generation, 1);
	return 1;
}

int fl__rpc_send_locked(struct fl__rpc *rpc, struct fl_msg_hdr *h, const void *body, size_t len,
			const int *fds, unsigned int nfds, int flags)
{
	ssize_t n;

	h->seq = ++rpc->seq;
	n = fl__proto_send(rpc->fd, h, sizeof(*h), body, len, fds, nfds, flags);
	if (n == -EPIPE || n == -ECONNRESET || n == -ENOTCONN)
		return -ECONNRESET;
	if (n == -EAGAIN || n == -EWOULDBLOCK)
		return -ETIMEDOUT;
	if (n < 0)
		return (int)n;
	return n == (ssize_t)(sizeof(*h) + len) ? 0 : -EPROTO;
}

/* Hand @w the reply of @n bytes at @buf and its @nfds @fds (taken). */
static void deliver_locked(struct fl__rpc_waiter *w, const unsigned char *buf, int n, int *fds,
			   unsigned int nfds, bool cut)
{
	if ((size_t)n > w->cap || nfds > w->max_fds) {
		close_fds(fds, nfds);
		w->n = -EPROTO;
	} else if (cut && !w->want_short) {
		close_fds(fds, nfds); /* read whole: the connection is fine */
		w->n = -EMFILE;
	} else {
		memcpy(w->buf, buf, (size_t)n);
		if (nfds)
			memcpy(w->fds, fds, nfds * sizeof(*fds));
		w->nfds = nfds;
		w->cut = cut;
		w->n = n;
	}
	w->done = true;
}

/* Give the reply read to whoever asked for it. */
static void route_locked(struct fl__rpc *rpc, int n, int *fds, unsigned int nfds, bool cut)
{
	const unsigned char *buf = rpc->rbuf;
	struct fl_msg_hdr h;

	if (n >= (int)sizeof(h)) {
		memcpy(&h, buf, sizeof(h));
		if (rpc->ops->seen)
			rpc->ops->seen(h.seq);
		for (struct fl__rpc_waiter **pw = &rpc->waiters; *pw; pw = &(*pw)->next) {
			struct fl__rpc_waiter *w = *pw;

			if (w->seq != h.seq)
				continue;
			*pw = w->next;
			deliver_locked(w, buf, n, fds, nfds, cut);
			return;
		}
		if (rpc->ops->unclaimed && rpc->ops->unclaimed(buf, n, fds, nfds, cut))
			return;
	}
	FL_LOG(rpc->ops->what, "an answer nobody asked for: connection dropped");
	close_fds(fds, nfds);
	fl__rpc_fail_waiters_locked(rpc, -EPROTO);
	fl__rpc_drop_locked(rpc);
}

/*
 * Connected, nobody reading: read one reply with the lock released, then
 * route it. A connection dropped meanwhile was shut down to wake us, and
 * is ours to close.
 */
static void read_one_locked(struct fl__rpc *rpc)
{
	int fds[FL__PROTO_MAX_FDS], fd = rpc->fd, n;
	unsigned int generation = fl__rpc_generation(rpc), nfds = 0;
	bool cut = false;

	rpc->reading = true;
	rpc->read_fd = fd;
	pthread_mutex_unlock(&rpc->lock);
	n = fl__proto_recv_reply(fd, rpc->rbuf, rpc->rbuf_cap, fds, rpc->room, rpc->room, &nfds,
				 &cut);
	pthread_mutex_lock(&rpc->lock);
	rpc->reading = false;
	rpc->read_fd = -1;
	if (rpc->orphan_fd >= 0 && rpc->orphan_fd == fd) {
		fl__fdid_close(rpc->orphan_fd, &rpc->orphan_id);
		rpc->orphan_fd = -1;
	}
	if (fd != rpc->fd || generation != fl__rpc_generation(rpc)) {
		/* Dropped while we read, and its waiters failed then: a stale answer. */
		if (n >= 0)
			close_fds(fds, nfds);
	} else if (n < 0) {
		FL_LOG(rpc->ops->what, "connection lost waiting for answers: %d", n);
		fl__rpc_fail_waiters_locked(rpc, n);
		fl__rpc_drop_locked(rpc);
	} else {
		route_locked(rpc, n, fds, nfds, cut);
	}
	pthread_cond_broadcast(&rpc->cond);
}

void fl__rpc_pump_locked(struct fl__rpc *rpc)
{
	if (rpc->reading)
		pthread_cond_wait(&rpc->cond, &rpc->lock);
	else
		read_one_locked(rpc);
}

void fl__rpc_read_arrived_locked(struct fl__rpc *rpc)
{
	while (rpc->fd >= 0 && !rpc->reading) {
		struct pollfd p = { rpc->fd, POLLIN, 0 };

		if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
			return;
		read_one_locked(rpc);
	}
}

int fl__rpc_await_locked(struct fl__rpc *rpc, struct fl__rpc_waiter *w)
{
	w->generation = fl__rpc_generation(rpc);
	/* Dropped since the request went: its waiters have failed already. */
	if (rpc->fd < 0)
		return -ECONNRESET;
	w->done = false;
	w->nfds = 0;
	w->next = rpc->waiters;
	rpc->waiters = w;
	while (!w->done)
		fl__rpc_pump_locked(rpc);
	return w->n;
}

void fl__rpc_fork_prepare(struct fl__rpc *rpc)
{
	pthread_mutex_lock(&rpc->lock);
	while (rpc->connecting)
		pthread_cond_wait(&rpc->cond, &rpc->lock);
}

void fl__rpc_forked_locked(struct fl__rpc *rpc)
{
	atomic_fetch_add(&rpc->generation, 1);
	/* Closing our copy leaves the parent's connection untouched. */
	fl__fdid_close(rpc->fd, &rpc->id);
	rpc->fd = -1;
	/* The parent's waiting and reading threads are not here. */
	rpc->waiters = NULL;
	rpc->reading = false;
	rpc->connecting = false;
	rpc->read_fd = -1;
	fl__fdid_close(rpc->orphan_fd, &rpc->orphan_id);
	rpc->orphan_fd = -1;
	rpc->cond = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
}

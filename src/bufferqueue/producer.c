// SPDX-License-Identifier: MIT
/*
 * The producer's side of a buffer queue (<fenceline/bufferqueue.h>,
 * docs/bufferqueue.md): requests with one reply each, in order, and the
 * consumer's SLOT_FREE event between them; each slot's buffer cached.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>

#include "bufferqueue-private.h"
#include "bufferqueue.h"
#include "service.h"
#include "transport.h"
#include "util.h"

struct fl_bufferqueue_producer {
	int fd;
	uint32_t seq;
	bool dead; /* the consumer is gone or broke the protocol */
	bool slot_free; /* SLOT_FREE came since the last dequeue */
	unsigned int num_slots, mode;
	bool dequeued[FL_BQ_MAX_SLOTS];
	struct fl_bufferqueue_buffer bufs[FL_BQ_MAX_SLOTS]; /* fd -1: none cached */
};

static int die(struct fl_bufferqueue_producer *p, int err)
{
	p->dead = true;
	return err;
}

/* Gone is -EPIPE whatever the socket said (EOF, ECONNRESET, EPIPE). */
static int gone(struct fl_bufferqueue_producer *p)
{
	return die(p, -EPIPE);
}

/*
 * Reads one packet, waiting at most @timeout_ms (-1: forever). Events are
 * noted; a reply is returned in @rep with its fds. Return: 1 for a reply,
 * 0 for an event, -ETIME, -EINTR, -EPIPE, -EPROTO.
 */
static int read_one(struct fl_bufferqueue_producer *p, int timeout_ms, struct fl_bqproto_reply *rep,
		    int *fds, unsigned int *nfds)
{
	unsigned char buf[FL_BQPROTO_MAX_REPLY + 1];
	struct fl__proto_rx rx = { .fds = fds,
				   .max_fds = FL_BQPROTO_MAX_FDS,
				   .room = FL_BQPROTO_MAX_FDS + 1 };
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	int r;

	if (p->dead)
		return -EPIPE;
	/* Waiting forever is one blocking recvmsg(): no poll() on the way of every reply. */
	if (timeout_ms >= 0) {
		r = poll(&pfd, 1, timeout_ms);
		if (r < 0)
			return errno == EINTR ? -EINTR : -errno;
		if (r == 0)
			return -ETIME;
	}
	r = fl__proto_recv(p->fd, buf, sizeof(buf), NULL, 0,
			   (timeout_ms >= 0 ? MSG_DONTWAIT : 0) | MSG_TRUNC, &rx);
	/*
	 * A consumer that closed with our data unread (a refusal: it did
	 * not wait for our HELLO) leaves ECONNRESET, reported once, before
	 * what it sent us: read on for that.
	 */
	if (r == -ECONNRESET)
		r = fl__proto_recv(p->fd, buf, sizeof(buf), NULL, 0, MSG_DONTWAIT | MSG_TRUNC, &rx);
	if (r == -EAGAIN)
		return 0;
	if (r < 0 || rx.len == 0)
		return gone(p);
	r = fl__bqproto_decode_reply(buf, rx.len > sizeof(buf) ? sizeof(buf) : rx.len, rx.nfds,
				     rx.len > FL_BQPROTO_MAX_REPLY || rx.flags != 0, rep);
	if (r < 0) {
		for (unsigned int i = 0; i < rx.nfds; i++)
			fl__close(fds[i]);
		fl__log("bufferqueue", "the consumer broke the protocol");
		return die(p, -EPROTO);
	}
	if (rep->hdr.op == FL_BQOP_SLOT_FREE) {
		p->slot_free = true;
		return 0;
	}
	*nfds = rx.nfds;
	return 1;
}

static int send_req(struct fl_bufferqueue_producer *p, uint32_t op, const void *body, size_t len,
		    const int *fds, unsigned int nfds)
{
	int r;

	if (p->dead)
		return -EPIPE;
	for (;;) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };

		r = fl__bq_send(p->fd, op, ++p->seq, body, len, fds, nfds);
		if (r != -EAGAIN)
			break;
		if (poll(&pfd, 1, -1) < 0 && errno == EINTR)
			return -EINTR;
	}
	if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN)
		return gone(p);
	return r;
}

/* Sends a request and waits for its reply (events met on the way are noted). */
static int call(struct fl_bufferqueue_producer *p, uint32_t op, const void *body, size_t len,
		const int *fds, unsigned int nfds, struct fl_bqproto_reply *rep, int *rfds,
		unsigned int *rnfds)
{
	int r = send_req(p, op, body, len, fds, nfds);

	if (r < 0)
		return r;
	for (;;) {
		*rnfds = 0;
		r = read_one(p, -1, rep, rfds, rnfds);
		if (r == -EINTR)
			continue; /* the reply is on its way: a call must not leave it unread */
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		if (rep->hdr.op != (op | FL_OP_REPLY) || rep->hdr.seq != p->seq) {
			for (unsigned int i = 0; i < *rnfds; i++)
				fl__close(rfds[i]);
			return die(p, -EPROTO);
		}
		return rep->status;
	}
}

static int hello(struct fl_bufferqueue_producer *p)
{
	struct fl_bqmsg_hello h = { .version = FL_BQPROTO_VERSION, .pid = (uint32_t)getpid() };
	struct fl_bqproto_reply rep;
	int fds[FL_BQPROTO_MAX_FDS];
	unsigned int nfds;
	int r;

	r = send_req(p, FL_BQOP_HELLO, &h, sizeof(h), NULL, 0);
	/*
	 * A refused producer may find the socket closed under its HELLO: the
	 * refusal is still there to read.
	 */
	if (r < 0 && r != -EPIPE)
		return r;
	p->dead = false;
	for (;;) {
		nfds = 0;
		r = read_one(p, -1, &rep, fds, &nfds);
		if (r == -EINTR || r == 0)
			continue;
		if (r < 0)
			return r;
		/* A refusal answers a HELLO it never read: its seq is 0. */
		if (rep.hdr.op != (FL_BQOP_HELLO | FL_OP_REPLY) ||
		    (rep.hdr.seq != p->seq && !(rep.hdr.seq == 0 && rep.status < 0)))
			return -EPROTO;
		if (rep.status < 0)
			return rep.status;
		p->num_slots = rep.u.hello.num_slots;
		p->mode = rep.u.hello.mode;
		return 0;
	}
}

static int producer_new(int fd, struct fl_bufferqueue_producer **ret)
{
	struct fl_bufferqueue_producer *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->fd = fd;
	for (unsigned int i = 0; i < FL_BQ_MAX_SLOTS; i++)
		p->bufs[i].fd = -1;
	r = hello(p);
	if (r < 0) {
		p->fd = -1;
		fl_bufferqueue_producer_destroy(p);
		return r;
	}
	*ret = p;
	return 0;
}

int fl_bufferqueue_producer_connect(const char *path, struct fl_bufferqueue_producer **ret_producer)
{
	int fd, r;

	if (!path || !ret_producer)
		return -EINVAL;
	/* The daemons' way to a SEQPACKET socket; no timeout: the queue answers when it dispatches. */
	fd = fl__service_connect(path, 0);
	if (fd < 0)
		return fd;
	r = producer_new(fd, ret_producer);
	if (r < 0)
		fl__close(fd);
	return r;
}

int fl_bufferqueue_producer_connect_fd(int fd, struct fl_bufferqueue_producer **ret_producer)
{
	int type = 0, flags;
	socklen_t len = sizeof(type);

	if (!ret_producer)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		return errno == ENOTSOCK ? -EINVAL : -errno;
	if (type != SOCK_SEQPACKET)
		return -EINVAL;
	/* The producer's calls wait for their replies in a blocking recvmsg(). */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || ((flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0))
		return -errno;
	return producer_new(fd, ret_producer);
}

void fl_bufferqueue_producer_destroy(struct fl_bufferqueue_producer *producer)
{
	if (!producer)
		return;
	fl__close(producer->fd);
	for (unsigned int i = 0; i < FL_BQ_MAX_SLOTS; i++)
		fl__close(producer->bufs[i].fd);
	free(producer);
}

int fl_bufferqueue_producer_get_fd(struct fl_bufferqueue_producer *producer)
{
	return producer ? producer->fd : -EINVAL;
}

int fl_bufferqueue_producer_get_num_slots(struct fl_bufferqueue_producer *producer,
					  unsigned int *ret_mode)
{
	if (!producer)
		return -EINVAL;
	if (ret_mode)
		*ret_mode = producer->mode;
	return (int)producer->num_slots;
}

int fl_bufferqueue_producer_dispatch(struct fl_bufferqueue_producer *producer)
{
	struct fl_bufferqueue_producer *p = producer;
	struct fl_bqproto_reply rep;
	int fds[FL_BQPROTO_MAX_FDS];
	unsigned int nfds = 0;
	int r;

	if (!p)
		return -EINVAL;
	while ((r = read_one(p, 0, &rep, fds, &nfds)) == 0 && !p->slot_free)
		;
	if (r == 1) {
		/* No request is outstanding between calls: a reply now is a lie. */
		for (unsigned int i = 0; i < nfds; i++)
			fl__close(fds[i]);
		return die(p, -EPROTO);
	}
	if (r < 0 && r != -ETIME)
		return r == -EINTR ? 0 : r;
	return p->slot_free ? 1 : 0;
}

static int take_buffer(struct fl_bufferqueue_producer *p, const struct fl_bqmsg_dequeue_reply *d,
		       const int *fds, unsigned int nfds, struct fl_bufferqueue_dequeued *ret)
{
	struct fl_bufferqueue_buffer *b;
	unsigned int i = 0;

	if (d->slot >= p->num_slots || p->dequeued[d->slot])
		goto bad;
	if ((d->flags & FL_BQ_F_FENCE) && !fl__bq_fence_fd_ok(fds[nfds - 1]))
		goto bad;
	b = &p->bufs[d->slot];
	if (d->flags & FL_BQ_F_BUFFER) {
		/* Memory (a memfd or a dma-buf) as large as the planes: mapping it cannot fault. */
		off_t end = lseek(fds[0], 0, SEEK_END);

		if (end < 0 || (uint64_t)end < d->size)
			goto bad;
		fl__close(b->fd);
		b->fd = fds[i++];
	} else if (b->fd < 0) {
		goto bad; /* a slot whose buffer never came */
	}
	b->width = d->width;
	b->height = d->height;
	b->format = d->format;
	b->num_planes = d->num_planes;
	b->size = d->size;
	memcpy(b->offsets, d->offsets, sizeof(b->offsets));
	memcpy(b->pitches, d->pitches, sizeof(b->pitches));
	p->dequeued[d->slot] = true;
	ret->slot = d->slot;
	ret->flags = (d->flags & FL_BQ_F_BUFFER ? FL_BUFFERQUEUE_BUFFER_NEW : 0) |
		     (d->flags & FL_BQ_F_REALLOCATED ? FL_BUFFERQUEUE_BUFFER_REALLOCATED : 0);
	ret->release_fence_fd = d->flags & FL_BQ_F_FENCE ? fds[i] : -1;
	ret->buffer = b;
	return 0;
bad:
	for (i = 0; i < nfds; i++)
		fl__close(fds[i]);
	return die(p, -EPROTO);
}

int fl_bufferqueue_producer_dequeue(struct fl_bufferqueue_producer *producer,
				    const struct fl_bufferqueue_request *req, int timeout_ms,
				    struct fl_bufferqueue_dequeued *ret)
{
	struct fl_bufferqueue_producer *p = producer;
	struct fl_bqmsg_dequeue d;
	struct fl_bqproto_reply rep;
	int fds[FL_BQPROTO_MAX_FDS];
	unsigned int nfds;
	uint64_t deadline;
	int r;

	if (!p || !req || !ret)
		return -EINVAL;
	memset(&d, 0, sizeof(d));
	d.width = req->width;
	d.height = req->height;
	d.format = req->format;
	if (req->usage && strlen(req->usage) >= sizeof(d.usage))
		return -EINVAL;
	if (req->usage)
		strcpy(d.usage, req->usage);
	deadline = timeout_ms > 0 ? fl__now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
	for (;;) {
		p->slot_free = false;
		r = call(p, FL_BQOP_DEQUEUE, &d, sizeof(d), NULL, 0, &rep, fds, &nfds);
		if (r == 0)
			return take_buffer(p, &rep.u.dequeue, fds, nfds, ret);
		if (r != -EAGAIN || timeout_ms == 0)
			return r;
		/* No slot free: the consumer sends SLOT_FREE when one is. */
		while (!p->slot_free) {
			int wait_ms = -1;

			if (timeout_ms > 0) {
				uint64_t now = fl__now_ns();

				if (now >= deadline)
					return -ETIME;
				wait_ms = (int)((deadline - now + 999999u) / 1000000u);
			}
			nfds = 0;
			r = read_one(p, wait_ms, &rep, fds, &nfds);
			if (r == 1) {
				for (unsigned int i = 0; i < nfds; i++)
					fl__close(fds[i]);
				return die(p, -EPROTO);
			}
			if (r < 0 && r != -ETIME)
				return r;
		}
	}
}

static int merge_damage(const struct fl_bufferqueue_queue_info *info, struct fl_bqmsg_rect *out)
{
	int64_t x0 = INT64_MAX, y0 = INT64_MAX, x1 = INT64_MIN, y1 = INT64_MIN;
	unsigned int n = info->num_damage;

	for (unsigned int i = 0; i < n; i++) {
		const struct fl_bufferqueue_rect *r = &info->damage[i];

		if (r->x < 0 || r->y < 0 || r->width <= 0 || r->height <= 0 ||
		    r->x > (int32_t)FL_BQ_MAX_DIM || r->y > (int32_t)FL_BQ_MAX_DIM ||
		    r->width > (int32_t)FL_BQ_MAX_DIM || r->height > (int32_t)FL_BQ_MAX_DIM)
			return -EINVAL;
		if (n <= FL_BQ_MAX_DAMAGE)
			out[i] = (struct fl_bqmsg_rect){ r->x, r->y, r->width, r->height };
		x0 = x0 < r->x ? x0 : r->x;
		y0 = y0 < r->y ? y0 : r->y;
		x1 = x1 > (int64_t)r->x + r->width ? x1 : (int64_t)r->x + r->width;
		y1 = y1 > (int64_t)r->y + r->height ? y1 : (int64_t)r->y + r->height;
	}
	if (n <= FL_BQ_MAX_DAMAGE)
		return (int)n;
	out[0] = (struct fl_bqmsg_rect){ (int32_t)x0, (int32_t)y0, (int32_t)(x1 - x0),
					 (int32_t)(y1 - y0) };
	if (out[0].width > (int32_t)FL_BQ_MAX_DIM || out[0].height > (int32_t)FL_BQ_MAX_DIM)
		return -EINVAL;
	return 1;
}

int fl_bufferqueue_producer_queue(struct fl_bufferqueue_producer *producer, unsigned int slot,
				  int acquire_fence_fd,
				  const struct fl_bufferqueue_queue_info *info,
				  uint64_t *ret_frame_number)
{
	struct fl_bufferqueue_producer *p = producer;
	struct {
		struct fl_bqmsg_queue q;
		struct fl_bqmsg_rect rects[FL_BQ_MAX_DAMAGE];
	} m;
	struct fl_bqproto_reply rep;
	int fds[FL_BQPROTO_MAX_FDS];
	unsigned int nfds;
	int n = 0, r;

	if (!p || slot >= FL_BQ_MAX_SLOTS || !p->dequeued[slot] ||
	    (info && info->num_damage && !info->damage) || acquire_fence_fd < -1)
		return -EINVAL;
	if (acquire_fence_fd >= 0 && fcntl(acquire_fence_fd, F_GETFD) < 0)
		return -EBADF;
	memset(&m, 0, sizeof(m));
	if (info) {
		n = merge_damage(info, m.rects);
		if (n < 0)
			return n;
		m.q.desired_present_ns = info->desired_present_ns;
	}
	m.q.slot = slot;
	m.q.num_damage = (uint32_t)n;
	m.q.flags = acquire_fence_fd >= 0 ? FL_BQ_F_FENCE : 0;
	r = call(p, FL_BQOP_QUEUE, &m, sizeof(m.q) + (size_t)n * sizeof(m.rects[0]),
		 &acquire_fence_fd, acquire_fence_fd >= 0 ? 1 : 0, &rep, fds, &nfds);
	if (r < 0)
		return r;
	p->dequeued[slot] = false;
	if (ret_frame_number)
		*ret_frame_number = rep.u.queue.frame_number;
	return 0;
}

int fl_bufferqueue_producer_cancel(struct fl_bufferqueue_producer *producer, unsigned int slot,
				   int fence_fd)
{
	struct fl_bufferqueue_producer *p = producer;
	struct fl_bqmsg_cancel m = { .slot = slot };
	struct fl_bqproto_reply rep;
	int fds[FL_BQPROTO_MAX_FDS];
	unsigned int nfds;
	int r;

	if (!p || slot >= FL_BQ_MAX_SLOTS || !p->dequeued[slot] || fence_fd < -1)
		return -EINVAL;
	if (fence_fd >= 0 && fcntl(fence_fd, F_GETFD) < 0)
		return -EBADF;
	m.flags = fence_fd >= 0 ? FL_BQ_F_FENCE : 0;
	r = call(p, FL_BQOP_CANCEL, &m, sizeof(m), &fence_fd, fence_fd >= 0 ? 1 : 0, &rep, fds,
		 &nfds);
	if (r < 0)
		return r;
	p->dequeued[slot] = false;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * The consumer's side of a buffer queue (<fenceline/bufferqueue.h>,
 * docs/bufferqueue.md): the slots, the allocations from the heap table,
 * and the one producer connection, served without ever blocking on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>

#include "bufferqueue-private.h"
#include "bufferqueue.h"
#include "transport.h"
#include "util.h"

/* Requests served per dispatch, so that a flooding producer does not hold the caller's loop. */
#define DISPATCH_BUDGET 64
/* The most devices a usage list names (heap table's limit is 64). */
#define MAX_DEVICES 16

enum slot_state { SLOT_FREE, SLOT_DEQUEUED, SLOT_QUEUED, SLOT_ACQUIRED };

struct slot {
	enum slot_state state;
	struct fl_bufferqueue_buffer buf; /* buf.fd -1: no buffer yet */
	char usage[FL_BQ_USAGE_MAX]; /* the producer usage it was allocated for */
	bool producer_has; /* the producer has its buffer fd cached */
	int release_fd; /* fence of the next dequeue, -1 for none */
	int acquire_fd; /* while queued or until acquired */
	uint64_t released_at; /* release order, for least recently used first */
	uint64_t frame, queue_ns, desired_ns;
	unsigned int num_damage;
	struct fl_bufferqueue_rect damage[FL_BUFFERQUEUE_MAX_DAMAGE];
};

struct fl_bufferqueue_consumer {
	char name[FL_BQ_NAME_MAX];
	char *path;
	int listen_fd, conn_fd, epfd;
	bool hello_done; /* the producer said HELLO */
	bool producer_waiting; /* a DEQUEUE found no free slot: send SLOT_FREE */
	unsigned int num_slots, mode, flags;
	char usage[FL_BQ_USAGE_MAX]; /* the consumer's, display-scanout included */
	char checked[FL_BQ_USAGE_MAX]; /* the producer usage last found valid */
	struct fl_heap_table *table;
	bool own_table;
	struct slot slots[FL_BQ_MAX_SLOTS];
	unsigned int queue[FL_BQ_MAX_SLOTS]; /* queued slots, oldest first */
	unsigned int nqueued;
	uint64_t next_frame, release_clock, dropped;
	unsigned int events; /* to report at the next dispatch */
};

static void buffer_free(struct fl_bufferqueue_consumer *c, struct slot *s)
{
	if (s->buf.fd < 0)
		return;
	if (fl_heap_table_buffer_free(c->table, s->buf.fd) < 0)
		fl__close(s->buf.fd);
	s->buf.fd = -1;
	s->producer_has = false;
}

static void set_fd(int *dst, int fd)
{
	fl__close(*dst);
	*dst = fd;
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Splits @list (comma-separated) into @out; Return: the count or -EINVAL. */
static int split_usage(char *list, const char **out, int n, int max)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (n >= max)
			return -EINVAL;
		out[n++] = tok;
	}
	return n;
}

/* Return: 0 if every name of @usage is a device of @table, else -ENODEV (or -EINVAL: too many). */
static int check_usage(struct fl_heap_table *table, const char *usage)
{
	char copy[FL_BQ_USAGE_MAX];
	const char *devs[MAX_DEVICES];
	FILE *null;
	int n, r;

	fl__name_copy(copy, sizeof(copy), usage);
	n = split_usage(copy, devs, 0, MAX_DEVICES);
	if (n <= 0)
		return n;
	/* explain() allocates nothing and names an unknown device with -ENODEV. */
	null = fopen("/dev/null", "we");
	if (!null)
		return -errno;
	r = fl_heap_table_explain(table, devs, (size_t)n, 4096, null);
	fclose(null);
	return r;
}

/*
 * The producer is gone or cut off: the slots it dequeued are free again
 * (their release fences kept: the buffer may still be read), its queued
 * buffers stay acquirable, and nothing of its cache survives.
 */
static void drop_producer(struct fl_bufferqueue_consumer *c, const char *why)
{
	if (c->conn_fd < 0)
		return;
	fl__log("bufferqueue", "%s: producer %s", c->name, why);
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->conn_fd, NULL);
	fl__close(c->conn_fd);
	c->conn_fd = -1;
	c->hello_done = false;
	c->producer_waiting = false;
	c->checked[0] = '\0';
	for (unsigned int i = 0; i < c->num_slots; i++) {
		struct slot *s = &c->slots[i];

		s->producer_has = false;
		if (s->state == SLOT_DEQUEUED) {
			s->state = SLOT_FREE;
			s->released_at = ++c->release_clock;
		}
	}
	c->events |= FL_BUFFERQUEUE_EVENT_DISCONNECTED;
}

static bool send_msg(struct fl_bufferqueue_consumer *c, uint32_t op, uint32_t seq, const void *body,
		     size_t len, const int *fds, unsigned int nfds)
{
	int r = fl__bq_send(c->conn_fd, op, seq, body, len, fds, nfds);

	if (r == 0)
		return true;
	drop_producer(c, r == -EAGAIN ? "does not read its replies" : "is gone");
	return false;
}

static bool reply_status(struct fl_bufferqueue_consumer *c, const struct fl_msg_hdr *h, int status)
{
	struct fl_msg_reply r = { .status = status };

	return send_msg(c, h->op | FL_OP_REPLY, h->seq, &r, sizeof(r), NULL, 0);
}

static void slot_freed(struct fl_bufferqueue_consumer *c, struct slot *s)
{
	s->state = SLOT_FREE;
	s->released_at = ++c->release_clock;
	if (c->producer_waiting && c->conn_fd >= 0) {
		c->producer_waiting = false;
		send_msg(c, FL_BQOP_SLOT_FREE, 0, NULL, 0, NULL, 0);
	}
}

static bool fits(const struct slot *s, const struct fl_bqmsg_dequeue *d)
{
	return s->buf.fd >= 0 && s->buf.width == d->width && s->buf.height == d->height &&
	       s->buf.format == d->format && !strcmp(s->usage, d->usage);
}

/* A free slot for @d: one whose buffer fits, else an empty one, else any; least recently released first. */
static int pick_slot(struct fl_bufferqueue_consumer *c, const struct fl_bqmsg_dequeue *d)
{
	int best = -1, best_rank = 3;

	for (unsigned int i = 0; i < c->num_slots; i++) {
		const struct slot *s = &c->slots[i];
		int rank;

		if (s->state != SLOT_FREE)
			continue;
		rank = fits(s, d) ? 0 : s->buf.fd < 0 ? 1 : 2;
		if (rank < best_rank ||
		    (rank == best_rank && s->released_at < c->slots[best].released_at)) {
			best = (int)i;
			best_rank = rank;
		}
	}
	return best;
}

static int allocate(struct fl_bufferqueue_consumer *c, struct slot *s,
		    const struct fl_bqmsg_dequeue *d, const struct fl_bufferqueue_buffer *layout)
{
	char list[2 * FL_BQ_USAGE_MAX];
	const char *devs[2 * MAX_DEVICES];
	int n, fd, r;

	fl__name_copy(list, sizeof(list), d->usage[0] ? d->usage : "cpu");
	n = split_usage(list, devs, 0, MAX_DEVICES);
	if (n < 0)
		return n;
	if (!n) {
		devs[0] = "cpu";
		n = 1;
	}
	char mine[FL_BQ_USAGE_MAX];

	fl__name_copy(mine, sizeof(mine), c->usage);
	n = split_usage(mine, devs, n, 2 * MAX_DEVICES);
	if (n < 0)
		return n;
	r = fl_heap_table_alloc(c->table, devs, (size_t)n, (size_t)layout->size, 0, &fd, NULL, NULL,
				0);
	if (r < 0)
		return r;
	buffer_free(c, s);
	s->buf = *layout;
	s->buf.fd = fd;
	memcpy(s->usage, d->usage, sizeof(s->usage));
	return 0;
}

static bool handle_dequeue(struct fl_bufferqueue_consumer *c, const struct fl_bqproto_request *q)
{
	const struct fl_bqmsg_dequeue *d = &q->u.dequeue;
	struct fl_bqmsg_dequeue_reply rep;
	struct fl_bufferqueue_buffer layout;
	bool realloc_ = false;
	int fds[2], nfds = 0, idx, r;
	struct slot *s;

	r = fl__bq_layout(d->width, d->height, d->format, &layout);
	if (r == 0 && strcmp(d->usage, c->checked)) {
		r = check_usage(c->table, d->usage);
		if (r == 0)
			memcpy(c->checked, d->usage, sizeof(c->checked));
	}
	if (r < 0)
		return reply_status(c, &q->hdr, r);
	idx = pick_slot(c, d);
	if (idx < 0) {
		c->producer_waiting = true;
		return reply_status(c, &q->hdr, -EAGAIN);
	}
	s = &c->slots[idx];
	if (!fits(s, d)) {
		realloc_ = s->buf.fd >= 0;
		r = allocate(c, s, d, &layout);
		if (r < 0)
			return reply_status(c, &q->hdr, r);
	}
	memset(&rep, 0, sizeof(rep));
	rep.slot = (uint32_t)idx;
	rep.width = s->buf.width;
	rep.height = s->buf.height;
	rep.format = s->buf.format;
	rep.num_planes = s->buf.num_planes;
	rep.size = s->buf.size;
	memcpy(rep.offsets, s->buf.offsets, sizeof(rep.offsets));
	memcpy(rep.pitches, s->buf.pitches, sizeof(rep.pitches));
	if (!s->producer_has) {
		rep.flags |= FL_BQ_F_BUFFER | (realloc_ ? FL_BQ_F_REALLOCATED : 0);
		fds[nfds++] = s->buf.fd;
	}
	if (s->release_fd >= 0) {
		rep.flags |= FL_BQ_F_FENCE;
		fds[nfds++] = s->release_fd;
	}
	if (!send_msg(c, q->hdr.op | FL_OP_REPLY, q->hdr.seq, &rep, sizeof(rep), fds,
		      (unsigned int)nfds))
		return false;
	/* The fence went with the reply: the producer owns its copy now. */
	set_fd(&s->release_fd, -1);
	s->producer_has = true;
	s->state = SLOT_DEQUEUED;
	return true;
}

static void set_damage(struct slot *s, const struct fl_bqmsg_rect *r, unsigned int n)
{
	s->num_damage = n;
	for (unsigned int i = 0; i < n; i++)
		s->damage[i] =
			(struct fl_bufferqueue_rect){ r[i].x, r[i].y, r[i].width, r[i].height };
}

/* Android's: a time more than a second ahead is taken for a mistake, and shown now. */
#define MAX_REASONABLE_NS 1000000000ull

static bool due(const struct slot *s, uint64_t expected)
{
	return !s->desired_ns || s->desired_ns <= expected ||
	       s->desired_ns - expected > MAX_REASONABLE_NS;
}

static bool timely(uint64_t desired, uint64_t expected)
{
	return desired && desired <= expected && expected - desired <= MAX_REASONABLE_NS;
}

/* The front queued buffer goes back free unacquired, as a mailbox's replaced one does. */
static void drop_front(struct fl_bufferqueue_consumer *c)
{
	struct slot *old = &c->slots[c->queue[0]];

	memmove(c->queue, c->queue + 1, (c->nqueued - 1) * sizeof(c->queue[0]));
	c->nqueued--;
	set_fd(&old->release_fd, old->acquire_fd);
	old->acquire_fd = -1;
	c->dropped++;
	slot_freed(c, old);
}

static bool handle_queue(struct fl_bufferqueue_consumer *c, const struct fl_bqproto_request *q,
			 int *fds, unsigned int nfds)
{
	const struct fl_bqmsg_queue *m = &q->u.queue.q;
	struct fl_bqmsg_queue_reply rep;
	struct slot *s;

	if (m->slot >= c->num_slots || c->slots[m->slot].state != SLOT_DEQUEUED ||
	    (nfds && !fl__bq_fence_fd_ok(fds[0])))
		return reply_status(c, &q->hdr, -EINVAL);
	s = &c->slots[m->slot];
	/* Its frame number is the reply's: the producer's call fails if it is not sent. */
	memset(&rep, 0, sizeof(rep));
	rep.frame_number = c->next_frame;
	if (!send_msg(c, q->hdr.op | FL_OP_REPLY, q->hdr.seq, &rep, sizeof(rep), NULL, 0))
		return false;
	c->next_frame++;
	s->state = SLOT_QUEUED;
	set_fd(&s->acquire_fd, nfds ? fds[0] : -1);
	if (nfds)
		fds[0] = -1;
	s->frame = rep.frame_number;
	s->queue_ns = fl__now_ns();
	s->desired_ns = m->desired_present_ns;
	set_damage(s, q->u.queue.rects, m->num_damage);
	if (c->mode == FL_BUFFERQUEUE_MAILBOX) {
		/*
		 * The one queued buffer is replaced: it goes back free, with
		 * its own acquire fence as the release fence (the producer's
		 * write may still be running; Android passes no fence here).
		 */
		while (c->nqueued)
			drop_front(c);
	}
	c->queue[c->nqueued++] = m->slot;
	c->events |= FL_BUFFERQUEUE_EVENT_FRAME_AVAILABLE;
	return true;
}

static bool handle_cancel(struct fl_bufferqueue_consumer *c, const struct fl_bqproto_request *q,
			  int *fds, unsigned int nfds)
{
	const struct fl_bqmsg_cancel *m = &q->u.cancel;
	struct slot *s;

	if (m->slot >= c->num_slots || c->slots[m->slot].state != SLOT_DEQUEUED ||
	    (nfds && !fl__bq_fence_fd_ok(fds[0])))
		return reply_status(c, &q->hdr, -EINVAL);
	s = &c->slots[m->slot];
	if (!reply_status(c, &q->hdr, 0))
		return false;
	set_fd(&s->release_fd, nfds ? fds[0] : -1);
	if (nfds)
		fds[0] = -1;
	slot_freed(c, s);
	return true;
}

static bool handle_hello(struct fl_bufferqueue_consumer *c, const struct fl_bqproto_request *q)
{
	struct fl_bqmsg_hello_reply rep;

	if (c->hello_done)
		return reply_status(c, &q->hdr, -EALREADY);
	memset(&rep, 0, sizeof(rep));
	rep.version = FL_BQPROTO_VERSION;
	rep.num_slots = c->num_slots;
	rep.mode = c->mode;
	memcpy(rep.name, c->name, sizeof(rep.name));
	if (!send_msg(c, q->hdr.op | FL_OP_REPLY, q->hdr.seq, &rep, sizeof(rep), NULL, 0))
		return false;
	c->hello_done = true;
	fl__log("bufferqueue", "%s: producer pid %u connected", c->name, q->u.hello.pid);
	return true;
}

/* Serves one packet. Return: false when there is nothing more to read (or the producer went). */
static bool serve_one(struct fl_bufferqueue_consumer *c)
{
	/* One byte more than the largest request, so that a longer one shows as truncated. */
	unsigned char buf[FL_BQPROTO_MAX_REQUEST + 1];
	int fds[FL_BQPROTO_MAX_FDS];
	struct fl__proto_rx rx = { .fds = fds, .max_fds = 1, .room = FL_BQPROTO_MAX_FDS };
	struct fl_bqproto_request q;
	bool ok = true;
	int r;

	r = fl__proto_recv(c->conn_fd, buf, sizeof(buf), NULL, 0, MSG_DONTWAIT | MSG_TRUNC, &rx);
	if (r == -EAGAIN)
		return false;
	if (r < 0 || rx.len == 0) {
		drop_producer(c, r < 0 ? "connection failed" : "disconnected");
		return false;
	}
	/* Anything besides the bytes and one fd (a second fd, credentials, a cut) is hostile. */
	r = fl__bqproto_decode_request(buf, rx.len > sizeof(buf) ? sizeof(buf) : rx.len, rx.nfds,
				       rx.len > FL_BQPROTO_MAX_REQUEST || rx.flags != 0, &q);
	if (r == -EPROTO) {
		for (unsigned int i = 0; i < rx.nfds; i++)
			fl__close(fds[i]);
		drop_producer(c, "broke the protocol's framing");
		return false;
	}
	if (r == 0 && !c->hello_done && q.hdr.op != FL_BQOP_HELLO)
		r = -EPROTO;
	if (r < 0) {
		struct fl_msg_hdr h;

		memcpy(&h, buf, sizeof(h));
		ok = reply_status(c, &h, r);
		if (r == -EPROTO || r == -EPROTONOSUPPORT)
			drop_producer(c, "sent a request before HELLO, or another version");
	} else {
		switch (q.hdr.op) {
		case FL_BQOP_HELLO:
			ok = handle_hello(c, &q);
			break;
		case FL_BQOP_DEQUEUE:
			ok = handle_dequeue(c, &q);
			break;
		case FL_BQOP_QUEUE:
			ok = handle_queue(c, &q, fds, rx.nfds);
			break;
		case FL_BQOP_CANCEL:
			ok = handle_cancel(c, &q, fds, rx.nfds);
			break;
		}
	}
	for (unsigned int i = 0; i < rx.nfds; i++)
		fl__close(fds[i]);
	return ok && c->conn_fd >= 0;
}

/* A second producer: told -EBUSY and closed, never kept waiting. */
static void refuse(int fd)
{
	unsigned char drain[FL_BQPROTO_MAX_REQUEST];
	struct fl_msg_reply r = { .status = -EBUSY };
	struct fl__proto_rx rx = { 0 };

	/*
	 * Read what it sent first: closing with data unread would reset the
	 * connection before it read the answer.
	 */
	fl__proto_recv(fd, drain, sizeof(drain), NULL, 0, MSG_DONTWAIT, &rx);
	fl__bq_send(fd, FL_BQOP_HELLO | FL_OP_REPLY, 0, &r, sizeof(r), NULL, 0);
	fl__close(fd);
}

static int adopt(struct fl_bufferqueue_consumer *c, int fd)
{
	int r = epoll_add(c->epfd, fd);

	if (r < 0) {
		fl__close(fd);
		return r;
	}
	c->conn_fd = fd;
	c->hello_done = false;
	c->events |= FL_BUFFERQUEUE_EVENT_CONNECTED;
	return 0;
}

static void accept_all(struct fl_bufferqueue_consumer *c)
{
	for (int i = 0; i < 8 && c->listen_fd >= 0; i++) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return;
		if (c->conn_fd >= 0)
			refuse(fd);
		else
			adopt(c, fd);
	}
}

/* The epoll set is level-triggered: reading every source until EAGAIN is all it needs. */
static void serve(struct fl_bufferqueue_consumer *c)
{
	accept_all(c);
	for (int budget = DISPATCH_BUDGET; budget > 0 && c->conn_fd >= 0; budget--)
		if (!serve_one(c))
			break;
}

int fl_bufferqueue_consumer_dispatch(struct fl_bufferqueue_consumer *consumer,
				     unsigned int *ret_events)
{
	struct fl_bufferqueue_consumer *c = consumer;

	if (!c)
		return -EINVAL;
	serve(c);
	if (ret_events)
		*ret_events = c->events;
	c->events = 0;
	return 0;
}

int fl_bufferqueue_consumer_wait(struct fl_bufferqueue_consumer *consumer, int timeout_ms)
{
	struct fl_bufferqueue_consumer *c = consumer;
	uint64_t deadline;

	if (!c)
		return -EINVAL;
	deadline = timeout_ms > 0 ? fl__now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
	for (;;) {
		struct pollfd pfd = { .fd = c->epfd, .events = POLLIN };
		int wait_ms = timeout_ms;

		serve(c); /* its events stay for the next dispatch to report */
		if (c->nqueued)
			return 0;
		if (timeout_ms > 0) {
			uint64_t now = fl__now_ns();

			if (now >= deadline)
				return -ETIME;
			wait_ms = (int)((deadline - now + 999999u) / 1000000u);
		} else if (timeout_ms == 0) {
			return -ETIME;
		}
		if (poll(&pfd, 1, wait_ms) < 0 && errno == EINTR)
			return -EINTR;
	}
}

int fl_bufferqueue_consumer_acquire(struct fl_bufferqueue_consumer *consumer,
				    uint64_t expected_present_ns,
				    struct fl_bufferqueue_acquired *ret)
{
	struct fl_bufferqueue_consumer *c = consumer;
	struct slot *s;
	unsigned int idx;

	if (!c || !ret)
		return -EINVAL;
	if (!c->nqueued)
		return -EAGAIN;
	if (expected_present_ns) {
		/*
		 * A buffer followed by one due in the last second would never be
		 * seen: skip it. Not for a next buffer of no time or of a
		 * mistaken one: it is not worth losing the one before.
		 */
		while (c->nqueued > 1 && c->slots[c->queue[0]].desired_ns &&
		       timely(c->slots[c->queue[1]].desired_ns, expected_present_ns))
			drop_front(c);
		if (!due(&c->slots[c->queue[0]], expected_present_ns))
			return -EAGAIN;
	}
	idx = c->queue[0];
	memmove(c->queue, c->queue + 1, (c->nqueued - 1) * sizeof(c->queue[0]));
	c->nqueued--;
	s = &c->slots[idx];
	s->state = SLOT_ACQUIRED;
	memset(ret, 0, sizeof(*ret));
	ret->slot = idx;
	ret->acquire_fence_fd = s->acquire_fd;
	s->acquire_fd = -1;
	ret->buffer = &s->buf;
	ret->frame_number = s->frame;
	ret->queue_time_ns = s->queue_ns;
	ret->desired_present_ns = s->desired_ns;
	ret->num_damage = s->num_damage;
	memcpy(ret->damage, s->damage, s->num_damage * sizeof(s->damage[0]));
	ret->dropped = c->dropped;
	c->dropped = 0;
	return 0;
}

int fl_bufferqueue_consumer_release(struct fl_bufferqueue_consumer *consumer, unsigned int slot,
				    int release_fence_fd)
{
	struct fl_bufferqueue_consumer *c = consumer;
	int fd = -1;

	if (!c || slot >= c->num_slots || c->slots[slot].state != SLOT_ACQUIRED)
		return -EINVAL;
	if (release_fence_fd >= 0) {
		if (fcntl(release_fence_fd, F_GETFD) < 0)
			return -EBADF;
		if (!fl__bq_fence_fd_ok(release_fence_fd))
			return -EINVAL;
		fd = fl__bq_dup(release_fence_fd);
		if (fd < 0)
			return fd;
	} else if (release_fence_fd != -1) {
		return -EBADF;
	}
	set_fd(&c->slots[slot].release_fd, fd);
	slot_freed(c, &c->slots[slot]);
	return 0;
}

int fl_bufferqueue_consumer_connect_fd(struct fl_bufferqueue_consumer *consumer, int *ret_fd)
{
	struct fl_bufferqueue_consumer *c = consumer;
	int sv[2], r;

	if (!c || !ret_fd)
		return -EINVAL;
	if (c->conn_fd >= 0)
		return -EBUSY;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	r = adopt(c, sv[0]);
	if (r < 0) {
		fl__close(sv[1]);
		return r;
	}
	*ret_fd = sv[1];
	return 0;
}

static int listen_on(struct fl_bufferqueue_consumer *c, const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		/* A socket nobody listens on is stale: replace it; a live one is refused. */
		int probe = -1;
		struct stat st;

		r = errno == EADDRINUSE ? 0 : -errno;
		if (!r) {
			probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
			r = probe < 0 ? -errno : 0;
		}
		if (!r && connect(probe, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			r = -EADDRINUSE;
		else if (!r && (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode)))
			r = -EADDRINUSE;
		fl__close(probe);
		if (!r && unlink(path) < 0)
			r = -errno;
		if (!r && bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
			r = -errno;
		if (r < 0) {
			fl__close(fd);
			return r;
		}
	}
	if (listen(fd, 4) < 0) {
		r = -errno;
		fl__close(fd);
		unlink(path);
		return r;
	}
	c->listen_fd = fd;
	c->path = strdup(path);
	if (!c->path)
		return -ENOMEM;
	return epoll_add(c->epfd, fd);
}

int fl_bufferqueue_consumer_create(const struct fl_bufferqueue_config *config,
				   struct fl_bufferqueue_consumer **ret_consumer)
{
	const struct fl_bufferqueue_config *cf = config;
	struct fl_bufferqueue_consumer *c;
	char usage[FL_BQ_USAGE_MAX * 2];
	int r;

	if (!cf || !ret_consumer || !cf->num_slots || cf->num_slots > FL_BQ_MAX_SLOTS ||
	    cf->mode > FL_BUFFERQUEUE_MAILBOX || (cf->flags & ~FL_BUFFERQUEUE_SCANOUT))
		return -EINVAL;
	snprintf(usage, sizeof(usage), "%s%s%s", cf->usage ? cf->usage : "",
		 cf->usage && cf->usage[0] && (cf->flags & FL_BUFFERQUEUE_SCANOUT) ? "," : "",
		 cf->flags & FL_BUFFERQUEUE_SCANOUT ? "display-scanout" : "");
	if (strlen(usage) >= FL_BQ_USAGE_MAX)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->listen_fd = c->conn_fd = -1;
	c->num_slots = cf->num_slots;
	c->mode = cf->mode;
	c->flags = cf->flags;
	c->next_frame = 1;
	fl__name_copy(c->name, sizeof(c->name), cf->name ? cf->name : "bufferqueue");
	fl__name_copy(c->usage, sizeof(c->usage), usage);
	for (unsigned int i = 0; i < FL_BQ_MAX_SLOTS; i++) {
		c->slots[i].buf.fd = -1;
		c->slots[i].release_fd = -1;
		c->slots[i].acquire_fd = -1;
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0) {
		r = -errno;
		goto fail;
	}
	c->table = cf->table;
	if (!c->table) {
		r = fl_heap_table_load_system(&c->table, NULL, 0);
		if (r < 0)
			goto fail;
		c->own_table = true;
	}
	r = check_usage(c->table, c->usage);
	if (r < 0) {
		r = -EINVAL;
		goto fail;
	}
	if (cf->path) {
		r = listen_on(c, cf->path);
		if (r < 0)
			goto fail;
	}
	*ret_consumer = c;
	return 0;
fail:
	fl_bufferqueue_consumer_destroy(c);
	return r;
}

void fl_bufferqueue_consumer_destroy(struct fl_bufferqueue_consumer *consumer)
{
	struct fl_bufferqueue_consumer *c = consumer;

	if (!c)
		return;
	if (c->conn_fd >= 0)
		fl__close(c->conn_fd);
	if (c->listen_fd >= 0) {
		fl__close(c->listen_fd);
		if (c->path)
			unlink(c->path);
	}
	for (unsigned int i = 0; i < FL_BQ_MAX_SLOTS; i++) {
		struct slot *s = &c->slots[i];

		fl__close(s->release_fd);
		fl__close(s->acquire_fd);
		if (c->table)
			buffer_free(c, s);
	}
	if (c->own_table)
		fl_heap_table_close(c->table);
	fl__close(c->epfd);
	free(c->path);
	free(c);
}

int fl_bufferqueue_consumer_get_fd(struct fl_bufferqueue_consumer *consumer)
{
	return consumer ? consumer->epfd : -EINVAL;
}

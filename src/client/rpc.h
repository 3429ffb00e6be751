/* SPDX-License-Identifier: MIT */
/*
 * A request/reply connection to a service, shared by the library's two
 * clients (fencelined's in client.c, fl-displayd's in display.c): the
 * requests of any number of threads pipelined on one SOCK_SEQPACKET
 * connection per process, each reply routed to the thread that waits for
 * it by the sequence number its request carried. rpc.c's top comment says
 * why and how. Private to src/client.
 */
#ifndef FL_CLIENT_RPC_H
#define FL_CLIENT_RPC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"
#include "service.h"

/*
 * A request whose reply a thread waits for. Lives on that thread's stack,
 * linked in the connection's list until answered or failed; every field
 * is under the connection's lock.
 */
struct fl__rpc_waiter {
	uint32_t seq; /* the request's */
	void *buf; /* the whole reply, header included */
	size_t cap;
	int *fds; /* the reply's fds go here, the waiter's to close */
	unsigned int max_fds; /* more is -EPROTO */
	bool want_short; /* fds our full table dropped are no error (else -EMFILE) */
	/* Set by fl__rpc_await_locked(). */
	unsigned int generation; /* of the connection it was sent on */
	bool done;
	int n; /* the reply's length, or a negative errno */
	unsigned int nfds;
	bool cut; /* with want_short: fds were dropped */
	struct fl__rpc_waiter *next;
};

/*
 * What the owner of a connection adds; each is called under the lock and
 * may be NULL.
 */
struct fl__rpc_ops {
	const char *what; /* "daemon", "display": the debug log's topic */
	/* Every reply read, before it is routed (by its header's @seq). */
	void (*seen)(uint32_t seq);
	/*
	 * A reply no thread waits for: take it (@n bytes at @buf, and its
	 * @nfds @fds) and return true, or return false: the connection is out
	 * of step and dropped (the fds are closed then).
	 */
	bool (*unclaimed)(const unsigned char *buf, int n, int *fds, unsigned int nfds, bool cut);
	/* The connection is about to go: still open, unless its fd is -1 (the program took it). */
	void (*dropping)(void);
	/* It has gone, and its waiters have failed. */
	void (*dropped)(void);
};

struct fl__rpc {
	pthread_mutex_t lock; /* the connection's, and its owner's state */
	pthread_cond_t cond; /* a reply handed out, the reader or the connector done */
	const struct fl__rpc_ops *ops;
	unsigned char *rbuf; /* the reader's buffer (one reader at a time): the largest reply */
	size_t rbuf_cap;
	unsigned int room; /* the fds a reply may carry */
	int fd; /* -1 when not connected */
	struct fdid id; /* fd's identity, checked once per call */
	uint32_t seq; /* the last request's */
	atomic_uint generation; /* bumped for every new connection */
	struct fl__rpc_waiter *waiters;
	bool reading; /* a thread is in recvmsg() on @read_fd, the lock released */
	bool connecting; /* a thread connects, the lock released */
	int read_fd;
	/* A connection dropped while it was read: the reader closes it (-1: none). */
	int orphan_fd;
	struct fdid orphan_id;
};

/* A static connection's initialiser: @rbuf_ an array, the reader's buffer. */
#define FL__RPC_INIT(ops_, rbuf_, room_)                                                    \
	{                                                                                   \
		.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,        \
		.ops = (ops_), .rbuf = (rbuf_), .rbuf_cap = sizeof(rbuf_), .room = (room_), \
		.fd = -1, .read_fd = -1, .orphan_fd = -1                                    \
	}

/*
 * fl__rpc_live_locked() - is @rpc's fd still our connection? One fstat().
 * A number the program closed or took loses us the connection (dropped,
 * never closed: the number is the program's now).
 */
bool fl__rpc_live_locked(struct fl__rpc *rpc);

/*
 * fl__rpc_connect_locked() - make sure @rpc is connected
 * @connect: makes a connection that has said HELLO, run with the lock
 *	released (starting a service takes seconds, and threads that need no
 *	connection must not wait for it); returns its fd or a negative errno
 *
 * Threads that need a connection wait here for the one thread connecting,
 * as fork() does (fl__rpc_fork_prepare()).
 * Return: 1 for a new connection (seq 0, a new generation: the caller sets
 * up its own state for it under the lock), 0 if it was live, or a
 * negative errno from @connect.
 */
int fl__rpc_connect_locked(struct fl__rpc *rpc, int (*connect)(void *arg), void *arg);

/*
 * fl__rpc_send_locked() - send one request on the live connection
 * @h: its header; h->seq is set here
 * @flags: sendmsg() flags (MSG_DONTWAIT)
 *
 * Return: 0; -ECONNRESET (the service is gone: drop the connection);
 * -ETIMEDOUT (a send that SO_SNDTIMEO ended); -EPROTO (sent in part);
 * another sendmsg() error (-EBADF: one of @fds is not open).
 */
int fl__rpc_send_locked(struct fl__rpc *rpc, struct fl_msg_hdr *h, const void *body, size_t len,
			const int *fds, unsigned int nfds, int flags);

/*
 * fl__rpc_await_locked() - wait for the reply to the request @w names
 * @w: seq, buf, cap, fds, max_fds and want_short set; the rest is set here
 *
 * With the request just sent; the lock is released while waiting, and
 * whichever waiting thread reads hands each reply to its waiter. The
 * reply's fds are in @w->fds (@w->nfds of them, the caller's) when this
 * returns a length.
 * Return: the reply's length (its header not checked: fl__rpc_check()),
 * -EMFILE (our fd table could not take its fds; the connection stays),
 * -EPROTO (too long for @w->cap, or more fds than @w->max_fds), or the
 * connection's error (it is dropped already, or fl__rpc_lost_locked()
 * drops it): -ECONNRESET at once when another thread drops it.
 */
int fl__rpc_await_locked(struct fl__rpc *rpc, struct fl__rpc_waiter *w);

/* Connected: read one reply, or sleep while another thread reads. */
void fl__rpc_pump_locked(struct fl__rpc *rpc);

/* Connected: route the replies that have come already, never waiting for one. */
void fl__rpc_read_arrived_locked(struct fl__rpc *rpc);

/* Is @buf (@n bytes) the reply to @op numbered @seq? 0 or -EPROTO. */
int fl__rpc_check(const void *buf, int n, uint32_t op, uint32_t seq);

/* The status field of a reply that fl__rpc_check() accepted. */
int32_t fl__rpc_status(const void *reply);

/* Let go of the connection: its waiters fail with -ECONNRESET at once. */
void fl__rpc_drop_locked(struct fl__rpc *rpc);

/* After a failed wait: drop the connection of @generation if it is still the live one. */
void fl__rpc_lost_locked(struct fl__rpc *rpc, unsigned int generation);

/* Answer every waiting request with @err. */
void fl__rpc_fail_waiters_locked(struct fl__rpc *rpc, int err);

static inline unsigned int fl__rpc_generation(struct fl__rpc *rpc)
{
	return atomic_load(&rpc->generation);
}

/*
 * pthread_atfork() halves: prepare takes the lock once no thread is
 * connecting (a connection being made would be half the child's), parent
 * releases it; in the child, fl__rpc_forked_locked() closes the copy of
 * the parent's connection (the child makes its own on first use) and
 * forgets the parent's threads, leaving the lock held for the owner.
 */
void fl__rpc_fork_prepare(struct fl__rpc *rpc);
void fl__rpc_forked_locked(struct fl__rpc *rpc);

#endif /* FL_CLIENT_RPC_H */

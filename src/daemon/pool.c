/* SPDX-License-Identifier: MIT */
/*
 * The sync service's fence fds: pooled fds handed out ahead of use and
 * their index by inode, adopting the fds a client made, and making ours.
 */
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"
#include "host.h"
#include "util.h"

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
void fld_pool_index_add(struct client *c, struct pooled *p)
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

void fld_pool_index_del(struct pooled *p)
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
struct client *fld_pool_index_client(dev_t dev, ino_t ino)
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
void fld_pooled_drop(struct pooled *p, int status)
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

/*
 * Give a new fence the client's pair (@fds[0] sink, @fds[1] user end; both
 * consumed). A pair that is not one is a lying client: -EBADMSG.
 */
int fld_adopt(struct client *c, struct fl_fence *f, int *fds)
{
	int r;

	r = fld_objects_charge(c, false);
	if (r == 0 && (r = fld_fds_charge(c, 1, "a fence")) < 0)
		fld_objects_uncharge(c, false);
	if (r < 0) {
		fl__fd_pair_fail(fds[0], -EMFILE);
		close(fds[1]);
		fds[0] = fds[1] = -1;
		return -EMFILE;
	}
	atomic_fetch_add(&c->refs, 1);
	r = fl__fence_adopt_fds(f, fds[0], fds[1], fld_release_fence, c);
	fds[0] = fds[1] = -1;
	if (r < 0) {
		fld_objects_uncharge(c, false);
		fld_fds_sub(c, 1);
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
int fld_fence_fd_new(struct client *c, struct fl_fence *f, int *ret_fd)
{
	struct fl__sink *s;
	dev_t dev;
	ino_t ino;
	int r, sv[2];

	r = fld_objects_charge(c, false);
	if (r == 0 && (r = fld_fds_charge(c, 1, "a fence")) < 0)
		fld_objects_uncharge(c, false);
	if (r < 0)
		return -EMFILE;
	atomic_fetch_add(&c->refs, 1);
	if (fl__fence_pipes_ok()) {
		r = fl__fence_pipe_new(&s, ret_fd, NULL, NULL);
		/* Adopted while we hold the read end: its last close cannot come first. */
		if (r == 0 && (r = fl__fence_pipe_adopt(f, s, fld_release_fence, c)) < 0)
			close(*ret_fd);
	} else {
		r = fl__socketpair_cloexec(sv);
		if (r == 0 && (r = fl__fd_inode(sv[1], &dev, &ino)) < 0) {
			close(sv[0]);
			close(sv[1]);
		} else if (r == 0) {
			/* Closes the sink on failure. */
			r = fl__fence_adopt_sink(f, sv[0], dev, ino, fld_release_fence, c);
			if (r < 0)
				close(sv[1]);
			else
				*ret_fd = sv[1];
		}
	}
	if (r < 0) {
		fld_objects_uncharge(c, false);
		fld_fds_sub(c, 1);
		atomic_fetch_sub(&c->refs, 1);
	}
	return r;
}

/*
 * The reply to a request that made an fd (a fence's, a dump's, a
 * trace's): the status, with the fd on success (closed here).
 */
bool fld_reply_fd(struct client *c, const struct fl_msg_hdr *req, int r, int fd)
{
	struct fl_msg_reply ok = { 0, 0 };
	bool alive;

	if (r < 0)
		return fld_reply_status(c, req, r);
	alive = fld_reply_send(c, req, &ok, sizeof(ok), fd);
	close(fd);
	return alive;
}

/*
 * A fence fd we do not know may be a pooled fd whose FENCE_NEW its client
 * sent (one-way) before passing the fd on, still unread on that client's
 * connection: causality guarantees it is queued by now. So before
 * answering "not a fence", handle what that client has queued: for
 * FLD_FENCE_OF_READ_NS of our time at most, then the request at hand waits
 * for the rest, read in the maker's own turns (defer.c). Not a client
 * being read further up the stack (its FENCE_NEW, if any, came before the
 * request at hand); a disconnected one has fd -1.
 */
int fld_fence_of(struct client *c, int fd, struct fl_fence **ret)
{
	struct client *maker;
	bool can_wait = true;
	uint64_t start;
	dev_t dev;
	ino_t ino;

	*ret = NULL;
	if (fld_fd_identity(fd, &dev, &ino) < 0)
		return -ENOENT;
	if (fl__fence_from_key(dev, ino, ret) == 0)
		return 0;
	maker = fld_pool_index_client(dev, ino);
	/*
	 * A client with a DUMP parked is read once it is answered; the
	 * library sends DUMP only as a round trip, so no FENCE_NEW of its
	 * waits behind one (and answering it now would walk /proc in one go).
	 */
	if (!maker || maker == c || maker->reading || maker->parked)
		return -ENOENT;
	/*
	 * Others wait for that queue already (or the maker waits itself):
	 * this request waits with them, rather than read it for its own 1 ms
	 * (many victims of one flood would add up to as many).
	 */
	if ((maker->deferred || maker->queue_waits) && maker->conn.fd >= 0) {
		if (fld_defer(c, maker, dev, ino) == 0)
			return -EINPROGRESS;
		can_wait = false;
	}
	/* One request at a time, until that FENCE_NEW is handled (the fd leaves the index). */
	start = fl__now_ns();
	while (maker->conn.fd >= 0 && !maker->parked && !maker->deferred &&
	       fld_pool_index_client(dev, ino) == maker) {
		/*
		 * Past the budget: the request waits, unless it cannot (then
		 * as before, without asking again: nothing that refused it
		 * changes while we read).
		 */
		if (can_wait && fl__now_ns() - start >= FLD_FENCE_OF_READ_NS) {
			if (fld_defer(c, maker, dev, ino) == 0)
				return -EINPROGRESS;
			can_wait = false;
		}
		if (fld_client_readable(maker, 1, 0) == 0)
			break;
	}
	return fl__fence_from_key(dev, ino, ret);
}

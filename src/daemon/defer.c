/* SPDX-License-Identifier: MIT */
/*
 * Requests about a pooled fd whose FENCE_NEW (or FENCE_MERGE_INTO) its
 * maker has not had read yet (fld_fence_of()): the answer needs that
 * request read first, and the maker may have queued anything before it.
 * Reading the maker's queue inline held up every client for all of it (a
 * flood of costly one-way requests: 17-31 ms here), so the daemon reads it
 * only within a budget of its time (FLD_FENCE_OF_READ_NS) and then keeps
 * the request aside, its bytes and fds, and reads nothing more of its
 * client until it runs it again: once the maker's queue was found empty
 * since, FLD_OWNER_READ_MAX more of its requests were read, the fd's
 * request was read, or the maker is gone. Meanwhile the maker's queue is
 * read in its own turns, by debt like everyone's, so a flood holds up only
 * the requests about its own fds, as a step waits for its owner's
 * (kickwait.c). A client's requests still run in the order it sent them.
 *
 * The request runs again from the start, so a handler defers before it
 * changes anything (fld_fence_of() first, its -EINPROGRESS returned as
 * is). Waits never form a cycle (each would wait for the other's reads,
 * which its own wait stops): fld_defer() refuses one that would.
 *
 * The fds a kept request holds (up to FL_PROTO_MAX_FDS) are daemon fds
 * held on its client's behalf, charged to its quotas like any other while
 * it is kept: a client without room for them is not kept waiting but read
 * inline, as before there was a budget (a process with a thousand
 * connections could otherwise make the daemon hold 4 fds more on each,
 * beyond its quota).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"

struct deferred {
	struct client *c; /* whose request; a reference */
	struct client *maker; /* whose queue it waits for; a reference */
	dev_t dev; /* the pooled fd it asks about */
	ino_t ino;
	struct fld_queue_mark mark; /* the maker's, when it was kept */
	bool ready;
	struct fl_proto_request q;
	int fds[FL_PROTO_MAX_FDS];
	int nfds;
	unsigned int charged; /* of them, held on @c's quotas until it runs again */
	struct deferred *next;
};

static struct deferred *deferred;
/* Asked for by fld_defer() during the request at hand, taken by fld_defer_take(). */
static struct deferred *asked;

int fld_defer(struct client *c, struct client *maker, dev_t dev, ino_t ino)
{
	unsigned int need = fld_rx_nfds();
	struct deferred *d;

	if (asked || c->deferred || maker == c || maker->conn.fd < 0)
		return -EBUSY;
	/* A maker that waits, through others maybe, for @c's reads would wait for ever. */
	for (struct client *m = maker; m->deferred; m = m->deferred->maker)
		if (m->deferred->maker == c)
			return -EDEADLK;
	/*
	 * Its fds are held for it meanwhile: within its quotas, or it is not
	 * kept. Asked last, so that only a request that would be kept is
	 * logged as refused.
	 */
	if (need && fld_fds_room_for(c, need) < need) {
		fld_fds_refused(c, "the fds of a request kept aside");
		return -EMFILE;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->c = c;
	d->maker = maker;
	d->dev = dev;
	d->ino = ino;
	d->mark = fld_queue_mark(maker);
	asked = d;
	return 0;
}

bool fld_defer_take(struct client *c, const struct fl_proto_request *q, int *fds, int nfds)
{
	struct deferred *d = asked;

	if (!d || d->c != c)
		return false;
	asked = NULL;
	d->q = *q;
	/* Its fds wait with it (a few: its client sends nothing more meanwhile). */
	for (int k = 0; k < nfds; k++) {
		d->fds[k] = fds[k];
		fds[k] = -1;
	}
	d->nfds = nfds;
	for (int k = 0; k < nfds; k++)
		d->charged += d->fds[k] >= 0;
	fld_fds_add(c, d->charged);
	atomic_fetch_add(&c->refs, 1);
	atomic_fetch_add(&d->maker->refs, 1);
	d->maker->queue_waits++;
	c->deferred = d;
	d->next = deferred;
	deferred = d;
	return true;
}

void fld_defer_drop_asked(void)
{
	free(asked);
	asked = NULL;
}

/* Has @d's maker done what it waits for? */
static bool defer_done(const struct deferred *d)
{
	return fld_queue_passed(d->maker, d->mark, FLD_OWNER_READ_MAX) ||
	       fld_pool_index_client(d->dev, d->ino) != d->maker;
}

void fld_defer_read(struct client *maker)
{
	for (struct deferred *d = deferred; d; d = d->next)
		if (d->maker == maker && !d->ready && defer_done(d))
			d->ready = true;
}

bool fld_defer_any_ready(void)
{
	for (struct deferred *d = deferred; d; d = d->next)
		if (d->ready)
			return true;
	return false;
}

/* Unlink @d: its client reads again. */
static void unlink_deferred(struct deferred *d)
{
	for (struct deferred **p = &deferred; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	d->c->deferred = NULL;
	d->maker->queue_waits--;
	/* Its fds are the request's again: closed or taken as it runs, charged as it does. */
	fld_fds_sub(d->c, d->charged);
	d->charged = 0;
}

static void free_deferred(struct deferred *d)
{
	for (int k = 0; k < d->nfds; k++)
		if (d->fds[k] >= 0)
			fld_close_received(d->c, d->fds[k]);
	fld_client_unref(d->maker);
	fld_client_unref(d->c);
	free(d);
}

void fld_defer_run(void)
{
	/* One at a time from the list's head: running one may keep another, or end a client. */
	for (;;) {
		struct deferred *d = deferred;

		while (d && !d->ready)
			d = d->next;
		if (!d)
			return;
		unlink_deferred(d);
		if (d->c->conn.fd >= 0)
			fld_client_rerun(d->c, &d->q, d->fds, d->nfds);
		free_deferred(d);
	}
}

void fld_defer_client_gone(struct client *c)
{
	for (struct deferred *d = deferred; d; d = d->next)
		if (d->maker == c)
			d->ready = true; /* runs again, and finds the fd no fence */
	for (struct deferred *d = deferred; d;) {
		struct deferred *next = d->next;

		if (d->c == c) {
			unlink_deferred(d);
			free_deferred(d);
		}
		d = next;
	}
}

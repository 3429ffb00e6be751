/* SPDX-License-Identifier: MIT */
/*
 * The sync service: timelines, fences and their fds (HELLO, TIMELINE_*,
 * FENCE_*, POOL_FILL) on the unchanged in-process core; the daemon only
 * adds fds that clients made (host.h) and per-client accounting.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/sync_file.h>

#include "daemon.h"
#include "host.h"
#include "util.h"

static int bind_handle(struct client *c, int fd, uint64_t id);

/* The sync service's client_gone: its pool, counters, kick pipe and handles. */
static void sync_client_gone(struct fl_server_conn *conn, void *data)
{
	struct client *c = client_of(conn);

	/* Steps waiting for its kicks' ends: closed with it, or given back before it went. */
	fld_kickwait_client_gone(c);
	/* Its request kept aside goes; those waiting for its queue run again. */
	fld_defer_client_gone(c);
	/* Its pooled fds were ours on its behalf. */
	fld_fds_sub(c, c->pool_count);
	/* Pooled fds it never used read as the connection's end. */
	for (; c->pool_count; c->pool_count--, c->pool_head++) {
		fld_pool_index_del(&c->pool[c->pool_head % FL_PROTO_POOL_MAX]);
		fld_pooled_drop(&c->pool[c->pool_head % FL_PROTO_POOL_MAX], -ECONNRESET);
	}
	fld_shared_disown(c);
	if (c->kick >= 0) {
		/* Its owner's watcher sees the hang-up and closes what it kept. */
		close(c->kick);
		close(c->kick_r);
		c->kick = c->kick_r = -1;
		fld_fds_sub(c, 2);
	}
	free(c->handles);
	c->handles = NULL;
	c->nhandles = c->handles_cap = 0;
}

/* The sw_sync timeline behind a client's fd, or -ENOTTY as the kernel would say. */
static int timeline_of(int fd, struct fl_timeline **ret)
{
	dev_t dev;
	ino_t ino;
	int r = fld_fd_identity(fd, &dev, &ino);

	if (r == 0)
		r = fl__timeline_from_key(dev, ino, ret);
	if (r < 0)
		return -ENOTTY;
	if (!fld_timeline_is_sw_sync(*ret)) {
		fl_timeline_unref(*ret);
		return -ENOTTY;
	}
	return 0;
}

/* The status page's fd (fl__status_page_create()), -1 without one. */
int fld_status_page_fd = -1;

/* Is @fd a pipe whose every write end is closed? */
static bool pipe_at_eof(int fd)
{
	struct pollfd pf = { .fd = fd, .events = 0 };
	struct fl__fd_stat st;

	return fld_fd_stat(fd, &st) == 0 && S_ISFIFO(st.mode) && poll(&pf, 1, 0) == 1 &&
	       (pf.revents & POLLHUP);
}

/* @c's kick pipe, made on first use. Return: 0, or -EMFILE over its quota, or a pipe2() error. */
static int kick_open(struct client *c)
{
	int p[2];

	if (c->kick >= 0)
		return 0;
	if (fld_fds_charge(c, 2, "its kick pipe") < 0)
		return -EMFILE;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		fld_fds_sub(c, 2);
		return -errno;
	}
	/* Nobody but root may reopen it through /proc to write kicks of its own. */
	(void)fchmod(p[0], 0);
	c->kick_r = p[0];
	c->kick = p[1];
	return 0;
}

static bool op_timeline_create(struct fl_server_conn *conn, const struct fl_proto_request *q,
			       int *req_fds)
{
	struct client *c = client_of(conn);
	struct fl_msg_bind_reply rep = { { 0, 0 }, UINT32_MAX, 0 };
	struct fl_timeline *tl;
	struct shared_tl *s;
	int r, fds[2] = { -1, -1 };
	bool ok;

	if (fld_objects_charge(c, true) < 0)
		return fld_reply_status(c, &q->hdr, -EMFILE);
	if (fld_fds_charge(c, 1, "a timeline") < 0) {
		fld_objects_uncharge(c, true);
		return fld_reply_status(c, &q->hdr, -EMFILE);
	}
	fld_shared_collect();
	r = fld_shared_timeline_create(c, q->u.timeline_create.name, q->u.timeline_create.flags,
				       &tl, &fds[0], &s);
	if (r < 0) {
		fld_objects_uncharge(c, true);
		fld_fds_sub(c, 1);
	} else {
		/* Bound already, so its first fence needs no TIMELINE_BIND. */
		int h = bind_handle(c, fds[0], fl_timeline_get_id(tl));

		if (h >= 0)
			rep.handle = (uint32_t)h;
		/* Without a handle it could not name it in TIMELINE_SYNC. */
		fds[1] = fld_shared_own(c, s, tl, fds[0], h >= 0);
		if (fds[1] >= 0)
			rep.flags = FL_BIND_F_SHARED;
		fld_trace_timeline_new(c->conn.pid, fl_timeline_get_id(tl),
				       fl_timeline_get_name(tl), 0);
		fl_timeline_unref(tl); /* the fd is the only handle */
	}
	if (r < 0)
		return fld_reply_status(c, &q->hdr, r);

	ok = fld_reply_send_fds(c, &q->hdr, &rep, sizeof(rep), fds, fds[1] >= 0 ? 2 : 1);
	/* The client's copies (if it got them) are the handle and its counter now. */
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return ok;
}

/* TIMELINE_INC, and TIMELINE_INC_AT, whose points get the caller's timestamp. */
static bool op_timeline_inc(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct fl_timeline *tl;
	int r = timeline_of(fds[0], &tl);
	bool at = q->hdr.op == FL_OP_TIMELINE_INC_AT;

	fld_kickwait_begin(c);
	if (r == 0) {
		r = fld_timeline_add(c, tl,
				     at ? q->u.timeline_inc_at.count : q->u.timeline_inc.count,
				     at ? q->u.timeline_inc_at.timestamp_ns : 0);
		fl_timeline_unref(tl);
	}
	return fld_kickwait_reply(c, &q->hdr, r);
}

/* TIMELINE_FAIL: the reply's value is how many points failed. */
static bool op_timeline_fail(struct fl_server_conn *conn, const struct fl_proto_request *q,
			     int *fds)
{
	struct client *c = client_of(conn);
	struct fl_timeline *tl;
	int r = timeline_of(fds[0], &tl);

	/*
	 * As an inc: when it returns, the points it failed are failed for
	 * everyone, the owner's kept fences too (their fds ready).
	 */
	fld_kickwait_begin(c);
	if (r == 0) {
		r = fld_timeline_fail(c, tl, q->u.timeline_fail.status);
		fl_timeline_unref(tl);
	}
	return fld_kickwait_reply_value(c, &q->hdr, r < 0 ? r : 0, r < 0 ? 0 : (uint64_t)r);
}

static bool op_timeline_get_value(struct fl_server_conn *conn, const struct fl_proto_request *q,
				  int *fds)
{
	struct client *c = client_of(conn);
	struct fl_msg_value_reply rep = { { 0, 0 }, 0 };
	struct fl_timeline *tl;
	int r = timeline_of(fds[0], &tl);

	if (r == 0) {
		fld_shared_sync_tl(tl);
		r = fld_timeline_get_value(tl, &rep.value);
		fl_timeline_unref(tl);
	}
	if (r < 0)
		return fld_reply_status(c, &q->hdr, r);
	return fld_reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
}

static bool op_fence_create(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct fl_timeline *tl;
	struct fl_fence *f;
	int r;

	/*
	 * The pair is written to and closed wherever the fence goes: only
	 * sockets may be (anything else could block the loop: received.c).
	 */
	if (!fld_received_inline(fds[1]) || !fld_received_inline(fds[2]))
		return fld_reject(c, &q->hdr, -EBADMSG,
				  "FENCE_CREATE with fds that are not a socket pair");
	r = timeline_of(fds[0], &tl);
	if (r == 0) {
		/* Made before we catch up with the counter, as in op_fence_new(). */
		r = fld_fence_create(tl, q->u.fence_create.value, q->u.fence_create.name, &f);
		if (r == 0) {
			r = fld_adopt(c, f, &fds[1]);
			if (r == 0)
				fld_trace_fence_new(c->conn.pid, f, "create", 0, 0);
			fl_fence_unref(f);
		}
		/* Nobody else holds its sink: ours to complete. */
		if (r == 0)
			fld_shared_must_tl(tl, q->u.fence_create.value);
		fl_timeline_unref(tl);
	}
	if (r == -EBADMSG)
		return fld_reject(c, &q->hdr, r,
				  "FENCE_CREATE with fds that are not a socket pair");
	if (r < 0 && fds[1] >= 0) {
		/* One-way: the fence fd carries the answer. */
		fl__fd_pair_fail(fds[1], r);
		fds[1] = -1;
	}
	/* A one-way create has its answer in the fence fd: a reply would be unexpected. */
	if (q->hdr.flags & FL_MSG_F_REPLY)
		return fld_reply_status(c, &q->hdr, r);
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

static bool op_timeline_bind(struct fl_server_conn *conn, const struct fl_proto_request *q,
			     int *fds)
{
	struct client *c = client_of(conn);
	struct fl_msg_bind_reply rep = { { 0, 0 }, 0, 0 };
	struct fl_timeline *tl;
	uint64_t id;
	int r = timeline_of(fds[0], &tl);

	if (r < 0)
		return fld_reply_status(c, &q->hdr, r);
	id = fl_timeline_get_id(tl);
	fl_timeline_unref(tl);
	r = bind_handle(c, fds[0], id);
	if (r < 0)
		return fld_reply_status(c, &q->hdr, r);
	rep.handle = (uint32_t)r;
	return fld_reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
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
static bool op_pool_fill(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	/* FL_POOL_F_INODES: each pipe's inode number after the reply (sync 5). */
	struct {
		struct fl_msg_pool_reply rep;
		uint64_t ino[FL_PROTO_POOL_FILL_MAX];
	} body = { { { 0, 0 }, c->pool_slot + c->pool_count, 0 }, { 0 } };
	struct fl_msg_pool_reply *rep = &body.rep;
	/* The fence fds, then (FL_POOL_F_SIGNAL_ENDS) copies of our ends, and the kick pipe. */
	int user[2 * FL_PROTO_POOL_FILL_MAX + 1];
	uint32_t want = q->u.pool_fill.count, n = 0;
	bool ends = q->u.pool_fill.flags & FL_POOL_F_SIGNAL_ENDS, alive;
	bool pipes = fl__fence_pipes_ok();
	int r = 0;

	if (want > FL_PROTO_POOL_MAX - c->pool_count)
		return fld_reply_status(c, &q->hdr, -ENOSPC);
	/* Pipe signal ends are of use only with a kick pipe (given_done()); without one, none. */
	if (ends && pipes && kick_open(c) < 0)
		ends = false;
	/* Each pooled pair's sink is a daemon fd held for it: as many as its quotas allow. */
	want = FL_MIN(want, fld_fds_room(c));
	if (!want)
		return fld_reply_status(c, &q->hdr, fld_fds_refused(c, "fence fds for its pool"));
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
			body.ino[n] = (uint64_t)p->ino;
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
		return fld_reply_status(c, &q->hdr, r);
	rep->count = n;
	if (ends)
		memmove(&user[n], &user[FL_PROTO_POOL_FILL_MAX], n * sizeof(int));
	/* Last, so that it is the first to go where the client's fd table is full. */
	if (ends && pipes) {
		user[2 * n] = c->kick_r;
		c->kick_unread = false; /* read again, by a watcher this fill starts */
	}
	alive = fld_reply_send_fds(c, &q->hdr, &body,
				   sizeof(*rep) +
					   (pipes && (q->u.pool_fill.flags & FL_POOL_F_INODES)
						    ? n * sizeof(uint64_t)
						    : 0),
				   user, ends ? 2 * n + (pipes ? 1 : 0) : n);
	/* A pipe's signal end sent is the core's own (fl__fence_pipe_end()): kept. */
	for (uint32_t i = 0; i < (ends && !pipes ? 2 * n : n); i++)
		close(user[i]);
	if (!alive) {
		for (uint32_t i = 0; i < n; i++)
			fld_pooled_drop(
				&c->pool[(c->pool_head + c->pool_count + i) % FL_PROTO_POOL_MAX],
				-ECONNRESET);
		return false;
	}
	for (uint32_t i = 0; i < n; i++)
		fld_pool_index_add(
			c, &c->pool[(c->pool_head + c->pool_count + i) % FL_PROTO_POOL_MAX]);
	c->pool_count += n;
	fld_fds_add(c, n);
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
static bool op_timeline_signal(struct fl_server_conn *conn, const struct fl_proto_request *q,
			       int *fds)
{
	struct client *c = client_of(conn);
	struct fl_timeline *tl;
	int r;

	if (q->u.timeline_signal.handle >= c->nhandles)
		return fld_reject(c, &q->hdr, -EBADMSG,
				  "TIMELINE_SIGNAL names a timeline it did not bind");
	r = handle_timeline(c, q->u.timeline_signal.handle, &tl);
	fld_kickwait_begin(c);
	if (r == 0) {
		r = fld_timeline_add(c, tl, q->u.timeline_signal.count, 0);
		fl_timeline_unref(tl);
	}
	return fld_kickwait_reply(c, &q->hdr, r);
}

/*
 * TIMELINE_SYNC: the owner added to the counter and completed its own
 * fences; we complete every other point.
 */
static bool op_timeline_sync(struct fl_server_conn *conn, const struct fl_proto_request *q,
			     int *fds)
{
	struct client *c = client_of(conn);
	struct fl_timeline *tl;
	struct shared_tl *s;
	int r;

	if (q->u.timeline_sync.handle >= c->nhandles)
		return fld_reject(c, &q->hdr, -EBADMSG,
				  "TIMELINE_SYNC names a timeline it did not bind");
	r = handle_timeline(c, q->u.timeline_sync.handle, &tl);
	if (r == 0) {
		s = fld_shared_find(tl);
		r = s ? fld_shared_sync(s, tl) : -EINVAL;
		if (r == 0 && s->owner == c)
			fld_shared_holds_settle(s, tl);
		fl_timeline_unref(tl);
	}
	return fld_reply_status(c, &q->hdr, r);
}

/*
 * The pooled fd @p becomes @f's (FENCE_NEW, FENCE_MERGE_INTO), @f's object
 * charged to @c already; traced as @how with its inputs' ids. On failure
 * the charges are taken back (the core dropped the pooled end).
 */
static int pooled_adopt(struct client *c, struct fl_fence *f, struct pooled *p, const char *how,
			uint64_t ida, uint64_t idb)
{
	int r;

	atomic_fetch_add(&c->refs, 1);
	r = p->pipe ? fl__fence_pipe_adopt(f, p->pipe, fld_release_fence, c)
		    : fl__fence_adopt_sink(f, p->sink, p->dev, p->ino, fld_release_fence, c);
	if (r == 0) {
		fld_trace_fence_new(c->conn.pid, f, how, ida, idb);
	} else {
		fld_objects_uncharge(c, false);
		fld_fds_sub(c, 1);
		atomic_fetch_sub(&c->refs, 1);
	}
	return r;
}

/* FENCE_NEW: the oldest pooled fd becomes a fence of a bound timeline. */
static bool op_fence_new(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	const struct fl_msg_fence_new *b = &q->u.fence_new;
	struct fl_timeline *tl = NULL;
	struct fl_fence *f = NULL;
	struct shared_tl *s;
	struct pooled p;
	int r;

	if (!c->pool_count || b->slot != c->pool_slot)
		return fld_reject(c, &q->hdr, -EBADMSG, "FENCE_NEW names a slot it was not given");
	fld_pool_index_del(&c->pool[c->pool_head % FL_PROTO_POOL_MAX]);
	p = c->pool[c->pool_head % FL_PROTO_POOL_MAX];
	c->pool_head++;
	c->pool_count--;
	c->pool_slot++;
	if (b->handle >= c->nhandles) {
		fld_pooled_drop(&p, -EBADMSG);
		fld_fds_sub(c, 1);
		return fld_reject(c, &q->hdr, -EBADMSG,
				  "FENCE_NEW names a timeline it did not bind");
	}
	r = handle_timeline(c, b->handle, &tl);
	if (r < 0)
		tl = NULL;
	/* The pooled sink was counted already: it is the fence's daemon fd now, or closed below. */
	if (r == 0)
		r = fld_objects_charge(c, false);
	/*
	 * Made before we catch up with the owner's counter (shared_must()
	 * does, below): the owner may have signalled past this value after
	 * sending this request, and then the fence signals with the others,
	 * one timestamp for all, as a kernel fence made before the INC would.
	 */
	if (r == 0 && (r = fld_fence_create(tl, b->value, b->name, &f)) < 0)
		fld_objects_uncharge(c, false);
	if (r == 0) {
		r = pooled_adopt(c, f, &p, "create", 0, 0);
	} else {
		/*
		 * The failure's record goes into a pipe whose signal end the
		 * owner may keep: flagged first, so that its step looks before
		 * it writes (a timeline that is gone flagged it as it died).
		 */
		if (tl)
			fld_shared_mark_failing_tl(tl);
		fld_pooled_drop(&p, r);
		fld_fds_sub(c, 1);
	}
	/*
	 * The owner completes a fence whose signal end it kept when its
	 * counter gets there; it can only claim that for its own timeline and
	 * a slot that came with an end (else it would only delay its own).
	 * A pipe's: our write end goes, so the owner's close is the fd's
	 * readiness; owner_end_closed() then checks that it was a completion.
	 */
	if (r == 0 && (s = fld_shared_find(tl))) {
		if (!((q->hdr.flags & FL_MSG_F_KEPT) && p.end_given && s->owner == c)) {
			fld_shared_must(s, tl, b->value);
		} else if (p.pipe) {
			fl__fence_pipe_give(p.pipe, b->slot);
			/*
			 * Another process may have reached it before the owner
			 * could see: then the owner's end must go. Only this
			 * fence is told: the others the catch-up completes,
			 * the owner's counter reached. Not when only the
			 * owner ever stepped the timeline (its own step
			 * completes the ends it keeps, made before that step),
			 * nor when the catch-up found the owner's end closed
			 * already: a kick would only wake the owner's watcher
			 * for nothing.
			 */
			bool end_seen = fld_shared_sync_end_seen(s, tl, f);

			if (s->stepped_by_others && !end_seen && fl_fence_get_status(f) != 0)
				fld_kick_send(c, b->slot, f);
		}
	}
	fl_fence_unref(f);
	if (tl)
		fl_timeline_unref(tl);
	if (q->hdr.flags & FL_MSG_F_REPLY)
		return fld_reply_status(c, &q->hdr, r);
	return true;
}

/* FENCE_RETURN: an owner gives a kept pipe signal end back before it disconnects. */
static bool op_fence_return(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
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
		fld_shared_fence_points(f, true, NULL);
		fl_fence_unref(f);
	}
	return true;
}

/*
 * The fences behind @fds[0] and @fds[1] in *@a and *@b (references).
 * Return: 0, -ENOTTY (a is no fence), -ENOENT (b is none) or -EINPROGRESS
 * (the request waits: fld_fence_of()), with nothing held on error.
 */
static int fences_of(struct client *c, const int *fds, struct fl_fence **a, struct fl_fence **b)
{
	int r = fld_fence_of(c, fds[0], a);

	if (r < 0)
		return r == -EINPROGRESS ? r : -ENOTTY;
	r = fld_fence_of(c, fds[1], b);
	if (r < 0) {
		fl_fence_unref(*a);
		*a = NULL;
		return r == -EINPROGRESS ? r : -ENOENT;
	}
	return 0;
}

/*
 * The merge of @a and @b (whose references it drops) in *@ret (FENCE_MERGE,
 * FENCE_MERGE_INTO), with their ids for the trace. @oneway: FENCE_MERGE_INTO,
 * which does not catch up with @c's own counters (fld_shared_fence_points()).
 * Return: 0 or the merge's error.
 */
static int merge_fences(struct client *c, struct fl_fence *a, struct fl_fence *b, const char *name,
			uint32_t flags, bool oneway, struct fl_fence **ret, uint64_t *ret_ida,
			uint64_t *ret_idb)
{
	const struct client *mine = oneway ? c : NULL;
	int r;

	fld_shared_fence_points(a, false, mine);
	fld_shared_fence_points(b, false, mine);
	r = fl_fence_merge(a, b, name, flags, ret);
	/* The merged fence has a sink of its own, which only we write. */
	if (r == 0)
		fld_shared_fence_points(*ret, true, mine);
	*ret_ida = fl__fence_id(a);
	*ret_idb = fl__fence_id(b);
	fl_fence_unref(a);
	fl_fence_unref(b);
	return r;
}

static bool op_fence_merge(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct fl_fence *m = NULL;
	struct fl_fence *a, *b;
	uint64_t ida, idb;
	int r, fd = -1;

	r = fences_of(c, fds, &a, &b);
	if (r == -EINPROGRESS)
		return true;
	if (r == 0)
		r = merge_fences(c, a, b, q->u.fence_merge.name, q->u.fence_merge.flags, false, &m,
				 &ida, &idb);
	/*
	 * A client merges without asking us when the page holds its inputs'
	 * records (FENCE_MERGE_INTO): one evicted by newer fences, put back,
	 * lets its next merge of the same fence go one-way again.
	 */
	for (int i = 0; r == 0 && i < 2; i++) {
		struct fl__fd_stat st;

		if (fld_fd_stat(fds[i], &st) == 0 && S_ISFIFO(st.mode))
			fl__fence_pipe_republish(st.dev, st.ino);
	}
	if (r == 0) {
		r = fld_fence_fd_new(c, m, &fd);
		if (r == 0)
			fld_trace_fence_new(c->conn.pid, m, "merge", ida, idb);
		fl_fence_unref(m);
	}
	return fld_reply_fd(c, &q->hdr, r, fd);
}

/*
 * FENCE_MERGE_INTO: FENCE_MERGE made into the oldest pooled fd, one-way
 * (the client returned that fd already). Until this runs the fd reads
 * active, as a pooled fd does, so nobody sees it signalled before its
 * inputs; a request about it from another client finds it through the
 * pool index (fld_fence_of()). Inputs that are no fences by now (one
 * went away in a race) fail it with -ENOENT: it never signals.
 */
static bool op_fence_merge_into(struct fl_server_conn *conn, const struct fl_proto_request *q,
				int *fds)
{
	struct client *c = client_of(conn);
	const struct fl_msg_fence_merge_into *b = &q->u.fence_merge_into;
	struct fl_fence *m = NULL;
	struct fl_fence *in_a, *in_b;
	struct pooled p;
	uint64_t ida = 0, idb = 0;
	int r;

	if (!c->pool_count || b->slot != c->pool_slot)
		return fld_reject(c, &q->hdr, -EBADMSG,
				  "FENCE_MERGE_INTO names a slot it was not given");
	/* Before the slot is taken: the request may have to run again. */
	r = fences_of(c, fds, &in_a, &in_b);
	if (r == -EINPROGRESS)
		return true;
	fld_pool_index_del(&c->pool[c->pool_head % FL_PROTO_POOL_MAX]);
	p = c->pool[c->pool_head % FL_PROTO_POOL_MAX];
	c->pool_head++;
	c->pool_count--;
	c->pool_slot++;
	if (r == 0)
		r = merge_fences(c, in_a, in_b, b->name, b->flags, true, &m, &ida, &idb);
	if (r == -ENOTTY)
		r = -ENOENT;
	/* The pooled sink was counted already, as FENCE_NEW's. */
	if (r == 0 && (r = fld_objects_charge(c, false)) == 0) {
		r = pooled_adopt(c, m, &p, "merge", ida, idb);
	} else {
		fld_pooled_drop(&p, r);
		fld_fds_sub(c, 1);
	}
	if (m)
		fl_fence_unref(m);
	return true;
}

/*
 * A signalled one-point pipe fence tells its own time: the record in it
 * (copied out, left for its holders) is the one its completer wrote, an
 * owner's step stamped with the time the owner gave it. Our catch-up may
 * have come after several of the owner's steps and given their points the
 * last one's stamp; the record has this fence's. Taken only if it is not
 * after ours (the owner can only relabel its own timeline, and never
 * later than we saw the step), but for a born-signalled fence's, which is
 * its creation's (fl__pipe_stamp_of()).
 */
static void owner_stamp(int fd, struct fl_fence_info *info, struct fl_sync_pt_info *pt)
{
	if (info->status != 1 || info->num_points != 1)
		return;
	info->timestamp_ns = fl__pipe_stamp_of(fd, info->timestamp_ns);
	if (pt)
		pt->timestamp_ns = info->timestamp_ns;
}

static bool op_fence_info(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	unsigned char buf[FL_PROTO_MAX_REPLY];
	struct fl_msg_info_reply rep;
	struct fl_sync_pt_info *pts = NULL;
	struct fl_fence_info info;
	struct fl__fd_stat st;
	struct fl_fence *f;
	uint32_t first = q->u.fence_info.first, want = q->u.fence_info.max, n;
	int r;

	r = fld_fence_of(c, fds[0], &f);
	if (r == -EINPROGRESS)
		return true;
	if (r < 0)
		return fld_reply_status(c, &q->hdr, -ENOTTY);
	fld_shared_sync_fence(f);
	/*
	 * An owner's pipe fence whose every write end is closed reads as
	 * ready: never answer "active" for it (its reader would spin), even
	 * if the end's EPOLLHUP is still queued in our loop.
	 */
	if (fl_fence_get_status(f) == 0 && pipe_at_eof(fds[0]))
		fld_owner_end_closed(f);
	n = (uint32_t)fl_fence_get_num_points(f);
	if (first > n) {
		fl_fence_unref(f);
		return fld_reply_status(c, &q->hdr, -EINVAL);
	}
	want = FL_MIN(want, n - first);
	if (first + want) {
		pts = calloc(first + want, sizeof(*pts));
		if (!pts) {
			fl_fence_unref(f);
			return fld_reply_status(c, &q->hdr, -ENOMEM);
		}
	}
	r = fl_fence_get_info(f, &info, pts, first + want);
	fl_fence_unref(f);
	if (r < 0) {
		free(pts);
		return fld_reply_status(c, &q->hdr, r);
	}
	owner_stamp(fds[0], &info, first == 0 && want ? pts : NULL);
	/*
	 * Asked because its holders found no record (evicted by newer
	 * fences): publish it again, before the answer, so that their next
	 * info is read from the page. A no-op where the record is there.
	 */
	if (info.status == FL_STATUS_ACTIVE && fld_fd_stat(fds[0], &st) == 0 && S_ISFIFO(st.mode))
		fl__fence_pipe_republish(st.dev, st.ino);
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
	return fld_reply_send(c, &q->hdr, buf, sizeof(rep) + want * sizeof(struct fl_msg_point),
			      -1);
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
static bool op_fence_import(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct fl_fence *f;
	int r, fd = -1;

	/*
	 * The import's ioctl() would be the file's own: a FUSE file's is a
	 * request its server may never answer. procfs names a sync_file
	 * without asking any filesystem; anything else is left to the loop.
	 */
	if (!is_sync_file(fds[0]))
		return fld_reply_status(c, &q->hdr, -EINVAL);
	r = fl_sync_file_import(fds[0], q->u.fence_import.name, &f);
	close(fds[0]); /* the import took its own copy; an anonymous inode's close never waits */
	fds[0] = -1;
	if (r == 0) {
		r = fld_fence_fd_new(c, f, &fd);
		if (r == 0)
			fld_trace_fence_new(c->conn.pid, f, "import", 0, 0);
		fl_fence_unref(f);
	}
	return fld_reply_fd(c, &q->hdr, r, fd);
}

/* A deadline for the fence behind @fd (FENCE_SET_DEADLINE, FENCE_HINT_DEADLINE). */
static int set_deadline(struct client *c, int fd, uint64_t deadline_ns)
{
	struct fl_fence *f;
	int r;

	r = fld_fence_of(c, fd, &f);
	if (r < 0)
		return r == -EINPROGRESS ? r : -ENOTTY;
	/* Points the owner has completed are not told: the kernel skips signalled ones. */
	fld_shared_sync_fence(f);
	r = fl_fence_set_deadline(f, deadline_ns);
	if (r == 0)
		fld_trace_deadline(c->conn.pid, fl__fence_id(f), deadline_ns);
	fl_fence_unref(f);
	return r;
}

static bool op_fence_set_deadline(struct fl_server_conn *conn, const struct fl_proto_request *q,
				  int *fds)
{
	struct client *c = client_of(conn);
	int r = set_deadline(c, fds[0], q->u.fence_set_deadline.deadline_ns);

	return r == -EINPROGRESS || fld_reply_status(c, &q->hdr, r);
}

/*
 * FENCE_HINT_DEADLINE: FENCE_SET_DEADLINE without a reply. The client
 * sends it only for an fd the status page shows as ours, so the errors it
 * would have had (-ENOTTY) are the kernel's synchronous ones, said already.
 */
static bool op_fence_hint_deadline(struct fl_server_conn *conn, const struct fl_proto_request *q,
				   int *fds)
{
	(void)set_deadline(client_of(conn), fds[0], q->u.fence_set_deadline.deadline_ns);
	return true;
}

static bool op_fence_get_deadline(struct fl_server_conn *conn, const struct fl_proto_request *q,
				  int *fds)
{
	struct client *c = client_of(conn);
	struct fl_msg_value_reply rep = { { 0, 0 }, 0 };
	struct fl_fence *f;
	int r;

	r = fld_fence_of(c, fds[0], &f);
	if (r == -EINPROGRESS)
		return true;
	if (r < 0)
		return fld_reply_status(c, &q->hdr, -ENOTTY);
	r = fl_fence_get_deadline(f, &rep.value);
	fl_fence_unref(f);
	if (r < 0)
		return fld_reply_status(c, &q->hdr, r);
	return fld_reply_send(c, &q->hdr, &rep, sizeof(rep), -1);
}

/* KICK_ACK: the owner closed the ends of the kicks it read (kickwait.c). */
static bool op_kick_ack(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	(void)fds;
	fld_kickwait_ack(client_of(conn), q->u.kick_ack.count);
	return true;
}

/*
 * The services' tables (service.h): each op's handler, the header flags
 * it accepts and the fds it comes with. The numbers of the three services
 * interleave (the protocol grew one op at a time), so each table spans its
 * service's range with holes that another service fills.
 */
#define SYNC_FIRST FL_PROTO_SYNC_FIRST
static const struct fl_server_op sync_ops[] = {
	[FL_OP_TIMELINE_CREATE - SYNC_FIRST] = { op_timeline_create },
	[FL_OP_TIMELINE_INC - SYNC_FIRST] = { op_timeline_inc, 0, 1 },
	[FL_OP_TIMELINE_GET_VALUE - SYNC_FIRST] = { op_timeline_get_value, 0, 1 },
	[FL_OP_FENCE_CREATE - SYNC_FIRST] = { op_fence_create, FL_MSG_F_REPLY, 3 },
	[FL_OP_FENCE_MERGE - SYNC_FIRST] = { op_fence_merge, 0, 2 },
	[FL_OP_FENCE_INFO - SYNC_FIRST] = { op_fence_info, 0, 1 },
	[FL_OP_TIMELINE_BIND - SYNC_FIRST] = { op_timeline_bind, 0, 1 },
	[FL_OP_POOL_FILL - SYNC_FIRST] = { op_pool_fill },
	[FL_OP_FENCE_NEW - SYNC_FIRST] = { op_fence_new, FL_MSG_F_REPLY | FL_MSG_F_KEPT },
	[FL_OP_TIMELINE_SIGNAL - SYNC_FIRST] = { op_timeline_signal },
	[FL_OP_TIMELINE_SYNC - SYNC_FIRST] = { op_timeline_sync },
	[FL_OP_FENCE_SET_DEADLINE - SYNC_FIRST] = { op_fence_set_deadline, 0, 1 },
	[FL_OP_FENCE_GET_DEADLINE - SYNC_FIRST] = { op_fence_get_deadline, 0, 1 },
	[FL_OP_FENCE_IMPORT - SYNC_FIRST] = { op_fence_import, 0, 1 },
	[FL_OP_FENCE_RETURN - SYNC_FIRST] = { op_fence_return, 0, 1 },
	[FL_OP_TIMELINE_INC_AT - SYNC_FIRST] = { op_timeline_inc, 0, 1 },
	[FL_OP_TIMELINE_FAIL - SYNC_FIRST] = { op_timeline_fail, 0, 1 },
	[FL_OP_FENCE_MERGE_INTO - SYNC_FIRST] = { op_fence_merge_into, 0, 2 },
	[FL_OP_FENCE_HINT_DEADLINE - SYNC_FIRST] = { op_fence_hint_deadline, 0, 1 },
	[FL_OP_KICK_ACK - SYNC_FIRST] = { op_kick_ack },
};

const struct fl_server_service_ops fld_sync_service = {
	.name = "sync",
	.first_op = SYNC_FIRST,
	.last_op = FL_OP_KICK_ACK,
	.ops = sync_ops,
	.client_gone = sync_client_gone,
	.id = FL_PROTO_SVC_SYNC,
	.version = FL_PROTO_SYNC_VERSION,
};

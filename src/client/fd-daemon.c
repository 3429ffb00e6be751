/* SPDX-License-Identifier: MIT */
/*
 * The fd API's daemon backend (fdbackend.h): fencelined answers for every
 * fd this process's core did not make. Sending an fd the daemon does not
 * know is harmless: it only says -ENOTTY.
 */
#include <poll.h>
#include <string.h>

#include <fenceline/fence.h>

#include "client.h"
#include "fdbackend.h"
#include "host.h"
#include "statuspage.h"
#include "util.h"

/*
 * An fd whose daemon end is gone shows POLLHUP (while the daemon lives, a
 * fence or timeline fd never does): then the honest answer is that the
 * daemon died, not that the fd is not ours. A pipe with a record in it is
 * another process's completed in-process fence, not a dead daemon's fd.
 */
static int refine(const struct fl__fdref *ref, int r)
{
	struct pollfd p = { .fd = ref->fd, .events = POLLIN };

	if ((r == -ENOTTY || r == -ENOENT || r == -EBADF) && poll(&p, 1, 0) == 1 &&
	    (p.revents & POLLHUP) && !(ref->pipe && (p.revents & POLLIN)))
		return -ECONNRESET;
	return r;
}

static bool dead_daemon_fd(const struct fl__fdref *ref)
{
	return refine(ref, -ENOTTY) == -ECONNRESET;
}

/*
 * Timeline fds (by inode) this process has seen the daemon accept. A
 * fence on a known timeline is created without waiting for the daemon; on
 * an unknown fd the first creation waits, so that a wrong fd fails right
 * away (-ENOTTY) like the kernel's ioctl. Direct-mapped and bounded: a
 * forgotten entry only costs one round trip.
 */
#define TL_CACHE_SIZE 256
static _Atomic uint64_t tl_cache[TL_CACHE_SIZE];

/* The cache key of @ref, tagged with the connection's generation so that a new daemon starts afresh. */
static uint64_t ref_key_gen(const struct fl__fdref *ref, unsigned int generation)
{
	return (((uint64_t)ref->ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)ref->dev ^
		((uint64_t)generation * 0xbf58476d1ce4e5b9ull)) |
	       1;
}

/*
 * An entry is the key's upper 48 bits and, below them, the timeline's
 * handle on this connection plus one (0: known, not bound). Handles are
 * below FL_PROTO_MAX_HANDLES, which fits.
 */
#define TL_HANDLE_BITS 16
#define TL_TAG(key)    ((key) & ~((1ull << TL_HANDLE_BITS) - 1))
_Static_assert(FL_PROTO_MAX_HANDLES < (1u << TL_HANDLE_BITS) - 1, "handle fits an entry");

static _Atomic uint64_t *tl_slot(uint64_t key)
{
	return &tl_cache[(key >> 32) % TL_CACHE_SIZE];
}

/* @handle: the timeline's handle, or UINT32_MAX when the daemon gave none. */
static void tl_cache_add(uint64_t key, uint32_t handle)
{
	uint64_t old = atomic_load_explicit(tl_slot(key), memory_order_relaxed);

	if (handle >= FL_PROTO_MAX_HANDLES) {
		if (TL_TAG(old) == TL_TAG(key))
			return; /* known already, maybe with a handle: keep it */
		handle = UINT32_MAX;
	}
	atomic_store_explicit(tl_slot(key), TL_TAG(key) | (uint64_t)(handle + 1),
			      memory_order_relaxed);
}

/* The timeline's handle on this connection, if the cache has one. */
static bool tl_cache_handle(uint64_t key, uint32_t *ret)
{
	uint64_t e = atomic_load_explicit(tl_slot(key), memory_order_relaxed);
	uint32_t low = (uint32_t)(e & ((1ull << TL_HANDLE_BITS) - 1));

	if (TL_TAG(e) != TL_TAG(key) || !low)
		return false;
	*ret = low - 1;
	return true;
}

/*
 * A request about @ref that the daemon answers with a status, or with a
 * value reply when @ret_value is not NULL.
 */
static int call_about_fd(uint32_t op, const struct fl__fdref *ref, const void *body,
			 size_t body_len, uint64_t *ret_value)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_value_reply)];
	struct fl_msg_value_reply v;
	int fd = ref->fd;
	int r = fl__client_call(op, 0, body, body_len, &fd, 1, 0, reply, sizeof(reply), NULL);

	if (r >= 0)
		r = fl__client_reply_status(reply);
	if (r == 0 && ret_value) {
		memcpy(&v, reply + sizeof(struct fl_msg_hdr), sizeof(v));
		*ret_value = v.value;
	}
	return refine(ref, r);
}

static int timeline_create(const char *name, unsigned int flags, int *ret_fd)
{
	struct fl__fdref ref;
	unsigned int generation;
	uint32_t handle;
	int r, fd;

	r = fl__client_timeline_create(name ? name : "sw_sync", flags, &fd, &handle, &generation);
	if (r < 0)
		return r;
	if (fl__fdref_get(fd, &ref) == 0)
		tl_cache_add(ref_key_gen(&ref, generation), handle);
	*ret_fd = fd;
	return 0;
}

static int timeline_inc(const struct fl__fdref *ref, uint64_t count, uint64_t stamp_ns)
{
	struct fl_msg_timeline_signal sig = { .count = count };
	struct fl_msg_timeline_inc body = { count };
	struct fl_msg_timeline_inc_at at = { count, stamp_ns };
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	unsigned int generation = fl__client_generation();
	uint64_t key = ref_key_gen(ref, generation);
	int r;

	/* Bound on this connection: no need to send the fd. */
	if (tl_cache_handle(key, &sig.handle)) {
		/* Ours: one hop for our own fences. */
		r = fl__client_owned_signal(generation, sig.handle, count, stamp_ns);
		if (r == -EINPROGRESS) {
			struct fl_msg_timeline_inc none = { 0 };

			/* Counted already: the daemon catches up with the counter first. */
			return call_about_fd(FL_OP_TIMELINE_INC, ref, &none, sizeof(none), NULL);
		}
		if (r != -ENOSYS && r != -ESTALE)
			return refine(ref, r);
		/* TIMELINE_SIGNAL has no timestamp: TIMELINE_INC_AT takes the fd. */
		if (stamp_ns)
			return refine(ref, call_about_fd(FL_OP_TIMELINE_INC_AT, ref, &at,
							 sizeof(at), NULL));
		r = fl__client_call_on(generation, FL_OP_TIMELINE_SIGNAL, &sig, sizeof(sig), reply,
				       sizeof(reply));
		if (r >= 0)
			r = fl__client_reply_status(reply);
		if (r != -ESTALE)
			return refine(ref, r);
	}
	r = stamp_ns ? call_about_fd(FL_OP_TIMELINE_INC_AT, ref, &at, sizeof(at), NULL)
		     : call_about_fd(FL_OP_TIMELINE_INC, ref, &body, sizeof(body), NULL);
	if (r == 0)
		tl_cache_add(key, UINT32_MAX);
	return r;
}

static int timeline_fail(const struct fl__fdref *ref, int status)
{
	struct fl_msg_timeline_fail body = { status, 0 };
	uint64_t n = 0;
	int r = call_about_fd(FL_OP_TIMELINE_FAIL, ref, &body, sizeof(body), &n);

	/* The daemon's count, bounded by the points a timeline can hold. */
	return r < 0 ? r : n > INT32_MAX ? INT32_MAX : (int)n;
}

static int timeline_get_value(const struct fl__fdref *ref, uint64_t *ret_value)
{
	return call_about_fd(FL_OP_TIMELINE_GET_VALUE, ref, NULL, 0, ret_value);
}

static int fence_create(const struct fl__fdref *ref, uint64_t value, const char *name, int *ret_fd)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_bind_reply)];
	struct fl_msg_bind_reply bound;
	unsigned int generation = fl__client_generation();
	int r, fd = ref->fd;
	uint32_t handle;

	/*
	 * A timeline bound on this connection: one message, no fds, no wait;
	 * the daemon's answer arrives as the fence's status.
	 */
	if (tl_cache_handle(ref_key_gen(ref, generation), &handle)) {
		r = fl__client_fence_new(generation, handle, value, name, false, ret_fd);
		if (r != -ESTALE)
			return r < 0 ? refine(ref, r) : 0;
	}
	/* The fence would only fail later; say now that its daemon is gone. */
	if (dead_daemon_fd(ref))
		return -ECONNRESET;
	/*
	 * First use on this connection: bind (sending the fd proves we hold
	 * it), then create waiting for the answer, so that a wrong fd or value
	 * fails right away like the kernel's ioctl.
	 */
	r = fl__client_call(FL_OP_TIMELINE_BIND, 0, NULL, 0, &fd, 1, 0, reply, sizeof(reply), NULL);
	if (r >= 0) {
		int n = r;

		r = fl__client_reply_status(reply);
		if (r == 0 && n != (int)sizeof(reply))
			r = -EPROTO;
	}
	if (r < 0)
		return r == -EBADF ? -EBADF : refine(ref, r);
	memcpy(&bound, reply + sizeof(struct fl_msg_hdr), sizeof(bound));
	generation = fl__client_answered_generation();
	fl__client_bound(generation, bound.handle, ref->fd);
	tl_cache_add(ref_key_gen(ref, generation), bound.handle);
	r = fl__client_fence_new(generation, bound.handle, value, name, true, ret_fd);
	if (r == -ESTALE)
		r = -ECONNRESET; /* the connection went away in between */
	return r < 0 ? refine(ref, r) : 0;
}

/*
 * Whether the status page of the daemon we are connected to lists @ref
 * (one of its pipe fence fds, of our uid), in *@ret_status. Fds it does
 * not list (another uid's daemon, another daemon, not a fence) go the
 * round trip, which says what they are.
 */
static bool page_lists(const struct fl__fdref *ref, int *ret_status)
{
	return ref->pipe && fl__status_page_lookup(ref->dev, ref->ino, ret_status, NULL) == 1;
}

/* Whether the status page lists @ref as signalled, a status for good, as everyone reads it. */
static bool page_signalled(const struct fl__fdref *ref)
{
	int status;

	return ref->pipe && fl__pipe_page_status(ref->fd, ref->dev, ref->ino, &status) &&
	       status == FL_STATUS_SIGNALED;
}

/* What a merge can make of an input without waiting for the daemon. */
enum merge_input {
	INPUT_OTHER, /* the round trip */
	INPUT_SIGNALLED, /* signalled for good, as the status page says */
	INPUT_PENDING, /* its pending points are listed: a one-way merge if they are ours */
};

/*
 * One look at @ref's info record. Pending points (added to @pts, *@n of
 * them so far) are taken from it without a poll() of the fd: whether they
 * are on timelines we own, below our counters and with no failure counted
 * there, fl__client_merge_oneway() checks under its lock, and only our
 * counter, a failure the daemon counts first, or the daemon's death can
 * complete such a point (the last fails the merge too). A fence with more
 * points than the record holds, or a point that failed, is OTHER. Without
 * a record, a fence whose signal end we keep is PENDING at its point.
 */
static enum merge_input merge_input(const struct fl__fdref *ref, struct fl__merge_point *pts,
				    unsigned int *n)
{
	struct fl_info_body b;

	if (!ref->pipe)
		return INPUT_OTHER;
	if (!fl__status_page_info(ref->dev, ref->ino, &b)) {
		/* No record (not published yet, or evicted): one of our kept fences, maybe. */
		if (fl__client_kept_point(ref->dev, ref->ino, &pts[*n]) == 0) {
			(*n)++;
			return INPUT_PENDING;
		}
		return page_signalled(ref) ? INPUT_SIGNALLED : INPUT_OTHER;
	}
	if (b.status != FL_STATUS_ACTIVE)
		return page_signalled(ref) ? INPUT_SIGNALLED : INPUT_OTHER;
	if (b.state != FL_STATUS_E_LIVE || b.num_points > FL_INFO_POINTS)
		return INPUT_OTHER;
	for (uint32_t i = 0; i < b.num_points; i++) {
		if (b.points[i].status == FL_STATUS_SIGNALED)
			continue;
		if (b.points[i].status != FL_STATUS_ACTIVE || !b.points[i].timeline_id)
			return INPUT_OTHER;
		pts[(*n)++] =
			(struct fl__merge_point){ b.points[i].timeline_id, b.points[i].value };
	}
	return INPUT_PENDING;
}

static int fence_merge(const struct fl__fdref *ref, int fd2, const char *name, unsigned int flags,
		       int *ret_fd)
{
	struct fl__merge_point pts[2 * FL_INFO_POINTS];
	enum merge_input k1, k2;
	unsigned int npts = 0;
	struct fl_msg_fence_merge body = { .flags = flags };
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct fl__fdref ref2;
	int r, fds[2], merged = -1;

	if (fd2 < 0)
		return refine(ref, -ENOENT);
	/*
	 * Both signalled, as the status page says (a final status): so is
	 * the merge, made one-way into a pooled fd we complete ourselves
	 * (fl__client_merge_signalled()). Anything else but the case below
	 * waits for the daemon, which alone can make a pending merge's fd
	 * ready when its inputs are (docs/architecture.md, "No waiting for
	 * the daemon").
	 */
	/* fd2 is looked at only for a merge that may not need the daemon: the round trip sends it. */
	k1 = merge_input(ref, pts, &npts);
	k2 = k1 != INPUT_OTHER && fl__fdref_get(fd2, &ref2) == 0 ? merge_input(&ref2, pts, &npts)
								 : INPUT_OTHER;
	if (k1 == INPUT_SIGNALLED && k2 == INPUT_SIGNALLED &&
	    fl__client_merge_signalled(ref->fd, fd2, name, flags, ret_fd) == 0)
		return 0;
	/*
	 * Pending points all on timelines we own, and not reached: made
	 * one-way too, into a pooled fd that the daemon completes with them
	 * (fl__client_merge_oneway() says how that stays exact).
	 */
	if (k1 != INPUT_OTHER && k2 != INPUT_OTHER && npts &&
	    fl__client_merge_oneway(ref->fd, fd2, name, flags, pts, npts, ret_fd) == 0)
		return 0;
	fl__name_copy(body.name, sizeof(body.name), name);
	fds[0] = ref->fd;
	fds[1] = fd2;
	/* The daemon makes the merged fence's fd (a pipe's read end) and sends it back. */
	r = fl__client_call(FL_OP_FENCE_MERGE, 0, &body, sizeof(body), fds, 2, 0, reply,
			    sizeof(reply), &merged);
	/* fd1 was open a moment ago: a send failing with EBADF means fd2 is not. */
	if (r == -EBADF)
		r = -ENOENT;
	else if (r >= 0)
		r = fl__client_reply_status(reply);
	if (r >= 0 && merged < 0)
		r = -EPROTO;
	if (r < 0) {
		fl__close(merged);
		return refine(ref, r);
	}
	*ret_fd = merged;
	return 0;
}

/* One FENCE_INFO reply's @count points into @points from index @done on. */
static void copy_points(const unsigned char *p, uint32_t count, struct fl_sync_pt_info *points,
			uint32_t done)
{
	for (uint32_t i = 0; i < count; i++) {
		struct fl_msg_point pt;
		struct fl_sync_pt_info *o = &points[done + i];

		memcpy(&pt, p + i * sizeof(pt), sizeof(pt));
		memcpy(o->timeline_name, pt.timeline_name, sizeof(o->timeline_name));
		o->timeline_name[sizeof(o->timeline_name) - 1] = '\0';
		memcpy(o->driver_name, pt.driver_name, sizeof(o->driver_name));
		o->driver_name[sizeof(o->driver_name) - 1] = '\0';
		o->status = pt.status;
		o->flags = pt.flags;
		o->timestamp_ns = pt.timestamp_ns;
		o->value = pt.value;
		o->timeline_id = pt.timeline_id;
	}
}

static int fence_get_info(const struct fl__fdref *ref, unsigned int flags,
			  struct fl_fence_info *ret_info, struct fl_sync_pt_info *points,
			  uint32_t max_points)
{
	unsigned char reply[FL_PROTO_MAX_REPLY];
	struct fl_msg_info_reply rep;
	struct fl_fence_info info;
	uint32_t done = 0;
	int r, fd = ref->fd;

	/*
	 * The page skips the pipe's timestamp for FL_INFO_NO_TIMESTAMPS;
	 * FENCE_INFO below has no such flag: the daemon peeks in its own
	 * process, whatever we ask, and fdapi.c drops what it finds.
	 */
	r = fl__fd_page_info(ref, flags, ret_info, points, max_points);
	if (r != FL__FD_NOT_MINE)
		return r;
	do {
		struct fl_msg_fence_info body = {
			done, FL_MIN(max_points - done, (uint32_t)FL_PROTO_MAX_INFO_POINTS)
		};

		r = fl__client_call(FL_OP_FENCE_INFO, 0, &body, sizeof(body), &fd, 1, 0, reply,
				    sizeof(reply), NULL);
		if (r >= 0 && fl__client_reply_status(reply) < 0)
			return refine(ref, fl__client_reply_status(reply));
		if (r < 0)
			return refine(ref, r);
		if ((size_t)r < sizeof(struct fl_msg_hdr) + sizeof(rep))
			return -EPROTO;
		memcpy(&rep, reply + sizeof(struct fl_msg_hdr), sizeof(rep));
		if (rep.first != done || rep.count > body.max ||
		    (size_t)r != sizeof(struct fl_msg_hdr) + sizeof(rep) +
					 rep.count * sizeof(struct fl_msg_point))
			return -EPROTO;
		if (done == 0) {
			memset(&info, 0, sizeof(info));
			memcpy(info.name, rep.name, sizeof(info.name));
			info.name[sizeof(info.name) - 1] = '\0';
			info.status = rep.status;
			info.num_points = rep.num_points;
			info.timestamp_ns = rep.timestamp_ns;
		}
		copy_points(reply + sizeof(struct fl_msg_hdr) + sizeof(rep), rep.count, points,
			    done);
		done += rep.count;
		/* A short page means the fence has no more points. */
		if (rep.count < body.max)
			break;
	} while (done < max_points && done < info.num_points);
	if (ret_info)
		*ret_info = info;
	return (int)done;
}

static int fence_import(int sync_file_fd, const char *name, int *ret_fd)
{
	struct fl_msg_fence_import body;
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	int r, fd = -1;

	memset(&body, 0, sizeof(body));
	fl__name_copy(body.name, sizeof(body.name), name ? name : "");
	r = fl__client_call(FL_OP_FENCE_IMPORT, 0, &body, sizeof(body), &sync_file_fd, 1, 0, reply,
			    sizeof(reply), &fd);
	if (r >= 0)
		r = fl__client_reply_status(reply);
	if (r >= 0 && fd < 0)
		r = -EPROTO;
	if (r < 0) {
		fl__close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int fence_set_deadline(const struct fl__fdref *ref, uint64_t deadline_ns)
{
	struct fl_msg_fence_set_deadline body = { deadline_ns };
	int status;

	/*
	 * A fence the page lists is one the daemon knows (or will, by the time
	 * it reads this: its maker's requests come first), so the only error
	 * the kernel would give, -ENOTTY, cannot be: no need to wait.
	 */
	if (page_lists(ref, &status) &&
	    fl__client_oneway_fd(FL_OP_FENCE_HINT_DEADLINE, &body, sizeof(body), ref->fd) == 0)
		return 0;
	return call_about_fd(FL_OP_FENCE_SET_DEADLINE, ref, &body, sizeof(body), NULL);
}

static int fence_get_deadline(const struct fl__fdref *ref, uint64_t *ret_ns)
{
	return call_about_fd(FL_OP_FENCE_GET_DEADLINE, ref, NULL, 0, ret_ns);
}

const struct fl__fd_backend_ops fl__fd_daemon_ops = {
	.name = "daemon",
	.timeline_create = timeline_create,
	.timeline_inc = timeline_inc,
	.timeline_fail = timeline_fail,
	.timeline_get_value = timeline_get_value,
	.fence_create = fence_create,
	.fence_merge = fence_merge,
	.fence_get_info = fence_get_info,
	.fence_import = fence_import,
	.fence_set_deadline = fence_set_deadline,
	.fence_get_deadline = fence_get_deadline,
};

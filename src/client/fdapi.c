/* SPDX-License-Identifier: MIT */
/*
 * The fd API (<fenceline/shared.h>): each call first asks this process's
 * core whether the fd is one of its own (in-process mode), and otherwise
 * hands the fd to the daemon, which answers for its objects. Sending an fd
 * the daemon does not know is harmless: it only says -ENOTTY.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fenceline/fence.h>
#include <fenceline/shared.h>
#include <fenceline/sw_sync.h>
#include <fenceline/sync_file.h>
#include <fenceline/timeline.h>

#include "client.h"
#include "util.h"

static atomic_int mode = -1;

FL_EXPORT int fl_mode_set(enum fl_mode m)
{
	fl_return_if(m != FL_MODE_DAEMON && m != FL_MODE_IN_PROCESS, -EINVAL);
	atomic_store(&mode, (int)m);
	return 0;
}

FL_EXPORT enum fl_mode fl_mode_get(void)
{
	int m = atomic_load(&mode);

	if (m < 0) {
		const char *env = getenv("FENCELINE_MODE");

		m = env && (!strcmp(env, "in-process") || !strcmp(env, "inprocess"))
			    ? FL_MODE_IN_PROCESS
			    : FL_MODE_DAEMON;
		atomic_store(&mode, m);
	}
	return (enum fl_mode)m;
}

/*
 * An fd whose daemon end is gone shows POLLHUP (while the daemon lives, a
 * fence or timeline fd never does): then the honest answer is that the
 * daemon died, not that the fd is not ours.
 */
static int refine(int fd, int r)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	bool pipe;
	dev_t dev;
	ino_t ino;

	/*
	 * Only a socket or a mode-0 pipe (the daemon's timeline fd) can be
	 * one of ours. A pipe with a record in it is another process's
	 * completed in-process fence, not a dead daemon's fd.
	 */
	if ((r == -ENOTTY || r == -ENOENT || r == -EBADF) &&
	    fl__fd_identity(fd, &dev, &ino, &pipe) == 0) {
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(pipe && (p.revents & POLLIN)))
			return -ECONNRESET;
	}
	return r;
}

static int dead_daemon_fd(int fd)
{
	return refine(fd, -ENOTTY) == -ECONNRESET;
}

/*
 * Socket inodes this process has seen the daemon accept as timelines. A
 * fence on a known timeline is created without waiting for the daemon; on
 * an unknown fd the first creation waits, so that a wrong fd fails right
 * away (-ENOTTY) like the kernel's ioctl. Direct-mapped and bounded: a
 * forgotten entry only costs one round trip.
 */
#define TL_CACHE_SIZE 256
static _Atomic uint64_t tl_cache[TL_CACHE_SIZE];

/*
 * The cache key of a socket fd, tagged with the connection's generation so
 * that a new daemon starts with an empty cache. 0 for anything that is not
 * an open socket (*ret_err says which: -EBADF or -ENOTTY).
 */
static uint64_t fd_key_gen(int fd, unsigned int generation, int *ret_err)
{
	dev_t dev;
	ino_t ino;
	/* An in-process pipe too: it is looked up in this process's core. */
	int r = fl__fd_identity(fd, &dev, &ino, NULL);

	if (r < 0) {
		if (ret_err)
			*ret_err = r == -EBADF ? -EBADF : -ENOTTY;
		return 0;
	}
	return (((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ (uint64_t)dev ^
		((uint64_t)generation * 0xbf58476d1ce4e5b9ull)) |
	       1;
}

static uint64_t fd_key_err(int fd, int *ret_err)
{
	return fd_key_gen(fd, fl__client_generation(), ret_err);
}

static uint64_t fd_key(int fd)
{
	return fd_key_err(fd, NULL);
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
	uint64_t old;

	if (!key)
		return;
	old = atomic_load_explicit(tl_slot(key), memory_order_relaxed);
	if (handle >= FL_PROTO_MAX_HANDLES) {
		if (TL_TAG(old) == TL_TAG(key))
			return; /* known already, maybe with a handle: keep it */
		handle = UINT32_MAX;
	}
	atomic_store_explicit(tl_slot(key), TL_TAG(key) | (uint64_t)(handle + 1),
			      memory_order_relaxed);
}

static bool tl_cache_has(uint64_t key)
{
	return key &&
	       TL_TAG(atomic_load_explicit(tl_slot(key), memory_order_relaxed)) == TL_TAG(key);
}

/* The timeline's handle on this connection, if the cache has one. */
static bool tl_cache_handle(uint64_t key, uint32_t *ret)
{
	uint64_t e = key ? atomic_load_explicit(tl_slot(key), memory_order_relaxed) : 0;
	uint32_t low = (uint32_t)(e & ((1ull << TL_HANDLE_BITS) - 1));

	if (!key || TL_TAG(e) != TL_TAG(key) || !low)
		return false;
	*ret = low - 1;
	return true;
}

FL_EXPORT int fl_timeline_fd_create(const char *name, unsigned int flags, int *ret_fd)
{
	struct fl_timeline *tl;
	unsigned int generation;
	uint32_t handle;
	int r, fd;

	fl_return_if(!ret_fd || (flags & ~(unsigned int)FL_SW_SYNC_32BIT), -EINVAL);
	if (fl_mode_get() == FL_MODE_IN_PROCESS) {
		r = fl_sw_sync_timeline_create(name, flags, &tl);
		if (r < 0)
			return r;
		r = fl_timeline_export_fd(tl, ret_fd);
		fl_timeline_unref(tl); /* the fd is the handle now */
		return r;
	}
	r = fl__client_timeline_create(name ? name : "sw_sync", flags, &fd, &handle, &generation);
	if (r < 0)
		return r;
	tl_cache_add(fd_key_gen(fd, generation, NULL), handle);
	*ret_fd = fd;
	return 0;
}

/* In-process sw_sync timeline behind @fd: 0, -EBADF, or -ENOTTY (not ours). */
static int local_timeline(int fd, struct fl_timeline **ret)
{
	int r = fl_timeline_from_fd(fd, ret);

	if (r == 0 && !fl_timeline_is_sw_sync(*ret)) {
		fl_timeline_unref(*ret);
		return -EINVAL; /* ours, but driven by a driver, not by counting */
	}
	return r;
}

/*
 * A request about @fd that the daemon answers with a status, or with a
 * value reply when @ret_value is not NULL.
 */
static int call_about_fd(uint32_t op, int fd, const void *body, size_t body_len,
			 uint64_t *ret_value)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_value_reply)];
	struct fl_msg_value_reply v;
	int r = fl__client_call(op, 0, body, body_len, &fd, 1, 0, reply, sizeof(reply), NULL);

	if (r >= 0)
		r = fl__client_reply_status(reply);
	if (r == 0 && ret_value) {
		memcpy(&v, reply + sizeof(struct fl_msg_hdr), sizeof(v));
		*ret_value = v.value;
	}
	return refine(fd, r);
}

FL_EXPORT int fl_timeline_fd_inc(int timeline_fd, uint64_t count)
{
	struct fl_msg_timeline_signal sig = { .count = count };
	unsigned int generation;
	struct fl_msg_timeline_inc body = { count };
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct fl_timeline *tl;
	uint64_t key;
	int r;

	fl_return_if(timeline_fd < 0, -EBADF);
	generation = fl__client_generation();
	key = fd_key_gen(timeline_fd, generation, &r);
	if (!key)
		return r; /* not a socket: no fenceline fd */
	/* Bound on this connection: no need to send the fd. */
	if (tl_cache_handle(key, &sig.handle)) {
		/* Ours: one hop for our own fences. */
		r = fl__client_owned_signal(generation, sig.handle, count);
		if (r != -ENOSYS && r != -ESTALE)
			return refine(timeline_fd, r);
		r = fl__client_call_on(generation, FL_OP_TIMELINE_SIGNAL, &sig, sizeof(sig), reply,
				       sizeof(reply));
		if (r >= 0)
			r = fl__client_reply_status(reply);
		if (r != -ESTALE)
			return refine(timeline_fd, r);
	}
	if (!tl_cache_has(key)) {
		r = local_timeline(timeline_fd, &tl);
		if (r == 0) {
			r = fl_sw_sync_timeline_inc(tl, count);
			fl_timeline_unref(tl);
			return r;
		}
		if (r != -ENOTTY)
			return r == -EINVAL ? -ENOTTY : r;
	}
	r = call_about_fd(FL_OP_TIMELINE_INC, timeline_fd, &body, sizeof(body), NULL);
	if (r == 0)
		tl_cache_add(key, UINT32_MAX);
	return r;
}

FL_EXPORT int fl_timeline_fd_get_value(int timeline_fd, uint64_t *ret_value)
{
	struct fl_timeline *tl;
	int r;

	fl_return_if(!ret_value, -EINVAL);
	fl_return_if(timeline_fd < 0, -EBADF);
	r = local_timeline(timeline_fd, &tl);
	if (r == 0) {
		r = fl_sw_sync_timeline_get_value(tl, ret_value);
		fl_timeline_unref(tl);
		return r;
	}
	if (r != -ENOTTY)
		return r == -EINVAL ? -ENOTTY : r;
	if (!fd_key(timeline_fd))
		return -ENOTTY; /* not a socket: no fenceline fd */
	return call_about_fd(FL_OP_TIMELINE_GET_VALUE, timeline_fd, NULL, 0, ret_value);
}

FL_EXPORT int fl_timeline_fd_close(int fd)
{
	bool maybe_ours = fd_key(fd) != 0;

	fl_return_if(fd < 0, -EBADF);
	if (close(fd) < 0)
		return -errno;
	/*
	 * Closing the last copy hung the daemon's end up in the kernel, just
	 * now: a PING it answers only after handling such hang-ups returns
	 * once the timeline has died. A daemon that is gone failed them all;
	 * without a connection we have made no timeline to wait for.
	 */
	if (maybe_ours && fl_mode_get() == FL_MODE_DAEMON)
		fl__client_sync_closes();
	return 0;
}

FL_EXPORT int fl_fence_fd_create(int timeline_fd, uint64_t value, const char *name, int *ret_fd)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_bind_reply)];
	struct fl_msg_bind_reply bound;
	struct fl_timeline *tl;
	struct fl_fence *f;
	unsigned int generation;
	uint32_t handle;
	uint64_t key;
	int r;

	fl_return_if(!ret_fd, -EINVAL);
	fl_return_if(timeline_fd < 0, -EBADF);
	generation = fl__client_generation();
	key = fd_key_gen(timeline_fd, generation, &r);
	if (!key)
		return r; /* not a socket: no fenceline fd */
	/*
	 * A timeline bound on this connection: one message, no fds, no wait;
	 * the daemon's answer arrives as the fence's status.
	 */
	if (tl_cache_handle(key, &handle)) {
		r = fl__client_fence_new(generation, handle, value, name ? name : "", false,
					 ret_fd);
		if (r != -ESTALE)
			return r < 0 ? refine(timeline_fd, r) : 0;
	}
	r = local_timeline(timeline_fd, &tl);
	if (r == 0) {
		r = fl_sw_sync_fence_create(tl, value, name ? name : "", &f);
		fl_timeline_unref(tl);
		if (r < 0)
			return r;
		r = fl_fence_export_fd(f, ret_fd);
		fl_fence_unref(f);
		return r;
	}
	if (r != -ENOTTY)
		return r == -EINVAL ? -ENOTTY : r;
	/* The fence would only fail later; say now that its daemon is gone. */
	if (dead_daemon_fd(timeline_fd))
		return -ECONNRESET;
	/*
	 * First use on this connection: bind (sending the fd proves we hold
	 * it), then create waiting for the answer, so that a wrong fd or value
	 * fails right away like the kernel's ioctl.
	 */
	r = fl__client_call(FL_OP_TIMELINE_BIND, 0, NULL, 0, &timeline_fd, 1, 0, reply,
			    sizeof(reply), NULL);
	if (r >= 0) {
		int n = r;

		r = fl__client_reply_status(reply);
		if (r == 0 && n != (int)sizeof(reply))
			r = -EPROTO;
	}
	if (r < 0)
		return r == -EBADF ? -EBADF : refine(timeline_fd, r);
	memcpy(&bound, reply + sizeof(struct fl_msg_hdr), sizeof(bound));
	generation = fl__client_answered_generation();
	fl__client_bound(generation, bound.handle, timeline_fd);
	tl_cache_add(fd_key_gen(timeline_fd, generation, NULL), bound.handle);
	r = fl__client_fence_new(generation, bound.handle, value, name ? name : "", true, ret_fd);
	if (r == -ESTALE)
		r = -ECONNRESET; /* the connection went away in between */
	return r < 0 ? refine(timeline_fd, r) : 0;
}

FL_EXPORT int fl_fence_fd_merge(int fd1, int fd2, const char *name, unsigned int flags, int *ret_fd)
{
	struct fl_msg_fence_merge body = { .flags = flags };
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct fl_fence *a, *b, *m;
	int r, fds[2], merged = -1;

	fl_return_if(!ret_fd || (flags & ~(unsigned int)(FL_MERGE_WAIT_ALL | FL_MERGE_MAINLINE)),
		     -EINVAL);
	fl_return_if(fd1 < 0, -EBADF);
	r = fl_fence_from_fd(fd1, &a);
	if (r == 0) {
		if (fd2 < 0 || fl_fence_from_fd(fd2, &b) < 0) {
			fl_fence_unref(a);
			return -ENOENT;
		}
		r = fl_fence_merge(a, b, name ? name : "", flags, &m);
		fl_fence_unref(a);
		fl_fence_unref(b);
		if (r < 0)
			return r;
		r = fl_fence_export_fd(m, ret_fd);
		fl_fence_unref(m);
		return r;
	}
	if (r != -ENOTTY)
		return r;
	if (!fd_key(fd1))
		return -ENOTTY; /* not a socket: no fenceline fd */
	if (fd2 < 0)
		return refine(fd1, -ENOENT);
	fl__name_copy(body.name, sizeof(body.name), name ? name : "");
	fds[0] = fd1;
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
		return refine(fd1, r);
	}
	*ret_fd = merged;
	return 0;
}

/*
 * The fence behind @fd: in this process's core (0, *ret set, the caller
 * unrefs it), or the daemon's to ask (1), or not a fence fd (-EBADF,
 * -ENOTTY for anything that is not a socket).
 */
static int local_fence_or_daemon(int fd, struct fl_fence **ret)
{
	int r;

	if (fd < 0)
		return -EBADF;
	r = fl_fence_from_fd(fd, ret);
	if (r != -ENOTTY)
		return r;
	return fd_key(fd) ? 1 : -ENOTTY;
}

FL_EXPORT int fl_fence_fd_get_info(int fd, struct fl_fence_info *ret_info,
				   struct fl_sync_pt_info *points, uint32_t max_points)
{
	unsigned char reply[FL_PROTO_MAX_REPLY];
	struct fl_msg_info_reply rep;
	struct fl_fence_info info;
	struct fl_fence *f;
	uint32_t done = 0;
	int r;

	fl_return_if(!points && max_points, -EINVAL);
	r = local_fence_or_daemon(fd, &f);
	if (r == 0) {
		r = fl_fence_get_info(f, ret_info, points, max_points);
		fl_fence_unref(f);
		return r;
	}
	if (r < 0)
		return r;
	do {
		struct fl_msg_fence_info body = {
			done, FL_MIN(max_points - done, (uint32_t)FL_PROTO_MAX_INFO_POINTS)
		};
		const unsigned char *p;

		r = fl__client_call(FL_OP_FENCE_INFO, 0, &body, sizeof(body), &fd, 1, 0, reply,
				    sizeof(reply), NULL);
		if (r >= 0 && fl__client_reply_status(reply) < 0)
			return refine(fd, fl__client_reply_status(reply));
		if (r < 0)
			return refine(fd, r);
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
		p = reply + sizeof(struct fl_msg_hdr) + sizeof(rep);
		for (uint32_t i = 0; i < rep.count; i++) {
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
		done += rep.count;
		/* A short page means the fence has no more points. */
		if (rep.count < body.max)
			break;
	} while (done < max_points && done < info.num_points);
	if (ret_info)
		*ret_info = info;
	return (int)done;
}

FL_EXPORT int fl_fence_fd_import(int sync_file_fd, const char *name, int *ret_fd)
{
	struct fl_msg_fence_import body;
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct fl_fence *f;
	int r, fd = -1;

	fl_return_if(!ret_fd, -EINVAL);
	fl_return_if(sync_file_fd < 0, -EBADF);
	if (fl_mode_get() == FL_MODE_IN_PROCESS) {
		r = fl_sync_file_import(sync_file_fd, name, &f);
		if (r < 0)
			return r;
		r = fl_fence_export_fd(f, ret_fd);
		fl_fence_unref(f);
		return r;
	}
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

FL_EXPORT int fl_fence_fd_set_deadline(int fd, uint64_t deadline_ns)
{
	struct fl_msg_fence_set_deadline body = { deadline_ns };
	struct fl_fence *f;
	int r;

	r = local_fence_or_daemon(fd, &f);
	if (r == 0) {
		r = fl_fence_set_deadline(f, deadline_ns);
		fl_fence_unref(f);
		return r;
	}
	if (r < 0)
		return r;
	return call_about_fd(FL_OP_FENCE_SET_DEADLINE, fd, &body, sizeof(body), NULL);
}

FL_EXPORT int fl_fence_fd_get_deadline(int fd, uint64_t *ret_ns)
{
	struct fl_fence *f;
	int r;

	fl_return_if(!ret_ns, -EINVAL);
	r = local_fence_or_daemon(fd, &f);
	if (r == 0) {
		r = fl_fence_get_deadline(f, ret_ns);
		fl_fence_unref(f);
		return r;
	}
	if (r < 0)
		return r;
	return call_about_fd(FL_OP_FENCE_GET_DEADLINE, fd, NULL, 0, ret_ns);
}

FL_EXPORT int fl_daemon_connect(void)
{
	return fl__client_daemon_pid();
}

FL_EXPORT void fl_daemon_flush(void)
{
	fl__client_flush();
}

FL_EXPORT void fl_daemon_disconnect(void)
{
	fl__client_flush();
	fl__client_disconnect();
}

/* SPDX-License-Identifier: MIT */
/*
 * The native display API (<fenceline/display.h>): the library's side of
 * fl-displayd. One connection per process, made on first use (starting the
 * service as fencelined is started), with the requests of any number of
 * threads pipelined on it as on fencelined's (rpc.c): a thread whose post
 * the service takes long to answer, or that waits on a stuck service,
 * holds up no other thread's request, and a service that dies fails every
 * waiting request with -ECONNRESET at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/display.h>

#include "display.h"
#include "rpc.h"
#include "service.h"
#include "transport.h"
#include "util.h"

#define START_WAIT_MS 5000
/* A reply that does not come in this long means the service is stuck: give up on it. */
#define REPLY_TIMEOUT_S 10

extern char **environ;

struct fl_display_handle {
	uint32_t kind, device, id, handle;
	unsigned int gen; /* the connection it was opened on */
	int fd;
	struct fdid fd_id; /* the event pipe we gave the program: checked before each use */
};

static const struct fl__rpc_ops rpc_ops = { .what = "daemon" };

/* The reader's buffer (rpc.c: one reader at a time). */
static unsigned char read_buf[FL_DPROTO_MAX_REPLY];

/* A reply carries one fd at most (a handle's event pipe, a buffer, a fence). */
static struct {
	struct fl__rpc rpc;
	bool atfork_done;
	uint32_t version; /* the protocol HELLO agreed on */
} dc = { .rpc = FL__RPC_INIT(&rpc_ops, read_buf, 1) };

static void set_error(struct fl_display_error *e, int err, const char *msg)
{
	if (!e || err >= 0)
		return;
	e->err = err;
	snprintf(e->msg, sizeof(e->msg), "%s", msg && msg[0] ? msg : strerror(-err));
}

static const char *displayd_binary(void)
{
	const char *env = getenv("FENCELINE_DISPLAYD");

	if (env && env[0])
		return env;
	if (access(FL_DISPLAYD_PATH, X_OK) == 0)
		return FL_DISPLAYD_PATH;
	return FL_DISPLAYD_BUILD_PATH;
}

static void atfork_prepare(void)
{
	fl__rpc_fork_prepare(&dc.rpc);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&dc.rpc.lock);
}

static void atfork_child(void)
{
	fl__rpc_forked_locked(&dc.rpc);
	pthread_mutex_unlock(&dc.rpc.lock);
}

/*
 * HELLO on the fresh connection @fd: the version agreed on (> 0), the
 * service's refusal, or a connection error.
 */
static int hello(int fd)
{
	struct fl_msg_hdr h = { FL_DOP_HELLO, 0, 0, sizeof(struct fl_dmsg_hello) };
	struct fl_dmsg_hello b = { FL_DPROTO_VERSION, 0 };
	struct {
		struct fl_msg_hdr hdr;
		struct fl_dmsg_hello_reply r;
	} rep;
	unsigned int n = 0;
	ssize_t s = fl__proto_send(fd, &h, sizeof(h), &b, sizeof(b), NULL, 0, 0);
	int r;

	if (s < 0)
		return s == -EPIPE ? -ECONNRESET : (int)s;
	r = fl__proto_recv_reply(fd, &rep, sizeof(rep), NULL, 0, 0, &n, NULL);
	if (r < 0)
		return r == -ETIMEDOUT ? -ECONNRESET : r;
	if ((size_t)r < sizeof(rep) || fl__rpc_check(&rep, r, FL_DOP_HELLO, 0) < 0)
		return -EPROTO;
	if (rep.r.r.status < 0)
		return rep.r.r.status;
	return rep.r.version && rep.r.version <= FL_DPROTO_VERSION ? (int)rep.r.version : -EPROTO;
}

/*
 * Connect to the service at this process's socket, starting one if none
 * answers, and say HELLO; run by fl__rpc_connect_locked() with the lock
 * released. *@arg (a uint32_t) gets the version agreed on.
 * Return: the connection's fd, or a negative errno.
 */
static int connect_service(void *arg)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint64_t deadline;
	bool spawned = false;
	int fd, r;

	r = fl__display_socket_path(path, sizeof(path));
	if (r < 0)
		return r;
	deadline = fl__now_ns() + START_WAIT_MS * 1000000ull;
	for (;;) {
		struct timespec ts = { 0, 5000000L };

		fd = fl__service_connect(path, REPLY_TIMEOUT_S * 1000);
		if (fd >= 0) {
			r = fl__service_peer_trusted(fd, "display service", path);
			if (r == 0)
				r = hello(fd);
			if (r > 0) {
				*(uint32_t *)arg = (uint32_t)r;
				return fd;
			}
			close(fd);
			/*
			 * A service that is dying (killed, or exiting idle) may
			 * still have its listening socket while its other fds are
			 * closed: the connection lands in its backlog and is reset
			 * with it. Its socket is gone then, so the next try starts
			 * a new one.
			 */
			if (r != -ECONNRESET || fl__now_ns() > deadline)
				return r;
			ts.tv_nsec = 1000000L;
			nanosleep(&ts, NULL);
			continue;
		}
		if (fd != -ENOENT && fd != -ECONNREFUSED)
			return fd;
		if (!spawned) {
			r = fl__service_spawn("display service", displayd_binary(), path);
			if (r < 0)
				return r;
			spawned = true;
		}
		if (fl__now_ns() > deadline)
			return -ECONNREFUSED;
		nanosleep(&ts, NULL);
	}
}

/* Under dc.rpc.lock: make sure this process has its live connection. */
static int connect_locked(void)
{
	int r;

	if (!dc.atfork_done) {
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		dc.atfork_done = true;
	}
	uint32_t version = 0;

	r = fl__rpc_connect_locked(&dc.rpc, connect_service, &version);
	if (r == 1)
		dc.version = version;
	return r < 0 ? r : 0;
}

/*
 * Under dc.rpc.lock, connected: send one request (after @pre, @npre fds
 * sent ahead one-way in POST_FDS messages) and wait for its reply, the
 * lock released meanwhile. @reply gets the reply (header included) of at
 * most @cap bytes, @rfds up to @max_rfds fds (the caller's), *@ret_gen
 * the generation of the connection that answered.
 * Return: the reply's length, or a connection error (the connection is
 * dropped then).
 */
static int roundtrip_locked(uint32_t op, const void *body, size_t len, const int *pre,
			    unsigned int npre, const int *fds, unsigned int nfds, void *reply,
			    size_t cap, int *rfds, unsigned int max_rfds, unsigned int *ret_nrfds,
			    unsigned int *ret_gen)
{
	struct fl_msg_hdr h = { op, 0, 0, (uint32_t)len };
	struct fl__rpc_waiter w = { .buf = reply, .cap = cap, .fds = rfds, .max_fds = max_rfds };
	int r = 0, n;

	/* The fds past one message's share go ahead; nothing comes between them and their POST. */
	for (unsigned int sent = 0; r == 0 && sent < npre; sent += FL_DPROTO_MAX_FDS) {
		struct fl_msg_hdr f = { FL_DOP_POST_FDS, 0, 0, 0 };

		r = fl__rpc_send_locked(&dc.rpc, &f, NULL, 0, pre + sent,
					FL_MIN(npre - sent, (unsigned int)FL_DPROTO_MAX_FDS), 0);
	}
	if (r == 0)
		r = fl__rpc_send_locked(&dc.rpc, &h, body, len, fds, nfds, 0);
	if (r < 0) {
		/* POST_FDS may have gone ahead of a POST that did not: out of step now. */
		fl__rpc_drop_locked(&dc.rpc);
		return r;
	}
	w.seq = h.seq;
	n = fl__rpc_await_locked(&dc.rpc, &w);
	if (n >= 0 && fl__rpc_check(reply, n, op, h.seq) < 0) {
		for (unsigned int i = 0; i < w.nfds; i++)
			close(rfds[i]);
		n = -EPROTO;
	}
	if (n < 0 && n != -EMFILE)
		fl__rpc_lost_locked(&dc.rpc, w.generation);
	if (n < 0)
		return n == -ETIMEDOUT ? -ECONNRESET : n;
	*ret_gen = w.generation;
	if (ret_nrfds)
		*ret_nrfds = w.nfds;
	else
		for (unsigned int i = 0; i < w.nfds; i++)
			close(rfds[i]);
	return n;
}

/*
 * One request on behalf of handle @h (NULL: none), its fds in @fds after
 * @pre (a POST's first fds, see roundtrip_locked()). @reply gets the
 * reply (header included) of at most @cap bytes; its status is the return
 * value, its message in @e; *@ret_gen (if not NULL) the generation of the
 * connection that answered, what a handle in it belongs to.
 */
static int request_pre(const struct fl_display_handle *h, uint32_t op, const void *body, size_t len,
		       const int *pre, unsigned int npre, const int *fds, unsigned int nfds,
		       void *reply, size_t cap, int *rfds, unsigned int max_rfds,
		       unsigned int *ret_nrfds, unsigned int *ret_gen, struct fl_display_error *e)
{
	struct fl_msg_reply st;
	unsigned int gen = 0;
	int r;

	if (ret_nrfds)
		*ret_nrfds = 0;
	pthread_mutex_lock(&dc.rpc.lock);
	r = connect_locked();
	if (r == 0 && h && h->gen != fl__rpc_generation(&dc.rpc))
		r = -ECONNRESET;
	/* An older service would take an op it does not know for garbage, and hang up. */
	if (r == 0 &&
	    ((dc.version < 2 && (op == FL_DOP_DEVICE_INFO || op == FL_DOP_INTERFACE_TYPE_NAME)) ||
	     (dc.version < 3 && op == FL_DOP_DRIVERS)))
		r = -EOPNOTSUPP;
	if (r == 0)
		r = roundtrip_locked(op, body, len, pre, npre, fds, nfds, reply, cap, rfds,
				     max_rfds, ret_nrfds, &gen);
	pthread_mutex_unlock(&dc.rpc.lock);
	if (ret_gen)
		*ret_gen = gen;
	if (r < 0) {
		set_error(e, r, NULL);
		return r;
	}
	memcpy(&st, (char *)reply + sizeof(struct fl_msg_hdr), sizeof(st));
	if (st.status < 0) {
		char *msg = (char *)reply + sizeof(struct fl_msg_hdr) + sizeof(st);
		size_t n = (size_t)r - sizeof(struct fl_msg_hdr) - sizeof(st);

		if (n)
			msg[n - 1] = '\0';
		set_error(e, st.status, n ? msg : NULL);
		if (ret_nrfds) {
			for (unsigned int i = 0; i < *ret_nrfds; i++)
				close(rfds[i]);
			*ret_nrfds = 0;
		}
		return st.status;
	}
	return r;
}

static int request(const struct fl_display_handle *h, uint32_t op, const void *body, size_t len,
		   const int *fds, unsigned int nfds, void *reply, size_t cap, int *rfds,
		   unsigned int max_rfds, unsigned int *ret_nrfds, struct fl_display_error *e)
{
	return request_pre(h, op, body, len, NULL, 0, fds, nfds, reply, cap, rfds, max_rfds,
			   ret_nrfds, NULL, e);
}

/* A status-only request. */
static int simple(const struct fl_display_handle *h, uint32_t op, const void *body, size_t len,
		  struct fl_display_error *e)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	int r = request(h, op, body, len, NULL, 0, &rep, sizeof(rep), NULL, 0, NULL, e);

	return r < 0 ? r : 0;
}

FL_EXPORT void fl_display_disconnect(void)
{
	pthread_mutex_lock(&dc.rpc.lock);
	fl__rpc_drop_locked(&dc.rpc);
	pthread_mutex_unlock(&dc.rpc.lock);
}

FL_EXPORT int fl_display_devices(uint32_t **ret_ids)
{
	struct fl_dmsg_devices_reply d;
	uint32_t *ids = NULL;
	uint8_t *rep;
	int r;

	if (!ret_ids)
		return -EINVAL;
	/* Not static: another thread's reply may land while this one waits. */
	rep = malloc(FL_DPROTO_MAX_REPLY);
	if (!rep)
		return -ENOMEM;
	r = request(NULL, FL_DOP_DEVICES, NULL, 0, NULL, 0, rep, FL_DPROTO_MAX_REPLY, NULL, 0, NULL,
		    NULL);
	if (r >= 0) {
		memcpy(&d, rep + sizeof(struct fl_msg_hdr), sizeof(d));
		if ((size_t)r != sizeof(struct fl_msg_hdr) + sizeof(d) + d.count * 4u)
			r = -EPROTO;
		else if (d.count && !(ids = malloc(d.count * sizeof(*ids))))
			r = -ENOMEM;
		else if (d.count)
			memcpy(ids, rep + sizeof(struct fl_msg_hdr) + sizeof(d), d.count * 4u);
	}
	free(rep);
	if (r < 0)
		return r;
	*ret_ids = ids;
	return (int)d.count;
}

FL_EXPORT int fl_display_drivers(struct fl_display_driver_info *ret, size_t cap,
				 struct fl_display_error *e)
{
	struct fl_dmsg_drivers_reply d;
	size_t head = sizeof(struct fl_msg_hdr) + sizeof(d);
	uint8_t *rep;
	int r;

	if (!ret && cap)
		return -EINVAL;
	rep = malloc(FL_DPROTO_MAX_REPLY);
	if (!rep)
		return -ENOMEM;
	r = request(NULL, FL_DOP_DRIVERS, NULL, 0, NULL, 0, rep, FL_DPROTO_MAX_REPLY, NULL, 0, NULL,
		    e);
	if (r >= 0) {
		if ((size_t)r < head) {
			r = -EPROTO;
			goto out;
		}
		memcpy(&d, rep + sizeof(struct fl_msg_hdr), sizeof(d));
		if (d.count > FL_DPROTO_MAX_DRIVERS ||
		    (size_t)r != head + d.count * sizeof(struct fl_display_driver_info)) {
			r = -EPROTO;
			goto out;
		}
		for (size_t i = 0; i < d.count && i < cap; i++) {
			memcpy(&ret[i], rep + head + i * sizeof(ret[i]), sizeof(ret[i]));
			/* The service's strings are not trusted to end. */
			ret[i].name[sizeof(ret[i].name) - 1] = '\0';
			ret[i].why[sizeof(ret[i].why) - 1] = '\0';
		}
		r = (int)d.count;
	}
out:
	free(rep);
	return r;
}

static int open_handle(uint32_t kind, uint32_t device, uint32_t id, struct fl_display_handle **ret)
{
	struct fl_dmsg_open o = { kind, device, id, 0 };
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_open_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	struct fl_display_handle *h;
	unsigned int n, gen;
	int fd, r;

	if (!ret)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	r = request_pre(NULL, FL_DOP_OPEN, &o, sizeof(o), NULL, 0, NULL, 0, &rep, sizeof(rep), &fd,
			1, &n, &gen, NULL);
	if (r >= 0 && n != 1)
		r = -EPROTO;
	if (r < 0) {
		free(h);
		return r;
	}
	*h = (struct fl_display_handle){ kind, device, id, rep.r.handle, gen, fd, { 0, 0, false } };
	if (fl__fdid_get(fd, &h->fd_id) < 0) {
		free(h);
		return -EBADF;
	}
	*ret = h;
	return 0;
}

FL_EXPORT int fl_display_device_open(uint32_t id, struct fl_display_handle **ret)
{
	return open_handle(FL_DISPLAY_OBJ_DEVICE, id, 0, ret);
}

FL_EXPORT int fl_display_interface_open(struct fl_display_handle *dev, uint32_t id,
					struct fl_display_handle **ret)
{
	if (!dev || dev->kind != FL_DISPLAY_OBJ_DEVICE)
		return -EINVAL;
	return open_handle(FL_DISPLAY_OBJ_INTERFACE, dev->device, id, ret);
}

FL_EXPORT int fl_display_engine_open(struct fl_display_handle *dev, uint32_t id,
				     struct fl_display_handle **ret)
{
	if (!dev || dev->kind != FL_DISPLAY_OBJ_DEVICE)
		return -EINVAL;
	return open_handle(FL_DISPLAY_OBJ_ENGINE, dev->device, id, ret);
}

FL_EXPORT void fl_display_close(struct fl_display_handle *h)
{
	struct fl_dmsg_handle b;
	bool live;

	if (!h)
		return;
	b = (struct fl_dmsg_handle){ h->handle, 0 };
	pthread_mutex_lock(&dc.rpc.lock);
	live = fl__rpc_live_locked(&dc.rpc) && fl__rpc_generation(&dc.rpc) == h->gen;
	pthread_mutex_unlock(&dc.rpc.lock);
	/*
	 * On a connection that is gone the service forgot the handle with it:
	 * nothing to say, and no reason to connect (or start a service) for it.
	 */
	if (live)
		(void)simple(h, FL_DOP_CLOSE, &b, sizeof(b), NULL);
	fl__fdid_close(h->fd, &h->fd_id);
	free(h);
}

FL_EXPORT int fl_display_get_fd(const struct fl_display_handle *h)
{
	return h ? h->fd : -EINVAL;
}

/* ADF's rules for one array of a two-call query: a capacity over @max, or with no array, is -EINVAL. */
static bool room_ok(const void *array, size_t cap, size_t max)
{
	return cap <= max && (!cap || array);
}

/* Copies the smaller of @cap and @n elements from @src and sets the count to @n. */
static void copy_out(void *dst, size_t *cap_inout, const uint8_t *src, size_t n, size_t elem)
{
	size_t k = *cap_inout < n ? *cap_inout : n;

	if (k)
		memcpy(dst, src, k * elem);
	*cap_inout = n;
}

static int room_fail(struct fl_display_error *e, const char *what, size_t max)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "room for %s above %zu, or with no array", what, max);
	set_error(e, -EINVAL, msg);
	return -EINVAL;
}

FL_EXPORT int fl_display_device_get_data(struct fl_display_handle *dev,
					 struct fl_display_device_data *data,
					 struct fl_display_error *e)
{
	uint8_t *rep;
	struct fl_dmsg_handle b;
	struct fl_dmsg_device_data_reply d;
	const uint8_t *p;
	int r;

	if (!dev || !data)
		return -EINVAL;
	if (!room_ok(data->attachments, data->n_attachments, FL_DISPLAY_MAX_ATTACHMENTS))
		return room_fail(e, "attachments", FL_DISPLAY_MAX_ATTACHMENTS);
	if (!room_ok(data->allowed, data->n_allowed, FL_DISPLAY_MAX_ATTACHMENTS))
		return room_fail(e, "allowed attachments", FL_DISPLAY_MAX_ATTACHMENTS);
	if (!room_ok(data->custom_data, data->custom_data_size, FL_DISPLAY_MAX_CUSTOM_DATA))
		return room_fail(e, "custom data", FL_DISPLAY_MAX_CUSTOM_DATA);
	b = (struct fl_dmsg_handle){ dev->handle, 0 };
	rep = malloc(FL_DPROTO_MAX_REPLY);
	if (!rep)
		return -ENOMEM;
	r = request(dev, FL_DOP_DEVICE_DATA, &b, sizeof(b), NULL, 0, rep, FL_DPROTO_MAX_REPLY, NULL,
		    0, NULL, e);
	if (r < 0)
		goto out;
	memcpy(&d, rep + sizeof(struct fl_msg_hdr), sizeof(d));
	if (d.n_attachments > FL_DISPLAY_MAX_ATTACHMENTS ||
	    d.n_allowed > FL_DISPLAY_MAX_ATTACHMENTS ||
	    d.custom_size > FL_DISPLAY_MAX_CUSTOM_DATA ||
	    (size_t)r !=
		    sizeof(struct fl_msg_hdr) + sizeof(d) +
			    (d.n_attachments + d.n_allowed) * sizeof(struct fl_display_attachment) +
			    d.custom_size) {
		r = -EPROTO;
		goto out;
	}
	memcpy(data->name, d.name, sizeof(data->name));
	data->name[sizeof(data->name) - 1] = '\0';
	p = rep + sizeof(struct fl_msg_hdr) + sizeof(d);
	copy_out(data->attachments, &data->n_attachments, p, d.n_attachments,
		 sizeof(struct fl_display_attachment));
	p += d.n_attachments * sizeof(struct fl_display_attachment);
	copy_out(data->allowed, &data->n_allowed, p, d.n_allowed,
		 sizeof(struct fl_display_attachment));
	p += d.n_allowed * sizeof(struct fl_display_attachment);
	copy_out(data->custom_data, &data->custom_data_size, p, d.custom_size, 1);
	r = 0;
out:
	free(rep);
	return r;
}

FL_EXPORT int fl_display_device_get_info(struct fl_display_handle *dev,
					 struct fl_display_device_info *info, size_t size,
					 struct fl_display_error *e)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_device_info_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	struct fl_dmsg_handle b;
	struct fl_display_device_info got;
	int r;

	if (!dev || dev->kind != FL_DISPLAY_OBJ_DEVICE || !info || !size)
		return -EINVAL;
	b = (struct fl_dmsg_handle){ dev->handle, 0 };
	r = request(dev, FL_DOP_DEVICE_INFO, &b, sizeof(b), NULL, 0, &rep, sizeof(rep), NULL, 0,
		    NULL, e);
	if (r < 0)
		return r;
	/* A version 2 service does not name the driver. */
	if ((size_t)r != sizeof(rep.h) + sizeof(rep.r) &&
	    (size_t)r != sizeof(rep.h) + FL_DMSG_DEVICE_INFO_V2_SIZE)
		return -EPROTO;
	if ((size_t)r != sizeof(rep.h) + sizeof(rep.r))
		memset(rep.r.driver, 0, sizeof(rep.r.driver));
	got = (struct fl_display_device_info){ rep.r.n_interfaces, rep.r.n_engines, "" };
	memcpy(got.driver, rep.r.driver, sizeof(got.driver) - 1);
	memcpy(info, &got, FL_MIN(size, sizeof(got)));
	return 0;
}

FL_EXPORT int fl_display_interface_type_name(struct fl_display_handle *intf,
					     char name[FL_DISPLAY_NAME_LEN],
					     struct fl_display_error *e)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_type_name_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	struct fl_dmsg_handle b;
	int r;

	if (!intf || intf->kind != FL_DISPLAY_OBJ_INTERFACE || !name)
		return -EINVAL;
	b = (struct fl_dmsg_handle){ intf->handle, 0 };
	r = request(intf, FL_DOP_INTERFACE_TYPE_NAME, &b, sizeof(b), NULL, 0, &rep, sizeof(rep),
		    NULL, 0, NULL, e);
	if (r < 0)
		return r;
	if ((size_t)r != sizeof(rep.h) + sizeof(rep.r))
		return -EPROTO;
	/* The service's string is not trusted to end. */
	memcpy(name, rep.r.name, FL_DISPLAY_NAME_LEN);
	name[FL_DISPLAY_NAME_LEN - 1] = '\0';
	return 0;
}

FL_EXPORT int fl_display_interface_get_data(struct fl_display_handle *intf,
					    struct fl_display_interface_data *data,
					    struct fl_display_error *e)
{
	uint8_t *rep;
	struct fl_dmsg_handle b;
	struct fl_dmsg_interface_data_reply d;
	const uint8_t *p;
	int r;

	if (!intf || !data)
		return -EINVAL;
	if (!room_ok(data->modes, data->n_modes, FL_DISPLAY_MAX_MODES))
		return room_fail(e, "modes", FL_DISPLAY_MAX_MODES);
	if (!room_ok(data->custom_data, data->custom_data_size, FL_DISPLAY_MAX_CUSTOM_DATA))
		return room_fail(e, "custom data", FL_DISPLAY_MAX_CUSTOM_DATA);
	b = (struct fl_dmsg_handle){ intf->handle, 0 };
	rep = malloc(FL_DPROTO_MAX_REPLY);
	if (!rep)
		return -ENOMEM;
	r = request(intf, FL_DOP_INTERFACE_DATA, &b, sizeof(b), NULL, 0, rep, FL_DPROTO_MAX_REPLY,
		    NULL, 0, NULL, e);
	if (r < 0)
		goto out;
	memcpy(&d, rep + sizeof(struct fl_msg_hdr), sizeof(d));
	if (d.n_modes > FL_DISPLAY_MAX_MODES || d.custom_size > FL_DISPLAY_MAX_CUSTOM_DATA ||
	    (size_t)r != sizeof(struct fl_msg_hdr) + sizeof(d) +
				 d.n_modes * sizeof(struct fl_display_mode) + d.custom_size) {
		r = -EPROTO;
		goto out;
	}
	memcpy(data->name, d.name, sizeof(data->name));
	data->name[sizeof(data->name) - 1] = '\0';
	data->type = d.type;
	data->id = d.id;
	data->flags = d.flags;
	data->dpms_state = d.dpms_state;
	data->hotplug_detect = d.hotplug_detect;
	data->width_mm = d.width_mm;
	data->height_mm = d.height_mm;
	data->current_mode = d.current_mode;
	p = rep + sizeof(struct fl_msg_hdr) + sizeof(d);
	copy_out(data->modes, &data->n_modes, p, d.n_modes, sizeof(struct fl_display_mode));
	p += d.n_modes * sizeof(struct fl_display_mode);
	copy_out(data->custom_data, &data->custom_data_size, p, d.custom_size, 1);
	r = 0;
out:
	free(rep);
	return r;
}

FL_EXPORT int fl_display_engine_get_data(struct fl_display_handle *eng,
					 struct fl_display_engine_data *data,
					 struct fl_display_error *e)
{
	uint8_t *rep;
	struct fl_dmsg_handle b;
	struct fl_dmsg_engine_data_reply d;
	const uint8_t *p;
	int r;

	if (!eng || !data)
		return -EINVAL;
	if (!room_ok(data->formats, data->n_formats, FL_DISPLAY_MAX_FORMATS))
		return room_fail(e, "formats", FL_DISPLAY_MAX_FORMATS);
	if (!room_ok(data->custom_data, data->custom_data_size, FL_DISPLAY_MAX_CUSTOM_DATA))
		return room_fail(e, "custom data", FL_DISPLAY_MAX_CUSTOM_DATA);
	b = (struct fl_dmsg_handle){ eng->handle, 0 };
	rep = malloc(FL_DPROTO_MAX_REPLY);
	if (!rep)
		return -ENOMEM;
	r = request(eng, FL_DOP_ENGINE_DATA, &b, sizeof(b), NULL, 0, rep, FL_DPROTO_MAX_REPLY, NULL,
		    0, NULL, e);
	if (r < 0)
		goto out;
	memcpy(&d, rep + sizeof(struct fl_msg_hdr), sizeof(d));
	if (d.n_formats > FL_DISPLAY_MAX_FORMATS || d.custom_size > FL_DISPLAY_MAX_CUSTOM_DATA ||
	    (size_t)r != sizeof(struct fl_msg_hdr) + sizeof(d) + d.n_formats * 4u + d.custom_size) {
		r = -EPROTO;
		goto out;
	}
	memcpy(data->name, d.name, sizeof(data->name));
	data->name[sizeof(data->name) - 1] = '\0';
	p = rep + sizeof(struct fl_msg_hdr) + sizeof(d);
	copy_out(data->formats, &data->n_formats, p, d.n_formats, 4);
	p += d.n_formats * 4u;
	copy_out(data->custom_data, &data->custom_data_size, p, d.custom_size, 1);
	r = 0;
out:
	free(rep);
	return r;
}

static int attach_op(struct fl_display_handle *dev, uint32_t op, uint32_t eng, uint32_t intf,
		     struct fl_display_error *e)
{
	struct fl_dmsg_attach a;

	if (!dev)
		return -EINVAL;
	a = (struct fl_dmsg_attach){ dev->handle, eng, intf, 0 };
	return simple(dev, op, &a, sizeof(a), e);
}

FL_EXPORT int fl_display_attach(struct fl_display_handle *dev, uint32_t eng, uint32_t intf,
				struct fl_display_error *e)
{
	return attach_op(dev, FL_DOP_ATTACH, eng, intf, e);
}

FL_EXPORT int fl_display_detach(struct fl_display_handle *dev, uint32_t eng, uint32_t intf,
				struct fl_display_error *e)
{
	return attach_op(dev, FL_DOP_DETACH, eng, intf, e);
}

FL_EXPORT int fl_display_blank(struct fl_display_handle *intf, uint32_t state,
			       struct fl_display_error *e)
{
	struct fl_dmsg_blank b;

	if (!intf)
		return -EINVAL;
	b = (struct fl_dmsg_blank){ intf->handle, state };
	return simple(intf, FL_DOP_BLANK, &b, sizeof(b), e);
}

FL_EXPORT int fl_display_set_mode(struct fl_display_handle *intf,
				  const struct fl_display_mode *mode, struct fl_display_error *e)
{
	struct fl_dmsg_set_mode b;

	if (!intf || !mode)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	b.handle = intf->handle;
	b.mode = *mode;
	return simple(intf, FL_DOP_SET_MODE, &b, sizeof(b), e);
}

FL_EXPORT int fl_display_set_event(struct fl_display_handle *h, uint32_t type, int enabled,
				   struct fl_display_error *e)
{
	struct fl_dmsg_set_event b;

	if (!h)
		return -EINVAL;
	b = (struct fl_dmsg_set_event){ h->handle, type, enabled ? 1u : 0u, 0 };
	return simple(h, FL_DOP_SET_EVENT, &b, sizeof(b), e);
}

/* One read() of @len bytes, as libadf's: fewer is -EIO, and EINTR is the caller's. */
static int read_exact(int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);

	if (n < 0)
		return -errno;
	return (size_t)n < len ? -EIO : 0;
}

FL_EXPORT int fl_display_read_event_fd(int fd, struct fl_display_event **ret_event)
{
	struct fl_display_event hdr, *ev;
	int r;

	if (!ret_event)
		return -EINVAL;
	r = read_exact(fd, &hdr, sizeof(hdr));
	if (r < 0)
		return r;
	if (hdr.length < sizeof(hdr))
		return -EIO;
	ev = malloc(hdr.length);
	if (!ev)
		return -ENOMEM;
	memcpy(ev, &hdr, sizeof(hdr));
	if (hdr.length > sizeof(hdr)) {
		r = read_exact(fd, (char *)ev + sizeof(hdr), hdr.length - sizeof(hdr));
		if (r < 0) {
			free(ev);
			return r;
		}
	}
	*ret_event = ev;
	return 0;
}

FL_EXPORT int fl_display_read_event(struct fl_display_handle *h,
				    struct fl_display_event **ret_event)
{
	if (!h || !ret_event)
		return -EINVAL;
	if (!fl__fdid_is(h->fd, &h->fd_id))
		return -EBADF; /* the program closed or replaced the handle's fd */
	return fl_display_read_event_fd(h->fd, ret_event);
}

FL_EXPORT int fl_display_simple_buffer_alloc(struct fl_display_handle *intf, uint32_t w, uint32_t h,
					     uint32_t format, int *ret_fd, uint32_t *ret_offset,
					     uint32_t *ret_pitch, struct fl_display_error *e)
{
	struct fl_dmsg_simple_alloc b;
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_simple_alloc_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	unsigned int n;
	int fd, r;

	if (!intf || !ret_fd || !ret_offset || !ret_pitch)
		return -EINVAL;
	b = (struct fl_dmsg_simple_alloc){ intf->handle, w, h, format };
	r = request(intf, FL_DOP_SIMPLE_ALLOC, &b, sizeof(b), NULL, 0, &rep, sizeof(rep), &fd, 1,
		    &n, e);
	if (r < 0)
		return r;
	if (n != 1)
		return -EPROTO;
	*ret_fd = fd;
	*ret_offset = rep.r.offset;
	*ret_pitch = rep.r.pitch;
	return 0;
}

/*
 * A wire buffer from @b (buffer @i of its post); its fds appended to @fds
 * at *@n. The fds are checked here, in ADF's order and with its errors: a
 * plane fd that is not open is -EBADF, an acquire fence that is not -EINVAL.
 * Sent, a closed fd would fail the whole message, and the connection with it.
 */
static int wire_buffer(const struct fl_display_buffer *b, size_t i, struct fl_dmsg_buffer *w,
		       int *fds, unsigned int *n, struct fl_display_error *e)
{
	char msg[FL_DISPLAY_ERROR_MAX];

	if (b->n_planes > FL_DISPLAY_MAX_PLANES) {
		snprintf(msg, sizeof(msg), "buffer %zu: %" PRIu32 " planes, at most %d", i,
			 b->n_planes, FL_DISPLAY_MAX_PLANES);
		set_error(e, -EINVAL, msg);
		return -EINVAL;
	}
	for (uint32_t p = 0; p < b->n_planes; p++) {
		if (fcntl(b->fd[p], F_GETFD) < 0) {
			snprintf(msg, sizeof(msg),
				 "buffer %zu plane %" PRIu32 ": fd %d is not open", i, p, b->fd[p]);
			set_error(e, -EBADF, msg);
			return -EBADF;
		}
	}
	if (b->acquire_fence >= 0 && fcntl(b->acquire_fence, F_GETFD) < 0) {
		snprintf(msg, sizeof(msg), "buffer %zu: acquire fence fd %d is not open", i,
			 b->acquire_fence);
		set_error(e, -EINVAL, msg);
		return -EINVAL;
	}
	memset(w, 0, sizeof(*w));
	w->engine = b->engine;
	w->w = b->w;
	w->h = b->h;
	w->format = b->format;
	w->n_planes = b->n_planes;
	w->flags = b->acquire_fence >= 0 ? FL_DBUF_ACQUIRE : 0;
	for (uint32_t p = 0; p < FL_DISPLAY_MAX_PLANES; p++) {
		w->offset[p] = b->offset[p];
		w->pitch[p] = b->pitch[p];
	}
	for (uint32_t p = 0; p < b->n_planes; p++)
		fds[(*n)++] = b->fd[p];
	if (b->acquire_fence >= 0)
		fds[(*n)++] = b->acquire_fence;
	return 0;
}

static int post_reply(const struct fl_display_handle *h, uint32_t op, const void *body, size_t len,
		      const int *pre, unsigned int npre, const int *fds, unsigned int nfds,
		      int *ret_fence, struct fl_display_error *e)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_post_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	unsigned int n;
	int fence = -1, r;

	r = request_pre(h, op, body, len, pre, npre, fds, nfds, &rep, sizeof(rep), &fence, 1, &n,
			NULL, e);
	if (r < 0)
		return r;
	if ((n == 1) != !!(rep.r.flags & FL_DPOST_R_FENCE)) {
		if (n)
			close(fence);
		return -EPROTO;
	}
	if (ret_fence)
		*ret_fence = n ? fence : -1;
	else if (n)
		close(fence);
	return 0;
}

FL_EXPORT int fl_display_post(struct fl_display_handle *dev, const struct fl_display_post *post,
			      int *ret_fence, struct fl_display_error *e)
{
	int fds[FL_DPROTO_POST_MAX_FDS];
	struct fl_dmsg_post pm;
	unsigned int n = 0, pre;
	uint8_t *body;
	size_t at;
	int r;

	if (!dev || !post || (post->n_intfs && !post->intfs) || (post->n_bufs && !post->bufs) ||
	    (post->custom_size && !post->custom))
		return -EINVAL;
	/* ADF's bounds, checked here too: the body must fit one message. */
	if (post->n_intfs > FL_DISPLAY_MAX_INTERFACES || post->n_bufs > FL_DISPLAY_MAX_BUFFERS ||
	    post->custom_size > FL_DISPLAY_MAX_CUSTOM_DATA) {
		char msg[FL_DISPLAY_ERROR_MAX];
		bool many_intfs = post->n_intfs > FL_DISPLAY_MAX_INTERFACES;
		bool many_bufs = !many_intfs && post->n_bufs > FL_DISPLAY_MAX_BUFFERS;

		snprintf(msg, sizeof(msg), "%zu %s: ADF allows at most %u",
			 many_intfs  ? post->n_intfs
			 : many_bufs ? post->n_bufs
				     : post->custom_size,
			 many_intfs  ? "interfaces"
			 : many_bufs ? "buffers"
				     : "bytes of custom data",
			 many_intfs  ? FL_DISPLAY_MAX_INTERFACES
			 : many_bufs ? FL_DISPLAY_MAX_BUFFERS
				     : FL_DISPLAY_MAX_CUSTOM_DATA);
		set_error(e, -EINVAL, msg);
		return -EINVAL;
	}
	if (post->writeback && post->writeback->fd < 0) {
		set_error(e, -EINVAL, "writeback: no destination fd");
		return -EINVAL;
	}
	if (post->writeback && fcntl(post->writeback->fd, F_GETFD) < 0) {
		set_error(e, -EBADF, "writeback: the destination fd is not open");
		return -EBADF;
	}
	/* The wire's own flags say what follows; a caller cannot set them. */
	if (post->flags & ~(uint32_t)FL_DISPLAY_POST_TEST_ONLY) {
		set_error(e, -EINVAL, "unknown post flags");
		return -EINVAL;
	}
	if (post->fence_type > FL_DISPLAY_FENCE_RELEASE) {
		set_error(e, -EINVAL, "unknown fence type");
		return -EINVAL;
	}
	pm = (struct fl_dmsg_post){ dev->handle,
				    post->flags |
					    (post->layers && post->n_bufs ? FL_DPOST_LAYERS : 0) |
					    (post->writeback ? FL_DPOST_WRITEBACK : 0),
				    post->fence_type,
				    (uint32_t)post->n_intfs,
				    (uint32_t)post->n_bufs,
				    (uint32_t)post->custom_size };
	/* Not static: the lock is not held while the reply is awaited. */
	body = malloc(FL_DPROTO_MAX_REQUEST);
	if (!body)
		return -ENOMEM;
	memcpy(body, &pm, sizeof(pm));
	at = sizeof(pm);
	if (post->n_intfs)
		memcpy(body + at, post->intfs, post->n_intfs * 4);
	at += post->n_intfs * 4;
	for (size_t i = 0; i < post->n_bufs; i++) {
		struct fl_dmsg_buffer w;

		r = wire_buffer(&post->bufs[i], i, &w, fds, &n, e);
		if (r < 0) {
			free(body);
			return r;
		}
		memcpy(body + at, &w, sizeof(w));
		at += sizeof(w);
	}
	if (post->custom_size)
		memcpy(body + at, post->custom, post->custom_size);
	at += post->custom_size;
	if (pm.flags & FL_DPOST_LAYERS) {
		memcpy(body + at, post->layers, post->n_bufs * sizeof(post->layers[0]));
		at += post->n_bufs * sizeof(post->layers[0]);
	}
	if (post->writeback) {
		const struct fl_display_writeback *wb = post->writeback;
		struct fl_dmsg_writeback w = { wb->format, wb->w, wb->h, wb->offset, wb->pitch, 0 };

		memcpy(body + at, &w, sizeof(w));
		at += sizeof(w);
		/* Last of the fds, after every buffer's. */
		fds[n++] = wb->fd;
	}
	/* The fds past one message's share go ahead in POST_FDS (roundtrip_locked()). */
	pre = n > FL_DPROTO_MAX_FDS ? (n - 1) / FL_DPROTO_MAX_FDS * FL_DPROTO_MAX_FDS : 0;
	r = post_reply(dev, FL_DOP_POST, body, at, fds, pre, fds + pre, n - pre, ret_fence, e);
	free(body);
	return r;
}

FL_EXPORT int fl_display_simple_post(struct fl_display_handle *intf,
				     const struct fl_display_buffer *buf, uint32_t fence_type,
				     int *ret_fence, struct fl_display_error *e)
{
	struct fl_dmsg_simple_post b;
	int fds[FL_DISPLAY_MAX_PLANES + 1];
	unsigned int n = 0;
	int r;

	if (!intf || !buf)
		return -EINVAL;
	/* The service cuts off a peer that sends another: the caller's error, not the connection's. */
	if (fence_type > FL_DISPLAY_FENCE_RELEASE) {
		set_error(e, -EINVAL, "unknown fence type");
		return -EINVAL;
	}
	memset(&b, 0, sizeof(b));
	b.handle = intf->handle;
	b.fence_type = fence_type;
	r = wire_buffer(buf, 0, &b.buf, fds, &n, e);
	if (r < 0)
		return r;
	return post_reply(intf, FL_DOP_SIMPLE_POST, &b, sizeof(b), NULL, 0, fds, n, ret_fence, e);
}

FL_EXPORT int fl_display_set_connected(struct fl_display_handle *intf, int connected,
				       struct fl_display_error *e)
{
	struct fl_dmsg_set_connected b;

	if (!intf)
		return -EINVAL;
	b = (struct fl_dmsg_set_connected){ intf->handle, connected ? 1u : 0u };
	return simple(intf, FL_DOP_SET_CONNECTED, &b, sizeof(b), e);
}

FL_EXPORT int fl_display_capture(struct fl_display_handle *intf, uint32_t format, int *ret_fd,
				 uint32_t *ret_w, uint32_t *ret_h, uint32_t *ret_pitch,
				 struct fl_display_error *e)
{
	struct fl_dmsg_capture b;
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_capture_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	unsigned int n;
	int fd, r;

	if (!intf || !ret_fd || !ret_w || !ret_h || !ret_pitch)
		return -EINVAL;
	b = (struct fl_dmsg_capture){ intf->handle, format };
	r = request(intf, FL_DOP_CAPTURE, &b, sizeof(b), NULL, 0, &rep, sizeof(rep), &fd, 1, &n, e);
	if (r < 0)
		return r;
	if (n != 1 || (size_t)r != sizeof(rep.h) + sizeof(rep.r)) {
		if (n)
			close(fd);
		return -EPROTO;
	}
	*ret_fd = fd;
	*ret_w = rep.r.w;
	*ret_h = rep.r.h;
	*ret_pitch = rep.r.pitch;
	return 0;
}

FL_EXPORT int fl_display_device_get_stats(struct fl_display_handle *dev,
					  struct fl_display_stats *ret, struct fl_display_error *e)
{
	struct fl_dmsg_handle b;
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_stats_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	int r;

	if (!dev || !ret)
		return -EINVAL;
	b = (struct fl_dmsg_handle){ dev->handle, 0 };
	r = request(dev, FL_DOP_STATS, &b, sizeof(b), NULL, 0, &rep, sizeof(rep), NULL, 0, NULL, e);
	if (r < 0)
		return r;
	if ((size_t)r != sizeof(rep.h) + sizeof(rep.r))
		return -EPROTO;
	*ret = rep.r.stats;
	return 0;
}

FL_EXPORT int fl_display_engine_set_source(struct fl_display_handle *eng,
					   const struct fl_display_source *src,
					   struct fl_display_error *e)
{
	struct fl_dmsg_set_source b;
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} rep;
	bool stream;
	int r;

	if (!eng || !src)
		return -EINVAL;
	stream = src->type == FL_DISPLAY_SOURCE_STREAM;
	/*
	 * What the protocol's decoder refuses would cut the connection off:
	 * refused here with a reason instead. The fd goes only with a STREAM.
	 */
	if (src->type > FL_DISPLAY_SOURCE_STREAM || src->reserved[0] || src->reserved[1] ||
	    src->reserved[2] || (stream && src->fd < 0)) {
		set_error(e, -EINVAL,
			  "source: an unknown type, reserved fields not 0, or a "
			  "stream without its fd");
		return -EINVAL;
	}
	b = (struct fl_dmsg_set_source){
		eng->handle, src->type,	  src->w,
		src->h,	     src->format, { src->reserved[0], src->reserved[1], src->reserved[2] },
		src->layer
	};
	r = request(eng, FL_DOP_SET_SOURCE, &b, sizeof(b), stream ? &src->fd : NULL, stream, &rep,
		    sizeof(rep), NULL, 0, NULL, e);
	return r < 0 ? r : 0;
}

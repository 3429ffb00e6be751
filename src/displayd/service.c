/* SPDX-License-Identifier: MIT */
/*
 * The display service (docs/display.md, "The service"): the devices of the
 * display config, each with its driver, served to clients on the server
 * framework. One thread, one loop: requests, the drivers' timers, the
 * acquire fences (fd sources, never a thread or a blocking wait) and the
 * flips all run here, so every call on a device is serialised (ADF's
 * client lock) without a lock.
 *
 * A post: decoded (src/proto/display.c), its planes' sizes resolved from
 * their fds, checked by the model (fl__display_post_check()) and then by
 * the driver's validate, with no side effect; every refusal goes back to
 * the caller with its errno and the model's or driver's reason. Then it is
 * queued FIFO on its device, its acquire fences watched in the loop, and
 * it flips at the first vsync after the last of them signalled. Its
 * fences are points on two fenceline timelines of the device's, made
 * through fencelined like any client's: "present" reaches post N when N is
 * flipped, "release" when N + 1 is, which is also when N's buffers are let
 * go.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fence.h>
#include <fenceline/shared.h>

#include "acceptor.h"
#include "compose.h"
#include "conn.h"
#include "display-config.h"
#include "display-model.h"
#include "display-virtual.h"
#include "display.h"
#include "displayd.h"
#include "dump.h"
#include "loop.h"
#include "service.h"
#include "start.h"
#include "util.h"

/* Handles one connection may hold open. */
#define MAX_HANDLES 256
/* Messages read from one client per readable event: the others get their turn. */
#define BATCH 16
/*
 * Posts one client may have waiting to flip, on all devices: ADF had no
 * bound, so a client posting faster than the display (or with fences that
 * never signal) grew the queue, and the fds it holds, without end.
 */
#define MAX_QUEUED 16

static const struct fl_display_driver_ops *const drivers[] = { &fl__display_virtual_ops };

struct dpost;

struct ddev {
	struct fl__display_device *dev;
	const struct fl_display_driver_ops *drv;
	void *drv_data;
	struct fl_display_host host;
	const struct fl__display_config_device *cd;
	/* The fence timelines (fenceline fds, fencelined's), made at the first post; -1 before. */
	int tl_present, tl_release;
	uint64_t present_at, release_at; /* the values they reached */
	uint64_t seq; /* the last post's number */
	struct dpost *head, *tail; /* the queue */
	struct dpost *on_screen;
	struct fl_loop_source *kick; /* an idle source: flip what needs no vsync */
	struct fl_display_stats st;
	uint64_t last_vsync[FL_DISPLAY_CONFIG_MAX_OBJECTS]; /* per interface, for the dump */
};

struct dconn;

struct dpost {
	struct ddev *d;
	struct dconn *owner; /* NULL once its client is gone */
	struct dpost *next;
	uint64_t seq;
	void *state;
	unsigned int pending; /* acquire fences not yet signalled */
	bool failed; /* one failed or timed out: never shown */
	struct fl_loop_source *timeout;
	uint32_t *intfs;
	size_t n_intfs;
	size_t n_acquire;
	int acquire[FL_DISPLAY_MAX_BUFFERS];
	/* The writeback destination (its fd ours; -1 without), lent to the driver's state. */
	struct fl_display_driver_buffer wb;
	size_t acq_buf[FL_DISPLAY_MAX_BUFFERS]; /* the buffer each acquire fence is for */
	uint64_t queued_ns; /* for the dump's age */
	struct fl_loop_source *acq_src[FL_DISPLAY_MAX_BUFFERS];
	size_t n_bufs;
	struct fl_display_driver_buffer bufs[]; /* their fds are ours */
};

struct handle {
	bool used;
	uint32_t kind, device, id;
	int events; /* the write end of the handle's event pipe (non-blocking) */
	uint8_t subscribed[32]; /* a bit per event type */
};

struct dconn {
	struct fl_server_conn conn;
	struct handle handles[MAX_HANDLES];
	int stash[FL_DPROTO_POST_MAX_FDS]; /* POST_FDS's, for the next POST */
	unsigned int n_stash;
	unsigned int queued; /* its posts in the devices' queues */
};

struct dsource {
	struct fl_loop_source *src;
	void (*timer_fn)(void *);
	void (*fd_fn)(int, uint32_t, void *);
	void *data;
};

static struct displayd_config cfg;
static struct fl_loop *loop;
static struct fl_server *server;
static struct fl_acceptor *acceptor;
static struct fl__display_set *set;
static struct fl__display_config *config;
static struct ddev devs[FL_DISPLAY_CONFIG_MAX_DEVICES];
static size_t n_devs;
static bool stopping;
/* The software compositor the drivers' compose() uses, made on first use. */
static struct fl_display_compositor *compositor;

void displayd_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fl-displayd[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static struct dconn *dconn_of(struct fl_server_conn *conn)
{
	return FL_SERVER_CONTAINER_OF(conn, struct dconn, conn);
}

static struct ddev *ddev_by_id(uint32_t id)
{
	for (size_t i = 0; i < n_devs; i++)
		if (fl__display_device_id(devs[i].dev) == id)
			return &devs[i];
	return NULL;
}

/* ---- dump.h: what the dump reads ---- */

size_t displayd_dump_devices(void)
{
	return n_devs;
}

void displayd_dump_device(size_t i, struct displayd_dump_dev *ret)
{
	*ret = (struct displayd_dump_dev){ .dev = devs[i].dev,
					   .driver = devs[i].drv->name,
					   .st = devs[i].st,
					   .last_vsync = devs[i].last_vsync };
}

static const struct dpost *post_view(const struct dpost *p, struct displayd_dump_post *ret)
{
	if (!p)
		return NULL;
	*ret = (struct displayd_dump_post){
		.seq = p->seq,
		.queued_ns = p->queued_ns,
		.owner_pid = p->owner ? (int)p->owner->conn.pid : 0,
		.failed = p->failed,
		.pending = p->pending,
		.intfs = p->intfs,
		.n_intfs = p->n_intfs,
		.bufs = p->bufs,
		.n_bufs = p->n_bufs,
		.acquire = p->acquire,
		.acq_buf = p->acq_buf,
		.n_acquire = p->n_acquire,
	};
	return p;
}

const struct dpost *displayd_dump_on_screen(size_t i, struct displayd_dump_post *ret)
{
	return post_view(devs[i].on_screen, ret);
}

const struct dpost *displayd_dump_queued(size_t i, const struct dpost *prev,
					 struct displayd_dump_post *ret)
{
	return post_view(prev ? prev->next : devs[i].head, ret);
}

/* ---- events ---- */

static bool bit(const uint8_t *bits, uint32_t n)
{
	return bits[n / 8] & (1u << (n % 8));
}

/* ADF's ring: a whole event or none, dropped when the handle's 4096 bytes are full. */
static void send_event(uint32_t kind, uint32_t device, uint32_t id, uint32_t type, const void *ev,
		       size_t len)
{
	for (struct fl_server_conn *c = fl__server_conn_next(server, NULL); c;
	     c = fl__server_conn_next(server, c)) {
		struct dconn *dc = dconn_of(c);

		for (size_t h = 0; h < MAX_HANDLES; h++) {
			struct handle *hd = &dc->handles[h];

			if (hd->used && hd->kind == kind && hd->device == device && hd->id == id &&
			    bit(hd->subscribed, type))
				(void)!write(hd->events, ev, len);
		}
	}
}

/* ---- fences ---- */

static int timelines(struct ddev *d)
{
	char name[FL_DISPLAY_NAME_LEN + 16];
	int r;

	if (d->tl_release >= 0)
		return 0;
	snprintf(name, sizeof(name), "%s-present", fl__display_device_name(d->dev));
	r = fl_timeline_fd_create(name, 0, &d->tl_present);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%s-release", fl__display_device_name(d->dev));
	r = fl_timeline_fd_create(name, 0, &d->tl_release);
	if (r < 0) {
		close(d->tl_present);
		d->tl_present = -1;
		return r;
	}
	return 0;
}

static void advance(int tl, uint64_t *at, uint64_t to)
{
	int r;

	if (tl < 0 || to <= *at)
		return;
	r = fl_timeline_fd_inc(tl, to - *at);
	if (r < 0)
		displayd_log("cannot signal a fence timeline: %s", strerror(-r));
	*at = to;
}

/* ---- posts ---- */

static void post_free(struct dpost *p)
{
	struct ddev *d = p->d;

	if (d->drv->state_free)
		d->drv->state_free(d->drv_data, p->state);
	for (size_t i = 0; i < p->n_bufs; i++)
		for (uint32_t k = 0; k < p->bufs[i].n_planes; k++)
			close(p->bufs[i].fd[k]);
	for (size_t i = 0; i < p->n_acquire; i++) {
		fl__loop_source_remove(p->acq_src[i]);
		if (p->acquire[i] >= 0)
			close(p->acquire[i]);
	}
	fl__loop_source_remove(p->timeout);
	if (p->wb.fd[0] >= 0)
		close(p->wb.fd[0]);
	free(p->intfs);
	free(p);
}

static void unlink_head(struct ddev *d)
{
	struct dpost *p = d->head;

	d->head = p->next;
	if (!d->head)
		d->tail = NULL;
	d->st.queued--;
	if (p->owner)
		p->owner->queued--;
}

static void flip(struct ddev *d)
{
	struct dpost *p = d->head, *prev = d->on_screen;

	unlink_head(d);
	d->drv->post(d->drv_data, p->state);
	d->on_screen = p;
	d->st.flipped++;
	d->st.on_screen_buffers = p->n_bufs;
	/* Posts dropped before this one reach both their points now: they will never show. */
	/*
	 * Release first: whoever sees N + 1 present finds N released (libadf's
	 * simple_buffer_v2 test waits on the one and checks the other).
	 */
	advance(d->tl_release, &d->release_at, p->seq - 1);
	advance(d->tl_present, &d->present_at, p->seq);
	if (prev)
		post_free(prev);
}

static void drop_head(struct ddev *d)
{
	struct dpost *p = d->head;

	unlink_head(d);
	d->st.dropped++;
	post_free(p);
}

/* Whether interface @id of @d has a vsync now: lit, connected, with timings. */
static bool ticking(struct ddev *d, uint32_t id)
{
	struct fl__display_interface *intf = fl__display_interface_get(d->dev, id);
	const struct fl_display_mode *m;

	if (!intf || fl__display_interface_dpms(intf) != FL_DISPLAY_DPMS_ON ||
	    !fl__display_interface_connected(intf) || !(d->drv->caps & FL_DISPLAY_CAP_VSYNC))
		return false;
	m = fl__display_interface_current_mode(intf);
	return m->clock && m->htotal && m->vtotal;
}

static bool paced_by_vsync(struct ddev *d, const struct dpost *p)
{
	for (size_t i = 0; i < p->n_intfs; i++)
		if (ticking(d, p->intfs[i]))
			return true;
	return false;
}

/*
 * At a vsync of interface @vsync_intf (UINT32_MAX: none, the kick), flip
 * the head of the queue if its fences are done and this is its moment:
 * a vsync of one of its interfaces, or any time when none of them has one
 * (a blanked panel, memory writeback). Posts that failed go first.
 */
static void try_flip(struct ddev *d, uint32_t vsync_intf)
{
	while (d->head && !d->head->pending && d->head->failed)
		drop_head(d);
	if (!d->head || d->head->pending)
		return;
	if (paced_by_vsync(d, d->head)) {
		bool mine = false;

		for (size_t i = 0; i < d->head->n_intfs; i++)
			mine |= d->head->intfs[i] == vsync_intf;
		if (!mine)
			return;
		flip(d);
		return;
	}
	flip(d);
	/* Unpaced posts may follow at once. */
	try_flip(d, UINT32_MAX);
}

static void kick_fn(void *data)
{
	struct ddev *d = data;

	d->kick = NULL;
	try_flip(d, UINT32_MAX);
}

static void kick(struct ddev *d)
{
	if (!d->kick)
		d->kick = fl__loop_add_idle(loop, kick_fn, d);
}

static void acquire_done(struct dpost *p, size_t i, int status)
{
	fl__loop_source_remove(p->acq_src[i]);
	p->acq_src[i] = NULL;
	close(p->acquire[i]);
	p->acquire[i] = -1;
	if (status < 0) {
		p->failed = true;
		p->d->st.fence_failures++;
		displayd_log("post %" PRIu64
			     " of device %s: acquire fence %zu failed (%s): not shown",
			     p->seq, fl__display_device_name(p->d->dev), i, strerror(-status));
	}
	if (--p->pending == 0) {
		fl__loop_source_remove(p->timeout);
		p->timeout = NULL;
		kick(p->d);
	}
}

static void acquire_ready(int fd, uint32_t events, void *data)
{
	struct dpost *p = data;
	int st;

	(void)events;
	for (size_t i = 0; i < p->n_acquire; i++) {
		if (p->acquire[i] != fd)
			continue;
		st = fl_fence_fd_get_status(fd);
		if (st != 0)
			acquire_done(p, i, st > 0 ? 0 : st);
		return;
	}
}

static void acquire_timeout(void *data)
{
	struct dpost *p = data;

	p->timeout = NULL;
	for (size_t i = 0; i < p->n_acquire; i++)
		if (p->acquire[i] >= 0)
			acquire_done(p, i, -ETIME);
}

/* The model's flush hook: blank(non-ON) and modeset drain the queue first, as ADF's. */
static void flush(struct fl__display_device *dev, void *data)
{
	struct ddev *d = data;

	(void)dev;
	while (d->head) {
		struct dpost *p = d->head;

		/* Never block the loop: what is not ready now is dropped, as its buffers never showed. */
		for (size_t i = 0; i < p->n_acquire; i++)
			if (p->acquire[i] >= 0) {
				int st = fl_fence_fd_get_status(p->acquire[i]);

				acquire_done(p, i, st > 0 ? 0 : st == 0 ? -ECANCELED : st);
			}
		if (p->failed)
			drop_head(d);
		else
			flip(d);
	}
}

/* ---- the driver's host ---- */

static uint64_t h_now(const struct fl_display_host *host)
{
	(void)host;
	return fl__now_ns();
}

static void source_timer(void *data)
{
	struct dsource *s = data;

	s->timer_fn(s->data);
}

static void source_fd(int fd, uint32_t events, void *data)
{
	struct dsource *s = data;

	s->fd_fn(fd, events, s->data);
}

static struct fl_display_source *h_timer_add(const struct fl_display_host *host, void (*fn)(void *),
					     void *fn_data)
{
	struct dsource *s = calloc(1, sizeof(*s));

	(void)host;
	if (!s)
		return NULL;
	s->timer_fn = fn;
	s->data = fn_data;
	s->src = fl__loop_add_timer(loop, source_timer, s);
	if (!s->src) {
		free(s);
		return NULL;
	}
	return (struct fl_display_source *)s;
}

static void h_timer_arm(struct fl_display_source *t, uint64_t deadline)
{
	fl__loop_timer_arm(((struct dsource *)t)->src, deadline, 0);
}

static struct fl_display_source *h_fd_add(const struct fl_display_host *host, int fd,
					  uint32_t events, void (*fn)(int, uint32_t, void *),
					  void *fn_data)
{
	struct dsource *s = calloc(1, sizeof(*s));

	(void)host;
	if (!s)
		return NULL;
	s->fd_fn = fn;
	s->data = fn_data;
	s->src = fl__loop_add_fd(loop, fd, events, source_fd, s);
	if (!s->src) {
		int e = errno;

		free(s);
		errno = e;
		return NULL;
	}
	return (struct fl_display_source *)s;
}

static void h_source_remove(struct fl_display_source *src)
{
	struct dsource *s = (struct dsource *)src;

	if (!s)
		return;
	fl__loop_source_remove(s->src);
	free(s);
}

static int h_intf_state(const struct fl_display_host *host, uint32_t intf,
			struct fl_display_mode *ret_mode, bool *ret_connected)
{
	struct ddev *d = host->data;
	struct fl__display_interface *i = fl__display_interface_get(d->dev, intf);

	if (!i)
		return -ENOENT;
	*ret_mode = *fl__display_interface_current_mode(i);
	*ret_connected = fl__display_interface_connected(i);
	return 0;
}

static int h_config_modes(const struct fl_display_host *host, uint32_t intf,
			  struct fl_display_mode *modes, size_t cap)
{
	struct ddev *d = host->data;
	const struct fl__display_config_interface *ci;

	if (intf >= d->cd->n_intfs)
		return -ENOENT;
	ci = &d->cd->intfs[intf];
	if (modes)
		memcpy(modes, ci->modes, (ci->n_modes < cap ? ci->n_modes : cap) * sizeof(*modes));
	return (int)ci->n_modes;
}

static void h_vsync(const struct fl_display_host *host, uint32_t intf, uint64_t ts)
{
	struct ddev *d = host->data;
	struct fl_display_vsync_event ev = { { FL_DISPLAY_EVENT_VSYNC, sizeof(ev) }, ts };

	d->st.vsyncs++;
	if (intf < FL_DISPLAY_CONFIG_MAX_OBJECTS)
		d->last_vsync[intf] = ts;
	send_event(FL_DISPLAY_OBJ_INTERFACE, host->device, intf, FL_DISPLAY_EVENT_VSYNC, &ev,
		   sizeof(ev));
	try_flip(d, intf);
}

static int h_hotplug(const struct fl_display_host *host, uint32_t intf, bool connected,
		     const struct fl_display_mode *modes, size_t n)
{
	struct ddev *d = host->data;
	struct fl__display_interface *i = fl__display_interface_get(d->dev, intf);
	struct fl_display_hotplug_event ev = { { FL_DISPLAY_EVENT_HOTPLUG, sizeof(ev) },
					       connected };
	struct fl_display_error e;
	int r;

	if (!i)
		return -ENOENT;
	r = fl__display_interface_hotplug(i, connected, modes, n, &e);
	if (r < 0) {
		displayd_log("hotplug of %s refused: %s", fl__display_device_name(d->dev), e.msg);
		return r;
	}
	send_event(FL_DISPLAY_OBJ_INTERFACE, host->device, intf, FL_DISPLAY_EVENT_HOTPLUG, &ev,
		   sizeof(ev));
	return 0;
}

/* A mapping of @len bytes of @fd, read-only or writable; NULL with errno set. */
static void *map_fd(int fd, uint64_t len, bool write)
{
	void *p;

	if (!len || len > SIZE_MAX) {
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, (size_t)len, write ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * The compositor's z order of buffer @i: those without a layer at the
 * bottom in the order given, then those with one by their z order (ranked,
 * so that any u32 fits).
 */
static uint32_t compose_z(const struct fl_display_layer *layers, size_t n, size_t i)
{
	bool has = layers && (layers[i].flags & FL_DISPLAY_LAYER_ENABLED);
	uint32_t z = 0;

	for (size_t j = 0; j < n; j++) {
		bool other = layers && (layers[j].flags & FL_DISPLAY_LAYER_ENABLED);

		if (has ? !other || layers[j].zpos < layers[i].zpos : !other && j < i)
			z++;
	}
	return z;
}

static int h_compose(const struct fl_display_host *host,
		     const struct fl_display_driver_buffer *bufs, const struct fl_display_layer *dl,
		     size_t n, const struct fl_display_driver_buffer *dst)
{
	struct fl_display_compose_layer layers[FL_DISPLAY_MAX_BUFFERS];
	struct fl_display_frame frame;
	struct fl_display_error e;
	size_t mapped = 0;
	int r = 0;

	(void)host;
	if (n > FL_DISPLAY_MAX_BUFFERS)
		return -EINVAL;
	if (!compositor && !(compositor = fl__display_compose_new()))
		return -ENOMEM;
	memset(&frame, 0, sizeof(frame));
	memset(layers, 0, n * sizeof(layers[0]));
	frame.background = (struct fl_display_color){ 0, 0, 0, 0xffff };
	frame.target = (struct fl_display_compose_target){
		NULL, dst->size[0], dst->offset[0], dst->pitch[0], dst->format, dst->w, dst->h
	};
	frame.target.map = map_fd(dst->fd[0], dst->size[0], true);
	if (!frame.target.map)
		return -errno;
	for (; mapped < n; mapped++) {
		const struct fl_display_driver_buffer *b = &bufs[mapped];
		const struct fl__display_format *f = fl__display_format_find(b->format);
		struct fl_display_compose_layer *l = &layers[mapped];

		*l = (struct fl_display_compose_layer){
			.fourcc = b->format,
			.w = b->w,
			.h = b->h,
			.n_planes = b->n_planes,
			.src_w = b->w << 16,
			.src_h = b->h << 16,
			.dst_w = b->w,
			.dst_h = b->h,
			.zpos = compose_z(dl, n, mapped),
			.blend = f && f->alpha ? FL_DISPLAY_BLEND_PREMULTIPLIED
					       : FL_DISPLAY_BLEND_NONE,
			.alpha = 0xffff,
		};
		if (dl && (dl[mapped].flags & FL_DISPLAY_LAYER_ENABLED)) {
			const struct fl_display_layer *y = &dl[mapped];

			l->src_x = y->src_x;
			l->src_y = y->src_y;
			l->src_w = y->src_w;
			l->src_h = y->src_h;
			l->dst_x = y->dst_x;
			l->dst_y = y->dst_y;
			l->dst_w = y->dst_w;
			l->dst_h = y->dst_h;
			l->blend = y->blend;
			l->alpha = (uint16_t)y->alpha;
			l->transform = y->transform;
			l->filter = y->filter;
		}
		for (uint32_t p = 0; p < b->n_planes && p < FL_DISPLAY_MAX_PLANES; p++) {
			l->plane[p] = (struct fl_display_compose_plane){
				map_fd(b->fd[p], b->size[p], false), b->size[p], b->offset[p],
				b->pitch[p]
			};
			if (!l->plane[p].map) {
				r = -errno;
				mapped++;
				goto out;
			}
		}
	}
	frame.layers = layers;
	frame.n_layers = n;
	r = fl__display_compose(compositor, &frame, &e);
	if (r < 0)
		displayd_log("composition refused: %s", e.msg);
out:
	for (size_t i = 0; i < mapped; i++)
		for (uint32_t p = 0; p < layers[i].n_planes && p < FL_DISPLAY_MAX_PLANES; p++)
			if (layers[i].plane[p].map)
				munmap((void *)layers[i].plane[p].map,
				       (size_t)layers[i].plane[p].size);
	munmap(frame.target.map, (size_t)dst->size[0]);
	return r;
}

static int h_layout(const struct fl_display_host *host, uint32_t fourcc, unsigned int *planes,
		    unsigned int cpp[FL_DISPLAY_MAX_PLANES])
{
	const struct fl__display_format *f = fl__display_format_find(fourcc);

	(void)host;
	if (!f)
		return -EINVAL;
	*planes = f->planes;
	for (unsigned int i = 0; i < FL_DISPLAY_MAX_PLANES; i++)
		cpp[i] = i < 3 ? f->cpp[i] : 0;
	return 0;
}

/* ---- replies ---- */

static uint8_t reply_buf[FL_DPROTO_MAX_REPLY];

/* Appends @len bytes of @src to the reply being built in reply_buf, at *@at. */
static void put(size_t *at, const void *src, size_t len)
{
	memcpy(reply_buf + *at, src, len);
	*at += len;
}

static bool reply(struct dconn *c, const struct fl_msg_hdr *req, const void *body, size_t len,
		  const int *fds, unsigned int nfds)
{
	return fl__server_reply(&c->conn, req, body, len, fds, nfds);
}

static bool reply_status(struct dconn *c, const struct fl_msg_hdr *req, int status,
			 const struct fl_display_error *e)
{
	struct {
		struct fl_msg_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} b = { { status, 0 }, "" };
	size_t len = sizeof(b.r);

	if (status < 0) {
		snprintf(b.msg, sizeof(b.msg), "%s", e && e->msg[0] ? e->msg : strerror(-status));
		len += strlen(b.msg) + 1;
	}
	return reply(c, req, &b, len, NULL, 0);
}

static bool fail(struct dconn *c, const struct fl_msg_hdr *req, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool fail(struct dconn *c, const struct fl_msg_hdr *req, int status, const char *fmt, ...)
{
	struct fl_display_error e = { status, "" };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	return reply_status(c, req, status, &e);
}

/* ---- handles ---- */

static struct handle *handle_get(struct dconn *c, uint32_t h, uint32_t kind)
{
	if (h >= MAX_HANDLES || !c->handles[h].used)
		return NULL;
	if (kind != UINT32_MAX && c->handles[h].kind != kind)
		return NULL;
	return &c->handles[h];
}

/*
 * Whether a handle other than @except subscribes to @type on @except's
 * object: the driver's event is on while anyone's is (ADF's refcount).
 */
static bool others_subscribed(const struct handle *except, uint32_t type)
{
	for (struct fl_server_conn *c = fl__server_conn_next(server, NULL); c;
	     c = fl__server_conn_next(server, c)) {
		struct dconn *dc = dconn_of(c);

		for (size_t h = 0; h < MAX_HANDLES; h++) {
			const struct handle *o = &dc->handles[h];

			if (o != except && o->used && o->kind == except->kind &&
			    o->device == except->device && o->id == except->id &&
			    bit(o->subscribed, type))
				return true;
		}
	}
	return false;
}

/* Drop @h's subscriptions and its pipe. */
static void handle_close(struct handle *h)
{
	struct ddev *d = ddev_by_id(h->device);

	for (uint32_t t = FL_DISPLAY_EVENT_DEVICE_CUSTOM; t < FL_DISPLAY_EVENT_TYPE_MAX; t++)
		if (bit(h->subscribed, t) && d && d->drv->set_event && !others_subscribed(h, t))
			d->drv->set_event(d->drv_data, h->kind, h->id, t, false);
	close(h->events);
	memset(h, 0, sizeof(*h));
}

/* ---- handlers ---- */

static bool do_hello(struct dconn *c, const struct fl_dproto_request *q)
{
	struct fl_dmsg_hello_reply r = { { 0, 0 }, 0, (uint32_t)getpid() };

	r.version = q->u.hello.version < FL_DPROTO_VERSION ? q->u.hello.version : FL_DPROTO_VERSION;
	return reply(c, &q->hdr, &r, sizeof(r), NULL, 0);
}

static bool do_devices(struct dconn *c, const struct fl_dproto_request *q)
{
	struct fl_dmsg_devices_reply r = { { 0, 0 }, (uint32_t)n_devs, 0 };
	uint32_t ids[FL_DISPLAY_CONFIG_MAX_DEVICES];

	for (size_t i = 0; i < n_devs; i++)
		ids[i] = fl__display_device_id(devs[i].dev);
	memcpy(reply_buf, &r, sizeof(r));
	memcpy(reply_buf + sizeof(r), ids, n_devs * sizeof(ids[0]));
	return reply(c, &q->hdr, reply_buf, sizeof(r) + n_devs * sizeof(ids[0]), NULL, 0);
}

static bool do_open(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_open *o = &q->u.open;
	struct ddev *d = ddev_by_id(o->device);
	struct fl_dmsg_open_reply r = { { 0, 0 }, 0, 0 };
	int p[2];
	size_t h;
	bool ok;

	if (!d)
		return fail(c, &q->hdr, -ENODEV, "no display device %" PRIu32, o->device);
	if (o->kind == FL_DISPLAY_OBJ_INTERFACE && !fl__display_interface_get(d->dev, o->id))
		return fail(c, &q->hdr, -ENODEV, "device %s has no interface %" PRIu32,
			    fl__display_device_name(d->dev), o->id);
	if (o->kind == FL_DISPLAY_OBJ_ENGINE && !fl__display_engine_get(d->dev, o->id))
		return fail(c, &q->hdr, -ENODEV, "device %s has no overlay engine %" PRIu32,
			    fl__display_device_name(d->dev), o->id);
	for (h = 0; h < MAX_HANDLES && c->handles[h].used; h++)
		;
	if (h == MAX_HANDLES)
		return fail(c, &q->hdr, -EMFILE, "%d handles open already", MAX_HANDLES);
	if (pipe2(p, O_CLOEXEC) < 0)
		return fail(c, &q->hdr, -errno, "cannot make the handle's event pipe");
	/* ADF's per-file ring: 4096 bytes (a page, the least a pipe holds); full drops. */
	(void)!fcntl(p[1], F_SETPIPE_SZ, FL_DISPLAY_EVENT_RING);
	(void)!fcntl(p[1], F_SETFL, O_NONBLOCK);
	c->handles[h] = (struct handle){ true, o->kind, o->device, o->id, p[1], { 0 } };
	r.handle = (uint32_t)h;
	ok = reply(c, &q->hdr, &r, sizeof(r), &p[0], 1);
	close(p[0]);
	return ok;
}

static bool do_close(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.handle.handle, UINT32_MAX);

	if (!h)
		return fail(c, &q->hdr, -EBADF, "no handle %" PRIu32, q->u.handle.handle);
	handle_close(h);
	return reply_status(c, &q->hdr, 0, NULL);
}

static bool wrong_kind(struct dconn *c, const struct fl_msg_hdr *req, uint32_t h, const char *want)
{
	/* ADF: a standard ioctl on the wrong kind of object is -EINVAL. */
	return fail(c, req, h < MAX_HANDLES ? -EINVAL : -EBADF, "handle %" PRIu32 " is not %s", h,
		    want);
}

static bool do_device_data(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_DEVICE);
	static struct fl_display_attachment att[FL_DISPLAY_MAX_ATTACHMENTS],
		allowed[FL_DISPLAY_MAX_ATTACHMENTS];
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	struct fl_display_device_data data = { "",
					       att,
					       FL_DISPLAY_MAX_ATTACHMENTS,
					       allowed,
					       FL_DISPLAY_MAX_ATTACHMENTS,
					       custom,
					       sizeof(custom) };
	struct fl_dmsg_device_data_reply r = { { 0, 0 }, "", 0, 0, 0, 0 };
	struct fl_display_error e;
	size_t at;
	int err;

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.handle.handle, "a device");
	err = fl__display_device_data(ddev_by_id(h->device)->dev, &data, &e);
	if (err)
		return reply_status(c, &q->hdr, err, &e);
	memcpy(r.name, data.name, sizeof(r.name));
	r.n_attachments = (uint32_t)data.n_attachments;
	r.n_allowed = (uint32_t)data.n_allowed;
	r.custom_size = (uint32_t)data.custom_data_size;
	at = 0;
	put(&at, &r, sizeof(r));
	put(&at, att, data.n_attachments * sizeof(att[0]));
	put(&at, allowed, data.n_allowed * sizeof(allowed[0]));
	put(&at, custom, data.custom_data_size);
	return reply(c, &q->hdr, reply_buf, at, NULL, 0);
}

static bool do_interface_data(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_INTERFACE);
	static struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	struct fl_display_interface_data data;
	struct fl_dmsg_interface_data_reply r;
	struct fl_display_error e;
	size_t at;
	int err;

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.handle.handle, "an interface");
	memset(&data, 0, sizeof(data));
	data.modes = modes;
	data.n_modes = FL_DISPLAY_MAX_MODES;
	data.custom_data = custom;
	data.custom_data_size = sizeof(custom);
	err = fl__display_interface_data(
		fl__display_interface_get(ddev_by_id(h->device)->dev, h->id), &data, &e);
	if (err)
		return reply_status(c, &q->hdr, err, &e);
	memset(&r, 0, sizeof(r));
	memcpy(r.name, data.name, sizeof(r.name));
	r.type = data.type;
	r.id = data.id;
	r.flags = data.flags;
	r.dpms_state = data.dpms_state;
	r.hotplug_detect = data.hotplug_detect;
	r.width_mm = data.width_mm;
	r.height_mm = data.height_mm;
	r.current_mode = data.current_mode;
	r.n_modes = (uint32_t)data.n_modes;
	r.custom_size = (uint32_t)data.custom_data_size;
	at = 0;
	put(&at, &r, sizeof(r));
	put(&at, modes, data.n_modes * sizeof(modes[0]));
	put(&at, custom, data.custom_data_size);
	return reply(c, &q->hdr, reply_buf, at, NULL, 0);
}

static bool do_engine_data(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_ENGINE);
	static uint32_t formats[FL_DISPLAY_MAX_FORMATS];
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	struct fl_display_engine_data data = { "", formats, FL_DISPLAY_MAX_FORMATS, custom,
					       sizeof(custom) };
	struct fl_dmsg_engine_data_reply r;
	struct fl_display_error e;
	size_t at;
	int err;

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.handle.handle, "an overlay engine");
	err = fl__display_engine_data(fl__display_engine_get(ddev_by_id(h->device)->dev, h->id),
				      &data, &e);
	if (err)
		return reply_status(c, &q->hdr, err, &e);
	memset(&r, 0, sizeof(r));
	memcpy(r.name, data.name, sizeof(r.name));
	r.n_formats = (uint32_t)data.n_formats;
	r.custom_size = (uint32_t)data.custom_data_size;
	at = 0;
	put(&at, &r, sizeof(r));
	put(&at, formats, data.n_formats * sizeof(formats[0]));
	put(&at, custom, data.custom_data_size);
	return reply(c, &q->hdr, reply_buf, at, NULL, 0);
}

static bool do_attach(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_attach *a = &q->u.attach;
	struct handle *h = handle_get(c, a->handle, FL_DISPLAY_OBJ_DEVICE);
	struct fl_display_error e;
	struct fl__display_device *dev;
	int r;

	if (!h)
		return wrong_kind(c, &q->hdr, a->handle, "a device");
	dev = ddev_by_id(h->device)->dev;
	r = q->hdr.op == FL_DOP_ATTACH ? fl__display_attach(dev, a->engine, a->interface, &e)
				       : fl__display_detach(dev, a->engine, a->interface, &e);
	return reply_status(c, &q->hdr, r, &e);
}

static bool do_blank(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.blank.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_display_error e;
	int r;

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.blank.handle, "an interface");
	r = fl__display_interface_blank(
		fl__display_interface_get(ddev_by_id(h->device)->dev, h->id), q->u.blank.state, &e);
	if (!r)
		kick(ddev_by_id(h->device));
	return reply_status(c, &q->hdr, r, &e);
}

static bool do_set_mode(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.set_mode.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_display_mode m = q->u.set_mode.mode;
	struct fl_display_error e;
	int r;

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.set_mode.handle, "an interface");
	/* A peer's name may lack its NUL: the model copies it whole. */
	m.name[sizeof(m.name) - 1] = '\0';
	r = fl__display_interface_set_mode(
		fl__display_interface_get(ddev_by_id(h->device)->dev, h->id), &m, &e);
	return reply_status(c, &q->hdr, r, &e);
}

static bool do_set_event(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_set_event *s = &q->u.set_event;
	struct handle *h = handle_get(c, s->handle, UINT32_MAX);
	struct ddev *d;
	bool custom =
		s->type >= FL_DISPLAY_EVENT_DEVICE_CUSTOM && s->type < FL_DISPLAY_EVENT_TYPE_MAX;
	bool std = h && h->kind == FL_DISPLAY_OBJ_INTERFACE &&
		   (s->type == FL_DISPLAY_EVENT_VSYNC || s->type == FL_DISPLAY_EVENT_HOTPLUG);
	int r;

	if (!h)
		return fail(c, &q->hdr, -EBADF, "no handle %" PRIu32, s->handle);
	d = ddev_by_id(h->device);
	/* ADF's order: an object with no events at all, then a type it lacks. */
	if (h->kind != FL_DISPLAY_OBJ_INTERFACE && !d->drv->set_event)
		return fail(c, &q->hdr, -EOPNOTSUPP, "this object has no events");
	if (!std && !(custom && d->drv->set_event))
		return fail(c, &q->hdr, -EINVAL,
			    "event type %" PRIu32 " is not one of this object's", s->type);
	if (bit(h->subscribed, s->type) == !!s->enabled)
		return fail(c, &q->hdr, -EALREADY, "event type %" PRIu32 " is %s already", s->type,
			    s->enabled ? "on" : "off");
	if (custom && !others_subscribed(h, s->type)) {
		r = d->drv->set_event(d->drv_data, h->kind, h->id, s->type, s->enabled);
		if (r < 0)
			return fail(c, &q->hdr, r, "the driver refused event type %" PRIu32,
				    s->type);
	}
	h->subscribed[s->type / 8] ^= (uint8_t)(1u << (s->type % 8));
	return reply_status(c, &q->hdr, 0, NULL);
}

static bool do_simple_alloc(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_simple_alloc *a = &q->u.simple_alloc;
	struct handle *h = handle_get(c, a->handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_dmsg_simple_alloc_reply r = { { 0, 0 }, 0, 0 };
	const struct fl__display_format *f = fl__display_format_find(a->format);
	struct ddev *d;
	char fcc[5];
	int fd, err;
	bool ok;

	if (!h)
		return wrong_kind(c, &q->hdr, a->handle, "an interface");
	d = ddev_by_id(h->device);
	if (!d->drv->alloc_simple_buffer)
		return fail(c, &q->hdr, -EOPNOTSUPP, "the driver has no simple buffers");
	if (!f || !f->rgb)
		return fail(c, &q->hdr, -EINVAL, "format %s is not one of ADF's RGB formats",
			    fl__display_format_str(a->format, fcc));
	if (!a->w || !a->h || a->w > UINT16_MAX || a->h > UINT16_MAX)
		return fail(c, &q->hdr, -EINVAL, "a simple buffer is 1 to 65535 pixels a side");
	err = d->drv->alloc_simple_buffer(d->drv_data, h->id, a->w, a->h, a->format, &fd, &r.offset,
					  &r.pitch);
	if (err < 0)
		return fail(c, &q->hdr, err,
			    "the driver could not allocate a %" PRIu32 "x%" PRIu32 " simple buffer",
			    a->w, a->h);
	ok = reply(c, &q->hdr, &r, sizeof(r), &fd, 1);
	close(fd);
	return ok;
}

static bool do_set_connected(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.set_connected.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct ddev *d;
	int r;

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.set_connected.handle, "an interface");
	d = ddev_by_id(h->device);
	if (!d->drv->set_connected)
		return fail(c, &q->hdr, -EOPNOTSUPP, "the driver cannot simulate hotplug");
	r = d->drv->set_connected(d->drv_data, h->id, q->u.set_connected.connected);
	return reply_status(c, &q->hdr, r, NULL);
}

static bool do_capture(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.capture.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_dmsg_capture_reply r = { { 0, 0 }, 0, 0, 0, q->u.capture.format };
	struct fl_display_driver_buffer dst = { 0 };
	const struct fl_display_mode *m;
	struct ddev *d;
	char fcc[5];
	int fd, err;
	bool ok;

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.capture.handle, "an interface");
	d = ddev_by_id(h->device);
	if (!d->drv->capture)
		return fail(c, &q->hdr, -EOPNOTSUPP, "the driver cannot show its frames");
	if (r.format != FL_FOURCC('X', 'R', '2', '4') && r.format != FL_FOURCC('A', 'R', '2', '4'))
		return fail(c, &q->hdr, -EINVAL, "a capture is XRGB8888 or ARGB8888, not %s",
			    fl__display_format_str(r.format, fcc));
	m = fl__display_interface_current_mode(fl__display_interface_get(d->dev, h->id));
	if (!m->hdisplay || !m->vdisplay)
		return fail(c, &q->hdr, -ENODEV, "the interface has no mode: nothing to show");
	r.w = m->hdisplay;
	r.h = m->vdisplay;
	r.pitch = r.w * 4;
	fd = memfd_create("fl-display-capture", MFD_CLOEXEC);
	if (fd < 0)
		return fail(c, &q->hdr, -errno, "cannot make the capture's memory");
	dst = (struct fl_display_driver_buffer){ .w = r.w,
						 .h = r.h,
						 .format = r.format,
						 .n_planes = 1,
						 .pitch = { r.pitch },
						 .size = { (uint64_t)r.pitch * r.h },
						 .fd = { fd, -1, -1, -1 } };
	err = ftruncate(fd, (off_t)dst.size[0]) < 0 ? -errno : 0;
	if (!err)
		err = d->drv->capture(d->drv_data, h->id, &dst);
	if (err) {
		close(fd);
		return fail(c, &q->hdr, err, "the frame could not be composed: %s", strerror(-err));
	}
	ok = reply(c, &q->hdr, &r, sizeof(r), &fd, 1);
	close(fd);
	return ok;
}

static bool do_dump(struct dconn *c, const struct fl_dproto_request *q)
{
	struct fl_msg_reply r = { 0, 0 };
	int fd, err = displayd_dump(q->u.dump.flags, &fd);
	bool ok;

	if (err)
		return fail(c, &q->hdr, err, "cannot write the dump: %s", strerror(-err));
	ok = reply(c, &q->hdr, &r, sizeof(r), &fd, 1);
	close(fd);
	return ok;
}

static bool do_stats(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_DEVICE);
	struct fl_dmsg_stats_reply r = { { 0, 0 }, { 0 } };

	if (!h)
		return wrong_kind(c, &q->hdr, q->u.handle.handle, "a device");
	r.stats = ddev_by_id(h->device)->st;
	return reply(c, &q->hdr, &r, sizeof(r), NULL, 0);
}

/* The size of the memory @fd holds: a memfd's, a file's, a dma-buf's. */
static uint64_t fd_size(int fd)
{
	struct stat st;
	off_t end;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return (uint64_t)st.st_size;
	end = lseek(fd, 0, SEEK_END);
	return end > 0 ? (uint64_t)end : 0;
}

/*
 * The layers of a post (NULL: none), checked before the driver sees them:
 * what every software-composing driver would refuse, with the buffer named.
 */
static int check_layers(struct ddev *d, const uint32_t *intfs, size_t n_intfs,
			const struct fl_display_driver_buffer *bufs,
			const struct fl_display_layer *layers, size_t n_bufs,
			struct fl_display_error *e)
{
	for (size_t i = 0; layers && i < n_bufs; i++) {
		const struct fl_display_layer *l = &layers[i];
		const struct fl_display_driver_buffer *b = &bufs[i];

		if (!(l->flags & FL_DISPLAY_LAYER_ENABLED)) {
			if (l->flags)
				return fl__display_fail(e, -EINVAL,
							"buffer %zu: unknown layer flags 0x%x", i,
							l->flags);
			continue;
		}
		if (l->flags & ~FL_DISPLAY_LAYER_ENABLED || l->reserved[0] || l->reserved[1])
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: unknown layer flags 0x%x or reserved "
						"fields not 0",
						i, l->flags);
		if (!l->src_w || !l->src_h)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: layer source rect has zero size", i);
		if ((uint64_t)l->src_x + l->src_w > (uint64_t)b->w << 16 ||
		    (uint64_t)l->src_y + l->src_h > (uint64_t)b->h << 16)
			return fl__display_fail(
				e, -EINVAL,
				"buffer %zu: layer source rect %.4f,%.4f %.4fx%.4f is outside the "
				"buffer's %ux%u",
				i, l->src_x / 65536.0, l->src_y / 65536.0, l->src_w / 65536.0,
				l->src_h / 65536.0, b->w, b->h);
		if (l->blend > FL_DISPLAY_BLEND_COVERAGE)
			return fl__display_fail(e, -EINVAL, "buffer %zu: unknown blend mode %u", i,
						l->blend);
		if (l->transform > FL_DISPLAY_TRANSFORM_MAX)
			return fl__display_fail(e, -EINVAL, "buffer %zu: unknown transform %u", i,
						l->transform);
		if (l->filter > FL_DISPLAY_FILTER_NEAREST)
			return fl__display_fail(e, -EINVAL, "buffer %zu: unknown filter %u", i,
						l->filter);
		if (l->alpha > 0xffff)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: plane alpha 0x%x is above 0xffff", i,
						l->alpha);
		/* The bound holds where no interface of the post has a mode to bound it. */
		if (!l->dst_w || !l->dst_h || l->dst_x < 0 || l->dst_y < 0 ||
		    l->dst_w > FL_DISPLAY_COMPOSE_MAX_SIZE ||
		    l->dst_h > FL_DISPLAY_COMPOSE_MAX_SIZE)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: layer destination rect %d,%d %ux%u is "
						"empty, starts off the screen or is over %d pixels",
						i, l->dst_x, l->dst_y, l->dst_w, l->dst_h,
						FL_DISPLAY_COMPOSE_MAX_SIZE);
		for (size_t k = 0; k < n_intfs; k++) {
			struct fl__display_interface *intf =
				fl__display_interface_get(d->dev, intfs[k]);
			const struct fl_display_mode *m =
				intf ? fl__display_interface_current_mode(intf) : NULL;

			if (!m || !m->hdisplay || !m->vdisplay)
				continue;
			if ((uint64_t)(uint32_t)l->dst_x + l->dst_w > m->hdisplay ||
			    (uint64_t)(uint32_t)l->dst_y + l->dst_h > m->vdisplay)
				return fl__display_fail(
					e, -EINVAL,
					"buffer %zu: layer destination rect %d,%d %ux%u is outside "
					"interface %u's mode %ux%u",
					i, l->dst_x, l->dst_y, l->dst_w, l->dst_h, intfs[k],
					m->hdisplay, m->vdisplay);
		}
		for (size_t j = 0; j < i; j++)
			if ((layers[j].flags & FL_DISPLAY_LAYER_ENABLED) &&
			    layers[j].zpos == l->zpos)
				return fl__display_fail(
					e, -EINVAL, "buffers %zu and %zu have the same z order %u",
					j, i, l->zpos);
	}
	return 0;
}

/*
 * A writeback destination (@wb, NULL: none): only with a memory interface
 * among the post's, of its mode's size, a format the compositor writes,
 * its pitch and memory big enough and aligned as pixman wants them.
 */
static int check_writeback(struct ddev *d, const uint32_t *intfs, size_t n_intfs,
			   const struct fl_display_driver_buffer *wb, struct fl_display_error *e)
{
	const struct fl_display_mode *m = NULL;
	const struct fl__display_format *f;
	uint32_t mem = 0;

	if (!wb)
		return 0;
	for (size_t k = 0; k < n_intfs && !m; k++) {
		struct fl__display_interface *intf = fl__display_interface_get(d->dev, intfs[k]);

		if (intf && fl__display_interface_type(intf) == FL_DISPLAY_INTF_MEMORY) {
			m = fl__display_interface_current_mode(intf);
			mem = intfs[k];
		}
	}
	if (!m)
		return fl__display_fail(e, -EINVAL,
					"writeback: the post names no memory-writeback interface");
	if (wb->w != m->hdisplay || wb->h != m->vdisplay)
		return fl__display_fail(e, -EINVAL,
					"writeback: %ux%u is not interface %u's mode %ux%u", wb->w,
					wb->h, mem, m->hdisplay, m->vdisplay);
	f = fl__display_format_find(wb->format);
	if (!f || !fl__display_compose_format_ok(wb->format, FL_DISPLAY_COMPOSE_TARGET))
		return fl__display_fail(e, -EINVAL,
					"writeback: format 0x%08x is not an RGB format the "
					"compositor writes",
					wb->format);
	if ((uint64_t)wb->pitch[0] < (uint64_t)wb->w * f->cpp[0] || wb->pitch[0] % 4 ||
	    wb->offset[0] % 4)
		return fl__display_fail(
			e, -EINVAL,
			"writeback: pitch %u (at least %u x %u bytes) and offset %u "
			"must be multiples of 4",
			wb->pitch[0], wb->w, f->cpp[0], wb->offset[0]);
	if ((uint64_t)wb->offset[0] + (uint64_t)wb->pitch[0] * wb->h > wb->size[0])
		return fl__display_fail(e, -EINVAL,
					"writeback: offset %u + %u lines of pitch %u end past its "
					"%llu-byte memory",
					wb->offset[0], wb->h, wb->pitch[0],
					(unsigned long long)wb->size[0]);
	return 0;
}

/*
 * A post's checks and its queueing (POST and SIMPLE_POST). @fds: the
 * post's, in wire order (taken: each is closed or kept).
 */
static bool post(struct dconn *c, const struct fl_msg_hdr *req, struct ddev *d, uint32_t flags,
		 uint32_t fence_type, const uint32_t *intfs, size_t n_intfs,
		 const struct fl_dmsg_buffer *wb, const struct fl_display_layer *layers,
		 size_t n_bufs, const void *custom, size_t custom_size,
		 const struct fl_dmsg_writeback *dest, int *fds, unsigned int nfds)
{
	struct fl_dmsg_post_reply r = { { 0, 0 }, 0, 0 };
	struct fl_display_driver_post dp;
	struct fl_display_error e = { 0, "" };
	struct dpost *p;
	unsigned int k = 0;
	int acquire[FL_DISPLAY_MAX_BUFFERS], fence = -1, err;
	void *state = NULL;
	bool ok;

	p = calloc(1, sizeof(*p) + n_bufs * sizeof(p->bufs[0]));
	if (!p) {
		err = -ENOMEM;
		goto refuse;
	}
	p->d = d;
	p->n_bufs = n_bufs;
	p->wb.fd[0] = -1;
	for (size_t i = 0; i < n_bufs; i++) {
		struct fl_display_driver_buffer *b = &p->bufs[i];

		b->engine = wb[i].engine;
		b->w = wb[i].w;
		b->h = wb[i].h;
		b->format = wb[i].format;
		b->n_planes = wb[i].n_planes;
		for (uint32_t pl = 0; pl < FL_DISPLAY_MAX_PLANES; pl++) {
			b->offset[pl] = wb[i].offset[pl];
			b->pitch[pl] = wb[i].pitch[pl];
			b->fd[pl] = pl < b->n_planes ? fds[k++] : -1;
			b->size[pl] = pl < b->n_planes ? fd_size(b->fd[pl]) : 0;
		}
		acquire[i] = wb[i].flags & FL_DBUF_ACQUIRE ? fds[k++] : -1;
	}
	if (dest) {
		p->wb = (struct fl_display_driver_buffer){ .w = dest->w,
							   .h = dest->h,
							   .format = dest->format,
							   .n_planes = 1,
							   .offset = { dest->offset },
							   .pitch = { dest->pitch },
							   .fd = { fds[k], -1, -1, -1 } };
		p->wb.size[0] = fd_size(fds[k]);
		k++;
	}
	err = fl__display_post_check(d->dev, intfs, n_intfs, p->bufs, n_bufs, custom_size, &e);
	if (!err)
		err = check_layers(d, intfs, n_intfs, p->bufs, layers, n_bufs, &e);
	if (!err)
		err = check_writeback(d, intfs, n_intfs, dest ? &p->wb : NULL, &e);
	for (size_t i = 0; !err && i < n_bufs; i++) {
		int st;

		if (acquire[i] < 0)
			continue;
		st = fl_fence_fd_get_status(acquire[i]);
		if (st == -ENOTTY || st == -EBADF)
			err = fl__display_fail(&e, -EINVAL,
					       "buffer %zu: its acquire fence is not a fence", i);
	}
	if (err)
		goto refuse;
	dp = (struct fl_display_driver_post){ intfs,  n_intfs,	   p->bufs, n_bufs,
					      custom, custom_size, layers,  dest ? &p->wb : NULL };
	err = d->drv->validate(d->drv_data, &dp, &state, &e);
	if (err) {
		if (!e.msg[0])
			fl__display_fail(&e, err, "the driver refused the post");
		goto refuse;
	}
	if (flags & FL_DISPLAY_POST_TEST_ONLY) {
		/* Checked as a real post; nothing is queued, kept or signalled. */
		if (d->drv->state_free)
			d->drv->state_free(d->drv_data, state);
		goto done_closing;
	}
	if (c->queued >= MAX_QUEUED) {
		err = fl__display_fail(&e, -EBUSY,
				       "%u posts of this client wait to flip already (at most %d)",
				       c->queued, MAX_QUEUED);
		goto refuse_state;
	}
	p->intfs = malloc((n_intfs ? n_intfs : 1) * sizeof(*p->intfs));
	if (!p->intfs) {
		err = -ENOMEM;
		goto refuse_state;
	}
	memcpy(p->intfs, intfs, n_intfs * sizeof(*intfs));
	err = timelines(d);
	if (err) {
		fl__display_fail(&e, err, "cannot make the device's fences (fencelined: %s)",
				 strerror(-err));
		goto refuse_state;
	}
	p->seq = d->seq + 1;
	if (fence_type == FL_DISPLAY_FENCE_RELEASE || fence_type == FL_DISPLAY_FENCE_PRESENT) {
		bool rel = fence_type == FL_DISPLAY_FENCE_RELEASE;

		err = fl_fence_fd_create(rel ? d->tl_release : d->tl_present, p->seq,
					 rel ? "display-release" : "display-present", &fence);
		if (err) {
			fl__display_fail(&e, err, "cannot make the post's fence: %s",
					 strerror(-err));
			goto refuse_state;
		}
	}
	p->n_intfs = n_intfs;
	p->state = state;
	p->owner = c;
	p->queued_ns = fl__now_ns();
	c->queued++;
	d->seq = p->seq;
	d->st.posted++;
	d->st.queued++;
	if (d->tail)
		d->tail->next = p;
	else
		d->head = p;
	d->tail = p;
	for (size_t i = 0; i < n_bufs; i++) {
		int st;

		if (acquire[i] < 0)
			continue;
		st = fl_fence_fd_get_status(acquire[i]);
		p->acquire[p->n_acquire] = acquire[i];
		p->acq_buf[p->n_acquire] = i;
		p->pending++;
		p->n_acquire++;
		if (st != 0) {
			acquire_done(p, p->n_acquire - 1, st > 0 ? 0 : st);
			continue;
		}
		p->acq_src[p->n_acquire - 1] =
			fl__loop_add_fd(loop, acquire[i], EPOLLIN, acquire_ready, p);
		if (!p->acq_src[p->n_acquire - 1])
			acquire_done(p, p->n_acquire - 1, -ENOMEM);
	}
	if (p->pending) {
		p->timeout = fl__loop_add_timer(loop, acquire_timeout, p);
		if (p->timeout)
			fl__loop_timer_arm(p->timeout,
					   fl__now_ns() + (uint64_t)cfg.fence_timeout_ms * 1000000u,
					   0);
	} else {
		kick(d);
	}
	r.flags = fence >= 0 ? FL_DPOST_R_FENCE : 0;
	ok = reply(c, req, &r, sizeof(r), &fence, fence >= 0);
	if (fence >= 0)
		close(fence);
	return ok;

done_closing:
	for (size_t i = 0; i < n_bufs; i++) {
		for (uint32_t pl = 0; pl < p->bufs[i].n_planes; pl++)
			close(p->bufs[i].fd[pl]);
		if (acquire[i] >= 0)
			close(acquire[i]);
	}
	if (p->wb.fd[0] >= 0)
		close(p->wb.fd[0]);
	free(p);
	return reply(c, req, &r, sizeof(r), NULL, 0);

refuse_state:
	if (d->drv->state_free)
		d->drv->state_free(d->drv_data, state);
refuse:
	if (p) {
		for (size_t i = 0; i < n_bufs; i++) {
			for (uint32_t pl = 0; pl < p->bufs[i].n_planes; pl++)
				close(p->bufs[i].fd[pl]);
			if (acquire[i] >= 0)
				close(acquire[i]);
		}
		if (p->wb.fd[0] >= 0)
			close(p->wb.fd[0]);
		free(p->intfs);
		free(p);
	} else {
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
	}
	return reply_status(c, req, err, &e);
}

static bool do_post(struct dconn *c, const struct fl_dproto_request *q, int *fds)
{
	const struct fl_dmsg_post *pm = &q->u.post;
	struct handle *h = handle_get(c, pm->handle, FL_DISPLAY_OBJ_DEVICE);
	static uint32_t intfs[FL_DISPLAY_MAX_INTERFACES];
	static struct fl_dmsg_buffer bufs[FL_DISPLAY_MAX_BUFFERS];
	static struct fl_display_layer layers[FL_DISPLAY_MAX_BUFFERS];
	struct fl_dmsg_writeback dest;
	int all[FL_DPROTO_POST_MAX_FDS];
	unsigned int n = 0;

	/* The stash first, then the message's: the wire order. */
	memcpy(all, c->stash, c->n_stash * sizeof(int));
	n = c->n_stash;
	c->n_stash = 0;
	memcpy(all + n, fds, q->nfds * sizeof(int));
	n += q->nfds;
	for (unsigned int i = 0; i < q->nfds; i++)
		fds[i] = -1;
	if (!h) {
		for (unsigned int i = 0; i < n; i++)
			close(all[i]);
		return wrong_kind(c, &q->hdr, pm->handle, "a device");
	}
	memcpy(intfs, q->intfs, pm->n_intfs * sizeof(uint32_t));
	memcpy(bufs, q->bufs, pm->n_bufs * sizeof(bufs[0]));
	if (q->layers)
		memcpy(layers, q->layers, pm->n_bufs * sizeof(layers[0]));
	if (q->writeback)
		memcpy(&dest, q->writeback, sizeof(dest));
	return post(c, &q->hdr, ddev_by_id(h->device),
		    pm->flags & ~(FL_DPOST_LAYERS | FL_DPOST_WRITEBACK), pm->fence_type, intfs,
		    pm->n_intfs, bufs, q->layers ? layers : NULL, pm->n_bufs, q->custom,
		    pm->custom_size, q->writeback ? &dest : NULL, all, n);
}

static bool do_simple_post(struct dconn *c, const struct fl_dproto_request *q, int *fds)
{
	const struct fl_dmsg_simple_post *s = &q->u.simple_post;
	struct handle *h = handle_get(c, s->handle, FL_DISPLAY_OBJ_INTERFACE);
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	int mine[FL_DISPLAY_MAX_PLANES + 1];
	size_t custom_size = 0;
	struct ddev *d;

	memcpy(mine, fds, q->nfds * sizeof(int));
	for (unsigned int i = 0; i < q->nfds; i++)
		fds[i] = -1;
	if (!h) {
		for (unsigned int i = 0; i < q->nfds; i++)
			close(mine[i]);
		return wrong_kind(c, &q->hdr, s->handle, "an interface");
	}
	d = ddev_by_id(h->device);
	if (d->drv->describe_simple_post) {
		struct fl_display_driver_buffer b = { s->buf.engine, s->buf.w, s->buf.h,
						      s->buf.format, s->buf.n_planes };
		int r = d->drv->describe_simple_post(d->drv_data, h->id, &b, custom, &custom_size);

		if (r < 0 || custom_size > sizeof(custom)) {
			for (unsigned int i = 0; i < q->nfds; i++)
				close(mine[i]);
			return fail(c, &q->hdr, r < 0 ? r : -EIO,
				    "the driver could not describe the simple post");
		}
	}
	return post(c, &q->hdr, d, 0, s->fence_type, &h->id, 1, &s->buf, NULL, 1, custom,
		    custom_size, NULL, mine, q->nfds);
}

static bool handle_request(struct dconn *c, const struct fl_dproto_request *q, int *fds)
{
	switch (q->hdr.op) {
	case FL_DOP_HELLO:
		return do_hello(c, q);
	case FL_DOP_DEVICES:
		return do_devices(c, q);
	case FL_DOP_OPEN:
		return do_open(c, q);
	case FL_DOP_CLOSE:
		return do_close(c, q);
	case FL_DOP_DEVICE_DATA:
		return do_device_data(c, q);
	case FL_DOP_INTERFACE_DATA:
		return do_interface_data(c, q);
	case FL_DOP_ENGINE_DATA:
		return do_engine_data(c, q);
	case FL_DOP_ATTACH:
	case FL_DOP_DETACH:
		return do_attach(c, q);
	case FL_DOP_BLANK:
		return do_blank(c, q);
	case FL_DOP_SET_MODE:
		return do_set_mode(c, q);
	case FL_DOP_SET_EVENT:
		return do_set_event(c, q);
	case FL_DOP_SIMPLE_ALLOC:
		return do_simple_alloc(c, q);
	case FL_DOP_POST:
		return do_post(c, q, fds);
	case FL_DOP_POST_FDS:
		memcpy(c->stash + c->n_stash, fds, q->nfds * sizeof(int));
		c->n_stash += q->nfds;
		for (unsigned int i = 0; i < q->nfds; i++)
			fds[i] = -1;
		return true;
	case FL_DOP_SIMPLE_POST:
		return do_simple_post(c, q, fds);
	case FL_DOP_SET_CONNECTED:
		return do_set_connected(c, q);
	case FL_DOP_CAPTURE:
		return do_capture(c, q);
	case FL_DOP_DUMP:
		return do_dump(c, q);
	default: /* FL_DOP_STATS */
		return do_stats(c, q);
	}
}

/* ---- connections ---- */

static void readable(struct fl_server_conn *conn)
{
	static uint8_t buf[FL_DPROTO_MAX_REQUEST + 1];
	struct dconn *c = dconn_of(conn);

	for (int i = 0; i < BATCH; i++) {
		int fds[FL_DPROTO_MAX_FDS];
		struct fl_server_msg m;
		struct fl_dproto_request q;
		int r = fl__server_conn_recv(conn, buf, sizeof(buf), fds, FL_DPROTO_MAX_FDS, &m);
		bool ok;

		if (r <= 0)
			return;
		r = fl__dproto_decode(buf, m.len, m.nfds, m.flags != 0, c->n_stash, &q);
		if (r < 0) {
			char why[96];

			for (unsigned int k = 0; k < m.nfds; k++)
				close(fds[k]);
			snprintf(why, sizeof(why), "malformed %s request (%s)",
				 fl__dproto_op_name(q.hdr.op), strerror(-r));
			/* A peer that sends what the protocol forbids is cut off, after one answer. */
			reply_status(c, &q.hdr, r, NULL);
			fl__server_conn_disconnect(conn, why);
			return;
		}
		ok = handle_request(c, &q, fds);
		for (unsigned int k = 0; k < m.nfds; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		if (!ok || conn->fd < 0)
			return;
	}
	/* More may be queued: its next readable event comes at once (level-triggered). */
}

static void disconnecting(struct fl_server_conn *conn, const char *why)
{
	struct dconn *c = dconn_of(conn);

	if (why && cfg.foreground)
		displayd_log("pid %d: %s", (int)conn->pid, why);
	for (size_t h = 0; h < MAX_HANDLES; h++)
		if (c->handles[h].used)
			handle_close(&c->handles[h]);
	for (unsigned int i = 0; i < c->n_stash; i++)
		close(c->stash[i]);
	c->n_stash = 0;
	/* Its queued posts go: a client that is gone leaves nothing waiting. */
	for (size_t i = 0; i < n_devs; i++) {
		struct ddev *d = &devs[i];
		struct dpost **pp = &d->head, *last = NULL;

		while (*pp) {
			struct dpost *p = *pp;

			if (p->owner != c) {
				last = p;
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			d->st.queued--;
			d->st.dropped++;
			post_free(p);
		}
		d->tail = last;
		if (d->on_screen && d->on_screen->owner == c)
			d->on_screen->owner = NULL;
		kick(d);
	}
}

static void release(struct fl_server_conn *conn)
{
	free(dconn_of(conn));
}

static bool reject(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status,
		   const char *why)
{
	(void)req;
	(void)status;
	fl__server_conn_disconnect(conn, why);
	return false;
}

static const struct fl_server_host_ops host_ops = {
	.reject = reject,
	.readable = readable,
	.disconnecting = disconnecting,
	.release = release,
};

static void refuse(int fd, int status, void *data)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_reply r;
	} no = { { FL_DOP_HELLO | FL_OP_REPLY, 0, 0, sizeof(struct fl_msg_reply) }, { status, 0 } };

	(void)data;
	(void)!send(fd, &no, sizeof(no), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void accepted(struct fl_acceptor *acc, int fd, pid_t pid, uid_t uid, void *data)
{
	struct dconn *c;

	(void)data;
	/* One user's service: its socket is 0600 in a private directory; say so anyway. */
	if (uid != geteuid()) {
		fl__acceptor_turn_away(acc, fd, -EACCES);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fl__acceptor_turn_away(acc, fd, -ENOMEM);
		return;
	}
	if (fl__server_conn_start(server, &c->conn, fd, pid, uid) < 0) {
		close(fd);
		free(c);
	}
}

static const struct fl_acceptor_ops acceptor_ops = {
	.accepted = accepted,
	.refuse = refuse,
};

/* ---- set-up ---- */

static int devices_make(void)
{
	char err[256];
	int r;

	r = fl__display_config_parse(cfg.config_text, cfg.config_len, cfg.config_origin, &config,
				     err, sizeof(err));
	if (r < 0) {
		displayd_log("%s", err);
		return r;
	}
	set = fl__display_create();
	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < config->n_devices; i++) {
		const struct fl__display_config_device *cd = &config->devices[i];
		struct ddev *d = &devs[n_devs];
		struct fl_display_error e;
		size_t k;

		for (k = 0; k < sizeof(drivers) / sizeof(drivers[0]); k++)
			if (!strcmp(drivers[k]->name, cd->driver))
				break;
		if (k == sizeof(drivers) / sizeof(drivers[0])) {
			displayd_log("%s:%u: no display driver named '%s'", cfg.config_origin,
				     cd->line, cd->driver);
			return -EINVAL;
		}
		memset(d, 0, sizeof(*d));
		d->drv = drivers[k];
		d->cd = cd;
		d->tl_present = d->tl_release = -1;
		d->host = (struct fl_display_host){
			.data = d,
			.now = h_now,
			.timer_add = h_timer_add,
			.timer_arm = h_timer_arm,
			.fd_add = h_fd_add,
			.source_remove = h_source_remove,
			.intf_state = h_intf_state,
			.config_modes = h_config_modes,
			.vsync = h_vsync,
			.hotplug = h_hotplug,
			.compose = h_compose,
			.layout = h_layout,
		};
		r = d->drv->create(&d->host, &d->drv_data);
		if (r < 0) {
			displayd_log("%s:%u: the %s driver failed: %s", cfg.config_origin, cd->line,
				     cd->driver, strerror(-r));
			return r;
		}
		r = fl__display_config_instantiate(cd, set, d->drv, d->drv_data, &d->dev, &e);
		if (r < 0) {
			displayd_log("%s:%u: %s", cfg.config_origin, cd->line, e.msg);
			d->drv->destroy(d->drv_data);
			return r;
		}
		d->host.device = fl__display_device_id(d->dev);
		fl__display_device_set_flush(d->dev, flush, d);
		n_devs++;
	}
	return 0;
}

static void devices_free(void)
{
	for (size_t i = 0; i < n_devs; i++) {
		struct ddev *d = &devs[i];

		while (d->head)
			drop_head(d);
		if (d->on_screen)
			post_free(d->on_screen);
		d->on_screen = NULL;
		fl__loop_source_remove(d->kick);
		d->drv->destroy(d->drv_data);
		/* Closing the timelines fails what is still pending: no waiter hangs. */
		if (d->tl_present >= 0)
			fl_timeline_fd_close(d->tl_present);
		if (d->tl_release >= 0)
			fl_timeline_fd_close(d->tl_release);
	}
	n_devs = 0;
	fl__display_destroy(set);
	fl__display_config_free(config);
	fl__display_compose_free(compositor);
	compositor = NULL;
}

static void on_signal(int sfd, uint32_t events, void *data)
{
	struct signalfd_siginfo si;

	(void)events;
	(void)data;
	if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (cfg.foreground)
			displayd_log("signal %u: exiting", si.ssi_signo);
		stopping = true;
	}
}

static bool busy(void)
{
	if (fl__server_conn_count(server))
		return true;
	for (size_t i = 0; i < n_devs; i++)
		if (devs[i].head)
			return true;
	return false;
}

int displayd_serve(int lfd, const struct displayd_config *c)
{
	uint64_t idle_since = fl__now_ns();
	int sfd, r;

	cfg = *c;
	loop = fl__loop_create();
	if (!loop)
		return -errno;
	r = devices_make();
	if (r < 0)
		goto out;
	sfd = fl__server_stop_signals();
	if (sfd < 0) {
		r = sfd;
		goto out;
	}
	server = fl__server_create(loop, &host_ops);
	acceptor = server ? fl__acceptor_create(loop, lfd, &acceptor_ops, NULL) : NULL;
	if (!acceptor || !fl__loop_add_fd(loop, sfd, EPOLLIN, on_signal, NULL)) {
		r = -ENOMEM;
		goto out_sfd;
	}
	while (!stopping) {
		int timeout = -1;

		if (cfg.idle_ms && !busy()) {
			uint64_t idle = fl__now_ns() - idle_since;

			if (idle >= (uint64_t)cfg.idle_ms * 1000000u)
				break;
			timeout = (int)(((uint64_t)cfg.idle_ms * 1000000u - idle) / 1000000u) + 1;
		}
		r = fl__loop_dispatch(loop, timeout);
		if (r < 0 && r != -EINTR)
			break;
		r = 0;
		if (busy())
			idle_since = fl__now_ns();
	}
	if (cfg.foreground)
		displayd_log("exiting");
	for (struct fl_server_conn *conn; (conn = fl__server_conn_next(server, NULL));)
		fl__server_conn_disconnect(conn, NULL);
	fl__server_release_gone(server);
out_sfd:
	fl__acceptor_destroy(acceptor);
	close(sfd);
out:
	devices_free();
	fl__server_destroy(server);
	fl__loop_destroy(loop);
	return r;
}

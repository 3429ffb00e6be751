/* SPDX-License-Identifier: MIT */
/*
 * The host a driver calls (<fenceline/driver/display.h>): the service's
 * loop for its timers and fds, the model's state of its interfaces, vsync
 * and hotplug reports, and the software compositor for its output.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* fl-displayd tells a recording trace of its events (docs/tracing.md). */
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "compose.h"
#include "display.h"
#include "displayd-private.h"
#include "sigbus.h"
#include "util.h"

struct dsource {
	struct fl_loop_source *src;
	void (*timer_fn)(void *);
	void (*fd_fn)(int, uint32_t, void *);
	void *data;
};

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
	s->src = fl__loop_add_timer(dd.loop, source_timer, s);
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
	s->src = fl__loop_add_fd(dd.loop, fd, events, source_fd, s);
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
	struct fl_display_vsync_event ev;

	/* Whole, padding included: these bytes go to clients. */
	memset(&ev, 0, sizeof(ev));
	ev.base.type = FL_DISPLAY_EVENT_VSYNC;
	ev.base.length = sizeof(ev);
	ev.timestamp = ts;
	d->st.vsyncs++;
	if (intf < FL_DISPLAY_CONFIG_MAX_OBJECTS)
		d->last_vsync[intf] = ts;
	if (fl_introspect_tracing()) {
		struct fl_trace_display_event tev = { .type = FL_TRACE_DISPLAY_VSYNC,
						      .ts_ns = ts,
						      .index = intf };

		displayd_trace(d, NULL, &tev, -1);
	}
	displayd_send_event(FL_DISPLAY_OBJ_INTERFACE, host->device, intf, FL_DISPLAY_EVENT_VSYNC,
			    &ev, sizeof(ev));
	displayd_try_flip(d, intf, ts);
}

static int h_hotplug(const struct fl_display_host *host, uint32_t intf, bool connected,
		     const struct fl_display_mode *modes, size_t n)
{
	struct ddev *d = host->data;
	struct fl__display_interface *i = fl__display_interface_get(d->dev, intf);
	struct fl_display_hotplug_event ev;
	struct fl_display_error e;
	int r;

	if (!i)
		return -ENOENT;
	/* Whole, padding included: these bytes go to clients. */
	memset(&ev, 0, sizeof(ev));
	ev.base.type = FL_DISPLAY_EVENT_HOTPLUG;
	ev.base.length = sizeof(ev);
	ev.connected = connected;
	r = fl__display_interface_hotplug(i, connected, modes, n, &e);
	if (r < 0) {
		displayd_log("hotplug of %s refused: %s", fl__display_device_name(d->dev), e.msg);
		return r;
	}
	displayd_send_event(FL_DISPLAY_OBJ_INTERFACE, host->device, intf, FL_DISPLAY_EVENT_HOTPLUG,
			    &ev, sizeof(ev));
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

static int h_compose_over(const struct fl_display_host *host,
			  const struct fl_display_driver_buffer *bufs,
			  const struct fl_display_layer *dl, size_t n,
			  const struct fl_display_driver_buffer *dst, uint32_t bg)
{
	struct fl_display_compose_layer layers[FL_DISPLAY_MAX_BUFFERS];
	/* Clients' memory, which they may shrink under us: every mapping is guarded. */
	struct fl__sigbus_guard guard[FL_DISPLAY_MAX_BUFFERS * FL_DISPLAY_MAX_PLANES + 1];
	struct fl_display_frame frame;
	struct fl_display_error e;
	size_t mapped = 0, guarded = 0;
	bool shrank = false;
	int r = 0;

	(void)host;
	if (n > FL_DISPLAY_MAX_BUFFERS)
		return -EINVAL;
	if (!dd.compositor && !(dd.compositor = fl__display_compose_new()))
		return -ENOMEM;
	memset(&frame, 0, sizeof(frame));
	memset(layers, 0, n * sizeof(layers[0]));
	/* 8 to 16 bits a channel: × 257 maps 0xff to 0xffff exactly. */
	frame.background = (struct fl_display_color){ (uint16_t)((bg >> 16 & 0xff) * 257),
						      (uint16_t)((bg >> 8 & 0xff) * 257),
						      (uint16_t)((bg & 0xff) * 257),
						      (uint16_t)((bg >> 24) * 257) };
	frame.target = (struct fl_display_compose_target){
		NULL, dst->size[0], dst->offset[0], dst->pitch[0], dst->format, dst->w, dst->h
	};
	frame.target.map = map_fd(dst->fd[0], dst->size[0], true);
	if (!frame.target.map)
		return -errno;
	r = fl__sigbus_guard_begin(&guard[guarded], frame.target.map, (size_t)dst->size[0]);
	if (r < 0)
		goto out;
	guarded++;
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
			fl__display_compose_layer_place(l, &dl[mapped]);
			l->zpos = compose_z(dl, n, mapped); /* ranked: any u32 fits */
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
			r = fl__sigbus_guard_begin(&guard[guarded], (void *)l->plane[p].map,
						   (size_t)b->size[p]);
			if (r < 0) {
				mapped++;
				goto out;
			}
			guarded++;
		}
	}
	frame.layers = layers;
	frame.n_layers = n;
	r = fl__display_compose(dd.compositor, &frame, &e);
	if (r < 0)
		displayd_log("composition refused: %s", e.msg);
out:
	while (guarded)
		shrank |= fl__sigbus_guard_end(&guard[--guarded]);
	if (shrank) {
		displayd_log(
			"a buffer shrank while it was composed (its owner truncated its memory)");
		r = -EFAULT;
	}
	for (size_t i = 0; i < mapped; i++)
		for (uint32_t p = 0; p < layers[i].n_planes && p < FL_DISPLAY_MAX_PLANES; p++)
			if (layers[i].plane[p].map)
				munmap((void *)layers[i].plane[p].map,
				       (size_t)layers[i].plane[p].size);
	munmap(frame.target.map, (size_t)dst->size[0]);
	return r;
}

static int h_compose(const struct fl_display_host *host,
		     const struct fl_display_driver_buffer *bufs, const struct fl_display_layer *dl,
		     size_t n, const struct fl_display_driver_buffer *dst)
{
	return h_compose_over(host, bufs, dl, n, dst, 0xff000000u);
}

static int h_gang(const struct fl_display_host *host, uint32_t intf, struct fl_display_gang *ret)
{
	struct ddev *d = host->data;
	struct fl__display_interface *i = fl__display_interface_get(d->dev, intf);

	return i ? fl__display_interface_gang(i, ret) : -ENOENT;
}

static uint32_t h_background(const struct fl_display_host *host, uint32_t intf)
{
	struct ddev *d = host->data;

	return intf < d->cd->n_intfs ? d->cd->intfs[intf].background : 0xff000000u;
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

static int h_event(const struct fl_display_host *host, enum fl_display_object_kind kind,
		   uint32_t id, uint32_t type, const void *payload, size_t len)
{
	struct ddev *d = host->data;
	struct fl_display_event *ev;
	bool exists = kind == FL_DISPLAY_OBJ_DEVICE ? id == 0
		      : kind == FL_DISPLAY_OBJ_INTERFACE
			      ? fl__display_interface_get(d->dev, id) != NULL
			      : kind == FL_DISPLAY_OBJ_ENGINE &&
					fl__display_engine_get(d->dev, id) != NULL;

	if (type < FL_DISPLAY_EVENT_DEVICE_CUSTOM || type >= FL_DISPLAY_EVENT_TYPE_MAX ||
	    len > FL_DISPLAY_EVENT_RING - sizeof(*ev) || (len && !payload))
		return -EINVAL;
	if (!exists)
		return -ENOENT;
	/* ADF's layout: the 8-byte header, its length counting itself, then the driver's bytes. */
	ev = malloc(sizeof(*ev) + len);
	if (!ev)
		return -ENOMEM;
	memset(ev, 0, sizeof(*ev));
	ev->type = (uint8_t)type;
	ev->length = (uint32_t)(sizeof(*ev) + len);
	if (len)
		memcpy((char *)ev + sizeof(*ev), payload, len);
	displayd_send_event(kind, host->device, id, type, ev, sizeof(*ev) + len);
	free(ev);
	return 0;
}

static const char *h_option(const struct fl_display_host *host, const char *key)
{
	struct ddev *d = host->data;

	for (size_t i = 0; i < d->cd->n_options; i++)
		if (!strcmp(d->cd->options[i].key, key)) {
			d->options_asked |= 1u << i;
			return d->cd->options[i].value;
		}
	return NULL;
}

static void h_flipped(const struct fl_display_host *host, uint64_t ts)
{
	displayd_flipped(host->data, ts);
}

/* ---- replies ---- */

void displayd_host_init(struct ddev *d)
{
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
		.gang = h_gang,
		.background = h_background,
		.compose_over = h_compose_over,
		.event = h_event,
		.option = h_option,
		.flipped = h_flipped,
	};
}

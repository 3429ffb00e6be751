/* SPDX-License-Identifier: MIT */
/*
 * The virtual display driver (display-virtual.h). Everything it does is on
 * the service's loop: a one-shot timer per lit interface, re-armed at the
 * next absolute vsync deadline; nothing of its own blocks or spins.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/heap-table.h>

#include "display-virtual.h"

/* A simple buffer's pitch is a multiple of this: what scan-out DMA likes. */
#define PITCH_ALIGN 64
/* A simple buffer may not be bigger than this (a 16k × 16k ARGB8888 is exactly 1 GiB). */
#define SIMPLE_MAX_BYTES (1ull << 30)
/* The heap table's usage of memory a display engine scans out (data/heaps.ini). */
#define SCANOUT_USAGE "display-scanout"
/* Engines that may have a live source: a config's 64 (FL_DISPLAY_CONFIG_MAX_OBJECTS). */
#define MAX_SOURCES 64
/*
 * The frames a device's streams may hold together (three each: being read,
 * newest, shown): a client's sources cannot make the service take memory
 * without bound.
 */
#define SOURCE_BUDGET (192ull << 20)

struct vstate {
	uint32_t intfs[FL_DISPLAY_MAX_INTERFACES]; /* the post's, for a capture of one of them */
	size_t n_intfs;
	size_t n_bufs;
	struct fl_display_layer *layers; /* n_bufs of them, in the same allocation; NULL: none */
	bool has_wb; /* a writeback destination, written at the flip (its fd the service's) */
	struct fl_display_driver_buffer wb;
	struct fl_display_driver_buffer bufs[];
};

struct vdev;

struct vintf {
	struct vdev *v;
	uint32_t id;
	bool vsync_active; /* DPMS ON or STANDBY: the panel scans out, as ADF's vsync_active() */
	bool connected;
	struct fl_display_mode mode;
	uint64_t base_ns, frame; /* the next vsync is frame @frame after @base_ns */
	struct fl_display_source *timer;
	/*
	 * Its gang (n_members 0: none). One clock scans out a gang's panel:
	 * the timer of its first member, which reports the vsync of every
	 * member with the same timestamp; the others' timers stay unarmed.
	 */
	struct fl_display_gang gang;
};

struct vdev {
	const struct fl_display_host *host;
	struct vintf *intfs[FL_DISPLAY_MAX_INTERFACES];
	/*
	 * The last post: what its interfaces show. A post is only this list
	 * of buffers; no pixel is touched until an observer (a capture) asks
	 * for the frame, and compose() makes it then.
	 */
	struct vstate *on_screen;
	/* The heap table, for simple buffers: the system's (FENCELINE_HEAP_TABLE or the default). */
	struct fl_heap_table *heaps;
	/* Live sources by engine, shown on the interfaces their engine is attached to. */
	struct fl__vsource *sources[MAX_SOURCES];
	struct {
		uint32_t eng, intf;
	} att[FL_DISPLAY_MAX_ATTACHMENTS];
	size_t n_att;
	uint64_t flips; /* posts shown since the device was made */
	bool frames_event; /* FL_DISPLAY_VIRTUAL_EVENT_FRAMES has a subscriber */
	/* A driver built on this one: where its frames go (NULL: nowhere, headless). */
	const struct fl__display_presenter_ops *pr;
	void *pr_data;
};

/* Whether engine @eng is attached to interface @intf (the model's active attachments). */
static bool attached(const struct vdev *v, uint32_t eng, uint32_t intf)
{
	for (size_t i = 0; i < v->n_att; i++)
		if (v->att[i].eng == eng && v->att[i].intf == intf)
			return true;
	return false;
}

/* A vsync of @intf: the live sources it shows take their newest complete frames. */
static void latch_sources(struct vdev *v, uint32_t intf)
{
	for (uint32_t k = 0; k < MAX_SOURCES; k++)
		if (v->sources[k] && attached(v, k, intf))
			fl__display_virtual_source_latch(v->sources[k]);
}

uint64_t fl__display_virtual_frame(const struct fl_display_mode *mode, uint64_t base_ns, uint64_t n)
{
	unsigned __int128 t;

	if (!mode->clock || !mode->htotal || !mode->vtotal)
		return 0;
	/* ns = n × htotal × vtotal × 10^6 / clock (kHz): one division, no rounding carried. */
	t = (unsigned __int128)n * mode->htotal * mode->vtotal * 1000000u / mode->clock;
	return base_ns + (uint64_t)t;
}

static bool has_timings(const struct fl_display_mode *m)
{
	return m->clock && m->htotal && m->vtotal;
}

static struct vintf *intf_of(struct vdev *v, uint32_t id);

/*
 * How long before a vsync the timer fires (vsync_fire() waits out the
 * rest): a wake-up's p99 on the development VM, idle. It costs that much
 * CPU a frame at most per lit interface (1.2 % of a core at 60 Hz).
 */
#define VSYNC_EARLY_NS 200000u

static uint64_t early(uint64_t deadline)
{
	return deadline > VSYNC_EARLY_NS ? deadline - VSYNC_EARLY_NS : deadline;
}

static void vsync_fire(void *data)
{
	struct vintf *vi = data;
	const struct fl_display_host *host = vi->v->host;
	uint64_t ts = fl__display_virtual_frame(&vi->mode, vi->base_ns, vi->frame), now, n;

	/*
	 * The timestamp is the deadline, the instant this panel's frame
	 * starts, not when the loop got round to us: a real panel's vsync is
	 * not late because its interrupt was. Frames the loop was too busy
	 * for are skipped, not reported late. The timer fires VSYNC_EARLY_NS
	 * before the deadline and the rest is waited out here, so that the
	 * flip and the VSYNC events happen at the vsync, not a wake-up after
	 * it (on an idle VM a wake-up takes 60-120 µs).
	 */
	now = host->now(host);
	while (now < ts)
		now = host->now(host);
	n = vi->frame + 1;
	while (fl__display_virtual_frame(&vi->mode, vi->base_ns, n) <= now)
		n++;
	vi->frame = n;
	host->timer_arm(vi->timer, early(fl__display_virtual_frame(&vi->mode, vi->base_ns, n)));
	latch_sources(vi->v, vi->id);
	host->vsync(host, vi->id, ts);
	if (vi->v->pr)
		vi->v->pr->present(vi->v->pr_data, vi->id);
	/* The gang's other links start the same frame at the same instant. */
	for (uint32_t m = 1; m < vi->gang.n_members; m++) {
		struct vintf *o = intf_of(vi->v, vi->gang.members[m]);

		if (o && o->vsync_active && o->connected) {
			latch_sources(vi->v, o->id);
			host->vsync(host, o->id, ts);
		}
	}
}

static void vsync_update(struct vintf *vi)
{
	const struct fl_display_host *host = vi->v->host;

	bool follower = vi->gang.n_members && vi->gang.members[0] != vi->id;

	if (vi->vsync_active && vi->connected && has_timings(&vi->mode) && !follower) {
		vi->base_ns = host->now(host);
		vi->frame = 1;
		host->timer_arm(vi->timer,
				early(fl__display_virtual_frame(&vi->mode, vi->base_ns, 1)));
	} else {
		host->timer_arm(vi->timer, 0);
	}
}

/* Reports the simulated connector's state with the config's modes. Return: hotplug()'s. */
static int plug_report(struct vintf *vi)
{
	const struct fl_display_host *host = vi->v->host;
	struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
	int n = 0, r;

	if (vi->connected) {
		n = host->config_modes(host, vi->id, modes, FL_DISPLAY_MAX_MODES);
		if (n < 0)
			return n;
		if (n > FL_DISPLAY_MAX_MODES)
			n = FL_DISPLAY_MAX_MODES;
	}
	r = host->hotplug(host, vi->id, vi->connected, modes, (size_t)n);
	vsync_update(vi);
	return r;
}

/* Our record of interface @id, made on first sight. Return: NULL for an unknown id or ENOMEM. */
static struct vintf *intf_of(struct vdev *v, uint32_t id)
{
	struct vintf *vi;

	if (id >= FL_DISPLAY_MAX_INTERFACES)
		return NULL;
	if (v->intfs[id])
		return v->intfs[id];
	vi = calloc(1, sizeof(*vi));
	if (!vi)
		return NULL;
	vi->v = v;
	vi->id = id;
	if (v->host->intf_state(v->host, id, &vi->mode, &vi->connected) < 0)
		goto fail;
	if (v->host->gang(v->host, id, &vi->gang) < 0)
		vi->gang.n_members = 0;
	vi->timer = v->host->timer_add(v->host, vsync_fire, vi);
	if (!vi->timer)
		goto fail;
	v->intfs[id] = vi;
	return vi;
fail:
	v->host->source_remove(vi->timer);
	free(vi);
	return NULL;
}

int fl__display_virtual_create_presented(const struct fl_display_host *host,
					 const struct fl__display_presenter_ops *pr,
					 void **ret_data)
{
	struct vdev *v = calloc(1, sizeof(*v));
	int r;

	if (!v)
		return -ENOMEM;
	r = fl_heap_table_load_system(&v->heaps, NULL, 0);
	if (r < 0) {
		free(v);
		return r;
	}
	v->host = host;
	if (pr) {
		r = pr->create(host, v, &v->pr_data);
		if (r < 0) {
			fl_heap_table_close(v->heaps);
			free(v);
			return r;
		}
		v->pr = pr;
	}
	*ret_data = v;
	return 0;
}

static int v_create(const struct fl_display_host *host, void **ret_data)
{
	return fl__display_virtual_create_presented(host, NULL, ret_data);
}

void fl__display_virtual_destroy(void *data)
{
	struct vdev *v = data;

	if (v->pr)
		v->pr->destroy(v->pr_data);
	for (size_t i = 0; i < MAX_SOURCES; i++)
		fl__display_virtual_source_free(v->sources[i]);
	for (size_t i = 0; i < FL_DISPLAY_MAX_INTERFACES; i++) {
		if (!v->intfs[i])
			continue;
		v->host->source_remove(v->intfs[i]->timer);
		free(v->intfs[i]);
	}
	fl_heap_table_close(v->heaps);
	free(v);
}

/* No veto: the driver only keeps the model's active attachments, for its live sources. */
int fl__display_virtual_attach(void *data, uint32_t eng, uint32_t intf)
{
	struct vdev *v = data;

	if (v->n_att == FL_DISPLAY_MAX_ATTACHMENTS)
		return -ENOSPC;
	v->att[v->n_att].eng = eng;
	v->att[v->n_att].intf = intf;
	v->n_att++;
	return 0;
}

int fl__display_virtual_detach(void *data, uint32_t eng, uint32_t intf)
{
	struct vdev *v = data;

	for (size_t i = 0; i < v->n_att; i++)
		if (v->att[i].eng == eng && v->att[i].intf == intf) {
			v->att[i] = v->att[--v->n_att];
			break;
		}
	return 0;
}

int fl__display_virtual_set_source(void *data, uint32_t eng, const struct fl_display_source *src,
				   struct fl_display_error *e)
{
	struct vdev *v = data;
	struct fl__vsource *s = NULL;
	int r;

	if (eng >= MAX_SOURCES) {
		if (src->fd >= 0 && src->type == FL_DISPLAY_SOURCE_STREAM)
			close(src->fd);
		if (e) {
			e->err = -EINVAL;
			snprintf(e->msg, sizeof(e->msg),
				 "source: the virtual driver feeds engines 0 to %d, not %u",
				 MAX_SOURCES - 1, eng);
		}
		return -EINVAL;
	}
	if (src->type == FL_DISPLAY_SOURCE_STREAM) {
		uint64_t held = 3ull * src->w * src->h * 4;

		for (uint32_t k = 0; k < MAX_SOURCES; k++)
			if (k != eng)
				held += fl__display_virtual_source_bytes(v->sources[k]);
		if (held > SOURCE_BUDGET) {
			close(src->fd);
			if (e) {
				e->err = -ENOMEM;
				snprintf(e->msg, sizeof(e->msg),
					 "source: the device's streams would hold %llu bytes of "
					 "frames, over its %llu",
					 (unsigned long long)held,
					 (unsigned long long)SOURCE_BUDGET);
			}
			return -ENOMEM;
		}
	}
	if (src->type != FL_DISPLAY_SOURCE_NONE) {
		r = fl__display_virtual_source_new(v->host, src, &s, e);
		if (r < 0)
			return r;
	}
	fl__display_virtual_source_free(v->sources[eng]);
	v->sources[eng] = s;
	return 0;
}

int fl__display_virtual_blank(void *data, uint32_t intf, enum fl_display_dpms state)
{
	struct vintf *vi = intf_of(data, intf);

	if (!vi)
		return -ENOMEM;
	vi->vsync_active = state == FL_DISPLAY_DPMS_ON || state == FL_DISPLAY_DPMS_STANDBY;
	vsync_update(vi);
	return 0;
}

int fl__display_virtual_modeset(void *data, uint32_t intf, const struct fl_display_mode *mode)
{
	struct vintf *vi = intf_of(data, intf);

	if (!vi)
		return -ENOMEM;
	/* A panel cannot scan out a mode without timings: there would be no vsync. */
	if (!has_timings(mode) || !mode->hdisplay || !mode->vdisplay)
		return -EINVAL;
	vi->mode = *mode;
	vsync_update(vi);
	return 0;
}

int fl__display_virtual_set_connected(void *data, uint32_t intf, bool connected)
{
	struct vintf *vi = intf_of(data, intf);
	int r;

	if (!vi)
		return -ENOENT;
	if (vi->connected == connected)
		return -EALREADY;
	/* A gang's links are one panel's: plugged one at a time, they would tear it. */
	if (vi->gang.n_members)
		return -EOPNOTSUPP;
	vi->connected = connected;
	/*
	 * Reported before returning (hotplug() is allowed from this op): the
	 * caller asked for the plug, so a query right after the call must see
	 * it. A plug reported later from the loop raced the caller's next
	 * request.
	 */
	r = plug_report(vi);
	if (r < 0) {
		vi->connected = !connected;
		vsync_update(vi);
	}
	return r;
}

int fl__display_virtual_validate(void *data, const struct fl_display_driver_post *post,
				 void **ret_state, struct fl_display_error *e)
{
	struct vstate *s;

	(void)data;
	if (post->custom_size) {
		if (e) {
			e->err = -EINVAL;
			strcpy(e->msg, "the virtual driver takes no custom data");
		}
		return -EINVAL;
	}
	s = malloc(sizeof(*s) + post->n_bufs * (sizeof(s->bufs[0]) + sizeof(s->layers[0])));
	if (!s)
		return -ENOMEM;
	/* The layers are the post's; the service's copy lives only through validate. */
	s->layers = post->layers ? (struct fl_display_layer *)&s->bufs[post->n_bufs] : NULL;
	if (s->layers)
		memcpy(s->layers, post->layers, post->n_bufs * sizeof(s->layers[0]));
	s->has_wb = post->writeback != NULL;
	if (s->has_wb)
		s->wb = *post->writeback;
	s->n_intfs = post->n_intfs < FL_DISPLAY_MAX_INTERFACES ? post->n_intfs
							       : FL_DISPLAY_MAX_INTERFACES;
	memcpy(s->intfs, post->intfs, s->n_intfs * sizeof(s->intfs[0]));
	s->n_bufs = post->n_bufs;
	if (post->n_bufs)
		memcpy(s->bufs, post->bufs, post->n_bufs * sizeof(s->bufs[0]));
	*ret_state = s;
	return 0;
}

int fl__display_virtual_validate_custom_format(void *data,
					       const struct fl_display_driver_buffer *buf,
					       size_t index, struct fl_display_error *e)
{
	(void)data;
	return fl__display_virtual_tiled_check(buf, index, e);
}

/*
 * Composes @s's buffers into @dst over @bg by the service's compositor,
 * after making a linear copy of each buffer in the driver's own format:
 * the compositor knows only the standard formats.
 */
static int compose_frame(struct vdev *v, const struct vstate *s, uint32_t intf, uint64_t frame,
			 const struct fl_display_driver_buffer *dst, uint32_t bg)
{
	struct fl_display_driver_buffer lin[FL_DISPLAY_MAX_BUFFERS];
	struct fl_display_layer layers[FL_DISPLAY_MAX_BUFFERS];
	size_t n = s ? s->n_bufs : 0, posted = n;
	bool any_layer = s && s->layers;
	int r = 0;

	if (n > FL_DISPLAY_MAX_BUFFERS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		lin[i] = s->bufs[i];
		layers[i] = s->layers ? s->layers[i] : (struct fl_display_layer){ 0 };
	}
	for (size_t i = 0; i < n && !r; i++)
		if (s->bufs[i].format == FL_DISPLAY_VIRTUAL_FORMAT_XT44)
			r = fl__display_virtual_detile(&s->bufs[i], &lin[i]);
	/* The live sources of the engines attached to @intf, where their layers say. */
	for (uint32_t k = 0; k < MAX_SOURCES && !r; k++) {
		if (!v->sources[k] || !attached(v, k, intf))
			continue;
		if (n == FL_DISPLAY_MAX_BUFFERS) {
			r = -E2BIG;
			break;
		}
		r = fl__display_virtual_source_frame(v->sources[k], k, frame, &lin[n], &layers[n]);
		if (r == -ENODATA) {
			r = 0;
			continue;
		}
		if (!r) {
			n++;
			any_layer = true;
		}
	}
	if (!r)
		r = v->host->compose_over(v->host, lin, any_layer ? layers : NULL, n, dst, bg);
	for (size_t i = 0; i < n; i++)
		if (i >= posted || lin[i].fd[0] != s->bufs[i].fd[0])
			close(lin[i].fd[0]);
	return r;
}

/*
 * A tile of a gang's panel (@g, interface @intf in @mode) into @dst: the
 * whole panel is composed into scratch memory in @dst's format, and the
 * tile's rectangle copied out of it.
 */
static int compose_tile(struct vdev *v, const struct vstate *s, uint32_t intf, uint64_t frame,
			const struct fl_display_gang *g, const struct fl_display_mode *mode,
			const struct fl_display_driver_buffer *dst)
{
	struct fl_display_driver_buffer panel = *dst;
	unsigned int planes, cpp[FL_DISPLAY_MAX_PLANES];
	uint64_t row, len, dlen;
	struct stat st;
	uint8_t *src;
	int fd, r;

	r = v->host->layout(v->host, dst->format, &planes, cpp);
	if (r < 0)
		return r;
	panel.w = mode->hdisplay * g->cols;
	panel.h = mode->vdisplay * g->rows;
	row = ((uint64_t)panel.w * cpp[0] + 3) / 4 * 4;
	len = row * panel.h;
	dlen = dst->offset[0] + (uint64_t)dst->pitch[0] * dst->h;
	if (dst->w != mode->hdisplay || dst->h != mode->vdisplay || row > UINT32_MAX ||
	    dlen > dst->size[0])
		return -EINVAL;
	fd = fl__display_virtual_memfd("gang-panel", len);
	if (fd < 0)
		return fd;
	panel.fd[0] = fd;
	panel.offset[0] = 0;
	panel.pitch[0] = (uint32_t)row;
	panel.size[0] = len;
	r = compose_frame(v, s, intf, frame, &panel, v->host->background(v->host, intf));
	if (r < 0)
		goto out;
	/*
	 * Into @dst (a client's writeback memory): a memfd or file with
	 * pwrite(), not a mapping, so that one shrunk under us is an error, not
	 * our SIGBUS; a dma-buf (no pwrite(), and it cannot shrink) is mapped.
	 */
	src = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, 0);
	if (src == MAP_FAILED || fstat(dst->fd[0], &st) < 0) {
		r = -errno;
	} else {
		uint64_t x0 = (uint64_t)g->col * mode->hdisplay * cpp[0];
		size_t n = (size_t)dst->w * cpp[0];
		uint8_t *out = MAP_FAILED;

		if (!S_ISREG(st.st_mode)) {
			out = mmap(NULL, (size_t)dlen, PROT_READ | PROT_WRITE, MAP_SHARED,
				   dst->fd[0], 0);
			if (out == MAP_FAILED)
				r = -errno;
		}
		for (uint64_t y = 0; y < dst->h && !r; y++) {
			const uint8_t *line =
				src + ((uint64_t)g->row * mode->vdisplay + y) * row + x0;
			uint64_t at = dst->offset[0] + y * dst->pitch[0];
			ssize_t w;

			if (out != MAP_FAILED) {
				memcpy(out + at, line, n);
				continue;
			}
			w = pwrite(dst->fd[0], line, n, (off_t)at);
			r = w == (ssize_t)n ? 0 : w < 0 ? -errno : -EIO;
		}
		if (out != MAP_FAILED)
			munmap(out, (size_t)dlen);
	}
	if (src != MAP_FAILED)
		munmap(src, (size_t)len);
out:
	close(fd);
	return r;
}

/*
 * Software composition of what interface @intf shows (@s, NULL: nothing)
 * into @dst, by the service's compositor: only called for an observer.
 */
static int compose(struct vdev *v, const struct vstate *s, uint32_t intf,
		   const struct fl_display_driver_buffer *dst)
{
	struct vintf *vi = intf_of(v, intf);
	/* The frame number a test pattern shows: vsyncs since the interface was lit. */
	uint64_t frame = vi && vi->frame ? vi->frame - 1 : 0;
	bool shown = false;

	for (size_t i = 0; s && i < s->n_intfs; i++)
		shown |= s->intfs[i] == intf;
	if (vi && vi->gang.n_members)
		return compose_tile(v, shown ? s : NULL, intf, frame, &vi->gang, &vi->mode, dst);
	return compose_frame(v, shown ? s : NULL, intf, frame, dst,
			     v->host->background(v->host, intf));
}

void fl__display_virtual_post(void *data, void *state)
{
	struct vdev *v = data;
	struct vstate *s = state;

	v->on_screen = s;
	/*
	 * Writeback is an observer asking for the frame: composed now, before
	 * the service signals the post's present fence.
	 */
	if (s->has_wb)
		/*
		 * post cannot fail; the service's compose() logs a frame it
		 * refuses. The frame is one, so is its background: the post's
		 * first interface's, as that interface shows it.
		 */
		(void)compose_frame(v, s, s->n_intfs ? s->intfs[0] : 0, 0, &s->wb,
				    v->host->background(v->host, s->n_intfs ? s->intfs[0] : 0));
	if (++v->flips % FL_DISPLAY_VIRTUAL_FRAMES_EVERY == 0 && v->frames_event) {
		struct fl_display_virtual_frames_event ev = { .flips = v->flips,
							      .timestamp_ns =
								      v->host->now(v->host) };

		/* The service writes the header: the payload is what follows it. */
		(void)v->host->event(v->host, FL_DISPLAY_OBJ_DEVICE, 0,
				     FL_DISPLAY_VIRTUAL_EVENT_FRAMES,
				     (const char *)&ev + sizeof(ev.base),
				     sizeof(ev) - sizeof(ev.base));
	}
}

/* Only the device has driver events (event_objects), one type of them: others are ADF's -EINVAL. */
int fl__display_virtual_set_event(void *data, enum fl_display_object_kind kind, uint32_t id,
				  uint32_t type, bool enabled)
{
	struct vdev *v = data;

	(void)id;
	(void)kind;
	if (type != FL_DISPLAY_VIRTUAL_EVENT_FRAMES)
		return v->pr && v->pr->set_event ? v->pr->set_event(v->pr_data, type, enabled)
						 : -EINVAL;
	v->frames_event = enabled;
	return 0;
}

void fl__display_virtual_state_free(void *data, void *state)
{
	struct vdev *v = data;

	if (v->on_screen == state)
		v->on_screen = NULL;
	free(state);
}

int fl__display_virtual_alloc_simple_buffer(void *data, uint32_t intf, uint32_t w, uint32_t h,
					    uint32_t format, int *ret_fd, uint32_t *ret_offset,
					    uint32_t *ret_pitch)
{
	struct vdev *v = data;
	unsigned int planes, cpp[FL_DISPLAY_MAX_PLANES];
	uint64_t pitch, size;
	int fd, r;

	(void)intf;
	if (v->host->layout(v->host, format, &planes, cpp) < 0 || planes != 1 || !w || !h)
		return -EINVAL;
	pitch = ((uint64_t)w * cpp[0] + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
	size = pitch * h;
	if (pitch > UINT32_MAX || size > SIMPLE_MAX_BYTES)
		return -EINVAL;
	/*
	 * From the heap that the table says a display engine scans out of
	 * (contiguous, at most 32 MiB by default): a buffer any holder may
	 * draw in, and none can shrink under the scan-out (the heaps seal
	 * their memfds). The heap takes it back once every holder closed it.
	 */
	r = fl_heap_table_alloc(v->heaps, (const char *const[]){ SCANOUT_USAGE }, 1, (size_t)size,
				0, &fd, NULL, NULL, 0);
	if (r < 0)
		return r;
	*ret_fd = fd;
	*ret_offset = 0;
	*ret_pitch = (uint32_t)pitch;
	return 0;
}

int fl__display_virtual_describe_simple_post(void *data, uint32_t intf,
					     const struct fl_display_driver_buffer *buf_desc,
					     void *buf, size_t *size)
{
	(void)data;
	(void)intf;
	(void)buf_desc;
	(void)buf;
	*size = 0;
	return 0;
}

int fl__display_virtual_capture(void *data, uint32_t intf,
				const struct fl_display_driver_buffer *dst)
{
	struct vdev *v = data;

	return compose(v, v->on_screen, intf, dst);
}

const struct fl_display_driver_ops fl__display_virtual_ops =
	FL__DISPLAY_VIRTUAL_DRIVER("virtual", v_create, NULL);

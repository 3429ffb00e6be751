/* SPDX-License-Identifier: MIT */
/*
 * The hardware composer (docs/hwc.md): plans a frame's layers onto the
 * device's overlay engines with TEST_ONLY posts, composes the rest with
 * src/display/compose.c into a client target, and posts. One thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pixman.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/hwc.h>

#include "compose.h"
#include "display-format.h"
#include "sigbus.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define AR24 FL_FOURCC('A', 'R', '2', '4')
/* Frames of client-target damage kept for buffer age: older targets redraw whole. */
#define HIST	 8
#define MAX_SIZE FL_DISPLAY_COMPOSE_MAX_SIZE

struct engine {
	uint32_t id;
	uint32_t *formats;
	size_t n_formats;
};

struct target {
	int fd;
	void *map;
	uint64_t size;
	uint32_t offset, pitch;
	uint64_t drawn_seq; /* the composition it holds; 0: nothing known */
	int free_fence; /* the present fence of the post that took it off screen */
	bool in_last_post;
};

/* A buffer a layer shows: our copies of its fds, and its mapping once composed. */
struct lstate {
	uint64_t id, buffer_id;
	struct fl_display_buffer buf; /* fds are ours; acquire_fence -1 */
	dev_t dev;
	ino_t ino;
	void *map[FL_DISPLAY_MAX_PLANES];
	uint64_t msize[FL_DISPLAY_MAX_PLANES];
	dev_t mdev[FL_DISPLAY_MAX_PLANES];
	ino_t mino[FL_DISPLAY_MAX_PLANES];
	bool on_overlay; /* in the last post, on an engine: the display holds it */
	/*
	 * Composed now, but on an engine in an earlier post: the present fence
	 * of the post after that one, which takes it off the screen; -1 none.
	 */
	int hold;
	bool skip; /* no good buffer yet: not shown */
	bool fresh; /* made this frame (ours to free if the frame fails) */
	bool taken; /* (in the old frame) carried into the new one */
};

/*
 * A mapping of a buffer no layer shows now, kept for when it comes back: a
 * queue cycles through a few buffers, each frame under a new buffer_id,
 * and mapping 8 MB again costs its page faults every frame.
 */
struct kept_map {
	void *map;
	uint64_t size;
	dev_t dev;
	ino_t ino;
	uint64_t used; /* when it was let go (the HWC's frame count) */
};

/* Mappings kept: a few queues' worth of buffers. */
#define KEPT_MAPS 16

/* What must not change for a plan to be reused. */
struct sig {
	uint64_t id;
	uint32_t format, w, h;
	struct fl_display_layer layer;
};

struct plan {
	bool valid;
	uint32_t k; /* the bottom k layers are composed */
	uint32_t target_engine;
	uint32_t engine[FL_HWC_MAX_LAYERS]; /* per z position, for positions >= k */
};

struct fl_hwc {
	struct fl_display_handle *dev, *intf;
	uint32_t intf_id;
	uint32_t mode_w, mode_h;
	struct engine *eng;
	size_t n_eng;
	uint32_t target_fmt; /* 0: no engine takes a client target */
	struct target tg[FL_HWC_MAX_TARGETS];
	uint32_t n_tg;
	int last_target; /* in the last post, or -1 */
	int timeout_ms;
	uint32_t flags;
	struct lstate cur[FL_HWC_MAX_LAYERS]; /* the last post's layers, in z order */
	size_t n_cur;
	struct sig sig[FL_HWC_MAX_LAYERS];
	size_t n_sig;
	bool have_sig;
	struct plan plan;
	pixman_region32_t hist[HIST];
	uint64_t cseq; /* compositions made */
	struct fl_display_compositor *comp;
	struct kept_map kept[KEPT_MAPS];
	uint64_t n_presents;
	bool posted;
	uint32_t last_k; /* layers composed in the last post */
	struct fl_hwc_stats st;
};

static int fail(struct fl_display_error *e, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct fl_display_error *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		e->err = err;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return err;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The bytes an fd's memory has: a file's size, or a dma-buf's end. */
static int fd_size(int fd, uint64_t *ret, struct stat *st)
{
	off_t end;

	if (fstat(fd, st) < 0)
		return -errno;
	if (S_ISREG(st->st_mode)) {
		*ret = (uint64_t)st->st_size;
		return 0;
	}
	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return -EINVAL;
	*ret = (uint64_t)end;
	return 0;
}

static bool engine_takes(const struct engine *en, uint32_t fourcc)
{
	for (size_t i = 0; i < en->n_formats; i++)
		if (en->formats[i] == fourcc)
			return true;
	return false;
}

static void target_free(struct target *t)
{
	if (t->map && t->map != MAP_FAILED)
		munmap(t->map, t->size);
	t->map = NULL;
	close_fd(&t->fd);
	close_fd(&t->free_fence);
}

/* Keeps @map for a later frame, in the place of the mapping let go longest ago. */
static void keep_map(struct fl_hwc *hwc, void *map, uint64_t size, dev_t dev, ino_t ino)
{
	struct kept_map *k = &hwc->kept[0];

	for (int i = 1; i < KEPT_MAPS && k->map; i++)
		if (!hwc->kept[i].map || hwc->kept[i].used < k->used)
			k = &hwc->kept[i];
	if (k->map)
		munmap(k->map, k->size);
	*k = (struct kept_map){ map, size, dev, ino, hwc->n_presents };
}

/* @l's mappings go, none kept (a SIGBUS put zeros in one). */
static void drop_maps(struct lstate *l)
{
	for (uint32_t p = 0; p < FL_DISPLAY_MAX_PLANES; p++) {
		void *map = l->map[p];

		if (!map)
			continue;
		munmap(map, l->msize[p]);
		/* Planes may share one mapping: unmap it once. */
		for (uint32_t q = p; q < FL_DISPLAY_MAX_PLANES; q++)
			if (l->map[q] == map)
				l->map[q] = NULL;
	}
}

/* Our copies of a buffer go; its mappings are kept (@hwc) or unmapped (NULL). */
static void lstate_free(struct fl_hwc *hwc, struct lstate *l)
{
	for (uint32_t p = 0; p < FL_DISPLAY_MAX_PLANES; p++) {
		bool shared = false;

		/* Planes may share one mapping: give it up once. */
		for (uint32_t q = 0; q < p; q++)
			shared |= l->map[q] == l->map[p];
		if (l->map[p] && !shared) {
			if (hwc)
				keep_map(hwc, l->map[p], l->msize[p], l->mdev[p], l->mino[p]);
			else
				munmap(l->map[p], l->msize[p]);
		}
	}
	for (uint32_t p = 0; p < FL_DISPLAY_MAX_PLANES; p++)
		l->map[p] = NULL;
	close_fd(&l->hold);
	for (uint32_t p = 0; p < l->buf.n_planes && p < FL_DISPLAY_MAX_PLANES; p++) {
		/* Planes may share one fd: close each copy once. */
		bool dup_of_earlier = false;

		for (uint32_t q = 0; q < p; q++)
			dup_of_earlier |= l->buf.fd[q] == l->buf.fd[p];
		if (!dup_of_earlier && l->buf.fd[p] >= 0)
			close(l->buf.fd[p]);
		l->buf.fd[p] = -1;
	}
	l->buf.n_planes = 0;
}

void fl_hwc_destroy(struct fl_hwc *hwc)
{
	if (!hwc)
		return;
	for (size_t i = 0; i < hwc->n_cur; i++)
		lstate_free(NULL, &hwc->cur[i]);
	for (int i = 0; i < KEPT_MAPS; i++)
		if (hwc->kept[i].map)
			munmap(hwc->kept[i].map, hwc->kept[i].size);
	for (uint32_t i = 0; i < FL_HWC_MAX_TARGETS; i++)
		target_free(&hwc->tg[i]);
	for (size_t i = 0; i < hwc->n_eng; i++)
		free(hwc->eng[i].formats);
	free(hwc->eng);
	for (int i = 0; i < HIST; i++)
		pixman_region32_fini(&hwc->hist[i]);
	fl__display_compose_free(hwc->comp);
	fl_display_close(hwc->intf);
	fl_display_close(hwc->dev);
	free(hwc);
}

struct fl_display_handle *fl_hwc_get_interface(struct fl_hwc *hwc)
{
	return hwc ? hwc->intf : NULL;
}

int fl_hwc_get_stats(const struct fl_hwc *hwc, struct fl_hwc_stats *ret)
{
	if (!hwc || !ret)
		return -EINVAL;
	*ret = hwc->st;
	return 0;
}

/* The engines allowed on the interface, with their formats; attaches them. */
static int read_engines(struct fl_hwc *hwc, struct fl_display_error *e)
{
	struct fl_display_device_data dd = { 0 };
	struct fl_display_attachment *allowed = NULL, *att = NULL;
	int r;

	r = fl_display_device_get_data(hwc->dev, &dd, e);
	if (r < 0)
		return r;
	allowed = calloc(dd.n_allowed + 1, sizeof(*allowed));
	att = calloc(dd.n_attachments + 1, sizeof(*att));
	hwc->eng = calloc(dd.n_allowed + 1, sizeof(*hwc->eng));
	if (!allowed || !att || !hwc->eng) {
		r = -ENOMEM;
		goto out;
	}
	dd.allowed = allowed;
	dd.attachments = att;
	dd.custom_data_size = 0;
	r = fl_display_device_get_data(hwc->dev, &dd, e);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < dd.n_allowed; i++) {
		struct fl_display_handle *eh;
		struct fl_display_engine_data ed = { 0 };
		struct engine *en;
		bool attached = false;

		if (allowed[i].interface != hwc->intf_id)
			continue;
		r = fl_display_engine_open(hwc->dev, allowed[i].engine, &eh);
		if (r < 0)
			goto out;
		r = fl_display_engine_get_data(eh, &ed, e);
		en = &hwc->eng[hwc->n_eng];
		en->id = allowed[i].engine;
		if (r == 0) {
			en->formats = calloc(ed.n_formats + 1, sizeof(uint32_t));
			ed.formats = en->formats;
			ed.custom_data_size = 0;
			r = en->formats ? fl_display_engine_get_data(eh, &ed, e) : -ENOMEM;
			en->n_formats = ed.n_formats;
		}
		fl_display_close(eh);
		hwc->n_eng++;
		if (r < 0)
			goto out;
		for (size_t j = 0; j < dd.n_attachments; j++)
			attached |= att[j].engine == en->id && att[j].interface == hwc->intf_id;
		if (!attached) {
			r = fl_display_attach(hwc->dev, en->id, hwc->intf_id, e);
			if (r < 0 && r != -EALREADY)
				goto out;
		}
	}
	r = 0;
out:
	free(allowed);
	free(att);
	return r;
}

static int target_alloc(struct fl_hwc *hwc, struct target *t, struct fl_display_error *e)
{
	struct stat st;
	int r;

	r = fl_display_simple_buffer_alloc(hwc->intf, hwc->mode_w, hwc->mode_h, hwc->target_fmt,
					   &t->fd, &t->offset, &t->pitch, e);
	if (r < 0)
		return r;
	r = fd_size(t->fd, &t->size, &st);
	if (r < 0)
		return fail(e, r, "client target: its memory has no size");
	t->map = mmap(NULL, t->size, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		return fail(e, -errno, "client target: mmap: %s", strerror(errno));
	}
	return 0;
}

int fl_hwc_create(uint32_t device, uint32_t intf, const struct fl_hwc_options *opts,
		  struct fl_hwc **ret, struct fl_display_error *e)
{
	struct fl_display_interface_data id = { 0 };
	struct fl_hwc *hwc;
	int r;

	if (!ret)
		return fail(e, -EINVAL, "no place for the HWC");
	if (opts) {
		if (opts->n_targets == 1 || opts->n_targets > FL_HWC_MAX_TARGETS)
			return fail(e, -EINVAL, "n_targets %u: 2 or 3 client targets (0: 3)",
				    opts->n_targets);
		if (opts->acquire_timeout_ms < 0)
			return fail(e, -EINVAL, "acquire_timeout_ms %d: waits are bounded",
				    opts->acquire_timeout_ms);
		if (opts->flags & ~FL_HWC_NO_OVERLAYS)
			return fail(e, -EINVAL, "unknown flags 0x%x", opts->flags);
		for (size_t i = 0; i < sizeof(opts->reserved) / sizeof(opts->reserved[0]); i++)
			if (opts->reserved[i])
				return fail(e, -EINVAL, "reserved option fields must be 0");
	}
	hwc = calloc(1, sizeof(*hwc));
	if (!hwc)
		return -ENOMEM;
	hwc->intf_id = intf;
	hwc->last_target = -1;
	hwc->n_tg = opts && opts->n_targets ? opts->n_targets : FL_HWC_MAX_TARGETS;
	hwc->timeout_ms = opts && opts->acquire_timeout_ms ? opts->acquire_timeout_ms : 1000;
	hwc->flags = opts ? opts->flags : 0;
	for (int i = 0; i < HIST; i++)
		pixman_region32_init(&hwc->hist[i]);
	for (int i = 0; i < FL_HWC_MAX_TARGETS; i++)
		hwc->tg[i].fd = hwc->tg[i].free_fence = -1;
	hwc->comp = fl__display_compose_new();
	if (!hwc->comp) {
		r = -ENOMEM;
		goto err;
	}
	r = fl_display_device_open(device, &hwc->dev);
	if (r < 0) {
		fail(e, r, "display device %u: %s", device, strerror(-r));
		goto err;
	}
	r = fl_display_interface_open(hwc->dev, intf, &hwc->intf);
	if (r < 0) {
		fail(e, r, "interface %u of device %u: %s", intf, device, strerror(-r));
		goto err;
	}
	r = fl_display_interface_get_data(hwc->intf, &id, e);
	if (r < 0)
		goto err;
	hwc->mode_w = id.current_mode.hdisplay;
	hwc->mode_h = id.current_mode.vdisplay;
	if (!hwc->mode_w || !hwc->mode_h) {
		r = fail(e, -ENODEV, "interface %u has no current mode", intf);
		goto err;
	}
	r = read_engines(hwc, e);
	if (r < 0)
		goto err;
	for (size_t i = 0; i < hwc->n_eng && !hwc->target_fmt; i++)
		if (engine_takes(&hwc->eng[i], XR24))
			hwc->target_fmt = XR24;
	for (size_t i = 0; i < hwc->n_eng && !hwc->target_fmt; i++)
		if (engine_takes(&hwc->eng[i], AR24))
			hwc->target_fmt = AR24;
	/* Without an engine for it, no client target: every layer needs an engine. */
	for (uint32_t i = 0; hwc->target_fmt && i < hwc->n_tg; i++) {
		r = target_alloc(hwc, &hwc->tg[i], e);
		if (r < 0)
			goto err;
	}
	*ret = hwc;
	return 0;
err:
	fl_hwc_destroy(hwc);
	return r;
}

/* ---- a frame's checks ---- */

static int check_layer(const struct fl_hwc *hwc, const struct fl_hwc_layer *L, size_t i,
		       struct stat *ret_st0, struct fl_display_error *e)
{
	const struct fl_display_buffer *b = &L->buffer;
	const struct fl_display_layer *ly = &L->layer;
	struct fl_display_driver_buffer db = { .in_fence = -1 };
	bool device_ok = false, compose_ok;
	int r;

	if (!L->buffer_id)
		return fail(e, -EINVAL, "layer %zu: buffer_id 0 names no buffer", i);
	if (b->engine)
		return fail(e, -EINVAL, "layer %zu: engine %u: the HWC chooses engines (give 0)", i,
			    b->engine);
	if (b->n_planes < 1 || b->n_planes > FL_DISPLAY_MAX_PLANES)
		return fail(e, -EINVAL, "layer %zu: %u planes (1 to 4)", i, b->n_planes);
	if (!b->w || !b->h || b->w > MAX_SIZE || b->h > MAX_SIZE)
		return fail(e, -EINVAL, "layer %zu: size %ux%u (1 to %u each way)", i, b->w, b->h,
			    MAX_SIZE);
	if (ly->flags != FL_DISPLAY_LAYER_ENABLED)
		return fail(e, -EINVAL,
			    "layer %zu: layer flags 0x%x (give FL_DISPLAY_LAYER_ENABLED)", i,
			    ly->flags);
	if (ly->blend > FL_DISPLAY_BLEND_COVERAGE || ly->transform > FL_DISPLAY_TRANSFORM_MAX ||
	    ly->filter > FL_DISPLAY_FILTER_NEAREST || ly->alpha > 0xffff || ly->reserved[0] ||
	    ly->reserved[1])
		return fail(e, -EINVAL,
			    "layer %zu: blend %u, transform %u, filter %u, alpha 0x%x or reserved "
			    "fields out of range",
			    i, ly->blend, ly->transform, ly->filter, ly->alpha);
	if (!ly->src_w || !ly->src_h || (uint64_t)ly->src_x + ly->src_w > (uint64_t)b->w << 16 ||
	    (uint64_t)ly->src_y + ly->src_h > (uint64_t)b->h << 16)
		return fail(e, -EINVAL,
			    "layer %zu: source rect is empty or outside the buffer's %ux%u", i,
			    b->w, b->h);
	if (!ly->dst_w || !ly->dst_h || ly->dst_w > MAX_SIZE || ly->dst_h > MAX_SIZE)
		return fail(e, -EINVAL, "layer %zu: destination size %ux%u (1 to %u each way)", i,
			    ly->dst_w, ly->dst_h, MAX_SIZE);
	if (L->n_damage > FL_HWC_MAX_DAMAGE || (L->n_damage && !L->damage))
		return fail(e, -EINVAL, "layer %zu: %zu damage rects (at most %d, and an array)", i,
			    L->n_damage, FL_HWC_MAX_DAMAGE);
	db.w = b->w;
	db.h = b->h;
	db.format = b->format;
	db.n_planes = b->n_planes;
	for (uint32_t p = 0; p < b->n_planes; p++) {
		struct stat st;

		r = b->fd[p] < 0 ? -EBADF : fd_size(b->fd[p], &db.size[p], &st);
		if (r == -EBADF)
			return fail(e, -EBADF, "layer %zu plane %u: fd %d is not open", i, p,
				    b->fd[p]);
		if (r < 0)
			return fail(e, -EINVAL, "layer %zu plane %u: fd %d is no memory", i, p,
				    b->fd[p]);
		if (p == 0)
			*ret_st0 = st;
		db.offset[p] = b->offset[p];
		db.pitch[p] = b->pitch[p];
	}
	if (fl__display_format_find(b->format)) {
		r = fl__display_buffer_check(&db, i, FL_DISPLAY_PADDED_TO_PITCH, e);
		if (r < 0)
			return r;
	}
	for (size_t j = 0; j < hwc->n_eng; j++)
		device_ok |= engine_takes(&hwc->eng[j], b->format);
	compose_ok = hwc->target_fmt &&
		     fl__display_compose_format_ok(b->format, FL_DISPLAY_COMPOSE_SOURCE);
	if (!compose_ok && (!device_ok || (hwc->flags & FL_HWC_NO_OVERLAYS)))
		return fail(
			e, -EINVAL,
			"layer %zu: format 0x%08x is taken neither by an engine of the interface "
			"nor by the compositor",
			i, b->format);
	if (b->acquire_fence >= 0) {
		r = fl_fence_fd_get_status(b->acquire_fence);
		if (r == -EBADF || r == -ENOTTY)
			return fail(e, -EINVAL, "layer %zu: acquire fence %d is no fence", i,
				    b->acquire_fence);
	}
	return 0;
}

/* ---- planning ---- */

/* Kuhn's augmenting path: can item @it get an engine, moving others? */
static bool augment(const struct fl_hwc *hwc, const uint32_t *fmt, size_t it, int *eng_item,
		    bool *seen)
{
	for (size_t j = 0; j < hwc->n_eng; j++) {
		if (seen[j] || !engine_takes(&hwc->eng[j], fmt[it]))
			continue;
		seen[j] = true;
		if (eng_item[j] < 0 || augment(hwc, fmt, (size_t)eng_item[j], eng_item, seen)) {
			eng_item[j] = (int)it;
			return true;
		}
	}
	return false;
}

/* Engines for the target (item 0 when @k > 0) and the layers above @k. */
static bool match(const struct fl_hwc *hwc, const struct fl_hwc_layer *const *z, size_t n,
		  uint32_t k, struct plan *p)
{
	uint32_t fmt[FL_HWC_MAX_LAYERS + 1];
	int eng_item[FL_DISPLAY_MAX_ENGINES];
	bool seen[FL_DISPLAY_MAX_ENGINES];
	size_t n_items = 0, first = k ? 1 : 0;

	if (hwc->n_eng > FL_DISPLAY_MAX_ENGINES)
		return false;
	if (k)
		fmt[n_items++] = hwc->target_fmt;
	for (size_t pos = k; pos < n; pos++)
		fmt[n_items++] = z[pos]->buffer.format;
	if (n_items > hwc->n_eng)
		return false;
	for (size_t j = 0; j < hwc->n_eng; j++)
		eng_item[j] = -1;
	for (size_t it = 0; it < n_items; it++) {
		memset(seen, 0, hwc->n_eng);
		if (!augment(hwc, fmt, it, eng_item, seen))
			return false;
	}
	for (size_t j = 0; j < hwc->n_eng; j++) {
		if (eng_item[j] < 0)
			continue;
		if (k && eng_item[j] == 0)
			p->target_engine = hwc->eng[j].id;
		else
			p->engine[k + (size_t)eng_item[j] - first] = hwc->eng[j].id;
	}
	p->k = k;
	return true;
}

/* The client target's layer: the whole mode, opaque, at the bottom composed layer's z. */
static struct fl_display_layer target_layer(const struct fl_hwc *hwc, uint32_t zpos)
{
	return (struct fl_display_layer){
		.flags = FL_DISPLAY_LAYER_ENABLED,
		.src_w = hwc->mode_w << 16,
		.src_h = hwc->mode_h << 16,
		.dst_w = hwc->mode_w,
		.dst_h = hwc->mode_h,
		.zpos = zpos,
		.blend = FL_DISPLAY_BLEND_NONE,
		.alpha = 0xffff,
	};
}

/*
 * The post of plan @p: the client target @t (when @p->k) below the
 * overlay layers. A TEST_ONLY (@next NULL) posts the caller's buffers
 * without fences; a real post our copies (@next), with the acquire fence
 * of each buffer new this frame.
 */
static int do_post(struct fl_hwc *hwc, const struct plan *p, const struct fl_hwc_layer *const *z,
		   const struct lstate *next, const bool *changed, size_t n, int t, int *ret_fence,
		   struct fl_display_error *e)
{
	struct fl_display_buffer bufs[FL_HWC_MAX_LAYERS + 1];
	struct fl_display_layer lys[FL_HWC_MAX_LAYERS + 1];
	struct fl_display_post post = { 0 };
	bool test = !next;
	size_t nb = 0;

	if (p->k) {
		const struct target *tg = &hwc->tg[t];

		bufs[nb] = (struct fl_display_buffer){
			.engine = p->target_engine,
			.w = hwc->mode_w,
			.h = hwc->mode_h,
			.format = hwc->target_fmt,
			.n_planes = 1,
			.fd = { tg->fd, -1, -1, -1 },
			.offset = { tg->offset },
			.pitch = { tg->pitch },
			.acquire_fence = -1,
		};
		lys[nb++] = target_layer(hwc, z[0]->layer.zpos);
	}
	for (size_t pos = p->k; pos < n; pos++) {
		if (next && next[pos].skip)
			continue;
		bufs[nb] = next ? next[pos].buf : z[pos]->buffer;
		bufs[nb].engine = p->engine[pos];
		bufs[nb].acquire_fence = next && changed[pos] ? z[pos]->buffer.acquire_fence : -1;
		lys[nb++] = z[pos]->layer;
	}
	post.intfs = &hwc->intf_id;
	post.n_intfs = 1;
	post.bufs = bufs;
	post.n_bufs = nb;
	post.layers = nb ? lys : NULL;
	post.flags = test ? FL_DISPLAY_POST_TEST_ONLY : 0;
	post.fence_type = test ? FL_DISPLAY_FENCE_NONE : FL_DISPLAY_FENCE_PRESENT;
	return fl_display_post(hwc->dev, &post, ret_fence, e);
}

/*
 * drm_hwcomposer's ladder: every layer on its own engine, then the bottom
 * 1, 2, ... n layers composed into the client target, each step that the
 * device's data allows checked with a TEST_ONLY post; the first accepted
 * wins.
 */
static int plan_frame(struct fl_hwc *hwc, const struct fl_hwc_layer *const *z, size_t n,
		      struct fl_hwc_result *res, struct fl_display_error *e)
{
	struct fl_display_error last = { 0 };
	bool tried = false;
	uint32_t k0 = (hwc->flags & FL_HWC_NO_OVERLAYS) ? (uint32_t)n : 0;

	for (uint32_t k = k0; k <= n; k++) {
		struct plan p = { 0 };
		int r;

		if (k && !hwc->target_fmt)
			break;
		if (k && !fl__display_compose_format_ok(z[k - 1]->buffer.format,
							FL_DISPLAY_COMPOSE_SOURCE))
			break; /* this layer and any larger k would compose what cannot be */
		if (!match(hwc, z, n, k, &p))
			continue;
		tried = true;
		hwc->st.test_only++;
		res->n_tests++;
		r = do_post(hwc, &p, z, NULL, NULL, n, 0, NULL, &last);
		if (r == 0) {
			p.valid = true;
			hwc->plan = p;
			hwc->st.plans++;
			return 0;
		}
		hwc->st.test_only_refused++;
	}
	if (!tried)
		return fail(e, -ENOSPC,
			    "no plan fits the device: %zu layers, %zu engines, %s client target", n,
			    hwc->n_eng, hwc->target_fmt ? "a" : "no");
	return fail(e, -ENOSPC, "the display refused every plan, the last: %s", last.msg);
}

/* ---- damage ---- */

static void region_add_box(pixman_region32_t *r, int64_t x0, int64_t y0, int64_t x1, int64_t y1,
			   const struct fl_hwc *hwc)
{
	x0 = x0 < 0 ? 0 : x0;
	y0 = y0 < 0 ? 0 : y0;
	x1 = x1 > hwc->mode_w ? hwc->mode_w : x1;
	y1 = y1 > hwc->mode_h ? hwc->mode_h : y1;
	if (x0 < x1 && y0 < y1)
		pixman_region32_union_rect(r, r, (int)x0, (int)y0, (unsigned)(x1 - x0),
					   (unsigned)(y1 - y0));
}

static void add_dst(pixman_region32_t *r, const struct fl_display_layer *ly,
		    const struct fl_hwc *hwc)
{
	region_add_box(r, ly->dst_x, ly->dst_y, (int64_t)ly->dst_x + ly->dst_w,
		       (int64_t)ly->dst_y + ly->dst_h, hwc);
}

/*
 * A rect of buffer pixels to the destination pixels it can change: into
 * the source rect's unit square, flipped, turned clockwise, scaled to the
 * destination rect; one pixel more on each side for the filter's reach.
 */
static void add_buffer_rect(pixman_region32_t *r, const struct fl_hwc_rect *d,
			    const struct fl_display_layer *ly, const struct fl_hwc *hwc)
{
	double sx = ly->src_x / 65536.0, sy = ly->src_y / 65536.0;
	double sw = ly->src_w / 65536.0, sh = ly->src_h / 65536.0;
	double u0 = ((double)d->x - sx) / sw, u1 = ((double)d->x + d->w - sx) / sw;
	double v0 = ((double)d->y - sy) / sh, v1 = ((double)d->y + d->h - sy) / sh;
	double a0, a1, b0, b1, t;

	u0 = u0 < 0 ? 0 : u0;
	v0 = v0 < 0 ? 0 : v0;
	u1 = u1 > 1 ? 1 : u1;
	v1 = v1 > 1 ? 1 : v1;
	if (u0 >= u1 || v0 >= v1)
		return;
	if (ly->transform & FL_DISPLAY_TRANSFORM_FLIP_X) {
		t = u0;
		u0 = 1 - u1;
		u1 = 1 - t;
	}
	switch (ly->transform & 3) {
	case 1: /* (u, v) -> (1 - v, u) */
		a0 = 1 - v1, a1 = 1 - v0, b0 = u0, b1 = u1;
		break;
	case 2:
		a0 = 1 - u1, a1 = 1 - u0, b0 = 1 - v1, b1 = 1 - v0;
		break;
	case 3: /* (u, v) -> (v, 1 - u) */
		a0 = v0, a1 = v1, b0 = 1 - u1, b1 = 1 - u0;
		break;
	default:
		a0 = u0, a1 = u1, b0 = v0, b1 = v1;
		break;
	}
	region_add_box(r, (int64_t)(ly->dst_x + a0 * ly->dst_w) - 1,
		       (int64_t)(ly->dst_y + b0 * ly->dst_h) - 1,
		       (int64_t)(ly->dst_x + a1 * ly->dst_w + 0.999999) + 1,
		       (int64_t)(ly->dst_y + b1 * ly->dst_h + 0.999999) + 1, hwc);
}

static void add_layer_damage(pixman_region32_t *r, const struct fl_hwc_layer *L,
			     const struct fl_hwc *hwc)
{
	if (!L->damage) {
		add_dst(r, &L->layer, hwc);
		return;
	}
	for (size_t i = 0; i < L->n_damage; i++)
		if (L->damage[i].w && L->damage[i].h)
			add_buffer_rect(r, &L->damage[i], &L->layer, hwc);
}

/* ---- composition ---- */

static int map_layer(struct fl_hwc *hwc, struct lstate *l, struct fl_display_error *e, size_t i)
{
	for (uint32_t p = 0; p < l->buf.n_planes; p++) {
		struct stat st;
		uint64_t size = 0;
		int r;

		if (l->map[p])
			continue;
		r = fd_size(l->buf.fd[p], &size, &st);
		if (r < 0 || !size || size > SIZE_MAX)
			return fail(e, -EINVAL, "layer %zu plane %u: no memory to map", i, p);
		l->mdev[p] = st.st_dev;
		l->mino[p] = st.st_ino;
		l->msize[p] = size;
		for (uint32_t q = 0; q < p && !l->map[p]; q++)
			if (l->buf.fd[q] == l->buf.fd[p])
				l->map[p] = l->map[q];
		for (int k = 0; k < KEPT_MAPS && !l->map[p]; k++) {
			struct kept_map *km = &hwc->kept[k];

			if (km->map && km->dev == st.st_dev && km->ino == st.st_ino &&
			    km->size == size) {
				l->map[p] = km->map;
				km->map = NULL;
			}
		}
		if (l->map[p])
			continue;
		l->map[p] = mmap(NULL, size, PROT_READ, MAP_SHARED, l->buf.fd[p], 0);
		if (l->map[p] == MAP_FAILED) {
			l->map[p] = NULL;
			return fail(e, -errno, "layer %zu plane %u: mmap: %s", i, p,
				    strerror(errno));
		}
	}
	return 0;
}

static int compose_target(struct fl_hwc *hwc, struct target *t, struct lstate *st,
			  const struct fl_hwc_layer *const *z, uint32_t k, pixman_region32_t *rg,
			  struct fl_display_error *e)
{
	struct fl_display_compose_layer cl[FL_HWC_MAX_LAYERS];
	struct fl_display_compose_rect dr[FL_DISPLAY_COMPOSE_MAX_DAMAGE];
	/* Producers' memory, which they may shrink under us: every mapping is guarded. */
	struct fl__sigbus_guard guard[FL_HWC_MAX_LAYERS * FL_DISPLAY_MAX_PLANES];
	struct lstate *guarded_layer[FL_HWC_MAX_LAYERS * FL_DISPLAY_MAX_PLANES];
	struct lstate *layer_of[FL_HWC_MAX_LAYERS];
	struct fl_display_frame f = { 0 };
	pixman_box32_t *boxes;
	int nbox, r;
	size_t nl = 0, nd = 0, ng = 0;
	bool shrank = false;

	for (uint32_t pos = 0; pos < k; pos++) {
		struct lstate *l = &st[pos];
		const struct fl_display_layer *ly = &z[pos]->layer;
		struct fl_display_compose_layer *c = &cl[nl];

		if (l->skip)
			continue;
		r = map_layer(hwc, l, e, pos);
		if (r < 0)
			return r;
		memset(c, 0, sizeof(*c));
		c->fourcc = l->buf.format;
		c->w = l->buf.w;
		c->h = l->buf.h;
		c->n_planes = l->buf.n_planes;
		for (uint32_t p = 0; p < c->n_planes; p++)
			c->plane[p] = (struct fl_display_compose_plane){
				.map = l->map[p],
				.size = l->msize[p],
				.offset = l->buf.offset[p],
				.pitch = l->buf.pitch[p],
			};
		fl__display_compose_layer_place(c, ly);
		layer_of[nl++] = l;
	}
	for (size_t i = 0; i < nl; i++)
		for (uint32_t p = 0; p < cl[i].n_planes; p++) {
			bool again = false;

			for (uint32_t q = 0; q < p; q++)
				again |= cl[i].plane[q].map == cl[i].plane[p].map;
			if (again)
				continue;
			r = fl__sigbus_guard_begin(&guard[ng], (void *)cl[i].plane[p].map,
						   (size_t)cl[i].plane[p].size);
			if (r < 0) {
				fail(e, r, "cannot guard the layers' memory against SIGBUS");
				goto out;
			}
			guarded_layer[ng++] = layer_of[i];
		}
	boxes = pixman_region32_rectangles(rg, &nbox);
	if (nbox > FL_DISPLAY_COMPOSE_MAX_DAMAGE) {
		/* More pieces than the compositor takes: their bounding box, drawn once. */
		boxes = pixman_region32_extents(rg);
		nbox = 1;
	}
	for (int b = 0; b < nbox; b++)
		dr[nd++] =
			(struct fl_display_compose_rect){ boxes[b].x1, boxes[b].y1,
							  (uint32_t)(boxes[b].x2 - boxes[b].x1),
							  (uint32_t)(boxes[b].y2 - boxes[b].y1) };
	f.target = (struct fl_display_compose_target){
		.map = t->map,
		.size = t->size,
		.offset = t->offset,
		.pitch = t->pitch,
		.fourcc = hwc->target_fmt,
		.w = hwc->mode_w,
		.h = hwc->mode_h,
	};
	f.background = (struct fl_display_color){ 0, 0, 0, 0xffff };
	f.layers = cl;
	f.n_layers = nl;
	f.damage = dr;
	f.n_damage = nd;
	r = fl__display_compose(hwc->comp, &f, e);
out:
	while (ng) {
		struct fl__sigbus_guard *g = &guard[--ng];

		if (!fl__sigbus_guard_end(g))
			continue;
		/* Zeros now: never kept for a later frame. */
		drop_maps(guarded_layer[ng]);
		shrank = true;
	}
	if (shrank)
		return fail(e, -EFAULT,
			    "a layer's buffer shrank while it was composed (its producer "
			    "truncated its memory)");
	return r;
}

/* A client target not in the last post, free of the screen (waited for, bounded). */
static int pick_target(struct fl_hwc *hwc, struct fl_display_error *e)
{
	int best = -1;

	for (uint32_t i = 0; i < hwc->n_tg; i++) {
		struct target *t = &hwc->tg[i];

		if (t->in_last_post)
			continue;
		if (t->free_fence >= 0 && fl_fence_fd_get_status(t->free_fence) != 0)
			close_fd(&t->free_fence); /* signalled, or failed: the screen let it go */
		/* Free ones first, then the most recently drawn: the least to redraw. */
		if (best < 0 || (hwc->tg[best].free_fence >= 0 && t->free_fence < 0) ||
		    ((hwc->tg[best].free_fence >= 0) == (t->free_fence >= 0) &&
		     t->drawn_seq > hwc->tg[best].drawn_seq))
			best = (int)i;
	}
	if (best < 0)
		return fail(e, -EBUSY, "every client target is on screen");
	if (hwc->tg[best].free_fence >= 0) {
		int r = fl_fence_fd_wait(hwc->tg[best].free_fence, hwc->timeout_ms);

		if (r == -ETIME)
			return fail(e, -EBUSY, "client target %d still on screen after %d ms", best,
				    hwc->timeout_ms);
		close_fd(&hwc->tg[best].free_fence);
	}
	return best;
}

/*
 * A copy of @fence for another holder. Without one (no fd left), the
 * holder is told "free now" only once it is: waited for, bounded.
 */
static int dup_fence(int fence, int timeout_ms)
{
	int r = fcntl(fence, F_DUPFD_CLOEXEC, 0);

	if (r < 0)
		fl_fence_fd_wait(fence, timeout_ms);
	return r;
}

static int cmp_z(const void *a, const void *b)
{
	const struct fl_hwc_layer *const *x = a, *const *y = b;

	return (*x)->layer.zpos < (*y)->layer.zpos ? -1 : (*x)->layer.zpos > (*y)->layer.zpos;
}

static void add_release(struct fl_hwc_result *res, uint64_t layer_id, uint64_t buffer_id, int fence)
{
	if (res->n_released < FL_HWC_MAX_LAYERS)
		res->released[res->n_released++] =
			(struct fl_hwc_release){ layer_id, buffer_id, fence };
	else if (fence >= 0)
		close(fence); /* cannot happen: one release per previous layer at most */
}

/* Our copies of @L's fds, in a new state. */
static int lstate_new(struct lstate *l, const struct fl_hwc_layer *L, const struct stat *st0)
{
	memset(l, 0, sizeof(*l));
	l->id = L->id;
	l->buffer_id = L->buffer_id;
	l->buf = L->buffer;
	l->buf.acquire_fence = -1;
	l->dev = st0->st_dev;
	l->ino = st0->st_ino;
	l->fresh = true;
	l->hold = -1;
	for (uint32_t p = 0; p < FL_DISPLAY_MAX_PLANES; p++)
		l->buf.fd[p] = -1;
	for (uint32_t p = 0; p < L->buffer.n_planes; p++) {
		uint32_t q;

		for (q = 0; q < p && L->buffer.fd[q] != L->buffer.fd[p]; q++)
			;
		l->buf.fd[p] = q < p ? l->buf.fd[q] : fcntl(L->buffer.fd[p], F_DUPFD_CLOEXEC, 0);
		if (l->buf.fd[p] < 0) {
			int err = -errno;

			l->buf.n_planes = p;
			lstate_free(NULL, l);
			return err;
		}
	}
	return 0;
}

int fl_hwc_present(struct fl_hwc *hwc, const struct fl_hwc_layer *layers, size_t n,
		   struct fl_hwc_result *res, struct fl_display_error *e)
{
	const struct fl_hwc_layer *z[FL_HWC_MAX_LAYERS];
	struct stat st0[FL_HWC_MAX_LAYERS];
	struct lstate next[FL_HWC_MAX_LAYERS];
	struct sig sig[FL_HWC_MAX_LAYERS];
	size_t zidx[FL_HWC_MAX_LAYERS];
	bool changed[FL_HWC_MAX_LAYERS] = { false };
	size_t n_next = 0;
	pixman_region32_t dmg, redraw;
	bool same_geom, need_post, drew = false;
	int t = -1, fence = -1, r;
	struct plan *p;
	uint32_t k;

	if (!hwc || !res || (n && !layers))
		return fail(e, -EINVAL, "no HWC, result or layers");
	p = &hwc->plan;
	if (n > FL_HWC_MAX_LAYERS)
		return fail(e, -E2BIG, "%zu layers: at most %d", n, FL_HWC_MAX_LAYERS);
	memset(res, 0, sizeof(*res));
	res->present_fence = -1;
	hwc->n_presents++;

	/* Everything is checked before anything changes. */
	for (size_t i = 0; i < n; i++) {
		r = check_layer(hwc, &layers[i], i, &st0[i], e);
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++) {
			if (layers[j].id == layers[i].id)
				return fail(e, -EINVAL, "layers %zu and %zu have the same id", j,
					    i);
			if (layers[j].buffer_id == layers[i].buffer_id)
				return fail(e, -EINVAL,
					    "layers %zu and %zu have the same buffer_id", j, i);
			if (layers[j].layer.zpos == layers[i].layer.zpos)
				return fail(e, -EINVAL,
					    "layers %zu and %zu have the same z order %u", j, i,
					    layers[i].layer.zpos);
		}
		for (size_t c = 0; c < hwc->n_cur; c++)
			if (hwc->cur[c].buffer_id == layers[i].buffer_id &&
			    (hwc->cur[c].dev != st0[i].st_dev || hwc->cur[c].ino != st0[i].st_ino))
				return fail(
					e, -EINVAL,
					"layer %zu: buffer_id %llu names other memory than it did",
					i, (unsigned long long)layers[i].buffer_id);
		z[i] = &layers[i];
	}
	qsort(z, n, sizeof(z[0]), cmp_z);
	for (size_t pos = 0; pos < n; pos++) {
		zidx[pos] = (size_t)(z[pos] - layers);
		memset(&sig[pos], 0, sizeof(sig[pos]));
		sig[pos].id = z[pos]->id;
		sig[pos].format = z[pos]->buffer.format;
		sig[pos].w = z[pos]->buffer.w;
		sig[pos].h = z[pos]->buffer.h;
		sig[pos].layer = z[pos]->layer;
	}
	for (size_t c = 0; c < hwc->n_cur; c++)
		hwc->cur[c].taken = false;
	same_geom = hwc->have_sig && n == hwc->n_sig && !memcmp(sig, hwc->sig, n * sizeof(sig[0]));

	/* The plan: the last one while the geometry stays, else the ladder. */
	if (same_geom && p->valid) {
		hwc->st.plans_reused++;
	} else {
		p->valid = false;
		r = plan_frame(hwc, z, n, res, e);
		if (r < 0)
			return r;
		res->flags |= FL_HWC_FRAME_PLANNED;
	}
	k = p->k;

	/* Carry each unchanged buffer over; copy the new ones; acquire fences. */
	for (size_t pos = 0; pos < n; pos++) {
		const struct fl_hwc_layer *L = z[pos];
		struct lstate *old = NULL;
		int acq = L->buffer.acquire_fence, st = 0;

		for (size_t c = 0; c < hwc->n_cur; c++)
			if (hwc->cur[c].id == L->id)
				old = &hwc->cur[c];
		if (old && old->buffer_id == L->buffer_id) {
			next[pos] = *old;
			next[pos].fresh = false;
			old->taken = true;
			n_next = pos + 1;
			continue;
		}
		r = lstate_new(&next[pos], L, &st0[zidx[pos]]);
		if (r < 0) {
			fail(e, r, "layer %zu: cannot keep its fds: %s", zidx[pos], strerror(-r));
			goto undo;
		}
		changed[pos] = true;
		n_next = pos + 1;
		/* Composed: waited here (the CPU reads it now); on an engine: the display waits. */
		if (acq >= 0)
			st = pos < k ? fl_fence_fd_wait(acq, hwc->timeout_ms)
				     : fl_fence_fd_get_status(acq);
		if (st < 0) {
			hwc->st.acquire_failures++;
			res->layers[zidx[pos]].acquire_status = st;
			/* Never shown: back at once. The layer keeps its last good buffer. */
			lstate_free(hwc, &next[pos]);
			add_release(res, L->id, L->buffer_id, -1);
			if (old) {
				next[pos] = *old;
				next[pos].fresh = false;
				old->taken = true;
				changed[pos] = false;
			} else {
				next[pos].skip = true;
				next[pos].id = L->id;
				next[pos].buffer_id = 0; /* none: the next buffer is new */
				next[pos].fresh = true;
			}
		}
	}
	/* The client target's damage this frame. */
	pixman_region32_init(&dmg);
	pixman_region32_init(&redraw);
	if (k) {
		/* The target holds the same layers as in the last post: only their changes. */
		bool composed_same = hwc->last_target >= 0 && hwc->have_sig && hwc->last_k == k &&
				     hwc->n_sig >= k;

		for (size_t pos = 0; composed_same && pos < k; pos++)
			composed_same = hwc->sig[pos].id == sig[pos].id;
		if (!composed_same) {
			region_add_box(&dmg, 0, 0, hwc->mode_w, hwc->mode_h, hwc);
		} else {
			for (size_t pos = 0; pos < k; pos++) {
				if (memcmp(&sig[pos], &hwc->sig[pos], sizeof(sig[pos]))) {
					add_dst(&dmg, &hwc->sig[pos].layer, hwc);
					add_dst(&dmg, &sig[pos].layer, hwc);
				} else if (changed[pos] || z[pos]->n_damage) {
					add_layer_damage(&dmg, z[pos], hwc);
				}
			}
		}
	}
	need_post = !hwc->posted || !same_geom || pixman_region32_not_empty(&dmg);
	for (size_t pos = 0; pos < n && !need_post; pos++)
		need_post = changed[pos] || next[pos].fresh;
	for (size_t c = 0; c < hwc->n_cur && !need_post; c++)
		need_post = !hwc->cur[c].taken;
	if (!need_post) {
		/* The frame on screen is this one: nothing to draw or post. */
		pixman_region32_fini(&dmg);
		pixman_region32_fini(&redraw);
		for (size_t pos = 0; pos < n; pos++) {
			res->layers[zidx[pos]].composition =
				pos < k ? FL_HWC_COMPOSITION_CLIENT : FL_HWC_COMPOSITION_DEVICE;
			res->layers[zidx[pos]].engine = pos < k ? p->target_engine : p->engine[pos];
		}
		res->n_composed = k;
		res->target_engine = k ? p->target_engine : 0;
		hwc->st.frames++;
		hwc->st.unchanged++;
		return 0;
	}

	if (k) {
		if (!pixman_region32_not_empty(&dmg) && hwc->last_target >= 0 &&
		    hwc->tg[hwc->last_target].drawn_seq == hwc->cseq && hwc->cseq) {
			t = hwc->last_target; /* unchanged: shown again, not drawn */
		} else {
			uint64_t seq = hwc->cseq + 1;

			if (!pixman_region32_not_empty(&dmg))
				region_add_box(&dmg, 0, 0, hwc->mode_w, hwc->mode_h, hwc);
			t = pick_target(hwc, e);
			if (t < 0) {
				r = t;
				goto undo_rg;
			}
			pixman_region32_copy(&hwc->hist[seq % HIST], &dmg);
			/* Buffer age: what changed since this target was last drawn. */
			if (!hwc->tg[t].drawn_seq || seq - hwc->tg[t].drawn_seq > HIST - 1) {
				region_add_box(&redraw, 0, 0, hwc->mode_w, hwc->mode_h, hwc);
			} else {
				for (uint64_t s = hwc->tg[t].drawn_seq + 1; s <= seq; s++)
					pixman_region32_union(&redraw, &redraw,
							      &hwc->hist[s % HIST]);
			}
			hwc->cseq = seq;
			hwc->tg[t].drawn_seq = 0; /* until drawn whole */
			drew = true;
			r = compose_target(hwc, &hwc->tg[t], next, z, k, &redraw, e);
			if (r < 0)
				goto undo_rg;
			hwc->tg[t].drawn_seq = seq;
			{
				pixman_box32_t *bx;
				int nb;

				bx = pixman_region32_rectangles(&redraw, &nb);
				if (nb > FL_DISPLAY_COMPOSE_MAX_DAMAGE) {
					bx = pixman_region32_extents(&redraw);
					nb = 1;
				}
				for (int b = 0; b < nb; b++)
					res->composed_pixels += (uint64_t)(bx[b].x2 - bx[b].x1) *
								(uint64_t)(bx[b].y2 - bx[b].y1);
			}
		}
	}

	r = do_post(hwc, p, z, next, changed, n, t, &fence, e);
	if (r < 0) {
		/* Tested and still refused (a device that changed): plan again next frame. */
		p->valid = false;
		goto undo_rg;
	}
	pixman_region32_fini(&dmg);
	pixman_region32_fini(&redraw);

	/* Committed: let the replaced buffers go, each with its release fence. */
	for (size_t c = 0; c < hwc->n_cur; c++) {
		struct lstate *o = &hwc->cur[c];

		if (o->taken)
			continue;
		if (o->skip) {
			/* no buffer */
		} else if (o->on_overlay) {
			add_release(res, o->id, o->buffer_id, dup_fence(fence, hwc->timeout_ms));
		} else {
			/* Only composed since: free once the post that took it off the engine is shown. */
			add_release(res, o->id, o->buffer_id, o->hold);
			o->hold = -1;
		}
		lstate_free(hwc, o);
	}
	if (hwc->last_target >= 0 && hwc->last_target != t) {
		struct target *o = &hwc->tg[hwc->last_target];

		o->in_last_post = false;
		close_fd(&o->free_fence);
		o->free_fence = dup_fence(fence, hwc->timeout_ms);
	}
	if (t >= 0) {
		hwc->tg[t].in_last_post = true;
		close_fd(&hwc->tg[t].free_fence);
	}
	hwc->last_target = t;
	hwc->last_k = k;
	for (size_t pos = 0; pos < n; pos++) {
		bool was_on = next[pos].on_overlay && !next[pos].fresh;

		next[pos].on_overlay = pos >= k && !next[pos].skip;
		if (was_on && !next[pos].on_overlay) {
			close_fd(&next[pos].hold);
			next[pos].hold = dup_fence(fence, hwc->timeout_ms);
		}
		next[pos].fresh = false;
		hwc->cur[pos] = next[pos];
		res->layers[zidx[pos]].composition =
			pos < k ? FL_HWC_COMPOSITION_CLIENT : FL_HWC_COMPOSITION_DEVICE;
		res->layers[zidx[pos]].engine = pos < k ? p->target_engine : p->engine[pos];
	}
	hwc->n_cur = n;
	memcpy(hwc->sig, sig, n * sizeof(sig[0]));
	hwc->n_sig = n;
	hwc->have_sig = true;
	hwc->posted = true;
	res->present_fence = fence;
	res->flags |= FL_HWC_FRAME_POSTED | (drew ? FL_HWC_FRAME_COMPOSED : 0);
	res->n_composed = k;
	res->target_engine = k ? p->target_engine : 0;
	hwc->st.frames++;
	hwc->st.posts++;
	if (drew) {
		hwc->st.composed_frames++;
		hwc->st.composed_pixels += res->composed_pixels;
	}
	return 0;

undo_rg:
	pixman_region32_fini(&dmg);
	pixman_region32_fini(&redraw);
undo:
	/* Nothing changed for the caller: our copies of this frame's new buffers go. */
	for (size_t pos = 0; pos < n_next; pos++) {
		if (next[pos].fresh) {
			lstate_free(hwc, &next[pos]);
			continue;
		}
		/* A carried buffer mapped this frame: its mapping is the old state's. */
		for (size_t c = 0; c < hwc->n_cur; c++) {
			struct lstate *o = &hwc->cur[c];

			if (o->skip || o->buffer_id != next[pos].buffer_id)
				continue;
			for (uint32_t pl = 0; pl < FL_DISPLAY_MAX_PLANES; pl++) {
				o->map[pl] = next[pos].map[pl];
				o->msize[pl] = next[pos].msize[pl];
				o->mdev[pl] = next[pos].mdev[pl];
				o->mino[pl] = next[pos].mino[pl];
			}
		}
	}
	for (size_t i = 0; i < res->n_released; i++)
		close_fd(&res->released[i].fence);
	memset(res, 0, sizeof(*res));
	res->present_fence = -1;
	return r;
}

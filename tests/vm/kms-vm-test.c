/* SPDX-License-Identifier: MIT */
/*
 * The kernel's KMS as the kms display driver will use it, checked with
 * libdrm alone against VKMS in a VM (tests/vm/kms-vm.sh boots one): an
 * atomic modeset tried with TEST_ONLY first, a refused TEST_ONLY commit,
 * flips of dumb buffers paced by page-flip events with the kernel's
 * timestamps, and a frame captured through the writeback connector,
 * compared pixel by pixel with what the planes hold. Where /dev/dri has no
 * VKMS device every test skips. Besides ok/FAIL lines it prints
 * `name value` lines (the mode, the flip period) for the harness's log.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/sync_file.h>
#include <linux/udmabuf.h>

#include <drm_fourcc.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include "runner.h"
#include "sw-sync-uapi.h"

/* A dumb buffer with its framebuffer, mapped. */
struct dumb {
	uint32_t handle, fb, pitch, w, h;
	uint64_t size;
	uint32_t *px;
};

struct card {
	int fd;
	uint32_t crtc, conn, wb_conn, primary, overlay;
	uint32_t overlay_format;
	drmModeModeInfo mode;
	drmModeModeInfo alt_mode; /* another size than mode, or mode */
};

static int open_vkms(void)
{
	char path[32];

	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		drmVersionPtr v = drmGetVersion(fd);
		int vkms = v && strcmp(v->name, "vkms") == 0;
		drmFreeVersion(v);
		if (vkms)
			return fd;
		close(fd);
	}
	return -1;
}

/* The id of the property NAME of an object, 0 if it has none. */
static uint32_t prop_id(int fd, uint32_t obj, uint32_t type, const char *name)
{
	drmModeObjectPropertiesPtr props = drmModeObjectGetProperties(fd, obj, type);
	uint32_t id = 0;

	for (uint32_t i = 0; props && i < props->count_props && !id; i++) {
		drmModePropertyPtr p = drmModeGetProperty(fd, props->props[i]);
		if (p && strcmp(p->name, name) == 0)
			id = p->prop_id;
		drmModeFreeProperty(p);
	}
	drmModeFreeObjectProperties(props);
	return id;
}

static uint64_t prop_value(int fd, uint32_t obj, uint32_t type, const char *name)
{
	drmModeObjectPropertiesPtr props = drmModeObjectGetProperties(fd, obj, type);
	uint64_t v = UINT64_MAX;

	for (uint32_t i = 0; props && i < props->count_props; i++) {
		drmModePropertyPtr p = drmModeGetProperty(fd, props->props[i]);
		if (p && strcmp(p->name, name) == 0)
			v = props->prop_values[i];
		drmModeFreeProperty(p);
	}
	drmModeFreeObjectProperties(props);
	return v;
}

static void add(drmModeAtomicReqPtr req, const struct card *c, uint32_t obj, uint32_t type,
		const char *name, uint64_t value)
{
	uint32_t id = prop_id(c->fd, obj, type, name);

	if (!id)
		fl__test_fail(__FILE__, __LINE__, "object %u has no property %s", obj, name);
	fl_assert_int_ge(drmModeAtomicAddProperty(req, obj, id, value), 0);
}

static int plane_has_format(drmModePlanePtr p, uint32_t format)
{
	for (uint32_t i = 0; i < p->count_formats; i++)
		if (p->formats[i] == format)
			return 1;
	return 0;
}

/* The VKMS card with its objects, or the test skips. */
static struct card card_open(void)
{
	struct card c = { .fd = open_vkms() };

	if (c.fd < 0)
		fl_test_skip(
			"no VKMS device in /dev/dri (tests/vm/kms-vm.sh boots a kernel with one)");
	fl_assert_int_eq(drmSetClientCap(c.fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1), 0);
	fl_assert_int_eq(drmSetClientCap(c.fd, DRM_CLIENT_CAP_ATOMIC, 1), 0);
	fl_assert_int_eq(drmSetClientCap(c.fd, DRM_CLIENT_CAP_WRITEBACK_CONNECTORS, 1), 0);

	drmModeResPtr res = drmModeGetResources(c.fd);
	fl_assert(res && res->count_crtcs >= 1);
	c.crtc = res->crtcs[0];
	for (int i = 0; i < res->count_connectors; i++) {
		drmModeConnectorPtr k = drmModeGetConnector(c.fd, res->connectors[i]);
		fl_assert(k);
		if (k->connector_type == DRM_MODE_CONNECTOR_WRITEBACK) {
			c.wb_conn = k->connector_id;
		} else if (!c.conn && k->connection == DRM_MODE_CONNECTED && k->count_modes) {
			c.conn = k->connector_id;
			/* The smallest mode: TCG composes every frame in software. */
			c.mode = k->modes[0];
			for (int m = 1; m < k->count_modes; m++)
				if ((uint32_t)k->modes[m].hdisplay * k->modes[m].vdisplay <
				    (uint32_t)c.mode.hdisplay * c.mode.vdisplay)
					c.mode = k->modes[m];
			c.alt_mode = c.mode;
			for (int m = 0; m < k->count_modes; m++)
				if (k->modes[m].hdisplay != c.mode.hdisplay ||
				    k->modes[m].vdisplay != c.mode.vdisplay)
					c.alt_mode = k->modes[m];
		}
		drmModeFreeConnector(k);
	}
	drmModeFreeResources(res);
	fl_assert(c.conn);

	drmModePlaneResPtr pr = drmModeGetPlaneResources(c.fd);
	fl_assert(pr);
	for (uint32_t i = 0; i < pr->count_planes; i++) {
		drmModePlanePtr p = drmModeGetPlane(c.fd, pr->planes[i]);
		fl_assert(p);
		uint64_t type = prop_value(c.fd, p->plane_id, DRM_MODE_OBJECT_PLANE, "type");
		if (type == DRM_PLANE_TYPE_PRIMARY && !c.primary &&
		    plane_has_format(p, DRM_FORMAT_XRGB8888))
			c.primary = p->plane_id;
		if (type == DRM_PLANE_TYPE_OVERLAY && !c.overlay &&
		    plane_has_format(p, DRM_FORMAT_ARGB8888)) {
			c.overlay = p->plane_id;
			c.overlay_format = DRM_FORMAT_ARGB8888;
		}
		drmModeFreePlane(p);
	}
	drmModeFreePlaneResources(pr);
	fl_assert(c.primary);
	return c;
}

static void card_close(struct card *c)
{
	close(c->fd);
}

static struct dumb dumb_new(const struct card *c, uint32_t w, uint32_t h, uint32_t format)
{
	struct drm_mode_create_dumb cr = { .width = w, .height = h, .bpp = 32 };
	struct drm_mode_map_dumb map = { 0 };
	struct dumb d = { .w = w, .h = h };

	fl_assert_int_eq(drmIoctl(c->fd, DRM_IOCTL_MODE_CREATE_DUMB, &cr), 0);
	d.handle = cr.handle;
	d.pitch = cr.pitch;
	d.size = cr.size;
	uint32_t handles[4] = { d.handle }, pitches[4] = { d.pitch }, offsets[4] = { 0 };
	fl_assert_int_eq(drmModeAddFB2(c->fd, w, h, format, handles, pitches, offsets, &d.fb, 0),
			 0);
	map.handle = d.handle;
	fl_assert_int_eq(drmIoctl(c->fd, DRM_IOCTL_MODE_MAP_DUMB, &map), 0);
	d.px = mmap(NULL, d.size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, (off_t)map.offset);
	fl_assert(d.px != MAP_FAILED);
	return d;
}

static void dumb_free(const struct card *c, struct dumb *d)
{
	struct drm_mode_destroy_dumb de = { .handle = d->handle };

	munmap(d->px, d->size);
	drmModeRmFB(c->fd, d->fb);
	fl_assert_int_eq(drmIoctl(c->fd, DRM_IOCTL_MODE_DESTROY_DUMB, &de), 0);
}

static uint32_t *px_at(const struct dumb *d, uint32_t x, uint32_t y)
{
	return (uint32_t *)((char *)d->px + (size_t)y * d->pitch) + x;
}

/* Stripes of eight colours, shifted by SEED: each frame different. */
static uint32_t pattern(uint32_t x, uint32_t y, uint32_t seed)
{
	static const uint32_t colours[8] = { 0xff0000, 0x00ff00, 0x0000ff, 0xffff00,
					     0x00ffff, 0xff00ff, 0xffffff, 0x204060 };

	return 0xff000000u | colours[((x / 16) + (y / 32) + seed) % 8];
}

static void fill(struct dumb *d, uint32_t seed)
{
	for (uint32_t y = 0; y < d->h; y++)
		for (uint32_t x = 0; x < d->w; x++)
			*px_at(d, x, y) = pattern(x, y, seed);
}

/* The primary plane showing FB at full size on the CRTC. */
static void add_primary(drmModeAtomicReqPtr req, const struct card *c, uint32_t fb, uint32_t w,
			uint32_t h)
{
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "FB_ID", fb);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "CRTC_ID", c->crtc);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "SRC_X", 0);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "SRC_Y", 0);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "SRC_W", (uint64_t)w << 16);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "SRC_H", (uint64_t)h << 16);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "CRTC_X", 0);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "CRTC_Y", 0);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "CRTC_W", w);
	add(req, c, c->primary, DRM_MODE_OBJECT_PLANE, "CRTC_H", h);
}

/*
 * A modeset of the connector CONN (the virtual one or writeback) on the CRTC,
 * the other one off: VKMS refuses both on one CRTC (the clone check).
 */
static drmModeAtomicReqPtr modeset(const struct card *c, uint32_t conn, uint32_t *blob)
{
	uint32_t off = conn == c->conn ? c->wb_conn : c->conn;
	drmModeAtomicReqPtr req = drmModeAtomicAlloc();

	fl_assert(req);
	fl_assert_int_eq(drmModeCreatePropertyBlob(c->fd, &c->mode, sizeof(c->mode), blob), 0);
	add(req, c, c->crtc, DRM_MODE_OBJECT_CRTC, "MODE_ID", *blob);
	add(req, c, c->crtc, DRM_MODE_OBJECT_CRTC, "ACTIVE", 1);
	add(req, c, conn, DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID", c->crtc);
	if (off)
		add(req, c, off, DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID", 0);
	return req;
}

/*
 * Commits REQ (a modeset with the writeback connector on) with OUT as the
 * writeback destination and waits for the frame on the writeback out fence.
 */
static void writeback(const struct card *c, drmModeAtomicReqPtr req, const struct dumb *out)
{
	int32_t fence = -1;

	add(req, c, c->wb_conn, DRM_MODE_OBJECT_CONNECTOR, "WRITEBACK_FB_ID", out->fb);
	add(req, c, c->wb_conn, DRM_MODE_OBJECT_CONNECTOR, "WRITEBACK_OUT_FENCE_PTR",
	    (uint64_t)(uintptr_t)&fence);
	fl_assert_int_eq(drmModeAtomicCommit(c->fd, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL), 0);
	fl_assert_int_ge(fence, 0);
	struct pollfd p = { .fd = fence, .events = POLLIN };
	/* A frame is written within a few vblanks, even under TCG: a minute means it never will be. */
	fl_assert_int_eq(poll(&p, 1, 60000), 1);
	close(fence);
}

FL_TEST(vkms_modeset_passes_test_only_then_commits)
{
	struct card c = card_open();
	uint32_t w = c.mode.hdisplay, h = c.mode.vdisplay, blob;
	struct dumb d = dumb_new(&c, w, h, DRM_FORMAT_XRGB8888);

	printf("mode %ux%u@%u\n", w, h, c.mode.vrefresh);
	fill(&d, 0);
	drmModeAtomicReqPtr req = modeset(&c, c.conn, &blob);
	add_primary(req, &c, d.fb, w, h);
	fl_assert_int_eq(drmModeAtomicCommit(
				 c.fd, req,
				 DRM_MODE_ATOMIC_TEST_ONLY | DRM_MODE_ATOMIC_ALLOW_MODESET, NULL),
			 0);
	/* TEST_ONLY changed nothing: the CRTC has another mode blob. */
	fl_assert_int_ne(prop_value(c.fd, c.crtc, DRM_MODE_OBJECT_CRTC, "MODE_ID"), blob);
	fl_assert_int_eq(drmModeAtomicCommit(c.fd, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL), 0);
	fl_assert_int_eq(prop_value(c.fd, c.crtc, DRM_MODE_OBJECT_CRTC, "MODE_ID"), blob);
	fl_assert_int_eq(prop_value(c.fd, c.crtc, DRM_MODE_OBJECT_CRTC, "ACTIVE"), 1);
	fl_assert_int_eq(prop_value(c.fd, c.conn, DRM_MODE_OBJECT_CONNECTOR, "CRTC_ID"), c.crtc);
	drmModeAtomicFree(req);
	drmModeDestroyPropertyBlob(c.fd, blob);
	dumb_free(&c, &d);
	card_close(&c);
}

FL_TEST(vkms_test_only_refuses_a_source_outside_the_buffer_and_a_modeset_without_permission)
{
	struct card c = card_open();
	uint32_t w = c.mode.hdisplay, h = c.mode.vdisplay, blob;
	struct dumb d = dumb_new(&c, w, h, DRM_FORMAT_XRGB8888);

	drmModeAtomicReqPtr req = modeset(&c, c.conn, &blob);
	add_primary(req, &c, d.fb, w, h);
	/* The source rectangle one line beyond the framebuffer. */
	add(req, &c, c.primary, DRM_MODE_OBJECT_PLANE, "SRC_H", (uint64_t)(h + 1) << 16);
	int r = drmModeAtomicCommit(
		c.fd, req, DRM_MODE_ATOMIC_TEST_ONLY | DRM_MODE_ATOMIC_ALLOW_MODESET, NULL);
	printf("test_only_src_outside_errno %d\n", -r);
	fl_assert_int_eq(r, -ENOSPC);
	drmModeAtomicFree(req);

	drmModeDestroyPropertyBlob(c.fd, blob);

	/*
	 * Another mode without ALLOW_MODESET: refused whatever state earlier
	 * tests left, and the same request with it passes.
	 */
	fl_assert(c.alt_mode.hdisplay != c.mode.hdisplay || c.alt_mode.vdisplay != c.mode.vdisplay);
	c.mode = c.alt_mode;
	req = modeset(&c, c.conn, &blob);
	add_primary(req, &c, d.fb, w, h);
	r = drmModeAtomicCommit(c.fd, req, DRM_MODE_ATOMIC_TEST_ONLY, NULL);
	fl_assert_int_eq(r, -EINVAL);
	r = drmModeAtomicCommit(c.fd, req,
				DRM_MODE_ATOMIC_TEST_ONLY | DRM_MODE_ATOMIC_ALLOW_MODESET, NULL);
	fl_assert_int_eq(r, 0);
	drmModeAtomicFree(req);
	drmModeDestroyPropertyBlob(c.fd, blob);
	dumb_free(&c, &d);
	card_close(&c);
}

struct flip_log {
	int n;
	unsigned seq[16];
	uint64_t usec[16];
};

static void on_flip(int fd, unsigned seq, unsigned sec, unsigned usec, unsigned crtc, void *data)
{
	struct flip_log *log = data;

	(void)fd;
	(void)crtc;
	if (log->n < 16) {
		log->seq[log->n] = seq;
		log->usec[log->n] = (uint64_t)sec * 1000000u + usec;
		log->n++;
	}
}

static void wait_flip(const struct card *c, struct flip_log *log)
{
	drmEventContext ev = { .version = 3, .page_flip_handler2 = on_flip };
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	int before = log->n;

	while (log->n == before) {
		fl_assert_int_eq(poll(&p, 1, -1), 1);
		fl_assert_int_eq(drmHandleEvent(c->fd, &ev), 0);
	}
}

/* Two full-screen buffers (seeds 0 and 1), the first lit on the virtual connector. */
static void lit_pair(struct card *c, struct dumb d[2], uint32_t *blob)
{
	uint32_t w = c->mode.hdisplay, h = c->mode.vdisplay;

	for (int i = 0; i < 2; i++) {
		d[i] = dumb_new(c, w, h, DRM_FORMAT_XRGB8888);
		fill(&d[i], (uint32_t)i);
	}
	drmModeAtomicReqPtr req = modeset(c, c->conn, blob);
	add_primary(req, c, d[0].fb, w, h);
	fl_assert_int_eq(drmModeAtomicCommit(c->fd, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL), 0);
	drmModeAtomicFree(req);
}

static void lit_pair_free(struct card *c, struct dumb d[2], uint32_t blob)
{
	dumb_free(c, &d[0]);
	dumb_free(c, &d[1]);
	drmModeDestroyPropertyBlob(c->fd, blob);
	card_close(c);
}

FL_TEST(vkms_flips_are_paced_by_vblank_with_the_kernel_s_timestamps)
{
	struct card c = card_open();
	uint32_t blob;
	struct dumb d[2];
	struct flip_log log = { 0 };
	int busy = 0;
	drmModeAtomicReqPtr req;

	lit_pair(&c, d, &blob);

	for (int i = 1; i <= 8; i++) {
		req = drmModeAtomicAlloc();
		add(req, &c, c.primary, DRM_MODE_OBJECT_PLANE, "FB_ID", d[i % 2].fb);
		fl_assert_int_eq(drmModeAtomicCommit(
					 c.fd, req,
					 DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT, &log),
				 0);
		if (i == 1) {
			/*
			 * A second commit while one is pending: KMS refuses it
			 * (-EBUSY) unless the first already completed, which
			 * the event then tells.
			 */
			int r = drmModeAtomicCommit(
				c.fd, req, DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT,
				&log);
			fl_assert(r == -EBUSY || r == 0);
			busy = r == -EBUSY;
			if (r == 0)
				wait_flip(&c, &log);
		}
		drmModeAtomicFree(req);
		wait_flip(&c, &log);
	}
	printf("second_pending_commit_ebusy %d\n", busy);
	fl_assert_int_ge(log.n, 8);
	uint64_t period_ns =
		(uint64_t)c.mode.htotal * c.mode.vtotal * 1000000u / (uint64_t)c.mode.clock;
	uint64_t min = UINT64_MAX;
	for (int i = 1; i < log.n; i++) {
		/* One flip per vblank at most: sequences and times go forward. */
		fl_assert(log.seq[i] > log.seq[i - 1]);
		fl_assert(log.usec[i] > log.usec[i - 1]);
		uint64_t gap = log.usec[i] - log.usec[i - 1];
		min = gap < min ? gap : min;
		/* Whole vblanks apart, by the kernel's own clock (±1 %). */
		uint64_t frames = (log.seq[i] - log.seq[i - 1]);
		uint64_t want = frames * period_ns / 1000;
		fl_assert(gap * 100 >= want * 99 && gap * 100 <= want * 101);
	}
	printf("vblank_period_us %llu\n", (unsigned long long)(period_ns / 1000));
	printf("flip_gap_min_us %llu\n", (unsigned long long)min);
	printf("flip_vblanks %u\n", log.seq[log.n - 1] - log.seq[0]);
	lit_pair_free(&c, d, blob);
}

FL_TEST(vkms_writeback_captures_the_planes_pixel_exact)
{
	struct card c = card_open();
	uint32_t w = c.mode.hdisplay, h = c.mode.vdisplay, blob;
	const uint32_t ox = 100, oy = 50, ow = 64, oh = 48;
	struct dumb prim = dumb_new(&c, w, h, DRM_FORMAT_XRGB8888);
	struct dumb out = dumb_new(&c, w, h, DRM_FORMAT_XRGB8888);
	struct dumb ov = { 0 };

	if (!c.wb_conn)
		fl_test_skip("VKMS without a writeback connector (vkms.enable_writeback=1)");
	fill(&prim, 3);
	memset(out.px, 0x5a, out.size);
	/* Writeback must be the CRTC's only output: the virtual connector goes off. */
	drmModeAtomicReqPtr req = modeset(&c, c.wb_conn, &blob);
	add_primary(req, &c, prim.fb, w, h);
	if (c.overlay) {
		/* Left half opaque green, right half fully transparent. */
		ov = dumb_new(&c, ow, oh, c.overlay_format);
		for (uint32_t y = 0; y < oh; y++)
			for (uint32_t x = 0; x < ow; x++)
				*px_at(&ov, x, y) = x < ow / 2 ? 0xff00ff00u : 0x00000000u;
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "FB_ID", ov.fb);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "CRTC_ID", c.crtc);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "SRC_X", 0);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "SRC_Y", 0);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "SRC_W", (uint64_t)ow << 16);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "SRC_H", (uint64_t)oh << 16);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "CRTC_X", ox);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "CRTC_Y", oy);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "CRTC_W", ow);
		add(req, &c, c.overlay, DRM_MODE_OBJECT_PLANE, "CRTC_H", oh);
	}
	writeback(&c, req, &out);
	drmModeAtomicFree(req);

	uint32_t bad = 0, first_x = 0, first_y = 0, got = 0, want = 0;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++) {
			uint32_t ref = pattern(x, y, 3);
			if (c.overlay && x >= ox && x < ox + ow && y >= oy && y < oy + oh &&
			    x - ox < ow / 2)
				ref = 0xff00ff00u;
			uint32_t v = *px_at(&out, x, y);
			/* XRGB: the X byte is undefined. */
			if ((v & 0xffffff) != (ref & 0xffffff) && !bad++) {
				first_x = x;
				first_y = y;
				got = v;
				want = ref;
			}
		}
	printf("writeback_overlay %d\n", c.overlay ? 1 : 0);
	printf("writeback_bad_pixels %u\n", bad);
	if (bad)
		fl__test_fail(__FILE__, __LINE__,
			      "%u pixels differ, first at %u,%u: %08x, want %08x", bad, first_x,
			      first_y, got, want);
	if (c.overlay)
		dumb_free(&c, &ov);
	dumb_free(&c, &prim);
	dumb_free(&c, &out);
	drmModeDestroyPropertyBlob(c.fd, blob);
	card_close(&c);
}

FL_TEST(vkms_in_fence_holds_the_flip_and_the_out_fence_signals_at_it)
{
	struct card c = card_open();
	uint32_t blob;
	struct dumb d[2];
	struct flip_log log = { 0 };
	int32_t out = -1;

	int tl = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);
	if (tl < 0)
		fl_test_skip("no sw_sync (debugfs) to make kernel fences with");
	struct sw_sync_create_fence_data f = { .value = 1, .name = "acquire" };
	fl_assert_int_eq(ioctl(tl, SW_SYNC_IOC_CREATE_FENCE, &f), 0);

	lit_pair(&c, d, &blob);
	drmModeAtomicReqPtr req = drmModeAtomicAlloc();
	add(req, &c, c.primary, DRM_MODE_OBJECT_PLANE, "FB_ID", d[1].fb);
	add(req, &c, c.primary, DRM_MODE_OBJECT_PLANE, "IN_FENCE_FD", (uint64_t)f.fence);
	add(req, &c, c.crtc, DRM_MODE_OBJECT_CRTC, "OUT_FENCE_PTR", (uint64_t)(uintptr_t)&out);
	fl_assert_int_eq(drmModeAtomicCommit(c.fd, req,
					     DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT,
					     &log),
			 0);
	drmModeAtomicFree(req);
	/* The kernel holds its own reference to the acquire fence. */
	close(f.fence);
	fl_assert_int_ge(out, 0);
	struct sync_file_info info = { 0 };
	fl_assert_int_eq(ioctl(out, SYNC_IOC_FILE_INFO, &info), 0);
	/* Nothing can flip before the acquire fence: no event, the out fence pending. */
	struct pollfd p[2] = { { .fd = c.fd, .events = POLLIN }, { .fd = out, .events = POLLIN } };
	fl_assert_int_eq(poll(p, 2, 0), 0);
	fl_assert_int_eq(info.status, 0);

	uint32_t one = 1;
	fl_assert_int_eq(ioctl(tl, SW_SYNC_IOC_INC, &one), 0);
	wait_flip(&c, &log);
	/* The out fence signals with the flip's event. */
	fl_assert_int_eq(poll(&p[1], 1, -1), 1);
	/* Counts only: the first call set num_fences, which would ask for the fences. */
	info = (struct sync_file_info){ 0 };
	fl_assert_int_eq(ioctl(out, SYNC_IOC_FILE_INFO, &info), 0);
	fl_assert_int_eq(info.status, 1);
	close(out);
	close(tl);
	lit_pair_free(&c, d, blob);
}

FL_TEST(vkms_scans_out_a_udmabuf_imported_with_prime_zero_copy)
{
	struct card c = card_open();
	uint32_t w = c.mode.hdisplay, h = c.mode.vdisplay, blob, handle, fb;
	uint32_t pitch = w * 4;
	size_t size = ((size_t)pitch * h + 4095) & ~(size_t)4095;

	if (!c.wb_conn)
		fl_test_skip("VKMS without a writeback connector (vkms.enable_writeback=1)");
	int u = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (u < 0)
		fl_test_skip("no /dev/udmabuf to make a dma-buf of a memfd");
	int mfd = memfd_create("scanout", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	fl_assert_int_ge(mfd, 0);
	fl_assert_int_eq(ftruncate(mfd, (off_t)size), 0);
	fl_assert_int_eq(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	uint32_t *px = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	fl_assert(px != MAP_FAILED);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			px[(size_t)y * w + x] = pattern(x, y, 5);
	struct udmabuf_create cr = { .memfd = (uint32_t)mfd,
				     .flags = UDMABUF_FLAGS_CLOEXEC,
				     .size = size };
	int dmabuf = ioctl(u, UDMABUF_CREATE, &cr);
	fl_assert_int_ge(dmabuf, 0);
	fl_assert_int_eq(drmPrimeFDToHandle(c.fd, dmabuf, &handle), 0);
	uint32_t handles[4] = { handle }, pitches[4] = { pitch }, offsets[4] = { 0 };
	fl_assert_int_eq(drmModeAddFB2(c.fd, w, h, DRM_FORMAT_XRGB8888, handles, pitches, offsets,
				       &fb, 0),
			 0);

	struct dumb out = dumb_new(&c, w, h, DRM_FORMAT_XRGB8888);
	memset(out.px, 0x5a, out.size);
	drmModeAtomicReqPtr req = modeset(&c, c.wb_conn, &blob);
	add_primary(req, &c, fb, w, h);
	writeback(&c, req, &out);
	drmModeAtomicFree(req);
	uint32_t bad = 0;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			bad += (*px_at(&out, x, y) & 0xffffff) != (pattern(x, y, 5) & 0xffffff);
	printf("prime_bad_pixels %u\n", bad);
	fl_assert_int_eq(bad, 0);

	/* The memfd's pages are the scan-out: a change shows without a copy. */
	for (uint32_t x = 0; x < w; x++)
		px[x] = 0xff123456u;
	/* The same pipeline, another frame: no modeset this time. */
	req = drmModeAtomicAlloc();
	fl_assert(req);
	add_primary(req, &c, fb, w, h);
	writeback(&c, req, &out);
	drmModeAtomicFree(req);
	for (uint32_t x = 0; x < w; x++)
		fl_assert_int_eq(*px_at(&out, x, 0) & 0xffffff, 0x123456);

	dumb_free(&c, &out);
	drmModeRmFB(c.fd, fb);
	struct drm_gem_close gc = { .handle = handle };
	fl_assert_int_eq(drmIoctl(c.fd, DRM_IOCTL_GEM_CLOSE, &gc), 0);
	drmModeDestroyPropertyBlob(c.fd, blob);
	munmap(px, size);
	close(dmabuf);
	close(mfd);
	close(u);
	card_close(&c);
}

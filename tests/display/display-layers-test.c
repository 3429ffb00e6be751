/* SPDX-License-Identifier: MIT */
/*
 * The hardware-independent layer description of posts (docs/display.md,
 * "Layers"), through the native API and the service: each rule of the
 * synchronous check with its errno and a message naming the buffer,
 * TEST_ONLY included, and a capture of three overlapping layers (plane
 * alpha, scaling, transforms, the three blend modes) against a reference
 * blend written here, in doubles, from the buffers' bytes. The frame is
 * written as PNG to $FL_TEST_FRAME_DIR, else <build>/meson-logs/display-frames.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>

#include "display-helpers.h"
#include "runner.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define AR24 FL_FOURCC('A', 'R', '2', '4')

/* Device 0, its panel (interface 0, 1920x1080) lit, engine 0 (the 8888 formats) attached. */
struct ldisp {
	struct fl_display_handle *dev, *intf;
	struct fl_display_mode mode;
};

static void ldisp_open(struct ldisp *d)
{
	struct fl_display_interface_data id = { 0 };
	int r;

	fl_assert_int_eq(fl_display_device_open(0, &d->dev), 0);
	fl_assert_int_eq(fl_display_interface_open(d->dev, 0, &d->intf), 0);
	fl_assert_int_eq(fl_display_interface_get_data(d->intf, &id, NULL), 0);
	d->mode = id.current_mode;
	fl_assert_int_eq(d->mode.hdisplay, 1920);
	r = fl_display_attach(d->dev, 0, 0, NULL);
	fl_assert(r == 0 || r == -EALREADY);
	if (id.dpms_state != FL_DISPLAY_DPMS_ON)
		fl_assert_int_eq(fl_display_blank(d->intf, FL_DISPLAY_DPMS_ON, NULL), 0);
}

static void ldisp_close(struct ldisp *d)
{
	fl_display_close(d->intf);
	fl_display_close(d->dev);
	fl_display_disconnect();
}

/* A w × h buffer of @format (4 bytes a pixel) in a memfd, pixel (x, y) from @px; mapped at *@map. */
static struct fl_display_buffer mem_buffer(uint32_t format, uint32_t w, uint32_t h,
					   uint32_t (*px)(uint32_t x, uint32_t y), uint32_t **map)
{
	int fd = memfd_create("layer", MFD_CLOEXEC);
	uint32_t *p;

	fl_assert(fd >= 0);
	fl_assert_int_eq(ftruncate(fd, (off_t)w * h * 4), 0);
	p = mmap(NULL, (size_t)w * h * 4, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			p[(size_t)y * w + x] = px(x, y);
	*map = p;
	return (struct fl_display_buffer){ .engine = 0,
					   .w = w,
					   .h = h,
					   .format = format,
					   .n_planes = 1,
					   .fd = { fd },
					   .pitch = { w * 4 },
					   .acquire_fence = -1 };
}

static uint32_t px_grey(uint32_t x, uint32_t y)
{
	return 0xff000000u | ((x * 3) & 0xff) << 16 | ((y * 5) & 0xff) << 8 | 0x80;
}

/* A whole-buffer layer of @b at (@x, @y), 1:1, opaque. */
static struct fl_display_layer whole(const struct fl_display_buffer *b, int32_t x, int32_t y,
				     uint32_t z)
{
	return (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
					  .src_w = b->w << 16,
					  .src_h = b->h << 16,
					  .dst_x = x,
					  .dst_y = y,
					  .dst_w = b->w,
					  .dst_h = b->h,
					  .zpos = z,
					  .blend = FL_DISPLAY_BLEND_NONE,
					  .alpha = 0xffff };
}

/* Posts @n buffers with @layers on interface 0 with @flags; the fence, if asked, into *@fence. */
static int post_layers(struct ldisp *d, const struct fl_display_buffer *bufs,
		       const struct fl_display_layer *layers, size_t n, uint32_t flags, int *fence,
		       struct fl_display_error *e)
{
	static const uint32_t intf = 0;

	return fl_test_post(d->dev, &intf, 1, bufs, n, layers, NULL, flags, fence, e);
}

/* One bad layer among two good ones: refused with -EINVAL and @want in the message, TEST_ONLY too. */
static void refused(struct ldisp *d, const struct fl_display_buffer *bufs,
		    const struct fl_display_layer *layers, const char *want)
{
	for (int test_only = 0; test_only < 2; test_only++) {
		struct fl_display_error e = { 0, "" };
		struct fl_display_stats before, after;

		fl_assert_int_eq(fl_display_device_get_stats(d->dev, &before, NULL), 0);
		fl_assert_int_eq(post_layers(d, bufs, layers, 3,
					     test_only ? FL_DISPLAY_POST_TEST_ONLY : 0, NULL, &e),
				 -EINVAL);
		if (!strstr(e.msg, want))
			fl__test_fail(__FILE__, __LINE__, "message '%s' lacks '%s'", e.msg, want);
		fl_assert_int_eq(fl_display_device_get_stats(d->dev, &after, NULL), 0);
		fl_assert_int_eq(after.posted, before.posted);
	}
}

FL_TEST(layers_are_checked_synchronously_naming_the_buffer)
{
	struct ldisp d;
	struct fl_display_buffer b[3];
	struct fl_display_layer l[3], bad[3];
	struct fl_display_stats st;
	uint32_t *map[3];

	ldisp_open(&d);
	for (int i = 0; i < 3; i++) {
		b[i] = mem_buffer(AR24, 64, 32, px_grey, &map[i]);
		l[i] = whole(&b[i], 10 * i, 10 * i, (uint32_t)i);
	}
	/* Good: checked and not queued with TEST_ONLY, then queued for real. */
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(post_layers(&d, b, l, 3, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL), 0);
	{
		struct fl_display_stats st2;

		fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st2, NULL), 0);
		fl_assert_int_eq(st2.posted, st.posted);
	}
	fl_assert_int_eq(post_layers(&d, b, l, 3, 0, NULL, NULL), 0);

#define BAD(field_expr, want)                \
	do {                                 \
		memcpy(bad, l, sizeof(bad)); \
		field_expr;                  \
		refused(&d, b, bad, want);   \
	} while (0)
	/* The source rect: one 16.16 step past the buffer's width or height fails; exact fits. */
	BAD(bad[1].src_x = 1, "buffer 1: layer source rect");
	BAD((bad[2].src_y = 1 << 16, bad[2].src_h = 32 << 16), "buffer 2: layer source rect");
	BAD(bad[0].src_w = 0, "buffer 0: layer source rect has zero size");
	/* The destination rect inside the mode: 1920 - 64 fits, one more does not. */
	BAD(bad[1].dst_x = 1920 - 64 + 1, "buffer 1: layer destination rect");
	BAD(bad[1].dst_y = 1080 - 32 + 1, "outside interface 0's mode 1920x1080");
	BAD(bad[2].dst_x = -1, "buffer 2: layer destination rect -1,20");
	BAD(bad[0].dst_h = 0, "buffer 0: layer destination rect");
	/* The compositor's bound, for posts whose interfaces have no mode to bound the rect. */
	BAD(bad[0].dst_w = 16385, "is over 16384 pixels");
	BAD(bad[2].zpos = 0, "buffers 0 and 2 have the same z order 0");
	BAD(bad[1].blend = 3, "buffer 1: unknown blend mode 3");
	BAD(bad[1].transform = 8, "buffer 1: unknown transform 8");
	BAD(bad[0].filter = 2, "buffer 0: unknown filter 2");
	BAD(bad[0].alpha = 0x10000, "buffer 0: plane alpha 0x10000");
	BAD(bad[2].reserved[1] = 1, "buffer 2: unknown layer flags");
	BAD(bad[2].flags = 2, "buffer 2: unknown layer flags 0x2");
#undef BAD
	/* The boundaries themselves are accepted. */
	memcpy(bad, l, sizeof(bad));
	bad[1].dst_x = 1920 - 64;
	bad[1].dst_y = 1080 - 32;
	fl_assert_int_eq(post_layers(&d, b, bad, 3, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL), 0);
	/* A buffer without a layer shares no z order with anyone. */
	bad[0].flags = 0;
	bad[2].zpos = 0;
	fl_assert_int_eq(post_layers(&d, b, bad, 3, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL), 0);
	for (int i = 0; i < 3; i++) {
		munmap(map[i], 64 * 32 * 4);
		close(b[i].fd[0]);
	}
	ldisp_close(&d);
}

/* ---- three overlapping layers against a reference blend ---- */

/* Opaque, scaled ×10 with nearest sampling. */
static uint32_t px_l0(uint32_t x, uint32_t y)
{
	return 0xff000000u | (x * 4) << 16 | (y * 5) << 8 | 0x60;
}

/* Premultiplied: every channel at most alpha. */
static uint32_t px_l1(uint32_t x, uint32_t y)
{
	uint32_t a = 40 + (x + y) % 216;

	return a << 24 | (a * x / 100) << 16 | (a * y / 80) << 8 | a / 2;
}

/* Straight alpha, for COVERAGE. */
static uint32_t px_l2(uint32_t x, uint32_t y)
{
	return ((x * 5) & 0xff) << 24 | 200u << 16 | ((y * 4) & 0xff) << 8 | 50;
}

/* The plane alpha as the compositor uses it, 8 bits (docs/display.md, "Blend maths and rounding"). */
#define PA8(a) (floor((a)*255.0 / 65535 + 0.5) / 255)

struct ref_layer {
	const uint32_t *px;
	uint32_t w; /* the buffer's, for the index */
	double sx, sy, sw, sh; /* source rect, pixels */
	int dx, dy, dw, dh;
	uint32_t transform, blend;
	double pa;
};

/*
 * The source pixel a destination pixel (@x, @y) of @l samples, nearest: its
 * centre into the rect's unit square, turned back by the quarter turns,
 * mirrored back, scaled into the source rect.
 */
static uint32_t ref_sample(const struct ref_layer *l, int x, int y)
{
	double u = (x - l->dx + 0.5) / l->dw, v = (y - l->dy + 0.5) / l->dh, t;

	for (uint32_t k = 0; k < (l->transform & 3); k++) {
		/* Undo one clockwise quarter turn: (u, v) came from (v, 1 − u). */
		t = u;
		u = v;
		v = 1 - t;
	}
	if (l->transform & FL_DISPLAY_TRANSFORM_FLIP_X)
		u = 1 - u;
	return l->px[(size_t)floor(l->sy + v * l->sh) * l->w + (size_t)floor(l->sx + u * l->sw)];
}

/*
 * dst (0–255 a channel, alpha 255) under @l at (@x, @y), with the roundings
 * docs/display.md ("Blend maths and rounding") gives the compositor: the
 * plane alpha as 8 bits; the source taken IN the plane alpha (COVERAGE:
 * its alpha and the plane alpha in one step), each product rounded; then
 * OVER, rounded into the 8-bit target.
 */
static void ref_blend(const struct ref_layer *l, int x, int y, double dst[3])
{
	uint32_t s = ref_sample(l, x, y);
	double sa = s >> 24, c[3] = { (s >> 16) & 0xff, (s >> 8) & 0xff, s & 0xff };
	double pa = floor(l->pa * 255 + 0.5), a;

	if (l->blend == FL_DISPLAY_BLEND_NONE)
		sa = 255;
	a = floor(sa * pa / 255 + 0.5);
	for (int i = 0; i < 3; i++) {
		double sc;

		if (l->blend == FL_DISPLAY_BLEND_COVERAGE)
			sc = floor(c[i] * sa * pa / (255.0 * 255) + 0.5);
		else
			sc = floor(c[i] * pa / 255 + 0.5);
		dst[i] = sc + floor(dst[i] * (255 - a) / 255 + 0.5);
		if (dst[i] > 255)
			dst[i] = 255;
	}
}

/* The three layers: buffers in the post's order, the top layer first, the bottom one second. */
static void three_layers(struct fl_display_buffer b[3], struct fl_display_layer l[3],
			 uint32_t *map[3])
{
	b[0] = mem_buffer(AR24, 100, 80, px_l1, &map[0]);
	b[1] = mem_buffer(XR24, 64, 48, px_l0, &map[1]);
	b[2] = mem_buffer(AR24, 60, 60, px_l2, &map[2]);
	/* Turned a quarter clockwise (its 100 × 80 shows as 80 × 100), half plane alpha. */
	l[0] = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
					  .src_w = 100 << 16,
					  .src_h = 80 << 16,
					  .dst_x = 300,
					  .dst_y = 200,
					  .dst_w = 80,
					  .dst_h = 100,
					  .zpos = 900,
					  .blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
					  .alpha = 0x8000,
					  .transform = FL_DISPLAY_TRANSFORM_ROT_90 };
	/* Scaled ×10, nearest, opaque, at the bottom. */
	l[1] = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
					  .src_w = 64 << 16,
					  .src_h = 48 << 16,
					  .dst_x = 100,
					  .dst_y = 50,
					  .dst_w = 640,
					  .dst_h = 480,
					  .zpos = 5,
					  .blend = FL_DISPLAY_BLEND_NONE,
					  .alpha = 0xffff,
					  .filter = FL_DISPLAY_FILTER_NEAREST };
	/* A 50 × 50 source rect inside the buffer, mirrored, straight alpha, plane alpha 3/4. */
	l[2] = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
					  .src_x = 5 << 16,
					  .src_y = 5 << 16,
					  .src_w = 50 << 16,
					  .src_h = 50 << 16,
					  .dst_x = 320,
					  .dst_y = 230,
					  .dst_w = 50,
					  .dst_h = 50,
					  .zpos = 7,
					  .blend = FL_DISPLAY_BLEND_COVERAGE,
					  .alpha = 0xc000,
					  .transform = FL_DISPLAY_TRANSFORM_FLIP_X };
}

static void three_layers_free(struct fl_display_buffer b[3], uint32_t *map[3])
{
	for (int i = 0; i < 3; i++) {
		munmap(map[i], (size_t)b[i].w * b[i].h * 4);
		close(b[i].fd[0]);
	}
}

/* Pixels of the 1920 × 1080 XRGB8888 frame @p that differ from the reference by more than 1. */
static size_t frame_wrong(const uint32_t *p, uint32_t pitch, uint32_t *map[3])
{
	/* Bottom to top. */
	const struct ref_layer ref[3] = {
		{ map[1], 64, 0, 0, 64, 48, 100, 50, 640, 480, 0, FL_DISPLAY_BLEND_NONE, 1.0 },
		{ map[2], 60, 5, 5, 50, 50, 320, 230, 50, 50, FL_DISPLAY_TRANSFORM_FLIP_X,
		  FL_DISPLAY_BLEND_COVERAGE, PA8(0xc000) },
		{ map[0], 100, 0, 0, 100, 80, 300, 200, 80, 100, FL_DISPLAY_TRANSFORM_ROT_90,
		  FL_DISPLAY_BLEND_PREMULTIPLIED, PA8(0x8000) },
	};
	size_t wrong = 0;
	int worst = 0;

	for (uint32_t y = 0; y < 1080; y++)
		for (uint32_t x = 0; x < 1920; x++) {
			double dst[3] = { 0, 0, 0 }; /* the background: opaque black */
			uint32_t got = p[(size_t)y * pitch / 4 + x];
			int bad = 0;

			for (int k = 0; k < 3; k++)
				if ((int)x >= ref[k].dx && (int)x < ref[k].dx + ref[k].dw &&
				    (int)y >= ref[k].dy && (int)y < ref[k].dy + ref[k].dh)
					ref_blend(&ref[k], (int)x, (int)y, dst);
			for (int c = 0; c < 3; c++) {
				int diff = abs((int)((got >> (16 - 8 * c)) & 0xff) - (int)dst[c]);

				worst = diff > worst ? diff : worst;
				bad |= diff > 1;
			}
			if (bad && !wrong++)
				printf("first wrong pixel %u,%u: %06x, want %02x%02x%02x\n", x, y,
				       got & 0xffffff, (int)dst[0], (int)dst[1], (int)dst[2]);
		}
	printf("worst difference %d\n", worst);
	return wrong;
}

FL_TEST(a_capture_composes_three_overlapping_layers)
{
	struct ldisp d;
	struct fl_display_buffer b[3];
	struct fl_display_layer l[3];
	uint32_t *map[3], *p, w, h, pitch;
	int fence = -1, cap = -1;

	ldisp_open(&d);
	three_layers(b, l, map);
	fl_assert_int_eq(post_layers(&d, b, l, 3, 0, &fence, NULL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	fl_assert_int_eq(fl_display_capture(d.intf, XR24, &cap, &w, &h, &pitch, NULL), 0);
	fl_assert_int_eq(w, 1920);
	fl_assert_int_eq(h, 1080);
	p = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, cap, 0);
	fl_assert(p != MAP_FAILED);
	fl_test_save_frame(p, w, h, pitch, "display-layers-three");
	fl_assert_int_eq(frame_wrong(p, pitch, map), 0);
	munmap(p, (size_t)pitch * h);
	close(cap);
	close(fence);
	three_layers_free(b, map);
	ldisp_close(&d);
}

/* ---- memory writeback ---- */

#define WB_INTF	  2u /* the default config's writeback interface, 1920x1080 */
#define WB_OFFSET 256u
#define WB_PITCH  (1920u * 4 + 64)
#define WB_SIZE	  (WB_OFFSET + (size_t)WB_PITCH * 1080)

static int wb_post(struct ldisp *d, const struct fl_display_buffer *b,
		   const struct fl_display_layer *l, const uint32_t *intfs, size_t n_intfs,
		   const struct fl_display_writeback *wb, uint32_t flags, int *fence,
		   struct fl_display_error *e)
{
	return fl_test_post(d->dev, intfs, n_intfs, b, 3, l, wb, flags, fence, e);
}

FL_TEST(a_writeback_post_writes_its_frame_before_its_fence_signals)
{
	static const uint32_t wb_intf = WB_INTF, panel = 0;
	struct ldisp d;
	struct fl_display_buffer b[3];
	struct fl_display_layer l[3];
	struct fl_display_writeback wb, bad;
	struct fl_display_error e = { 0, "" };
	uint32_t *map[3];
	unsigned char *dst;
	size_t untouched = 0;
	int fence = -1, fd, r;

	ldisp_open(&d);
	r = fl_display_attach(d.dev, 0, WB_INTF, NULL);
	fl_assert(r == 0 || r == -EALREADY);
	three_layers(b, l, map);
	fd = memfd_create("writeback", MFD_CLOEXEC);
	fl_assert(fd >= 0);
	fl_assert_int_eq(ftruncate(fd, (off_t)WB_SIZE), 0);
	dst = mmap(NULL, WB_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(dst != MAP_FAILED);
	memset(dst, 0xa5, WB_SIZE);
	wb = (struct fl_display_writeback){ fd, XR24, 1920, 1080, WB_OFFSET, WB_PITCH };

	/* Refusals, each naming the rule; TEST_ONLY writes nothing. */
	fl_assert_int_eq(wb_post(&d, b, l, &panel, 1, &wb, 0, NULL, &e), -EINVAL);
	fl_assert(strstr(e.msg, "writeback: the post names no memory-writeback interface"));
	bad = wb;
	bad.w = 1280;
	fl_assert_int_eq(wb_post(&d, b, l, &wb_intf, 1, &bad, 0, NULL, &e), -EINVAL);
	fl_assert(strstr(e.msg, "writeback: 1280x1080 is not interface 2's mode 1920x1080"));
	bad = wb;
	bad.format = FL_FOURCC('N', 'V', '1', '2');
	fl_assert_int_eq(wb_post(&d, b, l, &wb_intf, 1, &bad, 0, NULL, &e), -EINVAL);
	fl_assert(strstr(e.msg, "is not an RGB format the compositor writes"));
	bad = wb;
	bad.pitch = 1920 * 4 - 4;
	fl_assert_int_eq(wb_post(&d, b, l, &wb_intf, 1, &bad, 0, NULL, &e), -EINVAL);
	fl_assert(strstr(e.msg, "writeback: pitch 7676"));
	/* The memory: one 4-byte step of offset too many fails, the exact fit passes (TEST_ONLY). */
	bad = wb;
	bad.offset = WB_OFFSET + 4;
	fl_assert_int_eq(wb_post(&d, b, l, &wb_intf, 1, &bad, FL_DISPLAY_POST_TEST_ONLY, NULL, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "end past its"));
	fl_assert_int_eq(wb_post(&d, b, l, &wb_intf, 1, &wb, FL_DISPLAY_POST_TEST_ONLY, NULL, &e),
			 0);
	for (size_t i = 0; i < WB_SIZE; i++)
		untouched += dst[i] == 0xa5;
	fl_assert_int_eq(untouched, WB_SIZE);

	/* The real one: the frame is there once its present fence has signalled. */
	fl_assert_int_eq(wb_post(&d, b, l, &wb_intf, 1, &wb, 0, &fence, &e), 0);
	close(fd); /* the service keeps its copy */
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	fl_test_save_frame((const uint32_t *)(dst + WB_OFFSET), 1920, 1080, WB_PITCH,
			   "display-layers-writeback");
	fl_assert_int_eq(frame_wrong((const uint32_t *)(dst + WB_OFFSET), WB_PITCH, map), 0);
	/* Nothing outside the frame is written: the offset and each line's padding. */
	untouched = 0;
	for (size_t i = 0; i < WB_OFFSET; i++)
		untouched += dst[i] == 0xa5;
	for (size_t y = 0; y < 1080; y++)
		for (size_t i = 1920 * 4; i < WB_PITCH; i++)
			untouched += dst[WB_OFFSET + y * WB_PITCH + i] == 0xa5;
	fl_assert_int_eq(untouched, WB_OFFSET + 1080 * 64);
	close(fence);
	munmap(dst, WB_SIZE);
	three_layers_free(b, map);
	ldisp_close(&d);
}

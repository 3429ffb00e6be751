/* SPDX-License-Identifier: MIT */
/*
 * Software composition on pixman (compose.h, docs/display.md "Composition").
 *
 * Per frame: check everything, turn the damage into disjoint rectangles,
 * then per rectangle decide where drawing starts (the topmost opaque layer
 * that covers it, else the background), fill the background where it
 * shows, and draw each layer in z order over the rectangles it reaches.
 * A layer's source is a pixman image over just the integer box of its
 * source rect (so that bilinear sampling never bleeds in pixels from
 * outside the rect, and nothing outside the buffer can be addressed),
 * with a transform mapping destination-rect coordinates into that box.
 */
#include "compose.h"

#include <errno.h>
#include <inttypes.h>
#include <pixman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { RGB, NV12, YUV420, YVU420 };

/*
 * @pix is the pixman format of the same memory; @opaque the same memory
 * read with its alpha channel ignored (blend NONE). DRM's fourccs name
 * little-endian layouts and pixman's 32-bit formats native-endian words,
 * so the 32-bit ones swap on a big-endian host; 888 and 565 have no
 * pixman twin there.
 */
struct cformat {
	uint32_t fourcc;
	enum kind kind;
	pixman_format_code_t pix, opaque;
};

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LE_BE(le, be) le
#else
#define LE_BE(le, be) be
#endif

static const struct cformat cformats[] = {
	{ FL_FOURCC('A', 'R', '2', '4'), RGB, LE_BE(PIXMAN_a8r8g8b8, PIXMAN_b8g8r8a8),
	  LE_BE(PIXMAN_x8r8g8b8, PIXMAN_b8g8r8x8) },
	{ FL_FOURCC('X', 'R', '2', '4'), RGB, LE_BE(PIXMAN_x8r8g8b8, PIXMAN_b8g8r8x8),
	  LE_BE(PIXMAN_x8r8g8b8, PIXMAN_b8g8r8x8) },
	{ FL_FOURCC('A', 'B', '2', '4'), RGB, LE_BE(PIXMAN_a8b8g8r8, PIXMAN_r8g8b8a8),
	  LE_BE(PIXMAN_x8b8g8r8, PIXMAN_r8g8b8x8) },
	{ FL_FOURCC('X', 'B', '2', '4'), RGB, LE_BE(PIXMAN_x8b8g8r8, PIXMAN_r8g8b8x8),
	  LE_BE(PIXMAN_x8b8g8r8, PIXMAN_r8g8b8x8) },
	{ FL_FOURCC('R', 'A', '2', '4'), RGB, LE_BE(PIXMAN_r8g8b8a8, PIXMAN_a8b8g8r8),
	  LE_BE(PIXMAN_r8g8b8x8, PIXMAN_x8b8g8r8) },
	{ FL_FOURCC('R', 'X', '2', '4'), RGB, LE_BE(PIXMAN_r8g8b8x8, PIXMAN_x8b8g8r8),
	  LE_BE(PIXMAN_r8g8b8x8, PIXMAN_x8b8g8r8) },
	{ FL_FOURCC('B', 'A', '2', '4'), RGB, LE_BE(PIXMAN_b8g8r8a8, PIXMAN_a8r8g8b8),
	  LE_BE(PIXMAN_b8g8r8x8, PIXMAN_x8r8g8b8) },
	{ FL_FOURCC('B', 'X', '2', '4'), RGB, LE_BE(PIXMAN_b8g8r8x8, PIXMAN_x8r8g8b8),
	  LE_BE(PIXMAN_b8g8r8x8, PIXMAN_x8r8g8b8) },
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	{ FL_FOURCC('R', 'G', '2', '4'), RGB, PIXMAN_r8g8b8, PIXMAN_r8g8b8 },
	{ FL_FOURCC('B', 'G', '2', '4'), RGB, PIXMAN_b8g8r8, PIXMAN_b8g8r8 },
	{ FL_FOURCC('R', 'G', '1', '6'), RGB, PIXMAN_r5g6b5, PIXMAN_r5g6b5 },
	{ FL_FOURCC('B', 'G', '1', '6'), RGB, PIXMAN_b5g6r5, PIXMAN_b5g6r5 },
#endif
	{ FL_FOURCC('N', 'V', '1', '2'), NV12, PIXMAN_x8r8g8b8, PIXMAN_x8r8g8b8 },
	{ FL_FOURCC('Y', 'U', '1', '2'), YUV420, PIXMAN_x8r8g8b8, PIXMAN_x8r8g8b8 },
	{ FL_FOURCC('Y', 'V', '1', '2'), YVU420, PIXMAN_x8r8g8b8, PIXMAN_x8r8g8b8 },
};

static const struct cformat *cformat_find(uint32_t fourcc)
{
	for (size_t i = 0; i < sizeof(cformats) / sizeof(cformats[0]); i++)
		if (cformats[i].fourcc == fourcc)
			return &cformats[i];
	return NULL;
}

void fl__display_compose_layer_place(struct fl_display_compose_layer *c,
				     const struct fl_display_layer *ly)
{
	c->src_x = ly->src_x;
	c->src_y = ly->src_y;
	c->src_w = ly->src_w;
	c->src_h = ly->src_h;
	c->dst_x = ly->dst_x;
	c->dst_y = ly->dst_y;
	c->dst_w = ly->dst_w;
	c->dst_h = ly->dst_h;
	c->zpos = ly->zpos;
	c->blend = ly->blend;
	c->alpha = (uint16_t)ly->alpha;
	c->transform = ly->transform;
	c->filter = ly->filter;
}

bool fl__display_compose_format_ok(uint32_t fourcc, enum fl_display_compose_use use)
{
	const struct cformat *f = cformat_find(fourcc);

	if (!f)
		return false;
	return use == FL_DISPLAY_COMPOSE_SOURCE ||
	       (use == FL_DISPLAY_COMPOSE_TARGET && f->kind == RGB);
}

/*
 * The YUV conversion by tables (yuv_to_rgb()): each term of the BT.601
 * sums in 16.16 by sample value, the luma term biased by CLAMP_BIAS pixels
 * so that every sum is positive, and the clamp by table too. Loads
 * instead of multiplies and branch-free clamping: 2x faster than the
 * arithmetic on noise.
 */
#define CLAMP_BIAS 384
#define CLAMP_SIZE 1024

struct yuv_tables {
	int32_t y[256], rv[256], gu[256], gv[256], bu[256];
	uint8_t clamp[CLAMP_SIZE];
};

struct fl_display_compositor {
	uint32_t *scratch;
	size_t scratch_pixels;
	struct yuv_tables yuv;
};

static void yuv_tables_init(struct yuv_tables *t);

struct fl_display_compositor *fl__display_compose_new(void)
{
	struct fl_display_compositor *c = calloc(1, sizeof(struct fl_display_compositor));

	if (c)
		yuv_tables_init(&c->yuv);
	return c;
}

void fl__display_compose_free(struct fl_display_compositor *c)
{
	if (!c)
		return;
	free(c->scratch);
	free(c);
}

static uint32_t *scratch_get(struct fl_display_compositor *c, size_t pixels)
{
	if (pixels > c->scratch_pixels) {
		uint32_t *p = malloc(pixels * sizeof(uint32_t));

		if (!p)
			return NULL;
		free(c->scratch);
		c->scratch = p;
		c->scratch_pixels = pixels;
	}
	return c->scratch;
}

/* ---- checks ---- */

/* @what is "layer 3" or "destination"; the buffer check's message follows. */
static int check_memory(const char *what, uint32_t fourcc, uint32_t w, uint32_t h,
			uint32_t n_planes, const struct fl_display_compose_plane *planes,
			struct fl_display_error *e)
{
	struct fl_display_driver_buffer b = {
		.w = w, .h = h, .format = fourcc, .n_planes = n_planes, .in_fence = -1
	};
	struct fl_display_error inner;
	int ret;

	if (w > FL_DISPLAY_COMPOSE_MAX_SIZE || h > FL_DISPLAY_COMPOSE_MAX_SIZE)
		return fl__display_fail(e, -EINVAL,
					"%s: size %" PRIu32 "x%" PRIu32
					" is larger than the compositor's %ux%u",
					what, w, h, FL_DISPLAY_COMPOSE_MAX_SIZE,
					FL_DISPLAY_COMPOSE_MAX_SIZE);
	for (uint32_t p = 0; p < n_planes && p < FL_DISPLAY_MAX_PLANES; p++) {
		b.offset[p] = planes[p].offset;
		b.pitch[p] = planes[p].pitch;
		b.size[p] = planes[p].size;
	}
	/* Padded to the pitch: pixman is told the pitch and may use all of it. */
	ret = fl__display_buffer_check(&b, 0, FL_DISPLAY_PADDED_TO_PITCH, &inner);
	/* "buffer 0 plane 1: ..." becomes "layer 2 plane 1: ...". */
	if (ret < 0 && strncmp(inner.msg, "buffer 0", 8) == 0)
		return fl__display_fail(e, ret, "%s%s", what, inner.msg + 8);
	if (ret < 0)
		return fl__display_fail(e, ret, "%s: %s", what, inner.msg);
	for (uint32_t p = 0; p < n_planes; p++)
		if (!planes[p].map)
			return fl__display_fail(e, -EINVAL, "%s plane %" PRIu32 ": no memory", what,
						p);
	return 0;
}

/*
 * pixman takes the pitch in 32-bit words and finds a line as the line
 * number times the pitch in an int, in units as small as a byte.
 */
static int check_pixman_plane(const char *what, const struct fl_display_compose_plane *p,
			      uint32_t h, struct fl_display_error *e)
{
	if ((uint64_t)p->pitch * h > INT32_MAX)
		return fl__display_fail(e, -EINVAL,
					"%s: %" PRIu32 " lines of pitch %" PRIu32
					" span more than pixman's 2 GiB",
					what, h, p->pitch);
	if (p->pitch % 4)
		return fl__display_fail(e, -EINVAL,
					"%s: pitch %" PRIu32 " is not a multiple of 4 bytes", what,
					p->pitch);
	if (((uintptr_t)p->map + p->offset) % 4)
		return fl__display_fail(e, -EINVAL,
					"%s: the first pixel (offset %" PRIu32
					") is not 4-byte aligned in memory",
					what, p->offset);
	return 0;
}

static double fx(uint32_t v)
{
	return (double)v / 65536.0;
}

static int check_layer(const struct fl_display_compose_layer *l, size_t i,
		       struct fl_display_error *e)
{
	const struct cformat *f = cformat_find(l->fourcc);
	char what[32], fcc[5];
	int ret;

	snprintf(what, sizeof(what), "layer %zu", i);
	if (!f)
		return fl__display_fail(e, -EINVAL,
					"%s: format %s (0x%08" PRIx32
					") is not one the compositor reads",
					what, fl__display_format_str(l->fourcc, fcc), l->fourcc);
	ret = check_memory(what, l->fourcc, l->w, l->h, l->n_planes, l->plane, e);
	if (ret < 0)
		return ret;
	if (f->kind == RGB) {
		ret = check_pixman_plane(what, &l->plane[0], l->h, e);
		if (ret < 0)
			return ret;
	}
	if (!l->src_w || !l->src_h)
		return fl__display_fail(e, -EINVAL, "%s: source rect has zero %s", what,
					l->src_w ? "height" : "width");
	if ((uint64_t)l->src_x + l->src_w > (uint64_t)l->w << 16)
		return fl__display_fail(e, -EINVAL,
					"%s: source rect x %.5g + width %.5g ends past the "
					"buffer's width %" PRIu32,
					what, fx(l->src_x), fx(l->src_w), l->w);
	if ((uint64_t)l->src_y + l->src_h > (uint64_t)l->h << 16)
		return fl__display_fail(e, -EINVAL,
					"%s: source rect y %.5g + height %.5g ends past the "
					"buffer's height %" PRIu32,
					what, fx(l->src_y), fx(l->src_h), l->h);
	if (!l->dst_w || !l->dst_h)
		return fl__display_fail(e, -EINVAL, "%s: destination rect has zero %s", what,
					l->dst_w ? "height" : "width");
	if (l->dst_w > FL_DISPLAY_COMPOSE_MAX_SIZE || l->dst_h > FL_DISPLAY_COMPOSE_MAX_SIZE)
		return fl__display_fail(e, -EINVAL,
					"%s: destination rect %" PRIu32 "x%" PRIu32
					" is larger than the compositor's %ux%u",
					what, l->dst_w, l->dst_h, FL_DISPLAY_COMPOSE_MAX_SIZE,
					FL_DISPLAY_COMPOSE_MAX_SIZE);
	if (l->blend > FL_DISPLAY_BLEND_COVERAGE)
		return fl__display_fail(e, -EINVAL, "%s: blend mode %" PRIu32 " is not 0 to 2",
					what, l->blend);
	if (l->transform > FL_DISPLAY_TRANSFORM_MAX)
		return fl__display_fail(e, -EINVAL, "%s: transform %" PRIu32 " is not 0 to 7", what,
					l->transform);
	if (l->filter > FL_DISPLAY_FILTER_NEAREST)
		return fl__display_fail(e, -EINVAL, "%s: filter %" PRIu32 " is not 0 or 1", what,
					l->filter);
	return 0;
}

int fl__display_compose_check(const struct fl_display_frame *frame, struct fl_display_error *e)
{
	const struct fl_display_compose_target *t = &frame->target;
	const struct fl_display_color *bg = &frame->background;
	struct fl_display_compose_plane tp = { t->map, t->size, t->offset, t->pitch };
	char fcc[5];
	int ret;

	if (!fl__display_compose_format_ok(t->fourcc, FL_DISPLAY_COMPOSE_TARGET))
		return fl__display_fail(e, -EINVAL,
					"destination: format %s (0x%08" PRIx32
					") is not an RGB format the compositor writes",
					fl__display_format_str(t->fourcc, fcc), t->fourcc);
	ret = check_memory("destination", t->fourcc, t->w, t->h, 1, &tp, e);
	if (ret < 0)
		return ret;
	ret = check_pixman_plane("destination", &tp, t->h, e);
	if (ret < 0)
		return ret;
	if (bg->r > bg->a || bg->g > bg->a || bg->b > bg->a)
		return fl__display_fail(e, -EINVAL,
					"background: colour %04x %04x %04x alpha %04x is not "
					"premultiplied (a channel above alpha)",
					bg->r, bg->g, bg->b, bg->a);
	if (frame->n_damage > FL_DISPLAY_COMPOSE_MAX_DAMAGE)
		return fl__display_fail(e, -EINVAL, "damage: %zu rects, more than %u",
					frame->n_damage, FL_DISPLAY_COMPOSE_MAX_DAMAGE);
	if (frame->n_damage && !frame->damage)
		return fl__display_fail(e, -EINVAL, "damage: %zu rects but no array",
					frame->n_damage);
	for (size_t i = 0; i < frame->n_damage; i++)
		if (!frame->damage[i].w || !frame->damage[i].h)
			return fl__display_fail(e, -EINVAL, "damage rect %zu has zero %s", i,
						frame->damage[i].w ? "height" : "width");
	if (frame->n_layers > FL_DISPLAY_COMPOSE_MAX_LAYERS)
		return fl__display_fail(e, -EINVAL, "%zu layers, more than %u", frame->n_layers,
					FL_DISPLAY_COMPOSE_MAX_LAYERS);
	if (frame->n_layers && !frame->layers)
		return fl__display_fail(e, -EINVAL, "%zu layers but no array", frame->n_layers);
	for (size_t i = 0; i < frame->n_layers; i++) {
		ret = check_layer(&frame->layers[i], i, e);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; i < frame->n_layers; i++)
		for (size_t j = i + 1; j < frame->n_layers; j++)
			if (frame->layers[i].zpos == frame->layers[j].zpos)
				return fl__display_fail(e, -EINVAL,
							"layers %zu and %zu have the same z order "
							"%" PRIu32,
							i, j, frame->layers[i].zpos);
	return 0;
}

/* ---- composition ---- */

struct box {
	int32_t x1, y1, x2, y2;
};

static struct box box_clip(int64_t x, int64_t y, int64_t w, int64_t h, int64_t cw, int64_t ch)
{
	int64_t x2 = x + w, y2 = y + h;
	struct box b;

	x = x < 0 ? 0 : x;
	y = y < 0 ? 0 : y;
	x2 = x2 > cw ? cw : x2;
	y2 = y2 > ch ? ch : y2;
	if (x2 <= x || y2 <= y)
		return (struct box){ 0, 0, 0, 0 };
	b = (struct box){ (int32_t)x, (int32_t)y, (int32_t)x2, (int32_t)y2 };
	return b;
}

static bool box_empty(const struct box *b)
{
	return b->x2 <= b->x1 || b->y2 <= b->y1;
}

static bool box_contains(const struct box *outer, const pixman_box32_t *inner)
{
	return outer->x1 <= inner->x1 && outer->y1 <= inner->y1 && outer->x2 >= inner->x2 &&
	       outer->y2 >= inner->y2;
}

static struct box box_and(const struct box *a, const pixman_box32_t *b)
{
	struct box r = { a->x1 > b->x1 ? a->x1 : b->x1, a->y1 > b->y1 ? a->y1 : b->y1,
			 a->x2 < b->x2 ? a->x2 : b->x2, a->y2 < b->y2 ? a->y2 : b->y2 };

	return r;
}

/* What the drawing of a frame needs to know of each layer. */
struct prep {
	const struct fl_display_compose_layer *l;
	const struct cformat *f;
	struct box dst; /* the destination rect, clipped */
	bool opaque; /* draws every pixel of its rect fully opaque */
	uint32_t x0, y0; /* the integer box of the source rect */
	uint32_t bw, bh;
	bool unit; /* source pixels land 1:1 on destination pixels */
};

static bool has_alpha(const struct cformat *f)
{
	return f->kind == RGB && PIXMAN_FORMAT_A(f->pix) > 0;
}

static void prepare(struct prep *p, const struct fl_display_compose_layer *l,
		    const struct fl_display_compose_target *t)
{
	uint64_t x1 = ((uint64_t)l->src_x + l->src_w + 0xffff) >> 16;
	uint64_t y1 = ((uint64_t)l->src_y + l->src_h + 0xffff) >> 16;
	bool turned = l->transform & 1;

	p->l = l;
	p->f = cformat_find(l->fourcc);
	p->dst = box_clip(l->dst_x, l->dst_y, l->dst_w, l->dst_h, t->w, t->h);
	p->opaque = l->alpha == 0xffff && (l->blend == FL_DISPLAY_BLEND_NONE || !has_alpha(p->f));
	p->x0 = l->src_x >> 16;
	p->y0 = l->src_y >> 16;
	p->bw = (uint32_t)(x1 - p->x0);
	p->bh = (uint32_t)(y1 - p->y0);
	p->unit = !(l->src_x & 0xffff) && !(l->src_y & 0xffff) &&
		  (uint64_t)l->src_w == (uint64_t)(turned ? l->dst_h : l->dst_w) << 16 &&
		  (uint64_t)l->src_h == (uint64_t)(turned ? l->dst_w : l->dst_h) << 16;
}

/*
 * BT.601, limited range, in 16.16 fixed point: Y' 16..235 and Cb/Cr
 * 16..240 to R'G'B' 0..255, rounded to nearest, clamped. Coefficients:
 * 255/219 for Y', and 255/224 × (2 (1 − Kr), 2 (1 − Kb) Kb/Kg, ...) with
 * Kr 0.299, Kb 0.114 (docs/display.md lists them in decimal).
 */
#define YC 76309 /* 1.164383 */
#define RV 104597 /* 1.596027 */
#define GU 25675 /* 0.391762 */
#define GV 53279 /* 0.812968 */
#define BU 132201 /* 2.017232 */

static void yuv_tables_init(struct yuv_tables *t)
{
	for (int i = 0; i < 256; i++) {
		t->y[i] = (i - 16) * YC + 32768 + (CLAMP_BIAS << 16);
		t->rv[i] = RV * (i - 128);
		t->gu[i] = -GU * (i - 128);
		t->gv[i] = -GV * (i - 128);
		t->bu[i] = BU * (i - 128);
	}
	for (int i = 0; i < CLAMP_SIZE; i++)
		t->clamp[i] = (uint8_t)(i < CLAMP_BIAS	       ? 0
					: i - CLAMP_BIAS > 255 ? 255
							       : i - CLAMP_BIAS);
}

/*
 * The sums stay within [-278, 535] pixels before the bias (luma -19..278,
 * chroma at most ±259), so the biased index is within the clamp table.
 */
static inline uint32_t yuv_pixel(const struct yuv_tables *t, int32_t c, int32_t r, int32_t g,
				 int32_t b)
{
	return 0xff000000u | (uint32_t)t->clamp[(uint32_t)(c + r) >> 16] << 16 |
	       (uint32_t)t->clamp[(uint32_t)(c + g) >> 16] << 8 | t->clamp[(uint32_t)(c + b) >> 16];
}

/*
 * Converts the layer's source box into @out (x8r8g8b8, @p->bw wide). Each
 * chroma sample stands for its 2×2 luma pixels (no chroma interpolation),
 * so its three terms are looked up once per pair of pixels.
 */
static void yuv_to_rgb(const struct yuv_tables *t, const struct prep *p, uint32_t *out)
{
	const struct fl_display_compose_layer *l = p->l;
	const uint8_t *base[3];
	uint32_t x_end = p->x0 + p->bw;

	for (uint32_t i = 0; i < l->n_planes; i++)
		base[i] = (const uint8_t *)l->plane[i].map + l->plane[i].offset;
	for (uint32_t y = p->y0; y < p->y0 + p->bh; y++) {
		const uint8_t *yr = base[0] + (size_t)y * l->plane[0].pitch;
		const uint8_t *ur, *vr;
		unsigned int step;
		uint32_t x = p->x0;

		if (p->f->kind == NV12) {
			ur = base[1] + (size_t)(y / 2) * l->plane[1].pitch;
			vr = ur + 1;
			step = 2;
		} else {
			unsigned int u = p->f->kind == YUV420 ? 1 : 2;

			ur = base[u] + (size_t)(y / 2) * l->plane[u].pitch;
			vr = base[3 - u] + (size_t)(y / 2) * l->plane[3 - u].pitch;
			step = 1;
		}
		while (x < x_end) {
			uint32_t k = (x / 2) * step;
			int32_t r = t->rv[vr[k]], g = t->gu[ur[k]] + t->gv[vr[k]], b = t->bu[ur[k]];

			*out++ = yuv_pixel(t, t->y[yr[x]], r, g, b);
			/* The second pixel of the pair, when the box holds it. */
			if (!(x & 1) && ++x < x_end)
				*out++ = yuv_pixel(t, t->y[yr[x]], r, g, b);
			x++;
		}
	}
}

/* The plane alpha as pixman's 8888 paths use it: 8 bits, rounded. */
static uint32_t plane_alpha8(uint16_t alpha)
{
	return ((uint32_t)alpha * 255 + 32767) / 65535;
}

/* Straight alpha goes through the scratch memory with the plane alpha
 * applied there (source_image()). */
static bool straight(const struct prep *p)
{
	return p->l->blend == FL_DISPLAY_BLEND_COVERAGE && has_alpha(p->f);
}

static pixman_image_t *rgb_box(const struct prep *p, pixman_format_code_t fmt)
{
	const struct fl_display_compose_plane *pl = &p->l->plane[0];
	uint8_t *bits = (uint8_t *)pl->map + pl->offset + (size_t)p->y0 * pl->pitch +
			(size_t)p->x0 * (PIXMAN_FORMAT_BPP(fmt) / 8);

	/* pixman only reads a source; its API has no const. */
	return pixman_image_create_bits_no_clear(fmt, (int)p->bw, (int)p->bh, (uint32_t *)bits,
						 (int)pl->pitch);
}

/*
 * The layer's source as a premultiplied (or opaque) pixman image of its
 * source box: the buffer itself for RGB, a conversion in the scratch
 * memory for YUV and straight alpha.
 */
static int source_image(struct fl_display_compositor *c, const struct prep *p, pixman_image_t **ret)
{
	const struct fl_display_compose_layer *l = p->l;
	pixman_image_t *img, *color;
	uint32_t *s;

	if (p->f->kind == RGB && !straight(p)) {
		img = rgb_box(p, l->blend == FL_DISPLAY_BLEND_NONE ? p->f->opaque : p->f->pix);
		goto out;
	}
	s = scratch_get(c, (size_t)p->bw * p->bh);
	if (!s)
		return -ENOMEM;
	if (p->f->kind != RGB) {
		yuv_to_rgb(&c->yuv, p, s);
		img = pixman_image_create_bits_no_clear(PIXMAN_x8r8g8b8, (int)p->bw, (int)p->bh, s,
							(int)p->bw * 4);
		goto out;
	}
	/*
	 * Straight alpha: copied as it is into a8r8g8b8, then premultiplied
	 * by its alpha and the plane alpha in one rounding (pixman would
	 * round twice, and once more for the plane alpha's mask).
	 */
	img = pixman_image_create_bits_no_clear(PIXMAN_a8r8g8b8, (int)p->bw, (int)p->bh, s,
						(int)p->bw * 4);
	color = rgb_box(p, p->f->pix);
	if (img && color) {
		uint32_t pa = plane_alpha8(l->alpha);

		pixman_image_composite32(PIXMAN_OP_SRC, color, NULL, img, 0, 0, 0, 0, 0, 0,
					 (int)p->bw, (int)p->bh);
		for (size_t i = 0; i < (size_t)p->bw * p->bh; i++) {
			uint32_t v = s[i], a = v >> 24, m = a * pa, out = (m + 127) / 255 << 24;

			for (int sh = 0; sh < 24; sh += 8)
				out |= ((v >> sh & 0xff) * m + 255 * 255 / 2) / (255 * 255) << sh;
			s[i] = out;
		}
	}
	if (color)
		pixman_image_unref(color);
out:
	if (!img)
		return -ENOMEM;
	*ret = img;
	return 0;
}

/*
 * Maps destination-rect coordinates (0,0 at the rect's top left) to the
 * source box: scale to the unit square, undo the turn, undo the flip,
 * scale to the source rect, offset into the box.
 */
static int set_transform(pixman_image_t *img, const struct prep *p, size_t index,
			 struct fl_display_error *e)
{
	static const double turn[4][2][3] = {
		{ { 1, 0, 0 }, { 0, 1, 0 } },
		{ { 0, 1, 0 }, { -1, 0, 1 } },
		{ { -1, 0, 1 }, { 0, -1, 1 } },
		{ { 0, -1, 1 }, { 1, 0, 0 } },
	};
	const struct fl_display_compose_layer *l = p->l;
	double s[3], t[3];
	struct pixman_f_transform ft;
	struct pixman_transform pt;
	bool nearest = l->filter == FL_DISPLAY_FILTER_NEAREST || p->unit;

	memcpy(s, turn[l->transform & 3][0], sizeof(s));
	memcpy(t, turn[l->transform & 3][1], sizeof(t));
	if (l->transform & FL_DISPLAY_TRANSFORM_FLIP_X) {
		s[0] = -s[0];
		s[1] = -s[1];
		s[2] = 1 - s[2];
	}
	pixman_f_transform_init_identity(&ft);
	ft.m[0][0] = fx(l->src_w) * s[0] / l->dst_w;
	ft.m[0][1] = fx(l->src_w) * s[1] / l->dst_h;
	ft.m[0][2] = fx(l->src_x) - p->x0 + fx(l->src_w) * s[2];
	ft.m[1][0] = fx(l->src_h) * t[0] / l->dst_w;
	ft.m[1][1] = fx(l->src_h) * t[1] / l->dst_h;
	ft.m[1][2] = fx(l->src_y) - p->y0 + fx(l->src_h) * t[2];
	if (!pixman_transform_from_pixman_f_transform(&pt, &ft))
		return fl__display_fail(
			e, -EINVAL, "layer %zu: its scale does not fit pixman's 16.16 transform",
			index);
	/* Identity: pixman's untransformed fast paths. */
	if (!(p->unit && l->transform == 0) && !pixman_image_set_transform(img, &pt))
		return fl__display_fail(e, -ENOMEM, "layer %zu: out of memory", index);
	pixman_image_set_filter(img, nearest ? PIXMAN_FILTER_NEAREST : PIXMAN_FILTER_BILINEAR, NULL,
				0);
	/* Samples past the box's edge repeat the edge, never transparency. */
	pixman_image_set_repeat(img, PIXMAN_REPEAT_PAD);
	return 0;
}

/*
 * Where drawing of damage rect @r starts: at the topmost opaque layer
 * covering it (what is below cannot show); else at the lowest layer with
 * SRC when it covers the rect and the background under it would change
 * nothing (transparent black, or black into a format without alpha); else
 * with the background. Returns the z index to start at; @ret_fill says
 * whether the background is filled first.
 */
static size_t start_of(const struct prep *prep, size_t n, const pixman_box32_t *r, bool bg_none,
		       bool *ret_fill)
{
	size_t lowest = n;

	for (size_t k = n; k-- > 0;) {
		if (prep[k].l->alpha == 0)
			continue;
		if (prep[k].opaque && box_contains(&prep[k].dst, r)) {
			*ret_fill = false;
			return k;
		}
	}
	for (size_t k = 0; k < n; k++) {
		struct box b = box_and(&prep[k].dst, r);

		if (prep[k].l->alpha && !box_empty(&b)) {
			lowest = k;
			break;
		}
	}
	*ret_fill = !(bg_none && lowest < n && box_contains(&prep[lowest].dst, r));
	return *ret_fill ? 0 : lowest;
}

static int cmp_z(const void *a, const void *b)
{
	const struct prep *x = a, *y = b;

	return x->l->zpos < y->l->zpos ? -1 : x->l->zpos > y->l->zpos;
}

static int draw(struct fl_display_compositor *c, const struct fl_display_frame *frame,
		pixman_image_t *dst, const pixman_box32_t *rects, int n_rects,
		struct fl_display_error *e)
{
	const struct fl_display_compose_target *t = &frame->target;
	const struct fl_display_color *bg = &frame->background;
	struct prep prep[FL_DISPLAY_COMPOSE_MAX_LAYERS];
	size_t n = frame->n_layers, *start;
	bool *fill, bg_none;
	pixman_color_t bgc = { bg->r, bg->g, bg->b, bg->a };
	int ret = 0;

	for (size_t i = 0; i < n; i++)
		prepare(&prep[i], &frame->layers[i], t);
	qsort(prep, n, sizeof(prep[0]), cmp_z);
	bg_none = !bg->r && !bg->g && !bg->b &&
		  (!bg->a || PIXMAN_FORMAT_A(cformat_find(t->fourcc)->pix) == 0);
	start = calloc((size_t)n_rects, sizeof(*start));
	fill = calloc((size_t)n_rects, sizeof(*fill));
	if (!start || !fill) {
		ret = fl__display_fail(e, -ENOMEM, "out of memory for %d damage rects", n_rects);
		goto out;
	}
	for (int r = 0; r < n_rects; r++) {
		start[r] = start_of(prep, n, &rects[r], bg_none, &fill[r]);
		if (fill[r])
			pixman_image_fill_boxes(PIXMAN_OP_SRC, dst, &bgc, 1, &rects[r]);
	}
	for (size_t k = 0; k < n && ret == 0; k++) {
		const struct fl_display_compose_layer *l = prep[k].l;
		pixman_image_t *src = NULL, *mask = NULL;
		size_t index = (size_t)(l - frame->layers);

		if (l->alpha == 0 || box_empty(&prep[k].dst))
			continue;
		for (int r = 0; r < n_rects; r++) {
			struct box b = box_and(&prep[k].dst, &rects[r]);
			pixman_op_t op = k == start[r] && !fill[r] ? PIXMAN_OP_SRC : PIXMAN_OP_OVER;

			if (k < start[r] || box_empty(&b))
				continue;
			if (!src) {
				ret = source_image(c, &prep[k], &src);
				if (ret < 0) {
					fl__display_fail(e, ret, "layer %zu: out of memory", index);
					break;
				}
				ret = set_transform(src, &prep[k], index, e);
				if (ret < 0)
					break;
			}
			if (l->alpha != 0xffff && !straight(&prep[k]) && !mask) {
				pixman_color_t mc = { 0, 0, 0,
						      (uint16_t)(plane_alpha8(l->alpha) * 257) };

				mask = pixman_image_create_solid_fill(&mc);
				if (!mask) {
					ret = fl__display_fail(e, -ENOMEM,
							       "layer %zu: out of memory", index);
					break;
				}
			}
			pixman_image_composite32(op, src, mask, dst, b.x1 - l->dst_x,
						 b.y1 - l->dst_y, 0, 0, b.x1, b.y1, b.x2 - b.x1,
						 b.y2 - b.y1);
		}
		if (src)
			pixman_image_unref(src);
		if (mask)
			pixman_image_unref(mask);
	}
out:
	free(start);
	free(fill);
	return ret;
}

int fl__display_compose(struct fl_display_compositor *c, const struct fl_display_frame *frame,
			struct fl_display_error *e)
{
	const struct fl_display_compose_target *t = &frame->target;
	pixman_box32_t boxes[FL_DISPLAY_COMPOSE_MAX_DAMAGE];
	pixman_region32_t region;
	pixman_image_t *dst;
	pixman_box32_t *rects;
	int n_boxes = 0, n_rects, ret;

	ret = fl__display_compose_check(frame, e);
	if (ret < 0)
		return ret;
	if (frame->damage) {
		for (size_t i = 0; i < frame->n_damage; i++) {
			const struct fl_display_compose_rect *d = &frame->damage[i];
			struct box b = box_clip(d->x, d->y, d->w, d->h, t->w, t->h);

			if (!box_empty(&b))
				boxes[n_boxes++] = (pixman_box32_t){ b.x1, b.y1, b.x2, b.y2 };
		}
		if (!n_boxes)
			return 0;
	} else {
		boxes[n_boxes++] = (pixman_box32_t){ 0, 0, (int32_t)t->w, (int32_t)t->h };
	}
	/* Overlapping damage becomes disjoint rects: each pixel drawn once. */
	if (!pixman_region32_init_rects(&region, boxes, n_boxes))
		return fl__display_fail(e, -ENOMEM, "out of memory for the damage region");
	dst = pixman_image_create_bits_no_clear(cformat_find(t->fourcc)->pix, (int)t->w, (int)t->h,
						(uint32_t *)(void *)((uint8_t *)t->map + t->offset),
						(int)t->pitch);
	if (!dst) {
		pixman_region32_fini(&region);
		return fl__display_fail(e, -ENOMEM, "destination: out of memory");
	}
	rects = pixman_region32_rectangles(&region, &n_rects);
	ret = draw(c, frame, dst, rects, n_rects, e);
	pixman_image_unref(dst);
	pixman_region32_fini(&region);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * Software composition (src/display/compose.c, docs/display.md
 * "Composition") against a reference written here: per pixel, in double
 * precision, from the rules of the docs, with its own decoding of every
 * format's bytes. It shares nothing with the module but the structs.
 *
 * Tolerance: 1 per 8-bit channel (TOL), for the module's 8-bit arithmetic
 * (pixman rounds each multiply, the plane alpha is applied as 8 bits,
 * bilinear weights have 7 bits). The reference rounds the destination to
 * 8 bits after each layer, as any compositor writing an 8-bit destination
 * must; bilinear cases use smooth content, where 7-bit weights stay within
 * the tolerance (docs/display.md says so).
 *
 * Frames of some cases are written as PNG (for people) to
 * $FL_TEST_FRAME_DIR, else to <build>/meson-logs/compose-frames; the test
 * prints where.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compose.h"
#include "display-png.h"
#include "runner.h"

#ifndef TOL
#define TOL 1.0
#endif

static uint32_t fourcc(const char *s)
{
	return FL_FOURCC(s[0], s[1], s[2], s[3]);
}

/* ---- the formats' bytes, independently: little-endian words ---- */

struct tfmt {
	const char *fcc;
	unsigned int cpp;
	int shift[4]; /* r, g, b, a; -1: no channel */
	unsigned int bits[4];
};

static const struct tfmt tfmts[] = {
	{ "AR24", 4, { 16, 8, 0, 24 }, { 8, 8, 8, 8 } },
	{ "XR24", 4, { 16, 8, 0, -1 }, { 8, 8, 8, 0 } },
	{ "AB24", 4, { 0, 8, 16, 24 }, { 8, 8, 8, 8 } },
	{ "XB24", 4, { 0, 8, 16, -1 }, { 8, 8, 8, 0 } },
	{ "RA24", 4, { 24, 16, 8, 0 }, { 8, 8, 8, 8 } },
	{ "RX24", 4, { 24, 16, 8, -1 }, { 8, 8, 8, 0 } },
	{ "BA24", 4, { 8, 16, 24, 0 }, { 8, 8, 8, 8 } },
	{ "BX24", 4, { 8, 16, 24, -1 }, { 8, 8, 8, 0 } },
	{ "RG24", 3, { 16, 8, 0, -1 }, { 8, 8, 8, 0 } },
	{ "BG24", 3, { 0, 8, 16, -1 }, { 8, 8, 8, 0 } },
	{ "RG16", 2, { 11, 5, 0, -1 }, { 5, 6, 5, 0 } },
	{ "BG16", 2, { 0, 5, 11, -1 }, { 5, 6, 5, 0 } },
};
#define N_TFMTS (sizeof(tfmts) / sizeof(tfmts[0]))

static const struct tfmt *tfmt(uint32_t f)
{
	for (size_t i = 0; i < N_TFMTS; i++)
		if (fourcc(tfmts[i].fcc) == f)
			return &tfmts[i];
	fl__test_fail(__FILE__, __LINE__, "no test format %08" PRIx32, f);
}

/* Channel values of one pixel, 0..255 (bit replication for 5 and 6 bits). */
static void decode(const struct tfmt *t, const uint8_t *p, double ch[4])
{
	uint32_t v = 0;

	for (unsigned int i = 0; i < t->cpp; i++)
		v |= (uint32_t)p[i] << (8 * i);
	for (int c = 0; c < 4; c++) {
		uint32_t x;

		if (t->shift[c] < 0) {
			ch[c] = 255;
			continue;
		}
		x = (v >> t->shift[c]) & ((1u << t->bits[c]) - 1);
		if (t->bits[c] < 8)
			x = x << (8 - t->bits[c]) | x >> (2 * t->bits[c] - 8);
		ch[c] = x;
	}
}

/* ---- buffers ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

enum content { RANDOM, PREMUL, SMOOTH, OPAQUE };

/* A one-plane RGB buffer of @w × @h in format @f, pitch rounded up to 4. */
static struct fl_display_compose_layer rgb_layer(const char *f, uint32_t w, uint32_t h,
						 enum content how)
{
	const struct tfmt *t = tfmt(fourcc(f));
	uint32_t pitch = (w * t->cpp + 3) & ~3u;
	uint8_t *m = malloc((size_t)pitch * h);
	struct fl_display_compose_layer l = {
		.fourcc = fourcc(f),
		.w = w,
		.h = h,
		.n_planes = 1,
		.plane = { { m, (uint64_t)pitch * h, 0, pitch } },
		.src_w = w << 16,
		.src_h = h << 16,
		.dst_w = w,
		.dst_h = h,
		.blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
		.alpha = 0xffff,
	};

	fl_assert(m);
	for (uint32_t y = 0; y < h; y++) {
		for (uint32_t x = 0; x < w; x++) {
			uint32_t ch[4], v = 0;
			uint8_t *p = m + (size_t)y * pitch + x * t->cpp;

			ch[3] = how == OPAQUE ? 255 : rnd() & 255;
			for (int c = 0; c < 3; c++) {
				if (how == SMOOTH)
					ch[c] = x * 3 + y * 2 + (uint32_t)c * 40;
				else if (how == PREMUL)
					ch[c] = rnd() % (ch[3] + 1);
				else
					ch[c] = rnd() & 255;
			}
			if (how == SMOOTH)
				ch[3] = 255;
			for (int c = 0; c < 4; c++)
				if (t->shift[c] >= 0)
					v |= (ch[c] >> (8 - t->bits[c])) << t->shift[c];
			for (unsigned int i = 0; i < t->cpp; i++)
				p[i] = (uint8_t)(v >> (8 * i));
		}
	}
	return l;
}

static void layer_free(struct fl_display_compose_layer *l)
{
	free((void *)l->plane[0].map);
}

static struct fl_display_compose_target target(const char *f, uint32_t w, uint32_t h)
{
	const struct tfmt *t = tfmt(fourcc(f));
	uint32_t pitch = (w * t->cpp + 3) & ~3u;
	struct fl_display_compose_target d = {
		malloc((size_t)pitch * h), (uint64_t)pitch * h, 0, pitch, fourcc(f), w, h
	};

	fl_assert(d.map);
	memset(d.map, 0x5a, d.size);
	return d;
}

/* ---- the reference ---- */

/* YUV as docs/display.md defines it: BT.601 from Kr, Kb, limited range. */
static void ref_yuv(double y, double u, double v, double out[4])
{
	const double kr = 0.299, kb = 0.114, kg = 1 - kr - kb;
	double Y = (y - 16) * 255 / 219, pb = (u - 128) * 255 / 224, pr = (v - 128) * 255 / 224;

	out[0] = Y + 2 * (1 - kr) * pr;
	out[1] = Y - 2 * (1 - kb) * kb / kg * pb - 2 * (1 - kr) * kr / kg * pr;
	out[2] = Y + 2 * (1 - kb) * pb;
	for (int c = 0; c < 3; c++)
		out[c] = out[c] < 0 ? 0 : out[c] > 255 ? 255 : round(out[c]);
	out[3] = 255;
}

/* Source pixel (x, y) of @l, premultiplied, 0..255. */
static void ref_fetch(const struct fl_display_compose_layer *l, uint32_t x, uint32_t y,
		      double px[4])
{
	const struct fl_display_compose_plane *p = l->plane;
	uint32_t f = l->fourcc;

	if (f == fourcc("NV12") || f == fourcc("YU12") || f == fourcc("YV12")) {
		const uint8_t *Y = (const uint8_t *)p[0].map + p[0].offset + y * p[0].pitch + x;
		const uint8_t *c1 = (const uint8_t *)p[1].map + p[1].offset + (y / 2) * p[1].pitch;
		double u, v;

		if (f == fourcc("NV12")) {
			u = c1[(x / 2) * 2];
			v = c1[(x / 2) * 2 + 1];
		} else {
			const uint8_t *c2 =
				(const uint8_t *)p[2].map + p[2].offset + (y / 2) * p[2].pitch;

			u = f == fourcc("YU12") ? c1[x / 2] : c2[x / 2];
			v = f == fourcc("YU12") ? c2[x / 2] : c1[x / 2];
		}
		ref_yuv(*Y, u, v, px);
		return;
	}
	decode(tfmt(f), (const uint8_t *)p[0].map + p[0].offset + y * p[0].pitch + x * tfmt(f)->cpp,
	       px);
	if (l->blend == FL_DISPLAY_BLEND_NONE)
		px[3] = 255;
	else if (l->blend == FL_DISPLAY_BLEND_COVERAGE)
		for (int c = 0; c < 3; c++)
			px[c] = px[c] * px[3] / 255;
}

/*
 * The source sample for destination pixel (X, Y): its centre mapped into
 * the destination rect's unit square, turned back, flipped back, scaled
 * into the source rect; nearest takes the pixel whose span holds the point
 * (a point on a boundary belongs to the pixel before it), bilinear weighs
 * the four nearest centres; both clamp to the source rect's pixel box.
 */
static void ref_sample(const struct fl_display_compose_layer *l, int X, int Y, bool bilinear,
		       double px[4])
{
	double u = (X + 0.5 - l->dst_x) / l->dst_w, v = (Y + 0.5 - l->dst_y) / l->dst_h, s, t;
	double sx, sy;
	int x0 = (int)(l->src_x >> 16), y0 = (int)(l->src_y >> 16);
	int x1 = (int)(((uint64_t)l->src_x + l->src_w + 0xffff) >> 16) - 1;
	int y1 = (int)(((uint64_t)l->src_y + l->src_h + 0xffff) >> 16) - 1;

	switch (l->transform & 3) {
	case 0:
		s = u, t = v;
		break;
	case 1: /* clockwise: source (s, t) went to (1 - t, s) */
		s = v, t = 1 - u;
		break;
	case 2:
		s = 1 - u, t = 1 - v;
		break;
	default: /* source (s, t) went to (t, 1 - s) */
		s = 1 - v, t = u;
		break;
	}
	if (l->transform & FL_DISPLAY_TRANSFORM_FLIP_X)
		s = 1 - s;
	sx = l->src_x / 65536.0 + s * (l->src_w / 65536.0);
	sy = l->src_y / 65536.0 + t * (l->src_h / 65536.0);
	if (!bilinear) {
		int ix = (int)ceil(sx) - 1, iy = (int)ceil(sy) - 1;

		ix = ix < x0 ? x0 : ix > x1 ? x1 : ix;
		iy = iy < y0 ? y0 : iy > y1 ? y1 : iy;
		ref_fetch(l, (uint32_t)ix, (uint32_t)iy, px);
		return;
	}
	{
		double fx = sx - 0.5, fy = sy - 0.5, wx = fx - floor(fx), wy = fy - floor(fy);
		int ix = (int)floor(fx), iy = (int)floor(fy);
		double q[4][4];

		for (int k = 0; k < 4; k++) {
			int xx = ix + (k & 1), yy = iy + (k >> 1);

			xx = xx < x0 ? x0 : xx > x1 ? x1 : xx;
			yy = yy < y0 ? y0 : yy > y1 ? y1 : yy;
			ref_fetch(l, (uint32_t)xx, (uint32_t)yy, q[k]);
		}
		for (int c = 0; c < 4; c++)
			px[c] = (q[0][c] * (1 - wx) + q[1][c] * wx) * (1 - wy) +
				(q[2][c] * (1 - wx) + q[3][c] * wx) * wy;
	}
}

/* The frame's pixels, premultiplied 0..255, 4 doubles a pixel. */
static double *ref_compose(const struct fl_display_frame *f)
{
	const struct fl_display_compose_target *t = &f->target;
	double *out = malloc(sizeof(double) * 4 * t->w * t->h);
	const struct fl_display_compose_layer *order[FL_DISPLAY_COMPOSE_MAX_LAYERS];
	size_t n = f->n_layers;

	fl_assert(out);
	for (size_t i = 0; i < (size_t)t->w * t->h; i++) {
		out[i * 4 + 0] = round(f->background.r * 255.0 / 65535);
		out[i * 4 + 1] = round(f->background.g * 255.0 / 65535);
		out[i * 4 + 2] = round(f->background.b * 255.0 / 65535);
		out[i * 4 + 3] = round(f->background.a * 255.0 / 65535);
	}
	/* Insertion sort by z. */
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		while (j > 0 && order[j - 1]->zpos > f->layers[i].zpos) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = &f->layers[i];
	}
	for (size_t k = 0; k < n; k++) {
		const struct fl_display_compose_layer *l = order[k];
		double pa = l->alpha / 65535.0;
		bool unit = !(l->src_x & 0xffff) && !(l->src_y & 0xffff) &&
			    l->src_w == ((l->transform & 1) ? l->dst_h : l->dst_w) << 16 &&
			    l->src_h == ((l->transform & 1) ? l->dst_w : l->dst_h) << 16;
		bool bilinear = l->filter == FL_DISPLAY_FILTER_DEFAULT && !unit;

		for (int64_t Y = l->dst_y; Y < (int64_t)l->dst_y + l->dst_h; Y++) {
			for (int64_t X = l->dst_x; X < (int64_t)l->dst_x + l->dst_w; X++) {
				double s[4], *d;

				if (X < 0 || Y < 0 || X >= t->w || Y >= t->h)
					continue;
				d = &out[((size_t)Y * t->w + (size_t)X) * 4];
				ref_sample(l, (int)X, (int)Y, bilinear, s);
				for (int c = 0; c < 4; c++) {
					double v = s[c] * pa + d[c] * (1 - s[3] * pa / 255);

					d[c] = round(v > 255 ? 255 : v);
				}
			}
		}
	}
	return out;
}

/* How far pixel (x, y) of the destination is from the reference (max over
 * channels, in 8-bit units; RGB only for formats without alpha). */
static double diff_at(const struct fl_display_compose_target *t, const double *ref, uint32_t x,
		      uint32_t y)
{
	const struct tfmt *tf = tfmt(t->fourcc);
	const double *r = &ref[((size_t)y * t->w + x) * 4];
	double px[4], worst = 0;

	decode(tf, (const uint8_t *)t->map + t->offset + (size_t)y * t->pitch + x * tf->cpp, px);
	for (int c = 0; c < 4; c++) {
		double dd;

		if (tf->shift[c] < 0)
			continue;
		dd = fabs(px[c] - r[c]);
		if (tf->bits[c] < 8) /* compare codes: the module truncates */
			dd = fabs(floor(px[c] / (1 << (8 - tf->bits[c]))) -
				  floor(r[c] / (1 << (8 - tf->bits[c]))));
		worst = dd > worst ? dd : worst;
	}
	return worst;
}

#define expect_matches(f, ref) expect_matches_at(__FILE__, __LINE__, f, ref, NULL)

/* Every pixel within TOL; with @outside, pixels outside the damage must
 * equal @outside byte for byte instead. */
static double expect_matches_at(const char *file, int line, const struct fl_display_frame *f,
				const double *ref, const uint8_t *outside)
{
	const struct fl_display_compose_target *t = &f->target;
	const struct tfmt *tf = tfmt(t->fourcc);
	double worst = 0;

	for (uint32_t y = 0; y < t->h; y++) {
		for (uint32_t x = 0; x < t->w; x++) {
			bool in = !f->damage;
			double dd;

			for (size_t i = 0; f->damage && i < f->n_damage; i++) {
				const struct fl_display_compose_rect *r = &f->damage[i];

				in |= (int64_t)x >= r->x && (int64_t)x < (int64_t)r->x + r->w &&
				      (int64_t)y >= r->y && (int64_t)y < (int64_t)r->y + r->h;
			}
			if (!in) {
				size_t at = (size_t)y * t->pitch + x * tf->cpp;

				if (memcmp((uint8_t *)t->map + at, outside + at, tf->cpp) != 0)
					fl__test_fail(file, line,
						      "pixel %u,%u outside the damage changed", x,
						      y);
				continue;
			}
			dd = diff_at(t, ref, x, y);
			if (dd > TOL) {
				const double *r = &ref[((size_t)y * t->w + x) * 4];

				fl__test_fail(file, line,
					      "pixel %u,%u is %.0f off the reference (%.0f %.0f "
					      "%.0f %.0f)",
					      x, y, dd, r[0], r[1], r[2], r[3]);
			}
			worst = dd > worst ? dd : worst;
		}
	}
	return worst;
}

static void compose_ok(const struct fl_display_frame *f)
{
	struct fl_display_compositor *comp = fl__display_compose_new();
	struct fl_display_error e = { 0 };
	int ret;

	fl_assert(comp);
	ret = fl__display_compose(comp, f, &e);
	fl__display_compose_free(comp);
	if (ret != 0)
		fl__test_fail(__FILE__, __LINE__, "compose: %d %s", ret, e.msg);
}

/* Composes @f and checks it against the reference over the whole frame. */
static void check_frame(const struct fl_display_frame *f)
{
	double *ref = ref_compose(f);

	double w;

	compose_ok(f);
	w = expect_matches(f, ref);
#ifdef TOL_DEBUG
	fprintf(stderr, "worst %.0f\n", w);
#endif
	(void)w;
	free(ref);
}

/* Writes the frame as PNG where people look, and says where. */
static void save_frame(const struct fl_display_compose_target *t, const char *name)
{
	const char *dir = getenv("FL_TEST_FRAME_DIR");
	char path[512];
	struct fl_display_error e;

	if (!dir || !*dir)
		dir = FL_TEST_FRAME_DEFAULT_DIR;
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/%s.png", dir, name);
	if (fl__display_png_write(path, t, &e) != 0)
		fl__test_fail(__FILE__, __LINE__, "png: %s", e.msg);
	printf("frame: %s\n", path);
}

/* ---- blend modes, plane alpha, z order ---- */

FL_TEST(compose_blend_modes_and_plane_alpha)
{
	static const uint16_t alphas[] = { 0xffff, 0x8000, 0x1234, 0xfedc, 0 };
	struct fl_display_compose_layer l[2] = { rgb_layer("XR24", 24, 16, RANDOM),
						 rgb_layer("AR24", 24, 16, PREMUL) };
	struct fl_display_compose_layer straight = rgb_layer("AR24", 24, 16, RANDOM);
	struct fl_display_frame f = { .target = target("AR24", 24, 16),
				      .layers = l,
				      .n_layers = 2 };

	l[0].blend = FL_DISPLAY_BLEND_NONE;
	l[1].zpos = 1;
	for (uint32_t b = 0; b <= FL_DISPLAY_BLEND_COVERAGE; b++) {
		for (size_t a = 0; a < sizeof(alphas) / sizeof(alphas[0]); a++) {
			l[1].blend = b;
			l[1].alpha = alphas[a];
			check_frame(&f);
		}
	}
	/* Straight alpha with colour above alpha: premultiplied it would be
	 * invalid, so this tells COVERAGE from PREMULTIPLIED. */
	straight.zpos = 1;
	layer_free(&l[1]);
	l[1] = straight;
	l[1].blend = FL_DISPLAY_BLEND_COVERAGE;
	l[1].alpha = 0xc000;
	check_frame(&f);
	save_frame(&f.target, "blend-coverage");
	layer_free(&l[0]);
	layer_free(&straight);
	free(f.target.map);
}

FL_TEST(compose_z_order_of_four_overlapping_layers)
{
	struct fl_display_compose_layer l[4];
	struct fl_display_frame f = { .target = target("XR24", 64, 48),
				      .background = { 0x1000, 0x2000, 0x3000, 0xffff },
				      .layers = l,
				      .n_layers = 4 };
	static const uint32_t z[4] = { 30, 10, 40, 20 };
	uint8_t *first = malloc(f.target.size);
	double *ref;

	for (int i = 0; i < 4; i++) {
		l[i] = rgb_layer(i == 1 ? "XB24" : "AR24", 40, 30, i == 1 ? OPAQUE : PREMUL);
		l[i].dst_x = 6 * i;
		l[i].dst_y = 5 * i - 4;
		l[i].zpos = z[i];
	}
	l[3].alpha = 0x9000;
	check_frame(&f);
	save_frame(&f.target, "z-order");
	/* Another order gives another frame: the order is not ignored. */
	memcpy(first, f.target.map, f.target.size);
	l[0].zpos = 5;
	check_frame(&f);
	fl_assert(memcmp(first, f.target.map, f.target.size) != 0);
	/* An opaque layer over all of the damage hides the layers below it,
	 * not those above; outside the damage nothing changes. */
	l[1].dst_x = 0, l[1].dst_y = 0, l[1].zpos = 35;
	f.damage = &(const struct fl_display_compose_rect){ 2, 3, 30, 20 };
	f.n_damage = 1;
	ref = ref_compose(&f);
	memcpy(first, f.target.map, f.target.size);
	compose_ok(&f);
	expect_matches_at(__FILE__, __LINE__, &f, ref, first);
	free(ref);
	/* Damage the opaque layer only partly covers: the layers below show. */
	f.damage = &(const struct fl_display_compose_rect){ 30, 20, 20, 20 };
	ref = ref_compose(&f);
	memcpy(first, f.target.map, f.target.size);
	compose_ok(&f);
	expect_matches_at(__FILE__, __LINE__, &f, ref, first);
	free(ref);
	for (int i = 0; i < 4; i++)
		layer_free(&l[i]);
	free(first);
	free(f.target.map);
}

/* ---- scaling and transforms ---- */

FL_TEST(compose_scaling_nearest)
{
	struct fl_display_compose_layer l = rgb_layer("AR24", 20, 12, PREMUL);
	struct fl_display_frame f = { .target = target("AR24", 64, 48),
				      .layers = &l,
				      .n_layers = 1 };

	l.filter = FL_DISPLAY_FILTER_NEAREST;
	/* Up by 3, down by 2 (samples on pixel boundaries), uneven 7/5. */
	l.dst_w = 60, l.dst_h = 36;
	check_frame(&f);
	l.dst_w = 10, l.dst_h = 6;
	check_frame(&f);
	/* Odd source sizes: no sample falls on a pixel boundary, where a
	 * scale inexact in 16.16 may round either way. */
	l.src_x = 3 << 16, l.src_y = 2 << 16, l.src_w = 13 << 16, l.src_h = 9 << 16;
	l.dst_x = 5, l.dst_y = 3, l.dst_w = 49, l.dst_h = 29;
	check_frame(&f);
	save_frame(&f.target, "scale-nearest");
	layer_free(&l);
	free(f.target.map);
}

FL_TEST(compose_scaling_bilinear_and_subpixel_source)
{
	struct fl_display_compose_layer l = rgb_layer("XR24", 32, 24, SMOOTH);
	struct fl_display_frame f = { .target = target("XR24", 64, 48),
				      .background = { 0, 0, 0x8000, 0xffff },
				      .layers = &l,
				      .n_layers = 1 };

	l.dst_w = 50, l.dst_h = 40; /* up */
	check_frame(&f);
	l.dst_w = 21, l.dst_h = 15; /* down */
	check_frame(&f);
	/* A sub-pixel source rect, scaled: samples stay inside its pixel box. */
	l.src_x = (5 << 16) + 0x4000, l.src_y = (3 << 16) + 0xc000;
	l.src_w = (20 << 16) + 0x8000, l.src_h = (13 << 16) + 0x2000;
	l.dst_x = -3, l.dst_y = 4, l.dst_w = 61, l.dst_h = 37;
	check_frame(&f);
	save_frame(&f.target, "scale-bilinear");
	/* Unscaled, sub-pixel: still bilinear (the 1:1 shortcut needs integers). */
	l.src_w = 20 << 16, l.src_h = 13 << 16, l.dst_w = 20, l.dst_h = 13;
	check_frame(&f);
	layer_free(&l);
	free(f.target.map);
}

FL_TEST(compose_every_transform)
{
	struct fl_display_compose_layer l = rgb_layer("AR24", 9, 5, PREMUL);
	struct fl_display_frame f = { .target = target("AR24", 40, 30),
				      .layers = &l,
				      .n_layers = 1 };

	for (uint32_t tr = 0; tr <= FL_DISPLAY_TRANSFORM_MAX; tr++) {
		char name[32];

		l.transform = tr;
		l.filter = FL_DISPLAY_FILTER_DEFAULT;
		/* 1:1: the turned rect is 5 × 9. */
		l.src_x = 0, l.src_y = 0, l.src_w = 9 << 16, l.src_h = 5 << 16;
		l.dst_x = 3, l.dst_y = 2;
		l.dst_w = (tr & 1) ? 5 : 9;
		l.dst_h = (tr & 1) ? 9 : 5;
		check_frame(&f);
		snprintf(name, sizeof(name), "transform-%u", tr);
		save_frame(&f.target, name);
		/* Scaled, nearest, from a sub-rect. */
		l.filter = FL_DISPLAY_FILTER_NEAREST;
		l.src_x = 1 << 16, l.src_y = 1 << 16, l.src_w = 7 << 16, l.src_h = 3 << 16;
		l.dst_w = (tr & 1) ? 9 : 21;
		l.dst_h = (tr & 1) ? 21 : 9;
		check_frame(&f);
	}
	layer_free(&l);
	free(f.target.map);
}

/* ---- background, damage ---- */

FL_TEST(compose_background_fills_what_no_layer_covers)
{
	struct fl_display_compose_layer l = rgb_layer("AR24", 32, 24, PREMUL);
	struct fl_display_frame f = { .target = target("AR24", 32, 24),
				      .background = { 0x4000, 0x8000, 0x2000, 0xc000 },
				      .layers = &l,
				      .n_layers = 1 };
	uint8_t *bg;

	l.src_w = 10 << 16, l.src_h = 10 << 16, l.dst_w = 10, l.dst_h = 10;
	l.dst_x = 20, l.dst_y = -3; /* partly off the edge */
	check_frame(&f);
	bg = (uint8_t *)f.target.map;
	/* Pixel 0,0 is the background, exactly: 0xc0 alpha, premultiplied. */
	fl_assert_int_eq(bg[0], 0x20);
	fl_assert_int_eq(bg[1], 0x80);
	fl_assert_int_eq(bg[2], 0x40);
	fl_assert_int_eq(bg[3], 0xc0);
	/* Transparent black under a covering layer: the layer is copied (SRC),
	 * which must equal OVER onto transparent black. */
	f.background = (struct fl_display_color){ 0 };
	l.src_w = 32 << 16, l.src_h = 24 << 16;
	l.dst_x = 0, l.dst_y = 0, l.dst_w = 32, l.dst_h = 24, l.alpha = 0xa000;
	check_frame(&f);
	/* A coloured background under the same covering, translucent layer
	 * shows through: no shortcut there. */
	f.background = (struct fl_display_color){ 0x4000, 0x8000, 0x2000, 0xc000 };
	check_frame(&f);
	/* Black into a format without alpha, the same shortcut. */
	free(f.target.map);
	f.target = target("XR24", 32, 24);
	f.background = (struct fl_display_color){ 0, 0, 0, 0xffff };
	check_frame(&f);
	/* A layer wholly off the target: the background only. */
	l.dst_x = -32, l.dst_y = 30;
	check_frame(&f);
	/* No layer at all. */
	f.n_layers = 0;
	f.background = (struct fl_display_color){ 0x1111, 0x2222, 0x3333, 0xffff };
	check_frame(&f);
	layer_free(&l);
	free(f.target.map);
}

FL_TEST(compose_damage_limits_the_redraw)
{
	struct fl_display_compose_layer l[2] = { rgb_layer("XR24", 48, 40, RANDOM),
						 rgb_layer("AR24", 30, 20, PREMUL) };
	const struct fl_display_compose_rect damage[] = {
		{ 4, 4, 10, 8 },
		{ 10, 8, 12, 12 }, /* overlaps the first */
		{ 40, -5, 20, 10 }, /* partly outside */
	};
	struct fl_display_frame f = {
		.target = target("AR24", 48, 40),
		.background = { 0x2000, 0x2000, 0x2000, 0xffff },
		.layers = l,
		.n_layers = 2,
		.damage = damage,
		.n_damage = 3,
	};
	uint8_t *before = malloc(f.target.size);
	double *ref;

	/* The background shows in places. */
	l[0].blend = FL_DISPLAY_BLEND_NONE;
	l[0].src_w = 40 << 16, l[0].src_h = 30 << 16, l[0].dst_w = 40, l[0].dst_h = 30;
	l[1].zpos = 1, l[1].dst_x = 8, l[1].dst_y = 6, l[1].alpha = 0xe000;
	ref = ref_compose(&f);
	for (size_t i = 0; i < f.target.size; i++)
		((uint8_t *)f.target.map)[i] = (uint8_t)rnd();
	memcpy(before, f.target.map, f.target.size);
	compose_ok(&f);
	expect_matches_at(__FILE__, __LINE__, &f, ref, before);
	/* An empty damage list draws nothing: a static screen costs nothing. */
	f.n_damage = 0;
	memcpy(before, f.target.map, f.target.size);
	compose_ok(&f);
	fl_assert(memcmp(before, f.target.map, f.target.size) == 0);
	/* Damage wholly outside the destination, likewise. */
	f.damage = &(struct fl_display_compose_rect){ -100, 0, 50, 50 };
	f.n_damage = 1;
	compose_ok(&f);
	fl_assert(memcmp(before, f.target.map, f.target.size) == 0);
	free(ref);
	free(before);
	layer_free(&l[0]);
	layer_free(&l[1]);
	free(f.target.map);
}

/* ---- formats ---- */

FL_TEST(compose_reads_every_rgb_format)
{
	for (size_t i = 0; i < N_TFMTS; i++) {
		struct fl_display_compose_layer l = rgb_layer(tfmts[i].fcc, 13, 7, PREMUL);
		struct fl_display_frame f = { .target = target("AR24", 16, 8),
					      .background = { 0, 0, 0xffff, 0xffff },
					      .layers = &l,
					      .n_layers = 1 };

		fl_assert(fl__display_compose_format_ok(l.fourcc, FL_DISPLAY_COMPOSE_SOURCE));
		check_frame(&f);
		l.blend = FL_DISPLAY_BLEND_NONE;
		l.alpha = 0x7000;
		check_frame(&f);
		/* A sub-rect: the byte arithmetic of x and y. */
		l.src_x = 3 << 16, l.src_y = 1 << 16, l.src_w = 9 << 16, l.src_h = 5 << 16;
		l.dst_x = 1, l.dst_y = 2, l.dst_w = 9, l.dst_h = 5;
		check_frame(&f);
		layer_free(&l);
		free(f.target.map);
	}
}

FL_TEST(compose_writes_every_rgb_format)
{
	for (size_t i = 0; i < N_TFMTS; i++) {
		struct fl_display_compose_layer l = rgb_layer("AR24", 11, 9, PREMUL);
		struct fl_display_frame f = { .target = target(tfmts[i].fcc, 15, 10),
					      .background = { 0x3000, 0x6000, 0x9000, 0xffff },
					      .layers = &l,
					      .n_layers = 1 };
		char name[32];

		fl_assert(
			fl__display_compose_format_ok(f.target.fourcc, FL_DISPLAY_COMPOSE_TARGET));
		l.dst_x = 2, l.dst_y = 1;
		check_frame(&f);
		snprintf(name, sizeof(name), "target-%s", tfmts[i].fcc);
		save_frame(&f.target, name);
		layer_free(&l);
		free(f.target.map);
	}
}

/* A YUV buffer of @w × @h with random samples and distinct pitches. */
static struct fl_display_compose_layer yuv_layer(const char *f, uint32_t w, uint32_t h)
{
	bool nv12 = fourcc(f) == fourcc("NV12");
	uint32_t n = nv12 ? 2 : 3;
	uint32_t pitch[3] = { w + 3, nv12 ? w + 6 : w / 2 + 5, w / 2 + 1 };
	uint32_t rows[3] = { h, h / 2, h / 2 };
	struct fl_display_compose_layer l = {
		.fourcc = fourcc(f),
		.w = w,
		.h = h,
		.n_planes = n,
		.src_w = w << 16,
		.src_h = h << 16,
		.dst_w = w,
		.dst_h = h,
		.alpha = 0xffff,
	};

	for (uint32_t p = 0; p < n; p++) {
		uint8_t *m = malloc((size_t)pitch[p] * rows[p] + 7);

		fl_assert(m);
		for (size_t i = 0; i < (size_t)pitch[p] * rows[p] + 7; i++)
			m[i] = (uint8_t)rnd();
		l.plane[p] = (struct fl_display_compose_plane){ m, (uint64_t)pitch[p] * rows[p] + 7,
								7, pitch[p] };
	}
	return l;
}

FL_TEST(compose_nv12_and_yuv420_are_bt601_limited_range)
{
	static const char *const f[] = { "NV12", "YU12", "YV12" };

	for (size_t i = 0; i < 3; i++) {
		struct fl_display_compose_layer l = yuv_layer(f[i], 26, 18);
		struct fl_display_frame fr = { .target = target("XR24", 30, 20),
					       .layers = &l,
					       .n_layers = 1 };
		char name[32];

		check_frame(&fr);
		/* Odd origin: chroma of the pixel's own 2 × 2 block. */
		l.src_x = 3 << 16, l.src_y = 5 << 16, l.src_w = 19 << 16, l.src_h = 11 << 16;
		l.dst_x = 1, l.dst_y = 1, l.dst_w = 19, l.dst_h = 11;
		l.alpha = 0xb000;
		check_frame(&fr);
		snprintf(name, sizeof(name), "yuv-%s", f[i]);
		save_frame(&fr.target, name);
		for (uint32_t p = 0; p < l.n_planes; p++)
			free((void *)l.plane[p].map);
		free(fr.target.map);
	}
	/* The range's ends, against the formula. */
	{
		double px[4];

		ref_yuv(16, 128, 128, px);
		fl_assert(px[0] == 0 && px[1] == 0 && px[2] == 0);
		ref_yuv(235, 128, 128, px);
		fl_assert(px[0] == 255 && px[1] == 255 && px[2] == 255);
	}
}

/* ---- PNG ---- */

FL_TEST(compose_png_holds_the_frame)
{
	static const char *const fmts[] = { "AR24", "XB24", "RG16" };

	for (size_t i = 0; i < 3; i++) {
		struct fl_display_compose_layer l = rgb_layer("AR24", 17, 9, PREMUL);
		struct fl_display_frame f = { .target = target(fmts[i], 17, 9),
					      .layers = &l,
					      .n_layers = 1 };
		png_image img = { .version = PNG_IMAGE_VERSION };
		char path[512];
		uint8_t *rgba = malloc(17 * 9 * 4);
		const struct tfmt *tf = tfmt(f.target.fourcc);

		compose_ok(&f);
		snprintf(path, sizeof(path), "%s/compose-png-%zu.png", FL_TEST_BUILD_DIR, i);
		fl_assert_int_eq(fl__display_png_write(path, &f.target, NULL), 0);
		fl_assert(png_image_begin_read_from_file(&img, path));
		fl_assert_int_eq(img.width, 17);
		fl_assert_int_eq(img.height, 9);
		fl_assert_int_eq((img.format & PNG_FORMAT_FLAG_ALPHA) != 0, tf->shift[3] >= 0);
		img.format = PNG_FORMAT_RGBA;
		fl_assert(png_image_finish_read(&img, NULL, rgba, 0, NULL));
		for (uint32_t p = 0; p < 17 * 9; p++) {
			double px[4];

			decode(tf,
			       (uint8_t *)f.target.map + (p / 17) * f.target.pitch +
				       (p % 17) * tf->cpp,
			       px);
			for (int c = 0; c < 4; c++) {
				/* PNG is straight alpha: premultiply it back. */
				double v = c < 3 ? rgba[p * 4 + c] * (double)rgba[p * 4 + 3] / 255
						 : rgba[p * 4 + c];

				if (fabs(v - px[c]) > TOL)
					fl__test_fail(__FILE__, __LINE__,
						      "%s pixel %u channel %d: png %.1f frame %.0f",
						      fmts[i], p, c, v, px[c]);
			}
		}
		unlink(path);
		free(rgba);
		layer_free(&l);
		free(f.target.map);
	}
}

/* ---- errors ---- */

struct bad {
	const char *what;
	void (*spoil)(struct fl_display_frame *f, struct fl_display_compose_layer *l);
	const char *msg;
};

#define SPOIL(name, body)                                                                \
	static void name(struct fl_display_frame *f, struct fl_display_compose_layer *l) \
	{                                                                                \
		(void)f;                                                                 \
		(void)l;                                                                 \
		body;                                                                    \
	}

SPOIL(bad_layer_format, l[1].fourcc = fourcc("YUYV"))
SPOIL(bad_target_format, f->target.fourcc = fourcc("NV12"))
SPOIL(bad_target_short, f->target.size -= 1)
SPOIL(bad_target_pitch, f->target.pitch = 30 * 4 + 2; f->target.size = (30 * 4 + 2) * 20)
SPOIL(bad_target_zero, f->target.w = 0)
SPOIL(bad_target_huge, f->target.w = FL_DISPLAY_COMPOSE_MAX_SIZE + 1)
SPOIL(bad_target_nomap, f->target.map = NULL)
SPOIL(bad_background, f->background = ((struct fl_display_color){ 0x8000, 0, 0, 0x7fff }))
static const struct fl_display_compose_rect zero_high = { 0, 0, 5, 0 };
SPOIL(bad_damage_zero, f->damage = &zero_high; f->n_damage = 1)
SPOIL(bad_damage_many, f->damage = f->target.map; f->n_damage = FL_DISPLAY_COMPOSE_MAX_DAMAGE + 1)
SPOIL(bad_damage_null, f->damage = NULL; f->n_damage = 2)
SPOIL(bad_layers_many, f->n_layers = FL_DISPLAY_COMPOSE_MAX_LAYERS + 1)
SPOIL(bad_layers_null, f->layers = NULL)
SPOIL(bad_planes, l[1].n_planes = 2)
SPOIL(bad_plane_short, l[1].plane[0].size -= 1)
SPOIL(bad_plane_offset, l[1].plane[0].offset = 4)
SPOIL(bad_plane_nomap, l[1].plane[0].map = NULL)
SPOIL(bad_plane_pitch_small, l[1].plane[0].pitch = 4 * 10 - 4)
SPOIL(bad_plane_pitch_odd, l[1].fourcc = fourcc("RG16"); l[1].plane[0].pitch = 22)
SPOIL(bad_plane_unaligned, l[1].plane[0].map = (const uint8_t *)l[1].plane[0].map + 2;
      l[1].plane[0].size -= 2; l[1].h -= 1; l[1].src_h = l[1].h << 16)
/* 1 GiB of pitch and 2 lines fit ADF's check and 64-bit arithmetic, not
 * pixman's int: refused before anything reads the (unmapped) memory. */
SPOIL(bad_plane_2gib, l[1].h = 2; l[1].src_h = 2 << 16; l[1].plane[0].pitch = 1u << 30;
      l[1].plane[0].size = 2ull << 30)
SPOIL(bad_layer_zero_w, l[1].w = 0)
SPOIL(bad_layer_huge, l[1].w = FL_DISPLAY_COMPOSE_MAX_SIZE + 1)
SPOIL(bad_src_zero_w, l[1].src_w = 0)
SPOIL(bad_src_zero_h, l[1].src_h = 0)
SPOIL(bad_src_past_w, l[1].src_x = 1)
SPOIL(bad_src_past_h, l[1].src_y = 0xffffffffu)
SPOIL(bad_src_wraps, l[1].src_x = 0xffff0000u; l[1].src_w = 0x20000)
SPOIL(bad_dst_zero, l[1].dst_h = 0)
SPOIL(bad_dst_huge, l[1].dst_w = FL_DISPLAY_COMPOSE_MAX_SIZE + 1)
SPOIL(bad_blend, l[1].blend = 3)
SPOIL(bad_transform, l[1].transform = 8)
SPOIL(bad_filter, l[1].filter = 2)
SPOIL(bad_zpos, l[1].zpos = l[0].zpos)
SPOIL(bad_yuv_odd, l[1] = l[0]; l[1].zpos = 9; l[1].fourcc = fourcc("NV12"); l[1].n_planes = 2;
      l[1].plane[1] = l[1].plane[0])

static const struct bad bads[] = {
	{ "layer format", bad_layer_format,
	  "layer 1: format YUYV (0x56595559) is not one the "
	  "compositor reads" },
	{ "target format", bad_target_format,
	  "destination: format NV12 (0x3231564e) is not an "
	  "RGB format the compositor writes" },
	{ "target short", bad_target_short,
	  "destination plane 0: offset 0 + 20 lines "
	  "of pitch 120" },
	{ "target pitch", bad_target_pitch, "destination: pitch 122 is not a multiple of 4" },
	{ "target zero", bad_target_zero, "destination: width 0 must be a non-zero" },
	{ "target huge", bad_target_huge,
	  "destination: size 16385x20 is larger than the "
	  "compositor's 16384x16384" },
	{ "target no map", bad_target_nomap, "destination plane 0: no memory" },
	{ "background", bad_background,
	  "background: colour 8000 0000 0000 alpha 7fff is not "
	  "premultiplied" },
	{ "damage zero", bad_damage_zero, "damage rect 0 has zero height" },
	{ "damage many", bad_damage_many, "damage: 65 rects, more than 64" },
	{ "damage null", bad_damage_null, "damage: 2 rects but no array" },
	{ "layers many", bad_layers_many, "57 layers, more than 56" },
	{ "layers null", bad_layers_null, "2 layers but no array" },
	{ "planes", bad_planes, "layer 1: format AR24 has 1 plane, not 2" },
	{ "plane short", bad_plane_short,
	  "layer 1 plane 0: offset 0 + 8 lines of "
	  "pitch 40 (last line padded to the pitch) end at byte "
	  "320, past its 319-byte memory" },
	{ "plane offset", bad_plane_offset, "layer 1 plane 0: offset 4 + 8 lines" },
	{ "plane no map", bad_plane_nomap, "layer 1 plane 0: no memory" },
	{ "pitch small", bad_plane_pitch_small,
	  "layer 1 plane 0: pitch 36 is less than "
	  "width 10 x 4 bytes = 40" },
	{ "pitch odd", bad_plane_pitch_odd, "layer 1: pitch 22 is not a multiple of 4 bytes" },
	{ "unaligned", bad_plane_unaligned,
	  "layer 1: the first pixel (offset 0) is not 4-byte "
	  "aligned in memory" },
	{ "2 GiB", bad_plane_2gib,
	  "layer 1: 2 lines of pitch 1073741824 span more than pixman's "
	  "2 GiB" },
	{ "layer zero", bad_layer_zero_w, "layer 1: width 0 must be a non-zero" },
	{ "layer huge", bad_layer_huge, "layer 1: size 16385x8 is larger than the compositor's" },
	{ "src zero w", bad_src_zero_w, "layer 1: source rect has zero width" },
	{ "src zero h", bad_src_zero_h, "layer 1: source rect has zero height" },
	{ "src past w", bad_src_past_w,
	  "layer 1: source rect x 1.5259e-05 + width 10 ends past "
	  "the buffer's width 10" },
	{ "src past h", bad_src_past_h,
	  "layer 1: source rect y 65536 + height 8 ends past the "
	  "buffer's height 8" },
	{ "src wraps", bad_src_wraps, "layer 1: source rect x 65535 + width 2 ends past" },
	{ "dst zero", bad_dst_zero, "layer 1: destination rect has zero height" },
	{ "dst huge", bad_dst_huge, "layer 1: destination rect 16385x8 is larger than" },
	{ "blend", bad_blend, "layer 1: blend mode 3 is not 0 to 2" },
	{ "transform", bad_transform, "layer 1: transform 8 is not 0 to 7" },
	{ "filter", bad_filter, "layer 1: filter 2 is not 0 or 1" },
	{ "zpos", bad_zpos, "layers 0 and 1 have the same z order 0" },
	{ "yuv odd", bad_yuv_odd, "layer 1: width 15 must be a non-zero multiple of 2" },
};

FL_TEST(compose_refuses_every_bad_description_and_writes_nothing)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct fl_display_compose_layer l[2] = { rgb_layer("XR24", 15, 9, OPAQUE),
							 rgb_layer("AR24", 10, 8, PREMUL) };
		struct fl_display_compose_target t = target("AR24", 30, 20);
		struct fl_display_frame f = { .target = t, .layers = l, .n_layers = 2 };
		struct fl_display_error e = { 0 };
		struct fl_display_compositor *comp = fl__display_compose_new();
		uint8_t *before = malloc(t.size);
		const void *maps[2] = { l[0].plane[0].map, l[1].plane[0].map };

		l[0].zpos = 0;
		l[1].zpos = 1;
		memcpy(before, t.map, t.size);
		bads[i].spoil(&f, l);
		fl_assert(comp);
		if (fl__display_compose(comp, &f, &e) != -EINVAL || e.err != -EINVAL ||
		    !strstr(e.msg, bads[i].msg))
			fl__test_fail(__FILE__, __LINE__, "%s: got %d \"%s\", want -EINVAL \"%s\"",
				      bads[i].what, e.err, e.msg, bads[i].msg);
		fl_assert_int_eq(fl__display_compose_check(&f, NULL), -EINVAL);
		fl_assert(memcmp(before, t.map, t.size) == 0);
		fl__display_compose_free(comp);
		free(before);
		free((void *)maps[0]);
		free((void *)maps[1]);
		free(t.map);
	}
}

FL_TEST(compose_png_refuses_what_the_compositor_refuses)
{
	struct fl_display_compose_target t = target("AR24", 8, 8);
	struct fl_display_error e = { 0 };
	char path[512];

	snprintf(path, sizeof(path), "%s/compose-png-bad.png", FL_TEST_BUILD_DIR);
	t.size -= 1;
	fl_assert_int_eq(fl__display_png_write(path, &t, &e), -EINVAL);
	fl_assert(strstr(e.msg, "destination plane 0: offset 0 + 8 lines"));
	t.size += 1;
	t.fourcc = fourcc("NV12");
	fl_assert_int_eq(fl__display_png_write(path, &t, &e), -EINVAL);
	t.fourcc = fourcc("AR24");
	fl_assert_int_eq(fl__display_png_write("/nonexistent/dir/x.png", &t, &e), -ENOENT);
	fl_assert(strstr(e.msg, "/nonexistent/dir/x.png: cannot create"));
	free(t.map);
}

/* SPDX-License-Identifier: MIT */
/*
 * Section "display": software composition (src/display/compose.c). Four
 * full-screen 1920×1080 ARGB8888 premultiplied layers onto an ARGB8888
 * destination, through the compositor, beside the bare pixman calls the
 * same frame needs (SRC of the bottom layer, OVER of the three others:
 * what the compositor itself reduces this frame to) and beside a memcpy of
 * the same 4 × 8.29 MB into the destination. Content as shared/spec
 * display.md §4 measured it: opaque, UI-like (runs of 64 pixels: 70 %
 * transparent, 20 % opaque, 10 % random alpha) and random alpha (every
 * pixel 1..254: no shortcut). Then one damaged 256×256 rect against the
 * full frame, and an NV12 layer (converted in C) against an ARGB one.
 *
 * memcpy, bare and compositor take turns round after round, so that all
 * see the same machine (these VMs drift by 2× from minute to minute); each
 * figure is the median of its rounds, and the _paired ratios the median of
 * same-round ratios.
 */
#include <errno.h>
#include <pixman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "compose.h"

#define W      1920
#define H      1080
#define NL     4
#define ROUNDS 7

enum { OPAQUE, UI, RANDOM, NR_CONTENT };

static const char *const content_name[NR_CONTENT] = { "opaque", "ui", "random" };

struct display_ctx {
	uint32_t *layer[NL];
	uint32_t *dst;
	pixman_image_t *pl[NL], *pd;
	struct fl_display_compositor *comp;
	struct fl_display_compose_layer l[NL];
	struct fl_display_frame frame;
};

static uint32_t rng = 0x12345678;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static uint32_t premul(uint32_t a)
{
	uint32_t v = a << 24;

	for (int sh = 0; sh < 24; sh += 8)
		v |= (rnd() % (a + 1)) << sh;
	return v;
}

static void fill(uint32_t *p, int content)
{
	for (size_t i = 0; i < (size_t)W * H; i += 64) {
		uint32_t pick = rnd() % 10;

		for (size_t j = i; j < i + 64 && j < (size_t)W * H; j++) {
			if (content == OPAQUE)
				p[j] = premul(255);
			else if (content == RANDOM)
				p[j] = premul(1 + rnd() % 254);
			else
				p[j] = pick < 7 ? 0 : pick < 9 ? premul(255) : premul(rnd() % 256);
		}
	}
}

static void setup(struct display_ctx *c)
{
	c->dst = aligned_alloc(64, (size_t)W * H * 4);
	c->pd = pixman_image_create_bits_no_clear(PIXMAN_a8r8g8b8, W, H, c->dst, W * 4);
	c->comp = fl__display_compose_new();
	if (!c->dst || !c->pd || !c->comp)
		fl__bench_die("display setup", ENOMEM);
	memset(c->dst, 0, (size_t)W * H * 4);
	for (int i = 0; i < NL; i++) {
		c->layer[i] = aligned_alloc(64, (size_t)W * H * 4);
		if (!c->layer[i])
			fl__bench_die("display setup", ENOMEM);
		c->pl[i] = pixman_image_create_bits_no_clear(PIXMAN_a8r8g8b8, W, H, c->layer[i],
							     W * 4);
		c->l[i] = (struct fl_display_compose_layer){
			.fourcc = FL_FOURCC('A', 'R', '2', '4'),
			.w = W,
			.h = H,
			.n_planes = 1,
			.plane = { { c->layer[i], (uint64_t)W * H * 4, 0, W * 4 } },
			.src_w = W << 16,
			.src_h = H << 16,
			.dst_w = W,
			.dst_h = H,
			.zpos = (uint32_t)i,
			.blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
			.alpha = 0xffff,
		};
	}
	c->frame = (struct fl_display_frame){
		.target = { c->dst, (uint64_t)W * H * 4, 0, W * 4, FL_FOURCC('A', 'R', '2', '4'), W,
			    H },
		.layers = c->l,
		.n_layers = NL,
	};
}

static void teardown(struct display_ctx *c)
{
	for (int i = 0; i < NL; i++) {
		pixman_image_unref(c->pl[i]);
		free(c->layer[i]);
	}
	pixman_image_unref(c->pd);
	fl__display_compose_free(c->comp);
	free(c->dst);
}

/* Per frame, in µs. */
static double b_memcpy(void *arg, long ops)
{
	struct display_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long k = 0; k < ops; k++)
		for (int i = 0; i < NL; i++)
			memcpy(c->dst, c->layer[i], (size_t)W * H * 4);
	return (double)(fl__bench_now_ns() - t0) / (double)ops / 1000;
}

static double b_bare(void *arg, long ops)
{
	struct display_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long k = 0; k < ops; k++)
		for (int i = 0; i < NL; i++)
			pixman_image_composite32(i ? PIXMAN_OP_OVER : PIXMAN_OP_SRC, c->pl[i], NULL,
						 c->pd, 0, 0, 0, 0, 0, 0, W, H);
	return (double)(fl__bench_now_ns() - t0) / (double)ops / 1000;
}

static double b_compose(void *arg, long ops)
{
	struct display_ctx *c = arg;
	struct fl_display_error e;
	uint64_t t0 = fl__bench_now_ns();

	for (long k = 0; k < ops; k++)
		if (fl__display_compose(c->comp, &c->frame, &e) < 0)
			fl__bench_die(e.msg, -e.err);
	return (double)(fl__bench_now_ns() - t0) / (double)ops / 1000;
}

static void four_layers(struct display_ctx *c, int content, int rounds, long frames)
{
	static const fl_bench_batch_fn fn[3] = { b_memcpy, b_bare, b_compose };
	double t[3][ROUNDS], over_bare[ROUNDS], over_memcpy[ROUNDS];
	char name[64];

	for (int i = 0; i < NL; i++)
		fill(c->layer[i], content);
	for (int k = 0; k < 3; k++)
		fn[k](c, 1);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 3; k++)
			t[k][r] = fn[k](c, frames);
		over_bare[r] = t[2][r] / t[1][r];
		over_memcpy[r] = t[2][r] / t[0][r];
	}
	if (content == 0)
		fl__bench_out("display_memcpy_4_layers", fl__bench_median(t[0], rounds), "us");
	fl__bench_outf(fl__bench_median(t[1], rounds), "us", "display_bare_pixman_%s",
		       content_name[content]);
	fl__bench_outf(fl__bench_median(t[2], rounds), "us", "display_compose_%s",
		       content_name[content]);
	snprintf(name, sizeof(name), "display_compose_%s", content_name[content]);
	{
		char bare[64], ratio[96];

		snprintf(bare, sizeof(bare), "display_bare_pixman_%s", content_name[content]);
		snprintf(ratio, sizeof(ratio), "ratio_display_compose_%s_over_bare",
			 content_name[content]);
		fl__bench_ratio(ratio, name, bare);
		fl__bench_outf(fl__bench_median(over_bare, rounds), "x",
			       "ratio_display_compose_%s_over_bare_paired", content_name[content]);
		snprintf(ratio, sizeof(ratio), "ratio_display_compose_%s_over_memcpy",
			 content_name[content]);
		fl__bench_ratio(ratio, name, "display_memcpy_4_layers");
		fl__bench_outf(fl__bench_median(over_memcpy, rounds), "x",
			       "ratio_display_compose_%s_over_memcpy_paired",
			       content_name[content]);
	}
}

/* One damaged 256×256 rect in the middle against the full frame, random
 * content (left in the layers by the last four_layers() call). */
static void damage(struct display_ctx *c, int rounds, long frames)
{
	const struct fl_display_compose_rect rect = { W / 2 - 128, H / 2 - 128, 256, 256 };
	double t[2][ROUNDS];

	for (int r = 0; r < rounds; r++) {
		c->frame.damage = NULL;
		c->frame.n_damage = 0;
		t[0][r] = b_compose(c, frames);
		c->frame.damage = &rect;
		c->frame.n_damage = 1;
		t[1][r] = b_compose(c, frames * 20);
	}
	c->frame.damage = NULL;
	c->frame.n_damage = 0;
	fl__bench_out("display_compose_full_frame", fl__bench_median(t[0], rounds), "us");
	fl__bench_out("display_compose_damage_256", fl__bench_median(t[1], rounds), "us");
	fl__bench_ratio("ratio_display_damage_256_over_full_frame", "display_compose_damage_256",
			"display_compose_full_frame");
}

/* One full-screen NV12 layer (its conversion is the compositor's own C
 * loop) against one ARGB8888 layer; both are drawn with SRC. */
static void nv12(struct display_ctx *c, int rounds, long frames)
{
	uint8_t *yuv = malloc((size_t)W * H * 3 / 2);
	struct fl_display_compose_layer l = c->l[0];
	double t[2][ROUNDS];

	if (!yuv)
		fl__bench_die("display nv12", ENOMEM);
	for (size_t i = 0; i < (size_t)W * H * 3 / 2; i++)
		yuv[i] = (uint8_t)rnd();
	for (int r = 0; r < rounds; r++) {
		c->frame.layers = &c->l[0];
		c->frame.n_layers = 1;
		t[0][r] = b_compose(c, frames);
		l.fourcc = FL_FOURCC('N', 'V', '1', '2');
		l.n_planes = 2;
		l.plane[0] = (struct fl_display_compose_plane){ yuv, (uint64_t)W * H, 0, W };
		l.plane[1] = (struct fl_display_compose_plane){ yuv + (size_t)W * H,
								(uint64_t)W * H / 2, 0, W };
		c->frame.layers = &l;
		t[1][r] = b_compose(c, frames);
	}
	c->frame.layers = c->l;
	c->frame.n_layers = NL;
	free(yuv);
	fl__bench_out("display_compose_argb_layer", fl__bench_median(t[0], rounds), "us");
	fl__bench_out("display_compose_nv12_layer", fl__bench_median(t[1], rounds), "us");
	fl__bench_ratio("ratio_display_nv12_over_argb_layer", "display_compose_nv12_layer",
			"display_compose_argb_layer");
}

void fl__bench_display(void)
{
	struct display_ctx c = { 0 };
	int rounds = fl__bench_quick ? 3 : ROUNDS;
	long frames = fl__bench_iters(10, 2);

	fl__bench_comment("display: 4 layers %dx%d ARGB8888 onto ARGB8888; memcpy, bare pixman "
			  "and the compositor take turns, %d rounds of %ld frames",
			  W, H, rounds, frames);
	setup(&c);
	for (int k = 0; k < NR_CONTENT; k++)
		four_layers(&c, k, rounds, frames);
	damage(&c, rounds, frames);
	nv12(&c, rounds, frames);
	teardown(&c);
}

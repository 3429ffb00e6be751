/* SPDX-License-Identifier: MIT */
/*
 * Section "outputs" (issue 18 item 8): what each display driver pays per
 * frame to show a 1920×1080 frame, beside a memcpy of the frame's 8.29 MB
 * in the same run. So far the terminal driver's picture
 * (src/drivers/display-terminal/term-encode.c): the frame scaled into
 * 200 × 60 cells of 24-bit half blocks, a frame that changes everywhere
 * (a moving gradient), one that changes in one 64 × 64 corner, and one
 * that does not change, with the bytes each writes to the terminal.
 * memcpy and the encoder take turns round after round, so that both see
 * the same machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "term-encode.h"

#define W 1920
#define H 1080

struct out_ctx {
	uint32_t *frame, *copy;
	struct fl_term_screen *screen;
	char *out;
	size_t cap;
	long bytes, frames;
	uint32_t tick;
	int mode; /* 0 everything moves, 1 a corner, 2 nothing */
};

/* The next frame: a gradient that moves a pixel a frame, everywhere or in a corner only. */
static void next_frame(struct out_ctx *c)
{
	uint32_t t = ++c->tick;

	if (c->mode == 2)
		return;
	for (uint32_t y = 0; y < (c->mode ? 64u : H); y++)
		for (uint32_t x = 0; x < (c->mode ? 64u : W); x++)
			c->frame[(size_t)y * W + x] =
				((x + t) & 0xff) << 16 | ((y + t) & 0xff) << 8 | ((x ^ y) & 0xff);
}

static double b_memcpy(void *arg, long ops)
{
	struct out_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		memcpy(c->copy, c->frame, (size_t)W * H * 4);
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_encode(void *arg, long ops)
{
	struct out_ctx *c = arg;
	uint64_t spent = 0;

	for (long i = 0; i < ops; i++) {
		uint64_t t0;
		long n;

		next_frame(c); /* not timed: the producer's work */
		t0 = fl__bench_now_ns();
		n = fl__term_encode(c->screen, c->frame, W, H, W * 4, c->out, c->cap);
		spent += fl__bench_now_ns() - t0;
		if (n < 0)
			fl__bench_die("fl__term_encode", (int)-n);
		c->bytes += n;
		c->frames++;
	}
	return (double)spent / (double)ops;
}

void fl__bench_outputs(void)
{
	static const char *const what[] = { "moving", "corner", "static" };
	struct out_ctx c = { 0 };
	long n = fl__bench_iters(40, 4);

	fl__bench_comment("section outputs: a 1920x1080 XRGB8888 frame shown by each driver, "
			  "beside a memcpy of its 8.29 MB; median of %d batches of %ld",
			  FL_BENCH_REPS, n);
	c.frame = calloc((size_t)W * H, 4);
	c.copy = calloc((size_t)W * H, 4);
	c.screen = fl__term_screen_new(200, 60);
	if (!c.frame || !c.copy || !c.screen)
		fl__bench_die("outputs set-up", ENOMEM);
	c.cap = fl__term_encode_max(c.screen);
	c.out = malloc(c.cap);
	if (!c.out)
		fl__bench_die("outputs set-up", ENOMEM);
	fl__bench_comment("outputs 1: the terminal driver's picture, 200 x 60 cells of half "
			  "blocks (200 x 120 pixels), only changed cells written");
	fl__bench_out("baseline_memcpy_1080p", fl__bench_batch_median(b_memcpy, &c, n), "ns");
	for (int m = 0; m < 3; m++) {
		char name[64], ratio[96];

		c.mode = m;
		c.bytes = c.frames = 0;
		next_frame(&c);
		fl__term_screen_invalidate(c.screen);
		fl__term_encode(c.screen, c.frame, W, H, W * 4, c.out, c.cap);
		snprintf(name, sizeof(name), "outputs_terminal_%s", what[m]);
		fl__bench_out(name, fl__bench_batch_median(b_encode, &c, n), "ns");
		snprintf(ratio, sizeof(ratio), "ratio_outputs_terminal_%s_over_memcpy", what[m]);
		fl__bench_ratio(ratio, name, "baseline_memcpy_1080p");
		snprintf(name, sizeof(name), "outputs_terminal_%s_bytes", what[m]);
		fl__bench_out(name, (double)c.bytes / (double)c.frames, "bytes");
	}
	fl__term_screen_free(c.screen);
	free(c.out);
	free(c.frame);
	free(c.copy);
}

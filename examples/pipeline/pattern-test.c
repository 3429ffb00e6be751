/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's pictures (pattern.h): each is a pure function of the frame number (the same
 * frame twice gives the same bytes, the next frame other bytes), carries its frame number in a
 * strip that reads back (from luma, or from the green channel of ARGB), and poison or flat
 * pictures never read as a number.
 * The app's rectangles never overlap (so a GPU's blend equals the CPU's) and stay inside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

static int failures;

#define CHECK(c, ...)                                                        \
	do {                                                                 \
		if (!(c)) {                                                  \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			failures++;                                          \
		}                                                            \
	} while (0)

enum { W = 320, H = 240 };

static uint8_t ya[W * H], uv0[W * H / 2], yb[W * H], uv1[W * H / 2], u1[W * H / 4], v1[W * H / 4];
static uint32_t a0[W * H], a1[W * H];

int main(void)
{
	static const uint32_t frames[] = { 0, 1, 2, 59, 60, 1000, 65535 };
	struct pattern_rect r[PATTERN_APP_RECTS];

	for (size_t k = 0; k < sizeof(frames) / sizeof(frames[0]); k++) {
		uint32_t f = frames[k];
		size_t n;

		pattern_camera_nv12(f, W, H, ya, W, uv0, W);
		pattern_camera_nv12(f, W, H, yb, W, uv1, W);
		CHECK(!memcmp(ya, yb, sizeof(ya)) && !memcmp(uv0, uv1, sizeof(uv0)),
		      "camera %u: the same frame twice is the same picture", f);
		CHECK(pattern_read_frame(ya, W, 1) == (int32_t)f, "camera %u: reads back %d", f,
		      pattern_read_frame(ya, W, 1));
		pattern_camera_nv12(f + 1, W, H, yb, W, uv1, W);
		CHECK(memcmp(ya + W * PATTERN_CELL, yb + W * PATTERN_CELL,
			     sizeof(ya) - W * PATTERN_CELL),
		      "camera %u: the next frame moves", f);

		pattern_video_i420(f, W, H, ya, W, u1, W / 2, v1, W / 2);
		CHECK(pattern_read_frame(ya, W, 1) == (int32_t)f, "video %u: reads back", f);

		pattern_statusbar_argb(f, W, 48, a0, W * 4);
		/* The green channel of ARGB8888 in memory (little endian: B, G, R, A). */
		CHECK(pattern_read_frame((uint8_t *)a0 + 1, W * 4, 4) == (int32_t)f,
		      "status bar %u: reads back", f);

		pattern_app_argb(f, W, H, a0, W * 4);
		pattern_app_argb(f, W, H, a1, W * 4);
		CHECK(!memcmp(a0, a1, sizeof(a0)), "app %u: deterministic", f);
		CHECK(pattern_read_frame((uint8_t *)a0 + 1, W * 4, 4) == (int32_t)f,
		      "app %u: reads back", f);
		n = pattern_app_rects(f, W, H, r);
		CHECK(n >= 2 && n <= PATTERN_APP_RECTS, "app %u: %zu rects", f, n);
		for (size_t i = 0; i < n; i++) {
			CHECK(r[i].x >= 0 && r[i].y >= 0 && (uint32_t)r[i].x + r[i].w <= W &&
				      (uint32_t)r[i].y + r[i].h <= H,
			      "app %u: rect %zu inside", f, i);
			CHECK((r[i].argb >> 24) >= ((r[i].argb >> 16) & 0xff) &&
				      (r[i].argb >> 24) >= ((r[i].argb >> 8) & 0xff) &&
				      (r[i].argb >> 24) >= (r[i].argb & 0xff),
			      "app %u: rect %zu premultiplied", f, i);
			for (size_t j = 0; j < i; j++)
				CHECK(!r[i].w || !r[i].h || !r[j].w || !r[j].h ||
					      r[i].x >= r[j].x + (int32_t)r[j].w ||
					      r[j].x >= r[i].x + (int32_t)r[i].w ||
					      r[i].y >= r[j].y + (int32_t)r[j].h ||
					      r[j].y >= r[i].y + (int32_t)r[i].h,
				      "app %u: rects %zu and %zu do not overlap", f, i, j);
		}
	}
	/* Flat pictures are no number: poison, black, white. */
	for (uint32_t i = 0; i < W * H; i++)
		a0[i] = PATTERN_POISON_ARGB;
	CHECK(pattern_read_frame((uint8_t *)a0 + 1, W * 4, 4) == -1, "poison (green) is no number");
	CHECK(pattern_read_frame((uint8_t *)a0 + 2, W * 4, 4) == -1, "poison (red) is no number");
	memset(ya, PATTERN_POISON_Y, sizeof(ya));
	CHECK(pattern_read_frame(ya, W, 1) == -1, "poison luma is no number");
	memset(ya, 255, sizeof(ya));
	CHECK(pattern_read_frame(ya, W, 1) == -1, "white is no number");
	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}

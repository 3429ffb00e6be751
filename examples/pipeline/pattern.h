/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's pictures (issue 19 items 4 and 7): what each producer draws for frame n,
 * deterministic per frame number, so that a frame captured from the display can be checked
 * against a reference rendering of the same frame numbers, and so that every layer carries its
 * frame number in the picture itself (a strip of bits a checker reads back).
 *
 * Sizes are the caller's; every function writes the whole buffer (pitches in bytes).
 */
#ifndef PIPELINE_PATTERN_H
#define PIPELINE_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The frame-number strip at (0, 0): PATTERN_CELLS cells of PATTERN_CELL x PATTERN_CELL pixels,
 * a light start cell, the number's PATTERN_BITS bits (light 1, dark 0, most significant
 * first) and a dark end cell, so that no flat picture (poison, black, white) reads as a number.
 */
#define PATTERN_BITS  16u
#define PATTERN_CELLS (PATTERN_BITS + 2u)
#define PATTERN_CELL  8u

/* The camera: NV12 (Y plane, then interleaved CbCr at half resolution); @w and @h even. */
void pattern_camera_nv12(uint32_t frame, uint32_t w, uint32_t h, uint8_t *y, uint32_t y_pitch,
			 uint8_t *uv, uint32_t uv_pitch);

/* The video: YUV420 (three planes, chroma at half resolution); @w and @h even. */
void pattern_video_i420(uint32_t frame, uint32_t w, uint32_t h, uint8_t *y, uint32_t y_pitch,
			uint8_t *u, uint32_t u_pitch, uint8_t *v, uint32_t v_pitch);

/* The status bar: ARGB8888, opaque. */
void pattern_statusbar_argb(uint32_t frame, uint32_t w, uint32_t h, uint32_t *px, uint32_t pitch);

/*
 * The app's UI: rectangles, premultiplied ARGB, that do not overlap, over transparent black, so
 * that a GPU's blend and the CPU's give the same bytes. The app draws them with GL; the
 * reference with pattern_app_argb().
 */
struct pattern_rect {
	int32_t x, y;
	uint32_t w, h;
	uint32_t argb; /* premultiplied */
};
#define PATTERN_APP_RECTS 8u
/* Frame @frame's rectangles in a @w x @h surface (clipped to it). Return: how many (<= 8). */
size_t pattern_app_rects(uint32_t frame, uint32_t w, uint32_t h,
			 struct pattern_rect out[PATTERN_APP_RECTS]);
/* The same, drawn on the CPU: the reference, and the app's picture where GL is not used. */
void pattern_app_argb(uint32_t frame, uint32_t w, uint32_t h, uint32_t *px, uint32_t pitch);

/*
 * The frame number a picture's strip holds, read from 8-bit luma (or any one 8-bit channel)
 * at @base with @stride bytes between lines and @step bytes between pixels.
 * Return: the number, or -1 when the strip is not one (another picture, or poison).
 */
int32_t pattern_read_frame(const uint8_t *base, size_t stride, size_t step);

/* The poison a producer fills a buffer with on dequeue in the test mode (item 7): ARGB and luma. */
#define PATTERN_POISON_ARGB 0xffff00ffu
#define PATTERN_POISON_Y    0x00u /* with chroma 255, 255: bright magenta too */

#endif

/* SPDX-License-Identifier: MIT */
/* The pipeline's pictures (pattern.h): pure functions of the frame number. */
#include <stdbool.h>
#include <string.h>

#include "pattern.h"

/* Luma of the strip's cells: far from each other and from the poison, readable after scaling. */
#define BIT_ON	235u
#define BIT_OFF 16u

/* The frame number's 16 bits as cells of luma @on/@off, most significant first. */
/* Cell @c of the strip for @frame: light or dark. */
static bool cell_on(uint32_t frame, uint32_t c)
{
	if (c == 0)
		return true;
	if (c == PATTERN_CELLS - 1)
		return false;
	return (frame >> (PATTERN_BITS - c)) & 1;
}

static void strip_y(uint32_t frame, uint8_t *y, uint32_t pitch, uint32_t w, uint32_t h)
{
	for (uint32_t row = 0; row < PATTERN_CELL && row < h; row++)
		for (uint32_t c = 0; c < PATTERN_CELLS; c++) {
			uint8_t v = cell_on(frame, c) ? BIT_ON : BIT_OFF;

			for (uint32_t x = c * PATTERN_CELL; x < (c + 1) * PATTERN_CELL && x < w;
			     x++)
				y[(size_t)row * pitch + x] = v;
		}
}

static void strip_argb(uint32_t frame, uint32_t *px, uint32_t pitch, uint32_t w, uint32_t h)
{
	for (uint32_t row = 0; row < PATTERN_CELL && row < h; row++) {
		uint32_t *line = (uint32_t *)((uint8_t *)px + (size_t)row * pitch);

		for (uint32_t c = 0; c < PATTERN_CELLS; c++) {
			uint32_t v = cell_on(frame, c) ? BIT_ON : BIT_OFF;

			for (uint32_t x = c * PATTERN_CELL; x < (c + 1) * PATTERN_CELL && x < w;
			     x++)
				line[x] = 0xff000000u | v << 16 | v << 8 | v;
		}
	}
}

void pattern_camera_nv12(uint32_t frame, uint32_t w, uint32_t h, uint8_t *y, uint32_t y_pitch,
			 uint8_t *uv, uint32_t uv_pitch)
{
	/* Eight vertical colour bars sliding right by 4 pixels a frame, and a moving square. */
	static const uint8_t bars[8][3] = { { 180, 128, 128 }, { 168, 44, 136 }, { 145, 147, 44 },
					    { 133, 63, 52 },   { 63, 193, 204 }, { 51, 109, 212 },
					    { 28, 212, 120 },  { 16, 128, 128 } };
	uint32_t bar_w = w / 8 ? w / 8 : 1, sq = h / 4, sx = (frame * 6) % (w > sq ? w - sq : 1),
		 sy = (frame * 3) % (h > sq ? h - sq : 1);

	for (uint32_t j = 0; j < h; j++)
		for (uint32_t i = 0; i < w; i++) {
			uint32_t bar = ((i + w - (frame * 4) % w) % w) / bar_w % 8;
			bool in_sq = i >= sx && i < sx + sq && j >= sy && j < sy + sq;

			y[(size_t)j * y_pitch + i] = in_sq ? 235 : bars[bar][0];
		}
	for (uint32_t j = 0; j < h / 2; j++)
		for (uint32_t i = 0; i < w / 2; i++) {
			uint32_t bar = ((2 * i + w - (frame * 4) % w) % w) / bar_w % 8;
			bool in_sq =
				2 * i >= sx && 2 * i < sx + sq && 2 * j >= sy && 2 * j < sy + sq;

			uv[(size_t)j * uv_pitch + 2 * i] = in_sq ? 128 : bars[bar][1];
			uv[(size_t)j * uv_pitch + 2 * i + 1] = in_sq ? 128 : bars[bar][2];
		}
	strip_y(frame, y, y_pitch, w, h);
	/* The strip's chroma neutral, so that it reads the same in RGB. */
	for (uint32_t j = 0; j < PATTERN_CELL / 2 && j < h / 2; j++)
		memset(uv + (size_t)j * uv_pitch, 128,
		       (PATTERN_CELLS * PATTERN_CELL < w ? PATTERN_CELLS * PATTERN_CELL : w));
}

void pattern_video_i420(uint32_t frame, uint32_t w, uint32_t h, uint8_t *y, uint32_t y_pitch,
			uint8_t *u, uint32_t u_pitch, uint8_t *v, uint32_t v_pitch)
{
	/* A luma ramp rolling up a line a frame, with chroma waves crossing it. */
	for (uint32_t j = 0; j < h; j++)
		for (uint32_t i = 0; i < w; i++)
			y[(size_t)j * y_pitch + i] =
				(uint8_t)(16 + ((j + frame) * 219 / (h ? h : 1)) % 220);
	for (uint32_t j = 0; j < h / 2; j++)
		for (uint32_t i = 0; i < w / 2; i++) {
			u[(size_t)j * u_pitch + i] = (uint8_t)(64 + (i * 2 + frame * 5) % 128);
			v[(size_t)j * v_pitch + i] = (uint8_t)(64 + (j * 3 + frame * 7) % 128);
		}
	strip_y(frame, y, y_pitch, w, h);
	for (uint32_t j = 0; j < PATTERN_CELL / 2 && j < h / 2; j++) {
		uint32_t n = PATTERN_CELLS * PATTERN_CELL / 2 < w / 2
				     ? PATTERN_CELLS * PATTERN_CELL / 2
				     : w / 2;

		memset(u + (size_t)j * u_pitch, 128, n);
		memset(v + (size_t)j * v_pitch, 128, n);
	}
}

void pattern_statusbar_argb(uint32_t frame, uint32_t w, uint32_t h, uint32_t *px, uint32_t pitch)
{
	/* Dark, with a block that walks across once every 2 s at 60 Hz and a seconds tick. */
	uint32_t bx = (uint32_t)((uint64_t)(frame % 120) * (w > 40 ? w - 40 : 1) / 120);

	for (uint32_t j = 0; j < h; j++) {
		uint32_t *line = (uint32_t *)((uint8_t *)px + (size_t)j * pitch);

		for (uint32_t i = 0; i < w; i++)
			line[i] = i >= bx && i < bx + 40 ? 0xff3a86ffu
				  : (frame / 60) % 2 && i >= w - 24 && j >= h / 4 && j < h * 3 / 4
					  ? 0xffffbe0bu
					  : 0xff181820u;
	}
	strip_argb(frame, px, pitch, w, h);
}

size_t pattern_app_rects(uint32_t frame, uint32_t w, uint32_t h,
			 struct pattern_rect out[PATTERN_APP_RECTS])
{
	/*
	 * A card list: cards in a column, scrolling up, each with a translucent shadow strip
	 * beside it; none overlap, so GL's blend over transparent black equals the CPU's.
	 */
	static const uint32_t colours[] = { 0xff2ec4b6u, 0xffe71d36u, 0xffff9f1cu, 0xff8338ecu };
	uint32_t card_h = h / 5 ? h / 5 : 1, gap = card_h / 4 ? card_h / 4 : 1;
	uint32_t period = card_h + gap, scroll = (frame * 2) % period;
	size_t n = 0;

	for (uint32_t k = 0; n + 2 <= PATTERN_APP_RECTS; k++) {
		int32_t top = (int32_t)(PATTERN_CELL * 2 + k * period) - (int32_t)scroll;
		uint32_t c = colours[(k + frame * 2 / period) % 4];

		if (top >= (int32_t)h)
			break;
		out[n++] = (struct pattern_rect){ (int32_t)(w / 8), top, w / 2, card_h, c };
		/* Half-transparent, premultiplied: (0x80, colour / 2). */
		out[n++] = (struct pattern_rect){ (int32_t)(w / 8 + w / 2 + w / 32), top, w / 16,
						  card_h, 0x80000000u | ((c >> 1) & 0x007f7f7fu) };
	}
	/* Clip to the surface. */
	for (size_t i = 0; i < n; i++) {
		struct pattern_rect *r = &out[i];

		if (r->y < 0) {
			r->h = (uint32_t)-r->y >= r->h ? 0 : r->h - (uint32_t)-r->y;
			r->y = 0;
		}
		if ((uint32_t)r->y + r->h > h)
			r->h = h - (uint32_t)r->y;
		if ((uint32_t)r->x + r->w > w)
			r->w = (uint32_t)r->x >= w ? 0 : w - (uint32_t)r->x;
	}
	return n;
}

void pattern_app_argb(uint32_t frame, uint32_t w, uint32_t h, uint32_t *px, uint32_t pitch)
{
	struct pattern_rect r[PATTERN_APP_RECTS];
	size_t n = pattern_app_rects(frame, w, h, r);

	for (uint32_t j = 0; j < h; j++)
		memset((uint8_t *)px + (size_t)j * pitch, 0, (size_t)w * 4);
	for (size_t k = 0; k < n; k++)
		for (uint32_t j = 0; j < r[k].h; j++) {
			uint32_t *line =
				(uint32_t *)((uint8_t *)px + (size_t)(r[k].y + (int32_t)j) * pitch);

			for (uint32_t i = 0; i < r[k].w; i++)
				line[r[k].x + (int32_t)i] = r[k].argb;
		}
	/* The strip, opaque, top-left, over the cards' margin. */
	strip_argb(frame, px, pitch, w, h);
}

int32_t pattern_read_frame(const uint8_t *base, size_t stride, size_t step)
{
	uint32_t v = 0;

	for (uint32_t c = 0; c < PATTERN_CELLS; c++) {
		/* The cell's centre: a scaled or filtered picture keeps it. */
		uint8_t s = base[(PATTERN_CELL / 2) * stride +
				 (c * PATTERN_CELL + PATTERN_CELL / 2) * step];
		int on = s >= BIT_ON - 40 ? 1 : s <= BIT_OFF + 40 ? 0 : -1;

		if (on < 0 || (c == 0 && !on) || (c == PATTERN_CELLS - 1 && on))
			return -1;
		if (c > 0 && c < PATTERN_CELLS - 1)
			v = v << 1 | (uint32_t)on;
	}
	return (int32_t)v;
}

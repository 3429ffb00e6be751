/* SPDX-License-Identifier: MIT */
/* A frame as half blocks in a 24-bit terminal (term-encode.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "term-encode.h"

/* A cell's two pixels; NONE: not known to be on the terminal. */
#define NONE 0xffffffffu

struct cell {
	uint32_t up, lo;
};

struct fl_term_screen {
	unsigned int cols, rows;
	int valid; /* the terminal shows @shown */
	struct cell *shown;
	uint32_t *pic; /* the new picture, cols × 2 rows */
	/* The column ranges of the last frame size, cached. */
	uint32_t *sx0, *sx1;
	/* A line of picture pixels' sums: red and blue (red at bit 32), and green. */
	uint64_t *acc_rb;
	uint32_t *acc_g;
};

struct fl_term_screen *fl__term_screen_new(unsigned int cols, unsigned int rows)
{
	struct fl_term_screen *s;

	if (!cols || !rows || cols > FL_TERM_MAX_COLS || rows > FL_TERM_MAX_ROWS)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cols = cols;
	s->rows = rows;
	s->shown = calloc((size_t)cols * rows, sizeof(*s->shown));
	s->pic = calloc((size_t)cols * rows * 2, sizeof(*s->pic));
	s->sx0 = calloc(cols, sizeof(*s->sx0));
	s->sx1 = calloc(cols, sizeof(*s->sx1));
	s->acc_rb = calloc(cols, sizeof(*s->acc_rb));
	s->acc_g = calloc(cols, sizeof(*s->acc_g));
	if (!s->shown || !s->pic || !s->sx0 || !s->sx1 || !s->acc_rb || !s->acc_g) {
		fl__term_screen_free(s);
		return NULL;
	}
	return s;
}

void fl__term_screen_free(struct fl_term_screen *s)
{
	if (!s)
		return;
	free(s->shown);
	free(s->pic);
	free(s->sx0);
	free(s->sx1);
	free(s->acc_rb);
	free(s->acc_g);
	free(s);
}

void fl__term_screen_invalidate(struct fl_term_screen *s)
{
	s->valid = 0;
}

void fl__term_screen_fit(const struct fl_term_screen *s, uint32_t w, uint32_t h,
			 unsigned int *ret_x, unsigned int *ret_y, unsigned int *ret_w,
			 unsigned int *ret_h)
{
	uint64_t W = s->cols, H = (uint64_t)s->rows * 2, pw, ph;

	/* The largest w:h rect inside W × H, in integers: compare w·H with h·W. */
	if (!w || !h) {
		pw = ph = 0;
	} else if ((uint64_t)w * H >= (uint64_t)h * W) {
		pw = W;
		ph = ((uint64_t)h * W + w / 2) / w;
	} else {
		ph = H;
		pw = ((uint64_t)w * H + h / 2) / h;
	}
	if (w && h) {
		pw = pw ? pw : 1;
		ph = ph ? ph : 1;
	}
	*ret_x = (unsigned int)((W - pw) / 2);
	*ret_y = (unsigned int)((H - ph) / 2);
	*ret_w = (unsigned int)pw;
	*ret_h = (unsigned int)ph;
}

/*
 * The picture @s->pic of the frame: scaled into its rect, black around,
 * each pixel the rounded average of the frame pixels it covers. The frame
 * is read once, line by line: a line's pixels are summed into their
 * picture column's accumulators, red and blue together in one 64-bit
 * word (red at bit 32), so that a frame costs little more than reading it.
 */
static void picture(struct fl_term_screen *s, const void *px, uint32_t w, uint32_t h,
		    uint32_t pitch)
{
	unsigned int rx, ry, rw, rh, W = s->cols, H = s->rows * 2;
	uint64_t *rb = s->acc_rb;
	uint32_t *g = s->acc_g;

	fl__term_screen_fit(s, w, h, &rx, &ry, &rw, &rh);
	memset(s->pic, 0, (size_t)W * H * sizeof(*s->pic));
	/* Source columns of each picture column: at least one, the ranges tiling the frame. */
	for (unsigned int tx = 0; tx < rw; tx++) {
		s->sx0[tx] = (uint32_t)((uint64_t)tx * w / rw);
		s->sx1[tx] = (uint32_t)((uint64_t)(tx + 1) * w / rw);
		if (s->sx1[tx] <= s->sx0[tx])
			s->sx1[tx] = s->sx0[tx] + 1;
	}
	for (unsigned int ty = 0; ty < rh; ty++) {
		uint32_t y0 = (uint32_t)((uint64_t)ty * h / rh),
			 y1 = (uint32_t)((uint64_t)(ty + 1) * h / rh);
		uint32_t *out = s->pic + (size_t)(ry + ty) * W + rx;

		if (y1 <= y0)
			y1 = y0 + 1;
		memset(rb, 0, rw * sizeof(*rb));
		memset(g, 0, rw * sizeof(*g));
		for (uint32_t y = y0; y < y1; y++) {
			const uint32_t *line =
				(const uint32_t *)((const uint8_t *)px + (size_t)y * pitch);

			for (unsigned int tx = 0; tx < rw; tx++) {
				uint64_t a = 0;
				uint32_t b = 0;

				for (uint32_t x = s->sx0[tx]; x < s->sx1[tx]; x++) {
					uint32_t p = line[x];

					a += (uint64_t)(p & 0x00ff0000u) << 16 | (p & 0xffu);
					b += (p >> 8) & 0xffu;
				}
				rb[tx] += a;
				g[tx] += b;
			}
		}
		for (unsigned int tx = 0; tx < rw; tx++) {
			uint64_t n = (uint64_t)(s->sx1[tx] - s->sx0[tx]) * (y1 - y0);
			uint64_t r = ((rb[tx] >> 32) + n / 2) / n,
				 bl = ((rb[tx] & 0xffffffffu) + n / 2) / n;

			out[tx] = (uint32_t)r << 16 | (uint32_t)((g[tx] + n / 2) / n) << 8 |
				  (uint32_t)bl;
		}
	}
}

size_t fl__term_encode_max(const struct fl_term_screen *s)
{
	/* Per cell: a cursor move (11), two SGR colours (19 each), the half block (3). */
	return (size_t)s->cols * s->rows * 52 + 64;
}

struct out {
	char *p;
};

static void put_str(struct out *o, const char *str, size_t len)
{
	memcpy(o->p, str, len);
	o->p += len;
}

/* @v in decimal: a terminal gets thousands of these a frame, printf() is too slow. */
static void put_u(struct out *o, unsigned int v)
{
	char tmp[10];
	size_t n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*o->p++ = tmp[--n];
}

/* ESC [ @row ; @col H (1-based). */
static void put_move(struct out *o, unsigned int row, unsigned int col)
{
	put_str(o, "\x1b[", 2);
	put_u(o, row);
	*o->p++ = ';';
	put_u(o, col);
	*o->p++ = 'H';
}

/* SGR 24-bit colour, foreground (38) or background (48). */
static void put_colour(struct out *o, unsigned int which, uint32_t c)
{
	put_str(o, which == 38 ? "\x1b[38;2;" : "\x1b[48;2;", 7);
	put_u(o, c >> 16);
	*o->p++ = ';';
	put_u(o, (c >> 8) & 0xff);
	*o->p++ = ';';
	put_u(o, c & 0xff);
	*o->p++ = 'm';
}

long fl__term_encode(struct fl_term_screen *s, const void *px, uint32_t w, uint32_t h,
		     uint32_t pitch, char *out, size_t cap)
{
	struct out o = { out };
	uint32_t fg = NONE, bg = NONE;
	unsigned int cur_r = ~0u, cur_c = ~0u;
	int wrote = 0;

	if (cap < fl__term_encode_max(s))
		return -ENOSPC;
	picture(s, px, w, h, pitch);
	if (!s->valid) {
		/* Reset, clear, hide the cursor: then every cell is written. */
		put_str(&o, "\x1b[0m\x1b[2J\x1b[?25l", 14);
		for (size_t i = 0; i < (size_t)s->cols * s->rows; i++)
			s->shown[i] = (struct cell){ NONE, NONE };
		s->valid = 1;
		wrote = 1;
	}
	for (unsigned int r = 0; r < s->rows; r++) {
		const uint32_t *up = s->pic + (size_t)2 * r * s->cols, *lo = up + s->cols;

		for (unsigned int c = 0; c < s->cols; c++) {
			struct cell *cell = &s->shown[(size_t)r * s->cols + c];

			if (cell->up == up[c] && cell->lo == lo[c])
				continue;
			if (cur_r != r || cur_c != c)
				put_move(&o, r + 1, c + 1);
			/* Both halves alike: a space in the background colour, no foreground needed. */
			if (up[c] == lo[c]) {
				if (bg != lo[c])
					put_colour(&o, 48, lo[c]);
				bg = lo[c];
				*o.p++ = ' ';
			} else {
				if (fg != up[c])
					put_colour(&o, 38, up[c]);
				if (bg != lo[c])
					put_colour(&o, 48, lo[c]);
				fg = up[c];
				bg = lo[c];
				put_str(&o, "\xe2\x96\x80", 3); /* U+2580 UPPER HALF BLOCK */
			}
			*cell = (struct cell){ up[c], lo[c] };
			cur_r = r;
			/* The last column leaves the cursor there (deferred wrap): move again. */
			cur_c = c + 1 < s->cols ? c + 1 : ~0u;
			wrote = 1;
		}
	}
	if (wrote)
		put_str(&o, "\x1b[0m", 4);
	return (long)(o.p - out);
}

uint32_t fl__term_screen_pixel(const struct fl_term_screen *s, unsigned int col, unsigned int row,
			       int lower)
{
	const struct cell *c = &s->shown[(size_t)row * s->cols + col];

	return lower ? c->lo : c->up;
}

/* SPDX-License-Identifier: MIT */
/*
 * The built-in bitmap font (src/display/font.h): every printable ASCII
 * glyph drawn, distinct and inside its 5 × 7 box; drawing clipped at every
 * edge, opaque or not, scaled. The sheet of all glyphs is written as PNG
 * (meson-logs/display-frames/font.png) for people to look at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "display-png.h"
#include "font.h"
#include "runner.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')

FL_TEST(font_glyphs_are_drawn_distinct_and_inside_their_box)
{
	size_t drawn = 0;

	for (uint32_t c = 32; c < 127; c++) {
		const uint8_t *g = fl__font_glyph(c);
		int on = 0;

		for (int r = 0; r < FL_FONT_GLYPH_H; r++) {
			fl_assert((g[r] & ~0x1fu) == 0);
			on |= g[r];
		}
		fl_assert(c == ' ' ? !on : on != 0);
		drawn += on != 0;
		for (uint32_t d = 32; d < c; d++)
			fl_assert(memcmp(g, fl__font_glyph(d), FL_FONT_GLYPH_H) != 0);
	}
	fl_assert_int_eq(drawn, 94);
	/* Outside printable ASCII: one box, not a glyph of ASCII's. */
	fl_assert(fl__font_glyph(0x7f) == fl__font_glyph(0xe9));
	fl_assert(memcmp(fl__font_glyph(0x7f), fl__font_glyph('O'), FL_FONT_GLYPH_H) != 0);
}

FL_TEST(font_draws_clipped_scaled_and_transparent)
{
	enum { W = 40, H = 20, G = 8 }; /* G: a guard band around the W × H picture */
	uint32_t buf[(H + 2 * G) * (W + 2 * G)], *pic = buf + G * (W + 2 * G) + G;
	int pen;

	for (size_t i = 0; i < sizeof(buf) / 4; i++)
		buf[i] = 0xdeadbeef;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			pic[y * (W + 2 * G) + x] = 0x11111111;
	/* Off every edge at once, scale 2: "H" starts 3 pixels left of and above the picture. */
	pen = fl__font_draw(pic, W + 2 * G, W, H, -3, -3, 2, "HI", 0xffffff, 0x000000, 1);
	fl_assert_int_eq(pen, -3 + 2 * 2 * FL_FONT_CELL_W);
	fl__font_draw(pic, W + 2 * G, W, H, W - 4, H - 4, 2, "W", 0xffffff, 0x000000, 1);
	/* Nothing outside the picture was written. */
	for (int y = 0; y < H + 2 * G; y++)
		for (int x = 0; x < W + 2 * G; x++)
			if (y < G || y >= G + H || x < G || x >= G + W)
				fl_assert_int_eq(buf[y * (W + 2 * G) + x], 0xdeadbeef);
	/* "H" at (-3, -3) scaled 2: picture (x, y) is glyph ((x + 3) / 2, (y + 3) / 2). */
	fl_assert_int_eq(pic[0 * (W + 2 * G) + 0], 0x000000); /* glyph (1, 1): inside the H */
	fl_assert_int_eq(pic[0 * (W + 2 * G) + 5], 0xffffff); /* glyph (4, 1): its right stroke */
	fl_assert_int_eq(pic[3 * (W + 2 * G) + 1], 0xffffff); /* glyph (2, 3): its crossbar */
	/* Not opaque: the cell's background stays as it was. */
	fl__font_draw(pic, W + 2 * G, W, H, 30, 10, 1, ".", 0x00ff00, 0x000000, 0);
	fl_assert_int_eq(pic[10 * (W + 2 * G) + 30], 0x11111111);
	fl_assert_int_eq(pic[(10 + 5) * (W + 2 * G) + 30 + 1], 0x00ff00);
}

FL_TEST(font_sheet_as_png)
{
	enum { COLS = 16, ROWS = 6, S = 3 };
	uint32_t w = COLS * FL_FONT_CELL_W * S + 2 * S, h = ROWS * FL_FONT_CELL_H * S + 2 * S;
	uint32_t *px = calloc((size_t)w * h, 4);
	const char *dir = getenv("FL_TEST_FRAME_DIR");
	struct fl_display_compose_target t = { px, (uint64_t)w * h * 4, 0, w * 4, XR24, w, h };
	struct fl_display_error e;
	char path[512], s[2] = { 0, 0 };

	fl_assert(px != NULL);
	for (uint32_t c = 32; c < 128; c++) {
		s[0] = (char)c;
		fl__font_draw(px, w, w, h, S + (int)((c - 32) % COLS) * FL_FONT_CELL_W * S,
			      S + (int)((c - 32) / COLS) * FL_FONT_CELL_H * S, S, s, 0xf0f0f0,
			      (c & 1) ? 0x203040 : 0x304050, 1);
	}
	if (!dir || !*dir)
		dir = FL_TEST_FRAME_DEFAULT_DIR;
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/font.png", dir);
	fl_assert_int_eq(fl__display_png_write(path, &t, &e), 0);
	printf("frame: %s\n", path);
	free(px);
}

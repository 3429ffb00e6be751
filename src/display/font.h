/* SPDX-License-Identifier: MIT */
/*
 * A built-in bitmap font for what fenceline draws itself (the recovery
 * console's menu, the pipeline demo's status bar): printable ASCII as
 * 5 × 7 glyphs in 6 × 8 cells (a column and a row of space), scalable by
 * whole factors. Anything else shows as a box. Pure code, no allocation.
 */
#ifndef FL_DISPLAY_FONT_H
#define FL_DISPLAY_FONT_H

#include <stdint.h>

#define FL_FONT_GLYPH_W 5
#define FL_FONT_GLYPH_H 7
#define FL_FONT_CELL_W	6
#define FL_FONT_CELL_H	8

/* The 7 rows of @ch's glyph, bit 4 the leftmost pixel (a box outside printable ASCII). */
const uint8_t *fl__font_glyph(uint32_t ch);

/*
 * Draw @text (bytes, each a character) at (@x, @y), each pixel @scale ×
 * @scale, into 32-bit pixels @px (@stride pixels a line, @w × @h, clipped):
 * the glyphs' pixels in @fg, the rest of each cell in @bg when @opaque,
 * untouched otherwise.
 * Return: the x where the next character would go.
 */
int fl__font_draw(uint32_t *px, uint32_t stride, uint32_t w, uint32_t h, int x, int y,
		  unsigned int scale, const char *text, uint32_t fg, uint32_t bg, int opaque);

#endif /* FL_DISPLAY_FONT_H */

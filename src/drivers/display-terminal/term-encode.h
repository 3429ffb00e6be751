/* SPDX-License-Identifier: MIT */
/*
 * The terminal display driver's picture (docs/display.md, "The terminal
 * driver"): an XRGB8888 frame shown in a terminal of C × R cells with
 * 24-bit colour, each cell the upper half block "▀" with the upper pixel
 * as its foreground and the lower one as its background, so the picture is
 * C × 2R square-ish pixels. The frame is scaled to fit, its aspect kept
 * (terminal cells are about twice as tall as wide, which the half blocks
 * undo), centred, black around it; each pixel is the average of the frame
 * pixels it covers.
 *
 * Only the cells that changed since the last frame are written, with the
 * fewest colour changes, so a static screen costs nothing and a small
 * change a few bytes. Pure code: no terminal, no I/O.
 */
#ifndef FL_TERM_ENCODE_H
#define FL_TERM_ENCODE_H

#include <stddef.h>
#include <stdint.h>

/* The largest terminal it draws on; bigger ones get this much, top-left. */
#define FL_TERM_MAX_COLS 1000
#define FL_TERM_MAX_ROWS 500

struct fl_term_screen;

/* A screen of @cols × @rows cells, nothing drawn yet. NULL without memory or for 0 or too big. */
struct fl_term_screen *fl__term_screen_new(unsigned int cols, unsigned int rows);
void fl__term_screen_free(struct fl_term_screen *s);

/*
 * Forget what the terminal shows (it was resized or cleared): the next
 * encode writes every cell, after clearing the screen.
 */
void fl__term_screen_invalidate(struct fl_term_screen *s);

/*
 * The picture's place on the screen for a frame of @w × @h: the pixel rect
 * (cells' columns, half-rows) it is scaled into, the rest black.
 */
void fl__term_screen_fit(const struct fl_term_screen *s, uint32_t w, uint32_t h,
			 unsigned int *ret_x, unsigned int *ret_y, unsigned int *ret_w,
			 unsigned int *ret_h);

/*
 * Encode the frame (@w × @h XRGB8888 pixels, @pitch bytes a line, at @px)
 * as the bytes that turn what the terminal shows into it: cursor moves,
 * SGR 24-bit colours, half blocks; nothing when nothing changed. The
 * cursor is left hidden, the attributes reset.
 * Return: the bytes written to @out (at most @cap; fl__term_encode_max()
 * is always enough), or -ENOSPC when @cap is too small (nothing is taken
 * as shown then).
 */
long fl__term_encode(struct fl_term_screen *s, const void *px, uint32_t w, uint32_t h,
		     uint32_t pitch, char *out, size_t cap);

/* The most bytes one encode of @s can write. */
size_t fl__term_encode_max(const struct fl_term_screen *s);

/* The colour (0xRRGGBB) the screen shows at cell (@col, @row), upper or lower half. */
uint32_t fl__term_screen_pixel(const struct fl_term_screen *s, unsigned int col, unsigned int row,
			       int lower);

#endif /* FL_TERM_ENCODE_H */

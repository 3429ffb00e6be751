/* SPDX-License-Identifier: MIT */
/*
 * fl-recovery (docs/fl-recovery.md): a recovery console as Android's
 * recovery draws one through minui, on the libadf drop-in's simple-buffer
 * path only, so it runs unchanged on every fenceline display driver.
 *   gr.c    - the display: a simple post configuration, two simple buffers,
 *             flips with release fences (libadf and libsync only);
 *   ui.c    - the picture: title, menu, log pane, in the built-in font;
 *   input.c - keys from the terminal (stdin), evdev keyboards and the
 *             display's own key events (the terminal driver's), as evdev
 *             key codes;
 *   main.c  - options and the loop.
 */
#ifndef FL_RECOVERY_H
#define FL_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "term-input.h"

/* ---- gr.c ---- */

struct gr {
	uint32_t w, h; /* the current mode */
	uint32_t format; /* XRGB8888, else RGB565: what the engine scans out */
	uint32_t *canvas; /* w × h XRGB8888: ui.c draws here, gr_flip() converts */
	int intf; /* the interface's fd */
	int dev; /* the device's fd (its driver events: the display's keys) */
	/* Private. */
	void *priv;
};

/*
 * Open display device @device (-1: the first with a simple post
 * configuration), find its simple post configuration for XRGB8888 or
 * RGB565, attach, unblank, allocate two simple buffers. Prints why on
 * stderr on failure. Return: 0 or a negative errno.
 */
int gr_init(struct gr *g, int device);
/*
 * Show the canvas: wait for the back buffer's release fence, copy the
 * canvas into it, post it with a release fence. Return: 0 or a negative errno.
 */
int gr_flip(struct gr *g);
/*
 * Free what gr_init() made, once the last frame is on screen: it stays
 * there, as ADF leaves it.
 */
void gr_exit(struct gr *g);

/* ---- ui.c ---- */

#define UI_MAX_ITEMS 32
#define UI_MAX_LOG   256

struct ui {
	const char *title;
	const char *items[UI_MAX_ITEMS];
	size_t n_items;
	size_t selected;
	char *log[UI_MAX_LOG]; /* a ring, oldest first from log_first */
	size_t log_first, n_log;
};

/* The pixel rects of what ui_draw() drew, for --layout and tests. */
struct ui_rect {
	int x, y, w, h;
};

/* Add a line to the log pane (and stdout), as recovery's ui_print(). */
void ui_log(struct ui *ui, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Draw the whole screen into @g's canvas. */
void ui_draw(const struct ui *ui, struct gr *g);
/*
 * The layout ui_draw() uses on a @w × @h screen: the font's scale, the
 * item @i's rect (the highlight bar), the log line @i's rect (0 the
 * oldest shown), and how many log lines show.
 */
unsigned int ui_scale(uint32_t w, uint32_t h);
struct ui_rect ui_item_rect(uint32_t w, uint32_t h, size_t i);
struct ui_rect ui_log_rect(uint32_t w, uint32_t h, size_t n_items, size_t i);
size_t ui_log_lines(uint32_t w, uint32_t h, size_t n_items);
void ui_free(struct ui *ui);

/* The colours, XRGB8888. */
#define UI_BG	     0x000000u
#define UI_TITLE     0xffffffu
#define UI_ITEM	     0xc0c0c0u
#define UI_HIGHLIGHT 0x0040a0u
#define UI_SELECTED  0xffffffu
#define UI_LOG	     0x00c000u
#define UI_RULE	     0x606060u

/* ---- input.c ---- */

struct input;

/*
 * Keys from the terminal on stdin when @stdin_keys (raw mode while it is a
 * tty, restored by input_free(); a pipe is read the same way, without raw
 * mode), evdev
 * keyboards under /dev/input that this process may read (@evdev), and the
 * display's key events on device fd @display_dev (-1: none; a display
 * whose driver has none is left alone).
 * Return: NULL without memory.
 */
struct input *input_new(bool evdev, bool stdin_keys, int display_dev);
/*
 * Wait up to @timeout_ms (-1: forever) for keys and call @key for each.
 * Return: 1 keys came, 0 timed out, -ENODATA when no source is left
 * (stdin at its end and nothing else to read), -EPIPE when the display
 * whose keys it reads went away.
 */
int input_wait(struct input *in, int timeout_ms,
	       void (*key)(const struct fl_term_key *k, void *data), void *data);
void input_free(struct input *in);

#endif /* FL_RECOVERY_H */

/* SPDX-License-Identifier: MIT */
/*
 * The terminal display driver's keyboard (docs/display.md, "The terminal
 * driver"): the bytes a terminal in raw mode sends, decoded into keys as
 * evdev names them (<linux/input-event-codes.h>: KEY_UP, KEY_ENTER, ...)
 * with the character typed, so that a program reads the same key events
 * whether they come from a terminal or an evdev keyboard. xterm's
 * sequences (what tmux, VTE, kitty and the Linux console send for the
 * keys below): arrows, Home/End, Insert/Delete, Page Up/Down, F1–F12,
 * with CSI or SS3, and their modifier forms (CSI 1;5A is Ctrl+Up).
 *
 * A lone ESC is ambiguous (the Escape key, or a sequence whose rest has not
 * arrived): it is held until more bytes come or fl__term_input_flush() is
 * called after a pause (the driver's 50 ms timer). Pure code.
 */
#ifndef FL_TERM_INPUT_H
#define FL_TERM_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* Modifiers of a key (xterm's parameter − 1). */
#define FL_TERM_MOD_SHIFT 1u
#define FL_TERM_MOD_ALT	  2u
#define FL_TERM_MOD_CTRL  4u

/*
 * A key press: @code the evdev KEY_* code (0 for a character with no key of
 * its own, e.g. 'é'), @ch the Unicode character it types (0 for none),
 * @mods FL_TERM_MOD_*.
 */
struct fl_term_key {
	uint16_t code;
	uint16_t mods;
	uint32_t ch;
};

/* How long a lone ESC is held before it is the Escape key. */
#define FL_TERM_ESC_WAIT_NS 50000000u

struct fl_term_input {
	unsigned char buf[32]; /* an unfinished sequence */
	size_t n;
	int skipping; /* the rest of a sequence too long to be one, up to its final byte */
};

/* Start decoding (a zeroed struct does as well). */
void fl__term_input_init(struct fl_term_input *in);

/*
 * Decode @n bytes, calling @key for each key in order. An unfinished
 * sequence is kept for the next call. A sequence it does not know, or
 * longer than any it knows, is dropped whole, never typed as characters.
 * Return: whether a lone ESC (or the start of a sequence) is held: call
 * fl__term_input_flush() if nothing more comes within FL_TERM_ESC_WAIT_NS.
 */
int fl__term_input_feed(struct fl_term_input *in, const void *bytes, size_t n,
			void (*key)(const struct fl_term_key *k, void *data), void *data);

/* What is held is final: a lone ESC is the Escape key, an unfinished sequence is dropped. */
void fl__term_input_flush(struct fl_term_input *in,
			  void (*key)(const struct fl_term_key *k, void *data), void *data);

#endif /* FL_TERM_INPUT_H */

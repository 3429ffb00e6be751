/* SPDX-License-Identifier: MIT */
/*
 * The terminal driver's pure parts (src/drivers/display-terminal): the
 * picture a frame becomes, checked through a small terminal emulator
 * written here (cursor moves, SGR 24-bit colours, clear, the half block),
 * against a reference average computed here; the bytes written only for
 * cells that changed; the keyboard decoder, whole and a byte at a time.
 */
#include <linux/input-event-codes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"
#include "term-encode.h"
#include "term-input.h"

/* ---- a terminal, as much as the encoder may use ---- */

#define TCOLS 64
#define TROWS 32

struct term {
	uint32_t fg[TROWS][TCOLS], bg[TROWS][TCOLS];
	char ch[TROWS][TCOLS]; /* 'U' the upper half block, ' ' a space, 0 never written */
	unsigned int r, c;
	uint32_t cur_fg, cur_bg;
	int cursor_hidden;
};

static void term_reset(struct term *t)
{
	memset(t, 0, sizeof(*t));
	t->cur_fg = 0xffffff;
}

/* Apply @n bytes; fails the test on anything it does not know. */
static void term_feed(struct term *t, const char *s, long n)
{
	const char *end = s + n;

	while (s < end) {
		if (*s == 0x1b) {
			unsigned int p[8] = { 0 }, k = 0;
			char f;

			fl_assert(s + 1 < end && s[1] == '[');
			s += 2;
			if (*s == '?') {
				fl_assert(!strncmp(s, "?25l", 4));
				t->cursor_hidden = 1;
				s += 4;
				continue;
			}
			for (; s < end && ((*s >= '0' && *s <= '9') || *s == ';'); s++) {
				if (*s == ';')
					k++;
				else
					p[k] = p[k] * 10 + (unsigned int)(*s - '0');
				fl_assert(k < 8);
			}
			fl_assert(s < end);
			f = *s++;
			if (f == 'H') {
				fl_assert(p[0] >= 1 && p[0] <= TROWS && p[1] >= 1 && p[1] <= TCOLS);
				t->r = p[0] - 1;
				t->c = p[1] - 1;
			} else if (f == 'J') {
				fl_assert_int_eq(p[0], 2);
				memset(t->ch, 0, sizeof(t->ch));
			} else if (f == 'm') {
				if (k == 0 && p[0] == 0) {
					t->cur_fg = 0xffffff;
					t->cur_bg = 0;
				} else {
					fl_assert(k == 4 && (p[0] == 38 || p[0] == 48) &&
						  p[1] == 2);
					fl_assert(p[2] < 256 && p[3] < 256 && p[4] < 256);
					*(p[0] == 38 ? &t->cur_fg : &t->cur_bg) =
						p[2] << 16 | p[3] << 8 | p[4];
				}
			} else {
				fl_assert(!"an escape sequence the emulator does not know");
			}
			continue;
		}
		fl_assert(t->r < TROWS && t->c < TCOLS);
		if (*s == ' ') {
			t->ch[t->r][t->c] = ' ';
			s++;
		} else {
			fl_assert(end - s >= 3 && !memcmp(s, "\xe2\x96\x80", 3));
			t->ch[t->r][t->c] = 'U';
			s += 3;
		}
		t->fg[t->r][t->c] = t->cur_fg;
		t->bg[t->r][t->c] = t->cur_bg;
		/* Deferred wrap: the cursor stays in the last column. */
		if (t->c + 1 < TCOLS)
			t->c++;
	}
}

/* The colour the terminal shows at (@col, @row), upper or lower half. */
static uint32_t term_pixel(const struct term *t, unsigned int col, unsigned int row, int lower)
{
	fl_assert(t->ch[row][col] != 0);
	if (t->ch[row][col] == ' ')
		return t->bg[row][col];
	return lower ? t->bg[row][col] : t->fg[row][col];
}

/* ---- frames ---- */

static uint32_t *frame(uint32_t w, uint32_t h, unsigned int seed)
{
	uint32_t *px = malloc((size_t)w * h * 4);

	fl_assert(px != NULL);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			px[(size_t)y * w + x] = 0xff000000u | ((x * 7 + seed) & 0xff) << 16 |
						((y * 5 + seed * 3) & 0xff) << 8 |
						(((x ^ y) + seed) & 0xff);
	return px;
}

/* The reference: picture pixel (@tx, @ty) of a @pw × @ph picture of the frame. */
static uint32_t ref_pixel(const uint32_t *px, uint32_t w, uint32_t h, unsigned int pw,
			  unsigned int ph, unsigned int tx, unsigned int ty)
{
	double x0 = (double)tx * w / pw, x1 = (double)(tx + 1) * w / pw;
	double y0 = (double)ty * h / ph, y1 = (double)(ty + 1) * h / ph;
	unsigned int ix0 = (unsigned int)x0, ix1 = (unsigned int)x1, iy0 = (unsigned int)y0,
		     iy1 = (unsigned int)y1;
	unsigned long sum[3] = { 0, 0, 0 }, n;

	if (ix1 <= ix0)
		ix1 = ix0 + 1;
	if (iy1 <= iy0)
		iy1 = iy0 + 1;
	n = (unsigned long)(ix1 - ix0) * (iy1 - iy0);
	for (unsigned int y = iy0; y < iy1; y++)
		for (unsigned int x = ix0; x < ix1; x++)
			for (int c = 0; c < 3; c++)
				sum[c] += (px[(size_t)y * w + x] >> (16 - 8 * c)) & 0xff;
	return (uint32_t)((sum[0] + n / 2) / n) << 16 | (uint32_t)((sum[1] + n / 2) / n) << 8 |
	       (uint32_t)((sum[2] + n / 2) / n);
}

/* Every cell of the terminal against the reference picture of a @w × @h frame. */
static void check_screen(const struct term *t, const struct fl_term_screen *s, const uint32_t *px,
			 uint32_t w, uint32_t h)
{
	unsigned int rx, ry, rw, rh;
	size_t wrong = 0;

	fl__term_screen_fit(s, w, h, &rx, &ry, &rw, &rh);
	for (unsigned int row = 0; row < TROWS; row++)
		for (unsigned int col = 0; col < TCOLS; col++)
			for (int lower = 0; lower < 2; lower++) {
				unsigned int y = row * 2 + (unsigned int)lower;
				uint32_t want = 0;

				if (col >= rx && col < rx + rw && y >= ry && y < ry + rh)
					want = ref_pixel(px, w, h, rw, rh, col - rx, y - ry);
				wrong += term_pixel(t, col, row, lower) != want;
				wrong += fl__term_screen_pixel(s, col, row, lower) != want;
			}
	fl_assert_int_eq(wrong, 0);
}

FL_TEST(term_fit_keeps_the_aspect_and_centres)
{
	struct fl_term_screen *s = fl__term_screen_new(200, 60);
	unsigned int x, y, w, h;

	fl_assert(s != NULL);
	/* 1920 × 1080 into 200 × 120 half-block pixels: width-bound, 113 high, centred. */
	fl__term_screen_fit(s, 1920, 1080, &x, &y, &w, &h);
	fl_assert(x == 0 && w == 200 && h == 113 && y == 3);
	/* A tall frame: height-bound. */
	fl__term_screen_fit(s, 100, 1000, &x, &y, &w, &h);
	fl_assert(y == 0 && h == 120 && w == 12 && x == 94);
	fl__term_screen_free(s);
	fl_assert(fl__term_screen_new(0, 10) == NULL);
	fl_assert(fl__term_screen_new(FL_TERM_MAX_COLS + 1, 10) == NULL);
}

FL_TEST(term_encode_draws_the_reference_picture_through_an_emulator)
{
	/* Down-scaled (1920 × 1080), up-scaled (40 × 20) and an odd size (333 × 77). */
	static const uint32_t sizes[][2] = { { 1920, 1080 }, { 40, 20 }, { 333, 77 } };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t w = sizes[i][0], h = sizes[i][1], *px = frame(w, h, (unsigned int)i);
		struct fl_term_screen *s = fl__term_screen_new(TCOLS, TROWS);
		size_t cap = fl__term_encode_max(s);
		char *out = malloc(cap);
		struct term t;
		long n;

		fl_assert(out != NULL);
		term_reset(&t);
		fl_assert_int_eq(fl__term_encode(s, px, w, h, w * 4, out, cap - 1), -ENOSPC);
		n = fl__term_encode(s, px, w, h, w * 4, out, cap);
		fl_assert(n > 0);
		term_feed(&t, out, n);
		fl_assert(t.cursor_hidden);
		check_screen(&t, s, px, w, h);
		fl__term_screen_free(s);
		free(out);
		free(px);
	}
}

FL_TEST(term_encode_writes_only_what_changed)
{
	uint32_t w = 128, h = 128, *px = frame(w, h, 1);
	struct fl_term_screen *s = fl__term_screen_new(TCOLS, TROWS);
	size_t cap = fl__term_encode_max(s);
	char *out = malloc(cap);
	struct term t;
	long first, n;

	fl_assert(out != NULL);
	term_reset(&t);
	first = fl__term_encode(s, px, w, h, w * 4, out, cap);
	term_feed(&t, out, first);
	/* The same frame: nothing at all. */
	fl_assert_int_eq(fl__term_encode(s, px, w, h, w * 4, out, cap), 0);
	/* A 2 × 2 block of the frame: one picture pixel (the frame is 2:1 each way), in cell (10, 2). */
	for (uint32_t y = 10; y < 12; y++)
		for (uint32_t x = 20; x < 22; x++)
			px[y * w + x] = 0xff123456u;
	n = fl__term_encode(s, px, w, h, w * 4, out, cap);
	fl_assert(n > 0 && n < 64);
	fl_assert(memmem(out, (size_t)n, "\x1b[3;11H", 7) != NULL);
	term_feed(&t, out, n);
	check_screen(&t, s, px, w, h);
	/* Invalidated (a resize, a clear): everything again, after a clear. */
	fl__term_screen_invalidate(s);
	n = fl__term_encode(s, px, w, h, w * 4, out, cap);
	fl_assert(n > first / 2 && !memcmp(out, "\x1b[0m\x1b[2J", 8));
	term_reset(&t);
	term_feed(&t, out, n);
	check_screen(&t, s, px, w, h);
	fl__term_screen_free(s);
	free(out);
	free(px);
}

/* ---- the keyboard ---- */

struct keys {
	struct fl_term_key k[64];
	size_t n;
};

static void got(const struct fl_term_key *k, void *data)
{
	struct keys *ks = data;

	fl_assert(ks->n < 64);
	ks->k[ks->n++] = *k;
}

static const struct {
	const char *bytes;
	struct fl_term_key want;
} key_cases[] = {
	{ "a", { KEY_A, 0, 'a' } },
	{ "Z", { KEY_Z, FL_TERM_MOD_SHIFT, 'Z' } },
	{ "?", { KEY_SLASH, FL_TERM_MOD_SHIFT, '?' } },
	{ " ", { KEY_SPACE, 0, ' ' } },
	{ "\r", { KEY_ENTER, 0, '\r' } },
	{ "\x7f", { KEY_BACKSPACE, 0, 0 } },
	{ "\t", { KEY_TAB, 0, '\t' } },
	{ "\x03", { KEY_C, FL_TERM_MOD_CTRL, 0 } },
	{ "\x1b[A", { KEY_UP, 0, 0 } },
	{ "\x1b[B", { KEY_DOWN, 0, 0 } },
	{ "\x1bOC", { KEY_RIGHT, 0, 0 } },
	{ "\x1b[1;5D", { KEY_LEFT, FL_TERM_MOD_CTRL, 0 } },
	{ "\x1b[1;2H", { KEY_HOME, FL_TERM_MOD_SHIFT, 0 } },
	{ "\x1b[F", { KEY_END, 0, 0 } },
	{ "\x1b[3~", { KEY_DELETE, 0, 0 } },
	{ "\x1b[5~", { KEY_PAGEUP, 0, 0 } },
	{ "\x1b[6;3~", { KEY_PAGEDOWN, FL_TERM_MOD_ALT, 0 } },
	{ "\x1bOP", { KEY_F1, 0, 0 } },
	{ "\x1b[15~", { KEY_F5, 0, 0 } },
	{ "\x1b[24~", { KEY_F12, 0, 0 } },
	{ "\x1b[Z", { KEY_TAB, FL_TERM_MOD_SHIFT, '\t' } },
	{ "\x1bx", { KEY_X, FL_TERM_MOD_ALT, 'x' } },
	{ "\xc3\xa9", { 0, 0, 0xe9 } },
	{ "\xe2\x82\xac", { 0, 0, 0x20ac } },
};

FL_TEST(term_input_decodes_xterm_keys_whole_and_a_byte_at_a_time)
{
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct fl_term_input in;
		struct keys ks = { .n = 0 };
		size_t n = sizeof(key_cases) / sizeof(key_cases[0]);

		fl__term_input_init(&in);
		for (size_t i = 0; i < n; i++) {
			const char *b = key_cases[i].bytes;

			if (bytewise)
				for (size_t j = 0; j < strlen(b); j++)
					fl__term_input_feed(&in, b + j, 1, got, &ks);
			else
				fl__term_input_feed(&in, b, strlen(b), got, &ks);
		}
		fl_assert_int_eq(ks.n, n);
		for (size_t i = 0; i < n; i++) {
			const struct fl_term_key *k = &ks.k[i], *w = &key_cases[i].want;

			if (k->code != w->code || k->mods != w->mods || k->ch != w->ch)
				fprintf(stderr, "case %zu: got %u/%u/%u want %u/%u/%u\n", i,
					k->code, k->mods, k->ch, w->code, w->mods, w->ch);
			fl_assert(k->code == w->code && k->mods == w->mods && k->ch == w->ch);
		}
	}
}

FL_TEST(term_input_holds_a_lone_escape_and_drops_what_it_does_not_know)
{
	struct fl_term_input in;
	struct keys ks = { .n = 0 };
	char junk[100];

	fl__term_input_init(&in);
	/* ESC alone: held (it may start a sequence), the Escape key once flushed. */
	fl_assert_int_eq(fl__term_input_feed(&in, "\x1b", 1, got, &ks), 1);
	fl_assert_int_eq(ks.n, 0);
	fl__term_input_flush(&in, got, &ks);
	fl_assert(ks.n == 1 && ks.k[0].code == KEY_ESC && ks.k[0].mods == 0);
	/* An unfinished sequence flushed: dropped, not typed as "[1". */
	fl_assert_int_eq(fl__term_input_feed(&in, "\x1b[1", 3, got, &ks), 1);
	fl__term_input_flush(&in, got, &ks);
	fl_assert_int_eq(ks.n, 1);
	/* Unknown sequences and one too long to be one: dropped up to its final byte, then "q" typed. */
	fl__term_input_feed(&in, "\x1b[99~\x1b[200;1;7X", 15, got, &ks);
	memset(junk, '1', sizeof(junk));
	junk[0] = 0x1b;
	junk[1] = '[';
	fl__term_input_feed(&in, junk, sizeof(junk), got, &ks);
	fl__term_input_feed(&in, "~q", 2, got, &ks);
	fl_assert_int_eq(ks.n, 2);
	fl_assert(ks.k[1].code == KEY_Q && ks.k[1].ch == 'q');
	/* A broken UTF-8 character and stray bytes: dropped, the next key comes through. */
	ks.n = 0;
	fl__term_input_feed(&in, "\xc3(\x80\xffw", 5, got, &ks);
	fl_assert(ks.n == 2 && ks.k[0].ch == '(' && ks.k[1].ch == 'w');
}

/* SPDX-License-Identifier: MIT */
/* A terminal's key bytes decoded as evdev keys (term-input.h). */
#include <linux/input-event-codes.h>
#include <string.h>

#include "term-input.h"

typedef void (*key_fn)(const struct fl_term_key *k, void *data);

void fl__term_input_init(struct fl_term_input *in)
{
	memset(in, 0, sizeof(*in));
}

static void emit(key_fn key, void *data, uint16_t code, uint16_t mods, uint32_t ch)
{
	struct fl_term_key k = { code, mods, ch };

	key(&k, data);
}

/* The evdev key of an ASCII character, US layout (0: none), and whether it needs Shift. */
static uint16_t ascii_key(unsigned char c, int *shift)
{
	static const char *const rows[] = { "1234567890-=", "qwertyuiop[]", "asdfghjkl;'`",
					    "\\zxcvbnm,./" };
	static const char *const shifted[] = { "!@#$%^&*()_+", "QWERTYUIOP{}", "ASDFGHJKL:\"~",
					       "|ZXCVBNM<>?" };
	static const uint16_t first[] = { KEY_1, KEY_Q, KEY_A, KEY_BACKSLASH };

	*shift = 0;
	if (c == ' ')
		return KEY_SPACE;
	for (int r = 0; r < 4; r++) {
		const char *p = strchr(rows[r], c), *q = strchr(shifted[r], c);

		if (c && p)
			return r == 3 && p != rows[r] ? (uint16_t)(KEY_Z + (p - rows[r]) - 1)
						      : (uint16_t)(first[r] + (p - rows[r]));
		if (c && q) {
			*shift = 1;
			return r == 3 && q != shifted[r] ? (uint16_t)(KEY_Z + (q - shifted[r]) - 1)
							 : (uint16_t)(first[r] + (q - shifted[r]));
		}
	}
	return 0;
}

/* One byte that is a key by itself (not ESC): control keys and ASCII. */
static void plain(unsigned char c, uint16_t mods, key_fn key, void *data)
{
	int shift;
	uint16_t code;

	switch (c) {
	case '\r':
	case '\n':
		emit(key, data, KEY_ENTER, mods, '\r');
		return;
	case '\t':
		emit(key, data, KEY_TAB, mods, '\t');
		return;
	case 0x7f:
	case 0x08:
		emit(key, data, KEY_BACKSPACE, mods, 0);
		return;
	}
	if (c < 0x20) {
		/* Ctrl with the key of c | 0x40: @ A–Z [ \ ] ^ _ (Ctrl+@ and Ctrl+^ are Shift's too). */
		unsigned char k = (unsigned char)(c | 0x40);

		code = ascii_key(k >= 'A' && k <= 'Z' ? (unsigned char)(k + 'a' - 'A') : k, &shift);
		emit(key, data, code,
		     (uint16_t)(mods | FL_TERM_MOD_CTRL | (shift ? FL_TERM_MOD_SHIFT : 0)), 0);
		return;
	}
	code = ascii_key(c, &shift);
	emit(key, data, code, (uint16_t)(mods | (shift ? FL_TERM_MOD_SHIFT : 0)), c);
}

/* The key of a CSI/SS3 sequence's final byte @f (or of "~" with number @num). */
static uint16_t seq_key(unsigned char f, unsigned int num)
{
	static const uint16_t tilde[] = {
		[1] = KEY_HOME,	  [2] = KEY_INSERT,   [3] = KEY_DELETE, [4] = KEY_END,
		[5] = KEY_PAGEUP, [6] = KEY_PAGEDOWN, [7] = KEY_HOME,	[8] = KEY_END,
		[11] = KEY_F1,	  [12] = KEY_F2,      [13] = KEY_F3,	[14] = KEY_F4,
		[15] = KEY_F5,	  [17] = KEY_F6,      [18] = KEY_F7,	[19] = KEY_F8,
		[20] = KEY_F9,	  [21] = KEY_F10,     [23] = KEY_F11,	[24] = KEY_F12,
	};

	switch (f) {
	case 'A':
		return KEY_UP;
	case 'B':
		return KEY_DOWN;
	case 'C':
		return KEY_RIGHT;
	case 'D':
		return KEY_LEFT;
	case 'H':
		return KEY_HOME;
	case 'F':
		return KEY_END;
	case 'P':
		return KEY_F1;
	case 'Q':
		return KEY_F2;
	case 'R':
		return KEY_F3;
	case 'S':
		return KEY_F4;
	case 'Z':
		return KEY_TAB; /* back-tab: Shift+Tab */
	case '~':
		return num < sizeof(tilde) / sizeof(tilde[0]) ? tilde[num] : 0;
	}
	return 0;
}

/*
 * A sequence at @p (@n bytes, @p[0] == ESC). Return: its length when whole
 * (its key emitted, or dropped if unknown), 0 when more bytes are needed.
 */
static size_t sequence(const unsigned char *p, size_t n, key_fn key, void *data)
{
	unsigned int num[2] = { 0, 0 }, k = 0;
	size_t i;

	if (n < 2)
		return 0;
	if (p[1] != '[' && p[1] != 'O') {
		/* ESC then a key: Alt+key (ESC ESC: Alt+Escape). */
		if (p[1] == 0x1b)
			emit(key, data, KEY_ESC, FL_TERM_MOD_ALT, 0x1b);
		else
			plain(p[1], FL_TERM_MOD_ALT, key, data);
		return 2;
	}
	/* CSI or SS3: parameters (digits and ';'), then a final byte 0x40–0x7e. */
	for (i = 2; i < n; i++) {
		unsigned char c = p[i];

		if (c >= '0' && c <= '9') {
			if (num[k] < 1000)
				num[k] = num[k] * 10 + (c - '0');
		} else if (c == ';') {
			k = k < 1 ? k + 1 : k;
		} else if (c >= 0x40 && c <= 0x7e) {
			uint16_t code = seq_key(c, num[0]);
			uint16_t mods = num[1] >= 2 && num[1] <= 8 ? (uint16_t)(num[1] - 1) : 0;

			if (c == 'Z')
				mods |= FL_TERM_MOD_SHIFT;
			if (code)
				emit(key, data, code, mods, code == KEY_TAB ? '\t' : 0);
			return i + 1;
		} else if (c < 0x20 || c > 0x7e || p[1] == 'O') {
			/* Not a sequence's byte: the sequence is malformed; drop what came so far. */
			return i;
		}
	}
	return 0;
}

/* The length of the UTF-8 character led by @c (1 for ASCII and stray bytes). */
static size_t utf8_len(unsigned char c)
{
	return c < 0xc2 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf5 ? 4 : 1;
}

static size_t one(const unsigned char *p, size_t n, key_fn key, void *data)
{
	size_t len;
	uint32_t ch;

	if (p[0] == 0x1b)
		return sequence(p, n, key, data);
	len = utf8_len(p[0]);
	if (len == 1) {
		if (p[0] < 0x80)
			plain(p[0], 0, key, data);
		return 1; /* a stray byte of no character: dropped */
	}
	if (n < len)
		return 0;
	ch = p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return i; /* a broken character: dropped */
		ch = ch << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates and past U+10FFFF are no characters: dropped. */
	if ((len == 3 && ch < 0x800) || (len == 4 && (ch < 0x10000 || ch > 0x10ffff)) ||
	    (ch >= 0xd800 && ch <= 0xdfff))
		return len;
	emit(key, data, 0, 0, ch);
	return len;
}

int fl__term_input_feed(struct fl_term_input *in, const void *bytes, size_t n, key_fn key,
			void *data)
{
	const unsigned char *b = bytes;

	while (n) {
		size_t take, used;

		/* A sequence too long to be one is dropped up to its final byte, not typed. */
		while (in->skipping && n) {
			if (*b >= 0x40 && *b <= 0x7e) {
				in->skipping = 0;
				b++;
				n--;
			} else if (*b < 0x20 || *b > 0x7e) {
				in->skipping = 0;
			} else {
				b++;
				n--;
			}
		}
		if (!n)
			break;

		/* Fill the held sequence first; whole keys go straight from @bytes. */
		take = sizeof(in->buf) - in->n < n ? sizeof(in->buf) - in->n : n;
		memcpy(in->buf + in->n, b, take);
		in->n += take;
		b += take;
		n -= take;
		while (in->n && (used = one(in->buf, in->n, key, data)) > 0) {
			memmove(in->buf, in->buf + used, in->n - used);
			in->n -= used;
		}
		/* A sequence as long as the buffer and still unfinished is nothing we know. */
		if (in->n == sizeof(in->buf)) {
			in->n = 0;
			in->skipping = 1;
		}
	}
	return in->n > 0;
}

void fl__term_input_flush(struct fl_term_input *in, key_fn key, void *data)
{
	if (in->n == 1 && in->buf[0] == 0x1b)
		emit(key, data, KEY_ESC, 0, 0x1b);
	/* ESC then nothing more than part of a sequence: the Escape key and what followed. */
	else if (in->n >= 2 && in->buf[0] == 0x1b && in->buf[1] == 0x1b)
		emit(key, data, KEY_ESC, FL_TERM_MOD_ALT, 0x1b);
	in->n = 0;
	in->skipping = 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The terminal driver's keyboard decoder (src/drivers/display-terminal/
 * term-input.c) on any bytes: what a terminal, or a program writing to the
 * driver's tty, may send. Checks: keys are evdev codes and Unicode
 * characters; the same bytes give the same keys whole, a byte at a time and
 * in the chunks the input's first byte picks (the decoder keeps no state
 * but the bytes it holds).
 */
#include <linux/input-event-codes.h>
#include <string.h>

#include "fuzz.h"
#include "term-input.h"

struct keys {
	struct fl_term_key k[4096];
	size_t n;
};

static void got(const struct fl_term_key *k, void *data)
{
	struct keys *ks = data;

	CHECK(k->code <= KEY_MAX && k->ch <= 0x10ffff && k->mods <= 7);
	CHECK(k->code || k->ch);
	if (ks->n < sizeof(ks->k) / sizeof(ks->k[0]))
		ks->k[ks->n++] = *k;
}

static void decode(const uint8_t *data, size_t size, size_t chunk, struct keys *ks)
{
	struct fl_term_input in;

	fl__term_input_init(&in);
	ks->n = 0;
	for (size_t at = 0; at < size; at += chunk) {
		size_t n = size - at < chunk ? size - at : chunk;

		fl__term_input_feed(&in, data + at, n, got, ks);
		CHECK(in.n < sizeof(in.buf));
	}
	fl__term_input_flush(&in, got, ks);
	CHECK(in.n == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct keys whole, bytewise, chunked;
	size_t chunk;

	if (!size)
		return 0;
	chunk = (size_t)data[0] % 7 + 1;
	decode(data + 1, size - 1, size, &whole);
	decode(data + 1, size - 1, 1, &bytewise);
	decode(data + 1, size - 1, chunk, &chunked);
	CHECK(whole.n == bytewise.n && whole.n == chunked.n);
	CHECK(!memcmp(whole.k, bytewise.k, whole.n * sizeof(whole.k[0])));
	CHECK(!memcmp(whole.k, chunked.k, whole.n * sizeof(whole.k[0])));
	return 0;
}

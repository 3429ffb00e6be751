/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for ADF's generic buffer check (src/display/format.c). Input:
 * a buffer's fields, little-endian, zero-filled when short:
 *
 *   u8  flags      bit 0: the UNPADDED quirk; bit 1: each plane's memory is
 *                  the exact end plus delta[p], so that inputs sit on the
 *                  boundaries
 *   u8  format     an index into the standard formats, or past them: fourcc
 *   u32 fourcc, w, h, n_planes
 *   u32 offset[4], pitch[4]
 *   u64 size[4]
 *   s8  delta[4]
 *
 * Checks the verdict against a reference written here from the rules of
 * docs/display.md in 128-bit arithmetic: accepted exactly when the plane
 * count matches, w and h are non-zero multiples of the subsampling, every
 * pitch holds its row and every plane ends within its memory; refused
 * with -EINVAL and a message naming the buffer otherwise.
 *
 * Built with libFuzzer under clang, and with fuzz-main.c under every
 * compiler.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "display-format.h"
#include "fuzz.h"

#define INPUT_SIZE (2 + 4 * 4 + 8 * 4 + 8 * 4 + 4)

typedef unsigned __int128 u128;

static uint64_t take(const uint8_t *in, size_t *at, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)in[*at + i] << (8 * i);
	*at += n;
	return v;
}

/* Where plane @p ends, as the rules say, and whether its pitch holds its row. */
static u128 plane_end(const struct fl_display_buffer *b, const struct fl_display_format *f,
		      unsigned int p, bool unpadded, bool *pitch_ok)
{
	u128 width = b->w / (p ? f->hsub : 1u), height = b->h / (p ? f->vsub : 1u);
	u128 row = width * f->cpp[p];

	*pitch_ok = b->pitch[p] >= row;
	return (height - 1) * b->pitch[p] + (unpadded ? row : b->pitch[p]) + b->offset[p];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t in[INPUT_SIZE] = { 0 };
	struct fl_display_buffer b = { 0 };
	struct fl_display_error e = { 0 };
	const struct fl_display_format *table, *f;
	size_t n_formats, at = 2;
	bool unpadded, want;
	uint8_t flags;
	int r;

	memcpy(in, data, size < sizeof(in) ? size : sizeof(in));
	table = fl__display_formats(&n_formats);
	flags = in[0];
	unpadded = flags & 1;
	b.format = (uint32_t)take(in, &at, 4);
	if (in[1] < n_formats)
		b.format = table[in[1]].fourcc;
	b.w = (uint32_t)take(in, &at, 4);
	b.h = (uint32_t)take(in, &at, 4);
	b.n_planes = (uint32_t)take(in, &at, 4);
	for (int p = 0; p < 4; p++)
		b.offset[p] = (uint32_t)take(in, &at, 4);
	for (int p = 0; p < 4; p++)
		b.pitch[p] = (uint32_t)take(in, &at, 4);
	for (int p = 0; p < 4; p++)
		b.size[p] = take(in, &at, 8);
	f = fl__display_format_find(b.format);

	want = f && b.n_planes == f->planes && b.w && b.h && b.w % f->hsub == 0 &&
	       b.h % f->vsub == 0;
	for (unsigned int p = 0; want && p < f->planes; p++) {
		bool pitch_ok;
		u128 end = plane_end(&b, f, p, unpadded, &pitch_ok);

		if (flags & 2) {
			int delta = (int8_t)in[at + p];
			u128 sized = delta >= 0 ? end + (u128)delta : end - (u128)-delta;

			/* Below 0 or past 64 bits: the input's size stays. */
			if ((delta >= 0 || end >= (u128)-delta) && sized <= UINT64_MAX)
				b.size[p] = (uint64_t)sized;
		}
		want = pitch_ok && end <= b.size[p];
	}

	r = fl__display_buffer_check(
		&b, 3, unpadded ? FL_DISPLAY_UNPADDED : FL_DISPLAY_PADDED_TO_PITCH, &e);
	CHECK(r == (want ? 0 : -EINVAL));
	if (r) {
		CHECK(e.err == r);
		CHECK(strncmp(e.msg, "buffer 3", 8) == 0);
		CHECK(memchr(e.msg, '\0', sizeof(e.msg)));
	} else {
		CHECK(e.err == 0 && e.msg[0] == '\0');
	}
	return 0;
}

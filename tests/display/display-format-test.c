/* SPDX-License-Identifier: MIT */
/*
 * The display formats and ADF's generic buffer check (src/display/format.c,
 * docs/display.md "The buffer check"): the table against DRM's definitions
 * written out again here, and every rule at its boundary for every
 * standard format (exact fits, one byte short fails), both padding quirks,
 * and the 64-bit arithmetic.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "display-format.h"
#include "runner.h"

/*
 * DRM's formats as <drm_fourcc.h> and adf_format.c define them, independent
 * of src/display's table: fourcc characters, planes, subsampling, cpp,
 * whether a simple buffer may have it.
 */
static const struct expected {
	const char *fourcc;
	const char *name;
	unsigned int planes, hsub, vsub, cpp[3];
	bool rgb;
} expected[] = {
	{ "C8  ", "C8", 1, 1, 1, { 1 }, true },
	{ "RGB8", "RGB332", 1, 1, 1, { 1 }, true },
	{ "BGR8", "BGR233", 1, 1, 1, { 1 }, true },
	{ "XR12", "XRGB4444", 1, 1, 1, { 2 }, false },
	{ "XB12", "XBGR4444", 1, 1, 1, { 2 }, false },
	{ "RX12", "RGBX4444", 1, 1, 1, { 2 }, false },
	{ "BX12", "BGRX4444", 1, 1, 1, { 2 }, false },
	{ "AR12", "ARGB4444", 1, 1, 1, { 2 }, false },
	{ "AB12", "ABGR4444", 1, 1, 1, { 2 }, false },
	{ "RA12", "RGBA4444", 1, 1, 1, { 2 }, false },
	{ "BA12", "BGRA4444", 1, 1, 1, { 2 }, false },
	{ "XR15", "XRGB1555", 1, 1, 1, { 2 }, true },
	{ "XB15", "XBGR1555", 1, 1, 1, { 2 }, true },
	{ "RX15", "RGBX5551", 1, 1, 1, { 2 }, true },
	{ "BX15", "BGRX5551", 1, 1, 1, { 2 }, true },
	{ "AR15", "ARGB1555", 1, 1, 1, { 2 }, true },
	{ "AB15", "ABGR1555", 1, 1, 1, { 2 }, true },
	{ "RA15", "RGBA5551", 1, 1, 1, { 2 }, true },
	{ "BA15", "BGRA5551", 1, 1, 1, { 2 }, true },
	{ "RG16", "RGB565", 1, 1, 1, { 2 }, true },
	{ "BG16", "BGR565", 1, 1, 1, { 2 }, true },
	{ "RG24", "RGB888", 1, 1, 1, { 3 }, true },
	{ "BG24", "BGR888", 1, 1, 1, { 3 }, true },
	{ "XR24", "XRGB8888", 1, 1, 1, { 4 }, true },
	{ "XB24", "XBGR8888", 1, 1, 1, { 4 }, true },
	{ "RX24", "RGBX8888", 1, 1, 1, { 4 }, true },
	{ "BX24", "BGRX8888", 1, 1, 1, { 4 }, true },
	{ "AR24", "ARGB8888", 1, 1, 1, { 4 }, true },
	{ "AB24", "ABGR8888", 1, 1, 1, { 4 }, true },
	{ "RA24", "RGBA8888", 1, 1, 1, { 4 }, true },
	{ "BA24", "BGRA8888", 1, 1, 1, { 4 }, true },
	{ "XR30", "XRGB2101010", 1, 1, 1, { 4 }, true },
	{ "XB30", "XBGR2101010", 1, 1, 1, { 4 }, true },
	{ "RX30", "RGBX1010102", 1, 1, 1, { 4 }, true },
	{ "BX30", "BGRX1010102", 1, 1, 1, { 4 }, true },
	{ "AR30", "ARGB2101010", 1, 1, 1, { 4 }, true },
	{ "AB30", "ABGR2101010", 1, 1, 1, { 4 }, true },
	{ "RA30", "RGBA1010102", 1, 1, 1, { 4 }, true },
	{ "BA30", "BGRA1010102", 1, 1, 1, { 4 }, true },
	{ "YUYV", "YUYV", 1, 2, 1, { 2 }, false },
	{ "YVYU", "YVYU", 1, 2, 1, { 2 }, false },
	{ "UYVY", "UYVY", 1, 2, 1, { 2 }, false },
	{ "VYUY", "VYUY", 1, 2, 1, { 2 }, false },
	{ "AYUV", "AYUV", 1, 1, 1, { 4 }, false },
	{ "NV12", "NV12", 2, 2, 2, { 1, 2 }, false },
	{ "NV21", "NV21", 2, 2, 2, { 1, 2 }, false },
	{ "NV16", "NV16", 2, 2, 1, { 1, 2 }, false },
	{ "NV61", "NV61", 2, 2, 1, { 1, 2 }, false },
	{ "YUV9", "YUV410", 3, 4, 4, { 1, 1, 1 }, false },
	{ "YVU9", "YVU410", 3, 4, 4, { 1, 1, 1 }, false },
	{ "YU11", "YUV411", 3, 4, 1, { 1, 1, 1 }, false },
	{ "YV11", "YVU411", 3, 4, 1, { 1, 1, 1 }, false },
	{ "YU12", "YUV420", 3, 2, 2, { 1, 1, 1 }, false },
	{ "YV12", "YVU420", 3, 2, 2, { 1, 1, 1 }, false },
	{ "YU16", "YUV422", 3, 2, 1, { 1, 1, 1 }, false },
	{ "YV16", "YVU422", 3, 2, 1, { 1, 1, 1 }, false },
	{ "YU24", "YUV444", 3, 1, 1, { 1, 1, 1 }, false },
	{ "YV24", "YVU444", 3, 1, 1, { 1, 1, 1 }, false },
};

#define N_EXPECTED (sizeof(expected) / sizeof(expected[0]))

static uint32_t fourcc(const char *s)
{
	return FL_FOURCC(s[0], s[1], s[2], s[3]);
}

/* Plane @p's width and height for a @w × @h buffer of @x. */
static uint32_t plane_w(const struct expected *x, unsigned int p, uint32_t w)
{
	return p ? w / x->hsub : w;
}

static uint32_t plane_h(const struct expected *x, unsigned int p, uint32_t h)
{
	return p ? h / x->vsub : h;
}

/*
 * The smallest buffer of @x that fits: each plane's pitch exactly width ×
 * cpp plus @pad, its memory exactly (height - 1) × pitch + last line +
 * offset for the @padding quirk.
 */
static struct fl_display_buffer fitting(const struct expected *x, uint32_t w, uint32_t h,
					uint32_t pad, uint32_t offset,
					enum fl_display_padding padding)
{
	struct fl_display_buffer b = { .engine = 0, .w = w, .h = h, .format = fourcc(x->fourcc) };

	b.n_planes = x->planes;
	for (unsigned int p = 0; p < x->planes; p++) {
		uint64_t row = (uint64_t)plane_w(x, p, w) * x->cpp[p];

		b.pitch[p] = (uint32_t)row + pad;
		b.offset[p] = offset;
		b.size[p] = (uint64_t)(plane_h(x, p, h) - 1) * b.pitch[p] +
			    (padding == FL_DISPLAY_UNPADDED ? row : b.pitch[p]) + offset;
	}
	return b;
}

/* The check of @b fails with -EINVAL and a message holding @what. */
#define expect_refused(b, padding, what) expect_refused_at(__LINE__, b, padding, what)

static void expect_refused_at(int line, const struct fl_display_buffer *b,
			      enum fl_display_padding padding, const char *what)
{
	struct fl_display_error e = { 0 };
	char fcc[5];
	int r = fl__display_buffer_check(b, 7, padding, &e);

	if (r != -EINVAL || e.err != -EINVAL)
		fl__test_fail(__FILE__, line, "%s: got %d (%s), want -EINVAL with \"%s\"",
			      fl__display_format_str(b->format, fcc), r, e.msg, what);
	if (!strstr(e.msg, what) || strncmp(e.msg, "buffer 7", 8))
		fl__test_fail(__FILE__, line, "%s: message \"%s\", want \"buffer 7...%s...\"",
			      fl__display_format_str(b->format, fcc), e.msg, what);
}

#define expect_accepted(b, padding) expect_accepted_at(__LINE__, b, padding)

static void expect_accepted_at(int line, const struct fl_display_buffer *b,
			       enum fl_display_padding padding)
{
	struct fl_display_error e = { 0 };
	char fcc[5];
	int r = fl__display_buffer_check(b, 7, padding, &e);

	if (r != 0)
		fl__test_fail(__FILE__, line, "%s: got %d: %s",
			      fl__display_format_str(b->format, fcc), r, e.msg);
	if (e.err != 0)
		fl__test_fail(__FILE__, line, "an accepted buffer set the error to %d", e.err);
}

FL_TEST(format_table_is_drms_standard_formats)
{
	size_t n;
	const struct fl_display_format *t = fl__display_formats(&n);

	fl_assert_int_eq(n, N_EXPECTED);
	for (size_t i = 0; i < N_EXPECTED; i++) {
		const struct expected *x = &expected[i];
		const struct fl_display_format *f = fl__display_format_find(fourcc(x->fourcc));

		if (!f)
			fl__test_fail(__FILE__, __LINE__, "%s is not in the table", x->name);
		fl_assert(f == &t[i]);
		fl_assert_str_eq(f->name, x->name);
		fl_assert(fl__display_format_by_name(x->name, strlen(x->name)) == f);
		fl_assert_int_eq(f->planes, x->planes);
		fl_assert_int_eq(f->hsub, x->hsub);
		fl_assert_int_eq(f->vsub, x->vsub);
		for (unsigned int p = 0; p < 3; p++)
			fl_assert_int_eq(f->cpp[p], x->cpp[p]);
		fl_assert_int_eq(f->rgb, x->rgb);
	}
}

FL_TEST(format_unknown_fourccs_are_not_standard)
{
	char buf[5];

	fl_assert(!fl__display_format_find(0xDEADBEEF));
	fl_assert(!fl__display_format_find(0));
	fl_assert(!fl__display_format_find(fourcc("NV24"))); /* DRM has it; ADF did not */
	fl_assert(!fl__display_format_by_name("xrgb8888", 8));
	fl_assert(!fl__display_format_by_name("XRGB888", 7));
	fl_assert_str_eq(fl__display_format_str(fourcc("XR24"), buf), "XR24");
	fl_assert_str_eq(fl__display_format_str(0x0a0b2058, buf), "X ??");
}

FL_TEST(format_exact_fit_is_accepted_for_every_format)
{
	for (size_t i = 0; i < N_EXPECTED; i++) {
		const struct expected *x = &expected[i];
		/* 12 × 8 is divisible by every subsampling; 36 × 4 too. */
		struct fl_display_buffer a = fitting(x, 12, 8, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);
		struct fl_display_buffer b = fitting(x, 36, 4, 5, 3, FL_DISPLAY_PADDED_TO_PITCH);
		struct fl_display_buffer c = fitting(x, 36, 4, 5, 3, FL_DISPLAY_UNPADDED);
		struct fl_display_buffer d =
			fitting(x, x->hsub, x->vsub, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);

		expect_accepted(&a, FL_DISPLAY_PADDED_TO_PITCH);
		expect_accepted(&a, FL_DISPLAY_UNPADDED);
		expect_accepted(&b, FL_DISPLAY_PADDED_TO_PITCH);
		expect_accepted(&b, FL_DISPLAY_UNPADDED);
		expect_accepted(&c, FL_DISPLAY_UNPADDED);
		expect_accepted(&d, FL_DISPLAY_PADDED_TO_PITCH);
	}
}

FL_TEST(format_plane_count_must_match)
{
	for (size_t i = 0; i < N_EXPECTED; i++) {
		const struct expected *x = &expected[i];
		struct fl_display_buffer b = fitting(x, 12, 8, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);

		b.n_planes = x->planes + 1;
		expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "plane");
		b.n_planes = x->planes - 1;
		expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "plane");
		b.n_planes = 5;
		expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "not 5");
	}
}

FL_TEST(format_size_must_divide_by_the_subsampling)
{
	for (size_t i = 0; i < N_EXPECTED; i++) {
		const struct expected *x = &expected[i];

		/* Width (v 0), then height (v 1), from 0 up, in memory enough for all. */
		for (int v = 0; v < 2; v++) {
			uint32_t sub = v ? x->vsub : x->hsub;

			for (uint32_t n = 0; n < (v ? 16u : 36u); n++) {
				struct fl_display_buffer b =
					fitting(x, 36, 16, 64, 0, FL_DISPLAY_PADDED_TO_PITCH);

				*(v ? &b.h : &b.w) = n;
				if (n == 0)
					expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH,
						       v ? "height 0" : "width 0");
				else if (n % sub)
					expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH,
						       v ? "vertical chroma subsampling"
							 : "horizontal chroma subsampling");
				else
					expect_accepted(&b, FL_DISPLAY_PADDED_TO_PITCH);
			}
		}
	}
}

FL_TEST(format_pitch_one_byte_short_is_refused_on_every_plane)
{
	char want[64];

	for (size_t i = 0; i < N_EXPECTED; i++) {
		const struct expected *x = &expected[i];

		for (unsigned int p = 0; p < x->planes; p++) {
			struct fl_display_buffer b =
				fitting(x, 12, 8, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);

			b.pitch[p]--;
			snprintf(want, sizeof(want), "plane %u: pitch %" PRIu32 " is less", p,
				 b.pitch[p]);
			expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, want);
			expect_refused(&b, FL_DISPLAY_UNPADDED, want);
		}
	}
}

FL_TEST(format_memory_one_byte_short_is_refused_on_every_plane)
{
	char want[64];

	for (size_t i = 0; i < N_EXPECTED; i++) {
		const struct expected *x = &expected[i];

		for (unsigned int p = 0; p < x->planes; p++) {
			static const enum fl_display_padding quirks[] = {
				FL_DISPLAY_PADDED_TO_PITCH,
				FL_DISPLAY_UNPADDED,
			};

			for (size_t q = 0; q < 2; q++) {
				struct fl_display_buffer b = fitting(x, 36, 4, 5, 3, quirks[q]);

				b.size[p]--;
				snprintf(want, sizeof(want), "plane %u: offset 3", p);
				expect_refused(&b, quirks[q], want);
				expect_refused(&b, quirks[q], "past its");
				/* The offset counts: the same memory fits at offset 2. */
				b.offset[p]--;
				expect_accepted(&b, quirks[q]);
			}
		}
	}
}

FL_TEST(format_padded_quirk_needs_the_last_line_to_the_pitch)
{
	for (size_t i = 0; i < N_EXPECTED; i++) {
		const struct expected *x = &expected[i];
		/* Sized for an unpadded last line: 5 bytes short of the pitch. */
		struct fl_display_buffer b = fitting(x, 36, 4, 5, 0, FL_DISPLAY_UNPADDED);

		expect_accepted(&b, FL_DISPLAY_UNPADDED);
		expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "last line padded to the pitch");
		for (unsigned int p = 0; p < x->planes; p++)
			b.size[p] += 5;
		expect_accepted(&b, FL_DISPLAY_PADDED_TO_PITCH);
	}
}

FL_TEST(format_non_standard_fourcc_is_refused_by_the_generic_check)
{
	struct fl_display_buffer b = { .w = 4, .h = 4, .format = 0xDEADBEEF, .n_planes = 1 };

	b.pitch[0] = 16;
	b.size[0] = 64;
	expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "not a standard format");
}

/*
 * Sizes whose products wrap in 32 bits: ADF's arithmetic was 64-bit for
 * the end, and here it all is.
 */
FL_TEST(format_arithmetic_is_64_bit)
{
	const struct expected *xrgb = &expected[23], *nv12 = &expected[44];
	struct fl_display_buffer b;
	unsigned __int128 end;

	fl_assert_str_eq(xrgb->name, "XRGB8888");
	fl_assert_str_eq(nv12->name, "NV12");

	/* 2^30 pixels of 4 bytes: the row is 2^32, more than any pitch. */
	b = fitting(xrgb, 1, 1, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);
	b.w = 1u << 30;
	b.pitch[0] = UINT32_MAX;
	b.size[0] = UINT64_MAX;
	expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "is less than width 1073741824 x 4");
	expect_refused(&b, FL_DISPLAY_UNPADDED, "4294967296");

	/* (h - 1) × pitch is 2^32 exactly: 0 in 32 bits, in tiny memory. */
	b = fitting(xrgb, 1, 1, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);
	b.h = 0x10001;
	b.pitch[0] = 0x10000;
	b.size[0] = 0x10000;
	expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "past its 65536-byte memory");

	/* The largest end there is: every field at its maximum. */
	b = fitting(xrgb, 1, 1, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);
	b.w = UINT32_MAX / 4;
	b.h = UINT32_MAX;
	b.pitch[0] = UINT32_MAX;
	b.offset[0] = UINT32_MAX;
	end = (unsigned __int128)(UINT32_MAX - 1) * UINT32_MAX + UINT32_MAX + UINT32_MAX;
	fl_assert(end < ((unsigned __int128)1 << 64));
	b.size[0] = (uint64_t)end;
	expect_accepted(&b, FL_DISPLAY_PADDED_TO_PITCH);
	b.size[0]--;
	expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "past its");
	end = (unsigned __int128)(UINT32_MAX - 1) * UINT32_MAX + (UINT32_MAX / 4) * 4ull +
	      UINT32_MAX;
	b.size[0] = (uint64_t)end;
	expect_accepted(&b, FL_DISPLAY_UNPADDED);
	b.size[0]--;
	expect_refused(&b, FL_DISPLAY_UNPADDED, "past its");

	/* The chroma plane's end too: h / 2 lines. */
	b = fitting(nv12, 2, 2, 0, 0, FL_DISPLAY_PADDED_TO_PITCH);
	b.w = 2;
	b.h = UINT32_MAX - 1;
	b.pitch[0] = b.pitch[1] = UINT32_MAX;
	b.offset[1] = UINT32_MAX;
	b.size[0] = UINT64_MAX;
	end = (unsigned __int128)(UINT32_MAX / 2 - 1) * UINT32_MAX + UINT32_MAX + UINT32_MAX;
	b.size[1] = (uint64_t)end;
	expect_accepted(&b, FL_DISPLAY_PADDED_TO_PITCH);
	b.size[1]--;
	expect_refused(&b, FL_DISPLAY_PADDED_TO_PITCH, "plane 1");
}

/* A driver's own layout, for a custom format: its cpp counts (ADF ignored it). */
FL_TEST(format_custom_layout_uses_the_drivers_cpp)
{
	struct fl_display_layout l = { .planes = 1, .hsub = 1, .vsub = 1, .cpp = { 8 } };
	struct fl_display_buffer b = { .w = 16, .h = 2, .format = FL_FOURCC('T', '1', '6', 'x') };
	struct fl_display_error e = { 0 };

	b.n_planes = 1;
	b.pitch[0] = 128;
	b.size[0] = 256;
	fl_assert_int_eq(fl__display_buffer_check_layout(&b, 0, &l, FL_DISPLAY_PADDED_TO_PITCH, &e),
			 0);
	b.pitch[0] = 127;
	fl_assert_int_eq(fl__display_buffer_check_layout(&b, 0, &l, FL_DISPLAY_PADDED_TO_PITCH, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "x 8 bytes = 128"));

	/* A layout no buffer can have is refused, never divided by. */
	l.hsub = 0;
	fl_assert_int_eq(fl__display_buffer_check_layout(&b, 0, &l, FL_DISPLAY_PADDED_TO_PITCH, &e),
			 -EINVAL);
	l.hsub = 1;
	l.planes = 5;
	fl_assert_int_eq(fl__display_buffer_check_layout(&b, 0, &l, FL_DISPLAY_PADDED_TO_PITCH, &e),
			 -EINVAL);
}

FL_TEST(format_error_message_is_cut_visibly)
{
	struct fl_display_error e;
	char big[400];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fl_assert_int_eq(fl__display_fail(&e, -EINVAL, "%s", big), -EINVAL);
	fl_assert_int_eq(e.err, -EINVAL);
	fl_assert_int_eq(strlen(e.msg), sizeof(e.msg) - 1);
	fl_assert_str_eq(e.msg + sizeof(e.msg) - 4, "...");
	fl_assert_int_eq(fl__display_fail(NULL, -ENOENT, "x"), -ENOENT);
}

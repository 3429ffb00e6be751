/* SPDX-License-Identifier: MIT */
/*
 * The formats ADF's generic validation knows (adf_format.c: is_standard,
 * num_planes, plane_cpp, the chroma subsampling, is_rgb) in one table, and
 * its generic buffer check. docs/display.md gives the rules and where this
 * deliberately differs from ADF.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "display-format.h"
#include "ini.h"

int fl__display_fail(struct fl_display_error *e, int err, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return err;
	e->err = err;
	va_start(ap, fmt);
	fl__ini_vmsg(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * One line per format. RGB: one plane, cpp = bpp / 8. The 4444 family is
 * standard in ADF but not in its RGB list (no simple buffers of it).
 */
#define RGB(a, b, c, d, n, bytes, al)                                        \
	{                                                                    \
		FL_FOURCC(a, b, c, d), n, 1, 1, 1, { bytes, 0, 0 }, true, al \
	}
#define RGB_NOT_SIMPLE(a, b, c, d, n, bytes, al)                              \
	{                                                                     \
		FL_FOURCC(a, b, c, d), n, 1, 1, 1, { bytes, 0, 0 }, false, al \
	}
#define YUV(a, b, c, d, n, np, hs, vs, c0, c1, c2, al)                          \
	{                                                                       \
		FL_FOURCC(a, b, c, d), n, np, hs, vs, { c0, c1, c2 }, false, al \
	}

static const struct fl_display_format formats[] = {
	RGB('C', '8', ' ', ' ', "C8", 1, false),
	RGB('R', 'G', 'B', '8', "RGB332", 1, false),
	RGB('B', 'G', 'R', '8', "BGR233", 1, false),

	RGB_NOT_SIMPLE('X', 'R', '1', '2', "XRGB4444", 2, false),
	RGB_NOT_SIMPLE('X', 'B', '1', '2', "XBGR4444", 2, false),
	RGB_NOT_SIMPLE('R', 'X', '1', '2', "RGBX4444", 2, false),
	RGB_NOT_SIMPLE('B', 'X', '1', '2', "BGRX4444", 2, false),
	RGB_NOT_SIMPLE('A', 'R', '1', '2', "ARGB4444", 2, true),
	RGB_NOT_SIMPLE('A', 'B', '1', '2', "ABGR4444", 2, true),
	RGB_NOT_SIMPLE('R', 'A', '1', '2', "RGBA4444", 2, true),
	RGB_NOT_SIMPLE('B', 'A', '1', '2', "BGRA4444", 2, true),

	RGB('X', 'R', '1', '5', "XRGB1555", 2, false),
	RGB('X', 'B', '1', '5', "XBGR1555", 2, false),
	RGB('R', 'X', '1', '5', "RGBX5551", 2, false),
	RGB('B', 'X', '1', '5', "BGRX5551", 2, false),
	RGB('A', 'R', '1', '5', "ARGB1555", 2, true),
	RGB('A', 'B', '1', '5', "ABGR1555", 2, true),
	RGB('R', 'A', '1', '5', "RGBA5551", 2, true),
	RGB('B', 'A', '1', '5', "BGRA5551", 2, true),

	RGB('R', 'G', '1', '6', "RGB565", 2, false),
	RGB('B', 'G', '1', '6', "BGR565", 2, false),

	RGB('R', 'G', '2', '4', "RGB888", 3, false),
	RGB('B', 'G', '2', '4', "BGR888", 3, false),

	RGB('X', 'R', '2', '4', "XRGB8888", 4, false),
	RGB('X', 'B', '2', '4', "XBGR8888", 4, false),
	RGB('R', 'X', '2', '4', "RGBX8888", 4, false),
	RGB('B', 'X', '2', '4', "BGRX8888", 4, false),
	RGB('A', 'R', '2', '4', "ARGB8888", 4, true),
	RGB('A', 'B', '2', '4', "ABGR8888", 4, true),
	RGB('R', 'A', '2', '4', "RGBA8888", 4, true),
	RGB('B', 'A', '2', '4', "BGRA8888", 4, true),

	RGB('X', 'R', '3', '0', "XRGB2101010", 4, false),
	RGB('X', 'B', '3', '0', "XBGR2101010", 4, false),
	RGB('R', 'X', '3', '0', "RGBX1010102", 4, false),
	RGB('B', 'X', '3', '0', "BGRX1010102", 4, false),
	RGB('A', 'R', '3', '0', "ARGB2101010", 4, true),
	RGB('A', 'B', '3', '0', "ABGR2101010", 4, true),
	RGB('R', 'A', '3', '0', "RGBA1010102", 4, true),
	RGB('B', 'A', '3', '0', "BGRA1010102", 4, true),

	/* Packed 4:2:2: one plane of 2 bytes a pixel, width even. */
	YUV('Y', 'U', 'Y', 'V', "YUYV", 1, 2, 1, 2, 0, 0, false),
	YUV('Y', 'V', 'Y', 'U', "YVYU", 1, 2, 1, 2, 0, 0, false),
	YUV('U', 'Y', 'V', 'Y', "UYVY", 1, 2, 1, 2, 0, 0, false),
	YUV('V', 'Y', 'U', 'Y', "VYUY", 1, 2, 1, 2, 0, 0, false),
	YUV('A', 'Y', 'U', 'V', "AYUV", 1, 1, 1, 4, 0, 0, true),

	/* Luma plane, then one interleaved chroma plane. */
	YUV('N', 'V', '1', '2', "NV12", 2, 2, 2, 1, 2, 0, false),
	YUV('N', 'V', '2', '1', "NV21", 2, 2, 2, 1, 2, 0, false),
	YUV('N', 'V', '1', '6', "NV16", 2, 2, 1, 1, 2, 0, false),
	YUV('N', 'V', '6', '1', "NV61", 2, 2, 1, 1, 2, 0, false),

	/* Three planes of one byte a sample. */
	YUV('Y', 'U', 'V', '9', "YUV410", 3, 4, 4, 1, 1, 1, false),
	YUV('Y', 'V', 'U', '9', "YVU410", 3, 4, 4, 1, 1, 1, false),
	YUV('Y', 'U', '1', '1', "YUV411", 3, 4, 1, 1, 1, 1, false),
	YUV('Y', 'V', '1', '1', "YVU411", 3, 4, 1, 1, 1, 1, false),
	YUV('Y', 'U', '1', '2', "YUV420", 3, 2, 2, 1, 1, 1, false),
	YUV('Y', 'V', '1', '2', "YVU420", 3, 2, 2, 1, 1, 1, false),
	YUV('Y', 'U', '1', '6', "YUV422", 3, 2, 1, 1, 1, 1, false),
	YUV('Y', 'V', '1', '6', "YVU422", 3, 2, 1, 1, 1, 1, false),
	YUV('Y', 'U', '2', '4', "YUV444", 3, 1, 1, 1, 1, 1, false),
	YUV('Y', 'V', '2', '4', "YVU444", 3, 1, 1, 1, 1, 1, false),
};

#define N_FORMATS (sizeof(formats) / sizeof(formats[0]))

const struct fl_display_format *fl__display_formats(size_t *ret_n)
{
	*ret_n = N_FORMATS;
	return formats;
}

const struct fl_display_format *fl__display_format_find(uint32_t fourcc)
{
	for (size_t i = 0; i < N_FORMATS; i++)
		if (formats[i].fourcc == fourcc)
			return &formats[i];
	return NULL;
}

const struct fl_display_format *fl__display_format_by_name(const char *name, size_t len)
{
	for (size_t i = 0; i < N_FORMATS; i++)
		if (strlen(formats[i].name) == len && !memcmp(formats[i].name, name, len))
			return &formats[i];
	return NULL;
}

char *fl__display_format_str(uint32_t fourcc, char buf[5])
{
	for (int i = 0; i < 4; i++) {
		unsigned char c = (unsigned char)(fourcc >> (8 * i));

		buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[4] = '\0';
	return buf;
}

void fl__display_format_layout(const struct fl_display_format *f,
			       struct fl_display_layout *ret_layout)
{
	memset(ret_layout, 0, sizeof(*ret_layout));
	ret_layout->planes = f->planes;
	ret_layout->hsub = f->hsub;
	ret_layout->vsub = f->vsub;
	memcpy(ret_layout->cpp, f->cpp, sizeof(f->cpp));
}

int fl__display_buffer_check_layout(const struct fl_display_buffer *buf, size_t index,
				    const struct fl_display_layout *layout,
				    enum fl_display_padding padding, struct fl_display_error *e)
{
	char fcc[5];

	/* A driver's layout for its custom format: nothing below may divide by 0. */
	if (!layout->planes || layout->planes > FL_DISPLAY_MAX_PLANES || !layout->hsub ||
	    !layout->vsub)
		return fl__display_fail(e, -EINVAL,
					"buffer %zu: the driver's layout (%u planes, subsampling "
					"%ux%u) is not one a buffer can have",
					index, layout->planes, layout->hsub, layout->vsub);
	fl__display_format_str(buf->format, fcc);
	if (buf->n_planes != layout->planes)
		return fl__display_fail(e, -EINVAL,
					"buffer %zu: format %s has %u plane%s, not %" PRIu32, index,
					fcc, layout->planes, layout->planes == 1 ? "" : "s",
					buf->n_planes);
	for (int v = 0; v < 2; v++) {
		uint32_t size = v ? buf->h : buf->w;
		unsigned int sub = v ? layout->vsub : layout->hsub;

		if (size == 0 || size % sub)
			return fl__display_fail(
				e, -EINVAL,
				"buffer %zu: %s %" PRIu32
				" must be a non-zero multiple of %u (%s's %s chroma "
				"subsampling)",
				index, v ? "height" : "width", size, sub, fcc,
				v ? "vertical" : "horizontal");
	}
	for (unsigned int p = 0; p < layout->planes; p++) {
		uint64_t width = buf->w / (p ? layout->hsub : 1u);
		uint64_t height = buf->h / (p ? layout->vsub : 1u);
		uint64_t row = width * layout->cpp[p];
		uint64_t pitch = buf->pitch[p];
		uint64_t last_line = padding == FL_DISPLAY_UNPADDED ? row : pitch;
		uint64_t end;

		if (pitch < row)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu plane %u: pitch %" PRIu64
						" is less than width %" PRIu64
						" x %u bytes = %" PRIu64,
						index, p, pitch, width, layout->cpp[p], row);
		/*
		 * Below 2^64: (2^32 - 2) × (2^32 - 1) plus a last line and an
		 * offset each under 2^32 (the last line is at most the pitch
		 * once the check above has passed).
		 */
		end = (height - 1) * pitch + last_line + buf->offset[p];
		if (end > buf->size[p])
			return fl__display_fail(
				e, -EINVAL,
				"buffer %zu plane %u: offset %" PRIu32 " + %" PRIu64
				" lines of pitch %" PRIu64 " (%s) end at byte %" PRIu64
				", past its %" PRIu64 "-byte memory",
				index, p, buf->offset[p], height, pitch,
				padding == FL_DISPLAY_UNPADDED ? "unpadded last line"
							       : "last line padded to the pitch",
				end, buf->size[p]);
	}
	return 0;
}

int fl__display_buffer_check(const struct fl_display_buffer *buf, size_t index,
			     enum fl_display_padding padding, struct fl_display_error *e)
{
	const struct fl_display_format *f = fl__display_format_find(buf->format);
	struct fl_display_layout layout;
	char fcc[5];

	if (!f)
		return fl__display_fail(e, -EINVAL,
					"buffer %zu: format %s (0x%08" PRIx32
					") is not a standard format",
					index, fl__display_format_str(buf->format, fcc),
					buf->format);
	fl__display_format_layout(f, &layout);
	return fl__display_buffer_check_layout(buf, index, &layout, padding, e);
}

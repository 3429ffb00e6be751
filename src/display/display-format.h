/* SPDX-License-Identifier: MIT */
/*
 * Pixel formats and ADF's generic buffer check (docs/display.md, "Formats"
 * and "The buffer check"). Pure functions over the buffer's description:
 * no fds, no memory is touched. The display service resolves each plane's
 * fd to its size before it asks.
 */
#ifndef FL_DISPLAY_FORMAT_H
#define FL_DISPLAY_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ADF's limits (<video/adf.h>); docs/display.md lists where each applies. */
#define FL_DISPLAY_MAX_PLANES	   4
#define FL_DISPLAY_MAX_BUFFERS	   56
#define FL_DISPLAY_MAX_INTERFACES  1024
#define FL_DISPLAY_MAX_ENGINES	   1024 /* ours: ADF's idr had no bound */
#define FL_DISPLAY_MAX_ATTACHMENTS 512
#define FL_DISPLAY_MAX_MODES	   60
#define FL_DISPLAY_MAX_FORMATS	   1024
#define FL_DISPLAY_MAX_CUSTOM_DATA 4096
#define FL_DISPLAY_NAME_LEN	   32 /* with the NUL */

/* How long a message of struct fl_display_error may be, with the NUL. */
#define FL_DISPLAY_ERROR_MAX 256

/**
 * struct fl_display_error - why a display call failed
 * @err: the negative errno the call returned (0: no error)
 * @msg: a one-line reason naming the object and the rule, NUL-terminated;
 *	cut with "..." when longer than the buffer
 *
 * Every function of src/display that takes one fills it on failure and
 * leaves it alone on success. A NULL pointer means the caller wants the
 * errno only.
 */
struct fl_display_error {
	int err;
	char msg[FL_DISPLAY_ERROR_MAX];
};

/*
 * Sets @e (if not NULL) to @err and the formatted message.
 * Return: @err, so that callers can `return fl__display_fail(...)`.
 */
__attribute__((format(printf, 3, 4))) int fl__display_fail(struct fl_display_error *e, int err,
							   const char *fmt, ...);

/* A DRM fourcc from its four characters, as <drm_fourcc.h> builds it. */
#define FL_FOURCC(a, b, c, d)                                                                  \
	((uint32_t)(uint8_t)(a) | (uint32_t)(uint8_t)(b) << 8 | (uint32_t)(uint8_t)(c) << 16 | \
	 (uint32_t)(uint8_t)(d) << 24)

/**
 * struct fl_display_format - one of the formats ADF's generic check knows
 * @fourcc: the DRM fourcc
 * @name: the DRM name without its DRM_FORMAT_ prefix ("XRGB8888")
 * @planes: how many planes a buffer of this format has (1 to 3)
 * @hsub: horizontal chroma subsampling of planes 1 and 2 (1, 2 or 4)
 * @vsub: vertical chroma subsampling of planes 1 and 2 (1, 2 or 4)
 * @cpp: bytes per pixel of each plane (0 past @planes)
 * @rgb: in ADF's RGB list, the formats a simple buffer may have
 * @alpha: has an alpha channel
 */
struct fl_display_format {
	uint32_t fourcc;
	const char *name;
	uint8_t planes;
	uint8_t hsub, vsub;
	uint8_t cpp[3];
	bool rgb;
	bool alpha;
};

/**
 * fl__display_formats() - every standard format, in DRM's header order
 * @ret_n: set to how many
 *
 * Return: the table (static, never freed).
 */
const struct fl_display_format *fl__display_formats(size_t *ret_n);

/**
 * fl__display_format_find() - a standard format by fourcc
 *
 * Return: its entry, or NULL for a fourcc ADF does not know (a driver's
 * custom format, or garbage).
 */
const struct fl_display_format *fl__display_format_find(uint32_t fourcc);

/**
 * fl__display_format_by_name() - a standard format by DRM name
 * @name: "XRGB8888" (case matters), @len bytes, no NUL needed
 *
 * Return: its entry or NULL.
 */
const struct fl_display_format *fl__display_format_by_name(const char *name, size_t len);

/**
 * fl__display_format_str() - the fourcc's four characters, as libadf's
 * adf_format_str() writes them
 * @buf: 5 bytes; non-printable characters come out as '?'
 *
 * Return: @buf.
 */
char *fl__display_format_str(uint32_t fourcc, char buf[5]);

/**
 * enum fl_display_padding - how far the last line of a plane must reach
 * @FL_DISPLAY_PADDED_TO_PITCH: to the full pitch (ADF's default,
 *	ADF_BUFFER_PADDED_TO_PITCH)
 * @FL_DISPLAY_UNPADDED: only to width × cpp (ADF_BUFFER_UNPADDED), for
 *	hardware that never reads past the last pixel
 *
 * A device's quirk: it says how much memory the scan-out may touch.
 */
enum fl_display_padding {
	FL_DISPLAY_PADDED_TO_PITCH = 0,
	FL_DISPLAY_UNPADDED = 1,
};

/**
 * struct fl_display_buffer - one buffer of a post, as the check sees it
 * @engine: the overlay engine id it is posted to
 * @w: width in pixels
 * @h: height in pixels
 * @format: DRM fourcc
 * @n_planes: planes the poster gave (ADF: at most 4)
 * @offset: byte offset of each plane's first pixel in its memory
 * @pitch: bytes from one line to the next, per plane
 * @size: size in bytes of the memory each plane lives in (the dma-buf's
 *	size, resolved from the plane's fd by the service)
 *
 * The fields are adf_buffer_config's, with the fds replaced by what the
 * check needs of them.
 */
struct fl_display_buffer {
	uint32_t engine;
	uint32_t w, h;
	uint32_t format;
	uint32_t n_planes;
	uint32_t offset[FL_DISPLAY_MAX_PLANES];
	uint32_t pitch[FL_DISPLAY_MAX_PLANES];
	uint64_t size[FL_DISPLAY_MAX_PLANES];
};

/**
 * struct fl_display_layout - what the generic check checks a buffer against
 * @planes: plane count (1 to 4)
 * @hsub: horizontal subsampling of planes 1 and up (≥ 1)
 * @vsub: vertical subsampling of planes 1 and up (≥ 1)
 * @cpp: bytes per pixel of each plane
 *
 * A standard format's comes from the table (fl__display_format_layout()); a
 * driver checking a custom format that looks like a standard one fills its
 * own, as ADF drivers called adf_format_validate_yuv() with theirs.
 */
struct fl_display_layout {
	uint8_t planes;
	uint8_t hsub, vsub;
	uint8_t cpp[FL_DISPLAY_MAX_PLANES];
};

/* The layout of standard format @f. */
void fl__display_format_layout(const struct fl_display_format *f,
			       struct fl_display_layout *ret_layout);

/**
 * fl__display_buffer_check_layout() - ADF's generic buffer check
 * @buf: the buffer
 * @index: its index in the post, for the message
 * @layout: what it must look like
 * @padding: the device's padding quirk
 * @e: the reason on failure (may be NULL)
 *
 * In order, as adf_format_validate_yuv(): the plane count equals
 * @layout's; w and h are non-zero and divisible by the subsampling; then
 * per plane p (planes past 0 are w/hsub × h/vsub): pitch ≥ width × cpp, and
 * (height − 1) × pitch + last line + offset ≤ size, the last line being
 * the pitch, or width × cpp when @padding is FL_DISPLAY_UNPADDED. Every
 * product and sum is 64-bit: no input wraps around (ADF computed the
 * unpadded last line in 32 bits).
 *
 * Unlike ADF, the cpp is always @layout's: ADF re-derived it from the
 * fourcc, which made a driver's cpp for a custom format, and the pitch
 * check of formats without a bpp entry (the 4444 family, AYUV), vacuous.
 *
 * Return: 0, or -EINVAL with the buffer, plane and rule in @e.
 */
int fl__display_buffer_check_layout(const struct fl_display_buffer *buf, size_t index,
				    const struct fl_display_layout *layout,
				    enum fl_display_padding padding, struct fl_display_error *e);

/**
 * fl__display_buffer_check() - the generic check of a standard format
 *
 * As fl__display_buffer_check_layout() with the layout of @buf's format.
 * Return: 0, or -EINVAL (also for a fourcc that is not standard: custom
 * formats are the driver's to check).
 */
int fl__display_buffer_check(const struct fl_display_buffer *buf, size_t index,
			     enum fl_display_padding padding, struct fl_display_error *e);

#endif /* FL_DISPLAY_FORMAT_H */

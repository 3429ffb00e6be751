/* SPDX-License-Identifier: MIT */
/*
 * Software composition of a frame from layers (docs/display.md,
 * "Composition"), on pixman. A pure module: it knows mapped memory, pixel
 * formats and the hardware-independent layer description of issue 17 item
 * 3, nothing of the service, its fds or its fences. The virtual driver
 * composes its engines with it, and so will a hardware composer's fallback.
 *
 * Every call checks the whole description before it touches a pixel, and
 * never reads or writes outside the planes and the destination it is
 * given (every rect is checked against its buffer in 64 bits).
 */
#ifndef FL_DISPLAY_COMPOSE_H
#define FL_DISPLAY_COMPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "display-format.h"

/* Largest width or height of a layer, its rects and the destination:
 * pixman's 16.16 transforms must hold every coordinate. */
#define FL_DISPLAY_COMPOSE_MAX_SIZE 16384
/* Most layers in one frame: a post's buffers. */
#define FL_DISPLAY_COMPOSE_MAX_LAYERS FL_DISPLAY_MAX_BUFFERS
/* Most damage rectangles in one frame. */
#define FL_DISPLAY_COMPOSE_MAX_DAMAGE 64

/*
 * The blend modes, transforms and filters (enum fl_display_blend,
 * FL_DISPLAY_TRANSFORM_*, enum fl_display_filter) are the public layer
 * description's, in <fenceline/display.h>.
 */

/**
 * struct fl_display_compose_plane - one plane of mapped memory
 * @map: the start of the memory (the mapping of the plane's fd)
 * @size: bytes mapped at @map
 * @offset: byte offset of the plane's first pixel from @map
 * @pitch: bytes from one line to the next
 */
struct fl_display_compose_plane {
	const void *map;
	uint64_t size;
	uint32_t offset;
	uint32_t pitch;
};

/**
 * struct fl_display_compose_layer - one layer, hardware-independently
 * @fourcc: the buffer's DRM fourcc (fl__display_compose_format_ok())
 * @w: the buffer's width in pixels
 * @h: the buffer's height in pixels
 * @n_planes: planes given (the format's count)
 * @plane: the planes; the module only reads them
 * @src_x: left of the source rect in the buffer, 16.16 fixed point
 * @src_y: top of the source rect, 16.16
 * @src_w: width of the source rect, 16.16, non-zero
 * @src_h: height of the source rect, 16.16, non-zero
 * @dst_x: left of the destination rect in the destination, pixels; the
 *	rect may reach past the destination's edges (what is outside is
 *	clipped, as atomic KMS's CRTC rect)
 * @dst_y: top of the destination rect
 * @dst_w: width of the destination rect, 1 to FL_DISPLAY_COMPOSE_MAX_SIZE;
 *	the source rect is scaled to it
 * @dst_h: height of the destination rect, likewise
 * @zpos: z order: higher is nearer the viewer; no two layers share one
 * @blend: an enum fl_display_blend
 * @alpha: plane alpha, 0 (invisible) to 0xffff (as the pixels say)
 * @transform: FL_DISPLAY_TRANSFORM_*, 0 to 7
 * @filter: an enum fl_display_filter
 */
struct fl_display_compose_layer {
	uint32_t fourcc;
	uint32_t w, h;
	uint32_t n_planes;
	struct fl_display_compose_plane plane[FL_DISPLAY_MAX_PLANES];
	uint32_t src_x, src_y, src_w, src_h;
	int32_t dst_x, dst_y;
	uint32_t dst_w, dst_h;
	uint32_t zpos;
	uint32_t blend;
	uint16_t alpha;
	uint32_t transform;
	uint32_t filter;
};

/**
 * struct fl_display_compose_target - the destination of a frame
 * @map: the mapped memory, written
 * @size: bytes mapped at @map
 * @offset: byte offset of the first pixel
 * @pitch: bytes from one line to the next, a multiple of 4
 * @fourcc: an RGB format of fl__display_compose_format_ok()
 * @w: width in pixels
 * @h: height in pixels
 */
struct fl_display_compose_target {
	void *map;
	uint64_t size;
	uint32_t offset;
	uint32_t pitch;
	uint32_t fourcc;
	uint32_t w, h;
};

/**
 * struct fl_display_compose_rect - a rectangle of the destination, pixels
 */
struct fl_display_compose_rect {
	int32_t x, y;
	uint32_t w, h;
};

/**
 * struct fl_display_color - a colour, 16 bits per channel, premultiplied
 * (each of @r, @g, @b at most @a), as KMS's BACKGROUND_COLOR
 */
struct fl_display_color {
	uint16_t r, g, b, a;
};

/**
 * struct fl_display_frame - one frame to compose
 * @target: where it goes
 * @background: what fills the destination where no layer is
 * @layers: the layers, in any order (@zpos orders them)
 * @n_layers: 0 to FL_DISPLAY_COMPOSE_MAX_LAYERS
 * @damage: the rectangles to redraw, or NULL for the whole destination;
 *	pixels outside them keep their values. Parts outside the
 *	destination are ignored. With @n_damage 0 nothing is drawn.
 * @n_damage: 0 to FL_DISPLAY_COMPOSE_MAX_DAMAGE
 */
struct fl_display_frame {
	struct fl_display_compose_target target;
	struct fl_display_color background;
	const struct fl_display_compose_layer *layers;
	size_t n_layers;
	const struct fl_display_compose_rect *damage;
	size_t n_damage;
};

/**
 * enum fl_display_compose_use - what a format may be in a frame
 * @FL_DISPLAY_COMPOSE_SOURCE: a layer's buffer
 * @FL_DISPLAY_COMPOSE_TARGET: the destination
 */
enum fl_display_compose_use {
	FL_DISPLAY_COMPOSE_SOURCE = 1,
	FL_DISPLAY_COMPOSE_TARGET = 2,
};

/**
 * fl__display_compose_format_ok() - whether the compositor handles a format
 * @fourcc: DRM fourcc
 * @use: FL_DISPLAY_COMPOSE_SOURCE or FL_DISPLAY_COMPOSE_TARGET
 *
 * Sources: the 8888 RGB formats with and without alpha (ARGB, XRGB, ABGR,
 * XBGR, RGBA, RGBX, BGRA, BGRX), RGB888, BGR888, RGB565, BGR565, and NV12,
 * YUV420 and YVU420 (BT.601 limited range). Targets: the RGB ones.
 *
 * Return: true or false.
 */
bool fl__display_compose_format_ok(uint32_t fourcc, enum fl_display_compose_use use);

/**
 * fl__display_compose_layer_place() - set @c's rects, z, blend, plane
 * alpha, transform and filter from a post's layer @ly (the buffer fields
 * are the caller's: fourcc, size, planes)
 */
void fl__display_compose_layer_place(struct fl_display_compose_layer *c,
				     const struct fl_display_layer *ly);

struct fl_display_compositor;

/**
 * fl__display_compose_new() - a compositor: scratch memory kept from one
 * frame to the next, so that a frame allocates nothing once warm
 *
 * Return: the compositor (free with fl__display_compose_free()), or NULL
 * with errno ENOMEM.
 */
struct fl_display_compositor *fl__display_compose_new(void);

/* Frees @c and its scratch memory; NULL is a no-op. */
void fl__display_compose_free(struct fl_display_compositor *c);

/**
 * fl__display_compose_check() - the checks of fl__display_compose(), alone
 * @frame: the frame; nothing is read of its memory but its description
 * @e: the reason on failure (may be NULL)
 *
 * In order: the target (format, size, ADF's buffer check padded to the
 * pitch, pitch and address multiples of 4), the background (premultiplied),
 * the damage (count, non-zero sizes), then each layer in the order given:
 * format, sizes, ADF's buffer check of its planes (padded to the pitch),
 * pitch and address alignment of RGB planes, the source rect inside the
 * buffer, the destination rect's size, blend, transform, filter; and last,
 * distinct z orders.
 *
 * Return: 0, or -EINVAL with a message naming the layer (by its index in
 * @frame->layers), the destination or the damage rect, and the rule.
 */
int fl__display_compose_check(const struct fl_display_frame *frame, struct fl_display_error *e);

/**
 * fl__display_compose() - compose a frame
 * @c: the compositor (its scratch memory)
 * @frame: the frame
 * @e: the reason on failure (may be NULL)
 *
 * Checks @frame as fl__display_compose_check() does, then, within the
 * damage, fills the background and draws the layers from the lowest z
 * upwards.
 *
 * Return: 0; -EINVAL for a frame the checks refuse (nothing written);
 * -ENOMEM when scratch memory (NV12/YUV conversion, straight alpha) or
 * pixman's images cannot be had (the damage may be partly drawn).
 */
int fl__display_compose(struct fl_display_compositor *c, const struct fl_display_frame *frame,
			struct fl_display_error *e);

#endif /* FL_DISPLAY_COMPOSE_H */

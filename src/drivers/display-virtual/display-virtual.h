/* SPDX-License-Identifier: MIT */
/*
 * The virtual display driver (docs/display.md, "The virtual driver"): a
 * headless device whose vsync comes from the service's clock, whose simple
 * buffers are memfds and whose screen is the last post it was given. The
 * display service finds it by the config's "driver = virtual".
 */
#ifndef FL_DISPLAY_VIRTUAL_H
#define FL_DISPLAY_VIRTUAL_H

#define FL_USE_UNSTABLE_DRIVER_API
#include <fenceline/driver/display.h>

#include "display-presented.h"

extern const struct fl_display_driver_ops fl__display_virtual_ops;

/*
 * The virtual driver's one custom event (docs/display.md, "The virtual
 * driver"): on the device (a device handle subscribes with
 * fl_display_set_event() or libadf's adf_set_event()), after every
 * FL_DISPLAY_VIRTUAL_FRAMES_EVERY-th post it shows, how many it has shown
 * since the device was made and when (CLOCK_MONOTONIC), 24 bytes with the
 * header. Other custom types on the device or an interface: -EINVAL;
 * engines have no driver events (-EOPNOTSUPP).
 */
#define FL_DISPLAY_VIRTUAL_EVENT_FRAMES FL_DISPLAY_EVENT_DEVICE_CUSTOM
#define FL_DISPLAY_VIRTUAL_FRAMES_EVERY 4

struct fl_display_virtual_frames_event {
	struct fl_display_event base; /* type 128, length 24 */
	uint64_t flips __attribute__((aligned(8)));
	uint64_t timestamp_ns;
};

/*
 * fl__display_virtual_frame() - the vsync of interface @intf that comes
 * @n periods after the one at @base_ns, in the timings of @mode: base +
 * n × htotal × vtotal / clock, in exact integer arithmetic (no period is
 * rounded, so no error accumulates). 0 for a mode without timings.
 */
uint64_t fl__display_virtual_frame(const struct fl_display_mode *mode, uint64_t base_ns,
				   uint64_t n);

/*
 * The virtual driver's own format (docs/display.md, "The virtual driver's
 * tiled format"): XRGB8888 in 4 × 4 tiles, fourcc "XT44". A tile is 64
 * bytes, its 4 lines of 4 pixels one after the other; tiles follow each
 * other along a row of tiles; row of tiles r starts at offset + r × 4 ×
 * pitch. A config's engine lists it as fourcc:XT44.
 */
#define FL_DISPLAY_VIRTUAL_FORMAT_XT44 FL_FOURCC('X', 'T', '4', '4')

/*
 * fl__display_virtual_tiled_check() - the validate_custom_format of XT44
 * @b: buffer @index of a post, its plane's memory size resolved
 *
 * One plane; w and h not 0; the pitch a multiple of 16 and at least 16
 * bytes per column of tiles (ceil(w / 4) × 16); the offset a multiple of
 * 4; offset + pitch × 4 × ceil(h / 4) within the memory, in 64 bits.
 * Return: 0, or -EINVAL with the rule and the numbers in @e (may be NULL);
 * any other fourcc is -EINVAL too.
 */
int fl__display_virtual_tiled_check(const struct fl_display_driver_buffer *b, size_t index,
				    struct fl_display_error *e);

/*
 * fl__display_virtual_detile() - a linear XRGB8888 copy of checked XT44
 * buffer @b: *@ret_linear is @b with a new memfd (the caller's to close),
 * offset 0 and pitch w × 4. Return: 0, or a negative errno (memfd, mmap).
 */
int fl__display_virtual_detile(const struct fl_display_driver_buffer *b,
			       struct fl_display_driver_buffer *ret_linear);

/* A live source of an engine (source.c; docs/display.md, "Live sources"). */
struct fl__vsource;

/*
 * fl__display_virtual_source_new() - a live source from @src, checked by
 * the service; a STREAM's fd is taken (closed on failure too) and read on
 * @host's loop without ever blocking. Return: 0 and *@ret, or -ENOMEM
 * (explained in @e).
 */
int fl__display_virtual_source_new(const struct fl_display_host *host,
				   const struct fl_display_source *src, struct fl__vsource **ret,
				   struct fl_display_error *e);

/* Frees @s, its frames, and stops reading and closes its stream (NULL: nothing). */
void fl__display_virtual_source_free(struct fl__vsource *s);

/* The bytes of frames @s holds (NULL: 0): three frames for a stream, none for a pattern. */
uint64_t fl__display_virtual_source_bytes(const struct fl__vsource *s);

/* A vsync of an interface that shows @s: its newest complete frame becomes the one shown. */
void fl__display_virtual_source_latch(struct fl__vsource *s);

/*
 * fl__display_virtual_source_frame() - what @s shows at frame number
 * @frame, as a buffer of engine @engine for the compositor (a new memfd,
 * the caller's to close) and its layer. Return: 0, -ENODATA for a stream
 * that has shown no complete frame yet, or memfd's and mmap()'s -errno.
 */
int fl__display_virtual_source_frame(struct fl__vsource *s, uint32_t engine, uint64_t frame,
				     struct fl_display_driver_buffer *ret_buf,
				     struct fl_display_layer *ret_layer);

/*
 * fl__display_virtual_pattern_px() - pixel (@x, @y) of the w × h test
 * pattern at frame @frame, XRGB8888: the top two thirds (of what is above
 * the strip) SMPTE's seven 75% bars, then a grey ramp, (x + 4 × frame) mod
 * 256, moving with the frames, and, when @h is above 32, a 16-line strip at
 * the bottom with the frame number's low 32 bits in 32 cells, the top bit
 * first, white for 1 and black for 0.
 */
uint32_t fl__display_virtual_pattern_px(uint32_t x, uint32_t y, uint32_t w, uint32_t h,
					uint64_t frame);

#endif /* FL_DISPLAY_VIRTUAL_H */

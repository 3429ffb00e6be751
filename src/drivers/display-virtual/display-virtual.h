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

extern const struct fl_display_driver_ops fl__display_virtual_ops;

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

#endif /* FL_DISPLAY_VIRTUAL_H */

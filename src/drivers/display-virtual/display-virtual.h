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

#endif /* FL_DISPLAY_VIRTUAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * The terminal display driver (terminal.c; docs/display.md, "The terminal
 * driver"): the virtual driver shown in a terminal. The display service
 * finds it by the config's "driver = terminal".
 */
#ifndef FL_DISPLAY_TERMINAL_H
#define FL_DISPLAY_TERMINAL_H

#define FL_USE_UNSTABLE_DRIVER_API
#include <fenceline/driver/display.h>

extern const struct fl_display_driver_ops fl__display_terminal_ops;

/*
 * Its driver event, a key typed in the terminal, is the key event of the
 * drivers built on the virtual one (FL_DISPLAY_TERMINAL_EVENT_KEY in
 * display-presented.h); the virtual driver's FRAMES event (128) comes too.
 */

#endif /* FL_DISPLAY_TERMINAL_H */

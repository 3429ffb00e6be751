/* SPDX-License-Identifier: MIT */
/*
 * The window display driver (window.c; docs/display.md, "The window
 * driver"): the virtual driver shown in a desktop window through SDL2. The
 * display service finds it by the config's "driver = window"; it is built
 * only where meson found SDL2 (FL_HAVE_WINDOW_DRIVER).
 *
 * Its driver event is the key event the terminal driver sends too
 * (FL_DISPLAY_TERMINAL_EVENT_KEY, struct fl_display_terminal_key_event in
 * display-presented.h): one kind of key for a program, whichever shows it.
 */
#ifndef FL_DISPLAY_WINDOW_H
#define FL_DISPLAY_WINDOW_H

#define FL_USE_UNSTABLE_DRIVER_API
#include <fenceline/driver/display.h>

extern const struct fl_display_driver_ops fl__display_window_ops;

#endif /* FL_DISPLAY_WINDOW_H */

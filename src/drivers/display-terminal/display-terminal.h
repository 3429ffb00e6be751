/* SPDX-License-Identifier: MIT */
/*
 * The terminal display driver (terminal.c; docs/display.md, "The terminal
 * driver"): the virtual driver shown in a terminal. The display service
 * finds it by the config's "driver = terminal".
 */
#ifndef FL_DISPLAY_TERMINAL_H
#define FL_DISPLAY_TERMINAL_H

#include <stdint.h>

#define FL_USE_UNSTABLE_DRIVER_API
#include <fenceline/driver/display.h>

extern const struct fl_display_driver_ops fl__display_terminal_ops;

/*
 * Its driver event: a key typed in the terminal, on the device (a device
 * handle subscribes with fl_display_set_event() or libadf's
 * adf_set_event()); 16 bytes with the header. @code is the evdev key
 * (<linux/input-event-codes.h>), 0 for a character without a key of its
 * own; @mods FL_TERM_MOD_* (1 Shift, 2 Alt, 4 Ctrl); @ch the Unicode
 * character typed, 0 for none. The virtual driver's FRAMES event (128)
 * comes too.
 */
#define FL_DISPLAY_TERMINAL_EVENT_KEY (FL_DISPLAY_EVENT_DEVICE_CUSTOM + 1)

struct fl_display_terminal_key {
	uint16_t code;
	uint16_t mods;
	uint32_t ch;
};

struct fl_display_terminal_key_event {
	struct fl_display_event base; /* type 129, length 16 */
	struct fl_display_terminal_key key;
};

#endif /* FL_DISPLAY_TERMINAL_H */

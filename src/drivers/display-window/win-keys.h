/* SPDX-License-Identifier: MIT */
/*
 * The window driver's keyboard (docs/display.md, "The window driver"):
 * SDL's key events as the evdev keys and modifiers of the key event the
 * terminal driver sends too (display-presented.h), so that a program reads
 * the same events from a window as from a terminal. Pure code.
 */
#ifndef FL_WIN_KEYS_H
#define FL_WIN_KEYS_H

#include <stdint.h>

#include <SDL_keyboard.h>

/* The evdev KEY_* code of SDL scancode @sc (a USB HID usage); 0 for a key it does not map, a modifier or a lock. */
uint16_t fl__win_key_code(SDL_Scancode sc);

/* SDL's KMOD_* bits @sdl_mods as FL_DISPLAY_KEY_* (Shift, Alt, Ctrl; either side). */
uint16_t fl__win_key_mods(uint16_t sdl_mods);

/* The character a terminal types for key @code when SDL sends no text for it (Enter, Tab, Esc); else 0. */
uint32_t fl__win_key_control_ch(uint16_t code);

#endif /* FL_WIN_KEYS_H */

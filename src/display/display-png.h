/* SPDX-License-Identifier: MIT */
/*
 * A composed frame as a PNG file (docs/display.md, "Composition"): for
 * fl-displayctl's capture and for tests that show their frames to people.
 * Not "png.h": that name is libpng's, and src/display is on the include
 * path of everything that includes this.
 */
#ifndef FL_DISPLAY_PNG_H
#define FL_DISPLAY_PNG_H

#include "compose.h"

/**
 * fl__display_png_write() - write an RGB frame as an 8-bit PNG
 * @path: the file to create or replace
 * @frame: the frame (its memory is only read); any RGB format the
 *	compositor writes (fl__display_compose_format_ok() with
 *	FL_DISPLAY_COMPOSE_TARGET)
 * @e: the reason on failure (may be NULL)
 *
 * A format with alpha becomes RGBA with straight (un-premultiplied) alpha,
 * as PNG stores it; one without becomes RGB. 565 channels are widened as
 * pixman widens them (bit replication).
 *
 * Return: 0; -EINVAL for a frame the compositor's checks refuse; -ENOMEM;
 * the errno of creating or writing @path (-EIO when libpng fails).
 */
int fl__display_png_write(const char *path, const struct fl_display_compose_target *frame,
			  struct fl_display_error *e);

#endif /* FL_DISPLAY_PNG_H */

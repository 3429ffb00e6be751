/* SPDX-License-Identifier: MIT */
/* What the display service tests share (display-helpers.c): a post, frames as PNG. */
#ifndef FL_TEST_DISPLAY_HELPERS_H
#define FL_TEST_DISPLAY_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/display.h>

/*
 * fl_display_post() of @n_bufs buffers with @layers and @wb (each may be
 * NULL) on @n_intfs interfaces, with @flags; a PRESENT fence into *@fence
 * when @fence is given, else none. Return: fl_display_post()'s.
 */
int fl_test_post(struct fl_display_handle *dev, const uint32_t *intfs, size_t n_intfs,
		 const struct fl_display_buffer *bufs, size_t n_bufs,
		 const struct fl_display_layer *layers, const struct fl_display_writeback *wb,
		 uint32_t flags, int *fence, struct fl_display_error *e);

/*
 * Writes the XRGB8888 frame @p (@h lines of @pitch bytes, @w pixels) as
 * @name.png in $FL_TEST_FRAME_DIR, else FL_TEST_FRAME_DEFAULT_DIR (the
 * meson log dir), and prints its path; a failure to write fails the test.
 */
void fl_test_save_frame(const uint32_t *p, uint32_t w, uint32_t h, uint32_t pitch,
			const char *name);

#endif /* FL_TEST_DISPLAY_HELPERS_H */

/* SPDX-License-Identifier: MIT */
/* display-helpers.h: what the display service tests share. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fenceline/display.h>

#include "display-helpers.h"
#include "display-png.h"
#include "runner.h"

int fl_test_post(struct fl_display_handle *dev, const uint32_t *intfs, size_t n_intfs,
		 const struct fl_display_buffer *bufs, size_t n_bufs,
		 const struct fl_display_layer *layers, const struct fl_display_writeback *wb,
		 uint32_t flags, int *fence, struct fl_display_error *e)
{
	struct fl_display_post p = { .intfs = intfs,
				     .n_intfs = n_intfs,
				     .bufs = bufs,
				     .n_bufs = n_bufs,
				     .flags = flags,
				     .fence_type = fence ? FL_DISPLAY_FENCE_PRESENT
							 : FL_DISPLAY_FENCE_NONE,
				     .layers = layers,
				     .writeback = wb };

	return fl_display_post(dev, &p, fence, e);
}

void fl_test_save_frame(const uint32_t *p, uint32_t w, uint32_t h, uint32_t pitch, const char *name)
{
	const char *dir = getenv("FL_TEST_FRAME_DIR");
	struct fl_display_compose_target t = { (void *)p, (uint64_t)pitch * h,		 0,
					       pitch,	  FL_FOURCC('X', 'R', '2', '4'), w,
					       h };
	struct fl_display_error e;
	char path[512];

	if (!dir || !*dir)
		dir = FL_TEST_FRAME_DEFAULT_DIR;
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/%s.png", dir, name);
	if (fl__display_png_write(path, &t, &e) != 0)
		fl__test_fail(__FILE__, __LINE__, "png: %s", e.msg);
	printf("frame: %s\n", path);
}

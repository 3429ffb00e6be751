/* SPDX-License-Identifier: MIT */
/* pipeline-demo's scene (scene.h). */
#include <errno.h>
#include <string.h>

#include <fenceline/display.h>

#include "pattern.h"
#include "scene.h"

#define EVEN(v) ((v) & ~1u)

int scene_layout(uint32_t sw, uint32_t sh, struct scene_geom out[SCENE_LAYERS])
{
	uint32_t strip = PATTERN_CELLS * PATTERN_CELL, bar_h, third, top;

	if (sw < 3 * (strip + 8) || sh < 64)
		return -ERANGE;
	bar_h = EVEN(sh / 27 > PATTERN_CELL * 2 ? sh / 27 : PATTERN_CELL * 2);
	third = EVEN(sw / 3 - 8);
	top = bar_h + 8;
	/*
	 * The layers do not overlap, so z says only how the hardware composer may group them: the
	 * RGB ones at the bottom, so that one client target on the RGB engine can take them while
	 * the YUV ones go on their own engines where the device has them.
	 *
	 * Four producers with their own rates: the camera and the video at their sources' rates,
	 * the app at the display's, the status bar twice a second (a mostly static layer: the
	 * hardware composer's plan reuse and damage show on it).
	 */
	out[SCENE_STATUS] =
		(struct scene_geom){ "statusbar", FL_FOURCC('A', 'R', '2', '4'), sw, bar_h, 0, 0,
				     1,		  FL_DISPLAY_BLEND_NONE,	 2 };
	out[SCENE_CAMERA] = (struct scene_geom){ "camera", FL_FOURCC('N', 'V', '1', '2'),
						 third,	   EVEN((sh - top) * 5 / 9),
						 0,	   (int32_t)top,
						 3,	   FL_DISPLAY_BLEND_NONE,
						 30 };
	out[SCENE_VIDEO] = (struct scene_geom){ "video",
						FL_FOURCC('Y', 'U', '1', '2'),
						third,
						EVEN((sh - top) * 4 / 9),
						(int32_t)(sw - third),
						(int32_t)top,
						4,
						FL_DISPLAY_BLEND_NONE,
						24 };
	out[SCENE_APP] = (struct scene_geom){ "app",
					      FL_FOURCC('A', 'R', '2', '4'),
					      third,
					      EVEN((sh - top) * 2 / 3),
					      (int32_t)(sw / 2 - third / 2),
					      (int32_t)(sh - EVEN((sh - top) * 2 / 3)),
					      2,
					      FL_DISPLAY_BLEND_PREMULTIPLIED,
					      60 };
	return 0;
}

static void fill32(uint8_t *p, uint32_t pitch, uint32_t w, uint32_t h, uint32_t v)
{
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			((uint32_t *)(p + (size_t)y * pitch))[x] = v;
}

static void fill8(uint8_t *p, uint32_t pitch, uint32_t w, uint32_t h, uint8_t v)
{
	for (uint32_t y = 0; y < h; y++)
		memset(p + (size_t)y * pitch, v, w);
}

void scene_draw(enum scene_layer l, uint32_t frame, const struct fl_bufferqueue_buffer *b,
		uint8_t *map, bool poison)
{
	uint8_t *p0 = map + b->offsets[0], *p1 = map + b->offsets[1], *p2 = map + b->offsets[2];

	switch (l) {
	case SCENE_CAMERA:
		if (poison) {
			fill8(p0, b->pitches[0], b->width, b->height, PATTERN_POISON_Y);
			fill8(p1, b->pitches[1], b->width, b->height / 2, 255);
		} else {
			pattern_camera_nv12(frame, b->width, b->height, p0, b->pitches[0], p1,
					    b->pitches[1]);
		}
		break;
	case SCENE_VIDEO:
		if (poison) {
			fill8(p0, b->pitches[0], b->width, b->height, PATTERN_POISON_Y);
			fill8(p1, b->pitches[1], b->width / 2, b->height / 2, 255);
			fill8(p2, b->pitches[2], b->width / 2, b->height / 2, 255);
		} else {
			pattern_video_i420(frame, b->width, b->height, p0, b->pitches[0], p1,
					   b->pitches[1], p2, b->pitches[2]);
		}
		break;
	case SCENE_APP:
	case SCENE_STATUS:
		if (poison)
			fill32(p0, b->pitches[0], b->width, b->height, PATTERN_POISON_ARGB);
		else if (l == SCENE_APP)
			pattern_app_argb(frame, b->width, b->height, (uint32_t *)p0, b->pitches[0]);
		else
			pattern_statusbar_argb(frame, b->width, b->height, (uint32_t *)p0,
					       b->pitches[0]);
		break;
	default:
		break;
	}
}

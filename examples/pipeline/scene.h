/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo's scene (docs/pipeline.md): its four layers, where each goes on a screen of a
 * given size, and how a producer draws frame n of its layer into a queue's buffer. Shared by the
 * producers, the compositor and the checker (examples/pipeline/check.c), so that the reference
 * rendering puts the same pictures at the same places.
 */
#ifndef PIPELINE_SCENE_H
#define PIPELINE_SCENE_H

#include <stdbool.h>
#include <stdint.h>

#include <fenceline/bufferqueue.h>

enum scene_layer { SCENE_CAMERA, SCENE_VIDEO, SCENE_APP, SCENE_STATUS, SCENE_LAYERS };

struct scene_geom {
	const char *name; /* the producer's, its queue's and its timeline's */
	uint32_t fourcc;
	uint32_t w, h; /* the buffer's size: shown unscaled */
	int32_t x, y; /* where, on the screen */
	uint32_t z;
	uint32_t blend; /* enum fl_display_blend */
	unsigned int hz; /* frames per second the producer makes at --hz 60 */
};

/*
 * The layout on a @sw x @sh screen: the status bar across the top, the camera on the left, the
 * app in the middle, the video on the right, none overlapping (so that every layer's frame-number
 * strip stays readable on screen). Return: 0, or -ERANGE when the screen is too small for the
 * strips (narrower than 3 strips or lower than 64 lines).
 */
int scene_layout(uint32_t sw, uint32_t sh, struct scene_geom out[SCENE_LAYERS]);

/*
 * Draw frame @frame of layer @l into @map (the mapping of @b's fd), or, with @poison, fill it
 * with PATTERN_POISON_* (item 7's test mode: what a buffer written while on screen would show).
 */
void scene_draw(enum scene_layer l, uint32_t frame, const struct fl_bufferqueue_buffer *b,
		uint8_t *map, bool poison);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo's screen (--display): the display stage shows every frame it flips on a real
 * output through the display service's simple buffers, with the public API only.
 */
#ifndef PIPELINE_SCREEN_H
#define PIPELINE_SCREEN_H

#include <stdbool.h>
#include <stdint.h>

struct screen;

/*
 * Make @choice (see docs/display.md, "Choosing the output") this process's display: sets
 * FENCELINE_DISPLAY before any display call, so the demo's stages and the service agree.
 * Return: 0, or -EINVAL with a message on stderr.
 */
int screen_choose(const char *choice);

/*
 * Open the first device's first connected interface that scans out XRGB8888 with three simple
 * buffers, lit. Return: 0 and *@ret, or a negative errno with a message on stderr.
 */
int screen_open(unsigned int producers, struct screen **ret);

/*
 * Show frame @frame: a lane per producer with its bar at the frame's place, and a strip of the
 * last frames' fates (@late: this one missed its vsync; @dropped: frames overtaken before it).
 * Never waits: when the display has not let go of the buffer yet, the frame is skipped.
 * Return: 0 (shown or skipped), or a negative errno (the display went away).
 */
int screen_show(struct screen *s, uint32_t frame, bool late, unsigned int dropped);

/* What screen_show() did: frames posted and skipped. */
void screen_counts(const struct screen *s, unsigned int *posted, unsigned int *skipped);

/* Close it all; NULL is fine. */
void screen_close(struct screen *s);

#endif

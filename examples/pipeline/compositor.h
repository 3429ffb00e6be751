/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo's compositor (docs/pipeline.md): SurfaceFlinger's role. A buffer queue consumer
 * per layer, paced by the display's VSYNC events: each vsync it latches the newest buffer of each
 * layer whose acquire fence has signalled, gives the layers to the hardware composer, and hands
 * each buffer the HWC lets go back to its queue with the release fence the HWC gave.
 */
#ifndef PIPELINE_COMPOSITOR_H
#define PIPELINE_COMPOSITOR_H

#include <stdbool.h>
#include <stdint.h>

struct compositor_opts {
	const char *dir; /* where the queues' sockets go: DIR/<layer>.sock */
	uint64_t end_ns; /* CLOCK_MONOTONIC: the producers stop queueing then */
	unsigned int timeout_s; /* the watchdog, re-armed every vsync */
	bool quiet; /* no per-frame lines */
	bool no_overlays; /* FL_HWC_NO_OVERLAYS: compose everything */
	const char *sheet; /* the PNG contact sheet, or NULL */
	const char *capture_dir; /* item 7: full-size captures as PNG files, or NULL */
	unsigned int capture_every; /* a capture every N vsyncs */
	unsigned int slots; /* per queue: 2 or 3 */
	int ready_fd; /* gets the screen's size (2 x uint32_t) once the queues listen */
};

/* Run the compositor. Return: 0, or a negative errno (said on stderr). */
int compositor_run(const struct compositor_opts *o);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo's producers (docs/pipeline.md): one process per layer, each with its own
 * timeline, connected to its layer's buffer queue in the compositor.
 */
#ifndef PIPELINE_PRODUCER_H
#define PIPELINE_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include "scene.h"

struct producer_opts {
	enum scene_layer layer;
	struct scene_geom geom;
	const char *path; /* the queue's socket */
	uint64_t t0_ns; /* CLOCK_MONOTONIC start, shared by every process */
	uint64_t end_ns; /* when to stop queueing */
	double rate_scale; /* --hz / 60 */
	double jank; /* probability of a slow frame */
	uint32_t seed;
	bool poison; /* item 7: poison every buffer on dequeue before drawing it */
	bool gl; /* app only: draw with OpenGL ES where it can (app-gl.h) */
	int64_t reset_at; /* app only: the frame whose context is reset, or -1 */
	unsigned int timeout_s; /* the watchdog re-armed on every step */
	bool quiet;
};

/* Run the producer until @o->end_ns. Return: 0, or a negative errno (said on stderr). */
int producer_run(const struct producer_opts *o);

#endif

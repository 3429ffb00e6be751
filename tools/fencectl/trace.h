/* SPDX-License-Identifier: MIT */
/*
 * The events of a fenceline trace (docs/trace-format.md), loaded from its
 * JSON into arrays the analysis can search: sorted by id or by time.
 * Times are microseconds of CLOCK_MONOTONIC, as in the file.
 */
#ifndef FENCECTL_TRACE_H
#define FENCECTL_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

struct tr_thread {
	int64_t pid, tid;
	char *name;
};

struct tr_process {
	int64_t pid;
	char *name; /* "camera (1234)", or NULL if the trace has no name for it */
};

struct tr_step {
	int64_t timeline;
	double ts, dur;
	int64_t value;
};

struct tr_timeline {
	int64_t id;
	char *name; /* NULL if the trace never named it */
	int64_t creator_pid; /* 0 if unknown */
	double create_ts, destroy_ts; /* NAN if not in the trace */
	struct tr_step *steps; /* its value slices, by time: a run of trace.steps */
	size_t n_steps;
	size_t first_signal, n_signals; /* its run in trace.signals */
};

struct tr_signal {
	double ts;
	int64_t timeline, from, value;
	int status;
	int64_t by_pid, by_tid;
	int64_t *fences;
	size_t n_fences;
};

enum tr_fence_kind { TR_FENCE_CREATE, TR_FENCE_MERGE, TR_FENCE_IMPORT, TR_FENCE_UNKNOWN };

struct tr_point {
	int64_t timeline, value;
};

struct tr_fence {
	int64_t id;
	char *name; /* NULL if only a deadline names the fence */
	int64_t pid, tid;
	enum tr_fence_kind kind;
	bool has_begin, has_end;
	double begin_ts, end_ts;
	/* 0 signalled, < 0 failed (-errno), 1 pending at trace end (also without an end event) */
	int status;
	bool has_end_point; /* the end event named the point that completed it */
	struct tr_point end_point;
	struct tr_point *points;
	size_t n_points;
	int64_t *inputs; /* merge only */
	size_t n_inputs;
	bool has_deadline;
	double deadline; /* the earliest deadline anyone set */
	int64_t deadline_pid; /* who set it (0 if unknown) */
};

struct tr_wait {
	int64_t pid, tid;
	double ts, end;
	int64_t fence;
	int result;
	char *name;
};

struct tr_deadlock {
	double ts;
	char *text;
};

/* A timeline's pending points failed (fl_timeline_fd_fail_pending(): a producer's reset). */
struct tr_reset {
	double ts;
	int64_t timeline, value, failed, by_pid;
	int status;
};

/* A display service's event (docs/trace-format.md, "Display"), by its name. */
enum tr_display_kind {
	TR_DISPLAY_POST,
	TR_DISPLAY_FLIP,
	TR_DISPLAY_VSYNC,
	TR_DISPLAY_RELEASE,
	TR_DISPLAY_ACQUIRE_FAILED,
	TR_DISPLAY_DROP,
};

struct tr_display {
	enum tr_display_kind kind;
	int64_t device, post;
	double ts;
	int64_t pid, buffers, acquire; /* POST */
	int64_t interface; /* FLIP (-1 unpaced), VSYNC */
	double vsync, ready; /* FLIP: the vsync's time (NAN unpaced), when the post became ready */
	int64_t by_post; /* RELEASE */
	int64_t buffer; /* ACQUIRE_FAILED */
	int status; /* ACQUIRE_FAILED, DROP */
};

struct trace {
	double start_us, end_us;
	size_t n_events;
	struct tr_process *processes; /* by pid */
	size_t n_processes;
	struct tr_thread *threads; /* by pid, tid */
	size_t n_threads;
	struct tr_timeline *timelines; /* by id */
	size_t n_timelines;
	struct tr_step *steps; /* by timeline, then time */
	size_t n_steps;
	struct tr_signal *signals; /* by timeline, then time */
	size_t n_signals;
	struct tr_fence *fences; /* by id */
	size_t n_fences;
	struct tr_wait *waits; /* by pid, then end time */
	size_t n_waits;
	struct tr_deadlock *deadlocks; /* by time */
	size_t n_deadlocks;
	struct tr_reset *resets; /* in the trace's order (the daemon's: by time) */
	size_t n_resets;
	struct tr_display *displays; /* by device, then time */
	size_t n_displays;
};

/* The pseudo-processes holding the timelines' and the display devices' tracks. */
#define TR_TIMELINE_PID 10000000
#define TR_DISPLAY_PID	10000001

/**
 * trace_load() - the trace held by the parsed JSON @root.
 * @root: the trace file's JSON (from json_parse())
 * @ret: filled on success; free it with trace_free()
 * @msg: on error, why, e.g. "event 17 (signal): args.value: missing or not
 *	an integer"; never NULL after an error
 * @msg_size: size of @msg
 *
 * Unknown events and unknown members are skipped; an event the format
 * defines whose members are missing or of the wrong type is an error.
 *
 * Return: 0; -EINVAL for a malformed trace, -EPROTO when @root is not a
 * fenceline trace (otherData.producer) or a newer format; -ENOMEM.
 */
int trace_load(const struct json *root, struct trace *ret, char *msg, size_t msg_size);

/** trace_free() - free what trace_load() filled (and zero @t). */
void trace_free(struct trace *t);

/* Lookups; NULL when absent. */
const struct tr_fence *trace_fence(const struct trace *t, int64_t id);
const struct tr_timeline *trace_timeline(const struct trace *t, int64_t id);
const struct tr_process *trace_process(const struct trace *t, int64_t pid);

/**
 * trace_signal_reaching() - the first successful signal that advanced
 * timeline @tl to @value or beyond.
 * Return: the signal, or NULL if no signal in the trace did.
 */
const struct tr_signal *trace_signal_reaching(const struct trace *t, int64_t tl, int64_t value);

/**
 * trace_last_wait_before() - the wait of @pid (and @tid, if nonzero) that
 * ended last at or before @ts, having begun before @ts.
 * Return: the wait, or NULL.
 */
const struct tr_wait *trace_last_wait_before(const struct trace *t, int64_t pid, int64_t tid,
					     double ts);

#endif

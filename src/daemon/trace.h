/* SPDX-License-Identifier: MIT */
/*
 * The trace session's event log, shared by its two halves: trace.c records
 * (the hooks the services call), trace-json.c turns the log into Chrome's
 * JSON trace format at TRACE STOP.
 */
#ifndef FLD_TRACE_H
#define FLD_TRACE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define TLPID	   10000000 /* the pseudo-process of timeline tracks */
#define DISPPID	   10000001 /* the pseudo-process of display tracks (one per device) */
#define MAX_POINTS 64

enum ev_type {
	EV_TIMELINE, /* a: id, b: value; pid: creator (0: existed before the trace) */
	EV_TIMELINE_DEAD, /* a: id */
	EV_SIGNAL, /* a: tl, b: from, c: to; pid: by; status; kind 1: a failure (c: how many) */
	EV_FENCE, /* a: id, b: input a, c: input b; pid: creator; kind; pts */
	EV_FENCE_DONE, /* a: id, b: tl, c: value; status */
	EV_DEADLINE, /* a: fence, b: deadline ns; pid */
	EV_WAIT, /* a: fence, b: end ns, c: signal tl, d: signal ns; pid, tid; status; timeout */
	EV_DEADLOCK, /* name: the text */
	/*
	 * Another service's (TRACE_EVENT), kind: its type (1..7); a: device,
	 * b: post, c, d: the type's first two values (ACQUIRE: c the fence's
	 * id, 0 unknown), status; pid: the post's client (POST) or the
	 * sender; tid: index (buffer or interface).
	 */
	EV_DISPLAY,
};

struct ev {
	uint8_t type;
	uint8_t kind; /* EV_FENCE: 0 create, 1 merge, 2 import */
	int32_t status;
	int32_t pid, tid;
	int32_t timeout_ms;
	uint32_t name; /* offset in strings, or UINT32_MAX */
	uint32_t pts, npts; /* EV_FENCE: offset and count in points (pairs) */
	uint64_t ts;
	uint64_t a, b, c, d;
};

struct fld_trace_log {
	pid_t by;
	uint64_t start_ns;
	struct ev *ev;
	size_t n, cap, max;
	uint64_t dropped;
	char *strings;
	size_t slen, scap;
	uint64_t *points;
	size_t plen, pcap;
	/* Names of the processes and threads seen, read when first seen: they may be gone at the end. */
	struct comm {
		pid_t pid, tid; /* tid 0: the process's name */
		uint32_t name;
	} * comms;
	size_t ncomms, comms_cap;
};

/* What @t recorded, as a JSON trace ending at @end_ns, into @out. 0, or -ENOMEM. */
int fld__trace_write_json(FILE *out, struct fld_trace_log *t, uint64_t end_ns);

/* The name of @pid (@tid 0) or of its thread @tid, read when first seen; "" if unknown. */
const char *fld__trace_comm_of(const struct fld_trace_log *t, pid_t pid, pid_t tid);

#endif

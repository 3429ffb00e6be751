/* SPDX-License-Identifier: MIT */
/*
 * What `fencectl report` finds in a trace: the late fences, the frames they
 * delayed and each one's critical path back to the signal that came last
 * (docs/fencectl.md, "## report").
 */
#ifndef FENCECTL_ANALYSE_H
#define FENCECTL_ANALYSE_H

#include "trace.h"

/* A chain stops after this many links, whatever it loops through. */
#define AN_MAX_LINKS 32

/*
 * One step back: @fence (or, for a frame's first link, no fence) completed
 * when @point did; @signal advanced the point's timeline to it; its
 * signaller's last wait before that was on @wait->fence, the next link.
 */
struct an_link {
	int64_t fence; /* 0: the first link of a frame's chain */
	bool has_point;
	struct tr_point point;
	const struct tr_signal *signal; /* NULL: the point was never reached */
	const struct tr_wait *wait; /* NULL: the chain ends here */
};

enum an_root_kind {
	AN_ROOT_SIGNAL, /* the last link's signal came without a wait before it */
	AN_ROOT_NEVER, /* the last link's point was never reached in the trace */
	AN_ROOT_NO_POINT, /* the trace names no sync point of the last fence */
	AN_ROOT_LOOP, /* the signaller's wait leads back into the chain */
	AN_ROOT_TOO_LONG, /* cut at AN_MAX_LINKS */
};

struct an_chain {
	struct an_link *links;
	size_t n_links;
	enum an_root_kind root;
};

struct an_late {
	const struct tr_fence *fence;
	bool pending; /* not signalled by the trace's end */
	double late_us; /* completion (or the trace's end) minus the deadline */
	struct an_chain chain;
	size_t n_frames; /* frames it delayed */
};

struct an_frame {
	int64_t timeline; /* a display timeline */
	const struct tr_signal *signal; /* the advance that presented it */
	struct an_chain chain; /* back from that signal */
	long late; /* index in analysis.late of the fence that made it late, or -1 */
};

/* A post of a display device that reached the screen (a flip in the trace). */
struct an_screen_frame {
	int64_t post;
	double queued; /* NAN: its post event is not in the trace */
	double flip, vsync, ready; /* vsync NAN: unpaced */
	double latency; /* flip - queued, NAN without queued */
	int64_t interface; /* the vsync's, -1 unpaced */
	size_t missed; /* vsyncs of that interface between ready and the flip */
	bool late; /* missed one or more: not on screen at the first vsync it could have been */
};

/* What a display device's track says (docs/fencectl.md, "## report": screens). */
struct an_screen {
	int64_t device;
	size_t posts, vsyncs, releases, acquire_failed, dropped, late;
	double latency_p50, latency_p99, latency_max; /* queue to flip; NAN without any */
	struct an_screen_frame *frames; /* by flip time */
	size_t n_frames;
	const struct tr_display *first, *end; /* its run of trace.displays */
};

struct an_late_index;

struct analysis {
	int64_t *display; /* ids of the display timelines */
	size_t n_display;
	struct an_frame *frames; /* by display timeline, then time */
	size_t n_frames;
	struct an_late *late; /* by deadline */
	size_t n_late;
	struct an_late_index *late_by_id; /* n_late of them, for an_fence_late() */
	struct an_screen *screens; /* by device */
	size_t n_screens;
};

/**
 * analyse() - find @t's late fences, frames and critical paths, and what
 * its display devices' tracks say (frames on screen, latencies, late ones).
 * @display: the display timelines' name (exact), or NULL for every timeline
 *	whose name contains "display"
 * @ret: filled on success; free with analysis_free(). It points into @t,
 *	which must outlive it.
 * Return: 0 or -ENOMEM.
 */
int analyse(const struct trace *t, const char *display, struct analysis *ret);

void analysis_free(struct analysis *a);

/** an_fence_late() - the index in @a->late of fence @id, or -1 if it is not late. */
long an_fence_late(const struct analysis *a, int64_t id);

/** an_is_display() - whether timeline @id is one of @a's display timelines. */
bool an_is_display(const struct analysis *a, int64_t id);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The critical path rule (docs/fencectl.md, "## report"): a fence completed
 * when its last point was reached; the signal that reached it came from a
 * thread, and what that thread waited for last before signalling is what
 * held the signal back. Following that back, link by link, ends at a signal
 * nobody held back: the root cause.
 */
#include "analyse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Merges of merges: how deep to look through inputs for points. */
#define MAX_INPUT_DEPTH 8

struct an_late_index {
	int64_t fence;
	long late;
};

static int cmp_late_index(const void *x, const void *y)
{
	int64_t a = ((const struct an_late_index *)x)->fence,
		b = ((const struct an_late_index *)y)->fence;

	return a < b ? -1 : a > b;
}

static int cmp_late(const void *x, const void *y)
{
	const struct an_late *a = x, *b = y;

	if (a->fence->deadline != b->fence->deadline)
		return a->fence->deadline < b->fence->deadline ? -1 : 1;
	return a->fence->id < b->fence->id ? -1 : a->fence->id > b->fence->id;
}

long an_fence_late(const struct analysis *a, int64_t id)
{
	struct an_late_index key = { id, -1 }, *hit;

	if (!a->n_late)
		return -1;
	hit = bsearch(&key, a->late_by_id, a->n_late, sizeof(key), cmp_late_index);
	return hit ? hit->late : -1;
}

bool an_is_display(const struct analysis *a, int64_t id)
{
	for (size_t i = 0; i < a->n_display; i++)
		if (a->display[i] == id)
			return true;
	return false;
}

/*
 * The point of @f that was reached last: the one its end names, else of its
 * points (or its inputs', for a merge) the one never reached or reached last.
 * Return: false if the trace names no point of @f.
 */
static bool critical_point(const struct trace *t, const struct tr_fence *f, unsigned int depth,
			   struct tr_point *ret, const struct tr_signal **ret_signal)
{
	const struct tr_signal *best_signal = NULL;
	bool found = false;

	if (!f)
		return false;
	if (f->has_end && f->status == 0 && f->has_end_point) {
		*ret = f->end_point;
		*ret_signal = trace_signal_reaching(t, ret->timeline, ret->value);
		return true;
	}
	for (size_t i = 0; i < f->n_points; i++) {
		const struct tr_signal *s =
			trace_signal_reaching(t, f->points[i].timeline, f->points[i].value);

		if (!s || !found || (best_signal && s->ts > best_signal->ts)) {
			*ret = f->points[i];
			best_signal = s;
			found = true;
			if (!s)
				break;
		}
	}
	if (!f->n_points && depth < MAX_INPUT_DEPTH) {
		for (size_t i = 0; i < f->n_inputs; i++) {
			struct tr_point p = { 0 };
			const struct tr_signal *s;

			if (!critical_point(t, trace_fence(t, f->inputs[i]), depth + 1, &p, &s))
				continue;
			if (!s || !found || (best_signal && s->ts > best_signal->ts)) {
				*ret = p;
				best_signal = s;
				found = true;
				if (!s)
					break;
			}
		}
	}
	*ret_signal = best_signal;
	return found;
}

/* Back from fence @fence (or, with @start, from that signal) to a root. */
static int build_chain(const struct trace *t, int64_t fence, const struct tr_signal *start,
		       struct an_chain *c)
{
	c->links = calloc(AN_MAX_LINKS, sizeof(*c->links));
	c->n_links = 0;
	if (!c->links)
		return -ENOMEM;
	for (;;) {
		struct an_link *l = &c->links[c->n_links];

		if (c->n_links == AN_MAX_LINKS) {
			c->root = AN_ROOT_TOO_LONG;
			return 0;
		}
		c->n_links++;
		l->fence = fence;
		if (start && c->n_links == 1) {
			l->has_point = true;
			l->point = (struct tr_point){ start->timeline, start->value };
			l->signal = start;
		} else {
			l->has_point =
				critical_point(t, trace_fence(t, fence), 0, &l->point, &l->signal);
		}
		if (!l->has_point) {
			c->root = AN_ROOT_NO_POINT;
			return 0;
		}
		if (!l->signal) {
			c->root = AN_ROOT_NEVER;
			return 0;
		}
		l->wait = l->signal->by_pid
				  ? trace_last_wait_before(t, l->signal->by_pid, l->signal->by_tid,
							   l->signal->ts)
				  : NULL;
		if (!l->wait) {
			c->root = AN_ROOT_SIGNAL;
			return 0;
		}
		for (size_t k = 0; k < c->n_links; k++) {
			if (c->links[k].fence == l->wait->fence) {
				c->root = AN_ROOT_LOOP;
				return 0;
			}
		}
		fence = l->wait->fence;
	}
}

static int find_display(const struct trace *t, const char *display, struct analysis *a)
{
	for (size_t i = 0; i < t->n_timelines; i++) {
		const char *name = t->timelines[i].name;
		int64_t *more;

		if (!name || (display ? strcmp(name, display) != 0 : !strstr(name, "display")))
			continue;
		more = realloc(a->display, (a->n_display + 1) * sizeof(*more));
		if (!more)
			return -ENOMEM;
		a->display = more;
		a->display[a->n_display++] = t->timelines[i].id;
	}
	return 0;
}

static int find_late(const struct trace *t, struct analysis *a)
{
	struct an_late_index *index;
	size_t n = 0;

	for (size_t i = 0; i < t->n_fences; i++) {
		const struct tr_fence *f = &t->fences[i];

		if (f->has_deadline && (f->status == 1 ? t->end_us : f->end_ts) > f->deadline)
			n++;
	}
	if (!n)
		return 0;
	a->late = calloc(n, sizeof(*a->late));
	a->late_by_id = index = calloc(n, sizeof(*index));
	if (!a->late || !index)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_fences; i++) {
		const struct tr_fence *f = &t->fences[i];
		double done = f->status == 1 ? t->end_us : f->end_ts;

		if (!f->has_deadline || done <= f->deadline)
			continue;
		a->late[a->n_late++] = (struct an_late){
			.fence = f,
			.pending = f->status == 1,
			.late_us = done - f->deadline,
		};
	}
	qsort(a->late, a->n_late, sizeof(*a->late), cmp_late);
	for (size_t i = 0; i < a->n_late; i++)
		index[i] = (struct an_late_index){ a->late[i].fence->id, (long)i };
	qsort(index, a->n_late, sizeof(*index), cmp_late_index);
	for (size_t i = 0; i < a->n_late; i++) {
		int r = build_chain(t, a->late[i].fence->id, NULL, &a->late[i].chain);

		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Which late fence made frame @fr late: the first late one its chain waited
 * for, else a late fence with a point the frame's advance reached (the
 * display's own present fence), else a late fence that the display's
 * process wanted by a time between the previous flip (@prev_ts) and this
 * one: a display that polls its fences at each vsync instead of waiting on
 * them shows the old frame then, and says when a frame was due by setting
 * its fence's deadline.
 */
static long frame_culprit(const struct trace *t, const struct analysis *a,
			  const struct an_frame *fr, double prev_ts)
{
	const struct tr_timeline *tl = trace_timeline(t, fr->timeline);

	for (size_t k = 1; k < fr->chain.n_links; k++) {
		long late = an_fence_late(a, fr->chain.links[k].fence);

		if (late >= 0)
			return late;
	}
	for (size_t i = 0; i < a->n_late; i++) {
		const struct tr_fence *f = a->late[i].fence;

		for (size_t k = 0; k < f->n_points; k++)
			if (f->points[k].timeline == fr->timeline &&
			    f->points[k].value > fr->signal->from &&
			    f->points[k].value <= fr->signal->value)
				return (long)i;
	}
	for (size_t i = 0; i < a->n_late; i++) {
		const struct tr_fence *f = a->late[i].fence;

		if (f->deadline > prev_ts && f->deadline <= fr->signal->ts && tl &&
		    f->deadline_pid == tl->creator_pid && tl->creator_pid)
			return (long)i;
	}
	return -1;
}

static int find_frames(const struct trace *t, struct analysis *a)
{
	size_t n = 0;

	for (size_t d = 0; d < a->n_display; d++) {
		const struct tr_timeline *tl = trace_timeline(t, a->display[d]);

		n += tl ? tl->n_signals : 0;
	}
	if (!n)
		return 0;
	a->frames = calloc(n, sizeof(*a->frames));
	if (!a->frames)
		return -ENOMEM;
	for (size_t d = 0; d < a->n_display; d++) {
		const struct tr_timeline *tl = trace_timeline(t, a->display[d]);

		double prev_ts = -1e300;

		for (size_t i = 0; tl && i < tl->n_signals; i++) {
			const struct tr_signal *s = &t->signals[tl->first_signal + i];
			struct an_frame *fr = &a->frames[a->n_frames];
			int r;

			/* A frame is an advance; a failed signal presented nothing. */
			if (s->status != 0 || s->value <= s->from)
				continue;
			fr->timeline = tl->id;
			fr->signal = s;
			r = build_chain(t, 0, s, &fr->chain);
			if (r < 0)
				return r;
			a->n_frames++;
			fr->late = frame_culprit(t, a, fr, prev_ts);
			prev_ts = s->ts;
			if (fr->late >= 0)
				a->late[fr->late].n_frames++;
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The nearest-rank quantile @q of the @n sorted values @v. */
static double quantile(const double *v, size_t n, double q)
{
	size_t k = (size_t)ceil(q * (double)n);

	return n ? v[k ? k - 1 : 0] : NAN;
}

/*
 * One device's run [@d, @end) of trace.displays: its frames (each flip,
 * with its post's queueing), and late ones: a vsync of the flip's
 * interface came between the post's readiness and its flip, so it missed
 * at least one chance to be on screen.
 */
static int screen(const struct tr_display *d, const struct tr_display *end, struct an_screen *s)
{
	double *lat;
	size_t n_lat = 0, n_flips = 0;

	*s = (struct an_screen){ .device = d->device, .first = d, .end = end };
	for (const struct tr_display *e = d; e < end; e++) {
		n_flips += e->kind == TR_DISPLAY_FLIP;
		s->posts += e->kind == TR_DISPLAY_POST;
		s->vsyncs += e->kind == TR_DISPLAY_VSYNC;
		s->releases += e->kind == TR_DISPLAY_RELEASE;
		s->acquire_failed += e->kind == TR_DISPLAY_ACQUIRE_FAILED;
		s->dropped += e->kind == TR_DISPLAY_DROP;
	}
	s->frames = calloc(n_flips ? n_flips : 1, sizeof(*s->frames));
	lat = calloc(n_flips ? n_flips : 1, sizeof(*lat));
	if (!s->frames || !lat) {
		free(lat);
		return -ENOMEM;
	}
	for (const struct tr_display *e = d; e < end; e++) {
		struct an_screen_frame *f;

		if (e->kind != TR_DISPLAY_FLIP)
			continue;
		f = &s->frames[s->n_frames++];
		*f = (struct an_screen_frame){ .post = e->post,
					       .queued = NAN,
					       .flip = e->ts,
					       .vsync = e->vsync,
					       .ready = e->ready,
					       .latency = NAN,
					       .interface = e->interface };
		/* Its post: queued before it flipped (sequence numbers are per device). */
		for (const struct tr_display *p = e; p-- > d;)
			if (p->kind == TR_DISPLAY_POST && p->post == e->post) {
				f->queued = p->ts;
				f->latency = e->ts - p->ts;
				lat[n_lat++] = f->latency;
				break;
			}
		if (isnan(e->vsync))
			continue;
		/* Back from the flip to its readiness only: the run is by time. */
		for (const struct tr_display *v = e; v-- > d && v->ts > e->ready;)
			f->missed += v->kind == TR_DISPLAY_VSYNC && v->interface == e->interface &&
				     v->ts < e->ts;
		f->late = f->missed > 0;
		s->late += f->late;
	}
	qsort(lat, n_lat, sizeof(*lat), cmp_double);
	s->latency_p50 = quantile(lat, n_lat, 0.50);
	s->latency_p99 = quantile(lat, n_lat, 0.99);
	s->latency_max = n_lat ? lat[n_lat - 1] : NAN;
	free(lat);
	return 0;
}

static int find_screens(const struct trace *t, struct analysis *a)
{
	const struct tr_display *d = t->displays, *end;
	size_t n = 0;

	/* No display events: the array may be NULL, which takes no offset. */
	if (!t->n_displays)
		return 0;
	end = d + t->n_displays;
	for (const struct tr_display *e = d; e < end; e++)
		n += e == d || e->device != e[-1].device;
	a->screens = calloc(n ? n : 1, sizeof(*a->screens));
	if (!a->screens)
		return -ENOMEM;
	while (d < end) {
		const struct tr_display *run = d;
		int r;

		while (run < end && run->device == d->device)
			run++;
		r = screen(d, run, &a->screens[a->n_screens]);
		a->n_screens++;
		if (r < 0)
			return r;
		d = run;
	}
	return 0;
}

int analyse(const struct trace *t, const char *display, struct analysis *a)
{
	int r;

	memset(a, 0, sizeof(*a));
	r = find_display(t, display, a);
	if (r == 0)
		r = find_late(t, a);
	if (r == 0)
		r = find_frames(t, a);
	if (r == 0)
		r = find_screens(t, a);
	if (r < 0)
		analysis_free(a);
	return r;
}

void analysis_free(struct analysis *a)
{
	for (size_t i = 0; i < a->n_late; i++)
		free(a->late[i].chain.links);
	for (size_t i = 0; i < a->n_frames; i++)
		free(a->frames[i].chain.links);
	free(a->late);
	free(a->late_by_id);
	free(a->frames);
	free(a->display);
	for (size_t i = 0; i < a->n_screens; i++)
		free(a->screens[i].frames);
	free(a->screens);
	memset(a, 0, sizeof(*a));
}

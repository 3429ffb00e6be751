/* SPDX-License-Identifier: MIT */
/*
 * Writes the analysis as JSON. Times other than trace.start_us/end_us are
 * microseconds since the trace's start, so the page and tests need not
 * handle CLOCK_MONOTONIC's large values.
 */
#include "report-json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

struct writer {
	FILE *out;
	const struct trace *t;
	const struct analysis *a;
};

static void str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out); /* UTF-8 passes: the parser let only valid UTF-8 in */
	}
	fputc('"', out);
}

/* A number, or null: JSON has no infinities, and far-apart times in a hostile trace make them. */
static void num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.3f", v);
	else
		fputs("null", out);
}

static void time_at(const struct writer *w, double abs_us)
{
	num(w->out, abs_us - w->t->start_us);
}

static void key(FILE *out, bool *first, const char *k)
{
	fprintf(out, "%s\"%s\":", *first ? "" : ",", k);
	*first = false;
}

static const char *timeline_name(const struct trace *t, int64_t id)
{
	const struct tr_timeline *tl = trace_timeline(t, id);

	return tl && tl->name ? tl->name : NULL;
}

/* "camera (1234)" as the trace names the process, else "pid 1234". */
static const char *process_label(const struct trace *t, int64_t pid, char *buf, size_t size)
{
	const struct tr_process *p = trace_process(t, pid);
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, pid);
	if (p && p->name && strstr(p->name, num))
		snprintf(buf, size, "%s", p->name);
	else if (p && p->name)
		snprintf(buf, size, "%s (pid %" PRId64 ")", p->name, pid);
	else
		snprintf(buf, size, "pid %" PRId64, pid);
	return buf;
}

static void tl_label(const struct trace *t, int64_t id, char *buf, size_t size)
{
	const char *name = timeline_name(t, id);

	if (name && *name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "#%" PRId64, id);
}

void report_root_text(const struct trace *t, const struct an_late *late, char *buf, size_t size)
{
	const struct an_link *l = &late->chain.links[late->chain.n_links - 1];
	const struct tr_fence *f = trace_fence(t, l->fence);
	char tl[96], who[160];
	double d;

	if (l->has_point)
		tl_label(t, l->point.timeline, tl, sizeof(tl));
	switch (late->chain.root) {
	case AN_ROOT_SIGNAL:
		d = l->signal->ts - late->fence->deadline;
		process_label(t, l->signal->by_pid, who, sizeof(who));
		snprintf(buf, size,
			 "timeline %s reached %" PRId64 " %.1f ms %s the deadline, signalled by %s",
			 tl, l->point.value, fabs(d) / 1000, d >= 0 ? "past" : "before",
			 l->signal->by_pid ? who : "an unknown process");
		break;
	case AN_ROOT_NEVER:
		snprintf(buf, size, "timeline %s never reached %" PRId64 " in the trace", tl,
			 l->point.value);
		break;
	case AN_ROOT_NO_POINT:
		snprintf(buf, size, "the trace names no sync point of fence %" PRId64 " (%s)",
			 l->fence, f && f->name ? f->name : "not in the trace");
		break;
	case AN_ROOT_LOOP:
		snprintf(buf, size, "the chain waits on fence %" PRId64 " again: a loop",
			 l->wait->fence);
		break;
	case AN_ROOT_TOO_LONG:
		snprintf(buf, size, "the chain is longer than %d links", AN_MAX_LINKS);
		break;
	}
}

static const char *root_kind(enum an_root_kind k)
{
	switch (k) {
	case AN_ROOT_SIGNAL:
		return "signal";
	case AN_ROOT_NEVER:
		return "never_reached";
	case AN_ROOT_NO_POINT:
		return "no_point";
	case AN_ROOT_LOOP:
		return "loop";
	case AN_ROOT_TOO_LONG:
		return "too_long";
	}
	return "?";
}

static void link_json(const struct writer *w, const struct an_link *l)
{
	const struct tr_fence *f = l->fence ? trace_fence(w->t, l->fence) : NULL;
	char who[160];
	bool first = true;

	fputc('{', w->out);
	key(w->out, &first, "fence");
	if (l->fence)
		fprintf(w->out, "%" PRId64, l->fence);
	else
		fputs("null", w->out);
	key(w->out, &first, "fence_name");
	str(w->out, f ? f->name : NULL);
	key(w->out, &first, "timeline");
	if (l->has_point)
		fprintf(w->out, "%" PRId64, l->point.timeline);
	else
		fputs("null", w->out);
	key(w->out, &first, "timeline_name");
	str(w->out, l->has_point ? timeline_name(w->t, l->point.timeline) : NULL);
	key(w->out, &first, "value");
	if (l->has_point)
		fprintf(w->out, "%" PRId64, l->point.value);
	else
		fputs("null", w->out);
	key(w->out, &first, "reached_us");
	time_at(w, l->signal ? l->signal->ts : NAN);
	key(w->out, &first, "by_pid");
	if (l->signal && l->signal->by_pid)
		fprintf(w->out, "%" PRId64, l->signal->by_pid);
	else
		fputs("null", w->out);
	key(w->out, &first, "by_tid");
	fprintf(w->out, "%" PRId64, l->signal ? l->signal->by_tid : 0);
	key(w->out, &first, "process");
	str(w->out, l->signal && l->signal->by_pid
			    ? process_label(w->t, l->signal->by_pid, who, sizeof(who))
			    : NULL);
	key(w->out, &first, "waited_on");
	if (l->wait)
		fprintf(w->out, "%" PRId64, l->wait->fence);
	else
		fputs("null", w->out);
	key(w->out, &first, "wait_begin_us");
	time_at(w, l->wait ? l->wait->ts : NAN);
	key(w->out, &first, "wait_end_us");
	time_at(w, l->wait ? l->wait->end : NAN);
	fputc('}', w->out);
}

static void chain_json(const struct writer *w, const struct an_chain *c)
{
	fputc('[', w->out);
	for (size_t i = 0; i < c->n_links; i++) {
		if (i)
			fputc(',', w->out);
		link_json(w, &c->links[i]);
	}
	fputc(']', w->out);
}

static void late_json(const struct writer *w, const struct an_late *late)
{
	const struct tr_fence *f = late->fence;
	const struct an_link *root = &late->chain.links[late->chain.n_links - 1];
	char text[512], who[160];
	bool first = true;

	report_root_text(w->t, late, text, sizeof(text));
	fprintf(w->out, "{\"fence\":%" PRId64 ",\"name\":", f->id);
	str(w->out, f->name);
	fprintf(w->out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"process\":", f->pid, f->tid);
	str(w->out, process_label(w->t, f->pid, who, sizeof(who)));
	fputs(",\"deadline_us\":", w->out);
	time_at(w, f->deadline);
	fputs(",\"done_us\":", w->out);
	time_at(w, late->pending ? NAN : f->end_ts);
	fprintf(w->out,
		",\"pending\":%s,\"status\":%d,\"late_us\":", late->pending ? "true" : "false",
		f->status);
	num(w->out, late->late_us);
	fprintf(w->out, ",\"frames\":%zu,\"chain\":", late->n_frames);
	chain_json(w, &late->chain);
	fputs(",\"root\":{", w->out);
	key(w->out, &first, "kind");
	str(w->out, root_kind(late->chain.root));
	key(w->out, &first, "timeline");
	if (root->has_point)
		fprintf(w->out, "%" PRId64, root->point.timeline);
	else
		fputs("null", w->out);
	key(w->out, &first, "timeline_name");
	str(w->out, root->has_point ? timeline_name(w->t, root->point.timeline) : NULL);
	key(w->out, &first, "value");
	if (root->has_point)
		fprintf(w->out, "%" PRId64, root->point.value);
	else
		fputs("null", w->out);
	key(w->out, &first, "by_pid");
	if (root->signal && root->signal->by_pid)
		fprintf(w->out, "%" PRId64, root->signal->by_pid);
	else
		fputs("null", w->out);
	key(w->out, &first, "after_deadline_us");
	num(w->out, root->signal ? root->signal->ts - f->deadline : NAN);
	key(w->out, &first, "text");
	str(w->out, text);
	fputs("}}", w->out);
}

static void frame_json(const struct writer *w, const struct an_frame *fr)
{
	const struct an_late *late = &w->a->late[fr->late];
	char text[512];

	report_root_text(w->t, late, text, sizeof(text));
	fprintf(w->out, "{\"timeline\":%" PRId64 ",\"timeline_name\":", fr->timeline);
	str(w->out, timeline_name(w->t, fr->timeline));
	fprintf(w->out, ",\"value\":%" PRId64 ",\"presented_us\":", fr->signal->value);
	time_at(w, fr->signal->ts);
	fprintf(w->out, ",\"fence\":%" PRId64 ",\"fence_name\":", late->fence->id);
	str(w->out, late->fence->name);
	fputs(",\"late_us\":", w->out);
	num(w->out, late->late_us);
	fputs(",\"root\":", w->out);
	str(w->out, text);
	fputc('}', w->out);
}

static void timeline_json(const struct writer *w, const struct tr_timeline *tl, bool lanes)
{
	const struct trace *t = w->t;
	const struct tr_signal *s = tl->n_signals ? &t->signals[tl->first_signal] : NULL;
	size_t errors = 0, roots = 0, frames = 0, late_frames = 0;

	for (size_t i = 0; i < tl->n_signals; i++)
		errors += s[i].status < 0;
	for (size_t i = 0; i < w->a->n_late; i++) {
		const struct an_chain *c = &w->a->late[i].chain;
		const struct an_link *l = &c->links[c->n_links - 1];

		roots += l->has_point && l->point.timeline == tl->id;
	}
	for (size_t i = 0; i < w->a->n_frames; i++) {
		frames += w->a->frames[i].timeline == tl->id;
		late_frames += w->a->frames[i].timeline == tl->id && w->a->frames[i].late >= 0;
	}
	fprintf(w->out, "{\"id\":%" PRId64 ",\"name\":", tl->id);
	str(w->out, tl->name);
	fprintf(w->out,
		",\"creator_pid\":%" PRId64 ",\"display\":%s,\"created_us\":", tl->creator_pid,
		an_is_display(w->a, tl->id) ? "true" : "false");
	time_at(w, tl->create_ts);
	fputs(",\"destroyed_us\":", w->out);
	time_at(w, tl->destroy_ts);
	if (tl->n_signals)
		fprintf(w->out, ",\"first_value\":%" PRId64 ",\"last_value\":%" PRId64, s[0].from,
			s[tl->n_signals - 1].value);
	else if (tl->n_steps)
		fprintf(w->out, ",\"first_value\":%" PRId64 ",\"last_value\":%" PRId64,
			tl->steps[0].value, tl->steps[tl->n_steps - 1].value);
	else
		fputs(",\"first_value\":null,\"last_value\":null", w->out);
	fprintf(w->out,
		",\"signals\":%zu,\"errors\":%zu,\"late_roots\":%zu,\"frames\":%zu,"
		"\"late_frames\":%zu",
		tl->n_signals, errors, roots, frames, late_frames);
	if (lanes) {
		fputs(",\"steps\":[", w->out);
		for (size_t i = 0; i < tl->n_steps; i++) {
			fputs(i ? ",[" : "[", w->out);
			time_at(w, tl->steps[i].ts);
			fputc(',', w->out);
			num(w->out, tl->steps[i].dur);
			fprintf(w->out, ",%" PRId64 "]", tl->steps[i].value);
		}
		fputs("],\"ticks\":[", w->out);
		for (size_t i = 0; i < tl->n_signals; i++) {
			fputs(i ? ",[" : "[", w->out);
			time_at(w, s[i].ts);
			fprintf(w->out, ",%" PRId64 ",%" PRId64 ",%d]", s[i].value, s[i].by_pid,
				s[i].status);
		}
		fputc(']', w->out);
	}
	fputc('}', w->out);
}

static void process_json(const struct writer *w, const struct tr_process *p)
{
	const struct trace *t = w->t;
	size_t fences = 0, waits = 0, late = 0;
	double wait_us = 0;
	bool first = true;

	for (size_t i = 0; i < t->n_fences; i++)
		fences += t->fences[i].pid == p->pid && t->fences[i].has_begin;
	for (size_t i = 0; i < t->n_waits; i++) {
		if (t->waits[i].pid == p->pid) {
			waits++;
			wait_us += t->waits[i].end - t->waits[i].ts;
		}
	}
	for (size_t i = 0; i < w->a->n_late; i++)
		late += w->a->late[i].fence->pid == p->pid;
	fprintf(w->out, "{\"pid\":%" PRId64 ",\"name\":", p->pid);
	str(w->out, p->name);
	fputs(",\"threads\":[", w->out);
	for (size_t i = 0; i < t->n_threads; i++) {
		if (t->threads[i].pid != p->pid)
			continue;
		fprintf(w->out, "%s{\"tid\":%" PRId64 ",\"name\":", first ? "" : ",",
			t->threads[i].tid);
		str(w->out, t->threads[i].name);
		fputc('}', w->out);
		first = false;
	}
	fprintf(w->out, "],\"fences\":%zu,\"waits\":%zu,\"wait_us\":", fences, waits);
	num(w->out, wait_us);
	fprintf(w->out, ",\"late_fences\":%zu}", late);
}

static void lanes_json(const struct writer *w)
{
	const struct trace *t = w->t;

	fputs(",\"fences\":[", w->out);
	for (size_t i = 0; i < t->n_fences; i++) {
		const struct tr_fence *f = &t->fences[i];
		static const char *const kinds[] = { "create", "merge", "import", "unknown" };

		fprintf(w->out, "%s{\"id\":%" PRId64 ",\"name\":", i ? "," : "", f->id);
		str(w->out, f->name);
		fprintf(w->out,
			",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"kind\":\"%s\",\"begin_us\":",
			f->pid, f->tid, kinds[f->kind]);
		time_at(w, f->has_begin ? f->begin_ts : t->start_us);
		fputs(",\"end_us\":", w->out);
		time_at(w, f->has_end ? f->end_ts : t->end_us);
		fprintf(w->out, ",\"status\":%d,\"deadline_us\":", f->status);
		time_at(w, f->has_deadline ? f->deadline : NAN);
		fprintf(w->out, ",\"late\":%s,\"points\":[",
			an_fence_late(w->a, f->id) >= 0 ? "true" : "false");
		for (size_t k = 0; k < f->n_points; k++)
			fprintf(w->out, "%s[%" PRId64 ",%" PRId64 "]", k ? "," : "",
				f->points[k].timeline, f->points[k].value);
		fputs("]}", w->out);
	}
	fputs("],\"waits\":[", w->out);
	for (size_t i = 0; i < t->n_waits; i++) {
		const struct tr_wait *wt = &t->waits[i];

		fprintf(w->out,
			"%s{\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"fence\":%" PRId64
			",\"name\":",
			i ? "," : "", wt->pid, wt->tid, wt->fence);
		str(w->out, wt->name);
		fputs(",\"begin_us\":", w->out);
		time_at(w, wt->ts);
		fputs(",\"end_us\":", w->out);
		time_at(w, wt->end);
		fprintf(w->out, ",\"result\":%d}", wt->result);
	}
	fputc(']', w->out);
}

/* A time of the trace, relative to its start, or null for NAN. */
static void time_or_null(const struct writer *w, double abs_us)
{
	if (isnan(abs_us))
		fputs("null", w->out);
	else
		time_at(w, abs_us);
}

/* ",\"@k\":" and a time of the trace (@rel: relative to its start, null for NAN), or a number. */
static void field(const struct writer *w, const char *k, double v, bool rel)
{
	fprintf(w->out, ",\"%s\":", k);
	if (rel)
		time_or_null(w, v);
	else
		num(w->out, v);
}

/* A display device's track: its frames on screen, drops, and with @lanes its vsyncs. */
static void screen_json(const struct writer *w, const struct an_screen *s, bool lanes)
{
	FILE *out = w->out;
	bool first = true;

	fprintf(out,
		"{\"device\":%" PRId64 ",\"posts\":%zu,\"flipped\":%zu,\"late\":%zu,"
		"\"dropped\":%zu,\"acquire_failed\":%zu,\"vsyncs\":%zu,\"releases\":%zu,"
		"\"latency_us\":{\"p50\":",
		s->device, s->posts, s->n_frames, s->late, s->dropped, s->acquire_failed, s->vsyncs,
		s->releases);
	num(out, s->latency_p50);
	field(w, "p99", s->latency_p99, false);
	field(w, "max", s->latency_max, false);
	fputs("},\"frames\":[", out);
	for (size_t i = 0; i < s->n_frames; i++) {
		const struct an_screen_frame *f = &s->frames[i];

		fprintf(out, "%s{\"post\":%" PRId64, i ? "," : "", f->post);
		field(w, "queued_us", f->queued, true);
		field(w, "flip_us", f->flip, true);
		field(w, "vsync_us", f->vsync, true);
		field(w, "ready_us", f->ready, true);
		field(w, "latency_us", f->latency, false);
		field(w, "after_ready_us", f->flip - f->ready, false);
		fprintf(out, ",\"interface\":%" PRId64 ",\"missed_vsyncs\":%zu,\"late\":%s}",
			f->interface, f->missed, f->late ? "true" : "false");
	}
	fputs("],\"drops\":[", out);
	for (const struct tr_display *e = s->first; e < s->end; e++) {
		if (e->kind != TR_DISPLAY_DROP && e->kind != TR_DISPLAY_ACQUIRE_FAILED)
			continue;
		fprintf(out, "%s{\"post\":%" PRId64 ",\"what\":\"%s\",\"t_us\":", first ? "" : ",",
			e->post, e->kind == TR_DISPLAY_DROP ? "drop" : "acquire_failed");
		first = false;
		time_at(w, e->ts);
		fprintf(out, ",\"status\":%d}", e->status);
	}
	fputc(']', out);
	if (lanes) {
		first = true;
		fputs(",\"vsync_ticks\":[", out);
		for (const struct tr_display *e = s->first; e < s->end; e++) {
			if (e->kind != TR_DISPLAY_VSYNC)
				continue;
			if (!first)
				fputc(',', out);
			first = false;
			time_at(w, e->ts);
		}
		fputc(']', out);
	}
	fputc('}', out);
}

int report_write_json(FILE *out, const struct trace *t, const struct analysis *a, const char *file,
		      bool lanes)
{
	struct writer w = { out, t, a };
	size_t n_late_frames = 0;
	bool first = true;

	fputs("{\"version\":1,\"trace\":{\"file\":", out);
	str(out, file);
	fputs(",\"start_us\":", out);
	num(out, t->start_us);
	fputs(",\"end_us\":", out);
	num(out, t->end_us);
	fputs(",\"duration_us\":", out);
	num(out, t->end_us - t->start_us);
	fprintf(out,
		",\"events\":%zu,\"timelines\":%zu,\"signals\":%zu,\"fences\":%zu,\"waits\":%zu,"
		"\"deadlocks\":%zu},",
		t->n_events, t->n_timelines, t->n_signals, t->n_fences, t->n_waits, t->n_deadlocks);
	fputs("\"display\":[", out);
	for (size_t i = 0; i < a->n_display; i++) {
		fprintf(out, "%s{\"id\":%" PRId64 ",\"name\":", i ? "," : "", a->display[i]);
		str(out, timeline_name(t, a->display[i]));
		fputc('}', out);
	}
	fputs("],\"timelines\":[", out);
	for (size_t i = 0; i < t->n_timelines; i++) {
		if (i)
			fputc(',', out);
		timeline_json(&w, &t->timelines[i], lanes);
	}
	fputs("],\"processes\":[", out);
	for (size_t i = 0; i < t->n_processes; i++) {
		if (i)
			fputc(',', out);
		process_json(&w, &t->processes[i]);
	}
	fputs("],\"late_fences\":[", out);
	for (size_t i = 0; i < a->n_late; i++) {
		if (i)
			fputc(',', out);
		late_json(&w, &a->late[i]);
	}
	fprintf(out, "],\"frames\":%zu,\"late_frames\":[", a->n_frames);
	for (size_t i = 0; i < a->n_frames; i++) {
		if (a->frames[i].late < 0)
			continue;
		if (n_late_frames++)
			fputc(',', out);
		frame_json(&w, &a->frames[i]);
	}
	fputs("],\"deadlocks\":[", out);
	for (size_t i = 0; i < t->n_deadlocks; i++) {
		fputs(first ? "{\"t_us\":" : ",{\"t_us\":", out);
		first = false;
		time_at(&w, t->deadlocks[i].ts);
		fputs(",\"text\":", out);
		str(out, t->deadlocks[i].text);
		fputc('}', out);
	}
	/* A producer's reset (fl_timeline_fd_fail_pending()): named, with its timeline. */
	fputs("],\"resets\":[", out);
	for (size_t i = 0; i < t->n_resets; i++) {
		const struct tr_reset *s = &t->resets[i];

		fprintf(out, "%s{\"t_us\":", i ? "," : "");
		time_at(&w, s->ts);
		fprintf(out, ",\"timeline\":%" PRId64 ",\"timeline_name\":", s->timeline);
		str(out, timeline_name(t, s->timeline));
		fprintf(out,
			",\"value\":%" PRId64 ",\"status\":%d,\"failed\":%" PRId64
			",\"by_pid\":%" PRId64 "}",
			s->value, s->status, s->failed, s->by_pid);
	}
	fputs("],\"screens\":[", out);
	for (size_t i = 0; i < a->n_screens; i++) {
		if (i)
			fputc(',', out);
		screen_json(&w, &a->screens[i], lanes);
	}
	fputc(']', out);
	if (lanes)
		lanes_json(&w);
	fputs("}", out);
	return ferror(out) ? -EIO : 0;
}

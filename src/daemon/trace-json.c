/* SPDX-License-Identifier: MIT */
/*
 * TRACE STOP: the session's event log (trace.h) as Chrome's JSON trace
 * format (docs/trace-format.md): timelines as tracks of their values,
 * fences as async slices with flows from the signal that completed them,
 * waits as slices on their threads, and the processes' names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/fence.h>

#include "host.h"
#include "server.h"
#include "trace.h"
#include "util.h"

static void ts_us(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, ns / 1000, ns % 1000);
}

/* Per timeline: its name, creator, and the value step being drawn. */
struct tl_state {
	uint64_t id;
	uint32_t name;
	pid_t pid;
	uint64_t value, since;
	bool dead;
};

struct writer {
	FILE *out;
	const struct fld_trace_log *log;
	bool first;
	struct tl_state *tls;
	size_t ntls, tls_cap;
	uint64_t flow_id;
	uint64_t end_ns;
	/* Creators of the fences begun in the trace: id -> pid, name. */
	struct fence_ref {
		uint64_t id;
		pid_t pid;
		uint32_t name;
		bool ended;
		uint64_t begin;
	} * fences;
	size_t nfences;
	pid_t *pids;
	size_t npids, pids_cap;
	struct {
		pid_t pid, tid;
	} * threads;
	size_t nthreads, threads_cap;
	const struct ev **done; /* the FENCE_DONE events by (timeline, value) */
	size_t ndone;
	/* The display events of kind POST and ACQUIRE, by (device, post): a flip's and a post's own. */
	const struct ev **disp;
	size_t ndisp;
	uint64_t devices[64]; /* the display devices seen, for their tracks' names */
	size_t ndevices;
};

static const char *str(const struct writer *w, uint32_t off)
{
	return off == UINT32_MAX ? "" : w->log->strings + off;
}

static void sep(struct writer *w)
{
	fputs(w->first ? "\n" : ",\n", w->out);
	w->first = false;
}

static struct tl_state *tl_get(struct writer *w, uint64_t id)
{
	for (size_t i = 0; i < w->ntls; i++)
		if (w->tls[i].id == id)
			return &w->tls[i];
	if (w->ntls == w->tls_cap) {
		size_t cap = w->tls_cap ? w->tls_cap * 2 : 64;
		struct tl_state *p = realloc(w->tls, cap * sizeof(*p));

		if (!p)
			return NULL;
		w->tls = p;
		w->tls_cap = cap;
	}
	w->tls[w->ntls] =
		(struct tl_state){ .id = id, .name = UINT32_MAX, .since = w->log->start_ns };
	return &w->tls[w->ntls++];
}

static void note_pid(struct writer *w, pid_t pid, pid_t tid)
{
	bool have = false;

	if (pid <= 0)
		return;
	for (size_t i = 0; i < w->npids && !have; i++)
		have = w->pids[i] == pid;
	if (!have && w->npids < w->pids_cap)
		w->pids[w->npids++] = pid;
	have = false;
	for (size_t i = 0; i < w->nthreads && !have; i++)
		have = w->threads[i].pid == pid && w->threads[i].tid == tid;
	if (!have && tid > 0 && w->nthreads < w->threads_cap) {
		w->threads[w->nthreads].pid = pid;
		w->threads[w->nthreads].tid = tid;
		w->nthreads++;
	}
}

/* The slice of the value a timeline stood at, from @s->since to @until. */
static void value_slice(struct writer *w, struct tl_state *s, uint64_t until)
{
	if (until < s->since)
		until = s->since;
	sep(w);
	fprintf(w->out, "{\"ph\":\"X\",\"cat\":\"timeline\",\"name\":\"value %" PRIu64 "\"",
		s->value);
	fprintf(w->out, ",\"pid\":%d,\"tid\":%" PRIu64, TLPID, s->id);
	ts_us(w->out, "ts", s->since);
	ts_us(w->out, "dur", until - s->since);
	fprintf(w->out, ",\"args\":{\"timeline\":%" PRIu64 ",\"value\":%" PRIu64 "}}", s->id,
		s->value);
}

static struct fence_ref *fence_find(struct writer *w, uint64_t id)
{
	size_t lo = 0, hi = w->nfences;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->fences[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->nfences && w->fences[lo].id == id ? &w->fences[lo] : NULL;
}

static int cmp_fence(const void *a, const void *b)
{
	const struct fence_ref *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_done(const void *a, const void *b)
{
	const struct ev *x = *(const struct ev *const *)a, *y = *(const struct ev *const *)b;

	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return x->c < y->c ? -1 : x->c > y->c;
}

/* The fences an advance of a timeline completed (its points in (from, to]), as a JSON array. */
static void signal_fences(struct writer *w, const struct ev *sig)
{
	size_t lo = 0, hi = w->ndone;
	bool first = true;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct ev *e = w->done[mid];

		if (e->b < sig->a || (e->b == sig->a && e->c <= sig->b))
			lo = mid + 1;
		else
			hi = mid;
	}
	fputs(",\"fences\":[", w->out);
	for (; lo < w->ndone && w->done[lo]->b == sig->a && w->done[lo]->c <= sig->c; lo++) {
		fprintf(w->out, "%s%" PRIu64, first ? "" : ",", w->done[lo]->a);
		first = false;
	}
	fputc(']', w->out);
}

/*
 * A timeline's pending points failed (fl_timeline_fd_fail_pending()): the
 * fences that completed then on that timeline above its value, failed.
 */
static void fail_event(struct writer *w, const struct ev *e)
{
	bool first = true;

	note_pid(w, e->pid, 0);
	sep(w);
	fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"signal\",\"name\":\"fail\"", w->out);
	fprintf(w->out, ",\"pid\":%d,\"tid\":%" PRIu64, TLPID, e->a);
	ts_us(w->out, "ts", e->ts);
	fprintf(w->out,
		",\"args\":{\"timeline\":%" PRIu64 ",\"value\":%" PRIu64
		",\"status\":%d,\"failed\":%" PRIu64 ",\"by_pid\":%d,\"fences\":[",
		e->a, e->b, e->status, e->c, (int)e->pid);
	for (size_t i = 0; i < w->ndone; i++) {
		const struct ev *d = w->done[i];

		if (d->b == e->a && d->c > e->b && d->ts == e->ts && d->status == e->status) {
			fprintf(w->out, "%s%" PRIu64, first ? "" : ",", d->a);
			first = false;
		}
	}
	fputs("]}}", w->out);
}

/* ---- display events (TRACE_EVENT of fl-displayd) ---- */

enum {
	D_POST = 1,
	D_ACQUIRE,
	D_ACQUIRED,
	D_FLIP,
	D_VSYNC,
	D_RELEASE,
	D_DROP,
};

static int cmp_disp(const void *a, const void *b)
{
	const struct ev *x = *(const struct ev *const *)a, *y = *(const struct ev *const *)b;

	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

/* The first of @w->disp at (@device, @post), or its end. */
static size_t disp_find(const struct writer *w, uint64_t device, uint64_t post)
{
	size_t lo = 0, hi = w->ndisp;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct ev *m = w->disp[mid];

		if (m->a < device || (m->a == device && m->b < post))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct ev *disp_post(const struct writer *w, uint64_t device, uint64_t post)
{
	size_t i = disp_find(w, device, post);

	return i < w->ndisp && w->disp[i]->a == device && w->disp[i]->b == post &&
			       w->disp[i]->kind == D_POST
		       ? w->disp[i]
		       : NULL;
}

/* An event's head on @e's device track, up to its args' device and post; @dur: an X's (ns). */
static void disp_head(struct writer *w, const char *ph, const char *name, const struct ev *e,
		      uint64_t ts, uint64_t dur)
{
	bool have = false;

	for (size_t i = 0; i < w->ndevices && !have; i++)
		have = w->devices[i] == e->a;
	if (!have && w->ndevices < FL_ARRAY_SIZE(w->devices))
		w->devices[w->ndevices++] = e->a;
	sep(w);
	fprintf(w->out,
		"{\"ph\":\"%s\",%s\"cat\":\"display\",\"name\":\"%s\",\"pid\":%d,"
		"\"tid\":%" PRIu64,
		ph, ph[0] == 'i' ? "\"s\":\"t\"," : "", name, DISPPID, e->a + 1);
	ts_us(w->out, "ts", ts);
	if (ph[0] == 'X')
		ts_us(w->out, "dur", dur);
	fprintf(w->out, ",\"args\":{\"device\":%" PRIu64 ",\"post\":%" PRIu64, e->a, e->b);
}

static void write_display(struct writer *w, const struct ev *e)
{
	FILE *out = w->out;
	const struct ev *p;
	size_t i;

	switch (e->kind) {
	case D_POST:
		note_pid(w, e->pid, e->pid);
		disp_head(w, "i", "post", e, e->ts, 0);
		fprintf(out, ",\"pid\":%d,\"buffers\":%" PRIu64 ",\"acquire\":[", (int)e->pid,
			e->c);
		i = disp_find(w, e->a, e->b);
		for (bool first = true;
		     i < w->ndisp && w->disp[i]->a == e->a && w->disp[i]->b == e->b; i++)
			if (w->disp[i]->kind == D_ACQUIRE && w->disp[i]->c) {
				fprintf(out, "%s%" PRIu64, first ? "" : ",", w->disp[i]->c);
				first = false;
			}
		fprintf(out, "],\"acquire_count\":%" PRIu64 "}}", e->d);
		break;
	case D_ACQUIRED:
		if (e->status >= 0)
			break; /* its post's flip says when it was ready */
		disp_head(w, "i", "acquire_failed", e, e->ts, 0);
		fprintf(out, ",\"buffer\":%d,\"status\":%d}}", (int)e->tid, e->status);
		break;
	case D_FLIP:
		disp_head(w, "i", "flip", e, e->ts, 0);
		fprintf(out, ",\"interface\":%d", e->c ? (int)e->tid : -1);
		if (e->c)
			ts_us(out, "vsync_us", e->c);
		ts_us(out, "ready_us", e->d);
		ts_us(out, "after_ready_us", e->ts > e->d ? e->ts - e->d : 0);
		fputs("}}", out);
		/* The frame: from the post's queueing to its flip, when the trace saw both. */
		p = disp_post(w, e->a, e->b);
		if (p && p->ts <= e->ts) {
			char name[48];

			snprintf(name, sizeof(name), "frame %" PRIu64, e->b);
			disp_head(w, "X", name, e, p->ts, e->ts - p->ts);
			ts_us(out, "latency_us", e->ts - p->ts);
			fputs("}}", out);
		}
		break;
	case D_VSYNC:
		disp_head(w, "i", "vsync", e, e->ts, 0);
		fprintf(out, ",\"interface\":%d}}", (int)e->tid);
		break;
	case D_RELEASE:
		disp_head(w, "i", "release", e, e->ts, 0);
		fprintf(out, ",\"by_post\":%" PRIu64 "}}", e->c);
		break;
	case D_DROP:
		disp_head(w, "i", "drop", e, e->ts, 0);
		fprintf(out, ",\"status\":%d}}", e->status);
		break;
	default: /* D_ACQUIRE: in its post's args */
		break;
	}
}

static void write_event(struct writer *w, const struct ev *e)
{
	FILE *out = w->out;
	struct tl_state *s;
	struct fence_ref *fr;

	switch (e->type) {
	case EV_TIMELINE:
		s = tl_get(w, e->a);
		if (!s)
			return;
		s->name = e->name;
		s->pid = e->pid;
		s->value = e->b;
		s->since = e->ts;
		sep(w);
		fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"timeline\",\"name\":\"timeline_create\"",
		      out);
		fprintf(out, ",\"pid\":%d,\"tid\":%" PRIu64, TLPID, e->a);
		ts_us(out, "ts", e->ts);
		fprintf(out, ",\"args\":{\"timeline\":%" PRIu64 ",\"name\":", e->a);
		fl__json_str(out, str(w, e->name));
		fprintf(out, ",\"pid\":%d,\"value\":%" PRIu64 ",\"existing\":%s}}", (int)e->pid,
			e->b, e->ts == w->log->start_ns && !e->pid ? "true" : "false");
		break;
	case EV_TIMELINE_DEAD:
		s = tl_get(w, e->a);
		if (!s || s->dead)
			return;
		value_slice(w, s, e->ts);
		s->dead = true;
		sep(w);
		fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"timeline\",\"name\":\"timeline_"
		      "destroy\"",
		      out);
		fprintf(out, ",\"pid\":%d,\"tid\":%" PRIu64, TLPID, e->a);
		ts_us(out, "ts", e->ts);
		fprintf(out, ",\"args\":{\"timeline\":%" PRIu64 ",\"value\":%" PRIu64 "}}", e->a,
			s->value);
		break;
	case EV_SIGNAL:
		s = tl_get(w, e->a);
		if (!s)
			return;
		if (e->kind == 1) {
			fail_event(w, e);
			break;
		}
		if (!s->dead) {
			value_slice(w, s, e->ts);
			s->value = e->c;
			s->since = e->ts;
		}
		note_pid(w, e->pid, 0);
		sep(w);
		fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"signal\",\"name\":\"signal\"", out);
		fprintf(out, ",\"pid\":%d,\"tid\":%" PRIu64, TLPID, e->a);
		ts_us(out, "ts", e->ts);
		fprintf(out,
			",\"args\":{\"timeline\":%" PRIu64 ",\"from\":%" PRIu64
			",\"value\":%" PRIu64 ",\"status\":%d,\"by_pid\":%d,\"by_tid\":0",
			e->a, e->b, e->c, e->status, (int)e->pid);
		signal_fences(w, e);
		fputs("}}", out);
		break;
	case EV_FENCE:
		note_pid(w, e->pid, e->pid);
		sep(w);
		fputs("{\"ph\":\"b\",\"cat\":\"fence\",\"name\":", out);
		fl__json_str(out, str(w, e->name));
		fprintf(out, ",\"id\":\"f%" PRIu64 "\",\"pid\":%d,\"tid\":%d", e->a, (int)e->pid,
			(int)e->pid);
		ts_us(out, "ts", e->ts);
		fprintf(out, ",\"args\":{\"fence\":%" PRIu64 ",\"kind\":\"%s\",\"points\":[", e->a,
			e->kind == 1   ? "merge"
			: e->kind == 2 ? "import"
				       : "create");
		for (uint32_t i = 0; i < e->npts; i++)
			fprintf(out, "%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "",
				w->log->points[e->pts + 2 * i], w->log->points[e->pts + 2 * i + 1]);
		fputc(']', out);
		if (e->kind == 1)
			fprintf(out, ",\"inputs\":[%" PRIu64 ",%" PRIu64 "]", e->b, e->c);
		fputs("}}", out);
		break;
	case EV_FENCE_DONE:
		fr = fence_find(w, e->a);
		if (!fr || fr->ended)
			return; /* made before the trace: no slice to end */
		fr->ended = true;
		/*
		 * An owner's stamp can precede the daemon's record of the fence
		 * (the owner signalled before its one-way FENCE_NEW was read):
		 * the slice ends no earlier than it begins.
		 */
		sep(w);
		fputs("{\"ph\":\"e\",\"cat\":\"fence\",\"name\":", out);
		fl__json_str(out, str(w, fr->name));
		fprintf(out, ",\"id\":\"f%" PRIu64 "\",\"pid\":%d,\"tid\":%d", e->a, (int)fr->pid,
			(int)fr->pid);
		ts_us(out, "ts", e->ts < fr->begin ? fr->begin : e->ts);
		/* The format's status: 0 signalled, < 0 failed (1 is kept for "still pending"). */
		fprintf(out,
			",\"args\":{\"fence\":%" PRIu64 ",\"status\":%d,\"timeline\":%" PRIu64
			",\"value\":%" PRIu64 "}}",
			e->a, e->status == 1 ? 0 : e->status, e->b, e->c);
		break;
	case EV_DEADLINE:
		note_pid(w, e->pid, e->pid);
		sep(w);
		fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"deadline\",\"name\":\"deadline\"", out);
		fprintf(out, ",\"pid\":%d,\"tid\":%d", (int)e->pid, (int)e->pid);
		ts_us(out, "ts", e->ts);
		fprintf(out, ",\"args\":{\"fence\":%" PRIu64, e->a);
		ts_us(out, "deadline_us", e->b);
		fputs("}}", out);
		break;
	case EV_WAIT: {
		uint64_t end = e->b ? e->b : w->end_ns;

		note_pid(w, e->pid, e->tid);
		sep(w);
		fputs("{\"ph\":\"X\",\"cat\":\"wait\",\"name\":", out);
		{
			char name[FL_NAME_MAX + 8];

			snprintf(name, sizeof(name), "wait %s", str(w, e->name));
			fl__json_str(out, name);
		}
		fprintf(out, ",\"pid\":%d,\"tid\":%d", (int)e->pid, (int)e->tid);
		ts_us(out, "ts", e->ts);
		ts_us(out, "dur", end > e->ts ? end - e->ts : 0);
		fprintf(out, ",\"args\":{\"fence\":%" PRIu64 ",\"result\":%d,\"timeout_ms\":%d}}",
			e->a, e->b ? e->status : 1, e->timeout_ms);
		if (e->b && e->c && e->status == 0) {
			/* The arrow from the signal to the wait it released. */
			w->flow_id++;
			sep(w);
			fprintf(out,
				"{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"wake\",\"id\":%" PRIu64
				",\"pid\":%d,\"tid\":%" PRIu64,
				w->flow_id, TLPID, e->c);
			ts_us(out, "ts", e->d);
			fputs("}", out);
			sep(w);
			fprintf(out,
				"{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"wake\","
				"\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%d",
				w->flow_id, (int)e->pid, (int)e->tid);
			ts_us(out, "ts", end);
			fputs("}", out);
		}
		break;
	}
	case EV_DISPLAY:
		write_display(w, e);
		break;
	case EV_DEADLOCK:
		sep(w);
		fputs("{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"deadlock\",\"name\":\"deadlock\"", out);
		fprintf(out, ",\"pid\":%d,\"tid\":0", TLPID);
		ts_us(out, "ts", e->ts);
		fputs(",\"args\":{\"text\":", out);
		fl__json_str(out, str(w, e->name));
		fputs("}}", out);
		break;
	}
}

static void write_metadata(struct writer *w)
{
	char comm[32], name[96];

	if (w->ndevices) {
		sep(w);
		fprintf(w->out,
			"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":"
			"\"displays\"}}",
			DISPPID);
	}
	for (size_t i = 0; i < w->ndevices; i++) {
		sep(w);
		fprintf(w->out,
			"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
			",\"args\":{\"name\":\"display device %" PRIu64 "\"}}",
			DISPPID, w->devices[i] + 1, w->devices[i]);
	}

	sep(w);
	fprintf(w->out,
		"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":"
		"\"timelines\"}}",
		TLPID);
	for (size_t i = 0; i < w->ntls; i++) {
		snprintf(name, sizeof(name), "timeline %s #%" PRIu64, str(w, w->tls[i].name),
			 w->tls[i].id);
		sep(w);
		fprintf(w->out,
			"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64, TLPID,
			w->tls[i].id);
		fputs(",\"args\":{\"name\":", w->out);
		fl__json_str(w->out, name);
		fputs("}}", w->out);
	}
	for (size_t i = 0; i < w->npids; i++) {
		snprintf(comm, sizeof(comm), "%s", fld__trace_comm_of(w->log, w->pids[i], 0));
		snprintf(name, sizeof(name), "%s (%d)", comm[0] ? comm : "?", (int)w->pids[i]);
		sep(w);
		fprintf(w->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d",
			(int)w->pids[i]);
		fputs(",\"args\":{\"name\":", w->out);
		fl__json_str(w->out, name);
		fputs("}}", w->out);
	}
	for (size_t i = 0; i < w->nthreads; i++) {
		snprintf(comm, sizeof(comm), "%s",
			 fld__trace_comm_of(
				 w->log, w->threads[i].pid,
				 w->threads[i].tid == w->threads[i].pid ? 0 : w->threads[i].tid));
		if (!comm[0])
			snprintf(comm, sizeof(comm), "%s",
				 fld__trace_comm_of(w->log, w->threads[i].pid, w->threads[i].tid));
		if (!comm[0])
			snprintf(comm, sizeof(comm), "%d", (int)w->threads[i].tid);
		sep(w);
		fprintf(w->out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d",
			(int)w->threads[i].pid, (int)w->threads[i].tid);
		fputs(",\"args\":{\"name\":", w->out);
		fl__json_str(w->out, comm);
		fputs("}}", w->out);
	}
}

int fld__trace_write_json(FILE *out, struct fld_trace_log *t, uint64_t end_ns)
{
	struct writer w = { .out = out, .first = true, .end_ns = end_ns, .log = t };
	size_t nf = 0;

	/* Events are recorded in order except fence creation (stamped when made). */
	fl__sort(t->ev, t->n, sizeof(*t->ev), cmp_ev);
	for (size_t i = 0; i < t->n; i++) {
		nf += t->ev[i].type == EV_FENCE;
		w.ndone += t->ev[i].type == EV_FENCE_DONE;
		w.ndisp += t->ev[i].type == EV_DISPLAY &&
			   (t->ev[i].kind == D_POST || t->ev[i].kind == D_ACQUIRE);
	}
	w.disp = calloc(w.ndisp ? w.ndisp : 1, sizeof(*w.disp));
	w.done = calloc(w.ndone ? w.ndone : 1, sizeof(*w.done));
	w.fences = calloc(nf ? nf : 1, sizeof(*w.fences));
	w.pids_cap = 1024;
	w.pids = calloc(w.pids_cap, sizeof(*w.pids));
	w.threads_cap = 4096;
	w.threads = calloc(w.threads_cap, sizeof(*w.threads));
	if (!w.fences || !w.pids || !w.threads || !w.done || !w.disp) {
		free(w.disp);
		free(w.done);
		free(w.fences);
		free(w.pids);
		free(w.threads);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->ev[i].type == EV_FENCE)
			w.fences[w.nfences++] =
				(struct fence_ref){ t->ev[i].a, t->ev[i].pid, t->ev[i].name, false,
						    t->ev[i].ts };
	fl__sort(w.fences, w.nfences, sizeof(*w.fences), cmp_fence);
	w.ndone = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->ev[i].type == EV_FENCE_DONE)
			w.done[w.ndone++] = &t->ev[i];
	fl__sort(w.done, w.ndone, sizeof(*w.done), cmp_done);
	w.ndisp = 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->ev[i].type == EV_DISPLAY &&
		    (t->ev[i].kind == D_POST || t->ev[i].kind == D_ACQUIRE))
			w.disp[w.ndisp++] = &t->ev[i];
	fl__sort(w.disp, w.ndisp, sizeof(*w.disp), cmp_disp);

	fputs("{\"traceEvents\":[", out);
	for (size_t i = 0; i < t->n; i++)
		write_event(&w, &t->ev[i]);
	/* Close what is still open at the end: value steps and pending fences. */
	for (size_t i = 0; i < w.ntls; i++)
		if (!w.tls[i].dead)
			value_slice(&w, &w.tls[i], end_ns);
	for (size_t i = 0; i < w.nfences; i++) {
		struct fence_ref *fr = &w.fences[i];

		if (fr->ended)
			continue;
		sep(&w);
		fputs("{\"ph\":\"e\",\"cat\":\"fence\",\"name\":", out);
		fl__json_str(out, str(&w, fr->name));
		fprintf(out, ",\"id\":\"f%" PRIu64 "\",\"pid\":%d,\"tid\":%d", fr->id, (int)fr->pid,
			(int)fr->pid);
		ts_us(out, "ts", end_ns);
		fprintf(out, ",\"args\":{\"fence\":%" PRIu64 ",\"status\":1}}", fr->id);
	}
	write_metadata(&w);
	fputs("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"fenceline\",\"format\":"
	      "1,"
	      "\"clock\":\"CLOCK_MONOTONIC\"",
	      out);
	ts_us(out, "start_us", t->start_ns);
	ts_us(out, "end_us", end_ns);
	fprintf(out,
		",\"events\":%zu,\"dropped\":%" PRIu64 ",\"max_events\":%zu,\"daemon_pid\":%d}}\n",
		t->n, t->dropped, t->max, (int)getpid());
	free(w.disp);
	free(w.done);
	free(w.fences);
	free(w.pids);
	free(w.threads);
	free(w.tls);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * fencectl trace: while a session runs, the daemon keeps compact records of
 * what happens to its timelines, fences and waits; TRACE STOP turns them
 * into Chrome's JSON trace format (docs/trace-format.md), which Perfetto's
 * UI and chrome://tracing load. Outside a session every hook is one branch
 * on fld_tracing. The core's observer (fence completions, timeline deaths)
 * stays installed for the statistics (stats.c).
 *
 * During a session every owner of a shared counter is made to sync on each
 * increment (shared.c publishes sync_at 0), so that the daemon sees each
 * signal when it happens rather than when it next looks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/fence.h>
#include <fenceline/timeline.h>

#include "host.h"
#include "server.h"
#include "util.h"

#define TLPID	   10000000 /* the pseudo-process of timeline tracks */
#define MAX_POINTS 64

enum ev_type {
	EV_TIMELINE, /* a: id, b: value; pid: creator (0: existed before the trace) */
	EV_TIMELINE_DEAD, /* a: id */
	EV_SIGNAL, /* a: tl, b: from, c: to; pid: by; status */
	EV_FENCE, /* a: id, b: input a, c: input b; pid: creator; kind; pts */
	EV_FENCE_DONE, /* a: id, b: tl, c: value; status */
	EV_DEADLINE, /* a: fence, b: deadline ns; pid */
	EV_WAIT, /* a: fence, b: end ns, c: signal tl, d: signal ns; pid, tid; status; timeout */
	EV_DEADLOCK, /* name: the text */
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

bool fld_tracing;

static struct {
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
} t;

static uint32_t add_string(const char *s)
{
	size_t len = strlen(s) + 1;

	if (t.slen + len > t.scap) {
		size_t cap = FL_MAX(t.scap * 2, t.slen + len + 4096);
		char *p = cap < UINT32_MAX ? realloc(t.strings, cap) : NULL;

		if (!p)
			return UINT32_MAX;
		t.strings = p;
		t.scap = cap;
	}
	memcpy(t.strings + t.slen, s, len);
	t.slen += len;
	return (uint32_t)(t.slen - len);
}

static void remember_comm(pid_t pid, pid_t tid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (pid <= 0)
		return;
	for (size_t i = 0; i < t.ncomms; i++)
		if (t.comms[i].pid == pid && t.comms[i].tid == tid)
			return;
	if (t.ncomms == t.comms_cap) {
		size_t cap = t.comms_cap ? t.comms_cap * 2 : 64;
		struct comm *c = cap <= 65536 ? realloc(t.comms, cap * sizeof(*c)) : NULL;

		if (!c)
			return;
		t.comms = c;
		t.comms_cap = cap;
	}
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	t.comms[t.ncomms++] = (struct comm){ pid, tid, add_string(comm) };
}

static const char *comm_of(pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < t.ncomms; i++)
		if (t.comms[i].pid == pid && t.comms[i].tid == tid)
			return t.comms[i].name == UINT32_MAX ? "" : t.strings + t.comms[i].name;
	return "";
}

static struct ev *add(enum ev_type type, uint64_t ts)
{
	if (t.n == t.max) {
		t.dropped++;
		return NULL;
	}
	if (t.n == t.cap) {
		size_t cap = t.cap ? t.cap * 2 : 4096;
		struct ev *p = realloc(t.ev, FL_MIN(cap, t.max) * sizeof(*p));

		if (!p) {
			t.dropped++;
			return NULL;
		}
		t.ev = p;
		t.cap = FL_MIN(cap, t.max);
	}
	t.ev[t.n] = (struct ev){ .type = (uint8_t)type, .ts = ts, .name = UINT32_MAX };
	return &t.ev[t.n++];
}

/* ---- recording ---------------------------------------------------------------------------- */

static void snapshot_timeline(struct fl_timeline *tl, void *arg)
{
	char value[64];
	struct ev *e;

	(void)arg;
	if (fl_timeline_is_alive(tl) != 1 ||
	    fl_timeline_get_value_str(tl, value, sizeof(value)) < 0)
		return;
	e = add(EV_TIMELINE, t.start_ns);
	if (e) {
		e->a = fl_timeline_get_id(tl);
		e->b = strtoull(value, NULL, 10);
		e->name = add_string(fl_timeline_get_name(tl));
	}
}

int fld_trace_start(pid_t by, uint32_t max_events, uint32_t cap)
{
	if (fld_tracing)
		return -EBUSY;
	memset(&t, 0, sizeof(t));
	t.by = by;
	/*
	 * The client's number is a wish: each event costs about 100 bytes
	 * here, and 2^32 - 1 of them would take the daemon's memory.
	 */
	if (!cap)
		cap = FLD_TRACE_MAX_EVENTS;
	t.max = max_events && max_events < cap ? max_events : cap;
	t.start_ns = fl__now_ns();
	fld_tracing = true;
	/* Timelines made before the session get their track all the same. */
	fl__timeline_foreach(snapshot_timeline, NULL);
	return 0;
}

void fld_trace_timeline_new(pid_t pid, uint64_t id, const char *name, uint64_t value)
{
	struct ev *e;

	if (!fld_tracing || !(e = add(EV_TIMELINE, fl__now_ns())))
		return;
	remember_comm(pid, 0);
	e->pid = pid;
	e->a = id;
	e->b = value;
	e->name = add_string(name);
}

void fld_trace_signal(uint64_t tl, uint64_t from, uint64_t to, pid_t by, uint64_t ts, int status)
{
	struct ev *e;

	if (!fld_tracing || !(e = add(EV_SIGNAL, ts)))
		return;
	remember_comm(by, 0);
	e->a = tl;
	e->b = from;
	e->c = to;
	e->pid = by;
	e->status = status;
}

void fld_trace_fence_new(pid_t pid, struct fl_fence *f, const char *kind, uint64_t in_a,
			 uint64_t in_b)
{
	struct fl_sync_pt_info pts[MAX_POINTS];
	struct fl_fence_info info;
	struct ev *e;
	int n;

	if (!fld_tracing)
		return;
	n = fl_fence_get_info(f, &info, pts, MAX_POINTS);
	if (n < 0 || !(e = add(EV_FENCE, fl__fence_created_ns(f))))
		return;
	remember_comm(pid, 0);
	e->pid = pid;
	e->a = fl__fence_id(f);
	e->b = in_a;
	e->c = in_b;
	e->kind = strcmp(kind, "merge") == 0 ? 1 : strcmp(kind, "import") == 0 ? 2 : 0;
	e->name = add_string(info.name);
	n = FL_MIN(n, MAX_POINTS);
	if (t.plen + 2 * (size_t)n > t.pcap) {
		size_t cap = FL_MAX(t.pcap * 2, t.plen + 2 * (size_t)n + 1024);
		uint64_t *p = realloc(t.points, cap * sizeof(*p));

		if (!p)
			return;
		t.points = p;
		t.pcap = cap;
	}
	e->pts = (uint32_t)t.plen;
	e->npts = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		t.points[t.plen++] = pts[i].timeline_id;
		t.points[t.plen++] = pts[i].value;
	}
}

void fld_trace_deadline(pid_t pid, uint64_t fence, uint64_t deadline_ns)
{
	struct ev *e;

	if (!fld_tracing || !(e = add(EV_DEADLINE, fl__now_ns())))
		return;
	remember_comm(pid, 0);
	e->pid = pid;
	e->a = fence;
	e->b = deadline_ns;
}

void fld_trace_wait(pid_t pid, pid_t tid, uint64_t fence, const char *name, uint64_t begin_ns,
		    uint64_t end_ns, int result, int timeout_ms, uint64_t signal_tl,
		    uint64_t signal_ns)
{
	struct ev *e;

	if (!fld_tracing || !(e = add(EV_WAIT, begin_ns)))
		return;
	remember_comm(pid, 0);
	remember_comm(pid, tid);
	e->pid = pid;
	e->tid = tid;
	e->a = fence;
	e->b = end_ns;
	e->c = signal_tl;
	e->d = signal_ns;
	e->status = result;
	e->timeout_ms = timeout_ms;
	e->name = add_string(name);
}

void fld_trace_deadlock(const char *text, const pid_t *pids, size_t n)
{
	struct ev *e;

	(void)pids;
	(void)n;
	if (!fld_tracing || !(e = add(EV_DEADLOCK, fl__now_ns())))
		return;
	e->name = add_string(text);
}

int fld_completing_point(struct fl_fence *f, struct fl_sync_pt_info *ret)
{
	struct fl_sync_pt_info pts[MAX_POINTS];
	struct fl_fence_info info;
	int n = fl_fence_get_info(f, &info, pts, MAX_POINTS), found = -1;

	memset(ret, 0, sizeof(*ret));
	/* The failing point of a failed fence, else the last to complete. */
	for (int i = 0; i < n && i < MAX_POINTS; i++)
		if (pts[i].status != 0 && pts[i].timestamp_ns == info.timestamp_ns &&
		    (found < 0 || (info.status < 0 && pts[i].status == info.status)))
			found = i;
	if (found < 0 && n == 1)
		found = 0;
	if (found >= 0)
		*ret = pts[found];
	return found >= 0 ? 0 : -ENOENT;
}

static void fence_done(struct fl_fence *f, int status, uint64_t ts, void *arg)
{
	struct fl_sync_pt_info pt;
	struct ev *e;

	(void)arg;
	fld_completing_point(f, &pt);
	fld_stats_fence_done(fl_fence_get_name(f), pt.timeline_id, pt.timeline_name, status,
			     ts > fl__fence_created_ns(f) ? ts - fl__fence_created_ns(f) : 0);
	if (!fld_tracing || !(e = add(EV_FENCE_DONE, ts)))
		return;
	e->a = fl__fence_id(f);
	e->b = pt.timeline_id;
	e->c = pt.value;
	e->status = status;
}

static void timeline_dead(struct fl_timeline *tl, void *arg)
{
	struct ev *e;

	(void)arg;
	if (!fld_tracing || !(e = add(EV_TIMELINE_DEAD, fl__now_ns())))
		return;
	e->a = fl_timeline_get_id(tl);
}

static const struct fl__observer observer = { fence_done, timeline_dead };

void fld_trace_init(void)
{
	fl__observer_set(&observer, NULL);
	fld_stats_start();
}

void fld_trace_shutdown(void)
{
	fl__observer_set(NULL, NULL);
	free(t.ev);
	free(t.strings);
	free(t.points);
	free(t.comms);
	memset(&t, 0, sizeof(t));
	fld_tracing = false;
	fld_stats_free();
}

/* ---- writing ------------------------------------------------------------------------------ */

static const char *str(uint32_t off)
{
	return off == UINT32_MAX ? "" : t.strings + off;
}

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
};

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
	w->tls[w->ntls] = (struct tl_state){ .id = id, .name = UINT32_MAX, .since = t.start_ns };
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
		fl__json_str(out, str(e->name));
		fprintf(out, ",\"pid\":%d,\"value\":%" PRIu64 ",\"existing\":%s}}", (int)e->pid,
			e->b, e->ts == t.start_ns && !e->pid ? "true" : "false");
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
		fl__json_str(out, str(e->name));
		fprintf(out, ",\"id\":\"f%" PRIu64 "\",\"pid\":%d,\"tid\":%d", e->a, (int)e->pid,
			(int)e->pid);
		ts_us(out, "ts", e->ts);
		fprintf(out, ",\"args\":{\"fence\":%" PRIu64 ",\"kind\":\"%s\",\"points\":[", e->a,
			e->kind == 1   ? "merge"
			: e->kind == 2 ? "import"
				       : "create");
		for (uint32_t i = 0; i < e->npts; i++)
			fprintf(out, "%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "",
				t.points[e->pts + 2 * i], t.points[e->pts + 2 * i + 1]);
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
		fl__json_str(out, str(fr->name));
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

			snprintf(name, sizeof(name), "wait %s", str(e->name));
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
	case EV_DEADLOCK:
		sep(w);
		fputs("{\"ph\":\"i\",\"s\":\"g\",\"cat\":\"deadlock\",\"name\":\"deadlock\"", out);
		fprintf(out, ",\"pid\":%d,\"tid\":0", TLPID);
		ts_us(out, "ts", e->ts);
		fputs(",\"args\":{\"text\":", out);
		fl__json_str(out, str(e->name));
		fputs("}}", out);
		break;
	}
}

static void write_metadata(struct writer *w)
{
	char comm[32], name[96];

	sep(w);
	fprintf(w->out,
		"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":"
		"\"timelines\"}}",
		TLPID);
	for (size_t i = 0; i < w->ntls; i++) {
		snprintf(name, sizeof(name), "timeline %s #%" PRIu64, str(w->tls[i].name),
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
		snprintf(comm, sizeof(comm), "%s", comm_of(w->pids[i], 0));
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
			 comm_of(w->threads[i].pid,
				 w->threads[i].tid == w->threads[i].pid ? 0 : w->threads[i].tid));
		if (!comm[0])
			snprintf(comm, sizeof(comm), "%s",
				 comm_of(w->threads[i].pid, w->threads[i].tid));
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

static int write_trace(FILE *out, uint64_t end_ns)
{
	struct writer w = { .out = out, .first = true, .end_ns = end_ns };
	size_t nf = 0;

	/* Events are recorded in order except fence creation (stamped when made). */
	fl__sort(t.ev, t.n, sizeof(*t.ev), cmp_ev);
	for (size_t i = 0; i < t.n; i++) {
		nf += t.ev[i].type == EV_FENCE;
		w.ndone += t.ev[i].type == EV_FENCE_DONE;
	}
	w.done = calloc(w.ndone ? w.ndone : 1, sizeof(*w.done));
	w.fences = calloc(nf ? nf : 1, sizeof(*w.fences));
	w.pids_cap = 1024;
	w.pids = calloc(w.pids_cap, sizeof(*w.pids));
	w.threads_cap = 4096;
	w.threads = calloc(w.threads_cap, sizeof(*w.threads));
	if (!w.fences || !w.pids || !w.threads || !w.done) {
		free(w.done);
		free(w.fences);
		free(w.pids);
		free(w.threads);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t.n; i++)
		if (t.ev[i].type == EV_FENCE)
			w.fences[w.nfences++] =
				(struct fence_ref){ t.ev[i].a, t.ev[i].pid, t.ev[i].name, false,
						    t.ev[i].ts };
	fl__sort(w.fences, w.nfences, sizeof(*w.fences), cmp_fence);
	w.ndone = 0;
	for (size_t i = 0; i < t.n; i++)
		if (t.ev[i].type == EV_FENCE_DONE)
			w.done[w.ndone++] = &t.ev[i];
	fl__sort(w.done, w.ndone, sizeof(*w.done), cmp_done);

	fputs("{\"traceEvents\":[", out);
	for (size_t i = 0; i < t.n; i++)
		write_event(&w, &t.ev[i]);
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
		fl__json_str(out, str(fr->name));
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
	ts_us(out, "start_us", t.start_ns);
	ts_us(out, "end_us", end_ns);
	fprintf(out,
		",\"events\":%zu,\"dropped\":%" PRIu64 ",\"max_events\":%zu,\"daemon_pid\":%d}}\n",
		t.n, t.dropped, t.max, (int)getpid());
	free(w.done);
	free(w.fences);
	free(w.pids);
	free(w.threads);
	free(w.tls);
	return 0;
}

int fld_trace_stop(int *ret_fd)
{
	uint64_t end = fl__now_ns();
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	int r;

	if (!fld_tracing)
		return -ENOENT;
	fld_tracing = false;
	out = open_memstream(&text, &len);
	if (!out) {
		r = -ENOMEM;
	} else {
		r = write_trace(out, end);
		if (fclose(out) != 0 || !text)
			r = -ENOMEM;
	}
	if (r == 0)
		r = fld_memfd_sealed(text, len, ret_fd);
	free(text);
	free(t.ev);
	free(t.strings);
	free(t.points);
	free(t.comms);
	memset(&t, 0, sizeof(t));
	return r;
}

pid_t fld_trace_owner(void)
{
	return fld_tracing ? t.by : 0;
}

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
#include "protocol.h"
#include "server.h"
#include "statuspage.h"
#include "trace.h"
#include "util.h"

bool fld_tracing;

static struct fld_trace_log t;

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

const char *fld__trace_comm_of(const struct fld_trace_log *log, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < log->ncomms; i++)
		if (log->comms[i].pid == pid && log->comms[i].tid == tid)
			return log->comms[i].name == UINT32_MAX ? ""
								: log->strings + log->comms[i].name;
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
	fl__status_page_set_tracing(true);
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

void fld_trace_fail(uint64_t tl, uint64_t value, int failed, pid_t by, uint64_t ts, int status)
{
	struct ev *e;

	if (!fld_tracing || !(e = add(EV_SIGNAL, ts)))
		return;
	remember_comm(by, 0);
	e->kind = 1;
	e->a = tl;
	e->b = value;
	e->c = (uint64_t)failed;
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

void fld_trace_display(pid_t by, const struct fl_msg_trace_event *m, uint64_t fence)
{
	struct ev *e;

	if (!fld_tracing || !(e = add(EV_DISPLAY, m->ts_ns)))
		return;
	e->kind = (uint8_t)m->type;
	e->a = m->device;
	e->b = m->post;
	e->c = m->type == FL_PROTO_TRACE_ACQUIRE ? fence : m->a;
	e->d = m->b;
	e->status = m->status;
	e->pid = m->pid && m->pid <= INT32_MAX ? (int32_t)m->pid : by;
	e->tid = m->index;
	remember_comm(e->pid, 0);
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
	fl__status_page_set_tracing(false);
	fld_stats_free();
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
	fl__status_page_set_tracing(false);
	out = open_memstream(&text, &len);
	if (!out) {
		r = -ENOMEM;
	} else {
		r = fld__trace_write_json(out, &t, end);
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

/* SPDX-License-Identifier: MIT */
/*
 * The deadlock and never-signal detector, over the waits of waits.c.
 *
 * Every 250 ms while a wait older than 100 ms exists, the detector looks
 * for waits that can never end:
 *
 *  - the signallers of a timeline are the processes holding its fd (from
 *    /proc, as fencectl dump shows them); this daemon never signals;
 *  - a process is blocked when every thread of it, except fenceline's own
 *    ("fl-" names, which never signal), is in a reported wait;
 *  - a wait is stuck when its fence has a pending point on a timeline whose
 *    signallers are all stuck processes (or there are none), and a process
 *    is stuck when it is blocked and all its waits are stuck. Starting from
 *    every blocked process, the ones that fail the test are dropped until
 *    nothing changes (a greatest fixpoint): what is left can never move.
 *
 * Among stuck processes, a wait-for cycle (A waits on a timeline only B
 * can signal, B on one only A can signal, through any number of processes
 * and merged fences) is a deadlock; a stuck wait on a timeline nobody holds
 * will never signal. Each new finding is logged, traced and kept for
 * fencectl deadlocks; the wait that closed a cycle (the latest to begin)
 * gets -EDEADLK through its notify pipe if it asked for one, else the
 * latest of the cycle's waits that did.
 */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host.h"
#include "protocol.h"
#include "server.h"
#include "util.h"
#include "waits.h"

#define CHECK_AGE_NS   100000000ull /* waits younger than this are not looked at */
#define CHECK_EVERY_NS 250000000ull
#define MAX_POINTS     64 /* pending points looked at per fence */
#define MAX_SIGNALLERS 32
#define HISTORY	       16

static uint64_t last_check_ns;

/* One finding of the detector, kept for fencectl deadlocks. */
struct finding {
	uint64_t detected_ns;
	bool cycle; /* else: will never signal */
	char *text; /* the human report */
	char *json; /* one JSON object */
	uint64_t key; /* what it is about, to report each finding once */
};
static struct finding history[HISTORY];
static unsigned int nhistory;
static struct finding *current; /* the last check's findings */
static size_t ncurrent;

/* The daemon is exiting: the findings go. */
void fld_deadlocks_forget(void)
{
	for (unsigned int i = 0; i < nhistory; i++) {
		free(history[i].text);
		free(history[i].json);
	}
	nhistory = 0;
	for (size_t i = 0; i < ncurrent; i++) {
		free(current[i].text);
		free(current[i].json);
	}
	free(current);
	current = NULL;
	ncurrent = 0;
}

/* ---- the detector ------------------------------------------------------------------------ */

/* What the detector knows of one wait. */
struct wnode {
	struct wait *w;
	struct proc *p;
	uint64_t tls[MAX_POINTS]; /* its fence's pending timelines */
	uint64_t values[MAX_POINTS]; /* and the points' values */
	char tl_names[MAX_POINTS][FL_NAME_MAX];
	unsigned int ntls;
	bool stuck;
	int blocking; /* index into tls of the timeline that cannot move, or -1 */
};

struct proc {
	pid_t pid;
	bool blocked; /* every thread but fenceline's waits */
	bool stuck;
	unsigned int nwaits; /* wnodes of this process */
	int on_stack, done; /* cycle search */
};

struct detector {
	struct wnode *wn;
	size_t nwn;
	struct proc *procs;
	size_t nprocs;
	struct fld_holders *holders;
};

static struct proc *proc_find(struct detector *d, pid_t pid)
{
	for (size_t i = 0; i < d->nprocs; i++)
		if (d->procs[i].pid == pid)
			return &d->procs[i];
	return NULL;
}

static bool is_waiting_tid(struct detector *d, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < d->nwn; i++)
		if (d->wn[i].w->pid == pid && d->wn[i].w->tid == tid)
			return true;
	return false;
}

/*
 * Every thread of @pid is either waiting here or one of fenceline's own.
 * A process we cannot look at counts as not blocked: never a false alarm.
 */
static bool all_threads_wait(struct detector *d, pid_t pid)
{
	char path[64];
	struct dirent *e;
	bool all = true;
	int seen = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (all && (e = readdir(dir))) {
		char comm[32] = "";
		FILE *f;
		pid_t tid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		tid = (pid_t)atoi(e->d_name);
		seen++;
		if (is_waiting_tid(d, pid, tid))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
		f = fopen(path, "re");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		if (strncmp(comm, "fl-", 3) != 0)
			all = false;
	}
	closedir(dir);
	return all && seen > 0;
}

static void thread_comm(pid_t pid, pid_t tid, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static int detector_init(struct detector *d)
{
	size_t i = 0;

	memset(d, 0, sizeof(*d));
	d->wn = calloc(fld_nwaits ? fld_nwaits : 1, sizeof(*d->wn));
	d->procs = calloc(fld_nwaits ? fld_nwaits : 1, sizeof(*d->procs));
	if (!d->wn || !d->procs)
		return -ENOMEM;
	for (struct wait *w = fld_waits; w; w = w->next, i++) {
		struct fl_sync_pt_info pts[MAX_POINTS];
		struct fl_fence_info info;
		struct wnode *n = &d->wn[i];
		int k = fl_fence_get_info(w->f, &info, pts, MAX_POINTS);

		n->w = w;
		n->blocking = -1;
		for (int j = 0; j < k && j < MAX_POINTS; j++)
			if (pts[j].status == 0) {
				n->tls[n->ntls] = pts[j].timeline_id;
				n->values[n->ntls] = pts[j].value;
				memcpy(n->tl_names[n->ntls], pts[j].timeline_name, FL_NAME_MAX);
				n->ntls++;
			}
		n->p = proc_find(d, w->pid);
		if (!n->p) {
			n->p = &d->procs[d->nprocs++];
			n->p->pid = w->pid;
		}
		n->p->nwaits++;
	}
	d->nwn = i;
	for (i = 0; i < d->nprocs; i++)
		d->procs[i].stuck = d->procs[i].blocked = all_threads_wait(d, d->procs[i].pid);
	return 0;
}

static void detector_fini(struct detector *d)
{
	free(d->wn);
	free(d->procs);
	fld_holders_free(d->holders);
}

/* Can timeline @tl never move, given which processes are stuck now? */
static bool timeline_stuck(struct detector *d, uint64_t tl)
{
	pid_t pids[MAX_SIGNALLERS];
	size_t n = fld_holders_of_timeline(d->holders, tl, pids, MAX_SIGNALLERS);

	if (n > MAX_SIGNALLERS)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct proc *p = proc_find(d, pids[i]);

		if (!p || !p->stuck)
			return false;
	}
	return true;
}

static void fixpoint(struct detector *d)
{
	bool changed = true;

	while (changed) {
		changed = false;
		for (size_t i = 0; i < d->nwn; i++) {
			struct wnode *n = &d->wn[i];

			n->stuck = false;
			n->blocking = -1;
			if (!n->p->stuck)
				continue;
			for (unsigned int t = 0; t < n->ntls && !n->stuck; t++)
				if (timeline_stuck(d, n->tls[t])) {
					n->stuck = true;
					n->blocking = (int)t;
				}
		}
		for (size_t i = 0; i < d->nwn; i++)
			if (d->wn[i].p->stuck && !d->wn[i].stuck) {
				d->wn[i].p->stuck = false;
				changed = true;
			}
	}
}

/* The stuck wait of @p (any, if it has several): what p's edge follows. */
static struct wnode *stuck_wait_of(struct detector *d, struct proc *p)
{
	for (size_t i = 0; i < d->nwn; i++)
		if (d->wn[i].p == p && d->wn[i].stuck)
			return &d->wn[i];
	return NULL;
}

static void write_pid_list(FILE *out, const pid_t *pids, size_t n, bool json)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, json ? "%s%d" : "%s%d", i ? (json ? "," : ", ") : "", (int)pids[i]);
}

/* One link of a report: a wait, the timeline it is stuck on, who could signal it. */
static void describe(struct detector *d, struct wnode *n, FILE *text, FILE *json, bool first,
		     uint64_t now)
{
	char comm[32], thread[32], value[64] = "?";
	pid_t pids[MAX_SIGNALLERS];
	size_t np = 0;
	uint64_t tlid = n->blocking >= 0 ? n->tls[n->blocking] : 0;
	const char *tlname = n->blocking >= 0 ? n->tl_names[n->blocking] : "";
	uint64_t point = n->blocking >= 0 ? n->values[n->blocking] : 0;

	fld_comm_of(n->w->pid, comm, sizeof(comm));
	thread_comm(n->w->pid, n->w->tid, thread, sizeof(thread));
	if (n->blocking >= 0) {
		np = fld_holders_of_timeline(d->holders, tlid, pids, MAX_SIGNALLERS);
		if (np > MAX_SIGNALLERS)
			np = MAX_SIGNALLERS;
	}
	/*
	 * From the registry, never caught up with the owner's counter here:
	 * that would complete fences, and end and free the very waits being
	 * described (run_detector() caught up before it looked).
	 */
	fld_timeline_value_str(tlid, value, sizeof(value));
	fprintf(text,
		"  pid %d (%s) thread %d (%s) waits %" PRIu64 " ms on fence #%" PRIu64
		" '%s':\n    its point %" PRIu64 " on timeline #%" PRIu64 " '%s' (at %s) ",
		(int)n->w->pid, comm, (int)n->w->tid, thread, (now - n->w->begin_ns) / 1000000,
		n->w->fence_id, fl_fence_get_name(n->w->f), point, tlid, tlname, value);
	if (np) {
		fputs("can only be signalled by pid ", text);
		write_pid_list(text, pids, np, false);
		fputc('\n', text);
	} else {
		fputs("has no process left that holds its timeline\n", text);
	}
	fprintf(json, "%s{\"pid\":%d,\"comm\":", first ? "" : ",", (int)n->w->pid);
	fl__json_str(json, comm);
	fprintf(json, ",\"tid\":%d,\"thread\":", (int)n->w->tid);
	fl__json_str(json, thread);
	fprintf(json, ",\"waited_ms\":%" PRIu64 ",\"fence\":{\"id\":%" PRIu64 ",\"name\":",
		(now - n->w->begin_ns) / 1000000, n->w->fence_id);
	fl__json_str(json, fl_fence_get_name(n->w->f));
	fprintf(json, "},\"timeline\":{\"id\":%" PRIu64 ",\"name\":", tlid);
	fl__json_str(json, tlname);
	fputs(",\"value\":", json);
	fl__json_str(json, value);
	fprintf(json, ",\"point\":%" PRIu64 "},\"signallers\":[", point);
	write_pid_list(json, pids, np, true);
	fputs("]}", json);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static void keep_history(const struct finding *f)
{
	struct finding *h;

	if (nhistory == HISTORY) {
		free(history[0].text);
		free(history[0].json);
		memmove(history, history + 1, (HISTORY - 1) * sizeof(*history));
		nhistory--;
	}
	h = &history[nhistory++];
	h->detected_ns = f->detected_ns;
	h->cycle = f->cycle;
	h->key = f->key;
	h->text = strdup(f->text);
	h->json = strdup(f->json);
}

static bool seen_before(uint64_t key)
{
	for (size_t i = 0; i < ncurrent; i++)
		if (current[i].key == key)
			return true;
	return false;
}

/* Tell the wait that closed a cycle, if it asked to hear it. */
static bool refuse(struct wait *w)
{
	struct fl_msg_wait_notify n = { w->token, -EDEADLK, 0 };
	bool told;

	if (w->notify_fd < 0 || w->refused)
		return false;
	/* Never blocks (notify_take()): a full pipe or socket just misses the notice. */
	if (w->notify_sock)
		told = send(w->notify_fd, &n, sizeof(n), MSG_DONTWAIT | MSG_NOSIGNAL) ==
		       (ssize_t)sizeof(n);
	else
		told = write(w->notify_fd, &n, sizeof(n)) == (ssize_t)sizeof(n);
	close(w->notify_fd);
	w->notify_fd = -1;
	fld_notify_closed(w->client);
	w->refused = told;
	return told;
}

/*
 * Follow the edges from @start (each stuck process to a signaller of the
 * timeline its wait is stuck on) until a process repeats: the loop from
 * that repeat is a cycle. Returns its length (0: the path ended at a
 * timeline nobody holds), the processes' waits in @path.
 */
static size_t find_cycle(struct detector *d, struct proc *start, struct wnode **path, size_t cap)
{
	size_t n = 0;
	struct proc *p = start;

	for (size_t i = 0; i < d->nprocs; i++)
		d->procs[i].on_stack = -1;
	while (p && n < cap) {
		struct wnode *w = stuck_wait_of(d, p);
		pid_t pids[MAX_SIGNALLERS];
		size_t np;

		if (p->on_stack >= 0) {
			size_t from = (size_t)p->on_stack;

			memmove(path, path + from, (n - from) * sizeof(*path));
			return n - from;
		}
		if (!w)
			return 0;
		p->on_stack = (int)n;
		path[n++] = w;
		np = fld_holders_of_timeline(d->holders, w->tls[w->blocking], pids, MAX_SIGNALLERS);
		p = NULL;
		/* Prefer another process: a process stuck on itself is a cycle of one. */
		for (size_t i = 0; i < np && i < MAX_SIGNALLERS; i++) {
			struct proc *q = proc_find(d, pids[i]);

			if (q && q->stuck && (!p || q != path[n - 1]->p))
				p = q;
		}
	}
	return 0;
}

/* A finding's two texts, written side by side. */
struct texts {
	char *tb, *jb;
	size_t tl, jl;
	FILE *text, *json;
};

static bool texts_open(struct texts *x)
{
	*x = (struct texts){ 0 };
	x->text = open_memstream(&x->tb, &x->tl);
	x->json = open_memstream(&x->jb, &x->jl);
	if (x->text && x->json)
		return true;
	if (x->text)
		fclose(x->text);
	if (x->json)
		fclose(x->json);
	free(x->tb);
	free(x->jb);
	return false;
}

static int add_finding(struct finding **list, size_t *n, struct finding *f)
{
	struct finding *l = realloc(*list, (*n + 1) * sizeof(**list));

	if (!l)
		return -ENOMEM;
	*list = l;
	l[(*n)++] = *f;
	return 0;
}

/* Close @x's texts into @f and add it to the list (or drop it, out of memory). */
static void keep(struct finding **found, size_t *nfound, struct finding *f, struct texts *x)
{
	fclose(x->text);
	fclose(x->json);
	f->text = x->tb;
	f->json = x->jb;
	if (add_finding(found, nfound, f) < 0) {
		free(x->tb);
		free(x->jb);
	}
}

static void report(struct detector *d, uint64_t now, struct finding **found, size_t *nfound)
{
	struct wnode **path = calloc(d->nprocs + 1, sizeof(*path));

	if (!path)
		return;
	/* Cycles: from each stuck process, once per distinct set of waits. */
	for (size_t i = 0; i < d->nprocs; i++) {
		struct finding f = { .detected_ns = now, .cycle = true };
		struct wait *closer = NULL, *asker = NULL;
		struct texts x;
		FILE *text, *json;
		uint64_t key = 0;
		bool dup = false;
		size_t len;

		if (!d->procs[i].stuck)
			continue;
		len = find_cycle(d, &d->procs[i], path, d->nprocs + 1);
		if (!len)
			continue;
		for (size_t k = 0; k < len; k++)
			key += mix(path[k]->w->fence_id, (uint64_t)path[k]->w->pid);
		for (size_t k = 0; k < *nfound; k++)
			dup |= (*found)[k].key == key;
		if (dup)
			continue;
		for (size_t k = 0; k < len; k++) {
			struct wait *w = path[k]->w;

			if (!closer || w->begin_ns > closer->begin_ns)
				closer = w;
			if (w->notify_fd >= 0 && (!asker || w->begin_ns > asker->begin_ns))
				asker = w;
		}
		if (!texts_open(&x))
			continue;
		text = x.text;
		json = x.json;
		fprintf(text, "deadlock: a cycle of %zu process%s:\n", len, len == 1 ? "" : "es");
		fprintf(json, "{\"kind\":\"cycle\",\"detected_ns\":%" PRIu64 ",\"cycle\":[", now);
		for (size_t k = 0; k < len; k++)
			describe(d, path[k], text, json, k == 0, now);
		fprintf(json, "],\"closed_by\":{\"pid\":%d,\"tid\":%d,\"fence\":%" PRIu64 "}",
			(int)closer->pid, (int)closer->tid, closer->fence_id);
		fprintf(text, "  closed by pid %d thread %d (the last to start waiting)",
			(int)closer->pid, (int)closer->tid);
		f.key = key;
		/*
		 * Which process begins to wait last is the scheduler's choice, so
		 * the EDEADLK goes to the last wait of the cycle that asked for
		 * one, the closer if it did; and to a wait that asks after the
		 * cycle was first reported, too (refuse() tells each wait once).
		 */
		if (asker && refuse(asker)) {
			if (asker == closer)
				fputs("; it got EDEADLK", text);
			else
				fprintf(text, "; pid %d thread %d, which asked, got EDEADLK",
					(int)asker->pid, (int)asker->tid);
			fputs(",\"refused\":true}", json);
		} else {
			fputs(",\"refused\":false}", json);
		}
		fputc('\n', text);
		keep(found, nfound, &f, &x);
	}
	/* Never-signal: stuck waits on a timeline that no process holds. */
	for (size_t i = 0; i < d->nwn; i++) {
		struct wnode *n = &d->wn[i];
		struct finding f = { .detected_ns = now, .cycle = false };
		struct texts x;
		FILE *text, *json;

		if (!n->stuck ||
		    fld_holders_of_timeline(d->holders, n->tls[n->blocking], NULL, 0) ||
		    !texts_open(&x))
			continue;
		text = x.text;
		json = x.json;
		fputs("will never signal: no process holds the timeline any more (its fd is only "
		      "in flight, or in processes this daemon cannot see):\n",
		      text);
		fprintf(json, "{\"kind\":\"never-signal\",\"detected_ns\":%" PRIu64 ",\"waits\":[",
			now);
		describe(d, n, text, json, true, now);
		fputs("]}", json);
		f.key = mix(n->w->fence_id, n->tls[n->blocking]) ^ 1;
		keep(found, nfound, &f, &x);
	}
	free(path);
}

static void replace_current(struct finding *found, size_t nfound)
{
	for (size_t i = 0; i < nfound; i++)
		if (!seen_before(found[i].key)) {
			pid_t pids[1] = { 0 };

			fld_log("%s", found[i].text);
			FL_PROBE2(deadlock, found[i].cycle, found[i].text);
			keep_history(&found[i]);
			if (fld_tracing)
				fld_trace_deadlock(found[i].text, pids, 0);
		}
	for (size_t i = 0; i < ncurrent; i++) {
		free(current[i].text);
		free(current[i].json);
	}
	free(current);
	current = found;
	ncurrent = nfound;
}

/*
 * With @scan NULL and !@walk_now, a detector that needs to know who holds
 * which timeline (some process is blocked) stops there and returns
 * -EAGAIN: the caller gets a walk of /proc done a slice at a time and
 * comes back with it. With @walk_now it walks in one go (out of memory
 * for a sliced walk).
 */
static int run_detector(uint64_t now, const struct fld_scan *scan, bool walk_now)
{
	struct finding *found = NULL;
	size_t nfound = 0;
	struct detector d;
	bool any = false;
	int r;

	/*
	 * Owners complete their own fences and tell us later: catch up first,
	 * so that a wait whose fence the owner has signalled ends now rather
	 * than be reported as a deadlock (a "cycle of 1" of an owner waiting
	 * on its own timeline). Nothing below completes a fence, so the waits
	 * the detector holds pointers to live until it is done.
	 */
	fld_shared_sync_all();
	if (!fld_waits) {
		replace_current(NULL, 0);
		return 0;
	}
	r = detector_init(&d);

	if (r == 0) {
		for (size_t i = 0; i < d.nprocs; i++)
			any |= d.procs[i].blocked;
		if (any && !scan && !walk_now) {
			detector_fini(&d);
			return -EAGAIN;
		}
		if (any) {
			d.holders = scan ? fld_holders_from_scan(scan) : fld_holders_find();
			if (!d.holders)
				r = -ENOMEM;
		}
	}
	if (r == 0 && any) {
		fixpoint(&d);
		report(&d, now, &found, &nfound);
	}
	detector_fini(&d);
	if (r == 0)
		replace_current(found, nfound);
	return r;
}

int fld_waits_check(bool *ret_walk)
{
	uint64_t now = fl__now_ns(), oldest = UINT64_MAX, due;

	*ret_walk = false;
	if (!fld_waits) {
		if (ncurrent)
			replace_current(NULL, 0);
		return -1;
	}
	for (struct wait *w = fld_waits; w; w = w->next)
		if (w->begin_ns < oldest)
			oldest = w->begin_ns;
	due = FL_MAX(oldest + CHECK_AGE_NS, last_check_ns + CHECK_EVERY_NS);
	if (now < due)
		return (int)((due - now + 999999) / 1000000);
	last_check_ns = now;
	*ret_walk = run_detector(now, NULL, false) == -EAGAIN;
	return (int)(CHECK_EVERY_NS / 1000000);
}

void fld_waits_walked(const struct fld_scan *scan)
{
	if (fld_waits)
		run_detector(fl__now_ns(), scan, true);
}

void fld_waits_write(FILE *out, bool json)
{
	uint64_t now = fl__now_ns();
	bool first = true;

	if (json)
		fputc('[', out);
	else
		fputs("\nwaiters:\n--------------\n", out);
	for (struct wait *w = fld_waits; w; w = w->next) {
		char comm[32], thread[32];

		fld_comm_of(w->pid, comm, sizeof(comm));
		thread_comm(w->pid, w->tid, thread, sizeof(thread));
		if (json) {
			fprintf(out, "%s{\"pid\":%d,\"comm\":", first ? "" : ",", (int)w->pid);
			fl__json_str(out, comm);
			fprintf(out, ",\"tid\":%d,\"thread\":", (int)w->tid);
			fl__json_str(out, thread);
			fprintf(out, ",\"fence\":{\"id\":%" PRIu64 ",\"name\":", w->fence_id);
			fl__json_str(out, fl_fence_get_name(w->f));
			fprintf(out, "},\"waited_ms\":%" PRIu64 ",\"timeout_ms\":%d}",
				(now - w->begin_ns) / 1000000, w->timeout_ms);
		} else {
			fprintf(out,
				"pid %d (%s) thread %d (%s): fence #%" PRIu64
				" '%s', waiting %" PRIu64 " ms",
				(int)w->pid, comm, (int)w->tid, thread, w->fence_id,
				fl_fence_get_name(w->f), (now - w->begin_ns) / 1000000);
			if (w->timeout_ms >= 0)
				fprintf(out, " (timeout %d ms)", w->timeout_ms);
			fputc('\n', out);
		}
		first = false;
	}
	if (json)
		fputc(']', out);
}

int fld_deadlocks_write(FILE *out, bool json, const struct fld_scan *scan)
{
	uint64_t now = fl__now_ns();

	if (fld_waits)
		run_detector(now, scan, true);
	else
		replace_current(NULL, 0);
	if (json) {
		fprintf(out, "{\"version\":1,\"checked_ns\":%" PRIu64 ",\"waits\":", now);
		fld_waits_write(out, true);
		fputs(",\"deadlocks\":[", out);
		for (size_t i = 0, k = 0; i < ncurrent; i++)
			if (current[i].cycle)
				fprintf(out, "%s%s", k++ ? "," : "", current[i].json);
		fputs("],\"never_signal\":[", out);
		for (size_t i = 0, k = 0; i < ncurrent; i++)
			if (!current[i].cycle)
				fprintf(out, "%s%s", k++ ? "," : "", current[i].json);
		fputs("],\"history\":[", out);
		for (unsigned int i = 0; i < nhistory; i++)
			fprintf(out, "%s%s", i ? "," : "", history[i].json);
		fputs("]}\n", out);
		return 0;
	}
	fld_waits_write(out, false);
	fputs("\nfindings:\n--------------\n", out);
	if (!ncurrent)
		fputs("none: no deadlock, every wait can still end\n", out);
	for (size_t i = 0; i < ncurrent; i++)
		fputs(current[i].text, out);
	if (nhistory) {
		fputs("\nfound before (most recent last):\n--------------\n", out);
		for (unsigned int i = 0; i < nhistory; i++)
			fprintf(out, "[%.3f s ago] %s",
				(double)(now - history[i].detected_ns) / 1e9, history[i].text);
	}
	return 0;
}

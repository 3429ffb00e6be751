/* SPDX-License-Identifier: MIT */
/*
 * The observe service: DUMP (parked while /proc is walked a slice at a
 * time), the waits clients report and TRACE sessions.
 */
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"
#include "host.h"
#include "util.h"

static struct client *tracer; /* the client whose trace session runs */
static struct client *stop_parker(void);
static void stop_unpark(bool answer);

/* The observe service's client_gone: its waits are over, its trace goes with it. */
static void observe_client_gone(struct fl_server_conn *conn, void *data)
{
	struct client *c = client_of(conn);

	fld_waits_client_gone(c);
	/* A STOP it parked goes unanswered; one waiting for its queue waits no more. */
	if (stop_parker() == c)
		stop_unpark(false);
	else
		fld_trace_stop_read(c);
	if (tracer == c) {
		int fd;

		tracer = NULL;
		if (fld_trace_stop(&fd) == 0)
			close(fd);
		fld_publish_all();
	}
}

/*
 * DUMP (fencectl): every object as it is now, so first catch up with every
 * owner's counter (our view of an owned timeline lags until asked).
 */
/* Write the dump @hdr asked for (@flags, @pid), holders from @scan (NULL: walk now), and answer. */
static bool view_answer(struct client *c, const struct fl_msg_hdr *hdr, uint32_t flags,
			const struct fld_scan *scan);

static bool dump_answer(struct client *c, const struct fl_msg_hdr *hdr, uint32_t flags,
			uint32_t pid, const struct fld_scan *scan)
{
	unsigned int nclients = fl__server_conn_count(fld_server);
	struct fld_client_info *infos = calloc(nclients ? nclients : 1, sizeof(*infos));
	size_t n = 0;
	int r, fd = -1;

	if (flags & FL_DUMP_DEADLOCKS) {
		free(infos);
		return view_answer(c, hdr, flags, scan);
	}
	if (!infos)
		return fld_reply_status(c, hdr, -ENOMEM);
	fld_shared_sync_all();
	for (struct fl_server_conn *k = fl__server_conn_next(fld_server, NULL); k && n < nclients;
	     k = fl__server_conn_next(fld_server, k))
		infos[n++] = (struct fld_client_info){
			k->pid, k->uid, (unsigned int)atomic_load(&client_of(k)->timelines),
			(unsigned int)atomic_load(&client_of(k)->fences)
		};
	r = fld_dump_write(flags & FL_DUMP_JSON, flags & FL_DUMP_FDS, (pid_t)pid, infos, n,
			   fld_owner_of, NULL, scan, &fd);
	free(infos);
	return fld_reply_fd(c, hdr, r, fd);
}

/*
 * DUMPs waiting for a walk of /proc that started after they arrived, in
 * arrival order. The walk is done a few processes at a time between other
 * clients' turns (dump_step()), and one walk answers every DUMP parked
 * before it started: a flood of DUMPs costs one walk at a time, and never
 * holds up the loop for a whole walk. A client with a DUMP parked is not
 * read until it is answered, so its replies keep their order. Each holds
 * a reference on its client.
 */
struct parked_dump {
	struct client *c;
	struct fl_msg_hdr hdr;
	uint32_t flags, pid;
	uint64_t walk; /* the walk it needs: the first started after it arrived */
	struct parked_dump *next;
};
static struct parked_dump *parked, **parked_tail = &parked;
static struct fld_scan *walk; /* the walk in progress, or the last one */
static uint64_t walks; /* walks started; the one in @walk is number @walks */
static bool walk_done;
/*
 * Walks take at most half of the loop's time: the next one starts no
 * sooner than the last one's busy time after it ended, so a flood of
 * DUMPs leaves the daemon time for everyone else. A parked client stays
 * in the epoll set, so while it has requests queued the loop does not
 * sleep between walks, it polls: measured, that answered a bystander
 * under a flood faster (p99 0.54 against 0.78-2.3 ms here) than taking
 * parked clients out of the set and sleeping.
 */
static uint64_t walk_busy_ns, next_walk_ns;
/*
 * The deadlock detector's periodic check needs who holds which timeline
 * when a process is blocked: it gets a walk like a parked DUMP (the walk
 * number it waits for; 0: none), and one walk serves both.
 */
static uint64_t detector_walk;

#define WALK_STEP_NS 100000ull /* a walk's share of each pass of the loop */
#define ANSWER_NS    200000ull /* and the parked DUMPs' answers' */

static void unpark(struct parked_dump *d, const struct fld_scan *scan)
{
	struct client *c = d->c;
	uint64_t start = fl__now_ns();

	if (c->conn.fd >= 0)
		dump_answer(c, &d->hdr, d->flags, d->pid, scan);
	c->parked--;
	fld_client_debt(c, start);
	c->debt_ns += fl__now_ns() - start;
	fld_client_unref(c);
	free(d);
}

/*
 * Some of the parked DUMPs' work. Return: ms until it wants to run again
 * (0: at once), -1 when nothing is parked.
 */
static int dump_step(void)
{
	uint64_t start = fl__now_ns(), need;

	if (!parked && !detector_walk)
		return -1;
	if (walk && !walk_done) {
		walk_done = fld_scan_step(walk, WALK_STEP_NS);
		walk_busy_ns += fl__now_ns() - start;
		if (walk_done)
			next_walk_ns = fl__now_ns() + walk_busy_ns;
		return 0;
	}
	need = parked ? parked->walk : UINT64_MAX;
	if (detector_walk)
		need = FL_MIN(need, detector_walk);
	if (!walk || need > walks) {
		if (start < next_walk_ns)
			return (int)((next_walk_ns - start + 999999) / 1000000);
		fld_scan_free(walk);
		walk = fld_scan_start();
		walks++;
		walk_done = false;
		walk_busy_ns = 0;
		if (!walk) {
			/* Out of memory for a walk: each one walks on its own. */
			if (detector_walk) {
				detector_walk = 0;
				fld_waits_walked(NULL);
			}
			while (parked) {
				struct parked_dump *d = parked;

				parked = d->next;
				unpark(d, NULL);
			}
			parked_tail = &parked;
			return -1;
		}
		return 0;
	}
	if (detector_walk && detector_walk <= walks) {
		detector_walk = 0;
		fld_waits_walked(walk);
	}
	while (parked && parked->walk <= walks) {
		struct parked_dump *d = parked;

		parked = d->next;
		if (!parked)
			parked_tail = &parked;
		unpark(d, walk);
		if (fl__now_ns() - start >= ANSWER_NS)
			break;
	}
	return parked ? 0 : -1;
}

static bool op_dump(struct client *c, const struct fl_proto_request *q)
{
	struct parked_dump *d;
	int r, fd = -1;

	if (q->u.dump.flags & FL_DUMP_HEAPS) {
		r = fl__server_dump(fld_server, "heap", q->u.dump.flags, &fd);
		return fld_reply_fd(c, &q->hdr, r, fd);
	}
	d = malloc(sizeof(*d));
	if (!d)
		return dump_answer(c, &q->hdr, q->u.dump.flags, q->u.dump.pid, NULL);
	*d = (struct parked_dump){ c, q->hdr, q->u.dump.flags, q->u.dump.pid, walks + 1, NULL };
	atomic_fetch_add(&c->refs, 1);
	c->parked++;
	*parked_tail = d;
	parked_tail = &d->next;
	return true;
}

/*
 * DUMP's other views: deadlocks (parked like the others: the detector
 * wants the holders from @scan) and stats, written here rather than by
 * dump.c.
 */
static bool view_answer(struct client *c, const struct fl_msg_hdr *hdr, uint32_t flags,
			const struct fld_scan *scan)
{
	bool json = flags & FL_DUMP_JSON;
	char *text = NULL;
	size_t len = 0;
	int r, fd = -1;
	FILE *out;

	/* Owned timelines' values, as the report shows them, are caught up first. */
	fld_shared_sync_all();
	out = open_memstream(&text, &len);
	if (!out)
		return fld_reply_status(c, hdr, -ENOMEM);
	if (flags & FL_DUMP_DEADLOCKS)
		r = fld_deadlocks_write(out, json, scan);
	else
		r = fld_stats_write(out, json, flags & FL_DUMP_RESET);
	if (fclose(out) != 0 || !text)
		r = -ENOMEM;
	if (r == 0)
		r = fld_memfd_sealed(text, len, &fd);
	free(text);
	return fld_reply_fd(c, hdr, r, fd);
}

static bool op_dump_view(struct client *c, const struct fl_proto_request *q)
{
	return view_answer(c, &q->hdr, q->u.dump.flags, NULL);
}

/*
 * WAIT_BEGIN: one-way; a fence we do not know (in-process, gone) is not
 * our business. A pooled fd its maker passed on before we read its
 * FENCE_NEW is one: fld_fence_of() reads that far.
 */
static bool op_wait_begin(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct fl_fence *f;
	int notify = -1;

	if (fld_fence_of(c, fds[0], &f) < 0)
		return true;
	/* A notify fd is a daemon fd held for it: within its quotas, or the wait has none. */
	if ((q->hdr.flags & FL_MSG_F_NOTIFY) && fld_fds_charge(c, 1, "a notify fd") == 0) {
		notify = fds[1];
		fds[1] = -1;
		/* Until waits.c closes it (fld_notify_closed()). */
		atomic_fetch_add(&c->refs, 1);
	}
	if (fld_wait_begin(c, c->conn.pid, &q->u.wait_begin, f, notify) == -EMFILE)
		fld_log("client pid %d: more than its share of waits; not tracking more",
			(int)c->conn.pid);
	fl_fence_unref(f);
	return true;
}

static bool op_wait_end(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	fld_wait_end(c, q->u.wait_end.token, q->u.wait_end.result);
	return true;
}

/*
 * TRACE_EVENT: a service's event for the session (one-way). Without a
 * session it is dropped: its sender read the status page a moment before
 * the session ended.
 */
static bool op_trace_event(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct fl_fence *f = NULL;
	uint64_t id = 0;

	if (!fld_tracing)
		return true;
	/* Only an ACQUIRE names its fence; another type's fd is closed unread. */
	if ((q->hdr.flags & FL_MSG_F_FENCE) && q->u.trace_event.type == FL_PROTO_TRACE_ACQUIRE) {
		int r = fld_fence_of(c, fds[0], &f);

		if (r == -EINPROGRESS)
			return true;
		if (r == 0) {
			id = fl__fence_id(f);
			fl_fence_unref(f);
		}
	}
	fld_trace_display(c->conn.pid, &q->u.trace_event, id);
	return true;
}

/*
 * Before a trace stops, what the other clients had sent by then: an event
 * a service reported before it signalled a fence (a one-way message on its
 * own connection) must be in the trace of a tracer that saw that fence
 * signalled and then stopped. Whatever happened before the STOP was sent is
 * in a socket's queue by now. Those queues are read for TRACE_CATCH_UP_NS
 * of our time at most; a client with requests still queued after that is
 * waited for instead, read in its own turns: the STOP is parked (its
 * tracer read no further) until each such client's queue was found empty
 * since, TRACE_CATCH_UP_MAX more of its requests were read (one that keeps
 * sending cannot keep the STOP waiting), or it is gone. So a client that
 * filled its queue with costly requests holds up the STOP, not every
 * client (it held them all up for up to TRACE_CATCH_UP_MAX of its
 * requests). The time goes on their debt.
 */
#define TRACE_CATCH_UP_MAX 256
#define TRACE_CATCH_UP_NS  1000000ull

/* The parked STOP: its tracer (a reference) and the clients it waits for (references). */
static struct {
	struct client *c;
	struct fl_msg_hdr hdr;
	struct stop_wait {
		struct client *k;
		struct fld_queue_mark mark;
	} * w;
	unsigned int n;
} stop;

static struct client *stop_parker(void)
{
	return stop.c;
}

static void stop_wait_drop(unsigned int i)
{
	stop.w[i].k->queue_waits--;
	fld_client_unref(stop.w[i].k);
	stop.w[i] = stop.w[--stop.n];
}

/* Read the other clients' queues; those not read through are put in stop.w. */
static void trace_catch_up(struct client *tracer_c)
{
	unsigned int n = 0, cap = fl__server_conn_count(fld_server);
	struct client **all = calloc(cap ? cap : 1, sizeof(*all));
	uint64_t start = fl__now_ns();

	stop.n = 0;
	stop.w = all ? calloc(cap ? cap : 1, sizeof(*stop.w)) : NULL;
	if (!all)
		return; /* no memory: the trace has what was read already */
	/* Refs first: reading one may disconnect it (or another) and change the list. */
	for (struct fl_server_conn *k = fl__server_conn_next(fld_server, NULL); k && n < cap;
	     k = fl__server_conn_next(fld_server, k)) {
		all[n] = client_of(k);
		atomic_fetch_add(&all[n]->refs, 1);
		n++;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct client *k = all[i];
		uint64_t spent = fl__now_ns() - start;
		struct fld_queue_mark m = fld_queue_mark(k);

		/* Without memory to wait, everyone's TRACE_CATCH_UP_MAX are read at once. */
		if (k != tracer_c && k->conn.fd >= 0 && !k->reading && !k->parked && !k->deferred &&
		    (!stop.w || spent < TRACE_CATCH_UP_NS))
			fld_client_readable(k, TRACE_CATCH_UP_MAX,
					    stop.w ? TRACE_CATCH_UP_NS - spent : 0);
		if (stop.w && k != tracer_c && !fld_client_queue_empty(k) &&
		    !fld_queue_passed(k, m, TRACE_CATCH_UP_MAX)) {
			k->queue_waits++;
			stop.w[stop.n++] = (struct stop_wait){ k, m };
			continue; /* its reference goes with the wait */
		}
		fld_client_unref(k);
	}
	free(all);
}

/* The STOP's answer: the trace ends, with what was waited for. */
static bool trace_stop_answer(struct client *c, const struct fl_msg_hdr *hdr)
{
	int r, fd = -1;

	/* Waits still going on are part of the picture. */
	fld_waits_trace_pending();
	tracer = NULL;
	r = fld_trace_stop(&fd);
	fld_publish_all();
	return fld_reply_fd(c, hdr, r, fd);
}

/* The parked STOP goes: answered (@answer) or not, its waits let go. */
static void stop_unpark(bool answer)
{
	struct client *c = stop.c;
	uint64_t start = fl__now_ns();

	while (stop.n)
		stop_wait_drop(stop.n - 1);
	free(stop.w);
	stop.w = NULL;
	stop.c = NULL;
	c->parked--;
	if (answer && c->conn.fd >= 0)
		trace_stop_answer(c, &stop.hdr);
	fld_client_debt(c, start);
	c->debt_ns += fl__now_ns() - start;
	fld_client_unref(c);
}

void fld_trace_stop_read(struct client *k)
{
	for (unsigned int i = 0; stop.c && i < stop.n;) {
		const struct stop_wait *w = &stop.w[i];

		if (w->k == k && fld_queue_passed(k, w->mark, TRACE_CATCH_UP_MAX))
			stop_wait_drop(i);
		else
			i++;
	}
}

/* TRACE: one session at a time, owned by the client that started it. */
static bool op_trace(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	int r;

	if (q->u.trace.cmd == FL_TRACE_START) {
		r = fld_trace_start(c->conn.pid, q->u.trace.max_events, fld_cfg.trace_max_events);
		if (r == 0) {
			tracer = c;
			fld_publish_all();
		}
		return fld_reply_status(c, &q->hdr, r);
	}
	if (tracer != c)
		return fld_reply_status(c, &q->hdr, fld_tracing ? -EPERM : -ENOENT);
	trace_catch_up(c);
	if (!stop.n) {
		free(stop.w);
		stop.w = NULL;
		return trace_stop_answer(c, &q->hdr);
	}
	/* Answered by observe_prepare() once nothing is waited for (fld_trace_stop_read()). */
	stop.c = c;
	stop.hdr = q->hdr;
	c->parked++;
	atomic_fetch_add(&c->refs, 1);
	return true;
}

/* The daemon is exiting: drop the parked DUMPs and the walk, answer the deferred PINGs. */
void fld_observe_stop(void)
{
	while (parked) {
		struct parked_dump *d = parked;

		parked = d->next;
		d->c->parked--;
		fld_client_unref(d->c);
		free(d);
	}
	parked_tail = &parked;
	if (stop_parker())
		stop_unpark(false);
	fld_scan_free(walk);
	walk = NULL;
	fld_answer_deferred_pings();
}

/* DUMP: the stats view is written at once, the others wait for a walk of /proc. */
static bool op_dump_request(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	if (q->u.dump.flags & FL_DUMP_STATS)
		return op_dump_view(client_of(conn), q);
	return op_dump(client_of(conn), q);
}

#define OBSERVE_FIRST FL_PROTO_OBSERVE_FIRST
static const struct fl_server_op observe_ops[] = {
	[FL_OP_DUMP - OBSERVE_FIRST] = { op_dump_request },
	/* A notify fd comes with FL_MSG_F_NOTIFY. */
	[FL_OP_WAIT_BEGIN - OBSERVE_FIRST] = { op_wait_begin, FL_MSG_F_NOTIFY, 1, FL_MSG_F_NOTIFY },
	[FL_OP_WAIT_END - OBSERVE_FIRST] = { op_wait_end },
	[FL_OP_TRACE - OBSERVE_FIRST] = { op_trace },
	/* The fence of an ACQUIRE comes with FL_MSG_F_FENCE. */
	[FL_OP_TRACE_EVENT - OBSERVE_FIRST] = { op_trace_event, FL_MSG_F_FENCE, 0, FL_MSG_F_FENCE },
};

/* The deadlock detector and the parked DUMPs' walk, between the clients' turns. */
static int observe_prepare(void *data)
{
	bool want_walk;
	int check = fld_waits_check(&want_walk), step;

	if (want_walk && !detector_walk)
		detector_walk = walks + 1;
	step = dump_step();
	/* A parked STOP whose waits are over is answered before the loop waits again. */
	if (stop_parker() && !stop.n)
		stop_unpark(true);
	return check < 0 || (step >= 0 && step < check) ? step : check;
}

const struct fl_server_service_ops fld_observe_service = {
	.name = "observe",
	.first_op = OBSERVE_FIRST,
	.last_op = FL_OP_TRACE_EVENT,
	.ops = observe_ops,
	.client_gone = observe_client_gone,
	.prepare = observe_prepare,
	.id = FL_PROTO_SVC_OBSERVE,
	.version = FL_PROTO_OBSERVE_VERSION,
};

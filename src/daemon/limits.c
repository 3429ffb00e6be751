/* SPDX-License-Identifier: MIT */
/*
 * fencelined's limits: the log's rate limit, and the quotas of the peers
 * (one process, one uid) on the daemon fds and objects held for them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"
#include "host.h"
#include "util.h"

/* Fences and timelines gone since the last malloc_trim() (see trim_if_due()). */
atomic_uint fld_released;

/*
 * The log's rate limit: a token bucket of FLD_LOG_BURST lines, refilled at
 * FLD_LOG_PER_SEC a second, for the whole daemon (hostile clients come in
 * any number of connections and processes, so no per-peer bucket could
 * bound the total). Lines beyond it are counted, and the count is logged
 * as soon as a token is back (fld_log_flush()). Tokens are in thousandths.
 */
static struct {
	uint64_t tokens, last_ns;
	unsigned long suppressed;
	bool started;
} logq;

static bool log_take(void)
{
	uint64_t now = fl__now_ns();

	if (!logq.started) {
		logq.started = true;
		logq.tokens = FLD_LOG_BURST * 1000ull;
		logq.last_ns = now;
	}
	logq.tokens += (now - logq.last_ns) * FLD_LOG_PER_SEC / 1000000ull;
	logq.last_ns = now;
	if (logq.tokens > FLD_LOG_BURST * 1000ull)
		logq.tokens = FLD_LOG_BURST * 1000ull;
	if (logq.tokens < 1000)
		return false;
	logq.tokens -= 1000;
	return true;
}

static void log_line(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void log_line(const char *fmt, va_list ap)
{
	fprintf(stderr, "fencelined[%d]: ", (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void log_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

/* The suppressed lines' count, written with the token of the line that follows it. */
static void log_suppressed(void)
{
	if (!logq.suppressed)
		return;
	log_printf("%lu messages suppressed (log rate limit: %u lines a second)", logq.suppressed,
		   FLD_LOG_PER_SEC);
	logq.suppressed = 0;
}

void fld_log(const char *fmt, ...)
{
	va_list ap;

	if (!log_take()) {
		logq.suppressed++;
		return;
	}
	log_suppressed();
	va_start(ap, fmt);
	log_line(fmt, ap);
	va_end(ap);
}

int fld_log_flush(void)
{
	if (!logq.suppressed)
		return -1;
	if (log_take()) {
		log_suppressed();
		return -1;
	}
	/* Until the bucket holds a whole token again. */
	return (int)((1000 - logq.tokens) * 1000 / FLD_LOG_PER_SEC / 1000) + 1;
}

static struct peer *peers;
/* Daemon fds one process, and one uid other than ours, may have us hold. */
unsigned int fld_max_fds_process, fld_max_fds_uid;

/* The peer (@is_uid, @id), made on first use, with a reference; NULL: out of memory. */
struct peer *fld_peer_get(bool is_uid, unsigned int id)
{
	struct peer *p;

	for (p = peers; p; p = p->next)
		if (p->is_uid == is_uid && p->id == id) {
			p->refs++;
			return p;
		}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->is_uid = is_uid;
	p->id = id;
	p->refs = 1;
	p->next = peers;
	peers = p;
	return p;
}

static void peer_put(struct peer *p)
{
	if (!p || --p->refs)
		return;
	for (struct peer **pp = &peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p);
}

void fld_client_unref(struct client *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1) {
		peer_put(c->proc);
		peer_put(c->user);
		free(c);
	}
}

static bool is_pow2(unsigned long n)
{
	return n && !(n & (n - 1));
}

uid_t fld_euid(void)
{
	static uid_t uid = (uid_t)-1;
	uid_t u = __atomic_load_n(&uid, __ATOMIC_RELAXED);

	if (u == (uid_t)-1) {
		u = geteuid();
		__atomic_store_n(&uid, u, __ATOMIC_RELAXED);
	}
	return u;
}

/* Whether @c's uid has a quota of its own: every uid but the daemon's. */
static bool uid_limited(const struct client *c)
{
	return c->conn.uid != fld_euid();
}

unsigned int fld_room_of(const struct peer *p, unsigned int max)
{
	unsigned int used = atomic_load(&p->fds);

	return used < max ? max - used : 0;
}

/* How many more daemon fds @c may have us hold, by its process's and its uid's quotas. */
unsigned int fld_fds_room_now(const struct client *c)
{
	unsigned int room = fld_room_of(c->proc, fld_max_fds_process);

	if (uid_limited(c))
		room = FL_MIN(room, fld_room_of(c->user, fld_max_fds_uid));
	return room;
}

/*
 * A completed pipe fence holds no daemon fd, but counts as one until a
 * sweep finds every copy of it closed: sweep before refusing.
 */
unsigned int fld_fds_room_for(const struct client *c, unsigned int need)
{
	unsigned int room = fld_fds_room_now(c);

	if (room < need && fl__watcher_sweep())
		room = fld_fds_room_now(c);
	return room;
}

unsigned int fld_fds_room(const struct client *c)
{
	return fld_fds_room_for(c, 1);
}

void fld_fds_add(struct client *c, unsigned int n)
{
	atomic_fetch_add(&c->proc->fds, n);
	atomic_fetch_add(&c->user->fds, n);
}

void fld_fds_sub(struct client *c, unsigned int n)
{
	atomic_fetch_sub(&c->proc->fds, n);
	atomic_fetch_sub(&c->user->fds, n);
}

/* The quotas, for fld_log_quota(): what they count, and the option that sets each. */
static const struct {
	const char *option, *held;
} quotas[] = {
	[Q_FDS_PROCESS] = { "--max-fds-per-process", "of the daemon's fds" },
	[Q_FDS_UID] = { "--max-fds-per-uid", "of the daemon's fds" },
	[Q_FENCES] = { "--max-fences", "live fences" },
	[Q_TIMELINES] = { "--max-timelines", "live timelines" },
};

/*
 * Say who was refused @what, by which quota (@limit, @held now), for
 * whoever reads the log: a peer that keeps trying gets a line at its 1st,
 * 2nd, 4th, 8th... refusal.
 */
void fld_log_quota(struct client *c, const char *what, enum quota q, unsigned int limit,
		   unsigned int held)
{
	struct peer *p = q == Q_FDS_UID ? c->user : c->proc;
	char comm[32];

	if (!is_pow2(++p->refused))
		return;
	fld_comm_of(c->conn.pid, comm, sizeof(comm));
	if (q == Q_FDS_UID)
		fld_log("uid %u: its processes hold %u %s, the most one other uid may (%s %u); "
			"refusing %s to pid %d (%s) with EMFILE (%lu refusals)",
			(unsigned int)c->conn.uid, held, quotas[q].held, quotas[q].option, limit,
			what, (int)c->conn.pid, comm, p->refused);
	else
		fld_log("pid %d (%s, uid %u): holds %u %s, the most one process may (%s %u); "
			"refusing %s with EMFILE (%lu refusals)",
			(int)c->conn.pid, comm, (unsigned int)c->conn.uid, held, quotas[q].held,
			quotas[q].option, limit, what, p->refused);
}

/* Count @n more daemon fds for @c, within its quotas: 0, or -EMFILE (logged). */
int fld_fds_charge(struct client *c, unsigned int n, const char *what)
{
	if (fld_fds_room_for(c, n) < n)
		return fld_fds_refused(c, what);
	fld_fds_add(c, n);
	return 0;
}

/* One more live fence (@timeline false) or timeline for @c, within --max-*: 0 or -EMFILE. */
int fld_objects_charge(struct client *c, bool timeline)
{
	atomic_uint *n = timeline ? &c->proc->timelines : &c->proc->fences;
	unsigned int max = timeline ? fld_cfg.max_timelines : fld_cfg.max_fences;

	/*
	 * Completed pipe fences closed everywhere count until a sweep finds
	 * them gone: sweep before refusing (only at the limit, so a client
	 * that sits there costs a sweep per refused request).
	 */
	if (!timeline && atomic_load(n) >= max)
		(void)fl__watcher_sweep();
	if (atomic_load(n) >= max) {
		fld_log_quota(c, timeline ? "a timeline" : "a fence",
			      timeline ? Q_TIMELINES : Q_FENCES, max, atomic_load(n));
		return -EMFILE;
	}
	atomic_fetch_add(n, 1);
	atomic_fetch_add(timeline ? &c->timelines : &c->fences, 1);
	return 0;
}

void fld_objects_uncharge(struct client *c, bool timeline)
{
	atomic_fetch_sub(timeline ? &c->proc->timelines : &c->proc->fences, 1);
	atomic_fetch_sub(timeline ? &c->timelines : &c->fences, 1);
}

void fld_notify_closed(const void *client)
{
	struct client *c = (struct client *)client;

	fld_fds_sub(c, 1);
	fld_client_unref(c);
}

void fld_release_timeline(void *owner)
{
	struct client *c = owner;

	fld_objects_uncharge(c, true);
	fld_fds_sub(c, 1);
	atomic_fetch_add(&fld_released, 1);
	fld_client_unref(c);
}

void fld_release_fence(void *owner)
{
	struct client *c = owner;

	fld_objects_uncharge(c, false);
	fld_fds_sub(c, 1);
	atomic_fetch_add(&fld_released, 1);
	fld_client_unref(c);
}

bool fld_uid_allowed(uid_t uid)
{
	if (uid == fld_euid() || fld_cfg.allow_all)
		return true;
	for (unsigned int i = 0; i < fld_cfg.n_allow; i++)
		if (fld_cfg.allow[i] == uid)
			return true;
	return false;
}

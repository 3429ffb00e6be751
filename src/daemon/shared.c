/* SPDX-License-Identifier: MIT */
/*
 * The sync service's half of owned timelines: the shared_counter driver
 * (src/drivers/shared_counter) applies what an owner added to its counter;
 * here the service makes those timelines and their pages, tells the owner
 * (sync_at) which values it must let the daemon complete, stamps and traces
 * the owner's steps, and keeps the kick pipe that tells an owner what the
 * daemon completed (docs/architecture.md, "Owned timelines").
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fenceline/sw_sync.h>

#include "daemon.h"
#include "host.h"
#include "shared_counter.h"
#include "util.h"
#include "wrap32.h"

#define MUST_MAX 4096

/*
 * Counters a client may own at once (the library tracks as many). Each one
 * costs the daemon a page of shared memory, so a client with thousands of
 * timelines gets counters for the first ones only; the others work through
 * the daemon.
 */
#define SHARED_PER_CLIENT 64
/* Hash buckets by timeline id (ids count up, so the low bits spread them). */
#define SHARED_BUCKETS 256

static struct shared_tl *shared[SHARED_BUCKETS];
static unsigned int nshared;

/* The live timeline of @s (a reference), or NULL once it is gone. */
static struct fl_timeline *shared_timeline(struct shared_tl *s)
{
	struct fl_timeline *tl;

	if (fl__timeline_from_key(s->dev, s->ino, &tl) < 0)
		return NULL;
	if (fl_timeline_get_id(tl) != s->id) {
		fl_timeline_unref(tl);
		return NULL;
	}
	return tl;
}

static struct shared_tl *shared_find_id(uint64_t id)
{
	for (struct shared_tl *s = shared[id % SHARED_BUCKETS]; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

struct shared_tl *fld_shared_find(struct fl_timeline *tl)
{
	return nshared ? shared_find_id(fl_timeline_get_id(tl)) : NULL;
}

static void must_publish(struct shared_tl *s)
{
	uint64_t at = s->must_lost ? 0 : s->nmust ? s->must[0] : UINT64_MAX;

	/*
	 * While a trace runs, the owner syncs on every step: the trace sees it
	 * when it happens. So it does while points are held for its close.
	 */
	if (fld_tracing || s->holds)
		at = 0;
	__atomic_store_n(&s->page->sync_at, at, __ATOMIC_SEQ_CST);
}

/* Every shared counter's sync_at again: a trace session started or ended. */
void fld_publish_all(void)
{
	for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
		for (struct shared_tl *s = shared[b]; s; s = s->next)
			must_publish(s);
}

/* Pop the points the timeline reached (at @value) off the must heap. */
static void must_pop_reached(struct shared_tl *s, uint64_t value)
{
	while (s->nmust && s->must[0] <= value) {
		uint64_t last = s->must[--s->nmust];
		uint32_t i = 0;

		for (;;) {
			uint32_t c = 2 * i + 1;

			if (c >= s->nmust)
				break;
			if (c + 1 < s->nmust && s->must[c + 1] < s->must[c])
				c++;
			if (last <= s->must[c])
				break;
			s->must[i] = s->must[c];
			i = c;
		}
		if (s->nmust)
			s->must[i] = last;
	}
}

static void must_push(struct shared_tl *s, uint64_t value)
{
	uint32_t i;

	/*
	 * Only the values count, not how many points have them: skip the
	 * common repeat (merges with one fence waiting on this timeline).
	 */
	if (s->must_lost || (s->nmust && s->must[0] == value))
		return;
	if (s->nmust == s->must_cap) {
		uint32_t cap = s->must_cap ? s->must_cap * 2 : 16;
		uint64_t *m = cap <= MUST_MAX ? realloc(s->must, cap * sizeof(*m)) : NULL;

		if (!m) {
			free(s->must);
			s->must = NULL;
			s->nmust = s->must_cap = 0;
			s->must_lost = true;
			return;
		}
		s->must = m;
		s->must_cap = cap;
	}
	for (i = s->nmust++; i > 0 && s->must[(i - 1) / 2] > value; i = (i - 1) / 2)
		s->must[i] = s->must[(i - 1) / 2];
	s->must[i] = value;
}

/*
 * Bring @tl up to its shared counter (its driver applies the difference,
 * modulo 2^64: any value is taken as the owner's, who can only hurt its
 * own timeline), then raise sync_at past the points that completed.
 * Return: 0, or -ENOENT when the timeline is dead.
 */
int fld_shared_sync(struct shared_tl *s, struct fl_timeline *tl)
{
	uint64_t value, before = s->synced;
	int r;

	/*
	 * Owners' ends closed before this catch-up are judged by the counter
	 * as it was (owner_end_closed()): a fence whose owner lost its end
	 * fails, even if this catch-up would reach it.
	 */
	fl__fence_pipe_ends_check();

	s->synced = __atomic_load_n(&s->page->value, __ATOMIC_SEQ_CST);
	if (s->synced != before) {
		/*
		 * The owner stamps the time before each addition: the points
		 * it reached get that time, not ours (we may look much later).
		 * It can only lie about its own timeline; still, keep the
		 * stamp between the last one and now.
		 */
		uint64_t stamp = __atomic_load_n(&s->page->stamp_ns, __ATOMIC_SEQ_CST);
		uint64_t now = fl__now_ns();

		if (stamp > now || stamp < s->stamp)
			stamp = now;
		s->stamp = stamp;
		fl__timeline_signal_stamp(stamp);
		if (fld_tracing)
			fld_trace_signal(s->id, s->is32 ? (uint32_t)before : before,
					 s->is32 ? (uint32_t)s->synced : s->synced,
					 s->owner ? s->owner->conn.pid : 0, stamp, 0);
	}
	r = fl__shared_counter_catch_up(tl);
	fl__timeline_signal_stamp(0);
	/* A 32-bit timeline's value is the counter's low half; its heap holds counter values. */
	if (s->nmust &&
	    (s->is32 ? (value = s->synced, 0) : fl__shared_counter_get_value(tl, &value)) == 0) {
		must_pop_reached(s, value);
		must_publish(s);
	}
	return r;
}

/*
 * A pending point at @value on @tl that only we can complete: make the
 * owner wake us when its counter gets there. sync_at goes down before we
 * read the counter (in shared_sync()), so an addition we do not see yet
 * sees the new sync_at.
 */
static void shared_must(struct shared_tl *s, struct fl_timeline *tl, uint64_t value, bool sync)
{
	if (!s->is32) {
		must_push(s, value);
	} else if (!fl__value_reached(true, s->synced, value)) {
		/*
		 * A 32-bit value is reached when the counter's low 32 bits pass
		 * it, wrap-aware (up to 2^31 ahead is ahead): as the counter
		 * only grows, that is when it reaches this 64-bit value. One
		 * behind or further ahead is passed already.
		 */
		must_push(s, s->synced + (uint32_t)((uint32_t)value - (uint32_t)s->synced));
	}
	must_publish(s);
	if (sync)
		fld_shared_sync(s, tl);
}

void fld_shared_must(struct shared_tl *s, struct fl_timeline *tl, uint64_t value)
{
	shared_must(s, tl, value, true);
}

/*
 * An owner completes its fences before it tells us, so a fence fd can read
 * as signalled while its point here is not yet. So before the daemon looks
 * at a timeline for a request (creating a fence on it, its value, a merge
 * or info of a fence with a point on it), it catches up with the counter.
 */
void fld_shared_sync_tl(struct fl_timeline *tl)
{
	struct shared_tl *s = fld_shared_find(tl);

	if (s)
		fld_shared_sync(s, tl);
}

/*
 * For each pending point of @f on a timeline with a counter: catch up with
 * it (@must false), or also count the point as one we must complete (@must
 * true). Without memory to list the points, every counter is done. Not
 * the counters of @mine's own timelines (NULL: none), for a one-way merge
 * it sent: its TIMELINE_SYNC completes those after it wrote its kept ends
 * (FENCE_MERGE_INTO in protocol.h), where a catch-up here could complete
 * the merge before the owner's own fence of the same step is ready.
 */
void fld_shared_fence_points(struct fl_fence *f, bool must, const struct client *mine)
{
	struct fl_sync_pt_info few[8], *pts = few;
	int n = fl_fence_get_num_points(f), got;

	if (!nshared || n <= 0)
		return;
	if (n > (int)FL_ARRAY_SIZE(few) && !(pts = calloc((size_t)n, sizeof(*pts)))) {
		for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
			for (struct shared_tl *s = shared[b]; s; s = s->next) {
				struct fl_timeline *tl = shared_timeline(s);

				if (!tl)
					continue;
				if (must) {
					free(s->must);
					s->must = NULL;
					s->nmust = s->must_cap = 0;
					s->must_lost = true;
					must_publish(s);
				}
				fld_shared_sync(s, tl);
				fl_timeline_unref(tl);
			}
		return;
	}
	got = fl_fence_get_info(f, NULL, pts, (uint32_t)n);
	for (int i = 0; i < got; i++) {
		struct shared_tl *s;
		struct fl_timeline *tl;

		if (pts[i].status != 0 || !(s = shared_find_id(pts[i].timeline_id)) ||
		    (!must && ((mine && s->owner == mine) ||
			       __atomic_load_n(&s->page->value, __ATOMIC_SEQ_CST) == s->synced)))
			continue;
		tl = shared_timeline(s);
		if (!tl)
			continue;
		if (must)
			shared_must(s, tl, pts[i].value, !mine || s->owner != mine);
		else
			fld_shared_sync(s, tl);
		fl_timeline_unref(tl);
	}
	if (pts != few)
		free(pts);
}

void fld_shared_sync_fence(struct fl_fence *f)
{
	fld_shared_fence_points(f, false, NULL);
}

/* Catch up with every owner's counter: a view of everything must not lag. */
void fld_shared_sync_all(void)
{
	for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
		for (struct shared_tl *s = shared[b]; s; s = s->next) {
			struct fl_timeline *tl = shared_timeline(s);

			if (tl) {
				fld_shared_sync(s, tl);
				fl_timeline_unref(tl);
			}
		}
}

static void shared_free(struct shared_tl **pp)
{
	struct shared_tl *s = *pp;

	*pp = s->next;
	if (s->owner)
		s->owner->nshared--;
	munmap(s->page, FL_PROTO_SHARED_SIZE);
	free(s->must);
	free(s);
	nshared--;
}

/* Free the counters of timelines that are gone (on creation: O(counters)). */
void fld_shared_collect(void)
{
	for (unsigned int b = 0; nshared && b < SHARED_BUCKETS; b++)
		for (struct shared_tl **pp = &shared[b], *s; (s = *pp);) {
			struct fl_timeline *tl = shared_timeline(s);

			if (tl) {
				fl_timeline_unref(tl);
				pp = &s->next;
			} else {
				shared_free(pp);
			}
		}
}

/* The daemon is exiting: free every counter. */
void fld_shared_free_all(void)
{
	for (unsigned int b = 0; b < SHARED_BUCKETS; b++)
		while (shared[b])
			shared_free(&shared[b]);
}

/* A client goes: its counters stay with their timelines, without an owner. */
void fld_shared_disown(struct client *c)
{
	for (unsigned int b = 0; c->nshared && b < SHARED_BUCKETS; b++)
		for (struct shared_tl *s = shared[b]; s; s = s->next)
			if (s->owner == c) {
				s->owner = NULL;
				c->nshared--;
			}
}

/* An entry never registered: its page and memfd go (the driver unmaps its own mapping). */
static void shared_discard(struct shared_tl *s)
{
	if (!s)
		return;
	if (s->page != MAP_FAILED)
		munmap(s->page, FL_PROTO_SHARED_SIZE);
	if (s->mfd >= 0)
		close(s->mfd);
	free(s);
}

/*
 * A shared page for a new timeline of @c: our mapping in @s, the driver's
 * in *@ret_map. Return: the entry, or NULL (the timeline is sw_sync's
 * then, and works through the daemon only).
 */
static struct shared_tl *shared_page_new(struct client *c,
					 struct fl_proto_shared_timeline **ret_map)
{
	struct shared_tl *s;

	if (c->nshared >= SHARED_PER_CLIENT)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->page = MAP_FAILED;
	*ret_map = MAP_FAILED;
	s->mfd = memfd_create("fenceline-timeline", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	/* Sealed, so nobody can shrink it under our mappings. */
	if (s->mfd >= 0 && ftruncate(s->mfd, FL_PROTO_SHARED_SIZE) == 0 &&
	    fcntl(s->mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		s->page = mmap(NULL, FL_PROTO_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			       s->mfd, 0);
	if (s->page != MAP_FAILED)
		*ret_map = mmap(NULL, FL_PROTO_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
				s->mfd, 0);
	if (*ret_map != MAP_FAILED)
		return s;
	shared_discard(s);
	return NULL;
}

/* A shared_counter timeline with its page for @c, or NULL when @c gets no counter. */
static struct shared_tl *counter_timeline_new(struct client *c, const char *name,
					      unsigned int flags, struct fl_timeline **ret_tl)
{
	struct fl_proto_shared_timeline *drv = NULL;
	struct shared_tl *s;

	if (flags & ~(unsigned int)FL_SW_SYNC_32BIT)
		return NULL;
	s = shared_page_new(c, &drv);
	if (s && fl__shared_counter_timeline_create(name, flags, drv, FL_PROTO_SHARED_SIZE,
						    &drv->value, ret_tl) < 0) {
		munmap(drv, FL_PROTO_SHARED_SIZE);
		shared_discard(s);
		s = NULL;
	}
	if (s) {
		s->is32 = flags & FL_SW_SYNC_32BIT;
		/* Its death fails its pending points: the owner's counter then tells less. */
		fl__shared_counter_set_failed_word(*ret_tl, &drv->failed);
	}
	return s;
}

/*
 * Before a point of @s fails: the owner must not read a pending point from
 * its counter alone, and must catch up with us before it writes a kept
 * end. Counted up (never down) before we read the counter, seq_cst like
 * the owner's addition, which reads it after (protocol.h).
 */
static void mark_failing(struct shared_tl *s)
{
	if (s && s->page != MAP_FAILED)
		__atomic_add_fetch(&s->page->failed, 1, __ATOMIC_SEQ_CST);
}

void fld_shared_mark_failing_tl(struct fl_timeline *tl)
{
	mark_failing(fld_shared_find(tl));
}

/*
 * TIMELINE_CREATE's timeline and its fd (*@ret_fd, tracked for @c): a
 * shared_counter one, whose page @c will get, while @c may own one more
 * (*@ret_s: its entry, for fld_shared_own() once the timeline has a
 * handle), or else a sw_sync one (*@ret_s NULL), which works through the
 * daemon only. The page's memfd is made first, as the driver needs the
 * page; should it take the fd the timeline's own fd then lacks, the
 * timeline is made again without a counter, as a timeline whose counter
 * did not fit always was. Return: 0 (*@ret_tl is the caller's handle), or
 * the error of fl_sw_sync_timeline_create() (-EINVAL for unknown flags,
 * -ENOMEM) or of the fd's export (-EMFILE...).
 */
int fld_shared_timeline_create(struct client *c, const char *name, unsigned int flags,
			       struct fl_timeline **ret_tl, int *ret_fd, struct shared_tl **ret_s)
{
	bool counter = true;

	for (;;) {
		struct shared_tl *s = counter ? counter_timeline_new(c, name, flags, ret_tl) : NULL;
		int r = s ? 0 : fl_sw_sync_timeline_create(name, flags, ret_tl);

		if (r < 0)
			return r;
		atomic_fetch_add(&c->refs, 1);
		r = fl__timeline_export_fd_tracked(*ret_tl, ret_fd, fld_release_timeline, c);
		if (r == 0) {
			*ret_s = s;
			return 0;
		}
		atomic_fetch_sub(&c->refs, 1);
		fl_timeline_unref(*ret_tl);
		if (!s)
			return r;
		shared_discard(s);
		counter = false;
	}
}

/*
 * The timeline @tl of @s (fld_shared_timeline_create()) has its fd @fd;
 * @c owns it if it has a handle to name it by (@bound), and is sent its
 * counter's page. Return: the memfd to send (the caller closes its copy),
 * or a negative errno: the timeline then works through the daemon only,
 * its counter moved by the daemon alone. @s is used up either way.
 */
int fld_shared_own(struct client *c, struct shared_tl *s, struct fl_timeline *tl, int fd,
		   bool bound)
{
	int r = s && bound ? 0 : -ENOENT;

	if (r == 0)
		r = fl__fd_identity(fd, &s->dev, &s->ino, NULL); /* a timeline fd: a pipe */
	if (r < 0) {
		shared_discard(s);
		return r;
	}
	r = s->mfd;
	s->mfd = -1;
	s->id = fl_timeline_get_id(tl);
	__atomic_store_n(&s->page->id, s->id, __ATOMIC_RELEASE);
	must_publish(s);
	s->owner = c;
	c->nshared++;
	s->next = shared[s->id % SHARED_BUCKETS];
	shared[s->id % SHARED_BUCKETS] = s;
	nshared++;
	return r;
}

/* The sync service's timelines look like sw_sync's to their holders, whichever driver they have. */
bool fld_timeline_is_sw_sync(const struct fl_timeline *tl)
{
	return fl_timeline_is_sw_sync(tl) || fl__timeline_is_shared_counter(tl);
}

int fld_timeline_get_value(struct fl_timeline *tl, uint64_t *ret_value)
{
	if (fl__timeline_is_shared_counter(tl))
		return fl__shared_counter_get_value(tl, ret_value);
	return fl_sw_sync_timeline_get_value(tl, ret_value);
}

int fld_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
		     struct fl_fence **ret_fence)
{
	if (fl__timeline_is_shared_counter(tl))
		return fl__shared_counter_fence_create(tl, value, name, ret_fence);
	return fl_sw_sync_fence_create(tl, value, name, ret_fence);
}

/*
 * given_done(): a kept fence completed here. Its owner holds the only write
 * end, so tell it (a struct fl_proto_kick in its kick pipe) when that
 * completion is not the owner's doing: a failure (its timeline died), or a
 * step not through its counter (kick_all). Not for catching up with the
 * owner's counter (it closed its ends of what it reached itself), nor
 * while handling the end's close (kick_none). The write never blocks: our
 * end is non-blocking and nobody else has that file; an owner that does
 * not read its kick pipe only delays its own fences.
 */
static int kick_all, kick_none;

static void kick_write(struct client *c, uint64_t slot, int status, uint64_t ts)
{
	struct fl_proto_kick k = { slot, ts, status, 0 };
	bool ack;

	if (!c || c->kick < 0)
		return;
	/* Another process's step: its reply waits until the owner closed this end. */
	ack = fld_kickwait_wanted(c);
	if (ack)
		k.flags = FL_KICK_F_ACK;
	if (write(c->kick, &k, sizeof(k)) != (ssize_t)sizeof(k))
		return;
	c->kicks_sent++;
	if (ack)
		fld_kickwait_sent(c);
}

void fld_given_done(void *owner, uint64_t slot, int status, uint64_t ts)
{
	if (!kick_none && (kick_all || status < 0))
		kick_write(owner, slot, status, ts);
}

/* A point was held during the step being taken (fld_gate_reached()). */
static bool step_held;

/*
 * The gate hook (fl__pt_gate_close()): another process's step reached (or
 * failed) a fence whose only write end its owner keeps. Were the point to
 * complete now, a merge of it would be ready (and read signalled) while the
 * fence's own fd is not, for as long as the owner takes to close its end
 * (unbounded, were it stopped). So the point is held: the owner is kicked,
 * and the step's reply waits for its KICK_ACK (kickwait.c), which opens
 * the gate first. Without an owner that acknowledges, nothing is held.
 */
uint64_t fld_gate_reached(void *owner, uint64_t slot, int status, uint64_t ts)
{
	struct client *c = owner;
	uint64_t sent;

	if (!c || c->kick < 0 || !fld_kickwait_wanted(c))
		return 0;
	sent = c->kicks_sent;
	kick_write(c, slot, status, ts);
	if (c->kicks_sent == sent)
		return 0;
	step_held = true;
	return c->kicks_sent;
}

/* After a step not the owner's: points it reached are held, so the owner's steps sync. */
static void holds_begin(void)
{
	step_held = false;
	fl__pt_gates_engage(true);
}

static void holds_end(struct shared_tl *s)
{
	fl__pt_gates_engage(false);
	if (step_held && s && !s->holds) {
		s->holds = true;
		must_publish(s);
	}
	step_held = false;
}

/* With none of its points held any more, @s's owner no longer syncs on every step. */
static void holds_clear_if_none(struct shared_tl *s, struct fl_timeline *tl)
{
	if (!fl__pt_gates_held_tl(tl)) {
		s->holds = false;
		must_publish(s);
	}
}

/* @c acknowledged kicks: its timelines without held points no longer make its steps sync. */
void fld_shared_holds_acked(struct client *c)
{
	for (unsigned int b = 0; nshared && b < SHARED_BUCKETS; b++)
		for (struct shared_tl *s = shared[b]; s; s = s->next) {
			struct fl_timeline *tl;

			if (s->owner != c || !s->holds || !(tl = shared_timeline(s)))
				continue;
			holds_clear_if_none(s, tl);
			fl_timeline_unref(tl);
		}
}

/*
 * After fld_shared_sync() for the owner's TIMELINE_SYNC: its step closed
 * the ends of what its counter reached before it sent it, so each such
 * held point was let go by that catch-up's fl__fence_pipe_ends_check()
 * (every write end closed), or nobody holds its fd (the sweep: a fence
 * nobody holds has no readiness to keep in order). What is still held was
 * reached past that step, and waits for the owner's KICK_ACK.
 */
void fld_shared_holds_settle(struct shared_tl *s, struct fl_timeline *tl)
{
	if (!s || !s->holds)
		return;
	if (fl__pt_gates_held_tl(tl))
		(void)fl__watcher_sweep();
	holds_clear_if_none(s, tl);
}

/* Tell @c of @f, complete already, made of its pooled @slot, whose end it may have kept. */
void fld_kick_send(struct client *c, uint32_t slot, struct fl_fence *f)
{
	struct fl_fence_info info;

	if (fl_fence_get_info(f, &info, NULL, 0) >= 0 && info.status != 0)
		kick_write(c, slot, info.status, info.timestamp_ns);
}

/*
 * What we read of the owner's queue for one step not its own, within the
 * step: a library's queue ahead of a merge is a few cheap one-way requests
 * (200 deadline hints take about 1.2 ms here), read at once; an owner's
 * queue of costly ones (a merge of a fence of thousands of points with
 * itself, a pool's worth of them) would hold up every other client for all
 * of it (16-20 ms measured, where a turn is 0.2 ms). Past OWNER_READ_NS
 * the step's reply waits for the rest instead, read in the owner's turns.
 */
#define OWNER_READ_NS 1000000ull

/*
 * A step or failure by @c, not the owner of @s, has completed points: the
 * owner may have sent a one-way merge of them (FENCE_MERGE_INTO) that we
 * have not read, and the step must not be answered with that merge still
 * pending. The owner sets its page's oneway_merges before its first such
 * send and reads its counter after each (our addition or failure count,
 * made before we read the flag, all seq_cst): if we do not see the flag
 * it sees our step and waits for us to read its merge. What we cannot
 * read now (past the budget, an owner read further up the stack, or one
 * with a DUMP parked) the reply waits for (fld_kickwait_drain()).
 * @s is not used once its owner's requests run (they may end it).
 */
static void read_owner_merges(struct client *c, struct shared_tl *s)
{
	struct client *o = s ? s->owner : NULL;

	if (!o || o == c || !__atomic_load_n(&s->page->oneway_merges, __ATOMIC_SEQ_CST))
		return;
	if (o->conn.fd >= 0 && !o->parked && !o->reading)
		fld_client_readable(o, FLD_OWNER_READ_MAX, OWNER_READ_NS);
	if (!fld_client_queue_empty(o))
		fld_kickwait_drain(o);
}

/*
 * TIMELINE_INC, TIMELINE_INC_AT and TIMELINE_SIGNAL: through the counter
 * if there is one. @stamp_ns: the time the points get (0: now), which
 * must not be after now nor before the timeline's last stamp (-EINVAL).
 */
int fld_timeline_add(struct client *c, struct fl_timeline *tl, uint64_t count, uint64_t stamp_ns)
{
	struct shared_tl *s = fld_shared_find(tl);
	uint64_t before = 0, after = 0, ts = 0;
	int r;

	/* Caught up first, so the trace tells the owner's steps from this one. */
	if (s)
		fld_shared_sync(s, tl);
	if (fld_tracing)
		fld_timeline_get_value(tl, &before);
	/*
	 * The points this step reaches carry the time the trace gives the
	 * step (the core would read the clock again: an arrow from the signal
	 * to a wait it released would start where no signal is). And a step
	 * taken here through the owner's counter is this client's, not one of
	 * the owner's at the owner's last stamp: shared_sync() must not see it.
	 */
	ts = fl__now_ns();
	/* Checked after catching up: the owner's steps so far are the floor too. */
	if (stamp_ns && (stamp_ns > ts || stamp_ns < fl__timeline_last_stamp(tl)))
		return -EINVAL;
	if (stamp_ns)
		ts = stamp_ns;
	fl__timeline_signal_stamp(ts);
	/* Not the owner's counter: its kept ends of fences this step reaches are told (given_done()). */
	if (s)
		s->stepped_by_others = true;
	kick_all++;
	holds_begin();
	r = fl__timeline_is_shared_counter(tl) ? fl__shared_counter_inc(tl, count)
					       : fl_sw_sync_timeline_inc(tl, count);
	holds_end(s);
	kick_all--;
	fl__timeline_signal_stamp(0);
	if (r == 0 && s) {
		s->synced += s->is32 ? (uint32_t)count : count;
		r = fld_shared_sync(s, tl);
	}
	if (fld_tracing && fld_timeline_get_value(tl, &after) == 0)
		fld_trace_signal(fl_timeline_get_id(tl), before, after, c->conn.pid, ts, r);
	read_owner_merges(c, s);
	return r;
}

/*
 * TIMELINE_FAIL: what the owner's counter reached signals first (caught
 * up), then every pending point fails with @status; the owner hears of its
 * kept ends through given_done() (a failure always kicks).
 */
int fld_timeline_fail(struct client *c, struct fl_timeline *tl, int status)
{
	struct shared_tl *s = fld_shared_find(tl);
	uint64_t value = 0, ts;
	int r;

	/* Counted before the catch-up: an addition we do not see then sees the count. */
	mark_failing(s);
	if (s)
		fld_shared_sync(s, tl);
	ts = fl__now_ns();
	if (ts < fl__timeline_last_stamp(tl))
		ts = fl__timeline_last_stamp(tl);
	fl__timeline_signal_stamp(ts);
	holds_begin();
	r = fl_timeline_fail_pending(tl, status);
	holds_end(s);
	fl__timeline_signal_stamp(0);
	if (r >= 0 && fld_tracing && fld_timeline_get_value(tl, &value) == 0)
		fld_trace_fail(fl_timeline_get_id(tl), value, r, c->conn.pid, ts, status);
	read_owner_merges(c, s);
	return r;
}

/* A new fence @f on @tl (at @value) that we must complete: see shared_must(). */
void fld_shared_must_tl(struct fl_timeline *tl, uint64_t value)
{
	struct shared_tl *s = fld_shared_find(tl);

	if (s)
		fld_shared_must(s, tl, value);
}

/* fld_shared_sync_end_seen(): the fence whose end's close it looks out for, and whether it came. */
static struct fl_fence *end_watch;
static bool end_watch_seen;

bool fld_shared_sync_end_seen(struct shared_tl *s, struct fl_timeline *tl, struct fl_fence *f)
{
	end_watch = f;
	end_watch_seen = false;
	fld_shared_sync(s, tl);
	end_watch = NULL;
	return end_watch_seen;
}

/*
 * Every write end of an owner's pipe fence is closed (fl__fence_pipe_give()):
 * its holders see it ready. That is a completion only if the owner's
 * counter reached the fence; otherwise the owner lost its end before it
 * got there (it died, or the program closed the library's fds), and the
 * fence fails with -ENOENT, as the kernel fails the pending points of a
 * sw_sync timeline that goes away: ready must never read as signalled
 * before it is. Its point's gate opens here: what its timeline reached
 * (or failed) while the owner still held the end completes now, merges
 * of it with it, no sooner than its fd (fl__pt_gate_close()).
 */
void fld_owner_end_closed(struct fl_fence *f)
{
	int n;

	if (f == end_watch)
		end_watch_seen = true;

	/* Its owner has no end to close (nor those it closed with it). */
	kick_none++;
	fld_shared_sync_fence(f);
	n = 0;
	if (fl__fence_gate_open(f) == 0 && fl_fence_get_status(f) == 0) {
		struct fl_sync_pt_info pts[4];
		struct fl_fence_info info;
		int np = fl_fence_get_info(f, &info, pts, 4);

		/* A kept fence has one point (FENCE_NEW's): its timeline's owner is told first. */
		for (int i = 0; i < np; i++)
			mark_failing(shared_find_id(pts[i].timeline_id));
		n = fl__fence_fail_pending(f, -ENOENT);
	}
	kick_none--;
	if (n > 0)
		fld_log("an owner's fence '%s' failed: its signal end was closed before its "
			"timeline reached it",
			fl_fence_get_name(f));
}

/* fld_owner_fn: the connected creator of a timeline with a shared counter. */
pid_t fld_owner_of(const void *timeline, void *arg)
{
	struct shared_tl *s = fld_shared_find((struct fl_timeline *)timeline);

	(void)arg;
	return s && s->owner ? s->owner->conn.pid : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Timelines and sync points: pending points live in a per-timeline min-heap
 * ordered by the driver's signal order, so a signal looks only at points
 * that can have changed: the earliest pending ones, stopping at the first
 * that has not signalled (O(k log n) for k of n points).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "host.h"

static atomic_uint_least64_t next_timeline_id = 1;

int fl__pt_compare(const struct fl_sync_pt *a, const struct fl_sync_pt *b)
{
	const struct fl_timeline_ops *ops = a->tl->ops;

	if (ops->compare)
		return ops->compare(a, b);
	return a->value < b->value ? -1 : a->value > b->value;
}

/* Heap helpers; callers hold tl->lock. */
static void heap_set(struct fl_timeline *tl, uint32_t i, struct fl_sync_pt *pt)
{
	tl->heap[i] = pt;
	pt->heap_idx = i;
}

static void heap_up(struct fl_timeline *tl, uint32_t i)
{
	struct fl_sync_pt *pt = tl->heap[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (fl__pt_compare(tl->heap[parent], pt) <= 0)
			break;
		heap_set(tl, i, tl->heap[parent]);
		i = parent;
	}
	heap_set(tl, i, pt);
}

static void heap_down(struct fl_timeline *tl, uint32_t i)
{
	struct fl_sync_pt *pt = tl->heap[i];

	for (;;) {
		uint32_t child = 2 * i + 1;

		if (child >= tl->heap_len)
			break;
		if (child + 1 < tl->heap_len &&
		    fl__pt_compare(tl->heap[child + 1], tl->heap[child]) < 0)
			child++;
		if (fl__pt_compare(pt, tl->heap[child]) <= 0)
			break;
		heap_set(tl, i, tl->heap[child]);
		i = child;
	}
	heap_set(tl, i, pt);
}

static int heap_insert(struct fl_timeline *tl, struct fl_sync_pt *pt)
{
	if (tl->heap_len == tl->heap_cap) {
		uint32_t cap = tl->heap_cap ? tl->heap_cap * 2 : 8;
		struct fl_sync_pt **heap = realloc(tl->heap, cap * sizeof(*heap));

		if (!heap)
			return -ENOMEM;
		tl->heap = heap;
		tl->heap_cap = cap;
	}
	heap_set(tl, tl->heap_len++, pt);
	heap_up(tl, tl->heap_len - 1);
	return 0;
}

static void heap_remove(struct fl_timeline *tl, struct fl_sync_pt *pt)
{
	uint32_t i = pt->heap_idx;
	struct fl_sync_pt *last;

	pt->heap_idx = FL__NOT_QUEUED;
	last = tl->heap[--tl->heap_len];
	if (i == tl->heap_len)
		return;
	heap_set(tl, i, last);
	if (i > 0 && fl__pt_compare(tl->heap[(i - 1) / 2], last) > 0)
		heap_up(tl, i);
	else
		heap_down(tl, i);
}

void fl__timeline_mem_ref(struct fl_timeline *tl)
{
	atomic_fetch_add_explicit(&tl->refs, 1, memory_order_relaxed);
}

void fl__timeline_mem_unref(struct fl_timeline *tl)
{
	if (atomic_fetch_sub_explicit(&tl->refs, 1, memory_order_acq_rel) != 1)
		return;
	fl__registry_del_timeline(tl);
	if (tl->ops->release_timeline)
		tl->ops->release_timeline(tl);
	pthread_mutex_destroy(&tl->lock);
	free(tl->heap);
	free(tl);
}

FL_EXPORT int fl_timeline_create(const struct fl_timeline_ops *ops, const char *name,
				 void *driver_data, struct fl_timeline **ret_timeline)
{
	struct fl_timeline *tl;

	fl_return_if(!ops || !ops->driver_name || !ops->has_signaled || !ret_timeline, -EINVAL);
	tl = calloc(1, sizeof(*tl));
	if (!tl)
		return -ENOMEM;
	atomic_init(&tl->handles, 1);
	atomic_init(&tl->refs, 1);
	tl->ops = ops;
	tl->driver_data = driver_data;
	tl->id = atomic_fetch_add(&next_timeline_id, 1);
	fl__name_copy(tl->name, sizeof(tl->name), name ? name : ops->driver_name);
	pthread_mutex_init(&tl->lock, NULL);
	fl__registry_add_timeline(tl);
	FL_LOG("timeline", "created '%s' (%s), id %" PRIu64, tl->name, ops->driver_name, tl->id);
	*ret_timeline = tl;
	return 0;
}

/* Status a pending point gets now, under tl->lock: has_signaled, or -ENOENT once dead. */
static int check_locked(struct fl_timeline *tl, struct fl_sync_pt *pt)
{
	int r = tl->ops->has_signaled(pt);

	if (r > 0)
		r = FL_STATUS_SIGNALED;
	if (r == 0 && tl->dead)
		r = -ENOENT;
	return r;
}

static void set_status_locked(struct fl_sync_pt *pt, int status, uint64_t ts)
{
	atomic_store_explicit(&pt->timestamp_ns, ts, memory_order_relaxed);
	atomic_store_explicit(&pt->status, status, memory_order_release);
}

void fl__pt_activate_locked(struct fl_sync_pt *pt)
{
	struct fl_timeline *tl = pt->tl;
	int r = check_locked(tl, pt);

	if (r == 0 && heap_insert(tl, pt) == 0)
		return;
	/* Out of memory for the heap: fail the point rather than lose a wake-up. */
	set_status_locked(pt, r ? r : -ENOMEM, fl__now_ns());
}

static void pt_done_locked(struct fl_sync_pt *pt, int r, uint64_t ts, struct fl_fence **list);

static _Thread_local uint64_t signal_stamp;

void fl__timeline_signal_stamp(uint64_t ns)
{
	signal_stamp = ns;
}

uint64_t fl__timeline_last_stamp(struct fl_timeline *tl)
{
	uint64_t ts;

	pthread_mutex_lock(&tl->lock);
	ts = tl->last_stamp;
	pthread_mutex_unlock(&tl->lock);
	return ts;
}

/*
 * One signal pass under tl->lock: complete the earliest pending points that
 * have signalled and collect the fences that became complete (with a ref).
 */
static int signal_locked(struct fl_timeline *tl, struct fl_fence **list)
{
	uint64_t ts = 0;
	int count = 0;

	/* A stamp a host gave is the floor for later ones, also when it completes nothing. */
	if (signal_stamp > tl->last_stamp)
		tl->last_stamp = signal_stamp;
	while (tl->heap_len) {
		struct fl_sync_pt *pt = tl->heap[0];
		int r = check_locked(tl, pt);

		if (r == 0)
			break;
		heap_remove(tl, pt);
		if (!ts) {
			ts = signal_stamp ? signal_stamp : fl__now_ns();
			/* Never before an earlier pass's: points complete in time order. */
			if (ts < tl->last_stamp)
				ts = tl->last_stamp;
			tl->last_stamp = ts;
		}
		pt_done_locked(pt, r, ts, list);
		count++;
	}
	return count;
}

static uint64_t (*gate_hook)(void *owner, uint64_t cookie, int status, uint64_t ts);
static _Thread_local bool gates_engaged;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fl__pt_gate *held_gates;

void fl__pt_gate_set_hook(uint64_t (*hook)(void *owner, uint64_t cookie, int status, uint64_t ts))
{
	gate_hook = hook;
}

void fl__pt_gates_engage(bool on)
{
	gates_engaged = on;
}

/*
 * Under tl->lock: @pt, just taken off the heap, completes with @r; its
 * fences that complete go on @list. A gated point reached while gates are
 * engaged may be held instead (fl__pt_gate_close()).
 */
static void pt_done_locked(struct fl_sync_pt *pt, int r, uint64_t ts, struct fl_fence **list)
{
	struct fl__pt_gate *g = pt->gate;
	struct fl__member *m;

	if (g && !g->open) {
		uint64_t token =
			gates_engaged && gate_hook ? gate_hook(g->owner, g->cookie, r, ts) : 0;

		atomic_store(&g->told, token != 0);
		if (token) {
			g->held = true;
			g->status = r;
			g->ts = ts;
			g->token = token;
			fl__pt_ref(pt); /* the held list's */
			pthread_mutex_lock(&held_lock);
			g->next_held = held_gates;
			held_gates = g;
			pthread_mutex_unlock(&held_lock);
			return;
		}
		g->open = true;
	}
	set_status_locked(pt, r, ts);
	while ((m = pt->waiters)) {
		pt->waiters = m->next;
		if (m->next)
			m->next->pprev = &pt->waiters;
		m->next = NULL;
		m->pprev = NULL;
		if (fl__member_done(m->fence, r) && fl__fence_ref_unless_zero(m->fence)) {
			m->fence->complete_next = *list;
			*list = m->fence;
		}
	}
}

int fl__pt_gate_close(struct fl_fence *f, void *owner, uint64_t cookie)
{
	struct fl_sync_pt *pt;
	struct fl_timeline *tl;
	int r = 0;

	if (!f || f->n != 1)
		return -EINVAL;
	pt = f->m[0].pt;
	tl = pt->tl;
	pthread_mutex_lock(&tl->lock);
	if (atomic_load(&pt->status) != 0) {
		r = -EALREADY;
	} else if (!pt->gate) {
		struct fl__pt_gate *g = calloc(1, sizeof(*g));

		if (g) {
			g->owner = owner;
			g->cookie = cookie;
			g->pt = pt;
			__atomic_store_n(&pt->gate, g, __ATOMIC_RELEASE);
		} else {
			r = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&tl->lock);
	return r;
}

/* Under tl->lock, @g held and off the held list: open it, its point completes. */
static int gate_release_locked(struct fl__pt_gate *g, struct fl_fence **list)
{
	int r = g->status;

	g->held = false;
	g->open = true;
	pt_done_locked(g->pt, r, g->ts, list);
	return r;
}

void fl__pt_gates_open(void *owner, uint64_t upto)
{
	struct fl__pt_gate *mine = NULL, **pp;

	pthread_mutex_lock(&held_lock);
	for (pp = &held_gates; *pp;) {
		struct fl__pt_gate *g = *pp;

		if (g->owner == owner && g->token <= upto) {
			*pp = g->next_held;
			g->next_held = mine;
			mine = g;
		} else {
			pp = &g->next_held;
		}
	}
	pthread_mutex_unlock(&held_lock);
	/* Taken off the list here: released here only (fl__fence_gate_open() leaves them). */
	while (mine) {
		struct fl__pt_gate *g = mine;
		struct fl_sync_pt *pt = g->pt;
		struct fl_fence *list = NULL;

		mine = g->next_held;
		pthread_mutex_lock(&pt->tl->lock);
		if (g->held)
			gate_release_locked(g, &list);
		pthread_mutex_unlock(&pt->tl->lock);
		fl__complete_list(list);
		fl__pt_unref(pt);
	}
}

int fl__fence_gate_open(struct fl_fence *f)
{
	struct fl_fence *list = NULL;
	struct fl__pt_gate *g;
	struct fl_sync_pt *pt;
	bool held = false;
	int r = 0;

	if (!f || f->n != 1)
		return 0;
	pt = f->m[0].pt;
	pthread_mutex_lock(&pt->tl->lock);
	g = pt->gate;
	if (g && g->held) {
		/* Released by whoever takes it off the list: here, or fl__pt_gates_open(). */
		pthread_mutex_lock(&held_lock);
		for (struct fl__pt_gate **pp = &held_gates; *pp; pp = &(*pp)->next_held)
			if (*pp == g) {
				*pp = g->next_held;
				held = true;
				break;
			}
		pthread_mutex_unlock(&held_lock);
		/* Not on it: fl__pt_gates_open() is releasing it, with this outcome. */
		r = held ? gate_release_locked(g, &list) : g->status;
	} else if (g) {
		g->open = true;
	}
	pthread_mutex_unlock(&pt->tl->lock);
	fl__complete_list(list);
	if (held)
		fl__pt_unref(pt);
	return r;
}

int fl__pt_gates_held_tl(const struct fl_timeline *tl)
{
	int n = 0;

	pthread_mutex_lock(&held_lock);
	for (const struct fl__pt_gate *g = held_gates; g; g = g->next_held)
		n += g->pt->tl == tl;
	pthread_mutex_unlock(&held_lock);
	return n;
}

bool fl__fence_gate_told(const struct fl_fence *f)
{
	const struct fl__pt_gate *g;

	if (!f || f->n != 1)
		return false;
	g = __atomic_load_n(&f->m[0].pt->gate, __ATOMIC_ACQUIRE);
	return g && atomic_load(&((struct fl__pt_gate *)g)->told);
}

int fl__fence_fail_pending(struct fl_fence *f, int status)
{
	struct fl_fence *list = NULL;
	uint64_t ts = fl__now_ns();
	int n = 0;

	if (!f || status >= 0)
		return -EINVAL;
	/* Armed first, so that a point failed here completes the fence through its member. */
	fl__fence_arm(f);
	for (uint32_t i = 0; i < f->n; i++) {
		struct fl_sync_pt *pt = f->m[i].pt;
		struct fl_timeline *tl = pt->tl;

		pthread_mutex_lock(&tl->lock);
		/* Checked first: a point that has signalled by now is not failed. */
		if (pt->heap_idx != FL__NOT_QUEUED && check_locked(tl, pt) == 0) {
			heap_remove(tl, pt);
			pt_done_locked(pt, status, ts, &list);
			n++;
		}
		pthread_mutex_unlock(&tl->lock);
	}
	fl__complete_list(list);
	return n;
}

void fl__complete_list(struct fl_fence *list)
{
	/* The list is LIFO; reverse it so fences complete in point order. */
	struct fl_fence *rev = NULL;

	while (list) {
		struct fl_fence *next = list->complete_next;

		list->complete_next = rev;
		rev = list;
		list = next;
	}
	while (rev) {
		struct fl_fence *next = rev->complete_next;

		rev->complete_next = NULL;
		fl__fence_complete(rev);
		fl_fence_unref(rev);
		rev = next;
	}
}

FL_EXPORT int fl_timeline_signal(struct fl_timeline *tl)
{
	struct fl_fence *list = NULL;
	int count;

	fl_return_if(!tl, -EINVAL);
	pthread_mutex_lock(&tl->lock);
	count = signal_locked(tl, &list);
	pthread_mutex_unlock(&tl->lock);
	FL_PROBE3(timeline_signal, tl->id, count, tl->name);
	fl__complete_list(list);
	return count;
}

static void kill_timeline(struct fl_timeline *tl)
{
	struct fl_fence *list = NULL;
	int n;

	/* Points the driver's counter reached complete as signalled, not -ENOENT. */
	if (tl->ops->dying && fl_timeline_is_alive(tl) == 1)
		tl->ops->dying(tl);
	pthread_mutex_lock(&tl->lock);
	if (tl->dead) {
		pthread_mutex_unlock(&tl->lock);
		return;
	}
	tl->dead = true;
	n = signal_locked(tl, &list);
	pthread_mutex_unlock(&tl->lock);
	FL_LOG("timeline", "'%s' died; %d pending point(s) completed", tl->name, n);
	FL_PROBE3(timeline_dead, tl->id, n, tl->name);
	fl__complete_list(list);
	{
		void *arg;
		const struct fl__observer *o = fl__observer_get(&arg);

		if (o && o->timeline_dead)
			o->timeline_dead(tl, arg);
	}
}

FL_EXPORT int fl_timeline_fail_pending(struct fl_timeline *tl, int status)
{
	struct fl_fence *list = NULL;
	uint64_t ts;
	int n = 0;

	fl_return_if(!tl || status >= 0 || status < -4095, -EINVAL);
	pthread_mutex_lock(&tl->lock);
	if (tl->dead) {
		pthread_mutex_unlock(&tl->lock);
		return -ENOENT;
	}
	/* What the counter reached signalled: only the work not done fails. */
	signal_locked(tl, &list);
	/* A host's stamp (the daemon's trace event's) is the failure's time too. */
	ts = signal_stamp ? signal_stamp : fl__now_ns();
	if (ts < tl->last_stamp)
		ts = tl->last_stamp;
	tl->last_stamp = ts;
	while (tl->heap_len) {
		struct fl_sync_pt *pt = tl->heap[0];

		heap_remove(tl, pt);
		pt_done_locked(pt, status, ts, &list);
		n++;
	}
	pthread_mutex_unlock(&tl->lock);
	FL_LOG("timeline", "'%s': %d pending point(s) failed with %d; it lives on", tl->name, n,
	       status);
	fl__complete_list(list);
	return n;
}

FL_EXPORT struct fl_timeline *fl_timeline_ref(struct fl_timeline *tl)
{
	if (tl)
		atomic_fetch_add_explicit(&tl->handles, 1, memory_order_relaxed);
	return tl;
}

FL_EXPORT struct fl_timeline *fl_timeline_unref(struct fl_timeline *tl)
{
	if (!tl)
		return NULL;
	if (atomic_fetch_sub_explicit(&tl->handles, 1, memory_order_acq_rel) != 1)
		return NULL;
	kill_timeline(tl);
	fl__timeline_mem_unref(tl);
	return NULL;
}

FL_EXPORT void fl_timeline_kill(struct fl_timeline *tl)
{
	if (!tl)
		return;
	kill_timeline(tl);
	fl_timeline_unref(tl);
}

/* The deprecated name, kept exported for one release: the same code. */
FL_EXPORT void fl_timeline_destroy(struct fl_timeline *tl)
	__attribute__((alias("fl_timeline_kill")));

FL_EXPORT const char *fl_timeline_get_name(const struct fl_timeline *tl)
{
	return tl ? tl->name : "";
}

FL_EXPORT const char *fl_timeline_get_driver_name(const struct fl_timeline *tl)
{
	return tl ? tl->ops->driver_name : "";
}

FL_EXPORT uint64_t fl_timeline_get_id(const struct fl_timeline *tl)
{
	return tl ? tl->id : 0;
}

FL_EXPORT int fl_timeline_is_alive(const struct fl_timeline *tl)
{
	struct fl_timeline *t = (struct fl_timeline *)tl;
	int alive;

	fl_return_if(!tl, -EINVAL);
	pthread_mutex_lock(&t->lock);
	alive = !t->dead;
	pthread_mutex_unlock(&t->lock);
	return alive;
}

FL_EXPORT int fl_timeline_get_pending_count(struct fl_timeline *tl)
{
	int n;

	fl_return_if(!tl, -EINVAL);
	pthread_mutex_lock(&tl->lock);
	n = (int)tl->heap_len;
	pthread_mutex_unlock(&tl->lock);
	return n;
}

FL_EXPORT int fl_timeline_get_value_str(struct fl_timeline *tl, char *buf, size_t size)
{
	fl_return_if(!tl || !buf || !size, -EINVAL);
	buf[0] = '\0';
	if (tl->ops->timeline_value_str) {
		pthread_mutex_lock(&tl->lock);
		tl->ops->timeline_value_str(tl, buf, size);
		pthread_mutex_unlock(&tl->lock);
		buf[size - 1] = '\0';
	}
	return 0;
}

FL_EXPORT void *fl_timeline_get_driver_data(const struct fl_timeline *tl)
{
	return tl ? tl->driver_data : NULL;
}

FL_EXPORT const struct fl_timeline_ops *fl_timeline_get_ops(const struct fl_timeline *tl)
{
	return tl ? tl->ops : NULL;
}

struct fl_sync_pt *fl__pt_alloc(struct fl_timeline *tl, uint64_t value)
{
	struct fl_sync_pt *pt = calloc(1, sizeof(*pt) + tl->ops->pt_data_size);

	if (!pt)
		return NULL;
	pt->tl = tl;
	atomic_init(&pt->refs, 1);
	pt->value = value;
	pt->heap_idx = FL__NOT_QUEUED;
	fl__timeline_mem_ref(tl);
	return pt;
}

void fl__pt_ref(struct fl_sync_pt *pt)
{
	atomic_fetch_add_explicit(&pt->refs, 1, memory_order_relaxed);
}

void fl__pt_unref(struct fl_sync_pt *pt)
{
	struct fl_timeline *tl = pt->tl;

	if (atomic_fetch_sub_explicit(&pt->refs, 1, memory_order_acq_rel) != 1)
		return;
	/*
	 * Nobody can wait on it any more: drop it from the pending heap. The
	 * lock is taken even for a completed point so that a signal pass still
	 * looking at it has finished before it is freed.
	 */
	pthread_mutex_lock(&tl->lock);
	if (pt->heap_idx != FL__NOT_QUEUED)
		heap_remove(tl, pt);
	pthread_mutex_unlock(&tl->lock);
	if (tl->ops->release_pt)
		tl->ops->release_pt(pt);
	free(pt->gate);
	free(pt);
	fl__timeline_mem_unref(tl);
}

FL_EXPORT uint64_t fl_sync_pt_get_value(const struct fl_sync_pt *pt)
{
	return pt ? pt->value : 0;
}

FL_EXPORT struct fl_timeline *fl_sync_pt_get_timeline(const struct fl_sync_pt *pt)
{
	return pt ? pt->tl : NULL;
}

FL_EXPORT void *fl_sync_pt_get_driver_data(const struct fl_sync_pt *pt)
{
	if (!pt || !pt->tl->ops->pt_data_size)
		return NULL;
	return (void *)pt->data;
}

FL_EXPORT int fl_sync_pt_get_status(const struct fl_sync_pt *pt)
{
	if (!pt)
		return -EINVAL;
	return atomic_load_explicit(&((struct fl_sync_pt *)pt)->status, memory_order_acquire);
}

/* SPDX-License-Identifier: MIT */
/*
 * Fences: creation, references, status, arming and completion, callbacks.
 *
 * A fence is passive until somebody needs to hear about it (a callback, a
 * blocking wait, an fd). Then it is *armed*: each member is linked on its
 * point's waiter list, and the fence holds a reference on itself until it
 * completes, so that whatever is waiting always gets its answer. Signal
 * passes decrement the fence's pending count under the point's timeline
 * lock; the one that makes the fence complete (a CAS on the status) runs
 * the completion: fd records, futex wake-up, callbacks, in its own thread
 * and outside the timeline lock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "host.h"

static _Atomic uint64_t last_fence_id;

static const struct fl__observer *_Atomic observer;
static void *observer_arg;

void fl__observer_set(const struct fl__observer *o, void *arg)
{
	observer_arg = arg;
	atomic_store(&observer, o);
}

const struct fl__observer *fl__observer_get(void **ret_arg)
{
	const struct fl__observer *o = atomic_load_explicit(&observer, memory_order_acquire);

	*ret_arg = observer_arg;
	return o;
}

uint64_t fl__fence_id(const void *fence)
{
	return ((const struct fl_fence *)fence)->id;
}

struct fl_fence *fl__fence_alloc(uint32_t n, const char *name, unsigned int flags)
{
	struct fl_fence *f = calloc(1, sizeof(*f) + n * sizeof(f->m[0]));

	if (!f)
		return NULL;
	atomic_init(&f->refs, 1);
	f->id = atomic_fetch_add_explicit(&last_fence_id, 1, memory_order_relaxed) + 1;
	f->flags = flags;
	f->created_ns = fl__now_ns();
	f->n = n;
	f->own_fd = -1;
	f->cbs_tail = &f->cbs;
	fl__name_copy(f->name, sizeof(f->name), name);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cb_done, NULL);
	for (uint32_t i = 0; i < n; i++)
		f->m[i].fence = f;
	return f;
}

void fl__fence_publish(struct fl_fence *f)
{
	fl__registry_add_fence(f);
}

FL_EXPORT int fl_fence_create(struct fl_timeline *tl, uint64_t value, const char *name,
			      void (*init)(struct fl_sync_pt *pt, void *data), void *init_data,
			      struct fl_fence **ret_fence)
{
	struct fl_sync_pt *pt;
	struct fl_fence *f;
	char gen[FL_NAME_MAX + 24];

	fl_return_if(!tl || !ret_fence, -EINVAL);
	if (!name || !*name) {
		/* Truncated to FL_NAME_MAX by fl__fence_alloc(). */
		snprintf(gen, sizeof(gen), "%s-%" PRIu64, tl->name, value);
		name = gen;
	}
	f = fl__fence_alloc(1, name, 0);
	if (!f)
		return -ENOMEM;
	pt = fl__pt_alloc(tl, value);
	if (!pt) {
		fl_fence_unref(f);
		return -ENOMEM;
	}
	if (init)
		init(pt, init_data);
	f->m[0].pt = pt;
	pthread_mutex_lock(&tl->lock);
	fl__pt_activate_locked(pt);
	pthread_mutex_unlock(&tl->lock);
	fl__fence_publish(f);
	FL_PROBE4(fence_create, f->id, tl->id, value, f->name);
	*ret_fence = f;
	return 0;
}

FL_EXPORT struct fl_fence *fl_fence_ref(struct fl_fence *f)
{
	if (f)
		atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
	return f;
}

bool fl__fence_ref_unless_zero(struct fl_fence *f)
{
	int r = atomic_load_explicit(&f->refs, memory_order_relaxed);

	while (r > 0) {
		if (atomic_compare_exchange_weak_explicit(&f->refs, &r, r + 1, memory_order_acquire,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

static void fence_destroy(struct fl_fence *f)
{
	if (f->armed) {
		/* Unlink members still waiting on points that have not completed. */
		for (uint32_t i = 0; i < f->n; i++) {
			struct fl__member *m = &f->m[i];
			struct fl_timeline *tl = m->pt->tl;

			pthread_mutex_lock(&tl->lock);
			if (m->pprev) {
				*m->pprev = m->next;
				if (m->next)
					m->next->pprev = m->pprev;
				m->pprev = NULL;
			}
			pthread_mutex_unlock(&tl->lock);
		}
	}
	fl__sink_fence_destroyed(f);
	if (f->published)
		fl__registry_del_fence(f);
	for (uint32_t i = 0; i < f->n; i++)
		if (f->m[i].pt)
			fl__pt_unref(f->m[i].pt);
	pthread_cond_destroy(&f->cb_done);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/*
 * Under f->lock: does nobody but the caller (holding one reference) need
 * @f to complete? Then its own reference is the only other, and it can go
 * with the caller's: no holder is left to learn the outcome. Callbacks
 * and the fence's own fd (whose copies may be anywhere, and which goes
 * only with the fence) still need it; strong fds and blocking waiters
 * hold references of their own.
 */
static bool unneeded_locked(struct fl_fence *f)
{
	return atomic_load_explicit(&f->self_ref, memory_order_relaxed) && !f->completed &&
	       !f->cbs && !f->sinks && !f->own_sink && !atomic_load(&f->nwaiters) &&
	       atomic_load(&f->refs) == 2;
}

FL_EXPORT struct fl_fence *fl_fence_unref(struct fl_fence *f)
{
	int drop = 1;

	if (!f)
		return NULL;
	/*
	 * The last reference but the fence's own (an armed pending fence's):
	 * if nothing needs it any more, both go, and the fence and its points
	 * with them, as a kernel sync_pt goes with its last reference, instead
	 * of staying until the timeline reaches it. Its members stay linked
	 * until it is freed (fence_destroy() unlinks them), so a reference
	 * taken meanwhile (a signal pass, fl_fence_from_fd()) finds it whole;
	 * arming it again takes the self-reference again.
	 */
	if (atomic_load_explicit(&f->refs, memory_order_relaxed) == 2 &&
	    atomic_load_explicit(&f->self_ref, memory_order_relaxed)) {
		pthread_mutex_lock(&f->lock);
		if (unneeded_locked(f)) {
			atomic_store_explicit(&f->self_ref, false, memory_order_relaxed);
			drop = 2;
		}
		pthread_mutex_unlock(&f->lock);
	}
	if (atomic_fetch_sub_explicit(&f->refs, drop, memory_order_acq_rel) == drop)
		fence_destroy(f);
	return NULL;
}

/* Status from the points alone: what the fence is now, by its rule. */
int fl__fence_compute_status(const struct fl_fence *f)
{
	int first_error = 0;
	bool all_done = true;

	for (uint32_t i = 0; i < f->n; i++) {
		int s = atomic_load_explicit(&f->m[i].pt->status, memory_order_acquire);

		if (s < 0 && !first_error)
			first_error = s;
		else if (s == 0)
			all_done = false;
	}
	if (first_error && (all_done || !(f->flags & FL_MERGE_WAIT_ALL)))
		return first_error;
	return all_done ? FL_STATUS_SIGNALED : FL_STATUS_ACTIVE;
}

uint64_t fl__fence_timestamp(const struct fl_fence *f, int status)
{
	uint64_t ts = 0;

	for (uint32_t i = 0; i < f->n; i++) {
		const struct fl_sync_pt *pt = f->m[i].pt;
		int s = atomic_load_explicit(&((struct fl_sync_pt *)pt)->status,
					     memory_order_acquire);
		uint64_t t = atomic_load_explicit(&((struct fl_sync_pt *)pt)->timestamp_ns,
						  memory_order_relaxed);

		if (status < 0 && s == status && !(f->flags & FL_MERGE_WAIT_ALL))
			return t;
		if (s != 0 && t > ts)
			ts = t;
	}
	return status == 0 ? 0 : ts;
}

/* Try to make @status the fence's final status; true for the one caller that does. */
static bool settle(struct fl_fence *f, int status)
{
	int expected = 0;

	return status != 0 && atomic_compare_exchange_strong(&f->status, &expected, status);
}

bool fl__member_done(struct fl_fence *f, int status)
{
	int left = atomic_fetch_sub(&f->pending, 1) - 1;

	if (left > 0 && (status > 0 || (f->flags & FL_MERGE_WAIT_ALL)))
		return false;
	return settle(f, fl__fence_compute_status(f));
}

int fl__fence_status(struct fl_fence *f)
{
	int s = atomic_load(&f->status);

	if (s)
		return s;
	s = fl__fence_compute_status(f);
	if (settle(f, s))
		fl__fence_complete(f);
	return atomic_load(&f->status);
}

FL_EXPORT int fl_fence_get_status(struct fl_fence *f)
{
	fl_return_if(!f, -EINVAL);
	return fl__fence_status(f);
}

void fl__fence_link_members(struct fl_fence *f)
{
	bool complete = false;

	for (uint32_t i = 0; i < f->n; i++) {
		struct fl__member *m = &f->m[i];
		struct fl_timeline *tl = m->pt->tl;
		int s;

		pthread_mutex_lock(&tl->lock);
		s = atomic_load_explicit(&m->pt->status, memory_order_acquire);
		if (s == 0) {
			m->next = m->pt->waiters;
			if (m->next)
				m->next->pprev = &m->next;
			m->pprev = &m->pt->waiters;
			m->pt->waiters = m;
		} else if (fl__member_done(f, s)) {
			complete = true;
		}
		pthread_mutex_unlock(&tl->lock);
	}
	if (complete)
		fl__fence_complete(f);
}

bool fl__fence_arm_locked(struct fl_fence *f)
{
	/* Dropped by fl__fence_complete(), or by fl_fence_unref() when unneeded. */
	if (!atomic_load_explicit(&f->self_ref, memory_order_relaxed)) {
		atomic_store_explicit(&f->self_ref, true, memory_order_relaxed);
		fl_fence_ref(f);
	}
	/* Armed once: its members stay linked until it completes or is freed. */
	if (f->armed)
		return false;
	f->armed = true;
	atomic_store(&f->pending, (int)f->n);
	return true;
}

int fl__fence_arm(struct fl_fence *f)
{
	bool link;
	int s = fl__fence_status(f);

	if (s)
		return s;
	pthread_mutex_lock(&f->lock);
	link = !f->completed && fl__fence_arm_locked(f);
	pthread_mutex_unlock(&f->lock);
	if (link)
		fl__fence_link_members(f);
	return atomic_load(&f->status);
}

void fl__fence_complete(struct fl_fence *f)
{
	int status = atomic_load(&f->status);
	uint64_t ts = fl__fence_timestamp(f, status);
	struct fl__sink *s;
	bool drop_self;

	pthread_mutex_lock(&f->lock);
	if (f->completed) {
		pthread_mutex_unlock(&f->lock);
		return;
	}
	f->completed = true;
	drop_self = atomic_load_explicit(&f->self_ref, memory_order_relaxed);
	atomic_store_explicit(&f->self_ref, false, memory_order_relaxed);
	FL_LOG("fence", "'%s' completed with status %d", f->name, status);
	FL_PROBE3(fence_signal, f->id, status, f->name);
	/* Records are written under the lock so a sink cannot be closed meanwhile. */
	while ((s = f->sinks)) {
		f->sinks = fl__sink_next(s);
		fl__sink_set_next(s, NULL);
		fl__sink_write_locked(s, status, ts);
	}
	if (f->own_sink)
		fl__sink_write_locked(f->own_sink, status, ts);
	pthread_mutex_unlock(&f->lock);

	if (atomic_load(&f->nwaiters))
		fl__futex_wake_all(&f->status);
	{
		void *arg;
		const struct fl__observer *o = fl__observer_get(&arg);

		if (o && o->fence_done)
			o->fence_done(f, status, ts, arg);
	}

	pthread_mutex_lock(&f->lock);
	while (f->cbs) {
		struct fl_fence_cb *cb = f->cbs;

		f->cbs = cb->next;
		if (f->cbs)
			f->cbs->pprev = &f->cbs;
		else
			f->cbs_tail = &f->cbs;
		cb->next = NULL;
		cb->pprev = NULL;
		cb->fence = NULL;
		f->running_cb = cb;
		f->running_thread = pthread_self();
		pthread_mutex_unlock(&f->lock);
		cb->func(f, cb); /* may free cb: not touched again */
		pthread_mutex_lock(&f->lock);
		f->running_cb = NULL;
		pthread_cond_broadcast(&f->cb_done);
	}
	pthread_mutex_unlock(&f->lock);
	if (drop_self)
		fl_fence_unref(f);
}

FL_EXPORT int fl_fence_add_callback(struct fl_fence *f, struct fl_fence_cb *cb, fl_fence_cb_t func)
{
	bool link;

	fl_return_if(!f || !cb || !func, -EINVAL);
	if (fl__fence_status(f))
		return -ENOENT;
	pthread_mutex_lock(&f->lock);
	if (f->completed || atomic_load(&f->status)) {
		pthread_mutex_unlock(&f->lock);
		return -ENOENT;
	}
	cb->func = func;
	cb->fence = f;
	cb->next = NULL;
	cb->pprev = f->cbs_tail;
	*f->cbs_tail = cb;
	f->cbs_tail = &cb->next;
	link = fl__fence_arm_locked(f);
	pthread_mutex_unlock(&f->lock);
	if (link)
		fl__fence_link_members(f);
	return 0;
}

FL_EXPORT int fl_fence_remove_callback(struct fl_fence *f, struct fl_fence_cb *cb)
{
	fl_return_if(!f || !cb, -EINVAL);
	pthread_mutex_lock(&f->lock);
	if (cb->pprev) {
		if (cb->fence != f) {
			pthread_mutex_unlock(&f->lock);
			return -EINVAL;
		}
		*cb->pprev = cb->next;
		if (cb->next)
			cb->next->pprev = cb->pprev;
		else
			f->cbs_tail = cb->pprev;
		cb->next = NULL;
		cb->pprev = NULL;
		cb->fence = NULL;
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	/* Running in another thread right now: wait until it has returned. */
	while (f->running_cb == cb && !pthread_equal(f->running_thread, pthread_self()))
		pthread_cond_wait(&f->cb_done, &f->lock);
	pthread_mutex_unlock(&f->lock);
	return 0;
}

FL_EXPORT const char *fl_fence_get_name(const struct fl_fence *f)
{
	return f ? f->name : "";
}

FL_EXPORT int fl_fence_get_num_points(const struct fl_fence *f)
{
	fl_return_if(!f, -EINVAL);
	return (int)f->n;
}

/* SPDX-License-Identifier: MIT */
/*
 * Merging: the union of two fences' points, at most one per timeline. Both
 * inputs keep their points sorted by timeline id, so a merge is one linear
 * pass, its result is sorted too, and it does not depend on argument order
 * (except that on a tie the point of @a is kept).
 *
 * FL_MERGE_MAINLINE follows dma_fence_unwrap_merge() instead: completed
 * points are left out, and a merge with nothing left is the stub fence.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core.h"

/* Which of two points on the same timeline a merge keeps. */
static struct fl_sync_pt *pick(struct fl_sync_pt *a, struct fl_sync_pt *b)
{
	int sa = fl_sync_pt_get_status(a), sb = fl_sync_pt_get_status(b);

	if (a == b)
		return a;
	/* A failure that has happened is never dropped (the kernel drops it). */
	if ((sa < 0) != (sb < 0))
		return sa < 0 ? a : b;
	return fl__pt_compare(a, b) >= 0 ? a : b;
}

/* A private copy of @src for drivers with a dup op. */
static int dup_point(struct fl_sync_pt *src, struct fl_sync_pt **ret)
{
	struct fl_timeline *tl = src->tl;
	struct fl_sync_pt *pt = fl__pt_alloc(tl, src->value);
	int r, s;

	if (!pt)
		return -ENOMEM;
	r = tl->ops->dup(pt, src);
	if (r < 0) {
		fl__pt_unref(pt);
		return r;
	}
	pthread_mutex_lock(&tl->lock);
	s = atomic_load_explicit(&src->status, memory_order_acquire);
	if (s) {
		atomic_store_explicit(&pt->timestamp_ns, atomic_load(&src->timestamp_ns),
				      memory_order_relaxed);
		atomic_store_explicit(&pt->status, s, memory_order_release);
	} else {
		fl__pt_activate_locked(pt);
	}
	pthread_mutex_unlock(&tl->lock);
	*ret = pt;
	return 0;
}

/* The kernel's dma_fence_stub: one timeline, born signalled, never dying. */
static int stub_has_signaled(struct fl_sync_pt *pt)
{
	(void)pt;
	return 1;
}

static const struct fl_timeline_ops stub_ops = {
	.driver_name = "stub",
	.has_signaled = stub_has_signaled,
};

static struct fl_timeline *stub_timeline;
static pthread_once_t stub_once = PTHREAD_ONCE_INIT;

static void stub_init(void)
{
	if (fl_timeline_create(&stub_ops, "stub", NULL, &stub_timeline) < 0)
		stub_timeline = NULL;
}

/* A signalled point stamped @timestamp_ns, like dma_fence_allocate_private_stub(). */
static struct fl_sync_pt *stub_point(uint64_t timestamp_ns)
{
	struct fl_sync_pt *pt;

	pthread_once(&stub_once, stub_init);
	if (!stub_timeline)
		return NULL;
	pt = fl__pt_alloc(stub_timeline, 0);
	if (!pt)
		return NULL;
	pthread_mutex_lock(&stub_timeline->lock);
	atomic_store_explicit(&pt->timestamp_ns, timestamp_ns, memory_order_relaxed);
	atomic_store_explicit(&pt->status, FL_STATUS_SIGNALED, memory_order_release);
	pthread_mutex_unlock(&stub_timeline->lock);
	return pt;
}

/*
 * Under FL_MERGE_MAINLINE, whether to leave @pt out because it completed;
 * *latest keeps the latest timestamp of those left out.
 */
static bool left_out(struct fl_sync_pt *pt, unsigned int flags, uint64_t *latest)
{
	uint64_t ts;

	if (!(flags & FL_MERGE_MAINLINE) || !fl_sync_pt_get_status(pt))
		return false;
	ts = atomic_load_explicit(&pt->timestamp_ns, memory_order_relaxed);
	if (ts > *latest)
		*latest = ts;
	return true;
}

FL_EXPORT int fl_fence_merge(struct fl_fence *a, struct fl_fence *b, const char *name,
			     unsigned int flags, struct fl_fence **ret_fence)
{
	struct fl_sync_pt *chosen_stack[16], **chosen = chosen_stack;
	uint32_t i = 0, j = 0, n = 0, cap = a && b ? a->n + b->n : 0;
	uint64_t latest = 0;
	struct fl_fence *f;
	int r = 0;

	fl_return_if(!a || !b || !ret_fence, -EINVAL);
	fl_return_if(flags & ~(unsigned int)(FL_MERGE_WAIT_ALL | FL_MERGE_MAINLINE), -EINVAL);
	if (cap > FL_ARRAY_SIZE(chosen_stack)) {
		chosen = malloc(cap * sizeof(*chosen));
		if (!chosen)
			return -ENOMEM;
	}
	while (i < a->n || j < b->n) {
		struct fl_sync_pt *pa = i < a->n ? a->m[i].pt : NULL;
		struct fl_sync_pt *pb = j < b->n ? b->m[j].pt : NULL;

		if (pa && left_out(pa, flags, &latest)) {
			i++;
			continue;
		}
		if (pb && left_out(pb, flags, &latest)) {
			j++;
			continue;
		}
		if (pa && pb && pa->tl->id == pb->tl->id) {
			chosen[n++] = pick(pa, pb);
			i++;
			j++;
		} else if (pa && (!pb || pa->tl->id < pb->tl->id)) {
			chosen[n++] = pa;
			i++;
		} else {
			chosen[n++] = pb;
			j++;
		}
	}

	if (!name || !*name)
		name = flags & FL_MERGE_MAINLINE ? "" : "merged";
	if (n == 0) {
		/* Only under FL_MERGE_MAINLINE: every point had completed. */
		f = fl__fence_alloc(1, name, flags);
		if (f && !(f->m[0].pt = stub_point(latest))) {
			fl_fence_unref(f);
			f = NULL;
		}
		if (!f) {
			r = -ENOMEM;
			goto out;
		}
		fl__fence_publish(f);
		*ret_fence = f;
		goto out;
	}
	f = fl__fence_alloc(n, name, flags);
	if (!f) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (chosen[i]->tl->ops->dup) {
			r = dup_point(chosen[i], &f->m[i].pt);
			if (r < 0) {
				fl_fence_unref(f);
				goto out;
			}
		} else {
			fl__pt_ref(chosen[i]);
			f->m[i].pt = chosen[i];
		}
	}
	fl__fence_publish(f);
	FL_PROBE4(fence_merge, f->id, a->id, b->id, f->name);
	*ret_fence = f;
out:
	if (chosen != chosen_stack)
		free(chosen);
	return r;
}

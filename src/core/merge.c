/* SPDX-License-Identifier: MIT */
/*
 * Merging: the union of two fences' points, at most one per timeline. Both
 * inputs keep their points sorted by timeline id, so a merge is one linear
 * pass, its result is sorted too, and it does not depend on argument order
 * (except that on a tie the point of @a is kept).
 */
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

FL_EXPORT int fl_fence_merge(struct fl_fence *a, struct fl_fence *b, const char *name,
			     unsigned int flags, struct fl_fence **ret_fence)
{
	struct fl_sync_pt *chosen_stack[16], **chosen = chosen_stack;
	uint32_t i = 0, j = 0, n = 0, cap = a && b ? a->n + b->n : 0;
	struct fl_fence *f;
	int r = 0;

	fl_return_if(!a || !b || !ret_fence, -EINVAL);
	fl_return_if(flags & ~(unsigned int)FL_MERGE_WAIT_ALL, -EINVAL);
	if (cap > FL_ARRAY_SIZE(chosen_stack)) {
		chosen = malloc(cap * sizeof(*chosen));
		if (!chosen)
			return -ENOMEM;
	}
	while (i < a->n || j < b->n) {
		struct fl_sync_pt *pa = i < a->n ? a->m[i].pt : NULL;
		struct fl_sync_pt *pb = j < b->n ? b->m[j].pt : NULL;

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

	f = fl__fence_alloc(n, name && *name ? name : "merged", flags);
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
	*ret_fence = f;
out:
	if (chosen != chosen_stack)
		free(chosen);
	return r;
}

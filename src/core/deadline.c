/* SPDX-License-Identifier: MIT */
/*
 * Deadline hints, as dma_fence_set_deadline(): passed down to the driver of
 * every pending point, which records or uses them; the core keeps none.
 */
#include "core.h"

FL_EXPORT int fl_fence_set_deadline(struct fl_fence *f, uint64_t deadline_ns)
{
	fl_return_if(!f, -EINVAL);
	for (uint32_t i = 0; i < f->n; i++) {
		struct fl_sync_pt *pt = f->m[i].pt;
		struct fl_timeline *tl = pt->tl;

		if (!tl->ops->set_deadline)
			continue;
		/* Under the lock, so that a point signalling now is either told or done. */
		pthread_mutex_lock(&tl->lock);
		if (!atomic_load_explicit(&pt->status, memory_order_acquire))
			tl->ops->set_deadline(pt, deadline_ns);
		pthread_mutex_unlock(&tl->lock);
	}
	return 0;
}

FL_EXPORT int fl_fence_get_deadline(struct fl_fence *f, uint64_t *ret_ns)
{
	struct fl_sync_pt *pt;
	int r;

	fl_return_if(!f || !ret_ns, -EINVAL);
	if (f->n != 1 || !f->m[0].pt->tl->ops->get_deadline)
		return -EINVAL;
	pt = f->m[0].pt;
	pthread_mutex_lock(&pt->tl->lock);
	r = pt->tl->ops->get_deadline(pt, ret_ns);
	pthread_mutex_unlock(&pt->tl->lock);
	return r;
}

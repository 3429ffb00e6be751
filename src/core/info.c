/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "core.h"

FL_EXPORT int fl_fence_get_info(struct fl_fence *f, struct fl_fence_info *ret_info,
				struct fl_sync_pt_info *points, uint32_t max_points)
{
	uint32_t i, n;
	int status;

	fl_return_if(!f || (max_points && !points), -EINVAL);
	status = fl__fence_status(f);
	if (ret_info) {
		memset(ret_info, 0, sizeof(*ret_info));
		memcpy(ret_info->name, f->name, sizeof(ret_info->name));
		ret_info->status = status;
		ret_info->num_points = f->n;
		ret_info->timestamp_ns = fl__fence_timestamp(f, status);
	}
	n = FL_MIN(max_points, f->n);
	for (i = 0; i < n; i++) {
		struct fl_sync_pt *pt = f->m[i].pt;
		struct fl_sync_pt_info *p = &points[i];
		int s = atomic_load_explicit(&pt->status, memory_order_acquire);

		memset(p, 0, sizeof(*p));
		memcpy(p->timeline_name, pt->tl->name, sizeof(p->timeline_name));
		fl__name_copy(p->driver_name, sizeof(p->driver_name), pt->tl->ops->driver_name);
		p->status = s;
		p->timestamp_ns =
			s ? atomic_load_explicit(&pt->timestamp_ns, memory_order_relaxed) : 0;
		p->value = pt->value;
		p->timeline_id = pt->tl->id;
	}
	return (int)n;
}

FL_EXPORT int fl_fence_get_point_driver_data(struct fl_fence *f, uint32_t index, void *buf,
					     size_t size)
{
	struct fl_sync_pt *pt;

	fl_return_if(!f || index >= f->n || (size && !buf), -EINVAL);
	pt = f->m[index].pt;
	if (!pt->tl->ops->fill_driver_data)
		return 0;
	return pt->tl->ops->fill_driver_data(pt, buf, size);
}

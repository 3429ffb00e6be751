/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/sync_file.h>

#include <fenceline/fence.h>
#include <fenceline/shared.h>

#include "libsync-private.h"

static void set_status(struct fl__libsync_snapshot *snap, int n)
{
	/*
	 * Computed from the entries themselves, so that the status agrees with
	 * the entries the caller sees even if the fence completes meanwhile.
	 */
	snap->status = FL_STATUS_SIGNALED;
	for (int i = 0; i < n; i++) {
		if (snap->points[i].status <= 0) {
			snap->status = snap->points[i].status;
			break;
		}
	}
}

/* A fence fd this process does not own (the daemon's): ask through the fd. */
static int snapshot_by_fd(struct fl__libsync_snapshot *snap, int fd)
{
	struct fl_sync_pt_info *points;
	struct fl_fence_info info;
	uint32_t n;
	int r;

	/* Only the count: the fill below reads everything again, timestamps too. */
	r = fl_fence_fd_get_info_flags(fd, FL_INFO_NO_TIMESTAMPS, &info, NULL, 0);
	if (r < 0)
		return r;
	n = info.num_points;
	points = calloc(n ? n : 1, sizeof(*points));
	if (!points)
		return -ENOMEM;
	r = fl_fence_fd_get_info(fd, &info, points, n);
	/* A fence's points never change; this only guards a confused daemon. */
	if (r >= 0 && ((uint32_t)r != n || info.num_points != n))
		r = -EIO;
	if (r < 0) {
		free(points);
		return r;
	}
	snap->fence = NULL;
	snap->info = info;
	snap->points = points;
	set_status(snap, r);
	return 0;
}

int fl__libsync_snapshot_init(struct fl__libsync_snapshot *snap, int fd)
{
	struct fl_fence *fence;
	struct fl_sync_pt_info *points;
	struct fl_fence_info info;
	int n, r;

	if (fd < 0)
		return -EBADF;
	r = fl_fence_from_fd(fd, &fence);
	if (r == -ENOTTY)
		return snapshot_by_fd(snap, fd);
	if (r < 0)
		return r;

	/* A fence's points never change, so the count stays right for the fill. */
	n = fl_fence_get_num_points(fence);
	if (n < 0) {
		fl_fence_unref(fence);
		return n;
	}
	points = calloc((size_t)n, sizeof(*points));
	if (!points) {
		fl_fence_unref(fence);
		return -ENOMEM;
	}
	r = fl_fence_get_info(fence, &info, points, (uint32_t)n);
	if (r < 0) {
		free(points);
		fl_fence_unref(fence);
		return r;
	}

	snap->fence = fence;
	snap->info = info;
	snap->info.num_points = (uint32_t)r;
	snap->points = points;
	set_status(snap, r);
	return 0;
}

void fl__libsync_snapshot_finish(struct fl__libsync_snapshot *snap)
{
	free(snap->points);
	snap->points = NULL;
	if (snap->fence)
		snap->fence = fl_fence_unref(snap->fence);
}

struct sync_file_info *fl__libsync_kernel_file_info(int fd)
{
	struct sync_file_info head, *info;
	size_t n;
	int saved;

	memset(&head, 0, sizeof(head));
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &head) < 0)
		return NULL;

	n = head.num_fences;
	info = calloc(1, sizeof(*info) + n * sizeof(struct sync_fence_info));
	if (!info)
		return NULL;
	info->num_fences = (uint32_t)n;
	info->sync_fence_info = (uint64_t)(uintptr_t)(info + 1);
	if (ioctl(fd, SYNC_IOC_FILE_INFO, info) < 0) {
		saved = errno;
		free(info);
		errno = saved;
		return NULL;
	}
	return info;
}

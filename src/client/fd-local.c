/* SPDX-License-Identifier: MIT */
/*
 * The fd API's in-process backend (fdbackend.h): fds this process's core
 * made, found by the inode the fd API read, so that asking costs a hash
 * lookup and no syscall; everything else is FL__FD_NOT_MINE.
 */
#include <errno.h>

#include <fenceline/fence.h>
#include <fenceline/sw_sync.h>
#include <fenceline/sync_file.h>
#include <fenceline/timeline.h>

#include "fdbackend.h"
#include "host.h"
#include "util.h"

/* The sw_sync timeline behind @ref: 0, -ENOTTY (ours, but a driver's), or not mine. */
static int local_timeline(const struct fl__fdref *ref, struct fl_timeline **ret)
{
	if (fl__timeline_from_key(ref->dev, ref->ino, ret) < 0)
		return FL__FD_NOT_MINE;
	if (!fl_timeline_is_sw_sync(*ret)) {
		fl_timeline_unref(*ret);
		return -ENOTTY; /* driven by a driver, not by counting: no sw_sync fd */
	}
	return 0;
}

static int local_fence(const struct fl__fdref *ref, struct fl_fence **ret)
{
	return fl__fence_from_key(ref->dev, ref->ino, ret) < 0 ? FL__FD_NOT_MINE : 0;
}

/* @f (its reference is taken) as a new fd in *@ret_fd. */
static int export_fence(struct fl_fence *f, int *ret_fd)
{
	int r = fl_fence_export_fd(f, ret_fd);

	fl_fence_unref(f);
	return r;
}

static int timeline_create(const char *name, unsigned int flags, int *ret_fd)
{
	struct fl_timeline *tl;
	int r = fl_sw_sync_timeline_create(name, flags, &tl);

	if (r < 0)
		return r;
	r = fl_timeline_export_fd(tl, ret_fd);
	fl_timeline_unref(tl); /* the fd is the handle now */
	return r;
}

static int timeline_inc(const struct fl__fdref *ref, uint64_t count, uint64_t stamp_ns)
{
	struct fl_timeline *tl;
	int r = local_timeline(ref, &tl);

	if (r != 0)
		return r;
	if (stamp_ns && (stamp_ns > fl__now_ns() || stamp_ns < fl__timeline_last_stamp(tl))) {
		fl_timeline_unref(tl);
		return -EINVAL;
	}
	fl__timeline_signal_stamp(stamp_ns);
	r = fl_sw_sync_timeline_inc(tl, count);
	fl__timeline_signal_stamp(0);
	fl_timeline_unref(tl);
	return r;
}

static int timeline_fail(const struct fl__fdref *ref, int status)
{
	struct fl_timeline *tl;
	int r = local_timeline(ref, &tl);

	if (r != 0)
		return r;
	r = fl_timeline_fail_pending(tl, status);
	fl_timeline_unref(tl);
	return r;
}

static int timeline_get_value(const struct fl__fdref *ref, uint64_t *ret_value)
{
	struct fl_timeline *tl;
	int r = local_timeline(ref, &tl);

	if (r != 0)
		return r;
	r = fl_sw_sync_timeline_get_value(tl, ret_value);
	fl_timeline_unref(tl);
	return r;
}

static int fence_create(const struct fl__fdref *ref, uint64_t value, const char *name, int *ret_fd)
{
	struct fl_timeline *tl;
	struct fl_fence *f;
	int r = local_timeline(ref, &tl);

	if (r != 0)
		return r;
	r = fl_sw_sync_fence_create(tl, value, name, &f);
	fl_timeline_unref(tl);
	return r < 0 ? r : export_fence(f, ret_fd);
}

static int fence_merge(const struct fl__fdref *ref, int fd2, const char *name, unsigned int flags,
		       int *ret_fd)
{
	struct fl_fence *a, *b, *m;
	int r = local_fence(ref, &a);

	if (r != 0)
		return r;
	/* Both fences must be this process's: like the kernel's, for any other fd. */
	if (fd2 < 0 || fl_fence_from_fd(fd2, &b) < 0) {
		fl_fence_unref(a);
		return -ENOENT;
	}
	r = fl_fence_merge(a, b, name, flags, &m);
	fl_fence_unref(a);
	fl_fence_unref(b);
	return r < 0 ? r : export_fence(m, ret_fd);
}

/* The core keeps its timestamps: nothing to skip for FL_INFO_NO_TIMESTAMPS. */
static int fence_get_info(const struct fl__fdref *ref, unsigned int flags,
			  struct fl_fence_info *ret_info, struct fl_sync_pt_info *points,
			  uint32_t max_points)
{
	struct fl_fence *f;
	int r = local_fence(ref, &f);

	if (r != 0)
		return r;
	r = fl_fence_get_info(f, ret_info, points, max_points);
	fl_fence_unref(f);
	return r;
}

static int fence_import(int sync_file_fd, const char *name, int *ret_fd)
{
	struct fl_fence *f;
	int r = fl_sync_file_import(sync_file_fd, name, &f);

	return r < 0 ? r : export_fence(f, ret_fd);
}

static int fence_set_deadline(const struct fl__fdref *ref, uint64_t deadline_ns)
{
	struct fl_fence *f;
	int r = local_fence(ref, &f);

	if (r != 0)
		return r;
	r = fl_fence_set_deadline(f, deadline_ns);
	fl_fence_unref(f);
	return r;
}

static int fence_get_deadline(const struct fl__fdref *ref, uint64_t *ret_ns)
{
	struct fl_fence *f;
	int r = local_fence(ref, &f);

	if (r != 0)
		return r;
	r = fl_fence_get_deadline(f, ret_ns);
	fl_fence_unref(f);
	return r;
}

const struct fl__fd_backend_ops fl__fd_local_ops = {
	.name = "in-process",
	.timeline_create = timeline_create,
	.timeline_inc = timeline_inc,
	.timeline_fail = timeline_fail,
	.timeline_get_value = timeline_get_value,
	.fence_create = fence_create,
	.fence_merge = fence_merge,
	.fence_get_info = fence_get_info,
	.fence_import = fence_import,
	.fence_set_deadline = fence_set_deadline,
	.fence_get_deadline = fence_get_deadline,
};

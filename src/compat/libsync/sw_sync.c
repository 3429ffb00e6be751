/* SPDX-License-Identifier: MIT */
/*
 * libsync's sw_sync helpers on fenceline's sw_sync driver. The timeline fd is
 * the only handle on the timeline: closing its last copy kills the
 * timeline, which fails the fences still pending on it with -ENOENT, as
 * closing the kernel's sw_sync file does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <sw_sync.h>

#include <fenceline/export.h>
#include <fenceline/fence.h>
#include <fenceline/sw_sync.h>
#include <fenceline/timeline.h>

#include "libsync-private.h"

FL_EXPORT int sw_sync_timeline_create(void)
{
	char comm[FL_NAME_MAX] = "";
	struct fl_timeline *tl;
	int r, fd, flags;

	/*
	 * The kernel names a sw_sync timeline after the comm of the thread
	 * that opens the device; PR_GET_NAME is that same 16-byte name.
	 */
	if (prctl(PR_GET_NAME, comm, 0, 0, 0) < 0)
		comm[0] = '\0';
	comm[sizeof(comm) - 1] = '\0';

	/* 32-bit: wrap-around and increments exactly like the kernel's. */
	r = fl_sw_sync_timeline_create(comm[0] ? comm : NULL, FL_SW_SYNC_32BIT, &tl);
	if (r < 0)
		return fl__libsync_fail(r);
	r = fl_timeline_export_fd(tl, &fd);
	/* From here on the fd is the handle (or, on failure, the timeline dies). */
	fl_timeline_unref(tl);
	if (r < 0)
		return fl__libsync_fail(r);

	/* libsync opens the device without O_CLOEXEC; children inherit it. */
	flags = fcntl(fd, F_GETFD);
	if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0) {
		r = -errno;
		close(fd);
		return fl__libsync_fail(r);
	}
	return fd;
}

/*
 * The sw_sync timeline behind @fd. ENOTTY for an fd that is open but is not
 * a sw_sync timeline: that is what the kernel ioctl answers there.
 */
static int timeline_from_fd(int fd, struct fl_timeline **ret_timeline)
{
	struct fl_timeline *tl;
	int r;

	if (fd < 0)
		return -EBADF;
	r = fl_timeline_from_fd(fd, &tl);
	if (r < 0)
		return r;
	if (!fl_timeline_is_sw_sync(tl)) {
		fl_timeline_unref(tl);
		return -ENOTTY;
	}
	*ret_timeline = tl;
	return 0;
}

FL_EXPORT int sw_sync_timeline_inc(int fd, unsigned count)
{
	struct fl_timeline *tl;
	int r;

	r = timeline_from_fd(fd, &tl);
	if (r < 0)
		return fl__libsync_fail(r);
	r = fl_sw_sync_timeline_inc(tl, count);
	fl_timeline_unref(tl);
	if (r < 0)
		return fl__libsync_fail(r);
	return 0;
}

FL_EXPORT int sw_sync_fence_create(int fd, const char *name, unsigned value)
{
	struct fl_timeline *tl;
	struct fl_fence *fence;
	int r, fence_fd;

	r = timeline_from_fd(fd, &tl);
	if (r < 0)
		return fl__libsync_fail(r);
	/* libsync would crash on NULL; an empty name is the harmless reading. */
	r = fl_sw_sync_fence_create(tl, value, name ? name : "", &fence);
	fl_timeline_unref(tl);
	if (r < 0)
		return fl__libsync_fail(r);
	r = fl_fence_export_fd(fence, &fence_fd);
	fl_fence_unref(fence);
	if (r < 0)
		return fl__libsync_fail(r);
	return fence_fd;
}

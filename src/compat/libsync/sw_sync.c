/* SPDX-License-Identifier: MIT */
/*
 * libsync's sw_sync helpers on fenceline's fd API (<fenceline/shared.h>):
 * in the daemon by default, so the fds work across processes. The timeline
 * fd is the only handle on the timeline: closing its last copy kills the
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
#include <fenceline/shared.h>
#include <fenceline/sw_sync.h>
#include <fenceline/timeline.h>

#include "libsync-private.h"

FL_EXPORT int sw_sync_timeline_create(void)
{
	char comm[FL_NAME_MAX] = "";
	int r, fd, flags;

	/*
	 * The kernel names a sw_sync timeline after the comm of the thread
	 * that opens the device; PR_GET_NAME is that same 16-byte name.
	 */
	if (prctl(PR_GET_NAME, comm, 0, 0, 0) < 0)
		comm[0] = '\0';
	comm[sizeof(comm) - 1] = '\0';

	/*
	 * 32-bit: wrap-around and increments exactly like the kernel's. In the
	 * daemon unless FENCELINE_MODE / fl_mode_set() chose in-process.
	 */
	r = fl_timeline_fd_create(comm[0] ? comm : NULL, FL_SW_SYNC_32BIT, &fd);
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

FL_EXPORT int sw_sync_timeline_inc(int fd, unsigned count)
{
	int r = fl_timeline_fd_inc(fd, count);

	return r < 0 ? fl__libsync_fail(r) : 0;
}

FL_EXPORT int sw_sync_fence_create(int fd, const char *name, unsigned value)
{
	int r, fence_fd;

	/* libsync would crash on NULL; an empty name is the harmless reading. */
	r = fl_fence_fd_create(fd, value, name ? name : "", &fence_fd);
	if (r < 0)
		return fl__libsync_fail(r);
	return fence_fd;
}

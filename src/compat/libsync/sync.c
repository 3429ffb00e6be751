/* SPDX-License-Identifier: MIT */
/*
 * The NDK/platform part of libsync: sync_wait(), sync_merge() and
 * sync_file_info(), on fenceline fence fds and, passed through to the
 * kernel, on kernel sync_file fds.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <android/sync.h>

#include <fenceline/export.h>
#include <fenceline/fence.h>
#include <fenceline/shared.h>

#include "libsync-private.h"

/* FENCELINE_WAIT_EDEADLK=1: sync_wait() fails with EDEADLK instead of deadlocking. */
static unsigned int wait_flags(void)
{
	const char *e = getenv("FENCELINE_WAIT_EDEADLK");

	return e && *e == '1' ? FL_WAIT_DEADLOCK_ERROR : 0;
}

FL_EXPORT int sync_wait(int fd, int timeout)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
	struct fl_wait_report w = { 0, -1 };
	int r, refused = 0;

	if (fd < 0) {
		errno = EINVAL;
		return -1;
	}
	/* A fence this process just created on a passed value reads signalled. */
	fl_daemon_flush();
	/* About to block on a fence of the daemon: let it see who waits on what. */
	if (timeout != 0 && fl_fence_fd_get_status(fd) == 0) {
		fl_fence_fd_wait_begin(fd, timeout, wait_flags(), &w);
		pfd[1].fd = w.notify_fd;
	}
	/* libsync restarts with the full timeout; so do we, for drop-in timing. */
	for (;;) {
		r = poll(pfd, pfd[1].fd >= 0 ? 2 : 1, timeout);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r > 0 && pfd[1].fd >= 0 && pfd[1].revents) {
			refused = fl_fence_fd_wait_notified(&w);
			if (refused < 0)
				break;
			if (pfd[1].revents & (POLLHUP | POLLERR))
				pfd[1].fd = -1; /* the daemon is done with this wait */
			if (!pfd[0].revents)
				continue;
		}
		break;
	}
	if (refused < 0) {
		fl_fence_fd_wait_end(&w, refused);
		errno = -refused;
		return -1;
	}
	if (r < 0) {
		int e = errno;

		fl_fence_fd_wait_end(&w, -e);
		errno = e;
		return -1;
	}
	if (r == 0) {
		fl_fence_fd_wait_end(&w, -ETIME);
		errno = ETIME;
		return -1;
	}
	fl_fence_fd_wait_end(&w, (pfd[0].revents & (POLLERR | POLLNVAL)) ? -EINVAL : 1);
	if (pfd[0].revents & (POLLERR | POLLNVAL)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static int32_t kernel_merge(const char *name, int32_t fd1, int32_t fd2)
{
	struct sync_merge_data data;

	memset(&data, 0, sizeof(data));
	fl__libsync_copy_name(data.name, sizeof(data.name), name);
	data.fd2 = fd2;
	if (ioctl(fd1, SYNC_IOC_MERGE, &data) < 0)
		return -1;
	return data.fence;
}

FL_EXPORT int32_t sync_merge(const char *name, int32_t fd1, int32_t fd2)
{
	int r, fd;

	if (!name)
		name = "";
	if (fd1 < 0)
		return fl__libsync_fail(-EBADF);
	/* WAIT_ALL completes like the kernel's dma_fence_array. */
	r = fl_fence_fd_merge(fd1, fd2, name, FL_MERGE_WAIT_ALL, &fd);
	if (r == -ENOTTY) {
		/*
		 * Not ours: let the fd's own driver answer, as libsync would. A
		 * kernel sync_file merges with another one (and answers ENOENT
		 * for a fenceline @fd2); other fds typically answer ENOTTY.
		 */
		return kernel_merge(name, fd1, fd2);
	}
	if (r < 0)
		return fl__libsync_fail(r);
	return fd;
}

static struct sync_file_info *file_info_from_snapshot(const struct fl__libsync_snapshot *snap)
{
	uint32_t n = snap->info.num_points;
	struct sync_fence_info *entries;
	struct sync_file_info *info;

	info = calloc(1, sizeof(*info) + n * sizeof(*entries));
	if (!info)
		return NULL;
	entries = (struct sync_fence_info *)(info + 1);

	fl__libsync_copy_name(info->name, sizeof(info->name), snap->info.name);
	info->status = snap->status;
	info->num_fences = n;
	info->sync_fence_info = (uint64_t)(uintptr_t)entries;
	for (uint32_t i = 0; i < n; i++) {
		const struct fl_sync_pt_info *pt = &snap->points[i];

		fl__libsync_copy_name(entries[i].obj_name, sizeof(entries[i].obj_name),
				      pt->timeline_name);
		fl__libsync_copy_name(entries[i].driver_name, sizeof(entries[i].driver_name),
				      pt->driver_name);
		entries[i].status = pt->status;
		entries[i].flags = 0;
		entries[i].timestamp_ns = pt->timestamp_ns;
	}
	return info;
}

FL_EXPORT struct sync_file_info *sync_file_info(int32_t fd)
{
	struct fl__libsync_snapshot snap;
	struct sync_file_info *info;
	int r;

	r = fl__libsync_snapshot_init(&snap, fd);
	if (r == -ENOTTY)
		return fl__libsync_kernel_file_info(fd);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	info = file_info_from_snapshot(&snap);
	fl__libsync_snapshot_finish(&snap);
	if (!info)
		errno = ENOMEM;
	return info;
}

FL_EXPORT void sync_file_info_free(struct sync_file_info *info)
{
	free(info);
}

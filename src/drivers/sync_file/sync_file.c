/* SPDX-License-Identifier: MIT */
/*
 * sync_file: a timeline of one point that follows a kernel sync_file. The
 * kernel fence polls readable once it has signalled, with or without an
 * error; the core watches a copy of the fd (fl_timeline_watch_fd()) and
 * asks this driver, which reads the status with SYNC_IOC_FILE_INFO.
 * Written against the public driver API only.
 */
#define FL_USE_UNSTABLE_DRIVER_API
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include <fenceline/driver/timeline.h>
#include <fenceline/sync_file.h>

#include "sync-file-status.h"

struct import {
	int fd; /* our copy, for status checks; the watch has another */
};

static int has_signaled(struct fl_sync_pt *pt)
{
	const struct import *im = fl_timeline_get_driver_data(fl_sync_pt_get_timeline(pt));

	return fl__sync_file_status(im->fd);
}

static void release_timeline(struct fl_timeline *tl)
{
	struct import *im = fl_timeline_get_driver_data(tl);

	close(im->fd);
	free(im);
}

static const struct fl_timeline_ops sync_file_ops = {
	.driver_name = "sync_file",
	.has_signaled = has_signaled,
	.release_timeline = release_timeline,
};

FL_EXPORT int fl_sync_file_import(int fd, const char *name, struct fl_fence **ret_fence)
{
	struct sync_file_info info;
	struct fl_timeline *tl;
	struct import *im;
	int r, watch;

	if (!ret_fence)
		return -EINVAL;
	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	/* Only a sync_file answers FILE_INFO; anything else says ENOTTY (or EINVAL). */
	if (fl__sync_file_info(fd, &info) < 0)
		return -EINVAL;
	info.name[sizeof(info.name) - 1] = '\0';
	im = malloc(sizeof(*im));
	if (!im)
		return -ENOMEM;
	im->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (im->fd < 0) {
		r = -errno;
		free(im);
		return r;
	}
	r = fl_timeline_create(&sync_file_ops, info.name, im, &tl);
	if (r < 0) {
		close(im->fd);
		free(im);
		return r;
	}
	r = fl_fence_create(tl, 1, name && *name ? name : info.name, NULL, NULL, ret_fence);
	/* Not yet signalled: the core signals the timeline when the fd is readable. */
	if (r == 0 && fl_fence_get_status(*ret_fence) == 0) {
		watch = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		r = watch < 0 ? -errno : fl_timeline_watch_fd(tl, watch);
		if (r < 0) {
			if (watch >= 0)
				close(watch);
			fl_fence_unref(*ret_fence);
		}
	}
	/* Ours was the creation handle; the watch holds its own until it fires. */
	fl_timeline_unref(tl);
	return r;
}

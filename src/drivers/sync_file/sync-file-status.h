/* SPDX-License-Identifier: MIT */
/*
 * The one check of a kernel sync_file and its status, without blocking:
 * the sync_file driver (sync_file.c) and fl-displayd (a post's acquire
 * fences, docs/display.md) both ask here.
 */
#ifndef FL_SYNC_FILE_STATUS_H
#define FL_SYNC_FILE_STATUS_H

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/sync_file.h>

/*
 * fl__sync_file_info() - SYNC_IOC_FILE_INFO of @fd with no fence array
 * (num_fences 0), into *@info. Only a sync_file answers it: anything else
 * fails (ENOTTY, or EINVAL from a driver's own ioctl of that number).
 * Return: 0, or a negative errno.
 */
static inline int fl__sync_file_info(int fd, struct sync_file_info *info)
{
	memset(info, 0, sizeof(*info));
	return ioctl(fd, SYNC_IOC_FILE_INFO, info) < 0 ? -errno : 0;
}

/*
 * fl__sync_file_status() - the status of kernel sync_file @fd now: 0
 * pending, 1 signalled, or the fence's negative error (-EIO when the
 * kernel gave none). Polls readable first: a sync_file's status is only
 * final once it polls readable.
 * Return: as above; -EINVAL when @fd is no sync_file.
 */
static inline int fl__sync_file_status(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	struct sync_file_info info;

	if (fl__sync_file_info(fd, &info) < 0)
		return -EINVAL;
	if (poll(&p, 1, 0) != 1)
		return 0;
	if (fl__sync_file_info(fd, &info) < 0)
		return -EIO;
	/* Readable means signalled: a status of 0 here would be a kernel bug. */
	return info.status ? (info.status < 0 ? info.status : 1) : 1;
}

#endif /* FL_SYNC_FILE_STATUS_H */

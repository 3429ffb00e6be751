/* SPDX-License-Identifier: MIT */
/*
 * The sync_file and sw_sync ioctls on fenceline fds, with the kernel's
 * argument checks and errnos (drivers/dma-buf/sync_file.c, sw_sync.c):
 * EFAULT for memory we cannot read or write, EINVAL for nonzero flags or
 * padding, ENOENT for a merge partner that is not a fence, ENOTTY for a
 * request the fd's kind does not know.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include <fenceline/fence.h>
#include <fenceline/shared.h>

#include "kabi.h"

/*
 * copy_from_user()/copy_to_user(): the kernel answers EFAULT for a bad
 * pointer instead of crashing, and so must we. process_vm_readv() on
 * ourselves checks the range the same way.
 */
static int copy_in(void *dst, const void *src, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)src, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int copy_out(void *dst, const void *src, size_t len)
{
	struct iovec local = { (void *)src, len }, remote = { dst, len };

	return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static void copy_name(char *dst, size_t size, const char *src)
{
	size_t len = strnlen(src, size - 1);

	memcpy(dst, src, len);
	memset(dst + len, 0, size - len);
}

static int sw_sync_create_fence(int tl, void *arg)
{
	struct fl_kabi_sw_sync_create_fence_data data;
	int r, fd;

	r = copy_in(&data, arg, sizeof(data));
	if (r < 0)
		return r;
	data.name[sizeof(data.name) - 1] = '\0';
	r = fl_fence_fd_create(tl, data.value, data.name, &fd);
	if (r < 0)
		return r;
	data.fence = fd;
	r = copy_out(arg, &data, sizeof(data));
	if (r < 0)
		close(fd);
	return r;
}

static int sw_sync_inc(int tl, void *arg)
{
	uint32_t count;
	int r = copy_in(&count, arg, sizeof(count));

	return r < 0 ? r : fl_timeline_fd_inc(tl, count);
}

static int sync_merge(int fd, void *arg)
{
	struct sync_merge_data data;
	int r, fence;

	r = copy_in(&data, arg, sizeof(data));
	if (r < 0)
		return r;
	if (data.flags || data.pad)
		return -EINVAL;
	data.name[sizeof(data.name) - 1] = '\0';
	/* As dma_fence_array: the merge completes when every fence has. */
	r = fl_fence_fd_merge(fd, data.fd2, data.name, FL_MERGE_WAIT_ALL, &fence);
	if (r < 0)
		return r == -EBADF ? -ENOENT : r;
	data.fence = fence;
	r = copy_out(arg, &data, sizeof(data));
	if (r < 0)
		close(fence);
	return r;
}

/*
 * The two-call pattern: with num_fences 0, the count (and name, status);
 * then, with room for at least that many, the entries. The status of the
 * second call is the first entry's that is not signalled, else 1.
 */
static int sync_file_info(int fd, void *arg, const struct fl_fence_info *summary)
{
	struct sync_file_info info;
	struct fl_sync_pt_info *pts = NULL;
	struct sync_fence_info *out = NULL;
	uint32_t n = summary->num_points;
	int r;

	r = copy_in(&info, arg, sizeof(info));
	if (r < 0)
		return r;
	if (info.flags || info.pad)
		return -EINVAL;
	copy_name(info.name, sizeof(info.name), summary->name);
	info.status = summary->status;
	if (info.num_fences) {
		if (info.num_fences < n)
			return -EINVAL;
		pts = calloc(n ? n : 1, sizeof(*pts));
		out = calloc(n ? n : 1, sizeof(*out));
		r = pts && out ? 0 : -ENOMEM;
		if (r == 0)
			r = fl_fence_fd_get_info(fd, NULL, pts, n);
		if (r >= 0) {
			info.status = 1;
			for (uint32_t i = 0; i < n; i++) {
				copy_name(out[i].obj_name, sizeof(out[i].obj_name),
					  pts[i].timeline_name);
				copy_name(out[i].driver_name, sizeof(out[i].driver_name),
					  pts[i].driver_name);
				out[i].status = pts[i].status;
				out[i].flags = 0;
				out[i].timestamp_ns = pts[i].timestamp_ns;
				if (info.status == 1 && pts[i].status <= 0)
					info.status = pts[i].status;
			}
			r = copy_out((void *)(uintptr_t)info.sync_fence_info, out,
				     n * sizeof(*out));
		}
		free(pts);
		free(out);
		if (r < 0)
			return r;
	}
	info.num_fences = n;
	return copy_out(arg, &info, sizeof(info));
}

int fl__kabi_ioctl(int fd, unsigned long request, void *arg)
{
	struct fl_fence_info summary;
	uint64_t value;
	int r;

	if (fl_fence_fd_get_info(fd, &summary, NULL, 0) >= 0) {
		switch (request) {
		case SYNC_IOC_MERGE:
			r = sync_merge(fd, arg);
			break;
		case SYNC_IOC_FILE_INFO:
			r = sync_file_info(fd, arg, &summary);
			break;
		default:
			r = -ENOTTY;
		}
	} else if (fl_timeline_fd_get_value(fd, &value) == 0) {
		switch (request) {
		case FL_KABI_SW_SYNC_IOC_CREATE_FENCE:
			r = sw_sync_create_fence(fd, arg);
			break;
		case FL_KABI_SW_SYNC_IOC_INC:
			r = sw_sync_inc(fd, arg);
			break;
		default:
			r = -ENOTTY;
		}
	} else {
		return FL_KABI_NOT_OURS;
	}
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

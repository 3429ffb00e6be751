/* SPDX-License-Identifier: MIT */
/*
 * A dma-buf's implicit fences as explicit ones (docs/heap.md, "Implicit
 * fences"): DMA_BUF_IOCTL_EXPORT_SYNC_FILE gives the fences of a buffer's
 * reservation object as a kernel sync_file, which the sync_file driver
 * turns into a fenceline fence; DMA_BUF_IOCTL_IMPORT_SYNC_FILE adds a
 * kernel sync_file to it, so a consumer that only knows implicit sync waits
 * for a producer's explicit fence. Both are Linux 6.0's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include <fenceline/fence.h>
#include <fenceline/heap.h>
#include <fenceline/shared.h>
#include <fenceline/sync_file.h>

#include "heap-internal.h"

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142 /* "DMAB", since Linux 4.20 */
#endif
/* Debian 12's headers have them (6.1); older build hosts do not. */
#ifndef DMA_BUF_IOCTL_EXPORT_SYNC_FILE
struct dma_buf_export_sync_file {
	__u32 flags;
	__s32 fd;
};
struct dma_buf_import_sync_file {
	__u32 flags;
	__s32 fd;
};
#define DMA_BUF_IOCTL_EXPORT_SYNC_FILE _IOWR(DMA_BUF_BASE, 2, struct dma_buf_export_sync_file)
#define DMA_BUF_IOCTL_IMPORT_SYNC_FILE _IOW(DMA_BUF_BASE, 3, struct dma_buf_import_sync_file)
#endif

/* @fd is a dma-buf (0), not one (-EOPNOTSUPP: a memfd has no implicit fences), or not open. */
static int dmabuf_check(int fd, unsigned int dir)
{
	struct statfs fs;

	if (dir == 0 || (dir & ~FL_HEAP_SYNC_RW))
		return -EINVAL;
	if (fd < 0 || fstatfs(fd, &fs) < 0)
		return -EBADF;
	return (unsigned long)fs.f_type == DMA_BUF_MAGIC ? 0 : -EOPNOTSUPP;
}

/* The ioctl's errno, with a kernel older than 6.0 (no such ioctl: ENOTTY) made -EOPNOTSUPP. */
static int ioctl_errno(int e)
{
	return e == ENOTTY ? -EOPNOTSUPP : -e;
}

static int export_sync_file(int dmabuf_fd, unsigned int dir, int *ret_fd)
{
	struct dma_buf_export_sync_file x = { .flags = dir, .fd = -1 };
	int r = dmabuf_check(dmabuf_fd, dir);

	if (r < 0)
		return r;
	while (ioctl(dmabuf_fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &x) < 0)
		if (errno != EINTR)
			return ioctl_errno(errno);
	*ret_fd = x.fd;
	return 0;
}

FL_EXPORT int fl_heap_buffer_export_fence(int dmabuf_fd, unsigned int dir, const char *name,
					  struct fl_fence **ret_fence)
{
	int r, sf;

	if (!ret_fence)
		return -EINVAL;
	r = export_sync_file(dmabuf_fd, dir, &sf);
	if (r < 0)
		return r;
	r = fl_sync_file_import(sf, name ? name : "implicit", ret_fence);
	close(sf);
	return r;
}

FL_EXPORT int fl_heap_buffer_export_fence_fd(int dmabuf_fd, unsigned int dir, const char *name,
					     int *ret_fd)
{
	int r, sf;

	if (!ret_fd)
		return -EINVAL;
	r = export_sync_file(dmabuf_fd, dir, &sf);
	if (r < 0)
		return r;
	r = fl_fence_fd_import(sf, name ? name : "implicit", ret_fd);
	close(sf);
	return r;
}

FL_EXPORT int fl_heap_buffer_import_sync_file(int dmabuf_fd, unsigned int dir, int sync_file_fd)
{
	struct dma_buf_import_sync_file x = { .flags = dir, .fd = sync_file_fd };
	int r = dmabuf_check(dmabuf_fd, dir);

	if (r < 0)
		return r;
	if (sync_file_fd < 0 || fcntl(sync_file_fd, F_GETFD) < 0)
		return -EBADF;
	while (ioctl(dmabuf_fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &x) < 0)
		if (errno != EINTR)
			return ioctl_errno(errno);
	return 0;
}

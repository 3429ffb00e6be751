/* SPDX-License-Identifier: MIT */
/*
 * Begin/end CPU access to a buffer (docs/heap.md, "Flags and CPU access").
 * A dma-buf gets DMA_BUF_IOCTL_SYNC, so its exporter can flush or
 * invalidate caches; memfd memory is CPU-cached and coherent with nothing
 * between it and a device, so for it the calls only check their arguments.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <linux/dma-buf.h>
#include <linux/magic.h>

#include <fenceline/heap.h>

#include "heap-internal.h"

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142 /* "DMAB", since Linux 4.20 */
#endif

_Static_assert(FL_HEAP_SYNC_READ == DMA_BUF_SYNC_READ && FL_HEAP_SYNC_WRITE == DMA_BUF_SYNC_WRITE,
	       "the directions are passed to the kernel as they are");

static int cpu_access(int fd, unsigned int dir, uint64_t phase)
{
	struct dma_buf_sync sync;
	struct statfs fs;
	struct stat st;

	if (dir == 0 || (dir & ~FL_HEAP_SYNC_RW))
		return -EINVAL;
	if (fd < 0 || fstatfs(fd, &fs) < 0)
		return -EBADF;
	switch ((unsigned long)fs.f_type) {
	case TMPFS_MAGIC:
	case HUGETLBFS_MAGIC:
		/*
		 * Memory only if a regular file: devtmpfs is a tmpfs too, and
		 * its device nodes (/dev/dma_heap/NAME, /dev/null) are not.
		 */
		if (fstat(fd, &st) < 0)
			return -EBADF;
		return S_ISREG(st.st_mode) ? 0 : -ENOTTY;
	case DMA_BUF_MAGIC:
		break;
	default:
		return -ENOTTY;
	}
	/* FL_HEAP_SYNC_* have DMA_BUF_SYNC_READ/WRITE's values. */
	sync.flags = phase | dir;
	while (ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync) < 0) {
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
	return 0;
}

FL_EXPORT int fl_heap_buffer_begin_cpu_access(int fd, unsigned int dir)
{
	return cpu_access(fd, dir, DMA_BUF_SYNC_START);
}

FL_EXPORT int fl_heap_buffer_end_cpu_access(int fd, unsigned int dir)
{
	return cpu_access(fd, dir, DMA_BUF_SYNC_END);
}

/* SPDX-License-Identifier: MIT */
/*
 * fl__heap_make(): a buffer made as a kind's recipe says (make.h). Linked
 * into the library and into the pool's worker process (worker.c).
 *
 * FL_HEAP_MAKE_HUGETLB: hugetlbfs takes a file's huge pages from the pool
 * when a *shared mapping* is made, not when it is touched, and keeps that
 * reservation with the file until it is closed, also after munmap(): so
 * mapping the new buffer once and unmapping it again reserves its pages,
 * and the allocation fails with -ENOMEM instead of a consumer getting
 * SIGBUS at first touch. hugetlbfs memfds take seals (since 4.16).
 *
 * FL_HEAP_MAKE_THP: shmem decides a page's size when it allocates it, by
 * the mapping it is faulted through and by
 * /sys/kernel/mm/transparent_hugepage/shmem_enabled: the advice of a
 * consumer's later mapping would come too late, so the pages are made now,
 * through a mapping advised MADV_HUGEPAGE.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-heap.h>

#include "make.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

int fl__heap_alloc_error(int err)
{
	switch (err) {
	case EMFILE:
	case ENFILE:
		return -EMFILE;
	case EFBIG:
	case EINVAL:
	case ENOSPC:
		/* A size the kernel cannot give a file is out of memory to us. */
		return -ENOMEM;
	default:
		return -err;
	}
}

/*
 * Whether @len is more than half of RAM: ION's limit for its system heaps,
 * and the one rule for every buffer made here. Memory that is committed at
 * once (a populated memfd, a dma-buf's pinned pages: the kernel's system
 * dma-heap takes every page it can get before it gives up) would wake the
 * OOM killer past RAM rather than fail; a sparse memfd of 2^62 bytes costs
 * nothing until touched, but no machine could back it, and the sizes that
 * heaps and the daemon add up must stay far from wrapping.
 */
static bool past_half_of_ram(size_t len)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 && len / (size_t)page > (size_t)pages / 2;
}

/* The heap's own name, out of the memfd name. */
static const char *heap_name(const struct fl_heap_recipe *r)
{
	return r->memfd_name + strlen(FL_HEAP_RECIPE_PREFIX);
}

/* Writes one byte per page: for kernels before MADV_POPULATE_WRITE. */
static void touch_pages(volatile unsigned char *p, size_t len, size_t page)
{
	for (size_t off = 0; off < len; off += page)
		p[off] = 0;
}

/* Maps @fd once: reserves a hugetlb file's pages, or populates a THP one. */
static int map_once(const struct fl_heap_recipe *r, int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int ret = 0;

	if (p == MAP_FAILED)
		return fl__heap_alloc_error(errno);
	if (r->how == FL_HEAP_MAKE_THP) {
		if (r->advise)
			madvise(p, len, MADV_HUGEPAGE);
		if (madvise(p, len, MADV_POPULATE_WRITE) < 0) {
			if (errno == EINVAL)
				touch_pages(p, len, (size_t)sysconf(_SC_PAGESIZE));
			else
				/* EFAULT: a page could not be had, as a fault would have found. */
				ret = errno == EFAULT ? -ENOMEM : fl__heap_alloc_error(errno);
		}
	}
	munmap(p, len);
	return ret;
}

static int make_memfd(const struct fl_heap_recipe *r, size_t len, int *ret_fd)
{
	unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int fd, ret;

	if (r->how == FL_HEAP_MAKE_HUGETLB)
		flags |= MFD_HUGETLB;
	/* Shows in /proc/PID/fd as "/memfd:fl-heap:NAME (deleted)". */
	fd = memfd_create(r->memfd_name, flags);
	if (fd < 0)
		return fl__heap_alloc_error(errno);
	while ((ret = ftruncate(fd, (off_t)len)) < 0 && errno == EINTR)
		;
	ret = ret < 0 ? fl__heap_alloc_error(errno) : 0;
	if (ret == 0 && r->how != FL_HEAP_MAKE_MEMFD)
		ret = map_once(r, fd, len);
	/*
	 * F_SEAL_SEAL too: otherwise any holder could add F_SEAL_WRITE and
	 * make the producer's own writes fail.
	 */
	if (ret == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		ret = fl__heap_alloc_error(errno);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	*ret_fd = fd;
	return 0;
}

static int make_dma_buf(const struct fl_heap_recipe *r, size_t len, int *ret_fd)
{
	struct dma_heap_allocation_data data = {
		.len = len,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};

	if (ioctl(r->dev_fd, DMA_HEAP_IOCTL_ALLOC, &data) < 0) {
		int err = errno;

		fl__heap_log("dma-heap '%s': allocating %zu bytes: %s", heap_name(r), len,
			     strerror(err));
		return fl__heap_alloc_error(err);
	}
	*ret_fd = (int)data.fd;
	return 0;
}

int fl__heap_make(const struct fl_heap_recipe *r, size_t len, int *ret_fd)
{
	if (past_half_of_ram(len)) {
		if (r->how == FL_HEAP_MAKE_DMA_HEAP)
			fl__heap_log("dma-heap '%s': allocating %zu bytes: more than half of RAM",
				     heap_name(r), len);
		return -ENOMEM;
	}
	switch (r->how) {
	case FL_HEAP_MAKE_MEMFD:
	case FL_HEAP_MAKE_HUGETLB:
	case FL_HEAP_MAKE_THP:
		return make_memfd(r, len, ret_fd);
	case FL_HEAP_MAKE_DMA_HEAP:
		return make_dma_buf(r, len, ret_fd);
	default:
		return -EINVAL;
	}
}

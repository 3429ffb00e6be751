/* SPDX-License-Identifier: MIT */
/*
 * How a heap's buffers are made: a recipe, not code. A kind describes its
 * buffers with a struct fl_heap_recipe when it opens a heap, and
 * fl__heap_make() follows it, in the heap's process and in the pool's
 * worker process (worker.c), which shares no memory with the heap and gets
 * the recipe over a socket. Private to src/heap.
 */
#ifndef FL_HEAP_MAKE_H
#define FL_HEAP_MAKE_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/heap.h>

/* "fl-heap:" and a heap's name, with its NUL. */
#define FL_HEAP_RECIPE_NAME_MAX (8 + FL_HEAP_NAME_MAX)

/* The ways Linux gives a buffer fd. */
enum fl_heap_make_how {
	/* A memfd. */
	FL_HEAP_MAKE_MEMFD = 1,
	/* A MFD_HUGETLB memfd, mapped once so that its huge pages are reserved. */
	FL_HEAP_MAKE_HUGETLB,
	/* A memfd populated through a mapping (advised MADV_HUGEPAGE if @advise). */
	FL_HEAP_MAKE_THP,
	/* DMA_HEAP_IOCTL_ALLOC on @dev_fd, a /dev/dma_heap device. */
	FL_HEAP_MAKE_DMA_HEAP,
	FL_HEAP_MAKE_MAX_ = FL_HEAP_MAKE_DMA_HEAP,
};

/*
 * struct fl_heap_recipe - how to make one kind's buffers
 * @how: an enum fl_heap_make_how
 * @advise: FL_HEAP_MAKE_THP only: advise MADV_HUGEPAGE before populating
 * @dev_fd: FL_HEAP_MAKE_DMA_HEAP only: the device (owned by the heap's
 *	kind, or by the worker for its copy); -1 otherwise
 * @memfd_name: "fl-heap:NAME" for the heap's NAME, NUL-terminated: what
 *	memfds are named (and /proc/PID/fd shows), made once, not per buffer
 *
 * Plain data of fixed size: the pool sends it to its worker as it is.
 */
struct fl_heap_recipe {
	uint32_t how;
	uint32_t advise;
	int32_t dev_fd;
	uint32_t pad_;
	char memfd_name[FL_HEAP_RECIPE_NAME_MAX];
};

/* The heap's name after this prefix in fl_heap_recipe.memfd_name. */
#define FL_HEAP_RECIPE_PREFIX "fl-heap:"

/*
 * Makes one buffer of exactly @len bytes (nonzero, a multiple of the heap's
 * granule) as @r says: an O_CLOEXEC fd in *@ret_fd. memfds are sealed
 * against shrinking, growing and more seals. Every buffer is a file nobody
 * has held before, zero-filled by the kernel. More than half of RAM is
 * -ENOMEM for every kind, sparse memfds included (ION's rule).
 * Return: 0, -ENOMEM or -EMFILE (or the kernel's -errno for a dma-heap),
 * with nothing left open on failure.
 */
int fl__heap_make(const struct fl_heap_recipe *r, size_t len, int *ret_fd);

/* The kernel's errno for making a buffer, as the library's -errno. */
int fl__heap_alloc_error(int err);

/* A line on stderr when FENCELINE_DEBUG has "heap" or "all" (log.c). */
void fl__heap_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* FL_HEAP_MAKE_H */

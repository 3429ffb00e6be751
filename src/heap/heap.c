/* SPDX-License-Identifier: MIT */
/*
 * The heap framework: argument checks, the record of every live buffer
 * (found again by its fd's inode), accounting, and the calls into a heap
 * kind's ops. The kinds (system.c, carveout.c) only make fds and, for a
 * carveout, manage the layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "avl.h"
#include "heap-internal.h"

#define NO_OFFSET UINT64_MAX

/*
 * One live buffer. The inode, not the fd number, names it: the caller may
 * free through a dup() or an fd that came back from another process, and
 * an fd number is reused as soon as it is closed.
 */
struct fl_heap_buffer {
	struct fl_avl_node node; /* in fl_heap.buffers */
	dev_t dev;
	ino_t ino;
	uint64_t size;
	uint64_t offset; /* NO_OFFSET in a heap without layout */
	void *priv; /* from ops->reserve; may be NULL */
};

struct buffer_key {
	dev_t dev;
	ino_t ino;
};

static struct fl_heap_buffer *buffer_of(const struct fl_avl_node *n)
{
	return (struct fl_heap_buffer *)((char *)n - offsetof(struct fl_heap_buffer, node));
}

static int cmp_key(dev_t dev_a, ino_t ino_a, dev_t dev_b, ino_t ino_b)
{
	if (dev_a != dev_b)
		return dev_a < dev_b ? -1 : 1;
	if (ino_a != ino_b)
		return ino_a < ino_b ? -1 : 1;
	return 0;
}

static int buffer_cmp(const struct fl_avl_node *a, const struct fl_avl_node *b)
{
	const struct fl_heap_buffer *x = buffer_of(a), *y = buffer_of(b);

	return cmp_key(x->dev, x->ino, y->dev, y->ino);
}

static int buffer_key_cmp(const void *key, const struct fl_avl_node *n)
{
	const struct buffer_key *k = key;
	const struct fl_heap_buffer *b = buffer_of(n);

	return cmp_key(k->dev, k->ino, b->dev, b->ino);
}

/* The kernel's errors for making a buffer, in the library's vocabulary. */
static int alloc_error(int err)
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

int fl__heap_memfd(const struct fl_heap *heap, size_t len, int *ret_fd)
{
	char name[FL_HEAP_NAME_MAX + 16];
	int fd, r;

	if ((uint64_t)len > (uint64_t)INT64_MAX)
		return -ENOMEM;
	/* Shows in /proc/PID/fd as "/memfd:fl-heap:NAME (deleted)". */
	snprintf(name, sizeof(name), "fl-heap:%s", heap->name);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return alloc_error(errno);
	while ((r = ftruncate(fd, (off_t)len)) < 0 && errno == EINTR)
		;
	/*
	 * F_SEAL_SEAL too: otherwise any holder could add F_SEAL_WRITE and
	 * make the producer's own writes fail.
	 */
	if (r == 0)
		r = fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (r < 0) {
		r = alloc_error(errno);
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static void name_copy(char *dst, const char *src)
{
	snprintf(dst, FL_HEAP_NAME_MAX, "%s", src);
}

int fl__heap_create(const struct fl_heap_ops *ops, const char *name, void *priv,
		    struct fl_heap **ret_heap)
{
	struct fl_heap *heap;
	long page = sysconf(_SC_PAGESIZE);

	heap = calloc(1, sizeof(*heap));
	if (!heap) {
		if (ops->destroy) {
			struct fl_heap tmp = { .ops = ops, .priv = priv };

			ops->destroy(&tmp);
		}
		return -ENOMEM;
	}
	heap->ops = ops;
	heap->priv = priv;
	name_copy(heap->name, name ? name : ops->kind);
	heap->page_size = page > 0 ? (size_t)page : 4096;
	heap->buffers = (struct fl_avl_tree)FL_AVL_TREE_INIT(buffer_cmp);
	pthread_mutex_init(&heap->lock, NULL);
	*ret_heap = heap;
	return 0;
}

/* Drops @b's record and accounting and gives its range back. Under the lock. */
static void forget_locked(struct fl_heap *heap, struct fl_heap_buffer *b)
{
	fl__avl_remove(&heap->buffers, &b->node);
	heap->allocated -= b->size;
	heap->live--;
	if (heap->ops->unreserve)
		heap->ops->unreserve(heap, b->priv);
	free(b);
}

static void close_buffer(struct fl_avl_node *n, void *data)
{
	struct fl_heap *heap = data;
	struct fl_heap_buffer *b = buffer_of(n);

	if (heap->ops->unreserve)
		heap->ops->unreserve(heap, b->priv);
	free(b);
}

FL_EXPORT void fl_heap_close(struct fl_heap *heap)
{
	if (!heap)
		return;
	pthread_mutex_lock(&heap->lock);
	fl__avl_drain(&heap->buffers, close_buffer, heap);
	pthread_mutex_unlock(&heap->lock);
	if (heap->ops->destroy)
		heap->ops->destroy(heap);
	pthread_mutex_destroy(&heap->lock);
	free(heap);
}

/* @len rounded up to whole pages, or 0 if that overflows. */
static size_t page_round(const struct fl_heap *heap, size_t len)
{
	size_t mask = heap->page_size - 1;

	if (len > SIZE_MAX - mask)
		return 0;
	return (len + mask) & ~mask;
}

FL_EXPORT int fl_heap_alloc(struct fl_heap *heap, size_t len, unsigned int flags, int *ret_fd)
{
	struct fl_heap_buffer *b;
	struct fl_avl_node *stale;
	struct buffer_key key;
	struct stat st;
	size_t size;
	int fd = -1, r;

	if (!heap || !ret_fd || len == 0 || flags)
		return -EINVAL;
	size = page_round(heap, len);
	b = size ? calloc(1, sizeof(*b)) : NULL;
	if (!b) {
		r = -ENOMEM;
		goto fail_counted;
	}
	b->size = size;
	b->offset = NO_OFFSET;

	/*
	 * Counted from the reservation on, so that a snapshot of a carveout
	 * always has capacity - allocated = its free bytes.
	 */
	pthread_mutex_lock(&heap->lock);
	r = heap->ops->reserve ? heap->ops->reserve(heap, size, &b->priv, &b->offset) : 0;
	if (r == 0) {
		heap->allocated += size;
		heap->live++;
	}
	pthread_mutex_unlock(&heap->lock);
	if (r < 0) {
		free(b);
		goto fail_counted;
	}

	/* The fd is made without the lock: it may take a while. */
	r = heap->ops->allocate(heap, size, flags, &fd);
	if (r == 0 && fstat(fd, &st) < 0)
		r = alloc_error(errno);

	pthread_mutex_lock(&heap->lock);
	if (r < 0) {
		if (heap->ops->unreserve)
			heap->ops->unreserve(heap, b->priv);
		heap->allocated -= size;
		heap->live--;
		heap->failures++;
		pthread_mutex_unlock(&heap->lock);
		free(b);
		if (fd >= 0)
			close(fd);
		return r;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	/*
	 * A record with this inode can only be left over from a buffer whose
	 * fds were all closed without fl_heap_free(), its inode number since
	 * reused: that buffer is gone, so its record goes too.
	 */
	key = (struct buffer_key){ b->dev, b->ino };
	stale = fl__avl_find(&heap->buffers, &key, buffer_key_cmp);
	if (stale)
		forget_locked(heap, buffer_of(stale));
	fl__avl_insert(&heap->buffers, &b->node);
	if (heap->allocated > heap->peak_allocated)
		heap->peak_allocated = heap->allocated;
	if (heap->live > heap->peak_buffers)
		heap->peak_buffers = heap->live;
	heap->allocations++;
	pthread_mutex_unlock(&heap->lock);
	*ret_fd = fd;
	return 0;

fail_counted:
	pthread_mutex_lock(&heap->lock);
	heap->failures++;
	pthread_mutex_unlock(&heap->lock);
	return r;
}

FL_EXPORT int fl_heap_free(struct fl_heap *heap, int fd)
{
	struct fl_avl_node *n;
	struct buffer_key key;
	struct stat st;

	if (!heap)
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	key = (struct buffer_key){ st.st_dev, st.st_ino };
	pthread_mutex_lock(&heap->lock);
	n = fl__avl_find(&heap->buffers, &key, buffer_key_cmp);
	if (n)
		forget_locked(heap, buffer_of(n));
	pthread_mutex_unlock(&heap->lock);
	if (!n)
		return -EINVAL;
	close(fd);
	return 0;
}

static void fill_info_locked(struct fl_heap *heap, struct fl_heap_info *info)
{
	memset(info, 0, sizeof(*info));
	name_copy(info->name, heap->name);
	name_copy(info->kind, heap->ops->kind);
	info->allocated = heap->allocated;
	info->peak_allocated = heap->peak_allocated;
	info->buffers = heap->live;
	info->peak_buffers = heap->peak_buffers;
	info->allocations = heap->allocations;
	info->failures = heap->failures;
	if (heap->ops->fill_info)
		heap->ops->fill_info(heap, info);
}

FL_EXPORT int fl_heap_get_info(struct fl_heap *heap, struct fl_heap_info *ret_info)
{
	struct fl_heap_info info;

	if (!heap || !ret_info)
		return -EINVAL;
	pthread_mutex_lock(&heap->lock);
	fill_info_locked(heap, &info);
	pthread_mutex_unlock(&heap->lock);
	*ret_info = info;
	return 0;
}

static void print_buffer(struct fl_avl_node *n, void *data)
{
	const struct fl_heap_buffer *b = buffer_of(n);
	FILE *out = data;

	if (b->offset == NO_OFFSET)
		fprintf(out, "  %16" PRIu64 " %16s %16" PRIu64 "\n", (uint64_t)b->ino, "-",
			b->size);
	else
		fprintf(out, "  %16" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n", (uint64_t)b->ino,
			b->offset, b->size);
}

FL_EXPORT int fl_heap_print(struct fl_heap *heap, FILE *out)
{
	struct fl_heap_info info;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int r = 0;

	if (!heap || !out)
		return -EINVAL;
	/*
	 * Into memory first, then out: the heap's lock must not wait on a
	 * slow reader of @out.
	 */
	mem = open_memstream(&text, &len);
	if (!mem)
		return -ENOMEM;
	pthread_mutex_lock(&heap->lock);
	fill_info_locked(heap, &info);
	fprintf(mem, "heap '%s' (%s)\n", info.name, info.kind);
	if (info.capacity)
		fprintf(mem,
			"  capacity %" PRIu64 ", free %" PRIu64 " in %" PRIu64
			" blocks, largest free block %" PRIu64 "\n",
			info.capacity, info.capacity - info.allocated, info.free_blocks,
			info.largest_free);
	fprintf(mem,
		"  allocated %" PRIu64 " (peak %" PRIu64 ") in %" PRIu64 " buffers (peak %" PRIu64
		"); %" PRIu64 " allocations, %" PRIu64 " failed\n",
		info.allocated, info.peak_allocated, info.buffers, info.peak_buffers,
		info.allocations, info.failures);
	fprintf(mem, "  %16s %16s %16s\n", "inode", "offset", "size");
	fl__avl_walk(&heap->buffers, print_buffer, mem);
	if (heap->ops->print_free) {
		fprintf(mem, "  free blocks:\n  %16s %16s\n", "offset", "size");
		heap->ops->print_free(heap, mem);
	}
	pthread_mutex_unlock(&heap->lock);
	if (fclose(mem) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	if (fwrite(text, 1, len, out) != len || fflush(out) != 0)
		r = -EIO;
	free(text);
	return r;
}

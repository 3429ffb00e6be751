/* SPDX-License-Identifier: MIT */
/*
 * The heap framework's side that heap kinds see: the ops table each kind
 * provides, the heap object, and the memfd helper every kind of this slice
 * shares. Private to src/heap: the ops table is not public yet, because a
 * public one is an ABI promise and no heap from outside the library needs
 * it so far (docs/heap.md, "Not yet").
 */
#ifndef FL_HEAP_INTERNAL_H
#define FL_HEAP_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <fenceline/heap.h>

#include "avl.h"

/**
 * struct fl_heap_ops - what a kind of heap provides
 * @kind: the kind's name, as fl_heap_info.kind shows it. Mandatory.
 * @allocate: makes the buffer's fd. Mandatory.
 *	Context: any thread, heap lock *not* held; may block and allocate.
 *	@len is nonzero and a page multiple; @flags is 0 in this version.
 *	Return: 0 with an O_CLOEXEC fd of exactly @len bytes in *@ret_fd, or
 *	-ENOMEM / -EMFILE with nothing left open.
 * @reserve: takes @len bytes of the heap's capacity for a buffer about to
 *	be allocated. Optional: NULL means no fixed capacity.
 *	Context: heap lock held; must not block. Return: 0, with what
 *	@unreserve needs in *@ret_priv and the buffer's place in the heap in
 *	*@ret_offset, or -ENOMEM if no room is left.
 * @unreserve: gives back what @reserve took. Optional (NULL: nothing to
 *	give back); must be set if @reserve is. Context: heap lock held; must
 *	not block; cannot fail.
 * @fill_info: adds the kind's figures (capacity, free blocks) to @info.
 *	Optional: NULL leaves them 0. Context: heap lock held; must not block.
 * @print_free: writes one line per free block to @out, in address order.
 *	Optional: NULL prints none. Context: heap lock held.
 * @destroy: frees the kind's data, after every reserved range was given
 *	back. Optional (NULL: nothing to free). Context: fl_heap_close(), no
 *	other thread using the heap.
 *
 * The framework calls optional ops only after checking them for NULL,
 * and tells kinds apart by comparing ops pointers.
 */
struct fl_heap_ops {
	const char *kind;
	int (*allocate)(struct fl_heap *heap, size_t len, unsigned int flags, int *ret_fd);
	int (*reserve)(struct fl_heap *heap, size_t len, void **ret_priv, uint64_t *ret_offset);
	void (*unreserve)(struct fl_heap *heap, void *priv);
	void (*fill_info)(struct fl_heap *heap, struct fl_heap_info *info);
	void (*print_free)(struct fl_heap *heap, FILE *out);
	void (*destroy)(struct fl_heap *heap);
};

struct fl_heap {
	const struct fl_heap_ops *ops;
	void *priv; /* the kind's; may be NULL */
	char name[FL_HEAP_NAME_MAX];
	size_t page_size;

	/*
	 * @lock covers everything below and the kind's reserve state. It is
	 * never held across a syscall that makes or closes an fd, so
	 * allocations on one heap only serialise on the bookkeeping.
	 */
	pthread_mutex_t lock;
	struct fl_avl_tree buffers; /* struct fl_heap_buffer, by inode */
	/* Bytes and buffers reserved, those still being made included. */
	uint64_t allocated, live;
	uint64_t peak_allocated, peak_buffers;
	uint64_t allocations, failures;
};

/*
 * Makes a heap of @ops' kind that owns @priv (freed by ops->destroy, also
 * when this fails). @name NULL gives ops->kind.
 */
int fl__heap_create(const struct fl_heap_ops *ops, const char *name, void *priv,
		    struct fl_heap **ret_heap);

/*
 * An O_CLOEXEC memfd of exactly @len bytes, named after @heap, sealed
 * against shrinking, growing and more seals. Return: 0, -ENOMEM or
 * -EMFILE.
 */
int fl__heap_memfd(const struct fl_heap *heap, size_t len, int *ret_fd);

#endif /* FL_HEAP_INTERNAL_H */

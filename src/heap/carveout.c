/* SPDX-License-Identifier: MIT */
/*
 * The carveout heap: a fixed capacity carved by best fit with coalescing.
 *
 * Every block, free or taken, sits on a list in address order (the
 * boundary tags), so a freed block finds its neighbours in O(1). Free
 * blocks also sit in an AVL tree ordered by (size, offset): best fit is the
 * tree's lower bound for the wanted size, and the largest free block its
 * last node, both O(log n) in the free blocks. A sorted array would find as
 * fast but insert in O(n); a size-class list would not find the best fit.
 * Taken blocks are in no tree: the framework's record of the buffer points
 * at its block.
 *
 * Each buffer is still a memfd of its own (heap.h says why), so the layout
 * here decides only whether a buffer fits and where it would sit.
 * Everything runs under the heap's lock (struct fl_heap.lock).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "avl.h"
#include "heap-internal.h"

struct block {
	struct fl_avl_node node; /* in carveout.free_tree while free */
	struct block *prev, *next; /* address order; may be NULL */
	uint64_t offset, size;
	bool free;
};

struct carveout {
	uint64_t capacity;
	struct block *first; /* lowest address; never NULL */
	struct fl_avl_tree free_tree; /* struct block, by (size, offset) */
};

struct block_key {
	uint64_t size, offset;
};

static struct block *block_of(const struct fl_avl_node *n)
{
	return (struct block *)((char *)n - offsetof(struct block, node));
}

static int key_cmp(const struct block_key *k, const struct block *b)
{
	if (k->size != b->size)
		return k->size < b->size ? -1 : 1;
	if (k->offset != b->offset)
		return k->offset < b->offset ? -1 : 1;
	return 0;
}

static int block_cmp(const struct fl_avl_node *a, const struct fl_avl_node *b)
{
	const struct block *x = block_of(a);
	const struct block_key k = { x->size, x->offset };

	return key_cmp(&k, block_of(b));
}

static int block_key_cmp(const void *key, const struct fl_avl_node *n)
{
	return key_cmp(key, block_of(n));
}

static struct carveout *carveout_of(struct fl_heap *heap)
{
	return heap->priv;
}

static int carveout_reserve(struct fl_heap *heap, size_t len, void **ret_priv, uint64_t *ret_offset)
{
	struct carveout *c = carveout_of(heap);
	/* Offset 0 sorts first among blocks of one size: the lowest wins a tie. */
	const struct block_key want = { len, 0 };
	struct fl_avl_node *n;
	struct block *b, *rest = NULL;

	n = fl__avl_lower_bound(&c->free_tree, &want, block_key_cmp);
	if (!n)
		return -ENOMEM;
	b = block_of(n);
	if (b->size > len) {
		/* Allocated before anything changes, so failing leaves no trace. */
		rest = calloc(1, sizeof(*rest));
		if (!rest)
			return -ENOMEM;
	}
	fl__avl_remove(&c->free_tree, &b->node);
	if (rest) {
		rest->offset = b->offset + len;
		rest->size = b->size - len;
		rest->free = true;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->size = len;
		fl__avl_insert(&c->free_tree, &rest->node);
	}
	b->free = false;
	*ret_priv = b;
	*ret_offset = b->offset;
	return 0;
}

/* Takes @b, just merged into its neighbour, off the list and frees it. */
static void unlink_block(struct carveout *c, struct block *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		c->first = b->next;
	if (b->next)
		b->next->prev = b->prev;
	free(b);
}

static void carveout_unreserve(struct fl_heap *heap, void *priv)
{
	struct carveout *c = carveout_of(heap);
	struct block *b = priv, *next = b->next, *prev = b->prev;

	if (next && next->free) {
		fl__avl_remove(&c->free_tree, &next->node);
		b->size += next->size;
		unlink_block(c, next);
	}
	if (prev && prev->free) {
		/* Out of the tree before its key, the size, changes. */
		fl__avl_remove(&c->free_tree, &prev->node);
		prev->size += b->size;
		unlink_block(c, b);
		b = prev;
	}
	b->free = true;
	fl__avl_insert(&c->free_tree, &b->node);
}

static void carveout_fill_info(struct fl_heap *heap, struct fl_heap_info *info)
{
	struct carveout *c = carveout_of(heap);
	struct fl_avl_node *largest = fl__avl_last(&c->free_tree);

	info->capacity = c->capacity;
	info->free_blocks = c->free_tree.count;
	info->largest_free = largest ? block_of(largest)->size : 0;
}

static void carveout_walk_free(struct fl_heap *heap,
			       void (*fn)(uint64_t offset, uint64_t size, void *data), void *data)
{
	for (const struct block *b = carveout_of(heap)->first; b; b = b->next)
		if (b->free)
			fn(b->offset, b->size, data);
}

static void carveout_destroy(struct fl_heap *heap)
{
	struct carveout *c = carveout_of(heap);
	struct block *b, *next;

	for (b = c->first; b; b = next) {
		next = b->next;
		free(b);
	}
	free(c);
}

static const struct fl_heap_ops carveout_ops = {
	.kind = "carveout",
	.reserve = carveout_reserve,
	.unreserve = carveout_unreserve,
	.fill_info = carveout_fill_info,
	.walk_free = carveout_walk_free,
	.destroy = carveout_destroy,
};

FL_EXPORT int fl_heap_open_carveout(const char *name, size_t size, struct fl_heap **ret_heap)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t mask = (page > 0 ? (size_t)page : 4096) - 1;
	struct carveout *c;
	struct block *all;

	if (!ret_heap || size == 0)
		return -EINVAL;
	if (size > SIZE_MAX - mask)
		return -ENOMEM;
	size = (size + mask) & ~mask;
	c = calloc(1, sizeof(*c));
	all = calloc(1, sizeof(*all));
	if (!c || !all) {
		free(c);
		free(all);
		return -ENOMEM;
	}
	c->capacity = size;
	c->free_tree = (struct fl_avl_tree)FL_AVL_TREE_INIT(block_cmp);
	all->size = size;
	all->free = true;
	c->first = all;
	fl__avl_insert(&c->free_tree, &all->node);
	return fl__heap_create(&carveout_ops, name, c, ret_heap);
}

/* SPDX-License-Identifier: MIT */
/*
 * An intrusive AVL tree: a balanced binary search tree whose nodes live in
 * the caller's structs, so inserting and removing never allocate and cannot
 * fail. Height-balanced, so every operation is O(log n) in the worst case,
 * not just on average (the carveout's allocator promises O(log n) in its
 * free blocks). Keys must be unique under the tree's comparison: ties are
 * broken by the caller (the carveout compares offsets after sizes).
 *
 * Not thread-safe: the owner's lock covers the tree.
 */
#ifndef FL_HEAP_AVL_H
#define FL_HEAP_AVL_H

#include <stddef.h>

struct fl_avl_node {
	struct fl_avl_node *left, *right; /* may be NULL */
	int height; /* of the subtree rooted here: 1 for a leaf */
};

/* Orders two nodes: < 0, 0 or > 0, as strcmp(). */
typedef int (*fl_avl_cmp_fn)(const struct fl_avl_node *a, const struct fl_avl_node *b);

/* Orders a search key against a node, as fl_avl_cmp_fn. */
typedef int (*fl_avl_key_cmp_fn)(const void *key, const struct fl_avl_node *node);

struct fl_avl_tree {
	struct fl_avl_node *root; /* may be NULL */
	fl_avl_cmp_fn cmp;
	size_t count;
};

#define FL_AVL_TREE_INIT(cmp_fn)  \
	{                         \
		NULL, (cmp_fn), 0 \
	}

/* Links @node, which must not compare equal to a node already linked. */
void fl__avl_insert(struct fl_avl_tree *tree, struct fl_avl_node *node);

/* Unlinks @node, which must be linked in @tree. */
void fl__avl_remove(struct fl_avl_tree *tree, struct fl_avl_node *node);

/* The node equal to @key, or NULL. */
struct fl_avl_node *fl__avl_find(const struct fl_avl_tree *tree, const void *key,
				 fl_avl_key_cmp_fn cmp);

/* The smallest node not below @key (C++'s lower_bound), or NULL. */
struct fl_avl_node *fl__avl_lower_bound(const struct fl_avl_tree *tree, const void *key,
					fl_avl_key_cmp_fn cmp);

/* The largest node, or NULL if the tree is empty. */
struct fl_avl_node *fl__avl_last(const struct fl_avl_tree *tree);

/* The smallest node, or NULL if the tree is empty. */
struct fl_avl_node *fl__avl_first(const struct fl_avl_tree *tree);

/* Calls @fn on every node in order; @fn must not change the tree. */
void fl__avl_walk(const struct fl_avl_tree *tree, void (*fn)(struct fl_avl_node *node, void *data),
		  void *data);

/*
 * Empties the tree, calling @fn on every node once it is unlinked (children
 * before their parent), so @fn may free it. O(n).
 */
void fl__avl_drain(struct fl_avl_tree *tree, void (*fn)(struct fl_avl_node *node, void *data),
		   void *data);

#endif /* FL_HEAP_AVL_H */

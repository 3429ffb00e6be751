/* SPDX-License-Identifier: MIT */
/*
 * The AVL tree of avl.h. Recursive: the depth is at most about
 * 1.44 log2(n), so the stack stays a few dozen frames deep for any n that
 * fits in memory.
 */
#include <assert.h>
#include <stddef.h>

#include "avl.h"

static int height(const struct fl_avl_node *n)
{
	return n ? n->height : 0;
}

static void update(struct fl_avl_node *n)
{
	int l = height(n->left), r = height(n->right);

	n->height = (l > r ? l : r) + 1;
}

static struct fl_avl_node *rotate_right(struct fl_avl_node *n)
{
	struct fl_avl_node *l = n->left;

	n->left = l->right;
	l->right = n;
	update(n);
	update(l);
	return l;
}

static struct fl_avl_node *rotate_left(struct fl_avl_node *n)
{
	struct fl_avl_node *r = n->right;

	n->right = r->left;
	r->left = n;
	update(n);
	update(r);
	return r;
}

/* Restores the balance of @n, whose subtrees differ in height by at most 2. */
static struct fl_avl_node *rebalance(struct fl_avl_node *n)
{
	int balance = height(n->left) - height(n->right);

	if (balance > 1) {
		if (height(n->left->left) < height(n->left->right))
			n->left = rotate_left(n->left);
		return rotate_right(n);
	}
	if (balance < -1) {
		if (height(n->right->right) < height(n->right->left))
			n->right = rotate_right(n->right);
		return rotate_left(n);
	}
	update(n);
	return n;
}

static struct fl_avl_node *insert(struct fl_avl_node *root, struct fl_avl_node *node,
				  fl_avl_cmp_fn cmp)
{
	int c;

	if (!root)
		return node;
	c = cmp(node, root);
	assert(c != 0);
	if (c < 0)
		root->left = insert(root->left, node, cmp);
	else
		root->right = insert(root->right, node, cmp);
	return rebalance(root);
}

void fl__avl_insert(struct fl_avl_tree *tree, struct fl_avl_node *node)
{
	node->left = node->right = NULL;
	node->height = 1;
	tree->root = insert(tree->root, node, tree->cmp);
	tree->count++;
}

/* Unlinks the smallest node of @root into *@ret_min and returns the new root. */
static struct fl_avl_node *remove_min(struct fl_avl_node *root, struct fl_avl_node **ret_min)
{
	if (!root->left) {
		*ret_min = root;
		return root->right;
	}
	root->left = remove_min(root->left, ret_min);
	return rebalance(root);
}

static struct fl_avl_node *remove_node(struct fl_avl_node *root, struct fl_avl_node *node,
				       fl_avl_cmp_fn cmp)
{
	struct fl_avl_node *successor;
	int c;

	assert(root != NULL);
	c = cmp(node, root);
	if (c < 0) {
		root->left = remove_node(root->left, node, cmp);
	} else if (c > 0) {
		root->right = remove_node(root->right, node, cmp);
	} else {
		assert(root == node);
		if (!root->right)
			return root->left;
		/* The in-order successor takes the removed node's place. */
		successor = NULL;
		root->right = remove_min(root->right, &successor);
		successor->left = root->left;
		successor->right = root->right;
		root = successor;
	}
	return rebalance(root);
}

void fl__avl_remove(struct fl_avl_tree *tree, struct fl_avl_node *node)
{
	assert(tree->count > 0);
	tree->root = remove_node(tree->root, node, tree->cmp);
	tree->count--;
	node->left = node->right = NULL;
	node->height = 0;
}

struct fl_avl_node *fl__avl_find(const struct fl_avl_tree *tree, const void *key,
				 fl_avl_key_cmp_fn cmp)
{
	struct fl_avl_node *n = tree->root;

	while (n) {
		int c = cmp(key, n);

		if (c == 0)
			return n;
		n = c < 0 ? n->left : n->right;
	}
	return NULL;
}

struct fl_avl_node *fl__avl_lower_bound(const struct fl_avl_tree *tree, const void *key,
					fl_avl_key_cmp_fn cmp)
{
	struct fl_avl_node *n = tree->root, *best = NULL;

	while (n) {
		if (cmp(key, n) <= 0) {
			best = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best;
}

struct fl_avl_node *fl__avl_first(const struct fl_avl_tree *tree)
{
	struct fl_avl_node *n = tree->root;

	while (n && n->left)
		n = n->left;
	return n;
}

struct fl_avl_node *fl__avl_last(const struct fl_avl_tree *tree)
{
	struct fl_avl_node *n = tree->root;

	while (n && n->right)
		n = n->right;
	return n;
}

static void walk(struct fl_avl_node *n, void (*fn)(struct fl_avl_node *node, void *data),
		 void *data)
{
	if (!n)
		return;
	walk(n->left, fn, data);
	fn(n, data);
	walk(n->right, fn, data);
}

void fl__avl_walk(const struct fl_avl_tree *tree, void (*fn)(struct fl_avl_node *node, void *data),
		  void *data)
{
	walk(tree->root, fn, data);
}

static void drain(struct fl_avl_node *n, void (*fn)(struct fl_avl_node *node, void *data),
		  void *data)
{
	struct fl_avl_node *l, *r;

	if (!n)
		return;
	l = n->left;
	r = n->right;
	drain(l, fn, data);
	drain(r, fn, data);
	n->left = n->right = NULL;
	n->height = 0;
	fn(n, data);
}

void fl__avl_drain(struct fl_avl_tree *tree, void (*fn)(struct fl_avl_node *node, void *data),
		   void *data)
{
	struct fl_avl_node *root = tree->root;

	tree->root = NULL;
	tree->count = 0;
	drain(root, fn, data);
}

/* SPDX-License-Identifier: MIT */
/*
 * An owned timeline's kept signal ends in signal order (kept.h). Fences
 * are nearly always made for rising values, so the list is an array that
 * grows at its end and is consumed from its front: a step that completes
 * k of n ends costs O(k), where looking at every end cost O(n) per step
 * (an owner with 4096 pending fences spent its steps walking them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kept.h"
#include "wrap32.h"

int fl__kept_list_reserve(struct fl__kept_list *l)
{
	if (l->n == l->cap && l->head) {
		/* Room at the front: slide down rather than grow. */
		memmove(l->v, l->v + l->head, (l->n - l->head) * sizeof(*l->v));
		l->n -= l->head;
		l->head = 0;
	}
	if (l->n == l->cap) {
		unsigned int cap = l->cap ? 2 * l->cap : 16;
		struct fl__kept *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	return 0;
}

void fl__kept_list_add(struct fl__kept_list *l, bool is32, const struct fl__kept *e)
{
	/* Before the last one listed: the front is no longer the next to be reached. */
	if (l->n > l->head && !fl__value_reached(is32, e->value, l->v[l->n - 1].value))
		l->unordered = true;
	l->v[l->n++] = *e;
}

struct fl__kept *fl__kept_list_next_reached(struct fl__kept_list *l, bool is32, uint64_t now)
{
	if (l->n == l->head)
		return NULL;
	if (!l->unordered) {
		if (fl__value_reached(is32, now, l->v[l->head].value))
			return &l->v[l->head];
		/*
		 * In order, nothing behind an unreached front is reached,
		 * unless the values span more than a 32-bit timeline's half
		 * (a counter moved that far past a front it left listed): look
		 * at every entry then, as for an unordered list.
		 */
		if (!fl__value_reached(is32, now, l->v[l->n - 1].value))
			return NULL;
	}
	for (unsigned int i = l->head; i < l->n; i++)
		if (fl__value_reached(is32, now, l->v[i].value))
			return &l->v[i];
	return NULL;
}

struct fl__kept *fl__kept_list_find_slot(struct fl__kept_list *l, uint32_t slot)
{
	fl__kept_list_for_each(e, l) if (e->slot == slot) return e;
	return NULL;
}

/* Empty: the next end starts an ordered list again. */
static void emptied(struct fl__kept_list *l)
{
	if (l->n == l->head) {
		l->head = l->n = 0;
		l->unordered = false;
	}
}

void fl__kept_list_remove(struct fl__kept_list *l, struct fl__kept *e)
{
	unsigned int i = (unsigned int)(e - l->v);

	if (i == l->head) {
		l->head++;
	} else {
		memmove(e, e + 1, (l->n - i - 1) * sizeof(*e));
		l->n--;
	}
	emptied(l);
}

unsigned int fl__kept_list_filter(struct fl__kept_list *l, bool (*keep)(struct fl__kept *, void *),
				  void *arg)
{
	unsigned int j = l->head, gone;

	for (unsigned int i = l->head; i < l->n; i++)
		if (keep(&l->v[i], arg))
			l->v[j++] = l->v[i];
	gone = l->n - j;
	l->n = j;
	emptied(l);
	return gone;
}

void fl__kept_list_free(struct fl__kept_list *l)
{
	free(l->v);
	*l = (struct fl__kept_list){ 0 };
}

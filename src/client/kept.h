/* SPDX-License-Identifier: MIT */
/*
 * The signal ends an owner keeps for one of its timelines (kept.c), in
 * signal order, so that a step finds the ends it completes without looking
 * at the others: an owner holding thousands of pending fences pays per
 * step for what the step reaches, as the kernel's sw_sync does. Private to
 * src/client; the caller (client.c, under its connection's lock) owns the
 * ends' fds and closes them, the list only its memory.
 */
#ifndef FL_CLIENT_KEPT_H
#define FL_CLIENT_KEPT_H
#include <stdbool.h>
#include <stdint.h>

#include "service.h"

/* One kept signal end: the fence's value, the end and the slot kicks name it by. */
struct fl__kept {
	uint64_t value;
	int fd;
	struct fdid id;
	uint32_t slot; /* the pooled slot it was made of: what kicks name */
};

/*
 * Entries v[head..n), in the order they were added. While @unordered is
 * false each was added at or after the one before it on the timeline, so
 * the first is the next to be reached; an end added before one already
 * listed (a fence made for an earlier value) sets it, and then each step
 * looks at every entry, until the list is empty again.
 */
struct fl__kept_list {
	struct fl__kept *v;
	unsigned int head, n, cap;
	bool unordered;
};

/*
 * fl__kept_list_reserve() - make room for one more entry, so that the next
 * fl__kept_list_add() cannot fail (an end the daemon was told we keep must
 * be listed). Return: 0, or -ENOMEM.
 */
int fl__kept_list_reserve(struct fl__kept_list *l);

/*
 * fl__kept_list_add() - list a copy of @e, after fl__kept_list_reserve()
 * (its fd stays the caller's to close)
 * @is32: the timeline compares values wrapping at 32 bits
 */
void fl__kept_list_add(struct fl__kept_list *l, bool is32, const struct fl__kept *e);

/*
 * fl__kept_list_next_reached() - an entry whose value a counter at @now has
 * reached (fl__value_reached()), or NULL: in value order while the list is
 * ordered. The caller completes or closes its end, then removes it.
 */
struct fl__kept *fl__kept_list_next_reached(struct fl__kept_list *l, bool is32, uint64_t now);

/* fl__kept_list_find_slot() - the entry made of pooled slot @slot, or NULL. */
struct fl__kept *fl__kept_list_find_slot(struct fl__kept_list *l, uint32_t slot);

/*
 * fl__kept_list_remove() - drop entry @e (one of @l's; its fd untouched).
 * Pointers to later entries are stale after it; to the first, not.
 */
void fl__kept_list_remove(struct fl__kept_list *l, struct fl__kept *e);

/*
 * fl__kept_list_filter() - keep the entries for which @keep(entry, @arg) is
 * true, in their order; @keep closes the ends of the others if it must.
 * Return: how many went.
 */
unsigned int fl__kept_list_filter(struct fl__kept_list *l, bool (*keep)(struct fl__kept *, void *),
				  void *arg);

/* fl__kept_list_free() - forget every entry and free the memory (fds untouched). */
void fl__kept_list_free(struct fl__kept_list *l);

/* Each entry @e of @l, first to last; remove none while iterating. */
#define fl__kept_list_for_each(e, l) \
	for (struct fl__kept *e = (l)->n ? (l)->v + (l)->head : NULL; e && e < (l)->v + (l)->n; e++)

#endif /* FL_CLIENT_KEPT_H */

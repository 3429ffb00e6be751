/* SPDX-License-Identifier: MIT */
/*
 * The server framework's intrusive doubly-linked list (wl_list's shape): a
 * head is a struct fl_server_link whose prev and next point at itself when
 * the list is empty; an element embeds one and is found back with
 * FL_SERVER_CONTAINER_OF(). Private to src/server.
 */
#ifndef FL_SERVER_LIST_H
#define FL_SERVER_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct fl_server_link {
	struct fl_server_link *prev, *next;
};

#define FL_SERVER_CONTAINER_OF(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* An empty list, or an element on none (so that unlinking it again is harmless). */
static inline void fl__server_link_init(struct fl_server_link *l)
{
	l->prev = l->next = l;
}

static inline bool fl__server_link_empty(const struct fl_server_link *head)
{
	return head->next == head;
}

static inline void fl__server_link_add_tail(struct fl_server_link *head, struct fl_server_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static inline void fl__server_link_add_head(struct fl_server_link *head, struct fl_server_link *l)
{
	fl__server_link_add_tail(head->next, l);
}

/* Take @l off its list; it is then on none. */
static inline void fl__server_link_del(struct fl_server_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	fl__server_link_init(l);
}

#endif /* FL_SERVER_LIST_H */

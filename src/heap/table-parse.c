/* SPDX-License-Identifier: MIT */
/*
 * The heap table's INI parser (docs/heap-table.md, "The format"), on the
 * lexer it shares with the display config (src/util/ini.h). Strict on
 * purpose: a typo in a key, a kind or a heap name is an error with its line
 * and column, because a table that silently ignored one would hand out
 * buffers a device cannot use, and that shows up far from the cause.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap-internal.h"
#include "table-internal.h"

enum key {
	K_KIND,
	K_SIZE,
	K_ALIGN,
	K_MIN_SIZE,
	K_MAX_SIZE,
	K_CONTIGUOUS,
	K_HEAPS,
	K_DESCRIPTION,
	K_COUNT,
};

enum section { SEC_NONE, SEC_HEAP, SEC_DEVICE };

static const struct fl_ini_key keys[K_COUNT] = {
	[K_KIND] = { "kind", 1u << SEC_HEAP },
	[K_SIZE] = { "size", 1u << SEC_HEAP },
	[K_ALIGN] = { "align", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_MIN_SIZE] = { "min-size", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_MAX_SIZE] = { "max-size", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_CONTIGUOUS] = { "contiguous", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_HEAPS] = { "heaps", 1u << SEC_DEVICE },
	[K_DESCRIPTION] = { "description", 1u << SEC_HEAP | 1u << SEC_DEVICE },
};

/* A device's list as written, resolved once every [heap] is known. */
struct pending_list {
	char names[TBL_MAX_LIST][TBL_NAME_MAX];
	struct fl_ini_pos at[TBL_MAX_LIST];
	size_t n;
};

struct parser {
	struct fl_ini ini;
	struct fl_heap_table *t;
	struct pending_list *lists; /* one per device */

	enum section sec;
	struct fl_ini_pos sec_at; /* the section header */
	struct fl_ini_pos key_at[K_COUNT]; /* the current section's keys */
	struct fl_ini_pos *heap_at, *device_at; /* every section's header */
};

/* The lexer's section types, in enum section's order after SEC_NONE. */
static const char *const section_types[] = { "heap", "device", NULL };

static const struct fl_ini_syntax syntax = {
	.sections = section_types,
	.sections_expected = "'heap' or 'device'",
	.sections_known = "[heap NAME] and [device NAME]",
	.name_size = TBL_NAME_MAX,
};

/* Checks the finished section's keys together; records nothing on error. */
static int finish_heap(struct parser *p)
{
	struct tbl_heap *h = &p->t->heaps[p->t->num_heaps - 1];
	const struct fl_ini_pos *at = p->key_at;

	if (!at[K_KIND].line)
		return fl__ini_fail_at(&p->ini, p->sec_at, "[heap %s] has no 'kind'", h->name);
	if (h->kind->is_carveout) {
		if (!at[K_SIZE].line)
			return fl__ini_fail_at(&p->ini, p->sec_at,
					       "[heap %s] is a carveout and needs 'size'", h->name);
		if (h->align && h->align > h->size)
			return fl__ini_fail_at(&p->ini, at[K_ALIGN],
					       "align %" PRIu64 " exceeds the size %" PRIu64,
					       h->align, h->size);
		if (h->align && h->size % h->align)
			return fl__ini_fail_at(&p->ini, at[K_SIZE],
					       "size %" PRIu64
					       " is not a multiple of align %" PRIu64,
					       h->size, h->align);
		if (h->min_size > h->size)
			return fl__ini_fail_at(&p->ini, at[K_MIN_SIZE],
					       "min-size %" PRIu64 " exceeds the size %" PRIu64
					       ": no buffer could fit",
					       h->min_size, h->size);
	} else {
		if (at[K_SIZE].line)
			return fl__ini_fail_at(
				&p->ini, at[K_SIZE],
				"'size' is only for carveout heaps, and kind '%s' is not one",
				h->kind_name);
		if (at[K_ALIGN].line)
			return fl__ini_fail_at(
				&p->ini, at[K_ALIGN],
				"'align' can only be set on a carveout; kind '%s' gives the "
				"page size",
				h->kind_name);
	}
	if (at[K_CONTIGUOUS].line && !h->kind->contiguous_settable)
		return fl__ini_fail_at(
			&p->ini, at[K_CONTIGUOUS],
			"'contiguous' can only be set on dma-heap kinds; kind '%s' %s "
			"contiguous",
			h->kind_name, h->kind->contiguous ? "is always" : "is never");
	if (!at[K_CONTIGUOUS].line)
		h->contiguous = h->kind->contiguous;
	if (h->max_size && h->min_size > h->max_size)
		return fl__ini_fail_at(&p->ini, at[K_MIN_SIZE],
				       "min-size %" PRIu64 " exceeds max-size %" PRIu64,
				       h->min_size, h->max_size);
	return 0;
}

static int finish_device(struct parser *p)
{
	struct tbl_device *d = &p->t->devices[p->t->num_devices - 1];

	if (!p->key_at[K_HEAPS].line)
		return fl__ini_fail_at(&p->ini, p->sec_at, "[device %s] has no 'heaps'", d->name);
	if (d->max_size && d->min_size > d->max_size)
		return fl__ini_fail_at(&p->ini, p->key_at[K_MIN_SIZE],
				       "min-size %" PRIu64 " exceeds max-size %" PRIu64,
				       d->min_size, d->max_size);
	return 0;
}

static int finish_section(struct parser *p)
{
	switch (p->sec) {
	case SEC_HEAP:
		return finish_heap(p);
	case SEC_DEVICE:
		return finish_device(p);
	default:
		return 0;
	}
}

static int grow(void **array, size_t n, size_t size)
{
	/* Arrays grow in steps of 8: tables are small, and the limits cap them. */
	if (n % 8 == 0) {
		void *more = realloc(*array, (n + 8) * size);

		if (!more)
			return -ENOMEM;
		*array = more;
	}
	return 0;
}

static int open_section(struct parser *p, enum section sec, const char *name, struct fl_ini_pos at)
{
	struct fl_heap_table *t = p->t;
	int r;

	if (sec == SEC_HEAP) {
		for (size_t i = 0; i < t->num_heaps; i++)
			if (!strcmp(t->heaps[i].name, name))
				return fl__ini_fail_at(
					&p->ini, at,
					"duplicate section [heap %s] (first at line %u)", name,
					p->heap_at[i].line);
		if (t->num_heaps == TBL_MAX_HEAPS)
			return fl__ini_fail_at(&p->ini, at, "more than %d [heap] sections",
					       TBL_MAX_HEAPS);
		if ((r = grow((void **)&t->heaps, t->num_heaps, sizeof(*t->heaps))) ||
		    (r = grow((void **)&p->heap_at, t->num_heaps, sizeof(*p->heap_at))))
			return r;
		memset(&t->heaps[t->num_heaps], 0, sizeof(t->heaps[0]));
		strcpy(t->heaps[t->num_heaps].name, name);
		p->heap_at[t->num_heaps++] = at;
	} else {
		for (size_t i = 0; i < t->num_devices; i++)
			if (!strcmp(t->devices[i].name, name))
				return fl__ini_fail_at(
					&p->ini, at,
					"duplicate section [device %s] (first at line %u)", name,
					p->device_at[i].line);
		if (t->num_devices == TBL_MAX_DEVICES)
			return fl__ini_fail_at(&p->ini, at, "more than %d [device] sections",
					       TBL_MAX_DEVICES);
		if ((r = grow((void **)&t->devices, t->num_devices, sizeof(*t->devices))) ||
		    (r = grow((void **)&p->device_at, t->num_devices, sizeof(*p->device_at))) ||
		    (r = grow((void **)&p->lists, t->num_devices, sizeof(*p->lists))))
			return r;
		memset(&t->devices[t->num_devices], 0, sizeof(t->devices[0]));
		strcpy(t->devices[t->num_devices].name, name);
		p->lists[t->num_devices].n = 0;
		p->device_at[t->num_devices++] = at;
	}
	p->sec = sec;
	p->sec_at = at;
	memset(p->key_at, 0, sizeof(p->key_at));
	return 0;
}

static int parse_size(struct parser *p, const struct fl_ini_value *v, const char *key,
		      uint64_t *ret)
{
	static const struct {
		const char *suffix;
		unsigned int shift;
	} suffixes[] = {
		{ "", 0 },     { "K", 10 },   { "M", 20 },   { "G", 30 },   { "T", 40 },
		{ "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 }, { "TiB", 40 },
	};
	uint64_t n = 0;
	size_t i = 0;

	if (v->text[0] < '0' || v->text[0] > '9')
		return fl__ini_fail(
			&p->ini, v->col,
			"'%s' takes a size: a whole number with an optional K, M, G or T "
			"suffix (powers of 1024), not '%s'",
			key, v->text);
	for (; i < v->len && v->text[i] >= '0' && v->text[i] <= '9'; i++) {
		n = n * 10 + (uint64_t)(v->text[i] - '0');
		if (n > TBL_VALUE_MAX)
			return fl__ini_fail(&p->ini, v->col, "%s '%s' is too large (at most 64T)",
					    key, v->text);
	}
	for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
		if (strcmp(v->text + i, suffixes[k].suffix))
			continue;
		if (n > TBL_VALUE_MAX >> suffixes[k].shift)
			return fl__ini_fail(&p->ini, v->col, "%s '%s' is too large (at most 64T)",
					    key, v->text);
		*ret = n << suffixes[k].shift;
		return 0;
	}
	return fl__ini_fail(&p->ini, fl__ini_col(v, i),
			    "unknown size suffix '%s' in %s (use K, M, G or T)", v->text + i, key);
}

static int parse_key(struct parser *p, enum key k, const struct fl_ini_value *v)
{
	struct fl_heap_table *t = p->t;
	struct tbl_heap *h = p->sec == SEC_HEAP ? &t->heaps[t->num_heaps - 1] : NULL;
	struct tbl_device *d = p->sec == SEC_DEVICE ? &t->devices[t->num_devices - 1] : NULL;
	const char *key = keys[k].name;
	uint64_t n = 0;
	int r;

	if (k == K_SIZE || k == K_ALIGN || k == K_MIN_SIZE || k == K_MAX_SIZE) {
		r = parse_size(p, v, key, &n);
		if (r)
			return r;
		if (n == 0 && k != K_MIN_SIZE)
			return fl__ini_fail(&p->ini, v->col, "%s must be at least 1", key);
		if (k == K_ALIGN && (n & (n - 1)))
			return fl__ini_fail(&p->ini, v->col,
					    "align %" PRIu64 " is not a power of two", n);
	}
	switch (k) {
	case K_KIND:
		for (size_t i = 0; fl__tbl_kinds[i]; i++) {
			const struct tbl_kind *kind = fl__tbl_kinds[i];
			size_t n_name = strlen(kind->name);

			if (!kind->has_arg && !strcmp(v->text, kind->name)) {
				h->kind = kind;
				strcpy(h->kind_name, v->text);
				return 0;
			}
			if (kind->has_arg && v->len > n_name &&
			    !memcmp(v->text, kind->name, n_name) && v->text[n_name] == ':') {
				const char *arg = v->text + n_name + 1;
				size_t n_arg = v->len - n_name - 1;
				char b[8];

				if (!n_arg || n_arg >= TBL_NAME_MAX)
					return fl__ini_fail(
						&p->ini, v->col,
						"'%s:' takes a name of 1 to %d bytes, as in "
						"/dev/dma_heap",
						kind->name, TBL_NAME_MAX - 1);
				for (size_t j = 0; j < n_arg; j++)
					if (!fl__ini_is_name_char(arg[j]) && arg[j] != ',')
						return fl__ini_fail(&p->ini,
								    fl__ini_col(v, n_name + 1 + j),
								    "%s in a %s name",
								    fl__ini_show(arg[j], b),
								    kind->name);
				/* What the open would refuse, refused where it is written. */
				if (!fl__dma_heap_name_ok(arg, n_arg))
					return fl__ini_fail(&p->ini, fl__ini_col(v, n_name + 1),
							    "'%.*s' is not a %s name", (int)n_arg,
							    arg, kind->name);
				h->kind = kind;
				strcpy(h->kind_name, v->text);
				return 0;
			}
		}
		return fl__ini_fail(
			&p->ini, v->col,
			"unknown kind '%s' (kinds are system, carveout, system-contig and "
			"dma-heap:NAME)",
			v->text);
	case K_SIZE:
		h->size = n;
		return 0;
	case K_ALIGN:
		*(h ? &h->align : &d->align) = n;
		return 0;
	case K_MIN_SIZE:
		*(h ? &h->min_size : &d->min_size) = n;
		return 0;
	case K_MAX_SIZE:
		*(h ? &h->max_size : &d->max_size) = n;
		return 0;
	case K_CONTIGUOUS: {
		bool yes;

		if (!strcmp(v->text, "yes") || !strcmp(v->text, "true"))
			yes = true;
		else if (!strcmp(v->text, "no") || !strcmp(v->text, "false"))
			yes = false;
		else
			return fl__ini_fail(&p->ini, v->col, "'contiguous' is yes or no, not '%s'",
					    v->text);
		if (h) {
			h->contiguous = yes;
			h->contiguous_set = true;
		} else {
			d->contiguous = yes;
		}
		return 0;
	}
	case K_DESCRIPTION:
		if (v->len >= TBL_DESC_MAX)
			return fl__ini_fail(&p->ini, v->col, "description longer than %d bytes",
					    TBL_DESC_MAX - 1);
		strcpy(h ? h->description : d->description, v->text);
		return 0;
	case K_HEAPS: {
		struct pending_list *list = &p->lists[t->num_devices - 1];
		size_t cursor = 0, start, n_item;

		if (v->quoted)
			return fl__ini_fail(&p->ini, v->col,
					    "'heaps' is a list of names, not a quoted string");
		while (fl__ini_list_next(v, &cursor, &start, &n_item)) {
			if (!n_item)
				return fl__ini_fail(&p->ini, v->col + (unsigned int)start,
						    "empty name in the list of heaps");
			if (list->n == TBL_MAX_LIST)
				return fl__ini_fail(&p->ini, v->col + (unsigned int)start,
						    "more than %d heaps in one list", TBL_MAX_LIST);
			r = fl__ini_take_name(&p->ini, v->text + start, n_item,
					      v->col + (unsigned int)start, "heap",
					      list->names[list->n], TBL_NAME_MAX);
			if (r)
				return r;
			for (size_t j = 0; j < list->n; j++)
				if (!strcmp(list->names[j], list->names[list->n]))
					return fl__ini_fail(&p->ini, v->col + (unsigned int)start,
							    "heap '%s' is listed twice",
							    list->names[j]);
			list->at[list->n].line = p->ini.line;
			list->at[list->n].col = v->col + (unsigned int)start;
			list->n++;
		}
		return 0;
	}
	default:
		return -EINVAL;
	}
}

/* A "key = value" line; @item is the key the lexer found. */
static int parse_assignment(struct parser *p, const struct fl_ini_item *item)
{
	int k;

	if (p->sec == SEC_NONE)
		return fl__ini_fail(&p->ini, item->col,
				    "'%.*s' before the first [heap] or [device] section",
				    (int)item->key_len, item->key);
	k = fl__ini_assignment(&p->ini, item, keys, K_COUNT, 1u << p->sec,
			       p->sec == SEC_HEAP ? "a [heap] section" : "a [device] section",
			       p->sec == SEC_HEAP ? "kind, size, align, min-size, max-size, "
						    "contiguous, description"
						  : "heaps, align, min-size, max-size, contiguous, "
						    "description",
			       p->key_at);
	return k < 0 ? k : parse_key(p, (enum key)k, &p->ini.value);
}

static int resolve_lists(struct parser *p)
{
	struct fl_heap_table *t = p->t;

	for (size_t i = 0; i < t->num_devices; i++) {
		struct tbl_device *d = &t->devices[i];
		const struct pending_list *list = &p->lists[i];

		for (size_t j = 0; j < list->n; j++) {
			size_t k = 0;

			while (k < t->num_heaps && strcmp(t->heaps[k].name, list->names[j]))
				k++;
			if (k == t->num_heaps)
				return fl__ini_fail_at(
					&p->ini, list->at[j],
					"device '%s' lists heap '%s', which no [heap] section "
					"defines",
					d->name, list->names[j]);
			d->heaps[j] = k;
		}
		d->num_heaps = list->n;
	}
	return 0;
}

int fl__tbl_parse(const char *text, size_t len, const char *origin, struct fl_heap_table *t,
		  char *err, size_t err_size)
{
	struct parser p = { .t = t };
	struct fl_ini_item item;
	int r;

	fl__ini_init(&p.ini, &syntax, text, len, origin, err, err_size);
	while (!(r = fl__ini_next(&p.ini, &item)) && item.kind != FL_INI_END) {
		if (item.kind == FL_INI_KEY) {
			r = parse_assignment(&p, &item);
		} else {
			struct fl_ini_pos at = { item.line, item.col };

			r = finish_section(&p);
			if (!r)
				r = open_section(&p, (enum section)(item.section + 1), item.name,
						 at);
		}
		if (r)
			break;
	}
	if (!r)
		r = finish_section(&p);
	if (!r && !t->num_devices)
		r = fl__ini_fail_at(&p.ini, (struct fl_ini_pos){ p.ini.line ? p.ini.line : 1, 1 },
				    "the table has no [device] section");
	if (!r)
		r = resolve_lists(&p);
	free(p.lists);
	free(p.heap_at);
	free(p.device_at);
	return r;
}

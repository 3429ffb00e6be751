/* SPDX-License-Identifier: MIT */
/*
 * The heap table's INI parser (docs/heap-table.md, "The format"). Strict on
 * purpose: a typo in a key, a kind or a heap name is an error with its line
 * and column, because a table that silently ignored one would hand out
 * buffers a device cannot use, and that shows up far from the cause.
 * Every check is made on bytes with known bounds: the text need not be
 * NUL-terminated, and no input can make the parser read past it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const struct {
	const char *name;
	unsigned int sections; /* 1 << SEC_HEAP | 1 << SEC_DEVICE */
} keys[K_COUNT] = {
	[K_KIND] = { "kind", 1u << SEC_HEAP },
	[K_SIZE] = { "size", 1u << SEC_HEAP },
	[K_ALIGN] = { "align", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_MIN_SIZE] = { "min-size", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_MAX_SIZE] = { "max-size", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_CONTIGUOUS] = { "contiguous", 1u << SEC_HEAP | 1u << SEC_DEVICE },
	[K_HEAPS] = { "heaps", 1u << SEC_DEVICE },
	[K_DESCRIPTION] = { "description", 1u << SEC_HEAP | 1u << SEC_DEVICE },
};

static const char *const section_names[] = { "", "heap", "device" };

struct pos {
	unsigned int line, col; /* line 0: not set */
};

/* A device's list as written, resolved once every [heap] is known. */
struct pending_list {
	char names[TBL_MAX_LIST][TBL_NAME_MAX];
	struct pos at[TBL_MAX_LIST];
	size_t n;
};

/* One value: its text (quotes and escapes removed) and where it starts. */
struct value {
	char text[TBL_LINE_MAX + 1];
	size_t len;
	unsigned int col;
	bool quoted;
};

struct parser {
	const char *origin;
	char *err;
	size_t err_size;
	struct fl_heap_table *t;
	struct pending_list *lists; /* one per device */
	unsigned int line;

	enum section sec;
	struct pos sec_at; /* the section header */
	struct pos key_at[K_COUNT]; /* the current section's keys */
	struct pos *heap_at, *device_at; /* every section's header */
};

/* The message of a parse error at @line:@col. Return: -EINVAL. */
__attribute__((format(printf, 4, 0))) static int
vfail(struct parser *p, unsigned int line, unsigned int col, const char *fmt, va_list ap)
{
	char what[FL_HEAP_TABLE_ERROR_MAX];

	fl__tbl_vmsg(what, sizeof(what), fmt, ap);
	fl__tbl_msg(p->err, p->err_size, "%s:%u:%u: %s", p->origin, line, col, what);
	return -EINVAL;
}

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, unsigned int col,
						      const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(p, p->line, col, fmt, ap);
	va_end(ap);
	return r;
}

/* As fail(), at a position recorded earlier. */
__attribute__((format(printf, 3, 4))) static int fail_at(struct parser *p, struct pos at,
							 const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(p, at.line, at.col, fmt, ap);
	va_end(ap);
	return r;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_name_char(char c)
{
	return is_alnum(c) || c == '-' || c == '_' || c == '.';
}

static bool is_comment(char c)
{
	return c == '#' || c == ';';
}

/* A printable rendering of byte @c for messages. */
static const char *show(char c, char buf[8])
{
	unsigned char u = (unsigned char)c;

	if (c == ' ' || c == '\t')
		snprintf(buf, 8, "%s", c == ' ' ? "a space" : "a tab");
	else if (u > 0x20 && u < 0x7f && u != '\'')
		snprintf(buf, 8, "'%c'", c);
	else
		snprintf(buf, 8, "0x%02x", u);
	return buf;
}

/*
 * Checks that [s, s + n) is a name (1 to TBL_NAME_MAX - 1 of [A-Za-z0-9._-],
 * starting with a letter or digit) and copies it into @out.
 */
static int take_name(struct parser *p, const char *s, size_t n, unsigned int col, const char *what,
		     char out[TBL_NAME_MAX])
{
	char b[8];

	if (n == 0)
		return fail(p, col, "expected a %s name", what);
	if (!is_alnum(s[0]))
		return fail(p, col, "a %s name starts with a letter or digit, not %s", what,
			    show(s[0], b));
	for (size_t i = 0; i < n; i++)
		if (!is_name_char(s[i]))
			return fail(p, col + (unsigned int)i,
				    "%s in a %s name (names are letters, digits, '-', '_', '.')",
				    show(s[i], b), what);
	if (n >= TBL_NAME_MAX)
		return fail(p, col, "%s name '%.*s' is longer than %d bytes", what, (int)n, s,
			    TBL_NAME_MAX - 1);
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static int check_end(struct parser *p, const char *s, const char *e, const char *line,
		     const char *after)
{
	char b[8];

	while (s < e && is_space(*s))
		s++;
	if (s < e && !is_comment(*s))
		return fail(p, (unsigned int)(s - line) + 1, "unexpected %s after %s", show(*s, b),
			    after);
	return 0;
}

/* Checks the finished section's keys together; records nothing on error. */
static int finish_heap(struct parser *p)
{
	struct tbl_heap *h = &p->t->heaps[p->t->num_heaps - 1];
	const struct pos *at = p->key_at;

	if (!at[K_KIND].line)
		return fail_at(p, p->sec_at, "[heap %s] has no 'kind'", h->name);
	if (h->kind->is_carveout) {
		if (!at[K_SIZE].line)
			return fail_at(p, p->sec_at, "[heap %s] is a carveout and needs 'size'",
				       h->name);
		if (h->align && h->align > h->size)
			return fail_at(p, at[K_ALIGN],
				       "align %" PRIu64 " exceeds the size %" PRIu64, h->align,
				       h->size);
		if (h->align && h->size % h->align)
			return fail_at(p, at[K_SIZE],
				       "size %" PRIu64 " is not a multiple of align %" PRIu64,
				       h->size, h->align);
		if (h->min_size > h->size)
			return fail_at(p, at[K_MIN_SIZE],
				       "min-size %" PRIu64 " exceeds the size %" PRIu64
				       ": no buffer could fit",
				       h->min_size, h->size);
	} else {
		if (at[K_SIZE].line)
			return fail_at(
				p, at[K_SIZE],
				"'size' is only for carveout heaps, and kind '%s' is not one",
				h->kind_name);
		if (at[K_ALIGN].line)
			return fail_at(p, at[K_ALIGN],
				       "'align' can only be set on a carveout; kind '%s' gives the "
				       "page size",
				       h->kind_name);
	}
	if (at[K_CONTIGUOUS].line && !h->kind->contiguous_settable)
		return fail_at(p, at[K_CONTIGUOUS],
			       "'contiguous' can only be set on dma-heap kinds; kind '%s' %s "
			       "contiguous",
			       h->kind_name, h->kind->contiguous ? "is always" : "is never");
	if (!at[K_CONTIGUOUS].line)
		h->contiguous = h->kind->contiguous;
	if (h->max_size && h->min_size > h->max_size)
		return fail_at(p, at[K_MIN_SIZE], "min-size %" PRIu64 " exceeds max-size %" PRIu64,
			       h->min_size, h->max_size);
	return 0;
}

static int finish_device(struct parser *p)
{
	struct tbl_device *d = &p->t->devices[p->t->num_devices - 1];

	if (!p->key_at[K_HEAPS].line)
		return fail_at(p, p->sec_at, "[device %s] has no 'heaps'", d->name);
	if (d->max_size && d->min_size > d->max_size)
		return fail_at(p, p->key_at[K_MIN_SIZE],
			       "min-size %" PRIu64 " exceeds max-size %" PRIu64, d->min_size,
			       d->max_size);
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

static int open_section(struct parser *p, enum section sec, const char *name, struct pos at)
{
	struct fl_heap_table *t = p->t;
	int r;

	if (sec == SEC_HEAP) {
		for (size_t i = 0; i < t->num_heaps; i++)
			if (!strcmp(t->heaps[i].name, name))
				return fail_at(p, at,
					       "duplicate section [heap %s] (first at line %u)",
					       name, p->heap_at[i].line);
		if (t->num_heaps == TBL_MAX_HEAPS)
			return fail_at(p, at, "more than %d [heap] sections", TBL_MAX_HEAPS);
		if ((r = grow((void **)&t->heaps, t->num_heaps, sizeof(*t->heaps))) ||
		    (r = grow((void **)&p->heap_at, t->num_heaps, sizeof(*p->heap_at))))
			return r;
		memset(&t->heaps[t->num_heaps], 0, sizeof(t->heaps[0]));
		strcpy(t->heaps[t->num_heaps].name, name);
		p->heap_at[t->num_heaps++] = at;
	} else {
		for (size_t i = 0; i < t->num_devices; i++)
			if (!strcmp(t->devices[i].name, name))
				return fail_at(p, at,
					       "duplicate section [device %s] (first at line %u)",
					       name, p->device_at[i].line);
		if (t->num_devices == TBL_MAX_DEVICES)
			return fail_at(p, at, "more than %d [device] sections", TBL_MAX_DEVICES);
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

/* "[heap NAME]" or "[device NAME]"; @s is at the '['. */
static int parse_section(struct parser *p, const char *line, const char *s, const char *e)
{
	struct pos at = { p->line, (unsigned int)(s - line) + 1 };
	const char *type = ++s, *name;
	char buf[TBL_NAME_MAX];
	enum section sec;
	size_t n;
	char b[8];
	int r;

	while (type < e && is_space(*type))
		type++;
	for (s = type; s < e && *s >= 'a' && *s <= 'z'; s++)
		;
	n = (size_t)(s - type);
	if (n == 4 && !memcmp(type, "heap", 4))
		sec = SEC_HEAP;
	else if (n == 6 && !memcmp(type, "device", 6))
		sec = SEC_DEVICE;
	else if (n == 0)
		return fail(p, (unsigned int)(type - line) + 1,
			    "expected 'heap' or 'device' after '['");
	else
		return fail(p, (unsigned int)(type - line) + 1,
			    "unknown section type '%.*s' (sections are [heap NAME] and "
			    "[device NAME])",
			    (int)n, type);
	if (s == e || !is_space(*s))
		return fail(p, (unsigned int)(s - line) + 1,
			    "expected a space and a name after '%s'", section_names[sec]);
	while (s < e && is_space(*s))
		s++;
	name = s;
	while (s < e && !is_space(*s) && *s != ']')
		s++;
	r = take_name(p, name, (size_t)(s - name), (unsigned int)(name - line) + 1,
		      section_names[sec], buf);
	if (r)
		return r;
	while (s < e && is_space(*s))
		s++;
	if (s == e)
		return fail(p, (unsigned int)(s - line) + 1, "expected ']' to close the section");
	if (*s != ']')
		return fail(p, (unsigned int)(s - line) + 1, "expected ']', not %s", show(*s, b));
	r = check_end(p, s + 1, e, line, "']'");
	if (r)
		return r;
	r = finish_section(p);
	if (r)
		return r;
	return open_section(p, sec, buf, at);
}

/* Reads the value after '=', quoted or bare, into @v; @s is past the '='. */
static int read_value(struct parser *p, const char *line, const char *s, const char *e,
		      const char *key, struct value *v)
{
	char b[8];

	while (s < e && is_space(*s))
		s++;
	v->col = (unsigned int)(s - line) + 1;
	v->len = 0;
	v->quoted = s < e && *s == '"';
	if (v->quoted) {
		const char *open = s++;

		for (;; s++) {
			if (s == e)
				return fail(p, (unsigned int)(open - line) + 1,
					    "unterminated string (no closing '\"')");
			if (*s == '"')
				break;
			if (*s == '\\') {
				if (s + 1 == e || (s[1] != '"' && s[1] != '\\'))
					return fail(p, (unsigned int)(s - line) + 1,
						    "unknown escape (strings know only \\\" and "
						    "\\\\)");
				s++;
			}
			v->text[v->len++] = *s;
		}
		v->text[v->len] = '\0';
		return check_end(p, s + 1, e, line, "the closing '\"'");
	}
	while (s < e && !is_comment(*s))
		v->text[v->len++] = *s++;
	while (v->len && is_space(v->text[v->len - 1]))
		v->len--;
	v->text[v->len] = '\0';
	if (!v->len)
		return fail(p, v->col, "'%s' has no value", key);
	for (size_t i = 0; i < v->len; i++)
		if ((unsigned char)v->text[i] >= 0x80)
			return fail(p, v->col + (unsigned int)i,
				    "byte %s outside quotes (only quoted values may hold non-ASCII "
				    "text)",
				    show(v->text[i], b));
	return 0;
}

/* Where byte @i of @v is on the line, as well as a quoted value allows. */
static unsigned int col_of(const struct value *v, size_t i)
{
	return v->quoted ? v->col : v->col + (unsigned int)i;
}

static int parse_size(struct parser *p, const struct value *v, const char *key, uint64_t *ret)
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
		return fail(p, v->col,
			    "'%s' takes a size: a whole number with an optional K, M, G or T "
			    "suffix (powers of 1024), not '%s'",
			    key, v->text);
	for (; i < v->len && v->text[i] >= '0' && v->text[i] <= '9'; i++) {
		n = n * 10 + (uint64_t)(v->text[i] - '0');
		if (n > TBL_VALUE_MAX)
			return fail(p, v->col, "%s '%s' is too large (at most 64T)", key, v->text);
	}
	for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
		if (strcmp(v->text + i, suffixes[k].suffix))
			continue;
		if (n > TBL_VALUE_MAX >> suffixes[k].shift)
			return fail(p, v->col, "%s '%s' is too large (at most 64T)", key, v->text);
		*ret = n << suffixes[k].shift;
		return 0;
	}
	return fail(p, col_of(v, i), "unknown size suffix '%s' in %s (use K, M, G or T)",
		    v->text + i, key);
}

static int parse_key(struct parser *p, enum key k, const struct value *v)
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
			return fail(p, v->col, "%s must be at least 1", key);
		if (k == K_ALIGN && (n & (n - 1)))
			return fail(p, v->col, "align %" PRIu64 " is not a power of two", n);
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
					return fail(p, v->col,
						    "'%s:' takes a name of 1 to %d bytes, as in "
						    "/dev/dma_heap",
						    kind->name, TBL_NAME_MAX - 1);
				for (size_t j = 0; j < n_arg; j++)
					if (!is_name_char(arg[j]) && arg[j] != ',')
						return fail(p, col_of(v, n_name + 1 + j),
							    "%s in a %s name", show(arg[j], b),
							    kind->name);
				h->kind = kind;
				strcpy(h->kind_name, v->text);
				return 0;
			}
		}
		return fail(p, v->col,
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
			return fail(p, v->col, "'contiguous' is yes or no, not '%s'", v->text);
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
			return fail(p, v->col, "description longer than %d bytes",
				    TBL_DESC_MAX - 1);
		strcpy(h ? h->description : d->description, v->text);
		return 0;
	case K_HEAPS: {
		struct pending_list *list = &p->lists[t->num_devices - 1];
		size_t i = 0;

		if (v->quoted)
			return fail(p, v->col, "'heaps' is a list of names, not a quoted string");
		for (;;) {
			size_t start, end;

			while (i < v->len && is_space(v->text[i]))
				i++;
			start = i;
			while (i < v->len && v->text[i] != ',')
				i++;
			end = i;
			while (end > start && is_space(v->text[end - 1]))
				end--;
			if (end == start)
				return fail(p, v->col + (unsigned int)start,
					    "empty name in the list of heaps");
			if (list->n == TBL_MAX_LIST)
				return fail(p, v->col + (unsigned int)start,
					    "more than %d heaps in one list", TBL_MAX_LIST);
			r = take_name(p, v->text + start, end - start, v->col + (unsigned int)start,
				      "heap", list->names[list->n]);
			if (r)
				return r;
			for (size_t j = 0; j < list->n; j++)
				if (!strcmp(list->names[j], list->names[list->n]))
					return fail(p, v->col + (unsigned int)start,
						    "heap '%s' is listed twice", list->names[j]);
			list->at[list->n].line = p->line;
			list->at[list->n].col = v->col + (unsigned int)start;
			list->n++;
			if (i == v->len)
				return 0;
			i++; /* the ',' */
		}
	}
	default:
		return -EINVAL;
	}
}

static int parse_assignment(struct parser *p, const char *line, const char *s, const char *e)
{
	const char *key = s;
	struct value *v;
	unsigned int col = (unsigned int)(s - line) + 1;
	enum key k = K_COUNT;
	size_t n;
	char b[8];
	int r;

	if (!(*s >= 'a' && *s <= 'z'))
		return fail(p, col, "expected a key, a [section] or a comment, not %s",
			    show(*s, b));
	while (s < e && ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
		s++;
	n = (size_t)(s - key);
	if (p->sec == SEC_NONE)
		return fail(p, col, "'%.*s' before the first [heap] or [device] section", (int)n,
			    key);
	for (int i = 0; i < K_COUNT; i++)
		if (strlen(keys[i].name) == n && !memcmp(keys[i].name, key, n) &&
		    (keys[i].sections & (1u << p->sec)))
			k = (enum key)i;
	if (k == K_COUNT)
		return fail(p, col, "unknown key '%.*s' in a [%s] section (known: %s)", (int)n, key,
			    section_names[p->sec],
			    p->sec == SEC_HEAP ? "kind, size, align, min-size, max-size, "
						 "contiguous, description"
					       : "heaps, align, min-size, max-size, contiguous, "
						 "description");
	if (p->key_at[k].line)
		return fail(p, col, "duplicate key '%s' (first set at line %u)", keys[k].name,
			    p->key_at[k].line);
	while (s < e && is_space(*s))
		s++;
	if (s == e || *s != '=')
		return fail(p, (unsigned int)(s - line) + 1, "expected '=' after '%s'",
			    keys[k].name);
	v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	r = read_value(p, line, s + 1, e, keys[k].name, v);
	if (!r)
		r = parse_key(p, k, v);
	free(v);
	if (!r) {
		p->key_at[k].line = p->line;
		p->key_at[k].col = col;
	}
	return r;
}

static int parse_line(struct parser *p, const char *line, size_t n)
{
	const char *s = line, *e = line + n;
	char b[8];

	if (n > TBL_LINE_MAX)
		return fail(p, TBL_LINE_MAX + 1, "line longer than %d bytes", TBL_LINE_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)line[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return fail(p, (unsigned int)i + 1, "control character %s",
				    show(line[i], b));
	}
	while (s < e && is_space(*s))
		s++;
	if (s == e || is_comment(*s))
		return 0;
	if (*s == '[')
		return parse_section(p, line, s, e);
	return parse_assignment(p, line, s, e);
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
				return fail_at(
					p, list->at[j],
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
	struct parser p = {
		.origin = origin,
		.err = err,
		.err_size = err_size,
		.t = t,
	};
	size_t at = 0;
	int r = 0;

	while (at < len && !r) {
		const char *line = text + at, *nl = memchr(line, '\n', len - at);
		size_t n = nl ? (size_t)(nl - line) : len - at;

		p.line++;
		at += n + (nl != NULL);
		if (n && line[n - 1] == '\r')
			n--;
		r = parse_line(&p, line, n);
	}
	if (!r)
		r = finish_section(&p);
	if (!r && !t->num_devices) {
		p.line = p.line ? p.line : 1;
		r = fail(&p, 1, "the table has no [device] section");
	}
	if (!r)
		r = resolve_lists(&p);
	free(p.lists);
	free(p.heap_at);
	free(p.device_at);
	return r;
}

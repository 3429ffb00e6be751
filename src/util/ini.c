/* SPDX-License-Identifier: MIT */
/*
 * The strict INI lexer (ini.h), moved out of the heap table's parser so
 * that the display config reads the same grammar with the same messages.
 * Strict on purpose: a typo in a file that configures memory or displays
 * shows up far from its cause unless the parser stops at it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ini.h"

void fl__ini_vmsg(char *err, size_t size, const char *fmt, va_list ap)
{
	int n;

	if (!err || !size)
		return;
	n = vsnprintf(err, size, fmt, ap);
	if (n < 0)
		err[0] = '\0';
	else if ((size_t)n >= size && size >= 4)
		memcpy(err + size - 4, "...", 4);
}

void fl__ini_msg(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fl__ini_vmsg(err, size, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 4, 0))) static int
vfail(struct fl_ini *ini, unsigned int line, unsigned int col, const char *fmt, va_list ap)
{
	char what[512]; /* the heap table's FL_HEAP_TABLE_ERROR_MAX */

	fl__ini_vmsg(what, sizeof(what), fmt, ap);
	fl__ini_msg(ini->err, ini->err_size, "%s:%u:%u: %s", ini->origin, line, col, what);
	return -EINVAL;
}

int fl__ini_fail_at(struct fl_ini *ini, struct fl_ini_pos at, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(ini, at.line, at.col, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int fl__ini_fail(struct fl_ini *ini, unsigned int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(ini, ini->line, col, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The column of @s on the current line. */
static unsigned int col(const struct fl_ini *ini, const char *s)
{
	return (unsigned int)(s - ini->cur) + 1;
}

bool fl__ini_is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool fl__ini_is_name_char(char c)
{
	return is_alnum(c) || c == '-' || c == '_' || c == '.';
}

static bool is_comment(char c)
{
	return c == '#' || c == ';';
}

const char *fl__ini_show(char c, char buf[8])
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

bool fl__ini_list_next(const struct fl_ini_value *v, size_t *cursor, size_t *ret_start,
		       size_t *ret_len)
{
	size_t i = *cursor, end;

	if (i > v->len)
		return false;
	while (i < v->len && fl__ini_is_space(v->text[i]))
		i++;
	*ret_start = i;
	while (i < v->len && v->text[i] != ',')
		i++;
	end = i;
	while (end > *ret_start && fl__ini_is_space(v->text[end - 1]))
		end--;
	*ret_len = end - *ret_start;
	*cursor = i + 1; /* past the ',', or past the end: done */
	return true;
}

unsigned int fl__ini_col(const struct fl_ini_value *v, size_t i)
{
	return v->quoted ? v->col : v->col + (unsigned int)i;
}

void fl__ini_init(struct fl_ini *ini, const struct fl_ini_syntax *syntax, const char *text,
		  size_t len, const char *origin, char *err, size_t err_size)
{
	*ini = (struct fl_ini){ .syntax = syntax,
				.origin = origin,
				.err = err,
				.err_size = err_size,
				.text = text,
				.len = len };
}

int fl__ini_take_name(struct fl_ini *ini, const char *s, size_t n, unsigned int at,
		      const char *what, char *out, size_t size)
{
	char b[8];

	if (n == 0)
		return fl__ini_fail(ini, at, "expected a %s name", what);
	if (!is_alnum(s[0]))
		return fl__ini_fail(ini, at, "a %s name starts with a letter or digit, not %s",
				    what, fl__ini_show(s[0], b));
	for (size_t i = 0; i < n; i++)
		if (!fl__ini_is_name_char(s[i]))
			return fl__ini_fail(
				ini, at + (unsigned int)i,
				"%s in a %s name (names are letters, digits, '-', '_', '.')",
				fl__ini_show(s[i], b), what);
	if (n >= size)
		return fl__ini_fail(ini, at, "%s name '%.*s' is longer than %zu bytes", what,
				    (int)n, s, size - 1);
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* Nothing but spaces and a comment may follow @after. */
static int check_end(struct fl_ini *ini, const char *s, const char *after)
{
	char b[8];

	while (s < ini->end && fl__ini_is_space(*s))
		s++;
	if (s < ini->end && !is_comment(*s))
		return fl__ini_fail(ini, col(ini, s), "unexpected %s after %s", fl__ini_show(*s, b),
				    after);
	return 0;
}

/* "[type NAME]"; @s is at the '['. */
static int section(struct fl_ini *ini, const char *s, struct fl_ini_item *item)
{
	const struct fl_ini_syntax *syn = ini->syntax;
	const char *type = ++s, *name, *e = ini->end;
	size_t n, k;
	char b[8];
	int r;

	while (type < e && fl__ini_is_space(*type))
		type++;
	for (s = type; s < e && *s >= 'a' && *s <= 'z'; s++)
		;
	n = (size_t)(s - type);
	for (k = 0; syn->sections[k]; k++)
		if (strlen(syn->sections[k]) == n && !memcmp(syn->sections[k], type, n))
			break;
	if (n == 0)
		return fl__ini_fail(ini, col(ini, type), "expected %s after '['",
				    syn->sections_expected);
	if (!syn->sections[k])
		return fl__ini_fail(ini, col(ini, type),
				    "unknown section type '%.*s' (sections are %s)", (int)n, type,
				    syn->sections_known);
	if (s == e || !fl__ini_is_space(*s))
		return fl__ini_fail(ini, col(ini, s), "expected a space and a name after '%s'",
				    syn->sections[k]);
	while (s < e && fl__ini_is_space(*s))
		s++;
	name = s;
	while (s < e && !fl__ini_is_space(*s) && *s != ']')
		s++;
	r = fl__ini_take_name(ini, name, (size_t)(s - name), col(ini, name), syn->sections[k],
			      item->name, syn->name_size);
	if (r)
		return r;
	while (s < e && fl__ini_is_space(*s))
		s++;
	if (s == e)
		return fl__ini_fail(ini, col(ini, s), "expected ']' to close the section");
	if (*s != ']')
		return fl__ini_fail(ini, col(ini, s), "expected ']', not %s", fl__ini_show(*s, b));
	item->kind = FL_INI_SECTION;
	item->section = k;
	return check_end(ini, s + 1, "']'");
}

/* Lexes the line [ini->cur, ini->end); 1 if it holds an item. */
static int line(struct fl_ini *ini, struct fl_ini_item *item)
{
	const char *s = ini->cur, *e = ini->end;
	size_t n = (size_t)(e - s);
	char b[8];
	int r;

	if (n > FL_INI_LINE_MAX)
		return fl__ini_fail(ini, FL_INI_LINE_MAX + 1, "line longer than %d bytes",
				    FL_INI_LINE_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return fl__ini_fail(ini, (unsigned int)i + 1, "control character %s",
					    fl__ini_show(s[i], b));
	}
	while (s < e && fl__ini_is_space(*s))
		s++;
	if (s == e || is_comment(*s))
		return 0;
	item->line = ini->line;
	item->col = col(ini, s);
	if (*s == '[') {
		r = section(ini, s, item);
		return r ? r : 1;
	}
	if (!(*s >= 'a' && *s <= 'z'))
		return fl__ini_fail(ini, item->col,
				    "expected a key, a [section] or a comment, not %s",
				    fl__ini_show(*s, b));
	item->kind = FL_INI_KEY;
	item->key = s;
	while (s < e && ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
		s++;
	item->key_len = (size_t)(s - item->key);
	ini->rest = s;
	return 1;
}

int fl__ini_next(struct fl_ini *ini, struct fl_ini_item *item)
{
	while (ini->at < ini->len) {
		const char *start = ini->text + ini->at;
		const char *nl = memchr(start, '\n', ini->len - ini->at);
		size_t n = nl ? (size_t)(nl - start) : ini->len - ini->at;
		int r;

		ini->line++;
		ini->at += n + (nl != NULL);
		if (n && start[n - 1] == '\r')
			n--;
		ini->cur = start;
		ini->end = start + n;
		ini->rest = NULL;
		r = line(ini, item);
		if (r)
			return r < 0 ? r : 0;
	}
	item->kind = FL_INI_END;
	return 0;
}

int fl__ini_value(struct fl_ini *ini, const char *key, struct fl_ini_value *v)
{
	const char *s = ini->rest, *e = ini->end;
	char b[8];

	while (s < e && fl__ini_is_space(*s))
		s++;
	if (s == e || *s != '=')
		return fl__ini_fail(ini, col(ini, s), "expected '=' after '%s'", key);
	s++;
	while (s < e && fl__ini_is_space(*s))
		s++;
	v->col = col(ini, s);
	v->len = 0;
	v->quoted = s < e && *s == '"';
	if (v->quoted) {
		const char *open = s++;

		for (;; s++) {
			if (s == e)
				return fl__ini_fail(ini, col(ini, open),
						    "unterminated string (no closing '\"')");
			if (*s == '"')
				break;
			if (*s == '\\') {
				if (s + 1 == e || (s[1] != '"' && s[1] != '\\'))
					return fl__ini_fail(
						ini, col(ini, s),
						"unknown escape (strings know only \\\" and "
						"\\\\)");
				s++;
			}
			v->text[v->len++] = *s;
		}
		v->text[v->len] = '\0';
		return check_end(ini, s + 1, "the closing '\"'");
	}
	while (s < e && !is_comment(*s))
		v->text[v->len++] = *s++;
	while (v->len && fl__ini_is_space(v->text[v->len - 1]))
		v->len--;
	v->text[v->len] = '\0';
	if (!v->len)
		return fl__ini_fail(ini, v->col, "'%s' has no value", key);
	for (size_t i = 0; i < v->len; i++)
		if ((unsigned char)v->text[i] >= 0x80)
			return fl__ini_fail(
				ini, v->col + (unsigned int)i,
				"byte %s outside quotes (only quoted values may hold non-ASCII "
				"text)",
				fl__ini_show(v->text[i], b));
	return 0;
}

int fl__ini_assignment(struct fl_ini *ini, const struct fl_ini_item *item,
		       const struct fl_ini_key *keys, size_t n, unsigned int in, const char *where,
		       const char *known, struct fl_ini_pos *set)
{
	size_t k = n;
	int r;

	for (size_t i = 0; i < n; i++)
		if (strlen(keys[i].name) == item->key_len &&
		    !memcmp(keys[i].name, item->key, item->key_len) && (keys[i].sections & in))
			k = i;
	if (k == n)
		return fl__ini_fail(ini, item->col, "unknown key '%.*s' in %s (known: %s)",
				    (int)item->key_len, item->key, where, known);
	if (set[k].line)
		return fl__ini_fail(ini, item->col, "duplicate key '%s' (first set at line %u)",
				    keys[k].name, set[k].line);
	r = fl__ini_value(ini, keys[k].name, &ini->value);
	if (r)
		return r;
	set[k].line = item->line;
	set[k].col = item->col;
	return (int)k;
}

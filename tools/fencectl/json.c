/* SPDX-License-Identifier: MIT */
/*
 * Recursive descent over RFC 8259's grammar. Every value is one malloc'd
 * node; arrays and objects grow their vectors by doubling. Errors unwind by
 * freeing the partial tree, so a failed parse leaks nothing.
 */
#include "json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const unsigned char *p, *end, *start;
	size_t nodes;
	int error; /* the errno of the first error */
	struct json_error *err;
};

static int fail(struct parser *ps, int error, const unsigned char *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct parser *ps, int error, const unsigned char *at, const char *fmt, ...)
{
	va_list ap;

	if (ps->error)
		return -ps->error;
	ps->error = error;
	if (ps->err) {
		unsigned int line = 1, column = 1;

		for (const unsigned char *q = ps->start; q < at; q++) {
			if (*q == '\n') {
				line++;
				column = 1;
			} else if ((*q & 0xc0) != 0x80) { /* count characters, not bytes */
				column++;
			}
		}
		ps->err->offset = (size_t)(at - ps->start);
		ps->err->line = line;
		ps->err->column = column;
		va_start(ap, fmt);
		vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
		va_end(ap);
	}
	return -error;
}

const char *json_type_name(enum json_type type)
{
	static const char *const names[] = { "null",   "false", "true",	 "number",
					     "string", "array", "object" };

	return (unsigned int)type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* A printable description of the byte at @p for messages. */
static const char *describe(const struct parser *ps, const unsigned char *p, char buf[16])
{
	if (p >= ps->end)
		return "end of input";
	if (*p >= 0x20 && *p < 0x7f && *p != '\'')
		snprintf(buf, 16, "'%c'", *p);
	else
		snprintf(buf, 16, "byte 0x%02x", *p);
	return buf;
}

static struct json *new_node(struct parser *ps, enum json_type type, const unsigned char *at)
{
	struct json *v;

	if (ps->nodes >= JSON_MAX_NODES) {
		fail(ps, EFBIG, at, "more than %zu values", (size_t)JSON_MAX_NODES);
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		fail(ps, ENOMEM, at, "out of memory");
		return NULL;
	}
	ps->nodes++;
	v->type = type;
	v->offset = (size_t)(at - ps->start);
	return v;
}

void json_free(struct json *v)
{
	if (!v)
		return;
	switch (v->type) {
	case JSON_STRING:
		free(v->str);
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < v->n_items; i++)
			json_free(v->items[i]);
		free(v->items);
		break;
	case JSON_OBJECT:
		for (size_t i = 0; i < v->n_members; i++) {
			free(v->members[i].key);
			json_free(v->members[i].value);
		}
		free(v->members);
		break;
	default:
		break;
	}
	free(v);
}

static int hex4(const unsigned char *p, unsigned int *ret)
{
	unsigned int v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned int c = p[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v << 4 | d;
	}
	*ret = v;
	return 0;
}

/* Length of the valid UTF-8 sequence at @p (1-4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned int c = p[0], cp;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static size_t put_utf8(char *out, unsigned int cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * The string starting at ps->p (a '"'), decoded into a new buffer. Decoding
 * never grows the text (an escape is at least as long as its UTF-8), so the
 * raw length bounds the buffer.
 */
static int parse_string(struct parser *ps, char **ret, size_t *ret_len)
{
	const unsigned char *open = ps->p, *q = ps->p + 1, *close;
	char *out, *o;
	char buf[16];

	for (close = q; close < ps->end && *close != '"'; close++)
		if (*close == '\\' && close + 1 < ps->end)
			close++;
	if (close >= ps->end)
		return fail(ps, EINVAL, open, "unterminated string");
	out = malloc((size_t)(close - q) + 1);
	if (!out)
		return fail(ps, ENOMEM, open, "out of memory");
	o = out;
	while (q < close) {
		unsigned int c = *q;

		if (c < 0x20) {
			fail(ps, EINVAL, q, "control character %s in a string (escape it)",
			     describe(ps, q, buf));
			goto err;
		}
		if (c >= 0x80) {
			size_t n = utf8_len(q, close);

			if (!n) {
				fail(ps, EINVAL, q, "invalid UTF-8 in a string");
				goto err;
			}
			memcpy(o, q, n);
			o += n;
			q += n;
			continue;
		}
		if (c != '\\') {
			*o++ = (char)c;
			q++;
			continue;
		}
		switch (q[1]) {
		case '"':
		case '\\':
		case '/':
			*o++ = (char)q[1];
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u': {
			unsigned int cp, lo;

			if (close - q < 6 || hex4(q + 2, &cp) < 0) {
				fail(ps, EINVAL, q, "bad \\u escape (4 hex digits expected)");
				goto err;
			}
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				fail(ps, EINVAL, q, "lone low surrogate \\u%04x", cp);
				goto err;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (close - q < 12 || q[6] != '\\' || q[7] != 'u' ||
				    hex4(q + 8, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff) {
					fail(ps, EINVAL, q,
					     "high surrogate \\u%04x without its pair", cp);
					goto err;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				q += 6;
			}
			if (cp == 0) {
				fail(ps, EINVAL, q, "\\u0000 in a string is not supported");
				goto err;
			}
			o += put_utf8(o, cp);
			q += 4;
			break;
		}
		default:
			fail(ps, EINVAL, q, "bad escape \\%c",
			     q[1] >= 0x20 && q[1] < 0x7f ? q[1] : '?');
			goto err;
		}
		q += 2;
	}
	*o = '\0';
	ps->p = close + 1;
	*ret = out;
	*ret_len = (size_t)(o - out);
	return 0;
err:
	free(out);
	return -ps->error;
}

static int parse_number(struct parser *ps, struct json *v)
{
	const unsigned char *s = ps->p, *q = ps->p;
	bool integer = true;
	char buf[16], *copy, *endp;

	if (q < ps->end && *q == '-')
		q++;
	if (q < ps->end && *q == '0') {
		q++;
		if (q < ps->end && *q >= '0' && *q <= '9')
			return fail(ps, EINVAL, q, "leading zero in a number");
	} else if (q < ps->end && *q >= '1' && *q <= '9') {
		while (q < ps->end && *q >= '0' && *q <= '9')
			q++;
	} else {
		return fail(ps, EINVAL, q, "digit expected, got %s", describe(ps, q, buf));
	}
	if (q < ps->end && *q == '.') {
		integer = false;
		q++;
		if (q >= ps->end || *q < '0' || *q > '9')
			return fail(ps, EINVAL, q, "digit expected after '.'");
		while (q < ps->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < ps->end && (*q == 'e' || *q == 'E')) {
		integer = false;
		q++;
		if (q < ps->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= ps->end || *q < '0' || *q > '9')
			return fail(ps, EINVAL, q, "digit expected in the exponent");
		while (q < ps->end && *q >= '0' && *q <= '9')
			q++;
	}
	/* strtod() needs a terminated copy: the input need not be. */
	copy = strndup((const char *)s, (size_t)(q - s));
	if (!copy)
		return fail(ps, ENOMEM, s, "out of memory");
	v->num = strtod(copy, &endp);
	if (!isfinite(v->num)) {
		free(copy);
		return fail(ps, EINVAL, s, "number out of range");
	}
	if (integer) {
		long long i;

		errno = 0;
		i = strtoll(copy, &endp, 10);
		if (errno == 0 && *endp == '\0') {
			v->is_int = true;
			v->i = i;
		}
	}
	free(copy);
	ps->p = q;
	return 0;
}

static int parse_value(struct parser *ps, unsigned int depth, struct json **ret);

static int parse_array(struct parser *ps, unsigned int depth, struct json *v)
{
	size_t cap = 0;
	char buf[16];

	ps->p++; /* '[' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		struct json *item;
		int r;

		if (v->n_items == cap) {
			struct json **more;

			cap = cap ? 2 * cap : 4;
			more = realloc(v->items, cap * sizeof(*more));
			if (!more)
				return fail(ps, ENOMEM, ps->p, "out of memory");
			v->items = more;
		}
		r = parse_value(ps, depth + 1, &item);
		if (r < 0)
			return r;
		v->items[v->n_items++] = item;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			return 0;
		}
		return fail(ps, EINVAL, ps->p, "',' or ']' expected, got %s",
			    describe(ps, ps->p, buf));
	}
}

static int parse_object(struct parser *ps, unsigned int depth, struct json *v)
{
	size_t cap = 0;
	char buf[16];

	ps->p++; /* '{' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		struct json_member *m;
		size_t len;
		int r;

		if (v->n_members == cap) {
			struct json_member *more;

			cap = cap ? 2 * cap : 4;
			more = realloc(v->members, cap * sizeof(*more));
			if (!more)
				return fail(ps, ENOMEM, ps->p, "out of memory");
			v->members = more;
		}
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"')
			return fail(ps, EINVAL, ps->p, "a string key expected, got %s",
				    describe(ps, ps->p, buf));
		m = &v->members[v->n_members];
		r = parse_string(ps, &m->key, &len);
		if (r < 0)
			return r;
		m->value = NULL;
		v->n_members++; /* now json_free() frees the key */
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return fail(ps, EINVAL, ps->p, "':' expected, got %s",
				    describe(ps, ps->p, buf));
		ps->p++;
		r = parse_value(ps, depth + 1, &m->value);
		if (r < 0)
			return r;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			return 0;
		}
		return fail(ps, EINVAL, ps->p, "',' or '}' expected, got %s",
			    describe(ps, ps->p, buf));
	}
}

static int parse_literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return fail(ps, EINVAL, ps->p, "'%s' expected", word);
	ps->p += n;
	return 0;
}

static int parse_value(struct parser *ps, unsigned int depth, struct json **ret)
{
	const unsigned char *at;
	struct json *v;
	char buf[16];
	int r;

	skip_ws(ps);
	at = ps->p;
	if (depth > JSON_MAX_DEPTH)
		return fail(ps, EINVAL, at, "nested deeper than %d", JSON_MAX_DEPTH);
	if (at >= ps->end)
		return fail(ps, EINVAL, at, "a value expected, got end of input");
	switch (*at) {
	case '{':
		v = new_node(ps, JSON_OBJECT, at);
		r = v ? parse_object(ps, depth, v) : -ps->error;
		break;
	case '[':
		v = new_node(ps, JSON_ARRAY, at);
		r = v ? parse_array(ps, depth, v) : -ps->error;
		break;
	case '"':
		v = new_node(ps, JSON_STRING, at);
		r = v ? parse_string(ps, &v->str, &v->len) : -ps->error;
		break;
	case 't':
		v = new_node(ps, JSON_TRUE, at);
		r = v ? parse_literal(ps, "true") : -ps->error;
		break;
	case 'f':
		v = new_node(ps, JSON_FALSE, at);
		r = v ? parse_literal(ps, "false") : -ps->error;
		break;
	case 'n':
		v = new_node(ps, JSON_NULL, at);
		r = v ? parse_literal(ps, "null") : -ps->error;
		break;
	default:
		if (*at == '-' || (*at >= '0' && *at <= '9')) {
			v = new_node(ps, JSON_NUMBER, at);
			r = v ? parse_number(ps, v) : -ps->error;
		} else {
			return fail(ps, EINVAL, at, "a value expected, got %s",
				    describe(ps, at, buf));
		}
		break;
	}
	if (r < 0) {
		json_free(v);
		return r;
	}
	*ret = v;
	return 0;
}

int json_parse(const char *text, size_t size, struct json **ret, struct json_error *err)
{
	struct parser ps = {
		.p = (const unsigned char *)text,
		.end = (const unsigned char *)text + size,
		.start = (const unsigned char *)text,
		.err = err,
	};
	struct json *v;
	char buf[16];
	int r;

	if (size > JSON_MAX_SIZE)
		return fail(&ps, EFBIG, ps.p, "input larger than %zu bytes", JSON_MAX_SIZE);
	r = parse_value(&ps, 0, &v);
	if (r < 0)
		return r;
	skip_ws(&ps);
	if (ps.p < ps.end) {
		json_free(v);
		return fail(&ps, EINVAL, ps.p, "%s after the value", describe(&ps, ps.p, buf));
	}
	*ret = v;
	return 0;
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = obj->n_members; i-- > 0;)
		if (!strcmp(obj->members[i].key, key))
			return obj->members[i].value;
	return NULL;
}

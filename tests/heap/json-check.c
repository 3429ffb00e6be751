/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-check.h"

struct parser {
	const char *s, *p;
	char *err;
	size_t err_size;
	int depth;
};

static int fail(struct parser *ps, const char *what)
{
	if (!ps->err[0])
		snprintf(ps->err, ps->err_size, "%s at offset %td", what, ps->p - ps->s);
	return -1;
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static int parse_value(struct parser *ps, struct json *v);

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int parse_string(struct parser *ps, char **ret)
{
	size_t cap = 16, n = 0;
	char *out = malloc(cap);

	if (!out || *ps->p != '"')
		return free(out), fail(ps, "string expected");
	ps->p++;
	for (;;) {
		unsigned char c = (unsigned char)*ps->p++;

		if (n + 2 > cap) {
			char *more = realloc(out, cap *= 2);

			if (!more)
				return free(out), fail(ps, "out of memory");
			out = more;
		}
		if (c == '"')
			break;
		if (c < 0x20)
			return free(out), ps->p--, fail(ps, "raw control character in string");
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		c = (unsigned char)*ps->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			out[n++] = (char)c;
			break;
		case 'b':
			out[n++] = '\b';
			break;
		case 'f':
			out[n++] = '\f';
			break;
		case 'n':
			out[n++] = '\n';
			break;
		case 'r':
			out[n++] = '\r';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case 'u': {
			int code = 0;

			for (int i = 0; i < 4; i++) {
				int h = hexval(ps->p[i]);

				if (h < 0)
					return free(out), fail(ps, "bad \\u escape");
				code = code * 16 + h;
			}
			ps->p += 4;
			out[n++] = code < 0x100 ? (char)code : '?';
			break;
		}
		default:
			return free(out), ps->p--, fail(ps, "bad escape");
		}
	}
	out[n] = '\0';
	*ret = out;
	return 0;
}

static int parse_number(struct parser *ps, struct json *v)
{
	const char *start = ps->p;
	char *end;

	if (*ps->p == '-')
		ps->p++;
	if (*ps->p == '0')
		ps->p++;
	else if (*ps->p >= '1' && *ps->p <= '9')
		while (isdigit((unsigned char)*ps->p))
			ps->p++;
	else
		return fail(ps, "bad number");
	if (*ps->p == '.') {
		ps->p++;
		if (!isdigit((unsigned char)*ps->p))
			return fail(ps, "bad fraction");
		while (isdigit((unsigned char)*ps->p))
			ps->p++;
	}
	if (*ps->p == 'e' || *ps->p == 'E') {
		ps->p++;
		if (*ps->p == '+' || *ps->p == '-')
			ps->p++;
		if (!isdigit((unsigned char)*ps->p))
			return fail(ps, "bad exponent");
		while (isdigit((unsigned char)*ps->p))
			ps->p++;
	}
	v->type = JSON_NUMBER;
	v->number = strtod(start, &end);
	return end == ps->p ? 0 : fail(ps, "bad number");
}

static int add_member(struct parser *ps, struct json *v, char *key)
{
	struct json *items = realloc(v->items, (v->n + 1) * sizeof(*items));
	char **keys = NULL;

	if (!items)
		return free(key), fail(ps, "out of memory");
	v->items = items;
	if (v->type == JSON_OBJECT) {
		keys = realloc(v->keys, (v->n + 1) * sizeof(*keys));
		if (!keys)
			return free(key), fail(ps, "out of memory");
		v->keys = keys;
		keys[v->n] = key;
	}
	memset(&v->items[v->n], 0, sizeof(v->items[0]));
	v->n++;
	return parse_value(ps, &v->items[v->n - 1]);
}

static int parse_container(struct parser *ps, struct json *v, char close)
{
	v->type = close == '}' ? JSON_OBJECT : JSON_ARRAY;
	if (++ps->depth > 64)
		return fail(ps, "nested too deep");
	ps->p++;
	skip_ws(ps);
	if (*ps->p == close) {
		ps->p++;
		ps->depth--;
		return 0;
	}
	for (;;) {
		char *key = NULL;

		skip_ws(ps);
		if (close == '}') {
			if (parse_string(ps, &key) < 0)
				return -1;
			skip_ws(ps);
			if (*ps->p != ':')
				return free(key), fail(ps, "':' expected");
			ps->p++;
		}
		if (add_member(ps, v, key) < 0)
			return -1;
		skip_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p != close)
			return fail(ps, "',' or end of container expected");
		ps->p++;
		ps->depth--;
		return 0;
	}
}

static int parse_value(struct parser *ps, struct json *v)
{
	skip_ws(ps);
	switch (*ps->p) {
	case '{':
		return parse_container(ps, v, '}');
	case '[':
		return parse_container(ps, v, ']');
	case '"':
		v->type = JSON_STRING;
		return parse_string(ps, &v->string);
	case 't':
	case 'f':
	case 'n': {
		static const struct {
			const char *word;
			enum json_type type;
			int value;
		} words[] = { { "true", JSON_BOOL, 1 },
			      { "false", JSON_BOOL, 0 },
			      { "null", JSON_NULL, 0 } };

		for (size_t i = 0; i < 3; i++) {
			if (!strncmp(ps->p, words[i].word, strlen(words[i].word))) {
				ps->p += strlen(words[i].word);
				v->type = words[i].type;
				v->number = words[i].value;
				return 0;
			}
		}
		return fail(ps, "bad literal");
	}
	default:
		return parse_number(ps, v);
	}
}

static void free_members(struct json *v)
{
	for (size_t i = 0; i < v->n; i++) {
		free_members(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->string);
}

void json_free(struct json *v)
{
	if (!v)
		return;
	free_members(v);
	free(v);
}

struct json *json_parse(const char *text, char *err, size_t err_size)
{
	struct parser ps = { text, text, err, err_size, 0 };
	struct json *v = calloc(1, sizeof(*v));

	err[0] = '\0';
	if (!v) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	if (parse_value(&ps, v) == 0) {
		skip_ws(&ps);
		if (*ps.p == '\0')
			return v;
		fail(&ps, "trailing text");
	}
	json_free(v);
	return NULL;
}

const struct json *json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

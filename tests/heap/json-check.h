/* SPDX-License-Identifier: MIT */
/*
 * A strict little JSON parser for tests that check a program's JSON output
 * (RFC 8259: no trailing commas, no comments, no trailing text, control
 * characters escaped). It builds a tree for the assertions to walk.
 */
#ifndef FL_TESTS_JSON_CHECK_H
#define FL_TESTS_JSON_CHECK_H

#include <stddef.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
	enum json_type type;
	double number; /* JSON_NUMBER; JSON_BOOL: 0 or 1 */
	char *string; /* JSON_STRING, decoded (\u00XX only; others as '?') */
	size_t n; /* JSON_ARRAY, JSON_OBJECT: members */
	struct json *items; /* members */
	char **keys; /* JSON_OBJECT: one per member */
};

/*
 * Parses all of @text. Returns the tree (free with json_free()), or NULL
 * with a description of the first error, and its offset, in @err.
 */
struct json *json_parse(const char *text, char *err, size_t err_size);

/* The member @key of object @obj, or NULL (also if @obj is no object). */
const struct json *json_get(const struct json *obj, const char *key);

void json_free(struct json *v);

#endif /* FL_TESTS_JSON_CHECK_H */

/* SPDX-License-Identifier: MIT */
/*
 * A strict JSON (RFC 8259) parser into a tree, for fencectl's readers of
 * trace files. The input is untrusted: nesting depth, input size and node
 * count are bounded, and every error names the byte offset (and line and
 * column) where the text stopped being JSON.
 */
#ifndef FENCECTL_JSON_H
#define FENCECTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deeper nesting is refused: the parser recurses once per level. */
#define JSON_MAX_DEPTH 64
/* Larger inputs are refused before parsing: 1 GiB. */
#define JSON_MAX_SIZE ((size_t)1 << 30)
/* More values are refused, bounding memory (~50 bytes a value) whatever the text. */
#define JSON_MAX_NODES ((size_t)1 << 25)

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json_member;

struct json {
	enum json_type type;
	size_t offset; /* of the value's first byte in the input */
	union {
		struct {
			double num;
			/* An integer literal (no fraction, no exponent) that fits. */
			bool is_int;
			int64_t i;
		};
		struct {
			char *str; /* UTF-8, NUL-terminated; \u0000 is refused */
			size_t len;
		};
		struct {
			struct json **items;
			size_t n_items;
		};
		struct {
			struct json_member *members;
			size_t n_members;
		};
	};
};

struct json_member {
	char *key;
	struct json *value;
};

struct json_error {
	size_t offset; /* byte offset of the error */
	unsigned int line, column; /* 1-based, of the same byte */
	char msg[96];
};

/**
 * json_parse() - parse @size bytes of @text as one JSON value (surrounded by
 * optional whitespace).
 * @text: the input; it needs no NUL terminator
 * @size: its length in bytes
 * @ret: on success, the tree; the caller frees it with json_free()
 * @err: on -EINVAL, where and why parsing stopped
 *
 * Strict: no comments, trailing commas, NaN, leading zeros, unescaped control
 * characters or invalid UTF-8. Duplicate keys are kept (json_get() returns
 * the last, as JavaScript does).
 *
 * Return: 0; -EINVAL for text that is not JSON or nests deeper than
 * JSON_MAX_DEPTH; -EFBIG for input larger than JSON_MAX_SIZE or holding more
 * than JSON_MAX_NODES values; -ENOMEM. @err is filled for every error.
 */
int json_parse(const char *text, size_t size, struct json **ret, struct json_error *err);

/** json_free() - free a tree from json_parse(); NULL is fine. */
void json_free(struct json *v);

/**
 * json_get() - the member @key of the object @obj.
 * Return: the value, or NULL if @obj is NULL, not an object, or has no @key.
 */
const struct json *json_get(const struct json *obj, const char *key);

/** json_type_name() - "null", "number", "object", ... for messages. */
const char *json_type_name(enum json_type type);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The strict INI lexer that the heap table (src/heap/table-parse.c) and the
 * display config (src/display/config.c) share: lines, "[type NAME]"
 * section headers, "key = value" with bare or quoted values, names, and
 * messages "ORIGIN:LINE:COL: ..." that point at the byte at fault. What
 * the sections and keys mean is the caller's.
 *
 * Every check is made on bytes with known bounds: the text need not be
 * NUL-terminated, and no input can make the lexer read past it. A line
 * longer than FL_INI_LINE_MAX bytes, or holding a control character other
 * than a tab, is an error; so is any byte the grammar does not expect.
 */
#ifndef FL_UTIL_INI_H
#define FL_UTIL_INI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define FL_INI_LINE_MAX 1024
#define FL_INI_NAME_MAX 64 /* the largest name buffer a syntax may ask for */

/* A place in the text, as messages give it; line 0: not set. */
struct fl_ini_pos {
	unsigned int line, col;
};

/**
 * struct fl_ini_syntax - what a file's section headers may say
 * @sections: the section types, NULL-terminated ("heap", "device", NULL);
 *	lowercase letters only
 * @sections_expected: for "expected %s after '['" ("'heap' or 'device'")
 * @sections_known: for "sections are %s" ("[heap NAME] and [device NAME]")
 * @name_size: a section name's buffer, with the NUL (at most FL_INI_NAME_MAX)
 */
struct fl_ini_syntax {
	const char *const *sections;
	const char *sections_expected;
	const char *sections_known;
	size_t name_size;
};

/**
 * struct fl_ini_value - a value, quotes and escapes removed
 * @text: NUL-terminated (a quoted value may hold more NULs: use @len)
 * @len: its length
 * @col: the column of its first byte, or of the opening quote
 * @quoted: written in double quotes
 */
struct fl_ini_value {
	char text[FL_INI_LINE_MAX + 1];
	size_t len;
	unsigned int col;
	bool quoted;
};

/* The lexer's state; read-only to its users. */
struct fl_ini {
	const struct fl_ini_syntax *syntax;
	const char *origin;
	char *err;
	size_t err_size;
	const char *text;
	size_t len, at;
	unsigned int line; /* of the item last returned, from 1 */
	const char *cur, *rest, *end; /* that line, after its key, its end */
	struct fl_ini_value value; /* the last fl__ini_assignment()'s */
};

enum fl_ini_kind {
	FL_INI_END, /* no more lines */
	FL_INI_SECTION,
	FL_INI_KEY,
};

/**
 * struct fl_ini_item - a section header or the start of an assignment
 * @kind: which
 * @line: its line
 * @col: its first byte's column, from 1 (the '[' or the key)
 * @section: SECTION: the index of its type in the syntax's @sections
 * @name: SECTION: its name, checked by fl__ini_take_name()
 * @key: KEY: the key as written ([a-z][a-z0-9-]*), not NUL-terminated
 * @key_len: KEY: its length
 */
struct fl_ini_item {
	enum fl_ini_kind kind;
	unsigned int line, col;
	size_t section;
	char name[FL_INI_NAME_MAX];
	const char *key;
	size_t key_len;
};

/*
 * Starts lexing @len bytes of @text; messages go to @err (@err_size
 * bytes, may be NULL/0) as "@origin:LINE:COL: ...". Nothing is allocated.
 */
void fl__ini_init(struct fl_ini *ini, const struct fl_ini_syntax *syntax, const char *text,
		  size_t len, const char *origin, char *err, size_t err_size);

/*
 * The next section header or assignment, skipping blank and comment lines
 * ('#' or ';' first). A SECTION item is whole and checked; after a KEY
 * item the caller judges the key and then reads the value with
 * fl__ini_value().
 * Return: 0 (FL_INI_END at the end of the text) or -EINVAL.
 */
int fl__ini_next(struct fl_ini *ini, struct fl_ini_item *item);

/*
 * The '=' and the value after the key last returned; @key names it in
 * messages. Nothing may follow a quoted value but spaces and a comment; a
 * bare value runs to a comment or the end of the line, trailing spaces
 * cut, and must be non-empty ASCII. Quoted values know \" and \\ only.
 * Return: 0 or -EINVAL.
 */
int fl__ini_value(struct fl_ini *ini, const char *key, struct fl_ini_value *v);

/**
 * struct fl_ini_key - a key a file may set
 * @name: as written ([a-z][a-z0-9-]*)
 * @sections: the sections it belongs in, as bits the caller chose
 */
struct fl_ini_key {
	const char *name;
	unsigned int sections;
};

/*
 * The rest of a KEY item: looks @item's key up in @keys (@n of them) among
 * those with a bit of @in in their @sections, refuses an unknown one
 * ("unknown key 'K' in @where (known: @known)") and one whose @set entry
 * has a line ("duplicate key"), reads its value into ini->value with
 * fl__ini_value() and records @item's place in @set.
 * Return: the key's index in @keys, or -EINVAL.
 */
int fl__ini_assignment(struct fl_ini *ini, const struct fl_ini_item *item,
		       const struct fl_ini_key *keys, size_t n, unsigned int in, const char *where,
		       const char *known, struct fl_ini_pos *set);

/*
 * Checks that @n bytes at @s are a name (1 to @size - 1 bytes of
 * [A-Za-z0-9._-], the first a letter or digit) and copies it with a NUL
 * into @out; @col is where @s is on the current line, @what says what the
 * name names ("heap"). Return: 0 or -EINVAL.
 */
int fl__ini_take_name(struct fl_ini *ini, const char *s, size_t n, unsigned int col,
		      const char *what, char *out, size_t size);

/*
 * The next item of a comma-separated list @v: [*ret_start, + *ret_len),
 * spaces around it cut (an empty item is the caller's to refuse). Start
 * with *@cursor 0. Return: false when the list is done.
 */
bool fl__ini_list_next(const struct fl_ini_value *v, size_t *cursor, size_t *ret_start,
		       size_t *ret_len);

/* Where byte @i of @v is on its line, as well as a quoted value allows. */
unsigned int fl__ini_col(const struct fl_ini_value *v, size_t i);

/* A printable rendering of byte @c for messages ("'x'", "a tab", "0x07"). Return: @buf. */
const char *fl__ini_show(char c, char buf[8]);

bool fl__ini_is_space(char c);
/* [A-Za-z0-9._-]: what names are made of. */
bool fl__ini_is_name_char(char c);

/*
 * Write "ORIGIN:LINE:COL: message" to the lexer's error buffer: at @at, or
 * at column @col of the line last lexed.
 * Return: -EINVAL.
 */
__attribute__((format(printf, 3, 4))) int fl__ini_fail_at(struct fl_ini *ini, struct fl_ini_pos at,
							  const char *fmt, ...);
__attribute__((format(printf, 3, 4))) int fl__ini_fail(struct fl_ini *ini, unsigned int col,
						       const char *fmt, ...);

/*
 * snprintf() into @err that marks a cut message with "..."; does nothing
 * for @err NULL or @size 0.
 */
__attribute__((format(printf, 3, 4))) void fl__ini_msg(char *err, size_t size, const char *fmt,
						       ...);
__attribute__((format(printf, 3, 0))) void fl__ini_vmsg(char *err, size_t size, const char *fmt,
							va_list ap);

#endif /* FL_UTIL_INI_H */

/* SPDX-License-Identifier: MIT */
/*
 * The heap table's parts (docs/heap-table.md): the parsed table that
 * table-parse.c fills and the kinds a [heap] section may name
 * (table-kinds.c). Private to src/heap. Their messages are written with
 * the INI lexer's fl__ini_msg() (src/util/ini.h).
 */
#ifndef FL_HEAP_TABLE_INTERNAL_H
#define FL_HEAP_TABLE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fenceline/heap-table.h>
#include <fenceline/heap.h>

#include "ini.h"

/* Limits of the format; docs/heap-table.md lists them. */
#define TBL_NAME_MAX	FL_HEAP_NAME_MAX /* heap and device names, with the NUL */
#define TBL_KIND_MAX	64
#define TBL_DESC_MAX	128
#define TBL_MAX_HEAPS	64
#define TBL_MAX_DEVICES 128
#define TBL_MAX_LIST	16
#define TBL_MAX_REQUEST 64 /* devices in one request */
#define TBL_VALUE_MAX	(UINT64_C(1) << 46) /* 64 TiB: any size or alignment */

struct tbl_heap;

/**
 * struct tbl_kind - a kind of heap a [heap] section may name
 * @name: as written after "kind =" ("dma-heap" stands for "dma-heap:NAME")
 * @has_arg: the kind takes ":NAME"
 * @contiguous: whether its buffers count as physically contiguous
 * @contiguous_settable: the table may say so itself (a dma-heap: only the
 *	platform knows)
 * @is_carveout: takes "size" (required) and "align"
 * @open: opens the heap for a section; NULL means the kind is not
 *	available in this build. Return: 0, -ENODEV (not on this machine:
 *	@ret_why says why) or -ENOMEM.
 * @unavailable: why, when @open is NULL
 */
struct tbl_kind {
	const char *name;
	bool has_arg;
	bool contiguous;
	bool contiguous_settable;
	bool is_carveout;
	int (*open)(const struct tbl_heap *h, struct fl_heap **ret_heap, const char **ret_why);
	const char *unavailable;
};

/* NULL-terminated; the kinds a table may name, available or not. */
extern const struct tbl_kind *const fl__tbl_kinds[];

struct tbl_heap {
	char name[TBL_NAME_MAX];
	char kind_name[TBL_KIND_MAX]; /* as written, "dma-heap:linux,cma" */
	char description[TBL_DESC_MAX];
	const struct tbl_kind *kind;
	uint64_t size; /* a carveout's capacity; 0 otherwise */
	uint64_t align; /* as set (carveouts only); 0: the page size */
	uint64_t min_size, max_size; /* 0: no limit */
	bool contiguous; /* the kind's, or as set for a dma-heap */
	bool contiguous_set;
	struct fl_heap *heap; /* NULL: unavailable */
	const char *unavailable; /* why, when @heap is NULL */
};

struct tbl_device {
	char name[TBL_NAME_MAX];
	char description[TBL_DESC_MAX];
	size_t heaps[TBL_MAX_LIST]; /* indexes into fl_heap_table.heaps */
	size_t num_heaps;
	uint64_t align; /* 0: none */
	uint64_t min_size, max_size; /* 0: no limit */
	bool contiguous;
};

struct fl_heap_table {
	struct tbl_heap *heaps;
	size_t num_heaps;
	struct tbl_device *devices;
	size_t num_devices;
	size_t page_size;
};

/*
 * Parses @text into @t (zeroed by the caller; on failure what was parsed
 * stays in @t for the caller to free). Opens no heap.
 * Return: 0, -EINVAL with "ORIGIN:LINE:COL: ..." in @err, or -ENOMEM.
 */
int fl__tbl_parse(const char *text, size_t len, const char *origin, struct fl_heap_table *t,
		  char *err, size_t err_size);

/* The built-in table: data/heaps.ini, embedded at build time. */
extern const char fl__tbl_default_text[];
extern const size_t fl__tbl_default_len;

#endif /* FL_HEAP_TABLE_INTERNAL_H */

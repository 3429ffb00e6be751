/* SPDX-License-Identifier: MIT */
/*
 * The kinds of heap a table's [heap] section may name. A kind this build
 * does not provide still parses, so one table can describe every machine;
 * its heaps are "unavailable" and allocation moves on to the next
 * candidate (docs/heap-table.md).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <fenceline/heap.h>

#include "table-internal.h"

static int open_system(const struct tbl_heap *h, struct fl_heap **ret_heap, const char **ret_why)
{
	return fl_heap_open_system(h->name, ret_heap);
}

static int open_carveout(const struct tbl_heap *h, struct fl_heap **ret_heap, const char **ret_why)
{
	if (h->size > SIZE_MAX)
		return -ENOMEM;
	return fl_heap_open_carveout(h->name, (size_t)h->size, ret_heap);
}

static int open_system_contig(const struct tbl_heap *h, struct fl_heap **ret_heap,
			      const char **ret_why)
{
	return fl_heap_open_system_contig(h->name, ret_heap);
}

/* "dma-heap:NAME": the kernel's /dev/dma_heap/NAME, where it has one. */
static int open_dma_heap(const struct tbl_heap *h, struct fl_heap **ret_heap, const char **ret_why)
{
	const char *colon = strchr(h->kind_name, ':');
	int r;

	if (!colon)
		return -EINVAL;
	r = fl_heap_open_dma_heap(colon + 1, ret_heap);
	if (r == -ENODEV || r == -ENOENT || r == -EACCES || r == -EPERM) {
		*ret_why = r == -ENODEV || r == -ENOENT ? "the kernel has no such dma-heap"
							: "no permission to open the dma-heap";
		return -ENODEV;
	}
	return r;
}

static const struct tbl_kind kind_system = {
	.name = "system",
	.open = open_system,
};

static const struct tbl_kind kind_carveout = {
	.name = "carveout",
	.contiguous = true,
	.is_carveout = true,
	.open = open_carveout,
};

static const struct tbl_kind kind_system_contig = {
	.name = "system-contig",
	.contiguous = true,
	.open = open_system_contig,
};

static const struct tbl_kind kind_dma_heap = {
	.name = "dma-heap",
	.has_arg = true,
	.contiguous_settable = true,
	.open = open_dma_heap,
};

const struct tbl_kind *const fl__tbl_kinds[] = {
	&kind_system, &kind_carveout, &kind_system_contig, &kind_dma_heap, NULL,
};

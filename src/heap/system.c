/* SPDX-License-Identifier: MIT */
/*
 * The system heap: every buffer a sealed memfd of its own, no capacity but
 * the kernel's memory. The kernel zero-fills new memfd pages, so nothing
 * here clears memory.
 */
#include <errno.h>
#include <stddef.h>

#include <fenceline/heap.h>

#include "heap-internal.h"

static const struct fl_heap_ops system_ops = {
	.kind = "system",
};

FL_EXPORT int fl_heap_open_system(const char *name, struct fl_heap **ret_heap)
{
	if (!ret_heap)
		return -EINVAL;
	return fl__heap_create(&system_ops, name, NULL, ret_heap);
}

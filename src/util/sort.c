/* SPDX-License-Identifier: MIT */
/*
 * qsort() and bsearch() declare their array non-NULL even when it is empty,
 * and an empty list of ours is often a NULL one: UBSan stops the daemon on
 * such a call (fencectl dump on a daemon with nothing in it did).
 */
#include <stdlib.h>

#include "util.h"

void fl__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

void *fl__search(const void *key, const void *base, size_t n, size_t size,
		 int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

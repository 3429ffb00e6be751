/* SPDX-License-Identifier: MIT */
/*
 * The system-contig heap: huge-page memfds (docs/heap.md, "system-contig").
 *
 * With huge pages in the kernel's hugetlb pool, a buffer is a
 * memfd_create(MFD_HUGETLB) file whose pages are reserved when it is made;
 * without them, an ordinary memfd populated through a mapping advised with
 * MADV_HUGEPAGE. This file only finds out which the machine allows and
 * says so in the heap's recipe; make.c makes the buffers.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "heap-internal.h"

static unsigned long long read_ull(const char *path)
{
	unsigned long long v = 0;
	FILE *f = fopen(path, "re");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* The default huge page size in bytes (what MFD_HUGETLB uses), or 0. */
static size_t default_huge_page(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (size_t)kb << 10;
}

/* Whether the default-size hugetlb pool can give pages at all. */
static bool hugetlb_has_pages(size_t huge)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%zukB/nr_hugepages",
		 huge >> 10);
	if (read_ull(path))
		return true;
	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/hugepages/hugepages-%zukB/nr_overcommit_hugepages", huge >> 10);
	return read_ull(path) != 0;
}

/* The [selected] word of a sysfs THP setting, or "" if unreadable. */
static void thp_setting(const char *path, char *buf, size_t size)
{
	char line[256], *open, *close;
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && (open = strchr(line, '[')) &&
	    (close = strchr(open, ']'))) {
		*close = '\0';
		snprintf(buf, size, "%s", open + 1);
	}
	fclose(f);
}

/*
 * Whether shmem gives PMD-size pages to a mapping advised MADV_HUGEPAGE.
 * Since 6.11 the per-size setting overrides the global one unless it says
 * "inherit".
 */
static bool shmem_thp_advisable(void)
{
	char word[32];
	unsigned long long pmd =
		read_ull("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") >> 10;
	char path[128];

	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/transparent_hugepage/hugepages-%llukB/shmem_enabled", pmd);
	thp_setting(path, word, sizeof(word));
	if (!word[0] || !strcmp(word, "inherit"))
		thp_setting("/sys/kernel/mm/transparent_hugepage/shmem_enabled", word,
			    sizeof(word));
	return !strcmp(word, "always") || !strcmp(word, "within_size") || !strcmp(word, "advise") ||
	       !strcmp(word, "force");
}

static const struct fl_heap_ops contig_ops = {
	.kind = "system-contig",
};

FL_EXPORT int fl_heap_open_system_contig(const char *name, struct fl_heap **ret_heap)
{
	size_t huge = default_huge_page();
	struct fl_heap *heap;
	int r;

	if (!ret_heap)
		return -EINVAL;
	r = fl__heap_create(&contig_ops, name, NULL, &heap);
	if (r < 0)
		return r;
	/* A power of two at least a page, or page rounding would break. */
	if (huge >= 4096 && !(huge & (huge - 1)) && hugetlb_has_pages(huge)) {
		heap->recipe.how = FL_HEAP_MAKE_HUGETLB;
		heap->page_size = huge;
		snprintf(heap->backing, sizeof(heap->backing), "hugetlb");
	} else {
		heap->recipe.how = FL_HEAP_MAKE_THP;
		heap->recipe.advise = shmem_thp_advisable();
		snprintf(heap->backing, sizeof(heap->backing),
			 heap->recipe.advise ? "thp" : "thp-disabled");
	}
	*ret_heap = heap;
	return 0;
}

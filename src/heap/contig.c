/* SPDX-License-Identifier: MIT */
/*
 * The system-contig heap: huge-page memfds (docs/heap.md, "system-contig").
 *
 * With huge pages in the kernel's hugetlb pool, a buffer is a
 * memfd_create(MFD_HUGETLB) file. hugetlbfs takes a file's pages from the
 * pool when a shared mapping is made, not when it is touched, and keeps
 * that reservation with the file until it is closed, also after munmap():
 * so mapping the new buffer once here and unmapping it again reserves its
 * pages, and fl_heap_alloc() fails with -ENOMEM instead of a consumer
 * getting SIGBUS at first touch. hugetlbfs memfds take seals (since 4.16).
 *
 * Without them, a buffer is an ordinary memfd populated here through a
 * mapping advised with MADV_HUGEPAGE. shmem decides a page's size when it
 * allocates it, by the mapping it is faulted through and by
 * /sys/kernel/mm/transparent_hugepage/shmem_enabled: the advice of a
 * consumer's later mapping would come too late, so the pages are made now,
 * through ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "heap-internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

enum contig_mode { CONTIG_HUGETLB, CONTIG_THP };

struct contig {
	enum contig_mode mode;
	bool advise; /* shmem_enabled honours MADV_HUGEPAGE */
};

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

static int hugetlb_allocate(struct fl_heap *heap, size_t len, int *ret_fd)
{
	char name[FL_HEAP_NAME_MAX + 16];
	void *p;
	int fd, r;

	snprintf(name, sizeof(name), "fl-heap:%s", heap->name);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
	if (fd < 0)
		return fl__heap_alloc_error(errno);
	r = ftruncate(fd, (off_t)len);
	if (r == 0) {
		/* Reserves the pages for the file's lifetime (see the top). */
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			r = -1;
		else
			munmap(p, len);
	}
	if (r == 0)
		r = fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (r < 0) {
		r = fl__heap_alloc_error(errno);
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* Writes one byte per page: for kernels before MADV_POPULATE_WRITE. */
static void touch_pages(volatile unsigned char *p, size_t len, size_t page)
{
	for (size_t off = 0; off < len; off += page)
		p[off] = 0;
}

static int thp_allocate(struct fl_heap *heap, size_t len, int *ret_fd)
{
	struct contig *c = heap->priv;
	long pages = sysconf(_SC_PHYS_PAGES);
	void *p;
	int fd, r;

	/*
	 * Populating is committing: past half of RAM (ION's limit for its
	 * system heaps) it would wake the OOM killer rather than fail.
	 */
	if (pages > 0 && len / heap->page_size > (size_t)pages / 2)
		return -ENOMEM;
	r = fl__heap_memfd(heap, len, &fd);
	if (r < 0)
		return r;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		r = fl__heap_alloc_error(errno);
		close(fd);
		return r;
	}
	if (c->advise)
		madvise(p, len, MADV_HUGEPAGE);
	if (madvise(p, len, MADV_POPULATE_WRITE) < 0) {
		if (errno == EINVAL)
			touch_pages(p, len, (size_t)sysconf(_SC_PAGESIZE));
		else
			/* EFAULT: a page could not be had, as a fault would have found. */
			r = errno == EFAULT ? -ENOMEM : fl__heap_alloc_error(errno);
	}
	munmap(p, len);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int contig_allocate(struct fl_heap *heap, size_t len, int *ret_fd)
{
	struct contig *c = heap->priv;

	return c->mode == CONTIG_HUGETLB ? hugetlb_allocate(heap, len, ret_fd)
					 : thp_allocate(heap, len, ret_fd);
}

static void contig_destroy(struct fl_heap *heap)
{
	free(heap->priv);
}

static const struct fl_heap_ops contig_ops = {
	.kind = "system-contig",
	.allocate = contig_allocate,
	.destroy = contig_destroy,
};

FL_EXPORT int fl_heap_open_system_contig(const char *name, struct fl_heap **ret_heap)
{
	size_t huge = default_huge_page();
	struct fl_heap *heap;
	struct contig *c;
	int r;

	if (!ret_heap)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* A power of two at least a page, or page rounding would break. */
	if (huge >= 4096 && !(huge & (huge - 1)) && hugetlb_has_pages(huge))
		c->mode = CONTIG_HUGETLB;
	else
		c->mode = CONTIG_THP;
	c->advise = c->mode == CONTIG_THP && shmem_thp_advisable();
	r = fl__heap_create(&contig_ops, name, c, &heap);
	if (r < 0)
		return r;
	if (c->mode == CONTIG_HUGETLB) {
		heap->page_size = huge;
		snprintf(heap->backing, sizeof(heap->backing), "hugetlb");
	} else {
		snprintf(heap->backing, sizeof(heap->backing), c->advise ? "thp" : "thp-disabled");
	}
	*ret_heap = heap;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The system-contig and dma-heap kinds, allocation flags, begin/end CPU
 * access, and the JSON accounting (checked by a strict parser).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "json-check.h"
#include "runner.h"

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

static unsigned long long meminfo_kb(const char *key)
{
	size_t n = strlen(key);
	unsigned long long v = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':' &&
		    sscanf(line + n + 1, "%llu", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static int count_dma_heap(const char *name, void *data)
{
	(*(int *)data)++;
	return 0;
}

/*
 * Hits and misses are counted exactly here: the pool's gate, which would
 * make some allocations bare samples, is pinned (docs/env-vars.md).
 */
__attribute__((constructor)) static void pin_the_gate(void)
{
	setenv("FENCELINE_HEAP_POOL_COST", "none", 0);
}

FL_TEST(system_contig_says_which_backing_the_kernel_allows)
{
	unsigned long long huge = meminfo_kb("Hugepagesize") << 10, pages;
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	char path[128], thp[256] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%llukB/nr_hugepages",
		 huge >> 10);
	pages = read_ull(path);
	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/hugepages/hugepages-%llukB/nr_overcommit_hugepages", huge >> 10);
	pages += read_ull(path);
	fl_assert_int_eq(fl_heap_open_system_contig(NULL, &heap), 0);
	info = fl_test_heap_info(heap);
	fl_assert_str_eq(info.kind, "system-contig");
	fl_assert_str_eq(info.name, "system-contig");
	if (pages) {
		fl_assert_str_eq(info.backing, "hugetlb");
		fl_assert_int_eq(info.granule, huge);
	} else {
		f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "re");
		if (f) {
			if (!fgets(thp, sizeof(thp), f))
				thp[0] = '\0';
			fclose(f);
		}
		/* The global setting decides unless a per-size one overrides it. */
		if (strstr(thp, "[never]") || strstr(thp, "[deny]") || !thp[0])
			fl_assert(!strcmp(info.backing, "thp-disabled") ||
				  !strcmp(info.backing, "thp"));
		else
			fl_assert_str_eq(info.backing, "thp");
		fl_assert_int_eq(info.granule, fl_test_page_size());
	}
	fl_heap_close(heap);
}

FL_TEST(system_contig_buffer_is_sealed_zeroed_and_backed_at_alloc)
{
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	unsigned char *p, *vec;
	struct stat st;
	size_t len, n;
	int fd = -1;

	fl_assert_int_eq(fl_heap_open_system_contig("contig", &heap), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(fl_heap_alloc(heap, 1, FL_HEAP_FLAG_CACHED, &fd), 0);
	fl_assert_int_eq(fstat(fd, &st), 0);
	len = (size_t)st.st_size;
	fl_assert_int_eq(len, info.granule);
	fl_assert_int_eq(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	fl_assert_errno(ftruncate(fd, 0), EPERM);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	if (strcmp(info.backing, "hugetlb") != 0) {
		/* Populated by fl_heap_alloc(): every page is there before any touch. */
		n = len / fl_test_page_size();
		vec = calloc(n, 1);
		fl_assert(vec != NULL);
		fl_assert_int_eq(mincore(p, len, vec), 0);
		for (size_t i = 0; i < n; i++)
			fl_assert(vec[i] & 1);
		free(vec);
	}
	for (size_t i = 0; i < len; i++)
		fl_assert_int_eq(p[i], 0);
	memset(p, 0x11, len);
	fl_assert_int_eq(munmap(p, len), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

FL_TEST(system_contig_beyond_the_hugetlb_pool_is_enomem)
{
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	unsigned long long total;
	int fd = -1;

	fl_assert_int_eq(fl_heap_open_system_contig("contig", &heap), 0);
	info = fl_test_heap_info(heap);
	if (strcmp(info.backing, "hugetlb") != 0) {
		fl_heap_close(heap);
		fl_test_skip("no hugetlb pages reserved (vm.nr_hugepages is 0)");
	}
	total = meminfo_kb("HugePages_Total") + 1;
	fl_assert_int_eq(fl_heap_alloc(heap, total * info.granule, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.failures, 1);
	fl_assert_int_eq(info.buffers, 0);
	fl_heap_close(heap);
}

/* Runs @fn with FENCELINE_DEBUG=heap and stderr going to a file; returns what it wrote. */
static char *stderr_of(int (*fn)(void *), void *arg, int *ret)
{
	char path[] = "/tmp/fl-heap-kinds-XXXXXX", *text;
	int file = mkostemp(path, O_CLOEXEC), saved = dup(2);
	long len;

	fl_assert_int_ge(file, 0);
	unlink(path);
	fflush(stderr);
	dup2(file, 2);
	setenv("FENCELINE_DEBUG", "heap", 1);
	*ret = fn(arg);
	unsetenv("FENCELINE_DEBUG");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	len = lseek(file, 0, SEEK_END);
	text = calloc(1, (size_t)len + 1);
	fl_assert(text != NULL);
	fl_assert_int_eq(pread(file, text, (size_t)len, 0), len);
	close(file);
	return text;
}

static int open_dma(void *name)
{
	struct fl_heap *heap = (void *)0x1;
	int r = fl_heap_open_dma_heap(name, &heap);

	fl_assert(heap == (void *)0x1);
	return r;
}

static void make_dir(char *path)
{
	fl_assert(mkdtemp(path) != NULL);
	setenv("FENCELINE_DMA_HEAP_DIR", path, 1);
}

FL_TEST(dma_heap_that_is_absent_is_enodev_with_a_message)
{
	char dir[] = "/tmp/fl-dma-heap-XXXXXX", *text;
	int n = 0, r;

	make_dir(dir);
	fl_assert_int_eq(fl_heap_for_each_dma_heap(count_dma_heap, &n), 0);
	fl_assert_int_eq(n, 0);
	text = stderr_of(open_dma, "system", &r);
	fl_assert_int_eq(r, -ENODEV);
	fl_assert(strstr(text, "fenceline[heap]: dma-heap 'system'") != NULL);
	fl_assert(strstr(text, "no such dma-heap") != NULL);
	free(text);
	/* Without FENCELINE_DEBUG, not a word. */
	fl_assert_int_eq(open_dma("system"), -ENODEV);
	rmdir(dir);
	/* A directory that is not there holds no dma-heaps either. */
	fl_assert_int_eq(fl_heap_for_each_dma_heap(count_dma_heap, &n), 0);
	unsetenv("FENCELINE_DMA_HEAP_DIR");
}

FL_TEST(dma_heap_dir_of_other_files_lists_none_and_opens_none)
{
	char dir[] = "/tmp/fl-dma-heap-XXXXXX", path[64], *text;
	int n = 0, r, fd;

	make_dir(dir);
	snprintf(path, sizeof(path), "%s/linux,cma", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	fl_assert_int_ge(fd, 0);
	close(fd);
	fl_assert_int_eq(fl_heap_for_each_dma_heap(count_dma_heap, &n), 0);
	text = stderr_of(open_dma, "linux,cma", &r);
	fl_assert_int_eq(r, -ENODEV);
	fl_assert(strstr(text, "not a character device, not a dma-heap") != NULL);
	free(text);
	unlink(path);
	/* A character device of another class: /dev/null's numbers, if we may. */
	snprintf(path, sizeof(path), "%s/system", dir);
	if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) == 0) {
		fl_assert_int_eq(fl_heap_for_each_dma_heap(count_dma_heap, &n), 0);
		text = stderr_of(open_dma, "system", &r);
		fl_assert_int_eq(r, -ENODEV);
		fl_assert(strstr(text, "is a mem device (1:3), not a dma-heap") != NULL);
		free(text);
		unlink(path);
	}
	fl_assert_int_eq(n, 0);
	rmdir(dir);
	unsetenv("FENCELINE_DMA_HEAP_DIR");
}

static int first_dma_heap(const char *name, void *data)
{
	snprintf(data, 64, "%s", name);
	return 1;
}

FL_TEST(dma_heap_gives_dma_bufs_where_the_kernel_has_them)
{
	struct fl_heap *heap = NULL;
	char name[64] = "";
	struct stat st;
	int fd = -1;

	unsetenv("FENCELINE_DMA_HEAP_DIR");
	if (fl_heap_for_each_dma_heap(first_dma_heap, name) <= 0)
		fl_test_skip("no dma-heap in /dev/dma_heap on this machine");
	fl_assert_int_eq(fl_heap_open_dma_heap(name, &heap), 0);
	fl_assert_str_eq(fl_test_heap_info(heap).backing, "dma-buf");
	fl_assert_int_eq(fl_heap_alloc(heap, 1, FL_HEAP_FLAG_CACHED, &fd), 0);
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert_int_eq(st.st_size, fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fd, FL_HEAP_SYNC_RW), 0);
	fl_assert_int_eq(fl_heap_buffer_end_cpu_access(fd, FL_HEAP_SYNC_RW), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

FL_TEST(flags_are_validated_and_recorded_per_buffer)
{
	static const unsigned int ok[] = { 0, FL_HEAP_FLAG_CACHED, FL_HEAP_FLAG_NEEDS_SYNC,
					   FL_HEAP_FLAG_CACHED | FL_HEAP_FLAG_NEEDS_SYNC };
	struct fl_heap *heap = NULL;
	unsigned int flags = 99;
	int fds[4], fd = -1, p[2];

	fl_assert_int_eq(fl_heap_open_system("f", &heap), 0);
	for (int i = 0; i < 4; i++)
		fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), ok[i], &fds[i]), 0);
	for (int i = 0; i < 4; i++) {
		int d = dup(fds[i]);

		/* Any fd of the buffer answers. */
		fl_assert_int_eq(fl_heap_buffer_get_flags(heap, d, &flags), 0);
		fl_assert_int_eq(flags, ok[i]);
		close(d);
	}
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 1u << 2, &fd), -EINVAL);
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), ~0u, &fd), -EINVAL);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(fl_test_heap_info(heap).buffers, 4);
	fl_assert_int_eq(fl_test_heap_info(heap).failures, 0);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	flags = 99;
	fl_assert_int_eq(fl_heap_buffer_get_flags(heap, p[0], &flags), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_get_flags(heap, -1, &flags), -EBADF);
	fl_assert_int_eq(fl_heap_buffer_get_flags(heap, fds[0], NULL), -EINVAL);
	fl_assert_int_eq(flags, 99);
	fd = dup(fds[1]);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fds[1]), 0);
	/* Freed: no longer a buffer of the heap. */
	fl_assert_int_eq(fl_heap_buffer_get_flags(heap, fd, &flags), -EINVAL);
	close(fd);
	close(p[0]);
	close(p[1]);
	for (int i = 0; i < 4; i++)
		if (i != 1)
			fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	fl_heap_close(heap);
}

FL_TEST(cpu_access_on_memfd_buffers_checks_only)
{
	struct fl_heap *heap = NULL;
	int fd = -1, sv[2], closed;

	fl_assert_int_eq(fl_heap_open_system("c", &heap), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), FL_HEAP_FLAG_NEEDS_SYNC, &fd), 0);
	for (unsigned int dir = FL_HEAP_SYNC_READ; dir <= FL_HEAP_SYNC_RW; dir++) {
		fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fd, dir), 0);
		fl_assert_int_eq(fl_heap_buffer_end_cpu_access(fd, dir), 0);
	}
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fd, 0), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_end_cpu_access(fd, 4), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fd, FL_HEAP_SYNC_RW | 8), -EINVAL);
	closed = dup(fd);
	close(closed);
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(closed, FL_HEAP_SYNC_READ), -EBADF);
	fl_assert_int_eq(fl_heap_buffer_end_cpu_access(-1, FL_HEAP_SYNC_READ), -EBADF);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(sv[0], FL_HEAP_SYNC_READ), -ENOTTY);
	close(sv[0]);
	close(sv[1]);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

static char *json_of(struct fl_heap *heap)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	fl_assert(out != NULL);
	fl_assert_int_eq(fl_heap_print_json(heap, out), 0);
	fl_assert_int_eq(fclose(out), 0);
	return text;
}

static const struct json *member(const struct json *obj, const char *key, enum json_type type)
{
	const struct json *v = json_get(obj, key);

	if (!v || v->type != type)
		fl__test_fail(__FILE__, __LINE__, "member \"%s\" missing or of the wrong type",
			      key);
	return v;
}

static double number(const struct json *obj, const char *key)
{
	return member(obj, key, JSON_NUMBER)->number;
}

FL_TEST(json_accounting_parses_and_matches_the_heap)
{
	static const char *const counters[] = { "granule",	  "capacity",	  "allocated",
						"peak_allocated", "live_buffers", "peak_buffers",
						"allocations",	  "failures",	  "largest_free" };
	struct fl_heap *heap = NULL;
	const struct json *bufs, *blocks, *pool;
	struct fl_heap_info info;
	struct json *root;
	char err[128], *text;
	uint64_t free_sum = 0;
	int a = -1, b = -1, c = -1;

	/* A name a JSON writer must escape. */
	fl_assert_int_eq(
		fl_heap_open_carveout("q\"b\\s\n\x01\xc3\xa9", 8 * fl_test_page_size(), &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 3 * fl_test_page_size()), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), FL_HEAP_FLAG_CACHED, &a), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, 2 * fl_test_page_size(),
				       FL_HEAP_FLAG_CACHED | FL_HEAP_FLAG_NEEDS_SYNC, &b),
			 0);
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 0, &c), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, a), 0);
	text = json_of(heap);
	info = fl_test_heap_info(heap);
	root = json_parse(text, err, sizeof(err));
	if (!root)
		fl__test_fail(__FILE__, __LINE__, "%s in: %s", err, text);
	fl_assert_str_eq(member(root, "name", JSON_STRING)->string, "q\"b\\s\n\x01\xc3\xa9");
	fl_assert_str_eq(member(root, "kind", JSON_STRING)->string, "carveout");
	fl_assert_str_eq(member(root, "backing", JSON_STRING)->string, "memfd");
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		number(root, counters[i]);
	fl_assert_int_eq(number(root, "capacity"), info.capacity);
	fl_assert_int_eq(number(root, "allocated"), 3 * fl_test_page_size());
	fl_assert_int_eq(number(root, "live_buffers"), 2);
	fl_assert_int_eq(number(root, "peak_buffers"), 3);
	fl_assert_int_eq(number(root, "largest_free"), info.largest_free);
	pool = member(root, "pool", JSON_OBJECT);
	fl_assert_int_eq(number(pool, "max"), 3 * fl_test_page_size());
	number(pool, "bytes");
	number(pool, "buffers");
	number(pool, "pending");
	fl_assert_int_eq(number(pool, "hits"), 0);
	fl_assert_int_eq(number(pool, "misses"), 3);

	bufs = member(root, "buffers", JSON_ARRAY);
	fl_assert_int_eq(bufs->n, 2);
	for (size_t i = 0; i < bufs->n; i++) {
		const struct json *buf = &bufs->items[i], *flags;
		struct stat st;

		fl_assert_int_eq(fstat(number(buf, "size") == fl_test_page_size() ? c : b, &st), 0);
		fl_assert_int_eq(number(buf, "inode"), st.st_ino);
		number(buf, "offset");
		flags = member(buf, "flags", JSON_ARRAY);
		if (number(buf, "size") == fl_test_page_size()) {
			fl_assert_int_eq(flags->n, 0);
		} else {
			fl_assert_int_eq(flags->n, 2);
			fl_assert_str_eq(flags->items[0].string, "cached");
			fl_assert_str_eq(flags->items[1].string, "needs-sync");
		}
	}
	blocks = member(root, "free_blocks", JSON_ARRAY);
	fl_assert_int_eq(blocks->n, info.free_blocks);
	for (size_t i = 0; i < blocks->n; i++) {
		number(&blocks->items[i], "offset");
		free_sum += (uint64_t)number(&blocks->items[i], "size");
	}
	fl_assert_int_eq(free_sum, info.capacity - info.allocated);
	json_free(root);
	free(text);
	fl_assert_int_eq(fl_heap_buffer_free(heap, b), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, c), 0);
	fl_assert_int_eq(fl_heap_print_json(heap, NULL), -EINVAL);
	fl_heap_close(heap);
}

FL_TEST(json_of_a_heap_without_layout_has_null_offsets_and_no_free_blocks)
{
	struct fl_heap *heap = NULL;
	const struct json *bufs;
	struct json *root;
	char err[128], *text;
	int fd = -1;

	fl_assert_int_eq(fl_heap_open_system(NULL, &heap), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, 1, 0, &fd), 0);
	text = json_of(heap);
	root = json_parse(text, err, sizeof(err));
	if (!root)
		fl__test_fail(__FILE__, __LINE__, "%s in: %s", err, text);
	fl_assert_int_eq(number(root, "capacity"), 0);
	bufs = member(root, "buffers", JSON_ARRAY);
	fl_assert_int_eq(bufs->n, 1);
	member(&bufs->items[0], "offset", JSON_NULL);
	fl_assert_int_eq(member(root, "free_blocks", JSON_ARRAY)->n, 0);
	json_free(root);
	free(text);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

/* The checker itself must fail on bad JSON, or the tests above prove nothing. */
FL_TEST(json_checker_rejects_malformed_text)
{
	static const char *const bad[] = {
		"",	    "{",	   "{\"a\":1,}", "[1,]",    "{\"a\" 1}", "01",	  "1.",
		"\"\x01\"", "{\"a\":1} x", "nul",	 "\"\\x\"", "-",	 "[1 2]", "{1:2}",
	};
	struct json *good;
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json *v = json_parse(bad[i], err, sizeof(err));

		if (v)
			fl__test_fail(__FILE__, __LINE__, "accepted '%s'", bad[i]);
		fl_assert(err[0] != '\0');
	}
	good = json_parse(" {\"a\":[1,-2.5e3,true,null,\"\\u0041\"]} ", err, sizeof(err));
	fl_assert(good != NULL);
	fl_assert_str_eq(json_get(good, "a")->items[4].string, "A");
	json_free(good);
}

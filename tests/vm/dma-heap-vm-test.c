/* SPDX-License-Identifier: MIT */
/*
 * The dma-heap kind and begin/end CPU access on real dma-bufs, for a kernel
 * that has dma-heaps and udmabuf (tests/vm/dma-heap-vm.sh boots one). Not a
 * meson test: everywhere else most of it skips. Links with runner.c and
 * helpers.c like tests/<area>/<name>-test.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/udmabuf.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

#define DMA_BUF_MAGIC 0x444d4142 /* "DMAB" */
#define MAX_HEAPS     8

struct names {
	int n;
	char name[MAX_HEAPS][64];
};

static int collect(const char *name, void *data)
{
	struct names *names = data;

	if (names->n < MAX_HEAPS)
		snprintf(names->name[names->n++], sizeof(names->name[0]), "%s", name);
	return 0;
}

static struct names dma_heaps(void)
{
	struct names names = { 0 };
	int r;

	unsetenv("FENCELINE_DMA_HEAP_DIR");
	r = fl_heap_for_each_dma_heap(collect, &names);
	fl_assert_int_ge(r, 0);
	fl_assert_int_eq(r, names.n);
	if (!names.n)
		fl_test_skip("no dma-heap in /dev/dma_heap on this machine");
	return names;
}

static int stop_at_first(const char *name, void *data)
{
	(*(int *)data)++;
	return 1;
}

static long fs_type(int fd)
{
	struct statfs fs;

	fl_assert_int_eq(fstatfs(fd, &fs), 0);
	return (long)fs.f_type;
}

static void assert_filled(const unsigned char *p, size_t len, unsigned char v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			fl__test_fail(__FILE__, __LINE__, "byte %zu is %#x, not %#x", i, p[i], v);
}

/*
 * Hits and misses are counted exactly here: the pool's gate, which would
 * make some allocations bare samples, is pinned (docs/env-vars.md).
 */
__attribute__((constructor)) static void pin_the_gate(void)
{
	setenv("FENCELINE_HEAP_POOL_COST", "none", 0);
}

FL_TEST(dma_heaps_are_listed_in_name_order_and_the_walk_stops)
{
	struct names names = dma_heaps();
	int calls = 0;

	for (int i = 0; i < names.n; i++)
		printf("# dma-heap: /dev/dma_heap/%s\n", names.name[i]);
	for (int i = 1; i < names.n; i++)
		fl_assert(strcmp(names.name[i - 1], names.name[i]) < 0);
	fl_assert_int_eq(fl_heap_for_each_dma_heap(stop_at_first, &calls), 1);
	fl_assert_int_eq(calls, 1);
}

/* Every dma-heap: zeroed, page-rounded dma-bufs that map, sync and count. */
FL_TEST(every_dma_heap_gives_zeroed_dma_bufs_that_map_and_sync)
{
	const size_t lens[] = { 1, 3 * fl_test_page_size() + 1, 1 << 20 };
	struct names names = dma_heaps();

	for (int h = 0; h < names.n; h++) {
		struct fl_heap *heap = NULL;
		struct fl_heap_info info;
		int fds[3];
		uint64_t total = 0;

		fl_assert_int_eq(fl_heap_open_dma_heap(names.name[h], &heap), 0);
		info = fl_test_heap_info(heap);
		fl_assert_str_eq(info.kind, "dma-heap");
		fl_assert_str_eq(info.name, names.name[h]);
		fl_assert_str_eq(info.backing, "dma-buf");
		fl_assert_int_eq(info.granule, fl_test_page_size());
		for (int i = 0; i < 3; i++) {
			size_t size = (lens[i] + fl_test_page_size() - 1) / fl_test_page_size() *
				      fl_test_page_size();
			unsigned int flags = 0;
			unsigned char *p;
			struct stat st;

			fl_assert_int_eq(
				fl_heap_alloc(heap, lens[i], FL_HEAP_FLAG_NEEDS_SYNC, &fds[i]), 0);
			fl_assert_int_eq(fcntl(fds[i], F_GETFD), FD_CLOEXEC);
			fl_assert_int_eq(fcntl(fds[i], F_GETFL) & O_ACCMODE, O_RDWR);
			fl_assert_int_eq(fs_type(fds[i]), DMA_BUF_MAGIC);
			fl_assert_int_eq(fstat(fds[i], &st), 0);
			fl_assert_int_eq(st.st_size, size);
			fl_assert_int_eq(fl_heap_buffer_get_flags(heap, fds[i], &flags), 0);
			fl_assert_int_eq(flags, FL_HEAP_FLAG_NEEDS_SYNC);
			p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
			fl_assert(p != MAP_FAILED);
			fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fds[i], FL_HEAP_SYNC_RW),
					 0);
			assert_filled(p, size, 0);
			memset(p, 0x5a, size);
			fl_assert_int_eq(fl_heap_buffer_end_cpu_access(fds[i], FL_HEAP_SYNC_RW), 0);
			fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fds[i], FL_HEAP_SYNC_READ),
					 0);
			assert_filled(p, size, 0x5a);
			fl_assert_int_eq(fl_heap_buffer_end_cpu_access(fds[i], FL_HEAP_SYNC_READ),
					 0);
			fl_assert_int_eq(munmap(p, size), 0);
			total += size;
		}
		info = fl_test_heap_info(heap);
		fl_assert_int_eq(info.allocated, total);
		fl_assert_int_eq(info.buffers, 3);
		fl_assert_int_eq(info.allocations, 3);
		fl_assert_int_eq(info.failures, 0);
		for (int i = 0; i < 3; i++)
			fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
		info = fl_test_heap_info(heap);
		fl_assert_int_eq(info.allocated, 0);
		fl_assert_int_eq(info.buffers, 0);
		fl_assert_int_eq(info.peak_allocated, total);
		fl_heap_close(heap);
	}
}

FL_TEST(cpu_access_on_a_dma_buf_takes_each_direction_and_rejects_bad_ones)
{
	struct names names = dma_heaps();
	struct fl_heap *heap = NULL;
	int fd = -1, dev;
	char path[128];

	fl_assert_int_eq(fl_heap_open_dma_heap(names.name[0], &heap), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 0, &fd), 0);
	for (unsigned int dir = FL_HEAP_SYNC_READ; dir <= FL_HEAP_SYNC_RW; dir++) {
		fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fd, dir), 0);
		fl_assert_int_eq(fl_heap_buffer_end_cpu_access(fd, dir), 0);
	}
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fd, 0), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_end_cpu_access(fd, 4), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(fd, FL_HEAP_SYNC_RW | 8), -EINVAL);
	/* The dma-heap's own device node is no buffer, though /dev is a tmpfs. */
	snprintf(path, sizeof(path), "/dev/dma_heap/%s", names.name[0]);
	dev = open(path, O_RDONLY | O_CLOEXEC);
	fl_assert_int_ge(dev, 0);
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(dev, FL_HEAP_SYNC_READ), -ENOTTY);
	close(dev);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

/* The devices are root's (0600): others see the heaps but cannot open them. */
FL_TEST(dma_heap_that_may_not_be_opened_is_eperm)
{
	struct names names = dma_heaps();
	int status = -1;
	pid_t pid;

	if (geteuid() != 0)
		fl_test_skip("needs root to become another user");
	pid = fork();
	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct names seen = { 0 };
		struct fl_heap *heap = NULL;

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		if (fl_heap_for_each_dma_heap(collect, &seen) != names.n)
			_exit(3);
		for (int i = 0; i < names.n; i++)
			if (fl_heap_open_dma_heap(names.name[i], &heap) != -EPERM)
				_exit(4);
		_exit(0);
	}
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
}

/* FENCELINE_DMA_HEAP_DIR: a node with a real dma-heap's numbers is one. */
FL_TEST(dma_heap_dir_override_finds_a_real_heap_by_its_numbers)
{
	struct names names = dma_heaps(), found = { 0 };
	char dir[] = "/tmp/fl-dma-heap-XXXXXX", path[128];
	struct fl_heap *heap = NULL;
	struct stat st;
	int fd = -1;

	snprintf(path, sizeof(path), "/dev/dma_heap/%s", names.name[0]);
	fl_assert_int_eq(stat(path, &st), 0);
	fl_assert(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/renamed", dir);
	if (mknod(path, S_IFCHR | 0600, st.st_rdev) < 0) {
		rmdir(dir);
		fl_test_skip("mknod: %s", strerror(errno));
	}
	setenv("FENCELINE_DMA_HEAP_DIR", dir, 1);
	fl_assert_int_eq(fl_heap_for_each_dma_heap(collect, &found), 1);
	fl_assert_str_eq(found.name[0], "renamed");
	fl_assert_int_eq(fl_heap_open_dma_heap("renamed", &heap), 0);
	fl_assert_str_eq(fl_test_heap_info(heap).name, "renamed");
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 0, &fd), 0);
	fl_assert_int_eq(fs_type(fd), DMA_BUF_MAGIC);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
	unsetenv("FENCELINE_DMA_HEAP_DIR");
	unlink(path);
	rmdir(dir);
}

/* The default CMA area's heap ("reserved") cannot give more than the area. */
FL_TEST(cma_dma_heap_beyond_its_area_is_enomem)
{
	struct names names = dma_heaps();
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	int fd = -1, i;

	for (i = 0; i < names.n && strcmp(names.name[i], "reserved") != 0; i++)
		;
	if (i == names.n)
		fl_test_skip("no CMA dma-heap (/dev/dma_heap/reserved)");
	fl_assert_int_eq(fl_heap_open_dma_heap("reserved", &heap), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, (size_t)1 << 40, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.failures, 1);
	fl_assert_int_eq(info.buffers, 0);
	fl_assert_int_eq(info.allocated, 0);
	/* And still gives what fits. */
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 0, &fd), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

/* A pool on a dma-heap: the worker makes fresh dma-bufs ahead of time. */
FL_TEST(dma_heap_pool_hands_out_fresh_zeroed_dma_bufs)
{
	struct names names = dma_heaps();
	struct fl_heap *heap = NULL;
	struct stat old, st;
	unsigned char *p;
	int fd = -1;

	fl_assert_int_eq(fl_heap_open_dma_heap(names.name[0], &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 0, &fd), 0);
	fl_assert_int_eq(fstat(fd, &old), 0);
	p = mmap(NULL, fl_test_page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	memset(p, 0xaa, fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	for (int i = 0; i < 5000 && (fl_test_heap_info(heap).pool_pending ||
				     !fl_test_heap_info(heap).pool_buffers);
	     i++)
		usleep(1000);
	fl_assert_int_ge(fl_test_heap_info(heap).pool_buffers, 1);
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 0, &fd), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, 1);
	fl_assert_int_eq(fs_type(fd), DMA_BUF_MAGIC);
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert(st.st_ino != old.st_ino);
	/* The old buffer lives on in the mapping, untouched and not shared. */
	assert_filled(p, fl_test_page_size(), 0xaa);
	fl_assert_int_eq(munmap(p, fl_test_page_size()), 0);
	p = mmap(NULL, fl_test_page_size(), PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	assert_filled(p, fl_test_page_size(), 0);
	fl_assert_int_eq(munmap(p, fl_test_page_size()), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

/*
 * udmabuf turns a heap's sealed memfd into a dma-buf (it wants F_SEAL_SHRINK
 * and no write seal: what fl_heap_alloc() gives), whose DMA_BUF_IOCTL_SYNC
 * maps and syncs the pages for the udmabuf device.
 */
FL_TEST(udmabuf_of_a_heap_memfd_is_a_dma_buf_that_syncs)
{
	struct udmabuf_create create = { 0 };
	struct fl_heap *heap = NULL;
	size_t len = 4 * fl_test_page_size();
	unsigned char *mem, *buf;
	int memfd = -1, dev, dbuf;

	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		fl_test_skip("no /dev/udmabuf: %s", strerror(errno));
	fl_assert_int_eq(fl_heap_open_system("udmabuf", &heap), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, len, FL_HEAP_FLAG_NEEDS_SYNC, &memfd), 0);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	fl_assert(mem != MAP_FAILED);
	memset(mem, 0x3c, len);
	create.memfd = (uint32_t)memfd;
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	create.offset = 0;
	create.size = len;
	dbuf = ioctl(dev, UDMABUF_CREATE, &create);
	fl_assert_int_ge(dbuf, 0);
	close(dev);
	fl_assert_int_eq(fs_type(dbuf), DMA_BUF_MAGIC);
	/* Not the heap's buffer, though it shares its pages. */
	fl_assert_int_eq(fl_heap_buffer_free(heap, dbuf), -EINVAL);
	for (unsigned int dir = FL_HEAP_SYNC_READ; dir <= FL_HEAP_SYNC_RW; dir++) {
		fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(dbuf, dir), 0);
		fl_assert_int_eq(fl_heap_buffer_end_cpu_access(dbuf, dir), 0);
	}
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(dbuf, 0), -EINVAL);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dbuf, 0);
	fl_assert(buf != MAP_FAILED);
	fl_assert_int_eq(fl_heap_buffer_begin_cpu_access(dbuf, FL_HEAP_SYNC_RW), 0);
	assert_filled(buf, len, 0x3c);
	memset(buf + fl_test_page_size(), 0x77, fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_end_cpu_access(dbuf, FL_HEAP_SYNC_RW), 0);
	assert_filled(mem + fl_test_page_size(), fl_test_page_size(), 0x77);
	assert_filled(mem + 2 * fl_test_page_size(), fl_test_page_size(), 0x3c);
	fl_assert_int_eq(munmap(buf, len), 0);
	fl_assert_int_eq(munmap(mem, len), 0);
	close(dbuf);
	fl_assert_int_eq(fl_heap_buffer_free(heap, memfd), 0);
	fl_heap_close(heap);
}

/*
 * A dma-buf's pages are pinned, and the kernel's system heap takes every
 * free page before it fails, waking the OOM killer (this test's process was
 * killed before dma-heap.c refused): past half of RAM is -ENOMEM.
 */
FL_TEST(dma_heap_past_half_of_ram_is_enomem)
{
	uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * fl_test_page_size();
	const uint64_t lens[] = { ram / 2 + fl_test_page_size(), ram + ram / 2 };
	struct names names = dma_heaps();

	for (int h = 0; h < names.n; h++) {
		struct fl_heap *heap = NULL;
		struct fl_heap_info info;
		int fd = -1;

		fl_assert_int_eq(fl_heap_open_dma_heap(names.name[h], &heap), 0);
		for (int i = 0; i < 2; i++)
			fl_assert_int_eq(fl_heap_alloc(heap, (size_t)lens[i], 0, &fd), -ENOMEM);
		fl_assert_int_eq(fd, -1);
		info = fl_test_heap_info(heap);
		fl_assert_int_eq(info.failures, 2);
		fl_assert_int_eq(info.buffers, 0);
		fl_heap_close(heap);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * The libion compat API (include/fenceline-compat/ion/ion.h): clients,
 * heap queries, allocation by heap mask, the error values of AOSP's modern
 * libion tests (InvalidValues, HeapQuery, SystemHeap), buffers that are
 * sealed, zero-filled and mmap-able, carveout exhaustion and the carveout
 * reclaimed at ion_close().
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ion/ion.h>

#include <fenceline/heap.h>

#include "helpers.h"
#include "runner.h"

#define SYSTEM_MASK   (1u << 0)
#define CARVEOUT_MASK (1u << 2)

static int client(void)
{
	int fd = ion_open();

	fl_assert_int_ge(fd, 0);
	return fd;
}

static int alloc(int ion, size_t len, unsigned int mask)
{
	int fd = -1;

	fl_assert_int_eq(ion_alloc_fd(ion, len, 0, mask, 0, &fd), 0);
	fl_assert_int_ge(fd, 0);
	return fd;
}

static off_t size_of(int fd)
{
	struct stat st;

	fl_assert_int_eq(fstat(fd, &st), 0);
	return st.st_size;
}

/* The buffer maps at its page-rounded size, reads zero, and keeps what is written. */
static void expect_zero_mappable(int fd, size_t len)
{
	size_t rounded =
		(len + fl_test_page_size() - 1) / fl_test_page_size() * fl_test_page_size();
	unsigned char *p;

	fl_assert_int_eq(size_of(fd), rounded);
	p = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	for (size_t i = 0; i < rounded; i++)
		fl_assert_int_eq(p[i], 0);
	memset(p, 0xaa, rounded);
	fl_assert_int_eq(munmap(p, rounded), 0);
}

FL_TEST(open_gives_a_closable_cloexec_fd)
{
	int ion = client();

	fl_assert(fcntl(ion, F_GETFD) & FD_CLOEXEC);
	fl_assert_int_eq(ion_close(ion), 0);
	fl_assert_int_eq(ion_close(ion), -EBADF);
	fl_assert_int_eq(ion_close(-1), -EBADF);
}

FL_TEST(modern_abi_and_legacy_calls_fail_with_einval)
{
	int ion = client();
	ion_user_handle_t h = 0;
	unsigned char *ptr = NULL;
	int fd = -1;

	fl_assert_int_eq(ion_is_legacy(ion), 0);
	fl_assert_int_eq(ion_is_using_modular_heaps(ion), 0);
	fl_assert_int_eq(ion_alloc(ion, fl_test_page_size(), 0, SYSTEM_MASK, 0, &h), -EINVAL);
	fl_assert_int_eq(ion_free(ion, 1), -EINVAL);
	fl_assert_int_eq(ion_map(ion, 1, fl_test_page_size(), PROT_READ, MAP_SHARED, 0, &ptr, &fd),
			 -EINVAL);
	fl_assert_int_eq(ion_share(ion, 1, &fd), -EINVAL);
	fl_assert_int_eq(ion_import(ion, 0, &h), -EINVAL);
	fl_assert_int_eq(ion_sync_fd(ion, 0), -EINVAL);
	fl_assert_int_eq(fd, -1);
	fl_assert(ptr == NULL);
	fl_assert_int_eq(ion_close(ion), 0);
}

static int count_dma_heap(const char *name, void *data)
{
	(*(int *)data)++;
	return 0;
}

FL_TEST(query_reports_system_contig_carveout_and_dma_heaps)
{
	struct ion_heap_data d[16];
	int ion = client(), cnt = -1, dma = 0;
	int seen_system = 0, seen_contig = 0, seen_carveout = 0;

	fl_assert_int_ge(fl_heap_for_each_dma_heap(count_dma_heap, &dma), 0);
	if (dma > 8)
		dma = 8;
	fl_assert_int_eq(sizeof(struct ion_heap_data), 52);
	fl_assert_int_eq(ion_query_heap_cnt(ion, &cnt), 0);
	fl_assert_int_eq(cnt, 3 + dma);
	memset(d, 0x5a, sizeof(d));
	fl_assert_int_eq(ion_query_get_heaps(ion, cnt, d), 0);
	for (int i = 0; i < cnt; i++) {
		/* Priority order, as ION: highest heap id first. */
		if (i)
			fl_assert(d[i - 1].heap_id > d[i].heap_id);
		fl_assert_int_eq(d[i].reserved0, 0);
		fl_assert_int_eq(d[i].reserved1, 0);
		fl_assert_int_eq(d[i].reserved2, 0);
		if (d[i].heap_id >= 8) {
			/* A dma-heap of the kernel's, passed through. */
			fl_assert(d[i].heap_id <= 15);
			fl_assert(d[i].type == ION_HEAP_TYPE_DMA ||
				  d[i].type == ION_HEAP_TYPE_SYSTEM);
		} else if (strcmp(d[i].name, "system") == 0) {
			seen_system++;
			fl_assert_int_eq(d[i].type, ION_HEAP_TYPE_SYSTEM);
			fl_assert_int_eq(d[i].heap_id, 0);
		} else if (strcmp(d[i].name, "system-contig") == 0) {
			seen_contig++;
			fl_assert_int_eq(d[i].type, ION_HEAP_TYPE_SYSTEM_CONTIG);
			fl_assert_int_eq(d[i].heap_id, 1);
		} else {
			fl_assert_str_eq(d[i].name, "carveout");
			seen_carveout++;
			fl_assert_int_eq(d[i].type, ION_HEAP_TYPE_CARVEOUT);
			fl_assert_int_eq(d[i].heap_id, 2);
		}
	}
	fl_assert_int_eq(seen_system, 1);
	fl_assert_int_eq(seen_contig, 1);
	fl_assert_int_eq(seen_carveout, 1);
	/* Records past @cnt are not touched. */
	fl_assert_int_eq((unsigned char)d[cnt].name[0], 0x5a);

	memset(d, 0x5a, sizeof(d));
	fl_assert_int_eq(ion_query_get_heaps(ion, 1, d), 0);
	fl_assert_int_eq((unsigned char)d[1].name[0], 0x5a);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(alloc_from_system_contig_by_its_mask)
{
	int ion = client();
	int fd = alloc(ion, 5000, ION_HEAP_SYSTEM_CONTIG_MASK);
	char link[64], path[64];
	ssize_t n;

	fl_assert_int_ge(size_of(fd), 5000);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	fl_assert(n > 0);
	link[n] = '\0';
	fl_assert(strstr(link, "system-contig") != NULL);
	close(fd);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(alloc_accepts_ion_flags_and_vendor_bits)
{
	static const unsigned int flags[] = { ION_FLAG_CACHED, ION_FLAG_CACHED_NEEDS_SYNC,
					      ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC,
					      ION_FLAG_CACHED | (1u << 16) };
	int ion = client();

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		int fd = -1;

		fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0,
					      SYSTEM_MASK | CARVEOUT_MASK, flags[i], &fd),
				 0);
		expect_zero_mappable(fd, fl_test_page_size());
		close(fd);
	}
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(query_errors_as_libion_tests_expect)
{
	int ion = client(), cnt = 7;

	fl_assert_int_eq(ion_query_heap_cnt(ion, NULL), -EINVAL);
	fl_assert_int_eq(ion_query_heap_cnt(-1, &cnt), -EBADF);
	fl_assert_int_eq(cnt, 7);
	fl_assert_int_eq(ion_query_get_heaps(ion, 2, NULL), 0);
	fl_assert_int_eq(ion_query_get_heaps(-1, 2, NULL), -EBADF);
	fl_assert_int_eq(ion_query_get_heaps(ion, -1, NULL), -EINVAL);
	/* A bad pointer is -EFAULT, as the kernel's copy_to_user() makes it, not a crash. */
	if (!getenv("FL_TEST_UNDER_VALGRIND"))
		fl_assert_int_eq(ion_query_get_heaps(ion, 2, (void *)16), -EFAULT);
	/* An open fd that is no client. */
	fl_assert_int_eq(ion_query_heap_cnt(STDIN_FILENO, &cnt), -EINVAL);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(alloc_from_each_heap_by_mask)
{
	int ion = client();
	int sys = alloc(ion, 4096, SYSTEM_MASK);
	int co = alloc(ion, 3 * fl_test_page_size() + 1, CARVEOUT_MASK);
	char link[64], path[64];
	ssize_t n;

	expect_zero_mappable(sys, 4096);
	expect_zero_mappable(co, 3 * fl_test_page_size() + 1);
	fl_assert(fcntl(sys, F_GETFD) & FD_CLOEXEC);

	/* The memfd's name says which native heap made it. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", co);
	n = readlink(path, link, sizeof(link) - 1);
	fl_assert(n > 0);
	link[n] = '\0';
	fl_assert(strstr(link, "carveout") != NULL);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", sys);
	n = readlink(path, link, sizeof(link) - 1);
	fl_assert(n > 0);
	link[n] = '\0';
	fl_assert(strstr(link, "system") != NULL);
	close(sys);
	close(co);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(buffers_are_sealed)
{
	int ion = client();
	int fd = alloc(ion, 2 * fl_test_page_size(), SYSTEM_MASK | CARVEOUT_MASK);
	int seals = fcntl(fd, F_GET_SEALS);

	fl_assert(seals & F_SEAL_SHRINK);
	fl_assert(seals & F_SEAL_GROW);
	fl_assert(seals & F_SEAL_SEAL);
	fl_assert_errno(ftruncate(fd, (off_t)fl_test_page_size()), EPERM);
	fl_assert_errno(ftruncate(fd, (off_t)(4 * fl_test_page_size())), EPERM);
	fl_assert_int_eq(size_of(fd), 2 * fl_test_page_size());
	close(fd);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(alloc_errors)
{
	int ion = client(), fd = -1;

	fl_assert_int_eq(ion_alloc_fd(ion, 0, 0, SYSTEM_MASK, 0, &fd), -EINVAL);
	fl_assert_int_eq(ion_alloc_fd(ion, SIZE_MAX, 0, SYSTEM_MASK, 0, &fd), -EINVAL);
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, SYSTEM_MASK, 0, NULL), -EINVAL);
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, 0, 0, &fd), -ENODEV);
	/* Bits of heaps that do not exist: all but system, contig, carveout and dma-heaps. */
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, ~0xff07u, 0, &fd), -ENODEV);
	fl_assert_int_eq(ion_alloc_fd(-1, fl_test_page_size(), 0, SYSTEM_MASK, 0, &fd), -EBADF);
	fl_assert_int_eq(ion_alloc_fd(STDIN_FILENO, fl_test_page_size(), 0, SYSTEM_MASK, 0, &fd),
			 -EINVAL);
	/* More than half of RAM from the system heap, like ION's Allocate.Large. */
	fl_assert_int_eq(ion_alloc_fd(ion, SIZE_MAX / 2, 0, SYSTEM_MASK, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(ion_close(ion), 0);
	/* A closed client is gone. */
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, SYSTEM_MASK, 0, &fd), -EBADF);
}

FL_TEST(flags_and_alignment_are_accepted)
{
	int ion = client(), fd = -1;

	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 1 << 20, SYSTEM_MASK,
				      ION_FLAG_CACHED, &fd),
			 0);
	close(fd);
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, CARVEOUT_MASK,
				      ION_FLAG_CACHED | ION_FLAG_CACHED_NEEDS_SYNC, &fd),
			 0);
	close(fd);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(carveout_exhaustion_falls_back_or_fails_with_enomem)
{
	struct fl_test_fd_snapshot before;
	int ion, fds[4], fd = -1;

	fl_assert_int_eq(setenv("FENCELINE_ION_CARVEOUT_MB", "1", 1), 0);
	ion = client();
	fds[0] = alloc(ion, 256 << 10, CARVEOUT_MASK);
	/* After the first buffer: the process's one watch fd is open (docs/heap.md, "Reclaim"). */
	fl_test_fd_snapshot(&before);
	for (int i = 1; i < 4; i++)
		fds[i] = alloc(ion, 256 << 10, CARVEOUT_MASK);
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, CARVEOUT_MASK, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	fl_test_expect_new_fds(&before, 3);
	/* The carveout comes first in the mask walk; the system heap takes over. */
	fd = alloc(ion, fl_test_page_size(), CARVEOUT_MASK | SYSTEM_MASK);
	expect_zero_mappable(fd, fl_test_page_size());
	close(fd);
	/* Closed and held by nobody: its range comes back when the carveout is full. */
	close(fds[0]);
	fds[0] = alloc(ion, 256 << 10, CARVEOUT_MASK);
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, CARVEOUT_MASK, 0, &fd), -ENOMEM);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	fl_assert_int_eq(ion_close(ion), 0);

	/* A new client has the whole carveout. */
	ion = client();
	fd = alloc(ion, 1 << 20, CARVEOUT_MASK);
	close(fd);
	fl_assert_int_eq(ion_close(ion), 0);
	unsetenv("FENCELINE_ION_CARVEOUT_MB");
}

/*
 * A long-lived client that allocates and close()s, never ion_close()s: the
 * ranges of the buffers it closed come back, round after round. The first
 * round alone fills the 64 MiB default carveout exactly.
 */
FL_TEST(long_lived_client_gets_the_carveout_of_closed_buffers_back)
{
	int ion, fd = -1, none = -1;

	unsetenv("FENCELINE_ION_CARVEOUT_MB");
	ion = client();
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 1024; i++) {
			fd = alloc(ion, 4 << 10, CARVEOUT_MASK);
			close(fd);
		}
		for (int i = 0; i < 960; i++) {
			fd = alloc(ion, 64 << 10, CARVEOUT_MASK);
			close(fd);
		}
	}
	/* Held buffers keep their ranges: 64 MiB held, then nothing fits. */
	fd = alloc(ion, 64u << 20, CARVEOUT_MASK);
	fl_assert_int_eq(ion_alloc_fd(ion, fl_test_page_size(), 0, CARVEOUT_MASK, 0, &none),
			 -ENOMEM);
	close(fd);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(carveout_size_defaults_to_64_mib)
{
	int ion, fd = -1;

	fl_assert_int_eq(setenv("FENCELINE_ION_CARVEOUT_MB", "nonsense", 1), 0);
	ion = client();
	fd = alloc(ion, 64u << 20, CARVEOUT_MASK);
	close(fd);
	fl_assert_int_eq(ion_alloc_fd(ion, (64u << 20) + 1, 0, CARVEOUT_MASK, 0, &fd), -ENOMEM);
	fl_assert_int_eq(ion_close(ion), 0);
	unsetenv("FENCELINE_ION_CARVEOUT_MB");
}

FL_TEST(buffer_outlives_its_client_and_reuse_is_zero_filled)
{
	int ion = client();
	int fd = alloc(ion, fl_test_page_size(), CARVEOUT_MASK);
	unsigned char *p =
		mmap(NULL, fl_test_page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	fl_assert(p != MAP_FAILED);
	memset(p, 0xaa, fl_test_page_size());
	close(fd);
	fl_assert_int_eq(ion_close(ion), 0);
	/* The mapping keeps the memory; the same range from a new client is fresh. */
	fl_assert_int_eq(p[fl_test_page_size() - 1], 0xaa);
	ion = client();
	fd = alloc(ion, fl_test_page_size(), CARVEOUT_MASK);
	expect_zero_mappable(fd, fl_test_page_size());
	close(fd);
	fl_assert_int_eq(munmap(p, fl_test_page_size()), 0);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(a_dup_of_the_client_fd_is_the_same_client)
{
	int ion = client();
	int d = dup(ion), fd = -1, cnt = 0;

	fl_assert_int_ge(d, 0);
	fl_assert_int_eq(ion_query_heap_cnt(d, &cnt), 0);
	fd = alloc(d, fl_test_page_size(), SYSTEM_MASK);
	close(fd);
	/* ion_close() of either fd ends the client. */
	fl_assert_int_eq(ion_close(d), 0);
	fl_assert_int_eq(ion_query_heap_cnt(ion, &cnt), -EINVAL);
	fl_assert_int_eq(ion_close(ion), 0);
}

/*
 * gralloc-style: one client for the process's life, buffers only ever
 * close()d. The heap must not keep a record per buffer until ion_close().
 * (Under ASan or valgrind mallinfo2() may not see their allocator; it
 * then measures nothing and the check holds trivially.)
 */
FL_TEST(long_lived_client_keeps_nothing_per_closed_buffer)
{
	int ion = client();
	struct mallinfo2 before, after;

	for (int i = 0; i < 100; i++)
		close(alloc(ion, fl_test_page_size(), SYSTEM_MASK));
	before = mallinfo2();
	for (int i = 0; i < 5000; i++)
		close(alloc(ion, fl_test_page_size(), SYSTEM_MASK));
	after = mallinfo2();
	/* A record per buffer would be about 100 bytes each: some 500 KB here. */
	fl_assert(after.uordblks < before.uordblks + 64 * 1024);
	fl_assert_int_eq(ion_close(ion), 0);
}

FL_TEST(many_clients_and_buffers_leave_no_fds)
{
	struct fl_test_fd_snapshot before;

	fl_test_fd_snapshot(&before);
	for (int i = 0; i < 32; i++) {
		int ion = client();

		for (int j = 0; j < 8; j++) {
			/*
			 * A client forgotten with close() keeps its carveout's
			 * records, and with them the process's watch fd
			 * (docs/heap.md, "Reclaim"): it uses the system heap.
			 */
			int fd = alloc(ion, (size_t)(j + 1) * fl_test_page_size(),
				       j % 2 || !(i % 2) ? SYSTEM_MASK : CARVEOUT_MASK);

			close(fd);
		}
		if (i % 2)
			fl_assert_int_eq(ion_close(ion), 0);
		else
			close(ion); /* forgotten until its inode number comes back */
	}
	fl_test_expect_new_fds(&before, 0);
}

/*
 * Threads allocating from one shared client while each also opens,
 * allocates from and closes clients of its own: the registry and the
 * client references under ion_close() of other clients.
 */
enum { THREADS = 8, ROUNDS = 100 };

struct worker {
	pthread_t thread;
	int shared;
	int errors;
};

static int use_once(int ion, unsigned int mask)
{
	int fd = -1, r = ion_alloc_fd(ion, fl_test_page_size(), 0, mask, 0, &fd);
	unsigned char *p;

	if (r < 0)
		return r;
	p = mmap(NULL, fl_test_page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	r = p[0] == 0 && p[fl_test_page_size() - 1] == 0 ? 0 : -EIO;
	memset(p, 0xee, fl_test_page_size());
	munmap(p, fl_test_page_size());
	close(fd);
	return r;
}

static void *work(void *data)
{
	struct worker *w = data;

	for (int i = 0; i < ROUNDS; i++) {
		int own = ion_open();

		if (own < 0 || use_once(own, CARVEOUT_MASK) != 0 || ion_close(own) != 0)
			w->errors++;
		/* The shared carveout fills up; the system heap takes over. */
		if (use_once(w->shared, CARVEOUT_MASK | SYSTEM_MASK) != 0)
			w->errors++;
	}
	return NULL;
}

FL_TEST(threads_share_a_client_and_open_their_own)
{
	struct fl_test_fd_snapshot before;
	struct worker workers[THREADS];
	int shared;

	fl_assert_int_eq(setenv("FENCELINE_ION_CARVEOUT_MB", "1", 1), 0);
	shared = client();
	fl_test_fd_snapshot(&before);
	for (int i = 0; i < THREADS; i++) {
		workers[i] = (struct worker){ .shared = shared };
		fl_assert_int_eq(pthread_create(&workers[i].thread, NULL, work, &workers[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		fl_assert_int_eq(pthread_join(workers[i].thread, NULL), 0);
		fl_assert_int_eq(workers[i].errors, 0);
	}
	/* Checked once the shared client's records, and with them the watch fd, are gone. */
	fl_assert_int_eq(ion_close(shared), 0);
	fl_test_expect_new_fds(&before, 0);
	unsetenv("FENCELINE_ION_CARVEOUT_MB");
}

/* SPDX-License-Identifier: MIT */
/*
 * Heaps (<fenceline/heap.h>): buffers are sealed, zero-filled memfds; the
 * carveout's best fit, coalescing, exhaustion and fragmentation figures;
 * accounting; freeing by any fd of a buffer; many threads on one heap.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

static struct fl_heap *open_system(void)
{
	struct fl_heap *heap = NULL;

	fl_assert_int_eq(fl_heap_open_system("sys", &heap), 0);
	fl_assert(heap != NULL);
	return heap;
}

static struct fl_heap *open_carveout(size_t pages)
{
	struct fl_heap *heap = NULL;

	fl_assert_int_eq(fl_heap_open_carveout("co", pages * fl_test_page_size(), &heap), 0);
	fl_assert(heap != NULL);
	return heap;
}

static int alloc(struct fl_heap *heap, size_t len)
{
	int fd = -1;

	fl_assert_int_eq(fl_heap_alloc(heap, len, 0, &fd), 0);
	fl_assert_int_ge(fd, 0);
	return fd;
}

static off_t size_of(int fd)
{
	struct stat st;

	fl_assert_int_eq(fstat(fd, &st), 0);
	return st.st_size;
}

/* Fails unless all @len bytes of @fd are zero; then fills them with @fill. */
static void expect_zero_then_fill(int fd, size_t len, int fill)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	fl_assert(p != MAP_FAILED);
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			fl__test_fail(__FILE__, __LINE__, "byte %zu is %#x, not 0", i, p[i]);
	memset(p, fill, len);
	fl_assert_int_eq(munmap(p, len), 0);
}

/* What a consumer that received @fd can and cannot do to it. */
static void expect_sealed(int fd, size_t len)
{
	int seals = fcntl(fd, F_GET_SEALS);

	fl_assert_int_eq(size_of(fd), len);
	fl_assert_int_eq(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	fl_assert_errno(ftruncate(fd, (off_t)len / 2), EPERM);
	fl_assert_errno(ftruncate(fd, 0), EPERM);
	fl_assert_errno(ftruncate(fd, (off_t)len * 2), EPERM);
	/* No holder may freeze the producer's writes either. */
	fl_assert_errno(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	fl_assert_int_eq(size_of(fd), len);
	fl_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

/*
 * Hits and misses are counted exactly here: the pool's gate, which would
 * make some allocations bare samples, is pinned (docs/env-vars.md).
 */
__attribute__((constructor)) static void pin_the_gate(void)
{
	setenv("FENCELINE_HEAP_POOL_COST", "none", 0);
}

FL_TEST(system_buffer_is_sealed_memfd_of_page_rounded_size)
{
	struct fl_heap *heap = open_system();
	int small = alloc(heap, 1), odd = alloc(heap, fl_test_page_size() + 1);

	expect_sealed(small, fl_test_page_size());
	expect_sealed(odd, 2 * fl_test_page_size());
	expect_zero_then_fill(odd, 2 * fl_test_page_size(), 0x5a);
	fl_assert_int_eq(fl_heap_buffer_free(heap, small), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, odd), 0);
	fl_heap_close(heap);
}

FL_TEST(carveout_buffer_is_sealed_memfd_of_page_rounded_size)
{
	struct fl_heap *heap = open_carveout(4);
	int fd = alloc(heap, 3 * fl_test_page_size() - 7);

	expect_sealed(fd, 3 * fl_test_page_size());
	expect_zero_then_fill(fd, 3 * fl_test_page_size(), 0x5a);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

FL_TEST(consumer_cannot_resize_a_buffer_it_received)
{
	struct fl_heap *heap = open_carveout(2);
	int fd = alloc(heap, 2 * fl_test_page_size()), sv[2], got = -1;
	unsigned int nfds = 0;
	char byte = 'b';
	size_t len = 0;
	unsigned char *p;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(fl_send(sv[0], &byte, 1, &fd, 1), 0);
	fl_assert_int_eq(fl_recv(sv[1], &byte, 1, &len, &got, 1, &nfds), 0);
	fl_assert_int_eq(nfds, 1);
	/* The consumer sees the producer's bytes and cannot shrink them away. */
	p = mmap(NULL, 2 * fl_test_page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	p[2 * fl_test_page_size() - 1] = 0x77;
	expect_sealed(got, 2 * fl_test_page_size());
	fl_assert_int_eq(p[2 * fl_test_page_size() - 1], 0x77);
	fl_assert_int_eq(munmap(p, 2 * fl_test_page_size()), 0);
	/* Any fd of the buffer names it: free through the received one. */
	fl_assert_int_eq(fl_heap_buffer_free(heap, got), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).buffers, 0);
	close(fd);
	close(sv[0]);
	close(sv[1]);
	fl_heap_close(heap);
}

static void reuse_is_zero_filled(struct fl_heap *heap, size_t len)
{
	for (int round = 0; round < 3; round++) {
		int fd = alloc(heap, len);

		expect_zero_then_fill(fd, len, 0xa5);
		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	}
}

FL_TEST(system_buffer_is_zero_filled_after_reuse)
{
	struct fl_heap *heap = open_system();

	reuse_is_zero_filled(heap, 4 * fl_test_page_size());
	fl_heap_close(heap);
}

/*
 * Without a pool every system buffer is a new file, so reuse cannot happen
 * above; with one, each round after the first takes a buffer the pool kept
 * (the pool counts them as hits), so a pool that handed back a freed or
 * otherwise written buffer fails here.
 */
FL_TEST(pooled_system_buffer_is_zero_filled_after_reuse)
{
	struct fl_heap *heap = open_system();
	size_t len = 4 * fl_test_page_size();

	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	for (int round = 0; round < 3; round++) {
		int fd = alloc(heap, len);

		expect_zero_then_fill(fd, len, 0xa5);
		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
		/* The pool's buffers come from its worker: let them arrive. */
		for (int i = 0; i < 20000 && fl_test_heap_info(heap).pool_pending; i++)
			usleep(1000);
	}
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, 2);
	fl_heap_close(heap);
}

FL_TEST(carveout_buffer_is_zero_filled_when_its_range_is_reused)
{
	/* Exactly one buffer fits, so each round gets the same range. */
	struct fl_heap *heap = open_carveout(4);

	reuse_is_zero_filled(heap, 4 * fl_test_page_size());
	fl_heap_close(heap);
}

FL_TEST(freed_buffer_stays_valid_through_other_fds)
{
	struct fl_heap *heap = open_carveout(1);
	int fd = alloc(heap, fl_test_page_size()), keep = dup(fd), next;
	unsigned char *p;

	fl_assert_int_ge(keep, 0);
	p = mmap(NULL, fl_test_page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, keep, 0);
	fl_assert(p != MAP_FAILED);
	p[0] = 0x42;
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	/* The range is handed out again, but as memory of its own. */
	next = alloc(heap, fl_test_page_size());
	expect_zero_then_fill(next, fl_test_page_size(), 0x11);
	fl_assert_int_eq(p[0], 0x42);
	fl_assert_int_eq(fl_heap_buffer_free(heap, next), 0);
	fl_assert_int_eq(munmap(p, fl_test_page_size()), 0);
	close(keep);
	fl_heap_close(heap);
}

FL_TEST(free_takes_any_fd_of_the_buffer_and_rejects_others)
{
	struct fl_heap *heap = open_system(), *other = open_system();
	int fd = alloc(heap, fl_test_page_size()), copy = dup(fd), pipe_fds[2];

	fl_assert_int_ge(copy, 0);
	fl_assert_int_eq(pipe2(pipe_fds, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, -1), -EBADF);
	fl_assert_int_eq(fl_heap_buffer_free(heap, pipe_fds[0]), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_free(other, fd), -EINVAL);
	/* Freeing through the dup closes the dup only. */
	fl_assert_int_eq(fl_heap_buffer_free(heap, copy), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).buffers, 0);
	fl_assert_int_eq(size_of(fd), fl_test_page_size());
	/* Freed already: the fd is no live buffer of the heap any more. */
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), -EINVAL);
	fl_assert_int_eq(fcntl(pipe_fds[0], F_GETFD), FD_CLOEXEC);
	close(fd);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	fl_heap_close(heap);
	fl_heap_close(other);
}

FL_TEST(accounting_counts_bytes_buffers_and_high_water_marks)
{
	struct fl_heap *heap = open_system();
	struct fl_heap_info info = fl_test_heap_info(heap);
	int a, b, c;

	fl_assert_str_eq(info.name, "sys");
	fl_assert_str_eq(info.kind, "system");
	fl_assert_int_eq(info.capacity, 0);
	fl_assert_int_eq(info.allocated, 0);
	fl_assert_int_eq(info.buffers, 0);
	a = alloc(heap, 1);
	b = alloc(heap, fl_test_page_size() + 1);
	c = alloc(heap, 3 * fl_test_page_size());
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.allocated, 6 * fl_test_page_size());
	fl_assert_int_eq(info.buffers, 3);
	fl_assert_int_eq(info.allocations, 3);
	fl_assert_int_eq(fl_heap_buffer_free(heap, c), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, a), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.allocated, 2 * fl_test_page_size());
	fl_assert_int_eq(info.buffers, 1);
	fl_assert_int_eq(info.peak_allocated, 6 * fl_test_page_size());
	fl_assert_int_eq(info.peak_buffers, 3);
	fl_assert_int_eq(info.failures, 0);
	fl_assert_int_eq(info.free_blocks, 0);
	fl_assert_int_eq(info.largest_free, 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, b), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).allocated, 0);
	fl_heap_close(heap);
}

FL_TEST(default_names_are_the_kinds)
{
	struct fl_heap *sys = NULL, *co = NULL;

	fl_assert_int_eq(fl_heap_open_system(NULL, &sys), 0);
	fl_assert_int_eq(fl_heap_open_carveout(NULL, 1, &co), 0);
	fl_assert_str_eq(fl_test_heap_info(sys).name, "system");
	fl_assert_str_eq(fl_test_heap_info(co).name, "carveout");
	fl_assert_str_eq(fl_test_heap_info(co).kind, "carveout");
	fl_heap_close(sys);
	fl_heap_close(co);
}

FL_TEST(long_names_are_truncated)
{
	struct fl_heap *heap = NULL;
	char name[100];

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	fl_assert_int_eq(fl_heap_open_system(name, &heap), 0);
	fl_assert_int_eq(strlen(fl_test_heap_info(heap).name), FL_HEAP_NAME_MAX - 1);
	fl_heap_close(heap);
}

FL_TEST(carveout_capacity_rounds_up_to_pages)
{
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	int fd, none = -1;

	fl_assert_int_eq(fl_heap_open_carveout("tiny", 1, &heap), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.capacity, fl_test_page_size());
	fl_assert_int_eq(info.free_blocks, 1);
	fl_assert_int_eq(info.largest_free, fl_test_page_size());
	fd = alloc(heap, 1);
	fl_assert_int_eq(fl_heap_alloc(heap, 1, 0, &none), -ENOMEM);
	fl_assert_int_eq(none, -1);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

FL_TEST(carveout_exhaustion_fails_cleanly_and_frees_back_to_one_block)
{
	enum { PAGES = 16 };
	struct fl_heap *heap = open_carveout(PAGES);
	struct fl_test_fd_snapshot before;
	struct fl_heap_info info;
	int fds[PAGES], none = -1;
	/* Free in an order that merges on the left, the right and both sides. */
	static const int order[PAGES] = { 3, 5, 4, 0, 15, 1, 2, 14, 7, 9, 8, 12, 10, 11, 6, 13 };

	for (int i = 0; i < PAGES; i++)
		fds[i] = alloc(heap, fl_test_page_size());
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.free_blocks, 0);
	fl_assert_int_eq(info.largest_free, 0);
	fl_assert_int_eq(info.allocated, info.capacity);

	fl_test_fd_snapshot(&before);
	fl_assert_int_eq(fl_heap_alloc(heap, 1, 0, &none), -ENOMEM);
	fl_assert_int_eq(fl_heap_alloc(heap, PAGES * fl_test_page_size(), 0, &none), -ENOMEM);
	fl_assert_int_eq(none, -1);
	fl_test_expect_new_fds(&before, 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.failures, 2);
	fl_assert_int_eq(info.buffers, PAGES);
	fl_assert_int_eq(info.allocations, PAGES);

	for (int i = 0; i < PAGES; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[order[i]]), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.allocated, 0);
	fl_assert_int_eq(info.buffers, 0);
	fl_assert_int_eq(info.free_blocks, 1);
	fl_assert_int_eq(info.largest_free, PAGES * fl_test_page_size());
	/* And the whole capacity is one buffer again. */
	fds[0] = alloc(heap, PAGES * fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_free(heap, fds[0]), 0);
	fl_heap_close(heap);
}

/*
 * A carveout that is full takes back the ranges of buffers that nobody
 * holds any more: closed and unmapped, here and in every other process.
 * A buffer held by an fd, by a mapping or by another process keeps its
 * range (docs/heap.md, "Reclaim").
 */
FL_TEST(carveout_reclaims_only_buffers_nobody_holds)
{
	enum { PAGES = 4 };
	struct fl_heap *heap = open_carveout(PAGES);
	size_t page = fl_test_page_size();
	int held, mapped, sent, dropped, more[3], none = -1, sv[2], status;
	struct fl_heap_info info;
	unsigned char *map;
	char c = 0;
	pid_t child;

	/*
	 * Another process holds @sent until we tell it to exit. Forked
	 * first: a child holds every fd and mapping its parent has.
	 */
	sent = alloc(heap, page);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	child = fork();
	fl_assert_int_ge(child, 0);
	if (child == 0) {
		close(sv[0]);
		_exit(read(sv[1], &c, 1) == 1 ? 0 : 1);
	}
	fl_assert_int_eq(close(sv[1]), 0);
	fl_assert_int_eq(close(sent), 0);
	held = alloc(heap, page);
	mapped = alloc(heap, page);
	dropped = alloc(heap, page);
	map = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, mapped, 0);
	fl_assert(map != MAP_FAILED);
	fl_assert_int_eq(close(mapped), 0);
	fl_assert_int_eq(close(dropped), 0);

	/* Only @dropped is held by nobody. */
	more[0] = alloc(heap, page);
	fl_assert_int_eq(fl_heap_alloc(heap, page, 0, &none), -ENOMEM);
	fl_assert_int_eq(none, -1);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.buffers, PAGES);
	fl_assert_int_eq(info.allocated, info.capacity);

	/* The mapping was the last holder of @mapped; what it held is still there. */
	map[0] = 1;
	fl_assert_int_eq(munmap(map, page), 0);
	more[1] = alloc(heap, page);
	fl_assert_int_eq(fl_heap_alloc(heap, page, 0, &none), -ENOMEM);

	/* The child was the last holder of @sent. */
	fl_assert_int_eq(write(sv[0], &c, 1), 1);
	fl_assert_int_eq(waitpid(child, &status, 0), child);
	fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fl_assert_int_eq(close(sv[0]), 0);
	more[2] = alloc(heap, page);
	fl_assert_int_eq(fl_heap_alloc(heap, page, 0, &none), -ENOMEM);

	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.buffers, PAGES);
	fl_assert_int_eq(fl_heap_buffer_free(heap, held), 0);
	for (int i = 0; i < 3; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, more[i]), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.buffers, 0);
	fl_assert_int_eq(info.largest_free, PAGES * page);
	fl_heap_close(heap);
}

FL_TEST(carveout_fragmentation_is_visible_and_coalesces_away)
{
	enum { PAGES = 8 };
	struct fl_heap *heap = open_carveout(PAGES);
	struct fl_heap_info info;
	int fds[PAGES], none = -1, two;

	for (int i = 0; i < PAGES; i++)
		fds[i] = alloc(heap, fl_test_page_size());
	for (int i = 0; i < PAGES; i += 2)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.capacity - info.allocated, 4 * fl_test_page_size());
	fl_assert_int_eq(info.free_blocks, 4);
	fl_assert_int_eq(info.largest_free, fl_test_page_size());
	/* Four free pages, but no two of them together. */
	fl_assert_int_eq(fl_heap_alloc(heap, 2 * fl_test_page_size(), 0, &none), -ENOMEM);
	/* Freeing page 1 merges pages 0 to 2. */
	fl_assert_int_eq(fl_heap_buffer_free(heap, fds[1]), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.free_blocks, 3);
	fl_assert_int_eq(info.largest_free, 3 * fl_test_page_size());
	two = alloc(heap, 2 * fl_test_page_size());
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.free_blocks, 3);
	fl_assert_int_eq(info.largest_free, fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_free(heap, two), 0);
	for (int i = 3; i < PAGES; i += 2)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.free_blocks, 1);
	fl_assert_int_eq(info.largest_free, PAGES * fl_test_page_size());
	fl_heap_close(heap);
}

FL_TEST(carveout_takes_the_smallest_hole_that_fits)
{
	/* Pages: A 1, B 3, C 1, D 2, E 1, F 2; then B and D are freed. */
	static const size_t sizes[] = { 1, 3, 1, 2, 1, 2 };
	struct fl_heap *heap = open_carveout(10);
	struct fl_heap_info info;
	int fds[6], fit;

	for (int i = 0; i < 6; i++)
		fds[i] = alloc(heap, sizes[i] * fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_free(heap, fds[1]), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fds[3]), 0);
	fit = alloc(heap, 2 * fl_test_page_size());
	/* First fit would have split B's hole and left 1 + 2 pages. */
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.free_blocks, 1);
	fl_assert_int_eq(info.largest_free, 3 * fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_free(heap, fit), 0);
	for (int i = 0; i < 6; i++)
		if (i != 1 && i != 3)
			fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).free_blocks, 1);
	fl_heap_close(heap);
}

/*
 * A model of best fit over a page map, against which the carveout must
 * agree after every step of a long random sequence of allocations and
 * frees (the AVL tree's rotations and the coalescing get exercised far
 * beyond the hand-written cases).
 */
enum { MODEL_PAGES = 64, MODEL_STEPS = 3000 };

struct model {
	int owner[MODEL_PAGES]; /* -1 free, else the slot that holds the page */
	size_t start[MODEL_PAGES], pages[MODEL_PAGES];
	int fd[MODEL_PAGES];
};

/* The best fit for @n pages: the lowest start of the smallest free run, or -1. */
static int model_best_fit(const struct model *m, size_t n)
{
	size_t best_len = SIZE_MAX;
	int best = -1;

	for (size_t i = 0; i < MODEL_PAGES;) {
		size_t j = i;

		if (m->owner[i] != -1) {
			i++;
			continue;
		}
		while (j < MODEL_PAGES && m->owner[j] == -1)
			j++;
		if (j - i >= n && j - i < best_len) {
			best_len = j - i;
			best = (int)i;
		}
		i = j;
	}
	return best;
}

static void model_runs(const struct model *m, uint64_t *ret_count, uint64_t *ret_largest)
{
	*ret_count = 0;
	*ret_largest = 0;
	for (size_t i = 0; i < MODEL_PAGES;) {
		size_t j = i;

		if (m->owner[i] != -1) {
			i++;
			continue;
		}
		while (j < MODEL_PAGES && m->owner[j] == -1)
			j++;
		(*ret_count)++;
		if (j - i > *ret_largest)
			*ret_largest = j - i;
		i = j;
	}
}

FL_TEST(carveout_matches_a_best_fit_model_over_random_steps)
{
	struct fl_heap *heap = open_carveout(MODEL_PAGES);
	struct model m;
	unsigned int seed = 6;

	for (int i = 0; i < MODEL_PAGES; i++) {
		m.owner[i] = -1;
		m.fd[i] = -1;
	}
	for (int step = 0; step < MODEL_STEPS; step++) {
		int slot = rand_r(&seed) % MODEL_PAGES, fd = -1;
		struct fl_heap_info info;
		uint64_t runs, largest;

		if (m.fd[slot] >= 0) {
			fl_assert_int_eq(fl_heap_buffer_free(heap, m.fd[slot]), 0);
			for (size_t p = 0; p < m.pages[slot]; p++)
				m.owner[m.start[slot] + p] = -1;
			m.fd[slot] = -1;
		} else {
			/* Mostly small, sometimes large enough to fail. */
			size_t n = 1 + (rand_r(&seed) % 8 ? rand_r(&seed) % 4 : rand_r(&seed) % 24);
			int at = model_best_fit(&m, n);
			int r = fl_heap_alloc(heap, n * fl_test_page_size(), 0, &fd);

			if (at < 0) {
				fl_assert_int_eq(r, -ENOMEM);
			} else {
				fl_assert_int_eq(r, 0);
				m.fd[slot] = fd;
				m.start[slot] = (size_t)at;
				m.pages[slot] = n;
				for (size_t p = 0; p < n; p++)
					m.owner[at + p] = slot;
			}
		}
		model_runs(&m, &runs, &largest);
		info = fl_test_heap_info(heap);
		if (info.free_blocks != runs || info.largest_free != largest * fl_test_page_size())
			fl__test_fail(__FILE__, __LINE__,
				      "step %d: %llu free blocks, largest %llu; model %llu, %llu",
				      step, (unsigned long long)info.free_blocks,
				      (unsigned long long)info.largest_free,
				      (unsigned long long)runs,
				      (unsigned long long)(largest * fl_test_page_size()));
	}
	for (int i = 0; i < MODEL_PAGES; i++)
		if (m.fd[i] >= 0)
			fl_assert_int_eq(fl_heap_buffer_free(heap, m.fd[i]), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).free_blocks, 1);
	fl_assert_int_eq(fl_test_heap_info(heap).allocated, 0);
	fl_heap_close(heap);
}

FL_TEST(close_leaves_unfreed_buffers_valid)
{
	struct fl_heap *heap = open_carveout(2);
	int fd = alloc(heap, fl_test_page_size());

	fl_heap_close(heap);
	expect_sealed(fd, fl_test_page_size());
	expect_zero_then_fill(fd, fl_test_page_size(), 1);
	close(fd);
	fl_heap_close(NULL);
}

FL_TEST(alloc_rejects_bad_arguments_and_leaves_heap_as_it_was)
{
	struct fl_heap *heap = open_carveout(4), *none = NULL;
	struct fl_heap_info info;
	int fd = -1;

	fl_assert_int_eq(fl_heap_alloc(heap, 0, 0, &fd), -EINVAL);
	fl_assert_int_eq(fl_heap_alloc(NULL, 1, 0, &fd), -EINVAL);
	fl_assert_int_eq(fl_heap_alloc(heap, 1, 0, NULL), -EINVAL);
	fl_assert_int_eq(fl_heap_alloc(heap, 1, 1u << 2, &fd), -EINVAL);
	fl_assert_int_eq(fl_heap_alloc(heap, 1, FL_HEAP_FLAG_CACHED | (1u << 31), &fd), -EINVAL);
	/* Too large to round up to a page: out of memory, not a bad argument. */
	fl_assert_int_eq(fl_heap_alloc(heap, SIZE_MAX, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.buffers, 0);
	fl_assert_int_eq(info.allocations, 0);
	fl_assert_int_eq(info.failures, 1);
	fl_assert_int_eq(info.free_blocks, 1);

	fl_assert_int_eq(fl_heap_open_carveout("x", 0, &none), -EINVAL);
	fl_assert_int_eq(fl_heap_open_carveout("x", SIZE_MAX, &none), -ENOMEM);
	fl_assert_int_eq(fl_heap_open_carveout("x", 1, NULL), -EINVAL);
	fl_assert_int_eq(fl_heap_open_system("x", NULL), -EINVAL);
	fl_assert(none == NULL);
	fl_assert_int_eq(fl_heap_get_info(NULL, &info), -EINVAL);
	fl_assert_int_eq(fl_heap_get_info(heap, NULL), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_free(NULL, 0), -EINVAL);
	fl_heap_close(heap);
}

FL_TEST(system_heap_reports_huge_sizes_as_enomem)
{
	struct fl_heap *heap = open_system();
	int fd = -1;

	/* Rounds up fine but no file can be that large. */
	fl_assert_int_eq(fl_heap_alloc(heap, SIZE_MAX - 2 * fl_test_page_size(), 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(fl_test_heap_info(heap).failures, 1);
	fl_heap_close(heap);
}

FL_TEST(print_lists_accounting_buffers_and_free_blocks)
{
	struct fl_heap *heap = open_carveout(4);
	int a = alloc(heap, fl_test_page_size()), b = alloc(heap, fl_test_page_size());
	char *text = NULL, line[128];
	size_t len = 0;
	struct stat st;
	FILE *out;

	fl_assert_int_eq(fl_heap_buffer_free(heap, a), 0);
	fl_assert_int_eq(fstat(b, &st), 0);
	out = open_memstream(&text, &len);
	fl_assert(out != NULL);
	fl_assert_int_eq(fl_heap_print(heap, out), 0);
	fl_assert_int_eq(fclose(out), 0);
	snprintf(line, sizeof(line), "heap 'co' (carveout, memfd, granule %zu)",
		 fl_test_page_size());
	fl_assert(strstr(text, line) != NULL);
	snprintf(line, sizeof(line), "capacity %zu, free %zu in 2 blocks, largest free block %zu",
		 4 * fl_test_page_size(), 3 * fl_test_page_size(), 2 * fl_test_page_size());
	fl_assert(strstr(text, line) != NULL);
	fl_assert(strstr(text, "in 1 buffers (peak 2)") != NULL);
	/* b's line: its inode, offset one page, one page long. */
	snprintf(line, sizeof(line), "%16llu %16zu %16zu -\n", (unsigned long long)st.st_ino,
		 fl_test_page_size(), fl_test_page_size());
	fl_assert(strstr(text, line) != NULL);
	snprintf(line, sizeof(line), "%16d %16zu\n", 0, fl_test_page_size());
	fl_assert(strstr(text, line) != NULL);
	snprintf(line, sizeof(line), "%16zu %16zu\n", 2 * fl_test_page_size(),
		 2 * fl_test_page_size());
	fl_assert(strstr(text, line) != NULL);
	free(text);
	fl_assert_int_eq(fl_heap_print(NULL, stderr), -EINVAL);
	fl_assert_int_eq(fl_heap_print(heap, NULL), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_free(heap, b), 0);
	fl_heap_close(heap);
}

/*
 * Many threads allocating, writing and freeing on one carveout that is too
 * small for all of them at once: -ENOMEM is expected, anything else is not,
 * and the heap ends whole.
 */
enum { THREADS = 8, ROUNDS = 200 };

struct worker {
	pthread_t thread;
	struct fl_heap *heap;
	unsigned int seed;
	int ok, enomem, errors;
};

static void *work(void *data)
{
	struct worker *w = data;

	for (int i = 0; i < ROUNDS; i++) {
		size_t len = (1 + rand_r(&w->seed) % 4) * fl_test_page_size();
		unsigned char *p;
		int fd = -1, r = fl_heap_alloc(w->heap, len, 0, &fd);

		if (r == -ENOMEM) {
			w->enomem++;
			continue;
		}
		if (r < 0) {
			w->errors++;
			continue;
		}
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || p[0] != 0 || p[len - 1] != 0)
			w->errors++;
		if (p != MAP_FAILED) {
			memset(p, 0xee, len);
			munmap(p, len);
		}
		if (fl_heap_buffer_free(w->heap, fd) != 0)
			w->errors++;
		w->ok++;
	}
	return NULL;
}

FL_TEST(many_threads_share_one_carveout)
{
	struct fl_heap *heap = open_carveout(12);
	struct worker workers[THREADS];
	struct fl_heap_info info;
	int ok = 0, enomem = 0;

	for (int i = 0; i < THREADS; i++) {
		workers[i] = (struct worker){ .heap = heap, .seed = (unsigned int)i + 1 };
		fl_assert_int_eq(pthread_create(&workers[i].thread, NULL, work, &workers[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		fl_assert_int_eq(pthread_join(workers[i].thread, NULL), 0);
		fl_assert_int_eq(workers[i].errors, 0);
		ok += workers[i].ok;
		enomem += workers[i].enomem;
	}
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(ok + enomem, THREADS * ROUNDS);
	fl_assert_int_eq(info.allocations, ok);
	fl_assert_int_eq(info.failures, enomem);
	fl_assert_int_eq(info.buffers, 0);
	fl_assert_int_eq(info.allocated, 0);
	fl_assert_int_eq(info.free_blocks, 1);
	fl_assert_int_eq(info.largest_free, info.capacity);
	fl_heap_close(heap);
}

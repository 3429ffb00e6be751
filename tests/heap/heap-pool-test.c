/* SPDX-License-Identifier: MIT */
/*
 * Heap pools (fl_heap_set_pool_max()): freed sizes come back as fresh,
 * zero-filled buffers that share nothing with the freed ones; the limits;
 * deferred freeing; exhaustion with a pool; many threads on one pooled heap;
 * the worker process: a separate process that goes when the heap does, a
 * worker killed, missing or talking nonsense, and a pool across fork().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

static int alloc(struct fl_heap *heap, size_t len)
{
	int fd = -1;

	fl_assert_int_eq(fl_heap_alloc(heap, len, 0, &fd), 0);
	return fd;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Waits (up to 20 s: valgrind is slow) until the worker has made everything asked. */
static void wait_pool_settled(struct fl_heap *heap)
{
	for (int i = 0; i < 20000 && fl_test_heap_info(heap).pool_pending; i++)
		sleep_ms(1);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_pending, 0);
}

/* 1 while @fd is still the file with inode @ino (its number may be reused). */
static int still_open(int fd, ino_t ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return stat(path, &st) == 0 && st.st_ino == ino;
}

/* Fails unless /proc shows @fd as @want. */
static void expect_memfd_name(int fd, const char *want)
{
	char path[64], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	fl_assert(n > 0);
	link[n] = '\0';
	fl_assert_str_eq(link, want);
}

/* Fails unless @fd's @len bytes are all zero; then fills them with @fill. */
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

/*
 * Most tests here count hits and misses exactly; the pool's gate would make
 * some allocations bare samples, so it is pinned (every size pooled) unless
 * a test sets FENCELINE_HEAP_POOL_COST itself. Read at each open.
 */
__attribute__((constructor)) static void pin_the_gate(void)
{
	setenv("FENCELINE_HEAP_POOL_COST", "none", 0);
}

/* @heap's JSON (fl_heap_print_json()), or its text; free() it. */
static char *heap_dump(struct fl_heap *heap, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	fl_assert(mem != NULL);
	fl_assert_int_eq(json ? fl_heap_print_json(heap, mem) : fl_heap_print(heap, mem), 0);
	fl_assert_int_eq(fclose(mem), 0);
	return text;
}

/* What the gate says of @size: "on", "off", "learning", "probing", or "" (nothing yet). */
static const char *gate_state(struct fl_heap *heap, uint64_t size)
{
	static char state[16];
	char *json = heap_dump(heap, true), key[64], *at;

	snprintf(key, sizeof(key), "{\"size\":%llu,", (unsigned long long)size);
	at = strstr(json, key);
	state[0] = '\0';
	if (at && (at = strstr(at, "\"state\":\"")) != NULL)
		sscanf(at + 9, "%15[a-z]", state);
	free(json);
	return state;
}

/* One buffer's life, with the worker's stock there first (so that a pooled sample is a hit). */
static void churn(struct fl_heap *heap, size_t len)
{
	wait_pool_settled(heap);
	fl_assert_int_eq(fl_heap_buffer_free(heap, alloc(heap, len)), 0);
}

FL_TEST_TIMEOUT(pool_turns_off_a_size_that_does_not_pay_and_loses_nothing, 180)
{
	const size_t page = fl_test_page_size(), cheap = page, dear = 2 * page;
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	int before = fl_test_count_fds(), held[6], round;
	char costs[128], *text;
	uint64_t hits;

	/* Fixed costs (docs/env-vars.md): @cheap pays (0.5x), @dear does not (1.1x). */
	snprintf(costs, sizeof(costs), "%zu:500/1000,%zu:1100/1000", cheap, dear);
	setenv("FENCELINE_HEAP_POOL_COST", costs, 1);
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	setenv("FENCELINE_HEAP_POOL_COST", "none", 1);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 30), 0);

	/*
	 * Buffers of the dear size held while the size is turned off, half
	 * of them from the pool (every allocation is sampled, by turns bare
	 * and pooled).
	 */
	churn(heap, dear);
	churn(heap, dear);
	for (int i = 0; i < 6; i++) {
		wait_pool_settled(heap);
		held[i] = alloc(heap, dear);
	}
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, 3);
	fl_assert_str_eq(gate_state(heap, dear), "learning");

	for (round = 0; round < 400 && (strcmp(gate_state(heap, dear), "off") ||
					strcmp(gate_state(heap, cheap), "on"));
	     round++) {
		churn(heap, cheap);
		churn(heap, dear);
	}
	fl_assert_str_eq(gate_state(heap, dear), "off");
	fl_assert_str_eq(gate_state(heap, cheap), "on");
	/* Whatever was on its way has come and gone: only the cheap size is in stock. */
	wait_pool_settled(heap);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.pool_bytes, info.pool_buffers * cheap);
	fl_assert(info.pool_buffers > 0);

	/* Off: the dear size is made and closed here, hits and misses stay as they are. */
	hits = info.pool_hits;
	for (int i = 0; i < 10; i++) {
		int fd = alloc(heap, dear);

		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
		fl_assert_errno(fcntl(fd, F_GETFD), EBADF);
	}
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.pool_hits, hits);
	fl_assert_int_eq(info.pool_bytes, info.pool_buffers * cheap);

	/* fencectl heaps and fl_heap_print() say which sizes are pooled, and why. */
	text = heap_dump(heap, false);
	fl_assert(strstr(text, "does not pay: pooled 1.10x a bare memfd") != NULL);
	fl_assert(strstr(text, "pays: pooled 0.50x a bare memfd") != NULL);
	free(text);

	/* The buffers held through the change are still the heap's, and free as ever. */
	for (int i = 0; i < 6; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, held[i]), 0);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.buffers, 0);
	fl_assert_int_eq(info.allocated, 0);

	/* Tried again after 4096 allocations; still dear, so off again, and for longer. */
	for (int i = 0; i < 4096; i++) {
		int fd = alloc(heap, dear);

		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	}
	fl_assert_str_eq(gate_state(heap, dear), "probing");
	for (round = 0; round < 400 && strcmp(gate_state(heap, dear), "off"); round++)
		churn(heap, dear);
	fl_assert_str_eq(gate_state(heap, dear), "off");
	text = heap_dump(heap, false);
	fl_assert(strstr(text, "tried again in 8192 allocations") != NULL);
	free(text);

	fl_heap_close(heap);
	fl_assert_int_eq(fl_test_count_fds(), before);
}

/*
 * Allocations of @len on @heap until its measured gate decides, the program
 * taking 2 ms more after each buffer that came from the pool (@slow_pooled)
 * or after each that did not: whatever the machine, the pooled or the bare
 * windows are then the slower. The state it decided.
 */
static const char *decide_with_a_delay(struct fl_heap *heap, size_t len, bool slow_pooled)
{
	const char *state = "";

	for (int i = 0; i < 4000; i++) {
		uint64_t hits = fl_test_heap_info(heap).pool_hits;
		int fd = alloc(heap, len);
		bool pooled = fl_test_heap_info(heap).pool_hits != hits;

		if (pooled == slow_pooled)
			sleep_ms(2);
		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
		state = gate_state(heap, len);
		if (!strcmp(state, "on") || !strcmp(state, "off"))
			break;
	}
	return state;
}

/*
 * Measured, the gate follows the program's pace (heap.md, "Pools that pay
 * or step aside"): a program slower with pooled buffers loses the pool for
 * that size, its stock closed, and its buffers are then made and closed
 * here; one slower with bare buffers keeps it.
 */
FL_TEST_TIMEOUT(pool_gate_follows_the_programs_pace, 120)
{
	const size_t page = fl_test_page_size();
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	int before = fl_test_count_fds();
	char *json;

	unsetenv("FENCELINE_HEAP_POOL_COST"); /* measured, not pinned */
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	setenv("FENCELINE_HEAP_POOL_COST", "none", 1);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 30), 0);

	fl_assert_str_eq(decide_with_a_delay(heap, 2 * page, false), "on");
	fl_assert_str_eq(decide_with_a_delay(heap, page, true), "off");
	/* The off size's stock is gone (what was on its way closed as it came). */
	wait_pool_settled(heap);
	info = fl_test_heap_info(heap);
	fl_assert(info.pool_buffers > 0);
	fl_assert_int_eq(info.pool_bytes, info.pool_buffers * 2 * page);
	/* Both say why, with the ratio of the windows they decided on. */
	json = heap_dump(heap, true);
	fl_assert(strstr(json, "\"why\":\"pays: pooled 0.") != NULL);
	fl_assert(strstr(json, "\"why\":\"does not pay: pooled ") != NULL);
	free(json);
	/* Off: made and closed here, and no hit counted. */
	info = fl_test_heap_info(heap);
	for (int i = 0; i < 10; i++) {
		int fd = alloc(heap, page);

		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
		fl_assert_errno(fcntl(fd, F_GETFD), EBADF);
	}
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, info.pool_hits);
	fl_heap_close(heap);
	fl_assert_int_eq(fl_test_count_fds(), before);
}

FL_TEST(pool_cost_env_var_is_ignored_when_malformed)
{
	static const char *const bad[] = {
		"1/", "/1", "0/1", "x:1/2", "4096:1/2;", "1/2,,", "4096:"
	};
	struct fl_heap *heap = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("FENCELINE_HEAP_POOL_COST", bad[i], 1);
		fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
		fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
		/* Measured, not fixed: one allocation makes a gate that is learning. */
		fl_assert_int_eq(fl_heap_buffer_free(heap, alloc(heap, fl_test_page_size())), 0);
		fl_assert_str_eq(gate_state(heap, fl_test_page_size()), "learning");
		fl_heap_close(heap);
	}
	setenv("FENCELINE_HEAP_POOL_COST", "none", 1);
}

FL_TEST(pool_is_off_unless_asked_and_free_then_closes_at_once)
{
	struct fl_heap *heap = NULL;
	int fd;

	unsetenv("FENCELINE_HEAP_POOL_MAX");
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_max, 0);
	fd = alloc(heap, fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_assert_errno(fcntl(fd, F_GETFD), EBADF);
	fd = alloc(heap, fl_test_page_size());
	/* A pool that is off counts no misses. */
	fl_assert_int_eq(fl_test_heap_info(heap).pool_misses, 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

FL_TEST(pool_env_var_sets_the_default_limit)
{
	struct fl_heap *heap = NULL;

	setenv("FENCELINE_HEAP_POOL_MAX", "12345", 1);
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_max, 12345);
	fl_heap_close(heap);
	setenv("FENCELINE_HEAP_POOL_MAX", "12k", 1);
	fl_assert_int_eq(fl_heap_open_carveout("p", fl_test_page_size(), &heap), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_max, 0);
	fl_heap_close(heap);
	unsetenv("FENCELINE_HEAP_POOL_MAX");
}

FL_TEST(pooled_buffer_is_fresh_zeroed_and_shares_nothing_with_the_freed_one)
{
	struct fl_heap *heap = NULL;
	size_t len = 4 * fl_test_page_size();
	struct stat old_st, new_st;
	unsigned char *old_map, *new_map;
	int fd, kept, again;

	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	fd = alloc(heap, len);
	/* A consumer that still holds the freed buffer: a dup and a mapping. */
	kept = dup(fd);
	old_map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, kept, 0);
	fl_assert(old_map != MAP_FAILED);
	memset(old_map, 0xa5, len);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	wait_pool_settled(heap);
	/* The first free of a size stocks it 32 deep (FL_HEAP_POOL_DEPTH). */
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 32);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_bytes, 32 * len);

	again = alloc(heap, len);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, 1);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 31);
	fl_assert_int_eq(fstat(kept, &old_st), 0);
	fl_assert_int_eq(fstat(again, &new_st), 0);
	fl_assert(old_st.st_ino != new_st.st_ino);
	fl_assert_int_eq(new_st.st_size, len);
	fl_assert_int_eq(fcntl(again, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	/* Made by the worker, named as the heap's own buffers are. */
	expect_memfd_name(kept, "/memfd:fl-heap:p (deleted)");
	expect_memfd_name(again, "/memfd:fl-heap:p (deleted)");
	expect_zero_then_fill(again, len, 0x3c);
	/* Neither sees the other's bytes. */
	new_map = mmap(NULL, len, PROT_READ, MAP_SHARED, again, 0);
	fl_assert(new_map != MAP_FAILED);
	for (size_t i = 0; i < len; i++) {
		fl_assert_int_eq(old_map[i], 0xa5);
		fl_assert_int_eq(new_map[i], 0x3c);
	}
	munmap(old_map, len);
	munmap(new_map, len);
	close(kept);
	fl_assert_int_eq(fl_heap_buffer_free(heap, again), 0);
	fl_heap_close(heap);
}

FL_TEST_TIMEOUT(no_stale_data_through_the_pool_over_many_rounds, 120)
{
	enum { ROUNDS = 100 };
	struct fl_heap *heap = NULL;
	size_t len = 3 * fl_test_page_size();

	fl_assert_int_eq(fl_heap_open_carveout("p", 16 * fl_test_page_size(), &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	for (int i = 0; i < ROUNDS; i++) {
		int fd = alloc(heap, len);

		expect_zero_then_fill(fd, len, 0x40 + (i & 0x3f));
		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
		wait_pool_settled(heap);
	}
	/* Every round but the first took the buffer the previous free asked for. */
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, ROUNDS - 1);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_misses, 1);
	fl_assert_int_eq(fl_test_heap_info(heap).buffers, 0);
	fl_heap_close(heap);
}

FL_TEST(freed_fd_goes_to_the_worker_and_leaves_this_process)
{
	struct fl_heap *heap = NULL;
	struct stat st;
	int fd;

	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);

	fd = alloc(heap, fl_test_page_size());
	fl_assert_int_eq(fstat(fd, &st), 0);
	/* The first free of a size asks the worker at once, and sends the fd along. */
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_assert(!still_open(fd, st.st_ino));
	fl_heap_close(heap);
}

/* The worker whose environment has FL_TEST_POOL_MARK=@mark, or -1. */
static pid_t find_worker(const char *mark)
{
	char want[64], path[64], env[8192];
	struct dirent *e;
	pid_t found = -1;
	DIR *d = opendir("/proc");

	snprintf(want, sizeof(want), "FL_TEST_POOL_MARK=%s", mark);
	while (d && found < 0 && (e = readdir(d))) {
		ssize_t n;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/environ", atoi(e->d_name));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, env, sizeof(env) - 1);
		close(fd);
		for (ssize_t at = 0; n > 0 && at < n; at += (ssize_t)strlen(env + at) + 1) {
			env[n] = '\0';
			if (!strcmp(env + at, want))
				found = atoi(e->d_name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static bool gone(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	/* A zombie is gone too: its reaper is init, not us. */
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z';
}

/* A pooled heap whose worker is marked with this test's name. */
static struct fl_heap *marked_heap(const char *mark)
{
	struct fl_heap *heap = NULL;

	setenv("FL_TEST_POOL_MARK", mark, 1);
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, alloc(heap, fl_test_page_size())), 0);
	unsetenv("FL_TEST_POOL_MARK");
	return heap;
}

FL_TEST(worker_is_a_process_of_its_own_that_goes_with_the_heap)
{
	char mark[32];
	struct fl_heap *heap;
	pid_t pid;
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(mark, sizeof(mark), "own-%d", (int)getpid());
	heap = marked_heap(mark);
	pid = find_worker(mark);
	fl_assert(pid > 0);
	/* Not a thread of ours, and not our child: we never reap it. */
	fl_assert(pid != getpid());
	fl_assert_int_eq(waitpid(pid, NULL, WNOHANG), -1);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	fl_assert(f != NULL);
	fl_assert(fgets(comm, sizeof(comm), f) != NULL);
	fclose(f);
	fl_assert(strncmp(comm, "fl-heap-worker", 14) == 0);
	wait_pool_settled(heap);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 32);
	fl_heap_close(heap);
	for (int i = 0; i < 5000 && !gone(pid); i++)
		sleep_ms(1);
	fl_assert(gone(pid));
}

/* Allocations go on without the worker, and frees close at once. */
static void expect_pool_without_worker(struct fl_heap *heap)
{
	for (int i = 0; i < 10; i++) {
		int fd = alloc(heap, (size_t)(i % 2 + 1) * fl_test_page_size());

		expect_zero_then_fill(fd, fl_test_page_size(), 0x11);
		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
		fl_assert_errno(fcntl(fd, F_GETFD), EBADF);
	}
	fl_assert_int_eq(fl_test_heap_info(heap).pool_pending, 0);
	fl_assert_int_eq(fl_test_heap_info(heap).buffers, 0);
}

FL_TEST(pool_goes_on_without_a_killed_worker)
{
	char mark[32];
	struct fl_heap *heap;
	pid_t pid;
	int before = fl_test_count_fds(), fd;

	snprintf(mark, sizeof(mark), "kill-%d", (int)getpid());
	heap = marked_heap(mark);
	wait_pool_settled(heap);
	pid = find_worker(mark);
	fl_assert(pid > 0);
	fl_assert_int_eq(kill(pid, SIGKILL), 0);
	for (int i = 0; i < 5000 && !gone(pid); i++)
		sleep_ms(1);
	/* Its buffers already here are still good: 32 hits. */
	for (int i = 0; i < 40; i++) {
		fd = alloc(heap, fl_test_page_size());
		expect_zero_then_fill(fd, fl_test_page_size(), 0x22);
		fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	}
	fl_assert(fl_test_heap_info(heap).pool_hits >= 32);
	/* By now the pool has found the worker gone. */
	for (int i = 0; i < 5000 && fl_test_heap_info(heap).pool_pending; i++)
		sleep_ms(1);
	expect_pool_without_worker(heap);
	fl_heap_close(heap);
	fl_assert_int_eq(fl_test_count_fds(), before);
}

FL_TEST(pool_without_its_worker_program_makes_nothing_ahead)
{
	struct fl_heap *heap = NULL;
	int before = fl_test_count_fds();

	setenv("FENCELINE_HEAP_WORKER", "/nonexistent/fl-heap-worker", 1);
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	expect_pool_without_worker(heap);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, 0);
	fl_heap_close(heap);
	unsetenv("FENCELINE_HEAP_WORKER");
	fl_assert_int_eq(fl_test_count_fds(), before);
}

/*
 * With no worker, every size is off and says so: a gate left measuring
 * would never get a pooled sample (every allocation misses), and fencectl
 * heaps (and the benchmark) showed such a size as pooled, "measuring: 0
 * pooled and 1284 bare samples", for good.
 */
FL_TEST(pool_without_a_worker_says_every_size_is_off)
{
	struct fl_heap *heap = NULL;
	size_t page = fl_test_page_size();
	char *text;

	unsetenv("FENCELINE_HEAP_POOL_COST"); /* measured, not pinned */
	setenv("FENCELINE_HEAP_WORKER", "/nonexistent/fl-heap-worker", 1);
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	for (int i = 0; i < 200; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, alloc(heap, (size_t)(i % 2 + 1) * page)),
				 0);
	/* The size seen before the worker was found missing; the other was never listed. */
	fl_assert_str_eq(gate_state(heap, page), "off");
	fl_assert(strcmp(gate_state(heap, 2 * page), "on") != 0);
	text = heap_dump(heap, false);
	if (!strstr(text, "no worker"))
		fl__test_fail(__FILE__, __LINE__, "the pool does not say why it is off:\n%s", text);
	free(text);
	fl_heap_close(heap);
	unsetenv("FENCELINE_HEAP_WORKER");
	setenv("FENCELINE_HEAP_POOL_COST", "none", 1);
}

#ifdef FL_BAD_WORKER
static void bad_worker(const char *mode)
{
	struct fl_heap *heap = NULL;
	int before = fl_test_count_fds();

	setenv("FENCELINE_HEAP_WORKER", FL_BAD_WORKER, 1);
	setenv("FL_BAD_WORKER_MODE", mode, 1);
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, alloc(heap, fl_test_page_size())), 0);
	/* Looking takes in its answer, or finds it gone. */
	for (int i = 0; i < 5000 && fl_test_heap_info(heap).pool_pending; i++)
		sleep_ms(1);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 0);
	expect_pool_without_worker(heap);
	fl_heap_close(heap);
	unsetenv("FENCELINE_HEAP_WORKER");
	unsetenv("FL_BAD_WORKER_MODE");
	/* Whatever it sent was closed. */
	fl_assert_int_eq(fl_test_count_fds(), before);
}

FL_TEST(pool_drops_a_worker_that_hangs_up)
{
	bad_worker("exit");
}

FL_TEST(pool_drops_a_worker_of_another_version)
{
	bad_worker("version");
}

FL_TEST(pool_drops_a_worker_that_miscounts_its_fds)
{
	bad_worker("count");
}

FL_TEST(pool_drops_a_worker_that_settles_more_than_asked)
{
	bad_worker("excess");
}

FL_TEST(pool_drops_a_worker_that_sends_a_short_message)
{
	bad_worker("junk");
}

FL_TEST(pool_drops_a_worker_that_skips_the_transfer_header)
{
	bad_worker("framing");
}
#endif

FL_TEST(contig_pool_buffers_come_from_the_worker_sealed_zeroed_and_backed)
{
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	unsigned char *p, *vec;
	struct stat st;
	size_t len;
	int fd;

	fl_assert_int_eq(fl_heap_open_system_contig("contig", &heap), 0);
	info = fl_test_heap_info(heap);
	len = (size_t)info.granule;
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 4 * len), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, alloc(heap, len)), 0);
	wait_pool_settled(heap);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 4);
	fd = alloc(heap, len);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, 1);
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert_int_eq(st.st_size, len);
	fl_assert_int_eq(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	if (strcmp(info.backing, "hugetlb") != 0) {
		/* The worker populated it, by the heap's recipe: every page is there. */
		vec = calloc(len / fl_test_page_size(), 1);
		fl_assert(vec != NULL);
		fl_assert_int_eq(mincore(p, len, vec), 0);
		for (size_t i = 0; i < len / fl_test_page_size(); i++)
			fl_assert(vec[i] & 1);
		free(vec);
	}
	for (size_t i = 0; i < len; i++)
		fl_assert_int_eq(p[i], 0);
	munmap(p, len);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

/* In the child: 0 if it dropped the parent's pool and made one of its own. */
static int child_pool(struct fl_heap *heap)
{
	struct fl_heap_info before, info;
	int fd = -1;

	if (fl_heap_get_info(heap, &before) < 0 || before.pool_buffers != 0)
		return 1;
	if (fl_heap_alloc(heap, fl_test_page_size(), 0, &fd) < 0)
		return 2;
	if (fl_heap_get_info(heap, &info) < 0 || info.pool_hits != before.pool_hits ||
	    info.pool_misses != before.pool_misses + 1)
		return 3;
	if (fl_heap_buffer_free(heap, fd) < 0)
		return 4;
	for (int i = 0; i < 5000 && fl_heap_get_info(heap, &info) == 0 && info.pool_pending; i++)
		sleep_ms(1);
	if (info.pool_buffers != 32)
		return 5;
	if (fl_heap_alloc(heap, fl_test_page_size(), 0, &fd) < 0 ||
	    fl_heap_buffer_free(heap, fd) < 0)
		return 6;
	fl_heap_close(heap);
	return 0;
}

FL_TEST(forked_child_never_hands_out_the_parents_pooled_buffers)
{
	struct fl_heap *heap = NULL;
	int status = -1, fd;
	pid_t pid;

	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	fl_assert_int_eq(fl_heap_buffer_free(heap, alloc(heap, fl_test_page_size())), 0);
	wait_pool_settled(heap);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 32);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0)
		_exit(child_pool(heap));
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
	/* The parent's pool is untouched: still 32, and a hit. */
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 32);
	fd = alloc(heap, fl_test_page_size());
	fl_assert_int_eq(fl_test_heap_info(heap).pool_hits, 1);
	fl_assert_int_eq(fl_heap_buffer_free(heap, fd), 0);
	fl_heap_close(heap);
}

FL_TEST(close_closes_pooled_and_doomed_fds)
{
	struct fl_heap *heap = NULL;
	int before = fl_test_count_fds();

	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	for (int i = 0; i < 10; i++)
		fl_assert_int_eq(
			fl_heap_buffer_free(heap,
					    alloc(heap, (size_t)(i % 3 + 1) * fl_test_page_size())),
			0);
	/* Whatever the worker got to: nothing is left open. */
	fl_heap_close(heap);
	fl_assert_int_eq(fl_test_count_fds(), before);
}

FL_TEST(pool_stays_within_its_limits_and_shrinks_when_lowered)
{
	struct fl_heap *heap = NULL;
	int fds[80], before;

	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 3 * fl_test_page_size()), 0);
	for (int i = 0; i < 5; i++)
		fds[i] = alloc(heap, fl_test_page_size());
	for (int i = 0; i < 5; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	wait_pool_settled(heap);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 3);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_bytes, 3 * fl_test_page_size());

	before = fl_test_count_fds();
	fl_assert_int_eq(fl_heap_set_pool_max(heap, fl_test_page_size()), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 1);
	fl_assert_int_eq(fl_test_count_fds(), before - 2);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 0), 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 0);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_max, 0);
	/* Off again: free closes at once. */
	fds[0] = alloc(heap, fl_test_page_size());
	fl_assert_int_eq(fl_heap_buffer_free(heap, fds[0]), 0);
	fl_assert_errno(fcntl(fds[0], F_GETFD), EBADF);

	/* 32 of a size and 64 in all, however large the limit. */
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 30), 0);
	for (int i = 0; i < 80; i++)
		fds[i] = alloc(heap, fl_test_page_size());
	for (int i = 0; i < 80; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	wait_pool_settled(heap);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 32);
	for (int i = 0; i < 10; i++)
		fds[i] = alloc(heap, (size_t)(i + 2) * fl_test_page_size());
	for (int i = 0; i < 10; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	wait_pool_settled(heap);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 64);
	fl_assert_int_eq(fl_test_heap_info(heap).pool_bytes,
			 32 * fl_test_page_size() + 32 * 2 * fl_test_page_size());
	fl_heap_close(heap);
}

FL_TEST(carveout_exhaustion_with_a_pool_leaves_both_consistent)
{
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	int fds[4], fd = -1;

	fl_assert_int_eq(fl_heap_open_carveout("p", 4 * fl_test_page_size(), &heap), 0);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	for (int i = 0; i < 4; i++)
		fds[i] = alloc(heap, fl_test_page_size());
	for (int i = 0; i < 4; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	wait_pool_settled(heap);
	/* 32 deep after the first free; the others find it full. */
	fl_assert_int_eq(fl_test_heap_info(heap).pool_buffers, 32);
	/* The pool holds files, not capacity: the carveout is whole. */
	fl_assert_int_eq(fl_test_heap_info(heap).free_blocks, 1);
	for (int i = 0; i < 4; i++)
		fds[i] = alloc(heap, fl_test_page_size());
	fl_assert_int_eq(fl_heap_alloc(heap, fl_test_page_size(), 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.pool_hits, 4);
	fl_assert_int_eq(info.pool_buffers, 28);
	fl_assert_int_eq(info.failures, 1);
	fl_assert_int_eq(info.buffers, 4);
	fl_assert_int_eq(info.free_blocks, 0);
	for (int i = 0; i < 4; i++)
		fl_assert_int_eq(fl_heap_buffer_free(heap, fds[i]), 0);
	wait_pool_settled(heap);
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.free_blocks, 1);
	fl_assert_int_eq(info.largest_free, 4 * fl_test_page_size());
	fl_assert_int_eq(info.allocated, 0);
	/* 4 of 32 to ask for is less than a quarter: the worker is not asked yet. */
	fl_assert_int_eq(info.pool_buffers, 28);
	fl_heap_close(heap);
}

/* Threads allocating, checking, writing and freeing on one pooled heap. */
struct worker {
	pthread_t thread;
	struct fl_heap *heap;
	unsigned int seed;
	int errors, dirty;
};

static void *work(void *data)
{
	static const size_t pages[] = { 1, 2, 3, 16 };
	struct worker *w = data;

	for (int i = 0; i < 150; i++) {
		size_t len = pages[rand_r(&w->seed) % 4] * fl_test_page_size();
		unsigned char *p;
		int fd = -1;

		if (fl_heap_alloc(w->heap, len, 0, &fd) < 0) {
			w->errors++;
			continue;
		}
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			w->errors++;
		} else {
			for (size_t j = 0; j < len; j += 512)
				w->dirty += p[j] != 0;
			memset(p, 0xee, len);
			munmap(p, len);
		}
		if (fl_heap_buffer_free(w->heap, fd) < 0)
			w->errors++;
	}
	return NULL;
}

/* Four threads on one pooled heap; @costs: FENCELINE_HEAP_POOL_COST at its open. */
static void threads_on_one_pool(const char *costs)
{
	enum { THREADS = 4 };
	struct worker w[THREADS];
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;

	setenv("FENCELINE_HEAP_POOL_COST", costs, 1);
	fl_assert_int_eq(fl_heap_open_system("p", &heap), 0);
	setenv("FENCELINE_HEAP_POOL_COST", "none", 1);
	fl_assert_int_eq(fl_heap_set_pool_max(heap, 1 << 20), 0);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .heap = heap, .seed = (unsigned int)i + 1 };
		fl_assert_int_eq(pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
	}
	/* Meanwhile the limit moves under them. */
	for (int i = 0; i < 20; i++) {
		fl_assert_int_eq(fl_heap_set_pool_max(heap,
						      (i % 2) ? 64 * fl_test_page_size() : 1 << 20),
				 0);
		sleep_ms(2);
	}
	for (int i = 0; i < THREADS; i++) {
		fl_assert_int_eq(pthread_join(w[i].thread, NULL), 0);
		fl_assert_int_eq(w[i].errors, 0);
		fl_assert_int_eq(w[i].dirty, 0);
	}
	info = fl_test_heap_info(heap);
	fl_assert_int_eq(info.buffers, 0);
	fl_assert_int_eq(info.allocated, 0);
	fl_assert_int_eq(info.allocations, THREADS * 150);
	fl_heap_close(heap);
}

FL_TEST_TIMEOUT(threads_allocate_and_free_through_one_pool, 120)
{
	threads_on_one_pool("none");
}

/* The same while the gate samples every allocation and turns sizes off (TSan's case). */
FL_TEST_TIMEOUT(threads_allocate_and_free_while_the_gate_turns_sizes_off, 120)
{
	threads_on_one_pool("1000/900");
}

/* The same with the gate measuring its windows (an empty value: measured). */
FL_TEST_TIMEOUT(threads_allocate_and_free_while_the_gate_measures_windows, 120)
{
	threads_on_one_pool("");
}

/* SPDX-License-Identifier: MIT */
/*
 * Fixtures the area tests share (helpers.c is linked into every runner
 * executable): sw_sync timelines and fences that fail the test when they
 * cannot be made, fence fds, and time. What can fail fails the test
 * through the runner's assertions instead of returning an error.
 */
#ifndef FL_TESTS_HELPERS_H
#define FL_TESTS_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/fenceline.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t fl_test_now_ns(void);

/* Sleeps @ms milliseconds, across signals. */
void fl_test_sleep_ms(unsigned int ms);

/* A new sw_sync timeline at 0; the caller owns the reference. */
struct fl_timeline *fl_test_timeline_new(const char *name);

/* A new fence at @value on sw_sync timeline @tl (name NULL: the default). */
struct fl_fence *fl_test_fence_new(struct fl_timeline *tl, uint64_t value, const char *name);

/* The counter of sw_sync timeline @tl. */
uint64_t fl_test_timeline_value(struct fl_timeline *tl);

/* A new fd for @fence; the caller closes it. */
int fl_test_export_fd(struct fl_fence *fence);

/* poll() on one fd, across signals: returns revents, or 0 if it timed out. */
short fl_test_poll_fd(int fd, short events, int timeout_ms);

/*
 * A callback that appends its value to a shared log when it runs, so that
 * a test can check the order in which points complete.
 */
struct fl_test_order_cb {
	struct fl_fence_cb cb; /* first: the callback casts back */
	uint64_t value;
	uint64_t *log;
	int *len;
};

void fl_test_record_order(struct fl_fence *fence, struct fl_fence_cb *cb);

/* The page size: what heaps round sizes up to. */
size_t fl_test_page_size(void);

/* The whole content of @fd (a memfd, a file: read from offset 0), NUL-terminated, malloc()ed; asserts. */
char *fl_test_read_fd_text(int fd);

/*
 * Run test @test of this test program in a new process (--no-fork) with
 * FENCELINE_DEBUG=@debug, which the library reads when it loads, and
 * return what it wrote to stderr, NUL-terminated, malloc()ed; asserts that
 * it exited with 0. @prog names the program (argv[0]).
 */
char *fl_test_stderr_of_self(const char *prog, const char *test, const char *debug);

/* fl_heap_get_info() of @heap, which must succeed. */
struct fl_heap_info fl_test_heap_info(struct fl_heap *heap);

#endif /* FL_TESTS_HELPERS_H */

/* SPDX-License-Identifier: MIT */
/*
 * The test runner: every tests/<area>/<name>-test.c registers its tests with
 * FL_TEST(name) and links runner.c, which provides main(). Each test runs in
 * a forked child with a timeout and an fd-leak check (the child's fd count
 * must return to what it was before the test). See HACKING.md.
 *
 *   <area>-test                 run every test of the file
 *   <area>-test NAME...         run only these
 *   <area>-test --no-fork NAME  run one test in-process (for gdb, valgrind)
 *   <area>-test --list          list the tests
 *
 * Exit status: 0 all passed, 1 some failed, 77 all skipped (meson's code).
 * FL_TEST_TIMEOUT_MULTIPLIER scales the per-test timeout (default 60 s).
 */
#ifndef FL_TESTS_RUNNER_H
#define FL_TESTS_RUNNER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fl_test {
	const char *name;
	void (*run)(void);
	bool must_fail; /* FL_FAIL_TEST: passes only if the body fails */
	int timeout_s; /* 0: the default */
};

#define FL_TEST_SECTION "fl_tests"

#define FL_TEST_FULL(tname, fail, tmo)                                                   \
	static void tname(void);                                                         \
	static const struct fl_test fl_test_desc_##tname                                 \
		__attribute__((used, section(FL_TEST_SECTION),                           \
			       aligned(sizeof(void *)))) = { #tname, tname, fail, tmo }; \
	static void tname(void)

/* A test that must pass. */
#define FL_TEST(name) FL_TEST_FULL(name, false, 0)
/* A test that must fail (abort, crash, failed assert, leak or timeout). */
#define FL_FAIL_TEST(name) FL_TEST_FULL(name, true, 0)
/* A test with its own timeout in seconds (before the multiplier). */
#define FL_TEST_TIMEOUT(name, secs) FL_TEST_FULL(name, false, secs)

/* Called by the assertion macros; prints and exits the child with status 1. */
__attribute__((noreturn, format(printf, 3, 4))) void fl__test_fail(const char *file, int line,
								   const char *fmt, ...);

/* Skip the running test: prints the reason, exits 77. */
__attribute__((noreturn, format(printf, 1, 2))) void fl_test_skip(const char *fmt, ...);

/* Number of open fds of this process (from /proc/self/fd). */
int fl_test_count_fds(void);

/*
 * The fds open at some moment, each with its /proc link ("socket:[123]"),
 * so that a number closed and reused in between still counts as new.
 * Compare against a snapshot rather than a count: the core closes its own
 * ends of dropped fds asynchronously, also those of the runner's warm-up
 * just before the test, so the count may still fall.
 */
#define FL_TEST_SNAPSHOT_MAX 256

struct fl_test_fd_snapshot {
	int n;
	int fds[FL_TEST_SNAPSHOT_MAX];
	char links[FL_TEST_SNAPSHOT_MAX][64];
};

/* Records the open fds; fails the test if there are too many to record. */
void fl_test_fd_snapshot(struct fl_test_fd_snapshot *snap);

/*
 * Returns how many fds are open now that were not in @base (or
 * FL_TEST_SNAPSHOT_MAX if there are too many to tell), and describes the
 * first of them in @what unless it is NULL.
 */
int fl_test_fds_new_since(const struct fl_test_fd_snapshot *base, char *what, size_t size);

/* Fails the test unless exactly @want fds are open that were not in @base. */
#define fl_test_expect_new_fds(base, want) fl__test_expect_new_fds(__FILE__, __LINE__, base, want)

/*
 * Fails the test unless every fd opened since @base is closed within the
 * runner's grace period (the core may close its ends asynchronously).
 */
#define fl_test_wait_fds_back(base) fl__test_wait_fds_back(__FILE__, __LINE__, base)

void fl__test_expect_new_fds(const char *file, int line, const struct fl_test_fd_snapshot *base,
			     int want);
void fl__test_wait_fds_back(const char *file, int line, const struct fl_test_fd_snapshot *base);

/* 1 in a ThreadSanitizer build (gcc or clang), else 0. */
#if defined(__SANITIZE_THREAD__)
#define FL_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FL_TEST_UNDER_TSAN 1
#endif
#endif
#ifndef FL_TEST_UNDER_TSAN
#define FL_TEST_UNDER_TSAN 0
#endif

/* 1 in an AddressSanitizer build (gcc or clang), else 0. */
#if defined(__SANITIZE_ADDRESS__)
#define FL_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FL_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef FL_TEST_UNDER_ASAN
#define FL_TEST_UNDER_ASAN 0
#endif

#define fl_assert(cond)                                                                   \
	do {                                                                              \
		if (!(cond))                                                              \
			fl__test_fail(__FILE__, __LINE__, "assertion failed: %s", #cond); \
	} while (0)

#define fl_assert_int_eq(a, b)                                                                     \
	do {                                                                                       \
		long long fl_a_ = (long long)(a), fl_b_ = (long long)(b);                          \
		if (fl_a_ != fl_b_)                                                                \
			fl__test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, fl_a_, \
				      fl_b_);                                                      \
	} while (0)

#define fl_assert_int_ne(a, b)                                                                   \
	do {                                                                                     \
		long long fl_a_ = (long long)(a), fl_b_ = (long long)(b);                        \
		if (fl_a_ == fl_b_)                                                              \
			fl__test_fail(__FILE__, __LINE__, "%s != %s: both %lld", #a, #b, fl_a_); \
	} while (0)

#define fl_assert_int_ge(a, b)                                                                    \
	do {                                                                                      \
		long long fl_a_ = (long long)(a), fl_b_ = (long long)(b);                         \
		if (!(fl_a_ >= fl_b_))                                                            \
			fl__test_fail(__FILE__, __LINE__, "%s >= %s: %lld < %lld", #a, #b, fl_a_, \
				      fl_b_);                                                     \
	} while (0)

#define fl_assert_str_eq(a, b)                                                                  \
	do {                                                                                    \
		const char *fl_a_ = (a), *fl_b_ = (b);                                          \
		if (strcmp(fl_a_, fl_b_) != 0)                                                  \
			fl__test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
				      fl_a_, fl_b_);                                            \
	} while (0)

/* Assert a libc-style call failed with -1 and the given errno. */
#define fl_assert_errno(expr, err)                                                            \
	do {                                                                                  \
		errno = 0;                                                                    \
		long long fl_r_ = (long long)(expr);                                          \
		int fl_e_ = errno;                                                            \
		if (fl_r_ != -1 || fl_e_ != (err))                                            \
			fl__test_fail(__FILE__, __LINE__,                                     \
				      "%s: got %lld errno %d (%s), want -1 %s", #expr, fl_r_, \
				      fl_e_, strerror(fl_e_), #err);                          \
	} while (0)

#endif /* FL_TESTS_RUNNER_H */

/* SPDX-License-Identifier: MIT */
/*
 * The test runner: every tests/<area>-test.c registers its tests with
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

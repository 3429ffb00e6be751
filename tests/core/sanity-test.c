/* SPDX-License-Identifier: MIT */
/*
 * Proves the runner catches every kind of failure: if one of the
 * FL_FAIL_TESTs below "passes", the runner would let the same bug through in
 * a real test.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "runner.h"

FL_TEST(passing_test_passes)
{
	fl_assert(1 + 1 == 2);
	fl_assert_int_eq(3, 3);
	fl_assert_str_eq("a", "a");
}

FL_TEST(skipped_test_is_not_a_failure)
{
	fl_test_skip("skipping on purpose");
}

FL_FAIL_TEST(fd_leak_fails)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	fl_assert_int_ge(fd, 0);
}

FL_FAIL_TEST(leaked_fence_fd_fails)
{
	struct fl_timeline *tl;
	struct fl_fence *f;
	int fd;

	fl_assert_int_eq(fl_sw_sync_timeline_create("leak", 0, &tl), 0);
	fl_assert_int_eq(fl_sw_sync_fence_create(tl, 1, "leak", &f), 0);
	fl_assert_int_eq(fl_fence_export_fd(f, &fd), 0);
	fl_fence_unref(f);
	fl_timeline_kill(tl);
}

FL_FAIL_TEST(abort_fails)
{
	abort();
}

FL_FAIL_TEST(segfault_fails)
{
	raise(SIGSEGV);
}

FL_TEST_FULL(timeout_fails, true, 1)
{
	for (;;)
		pause();
}

FL_FAIL_TEST(failed_assert_fails)
{
	fl_assert(1 + 1 == 3);
}

FL_FAIL_TEST(failed_int_assert_fails)
{
	fl_assert_int_eq(1, 2);
}

FL_FAIL_TEST(nonzero_exit_fails)
{
	exit(3);
}

FL_TEST(closed_fds_do_not_count_as_a_leak)
{
	int fds[2];

	fl_assert_int_eq(pipe(fds), 0);
	close(fds[0]);
	close(fds[1]);
}

FL_TEST(test_gets_a_private_runtime_dir)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");

	fl_assert(dir != NULL);
	fl_assert_int_eq(access(dir, W_OK), 0);
}

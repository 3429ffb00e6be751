/* SPDX-License-Identifier: MIT */
/*
 * fl_timeline_fd_inc_at(): the points a step completes report the time the
 * caller gave, exactly, through every path a step takes (this process's
 * core, the owner's counter, the daemon for another process), and a time
 * in the future or before the previous step's is refused, changing nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include <android/sync.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "daemon-procs.h"
#include "helpers.h"
#include "runner.h"

/* The fence's completion time, as fl_fence_fd_get_info() and libsync's sync_file_info() see it. */
static uint64_t stamp_of(int fence)
{
	struct fl_fence_info info;
	struct fl_sync_pt_info pt;
	struct sync_file_info *sfi;
	struct sync_fence_info *pts;
	uint64_t ts;

	fl_assert_int_eq(fl_fence_fd_get_info(fence, &info, &pt, 1), 1);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(pt.timestamp_ns, info.timestamp_ns);
	ts = info.timestamp_ns;
	sfi = sync_file_info(fence);
	fl_assert(sfi != NULL);
	fl_assert_int_eq(sfi->num_fences, 1);
	pts = sync_get_fence_info(sfi);
	fl_assert_int_eq(pts[0].timestamp_ns, ts);
	sync_file_info_free(sfi);
	return ts;
}

static int64_t value_of(int tl)
{
	uint64_t v = 0;

	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
	return (int64_t)v;
}

/*
 * The errors, which change nothing, and two steps that keep their own
 * times; @daemon_stopped: the daemon sleeps through the steps, so it
 * catches up with both at once afterwards.
 */
static void check_steps(int tl, bool daemon_stopped)
{
	struct stopped_daemon d;
	int f1 = new_fence(tl, 1, "f1"), f2 = new_fence(tl, 2, "f2"), f3 = new_fence(tl, 3, "f3");
	uint64_t t1 = fl_test_now_ns() - 3000000, t2 = t1 + 1000000;

	fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, 0), -EINVAL);
	fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, fl_test_now_ns() + 1000000000ull), -EINVAL);
	fl_assert_int_eq(fl_timeline_fd_inc_at(-1, 1, t1), -EBADF);
	fl_assert_int_eq(value_of(tl), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(f1), FL_STATUS_ACTIVE);

	/*
	 * Two steps before anybody asks about the first (nothing between
	 * them makes the daemon catch up with an owner's counter): each fence
	 * keeps its own step's time.
	 */
	if (daemon_stopped) {
		fl_daemon_flush();
		daemon_stop(&d);
	}
	fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, t1), 0);
	/* Not before the previous step's time: refused, nothing moves. */
	fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, t1 - 1), -EINVAL);
	fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, t2), 0);
	if (daemon_stopped)
		daemon_resume(&d);
	fl_assert_int_eq(value_of(tl), 2);
	fl_assert_int_eq(fl_fence_fd_get_status(f3), FL_STATUS_ACTIVE);
	fl_assert_int_eq(stamp_of(f1), t1);
	fl_assert_int_eq(stamp_of(f2), t2);
	/* The same time again is allowed (two posts flipped at one vsync). */
	fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, t2), 0);
	fl_assert_int_eq(stamp_of(f3), t2);
	close(f3);
	close(f2);
	close(f1);
}

FL_TEST(inc_at_stamps_in_process_points_with_the_given_time)
{
	int tl;

	fl_mode_set(FL_MODE_IN_PROCESS);
	tl = new_timeline("stamped");
	check_steps(tl, false);
	close(tl);
}

FL_TEST(inc_at_stamps_an_owners_fences_with_each_steps_time)
{
	int tl = new_timeline("stamped");

	/* The owner completes its own fences: no step waits for the daemon. */
	check_steps(tl, true);
	close(tl);
}

FL_TEST(inc_at_through_the_daemon_stamps_and_refuses_like_the_owner)
{
	int tl = new_timeline("stamped");
	int f1 = new_fence(tl, 1, "f1"), f2 = new_fence(tl, 2, "f2");
	uint64_t t1 = fl_test_now_ns() - 3000000;
	pid_t pid;

	fl_daemon_flush();
	pid = dl_fork();
	if (pid == 0) {
		/* Not the owner here: TIMELINE_INC_AT, checked by the daemon. */
		fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, fl_test_now_ns() + 1000000000ull),
				 -EINVAL);
		fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, t1), 0);
		fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, t1 - 1), -EINVAL);
		_exit(0);
	}
	dl_wait_child_ok(pid);
	fl_assert_int_eq(value_of(tl), 1);
	fl_assert_int_eq(stamp_of(f1), t1);
	fl_assert_int_eq(fl_fence_fd_get_status(f2), FL_STATUS_ACTIVE);
	/* The owner steps on after the daemon's step, with its own time. */
	fl_assert_int_eq(fl_timeline_fd_inc_at(tl, 1, t1 + 5), 0);
	fl_assert_int_eq(stamp_of(f2), t1 + 5);
	close(f2);
	close(f1);
	close(tl);
}

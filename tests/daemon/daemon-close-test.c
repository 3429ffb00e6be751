/* SPDX-License-Identifier: MIT */
/*
 * fl_timeline_fd_close() against the owner's one-way fence creations: a
 * fence made before the close is a fence of the timeline, failed with
 * -ENOENT when it dies, whatever the daemon reads first (found by the
 * fence-state fuzzer, docs/daemon.md).
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "daemon-procs.h"
#include "helpers.h"
#include "runner.h"

struct closer {
	int tl, fence, create, close;
};

/* A fence the daemon has not read yet, then the timeline's last fd closed. */
static void *create_then_close(void *arg)
{
	struct closer *c = arg;

	c->create = fl_fence_fd_create(c->tl, 1, "late", &c->fence);
	c->close = fl_timeline_fd_close(c->tl);
	return NULL;
}

/*
 * With the daemon stopped, the creation's one-way request and the close's
 * hang-up wait for it together; it used to handle the hang-up first at
 * times, and then the creation found no timeline and completed the pooled
 * fd with -ENOENT without making a fence: the status read -ENOENT, but
 * info said -ENOTTY and merges refused it. Several rounds, as the order
 * the daemon sees them in is its loop's.
 */
FL_TEST(a_fence_made_just_before_its_timeline_is_closed_stays_a_fence)
{
	for (int round = 0; round < 20; round++) {
		struct closer c = { .tl = new_timeline("closing"), .fence = -1 };
		int first = new_fence(c.tl, 1, "first"), merged;
		struct stopped_daemon d;
		struct fl_fence_info info;
		pthread_t th;

		/* Made and known to the daemon (get_status() flushes). */
		fl_assert_int_eq(fl_fence_fd_get_status(first), 0);
		daemon_stop(&d);
		fl_assert_int_eq(pthread_create(&th, NULL, create_then_close, &c), 0);
		/* Time for the close to happen while the daemon is stopped: no check on it. */
		fl_test_sleep_ms(20);
		daemon_resume(&d);
		fl_assert_int_eq(pthread_join(th, NULL), 0);
		fl_assert_int_eq(c.create, 0);
		fl_assert_int_eq(c.close, 0);
		fl_assert_int_eq(fl_fence_fd_get_status(c.fence), -ENOENT);
		fl_assert_int_eq(fl_fence_fd_get_info(c.fence, &info, NULL, 0), 0);
		fl_assert_int_eq(info.status, -ENOENT);
		fl_assert_int_eq(info.num_points, 1);
		fl_assert_int_eq(fl_fence_fd_merge(c.fence, first, "both", 0, &merged), 0);
		fl_assert_int_eq(fl_fence_fd_get_status(merged), -ENOENT);
		close(merged);
		close(c.fence);
		close(first);
	}
}

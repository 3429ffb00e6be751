/* SPDX-License-Identifier: MIT */
/*
 * fence-walkthrough - one fence from birth to death, step by step
 *
 * Read this top to bottom next to include/fenceline/fence.h. Every step prints what it did, and
 * every step checks that fenceline behaved as the comment says: the program exits non-zero at the
 * first surprise, so it doubles as a test (meson test walkthrough).
 *
 * The steps:
 *   1. a sw_sync timeline: a counter that only this program advances
 *   2. a fence at value 1 on it: active until the counter reaches 1
 *   3. the fence as a file descriptor, polled by another thread
 *   4. signal: advance the counter, wake the poller, read the status and timestamp
 *   5. merge the fence with one from a second timeline
 *   6. a callback on the merged fence, run by the thread that signals
 *   7. destroy a timeline under a pending fence: the fence fails with -ENOENT
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

/* Stop at the first thing that does not behave as documented. */
#define expect(cond)                                                                             \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "fence-walkthrough:%d: expected %s\n", __LINE__, #cond); \
			exit(EXIT_FAILURE);                                                      \
		}                                                                                \
	} while (0)

static const char *status_str(int status)
{
	static char buf[64];

	if (status == FL_STATUS_ACTIVE)
		return "active";
	if (status == FL_STATUS_SIGNALED)
		return "signaled";
	snprintf(buf, sizeof(buf), "error %d (%s)", status, strerror(-status));
	return buf;
}

/*
 * Step 3's other thread. It knows nothing about fenceline objects: it only has an fd, exactly as
 * a process that received the fd over a Unix socket would. poll() works with no library call.
 */
struct poller {
	int fd;
	int status; /* what the fd said once it became readable */
	short revents;
};

static void *poller_main(void *arg)
{
	struct poller *p = arg;
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	p->revents = pfd.revents;
	/* Reads the status record the signaller left in the socket, without consuming it. */
	p->status = fl_fence_fd_get_status(p->fd);
	return NULL;
}

/*
 * Step 6's callback record. The core only needs the struct fl_fence_cb; embedding it in a larger
 * struct is how a callback finds its own data (container_of, by hand).
 */
struct done_cb {
	struct fl_fence_cb cb;
	int calls;
	int status;
};

static void on_done(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct done_cb *d = (struct done_cb *)((char *)cb - offsetof(struct done_cb, cb));

	/*
	 * This runs in whichever thread completed the fence (here: main, inside
	 * fl_sw_sync_timeline_inc()), with no fenceline lock held. It must not block on a fence.
	 */
	d->calls++;
	d->status = fl_fence_get_status(fence);
	printf("   callback: '%s' is %s\n", fl_fence_get_name(fence), status_str(d->status));
}

static void print_points(struct fl_fence *fence)
{
	struct fl_sync_pt_info pts[4];
	struct fl_fence_info info;
	int n;

	/* Count-then-fill also works: call with 0 entries to learn info.num_points first. */
	n = fl_fence_get_info(fence, &info, pts, 4);
	expect(n >= 0);
	printf("   '%s' is %s, %" PRIu32 " point(s):\n", info.name, status_str(info.status),
	       info.num_points);
	for (int i = 0; i < n; i++)
		printf("     %s (%s) value %" PRIu64 ": %s\n", pts[i].timeline_name,
		       pts[i].driver_name, pts[i].value, status_str(pts[i].status));
}

int main(void)
{
	struct fl_timeline *gpu, *blit;
	struct fl_fence *frame, *copy, *both, *orphan;
	struct fl_fence_info info;
	struct done_cb done = { 0 };
	struct poller poller;
	pthread_t thread;
	int fd, orphan_fd;

	/*
	 * 1. A timeline is the right to signal: whoever holds the handle advances the counter.
	 * sw_sync timelines start at 0 and move only when we call fl_sw_sync_timeline_inc().
	 */
	puts("1. create a sw_sync timeline");
	expect(fl_sw_sync_timeline_create("gpu", 0, &gpu) == 0);
	printf("   '%s' (driver %s), id %" PRIu64 "\n", fl_timeline_get_name(gpu),
	       fl_timeline_get_driver_name(gpu), fl_timeline_get_id(gpu));

	/*
	 * 2. A fence at value 1: "the work that ends when gpu reaches 1". Creating it before the
	 * work is done is the whole point of explicit sync: the fence can be handed to the next
	 * stage now, and the next stage waits on it instead of on us.
	 */
	puts("2. create a fence at value 1");
	expect(fl_sw_sync_fence_create(gpu, 1, "frame", &frame) == 0);
	expect(fl_fence_get_status(frame) == FL_STATUS_ACTIVE);
	/* A zero timeout only checks; it reports -ETIME (libsync's code) while active. */
	expect(fl_fence_wait(frame, 0) == -ETIME);
	print_points(frame);

	/*
	 * 3. Export the fence as an fd. The caller owns it (close() it), it is O_CLOEXEC, and it
	 * outlives the fence object. It becomes readable when the fence completes.
	 */
	puts("3. export an fd and poll it from another thread");
	expect(fl_fence_export_fd(frame, &fd) == 0);
	expect(fl_fence_fd_get_status(fd) == FL_STATUS_ACTIVE);
	poller = (struct poller){ .fd = fd };
	expect(pthread_create(&thread, NULL, poller_main, &poller) == 0);

	/*
	 * 4. Signal. The increment completes every point it passed, stamps it with CLOCK_MONOTONIC,
	 * and makes the fence's fds readable, all before it returns.
	 */
	puts("4. signal: advance the timeline to 1");
	expect(fl_sw_sync_timeline_inc(gpu, 1) == 0);
	expect(pthread_join(thread, NULL) == 0);
	expect(poller.revents & POLLIN);
	expect(poller.status == FL_STATUS_SIGNALED);
	printf("   the poller woke up and read: %s\n", status_str(poller.status));
	expect(fl_fence_wait(frame, -1) == 0);
	expect(fl_fence_get_info(frame, &info, NULL, 0) == 0);
	expect(info.status == FL_STATUS_SIGNALED && info.timestamp_ns > 0);
	printf("   '%s' signalled at %" PRIu64 ".%09" PRIu64 " (CLOCK_MONOTONIC)\n", info.name,
	       info.timestamp_ns / 1000000000u, info.timestamp_ns % 1000000000u);
	/* The status never changes again; closing the fd only drops our copy. */
	close(fd);

	/*
	 * 5. Merge. A compositor waits for several producers with one fence: the merged fence
	 * completes when all its points have. It keeps at most one point per timeline (the later
	 * one) and keeps points that have already signalled.
	 */
	puts("5. merge with a fence on a second timeline");
	expect(fl_sw_sync_timeline_create("blit", 0, &blit) == 0);
	expect(fl_sw_sync_fence_create(blit, 1, "copy", &copy) == 0);
	expect(fl_fence_merge(frame, copy, "frame+copy", 0, &both) == 0);
	expect(fl_fence_get_num_points(both) == 2);
	expect(fl_fence_get_status(both) == FL_STATUS_ACTIVE);
	print_points(both);

	/*
	 * 6. A callback is the non-blocking way to wait. The record is ours; it must stay valid
	 * until the callback ran or fl_fence_remove_callback() returned. The core keeps the fence
	 * alive while a callback is queued, so dropping our references now would be fine too.
	 */
	puts("6. add a callback, then signal the second timeline");
	expect(fl_fence_add_callback(both, &done.cb, on_done) == 0);
	expect(fl_sw_sync_timeline_inc(blit, 1) == 0);
	expect(done.calls == 1 && done.status == FL_STATUS_SIGNALED);
	/* On a fence that has already completed, nothing is queued and nothing is called. */
	expect(fl_fence_add_callback(both, &done.cb, on_done) == -ENOENT);
	expect(done.calls == 1);
	puts("   adding it again returns -ENOENT: the fence has already completed");

	/*
	 * 7. Kill a timeline under a pending fence. Nobody can signal it any more, so fenceline
	 * fails its pending points with -ENOENT instead of letting waiters hang forever. Waits
	 * report the error, and the fd becomes readable with the error as its status.
	 */
	puts("7. destroy a timeline under a pending fence");
	expect(fl_sw_sync_fence_create(blit, 5, "orphan", &orphan) == 0);
	expect(fl_fence_export_fd(orphan, &orphan_fd) == 0);
	fl_timeline_kill(blit); /* consumes our handle */
	expect(fl_fence_get_status(orphan) == -ENOENT);
	expect(fl_fence_wait(orphan, -1) == -ENOENT);
	expect(fl_fence_fd_get_status(orphan_fd) == -ENOENT);
	print_points(orphan);
	close(orphan_fd);

	/*
	 * Every reference we own goes back. Fences and timelines are refcounted; the unref calls
	 * return NULL so that "x = fl_fence_unref(x);" leaves no dangling pointer.
	 */
	orphan = fl_fence_unref(orphan);
	both = fl_fence_unref(both);
	copy = fl_fence_unref(copy);
	frame = fl_fence_unref(frame);
	gpu = fl_timeline_unref(gpu);
	puts("done");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Fence and timeline file descriptors: poll/select/epoll readiness, status
 * read from the fd alone, mapping fds back to objects, fds shared with
 * other threads, fd lifetime and leaks, and fd table reservation. Other
 * processes and timeline fds: fd-process-test.c.
 */
/* For pipe2(), mkostemp() and POLLRDHUP. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

/*
 * What poll() reports for a completed fence fd made by this process's core:
 * its status record (POLLIN) and the end-of-file of the pipe it is
 * (POLLHUP), which no holder can consume.
 */
#define FENCE_READY   (POLLIN | POLLHUP)
#define FENCE_READY_E (EPOLLIN | EPOLLHUP)

static bool is_cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	fl_assert(flags >= 0);
	return flags & FD_CLOEXEC;
}

static int regular_file_fd(void)
{
	char path[] = "/tmp/fd-test-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);

	fl_assert(fd >= 0);
	unlink(path);
	fl_assert_int_eq(write(fd, "not a fence", 11), 11);
	return fd;
}

FL_TEST(exported_fd_is_cloexec)
{
	struct fl_timeline *tl = fl_test_timeline_new("cloexec");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fd = fl_test_export_fd(fence);
	int own = fl_fence_get_fd(fence);
	int tl_fd = -1;

	fl_assert(is_cloexec(fd));
	fl_assert(own >= 0);
	fl_assert(is_cloexec(own));
	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	fl_assert(is_cloexec(tl_fd));

	close(tl_fd);
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_kill(tl);
}

FL_TEST(export_fd_makes_a_new_fd_each_call)
{
	struct fl_timeline *tl = fl_test_timeline_new("each");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int a = fl_test_export_fd(fence), b = fl_test_export_fd(fence);

	fl_assert_int_ne(a, b);
	fl_assert_int_eq(fl_fence_export_fd(NULL, &a), -EINVAL);
	fl_assert_int_eq(fl_fence_export_fd(fence, NULL), -EINVAL);

	close(b);
	close(a);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(poll_reports_pollin_only_once_signaled_and_stays_readable)
{
	struct fl_timeline *tl = fl_test_timeline_new("poll");
	struct fl_fence *fence = fl_test_fence_new(tl, 2, NULL);
	int fd = fl_test_export_fd(fence);

	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN | POLLPRI | POLLRDHUP, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN | POLLPRI | POLLRDHUP, 0), 0);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, 20), 0);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, 0), FENCE_READY);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, -1), FENCE_READY);

	/* Level-triggered: nothing consumes the readiness. */
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 0), 0);
	fl_test_sleep_ms(20);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, 0), FENCE_READY);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 10), 0);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, 0), FENCE_READY);

	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

static int select_readable(int fd, int timeout_ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	fd_set set;
	int ret;

	fl_assert(fd < FD_SETSIZE);
	FD_ZERO(&set);
	FD_SET(fd, &set);
	ret = select(fd + 1, &set, NULL, NULL, &tv);
	fl_assert(ret >= 0);
	fl_assert_int_eq(ret > 0, FD_ISSET(fd, &set) != 0);
	return ret;
}

FL_TEST(select_reports_readable_only_once_signaled)
{
	struct fl_timeline *tl = fl_test_timeline_new("select");
	struct fl_fence *fence = fl_test_fence_new(tl, 100, NULL);
	int fd = fl_test_export_fd(fence);

	fl_assert_int_eq(select_readable(fd, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 99), 0);
	fl_assert_int_eq(select_readable(fd, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(select_readable(fd, 0), 1);
	fl_assert_int_eq(select_readable(fd, 1000), 1);

	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

static int epoll_poll(int ep, uint32_t *ret_events, int timeout_ms)
{
	struct epoll_event ev;
	int ret;

	do
		ret = epoll_wait(ep, &ev, 1, timeout_ms);
	while (ret < 0 && errno == EINTR);
	fl_assert(ret >= 0);
	if (ret)
		*ret_events = ev.events;
	return ret;
}

FL_TEST(epoll_reports_epollin_once_signaled_level_triggered)
{
	struct fl_timeline *tl = fl_test_timeline_new("epoll");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fd = fl_test_export_fd(fence);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	uint32_t events = 0;

	fl_assert(ep >= 0);
	fl_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	fl_assert_int_eq(epoll_poll(ep, &events, 0), 0);
	fl_assert_int_eq(epoll_poll(ep, &events, 10), 0);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(epoll_poll(ep, &events, 0), 1);
	fl_assert_int_eq(events, FENCE_READY_E);
	events = 0;
	fl_assert_int_eq(epoll_poll(ep, &events, -1), 1);
	fl_assert_int_eq(events, FENCE_READY_E);

	close(ep);
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(fd_of_fence_failed_by_timeline_death_is_readable_with_error)
{
	struct fl_timeline *tl = fl_test_timeline_new("error");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fd = fl_test_export_fd(fence);

	fl_timeline_kill(tl);
	fl_assert(fl_test_poll_fd(fd, POLLIN, 0) & POLLIN);
	fl_assert_int_eq(select_readable(fd, 0), 1);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_wait(fd, -1), -ENOENT);
	fl_assert(fl_test_poll_fd(fd, POLLIN, 0) & POLLIN);

	close(fd);
	fl_fence_unref(fence);
}

FL_TEST(fd_get_status_reports_active_signaled_and_error)
{
	struct fl_timeline *tl = fl_test_timeline_new("status");
	struct fl_timeline *doomed = fl_test_timeline_new("doomed");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *failing = fl_test_fence_new(doomed, 1, NULL);
	int fd = fl_test_export_fd(fence), fail_fd = fl_test_export_fd(failing);
	int copy = dup(fd);

	fl_assert(copy >= 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_fd_get_status(copy), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_fd_get_status(fail_fd), FL_STATUS_ACTIVE);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_timeline_kill(doomed);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_status(copy), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_status(fail_fd), -ENOENT);
	/* Asking does not consume the answer. */
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_status(fail_fd), -ENOENT);

	close(copy);
	close(fail_fd);
	close(fd);
	fl_fence_unref(failing);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(fd_status_survives_the_fence_object)
{
	struct fl_timeline *tl = fl_test_timeline_new("outlive");
	struct fl_timeline *doomed = fl_test_timeline_new("doomed");
	struct fl_fence *done = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *pending = fl_test_fence_new(tl, 2, NULL);
	struct fl_fence *failing = fl_test_fence_new(doomed, 1, NULL);
	int done_fd = fl_test_export_fd(done), pending_fd = fl_test_export_fd(pending);
	int fail_fd = fl_test_export_fd(failing);

	/* Signalled and unreferenced: the fence object is gone. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	done = fl_fence_unref(done);
	fl_assert_int_eq(fl_fence_fd_get_status(done_fd), FL_STATUS_SIGNALED);
	fl_assert(fl_test_poll_fd(done_fd, POLLIN, 0) & POLLIN);
	fl_assert_int_eq(fl_fence_fd_wait(done_fd, -1), 0);

	/* Pending and unreferenced: the fd alone still learns the outcome. */
	pending = fl_fence_unref(pending);
	failing = fl_fence_unref(failing);
	fl_assert_int_eq(fl_fence_fd_get_status(pending_fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_timeline_kill(doomed);
	fl_assert_int_eq(fl_fence_fd_get_status(pending_fd), FL_STATUS_SIGNALED);
	fl_assert(fl_test_poll_fd(pending_fd, POLLIN, 0) & POLLIN);
	fl_assert_int_eq(fl_fence_fd_get_status(fail_fd), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_wait(fail_fd, 0), -ENOENT);

	close(fail_fd);
	close(pending_fd);
	close(done_fd);
	fl_timeline_unref(tl);
}

struct fd_incer {
	struct fl_timeline *tl;
	int fd;
};

static void *fd_incer_main(void *arg)
{
	struct fd_incer *inc = arg;

	/* Only a hint that the main thread is already blocked. */
	for (int i = 0; i < 200 && !(fl_test_poll_fd(inc->fd, POLLIN, 0) & POLLIN); i++) {
		if (i == 20)
			fl_assert_int_eq(fl_sw_sync_timeline_inc(inc->tl, 1), 0);
		fl_test_sleep_ms(1);
	}
	return NULL;
}

FL_TEST(fd_wait_returns_status_error_or_etime)
{
	struct fl_timeline *tl = fl_test_timeline_new("fd-wait");
	struct fl_timeline *doomed = fl_test_timeline_new("doomed");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *failing = fl_test_fence_new(doomed, 1, NULL);
	struct fd_incer inc = { .tl = tl };
	pthread_t thread;
	int fail_fd = fl_test_export_fd(failing);
	int pipefd[2];

	inc.fd = fl_test_export_fd(fence);
	setenv("FENCELINE_DUMP_ON_TIMEOUT", "0", 1);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, 0), -ETIME);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, 20), -ETIME);

	fl_assert_int_eq(pthread_create(&thread, NULL, fd_incer_main, &inc), 0);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, -1), 0);
	fl_assert_int_eq(pthread_join(thread, NULL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, 0), 0);

	fl_timeline_kill(doomed);
	fl_assert_int_eq(fl_fence_fd_wait(fail_fd, 1000), -ENOENT);

	fl_assert_int_eq(fl_fence_fd_wait(-1, 0), -EBADF);
	fl_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pipefd[0], 0), -ENOTTY);
	close(pipefd[0]);
	close(pipefd[1]);

	close(fail_fd);
	close(inc.fd);
	fl_fence_unref(failing);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(fd_get_status_rejects_fds_that_are_not_fences)
{
	int pipefd[2], file = regular_file_fd();

	fl_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(pipefd[0]), -ENOTTY);
	fl_assert_int_eq(fl_fence_fd_get_status(pipefd[1]), -ENOTTY);
	fl_assert_int_eq(fl_fence_fd_get_status(file), -ENOTTY);
	fl_assert_int_eq(fl_fence_fd_get_status(-1), -EBADF);
	close(pipefd[1]);
	fl_assert_int_eq(fl_fence_fd_get_status(pipefd[1]), -EBADF);

	close(pipefd[0]);
	close(file);
}

FL_TEST(from_fd_returns_the_same_fence_for_fd_and_dup)
{
	struct fl_timeline *tl = fl_test_timeline_new("from-fd");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *found = NULL;
	int fd = fl_test_export_fd(fence);
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	fl_assert(copy >= 0);
	fl_assert_int_eq(fl_fence_from_fd(fd, &found), 0);
	fl_assert(found == fence);
	found = fl_fence_unref(found);
	fl_assert_int_eq(fl_fence_from_fd(copy, &found), 0);
	fl_assert(found == fence);

	/* The new reference is real: it outlives ours. */
	fence = fl_fence_unref(fence);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_get_status(found), FL_STATUS_SIGNALED);
	found = fl_fence_unref(found);

	close(copy);
	close(fd);
	fl_timeline_unref(tl);
}

FL_TEST(from_fd_rejects_fds_that_are_not_fences)
{
	struct fl_timeline *tl = fl_test_timeline_new("not-fence");
	struct fl_fence *found = NULL;
	int pipefd[2], sv[2], tl_fd = -1, file = regular_file_fd();

	fl_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);

	fl_assert_int_eq(fl_fence_from_fd(pipefd[0], &found), -ENOTTY);
	fl_assert_int_eq(fl_fence_from_fd(pipefd[1], &found), -ENOTTY);
	fl_assert_int_eq(fl_fence_from_fd(file, &found), -ENOTTY);
	fl_assert_int_eq(fl_fence_from_fd(sv[0], &found), -ENOTTY);
	fl_assert_int_eq(fl_fence_from_fd(sv[1], &found), -ENOTTY);
	fl_assert_int_eq(fl_fence_from_fd(tl_fd, &found), -ENOTTY);
	fl_assert(found == NULL);

	close(tl_fd);
	close(sv[0]);
	close(sv[1]);
	close(pipefd[0]);
	close(pipefd[1]);
	close(file);
	fl_timeline_unref(tl);
}

FL_TEST(from_fd_rejects_closed_and_negative_fds)
{
	struct fl_timeline *tl = fl_test_timeline_new("closed");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *found = NULL;
	int fd = fl_test_export_fd(fence);

	close(fd);
	fl_assert_int_eq(fl_fence_from_fd(fd, &found), -EBADF);
	fl_assert_int_eq(fl_fence_from_fd(-1, &found), -EBADF);
	fl_assert_int_eq(fl_fence_from_fd(INT_MAX, &found), -EBADF);
	fl_assert(found == NULL);

	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(get_fd_is_stable_and_owned_by_the_fence)
{
	struct fl_test_fd_snapshot start;
	struct fl_timeline *tl = fl_test_timeline_new("own-fd");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *found = NULL;
	int fd, made;

	fl_test_fd_snapshot(&start);
	fd = fl_fence_get_fd(fence);
	fl_assert(fd >= 0);
	/* The fd, and possibly the core's end of it. */
	made = fl_test_fds_new_since(&start, NULL, 0);
	fl_assert(made >= 1);
	fl_assert_int_eq(fl_fence_get_fd(fence), fd);
	fl_assert_int_eq(fl_fence_get_fd(fence), fd);
	fl_test_expect_new_fds(&start, made);
	fl_assert_int_eq(fl_fence_get_fd(NULL), -EINVAL);

	fl_assert_int_eq(fl_fence_from_fd(fd, &found), 0);
	fl_assert(found == fence);
	found = fl_fence_unref(found);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, 0), FENCE_READY);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);

	/* The fence closes its own fd when it goes. */
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
	fl_test_wait_fds_back(&start);
}

enum { POLLERS = 6, EPOLLERS = 2 };

struct watcher {
	pthread_t thread;
	pthread_barrier_t *ready;
	int fd;
	bool use_epoll;
	short revents;
	uint32_t events;
};

static void *poller_main(void *arg)
{
	struct watcher *w = arg;

	pthread_barrier_wait(w->ready);
	w->revents = fl_test_poll_fd(w->fd, POLLIN, -1);
	return NULL;
}

/* A loop as an application would run it: wait, dispatch, repeat until the
 * fence's event has come. */
static void *epoll_loop_main(void *arg)
{
	struct watcher *w = arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = w->fd };

	fl_assert(ep >= 0);
	fl_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &ev), 0);
	pthread_barrier_wait(w->ready);
	while (!w->events) {
		uint32_t events = 0;

		if (epoll_poll(ep, &events, 100) == 1)
			w->events = events;
	}
	close(ep);
	return NULL;
}

FL_TEST(many_pollers_and_an_epoll_loop_on_one_fence_fd_all_wake)
{
	struct fl_timeline *tl = fl_test_timeline_new("pollers");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	struct watcher w[POLLERS + EPOLLERS];
	pthread_barrier_t ready;
	int fd = fl_test_export_fd(fence);
	int copy = dup(fd);

	fl_assert(copy >= 0);
	fl_assert_int_eq(pthread_barrier_init(&ready, NULL, POLLERS + EPOLLERS + 1), 0);
	for (int i = 0; i < POLLERS + EPOLLERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].ready = &ready;
		w[i].fd = i % 2 ? copy : fd;
		w[i].use_epoll = i >= POLLERS;
		fl_assert_int_eq(pthread_create(&w[i].thread, NULL,
						w[i].use_epoll ? epoll_loop_main : poller_main,
						&w[i]),
				 0);
	}
	pthread_barrier_wait(&ready);
	fl_test_sleep_ms(20);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	for (int i = 0; i < POLLERS + EPOLLERS; i++) {
		fl_assert_int_eq(pthread_join(w[i].thread, NULL), 0);
		if (w[i].use_epoll)
			fl_assert(w[i].events & EPOLLIN);
		else
			fl_assert(w[i].revents & POLLIN);
	}

	pthread_barrier_destroy(&ready);
	close(copy);
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

struct counting_cb {
	struct fl_fence_cb cb;
	int runs;
};

static void counting_cb_func(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	((struct counting_cb *)cb)->runs++;
}

static void *blocking_waiter(void *arg)
{
	return (void *)(intptr_t)fl_fence_wait(arg, -1);
}

FL_TEST(no_fd_is_created_until_asked)
{
	struct fl_test_fd_snapshot start;
	struct fl_timeline *tl1, *tl2;
	struct fl_fence *a, *b;
	struct fl_fence *merged = NULL, *all = NULL;
	struct counting_cb cb = { .runs = 0 };
	struct fl_fence_info info;
	pthread_t thread;
	void *ret;

	fl_test_fd_snapshot(&start);
	tl1 = fl_test_timeline_new("lazy1");
	tl2 = fl_test_timeline_new("lazy2");
	a = fl_test_fence_new(tl1, 1, NULL);
	b = fl_test_fence_new(tl2, 1, NULL);
	fl_test_expect_new_fds(&start, 0);
	fl_assert_int_eq(fl_fence_merge(a, b, NULL, 0, &merged), 0);
	fl_assert_int_eq(fl_fence_merge(a, merged, NULL, FL_MERGE_WAIT_ALL, &all), 0);
	fl_test_expect_new_fds(&start, 0);

	setenv("FENCELINE_DUMP_ON_TIMEOUT", "0", 1);
	fl_assert_int_eq(fl_fence_wait(merged, 0), -ETIME);
	fl_assert_int_eq(fl_fence_wait(a, 1), -ETIME);
	fl_assert_int_eq(fl_fence_add_callback(merged, &cb.cb, counting_cb_func), 0);
	fl_assert_int_eq(fl_fence_get_info(all, &info, NULL, 0), 0);
	fl_test_expect_new_fds(&start, 0);

	fl_assert_int_eq(pthread_create(&thread, NULL, blocking_waiter, all), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl1, 1), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl2, 1), 0);
	fl_assert_int_eq(pthread_join(thread, &ret), 0);
	fl_assert_int_eq((intptr_t)ret, 0);
	fl_assert_int_eq(cb.runs, 1);
	fl_assert_int_eq(fl_fence_wait(merged, -1), 0);
	fl_test_expect_new_fds(&start, 0);

	fl_fence_unref(all);
	fl_fence_unref(merged);
	fl_fence_unref(b);
	fl_fence_unref(a);
	fl_timeline_unref(tl2);
	fl_timeline_unref(tl1);
	fl_test_expect_new_fds(&start, 0);
}

FL_TEST_TIMEOUT(export_and_close_of_10k_fences_leaks_no_fd, 120)
{
	struct fl_test_fd_snapshot start;
	struct fl_timeline *tl;

	fl_test_fd_snapshot(&start);
	tl = fl_test_timeline_new("churn");

	for (int i = 0; i < 10000; i++) {
		struct fl_fence *fence = fl_test_fence_new(tl, (uint64_t)i + 1, NULL);
		int fd = fl_test_export_fd(fence);

		if (i % 7 == 0)
			fl_assert(fl_fence_get_fd(fence) >= 0);
		close(fd);
		fl_fence_unref(fence);
		/* Some fences signal after their fd is closed and their last
		 * reference dropped, some before. */
		if (i % 100 == 50)
			fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 100), 0);
	}
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 100), 0);
	fl_timeline_unref(tl);
	fl_test_wait_fds_back(&start);
}

static void expect_reserve_reaches(unsigned int count, rlim_t soft)
{
	int ret = fl_fd_reserve(count);
	long long want = count < soft ? (long long)count : (long long)soft;

	fl_assert_int_ge(ret, want);
}

FL_TEST(fd_reserve_reaches_the_requested_size_capped_by_rlimit)
{
	struct rlimit rl;

	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	expect_reserve_reaches(1, rl.rlim_cur);
	expect_reserve_reaches(64, rl.rlim_cur);
	expect_reserve_reaches(4096, rl.rlim_cur);
	/* Reaching the cap itself would be costly when it is huge. */
	if (rl.rlim_cur <= 65536) {
		expect_reserve_reaches((unsigned int)rl.rlim_cur + 100, rl.rlim_cur);
		expect_reserve_reaches(UINT_MAX, rl.rlim_cur);
	}
	/* Tables never shrink. */
	expect_reserve_reaches(64, rl.rlim_cur);
}

/*
 * The watcher thread of this process, by name (fl-watcher), or -1. Only
 * one fenceline thread has that name at a time.
 */
static pid_t find_watcher_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = -1;

	fl_assert(d != NULL);
	while ((e = readdir(d)) != NULL && tid < 0) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "fl-watcher", 10) == 0)
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

struct churn_arg {
	struct fl_timeline *tl;
	int iterations;
	int error; /* the first export error, 0 if none */
	int done;
};

static void *churn_fences(void *p)
{
	struct churn_arg *a = p;

	for (a->done = 0; a->done < a->iterations; a->done++) {
		struct fl_fence *f = fl_test_fence_new(a->tl, (uint64_t)a->done + 1, NULL);
		int fd, r = fl_fence_export_fd(f, &fd);

		fl_fence_unref(f);
		if (r < 0) {
			a->error = r;
			break;
		}
		close(fd);
	}
	return NULL;
}

/*
 * Keep the watcher thread (started by @tl's fd made here, which the
 * caller closes at the end) off the CPU as far as an unprivileged process
 * can: SCHED_IDLE, on the calling thread's CPU, which the caller and the
 * threads it starts are pinned to. What it still releases is a bonus.
 */
static int starve_watcher(struct fl_timeline *tl, struct fl_fence **ret_keep)
{
	struct sched_param sp = { .sched_priority = 0 };
	cpu_set_t cpu;
	pid_t watcher;
	int fd;

	/* One fd kept open keeps this watcher thread from exiting while idle. */
	*ret_keep = fl_test_fence_new(tl, UINT64_MAX, NULL);
	fd = fl_test_export_fd(*ret_keep);
	CPU_ZERO(&cpu);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &cpu);
	/*
	 * The watcher names itself once it runs. The one found may be an
	 * earlier watcher, idle and on its way out (ESRCH): look again.
	 */
	for (;;) {
		while ((watcher = find_watcher_tid()) < 0)
			fl_test_sleep_ms(1);
		if (sched_setaffinity(watcher, sizeof(cpu), &cpu) == 0 &&
		    sched_setscheduler(watcher, SCHED_IDLE, &sp) == 0)
			break;
		fl_assert_int_eq(errno, ESRCH);
		fl_test_sleep_ms(1);
	}
	fl_assert_int_eq(sched_setaffinity(0, sizeof(cpu), &cpu), 0);
	return fd;
}

static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	fl_assert(d != NULL);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/*
 * Closed fds come back at the pace they are closed, however little CPU
 * the watcher thread gets: after a thousand fence fds made and closed, at
 * most a bounded number (the core reaps every 64 new fds) await release.
 */
FL_TEST(closed_fence_fds_come_back_at_the_pace_they_are_closed)
{
	struct fl_timeline *tl = fl_test_timeline_new("pace");
	struct fl_fence *keep;
	int keep_fd = starve_watcher(tl, &keep), before = count_open_fds(), after;
	struct churn_arg a = { .tl = tl, .iterations = 1000 };

	churn_fences(&a);
	fl_assert_int_eq(a.error, 0);
	after = count_open_fds();
	if (after - before > 100)
		fl__test_fail(__FILE__, __LINE__, "%d fds await release after 1000 closed",
			      after - before);
	close(keep_fd);
	fl_fence_unref(keep);
	fl_timeline_unref(tl);
}

/*
 * Two threads making and closing fence fds at a low fd limit, with the
 * watcher starved, never see EMFILE.
 */
FL_TEST_TIMEOUT(two_threads_churning_fence_fds_at_a_low_fd_limit_never_get_emfile, 120)
{
	struct churn_arg a[2];
	struct fl_timeline *tl;
	struct fl_fence *keep;
	struct rlimit rl;
	pthread_t t[2];
	int keep_fd;

	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 256;
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	tl = fl_test_timeline_new("churn2");
	keep_fd = starve_watcher(tl, &keep);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct churn_arg){ .tl = tl, .iterations = 20000 };
		fl_assert_int_eq(pthread_create(&t[i], NULL, churn_fences, &a[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < 2; i++) {
		if (a[i].error)
			fl__test_fail(
				__FILE__, __LINE__,
				"thread %d: fl_fence_export_fd() failed with %d after %d fences", i,
				a[i].error, a[i].done);
	}
	close(keep_fd);
	fl_fence_unref(keep);
	fl_timeline_unref(tl);
}

/*
 * A fence whose every fd was closed can complete before the watcher has
 * released its pipe: the record then goes to a pipe with no reader, which
 * must not raise SIGPIPE (its default action would kill the program).
 */
FL_TEST(completing_a_fence_whose_fds_are_closed_raises_no_sigpipe)
{
	struct fl_timeline *tl = fl_test_timeline_new("sigpipe");
	struct fl_fence *keep;
	int keep_fd = starve_watcher(tl, &keep);

	/* keep is at UINT64_MAX: the fences below complete one by one. */
	for (int i = 0; i < 1000; i++) {
		struct fl_fence *f = fl_test_fence_new(tl, (uint64_t)i + 1, NULL);

		close(fl_test_export_fd(f));
		fl_fence_unref(f);
		fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	}
	close(keep_fd);
	fl_fence_unref(keep);
	fl_timeline_unref(tl);
}

/*
 * A pending fence fd closed at once is given back with no further call
 * into the library: the watcher sweeps the fences it has not taken yet.
 */
FL_TEST(a_pending_fence_fd_closed_at_once_comes_back_with_no_more_calls)
{
	struct fl_test_fd_snapshot start;
	struct fl_timeline *tl;
	struct fl_fence *f;

	fl_test_fd_snapshot(&start);
	tl = fl_test_timeline_new("fresh");
	f = fl_test_fence_new(tl, 1, NULL);
	close(fl_test_export_fd(f));
	fl_fence_unref(f);
	/* The timeline lives on: the fence stays pending, its pipe open. */
	fl_test_wait_fds_back(&start);
	fl_timeline_unref(tl);
}

/*
 * A pending fence fd held past the watcher's sweeps of new fences (which
 * then watch it as before) comes back as soon as it is closed, with no
 * further call into the library.
 */
FL_TEST(a_pending_fence_fd_closed_after_the_watcher_took_it_comes_back)
{
	struct fl_test_fd_snapshot start;
	struct fl_timeline *tl;
	struct fl_fence *f;
	int fd;

	fl_test_fd_snapshot(&start);
	tl = fl_test_timeline_new("held");
	f = fl_test_fence_new(tl, 1, NULL);
	fd = fl_test_export_fd(f);
	/* Two of its sweeps (100 ms apart) and then some. */
	fl_test_sleep_ms(500);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	close(fd);
	fl_fence_unref(f);
	fl_test_wait_fds_back(&start);
	fl_timeline_unref(tl);
}

/* Make and close @n pending fence fds on @tl: enough to make the core sweep. */
static void churn_pending(struct fl_timeline *tl, int n)
{
	for (int i = 0; i < n; i++) {
		struct fl_fence *f = fl_test_fence_new(tl, UINT64_MAX - 1, NULL);

		close(fl_test_export_fd(f));
		fl_fence_unref(f);
	}
}

/*
 * Sweeps release the pending fences whose every fd is closed, and only
 * those: a dup whose original was closed keeps its fence, through the
 * sweeps of the making thread and the watcher's.
 */
FL_TEST(a_dup_keeps_its_pending_fence_through_sweeps)
{
	struct fl_timeline *tl = fl_test_timeline_new("dup-sweep");
	struct fl_fence *f = fl_test_fence_new(tl, 1, NULL), *got = NULL;
	int fd = fl_test_export_fd(f), d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	struct pollfd p = { .events = POLLIN };

	fl_assert(d >= 0);
	close(fd);
	fl_fence_unref(f);
	churn_pending(tl, 300);
	fl_test_sleep_ms(300);
	churn_pending(tl, 300);
	fl_assert_int_eq(fl_fence_from_fd(d, &got), 0);
	fl_fence_unref(got);
	fl_assert_int_eq(fl_fence_fd_get_status(d), FL_STATUS_ACTIVE);
	p.fd = d;
	fl_assert_int_eq(poll(&p, 1, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(d), FL_STATUS_SIGNALED);
	fl_assert_int_eq(poll(&p, 1, 0), 1);
	fl_assert_int_eq(p.revents, FENCE_READY);
	close(d);
	fl_timeline_unref(tl);
}

/*
 * A program that closes fds it did not open (close_range(), dup2() over
 * them) may put a file of its own at the number of the core's end of a
 * pipe fence: here a pipe's write end, which polls as the core's end does
 * once every fd of its fence is closed (POLLERR: no reader), at once or
 * (@reader_kept) only later, after the watcher looked at the number. The
 * core's sweeps must leave that file alone.
 */
static void program_file_at_the_cores_number(bool reader_kept)
{
	struct fl_timeline *tl = fl_test_timeline_new("reused");
	struct fl_fence *f = fl_test_fence_new(tl, 1, NULL);
	int fd = fl_test_export_fd(f), mine[2], w = -1;
	struct stat user, st, theirs;

	/* The core's end: the other fd on the same pipe inode. */
	fl_assert_int_eq(fstat(fd, &user), 0);
	for (int i = 0; i < 1024 && w < 0; i++)
		if (i != fd && fstat(i, &st) == 0 && st.st_ino == user.st_ino &&
		    st.st_dev == user.st_dev)
			w = i;
	fl_assert(w >= 0);
	fl_assert_int_eq(pipe2(mine, O_CLOEXEC), 0);
	fl_assert_int_eq(fstat(mine[1], &theirs), 0);
	fl_assert_int_eq(dup3(mine[1], w, O_CLOEXEC), w);
	close(mine[1]);
	if (!reader_kept)
		close(mine[0]);
	close(fd);
	fl_fence_unref(f);
	/* Sweeps by the making thread, then by the watcher, and again. */
	churn_pending(tl, 300);
	fl_test_sleep_ms(300);
	if (reader_kept)
		close(mine[0]);
	churn_pending(tl, 300);
	fl_test_sleep_ms(300);
	churn_pending(tl, 300);
	/* Still the program's file (not another one made at that number since). */
	fl_assert_int_eq(fstat(w, &st), 0);
	fl_assert(st.st_ino == theirs.st_ino && st.st_dev == theirs.st_dev);
	close(w);
	fl_timeline_unref(tl);
}

FL_TEST(sweeps_never_close_a_file_the_program_put_at_the_cores_number)
{
	program_file_at_the_cores_number(false);
}

FL_TEST(the_watcher_never_watches_a_file_the_program_put_at_the_cores_number)
{
	program_file_at_the_cores_number(true);
}

/*
 * Wait (a liveness bound, not a timing check) until @tl has @want pending
 * points: the sinks of closed fds are released by sweeps, a moment after
 * the close.
 */
static void expect_pending_count(struct fl_timeline *tl, int want)
{
	for (int i = 0; i < 1000 && fl_timeline_get_pending_count(tl) != want; i++)
		fl_test_sleep_ms(10);
	fl_assert_int_eq(fl_timeline_get_pending_count(tl), want);
}

/*
 * As with the kernel's sw_sync, where a sync_pt goes with its last
 * reference: a pending fence whose fds were all closed and whose
 * references were all dropped is freed, and its point leaves its timeline,
 * though the timeline never reaches it. It was armed by its fd, which
 * kept it (and its point) in memory until the timeline got there.
 */
FL_TEST(abandoned_pending_fences_are_freed_once_their_fds_are_closed)
{
	struct fl_timeline *tl = fl_test_timeline_new("abandoned");

	for (int i = 0; i < 200; i++) {
		struct fl_fence *f = fl_test_fence_new(tl, (uint64_t)i + 1, NULL);

		close(fl_test_export_fd(f));
		fl_fence_unref(f);
	}
	expect_pending_count(tl, 0);
	/* A wait that timed out armed the fence too. */
	{
		struct fl_fence *f = fl_test_fence_new(tl, 1000, NULL);

		fl_assert_int_eq(fl_fence_wait(f, 1), -ETIME);
		fl_assert_int_eq(fl_timeline_get_pending_count(tl), 1);
		fl_fence_unref(f);
		fl_assert_int_eq(fl_timeline_get_pending_count(tl), 0);
	}
	fl_timeline_unref(tl);
}

static void count_call(struct fl_fence *f, struct fl_fence_cb *cb)
{
	(void)f;
	(*(int *)((struct fl_test_order_cb *)cb)->log)++;
}

/*
 * What still needs an abandoned fence keeps it: a callback added by
 * somebody else runs when it signals, and a merge that holds its point
 * completes; only the fence that nobody needs goes.
 */
FL_TEST(abandoned_fences_stay_for_their_callbacks_and_merges)
{
	struct fl_test_fd_snapshot start;
	struct fl_timeline *tl = fl_test_timeline_new("abandoned-cb");
	struct fl_timeline *other = fl_test_timeline_new("abandoned-merge");
	struct fl_fence *with_cb = fl_test_fence_new(tl, 1, NULL);
	struct fl_fence *merged_in = fl_test_fence_new(tl, 2, NULL);
	struct fl_fence *b = fl_test_fence_new(other, 1, NULL), *m;
	int calls = 0, fd;
	struct fl_test_order_cb cb = { .log = (uint64_t *)&calls };

	fl_assert_int_eq(fl_fence_merge(merged_in, b, "merge", 0, &m), 0);
	b = fl_fence_unref(b);
	fd = fl_test_export_fd(m);
	m = fl_fence_unref(m);
	fl_test_fd_snapshot(&start);
	fl_assert_int_eq(fl_fence_add_callback(with_cb, &cb.cb, count_call), 0);
	close(fl_test_export_fd(with_cb));
	close(fl_test_export_fd(merged_in));
	with_cb = fl_fence_unref(with_cb);
	merged_in = fl_fence_unref(merged_in);
	/* Both closed fds released; neither point went, as both are needed. */
	fl_test_wait_fds_back(&start);
	fl_assert_int_eq(fl_timeline_get_pending_count(tl), 2);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 2), 0);
	fl_assert_int_eq(calls, 1);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(other, 1), 0);
	fl_assert_int_eq(fl_test_poll_fd(fd, POLLIN, 10000), FENCE_READY);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	close(fd);
	fl_timeline_unref(other);
	fl_timeline_unref(tl);
}

#define SWEEP_HELD  512
#define SWEEP_CHURN 2048

/*
 * SWEEP_HELD pending fence fds held while SWEEP_CHURN fences are made,
 * signalled and closed: the load of
 * sweeps_of_completed_fences_read_o1_fds_each_beside_held_ones below.
 */
FL_TEST(held_pending_fences_beside_a_churn_of_completed_ones)
{
	struct fl_timeline *held_tl = fl_test_timeline_new("held"),
			   *tl = fl_test_timeline_new("churn");
	int *held = calloc(SWEEP_HELD, sizeof(*held));

	fl_assert(held != NULL);
	for (int i = 0; i < SWEEP_HELD; i++) {
		struct fl_fence *f = fl_test_fence_new(held_tl, 1, NULL);

		held[i] = fl_test_export_fd(f);
		fl_fence_unref(f);
	}
	for (int i = 0; i < SWEEP_CHURN; i++) {
		struct fl_fence *f = fl_test_fence_new(tl, (uint64_t)i + 1, NULL);
		int fd = fl_test_export_fd(f);

		fl_fence_unref(f);
		/* Completed with its fd open: on the list the sweeps read. */
		fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
		close(fd);
	}
	for (int i = 0; i < SWEEP_HELD; i++)
		close(held[i]);
	free(held);
	fl_timeline_unref(tl);
	fl_timeline_unref(held_tl);
}

/*
 * A sweep of the completed fences reads every open pipe fence fd (pending
 * ones too) from /proc/self/fdinfo. Due every 64 completions, it read the
 * held fds over and over: O(held) a fence, 57% of such a loop's time with
 * 8000 held. The sweeps that completions make due (the log says which)
 * must read O(1) fds a completed fence; the watcher's idle ones depend on
 * time and are not counted.
 */
FL_TEST(sweeps_of_completed_fences_read_o1_fds_each_beside_held_ones)
{
	char *log = fl_test_stderr_of_self(
		"fd-test", "held_pending_fences_beside_a_churn_of_completed_ones", "fd");
	size_t fds_read = 0;
	int sweeps = 0;

	for (char *p = log; (p = strstr(p, "sweep (due): ")); p++) {
		fds_read += strtoul(p + strlen("sweep (due): "), NULL, 10);
		sweeps++;
	}
	/* The log is on, and the held fds were there to read. */
	fl_assert(strstr(log, "fenceline[fd]") != NULL);
	if (sweeps < 1 || fds_read > 4 * SWEEP_CHURN)
		fl__test_fail(__FILE__, __LINE__,
			      "%d due sweeps read %zu fds for %d completed fences beside %d held",
			      sweeps, fds_read, SWEEP_CHURN, SWEEP_HELD);
	free(log);
}

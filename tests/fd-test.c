/* SPDX-License-Identifier: MIT */
/*
 * Fence and timeline file descriptors: poll/select/epoll readiness, status
 * read from the fd alone, mapping fds back to objects, fds shared with
 * other threads and processes, fd lifetime and leaks, timeline death on
 * the close of its last fd, and fd table reservation.
 */
/* For pipe2(), mkostemp(), POLLRDHUP and MSG_CMSG_CLOEXEC. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "runner.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static struct fl_timeline *timeline_new(const char *name)
{
	struct fl_timeline *tl = NULL;

	fl_assert_int_eq(fl_sw_sync_timeline_create(name, 0, &tl), 0);
	return tl;
}

static struct fl_fence *fence_new(struct fl_timeline *tl, uint64_t value)
{
	struct fl_fence *fence = NULL;

	fl_assert_int_eq(fl_sw_sync_fence_create(tl, value, NULL, &fence), 0);
	return fence;
}

static int export_fd(struct fl_fence *fence)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_export_fd(fence, &fd), 0);
	fl_assert(fd >= 0);
	return fd;
}

/* Returns revents, or 0 if poll() timed out. */
static short poll_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret;

	do
		ret = poll(&pfd, 1, timeout_ms);
	while (ret < 0 && errno == EINTR);
	fl_assert(ret >= 0);
	return ret ? pfd.revents : 0;
}

static bool is_cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	fl_assert(flags >= 0);
	return flags & FD_CLOEXEC;
}

/*
 * The fds open at some moment, each with its /proc link ("socket:[123]"),
 * so that a number closed and reused in between still counts as new.
 * Tests compare against a snapshot rather than a count because the core
 * closes its own ends of dropped fds asynchronously, also those of the
 * runner's warm-up just before the test: the count may still fall.
 */
enum { SNAPSHOT_MAX = 256 };

struct fd_snapshot {
	int n;
	int fds[SNAPSHOT_MAX];
	char links[SNAPSHOT_MAX][64];
};

/* Returns false if there were too many fds to record. */
static bool fd_snapshot_take(struct fd_snapshot *snap)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	bool complete = true;

	fl_assert(dir);
	snap->n = 0;
	while ((de = readdir(dir))) {
		char path[64];
		ssize_t len;
		int fd;

		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(dir))
			continue;
		if (snap->n == SNAPSHOT_MAX) {
			complete = false;
			break;
		}
		fd = atoi(de->d_name);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, snap->links[snap->n], sizeof(snap->links[0]) - 1);
		if (len < 0)
			continue; /* closed meanwhile */
		snap->links[snap->n][len] = '\0';
		snap->fds[snap->n++] = fd;
	}
	closedir(dir);
	return complete;
}

static void fd_snapshot_start(struct fd_snapshot *snap)
{
	fl_assert(fd_snapshot_take(snap));
}

/* Returns how many fds are open now that were not in @base; describes the
 * first in @what. */
static int fds_new_since(const struct fd_snapshot *base, char *what, size_t size)
{
	struct fd_snapshot now;
	int count = 0;

	if (!fd_snapshot_take(&now))
		return SNAPSHOT_MAX;
	for (int i = 0; i < now.n; i++) {
		bool known = false;

		for (int j = 0; j < base->n && !known; j++)
			known = base->fds[j] == now.fds[i] && !strcmp(base->links[j], now.links[i]);
		if (known)
			continue;
		if (count++ == 0 && what)
			snprintf(what, size, "fd %d -> %s", now.fds[i], now.links[i]);
	}
	return count;
}

static void expect_new_fds(const struct fd_snapshot *base, int want)
{
	char what[128] = "";
	int count = fds_new_since(base, what, sizeof(what));

	if (count != want)
		fl__test_fail(__FILE__, __LINE__, "%d new fds, want %d (first: %s)", count, want,
			      what);
}

/* The core may close its ends of dropped fds asynchronously: allow 3 s. */
static void settle_no_new_fds(const struct fd_snapshot *base)
{
	for (int i = 0; i < 300 && fds_new_since(base, NULL, 0) > 0; i++)
		sleep_ms(10);
	expect_new_fds(base, 0);
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
	struct fl_timeline *tl = timeline_new("cloexec");
	struct fl_fence *fence = fence_new(tl, 1);
	int fd = export_fd(fence);
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
	fl_timeline_destroy(tl);
}

FL_TEST(export_fd_makes_a_new_fd_each_call)
{
	struct fl_timeline *tl = timeline_new("each");
	struct fl_fence *fence = fence_new(tl, 1);
	int a = export_fd(fence), b = export_fd(fence);

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
	struct fl_timeline *tl = timeline_new("poll");
	struct fl_fence *fence = fence_new(tl, 2);
	int fd = export_fd(fence);

	fl_assert_int_eq(poll_fd(fd, POLLIN | POLLPRI | POLLRDHUP, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(poll_fd(fd, POLLIN | POLLPRI | POLLRDHUP, 0), 0);
	fl_assert_int_eq(poll_fd(fd, POLLIN, 20), 0);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(poll_fd(fd, POLLIN, 0), POLLIN);
	fl_assert_int_eq(poll_fd(fd, POLLIN, -1), POLLIN);

	/* Level-triggered: nothing consumes the readiness. */
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 0), 0);
	sleep_ms(20);
	fl_assert_int_eq(poll_fd(fd, POLLIN, 0), POLLIN);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 10), 0);
	fl_assert_int_eq(poll_fd(fd, POLLIN, 0), POLLIN);

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
	struct fl_timeline *tl = timeline_new("select");
	struct fl_fence *fence = fence_new(tl, 100);
	int fd = export_fd(fence);

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
	struct fl_timeline *tl = timeline_new("epoll");
	struct fl_fence *fence = fence_new(tl, 1);
	int fd = export_fd(fence);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	uint32_t events = 0;

	fl_assert(ep >= 0);
	fl_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	fl_assert_int_eq(epoll_poll(ep, &events, 0), 0);
	fl_assert_int_eq(epoll_poll(ep, &events, 10), 0);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(epoll_poll(ep, &events, 0), 1);
	fl_assert_int_eq(events, EPOLLIN);
	events = 0;
	fl_assert_int_eq(epoll_poll(ep, &events, -1), 1);
	fl_assert_int_eq(events, EPOLLIN);

	close(ep);
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(fd_of_fence_failed_by_timeline_death_is_readable_with_error)
{
	struct fl_timeline *tl = timeline_new("error");
	struct fl_fence *fence = fence_new(tl, 1);
	int fd = export_fd(fence);

	fl_timeline_destroy(tl);
	fl_assert(poll_fd(fd, POLLIN, 0) & POLLIN);
	fl_assert_int_eq(select_readable(fd, 0), 1);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_wait(fd, -1), -ENOENT);
	fl_assert(poll_fd(fd, POLLIN, 0) & POLLIN);

	close(fd);
	fl_fence_unref(fence);
}

FL_TEST(fd_get_status_reports_active_signaled_and_error)
{
	struct fl_timeline *tl = timeline_new("status");
	struct fl_timeline *doomed = timeline_new("doomed");
	struct fl_fence *fence = fence_new(tl, 1);
	struct fl_fence *failing = fence_new(doomed, 1);
	int fd = export_fd(fence), fail_fd = export_fd(failing);
	int copy = dup(fd);

	fl_assert(copy >= 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_fd_get_status(copy), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_fd_get_status(fail_fd), FL_STATUS_ACTIVE);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_timeline_destroy(doomed);
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
	struct fl_timeline *tl = timeline_new("outlive");
	struct fl_timeline *doomed = timeline_new("doomed");
	struct fl_fence *done = fence_new(tl, 1);
	struct fl_fence *pending = fence_new(tl, 2);
	struct fl_fence *failing = fence_new(doomed, 1);
	int done_fd = export_fd(done), pending_fd = export_fd(pending);
	int fail_fd = export_fd(failing);

	/* Signalled and unreferenced: the fence object is gone. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	done = fl_fence_unref(done);
	fl_assert_int_eq(fl_fence_fd_get_status(done_fd), FL_STATUS_SIGNALED);
	fl_assert(poll_fd(done_fd, POLLIN, 0) & POLLIN);
	fl_assert_int_eq(fl_fence_fd_wait(done_fd, -1), 0);

	/* Pending and unreferenced: the fd alone still learns the outcome. */
	pending = fl_fence_unref(pending);
	failing = fl_fence_unref(failing);
	fl_assert_int_eq(fl_fence_fd_get_status(pending_fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_timeline_destroy(doomed);
	fl_assert_int_eq(fl_fence_fd_get_status(pending_fd), FL_STATUS_SIGNALED);
	fl_assert(poll_fd(pending_fd, POLLIN, 0) & POLLIN);
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
	for (int i = 0; i < 200 && !(poll_fd(inc->fd, POLLIN, 0) & POLLIN); i++) {
		if (i == 20)
			fl_assert_int_eq(fl_sw_sync_timeline_inc(inc->tl, 1), 0);
		sleep_ms(1);
	}
	return NULL;
}

FL_TEST(fd_wait_returns_status_error_or_etime)
{
	struct fl_timeline *tl = timeline_new("fd-wait");
	struct fl_timeline *doomed = timeline_new("doomed");
	struct fl_fence *fence = fence_new(tl, 1);
	struct fl_fence *failing = fence_new(doomed, 1);
	struct fd_incer inc = { .tl = tl };
	pthread_t thread;
	int fail_fd = export_fd(failing);
	int pipefd[2];

	inc.fd = export_fd(fence);
	setenv("FENCELINE_DUMP_ON_TIMEOUT", "0", 1);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, 0), -ETIME);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, 20), -ETIME);

	fl_assert_int_eq(pthread_create(&thread, NULL, fd_incer_main, &inc), 0);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, -1), 0);
	fl_assert_int_eq(pthread_join(thread, NULL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(inc.fd, 0), 0);

	fl_timeline_destroy(doomed);
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
	struct fl_timeline *tl = timeline_new("from-fd");
	struct fl_fence *fence = fence_new(tl, 1);
	struct fl_fence *found = NULL;
	int fd = export_fd(fence);
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
	struct fl_timeline *tl = timeline_new("not-fence");
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
	struct fl_timeline *tl = timeline_new("closed");
	struct fl_fence *fence = fence_new(tl, 1);
	struct fl_fence *found = NULL;
	int fd = export_fd(fence);

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
	struct fd_snapshot start;
	struct fl_timeline *tl = timeline_new("own-fd");
	struct fl_fence *fence = fence_new(tl, 1);
	struct fl_fence *found = NULL;
	int fd, made;

	fd_snapshot_start(&start);
	fd = fl_fence_get_fd(fence);
	fl_assert(fd >= 0);
	/* The fd, and possibly the core's end of it. */
	made = fds_new_since(&start, NULL, 0);
	fl_assert(made >= 1);
	fl_assert_int_eq(fl_fence_get_fd(fence), fd);
	fl_assert_int_eq(fl_fence_get_fd(fence), fd);
	expect_new_fds(&start, made);
	fl_assert_int_eq(fl_fence_get_fd(NULL), -EINVAL);

	fl_assert_int_eq(fl_fence_from_fd(fd, &found), 0);
	fl_assert(found == fence);
	found = fl_fence_unref(found);
	fl_assert_int_eq(poll_fd(fd, POLLIN, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(poll_fd(fd, POLLIN, 0), POLLIN);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);

	/* The fence closes its own fd when it goes. */
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
	settle_no_new_fds(&start);
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
	w->revents = poll_fd(w->fd, POLLIN, -1);
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
	struct fl_timeline *tl = timeline_new("pollers");
	struct fl_fence *fence = fence_new(tl, 1);
	struct watcher w[POLLERS + EPOLLERS];
	pthread_barrier_t ready;
	int fd = export_fd(fence);
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
	sleep_ms(20);
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

/*
 * Child processes report through their exit status: 0 is success, any
 * other value names the step that failed. They never call the runner's
 * assertions, which belong to the test process.
 */
static int child_expect_pending(int fd)
{
	if (fl_fence_fd_get_status(fd) != FL_STATUS_ACTIVE)
		return 20;
	if (poll_fd(fd, POLLIN, 0) != 0)
		return 21;
	return 0;
}

static int child_expect_completion(int fd, int status)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret;

	do
		ret = poll(&pfd, 1, 30000);
	while (ret < 0 && errno == EINTR);
	if (ret != 1 || !(pfd.revents & POLLIN))
		return 30;
	if (fl_fence_fd_get_status(fd) != status)
		return 31;
	if (fl_fence_fd_wait(fd, 0) != (status == FL_STATUS_SIGNALED ? 0 : status))
		return 32;
	return 0;
}

static void expect_child_success(pid_t pid)
{
	int wstatus;

	fl_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
	fl_assert(WIFEXITED(wstatus));
	fl_assert_int_eq(WEXITSTATUS(wstatus), 0);
}

static int inherit_child(int fd, int ready_fd)
{
	int ret = child_expect_pending(fd);

	if (ret)
		return ret;
	if (write(ready_fd, "r", 1) != 1)
		return 22;
	return child_expect_completion(fd, FL_STATUS_SIGNALED);
}

FL_TEST(forked_child_polls_inherited_fd_and_reads_status)
{
	struct fl_timeline *tl = timeline_new("inherit");
	struct fl_fence *fence = fence_new(tl, 1);
	int fd = export_fd(fence);
	int ready[2];
	char byte;
	pid_t pid;

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		_exit(inherit_child(fd, ready[1]));
	}
	close(ready[1]);
	if (read(ready[0], &byte, 1) != 1)
		expect_child_success(pid);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	expect_child_success(pid);

	close(ready[0]);
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

static int send_fd(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	char byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;

	memset(&control, 0, sizeof(control));
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cmsg = CMSG_FIRSTHDR(&msg);
	if (!cmsg || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
	    cmsg->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
	return fd;
}

static int scm_child(int sock)
{
	int done = recv_fd(sock), failing = recv_fd(sock);
	int ret;

	if (done < 0 || failing < 0)
		return 10;
	ret = child_expect_pending(done);
	if (!ret)
		ret = child_expect_pending(failing);
	if (ret)
		return ret;
	if (write(sock, "r", 1) != 1)
		return 22;
	ret = child_expect_completion(done, FL_STATUS_SIGNALED);
	if (!ret)
		ret = child_expect_completion(failing, -ENOENT);
	return ret;
}

FL_TEST(child_polls_fd_received_over_scm_rights_and_reads_status)
{
	struct fl_timeline *tl, *doomed;
	struct fl_fence *done, *failing;
	int sv[2], done_fd, fail_fd;
	char byte;
	pid_t pid;

	/* Fork first, so the child can only get the fds by message. */
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(scm_child(sv[1]));
	}
	close(sv[1]);

	tl = timeline_new("scm");
	doomed = timeline_new("scm-doomed");
	done = fence_new(tl, 1);
	failing = fence_new(doomed, 1);
	done_fd = export_fd(done);
	fail_fd = export_fd(failing);
	fl_assert_int_eq(send_fd(sv[0], done_fd), 0);
	fl_assert_int_eq(send_fd(sv[0], fail_fd), 0);
	close(fail_fd);
	close(done_fd);

	if (read(sv[0], &byte, 1) != 1)
		expect_child_success(pid);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_timeline_destroy(doomed);
	expect_child_success(pid);

	close(sv[0]);
	fl_fence_unref(failing);
	fl_fence_unref(done);
	fl_timeline_unref(tl);
}

static int abandoning_child(int sock)
{
	struct fl_timeline *tl = NULL;
	struct fl_fence *fence = NULL;
	int fd = -1;

	if (fl_sw_sync_timeline_create("abandoned", 0, &tl) < 0 ||
	    fl_sw_sync_fence_create(tl, 1, NULL, &fence) < 0 || fl_fence_export_fd(fence, &fd) < 0)
		return 10;
	if (send_fd(sock, fd) < 0)
		return 11;
	/* Exit with the fence still pending and nothing torn down. */
	return 0;
}

FL_TEST(fd_status_is_econnreset_when_signalling_process_dies)
{
	int sv[2], fd;
	pid_t pid;

	/* The child starts the core's fd watcher thread, and TSan refuses
	 * new threads in a child forked from a threaded process. */
	if (UNDER_TSAN)
		fl_test_skip("TSan cannot run threads in a child of a threaded process");
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(abandoning_child(sv[1]));
	}
	close(sv[1]);
	fd = recv_fd(sv[0]);
	expect_child_success(pid);
	fl_assert(fd >= 0);

	fl_assert_int_eq(fl_fence_fd_get_status(fd), -ECONNRESET);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 10000), -ECONNRESET);

	close(fd);
	close(sv[0]);
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
	struct fd_snapshot start;
	struct fl_timeline *tl1, *tl2;
	struct fl_fence *a, *b;
	struct fl_fence *merged = NULL, *all = NULL;
	struct counting_cb cb = { .runs = 0 };
	struct fl_fence_info info;
	pthread_t thread;
	void *ret;

	fd_snapshot_start(&start);
	tl1 = timeline_new("lazy1");
	tl2 = timeline_new("lazy2");
	a = fence_new(tl1, 1);
	b = fence_new(tl2, 1);
	expect_new_fds(&start, 0);
	fl_assert_int_eq(fl_fence_merge(a, b, NULL, 0, &merged), 0);
	fl_assert_int_eq(fl_fence_merge(a, merged, NULL, FL_MERGE_WAIT_ALL, &all), 0);
	expect_new_fds(&start, 0);

	setenv("FENCELINE_DUMP_ON_TIMEOUT", "0", 1);
	fl_assert_int_eq(fl_fence_wait(merged, 0), -ETIME);
	fl_assert_int_eq(fl_fence_wait(a, 1), -ETIME);
	fl_assert_int_eq(fl_fence_add_callback(merged, &cb.cb, counting_cb_func), 0);
	fl_assert_int_eq(fl_fence_get_info(all, &info, NULL, 0), 0);
	expect_new_fds(&start, 0);

	fl_assert_int_eq(pthread_create(&thread, NULL, blocking_waiter, all), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl1, 1), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl2, 1), 0);
	fl_assert_int_eq(pthread_join(thread, &ret), 0);
	fl_assert_int_eq((intptr_t)ret, 0);
	fl_assert_int_eq(cb.runs, 1);
	fl_assert_int_eq(fl_fence_wait(merged, -1), 0);
	expect_new_fds(&start, 0);

	fl_fence_unref(all);
	fl_fence_unref(merged);
	fl_fence_unref(b);
	fl_fence_unref(a);
	fl_timeline_unref(tl2);
	fl_timeline_unref(tl1);
	expect_new_fds(&start, 0);
}

FL_TEST_TIMEOUT(export_and_close_of_10k_fences_leaks_no_fd, 120)
{
	struct fd_snapshot start;
	struct fl_timeline *tl;

	fd_snapshot_start(&start);
	tl = timeline_new("churn");

	for (int i = 0; i < 10000; i++) {
		struct fl_fence *fence = fence_new(tl, (uint64_t)i + 1);
		int fd = export_fd(fence);

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
	settle_no_new_fds(&start);
}

FL_TEST(closing_last_timeline_fd_kills_the_timeline)
{
	struct fl_timeline *tl = timeline_new("fd-owned");
	struct fl_fence *fence = fence_new(tl, 1);
	int fence_fd = export_fd(fence);
	int tl_fd = -1;

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	fl_assert(tl_fd >= 0);
	tl = fl_timeline_unref(tl);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_ACTIVE);

	/* From here on this thread only uses poll(): the core must notice the
	 * close by itself. */
	close(tl_fd);
	fl_assert(poll_fd(fence_fd, POLLIN, 30000) & POLLIN);

	fl_assert_int_eq(fl_fence_fd_get_status(fence_fd), -ENOENT);
	fl_assert_int_eq(fl_fence_get_status(fence), -ENOENT);

	close(fence_fd);
	fl_fence_unref(fence);
}

FL_TEST(dup_of_timeline_fd_keeps_the_timeline_alive)
{
	struct fl_timeline *tl = timeline_new("dup-owned");
	struct fl_timeline *found = NULL;
	struct fl_fence *fence = fence_new(tl, 1);
	int fence_fd = export_fd(fence);
	int tl_fd = -1, copy;

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	tl = fl_timeline_unref(tl);
	copy = dup(tl_fd);
	fl_assert(copy >= 0);
	close(tl_fd);

	/* Give the core's watcher time to (wrongly) act on the close. */
	fl_assert_int_eq(poll_fd(fence_fd, POLLIN, 200), 0);
	fl_assert_int_eq(fl_timeline_from_fd(copy, &found), 0);
	fl_assert_int_eq(fl_timeline_is_alive(found), 1);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_ACTIVE);
	found = fl_timeline_unref(found);

	close(copy);
	fl_assert(poll_fd(fence_fd, POLLIN, 30000) & POLLIN);
	fl_assert_int_eq(fl_fence_fd_get_status(fence_fd), -ENOENT);

	close(fence_fd);
	fl_fence_unref(fence);
}

FL_TEST(closing_a_timeline_fd_while_a_handle_remains_keeps_it_alive)
{
	struct fl_timeline *tl = timeline_new("both");
	struct fl_fence *fence = fence_new(tl, 1);
	int fence_fd = export_fd(fence);
	int tl_fd = -1;

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	close(tl_fd);
	/* Our handle remains, so the close must not kill the timeline. */
	fl_assert_int_eq(poll_fd(fence_fd, POLLIN, 200), 0);
	fl_assert_int_eq(fl_timeline_is_alive(tl), 1);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fence_fd), FL_STATUS_SIGNALED);

	close(fence_fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(timeline_from_fd_finds_the_timeline)
{
	struct fl_timeline *tl = timeline_new("tl-from-fd");
	struct fl_timeline *found = NULL;
	struct fl_fence *fence = fence_new(tl, 1);
	int fence_fd = export_fd(fence);
	int tl_fd = -1, copy, pipefd[2];

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	copy = dup(tl_fd);
	fl_assert(copy >= 0);
	fl_assert_int_eq(fl_timeline_from_fd(tl_fd, &found), 0);
	fl_assert(found == tl);
	found = fl_timeline_unref(found);
	fl_assert_int_eq(fl_timeline_from_fd(copy, &found), 0);
	fl_assert(found == tl);
	/* The handle is a real one: it can signal. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(found, 1), 0);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_SIGNALED);
	found = fl_timeline_unref(found);

	fl_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_timeline_from_fd(pipefd[0], &found), -ENOTTY);
	fl_assert_int_eq(fl_timeline_from_fd(fence_fd, &found), -ENOTTY);
	fl_assert_int_eq(fl_timeline_from_fd(-1, &found), -EBADF);
	close(pipefd[0]);
	fl_assert_int_eq(fl_timeline_from_fd(pipefd[0], &found), -EBADF);
	fl_assert(found == NULL);
	fl_assert_int_eq(fl_timeline_export_fd(NULL, &tl_fd), -EINVAL);
	fl_assert_int_eq(fl_timeline_export_fd(tl, NULL), -EINVAL);

	close(pipefd[1]);
	close(copy);
	close(tl_fd);
	close(fence_fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
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

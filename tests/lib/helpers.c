/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "runner.h"

uint64_t fl_test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fl_test_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct fl_timeline *fl_test_timeline_new(const char *name)
{
	struct fl_timeline *tl = NULL;

	fl_assert_int_eq(fl_sw_sync_timeline_create(name, 0, &tl), 0);
	fl_assert(tl != NULL);
	return tl;
}

struct fl_fence *fl_test_fence_new(struct fl_timeline *tl, uint64_t value, const char *name)
{
	struct fl_fence *fence = NULL;

	fl_assert_int_eq(fl_sw_sync_fence_create(tl, value, name, &fence), 0);
	fl_assert(fence != NULL);
	return fence;
}

uint64_t fl_test_timeline_value(struct fl_timeline *tl)
{
	uint64_t value = 0;

	fl_assert_int_eq(fl_sw_sync_timeline_get_value(tl, &value), 0);
	return value;
}

int fl_test_export_fd(struct fl_fence *fence)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_export_fd(fence, &fd), 0);
	fl_assert(fd >= 0);
	return fd;
}

short fl_test_poll_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret;

	do
		ret = poll(&pfd, 1, timeout_ms);
	while (ret < 0 && errno == EINTR);
	fl_assert(ret >= 0);
	return ret ? pfd.revents : 0;
}

void fl_test_record_order(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	struct fl_test_order_cb *o = (struct fl_test_order_cb *)cb;

	o->log[(*o->len)++] = o->value;
}

size_t fl_test_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

struct fl_heap_info fl_test_heap_info(struct fl_heap *heap)
{
	struct fl_heap_info info;

	fl_assert_int_eq(fl_heap_get_info(heap, &info), 0);
	return info;
}

char *fl_test_stderr_of_self(const char *prog, const char *test, const char *debug)
{
	char self[4096], *log = NULL;
	size_t len = 0, cap = 0;
	int err[2], status;
	ssize_t n;
	pid_t pid;

	/* By name: valgrind's own binary is what /proc/self/exe opens under it. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	fl_assert(n > 0 && (size_t)n < sizeof(self) - 1);
	self[n] = 0;
	fl_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
	pid = fork();
	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(err[1], STDERR_FILENO);
		setenv("FENCELINE_DEBUG", debug, 1);
		execl(self, prog, "--no-fork", test, (char *)NULL);
		_exit(127);
	}
	close(err[1]);
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			log = realloc(log, cap);
			fl_assert(log != NULL);
		}
		n = read(err[0], log + len, cap - len - 1);
		if (n > 0)
			len += (size_t)n;
	} while (n > 0 || (n < 0 && errno == EINTR));
	log[len] = 0;
	close(err[0]);
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return log;
}

char *fl_test_read_fd_text(int fd)
{
	struct stat st;
	char *text;

	fl_assert_int_eq(fstat(fd, &st), 0);
	text = calloc(1, (size_t)st.st_size + 1);
	fl_assert(text != NULL);
	fl_assert_int_eq(pread(fd, text, (size_t)st.st_size, 0), st.st_size);
	return text;
}

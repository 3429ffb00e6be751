/* SPDX-License-Identifier: MIT */
/* Fixtures of the daemon tests; see daemon-helpers.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fence.h>
#include <fenceline/transfer.h>

#include "daemon-helpers.h"
#include "helpers.h"
#include "runner.h"

#ifndef FL_FENCELINED
#error "the build passes FL_FENCELINED, the path of the fencelined to test"
#endif

#define DAEMON_START_MS	    10000
#define DAEMON_FDS_GRACE_MS 10000

void dl__wait_child_ok(const char *file, int line, pid_t pid)
{
	uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	int status;
	pid_t r;

	while ((r = waitpid(pid, &status, WNOHANG)) == 0 && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(5);
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fl__test_fail(file, line, "child %d still running after %d ms", (int)pid,
			      DL_LONG_WAIT_MS);
	}
	if (r != pid)
		fl__test_fail(file, line, "waitpid(%d): %s", (int)pid, strerror(errno));
	if (WIFSIGNALED(status))
		fl__test_fail(file, line, "child %d killed by signal %d", (int)pid,
			      WTERMSIG(status));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fl__test_fail(file, line, "child %d exited with status %d", (int)pid,
			      WEXITSTATUS(status));
}

pid_t dl_fork(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	fl_assert(pid >= 0);
	return pid;
}

void dl_runtime_path(const char *name, char *buf, size_t cap)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	int n;

	fl_assert(dir && dir[0] == '/');
	n = snprintf(buf, cap, "%s/%s", dir, name);
	fl_assert(n > 0 && (size_t)n < cap);
}

static bool socket_answers(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool ok;

	fl_assert(fd >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

int dl_stand_in_listen(char *path, size_t cap)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/fl-stand-in-XXXXXX";
	int fd, n;

	fl_assert(mkdtemp(dir) != NULL);
	n = snprintf(path, cap, "%s/sock", dir);
	fl_assert(n > 0 && (size_t)n < cap && (size_t)n < sizeof(a.sun_path));
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	fl_assert(fd >= 0);
	fl_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	fl_assert_int_eq(listen(fd, 1), 0);
	return fd;
}

void dl_stand_in_remove(int listen_fd, char *path)
{
	close(listen_fd);
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
}

pid_t dl_daemon_start(const char *path, const char *const *args)
{
	const char *argv[16] = { FL_FENCELINED, "--foreground", "--socket", path };
	uint64_t deadline;
	int argc = 4, status;
	pid_t pid;

	for (; args && *args; args++) {
		fl_assert(argc < (int)(sizeof(argv) / sizeof(argv[0])) - 1);
		argv[argc++] = *args;
	}
	argv[argc] = NULL;
	pid = dl_fork();
	if (pid == 0) {
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	deadline = fl_test_now_ns() + DAEMON_START_MS * 1000000ull;
	while (!socket_answers(path)) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			fl__test_fail(__FILE__, __LINE__, "fencelined exited (status 0x%x)",
				      status);
		if (fl_test_now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fl__test_fail(__FILE__, __LINE__, "fencelined does not answer on %s", path);
		}
		fl_test_sleep_ms(2);
	}
	return pid;
}

void dl_daemon_stop(pid_t pid)
{
	int status;

	fl_assert_int_eq(kill(pid, SIGTERM), 0);
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
}

int dl_proc_fd_count(pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		fl__test_fail(__FILE__, __LINE__, "opendir %s: %s", path, strerror(errno));
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

int dl_daemon_fd_baseline(pid_t pid)
{
	int last = dl_proc_fd_count(pid), now;

	/* Settled: the same count three times, 50 ms apart. */
	for (int same = 0, i = 0; same < 3 && i < 200; i++) {
		fl_test_sleep_ms(50);
		now = dl_proc_fd_count(pid);
		same = now == last ? same + 1 : 0;
		last = now;
	}
	return last;
}

void dl__expect_daemon_fds_back(const char *file, int line, pid_t pid, int base)
{
	uint64_t deadline = fl_test_now_ns() + DAEMON_FDS_GRACE_MS * 1000000ull;
	int n;

	while ((n = dl_proc_fd_count(pid)) > base && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(10);
	if (n > base)
		fl__test_fail(file, line, "daemon %d holds %d fds, %d before: a leak", (int)pid, n,
			      base);
}

void dl_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fl__test_fail(__FILE__, __LINE__, "write: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

void dl_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fl__test_fail(__FILE__, __LINE__, "read: %s", n ? strerror(errno) : "EOF");
		p += n;
		len -= (size_t)n;
	}
}

void dl_send_fd(int sock, int fd)
{
	fl_assert_int_eq(fl_send(sock, "f", 1, &fd, 1), 0);
}

int dl_recv_fd(int sock)
{
	unsigned int nfds = 0;
	char byte;
	int fd = -1;

	fl_assert_int_eq(fl_recv(sock, &byte, 1, NULL, &fd, 1, &nfds), 0);
	fl_assert_int_eq(nfds, 1);
	return fd;
}

void dl__expect_fence_status(const char *file, int line, int fd, int status)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r, got;

	do
		r = poll(&p, 1, DL_LONG_WAIT_MS);
	while (r < 0 && errno == EINTR);
	/* A pipe fence fd of a daemon that died has no record: end-of-file (POLLHUP) only. */
	if (r != 1 || !(p.revents & (POLLIN | POLLHUP)))
		fl__test_fail(file, line, "fence fd %d did not complete (poll %d, revents 0x%x)",
			      fd, r, p.revents);
	got = fl_fence_fd_get_status(fd);
	if (got != status)
		fl__test_fail(file, line, "fence fd %d: status %d, want %d", fd, got, status);
	got = fl_fence_fd_wait(fd, 0);
	if (got != (status == FL_STATUS_SIGNALED ? 0 : status))
		fl__test_fail(file, line, "fence fd %d: fl_fence_fd_wait %d, status %d", fd, got,
			      status);
}

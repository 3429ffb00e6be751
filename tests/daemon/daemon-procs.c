/* SPDX-License-Identifier: MIT */
/* The helpers of daemon-procs.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "daemon-procs.h"
#include "helpers.h"
#include "runner.h"

int new_timeline(const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_timeline_fd_create(name, 0, &fd), 0);
	return fd;
}

int new_fence(int tl, uint64_t value, const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_fd_create(tl, value, name, &fd), 0);
	return fd;
}

int new_merge(int a, int b, const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_fd_merge(a, b, name, 0, &fd), 0);
	return fd;
}

void socketpair_or_fail(int sv[2])
{
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

bool process_stopped(pid_t pid)
{
	char path[320], buf[512];
	struct dirent *de;
	bool all = true;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (all && (de = readdir(dir))) {
		const char *p;
		size_t n;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* that thread is gone */
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		/* "tid (comm) S ...": comm may hold anything, so from the last ')'. */
		p = strrchr(buf, ')');
		all = p && p[1] == ' ' && p[2] == 'T';
	}
	closedir(dir);
	return all;
}

/* Close every fd but @a and @b (after fork(): system calls only). */
static int close_all_but(int a, int b)
{
	unsigned int keep[2] = { (unsigned int)(a < b ? a : b), (unsigned int)(a < b ? b : a) },
		     lo = 0;

	for (int i = 0; i < 2; lo = keep[i++] + 1)
		if (keep[i] > lo && syscall(SYS_close_range, lo, keep[i] - 1, 0u) < 0)
			return -1;
	return (int)syscall(SYS_close_range, lo, ~0u, 0u);
}

int cont_guard_start(pid_t daemon, pid_t *ret_pid)
{
	int p[2], copies[2];
	pid_t pid;
	char byte;

	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(copies, O_CLOEXEC), 0);
	pid = dl_fork();
	if (pid == 0) {
		/*
		 * No library call. And none of the test's fds kept: a copy of
		 * a timeline fd here would keep the timeline alive after the
		 * test closed its own (as a forked child's copy keeps a
		 * sw_sync timeline), until this process exits, some time
		 * after daemon_resume() let it go. Every other fd goes first,
		 * then @copies' write end tells the test they are gone.
		 */
		setpgid(0, 0);
		if (close_all_but(p[0], copies[1]) < 0)
			_exit(1);
		close(copies[1]);
		while (read(p[0], &byte, 1) < 0 && errno == EINTR)
			;
		kill(daemon, SIGCONT);
		_exit(0);
	}
	/* Both sides, so the runner's group kill cannot catch it in between. */
	setpgid(pid, pid);
	close(p[0]);
	close(copies[1]);
	/* End-of-file once the guard holds none of our fds (or is gone). */
	while (read(copies[0], &byte, 1) < 0 && errno == EINTR)
		;
	close(copies[0]);
	*ret_pid = pid;
	return p[1];
}

void daemon_stop(struct stopped_daemon *d)
{
	uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;

	d->pid = fl_daemon_connect();
	fl_assert(d->pid > 0);
	d->guard_fd = cont_guard_start(d->pid, &d->guard);
	fl_assert_int_eq(kill(d->pid, SIGSTOP), 0);
	while (!(d->stopped = process_stopped(d->pid)) && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(1);
}

void daemon_resume(struct stopped_daemon *d)
{
	kill(d->pid, SIGCONT);
	close(d->guard_fd);
	dl_wait_child_ok(d->guard);
	fl_assert(d->stopped);
}

bool polls_ready(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1;
}

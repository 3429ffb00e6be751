/* SPDX-License-Identifier: MIT */
/* A per-user server's start-up (start.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "acceptor.h"
#include "start.h"
#include "util.h"

static bool answers(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool r;

	if (fd < 0)
		return false;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	r = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return r;
}

int fl__server_listen_locked(const char *path, mode_t mode, int *ret_lock)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char lock_path[sizeof(a.sun_path) + 8];
	uint64_t deadline = fl__now_ns() + FL_SERVER_START_WAIT_MS * 1000000ull;
	int lfd, lock;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	snprintf(lock_path, sizeof(lock_path), "%s.lock", path);
	lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0)
		return -errno;
	while (flock(lock, LOCK_EX | LOCK_NB) < 0) {
		struct timespec ts = { 0, 5000000L };

		if (answers(path)) {
			close(lock);
			return -EEXIST;
		}
		if (fl__now_ns() > deadline) {
			close(lock);
			return -EBUSY;
		}
		nanosleep(&ts, NULL);
	}
	/* We hold the lock: a socket file left there belongs to a dead server. */
	unlink(path);
	lfd = fl__acceptor_listen(path, mode);
	if (lfd < 0) {
		close(lock);
		return lfd;
	}
	*ret_lock = lock;
	return lfd;
}

/* A decimal number up to INT32_MAX, all of @s. */
static bool number(const char *s, unsigned long *ret)
{
	char *end;

	errno = 0;
	*ret = strtoul(s, &end, 10);
	return !errno && end != s && !*end && s[0] != '-' && *ret <= 0x7fffffffUL;
}

int fl__server_activation_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	unsigned long p, n;

	if (!pid || !fds || !number(pid, &p) || !number(fds, &n))
		return -1;
	if ((pid_t)p != getpid() || n < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK);
	return 3;
}

int fl__server_detach(void)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);
	setsid();
	if (chdir("/") < 0)
		return -errno;
	return 0;
}

void fl__server_unlisten(const char *path, const struct stat *bound, int lock)
{
	struct stat st;

	if (stat(path, &st) == 0 && st.st_ino == bound->st_ino && st.st_dev == bound->st_dev)
		unlink(path);
	close(lock);
}

int fl__server_parse_uint(const char *s, unsigned int *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > 0x7fffffffUL || s[0] == '-')
		return -1;
	*ret = (unsigned int)v;
	return 0;
}

int fl__server_stop_signals(void)
{
	sigset_t sigs;
	int sfd;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	return sfd < 0 ? -errno : sfd;
}

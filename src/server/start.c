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
#include <sys/resource.h>
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

int fl__server_run(const struct fl_server_run *run)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat bound;
	int lfd, lock = -1, r, activated;

	signal(SIGPIPE, SIG_IGN);
	activated = fl__server_activation_fd();
	/* Whatever fds a starter leaked to us would keep its fds from hanging up. */
	close_range(activated >= 0 ? 4 : 3, ~0U, 0);
	if (activated >= 0) {
		lfd = activated;
	} else {
		if (strlen(run->path) >= sizeof(path)) {
			fprintf(stderr, "%s: socket path too long\n", run->name);
			return 1;
		}
		strcpy(path, run->path);
		if (!path[0] && run->default_path(path, sizeof(path)) < 0) {
			fprintf(stderr, "%s: no usable socket path\n", run->name);
			return 1;
		}
		lfd = fl__server_listen_locked(path, run->mode, &lock);
		if (lfd == -EEXIST) {
			if (run->foreground)
				run->log("another %s serves %s", run->name, path);
			return 0;
		}
		if (lfd < 0) {
			fprintf(stderr, "%s: cannot listen on %s: %s\n", run->name, path,
				strerror(-lfd));
			return 1;
		}
		stat(path, &bound);
		if (run->foreground)
			run->log("listening on %s", path);
	}
	/* The starter waits for us: return to it now that the socket listens. */
	if (!run->foreground && (r = fl__server_detach()) < 0) {
		fprintf(stderr, "%s: %s\n", run->name, strerror(-r));
		return 1;
	}
	r = run->serve(lfd, run->arg);
	if (r < 0)
		run->log("cannot serve: %s", strerror(-r));
	close(lfd);
	/* Remove the socket only if it is still ours, then free the lock. */
	if (activated < 0)
		fl__server_unlisten(path, &bound, lock);
	return r < 0 ? 1 : 0;
}

unsigned long fl__server_raise_nofile(void)
{
	struct rlimit rl;
	FILE *f;
	unsigned long nr_open = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	f = fopen("/proc/sys/fs/nr_open", "re");
	if (f) {
		if (fscanf(f, "%lu", &nr_open) != 1)
			nr_open = 0;
		fclose(f);
	}
	if (nr_open > rl.rlim_max) {
		struct rlimit more = { nr_open, nr_open };

		/* Works with CAP_SYS_RESOURCE (root); otherwise the hard limit stands. */
		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			return (unsigned long)more.rlim_cur;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	return (unsigned long)rl.rlim_cur;
}

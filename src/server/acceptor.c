/* SPDX-License-Identifier: MIT */
/* The listening socket (acceptor.h): accept, shed when out of fds, pause. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "acceptor.h"
#include "loop.h"
#include "util.h"

struct fl_acceptor {
	const struct fl_acceptor_ops *ops;
	void *data;
	int lfd;
	int spare; /* /dev/null, kept for the moment we are out of fds; -1: gone */
	uint64_t paused_until; /* 0: listening */
	struct fl_loop_source *src, *timer; /* the listening socket; the end of a pause */
};

void fl__acceptor_turn_away(struct fl_acceptor *acc, int fd, int status)
{
	char hello[64];

	if (acc->ops->refuse)
		acc->ops->refuse(fd, status, acc->data);
	/*
	 * Closing with its first message unread would reset the connection,
	 * and the peer would see ECONNRESET instead of our answer: read it first.
	 */
	while (recv(fd, hello, sizeof(hello), MSG_DONTWAIT) > 0)
		;
	close(fd);
}

/* Out of fds: answer one waiting peer with the spare. Return: true to accept again at once. */
static bool accept_out_of_fds(struct fl_acceptor *acc)
{
	int fd = -1;

	if (acc->spare >= 0) {
		int err;

		close(acc->spare);
		fd = accept4(acc->lfd, NULL, NULL, SOCK_CLOEXEC);
		err = errno;
		if (fd >= 0)
			fl__acceptor_turn_away(acc, fd, -EMFILE);
		acc->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return true;
		if (err == EAGAIN)
			return false; /* nobody else is waiting */
	}
	if (!acc->paused_until) {
		if (acc->ops->paused)
			acc->ops->paused(acc->data);
		fl__loop_fd_update(acc->src, 0);
		acc->paused_until = fl__now_ns() + FL_ACCEPTOR_PAUSE_MS * 1000000ull;
		fl__loop_timer_arm(acc->timer, acc->paused_until, 0);
	}
	return false;
}

/* The pause is over: listen again. */
static void resume(void *data)
{
	struct fl_acceptor *acc = data;

	acc->paused_until = 0;
	fl__loop_fd_update(acc->src, EPOLLIN);
}

static void on_listen(int lfd, uint32_t events, void *data)
{
	struct fl_acceptor *acc = data;

	(void)events;
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if ((errno != EMFILE && errno != ENFILE) || !accept_out_of_fds(acc))
				return;
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			close(fd);
			continue;
		}
		acc->ops->accepted(acc, fd, cred.pid, cred.uid, acc->data);
	}
}

int fl__acceptor_listen(const char *path, mode_t mode)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(path, mode) < 0 ||
	    listen(fd, FL_ACCEPTOR_BACKLOG) < 0) {
		int r = -errno;

		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

struct fl_acceptor *fl__acceptor_create(struct fl_loop *loop, int lfd,
					const struct fl_acceptor_ops *ops, void *data)
{
	struct fl_acceptor *acc = calloc(1, sizeof(*acc));

	if (!acc)
		return NULL;
	acc->ops = ops;
	acc->data = data;
	acc->lfd = lfd;
	acc->src = fl__loop_add_fd(loop, lfd, EPOLLIN, on_listen, acc);
	acc->timer = acc->src ? fl__loop_add_timer(loop, resume, acc) : NULL;
	if (!acc->timer) {
		int err = errno;

		fl__loop_source_remove(acc->src);
		free(acc);
		errno = err;
		return NULL;
	}
	acc->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return acc;
}

void fl__acceptor_destroy(struct fl_acceptor *acc)
{
	if (!acc)
		return;
	fl__loop_source_remove(acc->src);
	fl__loop_source_remove(acc->timer);
	if (acc->spare >= 0)
		close(acc->spare);
	free(acc);
}

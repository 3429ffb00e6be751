/* SPDX-License-Identifier: MIT */
/*
 * Fences and timelines over Unix sockets: fl_send()/fl_recv() with one fd,
 * exported before sending and checked for its kind after receiving.
 */
#include <fenceline/fence.h>
#include <fenceline/timeline.h>
#include <fenceline/transfer.h>

#include "util.h"

/* Receives a message that must carry exactly one fd. */
static int recv_one_fd(int sock, int *ret_fd, void *payload, size_t cap, size_t *ret_len)
{
	int fds[FL_TRANSFER_MAX_FDS];
	unsigned int nfds;
	int r;

	r = fl_recv(sock, payload, cap, ret_len, fds, FL_TRANSFER_MAX_FDS, &nfds);
	if (r < 0)
		return r;
	if (nfds == 1) {
		*ret_fd = fds[0];
		return 0;
	}
	for (unsigned int i = 0; i < nfds; i++)
		fl__close(fds[i]);
	return -EPROTO;
}

FL_EXPORT int fl_fence_send(int sock, struct fl_fence *fence, const void *payload, size_t len)
{
	int fd, r;

	fl_return_if(sock < 0, -EBADF);
	fl_return_if(!fence || (!payload && len) || len > FL_TRANSFER_MAX_PAYLOAD, -EINVAL);
	r = fl_fence_export_fd(fence, &fd);
	if (r < 0)
		return r;
	r = fl_send(sock, payload, len, &fd, 1);
	fl__close(fd);
	return r;
}

FL_EXPORT int fl_fence_recv(int sock, int *ret_fence_fd, void *payload, size_t cap, size_t *ret_len)
{
	size_t len;
	int fd, r;

	fl_return_if(sock < 0, -EBADF);
	fl_return_if(!ret_fence_fd || (!payload && cap), -EINVAL);
	r = recv_one_fd(sock, &fd, payload, cap, &len);
	if (r < 0)
		return r;
	/* A completed fence reports its error; only these mean "not a fence". */
	r = fl_fence_fd_get_status(fd);
	if (r == -ENOTTY || r == -EBADF) {
		fl__close(fd);
		return -EPROTO;
	}
	*ret_fence_fd = fd;
	if (ret_len)
		*ret_len = len;
	return 0;
}

FL_EXPORT int fl_timeline_send(int sock, struct fl_timeline *tl, const void *payload, size_t len)
{
	int fd, r;

	fl_return_if(sock < 0, -EBADF);
	fl_return_if(!tl || (!payload && len) || len > FL_TRANSFER_MAX_PAYLOAD, -EINVAL);
	r = fl_timeline_export_fd(tl, &fd);
	if (r < 0)
		return r;
	r = fl_send(sock, payload, len, &fd, 1);
	fl__close(fd);
	return r;
}

FL_EXPORT int fl_timeline_recv(int sock, int *ret_timeline_fd, void *payload, size_t cap,
			       size_t *ret_len)
{
	size_t len;
	int fd, r;

	fl_return_if(sock < 0, -EBADF);
	fl_return_if(!ret_timeline_fd || (!payload && cap), -EINVAL);
	r = recv_one_fd(sock, &fd, payload, cap, &len);
	if (r < 0)
		return r;
	/*
	 * A timeline fd is a pipe (or, the daemon's, a socket) the core never
	 * writes to, so it reads as an active fence (0), or as -ECONNRESET
	 * once the process that owned the timeline has gone.
	 */
	r = fl_fence_fd_get_status(fd);
	if (r != 0 && r != -ECONNRESET) {
		fl__close(fd);
		return -EPROTO;
	}
	*ret_timeline_fd = fd;
	if (ret_len)
		*ret_len = len;
	return 0;
}

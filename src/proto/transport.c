/* SPDX-License-Identifier: MIT */
/*
 * One message with fds over a Unix socket (transport.h). The control
 * buffers live on the stack, sized for the kernel's SCM_MAX_FD, and only
 * the part a message needs is touched: the daemon's loop pays one syscall
 * and no allocation per message, as it did with its own sendmsg().
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport.h"

/* Linux 6.5's pidfd of the sender, with SO_PASSPIDFD: an fd not in SCM_RIGHTS. */
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04
#endif

union cmsg_buf {
	struct cmsghdr align;
	char buf[CMSG_SPACE(sizeof(int) * FL__PROTO_MAX_FDS)];
};

ssize_t fl__proto_send(int sock, const void *hdr, size_t hdr_len, const void *body, size_t body_len,
		       const int *fds, unsigned int nfds, int flags)
{
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov };
	union cmsg_buf cbuf;
	ssize_t n;

	if (nfds > FL__PROTO_MAX_FDS)
		return -EINVAL;
	if (hdr_len)
		iov[msg.msg_iovlen++] = (struct iovec){ (void *)hdr, hdr_len };
	if (body_len)
		iov[msg.msg_iovlen++] = (struct iovec){ (void *)body, body_len };
	if (nfds) {
		struct cmsghdr *c;

		/* Only what goes out: valgrind checks every byte sendmsg() reads. */
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		memset(cbuf.buf, 0, msg.msg_controllen);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Hands @c's fds to @rx while it has room, closing the rest. */
static void take_rights(struct fl__proto_rx *rx, const struct cmsghdr *c)
{
	const unsigned char *data = CMSG_DATA(c);
	size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

	for (size_t i = 0; i < n; i++) {
		int fd;

		memcpy(&fd, data + i * sizeof(int), sizeof(int));
		if (rx->nfds < rx->max_fds) {
			rx->fds[rx->nfds++] = fd;
		} else {
			close(fd);
			rx->flags |= FL__PROTO_RX_EXTRA;
		}
	}
}

int fl__proto_recv(int sock, void *hdr, size_t hdr_len, void *body, size_t body_cap, int flags,
		   struct fl__proto_rx *rx)
{
	struct iovec iov[2] = { { hdr, hdr_len }, { body, body_cap } };
	union cmsg_buf cbuf;
	struct msghdr msg = {
		.msg_iov = iov,
		.msg_iovlen = body_cap ? 2 : 1,
		.msg_control = cbuf.buf,
	};
	ssize_t n;

	if (rx->room > FL__PROTO_MAX_FDS)
		return -EINVAL;
	msg.msg_controllen = CMSG_SPACE(sizeof(int) * rx->room);
	do {
		n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	rx->len = (size_t)n;
	rx->nfds = 0;
	rx->flags = 0;
	if (msg.msg_flags & MSG_TRUNC)
		rx->flags |= FL__PROTO_RX_TRUNC;
	if (msg.msg_flags & MSG_CTRUNC)
		rx->flags |= FL__PROTO_RX_CTRUNC;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_len < CMSG_LEN(0))
			break; /* the kernel writes none; nothing past it can be read */
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			take_rights(rx, c);
			continue;
		}
		rx->flags |= FL__PROTO_RX_FOREIGN;
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_PIDFD &&
		    c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int fd;

			memcpy(&fd, CMSG_DATA(c), sizeof(int));
			close(fd);
		}
	}
	return 0;
}

/* A receive that failed on the connection: SO_RCVTIMEO, or the daemon gone. */
static int reply_errno(int r)
{
	if (r == -EAGAIN || r == -EWOULDBLOCK)
		return -ETIMEDOUT;
	return r == -ECONNRESET || r == -EPIPE ? -ECONNRESET : r;
}

int fl__proto_recv_reply(int sock, void *buf, size_t cap, int *fds, unsigned int max_fds,
			 unsigned int room, unsigned int *ret_nfds, bool *ret_short)
{
	struct fl__proto_rx rx = { .fds = fds, .max_fds = max_fds, .room = room };
	unsigned int cut;
	int r;

	*ret_nfds = 0;
	r = fl__proto_recv(sock, buf, cap, NULL, 0, 0, &rx);
	if (r < 0)
		return reply_errno(r);
	cut = rx.flags & (FL__PROTO_RX_TRUNC | FL__PROTO_RX_CTRUNC);
	if (ret_short)
		*ret_short = false;
	/* Our fd table is full: the packet is whole, so the connection is fine. */
	if (rx.len > 0 && !(rx.flags & FL__PROTO_RX_EXTRA) && cut == FL__PROTO_RX_CTRUNC) {
		if (ret_short) {
			*ret_short = true;
			cut = 0;
		} else {
			r = -EMFILE;
		}
	}
	if (!r && (rx.len == 0 || (rx.flags & FL__PROTO_RX_EXTRA) || cut))
		r = rx.len == 0 ? -ECONNRESET : -EPROTO;
	if (r < 0) {
		for (unsigned int i = 0; i < rx.nfds; i++)
			close(fds[i]);
		return r;
	}
	*ret_nfds = rx.nfds;
	return (int)rx.len;
}

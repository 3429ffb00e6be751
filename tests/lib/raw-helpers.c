/* SPDX-License-Identifier: MIT */
/* Raw connections to fencelined (raw-helpers.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "daemon-helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"

/* A connection to the daemon at @path (NULL: the one the library uses). */
int raw_connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	fl_assert(fd >= 0);
	if (path)
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	else
		dl_runtime_path("fenceline.sock", a.sun_path, sizeof(a.sun_path));
	fl_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* sendmsg() of one packet with @flags besides MSG_NOSIGNAL: its result. */
static ssize_t send_packet(int sock, const void *buf, size_t len, const int *fds, unsigned int nfds,
			   int flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 16)];
	} cbuf;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	fl_assert(nfds <= 16);
	if (nfds) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
}

void raw_send(int sock, const void *buf, size_t len, const int *fds, unsigned int nfds)
{
	fl_assert_int_eq(send_packet(sock, buf, len, fds, nfds, 0), (ssize_t)len);
}

bool raw_try_send(int sock, const void *buf, size_t len, const int *fds, unsigned int nfds)
{
	if (send_packet(sock, buf, len, fds, nfds, MSG_DONTWAIT) == (ssize_t)len)
		return true;
	fl_assert_int_eq(errno, EAGAIN);
	return false;
}

/*
 * Receives one reply into @buf (FL_PROTO_MAX_REPLY bytes) and checks its
 * header: returns its length with its status in *@status, or 0 on EOF.
 */
ssize_t raw_recv_reply(int sock, uint32_t op, uint32_t seq, unsigned char *buf, int32_t *status)
{
	struct fl_msg_hdr h;
	struct fl_msg_reply r;
	ssize_t n;

	do
		n = recv(sock, buf, FL_PROTO_MAX_REPLY, 0);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 0;
	fl_assert(n >= (ssize_t)(sizeof(h) + sizeof(r)));
	memcpy(&h, buf, sizeof(h));
	memcpy(&r, buf + sizeof(h), sizeof(r));
	fl_assert_int_eq(h.op, op | FL_OP_REPLY);
	fl_assert_int_eq(h.seq, seq);
	fl_assert_int_eq(h.len, (size_t)n - sizeof(h));
	*status = r.status;
	return n;
}

/* Receives one reply; returns its status, or 1 on EOF (disconnected). */
int raw_reply(int sock, uint32_t op, uint32_t seq)
{
	unsigned char buf[FL_PROTO_MAX_REPLY];
	int32_t status;

	return raw_recv_reply(sock, op, seq, buf, &status) ? status : 1;
}

/* SPDX-License-Identifier: MIT */
/*
 * fl_send() and fl_recv(): one message (header, payload, SCM_RIGHTS fds)
 * over a Unix socket of any type (see <fenceline/transfer.h>).
 *
 * Why the stream reader never loses track of fds: a Unix stream socket
 * hands out the fds of a sendmsg() with the first byte that call sent, and
 * a read never continues past a chunk that carried fds. Since the reader
 * asks for exactly the header, then exactly the payload, every fd it sees
 * belongs to the message it is reading.
 */
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fenceline/transfer.h>

#include "util.h"

#define MAGIC	0x464c5846u /* "FXLF" */
#define VERSION 1

struct header {
	uint32_t magic;
	uint16_t version;
	uint16_t nfds;
	uint32_t payload_len;
	uint32_t reserved;
};

_Static_assert(sizeof(struct header) == 16, "the wire header is 16 bytes");

/* Room for every fd a valid message carries; more arrive as MSG_CTRUNC. */
union cmsg_buf {
	struct cmsghdr align;
	char buf[CMSG_SPACE(sizeof(int) * FL_TRANSFER_MAX_FDS)];
};

/* The fds of the message being received, closed unless it succeeds. */
struct rx {
	int fds[FL_TRANSFER_MAX_FDS];
	unsigned int nfds;
	bool truncated; /* MSG_CTRUNC, or more fds than fit in fds[] */
};

static int socket_type(int sock)
{
	int type;
	socklen_t len = sizeof(type);

	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		return -errno;
	if (type != SOCK_STREAM && type != SOCK_SEQPACKET && type != SOCK_DGRAM)
		return -EOPNOTSUPP;
	return type;
}

/* Waits until @sock is ready for @events; errors show in the next call. */
static int wait_ready(int sock, short events)
{
	struct pollfd p = { .fd = sock, .events = events };

	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static void iov_advance(struct msghdr *msg, size_t n)
{
	while (n > 0 && msg->msg_iovlen > 0) {
		struct iovec *v = msg->msg_iov;

		if (n < v->iov_len) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		msg->msg_iov++;
		msg->msg_iovlen--;
	}
}

static int send_stream(int sock, struct msghdr *msg, size_t total)
{
	size_t sent = 0;

	while (sent < total) {
		ssize_t n = sendmsg(sock, msg, MSG_NOSIGNAL);

		if (n < 0) {
			int r;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			/* Half a message would leave the stream out of step. */
			if (sent == 0)
				return -EAGAIN;
			r = wait_ready(sock, POLLOUT);
			if (r < 0)
				return r;
			continue;
		}
		/* The fds went with the first byte. */
		msg->msg_control = NULL;
		msg->msg_controllen = 0;
		sent += (size_t)n;
		iov_advance(msg, (size_t)n);
	}
	return 0;
}

static int send_packet(int sock, struct msghdr *msg)
{
	while (sendmsg(sock, msg, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

FL_EXPORT int fl_send(int sock, const void *payload, size_t len, const int *fds, unsigned int nfds)
{
	struct header hdr = {
		.magic = MAGIC,
		.version = VERSION,
		.nfds = (uint16_t)nfds,
		.payload_len = (uint32_t)len,
	};
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	union cmsg_buf cbuf;
	int type;

	fl_return_if(sock < 0, -EBADF);
	fl_return_if(!payload && len, -EINVAL);
	fl_return_if(!fds && nfds, -EINVAL);
	fl_return_if(nfds > FL_TRANSFER_MAX_FDS || len > FL_TRANSFER_MAX_PAYLOAD, -EINVAL);
	for (unsigned int i = 0; i < nfds; i++)
		fl_return_if(fds[i] < 0, -EBADF);
	type = socket_type(sock);
	if (type < 0)
		return type;

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
	if (type == SOCK_STREAM)
		return send_stream(sock, &msg, sizeof(hdr) + len);
	return send_packet(sock, &msg);
}

static void rx_take_fds(struct rx *rx, struct msghdr *msg)
{
	struct cmsghdr *c;

	if (msg->msg_flags & MSG_CTRUNC)
		rx->truncated = true;
	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		const unsigned char *data = CMSG_DATA(c);
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, data + i * sizeof(int), sizeof(int));
			if (rx->nfds < FL_TRANSFER_MAX_FDS) {
				rx->fds[rx->nfds++] = fd;
			} else {
				fl__close(fd);
				rx->truncated = true;
			}
		}
	}
}

static void rx_close(struct rx *rx)
{
	for (unsigned int i = 0; i < rx->nfds; i++)
		fl__close(rx->fds[i]);
	rx->nfds = 0;
}

static bool header_valid(const struct header *hdr)
{
	return hdr->magic == MAGIC && hdr->version == VERSION && hdr->reserved == 0 &&
	       hdr->nfds <= FL_TRANSFER_MAX_FDS && hdr->payload_len <= FL_TRANSFER_MAX_PAYLOAD;
}

/*
 * Reads exactly @len bytes of a stream message into @buf (NULL: drop them),
 * collecting fds into @rx; *@got counts the message's bytes read so far.
 */
static int read_stream(int sock, void *buf, size_t len, struct rx *rx, size_t *got)
{
	char scratch[4096];
	size_t done = 0;

	while (done < len) {
		struct iovec iov = {
			.iov_base = buf ? (char *)buf + done : scratch,
			.iov_len = buf ? len - done : FL_MIN(len - done, sizeof(scratch)),
		};
		union cmsg_buf cbuf;
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cbuf.buf,
			.msg_controllen = sizeof(cbuf.buf),
		};
		ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

		if (n < 0) {
			int r;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			if (*got == 0)
				return -EAGAIN;
			r = wait_ready(sock, POLLIN);
			if (r < 0)
				return r;
			continue;
		}
		rx_take_fds(rx, &msg);
		if (n == 0)
			return *got == 0 ? -ENOTCONN : -ECONNRESET;
		done += (size_t)n;
		*got += (size_t)n;
	}
	return 0;
}

static int recv_stream(int sock, struct rx *rx, void *payload, size_t cap, unsigned int max_fds,
		       size_t *ret_len)
{
	struct header hdr;
	size_t got = 0;
	bool too_big;
	int r;

	r = read_stream(sock, &hdr, sizeof(hdr), rx, &got);
	if (r < 0)
		return r;
	if (!header_valid(&hdr))
		return -EPROTO;
	/* Read an oversized message to its end so the next call is in step. */
	too_big = hdr.payload_len > cap;
	r = read_stream(sock, too_big ? NULL : payload, hdr.payload_len, rx, &got);
	if (r < 0)
		return r;
	if (rx->truncated)
		return -EMSGSIZE;
	if (rx->nfds != hdr.nfds)
		return -EPROTO;
	if (too_big || rx->nfds > max_fds)
		return -EMSGSIZE;
	*ret_len = hdr.payload_len;
	return 0;
}

static int recv_packet(int sock, int type, struct rx *rx, void *payload, size_t cap,
		       unsigned int max_fds, size_t *ret_len)
{
	struct header hdr;
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = payload, .iov_len = FL_MIN(cap, (size_t)FL_TRANSFER_MAX_PAYLOAD) },
	};
	union cmsg_buf cbuf;
	struct msghdr msg = {
		.msg_iov = iov,
		.msg_iovlen = cap ? 2 : 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	ssize_t n;

	/* MSG_TRUNC: the return value is the whole message's length. */
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_TRUNC)) < 0)
		if (errno != EINTR)
			return -errno;
	rx_take_fds(rx, &msg);
	if (n == 0 && type == SOCK_SEQPACKET && rx->nfds == 0)
		return -ENOTCONN;
	if ((size_t)n < sizeof(hdr) || !header_valid(&hdr))
		return -EPROTO;
	if (rx->truncated)
		return -EMSGSIZE;
	if (rx->nfds != hdr.nfds || (size_t)n - sizeof(hdr) != hdr.payload_len)
		return -EPROTO;
	if (hdr.payload_len > cap || rx->nfds > max_fds)
		return -EMSGSIZE;
	*ret_len = hdr.payload_len;
	return 0;
}

FL_EXPORT int fl_recv(int sock, void *payload, size_t cap, size_t *ret_len, int *fds,
		      unsigned int max_fds, unsigned int *ret_nfds)
{
	struct rx rx = { .nfds = 0 };
	size_t len = 0;
	int type, r;

	fl_return_if(sock < 0, -EBADF);
	fl_return_if(!payload && cap, -EINVAL);
	fl_return_if((!fds || !ret_nfds) && max_fds, -EINVAL);
	type = socket_type(sock);
	if (type < 0)
		return type;

	if (type == SOCK_STREAM)
		r = recv_stream(sock, &rx, payload, cap, max_fds, &len);
	else
		r = recv_packet(sock, type, &rx, payload, cap, max_fds, &len);
	if (r < 0) {
		rx_close(&rx);
		return r;
	}
	if (rx.nfds)
		memcpy(fds, rx.fds, sizeof(int) * rx.nfds);
	if (ret_nfds)
		*ret_nfds = rx.nfds;
	if (ret_len)
		*ret_len = len;
	return 0;
}

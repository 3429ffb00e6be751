/* SPDX-License-Identifier: MIT */
/*
 * fl_send() and fl_recv(): one message (header, payload, SCM_RIGHTS fds)
 * over a Unix socket of any type (see <fenceline/transfer.h>). The
 * syscalls are src/proto/transport.c's; this file frames the message and
 * keeps a stream in step.
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
#include <unistd.h>

#include <fenceline/transfer.h>

#include "transport.h"
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

/* The message's bytes from @off on: the header's rest, then the payload. */
static ssize_t send_from(int sock, const struct header *hdr, const void *payload, size_t len,
			 size_t off, const int *fds, unsigned int nfds)
{
	if (off < sizeof(*hdr))
		return fl__proto_send(sock, (const char *)hdr + off, sizeof(*hdr) - off, payload,
				      len, fds, nfds, 0);
	return fl__proto_send(sock, NULL, 0, (const char *)payload + (off - sizeof(*hdr)),
			      len - (off - sizeof(*hdr)), fds, nfds, 0);
}

static int send_stream(int sock, const struct header *hdr, const void *payload, size_t len,
		       const int *fds, unsigned int nfds)
{
	size_t sent = 0, total = sizeof(*hdr) + len;

	while (sent < total) {
		/* The fds go with the first byte. */
		ssize_t n = send_from(sock, hdr, payload, len, sent, sent ? NULL : fds,
				      sent ? 0 : nfds);

		if (n < 0) {
			int r;

			if (n != -EAGAIN)
				return (int)n;
			/* Half a message would leave the stream out of step. */
			if (sent == 0)
				return -EAGAIN;
			r = wait_ready(sock, POLLOUT);
			if (r < 0)
				return r;
			continue;
		}
		sent += (size_t)n;
	}
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
	ssize_t n;
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

	if (type == SOCK_STREAM)
		return send_stream(sock, &hdr, payload, len, fds, nfds);
	n = fl__proto_send(sock, &hdr, sizeof(hdr), payload, len, fds, nfds, 0);
	return n < 0 ? (int)n : 0;
}

/* One receive into @rx: the fds past its room were closed, and say so. */
static int rx_recv(int sock, struct rx *rx, void *hdr, size_t hdr_len, void *body, size_t body_cap,
		   int flags, size_t *ret_n)
{
	struct fl__proto_rx t = {
		.fds = rx->fds + rx->nfds,
		.max_fds = FL_TRANSFER_MAX_FDS - rx->nfds,
		/* Every fd a valid message carries; more arrive as MSG_CTRUNC. */
		.room = FL_TRANSFER_MAX_FDS,
	};
	int r = fl__proto_recv(sock, hdr, hdr_len, body, body_cap, flags, &t);

	if (r < 0)
		return r;
	rx->nfds += t.nfds;
	if (t.flags & (FL__PROTO_RX_CTRUNC | FL__PROTO_RX_EXTRA))
		rx->truncated = true;
	*ret_n = t.len;
	return 0;
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
		size_t n;
		int r = rx_recv(sock, rx, buf ? (char *)buf + done : scratch,
				buf ? len - done : FL_MIN(len - done, sizeof(scratch)), NULL, 0, 0,
				&n);

		if (r < 0) {
			if (r != -EAGAIN)
				return r;
			if (*got == 0)
				return -EAGAIN;
			r = wait_ready(sock, POLLIN);
			if (r < 0)
				return r;
			continue;
		}
		if (n == 0)
			return *got == 0 ? -ENOTCONN : -ECONNRESET;
		done += n;
		*got += n;
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
	size_t n;
	int r;

	/* MSG_TRUNC: the length is the whole message's. */
	r = rx_recv(sock, rx, &hdr, sizeof(hdr), payload,
		    FL_MIN(cap, (size_t)FL_TRANSFER_MAX_PAYLOAD), MSG_TRUNC, &n);
	if (r < 0)
		return r;
	if (n == 0 && type == SOCK_SEQPACKET && rx->nfds == 0)
		return -ENOTCONN;
	if (n < sizeof(hdr) || !header_valid(&hdr))
		return -EPROTO;
	if (rx->truncated)
		return -EMSGSIZE;
	if (rx->nfds != hdr.nfds || n - sizeof(hdr) != hdr.payload_len)
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

/* SPDX-License-Identifier: MIT */
/*
 * The one place that moves fds over a Unix socket: one sendmsg() of a
 * header and a body with up to FL__PROTO_MAX_FDS fds as SCM_RIGHTS, one
 * recvmsg() that hands every received fd to the caller or closes it, and
 * the daemon protocol's reply receive. Every SCM_RIGHTS in src/ and tools/
 * goes through here (tests/tree/transport-sites-test.py checks), so that there
 * is one overflow and leak policy, not one per caller.
 *
 * libc only, like util: fl_send()/fl_recv() (src/util/transfer.c), the
 * client library and the daemon all use it. Private to src/.
 */
#ifndef FL_PROTO_TRANSPORT_H
#define FL_PROTO_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The kernel's SCM_MAX_FD: the most fds one sendmsg() may carry. */
#define FL__PROTO_MAX_FDS 253u

/* What came besides the bytes (struct fl__proto_rx's flags). */
enum fl__proto_rx_flags {
	/* MSG_TRUNC: the packet was longer than the buffers (the rest is lost). */
	FL__PROTO_RX_TRUNC = 1u << 0,
	/*
	 * MSG_CTRUNC: the kernel dropped fds, because more came than @room or
	 * because our fd table is full. It closed them itself.
	 */
	FL__PROTO_RX_CTRUNC = 1u << 1,
	/* More fds arrived than the caller's @max_fds; those were closed. */
	FL__PROTO_RX_EXTRA = 1u << 2,
	/*
	 * A control message other than SOL_SOCKET/SCM_RIGHTS (credentials,
	 * SCM_PIDFD on a socket with SO_PASSPIDFD: its pidfd was closed).
	 */
	FL__PROTO_RX_FOREIGN = 1u << 3,
};

/* One receive's fd side: the caller sets the first three fields. */
struct fl__proto_rx {
	int *fds; /* room for @max_fds fds; may be NULL when @max_fds is 0 */
	unsigned int max_fds; /* the fds the caller takes */
	/*
	 * The fds the kernel may install (the control buffer's size), at most
	 * FL__PROTO_MAX_FDS; the kernel drops the rest (FL__PROTO_RX_CTRUNC).
	 * A @room above @max_fds tells "too many fds" (EXTRA, closed here)
	 * apart from "our fd table is full" (CTRUNC). A caller whose peer's
	 * fds must not be closed with a plain close() (the daemon: a FUSE
	 * file's close can block, see src/daemon/received.c) passes an even
	 * @room equal to @max_fds: the kernel then installs none past it.
	 */
	unsigned int room;
	/* Set by fl__proto_recv() on success. */
	size_t len; /* bytes received; with MSG_TRUNC asked, the packet's whole length */
	unsigned int nfds; /* fds stored in @fds: the caller's now */
	unsigned int flags; /* enum fl__proto_rx_flags */
};

/**
 * fl__proto_send() - send a header and a body with fds in one sendmsg()
 * @sock: a connected Unix socket (borrowed)
 * @hdr: @hdr_len bytes sent first; may be NULL when @hdr_len is 0
 * @hdr_len: length of @hdr
 * @body: @body_len bytes sent after @hdr; may be NULL when @body_len is 0
 * @body_len: length of @body
 * @fds: @nfds fds attached as one SCM_RIGHTS message (borrowed: the kernel
 *	passes copies; the caller keeps and closes its own)
 * @nfds: at most FL__PROTO_MAX_FDS
 * @flags: sendmsg() flags, e.g. MSG_DONTWAIT; MSG_NOSIGNAL is always added
 *
 * One sendmsg(), retried on EINTR. On a packet socket the message goes
 * whole or not at all; on a stream it may go in part, and the fds go with
 * its first byte: a caller that loops sends the rest with no fds.
 * Return: the bytes sent (on a stream possibly fewer than
 * @hdr_len + @body_len); -EINVAL if @nfds is over FL__PROTO_MAX_FDS; or
 * sendmsg()'s error as a negative errno: -EAGAIN (non-blocking, or
 * SO_SNDTIMEO ran out), -EPIPE, -ECONNRESET, -EMSGSIZE, -EBADF...
 * Context: any thread; blocks unless @flags or the socket say otherwise.
 */
ssize_t fl__proto_send(int sock, const void *hdr, size_t hdr_len, const void *body, size_t body_len,
		       const int *fds, unsigned int nfds, int flags);

/**
 * fl__proto_recv() - receive one message (or a stream's next bytes) and its fds
 * @sock: a connected Unix socket (borrowed)
 * @hdr: buffer for the first @hdr_len bytes
 * @hdr_len: capacity of @hdr
 * @body: buffer for the next @body_cap bytes; may be NULL when @body_cap is 0
 * @body_cap: capacity of @body
 * @flags: recvmsg() flags (MSG_DONTWAIT, MSG_TRUNC); MSG_CMSG_CLOEXEC is
 *	always added
 * @rx: the fd side: @rx->fds, @rx->max_fds and @rx->room in, the rest out
 *
 * One recvmsg(), retried on EINTR. Only SOL_SOCKET/SCM_RIGHTS control
 * messages give fds: the first @rx->max_fds go to @rx->fds in the order
 * they came, those past it are closed (FL__PROTO_RX_EXTRA), and a control
 * message of any other kind sets FL__PROTO_RX_FOREIGN (an fd it carries is
 * closed). MSG_TRUNC and MSG_CTRUNC are reported, not judged: what they
 * mean is the caller's protocol's (see fl__proto_recv_reply() for the
 * daemon's replies). End of file is success with @rx->len 0.
 * Ownership: on success the caller owns the @rx->nfds fds in @rx->fds
 * (``O_CLOEXEC``), whatever the flags say; no other fd received stays open.
 * On failure nothing was received.
 * Return: 0; -EINVAL if @rx->room is over FL__PROTO_MAX_FDS; or
 * recvmsg()'s error as a negative errno: -EAGAIN (non-blocking, or
 * SO_RCVTIMEO ran out), -ECONNRESET, -EBADF...
 * Context: any thread; blocks unless @flags or the socket say otherwise.
 */
int fl__proto_recv(int sock, void *hdr, size_t hdr_len, void *body, size_t body_cap, int flags,
		   struct fl__proto_rx *rx);

/**
 * fl__proto_recv_reply() - receive one reply packet from the daemon
 * @sock: the client's connection (SOCK_SEQPACKET; borrowed)
 * @buf: buffer of @cap bytes for the whole packet, header included
 * @cap: capacity of @buf
 * @fds: array of @max_fds entries for the reply's fds; may be NULL when
 *	@max_fds is 0
 * @max_fds: the fds the caller takes
 * @room: the fds the kernel may install, as in struct fl__proto_rx
 * @ret_nfds: on success, the fds stored in @fds
 * @ret_short: NULL, or where to say that the kernel dropped fds that did
 *	not fit in our fd table (see below)
 *
 * Reads one whole packet, so the connection stays in step on every error
 * but a connection error. Fds the kernel could not install because our fd
 * table is full (MSG_CTRUNC alone) make -EMFILE, unless @ret_short is
 * given: then *@ret_short is true and the reply is returned with the fds
 * that did arrive.
 * Ownership: on success the caller owns the *@ret_nfds fds in @fds; on
 * failure every fd that came with the reply has been closed.
 * Return: the packet's length (> 0); -ECONNRESET (end of file, the daemon
 * reset the connection or is gone); -ETIMEDOUT (SO_RCVTIMEO ran out);
 * -EMFILE (fds dropped for our fd table, the reply read whole); -EPROTO
 * (more fds than @max_fds, a packet over @cap, or control data truncated
 * with the packet); other recvmsg() errors. Control messages other than
 * SCM_RIGHTS are ignored (their fds closed).
 * Context: any thread; blocks (up to the socket's SO_RCVTIMEO).
 */
int fl__proto_recv_reply(int sock, void *buf, size_t cap, int *fds, unsigned int max_fds,
			 unsigned int room, unsigned int *ret_nfds, bool *ret_short);

#endif /* FL_PROTO_TRANSPORT_H */

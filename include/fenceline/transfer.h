/* SPDX-License-Identifier: MIT */
/**
 * DOC: passing fences and timelines over Unix sockets
 *
 * Helpers that send and receive one message over any connected ``AF_UNIX``
 * socket (``SOCK_STREAM``, ``SOCK_SEQPACKET`` or ``SOCK_DGRAM``), so that
 * applications never write ``SCM_RIGHTS`` code themselves. A message is a
 * 16-byte header (a magic number, version 1, the fd count, the payload
 * length and a reserved zero word, in host byte order) followed by the
 * payload, with up to %FL_TRANSFER_MAX_FDS fds attached to its first byte.
 * Both ends must use these helpers.
 *
 * The helpers retry ``EINTR``, never raise ``SIGPIPE`` and, on a stream,
 * loop over partial sends and reads. On a non-blocking socket they return
 * -EAGAIN only when no byte of the message has moved yet; once part of a
 * stream message has been sent or read they poll until the whole message
 * has, so a stream never holds half a message. Received fds are
 * ``O_CLOEXEC``, and every fd received for a message that fails is closed.
 *
 * One thread at a time may send on a stream socket, and one may receive:
 * two concurrent senders would interleave their bytes.
 *
 * Errors beyond the vocabulary of <fenceline/fenceline.h>: -EPROTO (the
 * peer sent something that is not a valid message), -EMSGSIZE (too big for
 * the socket or for the receiver's buffers), -EAGAIN, -ENOTCONN (orderly
 * end of the connection), -ECONNRESET, -EPIPE and -ECONNREFUSED (the peer
 * went away), -ENOTSOCK, and other errors of sendmsg() and recvmsg() as
 * they are.
 */
#ifndef FENCELINE_TRANSFER_H
#define FENCELINE_TRANSFER_H

#include <stddef.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

struct fl_fence;
struct fl_timeline;

/* The most fds one message carries (a quarter of the kernel's SCM_MAX_FD). */
#define FL_TRANSFER_MAX_FDS 28u
/* The largest payload of one message, in bytes. */
#define FL_TRANSFER_MAX_PAYLOAD (64u * 1024u)

/**
 * fl_send() - send a payload and fds as one message
 * @sock: a connected Unix socket (borrowed)
 * @payload: @len bytes to send; may be NULL when @len is 0
 * @len: payload length, at most %FL_TRANSFER_MAX_PAYLOAD
 * @fds: @nfds fds to pass (borrowed: the caller keeps and closes them);
 *	may be NULL when @nfds is 0
 * @nfds: at most %FL_TRANSFER_MAX_FDS
 *
 * On a stream the message may take several sendmsg() calls; the fds go
 * with the first. On a seqpacket or datagram socket it is one sendmsg().
 * Blocks on a blocking socket.
 * Ownership: borrows everything.
 * Return: 0; -EINVAL for bad arguments or limits; -EBADF if @sock or one of
 * @fds is not open; -ENOTSOCK; -EAGAIN if the socket is non-blocking and
 * nothing was sent; -EMSGSIZE if a datagram or seqpacket message is larger
 * than the socket takes; -EPIPE (-ECONNREFUSED on a datagram socket) if
 * the peer is gone; other sendmsg() errors.
 * Context: any thread; may block.
 */
FL_EXPORT int fl_send(int sock, const void *payload, size_t len, const int *fds, unsigned int nfds);

/**
 * fl_recv() - receive one message sent by fl_send()
 * @sock: a connected Unix socket (borrowed)
 * @payload: buffer of @cap bytes for the payload; may be NULL when @cap is 0
 * @cap: capacity of @payload
 * @ret_len: on success, the payload length; may be NULL
 * @fds: array of @max_fds entries for the received fds; may be NULL when
 *	@max_fds is 0
 * @max_fds: capacity of @fds
 * @ret_nfds: on success, the number of fds stored in @fds; may be NULL
 *	only when @max_fds is 0
 *
 * Reads exactly one message. On a stream a message larger than @cap or with
 * more fds than @max_fds is still read to its end (and dropped), so the next
 * call starts at the next message. @fds, *@ret_len and *@ret_nfds are
 * written on success only; the contents of @payload after a failure are
 * unspecified.
 * Ownership: on success the caller owns the *@ret_nfds fds stored in @fds
 * (``O_CLOEXEC``); on failure every fd that arrived has been closed.
 * Return: 0; -EINVAL for bad arguments; -EBADF; -ENOTSOCK; -EAGAIN if the
 * socket is non-blocking and no message has started to arrive; -ENOTCONN
 * if the peer closed the connection at a message boundary; -ECONNRESET if
 * it did so in the middle of a message; -EPROTO if the data is not a valid
 * message (bad header, a length or fd count over the limits, or fds that
 * do not match the header; a stream is then out of step: close it);
 * -EMSGSIZE if the payload exceeds @cap, more fds arrived than @max_fds, or
 * the kernel truncated the fds (``MSG_CTRUNC``, e.g. at RLIMIT_NOFILE);
 * other recvmsg() errors.
 * Context: any thread; may block.
 */
FL_EXPORT int fl_recv(int sock, void *payload, size_t cap, size_t *ret_len, int *fds,
		      unsigned int max_fds, unsigned int *ret_nfds);

/**
 * fl_fence_send() - send a fence and a payload
 * @sock: a connected Unix socket (borrowed)
 * @fence: the fence (borrowed)
 * @payload: @len bytes sent with it; may be NULL when @len is 0
 * @len: at most %FL_TRANSFER_MAX_PAYLOAD
 *
 * Exports a new fd for @fence (fl_fence_export_fd()), sends it with
 * fl_send() and closes this process's copy, whether or not the send worked.
 * The receiver's copy keeps the fence alive and becomes readable when it
 * completes, in any process.
 * Ownership: borrows @fence.
 * Return: 0, -EINVAL, or an error of fl_fence_export_fd() or fl_send().
 * Context: any thread; may block.
 */
FL_EXPORT int fl_fence_send(int sock, struct fl_fence *fence, const void *payload, size_t len);

/**
 * fl_fence_recv() - receive a fence fd and a payload
 * @sock: a connected Unix socket (borrowed)
 * @ret_fence_fd: on success, the received fence fd
 * @payload: buffer for the payload, as for fl_recv()
 * @cap: capacity of @payload
 * @ret_len: on success, the payload length; may be NULL
 *
 * The message must carry exactly one fd, and it must be a fenceline fence
 * fd: poll() it, or pass it to fl_fence_fd_get_status() or
 * fl_fence_fd_wait(), in this process. An fd of another kind is closed and
 * the call fails with -EPROTO. Only the fd's kind is checked, so across
 * processes an unrelated Unix stream socket with nothing to read passes for
 * an active fence (see fl_fence_fd_get_status()).
 * Ownership: on success the caller owns *@ret_fence_fd (``O_CLOEXEC``).
 * Return: 0, -EINVAL, -EPROTO (no fd, several, or not a fence fd), or an
 * error of fl_recv().
 * Context: any thread; may block.
 */
FL_EXPORT int fl_fence_recv(int sock, int *ret_fence_fd, void *payload, size_t cap,
			    size_t *ret_len);

/**
 * fl_timeline_send() - send a timeline handle and a payload
 * @sock: a connected Unix socket (borrowed)
 * @tl: the timeline (borrowed)
 * @payload: @len bytes sent with it; may be NULL when @len is 0
 * @len: at most %FL_TRANSFER_MAX_PAYLOAD
 *
 * Exports a timeline fd (fl_timeline_export_fd()), sends it with fl_send()
 * and closes this process's copy, whether or not the send worked.
 *
 * Until the fenceline daemon exists, timelines live in the process that
 * created them: the received fd is a handle that keeps the sender's
 * timeline alive (its pending points fail with -ENOENT only once every
 * handle, this fd included, is gone), but the receiving process cannot
 * signal it or map it back with fl_timeline_from_fd(); only the sender's
 * process can signal it.
 * Ownership: borrows @tl.
 * Return: 0, -EINVAL, or an error of fl_timeline_export_fd() or fl_send().
 * Context: any thread; may block.
 */
FL_EXPORT int fl_timeline_send(int sock, struct fl_timeline *tl, const void *payload, size_t len);

/**
 * fl_timeline_recv() - receive a timeline fd and a payload
 * @sock: a connected Unix socket (borrowed)
 * @ret_timeline_fd: on success, the received timeline fd
 * @payload: buffer for the payload, as for fl_recv()
 * @cap: capacity of @payload
 * @ret_len: on success, the payload length; may be NULL
 *
 * The message must carry exactly one fd that looks like a timeline fd (a
 * Unix stream socket with nothing to read). Another kind of fd, a completed
 * fence fd among them, is closed and the call fails with -EPROTO. Across
 * processes a pending fence fd cannot be told from a timeline fd. See
 * fl_timeline_send() for what the fd can do in the receiving process.
 * Ownership: on success the caller owns *@ret_timeline_fd (``O_CLOEXEC``);
 * closing it drops the handle.
 * Return: 0, -EINVAL, -EPROTO (no fd, several, or not a timeline fd), or an
 * error of fl_recv().
 * Context: any thread; may block.
 */
FL_EXPORT int fl_timeline_recv(int sock, int *ret_timeline_fd, void *payload, size_t cap,
			       size_t *ret_len);

FL_END_DECLS

#endif /* FENCELINE_TRANSFER_H */

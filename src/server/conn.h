/* SPDX-License-Identifier: MIT */
/*
 * The server framework's connections (docs/architecture.md, "The
 * framework"): a peer's socket in the loop, its credentials, reading one
 * message with its fds, answering without ever blocking, and the end of
 * the connection, which runs the services' client_gone and the destroy
 * listeners once and hands the connection back to its host after the pass.
 *
 * A connection is a struct fl_server_conn embedded in the host's own
 * object (fencelined: struct client), so that the host keeps whatever it
 * counts per peer next to it and finds it with FL_SERVER_CONTAINER_OF().
 * The framework knows no message format: what a message means, and how a
 * peer is refused, are the host's (struct fl_server_host_ops). Every
 * sendmsg()/recvmsg() is the transport's (src/proto/transport.h).
 *
 * Back-pressure: a reply is sent with MSG_DONTWAIT and never queued in
 * user space. The queue is the socket's send buffer (SO_SNDBUF): a peer
 * that lets it fill, by not reading its replies, is disconnected at the
 * reply that would block, and the loop goes on serving the others.
 *
 * Loop thread only, like the loop.
 */
#ifndef FL_SERVER_CONN_H
#define FL_SERVER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "list.h"
#include "protocol.h"

struct fl_loop_source;
struct fl_server;

/*
 * The framework's part of a connection. Start it on a socket with
 * fl__server_conn_start(), or with fl__server_conn_init() alone for one
 * that has no socket (tests of dispatch).
 */
struct fl_server_conn {
	int fd; /* the peer's socket; -1 once disconnected, or with none */
	pid_t pid; /* SO_PEERCRED's, when it connected */
	uid_t uid;
	struct fl_server *srv; /* NULL with no socket */
	struct fl_loop_source *src; /* @fd in the loop, while connected */
	/* In the server's connections while connected, then on its list to release. */
	struct fl_server_link link;
	struct fl_server_link destroy; /* struct fl_server_listener */
	/* Per enum fl_proto_service_id: the version HELLO agreed on, 0 for none. */
	uint32_t versions[FL_PROTO_MAX_SERVICES];
};

/* What fl__server_conn_recv() received besides the bytes. */
struct fl_server_msg {
	size_t len; /* the message's bytes in the caller's buffer (its whole length if TRUNC) */
	unsigned int nfds; /* fds stored in the caller's array: the caller's now */
	unsigned int flags; /* enum fl__proto_rx_flags: the caller's protocol judges them */
};

/**
 * fl__server_conn_init() - start @conn, of process @pid and user @uid, with
 * no socket, no listener and no service negotiated
 */
void fl__server_conn_init(struct fl_server_conn *conn, pid_t pid, uid_t uid);

/**
 * fl__server_conn_start() - serve @fd (a connected, non-blocking Unix
 * socket) as @conn, of process @pid and user @uid, on @srv
 *
 * @conn is initialised as by fl__server_conn_init(), put in @srv's loop
 * (the host's readable() is called whenever @fd is readable or hung up)
 * and in @srv's connections. From then on @fd is the framework's: it is
 * closed by fl__server_conn_disconnect().
 * Return: 0; or, with @fd still the caller's and @conn in nothing,
 * epoll_ctl()'s -errno (-ENOMEM...).
 */
int fl__server_conn_start(struct fl_server *srv, struct fl_server_conn *conn, int fd, pid_t pid,
			  uid_t uid);

/**
 * fl__server_conn_recv() - read @conn's next message without blocking
 * @buf: @size bytes for the message (a longer one is cut: FL__PROTO_RX_TRUNC)
 * @fds: room for @max_fds fds (at most FL__PROTO_MAX_FDS, 253), which is
 *	also all the kernel may install (more: FL__PROTO_RX_CTRUNC, dropped
 *	by the kernel)
 * @msg: filled on a message
 *
 * End of file and receive errors disconnect @conn (logged by the host's
 * disconnecting(): no reason for end of file and ECONNRESET, which are a
 * peer's ordinary end).
 * Return: 1 with a message (its fds the caller's, O_CLOEXEC); 0 when none
 * is queued; -ENOTCONN when @conn is (now) disconnected.
 */
int fl__server_conn_recv(struct fl_server_conn *conn, void *buf, size_t size, int *fds,
			 unsigned int max_fds, struct fl_server_msg *msg);

/**
 * fl__server_conn_send() - send @head (@head_len bytes), then @body (@len
 * bytes), with @nfds of @fds (borrowed: copies go) as one message
 *
 * Never blocks. A message the socket's send buffer has no room for, as
 * when the peer does not read, disconnects @conn ("does not read its
 * replies"), and so does any other failure (a peer gone: no reason
 * logged; an error of ours, such as -ENOMEM or -EMSGSIZE: its text).
 * Return: true when it went; false when @conn is disconnected (now, or was).
 */
bool fl__server_conn_send(struct fl_server_conn *conn, const void *head, size_t head_len,
			  const void *body, size_t len, const int *fds, unsigned int nfds);

/**
 * fl__server_conn_disconnect() - end @conn
 * @why: for the host's log (NULL: nothing to say, the peer simply went)
 *
 * In this order: the host's disconnecting(@conn, @why); @conn leaves the
 * loop and its socket is closed (@conn->fd is -1 from then on); every
 * service's client_gone and the destroy listeners run
 * (fl__server_conn_gone()); @conn leaves @srv's connections. The host's
 * release() is called for it when the loop next dispatches (an idle
 * source), since events already fetched in this pass may still name it,
 * or by fl__server_release_gone(). A second call does nothing.
 */
void fl__server_conn_disconnect(struct fl_server_conn *conn, const char *why);

/**
 * fl__server_conn_pause() - stop (@pause) or restart telling the host
 * that @conn is readable or hung up
 *
 * For a connection the host reads no further until it has answered a
 * request (a reply it owes comes first): its queue and its hang-up wait
 * in the socket, instead of making every pass of the loop return at once.
 * Restarted, a connection that is readable or hung up is reported in the
 * next dispatch.
 *
 * Return: 0; -ENOTCONN (disconnected), or fl__loop_fd_pause()'s error.
 */
int fl__server_conn_pause(struct fl_server_conn *conn, bool pause);

/** fl__server_conn_count() - the connections of @srv now (not counting disconnected ones) */
unsigned int fl__server_conn_count(const struct fl_server *srv);

/**
 * fl__server_conn_next() - the connection of @srv after @conn (NULL: the
 * first), most recently started first; NULL after the last
 *
 * Do not disconnect the connection after @conn while walking.
 */
struct fl_server_conn *fl__server_conn_next(struct fl_server *srv, struct fl_server_conn *conn);

/**
 * fl__server_release_gone() - call the host's release() now for every
 * connection disconnected since the loop last dispatched (at shutdown,
 * after the last disconnect; fl__server_destroy() does it too)
 */
void fl__server_release_gone(struct fl_server *srv);

#endif /* FL_SERVER_CONN_H */

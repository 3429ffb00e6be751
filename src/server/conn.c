/* SPDX-License-Identifier: MIT */
/* Connections (conn.h): a peer's socket in the loop, reading, answering, the end. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"
#include "server-private.h"
#include "transport.h"

void fl__server_conn_init(struct fl_server_conn *conn, pid_t pid, uid_t uid)
{
	conn->fd = -1;
	conn->pid = pid;
	conn->uid = uid;
	conn->srv = NULL;
	conn->src = NULL;
	fl__server_link_init(&conn->link);
	fl__server_link_init(&conn->destroy);
	memset(conn->versions, 0, sizeof(conn->versions));
}

static void conn_ready(int fd, uint32_t events, void *data)
{
	struct fl_server_conn *conn = data;

	(void)fd;
	(void)events;
	conn->srv->host->readable(conn);
}

int fl__server_conn_start(struct fl_server *srv, struct fl_server_conn *conn, int fd, pid_t pid,
			  uid_t uid)
{
	fl__server_conn_init(conn, pid, uid);
	conn->src = fl__loop_add_fd(srv->loop, fd, EPOLLIN, conn_ready, conn);
	if (!conn->src)
		return -errno;
	conn->fd = fd;
	conn->srv = srv;
	fl__server_link_add_head(&srv->conns, &conn->link);
	srv->nconns++;
	return 0;
}

int fl__server_conn_recv(struct fl_server_conn *conn, void *buf, size_t size, int *fds,
			 unsigned int max_fds, struct fl_server_msg *msg)
{
	struct fl__proto_rx rx = { .fds = fds, .max_fds = max_fds, .room = max_fds };
	int r;

	if (conn->fd < 0)
		return -ENOTCONN;
	r = fl__proto_recv(conn->fd, buf, size, NULL, 0, MSG_DONTWAIT, &rx);
	if (r == -EAGAIN)
		return 0;
	if (r < 0) {
		fl__server_conn_disconnect(conn, r == -ECONNRESET ? NULL : strerror(-r));
		return -ENOTCONN;
	}
	if (rx.len == 0 && rx.nfds == 0) {
		fl__server_conn_disconnect(conn, NULL); /* EOF: the peer closed or died */
		return -ENOTCONN;
	}
	msg->len = rx.len;
	msg->nfds = rx.nfds;
	msg->flags = rx.flags;
	return 1;
}

bool fl__server_conn_send(struct fl_server_conn *conn, const void *head, size_t head_len,
			  const void *body, size_t len, const int *fds, unsigned int nfds)
{
	ssize_t n;

	if (conn->fd < 0)
		return false;
	n = fl__proto_send(conn->fd, head, head_len, body, len, fds, nfds, MSG_DONTWAIT);
	if (n == (ssize_t)(head_len + len))
		return true;
	if (n == -EAGAIN)
		fl__server_conn_disconnect(conn, "does not read its replies");
	else if (n < 0 && n != -EPIPE && n != -ECONNRESET)
		fl__server_conn_disconnect(conn,
					   strerror((int)-n)); /* ours, not the peer's: say so */
	else
		fl__server_conn_disconnect(conn, NULL);
	return false;
}

int fl__server_conn_pause(struct fl_server_conn *conn, bool pause)
{
	if (conn->fd < 0 || !conn->src)
		return -ENOTCONN;
	return fl__loop_fd_pause(conn->src, pause);
}

/* The pass that disconnected them is over: nothing names them any more. */
static void reap(void *data)
{
	struct fl_server *srv = data;

	srv->reap = NULL; /* the loop frees an idle source once it ran */
	fl__server_release_gone(srv);
}

void fl__server_conn_disconnect(struct fl_server_conn *conn, const char *why)
{
	struct fl_server *srv = conn->srv;

	if (conn->fd < 0)
		return;
	srv->host->disconnecting(conn, why);
	fl__loop_source_remove(conn->src);
	conn->src = NULL;
	close(conn->fd);
	conn->fd = -1;
	/* Each service lets go of what it kept for the peer. */
	fl__server_conn_gone(srv, conn);
	fl__server_link_del(&conn->link);
	srv->nconns--;
	fl__server_link_add_tail(&srv->gone, &conn->link);
	/* Without the idle source (no memory), the next disconnect or fl__server_destroy() does it. */
	if (!srv->reap)
		srv->reap = fl__loop_add_idle(srv->loop, reap, srv);
}

void fl__server_release_gone(struct fl_server *srv)
{
	fl__loop_source_remove(srv->reap);
	srv->reap = NULL;
	while (!fl__server_link_empty(&srv->gone)) {
		struct fl_server_conn *conn =
			FL_SERVER_CONTAINER_OF(srv->gone.next, struct fl_server_conn, link);

		fl__server_link_del(&conn->link);
		srv->host->release(conn);
	}
}

unsigned int fl__server_conn_count(const struct fl_server *srv)
{
	return srv->nconns;
}

struct fl_server_conn *fl__server_conn_next(struct fl_server *srv, struct fl_server_conn *conn)
{
	struct fl_server_link *l = conn ? conn->link.next : srv->conns.next;

	return l == &srv->conns ? NULL : FL_SERVER_CONTAINER_OF(l, struct fl_server_conn, link);
}

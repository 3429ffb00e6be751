/* SPDX-License-Identifier: MIT */
/*
 * The server framework's listening socket and connections
 * (src/server/acceptor.h, conn.h), in-process on a loop of the test's own:
 * a peer turned away with -EMFILE through the spare fd when the fd table
 * is full, the pause of accepting when even the spare cannot help and its
 * end, back-pressure (a peer that does not read is cut off at its send
 * buffer while another is served), and a connection's end running its
 * services' client_gone and destroy listeners once.
 *
 * The fd table is made full by lowering RLIMIT_NOFILE to the lowest free
 * fd number, in the test's child (the runner forks each test), and raised
 * again before the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "acceptor.h"
#include "conn.h"
#include "fixture.h"
#include "loop.h"
#include "runner.h"
#include "service.h"
#include "transport.h"
#include "util.h"

/* What the acceptor's host saw. */
static int accepted_fd = -1, n_accepted, n_paused;

static void on_accepted(struct fl_acceptor *acc, int fd, pid_t pid, uid_t uid, void *data)
{
	(void)acc;
	(void)data;
	fl_assert_int_eq(pid, getpid());
	fl_assert_int_eq(uid, getuid());
	fl_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	fl_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	n_accepted++;
	accepted_fd = fd;
}

/* A refusal is the status alone, as an int. */
static void on_refuse(int fd, int status, void *data)
{
	(void)data;
	fl_assert_int_eq(send(fd, &status, sizeof(status), MSG_DONTWAIT | MSG_NOSIGNAL),
			 (ssize_t)sizeof(status));
}

static void on_paused(void *data)
{
	(void)data;
	n_paused++;
}

static const struct fl_acceptor_ops acceptor_ops = { on_accepted, on_refuse, on_paused };

/* The lowest fd number free now (the next one open() gives). */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	fl_assert(fd >= 0);
	close(fd);
	return fd;
}

static struct rlimit nofile_lower(rlim_t cur)
{
	struct rlimit old, rl;

	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = cur;
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	return old;
}

FL_TEST(acceptor_out_of_fds_turns_a_peer_away_with_the_spare)
{
	struct sockaddr_un addr;
	struct fl_loop *loop = fl__loop_create();
	int lfd = fl_test_listen(&addr), peer, status = 0, again;
	struct fl_acceptor *acc;
	struct rlimit old;

	fl_assert(loop);
	acc = fl__acceptor_create(loop, lfd, &acceptor_ops, NULL);
	fl_assert(acc);
	n_accepted = n_paused = 0;
	peer = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	again = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	fl_assert(peer >= 0 && again >= 0);
	/* Every number below the limit in use: the table is full. */
	old = nofile_lower((rlim_t)lowest_free_fd());
	fl_assert_int_eq(connect(peer, (struct sockaddr *)&addr, sizeof(addr)), 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	/* Answered at once, not left in the backlog: the refusal, then the end. */
	fl_assert_int_eq(recv(peer, &status, sizeof(status), MSG_DONTWAIT),
			 (ssize_t)sizeof(status));
	fl_assert_int_eq(status, -EMFILE);
	fl_assert_int_eq(recv(peer, &status, sizeof(status), MSG_DONTWAIT), 0);
	fl_assert_int_eq(n_accepted, 0);
	fl_assert_int_eq(n_paused, 0);
	/* The spare is back: the table is as full as before. */
	fl_assert_int_eq(open("/dev/null", O_RDONLY | O_CLOEXEC), -1);
	fl_assert_int_eq(errno, EMFILE);
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);

	/* With fds free, the next peer is accepted as usual. */
	fl_assert_int_eq(connect(again, (struct sockaddr *)&addr, sizeof(addr)), 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(n_accepted, 1);
	close(accepted_fd);
	close(again);
	close(peer);
	fl__acceptor_destroy(acc);
	fl__loop_destroy(loop);
	close(lfd);
}

FL_TEST_TIMEOUT(acceptor_without_a_spare_pauses_then_accepts_again, 20)
{
	struct sockaddr_un addr;
	struct fl_loop *loop = fl__loop_create();
	int lfd = fl_test_listen(&addr), peer, spare, waited = 0;
	struct fl_acceptor *acc;
	struct rlimit old;
	uint64_t paused_at;
	char link[64], path[64];

	fl_assert(loop);
	peer = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	fl_assert(peer >= 0);
	n_accepted = n_paused = 0;
	/* The spare takes the lowest free number: every one below it is in use. */
	spare = lowest_free_fd();
	acc = fl__acceptor_create(loop, lfd, &acceptor_ops, NULL);
	fl_assert(acc);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", spare);
	memset(path, 0, sizeof(path));
	fl_assert(readlink(link, path, sizeof(path) - 1) > 0);
	fl_assert_str_eq(path, "/dev/null");
	/*
	 * The limit lowered under the spare: closing it frees a number
	 * accept4() may not use, and it cannot be opened again.
	 */
	old = nofile_lower((rlim_t)spare);
	fl_assert_int_eq(connect(peer, (struct sockaddr *)&addr, sizeof(addr)), 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	paused_at = fl__now_ns();
	fl_assert_int_eq(n_paused, 1);
	fl_assert_int_eq(n_accepted, 0);
	/* The peer waits in the backlog, unanswered, and nothing spins meanwhile. */
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(n_paused, 1);
	fl_assert_int_eq(n_accepted, 0);
	fl_assert_int_eq(recv(peer, &waited, sizeof(waited), MSG_DONTWAIT), -1);
	fl_assert_int_eq(errno, EAGAIN);
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	/* Fds are free again: the pause's timer, and nothing else, lets the peer in. */
	while (!n_accepted)
		fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	/* Not sooner than the pause (a bound from below: a loaded machine cannot break it). */
	fl_assert(fl__now_ns() - paused_at >= (FL_ACCEPTOR_PAUSE_MS - 1) * 1000000ull);
	fl_assert_int_eq(n_accepted, 1);
	fl_assert_int_eq(n_paused, 1);
	close(accepted_fd);
	close(peer);
	fl__acceptor_destroy(acc);
	fl__loop_destroy(loop);
	close(lfd);
}

/*
 * A server whose connections are struct peer: each message read is
 * answered with REPLY_LEN bytes, and each peer's end is recorded.
 */
#define REPLY_LEN 1024

struct peer {
	struct fl_server_conn conn;
	int id;
	int replies; /* sent (queued in its socket) */
	bool add_listener; /* add a destroy listener at its first message */
};

static struct {
	int disconnects[2], releases[2], listeners[2], gone[2];
	char why[2][64];
} seen;

static struct peer *peer_of(struct fl_server_conn *conn)
{
	return FL_SERVER_CONTAINER_OF(conn, struct peer, conn);
}

static void listener_notify(struct fl_server_listener *l, struct fl_server_conn *conn)
{
	seen.listeners[peer_of(conn)->id]++;
	free(l);
}

static void host_readable(struct fl_server_conn *conn)
{
	static const char reply[REPLY_LEN];
	struct peer *p = peer_of(conn);
	struct fl_server_msg m;
	char buf[64];
	int fds[4];

	while (fl__server_conn_recv(conn, buf, sizeof(buf), fds, 4, &m) == 1) {
		for (unsigned int i = 0; i < m.nfds; i++)
			close(fds[i]);
		if (p->add_listener) {
			struct fl_server_listener *l = calloc(1, sizeof(*l));

			fl_assert(l);
			l->notify = listener_notify;
			fl__server_conn_add_destroy_listener(conn, l);
			p->add_listener = false;
		}
		if (!fl__server_conn_send(conn, NULL, 0, reply, sizeof(reply), NULL, 0))
			return;
		p->replies++;
	}
}

static void host_disconnecting(struct fl_server_conn *conn, const char *why)
{
	struct peer *p = peer_of(conn);

	/* Still connected: the host logs it and lets go of its own first. */
	fl_assert(conn->fd >= 0);
	seen.disconnects[p->id]++;
	snprintf(seen.why[p->id], sizeof(seen.why[p->id]), "%s", why ? why : "(none)");
}

static void host_release(struct fl_server_conn *conn)
{
	struct peer *p = peer_of(conn);

	seen.releases[p->id]++;
	free(p);
}

static const struct fl_server_host_ops peer_host = {
	.reject = fl_test_host_reject,
	.readable = host_readable,
	.disconnecting = host_disconnecting,
	.release = host_release,
};

static void svc_gone(struct fl_server_conn *conn, void *data)
{
	(void)data;
	seen.gone[peer_of(conn)->id]++;
}

/* A service with no op of its own, for its client_gone. */
static const struct fl_server_op no_ops[1];
static const struct fl_server_service_ops watcher = {
	.name = "watcher",
	.first_op = 200,
	.last_op = 200,
	.ops = no_ops,
	.client_gone = svc_gone,
};

/* A peer @id on one end of a new socket pair, the other end in *@ret_sock. */
static struct peer *peer_start(struct fl_server *srv, int id, int *ret_sock)
{
	struct peer *p = calloc(1, sizeof(*p));
	int sv[2];

	fl_assert(p);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	p->id = id;
	fl_assert_int_eq(fl__server_conn_start(srv, &p->conn, sv[0], getpid(), getuid()), 0);
	*ret_sock = sv[1];
	return p;
}

FL_TEST(conn_peer_that_does_not_read_is_cut_off_at_its_send_buffer)
{
	struct fl_loop *loop;
	struct fl_server *srv = fl_test_server_new(&peer_host, &loop);
	int slow_sock, fast_sock, sndbuf = 0, small = 16384, queued, rounds = 0;
	socklen_t len = sizeof(sndbuf);
	struct peer *slow = peer_start(srv, 0, &slow_sock), *fast = peer_start(srv, 1, &fast_sock);
	char reply[REPLY_LEN + 1];

	memset(&seen, 0, sizeof(seen));
	fl_assert_int_eq(setsockopt(slow->conn.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)),
			 0);
	fl_assert_int_eq(getsockopt(slow->conn.fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len), 0);
	fl_assert_int_eq(fl__server_conn_count(srv), 2);
	/* Each round, both ask; only the fast one reads its answer. */
	while (!seen.disconnects[0]) {
		fl_assert(rounds++ < 10000); /* a send buffer holds far fewer */
		fl_assert_int_eq(send(slow_sock, "?", 1, 0), 1);
		fl_assert_int_eq(send(fast_sock, "?", 1, 0), 1);
		fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
		fl_assert_int_eq(recv(fast_sock, reply, sizeof(reply), MSG_DONTWAIT), REPLY_LEN);
	}
	queued = slow->replies;
	fl_assert_str_eq(seen.why[0], "does not read its replies");
	fl_assert_int_eq(seen.disconnects[0], 1);
	/* Cut off at the reply that did not fit, not before: the buffer held the rest. */
	fl_assert(queued > 0 && queued == rounds - 1);
	fl_assert((size_t)queued * REPLY_LEN <= (size_t)sndbuf);
	fl_assert_int_eq(fl__server_conn_count(srv), 1);
	/* The bystander goes on being served. */
	fl_assert_int_eq(send(fast_sock, "?", 1, 0), 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(recv(fast_sock, reply, sizeof(reply), MSG_DONTWAIT), REPLY_LEN);
	fl_assert_int_eq(seen.disconnects[1], 0);
	fl_assert_int_eq(fast->replies, rounds + 1);
	/* The slow peer finds every reply that was queued, whole, then the end. */
	for (int i = 0; i < queued; i++)
		fl_assert_int_eq(recv(slow_sock, reply, sizeof(reply), MSG_DONTWAIT), REPLY_LEN);
	fl_assert_int_eq(recv(slow_sock, reply, sizeof(reply), MSG_DONTWAIT), 0);
	fl_assert_int_eq(seen.releases[0], 1);
	fl__server_conn_disconnect(&fast->conn, NULL);
	fl__server_release_gone(srv);
	fl_assert_int_eq(seen.releases[1], 1);
	close(slow_sock);
	close(fast_sock);
	fl_test_server_free(srv, loop);
}

FL_TEST(conn_end_runs_client_gone_and_destroy_listeners_once)
{
	struct fl_loop *loop;
	struct fl_server *srv = fl_test_server_new(&peer_host, &loop);
	int sock, other_sock;
	struct peer *p, *other;
	char reply[REPLY_LEN];

	memset(&seen, 0, sizeof(seen));
	fl_assert_int_eq(fl__server_add_service(srv, &watcher, NULL), 0);
	p = peer_start(srv, 0, &sock);
	other = peer_start(srv, 1, &other_sock);
	p->add_listener = true;
	/* One request, answered; then the peer goes. */
	fl_assert_int_eq(send(sock, "?", 1, 0), 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(recv(sock, reply, sizeof(reply), 0), REPLY_LEN);
	close(sock);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	fl_assert_int_eq(seen.releases[0], 0); /* not in the pass that ended it (below) */
	fl_assert_int_eq(seen.disconnects[0], 1);
	fl_assert_str_eq(seen.why[0], "(none)"); /* a peer's end is nothing to log */
	fl_assert_int_eq(seen.gone[0], 1);
	fl_assert_int_eq(seen.listeners[0], 1);
	fl_assert_int_eq(p->conn.fd, -1);
	fl_assert_int_eq(fl__server_conn_count(srv), 1);
	fl_assert(fl__server_conn_next(srv, NULL) == &other->conn);
	/* Whatever else ends it again in the same pass does nothing more. */
	fl__server_conn_disconnect(&p->conn, "again");
	fl_assert(!fl__server_conn_send(&p->conn, NULL, 0, reply, 1, NULL, 0));
	fl_assert_int_eq(fl__server_conn_recv(&p->conn, reply, sizeof(reply), NULL, 0, NULL),
			 -ENOTCONN);
	fl_assert_int_eq(seen.disconnects[0], 1);
	fl_assert_int_eq(seen.gone[0], 1);
	fl_assert_int_eq(seen.listeners[0], 1);
	/* Released once, after the pass: events already fetched may still name it. */
	fl_assert_int_eq(seen.releases[0], 0);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(seen.releases[0], 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(seen.releases[0], 1);
	/* The other one was not touched. */
	fl_assert_int_eq(seen.disconnects[1] + seen.gone[1] + seen.releases[1], 0);
	fl__server_conn_disconnect(&other->conn, NULL);
	fl_test_server_free(srv, loop); /* releases it */
	fl_assert_int_eq(seen.releases[1], 1);
	fl_assert_int_eq(seen.gone[1], 1);
	close(other_sock);
}

FL_TEST(conn_reply_echoes_the_request_with_its_fds)
{
	struct fl_loop *loop;
	struct fl_server *srv = fl_test_server_new(&peer_host, &loop);
	struct fl_msg_hdr req = { 42, 0, 7, 0 }, h;
	struct fl_msg_reply body = { -EAGAIN, 0 }, got;
	int sock, p[2], fd = -1;
	struct fl__proto_rx rx = { .fds = &fd, .max_fds = 1, .room = 1 };
	struct peer *peer;

	memset(&seen, 0, sizeof(seen));
	peer = peer_start(srv, 0, &sock);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert(fl__server_reply(&peer->conn, &req, &body, sizeof(body), &p[1], 1));
	close(p[1]); /* a copy went */
	fl_assert_int_eq(fl__proto_recv(sock, &h, sizeof(h), &got, sizeof(got), 0, &rx), 0);
	fl_assert_int_eq(rx.len, sizeof(h) + sizeof(got));
	fl_assert_int_eq(h.op, 42 | FL_OP_REPLY);
	fl_assert_int_eq(h.seq, 7);
	fl_assert_int_eq(h.len, sizeof(got));
	fl_assert_int_eq(got.status, -EAGAIN);
	/* The fd that came is the pipe's write end. */
	fl_assert_int_eq(rx.nfds, 1);
	fl_assert_int_eq(write(fd, "x", 1), 1);
	fl_assert_int_eq(read(p[0], &got, 1), 1);
	close(fd);
	close(p[0]);
	close(sock);
	fl__server_conn_disconnect(&peer->conn, NULL);
	fl_test_server_free(srv, loop);
	fl_assert_int_eq(seen.releases[0], 1);
}

/* SPDX-License-Identifier: MIT */
/* The server framework's tests' fixture (fixture.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "acceptor.h"
#include "fixture.h"
#include "loop.h"
#include "runner.h"

int fl_test_rejected_status;
char fl_test_rejected_why[160];

bool fl_test_host_reject(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status,
			 const char *why)
{
	(void)conn;
	(void)req;
	fl_test_rejected_status = status;
	snprintf(fl_test_rejected_why, sizeof(fl_test_rejected_why), "%s", why);
	return false;
}

const struct fl_server_host_ops fl_test_host = { .reject = fl_test_host_reject };

bool fl_test_send_op(struct fl_server *srv, struct fl_server_conn *conn, uint32_t op,
		     uint32_t flags, unsigned int nfds)
{
	struct fl_proto_request q;
	int fds[4] = { -1, -1, -1, -1 };

	fl_assert(nfds <= 4);
	memset(&q, 0, sizeof(q));
	q.hdr.op = op;
	q.hdr.flags = flags;
	q.nfds = nfds;
	fl_test_rejected_status = 0;
	return fl__server_dispatch(srv, conn, &q, fds);
}

struct fl_server *fl_test_server_new(const struct fl_server_host_ops *host,
				     struct fl_loop **ret_loop)
{
	struct fl_loop *loop = fl__loop_create();
	struct fl_server *srv;

	fl_assert(loop);
	srv = fl__server_create(loop, host);
	fl_assert(srv);
	*ret_loop = loop;
	return srv;
}

void fl_test_server_free(struct fl_server *srv, struct fl_loop *loop)
{
	fl__server_destroy(srv);
	fl__loop_destroy(loop);
}

int fl_test_listen(struct sockaddr_un *addr)
{
	static unsigned int n;
	const char *dir = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int fd;

	fl_assert(dir); /* the runner's, one per test, removed after it */
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	snprintf(addr->sun_path, sizeof(addr->sun_path), "%s/server-test-%u.sock", dir, n++);
	fd = fl__acceptor_listen(addr->sun_path, 0600);
	fl_assert(fd >= 0);
	fl_assert_int_eq(stat(addr->sun_path, &st), 0);
	fl_assert_int_eq(st.st_mode & 0777, 0600);
	fl_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	fl_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	return fd;
}

int fl_test_connect(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	fl_assert(fd >= 0);
	fl_assert_int_eq(connect(fd, (const struct sockaddr *)addr, sizeof(*addr)), 0);
	return fd;
}

/* SPDX-License-Identifier: MIT */
/*
 * fl_introspect_display_dump() (<fenceline/introspect.h>): the display
 * service's DUMP for fencectl; and fl_display_socket_path(), where it is
 * found. Never starts the service: a connection of
 * its own, made only when the socket answers, and closed after the one
 * request, so that neither the process's display connection (display.c,
 * which starts the service on first use) nor its state is touched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "display.h"
#include "service.h"
#include "transport.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 10000

/* $FENCELINE_REQUEST_TIMEOUT_MS, as fencelined's requests (and fencectl --timeout) use it. */
static unsigned int timeout_ms(void)
{
	const char *env = getenv("FENCELINE_REQUEST_TIMEOUT_MS");
	unsigned long v;
	char *end;

	if (!env || !env[0])
		return DEFAULT_TIMEOUT_MS;
	errno = 0;
	v = strtoul(env, &end, 10);
	return *end || errno || v > 24u * 3600 * 1000 ? DEFAULT_TIMEOUT_MS : (unsigned int)v;
}

/* One request and its reply; the reply's fds (at most one) to *@ret_fd. */
static int call(int sock, uint32_t op, uint32_t seq, const void *body, size_t len, void *reply,
		size_t cap, int *ret_fd)
{
	struct fl_msg_hdr h = { op, 0, seq, (uint32_t)len }, got;
	struct fl_msg_reply st;
	unsigned int n = 0;
	int fd = -1, r;
	ssize_t s;

	s = fl__proto_send(sock, &h, sizeof(h), body, len, NULL, 0, 0);
	if (s < 0)
		return s == -EPIPE ? -ECONNRESET : (int)s;
	r = fl__proto_recv_reply(sock, reply, cap, &fd, 1, 1, &n, NULL);
	if (r < 0)
		return r;
	memcpy(&got, reply, sizeof(got));
	if ((size_t)r < sizeof(got) + sizeof(st) || got.op != (op | FL_OP_REPLY) || got.seq != seq)
		r = -EPROTO;
	else {
		memcpy(&st, (char *)reply + sizeof(got), sizeof(st));
		r = st.status > 0 ? -EPROTO : st.status;
	}
	/* Exactly one fd comes with a DUMP's success, none with anything else. */
	if (r == 0 && (ret_fd != NULL) != (n == 1))
		r = -EPROTO;
	if (r < 0 || !ret_fd) {
		if (n)
			close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

FL_EXPORT int fl_introspect_display_dump(unsigned int flags, int *ret_fd)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct fl_dmsg_hello hello = { FL_DPROTO_VERSION, 0 };
	struct fl_dmsg_dump body = { 0, 0 };
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_dmsg_hello_reply) +
			    FL_DISPLAY_ERROR_MAX];
	int sock, r;

	fl_return_if(!ret_fd || (flags & ~FL_INTROSPECT_JSON), -EINVAL);
	if (flags & FL_INTROSPECT_JSON)
		body.flags = FL_DDUMP_JSON;
	r = fl__display_socket_path(path, sizeof(path));
	if (r < 0)
		return r;
	sock = fl__service_connect(path, timeout_ms());
	/* Nobody listens (no socket, or a stale one): no service runs, and none is started. */
	if (sock == -ENOENT || sock == -ECONNREFUSED)
		return -ENOENT;
	if (sock < 0)
		return sock;
	r = fl__service_peer_trusted(sock, "display service", path);
	if (r == 0)
		r = call(sock, FL_DOP_HELLO, 1, &hello, sizeof(hello), reply, sizeof(reply), NULL);
	if (r == 0)
		r = call(sock, FL_DOP_DUMP, 2, &body, sizeof(body), reply, sizeof(reply), ret_fd);
	close(sock);
	return r;
}

FL_EXPORT int fl_display_socket_path(char *buf, size_t cap)
{
	fl_return_if(!buf, -EINVAL);
	return fl__display_socket_path(buf, cap);
}

/* SPDX-License-Identifier: MIT */
/*
 * HELLO's negotiation of the services and their versions
 * (docs/protocol.md, "Services and versions"), both ways round: raw HELLOs
 * play older and newer clients against this daemon, and a stand-in daemon
 * on a socket of the test's plays an older daemon (one without a service,
 * one of core version 8) against this library.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"

struct hello_req {
	struct fl_msg_hdr h;
	struct fl_msg_hello b;
};

static struct hello_req hello_of(uint32_t seq, uint32_t sync, uint32_t heap, uint32_t observe)
{
	struct hello_req q = { { FL_OP_HELLO, 0, seq, sizeof(struct fl_msg_hello) },
			       { FL_PROTO_VERSION, 0, { sync, heap, observe } } };

	return q;
}

/* HELLO @q on a new connection; its reply's status, and the reply in *@ret. */
static int hello_raw(int sock, const void *q, size_t len, uint32_t seq,
		     struct fl_msg_hello_reply *ret)
{
	unsigned char buf[FL_PROTO_MAX_REPLY];
	int32_t status;
	ssize_t n;

	raw_send(sock, q, len, NULL, 0);
	n = raw_recv_reply(sock, FL_OP_HELLO, seq, buf, &status);
	fl_assert(n > 0);
	memset(ret, 0, sizeof(*ret));
	if (status == 0) {
		fl_assert_int_eq(n, sizeof(struct fl_msg_hdr) + sizeof(*ret));
		memcpy(ret, buf + sizeof(struct fl_msg_hdr), sizeof(*ret));
	}
	return status;
}

/* The daemon answered @status and hung up. */
static void expect_refused(int sock, uint32_t op, uint32_t seq, int status)
{
	fl_assert_int_eq(raw_reply(sock, op, seq), status);
	fl_assert_int_eq(raw_reply(sock, op, seq), 1);
	close(sock);
}

/* One request with no fds and an empty body but for @body, answered with @status. */
static void request_ok(int sock, uint32_t op, uint32_t seq, const void *body, size_t len)
{
	unsigned char q[FL_PROTO_MAX_REQUEST];
	struct fl_msg_hdr h = { op, 0, seq, (uint32_t)len };

	memcpy(q, &h, sizeof(h));
	if (len)
		memcpy(q + sizeof(h), body, len);
	raw_send(sock, q, sizeof(h) + len, NULL, 0);
	fl_assert_int_eq(raw_reply(sock, op, seq), 0);
}

static const struct fl_msg_heap_info heap_all = { "" };

/* An older client, of core version 8: refused for its version, not its size. */
FL_TEST(hello_of_core_version_8_is_refused_as_another_protocol)
{
	struct {
		struct fl_msg_hdr h;
		uint32_t version, flags;
	} old = { { FL_OP_HELLO, 0, 4, 8 }, 8, 0 };
	struct fl_msg_hello_reply rep;
	int sock = raw_connect_to(NULL);

	fl_assert_int_eq(hello_raw(sock, &old, sizeof(old), 4, &rep), -EPROTONOSUPPORT);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 4), 1);
	close(sock);
}

/* Garbage HELLOs: each refused with its own error, and hung up on. */
FL_TEST(garbage_hellos_are_refused)
{
	struct hello_req q = hello_of(5, 1, 1, 1);
	struct fl_msg_hello_reply rep;
	int sock;

	q.b.flags = 1;
	sock = raw_connect_to(NULL);
	fl_assert_int_eq(hello_raw(sock, &q, sizeof(q), 5, &rep), -EINVAL);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 5), 1);
	close(sock);

	/* Our version, one word short. */
	q = hello_of(5, 1, 1, 1);
	q.h.len = sizeof(q.b) - 4;
	sock = raw_connect_to(NULL);
	fl_assert_int_eq(hello_raw(sock, &q, sizeof(q) - 4, 5, &rep), -EPROTO);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 5), 1);
	close(sock);

	/* No version at all. */
	q.h.len = 0;
	sock = raw_connect_to(NULL);
	fl_assert_int_eq(hello_raw(sock, &q, sizeof(q.h), 5, &rep), -EPROTO);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 5), 1);
	close(sock);

	/* A version from the future, with a body of its own size. */
	q = hello_of(5, 1, 1, 1);
	q.b.version = 0xfffffff0u;
	q.h.len = 12;
	sock = raw_connect_to(NULL);
	fl_assert_int_eq(hello_raw(sock, &q, sizeof(q.h) + 12, 5, &rep), -EPROTONOSUPPORT);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 5), 1);
	close(sock);
}

/* A newer client: versions and a service this daemon does not have yet. */
FL_TEST(newer_client_gets_the_versions_both_know)
{
	struct hello_req q = hello_of(1, 7, 3, 2);
	struct fl_msg_hello_reply rep;
	int sock = raw_connect_to(NULL);

	q.b.services[5] = 4; /* a service to come */
	fl_assert_int_eq(hello_raw(sock, &q, sizeof(q), 1, &rep), 0);
	fl_assert_int_eq(rep.version, FL_PROTO_VERSION);
	fl_assert_int_eq(rep.services[FL_PROTO_SVC_SYNC], FL_PROTO_SYNC_VERSION);
	fl_assert_int_eq(rep.services[FL_PROTO_SVC_HEAP], FL_PROTO_HEAP_VERSION);
	fl_assert_int_eq(rep.services[FL_PROTO_SVC_OBSERVE], FL_PROTO_OBSERVE_VERSION);
	for (int i = 3; i < FL_PROTO_MAX_SERVICES; i++)
		fl_assert_int_eq(rep.services[i], 0);
	/* And it is served: a request of each service. */
	request_ok(sock, FL_OP_PING, 2, NULL, 0);
	request_ok(sock, FL_OP_HEAP_INFO, 3, &heap_all, sizeof(heap_all));
	{
		struct fl_msg_trace stop = { FL_TRACE_STOP, 0 };

		/* Not this client's session: an answer, and the client stays. */
		raw_send(sock, &(struct {
				 struct fl_msg_hdr h;
				 struct fl_msg_trace b;
			 }){ { FL_OP_TRACE, 0, 4, sizeof(stop) }, stop },
			 sizeof(struct fl_msg_hdr) + sizeof(stop), NULL, 0);
		fl_assert_int_eq(raw_reply(sock, FL_OP_TRACE, 4), -ENOENT);
	}
	request_ok(sock, FL_OP_PING, 5, NULL, 0);
	close(sock);
}

/*
 * An older client, or one that leaves a service out: that service is not
 * served to it, and a request of it is refused with -EPROTONOSUPPORT (a
 * peer sending what it said it does not speak is hung up on).
 */
FL_TEST(service_not_asked_for_is_not_served)
{
	struct hello_req q = hello_of(1, FL_PROTO_SYNC_VERSION, 0, FL_PROTO_OBSERVE_VERSION);
	struct fl_msg_hello_reply rep;
	int sock = raw_connect_to(NULL);

	fl_assert_int_eq(hello_raw(sock, &q, sizeof(q), 1, &rep), 0);
	fl_assert_int_eq(rep.services[FL_PROTO_SVC_SYNC], FL_PROTO_SYNC_VERSION);
	fl_assert_int_eq(rep.services[FL_PROTO_SVC_HEAP], 0);
	fl_assert_int_eq(rep.services[FL_PROTO_SVC_OBSERVE], FL_PROTO_OBSERVE_VERSION);
	request_ok(sock, FL_OP_PING, 2, NULL, 0);
	raw_send(sock, &(struct {
			 struct fl_msg_hdr h;
			 struct fl_msg_heap_info b;
		 }){ { FL_OP_HEAP_INFO, 0, 3, sizeof(heap_all) }, heap_all },
		 sizeof(struct fl_msg_hdr) + sizeof(heap_all), NULL, 0);
	expect_refused(sock, FL_OP_HEAP_INFO, 3, -EPROTONOSUPPORT);

	/* No service at all: core only. */
	q = hello_of(1, 0, 0, 0);
	sock = raw_connect_to(NULL);
	fl_assert_int_eq(hello_raw(sock, &q, sizeof(q), 1, &rep), 0);
	for (int i = 0; i < FL_PROTO_MAX_SERVICES; i++)
		fl_assert_int_eq(rep.services[i], 0);
	request_ok(sock, FL_OP_PING, 2, NULL, 0);
	{
		struct fl_msg_timeline_create tc = { "t", 0, 0 };

		raw_send(sock, &(struct {
				 struct fl_msg_hdr h;
				 struct fl_msg_timeline_create b;
			 }){ { FL_OP_TIMELINE_CREATE, 0, 3, sizeof(tc) }, tc },
			 sizeof(struct fl_msg_hdr) + sizeof(tc), NULL, 0);
	}
	expect_refused(sock, FL_OP_TIMELINE_CREATE, 3, -EPROTONOSUPPORT);
}

/* ---- this library against a stand-in for an older daemon ---- */

struct stand_in {
	int listen_fd;
	int32_t status; /* HELLO's answer */
	uint32_t services[FL_PROTO_MAX_SERVICES]; /* served, when status is 0 */
	ssize_t after; /* what came after HELLO: 0 for a hang-up */
	char path[108];
	char *old_socket; /* FENCELINE_SOCKET before, or NULL */
	pthread_t thread;
};

static void *stand_in_main(void *arg)
{
	struct stand_in *s = arg;
	unsigned char buf[256];
	struct fl_msg_hdr h;
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello_reply r;
	} rep;
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (recv(fd, buf, sizeof(buf), 0) >= (ssize_t)sizeof(h)) {
		memcpy(&h, buf, sizeof(h));
		memset(&rep, 0, sizeof(rep));
		rep.h = (struct fl_msg_hdr){ FL_OP_HELLO | FL_OP_REPLY, 0, h.seq, sizeof(rep.r) };
		rep.r.r.status = s->status;
		rep.r.version = FL_PROTO_VERSION;
		rep.r.pid = 4242;
		memcpy(rep.r.services, s->services, sizeof(rep.r.services));
		if (s->status)
			rep.h.len = sizeof(struct fl_msg_reply);
		(void)!send(fd, &rep, sizeof(rep.h) + rep.h.len, MSG_NOSIGNAL);
		/* The library's next packet, or its hang-up. */
		s->after = recv(fd, buf, sizeof(buf), 0);
	}
	close(fd);
	return NULL;
}

static void stand_in_start(struct stand_in *s)
{
	s->listen_fd = dl_stand_in_listen(s->path, sizeof(s->path));
	s->after = -1;
	fl_assert_int_eq(pthread_create(&s->thread, NULL, stand_in_main, s), 0);
	/* This process's connection goes to the stand-in from now on. */
	fl_daemon_disconnect();
	s->old_socket = getenv("FENCELINE_SOCKET") ? strdup(getenv("FENCELINE_SOCKET")) : NULL;
	fl_assert_int_eq(setenv("FENCELINE_SOCKET", s->path, 1), 0);
}

static void stand_in_stop(struct stand_in *s)
{
	fl_daemon_disconnect();
	if (s->old_socket)
		setenv("FENCELINE_SOCKET", s->old_socket, 1);
	else
		unsetenv("FENCELINE_SOCKET");
	free(s->old_socket);
	pthread_join(s->thread, NULL);
	dl_stand_in_remove(s->listen_fd, s->path);
}

/*
 * A daemon without the observe service: this library still talks to it,
 * and a call into observe fails with -EPROTONOSUPPORT without a request
 * (the daemon would hang up on it).
 */
FL_TEST(library_fails_calls_into_a_service_its_daemon_lacks)
{
	struct stand_in s = { .status = 0,
			      .services = { FL_PROTO_SYNC_VERSION, FL_PROTO_HEAP_VERSION, 0 } };
	pid_t pid = 0;
	int fd = -1;

	stand_in_start(&s);
	fl_assert_int_eq(fl_introspect_dump(0, &fd), -EPROTONOSUPPORT);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(fl_introspect_trace_start(0), -EPROTONOSUPPORT);
	/* Still connected to it: the HELLO went well. */
	fl_assert_int_eq(fl_introspect_get_daemon_pid(&pid), 0);
	fl_assert_int_eq(pid, 4242);
	stand_in_stop(&s);
	/* It heard nothing after HELLO but our hang-up. */
	fl_assert_int_eq(s.after, 0);
}

/*
 * A daemon of core version 8 checks HELLO's size first and answers our
 * longer one with -EPROTO: that is another protocol, said as such.
 */
FL_TEST(library_reports_a_core_version_8_daemon_as_another_protocol)
{
	struct stand_in s = { .status = -EPROTO };
	int fd = -1;

	stand_in_start(&s);
	fl_assert_int_eq(fl_introspect_dump(0, &fd), -EPROTONOSUPPORT);
	fl_assert_int_eq(fd, -1);
	stand_in_stop(&s);
	fl_assert_int_eq(s.after, 0);
}

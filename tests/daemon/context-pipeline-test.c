/* SPDX-License-Identifier: MIT */
/*
 * Requests of several threads on the process's one connection are
 * pipelined: a thread waiting for its answer holds no lock that another
 * thread's request needs, and each answer reaches the thread that asked,
 * by its sequence number, in whatever order the daemon sends them. A
 * stand-in daemon on a socket of the test's proves it without timing:
 * it answers the first request only once the second has arrived, and
 * the second first. A library that serialised the two would never send
 * the second; its first request then fails with -ETIMEDOUT after the
 * request timeout, which this test shortens.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fenceline/context.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "protocol.h"
#include "runner.h"

/* The library's request timeout here, and how long the stand-in waits for a request. */
#define REQUEST_TIMEOUT_MS "2000"
#define STAND_IN_WAIT_MS   8000

struct stand_in {
	int listen_fd;
	int got_first; /* written a byte when the first request has arrived */
	bool silent; /* answer nothing after HELLO */
	/*
	 * Answer HELLO only once a byte can be read here (-1: at once), then
	 * a TIMELINE_CREATE; got_first says when HELLO has arrived.
	 */
	int hello_gate;
	char path[108];
	char *old_socket, *old_timeout;
	pthread_t thread;
	const char *failure; /* what went wrong on its side, or NULL */
};

static void drop_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* One packet of the library, or 0 (hung up or silent for STAND_IN_WAIT_MS). */
static ssize_t next_packet(int fd, unsigned char *buf, size_t cap, int *sent_fd)
{
	union {
		struct cmsghdr h;
		char room[CMSG_SPACE(4 * sizeof(int))];
	} c;
	struct iovec iov = { buf, cap };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &c, .msg_controllen = sizeof(c)
	};
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;

	*sent_fd = -1;
	if (poll(&p, 1, STAND_IN_WAIT_MS) != 1)
		return 0;
	n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	if (n < (ssize_t)sizeof(struct fl_msg_hdr))
		return 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		int *fds = (int *)CMSG_DATA(h);
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (size_t i = 0; i < k; i++) {
			if (*sent_fd < 0)
				*sent_fd = fds[i];
			else
				close(fds[i]);
		}
	}
	return n;
}

static void reply(int fd, const void *buf, size_t len, const int *fds, unsigned int nfds)
{
	union {
		struct cmsghdr h;
		char room[CMSG_SPACE(sizeof(int))];
	} c;
	struct iovec iov = { (void *)buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		memset(&c, 0, sizeof(c));
		m.msg_control = &c;
		m.msg_controllen = CMSG_SPACE(sizeof(int));
		c.h.cmsg_level = SOL_SOCKET;
		c.h.cmsg_type = SCM_RIGHTS;
		c.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&c.h), fds, sizeof(int));
	}
	(void)!sendmsg(fd, &m, MSG_NOSIGNAL);
}

/* TIMELINE_CREATE's answer: a timeline fd (any pipe's read end will do here). */
static void answer_create(int fd, uint32_t seq)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_bind_reply b;
	} rep = { { FL_OP_TIMELINE_CREATE | FL_OP_REPLY, 0, seq, sizeof(struct fl_msg_bind_reply) },
		  { { 0 }, 5, 0 } };
	int pipe_fds[2];

	if (pipe2(pipe_fds, O_CLOEXEC) == 0) {
		reply(fd, &rep, sizeof(rep), pipe_fds, 1);
		close(pipe_fds[0]);
		close(pipe_fds[1]);
	}
}

/* Whether a byte came on @fd within STAND_IN_WAIT_MS. */
static bool byte_came(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char byte;

	return poll(&p, 1, STAND_IN_WAIT_MS) == 1 && read(fd, &byte, 1) == 1;
}

/*
 * HELLO, then two requests: a TIMELINE_GET_VALUE (answered 7, last) and a
 * TIMELINE_CREATE (answered with a pipe's read end, first). With a
 * hello_gate: HELLO once the gate opens, then one TIMELINE_CREATE.
 */
static void *stand_in_main(void *arg)
{
	struct stand_in *s = arg;
	unsigned char buf[512];
	struct fl_msg_hdr h, first;
	struct fl_msg_hello hello;
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC), sent = -1;
	char byte = 1;

	if (fd < 0) {
		s->failure = "accept failed";
		return NULL;
	}
	if (next_packet(fd, buf, sizeof(buf), &sent) <
	    (ssize_t)(sizeof(h) + sizeof(struct fl_msg_hello))) {
		s->failure = "no HELLO";
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	memcpy(&hello, buf + sizeof(h), sizeof(hello));
	if (s->hello_gate >= 0) {
		(void)!write(s->got_first, &byte, 1);
		if (!byte_came(s->hello_gate)) {
			s->failure = "the other thread's call never returned while HELLO waited";
			goto out;
		}
	}
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_hello_reply r;
		} rep;

		memset(&rep, 0, sizeof(rep));
		rep.h = (struct fl_msg_hdr){ FL_OP_HELLO | FL_OP_REPLY, 0, h.seq, sizeof(rep.r) };
		rep.r.version = FL_PROTO_VERSION;
		rep.r.pid = 4242;
		memcpy(rep.r.services, hello.services, sizeof(rep.r.services));
		reply(fd, &rep, sizeof(rep), NULL, 0);
	}
	if (next_packet(fd, buf, sizeof(buf), &sent) <= 0) {
		s->failure = "no first request";
		goto out;
	}
	drop_fd(sent);
	memcpy(&first, buf, sizeof(first));
	if (s->hello_gate >= 0) {
		if (first.op == FL_OP_TIMELINE_CREATE)
			answer_create(fd, first.seq);
		else
			s->failure = "unexpected request";
		goto drain;
	}
	(void)!write(s->got_first, &byte, 1);
	if (s->silent) {
		/* Until the library hangs up, which must come before the request timeout. */
		while (next_packet(fd, buf, sizeof(buf), &sent) > 0)
			drop_fd(sent);
		goto out;
	}
	if (next_packet(fd, buf, sizeof(buf), &sent) <= 0) {
		s->failure = "the second request never came while the first waited for its answer";
		goto out;
	}
	drop_fd(sent);
	memcpy(&h, buf, sizeof(h));
	if (first.op != FL_OP_TIMELINE_GET_VALUE || h.op != FL_OP_TIMELINE_CREATE) {
		s->failure = "unexpected requests";
		goto out;
	}
	/* The second first. */
	answer_create(fd, h.seq);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_value_reply v;
		} rep = { { FL_OP_TIMELINE_GET_VALUE | FL_OP_REPLY, 0, first.seq,
			    sizeof(struct fl_msg_value_reply) },
			  { { 0 }, 7 } };

		reply(fd, &rep, sizeof(rep), NULL, 0);
	}
drain:
	/* Until the library hangs up. */
	while (next_packet(fd, buf, sizeof(buf), &sent) > 0)
		drop_fd(sent);
out:
	close(fd);
	return NULL;
}

static void stand_in_start(struct stand_in *s, int got_first)
{
	const char *env;

	s->listen_fd = dl_stand_in_listen(s->path, sizeof(s->path));
	s->got_first = got_first;
	fl_assert_int_eq(pthread_create(&s->thread, NULL, stand_in_main, s), 0);
	/* This process's connection goes to the stand-in from now on. */
	fl_daemon_disconnect();
	env = getenv("FENCELINE_SOCKET");
	s->old_socket = env ? strdup(env) : NULL;
	env = getenv("FENCELINE_REQUEST_TIMEOUT_MS");
	s->old_timeout = env ? strdup(env) : NULL;
	fl_assert_int_eq(setenv("FENCELINE_SOCKET", s->path, 1), 0);
	fl_assert_int_eq(setenv("FENCELINE_REQUEST_TIMEOUT_MS", REQUEST_TIMEOUT_MS, 1), 0);
}

static void restore(const char *name, char *old)
{
	if (old)
		setenv(name, old, 1);
	else
		unsetenv(name);
	free(old);
}

static void stand_in_stop(struct stand_in *s)
{
	fl_daemon_disconnect();
	restore("FENCELINE_SOCKET", s->old_socket);
	restore("FENCELINE_REQUEST_TIMEOUT_MS", s->old_timeout);
	pthread_join(s->thread, NULL);
	dl_stand_in_remove(s->listen_fd, s->path);
}

struct asker {
	int fd; /* what it asks about */
	uint64_t value;
	int r;
};

static void *ask_value(void *arg)
{
	struct asker *a = arg;

	a->r = fl_timeline_fd_get_value(a->fd, &a->value);
	return NULL;
}

FL_TEST(a_request_completes_while_another_threads_waits_for_its_answer)
{
	struct stand_in s = { .failure = NULL, .hello_gate = -1 };
	struct asker a = { -1, 0, 1 };
	int sv[2], go[2], tl = -1, r;
	pthread_t t;
	char byte;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	stand_in_start(&s, go[1]);
	/* The first request: its answer comes only after the second request's. */
	a.fd = sv[0];
	fl_assert_int_eq(pthread_create(&t, NULL, ask_value, &a), 0);
	fl_assert_int_eq(read(go[0], &byte, 1), 1);
	/* The second, a creation, while the first waits. */
	r = fl_timeline_fd_create("second", 0, &tl);
	if (r != 0)
		fl__test_fail(__FILE__, __LINE__,
			      "the second request failed (%s) while the first waited; stand-in: %s",
			      strerror(-r), s.failure ? s.failure : "no complaint");
	fl_assert_int_eq(pthread_join(t, NULL), 0);
	if (a.r != 0)
		fl__test_fail(__FILE__, __LINE__, "the first request failed (%s); stand-in: %s",
			      strerror(-a.r), s.failure ? s.failure : "no complaint");
	/* Each got its own answer. */
	fl_assert_int_eq(a.value, 7);
	fl_assert(tl >= 0);
	close(tl);
	stand_in_stop(&s);
	fl_assert(s.failure == NULL);
	close(go[0]);
	close(go[1]);
	close(sv[0]);
	close(sv[1]);
}

/*
 * fl_daemon_disconnect() while another thread waits for an answer (maybe
 * in recvmsg() on the connection): that thread's request fails at once
 * with -ECONNRESET, not with -ETIMEDOUT once the silent daemon's request
 * timeout ran out, and the connection's fd is closed.
 */
FL_TEST(a_disconnect_fails_the_requests_waiting_on_the_connection)
{
	struct stand_in s = { .failure = NULL, .silent = true, .hello_gate = -1 };
	struct asker a = { -1, 0, 1 };
	struct fl_test_fd_snapshot base;
	int sv[2], go[2];
	pthread_t t;
	char byte;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	stand_in_start(&s, go[1]);
	fl_test_fd_snapshot(&base);
	a.fd = sv[0];
	fl_assert_int_eq(pthread_create(&t, NULL, ask_value, &a), 0);
	fl_assert_int_eq(read(go[0], &byte, 1), 1);
	fl_daemon_disconnect();
	fl_assert_int_eq(pthread_join(t, NULL), 0);
	if (a.r != -ECONNRESET)
		fl__test_fail(
			__FILE__, __LINE__,
			"the waiting request ended with %s, not -ECONNRESET at the disconnect",
			strerror(-a.r));
	/* Neither the connection nor anything of it is left open. */
	fl_test_wait_fds_back(&base);
	stand_in_stop(&s);
	close(go[0]);
	close(go[1]);
	close(sv[0]);
	close(sv[1]);
}

struct closer {
	int index;
	int failures;
	char what[128];
};

/*
 * Each thread makes a timeline and a fence on it, asks for the value, and
 * closes the timeline with fl_timeline_fd_close(), whose PING the daemon
 * answers after the requests read with it: the answers of the threads'
 * requests come back out of order, and each must reach its own thread.
 */
static void *close_and_ask(void *arg)
{
	struct closer *c = arg;

	for (int i = 0; i < 200 && !c->failures; i++) {
		int tl = -1, f = -1, r;
		uint64_t v = 1;

		r = fl_timeline_fd_create("closer", 0, &tl);
		if (r == 0)
			r = fl_timeline_fd_inc(tl, (uint64_t)c->index);
		if (r == 0)
			r = fl_fence_fd_create(tl, 1000, "closer", &f);
		if (r == 0)
			r = fl_timeline_fd_get_value(tl, &v);
		if (r == 0 && v != (uint64_t)c->index)
			r = -EPROTO;
		if (r == 0)
			r = fl_timeline_fd_close(tl);
		if (r == 0)
			r = fl_fence_fd_get_status(f) == -ENOENT ? 0 : -EBADMSG;
		if (r < 0) {
			c->failures++;
			snprintf(c->what, sizeof(c->what), "thread %d round %d: %s", c->index, i,
				 strerror(-r));
		}
		if (f >= 0)
			close(f);
	}
	return NULL;
}

FL_TEST(threads_get_their_own_answers_when_the_daemon_answers_out_of_order)
{
	struct closer c[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		c[i] = (struct closer){ .index = i + 1 };
		fl_assert_int_eq(pthread_create(&t[i], NULL, close_and_ask, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		fl_assert_int_eq(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < 4; i++)
		if (c[i].failures)
			fl__test_fail(__FILE__, __LINE__, "%s", c[i].what);
}

struct creator {
	int tl;
	int r;
};

static void *create_timeline(void *arg)
{
	struct creator *c = arg;

	c->r = fl_timeline_fd_create("slow-hello", 0, &c->tl);
	return NULL;
}

/*
 * While one thread connects (its HELLO unanswered), another thread's call
 * that needs no connection returns: connecting holds no lock the others
 * take. The stand-in answers HELLO only once that call has returned.
 */
FL_TEST(a_call_needing_no_connection_returns_while_another_thread_connects)
{
	struct stand_in s = { .failure = NULL };
	struct creator c = { -1, 1 };
	int sv[2], go[2], gate[2];
	pthread_t t;
	char byte = 1;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(gate, O_CLOEXEC), 0);
	s.hello_gate = gate[0];
	stand_in_start(&s, go[1]);
	fl_assert_int_eq(pthread_create(&t, NULL, create_timeline, &c), 0);
	fl_assert_int_eq(read(go[0], &byte, 1), 1);
	/* Not the core's: it syncs the daemon's closes if there is a connection. */
	fl_assert_int_eq(fl_timeline_fd_close(sv[0]), 0);
	fl_assert_int_eq(write(gate[1], &byte, 1), 1);
	fl_assert_int_eq(pthread_join(t, NULL), 0);
	if (c.r != 0)
		fl__test_fail(__FILE__, __LINE__,
			      "the connecting thread failed (%s): the other call waited for it; "
			      "stand-in: %s",
			      strerror(-c.r), s.failure ? s.failure : "no complaint");
	close(c.tl);
	stand_in_stop(&s);
	fl_assert(s.failure == NULL);
	close(go[0]);
	close(go[1]);
	close(gate[0]);
	close(gate[1]);
	close(sv[1]);
}

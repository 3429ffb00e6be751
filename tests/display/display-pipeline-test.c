/* SPDX-License-Identifier: MIT */
/*
 * The display client's connection is fencelined's (src/client/rpc.c): the
 * requests of several threads are pipelined, so a request the service
 * holds does not hold up the others, and a disconnect or a service that
 * dies fails every waiting request with -ECONNRESET at once. A stand-in
 * service on a socket of the test's proves it without timing, as
 * tests/daemon/context-pipeline-test.c does for fencelined: it answers the
 * held request only once the test says the other request has returned
 * (or, with the old serialising client, after STAND_IN_WAIT_MS, noting
 * that it never came).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fenceline/display.h>

#include "daemon-helpers.h"
#include "display.h"
#include "runner.h"

/* How long the stand-in waits for what a pipelining client sends at once. */
#define STAND_IN_WAIT_MS 5000

enum script {
	/* Hold the first DEVICES; answer the second, then the first once told. */
	HOLD_FIRST,
	/* Hold the first DEVICES until told the client disconnected, then answer it. */
	HOLD_UNTIL_DISCONNECTED,
	/* Take two DEVICES, then hang up (a service that died mid-request). */
	DIE_WITH_TWO,
};

struct stand_in {
	enum script script;
	int listen_fd;
	int got[2]; /* a byte for each request that arrived */
	int go[2]; /* the test's word to answer the held request */
	char path[108];
	char *old_socket;
	pthread_t thread;
	const char *failure; /* what went wrong on its side, or NULL */
};

/* One request of the library, or 0 (hung up, or nothing for STAND_IN_WAIT_MS). */
static ssize_t next_request(int fd, unsigned char *buf, size_t cap)
{
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;

	if (poll(&p, 1, STAND_IN_WAIT_MS) != 1)
		return 0;
	n = recv(fd, buf, cap, 0);
	return n < (ssize_t)sizeof(struct fl_msg_hdr) ? 0 : n;
}

static bool byte_came(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char byte;

	return poll(&p, 1, STAND_IN_WAIT_MS) == 1 && read(fd, &byte, 1) == 1;
}

/* DEVICES answered with @count ids, 1..@count. */
static void answer_devices(int fd, uint32_t seq, uint32_t count)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_devices_reply d;
		uint32_t ids[4];
	} rep;
	size_t len = sizeof(rep.d) + count * sizeof(uint32_t);

	memset(&rep, 0, sizeof(rep));
	rep.h = (struct fl_msg_hdr){ FL_DOP_DEVICES | FL_OP_REPLY, 0, seq, (uint32_t)len };
	rep.d.count = count;
	for (uint32_t i = 0; i < count; i++)
		rep.ids[i] = i + 1;
	(void)!send(fd, &rep, sizeof(rep.h) + len, MSG_NOSIGNAL);
}

static void *stand_in_main(void *arg)
{
	struct stand_in *s = arg;
	unsigned char buf[512];
	struct fl_msg_hdr h, first;
	int c = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_hello_reply r;
	} hello;

	if (c < 0 || next_request(c, buf, sizeof(buf)) == 0) {
		s->failure = "no HELLO";
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	memset(&hello, 0, sizeof(hello));
	hello.h = (struct fl_msg_hdr){ FL_DOP_HELLO | FL_OP_REPLY, 0, h.seq, sizeof(hello.r) };
	hello.r.version = FL_DPROTO_VERSION;
	hello.r.pid = (uint32_t)getpid();
	(void)!send(c, &hello, sizeof(hello), MSG_NOSIGNAL);
	if (next_request(c, buf, sizeof(buf)) == 0) {
		s->failure = "no first request";
		goto out;
	}
	memcpy(&first, buf, sizeof(first));
	(void)!write(s->got[1], "1", 1);
	if (s->script == HOLD_UNTIL_DISCONNECTED) {
		if (!byte_came(s->go[0]))
			s->failure =
				"fl_display_disconnect() did not return while a request waited";
		answer_devices(c, first.seq, 1);
		goto out;
	}
	if (next_request(c, buf, sizeof(buf)) == 0) {
		s->failure =
			"the second request was not sent while the first waited for its answer";
		answer_devices(c, first.seq, 1);
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	(void)!write(s->got[1], "2", 1);
	if (s->script == DIE_WITH_TWO)
		goto out;
	answer_devices(c, h.seq, 2);
	if (!byte_came(s->go[0]))
		s->failure = "the second request's answer did not reach its thread";
	answer_devices(c, first.seq, 1);
	/* Until the client is done with the connection. */
	(void)next_request(c, buf, sizeof(buf));
out:
	if (c >= 0)
		close(c);
	return NULL;
}

static void stand_in_start(struct stand_in *s, enum script script)
{
	const char *old = getenv("FENCELINE_DISPLAY_SOCKET");

	s->script = script;
	s->failure = NULL;
	s->old_socket = old ? strdup(old) : NULL;
	fl_assert_int_eq(pipe(s->got), 0);
	fl_assert_int_eq(pipe(s->go), 0);
	s->listen_fd = dl_stand_in_listen(s->path, sizeof(s->path));
	fl_assert_int_eq(pthread_create(&s->thread, NULL, stand_in_main, s), 0);
	/* This process's display connection goes to the stand-in from now on. */
	fl_display_disconnect();
	fl_assert_int_eq(setenv("FENCELINE_DISPLAY_SOCKET", s->path, 1), 0);
}

static void stand_in_stop(struct stand_in *s)
{
	fl_display_disconnect();
	fl_assert_int_eq(pthread_join(s->thread, NULL), 0);
	if (s->old_socket)
		setenv("FENCELINE_DISPLAY_SOCKET", s->old_socket, 1);
	else
		unsetenv("FENCELINE_DISPLAY_SOCKET");
	free(s->old_socket);
	dl_stand_in_remove(s->listen_fd, s->path);
	for (int i = 0; i < 2; i++) {
		close(s->got[i]);
		close(s->go[i]);
	}
	if (s->failure)
		fl__test_fail(__FILE__, __LINE__, "stand-in: %s", s->failure);
}

struct ask {
	pthread_t thread;
	int ret;
};

static void *ask_devices(void *arg)
{
	struct ask *a = arg;
	uint32_t *ids = NULL;

	a->ret = fl_display_devices(&ids);
	free(ids);
	return NULL;
}

FL_TEST(a_display_request_completes_while_another_threads_waits_for_its_answer)
{
	struct stand_in s;
	struct ask held;
	uint32_t *ids = NULL;
	char byte;
	int r;

	stand_in_start(&s, HOLD_FIRST);
	fl_assert_int_eq(pthread_create(&held.thread, NULL, ask_devices, &held), 0);
	fl_assert_int_eq(read(s.got[0], &byte, 1), 1);
	/* The first is held: this one must not wait for it. */
	r = fl_display_devices(&ids);
	free(ids);
	(void)!write(s.go[1], "g", 1);
	fl_assert_int_eq(pthread_join(held.thread, NULL), 0);
	stand_in_stop(&s);
	fl_assert_int_eq(r, 2);
	fl_assert_int_eq(held.ret, 1);
}

FL_TEST(a_display_disconnect_fails_the_requests_waiting_on_it_at_once)
{
	struct stand_in s;
	struct ask held;
	char byte;

	stand_in_start(&s, HOLD_UNTIL_DISCONNECTED);
	fl_assert_int_eq(pthread_create(&held.thread, NULL, ask_devices, &held), 0);
	fl_assert_int_eq(read(s.got[0], &byte, 1), 1);
	fl_display_disconnect();
	fl_assert_int_eq(pthread_join(held.thread, NULL), 0);
	(void)!write(s.go[1], "g", 1);
	stand_in_stop(&s);
	fl_assert_int_eq(held.ret, -ECONNRESET);
}

FL_TEST(a_display_service_that_dies_fails_every_waiting_request)
{
	struct stand_in s;
	struct ask a, b;
	char byte;

	stand_in_start(&s, DIE_WITH_TWO);
	fl_assert_int_eq(pthread_create(&a.thread, NULL, ask_devices, &a), 0);
	fl_assert_int_eq(read(s.got[0], &byte, 1), 1);
	fl_assert_int_eq(pthread_create(&b.thread, NULL, ask_devices, &b), 0);
	fl_assert_int_eq(pthread_join(a.thread, NULL), 0);
	fl_assert_int_eq(pthread_join(b.thread, NULL), 0);
	stand_in_stop(&s);
	fl_assert_int_eq(a.ret, -ECONNRESET);
	fl_assert_int_eq(b.ret, -ECONNRESET);
}

/* SPDX-License-Identifier: MIT */
/*
 * fl_send()/fl_recv() and the fence and timeline wrappers: round trips on
 * every socket type, partial sends, signals, truncated and malformed
 * messages, end of stream, non-blocking sockets, and fences passed to and
 * from a forked child.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

#define MAX_FDS	      FL_TRANSFER_MAX_FDS
#define MAX_PAYLOAD   FL_TRANSFER_MAX_PAYLOAD
#define SENTINEL      0x5e17
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The wire header, written by hand to forge messages. */
struct raw_header {
	uint32_t magic;
	uint16_t version;
	uint16_t nfds;
	uint32_t payload_len;
	uint32_t reserved;
};

static const int socket_types[] = { SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM };

static void make_pair(int type, int sv[2])
{
	fl_assert_int_eq(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
}

static void close_pair(int sv[2])
{
	close(sv[0]);
	close(sv[1]);
}

static void set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	fl_assert_int_ge(flags, 0);
	fl_assert_int_eq(fcntl(fd, F_SETFL, flags | O_NONBLOCK), 0);
}

static void fill(unsigned char *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 7 + seed);
}

static int matches(const unsigned char *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (unsigned char)(i * 7 + seed))
			return 0;
	return 1;
}

static void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	fl_assert(p != NULL);
	return p;
}

/* A valid header, as fl_send() writes it (the magic is read off a real one). */
static struct raw_header real_header(uint16_t nfds, uint32_t payload_len)
{
	struct raw_header h;
	int sv[2];

	make_pair(SOCK_STREAM, sv);
	fl_assert_int_eq(fl_send(sv[0], NULL, 0, NULL, 0), 0);
	fl_assert_int_eq(read(sv[1], &h, sizeof(h)), sizeof(h));
	close_pair(sv);
	fl_assert_int_eq(h.version, 1);
	fl_assert_int_eq(h.nfds, 0);
	fl_assert_int_eq(h.payload_len, 0);
	fl_assert_int_eq(h.reserved, 0);
	h.nfds = nfds;
	h.payload_len = payload_len;
	return h;
}

/* One sendmsg() of @len bytes with @nfds fds, bypassing fl_send(). */
static void raw_send(int sock, const void *data, size_t len, const int *fds, unsigned int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 64)];
	} cbuf;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	fl_assert(nfds <= 64);
	if (nfds) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	fl_assert_int_eq(sendmsg(sock, &msg, MSG_NOSIGNAL), len);
}

/* @n dups of the read end of a new pipe; returns the pipe's inode. */
static ino_t dup_pipe(int *fds, unsigned int n)
{
	struct stat st;
	int p[2];

	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fstat(p[0], &st), 0);
	for (unsigned int i = 0; i < n; i++) {
		fds[i] = fcntl(p[0], F_DUPFD_CLOEXEC, 3);
		fl_assert_int_ge(fds[i], 0);
	}
	close(p[0]);
	close(p[1]);
	return st.st_ino;
}

static void close_fds(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

static void expect_received_pipe(int fd, ino_t ino)
{
	struct stat st;

	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert_int_eq(st.st_ino, ino);
	fl_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

static void round_trip(int type, unsigned int nfds, size_t len)
{
	unsigned char *out = xmalloc(len), *in = xmalloc(MAX_PAYLOAD);
	int fds[MAX_FDS], got[MAX_FDS];
	unsigned int got_n = SENTINEL;
	size_t got_len = SENTINEL;
	ino_t ino = dup_pipe(fds, nfds);
	int sv[2];

	make_pair(type, sv);
	fill(out, len, nfds);
	fl_assert_int_eq(fl_send(sv[0], out, len, fds, nfds), 0);
	close_fds(fds, nfds);
	fl_assert_int_eq(fl_recv(sv[1], in, MAX_PAYLOAD, &got_len, got, MAX_FDS, &got_n), 0);
	fl_assert_int_eq(got_len, len);
	fl_assert_int_eq(got_n, nfds);
	fl_assert(matches(in, len, nfds));
	for (unsigned int i = 0; i < nfds; i++)
		expect_received_pipe(got[i], ino);
	close_fds(got, got_n);
	close_pair(sv);
	free(out);
	free(in);
}

FL_TEST(round_trip_on_stream_seqpacket_and_dgram_with_0_1_and_28_fds)
{
	static const size_t lens[] = { 0, 1, 1000, MAX_PAYLOAD - 1, MAX_PAYLOAD };
	static const unsigned int nfds[] = { 0, 1, MAX_FDS };
	struct fl_test_fd_snapshot base;

	fl_test_fd_snapshot(&base);
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++)
		for (size_t f = 0; f < ARRAY_SIZE(nfds); f++)
			for (size_t l = 0; l < ARRAY_SIZE(lens); l++)
				round_trip(socket_types[t], nfds[f], lens[l]);
	fl_test_expect_new_fds(&base, 0);
}

FL_TEST(messages_stay_in_order_and_apart_on_a_stream)
{
	unsigned char buf[64];
	size_t len;
	int sv[2];

	make_pair(SOCK_STREAM, sv);
	for (unsigned int i = 0; i < 10; i++) {
		fill(buf, i, i);
		fl_assert_int_eq(fl_send(sv[0], buf, i, NULL, 0), 0);
	}
	for (unsigned int i = 0; i < 10; i++) {
		fl_assert_int_eq(fl_recv(sv[1], buf, sizeof(buf), &len, NULL, 0, NULL), 0);
		fl_assert_int_eq(len, i);
		fl_assert(matches(buf, len, i));
	}
	close_pair(sv);
}

/* A reader thread for the stream tests: checks @count numbered messages. */
struct reader {
	int sock;
	unsigned int count;
	size_t len;
	bool nonblocking;
	atomic_bool done;
	int failed; /* the step that failed, 0 if none */
};

static int read_one(struct reader *r, unsigned char *buf, unsigned int seq)
{
	int fds[MAX_FDS];
	unsigned int nfds;
	size_t len;
	int ret;

	for (;;) {
		ret = fl_recv(r->sock, buf, MAX_PAYLOAD, &len, fds, MAX_FDS, &nfds);
		if (ret != -EAGAIN || !r->nonblocking)
			break;
		fl_test_poll_fd(r->sock, POLLIN, 1000);
	}
	if (ret != 0)
		return 1;
	close_fds(fds, nfds);
	if (nfds != 1)
		return 2;
	if (len != r->len || !matches(buf, len, seq))
		return 3;
	return 0;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	unsigned char *buf = malloc(MAX_PAYLOAD);

	for (unsigned int i = 0; buf && i < r->count && !r->failed; i++)
		r->failed = read_one(r, buf, i);
	if (!buf)
		r->failed = 9;
	free(buf);
	atomic_store(&r->done, true);
	return NULL;
}

static void send_numbered(int sock, unsigned int count, size_t len, bool nonblocking)
{
	unsigned char *buf = xmalloc(len);
	int fd;

	dup_pipe(&fd, 1);
	for (unsigned int i = 0; i < count; i++) {
		int ret;

		fill(buf, len, i);
		while ((ret = fl_send(sock, buf, len, &fd, 1)) == -EAGAIN && nonblocking)
			fl_test_poll_fd(sock, POLLOUT, 1000);
		fl_assert_int_eq(ret, 0);
	}
	close(fd);
	free(buf);
}

static void stream_with_small_buffers(bool nonblocking)
{
	struct reader r = { .count = 20, .len = MAX_PAYLOAD, .nonblocking = nonblocking };
	int sv[2], small = 4096;
	pthread_t thread;

	make_pair(SOCK_STREAM, sv);
	fl_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	fl_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	if (nonblocking) {
		set_nonblocking(sv[0]);
		set_nonblocking(sv[1]);
	}
	r.sock = sv[1];
	fl_assert_int_eq(pthread_create(&thread, NULL, reader_main, &r), 0);
	send_numbered(sv[0], r.count, r.len, nonblocking);
	fl_assert_int_eq(pthread_join(thread, NULL), 0);
	fl_assert_int_eq(r.failed, 0);
	close_pair(sv);
}

FL_TEST(stream_partial_sends_reach_a_reader_thread_whole)
{
	stream_with_small_buffers(false);
}

FL_TEST(nonblocking_stream_finishes_a_started_message_on_both_ends)
{
	stream_with_small_buffers(true);
}

static atomic_int signals_seen;

static void on_signal(int sig)
{
	atomic_fetch_add(&signals_seen, 1);
}

struct signaller {
	pthread_t targets[2];
	atomic_bool stop;
};

static void *signaller_main(void *arg)
{
	struct signaller *s = arg;

	while (!atomic_load(&s->stop)) {
		pthread_kill(s->targets[0], SIGUSR1);
		pthread_kill(s->targets[1], SIGUSR1);
		usleep(200);
	}
	return NULL;
}

static void transfer_under_signals(int type, size_t len, unsigned int count)
{
	struct reader r = { .count = count, .len = len };
	struct signaller s = { .targets = { pthread_self() } };
	pthread_t reader_thread, signaller_thread;
	int sv[2];

	make_pair(type, sv);
	r.sock = sv[1];
	fl_assert_int_eq(pthread_create(&reader_thread, NULL, reader_main, &r), 0);
	s.targets[1] = reader_thread;
	fl_assert_int_eq(pthread_create(&signaller_thread, NULL, signaller_main, &s), 0);
	send_numbered(sv[0], count, len, false);
	/* Keep signalling the reader until it is done, then stop. */
	while (!atomic_load(&r.done))
		fl_test_sleep_ms(1);
	atomic_store(&s.stop, true);
	fl_assert_int_eq(pthread_join(signaller_thread, NULL), 0);
	fl_assert_int_eq(pthread_join(reader_thread, NULL), 0);
	fl_assert_int_eq(r.failed, 0);
	close_pair(sv);
}

FL_TEST(signals_during_blocking_send_and_recv_lose_and_duplicate_nothing)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */

	sigemptyset(&sa.sa_mask);
	fl_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	transfer_under_signals(SOCK_STREAM, MAX_PAYLOAD, 60);
	transfer_under_signals(SOCK_SEQPACKET, 1000, 300);
	fl_assert_int_ge(atomic_load(&signals_seen), 1);
}

FL_TEST(more_fds_than_max_fds_is_emsgsize_and_leaks_nothing)
{
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++) {
		int fds[3], got[3] = { SENTINEL, SENTINEL, SENTINEL };
		unsigned int got_n = SENTINEL;
		size_t got_len = SENTINEL;
		struct fl_test_fd_snapshot base;
		char buf[8];
		int sv[2];

		make_pair(socket_types[t], sv);
		dup_pipe(fds, 3);
		fl_assert_int_eq(fl_send(sv[0], "abc", 3, fds, 3), 0);
		fl_assert_int_eq(fl_send(sv[0], "next", 4, fds, 1), 0);
		close_fds(fds, 3);
		fl_test_fd_snapshot(&base);
		fl_assert_int_eq(fl_recv(sv[1], buf, sizeof(buf), &got_len, got, 2, &got_n),
				 -EMSGSIZE);
		fl_test_expect_new_fds(&base, 0);
		fl_assert_int_eq(got[0], SENTINEL);
		fl_assert_int_eq(got[1], SENTINEL);
		fl_assert_int_eq(got_n, SENTINEL);
		fl_assert_int_eq(got_len, SENTINEL);
		/* The failed message is gone whole: the next one reads fine. */
		fl_assert_int_eq(fl_recv(sv[1], buf, sizeof(buf), &got_len, got, 2, &got_n), 0);
		fl_assert_int_eq(got_len, 4);
		fl_assert_int_eq(got_n, 1);
		fl_assert(memcmp(buf, "next", 4) == 0);
		close(got[0]);
		close_pair(sv);
	}
}

FL_TEST(kernel_truncated_fds_msg_ctrunc_is_emsgsize_and_leaks_nothing)
{
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++) {
		struct raw_header h = real_header(MAX_FDS, 0);
		struct fl_test_fd_snapshot base;
		int fds[40], got[MAX_FDS];
		unsigned int got_n;
		int sv[2];

		make_pair(socket_types[t], sv);
		dup_pipe(fds, 40);
		/* More fds than the receiver's control buffer holds. */
		raw_send(sv[0], &h, sizeof(h), fds, 40);
		close_fds(fds, 40);
		fl_test_fd_snapshot(&base);
		fl_assert_int_eq(fl_recv(sv[1], NULL, 0, NULL, got, MAX_FDS, &got_n), -EMSGSIZE);
		fl_test_expect_new_fds(&base, 0);
		close_pair(sv);
	}
}

FL_TEST(payload_larger_than_cap_is_emsgsize)
{
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++) {
		unsigned char out[100], in[100];
		size_t len = SENTINEL;
		int sv[2];

		make_pair(socket_types[t], sv);
		fill(out, sizeof(out), 3);
		fl_assert_int_eq(fl_send(sv[0], out, sizeof(out), NULL, 0), 0);
		fl_assert_int_eq(fl_send(sv[0], out, 10, NULL, 0), 0);
		fl_assert_int_eq(fl_recv(sv[1], in, 99, &len, NULL, 0, NULL), -EMSGSIZE);
		fl_assert_int_eq(len, SENTINEL);
		fl_assert_int_eq(fl_recv(sv[1], in, 99, &len, NULL, 0, NULL), 0);
		fl_assert_int_eq(len, 10);
		fl_assert(matches(in, 10, 3));
		close_pair(sv);
	}
}

/* Sends @h (plus @extra payload bytes) with two pipe fds; expects -EPROTO. */
static void expect_eproto(int type, struct raw_header h, size_t extra)
{
	unsigned char msg[sizeof(h) + 64] = { 0 };
	struct fl_test_fd_snapshot base;
	int fds[2], got[MAX_FDS];
	unsigned int got_n = SENTINEL;
	int sv[2];

	fl_assert(extra <= 64);
	make_pair(type, sv);
	memcpy(msg, &h, sizeof(h));
	dup_pipe(fds, 2);
	raw_send(sv[0], msg, sizeof(h) + extra, fds, 2);
	close_fds(fds, 2);
	fl_test_fd_snapshot(&base);
	fl_assert_int_eq(fl_recv(sv[1], msg, sizeof(msg), NULL, got, MAX_FDS, &got_n), -EPROTO);
	fl_test_expect_new_fds(&base, 0);
	fl_assert_int_eq(got_n, SENTINEL);
	close_pair(sv);
}

FL_TEST(malformed_headers_are_eproto_and_their_fds_closed)
{
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++) {
		int type = socket_types[t];
		struct raw_header h;

		h = real_header(2, 4);
		h.magic ^= 1;
		expect_eproto(type, h, 4);
		h = real_header(2, 4);
		h.version = 2;
		expect_eproto(type, h, 4);
		h = real_header(2, 4);
		h.reserved = 1;
		expect_eproto(type, h, 4);
		/* The header's fd count disagrees with what arrived. */
		expect_eproto(type, real_header(1, 4), 4);
		expect_eproto(type, real_header(3, 4), 4);
		expect_eproto(type, real_header(MAX_FDS + 1, 4), 4);
		expect_eproto(type, real_header(2, MAX_PAYLOAD + 1), 4);
	}
	/* A datagram that is shorter or longer than its header says. */
	expect_eproto(SOCK_DGRAM, real_header(2, 8), 4);
	expect_eproto(SOCK_SEQPACKET, real_header(2, 4), 8);
}

FL_TEST(short_datagram_is_eproto)
{
	int sv[2];

	make_pair(SOCK_DGRAM, sv);
	fl_assert_int_eq(send(sv[0], "tiny", 4, 0), 4);
	fl_assert_int_eq(send(sv[0], "", 0, 0), 0);
	fl_assert_int_eq(fl_recv(sv[1], NULL, 0, NULL, NULL, 0, NULL), -EPROTO);
	fl_assert_int_eq(fl_recv(sv[1], NULL, 0, NULL, NULL, 0, NULL), -EPROTO);
	close_pair(sv);
}

FL_TEST(eof_at_a_message_boundary_is_enotconn)
{
	for (size_t t = 0; t < 2; t++) {
		int sv[2];

		make_pair(socket_types[t], sv);
		fl_assert_int_eq(fl_send(sv[0], "x", 1, NULL, 0), 0);
		close(sv[0]);
		fl_assert_int_eq(fl_recv(sv[1], NULL, 0, NULL, NULL, 0, NULL), -EMSGSIZE);
		fl_assert_int_eq(fl_recv(sv[1], NULL, 0, NULL, NULL, 0, NULL), -ENOTCONN);
		close(sv[1]);
	}
}

FL_TEST(eof_in_the_middle_of_a_stream_message_is_econnreset_and_closes_fds)
{
	struct raw_header h = real_header(2, 100);
	unsigned char msg[sizeof(h) + 50] = { 0 };
	struct fl_test_fd_snapshot base;
	int fds[2], got[MAX_FDS];
	unsigned int got_n;
	int sv[2];

	/* Cut in the payload, with fds attached to the header. */
	make_pair(SOCK_STREAM, sv);
	memcpy(msg, &h, sizeof(h));
	dup_pipe(fds, 2);
	raw_send(sv[0], msg, sizeof(msg), fds, 2);
	close_fds(fds, 2);
	close(sv[0]);
	fl_test_fd_snapshot(&base);
	fl_assert_int_eq(fl_recv(sv[1], msg, sizeof(msg), NULL, got, MAX_FDS, &got_n), -ECONNRESET);
	fl_test_expect_new_fds(&base, 0);
	close(sv[1]);

	/* Cut in the header. */
	make_pair(SOCK_STREAM, sv);
	raw_send(sv[0], &h, 5, NULL, 0);
	close(sv[0]);
	fl_assert_int_eq(fl_recv(sv[1], msg, sizeof(msg), NULL, NULL, 0, NULL), -ECONNRESET);
	close(sv[1]);
}

FL_TEST(nonblocking_recv_with_nothing_queued_is_eagain)
{
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++) {
		size_t len = SENTINEL;
		char buf[4];
		int sv[2];

		make_pair(socket_types[t], sv);
		set_nonblocking(sv[1]);
		fl_assert_int_eq(fl_recv(sv[1], buf, sizeof(buf), &len, NULL, 0, NULL), -EAGAIN);
		fl_assert_int_eq(len, SENTINEL);
		close_pair(sv);
	}
}

FL_TEST(nonblocking_send_on_a_full_socket_is_eagain_and_sends_nothing)
{
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++) {
		unsigned int sent = 0, seq;
		unsigned char buf[16];
		size_t len;
		int sv[2], ret;

		make_pair(socket_types[t], sv);
		set_nonblocking(sv[0]);
		set_nonblocking(sv[1]);
		/* Small messages each fit one kernel buffer, so none is split. */
		for (;;) {
			fill(buf, sizeof(buf), sent);
			ret = fl_send(sv[0], buf, sizeof(buf), NULL, 0);
			if (ret == -EAGAIN)
				break;
			fl_assert_int_eq(ret, 0);
			sent++;
			fl_assert(sent < 1000000);
		}
		fl_assert_int_ge(sent, 1);
		for (seq = 0; seq < sent; seq++) {
			fl_assert_int_eq(fl_recv(sv[1], buf, sizeof(buf), &len, NULL, 0, NULL), 0);
			fl_assert_int_eq(len, sizeof(buf));
			fl_assert(matches(buf, len, seq));
		}
		fl_assert_int_eq(fl_recv(sv[1], buf, sizeof(buf), &len, NULL, 0, NULL), -EAGAIN);
		close_pair(sv);
	}
}

struct slow_writer {
	int sock;
	int fd;
};

static void *slow_writer_main(void *arg)
{
	struct slow_writer *w = arg;
	struct raw_header h = real_header(1, 1000);
	unsigned char msg[sizeof(h) + 1000];

	memcpy(msg, &h, sizeof(h));
	fill(msg + sizeof(h), 1000, 5);
	raw_send(w->sock, msg, sizeof(h) + 300, &w->fd, 1);
	fl_test_sleep_ms(20);
	raw_send(w->sock, msg + sizeof(h) + 300, 700, NULL, 0);
	return NULL;
}

FL_TEST(nonblocking_recv_waits_for_the_rest_of_a_started_message)
{
	struct slow_writer w;
	unsigned char buf[1000];
	unsigned int nfds;
	pthread_t thread;
	size_t len;
	int sv[2], fd;

	make_pair(SOCK_STREAM, sv);
	set_nonblocking(sv[1]);
	w.sock = sv[0];
	dup_pipe(&w.fd, 1);
	fl_assert_int_eq(pthread_create(&thread, NULL, slow_writer_main, &w), 0);
	fl_assert(fl_test_poll_fd(sv[1], POLLIN, 30000) & POLLIN);
	fl_assert_int_eq(fl_recv(sv[1], buf, sizeof(buf), &len, &fd, 1, &nfds), 0);
	fl_assert_int_eq(pthread_join(thread, NULL), 0);
	fl_assert_int_eq(len, 1000);
	fl_assert_int_eq(nfds, 1);
	fl_assert(matches(buf, len, 5));
	close(fd);
	close(w.fd);
	close_pair(sv);
}

FL_TEST(datagram_too_big_for_the_socket_is_emsgsize)
{
	unsigned char *buf = xmalloc(MAX_PAYLOAD);
	int sv[2], small = 4096;

	make_pair(SOCK_DGRAM, sv);
	fl_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	memset(buf, 0, MAX_PAYLOAD);
	fl_assert_int_eq(fl_send(sv[0], buf, MAX_PAYLOAD, NULL, 0), -EMSGSIZE);
	close_pair(sv);
	free(buf);
}

FL_TEST(bad_arguments_are_rejected)
{
	int sv[2], fds[MAX_FDS + 1], bad = -1, got = SENTINEL, file;
	char path[] = "/tmp/fl-transfer-XXXXXX";
	unsigned int n = SENTINEL;
	size_t len = SENTINEL;
	char buf[4];

	make_pair(SOCK_STREAM, sv);
	dup_pipe(fds, MAX_FDS + 1);
	fl_assert_int_eq(fl_send(sv[0], buf, 1, fds, MAX_FDS + 1), -EINVAL);
	fl_assert_int_eq(fl_send(sv[0], buf, MAX_PAYLOAD + 1, NULL, 0), -EINVAL);
	fl_assert_int_eq(fl_send(sv[0], NULL, 1, NULL, 0), -EINVAL);
	fl_assert_int_eq(fl_send(sv[0], buf, 1, NULL, 1), -EINVAL);
	fl_assert_int_eq(fl_send(sv[0], buf, 1, &bad, 1), -EBADF);
	fl_assert_int_eq(fl_send(-1, buf, 1, NULL, 0), -EBADF);
	fl_assert_int_eq(fl_recv(-1, buf, 1, &len, NULL, 0, NULL), -EBADF);
	fl_assert_int_eq(fl_recv(sv[1], NULL, 1, &len, NULL, 0, NULL), -EINVAL);
	fl_assert_int_eq(fl_recv(sv[1], buf, 1, &len, NULL, 1, &n), -EINVAL);
	fl_assert_int_eq(fl_recv(sv[1], buf, 1, &len, &got, 1, NULL), -EINVAL);
	fl_assert_int_eq(fl_fence_send(sv[0], NULL, NULL, 0), -EINVAL);
	fl_assert_int_eq(fl_fence_recv(sv[1], NULL, NULL, 0, NULL), -EINVAL);
	fl_assert_int_eq(fl_timeline_send(sv[0], NULL, NULL, 0), -EINVAL);
	fl_assert_int_eq(fl_timeline_recv(sv[1], NULL, NULL, 0, NULL), -EINVAL);
	/* Nothing was sent by any of them. */
	set_nonblocking(sv[1]);
	fl_assert_int_eq(fl_recv(sv[1], buf, 1, &len, NULL, 0, NULL), -EAGAIN);

	file = mkostemp(path, O_CLOEXEC);
	fl_assert_int_ge(file, 0);
	unlink(path);
	fl_assert_int_eq(fl_send(file, buf, 1, NULL, 0), -ENOTSOCK);
	fl_assert_int_eq(fl_recv(file, buf, 1, &len, NULL, 0, NULL), -ENOTSOCK);
	fl_assert_int_eq(len, SENTINEL);
	fl_assert_int_eq(n, SENTINEL);
	fl_assert_int_eq(got, SENTINEL);
	close(file);
	close_fds(fds, MAX_FDS + 1);
	close_pair(sv);
}

FL_TEST(fence_round_trip_in_process_keeps_status)
{
	struct fl_timeline *tl = fl_test_timeline_new("xfer");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "f");
	struct fl_fence *back;
	char buf[16];
	size_t len;
	int sv[2], fd;

	make_pair(SOCK_SEQPACKET, sv);
	fl_assert_int_eq(fl_fence_send(sv[0], f, "hello", 5), 0);
	fl_assert_int_eq(fl_fence_recv(sv[1], &fd, buf, sizeof(buf), &len), 0);
	fl_assert_int_eq(len, 5);
	fl_assert(memcmp(buf, "hello", 5) == 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_from_fd(fd, &back), 0);
	fl_assert(back == f);
	fl_fence_unref(back);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 30000), 0);
	/* A completed fence is still a fence. */
	fl_assert_int_eq(fl_fence_send(sv[0], f, NULL, 0), 0);
	close(fd);
	fl_assert_int_eq(fl_fence_recv(sv[1], &fd, NULL, 0, NULL), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	close(fd);
	close_pair(sv);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(fence_recv_rejects_messages_without_exactly_one_fence_fd)
{
	struct fl_timeline *tl = fl_test_timeline_new("xfer");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "f");
	struct fl_test_fd_snapshot base;
	int sv[2], fds[2], got = SENTINEL;
	size_t len = SENTINEL;

	make_pair(SOCK_STREAM, sv);
	dup_pipe(fds, 1);
	fl_assert_int_eq(fl_send(sv[0], NULL, 0, fds, 1), 0); /* a pipe */
	fl_assert_int_eq(fl_send(sv[0], NULL, 0, NULL, 0), 0); /* nothing */
	close(fds[0]);
	fds[0] = fl_test_export_fd(f);
	fds[1] = fl_test_export_fd(f);
	fl_assert_int_eq(fl_send(sv[0], NULL, 0, fds, 2), 0); /* two fences */
	close_fds(fds, 2);
	fl_test_fd_snapshot(&base);
	for (int i = 0; i < 3; i++)
		fl_assert_int_eq(fl_fence_recv(sv[1], &got, NULL, 0, &len), -EPROTO);
	fl_assert_int_eq(got, SENTINEL);
	fl_assert_int_eq(len, SENTINEL);
	fl_test_wait_fds_back(&base);
	close_pair(sv);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(received_timeline_fd_keeps_the_timeline_alive_until_closed)
{
	struct fl_timeline *tl = fl_test_timeline_new("xfer");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "f");
	struct fl_timeline *back;
	int sv[2], fd, fence_fd;

	make_pair(SOCK_STREAM, sv);
	fl_assert_int_eq(fl_timeline_send(sv[0], tl, "tl", 2), 0);
	fl_assert_int_eq(fl_timeline_recv(sv[1], &fd, NULL, 0, NULL), -EMSGSIZE);
	fl_assert_int_eq(fl_timeline_send(sv[0], tl, NULL, 0), 0);
	fl_assert_int_eq(fl_timeline_recv(sv[1], &fd, NULL, 0, NULL), 0);
	fl_assert_int_eq(fl_timeline_from_fd(fd, &back), 0);
	fl_assert(back == tl);
	fl_timeline_unref(back);
	fl_timeline_unref(tl);
	fl_assert_int_eq(fl_fence_get_status(f), FL_STATUS_ACTIVE);
	close(fd);
	fl_assert_int_eq(fl_fence_wait(f, 30000), -ENOENT);

	/* A completed fence fd is no timeline fd. */
	fence_fd = fl_test_export_fd(f);
	fl_assert_int_eq(fl_send(sv[0], NULL, 0, &fence_fd, 1), 0);
	close(fence_fd);
	fd = SENTINEL;
	fl_assert_int_eq(fl_timeline_recv(sv[1], &fd, NULL, 0, NULL), -EPROTO);
	fl_assert_int_eq(fd, SENTINEL);
	close_pair(sv);
	fl_fence_unref(f);
}

/*
 * The child of the fork test: receives the parent's fence, watches it
 * signal, then sends a fence of its own timeline back and signals it when
 * told. Reports through its exit status (the step that failed).
 */
static int fork_child(int sock)
{
	struct fl_timeline *tl;
	struct fl_fence *f;
	char buf[16];
	size_t len;
	int fd;

	if (fl_fence_recv(sock, &fd, buf, sizeof(buf), &len) != 0)
		return 10;
	if (len != 7 || memcmp(buf, "frame 1", 7) != 0)
		return 11;
	if (fl_fence_fd_get_status(fd) != FL_STATUS_ACTIVE)
		return 12;
	if (fl_send(sock, "ready", 5, NULL, 0) != 0)
		return 13;
	if (!(fl_test_poll_fd(fd, POLLIN, 30000) & POLLIN))
		return 14;
	if (fl_fence_fd_wait(fd, 0) != 0)
		return 15;
	close(fd);

	if (fl_sw_sync_timeline_create("child", 0, &tl) != 0)
		return 20;
	if (fl_sw_sync_fence_create(tl, 1, "child", &f) != 0)
		return 21;
	if (fl_fence_send(sock, f, "back", 4) != 0)
		return 22;
	if (fl_recv(sock, buf, sizeof(buf), &len, NULL, 0, NULL) != 0 || len != 6)
		return 23;
	if (fl_sw_sync_timeline_inc(tl, 1) != 0)
		return 24;
	if (fl_recv(sock, buf, sizeof(buf), &len, NULL, 0, NULL) != 0 || len != 3)
		return 25;
	fl_fence_unref(f);
	fl_timeline_unref(tl);
	return 0;
}

FL_TEST(fences_travel_both_ways_between_parent_and_forked_child)
{
	struct fl_timeline *tl = fl_test_timeline_new("parent");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "frame");
	char buf[16];
	size_t len;
	int sv[2], fd, wstatus;
	pid_t pid;

	make_pair(SOCK_STREAM, sv);
	pid = fork();
	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(fork_child(sv[1]));
	}
	close(sv[1]);
	fl_assert_int_eq(fl_fence_send(sv[0], f, "frame 1", 7), 0);
	fl_assert_int_eq(fl_recv(sv[0], buf, sizeof(buf), &len, NULL, 0, NULL), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);

	fl_assert_int_eq(fl_fence_recv(sv[0], &fd, buf, sizeof(buf), &len), 0);
	fl_assert_int_eq(len, 4);
	fl_assert(memcmp(buf, "back", 4) == 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_send(sv[0], "signal", 6, NULL, 0), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 30000), 0);
	fl_assert_int_eq(fl_send(sv[0], "bye", 3, NULL, 0), 0);

	fl_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
	fl_assert(WIFEXITED(wstatus));
	fl_assert_int_eq(WEXITSTATUS(wstatus), 0);
	/* The child's fence completed before it exited; its status stays. */
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	close(fd);
	close(sv[0]);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(send_to_a_closed_peer_fails_without_sigpipe)
{
	/* SIGPIPE's default action would kill the test. */
	for (size_t t = 0; t < ARRAY_SIZE(socket_types); t++) {
		int sv[2], ret;

		make_pair(socket_types[t], sv);
		close(sv[1]);
		ret = fl_send(sv[0], "x", 1, NULL, 0);
		if (socket_types[t] == SOCK_DGRAM)
			fl_assert_int_eq(ret, -ECONNREFUSED);
		else
			fl_assert_int_eq(ret, -EPIPE);
		close(sv[0]);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * src/proto/transport.c, compiled in: the one sendmsg()/recvmsg() with fds.
 * Every fd that arrives is the caller's or closed (fds past the caller's
 * array, past the control buffer, in foreign control messages), the flags
 * say what happened, EINTR is retried and EAGAIN is not, and the client's
 * reply policy keeps its errors. Ends with random packets, counting fds.
 *
 * Most tests send copies of a pipe's write end: once the test closes the
 * copies it holds, the read end reads end-of-file only if no other copy is
 * left open anywhere in the process, so a leaked fd cannot hide.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"
#include "transport.h"

#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif

static void make_pair(int type, int sv[2])
{
	fl_assert_int_eq(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
}

static void close_pair(int sv[2])
{
	close(sv[0]);
	close(sv[1]);
}

/* A pipe whose write end is sent around; p[0] non-blocking. */
static void make_pipe(int p[2])
{
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
}

/* After the caller closed its copies: no copy of @p's write end is left. */
static void assert_no_writer_left(int p[2])
{
	char c;

	close(p[1]);
	fl_assert_int_eq(read(p[0], &c, 1), 0);
	close(p[0]);
}

static void assert_same_file(int a, int b)
{
	struct stat sa, sb;

	fl_assert_int_eq(fstat(a, &sa), 0);
	fl_assert_int_eq(fstat(b, &sb), 0);
	fl_assert_int_eq(sa.st_ino, sb.st_ino);
	fl_assert_int_eq(sa.st_dev, sb.st_dev);
}

static void assert_cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	fl_assert_int_ge(flags, 0);
	fl_assert(flags & FD_CLOEXEC);
}

static void close_all(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

/* @n copies of @fd in @fds. */
static void copies(int fd, int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		fds[i] = fd;
}

/* Sends "hdr" + "body" with @nfds copies of @fd on @sock. */
static void send_copies(int sock, int fd, unsigned int nfds)
{
	int fds[64];

	fl_assert(nfds <= 64);
	copies(fd, fds, nfds);
	fl_assert_int_eq(fl__proto_send(sock, "hdr", 3, "body", 4, fds, nfds, 0), 7);
}

FL_TEST(zero_fds_message_arrives_whole)
{
	char hdr[3], body[16];
	struct fl__proto_rx rx = { .room = 4 };
	int sv[2];

	make_pair(SOCK_SEQPACKET, sv);
	fl_assert_int_eq(fl__proto_send(sv[0], "hdr", 3, "body", 4, NULL, 0, 0), 7);
	fl_assert_int_eq(fl__proto_recv(sv[1], hdr, sizeof(hdr), body, sizeof(body), 0, &rx), 0);
	fl_assert_int_eq(rx.len, 7);
	fl_assert_int_eq(rx.nfds, 0);
	fl_assert_int_eq(rx.flags, 0);
	fl_assert(memcmp(hdr, "hdr", 3) == 0 && memcmp(body, "body", 4) == 0);
	close_pair(sv);
}

/* Enough fd slots for @n more fds, or the test cannot run here. */
static void need_fds(unsigned int n)
{
	struct rlimit rl;

	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < (rlim_t)fl_test_count_fds() + n + 64) {
		rl.rlim_cur = rl.rlim_max;
		fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	if (rl.rlim_cur < (rlim_t)fl_test_count_fds() + n + 64)
		fl_test_skip("RLIMIT_NOFILE %llu is too low", (unsigned long long)rl.rlim_cur);
}

FL_TEST(max_fds_arrive_in_order_with_cloexec)
{
	static int sent[FL__PROTO_MAX_FDS + 1], got[FL__PROTO_MAX_FDS];
	struct fl__proto_rx rx = { got, FL__PROTO_MAX_FDS, FL__PROTO_MAX_FDS, 0, 0, 0 };
	char hdr[8];
	int sv[2];

	need_fds(2 * FL__PROTO_MAX_FDS + 1);
	make_pair(SOCK_SEQPACKET, sv);
	for (unsigned int i = 0; i <= FL__PROTO_MAX_FDS; i++) {
		sent[i] = eventfd(i + 1, EFD_CLOEXEC);
		fl_assert_int_ge(sent[i], 0);
	}
	/* One over the kernel's SCM_MAX_FD: refused before any syscall. */
	fl_assert_int_eq(fl__proto_send(sv[0], "x", 1, NULL, 0, sent, FL__PROTO_MAX_FDS + 1, 0),
			 -EINVAL);
	fl_assert_int_eq(fl__proto_send(sv[0], "x", 1, NULL, 0, sent, FL__PROTO_MAX_FDS, 0), 1);
	fl_assert_int_eq(fl__proto_recv(sv[1], hdr, sizeof(hdr), NULL, 0, MSG_DONTWAIT, &rx), 0);
	fl_assert_int_eq(rx.len, 1);
	fl_assert_int_eq(rx.flags, 0);
	fl_assert_int_eq(rx.nfds, FL__PROTO_MAX_FDS);
	for (unsigned int i = 0; i < FL__PROTO_MAX_FDS; i++) {
		uint64_t v = 0;

		assert_cloexec(got[i]);
		/* Each eventfd's count tells which one it is. */
		fl_assert_int_eq(read(got[i], &v, sizeof(v)), sizeof(v));
		fl_assert_int_eq(v, i + 1);
	}
	close_all(got, FL__PROTO_MAX_FDS);
	close_all(sent, FL__PROTO_MAX_FDS + 1);
	/* A room over the maximum is refused too, and reads nothing. */
	rx.room = FL__PROTO_MAX_FDS + 1;
	fl_assert_int_eq(fl__proto_recv(sv[1], hdr, sizeof(hdr), NULL, 0, MSG_DONTWAIT, &rx),
			 -EINVAL);
	close_pair(sv);
}

/*
 * Sends @sent copies of a pipe's write end and receives them into an array
 * of @max with room for @room: @want_nfds arrive, each a copy, with
 * @want_flags, and no other copy stays open.
 */
static void receive_cut(unsigned int sent, unsigned int max, unsigned int room,
			unsigned int want_nfds, unsigned int want_flags)
{
	int sv[2], p[2], got[8];
	struct fl__proto_rx rx = { got, max, room, 0, 0, 0 };
	char buf[16];

	fl_assert(max <= 8);
	make_pair(SOCK_SEQPACKET, sv);
	make_pipe(p);
	send_copies(sv[0], p[1], sent);
	fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, 0, &rx), 0);
	fl_assert_int_eq(rx.len, 7);
	fl_assert_int_eq(rx.nfds, want_nfds);
	fl_assert_int_eq(rx.flags, want_flags);
	for (unsigned int i = 0; i < rx.nfds; i++)
		assert_same_file(got[i], p[1]);
	close_all(got, rx.nfds);
	assert_no_writer_left(p);
	close_pair(sv);
}

FL_TEST(fds_past_the_callers_array_are_closed)
{
	receive_cut(6, 2, 8, 2, FL__PROTO_RX_EXTRA);
}

FL_TEST(fds_past_the_room_are_dropped_by_the_kernel)
{
	receive_cut(6, 8, 4, 4, FL__PROTO_RX_CTRUNC);
}

FL_TEST(no_fds_wanted_takes_none)
{
	receive_cut(3, 0, 0, 0, FL__PROTO_RX_CTRUNC);
	/* Room, but no array: the kernel installs them, and they are closed. */
	receive_cut(3, 0, 4, 0, FL__PROTO_RX_EXTRA);
}

FL_TEST(a_truncated_packet_is_flagged_and_keeps_its_fds)
{
	int sv[2], p[2], got[4];
	struct fl__proto_rx rx = { got, 4, 4, 0, 0, 0 };
	char hdr[2], body[3];

	make_pair(SOCK_SEQPACKET, sv);
	make_pipe(p);
	send_copies(sv[0], p[1], 1);
	send_copies(sv[0], p[1], 1);
	/* Without MSG_TRUNC: what fit. */
	fl_assert_int_eq(fl__proto_recv(sv[1], hdr, sizeof(hdr), body, sizeof(body), 0, &rx), 0);
	fl_assert_int_eq(rx.len, 5);
	fl_assert_int_eq(rx.flags, FL__PROTO_RX_TRUNC);
	fl_assert_int_eq(rx.nfds, 1);
	fl_assert(memcmp(hdr, "hd", 2) == 0 && memcmp(body, "rbo", 3) == 0);
	close(got[0]);
	/* With it: the packet's whole length. */
	fl_assert_int_eq(
		fl__proto_recv(sv[1], hdr, sizeof(hdr), body, sizeof(body), MSG_TRUNC, &rx), 0);
	fl_assert_int_eq(rx.len, 7);
	fl_assert_int_eq(rx.flags, FL__PROTO_RX_TRUNC);
	fl_assert_int_eq(rx.nfds, 1);
	close(got[0]);
	assert_no_writer_left(p);
	close_pair(sv);
}

FL_TEST(credentials_are_foreign_and_the_fds_still_arrive)
{
	int sv[2], p[2], got[4], on = 1;
	/* The credentials take control buffer room: 16 fds' worth leaves room. */
	struct fl__proto_rx rx = { got, 4, 16, 0, 0, 0 };
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	make_pipe(p);
	fl_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), 0);
	send_copies(sv[0], p[1], 2);
	fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, 0, &rx), 0);
	fl_assert_int_eq(rx.flags, FL__PROTO_RX_FOREIGN);
	fl_assert_int_eq(rx.nfds, 2);
	close_all(got, 2);
	assert_no_writer_left(p);
	close_pair(sv);
}

FL_TEST(a_pidfd_is_foreign_and_closed)
{
	struct fl_test_fd_snapshot base;
	int sv[2], on = 1;
	struct fl__proto_rx rx = { NULL, 0, 16, 0, 0, 0 };
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	if (setsockopt(sv[1], SOL_SOCKET, SO_PASSPIDFD, &on, sizeof(on)) < 0) {
		close_pair(sv);
		fl_test_skip("no SO_PASSPIDFD (Linux 6.5): %s", strerror(errno));
	}
	fl_test_fd_snapshot(&base);
	fl_assert_int_eq(fl__proto_send(sv[0], "x", 1, NULL, 0, NULL, 0, 0), 1);
	fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, 0, &rx), 0);
	fl_assert_int_eq(rx.flags, FL__PROTO_RX_FOREIGN);
	fl_test_expect_new_fds(&base, 0);
	close_pair(sv);
}

FL_TEST(an_empty_nonblocking_socket_is_eagain)
{
	int sv[2], p[2], n = 0;
	struct fl__proto_rx rx = { NULL, 0, 4, 0, 0, 0 };
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	make_pipe(p);
	fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, MSG_DONTWAIT, &rx),
			 -EAGAIN);
	/* A full one: the send that does not fit moves nothing, its fd included. */
	while (fl__proto_send(sv[0], "hdr", 3, "body", 4, &p[1], 1, MSG_DONTWAIT) == 7)
		n++;
	fl_assert_int_ge(n, 1);
	fl_assert_int_eq(fl__proto_send(sv[0], "hdr", 3, "body", 4, &p[1], 1, MSG_DONTWAIT),
			 -EAGAIN);
	for (int i = 0; i < n; i++) {
		int fd;

		rx = (struct fl__proto_rx){ &fd, 1, 4, 0, 0, 0 };
		fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, 0, &rx), 0);
		fl_assert_int_eq(rx.nfds, 1);
		close(fd);
	}
	rx = (struct fl__proto_rx){ NULL, 0, 4, 0, 0, 0 };
	fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, MSG_DONTWAIT, &rx),
			 -EAGAIN);
	assert_no_writer_left(p);
	close_pair(sv);
}

FL_TEST(end_of_file_is_an_empty_success)
{
	int sv[2];
	struct fl__proto_rx rx = { NULL, 0, 4, 0, 0, 0 };
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	close(sv[0]);
	fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, 0, &rx), 0);
	fl_assert_int_eq(rx.len, 0);
	fl_assert_int_eq(rx.nfds, 0);
	close(sv[1]);
	make_pair(SOCK_SEQPACKET, sv);
	close(sv[1]);
	fl_assert_int_eq(fl__proto_send(sv[0], "x", 1, NULL, 0, NULL, 0, 0), -EPIPE);
	close(sv[0]);
}

/* A thread blocked in the transport, interrupted by a signal. */
static atomic_int signals;
static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&signals, 1);
}

struct blocked {
	pthread_t thread;
	atomic_int tid;
	atomic_bool done;
	int sock, fd;
	long r;
	struct fl__proto_rx rx;
	char buf[16];
};

static void *blocked_recv(void *arg)
{
	struct blocked *b = arg;

	atomic_store(&b->tid, (int)syscall(SYS_gettid));
	b->r = fl__proto_recv(b->sock, b->buf, sizeof(b->buf), NULL, 0, 0, &b->rx);
	atomic_store(&b->done, true);
	return NULL;
}

static void *blocked_send(void *arg)
{
	struct blocked *b = arg;

	atomic_store(&b->tid, (int)syscall(SYS_gettid));
	b->r = fl__proto_send(b->sock, "hdr", 3, "body", 4, &b->fd, 1, 0);
	atomic_store(&b->done, true);
	return NULL;
}

/* Whether thread @tid sleeps (in the syscall: it does nothing else that sleeps). */
static bool sleeping(int tid)
{
	char path[64], stat[256], *p;
	FILE *f;
	bool s = false;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	fl_assert(f != NULL);
	if (fgets(stat, sizeof(stat), f) && (p = strrchr(stat, ')')))
		s = p[1] == ' ' && p[2] == 'S';
	fclose(f);
	return s;
}

/* Starts @fn, lets it block, signals it (no SA_RESTART) and sees it block again. */
static void interrupt(struct blocked *b, void *(*fn)(void *))
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: EINTR */
	int tid;

	fl_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&signals, 0);
	fl_assert_int_eq(pthread_create(&b->thread, NULL, fn, b), 0);
	while (!(tid = atomic_load(&b->tid)) || !sleeping(tid))
		usleep(1000);
	fl_assert_int_eq(pthread_kill(b->thread, SIGUSR1), 0);
	while (!atomic_load(&signals))
		usleep(1000);
	/* Either back in the syscall (EINTR retried) or out with an error. */
	while (!atomic_load(&b->done) && !sleeping(tid))
		usleep(1000);
}

FL_TEST(a_signal_does_not_end_a_blocking_receive)
{
	struct blocked b = { .rx = { NULL, 0, 4, 0, 0, 0 } };
	int sv[2];

	make_pair(SOCK_SEQPACKET, sv);
	b.sock = sv[1];
	interrupt(&b, blocked_recv);
	fl_assert_int_eq(fl__proto_send(sv[0], "x", 1, NULL, 0, NULL, 0, 0), 1);
	fl_assert_int_eq(pthread_join(b.thread, NULL), 0);
	fl_assert_int_eq(b.r, 0);
	fl_assert_int_eq(b.rx.len, 1);
	close_pair(sv);
}

FL_TEST(a_signal_does_not_end_a_blocking_send)
{
	struct blocked b = { .rx = { NULL, 0, 0, 0, 0, 0 } };
	int sv[2], p[2], n = 0;
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	make_pipe(p);
	while (fl__proto_send(sv[0], "hdr", 3, "body", 4, NULL, 0, MSG_DONTWAIT) == 7)
		n++;
	b.sock = sv[0];
	b.fd = p[1];
	interrupt(&b, blocked_send);
	for (int i = 0; i < n; i++) {
		struct fl__proto_rx rx = { NULL, 0, 4, 0, 0, 0 };

		fl_assert_int_eq(fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, 0, &rx), 0);
		fl_assert_int_eq(rx.nfds, 0);
	}
	/* Room made: the interrupted send went on and finished. */
	fl_assert_int_eq(pthread_join(b.thread, NULL), 0);
	fl_assert_int_eq(b.r, 7);
	{
		int fd = -1;
		struct fl__proto_rx rx = { &fd, 1, 4, 0, 0, 0 };

		fl_assert_int_eq(
			fl__proto_recv(sv[1], buf, sizeof(buf), NULL, 0, MSG_DONTWAIT, &rx), 0);
		fl_assert_int_eq(rx.nfds, 1);
		close(fd);
	}
	assert_no_writer_left(p);
	close_pair(sv);
}

/*
 * The client's replies: fl__proto_recv_reply() on a 7-byte reply with
 * @sent fds, read into @cap bytes and @max fds with @room (with a
 * @ret_short when @want_cut is 0 or 1, none when it is -1), returns @want
 * with @want_nfds fds, each a copy, and no other copy stays open.
 */
static void reply_case(unsigned int sent, size_t cap, unsigned int max, unsigned int room,
		       int want_cut, int want, unsigned int want_nfds)
{
	int sv[2], p[2], got[4];
	unsigned int nfds = 99;
	bool cut = !want_cut;
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	make_pipe(p);
	send_copies(sv[0], p[1], sent);
	fl_assert_int_eq(fl__proto_recv_reply(sv[1], buf, cap, got, max, room, &nfds,
					      want_cut < 0 ? NULL : &cut),
			 want);
	fl_assert_int_eq(nfds, want_nfds);
	if (want_cut >= 0 && want > 0)
		fl_assert_int_eq(cut, want_cut);
	for (unsigned int i = 0; i < nfds; i++)
		assert_same_file(got[i], p[1]);
	close_all(got, nfds);
	assert_no_writer_left(p);
	close_pair(sv);
}

FL_TEST(a_reply_cut_for_room_is_emfile_with_every_fd_closed)
{
	reply_case(3, 16, 4, 2, -1, -EMFILE, 0);
	/* With @ret_short, the reply and the fds that came. */
	reply_case(3, 16, 4, 2, 1, 7, 2);
	reply_case(1, 16, 4, 2, 0, 7, 1);
}

FL_TEST(a_reply_with_too_many_fds_or_bytes_is_eproto_with_every_fd_closed)
{
	reply_case(3, 16, 1, 4, 0, -EPROTO, 0);
	/* Too long, with its fds. */
	reply_case(2, 5, 4, 4, 0, -EPROTO, 0);
	/* Too long and cut: still -EPROTO, never -EMFILE or short. */
	reply_case(3, 5, 4, 2, -1, -EPROTO, 0);
	reply_case(3, 5, 4, 2, 0, -EPROTO, 0);
}

FL_TEST(a_reply_at_end_of_file_or_reset_is_econnreset)
{
	int sv[2], got[1];
	unsigned int nfds;
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	close(sv[0]);
	fl_assert_int_eq(fl__proto_recv_reply(sv[1], buf, sizeof(buf), got, 1, 4, &nfds, NULL),
			 -ECONNRESET);
	close(sv[1]);
	/* A stream whose peer left unread data behind resets the connection. */
	make_pair(SOCK_STREAM, sv);
	fl_assert_int_eq(fl__proto_send(sv[1], "x", 1, NULL, 0, NULL, 0, 0), 1);
	fl_assert_int_eq(fl__proto_send(sv[0], "y", 1, NULL, 0, NULL, 0, 0), 1);
	close(sv[1]);
	fl_assert_int_eq(fl__proto_recv_reply(sv[0], buf, 1, got, 1, 4, &nfds, NULL), 1);
	fl_assert_int_eq(fl__proto_recv_reply(sv[0], buf, 1, got, 1, 4, &nfds, NULL), -ECONNRESET);
	close(sv[0]);
}

FL_TEST(a_reply_that_does_not_come_in_time_is_etimedout)
{
	struct timeval tv = { 0, 1000 };
	int sv[2], got[1];
	unsigned int nfds;
	char buf[16];

	make_pair(SOCK_SEQPACKET, sv);
	fl_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	fl_assert_int_eq(fl__proto_recv_reply(sv[1], buf, sizeof(buf), got, 1, 4, &nfds, NULL),
			 -ETIMEDOUT);
	close_pair(sv);
}

FL_TEST(a_reply_whose_fds_do_not_fit_our_table_is_emfile)
{
	struct rlimit old, low;
	int sv[2], p[2], got[4], probe;
	unsigned int nfds = 99;
	char buf[16];

	/* valgrind emulates the limit: the kernel's, which recvmsg() obeys, stays as it was. */
	if (getenv("FL_TEST_UNDER_VALGRIND"))
		fl_test_skip("valgrind emulates RLIMIT_NOFILE");
	make_pair(SOCK_SEQPACKET, sv);
	make_pipe(p);
	send_copies(sv[0], p[1], 3);
	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	/* Room for exactly one more fd: the lowest free number is the next one. */
	probe = dup(0);
	fl_assert_int_ge(probe, 0);
	close(probe);
	low = old;
	low.rlim_cur = (rlim_t)probe + 1;
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	nfds = 99;
	probe = fl__proto_recv_reply(sv[1], buf, sizeof(buf), got, 4, 4, &nfds, NULL);
	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	fl_assert_int_eq(probe, -EMFILE);
	fl_assert_int_eq(nfds, 0);
	assert_no_writer_left(p);
	close_pair(sv);
}

/*
 * Random packets: lengths, fd counts, buffer sizes, rooms, arrays, with
 * and without MSG_TRUNC, some carrying credentials (foreign). Whatever
 * arrives, the fds handed over are the ones sent, in range and O_CLOEXEC,
 * and none is left open once the test closes them.
 */
FL_TEST(random_packets_leak_no_fd)
{
	static const int types[] = { SOCK_SEQPACKET, SOCK_DGRAM };
	unsigned int seed = 16;
	int before = fl_test_count_fds(), p[2], sv[2] = { -1, -1 };
	unsigned char out[300], hdr[64], body[300];
	int fds[64], got[64];
	bool creds = false;

	make_pipe(p);
	copies(p[1], fds, 64);
	for (int round = 0; round < 3000; round++) {
		unsigned int len = (unsigned int)rand_r(&seed) % sizeof(out);
		unsigned int nfds = (unsigned int)rand_r(&seed) % 41;
		unsigned int room = (unsigned int)rand_r(&seed) % 49;
		unsigned int max = (unsigned int)rand_r(&seed) % (room + 9);
		size_t hdr_len = (size_t)rand_r(&seed) % (sizeof(hdr) + 1);
		size_t body_cap = (size_t)rand_r(&seed) % (sizeof(body) + 1);
		int flags = rand_r(&seed) % 2 ? MSG_TRUNC : 0;
		struct fl__proto_rx rx = { got, max < 64 ? max : 64, room, 0, 0, 0 };

		if (round % 100 == 0) {
			int on;

			if (sv[0] >= 0)
				close_pair(sv);
			make_pair(types[(round / 100) % 2], sv);
			creds = (round / 200) % 2;
			on = creds;
			fl_assert_int_eq(
				setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), 0);
		}
		for (unsigned int i = 0; i < len; i++)
			out[i] = (unsigned char)rand_r(&seed);
		fl_assert_int_eq(fl__proto_send(sv[0], out, len / 2, out + len / 2, len - len / 2,
						fds, nfds, 0),
				 len);
		fl_assert_int_eq(fl__proto_recv(sv[1], hdr, hdr_len, body, body_cap, flags, &rx),
				 0);
		fl_assert(rx.nfds <= rx.max_fds && rx.nfds <= nfds);
		if (!creds && nfds <= room && nfds <= rx.max_fds)
			fl_assert_int_eq(rx.nfds, nfds);
		/* Credentials that do not fit cut the control data instead. */
		if (creds)
			fl_assert(rx.flags & (FL__PROTO_RX_FOREIGN | FL__PROTO_RX_CTRUNC));
		else
			fl_assert(!(rx.flags & FL__PROTO_RX_FOREIGN));
		fl_assert_int_eq(!!(rx.flags & FL__PROTO_RX_TRUNC), len > hdr_len + body_cap);
		fl_assert_int_eq(rx.len,
				 flags || len <= hdr_len + body_cap ? len : hdr_len + body_cap);
		if (rx.nfds < nfds)
			fl_assert(rx.flags & (FL__PROTO_RX_CTRUNC | FL__PROTO_RX_EXTRA));
		fl_assert(memcmp(hdr, out, len < hdr_len ? len : hdr_len) == 0);
		for (unsigned int i = 0; i < rx.nfds; i++) {
			assert_cloexec(got[i]);
			assert_same_file(got[i], p[1]);
		}
		close_all(got, rx.nfds);
	}
	close_pair(sv);
	assert_no_writer_left(p);
	fl_assert_int_eq(fl_test_count_fds(), before);
}

/*
 * An owner's pool fills ramp up 4, 8, 16, 32, and a fill with signal ends
 * carries two fds a slot and the kick pipe: 65 fds for 32 slots, the
 * largest reply (docs/protocol.md). Run on its own as well as by the next
 * test, which reads its debug log.
 */
FL_TEST(an_owner_makes_64_fences)
{
	int tl, fds[64];

	fl_assert_int_eq(fl_timeline_fd_create("fill", 0, &tl), 0);
	for (unsigned int i = 0; i < 64; i++)
		fl_assert_int_eq(fl_fence_fd_create(tl, i + 1, "fill", &fds[i]), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 64), 0);
	for (unsigned int i = 0; i < 64; i++)
		fl_assert_int_eq(fl_fence_fd_get_status(fds[i]), 1);
	close_all(fds, 64);
	close(tl);
}

FL_TEST(an_owners_largest_pool_fill_arrives_whole)
{
	char *log = fl_test_stderr_of_self("transport-test", "an_owner_makes_64_fences", "daemon");

	/* The log is on (so the next check can fail) and no fill came cut. */
	fl_assert(strstr(log, "fenceline[daemon]") != NULL);
	if (strstr(log, "pooled fds arrived"))
		fl__test_fail(__FILE__, __LINE__, "a fill came cut: %s", log);
	free(log);
}

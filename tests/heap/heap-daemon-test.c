/* SPDX-License-Identifier: MIT */
/*
 * The daemon's allocation service (<fenceline/heap-daemon.h>, docs/heap.md
 * "Through the daemon"): buffers are sealed, zero-filled memfds that cross
 * processes; each connection's accounting, limit and end; bad arguments and
 * hostile packets; libion through the daemon. Tests that need daemon
 * options start a private daemon and talk to it from a child, which picks
 * its socket before its first call (the test process is connected to the
 * runner's daemon already).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ion/ion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/heap-daemon.h>

#include "daemon-helpers.h"
#include "helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"

#define PAGE ((size_t)sysconf(_SC_PAGESIZE))
#define MIB  ((size_t)1 << 20)

static struct fl_heap_daemon_usage usage_of(const char *heap)
{
	struct fl_heap_daemon_usage u;

	fl_assert_int_eq(fl_heap_daemon_get_usage(heap, &u), 0);
	return u;
}

static int alloc_ok(const char *heap, size_t size)
{
	int fd = -1;

	fl_assert_int_eq(fl_heap_daemon_alloc(heap, size, 0, &fd), 0);
	fl_assert(fd >= 0);
	return fd;
}

static void expect_buffer(int fd, size_t size)
{
	struct stat st;
	unsigned char *p;

	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert_int_eq(st.st_size, (off_t)size);
	fl_assert_int_eq(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	fl_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	for (size_t i = 0; i < size; i += 512)
		fl_assert_int_eq(p[i], 0);
	fl_assert_int_eq(p[size - 1], 0);
	p[0] = 0x5a;
	munmap(p, size);
	fl_assert_int_eq(ftruncate(fd, (off_t)size / 2), -1);
	fl_assert_int_eq(errno, EPERM);
}

/* Until @heap's bytes of every client are @bytes (the daemon sees a death a moment later). */
static void wait_heap_allocated(const char *heap, uint64_t bytes)
{
	uint64_t deadline = fl_test_now_ns() + (uint64_t)DL_LONG_WAIT_MS * 1000000;

	while (usage_of(heap).heap_allocated != bytes && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(5);
	fl_assert_int_eq(usage_of(heap).heap_allocated, bytes);
}

FL_TEST(system_buffer_from_daemon_is_sealed_zeroed_and_mappable)
{
	struct fl_heap_daemon_usage u;
	int fd = alloc_ok(FL_HEAP_DAEMON_SYSTEM, 10000);
	size_t size = (10000 + PAGE - 1) / PAGE * PAGE;

	expect_buffer(fd, size);
	u = usage_of(FL_HEAP_DAEMON_SYSTEM);
	fl_assert_int_eq(u.bytes, size);
	fl_assert_int_eq(u.buffers, 1);
	fl_assert_int_eq(u.peak_bytes, size);
	fl_assert_int_eq(u.heap_capacity, 0);
	fl_assert_int_eq(u.heap_allocated, size);
	fl_assert_int_eq(u.limit, 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), 0);
	/* The fd was closed by the free. */
	fl_assert_int_eq(fcntl(fd, F_GETFD), -1);
	u = usage_of(FL_HEAP_DAEMON_SYSTEM);
	fl_assert_int_eq(u.bytes, 0);
	fl_assert_int_eq(u.buffers, 0);
	fl_assert_int_eq(u.peak_bytes, size);
	fl_assert_int_eq(u.peak_buffers, 1);
	fl_assert_int_eq(u.heap_allocated, 0);
}

FL_TEST(carveout_buffers_are_counted_per_heap_and_in_total)
{
	struct fl_heap_daemon_usage u;
	int a = alloc_ok(FL_HEAP_DAEMON_CARVEOUT, MIB), b = alloc_ok(FL_HEAP_DAEMON_CARVEOUT, 1);
	int c = alloc_ok(FL_HEAP_DAEMON_SYSTEM, 3 * PAGE);

	expect_buffer(a, MIB);
	expect_buffer(b, PAGE);
	u = usage_of(FL_HEAP_DAEMON_CARVEOUT);
	fl_assert_int_eq(u.heap_capacity, 64 * MIB); /* the default --carveout-mb */
	fl_assert_int_eq(u.bytes, MIB + PAGE);
	fl_assert_int_eq(u.buffers, 2);
	u = usage_of(NULL);
	fl_assert_int_eq(u.bytes, MIB + 4 * PAGE);
	fl_assert_int_eq(u.buffers, 3);
	fl_assert_int_eq(u.heap_capacity, 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(a), 0);
	u = usage_of(NULL);
	fl_assert_int_eq(u.bytes, 4 * PAGE);
	fl_assert_int_eq(u.peak_bytes, MIB + 4 * PAGE);
	fl_assert_int_eq(u.peak_buffers, 3);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(b), 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(c), 0);
	fl_assert_int_eq(usage_of(NULL).bytes, 0);
	fl_assert_int_eq(usage_of(FL_HEAP_DAEMON_CARVEOUT).heap_allocated, 0);
}

FL_TEST(buffer_from_daemon_passes_to_another_process_which_cannot_free_it)
{
	int sv[2], fd = alloc_ok(FL_HEAP_DAEMON_SYSTEM, PAGE);
	unsigned char *p;
	pid_t pid;

	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	memset(p, 0xab, PAGE);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid = dl_fork();
	if (pid == 0) {
		int got;
		unsigned char *q;

		close(sv[0]);
		got = dl_recv_fd(sv[1]);
		q = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, got, 0);
		fl_assert(q != MAP_FAILED);
		fl_assert_int_eq(q[PAGE - 1], 0xab);
		q[0] = 0xcd;
		munmap(q, PAGE);
		/* Its own connection: the buffer is charged to the parent's. */
		fl_assert_int_eq(fl_heap_daemon_buffer_free(got), -EINVAL);
		fl_assert_int_eq(usage_of(NULL).buffers, 0);
		fl_assert_int_eq(fcntl(got, F_GETFD) >= 0, 1);
		close(got);
		_exit(0);
	}
	close(sv[1]);
	dl_send_fd(sv[0], fd);
	dl_wait_child_ok(pid);
	close(sv[0]);
	fl_assert_int_eq(p[0], 0xcd);
	munmap(p, PAGE);
	fl_assert_int_eq(usage_of(NULL).buffers, 1);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), 0);
}

FL_TEST(free_through_a_dup_and_twice)
{
	int fd = alloc_ok(FL_HEAP_DAEMON_CARVEOUT, PAGE), d = dup(fd);

	fl_assert_int_eq(fl_heap_daemon_buffer_free(d), 0);
	/* Freed already: the other fd stays open and valid. */
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), -EINVAL);
	expect_buffer(fd, PAGE);
	close(fd);
	fl_assert_int_eq(usage_of(NULL).buffers, 0);
}

FL_TEST(bad_arguments_get_clear_errors_and_change_nothing)
{
	char long_name[64];
	int fd = -1, p[2];

	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	fl_assert_int_eq(fl_heap_daemon_alloc("system", 0, 0, &fd), -EINVAL);
	fl_assert_int_eq(fl_heap_daemon_alloc("system", SIZE_MAX, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fl_heap_daemon_alloc("system", SIZE_MAX / 2, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fl_heap_daemon_alloc("carveout", 65 * MIB, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fl_heap_daemon_alloc("nosuch", PAGE, 0, &fd), -ENODEV);
	fl_assert_int_eq(fl_heap_daemon_alloc(long_name, PAGE, 0, &fd), -ENODEV);
	fl_assert_int_eq(fl_heap_daemon_alloc("", PAGE, 0, &fd), -EINVAL);
	fl_assert_int_eq(fl_heap_daemon_alloc("system", PAGE, 1u << 8, &fd), -EINVAL);
	fl_assert_int_eq(fl_heap_daemon_alloc("system", PAGE, 0x80000000u, &fd), -EINVAL);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(fl_heap_daemon_get_usage("nosuch", &(struct fl_heap_daemon_usage){ 0 }),
			 -ENODEV);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(p[0]), -EINVAL);
	fl_assert_int_eq(fcntl(p[0], F_GETFD) >= 0, 1);
	close(p[0]);
	close(p[1]);
	/* The connection still works, and nothing was counted. */
	fl_assert_int_eq(usage_of(NULL).peak_buffers, 0);
	fl_assert_int_eq(usage_of("carveout").heap_allocated, 0);
	fd = alloc_ok("system", PAGE);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), 0);
}

/*
 * A sparse memfd of 2^62 bytes costs nothing until touched, but no machine
 * could back it: four of them wrapped a connection's count to 0 bytes.
 * Past half of RAM is -ENOMEM, as ION said, and nothing is counted.
 */
FL_TEST(sizes_no_machine_could_back_are_refused_and_counts_do_not_wrap)
{
	uint64_t half = (uint64_t)sysconf(_SC_PHYS_PAGES) / 2 * (uint64_t)PAGE;
	int fd = -1;

	for (int i = 0; i < 4; i++)
		fl_assert_int_eq(fl_heap_daemon_alloc("system", (size_t)1 << 62, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fl_heap_daemon_alloc("system", (size_t)half + PAGE, 0, &fd), -ENOMEM);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(usage_of(NULL).peak_bytes, 0);
	fl_assert_int_eq(usage_of(NULL).buffers, 0);
	/* Half of RAM itself is allowed (sparse: it costs nothing here). */
	fd = alloc_ok("system", (size_t)half);
	fl_assert_int_eq(usage_of(NULL).bytes, half);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), 0);
	fl_assert_int_eq(usage_of(NULL).bytes, 0);
}

FL_TEST(a_group_is_freed_at_once_and_other_buffers_stay)
{
	uint32_t g1, g2;
	int a, b, c, fd;

	fl_assert_int_eq(fl_heap_daemon_group_new(&g1), 0);
	fl_assert_int_eq(fl_heap_daemon_group_new(&g2), 0);
	fl_assert(g1 && g2 && g1 != g2);
	fl_assert_int_eq(fl_heap_daemon_alloc_group("carveout", PAGE, 0, g1, &a), 0);
	fl_assert_int_eq(fl_heap_daemon_alloc_group("system", PAGE, 0, g1, &b), 0);
	fl_assert_int_eq(fl_heap_daemon_alloc_group("system", PAGE, 0, g2, &c), 0);
	fd = alloc_ok("system", PAGE);
	close(a);
	close(b);
	fl_assert_int_eq(usage_of(NULL).buffers, 4); /* close() is not free */
	fl_assert_int_eq(fl_heap_daemon_group_free(g1), 2);
	fl_assert_int_eq(fl_heap_daemon_group_free(g1), 0);
	fl_assert_int_eq(usage_of(NULL).buffers, 2);
	fl_assert_int_eq(usage_of("carveout").heap_allocated, 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(c), 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), 0);
}

FL_TEST(disconnecting_frees_the_connections_buffers)
{
	int fd = alloc_ok("carveout", 2 * PAGE);

	fl_assert_int_eq(usage_of("carveout").heap_allocated, 2 * PAGE);
	fl_daemon_disconnect();
	/* A new connection: nothing is charged to it, and the range is free. */
	fl_assert_int_eq(usage_of(NULL).buffers, 0);
	fl_assert_int_eq(usage_of("carveout").heap_allocated, 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), -EINVAL);
	expect_buffer(fd, 2 * PAGE); /* still valid memory */
	close(fd);
}

FL_TEST(a_dead_clients_buffers_are_freed_but_stay_valid_where_held)
{
	int sv[2], got;
	unsigned char *p;
	pid_t pid;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid = dl_fork();
	if (pid == 0) {
		int fd = alloc_ok("carveout", 4 * PAGE);
		unsigned char *q = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		close(sv[0]);
		fl_assert(q != MAP_FAILED);
		q[7] = 7;
		alloc_ok("carveout", PAGE); /* leaked on purpose: the death frees it */
		alloc_ok("system", 8 * PAGE);
		dl_send_fd(sv[1], fd);
		_exit(0);
	}
	close(sv[1]);
	got = dl_recv_fd(sv[0]);
	close(sv[0]);
	dl_wait_child_ok(pid);
	wait_heap_allocated("carveout", 0);
	wait_heap_allocated("system", 0);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, got, 0);
	fl_assert(p != MAP_FAILED);
	fl_assert_int_eq(p[7], 7);
	munmap(p, PAGE);
	close(got);
}

/* Runs @fn in a child connected to the daemon at @path; fails if the child does. */
static void in_child_of(const char *path, void (*fn)(void))
{
	pid_t pid = dl_fork();

	if (pid == 0) {
		setenv("FENCELINE_SOCKET", path, 1);
		fn();
		_exit(0);
	}
	dl_wait_child_ok(pid);
}

static void limited_child(void)
{
	struct fl_heap_daemon_usage u;
	int a = -1, b = -1, c = -1;

	fl_assert_int_eq(fl_heap_daemon_alloc("system", 768 << 10, 0, &a), 0);
	fl_assert_int_eq(fl_heap_daemon_alloc("carveout", 256 << 10, 0, &b), 0);
	/* 1 MiB held: one more page is over the limit, in any heap. */
	fl_assert_int_eq(fl_heap_daemon_alloc("system", 1, 0, &c), -ENOMEM);
	fl_assert_int_eq(fl_heap_daemon_alloc("carveout", PAGE, 0, &c), -ENOMEM);
	fl_assert_int_eq(fl_heap_daemon_alloc("system", 2 * MIB, 0, &c), -ENOMEM);
	fl_assert_int_eq(c, -1);
	u = usage_of(NULL);
	fl_assert_int_eq(u.limit, MIB);
	fl_assert_int_eq(u.bytes, MIB);
	fl_assert_int_eq(u.refused, 3);
	fl_assert_int_eq(usage_of("carveout").heap_allocated, 256 << 10);
	/* Freeing makes room again. */
	fl_assert_int_eq(fl_heap_daemon_buffer_free(b), 0);
	fl_assert_int_eq(fl_heap_daemon_alloc("carveout", PAGE, 0, &c), 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(c), 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(a), 0);
	fl_assert_int_eq(usage_of(NULL).bytes, 0);
	fl_assert_int_eq(usage_of("system").heap_allocated, 0);
}

static void leaky_limited_child(void)
{
	int fd;

	for (int i = 0; i < 8; i++)
		fl_assert_int_eq(fl_heap_daemon_alloc("carveout", 128 << 10, 0, &fd), 0);
	fl_assert_int_eq(fl_heap_daemon_alloc("carveout", 128 << 10, 0, &fd), -ENOMEM);
}

static void carveout_empty_child(void)
{
	/* The other children's ranges were all returned. */
	fl_assert_int_eq(usage_of("carveout").heap_allocated, 0);
	fl_assert_int_eq(usage_of("carveout").heap_capacity, 2 * MIB);
}

/* The daemon's carveout keeps one watch fd from its first buffer on (docs/heap.md, "Reclaim"). */
static void carveout_once_child(void)
{
	int fd = -1;

	fl_assert_int_eq(fl_heap_daemon_alloc("carveout", PAGE, 0, &fd), 0);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(fd), 0);
}

static char *read_file(const char *path)
{
	static char buf[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	fl_assert(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	fl_assert(n >= 0);
	buf[n] = '\0';
	return buf;
}

FL_TEST(client_limit_gives_enomem_logs_why_and_leaks_nothing)
{
	static const char *const args[] = {
		"--heap-limit-mb", "1", "--carveout-mb", "2", "--idle-timeout", "0", NULL
	};
	char path[256], log[256];
	int saved = dup(2), logfd, base;
	pid_t d;

	dl_runtime_path("limit.sock", path, sizeof(path));
	dl_runtime_path("daemon.log", log, sizeof(log));
	logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fl_assert(saved >= 0 && logfd >= 0);
	dup2(logfd, 2);
	d = dl_daemon_start(path, args);
	dup2(saved, 2);
	close(saved);
	close(logfd);
	in_child_of(path, carveout_once_child);
	base = dl_daemon_fd_baseline(d);
	in_child_of(path, limited_child);
	in_child_of(path, leaky_limited_child);
	in_child_of(path, carveout_empty_child);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
	/* The first refusal of each client is logged, with the numbers. */
	fl_assert(strstr(read_file(log), "refused 1 bytes from heap 'system': it holds 1048576 of "
					 "its limit of 1048576 bytes"));
	fl_assert(strstr(read_file(log), "refused 131072 bytes from heap 'carveout'"));
}

/* ---- hostile packets ---- */

static int raw_session(const char *path)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} hello = { { FL_OP_HELLO, 0, 0, sizeof(struct fl_msg_hello) },
		    { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
	int sock = raw_connect_to(path);

	raw_send(sock, &hello, sizeof(hello), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 0), 0);
	return sock;
}

struct raw_alloc {
	struct fl_msg_hdr h;
	struct fl_msg_heap_alloc b;
};

static struct raw_alloc raw_alloc_req(uint32_t seq, const char *heap, uint64_t size)
{
	struct raw_alloc q = { { FL_OP_HEAP_ALLOC, 0, seq, sizeof(struct fl_msg_heap_alloc) },
			       { .size = size } };

	snprintf(q.b.heap, sizeof(q.b.heap), "%s", heap);
	return q;
}

/* The request gets @status and the connection is closed. */
static void expect_dropped(const char *path, const void *req, size_t len, const int *fds,
			   unsigned int nfds, uint32_t op, int status)
{
	int sock = raw_session(path);

	raw_send(sock, req, len, fds, nfds);
	fl_assert_int_eq(raw_reply(sock, op, 9), status);
	fl_assert_int_eq(raw_reply(sock, op, 9), 1);
	close(sock);
}

/* The request gets @status and the connection stays usable. */
static void expect_error(const char *path, const void *req, size_t len, const int *fds,
			 unsigned int nfds, uint32_t op, int status)
{
	struct fl_msg_hdr ping = { FL_OP_PING, 0, 10, 0 };
	int sock = raw_session(path);

	raw_send(sock, req, len, fds, nfds);
	fl_assert_int_eq(raw_reply(sock, op, 9), status);
	raw_send(sock, &ping, sizeof(ping), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_PING, 10), 0);
	close(sock);
}

FL_TEST(hostile_heap_requests_get_errors_or_disconnect_and_leak_nothing)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_heap_free b;
	} free_req = { { FL_OP_HEAP_FREE, 0, 9, sizeof(struct fl_msg_heap_free) }, { 0, 0 } };
	struct {
		struct fl_msg_hdr h;
		char b[64];
	} big;
	struct raw_alloc q;
	char path[256];
	int base, p[2], sock;
	pid_t d;

	dl_runtime_path("hostile.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	in_child_of(path, carveout_once_child);
	base = dl_daemon_fd_baseline(d);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);

	/* Protocol violations: answered, then dropped. */
	q = raw_alloc_req(9, "system", PAGE);
	q.h.len = sizeof(q.b) - 8;
	expect_dropped(path, &q, sizeof(q) - 8, NULL, 0, FL_OP_HEAP_ALLOC, -EPROTO);
	q = raw_alloc_req(9, "", PAGE);
	expect_dropped(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -EINVAL);
	q = raw_alloc_req(9, "system", PAGE);
	memset(q.b.heap, 'x', sizeof(q.b.heap)); /* no NUL */
	expect_dropped(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -EINVAL);
	q = raw_alloc_req(9, "system", PAGE);
	expect_dropped(path, &q, sizeof(q), p, 1, FL_OP_HEAP_ALLOC, -EINVAL); /* an fd */
	q = raw_alloc_req(9, "system", PAGE);
	q.h.flags = FL_MSG_F_REPLY;
	expect_dropped(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -EINVAL);
	memset(&big, 0, sizeof(big));
	big.h = (struct fl_msg_hdr){ FL_OP_HEAP_ALLOC, 0, 9, sizeof(big.b) };
	expect_dropped(path, &big, sizeof(big), NULL, 0, FL_OP_HEAP_ALLOC, -EPROTO);
	expect_dropped(path, &free_req, sizeof(free_req), NULL, 0, FL_OP_HEAP_FREE, -EINVAL);
	free_req.b.group = 3;
	expect_dropped(path, &free_req, sizeof(free_req), p, 1, FL_OP_HEAP_FREE, -EINVAL);
	free_req.b.group = 0;
	free_req.b.pad = 1;
	expect_dropped(path, &free_req, sizeof(free_req), p, 1, FL_OP_HEAP_FREE, -EINVAL);
	free_req.b.pad = 0;
	expect_dropped(path, &free_req, sizeof(free_req), (int[]){ p[0], p[1] }, 2, FL_OP_HEAP_FREE,
		       -EINVAL);
	big.h = (struct fl_msg_hdr){ FL_OP_HEAP_INFO + 1, 0, 9, 0 }; /* no such op */
	expect_dropped(path, &big, sizeof(big.h), NULL, 0, FL_OP_HEAP_INFO + 1, -EOPNOTSUPP);

	/* Well-formed but wrong: an error, and the client stays. */
	q = raw_alloc_req(9, "system", 0);
	expect_error(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -EINVAL);
	q = raw_alloc_req(9, "system", UINT64_MAX);
	expect_error(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -ENOMEM);
	q = raw_alloc_req(9, "carveout", UINT64_MAX - PAGE);
	expect_error(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -ENOMEM);
	q = raw_alloc_req(9, "nope", PAGE);
	expect_error(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -ENODEV);
	q = raw_alloc_req(9, "system", PAGE);
	q.b.flags = 0xffffffffu;
	expect_error(path, &q, sizeof(q), NULL, 0, FL_OP_HEAP_ALLOC, -EINVAL);
	expect_error(path, &free_req, sizeof(free_req), p, 1, FL_OP_HEAP_FREE, -EINVAL);
	free_req.b.group = 5;
	expect_error(path, &free_req, sizeof(free_req), NULL, 0, FL_OP_HEAP_FREE, 0);

	/* A client that never reads its buffers' replies, then hangs up. */
	sock = raw_session(path);
	for (uint32_t i = 0; i < 16; i++) {
		q = raw_alloc_req(100 + i, i & 1 ? "carveout" : "system", 64 << 10);
		raw_send(sock, &q, sizeof(q), NULL, 0);
	}
	close(sock);
	close(p[0]);
	close(p[1]);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
}

/* ---- libion through the daemon ---- */

FL_TEST(libion_allocates_through_the_daemon_and_ion_close_frees)
{
	struct fl_heap_daemon_usage u;
	int ion, a = -1, b = -1, c = -1;
	unsigned char *p;

	setenv("FENCELINE_ION_VIA_DAEMON", "1", 1);
	ion = ion_open();
	fl_assert(ion >= 0);
	fl_assert_int_eq(ion_alloc_fd(ion, 3 * PAGE, 0, 1u << 2, 0, &a), 0);
	fl_assert_int_eq(ion_alloc_fd(ion, PAGE, 0, 1u << 0, ION_FLAG_CACHED, &b), 0);
	/* Too big for the daemon's carveout: the mask walk falls back to its system heap. */
	fl_assert_int_eq(ion_alloc_fd(ion, 65 * MIB, 0, (1u << 2) | 1u, 0, &c), 0);
	fl_assert_int_eq(ion_alloc_fd(ion, 65 * MIB, 0, 1u << 2, 0, &(int){ -1 }), -ENOMEM);
	expect_buffer(a, 3 * PAGE);
	expect_buffer(b, PAGE);
	u = usage_of("carveout");
	fl_assert_int_eq(u.bytes, 3 * PAGE);
	fl_assert_int_eq(usage_of("system").bytes, PAGE + 65 * MIB);
	close(b);
	close(c);
	fl_assert_int_eq(ion_close(ion), 0);
	u = usage_of(NULL);
	fl_assert_int_eq(u.bytes, 0);
	fl_assert_int_eq(u.buffers, 0);
	/* The buffer outlives its client, data and all, as a dma-buf does. */
	p = mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, a, 0);
	fl_assert(p != MAP_FAILED);
	fl_assert_int_eq(p[0], 0x5a);
	munmap(p, 3 * PAGE);
	close(a);
	unsetenv("FENCELINE_ION_VIA_DAEMON");
}

FL_TEST(libion_without_the_daemon_switch_uses_local_heaps)
{
	int ion, fd = -1;

	unsetenv("FENCELINE_ION_VIA_DAEMON");
	ion = ion_open();
	fl_assert(ion >= 0);
	fl_assert_int_eq(ion_alloc_fd(ion, PAGE, 0, 1u << 2, 0, &fd), 0);
	fl_assert_int_eq(usage_of(NULL).peak_buffers, 0);
	close(fd);
	fl_assert_int_eq(ion_close(ion), 0);
}

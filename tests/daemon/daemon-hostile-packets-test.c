/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world, raw connections sending what no library would: malformed, cut and
 * out-of-range requests of the pool, shared-counter and core ops must get
 * an error or a disconnect, never a crash or a leak.
 *
 * Each test that can checks the daemon's own fds (/proc/PID/fd) return to
 * their count from before, since a leak inside the daemon is invisible to
 * the runner's check of the test process. Helpers: daemon-hostile.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>

#include "daemon-helpers.h"
#include "daemon-hostile.h"
#include "helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"
#include "statuspage.h"

/* The daemon answered @status (if @status is not 1) and then hung up. */
static void expect_reject(int sock, uint32_t op, uint32_t seq, int status)
{
	if (status != 1)
		fl_assert_int_eq(raw_reply(sock, op, seq), status);
	fl_assert_int_eq(raw_reply(sock, op, seq), 1);
	close(sock);
}

/* A POOL_FILL the daemon must refuse with @status without hanging up. */
static void raw_pool_fill_fails(int sock, uint32_t seq, uint32_t count, int status)
{
	struct fl_msg_pool_reply rep;
	int fds[RAW_MAX_FDS];
	unsigned int n;

	raw_send_pool_fill(sock, seq, count, 0);
	fl_assert_int_eq(raw_reply_fds(sock, FL_OP_POOL_FILL, seq, &rep, sizeof(rep), fds,
				       RAW_MAX_FDS, &n),
			 status);
}

/* Protocol 2's ops, raw: TIMELINE_BIND, POOL_FILL and FENCE_NEW. */
static void hostile_pool_packets(void)
{
	static const struct fl_msg_pool_fill bad_fills[] = {
		{ 0, 0 },
		{ FL_PROTO_POOL_FILL_MAX + 1, 0 },
		{ 1, 4 },
	};
	int s, a[FL_PROTO_POOL_FILL_MAX], b[FL_PROTO_POOL_FILL_MAX], c[FL_PROTO_POOL_FILL_MAX];
	/* What a third fill may still have: exactly up to the limit. */
	const uint32_t rest = FL_PROTO_POOL_MAX - FL_PROTO_POOL_FILL_MAX - 4;
	int sv[2], p[2], tl;
	uint32_t handle, again;

	/* Fills of nothing, of more than one reply carries, with an unknown flag: malformed. */
	for (uint32_t i = 0; i < sizeof(bad_fills) / sizeof(bad_fills[0]); i++) {
		s = raw_connect();
		raw_hello(s);
		raw_send_pool_fill(s, 40 + i, bad_fills[i].count, bad_fills[i].flags);
		expect_reject(s, FL_OP_POOL_FILL, 40 + i, -EINVAL);
	}
	library_round();

	/*
	 * Fills up to FL_PROTO_POOL_MAX unused fds, exactly: one more is
	 * -ENOSPC, which hands out nothing and keeps the connection.
	 */
	s = raw_connect();
	raw_hello(s);
	raw_pool_fill_ok(s, 50, 4, 0, a);
	raw_pool_fill_ok(s, 51, FL_PROTO_POOL_FILL_MAX, 4, b);
	raw_pool_fill_fails(s, 52, FL_PROTO_POOL_FILL_MAX, -ENOSPC);
	raw_ping_ok(s, 53);
	raw_pool_fill_ok(s, 54, rest, FL_PROTO_POOL_FILL_MAX + 4, c);
	raw_pool_fill_fails(s, 55, 1, -ENOSPC);
	raw_ping_ok(s, 56);
	close(s);
	/* The daemon closed its ends with the connection: unused fds read end-of-file. */
	dl_expect_fence_status(a[0], -ECONNRESET);
	dl_expect_fence_status(c[rest - 1], -ECONNRESET);
	close_fds(a, 4);
	close_fds(b, FL_PROTO_POOL_FILL_MAX);
	close_fds(c, rest);

	/* FENCE_NEW with no pooled fd at all; one-way, but a violation is answered. */
	s = raw_connect();
	raw_hello(s);
	raw_send_fence_new(s, 60, 0, 1, 0, 0);
	expect_reject(s, FL_OP_FENCE_NEW, 60, -EBADMSG);

	/* FENCE_NEW skipping the oldest pooled fd, on a bound timeline: only the slot is wrong. */
	s = raw_connect();
	raw_hello(s);
	tl = raw_timeline_create(s, 61, "skipped", &handle);
	raw_pool_fill_ok(s, 62, 2, 0, a);
	raw_send_fence_new(s, 63, 0, 1, handle, 1);
	expect_reject(s, FL_OP_FENCE_NEW, 63, -EBADMSG);
	/* Neither slot was used: both are unused fds of a closed connection. */
	dl_expect_fence_status(a[0], -ECONNRESET);
	dl_expect_fence_status(a[1], -ECONNRESET);
	close_fds(a, 2);
	close(tl);

	/* FENCE_NEW naming a handle this connection never got (others have handle 0). */
	s = raw_connect();
	raw_hello(s);
	raw_pool_fill_ok(s, 64, 1, 0, a);
	raw_send_fence_new(s, 65, FL_MSG_F_REPLY, 1, 0, 0);
	expect_reject(s, FL_OP_FENCE_NEW, 65, -EBADMSG);
	/* Its slot was used up first, and says why: the record was sent before the reply. */
	fl_assert_int_eq(fl_fence_fd_get_status(a[0]), -EBADMSG);
	close(a[0]);
	library_round();

	/* Binding what is not a timeline is an answer, not a hang-up. */
	s = raw_connect();
	raw_hello(s);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(raw_bind(s, 70, sv[0], &handle), -ENOTTY);
	fl_assert_int_eq(raw_bind(s, 71, p[0], &handle), -ENOTTY);
	/* A socket the daemon made itself, but not a timeline. */
	raw_pool_fill_ok(s, 72, 1, 0, a);
	fl_assert_int_eq(raw_bind(s, 73, a[0], &handle), -ENOTTY);
	raw_ping_ok(s, 74);
	close(s);
	close(a[0]);
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);

	/* All of it working: create (bound already), fill, FENCE_NEW, signal. */
	s = raw_connect();
	raw_hello(s);
	tl = raw_timeline_create(s, 80, "raw", &handle);
	fl_assert_int_eq(handle, 0); /* handles count from 0 per connection */
	/* Every copy of a timeline fd has the same inode: the same handle again. */
	fl_assert_int_eq(raw_bind(s, 81, tl, &again), 0);
	fl_assert_int_eq(again, handle);
	raw_pool_fill_ok(s, 82, 1, 0, a);
	raw_send_fence_new(s, 83, FL_MSG_F_REPLY, 1, handle, 0);
	fl_assert_int_eq(raw_reply(s, FL_OP_FENCE_NEW, 83), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(a[0]), FL_STATUS_ACTIVE);
	/* A fence now, which is still not a timeline. */
	fl_assert_int_eq(raw_bind(s, 84, a[0], &again), -ENOTTY);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_timeline_inc b;
		} inc = { { FL_OP_TIMELINE_INC, 0, 85, sizeof(struct fl_msg_timeline_inc) },
			  { 1 } };

		raw_send(s, &inc, sizeof(inc), &tl, 1);
		fl_assert_int_eq(raw_reply(s, FL_OP_TIMELINE_INC, 85), 0);
	}
	dl_expect_fence_status(a[0], FL_STATUS_SIGNALED);
	raw_ping_ok(s, 86);
	close(s);
	close(a[0]);
	close(tl);
}

/* Protocol 3's shared counters, signal ends and TIMELINE_SYNC, raw. */

/* A fence fd's status record (struct fl__record, src/util/util.h), as an owner writes it. */
#define RECORD_MAGIC 0x31464c46u
struct record {
	uint32_t magic;
	int32_t status;
	uint64_t timestamp_ns;
};
_Static_assert(sizeof(struct record) == 16, "the record's size on the wire");

/* Quick, for an answer that must not take long: generous for slow (sanitized) builds. */
#define QUICK_MS 1000

/* raw_timeline_sync() that must answer within QUICK_MS. */
static int raw_timeline_sync_quick(int sock, uint32_t seq, uint32_t handle)
{
	uint64_t t0 = fl_test_now_ns();
	int r = raw_timeline_sync(sock, seq, handle);
	uint64_t ms = (fl_test_now_ns() - t0) / 1000000;

	if (ms >= QUICK_MS)
		fl__test_fail(__FILE__, __LINE__, "TIMELINE_SYNC took %llu ms",
			      (unsigned long long)ms);
	return r;
}

/* FENCE_INFO of @fd, which must fail: returns the status. */
static int raw_fence_info_fails(int sock, uint32_t seq, int fd)
{
	int r;

	raw_send_fence_info(sock, seq, fd);
	r = raw_reply(sock, FL_OP_FENCE_INFO, seq);
	fl_assert(r < 0);
	return r;
}

/* The status of fence @fd as the daemon tells the library (through a copy of the fd). */
static int library_fence_status(int fd)
{
	struct fl_fence_info info;
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	fl_assert(copy >= 0);
	fl_assert_int_eq(fl_fence_fd_get_info(copy, &info, NULL, 0), 0);
	close(copy);
	return info.status;
}

static uint64_t counter_get(struct fl_proto_shared_timeline *ctr)
{
	return __atomic_load_n(&ctr->value, __ATOMIC_SEQ_CST);
}

/*
 * Complete a fence as its timeline's owner does, through its pipe signal
 * end: the record (twice for a success), then the close.
 */
static void signal_end_complete(int sig, int32_t status, uint64_t timestamp_ns)
{
	struct record rec[2] = { { RECORD_MAGIC, status, timestamp_ns },
				 { RECORD_MAGIC, status, timestamp_ns } };
	size_t len = status == FL_STATUS_SIGNALED ? sizeof(rec) : sizeof(rec[0]);

	fl_assert_int_eq(write(sig, rec, len), len);
	fl_assert_int_eq(close(sig), 0);
}

/* Bytes queued in pipe fence fd @fd, and the first 32 of them (copied out, left in). */
static int queued_bytes(int fd, void *buf)
{
	int n = -1, p[2];

	fl_assert_int_eq(ioctl(fd, FIONREAD, &n), 0);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	if (n > 0)
		fl_assert(tee(fd, p[1], 32, SPLICE_F_NONBLOCK) > 0);
	if (n > 0)
		fl_assert(read(p[0], buf, 32) > 0);
	close(p[0]);
	close(p[1]);
	return n;
}

static uint64_t xorshift64(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * The owner of timeline @tl (handle @handle on @sock, counter @ctr) stores
 * @value and syncs: the daemon answers quickly, and its timeline reads the
 * counter (the low 32 bits of it if @is32). @seed names the run.
 */
static void scribble(int sock, uint32_t *seq, int tl, uint32_t handle,
		     struct fl_proto_shared_timeline *ctr, bool is32, uint64_t value, uint64_t seed)
{
	uint64_t want = is32 ? (uint32_t)value : value, got;
	int r;

	counter_set(ctr, value);
	r = raw_timeline_sync_quick(sock, (*seq)++, handle);
	if (r != 0)
		fl__test_fail(__FILE__, __LINE__, "seed %llu: TIMELINE_SYNC to %llu: %d",
			      (unsigned long long)seed, (unsigned long long)value, r);
	got = raw_get_value(sock, (*seq)++, tl);
	if (got != want)
		fl__test_fail(__FILE__, __LINE__, "seed %llu: counter %llu, timeline %llu",
			      (unsigned long long)seed, (unsigned long long)value,
			      (unsigned long long)got);
}

/* Sync @handle until its timeline (whose fd was closed) is gone: -ENOENT, connection kept. */
static void sync_until_gone(int sock, uint32_t *seq, uint32_t handle,
			    struct fl_proto_shared_timeline *ctr)
{
	uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	int r;

	for (;;) {
		counter_set(ctr, counter_get(ctr) + 1);
		r = raw_timeline_sync(sock, (*seq)++, handle);
		if (r == -ENOENT)
			break;
		fl_assert_int_eq(r, 0);
		fl_assert(fl_test_now_ns() < deadline);
		fl_test_sleep_ms(5);
	}
	raw_ping_ok(sock, (*seq)++);
}

/* Junk into a signal end until its socket is full (the daemon's record cannot go in). */
static void fill_signal_end(int sig)
{
	char junk[4096];
	ssize_t n;

	memset(junk, 0x5a, sizeof(junk));
	do
		n = write(sig, junk, sizeof(junk));
	while (n > 0);
	fl_assert_int_eq(n, -1);
	fl_assert(errno == EAGAIN || errno == EWOULDBLOCK);
}

/*
 * A TIMELINE_SYNC of a timeline the connection owns, but with header flags
 * @flags, body length @len, @pad, and the timeline's fd attached if
 * @with_fd: the decoder must refuse it with @status, then hang up.
 */
static void sync_malformed(uint32_t flags, uint32_t len, uint32_t pad, bool with_fd, int status)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_sync b;
	} req = { { FL_OP_TIMELINE_SYNC, flags, 190, len }, { 0, pad } };
	uint32_t handle;
	int s = raw_connect(), tl;

	raw_hello(s);
	tl = raw_timeline_create(s, 189, "malformed", &handle);
	req.b.handle = handle;
	raw_send(s, &req, sizeof(req.h) + len, with_fd ? &tl : NULL, with_fd ? 1 : 0);
	expect_reject(s, FL_OP_TIMELINE_SYNC, 190, status);
	close(tl);
}

/*
 * Protocol 3's owned timelines, raw: the shared counter, signal ends, and
 * TIMELINE_SYNC, with an owner that scribbles and lies.
 */
static void hostile_shared_packets(void)
{
	struct fl_proto_shared_timeline *ctr, *ctr32, *ctr_new;
	int s, s2, s3, tl, tl32, tl_new, mfd, pend, f[RAW_MAX_FDS];
	uint32_t handle, handle32, handle_new, h2, slot = 0, seq = 100;
	uint64_t seed = fl_test_now_ns() | 1, x, v;
	unsigned char peek[32];
	struct record rec;
	struct stat st;

	/* The creator gets the counter: one page, sealed against shrinking, growing and resealing. */
	s = raw_connect();
	raw_hello(s);
	tl = raw_timeline_create_flags(s, seq++, "owned", 0, &handle, &mfd);
	fl_assert_int_eq(fstat(mfd, &st), 0);
	fl_assert_int_eq(st.st_size, FL_PROTO_SHARED_SIZE);
	fl_assert_errno(ftruncate(mfd, 0), EPERM);
	fl_assert_errno(ftruncate(mfd, 2 * FL_PROTO_SHARED_SIZE), EPERM);
	fl_assert_int_eq(fcntl(mfd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	/* Say F_SEAL_WRITE, which would make the daemon's own stores fail: no more seals. */
	fl_assert_errno(fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	ctr = counter_map(mfd);
	fl_assert_int_eq(counter_get(ctr), 0);
	/* The counter's fd is no timeline (nor fence): an answer, not a hang-up. */
	fl_assert_int_eq(raw_bind(s, seq++, mfd, &h2), -ENOTTY);
	fl_assert_int_eq(raw_fence_info_fails(s, seq++, mfd), -ENOTTY);

	/*
	 * The owner stores to the counter and tells nobody: the daemon
	 * catches up before it answers anyone (here: the library's FENCE_INFO).
	 */
	raw_pool_fill_ends_ok(s, seq++, 1, slot, f);
	raw_fence_new_ok(s, seq++, 1, handle, slot++);
	fl_assert_int_eq(library_fence_status(f[0]), FL_STATUS_ACTIVE);
	counter_set(ctr, 1);
	/*
	 * The library answers from the status page, which says what the
	 * daemon knows: an owner that told nobody has not signalled for it,
	 * and the fd agrees (not ready).
	 */
	fl_assert_int_eq(library_fence_status(f[0]), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_test_poll_fd(f[0], POLLIN, 0), 0);
	fl_assert_int_eq(raw_fence_status(s, seq++, f[0]), FL_STATUS_SIGNALED);
	fl_assert_int_eq(library_fence_status(f[0]), FL_STATUS_SIGNALED);
	dl_expect_fence_status(f[0], FL_STATUS_SIGNALED);
	fl_assert_int_eq(queued_bytes(f[0], peek), 2 * sizeof(struct record));
	fl_assert_int_eq(raw_get_value(s, seq++, tl), 1);
	close_fds(f, 3);

	/*
	 * A kept end (FL_MSG_F_KEPT): the daemon closes its write end, so the
	 * owner's record and close complete the fence, and the daemon, once
	 * it catches up, agrees.
	 */
	s2 = raw_connect();
	raw_hello(s2);
	raw_pool_fill_ends_ok(s, seq++, 1, slot, f);
	raw_fence_new_flags_ok(s, seq++, FL_MSG_F_KEPT, 2, handle, slot++);
	fl_assert_int_eq(fl_fence_fd_get_status(f[0]), FL_STATUS_ACTIVE);
	fl_assert_int_eq(raw_fence_status(s2, seq++, f[0]), FL_STATUS_ACTIVE);
	counter_set(ctr, 2);
	signal_end_complete(f[1], FL_STATUS_SIGNALED, 12345);
	dl_expect_fence_status(f[0], FL_STATUS_SIGNALED);
	fl_assert_int_eq(raw_fence_status(s2, seq++, f[0]), FL_STATUS_SIGNALED);
	fl_assert_int_eq(queued_bytes(f[0], peek), 2 * sizeof(rec));
	memcpy(&rec, peek, sizeof(rec));
	fl_assert_int_eq(rec.timestamp_ns, 12345); /* ours */
	close(f[0]);
	close(f[2]);

	/*
	 * A kept end closed before the counter got there (an owner that
	 * died, or closed the library's fds): ready, so failed (-ENOENT), for
	 * good, even once the counter gets there; never signalled.
	 */
	raw_pool_fill_ends_ok(s, seq++, 1, slot, f);
	raw_fence_new_flags_ok(s, seq++, FL_MSG_F_KEPT, 3, handle, slot++);
	close(f[1]);
	fl_assert_int_eq(raw_fence_status(s2, seq++, f[0]), -ENOENT);
	dl_expect_fence_status(f[0], -ENOENT);
	counter_set(ctr, 3);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	dl_expect_fence_status(f[0], -ENOENT);
	fl_assert_int_eq(raw_fence_status(s2, seq++, f[0]), -ENOENT);
	close(f[0]);
	close(f[2]);

	/*
	 * Signal ends abused: one is a pipe, which cannot be shut down; one
	 * stuffed with junk so that the daemon's record cannot go in. Neither
	 * may hurt the daemon, whose answer stands.
	 */
	raw_pool_fill_ends_ok(s, seq++, 2, slot, f);
	raw_fence_new_ok(s, seq++, 4, handle, slot++);
	raw_fence_new_ok(s, seq++, 4, handle, slot++);
	fl_assert_errno(shutdown(f[2], SHUT_RDWR), ENOTSOCK);
	fill_signal_end(f[3]);
	counter_set(ctr, 4);
	fl_assert_int_eq(raw_timeline_sync_quick(s, seq++, handle), 0);
	dl_expect_fence_status(f[0], FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_status(f[1]), FL_STATUS_SIGNALED); /* junk: asked */
	fl_assert_int_eq(raw_fence_status(s2, seq++, f[1]), FL_STATUS_SIGNALED);
	close_fds(f, 5);
	raw_ping_ok(s, seq++);
	raw_ping_ok(s2, seq++);

	/* Nor is a signal end a timeline. */
	raw_pool_fill_ends_ok(s, seq++, 1, slot, f);
	raw_fence_new_ok(s, seq++, 5, handle, slot++);
	fl_assert_int_eq(raw_bind(s2, seq++, f[1], &h2), -ENOTTY);
	close_fds(f, 3);
	counter_set(ctr, 5);

	/*
	 * The rest of the page is not the daemon's business, and a hole
	 * punched in it (the seals allow that) reads as a counter of 0.
	 */
	memset(ctr->reserved, 0xff, sizeof(ctr->reserved));
	counter_set(ctr, 6);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(raw_get_value(s, seq++, tl), 6);
	fl_assert_int_eq(fallocate(mfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				   FL_PROTO_SHARED_SIZE),
			 0);
	fl_assert_int_eq(counter_get(ctr), 0);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(raw_get_value(s, seq++, tl), 0);
	counter_set(ctr, 9); /* the same page for both of us again */
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(raw_get_value(s, seq++, tl), 9);
	close(mfd);
	library_round();

	/*
	 * Scribbling: the counter is the owner's to ruin, and only its own
	 * timeline follows it (modulo 2^64). A fence far ahead passes on the way.
	 */
	raw_pool_fill_ok(s, seq++, 1, slot, f);
	raw_fence_new_ok(s, seq++, 1000, handle, slot++);
	pend = f[0];
	scribble(s, &seq, tl, handle, ctr, false, UINT64_MAX, 0);
	dl_expect_fence_status(pend, FL_STATUS_SIGNALED);
	close(pend);
	scribble(s, &seq, tl, handle, ctr, false, 0, 0);
	scribble(s, &seq, tl, handle, ctr, false, 1ull << 63, 0);
	scribble(s, &seq, tl, handle, ctr, false, 7, 0);
	x = seed;
	for (int i = 0; i < 32; i++)
		scribble(s, &seq, tl, handle, ctr, false, xorshift64(&x), seed);
	/* Everybody else's signal goes into the counter too. */
	v = counter_get(ctr);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(counter_get(ctr), v + 1);
	fl_assert_int_eq(raw_get_value(s, seq++, tl), v + 1);
	library_round();

	/* A 32-bit timeline: a jump of 2^40 is a single wrap, not a loop of 2^9 of them. */
	tl32 = raw_timeline_create_flags(s, seq++, "owned-32", FL_SW_SYNC_32BIT, &handle32, &mfd);
	ctr32 = counter_map(mfd);
	close(mfd);
	raw_pool_fill_ok(s, seq++, 1, slot, f);
	raw_fence_new_ok(s, seq++, 3, handle32, slot++);
	pend = f[0];
	scribble(s, &seq, tl32, handle32, ctr32, true, 1ull << 40, 0);
	dl_expect_fence_status(pend, FL_STATUS_SIGNALED);
	close(pend);
	scribble(s, &seq, tl32, handle32, ctr32, true, UINT64_MAX, 0);
	scribble(s, &seq, tl32, handle32, ctr32, true, 0, 0);
	scribble(s, &seq, tl32, handle32, ctr32, true, (1ull << 33) + 5, 0);
	scribble(s, &seq, tl32, handle32, ctr32, true, UINT32_MAX, 0);
	for (int i = 0; i < 32; i++)
		scribble(s, &seq, tl32, handle32, ctr32, true, xorshift64(&x), seed);
	v = counter_get(ctr32);
	fl_assert_int_eq(fl_timeline_fd_inc(tl32, 1), 0);
	fl_assert_int_eq(counter_get(ctr32), v + 1);
	fl_assert_int_eq(raw_get_value(s, seq++, tl32), (uint32_t)(v + 1));

	/*
	 * Its fd closed, the timeline dies: -ENOENT, and its pending fence
	 * says so (2^30 ahead, which the syncs meanwhile do not reach).
	 */
	raw_pool_fill_ok(s, seq++, 1, slot, f);
	raw_fence_new_ok(s, seq++, (uint32_t)(v + (1u << 30)), handle32, slot++);
	pend = f[0];
	close(tl32);
	sync_until_gone(s, &seq, handle32, ctr32);
	dl_expect_fence_status(pend, -ENOENT);
	close(pend);
	/* A new timeline (it may get the dead one's handle) has a counter of its own. */
	tl_new = raw_timeline_create_flags(s, seq++, "after", 0, &handle_new, &mfd);
	ctr_new = counter_map(mfd);
	close(mfd);
	counter_set(ctr32, 12345);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle_new), 0);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle32),
			 handle32 == handle_new ? 0 : -ENOENT);
	fl_assert_int_eq(raw_get_value(s, seq++, tl_new), 0);
	counter_set(ctr_new, 5);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle_new), 0);
	fl_assert_int_eq(raw_get_value(s, seq++, tl_new), 5);
	counter_unmap(ctr32);
	counter_unmap(ctr_new);
	close(tl_new);
	library_round();

	/* Malformed: a pad, a flag, a body too short, an fd: refused by the decoder. */
	sync_malformed(0, sizeof(struct fl_msg_timeline_sync), 1, false, -EINVAL);
	sync_malformed(0, sizeof(struct fl_msg_timeline_sync), UINT32_MAX, false, -EINVAL);
	sync_malformed(FL_MSG_F_REPLY, sizeof(struct fl_msg_timeline_sync), 0, false, -EINVAL);
	sync_malformed(0, sizeof(uint32_t), 0, false, -EPROTO);
	sync_malformed(0, sizeof(struct fl_msg_timeline_sync), 0, true, -EINVAL);

	/* Handles this connection never got: none at all, one past the last, the largest. */
	s3 = raw_connect();
	raw_hello(s3);
	raw_send_timeline_sync(s3, 192, 0, 0);
	expect_reject(s3, FL_OP_TIMELINE_SYNC, 192, -EBADMSG);
	for (int i = 0; i < 2; i++) {
		uint32_t h3;
		int tl3;

		s3 = raw_connect();
		raw_hello(s3);
		tl3 = raw_timeline_create(s3, 193, "unbound", &h3);
		raw_send_timeline_sync(s3, 194, i ? UINT32_MAX : h3 + 1, 0);
		expect_reject(s3, FL_OP_TIMELINE_SYNC, 194, -EBADMSG);
		close(tl3);
	}
	library_round();

	/*
	 * Not the creator: a connection that bound the timeline has no
	 * counter, and its TIMELINE_SYNC only catches up with the owner's.
	 */
	fl_assert_int_eq(raw_bind(s2, seq++, tl, &h2), 0);
	scribble(s, &seq, tl, handle, ctr, false, 100, 0);
	v = 103;
	raw_pool_fill_ok(s2, seq++, 1, 0, f);
	raw_fence_new_ok(s2, seq++, v, h2, 0);
	counter_set(ctr, v);
	fl_assert_int_eq(raw_timeline_sync(s2, seq++, h2), 0);
	dl_expect_fence_status(f[0], FL_STATUS_SIGNALED);
	close(f[0]);
	fl_assert_int_eq(raw_get_value(s2, seq++, tl), v);
	fl_assert_int_eq(raw_timeline_signal(s2, seq++, h2, 2), 0);
	fl_assert_int_eq(counter_get(ctr), v + 2);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(raw_get_value(s, seq++, tl), v + 2);
	close(tl);
	sync_until_gone(s2, &seq, h2, ctr);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), -ENOENT);
	counter_unmap(ctr);
	close(s2);
	close(s);
	library_round();

	/*
	 * A full fill with signal ends: 65 fds, the second half the write
	 * ends of the first's pipes, in order, then the kick pipe. They
	 * outlive the connection while we hold them, and leak nothing in the
	 * daemon.
	 */
	s = raw_connect();
	raw_hello(s);
	raw_pool_fill_ends_ok(s, seq++, FL_PROTO_POOL_FILL_MAX, 0, f);
	for (int i = 0; i < FL_PROTO_POOL_FILL_MAX; i++)
		expect_end_of(f[i], f[FL_PROTO_POOL_FILL_MAX + i],
			      0x51ed000000000000ull + (uint64_t)i);
	expect_fence_pipe(f[2 * FL_PROTO_POOL_FILL_MAX]);
	/* Nothing left behind by the check: still no record. */
	for (int i = 0; i < FL_PROTO_POOL_FILL_MAX; i++)
		fl_assert_int_eq(fl_fence_fd_get_status(f[i]), FL_STATUS_ACTIVE);
	tl = raw_timeline_create(s, seq++, "ends", &handle);
	raw_fence_new_ok(s, seq++, 1, handle, 0);
	fl_assert_int_eq(raw_timeline_signal(s, seq++, handle, 1), 0);
	dl_expect_fence_status(f[0], FL_STATUS_SIGNALED);
	close(s);
	/* Unused, the daemon's records went in when it dropped the connection. */
	dl_expect_fence_status(f[1], -ECONNRESET);
	close(f[FL_PROTO_POOL_FILL_MAX + 2]);
	f[FL_PROTO_POOL_FILL_MAX + 2] = -1;
	dl_expect_fence_status(f[2], -ECONNRESET);
	close_fds(f, 2 * FL_PROTO_POOL_FILL_MAX + 1);
	close(tl);
	library_round();

	/*
	 * A pooled fence fd and its signal end are a real pair: offered to
	 * FENCE_CREATE, then the slot used by FENCE_NEW. The client only
	 * confuses its own fence; the daemon answers both and leaks nothing.
	 */
	s = raw_connect();
	raw_hello(s);
	tl = raw_timeline_create(s, seq++, "pooled-pair", &handle);
	raw_pool_fill_ends_ok(s, seq++, 1, 0, f);
	close(f[2]);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_create b;
		} req = { { FL_OP_FENCE_CREATE, FL_MSG_F_REPLY, seq,
			    sizeof(struct fl_msg_fence_create) },
			  { 1, "pooled" } };
		int three[3] = { tl, f[1], f[0] };
		int r;

		raw_send(s, &req, sizeof(req), three, 3);
		r = raw_reply(s, FL_OP_FENCE_CREATE, seq++);
		if (r == 0) {
			raw_send_fence_new(s, seq, FL_MSG_F_REPLY, 1, handle, 0);
			r = raw_reply(s, FL_OP_FENCE_NEW, seq++);
			fl_assert(r <= 0);
			fl_assert_int_eq(raw_timeline_signal(s, seq++, handle, 1), 0);
			/* Completed, with whatever the mix-up left in it first. */
			fl_assert_int_ne(fl_fence_fd_get_status(f[0]), FL_STATUS_ACTIVE);
			raw_ping_ok(s, seq++);
			close(s);
		} else {
			fl_assert_int_eq(r, -EBADMSG);
			expect_reject(s, FL_OP_FENCE_CREATE, seq - 1, 1);
		}
	}
	close_fds(f, 2);
	close(tl);
	library_round();
}

static void hostile_packets(void)
{
	struct fl_msg_hdr h;
	unsigned char junk[40];
	int s, p[2], sv1[2], sv2[2], fds[10], tl;

	/* Garbage: a header that names nothing sensible. */
	s = raw_connect();
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(0xa5 ^ (i * 37));
	raw_send(s, junk, sizeof(junk), NULL, 0);
	memcpy(&h, junk, sizeof(h));
	expect_reject(s, h.op & ~FL_OP_REPLY, h.seq, -EPROTO);
	library_round();

	/* Shorter than a header: no seq to answer, just the door. */
	s = raw_connect();
	raw_send(s, "\x01\x00\x00", 3, NULL, 0);
	fl_assert_int_eq(raw_reply(s, 0, 0), 1);
	close(s);

	/* A HELLO whose length field disagrees with the packet. */
	s = raw_connect();
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_hello b;
		} req = { { FL_OP_HELLO, 0, 3, sizeof(struct fl_msg_hello) + 4 },
			  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };

		raw_send(s, &req, sizeof(req), NULL, 0);
	}
	expect_reject(s, FL_OP_HELLO, 3, -EPROTO);

	/* An op nobody defined, after a proper HELLO. */
	s = raw_connect();
	raw_hello(s);
	h = (struct fl_msg_hdr){ 200, 0, 8, 0 };
	raw_send(s, &h, sizeof(h), NULL, 0);
	expect_reject(s, 200, 8, -EOPNOTSUPP);
	library_round();

	/* A request before HELLO. */
	s = raw_connect();
	h = (struct fl_msg_hdr){ FL_OP_PING, 0, 5, 0 };
	raw_send(s, &h, sizeof(h), NULL, 0);
	expect_reject(s, FL_OP_PING, 5, -EPROTO);

	/* FENCE_CREATE whose "pair" is two unrelated sockets. */
	tl = new_timeline("victim");
	s = raw_connect();
	raw_hello(s);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv1), 0);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv2), 0);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_create b;
		} req = { { FL_OP_FENCE_CREATE, FL_MSG_F_REPLY, 9,
			    sizeof(struct fl_msg_fence_create) },
			  { 1, "liar" } };
		int three[3] = { tl, sv1[0], sv2[1] };

		raw_send(s, &req, sizeof(req), three, 3);
	}
	expect_reject(s, FL_OP_FENCE_CREATE, 9, -EBADMSG);
	for (int i = 0; i < 2; i++) {
		close(sv1[i]);
		close(sv2[i]);
	}
	/* The timeline the liar named is unharmed. */
	{
		int f = new_fence(tl, 1, "after-liar");

		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(f, DL_LONG_WAIT_MS), 0);
		close(f);
	}

	/* Ten fds on a PING: more than any request carries. */
	s = raw_connect();
	raw_hello(s);
	for (int i = 0; i < 10; i += 2)
		fl_assert_int_eq(pipe2(&fds[i], O_CLOEXEC), 0);
	h = (struct fl_msg_hdr){ FL_OP_PING, 0, 11, 0 };
	raw_send(s, &h, sizeof(h), fds, 10);
	for (int i = 0; i < 10; i++)
		close(fds[i]);
	expect_reject(s, FL_OP_PING, 11, -EPROTO);

	/* Non-sockets where a timeline or a fence belongs: an answer, not a hang-up. */
	s = raw_connect();
	raw_hello(s);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_timeline_inc b;
		} inc = { { FL_OP_TIMELINE_INC, 0, 20, sizeof(struct fl_msg_timeline_inc) },
			  { 1 } };
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_info b;
		} info = { { FL_OP_FENCE_INFO, 0, 21, sizeof(struct fl_msg_fence_info) },
			   { 0, 1 } };
		struct fl_msg_hdr get = { FL_OP_TIMELINE_GET_VALUE, 0, 22, 0 };

		raw_send(s, &inc, sizeof(inc), &p[0], 1);
		fl_assert_int_eq(raw_reply(s, FL_OP_TIMELINE_INC, 20), -ENOTTY);
		raw_send(s, &info, sizeof(info), &p[1], 1);
		fl_assert_int_eq(raw_reply(s, FL_OP_FENCE_INFO, 21), -ENOTTY);
		/* A timeline fd where a fence belongs, and the reverse. */
		info.h.seq = 23;
		raw_send(s, &info, sizeof(info), &tl, 1);
		fl_assert_int_eq(raw_reply(s, FL_OP_FENCE_INFO, 23), -ENOTTY);
		raw_send(s, &get, sizeof(get), &p[0], 1);
		fl_assert_int_eq(raw_reply(s, FL_OP_TIMELINE_GET_VALUE, 22), -ENOTTY);
	}
	raw_ping_ok(s, 30);
	close(s);
	close(p[0]);
	close(p[1]);
	close(tl);

	hostile_pool_packets();
	hostile_shared_packets();
}

/*
 * A POOL_FILL with FL_POOL_F_INODES (sync 5) answers each pipe's inode
 * number after the reply, in slot order: its fence fd's and its signal
 * end's, which the library records as their identity instead of an
 * fstat() of each. Without the flag, the reply is as before.
 */
static void pool_fill_inodes_ok(int s, uint32_t seq, uint32_t count, uint32_t flags)
{
	struct {
		struct fl_msg_pool_reply rep;
		uint64_t ino[FL_PROTO_POOL_FILL_MAX];
	} body;
	int fds[2 * FL_PROTO_POOL_FILL_MAX + 1];
	unsigned int n, per = flags & FL_POOL_F_SIGNAL_ENDS ? 2 : 1;
	struct stat st;

	raw_send_pool_fill(s, seq, count, flags | FL_POOL_F_INODES);
	fl_assert_int_eq(raw_reply_fds(s, FL_OP_POOL_FILL, seq, &body,
				       sizeof(body.rep) + count * sizeof(uint64_t), fds,
				       sizeof(fds) / sizeof(fds[0]), &n),
			 0);
	fl_assert_int_eq(body.rep.count, count);
	/* With signal ends, the kick pipe comes last. */
	fl_assert_int_eq(n, count * per + (per == 2 ? 1 : 0));
	for (unsigned int i = 0; i < count; i++) {
		fl_assert_int_eq(fstat(fds[i], &st), 0);
		fl_assert(S_ISFIFO(st.st_mode));
		fl_assert_int_eq(st.st_ino, body.ino[i]);
		if (per == 2) {
			fl_assert_int_eq(fstat(fds[count + i], &st), 0);
			fl_assert_int_eq(st.st_ino, body.ino[i]);
		}
		for (unsigned int j = 0; j < i; j++)
			fl_assert(body.ino[j] != body.ino[i]);
	}
	close_fds(fds, n);
}

/* FENCELINE_FD_KIND=socket: the daemon's fence fds are socket pairs (env-vars.md). */
static bool pipes_in_use(void)
{
	const char *kind = getenv("FENCELINE_FD_KIND");

	return !kind || strcmp(kind, "socket");
}

FL_TEST(pool_fill_names_each_pipes_inode_when_asked)
{
	uint32_t handle;
	int s, tl, a[4];

	if (!pipes_in_use())
		fl_test_skip("the daemon hands out socket pairs here (no inode numbers)");
	s = raw_connect();
	raw_hello(s);
	pool_fill_inodes_ok(s, 1, 4, 0);
	pool_fill_inodes_ok(s, 2, FL_PROTO_POOL_FILL_MAX, 0);
	/* The 16-byte reply of sync 4 without the flag (raw_pool_fill_ok() checks its size). */
	raw_pool_fill_ok(s, 3, 2, 4 + FL_PROTO_POOL_FILL_MAX, a);
	close_fds(a, 2);
	close(s);

	/* An owner's fill: signal ends and the kick pipe, each end the same inode as its fd. */
	s = raw_connect();
	raw_hello(s);
	tl = raw_timeline_create(s, 10, "inodes", &handle);
	pool_fill_inodes_ok(s, 11, 3, FL_POOL_F_SIGNAL_ENDS);
	raw_ping_ok(s, 12);
	close(s);
	close(tl);
}

FL_TEST(hostile_packets_get_errors_or_disconnect_and_leak_nothing)
{
	pid_t daemon = fl_daemon_connect(), good;
	int stop[2], base;

	fl_assert(daemon > 0);
	library_round();
	base = dl_daemon_fd_baseline(daemon);

	/* A well-behaved client keeps working from another process throughout. */
	fl_assert_int_eq(pipe2(stop, O_CLOEXEC), 0);
	good = dl_fork();
	if (good == 0) {
		char byte;

		close(stop[1]);
		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		while (read(stop[0], &byte, 1) < 0 && errno == EAGAIN)
			library_round();
		_exit(0);
	}
	close(stop[0]);
	hostile_packets();
	library_round();
	close(stop[1]);
	dl_wait_child_ok(good);

	fl_assert_int_eq(fl_daemon_connect(), daemon);
	fl_daemon_disconnect(); /* its ready fence fds are the daemon's too */
	dl_expect_daemon_fds_back(daemon, base);
}

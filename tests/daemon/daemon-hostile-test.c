/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world: many clients at once, clients of another
 * user, raw connections sending what no library would, per-client limits,
 * many processes starting a daemon at the same moment, and the idle exit.
 * Each test that can checks the daemon's own fds (/proc/PID/fd) return to
 * their count from before, since a leak inside the daemon is invisible to
 * the runner's check of the test process.
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
#include "helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"
#include "statuspage.h"

static int new_timeline(const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_timeline_fd_create(name, 0, &fd), 0);
	return fd;
}

static int new_fence(int tl, uint64_t value, const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_fd_create(tl, value, name, &fd), 0);
	return fd;
}

static int new_merge(int a, int b, const char *name)
{
	int fd = -1;

	fl_assert_int_eq(fl_fence_fd_merge(a, b, name, 0, &fd), 0);
	return fd;
}

/* One full round of the fd API through the library: it must keep working. */
static void library_round(void)
{
	int tl = new_timeline("good"), f = new_fence(tl, 1, "good"), m = new_merge(f, f, "good");
	struct fl_fence_info info;

	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, NULL, 0), 0);
	fl_assert_int_eq(info.num_points, 1);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(m, DL_LONG_WAIT_MS), 0);
	close(m);
	close(f);
	close(tl);
}

/* ---- many clients ---- */

#define HAMMER_PROCS 32
#define HAMMER_ITERS 25

/*
 * One of a pair of processes: each round makes a timeline and fences,
 * merges, queries and signals them, and swaps a fence with its partner,
 * which merges it with one of its own.
 */
static void hammer_process(int index, int partner_sock, int start)
{
	char byte, name[32];

	snprintf(name, sizeof(name), "hammer-%d", index);
	dl_read_all(start, &byte, 1);
	for (int it = 0; it < HAMMER_ITERS; it++) {
		struct fl_sync_pt_info pts[2];
		struct fl_fence_info info;
		int tl = new_timeline(name);
		int f1 = new_fence(tl, 1, "one"), f2 = new_fence(tl, 2, "two");
		int m = new_merge(f1, f2, name), theirs, both;
		uint64_t v;

		fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 1);
		fl_assert_int_eq(pts[0].value, 2);
		fl_assert_str_eq(info.name, name);
		dl_send_fd(partner_sock, f2);
		theirs = dl_recv_fd(partner_sock);
		both = new_merge(theirs, f2, "both");
		fl_assert_int_eq(fl_fence_fd_get_info(both, &info, pts, 2), 2);
		fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(f1, DL_LONG_WAIT_MS), 0);
		fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(m, DL_LONG_WAIT_MS), 0);
		/* Needs the partner's timeline too, which it signals in its own round. */
		fl_assert_int_eq(fl_fence_fd_wait(both, DL_LONG_WAIT_MS), 0);
		/*
		 * Not wait(theirs, 0): "both" and "theirs" are separate fences of
		 * the partner's point, and one fd may turn readable a moment
		 * before the other.
		 */
		fl_assert_int_eq(fl_fence_fd_wait(theirs, DL_LONG_WAIT_MS), 0);
		fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
		fl_assert_int_eq(v, 2);
		/* Keep the partner's timeline alive until both are done with it. */
		dl_write_all(partner_sock, "d", 1);
		dl_read_all(partner_sock, &byte, 1);
		close(both);
		close(theirs);
		close(m);
		close(f2);
		close(f1);
		close(tl);
	}
	_exit(0);
}

FL_TEST_TIMEOUT(many_processes_hammer_one_daemon_without_leaking, 180)
{
	pid_t pids[HAMMER_PROCS], daemon = fl_daemon_connect();
	int start[2], base;

	fl_assert(daemon > 0);
	/* Let the daemon settle (a connection, a round trip) before counting. */
	library_round();
	base = dl_daemon_fd_baseline(daemon);

	fl_assert_int_eq(pipe2(start, O_CLOEXEC), 0);
	for (int i = 0; i < HAMMER_PROCS; i += 2) {
		int sv[2];

		/* Stream pairs: fl_send() frames the payload byte; the "d" bytes are raw. */
		fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
		for (int k = 0; k < 2; k++) {
			pids[i + k] = dl_fork();
			if (pids[i + k] == 0) {
				close(start[1]);
				close(sv[1 - k]);
				hammer_process(i + k, sv[k], start[0]);
			}
		}
		close(sv[0]);
		close(sv[1]);
	}
	close(start[0]);
	/* All at once. */
	for (int i = 0; i < HAMMER_PROCS; i++)
		dl_write_all(start[1], "s", 1);
	for (int i = 0; i < HAMMER_PROCS; i++)
		dl_wait_child_ok(pids[i]);
	close(start[1]);
	fl_assert_int_eq(fl_daemon_connect(), daemon);
	library_round();
	/* Our own connection's ready fence fds are the daemon's too: hand them back. */
	fl_daemon_disconnect();
	dl_expect_daemon_fds_back(daemon, base);
}

/* ---- other users ---- */

#define NOBODY 65534

static int connect_as_nobody(const char *path)
{
	pid_t pid = dl_fork();
	int status;

	if (pid == 0) {
		int r;

		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(100);
		setenv("FENCELINE_SOCKET", path, 1);
		r = fl_daemon_connect();
		_exit(r == -EACCES ? 1 : r > 0 ? 0 : 2);
	}
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status));
	fl_assert_int_ne(WEXITSTATUS(status), 100);
	return WEXITSTATUS(status);
}

FL_TEST(daemon_refuses_other_user_unless_allowed)
{
	char dir[] = "/tmp/fl-daemon-uid-XXXXXX", closed[128], open_[128];
	static const char *const allow[] = { "--allow-uid", "65534", "--idle-timeout", "0", NULL };
	static const char *const own[] = { "--idle-timeout", "0", NULL };
	pid_t d;

	if (geteuid() != 0)
		fl_test_skip("needs root to become another user");
	fl_assert(mkdtemp(dir));
	fl_assert_int_eq(chmod(dir, 0755), 0);
	snprintf(closed, sizeof(closed), "%s/own.sock", dir);
	snprintf(open_, sizeof(open_), "%s/shared.sock", dir);

	/* A daemon for root only; the socket opened up so that only the daemon says no. */
	d = dl_daemon_start(closed, own);
	fl_assert_int_eq(chmod(closed, 0666), 0);
	fl_assert_int_eq(connect_as_nobody(closed), 1);
	dl_daemon_stop(d);

	/* --allow-uid: the daemon opens the socket itself and serves nobody. */
	d = dl_daemon_start(open_, allow);
	{
		struct stat st;

		fl_assert_int_eq(stat(open_, &st), 0);
		fl_assert_int_eq(st.st_mode & 0777, 0666);
	}
	fl_assert_int_eq(connect_as_nobody(open_), 0);
	dl_daemon_stop(d);

	unlink(closed);
	unlink(open_);
	{
		char lock[160];

		snprintf(lock, sizeof(lock), "%s.lock", closed);
		unlink(lock);
		snprintf(lock, sizeof(lock), "%s.lock", open_);
		unlink(lock);
	}
	fl_assert_int_eq(rmdir(dir), 0);
}

/* ---- raw connections ---- */

static int raw_connect(void)
{
	return raw_connect_to(NULL);
}

static void raw_hello(int sock)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 7, sizeof(struct fl_msg_hello) }, { FL_PROTO_VERSION, 0 } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 7), 0);
}

/* The daemon answered @status (if @status is not 1) and then hung up. */
static void expect_reject(int sock, uint32_t op, uint32_t seq, int status)
{
	if (status != 1)
		fl_assert_int_eq(raw_reply(sock, op, seq), status);
	fl_assert_int_eq(raw_reply(sock, op, seq), 1);
	close(sock);
}

static void raw_ping_ok(int sock, uint32_t seq)
{
	struct fl_msg_hdr h = { FL_OP_PING, 0, seq, 0 };

	raw_send(sock, &h, sizeof(h), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_PING, seq), 0);
}

/* The most fds a reply carries: POOL_FILL with signal ends. */
/* A fill with signal ends: the fence fds, their ends, and the kick pipe. */
#define RAW_MAX_FDS (2 * FL_PROTO_POOL_FILL_MAX + 1)

/*
 * raw_reply() for the replies that may carry fds (TIMELINE_CREATE,
 * TIMELINE_BIND, POOL_FILL): receives them with SCM_RIGHTS instead of
 * letting the kernel drop them. On success the body (status first) must be
 * exactly @size bytes and goes to @body; the fds go to @fds (room for
 * @cap), their number to *@nfds. An error must be a bare status without
 * fds. Returns the status, or 1 on EOF (disconnected).
 */
static int raw_reply_fds(int sock, uint32_t op, uint32_t seq, void *body, size_t size, int *fds,
			 unsigned int cap, unsigned int *nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * RAW_MAX_FDS)];
	} cbuf;
	unsigned char buf[FL_PROTO_MAX_REPLY];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct fl_msg_hdr h;
	struct fl_msg_reply r;
	ssize_t n;

	*nfds = 0;
	msg.msg_control = cbuf.buf;
	msg.msg_controllen = sizeof(cbuf.buf);
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 1;
	fl_assert(n >= (ssize_t)(sizeof(h) + sizeof(r)));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		fl_assert(c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS);
		fl_assert(*nfds + k <= cap);
		memcpy(&fds[*nfds], CMSG_DATA(c), k * sizeof(int));
		*nfds += (unsigned int)k;
	}
	/* Our buffer holds the most any reply carries: the daemon sent more, or junk. */
	fl_assert(!(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)));
	memcpy(&h, buf, sizeof(h));
	memcpy(&r, buf + sizeof(h), sizeof(r));
	fl_assert_int_eq(h.op, op | FL_OP_REPLY);
	fl_assert_int_eq(h.seq, seq);
	fl_assert_int_eq(h.len, (size_t)n - sizeof(h));
	if (r.status == 0) {
		fl_assert_int_eq(h.len, size);
		memcpy(body, buf + sizeof(h), size);
	} else {
		fl_assert_int_eq(h.len, sizeof(r));
		fl_assert_int_eq(*nfds, 0);
	}
	return r.status;
}

static void close_fds(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * TIMELINE_CREATE with @flags (0 or FL_SW_SYNC_32BIT): returns the timeline
 * fd that came with the reply, its handle in *@handle, and the shared
 * counter's memfd in *@memfd (closed if @memfd is NULL).
 */
static int raw_timeline_create_flags(int sock, uint32_t seq, const char *name, uint32_t flags,
				     uint32_t *handle, int *memfd)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} req = { { FL_OP_TIMELINE_CREATE, 0, seq, sizeof(struct fl_msg_timeline_create) },
		  { .flags = flags } };
	struct fl_msg_bind_reply rep;
	int fds[RAW_MAX_FDS];
	unsigned int n;

	snprintf(req.b.name, sizeof(req.b.name), "%s", name);
	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply_fds(sock, FL_OP_TIMELINE_CREATE, seq, &rep, sizeof(rep), fds,
				       RAW_MAX_FDS, &n),
			 0);
	/* The creator also gets the timeline's shared counter. */
	fl_assert_int_eq(rep.flags, FL_BIND_F_SHARED);
	fl_assert_int_eq(n, 2);
	if (memfd)
		*memfd = fds[1];
	else
		close(fds[1]);
	fl_assert_int_ne(rep.handle, UINT32_MAX);
	*handle = rep.handle;
	return fds[0];
}

/* TIMELINE_CREATE: returns the timeline fd that came with the reply, its handle in *@handle. */
static int raw_timeline_create(int sock, uint32_t seq, const char *name, uint32_t *handle)
{
	return raw_timeline_create_flags(sock, seq, name, 0, handle, NULL);
}

/* TIMELINE_BIND of @fd: returns the status, the handle in *@handle on success. */
static int raw_bind(int sock, uint32_t seq, int fd, uint32_t *handle)
{
	struct fl_msg_hdr h = { FL_OP_TIMELINE_BIND, 0, seq, 0 };
	struct fl_msg_bind_reply rep;
	int fds[RAW_MAX_FDS];
	unsigned int n;
	int r;

	raw_send(sock, &h, sizeof(h), &fd, 1);
	r = raw_reply_fds(sock, FL_OP_TIMELINE_BIND, seq, &rep, sizeof(rep), fds, RAW_MAX_FDS, &n);
	fl_assert_int_eq(n, 0);
	if (r == 0)
		*handle = rep.handle;
	return r;
}

static void raw_send_pool_fill(int sock, uint32_t seq, uint32_t count, uint32_t flags)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_pool_fill b;
	} req = { { FL_OP_POOL_FILL, 0, seq, sizeof(struct fl_msg_pool_fill) }, { count, flags } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

/* A POOL_FILL that must work in full: @count fds, slots @first onwards, to @fds. */
static void raw_pool_fill_ok(int sock, uint32_t seq, uint32_t count, uint32_t first, int *fds)
{
	struct fl_msg_pool_reply rep;
	unsigned int n;

	raw_send_pool_fill(sock, seq, count, 0);
	fl_assert_int_eq(
		raw_reply_fds(sock, FL_OP_POOL_FILL, seq, &rep, sizeof(rep), fds, count, &n), 0);
	fl_assert_int_eq(rep.first, first);
	fl_assert_int_eq(rep.count, count);
	fl_assert_int_eq(n, count);
	/* Not fences yet: nothing to read. */
	for (unsigned int i = 0; i < n; i++)
		fl_assert_int_eq(fl_fence_fd_get_status(fds[i]), FL_STATUS_ACTIVE);
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

static void raw_send_fence_new(int sock, uint32_t seq, uint32_t flags, uint64_t value,
			       uint32_t handle, uint32_t slot)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_new b;
	} req = { { FL_OP_FENCE_NEW, flags, seq, sizeof(struct fl_msg_fence_new) },
		  { value, "raw", handle, slot } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

/* Protocol 2's ops, raw: TIMELINE_BIND, POOL_FILL and FENCE_NEW. */
static void hostile_pool_packets(void)
{
	static const struct fl_msg_pool_fill bad_fills[] = {
		{ 0, 0 },
		{ FL_PROTO_POOL_FILL_MAX + 1, 0 },
		{ 1, 2 },
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

/*
 * POOL_FILL with FL_POOL_F_SIGNAL_ENDS that must work in full: @count fence
 * fds (slots @first onwards) to @fds, then their signal ends in the same
 * order (pipe write ends), then the connection's kick pipe: room for
 * 2 * @count + 1.
 */
static void raw_pool_fill_ends_ok(int sock, uint32_t seq, uint32_t count, uint32_t first, int *fds)
{
	struct fl_msg_pool_reply rep;
	unsigned int n;

	raw_send_pool_fill(sock, seq, count, FL_POOL_F_SIGNAL_ENDS);
	fl_assert_int_eq(raw_reply_fds(sock, FL_OP_POOL_FILL, seq, &rep, sizeof(rep), fds,
				       2 * count + 1, &n),
			 0);
	fl_assert_int_eq(rep.first, first);
	fl_assert_int_eq(rep.count, count);
	fl_assert_int_eq(n, 2 * count + 1);
	for (unsigned int i = 0; i < count; i++)
		fl_assert_int_eq(fl_fence_fd_get_status(fds[i]), FL_STATUS_ACTIVE);
}

/* FENCE_NEW of the next pooled slot with @flags (plus the answer), which must work. */
static void raw_fence_new_flags_ok(int sock, uint32_t seq, uint32_t flags, uint64_t value,
				   uint32_t handle, uint32_t slot)
{
	raw_send_fence_new(sock, seq, flags | FL_MSG_F_REPLY, value, handle, slot);
	fl_assert_int_eq(raw_reply(sock, FL_OP_FENCE_NEW, seq), 0);
}

/* FENCE_NEW of the next pooled slot that must work (asks for the answer). */
static void raw_fence_new_ok(int sock, uint32_t seq, uint64_t value, uint32_t handle, uint32_t slot)
{
	raw_send_fence_new(sock, seq, FL_MSG_F_REPLY, value, handle, slot);
	fl_assert_int_eq(raw_reply(sock, FL_OP_FENCE_NEW, seq), 0);
}

static void raw_send_timeline_sync(int sock, uint32_t seq, uint32_t handle, uint32_t pad)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_sync b;
	} req = { { FL_OP_TIMELINE_SYNC, 0, seq, sizeof(struct fl_msg_timeline_sync) },
		  { handle, pad } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

/* TIMELINE_SYNC of @handle: returns the status (1: disconnected). */
static int raw_timeline_sync(int sock, uint32_t seq, uint32_t handle)
{
	raw_send_timeline_sync(sock, seq, handle, 0);
	return raw_reply(sock, FL_OP_TIMELINE_SYNC, seq);
}

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

/* TIMELINE_SIGNAL of @handle by @count: returns the status. */
static int raw_timeline_signal(int sock, uint32_t seq, uint32_t handle, uint64_t count)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_signal b;
	} req = { { FL_OP_TIMELINE_SIGNAL, 0, seq, sizeof(struct fl_msg_timeline_signal) },
		  { count, handle, 0 } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
	return raw_reply(sock, FL_OP_TIMELINE_SIGNAL, seq);
}

/* Receives a reply of exactly @size bytes after the header that must be a success. */
static void raw_reply_body(int sock, uint32_t op, uint32_t seq, void *body, size_t size)
{
	unsigned char buf[FL_PROTO_MAX_REPLY];
	int32_t status = 1;
	ssize_t n = raw_recv_reply(sock, op, seq, buf, &status);

	fl_assert(n > 0);
	fl_assert_int_eq(status, 0);
	fl_assert_int_eq(n, sizeof(struct fl_msg_hdr) + size);
	memcpy(body, buf + sizeof(struct fl_msg_hdr), size);
}

/* TIMELINE_GET_VALUE of @tl, which must work. */
static uint64_t raw_get_value(int sock, uint32_t seq, int tl)
{
	struct fl_msg_hdr h = { FL_OP_TIMELINE_GET_VALUE, 0, seq, 0 };
	struct fl_msg_value_reply rep;

	raw_send(sock, &h, sizeof(h), &tl, 1);
	raw_reply_body(sock, FL_OP_TIMELINE_GET_VALUE, seq, &rep, sizeof(rep));
	return rep.value;
}

/* FENCE_INFO of @fd, asking for no points. */
static void raw_send_fence_info(int sock, uint32_t seq, int fd)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_info b;
	} req = { { FL_OP_FENCE_INFO, 0, seq, sizeof(struct fl_msg_fence_info) }, { 0, 0 } };

	raw_send(sock, &req, sizeof(req), &fd, 1);
}

/* The status of fence @fd as the daemon has it (FENCE_INFO, no points). */
static int raw_fence_status(int sock, uint32_t seq, int fd)
{
	struct fl_msg_info_reply rep;

	raw_send_fence_info(sock, seq, fd);
	raw_reply_body(sock, FL_OP_FENCE_INFO, seq, &rep, sizeof(rep));
	fl_assert_int_eq(rep.num_points, 1);
	fl_assert_int_eq(rep.count, 0);
	return rep.status;
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

static struct fl_proto_shared_timeline *counter_map(int memfd)
{
	void *p = mmap(NULL, FL_PROTO_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);

	fl_assert(p != MAP_FAILED);
	return p;
}

static void counter_unmap(struct fl_proto_shared_timeline *ctr)
{
	fl_assert_int_eq(munmap(ctr, FL_PROTO_SHARED_SIZE), 0);
}

static void counter_set(struct fl_proto_shared_timeline *ctr, uint64_t value)
{
	__atomic_store_n(&ctr->value, value, __ATOMIC_SEQ_CST);
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

/* Is @fd the read end of a mode-0 pipe? */
static void expect_fence_pipe(int fd)
{
	struct stat st;

	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert(S_ISFIFO(st.st_mode));
	fl_assert_int_eq(st.st_mode & 07777, 0);
	fl_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
}

/*
 * @fence and @end are a pipe fence fd and its signal end: the same pipe,
 * the end its write end. A tag written into the end comes out of the fence
 * fd (which holds nothing else before it is a fence).
 */
static void expect_end_of(int fence, int end, uint64_t tag)
{
	struct stat a, b;
	uint64_t got = 0;

	expect_fence_pipe(fence);
	fl_assert_int_eq(fstat(fence, &a), 0);
	fl_assert_int_eq(fstat(end, &b), 0);
	fl_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	fl_assert_int_eq(fcntl(end, F_GETFL) & O_ACCMODE, O_WRONLY);
	fl_assert_int_eq(write(end, &tag, sizeof(tag)), sizeof(tag));
	fl_assert_int_eq(read(fence, &got, sizeof(got)), sizeof(got));
	fl_assert_int_eq(got, tag);
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
			  { FL_PROTO_VERSION, 0 } };

		raw_send(s, &req, sizeof(req), NULL, 0);
	}
	expect_reject(s, FL_OP_HELLO, 3, -EPROTO);

	/* An op nobody defined, after a proper HELLO. */
	s = raw_connect();
	raw_hello(s);
	h = (struct fl_msg_hdr){ 99, 0, 8, 0 };
	raw_send(s, &h, sizeof(h), NULL, 0);
	expect_reject(s, 99, 8, -EOPNOTSUPP);
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

/* ---- limits ---- */

static void limits_child(const char *path)
{
	int tl[3], f[6], m = -1, r;
	uint64_t deadline;

	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	tl[0] = new_timeline("limit-0");
	tl[1] = new_timeline("limit-1");
	fl_assert_int_eq(fl_timeline_fd_create("limit-2", 0, &tl[2]), -EMFILE);

	for (int i = 0; i < 4; i++)
		f[i] = new_fence(tl[0], (uint64_t)i + 1, "ok");
	/* The fifth is accepted here and failed by the daemon. */
	f[4] = new_fence(tl[0], 5, "over");
	dl_expect_fence_status(f[4], -EMFILE);
	fl_assert_int_eq(fl_fence_fd_merge(f[0], f[1], "over", 0, &m), -EMFILE);
	for (int i = 0; i < 4; i++)
		fl_assert_int_eq(fl_fence_fd_get_status(f[i]), FL_STATUS_ACTIVE);

	/* Closing frees room, once the daemon has seen the last copy go. */
	close(f[4]);
	close(f[0]);
	deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	for (;;) {
		f[5] = new_fence(tl[0], 6, "room");
		fl_daemon_flush();
		r = fl_fence_fd_get_status(f[5]);
		if (r != -EMFILE)
			break;
		close(f[5]);
		fl_assert(fl_test_now_ns() < deadline);
		fl_test_sleep_ms(5);
	}
	fl_assert_int_eq(r, FL_STATUS_ACTIVE);

	close(tl[1]);
	for (;;) {
		r = fl_timeline_fd_create("limit-2", 0, &tl[2]);
		if (r != -EMFILE)
			break;
		fl_assert(fl_test_now_ns() < deadline);
		fl_test_sleep_ms(5);
	}
	fl_assert_int_eq(r, 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl[0], 6), 0);
	for (int i = 1; i < 4; i++)
		dl_expect_fence_status(f[i], FL_STATUS_SIGNALED);
	dl_expect_fence_status(f[5], FL_STATUS_SIGNALED);
	_exit(0);
}

FL_TEST(daemon_limits_timelines_and_fences_per_client)
{
	static const char *const limits[] = {
		"--max-fences", "4", "--max-timelines", "2", "--idle-timeout", "0", NULL
	};
	char path[256];
	pid_t d, pid;
	int base;

	dl_runtime_path("limits.sock", path, sizeof(path));
	d = dl_daemon_start(path, limits);
	base = dl_daemon_fd_baseline(d);
	/* The test process is connected elsewhere: a child picks the socket first thing. */
	pid = dl_fork();
	if (pid == 0)
		limits_child(path);
	dl_wait_child_ok(pid);
	/* Twice: the limits count live objects, and the first client's are all gone. */
	pid = dl_fork();
	if (pid == 0)
		limits_child(path);
	dl_wait_child_ok(pid);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
}

/*
 * A process that owns no timeline gets pipe fence fds, whose completed
 * fences the daemon only learns are closed when it sweeps them. Creating
 * and closing born-signalled fences far past --max-fences and the fd quota
 * must still work: the quotas count them only until a sweep.
 */
static void pipe_fences_child(int tl)
{
	struct stat st;
	int fd;

	for (int i = 0; i < 200; i++) {
		fd = new_fence(tl, 0, "born-signalled");
		if (i == 0) {
			fl_assert_int_eq(fstat(fd, &st), 0);
			fl_assert(S_ISFIFO(st.st_mode));
		}
		dl_expect_fence_status(fd, FL_STATUS_SIGNALED);
		close(fd);
	}
	_exit(0);
}

/*
 * @child makes and closes fences of a timeline it does not own, under a
 * daemon of 8 fences and 40 fds per process at most, named @name.
 */
static void under_small_quotas(const char *name, void (*child)(int tl))
{
	static const char *const limits[] = {
		"--max-fences", "8", "--max-fds-per-process", "40", "--idle-timeout", "0", NULL
	};
	char path[256], sock[64];
	pid_t d, pid;

	snprintf(sock, sizeof(sock), "%s.sock", name);
	dl_runtime_path(sock, path, sizeof(path));
	d = dl_daemon_start(path, limits);
	pid = dl_fork();
	if (pid == 0) {
		pid_t maker;
		int tl;

		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		/* Made here, used by a child: that one owns no timeline. */
		tl = new_timeline(name);
		maker = dl_fork();
		if (maker == 0)
			child(tl);
		dl_wait_child_ok(maker);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);
}

FL_TEST(closed_completed_pipe_fences_give_their_quota_back)
{
	under_small_quotas("pipe-quota", pipe_fences_child);
}

/*
 * The same for pending pipe fences: the daemon learns that a pending
 * fence's fd was closed everywhere from a sweep of its new fences' write
 * ends, which it runs before it refuses a quota. Creating and closing
 * pending fences far past --max-fences and the fd quota must work.
 */
static void pending_pipe_fences_child(int tl)
{
	struct stat st;
	int fd;

	for (int i = 0; i < 200; i++) {
		fd = new_fence(tl, 1, "pending");
		if (i == 0) {
			fl_assert_int_eq(fstat(fd, &st), 0);
			fl_assert(S_ISFIFO(st.st_mode));
		}
		fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
		close(fd);
	}
	_exit(0);
}

FL_TEST(closed_pending_pipe_fences_give_their_quota_back)
{
	under_small_quotas("pipe-pending-quota", pending_pipe_fences_child);
}

/*
 * The daemon's death, for pipe fence fds: its write ends close without a
 * record, every waiter (another process too) wakes with -ECONNRESET, and
 * reading the status starts no new daemon.
 */
static bool someone_listens(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool yes;

	fl_assert(s >= 0);
	fl_assert(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	yes = connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(s);
	return yes;
}

/*
 * Pending fence @fd is waited on here and by a forked waiter while daemon
 * @daemon is SIGKILLed: both waits, and the status after, end in
 * -ECONNRESET, and nobody hangs.
 */
static void kill_daemon_under_waiters(pid_t daemon, int fd)
{
	int ready[2];
	pid_t waiter;
	char byte;

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	waiter = dl_fork();
	if (waiter == 0) {
		close(ready[0]);
		fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
		dl_write_all(ready[1], "r", 1);
		fl_assert_int_eq(fl_fence_fd_wait(fd, DL_LONG_WAIT_MS), -ECONNRESET);
		_exit(0);
	}
	close(ready[1]);
	dl_read_all(ready[0], &byte, 1);
	close(ready[0]);
	fl_assert_int_eq(kill(daemon, SIGKILL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, DL_LONG_WAIT_MS), -ECONNRESET);
	dl_wait_child_ok(waiter);
	dl_expect_fence_status(fd, -ECONNRESET);
}

static void pipe_death_maker(int tl, const char *path)
{
	int fd = new_fence(tl, 1, "doomed");
	struct stat st;
	pid_t daemon;

	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert(S_ISFIFO(st.st_mode));
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	daemon = fl_daemon_connect();
	fl_assert(daemon > 0);
	kill_daemon_under_waiters(daemon, fd);
	/* Nobody answers there now: the status read did not start a daemon. */
	fl_assert(!someone_listens(path));
	close(fd);
	_exit(0);
}

FL_TEST(daemon_sigkill_fails_pending_pipe_fences_and_no_waiter_hangs)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	pid_t d, pid;

	dl_runtime_path("pipe-death.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	pid = dl_fork();
	if (pid == 0) {
		pid_t maker;
		int tl;

		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		tl = new_timeline("pipe-death");
		maker = dl_fork();
		if (maker == 0)
			pipe_death_maker(tl, path);
		dl_wait_child_ok(maker);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);
}

/*
 * The same for an owner's own fence, whose only write end the owner keeps:
 * when the daemon dies, the owner's watcher sees the kick pipe hang up and
 * closes its end, so every waiter (the owner, another process) wakes, with
 * -ECONNRESET, never success.
 */
FL_TEST(daemon_sigkill_fails_an_owners_kept_fences_and_no_waiter_hangs)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	pid_t d, pid;

	dl_runtime_path("owner-death.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	pid = dl_fork();
	if (pid == 0) {
		struct stat st;
		int tl, fd;

		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		tl = new_timeline("owner-death");
		fd = new_fence(tl, 1, "kept");
		fl_assert_int_eq(fstat(fd, &st), 0);
		fl_assert(S_ISFIFO(st.st_mode));
		fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
		kill_daemon_under_waiters(d, fd);
		close(fd);
		close(tl);
		_exit(0);
	}
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);
}

/* ---- start-up and exit ---- */

#define RACERS 16

FL_TEST(processes_starting_at_once_get_exactly_one_daemon)
{
	char path[256];
	int go[2], results[2];
	pid_t pids[RACERS], first = 0;

	dl_runtime_path("race.sock", path, sizeof(path));
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(results, O_CLOEXEC), 0);
	for (int i = 0; i < RACERS; i++) {
		pids[i] = dl_fork();
		if (pids[i] == 0) {
			char byte;
			int32_t pid;

			close(go[1]);
			close(results[0]);
			fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
			/* Blocks until the test closes the write end: everyone at once. */
			fl_assert_int_eq(read(go[0], &byte, 1), 0);
			pid = fl_daemon_connect();
			dl_write_all(results[1], &pid, sizeof(pid));
			_exit(0);
		}
	}
	close(go[0]);
	close(results[1]);
	close(go[1]);
	for (int i = 0; i < RACERS; i++) {
		int32_t pid;

		dl_read_all(results[0], &pid, sizeof(pid));
		fl_assert(pid > 0);
		if (!first)
			first = pid;
		fl_assert_int_eq(pid, first);
	}
	for (int i = 0; i < RACERS; i++)
		dl_wait_child_ok(pids[i]);
	close(results[0]);
	/* The daemon is not our child and nobody uses it any more. */
	kill(first, SIGTERM);
}

/* Daemon @d exits with status 0 within DL_LONG_WAIT_MS, as after its idle period. */
static void expect_idle_exit(pid_t d)
{
	uint64_t deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	int status;
	pid_t r;

	while ((r = waitpid(d, &status, WNOHANG)) == 0 && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(10);
	if (r == 0) {
		kill(d, SIGKILL);
		waitpid(d, &status, 0);
		fl__test_fail(__FILE__, __LINE__,
			      "daemon still running long after its idle period");
	}
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
}

/*
 * A daemon waits for its clients without a timeout, so its idle clock must
 * restart when the last one leaves: measured from before a long quiet
 * connection, the idle period would be over the moment it closed, and a
 * client arriving just then would find the daemon gone.
 */
FL_TEST(idle_period_starts_when_the_last_client_leaves)
{
	static const char *const idle[] = { "--idle-timeout", "300", NULL };
	char path[256];
	int status;
	pid_t d, pid;

	dl_runtime_path("idle-late.sock", path, sizeof(path));
	d = dl_daemon_start(path, idle);
	pid = dl_fork();
	if (pid == 0) {
		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		fl_assert_int_eq(fl_daemon_connect(), d);
		fl_test_sleep_ms(900); /* three idle periods, connected and quiet */
		fl_daemon_disconnect();
		_exit(0);
	}
	dl_wait_child_ok(pid);
	fl_test_sleep_ms(100);
	fl_assert_int_eq(waitpid(d, &status, WNOHANG), 0);

	expect_idle_exit(d);
}

FL_TEST(idle_daemon_stays_while_a_fence_fd_lives_then_exits)
{
	static const char *const idle[] = { "--idle-timeout", "200", NULL };
	char path[256];
	int sv[2], fence, status;
	uint64_t deadline;
	pid_t d, pid, r;

	dl_runtime_path("idle.sock", path, sizeof(path));
	d = dl_daemon_start(path, idle);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = dl_fork();
	if (pid == 0) {
		int tl, f;

		close(sv[0]);
		fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
		fl_assert_int_eq(fl_daemon_connect(), d);
		tl = new_timeline("idle");
		f = new_fence(tl, 1, "kept");
		fl_daemon_flush();
		dl_send_fd(sv[1], f);
		_exit(0);
	}
	close(sv[1]);
	fence = dl_recv_fd(sv[0]);
	close(sv[0]);
	dl_wait_child_ok(pid);

	/* No client is connected, but our fence fd is the daemon's: five idle timeouts. */
	fl_test_sleep_ms(1000);
	fl_assert_int_eq(waitpid(d, &status, WNOHANG), 0);
	/*
	 * Its owner exited, so the timeline died, and the daemon answers that
	 * (the owner kept the fence's only write end: its exit closed it
	 * without a record, so only the daemon knows). Asked, then left.
	 */
	fl_daemon_disconnect();
	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	dl_expect_fence_status(fence, -ENOENT);
	fl_daemon_disconnect();
	fl_test_sleep_ms(500);
	fl_assert_int_eq(waitpid(d, &status, WNOHANG), 0);

	close(fence);
	deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	while ((r = waitpid(d, &status, WNOHANG)) == 0 && fl_test_now_ns() < deadline)
		fl_test_sleep_ms(10);
	if (r == 0) {
		kill(d, SIGKILL);
		waitpid(d, &status, 0);
		fl__test_fail(__FILE__, __LINE__, "daemon still running after the last fd closed");
	}
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
	fl_assert_errno(access(path, F_OK), ENOENT);
}

/* ---- out of fds ---- */

#define FD_MAP_SIZE 4096

/* Mark in @open_fd (FD_MAP_SIZE entries) the fds process @pid has open; return the highest. */
static int open_fd_map(pid_t pid, bool *open_fd)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int top = -1;

	memset(open_fd, 0, FD_MAP_SIZE * sizeof(*open_fd));
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	fl_assert(dir != NULL);
	while ((de = readdir(dir))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		fl_assert(fd < FD_MAP_SIZE);
		open_fd[fd] = true;
		top = fd > top ? fd : top;
	}
	closedir(dir);
	return top;
}

/* The highest fd number process @pid has open (@lowest_free: else the lowest it has not). */
static int fd_number(pid_t pid, bool lowest_free)
{
	static bool open_fd[FD_MAP_SIZE];
	int top = open_fd_map(pid, open_fd);

	if (lowest_free)
		for (int fd = 0; fd <= top; fd++)
			if (!open_fd[fd])
				return fd;
	return top;
}

static void set_fd_limit(pid_t pid, rlim_t soft)
{
	struct rlimit old, lim;

	fl_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, NULL, &old), 0);
	lim.rlim_cur = soft;
	lim.rlim_max = old.rlim_max;
	fl_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, &lim, NULL), 0);
}

static void out_of_fds_child(const char *path, pid_t daemon)
{
	int tl, unbound, f[64], n = 0, m = -1, r;
	struct rlimit saved;
	uint64_t value;
	pid_t other;

	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	fl_assert_int_eq(fl_daemon_connect(), daemon);
	tl = new_timeline("out-of-fds");
	/* A timeline the next connection has not bound: its first fence must bind it. */
	unbound = new_timeline("unbound");
	fl_daemon_disconnect();
	fl_assert_int_eq(fl_daemon_connect(), daemon);
	f[n++] = new_fence(tl, 1, "first");
	f[n++] = new_fence(tl, 1, "second");
	fl_daemon_flush(); /* both made before the limit drops */
	fl_assert_int_eq(fl_fence_fd_get_status(f[1]), FL_STATUS_ACTIVE);
	fl_assert_int_eq(prlimit(daemon, RLIMIT_NOFILE, NULL, &saved), 0);

	/* No fd above the ones it has: every new fence must fail, not hang or cut us off. */
	set_fd_limit(daemon, (rlim_t)fd_number(daemon, false) + 1);
	for (;;) {
		fl_assert(n < (int)(sizeof(f) / sizeof(f[0])));
		/*
		 * The fence fds the library keeps ready still work (the daemon
		 * made them before); once they are used up, getting more fails.
		 */
		r = fl_fence_fd_create(tl, 1, "over", &f[n]);
		if (r < 0)
			break;
		fl_daemon_flush();
		r = fl_fence_fd_get_status(f[n++]);
		if (r != FL_STATUS_ACTIVE)
			break;
	}
	fl_assert_int_eq(r, -EMFILE);

	/*
	 * A failed request can leave a hole in its fd table; with the limit at
	 * the lowest free number it has none, and every call fails with -EMFILE.
	 */
	set_fd_limit(daemon, (rlim_t)fd_number(daemon, true));
	fl_assert_int_eq(fl_fence_fd_merge(f[0], f[1], "over", 0, &m), -EMFILE);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &value), -EMFILE);
	fl_assert_int_eq(fl_fence_fd_create(unbound, 1, "bind", &m), -EMFILE);
	/* A new client hears it too, through the fd the daemon keeps in reserve. */
	other = dl_fork();
	if (other == 0)
		_exit(fl_daemon_connect() == -EMFILE ? 0 : 1);
	dl_wait_child_ok(other);

	/* Room again: the same connection works on. */
	fl_assert_int_eq(prlimit(daemon, RLIMIT_NOFILE, &saved, NULL), 0);
	fl_assert_int_eq(fl_timeline_fd_get_value(tl, &value), 0);
	fl_assert_int_eq(fl_fence_fd_merge(f[0], f[1], "room", 0, &m), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	dl_expect_fence_status(m, FL_STATUS_SIGNALED);
	close(m);
	for (int i = 0; i < n; i++)
		close(f[i]);
	close(unbound);
	close(tl);
	_exit(0);
}

/*
 * Start a daemon of our own on socket @name, run @child in a process of its
 * own against it, and check the daemon's fds are back to where they were.
 * Return: the daemon, still running (the caller stops it).
 */
static pid_t child_on_own_daemon(const char *name, void (*child)(const char *path, pid_t daemon))
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	pid_t d, pid;
	int base;

	dl_runtime_path(name, path, sizeof(path));
	d = dl_daemon_start(path, args);
	base = dl_daemon_fd_baseline(d);
	pid = dl_fork();
	if (pid == 0)
		child(path, d);
	dl_wait_child_ok(pid);
	dl_expect_daemon_fds_back(d, base);
	return d;
}

FL_TEST(daemon_out_of_fds_fails_requests_with_emfile_and_keeps_clients)
{
	dl_daemon_stop(child_on_own_daemon("nofds.sock", out_of_fds_child));
}

/* ---- a timeline without a shared counter ---- */

/* The @nth (from 1) lowest fd number process @pid does not have open. */
static int nth_free_fd(pid_t pid, int nth)
{
	static bool open_fd[FD_MAP_SIZE];

	open_fd_map(pid, open_fd);
	for (int fd = 0; fd < FD_MAP_SIZE; fd++)
		if (!open_fd[fd] && --nth == 0)
			return fd;
	fl_assert(!"no free fd number");
	return -1;
}

/*
 * The shared counters process @pid has mapped (each daemon-made one is
 * named so): distinct memfds, as the daemon maps each twice (its own view
 * and its timeline's).
 */
static int counter_mappings(pid_t pid)
{
	char path[64], line[4096];
	unsigned long inodes[256];
	FILE *maps;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	fl_assert(maps != NULL);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long ino = 0;
		int i;

		if (!strstr(line, "memfd:fenceline-timeline"))
			continue;
		/* address perms offset dev inode path */
		fl_assert_int_eq(sscanf(line, "%*s %*s %*s %*s %lu", &ino), 1);
		for (i = 0; i < n && inodes[i] != ino; i++)
			;
		if (i == n) {
			fl_assert(n < (int)(sizeof(inodes) / sizeof(inodes[0])));
			inodes[n++] = ino;
		}
	}
	fclose(maps);
	return n;
}

/*
 * A daemon that cannot make a timeline's counter (out of fds right after
 * the timeline's own pair) still makes the timeline, without
 * FL_BIND_F_SHARED; TIMELINE_SYNC of it is -EINVAL and keeps the
 * connection. And the counters of dead timelines are unmapped again.
 */
FL_TEST(timeline_without_counter_sync_is_einval_and_dead_counters_are_unmapped)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} req = { { FL_OP_TIMELINE_CREATE, 0, 3, sizeof(struct fl_msg_timeline_create) },
		  { "no-counter", 0, 0 } };
	struct fl_msg_bind_reply rep;
	struct rlimit saved;
	char path[256];
	int s, s2, keep, tl, base, fds[RAW_MAX_FDS], r;
	uint32_t kept, handle, h2, seq = 10;
	unsigned int n, m;
	uint64_t deadline;
	pid_t d;

	dl_runtime_path("nocounter.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	base = dl_daemon_fd_baseline(d);
	s = raw_connect_to(path);
	raw_hello(s);
	/* A timeline that lives throughout, so the counts below are of one more. */
	keep = raw_timeline_create(s, 2, "keep", &kept);
	fl_assert_int_eq(counter_mappings(d), 1);
	(void)dl_daemon_fd_baseline(d);

	/* Room for exactly the timeline's socket pair: the memfd does not fit. */
	fl_assert_int_eq(prlimit(d, RLIMIT_NOFILE, NULL, &saved), 0);
	set_fd_limit(d, (rlim_t)nth_free_fd(d, 2) + 1);
	raw_send(s, &req, sizeof(req), NULL, 0);
	r = raw_reply_fds(s, FL_OP_TIMELINE_CREATE, 3, &rep, sizeof(rep), fds, RAW_MAX_FDS, &n);
	fl_assert_int_eq(prlimit(d, RLIMIT_NOFILE, &saved, NULL), 0);
	fl_assert_int_eq(r, 0);
	fl_assert_int_eq(rep.flags, 0);
	fl_assert_int_eq(n, 1);
	fl_assert_int_ne(rep.handle, UINT32_MAX);
	tl = fds[0];
	handle = rep.handle;
	fl_assert_int_eq(counter_mappings(d), 1);

	/* Nothing to catch up with: -EINVAL, for its creator and for whoever bound it. */
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), -EINVAL);
	raw_ping_ok(s, seq++);
	s2 = raw_connect_to(path);
	raw_hello(s2);
	fl_assert_int_eq(raw_bind(s2, seq++, tl, &h2), 0);
	fl_assert_int_eq(raw_timeline_sync(s2, seq++, h2), -EINVAL);
	/* The timeline works through the daemon alone. */
	raw_pool_fill_ok(s2, seq++, 1, 0, fds);
	raw_fence_new_ok(s2, seq++, 1, h2, 0);
	fl_assert_int_eq(raw_timeline_signal(s, seq++, handle, 1), 0);
	dl_expect_fence_status(fds[0], FL_STATUS_SIGNALED);
	close(fds[0]);
	fl_assert_int_eq(raw_get_value(s2, seq++, tl), 1);
	/* The one with a counter is unaffected. */
	fl_assert_int_eq(raw_timeline_sync(s, seq++, kept), 0);
	raw_ping_ok(s2, seq++);
	close(s2);
	close(tl);

	/*
	 * Signal ends out of fds: room for the kick pipe, one pipe and its
	 * end's copy, and then the next pipe's: one fence fd, its end and the
	 * kick pipe come back. Then room for a pipe but not the copy: -EMFILE,
	 * and the connection stays.
	 */
	{
		struct fl_msg_pool_reply prep, prep2;
		int r2;

		/* The fds of what we closed are free (the count settles) before counting. */
		(void)dl_daemon_fd_baseline(d);
		set_fd_limit(d, (rlim_t)nth_free_fd(d, 5) + 1);
		raw_send_pool_fill(s, seq, 4, FL_POOL_F_SIGNAL_ENDS);
		r = raw_reply_fds(s, FL_OP_POOL_FILL, seq++, &prep, sizeof(prep), fds, RAW_MAX_FDS,
				  &n);
		/* Answered once the daemon closed its copies of what it sent. */
		raw_ping_ok(s, seq++);
		set_fd_limit(d, (rlim_t)nth_free_fd(d, 2) + 1);
		raw_send_pool_fill(s, seq, 1, FL_POOL_F_SIGNAL_ENDS);
		r2 = raw_reply_fds(s, FL_OP_POOL_FILL, seq++, &prep2, sizeof(prep2), &fds[3],
				   RAW_MAX_FDS - 3, &m);
		fl_assert_int_eq(prlimit(d, RLIMIT_NOFILE, &saved, NULL), 0);
		fl_assert_int_eq(r, 0);
		fl_assert_int_eq(prep.first, 0);
		fl_assert_int_eq(prep.count, 1);
		fl_assert_int_eq(n, 3);
		fl_assert_int_eq(r2, -EMFILE);
		fl_assert_int_eq(m, 0);
	}
	raw_ping_ok(s, seq++);
	expect_end_of(fds[0], fds[1], 0x5107);
	expect_fence_pipe(fds[2]);
	raw_fence_new_ok(s, seq++, 1, kept, 0);
	fl_assert_int_eq(raw_timeline_signal(s, seq++, kept, 1), 0);
	dl_expect_fence_status(fds[0], FL_STATUS_SIGNALED);
	close_fds(fds, 3);
	close(keep);

	/* Each creation unmaps the counters of dead timelines: only its own stays. */
	deadline = fl_test_now_ns() + DL_LONG_WAIT_MS * 1000000ull;
	do {
		fl_assert(fl_test_now_ns() < deadline);
		fl_test_sleep_ms(10);
		tl = raw_timeline_create(s, seq++, "collect", &handle);
		m = counter_mappings(d);
		close(tl);
	} while (m != 1);
	close(s);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
}

/*
 * A fence fd closed before the daemon has made it a fence (FENCE_NEW is
 * one-way) is released by the daemon's fd watcher as soon as the daemon
 * registers it: when the watcher was a thread (as it still is in library
 * processes), possibly while the loop was still attaching it to the fence.
 * Thousands of them, under ASan, catch a sink freed too early.
 */
static void closed_early_child(const char *path, pid_t d)
{
	int tl;

	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	fl_assert_int_eq(fl_daemon_connect(), d);
	tl = new_timeline("closed-early");
	for (int i = 0; i < 5000; i++) {
		int f = new_fence(tl, (uint64_t)i + 1, "gone");

		close(f);
		if (i % 64 == 63)
			fl_daemon_flush();
	}
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 5000), 0);
	close(tl);
	library_round();
	fl_daemon_disconnect();
	_exit(0);
}

FL_TEST(fence_fds_closed_before_the_daemon_made_them_are_released_once)
{
	pid_t d = child_on_own_daemon("early.sock", closed_early_child);

	/* Still the same daemon: it did not crash on the way. */
	fl_assert_int_eq(kill(d, 0), 0);
	dl_daemon_stop(d);
}

/* TIMELINE_INC with the fd: the status. */
static int raw_inc(int sock, uint32_t seq, int tl, uint64_t count)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_inc b;
	} req = { { FL_OP_TIMELINE_INC, 0, seq, sizeof(struct fl_msg_timeline_inc) }, { count } };

	raw_send(sock, &req, sizeof(req), &tl, 1);
	return raw_reply(sock, FL_OP_TIMELINE_INC, seq);
}

/* TIMELINE_CREATE: 1 if the reply came with a shared counter (closed here), 0 if not. */
static int raw_create_has_counter(int sock, uint32_t seq, int *ret_tl)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} req = { { FL_OP_TIMELINE_CREATE, 0, seq, sizeof(struct fl_msg_timeline_create) },
		  { "many", 0, 0 } };
	struct fl_msg_bind_reply rep;
	int fds[RAW_MAX_FDS];
	unsigned int n;

	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply_fds(sock, FL_OP_TIMELINE_CREATE, seq, &rep, sizeof(rep), fds,
				       RAW_MAX_FDS, &n),
			 0);
	fl_assert_int_eq(n, rep.flags & FL_BIND_F_SHARED ? 2u : 1u);
	if (n == 2)
		close(fds[1]);
	*ret_tl = fds[0];
	return n == 2;
}

/*
 * Each counter costs the daemon a page: a client gets them for 64 live
 * timelines (as many as the library tracks), the rest work through the
 * daemon, and a timeline that dies gives its counter back.
 */
FL_TEST(shared_counters_are_limited_per_client_and_given_back)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	int s, tl[70], extra, base;
	uint32_t seq = 100;
	pid_t d;

	dl_runtime_path("counters.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	base = dl_daemon_fd_baseline(d);
	s = raw_connect_to(path);
	raw_hello(s);
	for (int i = 0; i < 70; i++)
		fl_assert_int_eq(raw_create_has_counter(s, seq++, &tl[i]), i < 64);
	/* Still a timeline like any other. */
	fl_assert_int_eq(raw_inc(s, seq++, tl[69], 1), 0);
	close(tl[3]);
	close(tl[69]);
	/* The daemon sees the closes between requests (its fd watcher): give it a moment. */
	for (int tries = 0;; tries++) {
		int has = raw_create_has_counter(s, seq++, &extra);

		close(extra);
		if (has)
			break;
		fl_assert(tries < 200);
		fl_test_sleep_ms(10);
	}
	for (int i = 0; i < 69; i++)
		if (i != 3)
			close(tl[i]);
	close(s);
	dl_expect_daemon_fds_back(d, base);
	dl_daemon_stop(d);
}

static uint64_t sync_at(struct fl_proto_shared_timeline *ctr)
{
	return __atomic_load_n(&ctr->sync_at, __ATOMIC_SEQ_CST);
}

/*
 * sync_at is the lowest pending value the daemon must complete itself:
 * every fence but the owner's own with a kept signal end. A client can
 * claim FL_MSG_F_KEPT only for a slot that came with an end, on a timeline
 * it owns; everything else counts. On a 32-bit timeline a value is the
 * counter value at which its low half reaches it, wrap-aware.
 */
FL_TEST(sync_at_is_the_lowest_point_only_the_daemon_can_complete)
{
	struct fl_proto_shared_timeline *ctr, *ctr32;
	uint32_t seq = 1, slot = 0, handle, h2, h32;
	int s = raw_connect(), s2 = raw_connect(), mfd, mfd32, tl, tl32, bare[1], f[5], g[3], w[2];

	raw_hello(s);
	raw_hello(s2);
	tl = raw_timeline_create_flags(s, seq++, "sync-at", 0, &handle, &mfd);
	ctr = counter_map(mfd);
	fl_assert(sync_at(ctr) == UINT64_MAX);

	/* A slot without a signal end: KEPT is not believed. */
	raw_pool_fill_ok(s, seq++, 1, slot, bare);
	raw_fence_new_flags_ok(s, seq++, FL_MSG_F_KEPT, 5, handle, slot++);
	fl_assert_int_eq(sync_at(ctr), 5);
	/* With its end, the owner's own; without the flag, the daemon's. */
	raw_pool_fill_ends_ok(s, seq++, 2, slot, f);
	raw_fence_new_flags_ok(s, seq++, FL_MSG_F_KEPT, 3, handle, slot++);
	fl_assert_int_eq(sync_at(ctr), 5);
	raw_fence_new_flags_ok(s, seq++, 0, 4, handle, slot++);
	fl_assert_int_eq(sync_at(ctr), 4);
	/* Another connection is no owner, signal end or not. */
	fl_assert_int_eq(raw_bind(s2, seq++, tl, &h2), 0);
	raw_pool_fill_ends_ok(s2, seq++, 1, 0, g);
	raw_fence_new_flags_ok(s2, seq++, FL_MSG_F_KEPT, 2, h2, 0);
	fl_assert_int_eq(sync_at(ctr), 2);

	/* Each catch-up raises it past the points it completed. */
	counter_set(ctr, 2);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(sync_at(ctr), 4);
	dl_expect_fence_status(g[0], FL_STATUS_SIGNALED);
	/*
	 * The kept fence at 3: complete for the daemon once it catches up,
	 * but ours to close (we hold its only write end): until then its fd
	 * is not ready; then it is, and the daemon answers for it.
	 */
	counter_set(ctr, 3);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(sync_at(ctr), 4);
	fl_assert_int_eq(raw_fence_status(s2, seq++, f[0]), FL_STATUS_SIGNALED);
	{
		struct pollfd pf = { .fd = f[0], .events = POLLIN };

		fl_assert_int_eq(poll(&pf, 1, 0), 0);
	}
	close(f[2]);
	f[2] = -1;
	dl_expect_fence_status(f[0], FL_STATUS_SIGNALED);
	counter_set(ctr, 5);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert(sync_at(ctr) == UINT64_MAX);
	dl_expect_fence_status(f[1], FL_STATUS_SIGNALED);
	dl_expect_fence_status(bare[0], FL_STATUS_SIGNALED);
	/* A point born signalled is nobody's to wait for. */
	close(bare[0]);
	raw_pool_fill_ok(s, seq++, 1, slot, bare);
	raw_fence_new_flags_ok(s, seq++, 0, 5, handle, slot++);
	fl_assert(sync_at(ctr) == UINT64_MAX);
	dl_expect_fence_status(bare[0], FL_STATUS_SIGNALED);
	close(bare[0]);

	tl32 = raw_timeline_create_flags(s, seq++, "sync-at-32", FL_SW_SYNC_32BIT, &h32, &mfd32);
	ctr32 = counter_map(mfd32);
	fl_assert(sync_at(ctr32) == UINT64_MAX);
	/* 0x20 ahead across the wrap: reached when the counter gets 0x20 further. */
	counter_set(ctr32, 0xfffffff0u);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, h32), 0);
	raw_pool_fill_ok(s, seq++, 1, slot, bare);
	raw_fence_new_flags_ok(s, seq++, 0, 0x10, h32, slot++);
	fl_assert(sync_at(ctr32) == 0x100000010ull);
	/* Exactly 2^31 ahead is still ahead (sw_sync's compare); 2^31 + 1 is behind. */
	raw_pool_fill_ok(s, seq++, 2, slot, w);
	raw_fence_new_flags_ok(s, seq++, 0, 0x7ffffff0u, h32, slot++);
	raw_fence_new_flags_ok(s, seq++, 0, 0x7ffffff1u, h32, slot++);
	fl_assert(sync_at(ctr32) == 0x100000010ull);
	dl_expect_fence_status(w[1], FL_STATUS_SIGNALED);
	counter_set(ctr32, 0x100000010ull);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, h32), 0);
	dl_expect_fence_status(bare[0], FL_STATUS_SIGNALED);
	fl_assert(sync_at(ctr32) == 0x17ffffff0ull);
	close(bare[0]);

	counter_unmap(ctr32);
	counter_unmap(ctr);
	close_fds(f, 5);
	close_fds(g, 3);
	close_fds(w, 2);
	close(mfd32);
	close(mfd);
	close(tl32);
	close(tl);
	close(s2);
	close(s);
}

/*
 * Points the daemon must complete cost it 8 bytes each until it does: a
 * client that makes thousands far ahead (and drops their fds) only makes
 * its own signals wait for the daemon from then on (sync_at 0).
 */
FL_TEST(more_than_4096_points_for_the_daemon_make_the_owner_always_sync)
{
	struct fl_proto_shared_timeline *ctr;
	uint32_t seq = 1, slot = 0, handle;
	int s = raw_connect(), mfd, tl, fds[32];

	raw_hello(s);
	tl = raw_timeline_create_flags(s, seq++, "many", 0, &handle, &mfd);
	ctr = counter_map(mfd);
	for (int batch = 0; batch < 4097 / 32 + 1; batch++) {
		raw_pool_fill_ok(s, seq++, 32, slot, fds);
		for (int i = 0; i < 32; i++, slot++)
			raw_send_fence_new(s, seq++, 0, 1000000 - (uint64_t)slot, handle, slot);
		raw_ping_ok(s, seq++);
		close_fds(fds, 32);
		fl_assert_int_eq(sync_at(ctr), slot <= 4096 ? 1000000 - (uint64_t)(slot - 1) : 0);
	}
	counter_set(ctr, 2000000);
	fl_assert_int_eq(raw_timeline_sync(s, seq++, handle), 0);
	fl_assert_int_eq(sync_at(ctr), 0);
	counter_unmap(ctr);
	close(mfd);
	close(tl);
	close(s);
}

/* ---- hostile waiters ---- */

/* FENCE_CREATE of a fence at @value on @tl, answered: returns its fence fd. */
static int raw_fence_create(int sock, uint32_t seq, int tl, uint64_t value)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_create b;
	} req = { { FL_OP_FENCE_CREATE, FL_MSG_F_REPLY, seq, sizeof(struct fl_msg_fence_create) },
		  { value, "raw" } };
	int sv[2], three[3];

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	three[0] = tl;
	three[1] = sv[0];
	three[2] = sv[1];
	raw_send(sock, &req, sizeof(req), three, 3);
	close(sv[0]);
	fl_assert_int_eq(raw_reply(sock, FL_OP_FENCE_CREATE, seq), 0);
	return sv[1];
}

/* WAIT_BEGIN (one-way) by this thread on @fence, with @notify (-1: none). */
static void raw_wait_begin(int sock, uint32_t seq, int fence, int notify)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_wait_begin b;
	} req = { { FL_OP_WAIT_BEGIN, notify >= 0 ? FL_MSG_F_NOTIFY : 0, seq,
		    sizeof(struct fl_msg_wait_begin) },
		  { seq, (uint32_t)gettid(), -1 } };
	int fds[2] = { fence, notify };

	raw_send(sock, &req, sizeof(req), fds, notify >= 0 ? 2 : 1);
}

/* The text of the sealed memfd that comes with the reply to (@op, @seq) (malloc()ed). */
static char *raw_reply_text(int sock, uint32_t op, uint32_t seq)
{
	struct fl_msg_reply rep;
	int fds[RAW_MAX_FDS];
	unsigned int n;
	size_t len = 0, cap = 4096;
	char *text = malloc(cap);
	ssize_t got;

	fl_assert(text);
	fl_assert_int_eq(raw_reply_fds(sock, op, seq, &rep, sizeof(rep), fds, RAW_MAX_FDS, &n), 0);
	fl_assert_int_eq(n, 1);
	while ((got = read(fds[0], text + len, cap - len - 1)) > 0) {
		len += (size_t)got;
		if (cap - len < 2) {
			cap *= 2;
			text = realloc(text, cap);
			fl_assert(text);
		}
	}
	fl_assert_int_eq(got, 0);
	text[len] = '\0';
	close(fds[0]);
	return text;
}

/* DUMP with @flags: the text that comes with the reply (malloc()ed). */
static char *raw_dump(int sock, uint32_t seq, uint32_t flags)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_dump b;
	} req = { { FL_OP_DUMP, 0, seq, sizeof(struct fl_msg_dump) }, { flags, 0 } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
	return raw_reply_text(sock, FL_OP_DUMP, seq);
}

/*
 * The owner of a shared-counter timeline passes a point without telling the
 * daemon and waits on it from its only thread: until the daemon catches up,
 * it looks like a process stuck on itself. The detector must catch up
 * before it reports, not while it describes the finding: that completed the
 * fence, freed the wait being described and used it after (ASan:
 * heap-use-after-free in refuse()), and logged a false cycle of 1.
 */
static void owner_passes_own_point_child(const char *path, pid_t daemon)
{
	struct fl_proto_shared_timeline *ctr;
	uint32_t seq = 1, handle;
	int s, tl, mfd, fence, p[2];
	struct pollfd pfd;
	char byte, *text;

	(void)daemon;
	s = raw_connect_to(path);
	raw_hello(s);
	tl = raw_timeline_create_flags(s, seq++, "own", 0, &handle, &mfd);
	ctr = counter_map(mfd);
	fence = raw_fence_create(s, seq++, tl, 1);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	counter_set(ctr, 1);
	raw_wait_begin(s, seq++, fence, p[1]);
	close(p[1]);
	/* Only the detector catches up with the counter here: it has run once this is readable. */
	pfd = (struct pollfd){ .fd = fence, .events = POLLIN };
	fl_assert_int_eq(poll(&pfd, 1, -1), 1);
	raw_ping_ok(s, seq++);
	dl_expect_fence_status(fence, FL_STATUS_SIGNALED);
	text = raw_dump(s, seq++, FL_DUMP_DEADLOCKS);
	if (strstr(text, "cycle of"))
		fl__test_fail(__FILE__, __LINE__, "a signalled fence was reported:\n%s", text);
	free(text);
	/* The wait ended without a notice: the daemon's copy is closed. */
	fl_assert_int_eq(read(p[0], &byte, 1), 0);
	close(p[0]);
	counter_unmap(ctr);
	close(mfd);
	close(fence);
	close(tl);
	close(s);
	_exit(0);
}

FL_TEST(owner_waiting_on_a_point_it_passed_is_no_deadlock)
{
	dl_daemon_stop(child_on_own_daemon("passed.sock", owner_passes_own_point_child));
}

/* A blocking pipe (or socket pair, @sock) whose write end @w[1] cannot take a byte more. */
static void full_channel(int w[2], bool sock)
{
	char junk[4096] = { 0 };
	int fl;

	if (sock)
		fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, w), 0);
	else
		fl_assert_int_eq(pipe2(w, O_CLOEXEC), 0);
	fl = fcntl(w[1], F_GETFL);
	fl_assert_int_eq(fcntl(w[1], F_SETFL, fl | O_NONBLOCK), 0);
	while (write(w[1], junk, sizeof(junk)) > 0)
		;
	while (write(w[1], junk, 1) > 0)
		;
	fl_assert(errno == EAGAIN);
	/* Blocking again, as the daemon gets it. */
	fl_assert_int_eq(fcntl(w[1], F_SETFL, fl), 0);
}

/*
 * A process waits on a fence of its own timeline (a cycle of one) with a
 * notify fd that is full and blocking: telling it EDEADLK must not block
 * the daemon, which then answers every client, and keeps to its finding.
 */
static void full_notify_child(const char *path, pid_t daemon)
{
	uint32_t seq = 1, handle;
	int s, other, tl, fence, w[2], k;

	(void)daemon;
	s = raw_connect_to(path);
	other = raw_connect_to(path);
	raw_hello(s);
	raw_hello(other);
	tl = raw_timeline_create(s, seq++, "cycle", &handle);
	for (k = 0; k < 2; k++) {
		char *text;

		fence = raw_fence_create(s, seq++, tl, (uint64_t)k + 1);
		full_channel(w, k == 1);
		raw_wait_begin(s, seq++, fence, w[1]);
		close(w[1]);
		/* DUMP's deadlock view runs the detector, which finds the cycle at once. */
		text = raw_dump(s, seq++, FL_DUMP_DEADLOCKS);
		if (!strstr(text, "deadlock: a cycle of 1 process"))
			fl__test_fail(__FILE__, __LINE__, "no cycle found:\n%s", text);
		free(text);
		raw_ping_ok(other, seq++);
		raw_ping_ok(s, seq++);
		close(w[0]);
		close(fence);
	}
	close(tl);
	close(other);
	close(s);
	_exit(0);
}

FL_TEST_TIMEOUT(full_notify_fd_does_not_block_the_daemon, 30)
{
	/* The cycle needs a process whose every thread waits; TSan's runtime thread never does. */
	if (FL_TEST_UNDER_TSAN)
		fl_test_skip("TSan's own thread keeps any process from looking blocked");
	dl_daemon_stop(child_on_own_daemon("notify.sock", full_notify_child));
}

/* ---- trace caps ---- */

static void raw_send_trace(int sock, uint32_t seq, uint32_t cmd, uint32_t max_events)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_trace b;
	} req = { { FL_OP_TRACE, 0, seq, sizeof(struct fl_msg_trace) }, { cmd, max_events } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

/* The unsigned number after "@key": in @json, which must have it. */
static unsigned long long json_number(const char *json, const char *key)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	at = strstr(json, pat);
	if (!at)
		fl__test_fail(__FILE__, __LINE__, "no %s in the trace", key);
	return strtoull(at + strlen(pat), NULL, 10);
}

/*
 * A trace whose client asks to keep 2^32 - 1 events, then makes @incs
 * signals: returns the trace (malloc()ed).
 */
static char *greedy_trace(const char *path, int incs)
{
	uint32_t seq = 1, handle;
	int s = raw_connect_to(path), tl;
	char *text;

	raw_hello(s);
	tl = raw_timeline_create(s, seq++, "traced", &handle);
	raw_send_trace(s, seq, FL_TRACE_START, UINT32_MAX);
	fl_assert_int_eq(raw_reply(s, FL_OP_TRACE, seq++), 0);
	for (int i = 0; i < incs; i++)
		fl_assert_int_eq(raw_inc(s, seq++, tl, 1), 0);
	raw_send_trace(s, seq, FL_TRACE_STOP, 0);
	text = raw_reply_text(s, FL_OP_TRACE, seq++);
	close(tl);
	close(s);
	return text;
}

FL_TEST(trace_keeps_no_more_events_than_the_daemon_allows)
{
	static const char *const small[] = { "--idle-timeout", "0", "--trace-max-events", "50",
					     NULL };
	static const char *const dflt[] = { "--idle-timeout", "0", NULL };
	char path[256], *text;
	pid_t d;

	/* The default cap, whatever the client asked. */
	dl_runtime_path("trace-default.sock", path, sizeof(path));
	d = dl_daemon_start(path, dflt);
	text = greedy_trace(path, 1);
	fl_assert_int_eq(json_number(text, "max_events"), 1000000);
	free(text);
	dl_daemon_stop(d);

	/* A smaller one: events beyond it are counted, not kept. */
	dl_runtime_path("trace-small.sock", path, sizeof(path));
	d = dl_daemon_start(path, small);
	text = greedy_trace(path, 100);
	fl_assert_int_eq(json_number(text, "max_events"), 50);
	fl_assert_int_eq(json_number(text, "events"), 50);
	fl_assert(json_number(text, "dropped") >= 50);
	free(text);
	dl_daemon_stop(d);
}

/* ---- the daemon's log ---- */

/* The lines of file @path that contain @what. */
static int count_lines(const char *path, const char *what)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "re");

	fl_assert(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

#define GARBAGE_CLIENTS 2000

/*
 * Clients that send garbage are each worth a log line, but thousands of
 * them must not flood the log: the daemon keeps to its rate (50 lines at
 * once, 10 a second after that) and says how many lines it held back.
 */
FL_TEST(daemon_log_is_rate_limited_and_counts_what_it_drops)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256], log[256];
	uint64_t start, elapsed_ms;
	int saved, fd, lines;
	pid_t d;

	dl_runtime_path("garbage.sock", path, sizeof(path));
	dl_runtime_path("garbage.log", log, sizeof(log));
	/* The daemon writes its log to our stderr: a file, for the while it starts. */
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fl_assert(fd >= 0);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	fl_assert(saved >= 0);
	fl_assert_int_eq(dup2(fd, 2), 2);
	d = dl_daemon_start(path, args);
	fl_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	close(fd);

	start = fl_test_now_ns();
	for (int i = 0; i < GARBAGE_CLIENTS; i++) {
		int s = raw_connect_to(path);
		char junk[3] = { 1, 2, 3 }, byte;

		raw_send(s, junk, sizeof(junk), NULL, 0);
		/* Hung up on, after the line about it. */
		fl_assert_int_eq(read(s, &byte, 1), 0);
		close(s);
	}
	elapsed_ms = (fl_test_now_ns() - start) / 1000000;
	/* Each line was written before its client was hung up on. */
	lines = count_lines(log, "malformed");
	/* What the rate allows for the time it took (not a timing assertion: a bound from it). */
	if ((uint64_t)lines > 50 + 10 * (elapsed_ms / 1000 + 2))
		fl__test_fail(__FILE__, __LINE__, "%d lines about garbage in %llu ms", lines,
			      (unsigned long long)elapsed_ms);
	fl_assert(lines >= 1);
	/* Held back lines are counted in a line of their own, once the rate allows. */
	while (count_lines(log, "messages suppressed") == 0)
		fl_test_sleep_ms(20);
	/* Still serving. */
	fd = raw_connect_to(path);
	raw_hello(fd);
	raw_ping_ok(fd, 2);
	close(fd);
	dl_daemon_stop(d);
}

/* ---- fairness ---- */

#define FLOOD_DUMPS 48

static void raw_send_dump(int sock, uint32_t seq)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_dump b;
	} req = { { FL_OP_DUMP, 0, seq, sizeof(struct fl_msg_dump) }, { 0, 0 } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

/*
 * A client with many DUMPs in flight (each walks /proc) must not hold up
 * the others: the daemon schedules by cost. With the daemon stopped, one
 * client queues 48 DUMPs and then an INC of a timeline, and a bystander
 * asks for the timeline's value; once the daemon runs again, the
 * bystander must be answered before the INC behind the DUMPs (it used to
 * handle 64 requests of one client before looking at another).
 * Then a flooder that never reads its replies must not keep the bystander
 * from being answered.
 */
FL_TEST_TIMEOUT(dump_flood_cannot_starve_a_bystander, 120)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	int flooder, bystander, tl;
	uint32_t seq = 10, handle;
	pid_t d;

	dl_runtime_path("flood.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	flooder = raw_connect_to(path);
	bystander = raw_connect_to(path);
	raw_hello(flooder);
	raw_hello(bystander);
	tl = raw_timeline_create(flooder, seq++, "behind-dumps", &handle);

	fl_assert_int_eq(kill(d, SIGSTOP), 0);
	for (int i = 0; i < FLOOD_DUMPS; i++)
		raw_send_dump(flooder, seq++);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_timeline_inc b;
		} inc = { { FL_OP_TIMELINE_INC, 0, seq++, sizeof(struct fl_msg_timeline_inc) },
			  { 1 } };
		struct fl_msg_hdr h = { FL_OP_TIMELINE_GET_VALUE, 0, 1, 0 };
		struct fl_msg_value_reply rep;

		raw_send(flooder, &inc, sizeof(inc), &tl, 1);
		raw_send(bystander, &h, sizeof(h), &tl, 1);
		fl_assert_int_eq(kill(d, SIGCONT), 0);
		raw_reply_body(bystander, FL_OP_TIMELINE_GET_VALUE, 1, &rep, sizeof(rep));
		if (rep.value != 0)
			fl__test_fail(__FILE__, __LINE__,
				      "the bystander waited for all %d DUMPs of another client",
				      FLOOD_DUMPS);
	}
	close(flooder);
	close(tl);

	/* A flooder that never reads: the bystander is answered all along. */
	flooder = raw_connect_to(path);
	raw_hello(flooder);
	for (int round = 0; round < 50; round++) {
		struct fl_msg_hdr h = { FL_OP_PING, 0, (uint32_t)round + 2, 0 };
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_dump b;
		} req = { { FL_OP_DUMP, 0, seq++, sizeof(struct fl_msg_dump) }, { 0, 0 } };

		for (int i = 0; i < 8; i++)
			(void)!send(flooder, &req, sizeof(req), MSG_DONTWAIT | MSG_NOSIGNAL);
		raw_send(bystander, &h, sizeof(h), NULL, 0);
		fl_assert_int_eq(raw_reply(bystander, FL_OP_PING, (uint32_t)round + 2), 0);
	}
	close(flooder);
	close(bystander);
	dl_daemon_stop(d);
}

/* ---- quotas per peer, not per connection ---- */

#define PEER_CONNS 6

/* The hog says it holds its quota on hog_ready, and lets go when hog_go is readable. */
static int hog_ready[2], hog_go[2];

/* HELLO on a new connection to @path: the connection, or -1 if the daemon said @status. */
static int raw_connect_status(const char *path, int *status)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 0, sizeof(struct fl_msg_hello) }, { FL_PROTO_VERSION, 0 } };
	int s = raw_connect_to(path);

	/*
	 * Seq 0: a connection turned away is answered before its HELLO is
	 * read, and may be closed before it is sent (EPIPE): the answer is
	 * queued all the same.
	 */
	if (send(s, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req))
		fl_assert(errno == EPIPE || errno == ECONNRESET);
	*status = raw_reply(s, FL_OP_HELLO, 0);
	if (*status == 0)
		return s;
	close(s);
	return -1;
}

/* FENCE_CREATE of a fence at @value on @tl: its status, the fence fd in *@ret (or -1). */
static int raw_fence_create_status(int sock, uint32_t seq, int tl, uint64_t value, int *ret)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_create b;
	} req = { { FL_OP_FENCE_CREATE, FL_MSG_F_REPLY, seq, sizeof(struct fl_msg_fence_create) },
		  { value, "quota" } };
	int sv[2], three[3], r;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	three[0] = tl;
	three[1] = sv[0];
	three[2] = sv[1];
	raw_send(sock, &req, sizeof(req), three, 3);
	close(sv[0]);
	r = raw_reply(sock, FL_OP_FENCE_CREATE, seq);
	if (r == 0) {
		*ret = sv[1];
	} else {
		close(sv[1]);
		*ret = -1;
	}
	return r;
}

/* --max-fences counts a process's fences over all its connections. */
static void fences_per_process_child(const char *path, pid_t daemon)
{
	int s[PEER_CONNS], tl[PEER_CONNS], f[PEER_CONNS][2], made = 0, status;
	uint32_t seq = 1, handle;

	(void)daemon;
	for (int i = 0; i < PEER_CONNS; i++) {
		s[i] = raw_connect_status(path, &status);
		fl_assert_int_eq(status, 0);
		tl[i] = raw_timeline_create(s[i], seq++, "quota", &handle);
		for (int k = 0; k < 2; k++) {
			int r = raw_fence_create_status(s[i], seq++, tl[i], 1, &f[i][k]);

			fl_assert(r == 0 || r == -EMFILE);
			made += r == 0;
		}
	}
	fl_assert_int_eq(made, 4);
	for (int i = 0; i < PEER_CONNS; i++) {
		for (int k = 0; k < 2; k++)
			if (f[i][k] >= 0)
				close(f[i][k]);
		close(tl[i]);
		close(s[i]);
	}
	_exit(0);
}

/*
 * Every daemon fd held for a process counts for it, whatever connection
 * asked: connections, timelines, fences, notify fds. One process opening
 * connection after connection, each with waits that pass notify fds, pins
 * at most its quota (it used to be up to 1024 per connection, and one
 * process took 19475 of 20000).
 */
static void fds_per_process_child(const char *path, pid_t daemon)
{
	int s[PEER_CONNS], tl[PEER_CONNS], f[PEER_CONNS], held = 0, refused = 0, status;
	int base = dl_proc_fd_count(daemon), reads[PEER_CONNS * 10], nreads = 0;
	uint32_t seq = 1;

	for (int i = 0; i < PEER_CONNS; i++) {
		s[i] = raw_connect_status(path, &status);
		tl[i] = f[i] = -1;
		if (s[i] < 0) {
			fl_assert_int_eq(status, -EMFILE);
			refused++;
			continue;
		}
		{
			struct {
				struct fl_msg_hdr h;
				struct fl_msg_timeline_create b;
			} req = { { FL_OP_TIMELINE_CREATE, 0, seq,
				    sizeof(struct fl_msg_timeline_create) },
				  { "pinned", 0 } };
			struct fl_msg_bind_reply rep;
			int got[RAW_MAX_FDS];
			unsigned int n;

			raw_send(s[i], &req, sizeof(req), NULL, 0);
			status = raw_reply_fds(s[i], FL_OP_TIMELINE_CREATE, seq++, &rep,
					       sizeof(rep), got, RAW_MAX_FDS, &n);
			fl_assert(status == 0 || status == -EMFILE);
			if (status < 0) {
				refused++;
				continue;
			}
			tl[i] = got[0];
			close_fds(got + 1, n - 1);
		}
		status = raw_fence_create_status(s[i], seq++, tl[i], 1, &f[i]);
		fl_assert(status == 0 || status == -EMFILE);
		if (status < 0) {
			refused++;
			continue;
		}
		for (int k = 0; k < 10; k++) {
			int p[2];

			fl_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
			raw_wait_begin(s[i], seq++, f[i], p[1]);
			close(p[1]);
			reads[nreads++] = p[0];
		}
		raw_ping_ok(s[i], seq++);
	}
	/* The daemon closes a request's fds after it answers: a PING settles each connection. */
	for (int i = 0; i < PEER_CONNS; i++)
		if (s[i] >= 0)
			raw_ping_ok(s[i], seq++);
	/* 6 connections of 13 fds each would be 78: the quota is 40. */
	held = dl_proc_fd_count(daemon) - base;
	if (held > 40)
		fl__test_fail(__FILE__, __LINE__, "the daemon holds %d fds for one process", held);
	fl_assert(refused > 0 || held == 40);
	dl_write_all(hog_ready[1], "r", 1);
	{
		char byte;

		dl_read_all(hog_go[0], &byte, 1);
	}
	for (int i = 0; i < nreads; i++)
		close(reads[i]);
	for (int i = 0; i < PEER_CONNS; i++) {
		if (f[i] >= 0)
			close(f[i]);
		if (tl[i] >= 0)
			close(tl[i]);
		if (s[i] >= 0)
			close(s[i]);
	}
	_exit(0);
}

/* Another process of the same uid is served while the first one holds its quota. */
static void newcomer_child(const char *path, pid_t daemon)
{
	int s, tl, f, status;
	uint32_t seq = 1, handle;

	(void)daemon;
	s = raw_connect_status(path, &status);
	fl_assert_int_eq(status, 0);
	tl = raw_timeline_create(s, seq++, "newcomer", &handle);
	for (int i = 0; i < 20; i++) {
		fl_assert_int_eq(raw_fence_create_status(s, seq++, tl, 1, &f), 0);
		close(f);
	}
	close(tl);
	close(s);
	_exit(0);
}

FL_TEST(quotas_count_per_process_not_per_connection)
{
	static const char *const fences[] = { "--idle-timeout", "0", "--max-fences", "4", NULL };
	static const char *const fds[] = { "--idle-timeout", "0", "--max-fds-per-process", "40",
					   NULL };
	char path[256], log[256], byte;
	int saved, logfd, base;
	pid_t d, pid, hog;

	dl_runtime_path("quota-fences.sock", path, sizeof(path));
	d = dl_daemon_start(path, fences);
	pid = dl_fork();
	if (pid == 0)
		fences_per_process_child(path, d);
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);

	dl_runtime_path("quota-fds.sock", path, sizeof(path));
	dl_runtime_path("quota-fds.log", log, sizeof(log));
	logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fl_assert(logfd >= 0);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	fl_assert_int_eq(dup2(logfd, 2), 2);
	d = dl_daemon_start(path, fds);
	fl_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	close(logfd);
	base = dl_daemon_fd_baseline(d);
	/* The hog keeps what it got while the newcomer works. */
	fl_assert_int_eq(pipe2(hog_ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(hog_go, O_CLOEXEC), 0);
	hog = dl_fork();
	if (hog == 0)
		fds_per_process_child(path, d);
	close(hog_ready[1]);
	hog_ready[1] = -1;
	dl_read_all(hog_ready[0], &byte, 1);
	pid = dl_fork();
	if (pid == 0)
		newcomer_child(path, d);
	dl_wait_child_ok(pid);
	dl_write_all(hog_go[1], "g", 1);
	dl_wait_child_ok(hog);
	close(hog_ready[0]);
	close_fds(hog_go, 2);
	dl_expect_daemon_fds_back(d, base);
	if (count_lines(log, "--max-fds-per-process 40") < 1)
		fl__test_fail(__FILE__, __LINE__, "no log line names the quota");
	dl_daemon_stop(d);
}

/*
 * As nobody, open connections to @path until the daemon says -EMFILE (or
 * @max): exits with how many it got, and keeps them until @go is readable.
 */
static void nobody_connects(const char *path, int max, int ready, int go)
{
	int s[64], n = 0, status = 0;
	char byte;

	if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
		_exit(100);
	while (n < max && (s[n] = raw_connect_status(path, &status)) >= 0)
		n++;
	if (n < max && status != -EMFILE)
		_exit(101);
	dl_write_all(ready, "r", 1);
	dl_read_all(go, &byte, 1);
	close_fds(s, (unsigned int)n);
	_exit(n);
}

/* Another uid's processes together get --max-fds-per-uid; ours are not held to it. */
FL_TEST(another_uid_gets_its_quota_across_its_processes)
{
	static const char *const args[] = {
		"--allow-uid", "65534", "--idle-timeout", "0", "--max-fds-per-uid", "10", NULL
	};
	char dir[] = "/tmp/fl-daemon-quota-XXXXXX", path[128], lock[160], byte;
	int ready[2], go[2], got = 0, status, mine[12];
	pid_t d, kids[2];

	if (geteuid() != 0)
		fl_test_skip("needs root to become another user");
	fl_assert(mkdtemp(dir));
	fl_assert_int_eq(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/quota.sock", dir);
	d = dl_daemon_start(path, args);
	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	for (int i = 0; i < 2; i++) {
		kids[i] = dl_fork();
		if (kids[i] == 0)
			nobody_connects(path, 8, ready[1], go[0]);
	}
	/* A kid that fails hangs up instead of saying it is ready. */
	close(ready[1]);
	ready[1] = -1;
	for (int i = 0; i < 2; i++)
		dl_read_all(ready[0], &byte, 1);
	/* Our own uid is not limited by it. */
	for (int i = 0; i < 12; i++) {
		mine[i] = raw_connect_status(path, &status);
		fl_assert_int_eq(status, 0);
	}
	close_fds(mine, 12);
	dl_write_all(go[1], "gg", 2);
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		fl_assert(WIFEXITED(status) && WEXITSTATUS(status) <= 8);
		got += WEXITSTATUS(status);
	}
	/* 8 each, 16 in all, without the quota. */
	fl_assert_int_eq(got, 10);
	close(ready[0]);
	close_fds(go, 2);
	dl_daemon_stop(d);
	unlink(path);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	unlink(lock);
	fl_assert_int_eq(rmdir(dir), 0);
}

/*
 * A pooled fd passed on before the daemon read its FENCE_NEW (one-way) is
 * still a fence to whoever asks about it: the daemon reads on in the
 * maker's connection, the only one its pool index names. The daemon is
 * stopped while the requests queue up; the maker has just cost it a DUMP
 * (a walk of /proc), so the asker, with less debt, is served first (see
 * serve_ready()) and its FENCE_INFO comes before the FENCE_NEW.
 */
FL_TEST(a_pooled_fd_passed_before_its_fence_new_was_read_is_a_fence)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	struct fl_msg_info_reply rep;
	char path[256];
	int a, b, bystander, tl, pooled;
	uint32_t handle;
	pid_t d;

	dl_runtime_path("pass-early.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	a = raw_connect_to(path);
	raw_hello(a);
	b = raw_connect_to(path);
	raw_hello(b);
	/* Another idle connection: not the maker, never read for this. */
	bystander = raw_connect_to(path);
	raw_hello(bystander);
	tl = raw_timeline_create(a, 10, "pass-early", &handle);
	fl_assert(tl >= 0);
	raw_pool_fill_ok(a, 11, 1, 0, &pooled);
	free(raw_dump(a, 14, 0));

	fl_assert_int_eq(kill(d, SIGSTOP), 0);
	{
		struct fl_msg_hdr h = { FL_OP_PING, 0, 20, 0 };

		raw_send(b, &h, sizeof(h), NULL, 0);
	}
	raw_send_fence_new(a, 12, 0, 5, handle, 0);
	raw_send_fence_info(b, 21, pooled);
	fl_assert_int_eq(kill(d, SIGCONT), 0);

	fl_assert_int_eq(raw_reply(b, FL_OP_PING, 20), 0);
	raw_reply_body(b, FL_OP_FENCE_INFO, 21, &rep, sizeof(rep));
	fl_assert_int_eq(rep.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(rep.num_points, 1);
	/* And once it is a fence, it completes as one. */
	fl_assert_int_eq(raw_inc(a, 13, tl, 5), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pooled, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(pooled), FL_STATUS_SIGNALED);
	raw_ping_ok(bystander, 30);
	close(pooled);
	close(tl);
	close(a);
	close(b);
	close(bystander);
	dl_daemon_stop(d);
}

/*
 * The last client can go while the loop answers parked DUMPs (its reply
 * cannot be sent: it closed its connection after asking). The loop then
 * waits again with a timeout, so that the idle period still ends it.
 */
FL_TEST(idle_daemon_exits_when_its_last_client_left_with_a_dump_parked)
{
	static const char *const idle[] = { "--idle-timeout", "200", NULL };
	char path[256];
	pid_t d;
	int s;

	dl_runtime_path("idle-dump.sock", path, sizeof(path));
	d = dl_daemon_start(path, idle);
	s = raw_connect_to(path);
	raw_hello(s);
	/* Parked until a walk of /proc is done: we are gone by then. */
	raw_send_dump(s, 9);
	close(s);

	expect_idle_exit(d);
}

/* HELLO that must work and carry the status page: returns its fd. */
static int raw_hello_page(int sock, uint32_t seq)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, seq, sizeof(struct fl_msg_hello) }, { FL_PROTO_VERSION, 0 } };
	struct fl_msg_hello_reply rep;
	unsigned int n;
	int fd = -1;

	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply_fds(sock, FL_OP_HELLO, seq, &rep, sizeof(rep), &fd, 1, &n), 0);
	fl_assert_int_eq(rep.flags, FL_HELLO_F_STATUS_PAGE);
	fl_assert_int_eq(n, 1);
	return fd;
}

/*
 * The live (or held) entry of the pipe with read end inode @st, scanning every slot
 * (not the lookup under test): 1 with its status and stamp, 0 if none.
 */
static int page_entry_of(const void *page, const struct stat *st, int *status, uint64_t *stamp)
{
	const struct fl_status_entry *e =
		(const void *)((const char *)page + FL_STATUS_PAGE_HEADER);
	int found = 0;

	for (uint32_t i = 0; i < FL_STATUS_PAGE_SLOTS; i++) {
		uint32_t state = __atomic_load_n(&e[i].state, __ATOMIC_ACQUIRE);

		if ((state != FL_STATUS_E_LIVE && state != FL_STATUS_E_HELD) ||
		    e[i].ino != (uint64_t)st->st_ino || e[i].dev != (uint32_t)st->st_dev)
			continue;
		*status = e[i].status;
		*stamp = e[i].stamp_ns;
		found++;
	}
	fl_assert(found <= 1);
	return found;
}

static int page_entry(const void *page, int fd, int *status, uint64_t *stamp)
{
	struct stat st;

	fl_assert_int_eq(fstat(fd, &st), 0);
	return page_entry_of(page, &st, status, stamp);
}

/*
 * The page a client gets is the daemon's alone to write: sealed, sent
 * read-only, and no mapping of it can be made or turned writable.
 */
FL_TEST(status_page_cannot_be_written_by_a_client)
{
	const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
	int sock = raw_connect(), fd = raw_hello_page(sock, 1), rw;
	const struct fl_status_page_header *h;
	char path[64], zero = 0;
	struct stat st;
	void *m;

	fl_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	fl_assert_int_eq(fcntl(fd, F_GET_SEALS) & seals, seals);
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert_int_eq(st.st_size, FL_STATUS_PAGE_SIZE);
	fl_assert(mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) ==
		  MAP_FAILED);
	fl_assert_errno(write(fd, &zero, 1), EBADF);
	fl_assert_errno(ftruncate(fd, 0), EINVAL);
	fl_assert_errno(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	/* Reopened read-write through /proc: the seals still refuse. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rw = open(path, O_RDWR | O_CLOEXEC);
	if (rw >= 0) {
		fl_assert(mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, rw,
			       0) == MAP_FAILED);
		fl_assert_int_eq(errno, EPERM);
		fl_assert_errno(pwrite(rw, &zero, 1, 0), EPERM);
		fl_assert_errno(ftruncate(rw, 0), EPERM);
		fl_assert_errno(fallocate(rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096),
				EPERM);
		close(rw);
	}
	m = mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(m != MAP_FAILED);
	fl_assert_errno(mprotect(m, FL_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE), EACCES);
	h = m;
	fl_assert_int_eq(h->magic, FL_STATUS_PAGE_MAGIC);
	fl_assert_int_eq(h->slots, FL_STATUS_PAGE_SLOTS);
	fl_assert_int_eq(h->entry_size, sizeof(struct fl_status_entry));
	fl_assert_int_eq(h->probe, FL_STATUS_PAGE_PROBE);
	munmap(m, FL_STATUS_PAGE_SIZE);
	close(fd);
	close(sock);
}

/*
 * What the page says about a fence fd, from the pool fill to the end: active
 * while pending, its exact status and timestamp once completed (a failure
 * too), and nothing once the daemon let go of it.
 */
FL_TEST(status_page_follows_daemon_fences_from_pool_to_release)
{
	int sock = raw_connect(), pfd = raw_hello_page(sock, 1), tl, fds[3], status = 99;
	struct fl_msg_hdr ping = { FL_OP_PING, FL_MSG_F_AFTER_CLOSES, 20, 0 };
	struct fl_fence_info info;
	struct stat gone;
	uint32_t handle;
	uint64_t stamp = 99;
	const void *page;

	page = mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ, MAP_SHARED, pfd, 0);
	fl_assert(page != MAP_FAILED);
	close(pfd);
	tl = raw_timeline_create(sock, 2, "paged", &handle);
	raw_pool_fill_ok(sock, 3, 3, 0, fds);
	/* Pooled, not fences yet: published as active. */
	for (int i = 0; i < 3; i++) {
		fl_assert_int_eq(page_entry(page, fds[i], &status, &stamp), 1);
		fl_assert_int_eq(status, FL_STATUS_ACTIVE);
		fl_assert_int_eq(stamp, 0);
	}
	raw_fence_new_ok(sock, 4, 1, handle, 0);
	raw_fence_new_ok(sock, 5, 2, handle, 1);
	raw_fence_new_ok(sock, 6, 3, handle, 2);
	fl_assert_int_eq(raw_timeline_signal(sock, 7, handle, 1), 0);
	fl_assert_int_eq(page_entry(page, fds[0], &status, &stamp), 1);
	fl_assert_int_eq(status, FL_STATUS_SIGNALED);
	/* The daemon's own answer, to the nanosecond. */
	fl_assert_int_eq(fl_fence_fd_get_info(fds[0], &info, NULL, 0), 0);
	fl_assert_int_eq(stamp, info.timestamp_ns);
	fl_assert_int_eq(page_entry(page, fds[1], &status, &stamp), 1);
	fl_assert_int_eq(status, FL_STATUS_ACTIVE);

	/* The last copy of a pending fence's fd closed: the daemon lets go, the page forgets. */
	fl_assert_int_eq(fstat(fds[2], &gone), 0);
	close(fds[2]);
	raw_send(sock, &ping, sizeof(ping), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_PING, 20), 0);
	fl_assert_int_eq(page_entry_of(page, &gone, &status, &stamp), 0);

	/* The timeline dies with its last fd: the pending fence fails, exactly. */
	close(tl);
	raw_send(sock, &ping, sizeof(ping), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_PING, 20), 0);
	fl_assert_int_eq(page_entry(page, fds[1], &status, &stamp), 1);
	fl_assert_int_eq(status, -ENOENT);
	fl_assert(stamp != 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fds[1]), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_get_status(fds[0]), FL_STATUS_SIGNALED);
	close(fds[0]);
	close(fds[1]);
	close(sock);
	munmap((void *)page, FL_STATUS_PAGE_SIZE);
}

/* HELLO on @path: the reply's flags, and whether an fd came with it (closed). */
static uint32_t hello_page_flags(const char *path, unsigned int *nfds)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 0, sizeof(struct fl_msg_hello) }, { FL_PROTO_VERSION, 0 } };
	struct fl_msg_hello_reply rep;
	int s = raw_connect_to(path), fd = -1;

	raw_send(s, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply_fds(s, FL_OP_HELLO, 0, &rep, sizeof(rep), &fd, 1, nfds), 0);
	if (*nfds)
		close(fd);
	close(s);
	return rep.flags;
}

/*
 * The status page shows every client's fences: a uid let in with
 * --allow-uid is served, but does not get it. The daemon's own uid does.
 */
FL_TEST(another_uid_gets_no_status_page)
{
	static const char *const args[] = { "--allow-uid", "65534", "--idle-timeout", "0", NULL };
	char dir[] = "/tmp/fl-daemon-page-XXXXXX", path[128], lock[160];
	unsigned int nfds = 9;
	pid_t d, kid;

	if (geteuid() != 0)
		fl_test_skip("needs root to become another user");
	fl_assert(mkdtemp(dir));
	fl_assert_int_eq(chmod(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/page.sock", dir);
	d = dl_daemon_start(path, args);
	kid = dl_fork();
	if (kid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(100);
		fl_assert_int_eq(hello_page_flags(path, &nfds), 0);
		fl_assert_int_eq(nfds, 0);
		_exit(0);
	}
	dl_wait_child_ok(kid);
	fl_assert_int_eq(hello_page_flags(path, &nfds), FL_HELLO_F_STATUS_PAGE);
	fl_assert_int_eq(nfds, 1);
	dl_daemon_stop(d);
	unlink(path);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	unlink(lock);
	fl_assert_int_eq(rmdir(dir), 0);
}

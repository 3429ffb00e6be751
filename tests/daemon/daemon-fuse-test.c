/* SPDX-License-Identifier: MIT */
/*
 * fencelined against fds whose filesystem never answers. A client may send
 * any fd where the protocol expects a fence, a timeline, a buffer or a
 * notify fd: here a file on a FUSE filesystem served by a thread of this
 * test that answers INIT, LOOKUP and OPEN and then nothing (GETATTR, FLUSH,
 * IOCTL stay pending). Asking that file's filesystem anything (fstat() on
 * stale attributes, close() sending FLUSH, ioctl()) would block the
 * daemon's single loop; every request must get its error reply and a
 * bystander's PING its answer. A hang is detected by a bounded wait, and
 * the FUSE connection is aborted before failing so nothing stays stuck.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/fuse.h>

#include "daemon-helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"

/* Long enough for a loaded machine and a sanitized daemon; a hang is forever. */
#define HANG_MS 10000

#define ROOT_ID 1
#define FILE_ID 2

struct fuse_srv {
	int dev; /* /dev/fuse */
	char dir[64]; /* the mount point */
	unsigned int conn; /* /sys/fs/fuse/connections/<conn> */
	/* Processes it answers (this test, its child); others' requests stay pending. */
	_Atomic pid_t friends[2];
	pthread_t thread;
};

static void fuse_reply(struct fuse_srv *s, uint64_t unique, int error, const void *body, size_t len)
{
	struct {
		struct fuse_out_header h;
		unsigned char body[256];
	} out;
	size_t n = sizeof(out.h) + (error ? 0 : len);

	out.h = (struct fuse_out_header){ (uint32_t)n, error, unique };
	if (!error && len)
		memcpy(out.body, body, len);
	/* ENOENT: the request was interrupted or the connection aborted. */
	if (write(s->dev, &out, n) < 0 && errno != ENOENT && errno != ENODEV)
		perror("fuse reply");
}

static void file_attr(struct fuse_attr *a, uint64_t ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->mode = ino == ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0666;
	a->nlink = 1;
	a->blksize = 4096;
}

static void *fuse_serve(void *arg)
{
	struct fuse_srv *s = arg;
	size_t cap = 1 << 18;
	unsigned char *buf = malloc(cap);

	while (buf) {
		ssize_t n = read(s->dev, buf, cap);
		struct fuse_in_header h;

		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(h))
			break; /* ENODEV: unmounted or aborted */
		memcpy(&h, buf, sizeof(h));
		if (h.opcode == FUSE_INIT) {
			const struct fuse_init_in *in = (const void *)(buf + sizeof(h));
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
						   .minor = FUSE_KERNEL_MINOR_VERSION,
						   .max_readahead = in->max_readahead,
						   .max_background = 16,
						   .congestion_threshold = 12,
						   .max_write = 4096,
						   .time_gran = 1 };

			if (in->minor < o.minor)
				o.minor = in->minor;
			fuse_reply(s, h.unique, 0, &o, sizeof(o));
			continue;
		}
		/*
		 * The attacker's part: the daemon's requests go unanswered. The
		 * test's own are answered, so that its processes can close the
		 * file and exit whatever happens.
		 */
		if ((h.pid != (uint32_t)atomic_load(&s->friends[0]) &&
		     h.pid != (uint32_t)atomic_load(&s->friends[1])) ||
		    h.opcode == FUSE_FORGET || h.opcode == FUSE_BATCH_FORGET)
			continue;
		switch (h.opcode) {
		case FUSE_LOOKUP: {
			struct fuse_entry_out e = { .nodeid = FILE_ID, .generation = 1 };

			if (strcmp((const char *)buf + sizeof(h), "f")) {
				fuse_reply(s, h.unique, -ENOENT, NULL, 0);
				break;
			}
			/* attr_valid 0: every fstat() asks the server. */
			file_attr(&e.attr, FILE_ID);
			fuse_reply(s, h.unique, 0, &e, sizeof(e));
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out a = { 0 };

			file_attr(&a.attr, h.nodeid);
			fuse_reply(s, h.unique, 0, &a, sizeof(a));
			break;
		}
		case FUSE_OPEN: {
			struct fuse_open_out o = { .fh = 1 };

			fuse_reply(s, h.unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_FLUSH:
		case FUSE_RELEASE:
			fuse_reply(s, h.unique, 0, NULL, 0);
			break;
		default:
			fuse_reply(s, h.unique, -ENOSYS, NULL, 0);
		}
	}
	free(buf);
	return NULL;
}

/* Mount the never-answering filesystem; skips the test where FUSE cannot be mounted. */
static void fuse_start(struct fuse_srv *s)
{
	char opts[128];
	struct stat st;

	memset(s, 0, sizeof(*s));
	atomic_store(&s->friends[0], getpid());
	s->dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (s->dev < 0)
		fl_test_skip("no /dev/fuse (%s)", strerror(errno));
	snprintf(s->dir, sizeof(s->dir), "/tmp/fl-fuse-XXXXXX");
	fl_assert(mkdtemp(s->dir));
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", s->dev);
	if (mount("fl-hostile", s->dir, "fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
		int err = errno;

		close(s->dev);
		rmdir(s->dir);
		fl_test_skip("cannot mount a FUSE filesystem (%s)", strerror(err));
	}
	fl_assert_int_eq(pthread_create(&s->thread, NULL, fuse_serve, s), 0);
	fl_assert_int_eq(stat(s->dir, &st), 0);
	s->conn = minor(st.st_dev);
}

/* A file of it, opened: its server answers nobody but this test. */
static int fuse_hostile_fd(struct fuse_srv *s)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "%s/f", s->dir);
	fd = open(path, O_RDWR | O_CLOEXEC);
	fl_assert(fd >= 0);
	return fd;
}

/*
 * Abort the connection (every pending request fails), unmount, reap the
 * server. umount2(MNT_FORCE) aborts a FUSE connection by itself; the
 * fusectl file is the second way, where fusectl is mounted.
 */
static void fuse_stop(struct fuse_srv *s)
{
	char path[80];
	int fd;

	umount2(s->dir, MNT_FORCE);
	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", s->conn);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) < 0)
			perror("fuse abort");
		close(fd);
	}
	umount2(s->dir, MNT_DETACH);
	pthread_join(s->thread, NULL);
	close(s->dev);
	rmdir(s->dir);
}

static struct fuse_srv *current;

/* Fail the test after unblocking whoever waits on the filesystem. */
#define fuse_fail(...)                                          \
	do {                                                    \
		if (current)                                    \
			fuse_stop(current);                     \
		fl__test_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* The reply to (@op, @seq) within HANG_MS: its status (1 on EOF). */
static int reply_in_time(int sock, uint32_t op, uint32_t seq, const char *what)
{
	struct pollfd p = { sock, POLLIN, 0 };

	if (poll(&p, 1, HANG_MS) != 1)
		fuse_fail("the daemon hangs after %s (no reply in %d ms)", what, HANG_MS);
	return raw_reply(sock, op, seq);
}

/* A PING on @sock answered in time: the daemon's loop is not stuck. */
static void ping_in_time(int sock, uint32_t seq, const char *what)
{
	struct fl_msg_hdr h = { FL_OP_PING, 0, seq, 0 };
	int r;

	raw_send(sock, &h, sizeof(h), NULL, 0);
	r = reply_in_time(sock, FL_OP_PING, seq, what);
	if (r != 0)
		fuse_fail("PING after %s: %d", what, r);
}

/* SIGTERM daemon @d: it must exit 0 (a sanitizer's report would not). */
static void daemon_stop_clean(pid_t d)
{
	int status;

	fl_assert_int_eq(kill(d, SIGTERM), 0);
	fl_assert_int_eq(waitpid(d, &status, 0), d);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fl__test_fail(__FILE__, __LINE__, "the daemon ended with status 0x%x", status);
}

static int hello(const char *path)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 1, sizeof(struct fl_msg_hello) },
		  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
	int sock = raw_connect_to(path);

	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 1), 0);
	return sock;
}

/* Send @len bytes of request @req with @nfds fds; expect @status, and a bystander's PING. */
static void expect_refused(int sock, int bystander, uint32_t *seq, void *req, size_t len,
			   const int *fds, unsigned int nfds, int status, const char *what)
{
	struct fl_msg_hdr *h = req;
	int r;

	h->seq = (*seq)++;
	raw_send(sock, req, len, fds, nfds);
	r = reply_in_time(sock, h->op, h->seq, what);
	if (r != status)
		fuse_fail("%s: status %d, expected %d", what, r, status);
	ping_in_time(bystander, (*seq)++, what);
}

/* A timeline and a pending fence on it, made raw on @sock: the fence fd (the timeline's in *@tl). */
static int raw_fence(int sock, uint32_t *seq, int *tl)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} c = { { FL_OP_TIMELINE_CREATE, 0, (*seq)++, sizeof(c.b) }, { .name = "t" } };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_create b;
	} f = { { FL_OP_FENCE_CREATE, FL_MSG_F_REPLY, (*seq)++, sizeof(f.b) }, { 1, "f" } };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} cbuf;
	unsigned char rep[FL_PROTO_MAX_REPLY];
	struct iovec iov = { rep, sizeof(rep) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct fl_msg_hdr h;
	struct fl_msg_reply r;
	struct cmsghdr *cm;
	int fds[4], three[3], sv[2];
	size_t n;

	raw_send(sock, &c, sizeof(c), NULL, 0);
	msg.msg_control = cbuf.buf;
	msg.msg_controllen = sizeof(cbuf.buf);
	fl_assert((size_t)recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) >= sizeof(h) + sizeof(r));
	memcpy(&h, rep, sizeof(h));
	memcpy(&r, rep + sizeof(h), sizeof(r));
	fl_assert_int_eq(h.seq, c.h.seq);
	fl_assert_int_eq(r.status, 0);
	cm = CMSG_FIRSTHDR(&msg);
	fl_assert(cm && cm->cmsg_type == SCM_RIGHTS);
	n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	fl_assert(n >= 1 && n <= 4);
	memcpy(fds, CMSG_DATA(cm), n * sizeof(int));
	for (size_t k = 1; k < n; k++)
		close(fds[k]); /* the shared counter */
	*tl = fds[0];
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	three[0] = *tl;
	three[1] = sv[0];
	three[2] = sv[1];
	raw_send(sock, &f, sizeof(f), three, 3);
	close(sv[0]);
	fl_assert_int_eq(raw_reply(sock, FL_OP_FENCE_CREATE, f.h.seq), 0);
	return sv[1];
}

FL_TEST_TIMEOUT(fds_on_a_stuck_filesystem_do_not_stall_the_daemon, 120)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[128];
	struct fuse_srv srv;
	uint32_t seq = 10;
	int sock, bystander, fd, tl;
	pid_t d;

	if (geteuid() != 0)
		fl_test_skip("needs root to mount a FUSE filesystem");
	dl_runtime_path("fuse.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	sock = hello(path);
	bystander = hello(path);
	fuse_start(&srv);
	current = &srv;
	fd = fuse_hostile_fd(&srv);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_info b;
		} q = { { FL_OP_FENCE_INFO, 0, 0, sizeof(q.b) }, { 0, 0 } };

		expect_refused(sock, bystander, &seq, &q, sizeof(q), &fd, 1, -ENOTTY,
			       "FENCE_INFO of a FUSE file");
	}
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_timeline_inc b;
		} q = { { FL_OP_TIMELINE_INC, 0, 0, sizeof(q.b) }, { 1 } };

		expect_refused(sock, bystander, &seq, &q, sizeof(q), &fd, 1, -ENOTTY,
			       "TIMELINE_INC of a FUSE file");
	}
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_merge b;
		} q = { { FL_OP_FENCE_MERGE, 0, 0, sizeof(q.b) }, { "m", 0, 0 } };
		int two[2] = { fd, fd };

		expect_refused(sock, bystander, &seq, &q, sizeof(q), two, 2, -ENOTTY,
			       "FENCE_MERGE of FUSE files");
	}
	{
		struct fl_msg_hdr h = { FL_OP_FENCE_RETURN, 0, seq++, 0 };

		/* One-way: a pipe's write end given back; a FUSE file is dropped. */
		raw_send(sock, &h, sizeof(h), &fd, 1);
		ping_in_time(sock, seq++, "FENCE_RETURN of a FUSE file");
		ping_in_time(bystander, seq++, "FENCE_RETURN of a FUSE file");
	}
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_import b;
		} q = { { FL_OP_FENCE_IMPORT, 0, 0, sizeof(q.b) }, { "i" } };

		expect_refused(sock, bystander, &seq, &q, sizeof(q), &fd, 1, -EINVAL,
			       "FENCE_IMPORT of a FUSE file");
	}
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_heap_alloc b;
		} a = { { FL_OP_HEAP_ALLOC, 0, 0, sizeof(a.b) }, { "system", 4096, 0, 0 } };
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_heap_free b;
		} q = { { FL_OP_HEAP_FREE, 0, 0, sizeof(q.b) }, { 0, 0 } };

		/* A buffer first: without one the connection has no heap state to search. */
		a.h.seq = seq++;
		raw_send(sock, &a, sizeof(a), NULL, 0);
		fl_assert_int_eq(reply_in_time(sock, FL_OP_HEAP_ALLOC, a.h.seq, "HEAP_ALLOC"), 0);
		expect_refused(sock, bystander, &seq, &q, sizeof(q), &fd, 1, -EINVAL,
			       "HEAP_FREE of a FUSE file");
	}
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_wait_begin b;
		} w = { { FL_OP_WAIT_BEGIN, FL_MSG_F_NOTIFY, 0, sizeof(w.b) }, { 1, 0, -1 } };
		int fence = raw_fence(sock, &seq, &tl), two[2];

		/* One-way: the daemon drops a notify fd it cannot write without blocking. */
		w.h.seq = seq++;
		two[0] = fence;
		two[1] = fd;
		raw_send(sock, &w, sizeof(w), two, 2);
		ping_in_time(sock, seq++, "WAIT_BEGIN with a FUSE file as notify fd");
		ping_in_time(bystander, seq++, "WAIT_BEGIN with a FUSE file as notify fd");
		close(fence);
	}
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_create b;
		} q = { { FL_OP_FENCE_CREATE, FL_MSG_F_REPLY, seq++, sizeof(q.b) }, { 1, "f" } };
		int other = hello(path), three[3] = { tl, fd, fd }, r;

		/* The pair is written to and closed: a FUSE file is refused, the sender dropped. */
		raw_send(other, &q, sizeof(q), three, 3);
		r = reply_in_time(other, FL_OP_FENCE_CREATE, q.h.seq, "FENCE_CREATE of FUSE files");
		if (r != -EBADMSG)
			fuse_fail("FENCE_CREATE of FUSE files: status %d", r);
		fl_assert_int_eq(reply_in_time(other, FL_OP_FENCE_CREATE, q.h.seq, "the reject"),
				 1);
		close(other);
		close(tl);
	}
	ping_in_time(bystander, seq++, "the requests");
	fuse_stop(&srv);
	current = NULL;
	close(fd);
	/* Aborted: the closer's fds close, and the loop takes them back. */
	ping_in_time(bystander, seq++, "the abort");
	close(bystander);
	close(sock);
	daemon_stop_clean(d);
	unlink(path);
}

/*
 * A process whose fds do not close keeps them counted as the daemon's fds
 * it holds: once over its quota it is hung up on, and others are served.
 */
FL_TEST_TIMEOUT(stuck_fds_count_against_the_sender, 120)
{
	static const char *const args[] = { "--idle-timeout", "0", "--max-fds-per-process", "8",
					    NULL };
	char path[128];
	struct fuse_srv srv;
	int bystander, fd, status;
	pid_t d, kid;

	if (geteuid() != 0)
		fl_test_skip("needs root to mount a FUSE filesystem");
	dl_runtime_path("quota.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	fuse_start(&srv);
	current = &srv;
	fd = fuse_hostile_fd(&srv);
	kid = dl_fork();
	if (kid > 0)
		atomic_store(&srv.friends[1], kid);
	if (kid == 0) {
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_info b;
		} q = { { FL_OP_FENCE_INFO, 0, 0, sizeof(q.b) }, { 0, 0 } };
		int sock, r = -ENOTTY;
		uint32_t seq, refused = 0;

		current = NULL; /* the server thread is the parent's */
		sock = hello(path);
		for (seq = 10; seq < 40 && r == -ENOTTY; seq++) {
			union {
				struct cmsghdr align;
				char buf[CMSG_SPACE(sizeof(int))];
			} cbuf;
			struct iovec iov = { &q, sizeof(q) };
			struct msghdr msg = { .msg_iov = &iov,
					      .msg_iovlen = 1,
					      .msg_control = cbuf.buf,
					      .msg_controllen = sizeof(cbuf.buf) };
			struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd, sizeof(int));
			q.h.seq = seq;
			/* The hang-up may come before we read the last reply. */
			if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
				fl_assert(errno == EPIPE || errno == ECONNRESET);
				r = 1;
				break;
			}
			r = reply_in_time(sock, FL_OP_FENCE_INFO, seq, "FENCE_INFO");
			refused += r == -ENOTTY;
		}
		/* Its connection and 7 stuck fds fill 8: hung up on after the 7th. */
		if (r != 1 || refused != 7)
			fl__test_fail(__FILE__, __LINE__, "status %d after %u refusals", r,
				      refused);
		close(sock);
		_exit(0);
	}
	if (waitpid(kid, &status, 0) != kid || !WIFEXITED(status) || WEXITSTATUS(status))
		fuse_fail("the hostile child failed (status 0x%x)", status);
	bystander = hello(path);
	ping_in_time(bystander, 2, "a process filled its quota with stuck fds");
	fuse_stop(&srv);
	current = NULL;
	close(fd);
	/* Aborted: the closer's fds close, and the loop takes them back. */
	ping_in_time(bystander, 3, "the abort");
	close(bystander);
	daemon_stop_clean(d);
	unlink(path);
}

/* SPDX-License-Identifier: MIT */
/* The helpers of daemon-hostile.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "daemon-hostile.h"
#include "daemon-procs.h"
#include "helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"

void library_round(void)
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

/* ---- other users ---- */

/* ---- raw connections ---- */

int raw_connect(void)
{
	return raw_connect_to(NULL);
}

void raw_hello(int sock)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 7, sizeof(struct fl_msg_hello) },
		  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_HELLO, 7), 0);
}

void raw_ping_ok(int sock, uint32_t seq)
{
	struct fl_msg_hdr h = { FL_OP_PING, 0, seq, 0 };

	raw_send(sock, &h, sizeof(h), NULL, 0);
	fl_assert_int_eq(raw_reply(sock, FL_OP_PING, seq), 0);
}

int raw_reply_fds(int sock, uint32_t op, uint32_t seq, void *body, size_t size, int *fds,
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

void close_fds(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

int raw_timeline_create_flags(int sock, uint32_t seq, const char *name, uint32_t flags,
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

int raw_timeline_create(int sock, uint32_t seq, const char *name, uint32_t *handle)
{
	return raw_timeline_create_flags(sock, seq, name, 0, handle, NULL);
}

int raw_bind(int sock, uint32_t seq, int fd, uint32_t *handle)
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

void raw_send_pool_fill(int sock, uint32_t seq, uint32_t count, uint32_t flags)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_pool_fill b;
	} req = { { FL_OP_POOL_FILL, 0, seq, sizeof(struct fl_msg_pool_fill) }, { count, flags } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

void raw_pool_fill_ok(int sock, uint32_t seq, uint32_t count, uint32_t first, int *fds)
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

void raw_send_fence_new(int sock, uint32_t seq, uint32_t flags, uint64_t value, uint32_t handle,
			uint32_t slot)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_new b;
	} req = { { FL_OP_FENCE_NEW, flags, seq, sizeof(struct fl_msg_fence_new) },
		  { value, "raw", handle, slot } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

void raw_pool_fill_ends_ok(int sock, uint32_t seq, uint32_t count, uint32_t first, int *fds)
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

void raw_fence_new_flags_ok(int sock, uint32_t seq, uint32_t flags, uint64_t value, uint32_t handle,
			    uint32_t slot)
{
	raw_send_fence_new(sock, seq, flags | FL_MSG_F_REPLY, value, handle, slot);
	fl_assert_int_eq(raw_reply(sock, FL_OP_FENCE_NEW, seq), 0);
}

void raw_fence_new_ok(int sock, uint32_t seq, uint64_t value, uint32_t handle, uint32_t slot)
{
	raw_send_fence_new(sock, seq, FL_MSG_F_REPLY, value, handle, slot);
	fl_assert_int_eq(raw_reply(sock, FL_OP_FENCE_NEW, seq), 0);
}

void raw_send_timeline_sync(int sock, uint32_t seq, uint32_t handle, uint32_t pad)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_sync b;
	} req = { { FL_OP_TIMELINE_SYNC, 0, seq, sizeof(struct fl_msg_timeline_sync) },
		  { handle, pad } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

int raw_timeline_sync(int sock, uint32_t seq, uint32_t handle)
{
	raw_send_timeline_sync(sock, seq, handle, 0);
	return raw_reply(sock, FL_OP_TIMELINE_SYNC, seq);
}

int raw_timeline_signal(int sock, uint32_t seq, uint32_t handle, uint64_t count)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_signal b;
	} req = { { FL_OP_TIMELINE_SIGNAL, 0, seq, sizeof(struct fl_msg_timeline_signal) },
		  { count, handle, 0 } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
	return raw_reply(sock, FL_OP_TIMELINE_SIGNAL, seq);
}

void raw_reply_body(int sock, uint32_t op, uint32_t seq, void *body, size_t size)
{
	unsigned char buf[FL_PROTO_MAX_REPLY];
	int32_t status = 1;
	ssize_t n = raw_recv_reply(sock, op, seq, buf, &status);

	fl_assert(n > 0);
	fl_assert_int_eq(status, 0);
	fl_assert_int_eq(n, sizeof(struct fl_msg_hdr) + size);
	memcpy(body, buf + sizeof(struct fl_msg_hdr), size);
}

uint64_t raw_get_value(int sock, uint32_t seq, int tl)
{
	struct fl_msg_hdr h = { FL_OP_TIMELINE_GET_VALUE, 0, seq, 0 };
	struct fl_msg_value_reply rep;

	raw_send(sock, &h, sizeof(h), &tl, 1);
	raw_reply_body(sock, FL_OP_TIMELINE_GET_VALUE, seq, &rep, sizeof(rep));
	return rep.value;
}

void raw_send_fence_info(int sock, uint32_t seq, int fd)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_info b;
	} req = { { FL_OP_FENCE_INFO, 0, seq, sizeof(struct fl_msg_fence_info) }, { 0, 0 } };

	raw_send(sock, &req, sizeof(req), &fd, 1);
}

int raw_fence_status(int sock, uint32_t seq, int fd)
{
	struct fl_msg_info_reply rep;

	raw_send_fence_info(sock, seq, fd);
	raw_reply_body(sock, FL_OP_FENCE_INFO, seq, &rep, sizeof(rep));
	fl_assert_int_eq(rep.num_points, 1);
	fl_assert_int_eq(rep.count, 0);
	return rep.status;
}

struct fl_proto_shared_timeline *counter_map(int memfd)
{
	void *p = mmap(NULL, FL_PROTO_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);

	fl_assert(p != MAP_FAILED);
	return p;
}

void counter_unmap(struct fl_proto_shared_timeline *ctr)
{
	fl_assert_int_eq(munmap(ctr, FL_PROTO_SHARED_SIZE), 0);
}

void counter_set(struct fl_proto_shared_timeline *ctr, uint64_t value)
{
	__atomic_store_n(&ctr->value, value, __ATOMIC_SEQ_CST);
}

void expect_fence_pipe(int fd)
{
	struct stat st;

	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert(S_ISFIFO(st.st_mode));
	fl_assert_int_eq(st.st_mode & 07777, 0);
	fl_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
}

void expect_end_of(int fence, int end, uint64_t tag)
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

/* ---- out of fds ---- */

int open_fd_map(pid_t pid, bool *open_fd)
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

void set_fd_limit(pid_t pid, rlim_t soft)
{
	struct rlimit old, lim;

	fl_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, NULL, &old), 0);
	lim.rlim_cur = soft;
	lim.rlim_max = old.rlim_max;
	fl_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, &lim, NULL), 0);
}

pid_t child_on_own_daemon(const char *name, void (*child)(const char *path, pid_t daemon))
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

int raw_inc(int sock, uint32_t seq, int tl, uint64_t count)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_inc b;
	} req = { { FL_OP_TIMELINE_INC, 0, seq, sizeof(struct fl_msg_timeline_inc) }, { count } };

	raw_send(sock, &req, sizeof(req), &tl, 1);
	return raw_reply(sock, FL_OP_TIMELINE_INC, seq);
}

void raw_wait_begin(int sock, uint32_t seq, int fence, int notify)
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

/* ---- the daemon's log ---- */

pid_t daemon_start_logged(const char *sock, const char *logname, const char *const *args, char *log,
			  size_t cap)
{
	char path[256];
	int logfd, saved;
	pid_t d;

	dl_runtime_path(sock, path, sizeof(path));
	dl_runtime_path(logname, log, cap);
	logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fl_assert(logfd >= 0);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	fl_assert_int_eq(dup2(logfd, 2), 2);
	d = dl_daemon_start(path, args);
	fl_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	close(logfd);
	return d;
}

int count_lines(const char *path, const char *what)
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

void raw_send_dump(int sock, uint32_t seq)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_dump b;
	} req = { { FL_OP_DUMP, 0, seq, sizeof(struct fl_msg_dump) }, { 0, 0 } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

char *raw_reply_text(int sock, uint32_t op, uint32_t seq)
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

void raw_send_trace(int sock, uint32_t seq, uint32_t cmd, uint32_t max_events)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_trace b;
	} req = { { FL_OP_TRACE, 0, seq, sizeof(struct fl_msg_trace) }, { cmd, max_events } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
}

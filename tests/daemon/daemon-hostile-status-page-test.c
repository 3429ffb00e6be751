/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world, the status page: read-only to clients, following daemon
 * fences from pool to release, and not offered to other users.
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

/*
 * HELLO that must work and carry the status page and the info page:
 * returns the status page's fd, the info page's in *@ret_info (NULL: closed).
 */
static int raw_hello_page(int sock, uint32_t seq, int *ret_info)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, seq, sizeof(struct fl_msg_hello) },
		  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
	struct fl_msg_hello_reply rep;
	unsigned int n;
	int fds[2] = { -1, -1 };

	raw_send(sock, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply_fds(sock, FL_OP_HELLO, seq, &rep, sizeof(rep), fds, 2, &n), 0);
	fl_assert_int_eq(rep.flags, FL_HELLO_F_STATUS_PAGE | FL_HELLO_F_INFO_PAGE);
	fl_assert_int_eq(n, 2);
	if (ret_info)
		*ret_info = fds[1];
	else
		close(fds[1]);
	return fds[0];
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
	int info, sock = raw_connect(), fd = raw_hello_page(sock, 1, &info), rw;
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
	/* The info page likewise. */
	fl_assert_int_eq(fcntl(info, F_GETFL) & O_ACCMODE, O_RDONLY);
	fl_assert_int_eq(fcntl(info, F_GET_SEALS) & seals, seals);
	fl_assert_int_eq(fstat(info, &st), 0);
	fl_assert_int_eq(st.st_size, FL_INFO_PAGE_SIZE);
	fl_assert(mmap(NULL, FL_INFO_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, info, 0) ==
		  MAP_FAILED);
	fl_assert_errno(write(info, &zero, 1), EBADF);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", info);
	rw = open(path, O_RDWR | O_CLOEXEC);
	if (rw >= 0) {
		fl_assert_errno(pwrite(rw, &zero, 1, 0), EPERM);
		fl_assert_errno(ftruncate(rw, 0), EPERM);
		close(rw);
	}
	m = mmap(NULL, FL_INFO_PAGE_SIZE, PROT_READ, MAP_SHARED, info, 0);
	fl_assert(m != MAP_FAILED);
	fl_assert_errno(mprotect(m, FL_INFO_PAGE_SIZE, PROT_READ | PROT_WRITE), EACCES);
	fl_assert_int_eq(((const struct fl_info_page_header *)m)->magic, FL_INFO_PAGE_MAGIC);
	munmap(m, FL_INFO_PAGE_SIZE);
	close(info);
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
	int sock = raw_connect(), pfd = raw_hello_page(sock, 1, NULL), tl, fds[3], status = 99;
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

/*
 * HELLO on @path speaking sync @sync: the reply's flags, and how many fds
 * came with it (closed).
 */
static uint32_t hello_page_flags_sync(const char *path, uint32_t sync, unsigned int *nfds)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 0, sizeof(struct fl_msg_hello) },
		  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
	struct fl_msg_hello_reply rep;
	int s = raw_connect_to(path), fds[2] = { -1, -1 };

	req.b.services[FL_PROTO_SVC_SYNC] = sync;
	raw_send(s, &req, sizeof(req), NULL, 0);
	fl_assert_int_eq(raw_reply_fds(s, FL_OP_HELLO, 0, &rep, sizeof(rep), fds, 2, nfds), 0);
	for (unsigned int i = 0; i < *nfds; i++)
		close(fds[i]);
	close(s);
	return rep.flags;
}

static uint32_t hello_page_flags(const char *path, unsigned int *nfds)
{
	return hello_page_flags_sync(path, FL_PROTO_SYNC_VERSION, nfds);
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
	fl_assert_int_eq(hello_page_flags(path, &nfds),
			 FL_HELLO_F_STATUS_PAGE | FL_HELLO_F_INFO_PAGE);
	fl_assert_int_eq(nfds, 2);
	/* A client of sync 3 takes one fd: it gets the status page alone, as before. */
	fl_assert_int_eq(hello_page_flags_sync(path, 3, &nfds), FL_HELLO_F_STATUS_PAGE);
	fl_assert_int_eq(nfds, 1);
	dl_daemon_stop(d);
	unlink(path);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	unlink(lock);
	fl_assert_int_eq(rmdir(dir), 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world, clients of other users and several connections of one peer:
 * refused unless allowed, and quotas counted per process and per uid, not
 * per connection.
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
	} req = { { FL_OP_HELLO, 0, 0, sizeof(struct fl_msg_hello) },
		  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
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
	int base;
	pid_t d, pid, hog;

	dl_runtime_path("quota-fences.sock", path, sizeof(path));
	d = dl_daemon_start(path, fences);
	pid = dl_fork();
	if (pid == 0)
		fences_per_process_child(path, d);
	dl_wait_child_ok(pid);
	dl_daemon_stop(d);

	d = daemon_start_logged("quota-fds.sock", "quota-fds.log", fds, log, sizeof(log));
	dl_runtime_path("quota-fds.sock", path, sizeof(path));
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

/* SPDX-License-Identifier: MIT */
/*
 * Hostile holders of fence and timeline fds (issue 15 §1; the threat model
 * is in docs/architecture.md): what one holder does to the fd it holds,
 * with plain syscalls, as the same uid or as another one, against what the
 * other holders see. In-process fds (the core's) and daemon fds (an owned
 * timeline's, with the owner's signal ends) both.
 *
 * The holder runs in a forked child; as root it first becomes another uid,
 * so "another uid" is tested too (skipped otherwise).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

/* nobody on Debian; any uid other than ours will do. */
#define OTHER_UID 65534

enum holder { SAME_UID, OTHER_UID_HOLDER };

/* A fence fd of each kind, pending at value 1 of a timeline this process signals. */
struct subject {
	struct fl_timeline *tl; /* in-process; NULL for a daemon fence */
	struct fl_fence *fence;
	int tl_fd; /* daemon timeline; -1 in-process */
	int fd;
};

static void subject_new(struct subject *s, bool daemon)
{
	*s = (struct subject){ .tl_fd = -1, .fd = -1 };
	if (daemon) {
		fl_assert_int_eq(fl_timeline_fd_create("holder", 0, &s->tl_fd), 0);
		fl_assert_int_eq(fl_fence_fd_create(s->tl_fd, 1, "held", &s->fd), 0);
		return;
	}
	s->tl = fl_test_timeline_new("holder");
	s->fence = fl_test_fence_new(s->tl, 1, "held");
	s->fd = fl_test_export_fd(s->fence);
}

static void subject_signal(struct subject *s)
{
	if (s->tl)
		fl_assert_int_eq(fl_sw_sync_timeline_inc(s->tl, 1), 0);
	else
		fl_assert_int_eq(fl_timeline_fd_inc(s->tl_fd, 1), 0);
}

static void subject_free(struct subject *s)
{
	close(s->fd);
	if (s->tl_fd >= 0)
		close(s->tl_fd);
	fl_fence_unref(s->fence);
	if (s->tl)
		fl_timeline_unref(s->tl);
}

/* In a child: become @who. Exits 77 (skip) when that needs root and we are not. */
static void become(enum holder who)
{
	if (who == SAME_UID)
		return;
	if (setgid(OTHER_UID) < 0 || setuid(OTHER_UID) < 0)
		_exit(77);
}

/* Runs @fn(@fd) in a child as @who; returns its exit status (77: skipped). */
static int as_holder(enum holder who, int (*fn)(int fd), int fd)
{
	pid_t pid = fork();
	int ws;

	fl_assert(pid >= 0);
	if (pid == 0) {
		become(who);
		_exit(fn(fd));
	}
	fl_assert_int_eq(waitpid(pid, &ws, 0), pid);
	fl_assert(WIFEXITED(ws));
	return WEXITSTATUS(ws);
}

static void expect_holder_ok(enum holder who, int (*fn)(int fd), int fd)
{
	int r = as_holder(who, fn, fd);

	if (r == 77 && who == OTHER_UID_HOLDER && geteuid() != 0)
		return; /* another uid needs root: covered by the same-uid run */
	if (r != 0)
		fl__test_fail(__FILE__, __LINE__, "holder child failed at step %d", r);
}

/* Every way back in through /proc/self/fd: none may give the holder a new description. */
static int try_reopen(int fd)
{
	static const int modes[] = { O_RDONLY, O_WRONLY, O_RDWR };
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* The inode's owner could give the mode back first: another uid may not. */
	if (fchmod(fd, 0600) == 0)
		return 9;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		int r = open(path, modes[i] | O_CLOEXEC | O_NONBLOCK);

		if (r >= 0)
			return 10 + (int)i;
	}
	return 0;
}

FL_TEST(another_uid_cannot_reopen_fence_or_timeline_fds_through_proc)
{
	struct subject in, dm;
	int tl_fd;

	if (geteuid() != 0)
		fl_test_skip("needs root to become another uid");
	subject_new(&in, false);
	subject_new(&dm, true);
	fl_assert_int_eq(fl_timeline_export_fd(in.tl, &tl_fd), 0);
	expect_holder_ok(OTHER_UID_HOLDER, try_reopen, in.fd);
	expect_holder_ok(OTHER_UID_HOLDER, try_reopen, dm.fd);
	expect_holder_ok(OTHER_UID_HOLDER, try_reopen, tl_fd);
	expect_holder_ok(OTHER_UID_HOLDER, try_reopen, dm.tl_fd);
	close(tl_fd);
	subject_free(&dm);
	subject_free(&in);
}

/*
 * The limit of (c) that the threat model names: a pipe's inode belongs to
 * the uid that made it, so a process of that uid, not root, that sets out
 * to attack can give the mode back (fchmod), reopen the read end it holds
 * for writing through /proc/self/fd and write into the pipe: every
 * holder's poll() then reports it ready before it is signalled. What
 * fenceline itself reports stays exact (the core's status in the making
 * process). A kernel sync_file cannot be reopened; no unprivileged fd kind
 * gives both that and (b) (docs/architecture.md). This test keeps the
 * documentation true: it fails the day the attack stops working.
 */
static int forge_readiness_by_reopening(int fd)
{
	char path[64];
	int w;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC) >= 0)
		return 1; /* mode 0 must stop the plain reopen */
	if (fchmod(fd, 0600) < 0)
		return 2;
	w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (w < 0)
		return 3;
	if (write(w, "x", 1) != 1)
		return 4;
	return 0;
}

static int same_uid_attack_in_process(void)
{
	struct fl_timeline *tl;
	struct fl_fence *f;
	int fd, r;

	if (setgid(OTHER_UID) < 0 || setuid(OTHER_UID) < 0)
		return 77;
	if (fl_sw_sync_timeline_create("attacked", 0, &tl) < 0 ||
	    fl_sw_sync_fence_create(tl, 1, "attacked", &f) < 0 || fl_fence_export_fd(f, &fd) < 0)
		return 20;
	r = as_holder(SAME_UID, forge_readiness_by_reopening, fd);
	if (r != 0)
		return 30 + r;
	if (!(fl_test_poll_fd(fd, POLLIN, 0) & POLLIN))
		return 40; /* the forged byte did not make the fd ready */
	/*
	 * fenceline's own calls do not believe it: the mode the attacker gave
	 * back makes the fd no fence of ours (-ENOTTY), never a signalled one.
	 */
	if (fl_fence_fd_get_status(fd) == FL_STATUS_SIGNALED || fl_fence_fd_wait(fd, 0) == 0)
		return 41;
	if (fl_sw_sync_timeline_inc(tl, 1) < 0 || fl_fence_get_status(f) != FL_STATUS_SIGNALED)
		return 42;
	close(fd);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
	return 0;
}

static int run_same_uid_attack(int unused)
{
	(void)unused;
	return same_uid_attack_in_process();
}

FL_TEST(a_same_uid_attacker_can_chmod_a_pipe_back_and_make_it_ready_early)
{
	int r;

	if (geteuid() != 0)
		fl_test_skip(
			"needs root to become a uid that is not root (root may reopen anything)");
	r = as_holder(SAME_UID, run_same_uid_attack, -1);
	if (r != 0)
		fl__test_fail(__FILE__, __LINE__, "attack scenario ended at step %d", r);
}

/*
 * Everything a holder can do to its fd with plain syscalls; the return
 * values do not matter, only what the others see afterwards.
 */
static int do_everything(int fd)
{
	char buf[64] = "FLF1 forged record, status 1......";
	int v = 64;
	int fl = fcntl(fd, F_GETFL);

	(void)!write(fd, buf, sizeof(buf));
	(void)!send(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)!fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	(void)!read(fd, buf, sizeof(buf));
	(void)!recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	(void)!setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v));
	(void)!setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	(void)!shutdown(fd, SHUT_RDWR);
	return 0;
}

/* (c): whatever a holder does, no other holder sees success before the signal. */
static void no_forged_success(bool daemon, enum holder who)
{
	struct subject s;

	subject_new(&s, daemon);
	expect_holder_ok(who, do_everything, s.fd);
	fl_assert_int_ne(fl_fence_fd_get_status(s.fd), FL_STATUS_SIGNALED);
	fl_assert_int_ne(fl_fence_fd_wait(s.fd, 0), 0);
	subject_signal(&s);
	subject_free(&s);
}

FL_TEST(no_holder_makes_a_pending_in_process_fence_read_as_signalled)
{
	no_forged_success(false, SAME_UID);
	no_forged_success(false, OTHER_UID_HOLDER);
}

FL_TEST(no_holder_makes_a_pending_daemon_fence_read_as_signalled)
{
	no_forged_success(true, SAME_UID);
	no_forged_success(true, OTHER_UID_HOLDER);
}

/* Ready for poll() now, without waiting: POLLIN or POLLHUP (the end-of-file of a pipe). */
static bool ready_now(int fd)
{
	short r = fl_test_poll_fd(fd, POLLIN, 0);

	return r & (POLLIN | POLLHUP);
}

/*
 * A holder (@who) does everything to signalled fence @fd; it stays ready
 * and signalled, with the timestamp of @before, for us.
 */
static void holder_leaves_signalled(enum holder who, int fd, const struct fl_fence_info *before)
{
	struct fl_fence_info after;

	expect_holder_ok(who, do_everything, fd);
	fl_assert(ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 0), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(fd, &after, NULL, 0), 0);
	fl_assert_int_eq(after.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(after.timestamp_ns, before->timestamp_ns);
}

/*
 * (b) for in-process fence fds: a holder's syscalls on its copy, before
 * and after completion, change nothing that other holders see: no early
 * readiness, the status and timestamp stay exact, the readiness stays.
 */
static void holder_changes_nothing(enum holder who)
{
	struct fl_timeline *tl = fl_test_timeline_new("isolated");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "isolated");
	struct fl_fence_info before;
	int fd = fl_test_export_fd(f);

	expect_holder_ok(who, do_everything, fd);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert(!ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_wait(fd, 0), -ETIME);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert(ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_info(fd, &before, NULL, 0), 0);

	holder_leaves_signalled(who, fd, &before);

	close(fd);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(a_holder_of_an_in_process_fence_fd_changes_nothing_for_the_others)
{
	holder_changes_nothing(SAME_UID);
}

FL_TEST(another_uid_holding_an_in_process_fence_fd_changes_nothing_for_the_others)
{
	if (geteuid() != 0)
		fl_test_skip("needs root to become another uid");
	holder_changes_nothing(OTHER_UID_HOLDER);
}

/* The same holder in this very process, on a dup: one open file description with ours. */
FL_TEST(a_holder_in_this_process_changes_nothing_for_the_others)
{
	struct fl_timeline *tl = fl_test_timeline_new("isolated");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "isolated");
	int fd = fl_test_export_fd(f), copy = dup(fd);

	fl_assert(copy >= 0);
	do_everything(copy);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert(!ready_now(fd));
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	do_everything(copy);
	fl_assert(ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	close(copy);
	close(fd);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

/* (b) for in-process timeline fds: the timeline lives on, its fences signal and do not fail. */
static void timeline_holder_changes_nothing(enum holder who)
{
	struct fl_timeline *tl = fl_test_timeline_new("isolated-tl");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "on-it");
	int tl_fd, fd = fl_test_export_fd(f);

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	/* From here on, the fd is the timeline's only handle. */
	fl_timeline_unref(tl);
	expect_holder_ok(who, do_everything, tl_fd);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_get_status(f), FL_STATUS_SIGNALED);
	close(tl_fd);
	close(fd);
	fl_fence_unref(f);
}

FL_TEST(a_holder_of_an_in_process_timeline_fd_changes_nothing_for_the_others)
{
	fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
	timeline_holder_changes_nothing(SAME_UID);
}

FL_TEST(another_uid_holding_an_in_process_timeline_fd_changes_nothing_for_the_others)
{
	if (geteuid() != 0)
		fl_test_skip("needs root to become another uid");
	fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
	timeline_holder_changes_nothing(OTHER_UID_HOLDER);
}

/*
 * An in-process fence fd in another process (forked, or received): it
 * reads the status from the pipe, and end-of-file is its readiness.
 */
static int child_sees_signalled(int fd)
{
	if (fl_test_poll_fd(fd, POLLIN, 30000) == 0)
		return 40;
	if (fl_fence_fd_get_status(fd) != FL_STATUS_SIGNALED)
		return 41;
	return 0;
}

FL_TEST(a_forked_holder_reads_the_status_of_an_in_process_fence)
{
	struct fl_timeline *tl = fl_test_timeline_new("forked");
	struct fl_fence *f = fl_test_fence_new(tl, 1, "forked");
	int fd = fl_test_export_fd(f);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	expect_holder_ok(SAME_UID, child_sees_signalled, fd);
	expect_holder_ok(OTHER_UID_HOLDER, child_sees_signalled, fd);
	close(fd);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

/* (b) for the daemon's timeline fds: a holder's syscalls neither kill the timeline nor fail its fences. */
static void daemon_timeline_holder_changes_nothing(enum holder who)
{
	int tl_fd, fd;

	fl_assert_int_eq(fl_timeline_fd_create("isolated-dtl", 0, &tl_fd), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl_fd, 1, "on-it", &fd), 0);
	expect_holder_ok(who, do_everything, tl_fd);
	/*
	 * Closing a copy waits until the daemon has handled every hang-up
	 * before it: the holder's shutdown too, had it hung the fd up.
	 */
	fl_assert_int_eq(fl_timeline_fd_close(dup(tl_fd)), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 30000), 0);
	close(tl_fd);
	close(fd);
}

FL_TEST(a_holder_of_a_daemon_timeline_fd_changes_nothing_for_the_others)
{
	daemon_timeline_holder_changes_nothing(SAME_UID);
}

FL_TEST(another_uid_holding_a_daemon_timeline_fd_changes_nothing_for_the_others)
{
	if (geteuid() != 0)
		fl_test_skip("needs root to become another uid");
	daemon_timeline_holder_changes_nothing(OTHER_UID_HOLDER);
}

/*
 * A daemon fence fd as a process that owns no timeline gets it: the read
 * end of a pipe the daemon made (docs/architecture.md, "Fence fds"). A
 * forked child, with its own connection, makes it on @tl_fd and sends it
 * here; this process then holds it as any receiver of a fence fd would.
 */
static int daemon_pipe_fence(int tl_fd, uint64_t value)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	struct stat st;
	int sv[2], fd = -1, ws;
	pid_t pid;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		if (fl_fence_fd_create(tl_fd, value, "piped", &fd) < 0)
			_exit(1);
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		_exit(sendmsg(sv[1], &mh, 0) == 1 ? 0 : 2);
	}
	close(sv[1]);
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	fl_assert_int_eq(recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC), 1);
	cm = CMSG_FIRSTHDR(&mh);
	fl_assert(cm && cm->cmsg_type == SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sv[0]);
	fl_assert_int_eq(waitpid(pid, &ws, 0), pid);
	fl_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	/* What this test is about: not a socket, mode 0. */
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert(S_ISFIFO(st.st_mode));
	fl_assert_int_eq(st.st_mode & 07777, 0);
	return fd;
}

/* A status read in another process, after a holder read the record out: the daemon still knows. */
static int child_sees_signalled_now(int fd)
{
	if (!ready_now(fd))
		return 42;
	return fl_fence_fd_get_status(fd) == FL_STATUS_SIGNALED ? 0 : 43;
}

/*
 * (b) for the daemon's fence fds: a holder's syscalls on its copy, before
 * and after completion, change nothing the other holders see, the status
 * read after a holder read the record out included.
 */
static void daemon_fence_holder_changes_nothing(enum holder who)
{
	struct fl_fence_info before;
	int tl_fd, fd;

	fl_assert_int_eq(fl_timeline_fd_create("isolated-df", 0, &tl_fd), 0);
	fd = daemon_pipe_fence(tl_fd, 1);
	expect_holder_ok(who, do_everything, fd);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert(!ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_wait(fd, 0), -ETIME);

	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 30000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_info(fd, &before, NULL, 0), 0);
	expect_holder_ok(who, child_sees_signalled, fd);

	holder_leaves_signalled(who, fd, &before);
	/* A same-uid process may ask the daemon; another uid is not let in (docs/daemon.md). */
	expect_holder_ok(SAME_UID, child_sees_signalled_now, fd);
	close(tl_fd);
	close(fd);
}

FL_TEST(a_holder_of_a_daemon_fence_fd_changes_nothing_for_the_others)
{
	daemon_fence_holder_changes_nothing(SAME_UID);
}

FL_TEST(another_uid_holding_a_daemon_fence_fd_changes_nothing_for_the_others)
{
	if (geteuid() != 0)
		fl_test_skip("needs root to become another uid");
	daemon_fence_holder_changes_nothing(OTHER_UID_HOLDER);
}

/* An event loop that reads a few bytes of whatever is readable. */
static int read_a_little(int fd)
{
	char buf[5];

	return read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) ? 0 : 30;
}

/*
 * A holder that reads part of a completed daemon fence's record: every
 * other holder, of any uid, still reads the exact status, without asking
 * the daemon (which would not let another uid in).
 */
static void partial_reader_changes_nothing(enum holder who)
{
	int tl_fd, fd;

	fl_assert_int_eq(fl_timeline_fd_create("partial", 0, &tl_fd), 0);
	fd = daemon_pipe_fence(tl_fd, 1);
	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 30000), 0);
	expect_holder_ok(who, read_a_little, fd);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	expect_holder_ok(OTHER_UID_HOLDER, child_sees_signalled_now, fd);
	expect_holder_ok(SAME_UID, child_sees_signalled_now, fd);
	close(tl_fd);
	close(fd);
}

FL_TEST(a_holder_reading_part_of_a_daemon_fence_record_changes_nothing)
{
	partial_reader_changes_nothing(SAME_UID);
	partial_reader_changes_nothing(OTHER_UID_HOLDER);
}

/* A failed fence's record read out whole: the others still read its error, and it stays ready. */
FL_TEST(a_failed_daemon_fence_keeps_its_error_when_a_holder_reads_the_record)
{
	int tl_fd, fd;

	fl_assert_int_eq(fl_timeline_fd_create("doomed", 0, &tl_fd), 0);
	fd = daemon_pipe_fence(tl_fd, 1);
	/* Its last handle: the timeline dies and its pending fence fails. */
	fl_assert_int_eq(fl_timeline_fd_close(tl_fd), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 30000), -ENOENT);
	expect_holder_ok(SAME_UID, do_everything, fd);
	fl_assert(ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_get_status(fd), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 0), -ENOENT);
	close(fd);
}

/*
 * (b) for a merge the daemon made, even of an owner's own fences (socket
 * pairs): the merged fd is a pipe the daemon made, and its holders are
 * isolated from each other.
 */
FL_TEST(a_holder_of_a_daemon_merged_fence_fd_changes_nothing_for_the_others)
{
	struct stat st;
	int tl_fd, a, b, m = -1;

	fl_assert_int_eq(fl_timeline_fd_create("merged", 0, &tl_fd), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl_fd, 1, "a", &a), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl_fd, 2, "b", &b), 0);
	fl_assert_int_eq(fl_fence_fd_merge(a, b, "m", 0, &m), 0);
	fl_assert_int_eq(fstat(m, &st), 0);
	fl_assert(S_ISFIFO(st.st_mode));
	fl_assert_int_eq(st.st_mode & 07777, 0);
	expect_holder_ok(SAME_UID, do_everything, m);
	expect_holder_ok(OTHER_UID_HOLDER, do_everything, m);
	fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
	fl_assert(!ready_now(m));
	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 2), 0);
	fl_assert_int_eq(fl_fence_fd_wait(m, 30000), 0);
	expect_holder_ok(SAME_UID, do_everything, m);
	fl_assert(ready_now(m));
	fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_SIGNALED);
	close(m);
	close(b);
	close(a);
	close(tl_fd);
}

/* The rest of the fd API takes the daemon's pipe fence fds as it takes its socket ones. */
FL_TEST(daemon_pipe_fence_fds_merge_and_answer_info_and_deadlines)
{
	struct fl_fence_info info;
	struct fl_sync_pt_info pt;
	uint64_t deadline = 0;
	int tl_fd, a, b, m = -1;

	fl_assert_int_eq(fl_timeline_fd_create("api", 0, &tl_fd), 0);
	a = daemon_pipe_fence(tl_fd, 1);
	b = daemon_pipe_fence(tl_fd, 2);
	fl_assert_int_eq(fl_fence_fd_merge(a, b, "both", 0, &m), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(a, &info, &pt, 1), 1); /* points filled */
	fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(pt.value, 1);
	fl_assert_int_eq(fl_fence_fd_set_deadline(b, 12345), 0);
	fl_assert_int_eq(fl_fence_fd_get_deadline(b, &deadline), 0);
	fl_assert_int_eq(deadline, 12345);
	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(a, 30000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(m, 30000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(b), FL_STATUS_SIGNALED);
	close(m);
	close(b);
	close(a);
	close(tl_fd);
}

/* (c) for the daemon's pipe fence fds: nothing a holder does makes one read as signalled. */
FL_TEST(no_holder_makes_a_pending_daemon_pipe_fence_read_as_signalled)
{
	int tl_fd, fd;

	fl_assert_int_eq(fl_timeline_fd_create("forge", 0, &tl_fd), 0);
	for (int who = SAME_UID; who <= OTHER_UID_HOLDER; who++) {
		fd = daemon_pipe_fence(tl_fd, 1);
		expect_holder_ok((enum holder)who, do_everything, fd);
		fl_assert_int_ne(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
		fl_assert_int_ne(fl_fence_fd_wait(fd, 0), 0);
		close(fd);
	}
	close(tl_fd);
}

/*
 * ---- An owner's own fences ----
 *
 * A process that made a timeline owns its counter and completes its own
 * fences itself: it keeps each pending fence's signal end, the only write
 * end of the pipe whose read end is the fence fd, and writes the record
 * into it and closes it when its counter gets there. The holders of those
 * fds are as isolated as any others', and an owner that loses its end
 * before it gets there fails the fence (-ENOENT), never signals it.
 */

/* A fence fd of this process's own timeline: a mode-0 pipe read end, like every other. */
static int owner_fence(int tl_fd, uint64_t value, const char *name)
{
	struct stat st;
	int fd = -1;

	fl_assert_int_eq(fl_fence_fd_create(tl_fd, value, name, &fd), 0);
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert(S_ISFIFO(st.st_mode));
	fl_assert_int_eq(st.st_mode & 07777, 0);
	return fd;
}

/* Pending for another process, holder of a copy: not ready, active. */
static int child_sees_pending(int fd)
{
	if (ready_now(fd))
		return 44;
	return fl_fence_fd_get_status(fd) == FL_STATUS_ACTIVE ? 0 : 45;
}

/*
 * (b) for an owner's own fence fds: a holder's syscalls on its copy
 * (shutdown, read, write, recv, fcntl), before and after the owner's
 * signal, change nothing for the others, the owner included: no early
 * readiness, the status and timestamp stay exact.
 */
static void owner_fence_holder_changes_nothing(enum holder who)
{
	struct fl_fence_info before;
	int tl_fd, fd;

	fl_assert_int_eq(fl_timeline_fd_create("owned", 0, &tl_fd), 0);
	fd = owner_fence(tl_fd, 1, "owned");
	expect_holder_ok(who, do_everything, fd);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert(!ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_wait(fd, 0), -ETIME);
	expect_holder_ok(SAME_UID, child_sees_pending, fd);

	/* The owner's own signal: no daemon round trip, yet ready for everybody. */
	fl_assert_int_eq(fl_timeline_fd_inc(tl_fd, 1), 0);
	fl_assert(ready_now(fd));
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_fd_get_info(fd, &before, NULL, 0), 0);
	expect_holder_ok(who, child_sees_signalled, fd);

	holder_leaves_signalled(who, fd, &before);
	expect_holder_ok(SAME_UID, child_sees_signalled_now, fd);
	close(tl_fd);
	close(fd);
}

FL_TEST(a_holder_of_an_owners_fence_fd_changes_nothing_for_the_others)
{
	owner_fence_holder_changes_nothing(SAME_UID);
}

FL_TEST(another_uid_holding_an_owners_fence_fd_changes_nothing_for_the_others)
{
	if (geteuid() != 0)
		fl_test_skip("needs root to become another uid");
	owner_fence_holder_changes_nothing(OTHER_UID_HOLDER);
}

static void send_fds(int sock, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))], byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	mh.msg_control = cbuf;
	mh.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (size_t)n * sizeof(int));
	fl_assert_int_eq(sendmsg(sock, &mh, 0), 1);
}

static void recv_fds(int sock, int *fds, int n)
{
	char cbuf[CMSG_SPACE(2 * sizeof(int))], byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	fl_assert_int_eq(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC), 1);
	cm = CMSG_FIRSTHDR(&mh);
	fl_assert(cm && cm->cmsg_type == SCM_RIGHTS);
	fl_assert_int_eq(cm->cmsg_len, CMSG_LEN((size_t)n * sizeof(int)));
	memcpy(fds, CMSG_DATA(cm), (size_t)n * sizeof(int));
}

enum owner_loss { CLOSE_RANGE, SIGKILLED };

/*
 * An owner process (forked) makes a fence of its timeline and sends it
 * here with a copy of the timeline fd, so the timeline lives on. It forks
 * a child of its own first, which lives on with whatever it inherited
 * (fork must not leave it copies of the owner's signal ends: they would
 * keep the fence from ever completing), then loses its end before it
 * signals: it closes every fd it has (close_range(), as daemons do after
 * fork), or is killed. Its fence fails, -ENOENT, and stays failed when the
 * timeline gets there after all: ready never reads as signalled before
 * the fence is.
 */
static void owner_loses_its_end(enum owner_loss how)
{
	int sv[2], hold[2], got[2], ws;
	pid_t owner;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
	owner = fork();
	fl_assert(owner >= 0);
	if (owner == 0) {
		int fds[2];
		pid_t heir;
		char c;

		close(sv[0]);
		close(hold[1]);
		fl_assert_int_eq(fl_timeline_fd_create("lost", 0, &fds[1]), 0);
		fds[0] = owner_fence(fds[1], 1, "lost");
		heir = fork();
		if (heir == 0) {
			/* Lives until the test ends, holding what fork gave it. */
			(void)!read(hold[0], &c, 1);
			_exit(0);
		}
		close(hold[0]);
		send_fds(sv[1], fds, 2);
		if (how == SIGKILLED)
			pause();
		fl_assert_int_eq((int)syscall(SYS_close_range, 3u, ~0u, 0u), 0);
		/* Alive, without the library's fds. */
		pause();
		_exit(0);
	}
	close(sv[1]);
	close(hold[0]);
	recv_fds(sv[0], got, 2);
	close(sv[0]);
	if (how == SIGKILLED)
		fl_assert_int_eq(kill(owner, SIGKILL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(got[0], 30000), -ENOENT);
	fl_assert(ready_now(got[0]));
	fl_assert_int_eq(fl_fence_fd_get_status(got[0]), -ENOENT);
	/* The timeline reaching it changes nothing. */
	fl_assert_int_eq(fl_timeline_fd_inc(got[1], 1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(got[0]), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_wait(got[0], 0), -ENOENT);
	expect_holder_ok(SAME_UID, do_everything, got[0]);
	fl_assert_int_eq(fl_fence_fd_get_status(got[0]), -ENOENT);
	if (how == CLOSE_RANGE)
		fl_assert_int_eq(kill(owner, SIGKILL), 0);
	fl_assert_int_eq(waitpid(owner, &ws, 0), owner);
	close(hold[1]); /* the heir goes */
	close(got[0]);
	close(got[1]);
}

FL_TEST(an_owner_that_closes_the_librarys_fds_fails_its_pending_fences)
{
	owner_loses_its_end(CLOSE_RANGE);
}

FL_TEST(an_owner_killed_before_it_signals_fails_its_pending_fences)
{
	owner_loses_its_end(SIGKILLED);
}

/*
 * Completions the owner did not start: another process's signal through
 * the daemon completes the owner's fence (the owner closes its end when
 * the daemon tells it), and closing the timeline's last fd fails it.
 */
static int inc_once(int tl_fd)
{
	return fl_timeline_fd_inc(tl_fd, 1) == 0 ? 0 : 50;
}

FL_TEST(another_process_signalling_an_owners_timeline_completes_its_kept_fence)
{
	int tl_fd, fd, later;

	fl_assert_int_eq(fl_timeline_fd_create("others", 0, &tl_fd), 0);
	fd = owner_fence(tl_fd, 1, "others");
	later = owner_fence(tl_fd, 2, "later");
	expect_holder_ok(SAME_UID, inc_once, tl_fd);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 30000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	expect_holder_ok(SAME_UID, child_sees_signalled_now, fd);
	fl_assert_int_eq(fl_fence_fd_get_status(later), FL_STATUS_ACTIVE);
	fl_assert(!ready_now(later));
	/* Its last fd closed, the timeline dies, and the owner's pending fence fails. */
	fl_assert_int_eq(fl_timeline_fd_close(tl_fd), 0);
	fl_assert_int_eq(fl_fence_fd_wait(later, 30000), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_get_status(later), -ENOENT);
	expect_holder_ok(SAME_UID, do_everything, later);
	fl_assert_int_eq(fl_fence_fd_get_status(later), -ENOENT);
	close(later);
	close(fd);
}

/*
 * A status is never ahead of the fd: whoever reads an owner's fence as
 * signalled finds its fd ready, although another process's signal reaches
 * the owner's write end through the daemon and the owner's watcher thread.
 * A reader that spins on the status lands in that hop every time it can.
 */
FL_TEST(an_owners_fence_signalled_by_another_process_reads_signalled_only_when_ready)
{
	int tl_fd, cmd[2], done[2];
	pid_t pid;
	char c;

	fl_assert_int_eq(fl_timeline_fd_create("ahead", 0, &tl_fd), 0);
	fl_assert_int_eq(pipe2(cmd, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(done, O_CLOEXEC), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(cmd[1]);
		close(done[0]);
		while (read(cmd[0], &c, 1) == 1) {
			c = fl_timeline_fd_inc(tl_fd, 1) == 0 ? 0 : 1;
			if (write(done[1], &c, 1) != 1)
				_exit(2);
		}
		_exit(0);
	}
	close(cmd[0]);
	close(done[1]);
	for (uint64_t v = 1; v <= 200; v++) {
		int fd = owner_fence(tl_fd, v, "ahead"), s;

		c = 0;
		fl_assert_int_eq(write(cmd[1], &c, 1), 1);
		while ((s = fl_fence_fd_get_status(fd)) == FL_STATUS_ACTIVE)
			;
		fl_assert_int_eq(s, FL_STATUS_SIGNALED);
		if (!ready_now(fd))
			fl__test_fail(__FILE__, __LINE__, "fence %d read signalled before ready",
				      (int)v);
		fl_assert_int_eq(read(done[0], &c, 1), 1);
		fl_assert_int_eq(c, 0);
		close(fd);
	}
	close(cmd[1]);
	fl_assert_int_eq(waitpid(pid, NULL, 0), pid);
	close(done[0]);
	close(tl_fd);
}

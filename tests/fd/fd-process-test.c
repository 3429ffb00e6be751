/* SPDX-License-Identifier: MIT */
/*
 * Fence and timeline fds across processes and as timeline owners: fds
 * inherited over fork() or received over SCM_RIGHTS, the fd of a fence
 * whose signalling process died, and timeline death on the close of its
 * last fd.
 */
/* For pipe2() and MSG_CMSG_CLOEXEC. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

/*
 * Child processes report through their exit status: 0 is success, any
 * other value names the step that failed. They never call the runner's
 * assertions, which belong to the test process.
 */
static int child_expect_pending(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret;

	if (fl_fence_fd_get_status(fd) != FL_STATUS_ACTIVE)
		return 20;
	do
		ret = poll(&pfd, 1, 0);
	while (ret < 0 && errno == EINTR);
	if (ret != 0)
		return 21;
	return 0;
}

static int child_expect_completion(int fd, int status)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret;

	do
		ret = poll(&pfd, 1, 30000);
	while (ret < 0 && errno == EINTR);
	if (ret != 1 || !(pfd.revents & POLLIN))
		return 30;
	if (fl_fence_fd_get_status(fd) != status)
		return 31;
	if (fl_fence_fd_wait(fd, 0) != (status == FL_STATUS_SIGNALED ? 0 : status))
		return 32;
	return 0;
}

static void expect_child_success(pid_t pid)
{
	int wstatus;

	fl_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
	fl_assert(WIFEXITED(wstatus));
	fl_assert_int_eq(WEXITSTATUS(wstatus), 0);
}

static int inherit_child(int fd, int ready_fd)
{
	int ret = child_expect_pending(fd);

	if (ret)
		return ret;
	if (write(ready_fd, "r", 1) != 1)
		return 22;
	return child_expect_completion(fd, FL_STATUS_SIGNALED);
}

FL_TEST(forked_child_polls_inherited_fd_and_reads_status)
{
	struct fl_timeline *tl = fl_test_timeline_new("inherit");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fd = fl_test_export_fd(fence);
	int ready[2];
	char byte;
	pid_t pid;

	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		_exit(inherit_child(fd, ready[1]));
	}
	close(ready[1]);
	if (read(ready[0], &byte, 1) != 1)
		expect_child_success(pid);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	expect_child_success(pid);

	close(ready[0]);
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

/* Make and close @n pending fence fds on @tl. Return: 0, or the step that failed. */
static int child_churn(struct fl_timeline *tl, int n)
{
	for (int i = 0; i < n; i++) {
		struct fl_fence *f;
		int fd;

		if (fl_sw_sync_fence_create(tl, 1, "churn", &f) < 0)
			return 40;
		if (fl_fence_export_fd(f, &fd) < 0)
			return 41;
		close(fd);
		fl_fence_unref(f);
	}
	return 0;
}

/* How many of this process's fds are pipes (fence fds and the core's ends of them). */
static int count_pipes(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], target[64];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0 && strncmp(target, "pipe:", 5) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/*
 * A forked child closes its copy of the parent's fence fd and makes and
 * closes fences of its own, which its sweeps (its own thread's, then its
 * watcher's) give back: its pipes come back to what it had. Its watcher
 * stays (the parent's fences are in its table), so only pipes are
 * counted. Return: 0, or the step that failed.
 */
static int sweeping_child(int parent_fd)
{
	struct fl_timeline *tl;
	int r, before;

	close(parent_fd);
	before = count_pipes();
	if (fl_sw_sync_timeline_create("child", 0, &tl) < 0)
		return 42;
	r = child_churn(tl, 300);
	if (r == 0) {
		fl_test_sleep_ms(300);
		r = child_churn(tl, 300);
	}
	for (int i = 0; r == 0 && i < 300 && count_pipes() > before; i++)
		fl_test_sleep_ms(10);
	if (r == 0 && count_pipes() != before)
		r = 43;
	fl_timeline_unref(tl);
	return r;
}

/*
 * Sweeps in a forked child give back the child's closed fences and leave
 * the parent's alone: the parent's pending fence, made just before the
 * fork and not yet taken by its watcher, is still its own afterwards.
 */
FL_TEST(sweeps_in_a_forked_child_leave_the_parents_fences_alone)
{
#if defined(__SANITIZE_ADDRESS__)
	/*
	 * gcc 12's ASan takes no lock of its allocator around fork(): a child
	 * forked while the parent's watcher thread was in the allocator (it
	 * has just started) waits forever for that lock in its first malloc()
	 * (seen in CI: both of the child's threads in
	 * SizeClassAllocator64::GetFromAllocator). This child mallocs at once.
	 */
	fl_test_skip("the child of a fork would deadlock in ASan's allocator");
#endif
	struct fl_timeline *tl = fl_test_timeline_new("fork-sweep");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL), *got = NULL;
	int fd = fl_test_export_fd(fence);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	pid_t pid = fork();

	fl_assert(pid >= 0);
	if (pid == 0)
		_exit(sweeping_child(fd));
	expect_child_success(pid);
	fl_assert_int_eq(fl_fence_from_fd(fd, &got), 0);
	fl_assert(got == fence);
	fl_fence_unref(got);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(poll(&p, 1, 0), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(poll(&p, 1, 0), 1);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_SIGNALED);
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

static int send_fd(int sock, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	char byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;

	memset(&control, 0, sizeof(control));
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cmsg = CMSG_FIRSTHDR(&msg);
	if (!cmsg || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
	    cmsg->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
	return fd;
}

static int scm_child(int sock)
{
	int done = recv_fd(sock), failing = recv_fd(sock);
	int ret;

	if (done < 0 || failing < 0)
		return 10;
	ret = child_expect_pending(done);
	if (!ret)
		ret = child_expect_pending(failing);
	if (ret)
		return ret;
	if (write(sock, "r", 1) != 1)
		return 22;
	ret = child_expect_completion(done, FL_STATUS_SIGNALED);
	if (!ret)
		ret = child_expect_completion(failing, -ENOENT);
	return ret;
}

FL_TEST(child_polls_fd_received_over_scm_rights_and_reads_status)
{
	struct fl_timeline *tl, *doomed;
	struct fl_fence *done, *failing;
	int sv[2], done_fd, fail_fd;
	char byte;
	pid_t pid;

	/* Fork first, so the child can only get the fds by message. */
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(scm_child(sv[1]));
	}
	close(sv[1]);

	tl = fl_test_timeline_new("scm");
	doomed = fl_test_timeline_new("scm-doomed");
	done = fl_test_fence_new(tl, 1, NULL);
	failing = fl_test_fence_new(doomed, 1, NULL);
	done_fd = fl_test_export_fd(done);
	fail_fd = fl_test_export_fd(failing);
	fl_assert_int_eq(send_fd(sv[0], done_fd), 0);
	fl_assert_int_eq(send_fd(sv[0], fail_fd), 0);
	close(fail_fd);
	close(done_fd);

	if (read(sv[0], &byte, 1) != 1)
		expect_child_success(pid);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_timeline_kill(doomed);
	expect_child_success(pid);

	close(sv[0]);
	fl_fence_unref(failing);
	fl_fence_unref(done);
	fl_timeline_unref(tl);
}

static int abandoning_child(int sock)
{
	struct fl_timeline *tl = NULL;
	struct fl_fence *fence = NULL;
	int fd = -1;

	if (fl_sw_sync_timeline_create("abandoned", 0, &tl) < 0 ||
	    fl_sw_sync_fence_create(tl, 1, NULL, &fence) < 0 || fl_fence_export_fd(fence, &fd) < 0)
		return 10;
	if (send_fd(sock, fd) < 0)
		return 11;
	/* Exit with the fence still pending and nothing torn down. */
	return 0;
}

FL_TEST(fd_status_is_econnreset_when_signalling_process_dies)
{
	int sv[2], fd;
	pid_t pid;

	/* The child starts the core's fd watcher thread, and TSan refuses
	 * new threads in a child forked from a threaded process. */
	if (FL_TEST_UNDER_TSAN)
		fl_test_skip("TSan cannot run threads in a child of a threaded process");
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(abandoning_child(sv[1]));
	}
	close(sv[1]);
	fd = recv_fd(sv[0]);
	expect_child_success(pid);
	fl_assert(fd >= 0);

	fl_assert_int_eq(fl_fence_fd_get_status(fd), -ECONNRESET);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 10000), -ECONNRESET);

	close(fd);
	close(sv[0]);
}

FL_TEST(closing_last_timeline_fd_kills_the_timeline)
{
	struct fl_timeline *tl = fl_test_timeline_new("fd-owned");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fence_fd = fl_test_export_fd(fence);
	int tl_fd = -1;

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	fl_assert(tl_fd >= 0);
	tl = fl_timeline_unref(tl);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_ACTIVE);

	/* From here on this thread only uses poll(): the core must notice the
	 * close by itself. */
	close(tl_fd);
	fl_assert(fl_test_poll_fd(fence_fd, POLLIN, 30000) & POLLIN);

	fl_assert_int_eq(fl_fence_fd_get_status(fence_fd), -ENOENT);
	fl_assert_int_eq(fl_fence_get_status(fence), -ENOENT);

	close(fence_fd);
	fl_fence_unref(fence);
}

FL_TEST(dup_of_timeline_fd_keeps_the_timeline_alive)
{
	struct fl_timeline *tl = fl_test_timeline_new("dup-owned");
	struct fl_timeline *found = NULL;
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fence_fd = fl_test_export_fd(fence);
	int tl_fd = -1, copy;

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	tl = fl_timeline_unref(tl);
	copy = dup(tl_fd);
	fl_assert(copy >= 0);
	close(tl_fd);

	/* Give the core's watcher time to (wrongly) act on the close. */
	fl_assert_int_eq(fl_test_poll_fd(fence_fd, POLLIN, 200), 0);
	fl_assert_int_eq(fl_timeline_from_fd(copy, &found), 0);
	fl_assert_int_eq(fl_timeline_is_alive(found), 1);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_ACTIVE);
	found = fl_timeline_unref(found);

	close(copy);
	fl_assert(fl_test_poll_fd(fence_fd, POLLIN, 30000) & POLLIN);
	fl_assert_int_eq(fl_fence_fd_get_status(fence_fd), -ENOENT);

	close(fence_fd);
	fl_fence_unref(fence);
}

FL_TEST(closing_a_timeline_fd_while_a_handle_remains_keeps_it_alive)
{
	struct fl_timeline *tl = fl_test_timeline_new("both");
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fence_fd = fl_test_export_fd(fence);
	int tl_fd = -1;

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	close(tl_fd);
	/* Our handle remains, so the close must not kill the timeline. */
	fl_assert_int_eq(fl_test_poll_fd(fence_fd, POLLIN, 200), 0);
	fl_assert_int_eq(fl_timeline_is_alive(tl), 1);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fence_fd), FL_STATUS_SIGNALED);

	close(fence_fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

FL_TEST(timeline_from_fd_finds_the_timeline)
{
	struct fl_timeline *tl = fl_test_timeline_new("tl-from-fd");
	struct fl_timeline *found = NULL;
	struct fl_fence *fence = fl_test_fence_new(tl, 1, NULL);
	int fence_fd = fl_test_export_fd(fence);
	int tl_fd = -1, copy, pipefd[2];

	fl_assert_int_eq(fl_timeline_export_fd(tl, &tl_fd), 0);
	copy = dup(tl_fd);
	fl_assert(copy >= 0);
	fl_assert_int_eq(fl_timeline_from_fd(tl_fd, &found), 0);
	fl_assert(found == tl);
	found = fl_timeline_unref(found);
	fl_assert_int_eq(fl_timeline_from_fd(copy, &found), 0);
	fl_assert(found == tl);
	/* The handle is a real one: it can signal. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(found, 1), 0);
	fl_assert_int_eq(fl_fence_get_status(fence), FL_STATUS_SIGNALED);
	found = fl_timeline_unref(found);

	fl_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_timeline_from_fd(pipefd[0], &found), -ENOTTY);
	fl_assert_int_eq(fl_timeline_from_fd(fence_fd, &found), -ENOTTY);
	fl_assert_int_eq(fl_timeline_from_fd(-1, &found), -EBADF);
	close(pipefd[0]);
	fl_assert_int_eq(fl_timeline_from_fd(pipefd[0], &found), -EBADF);
	fl_assert(found == NULL);
	fl_assert_int_eq(fl_timeline_export_fd(NULL, &tl_fd), -EINVAL);
	fl_assert_int_eq(fl_timeline_export_fd(tl, NULL), -EINVAL);

	close(pipefd[1]);
	close(copy);
	close(tl_fd);
	close(fence_fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

/*
 * A thread that makes fence fds (and timeline fds) in a loop while the
 * test forks: each fence is signalled at once, and its fd handed to the
 * test, which checks that it reaches end-of-file.
 */
#define FORK_MAKER_FDS 256

struct fork_maker {
	struct fl_timeline *tl;
	pthread_mutex_t lock;
	int fds[FORK_MAKER_FDS];
	size_t nfds;
	atomic_uint made; /* fds handed over so far */
	atomic_bool stop;
	int error; /* the step that failed, 0 if none */
};

static void *fork_maker_thread(void *arg)
{
	struct fork_maker *m = arg;

	while (!atomic_load(&m->stop) && !m->error) {
		struct fl_fence *f;
		int fd, tl_fd, r;
		bool full;

		pthread_mutex_lock(&m->lock);
		full = m->nfds == FORK_MAKER_FDS;
		pthread_mutex_unlock(&m->lock);
		if (full) {
			sched_yield();
			continue;
		}
		r = fl_sw_sync_fence_create(m->tl, fl_test_timeline_value(m->tl) + 1, "fork-race",
					    &f);
		if (r == 0) {
			r = fl_fence_export_fd(f, &fd);
			fl_fence_unref(f);
		}
		if (r < 0) {
			m->error = 1;
			break;
		}
		/* The completion closes the fence's write end. */
		if (fl_sw_sync_timeline_inc(m->tl, 1) < 0)
			m->error = 2;
		pthread_mutex_lock(&m->lock);
		m->fds[m->nfds++] = fd;
		pthread_mutex_unlock(&m->lock);
		atomic_fetch_add(&m->made, 1);
		if (fl_timeline_export_fd(m->tl, &tl_fd) < 0)
			m->error = 3;
		else
			close(tl_fd);
	}
	return NULL;
}

/*
 * How many pipe write ends of mode 0 (the core's ends of fence and
 * timeline fds: nobody else makes those) this process holds.
 */
static int count_core_write_ends(void)
{
	/*
	 * No opendir(): its malloc() in a child forked while another thread
	 * was in the allocator can wait forever under gcc 12's ASan, which
	 * takes no lock of its allocator around fork().
	 */
	char buf[4096];
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	long len;

	if (dir < 0)
		return -1;
	while ((len = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long at = 0; at < len;) {
			struct linux_dirent64 {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *e = (void *)(buf + at);
			int fd = atoi(e->name), fl;
			struct stat st;

			at += e->reclen;
			if (e->name[0] == '.' || fd == dir || fstat(fd, &st) < 0 ||
			    !S_ISFIFO(st.st_mode))
				continue;
			fl = fcntl(fd, F_GETFL);
			if (fl >= 0 && (fl & O_ACCMODE) == O_WRONLY && (st.st_mode & 07777) == 0)
				n++;
		}
	}
	close(dir);
	return n;
}

/*
 * A child forked while another thread makes fence fds: it tells the test
 * how many of the core's write ends it holds, then waits to be killed (so
 * that a copy it holds would still hold its fence's end-of-file back).
 */
static void forked_holder_child(int report)
{
	int n = count_core_write_ends();

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (write(report, &n, sizeof(n)) != sizeof(n))
		_exit(1);
	for (;;)
		pause();
}

/*
 * Read @fd (a signalled fence's fd) until its end-of-file. Return: false
 * if it did not come within @ms, the liveness bound: a write end still
 * open somewhere holds it back for as long as that copy lives.
 */
static bool reaches_eof(int fd, int ms)
{
	char buf[64];

	for (;;) {
		ssize_t n;

		if (!(fl_test_poll_fd(fd, POLLIN, ms) & (POLLIN | POLLHUP)))
			return false;
		n = read(fd, buf, sizeof(buf));
		if (n == 0)
			return true;
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return false;
	}
}

/*
 * fork() while another thread makes and signals fence fds: the child holds
 * no copy of the core's write ends, not even of a fence whose pipe was
 * being made, or completed, at the moment of the fork, so every fence fd
 * of the parent reaches end-of-file when it completes, with the child
 * still alive (a program that forks workers without exec would otherwise
 * see such a fence's fd never become ready once a holder read its record
 * out). Forks many times to hit those windows.
 */
FL_TEST_TIMEOUT(fork_while_another_thread_makes_fence_fds_leaves_no_write_end, 120)
{
	struct fork_maker m = { .tl = fl_test_timeline_new("fork-race") };
	int held = 0, late = 0, forks = FL_TEST_UNDER_TSAN ? 100 : 400;
	pthread_t thread;

	pthread_mutex_init(&m.lock, NULL);
	fl_assert_int_eq(pthread_create(&thread, NULL, fork_maker_thread, &m), 0);
	for (int i = 0; i < forks && !held && !late && !m.error; i++) {
		int report[2], n = -1, fds[FORK_MAKER_FDS];
		unsigned int made;
		size_t nfds;
		pid_t pid;

		fl_assert_int_eq(pipe2(report, O_CLOEXEC), 0);
		pid = fork();
		fl_assert(pid >= 0);
		if (pid == 0) {
			close(report[0]);
			forked_holder_child(report[1]);
		}
		close(report[1]);
		/*
		 * The fence being made at the fork, if any, is handed over before
		 * the next one (or is the one that filled the array).
		 */
		made = atomic_load(&m.made);
		pthread_mutex_lock(&m.lock);
		while (atomic_load(&m.made) == made && m.nfds < FORK_MAKER_FDS && !m.error) {
			pthread_mutex_unlock(&m.lock);
			sched_yield();
			pthread_mutex_lock(&m.lock);
		}
		nfds = m.nfds;
		memcpy(fds, m.fds, nfds * sizeof(int));
		m.nfds = 0;
		pthread_mutex_unlock(&m.lock);
		for (size_t j = 0; j < nfds; j++) {
			if (!late && !reaches_eof(fds[j], 5000))
				late = i + 1;
			close(fds[j]);
		}
		if (read(report[0], &n, sizeof(n)) != sizeof(n) || n != 0)
			held = n ? n : -1;
		close(report[0]);
		kill(pid, SIGKILL);
		fl_assert_int_eq(waitpid(pid, NULL, 0), pid);
	}
	atomic_store(&m.stop, true);
	pthread_join(thread, NULL);
	for (size_t j = 0; j < m.nfds; j++)
		close(m.fds[j]);
	pthread_mutex_destroy(&m.lock);
	fl_timeline_unref(m.tl);
	fl_assert_int_eq(m.error, 0);
	/* 0: no fence fd kept waiting for its end-of-file (else the fork it followed). */
	fl_assert_int_eq(late, 0);
	/* The core's write ends the child held. */
	fl_assert_int_eq(held, 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * Section "daemon": the fd API (<fenceline/shared.h>) in daemon mode, where
 * every timeline and fence lives in fencelined. Each figure stands next to
 * the least that the same job costs without fenceline: a socketpair per
 * fence, a bare request/reply to another process, an eventfd wake across
 * processes. The section starts its own daemon on a private socket, so a
 * daemon the user already runs is neither measured nor disturbed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "bench.h"
/* The DUMP flood speaks the wire protocol itself (as the hostile tests do). */
#include "protocol.h"

/* Long enough never to fire on a healthy run; a sample that hits it is
 * counted as bad instead of hanging the benchmark. */
#define WAKE_TIMEOUT_MS 10000

/* The daemon refuses more than 65536 live fences per client by default, so
 * the memory part never asks one process for more than this. */
#define MEM_PER_CHILD_MAX 50000

#define MEM_TARGET_MIB	  64.0

static char sock_dir[64];

/* Targets are informational: a miss is printed, never an exit status. */
static void target(const char *ratio, const char *cmp, double limit)
{
	double v = fl__bench_get(ratio);
	int ok = strcmp(cmp, "<=") == 0 ? v <= limit : v >= limit;

	fl__bench_comment("target %s %s %.2f: %s (%.2f)", ratio, cmp, limit, ok ? "PASS" : "MISS",
			  v);
}

static void *shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fl__bench_die("mmap", errno);
	return p;
}

static pid_t fork_or_die(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fl__bench_die("fork", errno);
	return pid;
}

static void reap(pid_t pid, const char *what)
{
	int st;

	if (waitpid(pid, &st, 0) < 0)
		fl__bench_die("waitpid", errno);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fflush(stdout);
		fprintf(stderr, "fl-bench: %s child failed (status 0x%x)\n", what, st);
		exit(1);
	}
}

/* A child reports failure through its exit status; the parent names it. */
static void child_check(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "fl-bench: child %d: %s: %s\n", (int)getpid(), what, strerror(-r));
		_exit(1);
	}
}

/* What FENCELINE_SOCKET and FENCELINE_IDLE_MS were before the private daemon. */
static char *saved_sock, *saved_idle;

/* The private daemon: its socket lives in a fresh directory, and an idle
 * daemon exits soon after the bench does. */
static int daemon_setup(void)
{
	char path[128];
	int pid;

	snprintf(sock_dir, sizeof(sock_dir), "/tmp/fl-bench-daemon-XXXXXX");
	if (!mkdtemp(sock_dir))
		fl__bench_die("mkdtemp", errno);
	snprintf(path, sizeof(path), "%s/fenceline.sock", sock_dir);
	saved_sock = fl__bench_env_swap("FENCELINE_SOCKET", path);
	saved_idle = fl__bench_env_swap("FENCELINE_IDLE_MS", "300");
	if (fl_mode_get() != FL_MODE_DAEMON)
		fl__bench_check(fl_mode_set(FL_MODE_DAEMON), "fl_mode_set");
	pid = fl_daemon_connect();
	fl__bench_check(pid, "fl_daemon_connect");
	return pid;
}

/* Connected clients keep working without the socket's name, and the daemon
 * exits on its own once idle, so the directory can go at once. */
static void daemon_cleanup(void)
{
	DIR *d = opendir(sock_dir);
	struct dirent *e;

	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(sock_dir);
	/* Later sections' services (fl-displayd's) must not look for this daemon. */
	fl__bench_env_restore("FENCELINE_SOCKET", saved_sock);
	fl__bench_env_restore("FENCELINE_IDLE_MS", saved_idle);
	saved_sock = saved_idle = NULL;
}

/* 1: fence creation */

struct create_ctx {
	int tl;
};

static double b_socketpair(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();
	int sv[2];

	for (long i = 0; i < ops; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			fl__bench_die("socketpair", errno);
		close(sv[0]);
		close(sv[1]);
	}
	return fl__bench_per_op(t0, ops);
}

/* Creation is one-way, so the client can run ahead of the daemon until the
 * socket buffer fills; the flush at the end puts the daemon's share of the
 * batch inside the timed window. */
static double b_create(void *arg, long ops)
{
	struct create_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	int fd;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_fence_fd_create(c->tl, 1, "bench", &fd), "fl_fence_fd_create");
		close(fd);
	}
	fl_daemon_flush();
	return fl__bench_per_op(t0, ops);
}

/* The single call, daemon kept in step: a flush every 64 calls (outside the
 * timed window) stops the samples from measuring a full socket buffer. */
static void create_call_p50(struct create_ctx *c, long n)
{
	uint64_t *sp = calloc((size_t)n, sizeof(*sp)), *fc = calloc((size_t)n, sizeof(*fc));
	struct fl_introspect_client_stats s0, s1;
	struct fl_bench_lat st;
	int sv[2], fd;

	if (!sp || !fc)
		fl__bench_die("calloc", ENOMEM);
	fl__bench_check(fl_introspect_client_stats(&s0, sizeof(s0)), "fl_introspect_client_stats");
	for (long i = 0; i < n; i++) {
		uint64_t t0 = fl__bench_now_ns();

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			fl__bench_die("socketpair", errno);
		sp[i] = fl__bench_now_ns() - t0;
		close(sv[0]);
		close(sv[1]);

		t0 = fl__bench_now_ns();
		fl__bench_check(fl_fence_fd_create(c->tl, 1, "bench", &fd), "fl_fence_fd_create");
		fc[i] = fl__bench_now_ns() - t0;
		close(fd);
		if (i % 64 == 63)
			fl_daemon_flush();
	}
	fl_daemon_flush();
	fl__bench_check(fl_introspect_client_stats(&s1, sizeof(s1)), "fl_introspect_client_stats");
	fl__bench_lat_stats(fc, (size_t)n, &st);
	fl__bench_out("daemon_create_call_p50", st.p50, "ns");
	fl__bench_out("daemon_create_call_p99", st.p99, "ns");
	/*
	 * Not a time: creations that found the pool empty and waited for a
	 * fill (a blocking round trip), per 1000, with the daemon kept in step
	 * as a service's loop keeps it. (In the batches above the client
	 * outruns the daemon, and an empty pool waiting is back-pressure.)
	 */
	fl__bench_out("daemon_create_call_pool_waits_per_1000",
		      1000.0 * (double)(s1.pool_waits - s0.pool_waits) / (double)n, "waits");
	/* The pool's gate (docs/daemon.md): is it on, and its own pooled / round-trip estimate. */
	fl__bench_out("daemon_create_fdpool_pooled", (double)s1.pool_pooled, "bool");
	fl__bench_out("ratio_daemon_create_fdpool_gate_estimate",
		      s1.pool_bare_ns ? (double)s1.pool_pooled_ns / (double)s1.pool_bare_ns : 0,
		      "x");
	fl__bench_lat_stats(sp, (size_t)n, &st);
	fl__bench_out("daemon_baseline_socketpair_call_p50", st.p50, "ns");
	free(sp);
	free(fc);
}

/*
 * The fence-fd pool against what it saves (docs/daemon.md): the single
 * creation with no pool (FENCELINE_POOL_MAX=0: each fence waits for a fill
 * of one fd), beside daemon_create_call_p50. In a child, whose connection
 * is its own: this one's pool and the daemon stay as they are.
 */
static void create_call_no_pool_p50(long n)
{
	double p50 = 0;
	int pfd[2];
	pid_t pid;

	if (pipe(pfd) < 0)
		fl__bench_die("pipe", errno);
	pid = fork();
	if (pid < 0)
		fl__bench_die("fork", errno);
	if (pid == 0) {
		uint64_t *fc = calloc((size_t)n, sizeof(*fc));
		struct fl_bench_lat st;
		int tl, fd;

		setenv("FENCELINE_POOL_MAX", "0", 1);
		if (!fc || fl_timeline_fd_create("bench-no-pool", 0, &tl) < 0)
			_exit(1);
		for (long i = 0; i < n; i++) {
			uint64_t t0 = fl__bench_now_ns();

			if (fl_fence_fd_create(tl, 1, "bench", &fd) < 0)
				_exit(1);
			fc[i] = fl__bench_now_ns() - t0;
			close(fd);
		}
		fl__bench_lat_stats(fc, (size_t)n, &st);
		_exit(write(pfd[1], &st.p50, sizeof(st.p50)) == sizeof(st.p50) ? 0 : 1);
	}
	close(pfd[1]);
	if (read(pfd[0], &p50, sizeof(p50)) != sizeof(p50))
		fl__bench_die("no-pool child", EIO);
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	fl__bench_out("daemon_create_call_no_pool_p50", p50, "ns");
}

static void part_create(void)
{
	long ops = fl__bench_iters(20000, 1000), samples = fl__bench_iters(10000, 1000);
	struct create_ctx c;
	int fd;

	fl__bench_comment("daemon 1: fence creation, ns per op (batch: create + close, then one "
			  "fl_daemon_flush(); median of %d batches)",
			  FL_BENCH_REPS);
	fl__bench_check(fl_timeline_fd_create("bench-create", 0, &c.tl), "fl_timeline_fd_create");
	/* The first creation on a timeline waits for the daemon's answer;
	 * the rest take the one-way path measured here. */
	fl__bench_check(fl_fence_fd_create(c.tl, 1, "warm", &fd), "fl_fence_fd_create");
	close(fd);

	fl__bench_out("daemon_create_fence_fd", fl__bench_batch_median(b_create, &c, ops), "ns");
	fl__bench_out("daemon_baseline_socketpair_close",
		      fl__bench_batch_median(b_socketpair, NULL, ops), "ns");
	create_call_p50(&c, samples);
	fl__bench_ratio("ratio_daemon_create_over_socketpair", "daemon_create_fence_fd",
			"daemon_baseline_socketpair_close");
	fl__bench_ratio("ratio_daemon_create_call_over_socketpair_p50", "daemon_create_call_p50",
			"daemon_baseline_socketpair_call_p50");
	create_call_no_pool_p50(samples / 4);
	fl__bench_ratio("ratio_daemon_create_call_pooled_over_no_pool_p50",
			"daemon_create_call_p50", "daemon_create_call_no_pool_p50");
	target("ratio_daemon_create_over_socketpair", "<=", 3.0);
	close(c.tl);
}

/*
 * 1b: the status of the daemon's pipe fence fds (a process that owns no
 * timeline gets those), read from the daemon's status page (or the pipe)
 * without a daemon round trip, against a poll(0) on the same fd: a
 * signalled one, a pending one, and a signalled one whose records a holder
 * read out of the pipe (without the page, that one needs the daemon).
 */
static double b_status(void *arg, long ops)
{
	int fd = *(int *)arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		if (fl_fence_fd_get_status(fd) < 0)
			fl__bench_die("fl_fence_fd_get_status", -EIO);
	return fl__bench_per_op(t0, ops);
}

static double b_poll0(void *arg, long ops)
{
	struct pollfd p = { .fd = *(int *)arg, .events = POLLIN };
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		if (poll(&p, 1, 0) < 0)
			fl__bench_die("poll", errno);
	return fl__bench_per_op(t0, ops);
}

static void part_status(void)
{
	long ops = fl__bench_iters(200000, 10000);
	int tl, sv[2], fds[3] = { -1, -1, -1 }, ws;
	char drain[64];
	unsigned int nfds = 0;
	struct stat st;
	char byte;
	pid_t pid;

	fl__bench_comment("daemon 1b: fl_fence_fd_get_status() on the daemon's pipe fence fds, ns "
			  "per call, against poll(0) on the same fd (median of %d batches)",
			  FL_BENCH_REPS);
	fl__bench_check(fl_timeline_fd_create("bench-status", 0, &tl), "fl_timeline_fd_create");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		fl__bench_die("socketpair", errno);
	pid = fork();
	if (pid < 0)
		fl__bench_die("fork", errno);
	if (pid == 0) {
		/* A child's own connection, and no timeline of its own: pipe fence fds. */
		int f[3];

		if (fl_fence_fd_create(tl, 0, "signalled", &f[0]) < 0 ||
		    fl_fence_fd_create(tl, 1, "pending", &f[1]) < 0 ||
		    fl_fence_fd_create(tl, 0, "drained", &f[2]) < 0 ||
		    fl_send(sv[1], "f", 1, f, 3) < 0)
			_exit(1);
		_exit(0);
	}
	close(sv[1]);
	fl__bench_check(fl_recv(sv[0], &byte, 1, NULL, fds, 3, &nfds), "fl_recv");
	close(sv[0]);
	if (waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws) || nfds != 3)
		fl__bench_die("status child", -EIO);
	if (fstat(fds[0], &st) < 0 || !S_ISFIFO(st.st_mode))
		fl__bench_comment("the daemon made socket pairs (FENCELINE_FD_KIND=socket?)");
	/* A holder that drains what is readable takes the records out. */
	if (fl_fence_fd_wait(fds[2], 10000) < 0)
		fl__bench_die("wait for the drained fence", -EIO);
	while (read(fds[2], drain, sizeof(drain)) > 0)
		;
	if (fl_fence_fd_get_status(fds[0]) != FL_STATUS_SIGNALED ||
	    fl_fence_fd_get_status(fds[1]) != FL_STATUS_ACTIVE ||
	    fl_fence_fd_get_status(fds[2]) != FL_STATUS_SIGNALED)
		fl__bench_die("status of the pipe fences", -EIO);
	fl__bench_out("daemon_status_pipe_signalled",
		      fl__bench_batch_median(b_status, &fds[0], ops), "ns");
	fl__bench_out("daemon_poll0_pipe_signalled", fl__bench_batch_median(b_poll0, &fds[0], ops),
		      "ns");
	fl__bench_out("daemon_status_pipe_pending", fl__bench_batch_median(b_status, &fds[1], ops),
		      "ns");
	fl__bench_out("daemon_poll0_pipe_pending", fl__bench_batch_median(b_poll0, &fds[1], ops),
		      "ns");
	/* Fewer: without the page each of these is a daemon round trip. */
	fl__bench_out("daemon_status_pipe_drained",
		      fl__bench_batch_median(b_status, &fds[2], ops / 10), "ns");
	fl__bench_out("daemon_poll0_pipe_drained",
		      fl__bench_batch_median(b_poll0, &fds[2], ops / 10), "ns");
	fl__bench_ratio("ratio_daemon_status_signalled_over_poll0", "daemon_status_pipe_signalled",
			"daemon_poll0_pipe_signalled");
	fl__bench_ratio("ratio_daemon_status_pending_over_poll0", "daemon_status_pipe_pending",
			"daemon_poll0_pipe_pending");
	fl__bench_ratio("ratio_daemon_status_drained_over_poll0", "daemon_status_pipe_drained",
			"daemon_poll0_pipe_drained");
	target("ratio_daemon_status_signalled_over_poll0", "<=", 2.0);
	close(fds[0]);
	close(fds[1]);
	close(fds[2]);
	close(tl);
}

/* 2: merge and info against a bare round trip */

struct req_ctx {
	struct fl_bench_fd_pair p; /* first: fl__bench_fd_merge() */
	int merged;
	int echo; /* our end of the echo child's SOCK_SEQPACKET pair */
};

static double b_info1(void *arg, long ops)
{
	struct req_ctx *c = arg;
	struct fl_sync_pt_info pts[1];
	struct fl_fence_info info;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		fl__bench_check(fl_fence_fd_get_info(c->p.a, &info, pts, 1),
				"fl_fence_fd_get_info");
	return fl__bench_per_op(t0, ops);
}

static double b_info2(void *arg, long ops)
{
	struct req_ctx *c = arg;
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		fl__bench_check(fl_fence_fd_get_info(c->merged, &info, pts, 2),
				"fl_fence_fd_get_info");
	return fl__bench_per_op(t0, ops);
}

/* A request the size of a merge request, and its echo. */
static double b_roundtrip(void *arg, long ops)
{
	struct req_ctx *c = arg;
	char buf[64] = { 0 };
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		if (write(c->echo, buf, 48) != 48)
			fl__bench_die("echo write", errno);
		if (read(c->echo, buf, sizeof(buf)) != 48)
			fl__bench_die("echo read", errno ? errno : EIO);
	}
	return fl__bench_per_op(t0, ops);
}

static pid_t start_echo(int *ret_fd)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		fl__bench_die("socketpair", errno);
	pid = fork_or_die();
	if (pid == 0) {
		char buf[256];
		ssize_t n;

		close(sv[0]);
		while ((n = read(sv[1], buf, sizeof(buf))) > 0)
			if (write(sv[1], buf, (size_t)n) != n)
				_exit(1);
		_exit(n == 0 ? 0 : 1);
	}
	close(sv[1]);
	*ret_fd = sv[0];
	return pid;
}

/*
 * Issue 20: info across processes (from the daemon's status page) against
 * what it costs in-process (fl_fence_get_info() of the core's fence) plus
 * one poll(0), the least a reader across processes must pay to know the
 * fd's readiness.
 */
struct info_arg {
	struct fl_fence *f; /* in-process, or NULL */
	int fd; /* the daemon's fence fd */
	uint32_t n;
};

static double b_info_any(void *arg, long ops)
{
	const struct info_arg *a = arg;
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		if ((a->f ? fl_fence_get_info(a->f, &info, pts, a->n)
			  : fl_fence_fd_get_info(a->fd, &info, pts, a->n)) < 0)
			fl__bench_die("fence info", -EIO);
	return fl__bench_per_op(t0, ops);
}

static void info_vs_local(const struct req_ctx *c, long ops)
{
	struct fl_timeline *ltl[2];
	struct fl_fence *la, *lb, *lm;
	struct info_arg a = { NULL, c->p.a, 1 };
	int tl[2], f[2], done, fresh;

	fl__bench_check(fl_sw_sync_timeline_create("local-a", 0, &ltl[0]),
			"fl_sw_sync_timeline_create");
	fl__bench_check(fl_sw_sync_timeline_create("local-b", 0, &ltl[1]),
			"fl_sw_sync_timeline_create");
	fl__bench_check(fl_sw_sync_fence_create(ltl[0], 1, "a", &la), "fl_sw_sync_fence_create");
	fl__bench_check(fl_sw_sync_fence_create(ltl[1], 1, "b", &lb), "fl_sw_sync_fence_create");
	fl__bench_check(fl_fence_merge(la, lb, "ab", 0, &lm), "fl_fence_merge");
	/* A signalled merge across processes: what a compositor asks most. */
	fl__bench_check(fl_timeline_fd_create("bench-c", 0, &tl[0]), "fl_timeline_fd_create");
	fl__bench_check(fl_timeline_fd_create("bench-d", 0, &tl[1]), "fl_timeline_fd_create");
	fl__bench_check(fl_fence_fd_create(tl[0], 1, "c", &f[0]), "fl_fence_fd_create");
	fl__bench_check(fl_fence_fd_create(tl[1], 1, "d", &f[1]), "fl_fence_fd_create");
	fl__bench_check(fl_fence_fd_merge(f[0], f[1], "cd", 0, &done), "fl_fence_fd_merge");
	fl__bench_check(fl_timeline_fd_inc(tl[0], 1), "fl_timeline_fd_inc");
	fl__bench_check(fl_timeline_fd_inc(tl[1], 1), "fl_timeline_fd_inc");
	if (fl_fence_fd_wait(done, 10000) != 0)
		fl__bench_die("the signalled merge", -EIO);

	a.fd = done;
	a.n = 2;
	fl__bench_out("daemon_info_2pt_signalled", fl__bench_batch_median(b_info_any, &a, ops),
		      "ns");
	/*
	 * The page holds the records of the latest fences (128): the 50000
	 * merges above took daemon_info_1pt's fence's record, and that figure
	 * is a round trip again. A fence made now, as a compositor asks about
	 * this frame's fences, has its record.
	 */
	fl__bench_check(fl_fence_fd_create(tl[0], 2, "fresh", &fresh), "fl_fence_fd_create");
	a.fd = fresh;
	a.n = 1;
	fl__bench_out("daemon_info_1pt_fresh", fl__bench_batch_median(b_info_any, &a, ops), "ns");
	a.fd = done;
	a.f = la;
	a.n = 1;
	fl__bench_out("local_info_1pt", fl__bench_batch_median(b_info_any, &a, ops), "ns");
	a.f = lm;
	a.n = 2;
	fl__bench_out("local_info_2pt", fl__bench_batch_median(b_info_any, &a, ops), "ns");
	fl__bench_out("local_poll0_fence_fd", fl__bench_batch_median(b_poll0, (void *)&c->p.a, ops),
		      "ns");
	fl__bench_out("local_info_1pt_plus_poll0",
		      fl__bench_get("local_info_1pt") + fl__bench_get("local_poll0_fence_fd"),
		      "ns");
	fl__bench_out("local_info_2pt_plus_poll0",
		      fl__bench_get("local_info_2pt") + fl__bench_get("local_poll0_fence_fd"),
		      "ns");
	fl__bench_ratio("ratio_daemon_info_1pt_over_local_plus_poll0", "daemon_info_1pt",
			"local_info_1pt_plus_poll0");
	fl__bench_ratio("ratio_daemon_info_1pt_fresh_over_local_plus_poll0",
			"daemon_info_1pt_fresh", "local_info_1pt_plus_poll0");
	fl__bench_ratio("ratio_daemon_info_2pt_over_local_plus_poll0", "daemon_info_2pt",
			"local_info_2pt_plus_poll0");
	fl__bench_ratio("ratio_daemon_info_2pt_signalled_over_local_plus_poll0",
			"daemon_info_2pt_signalled", "local_info_2pt_plus_poll0");
	target("ratio_daemon_info_1pt_fresh_over_local_plus_poll0", "<=", 3.0);
	target("ratio_daemon_info_2pt_signalled_over_local_plus_poll0", "<=", 3.0);
	close(fresh);
	close(done);
	close(f[0]);
	close(f[1]);
	close(tl[0]);
	close(tl[1]);
	fl_fence_unref(lm);
	fl_fence_unref(la);
	fl_fence_unref(lb);
	fl_timeline_unref(ltl[0]);
	fl_timeline_unref(ltl[1]);
}

static void part_requests(void)
{
	long ops = fl__bench_iters(10000, 500);
	struct req_ctx c;
	int tl1, tl2;
	pid_t echo;

	fl__bench_comment("daemon 2: requests that wait for the daemon's answer, ns per op "
			  "(median of %d batches)",
			  FL_BENCH_REPS);
	fl__bench_check(fl_timeline_fd_create("bench-a", 0, &tl1), "fl_timeline_fd_create");
	fl__bench_check(fl_timeline_fd_create("bench-b", 0, &tl2), "fl_timeline_fd_create");
	fl__bench_check(fl_fence_fd_create(tl1, 1, "a", &c.p.a), "fl_fence_fd_create");
	fl__bench_check(fl_fence_fd_create(tl2, 1, "b", &c.p.b), "fl_fence_fd_create");
	fl__bench_check(fl_fence_fd_merge(c.p.a, c.p.b, "ab", 0, &c.merged), "fl_fence_fd_merge");
	{
		struct fl_fence_info info;
		struct fl_sync_pt_info pts[2];

		fl__bench_check(fl_fence_fd_get_info(c.merged, &info, pts, 2),
				"fl_fence_fd_get_info");
		if (info.num_points != 2)
			fl__bench_comment("warning: merged fence has %u points, expected 2",
					  info.num_points);
	}
	echo = start_echo(&c.echo);

	fl__bench_out("daemon_merge_2tl", fl__bench_batch_median(fl__bench_fd_merge, &c, ops),
		      "ns");
	fl__bench_out("daemon_info_1pt", fl__bench_batch_median(b_info1, &c, ops), "ns");
	fl__bench_out("daemon_info_2pt", fl__bench_batch_median(b_info2, &c, ops), "ns");
	fl__bench_out("baseline_seqpacket_roundtrip", fl__bench_batch_median(b_roundtrip, &c, ops),
		      "ns");
	fl__bench_ratio("ratio_daemon_merge_over_roundtrip", "daemon_merge_2tl",
			"baseline_seqpacket_roundtrip");
	fl__bench_ratio("ratio_daemon_info_1pt_over_roundtrip", "daemon_info_1pt",
			"baseline_seqpacket_roundtrip");
	fl__bench_ratio("ratio_daemon_info_2pt_over_roundtrip", "daemon_info_2pt",
			"baseline_seqpacket_roundtrip");
	info_vs_local(&c, ops);

	close(c.echo);
	reap(echo, "echo");
	close(c.merged);
	close(c.p.a);
	close(c.p.b);
	close(tl1);
	close(tl2);
}

/* 3: cross-process signal -> wake */

struct xwake_shm {
	_Atomic long ready, done;
	uint64_t t1[]; /* wake time of each sample, 0 if the wait failed */
};

static int send_fd(int sock, int fd)
{
	char data = 0, cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char data, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -EIO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* Process B: for each sample, get the fd to wait on (a fence fd over the
 * socket, or the inherited eventfd), say so, and block in poll(). */
static void xwake_waiter(struct xwake_shm *s, int sock, int efd, long n, int cpu)
{
	if (fl__bench_pin(cpu) < 0)
		_exit(1);
	for (long i = 0; i < n; i++) {
		struct pollfd pfd = { .events = POLLIN };
		uint64_t t, v;
		int ok;

		pfd.fd = efd >= 0 ? efd : recv_fd(sock);
		if (pfd.fd < 0)
			_exit(1);
		atomic_store(&s->ready, i + 1);
		ok = poll(&pfd, 1, WAKE_TIMEOUT_MS) == 1 && (pfd.revents & POLLIN);
		t = fl__bench_now_ns();
		if (efd >= 0 && read(efd, &v, sizeof(v)) != sizeof(v))
			ok = 0;
		if (efd < 0)
			close(pfd.fd);
		s->t1[i] = ok ? t : 0;
		atomic_store(&s->done, i + 1);
	}
	_exit(0);
}

static void spin_until(_Atomic long *v, long want)
{
	while (atomic_load(v) < want)
		sched_yield();
}

enum xwake_kind {
	XWAKE_EVENTFD,
	XWAKE_FENCE, /* A created the timeline: it owns it */
	XWAKE_FENCE_NONOWNER, /* A holds the timeline fd like any other process */
	/*
	 * Floors, without fenceline: the least any design that keeps the
	 * hostile-holder guarantees pays (docs/benchmarks.md, "Floors").
	 * An owner's step: check the timeline fd and the kept write end
	 * (either may be another file by now), write the records, close.
	 */
	XWAKE_PIPE_FLOOR,
	/* A non-owner's step: it holds no write end, so a second process
	 * (the one that does) must be woken first: two eventfd hops. */
	XWAKE_RELAY_FLOOR,
	/* The same through a socket, as to the daemon: A sends a request and
	 * waits for the answer; the relay sleeps in epoll_wait(), reads it,
	 * wakes B, answers. The floor of a design that asks a daemon. */
	XWAKE_SOCKET_RELAY_FLOOR,
};

/* The owner's step of XWAKE_PIPE_FLOOR: what fl_timeline_fd_inc() must do at least. */
static void pipe_floor_step(int tl, int end)
{
	uint64_t recs[4] = { 0 }; /* two 16-byte records, as the library writes */
	struct iovec iov = { .iov_base = recs, .iov_len = sizeof(recs) };
	struct statx stx;
	struct stat st;

	if (statx(tl, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_INO,
		  &stx) < 0 ||
	    fstat(end, &st) < 0)
		fl__bench_die("pipe floor: stat", errno);
	if (pwritev2(end, &iov, 1, -1, 0) != (ssize_t)sizeof(recs))
		fl__bench_die("pipe floor: write", errno);
	close(end);
}

/*
 * The relay floors' middle process: @n times, wakes on eventfd @in and
 * wakes eventfd @out; or with @sock >= 0, wakes in epoll_wait() on @sock,
 * reads a request, wakes @out and answers.
 */
static void relay(int in, int sock, int out, long n)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || (sock >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, sock, &ev) < 0))
		_exit(1);
	for (long i = 0; i < n; i++) {
		struct pollfd pfd = { .fd = in, .events = POLLIN };
		uint64_t v = 1, req[2];

		if (sock >= 0) {
			if (epoll_wait(ep, &ev, 1, WAKE_TIMEOUT_MS) != 1 ||
			    recv(sock, req, sizeof(req), MSG_DONTWAIT) != sizeof(req) ||
			    write(out, &v, sizeof(v)) != sizeof(v) ||
			    send(sock, req, sizeof(req), MSG_NOSIGNAL) != sizeof(req))
				_exit(1);
		} else if (poll(&pfd, 1, WAKE_TIMEOUT_MS) != 1 ||
			   read(in, &v, sizeof(v)) != sizeof(v) ||
			   write(out, &v, sizeof(v)) != sizeof(v))
			_exit(1);
	}
	_exit(0);
}

/* Returns -ENODEV if the placement needs CPUs the process lacks. */
static int xwake_case(enum xwake_kind k, int same_cpu, long samples)
{
	static const char *const kinds[] = { "eventfd",	   "fence",	  "fence_nonowner",
					     "pipe_floor", "relay_floor", "socket_relay_floor" };
	const char *kind = kinds[k], *where = same_cpu ? "same" : "cross";
	int fence = k == XWAKE_FENCE || k == XWAKE_FENCE_NONOWNER;
	int piped = fence || k == XWAKE_PIPE_FLOOR; /* a pipe's read end goes to B per sample */
	int sig_efd = -1, req[2] = { -1, -1 };
	pid_t relay_pid = -1;
	long warmup = samples / 20, n = samples + warmup, m = 0, bad = 0, awake = 0;
	size_t shm_size = sizeof(struct xwake_shm) + (size_t)n * sizeof(uint64_t);
	uint64_t *lat = calloc((size_t)samples, sizeof(*lat));
	struct xwake_shm *s;
	struct fl_bench_lat st;
	int sv[2], efd = -1, tl = -1, statfd, r;
	char path[64];
	pid_t pid;

	if (!lat)
		fl__bench_die("calloc", ENOMEM);
	if (!same_cpu && fl__bench_nr_cpus() < 2) {
		free(lat);
		return -ENODEV;
	}
	s = shared_alloc(shm_size);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		fl__bench_die("socketpair", errno);
	if (fence)
		fl__bench_check(fl_timeline_fd_create("bench-xwake", 0, &tl),
				"fl_timeline_fd_create");
	else if (k == XWAKE_PIPE_FLOOR) {
		int p[2];

		/* The timeline fd the step checks: any pipe end will do. */
		if (pipe2(p, O_CLOEXEC) < 0)
			fl__bench_die("pipe2", errno);
		tl = p[0];
		close(p[1]);
	} else if ((efd = eventfd(0, EFD_CLOEXEC)) < 0)
		fl__bench_die("eventfd", errno);
	sig_efd = efd;
	if (k == XWAKE_RELAY_FLOOR && (sig_efd = eventfd(0, EFD_CLOEXEC)) < 0)
		fl__bench_die("eventfd", errno);
	if (k == XWAKE_SOCKET_RELAY_FLOOR &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, req) < 0)
		fl__bench_die("socketpair", errno);
	if (k == XWAKE_RELAY_FLOOR || k == XWAKE_SOCKET_RELAY_FLOOR) {
		relay_pid = fork_or_die();
		if (relay_pid == 0)
			relay(sig_efd, req[1], efd, n);
		if (req[1] >= 0)
			close(req[1]);
	}
	/*
	 * Ownership goes with the connection that created the timeline: on a
	 * new one, A signals (and makes fences) through the daemon, as a
	 * process that received the timeline fd would.
	 */
	if (k == XWAKE_FENCE_NONOWNER)
		fl_daemon_disconnect();

	r = fl__bench_pin(0);
	if (r < 0)
		fl__bench_die("pin signaller", r);
	pid = fork_or_die();
	if (pid == 0) {
		close(sv[0]);
		if (tl >= 0)
			close(tl); /* A alone holds the timeline */
		xwake_waiter(s, sv[1], efd, n, same_cpu ? 0 : 1);
	}
	close(sv[1]);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	statfd = open(path, O_RDONLY | O_CLOEXEC);
	if (statfd < 0)
		fl__bench_die(path, errno);

	for (long i = 0; i < n; i++) {
		uint64_t one = 1, t0;
		int end = -1;

		/* Making and handing over the fence is set-up, outside the
		 * timed window; the flush leaves the daemon idle at t0. */
		if (fence) {
			int fd;

			fl__bench_check(fl_fence_fd_create(tl, (uint64_t)i + 1, "xwake", &fd),
					"fl_fence_fd_create");
			fl_daemon_flush();
			fl__bench_check(send_fd(sv[0], fd), "send fence fd");
			close(fd);
		} else if (piped) {
			int p[2];

			if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
				fl__bench_die("pipe2", errno);
			fl__bench_check(send_fd(sv[0], p[0]), "send pipe end");
			close(p[0]);
			end = p[1];
		}
		spin_until(&s->ready, i + 1);
		if (fl__bench_wait_asleep(statfd, 1000000000u) < 0)
			awake++;

		t0 = fl__bench_now_ns();
		if (fence)
			fl__bench_check(fl_timeline_fd_inc(tl, 1), "fl_timeline_fd_inc");
		else if (piped)
			pipe_floor_step(tl, end);
		else if (req[0] >= 0) {
			uint64_t msg[2] = { 1, (uint64_t)i };

			if (send(req[0], msg, sizeof(msg), MSG_NOSIGNAL) != sizeof(msg) ||
			    recv(req[0], msg, sizeof(msg), 0) != sizeof(msg))
				fl__bench_die("socket relay", EIO);
		} else if (write(sig_efd, &one, sizeof(one)) != sizeof(one))
			fl__bench_die("eventfd write", errno);
		spin_until(&s->done, i + 1);

		if (i >= warmup) {
			if (s->t1[i] == 0 || s->t1[i] < t0)
				bad++;
			else
				lat[m++] = s->t1[i] - t0;
		}
	}
	reap(pid, "wake waiter");
	if (relay_pid > 0)
		reap(relay_pid, "wake relay");
	fl__bench_unpin();
	close(statfd);
	close(sv[0]);
	if (tl >= 0)
		close(tl);
	if (efd >= 0)
		close(efd);
	if (sig_efd >= 0 && sig_efd != efd)
		close(sig_efd);
	if (req[0] >= 0)
		close(req[0]);
	munmap(s, shm_size);

	if (bad || awake)
		fl__bench_comment("warning: daemon_wake_%s_%s: %ld failed waits, %ld signals sent "
				  "before the waiter was seen asleep",
				  kind, where, bad, awake);
	fl__bench_lat_stats(lat, (size_t)m, &st);
	fl__bench_outf(st.min, "ns", "daemon_wake_%s_%s_min", kind, where);
	fl__bench_outf(st.p50, "ns", "daemon_wake_%s_%s_p50", kind, where);
	fl__bench_outf(st.p99, "ns", "daemon_wake_%s_%s_p99", kind, where);
	fl__bench_outf((double)m, "samples", "daemon_wake_%s_%s_samples", kind, where);
	free(lat);
	return 0;
}

static void part_wake(void)
{
	long samples = fl__bench_iters(5000, 500);

	fl__bench_comment("daemon 3: signal in process A -> poll() wakes in process B, ns per "
			  "sample; cross = A and B on different CPUs, same = one CPU (the daemon "
			  "is not pinned)");
	for (int same = 0; same <= 1; same++) {
		const char *where = same ? "same" : "cross";
		char name[96], num[64], den[64];

		if (xwake_case(XWAKE_FENCE, same, samples) == -ENODEV ||
		    xwake_case(XWAKE_EVENTFD, same, samples) == -ENODEV) {
			fl__bench_comment("skip: daemon wake %s needs 2 usable CPUs", where);
			continue;
		}
		for (int p = 0; p < 2; p++) {
			const char *stat = p ? "p99" : "p50";

			snprintf(name, sizeof(name), "ratio_daemon_wake_fence_over_eventfd_%s_%s",
				 where, stat);
			snprintf(num, sizeof(num), "daemon_wake_fence_%s_%s", where, stat);
			snprintf(den, sizeof(den), "daemon_wake_eventfd_%s_%s", where, stat);
			fl__bench_ratio(name, num, den);
		}
		snprintf(name, sizeof(name), "ratio_daemon_wake_fence_over_eventfd_%s_p50", where);
		target(name, "<=", 2.0);
		/* The owner's floor, same run: what no exact design here can beat. */
		if (xwake_case(XWAKE_PIPE_FLOOR, same, samples) == 0) {
			snprintf(name, sizeof(name), "ratio_floor_wake_owner_over_eventfd_%s_p50",
				 where);
			snprintf(num, sizeof(num), "daemon_wake_pipe_floor_%s_p50", where);
			snprintf(den, sizeof(den), "daemon_wake_eventfd_%s_p50", where);
			fl__bench_ratio(name, num, den);
		}
	}
	/*
	 * For comparison, no target: a signal from a process that does not own
	 * the timeline takes two hops (A -> daemon -> B), and so does its floor.
	 */
	if (xwake_case(XWAKE_FENCE_NONOWNER, 0, samples) == 0)
		fl__bench_ratio("ratio_daemon_wake_fence_nonowner_over_eventfd_cross_p50",
				"daemon_wake_fence_nonowner_cross_p50",
				"daemon_wake_eventfd_cross_p50");
	if (xwake_case(XWAKE_RELAY_FLOOR, 0, samples) == 0)
		fl__bench_ratio("ratio_floor_wake_nonowner_over_eventfd_cross_p50",
				"daemon_wake_relay_floor_cross_p50",
				"daemon_wake_eventfd_cross_p50");
	if (xwake_case(XWAKE_SOCKET_RELAY_FLOOR, 0, samples) == 0)
		fl__bench_ratio("ratio_floor_wake_nonowner_socket_over_eventfd_cross_p50",
				"daemon_wake_socket_relay_floor_cross_p50",
				"daemon_wake_eventfd_cross_p50");
}

/* 4: throughput with many clients */

/*
 * fd API calls per iteration of the mixed loop: create, inc, merge, info.
 * Not all are daemon requests: the create is a one-way message, the merge
 * and the info are round trips, and the owner's inc sends nothing (the
 * daemon sees its fence's pipe end close; reading the create after the inc,
 * it writes the owner a kick).
 */
#define TPUT_OPS_PER_ITER 4

struct tput_shm {
	uint64_t go_ns, run_ns;
	struct {
		long iters;
		uint64_t end_ns;
		uint64_t cpu_ns; /* the client process's CPU time (all its threads) in the loop */
	} child[];
};

/* A process's CPU time in ns, all threads (the daemon's closer thread too); 0 if unknown. */
static uint64_t proc_cpu_ns(int pid)
{
	char path[64];
	struct dirent *e;
	uint64_t sum = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		unsigned long long run = 0;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/schedstat", pid, e->d_name);
		f = fopen(path, "re");
		if (f && fscanf(f, "%llu", &run) == 1)
			sum += run;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

static uint64_t self_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What one run took besides its rate: ns of CPU per API call, the daemon's and the clients'. */
struct tput_cpu {
	double daemon_ns, clients_ns;
};

static void tput_client(struct tput_shm *s, int idx, int ready_w, int go_r)
{
	struct fl_fence_info info;
	struct fl_sync_pt_info pts[2];
	uint64_t deadline, v = 0;
	int tl, tl_held, held, f, m;
	long iters = 0;
	char c = 0;

	/* Connecting and the first (answered) creation on each timeline are
	 * set-up, done before the start. */
	child_check(fl_timeline_fd_create("tput", 0, &tl), "fl_timeline_fd_create");
	child_check(fl_timeline_fd_create("tput-held", 0, &tl_held), "fl_timeline_fd_create");
	child_check(fl_fence_fd_create(tl_held, 1, "held", &held), "fl_fence_fd_create");
	child_check(fl_fence_fd_create(tl, 1, "warm", &f), "fl_fence_fd_create");
	close(f);
	if (write(ready_w, &c, 1) != 1)
		_exit(1);
	close(ready_w);
	if (read(go_r, &c, 1) != 0) /* EOF: go */
		_exit(1);
	deadline = s->go_ns + s->run_ns;
	s->child[idx].cpu_ns = self_cpu_ns();
	do {
		child_check(fl_fence_fd_create(tl, v + 1, "t", &f), "fl_fence_fd_create");
		child_check(fl_timeline_fd_inc(tl, 1), "fl_timeline_fd_inc");
		v++;
		child_check(fl_fence_fd_merge(f, held, "m", 0, &m), "fl_fence_fd_merge");
		child_check(fl_fence_fd_get_info(m, &info, pts, 2), "fl_fence_fd_get_info");
		close(f);
		close(m);
		iters++;
	} while (fl__bench_now_ns() < deadline);
	s->child[idx].end_ns = fl__bench_now_ns();
	s->child[idx].cpu_ns = self_cpu_ns() - s->child[idx].cpu_ns;
	s->child[idx].iters = iters;
	_exit(0);
}

static double tput_run(int nclients, uint64_t run_ns, int daemon_pid, struct tput_cpu *cpu)
{
	size_t size = sizeof(struct tput_shm) +
		      (size_t)nclients * sizeof(((struct tput_shm *)0)->child[0]);
	struct tput_shm *s = shared_alloc(size);
	pid_t *pids = calloc((size_t)nclients, sizeof(*pids));
	int ready[2], go[2];
	uint64_t end = 0, daemon_cpu, clients_cpu = 0;
	long iters = 0;
	char c;

	if (!pids)
		fl__bench_die("calloc", ENOMEM);
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		fl__bench_die("pipe2", errno);
	s->run_ns = run_ns;
	for (int i = 0; i < nclients; i++) {
		pids[i] = fork_or_die();
		if (pids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			tput_client(s, i, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (int i = 0; i < nclients; i++)
		if (read(ready[0], &c, 1) != 1)
			fl__bench_die("a throughput client failed to start", EIO);
	/* The daemon's set-up work for the clients is done: they all answered. */
	daemon_cpu = proc_cpu_ns(daemon_pid);
	s->go_ns = fl__bench_now_ns();
	close(go[1]);
	for (int i = 0; i < nclients; i++)
		reap(pids[i], "throughput");
	/* Up to the last exit: hang-ups the daemon reads later are not counted. */
	daemon_cpu = daemon_cpu ? proc_cpu_ns(daemon_pid) - daemon_cpu : 0;
	for (int i = 0; i < nclients; i++) {
		iters += s->child[i].iters;
		clients_cpu += s->child[i].cpu_ns;
		if (s->child[i].end_ns > end)
			end = s->child[i].end_ns;
	}
	end -= s->go_ns;
	close(ready[0]);
	free(pids);
	munmap(s, size);
	/* Without /proc/<pid>/schedstat (CONFIG_SCHED_INFO), no CPU figures: -1. */
	cpu->daemon_ns = daemon_cpu ? (double)daemon_cpu / ((double)iters * TPUT_OPS_PER_ITER) : -1;
	cpu->clients_ns = (double)clients_cpu / ((double)iters * TPUT_OPS_PER_ITER);
	return (double)iters * TPUT_OPS_PER_ITER * 1e9 / (double)end;
}

/* What the CPUs allow (part 4), from the CPU figures of the runs. */
static void tput_cpu_bounds(void)
{
	/*
	 * The most the usable CPUs allow at the 32 clients' cost per call: when
	 * the measured rate is near it, the CPUs are full, and the clients'
	 * share of that cost (their cpu_per_op line) is not the daemon's.
	 */
	fl__bench_out("daemon_tput_32clients_cpu_bound",
		      fl__bench_nr_cpus() * 1e9 /
			      (fl__bench_get("daemon_tput_32clients_daemon_cpu_per_op") +
			       fl__bench_get("daemon_tput_32clients_clients_cpu_per_op")),
		      "ops/s");
	fl__bench_ratio("ratio_daemon_tput_32clients_over_cpu_bound", "daemon_tput_32clients",
			"daemon_tput_32clients_cpu_bound");
	fl__bench_ratio("ratio_daemon_tput_32clients_clients_over_daemon_cpu",
			"daemon_tput_32clients_clients_cpu_per_op",
			"daemon_tput_32clients_daemon_cpu_per_op");
	/*
	 * The most ratio_daemon_tput_32_over_1clients can be if a call costs
	 * as much CPU with 32 clients as with one: the usable CPUs over those
	 * one client keeps busy. One client is not idle between its round
	 * trips where a wake-up is fast, so this can be below the target.
	 */
	fl__bench_out("daemon_tput_32_over_1clients_ceiling",
		      fl__bench_nr_cpus() / fl__bench_get("daemon_tput_1clients_cpus_busy"), "x");
}

static void part_throughput(int daemon_pid)
{
	static const int counts[] = { 1, 8, 32 };
	uint64_t run_ns = (uint64_t)fl__bench_iters(1000, 200) * 1000000u;
	struct tput_cpu cpu;
	bool have_cpu = true;
	double busy;

	fl__bench_comment("daemon 4: fd API calls per second (create, inc, merge, info per "
			  "iteration, plus two closes; the daemon gets 3 messages, 2 of them "
			  "answered) from N client processes for %.1f s",
			  (double)run_ns / 1e9);
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		double rate = tput_run(counts[i], run_ns, daemon_pid, &cpu);

		fl__bench_outf(rate, "ops/s", "daemon_tput_%dclients", counts[i]);
		if (cpu.daemon_ns < 0) {
			have_cpu = false;
			continue;
		}
		/* What limits it: CPU per call, and how many CPUs the run kept busy. */
		fl__bench_outf(cpu.daemon_ns, "ns", "daemon_tput_%dclients_daemon_cpu_per_op",
			       counts[i]);
		fl__bench_outf(cpu.clients_ns, "ns", "daemon_tput_%dclients_clients_cpu_per_op",
			       counts[i]);
		busy = (cpu.daemon_ns + cpu.clients_ns) * rate / 1e9;
		fl__bench_outf(busy, "cpus", "daemon_tput_%dclients_cpus_busy", counts[i]);
	}
	if (have_cpu)
		tput_cpu_bounds();
	else
		fl__bench_comment("skip: daemon 4's CPU figures need /proc/<pid>/schedstat");
	fl__bench_out("baseline_seqpacket_roundtrip_rate",
		      1e9 / fl__bench_get("baseline_seqpacket_roundtrip"), "ops/s");
	fl__bench_ratio("ratio_daemon_tput_1client_over_roundtrip_rate", "daemon_tput_1clients",
			"baseline_seqpacket_roundtrip_rate");
	fl__bench_ratio("ratio_daemon_tput_8_over_1clients", "daemon_tput_8clients",
			"daemon_tput_1clients");
	fl__bench_ratio("ratio_daemon_tput_32_over_1clients", "daemon_tput_32clients",
			"daemon_tput_1clients");
	target("ratio_daemon_tput_32_over_1clients", ">=", 1.0);
}

/* 5: memory */

static long status_kib(int pid, const char *field)
{
	char path[64], line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		fl__bench_die(path, errno);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0 && line[len] == ':')
			v = strtol(line + len + 1, NULL, 10);
	fclose(f);
	if (v < 0)
		fl__bench_die("no VmRSS in /proc/<pid>/status", EINVAL);
	return v;
}

static long meminfo_kib(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0 && line[len] == ':')
			v = strtol(line + len + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Room for @want fds per process: the hard limit may rise up to
 * fs.nr_open with CAP_SYS_RESOURCE; otherwise the soft limit rises to the
 * hard one. Returns the soft limit now in force. */
static long raise_nofile(long want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur < (rlim_t)want) {
		struct rlimit more = { (rlim_t)want, (rlim_t)want };
		FILE *f = fopen("/proc/sys/fs/nr_open", "re");
		long nr_open = 0;

		if (f) {
			if (fscanf(f, "%ld", &nr_open) != 1)
				nr_open = 0;
			fclose(f);
		}
		if (nr_open > 0 && more.rlim_max > (rlim_t)nr_open)
			more.rlim_cur = more.rlim_max = (rlim_t)nr_open;
		if (more.rlim_max < rl.rlim_max)
			more.rlim_max = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &more) < 0) {
			more.rlim_cur = rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
			more.rlim_max = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &more);
		}
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	return rl.rlim_cur == RLIM_INFINITY ? want : (long)rl.rlim_cur;
}

/* The daemon holds an fd per live fence, so its own fd limit (which it
 * raises as far as it may) caps what this part can ask of it. */
static long daemon_nofile(int pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Max open files", 14) == 0)
			v = strtol(line + 14, NULL, 10);
	fclose(f);
	return v;
}

static void mem_holder(long count, int ready_w, int go_r)
{
	int tl, fd;
	char c = 0;

	child_check(fl_timeline_fd_create("mem", 0, &tl), "fl_timeline_fd_create");
	for (long i = 0; i < count; i++)
		child_check(fl_fence_fd_create(tl, 1, "m", &fd), "fl_fence_fd_create");
	/* Every fence made, and each still pending: no error came back. */
	fl_daemon_flush();
	if (fl_fence_fd_get_status(fd) != 0)
		child_check(-EIO, "last fence not pending");
	if (write(ready_w, &c, 1) != 1)
		_exit(1);
	close(ready_w);
	if (read(go_r, &c, 1) != 0)
		_exit(1);
	_exit(0);
}

static void part_memory(int daemon_pid)
{
	long want = fl__bench_iters(100000, 10000), count = want, per_child, room, slab0, slab1;
	long dlimit = daemon_nofile(daemon_pid), dfds0 = fl__bench_proc_fds(daemon_pid), dfds1;
	struct rlimit saved;
	int ready[2], go[2], nchildren;
	double rss0, rss1, delta;
	uint64_t t0, t1;
	long dfds2;
	pid_t *pids;
	char c;

	fl__bench_comment("daemon 5: the daemon's VmRSS before and after child processes make "
			  "and hold fences");
	if (getrlimit(RLIMIT_NOFILE, &saved) < 0)
		fl__bench_die("getrlimit", errno);
	room = raise_nofile(MEM_PER_CHILD_MAX + 256) - 256;
	per_child = room < MEM_PER_CHILD_MAX ? room : MEM_PER_CHILD_MAX;
	if (per_child < 1000) {
		fl__bench_comment("skip: daemon memory needs at least 1256 fds per process");
		setrlimit(RLIMIT_NOFILE, &saved);
		return;
	}
	/* Keep 1024 fds of headroom: a daemon out of fds would disconnect a
	 * client instead of failing its fence (see docs/benchmarks.md). */
	if (dlimit > 0 && dfds0 >= 0 && count > dlimit - dfds0 - 1024) {
		count = (dlimit - dfds0 - 1024) / 1000 * 1000;
		if (count < 1000) {
			fl__bench_comment("skip: daemon memory: the daemon can open only %ld fds",
					  dlimit);
			setrlimit(RLIMIT_NOFILE, &saved);
			return;
		}
		fl__bench_comment(
			"warning: the daemon may open only %ld fds (RLIMIT_NOFILE; "
			"raising it past the hard limit needs CAP_SYS_RESOURCE) and holds "
			"one per live fence: %ld fences instead of %ld; the ratio scales "
			"the delta to 100k",
			dlimit, count, want);
	}
	/* The daemon holds at most half of its fds for one process (--max-fds-per-process). */
	if (dlimit / 2 - 64 >= 1000 && per_child > dlimit / 2 - 64)
		per_child = (dlimit / 2 - 64) / 1000 * 1000;
	nchildren = (int)((count + per_child - 1) / per_child);
	fl__bench_comment("%ld live pending fences, held by %d child processes%s", count, nchildren,
			  fl__bench_quick ? " (quick run: 10k fences, not 100k; the ratio scales "
					    "the delta to 100k)"
					  : "");
	pids = calloc((size_t)nchildren, sizeof(*pids));
	if (!pids)
		fl__bench_die("calloc", ENOMEM);
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		fl__bench_die("pipe2", errno);

	rss0 = (double)status_kib(daemon_pid, "VmRSS") / 1024.0;
	slab0 = meminfo_kib("Slab");
	for (int i = 0; i < nchildren; i++) {
		long share = count / nchildren + (i < count % nchildren);

		pids[i] = fork_or_die();
		if (pids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			mem_holder(share, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (int i = 0; i < nchildren; i++)
		if (read(ready[0], &c, 1) != 1)
			fl__bench_die("a fence-holding child failed", EIO);
	rss1 = (double)status_kib(daemon_pid, "VmRSS") / 1024.0;
	slab1 = meminfo_kib("Slab");
	dfds1 = fl__bench_proc_fds(daemon_pid);
	close(go[1]);
	t0 = fl__bench_now_ns();
	for (int i = 0; i < nchildren; i++)
		reap(pids[i], "memory");
	/* The children's exit closed every fence fd; the daemon notices each
	 * hang-up and frees that fence. */
	while ((dfds2 = fl__bench_proc_fds(daemon_pid)) > dfds0 + 16 &&
	       fl__bench_now_ns() - t0 < 30000000000u)
		usleep(1000);
	t1 = fl__bench_now_ns();
	close(ready[0]);
	free(pids);
	setrlimit(RLIMIT_NOFILE, &saved);

	delta = rss1 - rss0;
	fl__bench_out("daemon_mem_fences", (double)count, "fences");
	fl__bench_out("daemon_rss_before", rss0, "MiB");
	fl__bench_out("daemon_rss_after", rss1, "MiB");
	fl__bench_out("daemon_rss_delta", delta, "MiB");
	fl__bench_out("daemon_rss_per_fence", delta * 1048576.0 / (double)count, "bytes");
	if (dfds0 >= 0 && dfds1 >= 0)
		fl__bench_out("daemon_fds_per_fence", (double)(dfds1 - dfds0) / (double)count,
			      "fds");
	/* The fences' pipes cost kernel memory, in no RSS: shown for scale. */
	if (slab0 > 0 && slab1 > 0)
		fl__bench_comment("kernel Slab grew by %.1f MiB system-wide (the fences' pipes, in "
				  "the kernel, not in any RSS)",
				  (double)(slab1 - slab0) / 1024.0);
	if (dfds2 > dfds0 + 16)
		fl__bench_comment("warning: 30 s after the holders exited the daemon still has %ld "
				  "fds open (%ld before)",
				  dfds2, dfds0);
	else
		fl__bench_out("daemon_release_per_fence", (double)(t1 - t0) / (double)count, "ns");
	fl__bench_out("daemon_rss_delta_per_100k", delta * 100000.0 / (double)count, "MiB");
	fl__bench_out("daemon_mem_target", MEM_TARGET_MIB, "MiB");
	fl__bench_ratio("ratio_daemon_rss_delta_over_target", "daemon_rss_delta_per_100k",
			"daemon_mem_target");
	target("ratio_daemon_rss_delta_over_target", "<=", 1.0);
}

/* 6: fairness: a bystander's round trip while others flood the daemon with DUMPs */

#define FLOOD_READERS	   2
#define FLOOD_IN_FLIGHT	   64
#define FAIR_TARGET_P99_NS 2000000.0

/* A raw connection to the bench's daemon, greeted. */
static int raw_connect_hello(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} hello = { { FL_OP_HELLO, 0, 1, sizeof(struct fl_msg_hello) },
		    { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
	unsigned char buf[FL_PROTO_MAX_REPLY];
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		fl__bench_die("socket", errno);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/fenceline.sock", sock_dir);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		fl__bench_die("connect", errno);
	if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello) ||
	    recv(fd, buf, sizeof(buf), 0) <= 0)
		fl__bench_die("HELLO", errno ? errno : EPROTO);
	return fd;
}

static void send_dump(int fd, uint32_t seq, int flags)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_dump b;
	} req = { { FL_OP_DUMP, 0, seq, sizeof(struct fl_msg_dump) }, { 0, 0 } };

	(void)!send(fd, &req, sizeof(req), MSG_NOSIGNAL | flags);
}

/* One reply, its fds closed. Returns 0 at EOF. */
static ssize_t recv_drop(int fd, int flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} cbuf;
	unsigned char buf[FL_PROTO_MAX_REPLY];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	msg.msg_control = cbuf.buf;
	msg.msg_controllen = sizeof(cbuf.buf);
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | flags);
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
		for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
			int x;

			memcpy(&x, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			close(x);
		}
	return n;
}

/* Keeps FLOOD_IN_FLIGHT DUMPs in flight until its parent goes (@stop readable). */
static void flood_reader(int stop)
{
	int fd = raw_connect_hello();
	uint32_t seq = 2;

	for (int i = 0; i < FLOOD_IN_FLIGHT; i++)
		send_dump(fd, seq++, 0);
	for (;;) {
		struct pollfd p = { stop, POLLIN, 0 };

		if (poll(&p, 1, 0) > 0)
			_exit(0);
		if (recv_drop(fd, 0) <= 0)
			_exit(1);
		send_dump(fd, seq++, 0);
	}
}

/*
 * Sends DUMPs and never reads a reply: the daemon drops it once its
 * socket is full of replies, and it connects again.
 */
static void flood_deaf(int stop)
{
	int fd = raw_connect_hello();
	uint32_t seq = 2;

	for (;;) {
		struct pollfd p[2] = { { stop, POLLIN, 0 }, { fd, POLLOUT, 0 } };
		char byte;

		/* The parent closed its end: POLLHUP on the pipe. */
		if (poll(p, 2, 100) < 0 || (p[0].revents & (POLLIN | POLLHUP)))
			_exit(0);
		if (p[1].revents & (POLLHUP | POLLERR) ||
		    recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
			close(fd);
			fd = raw_connect_hello();
		} else if (p[1].revents & POLLOUT) {
			send_dump(fd, seq++, MSG_DONTWAIT);
		}
	}
}

/* The p99 of @n PING round trips on @fd, in ns. */
static double ping_p99(int fd, long n)
{
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));
	struct fl_bench_lat st;

	if (!lat)
		fl__bench_die("calloc", ENOMEM);
	for (long i = 0; i < n; i++) {
		struct fl_msg_hdr h = { FL_OP_PING, 0, (uint32_t)i, 0 };
		uint64_t t0 = fl__bench_now_ns();

		if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h) ||
		    recv_drop(fd, 0) <= 0)
			fl__bench_die("PING", errno ? errno : EPROTO);
		lat[i] = fl__bench_now_ns() - t0;
		/* A bystander asks now and then, not back to back. */
		usleep(200);
	}
	fl__bench_lat_stats(lat, (size_t)n, &st);
	free(lat);
	return st.p99;
}

static void part_fairness(void)
{
	long n = fl__bench_iters(5000, 500);
	pid_t kids[FLOOD_READERS + 1];
	int stop[2], fd;

	fl__bench_comment("daemon 6: a bystander's PING round trip, p99 of %ld, quiet and while %d "
			  "clients keep %d DUMPs each in flight and one sends DUMPs without "
			  "reading the replies",
			  n, FLOOD_READERS, FLOOD_IN_FLIGHT);
	fd = raw_connect_hello();
	fl__bench_out("daemon_ping_p99_quiet", ping_p99(fd, n), "ns");
	if (pipe2(stop, O_CLOEXEC) < 0)
		fl__bench_die("pipe2", errno);
	for (int i = 0; i <= FLOOD_READERS; i++) {
		kids[i] = fork_or_die();
		if (kids[i] == 0) {
			close(stop[1]);
			if (i < FLOOD_READERS)
				flood_reader(stop[0]);
			flood_deaf(stop[0]);
		}
	}
	close(stop[0]);
	/* Let the flood build up. */
	usleep(100000);
	fl__bench_out("daemon_ping_p99_dump_flood", ping_p99(fd, n), "ns");
	close(stop[1]);
	for (int i = 0; i <= FLOOD_READERS; i++)
		reap(kids[i], "DUMP flood");
	close(fd);
	fl__bench_out("daemon_ping_p99_flood_target", FAIR_TARGET_P99_NS, "ns");
	fl__bench_ratio("ratio_daemon_ping_p99_dump_flood_over_quiet", "daemon_ping_p99_dump_flood",
			"daemon_ping_p99_quiet");
	fl__bench_ratio("ratio_daemon_ping_p99_dump_flood_over_target",
			"daemon_ping_p99_dump_flood", "daemon_ping_p99_flood_target");
	target("ratio_daemon_ping_p99_dump_flood_over_target", "<=", 1.0);
}

/*
 * The bystander's PING p99 on @fd (@n round trips) while a forked child
 * runs @flood (which never returns; it exits once @stop, its argument,
 * polls readable or hung up), as figure @name.
 */
static void ping_p99_under(int fd, long n, void (*flood)(int stop), const char *name)
{
	int stop[2];
	pid_t kid;

	if (pipe2(stop, O_CLOEXEC) < 0)
		fl__bench_die("pipe2", errno);
	kid = fork_or_die();
	if (kid == 0) {
		close(stop[1]);
		flood(stop[0]);
	}
	close(stop[0]);
	/* Let the flood build up. */
	usleep(100000);
	fl__bench_out(name, ping_p99(fd, n), "ns");
	close(stop[1]);
	reap(kid, name);
}

/*
 * 7: the same bystander while one client floods requests naming fds the
 * daemon does not know (an eventfd as a fence), with BOGUS_IDLE idle
 * connections open: such a request must cost the daemon a lookup, not a
 * read on every connection.
 */
#define BOGUS_IDLE 2000

static void flood_bogus_fd(int stop)
{
	int fd = raw_connect_hello(), e = eventfd(0, EFD_CLOEXEC);
	uint32_t seq = 2;

	if (e < 0)
		fl__bench_die("eventfd", errno);
	for (;;) {
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_fence_info b;
		} req = { { FL_OP_FENCE_INFO, 0, seq++, sizeof(struct fl_msg_fence_info) },
			  { 0, 1 } };
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int))];
		} cbuf;
		struct iovec iov = { &req, sizeof(req) };
		struct msghdr msg = { .msg_iov = &iov,
				      .msg_iovlen = 1,
				      .msg_control = cbuf.buf,
				      .msg_controllen = sizeof(cbuf.buf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		struct pollfd p = { stop, POLLIN, 0 };

		if (poll(&p, 1, 0) != 0)
			_exit(0);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &e, sizeof(int));
		if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0 || recv_drop(fd, 0) <= 0)
			_exit(1);
	}
}

static void part_bogus_fds(void)
{
	long n = fl__bench_iters(5000, 500), idle = BOGUS_IDLE;
	int *conns, fd;

	if (raise_nofile(idle + 64) < idle + 64) {
		fl__bench_comment("daemon 7: skipped (no room for %ld fds)", idle + 64);
		return;
	}
	conns = calloc((size_t)idle, sizeof(*conns));
	if (!conns)
		fl__bench_die("calloc", ENOMEM);
	for (long i = 0; i < idle; i++)
		conns[i] = raw_connect_hello();
	fl__bench_comment("daemon 7: a bystander's PING round trip, p99 of %ld, quiet and while "
			  "one client sends FENCE_INFO on an eventfd back to back, %ld idle "
			  "connections open",
			  n, idle);
	fd = raw_connect_hello();
	fl__bench_out("daemon_ping_p99_idle_conns", ping_p99(fd, n), "ns");
	ping_p99_under(fd, n, flood_bogus_fd, "daemon_ping_p99_bogus_fd_flood");
	close(fd);
	for (long i = 0; i < idle; i++)
		close(conns[i]);
	free(conns);
	fl__bench_ratio("ratio_daemon_ping_p99_bogus_fd_flood_over_quiet",
			"daemon_ping_p99_bogus_fd_flood", "daemon_ping_p99_idle_conns");
	fl__bench_ratio("ratio_daemon_ping_p99_bogus_fd_flood_over_target",
			"daemon_ping_p99_bogus_fd_flood", "daemon_ping_p99_flood_target");
	target("ratio_daemon_ping_p99_bogus_fd_flood_over_target", "<=", 1.0);
}

/*
 * 8: the same bystander while a process is blocked on a fence of its own
 * timeline (the detector must find out who else could signal it: a walk
 * of /proc) and one client asks for the deadlocks view back to back.
 */
static void blocked_waiter(void)
{
	int tl, f;

	fl__bench_check(fl_timeline_fd_create("bench-blocked", 0, &tl), "fl_timeline_fd_create");
	fl__bench_check(fl_fence_fd_create(tl, 1, "never", &f), "fl_fence_fd_create");
	/* Single-threaded and waiting: blocked, a cycle of one. */
	(void)fl_fence_fd_wait(f, -1);
	_exit(0);
}

static void flood_deadlocks(int stop)
{
	int fd = raw_connect_hello();
	uint32_t seq = 2;

	for (;;) {
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_dump b;
		} req = { { FL_OP_DUMP, 0, seq++, sizeof(struct fl_msg_dump) },
			  { FL_DUMP_DEADLOCKS, 0 } };
		struct pollfd p = { stop, POLLIN, 0 };

		if (poll(&p, 1, 0) != 0)
			_exit(0);
		if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) < 0 || recv_drop(fd, 0) <= 0)
			_exit(1);
	}
}

static void part_deadlocks_view(void)
{
	long n = fl__bench_iters(5000, 500);
	pid_t waiter;
	int fd;

	fl__bench_comment("daemon 8: a bystander's PING round trip, p99 of %ld, with a process "
			  "blocked on its own fence, quiet and while one client asks for the "
			  "deadlocks view back to back",
			  n);
	waiter = fork_or_die();
	if (waiter == 0)
		blocked_waiter();
	/* Past the detector's age threshold, so that it looks at the wait. */
	usleep(300000);
	fd = raw_connect_hello();
	fl__bench_out("daemon_ping_p99_blocked_quiet", ping_p99(fd, n), "ns");
	ping_p99_under(fd, n, flood_deadlocks, "daemon_ping_p99_deadlocks_flood");
	kill(waiter, SIGKILL);
	waitpid(waiter, NULL, 0);
	close(fd);
	fl__bench_ratio("ratio_daemon_ping_p99_deadlocks_flood_over_quiet",
			"daemon_ping_p99_deadlocks_flood", "daemon_ping_p99_blocked_quiet");
	fl__bench_ratio("ratio_daemon_ping_p99_deadlocks_flood_over_target",
			"daemon_ping_p99_deadlocks_flood", "daemon_ping_p99_flood_target");
	target("ratio_daemon_ping_p99_deadlocks_flood_over_target", "<=", 1.0);
}

/*
 * FL_BENCH_DAEMON_PARTS=wake,oneway runs only those parts of the section
 * (a developer's knob: the targets need the whole section).
 */
static bool want_part(const char *name)
{
	const char *list = getenv("FL_BENCH_DAEMON_PARTS");
	size_t n = strlen(name);

	if (!list || !*list)
		return true;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

void fl__bench_daemon(void)
{
	int pid;

	fl__bench_comment("section daemon: the fd API served by fencelined (daemon mode), "
			  "against socketpairs, a bare request/reply and an eventfd");
	pid = daemon_setup();
	fl__bench_comment("daemon pid %d, socket in %s", pid, sock_dir);
	/* Memory first, while the daemon's heap is fresh: later parts leave
	 * freed memory behind that new fences would reuse unseen. */
	if (want_part("memory"))
		part_memory(pid);
	if (want_part("create"))
		part_create();
	if (want_part("status"))
		part_status();
	if (want_part("requests"))
		part_requests();
	if (want_part("oneway"))
		fl__bench_daemon_oneway();
	if (want_part("wake"))
		part_wake();
	if (want_part("throughput"))
		part_throughput(pid);
	if (want_part("fairness"))
		part_fairness();
	if (want_part("bogus"))
		part_bogus_fds();
	if (want_part("deadlocks"))
		part_deadlocks_view();
	fl__bench_out("daemon_rss_end", (double)status_kib(pid, "VmRSS") / 1024.0, "MiB");
	fl__bench_outf((double)fl__bench_proc_fds(pid), "fds", "daemon_fds_end");
	daemon_cleanup();
}

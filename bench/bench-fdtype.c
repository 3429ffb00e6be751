/* SPDX-License-Identifier: MIT */
/*
 * Section "fdtype": the costs that decide what kind of kernel object a
 * fence fd is (issue 15 §1). Today's fd is one end of an AF_UNIX stream
 * socket pair, with a status record that holders peek at; the candidate is
 * a pipe's read end, whose write end the completer closes (end-of-file is
 * the readiness), with the status read from a shared page found by the
 * fd's inode. Each candidate's syscalls are measured bare, next to what
 * fenceline does today, in the same run.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "bench.h"

static void must(int r, const char *what)
{
	if (r < 0)
		fl__bench_die(what, errno);
}

static double b_socketpair(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();
	int sv[2];

	for (long i = 0; i < ops; i++) {
		must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), "socketpair");
		close(sv[0]);
		close(sv[1]);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_pipe2(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();
	int p[2];

	for (long i = 0; i < ops; i++) {
		must(pipe2(p, O_CLOEXEC), "pipe2");
		close(p[0]);
		close(p[1]);
	}
	return fl__bench_per_op(t0, ops);
}

/* What a pipe fence fd needs at birth: its inode (the key) and mode 0 (no reopen). */
static double b_pipe2_fstat_fchmod(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();
	struct stat st;
	int p[2];

	for (long i = 0; i < ops; i++) {
		must(pipe2(p, O_CLOEXEC), "pipe2");
		must(fstat(p[0], &st), "fstat");
		must(fchmod(p[0], 0), "fchmod");
		close(p[0]);
		close(p[1]);
	}
	return fl__bench_per_op(t0, ops);
}

/*
 * The whole syscall life of one fd of each kind, as the core would live it:
 * made, keyed by inode (and, a pipe, made unopenable), its kept end put in
 * the watcher's epoll set, the user's end closed, the hang-up reaped
 * (EPOLLHUP on a socket end, EPOLLERR on a pipe's write end; a wait, as
 * the report may come a moment after close() returns), the kept end
 * closed. The floor under a fence fd of that kind, without fenceline.
 */
static double lifecycle(int pipe_kind, long ops)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev;
	uint64_t t0;
	struct stat st;
	int p[2];

	must(ep, "epoll_create1");
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++) {
		/* p[0] is the user's end, p[1] the kept one. */
		if (pipe_kind) {
			must(pipe2(p, O_CLOEXEC), "pipe2");
			must(fchmod(p[0], 0), "fchmod");
		} else {
			must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), "socketpair");
		}
		must(fstat(p[0], &st), "fstat");
		ev = (struct epoll_event){ .events = EPOLLONESHOT, .data.fd = p[1] };
		must(epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev), "epoll_ctl");
		close(p[0]);
		/* Not always at once: the kernel may finish the close a moment later. */
		if (epoll_wait(ep, &ev, 1, 10000) != 1 || ev.data.fd != p[1])
			fl__bench_die("epoll_wait: no hang-up", EPROTO);
		close(p[1]);
	}
	t0 = fl__bench_now_ns() - t0;
	close(ep);
	return (double)t0 / (double)ops;
}

/*
 * The syscalls a pipe fence fd that is closed while pending costs the
 * core: made, made unopenable, keyed by inode, its read end put in the
 * registry epoll set (the one registration left, which the sweep of
 * completed fences needs), both ends closed, the kept end checked with an
 * fstat() before its close (a program may have put a file of its own at
 * that number). Its release is found by a poll() of up to 64 write ends at
 * once (not counted: amortized). The floor under fdtype_fence_fd.
 */
static double b_pipe_registered(void *arg, long ops)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev;
	uint64_t t0;
	struct stat st;
	int p[2];

	must(ep, "epoll_create1");
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++) {
		must(pipe2(p, O_CLOEXEC | O_NONBLOCK), "pipe2");
		must(fchmod(p[0], 0), "fchmod");
		must(fstat(p[0], &st), "fstat");
		ev = (struct epoll_event){ .events = EPOLLONESHOT, .data.fd = p[0] };
		must(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), "epoll_ctl");
		close(p[0]);
		must(fstat(p[1], &st), "fstat");
		close(p[1]);
	}
	t0 = fl__bench_now_ns() - t0;
	close(ep);
	return (double)t0 / (double)ops;
}

/*
 * A pipe fence's completion by whoever keeps its write end (an owner's
 * step, or the daemon): the end checked to be still its own (fstat()), the
 * success's two records written (POLLIN for the pollers), the end closed
 * (the sticky end-of-file). Pipes made and read ends closed in chunks,
 * outside the timed window. The floor, per fence, of any step that
 * completes pipe fences, beside the kernel's cost per fence of one INC
 * (docs/benchmarks.md, "Floors").
 */
#define COMPLETE_CHUNK 256
static double b_pipe_complete(void *arg, long ops)
{
	uint64_t recs[4] = { 0 }, ns = 0;
	struct iovec iov = { .iov_base = recs, .iov_len = sizeof(recs) };
	int rd[COMPLETE_CHUNK], wr[COMPLETE_CHUNK];

	(void)arg;
	for (long done = 0; done < ops; done += COMPLETE_CHUNK) {
		int n = ops - done < COMPLETE_CHUNK ? (int)(ops - done) : COMPLETE_CHUNK;
		uint64_t t0;

		for (int i = 0; i < n; i++) {
			int p[2];

			must(pipe2(p, O_CLOEXEC | O_NONBLOCK), "pipe2");
			rd[i] = p[0];
			wr[i] = p[1];
		}
		t0 = fl__bench_now_ns();
		for (int i = 0; i < n; i++) {
			struct stat st;

			must(fstat(wr[i], &st), "fstat");
			if (pwritev2(wr[i], &iov, 1, -1, 0) != (ssize_t)sizeof(recs))
				fl__bench_die("pwritev2", errno);
			close(wr[i]);
		}
		ns += fl__bench_now_ns() - t0;
		for (int i = 0; i < n; i++)
			close(rd[i]);
	}
	return (double)ns / (double)ops;
}

static double b_socket_lifecycle(void *arg, long ops)
{
	return lifecycle(0, ops);
}

static double b_pipe_lifecycle(void *arg, long ops)
{
	return lifecycle(1, ops);
}

/* Today: a pending in-process fence, its fd, the fd closed, the fence dropped. */
static double b_fence_fd(void *arg, long ops)
{
	struct fl_timeline *tl = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct fl_fence *f;
	int fd;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_sw_sync_fence_create(tl, 1, "bench", &f),
				"fl_sw_sync_fence_create");
		fl__bench_check(fl_fence_export_fd(f, &fd), "fl_fence_export_fd");
		close(fd);
		fl_fence_unref(f);
	}
	return fl__bench_per_op(t0, ops);
}

static double b_poll0(void *arg, long ops)
{
	struct pollfd p = { .fd = *(int *)arg, .events = POLLIN };
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		must(poll(&p, 1, 0), "poll");
	return fl__bench_per_op(t0, ops);
}

static double b_get_status(void *arg, long ops)
{
	int fd = *(int *)arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		if (fl_fence_fd_get_status(fd) != FL_STATUS_SIGNALED)
			fl__bench_die("fl_fence_fd_get_status", EPROTO);
	return fl__bench_per_op(t0, ops);
}

static double b_recv_peek(void *arg, long ops)
{
	int fd = *(int *)arg;
	uint64_t t0 = fl__bench_now_ns();
	char rec[16];

	for (long i = 0; i < ops; i++)
		if (recv(fd, rec, sizeof(rec), MSG_PEEK | MSG_DONTWAIT) != (ssize_t)sizeof(rec))
			fl__bench_die("recv", errno);
	return fl__bench_per_op(t0, ops);
}

/*
 * A status page found by inode: a table of (dev, ino) -> slot, as big as
 * the core's sink table is for a few thousand fds, and the slot's status
 * word. What a pipe fence fd's status read would cost beyond the syscall.
 */
#define PAGE_SLOTS 4096
struct slot_key {
	dev_t dev;
	ino_t ino;
	uint32_t slot;
};

struct status_table {
	struct slot_key keys[2 * PAGE_SLOTS];
	_Atomic int32_t status[PAGE_SLOTS];
	int fd;
};

static size_t key_bucket(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return (size_t)(h >> 17) & (2 * PAGE_SLOTS - 1);
}

static int lookup_status(struct status_table *t, const struct stat *st)
{
	for (size_t b = key_bucket(st->st_dev, st->st_ino);; b = (b + 1) & (2 * PAGE_SLOTS - 1)) {
		const struct slot_key *k = &t->keys[b];

		if (k->ino == st->st_ino && k->dev == st->st_dev)
			return atomic_load_explicit(&t->status[k->slot], memory_order_acquire);
		if (k->ino == 0)
			return -ENOENT;
	}
}

static double b_fstat_lookup(void *arg, long ops)
{
	struct status_table *t = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct stat st;

	for (long i = 0; i < ops; i++) {
		must(fstat(t->fd, &st), "fstat");
		if (lookup_status(t, &st) != 1)
			fl__bench_die("lookup", ENOENT);
	}
	return fl__bench_per_op(t0, ops);
}

/* The alternative read order: poll(0) first, the page only when it is ready. */
static double b_poll_fstat_lookup(void *arg, long ops)
{
	struct status_table *t = arg;
	struct pollfd p = { .fd = t->fd, .events = POLLIN };
	uint64_t t0 = fl__bench_now_ns();
	struct stat st;

	for (long i = 0; i < ops; i++) {
		must(poll(&p, 1, 0), "poll");
		must(fstat(t->fd, &st), "fstat");
		if (lookup_status(t, &st) != 1)
			fl__bench_die("lookup", ENOENT);
	}
	return fl__bench_per_op(t0, ops);
}

/* A table with @t->fd's inode among PAGE_SLOTS / 2 other (made-up) keys. */
static void fill_table(struct status_table *t)
{
	struct stat st;

	must(fstat(t->fd, &st), "fstat");
	for (uint32_t i = 0; i < PAGE_SLOTS / 2; i++) {
		ino_t ino = i == PAGE_SLOTS / 4 ? st.st_ino : st.st_ino + 1 + i * 7919u;
		size_t b = key_bucket(st.st_dev, ino);

		while (t->keys[b].ino)
			b = (b + 1) & (2 * PAGE_SLOTS - 1);
		t->keys[b] = (struct slot_key){ st.st_dev, ino, i };
		t->status[i] = i == PAGE_SLOTS / 4 ? 1 : 0;
	}
}

/* Wake latency: a poller blocked on a socket end vs a pipe's read end. */
struct wake_ctx {
	int pipe; /* 1: pipe, 0: socket */
	int fd; /* what the waiter polls, published by @posted */
	_Atomic long posted, ready, done;
	_Atomic int tid;
	long n;
	uint64_t *t1;
};

static void spin_until(_Atomic long *v, long want)
{
	while (atomic_load(v) < want)
		sched_yield();
}

static void *wake_waiter(void *arg)
{
	struct wake_ctx *c = arg;
	int r = fl__bench_pin(1);

	if (r < 0)
		fl__bench_die("pin waiter", r);
	atomic_store(&c->tid, (int)gettid());
	for (long i = 0; i < c->n; i++) {
		struct pollfd p = { .events = POLLIN };
		int ok;

		spin_until(&c->posted, i + 1);
		p.fd = c->fd;
		atomic_store(&c->ready, i + 1);
		ok = poll(&p, 1, 10000) == 1;
		c->t1[i] = ok ? fl__bench_now_ns() : 0;
		atomic_store(&c->done, i + 1);
	}
	return NULL;
}

static void wake_case(int pipe_kind, long samples)
{
	const char *kind = pipe_kind ? "pipe_close" : "socket_record";
	long warmup = samples / 20, n = samples + warmup, m = 0, bad = 0;
	struct wake_ctx c = { .pipe = pipe_kind, .n = n };
	uint64_t *lat = calloc((size_t)samples, sizeof(*lat));
	struct fl_bench_lat st;
	pthread_t th;
	int statfd, r;

	c.t1 = calloc((size_t)n, sizeof(*c.t1));
	if (!lat || !c.t1)
		fl__bench_die("calloc", ENOMEM);
	fl__bench_check(fl__bench_pin(0), "pin signaller");
	r = pthread_create(&th, NULL, wake_waiter, &c);
	if (r)
		fl__bench_die("pthread_create", r);
	while (atomic_load(&c.tid) == 0)
		sched_yield();
	statfd = fl__bench_open_task_stat(atomic_load(&c.tid));
	fl__bench_check(statfd, "open /proc/self/task/<tid>/stat");
	for (long i = 0; i < n; i++) {
		static const char rec[16] = "FLF1";
		int fds[2];
		uint64_t t0;

		if (pipe_kind)
			must(pipe2(fds, O_CLOEXEC), "pipe2");
		else
			must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), "socketpair");
		/* The waiter polls fds[0]; fds[1] is the completer's end. */
		c.fd = fds[0];
		atomic_store(&c.posted, i + 1);
		spin_until(&c.ready, i + 1);
		if (fl__bench_wait_asleep(statfd, 1000000000u) < 0)
			bad++;
		t0 = fl__bench_now_ns();
		if (pipe_kind) {
			close(fds[1]);
		} else {
			/* What the core does at completion today. */
			if (send(fds[1], rec, sizeof(rec), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
				fl__bench_die("send", errno);
			shutdown(fds[1], SHUT_WR);
		}
		spin_until(&c.done, i + 1);
		if (i >= warmup) {
			if (c.t1[i] == 0 || c.t1[i] < t0)
				bad++;
			else
				lat[m++] = c.t1[i] - t0;
		}
		close(fds[0]);
		if (!pipe_kind)
			close(fds[1]);
	}
	pthread_join(th, NULL);
	fl__bench_unpin();
	close(statfd);
	if (bad)
		fl__bench_comment("warning: fdtype_wake_%s: %ld bad samples", kind, bad);
	fl__bench_lat_stats(lat, (size_t)m, &st);
	fl__bench_outf(st.p50, "ns", "fdtype_wake_%s_p50", kind);
	fl__bench_outf(st.p99, "ns", "fdtype_wake_%s_p99", kind);
	free(lat);
	free(c.t1);
}

static void run(const char *name, fl_bench_batch_fn fn, void *arg, long ops)
{
	fl__bench_out(name, fl__bench_batch_median(fn, arg, ops), "ns");
}

void fl__bench_fdtype(void)
{
	long fds = fl__bench_iters(20000, 1000), cheap = fl__bench_iters(200000, 10000);
	static const struct {
		uint32_t magic;
		int32_t status;
		uint64_t ts;
	} rec = { 0x31464c46, 1, 0 };
	struct status_table *t = calloc(1, sizeof(*t));
	struct fl_timeline *tl;
	struct fl_fence *f;
	struct stat st;
	int fence_fd, sock[2], pipe_eof[2], pipe_active[2];

	if (!t)
		fl__bench_die("calloc", ENOMEM);
	fl__bench_comment("section fdtype: what a fence fd's kind costs, ns per operation");
	fl__bench_check(fl_sw_sync_timeline_create("bench-fdtype", 0, &tl),
			"fl_sw_sync_timeline_create");

	run("fdtype_socketpair_close", b_socketpair, NULL, fds);
	run("fdtype_pipe2_close", b_pipe2, NULL, fds);
	run("fdtype_pipe2_fstat_fchmod_close", b_pipe2_fstat_fchmod, NULL, fds);
	run("fdtype_socket_lifecycle", b_socket_lifecycle, NULL, fds);
	run("fdtype_pipe_lifecycle", b_pipe_lifecycle, NULL, fds);
	run("fdtype_pipe_registered_close", b_pipe_registered, NULL, fds);
	run("fdtype_fence_fd", b_fence_fd, tl, fds);
	run("fdtype_pipe_complete", b_pipe_complete, NULL, fds);

	/* A signalled in-process fence's fd, of the kind this library makes. */
	fl__bench_check(fl_sw_sync_fence_create(tl, 1, "signalled", &f), "fl_sw_sync_fence_create");
	fl__bench_check(fl_fence_export_fd(f, &fence_fd), "fl_fence_export_fd");
	fl__bench_check(fl_sw_sync_timeline_inc(tl, 1), "fl_sw_sync_timeline_inc");
	must(fstat(fence_fd, &st), "fstat");
	fl__bench_comment("this library's in-process fence fds are %s",
			  S_ISFIFO(st.st_mode) ? "pipes" : "socket pairs");
	/* A socket pair completed as socket fence fds are: a record, then a shutdown. */
	must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock), "socketpair");
	if (send(sock[0], &rec, sizeof(rec), MSG_NOSIGNAL) != (ssize_t)sizeof(rec))
		fl__bench_die("send", errno);
	shutdown(sock[0], SHUT_WR);
	must(pipe2(pipe_eof, O_CLOEXEC), "pipe2");
	close(pipe_eof[1]);
	must(pipe2(pipe_active, O_CLOEXEC), "pipe2");
	t->fd = pipe_eof[0];
	fill_table(t);

	run("fdtype_poll0_socket_signalled", b_poll0, &sock[1], cheap);
	run("fdtype_poll0_pipe_eof", b_poll0, &pipe_eof[0], cheap);
	run("fdtype_poll0_pipe_active", b_poll0, &pipe_active[0], cheap);
	run("fdtype_poll0_fence_fd", b_poll0, &fence_fd, cheap);
	run("fdtype_get_status", b_get_status, &fence_fd, cheap);
	run("fdtype_recv_peek", b_recv_peek, &sock[1], cheap);
	run("fdtype_fstat_page_lookup", b_fstat_lookup, t, cheap);
	run("fdtype_poll_fstat_page_lookup", b_poll_fstat_lookup, t, cheap);

	if (fl__bench_nr_cpus() >= 2) {
		long samples = fl__bench_iters(10000, 1000);

		wake_case(0, samples);
		wake_case(1, samples);
		fl__bench_ratio("ratio_fdtype_wake_pipe_over_socket_p50",
				"fdtype_wake_pipe_close_p50", "fdtype_wake_socket_record_p50");
		fl__bench_ratio("ratio_fdtype_wake_pipe_over_socket_p99",
				"fdtype_wake_pipe_close_p99", "fdtype_wake_socket_record_p99");
	} else {
		fl__bench_comment("skip: fdtype wake needs 2 usable CPUs");
	}

	fl__bench_ratio("ratio_fdtype_pipe_complete_over_getppid", "fdtype_pipe_complete",
			"baseline_getppid");
	fl__bench_ratio("ratio_fdtype_pipe2_over_socketpair", "fdtype_pipe2_close",
			"fdtype_socketpair_close");
	fl__bench_ratio("ratio_fdtype_pipe2_fstat_fchmod_over_pipe2",
			"fdtype_pipe2_fstat_fchmod_close", "fdtype_pipe2_close");
	fl__bench_ratio("ratio_fdtype_pipe_lifecycle_over_socket", "fdtype_pipe_lifecycle",
			"fdtype_socket_lifecycle");
	fl__bench_ratio("ratio_fdtype_pipe_lifecycle_over_pipe2", "fdtype_pipe_lifecycle",
			"fdtype_pipe2_close");
	fl__bench_ratio("ratio_fdtype_fence_fd_over_pipe2", "fdtype_fence_fd",
			"fdtype_pipe2_close");
	fl__bench_ratio("ratio_fdtype_pipe_registered_over_pipe2", "fdtype_pipe_registered_close",
			"fdtype_pipe2_close");
	fl__bench_ratio("ratio_fdtype_fence_fd_over_pipe_registered", "fdtype_fence_fd",
			"fdtype_pipe_registered_close");
	fl__bench_ratio("ratio_fdtype_fence_fd_over_socketpair", "fdtype_fence_fd",
			"fdtype_socketpair_close");
	fl__bench_ratio("ratio_fdtype_get_status_over_poll0", "fdtype_get_status",
			"fdtype_poll0_fence_fd");
	fl__bench_ratio("ratio_fdtype_recv_peek_over_poll0", "fdtype_recv_peek",
			"fdtype_poll0_socket_signalled");
	fl__bench_ratio("ratio_fdtype_fstat_page_lookup_over_poll0", "fdtype_fstat_page_lookup",
			"fdtype_poll0_pipe_eof");
	fl__bench_ratio("ratio_fdtype_poll_fstat_page_lookup_over_poll0",
			"fdtype_poll_fstat_page_lookup", "fdtype_poll0_pipe_eof");

	close(pipe_active[0]);
	close(pipe_active[1]);
	close(pipe_eof[0]);
	close(sock[0]);
	close(sock[1]);
	close(fence_fd);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
	free(t);
}

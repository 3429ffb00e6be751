/* SPDX-License-Identifier: MIT */
/*
 * Section "bufferqueue": one frame's trip through a buffer queue
 * (<fenceline/bufferqueue.h>) between two processes, dequeue -> queue ->
 * acquire -> release, next to what the transport alone costs: a
 * SOCK_SEQPACKET round trip to another process. A frame costs the producer
 * two round trips (DEQUEUE and QUEUE each wait for their reply), so the
 * ratio's floor is about 2. No fences: their cost is section fdtype's.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>

#include "bench.h"

static void reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		fl__bench_die("child", ECHILD);
}

/* The baseline: @ops round trips of a 16-byte packet to an echoing child. */
static double b_roundtrip(void *arg, long ops)
{
	char buf[16] = { 0 };
	uint64_t t0;
	int sv[2];
	pid_t pid;
	(void)arg;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		fl__bench_die("socketpair", errno);
	pid = fork();
	if (pid < 0)
		fl__bench_die("fork", errno);
	if (pid == 0) {
		close(sv[0]);
		while (recv(sv[1], buf, sizeof(buf), 0) == sizeof(buf))
			if (send(sv[1], buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
				_exit(1);
		_exit(0);
	}
	close(sv[1]);
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++)
		if (send(sv[0], buf, sizeof(buf), 0) != sizeof(buf) ||
		    recv(sv[0], buf, sizeof(buf), 0) != sizeof(buf))
			fl__bench_die("round trip", errno);
	t0 = fl__bench_now_ns() - t0;
	close(sv[0]);
	reap(pid);
	return (double)t0 / (double)ops;
}

static int produce(int fd, long frames)
{
	const struct fl_bufferqueue_request req = { 256, 256, FL_FOURCC('X', 'R', '2', '4'),
						    "gpu-render" };
	struct fl_bufferqueue_producer *p;

	if (fl_bufferqueue_producer_connect_fd(fd, &p) < 0)
		return 1;
	for (long i = 0; i < frames; i++) {
		struct fl_bufferqueue_dequeued d;

		if (fl_bufferqueue_producer_dequeue(p, &req, -1, &d) < 0)
			return 2;
		if (d.release_fence_fd >= 0)
			close(d.release_fence_fd);
		if (fl_bufferqueue_producer_queue(p, d.slot, -1, NULL, NULL) < 0)
			return 3;
	}
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

/* @ops frames through a queue of 2 slots in *@arg's mode; the time per frame after the first. */
static double b_queue(void *arg, long ops)
{
	struct fl_bufferqueue_config cf = { .name = "bench",
					    .num_slots = 2,
					    .mode = *(unsigned int *)arg };
	struct fl_bufferqueue_consumer *c;
	uint64_t t0 = 0, last = 0, got = 0;
	int fd, r;
	pid_t pid;

	if (ops < 2)
		ops = 2;
	r = fl_bufferqueue_consumer_create(&cf, &c);
	if (r < 0)
		fl__bench_die("fl_bufferqueue_consumer_create", -r);
	r = fl_bufferqueue_consumer_connect_fd(c, &fd);
	if (r < 0)
		fl__bench_die("fl_bufferqueue_consumer_connect_fd", -r);
	pid = fork();
	if (pid < 0)
		fl__bench_die("fork", errno);
	if (pid == 0)
		_exit(produce(fd, ops));
	close(fd);
	/* Mailbox may drop frames: count by frame number. */
	while (last < (uint64_t)ops) {
		struct fl_bufferqueue_acquired a;

		r = fl_bufferqueue_consumer_wait(c, -1);
		if (r < 0)
			fl__bench_die("fl_bufferqueue_consumer_wait", -r);
		if (fl_bufferqueue_consumer_acquire(c, 0, &a) < 0)
			continue;
		if (!t0)
			t0 = fl__bench_now_ns();
		got++;
		last = a.frame_number;
		fl_bufferqueue_consumer_release(c, a.slot, -1);
	}
	t0 = fl__bench_now_ns() - t0;
	reap(pid);
	fl_bufferqueue_consumer_destroy(c);
	(void)got;
	return (double)t0 / (double)(ops - 1);
}

void fl__bench_bufferqueue(void)
{
	unsigned int fifo = FL_BUFFERQUEUE_FIFO, mailbox = FL_BUFFERQUEUE_MAILBOX;
	long n = fl__bench_iters(20000, 500);

	fl__bench_comment("bufferqueue: one frame dequeue->queue->acquire->release across "
			  "processes vs a SEQPACKET round trip");
	fl__bench_out("bufferqueue_roundtrip_baseline",
		      fl__bench_batch_median(b_roundtrip, NULL, n), "ns");
	fl__bench_out("bufferqueue_fifo_frame", fl__bench_batch_median(b_queue, &fifo, n), "ns");
	fl__bench_out("bufferqueue_mailbox_frame", fl__bench_batch_median(b_queue, &mailbox, n),
		      "ns");
	fl__bench_ratio("ratio_bufferqueue_fifo_over_roundtrip", "bufferqueue_fifo_frame",
			"bufferqueue_roundtrip_baseline");
	fl__bench_ratio("ratio_bufferqueue_mailbox_over_roundtrip", "bufferqueue_mailbox_frame",
			"bufferqueue_roundtrip_baseline");
}

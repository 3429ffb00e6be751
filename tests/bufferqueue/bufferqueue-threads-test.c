/* SPDX-License-Identifier: MIT */
/*
 * Buffer queues with each side in a thread of its own (suite 'threaded', for
 * TSan): the library starts no threads, but a consumer and a producer are
 * separate objects that one program may run in two threads, and two queues
 * may run side by side. Fences go both ways on every frame, so the core's
 * signalling from one thread to a waiter in another is in the picture.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>
#include <fenceline/fenceline.h>

#include "runner.h"

#define FRAMES 200

struct pair {
	struct fl_bufferqueue_consumer *c;
	int producer_fd;
	int consumer_err, producer_err; /* 0, or the step that failed */
	uint64_t frames_seen;
};

static void *producer_main(void *arg)
{
	const struct fl_bufferqueue_request req = { 32, 32, FL_FOURCC('A', 'R', '2', '4'), "cpu" };
	struct pair *pr = arg;
	struct fl_bufferqueue_producer *p;
	int tl;

	if (fl_bufferqueue_producer_connect_fd(pr->producer_fd, &p) < 0) {
		pr->producer_err = 1;
		return NULL;
	}
	if (fl_timeline_fd_create("producer", 0, &tl) < 0) {
		pr->producer_err = 2;
		return NULL;
	}
	for (uint64_t i = 1; i <= FRAMES && !pr->producer_err; i++) {
		struct fl_bufferqueue_dequeued d;
		uint32_t *m;
		int fence;

		if (fl_bufferqueue_producer_dequeue(p, &req, -1, &d) < 0) {
			pr->producer_err = 3;
			break;
		}
		if (d.release_fence_fd >= 0) {
			if (fl_fence_fd_wait(d.release_fence_fd, -1) < 0)
				pr->producer_err = 4;
			close(d.release_fence_fd);
		}
		m = mmap(NULL, d.buffer->size, PROT_WRITE, MAP_SHARED, d.buffer->fd, 0);
		if (m == MAP_FAILED) {
			pr->producer_err = 5;
			break;
		}
		m[0] = (uint32_t)i;
		munmap(m, d.buffer->size);
		if (fl_fence_fd_create(tl, i, "written", &fence) < 0 ||
		    fl_bufferqueue_producer_queue(p, d.slot, fence, NULL, NULL) < 0)
			pr->producer_err = 6;
		close(fence);
		/* Signalled after the queue: the consumer may find it either way. */
		fl_timeline_fd_inc(tl, 1);
	}
	fl_timeline_fd_close(tl);
	fl_bufferqueue_producer_destroy(p);
	return NULL;
}

static void *consumer_main(void *arg)
{
	struct pair *pr = arg;
	int tl;

	if (fl_timeline_fd_create("display", 0, &tl) < 0) {
		pr->consumer_err = 1;
		return NULL;
	}
	for (uint64_t n = 1; pr->frames_seen < FRAMES && !pr->consumer_err; n++) {
		struct fl_bufferqueue_acquired a;
		uint32_t *m;
		int fence;

		if (fl_bufferqueue_consumer_wait(pr->c, -1) < 0 ||
		    fl_bufferqueue_consumer_acquire(pr->c, 0, &a) < 0) {
			pr->consumer_err = 2;
			break;
		}
		if (a.acquire_fence_fd < 0 || fl_fence_fd_wait(a.acquire_fence_fd, -1) < 0)
			pr->consumer_err = 3;
		close(a.acquire_fence_fd);
		m = mmap(NULL, a.buffer->size, PROT_READ, MAP_SHARED, a.buffer->fd, 0);
		if (m == MAP_FAILED || m[0] != a.frame_number || a.frame_number != n)
			pr->consumer_err = 4;
		if (m != MAP_FAILED)
			munmap(m, a.buffer->size);
		pr->frames_seen++;
		if (fl_fence_fd_create(tl, n, "scanned-out", &fence) < 0 ||
		    fl_bufferqueue_consumer_release(pr->c, a.slot, fence) < 0)
			pr->consumer_err = 5;
		close(fence);
		fl_timeline_fd_inc(tl, 1);
	}
	fl_timeline_fd_close(tl);
	return NULL;
}

FL_TEST(two_queues_with_each_side_in_its_own_thread)
{
	struct fl_bufferqueue_config cf = { .num_slots = 3, .mode = FL_BUFFERQUEUE_FIFO };
	struct pair pairs[2] = { { 0 } };
	pthread_t th[4];

	fl_mode_set(FL_MODE_IN_PROCESS);
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &pairs[i].c), 0);
		fl_assert_int_eq(
			fl_bufferqueue_consumer_connect_fd(pairs[i].c, &pairs[i].producer_fd), 0);
		fl_assert_int_eq(pthread_create(&th[2 * i], NULL, consumer_main, &pairs[i]), 0);
		fl_assert_int_eq(pthread_create(&th[2 * i + 1], NULL, producer_main, &pairs[i]), 0);
	}
	/*
	 * Consumers first: a consumer that stopped early is destroyed, so that
	 * its producer's dequeue fails with -EPIPE instead of waiting forever.
	 */
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(pthread_join(th[2 * i], NULL), 0);
		fl_bufferqueue_consumer_destroy(pairs[i].c);
	}
	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_join(th[2 * i + 1], NULL), 0);
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(pairs[i].consumer_err, 0);
		fl_assert_int_eq(pairs[i].producer_err, 0);
		fl_assert_int_eq(pairs[i].frames_seen, FRAMES);
	}
}

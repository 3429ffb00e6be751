/* SPDX-License-Identifier: MIT */
/*
 * Buffer queues across processes (<fenceline/bufferqueue.h>,
 * docs/bufferqueue.md): the consumer lives in the test process, each
 * producer in a forked child that reports through its exit status (0, or
 * the number of the step that failed) and talks to the test over a control
 * socket, one byte per step, so that nothing depends on timing. The hostile
 * peers are raw sockets that build packets from src/proto's layouts.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>
#include <fenceline/fenceline.h>

#include "bufferqueue.h" /* src/proto's: the hostile peers' packets */
#include "runner.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define NV12 FL_FOURCC('N', 'V', '1', '2')

/* In a child: fail with step @code unless @cond. */
#define CHECK(cond, code)            \
	do {                         \
		if (!(cond))         \
			return code; \
	} while (0)

struct peer {
	pid_t pid;
	int ctl; /* the test's end of the control socket */
};

static char sock_path[108];
/*
 * The test's consumer, also seen by the forked producers, whose copy of
 * the test's heap would otherwise hold it unreachable (a leak to valgrind).
 */
static struct fl_bufferqueue_consumer *volatile inherited;

static const char *queue_path(void)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");

	snprintf(sock_path, sizeof(sock_path), "%s/bq-test.sock", dir ? dir : "/tmp");
	return sock_path;
}

static struct fl_bufferqueue_consumer *consumer_new(unsigned int slots, unsigned int mode,
						    unsigned int flags)
{
	struct fl_bufferqueue_config cf = {
		.name = "test",
		.path = queue_path(),
		.num_slots = slots,
		.mode = mode,
		.flags = flags,
	};
	struct fl_bufferqueue_consumer *c = NULL;

	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), 0);
	inherited = c;
	return c;
}

static void ctl_send(int ctl, char step)
{
	ssize_t n;

	do
		n = write(ctl, &step, 1);
	while (n < 0 && errno == EINTR);
}

/* The next byte from the peer, or -1 at end of file. */
static int ctl_recv(int ctl)
{
	char b;
	ssize_t n;

	do
		n = read(ctl, &b, 1);
	while (n < 0 && errno == EINTR);
	return n == 1 ? b : -1;
}

static struct peer start_producer(int (*fn)(int ctl, void *arg), void *arg)
{
	struct peer p;
	int sv[2];

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	p.pid = fork();
	fl_assert(p.pid >= 0);
	if (p.pid == 0) {
		close(sv[0]);
		fl_mode_set(FL_MODE_IN_PROCESS);
		_exit(fn(sv[1], arg));
	}
	close(sv[1]);
	p.ctl = sv[0];
	return p;
}

static int finish(struct peer *p)
{
	int st;

	fl_assert_int_eq(waitpid(p->pid, &st, 0), p->pid);
	close(p->ctl);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Serves the queue until the peer sends a control byte (returned) or closes
 * its end (-1); *@events collects the dispatches' events.
 */
static int serve(struct fl_bufferqueue_consumer *c, struct peer *p, unsigned int *events)
{
	for (;;) {
		struct pollfd pfd[2] = { { .fd = fl_bufferqueue_consumer_get_fd(c),
					   .events = POLLIN },
					 { .fd = p->ctl, .events = POLLIN } };
		unsigned int ev = 0;

		fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &ev), 0);
		if (events)
			*events |= ev;
		if (poll(pfd, 2, -1) < 0)
			continue;
		if (pfd[1].revents) {
			fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &ev), 0);
			if (events)
				*events |= ev;
			return ctl_recv(p->ctl);
		}
	}
}

static int connect_retry(struct fl_bufferqueue_producer **ret)
{
	return fl_bufferqueue_producer_connect(sock_path, ret);
}

static uint32_t *map_buffer(const struct fl_bufferqueue_buffer *b, int prot)
{
	void *m = mmap(NULL, b->size, prot, MAP_SHARED, b->fd, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* Writes @value at the start of the slot's buffer. */
static int write_frame(const struct fl_bufferqueue_buffer *b, uint32_t value)
{
	uint32_t *m = map_buffer(b, PROT_READ | PROT_WRITE);

	if (!m)
		return -1;
	m[0] = value;
	munmap(m, b->size);
	return 0;
}

static uint32_t read_frame(const struct fl_bufferqueue_buffer *b)
{
	uint32_t *m = map_buffer(b, PROT_READ), v;

	fl_assert(m != NULL);
	v = m[0];
	munmap(m, b->size);
	return v;
}

static const struct fl_bufferqueue_request rgb64 = { 64, 64, XR24, "gpu-render" };

/* ---- frames in order, timestamps, damage ---- */

static int produce_three(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	for (uint32_t i = 1; i <= 3; i++) {
		struct fl_bufferqueue_dequeued d;
		struct fl_bufferqueue_rect r = { (int32_t)i, 2, 10, 20 };
		struct fl_bufferqueue_queue_info info = { 1000u * i, 1, &r };
		uint64_t frame = 0;

		CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 3);
		CHECK(d.release_fence_fd == -1, 4);
		CHECK(d.buffer->width == 64 && d.buffer->pitches[0] == 256, 5);
		CHECK(write_frame(d.buffer, 100 + i) == 0, 6);
		CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, &info, &frame) == 0, 7);
		CHECK(frame == i, 8);
	}
	ctl_send(ctl, 'q');
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

static void check_fifo(unsigned int mode)
{
	struct fl_bufferqueue_consumer *c = consumer_new(3, mode, 0);
	struct peer p = start_producer(produce_three, NULL);
	struct fl_bufferqueue_acquired a;
	uint64_t last_queue = 0;
	unsigned int ev = 0;

	fl_assert_int_eq(serve(c, &p, &ev), 'q');
	fl_assert(ev & FL_BUFFERQUEUE_EVENT_CONNECTED);
	fl_assert(ev & FL_BUFFERQUEUE_EVENT_FRAME_AVAILABLE);
	for (uint32_t i = mode == FL_BUFFERQUEUE_MAILBOX ? 3 : 1; i <= 3; i++) {
		fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), 0);
		fl_assert_int_eq(a.frame_number, i);
		fl_assert_int_eq(a.desired_present_ns, 1000u * i);
		fl_assert_int_eq(a.acquire_fence_fd, -1);
		fl_assert_int_eq(a.num_damage, 1);
		fl_assert_int_eq(a.damage[0].x, i);
		fl_assert_int_eq(a.damage[0].height, 20);
		fl_assert(a.queue_time_ns >= last_queue && a.queue_time_ns > 0);
		last_queue = a.queue_time_ns;
		/* Mailbox: the first two went back unacquired when the next came. */
		fl_assert_int_eq(a.dropped, mode == FL_BUFFERQUEUE_MAILBOX ? 2 : 0);
		fl_assert_int_eq(read_frame(a.buffer), 100 + i);
		fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
	}
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), -EAGAIN);
	fl_assert_int_eq(finish(&p), 0);
	fl_bufferqueue_consumer_destroy(c);
}

FL_TEST(fifo_acquires_every_frame_in_order_with_its_timestamps_and_damage)
{
	check_fifo(FL_BUFFERQUEUE_FIFO);
}

FL_TEST(mailbox_acquires_the_newest_and_gives_older_ones_back)
{
	check_fifo(FL_BUFFERQUEUE_MAILBOX);
}

/* ---- acquire by expected present time ---- */

static const uint64_t desired[] = { 100, 200, 300, 10000000000ull };

static int produce_timed(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	for (unsigned int i = 0; i < 4; i++) {
		struct fl_bufferqueue_dequeued d;
		struct fl_bufferqueue_queue_info info = { desired[i], 0, NULL };

		CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 3);
		CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, &info, NULL) == 0, 4);
	}
	ctl_send(ctl, 'q');
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(acquire_holds_early_frames_and_skips_superseded_ones)
{
	struct fl_bufferqueue_consumer *c = consumer_new(4, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p = start_producer(produce_timed, NULL);
	struct fl_bufferqueue_acquired a;

	fl_assert_int_eq(serve(c, &p, NULL), 'q');
	/* Frame 1 is due at 100: not at 50. */
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 50, &a), -EAGAIN);
	/* At 250, frame 2 is due too: frame 1 would never be seen. */
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 250, &a), 0);
	fl_assert_int_eq(a.frame_number, 2);
	fl_assert_int_eq(a.dropped, 1);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 250, &a), -EAGAIN);
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 300, &a), 0);
	fl_assert_int_eq(a.frame_number, 3);
	fl_assert_int_eq(a.dropped, 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
	/* Ten seconds ahead is taken for a mistake: shown now. */
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 300, &a), 0);
	fl_assert_int_eq(a.frame_number, 4);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), -EAGAIN);
	fl_assert_int_eq(finish(&p), 0);
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- fences gate both ways ---- */

static int produce_fenced(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	struct fl_bufferqueue_dequeued d;
	int tl, fence;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	CHECK(fl_timeline_fd_create("producer", 0, &tl) == 0, 3);
	CHECK(fl_fence_fd_create(tl, 1, "written", &fence) == 0, 4);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 5);
	CHECK(fl_bufferqueue_producer_queue(p, d.slot, fence, NULL, NULL) == 0, 6);
	close(fence);
	ctl_send(ctl, 'q');
	/* The consumer saw our fence pending: complete the write. */
	CHECK(ctl_recv(ctl) == 's', 7);
	CHECK(fl_timeline_fd_inc(tl, 1) == 0, 8);
	/* One slot: this dequeue waits for the consumer's release. */
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 9);
	CHECK(d.release_fence_fd >= 0, 10);
	CHECK(fl_fence_fd_get_status(d.release_fence_fd) == FL_STATUS_ACTIVE, 11);
	ctl_send(ctl, 'w');
	CHECK(fl_fence_fd_wait(d.release_fence_fd, -1) == 0, 12);
	close(d.release_fence_fd);
	fl_timeline_fd_close(tl);
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(fences_gate_the_consumer_and_the_producer)
{
	struct fl_bufferqueue_consumer *c = consumer_new(1, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p;
	struct fl_bufferqueue_acquired a;
	int tl, fence;

	fl_mode_set(FL_MODE_IN_PROCESS);
	p = start_producer(produce_fenced, NULL);
	fl_assert_int_eq(serve(c, &p, NULL), 'q');
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), 0);
	fl_assert(a.acquire_fence_fd >= 0);
	fl_assert_int_eq(fl_fence_fd_get_status(a.acquire_fence_fd), FL_STATUS_ACTIVE);
	ctl_send(p.ctl, 's');
	fl_assert_int_eq(fl_fence_fd_wait(a.acquire_fence_fd, -1), 0);
	close(a.acquire_fence_fd);

	fl_assert_int_eq(fl_timeline_fd_create("display", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "scanned-out", &fence), 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, fence), 0);
	close(fence);
	/* The producer holds the release fence and found it pending. */
	fl_assert_int_eq(serve(c, &p, NULL), 'w');
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(serve(c, &p, NULL), -1);
	fl_assert_int_eq(finish(&p), 0);
	fl_timeline_fd_close(tl);
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- the buffer cache ---- */

static int produce_cached(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	int fds_after_two = -1, fd_of[2] = { -1, -1 }, news = 0;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	for (int i = 0; i < 12; i++) {
		struct fl_bufferqueue_dequeued d;

		CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 3);
		CHECK(d.slot < 2, 4);
		if (d.flags & FL_BUFFERQUEUE_BUFFER_NEW) {
			news++;
			fd_of[d.slot] = d.buffer->fd;
		}
		CHECK(d.buffer->fd == fd_of[d.slot], 5);
		CHECK(!(d.flags & FL_BUFFERQUEUE_BUFFER_REALLOCATED), 6);
		if (d.release_fence_fd >= 0)
			close(d.release_fence_fd);
		if (i == 1)
			fds_after_two = fl_test_count_fds();
		/* No fd arrives once each slot's buffer has. */
		CHECK(i < 1 || fl_test_count_fds() == fds_after_two, 7);
		CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, NULL, NULL) == 0, 8);
	}
	CHECK(news == 2, 9);
	ctl_send(ctl, 'd');
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(each_slot_passes_its_buffer_once)
{
	struct fl_bufferqueue_consumer *c = consumer_new(2, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p = start_producer(produce_cached, NULL);
	int r;

	int held = -1;

	/* Keep the newest frame "on screen", as a display does: the producer must use both slots. */
	for (;;) {
		struct pollfd pfd[2] = { { .fd = fl_bufferqueue_consumer_get_fd(c),
					   .events = POLLIN },
					 { .fd = p.ctl, .events = POLLIN } };
		struct fl_bufferqueue_acquired a;

		fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, NULL), 0);
		while (fl_bufferqueue_consumer_acquire(c, 0, &a) == 0) {
			if (held >= 0)
				fl_assert_int_eq(
					fl_bufferqueue_consumer_release(c, (unsigned int)held, -1),
					0);
			held = (int)a.slot;
		}
		poll(pfd, 2, -1);
		if (pfd[1].revents)
			break;
	}
	r = ctl_recv(p.ctl);
	fl_assert_int_eq(finish(&p), 0);
	fl_assert_int_eq(r, 'd');
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- reallocation ---- */

static const struct fl_bufferqueue_request changes[] = {
	{ 64, 64, XR24, "gpu-render" }, /* first: new */
	{ 64, 64, XR24, "gpu-render" }, /* same: cached */
	{ 128, 64, XR24, "gpu-render" }, /* size */
	{ 128, 64, NV12, "gpu-render" }, /* format */
	{ 128, 64, NV12, "camera" }, /* usage */
};

static int produce_changes(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	for (unsigned int i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		struct fl_bufferqueue_dequeued d;
		unsigned int want =
			i == 0	 ? FL_BUFFERQUEUE_BUFFER_NEW
			: i == 1 ? 0
				 : FL_BUFFERQUEUE_BUFFER_NEW | FL_BUFFERQUEUE_BUFFER_REALLOCATED;

		CHECK(fl_bufferqueue_producer_dequeue(p, &changes[i], -1, &d) == 0, 10 + (int)i);
		CHECK(d.flags == want, 20 + (int)i);
		CHECK(d.buffer->width == changes[i].width && d.buffer->format == changes[i].format,
		      30 + (int)i);
		CHECK(d.buffer->num_planes == (changes[i].format == NV12 ? 2u : 1u), 40 + (int)i);
		if (d.release_fence_fd >= 0)
			close(d.release_fence_fd);
		CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, NULL, NULL) == 0, 50 + (int)i);
		ctl_send(ctl, 'q');
		CHECK(ctl_recv(ctl) == 'r', 60 + (int)i);
	}
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(a_size_format_or_usage_change_reallocates_the_slot)
{
	struct fl_bufferqueue_consumer *c = consumer_new(1, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p = start_producer(produce_changes, NULL);
	int fds_first = -1;

	for (unsigned int i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		struct fl_bufferqueue_acquired a;

		fl_assert_int_eq(serve(c, &p, NULL), 'q');
		fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), 0);
		fl_assert_int_eq(a.buffer->width, changes[i].width);
		fl_assert_int_eq(a.buffer->format, changes[i].format);
		fl_assert_int_eq(a.buffer->pitches[0],
				 changes[i].width * (changes[i].format == NV12 ? 1 : 4));
		if (changes[i].format == NV12)
			fl_assert_int_eq(a.buffer->offsets[1], 128 * 64);
		/* The old buffer is freed: the consumer holds one per slot. */
		if (i == 0)
			fds_first = fl_test_count_fds();
		fl_assert_int_eq(fl_test_count_fds(), fds_first);
		fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
		ctl_send(p.ctl, 'r');
	}
	fl_assert_int_eq(serve(c, &p, NULL), -1);
	fl_assert_int_eq(finish(&p), 0);
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- usage: the producer's and the consumer's ---- */

/* A carveout too small for a 2 MiB buffer is the only heap that scans out. */
static const char small_table[] = "[heap sys]\nkind = system\n"
				  "[heap co]\nkind = carveout\nsize = 1M\n"
				  "[device gpu-render]\nheaps = sys, co\n"
				  "[device display-scanout]\nheaps = co\n";

static int produce_usages(int ctl, void *arg)
{
	const struct fl_bufferqueue_request big = { 1024, 512, XR24, "gpu-render" };
	const struct fl_bufferqueue_request unknown = { 64, 64, XR24, "no-such-device" };
	const struct fl_bufferqueue_request huge = { 16385, 64, XR24, "gpu-render" };
	const struct fl_bufferqueue_request nofmt = { 64, 64, FL_FOURCC('?', '?', '?', '?'), "" };
	struct fl_bufferqueue_producer *p;
	struct fl_bufferqueue_dequeued d;
	bool scanout = *(bool *)arg;
	int r;

	CHECK(connect_retry(&p) == 0, 2);
	r = fl_bufferqueue_producer_dequeue(p, &big, -1, &d);
	if (scanout)
		CHECK(r == -ENOMEM || r == -E2BIG, 3);
	else
		CHECK(r == 0 && d.buffer->size == 2u << 20, 4);
	CHECK(fl_bufferqueue_producer_dequeue(p, &unknown, -1, &d) == -ENODEV, 5);
	CHECK(fl_bufferqueue_producer_dequeue(p, &huge, -1, &d) == -EINVAL, 6);
	CHECK(fl_bufferqueue_producer_dequeue(p, &nofmt, -1, &d) == -EINVAL, 7);
	ctl_send(ctl, 'd');
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

static void check_usage(bool scanout)
{
	struct fl_heap_table *table;
	struct fl_bufferqueue_config cf = {
		.path = queue_path(),
		.num_slots = 1,
		.flags = scanout ? FL_BUFFERQUEUE_SCANOUT : 0,
	};
	struct fl_bufferqueue_consumer *c;
	struct peer p;

	fl_assert_int_eq(fl_heap_table_load_string(small_table, sizeof(small_table) - 1, NULL,
						   &table, NULL, 0),
			 0);
	cf.table = table;
	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), 0);
	inherited = c;
	p = start_producer(produce_usages, &scanout);
	fl_assert_int_eq(serve(c, &p, NULL), 'd');
	fl_assert_int_eq(finish(&p), 0);
	fl_bufferqueue_consumer_destroy(c);
	fl_heap_table_close(table);
}

FL_TEST(a_scanout_consumer_allocates_for_display_scanout_too)
{
	check_usage(true);
}

FL_TEST(a_consumer_without_scanout_allocates_for_the_producer_alone)
{
	check_usage(false);
}

FL_TEST(a_consumer_refuses_bad_configs)
{
	struct fl_bufferqueue_config cf = { .num_slots = 1, .usage = "no-such-device" };
	struct fl_bufferqueue_consumer *c = NULL;

	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), -EINVAL);
	cf.usage = NULL;
	cf.num_slots = FL_BUFFERQUEUE_MAX_SLOTS + 1;
	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), -EINVAL);
	cf.num_slots = 2;
	cf.mode = 7;
	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), -EINVAL);
	cf.mode = 0;
	cf.flags = 2;
	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), -EINVAL);
	fl_assert(c == NULL);
	/* Something live on the path is not taken over. */
	cf.flags = 0;
	cf.path = queue_path();
	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), 0);
	{
		struct fl_bufferqueue_consumer *c2 = NULL;

		fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c2), -EADDRINUSE);
		fl_assert(c2 == NULL);
	}
	fl_bufferqueue_consumer_destroy(c);
	/* A stale socket file is replaced. */
	{
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		strcpy(a.sun_path, sock_path);
		fl_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
		close(s);
		fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), 0);
		fl_bufferqueue_consumer_destroy(c);
	}
}

/* ---- a producer killed mid-frame, and the next one ---- */

static int produce_then_hang(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	struct fl_bufferqueue_dequeued d;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 3);
	CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, NULL, NULL) == 0, 4);
	/* Mid-frame: a slot dequeued and never queued. */
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 5);
	ctl_send(ctl, 'k');
	for (;;)
		pause();
}

static int produce_both_slots(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	struct fl_bufferqueue_dequeued d[2];
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	for (int i = 0; i < 2; i++) {
		CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, 0, &d[i]) == 0, 3);
		/* Nothing of the dead producer's cache is assumed. */
		CHECK(d[i].flags & FL_BUFFERQUEUE_BUFFER_NEW, 4);
		if (d[i].release_fence_fd >= 0)
			close(d[i].release_fence_fd);
	}
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, 0, &d[0]) == -EAGAIN, 5);
	ctl_send(ctl, 'd');
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(a_producer_killed_mid_frame_frees_its_slots_for_the_next)
{
	struct fl_bufferqueue_consumer *c = consumer_new(2, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p = start_producer(produce_then_hang, NULL);
	struct fl_bufferqueue_acquired a;
	unsigned int ev = 0;

	fl_assert_int_eq(serve(c, &p, NULL), 'k');
	kill(p.pid, SIGKILL);
	fl_assert_int_eq(finish(&p), 128 + SIGKILL);
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &ev), 0);
	fl_assert(ev & FL_BUFFERQUEUE_EVENT_DISCONNECTED);
	/* Its queued frame is still there to show. */
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), 0);
	fl_assert_int_eq(a.frame_number, 1);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);

	ev = 0;
	p = start_producer(produce_both_slots, NULL);
	fl_assert_int_eq(serve(c, &p, &ev), 'd');
	fl_assert(ev & FL_BUFFERQUEUE_EVENT_CONNECTED);
	fl_assert_int_eq(finish(&p), 0);
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- the consumer gone ---- */

static int produce_until_gone(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	struct fl_bufferqueue_dequeued d, d2;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 3);
	ctl_send(ctl, 'g');
	/* One slot, ours: this waits for a release that never comes. */
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d2) == -EPIPE, 4);
	CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, NULL, NULL) == -EPIPE, 5);
	CHECK(fl_bufferqueue_producer_dispatch(p) == -EPIPE, 6);
	CHECK(fl_bufferqueue_producer_cancel(p, d.slot, -1) == -EPIPE, 7);
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(a_gone_consumer_fails_the_producer_with_epipe)
{
	struct fl_bufferqueue_consumer *c = consumer_new(1, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p = start_producer(produce_until_gone, NULL);

	fl_assert_int_eq(serve(c, &p, NULL), 'g');
	fl_bufferqueue_consumer_destroy(c);
	fl_assert_int_eq(finish(&p), 0);
}

/* ---- the event-loop producer ---- */

static int produce_nonblocking(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	struct fl_bufferqueue_dequeued d;
	struct pollfd pfd = { .events = POLLIN };
	unsigned int mode = 9;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	CHECK(fl_bufferqueue_producer_get_num_slots(p, &mode) == 1 && mode == 0, 3);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, 0, &d) == 0, 4);
	CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, NULL, NULL) == 0, 5);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, 0, &d) == -EAGAIN, 6);
	CHECK(fl_bufferqueue_producer_dispatch(p) == 0, 7);
	ctl_send(ctl, 'a');
	pfd.fd = fl_bufferqueue_producer_get_fd(p);
	CHECK(poll(&pfd, 1, -1) == 1, 8);
	CHECK(fl_bufferqueue_producer_dispatch(p) == 1, 9);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, 0, &d) == 0, 10);
	CHECK(fl_bufferqueue_producer_cancel(p, d.slot, -1) == 0, 11);
	CHECK(fl_bufferqueue_producer_cancel(p, d.slot, -1) == -EINVAL, 12);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, 0, &d) == 0, 13);
	ctl_send(ctl, 'd');
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(a_producer_polls_its_fd_for_a_free_slot)
{
	struct fl_bufferqueue_consumer *c = consumer_new(1, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p = start_producer(produce_nonblocking, NULL);
	struct fl_bufferqueue_acquired a;

	fl_assert_int_eq(serve(c, &p, NULL), 'a');
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
	fl_assert_int_eq(serve(c, &p, NULL), 'd');
	fl_assert_int_eq(finish(&p), 0);
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- a connection handed to the producer ---- */

static int produce_on_fd(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p;
	struct fl_bufferqueue_dequeued d;
	int fd = *(int *)arg;

	CHECK(fl_bufferqueue_producer_connect_fd(fd, &p) == 0, 2);
	CHECK(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d) == 0, 3);
	CHECK(fl_bufferqueue_producer_queue(p, d.slot, -1, NULL, NULL) == 0, 4);
	ctl_send(ctl, 'q');
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(a_producer_runs_on_a_connection_from_connect_fd)
{
	struct fl_bufferqueue_config cf = { .num_slots = 2 };
	struct fl_bufferqueue_consumer *c;
	struct fl_bufferqueue_acquired a;
	struct peer p;
	int fd, other = -7;

	fl_assert_int_eq(fl_bufferqueue_consumer_create(&cf, &c), 0);
	inherited = c;
	fl_assert_int_eq(fl_bufferqueue_consumer_connect_fd(c, &fd), 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_connect_fd(c, &other), -EBUSY);
	fl_assert_int_eq(other, -7);
	p = start_producer(produce_on_fd, &fd);
	close(fd);
	fl_assert_int_eq(serve(c, &p, NULL), 'q');
	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), 0);
	fl_assert_int_eq(a.frame_number, 1);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
	fl_assert_int_eq(finish(&p), 0);
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- hostile producers ---- */

static int second_producer(int ctl, void *arg)
{
	struct fl_bufferqueue_producer *p, *p2 = NULL;
	(void)arg;

	CHECK(connect_retry(&p) == 0, 2);
	CHECK(fl_bufferqueue_producer_connect(sock_path, &p2) == -EBUSY, 3);
	CHECK(p2 == NULL, 4);
	ctl_send(ctl, 'd');
	CHECK(ctl_recv(ctl) == 'x', 5);
	fl_bufferqueue_producer_destroy(p);
	return 0;
}

FL_TEST(a_second_producer_is_refused_with_ebusy)
{
	struct fl_bufferqueue_consumer *c = consumer_new(2, FL_BUFFERQUEUE_FIFO, 0);
	struct peer p = start_producer(second_producer, NULL);
	int fd = -7;

	unsigned int ev = 0, more = 0;

	fl_assert_int_eq(serve(c, &p, NULL), 'd');
	fl_assert_int_eq(fl_bufferqueue_consumer_connect_fd(c, &fd), -EBUSY);
	fl_assert_int_eq(fd, -7);
	ctl_send(p.ctl, 'x');
	fl_assert_int_eq(serve(c, &p, &ev), -1);
	fl_assert_int_eq(finish(&p), 0);
	/* Gone (every fd of the child closed): the place is free again. */
	fl_assert_int_eq(fl_bufferqueue_consumer_wait(c, 0), -ETIME);
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &more), 0);
	fl_assert((ev | more) & FL_BUFFERQUEUE_EVENT_DISCONNECTED);
	fl_assert_int_eq(fl_bufferqueue_consumer_connect_fd(c, &fd), 0);
	close(fd);
	fl_bufferqueue_consumer_destroy(c);
}

/* A raw peer on the consumer's socket, in this process: the consumer never blocks on it. */
static int raw_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	strcpy(a.sun_path, sock_path);
	fl_assert(s >= 0);
	fl_assert_int_eq(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

static ssize_t raw_send(int s, uint32_t op, uint32_t seq, const void *body, size_t len)
{
	unsigned char pkt[256];
	struct fl_msg_hdr h = { .op = op, .seq = seq, .len = (uint32_t)len };

	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), body, len);
	return send(s, pkt, sizeof(h) + len, MSG_NOSIGNAL);
}

static void raw_hello(struct fl_bufferqueue_consumer *c, int s)
{
	struct fl_bqmsg_hello h = { .version = FL_BQPROTO_VERSION };
	unsigned char buf[256];

	fl_assert_int_eq(raw_send(s, FL_BQOP_HELLO, 1, &h, sizeof(h)), 16 + sizeof(h));
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, NULL), 0);
	fl_assert_int_eq(recv(s, buf, sizeof(buf), 0), 16 + sizeof(struct fl_bqmsg_hello_reply));
}

/*
 * A consumer refuses a second producer without waiting for its HELLO
 * (consumer.c, refuse()). If the HELLO came in between its read and its
 * close, the close reset the producer's socket, which reports ECONNRESET
 * once, before the refusal queued ahead of it: connect said -EPIPE
 * instead of -EBUSY (seen under ASan in CI). Here the producer is stopped
 * while it waits, its HELLO unread, and the refusal and close come then.
 */
FL_TEST(a_refusal_that_reset_the_connection_still_reads_ebusy)
{
	struct fl_msg_reply r = { .status = -EBUSY };
	unsigned char buf[256];
	int s[2], status;
	pid_t pid;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		struct fl_bufferqueue_producer *p = NULL;

		close(s[0]);
		_exit(fl_bufferqueue_producer_connect_fd(s[1], &p) == -EBUSY && !p ? 0 : 1);
	}
	close(s[1]);
	fl_assert(recv(s[0], buf, sizeof(buf), MSG_PEEK) > 0); /* its HELLO, left unread */
	fl_assert_int_eq(kill(pid, SIGSTOP), 0);
	fl_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	fl_assert(WIFSTOPPED(status));
	fl_assert(raw_send(s[0], FL_BQOP_HELLO | FL_OP_REPLY, 0, &r, sizeof(r)) > 0);
	close(s[0]);
	fl_assert_int_eq(kill(pid, SIGCONT), 0);
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The status of the reply waiting on @s. */
static int raw_status(int s)
{
	unsigned char buf[256];
	struct fl_msg_reply r;

	fl_assert(recv(s, buf, sizeof(buf), 0) >= 24);
	memcpy(&r, buf + 16, sizeof(r));
	return r.status;
}

/* @ev: the events of dispatches since the peer's last send. */
static void expect_cut_off(struct fl_bufferqueue_consumer *c, int s, unsigned int ev)
{
	unsigned char buf[256];
	unsigned int more = 0;
	ssize_t n;

	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &more), 0);
	fl_assert((ev | more) & FL_BUFFERQUEUE_EVENT_DISCONNECTED);
	/* Replies sent before the cut may come first; then the end. */
	do
		n = recv(s, buf, sizeof(buf), 0);
	while (n > 0);
	fl_assert(n == 0 || errno == ECONNRESET);
}

FL_TEST(a_producer_sending_garbage_is_cut_off_and_another_may_connect)
{
	struct fl_bufferqueue_consumer *c = consumer_new(2, FL_BUFFERQUEUE_FIFO, 0);
	int s = raw_connect();
	unsigned int ev = 0;

	fl_assert_int_eq(send(s, "\x01\x02\x03", 3, MSG_NOSIGNAL), 3);
	expect_cut_off(c, s, 0);
	close(s);
	s = raw_connect();
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &ev), 0);
	fl_assert(ev & FL_BUFFERQUEUE_EVENT_CONNECTED);
	raw_hello(c, s);
	close(s);
	fl_bufferqueue_consumer_destroy(c);
}

FL_TEST(a_producer_sending_a_huge_message_is_cut_off)
{
	struct fl_bufferqueue_consumer *c = consumer_new(2, FL_BUFFERQUEUE_FIFO, 0);
	int s = raw_connect();
	static unsigned char big[65536];
	struct fl_msg_hdr h = { .op = FL_BQOP_QUEUE, .len = sizeof(big) - 16 };

	memcpy(big, &h, sizeof(h));
	raw_hello(c, s);
	fl_assert_int_eq(send(s, big, sizeof(big), MSG_NOSIGNAL), sizeof(big));
	expect_cut_off(c, s, 0);
	close(s);
	fl_bufferqueue_consumer_destroy(c);
}

FL_TEST(a_producer_before_hello_or_of_another_version_is_cut_off)
{
	struct fl_bufferqueue_consumer *c = consumer_new(2, FL_BUFFERQUEUE_FIFO, 0);
	struct fl_bqmsg_dequeue d = { .width = 8, .height = 8, .format = XR24 };
	struct fl_bqmsg_hello h = { .version = 99 };
	int s = raw_connect();

	unsigned int ev = 0;

	fl_assert(raw_send(s, FL_BQOP_DEQUEUE, 1, &d, sizeof(d)) > 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &ev), 0);
	fl_assert_int_eq(raw_status(s), -EPROTO);
	expect_cut_off(c, s, ev);
	close(s);
	s = raw_connect();
	fl_assert(raw_send(s, FL_BQOP_HELLO, 1, &h, sizeof(h)) > 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &ev), 0);
	fl_assert_int_eq(raw_status(s), -EPROTONOSUPPORT);
	expect_cut_off(c, s, ev);
	close(s);
	fl_bufferqueue_consumer_destroy(c);
}

FL_TEST(bad_requests_get_an_errno_and_the_connection_lives_on)
{
	struct fl_bufferqueue_consumer *c = consumer_new(2, FL_BUFFERQUEUE_FIFO, 0);
	struct fl_bqmsg_queue q = { .slot = 1 };
	struct fl_bqmsg_cancel cn = { .slot = 40 };
	struct fl_bqmsg_dequeue d = { .width = 8, .height = 8, .format = XR24 };
	struct fl_bqmsg_hello h = { .version = FL_BQPROTO_VERSION };
	uint32_t junk = 0;
	int s = raw_connect();

	raw_hello(c, s);
	/* A slot it did not dequeue, a slot out of range, an unknown op, a usage without NUL. */
	fl_assert(raw_send(s, FL_BQOP_QUEUE, 2, &q, sizeof(q)) > 0);
	fl_assert(raw_send(s, FL_BQOP_CANCEL, 3, &cn, sizeof(cn)) > 0);
	fl_assert(raw_send(s, 999, 4, &junk, sizeof(junk)) > 0);
	memset(d.usage, 'x', sizeof(d.usage));
	fl_assert(raw_send(s, FL_BQOP_DEQUEUE, 5, &d, sizeof(d)) > 0);
	fl_assert(raw_send(s, FL_BQOP_HELLO, 6, &h, sizeof(h)) > 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, NULL), 0);
	fl_assert_int_eq(raw_status(s), -EINVAL);
	fl_assert_int_eq(raw_status(s), -EINVAL);
	fl_assert_int_eq(raw_status(s), -EOPNOTSUPP);
	fl_assert_int_eq(raw_status(s), -EINVAL);
	fl_assert_int_eq(raw_status(s), -EALREADY);
	memset(d.usage, 0, sizeof(d.usage));
	fl_assert(raw_send(s, FL_BQOP_DEQUEUE, 7, &d, sizeof(d)) > 0);
	fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, NULL), 0);
	{
		unsigned char buf[256];
		struct fl_bqmsg_dequeue_reply rep;
		int fds[2];
		char cbuf[CMSG_SPACE(sizeof(fds))];
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm;

		fl_assert_int_eq(recvmsg(s, &m, MSG_CMSG_CLOEXEC), 16 + sizeof(rep));
		memcpy(&rep, buf + 16, sizeof(rep));
		fl_assert_int_eq(rep.r.status, 0);
		fl_assert_int_eq(rep.flags, FL_BQ_F_BUFFER);
		cm = CMSG_FIRSTHDR(&m);
		fl_assert(cm && cm->cmsg_type == SCM_RIGHTS);
		fl_assert_int_eq(cm->cmsg_len, CMSG_LEN(sizeof(int)));
		memcpy(fds, CMSG_DATA(cm), sizeof(int));
		close(fds[0]);
	}
	/* A regular file for a fence: refused before anyone waits on it; a real queue then passes. */
	{
		struct fl_bqmsg_queue qf = { .slot = 0, .flags = FL_BQ_F_FENCE };
		struct fl_msg_hdr hq = { .op = FL_BQOP_QUEUE, .seq = 8, .len = sizeof(qf) };
		unsigned char pkt[sizeof(hq) + sizeof(qf)];
		int file = memfd_create("not-a-fence", MFD_CLOEXEC);
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
		struct iovec iov = { pkt, sizeof(pkt) };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

		memcpy(pkt, &hq, sizeof(hq));
		memcpy(pkt + sizeof(hq), &qf, sizeof(qf));
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &file, sizeof(int));
		fl_assert_int_eq(sendmsg(s, &m, MSG_NOSIGNAL), sizeof(pkt));
		qf.flags = 0;
		fl_assert(raw_send(s, FL_BQOP_QUEUE, 9, &qf, sizeof(qf)) > 0);
		fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, NULL), 0);
		fl_assert_int_eq(raw_status(s), -EINVAL);
		fl_assert_int_eq(raw_status(s), 0);
		{
			struct fl_bufferqueue_acquired a;

			fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), 0);
			fl_assert_int_eq(a.acquire_fence_fd, -1);
			fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, file), -EINVAL);
			fl_assert_int_eq(fl_bufferqueue_consumer_release(c, a.slot, -1), 0);
		}
		close(file);
	}
	close(s);
	fl_bufferqueue_consumer_destroy(c);
}

FL_TEST(a_producer_that_never_reads_is_cut_off)
{
	struct fl_bufferqueue_consumer *c = consumer_new(1, FL_BUFFERQUEUE_FIFO, 0);
	struct fl_bqmsg_dequeue d = { .width = 8, .height = 8, .format = XR24 };
	unsigned int ev = 0;
	int s = raw_connect(), round;

	raw_hello(c, s);
	/* Requests only, replies never read: the consumer must not wait for room. */
	for (round = 0; round < 1000 && !(ev & FL_BUFFERQUEUE_EVENT_DISCONNECTED); round++) {
		while (raw_send(s, FL_BQOP_DEQUEUE, 1, &d, sizeof(d)) > 0)
			;
		fl_assert(errno == EAGAIN || errno == EPIPE || errno == ECONNRESET);
		fl_assert_int_eq(fl_bufferqueue_consumer_dispatch(c, &ev), 0);
	}
	fl_assert(ev & FL_BUFFERQUEUE_EVENT_DISCONNECTED);
	close(s);
	fl_bufferqueue_consumer_destroy(c);
}

FL_TEST(api_argument_errors)
{
	struct fl_bufferqueue_consumer *c = consumer_new(1, FL_BUFFERQUEUE_FIFO, 0);
	struct fl_bufferqueue_acquired a;

	fl_assert_int_eq(fl_bufferqueue_consumer_acquire(c, 0, &a), -EAGAIN);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, 0, -1), -EINVAL);
	fl_assert_int_eq(fl_bufferqueue_consumer_release(c, 1, -1), -EINVAL);
	fl_assert_int_eq(fl_bufferqueue_consumer_wait(c, 0), -ETIME);
	fl_assert_int_eq(fl_bufferqueue_producer_connect_fd(-1, NULL), -EINVAL);
	{
		struct fl_bufferqueue_producer *p = NULL;
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		fl_assert_int_eq(fl_bufferqueue_producer_connect_fd(fd, &p), -EINVAL);
		close(fd);
		fl_assert(p == NULL);
	}
	fl_bufferqueue_consumer_destroy(c);
}

/* ---- a hostile consumer ---- */

/* Sends one packet with @nfds fds (the consumer's side, raw). */
static int raw_send_fds(int s, uint32_t op, uint32_t seq, const void *body, size_t len,
			const int *fds, int nfds)
{
	unsigned char pkt[256];
	struct fl_msg_hdr h = { .op = op, .seq = seq, .len = (uint32_t)len };
	char cbuf[CMSG_SPACE(2 * sizeof(int))] = { 0 };
	struct iovec iov = { pkt, sizeof(h) + len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), body, len);
	if (nfds) {
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	return sendmsg(s, &m, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* The seq of the next request on @s, or -1. */
static int raw_request_seq(int s)
{
	unsigned char buf[512];
	struct fl_msg_hdr h;

	if (recv(s, buf, sizeof(buf), 0) < (ssize_t)sizeof(h))
		return -1;
	memcpy(&h, buf, sizeof(h));
	return (int)h.seq;
}

/*
 * A consumer that answers HELLO, then each DEQUEUE with a lie: @arg 0, a
 * buffer smaller than the size it claims; 1, a regular file for a release
 * fence.
 */
static int lying_consumer(int ctl, void *arg)
{
	int *sv = arg, s = sv[1], lie = ctl_recv(ctl) - '0', seq, fds[2];
	struct fl_bqmsg_hello_reply hr = { .version = FL_BQPROTO_VERSION, .num_slots = 2 };
	struct fl_bqmsg_dequeue_reply dr = { .width = 64,
					     .height = 64,
					     .format = XR24,
					     .num_planes = 1,
					     .size = 16384,
					     .pitches = { 256 } };

	close(sv[0]); /* the producer's end: its hang-up must reach us */
	CHECK((seq = raw_request_seq(s)) >= 0, 2);
	CHECK(raw_send_fds(s, FL_BQOP_HELLO | FL_OP_REPLY, (uint32_t)seq, &hr, sizeof(hr), NULL,
			   0) == 0,
	      3);
	CHECK((seq = raw_request_seq(s)) >= 0, 4);
	fds[0] = memfd_create("buffer", MFD_CLOEXEC);
	fds[1] = memfd_create("not-a-fence", MFD_CLOEXEC);
	CHECK(ftruncate(fds[0], lie == 0 ? 4096 : 16384) == 0, 5);
	dr.flags = FL_BQ_F_BUFFER | (lie == 1 ? FL_BQ_F_FENCE : 0);
	CHECK(raw_send_fds(s, FL_BQOP_DEQUEUE | FL_OP_REPLY, (uint32_t)seq, &dr, sizeof(dr), fds,
			   lie == 1 ? 2 : 1) == 0,
	      6);
	close(fds[0]);
	close(fds[1]);
	/* Wait for the producer to hang up. */
	while (raw_request_seq(s) >= 0)
		;
	close(s);
	return 0;
}

FL_TEST(a_producer_refuses_a_consumer_that_lies)
{
	for (int lie = 0; lie < 2; lie++) {
		struct fl_bufferqueue_producer *p;
		struct fl_bufferqueue_dequeued d;
		struct peer c;
		int sv[2];

		fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
		c = start_producer(lying_consumer, sv);
		close(sv[1]);
		ctl_send(c.ctl, (char)('0' + lie));
		fl_assert_int_eq(fl_bufferqueue_producer_connect_fd(sv[0], &p), 0);
		fl_assert_int_eq(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d), -EPROTO);
		fl_assert_int_eq(fl_bufferqueue_producer_dequeue(p, &rgb64, -1, &d), -EPIPE);
		fl_bufferqueue_producer_destroy(p);
		fl_assert_int_eq(finish(&c), 0);
	}
}

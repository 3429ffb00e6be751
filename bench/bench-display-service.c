/* SPDX-License-Identifier: MIT */
/*
 * Section "display", its second half: the display service (docs/display.md) next to
 * same-run baselines.
 *
 * 1. The post call's round trip: a TEST_ONLY post (the whole synchronous
 *    path: decode, the planes' sizes, the model's check, the driver's
 *    validate) and a real post to a blanked panel (which flips at once: no
 *    vsync to wait for), against a bare fencelined request round trip (a
 *    timeline's value, fl_timeline_fd_get_value()).
 * 2. Vsync delivery jitter: how late a client reads each VSYNC event past
 *    its timestamp, p50 and p99, against a bare timerfd in this process
 *    read past its absolute deadlines of the same period. The timestamps
 *    themselves are the virtual panel's deadlines (their jitter is 0 by
 *    construction), so the figure is the service's delivery: its loop's
 *    timer slack, the event pipe and the client's wake-up.
 * 3. The flip's own overhead: a post waits on an acquire fence this
 *    process signals at a random phase of the frame; the post must flip at
 *    the first vsync after that, V. How late past V this process sees its
 *    PRESENT fence signalled, p50 and p99, beside the bare timerfd's
 *    lateness of part 2 (a wake-up at an absolute deadline): the
 *    difference is what the framework adds to waiting for the vsync (the
 *    issue's target: 0.5 ms at p50 and p99). A post that missed V shows as
 *    a period late and is counted.
 * 4. What a queued post costs the service: 8 processes each queue 16 posts
 *    (the per-client bound) of one full-screen buffer held by an acquire
 *    fence that has not signalled; the service's fds (/proc/PID/fd) and
 *    resident memory (VmRSS) counted with every client connected and its
 *    handles open, then with the 128 posts queued, per post, beside the
 *    fds a post brings (its plane and its fence) and the bytes of its
 *    POST message.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "bench.h"
#include "display.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')

struct post_ctx {
	struct fl_display_handle *dev, *intf;
	struct fl_display_post post;
	int tl;
};

static double b_request(void *arg, long ops)
{
	struct post_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns(), v;

	for (long i = 0; i < ops; i++)
		if (fl_timeline_fd_get_value(c->tl, &v) < 0)
			fl__bench_die("fl_timeline_fd_get_value", EIO);
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_post(void *arg, long ops)
{
	struct post_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct fl_display_error e;
	int r;

	for (long i = 0; i < ops; i++) {
		r = fl_display_post(c->dev, &c->post, NULL, &e);
		if (r < 0) {
			fprintf(stderr, "fl-bench: post: %s\n", e.msg);
			fl__bench_die("fl_display_post", -r);
		}
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

/*
 * Posts that ask for their release fence, as a compositor does, holding
 * the last one until the next post is made (a pending point on the
 * service's timeline at every flip, which its signal must complete).
 */
static double b_post_fenced(void *arg, long ops)
{
	struct post_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	struct fl_display_error e;
	int r, fence, held = -1;

	for (long i = 0; i < ops; i++) {
		r = fl_display_post(c->dev, &c->post, &fence, &e);
		if (r < 0) {
			fprintf(stderr, "fl-bench: post: %s\n", e.msg);
			fl__bench_die("fl_display_post", -r);
		}
		if (held >= 0)
			close(held);
		held = fence;
	}
	if (held >= 0)
		close(held);
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

/* The p50 and p99 of @n lateness samples, in ns, under @name. */
static void late_out(const char *name, uint64_t *late, size_t n)
{
	struct fl_bench_lat st;
	char buf[96];

	fl__bench_lat_stats(late, n, &st);
	snprintf(buf, sizeof(buf), "%s_p50", name);
	fl__bench_out(buf, st.p50, "ns");
	snprintf(buf, sizeof(buf), "%s_p99", name);
	fl__bench_out(buf, st.p99, "ns");
}

static void part_jitter(struct fl_display_handle *intf, uint64_t period)
{
	long n = fl__bench_iters(600, 60);
	uint64_t *late = calloc((size_t)n, sizeof(*late));
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t start, ticks;
	int tfd;

	if (!late)
		fl__bench_die("calloc", ENOMEM);
	fl__bench_comment("display 2: how late %ld VSYNC events reach a client past their "
			  "timestamps, against a bare timerfd read past its absolute deadlines, "
			  "same period (%llu ns)",
			  n, (unsigned long long)period);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (tfd < 0)
		fl__bench_die("timerfd_create", errno);
	start = fl__bench_now_ns() + period;
	for (long i = 0; i < n; i++) {
		uint64_t at = start + (uint64_t)i * period;

		its.it_value.tv_sec = (time_t)(at / 1000000000u);
		its.it_value.tv_nsec = (long)(at % 1000000000u);
		if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ||
		    read(tfd, &ticks, sizeof(ticks)) != (ssize_t)sizeof(ticks))
			fl__bench_die("timerfd", errno);
		late[i] = fl__bench_now_ns() - at;
	}
	close(tfd);
	late_out("baseline_timerfd_late", late, (size_t)n);
	if (fl_display_set_event(intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL) < 0)
		fl__bench_die("fl_display_set_event", EIO);
	for (long i = 0; i < n; i++) {
		struct fl_display_event *ev;

		if (fl_display_read_event(intf, &ev) < 0)
			fl__bench_die("fl_display_read_event", EIO);
		late[i] = fl__bench_now_ns() - ((struct fl_display_vsync_event *)ev)->timestamp;
		free(ev);
	}
	fl_display_set_event(intf, FL_DISPLAY_EVENT_VSYNC, 0, NULL);
	late_out("display_vsync_late", late, (size_t)n);
	fl__bench_ratio("ratio_display_vsync_late_p99_over_timerfd", "display_vsync_late_p99",
			"baseline_timerfd_late_p99");
	free(late);
}

/* Posts held by an acquire fence signalled at a random phase; see part 3 above. */
static void part_flip(struct post_ctx *c, struct fl_display_buffer *b, uint64_t period)
{
	long n = fl__bench_iters(150, 15);
	uint64_t *late = calloc((size_t)n, sizeof(*late)), grid, seed = 0x9e3779b97f4a7c15u;
	struct fl_display_event *ev = NULL;
	struct fl_bench_lat st;
	long missed = 0;

	if (!late)
		fl__bench_die("calloc", ENOMEM);
	fl__bench_comment(
		"display 3: %ld posts, each held by an acquire fence signalled at a "
		"random phase of the frame: how late past the first vsync after the signal "
		"this process sees the PRESENT fence, against part 2's bare timerfd",
		n);
	/* The vsync grid: one event's timestamp, then the mode's period. */
	if (fl_display_set_event(c->intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL) < 0 ||
	    fl_display_read_event(c->intf, &ev) < 0)
		fl__bench_die("vsync", EIO);
	grid = ((struct fl_display_vsync_event *)ev)->timestamp;
	free(ev);
	fl_display_set_event(c->intf, FL_DISPLAY_EVENT_VSYNC, 0, NULL);
	c->post.flags = 0;
	c->post.fence_type = FL_DISPLAY_FENCE_PRESENT;
	for (long i = 0; i < n; i++) {
		struct fl_display_error e;
		uint64_t value, t_sig, t_seen, v;
		int acq = -1, present = -1, r;

		if (fl_timeline_fd_get_value(c->tl, &value) < 0 ||
		    fl_fence_fd_create(c->tl, value + 1, "bench-acquire", &acq) < 0)
			fl__bench_die("acquire fence", EIO);
		b->acquire_fence = acq;
		r = fl_display_post(c->dev, &c->post, &present, &e);
		close(acq);
		if (r < 0) {
			fprintf(stderr, "fl-bench: post: %s\n", e.msg);
			fl__bench_die("fl_display_post", -r);
		}
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		usleep((useconds_t)((seed >> 33) % (period / 1000u)));
		t_sig = fl__bench_now_ns();
		if (fl_timeline_fd_inc(c->tl, 1) < 0 || fl_fence_fd_wait(present, 5000) < 0)
			fl__bench_die("present fence", EIO);
		t_seen = fl__bench_now_ns();
		close(present);
		/* V: the first vsync at or after the signal (the grid drifts < 1 ns a frame). */
		v = grid + (t_sig - grid + period - 1) / period * period;
		late[i] = t_seen > v ? t_seen - v : 0;
		missed += late[i] >= period / 2;
	}
	b->acquire_fence = -1;
	c->post.fence_type = FL_DISPLAY_FENCE_NONE;
	late_out("display_flip_late", late, (size_t)n);
	fl__bench_lat_stats(late, (size_t)n, &st);
	fl__bench_out("display_flip_overhead_p50",
		      st.p50 - fl__bench_get("baseline_timerfd_late_p50"), "ns");
	fl__bench_out("display_flip_overhead_p99",
		      st.p99 - fl__bench_get("baseline_timerfd_late_p99"), "ns");
	fl__bench_out("display_flip_missed_vsync", (double)missed, "posts");
	free(late);
}

/* The display service's pid, from the HELLO of a connection of our own. */
pid_t fl__bench_display_service_pid(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_hello b;
	} q = { { FL_DOP_HELLO, 0, 1, sizeof(struct fl_dmsg_hello) }, { FL_DPROTO_VERSION, 0 } };
	struct {
		struct fl_msg_hdr h;
		struct fl_dmsg_hello_reply r;
	} rep;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	pid_t pid = -1;

	if (fd >= 0 && fl_display_socket_path(a.sun_path, sizeof(a.sun_path)) == 0 &&
	    connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    send(fd, &q, sizeof(q), 0) == (ssize_t)sizeof(q) &&
	    recv(fd, &rep, sizeof(rep), 0) == (ssize_t)sizeof(rep) && rep.r.r.status == 0)
		pid = (pid_t)rep.r.pid;
	if (fd >= 0)
		close(fd);
	return pid;
}

/* @pid's open fds and resident bytes. */
static void usage_of(pid_t pid, long *ret_fds, long *ret_rss)
{
	char path[64], line[128];
	FILE *f;

	*ret_fds = fl__bench_proc_fds((int)pid);
	*ret_rss = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			*ret_rss = strtol(line + 6, NULL, 10) * 1024;
	if (f)
		fclose(f);
}

#define QUEUERS 8

/* One client of part 4: connect, say so, queue its posts, say so, hold them until told. */
static void queuer(int to_parent, int from_parent)
{
	struct fl_display_handle *dev = NULL, *intf = NULL;
	struct fl_display_interface_data id = { 0 };
	struct fl_display_buffer b;
	uint32_t intf_id = 0, off, pitch;
	int fd, tl = -1, n = 0;
	char c;

	if (fl_display_device_open(0, &dev) < 0 || fl_display_interface_open(dev, 0, &intf) < 0 ||
	    fl_display_interface_get_data(intf, &id, NULL) < 0 ||
	    fl_display_simple_buffer_alloc(intf, id.current_mode.hdisplay, id.current_mode.vdisplay,
					   XR24, &fd, &off, &pitch, NULL) < 0 ||
	    fl_timeline_fd_create("bench-held", 0, &tl) < 0)
		_exit(2);
	(void)!write(to_parent, "c", 1);
	if (read(from_parent, &c, 1) != 1)
		_exit(2);
	b = (struct fl_display_buffer){ .engine = 0,
					.w = id.current_mode.hdisplay,
					.h = id.current_mode.vdisplay,
					.format = XR24,
					.n_planes = 1,
					.fd = { fd },
					.offset = { off },
					.pitch = { pitch } };
	for (int i = 0; i < 16; i++) {
		struct fl_display_post p = {
			.intfs = &intf_id, .n_intfs = 1, .bufs = &b, .n_bufs = 1
		};

		if (fl_fence_fd_create(tl, 1, "held", &b.acquire_fence) < 0)
			_exit(2);
		n += fl_display_post(dev, &p, NULL, NULL) == 0;
		close(b.acquire_fence);
	}
	(void)!write(to_parent, n == 16 ? "q" : "x", 1);
	(void)!read(from_parent, &c, 1);
	fl_timeline_fd_inc(tl, 1);
	_exit(0);
}

/*
 * One byte from the queuers, or 0: every child holds the pipe's write
 * end, so a child that died never makes end-of-file; wait 30 s at most.
 */
static char queuer_byte(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, 30000) != 1 || read(fd, &c, 1) != 1)
		return 0;
	return c;
}

static void part_queue(void)
{
	int up[2], down[2], ok = 1;
	pid_t kids[QUEUERS], svc = fl__bench_display_service_pid();
	long fds0, rss0, fds1, rss1;

	fl__bench_comment("display 4: what a queued post costs the service: %d clients queue 16 "
			  "posts each (held by an acquire fence), the service's fds and resident "
			  "memory before and after, per post",
			  QUEUERS);
	if (svc <= 0 || pipe2(up, O_CLOEXEC) < 0 || pipe2(down, O_CLOEXEC) < 0) {
		fl__bench_comment("display 4: skipped (no service pid)");
		return;
	}
	for (int i = 0; i < QUEUERS; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			/* The parent's connection is not the child's (the library makes its own). */
			queuer(up[1], down[0]);
		}
	}
	for (int i = 0; i < QUEUERS && ok; i++)
		ok &= queuer_byte(up[0]) == 'c';
	usage_of(svc, &fds0, &rss0);
	for (int i = 0; i < QUEUERS; i++)
		(void)!write(down[1], "g", 1);
	for (int i = 0; i < QUEUERS && ok; i++)
		ok &= queuer_byte(up[0]) == 'q';
	usage_of(svc, &fds1, &rss1);
	for (int i = 0; i < QUEUERS; i++)
		(void)!write(down[1], "g", 1);
	for (int i = 0; i < QUEUERS; i++) {
		if (!ok)
			kill(kids[i], SIGKILL); /* one failed: the others may wait for ever */
		waitpid(kids[i], NULL, 0);
	}
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	if (!ok) {
		fl__bench_comment("display 4: a client could not queue its posts: skipped");
		return;
	}
	fl__bench_out("baseline_post_fds_sent", 2, "fds");
	fl__bench_out("display_queued_post_fds", (double)(fds1 - fds0) / (QUEUERS * 16), "fds");
	fl__bench_ratio("ratio_display_queued_post_fds_over_sent", "display_queued_post_fds",
			"baseline_post_fds_sent");
	fl__bench_out("baseline_post_message_bytes",
		      (double)(sizeof(struct fl_msg_hdr) + sizeof(struct fl_dmsg_post) + 4 +
			       sizeof(struct fl_dmsg_buffer)),
		      "bytes");
	fl__bench_out("display_queued_post_bytes", (double)(rss1 - rss0) / (QUEUERS * 16), "bytes");
}

void fl__bench_display_service(void)
{
	struct post_ctx c = { 0 };
	struct fl_display_interface_data id = { 0 };
	struct fl_display_buffer b = { 0 };
	struct fl_display_mode m;
	uint32_t intf_id = 0, off, pitch;
	long n = fl__bench_iters(2000, 200);
	int r, fd;

	fl__bench_comment("section display: fl-displayd's default phone device, its panel "
			  "(interface 0) and engine 0");
	r = fl_display_device_open(0, &c.dev);
	if (r == 0)
		r = fl_display_interface_open(c.dev, intf_id, &c.intf);
	if (r == 0)
		r = fl_display_interface_get_data(c.intf, &id, NULL);
	if (r < 0) {
		fl__bench_comment("display: no display service (%s): section skipped",
				  strerror(-r));
		return;
	}
	m = id.current_mode;
	r = fl_display_simple_buffer_alloc(c.intf, m.hdisplay, m.vdisplay, XR24, &fd, &off, &pitch,
					   NULL);
	if (r < 0 || fl_timeline_fd_create("bench", 0, &c.tl) < 0)
		fl__bench_die("display set-up", r < 0 ? -r : EIO);
	r = fl_display_attach(c.dev, 0, intf_id, NULL);
	if (r < 0 && r != -EALREADY)
		fl__bench_die("fl_display_attach", -r);
	b = (struct fl_display_buffer){ .engine = 0,
					.w = m.hdisplay,
					.h = m.vdisplay,
					.format = XR24,
					.n_planes = 1,
					.fd = { fd },
					.offset = { off },
					.pitch = { pitch },
					.acquire_fence = -1 };
	c.post = (struct fl_display_post){ .intfs = &intf_id,
					   .n_intfs = 1,
					   .bufs = &b,
					   .n_bufs = 1,
					   .flags = FL_DISPLAY_POST_TEST_ONLY,
					   .fence_type = FL_DISPLAY_FENCE_NONE };
	fl__bench_comment("display 1: a post call's round trip (one %ux%u XRGB8888 buffer), "
			  "median of %d batches of %ld, against a fencelined request",
			  m.hdisplay, m.vdisplay, FL_BENCH_REPS, n);
	fl__bench_out("baseline_fencelined_request", fl__bench_batch_median(b_request, &c, n),
		      "ns");
	fl__bench_out("display_post_test_only", fl__bench_batch_median(b_post, &c, n), "ns");
	/* Blanked: no vsync, so each post flips as soon as it is queued and the queue stays short. */
	c.post.flags = 0;
	fl__bench_out("display_post_flip_blanked", fl__bench_batch_median(b_post, &c, n), "ns");
	c.post.fence_type = FL_DISPLAY_FENCE_RELEASE;
	fl__bench_out("display_post_flip_release_fence",
		      fl__bench_batch_median(b_post_fenced, &c, n), "ns");
	c.post.fence_type = FL_DISPLAY_FENCE_NONE;
	fl__bench_ratio("ratio_display_post_test_only_over_request", "display_post_test_only",
			"baseline_fencelined_request");
	fl__bench_ratio("ratio_display_post_flip_over_request", "display_post_flip_blanked",
			"baseline_fencelined_request");
	fl__bench_ratio("ratio_display_post_flip_release_fence_over_request",
			"display_post_flip_release_fence", "baseline_fencelined_request");
	if (fl_display_blank(c.intf, FL_DISPLAY_DPMS_ON, NULL) < 0)
		fl__bench_die("fl_display_blank", EIO);
	part_jitter(c.intf, (uint64_t)m.htotal * m.vtotal * 1000000u / m.clock);
	part_flip(&c, &b, (uint64_t)m.htotal * m.vtotal * 1000000u / m.clock);
	part_queue();
	fl_display_blank(c.intf, FL_DISPLAY_DPMS_OFF, NULL);
	close(fd);
	fl_timeline_fd_close(c.tl);
	fl_display_close(c.intf);
	fl_display_close(c.dev);
	fl_display_disconnect();
}

/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo - a compositor-style frame pipeline across processes, synchronised by fence fds
 *
 * The main process forks one process per pipeline stage and then only watches:
 *
 *	camera     --.  render-done fence + {frame, buffer, start time}
 *	gpu-render --+--> compositor --> display --> main (per-frame results, summary)
 *	(more producers with --producers)      composition-done fence + {frame, buffer, start time}
 *
 * Every arrow is a SOCK_SEQPACKET socket pair, and every message on it is one fl_send() with the
 * payload and, between stages, one fence fd attached (SCM_RIGHTS under the hood). The timelines
 * and fences are made with the fd API (<fenceline/shared.h>), so they live in fencelined, which
 * the library starts on first use: any process holding a fence fd can poll it, merge it or read
 * its status, and the process that made a timeline is the one that signals it.
 *
 * - A producer owns a timeline. For frame n it starts on a shared 60 Hz grid (or at once if it is
 *   behind), makes a fence at value n + 1 of its timeline *before* it renders (a GPU driver hands
 *   out its out-fence at submit time), sends it to the compositor, "renders" (sleeps a few ms; with
 *   probability --jank the frame overruns the whole refresh period) and then signals by advancing
 *   its timeline. Nobody ever waits for the producer itself, only on its fence.
 * - The compositor is a poll() loop. Once every producer has sent frame n it merges their fences
 *   into one, makes its own composition fence for frame n and sends that to the display right
 *   away, before it has composed anything. When the merged fence of the oldest pending frame
 *   becomes readable it "composes" (1.5 ms) and signals its timeline.
 * - The display ticks at --hz on absolute CLOCK_MONOTONIC deadlines. At each vsync it polls the
 *   due frames' fence fds with a zero timeout and flips the newest frame whose fence signalled
 *   before the vsync (the fence's timestamp says when). It never waits for a late frame: the screen
 *   keeps the previous one, and a ready frame that a newer one overtakes is dropped.
 * - Frame n starts at vsync n and is due at vsync n + 1. The display reports every frame to main:
 *   its latency from the producer's start to the flip, and whether it was on time, late or
 *   dropped.
 *
 * Nothing can hang: every child re-arms an alarm() on each step it makes (default 10 s, --timeout)
 * and main gives up when no child has reported anything for that long, kills what is left, reaps
 * it and exits non-zero. A dead daemon shows up as fences failing with -ECONNRESET.
 */
#define _GNU_SOURCE /* ppoll() */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "demo-util.h"
#include "pipeline-screen.h"

#define MAX_FRAMES    100000u
#define MAX_PRODUCERS 8u
#define MAX_CHILDREN  (MAX_PRODUCERS + 2u)
/* Frames a stage keeps in flight; beyond that it stops reading its input and the sender blocks. */
#define RING	    16u
#define NUM_BUFFERS 3u
#define COMPOSE_NS  1500000u
/* After a failure, how long the other stages get to notice it and exit by themselves. */
#define GRACE_NS  1000000000u
#define NS_PER_MS 1000000.0
#define NS_PER_S  1000000000u

struct options {
	unsigned int frames;
	unsigned int producers;
	unsigned int hz;
	double jank;
	unsigned int seed;
	unsigned int timeout_s;
	bool quiet;
	const char *display; /* --display: show the frames there (pipeline-screen.c) */
};

enum role {
	ROLE_PRODUCER,
	ROLE_COMPOSITOR,
	ROLE_DISPLAY,
};

/* What each producer stands for, and how long it usually takes to render a frame. */
static const struct {
	const char *name;
	double work_ms;
} producer_kinds[] = {
	{ "camera", 3.0 },
	{ "gpu-render", 7.0 },
	{ "video-decode", 4.0 },
	{ "overlay", 2.0 },
};

struct child {
	char name[FL_NAME_MAX];
	enum role role;
	unsigned int index; /* producers: which one */
	double work_ms; /* producers: typical render time */
	pid_t pid;
	int ctl[2]; /* control socket pair: [0] main's end, [1] the child's */
	bool done; /* sent CTL_DONE */
	bool hung_up; /* its control socket reached EOF: it has exited */
	bool killed; /* by main, after a failure elsewhere */
	bool reaped;
};

struct demo {
	struct options opt;
	uint64_t period_ns;
	uint64_t t0_ns; /* vsync 0; set by main once every child is ready */
	int daemon_pid;
	unsigned int num_children;
	struct child children[MAX_CHILDREN];
	int render[MAX_PRODUCERS][2]; /* producer i -> compositor: [0] producer, [1] compositor */
	int present[2]; /* compositor -> display: [0] compositor, [1] display */
};

/* Producer -> compositor, with the producer's render-done fence. */
struct render_msg {
	uint32_t frame;
	uint32_t buffer;
	uint64_t start_ns; /* CLOCK_MONOTONIC when the producer started the frame */
	uint64_t work_ns; /* how long it is going to render */
};

/* Compositor -> display, with the composition-done fence. */
struct present_msg {
	uint32_t frame;
	uint32_t buffer;
	uint64_t start_ns; /* the earliest producer start of the frame */
	/* The producer that finished last, when it started and how long it rendered. */
	uint32_t last;
	uint32_t pad;
	uint64_t last_start_ns;
	uint64_t last_work_ns;
};

enum ctl_type {
	CTL_READY = 1, /* child -> main: set up, waiting for CTL_START */
	CTL_START, /* main -> child: t0_ns */
	CTL_FRAME, /* display -> main: one frame's fate */
	CTL_DONE, /* child -> main: finished; count and vsyncs */
};

enum fate {
	FATE_ON_TIME,
	FATE_LATE,
	FATE_DROPPED,
};

/* Everything main and its children tell each other, in one fixed-size record. */
struct ctl_msg {
	uint32_t type;
	uint32_t frame;
	uint32_t buffer;
	uint32_t fate;
	uint32_t vsync; /* CTL_FRAME: the vsync it was flipped (or dropped) at; CTL_DONE: vsyncs */
	uint32_t count; /* CTL_FRAME: a dropped frame's successor; CTL_DONE: slow frames, repeats */
	uint32_t last; /* the producer that finished the frame last */
	uint32_t pad;
	uint64_t t0_ns;
	uint64_t start_ns;
	uint64_t ready_ns; /* the composition fence's signal timestamp */
	uint64_t flip_ns;
	uint64_t last_start_ns;
	uint64_t last_work_ns;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	interrupted = 1;
}

static struct timespec to_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / NS_PER_S),
				  .tv_nsec = (long)(ns % NS_PER_S) };
}

/* Absolute deadlines keep the frame grid from drifting by the time each step takes. */
static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = to_timespec(deadline_ns);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* splitmix64: tiny, good enough, and each producer gets its own reproducible stream. */
static double rand_unit(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	z ^= z >> 31;
	return (double)(z >> 11) / (double)(1ull << 53);
}

static int fail(const struct child *self, const char *what, int r)
{
	fprintf(stderr, "pipeline-demo: %s: %s: %s%s\n", self->name, what, strerror(-r),
		r == -ECONNRESET ? " (did fencelined die?)" : "");
	return r;
}

static int ctl_send(int fd, struct ctl_msg *m)
{
	return fl_send(fd, m, sizeof(*m), NULL, 0);
}

/* One control message, waiting at most @timeout_s for it. */
static int ctl_recv(int fd, struct ctl_msg *m, unsigned int timeout_s)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t len;
	int r;

	r = poll(&pfd, 1, (int)(timeout_s * 1000));
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIME;
	r = fl_recv(fd, m, sizeof(*m), &len, NULL, 0, NULL);
	if (r < 0)
		return r;
	return len == sizeof(*m) ? 0 : -EPROTO;
}

/* Tell main we are set up, and get the time of vsync 0 back. */
static int handshake(struct demo *d, struct child *self)
{
	int fd = self->ctl[1];
	struct ctl_msg m = { .type = CTL_READY };
	int r;

	r = ctl_send(fd, &m);
	if (r < 0)
		return fail(self, "ready", r);
	r = ctl_recv(fd, &m, d->opt.timeout_s);
	if (r == 0 && m.type != CTL_START)
		r = -EPROTO;
	if (r < 0)
		return fail(self, "start", r);
	d->t0_ns = m.t0_ns;
	return 0;
}

static int send_done(struct child *self, uint32_t count, uint32_t vsyncs)
{
	struct ctl_msg m = { .type = CTL_DONE, .count = count, .vsync = vsyncs };
	int r = ctl_send(self->ctl[1], &m);

	return r < 0 ? fail(self, "done", r) : 0;
}

/* ---- producer ---------------------------------------------------------------------------- */

static int producer_main(struct demo *d, struct child *self)
{
	int sock = d->render[self->index][0];
	uint64_t rng = d->opt.seed * 0x100000001b3ull + self->index;
	unsigned int slow = 0;
	char name[FL_NAME_MAX];
	int tl, r;

	/* The timeline lives in fencelined, but only holders of this fd can advance it. */
	r = fl_timeline_fd_create(self->name, 0, &tl);
	if (r < 0)
		return fail(self, "fl_timeline_fd_create", r);
	r = handshake(d, self);

	for (unsigned int n = 0; r == 0 && n < d->opt.frames; n++) {
		struct render_msg m = { .frame = n, .buffer = n % NUM_BUFFERS };
		int fence;

		alarm(d->opt.timeout_s);
		sleep_until(d->t0_ns + n * d->period_ns);
		m.start_ns = demo_now_ns();
		if (rand_unit(&rng) < d->opt.jank) {
			m.work_ns =
				d->period_ns + (uint64_t)(rand_unit(&rng) * (double)d->period_ns);
			slow++;
		} else {
			m.work_ns = (uint64_t)(self->work_ms * NS_PER_MS *
					       (0.75 + 0.5 * rand_unit(&rng)));
		}

		/* Point n + 1 of our timeline: it signals when this frame is rendered. */
		snprintf(name, sizeof(name), "%s-f%u", self->name, n);
		r = fl_fence_fd_create(tl, n + 1, name, &fence);
		if (r < 0) {
			fail(self, "fl_fence_fd_create", r);
			break;
		}
		/* fl_send() borrows the fd: the compositor gets its own copy, we close ours. */
		r = fl_send(sock, &m, sizeof(m), &fence, 1);
		close(fence);
		if (r == -EPIPE) {
			fprintf(stderr, "pipeline-demo: %s: the compositor hung up at frame %u\n",
				self->name, n);
			break;
		}
		if (r < 0) {
			fail(self, "send to compositor", r);
			break;
		}

		sleep_until(m.start_ns + m.work_ns);
		r = fl_timeline_fd_inc(tl, 1);
		if (r < 0)
			fail(self, "fl_timeline_fd_inc", r);
	}
	if (r == 0)
		r = send_done(self, slow, 0);
	/*
	 * Every point has signalled, so closing the last copy of the timeline fd cannot fail a
	 * fence; the compositor's copies of our fences stay valid.
	 */
	close(tl);
	return r;
}

/* ---- compositor -------------------------------------------------------------------------- */

struct comp_frame {
	int parts[MAX_PRODUCERS]; /* the producers' fences; -1 once merged */
	unsigned int num_parts;
	int merged; /* -1 until every part is in */
	/* Our poll on @merged, told to the daemon (fencectl deadlocks and traces see it). */
	struct fl_wait_report wait;
	struct present_msg info;
};

/* Merge every producer's fence of @f into one; a fence merged with itself is a renamed copy. */
static int merge_parts(struct comp_frame *f, unsigned int producers, unsigned int n, int *ret_fd)
{
	char name[FL_NAME_MAX];
	int acc, next, r;

	snprintf(name, sizeof(name), "frame-%u", n);
	r = fl_fence_fd_merge(f->parts[0], f->parts[producers > 1 ? 1 : 0], name, 0, &acc);
	if (r < 0)
		return r;
	for (unsigned int i = 2; i < producers; i++) {
		r = fl_fence_fd_merge(acc, f->parts[i], name, 0, &next);
		close(acc);
		if (r < 0)
			return r;
		acc = next;
	}
	*ret_fd = acc;
	return 0;
}

static int compositor_receive(struct demo *d, struct child *self, struct comp_frame *ring,
			      unsigned int i, unsigned int *rx)
{
	struct render_msg m;
	struct comp_frame *f;
	unsigned int nfds;
	size_t len;
	int fd, r;

	r = fl_recv(d->render[i][1], &m, sizeof(m), &len, &fd, 1, &nfds);
	if (r == -ENOTCONN) {
		fprintf(stderr, "pipeline-demo: %s: %s hung up after %u of %u frames\n", self->name,
			d->children[i].name, rx[i], d->opt.frames);
		return r;
	}
	if (r < 0)
		return fail(self, "receive from a producer", r);
	if (nfds != 1 || len != sizeof(m) || m.frame != rx[i]) {
		if (nfds == 1)
			close(fd);
		return fail(self, "receive from a producer", -EPROTO);
	}

	f = &ring[m.frame % RING];
	f->parts[i] = fd;
	f->num_parts++;
	if (f->num_parts == 1 || m.start_ns < f->info.start_ns) {
		f->info.frame = m.frame;
		f->info.buffer = m.buffer;
		f->info.start_ns = m.start_ns;
	}
	if (m.start_ns + m.work_ns > f->info.last_start_ns + f->info.last_work_ns) {
		f->info.last = i;
		f->info.last_start_ns = m.start_ns;
		f->info.last_work_ns = m.work_ns;
	}
	rx[i]++;
	return 0;
}

/* Every producer has sent frame @n: merge, and announce our own fence for it to the display. */
static int compositor_queue(struct demo *d, struct child *self, int tl, struct comp_frame *f,
			    unsigned int n)
{
	char name[FL_NAME_MAX];
	int fence, r;

	r = merge_parts(f, d->opt.producers, n, &f->merged);
	/* The merged fence holds the points; the producers' fences can go. */
	for (unsigned int i = 0; i < d->opt.producers; i++) {
		close(f->parts[i]);
		f->parts[i] = -1;
	}
	if (r < 0) {
		f->merged = -1;
		return fail(self, "fl_fence_fd_merge", r);
	}

	snprintf(name, sizeof(name), "composed-f%u", n);
	r = fl_fence_fd_create(tl, n + 1, name, &fence);
	if (r < 0)
		return fail(self, "fl_fence_fd_create", r);
	r = fl_send(d->present[0], &f->info, sizeof(f->info), &fence, 1);
	close(fence);
	return r < 0 ? fail(self, "send to display", r) : 0;
}

static int compositor_main(struct demo *d, struct child *self)
{
	unsigned int producers = d->opt.producers, frames = d->opt.frames;
	unsigned int rx[MAX_PRODUCERS] = { 0 };
	unsigned int merged = 0, composed = 0;
	struct comp_frame ring[RING];
	int tl, r;

	for (unsigned int k = 0; k < RING; k++) {
		memset(&ring[k], 0, sizeof(ring[k]));
		ring[k].merged = -1;
		ring[k].wait.notify_fd = -1;
		for (unsigned int i = 0; i < MAX_PRODUCERS; i++)
			ring[k].parts[i] = -1;
	}
	r = fl_timeline_fd_create(self->name, 0, &tl);
	if (r < 0)
		return fail(self, "fl_timeline_fd_create", r);
	r = handshake(d, self);

	while (r == 0 && composed < frames) {
		struct pollfd pfd[MAX_PRODUCERS + 1];
		unsigned int who[MAX_PRODUCERS], n = 0;
		int ready;

		/* Read a producer only while its next frame fits in the ring. */
		for (unsigned int i = 0; i < producers; i++) {
			if (rx[i] < frames && rx[i] < composed + RING) {
				pfd[n] = (struct pollfd){ .fd = d->render[i][1], .events = POLLIN };
				who[n++] = i;
			}
		}
		/*
		 * And the merged fence of the oldest frame not composed yet, last: only it can
		 * complete first, since each producer's timeline signals in order.
		 */
		if (composed < merged) {
			struct comp_frame *f = &ring[composed % RING];

			pfd[n++] = (struct pollfd){ .fd = f->merged, .events = POLLIN };
			/* An event loop's wait on a fence, announced once per fence. */
			if (!f->wait.token && fl_fence_fd_get_status(f->merged) == FL_STATUS_ACTIVE)
				fl_fence_fd_wait_begin(f->merged, -1, 0, &f->wait);
		}

		ready = poll(pfd, n, (int)(d->opt.timeout_s * 1000));
		if (ready <= 0) {
			r = fail(self, "poll", ready < 0 ? -errno : -ETIME);
			break;
		}
		alarm(d->opt.timeout_s);

		for (unsigned int k = 0; r == 0 && k < n; k++) {
			struct comp_frame *f = &ring[composed % RING];

			if (!pfd[k].revents)
				continue;
			if (composed == merged || k + 1 < n) {
				r = compositor_receive(d, self, ring, who[k], rx);
				continue;
			}
			/* Every buffer of the frame is rendered. A failed point fails the frame. */
			fl_fence_fd_wait_end(&f->wait, 1);
			r = fl_fence_fd_get_status(f->merged);
			if (r != FL_STATUS_SIGNALED) {
				r = fail(self, "a producer's fence", r < 0 ? r : -EPROTO);
				break;
			}
			sleep_until(demo_now_ns() + COMPOSE_NS);
			r = fl_timeline_fd_inc(tl, 1);
			if (r < 0) {
				fail(self, "fl_timeline_fd_inc", r);
				break;
			}
			close(f->merged);
			f->merged = -1;
			f->num_parts = 0;
			memset(&f->info, 0, sizeof(f->info));
			composed++;
		}

		while (r == 0 && merged < frames) {
			unsigned int i = 0;

			while (i < producers && rx[i] > merged)
				i++;
			if (i < producers)
				break;
			r = compositor_queue(d, self, tl, &ring[merged % RING], merged);
			merged++;
		}
	}
	if (r == 0)
		r = send_done(self, composed, 0);

	for (unsigned int k = 0; k < RING; k++) {
		fl_fence_fd_wait_end(&ring[k].wait, -ECANCELED);
		if (ring[k].merged >= 0)
			close(ring[k].merged);
		for (unsigned int i = 0; i < MAX_PRODUCERS; i++)
			if (ring[k].parts[i] >= 0)
				close(ring[k].parts[i]);
	}
	close(tl);
	return r;
}

/* ---- display ----------------------------------------------------------------------------- */

struct disp_frame {
	struct present_msg info;
	int fence;
	uint64_t ready_ns;
};

static int report(struct demo *d, struct child *self, const struct disp_frame *f, enum fate fate,
		  uint64_t vsync, uint32_t newest)
{
	struct ctl_msg m = {
		.type = CTL_FRAME,
		.frame = f->info.frame,
		.buffer = f->info.buffer,
		.fate = fate,
		.vsync = (uint32_t)vsync,
		.count = newest,
		.last = f->info.last,
		.start_ns = f->info.start_ns,
		.ready_ns = f->ready_ns,
		.flip_ns = d->t0_ns + vsync * d->period_ns,
		.last_start_ns = f->info.last_start_ns,
		.last_work_ns = f->info.last_work_ns,
	};
	int r = ctl_send(self->ctl[1], &m);

	return r < 0 ? fail(self, "report", r) : 0;
}

/*
 * Vsync @vsync: frames shown..received-1 are queued and those below @vsync are due. The
 * compositor signals in frame order, so the ready frames are a prefix of the queue; the newest of
 * them goes on screen and the older ones are dropped unseen. Hardware latches at the vsync
 * itself, so a fence that signalled after it, while we were still waking up, has missed it.
 */
static int latch(struct demo *d, struct child *self, struct disp_frame *ring, uint64_t vsync,
		 unsigned int *shown, unsigned int received, unsigned int *repeats, int flips,
		 struct screen *screen)
{
	uint64_t vsync_ns = d->t0_ns + vsync * d->period_ns;
	unsigned int due = received < vsync ? received : (unsigned int)vsync;
	struct pollfd pfd[RING];
	unsigned int first = *shown, end = first;
	int r;

	for (unsigned int n = first; n < due; n++)
		pfd[n - first] = (struct pollfd){ .fd = ring[n % RING].fence, .events = POLLIN };
	/* "Which fences have signalled?" is a zero-timeout poll: no call into the library. */
	if (due > first && poll(pfd, due - first, 0) < 0)
		return fail(self, "poll", -errno);

	for (; end < due; end++) {
		struct disp_frame *f = &ring[end % RING];
		struct fl_fence_info info;

		if (!pfd[end - first].revents)
			break;
		/* Readable: completed. Its info says how, and when. */
		r = fl_fence_fd_get_info(f->fence, &info, NULL, 0);
		if (r < 0)
			return fail(self, "fl_fence_fd_get_info", r);
		if (info.status < 0) {
			fprintf(stderr, "pipeline-demo: %s: frame %u failed: %s\n", self->name, end,
				strerror(-info.status));
			return info.status;
		}
		if (info.timestamp_ns > vsync_ns)
			break;
		f->ready_ns = info.timestamp_ns;
	}

	if (end == first && first < (vsync < d->opt.frames ? vsync : d->opt.frames))
		(*repeats)++;
	/* One step of the display timeline per flip: traces show frames as its values. */
	if (end > first && (r = fl_timeline_fd_inc(flips, 1)) < 0)
		return fail(self, "fl_timeline_fd_inc", r);
	for (unsigned int n = first; n < end; n++) {
		struct disp_frame *f = &ring[n % RING];

		if (n + 1 < end)
			r = report(d, self, f, FATE_DROPPED, vsync, end - 1);
		else
			r = report(d, self, f, vsync == n + 1 ? FATE_ON_TIME : FATE_LATE, vsync, n);
		close(f->fence);
		f->fence = -1;
		if (r < 0)
			return r;
	}
	/* The frame that went on screen, with the frames it overtook. */
	if (screen && end > first &&
	    (r = screen_show(screen, end - 1, vsync != end, end - 1 - first)) < 0)
		return fail(self, "show the frame", r);
	*shown = end;
	return 0;
}

static int display_main(struct demo *d, struct child *self)
{
	unsigned int frames = d->opt.frames, received = 0, shown = 0, repeats = 0;
	struct disp_frame ring[RING];
	struct screen *screen = NULL;
	uint64_t vsync = 0;
	int r, flips;

	for (unsigned int k = 0; k < RING; k++)
		ring[k].fence = -1;
	/* Connect now: the first vsync should not pay for it. Only the fences' info needs it. */
	r = fl_daemon_connect();
	if (r < 0)
		return fail(self, "fl_daemon_connect", r);
	r = fl_timeline_fd_create("display", 0, &flips);
	if (r < 0)
		return fail(self, "fl_timeline_fd_create", r);
	/* Before the handshake: the vsync clock starts only once the output is ready. */
	if (d->opt.display && (r = screen_open(d->opt.producers, &screen)) < 0) {
		close(flips);
		return fail(self, "open the display (--display)", r);
	}
	r = handshake(d, self);

	while (r == 0 && shown < frames) {
		uint64_t deadline = d->t0_ns + (vsync + 1) * d->period_ns, now, passed;

		/* Until the next vsync, take in whatever the compositor queues. */
		while (r == 0 && (now = demo_now_ns()) < deadline) {
			struct pollfd pfd = { .fd = d->present[1], .events = POLLIN };
			struct timespec left = to_timespec(deadline - now);
			bool room = received < frames && received < shown + RING;
			struct disp_frame *f = &ring[received % RING];
			unsigned int nfds;
			size_t len;

			if (ppoll(&pfd, room ? 1 : 0, &left, NULL) <= 0 || !room)
				continue;
			r = fl_recv(d->present[1], &f->info, sizeof(f->info), &len, &f->fence, 1,
				    &nfds);
			if (r == -ENOTCONN) {
				fprintf(stderr,
					"pipeline-demo: %s: the compositor hung up after %u of %u "
					"frames\n",
					self->name, received, frames);
				break;
			}
			if (r < 0) {
				fail(self, "receive from the compositor", r);
				break;
			}
			if (nfds != 1 || len != sizeof(f->info) || f->info.frame != received) {
				if (nfds == 1)
					close(f->fence);
				f->fence = -1;
				r = fail(self, "receive from the compositor", -EPROTO);
				break;
			}
			/*
			 * Frame n is due at vsync n + 1: say so, as a compositor tells a
			 * GPU driver (SYNC_IOC_SET_DEADLINE); traces show who missed it.
			 */
			r = fl_fence_fd_set_deadline(f->fence, d->t0_ns + (uint64_t)(received + 1) *
										  d->period_ns);
			if (r < 0) {
				fail(self, "fl_fence_fd_set_deadline", r);
				break;
			}
			received++;
			alarm(d->opt.timeout_s);
		}
		if (r < 0)
			break;

		/* On a loaded machine (or under valgrind) whole vsyncs can pass unseen. */
		passed = (demo_now_ns() - d->t0_ns) / d->period_ns;
		vsync = passed > vsync + 1 ? passed : vsync + 1;
		r = latch(d, self, ring, vsync, &shown, received, &repeats, flips, screen);
	}
	if (r == 0)
		r = send_done(self, repeats, (uint32_t)vsync);
	for (unsigned int k = 0; k < RING; k++)
		if (ring[k].fence >= 0)
			close(ring[k].fence);
	close(flips);
	if (screen) {
		unsigned int posted, skipped;

		screen_counts(screen, &posted, &skipped);
		if (!d->opt.quiet)
			printf("screen: %u frames posted to the display, %u skipped (the output "
			       "had "
			       "not let go of the buffer)\n",
			       posted, skipped);
		screen_close(screen);
	}
	return r;
}

/* ---- main: fork, watch, report ----------------------------------------------------------- */

static void close_pair(int pair[2])
{
	for (int k = 0; k < 2; k++) {
		if (pair[k] >= 0)
			close(pair[k]);
		pair[k] = -1;
	}
}

/*
 * In a new child: keep only the ends of the sockets @self uses. Every process must close the ends
 * it does not use, or a peer's death would never show up as EOF.
 */
static void child_close_others(struct demo *d, struct child *self)
{
	unsigned int producers = d->opt.producers;

	for (unsigned int c = 0; c < d->num_children; c++) {
		close(d->children[c].ctl[0]);
		if (&d->children[c] != self)
			close(d->children[c].ctl[1]);
	}
	for (unsigned int i = 0; i < producers; i++) {
		if (!(self->role == ROLE_PRODUCER && self->index == i))
			close(d->render[i][0]);
		if (self->role != ROLE_COMPOSITOR)
			close(d->render[i][1]);
	}
	if (self->role != ROLE_COMPOSITOR)
		close(d->present[0]);
	if (self->role != ROLE_DISPLAY)
		close(d->present[1]);
}

static int child_run(struct demo *d, struct child *self, pid_t parent)
{
	int r;

	/* Die with main, whatever kills it; main does the reporting. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Named after its stage: fencectl and traces show processes by name. */
	prctl(PR_SET_NAME, self->name);
	if (getppid() != parent)
		return 1;
	signal(SIGINT, SIG_IGN);
	alarm(d->opt.timeout_s);
	child_close_others(d, self);

	switch (self->role) {
	case ROLE_PRODUCER:
		r = producer_main(d, self);
		break;
	case ROLE_COMPOSITOR:
		r = compositor_main(d, self);
		break;
	default:
		r = display_main(d, self);
		break;
	}
	/* Hang up: the next stage (or main) sees EOF only once we have said everything. */
	if (self->role == ROLE_PRODUCER)
		close(d->render[self->index][0]);
	for (unsigned int i = 0; self->role == ROLE_COMPOSITOR && i < d->opt.producers; i++)
		close(d->render[i][1]);
	if (self->role == ROLE_COMPOSITOR)
		close(d->present[0]);
	if (self->role == ROLE_DISPLAY)
		close(d->present[1]);
	close(self->ctl[1]);
	return r < 0 ? 1 : 0;
}

static int make_pair(int pair[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0 ? -errno : 0;
}

/* Make every socket, then fork every stage. Children never return from here. */
static int spawn(struct demo *d)
{
	pid_t self = getpid();
	int r;

	for (unsigned int c = 0; c < d->num_children; c++) {
		r = make_pair(d->children[c].ctl);
		if (r < 0)
			return r;
	}
	for (unsigned int i = 0; i < d->opt.producers; i++) {
		r = make_pair(d->render[i]);
		if (r < 0)
			return r;
	}
	r = make_pair(d->present);
	if (r < 0)
		return r;

	fflush(stdout);
	fflush(stderr);
	for (unsigned int c = 0; c < d->num_children; c++) {
		struct child *ch = &d->children[c];

		ch->pid = fork();
		if (ch->pid < 0) {
			ch->pid = 0;
			return -errno;
		}
		if (ch->pid == 0)
			exit(child_run(d, ch, self));
		close(ch->ctl[1]);
		ch->ctl[1] = -1;
	}
	for (unsigned int i = 0; i < d->opt.producers; i++)
		close_pair(d->render[i]);
	close_pair(d->present);
	return 0;
}

struct results {
	unsigned int count[FATE_DROPPED + 1];
	double *latency_ms; /* frame start -> flip, every shown frame */
	unsigned int num_latency;
	double *ready_ms; /* frame start -> composition fence signalled, every frame */
	unsigned int num_ready;
	unsigned int slow[MAX_PRODUCERS];
	unsigned int repeats;
	unsigned int vsyncs;
	uint64_t end_ns;
};

static void print_frame(struct demo *d, struct results *res, const struct ctl_msg *m)
{
	double ready = (double)(int64_t)(m->ready_ns - m->start_ns) / NS_PER_MS;
	double latency = (double)(int64_t)(m->flip_ns - m->start_ns) / NS_PER_MS;
	uint64_t grid_ns = d->t0_ns + m->frame * d->period_ns;
	double behind = (double)(int64_t)(m->last_start_ns - grid_ns) / NS_PER_MS;

	if (m->fate > FATE_DROPPED)
		return;
	res->count[m->fate]++;
	res->ready_ms[res->num_ready++] = ready;
	if (m->fate != FATE_DROPPED)
		res->latency_ms[res->num_latency++] = latency;
	if (d->opt.quiet)
		return;

	printf("frame %4u  buf %u  ready %6.2f ms  ", m->frame, m->buffer, ready);
	if (m->fate == FATE_ON_TIME) {
		printf("latency %6.2f ms  on time\n", latency);
		return;
	}
	if (m->fate == FATE_DROPPED)
		printf("DROPPED for frame %u at vsync %u", m->count, m->vsync);
	else
		printf("latency %6.2f ms  LATE by %u vsync", latency, m->vsync - m->frame - 1);
	/* Why: the producer that finished last started behind the grid, or rendered too long. */
	printf(" (%s", d->children[m->last].name);
	if (behind >= 1.0)
		printf(" %.1f ms behind,", behind);
	printf(" rendered %.1f ms)\n", (double)m->last_work_ns / NS_PER_MS);
}

static const char *describe_exit(int status, char *buf, size_t cap)
{
	if (WIFEXITED(status))
		snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, cap, "was killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)),
			 WTERMSIG(status) == SIGALRM ? ": its watchdog expired" : "");
	else
		snprintf(buf, cap, "stopped");
	return buf;
}

/*
 * Watch the children until each has finished and hung up. Return: 0, or -1 after a failure
 * (already reported on stderr).
 */
static int watch(struct demo *d, struct results *res)
{
	unsigned int live = d->num_children, ready = 0;

	while (live > 0) {
		struct pollfd pfd[MAX_CHILDREN];
		unsigned int who[MAX_CHILDREN], n = 0;
		int r;

		for (unsigned int c = 0; c < d->num_children; c++) {
			if (d->children[c].hung_up)
				continue;
			pfd[n] = (struct pollfd){ .fd = d->children[c].ctl[0], .events = POLLIN };
			who[n++] = c;
		}
		r = poll(pfd, n, (int)(d->opt.timeout_s * 1000));
		if (r < 0 && errno == EINTR && interrupted) {
			fprintf(stderr, "pipeline-demo: interrupted\n");
			return -1;
		}
		if (r < 0) {
			perror("pipeline-demo: poll");
			return -1;
		}
		if (r == 0) {
			fprintf(stderr, "pipeline-demo: no progress for %u s; still waiting for:",
				d->opt.timeout_s);
			for (unsigned int k = 0; k < n; k++)
				fprintf(stderr, " %s", d->children[who[k]].name);
			fprintf(stderr, "\n");
			return -1;
		}

		for (unsigned int k = 0; k < n; k++) {
			struct child *ch = &d->children[who[k]];
			struct ctl_msg m;
			size_t len;

			if (!pfd[k].revents)
				continue;
			r = fl_recv(ch->ctl[0], &m, sizeof(m), &len, NULL, 0, NULL);
			if (r == -ENOTCONN || r == -ECONNRESET) {
				ch->hung_up = true;
				live--;
				if (!ch->done)
					return -1; /* it has said why on stderr, or its status will */
				continue;
			}
			if (r == 0 && len != sizeof(m))
				r = -EPROTO;
			if (r < 0) {
				fprintf(stderr, "pipeline-demo: from %s: %s\n", ch->name,
					strerror(-r));
				return -1;
			}
			switch (m.type) {
			case CTL_READY:
				/* Vsync 0 a little ahead, so that every stage is waiting for it. */
				if (++ready < d->num_children)
					break;
				m = (struct ctl_msg){ .type = CTL_START,
						      .t0_ns = demo_now_ns() + 20000000u };
				d->t0_ns = m.t0_ns;
				for (unsigned int c = 0; c < d->num_children; c++) {
					r = ctl_send(d->children[c].ctl[0], &m);
					if (r < 0) {
						fprintf(stderr, "pipeline-demo: start %s: %s\n",
							d->children[c].name, strerror(-r));
						return -1;
					}
				}
				break;
			case CTL_FRAME:
				if (m.vsync > res->vsyncs)
					res->vsyncs = m.vsync;
				print_frame(d, res, &m);
				fflush(stdout);
				break;
			case CTL_DONE:
				ch->done = true;
				if (ch->role == ROLE_PRODUCER)
					res->slow[ch->index] = m.count;
				if (ch->role == ROLE_DISPLAY) {
					res->repeats = m.count;
					res->vsyncs = m.vsync;
					res->end_ns = demo_now_ns();
				}
				break;
			default:
				fprintf(stderr, "pipeline-demo: from %s: bad message %u\n",
					ch->name, m.type);
				return -1;
			}
		}
	}
	return 0;
}

enum stop {
	STOP_NONE, /* every child has finished: wait for it */
	STOP_FAILED, /* give the others a moment to fail by themselves and say why, then kill */
	STOP_NOW, /* interrupted: kill at once, no reports */
};

/* A child that failed for a reason of its own: say how it ended. */
static bool collect(struct child *ch, int status, enum stop how)
{
	char buf[128];

	ch->reaped = true;
	if (status == 0)
		return true;
	if (how != STOP_NOW && !(ch->killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
		fprintf(stderr, "pipeline-demo: %s (pid %d) %s\n", ch->name, (int)ch->pid,
			describe_exit(status, buf, sizeof(buf)));
	return false;
}

/* Reap every child, stopping them first as @how says. Return: whether each exited with 0. */
static bool reap(struct demo *d, enum stop how)
{
	uint64_t grace_end = demo_now_ns() + (how == STOP_FAILED ? GRACE_NS : 0);
	bool ok = true, killed = false;

	for (;;) {
		unsigned int left = 0;

		for (unsigned int c = 0; c < d->num_children; c++) {
			struct child *ch = &d->children[c];
			int status;
			pid_t r;

			if (ch->pid <= 0 || ch->reaped)
				continue;
			r = waitpid(ch->pid, &status, how == STOP_NONE || killed ? 0 : WNOHANG);
			if (r < 0 && errno == EINTR) {
				left++;
				continue;
			}
			if (r < 0)
				ok = collect(ch, -1, how) && ok;
			else if (r > 0)
				ok = collect(ch, status, how) && ok;
			else
				left++;
		}
		if (!left)
			return ok;
		if (!killed && demo_now_ns() >= grace_end) {
			for (unsigned int c = 0; c < d->num_children; c++) {
				struct child *ch = &d->children[c];

				if (ch->pid <= 0 || ch->reaped)
					continue;
				if (how == STOP_FAILED)
					fprintf(stderr, "pipeline-demo: stopping %s (pid %d)\n",
						ch->name, (int)ch->pid);
				kill(ch->pid, SIGKILL);
				ch->killed = true;
			}
			killed = true;
		} else if (!killed) {
			sleep_until(demo_now_ns() + 10000000u);
		}
	}
}

/* Whether the daemon we started with still runs (a killed one may linger as a zombie). */
static bool daemon_alive(int pid)
{
	char path[64], buf[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* "pid (comm) S ...": the state follows the last ')'. */
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile; sorts @v. */
static double percentile(double *v, unsigned int n, double p)
{
	size_t rank;

	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), compare_double);
	rank = (size_t)ceil(p / 100.0 * n);
	return v[rank ? rank - 1 : 0];
}

static void print_summary(struct demo *d, struct results *res)
{
	uint64_t end_ns = res->end_ns ? res->end_ns : demo_now_ns();
	unsigned int done =
		res->count[FATE_ON_TIME] + res->count[FATE_LATE] + res->count[FATE_DROPPED];

	printf("%ssummary: %u of %u frames in %.2f s, %u vsyncs at %u Hz\n",
	       d->opt.quiet ? "" : "\n", done, d->opt.frames,
	       d->t0_ns && end_ns > d->t0_ns ? (double)(end_ns - d->t0_ns) / 1e9 : 0.0, res->vsyncs,
	       d->opt.hz);
	printf("  shown %u (on time %u, late %u), dropped %u; %u vsync(s) repeated a frame\n",
	       res->count[FATE_ON_TIME] + res->count[FATE_LATE], res->count[FATE_ON_TIME],
	       res->count[FATE_LATE], res->count[FATE_DROPPED], res->repeats);
	printf("  latency (producer start -> flip):    p50 %6.2f ms  p99 %6.2f ms\n",
	       percentile(res->latency_ms, res->num_latency, 50),
	       percentile(res->latency_ms, res->num_latency, 99));
	printf("  ready   (producer start -> composed): p50 %6.2f ms  p99 %6.2f ms\n",
	       percentile(res->ready_ms, res->num_ready, 50),
	       percentile(res->ready_ms, res->num_ready, 99));
	printf("  slow renders:");
	for (unsigned int i = 0; i < d->opt.producers; i++)
		printf("%s %s %u", i ? "," : "", d->children[i].name, res->slow[i]);
	printf("\n  processes: %u (main %d", d->num_children + 1, (int)getpid());
	for (unsigned int c = 0; c < d->num_children; c++)
		printf(", %s %d", d->children[c].name, (int)d->children[c].pid);
	printf("), fencelined pid %d\n", d->daemon_pid);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: pipeline-demo [options]\n"
		"  --frames N      frames to show (default 60)\n"
		"  --producers N   producer processes, 1-%u (default 2: camera, gpu-render)\n"
		"  --hz N          display refresh rate (default 60)\n"
		"  --jank P        probability that a producer overruns a frame (default 0.05)\n"
		"  --seed N        random seed (default: from the clock)\n"
		"  --timeout S     give up after S seconds without progress (default 10)\n"
		"  --display CHOICE  also show every flipped frame on a display: auto, virtual,\n"
		"                  window, terminal[:TTY] or kms[:CARD] (docs/display.md)\n"
		"  --quiet         print only the summary\n",
		MAX_PRODUCERS);
}

static int parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "frames", required_argument, NULL, 'f' },
		{ "producers", required_argument, NULL, 'p' },
		{ "hz", required_argument, NULL, 'z' },
		{ "jank", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "display", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, index;

	*opt = (struct options){
		.frames = 60,
		.producers = 2,
		.hz = 60,
		.jank = 0.05,
		.seed = (unsigned int)(demo_now_ns() ^ (uint64_t)getpid()),
		.timeout_s = 10,
	};
	while ((c = getopt_long(argc, argv, "", longopts, &index)) != -1) {
		bool ok = true;

		switch (c) {
		case 'f':
			ok = demo_parse_uint(optarg, 1, MAX_FRAMES, &opt->frames);
			break;
		case 'p':
			ok = demo_parse_uint(optarg, 1, MAX_PRODUCERS, &opt->producers);
			break;
		case 'z':
			ok = demo_parse_uint(optarg, 1, 1000, &opt->hz);
			break;
		case 'j':
			ok = demo_parse_double(optarg, 0, 1, &opt->jank);
			break;
		case 's':
			ok = demo_parse_uint(optarg, 0, UINT32_MAX, &opt->seed);
			break;
		case 't':
			ok = demo_parse_uint(optarg, 1, 3600, &opt->timeout_s);
			break;
		case 'q':
			opt->quiet = true;
			break;
		case 'd':
			if (demo_option_display(optarg, &opt->display) < 0)
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			/* getopt_long() has already said what was wrong. */
			fputs("Try 'pipeline-demo --help'.\n", stderr);
			return -EINVAL;
		}
		if (!ok) {
			char what[64];

			snprintf(what, sizeof(what), "bad value for --%s:", longopts[index].name);
			return demo_usage_error(what, optarg);
		}
	}
	if (optind < argc)
		return demo_usage_error("unexpected argument", argv[optind]);
	return 0;
}

static void setup_children(struct demo *d)
{
	unsigned int kinds = sizeof(producer_kinds) / sizeof(producer_kinds[0]);

	for (unsigned int i = 0; i < d->opt.producers; i++) {
		struct child *ch = &d->children[d->num_children++];

		ch->role = ROLE_PRODUCER;
		ch->index = i;
		if (i < kinds) {
			snprintf(ch->name, sizeof(ch->name), "%s", producer_kinds[i].name);
			ch->work_ms = producer_kinds[i].work_ms;
		} else {
			snprintf(ch->name, sizeof(ch->name), "producer-%u", i);
			ch->work_ms = 5.0;
		}
	}
	d->children[d->num_children].role = ROLE_COMPOSITOR;
	snprintf(d->children[d->num_children++].name, FL_NAME_MAX, "compositor");
	d->children[d->num_children].role = ROLE_DISPLAY;
	snprintf(d->children[d->num_children++].name, FL_NAME_MAX, "display");
	for (unsigned int c = 0; c < MAX_CHILDREN; c++)
		d->children[c].ctl[0] = d->children[c].ctl[1] = -1;
	for (unsigned int i = 0; i < MAX_PRODUCERS; i++)
		d->render[i][0] = d->render[i][1] = -1;
	d->present[0] = d->present[1] = -1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigint };
	struct results res = { 0 };
	struct demo d = { 0 };
	int fds_before, fds_after, r;
	bool ok;

	if (parse_options(argc, argv, &d.opt) < 0)
		return 2;
	d.period_ns = NS_PER_S / d.opt.hz;
	setup_children(&d);
	sigaction(SIGINT, &sa, NULL);

	/*
	 * Fences made in one process and merged in another must live in the daemon, whatever
	 * FENCELINE_MODE says. Pay the daemon's start-up here, and learn its pid; every child
	 * connects on its own.
	 */
	fl_mode_set(FL_MODE_DAEMON);
	d.daemon_pid = fl_daemon_connect();
	if (d.daemon_pid < 0) {
		fprintf(stderr, "pipeline-demo: cannot reach fencelined: %s\n",
			strerror(-d.daemon_pid));
		return 1;
	}
	fds_before = demo_count_fds();

	if (!d.opt.quiet)
		printf("pipeline-demo: %u frames, %u producer(s), %u Hz (%.2f ms), jank %.0f%%, "
		       "seed %u, fencelined pid %d\n\n",
		       d.opt.frames, d.opt.producers, d.opt.hz, (double)d.period_ns / NS_PER_MS,
		       d.opt.jank * 100, d.opt.seed, d.daemon_pid);

	r = spawn(&d);
	if (r < 0)
		fprintf(stderr, "pipeline-demo: starting the stages: %s\n", strerror(-r));
	/* Only now: forked stages would not free them (valgrind's leak check runs in them too). */
	if (r == 0) {
		res.latency_ms = calloc(d.opt.frames, sizeof(double));
		res.ready_ms = calloc(d.opt.frames, sizeof(double));
		if (!res.latency_ms || !res.ready_ms) {
			fprintf(stderr, "pipeline-demo: out of memory\n");
			r = -ENOMEM;
		}
	}
	if (r == 0)
		r = watch(&d, &res);
	ok = reap(&d, r == 0 ? STOP_NONE : interrupted ? STOP_NOW : STOP_FAILED) && r == 0;

	for (unsigned int c = 0; c < d.num_children; c++)
		close_pair(d.children[c].ctl);
	for (unsigned int i = 0; i < MAX_PRODUCERS; i++)
		close_pair(d.render[i]);
	close_pair(d.present);
	fds_after = demo_count_fds();
	if (fds_after != fds_before) {
		fprintf(stderr, "pipeline-demo: %d fd(s) open at the start, %d at the end\n",
			fds_before, fds_after);
		ok = false;
	}

	print_summary(&d, &res);
	free(res.latency_ms);
	free(res.ready_ms);
	if (!ok && !interrupted && !daemon_alive(d.daemon_pid))
		fprintf(stderr, "pipeline-demo: fencelined (pid %d) is gone\n", d.daemon_pid);
	if (!ok && !interrupted)
		fprintf(stderr, "pipeline-demo: FAILED\n");
	return interrupted ? 130 : ok ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo - a compositor-style frame pipeline on fenceline's native API
 *
 * Producer threads stand in for GPU clients. Each owns a sw_sync timeline and, for every frame,
 * hands out a fence at the timeline's next value *before* it renders (wait-before-signal, as a
 * GPU driver returns an out-fence at submit time), then "renders" with a randomised sleep around
 * --budget-ms (with probability --jank it overruns the whole frame period) and advances its
 * timeline. A compositor thread merges the producers' fences of each frame into one fence. A
 * display thread ticks at --hz on absolute CLOCK_MONOTONIC deadlines; at each vblank it polls the
 * merged fences' fds with a zero timeout and scans out the newest frame whose fence has
 * signalled. Nothing ever waits for a late frame: the screen keeps showing the previous one.
 *
 * Pacing is done with fences as well. The display timeline counts vblanks, and a producer starts
 * frame n by waiting on a fence at value n of it, so frame n is kicked off by vblank n and is due
 * at vblank n + 1.
 *
 * Per frame it prints the render latency (vblank n to the merged fence's signal timestamp), how
 * long the finished frame then waited for scanout, and whether it made its vblank; a summary with
 * percentiles follows. --dump prints fl_debug_dump() at the end and at every vblank whose frame
 * is not ready; SIGUSR1 asks for one at the next vblank; SIGINT stops early and still cleans up.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#define MAX_FRAMES    100000u
#define MAX_PRODUCERS 16u
#define NS_PER_MS     1000000.0

struct options {
	unsigned int frames;
	unsigned int producers;
	unsigned int hz;
	double budget_ms;
	double jank;
	unsigned int seed;
	bool dump;
};

enum frame_fate {
	FRAME_PENDING,
	FRAME_ON_TIME,
	FRAME_LATE,
	FRAME_DROPPED,
	FRAME_FAILED,
};

struct frame {
	/* Written by producers, read by the compositor, under pipeline.lock. */
	struct fl_fence **parts; /* one per producer, owned; NULL until submitted */
	unsigned int num_parts;
	/* Written by the compositor under pipeline.lock; owned by the display once set. */
	struct fl_fence *merged;
	/* Display thread only. */
	uint64_t kickoff_ns; /* the vblank that started it */
	uint64_t signal_ns; /* when its merged fence completed */
	int status;
	enum frame_fate fate;
};

struct stats {
	unsigned int count[FRAME_FAILED + 1];
	unsigned int repeats;
	double *render_ms; /* kickoff -> merged fence signalled, every completed frame */
	unsigned int num_render;
	double *wait_ms; /* signalled -> scanned out, every displayed frame */
	unsigned int num_wait;
	uint64_t vblanks;
	uint64_t end_ns;
};

struct pipeline {
	const struct options *opt;
	uint64_t period_ns;
	uint64_t t0_ns;

	struct fl_timeline *display;
	struct fl_timeline *gpu[MAX_PRODUCERS];

	pthread_mutex_t lock;
	pthread_cond_t cond; /* a frame got all its parts, or stop was set */
	bool stop;
	bool failed;
	bool interrupted;
	struct frame *frames;
	struct fl_fence **part_store;

	struct stats stats; /* display thread only until it is joined */
};

struct producer {
	struct pipeline *pl;
	unsigned int index;
	uint64_t rng;
	pthread_t thread;
};

/* Set from signal handlers, which only ever run in the display thread (see sleep_until()). */
static volatile sig_atomic_t dump_requested;
static volatile sig_atomic_t stop_requested;

static void on_sigusr1(int sig)
{
	dump_requested = 1;
}

static void on_sigint(int sig)
{
	stop_requested = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sigset_demo(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGINT);
}

/*
 * Absolute deadlines keep the vblank grid from drifting by the time each tick takes. The demo's
 * signals are blocked everywhere except here, so their handlers never interrupt a fenceline call
 * and every thread the library starts inherits a mask with them blocked.
 */
static void sleep_until(uint64_t deadline_ns, bool take_signals)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};
	sigset_t set;

	sigset_demo(&set);
	if (take_signals)
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	if (take_signals)
		pthread_sigmask(SIG_BLOCK, &set, NULL);
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

static uint64_t render_time_ns(const struct pipeline *pl, uint64_t *rng)
{
	if (rand_unit(rng) < pl->opt->jank)
		return pl->period_ns + (uint64_t)(rand_unit(rng) * 1.5 * (double)pl->period_ns);
	return (uint64_t)(pl->opt->budget_ms * NS_PER_MS * (0.75 + 0.5 * rand_unit(rng)));
}

static bool stopping(struct pipeline *pl)
{
	bool stop;

	pthread_mutex_lock(&pl->lock);
	stop = pl->stop;
	pthread_mutex_unlock(&pl->lock);
	return stop;
}

static void pipeline_stop(struct pipeline *pl)
{
	pthread_mutex_lock(&pl->lock);
	pl->stop = true;
	pthread_cond_broadcast(&pl->cond);
	pthread_mutex_unlock(&pl->lock);
}

static void pipeline_fail(struct pipeline *pl, const char *what, int r)
{
	fprintf(stderr, "pipeline-demo: %s: %s\n", what, strerror(-r));
	pthread_mutex_lock(&pl->lock);
	pl->failed = true;
	pthread_mutex_unlock(&pl->lock);
	pipeline_stop(pl);
}

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	struct pipeline *pl = p->pl;
	struct fl_timeline *gpu = pl->gpu[p->index];
	char name[FL_NAME_MAX];
	int r;

	for (unsigned int n = 0; n < pl->opt->frames && !stopping(pl); n++) {
		struct fl_fence *vsync, *done;

		snprintf(name, sizeof(name), "vsync-%u", n);
		r = fl_sw_sync_fence_create(pl->display, n, name, &vsync);
		if (r < 0) {
			pipeline_fail(pl, "vsync fence", r);
			break;
		}
		/* Fails with -ENOENT once main kills the display timeline to stop us. */
		r = fl_fence_wait(vsync, -1);
		fl_fence_unref(vsync);
		if (r < 0)
			break;

		snprintf(name, sizeof(name), "gpu%u-f%u", p->index, n);
		r = fl_sw_sync_fence_create(gpu, n + 1, name, &done);
		if (r < 0) {
			pipeline_fail(pl, "frame fence", r);
			break;
		}
		pthread_mutex_lock(&pl->lock);
		pl->frames[n].parts[p->index] = done;
		if (++pl->frames[n].num_parts == pl->opt->producers)
			pthread_cond_broadcast(&pl->cond);
		pthread_mutex_unlock(&pl->lock);

		sleep_until(now_ns() + render_time_ns(pl, &p->rng), false);

		r = fl_sw_sync_timeline_inc(gpu, 1);
		if (r < 0) {
			pipeline_fail(pl, "signal", r);
			break;
		}
	}
	return NULL;
}

static int compose(struct pipeline *pl, unsigned int n, struct fl_fence **parts)
{
	unsigned int producers = pl->opt->producers;
	struct fl_fence *acc, *next;
	char name[FL_NAME_MAX];
	int r;

	snprintf(name, sizeof(name), "frame-%u", n);
	/* A fence merged with itself is a renamed copy, so one producer needs no special case. */
	r = fl_fence_merge(parts[0], parts[producers > 1 ? 1 : 0], name, 0, &acc);
	if (r < 0)
		return r;
	for (unsigned int i = 2; i < producers; i++) {
		r = fl_fence_merge(acc, parts[i], name, 0, &next);
		fl_fence_unref(acc);
		if (r < 0)
			return r;
		acc = next;
	}
	pthread_mutex_lock(&pl->lock);
	pl->frames[n].merged = acc;
	pthread_mutex_unlock(&pl->lock);
	return 0;
}

static void *compositor_main(void *arg)
{
	struct pipeline *pl = arg;
	struct fl_fence *parts[MAX_PRODUCERS];
	unsigned int producers = pl->opt->producers;
	int r;

	for (unsigned int n = 0; n < pl->opt->frames; n++) {
		struct frame *f = &pl->frames[n];

		pthread_mutex_lock(&pl->lock);
		while (f->num_parts < producers && !pl->stop)
			pthread_cond_wait(&pl->cond, &pl->lock);
		if (f->num_parts < producers) {
			pthread_mutex_unlock(&pl->lock);
			break;
		}
		memcpy(parts, f->parts, producers * sizeof(parts[0]));
		memset(f->parts, 0, producers * sizeof(parts[0]));
		pthread_mutex_unlock(&pl->lock);

		/* The merged fence holds the points; the producers' own fences can go. */
		r = compose(pl, n, parts);
		for (unsigned int i = 0; i < producers; i++)
			fl_fence_unref(parts[i]);
		if (r < 0) {
			pipeline_fail(pl, "merge", r);
			break;
		}
	}
	return NULL;
}

/*
 * Whether frame @f had completed by @vblank_ns: 1 signalled, 0 not (or not composed yet), < 0
 * the fence's error. Hardware latches at the vblank itself, so a fence that signalled after it,
 * while this thread was still waking up, has missed it.
 */
static int frame_check(struct pipeline *pl, struct frame *f, uint64_t vblank_ns)
{
	struct fl_fence *merged;
	struct pollfd pfd = { .events = POLLIN };
	struct fl_fence_info info;
	int r;

	pthread_mutex_lock(&pl->lock);
	merged = f->merged;
	pthread_mutex_unlock(&pl->lock);
	if (!merged)
		return 0;

	/*
	 * The fd is what a real display driver would hand to its event loop; polling it with a zero
	 * timeout is the "has it signalled?" question. It is the fence's own fd, so it is made once
	 * and closed with the fence.
	 */
	pfd.fd = fl_fence_get_fd(merged);
	if (pfd.fd < 0)
		return pfd.fd;
	r = poll(&pfd, 1, 0);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	/* The fence's timestamp is when its last point signalled, taken by the signalling thread. */
	r = fl_fence_get_info(merged, &info, NULL, 0);
	if (r < 0)
		return r;
	if (info.status == FL_STATUS_ACTIVE || info.timestamp_ns > vblank_ns)
		return 0;
	f->signal_ns = info.timestamp_ns;
	return info.status;
}

static void print_dump(const char *why)
{
	char *text;
	int r = fl_debug_dump(&text, NULL);

	if (r < 0) {
		fprintf(stderr, "pipeline-demo: fl_debug_dump: %s\n", strerror(-r));
		return;
	}
	printf("---- fenceline dump (%s) ----\n%s---- end of dump ----\n", why, text);
	free(text);
}

static void resolve(struct pipeline *pl, unsigned int n, enum frame_fate fate, uint64_t scanout_ns,
		    uint64_t vblank)
{
	struct frame *f = &pl->frames[n];
	struct stats *st = &pl->stats;
	struct fl_fence *merged;
	double render_ms, wait_ms;

	pthread_mutex_lock(&pl->lock);
	merged = f->merged;
	f->merged = NULL;
	pthread_mutex_unlock(&pl->lock);
	fl_fence_unref(merged);

	f->fate = fate;
	st->count[fate]++;
	render_ms = (double)((int64_t)(f->signal_ns - f->kickoff_ns)) / NS_PER_MS;
	st->render_ms[st->num_render++] = render_ms;
	printf("frame %5u  render %6.2f ms  ", n, render_ms);

	switch (fate) {
	case FRAME_ON_TIME:
	case FRAME_LATE:
		wait_ms = (double)((int64_t)(scanout_ns - f->signal_ns)) / NS_PER_MS;
		st->wait_ms[st->num_wait++] = wait_ms;
		if (fate == FRAME_ON_TIME)
			printf("scanout +%6.2f ms  on time\n", wait_ms);
		else
			printf("scanout +%6.2f ms  LATE by %" PRIu64 " vblank(s)\n", wait_ms,
			       vblank - n - 1);
		break;
	case FRAME_DROPPED:
		printf("dropped: a newer frame was ready at the same vblank\n");
		break;
	default:
		printf("FAILED: %s\n", strerror(-f->status));
		break;
	}
}

/*
 * Frames next..due-1 have been kicked off and are due. Each producer signals its points in
 * order, so if frame k has signalled, every earlier frame has too: the ready frames are a prefix,
 * and the newest of them is what goes on screen. Older ready frames never get shown (dropped).
 */
static void latch(struct pipeline *pl, uint64_t vblank, unsigned int *next, int *shown)
{
	uint64_t vblank_ns = pl->t0_ns + vblank * pl->period_ns;
	unsigned int due = vblank < pl->opt->frames ? (unsigned int)vblank : pl->opt->frames;
	unsigned int end = *next;
	int newest = -1;

	for (; end < due; end++) {
		struct frame *f = &pl->frames[end];

		f->status = frame_check(pl, f, vblank_ns);
		if (f->status == 0)
			break;
		if (f->status > 0)
			newest = (int)end;
	}

	for (unsigned int n = *next; n < end; n++) {
		if (pl->frames[n].status < 0)
			resolve(pl, n, FRAME_FAILED, vblank_ns, vblank);
		else if ((int)n < newest)
			resolve(pl, n, FRAME_DROPPED, vblank_ns, vblank);
		else
			resolve(pl, n, n + 1 == vblank ? FRAME_ON_TIME : FRAME_LATE, vblank_ns,
				vblank);
	}
	if (newest >= 0)
		*shown = newest;

	if (end < due) {
		if (newest < 0) {
			pl->stats.repeats++;
			printf("vblank %5" PRIu64 ": frame %u not ready, still showing ", vblank,
			       end);
			if (*shown < 0)
				printf("nothing\n");
			else
				printf("frame %d\n", *shown);
		}
		if (pl->opt->dump)
			print_dump("a frame missed its vblank");
	}
	*next = end;
}

static void *display_main(void *arg)
{
	struct pipeline *pl = arg;
	unsigned int frames = pl->opt->frames;
	unsigned int next = 0;
	uint64_t vblank = 0;
	int shown = -1;
	int r;

	while (next < frames && !stopping(pl)) {
		uint64_t now, v;

		sleep_until(pl->t0_ns + (vblank + 1) * pl->period_ns, true);
		now = now_ns();
		if (stop_requested) {
			printf("pipeline-demo: interrupted\n");
			pthread_mutex_lock(&pl->lock);
			pl->interrupted = true;
			pthread_mutex_unlock(&pl->lock);
			pipeline_stop(pl);
			break;
		}
		/* On a loaded machine (or under valgrind) whole vblanks can pass unseen. */
		v = (now - pl->t0_ns) / pl->period_ns;
		if (v <= vblank)
			v = vblank + 1;

		latch(pl, v, &next, &shown);
		if (dump_requested) {
			dump_requested = 0;
			print_dump("SIGUSR1");
		}

		/*
		 * Kick off the frames of the vblanks that just passed. Their clock starts at the
		 * vblank, not now: this thread's wake-up delay is part of their latency.
		 */
		for (uint64_t k = vblank + 1; k <= v && k < frames; k++)
			pl->frames[k].kickoff_ns = pl->t0_ns + k * pl->period_ns;
		r = fl_sw_sync_timeline_inc(pl->display, v - vblank);
		if (r < 0) {
			pipeline_fail(pl, "vblank", r);
			break;
		}
		vblank = v;
	}
	pl->stats.vblanks = vblank;
	pl->stats.end_ns = now_ns();
	fflush(stdout);
	return NULL;
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

static void print_summary(struct pipeline *pl)
{
	struct stats *st = &pl->stats;
	uint64_t end_ns = st->end_ns ? st->end_ns : now_ns();
	unsigned int done = 0;

	for (int i = FRAME_ON_TIME; i <= FRAME_FAILED; i++)
		done += st->count[i];
	printf("\nsummary: %u of %u frames in %.2f s, %" PRIu64
	       " vblanks at %u Hz, %u producer(s)\n",
	       done, pl->opt->frames, (double)(end_ns - pl->t0_ns) / 1e9, st->vblanks, pl->opt->hz,
	       pl->opt->producers);
	printf("  on time %u, late %u, dropped %u, failed %u; %u vblank(s) repeated a frame\n",
	       st->count[FRAME_ON_TIME], st->count[FRAME_LATE], st->count[FRAME_DROPPED],
	       st->count[FRAME_FAILED], st->repeats);
	printf("  render  (vblank -> fence signalled):  p50 %6.2f ms  p99 %6.2f ms\n",
	       percentile(st->render_ms, st->num_render, 50),
	       percentile(st->render_ms, st->num_render, 99));
	printf("  scanout (signalled -> on screen):     p50 %6.2f ms  p99 %6.2f ms\n",
	       percentile(st->wait_ms, st->num_wait, 50),
	       percentile(st->wait_ms, st->num_wait, 99));
}

static int pipeline_init(struct pipeline *pl, const struct options *opt)
{
	char name[FL_NAME_MAX];
	int r;

	memset(pl, 0, sizeof(*pl));
	pl->opt = opt;
	pl->period_ns = 1000000000u / opt->hz;
	pthread_mutex_init(&pl->lock, NULL);
	pthread_cond_init(&pl->cond, NULL);

	pl->frames = calloc(opt->frames, sizeof(*pl->frames));
	pl->part_store = calloc((size_t)opt->frames * opt->producers, sizeof(*pl->part_store));
	pl->stats.render_ms = calloc(opt->frames, sizeof(double));
	pl->stats.wait_ms = calloc(opt->frames, sizeof(double));
	if (!pl->frames || !pl->part_store || !pl->stats.render_ms || !pl->stats.wait_ms)
		return -ENOMEM;
	for (unsigned int n = 0; n < opt->frames; n++)
		pl->frames[n].parts = &pl->part_store[(size_t)n * opt->producers];

	r = fl_sw_sync_timeline_create("display", 0, &pl->display);
	if (r < 0)
		return r;
	for (unsigned int i = 0; i < opt->producers; i++) {
		snprintf(name, sizeof(name), "gpu%u", i);
		r = fl_sw_sync_timeline_create(name, 0, &pl->gpu[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Safe on a half-built pipeline: every pointer is NULL or owned. */
static void pipeline_finish(struct pipeline *pl)
{
	for (unsigned int n = 0; pl->frames && n < pl->opt->frames; n++) {
		if (!pl->frames[n].parts)
			break;
		fl_fence_unref(pl->frames[n].merged);
		for (unsigned int i = 0; i < pl->opt->producers; i++)
			fl_fence_unref(pl->frames[n].parts[i]);
	}
	for (unsigned int i = 0; i < MAX_PRODUCERS; i++)
		fl_timeline_unref(pl->gpu[i]);
	fl_timeline_unref(pl->display);
	free(pl->stats.render_ms);
	free(pl->stats.wait_ms);
	free(pl->part_store);
	free(pl->frames);
	pthread_cond_destroy(&pl->cond);
	pthread_mutex_destroy(&pl->lock);
}

static int run(struct pipeline *pl)
{
	const struct options *opt = pl->opt;
	struct producer producers[MAX_PRODUCERS];
	pthread_t display, compositor;
	unsigned int started = 0;
	int r;

	pl->t0_ns = now_ns();
	pl->frames[0].kickoff_ns = pl->t0_ns;

	r = -pthread_create(&compositor, NULL, compositor_main, pl);
	if (r < 0)
		return r;
	for (; started < opt->producers; started++) {
		struct producer *p = &producers[started];

		p->pl = pl;
		p->index = started;
		p->rng = opt->seed * 0x100000001b3ull + started;
		r = -pthread_create(&p->thread, NULL, producer_main, p);
		if (r < 0)
			break;
	}
	if (r == 0)
		r = -pthread_create(&display, NULL, display_main, pl);
	if (r == 0)
		pthread_join(display, NULL);

	/*
	 * After a normal run every producer is past its last vsync wait. After an early stop some
	 * may still be blocked in one: killing the display timeline fails their vsync fences with
	 * -ENOENT. fl_timeline_destroy() consumes a handle, so give it a new one and keep ours.
	 */
	if (stopping(pl) || r < 0) {
		pipeline_stop(pl);
		fl_timeline_destroy(fl_timeline_ref(pl->display));
	}
	for (unsigned int i = 0; i < started; i++)
		pthread_join(producers[i].thread, NULL);
	pipeline_stop(pl);
	pthread_join(compositor, NULL);
	return r;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: pipeline-demo [options]\n"
		"  --frames N      frames to show (default 120)\n"
		"  --producers N   producer (GPU) threads, 1-%u (default 3)\n"
		"  --hz N          display refresh rate (default 60)\n"
		"  --budget-ms N   typical render time per frame (default 8)\n"
		"  --jank P        probability that a producer overruns a frame (default 0.03)\n"
		"  --seed N        random seed (default: from the clock)\n"
		"  --dump          print the fenceline dump at the end and at every missed vblank\n"
		"SIGUSR1 prints the dump at the next vblank; SIGINT stops early.\n",
		MAX_PRODUCERS);
}

static bool parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return false;
	*ret = (unsigned int)v;
	return true;
}

static bool parse_double(const char *s, double min, double max, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		return false;
	*ret = v;
	return true;
}

static int parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "frames", required_argument, NULL, 'f' },
		{ "producers", required_argument, NULL, 'p' },
		{ "hz", required_argument, NULL, 'z' },
		{ "budget-ms", required_argument, NULL, 'b' },
		{ "jank", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, 's' },
		{ "dump", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, index;

	*opt = (struct options){
		.frames = 120,
		.producers = 3,
		.hz = 60,
		.budget_ms = 8,
		.jank = 0.03,
		.seed = (unsigned int)(now_ns() ^ (uint64_t)getpid()),
	};
	while ((c = getopt_long(argc, argv, "", longopts, &index)) != -1) {
		bool ok = true;

		switch (c) {
		case 'f':
			ok = parse_uint(optarg, 1, MAX_FRAMES, &opt->frames);
			break;
		case 'p':
			ok = parse_uint(optarg, 1, MAX_PRODUCERS, &opt->producers);
			break;
		case 'z':
			ok = parse_uint(optarg, 1, 1000, &opt->hz);
			break;
		case 'b':
			ok = parse_double(optarg, 0, 10000, &opt->budget_ms);
			break;
		case 'j':
			ok = parse_double(optarg, 0, 1, &opt->jank);
			break;
		case 's':
			ok = parse_uint(optarg, 0, UINT32_MAX, &opt->seed);
			break;
		case 'd':
			opt->dump = true;
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
			fprintf(stderr, "pipeline-demo: bad value '%s' for --%s\n", optarg,
				longopts[index].name);
			fputs("Try 'pipeline-demo --help'.\n", stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pipeline-demo: unexpected argument '%s'\n", argv[optind]);
		fputs("Try 'pipeline-demo --help'.\n", stderr);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	struct options opt;
	struct pipeline pl;
	sigset_t set;
	int r;

	if (parse_options(argc, argv, &opt) < 0)
		return 2;

	/* Block before any thread exists, so every thread (the library's too) inherits it. */
	sigset_demo(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sa.sa_handler = on_sigusr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);

	r = pipeline_init(&pl, &opt);
	if (r < 0) {
		fprintf(stderr, "pipeline-demo: setup: %s\n", strerror(-r));
		pipeline_finish(&pl);
		return 1;
	}
	printf("pipeline-demo: %u frames, %u producer(s), %u Hz (%.2f ms), budget %.1f ms, "
	       "jank %.0f%%, seed %u\n",
	       opt.frames, opt.producers, opt.hz, (double)pl.period_ns / NS_PER_MS, opt.budget_ms,
	       opt.jank * 100, opt.seed);
	printf("pipeline-demo: kill -USR1 %d prints the fence dump\n\n", (int)getpid());
	fflush(stdout);

	r = run(&pl);
	if (r < 0)
		fprintf(stderr, "pipeline-demo: starting threads: %s\n", strerror(-r));
	if (opt.dump)
		print_dump("end of run");
	print_summary(&pl);
	if (r < 0 || pl.failed)
		r = 1;
	else if (pl.interrupted)
		r = 130;
	pipeline_finish(&pl);
	return r;
}

/* SPDX-License-Identifier: MIT */
/*
 * A pipeline-demo producer (producer.h). Each frame it dequeues a slot, waits for the slot's
 * release fence (the compositor's, or the hardware composer's present fence when the buffer was
 * on an overlay), queues the buffer at once with an acquire fence that is a point of its own
 * timeline, and only then does the frame's work and signals the point: as a camera's ISP or a
 * GPU does, so the compositor latches a buffer only when its fence says it is written.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>
#include <fenceline/fenceline.h>

#include "app-gl.h"
#include "producer.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int fail(const struct producer_opts *o, const char *what, int r)
{
	fprintf(stderr, "pipeline-demo: %s: %s: %s\n", o->geom.name, what, strerror(-r));
	return r;
}

struct mapping {
	uint8_t *map;
	size_t len;
};

static void unmap(struct mapping *m)
{
	if (m->map)
		munmap(m->map, m->len);
	m->map = NULL;
}

/* xorshift: the same --seed gives the same slow frames in every run. */
static double rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return (double)*s / 4294967296.0;
}

int producer_run(const struct producer_opts *o)
{
	struct mapping maps[FL_BUFFERQUEUE_MAX_SLOTS] = { 0 };
	struct fl_bufferqueue_producer *p = NULL;
	/* The gralloc role: each producer asks for memory its own device can write. */
	static const char *const usage[SCENE_LAYERS] = { "camera", "video-decode", "gpu-render",
							 "cpu" };
	struct fl_bufferqueue_request req = { o->geom.w, o->geom.h, o->geom.fourcc,
					      usage[o->layer] };
	uint64_t period = (uint64_t)(1e9 / (o->geom.hz * o->rate_scale));
	uint32_t seed = o->seed * 2654435761u + (uint32_t)o->layer * 40503u + 1;
	unsigned int queued = 0, slow = 0, failed = 0;
	struct app_gl *gl = NULL;
	int tl = -1, r;

	r = fl_bufferqueue_producer_connect(o->path, &p);
	if (r < 0)
		return fail(o, "connecting to its queue", r);
	r = fl_timeline_fd_create(o->geom.name, 0, &tl);
	if (r < 0) {
		fl_bufferqueue_producer_destroy(p);
		return fail(o, "fl_timeline_fd_create", r);
	}
	if (o->layer == SCENE_APP) {
		char why[160] = "--no-gl";

		if (o->gl && app_gl_open(o->geom.w, o->geom.h, &gl, why, sizeof(why)) == 0)
			printf("app: %s\n", app_gl_describe(gl));
		else
			printf("app: drawn on the CPU (pattern_app_argb): %s\n", why);
		fflush(stdout);
	}
	for (uint32_t frame = 0;; frame++) {
		uint64_t due = o->t0_ns + frame * period, value;
		struct fl_bufferqueue_dequeued d;
		struct fl_bufferqueue_queue_info qi = { 0 };
		struct mapping *m;
		bool jank = o->jank > 0 && rnd(&seed) < o->jank;
		char name[32];
		int fence;

		if (due >= o->end_ns)
			break;
		sleep_until(due);
		alarm(o->timeout_s);
		r = fl_bufferqueue_producer_dequeue(p, &req, 1000 * (int)o->timeout_s, &d);
		if (r < 0) {
			fail(o, "dequeue", r);
			break;
		}
		m = &maps[d.slot];
		if (d.flags & (FL_BUFFERQUEUE_BUFFER_NEW | FL_BUFFERQUEUE_BUFFER_REALLOCATED))
			unmap(m);
		if (!m->map) {
			m->len = d.buffer->size;
			m->map = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED,
				      d.buffer->fd, 0);
			if (m->map == MAP_FAILED) {
				m->map = NULL;
				r = fail(o, "mmap", -errno);
				fl_bufferqueue_producer_cancel(p, d.slot, d.release_fence_fd);
				if (d.release_fence_fd >= 0)
					close(d.release_fence_fd);
				break;
			}
		}
		/* The slot may still be read by the display: write nothing before its release. */
		if (d.release_fence_fd >= 0) {
			r = fl_fence_fd_wait(d.release_fence_fd, 1000 * (int)o->timeout_s);
			close(d.release_fence_fd);
			if (r < 0 && r != -EIO) {
				fail(o, "waiting for the release fence", r);
				break;
			}
		}
		r = fl_timeline_fd_get_value(tl, &value);
		if (r < 0) {
			fail(o, "fl_timeline_fd_get_value", r);
			break;
		}
		snprintf(name, sizeof(name), "%s-%u", o->geom.name, frame);
		r = fl_fence_fd_create(tl, value + 1, name, &fence);
		if (r < 0) {
			fail(o, "fl_fence_fd_create", r);
			break;
		}
		qi.desired_present_ns = 0;
		r = fl_bufferqueue_producer_queue(p, d.slot, fence, &qi, NULL);
		close(fence);
		if (r < 0) {
			fail(o, "queue", r);
			break;
		}
		queued++;
		/*
		 * Item 7's test mode: a buffer on screen while written would show this. It stays a
		 * quarter of a period before the picture, so that captures would catch it.
		 */
		if (o->poison) {
			scene_draw(o->layer, frame, d.buffer, m->map, true);
			sleep_until(now_ns() + period / 4);
		}
		if (o->reset_at >= 0 && frame == (uint64_t)o->reset_at) {
			/*
			 * This frame's work hangs; three periods later the app's context is reset
			 * with it in flight: its pending point fails with -EIO, and the timeline (and
			 * the app) go on with the next frame.
			 */
			sleep_until(now_ns() + period * 3);
			r = fl_timeline_fd_fail_pending(tl, -EIO);
			if (r < 0) {
				fail(o, "fl_timeline_fd_fail_pending", r);
				break;
			}
			failed += (unsigned int)r;
			/* Making a new context takes time too: two more periods. */
			sleep_until(now_ns() + period * 2);
			printf("%s: context reset at frame %u: %d pending frame(s) failed with "
			       "EIO\n",
			       o->geom.name, frame, r);
			fflush(stdout);
			continue;
		}
		if (jank) {
			/* A slow frame: the work takes two to three frame periods. */
			sleep_until(now_ns() + period * 2 +
				    (uint64_t)(rnd(&seed) * (double)period));
			slow++;
		}
		if (gl) {
			r = app_gl_draw(gl, frame, (uint32_t *)(m->map + d.buffer->offsets[0]),
					d.buffer->pitches[0]);
			if (r < 0) {
				fail(o, "drawing with GL", r);
				break;
			}
		} else {
			scene_draw(o->layer, frame, d.buffer, m->map, false);
		}
		/* The acquire fence: the buffer holds the whole frame now. */
		r = fl_timeline_fd_inc(tl, 1);
		if (r < 0) {
			fail(o, "fl_timeline_fd_inc", r);
			break;
		}
	}
	alarm(o->timeout_s);
	if (!o->quiet)
		printf("%s: %u frames queued, %u slow, %u failed by a reset\n", o->geom.name,
		       queued, slow, failed);
	fflush(stdout);
	for (unsigned int i = 0; i < FL_BUFFERQUEUE_MAX_SLOTS; i++)
		unmap(&maps[i]);
	app_gl_close(gl);
	fl_timeline_fd_close(tl);
	fl_bufferqueue_producer_destroy(p);
	return r < 0 ? r : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The display service through the native API (docs/display.md, "The
 * service"): fl-displayd started on first use in the test's private runtime
 * directory, with the built-in phone device, a client of the test's
 * fencelined. libadf's test assertions (spec adf-ion.md §1.16), the fence
 * order of posts, vsync pacing, hotplug, TEST_ONLY, a client that dies and
 * a hostile one.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>
#include <fenceline/shared.h>
#include <sys/stat.h>

#include "disp-fixture.h"
#include "helpers.h"
#include "runner.h"

FL_TEST(adf_devices_and_data)
{
	struct disp d;
	struct fl_display_device_data dd = { 0 };
	struct fl_display_interface_data id = { 0 };
	struct fl_display_engine_data ed = { 0 };
	struct fl_display_error e = { 0 };

	disp_open(&d);
	fl_assert_int_eq(fl_display_device_get_data(d.dev, &dd, NULL), 0);
	fl_assert(dd.n_attachments < FL_DISPLAY_MAX_ATTACHMENTS);
	fl_assert(dd.n_allowed >= 1);
	fl_assert(dd.custom_data_size < FL_DISPLAY_MAX_CUSTOM_DATA);
	fl_assert_int_eq(fl_display_interface_get_data(d.intf, &id, NULL), 0);
	fl_assert(id.dpms_state <= FL_DISPLAY_DPMS_OFF);
	fl_assert_int_eq(id.hotplug_detect, 1);
	fl_assert(id.n_modes >= 1);
	fl_assert_int_eq(fl_display_engine_get_data(d.eng, &ed, NULL), 0);
	fl_assert(ed.n_formats >= 1 && ed.n_formats < FL_DISPLAY_MAX_FORMATS);
	/* ADF's two-call rule: room above the maximum is -EINVAL, said why. */
	dd.n_attachments = FL_DISPLAY_MAX_ATTACHMENTS + 1;
	dd.attachments = calloc(FL_DISPLAY_MAX_ATTACHMENTS + 1, sizeof(*dd.attachments));
	fl_assert_int_eq(fl_display_device_get_data(d.dev, &dd, &e), -EINVAL);
	fl_assert(strstr(e.msg, "attachments"));
	free(dd.attachments);
	disp_close(&d);
}

FL_TEST(adf_blank)
{
	struct disp d;
	struct fl_display_error e = { 0 };

	disp_open(&d);
	fl_assert_int_eq(fl_display_blank(d.intf, 255, &e), -EINVAL);
	fl_assert(e.msg[0]);
	fl_assert_int_eq(fl_display_blank(d.eng, FL_DISPLAY_DPMS_OFF, NULL), -EINVAL);
	/* Interfaces start OFF (ADF's): OFF again is -EBUSY. */
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_OFF, NULL), -EBUSY);
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_ON, NULL), -EBUSY);
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_OFF, NULL), 0);
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_OFF, NULL), -EBUSY);
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(dpms_of(d.intf), FL_DISPLAY_DPMS_ON);
	disp_close(&d);
}

FL_TEST(adf_event)
{
	struct disp d;
	struct fl_display_event *ev;
	uint64_t ts[2];

	disp_open(&d);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_TYPE_MAX, 1, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_TYPE_MAX, 0, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_set_event(d.eng, FL_DISPLAY_EVENT_VSYNC, 1, NULL), -EOPNOTSUPP);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), -EALREADY);
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(fl_display_read_event(d.intf, &ev), 0);
		fl_assert_int_eq(ev->type, FL_DISPLAY_EVENT_VSYNC);
		fl_assert_int_eq(ev->length, sizeof(struct fl_display_vsync_event));
		ts[i] = ((struct fl_display_vsync_event *)ev)->timestamp;
		free(ev);
	}
	fl_assert(ts[1] > ts[0]);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 0, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 0, NULL), -EALREADY);
	disp_close(&d);
}

FL_TEST(adf_attach)
{
	struct disp d;
	struct fl_display_error e = { 0 };
	int r;

	disp_open(&d);
	r = fl_display_attach(d.dev, d.eng_id, d.intf_id, NULL);
	fl_assert(r == 0 || r == -EALREADY);
	fl_assert_int_eq(fl_display_attach(d.dev, d.eng_id, d.intf_id, &e), -EALREADY);
	fl_assert(strstr(e.msg, "already"));
	fl_assert_int_eq(fl_display_detach(d.dev, d.eng_id, d.intf_id, NULL), 0);
	fl_assert_int_eq(fl_display_detach(d.dev, d.eng_id, d.intf_id, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_attach(d.dev, d.eng_id, 1024, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_detach(d.dev, d.eng_id, 1024, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_attach(d.intf, d.eng_id, d.intf_id, NULL), -EINVAL);
	disp_close(&d);
}

FL_TEST(adf_simple_buffer_alloc)
{
	struct disp d;
	uint32_t off, pitch;
	int fd = -1;

	disp_open(&d);
	fl_assert_int_eq(fl_display_simple_buffer_alloc(d.intf, d.mode.hdisplay, d.mode.vdisplay,
							XR24, &fd, &off, &pitch, NULL),
			 0);
	fl_assert(pitch >= 4u * d.mode.hdisplay);
	close(fd);
	fl_assert_int_eq(fl_display_simple_buffer_alloc(d.intf, d.mode.hdisplay, d.mode.vdisplay,
							0xDEADBEEF, &fd, &off, &pitch, NULL),
			 -EINVAL);
	disp_close(&d);
}

FL_TEST(adf_simple_buffer_post)
{
	struct disp d;
	struct fl_display_buffer b;
	int fence = -1, fd;

	disp_open(&d);
	fd = simple_buffer(&d, 0xff0000ffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_RELEASE, &fence, NULL),
			 0);
	fl_assert(fence >= 0);
	close(fence);
	close(fd);
	disp_close(&d);
}

/* libadf's simple_buffer_v2: RELEASE does not signal alone, PRESENT does, NONE is -1. */
FL_TEST(post_fence_order_release_present_none)
{
	struct disp d;
	struct fl_display_buffer b[2];
	struct fl_display_stats st;
	int fd[2], f1 = -1, f2 = -1, f3 = 7;

	disp_open(&d);
	fd[0] = simple_buffer(&d, 0x00ff00ffu, &b[0]);
	fd[1] = simple_buffer(&d, 0x0000ffffu, &b[1]);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b[0], FL_DISPLAY_FENCE_RELEASE, &f1, NULL),
			 0);
	fl_assert(f1 >= 0);
	/* Post 1 on screen: its buffers stay there until post 2 is, so nothing released them. */
	do
		fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	while (st.flipped < 1);
	fl_assert_int_eq(fl_fence_fd_get_status(f1), 0);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b[1], FL_DISPLAY_FENCE_PRESENT, &f2, NULL),
			 0);
	fl_assert(f2 >= 0);
	fl_assert_int_eq(fl_fence_fd_wait(f2, 10000), 0);
	/* Post 2 is on screen: post 1 has left it. */
	fl_assert_int_eq(fl_fence_fd_get_status(f1), 1);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b[0], FL_DISPLAY_FENCE_NONE, &f3, NULL),
			 0);
	fl_assert_int_eq(f3, -1);
	close(f1);
	close(f2);
	close(fd[0]);
	close(fd[1]);
	disp_close(&d);
}

/* Waits for @n vsync events of @d's interface (subscribed). */
static void vsyncs(struct disp *d, int n)
{
	for (int i = 0; i < n; i++) {
		struct fl_display_event *ev;

		fl_assert_int_eq(fl_display_read_event(d->intf, &ev), 0);
		free(ev);
	}
}

FL_TEST(post_buffers_released_only_when_the_next_post_is_on_screen)
{
	struct disp d;
	struct fl_display_buffer b[2];
	struct fl_display_stats st;
	struct fl_display_post p = { 0 };
	int fd[2], rel1 = -1, pres2 = -1, tl = -1, acq = -1;

	disp_open(&d);
	fd[0] = simple_buffer(&d, 0x112233ffu, &b[0]);
	fd[1] = simple_buffer(&d, 0x445566ffu, &b[1]);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	p.intfs = &d.intf_id;
	p.n_intfs = 1;
	p.bufs = &b[0];
	p.n_bufs = 1;
	p.fence_type = FL_DISPLAY_FENCE_RELEASE;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &rel1, NULL), 0);
	/* Post 2 waits for an acquire fence of ours. */
	fl_assert_int_eq(fl_timeline_fd_create("acquire", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "acquire", &acq), 0);
	b[1].acquire_fence = acq;
	p.bufs = &b[1];
	p.fence_type = FL_DISPLAY_FENCE_PRESENT;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &pres2, NULL), 0);
	/* Vsyncs come and go; post 2 cannot flip, so post 1 is not released. */
	vsyncs(&d, 4);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(st.queued, 1);
	fl_assert_int_eq(st.on_screen_buffers, 1);
	fl_assert_int_eq(fl_fence_fd_get_status(rel1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(pres2), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pres2, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(rel1), 1);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(st.queued, 0);
	close(acq);
	fl_timeline_fd_close(tl);
	close(rel1);
	close(pres2);
	close(fd[0]);
	close(fd[1]);
	disp_close(&d);
}

FL_TEST(post_with_a_failed_acquire_fence_is_not_shown)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_stats st0, st;
	int fd, tl = -1, acq = -1, pres = -1;

	disp_open(&d);
	fd = simple_buffer(&d, 0x778899ffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st0, NULL), 0);
	fl_assert_int_eq(fl_timeline_fd_create("doomed", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "doomed", &acq), 0);
	b.acquire_fence = acq;
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_PRESENT, &pres, NULL),
			 0);
	/* The timeline dies with its last fd: its fence fails. */
	fl_assert_int_eq(fl_timeline_fd_close(tl), 0);
	do {
		fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	} while (st.queued);
	fl_assert_int_eq(st.dropped, st0.dropped + 1);
	fl_assert_int_eq(st.fence_failures, st0.fence_failures + 1);
	fl_assert_int_eq(st.flipped, st0.flipped);
	close(acq);
	close(pres);
	close(fd);
	disp_close(&d);
}

FL_TEST_TIMEOUT(vsync_events_pace_at_the_mode_period, 60)
{
	struct disp d;
	uint64_t ts[300], period;
	size_t single = 0;

	disp_open(&d);
	attach_and_light(&d);
	/* The mode's exact period: htotal × vtotal / clock. */
	period = (uint64_t)d.mode.htotal * d.mode.vtotal * 1000000u / d.mode.clock;
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	for (size_t i = 0; i < 300; i++) {
		struct fl_display_event *ev;

		fl_assert_int_eq(fl_display_read_event(d.intf, &ev), 0);
		fl_assert_int_eq(ev->type, FL_DISPLAY_EVENT_VSYNC);
		ts[i] = ((struct fl_display_vsync_event *)ev)->timestamp;
		free(ev);
	}
	for (size_t i = 1; i < 300; i++) {
		uint64_t dt = ts[i] - ts[i - 1], k = (dt + period / 2) / period;

		fl_assert(ts[i] > ts[i - 1]);
		fl_assert(k >= 1);
		/* Within 0.5% of a whole number of periods (a busy loop skips frames, never drifts). */
		fl_assert(dt * 1000 >= k * period * 995 && dt * 1000 <= k * period * 1005);
		single += k == 1;
	}
	fl_assert(single * 10 >= 299 * 9);
	disp_close(&d);
}

/* A fence's completion time, as fl_fence_fd_get_info() reports it. */
static uint64_t fence_stamp(int fd)
{
	struct fl_fence_info info;
	struct fl_sync_pt_info pt;

	fl_assert_int_eq(fl_fence_fd_get_info(fd, &info, &pt, 1), 1);
	fl_assert_int_eq(info.status, 1);
	fl_assert_int_eq(pt.timestamp_ns, info.timestamp_ns);
	return info.timestamp_ns;
}

/*
 * Reads @d's vsync events until one after @after: whether one of them
 * is at @ts, and none between @queued and @ts (the flip's is the first
 * vsync after the post was queued, by @queued at the latest, when the
 * queue was empty; UINT64_MAX: not checked).
 */
static bool flipped_at_vsync(struct disp *d, uint64_t queued, uint64_t ts, uint64_t after)
{
	bool seen = false, earlier = false;
	uint64_t v = 0;

	while (v <= after) {
		struct fl_display_event *ev;

		fl_assert_int_eq(fl_display_read_event(d->intf, &ev), 0);
		fl_assert_int_eq(ev->type, FL_DISPLAY_EVENT_VSYNC);
		v = ((struct fl_display_vsync_event *)ev)->timestamp;
		free(ev);
		seen |= v == ts;
		earlier |= v > queued && v < ts;
	}
	return seen && !earlier;
}

FL_TEST(present_and_release_fences_carry_the_flip_s_vsync_time)
{
	struct disp d;
	struct fl_display_buffer b[2];
	int fd[2], rel = -1, pres = -1, pres2 = -1;
	uint64_t t, queued, ts;

	disp_open(&d);
	fd[0] = simple_buffer(&d, 0x00ff00ffu, &b[0]);
	fd[1] = simple_buffer(&d, 0x0000ffffu, &b[1]);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);

	/* Post 1 with its release fence, then post 2 with its present fence. */
	fl_assert_int_eq(
		fl_display_simple_post(d.intf, &b[0], FL_DISPLAY_FENCE_RELEASE, &rel, NULL), 0);
	t = fl_test_now_ns();
	fl_assert_int_eq(
		fl_display_simple_post(d.intf, &b[1], FL_DISPLAY_FENCE_PRESENT, &pres, NULL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pres, 10000), 0);
	ts = fence_stamp(pres);
	fl_assert(ts > t);
	/* Post 2's flip released post 1: one vsync, the same time. */
	fl_assert_int_eq(fence_stamp(rel), ts);
	/* Post 1 may have taken the first vsync after post 2 was queued. */
	fl_assert(flipped_at_vsync(&d, UINT64_MAX, ts, ts));

	/* A third post, flipped while nobody looked at post 2's fence: each keeps its own vsync. */
	fl_assert_int_eq(
		fl_display_simple_post(d.intf, &b[0], FL_DISPLAY_FENCE_PRESENT, &pres2, NULL), 0);
	queued = fl_test_now_ns();
	fl_assert_int_eq(fl_fence_fd_wait(pres2, 10000), 0);
	fl_assert(fence_stamp(pres2) > ts);
	fl_assert_int_eq(fence_stamp(pres), ts);
	fl_assert(flipped_at_vsync(&d, queued, fence_stamp(pres2), fence_stamp(pres2)));
	close(rel);
	close(pres);
	close(pres2);
	close(fd[0]);
	close(fd[1]);
	disp_close(&d);
}

/* The "ready_us" of the trace's flip event, in ns (the trace's µs with 3 decimals). */
static uint64_t traced_ready_ns(int trace_fd)
{
	char *text = fl_test_read_fd_text(trace_fd), *at;
	uint64_t us = 0, frac = 0;

	at = strstr(text, "\"name\":\"flip\"");
	fl_assert(at != NULL);
	at = strstr(at, "\"ready_us\":");
	fl_assert(at != NULL);
	fl_assert_int_eq(sscanf(at, "\"ready_us\":%" SCNu64 ".%" SCNu64, &us, &frac), 2);
	free(text);
	return us * 1000 + frac;
}

/*
 * A post is ready when its last acquire fence signalled, not when a loaded
 * service's loop (stopped here) got round to seeing it; and hardware
 * latches at the vsync itself: a post ready after a vsync's time never
 * shows at that vsync.
 */
FL_TEST(a_post_is_ready_when_its_fence_signalled_and_flips_after_that)
{
	struct disp d;
	struct fl_display_buffer b;
	int fd, tl = -1, acq = -1, pres = -1, trace = -1;
	uint64_t signalled, ready;
	pid_t svc;

	disp_open(&d);
	fd = simple_buffer(&d, 0x00ff00ffu, &b);
	attach_and_light(&d);
	svc = service_pid();
	fl_assert_int_eq(fl_timeline_fd_create("acquire", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "acq", &acq), 0);
	b.acquire_fence = acq;
	fl_assert_int_eq(fl_introspect_trace_start(0), 0);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_PRESENT, &pres, NULL),
			 0);
	/* The service sleeps through a vsync, the fence signals after it, then a few more pass. */
	fl_assert_int_eq(kill(svc, SIGSTOP), 0);
	usleep(40000);
	signalled = fl_test_now_ns();
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	usleep(40000);
	fl_assert_int_eq(kill(svc, SIGCONT), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pres, 10000), 0);
	fl_assert(fence_stamp(pres) > signalled);
	fl_assert_int_eq(fl_introspect_trace_stop(&trace), 0);
	ready = traced_ready_ns(trace);
	/* The fence's own time (within the inc's round trip), not the service's wake-up 40 ms on. */
	fl_assert(ready >= signalled && ready < signalled + 20000000u);
	close(trace);
	close(pres);
	close(acq);
	close(tl);
	close(fd);
	disp_close(&d);
}

/*
 * The virtual driver's frames event (docs/display.md): type 128 on the
 * device, after every 4th post it shows, with the count and its time.
 */
#define FRAMES_EVENT 128
#define FRAMES_EVERY 4

struct frames_event {
	struct fl_display_event base;
	uint64_t flips __attribute__((aligned(8)));
	uint64_t timestamp_ns;
};

FL_TEST(a_driver_event_reaches_the_handles_subscribed_to_it)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_handle *other;
	struct fl_display_event *ev;
	struct frames_event got[2];
	struct pollfd p;
	int fd, fence;

	disp_open(&d);
	fd = simple_buffer(&d, 0x00ff00ffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_device_open(0, &other), 0);
	/* ADF's errors: an object without driver events, a type the object lacks, twice. */
	fl_assert_int_eq(fl_display_set_event(d.eng, FRAMES_EVENT, 1, NULL), -EOPNOTSUPP);
	fl_assert_int_eq(fl_display_set_event(d.intf, FRAMES_EVENT, 1, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_set_event(d.dev, FL_DISPLAY_EVENT_VSYNC, 1, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_set_event(d.dev, FRAMES_EVENT + 1, 1, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_set_event(d.dev, FL_DISPLAY_EVENT_TYPE_MAX, 1, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_set_event(d.dev, FRAMES_EVENT, 0, NULL), -EALREADY);
	fl_assert_int_eq(fl_display_set_event(d.dev, FRAMES_EVENT, 1, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.dev, FRAMES_EVENT, 1, NULL), -EALREADY);
	/* Two events' worth of posts, each on screen before the next. */
	for (int i = 0; i < 2 * FRAMES_EVERY; i++) {
		fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_PRESENT,
							&fence, NULL),
				 0);
		fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
		close(fence);
	}
	for (int i = 0; i < 2; i++) {
		fl_assert_int_eq(fl_display_read_event(d.dev, &ev), 0);
		fl_assert_int_eq(ev->type, FRAMES_EVENT);
		fl_assert_int_eq(ev->length, sizeof(struct frames_event));
		memcpy(&got[i], ev, sizeof(got[i]));
		free(ev);
	}
	fl_assert_int_eq(got[0].flips % FRAMES_EVERY, 0);
	fl_assert_int_eq(got[1].flips, got[0].flips + FRAMES_EVERY);
	fl_assert(got[1].timestamp_ns > got[0].timestamp_ns);
	/* The handle that did not subscribe got nothing. */
	p = (struct pollfd){ .fd = fl_display_get_fd(other), .events = POLLIN };
	fl_assert_int_eq(poll(&p, 1, 0), 0);
	fl_assert_int_eq(fl_display_set_event(d.dev, FRAMES_EVENT, 0, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.dev, FRAMES_EVENT, 0, NULL), -EALREADY);
	fl_display_close(other);
	close(fd);
	disp_close(&d);
}

FL_TEST(hotplug_event_and_the_mode_list)
{
	struct disp d;
	struct fl_display_handle *hdmi;
	struct fl_display_interface_data id = { 0 };
	struct fl_display_event *ev;

	disp_open(&d);
	/* The default config's interface 1: an HDMI port, unplugged. */
	fl_assert_int_eq(fl_display_interface_open(d.dev, 1, &hdmi), 0);
	memset(&id, 0, sizeof(id)); /* the counts only: room for none */
	fl_assert_int_eq(fl_display_interface_get_data(hdmi, &id, NULL), 0);
	fl_assert_int_eq(id.hotplug_detect, 0);
	fl_assert_int_eq(id.n_modes, 0);
	fl_assert_int_eq(fl_display_set_event(hdmi, FL_DISPLAY_EVENT_HOTPLUG, 1, NULL), 0);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 0, NULL), -EALREADY);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 1, NULL), 0);
	fl_assert_int_eq(fl_display_read_event(hdmi, &ev), 0);
	fl_assert_int_eq(ev->type, FL_DISPLAY_EVENT_HOTPLUG);
	fl_assert_int_eq(ev->length, sizeof(struct fl_display_hotplug_event));
	fl_assert_int_eq(((struct fl_display_hotplug_event *)ev)->connected, 1);
	free(ev);
	memset(&id, 0, sizeof(id)); /* the counts only: room for none */
	fl_assert_int_eq(fl_display_interface_get_data(hdmi, &id, NULL), 0);
	fl_assert_int_eq(id.hotplug_detect, 1);
	fl_assert_int_eq(id.n_modes, 3);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 0, NULL), 0);
	fl_assert_int_eq(fl_display_read_event(hdmi, &ev), 0);
	fl_assert_int_eq(((struct fl_display_hotplug_event *)ev)->connected, 0);
	free(ev);
	memset(&id, 0, sizeof(id)); /* the counts only: room for none */
	fl_assert_int_eq(fl_display_interface_get_data(hdmi, &id, NULL), 0);
	fl_assert_int_eq(id.hotplug_detect, 0);
	fl_assert_int_eq(id.n_modes, 0);
	fl_display_close(hdmi);
	disp_close(&d);
}

/* fl_display_set_connected() returns once the plug shows: a query right after it sees it. */
FL_TEST(hotplug_is_visible_when_set_connected_returns)
{
	struct disp d;
	struct fl_display_handle *hdmi;
	int stale = 0;

	disp_open(&d);
	fl_assert_int_eq(fl_display_interface_open(d.dev, 1, &hdmi), 0);
	for (int i = 0; i < 50; i++) {
		struct fl_display_interface_data id = { 0 };

		fl_assert_int_eq(fl_display_set_connected(hdmi, 1, NULL), 0);
		fl_assert_int_eq(fl_display_interface_get_data(hdmi, &id, NULL), 0);
		stale += id.hotplug_detect != 1 || id.n_modes != 3;
		memset(&id, 0, sizeof(id));
		fl_assert_int_eq(fl_display_set_connected(hdmi, 0, NULL), 0);
		fl_assert_int_eq(fl_display_interface_get_data(hdmi, &id, NULL), 0);
		stale += id.hotplug_detect != 0 || id.n_modes != 0;
	}
	fl_assert_int_eq(stale, 0);
	fl_display_close(hdmi);
	disp_close(&d);
}

FL_TEST(test_only_checks_and_changes_nothing)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_stats st0, st;
	struct fl_display_post p = { 0 };
	struct fl_display_error e = { 0 };
	int fd, fence = 7;

	disp_open(&d);
	fd = simple_buffer(&d, 0xabcdefffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st0, NULL), 0);
	p.intfs = &d.intf_id;
	p.n_intfs = 1;
	p.bufs = &b;
	p.n_bufs = 1;
	p.flags = FL_DISPLAY_POST_TEST_ONLY;
	p.fence_type = FL_DISPLAY_FENCE_RELEASE;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, NULL), 0);
	fl_assert_int_eq(fence, -1);
	/* A pitch one byte short of the width: refused, said which buffer, plane and rule. */
	b.pitch[0] = 4 * b.w - 1;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EINVAL);
	fl_assert(strstr(e.msg, "buffer 0"));
	fl_assert(strstr(e.msg, "plane 0"));
	fl_assert(strstr(e.msg, "pitch"));
	b.pitch[0] = 4 * b.w;
	b.engine = 77;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -ENOENT);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(st.posted, st0.posted);
	fl_assert_int_eq(st.queued, 0);
	fl_assert_int_eq(st.flipped, st0.flipped);
	fl_assert_int_eq(st.on_screen_buffers, st0.on_screen_buffers);
	close(fd);
	disp_close(&d);
}

FL_TEST(a_client_that_dies_leaves_no_posts)
{
	struct disp d;
	struct fl_display_stats st;
	pid_t pid;
	int status, sync[2], tl = -1, acq = -1;
	char c;

	/* The parent's timeline: the fence outlives the child, only the child's death can drop the post. */
	fl_assert_int_eq(fl_timeline_fd_create("never", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "never", &acq), 0);
	fl_assert_int_eq(pipe(sync), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		struct fl_display_buffer b;
		struct disp cd;
		int fence;

		close(sync[0]);
		disp_open(&cd);
		simple_buffer(&cd, 0xffffffffu, &b);
		attach_and_light(&cd);
		/* A fence nobody signals: the post would wait for ever. */
		b.acquire_fence = acq;
		if (fl_display_simple_post(cd.intf, &b, FL_DISPLAY_FENCE_RELEASE, &fence, NULL))
			_exit(3);
		(void)!write(sync[1], "x", 1);
		pause();
		_exit(0);
	}
	close(sync[1]);
	fl_assert_int_eq(read(sync[0], &c, 1), 1);
	close(sync[0]);
	disp_open(&d);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(st.queued, 1);
	kill(pid, SIGKILL);
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	do {
		fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	} while (st.queued);
	fl_assert_int_eq(st.dropped, 1);
	fl_assert_int_eq(st.fence_failures, 0);
	close(acq);
	fl_timeline_fd_close(tl);
	disp_close(&d);
}

FL_TEST(a_hostile_client_is_cut_off_and_others_go_on)
{
	struct disp d;
	unsigned char junk[64], rep[512];
	struct timeval tv = { 10, 0 };
	int fd;
	ssize_t n;

	disp_open(&d);
	/* Garbage: a header whose length lies. */
	fd = raw_connect();
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(junk, 0xa5, sizeof(junk));
	fl_assert_int_eq(send(fd, junk, sizeof(junk), 0), sizeof(junk));
	n = recv(fd, rep, sizeof(rep), 0);
	fl_assert(n >= 24); /* one answer, with its reason... */
	fl_assert_int_eq(recv(fd, rep, sizeof(rep), 0), 0); /* ...then the end */
	close(fd);
	/* A POST with buffers it does not send the fds of. */
	fd = raw_connect();
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	{
		struct {
			uint32_t hdr[4];
			uint32_t post[6];
			uint32_t buf[14];
		} m = { { 141, 0, 1, 24 + 56 }, { 0, 0, 0, 0, 1, 0 }, { 0, 4, 4, XR24, 4, 1 } };

		fl_assert_int_eq(send(fd, &m, sizeof(m), 0), sizeof(m));
	}
	fl_assert(recv(fd, rep, sizeof(rep), 0) >= 24);
	fl_assert_int_eq(recv(fd, rep, sizeof(rep), 0), 0);
	close(fd);
	/* The well-behaved client never noticed. */
	fl_assert_int_eq(dpms_of(d.intf), FL_DISPLAY_DPMS_OFF);
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(dpms_of(d.intf), FL_DISPLAY_DPMS_ON);
	disp_close(&d);
}

FL_TEST(a_client_cannot_queue_posts_without_bound)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_stats st;
	struct fl_display_error e = { 0 };
	int fd, tl = -1, acq = -1, n = 0, r;

	disp_open(&d);
	fd = simple_buffer(&d, 0x13579bffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_timeline_fd_create("held", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "held", &acq), 0);
	b.acquire_fence = acq;
	/* Posts that cannot flip pile up only so far: then the post call says so. */
	while ((r = fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_NONE, NULL, &e)) == 0)
		fl_assert(++n <= 64);
	fl_assert_int_eq(r, -EBUSY);
	fl_assert(strstr(e.msg, "wait to flip"));
	fl_assert(n >= 2);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(st.queued, (uint64_t)n);
	/* Once its fence signals, the queue drains, a post per vsync. */
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	do
		fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	while (st.queued);
	fl_assert_int_eq(st.flipped, (uint64_t)n);
	close(acq);
	fl_timeline_fd_close(tl);
	close(fd);
	disp_close(&d);
}

FL_TEST(blank_off_flushes_the_queue_first)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_stats st0, st;
	int fd, tl = -1, acq = -1;

	disp_open(&d);
	fd = simple_buffer(&d, 0x2468acffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_timeline_fd_create("late", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "late", &acq), 0);
	b.acquire_fence = acq;
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_NONE, NULL, NULL), 0);
	b.acquire_fence = -1;
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_NONE, NULL, NULL), 0);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st0, NULL), 0);
	fl_assert_int_eq(st0.queued, 2);
	/*
	 * Blanking drains the queue before it returns: the post still waiting
	 * for its fence is dropped (the service never blocks), the ready one
	 * behind it flips at once.
	 */
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_OFF, NULL), 0);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(st.queued, 0);
	fl_assert_int_eq(st.dropped, st0.dropped + 1);
	fl_assert_int_eq(st.flipped, st0.flipped + 1);
	close(acq);
	fl_timeline_fd_close(tl);
	close(fd);
	disp_close(&d);
}

FL_TEST(the_service_s_death_fails_its_pending_fences)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_handle *dev;
	int fd, rel = -1;

	disp_open(&d);
	fd = simple_buffer(&d, 0x0f0f0fffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_RELEASE, &rel, NULL),
			 0);
	fl_assert_int_eq(kill(service_pid(), SIGKILL), 0);
	/* Nobody will show the next post: the release fence fails instead of hanging. */
	fl_assert(fl_fence_fd_wait(rel, 10000) < 0);
	fl_assert(fl_fence_fd_get_status(rel) < 0);
	/* The old handles say so; the next use starts a new service. */
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_OFF, NULL), -ECONNRESET);
	fl_assert_int_eq(fl_display_device_open(0, &dev), 0);
	/* A handle of the old service never names one of the new service's objects. */
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_OFF, NULL), -ECONNRESET);
	fl_display_close(dev);
	close(rel);
	close(fd);
	disp_close(&d);
}

/* YUV420 buffers of 64 × 64, three planes in one memfd of @fd. */
static void yuv_buffer(struct fl_display_buffer *b, int fd, int acquire)
{
	*b = (struct fl_display_buffer){ .engine = 3, /* the default config's yuv420 engine */
					 .w = 64,
					 .h = 64,
					 .format = FL_FOURCC('Y', 'U', '1', '2'),
					 .n_planes = 3,
					 .fd = { fd, fd, fd },
					 .offset = { 0, 4096, 5120 },
					 .pitch = { 64, 32, 32 },
					 .acquire_fence = acquire };
}

FL_TEST(a_post_of_56_buffers_passes_its_280_fds_in_order)
{
	struct disp d;
	struct fl_display_buffer b[FL_DISPLAY_MAX_BUFFERS];
	struct fl_display_post p = { 0 };
	struct fl_display_error e = { 0 };
	struct fl_display_stats st0, st;
	int mem = memfd_create("yuv", MFD_CLOEXEC), tl = -1, acq = -1, fence = 7;

	disp_open(&d);
	fl_assert(mem >= 0);
	fl_assert_int_eq(ftruncate(mem, 6144), 0);
	fl_assert_int_eq(fl_timeline_fd_create("acq", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "acq", &acq), 0);
	/* 56 × (3 planes + an acquire fence): more than one message carries. */
	for (int i = 0; i < FL_DISPLAY_MAX_BUFFERS; i++)
		yuv_buffer(&b[i], mem, acq);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st0, NULL), 0);
	p.intfs = &d.intf_id;
	p.n_intfs = 1;
	p.bufs = b;
	p.n_bufs = FL_DISPLAY_MAX_BUFFERS;
	p.flags = FL_DISPLAY_POST_TEST_ONLY;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), 0);
	fl_assert_int_eq(fence, -1); /* TEST_ONLY: no fence */
	/* The last buffer's last plane one byte short: the fds arrived in order. */
	b[55].offset[2] = 5121;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EINVAL);
	fl_assert(strstr(e.msg, "buffer 55 plane 2"));
	/* One buffer's acquire fence replaced by a plain memfd: refused, naming it. */
	b[55].offset[2] = 5120;
	b[40].acquire_fence = mem;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EINVAL);
	fl_assert(strstr(e.msg, "buffer 40"));
	fl_assert(strstr(e.msg, "not a fence"));
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	fl_assert_int_eq(st.posted, st0.posted);
	fl_assert_int_eq(st.queued, 0);
	/* The connection is still in step: the next call works. */
	fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_ON, NULL), 0);
	close(acq);
	fl_timeline_fd_close(tl);
	close(mem);
	disp_close(&d);
}

/* The pixel of adf_test's checkerboard at (@x, @y) of a @w × @h buffer drawn with @px. */
static uint32_t checker(uint32_t px, uint32_t w, uint32_t h, uint32_t x, uint32_t y)
{
	return ((x < w / 2) ^ (y < h / 2)) ? px : ~px;
}

/* Pixels of @d's capture that are not adf_test's checkerboard of @px (XRGB8888 over black). */
static size_t capture_wrong_checker(struct disp *d, uint32_t px)
{
	uint32_t w, h, pitch, *p;
	size_t wrong = 0;
	int cap = -1;

	fl_assert_int_eq(fl_display_capture(d->intf, XR24, &cap, &w, &h, &pitch, NULL), 0);
	p = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, cap, 0);
	fl_assert(p != MAP_FAILED);
	/* Every pixel is the buffer's, its X byte aside. */
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			wrong += ((p[(size_t)y * pitch / 4 + x] ^ checker(px, w, h, x, y)) &
				  0xffffff) != 0;
	munmap(p, (size_t)pitch * h);
	close(cap);
	return wrong;
}

FL_TEST(a_capture_shows_the_post_on_screen)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_error e = { 0 };
	uint32_t w, h, pitch, *p;
	int fd, cap = -1, pres = -1;
	size_t wrong = 0;

	disp_open(&d);
	/* Nothing posted: black. */
	fl_assert_int_eq(fl_display_capture(d.intf, XR24, &cap, &w, &h, &pitch, NULL), 0);
	fl_assert_int_eq(w, d.mode.hdisplay);
	fl_assert_int_eq(h, d.mode.vdisplay);
	p = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, cap, 0);
	fl_assert(p != MAP_FAILED);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			wrong += (p[(size_t)y * pitch / 4 + x] & 0xffffff) != 0;
	fl_assert_int_eq(wrong, 0);
	munmap(p, (size_t)pitch * h);
	close(cap);
	fd = simple_buffer(&d, 0x00c08040u, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_PRESENT, &pres, NULL),
			 0);
	fl_assert_int_eq(fl_fence_fd_wait(pres, 10000), 0);
	fl_assert_int_eq(capture_wrong_checker(&d, 0x00c08040u), 0);
	fl_assert_int_eq(fl_display_capture(d.intf, FL_FOURCC('N', 'V', '1', '2'), &cap, &w, &h,
					    &pitch, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "XRGB8888"));
	fl_assert_int_eq(fl_display_capture(d.eng, XR24, &cap, &w, &h, &pitch, NULL), -EINVAL);
	close(pres);
	close(fd);
	disp_close(&d);
}

/*
 * A client's memfd that it shrinks after its post is on screen: the
 * service's composition of a capture reads past its end. The service must
 * live on (libwayland's SIGBUS guard: zeros are read instead), tell the
 * client, and show the next post as before.
 */
FL_TEST(a_buffer_shrunk_under_the_service_does_not_bring_it_down)
{
	struct disp d;
	struct fl_display_buffer b, good;
	struct fl_display_error e = { 0 };
	uint32_t w, h, pitch, stride;
	int mem, fd, cap = -1, pres = -1;

	disp_open(&d);
	stride = d.mode.hdisplay * 4;
	mem = memfd_create("shrinks", MFD_CLOEXEC);
	fl_assert(mem >= 0);
	fl_assert_int_eq(ftruncate(mem, (off_t)stride * d.mode.vdisplay), 0);
	b = (struct fl_display_buffer){ .engine = d.eng_id,
					.w = d.mode.hdisplay,
					.h = d.mode.vdisplay,
					.format = XR24,
					.n_planes = 1,
					.fd = { mem },
					.pitch = { stride },
					.acquire_fence = -1 };
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_PRESENT, &pres, NULL),
			 0);
	fl_assert_int_eq(fl_fence_fd_wait(pres, 10000), 0);
	close(pres);
	fl_assert_int_eq(ftruncate(mem, 0), 0);
	fl_assert_int_eq(fl_display_capture(d.intf, XR24, &cap, &w, &h, &pitch, &e), -EFAULT);
	fl_assert(strstr(e.msg, "shrank"));
	/* The service lives on: the next post shows, pixel for pixel. */
	fd = simple_buffer(&d, 0x00c08040u, &good);
	fl_assert_int_eq(
		fl_display_simple_post(d.intf, &good, FL_DISPLAY_FENCE_PRESENT, &pres, NULL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(pres, 10000), 0);
	fl_assert_int_eq(capture_wrong_checker(&d, 0x00c08040u), 0);
	close(pres);
	close(fd);
	close(mem);
	disp_close(&d);
}

/* The default config's device: 3 interfaces (DSI, HDMI, memory), 4 engines. */
FL_TEST(a_device_says_how_many_interfaces_and_engines_it_has)
{
	static const char *const names[] = { "DSI", "HDMI", "memory" };
	struct fl_display_device_info info;
	struct fl_display_handle *h = NULL;
	unsigned char big[sizeof(info) + 8];
	char name[FL_DISPLAY_NAME_LEN];
	struct disp d;

	disp_open(&d);
	memset(&info, 0xa5, sizeof(info));
	fl_assert_int_eq(fl_display_device_get_info(d.dev, &info, sizeof(info), NULL), 0);
	fl_assert_int_eq(info.n_interfaces, 3);
	fl_assert_int_eq(info.n_engines, 4);
	fl_assert_str_eq(info.driver, "virtual");
	/* A caller built before the driver's name: its 8 bytes, nothing past them. */
	memset(big, 0x5a, sizeof(big));
	fl_assert_int_eq(fl_display_device_get_info(d.dev, (void *)big, 8, NULL), 0);
	for (size_t i = 8; i < sizeof(big); i++)
		fl_assert_int_eq(big[i], 0x5a);
	/* Every id below the counts opens, the first above does not. */
	for (uint32_t i = 0; i < info.n_interfaces; i++) {
		fl_assert_int_eq(fl_display_interface_open(d.dev, i, &h), 0);
		fl_assert_int_eq(fl_display_interface_type_name(h, name, NULL), 0);
		fl_assert_str_eq(name, names[i]);
		fl_assert_int_eq(fl_display_interface_type_name(d.dev, name, NULL), -EINVAL);
		fl_assert_int_eq(fl_display_device_get_info(h, &info, sizeof(info), NULL), -EINVAL);
		fl_display_close(h);
	}
	fl_assert_int_eq(fl_display_interface_open(d.dev, info.n_interfaces, &h), -ENODEV);
	for (uint32_t i = 0; i < info.n_engines; i++) {
		fl_assert_int_eq(fl_display_engine_open(d.dev, i, &h), 0);
		fl_display_close(h);
	}
	fl_assert_int_eq(fl_display_engine_open(d.dev, info.n_engines, &h), -ENODEV);
	/* A caller built with a larger struct: the rest stays as it was. */
	memset(big, 0x5a, sizeof(big));
	fl_assert_int_eq(fl_display_device_get_info(d.dev, (void *)big, sizeof(big), NULL), 0);
	for (size_t i = sizeof(info); i < sizeof(big); i++)
		fl_assert_int_eq(big[i], 0x5a);
	fl_assert_int_eq(fl_display_device_get_info(d.dev, &info, 0, NULL), -EINVAL);
	fl_assert_int_eq(fl_display_device_get_info(d.dev, NULL, sizeof(info), NULL), -EINVAL);
	disp_close(&d);
}

/* DEVICE_INFO's reply to a client that agreed on version @version: its length. */
static ssize_t device_info_reply_len(uint32_t version)
{
	uint32_t hello[6] = { 128, 0, 1, 8, version, 0 }, open[8] = { 130, 0, 2, 16, 0, 0, 0, 0 };
	uint32_t info[6] = { 148, 0, 3, 8, 0, 0 }, rep[32] = { 0 };
	int fd = raw_connect();
	ssize_t n;

	fl_assert_int_eq(send(fd, hello, sizeof(hello), 0), sizeof(hello));
	fl_assert_int_eq(recv(fd, rep, sizeof(rep), 0), 32);
	fl_assert_int_eq(rep[6], version);
	fl_assert_int_eq(send(fd, open, sizeof(open), 0), sizeof(open));
	/* The handle's event fd comes along: recv() without room for it lets the kernel close it. */
	fl_assert_int_eq(recv(fd, rep, sizeof(rep), 0), 32);
	fl_assert_int_eq((int32_t)rep[4], 0);
	info[4] = rep[6];
	fl_assert_int_eq(send(fd, info, sizeof(info), 0), sizeof(info));
	n = recv(fd, rep, sizeof(rep), 0);
	fl_assert_int_eq(rep[0], 148u | 0x80000000u);
	fl_assert_int_eq((int32_t)rep[4], 0);
	fl_assert_int_eq(rep[6], 3); /* the default config's interfaces */
	close(fd);
	return n;
}

/* A version 2 client checks DEVICE_INFO's size: it gets the reply it knows, without the driver. */
FL_TEST(a_version_2_client_gets_the_device_info_it_knows)
{
	struct disp d;

	disp_open(&d);
	fl_assert_int_eq(device_info_reply_len(2), 16 + 8 + 8);
	fl_assert_int_eq(device_info_reply_len(3), 16 + 8 + 8 + FL_DISPLAY_NAME_LEN);
	disp_close(&d);
}

/* The service lists its drivers: the one in use, and for the others whether they can run and why not. */
FL_TEST(the_service_lists_its_drivers_and_which_runs_its_device)
{
	struct fl_display_driver_info info[16], one;
	struct disp d;
	int n, virt = -1;

	disp_open(&d);
	n = fl_display_drivers(info, 16, NULL);
	fl_assert(n >= 4 && n <= 16);
	for (int i = 0; i < n; i++) {
		fl_assert(info[i].name[0] != '\0');
		fl_assert(info[i].status <= 0);
		/* Unavailable always comes with a reason a person can read. */
		fl_assert(info[i].status == 0 || strlen(info[i].why) > 8);
		if (!strcmp(info[i].name, "virtual"))
			virt = i;
		else
			fl_assert_int_eq(info[i].devices, 0);
	}
	fl_assert(virt >= 0);
	fl_assert_int_eq(info[virt].status, 0);
	fl_assert_int_eq(info[virt].devices, 1);
	/* A short array gets what fits; the count is still all of them. */
	fl_assert_int_eq(fl_display_drivers(&one, 1, NULL), n);
	fl_assert_str_eq(one.name, info[0].name);
	fl_assert_int_eq(fl_display_drivers(NULL, 0, NULL), n);
	fl_assert_int_eq(fl_display_drivers(NULL, 1, NULL), -EINVAL);
	disp_close(&d);
}

/* A driver's own interface type has the name the config gave it. */
FL_TEST(a_custom_interface_type_has_its_drivers_name)
{
	static const char ini[] = "[device pad]\n"
				  "driver = virtual\n"
				  "[interface left]\n"
				  "type = custom:dsi-gang\n"
				  "flags = primary\n"
				  "modes = 640x480@60\n"
				  "current-mode = 640x480@60\n"
				  "connected = yes\n"
				  "[interface right]\n"
				  "type = custom:dsi-gang\n"
				  "modes = 640x480@60\n"
				  "connected = yes\n"
				  "[interface tv]\n"
				  "type = custom:composite\n"
				  "modes = 640x480@60\n"
				  "connected = yes\n"
				  "[engine rgb]\n"
				  "formats = XRGB8888\n"
				  "interfaces = left, right, tv\n";
	char path[] = "/tmp/fl-display-config-XXXXXX", name[FL_DISPLAY_NAME_LEN];
	static const char *const names[] = { "dsi-gang", "dsi-gang", "composite" };
	struct fl_display_interface_data data;
	struct fl_display_handle *dev = NULL, *h = NULL;
	struct fl_display_device_info info;
	uint32_t *ids = NULL;
	int fd = mkstemp(path);

	fl_assert(fd >= 0);
	fl_assert_int_eq(write(fd, ini, sizeof(ini) - 1), (ssize_t)sizeof(ini) - 1);
	close(fd);
	/* This test's own service, started with this config. */
	fl_display_disconnect();
	fl_assert_int_eq(setenv("FENCELINE_DISPLAY_CONFIG", path, 1), 0);
	fl_assert_int_eq(fl_display_devices(&ids), 1);
	fl_assert_int_eq(fl_display_device_open(ids[0], &dev), 0);
	free(ids);
	fl_assert_int_eq(fl_display_device_get_info(dev, &info, sizeof(info), NULL), 0);
	fl_assert_int_eq(info.n_interfaces, 3);
	fl_assert_int_eq(info.n_engines, 1);
	for (uint32_t i = 0; i < info.n_interfaces; i++) {
		memset(&data, 0, sizeof(data));
		fl_assert_int_eq(fl_display_interface_open(dev, i, &h), 0);
		fl_assert_int_eq(fl_display_interface_get_data(h, &data, NULL), 0);
		fl_assert(data.type >= FL_DISPLAY_INTF_CUSTOM);
		fl_assert_int_eq(fl_display_interface_type_name(h, name, NULL), 0);
		fl_assert_str_eq(name, names[i]);
		fl_display_close(h);
	}
	fl_display_close(dev);
	fl_display_disconnect();
	unsetenv("FENCELINE_DISPLAY_CONFIG");
	unlink(path);
}

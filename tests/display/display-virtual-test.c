/* SPDX-License-Identifier: MIT */
/*
 * The virtual display driver (src/drivers/display-virtual) alone, on the
 * server framework's loop, behind a host that records what the driver
 * tells the service: vsync pacing at the mode's exact period, blanking,
 * modesets, simulated hotplug, simple buffers, validate and post, a gang's
 * one clock, and the driver's own tiled format's check.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "display-config.h"
#include "display-virtual.h"
#include "loop.h"
#include "runner.h"
#include "util.h"

#define XR24   FL_FOURCC('X', 'R', '2', '4')
#define NV12   FL_FOURCC('N', 'V', '1', '2')
#define MAX_TS 400

/* Interface 0 a connected 1080p60 panel, 1 an unplugged HDMI offering 720p60 and 1080p60. */
struct fake {
	struct fl_display_host host;
	struct fl_loop *loop;
	struct fl_display_mode mode[2];
	bool connected[2];
	uint64_t ts[MAX_TS];
	uint32_t ts_intfs[MAX_TS];
	size_t n_ts;
	bool ganged; /* interfaces 0 and 1 are one gang, left and right */
	uint32_t ts_intf;
	int hotplugs;
	bool hot_connected;
	size_t hot_modes;
	uint64_t last_arm; /* of the last timer armed */
};

static uint64_t f_now(const struct fl_display_host *host)
{
	(void)host;
	return fl__now_ns();
}

static void timer_cb(void *data)
{
	void **p = data;
	void (*fn)(void *) = (void (*)(void *))p[0];

	fn(p[1]);
}

/* A loop timer calling (fn, fn_data): the pair lives beside the source, freed with the fake. */
struct tsrc {
	struct fl_loop_source *src;
	void *pair[2];
	struct fake *f;
};

static struct fl_display_source *f_timer_add(const struct fl_display_host *host, void (*fn)(void *),
					     void *fn_data)
{
	struct tsrc *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->pair[0] = (void *)fn;
	t->pair[1] = fn_data;
	t->f = host->data;
	t->src = fl__loop_add_timer(t->f->loop, timer_cb, t->pair);
	if (!t->src) {
		free(t);
		return NULL;
	}
	return (struct fl_display_source *)t;
}

static void f_timer_arm(struct fl_display_source *s, uint64_t deadline)
{
	struct tsrc *t = (struct tsrc *)s;

	t->f->last_arm = deadline;
	fl__loop_timer_arm(t->src, deadline, 0);
}

static void f_source_remove(struct fl_display_source *s)
{
	struct tsrc *t = (struct tsrc *)s;

	if (!t)
		return;
	fl__loop_source_remove(t->src);
	free(t);
}

static int f_intf_state(const struct fl_display_host *host, uint32_t intf,
			struct fl_display_mode *ret_mode, bool *ret_connected)
{
	struct fake *f = host->data;

	if (intf > 1)
		return -ENOENT;
	*ret_mode = f->mode[intf];
	*ret_connected = f->connected[intf];
	return 0;
}

static int f_config_modes(const struct fl_display_host *host, uint32_t intf,
			  struct fl_display_mode *modes, size_t cap)
{
	(void)host;
	if (intf > 1)
		return -ENOENT;
	if (cap >= 2) {
		fl__display_mode_make(1280, 720, 60, &modes[0]);
		fl__display_mode_make(1920, 1080, 60, &modes[1]);
	}
	return 2;
}

static void f_vsync(const struct fl_display_host *host, uint32_t intf, uint64_t ts)
{
	struct fake *f = host->data;

	f->ts_intf = intf;
	if (f->n_ts < MAX_TS) {
		f->ts_intfs[f->n_ts] = intf;
		f->ts[f->n_ts++] = ts;
	}
}

static int f_hotplug(const struct fl_display_host *host, uint32_t intf, bool connected,
		     const struct fl_display_mode *modes, size_t n)
{
	struct fake *f = host->data;

	(void)modes;
	f->hotplugs++;
	f->hot_connected = connected;
	f->hot_modes = n;
	f->connected[intf] = connected;
	return 0;
}

static int f_layout(const struct fl_display_host *host, uint32_t fourcc, unsigned int *planes,
		    unsigned int cpp[FL_DISPLAY_MAX_PLANES])
{
	const struct fl__display_format *fmt = fl__display_format_find(fourcc);

	(void)host;
	if (!fmt)
		return -EINVAL;
	*planes = fmt->planes;
	for (unsigned int i = 0; i < FL_DISPLAY_MAX_PLANES; i++)
		cpp[i] = i < 3 ? fmt->cpp[i] : 0;
	return 0;
}

static int f_gang(const struct fl_display_host *host, uint32_t intf, struct fl_display_gang *ret)
{
	struct fake *f = host->data;

	if (intf > 1)
		return -ENOENT;
	if (!f->ganged)
		return -ENODATA;
	*ret = (struct fl_display_gang){ 2, { 0, 1 }, intf, 0, 2, 1 };
	return 0;
}

static void *setup_gang(struct fake *f, bool ganged);

static void *setup(struct fake *f)
{
	return setup_gang(f, false);
}

static void *setup_gang(struct fake *f, bool ganged)
{
	void *drv = NULL;

	memset(f, 0, sizeof(*f));
	f->host = (struct fl_display_host){
		.data = f,
		.now = f_now,
		.timer_add = f_timer_add,
		.timer_arm = f_timer_arm,
		.source_remove = f_source_remove,
		.intf_state = f_intf_state,
		.config_modes = f_config_modes,
		.vsync = f_vsync,
		.hotplug = f_hotplug,
		.layout = f_layout,
		.gang = f_gang,
	};
	f->ganged = ganged;
	f->loop = fl__loop_create();
	fl_assert(f->loop);
	fl_assert_int_eq(fl__display_mode_make(1920, 1080, 60, &f->mode[0]), 0);
	f->connected[0] = true;
	if (ganged) {
		f->mode[1] = f->mode[0];
		f->connected[1] = true;
	}
	fl_assert_int_eq(fl__display_virtual_ops.create(&f->host, &drv), 0);
	return drv;
}

static void teardown(struct fake *f, void *drv)
{
	fl__display_virtual_ops.destroy(drv);
	fl__loop_destroy(f->loop);
}

FL_TEST(virtual_frames_have_no_rounding_drift)
{
	struct fl_display_mode m;
	uint64_t num, n;

	/* CEA 1080p60: 2200 × 1125 at 148.5 MHz is 60 Hz exactly, a second every 60 frames. */
	fl_assert_int_eq(fl__display_mode_make(1920, 1080, 60, &m), 0);
	fl_assert_int_eq(fl__display_virtual_frame(&m, 5, 60), 5 + 1000000000ull);
	fl_assert_int_eq(fl__display_virtual_frame(&m, 0, 3 * 60 * 60 * 60),
			 3ull * 3600 * 1000000000ull);
	/* A period that is no whole number of ns: frame n is floor(n × period), never n × floor. */
	m.clock = 148000;
	num = (uint64_t)m.htotal * m.vtotal * 1000000u;
	for (n = 1; n < 100000; n += 997)
		fl_assert_int_eq(fl__display_virtual_frame(&m, 0, n), n * num / m.clock);
	fl_assert_int_eq(fl__display_virtual_frame(&m, 0, 1000000), 1000000 * num / m.clock);
	m.clock = 0;
	fl_assert_int_eq(fl__display_virtual_frame(&m, 7, 1), 0);
}

FL_TEST_TIMEOUT(virtual_vsync_paces_at_the_mode_period, 60)
{
	struct fake f;
	void *drv = setup(&f);
	const uint64_t period = 1000000000ull / 60;
	uint64_t frames = 0;
	size_t single = 0;

	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_ON), 0);
	while (f.n_ts < 300)
		fl_assert_int_eq(fl__loop_dispatch(f.loop, -1), 0);
	fl_assert_int_eq(f.ts_intf, 0);
	/*
	 * A property of the timestamps, not of when they arrived: each is a
	 * whole number of periods after the last (frames the loop was too
	 * busy for are skipped, never reported late), within 0.5%.
	 */
	for (size_t i = 1; i < f.n_ts; i++) {
		uint64_t d = f.ts[i] - f.ts[i - 1], k = (d + period / 2) / period;

		fl_assert(f.ts[i] > f.ts[i - 1]);
		fl_assert(k >= 1);
		fl_assert(d * 1000 >= k * period * 995 && d * 1000 <= k * period * 1005);
		frames += k;
		single += k == 1;
	}
	/* Skips are the loop's lateness, rare: a driver pacing at half the rate fails here. */
	fl_assert(single * 10 >= (f.n_ts - 1) * 9);
	fl_assert((f.ts[f.n_ts - 1] - f.ts[0]) * 1000 >= frames * period * 995);
	fl_assert((f.ts[f.n_ts - 1] - f.ts[0]) * 1000 <= frames * period * 1005);
	teardown(&f, drv);
}

FL_TEST(virtual_vsync_runs_in_on_and_standby_only)
{
	struct fake f;
	void *drv = setup(&f);

	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_ON), 0);
	fl_assert(f.last_arm != 0);
	while (f.n_ts < 2)
		fl_assert_int_eq(fl__loop_dispatch(f.loop, -1), 0);
	/* ADF keeps vsync in STANDBY (vsync_active()), and stops it in SUSPEND and OFF. */
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_STANDBY), 0);
	fl_assert(f.last_arm != 0);
	f.n_ts = 0;
	while (f.n_ts < 2)
		fl_assert_int_eq(fl__loop_dispatch(f.loop, -1), 0);
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_SUSPEND), 0);
	fl_assert_int_eq(f.last_arm, 0);
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_ON), 0);
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_OFF), 0);
	fl_assert_int_eq(f.last_arm, 0);
	/* An interface with no mode (the unplugged HDMI) has no vsync either. */
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 1, FL_DISPLAY_DPMS_ON), 0);
	fl_assert_int_eq(f.last_arm, 0);
	teardown(&f, drv);
}

FL_TEST(virtual_modeset_refuses_a_mode_without_timings)
{
	struct fake f;
	void *drv = setup(&f);
	struct fl_display_mode m = { .hdisplay = 640, .vdisplay = 480 };

	fl_assert_int_eq(fl__display_virtual_ops.modeset(drv, 0, &m), -EINVAL);
	fl_assert_int_eq(fl__display_mode_make(1280, 720, 60, &m), 0);
	fl_assert_int_eq(fl__display_virtual_ops.modeset(drv, 0, &m), 0);
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_ON), 0);
	while (f.n_ts < 3)
		fl_assert_int_eq(fl__loop_dispatch(f.loop, -1), 0);
	/* 720p60's synthesised timings: the period is exactly the mode's. */
	fl_assert_int_eq(f.ts[2] - f.ts[1],
			 fl__display_virtual_frame(&m, 0, 2) - fl__display_virtual_frame(&m, 0, 1));
	teardown(&f, drv);
}

FL_TEST(virtual_hotplug_is_reported_before_set_connected_returns)
{
	struct fake f;
	void *drv = setup(&f);

	fl_assert_int_eq(fl__display_virtual_ops.set_connected(drv, 1, false), -EALREADY);
	fl_assert_int_eq(fl__display_virtual_ops.set_connected(drv, 1, true), 0);
	/* From inside the op: the caller's next query must see the plug. */
	fl_assert_int_eq(f.hotplugs, 1);
	fl_assert(f.hot_connected);
	fl_assert_int_eq(f.hot_modes, 2);
	fl_assert_int_eq(fl__display_virtual_ops.set_connected(drv, 1, true), -EALREADY);
	fl_assert_int_eq(fl__display_virtual_ops.set_connected(drv, 1, false), 0);
	fl_assert_int_eq(f.hotplugs, 2);
	fl_assert(!f.hot_connected);
	fl_assert_int_eq(f.hot_modes, 0);
	fl_assert_int_eq(fl__display_virtual_ops.set_connected(drv, 7, true), -ENOENT);
	teardown(&f, drv);
}

FL_TEST(virtual_simple_buffers_come_from_the_scanout_heap_with_an_aligned_pitch)
{
	struct fake f;
	void *drv = setup(&f);
	uint32_t off = 1, pitch = 0;
	struct stat st;
	unsigned char *p;
	int fd = -1;

	fl_assert_int_eq(fl__display_virtual_ops.alloc_simple_buffer(drv, 0, 1001, 3, XR24, &fd,
								     &off, &pitch),
			 0);
	fl_assert_int_eq(off, 0);
	fl_assert_int_eq(pitch, 4032); /* 1001 × 4 up to a multiple of 64 */
	fl_assert_int_eq(fstat(fd, &st), 0);
	/* The heap rounds up to whole pages. */
	fl_assert(st.st_size >= 4032 * 3 && st.st_size % 4096 == 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	p[st.st_size - 1] = 0xff;
	munmap(p, (size_t)st.st_size);
	/* Sealed against shrinking: the scan-out's memory cannot go away under it. */
	fl_assert_int_eq(ftruncate(fd, 16), -1);
	close(fd);
	fl_assert_int_eq(fl__display_virtual_ops.alloc_simple_buffer(drv, 0, 64, 64, NV12, &fd,
								     &off, &pitch),
			 -EINVAL);
	fl_assert_int_eq(fl__display_virtual_ops.alloc_simple_buffer(drv, 0, 65536, 65536, XR24,
								     &fd, &off, &pitch),
			 -EINVAL);
	/* 4096 × 2160 × 4 is past display-scanout's max-size (32 MiB) in the default table. */
	fl_assert_int_eq(fl__display_virtual_ops.alloc_simple_buffer(drv, 0, 4096, 2160, XR24, &fd,
								     &off, &pitch),
			 -E2BIG);
	teardown(&f, drv);
}

FL_TEST(virtual_validate_refuses_custom_data_and_changes_nothing)
{
	struct fake f;
	void *drv = setup(&f);
	struct fl_display_driver_buffer b = { .engine = 0, .w = 4, .h = 4, .format = XR24 };
	uint32_t intfs[] = { 0 };
	struct fl_display_driver_post post = { intfs, 1, &b, 1, "x", 1 };
	struct fl_display_error e = { 0 };
	void *state = NULL;

	fl_assert_int_eq(fl__display_virtual_ops.validate(drv, &post, &state, &e), -EINVAL);
	fl_assert(strstr(e.msg, "custom data"));
	fl_assert(!state);
	post.custom_size = 0;
	fl_assert_int_eq(fl__display_virtual_ops.validate(drv, &post, &state, &e), 0);
	fl_assert(state);
	fl__display_virtual_ops.post(drv, state);
	fl__display_virtual_ops.state_free(drv, state);
	teardown(&f, drv);
}

FL_TEST_TIMEOUT(virtual_a_gang_has_one_clock_and_one_timestamp_per_frame, 60)
{
	struct fake f;
	void *drv = setup_gang(&f, true);

	/* The model blanks a gang's members in id order; the first one's timer paces both. */
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 0, FL_DISPLAY_DPMS_ON), 0);
	fl_assert_int_eq(fl__display_virtual_ops.blank(drv, 1, FL_DISPLAY_DPMS_ON), 0);
	while (f.n_ts < 40)
		fl_assert_int_eq(fl__loop_dispatch(f.loop, -1), 0);
	/* Each frame: interface 0, then 1 at the very same instant; never 1 on its own clock. */
	for (size_t i = 0; i + 1 < f.n_ts; i += 2) {
		fl_assert_int_eq(f.ts_intfs[i], 0);
		fl_assert_int_eq(f.ts_intfs[i + 1], 1);
		fl_assert_int_eq(f.ts[i + 1], f.ts[i]);
		if (i)
			fl_assert(f.ts[i] > f.ts[i - 1]);
	}
	/* One link of a panel is not plugged on its own. */
	fl_assert_int_eq(fl__display_virtual_ops.set_connected(drv, 1, false), -EOPNOTSUPP);
	teardown(&f, drv);
}

/* An XT44 buffer of @w × @h, @pitch, @offset in @size bytes of memory. */
static struct fl_display_driver_buffer xt44(uint32_t w, uint32_t h, uint32_t pitch, uint32_t offset,
					    uint64_t size)
{
	return (struct fl_display_driver_buffer){ .w = w,
						  .h = h,
						  .format = FL_DISPLAY_VIRTUAL_FORMAT_XT44,
						  .n_planes = 1,
						  .offset = { offset },
						  .pitch = { pitch },
						  .size = { size },
						  .fd = { -1, -1, -1, -1 } };
}

FL_TEST(virtual_tiled_format_check_at_each_boundary)
{
	struct fake f;
	void *drv = setup(&f);
	int (*check)(void *, const struct fl_display_driver_buffer *, size_t,
		     struct fl_display_error *) = fl__display_virtual_ops.validate_custom_format;
	struct fl_display_error e = { 0, "" };
	struct fl_display_driver_buffer b;

	fl_assert(check);
	/* 10 × 9: 3 columns and 3 rows of tiles, pitch at least 48, 48 × 4 × 3 = 576 bytes. */
	b = xt44(10, 9, 48, 0, 576);
	fl_assert_int_eq(check(drv, &b, 2, &e), 0);
	b.size[0] = 575;
	fl_assert_int_eq(check(drv, &b, 2, &e), -EINVAL);
	fl_assert(strstr(
		e.msg,
		"buffer 2: XT44: offset 0 + 3 rows of tiles of 4 × pitch 48 end at 576, past the "
		"plane's 575-byte memory"));
	/* The offset counts: 4 more bytes need 4 more of memory. */
	b = xt44(10, 9, 48, 4, 580);
	fl_assert_int_eq(check(drv, &b, 0, &e), 0);
	b.size[0] = 579;
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	b = xt44(10, 9, 48, 2, 1000);
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	fl_assert(strstr(e.msg, "offset 2 is not a multiple of 4"));
	/* The pitch: one column of tiles short fails, a multiple of 16 only. */
	b = xt44(10, 9, 32, 0, 1000);
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	fl_assert(strstr(e.msg, "pitch 32 is not a multiple of 16 of at least 48"));
	b = xt44(10, 9, 52, 0, 1000);
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	b = xt44(10, 9, 64, 0, 64 * 12);
	fl_assert_int_eq(check(drv, &b, 0, &e), 0);
	/* 64-bit arithmetic: a huge pitch and height do not wrap into a fit. */
	b = xt44(4, 0xfffffff0u, 0xfffffff0u, 0, 4096);
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	b = xt44(0, 9, 48, 0, 1000);
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	b = xt44(10, 9, 48, 0, 1000);
	b.n_planes = 2;
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	fl_assert(strstr(e.msg, "2 planes, it has one"));
	b = xt44(10, 9, 48, 0, 1000);
	b.format = FL_FOURCC('Z', 'Z', 'Z', 'Z');
	fl_assert_int_eq(check(drv, &b, 0, &e), -EINVAL);
	fl_assert(strstr(e.msg, "only own format is XT44"));
	teardown(&f, drv);
}

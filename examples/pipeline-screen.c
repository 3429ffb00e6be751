/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo's screen (pipeline-screen.h). It is what a minimal compositor's last stage does
 * with ADF's simple buffers: three buffers, each drawn only once the display has let go of it (its
 * RELEASE fence from the post that replaced it), posted with no acquire fence since the CPU has
 * finished writing when it posts.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fenceline/display.h>

#include "pipeline-screen.h"

#define XR24	       FL_FOURCC('X', 'R', '2', '4')
#define HISTORY	       64u
#define MAX_SCREEN_DIM 4096u
/*
 * Three: the one on screen, the one queued for the service's next vsync (its clock is not ours),
 * and the one being drawn. With two, every other frame would find its buffer still held.
 */
#define NBUF 3u

struct screen {
	struct fl_display_handle *dev, *intf;
	uint32_t intf_id, w, h;
	unsigned int producers;
	struct {
		int fd, release; /* the buffer, and the fence that says the display let go of it */
		uint32_t offset, pitch;
		uint8_t *map;
		size_t len;
	} buf[NBUF];
	unsigned int next, posted, skipped;
	uint8_t fates[HISTORY]; /* per frame % HISTORY: 0 none, 1 on time, 2 late, 3 dropped */
};

int screen_choose(const char *choice)
{
	char path[4096];
	int r;

	if (!choice[0] || setenv("FENCELINE_DISPLAY", choice, 1) < 0) {
		r = -EINVAL;
	} else {
		/* The library's own reading of the choice: a bad one is -EINVAL. */
		r = fl_display_socket_path(path, sizeof(path));
	}
	if (r == -EINVAL)
		fprintf(stderr,
			"pipeline-demo: --display %s: not a display choice (auto, virtual, window, "
			"terminal:TTY, kms[:CARD])\n",
			choice);
	return r == -EINVAL ? r : 0;
}

static int fail(const char *what, int r, const struct fl_display_error *e)
{
	fprintf(stderr, "pipeline-demo: screen: %s: %s\n", what,
		e && e->err && e->msg[0] ? e->msg : strerror(-r));
	return r;
}

/* An engine of @dev that lists XRGB8888 and may feed interface @intf; attach it. */
static int attach_engine(struct screen *s, const struct fl_display_device_info *info)
{
	struct fl_display_device_data dd = { 0 };
	struct fl_display_attachment allowed[64];
	struct fl_display_error e = { 0 };
	int r;

	dd.allowed = allowed;
	dd.n_allowed = 64;
	r = fl_display_device_get_data(s->dev, &dd, &e);
	if (r < 0)
		return fail("reading the device", r, &e);
	for (size_t a = 0; a < dd.n_allowed && a < 64; a++) {
		struct fl_display_engine_data ed = { 0 };
		struct fl_display_handle *eng;
		uint32_t formats[64];
		bool xr24 = false;

		if (allowed[a].interface != s->intf_id || allowed[a].engine >= info->n_engines)
			continue;
		if (fl_display_engine_open(s->dev, allowed[a].engine, &eng) < 0)
			continue;
		ed.formats = formats;
		ed.n_formats = 64;
		if (fl_display_engine_get_data(eng, &ed, NULL) == 0)
			for (size_t f = 0; f < ed.n_formats && f < 64; f++)
				xr24 |= formats[f] == XR24;
		fl_display_close(eng);
		if (!xr24)
			continue;
		r = fl_display_attach(s->dev, allowed[a].engine, s->intf_id, &e);
		return r == -EALREADY ? 0 : r < 0 ? fail("attaching an engine", r, &e) : 0;
	}
	return fail("no overlay engine scans XRGB8888 out to the interface", -ENODEV, NULL);
}

/* The first connected interface with a mode that is not memory writeback. */
static int find_interface(struct screen *s, const struct fl_display_device_info *info)
{
	for (uint32_t i = 0; i < info->n_interfaces; i++) {
		struct fl_display_interface_data d = { 0 };
		struct fl_display_handle *h;

		if (fl_display_interface_open(s->dev, i, &h) < 0)
			continue;
		if (fl_display_interface_get_data(h, &d, NULL) == 0 && d.hotplug_detect &&
		    d.current_mode.hdisplay && d.type != FL_DISPLAY_INTF_MEMORY &&
		    d.current_mode.hdisplay <= MAX_SCREEN_DIM &&
		    d.current_mode.vdisplay <= MAX_SCREEN_DIM) {
			s->intf = h;
			s->intf_id = i;
			s->w = d.current_mode.hdisplay;
			s->h = d.current_mode.vdisplay;
			return 0;
		}
		fl_display_close(h);
	}
	return fail("no connected interface with a mode", -ENODEV, NULL);
}

int screen_open(unsigned int producers, struct screen **ret)
{
	struct fl_display_device_info info = { 0 };
	struct fl_display_error e = { 0 };
	struct screen *s = calloc(1, sizeof(*s));
	uint32_t *ids = NULL;
	int r;

	if (!s)
		return -ENOMEM;
	s->producers = producers;
	for (unsigned int b = 0; b < NBUF; b++)
		s->buf[b].fd = s->buf[b].release = -1;
	r = fl_display_devices(&ids);
	if (r <= 0) {
		free(ids);
		free(s);
		return fail("no display device", r < 0 ? r : -ENODEV, NULL);
	}
	r = fl_display_device_open(ids[0], &s->dev);
	free(ids);
	if (r < 0) {
		free(s);
		return fail("opening the display device", r, NULL);
	}
	r = fl_display_device_get_info(s->dev, &info, sizeof(info), &e);
	if (r < 0)
		r = fail("reading the display device", r, &e);
	if (r == 0)
		r = find_interface(s, &info);
	if (r == 0)
		r = attach_engine(s, &info);
	if (r == 0) {
		r = fl_display_blank(s->intf, FL_DISPLAY_DPMS_ON, &e);
		/* Already on (ADF answers -EBUSY to a blank to the current state). */
		if (r == -EBUSY)
			r = 0;
		else if (r < 0)
			fail("turning the interface on", r, &e);
	}
	for (unsigned int b = 0; r == 0 && b < NBUF; b++) {
		r = fl_display_simple_buffer_alloc(s->intf, s->w, s->h, XR24, &s->buf[b].fd,
						   &s->buf[b].offset, &s->buf[b].pitch, &e);
		if (r < 0) {
			fail("allocating a simple buffer", r, &e);
			break;
		}
		s->buf[b].len = (size_t)s->buf[b].offset + (size_t)s->buf[b].pitch * s->h;
		s->buf[b].map = mmap(NULL, s->buf[b].len, PROT_READ | PROT_WRITE, MAP_SHARED,
				     s->buf[b].fd, 0);
		if (s->buf[b].map == MAP_FAILED) {
			s->buf[b].map = NULL;
			r = fail("mapping a simple buffer", -errno, NULL);
		}
	}
	if (r < 0) {
		screen_close(s);
		return r;
	}
	if (fl_display_device_get_info(s->dev, &info, sizeof(info), NULL) == 0)
		fprintf(stderr, "pipeline-demo: showing frames on %ux%u of the %s display\n", s->w,
			s->h, info.driver[0] ? info.driver : "?");
	*ret = s;
	return 0;
}

static void fill(uint8_t *base, uint32_t pitch, uint32_t x0, uint32_t y0, uint32_t w, uint32_t h,
		 uint32_t px)
{
	for (uint32_t y = y0; y < y0 + h; y++) {
		uint32_t *row = (uint32_t *)(base + (size_t)y * pitch);

		for (uint32_t x = x0; x < x0 + w; x++)
			row[x] = px;
	}
}

static void draw(struct screen *s, uint8_t *base, uint32_t pitch, uint32_t frame)
{
	static const uint32_t lane_colours[] = { 0xff3a86ff, 0xffff006e, 0xfffb5607, 0xff8338ec,
						 0xffffbe0b, 0xff06d6a0, 0xffef476f, 0xff118ab2 };
	static const uint32_t fate_colours[] = { 0xff202020, 0xff2ec4b6, 0xffe71d36, 0xff6c757d };
	uint32_t strip = s->h / 8, lanes_h = s->h - strip, lane = lanes_h / s->producers;
	uint32_t bar_w = s->w / 16 ? s->w / 16 : 1, cell = s->w / HISTORY ? s->w / HISTORY : 1;

	fill(base, pitch, 0, 0, s->w, s->h, 0xff101018);
	/* Producer p's bar sweeps its lane p + 1 times a second at 60 Hz: frames tell apart at a glance. */
	for (unsigned int p = 0; p < s->producers && lane > 2; p++) {
		uint32_t x = (uint32_t)((uint64_t)frame * (p + 1) * (s->w - bar_w) / 60u %
					(s->w - bar_w));

		fill(base, pitch, x, p * lane + 1, bar_w, lane - 2,
		     lane_colours[p % (sizeof(lane_colours) / sizeof(lane_colours[0]))]);
	}
	/* The strip: the last frames' fates, newest at the right. */
	for (uint32_t i = 0; i < HISTORY && (i + 1) * cell <= s->w && strip > 2; i++) {
		uint32_t f = frame + 1 + i;

		fill(base, pitch, i * cell, lanes_h + 1, cell > 1 ? cell - 1 : 1, strip - 2,
		     fate_colours[s->fates[f % HISTORY] & 3]);
	}
}

int screen_show(struct screen *s, uint32_t frame, bool late, unsigned int dropped)
{
	struct fl_display_buffer b = { 0 };
	struct fl_display_error e = { 0 };
	unsigned int k = s->next;
	int r, fence = -1;

	for (unsigned int i = 1; i <= dropped && i <= frame && i < HISTORY; i++)
		s->fates[(frame - i) % HISTORY] = 3;
	s->fates[frame % HISTORY] = late ? 2 : 1;
	if (s->buf[k].release >= 0) {
		struct pollfd p = { .fd = s->buf[k].release, .events = POLLIN };

		/* Still on screen (a slow output): skip this frame rather than stall the stage. */
		if (poll(&p, 1, 0) == 0) {
			s->skipped++;
			return 0;
		}
		close(s->buf[k].release);
		s->buf[k].release = -1;
	}
	draw(s, s->buf[k].map + s->buf[k].offset, s->buf[k].pitch, frame);
	b = (struct fl_display_buffer){ .w = s->w,
					.h = s->h,
					.format = XR24,
					.n_planes = 1,
					.fd = { s->buf[k].fd },
					.offset = { s->buf[k].offset },
					.pitch = { s->buf[k].pitch },
					.acquire_fence = -1 };
	r = fl_display_simple_post(s->intf, &b, FL_DISPLAY_FENCE_RELEASE, &fence, &e);
	if (r < 0)
		return fail("posting a frame", r, &e);
	s->buf[k].release = fence;
	s->next = (s->next + 1) % NBUF;
	s->posted++;
	return 0;
}

void screen_counts(const struct screen *s, unsigned int *posted, unsigned int *skipped)
{
	*posted = s->posted;
	*skipped = s->skipped;
}

void screen_close(struct screen *s)
{
	if (!s)
		return;
	/*
	 * A client's queued posts go with its connection: let the last frame reach the screen
	 * first (at most 50 periods of a slow output), so that what stays there is the last one.
	 */
	for (int i = 0; s->dev && s->posted && i < 100; i++) {
		struct fl_display_stats st;

		if (fl_display_device_get_stats(s->dev, &st, NULL) < 0 || !st.queued)
			break;
		poll(NULL, 0, 10);
	}
	for (unsigned int b = 0; b < NBUF; b++) {
		if (s->buf[b].map)
			munmap(s->buf[b].map, s->buf[b].len);
		if (s->buf[b].fd >= 0)
			close(s->buf[b].fd);
		if (s->buf[b].release >= 0)
			close(s->buf[b].release);
	}
	fl_display_close(s->intf);
	fl_display_close(s->dev);
	fl_display_disconnect();
	free(s);
}

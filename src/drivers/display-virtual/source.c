/* SPDX-License-Identifier: MIT */
/*
 * The virtual driver's live sources (display-virtual.h; docs/display.md,
 * "Live sources"): a test pattern made for each frame it is composed in,
 * and a stream of frames a client writes into a socket. The stream is read
 * when the loop finds it readable, with MSG_DONTWAIT and a budget per turn,
 * so a feeder that stops, trickles, floods or lies never holds the loop:
 * partial frames wait for their rest, garbage ends the stream, and what is
 * shown is the newest complete frame as of the last vsync.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "display-virtual.h"

/* Bytes read from one stream per readable event: the loop's other work gets its turn. */
#define STREAM_BUDGET (1u << 20)

struct fl__vsource {
	const struct fl_display_host *host;
	struct fl_display_source src; /* src.fd: the stream, -1 once it ended */
	struct fl_display_source *watch;
	size_t frame_bytes;
	/* Three frames: being read, the newest complete one, the one shown since the last vsync. */
	uint8_t *reading, *latest, *shown;
	bool latest_new, has_shown;
	struct fl_display_stream_frame hdr;
	size_t hdr_have, have;
};

/* The stream ended (its end, an error or garbage): stop reading, keep what is shown. */
static void stream_end(struct fl__vsource *s)
{
	s->host->source_remove(s->watch);
	s->watch = NULL;
	if (s->src.fd >= 0)
		close(s->src.fd);
	s->src.fd = -1;
}

static void stream_ready(int fd, uint32_t events, void *data)
{
	struct fl__vsource *s = data;
	size_t budget = STREAM_BUDGET;

	(void)events;
	while (budget) {
		bool in_hdr = s->hdr_have < sizeof(s->hdr);
		uint8_t *to = in_hdr ? (uint8_t *)&s->hdr + s->hdr_have : s->reading + s->have;
		size_t want = in_hdr ? sizeof(s->hdr) - s->hdr_have : s->frame_bytes - s->have;
		ssize_t n = recv(fd, to, want < budget ? want : budget, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			/* Closed, even mid-frame, or broken: the last complete frame stays. */
			stream_end(s);
			return;
		}
		budget -= (size_t)n;
		if (in_hdr) {
			s->hdr_have += (size_t)n;
			if (s->hdr_have == sizeof(s->hdr) &&
			    (s->hdr.magic != FL_DISPLAY_STREAM_MAGIC ||
			     s->hdr.length != s->frame_bytes)) {
				stream_end(s);
				return;
			}
			continue;
		}
		s->have += (size_t)n;
		if (s->have == s->frame_bytes) {
			uint8_t *t = s->latest;

			s->latest = s->reading;
			s->reading = t;
			s->latest_new = true;
			s->have = 0;
			s->hdr_have = 0;
		}
	}
}

int fl__display_virtual_source_new(const struct fl_display_host *host,
				   const struct fl_display_source *src, struct fl__vsource **ret,
				   struct fl_display_error *e)
{
	struct fl__vsource *s = calloc(1, sizeof(*s));

	if (!s)
		goto nomem;
	s->host = host;
	s->src = *src;
	s->frame_bytes = (size_t)src->w * src->h * 4;
	if (src->type != FL_DISPLAY_SOURCE_STREAM) {
		s->src.fd = -1;
		*ret = s;
		return 0;
	}
	s->reading = malloc(s->frame_bytes);
	s->latest = malloc(s->frame_bytes);
	s->shown = malloc(s->frame_bytes);
	if (!s->reading || !s->latest || !s->shown)
		goto nomem;
	s->watch = host->fd_add(host, src->fd, EPOLLIN, stream_ready, s);
	if (!s->watch)
		goto nomem;
	*ret = s;
	return 0;
nomem:
	if (s) {
		free(s->reading);
		free(s->latest);
		free(s->shown);
		free(s);
	}
	if (src->fd >= 0)
		close(src->fd);
	if (e) {
		e->err = -ENOMEM;
		snprintf(e->msg, sizeof(e->msg), "source: out of memory for its frames");
	}
	return -ENOMEM;
}

void fl__display_virtual_source_free(struct fl__vsource *s)
{
	if (!s)
		return;
	stream_end(s);
	free(s->reading);
	free(s->latest);
	free(s->shown);
	free(s);
}

uint64_t fl__display_virtual_source_bytes(const struct fl__vsource *s)
{
	return s && s->src.type == FL_DISPLAY_SOURCE_STREAM ? 3ull * s->frame_bytes : 0;
}

void fl__display_virtual_source_latch(struct fl__vsource *s)
{
	uint8_t *t = s->shown;

	if (!s->latest_new)
		return;
	s->shown = s->latest;
	s->latest = t;
	s->latest_new = false;
	s->has_shown = true;
}

uint32_t fl__display_virtual_pattern_px(uint32_t x, uint32_t y, uint32_t w, uint32_t h,
					uint64_t frame)
{
	/* SMPTE's seven 75% bars: white, yellow, cyan, green, magenta, red, blue. */
	static const uint32_t bars[7] = { 0xbfbfbf, 0xbfbf00, 0x00bfbf, 0x00bf00,
					  0xbf00bf, 0xbf0000, 0x0000bf };
	uint32_t strip = h > 32 ? 16 : 0, g;

	if (y >= h - strip) {
		/* The frame number, 32 cells from its top bit, white for a 1. */
		uint32_t bit = 31 - (uint32_t)((uint64_t)x * 32 / w);

		return 0xff000000u | (frame >> bit & 1 ? 0xffffffu : 0);
	}
	if (y < (h - strip) * 2 / 3)
		return 0xff000000u | bars[(uint64_t)x * 7 / w];
	/* A grey ramp that moves 4 pixels a frame. */
	g = (uint32_t)((x + frame * 4) & 0xff);
	return 0xff000000u | g << 16 | g << 8 | g;
}

int fl__display_virtual_source_frame(struct fl__vsource *s, uint32_t engine, uint64_t frame,
				     struct fl_display_driver_buffer *ret_buf,
				     struct fl_display_layer *ret_layer)
{
	uint32_t *px;
	int fd, r = 0;

	if (s->src.type == FL_DISPLAY_SOURCE_STREAM && !s->has_shown)
		return -ENODATA;
	fd = fl__display_virtual_memfd("live-source", s->frame_bytes);
	if (fd < 0)
		return fd;
	px = mmap(NULL, s->frame_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (px == MAP_FAILED)
		goto fail;
	if (s->src.type == FL_DISPLAY_SOURCE_STREAM)
		memcpy(px, s->shown, s->frame_bytes);
	else
		for (uint32_t y = 0; y < s->src.h; y++)
			for (uint32_t x = 0; x < s->src.w; x++)
				px[(size_t)y * s->src.w + x] = fl__display_virtual_pattern_px(
					x, y, s->src.w, s->src.h, frame);
	munmap(px, s->frame_bytes);
	*ret_buf = (struct fl_display_driver_buffer){ .engine = engine,
						      .w = s->src.w,
						      .h = s->src.h,
						      .format = s->src.format,
						      .n_planes = 1,
						      .pitch = { s->src.w * 4 },
						      .size = { s->frame_bytes },
						      .fd = { fd, -1, -1, -1 },
						      .in_fence = -1 };
	*ret_layer = s->src.layer;
	return 0;
fail:
	r = -errno;
	close(fd);
	return r;
}

/* SPDX-License-Identifier: MIT */
/*
 * The display of fl-recovery (recovery.h): what minui's ADF backend does,
 * through libadf and libsync only, so any fenceline display driver shows
 * it: adf_find_simple_post_configuration() for XRGB8888 or RGB565, attach
 * (already attached is fine), unblank, two simple buffers of the current
 * mode, and each frame posted with a release fence that is waited for
 * before that buffer is drawn again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <adf/adf.h>
#include <android/sync.h>

#include "recovery.h"

struct buffer {
	int fd;
	uint32_t offset, pitch;
	uint8_t *map;
	size_t len;
	int release; /* the fence of its last post: drawn again only once it signals */
};

struct gr_priv {
	struct adf_device dev;
	adf_id_t intf_id, eng_id;
	struct buffer buf[2];
	int back;
};

static const __u32 formats[] = { DRM_FORMAT_XRGB8888, DRM_FORMAT_RGB565 };

static int try_device(struct gr *g, struct gr_priv *p, adf_id_t id)
{
	struct adf_interface_data data;
	int r;

	r = adf_device_open(id, O_RDWR, &p->dev);
	if (r < 0)
		return r;
	for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
		r = adf_find_simple_post_configuration(&p->dev, &formats[f], 1, &p->intf_id,
						       &p->eng_id);
		if (r == 0) {
			g->format = formats[f];
			break;
		}
	}
	if (r < 0)
		goto fail;
	r = adf_device_attach(&p->dev, p->eng_id, p->intf_id);
	if (r < 0 && r != -EALREADY)
		goto fail;
	g->intf = adf_interface_open(&p->dev, p->intf_id, O_RDWR);
	if (g->intf < 0) {
		r = g->intf;
		goto fail;
	}
	r = adf_get_interface_data(g->intf, &data);
	if (r < 0)
		goto fail_intf;
	g->w = data.current_mode.hdisplay;
	g->h = data.current_mode.vdisplay;
	adf_free_interface_data(&data);
	if (!g->w || !g->h) {
		r = -ENODEV; /* no current mode: nothing to draw on */
		goto fail_intf;
	}
	/* DPMS ON; -EBUSY: it is on already. */
	r = adf_interface_blank(g->intf, DRM_MODE_DPMS_ON);
	if (r < 0 && r != -EBUSY)
		goto fail_intf;
	return 0;
fail_intf:
	close(g->intf);
	g->intf = -1;
fail:
	adf_device_close(&p->dev);
	return r;
}

int gr_init(struct gr *g, int device)
{
	struct gr_priv *p = calloc(1, sizeof(*p));
	adf_id_t *ids = NULL;
	ssize_t n;
	int r = -ENODEV;

	memset(g, 0, sizeof(*g));
	g->intf = -1;
	if (!p)
		return -ENOMEM;
	n = adf_devices(&ids);
	if (n < 0) {
		fprintf(stderr, "fl-recovery: no display devices: %s\n", strerror((int)-n));
		free(p);
		return (int)n;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (device >= 0 && ids[i] != (adf_id_t)device)
			continue;
		r = try_device(g, p, ids[i]);
		if (r == 0)
			break;
	}
	free(ids);
	if (r < 0) {
		fprintf(stderr, "fl-recovery: no display with a simple post configuration%s: %s\n",
			device >= 0 ? " on that device" : "", strerror(-r));
		free(p);
		return r;
	}
	p->buf[0] = p->buf[1] = (struct buffer){ .fd = -1, .release = -1 };
	for (int i = 0; i < 2; i++) {
		struct buffer *b = &p->buf[i];

		b->fd = adf_interface_simple_buffer_alloc(g->intf, g->w, g->h, g->format,
							  &b->offset, &b->pitch);
		if (b->fd < 0) {
			r = b->fd;
			fprintf(stderr, "fl-recovery: cannot allocate a simple buffer: %s\n",
				strerror(-r));
			goto fail;
		}
		b->len = (size_t)b->offset + (size_t)b->pitch * g->h;
		b->map = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
		if (b->map == MAP_FAILED) {
			r = -errno;
			b->map = NULL;
			goto fail;
		}
	}
	g->canvas = calloc((size_t)g->w * g->h, sizeof(uint32_t));
	if (!g->canvas) {
		r = -ENOMEM;
		goto fail;
	}
	g->priv = p;
	g->dev = p->dev.fd;
	return 0;
fail:
	g->priv = p;
	gr_exit(g);
	return r;
}

/* The canvas (XRGB8888) into buffer @b in the scan-out format. */
static void convert(const struct gr *g, struct buffer *b)
{
	for (uint32_t y = 0; y < g->h; y++) {
		const uint32_t *src = g->canvas + (size_t)y * g->w;
		uint8_t *line = b->map + b->offset + (size_t)y * b->pitch;

		if (g->format == DRM_FORMAT_XRGB8888) {
			memcpy(line, src, (size_t)g->w * 4);
			continue;
		}
		for (uint32_t x = 0; x < g->w; x++) {
			uint32_t c = src[x];
			uint16_t v = (uint16_t)(((c >> 8) & 0xf800) | ((c >> 5) & 0x07e0) |
						((c >> 3) & 0x001f));

			memcpy(line + (size_t)x * 2, &v, 2);
		}
	}
}

int gr_flip(struct gr *g)
{
	struct gr_priv *p = g->priv;
	struct buffer *b = &p->buf[p->back];
	int r, fence = -1;

	if (b->release >= 0) {
		r = sync_wait(b->release, 5000);
		close(b->release);
		b->release = -1;
		if (r < 0)
			return -errno;
	}
	convert(g, b);
	r = adf_interface_simple_post_v2(g->intf, p->eng_id, g->w, g->h, g->format, b->fd,
					 b->offset, b->pitch, -1, ADF_COMPLETE_FENCE_RELEASE,
					 &fence);
	if (r < 0) {
		fprintf(stderr, "fl-recovery: post: %s\n", strerror(-r));
		return r;
	}
	b->release = fence;
	p->back ^= 1;
	return 0;
}

void gr_exit(struct gr *g)
{
	struct gr_priv *p = g->priv;

	/*
	 * A client's posts that wait for their vsync go with it: wait until the
	 * last is on screen, which the release fence of the one before says.
	 */
	if (p && p->buf[p->back].release >= 0)
		sync_wait(p->buf[p->back].release, 5000);
	if (p) {
		for (int i = 0; i < 2; i++) {
			struct buffer *b = &p->buf[i];

			if (b->map)
				munmap(b->map, b->len);
			if (b->fd >= 0)
				close(b->fd);
			if (b->release >= 0)
				close(b->release);
		}
		if (g->intf >= 0)
			close(g->intf);
		adf_device_close(&p->dev);
		free(p);
	}
	free(g->canvas);
	memset(g, 0, sizeof(*g));
	g->intf = -1;
}

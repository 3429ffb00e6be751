/* SPDX-License-Identifier: MIT */
/*
 * What the presenters of drivers built on the virtual one share
 * (display-presented.h): the memfd each vsync's frame is composed into,
 * kept from frame to frame and made again only when the mode's size
 * changes; their numeric options.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "display-presented.h"

void fl__display_frame_free(struct fl__display_frame *f)
{
	if (f->px)
		munmap((void *)(uintptr_t)f->px, (size_t)f->w * f->h * 4);
	if (f->fd >= 0)
		close(f->fd);
	f->px = NULL;
	f->fd = -1;
	f->w = f->h = 0;
}

/* @f sized for @w × @h: kept when it is, made again when not. */
static int fit(struct fl__display_frame *f, const char *name, uint32_t w, uint32_t h)
{
	size_t len = (size_t)w * h * 4;

	if (f->px && f->w == w && f->h == h)
		return 0;
	fl__display_frame_free(f);
	f->fd = fl__display_virtual_memfd(name, len);
	if (f->fd < 0)
		return f->fd;
	f->px = mmap(NULL, len, PROT_READ, MAP_SHARED, f->fd, 0);
	if (f->px == MAP_FAILED) {
		int r = -errno;

		f->px = NULL;
		fl__display_frame_free(f);
		return r;
	}
	f->w = w;
	f->h = h;
	return 0;
}

int fl__display_virtual_capture_frame(void *v, const struct fl_display_host *host, uint32_t intf,
				      const char *name, struct fl__display_frame *f)
{
	struct fl_display_mode m;
	struct fl_display_driver_buffer dst;
	bool connected;
	int r;

	r = host->intf_state(host, intf, &m, &connected);
	if (r < 0)
		return r;
	if (!m.hdisplay || !m.vdisplay)
		return -ENODATA;
	r = fit(f, name, m.hdisplay, m.vdisplay);
	if (r < 0)
		return r;
	dst = (struct fl_display_driver_buffer){ .w = m.hdisplay,
						 .h = m.vdisplay,
						 .format = FL_FOURCC('X', 'R', '2', '4'),
						 .n_planes = 1,
						 .pitch = { m.hdisplay * 4u },
						 .size = { (uint64_t)m.hdisplay * m.vdisplay * 4 },
						 .fd = { f->fd, -1, -1, -1 },
						 .in_fence = -1 };
	return fl__display_virtual_capture(v, intf, &dst);
}

int fl__display_presenter_option_uint(const struct fl_display_host *host, const char *key,
				      uint32_t min, uint32_t max, uint32_t *ret)
{
	const char *val = host->option(host, key);
	unsigned long n;
	char *end;

	if (!val)
		return 0;
	/* Digits only: strtoul() would take a sign or leading spaces. */
	if (*val < '0' || *val > '9')
		return -EINVAL;
	errno = 0;
	n = strtoul(val, &end, 10);
	if (*end || errno || n < min || n > max)
		return -EINVAL;
	*ret = (uint32_t)n;
	return 0;
}

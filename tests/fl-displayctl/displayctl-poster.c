/* SPDX-License-Identifier: MIT */
/*
 * A client that shows a known pattern for fl-displayctl's test to capture:
 * it posts one simple buffer of W × H XRGB8888 pixels (the pattern of
 * displayctl-test.py's expected(): each pixel a function of x and y, so a
 * shifted, flipped or mis-strided frame fails) on interface 0 of device 0,
 * waits until the post is on screen (its PRESENT fence), prints
 * "posted W H", and stays connected until its stdin closes: a client's post
 * on screen stays there after it leaves, but its connection also keeps the
 * service from idling out mid-test.
 *
 * usage: displayctl-poster W H
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>

#define XR24 FL_FOURCC('X', 'R', '2', '4')

static int fail(const char *what, int r, const struct fl_display_error *e)
{
	fprintf(stderr, "displayctl-poster: %s: %s\n", what, e && e->err ? e->msg : strerror(-r));
	return 1;
}

int main(int argc, char **argv)
{
	struct fl_display_handle *dev, *intf;
	struct fl_display_error e = { 0 };
	struct fl_display_buffer b;
	uint32_t w, h, off, pitch, *p;
	int fd, fence, r;
	char c;

	if (argc != 3)
		return 2;
	w = (uint32_t)atoi(argv[1]);
	h = (uint32_t)atoi(argv[2]);
	r = fl_display_device_open(0, &dev);
	if (r < 0)
		return fail("device 0", r, NULL);
	r = fl_display_interface_open(dev, 0, &intf);
	if (r < 0)
		return fail("interface 0", r, NULL);
	r = fl_display_simple_buffer_alloc(intf, w, h, XR24, &fd, &off, &pitch, &e);
	if (r < 0)
		return fail("simple buffer", r, &e);
	p = mmap(NULL, (size_t)pitch * h + off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail("mmap", -errno, NULL);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			p[(off + (size_t)y * pitch) / 4 + x] = (x * 4 & 0xffu) << 16 |
							       (y * 5 & 0xffu) << 8 |
							       ((x ^ y) * 3 & 0xffu);
	munmap(p, (size_t)pitch * h + off);
	b = (struct fl_display_buffer){ .engine = 0,
					.w = w,
					.h = h,
					.format = XR24,
					.n_planes = 1,
					.fd = { fd },
					.offset = { off },
					.pitch = { pitch },
					.acquire_fence = -1 };
	r = fl_display_simple_post(intf, &b, FL_DISPLAY_FENCE_PRESENT, &fence, &e);
	if (r < 0)
		return fail("simple post", r, &e);
	r = fl_fence_fd_wait(fence, 10000);
	if (r < 0)
		return fail("waiting for the present fence", r, NULL);
	printf("posted %u %u\n", w, h);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	close(fence);
	close(fd);
	fl_display_close(intf);
	fl_display_close(dev);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * An fbdev program as they are written, <linux/fb.h> and POSIX only, run
 * under fenceline-fbdev by fbdev-test.py. It prints what it finds and
 * waits for a line on stdin after each step that the test captures:
 *   info     the var and fix
 *   page0    pattern A drawn on the first page
 *   page1    pattern B on the second page, panned to
 *   xbgr     the format switched to XBGR8888 (FBIOPUT_VSCREENINFO)
 *   bad      a 24-bit var refused (EINVAL) and the var as it was
 *   blank    FBIOBLANK powerdown, then (after the line) unblank
 *   vsync    FBIO_WAITFORVSYNC twice, CRTC 1 refused
 *   cmap     FBIOPUTCMAP then FBIOGETCMAP
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fb.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static void step(const char *name)
{
	char line[64];

	printf("step %s\n", name);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		_exit(3);
}

static uint32_t pattern(int which, uint32_t x, uint32_t y)
{
	if (which == 0)
		return (x * 4 & 0xff) << 16 | (y * 5 & 0xff) << 8 | ((x ^ y) * 3 & 0xff);
	return (255 - (x & 0xff)) << 16 | (x + y) % 256 << 8 | (y * 7 & 0xff);
}

int main(void)
{
	struct fb_var_screeninfo var, var2;
	struct fb_fix_screeninfo fix;
	uint32_t crtc = 0;
	uint8_t *mem;
	int fd = open("/dev/fb0", O_RDWR);

	if (fd < 0) {
		perror("open /dev/fb0");
		return 1;
	}
	if (ioctl(fd, FBIOGET_VSCREENINFO, &var) < 0 || ioctl(fd, FBIOGET_FSCREENINFO, &fix) < 0) {
		perror("FBIOGET");
		return 1;
	}
	printf("var %u %u %u %u %u r%u/%u g%u/%u b%u/%u\n", var.xres, var.yres, var.xres_virtual,
	       var.yres_virtual, var.bits_per_pixel, var.red.offset, var.red.length,
	       var.green.offset, var.green.length, var.blue.offset, var.blue.length);
	printf("fix %s %u %u\n", fix.id, fix.line_length, fix.smem_len);
	step("info");
	mem = mmap(NULL, fix.smem_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (int page = 0; page < 2; page++)
		for (uint32_t y = 0; y < var.yres; y++)
			for (uint32_t x = 0; x < var.xres; x++)
				memcpy(mem + (size_t)(y + page * var.yres) * fix.line_length +
					       x * 4,
				       &(uint32_t){ pattern(page, x, y) }, 4);
	step("page0");
	var.yoffset = var.yres;
	printf("pan %d\n", ioctl(fd, FBIOPAN_DISPLAY, &var));
	step("page1");
	var2 = var;
	var2.red.offset = 0;
	var2.blue.offset = 16;
	printf("xbgr %d red %u blue %u\n", ioctl(fd, FBIOPUT_VSCREENINFO, &var2), var2.red.offset,
	       var2.blue.offset);
	step("xbgr");
	/* A format the helper's table lacks, then a size no mode has: each refused alone. */
	for (int i = 0; i < 2; i++) {
		struct fb_var_screeninfo bad = var2;
		int r;

		if (i == 0)
			bad.bits_per_pixel = 24;
		else
			bad.xres = 17;
		errno = 0;
		r = ioctl(fd, FBIOPUT_VSCREENINFO, &bad);
		printf("%s %d %s bpp %u xres %u\n", i ? "badsize" : "bad", r, strerror(errno),
		       bad.bits_per_pixel, bad.xres);
	}
	ioctl(fd, FBIOGET_VSCREENINFO, &var);
	printf("after %u %u red %u\n", var.bits_per_pixel, var.xres, var.red.offset);
	step("bad");
	printf("blank %d\n", ioctl(fd, FBIOBLANK, FB_BLANK_POWERDOWN));
	step("blank");
	printf("unblank %d\n", ioctl(fd, FBIOBLANK, FB_BLANK_UNBLANK));
	step("unblank");
	{
		int a = ioctl(fd, FBIO_WAITFORVSYNC, &crtc),
		    b = ioctl(fd, FBIO_WAITFORVSYNC, &crtc);

		int c;

		crtc = 1;
		errno = 0;
		c = ioctl(fd, FBIO_WAITFORVSYNC, &crtc);
		printf("vsync %d %d crtc1 %d %s\n", a, b, c, strerror(errno));
	}
	step("vsync");
	{
		uint16_t r[4] = { 1, 2, 3, 4 }, g[4] = { 5, 6, 7, 8 }, b[4] = { 9, 10, 11, 12 };
		uint16_t r2[4] = { 0 }, g2[4] = { 0 }, b2[4] = { 0 };
		struct fb_cmap put = { 2, 4, r, g, b, NULL }, get = { 2, 4, r2, g2, b2, NULL };
		int p = ioctl(fd, FBIOPUTCMAP, &put), q = ioctl(fd, FBIOGETCMAP, &get);

		printf("cmap %d %d %s\n", p, q,
		       !memcmp(r, r2, 8) && !memcmp(g, g2, 8) && !memcmp(b, b2, 8) ? "same"
										   : "differs");
	}
	step("cmap");
	munmap(mem, fix.smem_len);
	close(fd);
	return 0;
}

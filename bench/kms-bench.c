/* SPDX-License-Identifier: MIT */
/*
 * The kms driver's costs (docs/benchmarks.md, "kms"), run in the VKMS VM of
 * tests/vm/kms-vm.sh (`meson test -C build --benchmark kms-vm`), where
 * /dev/dri has a card; elsewhere it exits 77.
 *
 * 1. A 1920x1080 XRGB8888 frame (a mode VKMS's connector lists, and well
 *    inside its 8192x8192 framebuffers) made scan-out-able per frame, the
 *    driver's three ways: a dma-buf imported with PRIME (drmPrimeFDToHandle,
 *    AddFB2, RmFB), a sealed memfd made a dma-buf by udmabuf and imported,
 *    and a memfd copied into a mapped dumb buffer: mapped when it is sealed
 *    against shrinking, read with pread() when not, beside a
 *    memcpy() of the frame in the same run (the ratio is the figure).
 * 2. Flip pacing through fl-displayd's kms driver: 120 posts of two simple
 *    buffers, queued ahead, their PRESENT fences' times (the page-flip
 *    events' kernel timestamps) and the times the client saw them, as
 *    ratios to the mode's vblank period.
 *
 * Prints "name value unit" lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/udmabuf.h>

#include <xf86drm.h>
#include <xf86drmMode.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#define W    1920
#define H    1080
#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define RUNS 15

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noreturn)) static void die(const char *what, int err)
{
	fprintf(stderr, "kms-bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_us(uint64_t *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp_u64);
	return (double)t[n / 2] / 1000.0;
}

static int card_open(void)
{
	char path[32];

	for (int i = 0; i < 16; i++) {
		drmModeRes *res;
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		res = drmModeGetResources(fd);
		if (res && res->count_crtcs > 0) {
			drmModeFreeResources(res);
			return fd;
		}
		drmModeFreeResources(res);
		close(fd);
	}
	return -1;
}

/* The driver's per-frame work for each way a buffer reaches a plane. */
static void copies(int card)
{
	size_t len = (size_t)W * H * 4;
	uint64_t t[RUNS], t0;
	uint32_t handle, pitch, fb, dumb;
	uint64_t size, off;
	char *a = malloc(len), *b = malloc(len), *map;
	int memfd, sealed, dmabuf, udma = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	double memcpy_us, prime_us, copy_us;

	if (!a || !b)
		die("malloc", ENOMEM);
	memset(a, 0x5a, len);
	memset(b, 0, len);
	for (int i = 0; i < RUNS; i++) {
		t0 = now_ns();
		memcpy(b, a, len);
		t[i] = now_ns() - t0;
		a[i] ^= b[len - 1 - (size_t)i]; /* keeps the copies from being elided */
	}
	memcpy_us = median_us(t, RUNS);
	printf("kms_frame %ux%u XRGB8888 %zu bytes\n", W, H, len);
	printf("memcpy_frame_us %.1f us\n", memcpy_us);

	/* A dma-buf: a dumb buffer of the card's, exported (what a simple buffer is). */
	if (drmModeCreateDumbBuffer(card, W, H, 32, 0, &handle, &pitch, &size) < 0 ||
	    drmPrimeHandleToFD(card, handle, DRM_CLOEXEC | DRM_RDWR, &dmabuf) < 0)
		die("a dumb buffer exported", errno);
	drmModeDestroyDumbBuffer(card, handle);
	for (int i = 0; i < RUNS; i++) {
		uint32_t h[4] = { 0 }, p[4] = { pitch }, o[4] = { 0 };

		t0 = now_ns();
		if (drmPrimeFDToHandle(card, dmabuf, &h[0]) < 0 ||
		    drmModeAddFB2(card, W, H, XR24, h, p, o, &fb, 0) < 0)
			die("PRIME import", errno);
		drmCloseBufferHandle(card, h[0]);
		drmModeRmFB(card, fb);
		t[i] = now_ns() - t0;
	}
	prime_us = median_us(t, RUNS);
	printf("kms_prime_import_frame_us %.1f us (%.3f x memcpy)\n", prime_us,
	       prime_us / memcpy_us);

	/* A memfd sealed against shrinking, through udmabuf. */
	sealed = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (sealed < 0 || ftruncate(sealed, (off_t)len) < 0 ||
	    pwrite(sealed, a, len, 0) != (ssize_t)len ||
	    fcntl(sealed, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
		die("a sealed memfd", errno);
	if (udma >= 0) {
		for (int i = 0; i < RUNS; i++) {
			struct udmabuf_create c = { (uint32_t)sealed, UDMABUF_FLAGS_CLOEXEC, 0,
						    len };
			uint32_t h[4] = { 0 }, p[4] = { W * 4 }, o[4] = { 0 };
			int d;

			t0 = now_ns();
			d = ioctl(udma, UDMABUF_CREATE, &c);
			if (d < 0 || drmPrimeFDToHandle(card, d, &h[0]) < 0 ||
			    drmModeAddFB2(card, W, H, XR24, h, p, o, &fb, 0) < 0)
				die("udmabuf import", errno);
			drmCloseBufferHandle(card, h[0]);
			drmModeRmFB(card, fb);
			close(d);
			t[i] = now_ns() - t0;
		}
		printf("kms_udmabuf_import_frame_us %.1f us (%.3f x memcpy)\n", median_us(t, RUNS),
		       median_us(t, RUNS) / memcpy_us);
	}

	/* A memfd copied into a dumb buffer. */
	memfd = memfd_create("bench", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, (off_t)len) < 0 ||
	    pwrite(memfd, a, len, 0) != (ssize_t)len)
		die("a memfd", errno);
	if (drmModeCreateDumbBuffer(card, W, H, 32, 0, &dumb, &pitch, &size) < 0 ||
	    drmModeMapDumbBuffer(card, dumb, &off) < 0)
		die("a dumb buffer", errno);
	map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, card, (off_t)off);
	if (map == MAP_FAILED)
		die("mapping a dumb buffer", errno);
	/* Sealed against shrinking: mapped and copied row by row, as the driver does. */
	for (int i = 0; i < RUNS; i++) {
		const char *src;

		t0 = now_ns();
		src = mmap(NULL, len, PROT_READ, MAP_SHARED, sealed, 0);
		if (src == MAP_FAILED)
			die("mapping the memfd", errno);
		for (uint32_t y = 0; y < H; y++)
			memcpy(map + (size_t)y * pitch, src + (size_t)y * W * 4, (size_t)W * 4);
		munmap((void *)src, len);
		t[i] = now_ns() - t0;
	}
	printf("kms_dumb_copy_sealed_frame_us %.1f us (%.3f x memcpy)\n", median_us(t, RUNS),
	       median_us(t, RUNS) / memcpy_us);
	/* Not sealed: read row by row with pread(), as the driver does (no SIGBUS). */
	for (int i = 0; i < RUNS; i++) {
		t0 = now_ns();
		for (uint32_t y = 0; y < H; y++)
			if (pread(memfd, map + (size_t)y * pitch, (size_t)W * 4,
				  (off_t)y * W * 4) != (ssize_t)W * 4)
				die("reading the memfd", EIO);
		t[i] = now_ns() - t0;
	}
	copy_us = median_us(t, RUNS);
	printf("kms_dumb_copy_pread_frame_us %.1f us (%.3f x memcpy)\n", copy_us,
	       copy_us / memcpy_us);
	printf("kms_copy_vs_zero_copy %.1f x\n", copy_us / prime_us);
	munmap(map, (size_t)size);
	drmModeDestroyDumbBuffer(card, dumb);
	close(memfd);
	close(sealed);
	close(dmabuf);
	if (udma >= 0)
		close(udma);
	free(a);
	free(b);
}

/* Posts through fl-displayd's kms driver, paced by the kernel. */
static void pacing(void)
{
	enum { N = 120, AHEAD = 6 };
	static const char ini[] = "[device kms]\ndriver = kms\n";
	struct fl_display_handle *dev, *ih;
	struct fl_display_interface_data d = { 0 };
	struct fl_display_mode modes[FL_DISPLAY_MAX_MODES], m = { 0 };
	struct fl_display_error e = { 0 };
	uint64_t ts[N], seen[N], period, kern = 0, client = 0, single = 0;
	int fence[N], fds[2], r, fd;
	uint32_t *ids, off, pitch, eng = UINT32_MAX;
	char path[] = "/tmp/kms-bench.ini";

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, ini, sizeof(ini) - 1) != (ssize_t)sizeof(ini) - 1)
		die("the config", errno);
	close(fd);
	setenv("FENCELINE_DISPLAY_CONFIG", path, 1);
	if ((r = fl_display_devices(&ids)) < 1 || fl_display_device_open(ids[0], &dev) < 0)
		die("the kms device", r < 0 ? r : ENODEV);
	free(ids);
	/* Interface 0 (VKMS's Virtual-1) at 640x480, its first engine (the primary plane). */
	if (fl_display_interface_open(dev, 0, &ih) < 0)
		die("interface 0", EINVAL);
	d.modes = modes;
	d.n_modes = FL_DISPLAY_MAX_MODES;
	fl_display_interface_get_data(ih, &d, NULL);
	for (size_t i = 0; i < d.n_modes; i++)
		if (modes[i].hdisplay == 640 && modes[i].vdisplay == 480)
			m = modes[i];
	for (uint32_t i = 0; i < 8 && eng == UINT32_MAX; i++)
		if (fl_display_attach(dev, i, 0, NULL) == 0)
			eng = i;
	if (!m.clock || eng == UINT32_MAX || (r = fl_display_set_mode(ih, &m, &e)) < 0 ||
	    (r = fl_display_blank(ih, FL_DISPLAY_DPMS_ON, &e)) < 0)
		die(e.msg[0] ? e.msg : "lighting 640x480", r ? r : EINVAL);
	period = (uint64_t)m.htotal * m.vtotal * 1000000u / m.clock;
	for (int i = 0; i < 2; i++)
		if ((r = fl_display_simple_buffer_alloc(ih, 640, 480, XR24, &fds[i], &off, &pitch,
							&e)) < 0)
			die("a simple buffer", r);
	for (int i = 0; i < N + AHEAD; i++) {
		if (i < N) {
			struct fl_display_buffer b = { .engine = eng,
						       .w = 640,
						       .h = 480,
						       .format = XR24,
						       .n_planes = 1,
						       .fd = { fds[i % 2], -1, -1, -1 },
						       .pitch = { pitch },
						       .acquire_fence = -1 };
			struct fl_display_post p = { .intfs = (uint32_t[]){ 0 },
						     .n_intfs = 1,
						     .bufs = &b,
						     .n_bufs = 1,
						     .fence_type = FL_DISPLAY_FENCE_PRESENT };

			if ((r = fl_display_post(dev, &p, &fence[i], &e)) < 0)
				die(e.msg, r);
		}
		if (i >= AHEAD) {
			int k = i - AHEAD;
			struct fl_fence_info info;

			if (fl_fence_fd_wait(fence[k], 10000) < 0 ||
			    fl_fence_fd_get_info(fence[k], &info, NULL, 0) < 0)
				die("a present fence", ETIME);
			seen[k] = now_ns();
			ts[k] = info.timestamp_ns;
			close(fence[k]);
		}
	}
	/* The first few share the modeset's start: counted from the tenth. */
	for (int i = 10; i < N; i++) {
		kern += ts[i] - ts[i - 1];
		client += seen[i] - seen[i - 1];
		single += (ts[i] - ts[i - 1]) * 100 < period * 150;
	}
	printf("kms_vblank_period_us %.1f us (%ux%u)\n", (double)period / 1000.0, m.hdisplay,
	       m.vdisplay);
	printf("kms_flip_interval_kernel %.3f x vblank period\n",
	       (double)kern / (N - 10) / (double)period);
	printf("kms_flip_interval_client %.3f x vblank period\n",
	       (double)client / (N - 10) / (double)period);
	printf("kms_flips_one_vblank_apart %.1f %%\n", 100.0 * (double)single / (N - 10));
	close(fds[0]);
	close(fds[1]);
	fl_display_blank(ih, FL_DISPLAY_DPMS_OFF, NULL);
	fl_display_close(ih);
	fl_display_close(dev);
	fl_display_disconnect();
}

int main(void)
{
	int card = card_open();

	if (card < 0) {
		printf("kms-bench: skipped: no KMS device in /dev/dri\n");
		return 77;
	}
	copies(card);
	close(card);
	pacing();
	return 0;
}

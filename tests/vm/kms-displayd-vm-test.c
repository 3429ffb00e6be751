/* SPDX-License-Identifier: MIT */
/*
 * fl-displayd's kms driver (docs/display.md, "The kms driver") on VKMS in
 * the VM of tests/vm/kms-vm.sh, through the public display API only: a
 * device whose config is "driver = kms" alone, its objects read from the
 * card; a modeset; posts flipped one per vblank, in order, with present
 * fences carrying the kernel's timestamps; a TEST_ONLY refusal that names
 * the plane; an overlay and the primary captured by the writeback
 * connector, compared pixel by pixel with the service's own compositor;
 * and the copies a memfd costs where a dma-buf costs none; a kernel
 * sync_file as acquire fence, the plane's IN_FENCE_FD on kms and waited by
 * the service on the virtual driver. Where /dev/dri has no KMS card every
 * test skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>
#include <xf86drmMode.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "compose.h"
#include "display-helpers.h"
#include "runner.h"
#include "sw-sync-uapi.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define AR24 FL_FOURCC('A', 'R', '2', '4')

/* The service's device on the card, its objects found by name. */
struct kd {
	struct fl_display_handle *dev;
	uint32_t dev_id;
	struct fl_display_device_info info;
	int virt, wb; /* interfaces: the virtual connector, the writeback one */
	int primary, overlay, cursor; /* engines */
	char path[64];
};

/*
 * Skips without a KMS card; else waits until nobody is its DRM master: the
 * service of the test before (each test has its own runtime directory, so
 * its own service) exits once idle, and only then can this test's drive it.
 */
static void need_kms(void)
{
	char path[32];

	for (int i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		drmModeRes *res;

		if (fd < 0)
			continue;
		res = drmModeGetResources(fd);
		if (res && res->count_crtcs > 0) {
			int st =
				open("/sys/class/drm/card0-Virtual-1/status", O_WRONLY | O_CLOEXEC);

			/* A hotplug test that failed half-way leaves no connector forced off. */
			if (st >= 0) {
				(void)!write(st, "detect", 6);
				close(st);
			}
			drmModeFreeResources(res);
			for (int t = 0; drmSetMaster(fd) < 0; t++) {
				if (t == 1500)
					fl__test_fail(
						__FILE__, __LINE__,
						"%s: the service of the test before still holds "
						"it after 30 s",
						path);
				usleep(20000);
			}
			drmDropMaster(fd);
			close(fd);
			return;
		}
		drmModeFreeResources(res);
		close(fd);
	}
	fl_test_skip("no KMS device in /dev/dri");
}

static void kd_open(struct kd *k)
{
	static const char ini[] = "[device kms]\ndriver = kms\n";
	uint32_t *ids = NULL;
	int fd;

	need_kms();
	memset(k, 0, sizeof(*k));
	k->virt = k->wb = k->primary = k->overlay = k->cursor = -1;
	snprintf(k->path, sizeof(k->path), "/tmp/fl-kms-config.ini");
	fd = open(k->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fl_assert(fd >= 0);
	fl_assert_int_eq(write(fd, ini, sizeof(ini) - 1), (ssize_t)sizeof(ini) - 1);
	close(fd);
	fl_assert_int_eq(setenv("FENCELINE_DISPLAY_CONFIG", k->path, 1), 0);
	fl_assert_int_eq(fl_display_devices(&ids), 1);
	fl_assert_int_eq(fl_display_device_open(ids[0], &k->dev), 0);
	k->dev_id = ids[0];
	free(ids);
	fl_assert_int_eq(fl_display_device_get_info(k->dev, &k->info, sizeof(k->info), NULL), 0);
	for (uint32_t i = 0; i < k->info.n_interfaces; i++) {
		struct fl_display_handle *h;
		struct fl_display_interface_data d = { 0 };

		fl_assert_int_eq(fl_display_interface_open(k->dev, i, &h), 0);
		fl_assert_int_eq(fl_display_interface_get_data(h, &d, NULL), 0);
		if (!strncmp(d.name, "Virtual-", 8) && k->virt < 0)
			k->virt = (int)i;
		if (d.type == FL_DISPLAY_INTF_MEMORY && k->wb < 0)
			k->wb = (int)i;
		fl_display_close(h);
	}
	for (uint32_t i = 0; i < k->info.n_engines; i++) {
		struct fl_display_handle *h;
		struct fl_display_engine_data d = { 0 };

		fl_assert_int_eq(fl_display_engine_open(k->dev, i, &h), 0);
		fl_assert_int_eq(fl_display_engine_get_data(h, &d, NULL), 0);
		if (!strncmp(d.name, "primary-", 8) && k->primary < 0)
			k->primary = (int)i;
		if (!strncmp(d.name, "overlay-", 8) && k->overlay < 0)
			k->overlay = (int)i;
		if (!strncmp(d.name, "cursor-", 7) && k->cursor < 0)
			k->cursor = (int)i;
		fl_display_close(h);
	}
}

static void kd_close(struct kd *k)
{
	fl_display_close(k->dev);
	fl_display_disconnect();
}

/* Interface @intf in its @w × @h mode, the primary and overlay attached, lit; its handle. */
static struct fl_display_handle *light(struct kd *k, int intf, uint32_t w, uint32_t h,
				       struct fl_display_mode *ret_mode)
{
	struct fl_display_handle *ih;
	struct fl_display_interface_data d = { 0 };
	struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
	struct fl_display_error e = { 0 };
	int r;

	fl_assert(intf >= 0);
	fl_assert_int_eq(fl_display_interface_open(k->dev, (uint32_t)intf, &ih), 0);
	d.modes = modes;
	d.n_modes = FL_DISPLAY_MAX_MODES;
	fl_assert_int_eq(fl_display_interface_get_data(ih, &d, NULL), 0);
	for (size_t i = 0; i < d.n_modes; i++)
		if (modes[i].hdisplay == w && modes[i].vdisplay == h) {
			*ret_mode = modes[i];
			break;
		}
	fl_assert_int_eq(ret_mode->hdisplay, w);
	r = fl_display_set_mode(ih, ret_mode, &e);
	if (r)
		fl__test_fail(__FILE__, __LINE__, "set_mode: %s: %s", strerror(-r), e.msg);
	for (int eng = 0; eng < 2; eng++) {
		int id = eng ? k->overlay : k->primary;

		if (id < 0)
			continue;
		r = fl_display_attach(k->dev, (uint32_t)id, (uint32_t)intf, &e);
		fl_assert(r == 0 || r == -EALREADY);
	}
	r = fl_display_blank(ih, FL_DISPLAY_DPMS_ON, &e);
	if (r && r != -EALREADY)
		fl__test_fail(__FILE__, __LINE__, "blank ON: %s: %s", strerror(-r), e.msg);
	return ih;
}

static void unlight(struct fl_display_handle *ih)
{
	fl_assert_int_eq(fl_display_blank(ih, FL_DISPLAY_DPMS_OFF, NULL), 0);
	fl_display_close(ih);
}

/* A memfd of @size bytes, mapped; sealed against shrinking when @seal (udmabuf takes it). */
static int memfd_new(size_t size, bool seal, uint32_t **ret_map)
{
	int fd = memfd_create("kms-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	fl_assert(fd >= 0);
	fl_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	if (seal)
		fl_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	*ret_map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(*ret_map != MAP_FAILED);
	return fd;
}

static uint32_t pattern(uint32_t x, uint32_t y, uint32_t seed)
{
	return 0xff000000u | ((x * 7 + seed) & 0xff) << 16 | ((y * 3 + seed * 5) & 0xff) << 8 |
	       ((x ^ y ^ seed) & 0xff);
}

static struct fl_display_buffer buffer(uint32_t engine, uint32_t w, uint32_t h, uint32_t format,
				       int fd, uint32_t pitch)
{
	return (struct fl_display_buffer){ .engine = engine,
					   .w = w,
					   .h = h,
					   .format = format,
					   .n_planes = 1,
					   .fd = { fd, -1, -1, -1 },
					   .pitch = { pitch },
					   .acquire_fence = -1 };
}

static int post(struct kd *k, int intf, const struct fl_display_buffer *bufs, size_t n,
		const struct fl_display_layer *layers, const struct fl_display_writeback *wb,
		uint32_t flags, int *fence, struct fl_display_error *e)
{
	uint32_t id = (uint32_t)intf;

	return fl_test_post(k->dev, &id, 1, bufs, n, layers, wb, flags, fence, e);
}

/* The frame period of @m in ns. */
static uint64_t period_ns(const struct fl_display_mode *m)
{
	return (uint64_t)m->htotal * m->vtotal * 1000000u / m->clock;
}

/* Whether @d is a whole number (≥ 1) of periods @p, ±1 % (the kernel's arithmetic). */
static bool whole_frames(uint64_t d, uint64_t p)
{
	uint64_t n = (d + p / 2) / p;

	return n >= 1 && (d > n * p ? d - n * p : n * p - d) * 100 <= p;
}

/* A counter of the driver's, from the service's dump ("driver counters: NAME N, ..."). */
static uint64_t counter(const char *name)
{
	char buf[65536], key[64];
	const char *at;
	ssize_t n;
	int fd;

	fl_assert_int_eq(fl_introspect_display_dump(0, &fd), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	fl_assert(n > 0);
	buf[n] = 0;
	snprintf(key, sizeof(key), " %s ", name);
	at = strstr(buf, "driver counters:");
	fl_assert(at != NULL);
	at = strstr(at, key);
	fl_assert(at != NULL);
	return strtoull(at + strlen(key), NULL, 10);
}

FL_TEST(kms_objects_come_from_the_card)
{
	struct kd k;
	struct fl_display_handle *h;
	struct fl_display_interface_data d = { 0 };
	struct fl_display_engine_data ed = { 0 };
	struct fl_display_attachment allowed[64];
	struct fl_display_device_data dd = { .allowed = allowed, .n_allowed = 64 };
	uint32_t formats[FL_DISPLAY_MAX_FORMATS];
	char name[FL_DISPLAY_NAME_LEN];
	bool xr24 = false, pv = false, pw = false;

	kd_open(&k);
	/* VKMS: Virtual-1 and Writeback-1; a primary, an overlay and a cursor plane. */
	fl_assert_int_eq(k.info.n_interfaces, 2);
	fl_assert(k.virt >= 0 && k.wb >= 0 && k.primary >= 0 && k.overlay >= 0 && k.cursor >= 0);
	fl_assert_int_eq(fl_display_interface_open(k.dev, (uint32_t)k.virt, &h), 0);
	fl_assert_int_eq(fl_display_interface_get_data(h, &d, NULL), 0);
	fl_assert_str_eq(d.name, "Virtual-1");
	fl_assert(d.type >= FL_DISPLAY_INTF_CUSTOM);
	fl_assert_int_eq(fl_display_interface_type_name(h, name, NULL), 0);
	fl_assert_str_eq(name, "Virtual");
	fl_assert(d.hotplug_detect);
	fl_assert(d.n_modes > 1);
	/* The connector's preferred mode (VKMS: 1024x768) is current; every interface is off. */
	fl_assert_int_eq(d.current_mode.hdisplay, 1024);
	fl_assert_int_eq(d.dpms_state, FL_DISPLAY_DPMS_OFF);
	fl_display_close(h);
	fl_assert_int_eq(fl_display_engine_open(k.dev, (uint32_t)k.primary, &h), 0);
	ed.formats = formats;
	ed.n_formats = FL_DISPLAY_MAX_FORMATS;
	fl_assert_int_eq(fl_display_engine_get_data(h, &ed, NULL), 0);
	for (size_t i = 0; i < ed.n_formats; i++)
		xr24 |= formats[i] == XR24;
	fl_assert(xr24);
	fl_display_close(h);
	fl_assert_int_eq(fl_display_device_get_data(k.dev, &dd, NULL), 0);
	for (size_t i = 0; i < dd.n_allowed && i < 64; i++) {
		pv |= allowed[i].engine == (uint32_t)k.primary &&
		      allowed[i].interface == (uint32_t)k.virt;
		pw |= allowed[i].engine == (uint32_t)k.primary &&
		      allowed[i].interface == (uint32_t)k.wb;
	}
	fl_assert(pv && pw);
	kd_close(&k);
}

FL_TEST(kms_posts_flip_in_order_one_per_vblank_with_the_kernel_s_timestamps)
{
	enum { N = 8 };
	struct kd k;
	struct fl_display_mode m = { 0 };
	struct fl_display_handle *ih;
	struct fl_display_error e = { 0 };
	struct fl_fence_info info[N];
	uint64_t ts[N], p, vs[4], out_fences;
	int fds[2], fence[N];
	uint32_t off, pitch;

	kd_open(&k);
	ih = light(&k, k.virt, 640, 480, &m);
	p = period_ns(&m);
	printf("mode %ux%u period_ns %" PRIu64 "\n", m.hdisplay, m.vdisplay, p);
	fl_assert_int_eq(fl_display_set_event(ih, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	for (int i = 0; i < 2; i++) {
		uint32_t *px;

		fl_assert_int_eq(fl_display_simple_buffer_alloc(ih, 640, 480, XR24, &fds[i], &off,
								&pitch, &e),
				 0);
		px = mmap(NULL, (size_t)pitch * 480, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
		fl_assert(px != MAP_FAILED);
		for (uint32_t y = 0; y < 480; y++)
			for (uint32_t x = 0; x < 640; x++)
				px[y * pitch / 4 + x] = pattern(x, y, (uint32_t)i);
		munmap(px, (size_t)pitch * 480);
	}
	out_fences = counter("out_fence_flips");
	/* Queued at once: the service hands the kernel one commit per vblank. */
	for (int i = 0; i < N; i++) {
		struct fl_display_buffer b =
			buffer((uint32_t)k.primary, 640, 480, XR24, fds[i % 2], pitch);
		int r = post(&k, k.virt, &b, 1, NULL, NULL, 0, &fence[i], &e);

		if (r)
			fl__test_fail(__FILE__, __LINE__, "post %d: %s: %s", i, strerror(-r),
				      e.msg);
	}
	fl_assert_int_eq(fl_fence_fd_wait(fence[N - 1], 10000), 0);
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(fl_fence_fd_get_info(fence[i], &info[i], NULL, 0), 0);
		fl_assert_int_eq(info[i].status, 1);
		ts[i] = info[i].timestamp_ns;
		close(fence[i]);
	}
	/*
	 * In order, each a whole number of frames after the one before (the
	 * vblank's time the kernel reported, not when the service heard it).
	 * The first may share the vblank of the modeset.
	 */
	for (int i = 2; i < N; i++) {
		printf("flip %d +%" PRIu64 " ns\n", i, ts[i] - ts[i - 1]);
		fl_assert(ts[i] > ts[i - 1]);
		fl_assert(whole_frames(ts[i] - ts[i - 1], p));
	}
	/* Each present time came from its commit's OUT_FENCE_PTR sync_file. */
	fl_assert_int_eq(counter("out_fence_flips"), out_fences + N);
	/* VSYNC events, from the kernel's vblank events: whole frames apart too. */
	for (int i = 0; i < 4; i++) {
		struct fl_display_event *ev;

		fl_assert_int_eq(fl_display_read_event(ih, &ev), 0);
		fl_assert_int_eq(ev->type, FL_DISPLAY_EVENT_VSYNC);
		vs[i] = ((struct fl_display_vsync_event *)ev)->timestamp;
		free(ev);
		if (i)
			fl_assert(whole_frames(vs[i] - vs[i - 1], p));
	}
	close(fds[0]);
	close(fds[1]);
	unlight(ih);
	kd_close(&k);
}

FL_TEST(kms_test_only_names_the_plane_the_kernel_refused)
{
	struct kd k;
	struct fl_display_mode m = { 0 };
	struct fl_display_handle *ih, *eh;
	struct fl_display_engine_data ed = { 0 };
	struct fl_display_error e = { 0 };
	struct fl_display_buffer b[2];
	struct fl_display_layer l[2];
	uint32_t *px, *ox;
	int fd, ofd, r;

	kd_open(&k);
	ih = light(&k, k.virt, 640, 480, &m);
	fl_assert_int_eq(fl_display_engine_open(k.dev, (uint32_t)k.overlay, &eh), 0);
	fl_assert_int_eq(fl_display_engine_get_data(eh, &ed, NULL), 0);
	fl_display_close(eh);
	fd = memfd_new(640 * 480 * 4, false, &px);
	ofd = memfd_new(64 * 64 * 4, false, &ox);
	b[0] = buffer((uint32_t)k.primary, 640, 480, XR24, fd, 640 * 4);
	b[1] = buffer((uint32_t)k.overlay, 64, 64, AR24, ofd, 64 * 4);
	for (int i = 0; i < 2; i++)
		l[i] = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
						  .src_w = b[i].w << 16,
						  .src_h = b[i].h << 16,
						  .dst_w = b[i].w,
						  .dst_h = b[i].h,
						  .zpos = (uint32_t)i,
						  .blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
						  .alpha = 0xffff };
	fl_assert_int_eq(post(&k, k.virt, b, 2, l, NULL, FL_DISPLAY_POST_TEST_ONLY, NULL, &e), 0);
	/* VKMS's planes do not scale; the service's checks allow it: the kernel refuses. */
	l[1].dst_w = l[1].dst_h = 128;
	r = post(&k, k.virt, b, 2, l, NULL, FL_DISPLAY_POST_TEST_ONLY, NULL, &e);
	printf("refused: %s (%s)\n", e.msg, strerror(-r));
	fl_assert(r < 0);
	fl_assert(strstr(e.msg, ed.name) != NULL);
	fl_assert(strstr(e.msg, "buffer 1") != NULL);
	munmap(px, 640 * 480 * 4);
	munmap(ox, 64 * 64 * 4);
	close(fd);
	close(ofd);
	unlight(ih);
	kd_close(&k);
}

FL_TEST(kms_writeback_captures_primary_and_overlay_as_the_service_composes_them)
{
	enum { W = 640, H = 480, OW = 120, OH = 90 };
	struct kd k;
	struct fl_display_mode m = { 0 };
	struct fl_display_handle *ih;
	struct fl_display_error e = { 0 };
	struct fl_display_buffer b[2];
	struct fl_display_layer l[2];
	struct fl_display_compose_layer cl[2];
	struct fl_display_compositor *c;
	struct fl_display_frame fr = { 0 };
	uint32_t *px, *ox, *out, *ref, bad = 0;
	int fd, ofd, wfd, fence, r;

	kd_open(&k);
	/* Writeback is its CRTC's only output (VKMS's clone check): the driver routes it so. */
	ih = light(&k, k.wb, W, H, &m);
	fd = memfd_new(W * H * 4, false, &px);
	ofd = memfd_new(OW * OH * 4, false, &ox);
	wfd = memfd_new(W * H * 4, false, &out);
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < W; x++)
			px[y * W + x] = pattern(x, y, 3);
	/* Opaque green, opaque red, and fully transparent: exact in any blender. */
	for (uint32_t y = 0; y < OH; y++)
		for (uint32_t x = 0; x < OW; x++)
			ox[y * OW + x] = x < OW / 3	  ? 0xff00ff00u
					 : x < 2 * OW / 3 ? 0xffff0000u
							  : 0;
	b[0] = buffer((uint32_t)k.primary, W, H, XR24, fd, W * 4);
	b[1] = buffer((uint32_t)k.overlay, OW, OH, AR24, ofd, OW * 4);
	for (int i = 0; i < 2; i++)
		l[i] = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
						  .src_w = b[i].w << 16,
						  .src_h = b[i].h << 16,
						  .dst_x = i ? 200 : 0,
						  .dst_y = i ? 150 : 0,
						  .dst_w = b[i].w,
						  .dst_h = b[i].h,
						  .zpos = (uint32_t)i,
						  .blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
						  .alpha = 0xffff };
	struct fl_display_writeback wb = { wfd, XR24, W, H, 0, W * 4 };

	r = post(&k, k.wb, b, 2, l, &wb, 0, &fence, &e);
	if (r)
		fl__test_fail(__FILE__, __LINE__, "post: %s: %s", strerror(-r), e.msg);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	/* The reference: the service's compositor, on the same buffers and layers. */
	ref = calloc(W * H, 4);
	fl_assert(ref != NULL);
	for (int i = 0; i < 2; i++)
		cl[i] = (struct fl_display_compose_layer){
			.fourcc = b[i].format,
			.w = b[i].w,
			.h = b[i].h,
			.n_planes = 1,
			.plane = { { i ? (void *)ox : (void *)px, (uint64_t)b[i].w * b[i].h * 4, 0,
				     b[i].pitch[0] } },
			.src_w = l[i].src_w,
			.src_h = l[i].src_h,
			.dst_x = l[i].dst_x,
			.dst_y = l[i].dst_y,
			.dst_w = l[i].dst_w,
			.dst_h = l[i].dst_h,
			.zpos = l[i].zpos,
			.blend = l[i].blend,
			.alpha = 0xffff,
		};
	fr.target = (struct fl_display_compose_target){ ref, W * H * 4, 0, W * 4, XR24, W, H };
	fr.background = (struct fl_display_color){ 0, 0, 0, 0xffff };
	fr.layers = cl;
	fr.n_layers = 2;
	c = fl__display_compose_new();
	fl_assert(c != NULL);
	fl_assert_int_eq(fl__display_compose(c, &fr, NULL), 0);
	fl__display_compose_free(c);
	for (uint32_t i = 0; i < W * H; i++)
		if ((out[i] & 0xffffff) != (ref[i] & 0xffffff) && !bad++)
			printf("first difference at %u,%u: %08x, reference %08x\n", i % W, i / W,
			       out[i], ref[i]);
	printf("writeback_pixels_differing %u of %u\n", bad, W * H);
	fl_assert_int_eq(bad, 0);
	/* The overlay's middle third is red, over the primary: the capture is not a blank one. */
	fl_assert_int_eq(out[(150 + 10) * W + 200 + OW / 2] & 0xffffff, 0xff0000);
	free(ref);
	munmap(px, W * H * 4);
	munmap(ox, OW * OH * 4);
	munmap(out, W * H * 4);
	close(fd);
	close(ofd);
	close(wfd);
	unlight(ih);
	kd_close(&k);
}

FL_TEST(kms_a_memfd_is_copied_a_dma_buf_is_not)
{
	enum { W = 640, H = 480 };
	struct kd k;
	struct fl_display_mode m = { 0 };
	struct fl_display_handle *ih;
	struct fl_display_error e = { 0 };
	struct fl_display_buffer b;
	uint64_t copies, bytes, zero, udma;
	uint32_t *px, off, pitch;
	int fd, dfd, sfd, fence;

	kd_open(&k);
	ih = light(&k, k.virt, W, H, &m);
	copies = counter("copied_frames");
	bytes = counter("copied_bytes");
	zero = counter("zero_copy_frames");
	udma = counter("udmabuf_imports");
	/* A memfd that may shrink: no udmabuf for it, a dumb buffer copied at the flip. */
	fd = memfd_new(W * H * 4, false, &px);
	b = buffer((uint32_t)k.primary, W, H, XR24, fd, W * 4);
	fl_assert_int_eq(post(&k, k.virt, &b, 1, NULL, NULL, 0, &fence, &e), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	fl_assert_int_eq(counter("copied_frames"), copies + 1);
	fl_assert_int_eq(counter("copied_bytes"), bytes + (uint64_t)W * H * 4);
	fl_assert_int_eq(counter("zero_copy_frames"), zero);
	/* fl-displayctl stats shows the same counts (kms-vm.sh packs it at /fl-displayctl). */
	if (access("/fl-displayctl", X_OK) == 0) {
		char cmd[64], out[4096], want[64];
		size_t n;
		FILE *p;

		snprintf(cmd, sizeof(cmd), "/fl-displayctl stats %u", k.dev_id);
		p = popen(cmd, "r");
		fl_assert(p != NULL);
		n = fread(out, 1, sizeof(out) - 1, p);
		out[n] = '\0';
		fl_assert_int_eq(pclose(p), 0);
		snprintf(want, sizeof(want), "copied_frames     %llu\n",
			 (unsigned long long)(copies + 1));
		fl_assert(strstr(out, "  driver counters:\n") != NULL);
		fl_assert(strstr(out, want) != NULL);
	}
	/* A simple buffer is a dma-buf of the card's: imported, not copied. */
	fl_assert_int_eq(fl_display_simple_buffer_alloc(ih, W, H, XR24, &dfd, &off, &pitch, &e), 0);
	b = buffer((uint32_t)k.primary, W, H, XR24, dfd, pitch);
	fl_assert_int_eq(post(&k, k.virt, &b, 1, NULL, NULL, 0, &fence, &e), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	fl_assert_int_eq(counter("copied_frames"), copies + 1);
	fl_assert_int_eq(counter("zero_copy_frames"), zero + 1);
	/* A memfd sealed against shrinking becomes a dma-buf through udmabuf where it exists. */
	if (access("/dev/udmabuf", F_OK) == 0) {
		uint32_t *sx;

		sfd = memfd_new(W * H * 4, true, &sx);
		b = buffer((uint32_t)k.primary, W, H, XR24, sfd, W * 4);
		fl_assert_int_eq(post(&k, k.virt, &b, 1, NULL, NULL, 0, &fence, &e), 0);
		fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
		close(fence);
		fl_assert_int_eq(counter("copied_frames"), copies + 1);
		fl_assert_int_eq(counter("zero_copy_frames"), zero + 2);
		fl_assert_int_eq(counter("udmabuf_imports"), udma + 1);
		munmap(sx, W * H * 4);
		close(sfd);
	}
	munmap(px, W * H * 4);
	close(fd);
	close(dfd);
	unlight(ih);
	kd_close(&k);
}

/* fl-recovery (packed at /fl-recovery by kms-vm.sh) with @keys on its stdin; its stdout. */
static char *recovery(const char *keys)
{
	static char out[8192];
	int in[2], o[2], st;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	fl_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(o, O_CLOEXEC), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		execl("/fl-recovery", "fl-recovery", "--no-evdev", "--layout", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(o[1]);
	fl_assert_int_eq(write(in[1], keys, strlen(keys)), (ssize_t)strlen(keys));
	close(in[1]);
	while ((n = read(o[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	close(o[0]);
	out[len] = 0;
	fl_assert_int_eq(waitpid(pid, &st, 0), pid);
	fl_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return out;
}

FL_TEST(kms_fl_recovery_runs_unchanged_its_frame_captured_by_writeback)
{
	struct kd k;
	struct fl_display_handle *ih;
	struct fl_display_error e = { 0 };
	uint32_t w, h, pitch, *px, n_items = 0, highlighted = 0;
	const char *out, *line;
	int fd, r;

	if (access("/fl-recovery", X_OK) != 0)
		fl_test_skip("no /fl-recovery (kms-vm.sh packs it)");
	kd_open(&k);
	/* Down twice, select, down, select: item 3 is selected when it exits. */
	out = recovery("jj\rj\r");
	fl_assert_int_eq(fl_display_interface_open(k.dev, (uint32_t)k.virt, &ih), 0);
	r = fl_display_capture(ih, XR24, &fd, &w, &h, &pitch, &e);
	if (r)
		fl__test_fail(__FILE__, __LINE__, "capture: %s: %s", strerror(-r), e.msg);
	px = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(px != MAP_FAILED);
	printf("recovery screen %ux%u\n", w, h);
	/* The highlight bar (UI_HIGHLIGHT, 00 40 a0) at the right end of item 3 only. */
	for (line = out; (line = strstr(line, "item ")); line++) {
		unsigned int i;
		int x, y, rw, rh;

		if (sscanf(line, "item %u %d %d %d %d", &i, &x, &y, &rw, &rh) != 5)
			continue;
		n_items++;
		if ((px[(size_t)(y + rh / 2) * pitch / 4 + (size_t)(x + rw - 2)] & 0xffffff) ==
		    0x0040a0) {
			fl_assert_int_eq(i, 3);
			highlighted++;
		}
	}
	fl_assert(n_items > 3);
	fl_assert_int_eq(highlighted, 1);
	munmap(px, (size_t)pitch * h);
	close(fd);
	fl_display_blank(ih, FL_DISPLAY_DPMS_OFF, NULL);
	fl_display_close(ih);
	kd_close(&k);
}

static void card_change(void)
{
	int fd = open("/sys/class/drm/card0/uevent", O_WRONLY | O_CLOEXEC);

	fl_assert(fd >= 0);
	fl_assert_int_eq(write(fd, "change", 6), 6);
	close(fd);
}

/* The next event of @ih's, waited for at most 10 s (×the runner's multiplier: a bound, not a timing). */
static struct fl_display_event *next_event(struct fl_display_handle *ih)
{
	struct pollfd p = { fl_display_get_fd(ih), POLLIN, 0 };
	struct fl_display_event *ev = NULL;

	fl_assert_int_eq(poll(&p, 1, 10000 * 8), 1);
	fl_assert_int_eq(fl_display_read_event(ih, &ev), 0);
	return ev;
}

FL_TEST(kms_hotplug_comes_from_the_kernel_s_uevent)
{
	static const char status[] = "/sys/class/drm/card0-Virtual-1/status";
	struct kd k;
	struct fl_display_handle *ih;
	struct fl_display_interface_data d = { 0 };
	struct fl_display_event *ev;
	int fd;

	kd_open(&k);
	if (access(status, W_OK) != 0)
		fl_test_skip("no %s to force", status);
	fl_assert_int_eq(fl_display_interface_open(k.dev, (uint32_t)k.virt, &ih), 0);
	fl_assert_int_eq(fl_display_set_event(ih, FL_DISPLAY_EVENT_HOTPLUG, 1, NULL), 0);
	/*
	 * The connector forced off: VKMS has no poll helper, so no HOTPLUG
	 * uevent follows; the card's synthetic change uevent makes the driver
	 * read its connectors again, as a real one would.
	 */
	fd = open(status, O_WRONLY | O_CLOEXEC);
	fl_assert(fd >= 0);
	fl_assert_int_eq(write(fd, "off", 3), 3);
	card_change();
	ev = next_event(ih);
	fl_assert_int_eq(ev->type, FL_DISPLAY_EVENT_HOTPLUG);
	fl_assert_int_eq(((struct fl_display_hotplug_event *)ev)->connected, 0);
	free(ev);
	fl_assert_int_eq(fl_display_interface_get_data(ih, &d, NULL), 0);
	fl_assert_int_eq(d.hotplug_detect, 0);
	fl_assert_int_eq(write(fd, "detect", 6), 6);
	card_change();
	ev = next_event(ih);
	fl_assert_int_eq(((struct fl_display_hotplug_event *)ev)->connected, 1);
	free(ev);
	fl_assert_int_eq(fl_display_interface_get_data(ih, &d, NULL), 0);
	fl_assert_int_eq(d.hotplug_detect, 1);
	close(fd);
	fl_display_close(ih);
	kd_close(&k);
}

FL_TEST(kms_blank_with_a_flip_in_flight_and_posts_queued_drains_the_queue)
{
	enum { N = 6 };
	struct kd k;
	struct fl_display_mode m = { 0 };
	struct fl_display_handle *ih;
	struct fl_display_error e = { 0 };
	struct fl_display_stats st0, st1;
	uint32_t off, pitch;
	int fd, fence[N];

	kd_open(&k);
	ih = light(&k, k.virt, 640, 480, &m);
	fl_assert_int_eq(fl_display_simple_buffer_alloc(ih, 640, 480, XR24, &fd, &off, &pitch, &e),
			 0);
	fl_assert_int_eq(fl_display_device_get_stats(k.dev, &st0, NULL), 0);
	for (int i = 0; i < N; i++) {
		struct fl_display_buffer b = buffer((uint32_t)k.primary, 640, 480, XR24, fd, pitch);

		fl_assert_int_eq(post(&k, k.virt, &b, 1, NULL, NULL, 0, &fence[i], &e), 0);
	}
	/* At once: one flip in flight, the others queued; the flush may not hang or lose any. */
	fl_assert_int_eq(fl_display_blank(ih, FL_DISPLAY_DPMS_OFF, &e), 0);
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(fl_fence_fd_wait(fence[i], 10000), 0);
		close(fence[i]);
	}
	fl_assert_int_eq(fl_display_device_get_stats(k.dev, &st1, NULL), 0);
	fl_assert_int_eq(st1.queued, 0);
	fl_assert_int_eq((st1.flipped - st0.flipped) + (st1.dropped - st0.dropped), N);
	fl_assert(st1.flipped - st0.flipped >= 1);
	close(fd);
	fl_display_close(ih);
	kd_close(&k);
}

/* ---- kernel sync_files as acquire fences (docs/display.md, "Acquire fences") ---- */

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A sw_sync timeline (*@ret_tl) and a kernel fence at 1 on it. */
static int sw_fence(int *ret_tl)
{
	struct sw_sync_create_fence_data f = { .value = 1, .name = "acquire" };

	*ret_tl = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);
	if (*ret_tl < 0)
		fl_test_skip("no sw_sync (debugfs) to make kernel fences with");
	fl_assert_int_eq(ioctl(*ret_tl, SW_SYNC_IOC_CREATE_FENCE, &f), 0);
	return f.fence;
}

/* Step sw_sync timeline @tl by one; the monotonic time just before. */
static uint64_t sw_step(int tl)
{
	uint32_t one = 1;
	uint64_t t = mono_ns();

	fl_assert_int_eq(ioctl(tl, SW_SYNC_IOC_INC, &one), 0);
	return t;
}

/* Present fence @fence still pending after @frames periods @p: nothing flipped. */
static void still_pending(int fence, uint64_t p, int frames)
{
	usleep((useconds_t)(p * (uint64_t)frames / 1000u));
	fl_assert_int_eq(fl_fence_fd_get_status(fence), 0);
}

/*
 * Present fence @fence signalled, no earlier than @after (monotonic ns) less
 * @slack: a kms flip's time is the kernel's vblank timestamp, which VKMS
 * takes from its vblank timer's due time, so under TCG a commit that lands
 * while the late timer's handler has yet to run is stamped with a vblank
 * that began up to a period before it (seen: 0.4 ms before the fence).
 * Nothing flipped before @after all the same: still_pending() checks that.
 */
static void shown_after(int fence, uint64_t after, uint64_t slack)
{
	struct fl_fence_info info;

	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(fence, &info, NULL, 0), 0);
	fl_assert_int_eq(info.status, 1);
	printf("shown %" PRId64 " ns after the last acquire fence\n",
	       (int64_t)(info.timestamp_ns - after));
	fl_assert(info.timestamp_ns + slack > after);
}

FL_TEST(kms_a_sync_file_acquire_fence_is_the_plane_s_in_fence_fd)
{
	struct kd k;
	struct fl_display_mode m = { 0 };
	struct fl_display_handle *ih;
	struct fl_display_error e = { 0 };
	uint32_t off, pitch;
	uint64_t p, in0, step;
	int fd, tl, acq, fence;

	kd_open(&k);
	ih = light(&k, k.virt, 640, 480, &m);
	p = period_ns(&m);
	fl_assert_int_eq(fl_display_simple_buffer_alloc(ih, 640, 480, XR24, &fd, &off, &pitch, &e),
			 0);
	acq = sw_fence(&tl);
	in0 = counter("in_fence_commits");
	struct fl_display_buffer b = buffer((uint32_t)k.primary, 640, 480, XR24, fd, pitch);
	b.acquire_fence = acq;
	int r = post(&k, k.virt, &b, 1, NULL, NULL, 0, &fence, &e);
	if (r)
		fl__test_fail(__FILE__, __LINE__, "post: %s: %s", strerror(-r), e.msg);
	close(acq);
	/* Committed before the fence signals: the kernel, not the service, holds the flip. */
	for (int t = 0; counter("in_fence_commits") == in0; t++) {
		fl_assert(t < 1000);
		usleep(10000);
	}
	fl_assert_int_eq(counter("in_fence_commits"), in0 + 1);
	still_pending(fence, p, 4);
	step = sw_step(tl);
	shown_after(fence, step, p);
	close(fence);
	close(tl);
	close(fd);
	unlight(ih);
	kd_close(&k);
}

FL_TEST(kms_a_post_with_a_fenceline_and_a_kernel_acquire_fence_waits_for_both)
{
	struct kd k;
	struct fl_display_mode m = { 0 };
	struct fl_display_handle *ih;
	struct fl_display_error e = { 0 };
	struct fl_display_layer l[2] = { { 0 } };
	uint32_t *px, pitch = 64 * 4;
	uint64_t p, in0, t;
	int fd[2], ftl, tl, fence;
	struct fl_display_buffer b[2];

	kd_open(&k);
	fl_assert(k.overlay >= 0);
	ih = light(&k, k.virt, 640, 480, &m);
	p = period_ns(&m);
	fd[0] = memfd_new((size_t)pitch * 64, true, &px);
	fd[1] = memfd_new((size_t)pitch * 64, true, &px);
	for (int i = 0; i < 2; i++) {
		b[i] = buffer((uint32_t)(i ? k.overlay : k.primary), 64, 64, XR24, fd[i], pitch);
		l[i] = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
						  .src_w = 64 << 16,
						  .src_h = 64 << 16,
						  .dst_x = i * 100,
						  .dst_w = 64,
						  .dst_h = 64,
						  .zpos = (uint32_t)i,
						  .blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
						  .alpha = 0xffff };
	}
	fl_assert_int_eq(fl_timeline_fd_create("render", 0, &ftl), 0);
	fl_assert_int_eq(fl_fence_fd_create(ftl, 1, "render", &b[0].acquire_fence), 0);
	b[1].acquire_fence = sw_fence(&tl);
	in0 = counter("in_fence_commits");
	int r = post(&k, k.virt, b, 2, l, NULL, 0, &fence, &e);
	if (r)
		fl__test_fail(__FILE__, __LINE__, "post: %s: %s", strerror(-r), e.msg);
	close(b[0].acquire_fence);
	close(b[1].acquire_fence);
	/* The kernel fence first: the fenceline one still holds the post in the service. */
	sw_step(tl);
	still_pending(fence, p, 4);
	fl_assert_int_eq(counter("in_fence_commits"), in0);
	t = mono_ns();
	fl_assert_int_eq(fl_timeline_fd_inc(ftl, 1), 0);
	shown_after(fence, t, p);
	/* The service waited for both: the commit carried none. */
	fl_assert_int_eq(counter("in_fence_commits"), in0);
	close(fence);
	close(ftl);
	close(tl);
	close(fd[0]);
	close(fd[1]);
	unlight(ih);
	kd_close(&k);
}

/* The virtual driver takes no kernel fences: the service waits a sync_file itself. */
FL_TEST(virtual_a_sync_file_acquire_fence_is_waited_by_the_service)
{
	struct fl_display_handle *dev, *ih;
	struct fl_display_interface_data d = { 0 };
	struct fl_display_error e = { 0 };
	uint32_t *ids = NULL, off, pitch, intf = 0, w, h;
	uint64_t p, step;
	int fd, tl, acq, fence, r;

	acq = sw_fence(&tl);
	fl_assert_int_eq(unsetenv("FENCELINE_DISPLAY_CONFIG"), 0);
	fl_assert_int_eq(setenv("FENCELINE_DISPLAY", "virtual", 1), 0);
	fl_assert(fl_display_devices(&ids) >= 1);
	fl_assert_int_eq(fl_display_device_open(ids[0], &dev), 0);
	free(ids);
	fl_assert_int_eq(fl_display_interface_open(dev, intf, &ih), 0);
	fl_assert_int_eq(fl_display_interface_get_data(ih, &d, NULL), 0);
	w = d.current_mode.hdisplay;
	h = d.current_mode.vdisplay;
	fl_assert(w && h && d.current_mode.clock);
	p = period_ns(&d.current_mode);
	r = fl_display_blank(ih, FL_DISPLAY_DPMS_ON, &e);
	fl_assert(r == 0 || r == -EALREADY);
	fl_assert_int_eq(fl_display_simple_buffer_alloc(ih, w, h, XR24, &fd, &off, &pitch, &e), 0);
	struct fl_display_buffer b = { .engine = 0,
				       .w = w,
				       .h = h,
				       .format = XR24,
				       .n_planes = 1,
				       .fd = { fd, -1, -1, -1 },
				       .offset = { off },
				       .pitch = { pitch },
				       .acquire_fence = acq };
	struct fl_display_post po = { .intfs = &intf,
				      .n_intfs = 1,
				      .bufs = &b,
				      .n_bufs = 1,
				      .fence_type = FL_DISPLAY_FENCE_PRESENT };
	r = fl_display_post(dev, &po, &fence, &e);
	if (r)
		fl__test_fail(__FILE__, __LINE__, "post: %s: %s", strerror(-r), e.msg);
	close(acq);
	still_pending(fence, p, 4);
	step = sw_step(tl);
	shown_after(fence, step, 0);
	close(fence);
	close(tl);
	close(fd);
	fl_display_close(ih);
	fl_display_close(dev);
	fl_display_disconnect();
	unsetenv("FENCELINE_DISPLAY");
}

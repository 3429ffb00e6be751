/* SPDX-License-Identifier: MIT */
/*
 * The virtual driver's ganged interfaces, its own tiled format and the
 * background colour, through the native API and the service, on a config
 * of this test's (the default device stays as it is): captures and a
 * writeback compared with the images computed here. Frames are written as
 * PNG to $FL_TEST_FRAME_DIR, else <build>/meson-logs/display-frames.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>

#include "display-png.h"
#include "runner.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define XT44 FL_FOURCC('X', 'T', '4', '4')
#define W    320u /* each interface's mode: 320x240@60 */
#define H    240u

enum { LEFT, RIGHT, SOLO, WB }; /* the config's interface ids */

static const char config[] = "[device tablet]\n"
			     "driver = virtual\n"
			     "[interface left]\n"
			     "type = DSI\n"
			     "flags = primary\n"
			     "modes = 320x240@60, 160x120@60\n"
			     "current-mode = 320x240@60\n"
			     "connected = yes\n"
			     "gang = panel\n"
			     "gang-tile = 0,0\n"
			     "[interface right]\n"
			     "type = DSI\n"
			     "modes = 320x240@60, 160x120@60\n"
			     "current-mode = 320x240@60\n"
			     "connected = yes\n"
			     "gang = panel\n"
			     "gang-tile = 1,0\n"
			     "[interface solo]\n"
			     "type = DPI\n"
			     "modes = 320x240@60\n"
			     "current-mode = 320x240@60\n"
			     "connected = yes\n"
			     "background = 0xc08040\n"
			     "[interface writeback]\n"
			     "type = memory\n"
			     "modes = 320x240@60\n"
			     "current-mode = 320x240@60\n"
			     "connected = yes\n"
			     "[engine rgb32]\n"
			     "formats = XRGB8888, fourcc:XT44\n"
			     "interfaces = left, right, solo, writeback\n";

struct vd {
	struct fl_display_handle *dev, *intf[4];
};

/* This test's config for the service the library starts; device 0 with its interfaces open. */
static void vd_open(struct vd *d)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	char path[512];
	FILE *f;

	fl_assert(dir);
	snprintf(path, sizeof(path), "%s/vdrv-displays.ini", dir);
	f = fopen(path, "w");
	fl_assert(f);
	fl_assert_int_eq(fputs(config, f) >= 0, 1);
	fl_assert_int_eq(fclose(f), 0);
	setenv("FENCELINE_DISPLAY_CONFIG", path, 1);
	fl_assert_int_eq(fl_display_device_open(0, &d->dev), 0);
	for (uint32_t i = 0; i < 4; i++) {
		fl_assert_int_eq(fl_display_interface_open(d->dev, i, &d->intf[i]), 0);
		fl_assert_int_eq(fl_display_attach(d->dev, 0, i, NULL), 0);
	}
}

static void vd_close(struct vd *d)
{
	for (int i = 0; i < 4; i++)
		fl_display_close(d->intf[i]);
	fl_display_close(d->dev);
	fl_display_disconnect();
}

static uint8_t dpms(struct vd *d, int i)
{
	struct fl_display_interface_data id = { 0 };

	fl_assert_int_eq(fl_display_interface_get_data(d->intf[i], &id, NULL), 0);
	return id.dpms_state;
}

/* A w × h memfd of @size bytes, mapped at *@map (written through it). */
static int mem(size_t size, uint8_t **map)
{
	int fd = memfd_create("vdrv", MFD_CLOEXEC);

	fl_assert(fd >= 0);
	fl_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fl_assert(*map != MAP_FAILED);
	return fd;
}

/* The image of the tests: every pixel distinct enough to catch a misplaced one. */
static uint32_t px(uint32_t x, uint32_t y)
{
	return 0xff000000u | (x * 7 & 0xff) << 16 | (y * 3 & 0xff) << 8 | ((x ^ y) & 0xff);
}

static struct fl_display_buffer buffer(int fd, uint32_t format, uint32_t w, uint32_t h,
				       uint32_t offset, uint32_t pitch)
{
	return (struct fl_display_buffer){ .engine = 0,
					   .w = w,
					   .h = h,
					   .format = format,
					   .n_planes = 1,
					   .fd = { fd },
					   .offset = { offset },
					   .pitch = { pitch },
					   .acquire_fence = -1 };
}

static int post(struct vd *d, const uint32_t *intfs, size_t n_intfs,
		const struct fl_display_buffer *b, const struct fl_display_layer *l, uint32_t flags,
		const struct fl_display_writeback *wb, int *fence, struct fl_display_error *e)
{
	struct fl_display_post p = { .intfs = intfs,
				     .n_intfs = n_intfs,
				     .bufs = b,
				     .n_bufs = 1,
				     .flags = flags,
				     .fence_type = fence ? FL_DISPLAY_FENCE_PRESENT
							 : FL_DISPLAY_FENCE_NONE,
				     .layers = l,
				     .writeback = wb };

	return fl_display_post(d->dev, &p, fence, e);
}

static void save_frame(const uint32_t *p, uint32_t w, uint32_t h, uint32_t pitch, const char *name)
{
	const char *dir = getenv("FL_TEST_FRAME_DIR");
	struct fl_display_compose_target t = {
		(void *)p, (uint64_t)pitch * h, 0, pitch, XR24, w, h
	};
	struct fl_display_error e;
	char path[512];

	if (!dir || !*dir)
		dir = FL_TEST_FRAME_DEFAULT_DIR;
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/%s.png", dir, name);
	if (fl__display_png_write(path, &t, &e) != 0)
		fl__test_fail(__FILE__, __LINE__, "png: %s", e.msg);
	printf("frame: %s\n", path);
}

/*
 * Captures interface @i (W × H, XRGB8888), saves it as @name, and counts
 * the pixels (x, y) that are not want(x, y) in their RGB.
 */
static size_t capture_wrong(struct vd *d, int i, const char *name,
			    uint32_t (*want)(uint32_t x, uint32_t y))
{
	uint32_t w, h, pitch, *p;
	size_t wrong = 0;
	int fd = -1;

	fl_assert_int_eq(fl_display_capture(d->intf[i], XR24, &fd, &w, &h, &pitch, NULL), 0);
	fl_assert_int_eq(w, W);
	fl_assert_int_eq(h, H);
	p = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	save_frame(p, w, h, pitch, name);
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++) {
			uint32_t got = p[(size_t)y * pitch / 4 + x] & 0xffffff;

			if (got != (want(x, y) & 0xffffff) && !wrong++)
				printf("%s: first wrong pixel %u,%u: %06x, want %06x\n", name, x, y,
				       got, want(x, y) & 0xffffff);
		}
	munmap(p, (size_t)pitch * h);
	close(fd);
	return wrong;
}

/* ---- a gang: two links, one panel of 640 × 240 ---- */

static uint32_t seed; /* the frame: a post's picture differs by it */

static uint32_t panel_px(uint32_t x, uint32_t y)
{
	return px(x + seed, y);
}

static uint32_t left_half(uint32_t x, uint32_t y)
{
	return panel_px(x, y);
}

static uint32_t right_half(uint32_t x, uint32_t y)
{
	return panel_px(x + W, y);
}

/* A 640 × 240 panel frame of seed @s into @map. */
static void draw_panel(uint8_t *map, uint32_t s)
{
	seed = s;
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < 2 * W; x++)
			((uint32_t *)map)[(size_t)y * 2 * W + x] = panel_px(x, y);
}

FL_TEST(a_gang_is_posted_blanked_and_set_as_one_panel)
{
	static const uint32_t both[] = { LEFT, RIGHT }, left[] = { LEFT }, right[] = { RIGHT };
	struct vd d;
	struct fl_display_error e = { 0, "" };
	struct fl_display_layer l;
	struct fl_display_buffer b;
	struct fl_display_interface_data id = { 0 };
	struct fl_display_mode small, modes[2];
	uint8_t *map[2];
	int fd[2], fence = -1;

	vd_open(&d);
	/* DPMS: one link lit lights the panel; the other is then in that state already. */
	fl_assert_int_eq(dpms(&d, RIGHT), FL_DISPLAY_DPMS_OFF);
	fl_assert_int_eq(fl_display_blank(d.intf[LEFT], FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(dpms(&d, RIGHT), FL_DISPLAY_DPMS_ON);
	fl_assert_int_eq(fl_display_blank(d.intf[RIGHT], FL_DISPLAY_DPMS_ON, NULL), -EBUSY);
	fl_assert_int_eq(dpms(&d, SOLO), FL_DISPLAY_DPMS_OFF);

	fd[0] = mem((size_t)2 * W * H * 4, &map[0]);
	fd[1] = mem((size_t)2 * W * H * 4, &map[1]);
	draw_panel(map[0], 0);
	b = buffer(fd[0], XR24, 2 * W, H, 0, 2 * W * 4);
	l = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
				       .src_w = 2 * W << 16,
				       .src_h = H << 16,
				       .dst_w = 2 * W,
				       .dst_h = H,
				       .blend = FL_DISPLAY_BLEND_NONE,
				       .alpha = 0xffff };
	/* One link alone would tear the panel: refused, naming the one missing. */
	fl_assert_int_eq(post(&d, left, 1, &b, &l, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "interface 0 is ganged with interface 1, which the post does not "
				"name"));
	fl_assert_int_eq(post(&d, right, 1, &b, &l, 0, NULL, NULL, &e), -EINVAL);
	fl_assert(strstr(e.msg, "interface 1 is ganged with interface 0"));
	/* Layers are in the panel's coordinates: 640 wide fits, one more pixel does not. */
	l.dst_x = 1;
	fl_assert_int_eq(post(&d, both, 2, &b, &l, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "outside interface 0's gang's panel 640x240"));
	l.dst_x = 0;
	fl_assert_int_eq(post(&d, both, 2, &b, &l, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL, &e), 0);

	/* Two frames; once the second's one present fence has signalled, both halves show it. */
	fl_assert_int_eq(post(&d, both, 2, &b, &l, 0, NULL, NULL, &e), 0);
	draw_panel(map[1], 5);
	b.fd[0] = fd[1];
	fl_assert_int_eq(post(&d, both, 2, &b, &l, 0, NULL, &fence, &e), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	fl_assert_int_eq(capture_wrong(&d, LEFT, "display-vdrv-gang-left", left_half), 0);
	fl_assert_int_eq(capture_wrong(&d, RIGHT, "display-vdrv-gang-right", right_half), 0);
	close(fence);

	/* A modeset of one link sets the panel's mode; blanking one blanks the panel. */
	fl_assert_int_eq(fl_display_interface_get_data(d.intf[RIGHT], &id, NULL), 0);
	fl_assert_int_eq(id.n_modes, 2);
	id.modes = modes;
	fl_assert_int_eq(fl_display_interface_get_data(d.intf[RIGHT], &id, NULL), 0);
	small = modes[1];
	fl_assert_int_eq(small.hdisplay, 160);
	fl_assert_int_eq(fl_display_set_mode(d.intf[RIGHT], &small, NULL), 0);
	memset(&id, 0, sizeof(id));
	fl_assert_int_eq(fl_display_interface_get_data(d.intf[LEFT], &id, NULL), 0);
	fl_assert_int_eq(id.current_mode.hdisplay, 160);
	fl_assert_int_eq(fl_display_blank(d.intf[RIGHT], FL_DISPLAY_DPMS_OFF, NULL), 0);
	fl_assert_int_eq(dpms(&d, LEFT), FL_DISPLAY_DPMS_OFF);
	for (int i = 0; i < 2; i++) {
		munmap(map[i], (size_t)2 * W * H * 4);
		close(fd[i]);
	}
	vd_close(&d);
}

/* ---- the driver's tiled format ---- */

#define TW	 37u /* 10 columns of tiles, the last one 1 pixel wide */
#define TH	 22u /* 6 rows of tiles, the last one 2 lines high */
#define TPITCH	 (10u * 16 + 32) /* 32 bytes of padding a line */
#define TOFFSET	 64u
#define TSIZE	 (TOFFSET + TPITCH * 4 * 6)
#define BG_SOLO	 0xc08040u
#define BG_BLACK 0x000000u

/* The tiled buffer's picture where it is drawn (at 0, 0), the background elsewhere. */
static uint32_t bg_want;

static uint32_t tiled_want(uint32_t x, uint32_t y)
{
	return x < TW && y < TH ? px(x, y) : bg_want;
}

/* XT44 (display-virtual.h): pixel (x, y) in tile (x/4, y/4), line y%4 of it, word x%4. */
static void draw_tiled(uint8_t *map)
{
	memset(map, 0x5a, TSIZE);
	for (uint32_t y = 0; y < TH; y++)
		for (uint32_t x = 0; x < TW; x++) {
			size_t at = TOFFSET + (size_t)(y / 4) * 4 * TPITCH + (x / 4) * 64 +
				    (y % 4) * 16 + (x % 4) * 4;

			memcpy(map + at, &(uint32_t){ px(x, y) }, 4);
		}
}

FL_TEST(a_tiled_buffer_is_checked_by_the_driver_and_shows_as_its_linear_image)
{
	static const uint32_t solo[] = { SOLO }, with_wb[] = { WB };
	struct vd d;
	struct fl_display_error e = { 0, "" };
	struct fl_display_buffer b;
	struct fl_display_writeback wb;
	uint8_t *map, *short_map, *dst;
	size_t wrong = 0;
	int fd, short_fd, wb_fd, fence = -1;

	vd_open(&d);
	fl_assert_int_eq(fl_display_blank(d.intf[SOLO], FL_DISPLAY_DPMS_ON, NULL), 0);
	fd = mem(TSIZE, &map);
	draw_tiled(map);
	/* The driver's own check, from the post call: one byte of memory short fails. */
	short_fd = mem(TSIZE - 1, &short_map);
	b = buffer(short_fd, XT44, TW, TH, TOFFSET, TPITCH);
	fl_assert_int_eq(post(&d, solo, 1, &b, NULL, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "buffer 0: XT44: offset 64 + 6 rows of tiles of 4 × pitch 192 "
				"end at 4672, past the plane's 4671-byte memory"));
	b = buffer(fd, XT44, TW, TH, TOFFSET, 144);
	fl_assert_int_eq(post(&d, solo, 1, &b, NULL, 0, NULL, NULL, &e), -EINVAL);
	fl_assert(strstr(e.msg, "pitch 144 is not a multiple of 16 of at least 160"));
	b = buffer(fd, XT44, TW, TH, TOFFSET, TPITCH);
	fl_assert_int_eq(post(&d, solo, 1, &b, NULL, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL, &e), 0);

	/* Shown: the capture is the linear picture, over the interface's background. */
	fl_assert_int_eq(post(&d, solo, 1, &b, NULL, 0, NULL, &fence, &e), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	bg_want = BG_SOLO;
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-tiled", tiled_want), 0);

	/* Written back: the same picture, over the writeback interface's (default) black. */
	wb_fd = mem((size_t)W * H * 4, &dst);
	memset(dst, 0xa5, (size_t)W * H * 4);
	wb = (struct fl_display_writeback){ wb_fd, XR24, W, H, 0, W * 4 };
	fl_assert_int_eq(post(&d, with_wb, 1, &b, NULL, 0, &wb, &fence, &e), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	save_frame((const uint32_t *)dst, W, H, W * 4, "display-vdrv-tiled-writeback");
	bg_want = BG_BLACK;
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < W; x++)
			wrong += (((uint32_t *)dst)[y * W + x] & 0xffffff) !=
				 (tiled_want(x, y) & 0xffffff);
	fl_assert_int_eq(wrong, 0);
	munmap(dst, (size_t)W * H * 4);
	munmap(map, TSIZE);
	munmap(short_map, TSIZE - 1);
	close(wb_fd);
	close(fd);
	close(short_fd);
	vd_close(&d);
}

/* ---- a root plane that does not span the display ---- */

#define RX 30u
#define RY 20u
#define RW 100u
#define RH 50u

static uint32_t root_want(uint32_t x, uint32_t y)
{
	return x >= RX && x < RX + RW && y >= RY && y < RY + RH ? px(x - RX, y - RY) : BG_SOLO;
}

FL_TEST(what_the_bottom_layer_does_not_cover_is_the_interface_background)
{
	static const uint32_t solo[] = { SOLO };
	struct vd d;
	struct fl_display_buffer b;
	struct fl_display_layer l;
	uint8_t *map;
	int fd, fence = -1;

	vd_open(&d);
	fl_assert_int_eq(fl_display_blank(d.intf[SOLO], FL_DISPLAY_DPMS_ON, NULL), 0);
	fd = mem((size_t)RW * RH * 4, &map);
	for (uint32_t y = 0; y < RH; y++)
		for (uint32_t x = 0; x < RW; x++)
			((uint32_t *)map)[y * RW + x] = px(x, y);
	b = buffer(fd, XR24, RW, RH, 0, RW * 4);
	l = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
				       .src_w = RW << 16,
				       .src_h = RH << 16,
				       .dst_x = RX,
				       .dst_y = RY,
				       .dst_w = RW,
				       .dst_h = RH,
				       .blend = FL_DISPLAY_BLEND_NONE,
				       .alpha = 0xffff };
	fl_assert_int_eq(post(&d, solo, 1, &b, &l, 0, NULL, &fence, NULL), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-background", root_want), 0);
	munmap(map, (size_t)RW * RH * 4);
	close(fd);
	vd_close(&d);
}

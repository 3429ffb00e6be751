/* SPDX-License-Identifier: MIT */
/*
 * The virtual driver's ganged interfaces, its own tiled format and the
 * background colour, through the native API and the service, on a config
 * of this test's (the default device stays as it is): captures and a
 * writeback compared with the images computed here. Frames are written as
 * PNG to $FL_TEST_FRAME_DIR, else <build>/meson-logs/display-frames.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>

#include "display-helpers.h"
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
			     "interfaces = left, right, solo, writeback\n"
			     "[engine live1]\n"
			     "formats = XRGB8888\n"
			     "interfaces = solo\n"
			     "[engine live2]\n"
			     "formats = XRGB8888\n"
			     "interfaces = solo\n";

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
	return fl_test_post(d->dev, intfs, n_intfs, b, 1, l, wb, flags, fence, e);
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
	fl_test_save_frame(p, w, h, pitch, name);
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

/* The timestamp of the next VSYNC event of interface @i (its events subscribed). */
static uint64_t vsync_ts(struct vd *d, int i)
{
	struct fl_display_event *ev = NULL;
	uint64_t ts;

	do {
		free(ev);
		fl_assert_int_eq(fl_display_read_event(d->intf[i], &ev), 0);
	} while (ev->type != FL_DISPLAY_EVENT_VSYNC);
	fl_assert_int_eq(ev->length, sizeof(struct fl_display_vsync_event));
	ts = ((struct fl_display_vsync_event *)ev)->timestamp;
	free(ev);
	return ts;
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
	/*
	 * One clock: each vsync of the right link has the timestamp of one of
	 * the left's (subscribed first, so its events include that frame).
	 */
	fl_assert_int_eq(fl_display_set_event(d.intf[LEFT], FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf[RIGHT], FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	for (int k = 0; k < 3; k++) {
		uint64_t tr = vsync_ts(&d, RIGHT), tl;

		while ((tl = vsync_ts(&d, LEFT)) < tr)
			;
		fl_assert_int_eq(tl, tr);
	}
	fl_assert_int_eq(fl_display_set_event(d.intf[LEFT], FL_DISPLAY_EVENT_VSYNC, 0, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf[RIGHT], FL_DISPLAY_EVENT_VSYNC, 0, NULL), 0);

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
	uint32_t cw, ch, cpitch;
	int fd, short_fd, wb_fd, fence = -1, cap = -1;

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
	fl_test_save_frame((const uint32_t *)dst, W, H, W * 4, "display-vdrv-tiled-writeback");
	bg_want = BG_BLACK;
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < W; x++)
			wrong += (((uint32_t *)dst)[y * W + x] & 0xffffff) !=
				 (tiled_want(x, y) & 0xffffff);
	fl_assert_int_eq(wrong, 0);

	/* Shrunk by its client while on screen: the capture fails, the service lives on. */
	fl_assert_int_eq(post(&d, solo, 1, &b, NULL, 0, NULL, &fence, &e), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	munmap(map, TSIZE);
	fl_assert_int_eq(ftruncate(fd, TOFFSET + TPITCH), 0);
	fl_assert_int_eq(fl_display_capture(d.intf[SOLO], XR24, &cap, &cw, &ch, &cpitch, &e),
			 -EFAULT);
	fl_assert(strstr(e.msg, "shrank"));
	fl_assert_int_eq(post(&d, solo, 1, &b, NULL, FL_DISPLAY_POST_TEST_ONLY, NULL, NULL, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "past the plane's 256-byte memory"));
	munmap(dst, (size_t)W * H * 4);
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

/* ---- live sources ---- */

/* Waits for the next vsync of interface @i (its VSYNC events subscribed). */
static void next_vsync(struct vd *d, int i)
{
	(void)vsync_ts(d, i);
}

/*
 * The test pattern as docs/display.md describes it, written again here: bars
 * in the top two thirds of what is above the 16-line strip, a grey ramp
 * moving 4 pixels a frame below them, the frame number in the strip.
 */
static uint64_t pattern_frame;

static uint32_t pattern_want(uint32_t x, uint32_t y)
{
	static const uint32_t bars[7] = { 0xbfbfbf, 0xbfbf00, 0x00bfbf, 0x00bf00,
					  0xbf00bf, 0xbf0000, 0x0000bf };
	uint32_t g;

	if (y >= H - 16)
		return (pattern_frame >> (31 - x / (W / 32)) & 1) ? 0xffffff : 0;
	if (y < (H - 16) * 2 / 3)
		return bars[x * 7 / W];
	g = (uint32_t)((x + pattern_frame * 4) % 256);
	return g << 16 | g << 8 | g;
}

/*
 * Pixels of one capture of @i (saved as @name) that are not the pattern at
 * the frame number its strip shows, which goes to *@ret_frame.
 */
static size_t pattern_wrong(struct vd *d, int i, const char *name, uint64_t *ret_frame)
{
	uint32_t w, h, pitch, *p, n = 0;
	size_t wrong = 0;
	int fd = -1;

	fl_assert_int_eq(fl_display_capture(d->intf[i], XR24, &fd, &w, &h, &pitch, NULL), 0);
	p = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	fl_test_save_frame(p, w, h, pitch, name);
	for (uint32_t cell = 0; cell < 32; cell++)
		n = n << 1 |
		    ((p[(size_t)(H - 8) * pitch / 4 + cell * (W / 32) + W / 64] & 0xff) > 0x80);
	pattern_frame = n;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			wrong += (p[(size_t)y * pitch / 4 + x] & 0xffffff) != pattern_want(x, y);
	munmap(p, (size_t)pitch * h);
	close(fd);
	*ret_frame = n;
	return wrong;
}

static struct fl_display_layer whole_layer(uint32_t w, uint32_t h, int32_t x, int32_t y)
{
	return (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
					  .src_w = w << 16,
					  .src_h = h << 16,
					  .dst_x = x,
					  .dst_y = y,
					  .dst_w = w,
					  .dst_h = h,
					  .blend = FL_DISPLAY_BLEND_NONE,
					  .alpha = 0xffff };
}

static uint32_t solo_bg(uint32_t x, uint32_t y)
{
	(void)x;
	(void)y;
	return BG_SOLO;
}

FL_TEST(a_pattern_source_shows_its_bars_and_frame_number_without_a_buffer)
{
	struct vd d;
	struct fl_display_error e = { 0, "" };
	struct fl_display_source src = { .type = FL_DISPLAY_SOURCE_PATTERN,
					 .w = W,
					 .h = H,
					 .format = XR24,
					 .fd = -1,
					 .layer = whole_layer(W, H, 0, 0) },
				 bad;
	uint64_t n1, n2;
	int pfd[2];

	vd_open(&d);
	fl_assert_int_eq(fl_display_blank(d.intf[SOLO], FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf[SOLO], FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	/* Checked synchronously, each refusal with its rule. */
	fl_assert_int_eq(fl_display_engine_set_source(d.intf[SOLO], &src, &e), -EINVAL);
	fl_assert(strstr(e.msg, "is not an overlay engine"));
	{
		struct fl_display_handle *eng;

		fl_assert_int_eq(fl_display_engine_open(d.dev, 0, &eng), 0);
		bad = src;
		bad.w = 0;
		fl_assert_int_eq(fl_display_engine_set_source(eng, &bad, &e), -EINVAL);
		fl_assert(strstr(e.msg, "source: 0x240 is empty"));
		bad = src;
		bad.format = FL_FOURCC('A', 'R', '2', '4');
		fl_assert_int_eq(fl_display_engine_set_source(eng, &bad, &e), -EINVAL);
		fl_assert(strstr(e.msg, "a pattern is XRGB8888"));
		bad = src;
		bad.layer.flags = 0;
		fl_assert_int_eq(fl_display_engine_set_source(eng, &bad, &e), -EINVAL);
		fl_assert(strstr(e.msg, "its layer is not enabled"));
		bad = src;
		bad.layer.src_w = (W + 1) << 16;
		fl_assert_int_eq(fl_display_engine_set_source(eng, &bad, &e), -EINVAL);
		fl_assert(strstr(e.msg, "buffer 0: layer source rect"));
		bad = src;
		bad.reserved[1] = 1;
		fl_assert_int_eq(fl_display_engine_set_source(eng, &bad, &e), -EINVAL);
		fl_assert(strstr(e.msg, "reserved fields not 0"));
		/* A pipe is no stream: any holder could make the service's reads wait. */
		fl_assert_int_eq(pipe(pfd), 0);
		bad = src;
		bad.type = FL_DISPLAY_SOURCE_STREAM;
		bad.fd = pfd[0];
		fl_assert_int_eq(fl_display_engine_set_source(eng, &bad, &e), -EINVAL);
		fl_assert(strstr(e.msg, "a stream is a connected SOCK_STREAM socket"));
		close(pfd[0]);
		close(pfd[1]);
		/* Nothing of the refusals shows. */
		fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-no-source", solo_bg), 0);

		fl_assert_int_eq(fl_display_engine_set_source(eng, &src, &e), 0);
		/* The handle is not the source's owner, its connection is: it stays after the close. */
		fl_display_close(eng);
	}
	next_vsync(&d, SOLO);
	fl_assert_int_eq(pattern_wrong(&d, SOLO, "display-vdrv-pattern", &n1), 0);
	next_vsync(&d, SOLO);
	next_vsync(&d, SOLO);
	fl_assert_int_eq(pattern_wrong(&d, SOLO, "display-vdrv-pattern-later", &n2), 0);
	fl_assert(n2 >= n1 + 2);
	/* Shown where its engine is attached, and only there. */
	fl_assert_int_eq(fl_display_detach(d.dev, 0, SOLO, NULL), 0);
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-pattern-detached", solo_bg), 0);
	vd_close(&d);
}

#define SW 64u
#define SH 48u
#define SX 10u
#define SY 20u

static uint32_t stream_seed;

static uint32_t stream_px(uint32_t x, uint32_t y)
{
	return px(x + stream_seed, y + 2 * stream_seed);
}

static uint32_t stream_want(uint32_t x, uint32_t y)
{
	return x >= SX && x < SX + SW && y >= SY && y < SY + SH ? stream_px(x - SX, y - SY)
								: BG_SOLO;
}

/* Bytes [@from, @to) of a frame of seed @seed as the stream carries it (header, pixels). */
static void feed(int fd, uint32_t frame_seed, size_t from, size_t to)
{
	static uint8_t frame[sizeof(struct fl_display_stream_frame) + SW * SH * 4];
	struct fl_display_stream_frame hdr = { FL_DISPLAY_STREAM_MAGIC, SW * SH * 4 };

	stream_seed = frame_seed;
	memcpy(frame, &hdr, sizeof(hdr));
	for (uint32_t y = 0; y < SH; y++)
		for (uint32_t x = 0; x < SW; x++)
			memcpy(frame + sizeof(hdr) + ((size_t)y * SW + x) * 4,
			       &(uint32_t){ stream_px(x, y) }, 4);
	fl_assert_int_eq(send(fd, frame + from, to - from, MSG_NOSIGNAL), (ssize_t)(to - from));
}

#define FRAME_LEN (sizeof(struct fl_display_stream_frame) + SW * SH * 4)

/* Vsyncs of @i until its capture is the stream's frame of @seed (at most 100 of them). */
static void until_shown(struct vd *d, int i, uint32_t frame_seed, const char *name)
{
	for (int k = 0; k < 100; k++) {
		next_vsync(d, i);
		stream_seed = frame_seed;
		if (!capture_wrong(d, i, name, stream_want))
			return;
	}
	fl__test_fail(__FILE__, __LINE__, "frame %u never shown", frame_seed);
}

/* A stream source of SW × SH at (SX, SY) on engine 0 from a new socketpair; the feeder's end. */
static int stream_source(struct vd *d)
{
	struct fl_display_handle *eng;
	struct fl_display_source src = { .type = FL_DISPLAY_SOURCE_STREAM,
					 .w = SW,
					 .h = SH,
					 .format = XR24,
					 .layer = whole_layer(SW, SH, SX, SY) };
	int sv[2];

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	src.fd = sv[1];
	fl_assert_int_eq(fl_display_engine_open(d->dev, 0, &eng), 0);
	fl_assert_int_eq(fl_display_engine_set_source(eng, &src, NULL), 0);
	fl_display_close(eng);
	close(sv[1]); /* the service has its own */
	return sv[0];
}

FL_TEST(a_stream_source_shows_its_newest_frame_and_outlives_a_hostile_feeder)
{
	struct vd d;
	struct fl_display_stats st;
	struct fl_display_stream_frame garbage = { 0xdeadbeef, SW * SH * 4 };
	bool cut = false;
	int fd;

	vd_open(&d);
	fl_assert_int_eq(fl_display_blank(d.intf[SOLO], FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf[SOLO], FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	fd = stream_source(&d);
	/* Nothing shows before a first complete frame. */
	next_vsync(&d, SOLO);
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-stream-none", solo_bg), 0);
	feed(fd, 1, 0, FRAME_LEN);
	until_shown(&d, SOLO, 1, "display-vdrv-stream-1");
	/* Half a frame, then silence: the last complete one stays, and the service goes on. */
	feed(fd, 2, 0, FRAME_LEN / 2);
	for (int k = 0; k < 3; k++)
		next_vsync(&d, SOLO);
	stream_seed = 1;
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-stream-half", stream_want), 0);
	feed(fd, 2, FRAME_LEN / 2, FRAME_LEN);
	until_shown(&d, SOLO, 2, "display-vdrv-stream-2");
	/* Two frames between vsyncs: the newer one shows. */
	feed(fd, 3, 0, FRAME_LEN);
	feed(fd, 4, 0, FRAME_LEN);
	until_shown(&d, SOLO, 4, "display-vdrv-stream-4");
	/* Garbage: the stream is no longer read (its socket closed), frame 4 stays. */
	fl_assert_int_eq(send(fd, &garbage, sizeof(garbage), MSG_NOSIGNAL),
			 (ssize_t)sizeof(garbage));
	for (int k = 0; k < 100 && !cut; k++) {
		next_vsync(&d, SOLO);
		cut = send(fd, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EPIPE;
	}
	fl_assert(cut);
	stream_seed = 4;
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-stream-garbage", stream_want), 0);
	close(fd);

	/* A new stream replaces it; its feeder closes mid-frame: its last frame stays. */
	fd = stream_source(&d);
	feed(fd, 5, 0, FRAME_LEN);
	until_shown(&d, SOLO, 5, "display-vdrv-stream-5");
	feed(fd, 6, 0, 100);
	close(fd);
	for (int k = 0; k < 3; k++)
		next_vsync(&d, SOLO);
	stream_seed = 5;
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-stream-closed", stream_want), 0);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	vd_close(&d);
}

/*
 * Pixels of one capture of @i that are wrong for a whole stream frame: the
 * background alone (no frame yet), or the frame whose seed its first pixel
 * names (red is 7 × seed mod 256, and 183 × 7 = 1 mod 256) and nothing else.
 */
static size_t torn_pixels(struct vd *d, int i)
{
	uint32_t w, h, pitch, *p;
	size_t wrong = 0, not_bg = 0;
	int fd = -1;

	fl_assert_int_eq(fl_display_capture(d->intf[i], XR24, &fd, &w, &h, &pitch, NULL), 0);
	p = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(p != MAP_FAILED);
	stream_seed = (p[(size_t)SY * pitch / 4 + SX] >> 16 & 0xff) * 183 % 256;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++) {
			uint32_t got = p[(size_t)y * pitch / 4 + x] & 0xffffff;

			not_bg += got != BG_SOLO;
			wrong += got != (stream_want(x, y) & 0xffffff);
		}
	munmap(p, (size_t)pitch * h);
	close(fd);
	return not_bg ? wrong : 0;
}

FL_TEST(a_flooding_feeder_never_tears_a_frame_nor_holds_the_service)
{
	struct vd d;
	struct fl_display_stats st;
	pid_t child;
	int fd, status;

	vd_open(&d);
	fl_assert_int_eq(fl_display_blank(d.intf[SOLO], FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf[SOLO], FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	fd = stream_source(&d);
	child = fork();
	fl_assert(child >= 0);
	if (child == 0) {
		/* As fast as the socket takes them, until the test is done with us. */
		for (uint32_t n = 0;; n = (n + 1) % 256)
			feed(fd, n, 0, FRAME_LEN);
	}
	/* Each capture is one whole frame, whichever: never parts of two. */
	for (int k = 0; k < 20; k++) {
		next_vsync(&d, SOLO);
		fl_assert_int_eq(torn_pixels(&d, SOLO), 0);
	}
	/* The service answers meanwhile. */
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	kill(child, SIGKILL);
	fl_assert_int_eq(waitpid(child, &status, 0), child);
	close(fd);
	vd_close(&d);
}

/* A stream of 4096 × 2048 (32 MiB a frame, the most) on engine @eng. Return: the call's. */
static int big_stream(struct vd *d, uint32_t eng, uint32_t h, struct fl_display_error *e)
{
	struct fl_display_handle *eh;
	struct fl_display_source src = { .type = FL_DISPLAY_SOURCE_STREAM,
					 .w = 4096,
					 .h = h,
					 .format = XR24,
					 .layer = whole_layer(W, H, 0, 0) };
	int sv[2], r;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	src.fd = sv[1];
	fl_assert_int_eq(fl_display_engine_open(d->dev, eng, &eh), 0);
	r = fl_display_engine_set_source(eh, &src, e);
	fl_display_close(eh);
	close(sv[0]);
	close(sv[1]);
	return r;
}

FL_TEST(live_sources_are_bounded_and_go_with_the_client_that_set_them)
{
	struct vd d;
	struct fl_display_error e = { 0, "" };
	struct timespec now;
	uint64_t t_exit, n1;
	int ready[2], go[2], status;
	pid_t child;
	char c = 0;

	vd_open(&d);
	fl_assert_int_eq(fl_display_blank(d.intf[SOLO], FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf[SOLO], FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	/* A frame of 32 MiB is the most; a device's streams hold 192 MiB of frames at most. */
	fl_assert_int_eq(big_stream(&d, 0, 2049, &e), -EINVAL);
	fl_assert(strstr(e.msg, "over 33554432 bytes a frame"));
	fl_assert_int_eq(big_stream(&d, 0, 2048, &e), 0);
	fl_assert_int_eq(big_stream(&d, 1, 2048, &e), 0);
	fl_assert_int_eq(big_stream(&d, 2, 2048, &e), -ENOMEM);
	fl_assert(strstr(e.msg, "would hold 301989888 bytes of frames, over its 201326592"));
	/* Replacing a source does not count it twice. */
	fl_assert_int_eq(big_stream(&d, 1, 2048, &e), 0);

	/* A child sets a pattern on engine 2 and shows it; when it is gone, so is its source. */
	fl_assert_int_eq(fl_display_attach(d.dev, 2, SOLO, NULL), 0);
	fl_assert_int_eq(pipe(ready), 0);
	fl_assert_int_eq(pipe(go), 0);
	child = fork();
	fl_assert(child >= 0);
	if (child == 0) {
		struct fl_display_handle *dev, *eng;
		struct fl_display_source src = { .type = FL_DISPLAY_SOURCE_PATTERN,
						 .w = W,
						 .h = H,
						 .format = XR24,
						 .fd = -1,
						 .layer = whole_layer(W, H, 0, 0) };
		int ok = fl_display_device_open(0, &dev) == 0 &&
			 fl_display_engine_open(dev, 2, &eng) == 0 &&
			 fl_display_engine_set_source(eng, &src, NULL) == 0;

		ok = ok && write(ready[1], "r", 1) == 1 && read(go[0], &c, 1) == 1;
		_exit(ok ? 0 : 1);
	}
	fl_assert_int_eq(read(ready[0], &c, 1), 1);
	next_vsync(&d, SOLO);
	fl_assert_int_eq(pattern_wrong(&d, SOLO, "display-vdrv-child-pattern", &n1), 0);
	fl_assert_int_eq(write(go[1], "g", 1), 1);
	fl_assert_int_eq(waitpid(child, &status, 0), child);
	fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/*
	 * A vsync stamped after the exit comes from a loop pass that began
	 * after the child's socket closed, so the pass after it has seen the
	 * close: no sleep needed.
	 */
	clock_gettime(CLOCK_MONOTONIC, &now);
	t_exit = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	while (vsync_ts(&d, SOLO) <= t_exit)
		;
	next_vsync(&d, SOLO);
	fl_assert_int_eq(capture_wrong(&d, SOLO, "display-vdrv-child-gone", solo_bg), 0);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	vd_close(&d);
}

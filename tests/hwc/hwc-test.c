/* SPDX-License-Identifier: MIT */
/*
 * The hardware composer (<fenceline/hwc.h>, docs/hwc.md) against a private
 * fl-displayd on configs of this test's: which layers go to overlays and
 * which are composed, TEST_ONLY fallback, plan reuse, damage by buffer age,
 * release and present fences, and every frame's pixels (a capture of the
 * interface) against compose.c's blend of the same layers at once.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#include <fenceline/hwc.h>

#include "compose.h"
#include "helpers.h"
#include "runner.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define AR24 FL_FOURCC('A', 'R', '2', '4')
#define RG16 FL_FOURCC('R', 'G', '1', '6')
#define NV12 FL_FOURCC('N', 'V', '1', '2')
#define W    320u
#define H    240u

#define PANEL                                                                  \
	"[interface panel]\ntype = DSI\nflags = primary\nmodes = 320x240@60\n" \
	"current-mode = 320x240@60\nconnected = yes\n"
#define RGB_ENGINE(name) "[engine " name "]\nformats = XRGB8888, ARGB8888\ninterfaces = panel\n"

/* Four RGB engines and one for video: every layer of the tests fits on its own. */
static const char rich[] = "[device rich]\ndriver = virtual\n" PANEL RGB_ENGINE("e0")
	RGB_ENGINE("e1") RGB_ENGINE("e2") RGB_ENGINE("e3") "[engine video]\nformats = NV12\n"
							   "interfaces = panel\n";
/* One engine: everything is composed into the client target. */
static const char poor[] = "[device poor]\ndriver = virtual\n" PANEL RGB_ENGINE("only");

struct fx {
	struct fl_display_handle *dev, *intf;
	struct fl_hwc *hwc;
};

static void fx_open(struct fx *f, const char *config, const struct fl_hwc_options *opts)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	char path[512];
	FILE *fp;
	int r;

	fl_assert(dir);
	snprintf(path, sizeof(path), "%s/hwc-displays.ini", dir);
	fp = fopen(path, "w");
	fl_assert(fp);
	fl_assert(fputs(config, fp) >= 0);
	fl_assert_int_eq(fclose(fp), 0);
	setenv("FENCELINE_DISPLAY_CONFIG", path, 1);
	fl_assert_int_eq(fl_display_device_open(0, &f->dev), 0);
	fl_assert_int_eq(fl_display_interface_open(f->dev, 0, &f->intf), 0);
	r = fl_display_blank(f->intf, FL_DISPLAY_DPMS_ON, NULL);
	fl_assert(r == 0 || r == -EBUSY);
	fl_assert_int_eq(fl_hwc_create(0, 0, opts, &f->hwc, NULL), 0);
}

static void fx_close(struct fx *f)
{
	fl_hwc_destroy(f->hwc);
	fl_display_close(f->intf);
	fl_display_close(f->dev);
	fl_display_disconnect();
}

static struct fl_display_stats dstats(struct fx *f)
{
	struct fl_display_stats s;

	fl_assert_int_eq(fl_display_device_get_stats(f->dev, &s, NULL), 0);
	return s;
}

static struct fl_hwc_stats hstats(struct fx *f)
{
	struct fl_hwc_stats s;

	fl_assert_int_eq(fl_hwc_get_stats(f->hwc, &s), 0);
	return s;
}

/* A buffer of the tests: a memfd, mapped, filled from @seed. */
struct tbuf {
	int fd;
	uint8_t *map;
	size_t size;
	uint32_t fmt, w, h, n_planes;
	uint32_t offset[2], pitch[2];
};

static void tbuf_fill(struct tbuf *b, uint32_t seed)
{
	for (uint32_t y = 0; y < b->h; y++)
		for (uint32_t x = 0; x < b->w; x++) {
			uint32_t v = (x * 7 + seed * 31) ^ (y * 5 + seed);
			uint8_t *p = b->map + b->offset[0] + (size_t)y * b->pitch[0];

			if (b->fmt == RG16) {
				((uint16_t *)p)[x] = (uint16_t)(v * 2654435761u >> 8);
			} else if (b->fmt == NV12) {
				p[x] = (uint8_t)(16 + v % 220);
				if (!(x & 1) && !(y & 1)) {
					uint8_t *c = b->map + b->offset[1] +
						     (size_t)(y / 2) * b->pitch[1];

					c[x] = (uint8_t)(v * 3);
					c[x + 1] = (uint8_t)(v * 5);
				}
			} else {
				uint32_t a = b->fmt == AR24 ? (v * 13) & 0xff : 0xff;
				uint32_t c = v * 2654435761u;
				/* Premultiplied: no channel above alpha. */
				uint32_t r = (c >> 16 & 0xff) * a / 255,
					 g = (c >> 8 & 0xff) * a / 255, bl = (c & 0xff) * a / 255;

				((uint32_t *)p)[x] = a << 24 | r << 16 | g << 8 | bl;
			}
		}
}

static void tbuf_new(struct tbuf *b, uint32_t fmt, uint32_t w, uint32_t h, uint32_t seed)
{
	memset(b, 0, sizeof(*b));
	b->fmt = fmt;
	b->w = w;
	b->h = h;
	b->n_planes = 1;
	b->pitch[0] = fmt == NV12 ? w : fmt == RG16 ? w * 2 : w * 4;
	b->size = (size_t)b->pitch[0] * h;
	if (fmt == NV12) {
		b->n_planes = 2;
		b->offset[1] = (uint32_t)b->size;
		b->pitch[1] = w;
		b->size += (size_t)w * h / 2;
	}
	b->fd = memfd_create("hwc-test", MFD_CLOEXEC);
	fl_assert(b->fd >= 0);
	fl_assert_int_eq(ftruncate(b->fd, (off_t)b->size), 0);
	b->map = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	fl_assert(b->map != MAP_FAILED);
	tbuf_fill(b, seed);
}

static void tbuf_free(struct tbuf *b)
{
	munmap(b->map, b->size);
	close(b->fd);
}

static struct fl_hwc_layer mklayer(uint64_t id, uint64_t buffer_id, const struct tbuf *b, int x,
				   int y, uint32_t dw, uint32_t dh, uint32_t z, uint32_t blend)
{
	struct fl_hwc_layer L = { .id = id, .buffer_id = buffer_id };

	L.buffer.w = b->w;
	L.buffer.h = b->h;
	L.buffer.format = b->fmt;
	L.buffer.n_planes = b->n_planes;
	for (uint32_t p = 0; p < 4; p++)
		L.buffer.fd[p] = p < b->n_planes ? b->fd : -1;
	memcpy(L.buffer.offset, b->offset, sizeof(b->offset));
	memcpy(L.buffer.pitch, b->pitch, sizeof(b->pitch));
	L.buffer.acquire_fence = -1;
	L.layer = (struct fl_display_layer){
		.flags = FL_DISPLAY_LAYER_ENABLED,
		.src_w = b->w << 16,
		.src_h = b->h << 16,
		.dst_x = x,
		.dst_y = y,
		.dst_w = dw,
		.dst_h = dh,
		.zpos = z,
		.blend = blend,
		.alpha = 0xffff,
	};
	return L;
}

/* compose.c's frame of @n layers at once over black: what the screen must show. */
static void reference(const struct fl_hwc_layer *L, struct tbuf *const *bufs, size_t n,
		      uint32_t *out)
{
	struct fl_display_compose_layer cl[FL_HWC_MAX_LAYERS];
	struct fl_display_frame fr = { 0 };
	struct fl_display_compositor *c = fl__display_compose_new();

	fl_assert(c);
	for (size_t i = 0; i < n; i++) {
		const struct fl_display_layer *ly = &L[i].layer;

		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].fourcc = bufs[i]->fmt;
		cl[i].w = bufs[i]->w;
		cl[i].h = bufs[i]->h;
		cl[i].n_planes = bufs[i]->n_planes;
		for (uint32_t p = 0; p < bufs[i]->n_planes; p++)
			cl[i].plane[p] = (struct fl_display_compose_plane){
				bufs[i]->map, bufs[i]->size, bufs[i]->offset[p], bufs[i]->pitch[p]
			};
		fl__display_compose_layer_place(&cl[i], ly);
	}
	fr.target = (struct fl_display_compose_target){ out, (uint64_t)W * H * 4, 0, W * 4, XR24, W,
							H };
	fr.background = (struct fl_display_color){ 0, 0, 0, 0xffff };
	fr.layers = cl;
	fr.n_layers = n;
	fl_assert_int_eq(fl__display_compose(c, &fr, NULL), 0);
	fl__display_compose_free(c);
}

/* Waits for @fence (closing it), then the screen must be the reference's. */
static void check_screen(struct fx *f, int fence, const struct fl_hwc_layer *L,
			 struct tbuf *const *bufs, size_t n)
{
	uint32_t *ref = calloc((size_t)W * H, 4), cw, ch, cp, bad = 0;
	uint8_t *cap;
	int fd;

	fl_assert(ref);
	if (fence >= 0) {
		fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
		close(fence);
	}
	reference(L, bufs, n, ref);
	fl_assert_int_eq(fl_display_capture(f->intf, XR24, &fd, &cw, &ch, &cp, NULL), 0);
	fl_assert_int_eq(cw, W);
	fl_assert_int_eq(ch, H);
	cap = mmap(NULL, (size_t)cp * ch, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(cap != MAP_FAILED);
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < W; x++) {
			uint32_t a = ((const uint32_t *)(cap + (size_t)y * cp))[x],
				 b = ref[y * W + x];

			for (int s = 0; s < 24; s += 8) {
				int d = (int)(a >> s & 0xff) - (int)(b >> s & 0xff);

				if (d > 1 || d < -1) {
					if (!bad)
						fprintf(stderr,
							"first bad pixel %u,%u: %06x, want %06x\n",
							x, y, a & 0xffffff, b & 0xffffff);
					bad++;
					break;
				}
			}
		}
	munmap(cap, (size_t)cp * ch);
	close(fd);
	free(ref);
	fl_assert_int_eq(bad, 0);
}

static void close_result(struct fl_hwc_result *res)
{
	if (res->present_fence >= 0)
		close(res->present_fence);
	for (size_t i = 0; i < res->n_released; i++)
		if (res->released[i].fence >= 0)
			close(res->released[i].fence);
}

/* Every layer on its own engine: no composition, nothing drawn by the HWC. */
FL_TEST(hwc_engine_rich_puts_every_layer_on_an_overlay)
{
	struct fx f;
	struct tbuf b[4];
	struct tbuf *bp[4] = { &b[0], &b[1], &b[2], &b[3] };
	struct fl_hwc_layer L[4];
	struct fl_hwc_result res;
	struct fl_display_stats before;
	bool used[256] = { false };

	fx_open(&f, rich, NULL);
	tbuf_new(&b[0], XR24, W, H, 1);
	tbuf_new(&b[1], AR24, 100, 80, 2);
	tbuf_new(&b[2], NV12, 64, 48, 3);
	tbuf_new(&b[3], AR24, 50, 50, 4);
	/* Not in z order: the HWC sorts. */
	L[0] = mklayer(1, 11, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L[1] = mklayer(2, 12, &b[1], 30, 20, 100, 80, 3, FL_DISPLAY_BLEND_PREMULTIPLIED);
	L[2] = mklayer(3, 13, &b[2], 150, 100, 64, 48, 1, FL_DISPLAY_BLEND_NONE);
	L[3] = mklayer(4, 14, &b[3], 120, 60, 100, 100, 2, FL_DISPLAY_BLEND_COVERAGE);
	L[3].layer.alpha = 0xc000;
	before = dstats(&f);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 4, &res, NULL), 0);
	fl_assert_int_eq(res.n_composed, 0);
	fl_assert_int_eq(res.n_tests, 1);
	fl_assert(res.flags & FL_HWC_FRAME_POSTED);
	fl_assert(!(res.flags & FL_HWC_FRAME_COMPOSED));
	for (int i = 0; i < 4; i++) {
		fl_assert_int_eq(res.layers[i].composition, FL_HWC_COMPOSITION_DEVICE);
		fl_assert(res.layers[i].engine < 256 && !used[res.layers[i].engine]);
		used[res.layers[i].engine] = true;
	}
	fl_assert_int_eq(res.layers[2].engine, 4); /* NV12: only the video engine takes it */
	fl_assert_int_eq(res.n_released, 0);
	check_screen(&f, res.present_fence, L, bp, 4);
	fl_assert_int_eq(dstats(&f).posted, before.posted + 1);
	fl_assert_int_eq(hstats(&f).composed_frames, 0);
	fl_assert_int_eq(hstats(&f).composed_pixels, 0);
	for (int i = 0; i < 4; i++)
		tbuf_free(&b[i]);
	fx_close(&f);
}

/* One engine: the client target takes it, and every layer is composed. */
FL_TEST(hwc_engine_poor_composes_everything)
{
	struct fx f;
	struct tbuf b[3];
	struct tbuf *bp[3] = { &b[0], &b[1], &b[2] };
	struct fl_hwc_layer L[3];
	struct fl_hwc_result res;

	fx_open(&f, poor, NULL);
	tbuf_new(&b[0], XR24, W, H, 5);
	tbuf_new(&b[1], AR24, 100, 80, 6);
	tbuf_new(&b[2], NV12, 64, 48, 7);
	L[0] = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L[1] = mklayer(2, 2, &b[1], 30, 20, 200, 160, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	L[2] = mklayer(3, 3, &b[2], 150, 100, 64, 48, 2, FL_DISPLAY_BLEND_NONE);
	L[2].layer.transform = FL_DISPLAY_TRANSFORM_ROT_90;
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 3, &res, NULL), 0);
	/* Overlays for all, then 1 and 2 composed, are not even tried: one engine. */
	fl_assert_int_eq(res.n_tests, 1);
	fl_assert_int_eq(res.n_composed, 3);
	fl_assert(res.flags & FL_HWC_FRAME_COMPOSED);
	for (int i = 0; i < 3; i++) {
		fl_assert_int_eq(res.layers[i].composition, FL_HWC_COMPOSITION_CLIENT);
		fl_assert_int_eq(res.layers[i].engine, 0);
	}
	fl_assert_int_eq(res.composed_pixels, (uint64_t)W * H);
	check_screen(&f, res.present_fence, L, bp, 3);
	fl_assert_int_eq(hstats(&f).composed_frames, 1);
	for (int i = 0; i < 3; i++)
		tbuf_free(&b[i]);
	fx_close(&f);
}

/*
 * A producer that keeps shrinking and regrowing its buffer while the HWC
 * composes it: a composition that reads past the moment's end would kill
 * the process with SIGBUS. With the guard each frame is either composed,
 * refused as too small (the check saw it shrunk), or refused because it
 * shrank during the composition; the process lives on, and once the
 * producer stops, a frame is composed right again.
 */
FL_TEST(hwc_buffer_shrunk_under_the_composer_fails_the_frame_not_the_process)
{
	struct fx f;
	struct tbuf b[2];
	struct tbuf *bp[2] = { &b[0], &b[1] };
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	unsigned int shrank = 0, small = 0, fine = 0;
	pid_t toggler;
	int st;

	fx_open(&f, poor, NULL);
	tbuf_new(&b[0], XR24, W, H, 5);
	tbuf_new(&b[1], XR24, W, H, 6);
	L[0] = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L[1] = mklayer(2, 2, &b[1], 0, 0, W, H, 1, FL_DISPLAY_BLEND_NONE);
	L[1].layer.alpha = 0x8000; /* both are read for every pixel */
	munmap(b[1].map, b[1].size);
	toggler = fork();
	fl_assert(toggler >= 0);
	if (toggler == 0)
		for (;;) {
			if (ftruncate(b[1].fd, 4096) < 0 ||
			    ftruncate(b[1].fd, (off_t)b[1].size) < 0)
				_exit(1);
		}
	for (int i = 0; i < 200; i++) {
		struct fl_display_error e = { 0 };
		int r;

		/* A new buffer id each frame: checked, mapped and composed anew. */
		L[1].buffer_id = 10 + (uint64_t)i;
		r = fl_hwc_present(f.hwc, L, 2, &res, &e);
		if (r == 0) {
			fine++;
			close_result(&res);
		} else if (r == -EFAULT) {
			fl_assert(strstr(e.msg, "shrank"));
			shrank++;
		} else {
			fl_assert_int_eq(r, -EINVAL);
			small++;
		}
	}
	kill(toggler, SIGKILL);
	fl_assert_int_eq(waitpid(toggler, &st, 0), toggler);
	fprintf(stderr, "200 frames: %u composed, %u refused as too small, %u shrank\n", fine,
		small, shrank);
	/* Whole again: composed from the buffer as it is now. */
	fl_assert_int_eq(ftruncate(b[1].fd, (off_t)b[1].size), 0);
	b[1].map = mmap(NULL, b[1].size, PROT_READ | PROT_WRITE, MAP_SHARED, b[1].fd, 0);
	fl_assert(b[1].map != MAP_FAILED);
	tbuf_fill(&b[1], 9);
	L[1].buffer_id = 1000;
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	check_screen(&f, res.present_fence, L, bp, 2);
	for (int i = 0; i < 2; i++)
		tbuf_free(&b[i]);
	fx_close(&f);
}

/* RGB565: no engine lists it, so the bottom layer is composed; the rest stay on overlays. */
FL_TEST(hwc_format_no_engine_takes_is_composed)
{
	struct fx f;
	struct tbuf b[3];
	struct tbuf *bp[3] = { &b[0], &b[1], &b[2] };
	struct fl_hwc_layer L[3];
	struct fl_hwc_result res;

	fx_open(&f, rich, NULL);
	tbuf_new(&b[0], RG16, W, H, 8);
	tbuf_new(&b[1], AR24, 100, 80, 9);
	tbuf_new(&b[2], XR24, 40, 40, 10);
	L[0] = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L[1] = mklayer(2, 2, &b[1], 30, 20, 100, 80, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	L[2] = mklayer(3, 3, &b[2], 200, 150, 40, 40, 2, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 3, &res, NULL), 0);
	fl_assert_int_eq(res.n_composed, 1);
	fl_assert_int_eq(res.n_tests, 1); /* "all on overlays" cannot be: not tested */
	fl_assert_int_eq(res.layers[0].composition, FL_HWC_COMPOSITION_CLIENT);
	fl_assert_int_eq(res.layers[1].composition, FL_HWC_COMPOSITION_DEVICE);
	fl_assert_int_eq(res.layers[2].composition, FL_HWC_COMPOSITION_DEVICE);
	fl_assert(res.layers[1].engine != res.target_engine);
	check_screen(&f, res.present_fence, L, bp, 3);
	/* At the top, the same layer takes every layer below it into the target. */
	L[0].layer.zpos = 5;
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 3, &res, NULL), 0);
	fl_assert_int_eq(res.n_composed, 3);
	check_screen(&f, res.present_fence, L, bp, 3);
	close_result(&res);
	for (int i = 0; i < 3; i++)
		tbuf_free(&b[i]);
	fx_close(&f);
}

/*
 * The display refuses a layer reaching past the panel's edge (TEST_ONLY),
 * which the compositor clips: one step down the ladder. More layers than
 * engines: the steps the data rules out are never tested.
 */
FL_TEST(hwc_test_only_refusal_falls_back_one_step)
{
	struct fx f;
	struct tbuf b[7];
	struct tbuf *bp[7];
	struct fl_hwc_layer L[7];
	struct fl_hwc_result res;
	struct fl_hwc_stats s;

	fx_open(&f, rich, NULL);
	for (int i = 0; i < 7; i++) {
		tbuf_new(&b[i], i ? AR24 : XR24, 60, 60, 20 + (uint32_t)i);
		bp[i] = &b[i];
		L[i] = mklayer((uint64_t)i + 1, (uint64_t)i + 1, &b[i], 20 * i, 10 * i, 60, 60,
			       (uint32_t)i, FL_DISPLAY_BLEND_PREMULTIPLIED);
	}
	L[0].layer.dst_x = (int32_t)W - 30; /* half outside */
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 3, &res, NULL), 0);
	fl_assert_int_eq(res.n_tests, 2); /* all overlays: refused; bottom one composed: taken */
	fl_assert_int_eq(res.n_composed, 1);
	fl_assert_int_eq(res.layers[0].composition, FL_HWC_COMPOSITION_CLIENT);
	fl_assert_int_eq(res.layers[1].composition, FL_HWC_COMPOSITION_DEVICE);
	s = hstats(&f);
	fl_assert_int_eq(s.test_only, 2);
	fl_assert_int_eq(s.test_only_refused, 1);
	check_screen(&f, res.present_fence, L, bp, 3);

	/* 7 layers, 5 engines of which 4 take RGB: target + 4 overlays at most. */
	L[0].layer.dst_x = 0;
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 7, &res, NULL), 0);
	fl_assert_int_eq(res.n_tests, 1);
	fl_assert_int_eq(res.n_composed, 4);
	for (int i = 0; i < 7; i++)
		fl_assert_int_eq(res.layers[i].composition,
				 i < 4 ? FL_HWC_COMPOSITION_CLIENT : FL_HWC_COMPOSITION_DEVICE);
	/* The layers the last frame had on overlays are composed now: released at once. */
	check_screen(&f, res.present_fence, L, bp, 7);
	for (size_t i = 0; i < res.n_released; i++)
		fl_assert(0); /* same buffers: nothing let go */
	for (int i = 0; i < 7; i++)
		tbuf_free(&b[i]);
	fx_close(&f);
}

/* While the geometry stays, no TEST_ONLY post: new buffers reuse the plan. */
FL_TEST(hwc_plan_reused_while_the_scene_is_static)
{
	struct fx f;
	struct tbuf b[2][2];
	struct tbuf *bp[2];
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	struct fl_hwc_stats s;

	fx_open(&f, rich, NULL);
	for (int k = 0; k < 2; k++) {
		tbuf_new(&b[k][0], XR24, W, H, 30 + (uint32_t)k);
		tbuf_new(&b[k][1], AR24, 80, 80, 40 + (uint32_t)k);
	}
	for (uint64_t fr = 0; fr < 6; fr++) {
		int k = (int)(fr & 1);

		L[0] = mklayer(1, 100 + fr, &b[k][0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
		L[1] = mklayer(2, 200 + fr, &b[k][1], 50, 50, 80, 80, 1,
			       FL_DISPLAY_BLEND_PREMULTIPLIED);
		fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
		fl_assert_int_eq(res.n_tests, fr == 0 ? 1 : 0);
		fl_assert_int_eq(!!(res.flags & FL_HWC_FRAME_PLANNED), fr == 0);
		fl_assert(res.flags & FL_HWC_FRAME_POSTED);
		fl_assert_int_eq(res.n_released, fr == 0 ? 0 : 2);
		bp[0] = &b[k][0];
		bp[1] = &b[k][1];
		if (fr == 5)
			check_screen(&f, res.present_fence, L, bp, 2);
		else
			close_result(&res);
		if (fr == 5)
			for (size_t i = 0; i < res.n_released; i++)
				close(res.released[i].fence);
	}
	s = hstats(&f);
	fl_assert_int_eq(s.test_only, 1);
	fl_assert_int_eq(s.plans, 1);
	fl_assert_int_eq(s.plans_reused, 5);
	/* A moved layer is a new scene: planned again. */
	L[1].layer.dst_x = 51;
	L[1].buffer_id = 999;
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	fl_assert_int_eq(res.n_tests, 1);
	close_result(&res);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++)
			tbuf_free(&b[k][i]);
	fx_close(&f);
}

/* Same buffers, no damage: nothing is drawn, nothing is posted. */
FL_TEST(hwc_static_frame_posts_nothing)
{
	static const struct fl_hwc_rect none[1];
	struct fx f;
	struct tbuf b[2];
	struct tbuf *bp[2] = { &b[0], &b[1] };
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	struct fl_display_stats d;
	struct fl_hwc_stats s;

	fx_open(&f, poor, NULL);
	tbuf_new(&b[0], XR24, W, H, 50);
	tbuf_new(&b[1], AR24, 80, 80, 51);
	L[0] = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L[1] = mklayer(2, 2, &b[1], 50, 50, 80, 80, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	check_screen(&f, res.present_fence, L, bp, 2);
	d = dstats(&f);
	s = hstats(&f);
	L[0].damage = L[1].damage = none;
	for (int i = 0; i < 10; i++) {
		fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
		fl_assert_int_eq(res.flags, 0);
		fl_assert_int_eq(res.present_fence, -1);
		fl_assert_int_eq(res.n_released, 0);
		fl_assert_int_eq(res.n_composed, 2);
	}
	fl_assert_int_eq(dstats(&f).posted, d.posted);
	fl_assert_int_eq(hstats(&f).composed_frames, s.composed_frames);
	fl_assert_int_eq(hstats(&f).composed_pixels, s.composed_pixels);
	fl_assert_int_eq(hstats(&f).unchanged, 10);
	fl_assert_int_eq(hstats(&f).test_only, s.test_only);
	check_screen(&f, -1, L, bp, 2);
	tbuf_free(&b[0]);
	tbuf_free(&b[1]);
	fx_close(&f);
}

/*
 * Damage: once every client target has been drawn, a frame redraws what
 * changed since the target it draws into was last drawn (its age).
 */
FL_TEST(hwc_damage_redraws_only_what_changed_since_the_target_was_drawn)
{
	const struct fl_hwc_rect a = { 10, 10, 16, 16 }, c = { 40, 30, 8, 4 };
	struct fx f;
	struct tbuf bg, top[6];
	struct tbuf *bp[2];
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	/* The top layer is 100x100 at (100, 50), unscaled: damage maps 1:1, one pixel around. */
	const uint64_t area_a = 18 * 18, area_ac = 18 * 18 + 10 * 6;

	fx_open(&f, poor, NULL);
	tbuf_new(&bg, XR24, W, H, 60);
	L[0] = mklayer(1, 1, &bg, 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	for (uint32_t fr = 0; fr < 6; fr++) {
		tbuf_new(&top[fr], AR24, 100, 100, 61 + fr);
		L[1] = mklayer(2, 10 + fr, &top[fr], 100, 50, 100, 100, 1,
			       FL_DISPLAY_BLEND_PREMULTIPLIED);
		if (fr) {
			/* What changed from the previous buffer: copy it, change the rect. */
			memcpy(top[fr].map, top[fr - 1].map, top[fr].size);
			for (uint32_t y = 0; y < (fr == 4 ? c.h : a.h); y++)
				for (uint32_t x = 0; x < (fr == 4 ? c.w : a.w); x++) {
					uint32_t px = fr == 4 ? c.x + x : a.x + x,
						 py = fr == 4 ? c.y + y : a.y + y;

					((uint32_t *)top[fr].map)[py * 100 + px] =
						0xff000000u | fr * 40;
				}
			L[1].damage = fr == 4 ? &c : &a;
			L[1].n_damage = 1;
		}
		fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
		fl_assert(res.flags & FL_HWC_FRAME_COMPOSED);
		/*
		 * Each frame is on screen before the next (check_screen() waits),
		 * so the target before last is free, and the HWC takes it: the
		 * most recently drawn free one, of age 2. Frames 0 and 1 draw
		 * targets 0 and 1 for the first time: whole. Frame 2 (into 0)
		 * redraws what frames 1 and 2 changed, a; frame 3 (into 1) a;
		 * frame 4 (into 0) a and c; frame 5 (into 1) c and a.
		 */
		if (fr < 2)
			fl_assert_int_eq(res.composed_pixels, (uint64_t)W * H);
		else
			fl_assert_int_eq(res.composed_pixels, fr < 4 ? area_a : area_ac);
		bp[0] = &bg;
		bp[1] = &top[fr];
		for (size_t i = 0; i < res.n_released; i++) {
			fl_assert_int_eq(res.released[i].fence, -1); /* composed: free at once */
			fl_assert_int_eq(res.released[i].buffer_id, 10 + fr - 1);
		}
		check_screen(&f, res.present_fence, L, bp, 2);
	}
	fl_assert_int_eq(hstats(&f).composed_pixels,
			 2 * (uint64_t)W * H + 2 * area_a + 2 * area_ac);
	tbuf_free(&bg);
	for (int i = 0; i < 6; i++)
		tbuf_free(&top[i]);
	fx_close(&f);
}

static uint64_t fence_time(int fd)
{
	struct fl_fence_info info;

	fl_assert_int_eq(fl_fence_fd_get_info(fd, &info, NULL, 0), 0);
	fl_assert_int_eq(info.status, 1);
	return info.timestamp_ns;
}

/*
 * An overlay buffer replaced at frame N + 1 is released by frame N + 1's
 * present fence: not before that frame is on screen (held here by its
 * acquire fence), and the present fence carries the vsync's time.
 */
FL_TEST(hwc_release_fence_signals_once_the_replacing_frame_is_on_screen)
{
	struct fx f;
	struct tbuf b[2];
	struct fl_hwc_layer L;
	struct fl_hwc_result res;
	struct fl_display_event *ev;
	int tl, acq, rel, present;
	uint64_t t, posted_at;
	bool seen = false;

	fx_open(&f, rich, NULL);
	fl_assert_int_eq(fl_display_set_event(f.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	tbuf_new(&b[0], XR24, W, H, 70);
	tbuf_new(&b[1], XR24, W, H, 71);
	L = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L, 1, &res, NULL), 0);
	fl_assert_int_eq(res.layers[0].composition, FL_HWC_COMPOSITION_DEVICE);
	fl_assert_int_eq(fl_fence_fd_wait(res.present_fence, 10000), 0);
	close(res.present_fence);

	fl_assert_int_eq(fl_timeline_fd_create("producer", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "frame-2", &acq), 0);
	L = mklayer(1, 2, &b[1], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L.buffer.acquire_fence = acq;
	posted_at = fl_test_now_ns();
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L, 1, &res, NULL), 0);
	fl_assert_int_eq(res.n_released, 1);
	fl_assert_int_eq(res.released[0].buffer_id, 1);
	fl_assert_int_eq(res.released[0].layer_id, 1);
	rel = res.released[0].fence;
	present = res.present_fence;
	fl_assert(rel >= 0 && present >= 0);
	/* Two vsyncs pass: the frame waits for its buffer, so buffer 1 stays on screen. */
	for (int vs = 0; vs < 2;) {
		fl_assert_int_eq(fl_display_read_event(f.intf, &ev), 0);
		vs += ev->type == FL_DISPLAY_EVENT_VSYNC &&
		      ((struct fl_display_vsync_event *)ev)->timestamp > posted_at;
		free(ev);
	}
	fl_assert_int_eq(fl_fence_fd_get_status(rel), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(present), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(rel, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_wait(present, 10000), 0);
	t = fence_time(present);
	fl_assert_int_eq(fence_time(rel), t);
	/* The present time is a vsync's: among the events read since. */
	for (int i = 0; i < 8 && !seen; i++) {
		struct fl_display_vsync_event *v;

		fl_assert_int_eq(fl_display_read_event(f.intf, &ev), 0);
		v = (struct fl_display_vsync_event *)ev;
		seen = ev->type == FL_DISPLAY_EVENT_VSYNC && v->timestamp == t;
		free(ev);
	}
	fl_assert(seen);
	close(rel);
	close(present);
	close(acq);
	close(tl);
	tbuf_free(&b[0]);
	tbuf_free(&b[1]);
	fx_close(&f);
}

/* A composed layer's acquire fence that never signals: bounded, and the last good buffer stays. */
FL_TEST(hwc_acquire_that_never_signals_keeps_the_last_good_buffer)
{
	/* Composed (one layer alone would go on the one engine): the HWC waits for it. */
	const struct fl_hwc_options o = { .acquire_timeout_ms = 100, .flags = FL_HWC_NO_OVERLAYS };
	struct fx f;
	struct tbuf b[2];
	struct tbuf *bp[1] = { &b[0] };
	struct fl_hwc_layer L;
	struct fl_hwc_result res;
	int tl, acq;

	fx_open(&f, poor, &o);
	tbuf_new(&b[0], XR24, W, H, 80);
	tbuf_new(&b[1], XR24, W, H, 81);
	L = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L, 1, &res, NULL), 0);
	check_screen(&f, res.present_fence, &L, bp, 1);
	fl_assert_int_eq(fl_timeline_fd_create("stuck", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "never", &acq), 0);
	L = mklayer(1, 2, &b[1], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L.buffer.acquire_fence = acq;
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L, 1, &res, NULL), 0);
	fl_assert_int_eq(res.layers[0].acquire_status, -ETIME);
	fl_assert_int_eq(res.n_released, 1);
	fl_assert_int_eq(res.released[0].buffer_id, 2);
	fl_assert_int_eq(res.released[0].fence, -1);
	fl_assert_int_eq(hstats(&f).acquire_failures, 1);
	/* Buffer 1 is still the layer's: shown, not released. */
	L = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	check_screen(&f, res.present_fence, &L, bp, 1);
	close(acq);
	close(tl);
	tbuf_free(&b[0]);
	tbuf_free(&b[1]);
	fx_close(&f);
}

/* An overlay layer whose acquire fence failed: its previous buffer is posted again. */
FL_TEST(hwc_failed_acquire_fence_keeps_the_last_good_buffer_on_its_overlay)
{
	struct fx f;
	struct tbuf b[3];
	struct tbuf *bp[2] = { &b[0], &b[1] };
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	int tl, acq;

	fx_open(&f, rich, NULL);
	tbuf_new(&b[0], XR24, W, H, 90);
	tbuf_new(&b[1], AR24, 64, 64, 91);
	tbuf_new(&b[2], AR24, 64, 64, 92);
	L[0] = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L[1] = mklayer(2, 2, &b[1], 10, 10, 64, 64, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	check_screen(&f, res.present_fence, L, bp, 2);
	fl_assert_int_eq(fl_timeline_fd_create("reset", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "failed", &acq), 0);
	fl_assert_int_eq(fl_timeline_fd_fail_pending(tl, -EIO), 1); /* one point failed */
	L[1] = mklayer(2, 3, &b[2], 10, 10, 64, 64, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	L[1].buffer.acquire_fence = acq;
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	fl_assert_int_eq(res.layers[1].acquire_status, -EIO);
	fl_assert_int_eq(res.layers[1].composition, FL_HWC_COMPOSITION_DEVICE);
	fl_assert_int_eq(res.n_released, 1);
	fl_assert_int_eq(res.released[0].buffer_id, 3);
	fl_assert_int_eq(res.released[0].fence, -1);
	/* Nothing changed on screen: no post. */
	fl_assert_int_eq(res.present_fence, -1);
	L[1] = mklayer(2, 2, &b[1], 10, 10, 64, 64, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	check_screen(&f, -1, L, bp, 2);
	close(acq);
	close(tl);
	for (int i = 0; i < 3; i++)
		tbuf_free(&b[i]);
	fx_close(&f);
}

/* Hostile layers: each refused with its errno, nothing posted, no fd kept. */
FL_TEST(hwc_refuses_bad_layers_and_posts_nothing)
{
	static struct fl_hwc_layer many[FL_HWC_MAX_LAYERS + 1];
	struct fx f;
	struct tbuf b, other;
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	struct fl_display_error e = { 0 };
	struct fl_display_stats d;
	int pipefd[2];

	fx_open(&f, rich, NULL);
	tbuf_new(&b, XR24, 64, 64, 100);
	tbuf_new(&other, XR24, 64, 64, 101);
	fl_assert_int_eq(pipe(pipefd), 0);
	d = dstats(&f);
	L[0] = mklayer(1, 1, &b, 0, 0, 64, 64, 0, FL_DISPLAY_BLEND_NONE);

	fl_assert_int_eq(fl_hwc_present(f.hwc, many, FL_HWC_MAX_LAYERS + 1, &res, &e), -E2BIG);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 1, NULL, &e), -EINVAL);
	fl_assert_int_eq(fl_hwc_present(NULL, L, 1, &res, &e), -EINVAL);

	L[1] = L[0];
	L[1].buffer.fd[0] = 1000; /* not open */
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EBADF);
	fl_assert(strstr(e.msg, "not open"));
	L[1].buffer.fd[0] = pipefd[0];
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	fl_assert(strstr(e.msg, "no memory"));
	L[1] = L[0];
	L[1].buffer.pitch[0] = 63 * 4;
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	fl_assert(strstr(e.msg, "pitch"));
	L[1] = L[0];
	L[1].buffer.h = 65; /* one line past the memory */
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	L[1] = L[0];
	L[1].layer.src_w = (64 << 16) + 1;
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	fl_assert(strstr(e.msg, "source rect"));
	L[1] = L[0];
	L[1].buffer.format = FL_FOURCC('Y', 'U', 'Y', 'V');
	L[1].buffer.pitch[0] = 128;
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	fl_assert(strstr(e.msg, "neither by an engine"));
	L[1] = L[0];
	L[1].buffer.acquire_fence = other.fd;
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	fl_assert(strstr(e.msg, "no fence"));
	L[1] = L[0];
	L[1].buffer_id = 0;
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	L[1] = L[0];
	L[1].n_damage = FL_HWC_MAX_DAMAGE + 1;
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	/* Two layers with one id, one buffer or one z. */
	L[1] = mklayer(1, 2, &other, 0, 0, 64, 64, 1, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, &e), -EINVAL);
	L[1] = mklayer(2, 1, &other, 0, 0, 64, 64, 1, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, &e), -EINVAL);
	L[1] = mklayer(2, 2, &other, 0, 0, 64, 64, 0, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, &e), -EINVAL);
	fl_assert_int_eq(dstats(&f).posted, d.posted);
	fl_assert_int_eq(hstats(&f).test_only, 0);

	/* A buffer_id the HWC knows, with other memory: refused, not shown. */
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 1, &res, &e), 0);
	close_result(&res);
	L[1] = mklayer(1, 1, &other, 0, 0, 64, 64, 0, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L[1], 1, &res, &e), -EINVAL);
	fl_assert(strstr(e.msg, "other memory"));
	fl_assert_int_eq(dstats(&f).posted, d.posted + 1);

	/* Options. */
	{
		struct fl_hwc *h;
		struct fl_hwc_options o = { .n_targets = 1 };

		fl_assert_int_eq(fl_hwc_create(0, 0, &o, &h, NULL), -EINVAL);
		o = (struct fl_hwc_options){ .acquire_timeout_ms = -1 };
		fl_assert_int_eq(fl_hwc_create(0, 0, &o, &h, NULL), -EINVAL);
		o = (struct fl_hwc_options){ .reserved = { 1 } };
		fl_assert_int_eq(fl_hwc_create(0, 0, &o, &h, NULL), -EINVAL);
		fl_assert_int_eq(fl_hwc_create(0, 7, NULL, &h, &e), -ENODEV);
		fl_assert_int_eq(fl_hwc_create(0, 0, NULL, NULL, NULL), -EINVAL);
	}
	close(pipefd[0]);
	close(pipefd[1]);
	tbuf_free(&b);
	tbuf_free(&other);
	fx_close(&f);
}

/* A layer that goes lets its buffer go with the frame's present fence; no layers at all too. */
FL_TEST(hwc_removed_layers_release_their_buffers)
{
	struct fx f;
	struct tbuf b[2];
	struct tbuf *bp[1] = { &b[0] };
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;

	fx_open(&f, rich, NULL);
	tbuf_new(&b[0], XR24, W, H, 110);
	tbuf_new(&b[1], AR24, 32, 32, 111);
	L[0] = mklayer(1, 1, &b[0], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	L[1] = mklayer(2, 2, &b[1], 5, 5, 32, 32, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	close_result(&res);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 1, &res, NULL), 0);
	fl_assert_int_eq(res.n_released, 1);
	fl_assert_int_eq(res.released[0].layer_id, 2);
	fl_assert_int_eq(res.released[0].buffer_id, 2);
	fl_assert(res.released[0].fence >= 0);
	fl_assert_int_eq(fl_fence_fd_wait(res.released[0].fence, 10000), 0);
	close(res.released[0].fence);
	check_screen(&f, res.present_fence, L, bp, 1);
	fl_assert_int_eq(fl_hwc_present(f.hwc, NULL, 0, &res, NULL), 0);
	fl_assert(res.flags & FL_HWC_FRAME_POSTED);
	fl_assert_int_eq(res.n_released, 1);
	fl_assert_int_eq(res.released[0].buffer_id, 1);
	fl_assert_int_eq(fl_fence_fd_wait(res.released[0].fence, 10000), 0);
	close(res.released[0].fence);
	check_screen(&f, res.present_fence, L, bp, 0);
	tbuf_free(&b[0]);
	tbuf_free(&b[1]);
	fx_close(&f);
}

/*
 * Damage through a turned, mirrored and scaled layer: a rect of the buffer
 * redrawn where the layer shows it, or stale pixels stay (the screen would
 * differ from the reference).
 */
FL_TEST(hwc_damage_follows_transforms_and_scaling)
{
	static const uint32_t tf[] = { 1, 2, 3, 4, 5, 7 };
	const struct fl_hwc_rect d = { 5, 20, 12, 7 };
	struct fx f;
	struct tbuf bg, top[4];
	struct tbuf *bp[2];
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	uint64_t id = 10;

	fx_open(&f, poor, NULL);
	tbuf_new(&bg, XR24, W, H, 120);
	L[0] = mklayer(1, 1, &bg, 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	bp[0] = &bg;
	for (size_t t = 0; t < sizeof(tf) / sizeof(tf[0]); t++) {
		for (int fr = 0; fr < 4; fr++) {
			tbuf_new(&top[fr], XR24, 40, 60, 121 + (uint32_t)fr);
			/* 40x60 shown as 90x130 (turned: 130 wide for a quarter turn) at (33, 41). */
			L[1] = mklayer(2, ++id, &top[fr], 33, 41, tf[t] & 1 ? 130 : 90,
				       tf[t] & 1 ? 90 : 130, 1, FL_DISPLAY_BLEND_NONE);
			L[1].layer.transform = tf[t];
			if (fr) {
				memcpy(top[fr].map, top[fr - 1].map, top[fr].size);
				for (uint32_t y = d.y; y < d.y + d.h; y++)
					for (uint32_t x = d.x; x < d.x + d.w; x++)
						((uint32_t *)top[fr].map)[y * 40 + x] =
							0xff000000u | (uint32_t)fr * 0x3f2f1f;
				L[1].damage = &d;
				L[1].n_damage = 1;
			}
			fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
			if (fr >= 2 && t > 0)
				fl_assert(res.composed_pixels < (uint64_t)W * H / 4);
			bp[1] = &top[fr];
			check_screen(&f, res.present_fence, L, bp, 2);
			if (fr)
				tbuf_free(&top[fr - 1]);
		}
		tbuf_free(&top[3]);
	}
	tbuf_free(&bg);
	fx_close(&f);
}

/*
 * A post the display refuses after its plan passed (here: the service's
 * bound of 16 waiting posts a client, full of frames whose producer never
 * signals): the frame fails whole, nothing is released or kept, and the
 * next frame plans again.
 */
FL_TEST(hwc_refused_post_changes_nothing_and_plans_again)
{
	struct fx f;
	struct tbuf b;
	struct fl_hwc_layer L;
	struct fl_hwc_result res;
	struct fl_display_error e = { 0 };
	int tl, acq[17], rel[16], n_rel = 0, r = 0, fr;

	fx_open(&f, rich, NULL);
	tbuf_new(&b, XR24, W, H, 130);
	fl_assert_int_eq(fl_timeline_fd_create("never", 0, &tl), 0);
	for (fr = 0; fr < 17; fr++) {
		fl_assert_int_eq(fl_fence_fd_create(tl, 1, "held", &acq[fr]), 0);
		L = mklayer(1, 100 + (uint64_t)fr, &b, 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
		L.buffer.acquire_fence = acq[fr];
		r = fl_hwc_present(f.hwc, &L, 1, &res, &e);
		if (r < 0)
			break;
		fl_assert_int_eq(res.n_released, fr ? 1 : 0);
		if (fr)
			rel[n_rel++] = res.released[0].fence;
		close(res.present_fence);
	}
	fl_assert_int_eq(r, -EBUSY);
	fl_assert_int_eq(fr, 16);
	fl_assert_int_eq(res.present_fence, -1);
	fl_assert_int_eq(res.n_released, 0);
	/* The producer signals: everything queued flips, every release with it. */
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	for (int i = 0; i < n_rel; i++) {
		fl_assert_int_eq(fl_fence_fd_wait(rel[i], 10000), 0);
		close(rel[i]);
	}
	/* Buffer 115 is still the layer's: the refused 116 was never taken. */
	L = mklayer(1, 116, &b, 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, &L, 1, &res, NULL), 0);
	fl_assert_int_eq(res.n_tests, 1);
	fl_assert_int_eq(res.n_released, 1);
	fl_assert_int_eq(res.released[0].buffer_id, 115);
	close_result(&res);
	for (int i = 0; i <= fr; i++)
		close(acq[i]);
	close(tl);
	tbuf_free(&b);
	fx_close(&f);
}

/*
 * A buffer on an overlay in post N, composed in post N + 1 (which waits
 * for another layer's acquire fence), replaced in N + 2: the display still
 * shows it until N + 1 flips, so its release must wait for that, not come
 * at once as for a buffer only ever composed.
 */
FL_TEST(hwc_buffer_moved_from_overlay_to_composition_is_released_after_the_flip)
{
	struct fx f;
	struct tbuf b[3];
	struct fl_hwc_layer L[2];
	struct fl_hwc_result res;
	struct fl_display_event *ev;
	int tl, acq, rel, p1;
	uint64_t posted_at;

	fx_open(&f, rich, NULL);
	fl_assert_int_eq(fl_display_set_event(f.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	tbuf_new(&b[0], XR24, 64, 64, 140);
	tbuf_new(&b[1], XR24, 64, 64, 141);
	tbuf_new(&b[2], AR24, 32, 32, 142);
	L[0] = mklayer(1, 1, &b[0], 10, 10, 64, 64, 0, FL_DISPLAY_BLEND_NONE);
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 1, &res, NULL), 0);
	fl_assert_int_eq(res.layers[0].composition, FL_HWC_COMPOSITION_DEVICE);
	fl_assert_int_eq(fl_fence_fd_wait(res.present_fence, 10000), 0);
	close(res.present_fence);

	/* Post N + 1: buffer 1 composed (past the edge), another layer held by its fence. */
	fl_assert_int_eq(fl_timeline_fd_create("held", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "held", &acq), 0);
	L[0].layer.dst_x = (int32_t)W - 32;
	L[1] = mklayer(2, 3, &b[2], 100, 100, 32, 32, 1, FL_DISPLAY_BLEND_PREMULTIPLIED);
	L[1].buffer.acquire_fence = acq;
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	fl_assert_int_eq(res.layers[0].composition, FL_HWC_COMPOSITION_CLIENT);
	fl_assert_int_eq(res.n_released, 0);
	p1 = res.present_fence;

	/* Post N + 2: buffer 1 replaced. */
	L[0] = mklayer(1, 2, &b[1], (int32_t)W - 32, 10, 64, 64, 0, FL_DISPLAY_BLEND_NONE);
	L[1].buffer.acquire_fence = -1;
	posted_at = fl_test_now_ns();
	fl_assert_int_eq(fl_hwc_present(f.hwc, L, 2, &res, NULL), 0);
	fl_assert_int_eq(res.n_released, 1);
	fl_assert_int_eq(res.released[0].buffer_id, 1);
	rel = res.released[0].fence;
	fl_assert(rel >= 0);
	for (int vs = 0; vs < 2;) {
		fl_assert_int_eq(fl_display_read_event(f.intf, &ev), 0);
		vs += ev->type == FL_DISPLAY_EVENT_VSYNC &&
		      ((struct fl_display_vsync_event *)ev)->timestamp > posted_at;
		free(ev);
	}
	fl_assert_int_eq(fl_fence_fd_get_status(p1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(rel), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(rel, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(p1), 1);
	fl_assert_int_eq(fl_fence_fd_wait(res.present_fence, 10000), 0);
	close(rel);
	close(p1);
	close_result(&res);
	close(acq);
	close(tl);
	for (int i = 0; i < 3; i++)
		tbuf_free(&b[i]);
	fx_close(&f);
}

/*
 * Two client targets, frames posted faster than the panel shows them: the
 * target frame N is drawn into showed frame N - 2, and is free only once
 * frame N - 1 is on screen, so fl_hwc_present() returns only after that
 * (never drawing into a buffer on screen), and the last frame is right.
 */
FL_TEST(hwc_never_draws_into_a_client_target_on_screen)
{
	const struct fl_hwc_options o = { .n_targets = 2, .flags = FL_HWC_NO_OVERLAYS };
	struct fx f;
	struct tbuf b[2];
	struct tbuf *bp[1];
	struct fl_hwc_layer L;
	struct fl_hwc_result res;
	int present[8];

	fx_open(&f, poor, &o);
	tbuf_new(&b[0], XR24, W, H, 150);
	tbuf_new(&b[1], XR24, W, H, 151);
	for (int fr = 0; fr < 8; fr++) {
		L = mklayer(1, 1 + (uint64_t)fr, &b[fr & 1], 0, 0, W, H, 0, FL_DISPLAY_BLEND_NONE);
		fl_assert_int_eq(fl_hwc_present(f.hwc, &L, 1, &res, NULL), 0);
		fl_assert(res.flags & FL_HWC_FRAME_COMPOSED);
		for (size_t i = 0; i < res.n_released; i++)
			fl_assert_int_eq(res.released[i].fence, -1);
		present[fr] = res.present_fence;
		if (fr >= 2)
			fl_assert_int_eq(fl_fence_fd_get_status(present[fr - 1]), 1);
	}
	bp[0] = &b[1];
	check_screen(&f, present[7], &L, bp, 1);
	for (int fr = 0; fr < 7; fr++)
		close(present[fr]);
	tbuf_free(&b[0]);
	tbuf_free(&b[1]);
	fx_close(&f);
}

/* SPDX-License-Identifier: MIT */
/*
 * Section "hwc": what a frame costs the hardware composer (docs/hwc.md) on
 * a 1920×1080 panel with one engine, so that all four full-screen layers
 * (XRGB8888 at the bottom, three premultiplied ARGB8888 with UI-like alpha
 * above) are composed into the client target: a static frame (plan
 * reused, no buffer new, nothing damaged: nothing drawn, nothing posted),
 * a frame where one layer changed a 256×256 rect, and a full
 * recomposition (four new buffers, no damage given), each beside a memcpy
 * of one 1080p XRGB8888 frame, and beside compose.c composing the same
 * four layers alone (what the HWC adds to its compositor: checks, the
 * post, the target's fences), all taking turns round after round.
 * The service runs on a private socket with this section's config, DPMS
 * off, so posts flip at once and nothing waits for a vsync.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/hwc.h>

#include "bench.h"
#include "compose.h"

#define W      1920u
#define H      1080u
#define NL     4
#define ROUNDS 5
#define FRAME  ((size_t)W * H * 4)

static const char config[] = "[device bench]\ndriver = virtual\n[interface panel]\ntype = DSI\n"
			     "flags = primary\nmodes = 1920x1080@60\ncurrent-mode = 1920x1080@60\n"
			     "connected = yes\n[engine only]\nformats = XRGB8888, ARGB8888\n"
			     "interfaces = panel\n";

struct hwc_ctx {
	struct fl_hwc *hwc;
	int fd[2][NL];
	uint32_t *map[2][NL];
	uint32_t *src, *dst;
	struct fl_hwc_layer l[NL];
	uint64_t next_id;
	int set;
	struct fl_display_compositor *comp;
};

static unsigned int seed = 0x9e3779b9;

static uint32_t rnd(void)
{
	return (uint32_t)rand_r(&seed);
}

/* UI-like: runs of 64 pixels, 70 % transparent, 20 % opaque, 10 % random alpha. */
static void fill(uint32_t *p, bool opaque)
{
	for (size_t i = 0; i < (size_t)W * H; i += 64) {
		uint32_t k = rnd() % 10, a = k < 7 ? 0 : k < 9 ? 0xff : rnd() & 0xff;

		if (opaque)
			a = 0xff;
		for (size_t j = i; j < i + 64 && j < (size_t)W * H; j++) {
			uint32_t c = rnd();

			p[j] = a << 24 | ((c >> 16 & 0xff) * a / 255) << 16 |
			       ((c >> 8 & 0xff) * a / 255) << 8 | (c & 0xff) * a / 255;
		}
	}
}

static const struct fl_hwc_rect none[1];

/* Every layer a new buffer of set @set, no damage given: all of it changed. */
static void set_layers(struct hwc_ctx *c, int set)
{
	for (int i = 0; i < NL; i++) {
		struct fl_hwc_layer *L = &c->l[i];

		memset(L, 0, sizeof(*L));
		L->id = (uint64_t)i + 1;
		L->buffer_id = ++c->next_id;
		L->buffer = (struct fl_display_buffer){
			.w = W,
			.h = H,
			.format = i ? FL_FOURCC('A', 'R', '2', '4') : FL_FOURCC('X', 'R', '2', '4'),
			.n_planes = 1,
			.fd = { c->fd[set][i], -1, -1, -1 },
			.pitch = { W * 4 },
			.acquire_fence = -1,
		};
		L->layer = (struct fl_display_layer){
			.flags = FL_DISPLAY_LAYER_ENABLED,
			.src_w = W << 16,
			.src_h = H << 16,
			.dst_w = W,
			.dst_h = H,
			.zpos = (uint32_t)i,
			.blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
			.alpha = 0xffff,
		};
	}
}

static void present(struct hwc_ctx *c)
{
	struct fl_hwc_result res;
	struct fl_display_error e = { 0 };
	int r = fl_hwc_present(c->hwc, c->l, NL, &res, &e);

	if (r < 0) {
		fprintf(stderr, "fl-bench: hwc: %s\n", e.msg);
		fl__bench_die("fl_hwc_present", r);
	}
	if (res.present_fence >= 0)
		close(res.present_fence);
	for (size_t i = 0; i < res.n_released; i++)
		if (res.released[i].fence >= 0)
			close(res.released[i].fence);
}

static double b_memcpy(void *arg, long ops)
{
	struct hwc_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		memcpy(c->dst, c->src, FRAME);
		__asm__ volatile("" : : "r"(c->dst) : "memory");
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_static(void *arg, long ops)
{
	struct hwc_ctx *c = arg;
	uint64_t t0;

	for (int i = 0; i < NL; i++) {
		c->l[i].damage = none;
		c->l[i].n_damage = 0;
	}
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++)
		present(c);
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

/*
 * One layer's new buffer changed a 256×256 rect of the previous one (so
 * its producer says: the cost is the HWC's, the pixels do not matter).
 */
static double b_damage(void *arg, long ops)
{
	struct hwc_ctx *c = arg;
	const struct fl_hwc_rect d = { 800, 400, 256, 256 };
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		c->set ^= 1;
		c->l[2].buffer.fd[0] = c->fd[c->set][2];
		c->l[2].buffer_id = ++c->next_id;
		c->l[2].damage = &d;
		c->l[2].n_damage = 1;
		present(c);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

/* The same four layers through compose.c alone: what the HWC adds to its compositor. */
static double b_compose(void *arg, long ops)
{
	struct hwc_ctx *c = arg;
	struct fl_display_compose_layer cl[NL];
	struct fl_display_frame f = { 0 };
	uint64_t t0;

	for (int i = 0; i < NL; i++) {
		const struct fl_hwc_layer *L = &c->l[i];

		cl[i] = (struct fl_display_compose_layer){
			.fourcc = L->buffer.format,
			.w = W,
			.h = H,
			.n_planes = 1,
			.plane = { { c->map[c->set][i], FRAME, 0, W * 4 } },
		};
		fl__display_compose_layer_place(&cl[i], &L->layer);
	}
	f.target = (struct fl_display_compose_target){
		c->dst, FRAME, 0, W * 4, FL_FOURCC('X', 'R', '2', '4'), W, H
	};
	f.background = (struct fl_display_color){ 0, 0, 0, 0xffff };
	f.layers = cl;
	f.n_layers = NL;
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++) {
		c->set ^= 1;
		for (int k = 0; k < NL; k++)
			cl[k].plane[0].map = c->map[c->set][k];
		if (fl__display_compose(c->comp, &f, NULL) < 0)
			fl__bench_die("fl__display_compose", -EINVAL);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_full(void *arg, long ops)
{
	struct hwc_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		c->set ^= 1;
		set_layers(c, c->set);
		present(c);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static int setup(struct hwc_ctx *c, char *dir)
{
	char path[300];
	FILE *f;
	int r;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(path, sizeof(path), "%s/displays.ini", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(config, f);
	fclose(f);
	/* A service of this config's own: the one the display section used has the default. */
	fl_display_disconnect();
	setenv("FENCELINE_DISPLAY_CONFIG", path, 1);
	snprintf(path, sizeof(path), "%s/displayd.sock", dir);
	setenv("FENCELINE_DISPLAY_SOCKET", path, 1);
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NL; i++) {
			c->fd[s][i] = memfd_create("bench-hwc", MFD_CLOEXEC);
			if (c->fd[s][i] < 0 || ftruncate(c->fd[s][i], (off_t)FRAME) < 0)
				return -errno;
			c->map[s][i] = mmap(NULL, FRAME, PROT_READ | PROT_WRITE, MAP_SHARED,
					    c->fd[s][i], 0);
			if (c->map[s][i] == MAP_FAILED)
				return -errno;
			fill(c->map[s][i], i == 0);
		}
	c->comp = fl__display_compose_new();
	if (!c->comp)
		return -ENOMEM;
	c->src = malloc(FRAME);
	c->dst = malloc(FRAME);
	if (!c->src || !c->dst)
		return -ENOMEM;
	memcpy(c->src, c->map[0][0], FRAME);
	memset(c->dst, 0, FRAME);
	r = fl_hwc_create(0, 0, NULL, &c->hwc, NULL);
	if (r < 0)
		return r;
	set_layers(c, 0);
	present(c); /* the plan, and a target drawn */
	return 0;
}

static void teardown(struct hwc_ctx *c, const char *dir)
{
	char path[300];

	fl_hwc_destroy(c->hwc);
	fl__display_compose_free(c->comp);
	fl_display_disconnect();
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NL; i++) {
			if (c->map[s][i] && c->map[s][i] != MAP_FAILED)
				munmap(c->map[s][i], FRAME);
			if (c->fd[s][i] > 0)
				close(c->fd[s][i]);
		}
	free(c->src);
	free(c->dst);
	unsetenv("FENCELINE_DISPLAY_CONFIG");
	unsetenv("FENCELINE_DISPLAY_SOCKET");
	snprintf(path, sizeof(path), "%s/displays.ini", dir);
	unlink(path);
	rmdir(dir);
}

void fl__bench_hwc(void)
{
	static const fl_bench_batch_fn fn[5] = { b_memcpy, b_static, b_damage, b_full, b_compose };
	static const char *const name[5] = { "hwc_memcpy_1080p_frame", "hwc_frame_static",
					     "hwc_frame_damage_256", "hwc_frame_full_4_layers",
					     "hwc_compose_4_layers_alone" };
	const char *tmp = getenv("TMPDIR");
	char dir[256];
	double t[5][ROUNDS];
	struct hwc_ctx c = { 0 };
	int rounds = fl__bench_quick ? 2 : ROUNDS, r;
	long frames = fl__bench_iters(20, 3);

	snprintf(dir, sizeof(dir), "%s/fl-bench-hwc-XXXXXX", tmp ? tmp : "/tmp");
	fl__bench_comment("hwc: 4 layers of 1920x1080 (XRGB8888 + 3 ARGB8888, UI-like alpha), one "
			  "engine: all composed; per frame, beside a memcpy of one 1080p frame");
	r = setup(&c, dir);
	if (r < 0) {
		fl__bench_comment("hwc: skipped: no HWC (%s)", strerror(-r));
		teardown(&c, dir);
		return;
	}
	for (int rd = 0; rd < rounds; rd++)
		for (int k = 0; k < 5; k++)
			t[k][rd] =
				fl__bench_batch_median(fn[k], &c, k == 1 ? frames * 50 : frames) /
				1000.0;
	for (int k = 0; k < 5; k++)
		fl__bench_out(name[k], fl__bench_median(t[k], rounds), "us");
	fl__bench_ratio("ratio_hwc_static_over_memcpy", "hwc_frame_static",
			"hwc_memcpy_1080p_frame");
	fl__bench_ratio("ratio_hwc_damage_256_over_memcpy", "hwc_frame_damage_256",
			"hwc_memcpy_1080p_frame");
	fl__bench_ratio("ratio_hwc_full_over_memcpy", "hwc_frame_full_4_layers",
			"hwc_memcpy_1080p_frame");
	fl__bench_ratio("ratio_hwc_full_over_compose_alone", "hwc_frame_full_4_layers",
			"hwc_compose_4_layers_alone");
	/* A static frame is well under 0.01 of either: say how many fit in one. */
	fl__bench_ratio("ratio_hwc_memcpy_over_static", "hwc_memcpy_1080p_frame",
			"hwc_frame_static");
	fl__bench_ratio("ratio_hwc_full_over_static", "hwc_frame_full_4_layers",
			"hwc_frame_static");
	teardown(&c, dir);
}

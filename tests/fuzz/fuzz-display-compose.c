/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the compositor's checks and its memory bounds
 * (src/display/compose.c). Input, little-endian, zero-filled when short:
 *
 *   frame: u8 target format, u8 w, u8 h, s8 pitch delta, s8 size delta,
 *          u8 layers (0..4), u8 damage (0..4; 255: NULL), u16 bg[4]
 *   per damage rect: s8 x, s8 y, u8 w, u8 h
 *   per layer: u8 format, u8 w, u8 h, s8 pitch delta[3], s8 size
 *          delta[3], u8 offset[3], u16 src x, y, w, h (<< 6: 16.16 up to
 *          64 px), s8 dst x, y, u8 dst w, h, u8 zpos, blend, u16 alpha,
 *          u8 transform, filter
 *
 * Formats are indices into a list of the compositor's formats and a few it
 * refuses. Pitches are the format's minimum plus the delta; each plane's
 * memory is the exact end plus its delta, allocated so that it ends at a
 * page boundary followed by an inaccessible page: pixman is not
 * instrumented, so an overread or overwrite past the end must fault.
 *
 * Checks: compose returns what the check alone returns; on failure, the
 * destination is unchanged; on success, a reference of the rules in
 * docs/display.md accepts the frame too (every source rect inside its
 * buffer, non-zero sizes, distinct z).
 *
 * Built with libFuzzer under clang, and with fuzz-main.c under every
 * compiler.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compose.h"
#include "fuzz.h"

#define LAYER_BYTES (3 + 3 + 3 + 3 + 8 + 4 + 3 + 2 + 2)
#define INPUT_SIZE  (7 + 8 + 4 * 4 + 4 * LAYER_BYTES)

static const struct {
	char fcc[5];
	uint8_t planes, cpp[3], sub;
} fmts[] = {
	{ "AR24", 1, { 4 }, 1 },    { "XR24", 1, { 4 }, 1 },	   { "AB24", 1, { 4 }, 1 },
	{ "XB24", 1, { 4 }, 1 },    { "RA24", 1, { 4 }, 1 },	   { "RX24", 1, { 4 }, 1 },
	{ "BA24", 1, { 4 }, 1 },    { "BX24", 1, { 4 }, 1 },	   { "RG24", 1, { 3 }, 1 },
	{ "BG24", 1, { 3 }, 1 },    { "RG16", 1, { 2 }, 1 },	   { "BG16", 1, { 2 }, 1 },
	{ "NV12", 2, { 1, 2 }, 2 }, { "YU12", 3, { 1, 1, 1 }, 2 }, { "YV12", 3, { 1, 1, 1 }, 2 },
	{ "YUYV", 1, { 2 }, 1 },    { "C8  ", 1, { 1 }, 1 },
};
#define N_FMTS (sizeof(fmts) / sizeof(fmts[0]))

struct mem {
	uint8_t *map;
	size_t len;
};

static struct mem mems[1 + 4 * 3];
static size_t n_mems;
static long page;

static uint64_t take(const uint8_t *in, size_t *at, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)in[*at + i] << (8 * i);
	*at += n;
	return v;
}

/* @size bytes ending at a page boundary, an inaccessible page after. */
static uint8_t *guarded(size_t size)
{
	size_t span = (size + (size_t)page - 1) / (size_t)page * (size_t)page + (size_t)page;
	uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(m != MAP_FAILED);
	CHECK(mprotect(m + span - page, (size_t)page, PROT_NONE) == 0);
	memset(m, 0xa5, span - (size_t)page);
	mems[n_mems++] = (struct mem){ m, span };
	return m + span - page - size;
}

/* Pitch and memory of a plane of @w × @h pixels of @cpp bytes. */
static void plane(struct fl_display_compose_plane *p, uint32_t w, uint32_t h, unsigned int cpp,
		  int8_t pitch_delta, int8_t size_delta, uint8_t offset)
{
	int64_t pitch = (int64_t)w * cpp + pitch_delta, end, size;

	p->pitch = (uint32_t)(pitch < 0 ? 0 : pitch);
	p->offset = offset;
	end = (int64_t)offset + (int64_t)p->pitch * h;
	size = end + size_delta;
	p->size = (uint64_t)(size < 1 ? 1 : size);
	p->map = guarded((size_t)p->size);
}

static uint32_t fourcc_of(uint8_t i)
{
	const char *s = fmts[i % N_FMTS].fcc;

	return FL_FOURCC(s[0], s[1], s[2], s[3]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t in[INPUT_SIZE] = { 0 };
	struct fl_display_compose_layer l[4];
	struct fl_display_compose_rect damage[4];
	struct fl_display_frame f = { 0 };
	struct fl_display_error e = { 0 }, e2 = { 0 };
	struct fl_display_compositor *c;
	uint8_t *before;
	size_t at = 0, n_damage;
	uint8_t tf, tw, th, nd;
	int8_t tpd, tsd;
	int ret, ret2;

	if (!page)
		page = sysconf(_SC_PAGESIZE);
	memcpy(in, data, size < INPUT_SIZE ? size : INPUT_SIZE);
	n_mems = 0;
	tf = (uint8_t)take(in, &at, 1);
	tw = (uint8_t)take(in, &at, 1);
	th = (uint8_t)take(in, &at, 1);
	tpd = (int8_t)take(in, &at, 1);
	tsd = (int8_t)take(in, &at, 1);
	f.n_layers = take(in, &at, 1) % 5;
	nd = (uint8_t)take(in, &at, 1);
	f.background.r = (uint16_t)take(in, &at, 2);
	f.background.g = (uint16_t)take(in, &at, 2);
	f.background.b = (uint16_t)take(in, &at, 2);
	f.background.a = (uint16_t)take(in, &at, 2);
	{
		struct fl_display_compose_plane tp;

		plane(&tp, tw, th, fmts[tf % N_FMTS].cpp[0], tpd, tsd, 0);
		f.target = (struct fl_display_compose_target){ (void *)tp.map, tp.size, 0, tp.pitch,
							       fourcc_of(tf),  tw,	th };
	}
	n_damage = nd == 255 ? 0 : nd % 5;
	for (size_t i = 0; i < 4; i++) {
		damage[i].x = (int8_t)take(in, &at, 1);
		damage[i].y = (int8_t)take(in, &at, 1);
		damage[i].w = (uint32_t)take(in, &at, 1);
		damage[i].h = (uint32_t)take(in, &at, 1);
	}
	f.damage = nd == 255 ? NULL : damage;
	f.n_damage = n_damage;
	for (size_t i = 0; i < 4; i++) {
		uint8_t fi = (uint8_t)take(in, &at, 1);
		uint32_t w = (uint32_t)take(in, &at, 1), h = (uint32_t)take(in, &at, 1);
		int8_t pd[3], sd[3];
		uint8_t off[3];

		for (int p = 0; p < 3; p++)
			pd[p] = (int8_t)take(in, &at, 1);
		for (int p = 0; p < 3; p++)
			sd[p] = (int8_t)take(in, &at, 1);
		for (int p = 0; p < 3; p++)
			off[p] = (uint8_t)take(in, &at, 1);
		memset(&l[i], 0, sizeof(l[i]));
		l[i].fourcc = fourcc_of(fi);
		l[i].w = w;
		l[i].h = h;
		l[i].n_planes = fmts[fi % N_FMTS].planes;
		for (uint32_t p = 0; p < l[i].n_planes && i < f.n_layers; p++) {
			unsigned int sub = p ? fmts[fi % N_FMTS].sub : 1;

			plane(&l[i].plane[p], w / sub, h / sub, fmts[fi % N_FMTS].cpp[p], pd[p],
			      sd[p], off[p]);
		}
		l[i].src_x = (uint32_t)take(in, &at, 2) << 6;
		l[i].src_y = (uint32_t)take(in, &at, 2) << 6;
		l[i].src_w = (uint32_t)take(in, &at, 2) << 6;
		l[i].src_h = (uint32_t)take(in, &at, 2) << 6;
		l[i].dst_x = (int8_t)take(in, &at, 1);
		l[i].dst_y = (int8_t)take(in, &at, 1);
		l[i].dst_w = (uint32_t)take(in, &at, 1);
		l[i].dst_h = (uint32_t)take(in, &at, 1);
		l[i].zpos = (uint32_t)take(in, &at, 1);
		l[i].blend = (uint32_t)take(in, &at, 1) % 4;
		l[i].alpha = (uint16_t)take(in, &at, 2);
		l[i].transform = (uint32_t)take(in, &at, 1) % 9;
		l[i].filter = (uint32_t)take(in, &at, 1) % 3;
	}
	f.layers = l;
	before = malloc((size_t)f.target.size);
	CHECK(before);
	memcpy(before, f.target.map, (size_t)f.target.size);
	c = fl__display_compose_new();
	CHECK(c);
	ret = fl__display_compose(c, &f, &e);
	ret2 = fl__display_compose_check(&f, &e2);
	CHECK(ret == ret2);
	if (ret < 0) {
		CHECK(ret == -EINVAL && e.err == ret && e.msg[0]);
		CHECK(strcmp(e.msg, e2.msg) == 0);
		CHECK(memcmp(before, f.target.map, (size_t)f.target.size) == 0);
	} else {
		CHECK(ret == 0);
		for (size_t i = 0; i < f.n_layers; i++) {
			CHECK(l[i].src_w && l[i].src_h && l[i].dst_w && l[i].dst_h);
			CHECK((uint64_t)l[i].src_x + l[i].src_w <= (uint64_t)l[i].w << 16);
			CHECK((uint64_t)l[i].src_y + l[i].src_h <= (uint64_t)l[i].h << 16);
			CHECK(l[i].blend <= 2 && l[i].transform <= 7 && l[i].filter <= 1);
			for (size_t j = i + 1; j < f.n_layers; j++)
				CHECK(l[i].zpos != l[j].zpos);
		}
	}
	fl__display_compose_free(c);
	free(before);
	for (size_t i = 0; i < n_mems; i++)
		munmap(mems[i].map, mems[i].len);
	return 0;
}

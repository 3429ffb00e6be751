/* SPDX-License-Identifier: MIT */
/*
 * pipeline-check DIR...: item 7's check that pipeline-demo's frames are real (docs/pipeline.md,
 * "The checks"). For every DIR/capture-NNN.png that `pipeline-demo --capture-dir DIR` kept, it
 * reads each layer's frame number from its strip in the capture (pattern_read_frame()), renders
 * the same scene at those frame numbers independently (the pattern functions into buffers of its
 * own, composed by the display's software compositor, src/display/compose.c, in one pass), and
 * compares the two pixel for pixel. A strip that reads no number (poison: a buffer written while
 * on screen, or a layer missing) fails, as does any pixel that differs.
 *
 * A test program: it links the display's internal compositor, which examples may not.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compose.h"
#include "pattern.h"
#include "scene.h"
#include "sheet.h"

struct refbuf {
	struct fl_bufferqueue_buffer b;
	uint8_t *map;
};

/* A buffer of @g's size and format, planes packed, as the producers' but our own memory. */
static int refbuf_make(struct refbuf *r, const struct scene_geom *g)
{
	struct fl_bufferqueue_buffer *b = &r->b;
	uint32_t w = g->w, h = g->h;

	memset(r, 0, sizeof(*r));
	b->width = w;
	b->height = h;
	b->format = g->fourcc;
	if (g->fourcc == FL_FOURCC('N', 'V', '1', '2')) {
		b->num_planes = 2;
		b->pitches[0] = b->pitches[1] = w;
		b->offsets[1] = w * h;
		b->size = (uint64_t)w * h * 3 / 2;
	} else if (g->fourcc == FL_FOURCC('Y', 'U', '1', '2')) {
		b->num_planes = 3;
		b->pitches[0] = w;
		b->pitches[1] = b->pitches[2] = w / 2;
		b->offsets[1] = w * h;
		b->offsets[2] = w * h + (w / 2) * (h / 2);
		b->size = (uint64_t)w * h * 3 / 2;
	} else {
		b->num_planes = 1;
		b->pitches[0] = w * 4;
		b->size = (uint64_t)w * h * 4;
	}
	r->map = calloc(1, b->size);
	return r->map ? 0 : -ENOMEM;
}

static int check_one(const char *path, struct fl_display_compositor *comp)
{
	struct scene_geom g[SCENE_LAYERS];
	struct refbuf rb[SCENE_LAYERS] = { 0 };
	struct fl_display_compose_layer cl[SCENE_LAYERS];
	struct fl_display_frame fr = { 0 };
	struct fl_display_error e = { 0 };
	int32_t num[SCENE_LAYERS];
	uint32_t *cap = NULL, *ref = NULL, w, h;
	uint64_t bad = 0;
	int r;

	r = sheet_read_png(path, &cap, &w, &h);
	if (r < 0) {
		fprintf(stderr, "%s: cannot read: %s\n", path, strerror(-r));
		return r;
	}
	r = scene_layout(w, h, g);
	if (r < 0) {
		fprintf(stderr, "%s: %ux%u is too small for the scene\n", path, w, h);
		goto out;
	}
	for (unsigned int l = 0; l < SCENE_LAYERS; l++) {
		/* The strip's cells in one 8-bit channel: green, byte 1 of an XRGB8888 pixel. */
		const uint8_t *base = (const uint8_t *)(cap + (size_t)g[l].y * w + g[l].x) + 1;

		num[l] = pattern_read_frame(base, (size_t)w * 4, 4);
		if (num[l] < 0) {
			fprintf(stderr,
				"%s: the %s's strip reads no frame number (poison, or no "
				"buffer)\n",
				path, g[l].name);
			r = -EBADMSG;
			goto out;
		}
		r = refbuf_make(&rb[l], &g[l]);
		if (r < 0)
			goto out;
		scene_draw(l, (uint32_t)num[l], &rb[l].b, rb[l].map, false);
		memset(&cl[l], 0, sizeof(cl[l]));
		cl[l].fourcc = g[l].fourcc;
		cl[l].w = g[l].w;
		cl[l].h = g[l].h;
		cl[l].n_planes = rb[l].b.num_planes;
		for (unsigned int p = 0; p < rb[l].b.num_planes; p++)
			cl[l].plane[p] = (struct fl_display_compose_plane){ rb[l].map, rb[l].b.size,
									    rb[l].b.offsets[p],
									    rb[l].b.pitches[p] };
		cl[l].src_w = g[l].w << 16;
		cl[l].src_h = g[l].h << 16;
		cl[l].dst_x = g[l].x;
		cl[l].dst_y = g[l].y;
		cl[l].dst_w = g[l].w;
		cl[l].dst_h = g[l].h;
		cl[l].zpos = g[l].z;
		cl[l].blend = g[l].blend;
		cl[l].alpha = 0xffff;
	}
	ref = calloc((size_t)w * h, 4);
	if (!ref) {
		r = -ENOMEM;
		goto out;
	}
	fr.target = (struct fl_display_compose_target){ ref,   (uint64_t)w * h * 4,	      0,
							w * 4, FL_FOURCC('X', 'R', '2', '4'), w,
							h };
	fr.background = (struct fl_display_color){ 0, 0, 0, 0xffff };
	fr.layers = cl;
	fr.n_layers = SCENE_LAYERS;
	r = fl__display_compose(comp, &fr, &e);
	if (r < 0) {
		fprintf(stderr, "%s: the reference: %s\n", path, e.msg);
		goto out;
	}
	for (size_t i = 0; i < (size_t)w * h; i++)
		if ((cap[i] ^ ref[i]) & 0xffffff) {
			if (!bad)
				fprintf(stderr,
					"%s: pixel (%zu, %zu) is %06x, the reference %06x\n", path,
					i % w, i / w, cap[i] & 0xffffff, ref[i] & 0xffffff);
			bad++;
		}
	printf("%s: frames camera %d video %d app %d statusbar %d: %s (%llu pixels differ)\n", path,
	       num[SCENE_CAMERA], num[SCENE_VIDEO], num[SCENE_APP], num[SCENE_STATUS],
	       bad ? "DIFFERS" : "equal to the reference", (unsigned long long)bad);
	r = bad ? -EBADMSG : 0;
out:
	for (unsigned int l = 0; l < SCENE_LAYERS; l++)
		free(rb[l].map);
	free(cap);
	free(ref);
	return r;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	struct fl_display_compositor *comp = fl__display_compose_new();
	unsigned int checked = 0, failed = 0;

	if (argc < 2 || !comp) {
		fprintf(stderr, "usage: pipeline-check DIR...\n");
		return 2;
	}
	for (int a = 1; a < argc; a++) {
		struct dirent **ents;
		int n = scandir(argv[a], &ents, NULL, by_name);

		if (n < 0) {
			perror(argv[a]);
			failed++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			char path[4096];

			if (!strncmp(ents[i]->d_name, "capture-", 8) &&
			    strstr(ents[i]->d_name, ".png")) {
				snprintf(path, sizeof(path), "%s/%s", argv[a], ents[i]->d_name);
				checked++;
				failed += check_one(path, comp) < 0;
			}
			free(ents[i]);
		}
		free(ents);
	}
	fl__display_compose_free(comp);
	printf("pipeline-check: %u captures, %u failed\n", checked, failed);
	return checked && !failed ? 0 : 1;
}

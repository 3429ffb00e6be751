/* SPDX-License-Identifier: MIT */
/*
 * PNG output of a frame (display-png.h). The frame is first converted to R, G, B,
 * A bytes by the compositor itself (one unscaled layer into ABGR8888), so
 * every format it reads is written the same way and checked the same way.
 */
#include "display-png.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>

/* libpng reports errors by longjmp; the state the handler needs. */
struct writer {
	FILE *f;
	uint8_t *rgba;
	png_bytep *rows;
};

static int write_png(struct writer *w, const char *path, uint32_t width, uint32_t height,
		     bool alpha, struct fl_display_error *e)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	int ret = 0;

	if (!info) {
		png_destroy_write_struct(&png, NULL);
		return fl__display_fail(e, -ENOMEM, "%s: libpng: out of memory", path);
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		return fl__display_fail(e, ferror(w->f) ? -errno : -EIO,
					"%s: libpng failed to write the image", path);
	}
	png_init_io(png, w->f);
	png_set_IHDR(png, info, width, height, 8, alpha ? PNG_COLOR_TYPE_RGBA : PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	/* Rows are R, G, B, A; without alpha, libpng drops the A byte. */
	if (!alpha)
		png_set_filler(png, 0, PNG_FILLER_AFTER);
	png_write_image(png, w->rows);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return ret;
}

int fl__display_png_write(const char *path, const struct fl_display_compose_target *frame,
			  struct fl_display_error *e)
{
	struct fl_display_compositor *c = NULL;
	struct writer w = { 0 };
	struct fl_display_compose_layer layer = {
		.fourcc = frame->fourcc,
		.w = frame->w,
		.h = frame->h,
		.n_planes = 1,
		.plane = { { frame->map, frame->size, frame->offset, frame->pitch } },
		.src_w = frame->w << 16,
		.src_h = frame->h << 16,
		.dst_w = frame->w,
		.dst_h = frame->h,
		.blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
		.alpha = 0xffff,
	};
	struct fl_display_frame f = { .layers = &layer, .n_layers = 1 };
	const struct fl__display_format *fmt = fl__display_format_find(frame->fourcc);
	size_t pixels;
	bool alpha;
	int ret;

	/* The frame is checked as a destination would be: RGB, sizes bounded,
	 * its memory holding it. */
	ret = fl__display_compose_check(&(struct fl_display_frame){ .target = *frame }, e);
	if (ret < 0)
		return ret;
	alpha = fmt && fmt->alpha;
	f.target = (struct fl_display_compose_target){
		.size = (uint64_t)frame->w * 4 * frame->h,
		.pitch = frame->w * 4,
		.fourcc = FL_FOURCC('A', 'B', '2', '4'),
		.w = frame->w,
		.h = frame->h,
	};
	pixels = (size_t)frame->w * frame->h;
	w.rgba = malloc(pixels * 4);
	w.rows = malloc(frame->h * sizeof(*w.rows));
	c = fl__display_compose_new();
	if (!w.rgba || !w.rows || !c) {
		ret = fl__display_fail(e, -ENOMEM, "%s: out of memory for a %ux%u frame", path,
				       frame->w, frame->h);
		goto out;
	}
	f.target.map = w.rgba;
	ret = fl__display_compose(c, &f, e);
	if (ret < 0)
		goto out;
	for (uint32_t y = 0; y < frame->h; y++)
		w.rows[y] = w.rgba + (size_t)y * frame->w * 4;
	/* PNG's alpha is straight. */
	for (size_t i = 0; alpha && i < pixels; i++) {
		uint8_t *p = w.rgba + i * 4;

		for (int ch = 0; ch < 3 && p[3] && p[3] != 255; ch++) {
			unsigned int v = (p[ch] * 255u + p[3] / 2) / p[3];

			p[ch] = (uint8_t)(v > 255 ? 255 : v);
		}
	}
	w.f = fopen(path, "wbe");
	if (!w.f) {
		ret = fl__display_fail(e, -errno, "%s: cannot create: %m", path);
		goto out;
	}
	ret = write_png(&w, path, frame->w, frame->h, alpha, e);
	if (fclose(w.f) != 0 && ret == 0)
		ret = fl__display_fail(e, -errno, "%s: cannot write: %m", path);
out:
	fl__display_compose_free(c);
	free(w.rgba);
	free(w.rows);
	return ret;
}

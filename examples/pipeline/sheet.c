/* SPDX-License-Identifier: MIT */
/* pipeline-demo's PNG files (sheet.h). */
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sheet.h"

int sheet_write_png(const char *path, const uint32_t *px, uint32_t w, uint32_t h, uint32_t pitch)
{
	png_structp png;
	png_infop info;
	uint8_t *row = malloc((size_t)w * 3);
	FILE *fp;
	volatile int r = 0;

	if (!row)
		return -ENOMEM;
	fp = fopen(path, "wb");
	if (!fp) {
		free(row);
		return -errno;
	}
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png ? png_create_info_struct(png) : NULL;
	if (!info || setjmp(png_jmpbuf(png))) {
		r = -EIO;
		goto out;
	}
	png_init_io(png, fp);
	/* Fast: the sheets are for eyes and the checker, not for storage. */
	png_set_compression_level(png, 1);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (uint32_t y = 0; y < h; y++) {
		const uint32_t *line = (const uint32_t *)((const uint8_t *)px + (size_t)y * pitch);

		for (uint32_t x = 0; x < w; x++) {
			row[x * 3] = (uint8_t)(line[x] >> 16);
			row[x * 3 + 1] = (uint8_t)(line[x] >> 8);
			row[x * 3 + 2] = (uint8_t)line[x];
		}
		png_write_row(png, row);
	}
	png_write_end(png, NULL);
out:
	png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
	if (fclose(fp) != 0 && !r)
		r = -EIO;
	free(row);
	return r;
}

int sheet_read_png(const char *path, uint32_t **ret_px, uint32_t *ret_w, uint32_t *ret_h)
{
	png_structp png;
	png_infop info;
	uint32_t *volatile px = NULL;
	uint8_t *volatile row = NULL;
	FILE *fp = fopen(path, "rb");
	volatile int r = 0;

	if (!fp)
		return -errno;
	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png ? png_create_info_struct(png) : NULL;
	if (!info || setjmp(png_jmpbuf(png))) {
		r = -EIO;
		goto out;
	}
	png_init_io(png, fp);
	png_read_info(png, info);
	png_set_strip_16(png);
	png_set_palette_to_rgb(png);
	png_set_strip_alpha(png);
	png_read_update_info(png, info);
	{
		uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);

		if (png_get_channels(png, info) != 3 || w == 0 || h == 0 || w > 16384 ||
		    h > 16384) {
			r = -EINVAL;
			goto out;
		}
		px = malloc((size_t)w * h * 4);
		row = malloc((size_t)w * 3);
		if (!px || !row) {
			r = -ENOMEM;
			goto out;
		}
		for (uint32_t y = 0; y < h; y++) {
			png_read_row(png, row, NULL);
			for (uint32_t x = 0; x < w; x++)
				px[(size_t)y * w + x] = 0xff000000u | (uint32_t)row[x * 3] << 16 |
							(uint32_t)row[x * 3 + 1] << 8 |
							row[x * 3 + 2];
		}
		*ret_w = w;
		*ret_h = h;
	}
out:
	png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
	fclose(fp);
	free(row);
	if (r < 0)
		free(px);
	else
		*ret_px = px;
	return r;
}

int sheet_init(struct sheet *s, uint32_t w, uint32_t h, uint32_t cols, uint32_t rows)
{
	memset(s, 0, sizeof(*s));
	/* Tiles about 480 pixels wide whatever the screen. */
	s->scale = w / 480 ? w / 480 : 1;
	s->tile_w = w / s->scale;
	s->tile_h = h / s->scale;
	s->cols = cols;
	s->rows = rows;
	s->w = cols * (s->tile_w + 4) + 4;
	s->h = rows * (s->tile_h + 4) + 4;
	s->px = calloc((size_t)s->w * s->h, 4);
	return s->px ? 0 : -ENOMEM;
}

void sheet_add(struct sheet *s, const uint32_t *px, uint32_t pitch)
{
	uint32_t ox, oy;

	if (!s->px || s->n >= s->cols * s->rows)
		return;
	ox = 4 + (s->n % s->cols) * (s->tile_w + 4);
	oy = 4 + (s->n / s->cols) * (s->tile_h + 4);
	for (uint32_t y = 0; y < s->tile_h; y++) {
		const uint32_t *line =
			(const uint32_t *)((const uint8_t *)px + (size_t)y * s->scale * pitch);

		for (uint32_t x = 0; x < s->tile_w; x++)
			s->px[(size_t)(oy + y) * s->w + ox + x] = line[x * s->scale];
	}
	s->n++;
}

void sheet_free(struct sheet *s)
{
	free(s->px);
	s->px = NULL;
}

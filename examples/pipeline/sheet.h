/* SPDX-License-Identifier: MIT */
/* pipeline-demo's pictures on disk: the contact sheet and item 7's captures, PNG by libpng. */
#ifndef PIPELINE_SHEET_H
#define PIPELINE_SHEET_H

#include <stdint.h>

/* Write @w x @h XRGB8888 pixels (@pitch bytes a line) to @path. Return: 0 or a negative errno. */
int sheet_write_png(const char *path, const uint32_t *px, uint32_t w, uint32_t h, uint32_t pitch);

/* Read @path into a malloc()ed XRGB8888 image (*@ret_px, the caller's). Return: 0 or -errno. */
int sheet_read_png(const char *path, uint32_t **ret_px, uint32_t *ret_w, uint32_t *ret_h);

/* A contact sheet: tiles of captures scaled down by an integer factor. */
struct sheet {
	uint32_t *px;
	uint32_t w, h, tile_w, tile_h, cols, rows, n, scale;
};

/* A sheet of @cols x @rows tiles for captures of @w x @h. Return: 0 or -ENOMEM. */
int sheet_init(struct sheet *s, uint32_t w, uint32_t h, uint32_t cols, uint32_t rows);
/* Add a capture as the next tile (ignored when the sheet is full). */
void sheet_add(struct sheet *s, const uint32_t *px, uint32_t pitch);
void sheet_free(struct sheet *s);

#endif

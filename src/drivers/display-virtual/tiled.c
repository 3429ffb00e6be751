/* SPDX-License-Identifier: MIT */
/*
 * The virtual driver's own format, XT44 (display-virtual.h): XRGB8888 in
 * 4 × 4 tiles. The service's compositor knows only linear formats, on
 * purpose: a driver-defined layout is the driver's to check and decode, as
 * ADF left custom formats to validate_custom_format. The decode makes a
 * linear XRGB8888 copy that compose() then reads like any buffer.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "display-virtual.h"

#define TILE	   4u
#define TILE_CPP   4u
#define TILE_BYTES (TILE * TILE * TILE_CPP) /* 64: one tile, its 4 lines one after the other */

__attribute__((format(printf, 3, 4))) static int refuse(struct fl_display_error *e, size_t index,
							const char *fmt, ...)
{
	va_list ap;
	int n;

	if (e) {
		e->err = -EINVAL;
		n = snprintf(e->msg, sizeof(e->msg), "buffer %zu: XT44: ", index);
		va_start(ap, fmt);
		if (n > 0 && (size_t)n < sizeof(e->msg))
			vsnprintf(e->msg + n, sizeof(e->msg) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int fl__display_virtual_tiled_check(const struct fl_display_driver_buffer *b, size_t index,
				    struct fl_display_error *e)
{
	uint64_t tiles_w, tiles_h, end;

	if (b->format != FL_DISPLAY_VIRTUAL_FORMAT_XT44)
		return refuse(e, index, "the virtual driver's only own format is XT44, not 0x%08x",
			      b->format);
	if (b->n_planes != 1)
		return refuse(e, index, "%u planes, it has one", b->n_planes);
	if (!b->w || !b->h)
		return refuse(e, index, "%ux%u is empty", b->w, b->h);
	tiles_w = (b->w + TILE - 1) / TILE;
	tiles_h = (b->h + TILE - 1) / TILE;
	/* A line of tiles is 4 pixel lines: the pitch is one of them, as DRM's tiled pitches. */
	if (b->pitch[0] % (TILE * TILE_CPP) || b->pitch[0] < tiles_w * TILE * TILE_CPP)
		return refuse(e, index,
			      "pitch %u is not a multiple of 16 of at least %llu (16 bytes a "
			      "column of tiles)",
			      b->pitch[0], (unsigned long long)(tiles_w * TILE * TILE_CPP));
	if (b->offset[0] % TILE_CPP)
		return refuse(e, index, "offset %u is not a multiple of 4", b->offset[0]);
	/* 64 bits: pitch < 2^32, tiles_h × 4 < 2^32, the product and offset fit. */
	end = b->offset[0] + (uint64_t)b->pitch[0] * TILE * tiles_h;
	if (end > b->size[0])
		return refuse(e, index,
			      "offset %u + %llu rows of tiles of 4 × pitch %u end at %llu, past "
			      "the plane's %llu-byte memory",
			      b->offset[0], (unsigned long long)tiles_h, b->pitch[0],
			      (unsigned long long)end, (unsigned long long)b->size[0]);
	return 0;
}

int fl__display_virtual_memfd(const char *name, uint64_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* @len bytes of @fd at @off, all of them: -EFAULT when the memory ended sooner (it shrank). */
static int read_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EFAULT;
		got += (size_t)n;
	}
	return 0;
}

/*
 * The client's memory (a memfd or file) is read with pread(), a row of
 * tiles at a time, never mapped: a client that shrinks it under us gets its frame refused
 * (-EFAULT), where a mapping would have brought the service down with SIGBUS.
 */
int fl__display_virtual_detile(const struct fl_display_driver_buffer *b,
			       struct fl_display_driver_buffer *ret_linear)
{
	uint64_t pitch = (uint64_t)b->w * 4, len = pitch * b->h;
	/* The tiles a row of them uses (no more: the pitch may be padded far beyond). */
	size_t used = (size_t)((b->w + TILE - 1) / TILE) * TILE_BYTES;
	uint64_t whole_len =
		b->offset[0] + (uint64_t)b->pitch[0] * TILE * ((b->h + TILE - 1) / TILE);
	uint8_t *tiles = NULL, *dst = MAP_FAILED, *whole = MAP_FAILED;
	struct stat st;
	int fd, r = 0;

	fd = fl__display_virtual_memfd("xt44-linear", len);
	if (fd < 0)
		return fd;
	/* Checked by fl__display_virtual_tiled_check(): the tiles lie inside the memory. */
	/* A dma-buf has no pread() but cannot shrink either: that one is mapped. */
	if (fstat(b->fd[0], &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		whole = mmap(NULL, (size_t)whole_len, PROT_READ, MAP_SHARED, b->fd[0], 0);
		if (whole == MAP_FAILED) {
			r = -errno;
			goto out;
		}
	} else if (!(tiles = malloc(used))) {
		r = -ENOMEM;
		goto out;
	}
	dst = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (dst == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	for (uint32_t y = 0; y < b->h; y++) {
		uint64_t at = b->offset[0] + (uint64_t)(y / TILE) * TILE * b->pitch[0];
		const uint8_t *row =
			(whole != MAP_FAILED ? whole + at : tiles) + (y % TILE) * TILE * TILE_CPP;

		if (whole == MAP_FAILED && y % TILE == 0) {
			r = read_all(b->fd[0], tiles, used, at);
			if (r < 0)
				goto out;
		}
		for (uint32_t tx = 0; tx * TILE < b->w; tx++) {
			uint32_t n = b->w - tx * TILE < TILE ? b->w - tx * TILE : TILE;

			memcpy(dst + y * pitch + (uint64_t)tx * TILE * 4,
			       row + (uint64_t)tx * TILE_BYTES, n * 4);
		}
	}
	*ret_linear = *b;
	ret_linear->format = FL_FOURCC('X', 'R', '2', '4');
	ret_linear->offset[0] = 0;
	ret_linear->pitch[0] = (uint32_t)pitch;
	ret_linear->size[0] = len;
	ret_linear->fd[0] = fd;
out:
	free(tiles);
	if (whole != MAP_FAILED)
		munmap(whole, (size_t)whole_len);
	if (dst != MAP_FAILED)
		munmap(dst, (size_t)len);
	if (r < 0)
		close(fd);
	return r;
}

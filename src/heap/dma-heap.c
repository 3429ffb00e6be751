/* SPDX-License-Identifier: MIT */
/*
 * The dma-heap kind: real dma-bufs from the kernel's /dev/dma_heap/<name>
 * (DMA_HEAP_IOCTL_ALLOC), and the list of dma-heaps there.
 *
 * A file in that directory counts as a dma-heap only if it is a character
 * device of the kernel's dma_heap class (/sys/dev/char/MAJ:MIN/subsystem),
 * so that FENCELINE_DMA_HEAP_DIR pointed at a directory of other devices
 * finds none, and opening one is a clear -ENODEV, never an ioctl on a
 * stranger's device.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "heap-internal.h"

struct dma_heap {
	int dev_fd;
};

static const char *heap_dir(void)
{
	const char *dir = getenv("FENCELINE_DMA_HEAP_DIR");

	return dir && *dir ? dir : "/dev/dma_heap";
}

bool fl__dma_heap_name_ok(const char *name, size_t len)
{
	return len && len < NAME_MAX && !memchr(name, '/', len) && !(len == 1 && name[0] == '.') &&
	       !(len == 2 && name[0] == '.' && name[1] == '.');
}

/* Whether @st is a device of the dma_heap class; @what says what it is. */
static bool is_dma_heap(const struct stat *st, char *what, size_t size)
{
	char path[64], link[PATH_MAX];
	const char *cls;
	ssize_t n;

	if (!S_ISCHR(st->st_mode)) {
		snprintf(what, size, "not a character device");
		return false;
	}
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/subsystem", major(st->st_rdev),
		 minor(st->st_rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		snprintf(what, size, "device %u:%u, which sysfs does not know", major(st->st_rdev),
			 minor(st->st_rdev));
		return false;
	}
	link[n] = '\0';
	cls = strrchr(link, '/');
	cls = cls ? cls + 1 : link;
	snprintf(what, size, "a %s device (%u:%u)", cls, major(st->st_rdev), minor(st->st_rdev));
	return strcmp(cls, "dma_heap") == 0;
}

static void dma_heap_destroy(struct fl_heap *heap)
{
	struct dma_heap *d = heap->priv;

	close(d->dev_fd);
	free(d);
}

static const struct fl_heap_ops dma_heap_ops = {
	.kind = "dma-heap",
	.destroy = dma_heap_destroy,
};

FL_EXPORT int fl_heap_open_dma_heap(const char *name, struct fl_heap **ret_heap)
{
	const char *dir = heap_dir();
	struct fl_heap *heap;
	struct dma_heap *d;
	char path[PATH_MAX], what[PATH_MAX + 64];
	struct stat st;
	int fd, r;

	if (!name || !fl__dma_heap_name_ok(name, strlen(name)) || !ret_heap)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = errno;
		fl__heap_log("dma-heap '%s': cannot open %s: %s%s", name, path, strerror(r),
			     r == ENOENT
				     ? " (no such dma-heap: kernel without"
				       " CONFIG_DMABUF_HEAPS, or the heap's driver is not loaded)"
				     : "");
		if (r == EACCES || r == EPERM)
			return -EPERM;
		return r == EMFILE || r == ENFILE ? -EMFILE : r == ENOMEM ? -ENOMEM : -ENODEV;
	}
	if (fstat(fd, &st) < 0 || !is_dma_heap(&st, what, sizeof(what))) {
		fl__heap_log("dma-heap '%s': %s is %s, not a dma-heap", name, path, what);
		close(fd);
		return -ENODEV;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	d->dev_fd = fd;
	r = fl__heap_create(&dma_heap_ops, name, d, &heap);
	if (r < 0)
		return r;
	snprintf(heap->backing, sizeof(heap->backing), "dma-buf");
	heap->recipe.how = FL_HEAP_MAKE_DMA_HEAP;
	heap->recipe.dev_fd = fd;
	*ret_heap = heap;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

FL_EXPORT int fl_heap_for_each_dma_heap(int (*fn)(const char *name, void *data), void *data)
{
	char **names = NULL, what[PATH_MAX + 64];
	size_t n = 0, cap = 0;
	struct dirent *e;
	int r = 0;
	bool stop = false;
	DIR *dir;

	if (!fn)
		return -EINVAL;
	dir = opendir(heap_dir());
	if (!dir) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return errno == EACCES			    ? -EPERM
		       : errno == EMFILE || errno == ENFILE ? -EMFILE
							    : -ENOMEM;
	}
	/* Names first, calls after: @fn may take its time, and the order is stable. */
	while ((e = readdir(dir))) {
		struct stat st;

		if (e->d_name[0] == '.' || fstatat(dirfd(dir), e->d_name, &st, 0) < 0 ||
		    !is_dma_heap(&st, what, sizeof(what)))
			continue;
		if (n == cap) {
			char **more = realloc(names, (cap ? 2 * cap : 8) * sizeof(*names));

			if (!more) {
				r = -ENOMEM;
				break;
			}
			names = more;
			cap = cap ? 2 * cap : 8;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dir);
	if (r == 0 && n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (r >= 0 && !stop) {
			r++;
			stop = fn(names[i], data) != 0;
		}
		free(names[i]);
	}
	free(names);
	return r;
}

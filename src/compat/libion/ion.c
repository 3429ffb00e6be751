/* SPDX-License-Identifier: MIT */
/*
 * libion's API over the native heaps (docs/heap.md, "The libion API").
 *
 * An ION client is a memfd that holds no data: a real, closable fd whose
 * inode names the client in a process-wide registry, so that any dup of it
 * finds the client too. Each client owns its own heaps (a system heap and a
 * carveout), because the native heaps can only give a buffer back through
 * one of its fds, and ION users just close() theirs: only a full carveout
 * looks for buffers nobody holds any more and takes their ranges back
 * (docs/heap.md, "Reclaim"). ion_close() closes the client's heaps, which
 * forgets every buffer and so reclaims the carveout's whole capacity at
 * once. Buffers themselves live on for as long as anybody holds an fd or
 * mapping.
 *
 * Through the daemon (FENCELINE_ION_VIA_DAEMON=1, or when a local heap
 * refuses with EACCES or EPERM), the buffers come from fencelined's heaps
 * instead, tagged with the client's group, and ion_close() frees the group:
 * the same lifetime as the local carveout's ranges (docs/heap.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <ion/ion.h>

#include <fenceline/export.h>
#include <fenceline/heap-daemon.h>
#include <fenceline/heap.h>

/*
 * Heap ids at the bits Android 5.4 reserves: system 0, system-contig 1,
 * carveouts 2-6, dma-heaps ("DMA" heaps) 8-15.
 */
#define ION_SYSTEM_ID		0
#define ION_CONTIG_ID		1
#define ION_CARVEOUT_ID		2
#define ION_DMA_HEAP_ID		8
#define ION_DMA_HEAP_MAX	8
#define ION_CARVEOUT_DEFAULT_MB 64
#define ION_HEAP_MAX		(3 + ION_DMA_HEAP_MAX)

struct ion_heap_desc {
	char name[MAX_HEAP_NAME];
	__u32 type;
	__u32 id;
};

struct ion_client {
	dev_t dev;
	ino_t ino;
	int refs; /* the registry's one, plus one per call under way; under registry_lock */
	int nheaps;
	/*
	 * Highest heap id first. A dma-heap's is NULL until the client first
	 * allocates from it (then set once, atomically): a client that is
	 * close()d rather than ion_close()d then keeps no device fd unless it
	 * used the device.
	 */
	struct fl_heap *heap[ION_HEAP_MAX];
	struct ion_heap_desc desc[ION_HEAP_MAX];
	bool via_daemon; /* FENCELINE_ION_VIA_DAEMON=1 at ion_open() */
	uint32_t group; /* its buffers in the daemon */
	atomic_bool daemon_used; /* ion_close() frees the group */
	struct ion_client *next;
};

/* The flags ION defines; vendor bits are accepted and dropped, as by ION's heaps. */
_Static_assert(ION_FLAG_CACHED == FL_HEAP_FLAG_CACHED &&
		       ION_FLAG_CACHED_NEEDS_SYNC == FL_HEAP_FLAG_NEEDS_SYNC,
	       "ION's flags are passed on as they are");

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ion_client *registry;

static void client_destroy(struct ion_client *c)
{
	/* Only if it used the daemon: closing must not start one. */
	if (atomic_load(&c->daemon_used))
		fl_heap_daemon_group_free(c->group);
	for (int i = 0; i < c->nheaps; i++)
		fl_heap_close(c->heap[i]);
	free(c);
}

/* Unlinks @c from the registry; called with registry_lock held. */
static void unlink_locked(struct ion_client *c)
{
	for (struct ion_client **p = &registry; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			return;
		}
	}
}

/* Drops one reference; returns @c if it was the last (destroy it unlocked). */
static struct ion_client *put_locked(struct ion_client *c)
{
	return --c->refs == 0 ? c : NULL;
}

static void client_put(struct ion_client *c)
{
	pthread_mutex_lock(&registry_lock);
	c = put_locked(c);
	pthread_mutex_unlock(&registry_lock);
	if (c)
		client_destroy(c);
}

static struct ion_client *find_locked(dev_t dev, ino_t ino)
{
	for (struct ion_client *c = registry; c; c = c->next)
		if (c->dev == dev && c->ino == ino)
			return c;
	return NULL;
}

/* The client @fd names, with a reference taken; -EBADF or -EINVAL. */
static int client_get(int fd, struct ion_client **ret)
{
	struct stat st;
	struct ion_client *c;

	if (fstat(fd, &st) < 0)
		return -errno;
	pthread_mutex_lock(&registry_lock);
	c = find_locked(st.st_dev, st.st_ino);
	if (c)
		c->refs++;
	pthread_mutex_unlock(&registry_lock);
	if (!c)
		return -EINVAL;
	*ret = c;
	return 0;
}

static size_t carveout_bytes(void)
{
	const char *s = getenv("FENCELINE_ION_CARVEOUT_MB");
	unsigned long long mb = ION_CARVEOUT_DEFAULT_MB;

	if (s && *s) {
		char *end;

		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);

		if (!errno && *end == '\0' && v > 0 && v <= SIZE_MAX >> 20 && s[0] != '-')
			mb = v;
	}
	return (size_t)mb << 20;
}

/* Adds @heap to @c, after the heaps of higher ids. */
static void add_heap(struct ion_client *c, struct fl_heap *heap, const char *name, __u32 type,
		     __u32 id)
{
	struct ion_heap_desc *d = &c->desc[c->nheaps];

	snprintf(d->name, sizeof(d->name), "%s", name);
	d->type = type;
	d->id = id;
	c->heap[c->nheaps++] = heap;
}

struct dma_heap_names {
	int n;
	char name[ION_DMA_HEAP_MAX][MAX_HEAP_NAME];
};

static int collect_dma_heap(const char *name, void *data)
{
	struct dma_heap_names *names = data;

	/* A name ION could not report whole is left out rather than cut. */
	if (strlen(name) < MAX_HEAP_NAME)
		snprintf(names->name[names->n++], MAX_HEAP_NAME, "%s", name);
	return names->n == ION_DMA_HEAP_MAX;
}

/*
 * The dma-heaps the kernel has, at ids 8-15 in name order, highest id
 * first; one that cannot be opened now is left out. Each is opened again
 * at its first allocation (heap_of()).
 */
static void add_dma_heaps(struct ion_client *c)
{
	struct dma_heap_names names = { 0 };

	if (fl_heap_for_each_dma_heap(collect_dma_heap, &names) <= 0)
		return;
	for (int i = names.n - 1; i >= 0; i--) {
		struct fl_heap *probe;
		const char *n = names.name[i];

		if (fl_heap_open_dma_heap(n, &probe) < 0)
			continue;
		fl_heap_close(probe);
		add_heap(c, NULL, n,
			 strncmp(n, "system", 6) == 0 ? ION_HEAP_TYPE_SYSTEM : ION_HEAP_TYPE_DMA,
			 ION_DMA_HEAP_ID + (__u32)i);
	}
}

/* Heap @i of @c, opening a dma-heap on first use: 0, or why it cannot be opened. */
static int heap_of(struct ion_client *c, int i, struct fl_heap **ret_heap)
{
	struct fl_heap *heap = __atomic_load_n(&c->heap[i], __ATOMIC_ACQUIRE), *none = NULL;
	int r;

	if (!heap) {
		r = fl_heap_open_dma_heap(c->desc[i].name, &heap);
		if (r < 0)
			return r;
		/* Another thread of the client may have opened it meanwhile. */
		if (!__atomic_compare_exchange_n(&c->heap[i], &none, heap, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			fl_heap_close(heap);
			heap = none;
		}
	}
	*ret_heap = heap;
	return 0;
}

FL_EXPORT int ion_open(void)
{
	struct ion_client *c, *stale;
	struct fl_heap *carveout = NULL, *contig = NULL, *sys = NULL;
	struct stat st;
	int fd, r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	add_dma_heaps(c);
	r = fl_heap_open_carveout("carveout", carveout_bytes(), &carveout);
	if (r == 0)
		add_heap(c, carveout, "carveout", ION_HEAP_TYPE_CARVEOUT, ION_CARVEOUT_ID);
	if (r == 0)
		r = fl_heap_open_system_contig("system-contig", &contig);
	if (r == 0)
		add_heap(c, contig, "system-contig", ION_HEAP_TYPE_SYSTEM_CONTIG, ION_CONTIG_ID);
	if (r == 0)
		r = fl_heap_open_system("system", &sys);
	if (r == 0)
		add_heap(c, sys, "system", ION_HEAP_TYPE_SYSTEM, ION_SYSTEM_ID);
	if (r < 0) {
		client_destroy(c);
		return r;
	}
	fd = memfd_create("fl-ion-client", MFD_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		client_destroy(c);
		return r;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->refs = 1;
	c->via_daemon = getenv("FENCELINE_ION_VIA_DAEMON") &&
			!strcmp(getenv("FENCELINE_ION_VIA_DAEMON"), "1");
	fl_heap_daemon_group_new(&c->group);
	atomic_init(&c->daemon_used, false);

	pthread_mutex_lock(&registry_lock);
	/*
	 * A record with this inode belongs to a client whose fds were all
	 * closed without ion_close(): the inode number was free to reuse.
	 */
	stale = find_locked(c->dev, c->ino);
	if (stale) {
		unlink_locked(stale);
		stale = put_locked(stale);
	}
	c->next = registry;
	registry = c;
	pthread_mutex_unlock(&registry_lock);
	if (stale)
		client_destroy(stale);
	return fd;
}

FL_EXPORT int ion_close(int fd)
{
	struct ion_client *c = NULL;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	pthread_mutex_lock(&registry_lock);
	c = find_locked(st.st_dev, st.st_ino);
	if (c) {
		unlink_locked(c);
		c = put_locked(c);
	}
	pthread_mutex_unlock(&registry_lock);
	if (c)
		client_destroy(c);
	/* Like libion, which close()s whatever it is given. */
	if (close(fd) < 0)
		return -errno;
	return 0;
}

/*
 * The heap's record of a buffer from a heap without capacity, dropped at
 * once: ION users only ever close() their buffers, so a record would stay
 * until ion_close() (memory growing with every allocation of a long-lived
 * client) and give back nothing. fl_heap_buffer_free() of a dup forgets it and
 * leaves @fd as it is. A carveout's records stay: they hold its ranges
 * until nobody holds the buffer and the carveout is full.
 */
static void forget(struct fl_heap *heap, int fd)
{
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (dup >= 0 && fl_heap_buffer_free(heap, dup) < 0)
		close(dup);
}

FL_EXPORT int ion_alloc_fd(int fd, size_t len, size_t align, unsigned int heap_mask,
			   unsigned int flags, int *handle_fd)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct ion_client *c;
	int r, out = -1;

	(void)align; /* modern ION ignores it */
	if (!handle_fd)
		return -EINVAL;
	r = client_get(fd, &c);
	if (r < 0)
		return r;
	/* ION rounds to pages first: 0 and lengths that wrap are -EINVAL. */
	if (len == 0 || len > SIZE_MAX - (page - 1)) {
		client_put(c);
		return -EINVAL;
	}
	r = -ENODEV;
	for (int i = 0; i < c->nheaps; i++) {
		const struct ion_heap_desc *d = &c->desc[i];

		if (!(heap_mask & (1u << d->id)))
			continue;
		/* More than half of RAM is -ENOMEM, as ION's system heaps say: every heap refuses it. */
		if (!c->via_daemon) {
			struct fl_heap *heap;

			/* A dma-heap gone since ion_open() is this heap's failure, not the daemon's. */
			r = heap_of(c, i, &heap);
			if (r < 0)
				continue;
			r = fl_heap_alloc(heap, len, flags & FL_HEAP_FLAGS_ALL, &out);
			if (r == 0 && d->id != ION_CARVEOUT_ID)
				forget(heap, out);
		}
		/* A heap this process may not use: the daemon may (it has system and carveout). */
		if (c->via_daemon || r == -EACCES || r == -EPERM) {
			atomic_store(&c->daemon_used, true);
			r = fl_heap_daemon_alloc_group(d->name, len, flags & FL_HEAP_FLAGS_ALL,
						       c->group, &out);
		}
		if (r == 0)
			break;
	}
	client_put(c);
	if (r == 0)
		*handle_fd = out;
	return r;
}

FL_EXPORT int ion_query_heap_cnt(int fd, int *cnt)
{
	struct ion_client *c;
	int r;

	if (!cnt)
		return -EINVAL;
	r = client_get(fd, &c);
	if (r < 0)
		return r;
	*cnt = c->nheaps;
	client_put(c);
	return 0;
}

/*
 * Copy @len bytes to the caller's @dst as the kernel's copy_to_user() would:
 * -EFAULT for memory the caller may not write, not a crash. The bytes go
 * through a pipe, whose read() checks @dst.
 */
static int copy_to_caller(void *dst, const void *src, size_t len)
{
	int p[2], r = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (write(p[1], src, len) != (ssize_t)len)
		r = -EIO;
	else if (read(p[0], dst, len) != (ssize_t)len)
		r = -EFAULT;
	close(p[0]);
	close(p[1]);
	return r;
}

FL_EXPORT int ion_query_get_heaps(int fd, int cnt, void *buffers)
{
	struct ion_heap_data data[ION_HEAP_MAX];
	struct ion_client *c;
	int r, n;

	r = client_get(fd, &c);
	if (r < 0)
		return r;
	if (cnt < 0 || !buffers) {
		client_put(c);
		return cnt < 0 ? -EINVAL : 0;
	}
	n = cnt < c->nheaps ? cnt : c->nheaps;
	memset(data, 0, sizeof(data));
	for (int i = 0; i < n; i++) {
		memcpy(data[i].name, c->desc[i].name, sizeof(data[i].name));
		data[i].type = c->desc[i].type;
		data[i].heap_id = c->desc[i].id;
	}
	client_put(c);
	/* As ION_IOC_HEAP_QUERY's copy_to_user(): a bad pointer is -EFAULT. */
	return n ? copy_to_caller(buffers, data, (size_t)n * sizeof(data[0])) : 0;
}

FL_EXPORT int ion_is_legacy(int fd)
{
	(void)fd;
	return 0;
}

FL_EXPORT int ion_is_using_modular_heaps(int fd)
{
	(void)fd;
	return 0;
}

/* The legacy handle calls: libion returns -EINVAL for each on a modern ION. */

FL_EXPORT int ion_alloc(int fd, size_t len, size_t align, unsigned int heap_mask,
			unsigned int flags, ion_user_handle_t *handle)
{
	(void)fd, (void)len, (void)align, (void)heap_mask, (void)flags, (void)handle;
	return -EINVAL;
}

FL_EXPORT int ion_free(int fd, ion_user_handle_t handle)
{
	(void)fd, (void)handle;
	return -EINVAL;
}

FL_EXPORT int ion_map(int fd, ion_user_handle_t handle, size_t length, int prot, int flags,
		      off_t offset, unsigned char **ptr, int *map_fd)
{
	(void)fd, (void)handle, (void)length, (void)prot, (void)flags, (void)offset, (void)ptr,
		(void)map_fd;
	return -EINVAL;
}

FL_EXPORT int ion_share(int fd, ion_user_handle_t handle, int *share_fd)
{
	(void)fd, (void)handle, (void)share_fd;
	return -EINVAL;
}

FL_EXPORT int ion_import(int fd, int share_fd, ion_user_handle_t *handle)
{
	(void)fd, (void)share_fd, (void)handle;
	return -EINVAL;
}

FL_EXPORT int ion_sync_fd(int fd, int handle_fd)
{
	(void)fd, (void)handle_fd;
	return -EINVAL;
}

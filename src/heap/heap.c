/* SPDX-License-Identifier: MIT */
/*
 * The heap framework: argument checks, the record of every live buffer
 * (found again by its fd's inode), accounting, and the calls into a heap
 * kind's ops. The kinds (system.c, carveout.c, contig.c, dma-heap.c) only
 * say how their buffers are made (a recipe, make.h) and, for a carveout,
 * manage the layout.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "avl.h"
#include "heap-internal.h"

struct buffer_key {
	dev_t dev;
	ino_t ino;
};

#define buffer_of fl__heap_buffer_of

static int cmp_key(dev_t dev_a, ino_t ino_a, dev_t dev_b, ino_t ino_b)
{
	if (dev_a != dev_b)
		return dev_a < dev_b ? -1 : 1;
	if (ino_a != ino_b)
		return ino_a < ino_b ? -1 : 1;
	return 0;
}

static int buffer_cmp(const struct fl_avl_node *a, const struct fl_avl_node *b)
{
	const struct fl_heap_buffer *x = buffer_of(a), *y = buffer_of(b);

	return cmp_key(x->dev, x->ino, y->dev, y->ino);
}

static int buffer_key_cmp(const void *key, const struct fl_avl_node *n)
{
	const struct buffer_key *k = key;
	const struct fl_heap_buffer *b = buffer_of(n);

	return cmp_key(k->dev, k->ino, b->dev, b->ino);
}

static void name_copy(char *dst, const char *src)
{
	snprintf(dst, FL_HEAP_NAME_MAX, "%s", src);
}

int fl__heap_create(const struct fl_heap_ops *ops, const char *name, void *priv,
		    struct fl_heap **ret_heap)
{
	struct fl_heap *heap;
	long page = sysconf(_SC_PAGESIZE);

	heap = calloc(1, sizeof(*heap));
	if (!heap) {
		if (ops->destroy) {
			struct fl_heap tmp = { .ops = ops, .priv = priv };

			ops->destroy(&tmp);
		}
		return -ENOMEM;
	}
	heap->ops = ops;
	heap->priv = priv;
	name_copy(heap->name, name ? name : ops->kind);
	name_copy(heap->backing, "memfd");
	heap->recipe.how = FL_HEAP_MAKE_MEMFD;
	heap->recipe.dev_fd = -1;
	snprintf(heap->recipe.memfd_name, sizeof(heap->recipe.memfd_name), "%s%s",
		 FL_HEAP_RECIPE_PREFIX, heap->name);
	heap->page_size = page > 0 ? (size_t)page : 4096;
	heap->buffers = (struct fl_avl_tree)FL_AVL_TREE_INIT(buffer_cmp);
	heap->scanned_deaths = UINT64_MAX;
	pthread_mutex_init(&heap->lock, NULL);
	fl__heap_pool_init(heap);
	*ret_heap = heap;
	return 0;
}

/*
 * Drops @b's record and accounting and gives its range back. Under the
 * lock. Its watch, if any, stays until the buffer goes (reclaim.c): the
 * buffer may live on after fl_heap_buffer_free(), and removing it would cost a
 * syscall.
 */
static void forget_locked(struct fl_heap *heap, struct fl_heap_buffer *b)
{
	if (b->watch.wd >= 0)
		heap->nwatched--;
	fl__avl_remove(&heap->buffers, &b->node);
	heap->allocated -= b->size;
	heap->live--;
	if (heap->ops->unreserve)
		heap->ops->unreserve(heap, b->priv);
	free(b);
}

static void close_buffer(struct fl_avl_node *n, void *data)
{
	struct fl_heap *heap = data;
	struct fl_heap_buffer *b = buffer_of(n);

	if (heap->ops->unreserve)
		heap->ops->unreserve(heap, b->priv);
	free(b);
}

FL_EXPORT void fl_heap_close(struct fl_heap *heap)
{
	if (!heap)
		return;
	fl__heap_pool_fini(heap);
	pthread_mutex_lock(&heap->lock);
	fl__avl_drain(&heap->buffers, close_buffer, heap);
	pthread_mutex_unlock(&heap->lock);
	/*
	 * A buffer still held elsewhere keeps its watch until it goes, or
	 * until the last heap closes the instance: removing them one by one
	 * would cost a syscall per buffer.
	 */
	fl__heap_watch_put(heap);
	if (heap->ops->destroy)
		heap->ops->destroy(heap);
	pthread_mutex_destroy(&heap->lock);
	free(heap);
}

/* @len rounded up to whole pages, or 0 if that overflows. */
static size_t page_round(const struct fl_heap *heap, size_t len)
{
	size_t mask = heap->page_size - 1;

	if (len > SIZE_MAX - mask)
		return 0;
	return (len + mask) & ~mask;
}

/* For heap->buffers walks: collects the buffers nobody holds (reclaim()). */
struct unheld {
	const struct fl_heap_watch_live *live;
	uint64_t seq;
	struct fl_heap_buffer **found;
	size_t n;
};

static void collect_unheld(struct fl_avl_node *n, void *data)
{
	struct unheld *u = data;
	struct fl_heap_buffer *b = buffer_of(n);

	/* Recorded after the list began to be read: maybe missing from it, yet alive. */
	if (b->watch.wd >= 0 && b->watch_seq <= u->seq &&
	    !fl__heap_watch_is_live(u->live, &b->watch))
		u->found[u->n++] = b;
}

/*
 * Forgets the buffers that nobody holds any more (no fd, no mapping, in any
 * process), so that their ranges come back; how many. Only buffers with a
 * watch can be seen (reclaim.c); the others stay until fl_heap_buffer_free() or
 * fl_heap_close(). Reads /proc only when a watch died since the last look.
 * Lock held; dropped meanwhile.
 */
static size_t reclaim_locked(struct fl_heap *heap)
{
	struct fl_heap_watch_live live;
	struct unheld u = { .live = &live };
	uint64_t died;

	pthread_mutex_unlock(&heap->lock);
	died = fl__heap_watch_deaths();
	pthread_mutex_lock(&heap->lock);
	if (died == heap->scanned_deaths)
		return 0;
	u.seq = heap->watch_seq;
	pthread_mutex_unlock(&heap->lock);
	if (fl__heap_watch_live(&live) < 0) {
		pthread_mutex_lock(&heap->lock);
		return 0;
	}
	pthread_mutex_lock(&heap->lock);
	heap->scanned_deaths = live.deaths;
	u.found = heap->live ? malloc(heap->live * sizeof(*u.found)) : NULL;
	if (u.found)
		fl__avl_walk(&heap->buffers, collect_unheld, &u);
	/* Their watches went with their inodes. */
	for (size_t i = 0; i < u.n; i++)
		forget_locked(heap, u.found[i]);
	free(u.found);
	free(live.wds);
	return u.n;
}

/* Records @b, made with the lock dropped, as live. Under the lock. */
static void record_locked(struct fl_heap *heap, struct fl_heap_buffer *b)
{
	struct buffer_key key = { b->dev, b->ino };
	struct fl_avl_node *stale;

	/*
	 * A record with this inode can only be left over from a buffer whose
	 * fds were all closed without fl_heap_buffer_free(), its inode number since
	 * reused: that buffer is gone, so its record goes too.
	 */
	stale = fl__avl_find(&heap->buffers, &key, buffer_key_cmp);
	if (stale)
		forget_locked(heap, buffer_of(stale));
	if (b->watch.wd >= 0)
		heap->nwatched++;
	fl__avl_insert(&heap->buffers, &b->node);
	if (heap->allocated > heap->peak_allocated)
		heap->peak_allocated = heap->allocated;
	if (heap->live > heap->peak_buffers)
		heap->peak_buffers = heap->live;
	heap->allocations++;
}

/* The gate turned @size off: its stock (@fds, taken under the lock) goes. No lock held. */
static void gate_turned_off(struct fl_heap *heap, uint64_t size, const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	fl__heap_log("heap '%s': pooling buffers of %" PRIu64 " bytes does not pay here; "
		     "they are made bare from now on",
		     heap->name, size);
}

FL_EXPORT int fl_heap_alloc(struct fl_heap *heap, size_t len, unsigned int flags, int *ret_fd)
{
	enum fl_heap_gate_pick pick = FL_GATE_BARE;
	int fd = -1, r, dropped[FL_HEAP_POOL_BUFFERS];
	struct fl_heap_buffer *b;
	bool recorded = false, sample, turned_off = false;
	size_t size, ndropped = 0;
	struct stat st;

	if (!heap || !ret_fd || len == 0 || (flags & ~FL_HEAP_FLAGS_ALL))
		return -EINVAL;
	sample = fl__heap_gate_sampling(&heap->pool.gates);
	size = page_round(heap, len);
	b = size ? calloc(1, sizeof(*b)) : NULL;
	if (!b) {
		r = -ENOMEM;
		goto fail_counted;
	}
	b->size = size;
	b->offset = FL_HEAP_NO_OFFSET;
	b->flags = flags;
	b->watch.wd = -1;

	/*
	 * Counted from the reservation on, so that a snapshot of a carveout
	 * always has capacity - allocated = its free bytes.
	 */
	pthread_mutex_lock(&heap->lock);
	r = heap->ops->reserve ? heap->ops->reserve(heap, size, &b->priv, &b->offset) : 0;
	/*
	 * Full: take back the ranges of buffers nobody holds any more, and
	 * try again (also after nothing came back: others may have freed
	 * while the lock was dropped).
	 */
	if (r == -ENOMEM && heap->nwatched) {
		reclaim_locked(heap);
		r = heap->ops->reserve(heap, size, &b->priv, &b->offset);
	}
	if (r == 0) {
		heap->allocated += size;
		heap->live++;
		/*
		 * With a pool, its gate says whether this size is pooled, and
		 * times its windows (pool-gate.c): a vDSO clock read.
		 */
		if (heap->pool.max)
			pick = fl__heap_gate_pick(&heap->pool.gates, size, sample,
						  fl__heap_gate_now(), &turned_off);
		if (turned_off)
			ndropped = fl__heap_pool_drop_size(heap, size, dropped);
		/* A pooled buffer is ready: no syscall, one trip through the lock. */
		if (pick == FL_GATE_POOL || pick == FL_GATE_POOL_SAMPLE)
			fd = fl__heap_pool_take(heap, size, true, &b->dev, &b->ino);
		if (fd == -2) {
			/* Some are on their way from the worker: take them in. */
			pthread_mutex_unlock(&heap->lock);
			fl__heap_pool_receive(heap);
			pthread_mutex_lock(&heap->lock);
			fd = fl__heap_pool_take(heap, size, false, &b->dev, &b->ino);
		}
		/*
		 * Only a pool hit is a pooled sample: a miss is a bare
		 * allocation that waited for nothing, counted apart.
		 */
		if (fd >= 0 && pick == FL_GATE_POOL_SAMPLE)
			b->sample = FL_GATE_SAMPLE_POOLED;
		/* A heap with a capacity records it only once it is watched (below). */
		if (fd >= 0 && !heap->ops->reserve) {
			record_locked(heap, b);
			recorded = true;
		}
	}
	pthread_mutex_unlock(&heap->lock);
	if (turned_off)
		gate_turned_off(heap, size, dropped, ndropped);
	if (r < 0) {
		free(b);
		goto fail_counted;
	}

	if (fd < 0) {
		/* The fd is made without the lock: it may take a while. */
		r = fl__heap_make(&heap->recipe, size, &fd);
		if (r == 0 && fstat(fd, &st) < 0)
			r = fl__heap_alloc_error(errno);
		if (r < 0) {
			pthread_mutex_lock(&heap->lock);
			if (heap->ops->unreserve)
				heap->ops->unreserve(heap, b->priv);
			heap->allocated -= size;
			heap->live--;
			heap->failures++;
			pthread_mutex_unlock(&heap->lock);
			free(b);
			if (fd >= 0)
				close(fd);
			return r;
		}
		b->dev = st.st_dev;
		b->ino = st.st_ino;
	}
	if (!recorded) {
		/*
		 * A heap with a capacity watches its buffers, to take their
		 * ranges back once nobody holds them (reclaim_locked()). The
		 * watch exists before the record: a look at the watches that
		 * began after the record was numbered sees it.
		 */
		if (heap->ops->reserve)
			fl__heap_watch_add(heap, fd, &b->watch);
		if (pick == FL_GATE_BARE_SAMPLE)
			b->sample = FL_GATE_SAMPLE_BARE;
		else if (pick == FL_GATE_BARE_WINDOW)
			b->sample = FL_GATE_SAMPLE_CLOSE;
		pthread_mutex_lock(&heap->lock);
		b->watch_seq = ++heap->watch_seq;
		record_locked(heap, b);
		pthread_mutex_unlock(&heap->lock);
	}
	*ret_fd = fd;
	return 0;

fail_counted:
	pthread_mutex_lock(&heap->lock);
	heap->failures++;
	pthread_mutex_unlock(&heap->lock);
	return r;
}

/* A sampled buffer's life is over (fixed costs): it goes into the gate's figures. No lock held. */
static void gate_record(struct fl_heap *heap, uint64_t size, bool bare)
{
	int fds[FL_HEAP_POOL_BUFFERS];
	size_t n = 0;
	bool off;

	pthread_mutex_lock(&heap->lock);
	off = fl__heap_gate_record(&heap->pool.gates, size, bare);
	if (off)
		n = fl__heap_pool_drop_size(heap, size, fds);
	pthread_mutex_unlock(&heap->lock);
	if (off)
		gate_turned_off(heap, size, fds, n);
}

/* The live buffer @fd belongs to; -EBADF, or NULL. Under the lock. */
static struct fl_heap_buffer *find_locked(struct fl_heap *heap, const struct stat *st)
{
	struct buffer_key key = { st->st_dev, st->st_ino };
	struct fl_avl_node *n = fl__avl_find(&heap->buffers, &key, buffer_key_cmp);

	return n ? buffer_of(n) : NULL;
}

FL_EXPORT int fl_heap_buffer_free(struct fl_heap *heap, int fd)
{
	struct fl_heap_pool_flush out = { .what = FL_POOL_NOTHING };
	unsigned int sample = FL_GATE_SAMPLE_NONE;
	uint64_t size = 0;
	struct fl_heap_buffer *b;
	struct stat st;
	bool deferred = false;

	if (!heap)
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	pthread_mutex_lock(&heap->lock);
	b = find_locked(heap, &st);
	if (b) {
		/*
		 * A memfd holds the pages written so far (st_blocks); a dma-buf
		 * all of its size.
		 */
		uint64_t held = S_ISREG(st.st_mode) ? (uint64_t)st.st_blocks * 512 : b->size;

		sample = b->sample;
		size = b->size;
		/* A bare one of the gate's ends as it would without a pool: closed here. */
		if (sample != FL_GATE_SAMPLE_BARE && sample != FL_GATE_SAMPLE_CLOSE)
			deferred = fl__heap_pool_give(heap, b->size, held, fd, &out);
		forget_locked(heap, b);
	}
	pthread_mutex_unlock(&heap->lock);
	if (!b)
		return -EINVAL;
	fl__heap_pool_flush(heap, &out);
	if (!deferred)
		close(fd);
	if (sample == FL_GATE_SAMPLE_POOLED || sample == FL_GATE_SAMPLE_BARE)
		gate_record(heap, size, sample == FL_GATE_SAMPLE_BARE);
	return 0;
}

/* The deprecated name, kept exported for one release: the same code. */
FL_EXPORT int fl_heap_free(struct fl_heap *heap, int fd)
	__attribute__((alias("fl_heap_buffer_free")));

FL_EXPORT int fl_heap_buffer_get_flags(struct fl_heap *heap, int fd, unsigned int *ret_flags)
{
	struct fl_heap_buffer *b;
	unsigned int flags = 0;
	struct stat st;

	if (!heap || !ret_flags)
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	pthread_mutex_lock(&heap->lock);
	b = find_locked(heap, &st);
	if (b)
		flags = b->flags;
	pthread_mutex_unlock(&heap->lock);
	if (!b)
		return -EINVAL;
	*ret_flags = flags;
	return 0;
}

FL_EXPORT int fl_heap_set_pool_max(struct fl_heap *heap, uint64_t max_bytes)
{
	int *fds = NULL;
	size_t n = 0;

	if (!heap)
		return -EINVAL;
	pthread_mutex_lock(&heap->lock);
	fl__heap_pool_set_max(heap, max_bytes, &fds, &n);
	pthread_mutex_unlock(&heap->lock);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return 0;
}

void fl__heap_fill_info_locked(struct fl_heap *heap, struct fl_heap_info *info)
{
	memset(info, 0, sizeof(*info));
	name_copy(info->name, heap->name);
	name_copy(info->kind, heap->ops->kind);
	info->allocated = heap->allocated;
	info->peak_allocated = heap->peak_allocated;
	info->buffers = heap->live;
	info->peak_buffers = heap->peak_buffers;
	info->allocations = heap->allocations;
	info->failures = heap->failures;
	name_copy(info->backing, heap->backing);
	info->granule = heap->page_size;
	info->pool_max = heap->pool.max;
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++) {
		info->pool_bytes += heap->pool.cls[i].ready * heap->pool.cls[i].size;
		info->pool_buffers += heap->pool.cls[i].ready;
	}
	info->pool_pending = fl__heap_pool_pending(heap);
	info->pool_hits = heap->pool.hits;
	info->pool_misses = heap->pool.misses;
	if (heap->ops->fill_info)
		heap->ops->fill_info(heap, info);
}

FL_EXPORT int fl_heap_get_info(struct fl_heap *heap, struct fl_heap_info *ret_info)
{
	struct fl_heap_info info;

	if (!heap || !ret_info)
		return -EINVAL;
	/* What the worker has made counts as ready as soon as anyone looks. */
	fl__heap_pool_receive(heap);
	pthread_mutex_lock(&heap->lock);
	fl__heap_fill_info_locked(heap, &info);
	pthread_mutex_unlock(&heap->lock);
	*ret_info = info;
	return 0;
}

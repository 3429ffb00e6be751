/* SPDX-License-Identifier: MIT */
/*
 * A heap's pool: fresh buffers made ahead of time, and freed buffers closed
 * off the caller's thread (docs/heap.md, "Pools and deferred freeing").
 *
 * A freed buffer itself is never handed out again. Its fd may have been
 * dup()ed, sent to another process or mapped, and nothing the kernel offers
 * proves that every such holder is gone (docs/heap.md says why leases and
 * /proc do not). So a free only tells the worker that its size is in use:
 * the worker closes the freed fd and makes a new buffer of that size with
 * the kind's allocate op, and the next fl_heap_alloc() of the size takes
 * it. A pooled buffer is a file that nobody has ever held, zero-filled by
 * the kernel, so nothing can leak through the pool and nothing needs
 * clearing.
 *
 * Everything here runs under the heap's lock, except the worker's
 * syscalls, which it makes with the lock dropped.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "heap-internal.h"

static struct fl_heap_pool_class *class_find(struct fl_heap_pool *p, uint64_t size)
{
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++)
		if (p->cls[i].size == size)
			return &p->cls[i];
	return NULL;
}

/* The class of @size, taking a slot that holds nothing if need be. */
static struct fl_heap_pool_class *class_get(struct fl_heap_pool *p, uint64_t size)
{
	struct fl_heap_pool_class *c = class_find(p, size);

	for (int i = 0; !c && i < FL_HEAP_POOL_SIZES; i++) {
		if (p->cls[i].ready == 0 && p->cls[i].wanted == 0) {
			c = &p->cls[i];
			c->size = size;
		}
	}
	return c;
}

static bool fits(const struct fl_heap_pool *p, uint64_t size)
{
	return p->buffers < FL_HEAP_POOL_BUFFERS && size <= p->max && p->bytes <= p->max - size;
}

/* Whatever is to be made of @size is dropped: it failed or no longer fits. */
static void unwant(struct fl_heap_pool *p, uint64_t size)
{
	p->bytes -= size;
	p->buffers--;
}

static void *worker_main(void *data)
{
	struct fl_heap *heap = data;
	struct fl_heap_pool *p = &heap->pool;

	pthread_mutex_lock(&heap->lock);
	while (!p->stop) {
		struct fl_heap_pool_class *c = NULL;
		struct stat st;
		uint64_t size;
		int fd = -1, r;

		if (p->ndoomed) {
			fd = p->doomed[--p->ndoomed];
			pthread_mutex_unlock(&heap->lock);
			close(fd);
			pthread_mutex_lock(&heap->lock);
			continue;
		}
		for (int i = 0; !c && i < FL_HEAP_POOL_SIZES; i++)
			if (p->cls[i].wanted)
				c = &p->cls[i];
		if (!c) {
			p->idle = true;
			pthread_cond_wait(&p->wake, &heap->lock);
			p->idle = false;
			continue;
		}
		/* Still counted in bytes and buffers while it is being made. */
		c->wanted--;
		size = c->size;
		pthread_mutex_unlock(&heap->lock);
		r = heap->ops->allocate(heap, size, &fd);
		if (r == 0 && fstat(fd, &st) < 0)
			r = -errno;
		pthread_mutex_lock(&heap->lock);
		/* The limit may have dropped, or the slot gone to another size. */
		c = r == 0 && p->bytes <= p->max ? class_get(p, size) : NULL;
		if (c) {
			c->entry[c->ready++] =
				(struct fl_heap_pool_entry){ fd, st.st_dev, st.st_ino };
			continue;
		}
		unwant(p, size);
		if (r < 0) {
			/* Out of memory or fds: stop asking for more until the next free. */
			for (int i = 0; i < FL_HEAP_POOL_SIZES; i++)
				for (; p->cls[i].wanted; p->cls[i].wanted--)
					unwant(p, p->cls[i].size);
		}
		if (fd >= 0) {
			pthread_mutex_unlock(&heap->lock);
			close(fd);
			pthread_mutex_lock(&heap->lock);
		}
	}
	pthread_mutex_unlock(&heap->lock);
	return NULL;
}

/* Starts the worker, with every signal blocked: they are the program's. */
static bool worker_start(struct fl_heap *heap)
{
	struct fl_heap_pool *p = &heap->pool;
	sigset_t all, old;
	int r;

	if (p->running)
		return true;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&p->worker, NULL, worker_main, heap);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0)
		return false;
	p->running = true;
	p->owner = getpid();
	return true;
}

void fl__heap_pool_init(struct fl_heap *heap)
{
	const char *s = getenv("FENCELINE_HEAP_POOL_MAX");

	pthread_cond_init(&heap->pool.wake, NULL);
	if (s && *s >= '0' && *s <= '9') {
		char *end;
		unsigned long long v = strtoull(s, &end, 10);

		if (*end == '\0')
			heap->pool.max = v;
	}
}

void fl__heap_pool_fini(struct fl_heap *heap)
{
	struct fl_heap_pool *p = &heap->pool;

	pthread_mutex_lock(&heap->lock);
	p->stop = true;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&heap->lock);
	/* In the child of a fork() the worker is not there to join. */
	if (p->running && p->owner == getpid())
		pthread_join(p->worker, NULL);
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++)
		for (unsigned int j = 0; j < p->cls[i].ready; j++)
			close(p->cls[i].entry[j].fd);
	for (size_t i = 0; i < p->ndoomed; i++)
		close(p->doomed[i]);
	free(p->doomed);
	pthread_cond_destroy(&p->wake);
}

int fl__heap_pool_take(struct fl_heap *heap, uint64_t size, dev_t *ret_dev, ino_t *ret_ino)
{
	struct fl_heap_pool *p = &heap->pool;
	struct fl_heap_pool_class *c;
	struct fl_heap_pool_entry *e;

	if (!p->max)
		return -1;
	c = class_find(p, size);
	if (!c || !c->ready) {
		p->misses++;
		return -1;
	}
	e = &c->entry[--c->ready];
	p->bytes -= size;
	p->buffers--;
	p->hits++;
	*ret_dev = e->dev;
	*ret_ino = e->ino;
	return e->fd;
}

bool fl__heap_pool_give(struct fl_heap *heap, uint64_t size, int fd)
{
	struct fl_heap_pool *p = &heap->pool;
	struct fl_heap_pool_class *c;

	if (!p->max || !worker_start(heap))
		return false;
	if (p->ndoomed == p->doomed_cap) {
		size_t cap = p->doomed_cap ? 2 * p->doomed_cap : 16;
		int *d = realloc(p->doomed, cap * sizeof(*d));

		if (!d)
			return false;
		p->doomed = d;
		p->doomed_cap = cap;
	}
	p->doomed[p->ndoomed++] = fd;
	c = fits(p, size) ? class_get(p, size) : NULL;
	if (c) {
		/* A size freed once is kept in stock a few deep, so the worker works in batches. */
		do {
			c->wanted++;
			p->bytes += size;
			p->buffers++;
		} while (c->ready + c->wanted < FL_HEAP_POOL_DEPTH && fits(p, size));
	}
	/*
	 * Waking the worker is a futex call, and an IPI if it sleeps on another
	 * CPU: only when it sleeps. A busy worker sees the new work before it
	 * sleeps again.
	 */
	if (p->idle)
		pthread_cond_signal(&p->wake);
	return true;
}

void fl__heap_pool_set_max(struct fl_heap *heap, uint64_t max, int **ret_fds, size_t *ret_n)
{
	struct fl_heap_pool *p = &heap->pool;
	int *fds = NULL;
	size_t n = 0;

	p->max = max;
	/* Buffers not made yet go first: they cost nothing to drop. */
	for (int i = 0; i < FL_HEAP_POOL_SIZES && p->bytes > max; i++)
		for (; p->cls[i].wanted && p->bytes > max; p->cls[i].wanted--)
			unwant(p, p->cls[i].size);
	if (p->bytes > max)
		fds = malloc(FL_HEAP_POOL_BUFFERS * sizeof(*fds));
	for (int i = 0; fds && i < FL_HEAP_POOL_SIZES && p->bytes > max; i++) {
		struct fl_heap_pool_class *c = &p->cls[i];

		for (; c->ready && p->bytes > max; c->ready--) {
			fds[n++] = c->entry[c->ready - 1].fd;
			unwant(p, c->size);
		}
	}
	*ret_fds = fds;
	*ret_n = n;
}

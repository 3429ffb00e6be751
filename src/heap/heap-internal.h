/* SPDX-License-Identifier: MIT */
/*
 * The heap framework's side that heap kinds see: the ops table each kind
 * provides, the heap object, and the memfd helper every kind of this slice
 * shares. Private to src/heap: the ops table is not public yet, because a
 * public one is an ABI promise and no heap from outside the library needs
 * it so far (docs/heap.md, "Not yet").
 */
#ifndef FL_HEAP_INTERNAL_H
#define FL_HEAP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <fenceline/heap.h>

#include "avl.h"
#include "make.h"
#include "pool-gate.h"
#include "worker-proto.h"

/**
 * struct fl_heap_ops - what a kind of heap provides, besides its recipe
 * @kind: the kind's name, as fl_heap_info.kind shows it. Mandatory.
 * @reserve: takes @len bytes of the heap's capacity for a buffer about to
 *	be allocated. Optional: NULL means no fixed capacity.
 *	Context: heap lock held; must not block. Return: 0, with what
 *	@unreserve needs in *@ret_priv and the buffer's place in the heap in
 *	*@ret_offset, or -ENOMEM if no room is left.
 * @unreserve: gives back what @reserve took. Optional (NULL: nothing to
 *	give back); must be set if @reserve is. Context: heap lock held; must
 *	not block; cannot fail.
 * @fill_info: adds the kind's figures (capacity, free blocks) to @info.
 *	Optional: NULL leaves them 0. Context: heap lock held; must not block.
 * @walk_free: calls @fn on each free block, in address order. Optional:
 *	NULL means the heap has no layout. Context: heap lock held.
 * @destroy: frees the kind's data, after every reserved range was given
 *	back. Optional (NULL: nothing to free). Context: fl_heap_close(), no
 *	other thread using the heap.
 *
 * How buffers are made is not an op but data, the heap's @recipe (make.h),
 * which the kind fills when it opens the heap: the pool's worker is
 * another process and can follow a recipe, not call into this one. The
 * framework calls optional ops only after checking them for NULL, and
 * tells kinds apart by comparing ops pointers.
 */
struct fl_heap_ops {
	const char *kind;
	int (*reserve)(struct fl_heap *heap, size_t len, void **ret_priv, uint64_t *ret_offset);
	void (*unreserve)(struct fl_heap *heap, void *priv);
	void (*fill_info)(struct fl_heap *heap, struct fl_heap_info *info);
	void (*walk_free)(struct fl_heap *heap,
			  void (*fn)(uint64_t offset, uint64_t size, void *data), void *data);
	void (*destroy)(struct fl_heap *heap);
};

/* The most ready buffers, and distinct sizes, a pool holds. */
#define FL_HEAP_POOL_BUFFERS 64
#define FL_HEAP_POOL_SIZES   FL_HEAP_WORKER_SIZES
/*
 * Buffers a freed size is kept in stock to (ready, asked for or to ask),
 * limits allowing; the worker is asked once a quarter is missing.
 */
#define FL_HEAP_POOL_DEPTH 32
/* Memory of freed buffers held for the next message to the worker, at most. */
#define FL_HEAP_POOL_DOOMED_BYTES (4u << 20)

/* One ready buffer: a fresh file that nobody has held. */
struct fl_heap_pool_entry {
	int fd;
	dev_t dev;
	ino_t ino;
};

/* Buffers of one size: ready, asked of the worker, and to ask. */
struct fl_heap_pool_class {
	uint64_t size; /* 0: slot unused */
	unsigned int ready, asked, want;
	struct fl_heap_pool_entry entry[FL_HEAP_POOL_BUFFERS];
};

/* A heap's pool (pool.c); everything under the heap's lock. */
struct fl_heap_pool {
	uint64_t max; /* bytes; 0: off */
	uint64_t bytes, buffers; /* ready + asked + want */
	uint64_t hits, misses;
	struct fl_heap_pool_class cls[FL_HEAP_POOL_SIZES];
	int doomed[FL_HEAP_WORKER_BATCH]; /* freed, for the next message */
	unsigned int ndoomed;
	uint64_t doomed_bytes;
	int sock; /* to the worker process; -1 until it starts */
	unsigned int gen; /* the fork generation the pool's fds belong to */
	bool starting; /* a thread is starting the worker */
	bool failed; /* the worker could not start or went away: nothing made ahead */
	struct fl_heap_gates gates; /* per size: does pooling pay (pool-gate.c) */
	uint64_t worker_cpu_ns; /* the worker's CPU time at its last message; 0: none yet */
};

/*
 * What fl__heap_pool_give() leaves to do once the lock is dropped, for
 * fl__heap_pool_flush(): fds to send to the worker (or close), and the
 * buffers to ask for.
 */
struct fl_heap_pool_flush {
	enum { FL_POOL_NOTHING, FL_POOL_SEND, FL_POOL_START, FL_POOL_CLOSE } what;
	int sock;
	unsigned int nfds, nmake;
	int fds[FL_HEAP_WORKER_BATCH];
	struct {
		uint64_t size;
		uint32_t count;
	} make[FL_HEAP_POOL_SIZES];
};

struct fl_heap {
	const struct fl_heap_ops *ops;
	void *priv; /* the kind's; may be NULL */
	char name[FL_HEAP_NAME_MAX];
	char backing[FL_HEAP_NAME_MAX]; /* "memfd" unless the kind says otherwise */
	struct fl_heap_recipe recipe; /* how buffers are made; a memfd unless the kind says */
	size_t page_size; /* the granule sizes round up to; a kind may raise it */

	/*
	 * @lock covers everything below and the kind's reserve state. It is
	 * never held across a syscall that makes or closes an fd, so
	 * allocations on one heap only serialise on the bookkeeping.
	 */
	pthread_mutex_t lock;
	struct fl_avl_tree buffers; /* struct fl_heap_buffer, by inode */
	/* Bytes and buffers reserved, those still being made included. */
	uint64_t allocated, live;
	uint64_t peak_allocated, peak_buffers;
	uint64_t allocations, failures;
	struct fl_heap_pool pool;
	/* Reclaim (reclaim.c), for heaps with a capacity: */
	bool watching; /* a user of the process's watches, until fl_heap_close() */
	uint64_t nwatched; /* records with a watch */
	uint64_t watch_seq; /* numbers the buffers as their watches are recorded */
	uint64_t scanned_deaths; /* fl__heap_watch_deaths() at the last look; UINT64_MAX: never */
};

/*
 * A buffer's inotify watch (reclaim.c): the watch descriptor, -1 for none,
 * and the generation of the process's inotify instance it belongs to.
 */
struct fl_heap_watch {
	int wd;
	unsigned int gen;
};

/* The watches alive at one moment, sorted; from fl__heap_watch_live(). */
struct fl_heap_watch_live {
	int *wds;
	size_t n;
	unsigned int gen;
	uint64_t deaths; /* fl__heap_watch_deaths() just before the list was read */
};

/*
 * Starts watching the buffer behind @fd, which the caller holds, for the
 * moment nobody holds it; *@ret gets the watch (wd -1: none could be made,
 * and the buffer is never found unheld). The first call for @heap makes it
 * a user of the process's watches until fl__heap_watch_put(). No lock held.
 */
void fl__heap_watch_add(struct fl_heap *heap, int fd, struct fl_heap_watch *ret);
/* @heap is closed: the last user closes the instance, and its watches. No lock held. */
void fl__heap_watch_put(struct fl_heap *heap);
/* How many watches have died (or may have: a queue overflow) so far. No lock held. */
uint64_t fl__heap_watch_deaths(void);
/*
 * Reads which watches are alive into *@ret (free ret->wds). Returns 0,
 * -ENOENT (no instance), or the error reading /proc. No lock held.
 */
int fl__heap_watch_live(struct fl_heap_watch_live *ret);
/* Whether @w is alive in @live; a buffer without a watch counts as alive. */
bool fl__heap_watch_is_live(const struct fl_heap_watch_live *live, const struct fl_heap_watch *w);

#define FL_HEAP_NO_OFFSET UINT64_MAX

/*
 * One live buffer. The inode, not the fd number, names it: the caller may
 * free through a dup() or an fd that came back from another process, and
 * an fd number is reused as soon as it is closed.
 */
struct fl_heap_buffer {
	struct fl_avl_node node; /* in fl_heap.buffers */
	dev_t dev;
	ino_t ino;
	uint64_t size;
	uint64_t offset; /* FL_HEAP_NO_OFFSET in a heap without layout */
	void *priv; /* from ops->reserve; may be NULL */
	unsigned int flags; /* FL_HEAP_FLAG_* */
	struct fl_heap_watch watch; /* wd -1 until recorded with one (reclaim.c) */
	uint64_t watch_seq; /* fl_heap.watch_seq when the watch was recorded */
	unsigned int sample; /* FL_GATE_SAMPLE_*: what the pool's gate does at its free */
};

static inline struct fl_heap_buffer *fl__heap_buffer_of(const struct fl_avl_node *n)
{
	return (struct fl_heap_buffer *)((char *)n - offsetof(struct fl_heap_buffer, node));
}

/* Fills @info from @heap's counters and its kind. Heap lock held. */
void fl__heap_fill_info_locked(struct fl_heap *heap, struct fl_heap_info *info);

/*
 * Makes a heap of @ops' kind that owns @priv (freed by ops->destroy, also
 * when this fails). @name NULL gives ops->kind.
 */
int fl__heap_create(const struct fl_heap_ops *ops, const char *name, void *priv,
		    struct fl_heap **ret_heap);

/*
 * The pool (pool.c). Called with the heap's lock held unless they say not;
 * those under the lock never block and make no syscall, except that a pool
 * inherited through fork() is dropped (its fds closed) by the first of them.
 */
void fl__heap_pool_init(struct fl_heap *heap);
/* Hangs up on the worker and closes every pooled and freed fd. No lock held. */
void fl__heap_pool_fini(struct fl_heap *heap);
/*
 * Takes a ready buffer of @size: its fd, -1 (a miss, if the pool is on),
 * or, if @may_receive and buffers of @size are on their way, -2: call
 * fl__heap_pool_receive() without the lock and try again.
 */
int fl__heap_pool_take(struct fl_heap *heap, uint64_t size, bool may_receive, dev_t *ret_dev,
		       ino_t *ret_ino);
/* Takes in what the worker has sent, without waiting. No lock held. */
void fl__heap_pool_receive(struct fl_heap *heap);
/*
 * Takes a freed buffer's @fd, which holds @held bytes of memory, for the
 * worker to close, and asks for a fresh buffer of @size. Returns false if
 * the pool is off or has no worker: the caller then closes @fd itself.
 * Either way *@out says what is left to do: pass it to
 * fl__heap_pool_flush() once the lock is dropped.
 */
bool fl__heap_pool_give(struct fl_heap *heap, uint64_t size, uint64_t held, int fd,
			struct fl_heap_pool_flush *out);
/* Does what *@out says: starts the worker, sends, or closes. No lock held. */
void fl__heap_pool_flush(struct fl_heap *heap, struct fl_heap_pool_flush *out);
/* Sets the limit; fds to close (unlocked) go to *@ret_fds, freed by the caller. */
void fl__heap_pool_set_max(struct fl_heap *heap, uint64_t max, int **ret_fds, size_t *ret_n);
/* Buffers asked of the worker and not here yet. */
uint64_t fl__heap_pool_pending(const struct fl_heap *heap);
/*
 * @size is no longer pooled: its ready buffers go to @fds (room for
 * FL_HEAP_POOL_BUFFERS), to be closed once the lock is dropped; returns
 * how many. Those on their way are closed as they come.
 */
size_t fl__heap_pool_drop_size(struct fl_heap *heap, uint64_t size, int *fds);

/*
 * Whether the @len bytes at @name may name a heap in /dev/dma_heap: not
 * empty, no '/', not "." or "..", shorter than NAME_MAX. The table's parser
 * and fl_heap_open_dma_heap() both ask.
 */
bool fl__dma_heap_name_ok(const char *name, size_t len);

#endif /* FL_HEAP_INTERNAL_H */

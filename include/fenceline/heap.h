/* SPDX-License-Identifier: MIT */
/**
 * DOC: heaps - buffers to share, ION-style
 *
 * A heap hands out buffers as file descriptors: memfds that can be
 * mmap()ped, passed to another process with fl_send() or inherited, and
 * whose size is sealed (F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL), so a
 * consumer can trust the length that fstat() shows: nobody, the producer
 * included, can shrink the buffer under a mapping and turn the consumer's
 * reads into SIGBUS. Every buffer starts zero-filled; no data from an
 * earlier buffer ever shows through.
 *
 * Four kinds of heap exist (docs/heap.md has the design and what is still
 * to come):
 *
 * - **system** (fl_heap_open_system()): page-granular memfds with no
 *   capacity limit beyond the kernel's memory. As with any memfd, pages are
 *   allocated when first touched, not by fl_heap_alloc().
 * - **carveout** (fl_heap_open_carveout()): a fixed capacity, carved by a
 *   best-fit allocator that coalesces neighbouring free blocks, so that
 *   fragmentation behaves as on a device with a reserved region: an
 *   allocation fails with -ENOMEM when no free block is large enough, even
 *   if the free bytes add up. Each buffer is still a memfd of its own (a
 *   sub-range of one file cannot be an fd of its own, and handing out the
 *   whole region would let every holder read every other buffer), so the
 *   carveout models capacity and layout; it does not reserve memory.
 * - **system-contig** (fl_heap_open_system_contig()): memfds of huge pages,
 *   from the kernel's hugetlb pool (MFD_HUGETLB) when pages are reserved
 *   there, else advised for transparent huge pages; memory is reserved or
 *   populated by fl_heap_alloc(). fl_heap_info.backing says which.
 * - **dma-heap** (fl_heap_open_dma_heap()): real dma-bufs from the kernel's
 *   /dev/dma_heap/<name>. They cannot be sealed, but nobody can resize a
 *   dma-buf either.
 *
 * Pools (fl_heap_set_pool_max()): a heap can keep fresh buffers of the
 * sizes freed recently, made ahead of time by a worker process
 * (fl-heap-worker, started by the library), and have that process close
 * freed buffers (deferred freeing). A pooled buffer is a file that nobody
 * ever held, so no data can leak through the pool.
 *
 * Ownership: fl_heap_alloc() returns an fd that the caller owns. The heap
 * keeps a record of the buffer, found again by the fd's inode, so any fd of
 * the buffer (a dup(), one received from another process) identifies it.
 * Give a buffer back with fl_heap_buffer_free(), which forgets the record,
 * returns the buffer's range to a carveout and closes the fd you pass.
 * Closing a buffer's fd with close() instead keeps it counted (and its
 * carveout range taken) until fl_heap_close(): the heap cannot see a
 * close(). Other fds and mappings of a freed buffer stay valid, as a
 * dma-buf outlives ion_free(): its memory is a file of its own, so the next
 * buffer carved from the same range never shares it.
 *
 * Threads: every function may be called from any thread; one heap may be
 * used by many threads at once.
 */
#ifndef FENCELINE_HEAP_H
#define FENCELINE_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

struct fl_heap;

/** Maximum length of heap names and kinds, including the NUL. */
#define FL_HEAP_NAME_MAX 32

/*
 * Allocation flags, with the values and meanings of ION's: recorded with
 * the buffer (fl_heap_buffer_get_flags()). Memfd memory is CPU-cached and
 * coherent whatever they say; a dma-heap decides caching by the heap itself
 * (e.g. "system" versus "system-uncached"), not by a flag.
 */
/** The buffer's CPU mappings are cached (ION_FLAG_CACHED). */
#define FL_HEAP_FLAG_CACHED (1u << 0)
/** The user brackets CPU access with begin/end calls (ION_FLAG_CACHED_NEEDS_SYNC). */
#define FL_HEAP_FLAG_NEEDS_SYNC (1u << 1)
/** Every flag fl_heap_alloc() knows; any other bit is -EINVAL. */
#define FL_HEAP_FLAGS_ALL (FL_HEAP_FLAG_CACHED | FL_HEAP_FLAG_NEEDS_SYNC)

/* Directions of CPU access, as DMA_BUF_SYNC_READ/WRITE/RW. */
/** The CPU reads the buffer. */
#define FL_HEAP_SYNC_READ (1u << 0)
/** The CPU writes the buffer. */
#define FL_HEAP_SYNC_WRITE (1u << 1)
/** The CPU reads and writes the buffer. */
#define FL_HEAP_SYNC_RW (FL_HEAP_SYNC_READ | FL_HEAP_SYNC_WRITE)

/**
 * struct fl_heap_info - a heap's accounting, filled by fl_heap_get_info()
 * @name: the heap's name, NUL-terminated
 * @kind: the heap's kind: "system", "carveout", "system-contig" or
 *	"dma-heap"
 * @capacity: bytes the heap can hand out at most (a carveout's size,
 *	rounded up to whole pages); 0 for no fixed capacity (system)
 * @allocated: bytes in live buffers, each counted rounded up to whole pages
 *	(allocations still under way in other threads included)
 * @peak_allocated: the highest @allocated has been since the heap was opened
 * @buffers: live buffers (allocated, not yet freed; under way included)
 * @peak_buffers: the highest @buffers has been
 * @allocations: successful fl_heap_alloc() calls since the heap was opened
 * @failures: fl_heap_alloc() calls that failed for want of memory or fds
 *	(-ENOMEM, -EMFILE), not for bad arguments
 * @free_blocks: a carveout's free blocks (1 when nothing is allocated,
 *	0 when it is full); 0 for a heap without fixed capacity
 * @largest_free: the largest free block of a carveout, the largest buffer it
 *	can hand out now; 0 for a heap without fixed capacity
 * @backing: what the buffers are: "memfd" (system, carveout), "hugetlb"
 *	(system-contig from the hugetlb pool), "thp" (system-contig as memfds
 *	advised for transparent huge pages, which the kernel's shmem_enabled
 *	setting honours), "thp-disabled" (the same, but the kernel gives shmem
 *	no huge pages: plain pages) or "dma-buf" (a dma-heap)
 * @granule: sizes are rounded up to a multiple of this: the page size, or
 *	the huge page size for "hugetlb"
 * @pool_max: the pool's limit in bytes (fl_heap_set_pool_max()); 0: no pool
 * @pool_bytes: bytes in ready pooled buffers (not in @allocated)
 * @pool_buffers: ready pooled buffers
 * @pool_pending: buffers asked of the pool's worker and not yet taken in
 * @pool_hits: allocations served from the pool
 * @pool_misses: allocations that found no pooled buffer of their size while
 *	the pool was on
 *
 * A carveout's free bytes are exactly @capacity - @allocated; its
 * fragmentation shows as free bytes well above @largest_free, spread over
 * many @free_blocks.
 */
struct fl_heap_info {
	char name[FL_HEAP_NAME_MAX];
	char kind[FL_HEAP_NAME_MAX];
	uint64_t capacity;
	uint64_t allocated;
	uint64_t peak_allocated;
	uint64_t buffers;
	uint64_t peak_buffers;
	uint64_t allocations;
	uint64_t failures;
	uint64_t free_blocks;
	uint64_t largest_free;
	char backing[FL_HEAP_NAME_MAX];
	uint64_t granule;
	uint64_t pool_max;
	uint64_t pool_bytes;
	uint64_t pool_buffers;
	uint64_t pool_pending;
	uint64_t pool_hits;
	uint64_t pool_misses;
};

/**
 * fl_heap_open_system() - open a system heap: memfds, no fixed capacity
 * @name: the heap's name for its accounting and its buffers' memfd names,
 *	truncated to 31 bytes; NULL gives "system"
 * @ret_heap: on success, the new heap, owned by the caller (fl_heap_close())
 *
 * Each heap opened is an accounting domain of its own.
 * Return: 0, -EINVAL (@ret_heap NULL) or -ENOMEM.
 */
FL_EXPORT int fl_heap_open_system(const char *name, struct fl_heap **ret_heap);

/**
 * fl_heap_open_carveout() - open a carveout heap of a fixed capacity
 * @name: the heap's name, truncated to 31 bytes; NULL gives "carveout"
 * @size: the capacity in bytes, rounded up to whole pages
 * @ret_heap: on success, the new heap, owned by the caller (fl_heap_close())
 *
 * Buffers are carved from [0, @size) by best fit (the smallest free block
 * that is large enough, the lowest such block on a tie), each taking whole
 * pages; freeing a buffer merges its range with free neighbours. Finding
 * and returning a block is O(log n) in the number of free blocks. When no
 * block is large enough, fl_heap_alloc() first takes back the ranges of
 * buffers that nobody holds any more (closed without fl_heap_buffer_free(): no
 * fd and no mapping left in any process), which it sees through an
 * inotify watch on each buffer (docs/heap.md, "Reclaim"); the process
 * then has one inotify fd until its last such heap is closed.
 * Return: 0, -EINVAL (@size 0, or @ret_heap NULL) or -ENOMEM (@size too
 * large to round up, or out of memory).
 */
FL_EXPORT int fl_heap_open_carveout(const char *name, size_t size, struct fl_heap **ret_heap);

/**
 * fl_heap_open_system_contig() - open a heap of huge-page buffers
 * @name: the heap's name, truncated to 31 bytes; NULL gives "system-contig"
 * @ret_heap: on success, the new heap, owned by the caller (fl_heap_close())
 *
 * Chosen once, at open, and shown in fl_heap_info.backing:
 *
 * - "hugetlb" when the kernel's pool of default-size huge pages has pages
 *   (vm.nr_hugepages or vm.nr_overcommit_hugepages above 0): buffers are
 *   memfd_create(MFD_HUGETLB) files, sizes rounded up to the huge page
 *   size (fl_heap_info.granule), sealed as other buffers, and their huge
 *   pages reserved by fl_heap_alloc(), which fails with -ENOMEM when the
 *   pool cannot cover the buffer;
 * - otherwise "thp" or "thp-disabled": page-rounded memfds, populated by
 *   fl_heap_alloc() through a mapping advised with MADV_HUGEPAGE, which
 *   gets transparent huge pages where the kernel's
 *   /sys/kernel/mm/transparent_hugepage/shmem_enabled allows them ("thp")
 *   and plain pages where it does not ("thp-disabled").
 *
 * Either way the memory exists when fl_heap_alloc() returns: touching a
 * buffer never faults for want of memory.
 * Return: 0, -EINVAL (@ret_heap NULL) or -ENOMEM.
 */
FL_EXPORT int fl_heap_open_system_contig(const char *name, struct fl_heap **ret_heap);

/**
 * fl_heap_open_dma_heap() - open a heap that passes through to a dma-heap
 * @name: the dma-heap's name, a file in /dev/dma_heap (or in the directory
 *	that the environment variable FENCELINE_DMA_HEAP_DIR names), such as
 *	"system" or "linux,cma"; also the heap's name
 * @ret_heap: on success, the new heap, owned by the caller (fl_heap_close())
 *
 * Buffers are dma-bufs from DMA_HEAP_IOCTL_ALLOC, page-rounded. They are
 * not sealed (dma-bufs cannot be), but their size is fixed at allocation
 * and no holder can change it. The heap keeps the device open until
 * fl_heap_close().
 * Return: 0; -EINVAL (@name NULL, empty, ".", ".." or with a '/'; @ret_heap
 * NULL); -ENODEV (no such dma-heap, or the file is not a dma-heap device:
 * with FENCELINE_DEBUG=heap, a line on stderr says which); -EPERM (not
 * allowed to open the device); -EMFILE or -ENOMEM.
 */
FL_EXPORT int fl_heap_open_dma_heap(const char *name, struct fl_heap **ret_heap);

/**
 * fl_heap_for_each_dma_heap() - list the dma-heaps the kernel has
 * @fn: called with each dma-heap's name (valid during the call), in name
 *	order; returning nonzero stops the walk
 * @data: passed to @fn
 *
 * Looks in /dev/dma_heap, or FENCELINE_DMA_HEAP_DIR if set, for character
 * devices that belong to the kernel's dma_heap class; other files are
 * skipped. A missing directory means none.
 * Return: the number of names passed to @fn; -EINVAL (@fn NULL); -EPERM
 * (the directory cannot be read); -ENOMEM or -EMFILE.
 */
FL_EXPORT int fl_heap_for_each_dma_heap(int (*fn)(const char *name, void *data), void *data);

/**
 * fl_heap_close() - close a heap
 * @heap: the heap, owned by the caller; NULL does nothing
 *
 * The heap forgets its buffers without touching them: fds of buffers that
 * were never freed stay valid, owned by whoever holds them. Do not call
 * this while another thread still uses @heap.
 */
FL_EXPORT void fl_heap_close(struct fl_heap *heap);

/**
 * fl_heap_alloc() - allocate a zero-filled buffer as a sealed memfd
 * @heap: the heap (borrowed)
 * @len: the buffer's size in bytes, rounded up to whole pages
 * @flags: FL_HEAP_FLAG_CACHED and FL_HEAP_FLAG_NEEDS_SYNC, or 0;
 *	recorded with the buffer
 * @ret_fd: on success, the buffer's fd (O_CLOEXEC), owned by the caller
 *
 * The fd's size is @len rounded up to the heap's granule (the page size,
 * or the huge page size of a "hugetlb" heap), and a memfd is sealed
 * against shrinking, growing and further sealing; it stays writable. A
 * dma-buf is not sealed, but cannot be resized. If the heap has a pool with
 * a ready buffer of that size, the buffer comes from there. Give the
 * buffer back with fl_heap_buffer_free().
 * Return: 0; -EINVAL (@heap or @ret_fd NULL, @len 0, an unknown @flags bit);
 * -ENOMEM (a carveout has no free block large enough, even after taking
 * back the ranges of buffers nobody holds, @len is too large, or the
 * kernel is out of memory); -EMFILE (out of fds). A failed
 * allocation leaves the heap as it was.
 */
FL_EXPORT int fl_heap_alloc(struct fl_heap *heap, size_t len, unsigned int flags, int *ret_fd);

/**
 * fl_heap_buffer_free() - give a buffer back to its heap and close the fd
 * @heap: the heap that allocated the buffer (borrowed)
 * @fd: any fd of the buffer; closed on success
 *
 * The buffer stops counting against @heap, and a carveout's range becomes
 * free for the next allocation. Other fds and mappings of the buffer stay
 * valid (their memory is the buffer's own, never handed out again).
 * With a pool on, @fd goes to the pool's worker process, whose close is
 * the last one (deferred freeing: the kernel frees the pages there, not
 * here); the pool keeps up to 16 freed fds, holding at most 4 MiB of
 * written pages, until its next message to the worker, and
 * fl_heap_close() closes what is still waiting. Either way the caller must
 * not use @fd again.
 * Return: 0; -EINVAL (@heap NULL, or @fd is no live buffer of @heap: it
 * stays open); -EBADF (@fd is not an open fd).
 */
FL_EXPORT int fl_heap_buffer_free(struct fl_heap *heap, int fd);

/**
 * fl_heap_free() - the old name of fl_heap_buffer_free()
 * @heap: the heap that allocated the buffer (borrowed)
 * @fd: any fd of the buffer; closed on success
 *
 * Deprecated: the name said it frees the heap, but it frees a buffer (the
 * heap goes with fl_heap_close()). The same function as
 * fl_heap_buffer_free(), exported under this name too; the next release
 * still has it, the one after drops it (docs/changelog.md).
 * Return: as fl_heap_buffer_free().
 */
FL_EXPORT int fl_heap_free(struct fl_heap *heap, int fd)
	FL_DEPRECATED("fl_heap_free() frees a buffer: use fl_heap_buffer_free()");

/**
 * fl_heap_buffer_get_flags() - the flags a live buffer was allocated with
 * @heap: the heap that allocated the buffer (borrowed)
 * @fd: any fd of the buffer (borrowed)
 * @ret_flags: on success, the FL_HEAP_FLAG_* bits given to fl_heap_alloc()
 * Return: 0; -EINVAL (@heap or @ret_flags NULL, or @fd is no live buffer of
 * @heap); -EBADF (@fd is not an open fd).
 */
FL_EXPORT int fl_heap_buffer_get_flags(struct fl_heap *heap, int fd, unsigned int *ret_flags);

/**
 * fl_heap_set_pool_max() - turn a heap's pool on, resize it or turn it off
 * @heap: the heap (borrowed)
 * @max_bytes: the most bytes the pool may hold in ready buffers; 0 turns
 *	the pool off. A heap starts with the value of the environment variable
 *	FENCELINE_HEAP_POOL_MAX (bytes, read at each open), or 0.
 *
 * With a pool, fl_heap_buffer_free() of a buffer of size S keeps S in stock: up
 * to 32 buffers of size S, ready or on their way, as long as the pool stays
 * within @max_bytes, 64 buffers and 8 distinct sizes. Once a quarter is
 * missing, the pool asks its worker process for it (the first free
 * starts it: a posix_spawn() of fl-heap-worker, which detaches, so the
 * program never reaps it or gets a SIGCHLD for it). fl_heap_alloc() of
 * size S takes a ready one without a syscall, or, while some are on their
 * way, takes in what the worker has sent (nonblocking recvmsg()s). A size that does
 * not fit @max_bytes is never made ahead, but its freed buffers still go to
 * the worker. A pooled buffer costs its fd in this process, and, for
 * "hugetlb" and "thp" heaps, its memory, reserved or populated. Lowering
 * the limit closes pooled buffers until the pool fits. If the worker
 * cannot start or goes away, the pool makes nothing ahead from then on and
 * fl_heap_buffer_free() closes at once (FENCELINE_DEBUG=heap says why). In the
 * child of a fork(), the first call drops the parent's pooled buffers
 * (they are the parent's to hand out) and the child gets a worker of its
 * own.
 *
 * A pool measures, per size, whether it pays on this machine (the program's
 * pace in windows of allocations taken by turns pooled and bare; one
 * allocation in eight stays bare while a size is pooled, the price of
 * knowing) and stops pooling a size that does not: its ready
 * buffers are closed, and its allocations are made, and its frees closed,
 * by the caller, as without a pool, until the size is tried again.
 * fl_heap_print() and fl_heap_print_json() say which sizes are pooled and
 * why (docs/heap.md, "Pools that pay or step aside"; FENCELINE_HEAP_POOL_COST
 * fixes the costs for tests).
 * Return: 0, -EINVAL (@heap NULL).
 */
FL_EXPORT int fl_heap_set_pool_max(struct fl_heap *heap, uint64_t max_bytes);

/**
 * fl_heap_buffer_begin_cpu_access() - bracket CPU access to a buffer: start
 * @fd: an fd of the buffer (borrowed): a dma-buf, or a memfd or other
 *	tmpfs or hugetlbfs file
 * @dir: FL_HEAP_SYNC_READ, FL_HEAP_SYNC_WRITE or FL_HEAP_SYNC_RW
 *
 * For a dma-buf, DMA_BUF_IOCTL_SYNC with DMA_BUF_SYNC_START: the exporter
 * makes the memory coherent for the CPU (e.g. invalidates caches after a
 * device wrote). For memfd memory there is nothing to do (CPU-cached,
 * coherent, no device between), whatever the buffer's flags: the call only
 * checks its arguments, so code written for dma-bufs runs unchanged.
 * Return: 0; -EINVAL (@dir 0 or with unknown bits); -EBADF (@fd not open);
 * -ENOTTY (@fd is open but neither a dma-buf nor memory-backed); or the
 * dma-buf exporter's error.
 */
FL_EXPORT int fl_heap_buffer_begin_cpu_access(int fd, unsigned int dir);

/**
 * fl_heap_buffer_end_cpu_access() - bracket CPU access to a buffer: end
 * @fd: as for fl_heap_buffer_begin_cpu_access()
 * @dir: the direction given to the matching begin
 *
 * For a dma-buf, DMA_BUF_IOCTL_SYNC with DMA_BUF_SYNC_END (e.g. writes the
 * CPU's caches back before a device reads); for memfd memory, checks only.
 * Return: as fl_heap_buffer_begin_cpu_access().
 */
FL_EXPORT int fl_heap_buffer_end_cpu_access(int fd, unsigned int dir);

struct fl_fence;

/**
 * fl_heap_buffer_export_fence() - a dma-buf's implicit fences as one
 * fenceline fence (DMA_BUF_IOCTL_EXPORT_SYNC_FILE, Linux 6.0)
 * @dmabuf_fd: the buffer (borrowed): a dma-buf
 * @dir: what the caller is about to do: FL_HEAP_SYNC_READ gives a fence
 *	that signals when every writer of the buffer is done (what a reader
 *	waits for), FL_HEAP_SYNC_WRITE (or RW) one that also waits for the
 *	readers (what a writer waits for)
 * @name: the fence's name (NULL: "implicit")
 * @ret_fence: the fence, the caller's: it completes with the kernel's
 *	fences (fl_sync_file_import(); already signalled when the buffer is
 *	idle)
 *
 * For producers and consumers that only know implicit sync (a GPU driver
 * that fences its dma-bufs itself): their work becomes an explicit fence
 * that a buffer queue or the display can wait for (docs/heap.md,
 * "Implicit fences").
 * Return: 0; -EINVAL (@dir 0 or unknown bits, NULL @ret_fence); -EBADF
 * (@dmabuf_fd not open); -EOPNOTSUPP (not a dma-buf, e.g. a memfd, which
 * has no implicit fences; or a kernel older than 6.0); the kernel's and
 * fl_sync_file_import()'s errors.
 */
FL_EXPORT int fl_heap_buffer_export_fence(int dmabuf_fd, unsigned int dir, const char *name,
					  struct fl_fence **ret_fence);

/**
 * fl_heap_buffer_export_fence_fd() - fl_heap_buffer_export_fence() as a
 * fence fd (<fenceline/shared.h>: fl_fence_fd_import() of the kernel's
 * sync_file)
 * @ret_fd: the fence fd, the caller's
 * Return: as fl_heap_buffer_export_fence(), and fl_fence_fd_import()'s
 * errors.
 */
FL_EXPORT int fl_heap_buffer_export_fence_fd(int dmabuf_fd, unsigned int dir, const char *name,
					     int *ret_fd);

/**
 * fl_heap_buffer_import_sync_file() - make a dma-buf's implicit sync wait
 * for a kernel fence (DMA_BUF_IOCTL_IMPORT_SYNC_FILE, Linux 6.0)
 * @dmabuf_fd: the buffer (borrowed): a dma-buf
 * @dir: FL_HEAP_SYNC_READ adds @sync_file_fd's fence as a reader (later
 *	writers wait for it); FL_HEAP_SYNC_WRITE (or RW) as a writer
 *	(everyone after waits for it: a producer's explicit render fence,
 *	for a consumer that only knows implicit sync)
 * @sync_file_fd: a kernel sync_file (borrowed). The kernel takes only its
 *	own fences: a fenceline fence made in userspace cannot be attached
 *	(its fd is no sync_file: -EINVAL from the kernel)
 * Return: 0; -EINVAL (@dir, or @sync_file_fd not a sync_file); -EBADF
 * (an fd not open); -EOPNOTSUPP (not a dma-buf, or a kernel older than
 * 6.0); the kernel's errors (-ENOMEM).
 */
FL_EXPORT int fl_heap_buffer_import_sync_file(int dmabuf_fd, unsigned int dir, int sync_file_fd);

/**
 * fl_heap_get_info() - a heap's name, kind and accounting
 * @heap: the heap (borrowed)
 * @ret_info: filled on success
 *
 * One consistent snapshot, taken under the heap's lock.
 * Return: 0, or -EINVAL (@heap or @ret_info NULL).
 */
FL_EXPORT int fl_heap_get_info(struct fl_heap *heap, struct fl_heap_info *ret_info);

/**
 * fl_heap_print() - write a heap's accounting, buffers and free blocks
 * @heap: the heap (borrowed)
 * @out: the stream (borrowed), e.g. stderr
 *
 * Like ION's debugfs heap files: the accounting of fl_heap_get_info(),
 * then one line per live buffer (its inode, as ``stat -L`` shows it for
 * /proc/PID/fd/N, its offset in a carveout or "-", and its size), then, for
 * a carveout, one line per free block in address order. For people, not
 * parsers (fl_heap_print_json() is for them): the format may change.
 * Return: 0, -EINVAL (@heap or @out NULL), -ENOMEM or -EIO.
 */
FL_EXPORT int fl_heap_print(struct fl_heap *heap, FILE *out);

/**
 * fl_heap_print_json() - write a heap's accounting as one JSON object
 * @heap: the heap (borrowed)
 * @out: the stream (borrowed)
 *
 * The same snapshot as fl_heap_print(), as one JSON object and a newline;
 * the schema is in docs/heap.md ("Accounting as JSON") and only grows.
 * Return: 0, -EINVAL (@heap or @out NULL), -ENOMEM or -EIO.
 */
FL_EXPORT int fl_heap_print_json(struct fl_heap *heap, FILE *out);

FL_END_DECLS

#endif /* FENCELINE_HEAP_H */

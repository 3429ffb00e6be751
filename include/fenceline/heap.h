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
 * Two kinds of heap exist so far (docs/heap.md has the design and what is
 * still to come):
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
 *
 * Ownership: fl_heap_alloc() returns an fd that the caller owns. The heap
 * keeps a record of the buffer, found again by the fd's inode, so any fd of
 * the buffer (a dup(), one received from another process) identifies it.
 * Give a buffer back with fl_heap_free(), which forgets the record,
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

/**
 * struct fl_heap_info - a heap's accounting, filled by fl_heap_get_info()
 * @name: the heap's name, NUL-terminated
 * @kind: the heap's kind, "system" or "carveout"
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
 * and returning a block is O(log n) in the number of free blocks.
 * Return: 0, -EINVAL (@size 0, or @ret_heap NULL) or -ENOMEM (@size too
 * large to round up, or out of memory).
 */
FL_EXPORT int fl_heap_open_carveout(const char *name, size_t size, struct fl_heap **ret_heap);

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
 * @flags: reserved, must be 0
 * @ret_fd: on success, the buffer's fd (O_CLOEXEC), owned by the caller
 *
 * The fd's size is @len rounded up to the page size, and it is sealed
 * against shrinking, growing and further sealing; it stays writable. Give
 * the buffer back with fl_heap_free().
 * Return: 0; -EINVAL (@heap or @ret_fd NULL, @len 0, @flags not 0);
 * -ENOMEM (a carveout has no free block large enough, @len is too large,
 * or the kernel is out of memory); -EMFILE (out of fds). A failed
 * allocation leaves the heap as it was.
 */
FL_EXPORT int fl_heap_alloc(struct fl_heap *heap, size_t len, unsigned int flags, int *ret_fd);

/**
 * fl_heap_free() - give a buffer back to its heap and close the fd
 * @heap: the heap that allocated the buffer (borrowed)
 * @fd: any fd of the buffer; closed on success
 *
 * The buffer stops counting against @heap, and a carveout's range becomes
 * free for the next allocation. Other fds and mappings of the buffer stay
 * valid (their memory is the buffer's own, never handed out again).
 * Return: 0; -EINVAL (@heap NULL, or @fd is no live buffer of @heap: it
 * stays open); -EBADF (@fd is not an open fd).
 */
FL_EXPORT int fl_heap_free(struct fl_heap *heap, int fd);

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
 * parsers: the format may change.
 * Return: 0, -EINVAL (@heap or @out NULL), -ENOMEM or -EIO.
 */
FL_EXPORT int fl_heap_print(struct fl_heap *heap, FILE *out);

FL_END_DECLS

#endif /* FENCELINE_HEAP_H */

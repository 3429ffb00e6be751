/* SPDX-License-Identifier: MIT */
/**
 * DOC: heap-daemon - buffers allocated by fencelined
 *
 * The daemon (docs/daemon.md) owns heaps of its own, opened when it
 * starts: a system heap ("system", ION id 0) and a carveout ("carveout",
 * ION id 2, `--carveout-mb`, default 64 MiB). These calls ask it for a
 * buffer and receive the buffer's fd, so a process needs no permission
 * beyond its daemon socket. The buffer is the same sealed, zero-filled
 * memfd that fl_heap_alloc() makes (<fenceline/heap.h>).
 *
 * **Who pays.** A buffer counts against this process's connection to the
 * daemon from its allocation until the process frees it with
 * fl_heap_daemon_buffer_free() (or fl_heap_daemon_group_free()) or the
 * connection ends: the process exits or dies, or calls
 * fl_daemon_disconnect() (<fenceline/shared.h>). A fork()ed child has a
 * connection of its own, so it cannot free its parent's buffers.
 * The daemon may limit the bytes one connection holds (`--heap-limit-mb`):
 * an allocation beyond it fails with -ENOMEM, and the daemon logs which
 * client, heap, limit and request it refused. This library logs nothing.
 *
 * **close() is not free.** The daemon keeps an fd of every buffer until it
 * is freed (docs/heap.md, "Through the daemon", says why), so a buffer's
 * memory and a carveout's range stay taken until then, however many fds
 * were closed. After the free, fds and mappings elsewhere stay valid, as a
 * dma-buf outlives ion_free(): a buffer's memory is a file of its own.
 *
 * These calls always use the daemon, whatever fl_mode_set() chose for
 * timelines; they start one if none runs. Threads: any thread.
 *
 * Errors: each call may return the daemon errors of <fenceline/fenceline.h>
 * (``-ECONNREFUSED``, ``-ECONNRESET``, ``-ETIMEDOUT``, ``-EPROTO``...)
 * besides those its own documentation names.
 */
#ifndef FENCELINE_HEAP_DAEMON_H
#define FENCELINE_HEAP_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

/** The daemon's heaps, by name. */
#define FL_HEAP_DAEMON_SYSTEM	"system"
#define FL_HEAP_DAEMON_CARVEOUT "carveout"

/**
 * fl_heap_daemon_alloc() - allocate a buffer from one of the daemon's heaps
 * @heap: the heap's name (%FL_HEAP_DAEMON_SYSTEM, %FL_HEAP_DAEMON_CARVEOUT)
 * @size: the buffer's size in bytes, rounded up to whole pages
 * @flags: the heap's flags, as fl_heap_alloc() takes them (0 for now)
 * @ret_fd: on success, the buffer's fd (O_CLOEXEC), owned by the caller
 *
 * Return: 0; -EINVAL (@heap or @ret_fd NULL, @heap empty, @size 0, or
 * @flags the heap refuses); -ENODEV (the daemon has no heap of that name);
 * -ENOMEM (over this process's limit, the carveout has no free block large
 * enough, @size too large, or the daemon is out of memory); -EMFILE (this
 * process or the daemon is out of fds, or this connection holds 65536
 * buffers); a connection error (fl_daemon_connect()).
 */
FL_EXPORT int fl_heap_daemon_alloc(const char *heap, size_t size, unsigned int flags, int *ret_fd);

/**
 * fl_heap_daemon_alloc_group() - fl_heap_daemon_alloc(), tagged with @group
 * @group: from fl_heap_daemon_group_new(), or 0 for no group
 *
 * fl_heap_daemon_group_free() frees all buffers of a group at once, with
 * no fd of them: for users who only ever close() their buffers, as
 * libion's do (ion_close() frees its client's group).
 * Return: as fl_heap_daemon_alloc().
 */
FL_EXPORT int fl_heap_daemon_alloc_group(const char *heap, size_t size, unsigned int flags,
					 uint32_t group, int *ret_fd);

/**
 * fl_heap_daemon_buffer_free() - give a buffer back to the daemon and close @fd
 * @fd: any fd of a buffer this process allocated through the daemon (a
 *	dup, or one that came back from another process); closed on success
 *
 * The buffer stops counting against this process, a carveout range
 * becomes free, and the daemon closes its fd of it.
 * Return: 0; -EBADF (@fd is not open); -EINVAL (@fd is no live buffer of
 * this process's connection: never allocated through it, freed already,
 * or its connection ended; @fd stays open); a connection error.
 */
FL_EXPORT int fl_heap_daemon_buffer_free(int fd);

/**
 * fl_heap_daemon_free() - the old name of fl_heap_daemon_buffer_free()
 * @fd: as fl_heap_daemon_buffer_free()
 *
 * Deprecated: it frees a buffer, not the daemon's heap. The same function
 * as fl_heap_daemon_buffer_free(), exported under this name too; the next
 * release drops it.
 * Return: as fl_heap_daemon_buffer_free().
 */
FL_EXPORT int fl_heap_daemon_free(int fd)
	FL_DEPRECATED("fl_heap_daemon_free() frees a buffer: use fl_heap_daemon_buffer_free()");

/**
 * fl_heap_daemon_group_new() - a group tag no other caller in this
 * process gets (until 2^32 - 1 more were made)
 * @ret_group: the tag, never 0
 *
 * Return: 0, or -EINVAL (@ret_group NULL).
 */
FL_EXPORT int fl_heap_daemon_group_new(uint32_t *ret_group);

/**
 * fl_heap_daemon_group_free() - free every buffer of @group this process
 * allocated through its connection
 * @group: not 0
 *
 * A group with no live buffers is not an error.
 * Return: how many buffers were freed (>= 0); -EINVAL (@group 0); a
 * connection error.
 */
FL_EXPORT int fl_heap_daemon_group_free(uint32_t group);

/**
 * fl_heap_daemon_free_group() - the old name of fl_heap_daemon_group_free()
 * @group: as fl_heap_daemon_group_free()
 *
 * Deprecated: the verb comes first in every other name, and the pair of
 * fl_heap_daemon_group_new() reads better. The same function, exported
 * under this name too; the next release drops it.
 * Return: as fl_heap_daemon_group_free().
 */
FL_EXPORT int fl_heap_daemon_free_group(uint32_t group)
	FL_DEPRECATED("use fl_heap_daemon_group_free()");

/**
 * struct fl_heap_daemon_usage - this process's share of the daemon's heaps
 * @limit: bytes it may hold in all heaps together; 0 for no limit
 * @bytes: bytes in its live buffers (each rounded to whole pages)
 * @buffers: its live buffers
 * @peak_bytes: the highest @bytes has been on this connection
 * @peak_buffers: the highest @buffers has been on this connection
 * @refused: allocations refused for the limit on this connection
 * @heap_capacity: the heap's capacity (0: no fixed capacity, or all heaps)
 * @heap_allocated: bytes in live buffers of the heap, of every client
 * @heap_buffers: live buffers of the heap, of every client
 */
struct fl_heap_daemon_usage {
	uint64_t limit;
	uint64_t bytes;
	uint64_t buffers;
	uint64_t peak_bytes;
	uint64_t peak_buffers;
	uint64_t refused;
	uint64_t heap_capacity;
	uint64_t heap_allocated;
	uint64_t heap_buffers;
};

/**
 * fl_heap_daemon_get_usage() - this process's share of a daemon heap
 * @heap: the heap's name, or NULL for all heaps together (the heap_*
 *	fields are then 0)
 * @ret_usage: filled on success
 *
 * Return: 0; -EINVAL (@ret_usage NULL); -ENODEV (no such heap); a
 * connection error.
 */
FL_EXPORT int fl_heap_daemon_get_usage(const char *heap, struct fl_heap_daemon_usage *ret_usage);

FL_END_DECLS

#endif /* FENCELINE_HEAP_DAEMON_H */

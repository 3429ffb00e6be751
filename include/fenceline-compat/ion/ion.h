/* SPDX-License-Identifier: MIT */
/*
 * fenceline's libion compatibility API, laid out like AOSP's <ion/ion.h>
 * (system/core/libion as of 2019) with the modern (Linux 4.12+) ION uapi
 * types it takes from <linux/ion.h> declared here, because no current kernel
 * ships that header. docs/heap.md ("The libion API") has the design.
 *
 * Every function returns 0 or a negative errno; fds come back through an
 * out-parameter. fenceline behaves as a modern, fd-only ION: ion_is_legacy()
 * is 0, and the legacy handle calls (ion_alloc(), ion_free(), ion_map(),
 * ion_share(), ion_import(), ion_sync_fd()) return -EINVAL, as libion's do
 * on a 4.12+ kernel.
 *
 * The "ION client" that ion_open() returns is a memfd of its own
 * ("/memfd:fl-ion-client" in /proc/PID/fd) that holds no data; the client's
 * heaps belong to that fd's inode. Heaps: "system" (ION_HEAP_TYPE_SYSTEM,
 * heap id 0), "system-contig" (ION_HEAP_TYPE_SYSTEM_CONTIG, id 1, huge
 * pages), "carveout" (ION_HEAP_TYPE_CARVEOUT, heap id 2, the first of
 * Android's reserved carveout ids), FENCELINE_ION_CARVEOUT_MB MiB (default
 * 64) per client, and each dma-heap the kernel has in /dev/dma_heap, at ids
 * 8-15 in name order (ION_HEAP_TYPE_DMA, or _SYSTEM for "system*").
 * Buffers are sealed, zero-filled memfds (dma-bufs from a dma-heap) from the
 * native heaps (<fenceline/heap.h>). A buffer fd is released with close();
 * its carveout range comes back once nobody holds the buffer (no fd, no
 * mapping, in any process) and the carveout is full, or when its client is
 * closed with ion_close().
 */
#ifndef FENCELINE_COMPAT_ION_ION_H
#define FENCELINE_COMPAT_ION_ION_H

#include <stddef.h>
#include <sys/types.h>

#include <linux/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The uapi part, as in <linux/ion.h> (ion_4.12.h); skipped if that was included first. */
#if !defined(_UAPI_LINUX_ION_H) && !defined(_UAPI_LINUX_ION_NEW_H)
#define _UAPI_LINUX_ION_H
#define _UAPI_LINUX_ION_NEW_H

typedef int ion_user_handle_t;

enum ion_heap_type {
	ION_HEAP_TYPE_SYSTEM,
	ION_HEAP_TYPE_SYSTEM_CONTIG,
	ION_HEAP_TYPE_CARVEOUT,
	ION_HEAP_TYPE_CHUNK,
	ION_HEAP_TYPE_DMA,
	ION_HEAP_TYPE_CUSTOM, /* must be last: device-specific heaps follow it */
};

#define ION_NUM_HEAP_IDS (sizeof(unsigned int) * 8)

/* Masks of the legacy header: right only where heap id == heap type. */
#define ION_HEAP_SYSTEM_MASK	    (1 << ION_HEAP_TYPE_SYSTEM)
#define ION_HEAP_SYSTEM_CONTIG_MASK (1 << ION_HEAP_TYPE_SYSTEM_CONTIG)
#define ION_HEAP_CARVEOUT_MASK	    (1 << ION_HEAP_TYPE_CARVEOUT)
#define ION_HEAP_TYPE_DMA_MASK	    (1 << ION_HEAP_TYPE_DMA)

/* CPU mappings are cached (memfd memory always is); passed on to the heap. */
#define ION_FLAG_CACHED 1
/* Legacy: cached, and the user syncs explicitly; passed on to the heap. */
#define ION_FLAG_CACHED_NEEDS_SYNC 2

#define MAX_HEAP_NAME		   32

/**
 * struct ion_heap_data - one heap, as ion_query_get_heaps() reports it
 * @name: the heap's name, NUL-terminated
 * @type: its enum ion_heap_type
 * @heap_id: its id; bit (1 << @heap_id) selects it in a heap mask
 * @reserved0: 0
 * @reserved1: 0
 * @reserved2: 0
 */
struct ion_heap_data {
	char name[MAX_HEAP_NAME];
	__u32 type;
	__u32 heap_id;
	__u32 reserved0;
	__u32 reserved1;
	__u32 reserved2;
};

#endif /* !_UAPI_LINUX_ION_H */

/* Open an ION client: returns its fd (O_CLOEXEC) or -errno (-EMFILE, -ENOMEM). */
int ion_open(void);

/* Close a client fd, forgetting the client's heaps: 0, or -EBADF. */
int ion_close(int fd);

/*
 * Allocate a buffer of @len bytes (rounded up to pages) from the first heap,
 * highest heap id first, in @heap_mask that can hold it; @align is ignored
 * (as by modern ION); ION_FLAG_CACHED and ION_FLAG_CACHED_NEEDS_SYNC in
 * @flags are recorded with the buffer (fl_heap_buffer_get_flags()), other
 * (vendor) bits dropped, as ION's heaps ignore bits they do not know. On success *@handle_fd is
 * the buffer's fd (O_CLOEXEC, sealed size, zero-filled), owned by the
 * caller. Returns 0; -EINVAL (@handle_fd NULL, @len 0 or too large to round
 * up, @fd no ION client); -EBADF (@fd not open); -ENODEV (no heap in
 * @heap_mask); else the error of the last heap tried (-ENOMEM, -EMFILE).
 */
int ion_alloc_fd(int fd, size_t len, size_t align, unsigned int heap_mask, unsigned int flags,
		 int *handle_fd);

/* The number of heaps in *@cnt: 0, -EINVAL (@cnt NULL, @fd no client) or -EBADF. */
int ion_query_heap_cnt(int fd, int *cnt);

/*
 * Fill up to @cnt struct ion_heap_data at @buffers, highest heap id first.
 * @buffers NULL asks only for the count, which is not returned (as libion,
 * whose ioctl writes it into a struct it drops): returns 0. Returns 0,
 * -EINVAL (@cnt negative, @fd no client) or -EBADF.
 */
int ion_query_get_heaps(int fd, int cnt, void *buffers);

/* 0 (false): fenceline is a modern (4.12+, fd-only) ION, whatever @fd is. */
int ion_is_legacy(int fd);

/* 0: no modular heaps (ION_IOC_ABI_VERSION < 2). */
int ion_is_using_modular_heaps(int fd);

/* Legacy handle calls: -EINVAL, as libion's on a modern kernel. */
int ion_alloc(int fd, size_t len, size_t align, unsigned int heap_mask, unsigned int flags,
	      ion_user_handle_t *handle);
int ion_free(int fd, ion_user_handle_t handle);
int ion_map(int fd, ion_user_handle_t handle, size_t length, int prot, int flags, off_t offset,
	    unsigned char **ptr, int *map_fd);
int ion_share(int fd, ion_user_handle_t handle, int *share_fd);
int ion_import(int fd, int share_fd, ion_user_handle_t *handle);
int ion_sync_fd(int fd, int handle_fd);

#ifdef __cplusplus
}
#endif

#endif /* FENCELINE_COMPAT_ION_ION_H */

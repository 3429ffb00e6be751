/* SPDX-License-Identifier: MIT */
/**
 * DOC: libsync legacy info API
 *
 * The deprecated libsync calls that return a fence's details in the layout
 * of the era-A kernel's SYNC_IOC_FENCE_INFO ioctl: a 4096-byte block holding
 * a struct sync_fence_info_data header followed by packed struct
 * sync_pt_info entries, each @len bytes long (80 plus its driver data;
 * sw_sync points carry 4 bytes of driver data, their 32-bit value).
 *
 * libfenceline exports these symbols for programs written against old
 * libsync. The compat headers (<android/sync.h> and friends) do not declare
 * them, because current Android does not either and its tests declare them
 * on their own; new code that needs them includes this header instead.
 * Everything here is also available, in a better shape, from
 * fl_fence_get_info() or sync_file_info().
 */
#ifndef FENCELINE_LIBSYNC_LEGACY_H
#define FENCELINE_LIBSYNC_LEGACY_H

#include <stdint.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

/**
 * struct sync_fence_info_data - header of a legacy fence info block
 * @len: bytes used in the block, header included
 * @name: the fence's name, NUL-terminated
 * @status: 0 active, 1 signalled, < 0 the error (the status of the first
 *	entry whose status is <= 0, else 1)
 * @pt_info: the packed struct sync_pt_info entries
 */
struct sync_fence_info_data {
	uint32_t len;
	char name[32];
	int32_t status;
	uint8_t pt_info[];
};

/**
 * struct sync_pt_info - one sync point of a legacy fence info block
 * @len: bytes of this entry, driver data included (80 + driver data)
 * @obj_name: name of the point's timeline
 * @driver_name: name of the timeline's driver
 * @status: 0 active, 1 signalled, < 0 the error
 * @timestamp_ns: CLOCK_MONOTONIC time of the status change, 0 while active
 * @driver_data: @len - 80 bytes written by the timeline's driver
 */
struct sync_pt_info {
	uint32_t len;
	char obj_name[32];
	char driver_name[32];
	int32_t status;
	uint64_t timestamp_ns;
	uint8_t driver_data[];
};

/**
 * sync_fence_info() - legacy details of a fence fd
 * @fd: the fence fd (borrowed): a fenceline fence fd of this process or a
 *	kernel sync_file
 *
 * The block is 4096 bytes; a fence whose entries do not all fit fails with
 * ENOMEM (no partial results, like the kernel ioctl).
 * Return: a new block owned by the caller, to release with
 * sync_fence_info_free(); or NULL with errno set (EBADF, ENOTTY if @fd is
 * not a fence, ENOMEM).
 */
FL_EXPORT struct sync_fence_info_data *sync_fence_info(int fd);

/**
 * sync_pt_info() - iterate over the entries of a legacy fence info block
 * @info: the block (borrowed)
 * @itr: the previous entry, or NULL to get the first one
 * Return: the next entry, a pointer into @info; NULL after the last one, or
 * if @info is NULL.
 */
FL_EXPORT struct sync_pt_info *sync_pt_info(struct sync_fence_info_data *info,
					    struct sync_pt_info *itr);

/**
 * sync_fence_info_free() - release a sync_fence_info() block
 * @info: the block; may be NULL
 *
 * Ownership: consumes @info.
 */
FL_EXPORT void sync_fence_info_free(struct sync_fence_info_data *info);

FL_END_DECLS

#endif /* FENCELINE_LIBSYNC_LEGACY_H */

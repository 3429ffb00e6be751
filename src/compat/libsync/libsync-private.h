/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the modern and the legacy info calls of the libsync
 * compat layer. The layer uses only the public API: a fence fd is either a
 * fenceline fence fd (fl_fence_from_fd() finds the fence) or something else,
 * which is handed to the kernel's sync_file ioctls like libsync would.
 */
#ifndef FL_COMPAT_LIBSYNC_PRIVATE_H
#define FL_COMPAT_LIBSYNC_PRIVATE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <fenceline/fence.h>

struct sync_file_info;

/*
 * struct fl__libsync_snapshot - one consistent reading of a fenceline fence
 * @fence: a reference on the fence
 * @info: its summary
 * @points: @info.num_points entries, from the same fl_fence_get_info() call
 * @status: the status as the kernel's FILE_INFO reports it once it has
 *	filled the entries: the first entry whose status is <= 0, else 1
 */
struct fl__libsync_snapshot {
	struct fl_fence *fence;
	struct fl_fence_info info;
	struct fl_sync_pt_info *points;
	int32_t status;
};

/*
 * Fill @snap from the fenceline fence behind @fd. Returns 0, -EBADF (not
 * open), -ENOTTY (not a fenceline fence of this process) or -ENOMEM; @snap
 * needs fl__libsync_snapshot_finish() only on success.
 */
int fl__libsync_snapshot_init(struct fl__libsync_snapshot *snap, int fd);
void fl__libsync_snapshot_finish(struct fl__libsync_snapshot *snap);

/*
 * SYNC_IOC_FILE_INFO's two-call pattern on a kernel sync_file, into one
 * allocation laid out like sync_file_info()'s. NULL with errno set on failure.
 */
struct sync_file_info *fl__libsync_kernel_file_info(int fd);

/* Copy a name into a fixed uapi array, truncating and always NUL-terminating. */
static inline void fl__libsync_copy_name(char *dst, size_t size, const char *src)
{
	size_t len = strnlen(src, size - 1);

	memcpy(dst, src, len);
	memset(dst + len, 0, size - len);
}

/* libsync reports errors as -1 and errno: turn a negative errno into that. */
static inline int fl__libsync_fail(int neg_errno)
{
	errno = -neg_errno;
	return -1;
}

#endif /* FL_COMPAT_LIBSYNC_PRIVATE_H */

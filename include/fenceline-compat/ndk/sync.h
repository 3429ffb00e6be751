/* SPDX-License-Identifier: MIT */
/*
 * fenceline's libsync compatibility API, NDK part: merging sync files and
 * reading their status. Laid out like Android's <ndk/sync.h>; the structs
 * come from the kernel uapi header <linux/sync_file.h>.
 *
 * A sync file (fence fd) is either a fenceline fence fd or a kernel
 * sync_file fd; every function here accepts both. A fence starts active
 * (status 0) and changes once, to signalled (1) or to an error (< 0).
 * See docs/compat.md for where fenceline differs from a kernel.
 */
#ifndef FENCELINE_COMPAT_NDK_SYNC_H
#define FENCELINE_COMPAT_NDK_SYNC_H

#include <stdint.h>

#include <linux/sync_file.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sync_merge() - a new fence fd that completes when both inputs have
 * @name: name of the new fence (truncated to 31 bytes)
 * @fd1, @fd2: the fences to merge (borrowed; may be the same fd)
 *
 * Returns the new fd (O_CLOEXEC, owned by the caller), or -1 with errno set:
 * ENOENT if @fd2 is not a fence, ENOTTY if @fd1 is not one, EBADF if @fd1 is
 * not open, ENOMEM, EMFILE.
 */
int32_t sync_merge(const char *name, int32_t fd1, int32_t fd2);

/*
 * sync_file_info() - name, status and per-fence details of a sync file
 * @fd: the fence fd (borrowed)
 *
 * Returns one allocation holding the struct followed by num_fences struct
 * sync_fence_info entries (reach them with sync_get_fence_info()); release
 * it with sync_file_info_free(). NULL with errno set on failure.
 */
struct sync_file_info *sync_file_info(int32_t fd);

/* sync_get_fence_info() - the entries that follow a sync_file_info() result */
static inline struct sync_fence_info *sync_get_fence_info(const struct sync_file_info *info)
{
	return (struct sync_fence_info *)(uintptr_t)info->sync_fence_info;
}

/* sync_file_info_free() - release a sync_file_info() result; NULL is fine */
void sync_file_info_free(struct sync_file_info *info);

#ifdef __cplusplus
}
#endif

#endif /* FENCELINE_COMPAT_NDK_SYNC_H */

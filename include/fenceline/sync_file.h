/* SPDX-License-Identifier: MIT */
/**
 * DOC: sync_file - kernel fences as fenceline fences
 *
 * A kernel sync_file fd (from a GPU or display driver, or the kernel's own
 * sw_sync) can be imported: fenceline makes a fence of one point, on a
 * timeline of its own of the "sync_file" driver, that completes when the
 * kernel fence does, with its status (1, or the kernel fence's error). The
 * core watches a copy of the fd, so the import costs no thread and no
 * polling loop, and the fence can then be merged with fenceline fences,
 * waited on and passed around like any other.
 */
#ifndef FENCELINE_SYNC_FILE_H
#define FENCELINE_SYNC_FILE_H

#include <fenceline/export.h>

FL_BEGIN_DECLS

struct fl_fence;

/**
 * fl_sync_file_import() - make a fence that completes with a kernel sync_file
 * @fd: a kernel sync_file fd (borrowed: a copy is taken, and closed once
 *	the kernel fence has signalled)
 * @name: the fence's name, truncated to 31 bytes; NULL or "" gives the
 *	sync_file's own name (SYNC_IOC_FILE_INFO), which also names the
 *	fence's timeline
 * @ret_fence: on success, the new fence, owned by the caller
 *
 * Return: 0; -EBADF (@fd not open); -EINVAL (@fd is not a sync_file, or
 * NULL @ret_fence); -ENOMEM; -EMFILE (no fd left for the copy).
 */
FL_EXPORT int fl_sync_file_import(int fd, const char *name, struct fl_fence **ret_fence);

FL_END_DECLS

#endif /* FENCELINE_SYNC_FILE_H */

/* SPDX-License-Identifier: MIT */
/*
 * fenceline's libsync compatibility API, sw_sync part: software timelines
 * for tests, laid out like Android's libsync <sw_sync.h>. A timeline is an
 * fd; it dies when the last copy of the fd is closed, and every fence still
 * pending on it then completes with -ENOENT.
 */
#ifndef FENCELINE_COMPAT_SW_SYNC_H
#define FENCELINE_COMPAT_SW_SYNC_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sw_sync_timeline_create() - a new timeline at value 0, named after the
 * process (/proc/self/comm)
 *
 * Returns its fd (without FD_CLOEXEC, like libsync's open()), or -1 with
 * errno set.
 */
int sw_sync_timeline_create(void);

/*
 * sw_sync_timeline_inc() - advance a timeline and signal what it passed
 * @fd: the timeline fd
 * @count: the increment (32-bit counter with wrap-around, like the kernel)
 *
 * Returns 0, or -1 with errno set (EBADF, ENOTTY if @fd is not a timeline).
 */
int sw_sync_timeline_inc(int fd, unsigned count);

/*
 * sw_sync_fence_create() - a fence fd that signals when @fd reaches @value
 * @fd: the timeline fd
 * @name: the fence's name (truncated to 31 bytes); NULL gives ""
 * @value: the timeline value to wait for
 *
 * Returns the fence fd (O_CLOEXEC), or -1 with errno set (EBADF, ENOTTY if
 * @fd is not a timeline, ENOMEM, EMFILE).
 */
int sw_sync_fence_create(int fd, const char *name, unsigned value);

#ifdef __cplusplus
}
#endif

#endif /* FENCELINE_COMPAT_SW_SYNC_H */

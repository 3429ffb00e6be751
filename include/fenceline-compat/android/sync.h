/* SPDX-License-Identifier: MIT */
/*
 * fenceline's libsync compatibility API, platform part: everything in
 * <ndk/sync.h> plus sync_wait(). Laid out like Android's <android/sync.h>.
 *
 * The deprecated legacy info calls (sync_fence_info(), sync_pt_info(),
 * sync_fence_info_free()) are exported by libfenceline but deliberately not
 * declared here, as in current Android, whose tests declare them
 * themselves. New code that wants them includes <fenceline/libsync-legacy.h>.
 */
#ifndef FENCELINE_COMPAT_ANDROID_SYNC_H
#define FENCELINE_COMPAT_ANDROID_SYNC_H

#include "../ndk/sync.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sync_wait() - wait until a fence fd is readable (the fence completed)
 * @fd: the fence fd (borrowed); any pollable fd works
 * @timeout: milliseconds; < 0 waits forever, 0 only checks
 *
 * Returns 0 once the fence has completed, successfully or not (use
 * sync_file_info() to learn which), or -1 with errno set: ETIME on timeout,
 * EINVAL if @fd is negative or poll() reports POLLERR/POLLNVAL, or poll()'s
 * own error. Interrupted polls are restarted with the full timeout.
 */
int sync_wait(int fd, int timeout);

#ifdef __cplusplus
}
#endif

#endif /* FENCELINE_COMPAT_ANDROID_SYNC_H */

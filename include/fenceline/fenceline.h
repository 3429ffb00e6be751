/* SPDX-License-Identifier: MIT */
/**
 * DOC: fenceline - explicit synchronization for Linux userspace
 *
 * Umbrella header: include this and you get the whole public API.
 *
 * Conventions that hold for every function unless its own documentation says
 * otherwise:
 *
 * Ownership: pointer and fd arguments are *borrowed* (the callee takes no
 * reference and does not close them). Returned pointers and fds are *new
 * references the caller owns*: release a pointer with its ``_unref`` and an
 * fd with close(). Output parameters are named ``ret_*``, come after the
 * inputs, and are written on success only. fd ownership moves only on
 * success.
 *
 * Errors: functions return ``>= 0`` on success and a negative errno on
 * failure. The vocabulary is fixed:
 *
 * ============== ====================================================
 * ``-EINVAL``    bad argument, or a nonzero reserved field
 * ``-EBADF``     not an open fd
 * ``-ENOTTY``    the fd is open but is not a fenceline fence (or buffer)
 * ``-ETIME``     a wait timed out (libsync's code)
 * ``-ENOENT``    timeline gone, or the fence already signalled on
 *                fl_fence_add_callback()
 * ``-EMFILE``    out of file descriptors
 * ``-ENOMEM``    out of memory
 * ``-EPERM``     not your timeline, or no permission for a device
 * ``-ENODEV``    no such device (a dma-heap the kernel does not have)
 * ============== ====================================================
 *
 * Heap tables (heap-table.h) add ``-ENODEV`` (no such device, or no heap
 * for it), ``-E2BIG`` (larger than a constraint allows), and, from their
 * loaders, ``-EFBIG`` and the errors of open() and read().
 *
 * Threads: every function may be called from any thread at any time, unless
 * its documentation restricts it. Callbacks run in the thread that signals
 * the timeline, with no fenceline lock held.
 */
#ifndef FENCELINE_FENCELINE_H
#define FENCELINE_FENCELINE_H

#define FL_VERSION_MAJOR 0
#define FL_VERSION_MINOR 1
#define FL_VERSION_MICRO 0

#include <fenceline/debug.h>
#include <fenceline/fd.h>
#include <fenceline/fence.h>
#include <fenceline/heap-daemon.h>
#include <fenceline/heap-table.h>
#include <fenceline/heap.h>
#include <fenceline/shared.h>
#include <fenceline/sw_sync.h>
#include <fenceline/sync_file.h>
#include <fenceline/timeline.h>
#include <fenceline/transfer.h>

#endif /* FENCELINE_FENCELINE_H */

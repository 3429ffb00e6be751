/* SPDX-License-Identifier: MIT */
/**
 * DOC: debug dump
 *
 * A text dump of every live timeline (name, driver, current value, pending
 * points) and every live fence (name, status, and for each point its
 * timeline, value, status and timestamp), in the spirit of the kernel's
 * sync debugfs file. The same text is written to stderr when a blocking
 * fl_fence_wait() with a positive timeout times out, unless the environment
 * variable FENCELINE_DUMP_ON_TIMEOUT is set to 0.
 *
 * Layout (one block per object; statuses are "active", "signaled" or
 * "error <errno name>"; timestamps are CLOCK_MONOTONIC seconds)::
 *
 *   timelines:
 *   --------------
 *   gpu sw_sync: 41 (2 pending)
 *     pt 42 active
 *     pt 43 active
 *
 *   fences:
 *   --------------
 *   frame-12: active
 *     gpu_pt 42 / 41 active
 *     display_pt 12 / 12 signaled @1234.000567890
 */
#ifndef FENCELINE_DEBUG_H
#define FENCELINE_DEBUG_H

#include <stddef.h>
#include <stdio.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

/**
 * fl_debug_dump() - the dump of all live timelines and fences, as text
 * @ret_text: on success, a NUL-terminated string the caller frees with free()
 * @ret_len: on success, its length without the NUL; may be NULL
 * Return: 0, -EINVAL or -ENOMEM.
 */
FL_EXPORT int fl_debug_dump(char **ret_text, size_t *ret_len);

/**
 * fl_debug_print() - write the dump to a stdio stream
 * @out: the stream (borrowed), e.g. stderr
 * Return: 0, -EINVAL, -ENOMEM or -EIO.
 */
FL_EXPORT int fl_debug_print(FILE *out);

FL_END_DECLS

#endif /* FENCELINE_DEBUG_H */

/* SPDX-License-Identifier: MIT */
/*
 * Helpers the libsync compat tests share (compat-libsync-test.c and
 * compat-libsync-stress-test.c): sw_sync objects made through the compat
 * API that fail the test when they cannot be made, and the info checks.
 * The ls_ prefix names them as libsync test helpers.
 */
#ifndef FL_TESTS_LIBSYNC_HELPERS_H
#define FL_TESTS_LIBSYNC_HELPERS_H

#include <stdint.h>

#include <android/sync.h>
#include <fenceline/libsync-legacy.h>

/* A new sw_sync timeline fd. */
int ls_timeline(void);

/* A new fence fd at @value on timeline fd @tl. */
int ls_fence(int tl, const char *name, unsigned value);

/* sync_merge() that must succeed. */
int ls_merge(const char *name, int a, int b);

/* sw_sync_timeline_inc() that must succeed. */
void ls_inc(int tl, unsigned count);

/* sync_file_info() that must succeed; free with sync_file_info_free(). */
struct sync_file_info *ls_info(int fd);

/* The number of entries of fence fd @fd. */
uint32_t ls_size_of(int fd);

/*
 * Copies the fixed part of a legacy entry: entries are packed by their own
 * len, so they are misaligned when they carry driver data (as on the
 * kernel).
 */
void ls_read_pt(const struct sync_pt_info *pt, struct sync_pt_info *out);

/* AOSP's CheckModernLegacyInfoMatch(): both info calls describe @fd alike. */
void ls_check_modern_legacy_agree(int fd);

#endif /* FL_TESTS_LIBSYNC_HELPERS_H */

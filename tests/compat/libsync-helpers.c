/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <string.h>

#include <android/sync.h>
#include <sw_sync.h>

#include <fenceline/libsync-legacy.h>

#include "libsync-helpers.h"
#include "runner.h"

int ls_timeline(void)
{
	int fd = sw_sync_timeline_create();

	fl_assert_int_ge(fd, 0);
	return fd;
}

int ls_fence(int tl, const char *name, unsigned value)
{
	int fd = sw_sync_fence_create(tl, name, value);

	fl_assert_int_ge(fd, 0);
	return fd;
}

int ls_merge(const char *name, int a, int b)
{
	int fd = sync_merge(name, a, b);

	fl_assert_int_ge(fd, 0);
	return fd;
}

void ls_inc(int tl, unsigned count)
{
	fl_assert_int_eq(sw_sync_timeline_inc(tl, count), 0);
}

struct sync_file_info *ls_info(int fd)
{
	struct sync_file_info *i = sync_file_info(fd);

	fl_assert(i != NULL);
	return i;
}

uint32_t ls_size_of(int fd)
{
	struct sync_file_info *i = ls_info(fd);
	uint32_t n = i->num_fences;

	sync_file_info_free(i);
	return n;
}

void ls_read_pt(const struct sync_pt_info *pt, struct sync_pt_info *out)
{
	memcpy(out, pt, offsetof(struct sync_pt_info, driver_data));
}

void ls_check_modern_legacy_agree(int fd)
{
	struct sync_file_info *modern = ls_info(fd);
	struct sync_fence_info *e = sync_get_fence_info(modern);
	struct sync_fence_info_data *legacy = sync_fence_info(fd);
	struct sync_pt_info *itr = NULL, pt;
	uint32_t n = 0;

	fl_assert(legacy != NULL);
	fl_assert_str_eq(modern->name, legacy->name);
	fl_assert_int_eq(modern->status, legacy->status);
	while ((itr = sync_pt_info(legacy, itr)) != NULL) {
		fl_assert(n < modern->num_fences);
		ls_read_pt(itr, &pt);
		fl_assert_str_eq(e[n].obj_name, pt.obj_name);
		fl_assert_str_eq(e[n].driver_name, pt.driver_name);
		fl_assert_int_eq(e[n].status, pt.status);
		fl_assert(e[n].timestamp_ns == pt.timestamp_ns);
		n++;
	}
	fl_assert_int_eq(n, modern->num_fences);
	sync_fence_info_free(legacy);
	sync_file_info_free(modern);
}

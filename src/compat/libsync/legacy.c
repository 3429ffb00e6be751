/* SPDX-License-Identifier: MIT */
/*
 * The deprecated libsync info calls, in the layout of the era-A kernel's
 * SYNC_IOC_FENCE_INFO: a 4096-byte block, a 40-byte header, then entries
 * packed back to back, each as long as its own len says. Entries with driver
 * data (sw_sync's 4 bytes) are not 8-byte aligned, exactly as on the
 * kernel, so everything here reads and writes them with memcpy.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <android/sync.h>

#include <fenceline/export.h>
#include <fenceline/fence.h>
#include <fenceline/libsync-legacy.h>

#include "libsync-private.h"

/* The kernel's buffer size for the legacy ioctl, which libsync always used. */
#define LEGACY_INFO_SIZE 4096u
#define HEADER_SIZE	 ((uint32_t)offsetof(struct sync_fence_info_data, pt_info))
#define ENTRY_SIZE	 ((uint32_t)offsetof(struct sync_pt_info, driver_data))

_Static_assert(HEADER_SIZE == 40 && ENTRY_SIZE == 80, "legacy layouts are the kernel's");

struct entry {
	const char *obj_name;
	const char *driver_name;
	int32_t status;
	uint64_t timestamp_ns;
};

/*
 * Append one entry at @*len with its driver data already written after the
 * fixed part by the caller; @data_len bytes of it.
 */
static void put_entry(uint8_t *block, uint32_t *len, const struct entry *e, uint32_t data_len)
{
	struct sync_pt_info pt;

	memset(&pt, 0, sizeof(pt));
	pt.len = ENTRY_SIZE + data_len;
	fl__libsync_copy_name(pt.obj_name, sizeof(pt.obj_name), e->obj_name);
	fl__libsync_copy_name(pt.driver_name, sizeof(pt.driver_name), e->driver_name);
	pt.status = e->status;
	pt.timestamp_ns = e->timestamp_ns;
	memcpy(block + *len, &pt, ENTRY_SIZE);
	*len += pt.len;
}

static void put_header(struct sync_fence_info_data *info, uint32_t len, const char *name,
		       int32_t status)
{
	info->len = len;
	fl__libsync_copy_name(info->name, sizeof(info->name), name);
	info->status = status;
}

static struct sync_fence_info_data *from_snapshot(struct fl__libsync_snapshot *snap)
{
	struct sync_fence_info_data *info;
	uint32_t len = HEADER_SIZE;
	uint8_t *block;

	info = calloc(1, LEGACY_INFO_SIZE);
	if (!info)
		return NULL;
	block = (uint8_t *)info;

	for (uint32_t i = 0; i < snap->info.num_points; i++) {
		const struct fl_sync_pt_info *pt = &snap->points[i];
		struct entry e = { pt->timeline_name, pt->driver_name, pt->status,
				   pt->timestamp_ns };
		int data_len;

		if (LEGACY_INFO_SIZE - len < ENTRY_SIZE)
			goto too_big;
		if (snap->fence) {
			data_len =
				fl_fence_get_point_driver_data(snap->fence, i,
							       block + len + ENTRY_SIZE,
							       LEGACY_INFO_SIZE - len - ENTRY_SIZE);
		} else {
			/* The daemon hosts only sw_sync: its driver data is the u32 value. */
			uint32_t v = (uint32_t)pt->value;

			data_len = -ENOMEM;
			if (LEGACY_INFO_SIZE - len - ENTRY_SIZE >= sizeof(v)) {
				memcpy(block + len + ENTRY_SIZE, &v, sizeof(v));
				data_len = sizeof(v);
			}
		}
		if (data_len == -ENOMEM)
			goto too_big;
		if (data_len < 0) {
			free(info);
			errno = -data_len;
			return NULL;
		}
		put_entry(block, &len, &e, (uint32_t)data_len);
	}
	put_header(info, len, snap->info.name, snap->status);
	return info;

too_big:
	/* Like the kernel: all or nothing. */
	free(info);
	errno = ENOMEM;
	return NULL;
}

/* The conversion libsync made from modern info, which carries no driver data. */
static struct sync_fence_info_data *from_file_info(const struct sync_file_info *modern)
{
	const struct sync_fence_info *entries = sync_get_fence_info(modern);
	struct sync_fence_info_data *info;
	uint32_t len = HEADER_SIZE;

	if (modern->num_fences > (LEGACY_INFO_SIZE - HEADER_SIZE) / ENTRY_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	info = calloc(1, LEGACY_INFO_SIZE);
	if (!info)
		return NULL;
	for (uint32_t i = 0; i < modern->num_fences; i++) {
		struct entry e = { entries[i].obj_name, entries[i].driver_name, entries[i].status,
				   entries[i].timestamp_ns };

		put_entry((uint8_t *)info, &len, &e, 0);
	}
	put_header(info, len, modern->name, modern->status);
	return info;
}

FL_EXPORT struct sync_fence_info_data *sync_fence_info(int fd)
{
	struct fl__libsync_snapshot snap;
	struct sync_fence_info_data *info;
	struct sync_file_info *modern;
	int r;

	r = fl__libsync_snapshot_init(&snap, fd);
	if (r == -ENOTTY) {
		modern = fl__libsync_kernel_file_info(fd);
		if (!modern)
			return NULL;
		info = from_file_info(modern);
		free(modern);
		return info;
	}
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	info = from_snapshot(&snap);
	fl__libsync_snapshot_finish(&snap);
	return info;
}

FL_EXPORT struct sync_pt_info *sync_pt_info(struct sync_fence_info_data *info,
					    struct sync_pt_info *itr)
{
	uint8_t *block = (uint8_t *)info;
	uint32_t off, itr_len;

	if (!info)
		return NULL;
	if (!itr) {
		off = HEADER_SIZE;
	} else {
		memcpy(&itr_len, (uint8_t *)itr + offsetof(struct sync_pt_info, len),
		       sizeof(itr_len));
		/* A corrupt len of 0 would make the caller's loop spin forever. */
		if (itr_len < ENTRY_SIZE)
			return NULL;
		off = (uint32_t)((uint8_t *)itr - block) + itr_len;
	}
	if (off >= info->len)
		return NULL;
	return (struct sync_pt_info *)(block + off);
}

FL_EXPORT void sync_fence_info_free(struct sync_fence_info_data *info)
{
	free(info);
}

/* SPDX-License-Identifier: MIT */
/*
 * Android's libsync tests (sync_test.cpp) declare the deprecated legacy info
 * structs and functions themselves, next to <android/sync.h> and
 * <sw_sync.h>. This file does the same, with the same zero-length arrays,
 * so it fails to compile if a compat header ever declares them too; it then
 * checks that the legacy calls agree with sync_file_info().
 */
#include <android/sync.h>
#include <sw_sync.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct sync_fence_info_data {
	uint32_t len;
	char name[32];
	int32_t status;
	uint8_t pt_info[0];
};

struct sync_pt_info {
	uint32_t len;
	char obj_name[32];
	char driver_name[32];
	int32_t status;
	uint64_t timestamp_ns;
	uint8_t driver_data[0];
};

struct sync_fence_info_data *sync_fence_info(int fd);
struct sync_pt_info *sync_pt_info(struct sync_fence_info_data *info, struct sync_pt_info *itr);
void sync_fence_info_free(struct sync_fence_info_data *info);

static int agree(int fd)
{
	struct sync_file_info *modern = sync_file_info(fd);
	struct sync_fence_info_data *legacy = sync_fence_info(fd);
	struct sync_pt_info *itr = NULL, pt;
	uint32_t n = 0;
	int ok = modern && legacy;

	ok = ok && strcmp(modern->name, legacy->name) == 0 && modern->status == legacy->status;
	while (ok && (itr = sync_pt_info(legacy, itr)) != NULL) {
		/* Entries with driver data are packed, hence possibly misaligned. */
		memcpy(&pt, itr, sizeof(pt));
		ok = n < modern->num_fences &&
		     strcmp(pt.obj_name, sync_get_fence_info(modern)[n].obj_name) == 0 &&
		     pt.status == sync_get_fence_info(modern)[n].status;
		n++;
	}
	ok = ok && n == modern->num_fences;
	sync_fence_info_free(legacy);
	sync_file_info_free(modern);
	return ok;
}

int main(void)
{
	int tl = sw_sync_timeline_create();
	int f = sw_sync_fence_create(tl, "fence", 1);
	int ok = tl >= 0 && f >= 0 && agree(f);

	ok = ok && sw_sync_timeline_inc(tl, 1) == 0 && agree(f);
	close(f);
	close(tl);
	if (!ok)
		fprintf(stderr, "compat-legacy-decl-test: legacy and modern info disagree\n");
	return ok ? 0 : 1;
}

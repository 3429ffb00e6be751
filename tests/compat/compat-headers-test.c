/* SPDX-License-Identifier: MIT */
/*
 * The compat headers, included the way Android code includes them,
 * compile together in C and every function they declare links and runs.
 * compat-headers-test.cpp is the same program for C++.
 */
#include <android/sync.h>
#include <ion/ion.h>
#include <sw_sync.h>
#include <sync/sync.h>

#include <stdio.h>
#include <unistd.h>

int main(void)
{
	struct sync_file_info *info;
	int tl, f, m, ok;

	tl = sw_sync_timeline_create();
	if (tl < 0)
		return 1;
	f = sw_sync_fence_create(tl, "fence", 1);
	m = sync_merge("merged", f, f);
	ok = f >= 0 && m >= 0 && sw_sync_timeline_inc(tl, 1) == 0 && sync_wait(m, -1) == 0;
	info = sync_file_info(m);
	ok = ok && info && info->num_fences == 1 && sync_get_fence_info(info)[0].status == 1;
	sync_file_info_free(info);
	close(m);
	close(f);
	close(tl);
	{
		int ion = ion_open(), cnt = 0, buf = -1;

		ok = ok && ion >= 0 && ion_query_heap_cnt(ion, &cnt) == 0 && cnt > 0 &&
		     ion_alloc_fd(ion, 4096, 0, 1u << 0, 0, &buf) == 0 && buf >= 0;
		if (buf >= 0)
			close(buf);
		if (ion >= 0)
			ion_close(ion);
	}
	if (!ok)
		fprintf(stderr, "compat-headers-test (C): a compat call failed\n");
	return ok ? 0 : 1;
}

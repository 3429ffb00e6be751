/* SPDX-License-Identifier: MIT */
/*
 * A program that carries its own libsync, libion and fl_* functions: it is
 * linked with -rdynamic and with own-names-stubs.c, which defines every
 * name libfenceline.so exports as a function that aborts. It loads
 * libfenceline.so with dlopen() and calls it only through dlsym() on that
 * handle, as a program would through a library of its own that uses
 * fenceline. Every call fenceline makes to itself must reach its own code:
 * if one reaches a stub, the program aborts with the stub's name.
 *
 * Run with FENCELINE_MODE=in-process too: that mode reaches the core's
 * functions (fl_fence_unref(), fl_timeline_signal(), ...) from inside.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ion/ion.h>
#include <sw_sync.h>
#include <sync/sync.h>

#include <fenceline/fence.h>
#include <fenceline/libsync-legacy.h>
#include <fenceline/shared.h>

#define CALLS(X)                    \
	X(sw_sync_timeline_create)  \
	X(sw_sync_timeline_inc)     \
	X(sw_sync_fence_create)     \
	X(sync_merge)               \
	X(sync_wait)                \
	X(sync_file_info)           \
	X(sync_file_info_free)      \
	X(sync_fence_info)          \
	X(sync_pt_info)             \
	X(sync_fence_info_free)     \
	X(ion_open)                 \
	X(ion_close)                \
	X(ion_query_heap_cnt)       \
	X(ion_query_get_heaps)      \
	X(ion_alloc_fd)             \
	X(ion_alloc)                \
	X(fl_timeline_fd_create)    \
	X(fl_timeline_fd_inc)       \
	X(fl_timeline_fd_get_value) \
	X(fl_fence_fd_create)       \
	X(fl_fence_fd_merge)        \
	X(fl_fence_fd_wait)         \
	X(fl_fence_fd_get_status)   \
	X(fl_fence_fd_get_info)     \
	X(fl_timeline_fd_close)     \
	X(fl_daemon_disconnect)

#define FIELD(name) __typeof__(name) *name;
static struct {
	CALLS(FIELD)
} fl;
#undef FIELD

static int failed;

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: CHECK(%s) failed (errno %d)\n", __FILE__, \
				__LINE__, #cond, errno);                                  \
			failed = 1;                                                       \
		}                                                                         \
	} while (0)

static void libsync_calls(void)
{
	struct sync_fence_info_data *legacy;
	struct sync_file_info *info;
	int tl, a, b, m;

	tl = fl.sw_sync_timeline_create();
	CHECK(tl >= 0);
	a = fl.sw_sync_fence_create(tl, "a", 1);
	b = fl.sw_sync_fence_create(tl, "b", 2);
	CHECK(a >= 0 && b >= 0);
	m = fl.sync_merge("m", a, b);
	CHECK(m >= 0);
	CHECK(fl.sync_wait(m, 0) < 0 && errno == ETIME);
	CHECK(fl.sw_sync_timeline_inc(tl, 2) == 0);
	CHECK(fl.sync_wait(m, 10000) == 0);
	info = fl.sync_file_info(m);
	CHECK(info && info->status == 1 && info->num_fences == 1);
	fl.sync_file_info_free(info);
	legacy = fl.sync_fence_info(m);
	CHECK(legacy && legacy->status == 1 && fl.sync_pt_info(legacy, NULL));
	fl.sync_fence_info_free(legacy);
	close(m);
	close(b);
	close(a);
	close(tl);
}

static void ion_calls(void)
{
	struct ion_heap_data heaps[16];
	int ion = fl.ion_open(), n = 0, buf = -1;
	ion_user_handle_t handle;
	unsigned char *p;

	CHECK(ion >= 0);
	CHECK(fl.ion_query_heap_cnt(ion, &n) == 0 && n >= 3 && n <= 16);
	CHECK(fl.ion_query_get_heaps(ion, n, heaps) == 0);
	for (int i = 0; i < n; i++) {
		/* Every heap the client has, the carveout included, hands out a buffer. */
		if (heaps[i].type == ION_HEAP_TYPE_DMA)
			continue;
		buf = -1;
		CHECK(fl.ion_alloc_fd(ion, 4096, 0, 1u << heaps[i].heap_id, 0, &buf) == 0);
		p = buf >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0)
			     : MAP_FAILED;
		CHECK(p != MAP_FAILED && p[4095] == 0);
		if (p != MAP_FAILED)
			munmap(p, 4096);
		if (buf >= 0)
			close(buf);
	}
	CHECK(fl.ion_alloc(ion, 4096, 0, 1, 0, &handle) == -EINVAL);
	CHECK(fl.ion_close(ion) == 0);
}

static void fd_api_calls(void)
{
	int tl = -1, a = -1, b = -1, m = -1;
	uint64_t value = 0;
	struct fl_fence_info info;

	CHECK(fl.fl_timeline_fd_create("own", 0, &tl) == 0);
	CHECK(fl.fl_fence_fd_create(tl, 1, "a", &a) == 0);
	CHECK(fl.fl_fence_fd_create(tl, 2, "b", &b) == 0);
	CHECK(fl.fl_fence_fd_merge(a, b, "m", 0, &m) == 0);
	CHECK(fl.fl_fence_fd_get_status(m) == 0);
	CHECK(fl.fl_timeline_fd_inc(tl, 2) == 0);
	CHECK(fl.fl_timeline_fd_get_value(tl, &value) == 0 && value == 2);
	CHECK(fl.fl_fence_fd_wait(m, 10000) == 0);
	CHECK(fl.fl_fence_fd_get_info(m, &info, NULL, 0) >= 0 && info.status == 1);
	close(m);
	close(b);
	close(a);
	CHECK(fl.fl_timeline_fd_close(tl) == 0);
}

int main(void)
{
	void *lib = dlopen(FL_LIBFENCELINE, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
#define FIND(name)                                                         \
	fl.name = (__typeof__(fl.name))dlsym(lib, #name);                  \
	if (!fl.name) {                                                    \
		fprintf(stderr, "%s has no %s\n", FL_LIBFENCELINE, #name); \
		return 1;                                                  \
	}
	CALLS(FIND)
#undef FIND
	libsync_calls();
	printf("%s libsync\n", failed ? "FAIL" : "ok");
	ion_calls();
	printf("%s libion\n", failed ? "FAIL" : "ok");
	fd_api_calls();
	printf("%s fd API\n", failed ? "FAIL" : "ok");
	fl.fl_daemon_disconnect();
	/* The library's threads may still run: it stays loaded. */
	return failed;
}

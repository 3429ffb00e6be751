/* SPDX-License-Identifier: MIT */
/*
 * A dma-buf's implicit fences as fenceline fences and back (issue 19 item
 * 6; docs/heap.md, "Implicit fences"), on a real kernel: tests/vm/kms-vm.sh
 * boots a Linux 6.12 with dma-heaps and sw_sync. A kernel fence attached
 * to a dma-heap buffer as a writer (IMPORT_SYNC_FILE) holds back the
 * buffer's exported read fence until it signals, through the native and
 * the fd API; an idle buffer's fence is signalled at once; a memfd has no
 * implicit fences (-EOPNOTSUPP) and the kernel takes only sync_files.
 * Outside such a kernel (no /dev/dma_heap/system, no sw_sync) every test
 * skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-heap.h>

#include <fenceline/fence.h>
#include <fenceline/heap.h>
#include <fenceline/shared.h>

#include "runner.h"
#include "sw-sync-uapi.h"

static int dma_buf(void)
{
	struct dma_heap_allocation_data a = { .len = 65536, .fd_flags = O_RDWR | O_CLOEXEC };
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	if (heap < 0)
		fl_test_skip(
			"no /dev/dma_heap/system (a kernel with dma-heaps: tests/vm/kms-vm.sh)");
	fl_assert_int_eq(ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a), 0);
	close(heap);
	return (int)a.fd;
}

/* A sw_sync timeline and a kernel fence at 1 on it. */
static int kernel_fence(int *ret_tl)
{
	struct sw_sync_create_fence_data f = { .value = 1, .name = "render" };
	int tl = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);

	if (tl < 0)
		fl_test_skip("no sw_sync (debugfs) to make kernel fences with");
	fl_assert_int_eq(ioctl(tl, SW_SYNC_IOC_CREATE_FENCE, &f), 0);
	*ret_tl = tl;
	return f.fence;
}

static void inc(int tl)
{
	uint32_t one = 1;

	fl_assert_int_eq(ioctl(tl, SW_SYNC_IOC_INC, &one), 0);
}

FL_TEST(an_idle_buffers_implicit_fence_is_signalled)
{
	int buf = dma_buf(), fd = -1;
	struct fl_fence *f = NULL;

	fl_mode_set(FL_MODE_IN_PROCESS);
	fl_assert_int_eq(fl_heap_buffer_export_fence(buf, FL_HEAP_SYNC_WRITE, NULL, &f), 0);
	fl_assert_int_eq(fl_fence_wait(f, 5000), 0);
	fl_assert_int_eq(fl_fence_get_status(f), FL_STATUS_SIGNALED);
	fl_fence_unref(f);
	fl_assert_int_eq(fl_heap_buffer_export_fence_fd(buf, FL_HEAP_SYNC_READ, "idle", &fd), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 5000), 0);
	close(fd);
	close(buf);
}

/* A producer's explicit fence made implicit, then explicit again for a reader: it waits for it. */
FL_TEST(a_writer_fence_imported_holds_the_exported_read_fence_back)
{
	int buf = dma_buf(), tl, kf = kernel_fence(&tl), fd = -1;
	struct fl_fence *f = NULL, *w = NULL;

	fl_mode_set(FL_MODE_IN_PROCESS);
	fl_assert_int_eq(fl_heap_buffer_import_sync_file(buf, FL_HEAP_SYNC_WRITE, kf), 0);
	fl_assert_int_eq(fl_heap_buffer_export_fence(buf, FL_HEAP_SYNC_READ, "read", &f), 0);
	fl_assert_int_eq(fl_heap_buffer_export_fence_fd(buf, FL_HEAP_SYNC_READ, "read-fd", &fd), 0);
	fl_assert_int_eq(fl_heap_buffer_export_fence(buf, FL_HEAP_SYNC_WRITE, "write", &w), 0);
	fl_assert_int_eq(fl_fence_get_status(f), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_get_status(w), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_fd_get_status(fd), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_wait(f, 50), -ETIME);
	inc(tl);
	fl_assert_int_eq(fl_fence_wait(f, 5000), 0);
	fl_assert_int_eq(fl_fence_wait(w, 5000), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, 5000), 0);
	fl_fence_unref(w);
	fl_fence_unref(f);
	close(fd);
	close(kf);
	close(tl);
	close(buf);
}

/* A reader's fence attached: later writers wait for it, later readers do not. */
FL_TEST(a_reader_fence_imported_holds_back_writers_only)
{
	int buf = dma_buf(), tl, kf = kernel_fence(&tl);
	struct fl_fence *r = NULL, *w = NULL;

	fl_mode_set(FL_MODE_IN_PROCESS);
	fl_assert_int_eq(fl_heap_buffer_import_sync_file(buf, FL_HEAP_SYNC_READ, kf), 0);
	fl_assert_int_eq(fl_heap_buffer_export_fence(buf, FL_HEAP_SYNC_READ, "r", &r), 0);
	fl_assert_int_eq(fl_heap_buffer_export_fence(buf, FL_HEAP_SYNC_WRITE, "w", &w), 0);
	fl_assert_int_eq(fl_fence_wait(r, 5000), 0);
	fl_assert_int_eq(fl_fence_get_status(w), FL_STATUS_ACTIVE);
	inc(tl);
	fl_assert_int_eq(fl_fence_wait(w, 5000), 0);
	fl_fence_unref(w);
	fl_fence_unref(r);
	close(kf);
	close(tl);
	close(buf);
}

FL_TEST(memfds_have_no_implicit_fences_and_the_kernel_takes_only_sync_files)
{
	int buf = dma_buf(), mfd = memfd_create("plain", MFD_CLOEXEC), fd = -1;
	struct fl_fence *f = NULL;

	fl_assert(mfd >= 0);
	fl_assert_int_eq(fl_heap_buffer_export_fence(mfd, FL_HEAP_SYNC_READ, NULL, &f),
			 -EOPNOTSUPP);
	fl_assert_int_eq(fl_heap_buffer_export_fence_fd(mfd, FL_HEAP_SYNC_READ, NULL, &fd),
			 -EOPNOTSUPP);
	fl_assert_int_eq(fl_heap_buffer_import_sync_file(mfd, FL_HEAP_SYNC_WRITE, mfd),
			 -EOPNOTSUPP);
	/* A dma-buf takes a kernel sync_file only: a memfd is refused by the kernel. */
	fl_assert_int_eq(fl_heap_buffer_import_sync_file(buf, FL_HEAP_SYNC_WRITE, mfd), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_import_sync_file(buf, 0, mfd), -EINVAL);
	fl_assert_int_eq(fl_heap_buffer_import_sync_file(buf, FL_HEAP_SYNC_WRITE, -1), -EBADF);
	close(mfd);
	close(buf);
}

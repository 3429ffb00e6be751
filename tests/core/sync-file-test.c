/* SPDX-License-Identifier: MIT */
/*
 * Importing kernel sync_files (the sync_file driver and the core's fd
 * watches). No kernel here has sync_files to give, so this program links
 * tests/lib/fake-sync-file.c: pipes that answer SYNC_IOC_FILE_INFO like a
 * sync_file whose status the test sets, and become readable, as a
 * signalled sync_file does, when the test signals them.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include <fenceline/fenceline.h>

#include "fake-sync-file.h"
#include "runner.h"

static struct fl_fence *import(int fd, const char *name)
{
	struct fl_fence *f = NULL;

	fl_assert_int_eq(fl_sync_file_import(fd, name, &f), 0);
	fl_assert(f != NULL);
	return f;
}

FL_TEST(imported_fence_completes_when_the_kernel_fence_signals)
{
	int fd, fake = fl_test_fake_sync_file(&fd);
	struct fl_fence *f = import(fd, NULL);
	struct fl_sync_pt_info pt;
	struct fl_fence_info info;

	fl_assert_int_eq(fl_fence_get_info(f, &info, &pt, 1), 1);
	fl_assert_str_eq(info.name, "fake-gpu");
	fl_assert_str_eq(pt.driver_name, "sync_file");
	fl_assert_str_eq(pt.timeline_name, "fake-gpu");
	fl_assert_int_eq(fl_fence_wait(f, 0), -ETIME);
	/* The import took a copy: the caller's fd is its own to close. */
	fl_test_fake_sync_file_signal(fake, 1);
	close(fd);
	fl_assert_int_eq(fl_fence_wait(f, 5000), 0);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_fence_unref(f);
}

FL_TEST(imported_fence_carries_the_kernel_fences_error)
{
	int fd, fake = fl_test_fake_sync_file(&fd);
	struct fl_fence *f = import(fd, "mine");

	fl_assert_str_eq(fl_fence_get_name(f), "mine");
	fl_test_fake_sync_file_signal(fake, -EIO);
	fl_assert_int_eq(fl_fence_wait(f, 5000), -EIO);
	close(fd);
	fl_fence_unref(f);
}

FL_TEST(import_of_a_signalled_sync_file_is_born_signalled)
{
	int fd, fake = fl_test_fake_sync_file(&fd);
	struct fl_fence *f;

	fl_test_fake_sync_file_signal(fake, 1);
	f = import(fd, NULL);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	close(fd);
	fl_fence_unref(f);
}

FL_TEST(import_of_what_is_not_a_sync_file_is_einval)
{
	int efd = eventfd(0, EFD_CLOEXEC), fd = -1;
	struct fl_fence *f = NULL;

	fl_assert_int_eq(fl_sync_file_import(efd, NULL, &f), -EINVAL);
	fl_assert(f == NULL);
	fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
	fl_assert_int_eq(fl_fence_fd_import(efd, NULL, &fd), -EINVAL);
	close(efd);
}

/* The reason to import: a merge that waits for the GPU and a fenceline timeline. */
FL_TEST(imported_fence_merges_with_fenceline_fences)
{
	int fd, fake = fl_test_fake_sync_file(&fd), merged = -1, imported = -1, tl = -1, own = -1;
	struct pollfd p = { -1, POLLIN, 0 };

	fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
	fl_assert_int_eq(fl_fence_fd_import(fd, NULL, &imported), 0);
	fl_assert_int_eq(fl_timeline_fd_create("render", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "own", &own), 0);
	fl_assert_int_eq(fl_fence_fd_merge(imported, own, "both", FL_MERGE_WAIT_ALL, &merged), 0);
	p.fd = merged;
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(poll(&p, 1, 0), 0);
	fl_test_fake_sync_file_signal(fake, 1);
	fl_assert_int_eq(poll(&p, 1, 5000), 1);
	fl_assert_int_eq(fl_fence_fd_get_status(merged), 1);
	close(merged);
	close(own);
	close(imported);
	close(tl);
	close(fd);
}

/* The watch holds the timeline until the kernel signals, even with no fence left. */
FL_TEST(dropping_an_imported_fence_before_it_signals_leaks_nothing)
{
	int fd, fake = fl_test_fake_sync_file(&fd);
	struct fl_fence *f = import(fd, NULL);

	fl_fence_unref(f);
	fl_test_fake_sync_file_signal(fake, 1);
	close(fd);
	/* Leak checkers (valgrind, LSan) see the watch and timeline go. */
	for (int i = 0; i < 100; i++)
		usleep(1000);
}

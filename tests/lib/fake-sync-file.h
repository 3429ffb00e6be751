/* SPDX-License-Identifier: MIT */
/*
 * Fake kernel sync_files, for tests on kernels that have none to give: pipes
 * whose read ends answer SYNC_IOC_FILE_INFO like a sync_file named
 * "fake-gpu" with the status the test sets, and become readable, as a
 * signalled sync_file does, when the test signals them. fake-sync-file.c
 * defines ioctl() itself: link it only into the executables that want
 * that; the library's calls reach it because the executable's definition
 * comes first. Fakes are known by inode, so copies (dup()) are fakes too.
 */
#ifndef FL_TESTS_FAKE_SYNC_FILE_H
#define FL_TESTS_FAKE_SYNC_FILE_H

/*
 * A pending fake: its read end (the sync_file, the caller's to close) in
 * *@ret_fd; returns its handle for fl_test_fake_sync_file_signal().
 */
int fl_test_fake_sync_file(int *ret_fd);

/*
 * Signals fake @handle with @status (1, or a negative errno): the status
 * first, then readable, as dma_fence_signal() does. Once only; from any
 * thread; every copy of the read end may be closed already (with SIGPIPE
 * ignored, EPIPE is fine then).
 */
void fl_test_fake_sync_file_signal(int handle, int status);

#endif /* FL_TESTS_FAKE_SYNC_FILE_H */

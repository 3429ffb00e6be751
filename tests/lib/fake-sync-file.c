/* SPDX-License-Identifier: MIT */
/* Fake kernel sync_files (fake-sync-file.h), with the ioctl() that answers for them. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "fake-sync-file.h"
#include "runner.h"

#define MAX_FAKES 64

static struct {
	ino_t ino;
	int write_end;
	_Atomic int status;
} fakes[MAX_FAKES];
static _Atomic int nfakes;

static ino_t inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;
	ino_t ino;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (request == SYNC_IOC_FILE_INFO && (ino = inode_of(fd)) != 0) {
		for (int i = 0; i < nfakes; i++) {
			if (fakes[i].ino != ino)
				continue;
			struct sync_file_info *info = arg;

			strcpy(info->name, "fake-gpu");
			info->status = fakes[i].status;
			info->num_fences = 1;
			return 0;
		}
	}
	return (int)syscall(SYS_ioctl, fd, request, arg);
}

int fl_test_fake_sync_file(int *ret_fd)
{
	int fds[2], i = nfakes;

	fl_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	fl_assert(i < MAX_FAKES);
	fakes[i].ino = inode_of(fds[0]);
	fakes[i].write_end = fds[1];
	fakes[i].status = 0;
	/* Published last: ioctl() in other threads reads only what is complete. */
	nfakes = i + 1;
	*ret_fd = fds[0];
	return i;
}

void fl_test_fake_sync_file_signal(int handle, int status)
{
	fl_assert(handle >= 0 && handle < nfakes);
	fakes[handle].status = status;
	fl_assert(write(fakes[handle].write_end, "s", 1) == 1 || errno == EPIPE);
	close(fakes[handle].write_end);
}

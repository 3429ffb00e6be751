/* SPDX-License-Identifier: MIT */
/* Private to src/kabi: the uapi emulation behind the interposed ioctl(). */
#ifndef FL_KABI_H
#define FL_KABI_H

#include <stdbool.h>
#include <stdint.h>

/* drivers/dma-buf/sw_sync.c keeps its uapi to itself; these are its values. */
#define FL_KABI_SW_SYNC_MAGIC 'W'

struct fl_kabi_sw_sync_create_fence_data {
	uint32_t value;
	char name[32];
	int32_t fence; /* fd of the new fence */
};

#define FL_KABI_SW_SYNC_IOC_CREATE_FENCE \
	_IOWR(FL_KABI_SW_SYNC_MAGIC, 0, struct fl_kabi_sw_sync_create_fence_data)
#define FL_KABI_SW_SYNC_IOC_INC _IOW(FL_KABI_SW_SYNC_MAGIC, 1, uint32_t)

/*
 * fl__kabi_is_sw_sync_path() - whether @path names sw_sync: the debugfs
 * file (since 4.9) or the old misc device. NULL is not.
 */
bool fl__kabi_is_sw_sync_path(const char *path);

/* fl__kabi_ioctl()'s answer for an fd that is no fenceline fd: libc's turn. */
#define FL_KABI_NOT_OURS (-2)

/*
 * fl__kabi_ioctl() - a sync_file or sw_sync request on @fd
 * Return: what ioctl() returns (0, or -1 with errno set) when @fd is a
 * fenceline fence or timeline fd, else FL_KABI_NOT_OURS (errno untouched).
 */
int fl__kabi_ioctl(int fd, unsigned long request, void *arg);

#endif /* FL_KABI_H */

/* SPDX-License-Identifier: MIT */
/* Private to src/kabi: the uapi emulation behind the interposed ioctl(). */
#ifndef FL_KABI_H
#define FL_KABI_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include <linux/sync_file.h>

#include <fenceline/shared.h>

#include <sw_sync.h>

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

/* linux/sync_file.h has these since 6.3; Debian 12's headers are 6.1. */
struct fl_kabi_sync_set_deadline {
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	uint64_t pad; /* 0 */
};

#define FL_KABI_SYNC_IOC_SET_DEADLINE _IOW(SYNC_IOC_MAGIC, 5, struct fl_kabi_sync_set_deadline)

struct fl_kabi_sw_sync_get_deadline {
	uint64_t deadline_ns; /* in: 0; out: the earliest deadline */
	uint32_t pad; /* 0 */
	int32_t fence_fd;
};

#define FL_KABI_SW_SYNC_GET_DEADLINE \
	_IOWR(FL_KABI_SW_SYNC_MAGIC, 2, struct fl_kabi_sw_sync_get_deadline)

/*
 * fl__kabi_is_sw_sync_path() - whether @path names sw_sync: the debugfs
 * file (since 4.9) or the old misc device. NULL is not.
 */
bool fl__kabi_is_sw_sync_path(const char *path);

#define FL_KABI_MIN(a, b) ((a) < (b) ? (a) : (b))

/* The answer for an fd or request that is not ours: libc's turn. No errno has this value. */
#define FL_KABI_NOT_OURS INT_MIN

/*
 * fl__kabi_ioctl() - a sync_file or sw_sync request on @fd
 * Return: what ioctl() returns (0, or -1 with errno set) when @fd is a
 * fenceline fence or timeline fd, else FL_KABI_NOT_OURS (errno untouched).
 */
int fl__kabi_ioctl(int fd, unsigned long request, void *arg);

/* fl__kabi_real_ioctl() - libc's ioctl(), past our own */
int fl__kabi_real_ioctl(int fd, unsigned long request, void *arg);

/*
 * fl__kabi_mark_fence() - remember that @fd is a fence fd: read() and
 * write() on it then fail (EINVAL, EBADF) as on a sync_file, instead of
 * reaching the socket underneath. Fds above a bound are not remembered.
 */
void fl__kabi_mark_fence(int fd);

/* fl__kabi_fence_marked() - whether @fd was marked and not closed since (a hint: maybe reused) */
bool fl__kabi_fence_marked(int fd);

/*
 * Every libfenceline function the preload calls. They are looked up in
 * libfenceline.so itself (dlsym() on its handle), never bound by name: a
 * program that defines and exports functions of these names (its own
 * libsync linked with -rdynamic, as the kernel's selftests and graphics
 * test suites are) comes first in the global lookup scope, and binding
 * there made our open() call the program's sw_sync_timeline_create(),
 * which opened sw_sync again, through us, until the stack overflowed.
 * tests/tree/symbols-test.sh fails if a call bypasses this table.
 */
#define FL_KABI_CALLS(X)              \
	X(fl_fence_fd_create)         \
	X(fl_fence_fd_get_deadline)   \
	X(fl_fence_fd_get_info_flags) \
	X(fl_fence_fd_import)         \
	X(fl_fence_fd_merge)          \
	X(fl_fence_fd_set_deadline)   \
	X(fl_timeline_fd_close)       \
	X(fl_timeline_fd_get_value)   \
	X(fl_timeline_fd_inc)         \
	X(sw_sync_timeline_create)

#define FL_KABI_FIELD(name) __typeof__(name) *name;
struct fl__kabi_lib {
	FL_KABI_CALLS(FL_KABI_FIELD)
};
#undef FL_KABI_FIELD

/*
 * fl__kabi_lib() - libfenceline's own definitions of FL_KABI_CALLS, found
 * when the preload is loaded (libfenceline.so is loaded then, if the program
 * has not). Aborts with a message if libfenceline.so cannot be loaded or
 * lacks one of them: the preload cannot serve anything without it.
 */
const struct fl__kabi_lib *fl__kabi_lib(void);

/* Call libfenceline's @name: FL(fl_timeline_fd_inc)(fd, 1). */
#define FL(name) (fl__kabi_lib()->name)

#endif /* FL_KABI_H */

/* SPDX-License-Identifier: MIT */
/*
 * A kernel-uapi program under libfenceline-kabi.so that closes every fd
 * above stderr (as daemons and sandboxes do after fork) while fenceline's
 * connection and pooled fds are among them, then opens sockets of its own,
 * which take those numbers, and goes on using /dev/sw_sync. The emulation
 * must keep working, return none of the program's fds as a fence, and write
 * nothing into the program's sockets. Plain ioctls, no fenceline header.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "sw-sync-uapi.h"

#define SOCKS 48

static int failed;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: %s failed (errno %d: %s)\n", __FILE__, __LINE__, \
				#cond, errno, strerror(errno));                                  \
			failed = 1;                                                              \
		}                                                                                \
	} while (0)

static int mine[SOCKS], peer[SOCKS];
static ino_t ino[SOCKS];

static ino_t inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

static int create_fence(int tl, uint32_t value)
{
	struct sw_sync_create_fence_data d = { .value = value, .name = "f", .fence = -1 };

	if (ioctl(tl, SW_SYNC_IOC_CREATE_FENCE, &d) < 0)
		return -1;
	return d.fence;
}

static void not_the_programs(int fd)
{
	ino_t i = inode_of(fd);

	CHECK(i != 0);
	for (int k = 0; k < SOCKS; k++) {
		CHECK(fd != mine[k] && fd != peer[k]);
		CHECK(i != ino[k]);
	}
}

/* A timeline, fences, a signal and a wait: the ioctls a test suite uses. */
static void use_sw_sync(void)
{
	int tl = open("/dev/sw_sync", O_RDWR | O_CLOEXEC), f1, f2;
	struct pollfd p;
	uint32_t one = 1;

	CHECK(tl >= 0);
	if (tl < 0)
		return;
	not_the_programs(tl);
	f1 = create_fence(tl, 1);
	CHECK(f1 >= 0);
	f2 = create_fence(tl, 2);
	CHECK(f2 >= 0);
	if (f1 >= 0)
		not_the_programs(f1);
	if (f2 >= 0)
		not_the_programs(f2);
	CHECK(ioctl(tl, SW_SYNC_IOC_INC, &one) == 0);
	p = (struct pollfd){ .fd = f1, .events = POLLIN };
	CHECK(poll(&p, 1, 30000) == 1);
	p = (struct pollfd){ .fd = f2, .events = POLLIN };
	CHECK(poll(&p, 1, 0) == 0);
	CHECK(ioctl(tl, SW_SYNC_IOC_INC, &one) == 0);
	CHECK(poll(&p, 1, 30000) == 1);
	close(f2);
	close(f1);
	close(tl);
}

int main(void)
{
	int tl = open("/dev/sw_sync", O_RDWR | O_CLOEXEC);

	/* Warm up: the connection, a pool of fence fds, signal ends. */
	CHECK(tl >= 0);
	for (uint32_t i = 1; i <= 6; i++) {
		int f = create_fence(tl, 100 + i);

		CHECK(f >= 0);
		close(f);
	}
	CHECK(create_fence(tl, 1) >= 0); /* pending, left open: its end is kept */
	if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0) {
		perror("close_range");
		return 77;
	}
	for (int k = 0; k < SOCKS; k++) {
		int sv[2];

		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
		mine[k] = sv[0];
		peer[k] = sv[1];
		ino[k] = inode_of(sv[0]);
	}
	use_sw_sync();
	use_sw_sync();
	for (int k = 0; k < SOCKS; k++) {
		struct pollfd p[2] = { { mine[k], POLLIN, 0 }, { peer[k], POLLIN, 0 } };

		CHECK(inode_of(mine[k]) == ino[k]);
		CHECK(poll(p, 2, 0) == 0);
	}
	printf("%s\n", failed ? "FAIL" : "ok");
	return failed;
}

/* SPDX-License-Identifier: MIT */
/*
 * Merges of real kernel sync_files with emulated ones, under the preload,
 * on a kernel that has sw_sync (bench/vm boots one): the kernel's fences
 * stand in for a GPU driver's. The preload answers the sw_sync path; the
 * same file under another spelling of its path is not intercepted, so this
 * program gets both kinds of timeline. Exits 77 (skipped) on a kernel
 * without sw_sync. Plain ioctls, no fenceline header.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "sw-sync-uapi.h"

static int failed;

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: check failed: %s (errno %d)\n", __FILE__, \
				__LINE__, #cond, errno);                                  \
			failed = 1;                                                       \
		}                                                                         \
	} while (0)

static int create_fence(int tl, uint32_t value)
{
	struct sw_sync_create_fence_data d = { .value = value };

	return ioctl(tl, SW_SYNC_IOC_CREATE_FENCE, &d) < 0 ? -1 : d.fence;
}

static int merge(int a, int b)
{
	struct sync_merge_data m;

	memset(&m, 0, sizeof(m));
	strcpy(m.name, "mixed");
	m.fd2 = b;
	return ioctl(a, SYNC_IOC_MERGE, &m) < 0 ? -1 : m.fence;
}

static int status(int fd, uint32_t *num)
{
	struct sync_file_info info;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0)
		return -1000 - errno;
	*num = info.num_fences;
	return info.status;
}

static int ready(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1;
}

static int wait_ready(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 5000) == 1;
}

int main(void)
{
	/* Not the intercepted spelling: the kernel's own timeline. */
	int ktl = open("/sys/kernel/debug/sync/./sw_sync", O_RDWR | O_CLOEXEC);
	int etl = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);
	int k, e, m1, m2, k2, e2, m3;
	uint32_t one = 1, n = 0;

	if (ktl < 0) {
		printf("SKIP: this kernel has no sw_sync (%s)\n", strerror(errno));
		return 77;
	}
	CHECK(etl >= 0);
	k = create_fence(ktl, 1);
	e = create_fence(etl, 1);
	CHECK(k >= 0 && e >= 0);
	/* Either order: an emulated fence first, or the kernel's. */
	m1 = merge(e, k);
	m2 = merge(k, e);
	CHECK(m1 >= 0 && m2 >= 0);
	CHECK(status(m1, &n) == 0 && n == 2);
	CHECK(status(m2, &n) == 0 && n == 2);
	CHECK(ioctl(etl, SW_SYNC_IOC_INC, &one) == 0);
	CHECK(!ready(m1) && !ready(m2));
	CHECK(ioctl(ktl, SW_SYNC_IOC_INC, &one) == 0);
	CHECK(wait_ready(m1) && wait_ready(m2));
	CHECK(status(m1, &n) == 1 && status(m2, &n) == 1);

	/* A kernel fence that fails: the merge fails with it, once all are done. */
	k2 = create_fence(ktl, 5);
	e2 = create_fence(etl, 5);
	m3 = merge(e2, k2);
	CHECK(m3 >= 0);
	close(ktl);
	CHECK(!ready(m3));
	CHECK(ioctl(etl, SW_SYNC_IOC_INC, &(uint32_t){ 4 }) == 0);
	CHECK(wait_ready(m3));
	CHECK(status(m3, &n) == -ENOENT);

	close(m3);
	close(e2);
	close(k2);
	close(m1);
	close(m2);
	close(k);
	close(e);
	close(etl);
	printf("%s kabi-mixed\n", failed ? "FAIL" : "ok");
	return failed;
}

/* SPDX-License-Identifier: MIT */
/*
 * The kernel's sw_sync uapi, which lives in drivers/dma-buf/sw_sync.c and
 * in no installed header: what the plain-ioctl programs of tests/kabi use.
 */
#ifndef FL_TESTS_SW_SYNC_UAPI_H
#define FL_TESTS_SW_SYNC_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

struct sw_sync_create_fence_data {
	uint32_t value;
	char name[32];
	int32_t fence;
};
#define SW_SYNC_IOC_MAGIC	 'W'
#define SW_SYNC_IOC_CREATE_FENCE _IOWR(SW_SYNC_IOC_MAGIC, 0, struct sw_sync_create_fence_data)
#define SW_SYNC_IOC_INC		 _IOW(SW_SYNC_IOC_MAGIC, 1, uint32_t)

#endif /* FL_TESTS_SW_SYNC_UAPI_H */

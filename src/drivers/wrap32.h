/* SPDX-License-Identifier: MIT */
/*
 * The kernel's comparison of 32-bit sw_sync values, in its one home: the
 * sw_sync and shared_counter drivers, the sync service's list of points
 * it must complete (src/daemon/shared.c) and an owner's check of its own
 * fences (src/client/counter.c) must all agree on which side of a wrap a
 * value is, or an owner and the daemon would disagree about a fence.
 * Arithmetic only (libc's fixed-width types), so every part may use it.
 */
#ifndef FL_WRAP32_H
#define FL_WRAP32_H

#include <stdbool.h>
#include <stdint.h>

/*
 * < 0 if @a comes before @b, 0 if equal, > 0 if after: the sign of the
 * 32-bit difference, as the kernel's sw_sync compares. A value up to
 * 2^31 ahead is ahead (exactly 2^31 too, in either direction: INT_MIN is
 * negative), one further ahead is behind.
 */
static inline int fl__wrap32_cmp(uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	return (int32_t)(a - b) < 0 ? -1 : 1;
}

/*
 * Has a counter at @now reached @value? A 64-bit counter when it is at
 * least @value; a 32-bit one (@is32) when its low half is not before
 * @value's, wrap-aware.
 */
static inline bool fl__value_reached(bool is32, uint64_t now, uint64_t value)
{
	if (is32)
		return fl__wrap32_cmp((uint32_t)now, (uint32_t)value) >= 0;
	return now >= value;
}

#endif /* FL_WRAP32_H */

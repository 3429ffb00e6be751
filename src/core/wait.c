/* SPDX-License-Identifier: MIT */
/*
 * Blocking waits: a futex on the fence's status word. The signaller only
 * makes the wake-up syscall when a waiter has announced itself (nwaiters),
 * so signalling a fence nobody waits on costs no syscall.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

FL_EXPORT int fl_fence_wait(struct fl_fence *f, int timeout_ms)
{
	uint64_t deadline = 0;
	int s;

	fl_return_if(!f, -EINVAL);
	s = fl__fence_status(f);
	if (s == 0 && timeout_ms != 0)
		s = fl__fence_arm(f);
	if (s)
		return s == FL_STATUS_SIGNALED ? 0 : s;
	if (timeout_ms == 0)
		return -ETIME;
	if (timeout_ms > 0)
		deadline = fl__now_ns() + (uint64_t)timeout_ms * 1000000ull;

	FL_PROBE2(wait_begin, f->id, timeout_ms);
	atomic_fetch_add(&f->nwaiters, 1);
	for (;;) {
		int64_t left = -1;

		s = atomic_load(&f->status);
		if (s)
			break;
		if (timeout_ms > 0) {
			uint64_t now = fl__now_ns();

			if (now >= deadline)
				break;
			left = (int64_t)(deadline - now);
		}
		/* EINTR: a signal handler ran; keep waiting for what is left. */
		fl__futex_wait(&f->status, 0, left);
	}
	atomic_fetch_sub(&f->nwaiters, 1);
	FL_PROBE2(wait_end, f->id, s ? s : -ETIME);

	if (s)
		return s == FL_STATUS_SIGNALED ? 0 : s;
	fl__dump_on_timeout();
	return -ETIME;
}

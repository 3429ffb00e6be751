/* SPDX-License-Identifier: MIT */
/*
 * The owner's half of a shared counter (counter.h): the one place of the
 * library that reads or writes the page. The daemon's half is the
 * shared_counter driver and src/daemon/shared.c; the layout and its rules
 * are struct fl_proto_shared_timeline's.
 */
#include <errno.h>
#include <limits.h>
#include <sys/mman.h>

#include "counter.h"
#include "util.h"
#include "wrap32.h"

int fl__counter_map(struct fl__counter *c, int memfd, bool is32)
{
	void *page = mmap(NULL, FL_PROTO_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);

	if (page == MAP_FAILED)
		return -errno;
	*c = (struct fl__counter){ page, is32 };
	return 0;
}

void fl__counter_unmap(struct fl__counter *c)
{
	munmap(c->page, FL_PROTO_SHARED_SIZE);
	c->page = NULL;
}

uint64_t fl__counter_read(const struct fl__counter *c)
{
	return __atomic_load_n(&c->page->value, __ATOMIC_SEQ_CST);
}

bool fl__counter_reached(const struct fl__counter *c, uint64_t now, uint64_t value)
{
	return fl__value_reached(c->is32, now, value);
}

int fl__counter_add(struct fl__counter *c, uint64_t count, uint64_t *stamp_ns, uint64_t *ret_now)
{
	uint64_t add = c->is32 ? (uint32_t)count : count;
	uint64_t now = fl__now_ns();

	/* Only the owner writes the stamp: its last one is the floor. */
	if (*stamp_ns &&
	    (*stamp_ns > now || *stamp_ns < __atomic_load_n(&c->page->stamp_ns, __ATOMIC_SEQ_CST)))
		return -EINVAL;
	/* Large steps (the daemon applies them in INT_MAX steps) and wrap-arounds: its job. */
	if (c->is32 ? add > INT32_MAX : add > UINT64_MAX - fl__counter_read(c))
		return -ENOSYS;
	/* The time first, then the value: a daemon that sees the value sees this time or later. */
	if (!*stamp_ns)
		*stamp_ns = now;
	__atomic_store_n(&c->page->stamp_ns, *stamp_ns, __ATOMIC_SEQ_CST);
	*ret_now = __atomic_add_fetch(&c->page->value, add, __ATOMIC_SEQ_CST);
	return 0;
}

bool fl__counter_needs_daemon(const struct fl__counter *c, uint64_t now)
{
	return now >= __atomic_load_n(&c->page->sync_at, __ATOMIC_SEQ_CST);
}

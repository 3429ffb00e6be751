/* SPDX-License-Identifier: MIT */
/*
 * The shared_counter driver (src/drivers/shared_counter), fencelined's
 * timelines whose counter their owner advances in shared memory, and the
 * 32-bit wrap check that it, sw_sync, the daemon and the owner share
 * (src/drivers/wrap32.h). Internal: built with the driver's static library,
 * as fencelined is.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"
#include "shared_counter.h"
#include "wrap32.h"

/* A timeline on a shared page as fencelined makes one: the counter at its start. */
static struct fl_timeline *new_timeline(unsigned int flags, uint64_t **ret_counter)
{
	struct fl_timeline *tl = NULL;
	uint64_t *page =
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	fl_assert(page != MAP_FAILED);
	fl_assert_int_eq(fl__shared_counter_timeline_create("sc", flags, page, 4096, page, &tl), 0);
	*ret_counter = page;
	return tl;
}

static uint64_t value_of(struct fl_timeline *tl)
{
	uint64_t v = 0;

	fl_assert_int_eq(fl__shared_counter_get_value(tl, &v), 0);
	return v;
}

static struct fl_fence *fence_at(struct fl_timeline *tl, uint64_t value)
{
	struct fl_fence *f = NULL;

	fl_assert_int_eq(fl__shared_counter_fence_create(tl, value, NULL, &f), 0);
	return f;
}

FL_TEST(counter_moves_timeline_on_catch_up_and_inc_adds_to_it)
{
	uint64_t *counter;
	struct fl_timeline *tl = new_timeline(0, &counter);
	struct fl_fence *f = fence_at(tl, 3);

	/* Another process's addition is seen when we catch up, not before. */
	__atomic_add_fetch(counter, 5, __ATOMIC_SEQ_CST);
	fl_assert_int_eq(fl_fence_get_status(f), 0);
	fl_assert_int_eq(fl__shared_counter_catch_up(tl), 0);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_assert_int_eq(value_of(tl), 5);
	fl_assert_int_eq(fl__shared_counter_inc(tl, 2), 0);
	fl_assert_int_eq(*counter, 7);
	fl_assert_int_eq(value_of(tl), 7);
	/* Applied once only, however often we catch up. */
	fl_assert_int_eq(fl__shared_counter_catch_up(tl), 0);
	fl_assert_int_eq(value_of(tl), 7);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(dying_timeline_signals_points_its_counter_reached_before_failing_the_rest)
{
	uint64_t *counter;
	struct fl_timeline *tl = new_timeline(0, &counter);
	struct fl_fence *reached = fence_at(tl, 3), *pending = fence_at(tl, 4);

	/* The writer moved the counter and went away before anyone caught up. */
	__atomic_store_n(counter, 3, __ATOMIC_SEQ_CST);
	fl_timeline_unref(tl);
	fl_assert_int_eq(fl_fence_get_status(reached), 1);
	fl_assert_int_eq(fl_fence_get_status(pending), -ENOENT);
	fl_fence_unref(reached);
	fl_fence_unref(pending);
}

FL_TEST(counter_32bit_jump_past_2_31_passes_every_point_on_the_way)
{
	uint64_t *counter;
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT, &counter);
	struct fl_fence *a = fence_at(tl, 0x70000000u), *b = fence_at(tl, 0x7FFFFFF0u);

	/* Two owner steps of 0x78000000 without a catch-up between them. */
	__atomic_add_fetch(counter, 0x78000000u, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(counter, 0x78000000u, __ATOMIC_SEQ_CST);
	fl_assert_int_eq(fl__shared_counter_catch_up(tl), 0);
	fl_assert_int_eq(value_of(tl), 0xF0000000u);
	fl_assert_int_eq(fl_fence_get_status(a), 1);
	fl_assert_int_eq(fl_fence_get_status(b), 1);
	fl_fence_unref(a);
	fl_fence_unref(b);
	fl_timeline_unref(tl);
}

/* The holders of its fd see a sw_sync timeline, as they did when it was one. */
FL_TEST(counter_timeline_reports_itself_as_sw_sync)
{
	uint64_t *counter;
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT, &counter);
	struct fl_fence *f = fence_at(tl, 0x1FFFFFFFFull);
	struct fl_sync_pt_info pt;

	fl_assert(fl__timeline_is_shared_counter(tl));
	fl_assert(!fl_timeline_is_sw_sync(tl));
	fl_assert_int_eq(fl_fence_get_info(f, NULL, &pt, 1), 1);
	fl_assert_str_eq(pt.driver_name, "sw_sync");
	fl_assert_int_eq(pt.value, 0xFFFFFFFFu); /* a 32-bit timeline's fence: the low half */
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(bad_counter_is_einval_and_the_mapping_stays_the_callers)
{
	uint64_t *page =
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct fl_timeline *tl = NULL, *sw = fl_test_timeline_new("sw");
	uint64_t v;

	fl_assert(page != MAP_FAILED);
	fl_assert_int_eq(fl__shared_counter_timeline_create("x", 0, page, 4096, page, NULL),
			 -EINVAL);
	fl_assert_int_eq(fl__shared_counter_timeline_create("x", 0, NULL, 4096, page, &tl),
			 -EINVAL);
	fl_assert_int_eq(fl__shared_counter_timeline_create("x", 0, page, 4096, NULL, &tl),
			 -EINVAL);
	fl_assert_int_eq(fl__shared_counter_timeline_create("x", 1u << 5, page, 4096, page, &tl),
			 -EINVAL);
	/* Misaligned, and reaching past the mapping's end. */
	fl_assert_int_eq(fl__shared_counter_timeline_create("x", 0, page, 4096,
							    (uint64_t *)((uintptr_t)page + 1), &tl),
			 -EINVAL);
	fl_assert_int_eq(fl__shared_counter_timeline_create("x", 0, page, 8, page + 1, &tl),
			 -EINVAL);
	fl_assert(tl == NULL);
	page[0] = 1; /* still mapped */
	fl_assert_int_eq(munmap(page, 4096), 0);
	/* Its calls refuse any other timeline. */
	fl_assert_int_eq(fl__shared_counter_catch_up(NULL), -EINVAL);
	fl_assert_int_eq(fl__shared_counter_catch_up(sw), -EINVAL);
	fl_assert_int_eq(fl__shared_counter_inc(sw, 1), -EINVAL);
	fl_assert_int_eq(fl__shared_counter_get_value(sw, &v), -EINVAL);
	fl_assert_int_eq(fl__shared_counter_fence_create(sw, 1, NULL, NULL), -EINVAL);
	fl_assert(!fl__timeline_is_shared_counter(sw));
	fl_timeline_unref(sw);
}

FL_TEST(dead_counter_timeline_is_enoent_and_its_counter_is_left_alone)
{
	uint64_t *counter;
	struct fl_timeline *tl = new_timeline(0, &counter), *extra = fl_timeline_ref(tl);

	fl_timeline_kill(tl);
	fl_assert_int_eq(fl__shared_counter_inc(extra, 4), -ENOENT);
	fl_assert_int_eq(*counter, 0);
	fl_assert_int_eq(fl__shared_counter_catch_up(extra), -ENOENT);
	fl_timeline_unref(extra);
}

/*
 * The wrap boundary, as the kernel's sw_sync has it: a value up to 2^31
 * ahead is ahead (exactly 2^31 too, from either side), one further ahead
 * is behind, and so reached.
 */
FL_TEST(wrap32_value_2_31_ahead_is_ahead_and_one_more_is_behind)
{
	const uint32_t bases[] = { 0, 1, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFF0u, 0xFFFFFFFFu };

	for (unsigned int i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		uint32_t a = bases[i];

		fl_assert_int_eq(fl__wrap32_cmp(a, a), 0);
		fl_assert(fl__wrap32_cmp(a, a + 1) < 0);
		fl_assert(fl__wrap32_cmp(a + 1, a) > 0);
		fl_assert(fl__wrap32_cmp(a, a + 0x7FFFFFFFu) < 0);
		fl_assert(fl__wrap32_cmp(a + 0x7FFFFFFFu, a) > 0);
		fl_assert(fl__wrap32_cmp(a, a + 0x80000000u) < 0);
		fl_assert(fl__wrap32_cmp(a + 0x80000000u, a) < 0);
		fl_assert(fl__wrap32_cmp(a, a + 0x80000001u) > 0);
		fl_assert(fl__wrap32_cmp(a + 0x80000001u, a) < 0);
	}
}

FL_TEST(wrap32_reached_compares_the_low_half_across_the_wrap)
{
	/* A 32-bit counter that wrapped once: its low half is 0xFFFFFFF0. */
	uint64_t now = 0x1FFFFFFF0ull;

	fl_assert(fl__value_reached(true, now, 0xFFFFFFF0u));
	fl_assert(fl__value_reached(true, now, 0xFFFFFFEFu));
	fl_assert(!fl__value_reached(true, now, 0xFFFFFFF1u));
	/* 5 is 21 ahead, past the wrap: not reached, although 5 < 0xFFFFFFF0. */
	fl_assert(!fl__value_reached(true, now, 5));
	fl_assert(!fl__value_reached(true, now, (uint32_t)(now + 0x7FFFFFFFu)));
	fl_assert(!fl__value_reached(true, now, (uint32_t)(now + 0x80000000u)));
	fl_assert(fl__value_reached(true, now, (uint32_t)(now + 0x80000001u)));
	fl_assert(!fl__value_reached(true, now, (uint32_t)(now - 0x80000000u)));
	fl_assert(fl__value_reached(true, now, (uint32_t)(now - 0x7FFFFFFFu)));
	/* A 64-bit counter has no wrap: only its whole value counts. */
	fl_assert(!fl__value_reached(false, now, now + 0x80000001u));
	fl_assert(fl__value_reached(false, now, now));
	fl_assert(!fl__value_reached(false, 5, 0xFFFFFFF0u));
}

/* The same boundary through a driver that uses it: a point 2^31 ahead stays pending. */
FL_TEST(counter_32bit_point_2_31_ahead_is_pending_and_one_more_is_born_signalled)
{
	uint64_t *counter;
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT, &counter);
	struct fl_fence *ahead, *passed;

	fl_assert_int_eq(fl__shared_counter_inc(tl, 0x10), 0);
	ahead = fence_at(tl, 0x10 + 0x80000000u);
	passed = fence_at(tl, 0x10 + 0x80000001u);
	fl_assert_int_eq(fl_fence_get_status(ahead), 0);
	fl_assert_int_eq(fl_fence_get_status(passed), 1);
	fl_fence_unref(ahead);
	fl_fence_unref(passed);
	fl_timeline_unref(tl);
}

/* SPDX-License-Identifier: MIT */
/*
 * The sw_sync counter timeline: 64-bit by default, the kernel's 32-bit
 * wrap-around arithmetic with FL_SW_SYNC_32BIT.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "mock-driver.h"
#include "runner.h"

static struct fl_timeline *new_timeline(unsigned int flags)
{
	struct fl_timeline *tl = NULL;

	fl_assert_int_eq(fl_sw_sync_timeline_create("sw", flags, &tl), 0);
	fl_assert(tl != NULL);
	return tl;
}

FL_TEST(counter_starts_at_zero)
{
	struct fl_timeline *tl = new_timeline(0);
	struct fl_fence *zero = fl_test_fence_new(tl, 0, NULL),
			*one = fl_test_fence_new(tl, 1, NULL);

	fl_assert_int_eq(fl_test_timeline_value(tl), 0);
	fl_assert_int_eq(fl_fence_get_status(zero), 1);
	fl_assert_int_eq(fl_fence_get_status(one), 0);
	fl_fence_unref(zero);
	fl_fence_unref(one);
	fl_timeline_unref(tl);
}

FL_TEST(timeline_has_sw_sync_identity)
{
	struct fl_timeline *tl = NULL, *named = new_timeline(0);

	fl_assert_int_eq(fl_sw_sync_timeline_create(NULL, 0, &tl), 0);
	fl_assert_str_eq(fl_timeline_get_name(tl), "sw_sync");
	fl_assert_str_eq(fl_timeline_get_driver_name(tl), "sw_sync");
	fl_assert_str_eq(fl_timeline_get_name(named), "sw");
	fl_assert_int_eq(fl_timeline_is_sw_sync(tl), 1);
	fl_assert_int_eq(fl_timeline_is_alive(tl), 1);
	fl_timeline_unref(named);
	fl_timeline_unref(tl);
}

FL_TEST(inc_signals_every_point_up_to_counter_in_order)
{
	enum { N = 6 };
	static const uint64_t values[N] = { 4, 2, 6, 1, 5, 3 };
	struct fl_timeline *tl = new_timeline(0);
	struct fl_test_order_cb cbs[N];
	struct fl_fence *f[N];
	uint64_t log[N];
	int len = 0;

	for (int i = 0; i < N; i++) {
		f[i] = fl_test_fence_new(tl, values[i], NULL);
		cbs[i] = (struct fl_test_order_cb){ .value = values[i], .log = log, .len = &len };
		fl_assert_int_eq(fl_fence_add_callback(f[i], &cbs[i].cb, fl_test_record_order), 0);
	}
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 3), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 3);
	fl_assert_int_eq(len, 3);
	for (int i = 0; i < N; i++)
		fl_assert_int_eq(fl_fence_get_status(f[i]), values[i] <= 3 ? 1 : 0);
	fl_assert_int_eq(fl_timeline_get_pending_count(tl), 3);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 3), 0);
	fl_assert_int_eq(len, N);
	for (int i = 0; i < N; i++)
		fl_assert_int_eq(log[i], i + 1);
	for (int i = 0; i < N; i++)
		fl_fence_unref(f[i]);
	fl_timeline_unref(tl);
}

FL_TEST(inc_by_zero_changes_nothing)
{
	struct fl_timeline *tl = new_timeline(0);
	struct fl_fence *f = fl_test_fence_new(tl, 1, NULL);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 0), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 0);
	fl_assert_int_eq(fl_fence_get_status(f), 0);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(fence_at_reached_value_is_born_signaled)
{
	struct fl_timeline *tl = new_timeline(0);
	struct fl_fence *f;

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 10), 0);
	f = fl_test_fence_new(tl, 7, NULL);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_assert_int_eq(fl_timeline_get_pending_count(tl), 0);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(values_beyond_2_32_use_64_bits)
{
	struct fl_timeline *tl = new_timeline(0);
	const uint64_t big = (1ull << 32) + 5;
	struct fl_fence *f = fl_test_fence_new(tl, big, NULL),
			*small = fl_test_fence_new(tl, 5, NULL);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1ull << 32), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 1ull << 32);
	fl_assert_int_eq(fl_fence_get_status(small), 1);
	fl_assert_int_eq(fl_fence_get_status(f), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 5), 0);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_assert_int_eq(fl_test_timeline_value(tl), big);
	fl_fence_unref(small);
	fl_fence_unref(f);

	/* A point far beyond 2^32 ahead is not "passed" on a 64-bit counter. */
	f = fl_test_fence_new(tl, big + (1ull << 33), NULL);
	fl_assert_int_eq(fl_fence_get_status(f), 0);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(inc_of_more_than_int_max_is_one_step_on_64_bit_timeline)
{
	struct fl_timeline *tl = new_timeline(0);
	struct fl_fence *f = fl_test_fence_new(tl, 0xF0000000u, NULL);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 0xF0000000u), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 0xF0000000u);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

/* Moves a 32-bit timeline to @target without crossing any point. */
static void move_32bit(struct fl_timeline *tl, uint32_t target)
{
	uint32_t now = (uint32_t)fl_test_timeline_value(tl);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, (uint32_t)(target - now)), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), target);
}

FL_TEST(sw_sync_32bit_wraps_around)
{
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT);
	struct fl_fence *f;

	move_32bit(tl, 0xFFFFFFF0u);
	f = fl_test_fence_new(tl, 0x10, NULL);
	fl_assert_int_eq(fl_fence_get_status(f), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 0x10), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 0);
	fl_assert_int_eq(fl_fence_get_status(f), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 0x10), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 0x10);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(sw_sync_32bit_point_more_than_2_31_ahead_is_born_signaled)
{
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT);
	const uint32_t base = 0xFFFFFFF0u;
	struct fl_fence *far, *near;

	move_32bit(tl, base);
	far = fl_test_fence_new(tl, (uint32_t)(base + (1u << 31) + 1), NULL);
	near = fl_test_fence_new(tl, (uint32_t)(base + (1u << 31) - 1), NULL);
	fl_assert_int_eq(fl_fence_get_status(far), 1);
	fl_assert_int_eq(fl_fence_get_status(near), 0);
	fl_assert_int_eq(fl_timeline_get_pending_count(tl), 1);
	fl_fence_unref(far);
	fl_fence_unref(near);
	fl_timeline_unref(tl);
}

FL_TEST(sw_sync_32bit_inc_above_int_max_is_applied_in_steps)
{
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT);
	struct fl_fence *f = fl_test_fence_new(tl, 0x70000000u, NULL);

	/*
	 * In one step the counter would land 2^31 past the point, where the
	 * wrap-around comparison calls it not yet reached; steps of at most
	 * INT_MAX pass it on the way.
	 */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 0xF0000000u), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 0xF0000000u);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(sw_sync_32bit_inc_uses_low_32_bits_only)
{
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, (1ull << 32) + 5), 0);
	fl_assert_int_eq(fl_test_timeline_value(tl), 5);
	fl_timeline_unref(tl);
}

FL_TEST(sw_sync_32bit_point_values_are_32_bit)
{
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT);
	struct fl_fence *f = fl_test_fence_new(tl, 3, NULL);
	uint32_t data = 0;

	fl_assert_int_eq(fl_fence_get_point_driver_data(f, 0, &data, sizeof(data)), 4);
	fl_assert_int_eq(data, 3);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 3), 0);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(get_value_follows_inc)
{
	struct fl_timeline *tl = new_timeline(0);

	for (uint64_t i = 1; i <= 5; i++) {
		fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, i), 0);
		fl_assert_int_eq(fl_test_timeline_value(tl), i * (i + 1) / 2);
	}
	fl_timeline_unref(tl);
}

FL_TEST(value_str_prints_the_counter)
{
	struct fl_timeline *tl = new_timeline(0);
	char buf[32];

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 41), 0);
	fl_assert_int_eq(fl_timeline_get_value_str(tl, buf, sizeof(buf)), 0);
	fl_assert_str_eq(buf, "41");
	fl_timeline_unref(tl);
}

FL_TEST(is_sw_sync_is_false_for_other_timelines)
{
	struct mock_timeline *m = NULL;

	fl_assert_int_eq(mock_timeline_create(0, "mock", &m), 0);
	fl_assert_int_eq(fl_timeline_is_sw_sync(m->tl), 0);
	fl_assert_int_eq(fl_timeline_is_sw_sync(NULL), 0);
	mock_timeline_free(m);
}

FL_TEST(sw_sync_calls_on_other_timelines_return_einval)
{
	struct fl_fence *f = (struct fl_fence *)0x1;
	struct mock_timeline *m = NULL;
	uint64_t v = 99;

	fl_assert_int_eq(mock_timeline_create(0, "mock", &m), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(m->tl, 1), -EINVAL);
	fl_assert_int_eq(fl_sw_sync_fence_create(m->tl, 1, NULL, &f), -EINVAL);
	fl_assert(f == (struct fl_fence *)0x1);
	fl_assert_int_eq(fl_sw_sync_timeline_get_value(m->tl, &v), -EINVAL);
	fl_assert_int_eq(v, 99);
	fl_assert_int_eq(m->counter, 0);
	mock_timeline_free(m);
}

FL_TEST(fill_driver_data_writes_32_bit_value)
{
	struct fl_timeline *tl = new_timeline(0);
	struct fl_fence *f = fl_test_fence_new(tl, 0x12345678u, NULL);
	uint32_t data = 0;
	char small[2];

	fl_assert_int_eq(fl_fence_get_point_driver_data(f, 0, &data, sizeof(data)), 4);
	fl_assert_int_eq(data, 0x12345678u);
	fl_assert_int_eq(fl_fence_get_point_driver_data(f, 0, small, sizeof(small)), -ENOMEM);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(inc_on_destroyed_timeline_returns_enoent)
{
	struct fl_timeline *tl = new_timeline(0);
	struct fl_timeline *other = fl_timeline_ref(tl);
	struct fl_fence *pending = fl_test_fence_new(tl, 1, NULL), *late;

	fl_timeline_kill(tl);
	fl_assert_int_eq(fl_fence_get_status(pending), -ENOENT);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(other, 1), -ENOENT);
	late = fl_test_fence_new(other, 5, NULL);
	fl_assert_int_eq(fl_fence_get_status(late), -ENOENT);
	fl_fence_unref(late);
	fl_fence_unref(pending);
	fl_timeline_unref(other);
}

FL_TEST(fence_name_is_kept_and_truncated)
{
	struct fl_timeline *tl = new_timeline(0);
	struct fl_fence *f = NULL, *g = NULL;

	fl_assert_int_eq(fl_sw_sync_fence_create(tl, 1, "frame", &f), 0);
	fl_assert_str_eq(fl_fence_get_name(f), "frame");
	fl_assert_int_eq(fl_sw_sync_fence_create(tl, 1, "0123456789012345678901234567890123", &g),
			 0);
	fl_assert_int_eq(strlen(fl_fence_get_name(g)), FL_NAME_MAX - 1);
	fl_fence_unref(g);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(unknown_timeline_flags_return_einval)
{
	struct fl_timeline *tl = (struct fl_timeline *)0x1;

	fl_assert_int_eq(fl_sw_sync_timeline_create("x", 1u << 5, &tl), -EINVAL);
	fl_assert(tl == (struct fl_timeline *)0x1);
}

/* timeline_fence_set_deadline(): each point keeps the earliest deadline set on it. */
FL_TEST(deadline_is_the_earliest_set_and_only_pending_points_take_one)
{
	struct fl_timeline *tl = new_timeline(FL_SW_SYNC_32BIT), *other = new_timeline(0);
	struct fl_fence *f = fl_test_fence_new(tl, 2, NULL), *g = fl_test_fence_new(other, 1, NULL);
	struct fl_fence *done = fl_test_fence_new(tl, 0, NULL), *m = NULL;
	uint64_t ns = 0;

	fl_assert_int_eq(fl_fence_get_deadline(f, &ns), -ENOENT);
	fl_assert_int_eq(fl_fence_set_deadline(f, 3000), 0);
	fl_assert_int_eq(fl_fence_set_deadline(f, 5000), 0);
	fl_assert_int_eq(fl_fence_get_deadline(f, &ns), 0);
	fl_assert_int_eq(ns, 3000);
	/* A merge passes a deadline to each point but has none itself. */
	fl_assert_int_eq(fl_fence_merge(f, g, "m", 0, &m), 0);
	fl_assert_int_eq(fl_fence_set_deadline(m, 1000), 0);
	fl_assert_int_eq(fl_fence_get_deadline(m, &ns), -EINVAL);
	fl_assert_int_eq(fl_fence_get_deadline(f, &ns), 0);
	fl_assert_int_eq(ns, 1000);
	fl_assert_int_eq(fl_fence_get_deadline(g, &ns), 0);
	fl_assert_int_eq(ns, 1000);
	/* Signalled: the hint is ignored, without an error. */
	fl_assert_int_eq(fl_fence_set_deadline(done, 1), 0);
	fl_assert_int_eq(fl_fence_get_deadline(done, &ns), -ENOENT);
	/* Still readable after the point signalled. */
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 2), 0);
	fl_assert_int_eq(fl_fence_get_deadline(f, &ns), 0);
	fl_assert_int_eq(ns, 1000);
	fl_fence_unref(m);
	fl_fence_unref(done);
	fl_fence_unref(g);
	fl_fence_unref(f);
	fl_timeline_unref(other);
	fl_timeline_unref(tl);
}

FL_TEST(deadline_of_a_driver_that_records_none_is_einval)
{
	struct mock_timeline *mock = mock_timeline_new(0, "mock");
	struct fl_fence *f = mock_fence_new(mock, 1);
	uint64_t ns = 0;

	fl_assert_int_eq(fl_fence_set_deadline(f, 1), 0);
	fl_assert_int_eq(fl_fence_get_deadline(f, &ns), -EINVAL);
	fl_fence_unref(f);
	mock_timeline_free(mock);
}

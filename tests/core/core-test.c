/* SPDX-License-Identifier: MIT */
/*
 * Timelines, points and single-timeline fences, driven through the mock
 * driver so the core is tested without sw_sync.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "mock-driver.h"
#include "runner.h"

static struct fl_sync_pt_info point_info(struct fl_fence *f, uint32_t index)
{
	struct fl_sync_pt_info pts[8];
	struct fl_fence_info info;

	fl_assert(index < 8);
	fl_assert_int_ge(fl_fence_get_info(f, &info, pts, 8), (long long)index + 1);
	return pts[index];
}

FL_TEST(timeline_create_gives_alive_timeline_with_driver_identity)
{
	struct mock_timeline *m = mock_timeline_new(0, "gpu");

	fl_assert_int_eq(fl_timeline_is_alive(m->tl), 1);
	fl_assert_str_eq(fl_timeline_get_name(m->tl), "gpu");
	fl_assert_str_eq(fl_timeline_get_driver_name(m->tl), "mock");
	fl_assert(fl_timeline_get_driver_data(m->tl) == m);
	fl_assert(fl_timeline_get_ops(m->tl) != NULL);
	fl_assert_str_eq(fl_timeline_get_ops(m->tl)->driver_name, "mock");
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 0);
	mock_timeline_free(m);
}

FL_TEST(timeline_create_without_name_uses_driver_name)
{
	struct mock_timeline *m = mock_timeline_new(MOCK_MINIMAL, NULL);

	fl_assert_str_eq(fl_timeline_get_name(m->tl), "mock-minimal");
	mock_timeline_free(m);
}

FL_TEST(timeline_name_is_truncated_to_31_bytes)
{
	const char *long_name = "0123456789012345678901234567890123456789";
	struct mock_timeline *m = mock_timeline_new(0, long_name);

	fl_assert_int_eq(strlen(fl_timeline_get_name(m->tl)), FL_NAME_MAX - 1);
	fl_assert_int_eq(strncmp(fl_timeline_get_name(m->tl), long_name, FL_NAME_MAX - 1), 0);
	mock_timeline_free(m);
}

FL_TEST(timeline_ids_increase_in_creation_order)
{
	struct mock_timeline *a = mock_timeline_new(0, "a");
	struct mock_timeline *b = mock_timeline_new(0, "b");
	struct mock_timeline *c = mock_timeline_new(MOCK_MINIMAL, "c");

	fl_assert(fl_timeline_get_id(a->tl) > 0);
	fl_assert(fl_timeline_get_id(b->tl) > fl_timeline_get_id(a->tl));
	fl_assert(fl_timeline_get_id(c->tl) > fl_timeline_get_id(b->tl));
	mock_timeline_free(c);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(timeline_ids_are_never_reused)
{
	struct mock_timeline *a = mock_timeline_new(0, "a");
	uint64_t first = fl_timeline_get_id(a->tl);

	mock_timeline_free(a);
	a = mock_timeline_new(0, "a");
	fl_assert(fl_timeline_get_id(a->tl) > first);
	mock_timeline_free(a);
}

FL_TEST(timeline_ref_returns_same_timeline_and_keeps_it_alive)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_timeline *extra = fl_timeline_ref(m->tl);
	struct fl_fence *f;

	fl_assert(extra == m->tl);
	f = mock_fence_new(m, 5);
	fl_assert(fl_timeline_unref(m->tl) == NULL);
	m->tl = NULL;
	fl_assert_int_eq(fl_timeline_is_alive(extra), 1);
	fl_assert_int_eq(fl_fence_get_status(f), 0);

	/* The extra handle can still signal. */
	mock_timeline_set_counter(m, 5);
	fl_assert_int_eq(fl_timeline_signal(extra), 1);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_timeline_unref(extra);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(last_handle_unref_fails_pending_points_with_enoent)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *done, *pending;

	mock_timeline_set_counter(m, 3);
	done = mock_fence_new(m, 2);
	pending = mock_fence_new(m, 10);
	m->tl = fl_timeline_unref(m->tl);

	fl_assert_int_eq(fl_fence_get_status(done), 1);
	fl_assert_int_eq(fl_fence_get_status(pending), -ENOENT);
	fl_assert_int_eq(point_info(pending, 0).status, -ENOENT);
	fl_assert(point_info(pending, 0).timestamp_ns != 0);
	fl_fence_unref(done);
	fl_fence_unref(pending);
	mock_timeline_free(m);
}

FL_TEST(timeline_destroy_fails_pending_points_and_keeps_signaled_ones)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_timeline *other = fl_timeline_ref(m->tl);
	struct fl_fence *done, *pending;
	uint64_t done_ts;

	done = mock_fence_new(m, 1);
	pending = mock_fence_new(m, 2);
	mock_timeline_advance(m, 1);
	done_ts = point_info(done, 0).timestamp_ns;

	fl_timeline_kill(m->tl);
	m->tl = NULL;
	fl_assert_int_eq(fl_timeline_is_alive(other), 0);
	fl_assert_int_eq(fl_fence_get_status(done), 1);
	fl_assert_int_eq(point_info(done, 0).timestamp_ns, done_ts);
	fl_assert_int_eq(fl_fence_get_status(pending), -ENOENT);
	fl_assert_int_eq(fl_timeline_get_pending_count(other), 0);

	/* The counter passing the point later changes nothing. */
	mock_timeline_set_counter(m, 5);
	fl_timeline_signal(other);
	fl_assert_int_eq(fl_fence_get_status(pending), -ENOENT);

	fl_fence_unref(done);
	fl_fence_unref(pending);
	m->tl = other;
	mock_timeline_free(m);
}

FL_TEST(fence_created_after_destroy_is_born_enoent)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_timeline *other = fl_timeline_ref(m->tl);
	struct fl_fence *f;

	fl_timeline_kill(m->tl);
	m->tl = other;
	f = mock_fence_new(m, 7);
	fl_assert_int_eq(fl_fence_get_status(f), -ENOENT);
	fl_assert_int_eq(point_info(f, 0).status, -ENOENT);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 0);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(destroy_and_unref_accept_null)
{
	fl_timeline_kill(NULL);
	fl_assert(fl_timeline_unref(NULL) == NULL);
	fl_assert(fl_timeline_ref(NULL) == NULL);
	fl_assert(fl_fence_unref(NULL) == NULL);
	fl_assert(fl_fence_ref(NULL) == NULL);
}

FL_TEST(fence_at_passed_value_is_born_signaled_with_timestamp_now)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence_info info;
	struct fl_sync_pt_info pt;
	uint64_t before, after;
	struct fl_fence *f;

	mock_timeline_set_counter(m, 10);
	before = fl_test_now_ns();
	f = mock_fence_new(m, 10);
	after = fl_test_now_ns();

	fl_assert_int_eq(fl_fence_get_status(f), 1);
	pt = point_info(f, 0);
	fl_assert_int_eq(pt.status, 1);
	fl_assert(pt.timestamp_ns >= before && pt.timestamp_ns <= after);
	fl_assert_int_eq(fl_fence_get_info(f, &info, NULL, 0), 0);
	fl_assert_int_eq(info.timestamp_ns, pt.timestamp_ns);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 0);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(pending_point_has_status_0_and_timestamp_0)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f = mock_fence_new(m, 1);
	struct fl_fence_info info;
	struct fl_sync_pt_info pt;

	pt = point_info(f, 0);
	fl_assert_int_eq(pt.status, 0);
	fl_assert_int_eq(pt.timestamp_ns, 0);
	fl_assert_int_eq(pt.value, 1);
	fl_assert_int_eq(pt.flags, 0);
	fl_assert_int_eq(pt.timeline_id, fl_timeline_get_id(m->tl));
	fl_assert_str_eq(pt.timeline_name, "tl");
	fl_assert_str_eq(pt.driver_name, "mock");
	fl_assert_int_eq(fl_fence_get_info(f, &info, NULL, 0), 0);
	fl_assert_int_eq(info.status, 0);
	fl_assert_int_eq(info.timestamp_ns, 0);
	fl_assert_int_eq(info.num_points, 1);
	fl_assert_int_eq(fl_fence_get_status(f), 0);
	fl_assert_int_eq(fl_fence_wait(f, 0), -ETIME);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(signal_sets_status_and_timestamp_once)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f = mock_fence_new(m, 3);
	uint64_t before, after, ts;

	before = fl_test_now_ns();
	fl_assert_int_eq(mock_timeline_advance(m, 3), 1);
	after = fl_test_now_ns();
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	ts = point_info(f, 0).timestamp_ns;
	fl_assert(ts >= before && ts <= after);

	/* Later signals, even an error for the same value, change nothing. */
	mock_timeline_set_error(m, 3, -EIO);
	fl_assert_int_eq(mock_timeline_advance(m, 9), 0);
	fl_assert_int_eq(fl_fence_get_status(f), 1);
	fl_assert_int_eq(point_info(f, 0).status, 1);
	fl_assert_int_eq(point_info(f, 0).timestamp_ns, ts);
	fl_assert_int_eq(fl_fence_wait(f, 0), 0);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(timestamps_are_monotonic_across_points_signaled_in_order)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f[6];
	uint64_t prev = 0;

	for (int i = 0; i < 6; i++)
		f[i] = mock_fence_new(m, i + 1);
	/* One point per signal, then three in one signal. */
	mock_timeline_advance(m, 1);
	mock_timeline_advance(m, 2);
	mock_timeline_advance(m, 3);
	fl_assert_int_eq(mock_timeline_advance(m, 6), 3);
	for (int i = 0; i < 6; i++) {
		uint64_t ts = point_info(f[i], 0).timestamp_ns;

		fl_assert(ts != 0);
		fl_assert(ts >= prev);
		prev = ts;
		fl_fence_unref(f[i]);
	}
	mock_timeline_free(m);
}

FL_TEST(has_signaled_error_propagates_to_point_and_fence)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f = mock_fence_new(m, 4);
	struct fl_fence_info info;

	mock_timeline_set_error(m, 4, -EIO);
	fl_assert_int_eq(fl_timeline_signal(m->tl), 1);
	fl_assert_int_eq(fl_fence_get_status(f), -EIO);
	fl_assert_int_eq(point_info(f, 0).status, -EIO);
	fl_assert(point_info(f, 0).timestamp_ns != 0);
	fl_assert_int_eq(fl_fence_get_info(f, &info, NULL, 0), 0);
	fl_assert_int_eq(info.status, -EIO);
	fl_assert_int_eq(info.timestamp_ns, point_info(f, 0).timestamp_ns);
	fl_assert_int_eq(fl_fence_wait(f, 0), -EIO);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 0);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(point_is_born_failed_when_has_signaled_errors_at_creation)
{
	struct mock_timeline *m = mock_timeline_new(MOCK_MINIMAL, "tl");
	struct fl_fence *f;

	mock_timeline_set_error(m, 2, -EPIPE);
	f = mock_fence_new(m, 2);
	fl_assert_int_eq(fl_fence_get_status(f), -EPIPE);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 0);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(two_point_fence_fails_as_soon_as_one_point_fails)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *both;

	fl_assert_int_eq(fl_fence_merge(fa, fb, "both", 0, &both), 0);
	mock_timeline_set_error(b, 1, -EIO);
	/* fb's point and the merge's dup of it. */
	fl_assert_int_eq(fl_timeline_signal(b->tl), 2);
	fl_assert_int_eq(fl_fence_get_status(both), -EIO);
	fl_assert_int_eq(fl_fence_wait(both, 0), -EIO);
	/* The other point is still pending, and signalling it changes nothing. */
	fl_assert_int_eq(fl_fence_get_status(fa), 0);
	mock_timeline_advance(a, 1);
	fl_assert_int_eq(fl_fence_get_status(both), -EIO);
	fl_fence_unref(both);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(two_point_fence_signals_once_both_points_signal)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"),
			     *b = mock_timeline_new(MOCK_MINIMAL, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *both;
	struct fl_fence_info info;
	uint64_t ts_b;

	fl_assert_int_eq(fl_fence_merge(fa, fb, NULL, 0, &both), 0);
	mock_timeline_advance(a, 1);
	fl_assert_int_eq(fl_fence_get_status(both), 0);
	mock_timeline_advance(b, 1);
	fl_assert_int_eq(fl_fence_get_status(both), 1);
	ts_b = point_info(both, 1).timestamp_ns;
	fl_assert_int_eq(fl_fence_get_info(both, &info, NULL, 0), 0);
	/* The fence completed when its last point did. */
	fl_assert_int_eq(info.timestamp_ns, ts_b);
	fl_fence_unref(both);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(signal_checks_only_points_that_can_have_changed)
{
	enum { N = 200, K = 7 };
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f[N];

	/* Created in a scrambled order: the core sorts, not the caller. */
	for (int i = 0; i < N; i++)
		f[i] = mock_fence_new(m, (uint64_t)(i * 37 % N) + 1);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), N);

	mock_timeline_reset_calls(m);
	fl_assert_int_eq(mock_timeline_advance(m, K), K);
	fl_assert_int_eq(m->calls.has_signaled, K + 1);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), N - K);

	/* Nothing moved: one look at the earliest pending point. */
	mock_timeline_reset_calls(m);
	fl_assert_int_eq(fl_timeline_signal(m->tl), 0);
	fl_assert_int_eq(m->calls.has_signaled, 1);

	/* Everything: every point once, and no extra call past the end. */
	mock_timeline_reset_calls(m);
	fl_assert_int_eq(mock_timeline_advance(m, N), N - K);
	fl_assert_int_eq(m->calls.has_signaled, N - K);
	mock_timeline_reset_calls(m);
	fl_assert_int_eq(fl_timeline_signal(m->tl), 0);
	fl_assert_int_eq(m->calls.has_signaled, 0);

	for (int i = 0; i < N; i++)
		fl_fence_unref(f[i]);
	mock_timeline_free(m);
}

FL_TEST(has_signaled_is_asked_once_at_creation)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *pending, *done;

	mock_timeline_reset_calls(m);
	pending = mock_fence_new(m, 5);
	fl_assert_int_eq(m->calls.has_signaled, 1);
	mock_timeline_set_counter(m, 2);
	done = mock_fence_new(m, 1);
	fl_assert_int_eq(m->calls.has_signaled, 2);
	fl_assert_int_eq(m->calls.has_signaled_before_init, 0);
	fl_fence_unref(done);
	fl_fence_unref(pending);
	mock_timeline_free(m);
}

FL_TEST(points_complete_in_value_order)
{
	enum { N = 16 };
	static const uint64_t values[N] = { 9, 3, 14, 1, 16, 7, 2, 12, 5, 11, 4, 15, 6, 10, 8, 13 };
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_test_order_cb cbs[N];
	struct fl_fence *f[N];
	uint64_t cb_log[N];
	int cb_len = 0;

	for (int i = 0; i < N; i++) {
		f[i] = mock_fence_new(m, values[i]);
		cbs[i] = (struct fl_test_order_cb){ .value = values[i],
						    .log = cb_log,
						    .len = &cb_len };
		fl_assert_int_eq(fl_fence_add_callback(f[i], &cbs[i].cb, fl_test_record_order), 0);
	}
	mock_timeline_reset_calls(m);
	fl_assert_int_eq(mock_timeline_advance(m, N), N);

	fl_assert_int_eq(m->log_len, N);
	fl_assert_int_eq(cb_len, N);
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(m->log[i], i + 1);
		fl_assert_int_eq(cb_log[i], i + 1);
	}
	for (int i = 0; i < N; i++)
		fl_fence_unref(f[i]);
	mock_timeline_free(m);
}

FL_TEST(pending_points_fail_in_value_order_on_destroy)
{
	enum { N = 8 };
	static const uint64_t values[N] = { 5, 2, 8, 1, 7, 3, 6, 4 };
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_test_order_cb cbs[N];
	struct fl_fence *f[N];
	uint64_t cb_log[N];
	int cb_len = 0;

	for (int i = 0; i < N; i++) {
		f[i] = mock_fence_new(m, values[i]);
		cbs[i] = (struct fl_test_order_cb){ .value = values[i],
						    .log = cb_log,
						    .len = &cb_len };
		fl_assert_int_eq(fl_fence_add_callback(f[i], &cbs[i].cb, fl_test_record_order), 0);
	}
	fl_timeline_kill(m->tl);
	m->tl = NULL;
	fl_assert_int_eq(cb_len, N);
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(cb_log[i], i + 1);
		fl_assert_int_eq(fl_fence_get_status(f[i]), -ENOENT);
	}
	for (int i = 0; i < N; i++)
		fl_fence_unref(f[i]);
	mock_timeline_free(m);
}

FL_TEST(values_above_2_32_are_ordered_as_64_bit)
{
	struct mock_timeline *m = mock_timeline_new(MOCK_MINIMAL, "tl");
	struct fl_fence *lo = mock_fence_new(m, 1ull << 32),
			*hi = mock_fence_new(m, (1ull << 40) + 1);

	fl_assert_int_eq(mock_timeline_advance(m, (1ull << 32) + 5), 1);
	fl_assert_int_eq(fl_fence_get_status(lo), 1);
	fl_assert_int_eq(fl_fence_get_status(hi), 0);
	fl_assert_int_eq(point_info(hi, 0).value, (1ull << 40) + 1);
	fl_assert_int_eq(mock_timeline_advance(m, UINT64_MAX), 1);
	fl_assert_int_eq(fl_fence_get_status(hi), 1);
	fl_fence_unref(lo);
	fl_fence_unref(hi);
	mock_timeline_free(m);
}

FL_TEST(compare_op_orders_pending_points)
{
	struct mock_timeline *m = mock_timeline_new(MOCK_DESCENDING, "down");
	struct fl_fence *f10, *f20, *f30;

	f10 = mock_fence_new(m, 10);
	f30 = mock_fence_new(m, 30);
	f20 = mock_fence_new(m, 20);
	/* Counting down, 30 comes first. */
	mock_timeline_reset_calls(m);
	fl_assert_int_eq(mock_timeline_advance(m, 25), 1);
	fl_assert_int_eq(fl_fence_get_status(f30), 1);
	fl_assert_int_eq(fl_fence_get_status(f20), 0);
	fl_assert_int_eq(m->calls.has_signaled, 2);
	fl_assert_int_eq(mock_timeline_advance(m, 10), 2);
	fl_assert_int_eq(fl_fence_get_status(f10), 1);
	fl_fence_unref(f10);
	fl_fence_unref(f20);
	fl_fence_unref(f30);
	mock_timeline_free(m);
}

FL_TEST(release_hooks_run_when_memory_goes)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *a, *b, *c;

	mock_timeline_set_counter(m, 1);
	a = mock_fence_new(m, 1);
	b = mock_fence_new(m, 2);
	c = mock_fence_new(m, 3);
	fl_assert_int_eq(m->calls.release_pt, 0);
	fl_fence_unref(a);
	fl_assert_int_eq(m->calls.release_pt, 1);
	/* The timeline lives on, dead, while a point refers to it. */
	m->tl = fl_timeline_unref(m->tl);
	fl_assert_int_eq(m->calls.release_timeline, 0);
	fl_assert_int_eq(fl_fence_get_status(b), -ENOENT);
	fl_fence_unref(b);
	fl_assert_int_eq(m->calls.release_pt, 2);
	fl_assert_int_eq(m->calls.release_timeline, 0);
	fl_fence_unref(c);
	fl_assert_int_eq(m->calls.release_pt, 3);
	fl_assert_int_eq(m->calls.release_timeline, 1);
	mock_timeline_free(m);
}

FL_TEST(release_timeline_runs_once_without_points)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_timeline *extra = fl_timeline_ref(m->tl);

	m->tl = fl_timeline_unref(m->tl);
	fl_assert_int_eq(m->calls.release_timeline, 0);
	fl_timeline_unref(extra);
	fl_assert_int_eq(m->calls.release_timeline, 1);
	mock_timeline_free(m);
}

FL_TEST(pending_count_tracks_pending_points_only)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f[4];

	mock_timeline_set_counter(m, 1);
	f[0] = mock_fence_new(m, 1); /* born signalled */
	f[1] = mock_fence_new(m, 2);
	f[2] = mock_fence_new(m, 3);
	f[3] = mock_fence_new(m, 4);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 3);
	mock_timeline_advance(m, 3);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 1);
	mock_timeline_advance(m, 4);
	fl_assert_int_eq(fl_timeline_get_pending_count(m->tl), 0);
	for (int i = 0; i < 4; i++)
		fl_fence_unref(f[i]);
	mock_timeline_free(m);
}

FL_TEST(value_str_uses_driver_op)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	char buf[32];

	mock_timeline_set_counter(m, 12345);
	fl_assert_int_eq(fl_timeline_get_value_str(m->tl, buf, sizeof(buf)), 0);
	fl_assert_str_eq(buf, "12345");
	fl_assert(m->calls.timeline_value_str >= 1);
	fl_assert_int_eq(fl_timeline_get_value_str(m->tl, buf, 3), 0);
	fl_assert_str_eq(buf, "12");
	mock_timeline_free(m);
}

FL_TEST(value_str_without_driver_op_is_empty)
{
	struct mock_timeline *m = mock_timeline_new(MOCK_MINIMAL, "tl");
	char buf[8] = "junk";

	fl_assert_int_eq(fl_timeline_get_value_str(m->tl, buf, sizeof(buf)), 0);
	fl_assert_str_eq(buf, "");
	mock_timeline_free(m);
}

FL_TEST(fence_name_defaults_to_timeline_and_value)
{
	struct mock_timeline *m = mock_timeline_new(0, "gpu");
	struct fl_fence *f = NULL, *g = NULL;

	fl_assert_int_eq(fl_fence_create(m->tl, 42, NULL, NULL, NULL, &f), 0);
	fl_assert_str_eq(fl_fence_get_name(f), "gpu-42");
	fl_assert_int_eq(fl_fence_create(m->tl, 43, "", NULL, NULL, &g), 0);
	fl_assert_str_eq(fl_fence_get_name(g), "gpu-43");
	fl_fence_unref(g);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(fence_name_is_truncated_to_31_bytes)
{
	const char *long_name = "frame-0123456789012345678901234567890123456789";
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence_info info;
	struct fl_fence *f;

	fl_assert_int_eq(mock_fence_create(m, 1, long_name, &f), 0);
	fl_assert_int_eq(strlen(fl_fence_get_name(f)), FL_NAME_MAX - 1);
	fl_assert_int_eq(strncmp(fl_fence_get_name(f), long_name, FL_NAME_MAX - 1), 0);
	fl_assert_int_eq(fl_fence_get_info(f, &info, NULL, 0), 0);
	fl_assert_str_eq(info.name, fl_fence_get_name(f));
	fl_fence_unref(f);
	mock_timeline_free(m);
}

struct init_seen {
	struct fl_timeline *tl;
	int calls;
	int ok;
};

static void check_init(struct fl_sync_pt *pt, void *data)
{
	struct init_seen *seen = data;
	const unsigned char *pd = fl_sync_pt_get_driver_data(pt);
	int zero = 1;

	seen->calls++;
	for (size_t i = 0; pd && i < sizeof(struct mock_pt_data); i++)
		zero &= pd[i] == 0;
	seen->ok = pd && zero && fl_sync_pt_get_value(pt) == 77 &&
		   fl_sync_pt_get_timeline(pt) == seen->tl && fl_sync_pt_get_status(pt) == 0;
}

FL_TEST(init_hook_sees_zeroed_driver_data_before_the_first_check)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct init_seen seen = { .tl = m->tl };
	struct fl_fence *f;

	mock_timeline_reset_calls(m);
	fl_assert_int_eq(fl_fence_create(m->tl, 77, NULL, check_init, &seen, &f), 0);
	fl_assert_int_eq(seen.calls, 1);
	fl_assert(seen.ok);
	/* check_init never set the magic, so the mock saw no initialised data. */
	fl_assert_int_eq(m->calls.has_signaled, 1);
	fl_assert_int_eq(m->calls.has_signaled_before_init, 1);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(minimal_driver_has_no_driver_data)
{
	struct mock_timeline *m = mock_timeline_new(MOCK_MINIMAL, "tl");
	struct fl_fence *f = mock_fence_new(m, 1);
	char buf[16];

	fl_assert_int_eq(fl_fence_get_point_driver_data(f, 0, buf, sizeof(buf)), 0);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(fill_driver_data_is_passed_through)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f;
	uint64_t tag = 0;
	char small[4];

	fl_assert_int_eq(mock_fence_create_tagged(m, 1, 0xfeedbeef, &f), 0);
	fl_assert_int_eq(fl_fence_get_point_driver_data(f, 0, &tag, sizeof(tag)), sizeof(tag));
	fl_assert_int_eq(tag, 0xfeedbeef);
	fl_assert_int_eq(fl_fence_get_point_driver_data(f, 0, small, sizeof(small)), -ENOMEM);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

FL_TEST(fence_get_info_counts_then_fills)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 2), *both;
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;

	fl_assert_int_eq(fl_fence_merge(fa, fb, "both", 0, &both), 0);
	fl_assert_int_eq(fl_fence_get_num_points(both), 2);
	fl_assert_int_eq(fl_fence_get_info(both, &info, NULL, 0), 0);
	fl_assert_int_eq(info.num_points, 2);
	fl_assert_str_eq(info.name, "both");
	fl_assert_int_eq(fl_fence_get_info(both, &info, pts, 1), 1);
	fl_assert_int_eq(info.num_points, 2);
	fl_assert_int_eq(pts[0].value, 1);
	fl_assert_int_eq(fl_fence_get_info(both, NULL, pts, 2), 2);
	fl_assert_int_eq(pts[1].value, 2);
	fl_assert_str_eq(pts[1].timeline_name, "b");
	fl_fence_unref(both);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(fence_ref_returns_same_fence)
{
	struct mock_timeline *m = mock_timeline_new(0, "tl");
	struct fl_fence *f = mock_fence_new(m, 1);

	fl_assert(fl_fence_ref(f) == f);
	fl_assert(fl_fence_unref(f) == NULL);
	/* Still alive through the first reference. */
	fl_assert_int_eq(fl_fence_get_num_points(f), 1);
	fl_fence_unref(f);
	mock_timeline_free(m);
}

/*
 * fl_timeline_fail_pending(): a reset fails only the work not done. The
 * driver's counter moved without a signal yet: the points it reached
 * signal, the others fail with the error at one time, other timelines and
 * later points are untouched, and a killed timeline refuses.
 */
FL_TEST(fail_pending_signals_what_the_counter_reached_and_fails_the_rest)
{
	struct mock_timeline *m = mock_timeline_new(0, "gpu"), *o = mock_timeline_new(0, "cam");
	struct fl_fence *f1 = mock_fence_new(m, 1), *f2 = mock_fence_new(m, 2);
	struct fl_fence *f3 = mock_fence_new(m, 3), *g1 = mock_fence_new(o, 1), *f4;
	struct fl_fence_info i2, i3;

	fl_assert_int_eq(fl_timeline_fail_pending(m->tl, 0), -EINVAL);
	fl_assert_int_eq(fl_timeline_fail_pending(m->tl, -4096), -EINVAL);
	mock_timeline_set_counter(m, 1);
	fl_assert_int_eq(fl_timeline_fail_pending(m->tl, -EIO), 2);
	fl_assert_int_eq(fl_fence_get_status(f1), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_fence_get_status(f2), -EIO);
	fl_assert_int_eq(fl_fence_get_status(f3), -EIO);
	fl_assert(fl_fence_get_info(f2, &i2, NULL, 0) >= 0);
	fl_assert(fl_fence_get_info(f3, &i3, NULL, 0) >= 0);
	fl_assert_int_eq(i2.timestamp_ns, i3.timestamp_ns);
	fl_assert_int_eq(fl_fence_get_status(g1), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_is_alive(m->tl), 1);
	/* The next frame, made after the reset, is pending and signals as usual. */
	f4 = mock_fence_new(m, 2);
	fl_assert_int_eq(fl_fence_get_status(f4), FL_STATUS_ACTIVE);
	fl_assert_int_eq(mock_timeline_advance(m, 2), 1);
	fl_assert_int_eq(fl_fence_get_status(f4), FL_STATUS_SIGNALED);
	fl_assert_int_eq(fl_timeline_fail_pending(m->tl, -ETIMEDOUT), 0);
	fl_assert_int_eq(fl_timeline_fail_pending(NULL, -EIO), -EINVAL);
	fl_fence_unref(f4);
	fl_fence_unref(g1);
	fl_fence_unref(f3);
	fl_fence_unref(f2);
	fl_fence_unref(f1);
	fl_timeline_kill(fl_timeline_ref(m->tl));
	fl_assert_int_eq(fl_timeline_fail_pending(m->tl, -EIO), -ENOENT);
	mock_timeline_free(o);
	mock_timeline_free(m);
}

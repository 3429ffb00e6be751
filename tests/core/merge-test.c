/* SPDX-License-Identifier: MIT */
/*
 * fl_fence_merge(): which points a merged fence keeps, in which order, and
 * how its status is computed with and without FL_MERGE_WAIT_ALL.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <fenceline/fenceline.h>

#include "mock-driver.h"
#include "runner.h"

#define MAX_PTS 16

static struct fl_fence *merge(struct fl_fence *a, struct fl_fence *b, unsigned int flags)
{
	struct fl_fence *out = NULL;

	fl_assert_int_eq(fl_fence_merge(a, b, NULL, flags, &out), 0);
	fl_assert(out != NULL && out != a && out != b);
	return out;
}

static int points(struct fl_fence *f, struct fl_sync_pt_info *pts)
{
	struct fl_fence_info info;
	int n = fl_fence_get_info(f, &info, pts, MAX_PTS);

	fl_assert_int_ge(n, 1);
	fl_assert_int_eq(n, info.num_points);
	fl_assert_int_eq(n, fl_fence_get_num_points(f));
	return n;
}

/* The points of @f as (timeline id, value) pairs must be exactly these. */
static void assert_points(struct fl_fence *f, int n, const struct mock_timeline *const *tls,
			  const uint64_t *values)
{
	struct fl_sync_pt_info pts[MAX_PTS];

	fl_assert_int_eq(points(f, pts), n);
	for (int i = 0; i < n; i++) {
		fl_assert_int_eq(pts[i].timeline_id, fl_timeline_get_id(tls[i]->tl));
		fl_assert_int_eq(pts[i].value, values[i]);
	}
}

FL_TEST(merge_of_two_timelines_holds_both_points)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"),
			     *b = mock_timeline_new(MOCK_MINIMAL, "b");
	struct fl_fence *fa = mock_fence_new(a, 3), *fb = mock_fence_new(b, 9), *m;
	const struct mock_timeline *tls[] = { a, b };

	m = merge(fa, fb, 0);
	assert_points(m, 2, tls, (const uint64_t[]){ 3, 9 });
	fl_assert_int_eq(fl_fence_get_status(m), 0);
	mock_timeline_advance(a, 3);
	fl_assert_int_eq(fl_fence_get_status(m), 0);
	mock_timeline_advance(b, 9);
	fl_assert_int_eq(fl_fence_get_status(m), 1);
	/* The inputs are untouched. */
	fl_assert_int_eq(fl_fence_get_num_points(fa), 1);
	fl_assert_int_eq(fl_fence_get_num_points(fb), 1);
	fl_fence_unref(m);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

static void check_keeps_later_point(unsigned int flags)
{
	struct mock_timeline *t = mock_timeline_new(flags, "t");
	struct fl_fence *early = mock_fence_new(t, 4), *late = mock_fence_new(t, 8), *ab, *ba;
	const struct mock_timeline *tls[] = { t };

	ab = merge(early, late, 0);
	ba = merge(late, early, 0);
	assert_points(ab, 1, tls, (const uint64_t[]){ 8 });
	assert_points(ba, 1, tls, (const uint64_t[]){ 8 });
	mock_timeline_advance(t, 4);
	fl_assert_int_eq(fl_fence_get_status(ab), 0);
	fl_assert_int_eq(fl_fence_get_status(ba), 0);
	mock_timeline_advance(t, 8);
	fl_assert_int_eq(fl_fence_get_status(ab), 1);
	fl_assert_int_eq(fl_fence_get_status(ba), 1);
	fl_fence_unref(ab);
	fl_fence_unref(ba);
	fl_fence_unref(early);
	fl_fence_unref(late);
	mock_timeline_free(t);
}

FL_TEST(merge_same_timeline_keeps_later_point)
{
	check_keeps_later_point(0);
}

FL_TEST(merge_same_timeline_without_compare_keeps_larger_value)
{
	check_keeps_later_point(MOCK_MINIMAL);
}

FL_TEST(merge_same_timeline_keeps_later_point_by_driver_compare)
{
	/* Counting down, 5 comes after 10 even though its value is smaller. */
	struct mock_timeline *t = mock_timeline_new(MOCK_DESCENDING, "down");
	struct fl_fence *f10 = mock_fence_new(t, 10), *f5 = mock_fence_new(t, 5), *ab, *ba;
	const struct mock_timeline *tls[] = { t };

	mock_timeline_reset_calls(t);
	ab = merge(f10, f5, 0);
	ba = merge(f5, f10, 0);
	fl_assert(t->calls.compare >= 2);
	assert_points(ab, 1, tls, (const uint64_t[]){ 5 });
	assert_points(ba, 1, tls, (const uint64_t[]){ 5 });
	mock_timeline_advance(t, 10);
	fl_assert_int_eq(fl_fence_get_status(f10), 1);
	fl_assert_int_eq(fl_fence_get_status(ab), 0);
	mock_timeline_advance(t, 5);
	fl_assert_int_eq(fl_fence_get_status(ab), 1);
	fl_assert_int_eq(fl_fence_get_status(ba), 1);
	fl_fence_unref(ab);
	fl_fence_unref(ba);
	fl_fence_unref(f10);
	fl_fence_unref(f5);
	mock_timeline_free(t);
}

FL_TEST(merge_with_itself_gives_new_fence_with_same_points)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 2), *ab, *self, *single;
	const struct mock_timeline *tls[] = { a, b };

	ab = merge(fa, fb, 0);
	self = merge(ab, ab, 0);
	assert_points(self, 2, tls, (const uint64_t[]){ 1, 2 });
	single = merge(fa, fa, 0);
	assert_points(single, 1, tls, (const uint64_t[]){ 1 });
	fl_fence_unref(single);
	fl_fence_unref(self);
	fl_fence_unref(ab);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_with_signaled_fence_waits_for_the_other)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *done, *pending, *m, *same;
	struct fl_sync_pt_info pts[MAX_PTS];

	mock_timeline_set_counter(a, 5);
	done = mock_fence_new(a, 5);
	pending = mock_fence_new(b, 1);
	m = merge(done, pending, 0);
	fl_assert_int_eq(points(m, pts), 2);
	fl_assert_int_eq(pts[0].status, 1);
	fl_assert_int_eq(pts[1].status, 0);
	fl_assert_int_eq(fl_fence_get_status(m), 0);
	mock_timeline_advance(b, 1);
	fl_assert_int_eq(fl_fence_get_status(m), 1);

	/* On one timeline the pending later point wins over the signalled one. */
	fl_fence_unref(pending);
	pending = mock_fence_new(a, 7);
	same = merge(pending, done, 0);
	fl_assert_int_eq(points(same, pts), 1);
	fl_assert_int_eq(pts[0].value, 7);
	fl_assert_int_eq(fl_fence_get_status(same), 0);

	fl_fence_unref(same);
	fl_fence_unref(m);
	fl_fence_unref(done);
	fl_fence_unref(pending);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_of_two_signaled_fences_is_born_signaled)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa, *fb, *m;

	mock_timeline_set_counter(a, 1);
	mock_timeline_set_counter(b, 1);
	fa = mock_fence_new(a, 1);
	fb = mock_fence_new(b, 1);
	m = merge(fa, fb, 0);
	fl_assert_int_eq(fl_fence_get_status(m), 1);
	fl_assert_int_eq(fl_fence_wait(m, 0), 0);
	fl_fence_unref(m);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_errored_point_wins_over_pending_later_point)
{
	struct mock_timeline *t = mock_timeline_new(0, "t"), *u = mock_timeline_new(0, "u");
	struct fl_fence *failed, *later, *ab, *ba, *again, *other;
	const struct mock_timeline *tls[] = { t, u };

	mock_timeline_set_error(t, 3, -EIO);
	failed = mock_fence_new(t, 3);
	fl_assert_int_eq(fl_fence_get_status(failed), -EIO);
	later = mock_fence_new(t, 8);

	ab = merge(failed, later, 0);
	ba = merge(later, failed, 0);
	assert_points(ab, 1, (const struct mock_timeline *const[]){ t }, (const uint64_t[]){ 3 });
	assert_points(ba, 1, (const struct mock_timeline *const[]){ t }, (const uint64_t[]){ 3 });
	fl_assert_int_eq(fl_fence_get_status(ab), -EIO);
	fl_assert_int_eq(fl_fence_get_status(ba), -EIO);

	/* The error survives further merges with newer points. */
	other = mock_fence_new(u, 1);
	again = merge(ab, other, 0);
	fl_fence_unref(ab);
	ab = merge(again, later, 0);
	assert_points(ab, 2, tls, (const uint64_t[]){ 3, 1 });
	fl_assert_int_eq(fl_fence_get_status(ab), -EIO);

	fl_fence_unref(ab);
	fl_fence_unref(again);
	fl_fence_unref(ba);
	fl_fence_unref(other);
	fl_fence_unref(failed);
	fl_fence_unref(later);
	mock_timeline_free(u);
	mock_timeline_free(t);
}

FL_TEST(merge_chain_stays_bounded_by_timeline_count)
{
	enum { TIMELINES = 8, MERGES = 10000 };
	struct mock_timeline *tl[TIMELINES];
	struct fl_sync_pt_info pts[MAX_PTS];
	struct fl_fence *acc;

	for (int i = 0; i < TIMELINES; i++)
		tl[i] = mock_timeline_new(i % 2 ? MOCK_MINIMAL : 0, "chain");
	acc = mock_fence_new(tl[0], 0);
	for (int i = 1; i <= MERGES; i++) {
		struct fl_fence *f = mock_fence_new(tl[i % TIMELINES], (uint64_t)i);
		struct fl_fence *next = merge(acc, f, 0);

		fl_fence_unref(f);
		fl_fence_unref(acc);
		acc = next;
		fl_assert(fl_fence_get_num_points(acc) <= TIMELINES);
	}
	fl_assert_int_eq(points(acc, pts), TIMELINES);
	/* Each timeline kept its latest point: the last i with i % 8 == k. */
	for (int k = 0; k < TIMELINES; k++) {
		fl_assert_int_eq(pts[k].timeline_id, fl_timeline_get_id(tl[k]->tl));
		fl_assert_int_eq(pts[k].value, MERGES - (MERGES - k) % TIMELINES);
	}
	for (int k = 0; k < TIMELINES; k++)
		mock_timeline_advance(tl[k], MERGES);
	fl_assert_int_eq(fl_fence_get_status(acc), 1);
	fl_fence_unref(acc);
	for (int i = 0; i < TIMELINES; i++)
		mock_timeline_free(tl[i]);
}

FL_TEST(merge_sorts_points_by_timeline_id)
{
	enum { N = 5 };
	struct mock_timeline *tl[N];
	struct fl_fence *f[N], *acc;
	struct fl_sync_pt_info pts[MAX_PTS];

	for (int i = 0; i < N; i++) {
		tl[i] = mock_timeline_new(0, "sorted");
		f[i] = mock_fence_new(tl[i], 100 - i);
	}
	/* Merge from the newest timeline to the oldest. */
	acc = fl_fence_ref(f[N - 1]);
	for (int i = N - 2; i >= 0; i--) {
		struct fl_fence *next = merge(f[i], acc, 0);

		fl_fence_unref(acc);
		acc = next;
	}
	fl_assert_int_eq(points(acc, pts), N);
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(pts[i].timeline_id, fl_timeline_get_id(tl[i]->tl));
		fl_assert_int_eq(pts[i].value, 100 - i);
	}
	fl_fence_unref(acc);
	for (int i = 0; i < N; i++) {
		fl_fence_unref(f[i]);
		mock_timeline_free(tl[i]);
	}
}

FL_TEST(merge_result_does_not_depend_on_argument_order)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b"),
			     *c = mock_timeline_new(0, "c");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 2),
			*fc = mock_fence_new(c, 3);
	struct fl_fence *ac = merge(fa, fc, 0), *x, *y;
	struct fl_sync_pt_info px[MAX_PTS], py[MAX_PTS];

	x = merge(ac, fb, 0);
	y = merge(fb, ac, 0);
	fl_assert_int_eq(points(x, px), 3);
	fl_assert_int_eq(points(y, py), 3);
	for (int i = 0; i < 3; i++) {
		fl_assert_int_eq(px[i].timeline_id, py[i].timeline_id);
		fl_assert_int_eq(px[i].value, py[i].value);
		fl_assert_int_eq(px[i].value, i + 1);
	}
	fl_fence_unref(x);
	fl_fence_unref(y);
	fl_fence_unref(ac);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	fl_fence_unref(fc);
	mock_timeline_free(c);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_default_fails_as_soon_as_one_point_fails)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *m;

	m = merge(fa, fb, 0);
	mock_timeline_set_error(b, 1, -EIO);
	fl_timeline_signal(b->tl);
	fl_assert_int_eq(fl_fence_get_status(fa), 0);
	fl_assert_int_eq(fl_fence_get_status(m), -EIO);
	fl_assert_int_eq(fl_fence_wait(m, 0), -EIO);
	fl_fence_unref(m);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_wait_all_waits_for_every_point)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *m;
	struct fl_fence_info info;

	m = merge(fa, fb, FL_MERGE_WAIT_ALL);
	mock_timeline_set_error(a, 1, -EIO);
	fl_timeline_signal(a->tl);
	fl_assert_int_eq(fl_fence_get_status(m), 0);
	fl_assert_int_eq(fl_fence_wait(m, 0), -ETIME);
	mock_timeline_advance(b, 1);
	fl_assert_int_eq(fl_fence_get_status(m), -EIO);
	fl_assert_int_eq(fl_fence_get_info(m, &info, NULL, 0), 0);
	fl_assert_int_eq(info.status, -EIO);
	fl_fence_unref(m);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_wait_all_reports_first_error_in_point_order)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *all, *fast;

	all = merge(fb, fa, FL_MERGE_WAIT_ALL);
	fast = merge(fa, fb, 0);
	/* b (the later point in fence order) fails first... */
	mock_timeline_set_error(b, 1, -EIO);
	fl_timeline_signal(b->tl);
	fl_assert_int_eq(fl_fence_get_status(fast), -EIO);
	fl_assert_int_eq(fl_fence_get_status(all), 0);
	/* ...but the wait-all fence reports a's error, the first in point order. */
	mock_timeline_set_error(a, 1, -EBUSY);
	fl_timeline_signal(a->tl);
	fl_assert_int_eq(fl_fence_get_status(all), -EBUSY);
	fl_assert_int_eq(fl_fence_get_status(fast), -EIO);
	fl_fence_unref(all);
	fl_fence_unref(fast);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_wait_all_signals_when_every_point_signals)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *m;

	m = merge(fa, fb, FL_MERGE_WAIT_ALL);
	mock_timeline_advance(b, 1);
	fl_assert_int_eq(fl_fence_get_status(m), 0);
	mock_timeline_advance(a, 1);
	fl_assert_int_eq(fl_fence_get_status(m), 1);
	fl_fence_unref(m);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

FL_TEST(merge_name_defaults_to_merged_and_is_truncated)
{
	const char *long_name = "a-very-long-merged-fence-name-0123456789";
	struct mock_timeline *t = mock_timeline_new(0, "t");
	struct fl_fence *f = mock_fence_new(t, 1), *m;

	fl_assert_int_eq(fl_fence_merge(f, f, NULL, 0, &m), 0);
	fl_assert_str_eq(fl_fence_get_name(m), "merged");
	fl_fence_unref(m);
	fl_assert_int_eq(fl_fence_merge(f, f, "", 0, &m), 0);
	fl_assert_str_eq(fl_fence_get_name(m), "merged");
	fl_fence_unref(m);
	fl_assert_int_eq(fl_fence_merge(f, f, long_name, 0, &m), 0);
	fl_assert_int_eq(strlen(fl_fence_get_name(m)), FL_NAME_MAX - 1);
	fl_assert_int_eq(strncmp(fl_fence_get_name(m), long_name, FL_NAME_MAX - 1), 0);
	fl_fence_unref(m);
	fl_fence_unref(f);
	mock_timeline_free(t);
}

FL_TEST(merge_calls_dup_when_driver_has_it)
{
	struct mock_timeline *t = mock_timeline_new(0, "t"), *u = mock_timeline_new(0, "u");
	struct fl_fence *ft, *fu, *m;
	uint64_t tag = 0;

	fl_assert_int_eq(mock_fence_create_tagged(t, 1, 0xabc, &ft), 0);
	fl_assert_int_eq(mock_fence_create_tagged(u, 1, 0xdef, &fu), 0);
	mock_timeline_reset_calls(t);
	mock_timeline_reset_calls(u);
	m = merge(ft, fu, 0);
	fl_assert_int_eq(t->calls.dup, 1);
	fl_assert_int_eq(u->calls.dup, 1);
	/* dup copied the driver data into the new points. */
	fl_assert_int_eq(fl_fence_get_point_driver_data(m, 0, &tag, sizeof(tag)), sizeof(tag));
	fl_assert_int_eq(tag, 0xabc);
	fl_assert_int_eq(fl_fence_get_point_driver_data(m, 1, &tag, sizeof(tag)), sizeof(tag));
	fl_assert_int_eq(tag, 0xdef);
	/* The copies signal like the originals. */
	mock_timeline_advance(t, 1);
	mock_timeline_advance(u, 1);
	fl_assert_int_eq(fl_fence_get_status(m), 1);
	fl_fence_unref(m);
	fl_fence_unref(ft);
	fl_fence_unref(fu);
	mock_timeline_free(u);
	mock_timeline_free(t);
}

FL_TEST(merge_fails_with_dup_error)
{
	struct mock_timeline *t = mock_timeline_new(0, "t"), *u = mock_timeline_new(0, "u");
	struct fl_fence *ft = mock_fence_new(t, 1), *fu = mock_fence_new(u, 1);
	struct fl_fence *m = (struct fl_fence *)0x1;

	u->dup_error = -ENOMEM;
	fl_assert_int_eq(fl_fence_merge(ft, fu, NULL, 0, &m), -ENOMEM);
	fl_assert(m == (struct fl_fence *)0x1);
	fl_fence_unref(ft);
	fl_fence_unref(fu);
	mock_timeline_free(u);
	mock_timeline_free(t);
}

FL_TEST(merge_rejects_unknown_flags)
{
	struct mock_timeline *t = mock_timeline_new(0, "t");
	struct fl_fence *f = mock_fence_new(t, 1), *m = NULL;

	fl_assert_int_eq(fl_fence_merge(f, f, NULL, 1u << 7, &m), -EINVAL);
	fl_assert(m == NULL);
	fl_fence_unref(f);
	mock_timeline_free(t);
}

FL_TEST(merged_fence_timestamp_is_latest_point_timestamp)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *m;
	struct fl_sync_pt_info pts[MAX_PTS];
	struct fl_fence_info info;

	m = merge(fa, fb, 0);
	mock_timeline_advance(b, 1);
	mock_timeline_advance(a, 1);
	fl_assert_int_eq(fl_fence_get_info(m, &info, pts, MAX_PTS), 2);
	fl_assert(pts[0].timestamp_ns >= pts[1].timestamp_ns);
	fl_assert_int_eq(info.timestamp_ns, pts[0].timestamp_ns);
	fl_fence_unref(m);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

/*
 * FL_MERGE_MAINLINE is dma_fence_unwrap_merge(): completed points, their
 * errors included, are left out; the kernel uapi emulation relies on it.
 */
FL_TEST(merge_mainline_leaves_out_completed_points_and_their_errors)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b"),
			     *c = mock_timeline_new(0, "c");
	struct fl_fence *done, *failed, *pending, *m, *m2;
	const unsigned int flags = FL_MERGE_WAIT_ALL | FL_MERGE_MAINLINE;

	mock_timeline_set_counter(a, 1);
	done = mock_fence_new(a, 1);
	mock_timeline_set_error(b, 1, -EIO);
	failed = mock_fence_new(b, 1);
	pending = mock_fence_new(c, 5);
	m = merge(done, pending, flags);
	assert_points(m, 1, (const struct mock_timeline *const[]){ c }, (const uint64_t[]){ 5 });
	m2 = merge(failed, m, flags);
	assert_points(m2, 1, (const struct mock_timeline *const[]){ c }, (const uint64_t[]){ 5 });
	mock_timeline_advance(c, 5);
	fl_assert_int_eq(fl_fence_get_status(m2), 1);
	/* Without the flag the error is kept: fenceline's own rule. */
	fl_fence_unref(m2);
	m2 = merge(failed, m, FL_MERGE_WAIT_ALL);
	fl_assert_int_eq(fl_fence_get_status(m2), -EIO);
	fl_fence_unref(m2);
	fl_fence_unref(m);
	fl_fence_unref(done);
	fl_fence_unref(failed);
	fl_fence_unref(pending);
	mock_timeline_free(c);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

/* Nothing left pending: dma_fence_allocate_private_stub(), stamped with the latest point. */
FL_TEST(merge_mainline_of_completed_points_is_the_stub_with_latest_timestamp)
{
	struct mock_timeline *a = mock_timeline_new(0, "a"), *b = mock_timeline_new(0, "b");
	struct fl_fence *fa = mock_fence_new(a, 1), *fb = mock_fence_new(b, 1), *m, *again;
	struct fl_sync_pt_info pa, pb, pts[MAX_PTS];
	struct fl_fence_info info;

	mock_timeline_advance(a, 1);
	mock_timeline_advance(b, 1);
	fl_assert_int_eq(fl_fence_get_info(fa, NULL, &pa, 1), 1);
	fl_assert_int_eq(fl_fence_get_info(fb, NULL, &pb, 1), 1);
	fl_assert_int_eq(fl_fence_merge(fa, fb, "", FL_MERGE_WAIT_ALL | FL_MERGE_MAINLINE, &m), 0);
	fl_assert_int_eq(fl_fence_get_info(m, &info, pts, MAX_PTS), 1);
	fl_assert_str_eq(info.name, "");
	fl_assert_int_eq(info.status, 1);
	fl_assert_str_eq(pts[0].driver_name, "stub");
	fl_assert_str_eq(pts[0].timeline_name, "stub");
	fl_assert_int_eq(pts[0].status, 1);
	fl_assert_int_eq(pts[0].timestamp_ns,
			 pa.timestamp_ns > pb.timestamp_ns ? pa.timestamp_ns : pb.timestamp_ns);
	fl_assert_int_eq(fl_fence_wait(m, 0), 0);
	/* A stub merged again is left out like any completed point. */
	fl_assert_int_eq(fl_fence_merge(m, m, "x", FL_MERGE_MAINLINE, &again), 0);
	fl_assert_int_eq(fl_fence_get_info(again, NULL, pts, MAX_PTS), 1);
	fl_assert_str_eq(pts[0].driver_name, "stub");
	fl_fence_unref(again);
	fl_fence_unref(m);
	fl_fence_unref(fa);
	fl_fence_unref(fb);
	mock_timeline_free(b);
	mock_timeline_free(a);
}

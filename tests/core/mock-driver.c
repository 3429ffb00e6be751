/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock-driver.h"
#include "runner.h"

static struct mock_timeline *mock_of_pt(const struct fl_sync_pt *pt)
{
	return fl_timeline_get_driver_data(fl_sync_pt_get_timeline(pt));
}

static int find_error(const struct mock_timeline *mock, uint64_t value)
{
	for (int i = 0; i < mock->num_errors; i++)
		if (mock->errors[i].value == value)
			return mock->errors[i].error;
	return 0;
}

static void log_call(struct mock_timeline *mock, uint64_t value)
{
	unsigned int n = atomic_fetch_add(&mock->calls.has_signaled, 1);

	if (n < MOCK_LOG_SIZE)
		mock->log[n] = value;
	atomic_store(&mock->log_len, n + 1 < MOCK_LOG_SIZE ? n + 1 : MOCK_LOG_SIZE);
}

static int has_signaled(struct fl_sync_pt *pt)
{
	struct mock_timeline *mock = mock_of_pt(pt);
	uint64_t value = fl_sync_pt_get_value(pt);
	uint64_t counter = atomic_load(&mock->counter);
	int error;

	log_call(mock, value);
	if (!(mock->flags & MOCK_MINIMAL)) {
		const struct mock_pt_data *data = fl_sync_pt_get_driver_data(pt);

		if (!data || data->magic != MOCK_DATA_MAGIC)
			atomic_fetch_add(&mock->calls.has_signaled_before_init, 1);
	}
	error = find_error(mock, value);
	if (error)
		return error;
	if (mock->flags & MOCK_DESCENDING)
		return counter <= value;
	return counter >= value;
}

static int compare(const struct fl_sync_pt *a, const struct fl_sync_pt *b)
{
	struct mock_timeline *mock = mock_of_pt(a);
	uint64_t va = fl_sync_pt_get_value(a), vb = fl_sync_pt_get_value(b);
	int r = (va > vb) - (va < vb);

	atomic_fetch_add(&mock->calls.compare, 1);
	return mock->flags & MOCK_DESCENDING ? -r : r;
}

static int dup_pt(struct fl_sync_pt *dst, const struct fl_sync_pt *src)
{
	struct mock_timeline *mock = mock_of_pt(src);

	atomic_fetch_add(&mock->calls.dup, 1);
	if (mock->dup_error)
		return mock->dup_error;
	memcpy(fl_sync_pt_get_driver_data(dst), fl_sync_pt_get_driver_data(src),
	       sizeof(struct mock_pt_data));
	return 0;
}

/* Writes the point's tag, so tests can see what dup copied. */
static int fill_driver_data(const struct fl_sync_pt *pt, void *data, size_t size)
{
	const struct mock_pt_data *pd = fl_sync_pt_get_driver_data(pt);

	atomic_fetch_add(&mock_of_pt(pt)->calls.fill_driver_data, 1);
	if (size < sizeof(pd->tag))
		return -ENOMEM;
	memcpy(data, &pd->tag, sizeof(pd->tag));
	return sizeof(pd->tag);
}

static void timeline_value_str(struct fl_timeline *tl, char *str, size_t size)
{
	struct mock_timeline *mock = fl_timeline_get_driver_data(tl);

	atomic_fetch_add(&mock->calls.timeline_value_str, 1);
	snprintf(str, size, "%" PRIu64, atomic_load(&mock->counter));
}

static void pt_value_str(const struct fl_sync_pt *pt, char *str, size_t size)
{
	atomic_fetch_add(&mock_of_pt(pt)->calls.pt_value_str, 1);
	snprintf(str, size, "%" PRIu64, fl_sync_pt_get_value(pt));
}

static void release_pt(struct fl_sync_pt *pt)
{
	atomic_fetch_add(&mock_of_pt(pt)->calls.release_pt, 1);
}

static void release_timeline(struct fl_timeline *tl)
{
	struct mock_timeline *mock = fl_timeline_get_driver_data(tl);

	atomic_fetch_add(&mock->calls.release_timeline, 1);
}

static const struct fl_timeline_ops minimal_ops = {
	.driver_name = "mock-minimal",
	.has_signaled = has_signaled,
};

#define FULL_OPS                                                                   \
	.pt_data_size = sizeof(struct mock_pt_data), .has_signaled = has_signaled, \
	.compare = compare, .dup = dup_pt, .fill_driver_data = fill_driver_data,   \
	.timeline_value_str = timeline_value_str, .pt_value_str = pt_value_str,    \
	.release_pt = release_pt, .release_timeline = release_timeline

static const struct fl_timeline_ops full_ops = {
	.driver_name = "mock",
	FULL_OPS,
};

static const struct fl_timeline_ops descending_ops = {
	.driver_name = "mock-descending",
	FULL_OPS,
};

int mock_timeline_create(unsigned int flags, const char *name, struct mock_timeline **ret_mock)
{
	const struct fl_timeline_ops *ops = &full_ops;
	struct mock_timeline *mock;
	int r;

	if (flags & MOCK_MINIMAL)
		ops = &minimal_ops;
	else if (flags & MOCK_DESCENDING)
		ops = &descending_ops;
	mock = calloc(1, sizeof(*mock));
	if (!mock)
		return -ENOMEM;
	mock->flags = flags;
	atomic_store(&mock->counter, flags & MOCK_DESCENDING ? UINT64_MAX : 0);
	r = fl_timeline_create(ops, name, mock, &mock->tl);
	if (r < 0) {
		free(mock);
		return r;
	}
	*ret_mock = mock;
	return 0;
}

void mock_timeline_free(struct mock_timeline *mock)
{
	if (!mock)
		return;
	mock->tl = fl_timeline_unref(mock->tl);
	free(mock);
}

struct init_args {
	uint64_t tag;
};

static void init_pt(struct fl_sync_pt *pt, void *data)
{
	const struct init_args *args = data;
	struct mock_pt_data *pd = fl_sync_pt_get_driver_data(pt);

	pd->magic = MOCK_DATA_MAGIC;
	pd->tag = args->tag;
}

int mock_fence_create(struct mock_timeline *mock, uint64_t value, const char *name,
		      struct fl_fence **ret_fence)
{
	struct init_args args = { .tag = value };

	if (mock->flags & MOCK_MINIMAL)
		return fl_fence_create(mock->tl, value, name, NULL, NULL, ret_fence);
	return fl_fence_create(mock->tl, value, name, init_pt, &args, ret_fence);
}

int mock_fence_create_tagged(struct mock_timeline *mock, uint64_t value, uint64_t tag,
			     struct fl_fence **ret_fence)
{
	struct init_args args = { .tag = tag };

	if (mock->flags & MOCK_MINIMAL)
		return -EINVAL;
	return fl_fence_create(mock->tl, value, NULL, init_pt, &args, ret_fence);
}

struct mock_timeline *mock_timeline_new(unsigned int flags, const char *name)
{
	struct mock_timeline *mock = NULL;

	fl_assert_int_eq(mock_timeline_create(flags, name, &mock), 0);
	fl_assert(mock != NULL);
	return mock;
}

struct fl_fence *mock_fence_new(struct mock_timeline *mock, uint64_t value)
{
	struct fl_fence *fence = NULL;

	fl_assert_int_eq(mock_fence_create(mock, value, NULL, &fence), 0);
	fl_assert(fence != NULL);
	return fence;
}

void mock_timeline_set_counter(struct mock_timeline *mock, uint64_t counter)
{
	atomic_store(&mock->counter, counter);
}

int mock_timeline_advance(struct mock_timeline *mock, uint64_t counter)
{
	atomic_store(&mock->counter, counter);
	return fl_timeline_signal(mock->tl);
}

void mock_timeline_set_error(struct mock_timeline *mock, uint64_t value, int error)
{
	if (mock->num_errors < MOCK_MAX_ERRORS) {
		mock->errors[mock->num_errors].value = value;
		mock->errors[mock->num_errors].error = error;
		mock->num_errors++;
	}
}

void mock_timeline_reset_calls(struct mock_timeline *mock)
{
	memset(&mock->calls, 0, sizeof(mock->calls));
	atomic_store(&mock->log_len, 0);
}

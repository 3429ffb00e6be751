/* SPDX-License-Identifier: MIT */
/*
 * A timeline driver for tests of the core: its "hardware counter" is a
 * variable the test sets, it can fail chosen points, and it counts every op
 * call so tests can check what the core asked of it (for instance that a
 * signal only looks at the points that can have changed).
 *
 * Ownership: mock_timeline_create() makes a struct mock_timeline whose ->tl
 * is the test's handle. Drop every fence first, then mock_timeline_free()
 * (which drops ->tl if the test has not), since the driver ops still read
 * the struct while points exist.
 */
#ifndef FL_TESTS_MOCK_DRIVER_H
#define FL_TESTS_MOCK_DRIVER_H

#define FL_USE_UNSTABLE_DRIVER_API
#include <stdatomic.h>
#include <stdint.h>

#include <fenceline/driver/timeline.h>

enum mock_flags {
	/* Only driver_name and has_signaled: exercises every NULL-op path. */
	MOCK_MINIMAL = 1u << 0,
	/* The counter counts down: a point signals once counter <= value, so
	 * only the compare op, not the raw values, gives the right order. */
	MOCK_DESCENDING = 1u << 1,
};

#define MOCK_MAX_ERRORS 8
#define MOCK_LOG_SIZE	64
#define MOCK_DATA_MAGIC 0x6d6f636b64617461ull

/* The driver data of each point (full variants only). */
struct mock_pt_data {
	uint64_t magic;
	uint64_t tag; /* set by mock_fence_create_tagged(), copied by dup */
};

struct mock_calls {
	atomic_uint has_signaled;
	atomic_uint compare;
	atomic_uint dup;
	atomic_uint fill_driver_data;
	atomic_uint timeline_value_str;
	atomic_uint pt_value_str;
	atomic_uint release_pt;
	atomic_uint release_timeline;
	/* has_signaled called on a point whose init had not run */
	atomic_uint has_signaled_before_init;
};

struct mock_timeline {
	struct fl_timeline *tl; /* the test's handle; may be NULL once dropped */
	unsigned int flags;
	_Atomic uint64_t counter;
	struct {
		uint64_t value;
		int error;
	} errors[MOCK_MAX_ERRORS];
	int num_errors;
	int dup_error; /* returned by dup when nonzero */
	struct mock_calls calls;
	/* The values has_signaled was asked about, in call order. */
	uint64_t log[MOCK_LOG_SIZE];
	atomic_uint log_len;
};

int mock_timeline_create(unsigned int flags, const char *name, struct mock_timeline **ret_mock);
void mock_timeline_free(struct mock_timeline *mock);

/* A fence holding one point at @value (name NULL: the core's default). */
int mock_fence_create(struct mock_timeline *mock, uint64_t value, const char *name,
		      struct fl_fence **ret_fence);
/* Same, with @tag stored in the point's driver data (full variants only). */
int mock_fence_create_tagged(struct mock_timeline *mock, uint64_t value, uint64_t tag,
			     struct fl_fence **ret_fence);

/* Shorthands for the two above that fail the test instead of returning an error. */
struct mock_timeline *mock_timeline_new(unsigned int flags, const char *name);
struct fl_fence *mock_fence_new(struct mock_timeline *mock, uint64_t value);

/* Sets the counter without telling the core. */
void mock_timeline_set_counter(struct mock_timeline *mock, uint64_t counter);
/* Sets the counter and calls fl_timeline_signal(); returns its result. */
int mock_timeline_advance(struct mock_timeline *mock, uint64_t counter);
/* From now on has_signaled returns @error for a point at @value. */
void mock_timeline_set_error(struct mock_timeline *mock, uint64_t value, int error);
/* Forgets the call counters and the has_signaled log. */
void mock_timeline_reset_calls(struct mock_timeline *mock);

#endif /* FL_TESTS_MOCK_DRIVER_H */

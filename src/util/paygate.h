/* SPDX-License-Identifier: MIT */
/*
 * Whether a pool pays: the decision the heap pool's gate
 * (src/heap/pool-gate.c) and the fence-fd pool's (src/client/fdpool-gate.c)
 * share, from their running estimates of a use pooled and bare. Header
 * only: the heap library takes nothing else from util but the INI lexer.
 *
 * Hysteresis, so that noise does not flip it: once both ways have
 * FL_PAY_MIN_SAMPLES samples since the last decision, pooling goes on (or
 * stays on after a probe) only if pooled is at most 0.95 of bare, and a
 * pooled one goes off as soon as it is above bare. Off, it waits
 * FL_PAY_REPROBE uses before it is tried again, twice that after each
 * probe that fails, up to FL_PAY_REPROBE_MAX.
 */
#ifndef FL_UTIL_PAYGATE_H
#define FL_UTIL_PAYGATE_H

#include <stdbool.h>
#include <stdint.h>

#define FL_PAY_MIN_SAMPLES 16
#define FL_PAY_REPROBE	   4096
#define FL_PAY_REPROBE_MAX (64 * 4096)
#define FL_PAY_ON_PCT	   95
#define FL_PAY_OFF_PCT	   100

enum fl_pay_state {
	FL_PAY_LEARNING, /* pooling, sampling both ways, no decision yet */
	FL_PAY_ON, /* pooling pays; still sampled, in case that changes */
	FL_PAY_OFF, /* pooling did not pay: not used until the re-probe */
	FL_PAY_PROBING, /* off, tried again: pooling, sampling both ways */
};

/* One decision; zeroed (or fl__pay_init()) it is learning. */
struct fl_pay {
	enum fl_pay_state state;
	uint32_t npooled, nbare; /* samples since the last decision */
	uint64_t countdown; /* FL_PAY_OFF: uses left before the re-probe */
	uint64_t reprobe; /* the next countdown; 0 stands for FL_PAY_REPROBE */
	uint64_t offs; /* times turned off */
};

/* Counts one use of @p's pool; true while it pools (a count-down that ends starts a probe). */
static inline bool fl__pay_use(struct fl_pay *p)
{
	if (p->state != FL_PAY_OFF)
		return true;
	if (--p->countdown)
		return false;
	p->state = FL_PAY_PROBING;
	p->npooled = p->nbare = 0;
	return true;
}

/*
 * After a sample (@bare or pooled) went into the estimates @pooled_ns and
 * @bare_ns: decides once both ways have enough. True: it just turned off.
 */
static inline bool fl__pay_sampled(struct fl_pay *p, bool bare, uint64_t pooled_ns,
				   uint64_t bare_ns)
{
	uint64_t reprobe = p->reprobe ? p->reprobe : FL_PAY_REPROBE;

	if (bare)
		p->nbare++;
	else
		p->npooled++;
	if (p->npooled < FL_PAY_MIN_SAMPLES || p->nbare < FL_PAY_MIN_SAMPLES)
		return false;
	p->npooled = p->nbare = 0;
	if (p->state == FL_PAY_ON) {
		if (pooled_ns * 100 <= bare_ns * FL_PAY_OFF_PCT)
			return false;
	} else if (pooled_ns * 100 <= bare_ns * FL_PAY_ON_PCT) {
		p->state = FL_PAY_ON;
		p->reprobe = FL_PAY_REPROBE;
		return false;
	} else if (p->state == FL_PAY_PROBING && reprobe < FL_PAY_REPROBE_MAX) {
		/* A probe that fails waits longer for the next. */
		reprobe *= 2;
	}
	p->state = FL_PAY_OFF;
	p->reprobe = reprobe;
	p->countdown = reprobe;
	p->offs++;
	return true;
}

#endif /* FL_UTIL_PAYGATE_H */

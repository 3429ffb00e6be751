/* SPDX-License-Identifier: MIT */
/*
 * The heap pool's gate (src/heap/pool-gate.c, compiled in): its windows,
 * the paired ratios they give and the decision those lead to. The clock is
 * the test's: each allocation moves it by what the program would take per
 * buffer in that way, so nothing here depends on how fast or how busy the
 * machine is.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "pool-gate.h"
#include "runner.h"

#define SIZE (1u << 20)

/* A program allocating buffers of SIZE back to back, as the gate sees it. */
struct sim {
	struct fl_heap_gates gates;
	uint64_t now;
	bool last_pooled;
	unsigned int spill_left; /* allocations still slowed by the worker's work */
	unsigned int offs, bare; /* turned off; bare allocations */
};

static void sim_init(struct sim *s)
{
	/* Measured, not fixed. */
	unsetenv("FENCELINE_HEAP_POOL_COST");
	fl__heap_gate_init(&s->gates);
	s->now = 1000000;
	s->last_pooled = false;
	s->spill_left = 0;
	s->offs = s->bare = 0;
}

/*
 * One allocation and its share of the program's time: @pooled_ns or
 * @bare_ns per buffer, and @spill_ns more for each of the 8 allocations
 * after the program stopped taking pooled buffers (the worker still making
 * their replacements, on the program's CPU).
 */
static enum fl_heap_gate_pick sim_alloc(struct sim *s, uint64_t pooled_ns, uint64_t bare_ns,
					uint64_t spill_ns)
{
	bool off;
	enum fl_heap_gate_pick p = fl__heap_gate_pick(&s->gates, SIZE, false, s->now, &off);
	bool pooled = p == FL_GATE_POOL;

	fl_assert(p == FL_GATE_POOL || p == FL_GATE_BARE || p == FL_GATE_BARE_WINDOW);
	s->offs += off;
	s->bare += !pooled;
	if (s->last_pooled && !pooled)
		s->spill_left = 8;
	s->last_pooled = pooled;
	s->now += pooled ? pooled_ns : bare_ns;
	if (s->spill_left) {
		s->now += spill_ns;
		s->spill_left--;
	}
	return p;
}

static enum fl_pay_state state(const struct sim *s)
{
	return s->gates.g[0].pay.state;
}

/* Allocations until the gate decides, or @max; how many it took. */
static int until_decided(struct sim *s, uint64_t pooled_ns, uint64_t bare_ns, uint64_t spill_ns,
			 int max)
{
	int n = 0;

	while (n < max && (state(s) == FL_PAY_LEARNING || n == 0)) {
		sim_alloc(s, pooled_ns, bare_ns, spill_ns);
		n++;
	}
	return n;
}

FL_TEST(gate_pools_a_size_whose_program_runs_faster_pooled)
{
	struct sim s;
	int n;

	sim_init(&s);
	n = until_decided(&s, 6000, 10000, 0, 100000);
	fl_assert_int_eq(state(&s), FL_PAY_ON);
	fl_assert_int_eq(s.gates.g[0].ratio_pm, 600);
	/* 16 cycles of 4 windows of 8, and the first allocation of the next. */
	fl_assert_int_eq(n, FL_PAY_MIN_SAMPLES * FL_HEAP_GATE_CYCLE * FL_HEAP_GATE_WINDOW + 1);
	fl_assert(fl__heap_gate_pooling(&s.gates, SIZE));
	fl_assert_int_eq(s.offs, 0);
}

FL_TEST(gate_turns_off_a_size_whose_program_runs_slower_pooled)
{
	struct sim s;

	sim_init(&s);
	until_decided(&s, 10500, 10000, 0, 100000);
	fl_assert_int_eq(state(&s), FL_PAY_OFF);
	fl_assert_int_eq(s.offs, 1);
	fl_assert_int_eq(s.gates.g[0].ratio_pm, 1050);
	fl_assert(!fl__heap_gate_pooling(&s.gates, SIZE));
	/* Off: every allocation bare, none of them in a window, until the re-probe. */
	for (int i = 0; i < 100; i++)
		fl_assert_int_eq(sim_alloc(&s, 10500, 10000, 0), FL_GATE_BARE);
}

/*
 * The worker's work for a pooled window's buffers runs on after it. Were
 * the bare window measured right after, it would carry that work and make
 * a pool that costs 1.05x look like 0.84x; the guard window takes it.
 */
FL_TEST(gate_guard_windows_keep_the_workers_late_work_off_the_bare_figure)
{
	struct sim s;

	sim_init(&s);
	until_decided(&s, 10500, 10000, 2500, 100000);
	fl_assert_int_eq(state(&s), FL_PAY_OFF);
	fl_assert_int_eq(s.gates.g[0].ratio_pm, 1050);
}

/* A window that takes in a pause of the program's (a frame's wait, a sleep) decides nothing. */
FL_TEST(gate_is_not_swayed_by_a_pause_in_a_few_windows)
{
	struct sim s;
	int n = 0;

	sim_init(&s);
	while (state(&s) == FL_PAY_LEARNING && n < 100000) {
		/* A 10 ms pause every 100 allocations, whichever way they go. */
		sim_alloc(&s, 9000, 10000, 0);
		if (++n % 100 == 0)
			s.now += 10000000;
	}
	fl_assert_int_eq(state(&s), FL_PAY_ON);
	fl_assert_int_eq(s.gates.g[0].ratio_pm, 900);
}

FL_TEST(gate_keeps_one_allocation_in_eight_bare_once_on_and_turns_off_when_that_changes)
{
	enum { ALLOCS = 100 * FL_HEAP_GATE_CYCLE_ON * FL_HEAP_GATE_WINDOW };
	struct sim s;

	sim_init(&s);
	until_decided(&s, 6000, 10000, 0, 100000);
	fl_assert_int_eq(state(&s), FL_PAY_ON);
	s.bare = 0;
	for (int i = 0; i < ALLOCS; i++)
		sim_alloc(&s, 6000, 10000, 0);
	fl_assert_int_eq(state(&s), FL_PAY_ON);
	/* Two windows of FL_HEAP_GATE_CYCLE_ON: a guard and a measured one. */
	fl_assert_int_eq(s.bare, ALLOCS / 8);
	/* The machine gets busier: the pool now costs more than it saves, and goes. */
	for (int i = 0; i < ALLOCS && state(&s) == FL_PAY_ON; i++)
		sim_alloc(&s, 12000, 10000, 0);
	fl_assert_int_eq(state(&s), FL_PAY_OFF);
	fl_assert_int_eq(s.offs, 1);
}

/* Turned off, a size is tried again after its count-down, with windows afresh. */
FL_TEST(gate_probes_again_after_the_count_down_and_waits_longer_after_a_failed_probe)
{
	struct sim s;

	sim_init(&s);
	until_decided(&s, 12000, 10000, 0, 100000);
	fl_assert_int_eq(state(&s), FL_PAY_OFF);
	for (int i = 0; i < FL_PAY_REPROBE && state(&s) == FL_PAY_OFF; i++)
		sim_alloc(&s, 12000, 10000, 0);
	fl_assert_int_eq(state(&s), FL_PAY_PROBING);
	for (int i = 0; i < 100000 && state(&s) == FL_PAY_PROBING; i++)
		sim_alloc(&s, 12000, 10000, 0);
	fl_assert_int_eq(state(&s), FL_PAY_OFF);
	fl_assert_int_eq(s.gates.g[0].pay.countdown, 2 * FL_PAY_REPROBE);
	fl_assert_int_eq(s.offs, 2);
}

/* SPDX-License-Identifier: MIT */
/*
 * The heap pool's gate (src/heap/pool-gate.c, compiled in): what share of
 * the worker's CPU time it charges to pooling, and the decision that share
 * leads to. The figures are set, not measured, so nothing here depends on
 * how fast or how busy the machine is.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "pool-gate.h"
#include "runner.h"

/* 1 MiB, with figures rounded from fl-bench's heap runs on a 2-vCPU VM (docs/benchmarks.md). */
#define SIZE	  (1u << 20)
#define CALLER_NS 4000u /* the caller's alloc + free of a pooled buffer */
#define WORKER_NS 10000u /* the worker's CPU time per buffer it made and closed */
#define BARE_NS	  10000u /* the caller's alloc + free of a bare memfd */

/*
 * Feeds @size's gate the figures above on a machine where the program pays
 * @share % of the worker's CPU time, until it decides; whether it pools.
 */
static bool decide(unsigned int share)
{
	struct fl_heap_gates gates;
	bool pooled;

	/* Measured, not fixed: fixed costs leave the worker out. */
	unsetenv("FENCELINE_HEAP_POOL_COST");
	fl__heap_gate_init(&gates);
	fl__heap_gate_set_busy(&gates, share);
	fl__heap_gate_pick(&gates, SIZE, false);
	fl__heap_gate_worker(&gates, SIZE, WORKER_NS);
	for (int i = 0; i < FL_PAY_MIN_SAMPLES; i++) {
		fl__heap_gate_record(&gates, SIZE, false, CALLER_NS);
		fl__heap_gate_record(&gates, SIZE, true, BARE_NS);
	}
	pooled = fl__heap_gate_pooling(&gates, SIZE);
	/* Either way, it decided. */
	fl_assert_int_eq(gates.g[0].pay.state, pooled ? FL_PAY_ON : FL_PAY_OFF);
	return pooled;
}

FL_TEST(gate_charges_all_of_the_worker_without_two_cpus_to_spare)
{
	/*
	 * A 2-vCPU VM, loaded (1.4) and idle but for the program (0.7): the
	 * paired benchmark measured the pool at 1.31-1.57x bare at both,
	 * while a gate that charged the worker in proportion to the CPU
	 * missing below one spare (40% and 0%) believed 0.2-0.8x.
	 */
	fl_assert_int_eq(fl__heap_gate_share(2, 1.4), 100);
	fl_assert_int_eq(fl__heap_gate_share(2, 0.7), 100);
	fl_assert_int_eq(fl__heap_gate_share(2, 3.5), 100);
	fl_assert_int_eq(fl__heap_gate_share(4, 2.5), 100);
	fl_assert_int_eq(fl__heap_gate_share(8, 6.1), 100);
}

FL_TEST(gate_charges_none_of_the_worker_with_two_cpus_to_spare)
{
	fl_assert_int_eq(fl__heap_gate_share(4, 2.0), 0);
	fl_assert_int_eq(fl__heap_gate_share(4, 1.4), 0);
	fl_assert_int_eq(fl__heap_gate_share(8, 1.4), 0);
}

FL_TEST(gate_turns_off_a_size_whose_worker_costs_more_than_the_caller_saves)
{
	/* 4 us of the caller's + 10 us of the worker's against 10 us bare. */
	fl_assert(!decide(fl__heap_gate_share(2, 1.4)));
	fl_assert(!decide(fl__heap_gate_share(2, 0.7)));
}

FL_TEST(gate_keeps_a_size_whose_worker_has_a_cpu_of_its_own)
{
	/* The same figures with two CPUs to spare: the caller's 4 us against 10 us bare. */
	fl_assert(decide(fl__heap_gate_share(4, 1.4)));
	fl_assert(decide(fl__heap_gate_share(8, 1.4)));
}

/* SPDX-License-Identifier: MIT */
/*
 * The pool's gate (pool-gate.c): per size, whether pooling pays on this
 * machine, measured on the heap's own allocations, in windows that take
 * turns pooled and bare (docs/heap.md, "Pools that pay or step aside").
 */
#ifndef FL_HEAP_POOL_GATE_H
#define FL_HEAP_POOL_GATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "paygate.h"

/* Sizes whose decision a pool remembers; the least recently used goes first. */
#define FL_HEAP_GATE_SIZES 16
/* Sizes whose costs FENCELINE_HEAP_POOL_COST may set. */
#define FL_HEAP_GATE_FIXED 8
/* Allocations of a size in one of its gate's windows. */
#define FL_HEAP_GATE_WINDOW 8
/* A measured cycle's windows: a guard and a measured one each way. */
#define FL_HEAP_GATE_CYCLE 4
/* Windows in a cycle once the size pays: the rest of them pooled, not measured. */
#define FL_HEAP_GATE_CYCLE_ON 16

/*
 * One size's decision (paygate.h) and the figures it rests on. Measured,
 * a gate runs its size's allocations in windows of FL_HEAP_GATE_WINDOW, by
 * cycles: a bare guard, a bare window, a pooled guard, a pooled window (or
 * pooled first: the order alternates), then, once the size pays, pooled
 * windows that are not measured to the end of FL_HEAP_GATE_CYCLE_ON. A
 * window's figure is the time from its first allocation to the next
 * window's, over its allocations: the program's own pace at that size.
 */
struct fl_heap_gate {
	uint64_t size; /* 0: unused */
	struct fl_pay pay; /* off: every allocation of the size bare until the re-probe */
	uint64_t pooled_ns, bare_ns; /* running estimates (EWMA) per buffer, each way */
	uint64_t worker_ns; /* the worker's CPU time per buffer of this size (EWMA), shown */
	uint64_t samples; /* measured windows (fixed costs: buffers), both ways */
	uint64_t last_use; /* the pool's allocation tick at the last use, for eviction */
	bool next_bare; /* fixed costs: the next sample is taken bare */
	/* Measured: the window now and the cycle it is in. */
	uint64_t win_start; /* the clock at the window's first allocation; 0: none begun */
	unsigned int win_n; /* allocations in the window so far */
	unsigned int step; /* the window's place in its cycle */
	bool pooled_first; /* this cycle measures pooled before bare */
	uint64_t pair_pooled, pair_bare; /* this cycle's measured windows, per buffer; 0: not yet */
	uint16_t ratios
		[FL_PAY_MIN_SAMPLES]; /* pooled/bare of each cycle since the decision, per mille */
	unsigned int nratios;
	unsigned int ratio_pm; /* pooled over bare, per mille: the median the gate decided on */
};

/* Costs FENCELINE_HEAP_POOL_COST fixed, for deterministic tests. */
struct fl_heap_gate_fixed {
	uint64_t size; /* 0: every size */
	uint64_t pooled_ns, bare_ns;
};

/* A pool's gates; part of struct fl_heap_pool, under the heap's lock. */
struct fl_heap_gates {
	struct fl_heap_gate g[FL_HEAP_GATE_SIZES];
	uint64_t tick; /* allocations seen */
	struct fl_heap_gate_fixed fixed[FL_HEAP_GATE_FIXED];
	unsigned int nfixed; /* 0: measured */
	bool pinned; /* "none": every size pooled, nothing measured */
	/*
	 * The pool's worker is gone, or never started: nothing is made
	 * ahead, so every size is off (and says why), measured or pinned.
	 */
	bool no_worker;
};

/* How one allocation goes, chosen by fl__heap_gate_pick(). */
enum fl_heap_gate_pick {
	FL_GATE_POOL, /* from the pool if it can, not timed */
	FL_GATE_POOL_SAMPLE, /* fixed costs: from the pool, a sample if it is a hit */
	FL_GATE_BARE, /* made here; the size is not pooled */
	FL_GATE_BARE_SAMPLE, /* fixed costs: made here and closed here, a sample */
	FL_GATE_BARE_WINDOW, /* a bare window's: made here and closed here */
};

/* What a buffer's record keeps of its gate until it is freed. */
enum {
	FL_GATE_SAMPLE_NONE,
	FL_GATE_SAMPLE_POOLED, /* fixed costs: a pooled sample, recorded at its free */
	FL_GATE_SAMPLE_BARE, /* fixed costs: a bare sample, closed here and recorded */
	FL_GATE_SAMPLE_CLOSE, /* a bare window's: closed here, nothing recorded */
};

/* Reads FENCELINE_HEAP_POOL_COST into @gates (docs/env-vars.md). */
void fl__heap_gate_init(struct fl_heap_gates *gates);
/* Whether this allocation is a sample of fixed costs: every one, by turns. No lock needed. */
bool fl__heap_gate_sampling(const struct fl_heap_gates *gates);
/*
 * How an allocation of @size goes, begun at @now (fl__heap_gate_now()),
 * with @sample from fl__heap_gate_sampling(). Measured, it ends the size's
 * window when it is full and may decide: *@turned_off is set when this
 * turned the size off, and the caller then drops its stock
 * (fl__heap_pool_drop_size()). Under the heap's lock.
 */
enum fl_heap_gate_pick fl__heap_gate_pick(struct fl_heap_gates *gates, uint64_t size, bool sample,
					  uint64_t now, bool *turned_off);
/*
 * Whether buffers of @size are pooled now (made ahead, freed through the
 * worker): not with no worker. Lock held.
 */
bool fl__heap_gate_pooling(const struct fl_heap_gates *gates, uint64_t size);
/*
 * Fixed costs: records one sampled buffer's life, @bare or pooled (the
 * cost is the fixed one). Returns true when this turned the size off: the
 * caller then drops its stock (fl__heap_pool_drop_size()). Under the
 * heap's lock.
 */
bool fl__heap_gate_record(struct fl_heap_gates *gates, uint64_t size, bool bare);
/* The worker spent @ns of CPU time per buffer of @size it made (and closed). Lock held. */
void fl__heap_gate_worker(struct fl_heap_gates *gates, uint64_t size, uint64_t ns);
/* The current time for the windows, in ns (CLOCK_MONOTONIC, never 0). */
uint64_t fl__heap_gate_now(void);
/* Writes the gates as text lines (indented by two) or as a JSON array. Lock held. */
void fl__heap_gate_write(const struct fl_heap_gates *gates, FILE *out, bool json);

struct fl_heap;
/*
 * Writes @heap's gates as fl__heap_gate_write() does, taking the heap's
 * lock; for the daemon's heap dump. Writes an empty list (JSON) or nothing
 * (text) for a heap without a pool.
 */
void fl__heap_pool_write_sizes(struct fl_heap *heap, FILE *out, bool json);

#endif /* FL_HEAP_POOL_GATE_H */

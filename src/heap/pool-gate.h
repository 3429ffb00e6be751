/* SPDX-License-Identifier: MIT */
/*
 * The pool's gate (pool-gate.c): per size, whether pooling pays on this
 * machine, measured on a sample of the heap's own allocations
 * (docs/heap.md, "Pools that pay or step aside").
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

/* One size's decision (paygate.h) and the figures it rests on. */
struct fl_heap_gate {
	uint64_t size; /* 0: unused */
	struct fl_pay pay; /* off: every allocation of the size bare until the re-probe */
	uint64_t pooled_ns, bare_ns; /* running estimates (EWMA) of a buffer's life, caller side */
	uint64_t worker_ns; /* the worker's CPU time per buffer of this size (EWMA) */
	uint64_t samples; /* all samples taken, both ways */
	uint64_t last_use; /* the pool's allocation tick at the last use, for eviction */
	bool next_bare; /* the next sample is taken bare */
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
	unsigned int busy_pct; /* how much of the worker's CPU time the program pays for, in % */
	/*
	 * The pool's worker is gone, or never started: nothing is made
	 * ahead, so every size is off (and says why), measured or pinned.
	 */
	bool no_worker;
};

/* How one allocation goes, chosen by fl__heap_gate_pick(). */
enum fl_heap_gate_pick {
	FL_GATE_POOL, /* from the pool if it can, not timed */
	FL_GATE_POOL_SAMPLE, /* from the pool, timed if it is a hit */
	FL_GATE_BARE, /* made here; the size is not pooled */
	FL_GATE_BARE_SAMPLE, /* made here and closed here, timed */
};

/* What a buffer's record keeps of its sample until it is freed. */
enum { FL_GATE_SAMPLE_NONE, FL_GATE_SAMPLE_POOLED, FL_GATE_SAMPLE_BARE };

/* Reads FENCELINE_HEAP_POOL_COST into @gates (docs/env-vars.md). */
void fl__heap_gate_init(struct fl_heap_gates *gates);
/* Whether this allocation is to be timed: about one in eight. No lock needed. */
bool fl__heap_gate_sampling(const struct fl_heap_gates *gates);
/*
 * How an allocation of @size goes, with @sample from fl__heap_gate_sampling().
 * Under the heap's lock.
 */
enum fl_heap_gate_pick fl__heap_gate_pick(struct fl_heap_gates *gates, uint64_t size, bool sample);
/*
 * Whether buffers of @size are pooled now (made ahead, freed through the
 * worker): not with no worker. Lock held.
 */
bool fl__heap_gate_pooling(const struct fl_heap_gates *gates, uint64_t size);
/*
 * Records one sampled buffer's life (@ns of the caller's time in
 * fl_heap_alloc() and fl_heap_buffer_free()), @bare or pooled. Returns true
 * when this turned the size off: the caller then drops its stock
 * (fl__heap_pool_drop_size()). Under the heap's lock.
 */
bool fl__heap_gate_record(struct fl_heap_gates *gates, uint64_t size, bool bare, uint64_t ns);
/* The worker spent @ns of CPU time per buffer of @size it made (and closed). Lock held. */
void fl__heap_gate_worker(struct fl_heap_gates *gates, uint64_t size, uint64_t ns);
/*
 * How much of the worker's CPU time the program pays for, in %: 0 with two
 * CPUs to spare, 100 otherwise (from the load average and the CPUs this
 * thread may use). A syscall: no lock held.
 */
unsigned int fl__heap_gate_busy(void);
/* fl__heap_gate_busy()'s arithmetic, for @cpus CPUs at a load average of @load. */
unsigned int fl__heap_gate_share(double cpus, double load);
/* Sets what fl__heap_gate_busy() said, for the next decisions. Lock held. */
void fl__heap_gate_set_busy(struct fl_heap_gates *gates, unsigned int pct);
/* The current time for samples, in ns. */
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

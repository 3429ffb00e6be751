/* SPDX-License-Identifier: MIT */
/*
 * Whether the pool of fence fds made ahead pays in this process
 * (fdpool-gate.c; docs/architecture.md, "The pool of fence fds").
 */
#ifndef FL_CLIENT_FDPOOL_GATE_H
#define FL_CLIENT_FDPOOL_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "paygate.h"

/* How one fence creation goes, chosen by fl__fdpool_gate_pick(). */
enum fl__fdpool_pick {
	FL_FDPOOL_PICK_POOL, /* from the pool, not timed */
	FL_FDPOOL_PICK_POOL_SAMPLE, /* from the pool, timed if it did not wait */
	FL_FDPOOL_PICK_BARE_SAMPLE, /* first a timed round trip that makes one fd */
};

/* One process's gate; under conn.rpc.lock. */
struct fl__fdpool_gate {
	struct fl_pay pay; /* off: each fence waits for a fill of one fd, until the re-probe */
	uint64_t pooled_ns, bare_ns; /* running estimates (EWMA) of getting an fd each way */
	uint64_t samples; /* all samples */
	uint32_t rng;
	bool pinned; /* FENCELINE_POOL_COST=none: always pooled, nothing measured */
	bool fixed; /* FENCELINE_POOL_COST fixed the costs below (tests) */
	uint64_t fixed_pooled_ns, fixed_bare_ns;
};

/* Resets @g and reads FENCELINE_POOL_COST (docs/env-vars.md). */
void fl__fdpool_gate_init(struct fl__fdpool_gate *g);
/* How the next fence creation goes; counts the fences made with the pool off. */
enum fl__fdpool_pick fl__fdpool_gate_pick(struct fl__fdpool_gate *g);
/* Whether fds are made ahead now. */
bool fl__fdpool_gate_pooling(const struct fl__fdpool_gate *g);
/* Records a sample of @ns for getting one fd, @bare or from the pool. True: turned off by it. */
bool fl__fdpool_gate_record(struct fl__fdpool_gate *g, bool bare, uint64_t ns);
/* Whether a sample needs the clock (fixed costs do not). */
bool fl__fdpool_gate_timed(const struct fl__fdpool_gate *g);
/* The current time for samples, in ns. */
uint64_t fl__fdpool_gate_now(void);

#endif /* FL_CLIENT_FDPOOL_GATE_H */

/* SPDX-License-Identifier: MIT */
/*
 * Whether the pool of fence fds made ahead pays in this process
 * (docs/architecture.md, "The pool of fence fds").
 *
 * The pool turns a fence creation into a one-way FENCE_NEW into an fd the
 * process already holds; without it, each fence first waits for a round
 * trip that makes its fd (a POOL_FILL of one). The pool's price is what
 * keeping it costs the caller: the fills asked for ahead, the poll()s that
 * look for them and the receipt of their fds. Both are sampled here: about
 * one fence in eight times its pool work (when it did not have to wait), and
 * about one in 256 first makes one fd with a round trip of its own (into the
 * pool's tail, so nothing is wasted) and times that. Rarer, because it costs
 * a whole round trip, and a round trip's cost changes slowly.
 *
 * The decision is the heap pool's (src/util/paygate.h): EWMAs of weight
 * 1/8, 16 samples of each way, pooled at most 0.95 of bare to pool, off
 * once above it, and a re-probe after 4096 fences, doubling while it fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fdpool-gate.h"

#define EWMA_SHIFT 3

uint64_t fl__fdpool_gate_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fl__fdpool_gate_init(struct fl__fdpool_gate *g)
{
	const char *s = getenv("FENCELINE_POOL_COST");
	unsigned long long pooled, bare;
	int end = 0;

	memset(g, 0, sizeof(*g));
	g->rng = (uint32_t)fl__fdpool_gate_now() | 1;
	if (s && !strcmp(s, "none")) {
		g->pinned = true;
	} else if (s && sscanf(s, "%llu/%llu%n", &pooled, &bare, &end) == 2 && !s[end] && pooled &&
		   bare && s[0] >= '0' && s[0] <= '9') {
		g->fixed = true;
		g->fixed_pooled_ns = pooled;
		g->fixed_bare_ns = bare;
	}
}

static uint32_t next_random(struct fl__fdpool_gate *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 17;
	g->rng ^= g->rng << 5;
	return g->rng;
}

enum fl__fdpool_pick fl__fdpool_gate_pick(struct fl__fdpool_gate *g)
{
	uint32_t r;

	/* Off, the pool is as if empty: the fence takes the round trip, not timed. */
	if (g->pinned || !fl__pay_use(&g->pay))
		return FL_FDPOOL_PICK_POOL;
	/* Fixed costs: every fence a sample, by turns, so that tests decide in a known count. */
	if (g->fixed)
		return g->samples % 2 ? FL_FDPOOL_PICK_BARE_SAMPLE : FL_FDPOOL_PICK_POOL_SAMPLE;
	r = next_random(g);
	if ((r & 255) == 0)
		return FL_FDPOOL_PICK_BARE_SAMPLE;
	return (r & 7) == 1 ? FL_FDPOOL_PICK_POOL_SAMPLE : FL_FDPOOL_PICK_POOL;
}

bool fl__fdpool_gate_pooling(const struct fl__fdpool_gate *g)
{
	return g->pay.state != FL_PAY_OFF;
}

bool fl__fdpool_gate_timed(const struct fl__fdpool_gate *g)
{
	return !g->fixed;
}

/* An estimate of 0 has no sample yet: the first one is taken whole. */
static void ewma(uint64_t *est, uint64_t ns)
{
	*est = *est ? *est - (*est >> EWMA_SHIFT) + (ns >> EWMA_SHIFT) : ns;
}

bool fl__fdpool_gate_record(struct fl__fdpool_gate *g, bool bare, uint64_t ns)
{
	if (g->pinned || g->pay.state == FL_PAY_OFF)
		return false;
	if (g->fixed)
		ns = bare ? g->fixed_bare_ns : g->fixed_pooled_ns;
	/* 0 would read as no sample yet. */
	ewma(bare ? &g->bare_ns : &g->pooled_ns, ns + !ns);
	g->samples++;
	return fl__pay_sampled(&g->pay, bare, g->pooled_ns, g->bare_ns);
}

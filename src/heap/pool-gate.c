/* SPDX-License-Identifier: MIT */
/*
 * Whether a pool pays, per size (docs/heap.md, "Pools that pay or step
 * aside").
 *
 * A pool moves syscalls to its worker process, which pays only when the
 * worker runs on a CPU the program does not need and its messages cost
 * less than the syscalls they carry. That depends on the machine and on
 * its load, so the pool measures it on its own allocations: about one in
 * eight is timed, half of those taken from the pool (a hit) and half made
 * bare as if there were no pool (memfd_create, ftruncate, seals, fstat)
 * and closed bare at the free. A sample is the caller's time in
 * fl_heap_alloc() plus fl_heap_buffer_free() for that buffer, so the
 * pooled side carries its share of the messages to the worker (a sampled
 * free that happens to send the batch pays for it) and, on a busy machine,
 * the worker's work whenever the wake-up runs the worker on the caller's
 * CPU. Each way has a running estimate (an EWMA, weight 1/8). The caller's
 * time does not show the worker's CPU time, nor what the worker takes from
 * the program's own work between these calls, and the bare samples, taken
 * while the worker runs, suffer that as much as the pooled ones: so the
 * pooled side is charged the worker's CPU time per buffer, all of it unless
 * the machine has two CPUs to spare (fl__heap_gate_share()).
 *
 * The decision has hysteresis, so that noise does not flip it: a size is
 * pooled once the pooled estimate is at most 0.95 of the bare one after
 * enough samples of each way, and turned off as soon as it is above the
 * bare one. Off, every allocation of the size is bare and its stock is
 * closed; after a while (4096 allocations of the size, doubling with each
 * probe that fails, up to 64 times that) it is probed again, because
 * conditions change.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "pool-gate.h"

/* Weight of a new sample in an estimate: 1/2^EWMA_SHIFT. */
#define EWMA_SHIFT 3

static _Thread_local uint32_t rng;

uint64_t fl__heap_gate_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Parses "POOLED/BARE" at *@s; false unless both are numbers > 0. */
static bool parse_pair(const char **s, struct fl_heap_gate_fixed *f)
{
	char *end;

	f->pooled_ns = strtoull(*s, &end, 10);
	if (end == *s || *end != '/')
		return false;
	*s = end + 1;
	f->bare_ns = strtoull(*s, &end, 10);
	if (end == *s || !f->pooled_ns || !f->bare_ns)
		return false;
	*s = end;
	return true;
}

void fl__heap_gate_init(struct fl_heap_gates *gates)
{
	const char *s = getenv("FENCELINE_HEAP_POOL_COST");
	unsigned int n = 0;

	memset(gates, 0, sizeof(*gates));
	gates->busy_pct = fl__heap_gate_busy();
	if (s && !strcmp(s, "none")) {
		gates->pinned = true;
		return;
	}
	/* "[SIZE:]POOLED/BARE[,...]": a malformed value is ignored whole. */
	while (s && *s && n < FL_HEAP_GATE_FIXED) {
		struct fl_heap_gate_fixed f = { 0 };
		const char *colon = strchr(s, ':'), *slash = strchr(s, '/');
		char *end;

		if (colon && (!slash || colon < slash)) {
			f.size = strtoull(s, &end, 10);
			if (end != colon || !f.size)
				return;
			s = colon + 1;
		}
		if (!parse_pair(&s, &f) || (*s && *s != ','))
			return;
		gates->fixed[n++] = f;
		s += *s == ',';
	}
	if (!s || !*s)
		gates->nfixed = n;
}

bool fl__heap_gate_sampling(const struct fl_heap_gates *gates)
{
	if (gates->nfixed)
		return true;
	if (gates->pinned)
		return false;
	if (!rng)
		rng = (uint32_t)(uintptr_t)&rng ^ (uint32_t)fl__heap_gate_now() ^ 0x9e3779b9u;
	/* xorshift32: random enough not to fall in step with the pool's batches. */
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return (rng & 7) == 0;
}

static struct fl_heap_gate *find(const struct fl_heap_gates *gates, uint64_t size)
{
	for (int i = 0; i < FL_HEAP_GATE_SIZES; i++)
		if (gates->g[i].size == size)
			return (struct fl_heap_gate *)&gates->g[i];
	return NULL;
}

/* The gate of @size, made if need be in place of the least recently used. */
static struct fl_heap_gate *get(struct fl_heap_gates *gates, uint64_t size)
{
	struct fl_heap_gate *g = find(gates, size), *lru = &gates->g[0];

	if (g)
		return g;
	for (int i = 0; i < FL_HEAP_GATE_SIZES; i++) {
		if (!gates->g[i].size) {
			lru = &gates->g[i];
			break;
		}
		if (gates->g[i].last_use < lru->last_use)
			lru = &gates->g[i];
	}
	/*
	 * A size turned off that is forgotten is learned again from scratch:
	 * its stock went when it was turned off, so nothing is left behind.
	 */
	memset(lru, 0, sizeof(*lru));
	lru->size = size;
	return lru;
}

bool fl__heap_gate_pooling(const struct fl_heap_gates *gates, uint64_t size)
{
	const struct fl_heap_gate *g = find(gates, size);

	if (gates->no_worker)
		return false;
	return !g || g->pay.state != FL_PAY_OFF;
}

enum fl_heap_gate_pick fl__heap_gate_pick(struct fl_heap_gates *gates, uint64_t size, bool sample)
{
	struct fl_heap_gate *g;

	/* What the worker made before it went is still good; nothing is timed. */
	if (gates->pinned || gates->no_worker)
		return FL_GATE_POOL;
	g = get(gates, size);
	g->last_use = ++gates->tick;
	/* Off, and not tried again yet; once it is, the pool stocks the size from the next free. */
	if (!fl__pay_use(&g->pay))
		return FL_GATE_BARE;
	if (!sample)
		return FL_GATE_POOL;
	g->next_bare = !g->next_bare;
	return g->next_bare ? FL_GATE_BARE_SAMPLE : FL_GATE_POOL_SAMPLE;
}

/* An estimate of 0 has no sample yet: the first one is taken whole. */
static void ewma(uint64_t *est, uint64_t ns)
{
	*est = *est ? *est - (*est >> EWMA_SHIFT) + (ns >> EWMA_SHIFT) : ns;
}

/* The fixed cost of @size's @bare way, or @ns when none is set. */
static uint64_t fixed_or(const struct fl_heap_gates *gates, uint64_t size, bool bare, uint64_t ns)
{
	const struct fl_heap_gate_fixed *any = NULL;

	for (unsigned int i = 0; i < gates->nfixed; i++) {
		if (gates->fixed[i].size == size) {
			any = &gates->fixed[i];
			break;
		}
		if (!gates->fixed[i].size && !any)
			any = &gates->fixed[i];
	}
	return any ? (bare ? any->bare_ns : any->pooled_ns) : ns;
}

void fl__heap_gate_worker(struct fl_heap_gates *gates, uint64_t size, uint64_t ns)
{
	struct fl_heap_gate *g = find(gates, size);

	if (g)
		ewma(&g->worker_ns, ns);
}

unsigned int fl__heap_gate_share(double cpus, double load)
{
	/*
	 * All or nothing. The load counts the program's own thread and the
	 * worker. The worker's time is free only if it runs beside the
	 * program without slowing it, and one idle CPU on average is not
	 * that: on a 2-vCPU VM, each size that stayed pooled, from an idle
	 * start (load 0.1-0.8) to a load of 1.5, cost 1.31-1.57x a bare
	 * memfd in the paired benchmark against 1.21-1.36x with no pool,
	 * while a gate that charged nothing with one CPU to spare, and a
	 * share in proportion to the CPU missing below, believed 0.18-0.8x.
	 * Counting all of the worker's CPU time per buffer, its estimates
	 * (0.97-2.15x) left every size off. So only with two CPUs to spare,
	 * one for the worker and one more to keep it off the program's, does
	 * the worker's time count for nothing, as the pool's design assumes.
	 */
	return cpus - load >= 2 ? 0 : 100;
}

unsigned int fl__heap_gate_busy(void)
{
	struct sysinfo si;
	cpu_set_t set;

	if (sysinfo(&si) < 0 || sched_getaffinity(0, sizeof(set), &set) < 0)
		return 100;
	return fl__heap_gate_share((double)CPU_COUNT(&set),
				   (double)si.loads[0] / (double)(1u << SI_LOAD_SHIFT));
}

void fl__heap_gate_set_busy(struct fl_heap_gates *gates, unsigned int pct)
{
	gates->busy_pct = pct > 100 ? 100 : pct;
}

/* What pooling a buffer of @g's size costs the program: its own time and its share of the worker's. */
static uint64_t pooled_cost(const struct fl_heap_gates *gates, const struct fl_heap_gate *g)
{
	/* Fixed costs (tests) are the whole cost. */
	if (gates->nfixed)
		return g->pooled_ns;
	return g->pooled_ns + g->worker_ns * gates->busy_pct / 100;
}

bool fl__heap_gate_record(struct fl_heap_gates *gates, uint64_t size, bool bare, uint64_t ns)
{
	struct fl_heap_gate *g = find(gates, size);

	/* Forgotten meanwhile, or turned off by another sample: this one is late. */
	if (!g || g->pay.state == FL_PAY_OFF)
		return false;
	/* 0 would read as no sample yet. */
	ns = fixed_or(gates, size, bare, ns);
	ns += !ns;
	ewma(bare ? &g->bare_ns : &g->pooled_ns, ns);
	g->samples++;
	return fl__pay_sampled(&g->pay, bare, pooled_cost(gates, g), g->bare_ns);
}

static const char *const state_name[] = { "learning", "on", "off", "probing" };

/* Why @g is as it is, in a few words. */
static void why(const struct fl_heap_gates *gates, const struct fl_heap_gate *g, char *buf,
		size_t len)
{
	unsigned int pct =
		g->bare_ns ? (unsigned int)(pooled_cost(gates, g) * 100 / g->bare_ns) : 0;

	if (gates->no_worker) {
		snprintf(buf, len, "no worker: the pool makes nothing ahead (see the heap's log)");
		return;
	}
	switch (g->pay.state) {
	case FL_PAY_ON:
		snprintf(buf, len, "pays: pooled %u.%02ux a bare memfd", pct / 100, pct % 100);
		break;
	case FL_PAY_OFF:
		snprintf(buf, len,
			 "does not pay: pooled %u.%02ux a bare memfd; tried again in %llu "
			 "allocations",
			 pct / 100, pct % 100, (unsigned long long)g->pay.countdown);
		break;
	default:
		snprintf(buf, len, "measuring: %u pooled and %u bare samples of %u each",
			 g->pay.npooled, g->pay.nbare, FL_PAY_MIN_SAMPLES);
		break;
	}
}

void fl__heap_gate_write(const struct fl_heap_gates *gates, FILE *out, bool json)
{
	bool first = true;
	char buf[128];

	if (json)
		fputc('[', out);
	else
		fprintf(out, "  %16s %8s %12s %12s %10s %s\n", "pool size", "pooled", "pooled ns",
			"bare ns", "samples", "why");
	for (int i = 0; i < FL_HEAP_GATE_SIZES; i++) {
		const struct fl_heap_gate *g = &gates->g[i];
		bool off = gates->no_worker || g->pay.state == FL_PAY_OFF;

		if (!g->size)
			continue;
		why(gates, g, buf, sizeof(buf));
		if (json)
			fprintf(out,
				"%s{\"size\":%llu,\"pooled\":%s,\"state\":\"%s\",\"pooled_ns\":%"
				"llu,"
				"\"bare_ns\":%llu,\"caller_ns\":%llu,\"worker_ns\":%llu,"
				"\"busy_pct\":%u,\"samples\":%llu,\"offs\":%llu,\"why\":\"%s\"}",
				first ? "" : ",", (unsigned long long)g->size,
				off ? "false" : "true", off ? "off" : state_name[g->pay.state],
				(unsigned long long)pooled_cost(gates, g),
				(unsigned long long)g->bare_ns, (unsigned long long)g->pooled_ns,
				(unsigned long long)g->worker_ns, gates->busy_pct,
				(unsigned long long)g->samples, (unsigned long long)g->pay.offs,
				buf);
		else
			fprintf(out, "  %16llu %8s %12llu %12llu %10llu %s\n",
				(unsigned long long)g->size,
				off			    ? "no"
				: g->pay.state == FL_PAY_ON ? "yes"
							    : "trying",
				(unsigned long long)pooled_cost(gates, g),
				(unsigned long long)g->bare_ns, (unsigned long long)g->samples,
				buf);
		first = false;
	}
	if (json)
		fputc(']', out);
}

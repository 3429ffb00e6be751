/* SPDX-License-Identifier: MIT */
/*
 * Whether a pool pays, per size (docs/heap.md, "Pools that pay or step
 * aside").
 *
 * A pool moves syscalls to its worker process, which pays only when the
 * worker runs on a CPU the program does not need and its messages cost
 * less than the syscalls they carry. That depends on the machine and on
 * its load, so the pool measures it on its own allocations, and measures
 * what the program feels: its own pace. Timing only the calls (the
 * caller's time in fl_heap_alloc() and fl_heap_buffer_free(), plus the
 * worker's CPU time) was wrong both ways on a 2-vCPU VM: it kept a size
 * pooled that cost 1.3x a bare memfd, and turned off every size on an idle
 * machine where the pool cost 0.73-0.78x (docs/benchmarks.md). The worker
 * slows the program between its calls, or does not, and only the time
 * between allocations shows which.
 *
 * So a size's allocations run in windows of FL_HEAP_GATE_WINDOW, all from
 * the pool or all bare (made here as if there were no pool, and closed
 * here at their free), and a window's figure is the time from its first
 * allocation to the first of the next window, per buffer. Each cycle
 * measures one window each way, in alternating order, each after a guard
 * window of its own way that is not measured: the worker's work for the
 * buffers of a pooled window runs on after it, and the guard takes it
 * rather than the bare window that follows. The cycle's pooled figure
 * over its bare one is a paired ratio, which the program's own drift
 * touches little; the median of FL_PAY_MIN_SAMPLES of them decides, so
 * that a window that took in a pause of the program's does not.
 *
 * The decision has hysteresis (paygate.h), so that noise does not flip
 * it: a size is pooled once the median is at most 0.95, and turned off as
 * soon as it is above 1. Once pooled, a cycle has FL_HEAP_GATE_CYCLE_ON
 * windows, the rest pooled and not measured: one allocation in eight is
 * bare, the price of knowing. Off, every allocation of the size is bare
 * and its stock is closed; after a while (4096 allocations of the size,
 * doubling with each probe that fails, up to 64 times that) it is probed
 * again, because conditions change.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool-gate.h"

/* Weight of a new sample in an estimate: 1/2^EWMA_SHIFT. */
#define EWMA_SHIFT 3

uint64_t fl__heap_gate_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* 0 stands for no window begun. */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
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
	return gates->nfixed != 0;
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

/* An estimate of 0 has no sample yet: the first one is taken whole. */
static void ewma(uint64_t *est, uint64_t ns)
{
	*est = *est ? *est - (*est >> EWMA_SHIFT) + (ns >> EWMA_SHIFT) : ns;
}

/* The costs FENCELINE_HEAP_POOL_COST set for @size, or NULL: measured. */
static const struct fl_heap_gate_fixed *fixed_of(const struct fl_heap_gates *gates, uint64_t size)
{
	const struct fl_heap_gate_fixed *any = NULL;

	for (unsigned int i = 0; i < gates->nfixed; i++) {
		if (gates->fixed[i].size == size)
			return &gates->fixed[i];
		if (!gates->fixed[i].size && !any)
			any = &gates->fixed[i];
	}
	return any;
}

/* The kinds of window in a cycle. */
enum window { GUARD_BARE, BARE, GUARD_POOLED, POOLED, PLAIN };

static enum window window_of(const struct fl_heap_gate *g)
{
	static const enum window order[2][FL_HEAP_GATE_CYCLE] = {
		{ GUARD_BARE, BARE, GUARD_POOLED, POOLED },
		{ GUARD_POOLED, POOLED, GUARD_BARE, BARE },
	};

	return g->step < FL_HEAP_GATE_CYCLE ? order[g->pooled_first][g->step] : PLAIN;
}

/* The median of @g's ratios, per mille (0 without any). */
static unsigned int median(const struct fl_heap_gate *g)
{
	uint16_t v[FL_PAY_MIN_SAMPLES];
	unsigned int n = g->nratios;

	if (!n)
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		unsigned int j = i;

		for (; j > 0 && v[j - 1] > g->ratios[i]; j--)
			v[j] = v[j - 1];
		v[j] = g->ratios[i];
	}
	return n % 2 ? v[n / 2] : ((unsigned int)v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Measuring starts afresh: after a decision to turn off, and at a probe. */
static void windows_reset(struct fl_heap_gate *g)
{
	g->win_start = 0;
	g->win_n = 0;
	g->step = 0;
	g->pair_pooled = g->pair_bare = 0;
	g->nratios = 0;
}

/*
 * A cycle measured both ways: its ratio joins the others, and once there
 * are enough of them they decide. True: this turned the size off.
 */
static bool pair_done(struct fl_heap_gate *g)
{
	uint64_t pm = g->pair_pooled * 1000 / g->pair_bare;
	unsigned int med;
	bool off;

	g->ratios[g->nratios++] = (uint16_t)(pm > UINT16_MAX ? UINT16_MAX : pm);
	g->pair_pooled = g->pair_bare = 0;
	med = median(g);
	/* Both ways counted at once: they always come in pairs. */
	(void)fl__pay_sampled(&g->pay, true, med, 1000);
	off = fl__pay_sampled(&g->pay, false, med, 1000);
	if (g->pay.npooled == 0) {
		/* It decided, on this median. */
		g->ratio_pm = med;
		g->nratios = 0;
	}
	return off;
}

/* The window of @g that ends at @now, full. True: its figure turned the size off. */
static bool window_end(struct fl_heap_gate *g, uint64_t now)
{
	enum window w = window_of(g);
	uint64_t per = (now > g->win_start ? now - g->win_start : 0) / FL_HEAP_GATE_WINDOW;
	unsigned int cycle = g->pay.state == FL_PAY_ON ? FL_HEAP_GATE_CYCLE_ON : FL_HEAP_GATE_CYCLE;

	per += !per; /* 0 would read as not measured */
	if (w == BARE || w == POOLED) {
		uint64_t *est = w == BARE ? &g->bare_ns : &g->pooled_ns;

		g->samples++;
		/* A window that took in a pause of the program's moves the figure shown little. */
		ewma(est, *est && per > 2 * *est ? 2 * *est : per);
		*(w == BARE ? &g->pair_bare : &g->pair_pooled) = per;
	}
	g->win_start = now;
	g->win_n = 0;
	if (++g->step >= cycle) {
		g->step = 0;
		g->pooled_first = !g->pooled_first;
	}
	if (g->pair_bare && g->pair_pooled && pair_done(g)) {
		windows_reset(g);
		return true;
	}
	return false;
}

enum fl_heap_gate_pick fl__heap_gate_pick(struct fl_heap_gates *gates, uint64_t size, bool sample,
					  uint64_t now, bool *turned_off)
{
	struct fl_heap_gate *g;
	enum window w;

	*turned_off = false;
	/* What the worker made before it went is still good; nothing is timed. */
	if (gates->pinned || gates->no_worker)
		return FL_GATE_POOL;
	g = get(gates, size);
	g->last_use = ++gates->tick;
	/* Off, and not tried again yet; once it is, the pool stocks the size from the next free. */
	if (!fl__pay_use(&g->pay))
		return FL_GATE_BARE;
	if (fixed_of(gates, size)) {
		if (!sample)
			return FL_GATE_POOL;
		g->next_bare = !g->next_bare;
		return g->next_bare ? FL_GATE_BARE_SAMPLE : FL_GATE_POOL_SAMPLE;
	}
	if (!g->win_start) {
		g->win_start = now;
	} else if (g->win_n >= FL_HEAP_GATE_WINDOW && window_end(g, now)) {
		*turned_off = true;
		return FL_GATE_BARE;
	}
	g->win_n++;
	w = window_of(g);
	return w == GUARD_BARE || w == BARE ? FL_GATE_BARE_WINDOW : FL_GATE_POOL;
}

void fl__heap_gate_worker(struct fl_heap_gates *gates, uint64_t size, uint64_t ns)
{
	struct fl_heap_gate *g = find(gates, size);

	if (g)
		ewma(&g->worker_ns, ns);
}

bool fl__heap_gate_record(struct fl_heap_gates *gates, uint64_t size, bool bare)
{
	const struct fl_heap_gate_fixed *f = fixed_of(gates, size);
	struct fl_heap_gate *g = find(gates, size);

	/* Forgotten meanwhile, or turned off by another sample: this one is late. */
	if (!g || !f || g->pay.state == FL_PAY_OFF)
		return false;
	ewma(bare ? &g->bare_ns : &g->pooled_ns, bare ? f->bare_ns : f->pooled_ns);
	g->samples++;
	g->ratio_pm = g->bare_ns ? (unsigned int)(g->pooled_ns * 1000 / g->bare_ns) : 0;
	return fl__pay_sampled(&g->pay, bare, g->pooled_ns, g->bare_ns);
}

static const char *const state_name[] = { "learning", "on", "off", "probing" };

/* Why @g is as it is, in a few words. */
static void why(const struct fl_heap_gates *gates, const struct fl_heap_gate *g, char *buf,
		size_t len)
{
	unsigned int pm =
		g->pay.state == FL_PAY_ON || g->pay.state == FL_PAY_OFF ? g->ratio_pm : median(g);

	if (gates->no_worker) {
		snprintf(buf, len, "no worker: the pool makes nothing ahead (see the heap's log)");
		return;
	}
	switch (g->pay.state) {
	case FL_PAY_ON:
		snprintf(buf, len, "pays: pooled %u.%02ux a bare memfd", pm / 1000, pm % 1000 / 10);
		break;
	case FL_PAY_OFF:
		snprintf(buf, len,
			 "does not pay: pooled %u.%02ux a bare memfd; tried again in %llu "
			 "allocations",
			 pm / 1000, pm % 1000 / 10, (unsigned long long)g->pay.countdown);
		break;
	default:
		if (fixed_of(gates, g->size))
			snprintf(buf, len, "measuring: %u pooled and %u bare samples of %u each",
				 g->pay.npooled, g->pay.nbare, FL_PAY_MIN_SAMPLES);
		else
			snprintf(buf, len,
				 "measuring: %u of %u windows each way, pooled %u.%02ux so far",
				 g->pay.nbare, FL_PAY_MIN_SAMPLES, pm / 1000, pm % 1000 / 10);
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
		unsigned int pm = g->pay.state == FL_PAY_ON || off ? g->ratio_pm : median(g);

		if (!g->size)
			continue;
		why(gates, g, buf, sizeof(buf));
		if (json)
			fprintf(out,
				"%s{\"size\":%llu,\"pooled\":%s,\"state\":\"%s\",\"pooled_ns\":%"
				"llu,\"bare_ns\":%llu,\"ratio_permille\":%u,\"worker_ns\":%llu,"
				"\"samples\":%llu,\"offs\":%llu,\"why\":\"%s\"}",
				first ? "" : ",", (unsigned long long)g->size,
				off ? "false" : "true", off ? "off" : state_name[g->pay.state],
				(unsigned long long)g->pooled_ns, (unsigned long long)g->bare_ns,
				pm, (unsigned long long)g->worker_ns,
				(unsigned long long)g->samples, (unsigned long long)g->pay.offs,
				buf);
		else
			fprintf(out, "  %16llu %8s %12llu %12llu %10llu %s\n",
				(unsigned long long)g->size,
				off			    ? "no"
				: g->pay.state == FL_PAY_ON ? "yes"
							    : "trying",
				(unsigned long long)g->pooled_ns, (unsigned long long)g->bare_ns,
				(unsigned long long)g->samples, buf);
		first = false;
	}
	if (json)
		fputc(']', out);
}

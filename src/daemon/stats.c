/* SPDX-License-Identifier: MIT */
/*
 * fencectl stats: how long fences take to signal and waits to end, per
 * timeline and per fence name, always on. A fence name's runs of digits are
 * folded to one '#' ("frame-17" and "frame-18" are "frame-#"), so that
 * per-frame names add up instead of making a group each.
 *
 * Each histogram has log-scale buckets: four per power of two from 1 us,
 * so a quantile read from it is within 19 % of the true value (and max is
 * exact). Counting one sample is a hash, a probe and a few adds; each
 * table keeps 1024 groups, and a new one replaces the least recently
 * counted (timelines that died, usually).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "server.h"
#include "util.h"

#define SUB	   4 /* buckets per power of two */
#define OCTAVES	   40 /* 1 us .. 2^40 us (12 days) */
#define NBUCKETS   (1 + OCTAVES * SUB)
#define MAX_GROUPS 1024 /* timelines and names each; beyond, the least recent goes */
#define NAME_LEN   32

struct hist {
	uint64_t count, sum_ns, max_ns;
	uint32_t b[NBUCKETS];
};

struct group {
	uint64_t tl; /* timelines: the id; names: 0 */
	char name[NAME_LEN];
	uint64_t last_ns; /* last counted: the least recent goes when the table is full */
	uint64_t fences, errors, waits, timeouts, wait_errors;
	struct hist latency, wait;
};

/*
 * A table of groups with an open-addressing index (slots hold index + 1),
 * so that counting a sample costs a hash and a probe or two, however many
 * timelines there are.
 */
struct table {
	struct group *g;
	size_t n;
	uint16_t index[2 * MAX_GROUPS];
};

static struct {
	struct table tls, names;
	uint64_t since_ns;
	uint64_t clock; /* counts samples: recency without reading the time */
} st;

static uint64_t key_hash(uint64_t tl, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ (tl * 0x9e3779b97f4a7c15ull);

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return h ^ (h >> 29);
}

static void index_put(struct table *t, size_t i)
{
	size_t slot = key_hash(t->g[i].tl, t->g[i].name) % (2 * MAX_GROUPS);

	while (t->index[slot])
		slot = (slot + 1) % (2 * MAX_GROUPS);
	t->index[slot] = (uint16_t)(i + 1);
}

static unsigned int bucket_of(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned int e;

	if (us < 1)
		return 0;
	e = 63 - (unsigned int)__builtin_clzll(us); /* us in [2^e, 2^(e+1)) */
	if (e >= OCTAVES)
		return NBUCKETS - 1;
	/* The two bits after the leading one pick the quarter of the octave. */
	return 1 + e * SUB + (unsigned int)(e >= 2 ? (us >> (e - 2)) & 3 : (us << (2 - e)) & 3);
}

/* The upper edge of bucket @i, in ns. */
static uint64_t bucket_top(unsigned int i)
{
	unsigned int e, q;

	if (i == 0)
		return 1000;
	e = (i - 1) / SUB;
	q = (i - 1) % SUB;
	return ((1ull << e) * 1000) + ((1ull << e) * 1000) * (q + 1) / SUB;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	h->count++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->b[bucket_of(ns)]++;
}

static uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return 0;
	want = (uint64_t)(q * (double)h->count + 0.999999);
	if (want < 1)
		want = 1;
	for (unsigned int i = 0; i < NBUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want)
			return FL_MIN(bucket_top(i), h->max_ns);
	}
	return h->max_ns;
}

static void fold_name(const char *in, char *out)
{
	size_t o = 0;

	for (size_t i = 0; in[i] && o + 1 < NAME_LEN; i++) {
		if (in[i] >= '0' && in[i] <= '9') {
			if (o == 0 || out[o - 1] != '#')
				out[o++] = '#';
			continue;
		}
		out[o++] = in[i];
	}
	out[o] = '\0';
}

static struct group *find(struct table *t, uint64_t tl, const char *name)
{
	size_t slot = key_hash(tl, name) % (2 * MAX_GROUPS), i;
	struct group *g;

	for (; t->index[slot]; slot = (slot + 1) % (2 * MAX_GROUPS)) {
		g = &t->g[t->index[slot] - 1];
		if (g->tl == tl && strcmp(g->name, name) == 0)
			return g;
	}
	if (!t->g) {
		t->g = calloc(MAX_GROUPS, sizeof(*t->g));
		if (!t->g)
			return NULL;
	}
	if (t->n < MAX_GROUPS) {
		i = t->n++;
	} else {
		/* Full: the least recently counted group (a dead timeline, mostly) makes room. */
		i = 0;
		for (size_t k = 1; k < t->n; k++)
			if (t->g[k].last_ns < t->g[i].last_ns)
				i = k;
		memset(t->index, 0, sizeof(t->index));
		for (size_t k = 0; k < t->n; k++)
			if (k != i)
				index_put(t, k);
	}
	g = &t->g[i];
	memset(g, 0, sizeof(*g));
	g->tl = tl;
	snprintf(g->name, sizeof(g->name), "%s", name);
	index_put(t, i);
	return g;
}

/* The groups a sample counts in: its timeline's (if any) and its fence name's. */
static void groups_of(const char *fence_name, uint64_t tl, const char *tl_name, struct group *g[2])
{
	char folded[NAME_LEN];

	fold_name(fence_name, folded);
	g[0] = tl ? find(&st.tls, tl, tl_name) : NULL;
	g[1] = find(&st.names, 0, folded);
	for (int i = 0; i < 2; i++)
		if (g[i])
			g[i]->last_ns = ++st.clock;
}

void fld_stats_fence_done(const char *fence_name, uint64_t tl, const char *tl_name, int status,
			  uint64_t latency_ns)
{
	struct group *g[2];

	groups_of(fence_name, tl, tl_name, g);
	for (int i = 0; i < 2; i++) {
		if (!g[i])
			continue;
		g[i]->fences++;
		g[i]->errors += status < 0;
		hist_add(&g[i]->latency, latency_ns);
	}
}

void fld_stats_wait(const char *fence_name, uint64_t tl, const char *tl_name, uint64_t waited_ns,
		    int result)
{
	struct group *g[2];

	groups_of(fence_name, tl, tl_name, g);
	for (int i = 0; i < 2; i++) {
		if (!g[i])
			continue;
		g[i]->waits++;
		g[i]->timeouts += result == -ETIME;
		g[i]->wait_errors += result < 0 && result != -ETIME;
		hist_add(&g[i]->wait, waited_ns);
	}
}

static void json_hist(FILE *out, const char *key, const struct hist *h)
{
	fprintf(out,
		",\"%s\":{\"count\":%" PRIu64 ",\"mean_us\":%.3f,\"p50_us\":%.3f,\"p90_us\":%.3f,"
		"\"p99_us\":%.3f,\"max_us\":%.3f}",
		key, h->count, h->count ? (double)h->sum_ns / (double)h->count / 1e3 : 0.0,
		(double)hist_quantile(h, 0.5) / 1e3, (double)hist_quantile(h, 0.9) / 1e3,
		(double)hist_quantile(h, 0.99) / 1e3, (double)h->max_ns / 1e3);
}

static void text_hist(FILE *out, const char *what, const struct hist *h)
{
	if (!h->count)
		return;
	fprintf(out,
		"    %-14s n=%-8" PRIu64 " p50 %10.1f  p90 %10.1f  p99 %10.1f  max %10.1f us\n",
		what, h->count, (double)hist_quantile(h, 0.5) / 1e3,
		(double)hist_quantile(h, 0.9) / 1e3, (double)hist_quantile(h, 0.99) / 1e3,
		(double)h->max_ns / 1e3);
}

static void write_groups(FILE *out, bool json, const struct group *g, size_t n, bool tls)
{
	for (size_t i = 0; i < n; i++) {
		if (json) {
			fputs(i ? ",{" : "{", out);
			if (tls)
				fprintf(out, "\"timeline\":%" PRIu64 ",", g[i].tl);
			fputs("\"name\":", out);
			fl__json_str(out, g[i].name);
			fprintf(out,
				",\"fences\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"waits\":%" PRIu64
				",\"timeouts\":%" PRIu64 ",\"wait_errors\":%" PRIu64,
				g[i].fences, g[i].errors, g[i].waits, g[i].timeouts,
				g[i].wait_errors);
			json_hist(out, "signal_latency", &g[i].latency);
			json_hist(out, "wait_time", &g[i].wait);
			fputc('}', out);
		} else {
			if (tls)
				fprintf(out, "  timeline #%" PRIu64 " '%s':", g[i].tl, g[i].name);
			else
				fprintf(out, "  '%s':", g[i].name);
			fprintf(out,
				" %" PRIu64 " fences (%" PRIu64 " failed), %" PRIu64
				" waits (%" PRIu64 " timed out, %" PRIu64 " failed)\n",
				g[i].fences, g[i].errors, g[i].waits, g[i].timeouts,
				g[i].wait_errors);
			text_hist(out, "create->signal", &g[i].latency);
			text_hist(out, "wait", &g[i].wait);
		}
	}
}

int fld_stats_write(FILE *out, bool json, bool reset)
{
	uint64_t now = fl__now_ns();
	uint64_t since = st.since_ns ? st.since_ns : now;

	if (json) {
		fprintf(out, "{\"version\":1,\"since_ns\":%" PRIu64 ",\"now_ns\":%" PRIu64, since,
			now);
		fputs(",\"timelines\":[", out);
		write_groups(out, true, st.tls.g, st.tls.n, true);
		fputs("],\"names\":[", out);
		write_groups(out, true, st.names.g, st.names.n, false);
		fputs("]}\n", out);
	} else {
		fprintf(out, "fence statistics over the last %.3f s\n\nby timeline:\n",
			(double)(now - since) / 1e9);
		write_groups(out, false, st.tls.g, st.tls.n, true);
		fputs("\nby fence name (digits folded to #):\n", out);
		write_groups(out, false, st.names.g, st.names.n, false);
	}
	if (reset) {
		fld_stats_free();
		st.since_ns = now;
	}
	return 0;
}

void fld_stats_start(void)
{
	st.since_ns = fl__now_ns();
}

void fld_stats_free(void)
{
	free(st.tls.g);
	free(st.names.g);
	memset(&st, 0, sizeof(st));
}

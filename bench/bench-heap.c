/* SPDX-License-Identifier: MIT */
/*
 * Section "heap": what a buffer from a heap costs, next to the bare
 * syscalls a program would make itself (memfd_create + ftruncate + mmap +
 * munmap + close), and the carveout's allocator as its free blocks grow.
 * One operation is the whole life of a buffer: allocate, map, touch one
 * page, unmap, free.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "bench.h"

struct heap_ctx {
	struct fl_heap *heap;
	size_t len;
};

static void touch_one(int fd, size_t len)
{
	volatile unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		fl__bench_die("mmap", errno);
	p[0] = 1;
	munmap((void *)p, len);
}

static double b_bare(void *arg, long ops)
{
	struct heap_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		int fd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);

		if (fd < 0 || ftruncate(fd, (off_t)c->len) < 0)
			fl__bench_die("memfd", errno);
		touch_one(fd, c->len);
		close(fd);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_heap(void *arg, long ops)
{
	struct heap_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	int fd, r;

	for (long i = 0; i < ops; i++) {
		r = fl_heap_alloc(c->heap, c->len, 0, &fd);
		if (r < 0)
			fl__bench_die("fl_heap_alloc", -r);
		touch_one(fd, c->len);
		fl_heap_buffer_free(c->heap, fd);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static const struct {
	const char *name;
	size_t len;
	long ops, quick;
} sizes[] = {
	{ "4k", 4096, 4000, 200 },
	{ "1m", 1 << 20, 2000, 100 },
	{ "8m", 8 << 20, 1000, 50 },
	{ "33m", 33 << 20, 400, 20 },
};

/*
 * system: pool off. pooled: a pool of 1 GiB, 31 deep at 33 MiB and 32 (the
 * most per size) below: the limit counts nominal sizes, and a fresh memfd
 * holds no memory, so the limit only sets the depth here. deferred: a pool
 * of one byte, which makes nothing ahead (no size fits) but still hands
 * freed buffers to its worker, whose close is the last.
 */
enum { SYSTEM, POOLED, DEFERRED, CONTIG, CARVEOUT, NR_KINDS };

static const char *const kind_name[NR_KINDS] = { "system", "pooled", "deferred", "contig",
						 "carveout" };

static struct fl_heap *open_kind(int kind)
{
	struct fl_heap *heap = NULL;
	int r;

	switch (kind) {
	case SYSTEM:
	case POOLED:
	case DEFERRED:
		r = fl_heap_open_system("bench", &heap);
		if (r == 0)
			r = fl_heap_set_pool_max(heap, kind == POOLED	  ? 1024u << 20
						       : kind == DEFERRED ? 1
									  : 0);
		break;
	case CONTIG:
		r = fl_heap_open_system_contig("bench", &heap);
		break;
	default:
		r = fl_heap_open_carveout("bench", 256u << 20, &heap);
		if (r == 0)
			r = fl_heap_set_pool_max(heap, 0);
		break;
	}
	if (r < 0)
		fl__bench_die("fl_heap_open", -r);
	return heap;
}

/*
 * What the pool's gate decided for buffers of @len (docs/heap.md, "Pools
 * that pay or step aside"), read from the heap's JSON: whether the size is
 * pooled, and the gate's own estimate of pooled over bare. False and 0
 * when the gate has no figures for it.
 */
static bool gate_of(struct fl_heap *heap, size_t len, double *ret_ratio, char *why, size_t cap,
		    char state[16])
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long size = ((unsigned long long)len + (unsigned long long)page - 1) /
				  (unsigned long long)page * (unsigned long long)page;
	unsigned int permille = 0;
	char *json = NULL, key[64], *at;
	size_t n = 0;
	FILE *mem = open_memstream(&json, &n);

	*ret_ratio = 0;
	why[0] = '\0';
	state[0] = '\0';
	if (!mem)
		return false;
	fl_heap_print_json(heap, mem);
	fclose(mem);
	snprintf(key, sizeof(key), "{\"size\":%llu,", size);
	at = json ? strstr(json, key) : NULL;
	if (at &&
	    sscanf(at,
		   "{\"size\":%*u,\"pooled\":%*[a-z],\"state\":\"%15[a-z]\",\"pooled_ns\":%*u,"
		   "\"bare_ns\":%*u,\"ratio_permille\":%u",
		   state, &permille) == 2)
		*ret_ratio = permille / 1000.0;
	if (at && (at = strstr(at, "\"why\":\"")) != NULL) {
		size_t k = 0;

		for (at += 7; k + 1 < cap && at[k] && at[k] != '"'; k++)
			why[k] = at[k];
		why[k] = '\0';
	}
	free(json);
	return strcmp(state, "off") != 0 && state[0];
}

/*
 * The pooled heap's warm-up goes on until its gate has decided for @len
 * (on or off), up to 4096 allocations: the benchmark compares what a size
 * costs pooled or not, and a gate's learning (half of it bare) is paid
 * once per size in a program's life, not in every batch of it.
 */
static void gate_warm_up(struct heap_ctx *c)
{
	char why[128], state[16];
	double ratio;

	for (int i = 0; i < 128; i++) {
		gate_of(c->heap, c->len, &ratio, why, sizeof(why), state);
		if (!strcmp(state, "on") || !strcmp(state, "off"))
			return;
		b_heap(c, 32);
	}
}

/* Lets a pool's worker finish what it was asked, so that it does not run into the next turn. */
static void settle(struct fl_heap *heap)
{
	struct fl_heap_info info;
	struct timespec ts = { 0, 1000000 };

	for (int i = 0; i < 100 && fl_heap_get_info(heap, &info) == 0 && info.pool_pending; i++)
		nanosleep(&ts, NULL);
}

enum { MAX_ROUNDS = 9 };

/*
 * The bare syscalls and the system, pooled and carveout heaps take turns,
 * round after round, so that all see the same machine: these VMs drift.
 * Each figure is the median of its rounds, and each ratio also comes
 * paired: the median of the ratios of turns in the same round.
 */
static void lifecycle_size(size_t s, int rounds)
{
	enum { BARE = NR_KINDS };
	static const int turn[] = { BARE, SYSTEM, POOLED, DEFERRED, CARVEOUT };
	long ops = fl__bench_iters(sizes[s].ops, sizes[s].quick) * 5 / MAX_ROUNDS + 1;
	double t[NR_KINDS + 1][MAX_ROUNDS], paired[NR_KINDS][MAX_ROUNDS];
	struct heap_ctx c[NR_KINDS + 1] = { 0 };
	char name[64], bare[64], ratio[96];
	struct fl_heap_info info;

	snprintf(bare, sizeof(bare), "heap_bare_memfd_%s", sizes[s].name);
	for (size_t k = 0; k < sizeof(turn) / sizeof(turn[0]); k++) {
		c[turn[k]].len = sizes[s].len;
		if (turn[k] != BARE)
			c[turn[k]].heap = open_kind(turn[k]);
		/* One short untimed batch: page faults, lazy set-up, the pool's worker. */
		(turn[k] == BARE ? b_bare : b_heap)(&c[turn[k]], ops / 10 + 1);
		if (turn[k] == POOLED)
			gate_warm_up(&c[turn[k]]);
		if (turn[k] == POOLED || turn[k] == DEFERRED)
			settle(c[turn[k]].heap);
	}
	for (int r = 0; r < rounds; r++) {
		for (size_t k = 0; k < sizeof(turn) / sizeof(turn[0]); k++) {
			int kind = turn[k];

			t[kind][r] = (kind == BARE ? b_bare : b_heap)(&c[kind], ops);
			if (kind == POOLED || kind == DEFERRED)
				settle(c[kind].heap);
		}
		for (size_t k = 1; k < sizeof(turn) / sizeof(turn[0]); k++)
			paired[turn[k]][r] = t[turn[k]][r] / t[BARE][r];
	}
	fl__bench_out(bare, fl__bench_median(t[BARE], rounds), "ns");
	for (size_t k = 1; k < sizeof(turn) / sizeof(turn[0]); k++) {
		int kind = turn[k];

		snprintf(name, sizeof(name), "heap_%s_%s", kind_name[kind], sizes[s].name);
		fl__bench_out(name, fl__bench_median(t[kind], rounds), "ns");
		if (kind == POOLED) {
			double gate_ratio;
			char why[128], state[16];
			bool on = gate_of(c[kind].heap, sizes[s].len, &gate_ratio, why, sizeof(why),
					  state);

			fl__bench_outf(on ? 1 : 0, "bool", "heap_pooled_%s_pooled", sizes[s].name);
			fl__bench_outf(gate_ratio, "x", "ratio_heap_pooled_%s_gate_estimate",
				       sizes[s].name);
			fl__bench_comment("heap pooled %s: %s", sizes[s].name, why);
			fl_heap_get_info(c[kind].heap, &info);
			fl__bench_outf((double)info.pool_hits, "hits", "heap_pooled_%s_hits",
				       sizes[s].name);
			fl__bench_outf((double)info.pool_misses, "misses", "heap_pooled_%s_misses",
				       sizes[s].name);
		}
		fl_heap_close(c[kind].heap);
		snprintf(ratio, sizeof(ratio), "ratio_heap_%s_%s_over_bare", kind_name[kind],
			 sizes[s].name);
		fl__bench_ratio(ratio, name, bare);
		fl__bench_outf(fl__bench_median(paired[kind], rounds), "x",
			       "ratio_heap_%s_%s_over_bare_paired", kind_name[kind], sizes[s].name);
	}
}

/* Contig populates every page: fewer rounds, on its own, beside the bare figure above. */
static void contig_size(size_t s)
{
	long ops = fl__bench_iters(sizes[s].ops, sizes[s].quick);
	long n = sizes[s].len > (1 << 20) ? ops / 20 + 2 : ops;
	struct heap_ctx c = { open_kind(CONTIG), sizes[s].len };
	struct fl_heap_info info;
	char name[64], bare[64], ratio[96];

	if (s == 0) {
		fl_heap_get_info(c.heap, &info);
		fl__bench_comment("system-contig backing: %s, granule %llu", info.backing,
				  (unsigned long long)info.granule);
	}
	snprintf(bare, sizeof(bare), "heap_bare_memfd_%s", sizes[s].name);
	snprintf(name, sizeof(name), "heap_contig_%s", sizes[s].name);
	fl__bench_out(name, fl__bench_batch_median(b_heap, &c, n), "ns");
	fl_heap_close(c.heap);
	snprintf(ratio, sizeof(ratio), "ratio_heap_contig_%s_over_bare", sizes[s].name);
	fl__bench_ratio(ratio, name, bare);
}

static void lifecycle(void)
{
	int rounds = fl__bench_quick ? 3 : MAX_ROUNDS;

	fl__bench_comment("heap: bare, system, pooled, deferred and carveout take turns, %d rounds",
			  rounds);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		lifecycle_size(s, rounds);
		contig_size(s);
	}
}

/*
 * A carveout with @blocks free one-page blocks, each between two taken
 * pages. The taken pages are closed with close(), which keeps their ranges
 * taken (heap.h); the holes are freed only once all are made, or best fit
 * would fill each with the next page. So @blocks fds are open at the peak.
 */
static struct fl_heap *fragmented(long blocks)
{
	long page = sysconf(_SC_PAGESIZE);
	struct fl_heap *heap = NULL;
	struct fl_heap_info info;
	int *holes = calloc((size_t)blocks, sizeof(*holes)), fd, r;

	if (!holes)
		fl__bench_die("calloc", ENOMEM);
	r = fl_heap_open_carveout("frag", (size_t)(2 * blocks + 1) * (size_t)page, &heap);
	if (r == 0)
		r = fl_heap_set_pool_max(heap, 0);
	for (long i = 0; r == 0 && i < blocks; i++) {
		r = fl_heap_alloc(heap, (size_t)page, 0, &holes[i]);
		if (r == 0)
			r = fl_heap_alloc(heap, (size_t)page, 0, &fd);
		if (r == 0)
			close(fd);
	}
	for (long i = 0; r == 0 && i < blocks; i++)
		r = fl_heap_buffer_free(heap, holes[i]);
	free(holes);
	if (r < 0)
		fl__bench_die("carveout set-up", -r);
	fl_heap_get_info(heap, &info);
	/* The last page stays free too, merged with nothing. */
	if ((long)info.free_blocks != blocks + 1)
		fl__bench_die("carveout set-up: free blocks", EINVAL);
	return heap;
}

static void carveout_scaling(void)
{
	static const long normal[] = { 100, 1000, 10000 }, quick[] = { 100, 1000, 4000 };
	const long *blocks = fl__bench_quick ? quick : normal;
	long page = sysconf(_SC_PAGESIZE), ops = fl__bench_iters(20000, 2000);
	char name[64], first[64], ratio[96];
	struct rlimit rl;

	/* The holes' fds are open at once: raise the soft limit to the hard one. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int i = 0; i < 3; i++) {
		struct heap_ctx c;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (rlim_t)blocks[i] + 256 > rl.rlim_cur) {
			fl__bench_comment("heap: %ld free blocks need more fds than RLIMIT_NOFILE",
					  blocks[i]);
			break;
		}
		c = (struct heap_ctx){ fragmented(blocks[i]), (size_t)page };
		snprintf(name, sizeof(name), "heap_carveout_alloc_free_%ld_blocks", blocks[i]);
		if (i == 0)
			snprintf(first, sizeof(first), "%s", name);
		fl__bench_out(name, fl__bench_batch_median(b_heap, &c, ops), "ns");
		fl_heap_close(c.heap);
		if (i > 0) {
			snprintf(ratio, sizeof(ratio), "ratio_heap_carveout_%ld_over_%ld_blocks",
				 blocks[i], blocks[0]);
			fl__bench_ratio(ratio, name, first);
		}
	}
}

void fl__bench_heap(void)
{
	fl__bench_comment("section heap: alloc + mmap + touch 1 page + munmap + free");
	lifecycle();
	carveout_scaling();
}

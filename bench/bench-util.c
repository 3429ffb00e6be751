/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/shared.h>

#include "bench.h"

int fl__bench_quick;

struct figure {
	char name[96];
	double value;
};

static struct figure *figures;
static size_t nr_figures, cap_figures;

static cpu_set_t saved_mask;
static int saved_mask_valid;

uint64_t fl__bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long fl__bench_iters(long normal, long quick)
{
	return fl__bench_quick ? quick : normal;
}

void fl__bench_die(const char *what, int err)
{
	fflush(stdout);
	fprintf(stderr, "fl-bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

void fl__bench_check(int r, const char *what)
{
	if (r < 0)
		fl__bench_die(what, r);
}

double fl__bench_per_op(uint64_t t0, long ops)
{
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

double fl__bench_fd_merge(void *arg, long ops)
{
	const struct fl_bench_fd_pair *c = arg;
	uint64_t t0 = fl__bench_now_ns();
	int m;

	for (long i = 0; i < ops; i++) {
		fl__bench_check(fl_fence_fd_merge(c->a, c->b, "bench", 0, &m), "fl_fence_fd_merge");
		close(m);
	}
	return fl__bench_per_op(t0, ops);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

double fl__bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

double fl__bench_batch_median(fl_bench_batch_fn fn, void *arg, long ops)
{
	double r[FL_BENCH_REPS];

	/* One short untimed batch first so that page faults, lazy library
	 * set-up and cold caches land outside the measured repetitions. */
	fn(arg, ops / 10 > 0 ? ops / 10 : 1);
	for (int i = 0; i < FL_BENCH_REPS; i++)
		r[i] = fn(arg, ops);
	qsort(r, FL_BENCH_REPS, sizeof(r[0]), cmp_double);
	return r[FL_BENCH_REPS / 2];
}

/* Nearest-rank percentile: the smallest sample with at least q of all
 * samples at or below it. */
static double percentile(const uint64_t *sorted, size_t n, double q)
{
	size_t rank = (size_t)ceil(q * (double)n);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return (double)sorted[rank - 1];
}

void fl__bench_lat_stats(uint64_t *samples, size_t n, struct fl_bench_lat *ret_lat)
{
	memset(ret_lat, 0, sizeof(*ret_lat));
	if (n == 0)
		return;
	qsort(samples, n, sizeof(samples[0]), cmp_u64);
	ret_lat->n = n;
	ret_lat->min = (double)samples[0];
	ret_lat->p50 = percentile(samples, n, 0.50);
	ret_lat->p99 = percentile(samples, n, 0.99);
	ret_lat->p999 = percentile(samples, n, 0.999);
	ret_lat->max = (double)samples[n - 1];
}

static void remember(const char *name, double value)
{
	if (nr_figures == cap_figures) {
		size_t cap = cap_figures ? 2 * cap_figures : 64;
		struct figure *f = realloc(figures, cap * sizeof(*f));

		if (!f)
			fl__bench_die("realloc", ENOMEM);
		figures = f;
		cap_figures = cap;
	}
	snprintf(figures[nr_figures].name, sizeof(figures[nr_figures].name), "%s", name);
	figures[nr_figures].value = value;
	nr_figures++;
}

void fl__bench_out(const char *name, double value, const char *unit)
{
	/* Ratios keep two decimals; nanoseconds below 100 keep one, so that
	 * cheap operations are not rounded into each other. */
	if (strcmp(unit, "x") == 0)
		printf("%s %.2f %s\n", name, value, unit);
	else if (fabs(value) < 100 && value != floor(value))
		printf("%s %.1f %s\n", name, value, unit);
	else
		printf("%s %.0f %s\n", name, value, unit);
	fflush(stdout);
	remember(name, value);
}

void fl__bench_outf(double value, const char *unit, const char *fmt, ...)
{
	char name[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	fl__bench_out(name, value, unit);
}

void fl__bench_comment(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

double fl__bench_get(const char *name)
{
	/* The latest figure wins, should a name ever be printed twice. */
	for (size_t i = nr_figures; i-- > 0;)
		if (strcmp(figures[i].name, name) == 0)
			return figures[i].value;
	return NAN;
}

void fl__bench_ratio(const char *name, const char *num, const char *den)
{
	double a = fl__bench_get(num), b = fl__bench_get(den);

	if (isnan(a) || isnan(b) || b <= 0) {
		fl__bench_comment("%s not computed: a figure is missing", name);
		return;
	}
	fl__bench_out(name, a / b, "x");
}

/* Logical CPU numbers the process may run on, in order; pinning takes
 * "the first" and "the second" of them rather than CPUs 0 and 1, which a
 * container's cpuset may not include. */
static int allowed_cpu(int index)
{
	cpu_set_t *set = saved_mask_valid ? &saved_mask : NULL;
	cpu_set_t now;

	if (!set) {
		if (sched_getaffinity(0, sizeof(now), &now) < 0)
			return -errno;
		set = &now;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set) && index-- == 0)
			return cpu;
	return -ENODEV;
}

int fl__bench_nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	return CPU_COUNT(&set);
}

int fl__bench_pin(int index)
{
	cpu_set_t set;
	int cpu;

	if (!saved_mask_valid) {
		if (sched_getaffinity(0, sizeof(saved_mask), &saved_mask) < 0)
			return -errno;
		saved_mask_valid = 1;
	}
	cpu = allowed_cpu(index);
	if (cpu < 0)
		return cpu;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return -errno;
	return cpu;
}

void fl__bench_unpin(void)
{
	if (saved_mask_valid)
		sched_setaffinity(0, sizeof(saved_mask), &saved_mask);
}

int fl__bench_open_task_stat(int tid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * Signalling a thread that has not gone to sleep yet measures nothing but
 * the race, so wait until the kernel reports the thread in state S. The
 * state is the first field after the command name, which is in parentheses
 * and may itself contain ") ", hence the last ')'.
 */
int fl__bench_wait_asleep(int statfd, uint64_t timeout_ns)
{
	uint64_t deadline = fl__bench_now_ns() + timeout_ns;
	char buf[512];

	for (;;) {
		ssize_t n = pread(statfd, buf, sizeof(buf) - 1, 0);

		if (n > 0) {
			char *rp;

			buf[n] = '\0';
			rp = strrchr(buf, ')');
			if (rp && rp[1] == ' ' && rp[2] == 'S')
				return 0;
		}
		if (fl__bench_now_ns() > deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
}

long fl__bench_proc_fds(int pid)
{
	char path[64];
	struct dirent *e;
	long n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

char *fl__bench_env_swap(const char *name, const char *value)
{
	const char *cur = getenv(name);
	char *old = cur ? strdup(cur) : NULL;

	if ((value ? setenv(name, value, 1) : unsetenv(name)) < 0)
		fl__bench_die("setenv", errno);
	return old;
}

void fl__bench_env_restore(const char *name, char *old)
{
	if (old)
		setenv(name, old, 1);
	else
		unsetenv(name);
	free(old);
}

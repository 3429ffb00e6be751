/* SPDX-License-Identifier: MIT */
/*
 * Shared plumbing of fl-bench: the clock, batch and sample statistics, the
 * "name value unit" output with its table of printed figures (so that
 * ratios can be computed from figures printed earlier in the same run), CPU
 * pinning and the "is that thread asleep yet" probe.
 */
#ifndef FL_BENCH_H
#define FL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Batch repetitions; the figure is their median. */
#define FL_BENCH_REPS 5

/* Set by -q: fewer iterations, for CI smoke runs. */
extern int fl__bench_quick;

uint64_t fl__bench_now_ns(void);
long fl__bench_iters(long normal, long quick);
void fl__bench_die(const char *what, int err);
/* Dies with @what when @r, a 0-or-negative-errno result, is an error. */
void fl__bench_check(int r, const char *what);
/* Nanoseconds per operation since @t0 (fl__bench_now_ns()) over @ops operations. */
double fl__bench_per_op(uint64_t t0, long ops);

/*
 * A batch function does its own setup, times only its batch of @ops
 * operations and returns the elapsed nanoseconds divided by the number of
 * operations it wants to report (usually @ops).
 */
typedef double (*fl_bench_batch_fn)(void *arg, long ops);

/* Two fence fds, first in a section's context, for fl__bench_fd_merge(). */
struct fl_bench_fd_pair {
	int a, b;
};

/* A batch function: @ops fl_fence_fd_merge()s of @arg's (struct fl_bench_fd_pair) a and b. */
double fl__bench_fd_merge(void *arg, long ops);

double fl__bench_batch_median(fl_bench_batch_fn fn, void *arg, long ops);
/* The median of @n rounds' figures (sorts @v); a section's turns take it. */
double fl__bench_median(double *v, int n);

struct fl_bench_lat {
	size_t n;
	double min, p50, p99, p999, max;
};

/* Sorts @samples in place. */
void fl__bench_lat_stats(uint64_t *samples, size_t n, struct fl_bench_lat *ret_lat);

void fl__bench_out(const char *name, double value, const char *unit);
void fl__bench_outf(double value, const char *unit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void fl__bench_comment(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double fl__bench_get(const char *name);
/* Prints @name = figure @num / figure @den, both printed earlier. */
void fl__bench_ratio(const char *name, const char *num, const char *den);

int fl__bench_nr_cpus(void);
/* How many fds process @pid has open (/proc/PID/fd); -1 if it cannot be read. */
long fl__bench_proc_fds(int pid);
/*
 * Set environment variable @name to @value (NULL: unset it) for a section's
 * private daemon; return what it was (malloc()ed, or NULL), for
 * fl__bench_env_restore(): later sections' services must not look for a
 * daemon whose directory is gone.
 */
char *fl__bench_env_swap(const char *name, const char *value);
/* Put @name back to @old (NULL: unset) and free @old. */
void fl__bench_env_restore(const char *name, char *old);
int fl__bench_pin(int cpu);
void fl__bench_unpin(void);

int fl__bench_open_task_stat(int tid);
int fl__bench_wait_asleep(int statfd, uint64_t timeout_ns);

void fl__bench_base(void);
void fl__bench_create(void);
void fl__bench_inc(void);
void fl__bench_wake(void);
void fl__bench_fdstall(const char *self_exe);
void fl__bench_daemon(void);
/* Part of section daemon (bench-oneway.c), run with its daemon. */
void fl__bench_daemon_oneway(void);
void fl__bench_trace(void);
int fl__bench_trace_child(void);
void fl__bench_heap(void);
void fl__bench_bufferqueue(void);
void fl__bench_fdtype(void);
void fl__bench_display(void);
void fl__bench_display_service(void);
void fl__bench_outputs(void);
void fl__bench_hwc(void);
/* The display service's pid, from the HELLO of a connection of our own (-1: none answers). */
pid_t fl__bench_display_service_pid(void);
int fl__bench_fdstall_child(const char *variant);

#endif /* FL_BENCH_H */

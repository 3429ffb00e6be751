/* SPDX-License-Identifier: MIT */
/*
 * Section "trace": what observability costs.
 *
 * 1. The USDT probes when nobody attaches. A fence's life in-process
 *    (create, signal, read its status) fires three probes. fl-bench-sdt
 *    (this program linked statically with the library) and fl-bench-nosdt
 *    (the same, with a core built without probes) run it in turns, 7
 *    rounds each (3 with -q), and the medians go side by side.
 * 2. The daemon while `fencectl trace` records, against the same cycle
 *    (fd API: create a fence, signal its timeline as its owner, poll it)
 *    before and after the session. While a trace runs the owner syncs with
 *    the daemon on every signal, so that each one is seen when it happens:
 *    that round trip is the cost.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "bench.h"

static void check(int r, const char *what)
{
	if (r < 0)
		fl__bench_die(what, r);
}

static double b_inproc(void *arg, long ops)
{
	struct fl_timeline *tl;
	uint64_t t0;

	(void)arg;
	check(fl_sw_sync_timeline_create("bench", 0, &tl), "fl_sw_sync_timeline_create");
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++) {
		struct fl_fence *f;

		check(fl_sw_sync_fence_create(tl, (uint64_t)i + 1, "f", &f), "fence");
		check(fl_sw_sync_timeline_inc(tl, 1), "inc");
		if (fl_fence_get_status(f) != FL_STATUS_SIGNALED)
			fl__bench_die("status", EPROTO);
		fl_fence_unref(f);
	}
	t0 = fl__bench_now_ns() - t0;
	fl_timeline_kill(tl);
	return (double)t0 / (double)ops;
}

static long inproc_ops(void)
{
	return fl__bench_iters(200000, 20000);
}

int fl__bench_trace_child(void)
{
	printf("%.3f\n", fl__bench_batch_median(b_inproc, NULL, inproc_ops()));
	return 0;
}

#ifdef FL_BENCH_NOSDT
/* A run of a static build's cycle (fl-bench-sdt or fl-bench-nosdt), or a negative number. */
static double run_child(const char *cmd)
{
	char buf[64] = "";
	double v = -1;
	FILE *p;

	fflush(stdout);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fgets(buf, sizeof(buf), p))
		v = strtod(buf, NULL);
	if (pclose(p) != 0)
		return -1;
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}
#endif

static void probes(void)
{
#ifdef FL_BENCH_NOSDT
	double with[7], without[7], ratio[7];
	int rounds = fl__bench_quick ? 3 : 7;

	fl__bench_comment("trace 1: a fence's life in-process (create, signal, status), "
			  "probes compiled in vs out, %d rounds each, taking turns",
			  rounds);
	for (int r = 0; r < rounds; r++) {
		with[r] = run_child(FL_BENCH_SDT " --trace-child");
		without[r] = run_child(FL_BENCH_NOSDT " --trace-child");
		if (with[r] <= 0 || without[r] <= 0)
			fl__bench_die("fl-bench-sdt/nosdt", EIO);
		ratio[r] = with[r] / without[r];
	}
	qsort(with, (size_t)rounds, sizeof(double), cmp_double);
	qsort(without, (size_t)rounds, sizeof(double), cmp_double);
	qsort(ratio, (size_t)rounds, sizeof(double), cmp_double);
	fl__bench_out("trace_inproc_cycle_probes", with[rounds / 2], "ns");
	fl__bench_out("trace_inproc_cycle_no_probes", without[rounds / 2], "ns");
	fl__bench_ratio("ratio_trace_probes_over_none", "trace_inproc_cycle_probes",
			"trace_inproc_cycle_no_probes");
	/* Pairs run back to back share the machine's mood: their ratio is steadier. */
	fl__bench_out("ratio_trace_probes_over_none_paired", ratio[rounds / 2], "x");
#else
	fl__bench_comment("trace 1: skipped (built without sys/sdt.h: no probes to measure)");
#endif
}

static double b_daemon(void *arg, long ops)
{
	int tl = *(int *)arg;
	uint64_t t0 = fl__bench_now_ns(), v = 0;

	check(fl_timeline_fd_get_value(tl, &v), "get_value");
	t0 = fl__bench_now_ns();
	for (long i = 0; i < ops; i++) {
		int f;

		check(fl_fence_fd_create(tl, v + (uint64_t)i + 1, "f", &f), "fl_fence_fd_create");
		check(fl_timeline_fd_inc(tl, 1), "fl_timeline_fd_inc");
		/* As a consumer sees it: the fd polls readable, no call into fenceline. */
		if (poll(&(struct pollfd){ .fd = f, .events = POLLIN }, 1, 1000) != 1)
			fl__bench_die("poll", ETIME);
		close(f);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static void daemon_traced(void)
{
#ifdef FL_BENCH_FENCECTL
	char dir[] = "/tmp/fl-bench-trace-XXXXXX", sock[64], out[128];
	long ops = fl__bench_iters(20000, 2000);
	pid_t tracer;
	int tl, status;
	char *old_sock, *old_idle;

	fl__bench_comment("trace 2: fd API cycle (create, owner's signal, poll) through "
			  "fencelined, without and with fencectl trace recording");
	if (!mkdtemp(dir))
		fl__bench_die("mkdtemp", errno);
	snprintf(sock, sizeof(sock), "%s/fl.sock", dir);
	snprintf(out, sizeof(out), "%s/trace.json", dir);
	fl_daemon_disconnect();
	old_sock = fl__bench_env_swap("FENCELINE_SOCKET", sock);
	old_idle = fl__bench_env_swap("FENCELINE_IDLE_MS", "300");
	if (fl_mode_get() != FL_MODE_DAEMON)
		check(fl_mode_set(FL_MODE_DAEMON), "fl_mode_set");
	check(fl_timeline_fd_create("bench", 0, &tl), "fl_timeline_fd_create");
	fl__bench_out("trace_daemon_cycle_untraced", fl__bench_batch_median(b_daemon, &tl, ops),
		      "ns");
	fflush(stdout);
	tracer = fork();
	if (tracer < 0)
		fl__bench_die("fork", errno);
	if (tracer == 0) {
		execl(FL_BENCH_FENCECTL, "fencectl", "trace", "-o", out, "--max-events",
		      "100000000", (char *)NULL);
		_exit(127);
	}
	usleep(300000); /* recording by now */
	fl__bench_out("trace_daemon_cycle_traced", fl__bench_batch_median(b_daemon, &tl, ops),
		      "ns");
	kill(tracer, SIGINT);
	waitpid(tracer, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fl__bench_die("fencectl trace", EIO);
	fl__bench_out("trace_daemon_cycle_after", fl__bench_batch_median(b_daemon, &tl, ops), "ns");
	fl__bench_ratio("ratio_trace_daemon_traced_over_untraced", "trace_daemon_cycle_traced",
			"trace_daemon_cycle_untraced");
	fl__bench_ratio("ratio_trace_daemon_after_over_untraced", "trace_daemon_cycle_after",
			"trace_daemon_cycle_untraced");
	close(tl);
	fl_daemon_disconnect();
	unlink(out);
	unlink(sock);
	snprintf(out, sizeof(out), "%s.lock", sock);
	unlink(out);
	rmdir(dir);
	fl__bench_env_restore("FENCELINE_SOCKET", old_sock);
	fl__bench_env_restore("FENCELINE_IDLE_MS", old_idle);
#endif
}

void fl__bench_trace(void)
{
	probes();
	daemon_traced();
}

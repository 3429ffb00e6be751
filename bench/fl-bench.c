/* SPDX-License-Identifier: MIT */
/*
 * fl-bench: fenceline's benchmark program. Prints one "name value unit"
 * line per figure, each next to a baseline measured in the same run and a
 * "ratio_..." line relating the two. docs/benchmarks.md explains every
 * figure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "bench.h"

struct section {
	const char *name;
	const char *help;
	int selected;
};

enum {
	SEC_CREATE,
	SEC_INC,
	SEC_WAKE,
	SEC_FDSTALL,
	SEC_DAEMON,
	SEC_TRACE,
	SEC_HEAP,
	SEC_FDTYPE,
	SEC_DISPLAY,
	SEC_OUTPUTS,
	SEC_BUFFERQUEUE,
	SEC_HWC,
	NR_SECTIONS
};

static struct section sections[NR_SECTIONS] = {
	[SEC_CREATE] = { "create", "create/merge/info cost vs socketpair, eventfd, getppid", 0 },
	[SEC_INC] = { "inc", "inc cost with 1, 1000, 100000 pending points", 0 },
	[SEC_WAKE] = { "wake", "signal->wake latency: fence fd vs eventfd, wait vs condvar", 0 },
	[SEC_FDSTALL] = { "fdstall", "fd-table growth stall with threads alive", 0 },
	[SEC_TRACE] = { "trace", "USDT probes in vs out; the daemon while fencectl trace records",
			0 },
	[SEC_DAEMON] = { "daemon", "fd API via fencelined: create, requests, wake, clients, memory",
			 0 },
	[SEC_HEAP] = { "heap", "buffer alloc..free vs bare memfd; carveout vs free blocks", 0 },
	[SEC_FDTYPE] = { "fdtype", "fence fd kinds: socketpair vs pipe, status reads, wake", 0 },
	[SEC_DISPLAY] = { "display",
			  "composition of 4 1080p layers vs bare pixman and memcpy; fl-displayd: "
			  "post round trip vs a request, vsync lateness vs timerfd",
			  0 },
	[SEC_OUTPUTS] = { "outputs", "each display driver's cost per 1080p frame vs a memcpy", 0 },
	[SEC_BUFFERQUEUE] = { "bufferqueue",
			      "a buffer queue's frame across processes vs a SEQPACKET round trip",
			      0 },
	[SEC_HWC] = { "hwc",
		      "hardware composer: a static frame, a damaged one, a full recomposition "
		      "vs a memcpy",
		      0 },
};

static void usage(FILE *out, const char *argv0)
{
	fprintf(out,
		"usage: %s [-q] [-s SECTION[,SECTION...]] [-h]\n"
		"  -q  quick: fewer iterations (CI smoke run; latency sample counts drop\n"
		"      below 10000, so do not quote -q figures)\n"
		"  -s  run only these sections (default: all)\n"
		"  -h  this help\n"
		"sections:\n",
		argv0);
	for (int i = 0; i < NR_SECTIONS; i++)
		fprintf(out, "  %-8s %s\n", sections[i].name, sections[i].help);
	fprintf(out, "Output: one \"name value unit\" line per figure; '#' lines are comments.\n");
}

static int select_sections(char *list)
{
	char *save = NULL;

	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = 0;

		for (int i = 0; i < NR_SECTIONS; i++) {
			if (strcmp(tok, sections[i].name) == 0) {
				sections[i].selected = 1;
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "fl-bench: unknown section '%s'\n", tok);
			return -EINVAL;
		}
	}
	return 0;
}

static void cpu_model(char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256];

	snprintf(buf, size, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) == 0 && colon) {
			colon += strspn(colon + 1, " \t") + 1;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(buf, size, "%s", colon);
			break;
		}
	}
	fclose(f);
}

static void clocksource(char *buf, size_t size)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	snprintf(buf, size, "unknown");
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Other work on the machine skews every figure; the load average before
 * and after the run tells a reader whether to trust it. */
static void loadavg(const char *when)
{
	FILE *f = fopen("/proc/loadavg", "re");
	char buf[128];

	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		fl__bench_comment("loadavg %s: %s", when, buf);
	}
	fclose(f);
}

static void machine_facts(void)
{
	char model[128], cs[64];
	struct utsname u;
	struct rlimit rl;
	struct timespec res;

	cpu_model(model, sizeof(model));
	clocksource(cs, sizeof(cs));
	fl__bench_comment("fl-bench, fenceline %d.%d.%d%s", FL_VERSION_MAJOR, FL_VERSION_MINOR,
			  FL_VERSION_MICRO, fl__bench_quick ? " (quick run: do not quote)" : "");
	fl__bench_comment("nproc %ld online, %d usable", sysconf(_SC_NPROCESSORS_ONLN),
			  fl__bench_nr_cpus());
	if (uname(&u) == 0)
		fl__bench_comment("kernel %s %s %s", u.sysname, u.release, u.machine);
	fl__bench_comment("cpu %s", model);
	clock_getres(CLOCK_MONOTONIC, &res);
	fl__bench_comment("clocksource %s, CLOCK_MONOTONIC resolution %ld ns", cs, res.tv_nsec);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		fl__bench_comment("RLIMIT_NOFILE soft %llu hard %llu",
				  (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
#ifdef __OPTIMIZE__
	fl__bench_comment("built with optimisation");
#else
	fl__bench_comment("built WITHOUT optimisation: figures are not representative");
#endif
	fl__bench_comment("throughput: median of %d batches; latency: per-sample percentiles",
			  FL_BENCH_REPS);
	loadavg("at start");
}

static double b_getppid(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();

	/* The raw syscall: a libc may one day cache getppid(). */
	for (long i = 0; i < ops; i++)
		syscall(SYS_getppid);
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_clock(void *arg, long ops)
{
	volatile uint64_t sink = 0;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		sink += fl__bench_now_ns();
	(void)sink;
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

/* The yardsticks every section divides by: one trivial syscall and one
 * clock read. */
void fl__bench_base(void)
{
	long ops = fl__bench_iters(200000, 20000);

	fl__bench_out("baseline_getppid", fl__bench_batch_median(b_getppid, NULL, ops), "ns");
	fl__bench_out("clock_gettime", fl__bench_batch_median(b_clock, NULL, ops), "ns");
}

int main(int argc, char **argv)
{
	int any = 0, opt;

	/* Internal: section fdstall re-executes this program per variant so
	 * that each starts with a fresh fd table and fresh library state. */
	if (argc == 3 && strcmp(argv[1], "--fdstall-child") == 0)
		return fl__bench_fdstall_child(argv[2]);
	/* Internal: section trace runs the probe-less build's cycle this way. */
	if (argc == 2 && strcmp(argv[1], "--trace-child") == 0)
		return fl__bench_trace_child();

	while ((opt = getopt(argc, argv, "qs:h")) != -1) {
		switch (opt) {
		case 'q':
			fl__bench_quick = 1;
			break;
		case 's':
			if (select_sections(optarg) < 0)
				return 2;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	for (int i = 0; i < NR_SECTIONS; i++)
		any |= sections[i].selected;
	if (!any)
		for (int i = 0; i < NR_SECTIONS; i++)
			sections[i].selected = 1;

	machine_facts();
	fl__bench_base();
	if (sections[SEC_CREATE].selected)
		fl__bench_create();
	if (sections[SEC_INC].selected)
		fl__bench_inc();
	if (sections[SEC_WAKE].selected)
		fl__bench_wake();
	if (sections[SEC_FDSTALL].selected)
		fl__bench_fdstall("/proc/self/exe");
	if (sections[SEC_DAEMON].selected)
		fl__bench_daemon();
	if (sections[SEC_TRACE].selected)
		fl__bench_trace();
	if (sections[SEC_HEAP].selected)
		fl__bench_heap();
	if (sections[SEC_FDTYPE].selected)
		fl__bench_fdtype();
	if (sections[SEC_DISPLAY].selected) {
		fl__bench_display();
		fl__bench_display_service();
	}
	if (sections[SEC_OUTPUTS].selected)
		fl__bench_outputs();
	if (sections[SEC_BUFFERQUEUE].selected)
		fl__bench_bufferqueue();
	if (sections[SEC_HWC].selected) {
#ifdef FL_BENCH_HWC
		fl__bench_hwc();
#else
		fl__bench_comment("hwc: not in this build (fl-bench-sdt/-nosdt link libfenceline "
				  "statically; libfenceline-hwc needs the shared one)");
#endif
	}
	loadavg("at end");
	return 0;
}

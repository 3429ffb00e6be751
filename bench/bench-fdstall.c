/* SPDX-License-Identifier: MIT */
/*
 * Section "fdstall": Linux grows a process's fd table by doubling it, and
 * when several threads share the table each growth waits for an RCU grace
 * period. The thread that asked for the fd stalls for that long. Here 2000
 * fences with fds are made, and all kept open, in a process with 4 idle
 * threads, and the slowest calls are reported:
 *
 *   socketpair  bare socketpair() calls: what any fd-per-fence design meets
 *   noreserve   FENCELINE_FD_RESERVE=0: fenceline's automatic growth off
 *   auto        the default: a helper thread grows the table ahead of need
 *   prereserve  fl_fd_reserve(4096) before the threads start, plus auto
 *
 * Each variant runs in a child that fork()s and re-executes this program,
 * so that it starts with a small fd table, fenceline state that has never
 * seen a call, and the environment set from its first instruction.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "bench.h"

#define FDSTALL_FENCES	   2000
#define FDSTALL_THREADS	   4
#define FDSTALL_MIN_NOFILE 8192
#define FDSTALL_RESERVE	   4096
#define FDSTALL_STALL_NS   1000000
#define FDSTALL_ROUNDS	   5
#define EXIT_SKIP	   77

extern char **environ;

static const char *const variants[] = { "socketpair", "noreserve", "auto", "prereserve" };
#define NR_VARIANTS (sizeof(variants) / sizeof(variants[0]))

static int fd_table_size(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	int size = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "FDSize: %d", &size) == 1)
			break;
	fclose(f);
	return size;
}

static int raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	/* An unlimited hard limit still cannot exceed fs.nr_open; a million
	 * is far more than this test needs and below every default. */
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 1048576)
		rl.rlim_max = 1048576;
	if (rl.rlim_max < FDSTALL_MIN_NOFILE)
		return -EMFILE;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return -errno;
	}
	return (int)rl.rlim_cur;
}

static void *idle_thread(void *arg)
{
	int *fd = arg;
	char c;

	/* Blocks until the write end closes: alive, asleep, sharing the fd
	 * table, which is all the kernel looks at. */
	while (read(*fd, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static int fd_step(int socketpair_only, struct fl_timeline *tl, uint64_t value,
		   struct fl_fence **ret_fence, int ret_fds[2])
{
	int r;

	if (socketpair_only)
		return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ret_fds) < 0 ? -errno : 0;
	r = fl_sw_sync_fence_create(tl, value, "stall", ret_fence);
	if (r < 0)
		return r;
	ret_fds[1] = -1;
	return fl_fence_export_fd(*ret_fence, &ret_fds[0]);
}

/*
 * fork() sizes the child's fd table after the highest fd open in the parent,
 * and whatever started fl-bench may have left one open high up (fd 251, say,
 * which gives a 256-slot table and hides the first two growths). So the
 * re-executed child closes everything above stderr and forks once more: the
 * grandchild starts with the kernel's smallest table, like a fresh program.
 */
static int fresh_fd_table(void)
{
	int status;
	pid_t pid;

	if (close_range(3, ~0u, 0) < 0)
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	fflush(stdout);
	pid = fork();
	if (pid <= 0)
		return pid < 0 ? -errno : 0;
	if (waitpid(pid, &status, 0) < 0)
		fl__bench_die("waitpid", errno);
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static int fdstall_measure(const char *variant);

int fl__bench_fdstall_child(const char *variant)
{
	int known = 0, r;

	for (size_t i = 0; i < NR_VARIANTS; i++)
		known |= strcmp(variant, variants[i]) == 0;
	if (!known) {
		fprintf(stderr, "fl-bench: unknown fdstall variant '%s'\n", variant);
		return 2;
	}
	r = fresh_fd_table();
	if (r < 0)
		fl__bench_die("fork", r);
	return fdstall_measure(variant);
}

static int band(int fd)
{
	return fd > 0 ? 31 - __builtin_clz((unsigned)fd) : 0;
}

/* Tables grow in powers of two from 64 slots, so a call whose fd lands in a
 * higher power-of-two band than every earlier fd is one that needed a
 * bigger table than the one before it. */
static int crosses_band(int before, int fd)
{
	return fd >= 64 && band(fd) > band(before);
}

/* Where the worst calls happened says whether they were table growths
 * (fds at 64, 128, 256, ...) or something else. */
static void slowest(const char *variant, const uint64_t *lat, int (*fds)[2])
{
	char buf[256];
	int top[3] = { -1, -1, -1 };
	size_t len = 0;

	for (int i = 0; i < FDSTALL_FENCES; i++) {
		for (int k = 0; k < 3; k++) {
			if (top[k] < 0 || lat[i] > lat[top[k]]) {
				memmove(&top[k + 1], &top[k], (size_t)(2 - k) * sizeof(top[0]));
				top[k] = i;
				break;
			}
		}
	}
	buf[0] = '\0';
	for (int k = 0; k < 3 && top[k] >= 0; k++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, " call %d (fd %d) %llu ns;",
					top[k], fds[top[k]][0], (unsigned long long)lat[top[k]]);
	fl__bench_comment("fdstall %s: slowest:%s", variant, buf);
}

static int fdstall_measure(const char *variant)
{
	int sp = strcmp(variant, "socketpair") == 0, pre = strcmp(variant, "prereserve") == 0;
	int fds[FDSTALL_FENCES][2], idle_pipe[2], maxfd = 0, limit, size0, r;
	static struct fl_fence *fences[FDSTALL_FENCES];
	static uint64_t lat[FDSTALL_FENCES];
	pthread_t threads[FDSTALL_THREADS];
	struct fl_timeline *tl = NULL;
	struct fl_bench_lat st;
	long stalls = 0, growths = 0;
	uint64_t growth_max = 0, other_max = 0;

	limit = raise_nofile();
	if (limit < 0) {
		fl__bench_comment("skip: fdstall %s: cannot raise RLIMIT_NOFILE to %d: %s", variant,
				  FDSTALL_MIN_NOFILE, strerror(-limit));
		return EXIT_SKIP;
	}
	size0 = fd_table_size();
	if (pre) {
		r = fl_fd_reserve(FDSTALL_RESERVE);
		if (r < 0)
			fl__bench_die("fl_fd_reserve", r);
		fl__bench_outf(r, "fds", "fdstall_prereserve_reserved");
	}
	if (pipe2(idle_pipe, O_CLOEXEC) < 0)
		fl__bench_die("pipe2", errno);
	for (int i = 0; i < FDSTALL_THREADS; i++) {
		r = pthread_create(&threads[i], NULL, idle_thread, &idle_pipe[0]);
		if (r)
			fl__bench_die("pthread_create", r);
	}

	/* One untimed round first, so that the library's one-time set-up is
	 * not mistaken for an fd-table stall. */
	if (!sp)
		r = fl_sw_sync_timeline_create("stall", 0, &tl);
	if (!sp && r < 0)
		fl__bench_die("fl_sw_sync_timeline_create", r);
	r = fd_step(sp, tl, 1, &fences[0], fds[0]);
	if (r < 0)
		fl__bench_die("warm-up", r);
	close(fds[0][0]);
	if (sp)
		close(fds[0][1]);
	fences[0] = fl_fence_unref(fences[0]);

	for (int i = 0; i < FDSTALL_FENCES; i++) {
		uint64_t t0 = fl__bench_now_ns();

		r = fd_step(sp, tl, (uint64_t)i + 1, &fences[i], fds[i]);
		lat[i] = fl__bench_now_ns() - t0;
		if (r < 0)
			fl__bench_die(sp ? "socketpair" : "fence create + export", r);
		stalls += lat[i] >= FDSTALL_STALL_NS;
		r = fds[i][0] > fds[i][1] ? fds[i][0] : fds[i][1];
		if (crosses_band(maxfd, r)) {
			growths++;
			growth_max = lat[i] > growth_max ? lat[i] : growth_max;
		} else {
			other_max = lat[i] > other_max ? lat[i] : other_max;
		}
		maxfd = r > maxfd ? r : maxfd;
	}

	slowest(variant, lat, fds);
	fl__bench_lat_stats(lat, FDSTALL_FENCES, &st);
	fl__bench_outf(st.p50, "ns", "fdstall_%s_p50", variant);
	fl__bench_outf(st.p99, "ns", "fdstall_%s_p99", variant);
	fl__bench_outf(st.p999, "ns", "fdstall_%s_p999", variant);
	fl__bench_outf(st.max, "ns", "fdstall_%s_max", variant);
	fl__bench_outf((double)stalls, "calls", "fdstall_%s_over_1ms", variant);
	fl__bench_outf((double)growth_max, "ns", "fdstall_%s_band_max", variant);
	fl__bench_outf((double)growths, "calls", "fdstall_%s_band_calls", variant);
	fl__bench_outf((double)other_max, "ns", "fdstall_%s_other_max", variant);
	fl__bench_outf(maxfd, "fd", "fdstall_%s_highest_fd", variant);
	fl__bench_comment("fdstall %s: FDSize %d at start, %d at end, RLIMIT_NOFILE %d", variant,
			  size0, fd_table_size(), limit);

	close(idle_pipe[1]);
	for (int i = 0; i < FDSTALL_THREADS; i++)
		pthread_join(threads[i], NULL);
	close(idle_pipe[0]);
	for (int i = 0; i < FDSTALL_FENCES; i++) {
		close(fds[i][0]);
		if (sp)
			close(fds[i][1]);
		fl_fence_unref(fences[i]);
	}
	fl_timeline_unref(tl);
	return 0;
}

/* The parent's environment without FENCELINE_FD_RESERVE, plus @extra. It
 * is built before fork(): the child of a threaded parent may only make
 * async-signal-safe calls until it execs. */
static char **child_env(const char *extra)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		fl__bench_die("calloc", ENOMEM);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "FENCELINE_FD_RESERVE=", 21) != 0)
			env[k++] = environ[i];
	if (extra)
		env[k++] = (char *)extra;
	return env;
}

/* Each child prints its figures once; the parent keeps every round's value
 * and prints the median over rounds. */
struct round_figure {
	char name[96];
	char unit[32];
	double v[FDSTALL_ROUNDS];
	int n;
};

static struct round_figure round_figures[64];
static int nr_round_figures;

static void collect(const char *name, double value, const char *unit)
{
	struct round_figure *f = NULL;

	for (int i = 0; i < nr_round_figures && !f; i++)
		if (strcmp(round_figures[i].name, name) == 0)
			f = &round_figures[i];
	if (!f) {
		if (nr_round_figures == (int)(sizeof(round_figures) / sizeof(round_figures[0])))
			return;
		f = &round_figures[nr_round_figures++];
		snprintf(f->name, sizeof(f->name), "%s", name);
		snprintf(f->unit, sizeof(f->unit), "%s", unit);
	}
	if (f->n < FDSTALL_ROUNDS)
		f->v[f->n++] = value;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_rounds(void)
{
	size_t len;

	for (int i = 0; i < nr_round_figures; i++) {
		struct round_figure *f = &round_figures[i];

		qsort(f->v, (size_t)f->n, sizeof(f->v[0]), cmp_double);
		fl__bench_out(f->name, f->v[f->n / 2], f->unit);
		len = strlen(f->name);
		if (f->n > 1 && len > 4 && strcmp(f->name + len - 4, "_max") == 0 &&
		    !strstr(f->name, "_band_") && !strstr(f->name, "_other_"))
			fl__bench_outf(f->v[f->n - 1], f->unit, "%s_worst", f->name);
	}
}

static void relay(FILE *in, int round)
{
	char line[256], name[96], unit[32];
	double value;

	while (fgets(line, sizeof(line), in)) {
		if (line[0] != '#' && sscanf(line, "%95s %lf %31s", name, &value, unit) == 3)
			collect(name, value, unit);
		else if (round == 0)
			fputs(line, stdout);
	}
	fflush(stdout);
}

static void run_variant(const char *self_exe, const char *variant, int round)
{
	char **env = child_env(strcmp(variant, "noreserve") == 0 ? "FENCELINE_FD_RESERVE=0" : NULL);
	char *argv[] = { (char *)self_exe, (char *)"--fdstall-child", (char *)variant, NULL };
	int p[2], status;
	pid_t pid;
	FILE *in;

	if (pipe2(p, O_CLOEXEC) < 0)
		fl__bench_die("pipe2", errno);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fl__bench_die("fork", errno);
	if (pid == 0) {
		/* dup2() leaves the new stdout without O_CLOEXEC. */
		if (dup2(p[1], STDOUT_FILENO) >= 0)
			execve(self_exe, argv, env);
		_exit(127);
	}
	close(p[1]);
	in = fdopen(p[0], "r");
	if (!in)
		fl__bench_die("fdopen", errno);
	relay(in, round);
	fclose(in);
	free(env);
	if (waitpid(pid, &status, 0) < 0)
		fl__bench_die("waitpid", errno);
	if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP)
		return;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fl__bench_comment("warning: fdstall %s child %d failed (status 0x%x)", variant,
				  round, status);
}

void fl__bench_fdstall(const char *self_exe)
{
	static const char *const stats[] = { "p50", "p999", "max" };
	char name[96], num[64], den[64];

	int rounds = (int)fl__bench_iters(FDSTALL_ROUNDS, 1);

	fl__bench_comment("section fdstall: per-call ns of making one fd, %d fds kept open, "
			  "%d idle threads, a fresh child process per variant and round; "
			  "figures are the median over %d rounds (comments: round 0)",
			  FDSTALL_FENCES, FDSTALL_THREADS, rounds);
	/* Rounds interleave the variants so that a noisy spell on the host
	 * hits all of them alike. */
	for (int round = 0; round < rounds; round++)
		for (size_t i = 0; i < NR_VARIANTS; i++)
			run_variant(self_exe, variants[i], round);
	print_rounds();
	for (size_t s = 0; s < 3; s++) {
		for (size_t i = 1; i < NR_VARIANTS; i++) {
			snprintf(name, sizeof(name), "ratio_fdstall_%s_over_socketpair_%s",
				 variants[i], stats[s]);
			snprintf(num, sizeof(num), "fdstall_%s_%s", variants[i], stats[s]);
			snprintf(den, sizeof(den), "fdstall_socketpair_%s", stats[s]);
			fl__bench_ratio(name, num, den);
		}
	}
	fl__bench_ratio("ratio_fdstall_noreserve_over_auto_max", "fdstall_noreserve_max",
			"fdstall_auto_max");
	fl__bench_ratio("ratio_fdstall_noreserve_over_prereserve_max", "fdstall_noreserve_max",
			"fdstall_prereserve_max");
}

/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo: the whole Android-style pipeline in separate processes (docs/pipeline.md).
 *
 *   camera (NV12) ─┐
 *   video (YUV420) ├─ buffer queues ─> compositor ── hardware composer ──> display service
 *   app (ARGB)     │  (acquire fences)   (vsync)   <── release / present fences
 *   status bar ────┘
 *
 * This file forks them, watches them and reaps them: every process re-arms an alarm() on each
 * step it makes (--timeout), a process that fails or dies gets every other one killed, and main
 * counts its own fds before and after. The summary is the compositor's (compositor.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "../demo-util.h"
#include "../pipeline-screen.h"
#include "compositor.h"
#include "producer.h"
#include "scene.h"

struct options {
	double seconds, jank;
	unsigned int hz, seed, timeout_s, capture_every, slots;
	int64_t reset_at;
	bool quiet, poison, no_overlays, no_gl;
	const char *display, *sheet, *capture_dir, *report;
};

static void usage(FILE *out)
{
	fputs("usage: pipeline-demo [OPTIONS]\n"
	      "The whole pipeline in separate processes: camera, video, app and status bar\n"
	      "producers, a compositor with a hardware composer, the display service.\n"
	      "  --seconds S       run S seconds (default 5)\n"
	      "  --frames N        run as long as N frames of the app take\n"
	      "  --hz N            the app's frame rate; the others scale with it (default 60)\n"
	      "  --jank P          a frame's work is slow (2-3 periods) with probability P\n"
	      "                    (default 0.05)\n"
	      "  --seed N          the slow frames' seed (default: from the clock)\n"
	      "  --reset-at N      reset the app's context at its frame N (its pending work\n"
	      "                    fails with EIO; the compositor keeps its last good buffer)\n"
	      "  --timeout S       give up after S seconds without progress (default 10)\n"
	      "  --display CHOICE  the output: auto, virtual, window, terminal[:TTY] or\n"
	      "                    kms[:CARD] (docs/display.md; default: FENCELINE_DISPLAY,\n"
	      "                    else the virtual display)\n"
	      "  --sheet PATH      the PNG contact sheet (default pipeline-demo-sheet.png;\n"
	      "                    '' for none)\n"
	      "  --capture-every N a capture for the sheet every N vsyncs (default 30)\n"
	      "  --capture-dir DIR also keep each capture whole, as DIR/capture-NNN.png\n"
	      "  --report PAGE     trace the run (fencectl trace, into PAGE.json) and write\n"
	      "                    fencectl report's page to PAGE (default\n"
	      "                    pipeline-demo-report.html; '' for none). fencectl is\n"
	      "                    $FENCECTL, else this build's, else the one on PATH\n"
	      "  --poison          producers poison each buffer before drawing it (a buffer\n"
	      "                    written while on screen would show it: item 7's check)\n"
	      "  --slots N         buffers per queue, 2 or 3 (default 3)\n"
	      "  --no-gl           the app draws on the CPU, not with OpenGL ES\n"
	      "  --no-overlays     the hardware composer composes every layer\n"
	      "  --quiet           print only the summary\n",
	      out);
}

static int parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 'S' },
		{ "frames", required_argument, NULL, 'f' },
		{ "hz", required_argument, NULL, 'z' },
		{ "jank", required_argument, NULL, 'j' },
		{ "seed", required_argument, NULL, 's' },
		{ "reset-at", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "display", required_argument, NULL, 'd' },
		{ "sheet", required_argument, NULL, 'o' },
		{ "capture-every", required_argument, NULL, 'e' },
		{ "capture-dir", required_argument, NULL, 'c' },
		{ "report", required_argument, NULL, 'R' },
		{ "poison", no_argument, NULL, 'P' },
		{ "slots", required_argument, NULL, 'n' },
		{ "no-overlays", no_argument, NULL, 'N' },
		{ "no-gl", no_argument, NULL, 'G' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned int frames = 0, u;
	int c, index;

	*opt = (struct options){
		.seconds = 5,
		.hz = 60,
		.jank = 0.05,
		.seed = (unsigned int)(demo_now_ns() ^ (uint64_t)getpid()),
		.timeout_s = 10,
		.capture_every = 30,
		.slots = 3,
		.reset_at = -1,
		.sheet = "pipeline-demo-sheet.png",
		.report = "pipeline-demo-report.html",
	};
	while ((c = getopt_long(argc, argv, "", longopts, &index)) != -1) {
		bool ok = true;

		switch (c) {
		case 'S':
			ok = demo_parse_double(optarg, 0.1, 3600, &opt->seconds);
			break;
		case 'f':
			ok = demo_parse_uint(optarg, 1, 60000, &frames);
			break;
		case 'z':
			ok = demo_parse_uint(optarg, 1, 240, &opt->hz);
			break;
		case 'j':
			ok = demo_parse_double(optarg, 0, 1, &opt->jank);
			break;
		case 's':
			ok = demo_parse_uint(optarg, 0, UINT32_MAX, &opt->seed);
			break;
		case 'r':
			ok = demo_parse_uint(optarg, 0, 60000, &u);
			opt->reset_at = u;
			break;
		case 't':
			ok = demo_parse_uint(optarg, 1, 3600, &opt->timeout_s);
			break;
		case 'e':
			ok = demo_parse_uint(optarg, 1, 100000, &opt->capture_every);
			break;
		case 'o':
			opt->sheet = optarg[0] ? optarg : NULL;
			break;
		case 'c':
			opt->capture_dir = optarg;
			break;
		case 'n':
			ok = demo_parse_uint(optarg, 2, 3, &opt->slots);
			break;
		case 'R':
			opt->report = optarg[0] ? optarg : NULL;
			break;
		case 'P':
			opt->poison = true;
			break;
		case 'G':
			opt->no_gl = true;
			break;
		case 'N':
			opt->no_overlays = true;
			break;
		case 'q':
			opt->quiet = true;
			break;
		case 'd':
			if (demo_option_display(optarg, &opt->display) < 0)
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			fputs("Try 'pipeline-demo --help'.\n", stderr);
			return -EINVAL;
		}
		if (!ok) {
			char what[64];

			snprintf(what, sizeof(what), "bad value for --%s:", longopts[index].name);
			return demo_usage_error(what, optarg);
		}
	}
	if (optind < argc)
		return demo_usage_error("unexpected argument", argv[optind]);
	if (frames)
		opt->seconds = (double)frames / opt->hz;
	return 0;
}

#define NPROC (SCENE_LAYERS + 1)

struct proc {
	const char *name;
	pid_t pid;
	int status;
	bool reaped, stopped;
};

static volatile sig_atomic_t interrupted;

/* fencectl trace, when --report: a child of main too, reaped apart from the stages. */
static pid_t tracer_pid;
static int tracer_status;
static bool tracer_reaped;

/*
 * fencectl: $FENCECTL, else the one of this build tree (../tools/fencectl beside
 * examples/pipeline-demo), else the one on PATH; NULL when there is none.
 */
static const char *fencectl_path(void)
{
	static char path[PATH_MAX];
	const char *p = getenv("FENCECTL"), *env_path = getenv("PATH");
	char exe[PATH_MAX / 2], *slash;
	ssize_t n;

	if (p && p[0])
		return p;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(path, sizeof(path), "%s/../tools/fencectl", exe);
			if (access(path, X_OK) == 0)
				return path;
		}
	}
	while (env_path && *env_path) {
		size_t len = strcspn(env_path, ":");

		snprintf(path, sizeof(path), "%.*s/fencectl", (int)len, env_path);
		if (len && access(path, X_OK) == 0)
			return path;
		env_path += len + (env_path[len] == ':');
	}
	return NULL;
}

/* Run fencectl with @argv (NULL-terminated, argv[0] ignored); return its pid, or -1. */
static pid_t spawn_fencectl(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv(fencectl_path(), argv);
		fprintf(stderr, "pipeline-demo: cannot run %s: %s\n", fencectl_path(),
			strerror(errno));
		_exit(127);
	}
	return pid;
}

static int wait_exit(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void trace_start(const char *json)
{
	char *argv[] = { "fencectl", "trace", "-o", (char *)json, NULL };

	tracer_pid = spawn_fencectl(argv);
	/* Let it subscribe before the stages make their first timelines. */
	if (tracer_pid > 0)
		usleep(500000);
}

/* Stop the trace, make the page. Return: true when both worked. */
static bool trace_report(const char *json, const char *page)
{
	char *argv[] = { "fencectl", "report", (char *)json, "-o", (char *)page, NULL };
	int r;

	if (tracer_pid <= 0)
		return false;
	if (!tracer_reaped) {
		kill(tracer_pid, SIGINT);
		r = wait_exit(tracer_pid);
	} else {
		r = WIFEXITED(tracer_status) ? WEXITSTATUS(tracer_status) : 1;
	}
	if (r != 0) {
		fprintf(stderr, "pipeline-demo: fencectl trace failed (%d)\n", r);
		return false;
	}
	r = wait_exit(spawn_fencectl(argv));
	if (r != 0) {
		fprintf(stderr, "pipeline-demo: fencectl report failed (%d)\n", r);
		return false;
	}
	printf("report: %s (the trace: %s)\n", page, json);
	return true;
}

static void on_signal(int sig)
{
	interrupted = sig;
}

/* Kill the children still running: main stops them, so their deaths are not news. */
static void stop_all(struct proc *p, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (p[i].pid > 0 && !p[i].reaped && !p[i].stopped) {
			kill(p[i].pid, SIGKILL);
			p[i].stopped = true;
		}
}

/* Reap every child; kill the rest as soon as one fails. Return: true if all exited 0. */
static bool reap_all(struct proc *p, unsigned int n, bool kill_now)
{
	bool ok = !kill_now;
	unsigned int left = 0;

	for (unsigned int i = 0; i < n; i++)
		left += p[i].pid > 0 && !p[i].reaped;
	if (kill_now)
		stop_all(p, n);
	while (left) {
		int status;
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0) {
			if (errno == EINTR) {
				/* main's own watchdog, or ^C: stop everyone. */
				if (!interrupted || interrupted == SIGALRM)
					fprintf(stderr,
						"pipeline-demo: the run's watchdog expired\n");
				stop_all(p, n);
				ok = false;
				continue;
			}
			break;
		}
		if (pid == tracer_pid) {
			/* The tracer ended early: trace_report() says so. */
			tracer_status = status;
			tracer_reaped = true;
			continue;
		}
		for (unsigned int i = 0; i < n; i++) {
			if (p[i].pid != pid)
				continue;
			p[i].reaped = true;
			p[i].status = status;
			left--;
			if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || p[i].stopped)
				break;
			fprintf(stderr, "pipeline-demo: %s (pid %d) %s %d%s; stopping the others\n",
				p[i].name, pid,
				WIFEXITED(status) ? "exited with" : "was killed by signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
					? ": its watchdog expired"
					: "");
			ok = false;
			stop_all(p, n);
		}
	}
	return ok;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct proc procs[NPROC] = { { "compositor", 0, 0, false, false } };
	struct scene_geom g[SCENE_LAYERS];
	struct options opt;
	char dir[] = "/tmp/pipeline-demo-XXXXXX";
	int ready[2], fds_before, fds_after, daemon_pid;
	uint32_t size[2];
	uint64_t t0, end;
	char json[PATH_MAX];
	bool ok;

	if (parse_options(argc, argv, &opt) < 0)
		return 2;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	/* Fences made in one process and waited for in another live in the daemon. */
	fl_mode_set(FL_MODE_DAEMON);
	daemon_pid = fl_daemon_connect();
	if (daemon_pid < 0) {
		fprintf(stderr, "pipeline-demo: cannot reach fencelined: %s\n",
			strerror(-daemon_pid));
		return 1;
	}
	fds_before = demo_count_fds();
	if (!mkdtemp(dir)) {
		perror("pipeline-demo: mkdtemp");
		return 1;
	}
	if (pipe(ready) < 0) {
		perror("pipeline-demo: pipe");
		rmdir(dir);
		return 1;
	}
	if (opt.report && !fencectl_path()) {
		printf("report: none (no fencectl found: set FENCECTL)\n");
		opt.report = NULL;
	}
	if (opt.report) {
		snprintf(json, sizeof(json), "%s.json", opt.report);
		trace_start(json);
	}
	if (!opt.quiet)
		printf("pipeline-demo: %.1f s, app at %u Hz, jank %.0f%%, seed %u%s, fencelined "
		       "pid "
		       "%d\n",
		       opt.seconds, opt.hz, opt.jank * 100, opt.seed,
		       opt.poison ? ", producers poison their buffers" : "", daemon_pid);
	fflush(stdout);
	/* The producers start once the compositor listens; the clock starts a little later. */
	t0 = demo_now_ns() + 1000000000u;
	end = t0 + (uint64_t)(opt.seconds * 1e9);
	procs[0].pid = fork();
	if (procs[0].pid == 0) {
		struct compositor_opts co = {
			.dir = dir,
			.end_ns = end,
			.timeout_s = opt.timeout_s,
			.quiet = opt.quiet,
			.no_overlays = opt.no_overlays,
			.sheet = opt.sheet,
			.capture_dir = opt.capture_dir,
			.capture_every = opt.capture_every,
			.slots = opt.slots,
			.ready_fd = ready[1],
		};

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Traces and reports name processes by their comm. */
		prctl(PR_SET_NAME, "compositor");
		/* Whole lines: every process writes to the same stdout. */
		setvbuf(stdout, NULL, _IOLBF, 0);
		signal(SIGALRM, SIG_DFL);
		close(ready[0]);
		alarm(opt.timeout_s);
		_exit(compositor_run(&co) < 0 ? 1 : 0);
	}
	close(ready[1]);
	ok = procs[0].pid > 0;
	if (ok) {
		struct pollfd pfd = { .fd = ready[0], .events = POLLIN };

		ok = poll(&pfd, 1, (int)opt.timeout_s * 1000) == 1 &&
		     read(ready[0], size, sizeof(size)) == (ssize_t)sizeof(size) &&
		     scene_layout(size[0], size[1], g) == 0;
		if (!ok)
			fprintf(stderr, "pipeline-demo: the compositor did not start\n");
	}
	close(ready[0]);
	for (unsigned int l = 0; ok && l < SCENE_LAYERS; l++) {
		struct proc *p = &procs[l + 1];
		char path[PATH_MAX];

		p->name = g[l].name;
		snprintf(path, sizeof(path), "%s/%s.sock", dir, g[l].name);
		fflush(stdout);
		p->pid = fork();
		if (p->pid == 0) {
			struct producer_opts po = {
				.layer = l,
				.geom = g[l],
				.path = path,
				.t0_ns = t0,
				.end_ns = end,
				.rate_scale = opt.hz / 60.0,
				.jank = l == SCENE_STATUS ? 0 : opt.jank,
				.seed = opt.seed,
				.poison = opt.poison,
				.gl = !opt.no_gl,
				.reset_at = l == SCENE_APP ? opt.reset_at : -1,
				.timeout_s = opt.timeout_s,
				.quiet = opt.quiet,
			};

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			prctl(PR_SET_NAME, g[l].name);
			setvbuf(stdout, NULL, _IOLBF, 0);
			signal(SIGALRM, SIG_DFL);
			alarm(opt.timeout_s);
			_exit(producer_run(&po) < 0 ? 1 : 0);
		}
		if (p->pid < 0) {
			perror("pipeline-demo: fork");
			ok = false;
		}
	}
	/* main's own watchdog: the whole run, plus the children's own bound. */
	alarm((unsigned int)opt.seconds + 3 * opt.timeout_s);
	ok = reap_all(procs, NPROC, !ok) && ok;
	alarm(0);
	rmdir(dir);
	if (opt.report && !trace_report(json, opt.report))
		ok = false;
	fds_after = demo_count_fds();
	printf("pipeline-demo: %u processes reaped; fds of main: %d at the start, %d at the end\n",
	       NPROC, fds_before, fds_after);
	if (fds_after != fds_before)
		ok = false;
	if (!ok)
		fprintf(stderr, "pipeline-demo: FAILED\n");
	return interrupted == SIGINT ? 130 : ok ? 0 : 1;
}

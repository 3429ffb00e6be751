/* SPDX-License-Identifier: MIT */
/*
 * fencectl deadlocks, stats and trace: views the daemon computes
 * (fl_introspect_dump_waits(), fl_introspect_dump_stats()) and its trace
 * sessions (fl_introspect_trace_start(), fl_introspect_trace_stop()).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "fencectl.h"

const char deadlocks_usage[] =
	"usage: fencectl deadlocks [--json]\n"
	"\n"
	"The waits in progress (process, thread, fence, for how long) and what the\n"
	"daemon's detector finds among them: cycles of waits that can never end (A\n"
	"waits on a timeline only B can signal while B waits on one only A can), and\n"
	"waits on fences that will never signal because no process holds their\n"
	"timeline any more. Also the last findings, which may be over by now.\n"
	"Exit status 4 when something is found now.\n"
	"\n"
	"  --json   one JSON object instead of text; schema in docs/fencectl.md\n";

const char stats_usage[] =
	"usage: fencectl stats [--json] [--reset]\n"
	"\n"
	"Per timeline and per fence name (digits folded to #): fences completed and\n"
	"failed, create->signal latency, blocking waits, their time, timeouts and\n"
	"errors, as p50/p90/p99/max since the daemon started or the last reset.\n"
	"\n"
	"  --json    one JSON object instead of text; schema in docs/fencectl.md\n"
	"  --reset   start counting afresh after printing\n";

const char trace_usage[] =
	"usage: fencectl trace -o FILE [-d SECONDS] [--max-events N]\n"
	"\n"
	"Records what happens to every timeline, fence and wait of the daemon: one\n"
	"track per timeline (its value over time and each signal), fences from\n"
	"creation to completion, waits as slices with arrows from the signal that\n"
	"ended them. FILE is Chrome's JSON trace format: open it in\n"
	"https://ui.perfetto.dev or chrome://tracing, or make a report of it with\n"
	"fencectl report. Stops after SECONDS (default: at Ctrl-C or SIGTERM).\n"
	"While it records, owners of timelines tell the daemon of every step.\n"
	"\n"
	"  -o FILE          where to write the trace ('-' for stdout)\n"
	"  -d SECONDS       how long to record (a decimal number)\n"
	"  --max-events N   keep at most N events (default 1000000; more are counted)\n";

int fencectl_view(const char *cmd, enum fencectl_view view, unsigned int flags)
{
	int r, fd = -1;

	r = fencectl_request_dump(view, flags, 0, &fd);
	if (r == -ENOENT)
		return fencectl_no_daemon();
	if (r >= 0)
		r = fencectl_copy_out(fd);
	if (fd >= 0)
		close(fd);
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "fencectl %s: %s\n", cmd, strerror(r < 0 ? -r : EIO));
		return 1;
	}
	return 0;
}

/* Whether the detector finds something now (asked in JSON, whatever was printed). */
static bool found_something(void)
{
	char *text = NULL;
	size_t len = 0;
	int fd = -1;
	bool found = false;

	if (fencectl_request_dump(VIEW_WAITS, FL_INTROSPECT_JSON, 0, &fd) < 0)
		return false;
	if (fl_introspect_read(fd, NULL, 0, &len) == -ENOBUFS && (text = malloc(len + 1)) &&
	    fl_introspect_read(fd, text, len + 1, &len) == 0)
		/* Our own format: an empty list is written exactly so. */
		found = !strstr(text, "\"deadlocks\":[]") || !strstr(text, "\"never_signal\":[]");
	free(text);
	close(fd);
	return found;
}

int fencectl_parse_flags(int argc, char **argv, const char *cmd, const char *usage, bool *json,
			 bool *reset)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			*json = true;
		} else if (reset && !strcmp(argv[i], "--reset")) {
			*reset = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "fencectl %s: unknown argument '%s'\n%s", cmd, argv[i],
				usage);
			return EXIT_USAGE;
		}
	}
	return -1;
}

int cmd_deadlocks(int argc, char **argv)
{
	bool json = false;
	int r = fencectl_parse_flags(argc, argv, "deadlocks", deadlocks_usage, &json, NULL);

	if (r >= 0)
		return r;
	r = fencectl_view("deadlocks", VIEW_WAITS, json ? FL_INTROSPECT_JSON : 0);
	if (r == 0 && found_something())
		r = EXIT_FOUND;
	return r;
}

int cmd_stats(int argc, char **argv)
{
	bool json = false, reset = false;
	int r = fencectl_parse_flags(argc, argv, "stats", stats_usage, &json, &reset);

	if (r >= 0)
		return r;
	return fencectl_view("stats", VIEW_STATS,
			     (json ? FL_INTROSPECT_JSON : 0) | (reset ? FL_INTROSPECT_RESET : 0));
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Copy the trace's memfd to @path ('-': stdout). */
static int write_file(int fd, const char *path)
{
	char buf[65536];
	int out = strcmp(path, "-") ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
				    : STDOUT_FILENO;
	ssize_t n;
	int r = 0;

	if (out < 0)
		return -errno;
	while (r == 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; r == 0 && off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0 && errno != EINTR)
				r = -errno;
			else if (w > 0)
				off += w;
		}
	if (n < 0 && r == 0)
		r = -errno;
	if (out != STDOUT_FILENO && close(out) < 0 && r == 0)
		r = -errno;
	return r;
}

int cmd_trace(int argc, char **argv)
{
	const char *path = NULL;
	double seconds = -1;
	unsigned long max_events = 0;
	struct sigaction sa;
	int r, fd = -1;

	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(trace_usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
			seconds = strtod(argv[++i], &end);
			if (!end || *end || !(seconds >= 0) || seconds > 86400) {
				fprintf(stderr, "fencectl trace: bad duration '%s'\n", argv[i]);
				return EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--max-events") && i + 1 < argc) {
			max_events = strtoul(argv[++i], &end, 10);
			if (!end || *end || !max_events || max_events > 100000000ul) {
				fprintf(stderr, "fencectl trace: bad event count '%s'\n", argv[i]);
				return EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "fencectl trace: unknown argument '%s'\n%s", argv[i],
				trace_usage);
			return EXIT_USAGE;
		}
	}
	if (!path) {
		fprintf(stderr, "fencectl trace: -o FILE is required\n%s", trace_usage);
		return EXIT_USAGE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r = fl_introspect_trace_start((unsigned int)max_events);
	if (r == -ENOENT)
		return fencectl_no_daemon();
	if (r == -EBUSY) {
		fprintf(stderr, "fencectl trace: another trace is being recorded\n");
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "fencectl trace: %s\n", strerror(-r));
		return 1;
	}
	if (strcmp(path, "-"))
		fprintf(stderr, "fencectl trace: recording%s\n",
			seconds < 0 ? " until Ctrl-C" : "");
	{
		struct timespec start, now;

		clock_gettime(CLOCK_MONOTONIC, &start);
		while (!stop) {
			double el;

			clock_gettime(CLOCK_MONOTONIC, &now);
			el = (double)(now.tv_sec - start.tv_sec) +
			     (double)(now.tv_nsec - start.tv_nsec) / 1e9;
			if (seconds >= 0 && el >= seconds)
				break;
			usleep(seconds >= 0 && seconds - el < 0.05
				       ? (useconds_t)((seconds - el) * 1e6)
				       : 50000);
		}
	}
	r = fl_introspect_trace_stop(&fd);
	if (r == 0)
		r = write_file(fd, path);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		fprintf(stderr, "fencectl trace: %s: %s\n", path, strerror(-r));
		return 1;
	}
	if (strcmp(path, "-"))
		fprintf(stderr, "fencectl trace: wrote %s\n", path);
	return 0;
}

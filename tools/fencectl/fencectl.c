/* SPDX-License-Identifier: MIT */
/*
 * fencectl: look at the synchronization state of the machine (docs/fencectl.md).
 * It asks the running daemon and never starts one: looking must not change
 * what is looked at.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "fencectl.h"
#include "heaps.h"
#include "report.h"

static const char usage_text[] =
	"usage: fencectl [--socket PATH] [--timeout SECONDS] COMMAND [ARGS...]\n"
	"\n"
	"Shows what the fenceline daemon holds: timelines, fences, and the processes\n"
	"that hold their fds. It never starts a daemon.\n"
	"\n"
	"commands:\n"
	"  dump [--json]    every timeline, fence and client, like the kernel's sync\n"
	"                   debugfs file but with processes\n"
	"  fds [PID] [--json] [--samples N] [--interval MS]\n"
	"                   the fence and timeline fds each process holds: the leak\n"
	"                   finder; with samples, flags processes whose count grows\n"
	"  watch [--interval MS] [-n COUNT] [--top N]\n"
	"                   a live view, like top: timelines advancing, the fences\n"
	"                   pending longest, the waits in progress\n"
	"  deadlocks [--json]\n"
	"                   who waits on what, and waits that can never end: cycles\n"
	"                   of waits and fences nobody can signal (exit 4 if any)\n"
	"  trace -o FILE [-d SECONDS] [--max-events N]\n"
	"                   record timelines, fences, signals and waits system-wide\n"
	"                   into a Chrome/Perfetto JSON trace\n"
	"  stats [--json] [--reset]\n"
	"                   create->signal latency and wait time (p50/p90/p99/max),\n"
	"                   timeouts and errors, per timeline and fence name\n"
	"  heaps [--json]   the daemon's heaps and the buffers each client holds\n"
	"  report TRACE [-o REPORT.html] [--json] [--display NAME]\n"
	"                   a trace file's late frames and their critical paths, as\n"
	"                   one self-contained HTML page or JSON (no daemon needed)\n"
	"  help [COMMAND]   this text, or a command's\n"
	"\n"
	"options:\n"
	"  --socket PATH    the daemon's socket (default: $FENCELINE_SOCKET, else\n"
	"                   $XDG_RUNTIME_DIR/fenceline.sock, else /tmp/fenceline-$UID/)\n"
	"  --timeout SECONDS\n"
	"                   give up on a daemon that does not answer a request within\n"
	"                   SECONDS (default: $FENCELINE_REQUEST_TIMEOUT_MS, else 10;\n"
	"                   0 waits forever)\n"
	"\n"
	"Exit status: 0 done, 1 error, 2 usage, 3 no daemon runs (so no fences exist),\n"
	"4 deadlocks found something.\n";

static const char dump_usage[] =
	"usage: fencectl dump [--json]\n"
	"\n"
	"Every live timeline (name, driver, value, pending points, the process owning\n"
	"its counter, the processes holding its fd) and fence (name, status, points,\n"
	"holders), and every connected client (pid, comm, objects made). When a display\n"
	"service runs for this user (it is never started), its devices follow: their\n"
	"interfaces, what is on screen, each queued post and the acquire fences it\n"
	"waits for with who should signal them.\n"
	"\n"
	"  --json   one JSON object instead of text; schema in docs/fencectl.md\n";

static const char fds_usage[] =
	"usage: fencectl fds [PID] [--json] [--samples N] [--interval MS]\n"
	"\n"
	"For each process holding fenceline fds (or only PID): how many fences it holds,\n"
	"how many of them are still pending, and each fence's name, status and age, and\n"
	"each timeline's value. An fd a process forgot to close shows here, growing.\n"
	"\n"
	"  --json          JSON instead of text; schema in docs/fencectl.md\n"
	"  --samples N     look N times (default 1) and name the processes whose\n"
	"                  fence count grew at every look: the likely leaks\n"
	"  --interval MS   between looks (default 1000)\n";

int fencectl_copy_out(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return -EIO;
	return n < 0 ? -errno : 0;
}

/* Below this, the daemon's fd limit is worth a warning: it is every client's. */
#define LOW_FD_LIMIT 4096

/* The soft fd limit of process @pid (/proc/PID/limits), or 0 if it cannot be read. */
static unsigned long fd_limit_of(int pid)
{
	char path[64], line[256];
	unsigned long soft = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Max open files", 14) && sscanf(line + 14, "%lu", &soft) != 1)
			soft = 0;
	fclose(f);
	return soft;
}

/*
 * A daemon started by a process with a low fd limit keeps it for everyone
 * (docs/daemon.md, "File descriptor limits"): say so where people look.
 */
static void warn_low_fd_limit(void)
{
	static bool told;
	unsigned long limit;
	pid_t pid = 0;

	if (told)
		return;
	told = true;
	limit = fl_introspect_get_daemon_pid(&pid) == 0 ? fd_limit_of(pid) : 0;
	if (limit && limit < LOW_FD_LIMIT)
		fprintf(stderr,
			"fencectl: warning: the daemon (pid %d) may hold only %lu fds, so all its "
			"clients together get at most that many live fences and timelines; it has "
			"the fd limit of the process that started it (docs/daemon.md, \"File "
			"descriptor limits\")\n",
			(int)pid, limit);
}

int fencectl_request_dump(enum fencectl_view view, unsigned int flags, pid_t pid, int *ret_fd)
{
	int r;

	switch (view) {
	case VIEW_FDS:
		r = fl_introspect_dump_fds(pid, flags, ret_fd);
		break;
	case VIEW_WAITS:
		r = fl_introspect_dump_waits(flags, ret_fd);
		break;
	case VIEW_STATS:
		r = fl_introspect_dump_stats(flags, ret_fd);
		break;
	case VIEW_HEAPS:
		r = fl_introspect_dump_heaps(flags, ret_fd);
		break;
	default:
		r = fl_introspect_dump(flags, ret_fd);
		break;
	}
	if (r == 0)
		warn_low_fd_limit();
	if (r == -ETIMEDOUT)
		fprintf(stderr, "fencectl: the daemon did not answer in time (--timeout)\n");
	return r;
}

int fencectl_no_daemon(void)
{
	fprintf(stderr, "fencectl: no fenceline daemon runs for this user (socket: %s)\n",
		getenv("FENCELINE_SOCKET") ? getenv("FENCELINE_SOCKET") : "the default");
	return EXIT_NO_DAEMON;
}

static int cmd_dump(int argc, char **argv)
{
	bool json = false;
	int r = fencectl_parse_flags(argc, argv, "dump", dump_usage, &json, NULL);

	if (r >= 0)
		return r;
	return fencectl_dump(json);
}

/* A process's fence count in one look, from the text view's "pid N (comm): F fences" lines. */
struct count {
	pid_t pid;
	unsigned int fences;
};

static int read_counts(int fd, struct count **ret, size_t *ret_n)
{
	FILE *in = fdopen(dup(fd), "r");
	struct count *c = NULL;
	size_t n = 0, cap = 0;
	char line[512];

	if (!in)
		return -errno;
	while (fgets(line, sizeof(line), in)) {
		int pid;
		unsigned int fences;
		char *close_paren = strstr(line, "): ");

		if (sscanf(line, "pid %d ", &pid) != 1 || !close_paren ||
		    sscanf(close_paren, "): %u fences", &fences) != 1)
			continue;
		if (n == cap) {
			struct count *p = realloc(c, (cap = cap ? cap * 2 : 16) * sizeof(*c));

			if (!p) {
				free(c);
				fclose(in);
				return -ENOMEM;
			}
			c = p;
		}
		c[n++] = (struct count){ pid, fences };
	}
	fclose(in);
	*ret = c;
	*ret_n = n;
	return 0;
}

static unsigned int count_of(const struct count *c, size_t n, pid_t pid, bool *found)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].pid == pid) {
			*found = true;
			return c[i].fences;
		}
	*found = false;
	return 0;
}

static int cmd_fds(int argc, char **argv)
{
	unsigned int samples = 1, interval_ms = 1000;
	pid_t pid = 0;
	struct count *first = NULL, *prev = NULL;
	size_t nfirst = 0, nprev = 0;
	bool json = false, *growing = NULL;
	int r = 0, fd = -1;

	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(fds_usage, stdout);
			return 0;
		} else if ((!strcmp(argv[i], "--samples") || !strcmp(argv[i], "--interval")) &&
			   i + 1 < argc) {
			unsigned long v = strtoul(argv[i + 1], &end, 10);

			if (*end || !*argv[i + 1] || v > 1000000 || (argv[i][2] == 's' && !v)) {
				fprintf(stderr, "fencectl fds: bad %s '%s'\n%s", argv[i],
					argv[i + 1], fds_usage);
				return EXIT_USAGE;
			}
			*(argv[i][2] == 's' ? &samples : &interval_ms) = (unsigned int)v;
			i++;
		} else if (!pid && argv[i][0] != '-' &&
			   (pid = (pid_t)strtoul(argv[i], &end, 10)) > 0 && !*end) {
			continue;
		} else {
			fprintf(stderr, "fencectl fds: unknown argument '%s'\n%s", argv[i],
				fds_usage);
			return EXIT_USAGE;
		}
	}
	/* Looks before the last count fences only; the last is printed as asked. */
	for (unsigned int s = 0; s < samples && r == 0; s++) {
		struct count *now = NULL;
		size_t nnow = 0;

		if (s)
			usleep(interval_ms * 1000u);
		r = fencectl_request_dump(VIEW_FDS, 0, pid, &fd);
		if (r == 0)
			r = read_counts(fd, &now, &nnow);
		if (r == 0 && s == 0) {
			first = now;
			nfirst = nnow;
			growing = calloc(nnow ? nnow : 1, sizeof(*growing));
			for (size_t k = 0; growing && k < nnow; k++)
				growing[k] = samples > 1;
		} else if (r == 0) {
			/* Growing: more fences at every look than at the one before. */
			for (size_t k = 0; growing && k < nfirst; k++) {
				bool in_prev, in_now;
				unsigned int a = count_of(prev, nprev, first[k].pid, &in_prev);
				unsigned int b = count_of(now, nnow, first[k].pid, &in_now);

				growing[k] = growing[k] && in_prev && in_now && b > a;
			}
		}
		if (prev != first)
			free(prev);
		prev = now;
		nprev = nnow;
		if (fd >= 0 && s + 1 < samples) {
			close(fd);
			fd = -1;
		}
	}
	if (r == 0 && json) {
		close(fd);
		fd = -1;
		r = fencectl_request_dump(VIEW_FDS, FL_INTROSPECT_JSON, pid, &fd);
	}
	if (r == -ENOENT) {
		r = fencectl_no_daemon();
		goto out;
	}
	if (r == 0 && json) {
		printf("{\"samples\":%u,\"interval_ms\":%u,\"growing\":[", samples, interval_ms);
		for (size_t k = 0, n = 0; growing && k < nfirst; k++)
			if (growing[k])
				printf("%s%d", n++ ? "," : "", (int)first[k].pid);
		fputs("],\"last\":", stdout);
		fflush(stdout);
	} else if (r == 0 && lseek(fd, 0, SEEK_SET) != 0) {
		r = -errno;
	}
	if (r == 0)
		r = fencectl_copy_out(fd);
	if (r == 0 && json)
		fputs("}\n", stdout);
	for (size_t k = 0; r == 0 && !json && growing && k < nfirst; k++)
		if (growing[k])
			printf("growing: pid %d held more fences at each of %u looks, %u ms "
			       "apart\n",
			       (int)first[k].pid, samples, interval_ms);
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "fencectl fds: %s\n", strerror(r < 0 ? -r : EIO));
		r = 1;
	}
out:
	if (fd >= 0)
		close(fd);
	if (prev != first)
		free(prev);
	free(first);
	free(growing);
	return r;
}

int main(int argc, char **argv)
{
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			setenv("FENCELINE_SOCKET", argv[i + 1], 1);
			i += 2;
			continue;
		}
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			char *end, ms[16];
			double secs = strtod(argv[i + 1], &end);

			if (*end || end == argv[i + 1] || !(secs >= 0 && secs <= 86400)) {
				fprintf(stderr, "fencectl: bad --timeout '%s'\n%s", argv[i + 1],
					usage_text);
				return EXIT_USAGE;
			}
			/*
			 * At least 1 ms: 0 alone means forever. The library reads
			 * it at its connection, which no call has made yet.
			 */
			snprintf(ms, sizeof(ms), "%d", secs > 0 ? (int)(secs * 1000 + 0.999) : 0);
			setenv("FENCELINE_REQUEST_TIMEOUT_MS", ms, 1);
			i += 2;
			continue;
		}
		fprintf(stderr, "fencectl: unknown option '%s'\n%s", argv[i], usage_text);
		return EXIT_USAGE;
	}
	if (i >= argc) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[i], "dump"))
		return cmd_dump(argc - i, argv + i);
	if (!strcmp(argv[i], "fds"))
		return cmd_fds(argc - i, argv + i);
	if (!strcmp(argv[i], "deadlocks"))
		return cmd_deadlocks(argc - i, argv + i);
	if (!strcmp(argv[i], "watch"))
		return cmd_watch(argc - i, argv + i);
	if (!strcmp(argv[i], "stats"))
		return cmd_stats(argc - i, argv + i);
	if (!strcmp(argv[i], "trace"))
		return cmd_trace(argc - i, argv + i);
	if (!strcmp(argv[i], "heaps"))
		return fencectl_heaps(argc - i, argv + i);
	if (!strcmp(argv[i], "report"))
		return fencectl_report(argc - i, argv + i);
	if (!strcmp(argv[i], "help")) {
		if (i + 1 < argc && !strcmp(argv[i + 1], "dump"))
			fputs(dump_usage, stdout);
		else if (i + 1 < argc && !strcmp(argv[i + 1], "fds"))
			fputs(fds_usage, stdout);
		else if (i + 1 < argc && !strcmp(argv[i + 1], "deadlocks"))
			fputs(deadlocks_usage, stdout);
		else if (i + 1 < argc && !strcmp(argv[i + 1], "watch"))
			fputs(watch_usage, stdout);
		else if (i + 1 < argc && !strcmp(argv[i + 1], "stats"))
			fputs(stats_usage, stdout);
		else if (i + 1 < argc && !strcmp(argv[i + 1], "trace"))
			fputs(trace_usage, stdout);
		else if (i + 1 < argc && !strcmp(argv[i + 1], "heaps"))
			fputs(fencectl_heaps_usage, stdout);
		else
			fputs(usage_text, stdout);
		return 0;
	}
	fprintf(stderr, "fencectl: unknown command '%s'\n%s", argv[i], usage_text);
	return EXIT_USAGE;
}

/* SPDX-License-Identifier: MIT */
/*
 * fencectl watch: a live view of the daemon, like top. Each refresh is one
 * DUMP in JSON (the same as fencectl dump --json), parsed here: timelines
 * with their value, how fast it moves and what is pending, the fences that
 * have been pending longest, and the waits in progress.
 */
#include <errno.h>
#include <inttypes.h>
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
#include "json.h"

#define FL_MIN_SIZE(a, b) ((a) < (b) ? (a) : (b))

const char watch_usage[] =
	"usage: fencectl watch [--interval MS] [-n COUNT] [--top N] [--json]\n"
	"\n"
	"A live view of the daemon, refreshed every MS milliseconds (default 1000):\n"
	"each timeline's value, how fast it advanced since the last refresh and its\n"
	"pending points; the N fences pending longest (default 10); the waits in\n"
	"progress. On a terminal the screen is redrawn; otherwise each refresh is\n"
	"printed after the last. Stops after COUNT refreshes, or at Ctrl-C.\n"
	"\n"
	"  --json   one JSON object per refresh, one line each; schema in docs/fencectl.md\n";

/* A timeline's value at the last refresh, for its rate. */
struct last {
	int64_t id;
	double value;
};

static volatile sig_atomic_t stop;
static bool as_json; /* --json: one object per refresh, a line each */

/* @s as a JSON string (our own dump's strings, already valid UTF-8 and escaped there). */
static void jstr(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *str_of(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_STRING ? v->str : "";
}

static double num_of(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_NUMBER ? v->num : 0;
}

static size_t len_of(const struct json *obj, const char *key)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_ARRAY ? v->n_items : 0;
}

static const struct json *item(const struct json *obj, const char *key, size_t i)
{
	const struct json *v = json_get(obj, key);

	return v && v->type == JSON_ARRAY && i < v->n_items ? v->items[i] : NULL;
}

/* The dump, parsed; NULL with *ret_err set. */
static struct json *look(int *ret_err)
{
	struct json_error jerr;
	struct json *doc = NULL;
	char *text = NULL;
	size_t len = 0;
	int fd = -1, r;

	r = fencectl_request_dump(VIEW_DUMP, FL_INTROSPECT_JSON, 0, &fd);
	if (r == 0 && (r = fl_introspect_read(fd, NULL, 0, &len)) == -ENOBUFS)
		r = (text = malloc(len + 1)) ? fl_introspect_read(fd, text, len + 1, &len)
					     : -ENOMEM;
	if (r == 0 && json_parse(text, len, &doc, &jerr) < 0)
		r = -EPROTO;
	if (fd >= 0)
		close(fd);
	free(text);
	*ret_err = r;
	return r == 0 ? doc : NULL;
}

static double value_of(const struct last *prev, size_t n, int64_t id, bool *found)
{
	for (size_t i = 0; i < n; i++)
		if (prev[i].id == id) {
			*found = true;
			return prev[i].value;
		}
	*found = false;
	return 0;
}

static int cmp_created(const void *a, const void *b)
{
	double x = num_of(*(const struct json *const *)a, "created_ns");
	double y = num_of(*(const struct json *const *)b, "created_ns");

	return x < y ? -1 : x > y;
}

static void show(const struct json *doc, struct last **prev, size_t *nprev, double dt_s, int top)
{
	size_t ntl = len_of(doc, "timelines"), nf = len_of(doc, "fences");
	const struct json **pending = calloc(nf ? nf : 1, sizeof(*pending));
	struct last *now = calloc(ntl ? ntl : 1, sizeof(*now));
	struct timespec ts;
	size_t np = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (as_json) {
		printf("{\"version\":1,\"t_ns\":%.0f,\"daemon\":{\"pid\":%.0f},\"clients\":%zu,"
		       "\"timelines\":[",
		       (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec,
		       num_of(json_get(doc, "daemon"), "pid"), len_of(doc, "clients"));
	} else {
		printf("fencelined pid %.0f: %zu clients, %zu timelines, %zu fences, %zu "
		       "waiting\n\n",
		       num_of(json_get(doc, "daemon"), "pid"), len_of(doc, "clients"), ntl, nf,
		       len_of(doc, "waiters"));
		printf("%-28s %14s %10s %8s  %s\n", "TIMELINE", "VALUE", "+/s", "PENDING",
		       "HELD BY");
	}
	for (size_t i = 0; i < ntl; i++) {
		const struct json *t = item(doc, "timelines", i);
		double v = strtod(str_of(t, "value"), NULL);
		int64_t id = (int64_t)num_of(t, "id");
		char name[64], rate[32] = "-", held[128] = "";
		bool found;
		double before = value_of(*prev, *nprev, id, &found);
		size_t o = 0;

		snprintf(name, sizeof(name), "%s #%" PRId64 "%s", str_of(t, "name"), id,
			 json_get(t, "dead") && json_get(t, "dead")->type == JSON_TRUE ? " dead"
										       : "");
		if (found && dt_s > 0)
			snprintf(rate, sizeof(rate), "%.1f", (v - before) / dt_s);
		for (size_t k = 0; k < len_of(t, "holders") && o + 1 < sizeof(held); k++) {
			const struct json *h = item(t, "holders", k);
			int n = snprintf(held + o, sizeof(held) - o, "%s%s(%.0f)", k ? " " : "",
					 str_of(h, "comm"), num_of(h, "pid"));

			o = n < 0 ? o : FL_MIN_SIZE(o + (size_t)n, sizeof(held) - 1);
		}
		if (as_json) {
			printf("%s{\"id\":%" PRId64 ",\"name\":", i ? "," : "", id);
			jstr(str_of(t, "name"));
			printf(",\"value\":");
			jstr(str_of(t, "value"));
			printf(",\"per_s\":%s,\"pending\":%zu}", rate[0] == '-' ? "null" : rate,
			       len_of(t, "pending"));
		} else {
			printf("%-28.28s %14s %10s %8zu  %s\n", name, str_of(t, "value"), rate,
			       len_of(t, "pending"), held);
		}
		now[i] = (struct last){ id, v };
	}
	free(*prev);
	*prev = now;
	*nprev = ntl;

	for (size_t i = 0; pending && i < nf; i++) {
		const struct json *f = item(doc, "fences", i);

		if (num_of(f, "status") == 0)
			pending[np++] = f;
	}
	if (pending)
		qsort(pending, np, sizeof(*pending), cmp_created);
	if (as_json)
		printf("],\"pending\":[");
	else
		printf("\n%-28s %12s  %s\n", "PENDING LONGEST", "AGE", "WAITING FOR");
	for (size_t i = 0; i < np && i < (size_t)top; i++) {
		const struct json *f = pending[i];
		double age = (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - num_of(f, "created_ns");
		char name[64], on[160] = "";
		size_t o = 0;

		snprintf(name, sizeof(name), "%s #%.0f", str_of(f, "name"), num_of(f, "id"));
		for (size_t k = 0; k < len_of(f, "points") && o + 1 < sizeof(on); k++) {
			const struct json *p = item(f, "points", k);
			int n;

			if (num_of(p, "status") != 0)
				continue;
			n = snprintf(on + o, sizeof(on) - o, "%s%s@%s", o ? " " : "",
				     str_of(p, "timeline"), str_of(p, "value"));
			o = n < 0 ? o : FL_MIN_SIZE(o + (size_t)n, sizeof(on) - 1);
		}
		if (as_json) {
			printf("%s{\"id\":%.0f,\"name\":", i ? "," : "", num_of(f, "id"));
			jstr(str_of(f, "name"));
			printf(",\"age_ms\":%.3f,\"waiting_for\":", age / 1e6);
			jstr(on);
			putchar('}');
		} else {
			printf("%-28.28s %9.1f ms  %s\n", name, age / 1e6, on);
		}
	}
	if (as_json) {
		printf("],\"more_pending\":%zu,\"waiters\":[",
		       np > (size_t)top ? np - (size_t)top : 0);
	} else {
		if (np > (size_t)top)
			printf("(%zu more)\n", np - (size_t)top);
		printf("\n%-28s %12s  %s\n", "WAITING THREAD", "FOR", "ON FENCE");
	}
	for (size_t i = 0; i < len_of(doc, "waiters"); i++) {
		const struct json *w = item(doc, "waiters", i);
		char who[64];

		if (as_json) {
			printf("%s{\"pid\":%.0f,\"tid\":%.0f,\"thread\":", i ? "," : "",
			       num_of(w, "pid"), num_of(w, "tid"));
			jstr(str_of(w, "thread"));
			printf(",\"fence\":%.0f,\"waited_ms\":%.0f}",
			       num_of(json_get(w, "fence"), "id"), num_of(w, "waited_ms"));
			continue;
		}
		snprintf(who, sizeof(who), "%s(%.0f) %s(%.0f)", str_of(w, "comm"), num_of(w, "pid"),
			 str_of(w, "thread"), num_of(w, "tid"));
		printf("%-28.28s %9.0f ms  %s #%.0f\n", who, num_of(w, "waited_ms"),
		       str_of(json_get(w, "fence"), "name"), num_of(json_get(w, "fence"), "id"));
	}
	if (as_json)
		printf("]}\n");
	free(pending);
}

int cmd_watch(int argc, char **argv)
{
	long interval = 1000, count = -1, top = 10;
	struct last *prev = NULL;
	size_t nprev = 0;
	struct sigaction sa;
	struct timespec last = { 0, 0 };
	bool tty = isatty(STDOUT_FILENO);
	int r = 0;

	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		long *dst = NULL, lo = 1, hi = 0;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(watch_usage, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--json")) {
			as_json = true;
			continue;
		}
		if (!strcmp(argv[i], "--interval"))
			dst = &interval, lo = 10, hi = 3600000;
		else if (!strcmp(argv[i], "-n"))
			dst = &count, hi = 1000000000;
		else if (!strcmp(argv[i], "--top"))
			dst = &top, hi = 100000;
		if (!dst || i + 1 >= argc) {
			fprintf(stderr, "fencectl watch: bad argument '%s'\n%s", argv[i],
				watch_usage);
			return EXIT_USAGE;
		}
		*dst = strtol(argv[++i], &end, 10);
		if (!end || *end || *dst < lo || *dst > hi) {
			fprintf(stderr, "fencectl watch: bad value '%s'\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (long n = 0; !stop && (count < 0 || n < count); n++) {
		struct timespec ts;
		struct json *doc;
		double dt;

		if (n > 0) {
			struct timespec d = { interval / 1000, (interval % 1000) * 1000000 };

			while (nanosleep(&d, &d) < 0 && errno == EINTR && !stop)
				;
			if (stop)
				break;
		}
		doc = look(&r);
		if (!doc)
			break;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		dt = last.tv_sec ? (double)(ts.tv_sec - last.tv_sec) +
					   (double)(ts.tv_nsec - last.tv_nsec) / 1e9
				 : 0;
		last = ts;
		if (!as_json)
			fputs(tty ? "\033[H\033[2J" : (n ? "\n" : ""), stdout);
		show(doc, &prev, &nprev, dt, (int)top);
		json_free(doc);
		if (fflush(stdout) != 0) {
			r = -EIO;
			break;
		}
	}
	free(prev);
	if (r == -ENOENT)
		return fencectl_no_daemon();
	if (r < 0) {
		fprintf(stderr, "fencectl watch: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}

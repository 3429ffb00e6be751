/* SPDX-License-Identifier: MIT */
/*
 * `fencectl report TRACE`: reads a trace file (never the daemon), analyses
 * it and writes one self-contained HTML page, or the analysis as JSON.
 */
#include "report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyse.h"
#include "json.h"
#include "report-html.h"
#include "report-json.h"
#include "trace.h"

static const char report_usage[] =
	"usage: fencectl report TRACE [-o REPORT.html] [--json] [--display NAME]\n"
	"\n"
	"Reads TRACE (written by `fencectl trace -o TRACE`) and finds the late fences:\n"
	"those completed after their deadline. For each one, and for each frame of\n"
	"a display timeline it made late, it follows the critical path back: the\n"
	"signal that completed the fence, what its signaller waited on before, and so\n"
	"on to the root cause.\n"
	"\n"
	"  -o FILE          write one self-contained HTML page (no network): lanes\n"
	"                   per timeline and thread, late frames and their paths\n"
	"  --json           print the analysis as JSON (schema in docs/fencectl.md)\n"
	"  --display NAME   the display timeline (default: every timeline whose\n"
	"                   name contains \"display\")\n"
	"  --max-input-mb N read at most N MiB of TRACE (default 512, at most 1024);\n"
	"                   a larger input is refused\n"
	"\n"
	"Exit status: 0 done, 1 error, 2 usage or a trace that cannot be read.\n";

enum { EXIT_ERROR = 1, EXIT_USAGE = 2 };

/*
 * The most of a trace read by default: the daemon keeps at most 1000000
 * events, a few hundred MB of JSON. Anything may be named as TRACE
 * (/dev/zero, a pipe that never ends), so reading stops there rather than
 * when memory runs out.
 */
#define DEFAULT_MAX_INPUT_MB 512

/* The whole file, at most @limit bytes (else -EFBIG), in a malloc'd buffer. */
static int read_file(const char *path, size_t limit, char **ret, size_t *ret_size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t size = 0, cap = 0;
	struct stat st;

	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return -EISDIR;
	}
	for (;;) {
		size_t n;

		if (size == cap) {
			char *more;

			/* One byte past the limit tells a file of exactly @limit from a longer one. */
			if (size > limit) {
				free(buf);
				fclose(f);
				return -EFBIG;
			}
			cap = cap ? 2 * cap : 65536;
			if (cap > limit + 1)
				cap = limit + 1;
			more = realloc(buf, cap);
			if (!more) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = more;
		}
		n = fread(buf + size, 1, cap - size, f);
		size += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*ret = buf;
	*ret_size = size;
	return 0;
}

static int write_html(const char *path, const struct trace *t, const struct analysis *a,
		      const char *trace_path)
{
	const char *marker = strstr(fencectl_report_html, REPORT_HTML_MARKER);
	FILE *out;
	int r;

	if (!marker)
		return -EINVAL; /* embed-html.py checks this at build time */
	out = fopen(path, "w");
	if (!out)
		return -errno;
	fwrite(fencectl_report_html, 1, (size_t)(marker - fencectl_report_html), out);
	r = report_write_json(out, t, a, trace_path, true);
	fputs(marker + strlen(REPORT_HTML_MARKER), out);
	if (ferror(out))
		r = -EIO;
	if (fclose(out) != 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlink(path);
	return r;
}

struct options {
	const char *trace, *output, *display;
	bool json;
	unsigned long max_input_mb;
};

/* Return: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			fputs(report_usage, stdout);
			return 0;
		}
		if (!strcmp(arg, "--json")) {
			o->json = true;
		} else if ((!strcmp(arg, "-o") || !strcmp(arg, "--display")) && i + 1 < argc) {
			*(arg[1] == 'o' ? &o->output : &o->display) = argv[++i];
		} else if (!strcmp(arg, "--max-input-mb") && i + 1 < argc) {
			char *end;

			o->max_input_mb = strtoul(argv[++i], &end, 10);
			if (*end || argv[i][0] < '1' || argv[i][0] > '9' ||
			    o->max_input_mb > JSON_MAX_SIZE >> 20) {
				fprintf(stderr,
					"fencectl report: --max-input-mb takes 1 to %zu, not "
					"'%s'\n",
					JSON_MAX_SIZE >> 20, argv[i]);
				return EXIT_USAGE;
			}
		} else if (arg[0] == '-' && arg[1]) {
			fprintf(stderr,
				"fencectl report: unknown option or missing value: '%s'\n%s", arg,
				report_usage);
			return EXIT_USAGE;
		} else if (o->trace) {
			fprintf(stderr, "fencectl report: one TRACE only ('%s' and '%s')\n",
				o->trace, arg);
			return EXIT_USAGE;
		} else {
			o->trace = arg;
		}
	}
	if (!o->trace || (!o->output && !o->json)) {
		fprintf(stderr, "fencectl report: %s\n%s",
			!o->trace ? "which trace? (TRACE is missing)"
				  : "nothing to do: give -o or --json",
			report_usage);
		return EXIT_USAGE;
	}
	return -1;
}

/* Read, parse and load @path; messages on stderr. Return: -1 loaded, else the exit status. */
static int load(const char *path, unsigned long max_mb, struct trace *t)
{
	struct json_error err = { 0 };
	struct json *root = NULL;
	char msg[256];
	char *text = NULL;
	size_t size = 0;
	int r;

	r = read_file(path, (size_t)max_mb << 20, &text, &size);
	if (r == -EFBIG) {
		fprintf(stderr,
			"fencectl report: %s: larger than %lu MiB: not a trace (or raise "
			"--max-input-mb)\n",
			path, max_mb);
		return EXIT_USAGE;
	}
	if (r < 0) {
		fprintf(stderr, "fencectl report: %s: %s\n", path, strerror(-r));
		return r == -ENOMEM ? EXIT_ERROR : EXIT_USAGE;
	}
	r = json_parse(text, size, &root, &err);
	free(text);
	if (r < 0) {
		fprintf(stderr,
			"fencectl report: %s: not JSON: line %u, column %u (byte %zu): %s\n", path,
			err.line, err.column, err.offset, err.msg);
		return r == -ENOMEM ? EXIT_ERROR : EXIT_USAGE;
	}
	r = trace_load(root, t, msg, sizeof(msg));
	json_free(root);
	if (r < 0) {
		fprintf(stderr, "fencectl report: %s: %s\n", path, msg);
		return r == -ENOMEM ? EXIT_ERROR : EXIT_USAGE;
	}
	return -1;
}

int fencectl_report(int argc, char **argv)
{
	struct options o = { 0 };
	struct analysis a;
	struct trace t;
	int r, status = 0;

	r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	r = load(o.trace, o.max_input_mb ? o.max_input_mb : DEFAULT_MAX_INPUT_MB, &t);
	if (r >= 0)
		return r;
	if (analyse(&t, o.display, &a) < 0) {
		fprintf(stderr, "fencectl report: %s\n", strerror(ENOMEM));
		trace_free(&t);
		return EXIT_ERROR;
	}
	if (o.display && !a.n_display)
		fprintf(stderr, "fencectl report: %s: no timeline is named '%s': no frames\n",
			o.trace, o.display);
	if (o.output) {
		r = write_html(o.output, &t, &a, o.trace);
		if (r < 0) {
			fprintf(stderr, "fencectl report: %s: %s\n", o.output, strerror(-r));
			status = EXIT_ERROR;
		}
	}
	if (o.json && status == 0) {
		r = report_write_json(stdout, &t, &a, o.trace, false);
		fputc('\n', stdout);
		if (r < 0 || fflush(stdout) != 0) {
			fprintf(stderr, "fencectl report: writing stdout: %s\n", strerror(EIO));
			status = EXIT_ERROR;
		}
	}
	analysis_free(&a);
	trace_free(&t);
	return status;
}

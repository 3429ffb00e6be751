/* SPDX-License-Identifier: MIT */
/*
 * fencelined: hosts fenceline's core for every process of a user, so that
 * timelines and fences work across processes (docs/daemon.md).
 *
 * Start-up is where "many processes starting a daemon at once end with
 * exactly one" is decided: a daemon serves only while it holds an flock on
 * "<socket>.lock". A starter that cannot take the lock waits until some
 * daemon answers on the socket (then exits: that one serves) or the lock
 * frees up (a daemon that was exiting), so nobody is left without a daemon.
 * The process the library spawns returns only once the socket listens.
 */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "acceptor.h"
#include "protocol.h"
#include "server.h"
#include "start.h"
#include "util.h"

#define DEFAULT_IDLE_MS	      5000
#define DEFAULT_MAX_TIMELINES 4096
#define DEFAULT_MAX_FENCES    65536
#define DEFAULT_CARVEOUT_MB   64

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: fencelined [OPTION]...\n"
		"Host fenceline timelines and fences for the processes of this user.\n"
		"Normally started by the library on first use; see docs/daemon.md.\n\n"
		"  -f, --foreground       stay in the foreground and log to stderr\n"
		"  -s, --socket PATH      listen on PATH (default: $FENCELINE_SOCKET, else\n"
		"                         $XDG_RUNTIME_DIR/fenceline.sock, else\n"
		"                         /tmp/fenceline-$UID/fenceline.sock, or a private\n"
		"                         fall-back if another user made that directory)\n"
		"  -i, --idle-timeout MS  exit after MS ms without clients or live fds\n"
		"                         (default %d, or $FENCELINE_IDLE_MS; 0 = never)\n"
		"  -a, --allow-uid UID    also serve processes of UID (repeatable; 'all'\n"
		"                         serves everyone; or $FENCELINE_ALLOW_UIDS=1,2)\n"
		"      --max-timelines N  live timelines per process (default %d)\n"
		"      --max-fences N     live fences per process (default %d)\n"
		"      --max-fds-per-process N  fds the daemon holds for one process\n"
		"                         (default: half of its fd limit)\n"
		"      --max-fds-per-uid N  fds the daemon holds for all processes of one\n"
		"                         other uid (default: half of its fd limit)\n"
		"      --carveout-mb N    the allocation service's carveout, in MiB (default\n"
		"                         %d, or $FENCELINE_CARVEOUT_MB; 0 = no carveout)\n"
		"      --heap-limit-mb N  MiB of buffers one client may hold (default 0 = no\n"
		"                         limit, or $FENCELINE_HEAP_CLIENT_LIMIT_MB)\n"
		"      --trace-max-events N  events a trace keeps at most, whatever its\n"
		"                         client asks (default and most %u)\n"
		"  -h, --help             show this help\n"
		"  -V, --version          show the version\n",
		DEFAULT_IDLE_MS, DEFAULT_MAX_TIMELINES, DEFAULT_MAX_FENCES, DEFAULT_CARVEOUT_MB,
		FLD_TRACE_MAX_EVENTS);
}

static int add_allow(struct server_config *cfg, const char *list)
{
	char buf[512], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned int uid;

		if (!strcmp(tok, "all")) {
			cfg->allow_all = true;
			continue;
		}
		if (fl__server_parse_uint(tok, &uid) < 0 || cfg->n_allow == FLD_MAX_ALLOW) {
			fprintf(stderr, "fencelined: bad uid '%s'\n", tok);
			return -1;
		}
		cfg->allow[cfg->n_allow++] = (uid_t)uid;
	}
	return 0;
}

/* Every live fence costs us one fd: take all the fds we may, and say when that is few. */
static void raise_nofile(bool log)
{
	unsigned long limit = fl__server_raise_nofile();

	if (log)
		fld_log("fd limit %lu", limit);
	/* Inherited from whoever started us first, and then everyone's: say so (daemon.md). */
	if (limit < 4096)
		fld_log("warning: fd limit %lu is low: at most that many live fences and timelines "
			"for all clients (see docs/daemon.md, \"File descriptor limits\")",
			limit);
}

static int serve(int lfd, void *cfg)
{
	return fld_serve(lfd, cfg);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "allow-uid", required_argument, NULL, 'a' },
		{ "max-timelines", required_argument, NULL, 'T' },
		{ "max-fences", required_argument, NULL, 'F' },
		{ "carveout-mb", required_argument, NULL, 'C' },
		{ "heap-limit-mb", required_argument, NULL, 'L' },
		{ "trace-max-events", required_argument, NULL, 'E' },
		{ "max-fds-per-process", required_argument, NULL, 'P' },
		{ "max-fds-per-uid", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_config cfg = {
		.idle_ms = DEFAULT_IDLE_MS,
		.max_timelines = DEFAULT_MAX_TIMELINES,
		.max_fences = DEFAULT_MAX_FENCES,
	};
	struct fl_server_run run = { .name = "fencelined",
				     .default_path = fl__socket_path,
				     .log = fld_log,
				     .serve = serve };
	const char *path = "", *env;
	unsigned int carveout_mb = DEFAULT_CARVEOUT_MB, limit_mb = 0;
	int o;

	env = getenv("FENCELINE_IDLE_MS");
	if (env && fl__server_parse_uint(env, &cfg.idle_ms) < 0) {
		fprintf(stderr, "fencelined: bad FENCELINE_IDLE_MS '%s'\n", env);
		return 2;
	}
	env = getenv("FENCELINE_CARVEOUT_MB");
	if (env && env[0] && fl__server_parse_uint(env, &carveout_mb) < 0) {
		fprintf(stderr, "fencelined: bad FENCELINE_CARVEOUT_MB '%s'\n", env);
		return 2;
	}
	env = getenv("FENCELINE_HEAP_CLIENT_LIMIT_MB");
	if (env && env[0] && fl__server_parse_uint(env, &limit_mb) < 0) {
		fprintf(stderr, "fencelined: bad FENCELINE_HEAP_CLIENT_LIMIT_MB '%s'\n", env);
		return 2;
	}
	env = getenv("FENCELINE_ALLOW_UIDS");
	if (env && env[0] && add_allow(&cfg, env) < 0)
		return 2;
	while ((o = getopt_long(argc, argv, "fs:i:a:hV", opts, NULL)) != -1) {
		switch (o) {
		case 'f':
			cfg.foreground = true;
			break;
		case 's':
			path = optarg;
			break;
		case 'i':
			if (fl__server_parse_uint(optarg, &cfg.idle_ms) < 0) {
				fprintf(stderr, "fencelined: bad --idle-timeout '%s'\n", optarg);
				return 2;
			}
			break;
		case 'a':
			if (add_allow(&cfg, optarg) < 0)
				return 2;
			break;
		case 'T':
		case 'F':
			if (fl__server_parse_uint(optarg, o == 'T' ? &cfg.max_timelines
								   : &cfg.max_fences) < 0) {
				fprintf(stderr, "fencelined: bad limit '%s'\n", optarg);
				return 2;
			}
			break;
		case 'P':
		case 'U':
			if (fl__server_parse_uint(optarg, o == 'P' ? &cfg.max_fds_process
								   : &cfg.max_fds_uid) < 0 ||
			    !(o == 'P' ? cfg.max_fds_process : cfg.max_fds_uid)) {
				fprintf(stderr, "fencelined: bad %s '%s'\n",
					o == 'P' ? "--max-fds-per-process" : "--max-fds-per-uid",
					optarg);
				return 2;
			}
			break;
		case 'E':
			if (fl__server_parse_uint(optarg, &cfg.trace_max_events) < 0 ||
			    cfg.trace_max_events == 0 ||
			    cfg.trace_max_events > FLD_TRACE_MAX_EVENTS) {
				fprintf(stderr,
					"fencelined: bad --trace-max-events '%s' (1 to %u)\n",
					optarg, FLD_TRACE_MAX_EVENTS);
				return 2;
			}
			break;
		case 'C':
		case 'L':
			if (fl__server_parse_uint(optarg, o == 'C' ? &carveout_mb : &limit_mb) <
			    0) {
				fprintf(stderr, "fencelined: bad %s '%s'\n",
					o == 'C' ? "--carveout-mb" : "--heap-limit-mb", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("fencelined %s (protocol %d)\n", FL_VERSION, FL_PROTO_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	cfg.carveout_bytes = (uint64_t)carveout_mb << 20;
	cfg.heap_limit = (uint64_t)limit_mb << 20;
	raise_nofile(cfg.foreground);
	run.path = path;
	run.foreground = cfg.foreground;
	run.mode = cfg.allow_all || cfg.n_allow ? 0666 : 0600;
	run.arg = &cfg;
	return fl__server_run(&run);
}

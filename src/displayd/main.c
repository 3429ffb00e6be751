/* SPDX-License-Identifier: MIT */
/*
 * fl-displayd: the display service of one user (docs/display.md, "The
 * service"), started on first use by the library like fencelined, with
 * the same rules: one per socket, decided by an flock on "<socket>.lock";
 * the process the library spawns returns once the socket listens; idle
 * exit; systemd socket activation.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "acceptor.h"
#include "display-config.h"
#include "display.h"
#include "displayd.h"
#include "start.h"
#include "util.h"

#define DEFAULT_IDLE_MS		 5000
#define DEFAULT_FENCE_TIMEOUT_MS 10000
/* A config file bigger than this is not a display config. */
#define MAX_CONFIG_BYTES (1u << 20)

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: fl-displayd [OPTION]...\n"
		"Serve fenceline's display devices to the processes of this user.\n"
		"Normally started by the library on first use; see docs/display.md.\n\n"
		"  -f, --foreground         stay in the foreground and log to stderr\n"
		"  -s, --socket PATH        listen on PATH (default: $FENCELINE_DISPLAY_SOCKET,\n"
		"                           else displayd.sock beside fencelined's socket)\n"
		"  -c, --config FILE        the display config (default:\n"
		"                           $FENCELINE_DISPLAY_CONFIG, else the built-in one)\n"
		"  -d, --display CHOICE     show the built-in device on another output instead\n"
		"                           of a config: auto, virtual, window, terminal[:TTY]\n"
		"                           or kms[:CARD] (default: $FENCELINE_DISPLAY); the\n"
		"                           default socket is then displayd-CHOICE.sock\n"
		"  -i, --idle-timeout MS    exit after MS ms without clients or queued posts\n"
		"                           (default %d, or $FENCELINE_IDLE_MS; 0 = never)\n"
		"      --fence-timeout MS   an acquire fence not signalled after MS ms fails\n"
		"                           and its post is not shown (default %d)\n"
		"      --max-fds-per-client N  fds one client's posts may make the service\n"
		"                           hold (default: $FENCELINE_DISPLAY_CLIENT_MAX_FDS,\n"
		"                           else a quarter of its fd limit; at least %d)\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n",
		DEFAULT_IDLE_MS, DEFAULT_FENCE_TIMEOUT_MS, FL_DPROTO_POST_MAX_FDS + 1);
}

static char *read_config(const char *file, size_t *ret_len)
{
	FILE *f = fopen(file, "re");
	char *text;
	size_t n;

	if (!f)
		return NULL;
	text = malloc(MAX_CONFIG_BYTES);
	if (!text) {
		fclose(f);
		return NULL;
	}
	n = fread(text, 1, MAX_CONFIG_BYTES, f);
	if (ferror(f) || n == MAX_CONFIG_BYTES) {
		errno = ferror(f) ? EIO : EFBIG;
		free(text);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*ret_len = n;
	return text;
}

static int serve(int lfd, void *cfg)
{
	return displayd_serve(lfd, cfg);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "display", required_argument, NULL, 'd' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "fence-timeout", required_argument, NULL, 'T' },
		{ "max-fds-per-client", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct displayd_config cfg = {
		.idle_ms = DEFAULT_IDLE_MS,
		.fence_timeout_ms = DEFAULT_FENCE_TIMEOUT_MS,
	};
	struct fl_server_run run = { .name = "fl-displayd",
				     .default_path = fl__display_socket_path,
				     .mode = 0600,
				     .log = displayd_log,
				     .serve = serve };
	const char *path = "", *env, *config_file = getenv("FENCELINE_DISPLAY_CONFIG");
	const char *display = getenv("FENCELINE_DISPLAY");
	bool config_given = false;
	char *text = NULL;
	unsigned long limit;
	int o, r;

	env = getenv("FENCELINE_IDLE_MS");
	if (env && fl__server_parse_uint(env, &cfg.idle_ms) < 0) {
		fprintf(stderr, "fl-displayd: bad FENCELINE_IDLE_MS '%s'\n", env);
		return 2;
	}
	env = getenv("FENCELINE_DISPLAY_CLIENT_MAX_FDS");
	if (env && env[0] && fl__server_parse_uint(env, &cfg.max_fds_client) < 0) {
		fprintf(stderr, "fl-displayd: bad FENCELINE_DISPLAY_CLIENT_MAX_FDS '%s'\n", env);
		return 2;
	}
	while ((o = getopt_long(argc, argv, "fs:c:d:i:hV", opts, NULL)) != -1) {
		switch (o) {
		case 'f':
			cfg.foreground = true;
			break;
		case 's':
			path = optarg;
			break;
		case 'c':
			config_file = optarg;
			config_given = true;
			break;
		case 'd':
			display = optarg;
			break;
		case 'i':
		case 'T':
			if (fl__server_parse_uint(optarg, o == 'i' ? &cfg.idle_ms
								   : &cfg.fence_timeout_ms) < 0) {
				fprintf(stderr, "fl-displayd: bad %s '%s'\n",
					o == 'i' ? "--idle-timeout" : "--fence-timeout", optarg);
				return 2;
			}
			break;
		case 'M':
			if (fl__server_parse_uint(optarg, &cfg.max_fds_client) < 0) {
				fprintf(stderr, "fl-displayd: bad --max-fds-per-client '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("fl-displayd %s\n", FL_VERSION);
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
	if (display && display[0]) {
		struct fl__display_spec spec;

		if (config_given) {
			fprintf(stderr,
				"fl-displayd: --config and --display (or FENCELINE_DISPLAY) "
				"exclude each other: a display choice stands for a config\n");
			return 2;
		}
		if (fl__display_spec_parse(display, &spec) < 0) {
			fprintf(stderr, "fl-displayd: bad display choice '%s' (%s)\n", display,
				fl__display_spec_names());
			return 2;
		}
		/* The default socket follows the choice (fl__display_socket_path()). */
		if (setenv("FENCELINE_DISPLAY", display, 1) < 0) {
			perror("fl-displayd: setenv");
			return 1;
		}
		cfg.display = display;
		cfg.config_origin = "--display";
	} else if (config_file && config_file[0]) {
		text = read_config(config_file, &cfg.config_len);
		if (!text) {
			fprintf(stderr, "fl-displayd: cannot read %s: %s\n", config_file,
				strerror(errno));
			return 1;
		}
		cfg.config_text = text;
		cfg.config_origin = config_file;
	} else {
		cfg.config_text = fl__display_config_default(&cfg.config_len);
		cfg.config_origin = "displays.ini (built in)";
	}
	limit = fl__server_raise_nofile();
	if (!cfg.max_fds_client)
		cfg.max_fds_client = (unsigned int)(limit / 4 < UINT_MAX ? limit / 4 : UINT_MAX);
	/* One post of the most fds must always fit. */
	if (cfg.max_fds_client <= FL_DPROTO_POST_MAX_FDS)
		cfg.max_fds_client = FL_DPROTO_POST_MAX_FDS + 1;
	if (cfg.foreground)
		displayd_log("fd limit %lu, %u per client", limit, cfg.max_fds_client);
	run.path = path;
	run.foreground = cfg.foreground;
	run.arg = &cfg;
	r = fl__server_run(&run);
	free(text);
	return r;
}

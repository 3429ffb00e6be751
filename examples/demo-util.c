/* SPDX-License-Identifier: MIT */
/* What the demos share (demo-util.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "demo-util.h"
#include "pipeline-screen.h"

uint64_t demo_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool demo_parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return false;
	*ret = (unsigned int)v;
	return true;
}

bool demo_parse_double(const char *s, double min, double max, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		return false;
	*ret = v;
	return true;
}

int demo_count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

int demo_option_display(const char *arg, const char **ret)
{
	static char terminal[4200];
	const char *tty = ttyname(STDIN_FILENO);

	*ret = arg;
	if (!strcmp(arg, "terminal") && tty) {
		snprintf(terminal, sizeof(terminal), "terminal:%s", tty);
		*ret = terminal;
	}
	return screen_choose(*ret) < 0 ? -EINVAL : 0;
}

int demo_usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "pipeline-demo: %s '%s'\nTry 'pipeline-demo --help'.\n", what, arg);
	return -EINVAL;
}

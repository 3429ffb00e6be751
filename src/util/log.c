/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *debug_env;
bool fl__log_on;

__attribute__((constructor)) static void read_env(void)
{
	debug_env = getenv("FENCELINE_DEBUG");
	fl__log_on = debug_env && *debug_env;
}

bool fl__log_enabled(const char *topic)
{
	const char *p;
	size_t n = strlen(topic);

	if (!fl__log_on)
		return false;
	for (p = debug_env; *p;) {
		size_t len = strcspn(p, ",");

		if ((len == 3 && !strncmp(p, "all", 3)) || (len == n && !strncmp(p, topic, n)))
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

void fl__log(const char *topic, const char *fmt, ...)
{
	va_list ap;

	if (!fl__log_enabled(topic))
		return;
	va_start(ap, fmt);
	fprintf(stderr, "fenceline[%s]: ", topic);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

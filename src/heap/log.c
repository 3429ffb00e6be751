/* SPDX-License-Identifier: MIT */
/*
 * The heaps' debug lines, topic "heap" of FENCELINE_DEBUG, in the format of
 * the library's log ("fenceline[heap]: ..."). src/heap may not use util's
 * logger (docs/architecture.md, "Dependency rules"), so it reads the
 * variable itself; the heaps log only on failures, never on a hot path.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "make.h"

static bool heap_topic_on(void)
{
	const char *p = getenv("FENCELINE_DEBUG");

	while (p && *p) {
		size_t len = strcspn(p, ",");

		if ((len == 3 && !strncmp(p, "all", 3)) || (len == 4 && !strncmp(p, "heap", 4)))
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

void fl__heap_log(const char *fmt, ...)
{
	va_list ap;

	if (!heap_topic_on())
		return;
	va_start(ap, fmt);
	flockfile(stderr);
	fputs("fenceline[heap]: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	va_end(ap);
}

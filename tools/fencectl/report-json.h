/* SPDX-License-Identifier: MIT */
/* The analysis of a trace as JSON: `fencectl report --json`, and the data of the HTML page. */
#ifndef FENCECTL_REPORT_JSON_H
#define FENCECTL_REPORT_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "analyse.h"

/**
 * report_write_json() - write @a (of @t, read from @file) to @out as one
 * JSON object, schema in docs/fencectl.md ("## report").
 * @lanes: also every value step, signal, fence and wait, for drawing lanes
 *
 * Every string is escaped so that the text can sit inside an HTML <script>
 * element: '<', '>' and '&' are written as \u003c, \u003e and \u0026.
 *
 * Return: 0, or -EIO if writing failed.
 */
int report_write_json(FILE *out, const struct trace *t, const struct analysis *a, const char *file,
		      bool lanes);

/**
 * report_root_text() - one sentence on the root cause of late fence @late
 * into @buf, e.g. "timeline camera reached 12 23.4 ms past the deadline,
 * signalled by camera (1234)".
 */
void report_root_text(const struct trace *t, const struct an_late *late, char *buf, size_t size);

#endif

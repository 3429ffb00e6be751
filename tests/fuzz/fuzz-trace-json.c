/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for `fencectl report`'s reader: the JSON parser, the trace
 * loader and the analysis, on any bytes. Besides not crashing, leaking or
 * reading out of bounds, it checks what can be checked of any input: a
 * parse error points inside the input, a refused trace says why, and the
 * report written for an accepted trace is itself JSON the parser accepts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyse.h"
#include "fuzz.h"
#include "json.h"
#include "report-json.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_error err = { 0 };
	struct json *root = NULL, *back = NULL;
	struct analysis a;
	struct trace t;
	char msg[256];
	char *buf = NULL;
	size_t n = 0;
	FILE *out;
	int r;

	if (json_parse((const char *)data, size, &root, &err) < 0) {
		if (err.offset > size || !err.msg[0] || !err.line || !err.column)
			__builtin_trap();
		return 0;
	}
	msg[0] = '\0';
	r = trace_load(root, &t, msg, sizeof(msg));
	json_free(root);
	if (r < 0) {
		if (!msg[0] || msg[0] == '?')
			__builtin_trap();
		return 0;
	}
	if (analyse(&t, (size & 1) ? "display" : NULL, &a) == 0) {
		out = open_memstream(&buf, &n);
		if (out) {
			if (report_write_json(out, &t, &a, "fuzz", true) < 0)
				__builtin_trap();
			fclose(out);
			if (json_parse(buf, n, &back, &err) < 0) {
				fprintf(stderr, "report is not JSON at byte %zu: %s\n", err.offset,
					err.msg);
				__builtin_trap();
			}
			json_free(back);
			free(buf);
		}
		analysis_free(&a);
	}
	trace_free(&t);
	return 0;
}

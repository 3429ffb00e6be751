/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the heap table's parser and evaluation
 * (<fenceline/heap-table.h>). Input: the table's text.
 *
 * Checks, beyond "no crash, no leak, no read past the text" (ASan, UBSan):
 *   - a rejected text gets -EINVAL and a message "fuzz:LINE:COLUMN: ..."
 *     whose line is one of the text's and whose column is on that line
 *     (or just past it), so every error points at the input (fuzz-ini.c);
 *   - a small message buffer is always NUL-terminated and never overrun;
 *   - an accepted table prints as INI that parses again, and prints the
 *     same the second time (fl_heap_table_print() is a fixed point);
 *   - explain and alloc for each device return only their documented
 *     errors, and a buffer they give goes back with fl_heap_table_buffer_free().
 *
 * Built with libFuzzer under clang, and with fuzz-main.c under every
 * compiler.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fenceline/heap-table.h>

#include "fuzz-ini.h"
#include "fuzz.h"

static char *print(struct fl_heap_table *t, size_t *ret_len)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(f);
	CHECK(fl_heap_table_print(t, f) == 0);
	CHECK(fclose(f) == 0);
	*ret_len = len;
	return out;
}

/*
 * The device names in a printed table: its "[device NAME]" lines (a
 * description may hold the same text, but never at the start of a line).
 */
static size_t device_names(const char *printed, char names[][32], size_t max)
{
	size_t n = 0;

	for (const char *p = printed; (p = strstr(p, "[device ")) && n < max; p++) {
		const char *s = p + 8, *e = strchr(s, ']');

		if (p != printed && p[-1] != '\n')
			continue;
		CHECK(e && e - s < 32);
		memcpy(names[n], s, (size_t)(e - s));
		names[n][e - s] = '\0';
		n++;
	}
	return n;
}

static void exercise(struct fl_heap_table *t, const char *printed)
{
	static const size_t sizes[] = { 1, 4096, 65537, (size_t)1 << 30 };
	char names[8][32], err[FL_HEAP_TABLE_ERROR_MAX];
	size_t n = device_names(printed, names, 8);
	FILE *sink = fopen("/dev/null", "we");

	CHECK(sink);
	for (size_t i = 0; i < n; i++) {
		const char *devs[2] = { names[i], names[(i + 1) % n] };

		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			struct fl_heap *heap;
			int fd = -1, r;

			CHECK(fl_heap_table_explain(t, devs, 2, sizes[k], sink) == 0);
			if (sizes[k] > 65537)
				continue; /* judged, never allocated: memory is the fuzzer's */
			r = fl_heap_table_alloc(t, devs, 2, sizes[k], 0, &fd, &heap, err,
						sizeof(err));
			CHECK(r == 0 || r == -EINVAL || r == -ENODEV || r == -E2BIG ||
			      r == -ENOMEM);
			CHECK(r == 0 || (err[0] && strlen(err) < sizeof(err)));
			if (r == 0)
				CHECK(fl_heap_table_buffer_free(t, fd) == 0);
		}
	}
	fclose(sink);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char err[FL_HEAP_TABLE_ERROR_MAX], small[9];
	struct fl_heap_table *t = NULL, *again = NULL;
	char *first, *second;
	size_t len1, len2;
	int r, r_small;

	memset(err, 0x7f, sizeof(err));
	r = fl_heap_table_load_string(text, size, "fuzz", &t, err, sizeof(err));
	CHECK(r == 0 || r == -EINVAL);
	memset(small, 0x7f, sizeof(small));
	r_small = fl_heap_table_load_string(text, size, "fuzz", &again, small, sizeof(small) - 1);
	CHECK(r_small == r);
	CHECK(small[sizeof(small) - 1] == 0x7f);
	if (r) {
		CHECK(memchr(err, '\0', sizeof(err)));
		CHECK(memchr(small, '\0', sizeof(small) - 1));
		fuzz_check_ini_error(text, size, err);
		return 0;
	}
	fl_heap_table_close(again);
	first = print(t, &len1);
	r = fl_heap_table_load_string(first, len1, "printed", &again, err, sizeof(err));
	CHECK(r == 0);
	second = print(again, &len2);
	CHECK(len1 == len2 && memcmp(first, second, len1) == 0);
	exercise(t, first);
	free(first);
	free(second);
	fl_heap_table_close(again);
	fl_heap_table_close(t);
	return 0;
}

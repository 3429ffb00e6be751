/* SPDX-License-Identifier: MIT */
/* The message check of fuzz-ini.h, shared by the INI fuzz targets. */
#include <stdlib.h>
#include <string.h>

#include "fuzz-ini.h"
#include "fuzz.h"

/* The length of line @line (1-based) of the text, or -1 past the end. */
static long line_length(const char *text, size_t size, unsigned long line)
{
	size_t at = 0;

	for (unsigned long n = 1; at <= size; n++) {
		const char *nl = memchr(text + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (text + at)) : size - at;

		if (n == line)
			return (long)len;
		if (!nl)
			return -1;
		at += len + 1;
	}
	return -1;
}

void fuzz_check_ini_error(const char *text, size_t size, const char *err)
{
	unsigned long line, col;
	char *end;
	long len;

	CHECK(strncmp(err, "fuzz:", 5) == 0);
	line = strtoul(err + 5, &end, 10);
	CHECK(*end == ':');
	col = strtoul(end + 1, &end, 10);
	CHECK(*end == ':' && end[1] == ' ' && end[2] != '\0');
	CHECK(line >= 1 && col >= 1);
	len = line_length(text, size, line);
	CHECK(len >= 0);
	/* Past the end of the line only for "no ']'" or a line too long. */
	CHECK(col <= (unsigned long)len + 1);
}

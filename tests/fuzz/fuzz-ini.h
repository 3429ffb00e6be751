/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets of INI files (the heap table, the display config)
 * check of a rejected text's message: src/util/ini.h's format.
 */
#ifndef FL_FUZZ_INI_H
#define FL_FUZZ_INI_H

#include <stddef.h>

/*
 * Traps unless @err is "fuzz:LINE:COLUMN: ..." with a non-empty message,
 * LINE one of @text's lines and COLUMN on it (or just past its end: "no
 * ']'", or a line too long), so that every error points into the input.
 */
void fuzz_check_ini_error(const char *text, size_t size, const char *err);

#endif /* FL_FUZZ_INI_H */

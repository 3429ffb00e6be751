/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz target shares: libFuzzer's entry point, which fuzz-main.c
 * calls too, and CHECK(), which traps when a target's own invariant fails,
 * a crash that libFuzzer and fuzz-main.c both report with the input.
 */
#ifndef FL_FUZZ_H
#define FL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                       \
	do {                              \
		if (!(cond))              \
			__builtin_trap(); \
	} while (0)

#endif /* FL_FUZZ_H */

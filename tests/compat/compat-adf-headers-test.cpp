/* SPDX-License-Identifier: MIT */
/* compat-adf-headers-test.c compiled as C++: the headers are extern "C" and valid C++. */
#include "compat-adf-headers-test.c"

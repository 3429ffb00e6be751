/* SPDX-License-Identifier: MIT */
/* What the demos share (pipeline-demo, pipeline-demo-sim): the clock, options, fd counts. */
#ifndef DEMO_UTIL_H
#define DEMO_UTIL_H

#include <stdbool.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ns: the clock of fences, vsyncs and buffer queues. */
uint64_t demo_now_ns(void);

/* @s as a decimal in [@min, @max], whole: true and *@ret, or false (nothing else, no sign). */
bool demo_parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *ret);
bool demo_parse_double(const char *s, double min, double max, double *ret);

/*
 * --display @arg: "terminal" alone means this terminal (stdin's tty); then screen_choose().
 * Return: 0 and the choice in *@ret (static or @arg), or -EINVAL (said on stderr).
 */
int demo_option_display(const char *arg, const char **ret);

/* Say "pipeline-demo: @what '@arg'" and where help is. Return: -EINVAL. */
int demo_usage_error(const char *what, const char *arg);

/* Open fds of this process, to check that a run leaves none behind; -1 without /proc. */
int demo_count_fds(void);

#endif

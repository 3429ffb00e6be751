/* SPDX-License-Identifier: MIT */
/* fencectl heaps (heaps.c): the daemon's heaps and each client's share. */
#ifndef FENCECTL_HEAPS_H
#define FENCECTL_HEAPS_H

extern const char fencectl_heaps_usage[];

/* argv[0] is "heaps". Return: the exit status (docs/fencectl.md). */
int fencectl_heaps(int argc, char **argv);

#endif /* FENCECTL_HEAPS_H */

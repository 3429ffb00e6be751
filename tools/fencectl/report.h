/* SPDX-License-Identifier: MIT */
/* `fencectl report`: a trace's late frames and their critical paths, as HTML or JSON. */
#ifndef FENCECTL_REPORT_H
#define FENCECTL_REPORT_H

/**
 * fencectl_report() - run `fencectl report` with @argv[0] == "report".
 * Return: the exit status: 0 done, 1 error (writing, memory), 2 usage or a
 * trace that cannot be read (missing, not JSON, not a fenceline trace,
 * malformed).
 */
int fencectl_report(int argc, char **argv);

#endif

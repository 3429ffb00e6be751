/* SPDX-License-Identifier: MIT */
/**
 * DOC: file descriptor table reservation
 *
 * Linux grows a process's fd table by doubling it; in a process with more
 * than one thread each growth waits for an RCU grace period, which stalls
 * the thread creating the fd (15 ms has been seen on a 2-vCPU VM and about
 * 100 ms reported on a Raspberry Pi 4; 0.2 ms on the kernel fl-bench last
 * ran on). fenceline keeps that off the fence-creation path: when the
 * library is loaded into a process that still has one thread, it grows the
 * table to 1024 slots at once (free then); otherwise the core's fd watcher
 * thread does so when it starts. After that, when a fenceline fd lands in
 * the upper half of the table, the watcher grows the table ahead of need,
 * so fd-creating threads only meet the stall if they outrun it. Applications
 * can also size the table up front, before they start threads, with
 * fl_fd_reserve(). FENCELINE_FD_RESERVE=0 turns the automatic growth off
 * (for measurements).
 */
#ifndef FENCELINE_FD_H
#define FENCELINE_FD_H

#include <fenceline/export.h>

FL_BEGIN_DECLS

/**
 * fl_fd_reserve() - make the fd table hold at least @count descriptors
 * @count: the number of fd slots wanted; capped at the RLIMIT_NOFILE soft
 *	limit
 *
 * Grows the table now, in the calling thread (cheap while the process has
 * one thread). Tables never shrink.
 * Return: the table size reached (>= 0; @count 0 only reports it), or
 * -EMFILE if the table cannot grow that far.
 */
FL_EXPORT int fl_fd_reserve(unsigned int count);

FL_END_DECLS

#endif /* FENCELINE_FD_H */

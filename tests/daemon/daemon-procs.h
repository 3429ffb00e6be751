/* SPDX-License-Identifier: MIT */
/*
 * What daemon-test.c and daemon-owner-test.c share: fd API shorthands that
 * must work, and processes stopped and resumed (the daemon among them) with
 * a guard that resumes them should the test die first. Failures fail the
 * test (runner.h).
 */
#ifndef FL_TESTS_DAEMON_PROCS_H
#define FL_TESTS_DAEMON_PROCS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A timeline fd made through the fd API, which must work. */
int new_timeline(const char *name);

/* A fence fd at @value on timeline fd @tl, which must work. */
int new_fence(int tl, uint64_t value, const char *name);

/* The merge of fence fds @a and @b, which must work. */
int new_merge(int a, int b, const char *name);

/* A connected AF_UNIX socket pair in @sv, which must work. */
void socketpair_or_fail(int sv[2]);

/*
 * Every thread of @pid is stopped (state T): a SIGSTOP has taken effect,
 * not just been sent.
 */
bool process_stopped(pid_t pid);

/*
 * A daemon this test stops must not stay stopped when the test fails: it
 * runs in a session of its own, out of reach of the runner's kill of the
 * test's process group. The guard, in a process group of its own too,
 * sends it SIGCONT once every copy of the returned fd is closed: by the
 * test when done, or by the exit of a test that failed an assertion. It
 * keeps no copy of the test's other fds (they are closed in it before this
 * returns), so a timeline the test closes is closed everywhere.
 */
int cont_guard_start(pid_t daemon, pid_t *ret_pid);

/*
 * The daemon stopped by daemon_stop(): from there to daemon_resume(), no
 * fork() while another thread is in a library call (fork() takes the
 * connection's lock). An assertion that fails in between is safe: the
 * guard resumes the daemon when the test process exits.
 */
struct stopped_daemon {
	pid_t pid, guard;
	int guard_fd;
	bool stopped; /* seen stopped: the SIGSTOP took effect */
};

/* Stops the library's daemon (SIGSTOP, waited for until it takes effect), guarded. */
void daemon_stop(struct stopped_daemon *d);

/* Resumes a daemon_stop()ped daemon, ends its guard; fails if it never stopped. */
void daemon_resume(struct stopped_daemon *d);

/* @fd polls readable at once. */
bool polls_ready(int fd);

#endif /* FL_TESTS_DAEMON_PROCS_H */

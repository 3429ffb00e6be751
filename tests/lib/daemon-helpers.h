/* SPDX-License-Identifier: MIT */
/*
 * Fixtures of the daemon tests (daemon-test.c, daemon-hostile-*-test.c):
 * children that report through their exit status, daemons the test starts
 * itself (fork + exec of the build tree's fencelined, in the foreground, on
 * a socket of its own), and the daemon's fd count, which is how these
 * tests see a leak inside the daemon.
 *
 * A forked child may use the runner's assertions: they print the reason,
 * add it to the test's report and exit the child with status 1, which the
 * parent then sees in dl_wait_child_ok().
 */
#ifndef FL_TESTS_DAEMON_HELPERS_H
#define FL_TESTS_DAEMON_HELPERS_H

#include <stdint.h>
#include <sys/types.h>

/* Generous: only a hang reaches these. */
#define DL_LONG_WAIT_MS 30000

/* Fails the test unless @pid exits with status 0 within DL_LONG_WAIT_MS. */
#define dl_wait_child_ok(pid) dl__wait_child_ok(__FILE__, __LINE__, pid)
void dl__wait_child_ok(const char *file, int line, pid_t pid);

/* fork() that must work; the child returns 0. */
pid_t dl_fork(void);

/* A path in the test's private XDG_RUNTIME_DIR: "<dir>/<name>". */
void dl_runtime_path(const char *name, char *buf, size_t cap);

/*
 * Starts fencelined --foreground --socket @path with the NULL-terminated
 * extra arguments @args (may be NULL), as a child of this process, and
 * returns its pid once the socket accepts connections.
 */
pid_t dl_daemon_start(const char *path, const char *const *args);

/* SIGTERMs a daemon started by dl_daemon_start() and reaps it. */
void dl_daemon_stop(pid_t pid);

/*
 * A stand-in daemon's listening SOCK_SEQPACKET socket, at "<dir>/sock" in
 * a new private directory; its path goes to @path (@cap bytes).
 * dl_stand_in_remove() closes it and removes the socket and the directory.
 */
int dl_stand_in_listen(char *path, size_t cap);
void dl_stand_in_remove(int listen_fd, char *path);

/* Open fds of process @pid (from /proc/PID/fd); fails the test if unreadable. */
int dl_proc_fd_count(pid_t pid);

/*
 * The daemon's fd count once it stops changing: what a leak check
 * compares against.
 */
int dl_daemon_fd_baseline(pid_t pid);

/*
 * Fails the test unless daemon @pid gets back to at most @base open fds
 * within a grace period (the core releases fds asynchronously).
 */
#define dl_expect_daemon_fds_back(pid, base) \
	dl__expect_daemon_fds_back(__FILE__, __LINE__, pid, base)
void dl__expect_daemon_fds_back(const char *file, int line, pid_t pid, int base);

/* write()/read() exactly @len bytes, or fail the test. */
void dl_write_all(int fd, const void *buf, size_t len);
void dl_read_all(int fd, void *buf, size_t len);

/* fl_send()/fl_recv() of exactly one fd with no payload, or fail the test. */
void dl_send_fd(int sock, int fd);
int dl_recv_fd(int sock);

/* Fails the test unless fence fd @fd completes with @status within DL_LONG_WAIT_MS. */
#define dl_expect_fence_status(fd, status) dl__expect_fence_status(__FILE__, __LINE__, fd, status)
void dl__expect_fence_status(const char *file, int line, int fd, int status);

#endif /* FL_TESTS_DAEMON_HELPERS_H */

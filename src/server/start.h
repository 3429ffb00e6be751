/* SPDX-License-Identifier: MIT */
/*
 * How a per-user server comes to serve a socket (docs/daemon.md, "Starting
 * the daemon"): fencelined and fl-displayd, started by the library on first
 * use, by hand or by systemd, both decide here that exactly one of them
 * serves a socket. A server serves only while it holds an flock on
 * "<socket>.lock"; a starter that cannot take the lock waits until some
 * server answers on the socket (another serves: it leaves) or the lock frees
 * up (a server that was exiting), so nobody is left without one.
 */
#ifndef FL_SERVER_START_H
#define FL_SERVER_START_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* How long a starter waits for the lock, or for the holder to answer. */
#define FL_SERVER_START_WAIT_MS 5000

/**
 * fl__server_listen_locked() - take @path's lock and listen on @path
 * @mode: the socket file's mode (fl__acceptor_listen())
 * @ret_lock: set to the lock's fd, the caller's: close it after removing
 *	the socket file, when it stops serving
 *
 * Under the lock a socket file already at @path is a dead server's, and is
 * replaced.
 * Return: the listening fd, the caller's; -EEXIST when another server
 * answers on @path; -EBUSY when the lock stayed taken for
 * FL_SERVER_START_WAIT_MS with nobody answering; -ENAMETOOLONG; open()'s
 * or fl__acceptor_listen()'s -errno.
 */
int fl__server_listen_locked(const char *path, mode_t mode, int *ret_lock);

/**
 * fl__server_activation_fd() - the listening socket systemd passed
 * (LISTEN_PID is ours, LISTEN_FDS at least 1: fd 3), made close-on-exec
 * and non-blocking, the LISTEN_* variables unset
 *
 * Return: 3, or -1 when this process was not socket-activated.
 */
int fl__server_activation_fd(void);

/**
 * fl__server_detach() - leave the starter: fork, the parent exits 0 (the
 * library that spawned us waits for that, once the socket listens), the
 * child gets a session of its own and "/" as its directory
 *
 * Return: 0 in the child; fork()'s or chdir()'s -errno (nothing forked, or
 * the child cannot go on).
 */
int fl__server_detach(void);

/**
 * fl__server_unlisten() - stop serving @path: remove the socket file if it
 * is still the one bound (@bound, stat()ed after listening: another server
 * may have replaced a file removed under it), then free the lock (closed)
 */
void fl__server_unlisten(const char *path, const struct stat *bound, int lock);

/**
 * fl__server_stop_signals() - SIGTERM, SIGINT and SIGHUP, the signals that
 * stop a service, blocked in the calling thread (call it before any other
 * thread starts) and readable from the returned signalfd instead
 * Return: the signalfd (CLOEXEC, non-blocking), or a negative errno.
 */
int fl__server_stop_signals(void);

/**
 * fl__server_parse_uint() - a command-line or environment number: decimal
 * digits only, 0 to INT_MAX
 * Return: 0 and *@ret, or -1 (anything else: a sign, junk, overflow).
 */
int fl__server_parse_uint(const char *s, unsigned int *ret);

/**
 * fl__server_raise_nofile() - take all the fds the server may: the soft
 * fd limit raised to the hard one, and both to fs.nr_open where the
 * process may (CAP_SYS_RESOURCE). A server holds its clients' fds
 * (fences, buffers), so its limit is every client's.
 * Return: the fd limit now in force (0 if it cannot be read).
 */
unsigned long fl__server_raise_nofile(void);

/**
 * struct fl_server_run - how a per-user server comes to serve
 * @name: the program's name, for messages ("fencelined")
 * @path: the socket's path (--socket), or "" for @default_path's
 * @default_path: writes the default socket path into @buf; a negative
 *	errno when there is no usable one
 * @mode: the socket file's mode
 * @foreground: stay in the foreground and log; otherwise detach once the
 *	socket listens (the starter waits for that)
 * @log: the server's log line ("name[pid]: ..." on stderr)
 * @serve: serve the listening socket @lfd until done (idle, a stop
 *	signal); 0 or a negative errno
 * @arg: @serve's argument
 */
struct fl_server_run {
	const char *name;
	const char *path;
	int (*default_path)(char *buf, size_t len);
	mode_t mode;
	bool foreground;
	void (*log)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	int (*serve)(int lfd, void *arg);
	void *arg;
};

/**
 * fl__server_run() - everything a server's main() does once its options
 * are read: SIGPIPE ignored, the fds a starter leaked closed, the socket
 * systemd passed or one listened on under the lock (another server
 * answering there: leave, it serves), detaching, serving, and the socket
 * file removed and the lock freed at the end
 * Return: the exit status: 0 (served, or another server serves), 1 (no
 * usable socket path, cannot listen or detach, @serve failed; the reason
 * is on stderr).
 */
int fl__server_run(const struct fl_server_run *run);

#endif /* FL_SERVER_START_H */

/* SPDX-License-Identifier: MIT */
/*
 * What both of the library's clients (fencelined's in client.c, the display
 * service's in display.c) need to reach a service: start it, connect to its
 * socket, check who listens there, and keep the identity of every fd the
 * library holds (client.c's top comment says why). One home, so that a
 * rule about hostile programs or squatted sockets is kept by both.
 */
#ifndef FL_CLIENT_SERVICE_H
#define FL_CLIENT_SERVICE_H

#include <stdbool.h>
#include <sys/types.h>

/* The identity of an fd the library holds: the file it got, by inode. */
struct fdid {
	dev_t dev;
	ino_t ino;
	bool fifo; /* a pipe, else a socket */
};

/* Record @fd's identity; -EBADF (and an empty identity) for an fd that cannot be fstat()ed. */
int fl__fdid_get(int fd, struct fdid *ret);

/* Does @fd still hold the file recorded in @id? One fstat(). */
bool fl__fdid_is(int fd, const struct fdid *id);

/* Close @fd only if it is still ours: otherwise the number is the program's now. */
void fl__fdid_close(int fd, const struct fdid *id);

/**
 * fl__service_spawn() - start a service for @socket_path and reap the
 * process started (the service detaches by itself once it listens)
 * @what: the service, for messages ("daemon", "display service")
 * @binary: its executable
 *
 * Its standard fds are /dev/null (stderr stays ours with
 * FENCELINE_DAEMON_STDERR set), its signal mask and dispositions the
 * defaults, in a session of its own; its environment ours without our
 * preloads (libfenceline-kabi, libfenceline-fbdev) in LD_PRELOAD.
 * Return: 0, or -ECONNREFUSED (said on stderr) if it cannot be started.
 */
int fl__service_spawn(const char *what, const char *binary, const char *socket_path);

/**
 * fl__service_connect() - a SEQPACKET connection to @path
 * @timeout_ms: 0, or the bound of every send, receive and of the connect
 *	itself (a listener whose backlog is full)
 *
 * Return: the connected socket (O_CLOEXEC), or a negative errno; a connect
 * that timed out is -ETIMEDOUT.
 */
int fl__service_connect(const char *path, unsigned int timeout_ms);

/**
 * fl__service_peer_trusted() - whoever listens on @fd's other end must be
 * our own uid, root (a system service), or the uid FENCELINE_DAEMON_UID
 * names, before we send it a thing or believe a thing it answers: a
 * socket path can be pointed at, or planted in, a place another user
 * controls.
 * Return: 0, -EPERM (said on stderr, naming @what and @path) or the
 * getsockopt() error.
 */
int fl__service_peer_trusted(int fd, const char *what, const char *path);

#endif

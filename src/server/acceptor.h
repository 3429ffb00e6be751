/* SPDX-License-Identifier: MIT */
/*
 * The server framework's listening socket (docs/architecture.md, "The
 * framework"): it accepts peers in the loop with SOCK_CLOEXEC |
 * SOCK_NONBLOCK, reads their credentials (SO_PEERCRED) and hands each to
 * its host, which starts a connection (conn.h) or turns it away.
 *
 * Out of fds: an acceptor keeps one spare fd (/dev/null), which it closes
 * for the moment it takes to accept a waiting peer, turn it away with
 * -EMFILE and close it, so that a peer is answered instead of left in the
 * backlog, and the listening socket does not report readable forever.
 * When even the spare cannot help (it is gone: the limit was lowered
 * under us), the acceptor stops listening for FL_ACCEPTOR_PAUSE_MS rather
 * than spin on a socket that stays readable; the peers wait in the
 * backlog. A spare that could not be opened again stays gone.
 *
 * The acceptor knows no message format: turning a peer away writes the
 * host's refusal (struct fl_acceptor_ops' refuse), then reads what the
 * peer sent, since closing a socket with unread data resets it and the
 * peer would see ECONNRESET instead of the answer. Loop thread only.
 */
#ifndef FL_SERVER_ACCEPTOR_H
#define FL_SERVER_ACCEPTOR_H

#include <sys/types.h>

struct fl_loop;
struct fl_acceptor;

/* How long accepting pauses when out of fds with no spare. */
#define FL_ACCEPTOR_PAUSE_MS 100
/* The listen() backlog of fl__acceptor_listen(): peers waiting to be accepted. */
#define FL_ACCEPTOR_BACKLOG 512

struct fl_acceptor_ops {
	/*
	 * A peer connected: @fd (SOCK_CLOEXEC | SOCK_NONBLOCK) is the
	 * host's, of process @pid and user @uid. Start a connection on it
	 * (fl__server_conn_start()), or refuse it (fl__acceptor_turn_away()).
	 */
	void (*accepted)(struct fl_acceptor *acc, int fd, pid_t pid, uid_t uid, void *data);
	/*
	 * Write the protocol's refusal, @status (a negative errno), on @fd,
	 * without blocking: one message, the first the peer reads. NULL: the
	 * peer is closed on without a word.
	 */
	void (*refuse)(int fd, int status, void *data);
	/* Accepting pauses (out of fds, no spare): for the host's log. NULL: nothing. */
	void (*paused)(void *data);
};

/**
 * fl__acceptor_listen() - listen on the Unix socket @path, made with @mode
 *
 * A SOCK_SEQPACKET socket, close-on-exec and non-blocking (as
 * fl__acceptor_create() wants it), bound to @path, chmod()ed to @mode,
 * listening with a backlog of FL_ACCEPTOR_BACKLOG. A file already at
 * @path is the caller's to remove first (under whatever lock tells it
 * that the file is stale).
 * Return: the fd, the caller's; or -ENAMETOOLONG, or socket()'s, bind()'s,
 * chmod()'s or listen()'s -errno (nothing left open; a file bound stays).
 */
int fl__acceptor_listen(const char *path, mode_t mode);

/**
 * fl__acceptor_create() - accept the peers of @lfd (a listening socket,
 * non-blocking; still the caller's, to close after fl__acceptor_destroy())
 * in @loop, telling @ops (not copied) with @data
 *
 * Opens the spare fd.
 * Return: the acceptor, the caller's (fl__acceptor_destroy()), or NULL with
 * errno set (epoll_ctl()'s errors, ENOMEM).
 */
struct fl_acceptor *fl__acceptor_create(struct fl_loop *loop, int lfd,
					const struct fl_acceptor_ops *ops, void *data);

/**
 * fl__acceptor_destroy() - stop accepting: leave the loop, close the spare
 *
 * May be called from any callback of the loop but the acceptor's own
 * accepted(): a peer waiting in the backlog is then not accepted, even in
 * the dispatch under way. NULL is ignored.
 */
void fl__acceptor_destroy(struct fl_acceptor *acc);

/**
 * fl__acceptor_turn_away() - refuse the peer on @fd (taken) with @status:
 * the host's refuse(), then read what the peer sent, then close @fd
 */
void fl__acceptor_turn_away(struct fl_acceptor *acc, int fd, int status);

#endif /* FL_SERVER_ACCEPTOR_H */

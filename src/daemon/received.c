/* SPDX-License-Identifier: MIT */
/*
 * Closing the fds clients send, without ever blocking the loop.
 *
 * A client may send any fd where a request expects a fence, a timeline, a
 * buffer or a notify fd, and close() calls the file's ->flush(): on a FUSE
 * file that is a FLUSH request the daemon would wait for, for ever if the
 * filesystem's server (the same attacker) never answers; NFS writes back
 * dirty pages; a TCP socket with SO_LINGER waits for its data to go; a tty
 * waits for its output to drain. The files the library sends close
 * without waiting: AF_UNIX sockets, pipes and FIFOs (pipefs' release never
 * waits, whatever filesystem a FIFO's inode is on), anonymous inodes
 * (eventfd, sync_file: no type bits in their mode) and shmem files
 * (memfd, tmpfs: no ->flush). Those are closed at once. Any other fd goes
 * to a closer thread, started on first use, and counts as a daemon fd of
 * its sender until it is closed (fld_notify_closed() then, from the loop),
 * so a client that makes the closer wait uses up only its own quotas.
 *
 * The kind is read with fl__fd_stat() (cached attributes: no request to
 * the filesystem) and with fcntl()/getsockopt(), which look at the open
 * file only. A request's fds are statted once (fld_fd_stat()): the
 * handler that identified a fence fd and the close after it share that.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"
#include "util.h"

struct pending {
	int fd;
	const void *owner;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;
/* Under lock: fds to close (queue[head..len]), the one closing, owners of the closed ones. */
static struct pending *queue;
static size_t head, len, cap, closing;
static const void **done;
static size_t ndone, done_cap;
static bool started;
static int wake = -1; /* eventfd: the loop reaps when readable */

/*
 * The request being handled (the innermost: fld_fence_of() may handle
 * another client's first). Only the loop's thread uses it.
 */
static struct fld_rx *rx_top;

void fld_rx_begin(struct fld_rx *rx, const int *fds, int nfds)
{
	rx->fds = fds;
	rx->nfds = nfds;
	rx->known = 0;
	rx->outer = rx_top;
	rx_top = rx;
}

void fld_rx_end(struct fld_rx *rx)
{
	rx_top = rx->outer;
}

unsigned int fld_rx_nfds(void)
{
	unsigned int n = 0;

	for (int k = 0; rx_top && k < rx_top->nfds; k++)
		n += rx_top->fds[k] >= 0;
	return n;
}

int fld_fd_stat(int fd, struct fl__fd_stat *ret)
{
	/*
	 * Only while the request's slot still holds @fd: a handler that
	 * takes an fd sets its slot to -1, and only then can the number be
	 * reused. The daemon's fds are its own: nothing else closes them.
	 */
	for (struct fld_rx *rx = rx_top; rx && fd >= 0; rx = rx->outer) {
		for (int k = 0; k < rx->nfds; k++) {
			int r;

			if (rx->fds[k] != fd)
				continue;
			if (rx->known & (1u << k)) {
				*ret = rx->st[k];
				return 0;
			}
			r = fl__fd_stat(fd, ret);
			if (r == 0) {
				rx->st[k] = *ret;
				rx->known |= 1u << k;
			}
			return r;
		}
	}
	return fl__fd_stat(fd, ret);
}

int fld_fd_identity(int fd, dev_t *ret_dev, ino_t *ret_ino)
{
	struct fl__fd_stat st;
	int r = fld_fd_stat(fd, &st);

	return fl__fd_identity_of(r, &st, ret_dev, ret_ino, NULL);
}

bool fld_received_inline(int fd)
{
	struct fl__fd_stat st;
	int domain = 0;
	socklen_t dlen = sizeof(domain);

	if (fld_fd_stat(fd, &st) < 0)
		return true; /* not open: close() only says EBADF */
	switch (st.mode & S_IFMT) {
	case 0: /* an anonymous inode */
	case S_IFIFO:
		return true;
	case S_IFSOCK:
		/* Other families can linger in close() (SO_LINGER), as their owner chose. */
		return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 &&
		       domain == AF_UNIX;
	case S_IFREG:
		/* Seals are a shmem file's (memfd, tmpfs); anything else says EINVAL. */
		return fcntl(fd, F_GET_SEALS) >= 0;
	default:
		return false;
	}
}

static void *closer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct pending p;
		uint64_t one = 1;

		while (head == len)
			pthread_cond_wait(&more, &lock);
		p = queue[head++];
		if (head == len)
			head = len = 0;
		closing++;
		pthread_mutex_unlock(&lock);
		close(p.fd); /* may wait for ever: only this thread does */
		pthread_mutex_lock(&lock);
		closing--;
		done[ndone++] = p.owner; /* room made by fld_received_close() */
		(void)!write(wake, &one, sizeof(one));
	}
	return NULL;
}

/* Room for one more queued fd and its completion, and the thread: under lock. */
static int make_room(void)
{
	size_t busy = len - head + closing + ndone + 1;

	if (len == cap) {
		size_t n = cap ? cap * 2 : 16;
		struct pending *q = realloc(queue, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		queue = q;
		cap = n;
	}
	if (busy > done_cap) {
		size_t n = FL_MAX(busy, done_cap * 2);
		const void **d = realloc(done, n * sizeof(*d));

		if (!d)
			return -ENOMEM;
		done = d;
		done_cap = n;
	}
	if (!started) {
		pthread_attr_t attr;
		pthread_t t;
		sigset_t all, old;
		int r;

		/* Signals stay the loop's (its signalfd). */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		r = pthread_create(&t, &attr, closer, NULL);
		pthread_attr_destroy(&attr);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r)
			return -r;
		started = true;
	}
	return 0;
}

bool fld_received_close(int fd, const void *owner)
{
	static bool logged;
	int r;

	if (fd < 0)
		return false;
	if (wake < 0 || fld_received_inline(fd)) {
		close(fd);
		return false;
	}
	pthread_mutex_lock(&lock);
	r = make_room();
	if (r == 0) {
		queue[len++] = (struct pending){ fd, owner };
		pthread_cond_signal(&more);
	}
	pthread_mutex_unlock(&lock);
	if (r == 0)
		return true;
	if (!logged) {
		fld_log("no closer thread for clients' fds (%s): closing them in the loop",
			strerror(-r));
		logged = true;
	}
	close(fd);
	return false;
}

int fld_received_init(void)
{
	if (wake < 0)
		wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return wake < 0 ? -errno : wake;
}

void fld_received_reap(void)
{
	uint64_t n;

	(void)!read(wake, &n, sizeof(n));
	for (;;) {
		const void *owners[64];
		size_t k = 0;

		pthread_mutex_lock(&lock);
		while (k < FL_ARRAY_SIZE(owners) && ndone)
			owners[k++] = done[--ndone];
		pthread_mutex_unlock(&lock);
		if (!k)
			return;
		while (k)
			fld_notify_closed(owners[--k]);
	}
}

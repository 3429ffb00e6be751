/* SPDX-License-Identifier: MIT */
/*
 * Wait reports: a thread about to block on a daemon fence tells the daemon
 * (WAIT_BEGIN), so that fencectl can show waiters, find deadlocks and trace
 * waits. The daemon ends a wait itself when the fence completes; WAIT_END
 * is sent only for waits that stopped otherwise (timeout, error, EDEADLK).
 * fl_fence_fd_wait() in the core reaches this through the host ops
 * (src/core/host.h) that the client installs here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/fence.h>
#include <fenceline/shared.h>

#include "client.h"
#include "host.h"
#include "protocol.h"
#include "util.h"

static _Atomic uint64_t last_token;

static uint64_t hook_begin(int fd, int timeout_ms, unsigned int flags, int *notify_fd)
{
	struct fl_msg_wait_begin b;
	struct fl_fence *f;
	int p[2] = { -1, -1 }, fds[2] = { fd, -1 };
	int r;

	*notify_fd = -1;
	/* No daemon fd of ours, unless a daemon context made one. */
	if (fl_mode_get() == FL_MODE_IN_PROCESS && !fl__client_in_use())
		return 0;
	/* An in-process fence fd: the daemon has never heard of it. */
	if (fl_fence_from_fd(fd, &f) == 0) {
		fl_fence_unref(f);
		return 0;
	}
	if ((flags & FL_WAIT_DEADLOCK_ERROR) && pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return 0;
	fds[1] = p[1];
	b = (struct fl_msg_wait_begin){
		atomic_fetch_add_explicit(&last_token, 1, memory_order_relaxed) + 1,
		(uint32_t)gettid(), timeout_ms < 0 ? -1 : timeout_ms
	};
	r = fl__client_report(FL_OP_WAIT_BEGIN, p[1] >= 0 ? FL_MSG_F_NOTIFY : 0, &b, sizeof(b), fds,
			      p[1] >= 0 ? 2 : 1);
	if (p[1] >= 0)
		close(p[1]); /* the daemon's copy is the only writer now */
	if (r < 0) {
		if (p[0] >= 0)
			close(p[0]);
		return 0;
	}
	*notify_fd = p[0];
	return b.token;
}

static int hook_notified(uint64_t token, int notify_fd)
{
	struct fl_msg_wait_notify n;
	ssize_t k;

	do {
		k = read(notify_fd, &n, sizeof(n));
	} while (k < 0 && errno == EINTR);
	if (k == (ssize_t)sizeof(n) && n.token == token && n.status < 0)
		return n.status;
	return 0;
}

static void hook_end(uint64_t token, int result, int notify_fd)
{
	if (result <= 0) {
		struct fl_msg_wait_end e = { token, result, 0 };

		fl__client_report(FL_OP_WAIT_END, 0, &e, sizeof(e), NULL, 0);
	}
	if (notify_fd >= 0)
		close(notify_fd);
}

/*
 * A daemon fence fd at end-of-file whose status record a holder read out:
 * the daemon still holds the fence while any copy of the fd is open, so it
 * answers with the exact status. A daemon that does not know the fd (the
 * one that made it died, and its fences with it): -ECONNRESET.
 */
static int hook_status(int fd)
{
	unsigned char reply[FL_PROTO_MAX_REPLY];
	struct fl_msg_fence_info body = { 0, 0 };
	struct fl_msg_info_reply rep;
	int r;

	if (fl_mode_get() == FL_MODE_IN_PROCESS && !fl__client_in_use())
		return -ECONNRESET;
	/* A new daemon would not know the fd: none is started for this. */
	r = fl__client_call_no_spawn(FL_OP_FENCE_INFO, &body, sizeof(body), &fd, 1, reply,
				     sizeof(reply), NULL);
	if (r < (int)(sizeof(struct fl_msg_hdr) + sizeof(rep)) ||
	    fl__client_reply_status(reply) < 0)
		return r == -EBADF ? -EBADF : -ECONNRESET;
	memcpy(&rep, reply + sizeof(struct fl_msg_hdr), sizeof(rep));
	/* At end-of-file it has completed: "active" can only be a stranger's answer. */
	return rep.status == FL_STATUS_ACTIVE ? -ECONNRESET : rep.status;
}

/* What the core asks of its host in a client process: the daemon's side. */
static const struct fl__host_ops host_ops = {
	.settle = fl__client_flush,
	.status = hook_status,
	.wait_begin = hook_begin,
	.wait_notified = hook_notified,
	.wait_end = hook_end,
};

__attribute__((constructor)) static void host_init(void)
{
	fl__host_set_ops(&host_ops);
}

FL_EXPORT int fl_fence_fd_wait_begin(int fd, int timeout_ms, unsigned int flags,
				     struct fl_wait_report *ret)
{
	fl_return_if(!ret, -EINVAL);
	ret->token = 0;
	ret->notify_fd = -1;
	fl_return_if(flags & ~FL_WAIT_DEADLOCK_ERROR, -EINVAL);
	/* Only a fence still to complete is worth a report. */
	if (fd < 0 || fl_fence_fd_get_status(fd) != FL_STATUS_ACTIVE)
		return 0;
	ret->token = hook_begin(fd, timeout_ms, flags, &ret->notify_fd);
	return 0;
}

FL_EXPORT int fl_fence_fd_wait_notified(struct fl_wait_report *w)
{
	fl_return_if(!w, -EINVAL);
	if (!w->token || w->notify_fd < 0)
		return 0;
	return hook_notified(w->token, w->notify_fd);
}

FL_EXPORT void fl_fence_fd_wait_end(struct fl_wait_report *w, int result)
{
	if (!w)
		return;
	if (w->token)
		hook_end(w->token, result, w->notify_fd);
	else if (w->notify_fd >= 0)
		close(w->notify_fd);
	w->token = 0;
	w->notify_fd = -1;
}

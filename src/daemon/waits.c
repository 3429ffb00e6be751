/* SPDX-License-Identifier: MIT */
/*
 * Who waits on what: clients report the waits that block (WAIT_BEGIN); a
 * wait ends when its fence completes (a callback here) or when the client
 * says so (WAIT_END: timeout, error) or goes away. The deadlock detector
 * (deadlock.c) looks at them.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host.h"
#include "protocol.h"
#include "server.h"
#include "util.h"
#include "waits.h"

#define WAITS_PER_PROCESS 1024

struct wait *fld_waits; /* in progress, newest first */
unsigned int fld_nwaits;

static void wait_free(struct wait *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		fld_waits = w->next;
	if (w->next)
		w->next->prev = w->prev;
	fld_nwaits--;
	if (w->notify_fd >= 0) {
		close(w->notify_fd);
		fld_notify_closed(w->client);
	}
	fl_fence_unref(w->f);
	free(w);
}

static void end_wait(struct wait *w, int result, uint64_t now)
{
	struct fl_sync_pt_info pt;

	/* Completed or not, the wait counts for the timeline its fence is on. */
	fld_completing_point(w->f, &pt);
	if (!pt.timeline_id && fl_fence_get_num_points(w->f) == 1) {
		struct fl_fence_info info;

		fl_fence_get_info(w->f, &info, &pt, 1);
	}
	fld_stats_wait(fl_fence_get_name(w->f), pt.timeline_id, pt.timeline_name, now - w->begin_ns,
		       result);
	if (fld_tracing)
		fld_trace_wait(w->pid, w->tid, w->fence_id, fl_fence_get_name(w->f), w->begin_ns,
			       now, result, w->timeout_ms, result == 0 ? pt.timeline_id : 0,
			       pt.timestamp_ns);
	wait_free(w);
}

static void fence_done(struct fl_fence *f, struct fl_fence_cb *cb)
{
	struct wait *w = (struct wait *)cb;
	int s = fl_fence_get_status(f);

	end_wait(w, s == 1 ? 0 : s, fl__now_ns());
}

/*
 * A notify fd a client sent (@fd, taken) as one the daemon can write
 * without ever blocking, or -1. The client's fd shares its open file
 * description with the client, which may clear O_NONBLOCK on it at any
 * time (and setting it ourselves would change the client's file), so:
 *  - an AF_UNIX socket is kept: send() with MSG_DONTWAIT never blocks;
 *  - an anonymous pipe is reopened through /proc/self/fd, which makes a
 *    description of our own, non-blocking whatever the client does (the
 *    library's pipe is its own uid's, and the daemon is that uid or root;
 *    another uid's pipe cannot be reopened and is dropped);
 *  - anything else is dropped: the wait is tracked, without a notice.
 * Nothing here asks the file's filesystem (no fstat(), which a FUSE file
 * could make hang): the kind comes from the socket layer and from procfs.
 */
static int notify_take(const void *client, int fd, bool *ret_sock)
{
	char path[40], link[32];
	int r = -1, domain = 0;
	socklen_t len = sizeof(domain);
	ssize_t n;

	*ret_sock = false;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0) {
		if (domain == AF_UNIX) {
			*ret_sock = true;
			return fd;
		}
	} else {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 5 && !memcmp(link, "pipe:", 5))
			r = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	}
	/* Any file may come here: its close() too may wait (received.c). */
	if (r >= 0)
		close(fd); /* a pipe: never waits */
	else if (!fld_received_close(fd, client))
		fld_notify_closed(client);
	return r;
}

int fld_wait_begin(const void *client, pid_t pid, const struct fl_msg_wait_begin *b,
		   struct fl_fence *f, int notify_fd)
{
	unsigned int mine = 0;
	bool notify_sock = false;
	struct wait *w;

	/* Per process, not per connection: a process may open any number of those. */
	for (w = fld_waits; w; w = w->next)
		mine += w->pid == pid;
	w = mine < WAITS_PER_PROCESS ? calloc(1, sizeof(*w)) : NULL;
	if (!w) {
		if (notify_fd >= 0 && !fld_received_close(notify_fd, client))
			fld_notify_closed(client);
		return mine < WAITS_PER_PROCESS ? -ENOMEM : -EMFILE;
	}
	*w = (struct wait){
		.client = client,
		.pid = pid,
		.tid = (pid_t)b->tid,
		.token = b->token,
		.f = fl_fence_ref(f),
		.fence_id = fl__fence_id(f),
		.begin_ns = fl__now_ns(),
		.timeout_ms = b->timeout_ms,
		.notify_fd = notify_fd >= 0 ? notify_take(client, notify_fd, &notify_sock) : -1,
	};
	w->notify_sock = notify_sock;
	w->next = fld_waits;
	if (fld_waits)
		fld_waits->prev = w;
	fld_waits = w;
	fld_nwaits++;
	/* Already complete (the report raced the signal): the wait is over. */
	if (fl_fence_add_callback(f, &w->cb, fence_done) < 0) {
		int s = fl_fence_get_status(f);

		end_wait(w, s == 1 ? 0 : s, w->begin_ns);
	}
	return 0;
}

void fld_wait_end(const void *client, uint64_t token, int result)
{
	for (struct wait *w = fld_waits; w; w = w->next)
		if (w->client == client && w->token == token) {
			/* Not queued any more: its callback has ended it, or is about to. */
			if (fl_fence_remove_callback(w->f, &w->cb) > 0)
				end_wait(w, result, fl__now_ns());
			return;
		}
}

void fld_waits_client_gone(const void *client)
{
	struct wait *w = fld_waits, *next;

	for (; w; w = next) {
		next = w->next;
		if (w->client == client && fl_fence_remove_callback(w->f, &w->cb) > 0)
			end_wait(w, -ECONNRESET, fl__now_ns());
	}
}

void fld_waits_shutdown(void)
{
	while (fld_waits) {
		fl_fence_remove_callback(fld_waits->f, &fld_waits->cb);
		wait_free(fld_waits);
	}
	fld_deadlocks_forget();
}

void fld_waits_trace_pending(void)
{
	for (struct wait *w = fld_waits; w; w = w->next)
		fld_trace_wait(w->pid, w->tid, w->fence_id, fl_fence_get_name(w->f), w->begin_ns, 0,
			       1, w->timeout_ms, 0, 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * The core service: HELLO, which negotiates the other services' versions
 * (docs/protocol.md, "Services and versions"), and PING. Served to every
 * connection in every version: it is how peers find out what else they
 * share.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon.h"
#include "host.h"
#include "statuspage.h"
#include "util.h"

/*
 * HELLO: the decoder let through only our core version; agree on each
 * service's version (the lower of both) and tell the client.
 */
static bool op_hello(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct fl_msg_hello_reply r = { { 0, 0 },
					FL_PROTO_VERSION,
					(uint32_t)getpid(),
					fld_cfg.max_timelines,
					fld_cfg.max_fences };
	/*
	 * Not for another uid (--allow-uid): the page shows the inode and
	 * status of every fence of every client. Such a client reads its
	 * fences' statuses from the pipes and asks us, as without a page.
	 */
	bool page = fld_status_page_fd >= 0 && c->conn.uid == fld_euid();
	int pages[2] = { fld_status_page_fd, fl__status_page_info_fd() };
	unsigned int nfds = page;

	fl__server_negotiate(fld_server, conn, q->u.hello.services, r.services);
	if (page)
		r.flags = FL_HELLO_F_STATUS_PAGE;
	/* The info page only to a client that knows to take a second fd (sync 4). */
	if (page && pages[1] >= 0 && r.services[FL_PROTO_SVC_SYNC] >= 4) {
		r.flags |= FL_HELLO_F_INFO_PAGE;
		nfds = 2;
	}
	c->greeted = true;
	return fld_reply_send_fds(c, &q->hdr, &r, sizeof(r), pages, nfds);
}

/*
 * PINGs with FL_MSG_F_AFTER_CLOSES, answered after the loop has run the fd
 * watcher (a client the watcher's releases name may not be freed before
 * the loop is done with its events). Each holds a reference on its client.
 */
struct deferred_ping {
	struct client *c;
	struct fl_msg_hdr hdr;
	struct deferred_ping *next;
};
static struct deferred_ping *deferred_pings;

static bool op_ping(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct client *c = client_of(conn);
	struct deferred_ping *d;

	if (!(q->hdr.flags & FL_MSG_F_AFTER_CLOSES))
		return fld_reply_status(c, &q->hdr, 0);
	d = malloc(sizeof(*d));
	if (!d)
		return fld_reply_status(c, &q->hdr, -ENOMEM);
	atomic_fetch_add(&c->refs, 1);
	*d = (struct deferred_ping){ c, q->hdr, deferred_pings };
	deferred_pings = d;
	return true;
}

/*
 * The fds the deferred PINGs' senders closed before sending them hung up
 * in the kernel then, so the watcher has them now: handle them, then answer.
 */
void fld_answer_deferred_pings(void)
{
	if (!deferred_pings)
		return;
	fl__watcher_dispatch();
	/* A new pending fence's last close shows in no epoll set: look for those too. */
	(void)fl__watcher_sweep_fresh();
	while (deferred_pings) {
		struct deferred_ping *d = deferred_pings;

		deferred_pings = d->next;
		if (d->c->conn.fd >= 0)
			fld_reply_status(d->c, &d->hdr, 0);
		fld_client_unref(d->c);
		free(d);
	}
}

#define CORE_FIRST FL_PROTO_CORE_FIRST
static const struct fl_server_op core_ops[] = {
	[FL_OP_HELLO - CORE_FIRST] = { op_hello },
	[FL_OP_PING - CORE_FIRST] = { op_ping, FL_MSG_F_AFTER_CLOSES },
};

const struct fl_server_service_ops fld_core_service = {
	.name = "core",
	.first_op = CORE_FIRST,
	.last_op = FL_OP_PING,
	.ops = core_ops,
	.id = FL_PROTO_SVC_CORE,
	.version = 0, /* not negotiated: HELLO is how negotiation starts */
};

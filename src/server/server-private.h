/* SPDX-License-Identifier: MIT */
/* The server framework's own view of a server, shared by service.c and conn.c. */
#ifndef FL_SERVER_PRIVATE_H
#define FL_SERVER_PRIVATE_H

#include "conn.h"
#include "list.h"
#include "service.h"

struct service;

struct fl_server {
	struct fl_loop *loop;
	const struct fl_server_host_ops *host;
	struct service *services, **tail; /* in the order they were added */
	/* Who owns each op: looked up on every request, so a table, not a search. */
	struct service *by_op[FL_SERVER_MAX_OP + 1];
	struct fl_server_link conns; /* connected, the newest first */
	unsigned int nconns;
	/* Disconnected, for the host's release() when the loop next dispatches (@reap). */
	struct fl_server_link gone;
	struct fl_loop_source *reap;
};

#endif /* FL_SERVER_PRIVATE_H */

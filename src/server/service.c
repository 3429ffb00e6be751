/* SPDX-License-Identifier: MIT */
/*
 * Services (service.h): the table from op to the service owning it, the
 * generic checks of a request against its op's entry, and the connection's
 * end (client_gone, destroy listeners).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "server-private.h"

struct service {
	const struct fl_server_service_ops *ops;
	void *data;
	struct fl_loop_source *timer; /* for @ops->prepare */
	struct service *next;
};

struct fl_server *fl__server_create(struct fl_loop *loop, const struct fl_server_host_ops *host)
{
	struct fl_server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return NULL;
	srv->loop = loop;
	srv->host = host;
	srv->tail = &srv->services;
	fl__server_link_init(&srv->conns);
	fl__server_link_init(&srv->gone);
	return srv;
}

void fl__server_destroy(struct fl_server *srv)
{
	if (!srv)
		return;
	fl__server_release_gone(srv);
	while (srv->services) {
		struct service *s = srv->services;

		srv->services = s->next;
		fl__loop_source_remove(s->timer);
		free(s);
	}
	free(srv);
}

static const struct fl_server_op *op_entry(const struct service *s, uint32_t op)
{
	return &s->ops->ops[op - s->ops->first_op];
}

/* Nothing to do: the timer only wakes the loop for the pass that calls prepare. */
static void prepare_due(void *data)
{
	(void)data;
}

int fl__server_add_service(struct fl_server *srv, const struct fl_server_service_ops *ops,
			   void *data)
{
	struct service *s;

	if (!ops->name || ops->first_op > ops->last_op || ops->last_op > FL_SERVER_MAX_OP ||
	    (ops->version && ops->id >= FL_PROTO_MAX_SERVICES))
		return -EINVAL;
	for (s = srv->services; s; s = s->next)
		if (strcmp(s->ops->name, ops->name) == 0)
			return -EEXIST;
	for (uint32_t op = ops->first_op; op <= ops->last_op; op++)
		if (ops->ops[op - ops->first_op].handler && srv->by_op[op])
			return -EEXIST;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ops = ops;
	s->data = data;
	if (ops->prepare) {
		s->timer = fl__loop_add_timer(srv->loop, prepare_due, NULL);
		if (!s->timer) {
			free(s);
			return -ENOMEM;
		}
	}
	for (uint32_t op = ops->first_op; op <= ops->last_op; op++)
		if (op_entry(s, op)->handler)
			srv->by_op[op] = s;
	*srv->tail = s;
	srv->tail = &s->next;
	return 0;
}

/* The decoder's wording, so that a log reads the same whoever refused. */
static bool refuse(struct fl_server *srv, struct fl_server_conn *conn,
		   const struct fl_proto_request *q, int status)
{
	char why[96];

	snprintf(why, sizeof(why), "malformed %s request (%s)", fl__proto_op_name(q->hdr.op),
		 strerror(-status));
	return srv->host->reject(conn, &q->hdr, status, why);
}

bool fl__server_dispatch(struct fl_server *srv, struct fl_server_conn *conn,
			 const struct fl_proto_request *q, int *fds)
{
	const struct fl_server_op *e;
	struct service *s;
	unsigned int want;

	s = q->hdr.op <= FL_SERVER_MAX_OP ? srv->by_op[q->hdr.op] : NULL;
	if (!s)
		return refuse(srv, conn, q, -EOPNOTSUPP);
	e = op_entry(s, q->hdr.op);
	if (q->hdr.flags & ~e->flags)
		return refuse(srv, conn, q, -EINVAL);
	want = e->nfds + (unsigned int)__builtin_popcount(q->hdr.flags & e->fd_flags);
	if (q->nfds != want && !(e->fds_optional && q->nfds == 0))
		return refuse(srv, conn, q, -EINVAL);
	if (s->ops->version) {
		uint32_t svc;
		int since = fl__proto_op_since(q->hdr.op, &svc);

		/* A client that said it does not speak it, or a version without the op. */
		if (since < 0 || conn->versions[s->ops->id] < (uint32_t)since) {
			char why[128];

			snprintf(why, sizeof(why),
				 "%s request of service %s version %d, not negotiated (HELLO "
				 "agreed on %u)",
				 fl__proto_op_name(q->hdr.op), s->ops->name, since,
				 conn->versions[s->ops->id]);
			return srv->host->reject(conn, &q->hdr, -EPROTONOSUPPORT, why);
		}
	}
	return e->handler(conn, q, fds);
}

bool fl__server_reply(struct fl_server_conn *conn, const struct fl_msg_hdr *req, const void *body,
		      size_t len, const int *fds, unsigned int nfds)
{
	struct fl_msg_hdr h = { req->op | FL_OP_REPLY, 0, req->seq, (uint32_t)len };

	return fl__server_conn_send(conn, &h, sizeof(h), body, len, fds, nfds);
}

void fl__server_negotiate(struct fl_server *srv, struct fl_server_conn *conn,
			  const uint32_t asked[FL_PROTO_MAX_SERVICES],
			  uint32_t served[FL_PROTO_MAX_SERVICES])
{
	memset(served, 0, FL_PROTO_MAX_SERVICES * sizeof(served[0]));
	for (struct service *s = srv->services; s; s = s->next) {
		uint32_t id = s->ops->id;

		/* Versions only add ops: the lower one is what both sides know. */
		if (s->ops->version)
			served[id] = asked[id] < s->ops->version ? asked[id] : s->ops->version;
	}
	memcpy(conn->versions, served, sizeof(conn->versions));
}

void fl__server_prepare(struct fl_server *srv)
{
	for (struct service *s = srv->services; s; s = s->next)
		if (s->ops->prepare)
			fl__loop_timer_arm_ms(s->timer, s->ops->prepare(s->data));
}

int fl__server_dump(struct fl_server *srv, const char *service, uint32_t flags, int *ret_fd)
{
	for (struct service *s = srv->services; s; s = s->next)
		if (strcmp(s->ops->name, service) == 0)
			return s->ops->dump ? s->ops->dump(s->data, flags, ret_fd) : -ENOENT;
	return -ENOENT;
}

void fl__server_conn_gone(struct fl_server *srv, struct fl_server_conn *conn)
{
	for (struct service *s = srv->services; s; s = s->next)
		if (s->ops->client_gone)
			s->ops->client_gone(conn, s->data);
	while (!fl__server_link_empty(&conn->destroy)) {
		struct fl_server_listener *l =
			FL_SERVER_CONTAINER_OF(conn->destroy.next, struct fl_server_listener, link);

		fl__server_link_del(&l->link);
		l->notify(l, conn);
	}
}

void fl__server_conn_add_destroy_listener(struct fl_server_conn *conn,
					  struct fl_server_listener *listener)
{
	fl__server_link_add_tail(&conn->destroy, &listener->link);
}

struct fl_server_listener *fl__server_conn_get_destroy_listener(
	struct fl_server_conn *conn,
	void (*notify)(struct fl_server_listener *, struct fl_server_conn *))
{
	for (struct fl_server_link *l = conn->destroy.next; l != &conn->destroy; l = l->next) {
		struct fl_server_listener *x =
			FL_SERVER_CONTAINER_OF(l, struct fl_server_listener, link);

		if (x->notify == notify)
			return x;
	}
	return NULL;
}

void fl__server_listener_remove(struct fl_server_listener *listener)
{
	fl__server_link_del(&listener->link);
}

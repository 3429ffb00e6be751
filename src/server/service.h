/* SPDX-License-Identifier: MIT */
/*
 * The server framework's services (docs/architecture.md, "Adding a
 * service"): a service is a const table of ops, registered with a struct
 * fl_server, that owns a range of request numbers. The framework looks a
 * request up by its op, checks its header flags and fd count against the
 * service's table and calls the service's handler; when a connection ends
 * it tells every service and runs the connection's destroy listeners, behind
 * which each service keeps its per-connection state (as with libwayland's
 * wl_client_add_destroy_listener()).
 *
 * The table is the one home of the checks of a request's header flags and
 * fd count; src/proto's decoders check the framing and the bodies.
 *
 * The framework knows the wire framing (struct fl_msg_hdr and the decoded
 * struct fl_proto_request of src/proto) and the versions HELLO negotiates
 * (fl__server_negotiate()), no service: which ops exist, what they do and
 * what a connection's services keep are the services' own.
 * Loop thread only, like the loop.
 */
#ifndef FL_SERVER_SERVICE_H
#define FL_SERVER_SERVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conn.h"
#include "list.h"
#include "protocol.h"

struct fl_loop;
struct fl_server;
struct fl_server_conn;

/*
 * A listener on a connection's end: embed it in the per-connection state a
 * service keeps and find that state again with
 * fl__server_conn_get_destroy_listener() and FL_SERVER_CONTAINER_OF().
 * @notify runs once, when the connection ends; the listener is already off
 * the connection's list then, so @notify may free its container.
 */
struct fl_server_listener {
	void (*notify)(struct fl_server_listener *listener, struct fl_server_conn *conn);
	struct fl_server_link link;
};

/*
 * A request's handler. @fds are the request's fds, as many as the op's
 * table entry allows; a handler that keeps one sets its slot to -1, the
 * others are closed after it returns.
 * Return: false when it hung up on the connection (the caller reads no
 * more of it), true otherwise (also after an error answered to the peer).
 */
typedef bool (*fl_server_handler_fn)(struct fl_server_conn *conn, const struct fl_proto_request *q,
				     int *fds);

/* One op of a service: the columns of its table. */
struct fl_server_op {
	fl_server_handler_fn handler; /* NULL: no op of this service */
	uint32_t flags; /* the header flags (FL_MSG_F_*) it accepts */
	uint8_t nfds; /* the fds it comes with */
	uint32_t fd_flags; /* of @flags, those that bring one fd more each */
	bool fds_optional; /* it may also come with none at all */
};

/**
 * struct fl_server_service_ops - what a service is, as one const table
 * @name: for logs and fl__server_dump() ("sync", "heap", ...)
 * @first_op, @last_op: the request numbers it owns; @ops[op - @first_op]
 *     describes each (a NULL handler leaves that number to another service)
 * @client_gone: a connection ended (before its destroy listeners run), for
 *     what the service keeps about it outside its per-connection state
 *     (NULL: nothing)
 * @dump: write the service's state for fencectl into a new sealed memfd,
 *     *@ret_fd, the caller's; @flags are DUMP's. Return: 0 or -errno. NULL:
 *     the service shows nothing.
 * @prepare: the service's work between the loop's passes, called by
 *     fl__server_prepare() before the loop waits. Return: ms until it wants
 *     to be called again (0: at once), -1 for no time; the framework keeps a
 *     timer of the service's for it. NULL: none.
 * @id: the service's enum fl_proto_service_id, its slot in HELLO
 * @version: the highest version of it served; 0: not negotiated, every
 *     connection may use every op (the core service, HELLO and PING). A
 *     negotiated service's op is refused with -EPROTONOSUPPORT on a
 *     connection whose HELLO did not agree on a version of it that has the
 *     op (fl__proto_op_since()).
 */
struct fl_server_service_ops {
	const char *name;
	uint32_t first_op, last_op;
	const struct fl_server_op *ops;
	void (*client_gone)(struct fl_server_conn *conn, void *data);
	int (*dump)(void *data, uint32_t flags, int *ret_fd);
	int (*prepare)(void *data);
	uint32_t id;
	uint32_t version;
};

/* What the framework asks of its host. */
struct fl_server_host_ops {
	/*
	 * Answer @req with @status and hang up on @conn, logging @why: a
	 * request the framework refuses (unknown op, flags or fd count the
	 * op's table does not allow). Return: false.
	 */
	bool (*reject)(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status,
		       const char *why);
	/*
	 * The connections' side (conn.h); NULL for a server with none.
	 * readable: @conn's socket is readable, or hung up: read it with
	 *     fl__server_conn_recv(), now or later in the pass (a host that
	 *     schedules its peers collects them here).
	 * disconnecting: @conn ends, @why for the log (NULL: the peer simply
	 *     went), before its socket is closed and its services let go.
	 * release: the framework is done with @conn (it was disconnected in
	 *     an earlier pass): the host may free it.
	 */
	void (*readable)(struct fl_server_conn *conn);
	void (*disconnecting)(struct fl_server_conn *conn, const char *why);
	void (*release)(struct fl_server_conn *conn);
};

/* Ops numbered from 0 to this at most. */
#define FL_SERVER_MAX_OP 255u

/**
 * fl__server_create() - a server with no service, on @loop (for the
 * services' timers), asking @host (not copied) what it needs
 *
 * Return: the server, the caller's (fl__server_destroy()), or NULL (ENOMEM).
 */
struct fl_server *fl__server_create(struct fl_loop *loop, const struct fl_server_host_ops *host);

/**
 * fl__server_destroy() - free @srv and its services' timers, after
 * releasing the connections disconnected (fl__server_release_gone());
 * disconnect those still connected first. NULL is ignored.
 */
void fl__server_destroy(struct fl_server *srv);

/**
 * fl__server_add_service() - register the service @ops (not copied) with @data
 *
 * Return: 0; -EINVAL for a range past FL_SERVER_MAX_OP or upside down, or
 * a nameless service; -EEXIST when a service of that name, or one owning
 * one of its ops, is registered already; -ENOMEM.
 */
int fl__server_add_service(struct fl_server *srv, const struct fl_server_service_ops *ops,
			   void *data);

/**
 * fl__server_dispatch() - hand the decoded request @q, with its @q->nfds
 * @fds, to the service owning its op
 *
 * An op no service owns is refused with -EOPNOTSUPP, header flags its
 * table entry does not accept or a number of fds it does not take with
 * -EINVAL, through the host's reject() with "malformed <op> request
 * (<error>)", as the decoder words it; an op of a service (or a version of
 * it) that @conn's HELLO did not agree on with -EPROTONOSUPPORT, "<op>
 * request of service <name> version <n>, not negotiated".
 *
 * Return: the handler's (or reject()'s) answer: false when @conn was hung up on.
 */
bool fl__server_dispatch(struct fl_server *srv, struct fl_server_conn *conn,
			 const struct fl_proto_request *q, int *fds);

/**
 * fl__server_negotiate() - agree with @conn on the service versions
 * @asked: per enum fl_proto_service_id, the version the peer speaks (HELLO's)
 * @served: filled with what @conn gets: for each negotiated service
 *	registered, the lower of @asked and its @version; 0 for the rest
 *
 * Called by the host's HELLO handler; a second call replaces the first.
 */
void fl__server_negotiate(struct fl_server *srv, struct fl_server_conn *conn,
			  const uint32_t asked[FL_PROTO_MAX_SERVICES],
			  uint32_t served[FL_PROTO_MAX_SERVICES]);

/**
 * fl__server_prepare() - run each service's @prepare and set its timer
 *
 * Call once per pass of the loop, before it waits.
 */
void fl__server_prepare(struct fl_server *srv);

/**
 * fl__server_dump() - the @dump of the service named @service
 * Return: its result; -ENOENT when no such service is registered or it has no @dump.
 */
int fl__server_dump(struct fl_server *srv, const char *service, uint32_t flags, int *ret_fd);

/**
 * fl__server_reply() - answer @req on @conn: a header echoing its op (with
 * FL_OP_REPLY) and seq, then @len bytes of @body, with @nfds of @fds
 * (borrowed), sent by fl__server_conn_send()
 *
 * Return: true when it went; false when @conn is (now) disconnected: a
 * peer that does not read its replies, or is gone.
 */
bool fl__server_reply(struct fl_server_conn *conn, const struct fl_msg_hdr *req, const void *body,
		      size_t len, const int *fds, unsigned int nfds);

/**
 * fl__server_conn_gone() - @conn ended: call every service's @client_gone,
 * in the order they were registered, then its destroy listeners, in the
 * order they were added. Call once.
 */
void fl__server_conn_gone(struct fl_server *srv, struct fl_server_conn *conn);

/** fl__server_conn_add_destroy_listener() - run @listener when @conn ends */
void fl__server_conn_add_destroy_listener(struct fl_server_conn *conn,
					  struct fl_server_listener *listener);

/**
 * fl__server_conn_get_destroy_listener() - the listener of @conn whose
 * notify is @notify, or NULL: how a service finds its state on a connection
 */
struct fl_server_listener *fl__server_conn_get_destroy_listener(
	struct fl_server_conn *conn,
	void (*notify)(struct fl_server_listener *, struct fl_server_conn *));

/** fl__server_listener_remove() - take @listener off its connection: it will not run. */
void fl__server_listener_remove(struct fl_server_listener *listener);

#endif /* FL_SERVER_SERVICE_H */

/* SPDX-License-Identifier: MIT */
/*
 * The server framework's side of HELLO's negotiation
 * (fl__server_negotiate(), src/server/service.h): the version agreed on for
 * each service is the lower of the client's and the service's, and a
 * request of a service, or an op, the connection did not agree on is
 * refused with -EPROTONOSUPPORT before its handler runs. Made-up services
 * with versions above 1, which no real one has yet, on real op numbers
 * (the ops' "since" is the decoder's).
 */
#include <errno.h>
#include <string.h>

#include "fixture.h"
#include "loop.h"
#include "runner.h"
#include "service.h"

static int handled;

static bool op_any(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	handled++;
	return true;
}

static const struct fl_server_op one_op[] = { [0] = { op_any } };

/* A sync service of version 3, owning TIMELINE_CREATE only. */
static const struct fl_server_service_ops sync_v3 = {
	.name = "sync",
	.first_op = FL_OP_TIMELINE_CREATE,
	.last_op = FL_OP_TIMELINE_CREATE,
	.ops = one_op,
	.id = FL_PROTO_SVC_SYNC,
	.version = 3,
};

/* A heap service of version 1, owning HEAP_INFO. */
static const struct fl_server_service_ops heap_v1 = {
	.name = "heap",
	.first_op = FL_OP_HEAP_INFO,
	.last_op = FL_OP_HEAP_INFO,
	.ops = one_op,
	.id = FL_PROTO_SVC_HEAP,
	.version = 1,
};

/* Not negotiated: PING, served on every connection. */
static const struct fl_server_service_ops core = {
	.name = "core",
	.first_op = FL_OP_PING,
	.last_op = FL_OP_PING,
	.ops = one_op,
};

static bool send_op(struct fl_server *srv, struct fl_server_conn *conn, uint32_t op)
{
	return fl_test_send_op(srv, conn, op, 0, 0);
}

FL_TEST(negotiation_agrees_on_the_lower_version_and_refuses_the_rest)
{
	struct fl_loop *loop;
	struct fl_server *srv = fl_test_server_new(&fl_test_host, &loop);
	struct fl_server_conn conn;
	uint32_t asked[FL_PROTO_MAX_SERVICES] = { 0 }, served[FL_PROTO_MAX_SERVICES];

	fl_assert_int_eq(fl__server_add_service(srv, &sync_v3, NULL), 0);
	fl_assert_int_eq(fl__server_add_service(srv, &heap_v1, NULL), 0);
	fl_assert_int_eq(fl__server_add_service(srv, &core, NULL), 0);
	fl__server_conn_init(&conn, 1, 2);

	/* Before any HELLO: only the service that is not negotiated. */
	fl_assert(send_op(srv, &conn, FL_OP_PING));
	fl_assert(!send_op(srv, &conn, FL_OP_TIMELINE_CREATE));
	fl_assert_int_eq(fl_test_rejected_status, -EPROTONOSUPPORT);
	fl_assert_str_eq(fl_test_rejected_why,
			 "TIMELINE_CREATE request of service sync version 1, not "
			 "negotiated (HELLO agreed on 0)");
	fl_assert_int_eq(handled, 1);

	/* An older client: sync 2 of our 3, no heap; a slot nobody serves. */
	asked[FL_PROTO_SVC_SYNC] = 2;
	asked[FL_PROTO_SVC_OBSERVE] = 1;
	asked[7] = 9;
	fl__server_negotiate(srv, &conn, asked, served);
	fl_assert_int_eq(served[FL_PROTO_SVC_SYNC], 2);
	fl_assert_int_eq(served[FL_PROTO_SVC_HEAP], 0);
	fl_assert_int_eq(served[FL_PROTO_SVC_OBSERVE], 0);
	fl_assert_int_eq(served[7], 0);
	fl_assert(send_op(srv, &conn, FL_OP_TIMELINE_CREATE));
	fl_assert(!send_op(srv, &conn, FL_OP_HEAP_INFO));
	fl_assert_int_eq(fl_test_rejected_status, -EPROTONOSUPPORT);
	fl_assert_int_eq(handled, 2);

	/* A newer client: sync 7 is served as our 3, heap 4 as our 1. */
	asked[FL_PROTO_SVC_SYNC] = 7;
	asked[FL_PROTO_SVC_HEAP] = 4;
	fl__server_negotiate(srv, &conn, asked, served);
	fl_assert_int_eq(served[FL_PROTO_SVC_SYNC], 3);
	fl_assert_int_eq(served[FL_PROTO_SVC_HEAP], 1);
	fl_assert_int_eq(conn.versions[FL_PROTO_SVC_SYNC], 3);
	fl_assert(send_op(srv, &conn, FL_OP_HEAP_INFO));
	fl_assert(send_op(srv, &conn, FL_OP_TIMELINE_CREATE));
	fl_assert_int_eq(handled, 4);

	fl_test_server_free(srv, loop);
}

FL_TEST(negotiated_service_needs_an_id_in_range)
{
	static const struct fl_server_service_ops bad_id = {
		.name = "x",
		.first_op = 200,
		.last_op = 200,
		.ops = one_op,
		.id = FL_PROTO_MAX_SERVICES,
		.version = 1,
	};
	struct fl_loop *loop;
	struct fl_server *srv = fl_test_server_new(&fl_test_host, &loop);

	fl_assert_int_eq(fl__server_add_service(srv, &bad_id, NULL), -EINVAL);
	fl_test_server_free(srv, loop);
}

/* SPDX-License-Identifier: MIT */
/*
 * The server framework's services (src/server/service.h): registration,
 * dispatch by op with the generic checks of flags and fd counts, a
 * connection's end (client_gone, then destroy listeners), prepare's timer
 * and dump by name. Two made-up services whose op ranges interleave, as
 * the daemon's do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "loop.h"
#include "runner.h"
#include "service.h"

/* What the handlers and hooks saw, in order. */
static char seen[256];

static void note(const char *what)
{
	strncat(seen, what, sizeof(seen) - strlen(seen) - 1);
	strncat(seen, " ", sizeof(seen) - strlen(seen) - 1);
}

static bool op_a1(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	note("a1");
	return true;
}

static bool op_a3(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	note(q->nfds == 2 ? "a3+fd" : "a3");
	return true;
}

static bool op_b2(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	note(q->nfds ? "b2" : "b2-nofd");
	return true;
}

static void a_gone(struct fl_server_conn *conn, void *data)
{
	note("a-gone");
}

static void b_gone(struct fl_server_conn *conn, void *data)
{
	note("b-gone");
}

static int b_dump(void *data, uint32_t flags, int *ret_fd)
{
	*ret_fd = (int)flags;
	return 0;
}

static int prepares;
static int next_prepare = -1;

static int a_prepare(void *data)
{
	prepares++;
	return next_prepare;
}

/* a owns 1 and 3 (3 takes one fd, one more with flag 4); b owns 2 (one fd, or none). */
static const struct fl_server_op a_ops[] = {
	[0] = { op_a1, 1 },
	[2] = { op_a3, 4, 1, 4 },
};
static const struct fl_server_service_ops a_service = {
	.name = "a",
	.first_op = 1,
	.last_op = 3,
	.ops = a_ops,
	.client_gone = a_gone,
	.prepare = a_prepare,
};
static const struct fl_server_op b_ops[] = {
	[0] = { op_b2, 0, 1, 0, true },
};
static const struct fl_server_service_ops b_service = {
	.name = "b",
	.first_op = 2,
	.last_op = 2,
	.ops = b_ops,
	.client_gone = b_gone,
	.dump = b_dump,
};

static struct fl_server *two_services(struct fl_loop **ret_loop)
{
	struct fl_server *srv = fl_test_server_new(&fl_test_host, ret_loop);

	fl_assert_int_eq(fl__server_add_service(srv, &a_service, NULL), 0);
	fl_assert_int_eq(fl__server_add_service(srv, &b_service, NULL), 0);
	return srv;
}

static void done(struct fl_server *srv, struct fl_loop *loop)
{
	fl_test_server_free(srv, loop);
}

FL_TEST(server_service_registration_refuses_taken_ops_and_names)
{
	static const struct fl_server_op taken_ops[] = { [0] = { op_b2 } };
	static const struct fl_server_service_ops takes_3 = { "c", 3, 3, taken_ops };
	static const struct fl_server_service_ops named_a = { "a", 9, 9, taken_ops };
	static const struct fl_server_service_ops too_far = { "d", 250, FL_SERVER_MAX_OP + 1,
							      taken_ops };
	static const struct fl_server_service_ops upside_down = { "e", 5, 4, taken_ops };
	struct fl_loop *loop;
	struct fl_server *srv = two_services(&loop);

	fl_assert_int_eq(fl__server_add_service(srv, &takes_3, NULL), -EEXIST);
	fl_assert_int_eq(fl__server_add_service(srv, &named_a, NULL), -EEXIST);
	fl_assert_int_eq(fl__server_add_service(srv, &too_far, NULL), -EINVAL);
	fl_assert_int_eq(fl__server_add_service(srv, &upside_down, NULL), -EINVAL);
	done(srv, loop);
}

FL_TEST(server_dispatch_finds_the_owner_of_interleaved_ops)
{
	struct fl_server_conn conn;
	struct fl_loop *loop;
	struct fl_server *srv = two_services(&loop);

	fl__server_conn_init(&conn, 1, 2);
	seen[0] = '\0';
	fl_assert(fl_test_send_op(srv, &conn, 1, 1, 0));
	fl_assert(fl_test_send_op(srv, &conn, 2, 0, 1));
	fl_assert(fl_test_send_op(srv, &conn, 2, 0, 0)); /* optional fd */
	fl_assert(fl_test_send_op(srv, &conn, 3, 0, 1));
	fl_assert(fl_test_send_op(srv, &conn, 3, 4, 2)); /* the flag brings a second fd */
	fl_assert_str_eq(seen, "a1 b2 b2-nofd a3 a3+fd ");
	done(srv, loop);
}

FL_TEST(server_dispatch_refuses_unknown_ops_bad_flags_and_fd_counts)
{
	static const struct {
		uint32_t op, flags;
		unsigned int nfds;
		int status;
	} bad[] = {
		{ 4, 0, 0, -EOPNOTSUPP }, /* nobody's */
		{ 0, 0, 0, -EOPNOTSUPP }, /* in no range */
		{ 1u << 31, 0, 0, -EOPNOTSUPP }, /* past any table */
		{ 1, 2, 0, -EINVAL }, /* a flag op 1 does not take */
		{ 2, 1, 1, -EINVAL },
		{ 1, 0, 1, -EINVAL }, /* an fd op 1 does not take */
		{ 3, 0, 0, -EINVAL }, /* op 3's fd missing */
		{ 3, 4, 1, -EINVAL }, /* the flag's fd missing */
		{ 3, 0, 2, -EINVAL }, /* a second fd without the flag */
		{ 2, 0, 2, -EINVAL },
	};
	struct fl_server_conn conn;
	struct fl_loop *loop;
	struct fl_server *srv = two_services(&loop);

	fl__server_conn_init(&conn, 1, 2);
	seen[0] = '\0';
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fl_assert(!fl_test_send_op(srv, &conn, bad[i].op, bad[i].flags, bad[i].nfds));
		fl_assert_int_eq(fl_test_rejected_status, bad[i].status);
	}
	/* No handler ran, and the log reads as the decoder's would. */
	fl_assert_str_eq(seen, "");
	fl_assert_str_eq(fl_test_rejected_why, "malformed PING request (Invalid argument)");
	done(srv, loop);
}

struct state {
	struct fl_server_listener gone;
	const char *name;
};

static void state_gone(struct fl_server_listener *l, struct fl_server_conn *conn)
{
	struct state *st = FL_SERVER_CONTAINER_OF(l, struct state, gone);

	note(st->name);
	free(st); /* allowed: it is off the list already */
}

static void other_gone(struct fl_server_listener *l, struct fl_server_conn *conn)
{
	note("never");
}

FL_TEST(server_conn_end_tells_services_then_listeners_in_order)
{
	struct fl_server_conn conn;
	struct fl_server_listener removed = { other_gone };
	struct fl_loop *loop;
	struct fl_server *srv = two_services(&loop);
	struct state *x = calloc(1, sizeof(*x)), *y = calloc(1, sizeof(*y));

	fl__server_conn_init(&conn, 1, 2);
	x->gone.notify = state_gone;
	x->name = "x";
	y->gone.notify = state_gone;
	y->name = "y";
	fl_assert(!fl__server_conn_get_destroy_listener(&conn, state_gone));
	fl__server_conn_add_destroy_listener(&conn, &x->gone);
	fl__server_conn_add_destroy_listener(&conn, &removed);
	fl__server_conn_add_destroy_listener(&conn, &y->gone);
	/* A service finds its state by its notify: the first one added. */
	fl_assert(fl__server_conn_get_destroy_listener(&conn, state_gone) == &x->gone);
	fl_assert(fl__server_conn_get_destroy_listener(&conn, other_gone) == &removed);
	fl__server_listener_remove(&removed);
	fl_assert(!fl__server_conn_get_destroy_listener(&conn, other_gone));
	seen[0] = '\0';
	fl__server_conn_gone(srv, &conn);
	fl_assert_str_eq(seen, "a-gone b-gone x y ");
	fl_assert(!fl__server_conn_get_destroy_listener(&conn, state_gone));
	done(srv, loop);
}

FL_TEST(server_prepare_sets_the_service_timer_and_dump_finds_by_name)
{
	struct fl_loop *loop;
	struct fl_server *srv = two_services(&loop);
	int fd = -1;

	/* "At once": the loop must not block, or this test times out. */
	prepares = 0;
	next_prepare = 0;
	fl__server_prepare(srv);
	fl_assert_int_eq(prepares, 1);
	fl_assert_int_eq(fl__loop_dispatch(loop, -1), 0);
	/* No time wanted: nothing is due (a poll returns at once either way). */
	next_prepare = -1;
	fl__server_prepare(srv);
	fl_assert_int_eq(prepares, 2);
	fl_assert_int_eq(fl__loop_dispatch(loop, 0), 0);
	fl_assert_int_eq(fl__server_dump(srv, "b", 42, &fd), 0);
	fl_assert_int_eq(fd, 42);
	fl_assert_int_eq(fl__server_dump(srv, "a", 0, &fd), -ENOENT);
	fl_assert_int_eq(fl__server_dump(srv, "nobody", 0, &fd), -ENOENT);
	done(srv, loop);
}

/* SPDX-License-Identifier: MIT */
/*
 * What the server framework's tests (tests/server/server-*-test.c) share:
 * a host that records what the framework refused, a request sent straight
 * to fl__server_dispatch(), a server on a loop of its own, and a listening
 * socket with its peers.
 */
#ifndef FL_TESTS_SERVER_FIXTURE_H
#define FL_TESTS_SERVER_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "service.h"

struct fl_loop;

/* The last refusal of fl_test_host_reject(): its status (0: none since the last send) and why. */
extern int fl_test_rejected_status;
extern char fl_test_rejected_why[160];

/* A host's reject(): records @status and @why in the two above. Return: false. */
bool fl_test_host_reject(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status,
			 const char *why);

/* A host with that reject() alone, for servers whose connections have no socket. */
extern const struct fl_server_host_ops fl_test_host;

/*
 * Dispatch a request of @op with header @flags and @nfds fds (all -1) on
 * @conn, after clearing fl_test_rejected_status. Return: fl__server_dispatch()'s.
 */
bool fl_test_send_op(struct fl_server *srv, struct fl_server_conn *conn, uint32_t op,
		     uint32_t flags, unsigned int nfds);

/* A server asking @host on a new loop, *@ret_loop; asserts both were made. */
struct fl_server *fl_test_server_new(const struct fl_server_host_ops *host,
				     struct fl_loop **ret_loop);
/* Free what fl_test_server_new() made. */
void fl_test_server_free(struct fl_server *srv, struct fl_loop *loop);

/*
 * A socket listening (fl__acceptor_listen(), checked: mode 0600, close-on-exec,
 * non-blocking) on a new path in the test's XDG_RUNTIME_DIR, its address
 * in @addr for fl_test_connect(). Asserts.
 */
struct sockaddr_un;
int fl_test_listen(struct sockaddr_un *addr);
/* A blocking SOCK_SEQPACKET socket connected to @addr (into the backlog). Asserts. */
int fl_test_connect(const struct sockaddr_un *addr);

#endif /* FL_TESTS_SERVER_FIXTURE_H */

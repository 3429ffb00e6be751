/* SPDX-License-Identifier: MIT */
/*
 * Raw connections to fencelined for the tests that speak the wire protocol
 * themselves (daemon-hostile-*-test.c, heap-daemon-test.c): hand-made
 * packets, bad ones included. Failures fail the test (runner.h).
 */
#ifndef FL_TESTS_RAW_HELPERS_H
#define FL_TESTS_RAW_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A SOCK_SEQPACKET connection to the daemon at @path (NULL: the library's socket). */
int raw_connect_to(const char *path);

/* One packet of @len bytes with @nfds (at most 16) fds as SCM_RIGHTS. */
void raw_send(int sock, const void *buf, size_t len, const int *fds, unsigned int nfds);

/* raw_send() unless the socket's queue is full: false then (the packet is not sent). */
bool raw_try_send(int sock, const void *buf, size_t len, const int *fds, unsigned int nfds);

/*
 * One reply to request (@op, @seq) into @buf (FL_PROTO_MAX_REPLY bytes), its
 * header checked: returns its length with its status in *@status, or 0 on EOF.
 */
ssize_t raw_recv_reply(int sock, uint32_t op, uint32_t seq, unsigned char *buf, int32_t *status);

/* One reply's status (fds it carries are dropped), or 1 on EOF (disconnected). */
int raw_reply(int sock, uint32_t op, uint32_t seq);

#endif /* FL_TESTS_RAW_HELPERS_H */

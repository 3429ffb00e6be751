/* SPDX-License-Identifier: MIT */
/*
 * fencelined's allocation service (docs/heap.md, "Through the daemon"): the
 * daemon's own heaps, buffers charged to the connection that allocated
 * them, per-client limits, and the accounting that fencectl heaps shows.
 * Runs on the daemon's loop thread only.
 */
#ifndef FLD_HEAPSVC_H
#define FLD_HEAPSVC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"

struct fl_server_service_ops;

/* One connection's buffers and accounting; NULL until it first allocates. */
struct fld_heap_client;

/* Live buffers one connection may hold: each costs the daemon an fd. */
#define FLD_HEAP_MAX_BUFFERS 65536

/*
 * fld_heapsvc_init() - open the daemon's heaps
 * @carveout_bytes: the carveout's capacity; 0 for no carveout
 * @client_limit: bytes one connection may hold in all heaps; 0 for no limit
 * Return: 0 or -ENOMEM.
 */
int fld_heapsvc_init(uint64_t carveout_bytes, uint64_t client_limit);

/* Close the heaps (every client must have ended). */
void fld_heapsvc_fini(void);

/*
 * fld_heapsvc_alloc() - HEAP_ALLOC for the connection of process @pid
 * @hc: the connection's record, made here on first use
 * @ret: the reply body, filled on success
 * @ret_fd: the buffer's fd, the daemon's (send a copy; do not close it)
 * Return: 0; -ENODEV (no such heap), -EINVAL (size 0, or flags the heap
 * refuses), -ENOMEM (over the client's limit, heap full, out of memory),
 * -EMFILE (FLD_HEAP_MAX_BUFFERS reached, or the daemon out of fds).
 */
int fld_heapsvc_alloc(struct fld_heap_client **hc, pid_t pid, const struct fl_msg_heap_alloc *q,
		      struct fl_msg_heap_alloc_reply *ret, int *ret_fd);

/*
 * fld_heapsvc_free() - HEAP_FREE: the buffer of @fd (borrowed), or with
 * @fd -1 every buffer of @group, that this connection allocated
 * @ret_freed: how many buffers were freed
 * Return: 0; -EINVAL when @fd is no live buffer of this connection. A
 * group with no buffers frees nothing and is not an error.
 */
int fld_heapsvc_free(struct fld_heap_client *hc, int fd, uint32_t group, uint64_t *ret_freed);

/*
 * fld_heapsvc_info() - HEAP_INFO: this connection's share of @heap ("" for
 * every heap). Return: 0 or -ENODEV.
 */
int fld_heapsvc_info(const struct fld_heap_client *hc, const char *heap,
		     struct fl_msg_heap_info_reply *ret);

/* The connection ended: free its buffers and its record. NULL: nothing. */
void fld_heapsvc_client_end(struct fld_heap_client *hc);

/*
 * fld_heapsvc_dump() - the heaps and each client's share (docs/fencectl.md,
 * "heaps"), as text or JSON, in a new sealed memfd *@ret_fd, the caller's
 * Return: 0, -ENOMEM or memfd_create()'s and write()'s errors.
 */
int fld_heapsvc_dump(bool json, int *ret_fd);

/*
 * The service (src/server/service.h): HEAP_ALLOC, HEAP_FREE and HEAP_INFO,
 * each connection's buffers behind a destroy listener, and dump for DUMP's
 * heaps view. Register it after fld_heapsvc_init().
 */
extern const struct fl_server_service_ops fld_heap_service;

#endif /* FLD_HEAPSVC_H */

/* SPDX-License-Identifier: MIT */
/*
 * Between a heap's pool (pool.c) and its worker process (worker.c): one
 * SOCK_SEQPACKET socketpair, the worker's end at fd 3. Private: both ends
 * come from the same build, and the version in every message says so.
 *
 * The pool sends SETUP once (the heap's recipe, with the dma-heap device
 * attached when the recipe has one), then WORK messages: fds the pool is
 * done with, attached, for the worker to close (their last reference, so
 * the kernel frees the memory in the worker, not in the caller), and how
 * many buffers of which sizes to make. The worker closes first (memory
 * given back may be what the new buffers need), then answers each size
 * with MADE messages of at most FL_HEAP_WORKER_BATCH fresh buffers,
 * attached, each with its device and inode so the pool needs no fstat().
 */
#ifndef FL_HEAP_WORKER_PROTO_H
#define FL_HEAP_WORKER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "make.h"

#define FL_HEAP_WORKER_VERSION 0x666c6803u /* "flh" 3 */
/* The most fds one message carries, either way. */
#define FL_HEAP_WORKER_BATCH 16
/* The most sizes one WORK message asks for (the pool's size classes). */
#define FL_HEAP_WORKER_SIZES 8
/* The most buffers of one size one WORK message asks for. */
#define FL_HEAP_WORKER_MAX_COUNT (4 * FL_HEAP_WORKER_BATCH)
/* The worker's socket in the worker. */
#define FL_HEAP_WORKER_FD 3

enum fl_heap_worker_type {
	FL_HEAP_WORKER_SETUP = 1,
	FL_HEAP_WORKER_WORK = 2,
};

/* Pool to worker. */
struct fl_heap_worker_req {
	uint32_t version;
	uint32_t type;
	uint32_t nclose; /* WORK: fds attached, all to be closed */
	uint32_t nmake; /* WORK: entries of @make in use */
	struct {
		uint64_t size;
		uint32_t count; /* at most FL_HEAP_WORKER_MAX_COUNT */
		uint32_t pad_;
	} make[FL_HEAP_WORKER_SIZES];
	struct fl_heap_recipe recipe; /* SETUP; @dev_fd is attached, not this number */
};

/* Worker to pool: settles @asked buffers of @size asked for. */
struct fl_heap_worker_made {
	uint32_t version;
	int32_t error; /* 0, or why @asked - @n were not made */
	uint64_t size;
	uint32_t asked;
	uint32_t n; /* fds attached, in the order of @id */
	uint64_t cpu_ns; /* the worker's CPU time so far, for the pool's gate (pool-gate.c) */
	struct {
		uint64_t dev, ino;
	} id[FL_HEAP_WORKER_BATCH];
};

/*
 * Whether @len bytes at @buf, with @nfds fds attached, are a request the
 * worker can act on; if so, copies it to *@ret_req (the recipe's memfd
 * name NUL-terminated). The worker exits on anything else.
 */
bool fl__heap_worker_req_ok(const void *buf, size_t len, unsigned int nfds,
			    struct fl_heap_worker_req *ret_req);

/*
 * Whether @len bytes at @buf, with @nfds fds attached, are a well-formed
 * MADE message; if so, copies it to *@ret_made. Whether it matches what was
 * asked is the pool's to check.
 */
bool fl__heap_worker_made_ok(const void *buf, size_t len, unsigned int nfds,
			     struct fl_heap_worker_made *ret_made);

#endif /* FL_HEAP_WORKER_PROTO_H */

/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the checks of the heap pool's worker protocol
 * (src/heap/worker-proto.c): the worker's of each request, the pool's of
 * each reply. Input: one byte (bit 0: request or reply; the rest: how many
 * fds came along), then the message.
 *
 * Checks, beyond "no crash, no read past the message" (ASan, UBSan): what
 * a check accepts is within every bound the other end relies on: a
 * request's type, sizes, counts and fds; a reply's counts and fds, and
 * buffers missing only with an error.
 *
 * Built with libFuzzer under clang, and with fuzz-main.c under every
 * compiler.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "worker-proto.h"

static void request(const uint8_t *msg, size_t len, unsigned int nfds)
{
	struct fl_heap_worker_req req;

	if (!fl__heap_worker_req_ok(msg, len, nfds, &req))
		return;
	CHECK(req.version == FL_HEAP_WORKER_VERSION);
	if (req.type == FL_HEAP_WORKER_SETUP) {
		CHECK(req.recipe.how >= FL_HEAP_MAKE_MEMFD && req.recipe.how <= FL_HEAP_MAKE_MAX_);
		CHECK(nfds == (req.recipe.how == FL_HEAP_MAKE_DMA_HEAP ? 1u : 0u));
		CHECK(memchr(req.recipe.memfd_name, '\0', sizeof(req.recipe.memfd_name)) != NULL);
		CHECK(!strncmp(req.recipe.memfd_name, FL_HEAP_RECIPE_PREFIX,
			       strlen(FL_HEAP_RECIPE_PREFIX)));
		return;
	}
	CHECK(req.type == FL_HEAP_WORKER_WORK);
	CHECK(req.nclose == nfds && nfds <= FL_HEAP_WORKER_BATCH);
	CHECK(req.nmake <= FL_HEAP_WORKER_SIZES);
	for (uint32_t i = 0; i < req.nmake; i++)
		CHECK(req.make[i].size && req.make[i].count <= FL_HEAP_WORKER_MAX_COUNT);
}

static void reply(const uint8_t *msg, size_t len, unsigned int nfds)
{
	struct fl_heap_worker_made m;

	if (!fl__heap_worker_made_ok(msg, len, nfds, &m))
		return;
	CHECK(m.version == FL_HEAP_WORKER_VERSION && m.size);
	CHECK(m.n == nfds && m.n <= FL_HEAP_WORKER_BATCH);
	CHECK(m.n <= m.asked && m.asked <= FL_HEAP_WORKER_MAX_COUNT);
	CHECK(m.n == m.asked || m.error < 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int nfds;

	if (size < 1)
		return 0;
	nfds = (unsigned int)(data[0] >> 1) % 20;
	if (data[0] & 1)
		reply(data + 1, size - 1, nfds);
	else
		request(data + 1, size - 1, nfds);
	return 0;
}

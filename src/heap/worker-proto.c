/* SPDX-License-Identifier: MIT */
/*
 * The checks each end of the pool's worker protocol makes of what it
 * receives (worker-proto.h). Pure functions of the bytes and the number of
 * fds that came with them, fuzzed by tests/fuzz/fuzz-heap-worker.c.
 */
#include <string.h>

#include "worker-proto.h"

bool fl__heap_worker_req_ok(const void *buf, size_t len, unsigned int nfds,
			    struct fl_heap_worker_req *ret_req)
{
	struct fl_heap_worker_req req;

	if (len != sizeof(req))
		return false;
	memcpy(&req, buf, sizeof(req));
	if (req.version != FL_HEAP_WORKER_VERSION)
		return false;
	if (req.type == FL_HEAP_WORKER_SETUP) {
		if (req.recipe.how < FL_HEAP_MAKE_MEMFD || req.recipe.how > FL_HEAP_MAKE_MAX_ ||
		    nfds != (req.recipe.how == FL_HEAP_MAKE_DMA_HEAP ? 1u : 0u))
			return false;
		/* The memfd name: its prefix, and a NUL where there must be one. */
		if (memcmp(req.recipe.memfd_name, FL_HEAP_RECIPE_PREFIX,
			   strlen(FL_HEAP_RECIPE_PREFIX)) != 0)
			return false;
		req.recipe.memfd_name[FL_HEAP_RECIPE_NAME_MAX - 1] = '\0';
	} else if (req.type == FL_HEAP_WORKER_WORK) {
		/* The worker closes at most a batch: more would run past its fd array. */
		if (req.nclose != nfds || nfds > FL_HEAP_WORKER_BATCH ||
		    req.nmake > FL_HEAP_WORKER_SIZES)
			return false;
		for (uint32_t i = 0; i < req.nmake; i++)
			if (!req.make[i].size || req.make[i].count > FL_HEAP_WORKER_MAX_COUNT)
				return false;
	} else {
		return false;
	}
	*ret_req = req;
	return true;
}

bool fl__heap_worker_made_ok(const void *buf, size_t len, unsigned int nfds,
			     struct fl_heap_worker_made *ret_made)
{
	struct fl_heap_worker_made m;

	if (len != sizeof(m))
		return false;
	memcpy(&m, buf, sizeof(m));
	if (m.version != FL_HEAP_WORKER_VERSION || !m.size || m.n != nfds ||
	    m.n > FL_HEAP_WORKER_BATCH || m.n > m.asked || m.asked > FL_HEAP_WORKER_MAX_COUNT)
		return false;
	if (m.error > 0 || (m.error == 0 && m.n != m.asked))
		return false;
	*ret_made = m;
	return true;
}

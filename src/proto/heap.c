/* SPDX-License-Identifier: MIT */
/* The heap service's request bodies (docs/protocol.md, "The heap service"). */
#include <errno.h>
#include <string.h>

#include "protocol.h"

#define OP(op, name, size) [FL_OP_##op - FL_PROTO_HEAP_FIRST] = { name, size, 1 }

static const struct fl_proto_op_desc heap_ops[] = {
	OP(HEAP_ALLOC, "HEAP_ALLOC", sizeof(struct fl_msg_heap_alloc)),
	OP(HEAP_FREE, "HEAP_FREE", sizeof(struct fl_msg_heap_free)),
	OP(HEAP_INFO, "HEAP_INFO", sizeof(struct fl_msg_heap_info)),
};

static int heap_check(const struct fl_proto_request *r)
{
	switch (r->hdr.op) {
	case FL_OP_HEAP_ALLOC:
		/* The size and flags are the heap's to judge: those errors keep the client. */
		return memchr(r->u.heap_alloc.heap, '\0', FL_PROTO_NAME_LEN) &&
				       r->u.heap_alloc.heap[0]
			       ? 0
			       : -EINVAL;
	case FL_OP_HEAP_FREE:
		/*
		 * A buffer's fd, or a group: exactly one of them. The body
		 * says which, so this is the body's check, not the table's.
		 */
		if (r->u.heap_free.pad || (r->nfds == 1) != (r->u.heap_free.group == 0))
			return -EINVAL;
		return 0;
	default: /* HEAP_INFO */
		return memchr(r->u.heap_info.heap, '\0', FL_PROTO_NAME_LEN) ? 0 : -EINVAL;
	}
}

const struct fl_proto_service fl__proto_heap = {
	.name = "heap",
	.id = FL_PROTO_SVC_HEAP,
	.version = FL_PROTO_HEAP_VERSION,
	.first = FL_PROTO_HEAP_FIRST,
	.last = FL_PROTO_HEAP_FIRST + sizeof(heap_ops) / sizeof(heap_ops[0]) - 1,
	.ops = heap_ops,
	.check = heap_check,
};

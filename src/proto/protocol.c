/* SPDX-License-Identifier: MIT */
/*
 * Request decoding: the one place that turns untrusted bytes from a client
 * into a request the daemon acts on. It must accept exactly the packets
 * docs/protocol.md describes and nothing else; the fuzz targets
 * (tests/fuzz/fuzz-protocol.c, one build per service) hold it to that.
 *
 * This file is the framing and the core service (HELLO, PING); each other
 * service decodes its bodies in a file of its own (sync.c, heap.c,
 * observe.c), found by the op's range.
 */
#include <errno.h>
#include <string.h>

#include "protocol.h"

_Static_assert(sizeof(struct fl_msg_hdr) == 16, "wire layout");
_Static_assert(sizeof(struct fl_msg_timeline_create) == 40, "wire layout");
_Static_assert(sizeof(struct fl_msg_fence_create) == 40, "wire layout");
_Static_assert(sizeof(struct fl_msg_fence_merge) == 40, "wire layout");
_Static_assert(sizeof(struct fl_msg_fence_merge_into) == 40, "wire layout");
_Static_assert(sizeof(struct fl_msg_fence_new) == 48, "wire layout");
_Static_assert(sizeof(struct fl_msg_point) == 96, "wire layout");
_Static_assert(sizeof(struct fl_msg_info_reply) == 64, "wire layout");
_Static_assert(sizeof(struct fl_msg_timeline_sync) == 8, "wire layout");
_Static_assert(sizeof(struct fl_msg_wait_begin) == 16, "wire layout");
_Static_assert(sizeof(struct fl_msg_wait_end) == 16, "wire layout");
_Static_assert(sizeof(struct fl_msg_trace) == 8, "wire layout");
_Static_assert(sizeof(struct fl_msg_heap_alloc) == 48, "wire layout");
_Static_assert(sizeof(struct fl_msg_heap_free) == 8, "wire layout");
_Static_assert(sizeof(struct fl_msg_heap_info) == 32, "wire layout");
_Static_assert(sizeof(struct fl_msg_heap_alloc_reply) == 24, "wire layout");
_Static_assert(sizeof(struct fl_msg_heap_free_reply) == 16, "wire layout");
_Static_assert(sizeof(struct fl_msg_heap_info_reply) == 80, "wire layout");
_Static_assert(sizeof(struct fl_proto_shared_timeline) <= FL_PROTO_SHARED_SIZE, "fits its page");
_Static_assert(sizeof(struct fl_msg_hello) == 40, "wire layout");
_Static_assert(sizeof(struct fl_msg_hello_reply) == 64, "wire layout");
_Static_assert(sizeof(struct fl_msg_hdr) + 48 <= FL_PROTO_MAX_REQUEST, "largest request fits");

static const struct fl_proto_op_desc core_ops[] = {
	[FL_OP_HELLO - FL_PROTO_CORE_FIRST] = { "HELLO", sizeof(struct fl_msg_hello), 1 },
	[FL_OP_PING - FL_PROTO_CORE_FIRST] = { "PING", 0, 1 },
};

static int core_check(const struct fl_proto_request *r)
{
	/* Any service versions: a newer client names ones we do not know. */
	return r->hdr.op == FL_OP_HELLO && r->u.hello.flags ? -EINVAL : 0;
}

const struct fl_proto_service fl__proto_core = {
	.name = "core",
	.id = FL_PROTO_SVC_CORE,
	.version = FL_PROTO_VERSION,
	.first = FL_PROTO_CORE_FIRST,
	.last = FL_PROTO_CORE_FIRST + sizeof(core_ops) / sizeof(core_ops[0]) - 1,
	.ops = core_ops,
	.check = core_check,
};

const struct fl_proto_service *fl__proto_service_of(uint32_t op)
{
	/* By range, not by table: the ranges are fixed, their tables shorter. */
	if (op < FL_PROTO_CORE_FIRST || op > FL_PROTO_OBSERVE_LAST)
		return NULL;
	if (op <= FL_PROTO_CORE_LAST)
		return &fl__proto_core;
	if (op <= FL_PROTO_SYNC_LAST)
		return &fl__proto_sync;
	if (op <= FL_PROTO_HEAP_LAST)
		return &fl__proto_heap;
	return &fl__proto_observe;
}

static const struct fl_proto_op_desc *desc_of(uint32_t op, const struct fl_proto_service **ret)
{
	const struct fl_proto_service *s = fl__proto_service_of(op);

	if (!s || op < s->first || op > s->last || !s->ops[op - s->first].name)
		return NULL;
	if (ret)
		*ret = s;
	return &s->ops[op - s->first];
}

int fl__proto_request_size(uint32_t op)
{
	const struct fl_proto_op_desc *d = desc_of(op, NULL);

	return d ? d->size : -1;
}

int fl__proto_op_since(uint32_t op, uint32_t *ret_service)
{
	const struct fl_proto_service *s;
	const struct fl_proto_op_desc *d = desc_of(op, &s);

	if (!d)
		return -1;
	*ret_service = s->id;
	return s->id == FL_PROTO_SVC_CORE ? FL_PROTO_VERSION : d->since;
}

const char *fl__proto_op_name(uint32_t op)
{
	const struct fl_proto_op_desc *d = desc_of(op, NULL);

	return d ? d->name : "?";
}

int fl__proto_decode_request(const void *buf, size_t len, unsigned int nfds, int truncated,
			     struct fl_proto_request *ret)
{
	const unsigned char *p = buf;
	const struct fl_proto_service *s;
	const struct fl_proto_op_desc *d;
	uint32_t version;

	memset(ret, 0, sizeof(*ret));
	if (len < sizeof(ret->hdr))
		return -EPROTO;
	memcpy(&ret->hdr, p, sizeof(ret->hdr));
	ret->nfds = nfds;
	if (truncated || ret->hdr.len != len - sizeof(ret->hdr))
		return -EPROTO;
	d = desc_of(ret->hdr.op, &s);
	if (!d)
		return -EOPNOTSUPP;
	/*
	 * Another core version's HELLO may have another size: its version,
	 * the first word in all of them, is what the peer must hear about.
	 */
	if (ret->hdr.op == FL_OP_HELLO && ret->hdr.len >= sizeof(version)) {
		memcpy(&version, p + sizeof(ret->hdr), sizeof(version));
		if (version != FL_PROTO_VERSION)
			return -EPROTONOSUPPORT;
	}
	if (ret->hdr.len != d->size)
		return -EPROTO;
	memcpy(&ret->u, p + sizeof(ret->hdr), ret->hdr.len);
	return s->check(ret);
}

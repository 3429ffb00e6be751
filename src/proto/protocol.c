/* SPDX-License-Identifier: MIT */
/*
 * Request decoding: the one place that turns untrusted bytes from a client
 * into a request the daemon acts on. It must accept exactly the packets
 * docs/protocol.md describes and nothing else; the fuzz target
 * (tests/fuzz/fuzz-protocol.c) holds it to that.
 */
#include <errno.h>
#include <string.h>

#include "protocol.h"

_Static_assert(sizeof(struct fl_msg_hdr) == 16, "wire layout");
_Static_assert(sizeof(struct fl_msg_timeline_create) == 40, "wire layout");
_Static_assert(sizeof(struct fl_msg_fence_create) == 40, "wire layout");
_Static_assert(sizeof(struct fl_msg_fence_merge) == 40, "wire layout");
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
_Static_assert(sizeof(struct fl_msg_hdr) + 48 <= FL_PROTO_MAX_REQUEST, "largest request fits");

/* Mirrors of public flag values; protocol.h must not need the public headers. */
#define SW_SYNC_32BIT  1u
#define MERGE_WAIT_ALL 1u
#define MERGE_MAINLINE 2u

static const struct {
	const char *name;
	int size;
	int nfds;
} ops[] = {
	[FL_OP_HELLO] = { "HELLO", sizeof(struct fl_msg_hello), 0 },
	[FL_OP_TIMELINE_CREATE] = { "TIMELINE_CREATE", sizeof(struct fl_msg_timeline_create), 0 },
	[FL_OP_TIMELINE_INC] = { "TIMELINE_INC", sizeof(struct fl_msg_timeline_inc), 1 },
	[FL_OP_TIMELINE_GET_VALUE] = { "TIMELINE_GET_VALUE", 0, 1 },
	[FL_OP_FENCE_CREATE] = { "FENCE_CREATE", sizeof(struct fl_msg_fence_create), 3 },
	[FL_OP_FENCE_MERGE] = { "FENCE_MERGE", sizeof(struct fl_msg_fence_merge), 2 },
	[FL_OP_FENCE_INFO] = { "FENCE_INFO", sizeof(struct fl_msg_fence_info), 1 },
	[FL_OP_PING] = { "PING", 0, 0 },
	[FL_OP_TIMELINE_BIND] = { "TIMELINE_BIND", 0, 1 },
	[FL_OP_POOL_FILL] = { "POOL_FILL", sizeof(struct fl_msg_pool_fill), 0 },
	[FL_OP_FENCE_NEW] = { "FENCE_NEW", sizeof(struct fl_msg_fence_new), 0 },
	[FL_OP_TIMELINE_SIGNAL] = { "TIMELINE_SIGNAL", sizeof(struct fl_msg_timeline_signal), 0 },
	[FL_OP_TIMELINE_SYNC] = { "TIMELINE_SYNC", sizeof(struct fl_msg_timeline_sync), 0 },
	[FL_OP_FENCE_SET_DEADLINE] = { "FENCE_SET_DEADLINE",
				       sizeof(struct fl_msg_fence_set_deadline), 1 },
	[FL_OP_FENCE_GET_DEADLINE] = { "FENCE_GET_DEADLINE", 0, 1 },
	[FL_OP_FENCE_IMPORT] = { "FENCE_IMPORT", sizeof(struct fl_msg_fence_import), 1 },
	[FL_OP_DUMP] = { "DUMP", sizeof(struct fl_msg_dump), 0 },
	/* WAIT_BEGIN carries a second fd with FL_MSG_F_NOTIFY. */
	[FL_OP_WAIT_BEGIN] = { "WAIT_BEGIN", sizeof(struct fl_msg_wait_begin), 1 },
	[FL_OP_WAIT_END] = { "WAIT_END", sizeof(struct fl_msg_wait_end), 0 },
	[FL_OP_TRACE] = { "TRACE", sizeof(struct fl_msg_trace), 0 },
	[FL_OP_HEAP_ALLOC] = { "HEAP_ALLOC", sizeof(struct fl_msg_heap_alloc), 0 },
	/* One fd, or none to free a group (check_body()). */
	[FL_OP_HEAP_FREE] = { "HEAP_FREE", sizeof(struct fl_msg_heap_free), 1 },
	[FL_OP_HEAP_INFO] = { "HEAP_INFO", sizeof(struct fl_msg_heap_info), 0 },
	[FL_OP_FENCE_RETURN] = { "FENCE_RETURN", 0, 1 },
};

/* A number without an entry (none today) would be unknown too. */
static int known(uint32_t op)
{
	return op >= FL_OP_HELLO && op <= FL_OP_MAX_ && ops[op].name;
}

int fl__proto_request_nfds(uint32_t op)
{
	return known(op) ? ops[op].nfds : -1;
}

int fl__proto_request_size(uint32_t op)
{
	return known(op) ? ops[op].size : -1;
}

const char *fl__proto_op_name(uint32_t op)
{
	return known(op) ? ops[op].name : "?";
}

/* A name field must hold a NUL: the daemon never reads past the field. */
static int name_ok(const char name[FL_PROTO_NAME_LEN])
{
	return memchr(name, '\0', FL_PROTO_NAME_LEN) != NULL;
}

static int check_body(struct fl_proto_request *r)
{
	switch (r->hdr.op) {
	case FL_OP_HELLO:
		if (r->u.hello.flags)
			return -EINVAL;
		if (r->u.hello.version != FL_PROTO_VERSION)
			return -EPROTONOSUPPORT;
		return 0;
	case FL_OP_TIMELINE_CREATE:
		if (!name_ok(r->u.timeline_create.name) ||
		    (r->u.timeline_create.flags & ~SW_SYNC_32BIT) || r->u.timeline_create.pad)
			return -EINVAL;
		return 0;
	case FL_OP_FENCE_CREATE:
		return name_ok(r->u.fence_create.name) ? 0 : -EINVAL;
	case FL_OP_FENCE_IMPORT:
		return name_ok(r->u.fence_import.name) ? 0 : -EINVAL;
	case FL_OP_DUMP: {
		uint32_t f = r->u.dump.flags;
		uint32_t kinds =
			f & (FL_DUMP_FDS | FL_DUMP_DEADLOCKS | FL_DUMP_STATS | FL_DUMP_HEAPS);

		/* One view at a time; a pid only for FDS, RESET only for STATS. */
		if ((f & ~(FL_DUMP_JSON | FL_DUMP_FDS | FL_DUMP_DEADLOCKS | FL_DUMP_STATS |
			   FL_DUMP_RESET | FL_DUMP_HEAPS)) ||
		    (kinds & (kinds - 1)) || (r->u.dump.pid && !(f & FL_DUMP_FDS)) ||
		    ((f & FL_DUMP_RESET) && !(f & FL_DUMP_STATS)))
			return -EINVAL;
		return 0;
	}
	case FL_OP_WAIT_BEGIN:
		return r->u.wait_begin.timeout_ms < -1 ? -EINVAL : 0;
	case FL_OP_WAIT_END:
		return r->u.wait_end.pad || r->u.wait_end.result > 0 ? -EINVAL : 0;
	case FL_OP_TRACE:
		if (r->u.trace.cmd != FL_TRACE_START && r->u.trace.cmd != FL_TRACE_STOP)
			return -EINVAL;
		return r->u.trace.cmd == FL_TRACE_STOP && r->u.trace.max_events ? -EINVAL : 0;
	case FL_OP_HEAP_ALLOC:
		/* The size and flags are the heap's to judge: those errors keep the client. */
		return name_ok(r->u.heap_alloc.heap) && r->u.heap_alloc.heap[0] ? 0 : -EINVAL;
	case FL_OP_HEAP_FREE:
		/* A buffer's fd, or a group: exactly one of them. */
		if (r->u.heap_free.pad || (r->nfds == 1) != (r->u.heap_free.group == 0))
			return -EINVAL;
		return 0;
	case FL_OP_HEAP_INFO:
		return name_ok(r->u.heap_info.heap) ? 0 : -EINVAL;
	case FL_OP_FENCE_MERGE:
		if (!name_ok(r->u.fence_merge.name) ||
		    (r->u.fence_merge.flags & ~(MERGE_WAIT_ALL | MERGE_MAINLINE)) ||
		    r->u.fence_merge.pad)
			return -EINVAL;
		return 0;
	case FL_OP_FENCE_INFO:
		if (r->u.fence_info.max > FL_PROTO_MAX_INFO_POINTS)
			return -EINVAL;
		return 0;
	case FL_OP_POOL_FILL:
		if (!r->u.pool_fill.count || r->u.pool_fill.count > FL_PROTO_POOL_FILL_MAX ||
		    (r->u.pool_fill.flags & ~FL_POOL_F_SIGNAL_ENDS))
			return -EINVAL;
		return 0;
	case FL_OP_FENCE_NEW:
		return name_ok(r->u.fence_new.name) ? 0 : -EINVAL;
	case FL_OP_TIMELINE_SIGNAL:
		return r->u.timeline_signal.pad ? -EINVAL : 0;
	case FL_OP_TIMELINE_SYNC:
		return r->u.timeline_sync.pad ? -EINVAL : 0;
	default:
		/*
		 * TIMELINE_INC: any count is valid, like SW_SYNC_IOC_INC's u32;
		 * FENCE_SET_DEADLINE: any time.
		 */
		return 0;
	}
}

int fl__proto_decode_request(const void *buf, size_t len, unsigned int nfds, int truncated,
			     struct fl_proto_request *ret)
{
	const unsigned char *p = buf;
	uint32_t allowed_flags;

	memset(ret, 0, sizeof(*ret));
	if (len < sizeof(ret->hdr))
		return -EPROTO;
	memcpy(&ret->hdr, p, sizeof(ret->hdr));
	ret->nfds = nfds;
	if (truncated || ret->hdr.len != len - sizeof(ret->hdr))
		return -EPROTO;
	if (!known(ret->hdr.op))
		return -EOPNOTSUPP;
	if (ret->hdr.len != (uint32_t)ops[ret->hdr.op].size)
		return -EPROTO;
	allowed_flags = ret->hdr.op == FL_OP_FENCE_CREATE ? FL_MSG_F_REPLY
			: ret->hdr.op == FL_OP_FENCE_NEW  ? FL_MSG_F_REPLY | FL_MSG_F_KEPT
			: ret->hdr.op == FL_OP_PING	  ? FL_MSG_F_AFTER_CLOSES
			: ret->hdr.op == FL_OP_WAIT_BEGIN ? FL_MSG_F_NOTIFY
							  : 0;
	if (ret->hdr.flags & ~allowed_flags)
		return -EINVAL;
	/* WAIT_BEGIN brings one more with NOTIFY; HEAP_FREE none to free a group. */
	if (nfds != (unsigned int)ops[ret->hdr.op].nfds + !!(ret->hdr.flags & FL_MSG_F_NOTIFY) &&
	    !(ret->hdr.op == FL_OP_HEAP_FREE && nfds == 0))
		return -EINVAL;
	memcpy(&ret->u, p + sizeof(ret->hdr), ret->hdr.len);
	return check_body(ret);
}

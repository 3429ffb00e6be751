/* SPDX-License-Identifier: MIT */
/*
 * The sync service's request bodies (docs/protocol.md, "The sync service"):
 * timelines, fences, the fd pool and owned timelines.
 */
#include <errno.h>
#include <string.h>

#include "protocol.h"

/* Mirrors of public flag values; protocol.h must not need the public headers. */
#define SW_SYNC_32BIT			1u
#define MERGE_WAIT_ALL			1u
#define MERGE_MAINLINE			2u

#define OP_SINCE(op, name, size, since) [FL_OP_##op - FL_PROTO_SYNC_FIRST] = { name, size, since }
#define OP(op, name, size)		OP_SINCE(op, name, size, 1)

static const struct fl_proto_op_desc sync_ops[] = {
	OP(TIMELINE_CREATE, "TIMELINE_CREATE", sizeof(struct fl_msg_timeline_create)),
	OP(TIMELINE_INC, "TIMELINE_INC", sizeof(struct fl_msg_timeline_inc)),
	OP(TIMELINE_GET_VALUE, "TIMELINE_GET_VALUE", 0),
	OP(FENCE_CREATE, "FENCE_CREATE", sizeof(struct fl_msg_fence_create)),
	OP(FENCE_MERGE, "FENCE_MERGE", sizeof(struct fl_msg_fence_merge)),
	OP(FENCE_INFO, "FENCE_INFO", sizeof(struct fl_msg_fence_info)),
	OP(TIMELINE_BIND, "TIMELINE_BIND", 0),
	OP(POOL_FILL, "POOL_FILL", sizeof(struct fl_msg_pool_fill)),
	OP(FENCE_NEW, "FENCE_NEW", sizeof(struct fl_msg_fence_new)),
	OP(TIMELINE_SIGNAL, "TIMELINE_SIGNAL", sizeof(struct fl_msg_timeline_signal)),
	OP(TIMELINE_SYNC, "TIMELINE_SYNC", sizeof(struct fl_msg_timeline_sync)),
	OP(FENCE_SET_DEADLINE, "FENCE_SET_DEADLINE", sizeof(struct fl_msg_fence_set_deadline)),
	OP(FENCE_GET_DEADLINE, "FENCE_GET_DEADLINE", 0),
	OP(FENCE_IMPORT, "FENCE_IMPORT", sizeof(struct fl_msg_fence_import)),
	OP(FENCE_RETURN, "FENCE_RETURN", 0),
	OP_SINCE(TIMELINE_INC_AT, "TIMELINE_INC_AT", sizeof(struct fl_msg_timeline_inc_at), 2),
	OP_SINCE(TIMELINE_FAIL, "TIMELINE_FAIL", sizeof(struct fl_msg_timeline_fail), 3),
	OP_SINCE(FENCE_MERGE_INTO, "FENCE_MERGE_INTO", sizeof(struct fl_msg_fence_merge_into), 4),
	OP_SINCE(FENCE_HINT_DEADLINE, "FENCE_HINT_DEADLINE",
		 sizeof(struct fl_msg_fence_set_deadline), 4),
	OP_SINCE(KICK_ACK, "KICK_ACK", sizeof(struct fl_msg_kick_ack), 4),
};

/* A name field must hold a NUL: the daemon never reads past the field. */
static int name_ok(const char name[FL_PROTO_NAME_LEN])
{
	return memchr(name, '\0', FL_PROTO_NAME_LEN) != NULL;
}

static int sync_check(const struct fl_proto_request *r)
{
	switch (r->hdr.op) {
	case FL_OP_TIMELINE_CREATE:
		if (!name_ok(r->u.timeline_create.name) ||
		    (r->u.timeline_create.flags & ~SW_SYNC_32BIT) || r->u.timeline_create.pad)
			return -EINVAL;
		return 0;
	case FL_OP_FENCE_CREATE:
		return name_ok(r->u.fence_create.name) ? 0 : -EINVAL;
	case FL_OP_FENCE_IMPORT:
		return name_ok(r->u.fence_import.name) ? 0 : -EINVAL;
	case FL_OP_FENCE_MERGE:
		if (!name_ok(r->u.fence_merge.name) ||
		    (r->u.fence_merge.flags & ~(MERGE_WAIT_ALL | MERGE_MAINLINE)) ||
		    r->u.fence_merge.pad)
			return -EINVAL;
		return 0;
	case FL_OP_FENCE_MERGE_INTO:
		return name_ok(r->u.fence_merge_into.name) && !(r->u.fence_merge_into.flags &
								~(MERGE_WAIT_ALL | MERGE_MAINLINE))
			       ? 0
			       : -EINVAL;
	case FL_OP_FENCE_INFO:
		return r->u.fence_info.max > FL_PROTO_MAX_INFO_POINTS ? -EINVAL : 0;
	case FL_OP_POOL_FILL:
		if (!r->u.pool_fill.count || r->u.pool_fill.count > FL_PROTO_POOL_FILL_MAX ||
		    (r->u.pool_fill.flags & ~(FL_POOL_F_SIGNAL_ENDS | FL_POOL_F_INODES)))
			return -EINVAL;
		return 0;
	case FL_OP_FENCE_NEW:
		return name_ok(r->u.fence_new.name) ? 0 : -EINVAL;
	case FL_OP_TIMELINE_SIGNAL:
		return r->u.timeline_signal.pad ? -EINVAL : 0;
	case FL_OP_TIMELINE_SYNC:
		return r->u.timeline_sync.pad ? -EINVAL : 0;
	case FL_OP_TIMELINE_INC_AT:
		/* 0 is no time; whether it is after the clock is the daemon's to say. */
		return r->u.timeline_inc_at.timestamp_ns ? 0 : -EINVAL;
	case FL_OP_TIMELINE_FAIL:
		return r->u.timeline_fail.pad || r->u.timeline_fail.status >= 0 ||
				       r->u.timeline_fail.status < -4095
			       ? -EINVAL
			       : 0;
	default:
		/*
		 * TIMELINE_INC: any count is valid, like SW_SYNC_IOC_INC's u32;
		 * FENCE_SET_DEADLINE: any time; no other body.
		 */
		return 0;
	}
}

const struct fl_proto_service fl__proto_sync = {
	.name = "sync",
	.id = FL_PROTO_SVC_SYNC,
	.version = FL_PROTO_SYNC_VERSION,
	.first = FL_PROTO_SYNC_FIRST,
	.last = FL_PROTO_SYNC_FIRST + sizeof(sync_ops) / sizeof(sync_ops[0]) - 1,
	.ops = sync_ops,
	.check = sync_check,
};

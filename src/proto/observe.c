/* SPDX-License-Identifier: MIT */
/*
 * The observe service's request bodies (docs/protocol.md, "The observe
 * service"): dumps for fencectl, traces, and the waits the deadlock
 * detector sees.
 */
#include <errno.h>
#include <string.h>

#include "protocol.h"

#define OP_SINCE(op, name, size, since) \
	[FL_OP_##op - FL_PROTO_OBSERVE_FIRST] = { name, size, since }
#define OP(op, name, size) OP_SINCE(op, name, size, 1)

static const struct fl_proto_op_desc observe_ops[] = {
	OP(DUMP, "DUMP", sizeof(struct fl_msg_dump)),
	OP(WAIT_BEGIN, "WAIT_BEGIN", sizeof(struct fl_msg_wait_begin)),
	OP(WAIT_END, "WAIT_END", sizeof(struct fl_msg_wait_end)),
	OP(TRACE, "TRACE", sizeof(struct fl_msg_trace)),
	OP_SINCE(TRACE_EVENT, "TRACE_EVENT", sizeof(struct fl_msg_trace_event), 2),
};

static int observe_check(const struct fl_proto_request *r)
{
	switch (r->hdr.op) {
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
	case FL_OP_TRACE_EVENT: {
		const struct fl_msg_trace_event *e = &r->u.trace_event;

		if (!e->type || e->type > FL_PROTO_TRACE_EVENT_TYPES || !e->ts_ns || e->status > 0)
			return -EINVAL;
		return 0;
	}
	default: /* TRACE */
		if (r->u.trace.cmd != FL_TRACE_START && r->u.trace.cmd != FL_TRACE_STOP)
			return -EINVAL;
		return r->u.trace.cmd == FL_TRACE_STOP && r->u.trace.max_events ? -EINVAL : 0;
	}
}

const struct fl_proto_service fl__proto_observe = {
	.name = "observe",
	.id = FL_PROTO_SVC_OBSERVE,
	.version = FL_PROTO_OBSERVE_VERSION,
	.first = FL_PROTO_OBSERVE_FIRST,
	.last = FL_PROTO_OBSERVE_FIRST + sizeof(observe_ops) / sizeof(observe_ops[0]) - 1,
	.ops = observe_ops,
	.check = observe_check,
};

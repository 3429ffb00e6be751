/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the daemon's request decoder, fl__proto_decode_request(),
 * and the service decoders it hands bodies to.
 *
 * Input: byte 0 says how the packet arrived (bits 0-3 modulo 6: how many
 * fds came with it; bits 4-7 all set: MSG_TRUNC/MSG_CTRUNC was seen), the
 * rest is the packet.
 *
 * Built once for all ops (fuzz-protocol) and once per service with
 * FUZZ_FIRST/FUZZ_LAST set to its op range (fuzz-proto-sync, -heap,
 * -observe, -core): those fold every input's op into the range, so that
 * every input reaches that service's decoder, its known ops and the
 * numbers of its range it has no op for.
 *
 * Header flags and fd counts are not the decoder's to check (the service op
 * tables hold them: tests/server-service-test.c, daemon-hostile): the model
 * ignores them, except HEAP_FREE's, whose body says whether an fd comes.
 *
 * The decoder's answer is compared with a model written from the tables of
 * docs/protocol.md (sizes, fd counts and field offsets are literal numbers
 * here, not the decoder's table), so the target catches a decoder that
 * accepts a packet the protocol forbids, one that refuses a valid packet, an
 * errno outside the documented set, a decoded body that differs from the
 * bytes on the wire, and a layout that drifted from the document. Any
 * violation traps; ASan and UBSan catch reads past the packet.
 *
 * Built with libFuzzer under clang, and with fuzz-main.c (a replay and
 * fixed-seed mutation driver) under every compiler.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "protocol.h"

#define HDR 16

/* docs/protocol.md, "Requests": body size and fd count of each op. */
static const struct {
	uint32_t op;
	uint32_t size;
} spec[] = {
	{ 1, 40 }, /* HELLO */
	{ 2, 0 }, /* PING */
	{ 16, 40 }, /* TIMELINE_CREATE */
	{ 17, 8 }, /* TIMELINE_INC */
	{ 18, 0 }, /* TIMELINE_GET_VALUE */
	{ 19, 40 }, /* FENCE_CREATE */
	{ 20, 40 }, /* FENCE_MERGE */
	{ 21, 8 }, /* FENCE_INFO */
	{ 22, 0 }, /* TIMELINE_BIND */
	{ 23, 8 }, /* POOL_FILL */
	{ 24, 48 }, /* FENCE_NEW */
	{ 25, 16 }, /* TIMELINE_SIGNAL */
	{ 26, 8 }, /* TIMELINE_SYNC */
	{ 27, 8 }, /* FENCE_SET_DEADLINE */
	{ 28, 0 }, /* FENCE_GET_DEADLINE */
	{ 29, 32 }, /* FENCE_IMPORT */
	{ 30, 0 }, /* FENCE_RETURN */
	{ 31, 16 }, /* TIMELINE_INC_AT (sync 2) */
	{ 32, 8 }, /* TIMELINE_FAIL (sync 3) */
	{ 40, 40 }, /* FENCE_MERGE_INTO (sync 4) */
	{ 41, 8 }, /* FENCE_HINT_DEADLINE (sync 4) */
	{ 50, 8 }, /* KICK_ACK (sync 4) */
	{ 64, 48 }, /* HEAP_ALLOC */
	{ 65, 8 }, /* HEAP_FREE (1 fd, or none for a group) */
	{ 66, 32 }, /* HEAP_INFO */
	{ 96, 8 }, /* DUMP */
	{ 97, 16 }, /* WAIT_BEGIN */
	{ 98, 16 }, /* WAIT_END */
	{ 99, 8 }, /* TRACE */
	{ 100, 48 }, /* TRACE_EVENT (observe 2) */
};

/* The errnos a decode may fail with, one bit each. */
enum {
	E_PROTO = 1 << 0,
	E_OPNOTSUPP = 1 << 1,
	E_INVAL = 1 << 2,
	E_PROTONOSUPPORT = 1 << 3,
};

static int err_bit(int r)
{
	switch (r) {
	case -EPROTO:
		return E_PROTO;
	case -EOPNOTSUPP:
		return E_OPNOTSUPP;
	case -EINVAL:
		return E_INVAL;
	case -EPROTONOSUPPORT:
		return E_PROTONOSUPPORT;
	default:
		return 0;
	}
}

static uint16_t u16_at(const uint8_t *p, size_t off)
{
	return (uint16_t)(p[off] | p[off + 1] << 8);
}

static uint32_t u32_at(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static bool has_nul(const char *name)
{
	return memchr(name, '\0', FL_PROTO_NAME_LEN) != NULL;
}

static int spec_index(uint32_t op)
{
	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++)
		if (spec[i].op == op)
			return (int)i;
	return -1;
}

/*
 * Every rule of docs/protocol.md that @pkt breaks, as E_* bits: the decoder
 * must accept the packet if there are none, and otherwise fail with the
 * errno of one of them (the document does not fix which one is reported
 * first).
 */
static int violations(const uint8_t *pkt, size_t len, unsigned int nfds, bool truncated)
{
	uint32_t op, hlen;
	const uint8_t *b = pkt + HDR;
	int bad = 0, i;

	if (len < HDR)
		return E_PROTO;
	op = u32_at(pkt, 0);
	hlen = u32_at(pkt, 12);
	if (truncated || hlen != len - HDR)
		bad |= E_PROTO;
	i = spec_index(op);
	if (i < 0)
		return bad | E_OPNOTSUPP;
	/* HELLO of another core version, whatever its size: version 9's is 40 bytes. */
	if (op == 1 && len - HDR >= 4 && u32_at(b, 0) != 9)
		bad |= E_PROTONOSUPPORT;
	if (hlen != spec[i].size)
		bad |= E_PROTO;
	if (len - HDR != spec[i].size)
		return bad; /* no body to judge */
	switch (op) {
	case 1: /* HELLO: version, flags, services[8] (any versions) */
		if (u32_at(b, 4))
			bad |= E_INVAL;
		break;
	case 16: /* TIMELINE_CREATE: name[32], flags, pad */
		if (!memchr(b, 0, 32) || (u32_at(b, 32) & ~1u) || u32_at(b, 36))
			bad |= E_INVAL;
		break;
	case 19: /* FENCE_CREATE: value, name[32] */
		if (!memchr(b + 8, 0, 32))
			bad |= E_INVAL;
		break;
	case 20: /* FENCE_MERGE: name[32], flags (WAIT_ALL 1, MAINLINE 2), pad */
		if (!memchr(b, 0, 32) || (u32_at(b, 32) & ~3u) || u32_at(b, 36))
			bad |= E_INVAL;
		break;
	case 96: { /* DUMP: flags (JSON 1; at most one of FDS 2, DEADLOCKS 4, STATS 8,
		    HEAPS 32; RESET 16 with STATS), pid (only with FDS) */
		uint32_t f = u32_at(b, 0), views = f & 46u;

		if ((f & ~63u) || (views & (views - 1)) || (u32_at(b, 4) && !(f & 2u)) ||
		    ((f & 16u) && !(f & 8u)))
			bad |= E_INVAL;
		break;
	}
	case 97: /* WAIT_BEGIN: token, tid, timeout_ms >= -1 */
		if ((int32_t)u32_at(b, 12) < -1)
			bad |= E_INVAL;
		break;
	case 98: /* WAIT_END: token, result <= 0, pad */
		if ((int32_t)u32_at(b, 8) > 0 || u32_at(b, 12))
			bad |= E_INVAL;
		break;
	case 100: /* TRACE_EVENT: type 1..7 (u16), index, device, post, ts (not 0), a, b,
		     status <= 0, pid */
		if (!u16_at(b, 0) || u16_at(b, 0) > 7 || !u64_at(b, 16) ||
		    (int32_t)u32_at(b, 40) > 0)
			bad |= E_INVAL;
		break;
	case 99: /* TRACE: cmd (START 1, STOP 2), max_events (0 with STOP) */
		if ((u32_at(b, 0) != 1 && u32_at(b, 0) != 2) || (u32_at(b, 0) == 2 && u32_at(b, 4)))
			bad |= E_INVAL;
		break;
	case 64: /* HEAP_ALLOC: heap[32] (not empty), size, flags, group */
		if (!memchr(b, 0, 32) || !b[0])
			bad |= E_INVAL;
		break;
	case 65: /* HEAP_FREE: group, pad; an fd exactly when group is 0 */
		if (u32_at(b, 4) || (nfds == 1) != (u32_at(b, 0) == 0))
			bad |= E_INVAL;
		break;
	case 66: /* HEAP_INFO: heap[32] */
		if (!memchr(b, 0, 32))
			bad |= E_INVAL;
		break;
	case 29: /* FENCE_IMPORT: name[32] */
		if (!memchr(b, 0, 32))
			bad |= E_INVAL;
		break;
	case 21: /* FENCE_INFO: first, max */
		if (u32_at(b, 4) > 64)
			bad |= E_INVAL;
		break;
	case 23: /* POOL_FILL: count 1..32, flags (SIGNAL_ENDS = 1, INODES = 2) */
		if (u32_at(b, 0) < 1 || u32_at(b, 0) > 32 || (u32_at(b, 4) & ~3u))
			bad |= E_INVAL;
		break;
	case 24: /* FENCE_NEW: value, name[32], handle, slot */
		if (!memchr(b + 8, 0, 32))
			bad |= E_INVAL;
		break;
	case 25: /* TIMELINE_SIGNAL: count, handle, pad */
		if (u32_at(b, 12))
			bad |= E_INVAL;
		break;
	case 26: /* TIMELINE_SYNC: handle, pad */
		if (u32_at(b, 4))
			bad |= E_INVAL;
		break;
	case 31: /* TIMELINE_INC_AT: count, timestamp (not 0) */
		if (!u64_at(b, 8))
			bad |= E_INVAL;
		break;
	case 40: /* FENCE_MERGE_INTO: name[32], flags (WAIT_ALL 1, MAINLINE 2), slot */
		if (!memchr(b, 0, 32) || (u32_at(b, 32) & ~3u))
			bad |= E_INVAL;
		break;
	case 32: /* TIMELINE_FAIL: status -4095..-1, pad 0 */
		if ((int32_t)u32_at(b, 0) >= 0 || (int32_t)u32_at(b, 0) < -4095 || u32_at(b, 4))
			bad |= E_INVAL;
		break;
	default: /* TIMELINE_INC takes any count, FENCE_SET_DEADLINE any time; no other body */
		break;
	}
	return bad;
}

/* The decoded body must be the wire bytes, at the documented offsets. */
static void check_body(const struct fl_proto_request *q, const uint8_t *b)
{
	switch (q->hdr.op) {
	case FL_OP_HELLO:
		CHECK(q->u.hello.version == FL_PROTO_VERSION && q->u.hello.flags == 0);
		CHECK(q->u.hello.version == u32_at(b, 0));
		for (int k = 0; k < FL_PROTO_MAX_SERVICES; k++)
			CHECK(q->u.hello.services[k] == u32_at(b, 8 + 4 * (size_t)k));
		break;
	case FL_OP_TIMELINE_CREATE:
		CHECK(has_nul(q->u.timeline_create.name));
		CHECK(memcmp(q->u.timeline_create.name, b, 32) == 0);
		CHECK((q->u.timeline_create.flags & ~1u) == 0 && q->u.timeline_create.pad == 0);
		CHECK(q->u.timeline_create.flags == u32_at(b, 32));
		break;
	case FL_OP_TIMELINE_INC:
		CHECK(q->u.timeline_inc.count == u64_at(b, 0));
		break;
	case FL_OP_TIMELINE_FAIL:
		CHECK(q->u.timeline_fail.status == (int32_t)u32_at(b, 0) &&
		      q->u.timeline_fail.status < 0 && q->u.timeline_fail.pad == 0);
		break;
	case FL_OP_TIMELINE_INC_AT:
		CHECK(q->u.timeline_inc_at.count == u64_at(b, 0));
		CHECK(q->u.timeline_inc_at.timestamp_ns == u64_at(b, 8) &&
		      q->u.timeline_inc_at.timestamp_ns != 0);
		break;
	case FL_OP_FENCE_CREATE:
		CHECK(q->u.fence_create.value == u64_at(b, 0));
		CHECK(has_nul(q->u.fence_create.name));
		CHECK(memcmp(q->u.fence_create.name, b + 8, 32) == 0);
		break;
	case FL_OP_FENCE_MERGE:
		CHECK(has_nul(q->u.fence_merge.name));
		CHECK(memcmp(q->u.fence_merge.name, b, 32) == 0);
		CHECK((q->u.fence_merge.flags & ~3u) == 0 && q->u.fence_merge.pad == 0);
		CHECK(q->u.fence_merge.flags == u32_at(b, 32));
		break;
	case FL_OP_FENCE_MERGE_INTO:
		CHECK(has_nul(q->u.fence_merge_into.name));
		CHECK(memcmp(q->u.fence_merge_into.name, b, 32) == 0);
		CHECK((q->u.fence_merge_into.flags & ~3u) == 0);
		CHECK(q->u.fence_merge_into.flags == u32_at(b, 32) &&
		      q->u.fence_merge_into.slot == u32_at(b, 36));
		break;
	case FL_OP_FENCE_INFO:
		CHECK(q->u.fence_info.max <= FL_PROTO_MAX_INFO_POINTS);
		CHECK(q->u.fence_info.first == u32_at(b, 0) && q->u.fence_info.max == u32_at(b, 4));
		break;
	case FL_OP_POOL_FILL:
		CHECK(q->u.pool_fill.count >= 1 && q->u.pool_fill.count <= FL_PROTO_POOL_FILL_MAX);
		CHECK(q->u.pool_fill.count == u32_at(b, 0) && (q->u.pool_fill.flags & ~3u) == 0);
		CHECK(q->u.pool_fill.flags == u32_at(b, 4));
		break;
	case FL_OP_FENCE_NEW:
		CHECK(q->u.fence_new.value == u64_at(b, 0));
		CHECK(has_nul(q->u.fence_new.name));
		CHECK(memcmp(q->u.fence_new.name, b + 8, 32) == 0);
		CHECK(q->u.fence_new.handle == u32_at(b, 40) &&
		      q->u.fence_new.slot == u32_at(b, 44));
		break;
	case FL_OP_TIMELINE_SIGNAL:
		CHECK(q->u.timeline_signal.count == u64_at(b, 0));
		CHECK(q->u.timeline_signal.handle == u32_at(b, 8) && q->u.timeline_signal.pad == 0);
		break;
	case FL_OP_TIMELINE_SYNC:
		CHECK(q->u.timeline_sync.handle == u32_at(b, 0) && q->u.timeline_sync.pad == 0);
		break;
	case FL_OP_FENCE_SET_DEADLINE:
	case FL_OP_FENCE_HINT_DEADLINE:
		CHECK(q->u.fence_set_deadline.deadline_ns == u64_at(b, 0));
		break;
	case FL_OP_DUMP:
		CHECK((q->u.dump.flags & ~63u) == 0 &&
		      (q->u.dump.pid == 0 || (q->u.dump.flags & 2u)));
		CHECK(q->u.dump.flags == u32_at(b, 0) && q->u.dump.pid == u32_at(b, 4));
		break;
	case FL_OP_WAIT_BEGIN:
		CHECK(q->u.wait_begin.token == u64_at(b, 0) && q->u.wait_begin.tid == u32_at(b, 8));
		CHECK(q->u.wait_begin.timeout_ms >= -1);
		break;
	case FL_OP_WAIT_END:
		CHECK(q->u.wait_end.token == u64_at(b, 0) && q->u.wait_end.result <= 0);
		break;
	case FL_OP_TRACE_EVENT:
		CHECK(q->u.trace_event.type == u16_at(b, 0) &&
		      q->u.trace_event.index == u16_at(b, 2));
		CHECK(q->u.trace_event.device == u32_at(b, 4) &&
		      q->u.trace_event.post == u64_at(b, 8));
		CHECK(q->u.trace_event.ts_ns == u64_at(b, 16) &&
		      q->u.trace_event.a == u64_at(b, 24) && q->u.trace_event.b == u64_at(b, 32));
		CHECK(q->u.trace_event.status == (int32_t)u32_at(b, 40) &&
		      q->u.trace_event.pid == u32_at(b, 44));
		CHECK(q->u.trace_event.type >= 1 && q->u.trace_event.type <= 7 &&
		      q->u.trace_event.ts_ns && q->u.trace_event.status <= 0);
		break;
	case FL_OP_TRACE:
		CHECK(q->u.trace.cmd == 1 || q->u.trace.cmd == 2);
		break;
	case FL_OP_FENCE_IMPORT:
		CHECK(has_nul(q->u.fence_import.name));
		CHECK(memcmp(q->u.fence_import.name, b, 32) == 0);
		break;
	case FL_OP_HEAP_ALLOC:
		CHECK(has_nul(q->u.heap_alloc.heap) && q->u.heap_alloc.heap[0]);
		CHECK(memcmp(q->u.heap_alloc.heap, b, 32) == 0);
		CHECK(q->u.heap_alloc.size == u64_at(b, 32) &&
		      q->u.heap_alloc.flags == u32_at(b, 40) &&
		      q->u.heap_alloc.group == u32_at(b, 44));
		break;
	case FL_OP_HEAP_FREE:
		CHECK(q->u.heap_free.group == u32_at(b, 0) && q->u.heap_free.pad == 0);
		CHECK((q->nfds == 1) == (q->u.heap_free.group == 0));
		break;
	case FL_OP_HEAP_INFO:
		CHECK(has_nul(q->u.heap_info.heap));
		CHECK(memcmp(q->u.heap_info.heap, b, 32) == 0);
		break;
	case FL_OP_KICK_ACK:
		CHECK(q->u.kick_ack.count == u64_at(b, 0));
		break;
	case FL_OP_TIMELINE_GET_VALUE:
	case FL_OP_FENCE_RETURN:
	case FL_OP_TIMELINE_BIND:
	case FL_OP_FENCE_GET_DEADLINE:
	case FL_OP_PING:
		break;
	default:
		CHECK(0);
	}
}

/* The decoder's lookup functions agree with the document, once per process. */
static void check_tables(void)
{
	static bool done;
	static const uint32_t unknown[] = { 0,		3,	     15,
					    33,		63,	     67,
					    95,		101,	     127,
					    128,	255,	     256,
					    0x7fffffff, FL_OP_REPLY, FL_OP_REPLY | 1,
					    0xffffffff };
	/* docs/protocol.md, "Services and versions": the ranges and their ids. */
	static const struct {
		uint32_t first, last, id;
	} ranges[] = { { 1, 15, FL_PROTO_SVC_CORE },
		       { 16, 63, FL_PROTO_SVC_SYNC },
		       { 64, 95, FL_PROTO_SVC_HEAP },
		       { 96, 127, FL_PROTO_SVC_OBSERVE } };

	if (done)
		return;
	done = true;
	CHECK(FL_PROTO_VERSION == 9 && sizeof(struct fl_msg_hdr) == HDR);
	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
		uint32_t svc = 0;

		CHECK(fl__proto_request_size(spec[i].op) == (int)spec[i].size);
		CHECK(HDR + spec[i].size <= FL_PROTO_MAX_REQUEST);
		CHECK(strcmp(fl__proto_op_name(spec[i].op), "?") != 0);
		CHECK(fl__proto_op_since(spec[i].op, &svc) >= 1);
		for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++)
			if (spec[i].op >= ranges[k].first && spec[i].op <= ranges[k].last)
				CHECK(svc == ranges[k].id &&
				      fl__proto_service_of(spec[i].op)->id == ranges[k].id);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		uint32_t svc;

		CHECK(fl__proto_request_size(unknown[i]) == -1);
		CHECK(fl__proto_op_since(unknown[i], &svc) == -1);
		CHECK(strcmp(fl__proto_op_name(unknown[i]), "?") == 0);
	}
	CHECK(fl__proto_service_of(128) == NULL && fl__proto_service_of(0) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fl_proto_request q;
	unsigned int nfds;
	bool truncated;
	uint8_t *pkt;
	size_t len;
	int r, bad;

	check_tables();
	if (size < 1)
		return 0;
	nfds = (data[0] & 0x0f) % 6;
	truncated = (data[0] & 0xf0) == 0xf0;
	len = size - 1;
	/* A buffer of exactly the packet's size, so ASan sees any read past it. */
	pkt = malloc(len ? len : 1);
	if (!pkt)
		return 0;
	memcpy(pkt, data + 1, len);
#ifdef FUZZ_FIRST
	/* This build fuzzes one service's decoder: every op is one of its range. */
	if (len >= 4) {
		uint32_t op = u32_at(pkt, 0);

		op = FUZZ_FIRST + op % (FUZZ_LAST - FUZZ_FIRST + 1);
		memcpy(pkt, &op, sizeof(op));
	}
#endif

	/* Garbage in @ret: the decoder must set every field it promises. */
	memset(&q, 0xa5, sizeof(q));
	r = fl__proto_decode_request(pkt, len, nfds, truncated, &q);
	bad = violations(pkt, len, nfds, truncated);

	if (len < HDR) {
		struct fl_msg_hdr zero = { 0 };

		CHECK(memcmp(&q.hdr, &zero, sizeof(zero)) == 0);
	} else {
		/* On failure too: the daemon answers by this header's seq. */
		CHECK(memcmp(&q.hdr, pkt, HDR) == 0);
	}

	if (r == 0) {
		CHECK(bad == 0);
		CHECK(!truncated);
		CHECK(len >= HDR && (size_t)q.hdr.len + HDR == len);
		CHECK(fl__proto_request_size(q.hdr.op) == (int)q.hdr.len);
		CHECK(q.nfds == nfds);
		check_body(&q, pkt + HDR);
	} else {
		CHECK(err_bit(r) != 0);
		CHECK(bad & err_bit(r));
	}
	free(pkt);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the buffer queue protocol's decoder (src/proto/bufferqueue.c,
 * docs/protocol.md "Buffer queues"), both directions: the consumer's
 * fl__bqproto_decode_request() and the producer's fl__bqproto_decode_reply().
 *
 * Input: byte 0 is how many fds came with the packet (low 2 bits), whether
 * the transport saw a truncation (bit 7) and the direction (bit 6: a
 * packet the consumer sent); the rest is the packet. Requests' op numbers
 * are folded into 160..167 so that every input reaches the decoder; a
 * reply's op keeps its reply bit and is folded the same way.
 *
 * Requests are compared with a model written from docs/protocol.md's table
 * (literal sizes and offsets, not the decoder's); replies the decoder
 * accepts are checked against the limits the producer relies on (the slot,
 * the planes inside the buffer's size, the fd count the flags announce).
 * ASan and UBSan catch reads past the packet.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bufferqueue.h"
#include "fuzz.h"

#define HDR 16

static uint32_t u32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

static int32_t s32(const uint8_t *p, size_t off)
{
	return (int32_t)u32(p, off);
}

static int model_request(const uint8_t *p, size_t len, unsigned int nfds, bool trunc)
{
	const uint8_t *b = p + HDR;
	uint32_t op, flags, blen, n;

	if (trunc || len < HDR)
		return -EPROTO;
	op = u32(p, 0);
	flags = u32(p, 4);
	blen = u32(p, 12);
	if (blen != len - HDR)
		return -EPROTO;
	switch (op) {
	case 160: /* HELLO: version, flags, pid, pad */
		if (blen != 16)
			return -EINVAL;
		if (flags || u32(b, 4) || u32(b, 12) || nfds)
			return -EINVAL;
		return u32(b, 0) == 1 ? 0 : -EPROTONOSUPPORT;
	case 161: /* DEQUEUE: width, height, format, flags, usage[64] */
		if (blen != 80 || flags || u32(b, 12) || nfds)
			return -EINVAL;
		{
			bool nul = false;

			for (int i = 0; i < 64; i++) {
				if (!b[16 + i])
					nul = true;
				else if (nul)
					return -EINVAL; /* bytes after the NUL */
			}
			return nul ? 0 : -EINVAL;
		}
	case 162: /* QUEUE: slot, flags, desired u64, num_damage, pad, rects */
		if (blen < 24)
			return -EINVAL;
		n = u32(b, 16);
		if (n > 16 || blen != 24 + 16 * n)
			return -EINVAL;
		if (flags || (u32(b, 4) & ~1u) || u32(b, 20) || u32(b, 0) >= 32 ||
		    nfds != (u32(b, 4) & 1u))
			return -EINVAL;
		for (uint32_t i = 0; i < n; i++) {
			int32_t x = s32(b, 24 + 16 * i), y = s32(b, 28 + 16 * i);
			int32_t w = s32(b, 32 + 16 * i), h = s32(b, 36 + 16 * i);

			if (x < 0 || y < 0 || w <= 0 || h <= 0 || x > 16384 || y > 16384 ||
			    w > 16384 || h > 16384)
				return -EINVAL;
		}
		return 0;
	case 163: /* CANCEL: slot, flags */
		if (blen != 8 || flags || (u32(b, 4) & ~1u) || u32(b, 0) >= 32 ||
		    nfds != (u32(b, 4) & 1u))
			return -EINVAL;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static void check_reply(const uint8_t *p, size_t len, unsigned int nfds, bool trunc)
{
	struct fl_bqproto_reply r;
	int ret = fl__bqproto_decode_reply(p, len, nfds, trunc, &r);

	CHECK(ret == 0 || ret == -EPROTO);
	if (ret)
		return;
	CHECK(!trunc && len >= HDR && u32(p, 12) == len - HDR);
	if (r.hdr.op == FL_BQOP_SLOT_FREE) {
		CHECK(len == HDR && nfds == 0);
		return;
	}
	CHECK(r.hdr.op & FL_OP_REPLY);
	CHECK(r.status <= 0 && r.status >= -4095);
	if (r.status < 0) {
		CHECK(len == HDR + 8 && nfds == 0);
		return;
	}
	switch (r.hdr.op & ~FL_OP_REPLY) {
	case FL_BQOP_HELLO:
		CHECK(len == HDR + 56 && nfds == 0);
		CHECK(r.u.hello.num_slots >= 1 && r.u.hello.num_slots <= 32);
		CHECK(memchr(r.u.hello.name, 0, sizeof(r.u.hello.name)));
		break;
	case FL_BQOP_DEQUEUE: {
		const struct fl_bqmsg_dequeue_reply *d = &r.u.dequeue;

		CHECK(len == HDR + 72);
		CHECK(d->slot < 32 && d->num_planes >= 1 && d->num_planes <= 4);
		CHECK(d->width >= 1 && d->width <= 16384 && d->height >= 1 && d->height <= 16384);
		CHECK(nfds ==
		      (unsigned int)(!!(d->flags & FL_BQ_F_FENCE) + !!(d->flags & FL_BQ_F_BUFFER)));
		for (uint32_t i = 0; i < d->num_planes; i++)
			CHECK((uint64_t)d->offsets[i] + d->pitches[i] <= d->size && d->pitches[i]);
		break;
	}
	case FL_BQOP_QUEUE:
		CHECK(len == HDR + 16 && nfds == 0 && r.u.queue.frame_number);
		break;
	case FL_BQOP_CANCEL:
		CHECK(len == HDR + 8 && nfds == 0);
		break;
	default:
		CHECK(0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t pkt[1024];
	struct fl_bqproto_request q;
	unsigned int nfds;
	bool trunc, reply;
	size_t len;
	int want, got;

	if (size < 1)
		return 0;
	nfds = data[0] & 3u;
	trunc = data[0] & 0x80u;
	reply = data[0] & 0x40u;
	len = size - 1 > sizeof(pkt) ? sizeof(pkt) : size - 1;
	memcpy(pkt, data + 1, len);
	if (len >= 4) {
		uint32_t op = u32(pkt, 0);

		op = (op & FL_OP_REPLY) | (160u + (op & 7u));
		if (!reply)
			op &= ~FL_OP_REPLY;
		memcpy(pkt, &op, 4);
	}
	if (reply) {
		check_reply(pkt, len, nfds, trunc);
		return 0;
	}
	want = model_request(pkt, len, nfds, trunc);
	got = fl__bqproto_decode_request(pkt, len, nfds, trunc, &q);
	CHECK(got == want);
	if (got == 0)
		CHECK(q.hdr.op >= 160 && q.hdr.op <= 163);
	/* An op name for every number, "?" for none. */
	if (len >= 4)
		CHECK(fl__bqproto_op_name(u32(pkt, 0)) != NULL);
	return 0;
}

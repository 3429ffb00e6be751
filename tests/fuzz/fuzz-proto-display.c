/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the display service's request decoder,
 * fl__dproto_decode() (src/proto/display.c, docs/protocol.md "The display
 * service").
 *
 * Input: byte 0 is how many fds came with the packet (modulo 8, or 128
 * when its top bit is set), byte 1 how many were stashed by POST_FDS
 * before (modulo 128, doubled: up to 254) and whether the transport saw
 * MSG_TRUNC (bit 7); the rest is the packet. Every op number is folded
 * into the display range 128..159, so that every input reaches the decoder.
 *
 * The answer is compared with a model written from docs/protocol.md's
 * table (literal sizes and offsets, not the decoder's): a decoder that
 * accepts what the protocol forbids, refuses what it allows, answers with
 * an errno outside the documented set, or points a POST's arrays anywhere
 * but where the document puts them traps. ASan and UBSan catch reads past
 * the packet.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "display.h"
#include "fuzz.h"

#define HDR 16

static uint32_t u32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

/* docs/protocol.md: each op's body size (POST: its fixed part); -1: no op. */
static int body_size(uint32_t op)
{
	static const int size[] = { 8,	0,  16, 8,  8, 8, 8, 16, 16, 8, 76, 16,
				    16, 24, 0,	64, 8, 8, 8, 8,	 8,  8, 96, 0 };

	return op >= 128 && op <= 151 ? size[op - 128] : -1;
}

/* A wire buffer at @b: its fd count, or -1 if its fields break the rules. */
static int buffer_fds(const uint8_t *b)
{
	uint32_t planes = u32(b, 16), flags = u32(b, 20);

	if (planes > 4 || (flags & ~1u))
		return -1;
	return (int)(planes + (flags & 1u));
}

static int model(const uint8_t *p, size_t len, unsigned int nfds, bool trunc, unsigned int stashed)
{
	const uint8_t *b = p + HDR;
	uint32_t op, flags, blen;
	int size;

	if (len < HDR)
		return -EPROTO;
	op = u32(p, 0);
	flags = u32(p, 4);
	blen = u32(p, 12);
	if (trunc || blen != len - HDR)
		return -EPROTO;
	size = body_size(op);
	if (size < 0)
		return -EOPNOTSUPP;
	if (op == 141 ? blen < 24 : blen != (uint32_t)size)
		return -EPROTO;
	if (flags)
		return -EINVAL;
	switch (op) {
	case 128: /* DHELLO */
		if (!u32(b, 0))
			return -EPROTONOSUPPORT;
		return u32(b, 4) || nfds ? -EINVAL : 0;
	case 141: { /* POST */
		uint32_t n_intfs = u32(b, 12), n_bufs = u32(b, 16), custom = u32(b, 20);
		unsigned int fds = 0;

		if (n_intfs > 1024 || n_bufs > 56 || custom > 4096)
			return -EINVAL;
		/* flag bit 31: 64 bytes of layer per buffer after the custom data; bit 30: 24 of writeback */
		uint32_t lay = u32(b, 4) >> 31 ? 64 * n_bufs : 0, wb = u32(b, 4) >> 30 & 1;

		if (blen != 24 + 4 * n_intfs + 56 * n_bufs + custom + lay + 24 * wb)
			return -EPROTO;
		if (wb && u32(b, 24 + 4 * n_intfs + 56 * n_bufs + custom + lay + 20))
			return -EINVAL;
		fds += wb;
		for (uint32_t i = 0; i < n_bufs; i++) {
			int k = buffer_fds(b + 24 + 4 * n_intfs + 56 * i);

			if (k < 0)
				return -EINVAL;
			fds += (unsigned int)k;
		}
		if ((u32(b, 4) & ~(1u | 3u << 30)) || u32(b, 8) > 2)
			return -EINVAL;
		return fds == nfds + stashed ? 0 : -EINVAL;
	}
	case 142: /* POST_FDS */
		return nfds >= 1 && nfds <= 128 && stashed + nfds <= 281 ? 0 : -EINVAL;
	case 143: { /* SIMPLE_POST */
		int k = buffer_fds(b + 8);

		if (k < 0 || u32(b, 4) > 2)
			return -EINVAL;
		return (unsigned int)k == nfds && !stashed ? 0 : -EINVAL;
	}
	case 150: /* SET_SOURCE: type 0 to 2, reserved 0; a STREAM's one fd, no other */
		if (u32(b, 4) > 2 || u32(b, 20) || u32(b, 24) || u32(b, 28))
			return -EINVAL;
		return nfds == (u32(b, 4) == 2) ? 0 : -EINVAL;
	}
	if (nfds)
		return -EINVAL;
	switch (op) {
	case 130: /* OPEN */
		return u32(b, 12) || u32(b, 0) > 2 || (u32(b, 0) == 0 && u32(b, 8)) ? -EINVAL : 0;
	case 131:
	case 132:
	case 133:
	case 134:
	case 145:
	case 148:
	case 149: /* the handle ops */
		return u32(b, 4) ? -EINVAL : 0;
	case 135:
	case 136: /* ATTACH, DETACH */
		return u32(b, 12) ? -EINVAL : 0;
	case 138: /* SET_MODE */
		return u32(b, 4) ? -EINVAL : 0;
	case 139: /* SET_EVENT */
		return u32(b, 12) || u32(b, 8) > 1 ? -EINVAL : 0;
	case 144: /* SET_CONNECTED */
		return u32(b, 4) > 1 ? -EINVAL : 0;
	case 147: /* DUMP: flags JSON or 0, pad 0 */
		return (u32(b, 0) & ~1u) || u32(b, 4) ? -EINVAL : 0;
	default: /* DEVICES, BLANK, SIMPLE_ALLOC, CAPTURE, DRIVERS */
		return 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pkt[FL_DPROTO_MAX_REQUEST + 64];
	struct fl_dproto_request q;
	unsigned int nfds, stashed;
	bool trunc;
	size_t len;
	int want, got;

	if (size < 2)
		return 0;
	nfds = data[0] & 0x80 ? 128 : data[0] % 8;
	stashed = (data[1] & 0x7f) * 2u;
	trunc = data[1] & 0x80;
	len = size - 2;
	if (len > sizeof(pkt))
		len = sizeof(pkt);
	memcpy(pkt, data + 2, len);
	if (len >= 4) {
		uint32_t op = u32(pkt, 0);

		op = 128 + op % 32;
		memcpy(pkt, &op, 4);
	}
	want = model(pkt, len, nfds, trunc, stashed);
	got = fl__dproto_decode(pkt, len, nfds, trunc, stashed, &q);
	CHECK(got == want);
	if (got == 0) {
		CHECK(q.hdr.op == u32(pkt, 0));
		CHECK(q.nfds == nfds);
		if (q.hdr.op == FL_DOP_POST) {
			CHECK(q.intfs == pkt + HDR + 24);
			CHECK(q.bufs == q.intfs + 4 * (size_t)u32(pkt, HDR + 12));
			CHECK(q.custom == q.bufs + 56 * (size_t)u32(pkt, HDR + 16));
			CHECK(q.custom + u32(pkt, HDR + 20) +
				      (q.layers ? 64 * (size_t)u32(pkt, HDR + 16) : 0) +
				      (q.writeback ? 24 : 0) ==
			      pkt + len);
			CHECK(!q.writeback == !(u32(pkt, HDR + 4) >> 30 & 1));
			CHECK(!q.layers == !(u32(pkt, HDR + 4) >> 31));
			CHECK(q.post_fds == nfds + stashed);
		}
		if (q.hdr.op == FL_DOP_SIMPLE_POST)
			CHECK(q.post_fds == nfds);
		if (q.hdr.op != FL_DOP_POST && body_size(q.hdr.op) > 0)
			CHECK(!memcmp(&q.u, pkt + HDR, (size_t)body_size(q.hdr.op)));
	}
	return 0;
}

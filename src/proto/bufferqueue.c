// SPDX-License-Identifier: MIT
/*
 * The buffer queue protocol's one decoder (bufferqueue.h): every packet
 * either side reads passes here first, so that the rules of
 * docs/protocol.md "Buffer queues" have one home and one fuzz target
 * (tests/fuzz/fuzz-proto-bufferqueue.c).
 */
#include <errno.h>
#include <string.h>

#include "bufferqueue.h"

#define HDR sizeof(struct fl_msg_hdr)

const char *fl__bqproto_op_name(uint32_t op)
{
	static const char *const names[] = { "HELLO", "DEQUEUE", "QUEUE", "CANCEL", "SLOT_FREE" };

	op &= ~FL_OP_REPLY;
	if (op < FL_BQPROTO_FIRST || op > FL_BQPROTO_LAST)
		return "?";
	return names[op - FL_BQPROTO_FIRST];
}

static bool string_ok(const char *s, size_t cap)
{
	const char *nul = memchr(s, '\0', cap);
	size_t i;

	if (!nul)
		return false;
	/* NUL padding, so that two equal usages are equal bytes too. */
	for (i = (size_t)(nul - s); i < cap; i++)
		if (s[i])
			return false;
	return true;
}

static unsigned int fence_fds(uint32_t flags)
{
	return flags & FL_BQ_F_FENCE ? 1u : 0u;
}

int fl__bqproto_decode_request(const void *buf, size_t len, unsigned int nfds, bool truncated,
			       struct fl_bqproto_request *ret)
{
	const unsigned char *p = buf;
	struct fl_bqproto_request q;
	size_t blen;

	if (!buf || truncated || len < HDR)
		return -EPROTO;
	memset(&q, 0, sizeof(q));
	memcpy(&q.hdr, p, HDR);
	blen = len - HDR;
	if (q.hdr.len != blen)
		return -EPROTO;
	switch (q.hdr.op) {
	case FL_BQOP_HELLO:
		if (blen != sizeof(q.u.hello))
			return -EINVAL;
		memcpy(&q.u.hello, p + HDR, blen);
		if (q.hdr.flags || q.u.hello.flags || q.u.hello.pad || nfds)
			return -EINVAL;
		if (q.u.hello.version != FL_BQPROTO_VERSION)
			return -EPROTONOSUPPORT;
		break;
	case FL_BQOP_DEQUEUE:
		if (blen != sizeof(q.u.dequeue))
			return -EINVAL;
		memcpy(&q.u.dequeue, p + HDR, blen);
		if (q.hdr.flags || q.u.dequeue.flags || nfds ||
		    !string_ok(q.u.dequeue.usage, sizeof(q.u.dequeue.usage)))
			return -EINVAL;
		break;
	case FL_BQOP_QUEUE:
		if (blen < sizeof(q.u.queue.q))
			return -EINVAL;
		memcpy(&q.u.queue.q, p + HDR, sizeof(q.u.queue.q));
		if (q.u.queue.q.num_damage > FL_BQ_MAX_DAMAGE ||
		    blen != sizeof(q.u.queue.q) +
				    q.u.queue.q.num_damage * sizeof(struct fl_bqmsg_rect))
			return -EINVAL;
		memcpy(q.u.queue.rects, p + HDR + sizeof(q.u.queue.q), blen - sizeof(q.u.queue.q));
		if (q.hdr.flags || (q.u.queue.q.flags & ~FL_BQ_F_FENCE) || q.u.queue.q.pad ||
		    q.u.queue.q.slot >= FL_BQ_MAX_SLOTS || nfds != fence_fds(q.u.queue.q.flags))
			return -EINVAL;
		for (uint32_t i = 0; i < q.u.queue.q.num_damage; i++) {
			const struct fl_bqmsg_rect *r = &q.u.queue.rects[i];

			if (r->x < 0 || r->y < 0 || r->width <= 0 || r->height <= 0 ||
			    r->width > (int32_t)FL_BQ_MAX_DIM ||
			    r->height > (int32_t)FL_BQ_MAX_DIM || r->x > (int32_t)FL_BQ_MAX_DIM ||
			    r->y > (int32_t)FL_BQ_MAX_DIM)
				return -EINVAL;
		}
		break;
	case FL_BQOP_CANCEL:
		if (blen != sizeof(q.u.cancel))
			return -EINVAL;
		memcpy(&q.u.cancel, p + HDR, blen);
		if (q.hdr.flags || (q.u.cancel.flags & ~FL_BQ_F_FENCE) ||
		    q.u.cancel.slot >= FL_BQ_MAX_SLOTS || nfds != fence_fds(q.u.cancel.flags))
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	*ret = q;
	return 0;
}

static bool layout_ok(const struct fl_bqmsg_dequeue_reply *d)
{
	uint64_t end;

	if (d->slot >= FL_BQ_MAX_SLOTS || !d->width || !d->height || d->width > FL_BQ_MAX_DIM ||
	    d->height > FL_BQ_MAX_DIM || !d->num_planes || d->num_planes > FL_BQ_MAX_PLANES ||
	    !d->size)
		return false;
	for (uint32_t i = 0; i < FL_BQ_MAX_PLANES; i++) {
		if (i >= d->num_planes) {
			if (d->offsets[i] || d->pitches[i])
				return false;
			continue;
		}
		/* A plane holds at most height rows of its pitch. */
		end = (uint64_t)d->offsets[i] + (uint64_t)d->pitches[i];
		if (!d->pitches[i] || end > d->size)
			return false;
	}
	return true;
}

int fl__bqproto_decode_reply(const void *buf, size_t len, unsigned int nfds, bool truncated,
			     struct fl_bqproto_reply *ret)
{
	const unsigned char *p = buf;
	struct fl_bqproto_reply r;
	struct fl_msg_reply st;
	size_t blen, want;
	uint32_t op;

	if (!buf || truncated || len < HDR)
		return -EPROTO;
	memset(&r, 0, sizeof(r));
	memcpy(&r.hdr, p, HDR);
	blen = len - HDR;
	if (r.hdr.len != blen || r.hdr.flags)
		return -EPROTO;
	if (r.hdr.op == FL_BQOP_SLOT_FREE) {
		if (blen || nfds || r.hdr.seq)
			return -EPROTO;
		*ret = r;
		return 0;
	}
	if (!(r.hdr.op & FL_OP_REPLY))
		return -EPROTO;
	op = r.hdr.op & ~FL_OP_REPLY;
	if (op < FL_BQOP_HELLO || op > FL_BQOP_CANCEL || blen < sizeof(st))
		return -EPROTO;
	memcpy(&st, p + HDR, sizeof(st));
	if (st.pad || st.status > 0 || st.status < -4095)
		return -EPROTO;
	r.status = st.status;
	if (st.status < 0) {
		if (blen != sizeof(st) || nfds)
			return -EPROTO;
		*ret = r;
		return 0;
	}
	switch (op) {
	case FL_BQOP_HELLO:
		want = sizeof(r.u.hello);
		break;
	case FL_BQOP_DEQUEUE:
		want = sizeof(r.u.dequeue);
		break;
	case FL_BQOP_QUEUE:
		want = sizeof(r.u.queue);
		break;
	default:
		want = sizeof(st);
		break;
	}
	if (blen != want)
		return -EPROTO;
	memcpy(&r.u, p + HDR, want);
	switch (op) {
	case FL_BQOP_HELLO:
		if (r.u.hello.version != FL_BQPROTO_VERSION || !r.u.hello.num_slots ||
		    r.u.hello.num_slots > FL_BQ_MAX_SLOTS || r.u.hello.mode > 1 ||
		    r.u.hello.flags || !memchr(r.u.hello.name, '\0', sizeof(r.u.hello.name)) ||
		    nfds)
			return -EPROTO;
		break;
	case FL_BQOP_DEQUEUE: {
		uint32_t f = r.u.dequeue.flags;

		if ((f & ~(FL_BQ_F_FENCE | FL_BQ_F_BUFFER | FL_BQ_F_REALLOCATED)) ||
		    ((f & FL_BQ_F_REALLOCATED) && !(f & FL_BQ_F_BUFFER)) ||
		    nfds != fence_fds(f) + (f & FL_BQ_F_BUFFER ? 1u : 0u) ||
		    !layout_ok(&r.u.dequeue))
			return -EPROTO;
		break;
	}
	case FL_BQOP_QUEUE:
		if (!r.u.queue.frame_number || nfds)
			return -EPROTO;
		break;
	default:
		if (nfds)
			return -EPROTO;
		break;
	}
	*ret = r;
	return 0;
}

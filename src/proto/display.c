/* SPDX-License-Identifier: MIT */
/*
 * The display protocol's decoder (display.h): the one place that turns a
 * display client's bytes into a request fl-displayd acts on. It checks the
 * framing, each body's size and the fixed rules of its fields (pads,
 * flags, bounds, the fd count the buffers name); what the model and the
 * driver judge (ids, states, formats, sizes) is theirs. Fuzzed by
 * tests/fuzz/fuzz-proto-display.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "display.h"

_Static_assert(sizeof(struct fl_display_mode) == 68, "drm_mode_modeinfo");
_Static_assert(sizeof(struct fl_dmsg_buffer) == 56, "wire layout");
_Static_assert(sizeof(struct fl_dmsg_post) == 24, "wire layout");
_Static_assert(sizeof(struct fl_dmsg_simple_post) == 64, "wire layout");
_Static_assert(sizeof(struct fl_dmsg_set_mode) == 76, "wire layout");
_Static_assert(sizeof(struct fl_display_layer) == 64, "wire layout");
_Static_assert(sizeof(struct fl_dmsg_writeback) == 24, "wire layout");
_Static_assert(sizeof(struct fl_dmsg_set_source) == 96, "wire layout");
_Static_assert(sizeof(struct fl_msg_hdr) + sizeof(struct fl_dmsg_post) +
			       FL_DISPLAY_MAX_INTERFACES * 4 +
			       FL_DISPLAY_MAX_BUFFERS * sizeof(struct fl_dmsg_buffer) +
			       FL_DISPLAY_MAX_CUSTOM_DATA +
			       FL_DISPLAY_MAX_BUFFERS * sizeof(struct fl_display_layer) +
			       sizeof(struct fl_dmsg_writeback) <=
		       FL_DPROTO_MAX_REQUEST,
	       "the largest POST fits");

static const struct {
	const char *name;
	int size; /* the body's (the fixed part's, for POST) */
} ops[] = {
	[FL_DOP_HELLO - FL_DPROTO_FIRST] = { "DHELLO", sizeof(struct fl_dmsg_hello) },
	[FL_DOP_DEVICES - FL_DPROTO_FIRST] = { "DEVICES", 0 },
	[FL_DOP_OPEN - FL_DPROTO_FIRST] = { "OPEN", sizeof(struct fl_dmsg_open) },
	[FL_DOP_CLOSE - FL_DPROTO_FIRST] = { "CLOSE", sizeof(struct fl_dmsg_handle) },
	[FL_DOP_DEVICE_DATA - FL_DPROTO_FIRST] = { "DEVICE_DATA", sizeof(struct fl_dmsg_handle) },
	[FL_DOP_INTERFACE_DATA -
		FL_DPROTO_FIRST] = { "INTERFACE_DATA", sizeof(struct fl_dmsg_handle) },
	[FL_DOP_ENGINE_DATA - FL_DPROTO_FIRST] = { "ENGINE_DATA", sizeof(struct fl_dmsg_handle) },
	[FL_DOP_ATTACH - FL_DPROTO_FIRST] = { "ATTACH", sizeof(struct fl_dmsg_attach) },
	[FL_DOP_DETACH - FL_DPROTO_FIRST] = { "DETACH", sizeof(struct fl_dmsg_attach) },
	[FL_DOP_BLANK - FL_DPROTO_FIRST] = { "BLANK", sizeof(struct fl_dmsg_blank) },
	[FL_DOP_SET_MODE - FL_DPROTO_FIRST] = { "SET_MODE", sizeof(struct fl_dmsg_set_mode) },
	[FL_DOP_SET_EVENT - FL_DPROTO_FIRST] = { "SET_EVENT", sizeof(struct fl_dmsg_set_event) },
	[FL_DOP_SIMPLE_ALLOC -
		FL_DPROTO_FIRST] = { "SIMPLE_ALLOC", sizeof(struct fl_dmsg_simple_alloc) },
	[FL_DOP_POST - FL_DPROTO_FIRST] = { "POST", sizeof(struct fl_dmsg_post) },
	[FL_DOP_POST_FDS - FL_DPROTO_FIRST] = { "POST_FDS", 0 },
	[FL_DOP_SIMPLE_POST -
		FL_DPROTO_FIRST] = { "SIMPLE_POST", sizeof(struct fl_dmsg_simple_post) },
	[FL_DOP_SET_CONNECTED -
		FL_DPROTO_FIRST] = { "SET_CONNECTED", sizeof(struct fl_dmsg_set_connected) },
	[FL_DOP_STATS - FL_DPROTO_FIRST] = { "STATS", sizeof(struct fl_dmsg_handle) },
	[FL_DOP_CAPTURE - FL_DPROTO_FIRST] = { "CAPTURE", sizeof(struct fl_dmsg_capture) },
	[FL_DOP_DUMP - FL_DPROTO_FIRST] = { "DUMP", sizeof(struct fl_dmsg_dump) },
	[FL_DOP_DEVICE_INFO - FL_DPROTO_FIRST] = { "DEVICE_INFO", sizeof(struct fl_dmsg_handle) },
	[FL_DOP_INTERFACE_TYPE_NAME -
		FL_DPROTO_FIRST] = { "INTERFACE_TYPE_NAME", sizeof(struct fl_dmsg_handle) },
	[FL_DOP_SET_SOURCE - FL_DPROTO_FIRST] = { "SET_SOURCE", sizeof(struct fl_dmsg_set_source) },
	[FL_DOP_DRIVERS - FL_DPROTO_FIRST] = { "DRIVERS", 0 },
};

const char *fl__dproto_op_name(uint32_t op)
{
	if (op < FL_DPROTO_FIRST || op > FL_DPROTO_LAST || !ops[op - FL_DPROTO_FIRST].name)
		return "?";
	return ops[op - FL_DPROTO_FIRST].name;
}

unsigned int fl__dproto_buffer_fds(const struct fl_dmsg_buffer *b)
{
	return b->n_planes + !!(b->flags & FL_DBUF_ACQUIRE);
}

static int check_buffer(const struct fl_dmsg_buffer *b)
{
	/* ADF's -EINVAL for more than 4 planes; the other fields are the model's. */
	if (b->n_planes > FL_DISPLAY_MAX_PLANES || (b->flags & ~FL_DBUF_ACQUIRE))
		return -EINVAL;
	return 0;
}

static bool fence_type_ok(uint32_t t)
{
	return t <= FL_DISPLAY_FENCE_RELEASE;
}

/* POST's arrays: sizes from its fixed part, the fds its buffers name. */
static int decode_post(struct fl_dproto_request *r, const unsigned char *body, size_t len,
		       unsigned int stashed)
{
	const struct fl_dmsg_post *p = &r->u.post;
	size_t need = sizeof(*p);
	unsigned int fds = 0;

	if (p->n_intfs > FL_DISPLAY_MAX_INTERFACES || p->n_bufs > FL_DISPLAY_MAX_BUFFERS ||
	    p->custom_size > FL_DISPLAY_MAX_CUSTOM_DATA)
		return -EINVAL;
	need += (size_t)p->n_intfs * 4 + (size_t)p->n_bufs * sizeof(struct fl_dmsg_buffer) +
		p->custom_size;
	if (p->flags & FL_DPOST_LAYERS)
		need += (size_t)p->n_bufs * sizeof(struct fl_display_layer);
	if (p->flags & FL_DPOST_WRITEBACK)
		need += sizeof(struct fl_dmsg_writeback);
	if (len != need)
		return -EPROTO;
	r->intfs = body + sizeof(*p);
	r->bufs = r->intfs + (size_t)p->n_intfs * 4;
	r->custom = r->bufs + (size_t)p->n_bufs * sizeof(struct fl_dmsg_buffer);
	/* The layers' fields are the service's to judge, with a message naming the buffer. */
	r->layers = p->flags & FL_DPOST_LAYERS ? r->custom + p->custom_size : NULL;
	r->writeback =
		p->flags & FL_DPOST_WRITEBACK
			? r->custom + p->custom_size +
				  (r->layers ? (size_t)p->n_bufs * sizeof(struct fl_display_layer)
					     : 0)
			: NULL;
	if (r->writeback) {
		struct fl_dmsg_writeback w;

		memcpy(&w, r->writeback, sizeof(w));
		if (w.pad)
			return -EINVAL;
		fds++; /* the destination's */
	}
	for (uint32_t i = 0; i < p->n_bufs; i++) {
		struct fl_dmsg_buffer b;

		memcpy(&b, r->bufs + i * sizeof(b), sizeof(b));
		if (check_buffer(&b))
			return -EINVAL;
		fds += fl__dproto_buffer_fds(&b);
	}
	if (p->flags & ~(FL_DISPLAY_POST_TEST_ONLY | FL_DPOST_LAYERS | FL_DPOST_WRITEBACK) ||
	    !fence_type_ok(p->fence_type))
		return -EINVAL;
	if (fds != r->nfds + stashed)
		return -EINVAL;
	r->post_fds = fds;
	return 0;
}

int fl__dproto_decode(const void *buf, size_t len, unsigned int nfds, int truncated,
		      unsigned int stashed, struct fl_dproto_request *ret)
{
	const unsigned char *p = buf;
	size_t body;
	uint32_t op;
	int size;

	memset(ret, 0, sizeof(*ret));
	if (len < sizeof(ret->hdr))
		return -EPROTO;
	memcpy(&ret->hdr, p, sizeof(ret->hdr));
	ret->nfds = nfds;
	body = len - sizeof(ret->hdr);
	if (truncated || ret->hdr.len != body)
		return -EPROTO;
	op = ret->hdr.op;
	/* The table may have holes: numbers kept for ops this build does not have. */
	if (op < FL_DPROTO_FIRST || op > FL_DPROTO_LAST || !ops[op - FL_DPROTO_FIRST].name)
		return -EOPNOTSUPP;
	size = ops[op - FL_DPROTO_FIRST].size;
	/* Only POST has arrays after its fixed part. */
	if (op == FL_DOP_POST ? body < (size_t)size : body != (size_t)size)
		return -EPROTO;
	memcpy(&ret->u, p + sizeof(ret->hdr), (size_t)size);
	/* No op takes header flags. */
	if (ret->hdr.flags)
		return -EINVAL;
	switch (op) {
	case FL_DOP_HELLO:
		if (!ret->u.hello.version)
			return -EPROTONOSUPPORT;
		return ret->u.hello.flags ? -EINVAL : (nfds ? -EINVAL : 0);
	case FL_DOP_POST:
		return decode_post(ret, p + sizeof(ret->hdr), body, stashed);
	case FL_DOP_POST_FDS:
		return nfds >= 1 && nfds <= FL_DPROTO_MAX_FDS &&
				       stashed + nfds <= FL_DPROTO_POST_MAX_FDS
			       ? 0
			       : -EINVAL;
	case FL_DOP_SIMPLE_POST:
		if (check_buffer(&ret->u.simple_post.buf) ||
		    !fence_type_ok(ret->u.simple_post.fence_type))
			return -EINVAL;
		ret->post_fds = fl__dproto_buffer_fds(&ret->u.simple_post.buf);
		return ret->post_fds == nfds && !stashed ? 0 : -EINVAL;
	case FL_DOP_SET_SOURCE: {
		const struct fl_dmsg_set_source *s = &ret->u.set_source;

		/* The layer and sizes are the service's to judge, with a message. */
		if (s->type > FL_DISPLAY_SOURCE_STREAM || s->reserved[0] || s->reserved[1] ||
		    s->reserved[2])
			return -EINVAL;
		return nfds == (s->type == FL_DISPLAY_SOURCE_STREAM ? 1u : 0u) ? 0 : -EINVAL;
	}
	}
	/* Every other op comes without fds. */
	if (nfds)
		return -EINVAL;
	switch (op) {
	case FL_DOP_OPEN:
		return ret->u.open.pad || ret->u.open.kind > FL_DISPLAY_OBJ_ENGINE ||
				       (ret->u.open.kind == FL_DISPLAY_OBJ_DEVICE && ret->u.open.id)
			       ? -EINVAL
			       : 0;
	case FL_DOP_CLOSE:
	case FL_DOP_DEVICE_DATA:
	case FL_DOP_INTERFACE_DATA:
	case FL_DOP_ENGINE_DATA:
	case FL_DOP_STATS:
	case FL_DOP_DEVICE_INFO:
	case FL_DOP_INTERFACE_TYPE_NAME:
		return ret->u.handle.pad ? -EINVAL : 0;
	case FL_DOP_ATTACH:
	case FL_DOP_DETACH:
		return ret->u.attach.pad ? -EINVAL : 0;
	case FL_DOP_SET_MODE:
		return ret->u.set_mode.pad ? -EINVAL : 0;
	case FL_DOP_SET_EVENT:
		return ret->u.set_event.pad || ret->u.set_event.enabled > 1 ? -EINVAL : 0;
	case FL_DOP_SET_CONNECTED:
		return ret->u.set_connected.connected > 1 ? -EINVAL : 0;
	case FL_DOP_DUMP:
		return ret->u.dump.pad || (ret->u.dump.flags & ~FL_DDUMP_JSON) ? -EINVAL : 0;
	default: /* DEVICES, BLANK, SIMPLE_ALLOC, CAPTURE: any values, the model's to judge */
		return 0;
	}
}

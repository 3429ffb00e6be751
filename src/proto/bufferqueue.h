/* SPDX-License-Identifier: MIT */
/*
 * The buffer queue's wire protocol, between a producer and its consumer
 * (src/bufferqueue/, docs/protocol.md "Buffer queues"). Framed as
 * fencelined's (protocol.h): one SOCK_SEQPACKET packet per message, a
 * struct fl_msg_hdr, a body, fds as SCM_RIGHTS (the transport's). Its own
 * socket per queue, its own op range and version.
 *
 * The producer sends requests; every request gets one reply, a struct
 * fl_msg_hdr echoing the op (| FL_OP_REPLY) and seq, a struct fl_msg_reply,
 * then on success the op's reply body. The consumer's one event,
 * SLOT_FREE, has seq 0 and no body.
 *
 * Private to src/: the queue and the fuzz target include it.
 */
#ifndef FL_PROTO_BUFFERQUEUE_H
#define FL_PROTO_BUFFERQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

#define FL_BQPROTO_VERSION 1

#define FL_BQ_MAX_SLOTS	   32u
#define FL_BQ_MAX_DAMAGE   16u
#define FL_BQ_MAX_PLANES   4u
#define FL_BQ_USAGE_MAX	   64u
#define FL_BQ_NAME_MAX	   32u
#define FL_BQ_MAX_DIM	   16384u

enum fl_bqproto_op {
	FL_BQOP_HELLO = 160, /* body bq_hello; reply bq_hello_reply */
	FL_BQOP_DEQUEUE =
		161, /* body bq_dequeue; reply bq_dequeue_reply (+ buffer fd, + fence fd) */
	FL_BQOP_QUEUE = 162, /* body bq_queue + rects (+ fence fd); reply bq_queue_reply */
	FL_BQOP_CANCEL = 163, /* body bq_cancel (+ fence fd); reply: status */
	FL_BQOP_SLOT_FREE = 164, /* event, consumer to producer: no body, seq 0 */
};
#define FL_BQPROTO_FIRST FL_BQOP_HELLO
#define FL_BQPROTO_LAST	 FL_BQOP_SLOT_FREE

/* Body flags: a fence fd comes with the message (it is the message's last fd). */
#define FL_BQ_F_FENCE 1u
/* DEQUEUE reply flags, besides FL_BQ_F_FENCE: the buffer fd comes first. */
#define FL_BQ_F_BUFFER	    2u
#define FL_BQ_F_REALLOCATED 4u

struct fl_bqmsg_hello {
	uint32_t version; /* FL_BQPROTO_VERSION */
	uint32_t flags; /* 0 */
	uint32_t pid; /* the producer's, for messages */
	uint32_t pad; /* 0 */
};

struct fl_bqmsg_hello_reply {
	struct fl_msg_reply r;
	uint32_t version;
	uint32_t num_slots;
	uint32_t mode;
	uint32_t flags; /* 0 */
	char name[FL_BQ_NAME_MAX]; /* NUL-terminated */
};

struct fl_bqmsg_dequeue {
	uint32_t width;
	uint32_t height;
	uint32_t format;
	uint32_t flags; /* 0 */
	char usage[FL_BQ_USAGE_MAX]; /* NUL-terminated, NUL-padded */
};

struct fl_bqmsg_dequeue_reply {
	struct fl_msg_reply r;
	uint32_t slot;
	uint32_t flags; /* FL_BQ_F_BUFFER, FL_BQ_F_REALLOCATED, FL_BQ_F_FENCE */
	uint32_t width;
	uint32_t height;
	uint32_t format;
	uint32_t num_planes;
	uint64_t size;
	uint32_t offsets[FL_BQ_MAX_PLANES];
	uint32_t pitches[FL_BQ_MAX_PLANES];
};

struct fl_bqmsg_rect {
	int32_t x, y, width, height;
};

struct fl_bqmsg_queue {
	uint32_t slot;
	uint32_t flags; /* FL_BQ_F_FENCE */
	uint64_t desired_present_ns;
	uint32_t num_damage; /* rects that follow, at most FL_BQ_MAX_DAMAGE */
	uint32_t pad; /* 0 */
};

struct fl_bqmsg_queue_reply {
	struct fl_msg_reply r;
	uint64_t frame_number;
};

struct fl_bqmsg_cancel {
	uint32_t slot;
	uint32_t flags; /* FL_BQ_F_FENCE */
};

/* The largest request: a QUEUE with every rect. */
#define FL_BQPROTO_MAX_REQUEST                                       \
	(sizeof(struct fl_msg_hdr) + sizeof(struct fl_bqmsg_queue) + \
	 FL_BQ_MAX_DAMAGE * sizeof(struct fl_bqmsg_rect))
/* The largest reply: a DEQUEUE's or HELLO's. */
#define FL_BQPROTO_MAX_REPLY (sizeof(struct fl_msg_hdr) + 72u)
/* The most fds one message brings: a DEQUEUE reply's buffer and fence. */
#define FL_BQPROTO_MAX_FDS 2u

/* A decoded request (copies, aligned). */
struct fl_bqproto_request {
	struct fl_msg_hdr hdr;
	union {
		struct fl_bqmsg_hello hello;
		struct fl_bqmsg_dequeue dequeue;
		struct fl_bqmsg_cancel cancel;
		struct {
			struct fl_bqmsg_queue q;
			struct fl_bqmsg_rect rects[FL_BQ_MAX_DAMAGE];
		} queue;
	} u;
};

/* A decoded reply or event. */
struct fl_bqproto_reply {
	struct fl_msg_hdr hdr;
	int32_t status;
	union {
		struct fl_bqmsg_hello_reply hello;
		struct fl_bqmsg_dequeue_reply dequeue;
		struct fl_bqmsg_queue_reply queue;
	} u;
};

/**
 * fl__bqproto_decode_request() - check one packet a producer sent
 * @buf: the packet
 * @len: its length
 * @nfds: fds that came with it
 * @truncated: the transport saw MSG_TRUNC, MSG_CTRUNC or more fds than allowed
 * @ret: on success, the request
 *
 * Return: 0; -EPROTO for bad framing (the producer is cut off);
 * -EOPNOTSUPP for an op that is no request; -EPROTONOSUPPORT for a HELLO
 * of another version; -EINVAL for a body or fd count the op does not allow.
 */
int fl__bqproto_decode_request(const void *buf, size_t len, unsigned int nfds, bool truncated,
			       struct fl_bqproto_request *ret);

/**
 * fl__bqproto_decode_reply() - check one packet the consumer sent
 * @buf: the packet
 * @len: its length
 * @nfds: fds that came with it
 * @truncated: as for fl__bqproto_decode_request()
 * @ret: on success, the reply or the event (hdr.op FL_BQOP_SLOT_FREE)
 *
 * A reply's fields are checked against the protocol's limits (slot,
 * planes, sizes, offsets within the size, fd count agreeing with the
 * flags), not against the request it answers: the caller matches the op
 * and seq.
 * Return: 0; -EPROTO for anything else.
 */
int fl__bqproto_decode_reply(const void *buf, size_t len, unsigned int nfds, bool truncated,
			     struct fl_bqproto_reply *ret);

/* An op's name ("DEQUEUE"), "?" for a number that is no op. */
const char *fl__bqproto_op_name(uint32_t op);

#endif /* FL_PROTO_BUFFERQUEUE_H */

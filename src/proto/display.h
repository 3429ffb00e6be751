/* SPDX-License-Identifier: MIT */
/*
 * The display service's wire protocol, between the library
 * (src/client/display.c) and fl-displayd (docs/protocol.md, "The display
 * service"). Framed as fencelined's (protocol.h): one SOCK_SEQPACKET packet
 * per message, a struct fl_msg_hdr, a body, fds as SCM_RIGHTS (the
 * transport's). Its own socket, its own op range and its own version,
 * agreed by its HELLO; the bodies are variable where ADF's arrays are.
 *
 * Every reply is a struct fl_msg_hdr echoing the op (| FL_OP_REPLY) and
 * seq, a struct fl_msg_reply, then on success the op's reply body, on
 * failure the reason: a NUL-terminated message of at most
 * FL_DISPLAY_ERROR_MAX bytes naming the object and the rule.
 *
 * Private to src/: the service, the client and the fuzz target include it.
 */
#ifndef FL_PROTO_DISPLAY_H
#define FL_PROTO_DISPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/display.h>

#include "protocol.h"

/*
 * The display service's version, agreed by DHELLO (the lower of both).
 * 2: DEVICE_INFO and INTERFACE_TYPE_NAME.
 * 3: DRIVERS, and DEVICE_INFO's reply names the driver.
 */
#define FL_DPROTO_VERSION 3

/* The largest request (a POST of 1024 interfaces, 56 buffers and 4096 bytes of custom data). */
#define FL_DPROTO_MAX_REQUEST 16384
/* The largest reply (an INTERFACE_DATA with 60 modes and 4096 bytes of custom data). */
#define FL_DPROTO_MAX_REPLY 16384
/* fds in one message: a POST with more sends them ahead in POST_FDS messages. */
#define FL_DPROTO_MAX_FDS 128
/* fds one POST may bring at most: 56 buffers of 4 planes and an acquire fence, and a writeback destination. */
#define FL_DPROTO_POST_MAX_FDS (FL_DISPLAY_MAX_BUFFERS * (FL_DISPLAY_MAX_PLANES + 1) + 1)

enum fl_dproto_op {
	FL_DOP_HELLO = 128, /* body dhello; reply dhello_reply */
	FL_DOP_DEVICES = 129, /* no body; reply devices_reply + count u32 ids */
	FL_DOP_OPEN = 130, /* body open; reply open_reply + 1 fd (the handle's events) */
	FL_DOP_CLOSE = 131, /* body handle; reply: status */
	FL_DOP_DEVICE_DATA = 132, /* body handle; reply device_data_reply + arrays */
	FL_DOP_INTERFACE_DATA = 133, /* body handle; reply interface_data_reply + arrays */
	FL_DOP_ENGINE_DATA = 134, /* body handle; reply engine_data_reply + arrays */
	FL_DOP_ATTACH = 135, /* body attach; reply: status */
	FL_DOP_DETACH = 136, /* body attach; reply: status */
	FL_DOP_BLANK = 137, /* body blank; reply: status */
	FL_DOP_SET_MODE = 138, /* body set_mode; reply: status */
	FL_DOP_SET_EVENT = 139, /* body set_event; reply: status */
	FL_DOP_SIMPLE_ALLOC = 140, /* body simple_alloc; reply simple_alloc_reply + 1 fd */
	FL_DOP_POST = 141, /* body post + arrays, fds; reply post_reply (+ 1 fd, the fence) */
	FL_DOP_POST_FDS = 142, /* no body, 1..FL_DPROTO_MAX_FDS fds; one-way: a POST's first fds */
	FL_DOP_SIMPLE_POST = 143, /* body simple_post, fds; reply post_reply (+ 1 fd) */
	FL_DOP_SET_CONNECTED = 144, /* body set_connected; reply: status */
	FL_DOP_STATS = 145, /* body handle; reply stats_reply */
	FL_DOP_CAPTURE = 146, /* body capture; reply capture_reply + 1 fd (the frame) */
	FL_DOP_DUMP = 147, /* body dump; reply: status + 1 fd (a sealed memfd, the dump) */
	FL_DOP_DEVICE_INFO = 148, /* (version 2) body handle; reply device_info_reply */
	FL_DOP_INTERFACE_TYPE_NAME = 149, /* (version 2) body handle; reply type_name_reply */
	FL_DOP_SET_SOURCE = 150, /* body set_source (+ 1 fd for a STREAM); reply: status */
	FL_DOP_DRIVERS = 151, /* (version 3) no body; reply drivers_reply + count driver_info */
};
#define FL_DPROTO_FIRST FL_DOP_HELLO
#define FL_DPROTO_LAST	FL_DOP_DRIVERS

struct fl_dmsg_hello {
	uint32_t version; /* FL_DPROTO_VERSION */
	uint32_t flags; /* 0 */
};

struct fl_dmsg_hello_reply {
	struct fl_msg_reply r;
	uint32_t version; /* agreed */
	uint32_t pid; /* the service's */
};

struct fl_dmsg_devices_reply {
	struct fl_msg_reply r;
	uint32_t count; /* device ids that follow */
	uint32_t pad;
};

/* Kinds of handle: enum fl_display_object_kind's numbers. */
struct fl_dmsg_open {
	uint32_t kind; /* 0 device, 1 interface, 2 overlay engine */
	uint32_t device;
	uint32_t id; /* the interface's or engine's; 0 for a device */
	uint32_t pad; /* 0 */
};

struct fl_dmsg_open_reply {
	struct fl_msg_reply r;
	uint32_t handle;
	uint32_t pad;
};

/* The body of CLOSE, the data queries and STATS. */
struct fl_dmsg_handle {
	uint32_t handle;
	uint32_t pad; /* 0 */
};

/* Followed by n_attachments, then n_allowed struct fl_display_attachment, then the custom data. */
struct fl_dmsg_device_data_reply {
	struct fl_msg_reply r;
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t n_attachments, n_allowed, custom_size, pad;
};

/* Followed by n_modes struct fl_display_mode, then the custom data. */
struct fl_dmsg_interface_data_reply {
	struct fl_msg_reply r;
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t type, id, flags;
	uint8_t dpms_state, hotplug_detect;
	uint16_t width_mm, height_mm, pad;
	struct fl_display_mode current_mode;
	uint32_t n_modes, custom_size;
};

/* Followed by n_formats u32 fourccs, then the custom data. */
struct fl_dmsg_engine_data_reply {
	struct fl_msg_reply r;
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t n_formats, custom_size;
};

/* ATTACH and DETACH, on a device handle. */
struct fl_dmsg_attach {
	uint32_t handle;
	uint32_t engine;
	uint32_t interface;
	uint32_t pad; /* 0 */
};

struct fl_dmsg_blank {
	uint32_t handle;
	uint32_t state; /* any value: the model judges it (ADF's -EINVAL above OFF) */
};

struct fl_dmsg_set_mode {
	uint32_t handle;
	uint32_t pad; /* 0 */
	struct fl_display_mode mode;
};

struct fl_dmsg_set_event {
	uint32_t handle;
	uint32_t type; /* any value: ADF's -EINVAL for a type the object lacks */
	uint32_t enabled; /* 0 or 1 */
	uint32_t pad; /* 0 */
};

struct fl_dmsg_simple_alloc {
	uint32_t handle; /* an interface */
	uint32_t w, h; /* ADF's are u16: a size above 65535 is -EINVAL */
	uint32_t format;
};

struct fl_dmsg_simple_alloc_reply {
	struct fl_msg_reply r;
	uint32_t offset, pitch;
};

/* A buffer of a post; its fds come with the message, plane by plane, then its acquire fence. */
struct fl_dmsg_buffer {
	uint32_t engine, w, h, format;
	uint32_t n_planes; /* 0 to FL_DISPLAY_MAX_PLANES: that many plane fds */
	uint32_t flags; /* FL_DBUF_ACQUIRE: an acquire fence fd follows the planes' */
	uint32_t offset[FL_DISPLAY_MAX_PLANES];
	uint32_t pitch[FL_DISPLAY_MAX_PLANES];
};
#define FL_DBUF_ACQUIRE 1u

/*
 * Followed by n_intfs u32 interface ids, n_bufs struct fl_dmsg_buffer,
 * custom_size bytes, with FL_DPOST_LAYERS in flags n_bufs struct
 * fl_display_layer (64 bytes each, all u32), and with FL_DPOST_WRITEBACK a
 * struct fl_dmsg_writeback. The fds: those sent ahead by POST_FDS since
 * the last POST, then the message's own, in the buffers' order, the
 * writeback destination's last.
 */
struct fl_dmsg_post {
	uint32_t handle; /* a device */
	uint32_t flags; /* FL_DISPLAY_POST_*, and FL_DPOST_LAYERS */
	uint32_t fence_type; /* FL_DISPLAY_FENCE_* */
	uint32_t n_intfs; /* up to FL_DISPLAY_MAX_INTERFACES */
	uint32_t n_bufs; /* up to FL_DISPLAY_MAX_BUFFERS */
	uint32_t custom_size; /* up to FL_DISPLAY_MAX_CUSTOM_DATA */
};

/* The wire's own post flags, not public ones: the layers follow the custom data; a writeback follows them. */
#define FL_DPOST_LAYERS	   (1u << 31)
#define FL_DPOST_WRITEBACK (1u << 30)

/* A writeback destination (struct fl_display_writeback without its fd, which comes last). */
struct fl_dmsg_writeback {
	uint32_t format, w, h, offset, pitch;
	uint32_t pad; /* 0 */
};

struct fl_dmsg_simple_post {
	uint32_t handle; /* an interface */
	uint32_t fence_type;
	struct fl_dmsg_buffer buf;
};

struct fl_dmsg_post_reply {
	struct fl_msg_reply r;
	uint32_t flags; /* FL_DPOST_R_FENCE: the fence fd follows */
	uint32_t pad;
};
#define FL_DPOST_R_FENCE 1u

struct fl_dmsg_set_connected {
	uint32_t handle; /* an interface */
	uint32_t connected; /* 0 or 1 */
};

struct fl_dmsg_stats_reply {
	struct fl_msg_reply r;
	struct fl_display_stats stats;
};

/* A device's objects: their ids are 0 to n - 1. */
struct fl_dmsg_device_info_reply {
	struct fl_msg_reply r;
	uint32_t n_interfaces, n_engines;
	char driver[FL_DISPLAY_NAME_LEN]; /* version 3 */
};
/* A version 2 service's reply ends before the driver's name. */
#define FL_DMSG_DEVICE_INFO_V2_SIZE offsetof(struct fl_dmsg_device_info_reply, driver)

/* The drivers the service knows: @count struct fl_display_driver_info follow. */
struct fl_dmsg_drivers_reply {
	struct fl_msg_reply r;
	uint32_t count, pad;
};
/* The most drivers a reply lists. */
#define FL_DPROTO_MAX_DRIVERS 16

/* An interface's type and its name (ADF's, or the driver's for a custom type). */
struct fl_dmsg_type_name_reply {
	struct fl_msg_reply r;
	uint32_t type, pad;
	char name[FL_DISPLAY_NAME_LEN];
};

/* What an interface shows now, composed into a new memfd of its current mode's size. */
struct fl_dmsg_capture {
	uint32_t handle; /* an interface */
	uint32_t format; /* XRGB8888 or ARGB8888: the service refuses others */
};

struct fl_dmsg_capture_reply {
	struct fl_msg_reply r;
	uint32_t w, h, pitch, format;
};

/* struct fl_display_source on an engine handle; a STREAM's socket comes as the one fd. */
struct fl_dmsg_set_source {
	uint32_t handle; /* an engine */
	uint32_t type, w, h, format;
	uint32_t reserved[3]; /* 0 */
	struct fl_display_layer layer;
};

/* Every device's state and queue, for fencectl (docs/fencectl.md, "displays"). */
struct fl_dmsg_dump {
	uint32_t flags; /* FL_DDUMP_JSON or 0 */
	uint32_t pad; /* 0 */
};
#define FL_DDUMP_JSON 1u

/* A decoded request: the fixed body copied, the arrays pointing into the packet. */
struct fl_dproto_request {
	struct fl_msg_hdr hdr;
	unsigned int nfds;
	union {
		struct fl_dmsg_hello hello;
		struct fl_dmsg_open open;
		struct fl_dmsg_handle handle;
		struct fl_dmsg_attach attach;
		struct fl_dmsg_blank blank;
		struct fl_dmsg_set_mode set_mode;
		struct fl_dmsg_set_event set_event;
		struct fl_dmsg_simple_alloc simple_alloc;
		struct fl_dmsg_post post;
		struct fl_dmsg_simple_post simple_post;
		struct fl_dmsg_set_connected set_connected;
		struct fl_dmsg_capture capture;
		struct fl_dmsg_dump dump;
		struct fl_dmsg_set_source set_source;
	} u;
	/* POST: into the caller's packet, unaligned (read with memcpy) */
	const unsigned char *intfs, *bufs, *custom,
		*layers; /* layers: NULL without FL_DPOST_LAYERS */
	const unsigned char *writeback; /* NULL without FL_DPOST_WRITEBACK */
	/* POST, SIMPLE_POST: the fds its buffers name (planes and acquire fences) */
	unsigned int post_fds;
};

/**
 * fl__dproto_decode() - check one received packet of the display protocol
 * @buf, @len: the packet
 * @nfds: fds that came with it
 * @truncated: the transport saw MSG_TRUNC or MSG_CTRUNC
 * @stashed: fds sent ahead by POST_FDS (for a POST's count)
 *
 * Return: 0 and *@ret; -EPROTO for bad framing (the peer is cut off),
 * -EOPNOTSUPP for an op that does not exist, -EPROTONOSUPPORT for a
 * DHELLO of another core version, -EINVAL for a body or fd count the op
 * does not allow.
 */
int fl__dproto_decode(const void *buf, size_t len, unsigned int nfds, int truncated,
		      unsigned int stashed, struct fl_dproto_request *ret);

/* The fds one wire buffer brings. */
unsigned int fl__dproto_buffer_fds(const struct fl_dmsg_buffer *b);

/* An op's name ("POST"), "?" for a number that is no op. */
const char *fl__dproto_op_name(uint32_t op);

#endif /* FL_PROTO_DISPLAY_H */

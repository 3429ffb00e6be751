/* SPDX-License-Identifier: MIT */
/**
 * DOC: display types
 *
 * The types of fenceline's display framework (docs/display.md), an
 * ADF-style atomic display: devices, each with interfaces (the outputs: a
 * DSI panel, an HDMI port, memory writeback) and overlay engines (the
 * planes that scan buffers out), attached to each other as the device
 * allows. The names and limits are ADF's (<video/adf.h>); every function
 * of the display API returns 0 or a negative errno and, when given a
 * struct fl_display_error, says why in it.
 */
#ifndef FENCELINE_DISPLAY_H
#define FENCELINE_DISPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

/* ADF's limits (<video/adf.h>); docs/display.md lists where each applies. */
#define FL_DISPLAY_MAX_PLANES	   4
#define FL_DISPLAY_MAX_BUFFERS	   56
#define FL_DISPLAY_MAX_INTERFACES  1024
#define FL_DISPLAY_MAX_ENGINES	   1024 /* ours: ADF's idr had no bound */
#define FL_DISPLAY_MAX_ATTACHMENTS 512
#define FL_DISPLAY_MAX_MODES	   60
#define FL_DISPLAY_MAX_FORMATS	   1024
#define FL_DISPLAY_MAX_CUSTOM_DATA 4096
#define FL_DISPLAY_NAME_LEN	   32 /* with the NUL */

/* How long a message of struct fl_display_error may be, with the NUL. */
#define FL_DISPLAY_ERROR_MAX 256

/**
 * struct fl_display_error - why a display call failed
 * @err: the negative errno the call returned (0: no error)
 * @msg: a one-line reason naming the object and the rule, NUL-terminated;
 *	cut with "..." when longer than the buffer
 *
 * Every display function that takes one fills it on failure and leaves it
 * alone on success. A NULL pointer means the caller wants the errno only.
 */
struct fl_display_error {
	int err;
	char msg[FL_DISPLAY_ERROR_MAX];
};

/* A DRM fourcc from its four characters, as <drm_fourcc.h> builds it. */
#define FL_FOURCC(a, b, c, d)                                                                  \
	((uint32_t)(uint8_t)(a) | (uint32_t)(uint8_t)(b) << 8 | (uint32_t)(uint8_t)(c) << 16 | \
	 (uint32_t)(uint8_t)(d) << 24)

/* enum adf_interface_type. Driver types are FL_DISPLAY_INTF_CUSTOM and up. */
enum fl_display_intf_type {
	FL_DISPLAY_INTF_DSI = 0,
	FL_DISPLAY_INTF_EDP = 1,
	FL_DISPLAY_INTF_DPI = 2,
	FL_DISPLAY_INTF_VGA = 3,
	FL_DISPLAY_INTF_DVI = 4,
	FL_DISPLAY_INTF_HDMI = 5,
	FL_DISPLAY_INTF_MEMORY = 6,
	FL_DISPLAY_INTF_CUSTOM = 128,
};
#define FL_DISPLAY_INTF_TYPE_MAX UINT32_MAX /* ADF_INTF_TYPE_MAX: never a type */

/* ADF_INTF_FLAG_*; any other bit is refused. */
#define FL_DISPLAY_INTF_PRIMARY	 (1u << 0)
#define FL_DISPLAY_INTF_EXTERNAL (1u << 1)

/* DRM's DPMS states, as ADF_BLANK takes them. */
enum fl_display_dpms {
	FL_DISPLAY_DPMS_ON = 0,
	FL_DISPLAY_DPMS_STANDBY = 1,
	FL_DISPLAY_DPMS_SUSPEND = 2,
	FL_DISPLAY_DPMS_OFF = 3,
};

/* struct drm_mode_modeinfo, field for field (68 bytes). */
struct fl_display_mode {
	uint32_t clock; /* kHz */
	uint16_t hdisplay, hsync_start, hsync_end, htotal, hskew;
	uint16_t vdisplay, vsync_start, vsync_end, vtotal, vscan;
	uint32_t vrefresh; /* Hz */
	uint32_t flags; /* DRM_MODE_FLAG_* */
	uint32_t type; /* DRM_MODE_TYPE_* */
	char name[FL_DISPLAY_NAME_LEN];
};

#define FL_DISPLAY_MODE_FLAG_INTERLACE (1u << 4) /* DRM_MODE_FLAG_INTERLACE */
#define FL_DISPLAY_MODE_FLAG_DBLSCAN   (1u << 5) /* DRM_MODE_FLAG_DBLSCAN */

/* One attachment, as struct adf_attachment_config. */
struct fl_display_attachment {
	uint32_t engine;
	uint32_t interface;
};

/**
 * struct fl_display_device_data - a device's description (ADF_GET_DEVICE_DATA)
 * @name: filled
 * @attachments, @n_attachments: in: an array and its capacity (0 and NULL
 *	to ask the count); out: the true count (the smaller of both copied)
 * @allowed, @n_allowed: likewise, for the allowed attachments
 * @custom_data, @custom_data_size: likewise, in bytes
 *
 * The two-call query of ADF: ask with capacities 0 for the counts, then
 * again with arrays that size. A capacity above ADF's maximum, or one with a
 * NULL array, is -EINVAL.
 */
struct fl_display_device_data {
	char name[FL_DISPLAY_NAME_LEN];
	struct fl_display_attachment *attachments;
	size_t n_attachments;
	struct fl_display_attachment *allowed;
	size_t n_allowed;
	void *custom_data;
	size_t custom_data_size;
};

/**
 * struct fl_display_interface_data - an interface's description
 * (ADF_GET_INTERFACE_DATA); arrays as in struct fl_display_device_data
 */
struct fl_display_interface_data {
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t type;
	uint32_t id; /* ADF's name for the idx: type DSI, id 1 is DSI.1 */
	uint32_t flags;
	uint8_t dpms_state;
	uint8_t hotplug_detect;
	uint16_t width_mm, height_mm;
	struct fl_display_mode current_mode;
	struct fl_display_mode *modes;
	size_t n_modes;
	void *custom_data;
	size_t custom_data_size;
};

/* An overlay engine's description (ADF_GET_OVERLAY_ENGINE_DATA); arrays as above. */
struct fl_display_engine_data {
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t *formats;
	size_t n_formats;
	void *custom_data;
	size_t custom_data_size;
};

/* The three kinds of display object (and of handle on one). */
enum fl_display_object_kind {
	FL_DISPLAY_OBJ_DEVICE = 0,
	FL_DISPLAY_OBJ_INTERFACE = 1,
	FL_DISPLAY_OBJ_ENGINE = 2,
};

/*
 * Event types (ADF_EVENT_*): VSYNC and HOTPLUG on interfaces, driver types
 * from 128 to 254 on any object; 255 (ADF_EVENT_TYPE_MAX) is never one.
 */
enum fl_display_event_type {
	FL_DISPLAY_EVENT_VSYNC = 0,
	FL_DISPLAY_EVENT_HOTPLUG = 1,
	FL_DISPLAY_EVENT_DEVICE_CUSTOM = 128,
};
#define FL_DISPLAY_EVENT_TYPE_MAX 255

/* The bytes of events a handle keeps unread at most (ADF's ring); more are dropped. */
#define FL_DISPLAY_EVENT_RING 4096

/*
 * What a handle's fd reads: events in ADF's layout, each a header then its
 * payload, @length counting both (struct adf_event).
 */
struct fl_display_event {
	uint8_t type;
	uint32_t length;
};

/* ADF_EVENT_VSYNC's: the CLOCK_MONOTONIC time the frame started (16 bytes). */
struct fl_display_vsync_event {
	struct fl_display_event base;
	uint64_t timestamp __attribute__((aligned(8)));
};

/* ADF_EVENT_HOTPLUG's (12 bytes). */
struct fl_display_hotplug_event {
	struct fl_display_event base;
	uint8_t connected;
};

/*
 * The fence a post gives back (ADF's complete_fence_type): none; one that
 * signals when the post is on screen (PRESENT); one that signals when it
 * has left the screen, the next post being on it, so that its buffers may
 * be reused (RELEASE, ADF's V1 fence).
 */
enum fl_display_fence_type {
	FL_DISPLAY_FENCE_NONE = 0,
	FL_DISPLAY_FENCE_PRESENT = 1,
	FL_DISPLAY_FENCE_RELEASE = 2,
};

/* Post flags. */
enum fl_display_post_flags {
	/* Check the post as a real one, and change nothing: no queue, no fence, no flip. */
	FL_DISPLAY_POST_TEST_ONLY = 1u << 0,
};

/**
 * struct fl_display_buffer - one buffer of a post (ADF's struct adf_buffer_config)
 * @engine: the overlay engine that scans it out
 * @w, @h: its size in pixels
 * @format: DRM fourcc
 * @n_planes: how many of @fd, @offset and @pitch count (1 to 4)
 * @fd: per plane, the memory (a dma-buf, memfd or any file that has a size;
 *	borrowed: the service keeps copies)
 * @offset: per plane, byte offset of the first pixel
 * @pitch: per plane, bytes from one line to the next
 * @acquire_fence: a fence fd the service waits for before it shows the
 *	buffer (borrowed), or -1 when the buffer is ready
 */
struct fl_display_buffer {
	uint32_t engine;
	uint32_t w, h;
	uint32_t format;
	uint32_t n_planes;
	int fd[FL_DISPLAY_MAX_PLANES];
	uint32_t offset[FL_DISPLAY_MAX_PLANES];
	uint32_t pitch[FL_DISPLAY_MAX_PLANES];
	int acquire_fence;
};

/**
 * struct fl_display_stats - a device's post queue, as the service counts it
 * @queued: posts waiting for their fences or their vsync now
 * @posted: posts accepted since the service started (TEST_ONLY ones excluded)
 * @flipped: posts that reached the screen
 * @dropped: posts never shown: an acquire fence failed or timed out, the
 *	queue was flushed while they waited, or their client went away
 * @fence_failures: acquire fences that failed or timed out
 * @on_screen_buffers: buffers of the post on screen, held until the next flip
 * @vsyncs: vsyncs of the device's interfaces seen
 */
struct fl_display_stats {
	uint64_t queued;
	uint64_t posted;
	uint64_t flipped;
	uint64_t dropped;
	uint64_t fence_failures;
	uint64_t on_screen_buffers;
	uint64_t vsyncs;
};

FL_END_DECLS

#endif /* FENCELINE_DISPLAY_H */

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
 * struct fl_display_device_info - what ADF's device data does not say: how
 * many interfaces and overlay engines the device has (libadf counts the
 * device's nodes in /dev)
 * @n_interfaces: its interfaces, ids 0 to @n_interfaces - 1
 * @n_engines: its overlay engines, ids 0 to @n_engines - 1
 * @driver: the name of the driver that runs it ("virtual", "window",
 *	"terminal", "kms"); empty from a service older than this field
 *
 * Fields may be added at the end: fl_display_device_get_info() takes the
 * size the caller was built with.
 */
struct fl_display_device_info {
	uint32_t n_interfaces;
	uint32_t n_engines;
	char driver[FL_DISPLAY_NAME_LEN];
};

/* The longest reason fl_display_drivers() gives, with its NUL. */
#define FL_DISPLAY_WHY_LEN 160

/**
 * struct fl_display_driver_info - a display driver the service knows
 * @name: its name, as the config's "driver =" and --display name it
 * @status: 0 when it can run on this machine now; a negative errno when
 *	not (-ENOSYS: the service was built without it; -ENODEV: no such
 *	hardware or display; -EACCES: not allowed), explained in @why
 * @devices: how many of the service's devices it runs
 * @why: empty, or why it cannot run, one line ("no X11 or Wayland
 *	display: $DISPLAY and $WAYLAND_DISPLAY are unset"); for the driver
 *	chosen by "--display auto", which others were passed over is in
 *	their own entries
 */
struct fl_display_driver_info {
	char name[FL_DISPLAY_NAME_LEN];
	int32_t status;
	uint32_t devices;
	char why[FL_DISPLAY_WHY_LEN];
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

/*
 * The size of a handle's event ring (ADF's): it keeps at most
 * FL_DISPLAY_EVENT_RING - 1 bytes unread, as ADF's circular buffer did;
 * events that do not fit are dropped.
 */
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
 * enum fl_display_blend - how a layer's pixels combine with what is below
 * @FL_DISPLAY_BLEND_NONE: opaque: the layer's alpha channel is ignored;
 *	result = src × pa + dst × (1 − pa)
 * @FL_DISPLAY_BLEND_PREMULTIPLIED: colour already multiplied by alpha;
 *	result = src × pa + dst × (1 − src.a × pa)
 * @FL_DISPLAY_BLEND_COVERAGE: straight alpha;
 *	result = src × src.a × pa + dst × (1 − src.a × pa)
 *
 * pa is the plane alpha. The names and maths are KMS's "pixel blend mode".
 */
enum fl_display_blend {
	FL_DISPLAY_BLEND_NONE = 0,
	FL_DISPLAY_BLEND_PREMULTIPLIED = 1,
	FL_DISPLAY_BLEND_COVERAGE = 2,
};

/*
 * A layer's transform: a number of clockwise quarter turns (0 to 3, as
 * Android's HAL_TRANSFORM_ROT_*), plus FLIP_X, a left-right mirror of the
 * source rect applied before the turn. The 8 values 0 to 7 are all valid.
 * With a quarter or three-quarter turn, the source rect's width maps to
 * the destination rect's height.
 */
#define FL_DISPLAY_TRANSFORM_ROT_0   0u
#define FL_DISPLAY_TRANSFORM_ROT_90  1u
#define FL_DISPLAY_TRANSFORM_ROT_180 2u
#define FL_DISPLAY_TRANSFORM_ROT_270 3u
#define FL_DISPLAY_TRANSFORM_FLIP_X  4u
#define FL_DISPLAY_TRANSFORM_MAX     7u

/**
 * enum fl_display_filter - how a scaled or sub-pixel layer is sampled
 * @FL_DISPLAY_FILTER_DEFAULT: bilinear (pixman's BILINEAR), except where
 *	source pixels map 1:1 onto destination pixels, where nearest gives
 *	the same pixels faster
 * @FL_DISPLAY_FILTER_NEAREST: nearest neighbour (pixman's NEAREST), for
 *	integer scaling of pixel art and for tests
 *
 * KMS's plane property SCALING_FILTER ("Default", "Nearest Neighbor").
 */
enum fl_display_filter {
	FL_DISPLAY_FILTER_DEFAULT = 0,
	FL_DISPLAY_FILTER_NEAREST = 1,
};

/**
 * struct fl_display_layer - where and how a buffer of a post is shown,
 * hardware-independently (issue 17 item 3; atomic KMS's plane properties)
 * @flags: FL_DISPLAY_LAYER_ENABLED: this buffer has a layer; 0: it has
 *	none and keeps the meaning of a post without layers (the driver's
 *	own: the virtual driver shows it at the top-left corner at its own
 *	size, under every buffer that has a layer)
 * @src_x, @src_y, @src_w, @src_h: the source rect in the buffer, 16.16
 *	fixed point (sub-pixel allowed), of non-zero size, inside the buffer
 * @dst_x, @dst_y, @dst_w, @dst_h: the destination rect on the interface,
 *	pixels, inside the current mode of every interface of the post that
 *	has one; the source rect is scaled to it
 * @zpos: z order, higher nearer the viewer; no two layers of a post share one
 * @blend: an enum fl_display_blend
 * @alpha: plane alpha, 0 (invisible) to 0xffff (as the pixels say)
 * @transform: FL_DISPLAY_TRANSFORM_*, 0 to 7
 * @filter: an enum fl_display_filter
 * @reserved: 0 (room for later fields without changing the size)
 *
 * All fields are 32-bit, 64 bytes in all, the same on every ABI: the wire
 * carries the struct as it is.
 */
struct fl_display_layer {
	uint32_t flags;
	uint32_t src_x, src_y, src_w, src_h;
	int32_t dst_x, dst_y;
	uint32_t dst_w, dst_h;
	uint32_t zpos;
	uint32_t blend;
	uint32_t alpha;
	uint32_t transform;
	uint32_t filter;
	uint32_t reserved[2];
};

/* struct fl_display_layer's @flags. */
#define FL_DISPLAY_LAYER_ENABLED 1u

/**
 * struct fl_display_writeback - where a post to a memory-writeback
 * interface (FL_DISPLAY_INTF_MEMORY, ADF_INTF_MEMORY) writes its frame
 * @fd: the destination's memory (a memfd, dma-buf or any file with a size;
 *	borrowed: the service keeps a copy until the post has left the screen)
 * @format: an RGB fourcc the compositor writes (the 8888, 888 and 565
 *	formats)
 * @w, @h: the frame's size: the writeback interface's current mode's
 * @offset: byte offset of the first pixel, a multiple of 4
 * @pitch: bytes from one line to the next, a multiple of 4, at least
 *	@w × bytes per pixel; @offset + @h × @pitch must fit in the memory
 */
struct fl_display_writeback {
	int fd;
	uint32_t format;
	uint32_t w, h;
	uint32_t offset;
	uint32_t pitch;
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

/**
 * DOC: the native display API
 *
 * The calls below talk to fl-displayd, the display service of this user,
 * started on first use like fencelined (docs/display.md). A handle names a
 * device, one of its interfaces or one of its overlay engines, as ADF's
 * open files did; each has an fd, pollable, whose read() gives that
 * handle's events as a byte stream in ADF's layout (struct
 * fl_display_event), from a ring of FL_DISPLAY_EVENT_RING bytes: events
 * that find it full are dropped. Calls on a handle whose service went away
 * (it died, or this process forked) fail with -ECONNRESET; open it again.
 * The calls may be made from any thread; a handle is not to be closed
 * while another thread uses it. The requests of all threads share the
 * process's one connection without waiting for each other: a call that
 * waits for a slow answer holds up no other thread's call. Every call returns 0 or a negative errno
 * and fills @e (when not NULL) with the reason on failure; besides the
 * errors each names, any that talks to the service may return the daemon
 * errors of <fenceline/fenceline.h> (-ECONNREFUSED: no service could be
 * started; -ECONNRESET: it went away), and one on a handle -EBADF (a
 * handle the service does not know).
 */

/* A device, interface or overlay engine of the display service, opened. */
struct fl_display_handle;

/**
 * fl_display_disconnect() - close this process's connection to the display
 * service, made by the first call that needed it
 *
 * What it held there goes: its handles' subscriptions, its queued posts.
 * Calls other threads are waiting in fail with -ECONNRESET at once, and
 * handles still open fail with -ECONNRESET from then on (close them); the
 * next call that needs the service connects again.
 */
FL_EXPORT void fl_display_disconnect(void);

/**
 * fl_display_socket_path() - the path of the display service's socket that
 * this process's calls use: $FENCELINE_DISPLAY_SOCKET, else in fencelined's
 * socket directory displayd.sock, or displayd-CHOICE.sock when
 * $FENCELINE_DISPLAY chooses the output ("window", "kms:card0": one
 * service per choice, started with it; docs/display.md, "Choosing the
 * output")
 * @buf, @cap: where to write it, NUL-terminated
 *
 * The directory is private to this user (mode 0700): tools keep files
 * that belong with the display there (fenceline-fbdev's framebuffer).
 * Connects to nothing and starts nothing.
 * Return: 0; -EINVAL (@buf NULL, or a $FENCELINE_DISPLAY that is not one
 * of auto, virtual, window, terminal[:TTY], kms[:CARD]); -ENAMETOOLONG (it does not fit @cap or a
 * socket address); the errors of finding fencelined's directory (-ENOENT
 * when there is no usable one).
 */
FL_EXPORT int fl_display_socket_path(char *buf, size_t cap);

/**
 * fl_display_devices() - the ids of the display devices
 * @ret_ids: set to a malloc()ed array of the ids (the caller's, to free());
 *	NULL when there are none
 * Return: how many (>= 0), or a negative errno.
 */
FL_EXPORT int fl_display_devices(uint32_t **ret_ids);

/**
 * fl_display_device_open() - open device @id
 * @ret: the handle, the caller's (fl_display_close())
 * Return: 0, -ENODEV (no such device), -EMFILE (too many handles).
 */
FL_EXPORT int fl_display_device_open(uint32_t id, struct fl_display_handle **ret);

/**
 * fl_display_interface_open() - open interface @id of the device of @dev
 * @dev: a device handle (borrowed)
 * Return: 0, -EINVAL (@dev is no device handle), -ENODEV, -EMFILE.
 */
FL_EXPORT int fl_display_interface_open(struct fl_display_handle *dev, uint32_t id,
					struct fl_display_handle **ret);

/* As fl_display_interface_open(), for overlay engine @id. */
FL_EXPORT int fl_display_engine_open(struct fl_display_handle *dev, uint32_t id,
				     struct fl_display_handle **ret);

/**
 * fl_display_close() - close @h: its event subscriptions end, its fd is
 * closed. NULL is ignored.
 */
FL_EXPORT void fl_display_close(struct fl_display_handle *h);

/**
 * fl_display_get_fd() - @h's event fd (borrowed: valid until
 * fl_display_close()), readable when an event is queued
 */
FL_EXPORT int fl_display_get_fd(const struct fl_display_handle *h);

/**
 * fl_display_device_get_data() - the device's description, ADF's two-call
 * query (struct fl_display_device_data)
 * Return: 0, -EINVAL (a capacity above ADF's maximum, or one with a NULL
 * array; not a device handle).
 */
FL_EXPORT int fl_display_device_get_data(struct fl_display_handle *dev,
					 struct fl_display_device_data *data,
					 struct fl_display_error *e);

/* As fl_display_device_get_data(), for an interface handle (at most 60 modes). */
FL_EXPORT int fl_display_interface_get_data(struct fl_display_handle *intf,
					    struct fl_display_interface_data *data,
					    struct fl_display_error *e);

/* As fl_display_device_get_data(), for an overlay engine handle. */
FL_EXPORT int fl_display_engine_get_data(struct fl_display_handle *eng,
					 struct fl_display_engine_data *data,
					 struct fl_display_error *e);

/**
 * fl_display_device_get_info() - how many interfaces and overlay engines
 * @dev has, so that a caller opens each id once instead of opening ids
 * until one does not exist
 * @dev: a device handle (borrowed)
 * @info: gets the first @size bytes of the answer (the caller's)
 * @size: sizeof(*@info) as the caller was built with: at most the size
 *	this library knows is written, the rest of a larger @info is left
 *	as it was
 *
 * A device's objects do not change while the service runs (hotplug
 * changes an interface's state, not the interfaces).
 * Return: 0; -EINVAL (@dev not a device handle, @info NULL or @size 0);
 * -EOPNOTSUPP (a service older than this library, which does not count:
 * open ids from 0 until one does not exist instead).
 */
FL_EXPORT int fl_display_device_get_info(struct fl_display_handle *dev,
					 struct fl_display_device_info *info, size_t size,
					 struct fl_display_error *e);

/**
 * fl_display_drivers() - the display drivers the service knows, whether
 * each can run on this machine and why not (docs/display.md, "Choosing
 * the output")
 * @ret: gets up to @cap entries (the caller's array; may be NULL when
 *	@cap is 0)
 * @cap: its length
 * @e: NULL, or the service's message on failure
 *
 * The service asks every driver now (each driver's probe: cheap, and it
 * runs as the service, with its environment: $DISPLAY is the service's).
 * Return: how many drivers there are (more than @cap: only @cap were
 * written), or a negative errno: -EINVAL (@ret NULL with @cap > 0),
 * -EOPNOTSUPP (a service older than this call), the connection's errors.
 */
FL_EXPORT int fl_display_drivers(struct fl_display_driver_info *ret, size_t cap,
				 struct fl_display_error *e);

/**
 * fl_display_interface_type_name() - the name of @intf's type
 * @intf: an interface handle (borrowed)
 * @name: gets the name, NUL-terminated (the caller's buffer): ADF's for
 *	the standard types ("DSI", "eDP", "DPI", "VGA", "DVI", "HDMI",
 *	"memory"), the driver's for a type of its own
 *	(FL_DISPLAY_INTF_CUSTOM and up: the type's name in the display
 *	config), as ADF's adf_interface_type_str() gives it
 *
 * Return: 0; -EINVAL (@intf not an interface handle, @name NULL);
 * -EOPNOTSUPP (a service older than this library).
 */
FL_EXPORT int fl_display_interface_type_name(struct fl_display_handle *intf,
					     char name[FL_DISPLAY_NAME_LEN],
					     struct fl_display_error *e);

/**
 * fl_display_attach() - attach overlay engine @eng to interface @intf
 * (ADF_ATTACH)
 * Return: 0; -EINVAL (unknown id, a pair the device does not allow, not a
 * device handle); -EALREADY (attached); the driver's veto.
 */
FL_EXPORT int fl_display_attach(struct fl_display_handle *dev, uint32_t eng, uint32_t intf,
				struct fl_display_error *e);

/**
 * fl_display_detach() - ADF_DETACH
 * Return: 0; -EINVAL (unknown id, not attached, not a device handle); the
 * driver's veto.
 */
FL_EXPORT int fl_display_detach(struct fl_display_handle *dev, uint32_t eng, uint32_t intf,
				struct fl_display_error *e);

/**
 * fl_display_blank() - put an interface in DPMS @state (ADF_BLANK)
 *
 * A state other than ON first flushes the device's queue: what is ready
 * flips, what still waits for its fences is dropped.
 * Return: 0; -EINVAL (a state above OFF, not an interface handle);
 * -EBUSY (in that state already); -EOPNOTSUPP (the driver cannot blank).
 */
FL_EXPORT int fl_display_blank(struct fl_display_handle *intf, uint32_t state,
			       struct fl_display_error *e);

/**
 * fl_display_set_mode() - switch an interface to @mode (ADF_SET_MODE),
 * after flushing the queue as fl_display_blank() does
 * Return: 0; -EINVAL (not an interface handle); -EOPNOTSUPP; the driver's
 * refusal.
 */
FL_EXPORT int fl_display_set_mode(struct fl_display_handle *intf,
				  const struct fl_display_mode *mode, struct fl_display_error *e);

/**
 * fl_display_set_event() - subscribe @h to events of @type, or stop
 * (ADF_SET_EVENT)
 * @enabled: 1 or 0
 * Return: 0; -EOPNOTSUPP (the object has no events); -EINVAL (not a type
 * it has, FL_DISPLAY_EVENT_TYPE_MAX included); -EALREADY (on or off already).
 */
FL_EXPORT int fl_display_set_event(struct fl_display_handle *h, uint32_t type, int enabled,
				   struct fl_display_error *e);

/**
 * fl_display_read_event() - read @h's next event, waiting for one
 * @ret_event: a malloc()ed event of its ->length bytes, the caller's (free())
 *
 * fl_display_read_event_fd() on @h's fd, once that fd is checked to be
 * still the one the library gave out.
 * Return: 0; -EINVAL (@h or @ret_event NULL); -EBADF (the program closed
 * or replaced @h's fd); fl_display_read_event_fd()'s errors.
 */
FL_EXPORT int fl_display_read_event(struct fl_display_handle *h,
				    struct fl_display_event **ret_event);

/**
 * fl_display_read_event_fd() - read the next event from a handle's fd,
 * waiting for one
 * @fd: fl_display_get_fd() of a handle, or a copy of it (borrowed)
 * @ret_event: a malloc()ed event of its ->length bytes, the caller's
 *	(free()); set on success only
 *
 * The byte stream as libadf's adf_read_event() reads it (the libadf
 * drop-in's is this call): one read() of the header, then one of the
 * rest. The fd is not checked: any fd is read, as read() would.
 * Return: 0; -EINVAL (@ret_event NULL); -EIO (a read shorter than asked,
 * or a length below the header's); -ENOMEM; read()'s errors: -EAGAIN
 * when the fd was made non-blocking and nothing is there, -EINTR when a
 * signal whose handler has no SA_RESTART came first, -EBADF.
 */
FL_EXPORT int fl_display_read_event_fd(int fd, struct fl_display_event **ret_event);

/**
 * fl_display_simple_buffer_alloc() - a buffer of @w × @h in RGB @format
 * that interface @intf can scan out (ADF_SIMPLE_BUFFER_ALLOC)
 * @ret_fd: its memory (mmap() it: @ret_pitch × @h bytes at @ret_offset),
 *	the caller's
 * The virtual driver's come from the heap table's ``display-scanout`` usage
 * (<fenceline/heap-table.h>), as any buffer a display engine scans out.
 * Return: 0; -EINVAL (a format not in ADF's RGB list, a size of 0 or
 * above 65535, not an interface handle); -EOPNOTSUPP; the heap table's
 * -E2BIG (larger than the scan-out allows), -ENODEV, -ENOMEM.
 */
FL_EXPORT int fl_display_simple_buffer_alloc(struct fl_display_handle *intf, uint32_t w, uint32_t h,
					     uint32_t format, int *ret_fd, uint32_t *ret_offset,
					     uint32_t *ret_pitch, struct fl_display_error *e);

/**
 * struct fl_display_post - one whole frame for a device
 * @intfs, @n_intfs: the interfaces it is for (up to FL_DISPLAY_MAX_INTERFACES)
 * @bufs, @n_bufs: its buffers (up to FL_DISPLAY_MAX_BUFFERS)
 * @custom, @custom_size: driver data (up to FL_DISPLAY_MAX_CUSTOM_DATA bytes)
 * @flags: FL_DISPLAY_POST_*
 * @fence_type: FL_DISPLAY_FENCE_*
 * @layers: NULL, or @n_bufs layers, @layers[i] describing @bufs[i] (a
 *	parallel array, so that struct fl_display_buffer, which libadf's
 *	drop-in and simple posts share, keeps its layout). A field added at
 *	the end: callers that initialise the struct with designated
 *	initialisers or zero it get NULL, today's meaning.
 * @writeback: NULL, or the destination of the composed frame when the
 *	post names a memory-writeback interface (added at the end likewise).
 *	The frame is written when the post flips, before its PRESENT fence
 *	signals: that fence says the destination holds the frame.
 */
struct fl_display_post {
	const uint32_t *intfs;
	size_t n_intfs;
	const struct fl_display_buffer *bufs;
	size_t n_bufs;
	const void *custom;
	size_t custom_size;
	uint32_t flags;
	uint32_t fence_type;
	const struct fl_display_layer *layers;
	const struct fl_display_writeback *writeback;
};

/**
 * fl_display_post() - post a frame (ADF_POST_CONFIG_V2)
 * @ret_fence: the fence of @post->fence_type, a fenceline fence fd (the
 *	caller's), or -1 for FL_DISPLAY_FENCE_NONE and TEST_ONLY; may be NULL
 *	(a fence is then closed)
 *
 * Every check happens before this returns, and a refusal changes nothing:
 * counts, interface and engine ids, formats, each plane's pitch and size
 * (ADF's generic check), the driver's own. Then the post is queued and
 * flips at the first vsync after its acquire fences signalled; a fence
 * that fails, or has not signalled after the service's fence timeout, keeps
 * it off the screen. With FL_DISPLAY_POST_TEST_ONLY it is only checked.
 * The layers (@post->layers) are checked too: each source rect inside its
 * buffer, each destination rect inside the current mode of every interface
 * of the post, distinct z orders, blend, transform, filter, plane alpha;
 * and the writeback destination (@post->writeback): only with a memory
 * interface among @post->intfs, of that interface's mode's size, a format
 * the compositor writes, pitch and memory big enough.
 * Return: 0; -EINVAL (a count, a format, a buffer that does not fit its
 * memory, an acquire fence that is no fence or no open fd, a layer or
 * writeback destination the rules above refuse...), -EBADF (a plane's or
 * the writeback destination's fd is not open: ADF's dma_buf_get() error),
 * -ENOENT (an unknown overlay engine), the driver's errors; @e names the
 * buffer, plane and rule.
 */
FL_EXPORT int fl_display_post(struct fl_display_handle *dev, const struct fl_display_post *post,
			      int *ret_fence, struct fl_display_error *e);

/**
 * fl_display_simple_post() - post the one buffer @buf on interface @intf
 * with the driver's description of it (ADF_SIMPLE_POST_CONFIG_V2)
 * Return: as fl_display_post().
 */
FL_EXPORT int fl_display_simple_post(struct fl_display_handle *intf,
				     const struct fl_display_buffer *buf, uint32_t fence_type,
				     int *ret_fence, struct fl_display_error *e);

/**
 * fl_display_set_connected() - plug or unplug an interface of a driver
 * that can simulate it (the virtual one); when it returns, the interface's
 * data (fl_display_interface_get_data()) shows the new state and modes,
 * and the HOTPLUG event is in the subscribed handles' rings
 * Return: 0; -EALREADY; -EOPNOTSUPP; -EINVAL (not an interface handle).
 */
FL_EXPORT int fl_display_set_connected(struct fl_display_handle *intf, int connected,
				       struct fl_display_error *e);

/**
 * fl_display_capture() - what interface @intf shows now, as an image
 * @format: FL_FOURCC('X', 'R', '2', '4') (XRGB8888) or
 *	FL_FOURCC('A', 'R', '2', '4') (ARGB8888)
 * @ret_fd: a new memfd, the caller's: *@ret_h lines of *@ret_pitch bytes
 *	from offset 0, the interface's current mode's size
 *
 * The frame of the post on screen on @intf (its buffers composed in
 * software over black: as their layers say, and those without a layer at
 * the top-left corner at their own sizes, below the others), or black
 * when none is. A driver that composes in software does it only for
 * a capture: a post nobody looks at costs no pixel.
 * Return: 0; -EINVAL (another format, not an interface handle); -ENODEV
 * (the interface has no mode); -EOPNOTSUPP (the driver cannot show its
 * frames); -ENOMEM.
 */
FL_EXPORT int fl_display_capture(struct fl_display_handle *intf, uint32_t format, int *ret_fd,
				 uint32_t *ret_w, uint32_t *ret_h, uint32_t *ret_pitch,
				 struct fl_display_error *e);

/**
 * fl_display_device_get_stats() - the device's queue and its counters
 * Return: 0, -EINVAL (not a device handle).
 */
FL_EXPORT int fl_display_device_get_stats(struct fl_display_handle *dev,
					  struct fl_display_stats *ret, struct fl_display_error *e);

/**
 * enum fl_display_source_type - what feeds an overlay engine without a
 * buffer in memory (docs/display.md, "Live sources")
 * @FL_DISPLAY_SOURCE_NONE: none: the engine shows only what posts give it
 * @FL_DISPLAY_SOURCE_PATTERN: a test pattern the driver makes: colour bars,
 *	a gradient moving with the frame number, and the frame number itself
 * @FL_DISPLAY_SOURCE_STREAM: frames a client writes into a stream socket
 */
enum fl_display_source_type {
	FL_DISPLAY_SOURCE_NONE = 0,
	FL_DISPLAY_SOURCE_PATTERN = 1,
	FL_DISPLAY_SOURCE_STREAM = 2,
};

/* A stream's frame header: this magic, then the payload's length in bytes (w × h × 4). */
#define FL_DISPLAY_STREAM_MAGIC 0x464c5346u /* "FSLF" in memory: fenceline stream frame */

/**
 * struct fl_display_stream_frame - what precedes each frame of a stream
 * @magic: FL_DISPLAY_STREAM_MAGIC
 * @length: the bytes of pixels that follow: exactly the source's w × h × 4
 *
 * The pixels follow, w × h of the source's format, lines of w × 4 bytes,
 * top first. Anything else (another magic or length) is garbage: the
 * service stops reading the stream, and the last complete frame stays.
 */
struct fl_display_stream_frame {
	uint32_t magic;
	uint32_t length;
};

/**
 * struct fl_display_source - a live source for an overlay engine
 * @type: enum fl_display_source_type
 * @w, @h: the size of its frames, 1 to 16384 each
 * @format: its pixels, XRGB8888 or ARGB8888 (FL_FOURCC('X', 'R', '2',
 *	'4'), ...), one the engine lists; a PATTERN is XRGB8888
 * @fd: STREAM only (else -1): a connected SOCK_STREAM socket (a
 *	socketpair()'s end) the feeder writes frames into, each a struct
 *	fl_display_stream_frame and its pixels; borrowed: the service keeps
 *	its own copy, which it only ever reads without waiting
 * @layer: where the source is shown on each interface the engine is
 *	attached to, as a post's layer (FL_DISPLAY_LAYER_ENABLED set, its
 *	source rect inside @w × @h, its z order among the posts' layers)
 * @reserved: 0
 */
struct fl_display_source {
	uint32_t type;
	uint32_t w, h;
	uint32_t format;
	int fd;
	uint32_t reserved[3];
	struct fl_display_layer layer;
};

/**
 * fl_display_engine_set_source() - feed overlay engine @eng from a live
 * source, with no buffer in memory, or stop (type NONE)
 *
 * Until changed, every interface the engine is attached to shows the
 * source's newest complete frame at each vsync, beside what posts show; a
 * capture (fl_display_capture()) composes it too. The source lives as long
 * as the caller's connection to the service, as its posts: closing the
 * handle keeps it, the process's exit or fl_display_disconnect() removes
 * it, and so does setting the engine's source again (by anyone). A stream
 * whose feeder stops, sends a partial frame or closes keeps showing its
 * last complete frame; one that sends garbage is no longer read. Checked
 * synchronously, as posts.
 * Return: 0; -EINVAL (not an engine handle, a type, size (a frame over 32
 * MiB), format, layer or reserved field refused, a STREAM without a stream
 * socket, with the rule in @e); -EOPNOTSUPP (the driver has no live
 * sources); -ENOMEM (out of memory, or the device's streams would hold
 * more frames than the driver allows).
 */
FL_EXPORT int fl_display_engine_set_source(struct fl_display_handle *eng,
					   const struct fl_display_source *src,
					   struct fl_display_error *e);

FL_END_DECLS

#endif /* FENCELINE_DISPLAY_H */

/* SPDX-License-Identifier: MIT */
/*
 * ADF's object model (docs/display.md, "The model"; spec adf-ion.md
 * §1.2-§1.12): devices, interfaces, overlay engines, their ids, allowed and
 * active attachments, DPMS, modes and hotplug, the two-call data queries and
 * the synchronous checks of a post. No sockets, no threads, no fds: the
 * display service owns a struct fl_display, serialises every call on it
 * (ADF's per-device client lock) and does the I/O.
 *
 * Errors are ADF's: every function returns 0 or a negative errno and, when
 * given a struct fl_display_error, says why in it.
 */
#ifndef FL_DISPLAY_MODEL_H
#define FL_DISPLAY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "display-format.h"

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

/**
 * fl__display_mode_vrefresh() - the refresh rate a mode's timings give
 *
 * As adf_modeinfo_set_vrefresh(): clock / (htotal × vtotal), rounded to
 * the nearest Hz, doubled for interlace, halved for doublescan, divided by
 * vscan when it is above 1.
 * Return: Hz, or 0 when htotal or vtotal is 0.
 */
uint32_t fl__display_mode_vrefresh(const struct fl_display_mode *m);

/**
 * fl__display_mode_set_name() - names a mode "WxH", or "WxHi" if interlaced,
 * as adf_modeinfo_set_name()
 */
void fl__display_mode_set_name(struct fl_display_mode *m);

struct fl_display;
struct fl_display_device;
struct fl_display_interface;
struct fl_display_engine;

/**
 * struct fl_display_driver_ops - the driver's say in the model's calls
 *
 * The part of ADF's driver ops (spec §1.3) that the model calls; the post
 * ops (validate, post, state_free, ...) belong to the service. Every op is
 * optional and called with the model's caller holding its lock (ADF: the
 * client lock); none may call back into the model. @data is the driver
 * data given to fl__display_device_create().
 *
 * @attach: may veto an attachment of an allowed, detached pair: its
 *	negative errno is the call's. NULL: always allowed.
 * @detach: may veto a detachment, likewise.
 * @blank: puts the interface in DPMS @state (a valid state other than
 *	the current one). Return: 0 or a negative errno, and then the state
 *	is unchanged. NULL: blanking is refused with -EOPNOTSUPP.
 * @modeset: switches the interface to @mode (not necessarily one of its
 *	list: the driver decides). NULL: -EOPNOTSUPP.
 * @validate_custom_format: checks a buffer whose fourcc is not standard
 *	(fl__display_buffer_check_layout() is there to help). NULL: such
 *	buffers are refused with -EINVAL, and an engine may not list such a
 *	fourcc.
 * @custom_data: writes at most FL_DISPLAY_MAX_CUSTOM_DATA bytes of
 *	driver-private description of an object to @buf (exactly one of
 *	@dev, @intf, @eng is not NULL) and sets @size. NULL: no custom data.
 */
struct fl_display_driver_ops {
	int (*attach)(void *data, struct fl_display_engine *eng, struct fl_display_interface *intf);
	int (*detach)(void *data, struct fl_display_engine *eng, struct fl_display_interface *intf);
	int (*blank)(void *data, struct fl_display_interface *intf, enum fl_display_dpms state);
	int (*modeset)(void *data, struct fl_display_interface *intf,
		       const struct fl_display_mode *mode);
	int (*validate_custom_format)(void *data, const struct fl_display_buffer *buf, size_t index,
				      struct fl_display_error *e);
	int (*custom_data)(void *data, const struct fl_display_device *dev,
			   const struct fl_display_interface *intf,
			   const struct fl_display_engine *eng, void *buf, size_t *size);
};

/**
 * fl_display_flush_fn - the service's queue flush
 *
 * ADF drains a device's post queue (waits until every queued post has
 * flipped) before blanking to a state other than ON and before a
 * modeset. The model calls this, before the driver's op, for exactly those
 * two; the service implements it. It must not call back into the model.
 */
typedef void (*fl_display_flush_fn)(struct fl_display_device *dev, void *data);

/* The root: the display service's set of devices and their id space. */

/**
 * fl__display_create() - an empty set of devices
 * Return: it, or NULL without memory. Free with fl__display_destroy().
 */
struct fl_display *fl__display_create(void);

/* Destroys every device and @d; NULL does nothing. */
void fl__display_destroy(struct fl_display *d);

/**
 * fl__display_device_create() - a device, with the lowest free device id
 * @name: up to FL_DISPLAY_NAME_LEN - 1 bytes, NUL-terminated
 * @ops: the driver's ops (kept; must outlive the device); NULL for none
 * @data: passed to @ops
 * @padding: the device's buffer padding quirk
 * @ret_dev: set on success; owned by @d
 *
 * Return: 0, -EINVAL (a name empty or too long, a bad padding), -ENOSPC
 * (more than 2^31 devices) or -ENOMEM.
 */
int fl__display_device_create(struct fl_display *d, const char *name,
			      const struct fl_display_driver_ops *ops, void *data,
			      enum fl_display_padding padding, struct fl_display_device **ret_dev,
			      struct fl_display_error *e);

/* Removes @dev from its set and frees it, its interfaces and engines; its id becomes free. */
void fl__display_device_destroy(struct fl_display_device *dev);

/* The device of id @id, or NULL. */
struct fl_display_device *fl__display_device_get(struct fl_display *d, uint32_t id);

/* Sets the service's flush hook of @dev (NULL: none, the flush is a no-op). */
void fl__display_device_set_flush(struct fl_display_device *dev, fl_display_flush_fn fn,
				  void *data);

uint32_t fl__display_device_id(const struct fl_display_device *dev);
const char *fl__display_device_name(const struct fl_display_device *dev);
enum fl_display_padding fl__display_device_padding(const struct fl_display_device *dev);
size_t fl__display_device_num_interfaces(const struct fl_display_device *dev);
size_t fl__display_device_num_engines(const struct fl_display_device *dev);

/**
 * fl__display_interface_add() - adds an interface, with the device's next
 * interface id, as adf_interface_init()
 * @type: an fl_display_intf_type, FL_DISPLAY_INTF_MEMORY included, or a
 *	driver type from FL_DISPLAY_INTF_CUSTOM below FL_DISPLAY_INTF_TYPE_MAX
 * @type_str: a driver type's name (required for those, NULL for the others)
 * @flags: FL_DISPLAY_INTF_* bits
 * @name: up to FL_DISPLAY_NAME_LEN - 1 bytes
 * @width_mm, @height_mm: the physical size, 0 if unknown
 * @ret_intf: set on success; owned by the device
 *
 * The interface starts DPMS OFF, disconnected, with no modes and a zeroed
 * current mode, as ADF's. Its idx is how many interfaces of the same type
 * the device had before (DSI.0, DSI.1).
 *
 * Unlike ADF, which refused every type from 6 to 128 inclusive (memory
 * writeback and the first driver type with them, an off-by-one), types 6
 * and 128 are accepted.
 *
 * Return: 0, -EINVAL (a type or flag ADF refuses, a bad name, a driver type
 * without a type name), -ENOSPC (FL_DISPLAY_MAX_INTERFACES already) or -ENOMEM.
 */
int fl__display_interface_add(struct fl_display_device *dev, uint32_t type, const char *type_str,
			      uint32_t flags, const char *name, uint16_t width_mm,
			      uint16_t height_mm, struct fl_display_interface **ret_intf,
			      struct fl_display_error *e);

/**
 * fl__display_engine_add() - adds an overlay engine, with the device's next
 * engine id, as adf_overlay_engine_init()
 * @formats: the fourccs it scans out (copied), 1 to FL_DISPLAY_MAX_FORMATS,
 *	no duplicates; a non-standard one needs the driver's
 *	validate_custom_format
 *
 * Return: 0, -EINVAL (as above, or a bad name), -ENOSPC or -ENOMEM.
 */
int fl__display_engine_add(struct fl_display_device *dev, const char *name, const uint32_t *formats,
			   size_t n_formats, struct fl_display_engine **ret_eng,
			   struct fl_display_error *e);

/* An interface or engine of @dev by id, or NULL. */
struct fl_display_interface *fl__display_interface_get(struct fl_display_device *dev, uint32_t id);
struct fl_display_engine *fl__display_engine_get(struct fl_display_device *dev, uint32_t id);

uint32_t fl__display_interface_id(const struct fl_display_interface *intf);
struct fl_display_device *fl__display_interface_device(const struct fl_display_interface *intf);
uint32_t fl__display_engine_id(const struct fl_display_engine *eng);
struct fl_display_device *fl__display_engine_device(const struct fl_display_engine *eng);

/* Whether @eng lists @fourcc (adf_overlay_engine_supports_format()). */
bool fl__display_engine_supports(const struct fl_display_engine *eng, uint32_t fourcc);

/**
 * fl__display_attachment_allow() - declares that the hardware can wire
 * @eng to @intf, as adf_attachment_allow() (driver init only)
 *
 * Return: 0, -EINVAL (not both of the same device), -EALREADY (declared
 * before), -ENOSPC (FL_DISPLAY_MAX_ATTACHMENTS already) or -ENOMEM.
 */
int fl__display_attachment_allow(struct fl_display_engine *eng, struct fl_display_interface *intf,
				 struct fl_display_error *e);

/**
 * fl__display_attach() - ADF_ATTACH
 * @eng_id, @intf_id: ids as userspace gives them
 *
 * Return: 0; -EINVAL for an unknown id or a pair that is not allowed;
 * -EALREADY when attached; the driver's attach() error (nothing changes).
 */
int fl__display_attach(struct fl_display_device *dev, uint32_t eng_id, uint32_t intf_id,
		       struct fl_display_error *e);

/**
 * fl__display_detach() - ADF_DETACH
 *
 * Return: 0; -EINVAL for an unknown id or a pair that is not attached
 * (ADF: detaching twice is -EINVAL, not -EALREADY); the driver's detach()
 * error (nothing changes).
 */
int fl__display_detach(struct fl_display_device *dev, uint32_t eng_id, uint32_t intf_id,
		       struct fl_display_error *e);

/* Whether the pair is attached, or allowed (false for unknown ids). */
bool fl__display_attached(struct fl_display_device *dev, uint32_t eng_id, uint32_t intf_id);
bool fl__display_attach_allowed(struct fl_display_device *dev, uint32_t eng_id, uint32_t intf_id);

/* The interface's state, as ADF_GET_INTERFACE_DATA reports it. */
uint32_t fl__display_interface_type(const struct fl_display_interface *intf);
/* The type as sysfs shows it: "DSI", ..., "memory", the driver's name, or "custom". */
const char *fl__display_interface_type_str(const struct fl_display_interface *intf);
uint32_t fl__display_interface_idx(const struct fl_display_interface *intf);
uint32_t fl__display_interface_flags(const struct fl_display_interface *intf);
enum fl_display_dpms fl__display_interface_dpms(const struct fl_display_interface *intf);
bool fl__display_interface_connected(const struct fl_display_interface *intf);
const struct fl_display_mode *
fl__display_interface_current_mode(const struct fl_display_interface *intf);
/* The mode list: *ret_n modes, valid until the next hotplug of @intf. */
const struct fl_display_mode *fl__display_interface_modes(const struct fl_display_interface *intf,
							  size_t *ret_n);

/**
 * fl__display_interface_blank() - ADF_BLANK
 * @state: the DPMS state asked for, unchecked (it comes from a peer)
 *
 * In ADF's order: no driver blank → -EOPNOTSUPP; @state above OFF →
 * -EINVAL; @state the current one → -EBUSY; a state other than ON flushes
 * the queue first; then the driver's blank(), and the state is recorded
 * only if it succeeds.
 *
 * Return: 0 or one of those errors, or the driver's.
 */
int fl__display_interface_blank(struct fl_display_interface *intf, uint32_t state,
				struct fl_display_error *e);

/**
 * fl__display_interface_set_mode() - ADF_SET_MODE
 *
 * No driver modeset → -EOPNOTSUPP; otherwise the queue is flushed, the
 * driver called, and on success @mode (copied) becomes the current mode.
 * As ADF, the mode is not checked against the list: the driver decides.
 * Return: 0, -EOPNOTSUPP or the driver's error.
 */
int fl__display_interface_set_mode(struct fl_display_interface *intf,
				   const struct fl_display_mode *mode, struct fl_display_error *e);

/**
 * fl__display_interface_hotplug() - the driver's hotplug notification
 * @connected: the new state
 * @modes: the new mode list (copied), only when @connected
 * @n_modes: 0 to FL_DISPLAY_MAX_MODES
 *
 * Replaces the hotplug state and the mode list at once: on failure nothing
 * changed. Disconnecting empties the list. The current mode stays (ADF's).
 * Sending the HOTPLUG event is the caller's.
 *
 * Return: 0, -EINVAL (too many modes, or modes with @connected false) or
 * -ENOMEM.
 */
int fl__display_interface_hotplug(struct fl_display_interface *intf, bool connected,
				  const struct fl_display_mode *modes, size_t n_modes,
				  struct fl_display_error *e);

/**
 * fl__display_interface_set_current_mode() - the driver's initial mode
 *
 * What a driver's init sets before userspace asks anything (ADF drivers
 * wrote current_mode directly); no flush, no driver call.
 */
void fl__display_interface_set_current_mode(struct fl_display_interface *intf,
					    const struct fl_display_mode *mode);

/* The two-call queries: see docs/display.md, "Data queries". */

/* One attachment, as struct adf_attachment_config. */
struct fl_display_attachment {
	uint32_t engine;
	uint32_t interface;
};

/**
 * struct fl_display_device_data - ADF_GET_DEVICE_DATA
 * @name: filled
 * @attachments, @n_attachments: in: an array and its capacity (0 and NULL
 *	to ask the count); out: the true count (min of both copied)
 * @allowed, @n_allowed: likewise, for the allowed attachments
 * @custom_data, @custom_data_size: likewise, in bytes
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
 * struct fl_display_interface_data - ADF_GET_INTERFACE_DATA; arrays as in
 * struct fl_display_device_data
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

/* ADF_GET_OVERLAY_ENGINE_DATA; arrays as in struct fl_display_device_data. */
struct fl_display_engine_data {
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t *formats;
	size_t n_formats;
	void *custom_data;
	size_t custom_data_size;
};

/**
 * fl__display_device_data() - fills @data as ADF_GET_DEVICE_DATA does
 *
 * A capacity above ADF's maximum (512 attachments, 4096 bytes of custom
 * data) is -EINVAL, as in ADF; a capacity with a NULL array likewise.
 * Return: 0, -EINVAL, or the driver's custom_data() error.
 */
int fl__display_device_data(struct fl_display_device *dev, struct fl_display_device_data *data,
			    struct fl_display_error *e);

/* As fl__display_device_data(); limits: 60 modes, 4096 bytes. */
int fl__display_interface_data(struct fl_display_interface *intf,
			       struct fl_display_interface_data *data, struct fl_display_error *e);

/* As fl__display_device_data(); limits: 1024 formats, 4096 bytes. */
int fl__display_engine_data(struct fl_display_engine *eng, struct fl_display_engine_data *data,
			    struct fl_display_error *e);

/**
 * fl__display_post_check() - the synchronous, generic part of a post
 * @intf_ids: the interfaces the post names
 * @bufs: its buffers, planes' memory sizes resolved
 * @custom_size: its custom data's size
 *
 * Spec §1.5 steps 2-6 without the fds (which the service resolves): counts
 * within ADF's limits (1024 interfaces, 56 buffers, 4096 bytes) else
 * -EINVAL; every interface id known, else -EINVAL; per buffer: more than 4
 * planes → -EINVAL, an unknown engine → -ENOENT, a fourcc the engine does
 * not list → -EINVAL, then the generic check for a standard format or the
 * driver's validate_custom_format() for another. As ADF, attachments are
 * not looked at: routing is the driver's validate(), which comes after
 * this. Changes nothing.
 *
 * Return: 0 or the first error, with the buffer, plane and rule in @e.
 */
int fl__display_post_check(struct fl_display_device *dev, const uint32_t *intf_ids, size_t n_intfs,
			   const struct fl_display_buffer *bufs, size_t n_bufs, size_t custom_size,
			   struct fl_display_error *e);

#endif /* FL_DISPLAY_MODEL_H */

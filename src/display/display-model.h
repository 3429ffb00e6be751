/* SPDX-License-Identifier: MIT */
/*
 * ADF's object model (docs/display.md, "The model"; spec adf-ion.md
 * §1.2-§1.12): devices, interfaces, overlay engines, their ids, allowed and
 * active attachments, DPMS, modes and hotplug, the two-call data queries and
 * the synchronous checks of a post. No sockets, no threads, no fds: the
 * display service owns a struct fl__display_set, serialises every call on it
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

struct fl__display_set;
struct fl__display_device;
struct fl__display_interface;
struct fl__display_engine;

/**
 * fl__display_flush_fn - the service's queue flush
 *
 * ADF drains a device's post queue (waits until every queued post has
 * flipped) before blanking to a state other than ON and before a
 * modeset. The model calls this, before the driver's op, for exactly those
 * two; the service implements it. It must not call back into the model.
 */
typedef void (*fl__display_flush_fn)(struct fl__display_device *dev, void *data);

/* The root: the display service's set of devices and their id space. */

/**
 * fl__display_create() - an empty set of devices
 * Return: it, or NULL without memory. Free with fl__display_destroy().
 */
struct fl__display_set *fl__display_create(void);

/* Destroys every device and @d; NULL does nothing. */
void fl__display_destroy(struct fl__display_set *d);

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
int fl__display_device_create(struct fl__display_set *d, const char *name,
			      const struct fl_display_driver_ops *ops, void *data,
			      enum fl__display_padding padding, struct fl__display_device **ret_dev,
			      struct fl_display_error *e);

/* Removes @dev from its set and frees it, its interfaces and engines; its id becomes free. */
void fl__display_device_destroy(struct fl__display_device *dev);

/* The device of id @id, or NULL. */
struct fl__display_device *fl__display_device_get(struct fl__display_set *d, uint32_t id);

/* Sets the service's flush hook of @dev (NULL: none, the flush is a no-op). */
void fl__display_device_set_flush(struct fl__display_device *dev, fl__display_flush_fn fn,
				  void *data);

uint32_t fl__display_device_id(const struct fl__display_device *dev);
const char *fl__display_device_name(const struct fl__display_device *dev);
enum fl__display_padding fl__display_device_padding(const struct fl__display_device *dev);
size_t fl__display_device_num_interfaces(const struct fl__display_device *dev);
size_t fl__display_device_num_engines(const struct fl__display_device *dev);

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
int fl__display_interface_add(struct fl__display_device *dev, uint32_t type, const char *type_str,
			      uint32_t flags, const char *name, uint16_t width_mm,
			      uint16_t height_mm, struct fl__display_interface **ret_intf,
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
int fl__display_engine_add(struct fl__display_device *dev, const char *name,
			   const uint32_t *formats, size_t n_formats,
			   struct fl__display_engine **ret_eng, struct fl_display_error *e);

/* An interface or engine of @dev by id, or NULL. */
struct fl__display_interface *fl__display_interface_get(struct fl__display_device *dev,
							uint32_t id);
struct fl__display_engine *fl__display_engine_get(struct fl__display_device *dev, uint32_t id);

uint32_t fl__display_interface_id(const struct fl__display_interface *intf);
struct fl__display_device *fl__display_interface_device(const struct fl__display_interface *intf);
uint32_t fl__display_engine_id(const struct fl__display_engine *eng);
struct fl__display_device *fl__display_engine_device(const struct fl__display_engine *eng);

/* Whether @eng lists @fourcc (adf_overlay_engine_supports_format()). */
bool fl__display_engine_supports(const struct fl__display_engine *eng, uint32_t fourcc);

/**
 * fl__display_attachment_allow() - declares that the hardware can wire
 * @eng to @intf, as adf_attachment_allow() (driver init only)
 *
 * Return: 0, -EINVAL (not both of the same device), -EALREADY (declared
 * before), -ENOSPC (FL_DISPLAY_MAX_ATTACHMENTS already) or -ENOMEM.
 */
int fl__display_attachment_allow(struct fl__display_engine *eng, struct fl__display_interface *intf,
				 struct fl_display_error *e);

/**
 * fl__display_attach() - ADF_ATTACH
 * @eng_id, @intf_id: ids as userspace gives them
 *
 * Return: 0; -EINVAL for an unknown id or a pair that is not allowed;
 * -EALREADY when attached; the driver's attach() error (nothing changes).
 */
int fl__display_attach(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id,
		       struct fl_display_error *e);

/**
 * fl__display_detach() - ADF_DETACH
 *
 * Return: 0; -EINVAL for an unknown id or a pair that is not attached
 * (ADF: detaching twice is -EINVAL, not -EALREADY); the driver's detach()
 * error (nothing changes).
 */
int fl__display_detach(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id,
		       struct fl_display_error *e);

/* Whether the pair is attached, or allowed (false for unknown ids). */
bool fl__display_attached(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id);
bool fl__display_attach_allowed(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id);

/* The interface's state, as ADF_GET_INTERFACE_DATA reports it. */
uint32_t fl__display_interface_type(const struct fl__display_interface *intf);
/* The type as sysfs shows it: "DSI", ..., "memory", the driver's name, or "custom". */
const char *fl__display_interface_type_str(const struct fl__display_interface *intf);
uint32_t fl__display_interface_idx(const struct fl__display_interface *intf);
uint32_t fl__display_interface_flags(const struct fl__display_interface *intf);
enum fl_display_dpms fl__display_interface_dpms(const struct fl__display_interface *intf);
bool fl__display_interface_connected(const struct fl__display_interface *intf);
const struct fl_display_mode *
fl__display_interface_current_mode(const struct fl__display_interface *intf);
/* The mode list: *ret_n modes, valid until the next hotplug of @intf. */
const struct fl_display_mode *fl__display_interface_modes(const struct fl__display_interface *intf,
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
int fl__display_interface_blank(struct fl__display_interface *intf, uint32_t state,
				struct fl_display_error *e);

/**
 * fl__display_interface_set_mode() - ADF_SET_MODE
 *
 * No driver modeset → -EOPNOTSUPP; otherwise the queue is flushed, the
 * driver called, and on success @mode (copied) becomes the current mode.
 * As ADF, the mode is not checked against the list: the driver decides.
 * Return: 0, -EOPNOTSUPP or the driver's error.
 */
int fl__display_interface_set_mode(struct fl__display_interface *intf,
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
int fl__display_interface_hotplug(struct fl__display_interface *intf, bool connected,
				  const struct fl_display_mode *modes, size_t n_modes,
				  struct fl_display_error *e);

/**
 * fl__display_interface_set_current_mode() - the driver's initial mode
 *
 * What a driver's init sets before userspace asks anything (ADF drivers
 * wrote current_mode directly); no flush, no driver call.
 */
void fl__display_interface_set_current_mode(struct fl__display_interface *intf,
					    const struct fl_display_mode *mode);

/**
 * fl__display_gang_add() - makes @n interfaces of @dev one gang (docs/display.md,
 * "Ganged interfaces"), the config's doing (driver init only)
 * @ids: their ids
 * @tiles: per interface, its tile's column and row in the gang's grid
 *
 * From then on blank() and set_mode() of any member act on every member
 * (the driver called for each, in id order; if it refuses one, those
 * already changed are put back), and a post that names a member must name
 * all (fl__display_post_check()).
 *
 * Return: 0, -EINVAL (fewer than 2 or more than FL_DISPLAY_GANG_MAX, an
 * unknown id or one given twice, a memory interface, tiles that do not
 * fill their grid exactly once), -EALREADY (a member in a gang already).
 */
int fl__display_gang_add(struct fl__display_device *dev, const uint32_t *ids,
			 const uint32_t (*tiles)[2], size_t n, struct fl_display_error *e);

/**
 * fl__display_gang_grid() - the grid of a gang's @n tiles (each a column
 * and a row), which they must fill exactly once
 * Return: 0 and *@ret_cols, *@ret_rows; -EINVAL (fewer than 2 or more than
 * FL_DISPLAY_GANG_MAX tiles, one outside any such grid, a hole, a tile
 * twice), with the rule in @e.
 */
int fl__display_gang_grid(const uint32_t (*tiles)[2], size_t n, uint32_t *ret_cols,
			  uint32_t *ret_rows, struct fl_display_error *e);

/* @intf's gang. Return: 0, -ENODATA when it has none. */
int fl__display_interface_gang(const struct fl__display_interface *intf,
			       struct fl_display_gang *ret);

/*
 * The size of the frame a post to @intf composes: its current mode's, or
 * for a ganged interface the whole panel's (the grid times the mode).
 */
void fl__display_interface_frame_size(const struct fl__display_interface *intf, uint32_t *ret_w,
				      uint32_t *ret_h);

/* The two-call queries: see docs/display.md, "Data queries". */

/**
 * fl__display_device_data() - fills @data as ADF_GET_DEVICE_DATA does
 *
 * A capacity above ADF's maximum (512 attachments, 4096 bytes of custom
 * data) is -EINVAL, as in ADF; a capacity with a NULL array likewise.
 * Return: 0, -EINVAL, or the driver's custom_data() error.
 */
int fl__display_device_data(struct fl__display_device *dev, struct fl_display_device_data *data,
			    struct fl_display_error *e);

/* As fl__display_device_data(); limits: 60 modes, 4096 bytes. */
int fl__display_interface_data(struct fl__display_interface *intf,
			       struct fl_display_interface_data *data, struct fl_display_error *e);

/* As fl__display_device_data(); limits: 1024 formats, 4096 bytes. */
int fl__display_engine_data(struct fl__display_engine *eng, struct fl_display_engine_data *data,
			    struct fl_display_error *e);

/**
 * fl__display_post_check() - the synchronous, generic part of a post
 * @intf_ids: the interfaces the post names
 * @bufs: its buffers, planes' memory sizes resolved
 * @custom_size: its custom data's size
 *
 * Spec §1.5 steps 2-6 without the fds (which the service resolves): counts
 * within ADF's limits (1024 interfaces, 56 buffers, 4096 bytes) else
 * -EINVAL; every interface id known, else -EINVAL; every member of a
 * gang named when one is, else -EINVAL; per buffer: more than 4
 * planes → -EINVAL, an unknown engine → -ENOENT, a fourcc the engine does
 * not list → -EINVAL, then the generic check for a standard format or the
 * driver's validate_custom_format() for another. As ADF, attachments are
 * not looked at: routing is the driver's validate(), which comes after
 * this. Changes nothing.
 *
 * Return: 0 or the first error, with the buffer, plane and rule in @e.
 */
int fl__display_post_check(struct fl__display_device *dev, const uint32_t *intf_ids, size_t n_intfs,
			   const struct fl_display_driver_buffer *bufs, size_t n_bufs,
			   size_t custom_size, struct fl_display_error *e);

#endif /* FL_DISPLAY_MODEL_H */

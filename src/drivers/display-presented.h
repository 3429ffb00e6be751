/* SPDX-License-Identifier: MIT */
/*
 * Drivers built on the virtual one, shared by the in-tree drivers
 * (src/drivers/display-virtual is the virtual driver; display-terminal and
 * display-window are built on it).
 */
#ifndef FL_DRIVERS_DISPLAY_PRESENTED_H
#define FL_DRIVERS_DISPLAY_PRESENTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_USE_UNSTABLE_DRIVER_API
#include <fenceline/driver/display.h>

/*
 * Drivers built on the virtual one (docs/display.md, "Drivers built on the
 * virtual one"): the terminal and the window show the virtual device's
 * frames somewhere. They are the virtual driver, with its model, clock,
 * composition and simple buffers, plus a presenter: at each vsync of a lit
 * interface the presenter may show the frame, which it gets from
 * fl__display_virtual_capture() (or fl__display_virtual_capture_frame()).
 * FL__DISPLAY_PRESENTED_DRIVER() defines their ops table from the
 * presenter's functions: FL__DISPLAY_VIRTUAL_DRIVER(name, create, probe)
 * with a create that calls fl__display_virtual_create_presented().
 *
 * @create: the presenter's state for the device the virtual state @v is
 *	for (pass @v to fl__display_virtual_capture()); may read the
 *	device's options with @host->option(). Return: 0 or a negative
 *	errno (the device is not made).
 * @destroy: frees it.
 * @present: interface @intf had a vsync (it is lit and connected): show
 *	its frame if it is the one shown. On the service's loop.
 * @set_event: turn the presenter's driver event @type on or off (the
 *	virtual driver's own are its); NULL, or -EINVAL: no such type.
 */
struct fl__display_presenter_ops {
	int (*create)(const struct fl_display_host *host, void *v, void **ret);
	void (*destroy)(void *p);
	void (*present)(void *p, uint32_t intf);
	int (*set_event)(void *p, uint32_t type, bool enabled);
};

/*
 * The key event of the drivers built on the virtual one that have keys (the
 * terminal, the window; named for the first), on the device (a device
 * handle subscribes with fl_display_set_event() or libadf's
 * adf_set_event()); 16 bytes with the header. @code is the evdev key
 * (<linux/input-event-codes.h>), 0 for a character without a key of its
 * own; @mods FL_DISPLAY_KEY_* (the terminal decoder's FL_TERM_MOD_*, xterm's
 * bits); @ch the Unicode character typed, 0 for none. One event a key
 * pressed (or repeated); modifiers alone are no keys.
 */
#define FL_DISPLAY_TERMINAL_EVENT_KEY (FL_DISPLAY_EVENT_DEVICE_CUSTOM + 1)

#define FL_DISPLAY_KEY_SHIFT	      1u
#define FL_DISPLAY_KEY_ALT	      2u
#define FL_DISPLAY_KEY_CTRL	      4u

struct fl_display_terminal_key {
	uint16_t code;
	uint16_t mods;
	uint32_t ch;
};

struct fl_display_terminal_key_event {
	struct fl_display_event base; /* type 129, length 16 */
	struct fl_display_terminal_key key;
};

int fl__display_virtual_create_presented(const struct fl_display_host *host,
					 const struct fl__display_presenter_ops *pr,
					 void **ret_data);

/* The virtual driver's ops, for FL__DISPLAY_VIRTUAL_DRIVER(). */
void fl__display_virtual_destroy(void *data);
int fl__display_virtual_blank(void *data, uint32_t intf, enum fl_display_dpms state);
int fl__display_virtual_attach(void *data, uint32_t eng, uint32_t intf);
int fl__display_virtual_detach(void *data, uint32_t eng, uint32_t intf);
int fl__display_virtual_modeset(void *data, uint32_t intf, const struct fl_display_mode *mode);
int fl__display_virtual_validate_custom_format(void *data,
					       const struct fl_display_driver_buffer *buf,
					       size_t index, struct fl_display_error *e);
int fl__display_virtual_validate(void *data, const struct fl_display_driver_post *post,
				 void **ret_state, struct fl_display_error *e);
void fl__display_virtual_post(void *data, void *state);
void fl__display_virtual_state_free(void *data, void *state);
int fl__display_virtual_alloc_simple_buffer(void *data, uint32_t intf, uint32_t w, uint32_t h,
					    uint32_t format, int *ret_fd, uint32_t *ret_offset,
					    uint32_t *ret_pitch);
int fl__display_virtual_describe_simple_post(void *data, uint32_t intf,
					     const struct fl_display_driver_buffer *buf_desc,
					     void *buf, size_t *size);
int fl__display_virtual_set_connected(void *data, uint32_t intf, bool connected);
/* What interface @intf shows now, composed into @dst (one RGB plane of its mode's size). */
int fl__display_virtual_capture(void *data, uint32_t intf,
				const struct fl_display_driver_buffer *dst);
int fl__display_virtual_set_source(void *data, uint32_t eng, const struct fl_display_source *src,
				   struct fl_display_error *e);
int fl__display_virtual_set_event(void *data, enum fl_display_object_kind kind, uint32_t id,
				  uint32_t type, bool enabled);

#define FL__DISPLAY_VIRTUAL_DRIVER(name_, create_, probe_)                                      \
	{                                                                                       \
		.name = (name_),                                                                \
		.caps = FL_DISPLAY_CAP_VSYNC | FL_DISPLAY_CAP_HOTPLUG |                         \
			FL_DISPLAY_CAP_SIMPLE_BUFFERS | FL_DISPLAY_CAP_IMMEDIATE_FLIP,          \
		.create = (create_), .destroy = fl__display_virtual_destroy, .probe = (probe_), \
		.blank = fl__display_virtual_blank, .attach = fl__display_virtual_attach,       \
		.detach = fl__display_virtual_detach, .modeset = fl__display_virtual_modeset,   \
		.validate_custom_format = fl__display_virtual_validate_custom_format,           \
		.validate = fl__display_virtual_validate, .post = fl__display_virtual_post,     \
		.state_free = fl__display_virtual_state_free,                                   \
		.alloc_simple_buffer = fl__display_virtual_alloc_simple_buffer,                 \
		.describe_simple_post = fl__display_virtual_describe_simple_post,               \
		.set_connected = fl__display_virtual_set_connected,                             \
		.capture = fl__display_virtual_capture,                                         \
		.set_source = fl__display_virtual_set_source,                                   \
		.event_objects = 1u << FL_DISPLAY_OBJ_DEVICE,                                   \
		.set_event = fl__display_virtual_set_event,                                     \
	}

/*
 * A presenter's frame: interface @intf's frame as it shows now, composed
 * into @f's memfd (XRGB8888, pitch @w × 4, mapped read-only at @px), which
 * is kept from call to call and made again (named @name) when the mode's
 * size changes. Start with { .fd = -1 }; free with
 * fl__display_frame_free(). Return: 0, -ENODATA for an interface without
 * a mode, intf_state()'s, memfd's, mmap()'s or the capture's -errno.
 */
struct fl__display_frame {
	int fd;
	const uint32_t *px;
	uint32_t w, h;
};

int fl__display_virtual_capture_frame(void *v, const struct fl_display_host *host, uint32_t intf,
				      const char *name, struct fl__display_frame *f);
void fl__display_frame_free(struct fl__display_frame *f);

/*
 * The whole number the device's option @key gives, in [@min, @max], into
 * *@ret (left as it is when the config gives none): a presenter's
 * "interface", the window's "scale". Return: 0, -EINVAL for a value that is
 * not such a number.
 */
int fl__display_presenter_option_uint(const struct fl_display_host *host, const char *key,
				      uint32_t min, uint32_t max, uint32_t *ret);

/*
 * Defines @ops_, the const struct fl_display_driver_ops of driver @name_
 * built on the virtual one, whose presenter is @create_, @destroy_,
 * @present_ and @set_event_ (struct fl__display_presenter_ops) and whose
 * probe is @probe_ (or NULL).
 */
#define FL__DISPLAY_PRESENTED_DRIVER(ops_, name_, create_, destroy_, present_, set_event_, probe_) \
	static const struct fl__display_presenter_ops ops_##_presenter = {                         \
		.create = (create_),                                                               \
		.destroy = (destroy_),                                                             \
		.present = (present_),                                                             \
		.set_event = (set_event_),                                                         \
	};                                                                                         \
	static int ops_##_create(const struct fl_display_host *host, void **ret_data)              \
	{                                                                                          \
		return fl__display_virtual_create_presented(host, &ops_##_presenter, ret_data);    \
	}                                                                                          \
	const struct fl_display_driver_ops ops_ =                                                  \
		FL__DISPLAY_VIRTUAL_DRIVER(name_, ops_##_create, probe_)

/* A new memfd of @len bytes named @name (the caller's). Return: it, or memfd's or ftruncate's -errno. */
int fl__display_virtual_memfd(const char *name, uint64_t len);

#endif /* FL_DRIVERS_DISPLAY_PRESENTED_H */

/* SPDX-License-Identifier: MIT */
/*
 * Drivers built on the virtual one, shared by the in-tree drivers
 * (src/drivers/display-virtual is the virtual driver; display-terminal is
 * built on it).
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
 * fl__display_virtual_capture(). Their ops table is
 * FL__DISPLAY_VIRTUAL_DRIVER(name, create) with a create that calls
 * fl__display_virtual_create_presented().
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

#define FL__DISPLAY_VIRTUAL_DRIVER(name_, create_)                                            \
	{                                                                                     \
		.name = (name_),                                                              \
		.caps = FL_DISPLAY_CAP_VSYNC | FL_DISPLAY_CAP_HOTPLUG |                       \
			FL_DISPLAY_CAP_SIMPLE_BUFFERS | FL_DISPLAY_CAP_IMMEDIATE_FLIP,        \
		.create = (create_), .destroy = fl__display_virtual_destroy,                  \
		.blank = fl__display_virtual_blank, .attach = fl__display_virtual_attach,     \
		.detach = fl__display_virtual_detach, .modeset = fl__display_virtual_modeset, \
		.validate_custom_format = fl__display_virtual_validate_custom_format,         \
		.validate = fl__display_virtual_validate, .post = fl__display_virtual_post,   \
		.state_free = fl__display_virtual_state_free,                                 \
		.alloc_simple_buffer = fl__display_virtual_alloc_simple_buffer,               \
		.describe_simple_post = fl__display_virtual_describe_simple_post,             \
		.set_connected = fl__display_virtual_set_connected,                           \
		.capture = fl__display_virtual_capture,                                       \
		.set_source = fl__display_virtual_set_source,                                 \
		.event_objects = 1u << FL_DISPLAY_OBJ_DEVICE,                                 \
		.set_event = fl__display_virtual_set_event,                                   \
	}

/* A new memfd of @len bytes named @name (the caller's). Return: it, or memfd's or ftruncate's -errno. */
int fl__display_virtual_memfd(const char *name, uint64_t len);

#endif /* FL_DRIVERS_DISPLAY_PRESENTED_H */

/* SPDX-License-Identifier: MIT */
/*
 * The display config (docs/display.md, "The config file"): an INI file
 * describing display devices, their interfaces, overlay engines and allowed
 * attachments, read with the heap table's lexer (src/util/ini.h), and the
 * built-in default (data/displays.ini, embedded at build time). The config
 * is a description only: fl__display_config_instantiate() makes a device
 * of the model from one of its devices, with the driver's ops.
 */
#ifndef FL_DISPLAY_CONFIG_H
#define FL_DISPLAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "display-model.h"

/* Limits of the format (docs/display.md lists them). */
#define FL_DISPLAY_CONFIG_MAX_DEVICES 16
#define FL_DISPLAY_CONFIG_MAX_OBJECTS 64 /* interfaces, and engines, per device */
#define FL_DISPLAY_CONFIG_MAX_FORMATS 128 /* per engine */
#define FL_DISPLAY_CONFIG_MAX_OPTIONS 16 /* driver options, per device */
#define FL_DISPLAY_CONFIG_OPTION_LEN  256 /* an option's value, with its NUL */

/**
 * struct fl__display_config_interface - an [interface] section
 * @name: its name
 * @type: an fl_display_intf_type, or FL_DISPLAY_INTF_CUSTOM + k for the
 *	device's k-th distinct "custom:NAME" type
 * @type_str: a custom type's NAME ("" for the others)
 * @flags: FL_DISPLAY_INTF_*
 * @width_mm, @height_mm: physical size, 0 when not given
 * @connected: the hotplug state it starts in
 * @modes: the modes it has when connected (a disconnected interface
 *	gets them from the driver when it is plugged in)
 * @current: index of its current mode in @modes, -1 for none (a zeroed
 *	mode, as ADF's interfaces start)
 * @gang: the name of its gang ("" for none): interfaces of a device with
 *	the same name show one panel together (docs/display.md, "Ganged
 *	interfaces")
 * @gang_tile: its tile's column and row in the gang's grid
 * @background: ARGB8888 (alpha 0xff) shown where no buffer covers its
 *	frame; opaque black unless the config says
 * @line: its section header's line
 */
struct fl__display_config_interface {
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t type;
	char type_str[FL_DISPLAY_NAME_LEN];
	uint32_t flags;
	uint16_t width_mm, height_mm;
	bool connected;
	struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
	size_t n_modes;
	int current;
	char gang[FL_DISPLAY_NAME_LEN];
	uint32_t gang_tile[2];
	uint32_t background;
	unsigned int line;
};

/**
 * struct fl__display_config_engine - an [engine] section
 * @formats: the fourccs it lists, in the file's order
 * @interfaces: the interfaces it may be attached to (indexes into its
 *	device's @intfs): the allowed attachments
 */
struct fl__display_config_engine {
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t formats[FL_DISPLAY_CONFIG_MAX_FORMATS];
	size_t n_formats;
	size_t interfaces[FL_DISPLAY_CONFIG_MAX_OBJECTS];
	size_t n_interfaces;
	unsigned int line;
};

/*
 * One of a device's driver options ("options = KEY=VALUE, ..."): @key a
 * name, @value any non-empty text without spaces or commas. The config
 * does not know a driver's keys: the service hands them to the driver
 * (struct fl_display_host's option()) and refuses a device whose driver
 * did not ask for one of them.
 */
struct fl__display_config_option {
	char key[FL_DISPLAY_NAME_LEN];
	char value[FL_DISPLAY_CONFIG_OPTION_LEN];
};

/* A [device] section and the [interface] and [engine] sections after it. */
struct fl__display_config_device {
	char name[FL_DISPLAY_NAME_LEN];
	char driver[FL_DISPLAY_NAME_LEN];
	struct fl__display_config_option options[FL_DISPLAY_CONFIG_MAX_OPTIONS];
	size_t n_options;
	enum fl__display_padding padding;
	struct fl__display_config_interface *intfs;
	size_t n_intfs;
	struct fl__display_config_engine *engines;
	size_t n_engines;
	unsigned int line;
};

struct fl__display_config {
	struct fl__display_config_device *devices;
	size_t n_devices;
};

/**
 * fl__display_config_parse() - reads a display config
 * @text: @len bytes, not necessarily NUL-terminated
 * @origin: names the text in messages (a file name)
 * @ret_cfg: set on success; free with fl__display_config_free()
 * @err: "ORIGIN:LINE:COL: what is wrong" on -EINVAL, "out of memory" on
 *	-ENOMEM; cut with "..." to @err_size (may be NULL/0)
 *
 * Checks everything a file alone can say: syntax, names unique per kind
 * (devices in the file, interfaces and engines in their device), required
 * keys, modes, formats (standard names, or fourcc:XXXX for a driver's
 * own), and that every interface an engine names exists in its device.
 * Whether the driver exists and accepts what is described is for
 * fl__display_config_instantiate().
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int fl__display_config_parse(const char *text, size_t len, const char *origin,
			     struct fl__display_config **ret_cfg, char *err, size_t err_size);

/* Frees @cfg; NULL does nothing. */
void fl__display_config_free(struct fl__display_config *cfg);

/* The built-in config: data/displays.ini as the build saw it (static, never freed). */
const char *fl__display_config_default(size_t *ret_len);

/**
 * fl__display_config_instantiate() - a model device from a config's device
 * @cd: one of a parsed config's devices
 * @d: the set to add it to
 * @ops, @data: its driver's (kept by the device)
 * @ret_dev: set on success
 *
 * Creates the device, its interfaces (connected ones with their modes and
 * current mode, all DPMS OFF), engines and allowed attachments, in the
 * config's order, so that ids are the config's order. On failure nothing
 * is left in @d.
 *
 * Return: 0 or the model's error (a custom format without the driver's
 * validate_custom_format op, -ENOMEM, ...), with the reason in @e.
 */
int fl__display_config_instantiate(const struct fl__display_config_device *cd,
				   struct fl__display_set *d,
				   const struct fl_display_driver_ops *ops, void *data,
				   struct fl__display_device **ret_dev, struct fl_display_error *e);

/**
 * fl__display_mode_make() - a mode of @w × @h at @hz with synthesised timings
 *
 * The blanking of CEA-861's 1080p (280 pixels, 45 lines: front porch 88/4,
 * sync 44/5), whatever the size, and the pixel clock in kHz that makes the
 * refresh @hz: 1920x1080@60 is exactly CEA's 148.5 MHz mode. Named "WxH",
 * type DRIVER, positive syncs.
 *
 * Return: 0, or -EINVAL when @w, @h or @hz is 0 or the totals do not fit
 * in 16 bits.
 */
int fl__display_mode_make(uint32_t w, uint32_t h, uint32_t hz, struct fl_display_mode *ret);

#endif /* FL_DISPLAY_CONFIG_H */

/* SPDX-License-Identifier: MIT */
/*
 * fl-displayctl's shared parts (docs/fl-displayctl.md): naming display
 * objects on the command line, opening them, and saying why something
 * failed. Each command lives in its own file and returns the exit status.
 */
#ifndef FL_DISPLAYCTL_H
#define FL_DISPLAYCTL_H

#include <stdbool.h>
#include <stdint.h>

#include <fenceline/display.h>

/* Exit statuses: 0 done; a runtime failure; a command line that makes no sense. */
#define DCTL_EXIT_FAIL	1
#define DCTL_EXIT_USAGE 2

/* An interface named on the command line, opened, with its device. */
struct dctl_target {
	struct fl_display_handle *dev;
	struct fl_display_handle *intf; /* NULL for a device alone */
	uint32_t dev_id, intf_id;
	char dev_name[FL_DISPLAY_NAME_LEN];
	char intf_name[FL_DISPLAY_NAME_LEN];
};

/*
 * Prints "fl-displayctl: WHAT: REASON" on stderr, the reason being @e's
 * message when it has one, else strerror(-@err) (with a hint for a service
 * that cannot be reached). Returns DCTL_EXIT_FAIL.
 */
int dctl_fail(int err, const struct fl_display_error *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prints "fl-displayctl: MESSAGE" and @usage on stderr; returns DCTL_EXIT_USAGE. */
int dctl_usage(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Whether argv[1..] holds --help or -h (the command's own usage is then
 * printed on stdout by the caller).
 */
bool dctl_wants_help(int argc, char **argv);

/*
 * Opens the device @spec names (its id, or its name) into @t (->intf stays
 * NULL). Returns 0 or an exit status, having said why.
 */
int dctl_open_device(const char *spec, struct dctl_target *t);

/*
 * Opens "DEVICE.INTERFACE" (each an id or a name; a device name may hold
 * dots: every split is tried) into @t. Returns 0 or an exit status.
 */
int dctl_open_interface(const char *spec, struct dctl_target *t);

/*
 * The id of the interface (@engine false) or overlay engine of @t's device
 * that @spec names (id or name). Returns 0 or an exit status.
 */
int dctl_find_object(struct dctl_target *t, bool engine, const char *spec, uint32_t *ret_id,
		     char name[FL_DISPLAY_NAME_LEN]);

/* Closes what @t holds; safe on a zeroed or half-opened one. */
void dctl_target_close(struct dctl_target *t);

/* Opens object @id of @dev (an interface or an engine); -ENODEV past the last one. */
int dctl_object_open(struct fl_display_handle *dev, bool engine, uint32_t id,
		     struct fl_display_handle **ret);

/* @f as its four characters ("XR24"), or 0x%08x when one is not printable. */
const char *dctl_fourcc(uint32_t f, char buf[12]);

/*
 * How many interfaces (@engines false) or overlay engines @dev has: their
 * ids are 0 to *@ret - 1. 0 or a negative errno.
 */
int dctl_count(struct fl_display_handle *dev, bool engines, uint32_t *ret);

/* "on", "standby", "suspend", "off", or "?". */
const char *dctl_dpms(unsigned int state);

/* "WxH@HZ" of @m, or "none" for a zeroed mode. */
const char *dctl_mode(const struct fl_display_mode *m, char buf[48]);

/*
 * An interface's description with its modes (malloc()ed into ->modes, the
 * caller's to free()), the two calls of ADF's query. Returns 0 or a
 * negative errno, @e saying why.
 */
int dctl_interface_data(struct fl_display_handle *intf, struct fl_display_interface_data *d,
			struct fl_display_error *e);

int dctl_cmd_list(int argc, char **argv);
int dctl_cmd_watch(int argc, char **argv);
int dctl_cmd_connect(int argc, char **argv); /* hotplug and unplug */
int dctl_cmd_blank(int argc, char **argv);
int dctl_cmd_mode(int argc, char **argv);
int dctl_cmd_attach(int argc, char **argv); /* attach and detach */
int dctl_cmd_capture(int argc, char **argv);
int dctl_cmd_stats(int argc, char **argv);
int dctl_cmd_drivers(int argc, char **argv);

extern const char dctl_list_usage[], dctl_watch_usage[], dctl_connect_usage[], dctl_blank_usage[],
	dctl_mode_usage[], dctl_attach_usage[], dctl_capture_usage[], dctl_stats_usage[],
	dctl_drivers_usage[];

#endif /* FL_DISPLAYCTL_H */

/* SPDX-License-Identifier: MIT */
/*
 * Which driver runs a device (docs/display.md, "Choosing the output"): the
 * drivers this fl-displayd has, those it was built without (so that a
 * person learns why "window" is missing rather than that it does not
 * exist), the drivers' probes, and the config that a display choice
 * ("--display window", $FENCELINE_DISPLAY) stands for.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "display-terminal.h"
#include "display-virtual.h"
#ifdef FL_HAVE_WINDOW_DRIVER
#include "display-window.h"
#endif
#ifdef FL_HAVE_KMS
#include "display-kms.h"
#endif
#include "display.h"
#include "displayd-private.h"
#include "util.h"

struct known_driver {
	const char *name;
	const struct fl_display_driver_ops *ops; /* NULL: not built in */
	const char *missing; /* why not, when not */
};

/* The order is "--display auto"'s: a desktop's window, then a screen of one's own. */
static const struct known_driver known[] = {
#ifdef FL_HAVE_WINDOW_DRIVER
	{ "window", &fl__display_window_ops, NULL },
#else
	{ "window", NULL, "this fl-displayd was built without SDL2 (Debian: libsdl2-dev)" },
#endif
#ifdef FL_HAVE_KMS
	{ "kms", &fl__display_kms_ops, NULL },
#else
	{ "kms", NULL, "this fl-displayd was built without libdrm (Debian: libdrm-dev)" },
#endif
	{ "terminal", &fl__display_terminal_ops, NULL },
	{ "virtual", &fl__display_virtual_ops, NULL },
};
#define N_KNOWN (sizeof(known) / sizeof(known[0]))

static const struct known_driver *find(const char *name)
{
	for (size_t i = 0; i < N_KNOWN; i++)
		if (!strcmp(known[i].name, name))
			return &known[i];
	return NULL;
}

const struct fl_display_driver_ops *displayd_driver_find(const char *name)
{
	const struct known_driver *k = find(name);

	return k ? k->ops : NULL;
}

int displayd_driver_probe(const char *name, const char *where, char *why, size_t len)
{
	const struct known_driver *k = find(name);

	why[0] = '\0';
	if (!k) {
		snprintf(why, len, "no display driver is named '%s'", name);
		return -ENOENT;
	}
	if (!k->ops) {
		snprintf(why, len, "%s", k->missing);
		return -ENOSYS;
	}
	return k->ops->probe ? k->ops->probe(where, why, len) : 0;
}

size_t displayd_drivers_info(struct fl_display_driver_info *ret, size_t cap)
{
	for (size_t i = 0; i < N_KNOWN && i < cap; i++) {
		struct fl_display_driver_info *in = &ret[i];
		int r;

		memset(in, 0, sizeof(*in));
		snprintf(in->name, sizeof(in->name), "%s", known[i].name);
		for (size_t d = 0; d < dd.n_devs; d++)
			in->devices += dd.devs[d].drv == known[i].ops && known[i].ops;
		/* A driver running a device can run: its probe might now say the card is busy (ours). */
		r = in->devices
			    ? 0
			    : displayd_driver_probe(known[i].name, NULL, in->why, sizeof(in->why));
		in->status = r;
	}
	return N_KNOWN;
}

/*
 * The config a display choice stands for. kms lists its objects from the
 * card, so its device is a bare [device]; the others show the built-in
 * device, with their driver and place.
 */
static int choice_config(const struct fl__display_spec *spec, struct fl__display_config **ret,
			 char *err, size_t len)
{
	char text[512];
	const char *t;
	size_t n;
	int r;

	if (!strcmp(spec->driver, "kms")) {
		n = (size_t)snprintf(text, sizeof(text), "[device %s]\ndriver = kms\n%s%s%s",
				     spec->where[0] ? strrchr(spec->where, '/') + 1 : "kms",
				     spec->where[0] ? "options = card=" : "", spec->where,
				     spec->where[0] ? "\n" : "");
		return fl__display_config_parse(text, n, "--display kms", ret, err, len);
	}
	t = fl__display_config_default(&n);
	r = fl__display_config_parse(t, n, "displays.ini (built in)", ret, err, len);
	if (r < 0)
		return r;
	for (size_t i = 0; i < (*ret)->n_devices; i++) {
		struct fl__display_config_device *cd = &(*ret)->devices[i];

		snprintf(cd->driver, sizeof(cd->driver), "%s", spec->driver);
		if (spec->where[0] && cd->n_options < FL_DISPLAY_CONFIG_MAX_OPTIONS) {
			struct fl__display_config_option *o = &cd->options[cd->n_options++];

			/* Only the terminal takes a place besides kms (fl__display_spec_parse()). */
			snprintf(o->key, sizeof(o->key), "tty");
			snprintf(o->value, sizeof(o->value), "%s", spec->where);
		}
	}
	return 0;
}

int displayd_choose(const char *choice, struct fl__display_config **ret, char *err, size_t len)
{
	struct fl__display_spec spec;
	char why[FL_DISPLAY_WHY_LEN];
	int r;

	if (fl__display_spec_parse(choice, &spec) < 0) {
		snprintf(err, len, "--display %s: not a display choice (%s)", choice,
			 fl__display_spec_names());
		return -EINVAL;
	}
	if (!strcmp(spec.driver, "auto")) {
		size_t i;

		for (i = 0; i < N_KNOWN; i++) {
			/* The terminal is never guessed: the service's terminal is rarely the user's. */
			if (!strcmp(known[i].name, "terminal"))
				continue;
			r = displayd_driver_probe(known[i].name, NULL, why, sizeof(why));
			if (r == 0)
				break;
			/* Said where a person looks; fl_display_drivers() asks again when asked. */
			displayd_log("--display auto: not %s: %s", known[i].name, why);
		}
		/* virtual has no probe: the loop always ends on a driver. */
		snprintf(spec.driver, sizeof(spec.driver), "%s", known[i].name);
		displayd_log("--display auto: %s", spec.driver);
	} else {
		r = displayd_driver_probe(spec.driver, spec.where[0] ? spec.where : NULL, why,
					  sizeof(why));
		if (r < 0) {
			snprintf(err, len, "--display %s: the %s driver cannot run here: %s",
				 choice, spec.driver, why);
			return r;
		}
	}
	return choice_config(&spec, ret, err, len);
}

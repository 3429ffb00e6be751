/* SPDX-License-Identifier: MIT */
/*
 * fl-displayctl list: every device with its interfaces, overlay engines and
 * attachments, as text or as one JSON object (docs/fl-displayctl.md has
 * the schema). Each object is read with ADF's two-call query; a device or
 * object that goes away while being listed ends the listing with an error
 * rather than printing half of it as if it were whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "displayctl.h"

const char dctl_list_usage[] =
	"usage: fl-displayctl list [--json]\n"
	"Lists every display device: its interfaces (type, flags, DPMS state, hotplug,\n"
	"current mode, modes, physical size), its overlay engines (formats as fourccs),\n"
	"and its allowed and active attachments.\n";

struct listing {
	bool json;
	bool first_device;
};

/* Names are 1 to 31 bytes of a config's charset, but a driver could say anything. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_mode(const struct fl_display_mode *m)
{
	printf("{\"name\": ");
	json_string(m->name);
	printf(", \"width\": %u, \"height\": %u, \"refresh\": %u, \"clock_khz\": %u, "
	       "\"interlaced\": %s}",
	       m->hdisplay, m->vdisplay, m->vrefresh, m->clock,
	       m->flags & FL_DISPLAY_MODE_FLAG_INTERLACE ? "true" : "false");
}

static void print_flags(uint32_t flags, bool json)
{
	const char *sep = "";

	if (json)
		putchar('[');
	if (flags & FL_DISPLAY_INTF_PRIMARY) {
		printf(json ? "\"primary\"" : "primary");
		sep = json ? ", " : ",";
	}
	if (flags & FL_DISPLAY_INTF_EXTERNAL)
		printf(json ? "%s\"external\"" : "%sexternal", sep);
	else if (!json && !(flags & FL_DISPLAY_INTF_PRIMARY))
		printf("-");
	if (json)
		putchar(']');
}

/* The names of a device's objects, by id, for its attachment lines. */
struct names {
	char (*of)[FL_DISPLAY_NAME_LEN];
	size_t n;
};

static void remember(struct names *names, uint32_t id, const char *name)
{
	if (id < names->n)
		snprintf(names->of[id], FL_DISPLAY_NAME_LEN, "%s", name);
}

static const char *name_of(const struct names *names, uint32_t id, char buf[12])
{
	if (id < names->n && names->of[id][0])
		return names->of[id];
	snprintf(buf, 12, "%u", id);
	return buf;
}

static int list_interface(struct fl_display_handle *h, uint32_t id, bool json, bool first,
			  struct names *names)
{
	struct fl_display_interface_data d;
	struct fl_display_error e = { 0 };
	char buf[48], type[FL_DISPLAY_NAME_LEN];
	int r = dctl_interface_data(h, &d, &e);

	if (r < 0)
		return dctl_fail(r, &e, "reading interface %u", id);
	/* A driver's own type by its name, as ADF's adf_interface_type_str() gave it. */
	r = fl_display_interface_type_name(h, type, &e);
	if (r < 0) {
		free(d.modes);
		return dctl_fail(r, &e, "reading interface %u's type", id);
	}
	remember(names, id, d.name);
	if (json) {
		printf("%s\n        {\"id\": %u, \"name\": ", first ? "" : ",", id);
		json_string(d.name);
		printf(", \"type\": ");
		json_string(type);
		printf(", \"type_id\": %u, \"idx\": %u, \"flags\": ", d.type, d.id);
		print_flags(d.flags, true);
		printf(", \"dpms\": \"%s\", \"connected\": %s, \"width_mm\": %u, \"height_mm\": "
		       "%u, "
		       "\"current_mode\": ",
		       dctl_dpms(d.dpms_state), d.hotplug_detect ? "true" : "false", d.width_mm,
		       d.height_mm);
		if (d.current_mode.hdisplay || d.current_mode.vdisplay)
			json_mode(&d.current_mode);
		else
			printf("null");
		printf(", \"modes\": [");
		for (size_t i = 0; i < d.n_modes; i++) {
			printf("%s", i ? ", " : "");
			json_mode(&d.modes[i]);
		}
		printf("]}");
	} else {
		printf("    %u %-12s %s.%u  flags ", id, d.name, type, d.id);
		print_flags(d.flags, false);
		printf("  DPMS %s  %s  mode %s", dctl_dpms(d.dpms_state),
		       d.hotplug_detect ? "connected" : "disconnected",
		       dctl_mode(&d.current_mode, buf));
		if (d.width_mm || d.height_mm)
			printf("  %ux%u mm", d.width_mm, d.height_mm);
		printf("\n      modes:");
		for (size_t i = 0; i < d.n_modes; i++)
			printf(" %s", dctl_mode(&d.modes[i], buf));
		printf("%s\n", d.n_modes ? "" : " none");
	}
	free(d.modes);
	return 0;
}

static int list_engine(struct fl_display_handle *h, uint32_t id, bool json, bool first,
		       struct names *names)
{
	struct fl_display_engine_data d = { 0 };
	struct fl_display_error e = { 0 };
	char buf[12];
	int r = fl_display_engine_get_data(h, &d, &e);

	if (r == 0 && d.n_formats) {
		d.formats = calloc(FL_DISPLAY_MAX_FORMATS, sizeof(*d.formats));
		if (!d.formats)
			return dctl_fail(-ENOMEM, NULL, "reading overlay engine %u", id);
		d.n_formats = FL_DISPLAY_MAX_FORMATS;
		r = fl_display_engine_get_data(h, &d, &e);
		if (d.n_formats > FL_DISPLAY_MAX_FORMATS)
			d.n_formats = FL_DISPLAY_MAX_FORMATS;
	}
	if (r < 0) {
		free(d.formats);
		return dctl_fail(r, &e, "reading overlay engine %u", id);
	}
	remember(names, id, d.name);
	if (json) {
		printf("%s\n        {\"id\": %u, \"name\": ", first ? "" : ",", id);
		json_string(d.name);
		printf(", \"formats\": [");
		for (size_t i = 0; i < d.n_formats; i++)
			printf("%s\"%s\"", i ? ", " : "", dctl_fourcc(d.formats[i], buf));
		printf("]}");
	} else {
		printf("    %u %-12s", id, d.name);
		for (size_t i = 0; i < d.n_formats; i++)
			printf(" %s", dctl_fourcc(d.formats[i], buf));
		putchar('\n');
	}
	free(d.formats);
	return 0;
}

/* Every interface (@engines false) or engine of @dev, by id. */
static int list_objects(struct fl_display_handle *dev, bool engines, bool json, struct names *names)
{
	uint32_t id, n = 0;
	int r = dctl_count(dev, engines, &n);

	if (r < 0)
		return dctl_fail(r, NULL, "counting the %s",
				 engines ? "overlay engines" : "interfaces");
	if (json)
		printf(",\n      \"%s\": [", engines ? "engines" : "interfaces");
	else
		printf("  %s:\n", engines ? "overlay engines" : "interfaces");
	for (id = 0; id < n; id++) {
		struct fl_display_handle *h;

		r = dctl_object_open(dev, engines, id, &h);
		if (r < 0)
			return dctl_fail(r, NULL, "opening %s %u",
					 engines ? "overlay engine" : "interface", id);
		r = engines ? list_engine(h, id, json, id == 0, names)
			    : list_interface(h, id, json, id == 0, names);
		fl_display_close(h);
		if (r)
			return r;
	}
	if (json)
		printf("%s]", id ? "\n      " : "");
	else if (id == 0)
		printf("    none\n");
	return 0;
}

static void list_pairs(const char *what, const struct fl_display_attachment *a, size_t n, bool json,
		       const struct names *engines, const struct names *intfs)
{
	char b1[12], b2[12];

	if (json) {
		printf(",\n      \"%s\": [", what);
		for (size_t i = 0; i < n; i++)
			printf("%s{\"engine\": %u, \"interface\": %u}", i ? ", " : "", a[i].engine,
			       a[i].interface);
		printf("]");
		return;
	}
	printf("  %s (engine->interface):", what);
	for (size_t i = 0; i < n; i++)
		printf(" %s->%s", name_of(engines, a[i].engine, b1),
		       name_of(intfs, a[i].interface, b2));
	printf("%s\n", n ? "" : " none");
}

static int list_device(uint32_t id, struct listing *l)
{
	struct fl_display_device_data d = { 0 };
	struct fl_display_device_info info;
	struct fl_display_error e = { 0 };
	struct fl_display_handle *dev;
	struct names intfs = { calloc(FL_DISPLAY_MAX_ENGINES, FL_DISPLAY_NAME_LEN),
			       FL_DISPLAY_MAX_ENGINES };
	struct names engines = { calloc(FL_DISPLAY_MAX_ENGINES, FL_DISPLAY_NAME_LEN),
				 FL_DISPLAY_MAX_ENGINES };
	int r = fl_display_device_open(id, &dev), status = DCTL_EXIT_FAIL;

	if (r < 0) {
		free(intfs.of);
		free(engines.of);
		return dctl_fail(r, NULL, "opening display device %u", id);
	}
	if (!intfs.of)
		intfs.n = 0; /* ids stand in for names */
	if (!engines.of)
		engines.n = 0;
	d.attachments = calloc(FL_DISPLAY_MAX_ATTACHMENTS, sizeof(*d.attachments));
	d.allowed = calloc(FL_DISPLAY_MAX_ATTACHMENTS, sizeof(*d.allowed));
	if (!d.attachments || !d.allowed) {
		dctl_fail(-ENOMEM, NULL, "reading display device %u", id);
		goto out;
	}
	/* One call with room for ADF's most: the two-call dance gains nothing here. */
	d.n_attachments = d.n_allowed = FL_DISPLAY_MAX_ATTACHMENTS;
	r = fl_display_device_get_data(dev, &d, &e);
	if (r < 0) {
		dctl_fail(r, &e, "reading display device %u", id);
		goto out;
	}
	if (d.n_attachments > FL_DISPLAY_MAX_ATTACHMENTS)
		d.n_attachments = FL_DISPLAY_MAX_ATTACHMENTS;
	if (d.n_allowed > FL_DISPLAY_MAX_ATTACHMENTS)
		d.n_allowed = FL_DISPLAY_MAX_ATTACHMENTS;
	/* Which driver shows it: an older service does not say (empty). */
	if (fl_display_device_get_info(dev, &info, sizeof(info), NULL) < 0)
		info.driver[0] = '\0';
	if (l->json) {
		printf("%s\n    {\"id\": %u, \"name\": ", l->first_device ? "" : ",", id);
		json_string(d.name);
		printf(", \"driver\": ");
		if (info.driver[0])
			json_string(info.driver);
		else
			printf("null");
	} else {
		printf("%sdevice %u: %s", l->first_device ? "" : "\n", id, d.name);
		printf(info.driver[0] ? " (driver %s)\n" : "\n", info.driver);
	}
	l->first_device = false;
	r = list_objects(dev, false, l->json, &intfs);
	if (!r)
		r = list_objects(dev, true, l->json, &engines);
	if (r)
		goto out;
	list_pairs("allowed", d.allowed, d.n_allowed, l->json, &engines, &intfs);
	list_pairs("attached", d.attachments, d.n_attachments, l->json, &engines, &intfs);
	if (l->json)
		printf("}");
	status = 0;
out:
	free(intfs.of);
	free(engines.of);
	free(d.attachments);
	free(d.allowed);
	fl_display_close(dev);
	return status;
}

int dctl_cmd_list(int argc, char **argv)
{
	struct listing l = { false, true };
	uint32_t *ids = NULL;
	int n, status = 0;

	if (dctl_wants_help(argc, argv)) {
		fputs(dctl_list_usage, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			l.json = true;
		else
			return dctl_usage(dctl_list_usage, "list: unexpected '%s'", argv[i]);
	}
	n = fl_display_devices(&ids);
	if (n < 0)
		return dctl_fail(n, NULL, "listing display devices");
	if (l.json)
		printf("{\"devices\": [");
	for (int i = 0; i < n && !status; i++)
		status = list_device(ids[i], &l);
	free(ids);
	if (status)
		return status;
	if (l.json)
		printf("%s]}\n", n ? "\n  " : "");
	else if (n == 0)
		printf("no display devices\n");
	return 0;
}

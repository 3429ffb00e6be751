/* SPDX-License-Identifier: MIT */
/*
 * Naming display objects on fl-displayctl's command line, and its error
 * messages. Objects go by id or by name: people read names in `list`, and
 * scripts may prefer ids.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "displayctl.h"

int dctl_fail(int err, const struct fl_display_error *e, const char *fmt, ...)
{
	va_list ap;

	fputs("fl-displayctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (e && e->err && e->msg[0])
		fprintf(stderr, ": %s\n", e->msg);
	else if (err == -ECONNREFUSED) {
		const char *choice = getenv("FENCELINE_DISPLAY");

		fprintf(stderr, ": no display service could be started or reached (%s)\n",
			strerror(-err));
		/* The service started for us has no stderr: it says why when run by hand. */
		fprintf(stderr,
			"fl-displayctl: `fl-displayd --foreground%s%s` says why it does not "
			"start\n",
			choice && choice[0] ? " --display " : "",
			choice && choice[0] ? choice : "");
	} else
		fprintf(stderr, ": %s\n", strerror(-err));
	return DCTL_EXIT_FAIL;
}

int dctl_usage(const char *usage, const char *fmt, ...)
{
	va_list ap;

	fputs("fl-displayctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fputs(usage, stderr);
	return DCTL_EXIT_USAGE;
}

bool dctl_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

/* @s as a decimal id, or false when it is not all digits (then it is a name). */
static bool parse_id(const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v > UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	return true;
}

/* Finds the device @spec names; -ENODEV when none does, other errors as they come. */
static int find_device(const char *spec, size_t len, struct dctl_target *t)
{
	char want[FL_DISPLAY_NAME_LEN];
	uint32_t *ids = NULL, id;
	int n, r;

	if (len == 0 || len >= sizeof(want))
		return -ENODEV;
	memcpy(want, spec, len);
	want[len] = '\0';
	if (parse_id(want, &id)) {
		struct fl_display_device_data d = { 0 };
		struct fl_display_error e = { 0 };

		r = fl_display_device_open(id, &t->dev);
		if (r < 0)
			return r;
		r = fl_display_device_get_data(t->dev, &d, &e);
		if (r < 0)
			return r;
		t->dev_id = id;
		snprintf(t->dev_name, sizeof(t->dev_name), "%s", d.name);
		return 0;
	}
	n = fl_display_devices(&ids);
	if (n < 0)
		return n;
	r = -ENODEV;
	for (int i = 0; i < n && r == -ENODEV; i++) {
		struct fl_display_device_data d = { 0 };
		struct fl_display_handle *h;
		int o = fl_display_device_open(ids[i], &h);

		if (o == -ENODEV)
			continue; /* went away since the list */
		if (o < 0) {
			r = o;
			break;
		}
		o = fl_display_device_get_data(h, &d, NULL);
		if (o == 0 && !strcmp(d.name, want)) {
			t->dev = h;
			t->dev_id = ids[i];
			snprintf(t->dev_name, sizeof(t->dev_name), "%s", d.name);
			r = 0;
		} else {
			fl_display_close(h);
			if (o < 0)
				r = o;
		}
	}
	free(ids);
	return r;
}

int dctl_open_device(const char *spec, struct dctl_target *t)
{
	int r = find_device(spec, strlen(spec), t);

	if (r == -ENODEV)
		fprintf(stderr,
			"fl-displayctl: no display device '%s' (`fl-displayctl list` shows them)\n",
			spec);
	else if (r < 0)
		return dctl_fail(r, NULL, "opening display device '%s'", spec);
	return r < 0 ? DCTL_EXIT_FAIL : 0;
}

int dctl_object_open(struct fl_display_handle *dev, bool engine, uint32_t id,
		     struct fl_display_handle **ret)
{
	return engine ? fl_display_engine_open(dev, id, ret)
		      : fl_display_interface_open(dev, id, ret);
}

/* The name of object @id: an interface's or an engine's data query. */
static int object_name(struct fl_display_handle *h, bool engine, char name[FL_DISPLAY_NAME_LEN])
{
	int r;

	if (engine) {
		struct fl_display_engine_data d = { 0 };

		r = fl_display_engine_get_data(h, &d, NULL);
		memcpy(name, d.name, FL_DISPLAY_NAME_LEN);
	} else {
		struct fl_display_interface_data d = { 0 };

		r = fl_display_interface_get_data(h, &d, NULL);
		memcpy(name, d.name, FL_DISPLAY_NAME_LEN);
	}
	name[FL_DISPLAY_NAME_LEN - 1] = '\0';
	return r;
}

/* Finds object @spec of @dev: 0 with it open in *@ret (may be NULL: closed), or a negative errno. */
static int find_object(struct fl_display_handle *dev, bool engine, const char *spec,
		       uint32_t *ret_id, char name[FL_DISPLAY_NAME_LEN],
		       struct fl_display_handle **ret)
{
	struct fl_display_handle *h;
	uint32_t id, n = 0;
	int r;

	if (parse_id(spec, &id)) {
		r = dctl_object_open(dev, engine, id, &h);
		if (r < 0)
			return r;
		r = object_name(h, engine, name);
		goto found;
	}
	r = dctl_count(dev, engine, &n);
	if (r < 0)
		return r;
	for (id = 0; id < n; id++) {
		r = dctl_object_open(dev, engine, id, &h);
		if (r < 0)
			return r;
		r = object_name(h, engine, name);
		if (r < 0 || !strcmp(name, spec))
			goto found;
		fl_display_close(h);
	}
	return -ENODEV;
found:
	if (r < 0 || !ret)
		fl_display_close(h);
	else
		*ret = h;
	if (r == 0)
		*ret_id = id;
	return r;
}

int dctl_find_object(struct dctl_target *t, bool engine, const char *spec, uint32_t *ret_id,
		     char name[FL_DISPLAY_NAME_LEN])
{
	int r = find_object(t->dev, engine, spec, ret_id, name, NULL);

	if (r == -ENODEV) {
		fprintf(stderr, "fl-displayctl: device %s has no %s '%s'\n", t->dev_name,
			engine ? "overlay engine" : "interface", spec);
		return DCTL_EXIT_FAIL;
	}
	if (r < 0)
		return dctl_fail(r, NULL, "looking for %s '%s' of device %s",
				 engine ? "overlay engine" : "interface", spec, t->dev_name);
	return 0;
}

int dctl_open_interface(const char *spec, struct dctl_target *t)
{
	const char *dot = strchr(spec, '.');
	int r = -ENODEV;

	if (!dot) {
		fprintf(stderr,
			"fl-displayctl: '%s' names no interface: write DEVICE.INTERFACE, as "
			"0.panel or phone.0\n",
			spec);
		return DCTL_EXIT_USAGE;
	}
	/* A device name may hold dots: the first split whose left side is a device wins. */
	for (; dot; dot = strchr(dot + 1, '.')) {
		r = find_device(spec, (size_t)(dot - spec), t);
		if (r != -ENODEV)
			break;
	}
	if (r == -ENODEV) {
		fprintf(stderr,
			"fl-displayctl: no display device in '%s' (`fl-displayctl list` shows "
			"them)\n",
			spec);
		return DCTL_EXIT_FAIL;
	}
	if (r < 0)
		return dctl_fail(r, NULL, "opening the display device of '%s'", spec);
	r = find_object(t->dev, false, dot + 1, &t->intf_id, t->intf_name, &t->intf);
	if (r == -ENODEV) {
		fprintf(stderr, "fl-displayctl: device %s has no interface '%s'\n", t->dev_name,
			dot + 1);
		return DCTL_EXIT_FAIL;
	}
	if (r < 0)
		return dctl_fail(r, NULL, "opening interface '%s' of device %s", dot + 1,
				 t->dev_name);
	return 0;
}

void dctl_target_close(struct dctl_target *t)
{
	fl_display_close(t->intf);
	fl_display_close(t->dev);
	t->intf = t->dev = NULL;
}

const char *dctl_fourcc(uint32_t f, char buf[12])
{
	for (int i = 0; i < 4; i++) {
		char c = (char)(f >> (8 * i));

		if (c < 0x20 || c > 0x7e) {
			snprintf(buf, 12, "0x%08x", f);
			return buf;
		}
		buf[i] = c;
	}
	buf[4] = '\0';
	return buf;
}

int dctl_count(struct fl_display_handle *dev, bool engines, uint32_t *ret)
{
	struct fl_display_device_info info;
	int r = fl_display_device_get_info(dev, &info, sizeof(info), NULL);

	if (r == 0)
		*ret = engines ? info.n_engines : info.n_interfaces;
	return r;
}

const char *dctl_dpms(unsigned int state)
{
	static const char *const names[] = { "on", "standby", "suspend", "off" };

	return state < 4 ? names[state] : "?";
}

const char *dctl_mode(const struct fl_display_mode *m, char buf[48])
{
	if (!m->hdisplay && !m->vdisplay)
		return "none";
	snprintf(buf, 48, "%ux%u%s@%u", m->hdisplay, m->vdisplay,
		 m->flags & FL_DISPLAY_MODE_FLAG_INTERLACE ? "i" : "", m->vrefresh);
	return buf;
}

int dctl_interface_data(struct fl_display_handle *intf, struct fl_display_interface_data *d,
			struct fl_display_error *e)
{
	int r;

	memset(d, 0, sizeof(*d));
	r = fl_display_interface_get_data(intf, d, e);
	if (r < 0 || d->n_modes == 0)
		return r;
	/* The list may change between the calls (a hotplug): ask for the most there can be. */
	d->modes = calloc(FL_DISPLAY_MAX_MODES, sizeof(*d->modes));
	if (!d->modes)
		return -ENOMEM;
	d->n_modes = FL_DISPLAY_MAX_MODES;
	r = fl_display_interface_get_data(intf, d, e);
	if (r < 0) {
		free(d->modes);
		d->modes = NULL;
		d->n_modes = 0;
	} else if (d->n_modes > FL_DISPLAY_MAX_MODES) {
		d->n_modes = FL_DISPLAY_MAX_MODES;
	}
	return r;
}

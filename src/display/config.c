/* SPDX-License-Identifier: MIT */
/*
 * The display config's parser (docs/display.md, "The config file"), on the
 * INI lexer the heap table uses (src/util/ini.h), and the making of model
 * devices from it. Strict like the heap table: a typo in a key, a type, a
 * format or a name is an error with its line and column, because a display
 * described wrongly fails far from the cause (a compositor finding no
 * primary interface, an engine refusing the format it was meant to take).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "display-config.h"
#include "ini.h"

enum section { SEC_NONE, SEC_DEVICE, SEC_INTERFACE, SEC_ENGINE };

enum key {
	K_DRIVER,
	K_OPTIONS,
	K_PADDING,
	K_TYPE,
	K_FLAGS,
	K_MODES,
	K_CURRENT_MODE,
	K_SIZE_MM,
	K_CONNECTED,
	K_GANG,
	K_GANG_TILE,
	K_BACKGROUND,
	K_FORMATS,
	K_INTERFACES,
	K_COUNT,
};

#define IN(sec) (1u << (sec))

static const struct fl_ini_key keys[K_COUNT] = {
	[K_DRIVER] = { "driver", IN(SEC_DEVICE) },
	[K_OPTIONS] = { "options", IN(SEC_DEVICE) },
	[K_PADDING] = { "padding", IN(SEC_DEVICE) },
	[K_TYPE] = { "type", IN(SEC_INTERFACE) },
	[K_FLAGS] = { "flags", IN(SEC_INTERFACE) },
	[K_MODES] = { "modes", IN(SEC_INTERFACE) },
	[K_CURRENT_MODE] = { "current-mode", IN(SEC_INTERFACE) },
	[K_SIZE_MM] = { "size-mm", IN(SEC_INTERFACE) },
	[K_CONNECTED] = { "connected", IN(SEC_INTERFACE) },
	[K_GANG] = { "gang", IN(SEC_INTERFACE) },
	[K_GANG_TILE] = { "gang-tile", IN(SEC_INTERFACE) },
	[K_BACKGROUND] = { "background", IN(SEC_INTERFACE) },
	[K_FORMATS] = { "formats", IN(SEC_ENGINE) },
	[K_INTERFACES] = { "interfaces", IN(SEC_ENGINE) },
};

static const char *const known_keys[] = {
	[SEC_DEVICE] = "driver, options, padding",
	[SEC_INTERFACE] = "type, flags, modes, current-mode, size-mm, connected, gang, gang-tile, "
			  "background",
	[SEC_ENGINE] = "formats, interfaces",
};

/* The lexer's section types, in enum section's order after SEC_NONE. */
static const char *const section_types[] = { "device", "interface", "engine", NULL };

static const struct fl_ini_syntax syntax = {
	.sections = section_types,
	.sections_expected = "'device', 'interface' or 'engine'",
	.sections_known = "[device NAME], [interface NAME] and [engine NAME]",
	.name_size = FL_DISPLAY_NAME_LEN,
};

static const struct {
	const char *name;
	uint32_t type;
} intf_types[] = {
	{ "DSI", FL_DISPLAY_INTF_DSI },	      { "eDP", FL_DISPLAY_INTF_EDP },
	{ "DPI", FL_DISPLAY_INTF_DPI },	      { "VGA", FL_DISPLAY_INTF_VGA },
	{ "DVI", FL_DISPLAY_INTF_DVI },	      { "HDMI", FL_DISPLAY_INTF_HDMI },
	{ "memory", FL_DISPLAY_INTF_MEMORY },
};

/* An engine's 'interfaces' as written, resolved when its device is complete. */
struct pending {
	char names[FL_DISPLAY_CONFIG_MAX_OBJECTS][FL_DISPLAY_NAME_LEN];
	struct fl_ini_pos at[FL_DISPLAY_CONFIG_MAX_OBJECTS];
	size_t n;
};

struct parser {
	struct fl_ini ini;
	struct fl__display_config *cfg;
	enum section sec;
	struct fl_ini_pos sec_at;
	struct fl_ini_pos key_at[K_COUNT]; /* the current section's keys */
	struct fl_display_mode current; /* 'current-mode' as written */
	struct pending *pending; /* one per engine of the current device */
};

static struct fl__display_config_device *cur_device(struct parser *p)
{
	return &p->cfg->devices[p->cfg->n_devices - 1];
}

static struct fl__display_config_interface *cur_intf(struct parser *p)
{
	struct fl__display_config_device *d = cur_device(p);

	return &d->intfs[d->n_intfs - 1];
}

static struct fl__display_config_engine *cur_engine(struct parser *p)
{
	struct fl__display_config_device *d = cur_device(p);

	return &d->engines[d->n_engines - 1];
}

int fl__display_mode_make(uint32_t w, uint32_t h, uint32_t hz, struct fl_display_mode *ret)
{
	struct fl_display_mode m = { 0 };
	uint64_t htotal = (uint64_t)w + 280, vtotal = (uint64_t)h + 45;

	if (!w || !h || !hz || htotal > UINT16_MAX || vtotal > UINT16_MAX || hz > 1000)
		return -EINVAL;
	m.hdisplay = (uint16_t)w;
	m.hsync_start = (uint16_t)(w + 88);
	m.hsync_end = (uint16_t)(w + 88 + 44);
	m.htotal = (uint16_t)htotal;
	m.vdisplay = (uint16_t)h;
	m.vsync_start = (uint16_t)(h + 4);
	m.vsync_end = (uint16_t)(h + 4 + 5);
	m.vtotal = (uint16_t)vtotal;
	/* kHz, rounded: at most 65535² × 1000 Hz, far inside 64 bits. */
	m.clock = (uint32_t)((htotal * vtotal * hz + 500) / 1000);
	m.flags = 1u << 0 | 1u << 2; /* DRM_MODE_FLAG_PHSYNC | DRM_MODE_FLAG_PVSYNC */
	m.type = 1u << 6; /* DRM_MODE_TYPE_DRIVER */
	fl__display_mode_set_name(&m);
	m.vrefresh = fl__display_mode_vrefresh(&m);
	*ret = m;
	return 0;
}

/* A decimal number of at most @max at [s, s + n); false if it is not one. */
static bool number(const char *s, size_t n, uint32_t max, uint32_t *ret)
{
	uint64_t v = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > max)
			return false;
	}
	*ret = (uint32_t)v;
	return true;
}

/* "WxH" at [s, s + n), with the '@' and after it for a mode. */
static bool split_size(const char *s, size_t n, uint32_t max, uint32_t *w, uint32_t *h)
{
	const char *x = memchr(s, 'x', n);

	return x && number(s, (size_t)(x - s), max, w) &&
	       number(x + 1, n - (size_t)(x + 1 - s), max, h);
}

/* A mode "WxH@HZ" at byte @start of @v. */
static int parse_mode(struct parser *p, const struct fl_ini_value *v, size_t start, size_t n,
		      struct fl_display_mode *ret)
{
	const char *s = v->text + start, *at = memchr(s, '@', n);
	uint32_t w, h, hz;

	if (!at || !split_size(s, (size_t)(at - s), UINT16_MAX, &w, &h) ||
	    !number(at + 1, n - (size_t)(at + 1 - s), 1000, &hz))
		return fl__ini_fail(&p->ini, fl__ini_col(v, start),
				    "'%.*s' is not a mode: write WIDTHxHEIGHT@HZ, as 1920x1080@60",
				    (int)n, s);
	if (fl__display_mode_make(w, h, hz, ret))
		return fl__ini_fail(
			&p->ini, fl__ini_col(v, start),
			"mode %.*s is out of range (width up to 65255, height up to 65490, "
			"1 to 1000 Hz, none 0)",
			(int)n, s);
	return 0;
}

static bool same_mode(const struct fl_display_mode *a, const struct fl_display_mode *b)
{
	return a->hdisplay == b->hdisplay && a->vdisplay == b->vdisplay &&
	       a->vrefresh == b->vrefresh;
}

static int parse_yes_no(struct parser *p, const struct fl_ini_value *v, const char *key, bool *ret)
{
	if (!strcmp(v->text, "yes") || !strcmp(v->text, "true"))
		*ret = true;
	else if (!strcmp(v->text, "no") || !strcmp(v->text, "false"))
		*ret = false;
	else
		return fl__ini_fail(&p->ini, v->col, "'%s' is yes or no, not '%s'", key, v->text);
	return 0;
}

static int parse_type(struct parser *p, const struct fl_ini_value *v)
{
	struct fl__display_config_device *d = cur_device(p);
	struct fl__display_config_interface *intf = cur_intf(p);
	uint32_t next = FL_DISPLAY_INTF_CUSTOM;
	int r;

	for (size_t i = 0; i < sizeof(intf_types) / sizeof(intf_types[0]); i++) {
		if (strcasecmp(v->text, intf_types[i].name))
			continue;
		intf->type = intf_types[i].type;
		return 0;
	}
	if (strncmp(v->text, "custom:", 7))
		return fl__ini_fail(
			&p->ini, v->col,
			"unknown interface type '%s' (types are DSI, eDP, DPI, VGA, DVI, HDMI, "
			"memory, and custom:NAME for a driver's)",
			v->text);
	r = fl__ini_take_name(&p->ini, v->text + 7, v->len - 7, fl__ini_col(v, 7),
			      "custom interface type", intf->type_str, sizeof(intf->type_str));
	if (r)
		return r;
	/* One number per distinct custom type of the device, from 128 in order. */
	for (size_t i = 0; i + 1 < d->n_intfs; i++) {
		if (d->intfs[i].type < FL_DISPLAY_INTF_CUSTOM)
			continue;
		if (!strcmp(d->intfs[i].type_str, intf->type_str)) {
			intf->type = d->intfs[i].type;
			return 0;
		}
		next = d->intfs[i].type + 1 > next ? d->intfs[i].type + 1 : next;
	}
	intf->type = next;
	return 0;
}

static int parse_flags(struct parser *p, const struct fl_ini_value *v)
{
	struct fl__display_config_interface *intf = cur_intf(p);
	size_t cursor = 0, start, n, items = 0;
	bool none = false;

	while (fl__ini_list_next(v, &cursor, &start, &n)) {
		const char *s = v->text + start;
		uint32_t bit;

		items++;
		if (n == 4 && !memcmp(s, "none", 4)) {
			none = true;
			continue;
		}
		if (n == 7 && !memcmp(s, "primary", 7))
			bit = FL_DISPLAY_INTF_PRIMARY;
		else if (n == 8 && !memcmp(s, "external", 8))
			bit = FL_DISPLAY_INTF_EXTERNAL;
		else
			return fl__ini_fail(
				&p->ini, fl__ini_col(v, start),
				"unknown flag '%.*s' (flags are primary, external, or none)",
				(int)n, s);
		if (intf->flags & bit)
			return fl__ini_fail(&p->ini, fl__ini_col(v, start),
					    "flag '%.*s' is listed twice", (int)n, s);
		intf->flags |= bit;
	}
	if (none && items > 1)
		return fl__ini_fail(&p->ini, v->col, "'none' cannot be listed with other flags");
	return 0;
}

static int parse_modes(struct parser *p, const struct fl_ini_value *v)
{
	struct fl__display_config_interface *intf = cur_intf(p);
	size_t cursor = 0, start, n;
	int r;

	while (fl__ini_list_next(v, &cursor, &start, &n)) {
		struct fl_display_mode *m = &intf->modes[intf->n_modes];

		if (!n)
			return fl__ini_fail(&p->ini, fl__ini_col(v, start),
					    "empty mode in the list of modes");
		if (intf->n_modes == FL_DISPLAY_MAX_MODES)
			return fl__ini_fail(&p->ini, fl__ini_col(v, start), "more than %d modes",
					    FL_DISPLAY_MAX_MODES);
		r = parse_mode(p, v, start, n, m);
		if (r)
			return r;
		for (size_t j = 0; j < intf->n_modes; j++)
			if (same_mode(&intf->modes[j], m))
				return fl__ini_fail(&p->ini, fl__ini_col(v, start),
						    "mode %.*s is listed twice", (int)n,
						    v->text + start);
		intf->n_modes++;
	}
	/* The driver's preference, for clients that ask: the first. */
	intf->modes[0].type |= 1u << 3; /* DRM_MODE_TYPE_PREFERRED */
	return 0;
}

static int parse_formats(struct parser *p, const struct fl_ini_value *v)
{
	struct fl__display_config_engine *eng = cur_engine(p);
	size_t cursor = 0, start, n;

	while (fl__ini_list_next(v, &cursor, &start, &n)) {
		const char *s = v->text + start;
		const struct fl__display_format *f = fl__display_format_by_name(s, n);
		uint32_t fourcc;
		char fcc[5];

		if (!n)
			return fl__ini_fail(&p->ini, fl__ini_col(v, start),
					    "empty format in the list of formats");
		if (eng->n_formats == FL_DISPLAY_CONFIG_MAX_FORMATS)
			return fl__ini_fail(&p->ini, fl__ini_col(v, start), "more than %d formats",
					    FL_DISPLAY_CONFIG_MAX_FORMATS);
		if (f) {
			fourcc = f->fourcc;
		} else if (n == 11 && !memcmp(s, "fourcc:", 7)) {
			for (size_t i = 7; i < 11; i++)
				if (s[i] < 0x20 || s[i] >= 0x7f)
					return fl__ini_fail(
						&p->ini, fl__ini_col(v, start + i),
						"a fourcc is four printable characters");
			fourcc = FL_FOURCC(s[7], s[8], s[9], s[10]);
			f = fl__display_format_find(fourcc);
			if (f)
				return fl__ini_fail(
					&p->ini, fl__ini_col(v, start),
					"fourcc:%.4s is the standard format %s: write its name",
					s + 7, f->name);
		} else {
			return fl__ini_fail(
				&p->ini, fl__ini_col(v, start),
				"unknown format '%.*s' (DRM names as XRGB8888 or NV12, or "
				"fourcc:XXXX for a driver's own)",
				(int)n, s);
		}
		for (size_t j = 0; j < eng->n_formats; j++)
			if (eng->formats[j] == fourcc)
				return fl__ini_fail(&p->ini, fl__ini_col(v, start),
						    "format %s is listed twice",
						    fl__display_format_str(fourcc, fcc));
		eng->formats[eng->n_formats++] = fourcc;
	}
	return 0;
}

static int parse_interfaces(struct parser *p, const struct fl_ini_value *v)
{
	struct pending *list = &p->pending[cur_device(p)->n_engines - 1];
	size_t cursor = 0, start, n;
	int r;

	while (fl__ini_list_next(v, &cursor, &start, &n)) {
		unsigned int col = fl__ini_col(v, start);

		if (!n)
			return fl__ini_fail(&p->ini, col, "empty name in the list of interfaces");
		if (list->n == FL_DISPLAY_CONFIG_MAX_OBJECTS)
			return fl__ini_fail(&p->ini, col, "more than %d interfaces",
					    FL_DISPLAY_CONFIG_MAX_OBJECTS);
		r = fl__ini_take_name(&p->ini, v->text + start, n, col, "interface",
				      list->names[list->n], FL_DISPLAY_NAME_LEN);
		if (r)
			return r;
		for (size_t j = 0; j < list->n; j++)
			if (!strcmp(list->names[j], list->names[list->n]))
				return fl__ini_fail(&p->ini, col, "interface '%s' is listed twice",
						    list->names[j]);
		list->at[list->n].line = p->ini.line;
		list->at[list->n].col = col;
		list->n++;
	}
	return 0;
}

/* "KEY=VALUE, ...": the driver's options, checked here only for form. */
static int parse_options(struct parser *p, const struct fl_ini_value *v)
{
	struct fl__display_config_device *d = cur_device(p);
	size_t cursor = 0, start, n;

	while (fl__ini_list_next(v, &cursor, &start, &n)) {
		const char *s = v->text + start, *eq = memchr(s, '=', n);
		unsigned int col = fl__ini_col(v, start);
		struct fl__display_config_option *o;
		size_t klen, vlen;
		int r;

		if (!eq || eq == s || eq == s + n - 1)
			return fl__ini_fail(&p->ini, col,
					    "'%.*s' is not an option: write KEY=VALUE, as "
					    "card=/dev/dri/card0",
					    (int)n, s);
		if (d->n_options == FL_DISPLAY_CONFIG_MAX_OPTIONS)
			return fl__ini_fail(&p->ini, col, "more than %d options",
					    FL_DISPLAY_CONFIG_MAX_OPTIONS);
		o = &d->options[d->n_options];
		klen = (size_t)(eq - s);
		r = fl__ini_take_name(&p->ini, s, klen, col, "driver option", o->key,
				      FL_DISPLAY_NAME_LEN);
		if (r < 0)
			return r;
		vlen = n - klen - 1;
		if (vlen >= FL_DISPLAY_CONFIG_OPTION_LEN)
			return fl__ini_fail(&p->ini, fl__ini_col(v, start + klen + 1),
					    "the value of option '%s' is longer than %d bytes",
					    o->key, FL_DISPLAY_CONFIG_OPTION_LEN - 1);
		for (size_t i = 0; i < vlen; i++)
			if (fl__ini_is_space(eq[1 + i]))
				return fl__ini_fail(&p->ini, fl__ini_col(v, start + klen + 1 + i),
						    "the value of option '%s' has a space", o->key);
		memcpy(o->value, eq + 1, vlen);
		o->value[vlen] = '\0';
		for (size_t j = 0; j < d->n_options; j++)
			if (!strcmp(d->options[j].key, o->key))
				return fl__ini_fail(&p->ini, col, "option '%s' is given twice",
						    o->key);
		d->n_options++;
	}
	return 0;
}

static int parse_key(struct parser *p, enum key k, const struct fl_ini_value *v)
{
	const char *key = keys[k].name;

	/* Every value is names, numbers and words: quotes would only hide a typo. */
	if (v->quoted)
		return fl__ini_fail(&p->ini, v->col, "'%s' takes no quoted string", key);
	switch (k) {
	case K_DRIVER:
		return fl__ini_take_name(&p->ini, v->text, v->len, v->col, "driver",
					 cur_device(p)->driver, FL_DISPLAY_NAME_LEN);
	case K_OPTIONS:
		return parse_options(p, v);
	case K_PADDING:
		if (!strcmp(v->text, "padded"))
			cur_device(p)->padding = FL_DISPLAY_PADDED_TO_PITCH;
		else if (!strcmp(v->text, "unpadded"))
			cur_device(p)->padding = FL_DISPLAY_UNPADDED;
		else
			return fl__ini_fail(&p->ini, v->col,
					    "'padding' is padded or unpadded, not '%s'", v->text);
		return 0;
	case K_TYPE:
		return parse_type(p, v);
	case K_FLAGS:
		return parse_flags(p, v);
	case K_MODES:
		return parse_modes(p, v);
	case K_CURRENT_MODE:
		return parse_mode(p, v, 0, v->len, &p->current);
	case K_SIZE_MM: {
		uint32_t w, h;

		if (!split_size(v->text, v->len, UINT16_MAX, &w, &h))
			return fl__ini_fail(
				&p->ini, v->col,
				"'size-mm' is WIDTHxHEIGHT in millimetres (each 0 to 65535), "
				"not '%s'",
				v->text);
		cur_intf(p)->width_mm = (uint16_t)w;
		cur_intf(p)->height_mm = (uint16_t)h;
		return 0;
	}
	case K_CONNECTED:
		return parse_yes_no(p, v, key, &cur_intf(p)->connected);
	case K_GANG:
		return fl__ini_take_name(&p->ini, v->text, v->len, v->col, "gang",
					 cur_intf(p)->gang, FL_DISPLAY_NAME_LEN);
	case K_GANG_TILE: {
		const char *comma = memchr(v->text, ',', v->len);
		uint32_t *t = cur_intf(p)->gang_tile;

		if (!comma ||
		    !number(v->text, (size_t)(comma - v->text), FL_DISPLAY_GANG_MAX - 1, &t[0]) ||
		    !number(comma + 1, v->len - (size_t)(comma + 1 - v->text),
			    FL_DISPLAY_GANG_MAX - 1, &t[1]))
			return fl__ini_fail(&p->ini, v->col,
					    "'gang-tile' is COLUMN,ROW of the gang's grid (each 0 "
					    "to %d; 0,0 is the panel's top-left), not '%s'",
					    FL_DISPLAY_GANG_MAX - 1, v->text);
		return 0;
	}
	case K_BACKGROUND: {
		uint32_t rgb = 0;

		/* Not #RRGGBB: '#' starts a comment in the INI files fenceline reads. */
		if (v->len != 8 || v->text[0] != '0' || (v->text[1] != 'x' && v->text[1] != 'X'))
			goto bad_colour;
		for (size_t i = 2; i < 8; i++) {
			char c = v->text[i];
			uint32_t d = c >= '0' && c <= '9'   ? (uint32_t)(c - '0')
				     : c >= 'a' && c <= 'f' ? (uint32_t)(c - 'a' + 10)
				     : c >= 'A' && c <= 'F' ? (uint32_t)(c - 'A' + 10)
							    : 16;

			if (d > 15)
				goto bad_colour;
			rgb = rgb << 4 | d;
		}
		cur_intf(p)->background = 0xff000000u | rgb;
		return 0;
bad_colour:
		return fl__ini_fail(&p->ini, v->col,
				    "'background' is an opaque colour 0xRRGGBB, not '%s'", v->text);
	}
	case K_FORMATS:
		return parse_formats(p, v);
	case K_INTERFACES:
		return parse_interfaces(p, v);
	default:
		return -EINVAL;
	}
}

static int parse_assignment(struct parser *p, const struct fl_ini_item *item)
{
	static const char *const where[] = {
		[SEC_DEVICE] = "a [device] section",
		[SEC_INTERFACE] = "an [interface] section",
		[SEC_ENGINE] = "an [engine] section",
	};
	int k;

	if (p->sec == SEC_NONE)
		return fl__ini_fail(&p->ini, item->col, "'%.*s' before the first [device] section",
				    (int)item->key_len, item->key);
	k = fl__ini_assignment(&p->ini, item, keys, K_COUNT, IN(p->sec), where[p->sec],
			       known_keys[p->sec], p->key_at);
	return k < 0 ? k : parse_key(p, (enum key)k, &p->ini.value);
}

static int finish_interface(struct parser *p)
{
	struct fl__display_config_interface *intf = cur_intf(p);
	const struct fl_ini_pos *at = p->key_at;

	if (!at[K_TYPE].line)
		return fl__ini_fail_at(&p->ini, p->sec_at, "[interface %s] has no 'type'",
				       intf->name);
	if (!at[K_GANG].line != !at[K_GANG_TILE].line)
		return fl__ini_fail_at(
			&p->ini, at[K_GANG].line ? at[K_GANG] : at[K_GANG_TILE],
			"[interface %s] needs both 'gang' and 'gang-tile', or neither", intf->name);
	if (intf->connected && !intf->n_modes)
		return fl__ini_fail_at(&p->ini, at[K_CONNECTED].line ? at[K_CONNECTED] : p->sec_at,
				       "[interface %s] is connected and needs 'modes'", intf->name);
	if (!at[K_CURRENT_MODE].line)
		return 0;
	if (!intf->connected)
		return fl__ini_fail_at(&p->ini, at[K_CURRENT_MODE],
				       "a disconnected interface has no current mode (ADF's start "
				       "zeroed): set 'connected = yes' or drop 'current-mode'");
	for (size_t i = 0; i < intf->n_modes; i++) {
		if (same_mode(&intf->modes[i], &p->current)) {
			intf->current = (int)i;
			return 0;
		}
	}
	return fl__ini_fail_at(&p->ini, at[K_CURRENT_MODE],
			       "current mode %s@%u is not one of 'modes'", p->current.name,
			       p->current.vrefresh);
}

static int finish_section(struct parser *p)
{
	switch (p->sec) {
	case SEC_DEVICE:
		if (!p->key_at[K_DRIVER].line)
			return fl__ini_fail_at(&p->ini, p->sec_at, "[device %s] has no 'driver'",
					       cur_device(p)->name);
		return 0;
	case SEC_INTERFACE:
		return finish_interface(p);
	case SEC_ENGINE:
		if (!p->key_at[K_FORMATS].line)
			return fl__ini_fail_at(&p->ini, p->sec_at, "[engine %s] has no 'formats'",
					       cur_engine(p)->name);
		return 0;
	default:
		return 0;
	}
}

/* The index of interface @name in device @d, or -1. */
static ptrdiff_t find_intf(const struct fl__display_config_device *d, const char *name)
{
	for (size_t i = 0; i < d->n_intfs; i++)
		if (!strcmp(d->intfs[i].name, name))
			return (ptrdiff_t)i;
	return -1;
}

/*
 * The gangs of device @d: each of 2 to FL_DISPLAY_GANG_MAX interfaces that
 * show one panel, so with the same modes, current mode and hotplug state,
 * and tiles that fill their grid exactly once (the model's rule).
 */
static int finish_gangs(struct parser *p, const struct fl__display_config_device *d)
{
	for (size_t i = 0; i < d->n_intfs; i++) {
		const struct fl__display_config_interface *a = &d->intfs[i];
		struct fl_ini_pos at = { a->line, 1 };
		uint32_t tiles[FL_DISPLAY_GANG_MAX][2], cols, rows;
		struct fl_display_error e;
		size_t n = 1;
		bool first = true;

		if (!a->gang[0])
			continue;
		memcpy(tiles[0], a->gang_tile, sizeof(tiles[0]));
		for (size_t j = 0; j < d->n_intfs; j++) {
			const struct fl__display_config_interface *b = &d->intfs[j];

			if (j == i || strcmp(a->gang, b->gang))
				continue;
			first &= j > i;
			if (n < FL_DISPLAY_GANG_MAX)
				memcpy(tiles[n], b->gang_tile, sizeof(tiles[n]));
			n++;
			if (a->connected != b->connected || a->n_modes != b->n_modes ||
			    a->current != b->current ||
			    memcmp(a->modes, b->modes, a->n_modes * sizeof(a->modes[0])))
				return fl__ini_fail_at(
					&p->ini, (struct fl_ini_pos){ b->line, 1 },
					"interfaces '%s' and '%s' of gang '%s' show one panel: "
					"they need the same 'modes', 'current-mode' and "
					"'connected'",
					a->name, b->name, a->gang);
		}
		if (first && (n < 2 || n > FL_DISPLAY_GANG_MAX))
			return fl__ini_fail_at(&p->ini, at, "gang '%s' has %zu interfaces: 2 to %d",
					       a->gang, n, FL_DISPLAY_GANG_MAX);
		if (first &&
		    fl__display_gang_grid((const uint32_t(*)[2])tiles, n, &cols, &rows, &e))
			return fl__ini_fail_at(&p->ini, at, "gang '%s': %s", a->gang, e.msg);
	}
	return 0;
}

/* The current device is complete: its engines' interface names resolve. */
static int finish_device(struct parser *p)
{
	struct fl__display_config_device *d;

	if (!p->cfg->n_devices)
		return 0;
	d = cur_device(p);
	for (size_t e = 0; e < d->n_engines; e++) {
		struct fl__display_config_engine *eng = &d->engines[e];
		const struct pending *list = &p->pending[e];

		for (size_t j = 0; j < list->n; j++) {
			ptrdiff_t i = find_intf(d, list->names[j]);

			if (i < 0)
				return fl__ini_fail_at(&p->ini, list->at[j],
						       "engine '%s' lists interface '%s', which "
						       "device '%s' does not have",
						       eng->name, list->names[j], d->name);
			eng->interfaces[j] = (size_t)i;
		}
		eng->n_interfaces = list->n;
	}
	return finish_gangs(p, d);
}

static int open_device(struct parser *p, const char *name, struct fl_ini_pos at)
{
	struct fl__display_config *cfg = p->cfg;
	struct fl__display_config_device *d;

	for (size_t i = 0; i < cfg->n_devices; i++)
		if (!strcmp(cfg->devices[i].name, name))
			return fl__ini_fail_at(&p->ini, at,
					       "duplicate section [device %s] (first at line %u)",
					       name, cfg->devices[i].line);
	if (cfg->n_devices == FL_DISPLAY_CONFIG_MAX_DEVICES)
		return fl__ini_fail_at(&p->ini, at, "more than %d [device] sections",
				       FL_DISPLAY_CONFIG_MAX_DEVICES);
	d = &cfg->devices[cfg->n_devices++];
	memset(d, 0, sizeof(*d));
	strcpy(d->name, name);
	d->line = at.line;
	memset(p->pending, 0, FL_DISPLAY_CONFIG_MAX_OBJECTS * sizeof(*p->pending));
	return 0;
}

/* A new zeroed element at the end of @*array of @*n, or NULL without memory. */
static void *append(void **array, size_t *n, size_t size)
{
	char *more = realloc(*array, (*n + 1) * size);

	if (!more)
		return NULL;
	*array = more;
	memset(more + *n * size, 0, size);
	return more + (*n)++ * size;
}

/* Adds an interface or engine named @name to the current device. */
static int open_object(struct parser *p, enum section sec, const char *name, struct fl_ini_pos at)
{
	struct fl__display_config_device *d;
	const char *what = section_types[sec - 1];
	size_t n;

	if (!p->cfg->n_devices)
		return fl__ini_fail_at(&p->ini, at, "[%s %s] before the first [device] section",
				       what, name);
	d = cur_device(p);
	n = sec == SEC_INTERFACE ? d->n_intfs : d->n_engines;
	for (size_t i = 0; i < n; i++) {
		const char *other = sec == SEC_INTERFACE ? d->intfs[i].name : d->engines[i].name;
		unsigned int line = sec == SEC_INTERFACE ? d->intfs[i].line : d->engines[i].line;

		if (!strcmp(other, name))
			return fl__ini_fail_at(&p->ini, at,
					       "duplicate section [%s %s] in device %s (first at "
					       "line %u)",
					       what, name, d->name, line);
	}
	if (n == FL_DISPLAY_CONFIG_MAX_OBJECTS)
		return fl__ini_fail_at(&p->ini, at, "more than %d [%s] sections in device %s",
				       FL_DISPLAY_CONFIG_MAX_OBJECTS, what, d->name);
	if (sec == SEC_INTERFACE) {
		struct fl__display_config_interface *intf =
			append((void **)&d->intfs, &d->n_intfs, sizeof(*d->intfs));

		if (!intf)
			return -ENOMEM;
		strcpy(intf->name, name);
		intf->current = -1;
		intf->background = 0xff000000u;
		intf->line = at.line;
	} else {
		struct fl__display_config_engine *eng =
			append((void **)&d->engines, &d->n_engines, sizeof(*d->engines));

		if (!eng)
			return -ENOMEM;
		strcpy(eng->name, name);
		eng->line = at.line;
	}
	return 0;
}

static int parse_section(struct parser *p, const struct fl_ini_item *item)
{
	enum section sec = (enum section)(item->section + 1);
	struct fl_ini_pos at = { item->line, item->col };
	int r = finish_section(p);

	if (!r && sec == SEC_DEVICE)
		r = finish_device(p);
	if (!r)
		r = sec == SEC_DEVICE ? open_device(p, item->name, at)
				      : open_object(p, sec, item->name, at);
	if (r)
		return r;
	p->sec = sec;
	p->sec_at = at;
	memset(p->key_at, 0, sizeof(p->key_at));
	return 0;
}

void fl__display_config_free(struct fl__display_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_devices; i++) {
		free(cfg->devices[i].intfs);
		free(cfg->devices[i].engines);
	}
	free(cfg->devices);
	free(cfg);
}

int fl__display_config_parse(const char *text, size_t len, const char *origin,
			     struct fl__display_config **ret_cfg, char *err, size_t err_size)
{
	struct parser p = { .sec = SEC_NONE };
	struct fl_ini_item item;
	int r;

	p.cfg = calloc(1, sizeof(*p.cfg));
	if (p.cfg)
		p.cfg->devices = calloc(FL_DISPLAY_CONFIG_MAX_DEVICES, sizeof(*p.cfg->devices));
	p.pending = calloc(FL_DISPLAY_CONFIG_MAX_OBJECTS, sizeof(*p.pending));
	if (!p.cfg || !p.cfg->devices || !p.pending) {
		r = -ENOMEM;
		goto out;
	}
	fl__ini_init(&p.ini, &syntax, text, len, origin, err, err_size);
	while (!(r = fl__ini_next(&p.ini, &item)) && item.kind != FL_INI_END) {
		r = item.kind == FL_INI_KEY ? parse_assignment(&p, &item)
					    : parse_section(&p, &item);
		if (r)
			break;
	}
	if (!r)
		r = finish_section(&p);
	if (!r)
		r = finish_device(&p);
	if (!r && !p.cfg->n_devices)
		r = fl__ini_fail_at(&p.ini, (struct fl_ini_pos){ p.ini.line ? p.ini.line : 1, 1 },
				    "the config has no [device] section");
out:
	free(p.pending);
	if (r == -ENOMEM)
		fl__ini_msg(err, err_size, "out of memory");
	if (r) {
		fl__display_config_free(p.cfg);
		return r;
	}
	*ret_cfg = p.cfg;
	return 0;
}

int fl__display_config_instantiate(const struct fl__display_config_device *cd,
				   struct fl__display_set *d,
				   const struct fl_display_driver_ops *ops, void *data,
				   struct fl__display_device **ret_dev, struct fl_display_error *e)
{
	struct fl__display_device *dev;
	struct fl__display_interface **intfs = NULL;
	int r;

	r = fl__display_device_create(d, cd->name, ops, data, cd->padding, &dev, e);
	if (r)
		return r;
	if (cd->n_intfs && !(intfs = calloc(cd->n_intfs, sizeof(*intfs)))) {
		r = fl__display_fail(e, -ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < cd->n_intfs; i++) {
		const struct fl__display_config_interface *ci = &cd->intfs[i];

		r = fl__display_interface_add(
			dev, ci->type, ci->type >= FL_DISPLAY_INTF_CUSTOM ? ci->type_str : NULL,
			ci->flags, ci->name, ci->width_mm, ci->height_mm, &intfs[i], e);
		if (!r && ci->connected)
			r = fl__display_interface_hotplug(intfs[i], true, ci->modes, ci->n_modes,
							  e);
		if (r)
			goto fail;
		if (ci->current >= 0)
			fl__display_interface_set_current_mode(intfs[i], &ci->modes[ci->current]);
	}
	for (size_t i = 0; i < cd->n_intfs; i++) {
		uint32_t ids[FL_DISPLAY_GANG_MAX], tiles[FL_DISPLAY_GANG_MAX][2];
		size_t n = 0;
		bool first = true;

		for (size_t j = 0; j < cd->n_intfs && cd->intfs[i].gang[0]; j++) {
			if (strcmp(cd->intfs[j].gang, cd->intfs[i].gang))
				continue;
			first &= j >= i;
			if (n < FL_DISPLAY_GANG_MAX) {
				ids[n] = (uint32_t)j;
				memcpy(tiles[n], cd->intfs[j].gang_tile, sizeof(tiles[n]));
			}
			n++;
		}
		if (n && first &&
		    (r = fl__display_gang_add(dev, ids, (const uint32_t(*)[2])tiles, n, e)))
			goto fail;
	}
	for (size_t i = 0; i < cd->n_engines; i++) {
		const struct fl__display_config_engine *ce = &cd->engines[i];
		struct fl__display_engine *eng;

		r = fl__display_engine_add(dev, ce->name, ce->formats, ce->n_formats, &eng, e);
		for (size_t j = 0; !r && j < ce->n_interfaces; j++)
			r = fl__display_attachment_allow(eng, intfs[ce->interfaces[j]], e);
		if (r)
			goto fail;
	}
	free(intfs);
	*ret_dev = dev;
	return 0;
fail:
	free(intfs);
	fl__display_device_destroy(dev);
	return r;
}

/* data/displays.ini, embedded by the build (src/display/meson.build). */
extern const char fl__display_config_default_text[];
extern const size_t fl__display_config_default_len;

const char *fl__display_config_default(size_t *ret_len)
{
	*ret_len = fl__display_config_default_len;
	return fl__display_config_default_text;
}

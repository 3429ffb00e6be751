/* SPDX-License-Identifier: MIT */
/*
 * The display config (src/display/config.c, docs/display.md "The config
 * file"): every error class with its line and column, what a config
 * describes, the making of model devices from it, and the built-in default
 * (data/displays.ini) as issue 17 describes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "display-config.h"
#include "runner.h"

#define FMT(s) FL_FOURCC(s[0], s[1], s[2], s[3])

static char err[512];

static struct fl__display_config *parse(const char *text)
{
	struct fl__display_config *cfg = NULL;
	int r = fl__display_config_parse(text, strlen(text), "t.ini", &cfg, err, sizeof(err));

	if (r)
		fl__test_fail(__FILE__, __LINE__, "parse: %d: %s", r, err);
	return cfg;
}

/*
 * Why parsing @text did not fail with -EINVAL and a message "@where
 * @what...", or NULL if it did.
 */
static const char *parse_error_mismatch(const char *text, const char *where, const char *what)
{
	static char why[1024];
	struct fl__display_config *cfg = (void *)0x5e17;
	int r;

	err[0] = '\0';
	r = fl__display_config_parse(text, strlen(text), "t.ini", &cfg, err, sizeof(err));
	if (r != -EINVAL || cfg != (void *)0x5e17)
		snprintf(why, sizeof(why), "got %d, want -EINVAL (%s)", r, err);
	else if (strncmp(err, where, strlen(where)) || !strstr(err, what))
		snprintf(why, sizeof(why), "message \"%s\", want \"%s...%s...\"", err, where, what);
	else
		return NULL;
	return why;
}

#define expect_parse_error(text, where, what)                               \
	do {                                                                \
		const char *why_ = parse_error_mismatch(text, where, what); \
		if (why_)                                                   \
			fl__test_fail(__FILE__, __LINE__, "%s", why_);      \
	} while (0)

#define DEV  "[device d]\ndriver = virtual\n"
#define INTF DEV "[interface i]\ntype = DSI\n"

/* Configs that are refused: the text, where the message points, what it says. */
static const struct bad_config {
	const char *text, *where, *what;
} bad_configs[] = {
	{ "", "t.ini:1:1: ", "the config has no [device] section" },
	{ "# nothing\n\n", "t.ini:2:1: ", "the config has no [device] section" },
	{ "driver = virtual\n", "t.ini:1:1: ", "'driver' before the first [device] section" },
	{ "\n[interface i]\ntype = DSI\n",
	  "t.ini:2:1: ", "[interface i] before the first [device] section" },
	{ "[device d]\n", "t.ini:1:1: ", "[device d] has no 'driver'" },
	{ "[device d]\n[engine e]\n", "t.ini:1:1: ", "[device d] has no 'driver'" },
	{ DEV DEV, "t.ini:3:1: ", "duplicate section [device d] (first at line 1)" },
	{ "[device d]\ndriver = \"virtual\"\n", "t.ini:2:10: ", "'driver' takes no quoted string" },
	{ "[device d]\ndriver = vir tual\n", "t.ini:2:13: ", "a space in a driver name" },
	{ "[device d]\ndriver = v\ndriver = v\n",
	  "t.ini:3:1: ", "duplicate key 'driver' (first set at line 2)" },
	{ DEV "padding = sideways\n",
	  "t.ini:3:11: ", "'padding' is padded or unpadded, not 'sideways'" },
	{ DEV "type = DSI\n", "t.ini:3:1: ",
	  "unknown key 'type' in a [device] section (known: driver, options, padding)" },
	{ DEV "options = card\n", "t.ini:3:11: ", "'card' is not an option: write KEY=VALUE" },
	{ DEV "options = =x\n", "t.ini:3:11: ", "'=x' is not an option" },
	{ DEV "options = card=\n", "t.ini:3:11: ", "'card=' is not an option" },
	{ DEV "options = a=1,, b=2\n", "t.ini:3:15: ", "'' is not an option" },
	{ DEV "options = tty=/dev/tty1, tty=/dev/tty2\n",
	  "t.ini:3:26: ", "option 'tty' is given twice" },
	{ DEV "options = c/rd=1\n", "t.ini:3:12: ", "'/' in a driver option name" },
	{ DEV "options = card=a b\n", "t.ini:3:17: ", "the value of option 'card' has a space" },
	{ DEV "options = card=/dev/dri/card0\noptions = x=1\n",
	  "t.ini:4:1: ", "duplicate key 'options' (first set at line 3)" },
	{ "[device d]\noptions = a=1\n", "t.ini:1:1: ", "[device d] has no 'driver'" },
	{ INTF "options = a=1\n",
	  "t.ini:5:1: ", "unknown key 'options' in an [interface] section" },
	{ DEV "[devices x]\n", "t.ini:3:2: ", "unknown section type 'devices'" },
	{ DEV "[interface i]\n", "t.ini:3:1: ", "[interface i] has no 'type'" },
	{ DEV "[interface i]\n[interface j]\n", "t.ini:3:1: ", "[interface i] has no 'type'" },
	{ INTF "[interface i]\ntype = DSI\n",
	  "t.ini:5:1: ", "duplicate section [interface i] in device d (first at line 3)" },
	{ DEV "[interface i]\ntype = HDMX\n", "t.ini:4:8: ", "unknown interface type 'HDMX'" },
	{ DEV "[interface i]\ntype = custom:\n",
	  "t.ini:4:15: ", "expected a custom interface type name" },
	{ INTF "mode = 640x480@60\n", "t.ini:5:1: ",
	  "unknown key 'mode' in an [interface] section (known: type, flags, modes, "
	  "current-mode, size-mm, connected, gang, gang-tile, background)" },
	{ INTF "background = #102030\n", "t.ini:5:14: ", "'background' has no value" },
	{ INTF "background = 0x10203\n",
	  "t.ini:5:14: ", "'background' is an opaque colour 0xRRGGBB" },
	{ INTF "background = 0x10203g\n", "t.ini:5:14: ", "not '0x10203g'" },
	{ INTF "gang = p\n", "t.ini:5:1: ", "[interface i] needs both 'gang' and 'gang-tile'" },
	{ INTF "gang-tile = 1,0\n",
	  "t.ini:5:1: ", "needs both 'gang' and 'gang-tile', or neither" },
	{ INTF "gang = p\ngang-tile = 8,0\n", "t.ini:6:13: ", "'gang-tile' is COLUMN,ROW" },
	{ INTF "gang = p\ngang-tile = 1\n", "t.ini:6:13: ", "not '1'" },
	{ INTF "gang = p\ngang-tile = 0,0\n", "t.ini:3:1: ", "gang 'p' has 1 interfaces: 2 to 8" },
	{ INTF "gang = p\ngang-tile = 0,0\n[interface j]\ntype = DSI\ngang = p\n"
	       "gang-tile = 1,0\nmodes = 640x480@60\n",
	  "t.ini:7:1: ", "interfaces 'i' and 'j' of gang 'p' show one panel" },
	{ INTF "connected = yes\n", "t.ini:5:1: ", "[interface i] is connected and needs 'modes'" },
	{ INTF "connected = maybe\n", "t.ini:5:13: ", "'connected' is yes or no, not 'maybe'" },
	{ INTF "modes = 640x480@60, 1920x1080\n",
	  "t.ini:5:21: ", "'1920x1080' is not a mode: write WIDTHxHEIGHT@HZ" },
	{ INTF "modes = 640x480@60,, 800x600@60\n",
	  "t.ini:5:20: ", "empty mode in the list of modes" },
	{ INTF "modes = 640x480@60, 640x480@60\n",
	  "t.ini:5:21: ", "mode 640x480@60 is listed twice" },
	{ INTF "modes = 65300x10@60\n", "t.ini:5:9: ", "mode 65300x10@60 is out of range" },
	{ INTF "modes = 640x480@1001\n", "t.ini:5:9: ", "is not a mode" },
	{ INTF "modes = 640x480@0\n", "t.ini:5:9: ", "is out of range" },
	{ INTF "modes = 640x480@60\ncurrent-mode = 800x600@60\nconnected = yes\n",
	  "t.ini:6:1: ", "current mode 800x600@60 is not one of 'modes'" },
	{ INTF "current-mode = 640x480@60\nmodes = 640x480@60\n",
	  "t.ini:5:1: ", "a disconnected interface has no current mode" },
	{ INTF "flags = primary, sideways\n", "t.ini:5:18: ", "unknown flag 'sideways'" },
	{ INTF "flags = primary, primary\n", "t.ini:5:18: ", "flag 'primary' is listed twice" },
	{ INTF "flags = none, external\n",
	  "t.ini:5:9: ", "'none' cannot be listed with other flags" },
	{ INTF "size-mm = 121\n", "t.ini:5:11: ", "'size-mm' is WIDTHxHEIGHT in millimetres" },
	{ INTF "size-mm = 121x65536\n", "t.ini:5:11: ", "(each 0 to 65535)" },
	{ DEV "[engine e]\n", "t.ini:3:1: ", "[engine e] has no 'formats'" },
	{ DEV "[engine e]\nformats = XRGB8888, XRGB888\n",
	  "t.ini:4:21: ", "unknown format 'XRGB888'" },
	{ DEV "[engine e]\nformats = NV12, NV12\n", "t.ini:4:17: ", "format NV12 is listed twice" },
	{ DEV "[engine e]\nformats = fourcc:XR24\n",
	  "t.ini:4:11: ", "fourcc:XR24 is the standard format XRGB8888: write its name" },
	{ DEV "[engine e]\nformats = fourcc:XR2\n", "t.ini:4:11: ", "unknown format 'fourcc:XR2'" },
	{ INTF "[engine e]\nformats = RGB565\ninterfaces = i, j\n",
	  "t.ini:7:17: ", "engine 'e' lists interface 'j', which device 'd' does not have" },
	{ INTF "[engine e]\nformats = RGB565\ninterfaces = i, i\n",
	  "t.ini:7:17: ", "interface 'i' is listed twice" },
	/* An engine may name interfaces written after it, but only of its own device. */
	{ DEV "[engine e]\nformats = RGB565\ninterfaces = i\n"
	      "[device d2]\ndriver = v\n[interface i]\ntype = DSI\n",
	  "t.ini:5:14: ", "lists interface 'i', which device 'd' does not have" },
	/* The lexer's own errors come through with their positions. */
	{ DEV "[engine e]\nformats = RGB565 \x01\n", "t.ini:4:18: ", "control character 0x01" },
	{ DEV "[engine e\n", "t.ini:3:10: ", "expected ']' to close the section" },
};

FL_TEST(config_errors_name_line_and_column)
{
	for (size_t i = 0; i < sizeof(bad_configs) / sizeof(bad_configs[0]); i++) {
		const struct bad_config *c = &bad_configs[i];
		const char *why = parse_error_mismatch(c->text, c->where, c->what);

		if (why)
			fl__test_fail(__FILE__, __LINE__, "bad_configs[%zu]: %s", i, why);
	}
}

FL_TEST(config_limits)
{
	char *text = malloc(64 * 1024);
	size_t n = 0;

	fl_assert(text);
	for (int i = 0; i <= FL_DISPLAY_CONFIG_MAX_DEVICES; i++)
		n += (size_t)sprintf(text + n, "[device d%d]\ndriver = v\n", i);
	expect_parse_error(text, "t.ini:33:1: ", "more than 16 [device] sections");
	n = (size_t)sprintf(text, DEV);
	for (int i = 0; i <= FL_DISPLAY_CONFIG_MAX_OBJECTS; i++)
		n += (size_t)sprintf(text + n, "[engine e%d]\nformats = NV12\n", i);
	expect_parse_error(text, "t.ini:131:1: ", "more than 64 [engine] sections in device d");
	n = (size_t)sprintf(text, INTF "modes = ");
	for (int i = 0; i <= FL_DISPLAY_MAX_MODES; i++)
		n += (size_t)sprintf(text + n, "%s%dx480@60", i ? "," : "", 640 + i);
	expect_parse_error(text, "t.ini:5:", "more than 60 modes");
	n = (size_t)sprintf(text, DEV "options = ");
	for (int i = 0; i <= FL_DISPLAY_CONFIG_MAX_OPTIONS; i++)
		n += (size_t)sprintf(text + n, "%sk%d=v", i ? "," : "", i);
	expect_parse_error(text, "t.ini:3:", "more than 16 options");
	n = (size_t)sprintf(text, DEV "options = k=");
	memset(text + n, 'v', FL_DISPLAY_CONFIG_OPTION_LEN);
	strcpy(text + n + FL_DISPLAY_CONFIG_OPTION_LEN, "\n");
	expect_parse_error(text,
			   "t.ini:3:13: ", "the value of option 'k' is longer than 255 bytes");
	free(text);
}

FL_TEST(config_describes_devices_interfaces_and_engines)
{
	struct fl__display_config *cfg = parse("[device one]\n"
					       "driver = virtual\n"
					       "padding = unpadded\n"
					       "[engine video]\n"
					       "formats = NV12, fourcc:T16x\n"
					       "interfaces = lvds1, dsi\n"
					       "[interface dsi]\n"
					       "type = dsi ; case does not matter\n"
					       "flags = external, primary\n"
					       "modes = 1280x720@60, 640x480@75\n"
					       "current-mode = 640x480@75\n"
					       "size-mm = 0x0\n"
					       "connected = true\n"
					       "[interface lvds1]\n"
					       "type = custom:LVDS\n"
					       "[interface rgb]\n"
					       "type = custom:RGB\n"
					       "[interface lvds2]\n"
					       "type = custom:LVDS\n"
					       "[device two]\n"
					       "driver = other\n"
					       "[interface dsi]\n"
					       "type = custom:RGB\n");
	const struct fl__display_config_device *d = &cfg->devices[0];
	const struct fl__display_config_interface *dsi = &d->intfs[0];

	fl_assert_int_eq(cfg->n_devices, 2);
	fl_assert_str_eq(d->name, "one");
	fl_assert_str_eq(d->driver, "virtual");
	fl_assert_int_eq(d->padding, FL_DISPLAY_UNPADDED);
	fl_assert_int_eq(d->line, 1);
	fl_assert_int_eq(d->n_intfs, 4);
	fl_assert_int_eq(dsi->type, FL_DISPLAY_INTF_DSI);
	fl_assert_int_eq(dsi->flags, FL_DISPLAY_INTF_PRIMARY | FL_DISPLAY_INTF_EXTERNAL);
	fl_assert(dsi->connected);
	fl_assert_int_eq(dsi->n_modes, 2);
	fl_assert_int_eq(dsi->current, 1);
	fl_assert_int_eq(dsi->modes[1].vrefresh, 75);
	fl_assert_int_eq(dsi->modes[0].type & (1u << 3), 1u << 3); /* preferred */
	fl_assert_int_eq(dsi->modes[1].type & (1u << 3), 0);
	fl_assert_int_eq(dsi->line, 7);
	/* Driver types: one number per distinct name of the device, from 128. */
	fl_assert_int_eq(d->intfs[1].type, 128);
	fl_assert_str_eq(d->intfs[1].type_str, "LVDS");
	fl_assert_int_eq(d->intfs[2].type, 129);
	fl_assert_int_eq(d->intfs[3].type, 128);
	fl_assert_int_eq(cfg->devices[1].intfs[0].type, 128);
	fl_assert_str_eq(cfg->devices[1].intfs[0].type_str, "RGB");
	fl_assert(!d->intfs[1].connected);
	fl_assert_int_eq(d->intfs[1].current, -1);
	fl_assert_int_eq(d->n_engines, 1);
	fl_assert_int_eq(d->engines[0].n_formats, 2);
	fl_assert_int_eq(d->engines[0].formats[0], FMT("NV12"));
	fl_assert_int_eq(d->engines[0].formats[1], FMT("T16x"));
	fl_assert_int_eq(d->engines[0].n_interfaces, 2);
	fl_assert_int_eq(d->engines[0].interfaces[0], 1);
	fl_assert_int_eq(d->engines[0].interfaces[1], 0);
	fl_assert_int_eq(cfg->devices[1].padding, FL_DISPLAY_PADDED_TO_PITCH);
	fl__display_config_free(cfg);
}

FL_TEST(config_gives_a_device_its_driver_options)
{
	struct fl__display_config *cfg = parse("[device d]\ndriver = kms\n"
					       "options = card=/dev/dri/card1 , mode-hint=a=b,x=1\n"
					       "[device e]\ndriver = virtual\n");
	const struct fl__display_config_device *d = &cfg->devices[0];

	fl_assert_int_eq(d->n_options, 3);
	fl_assert_str_eq(d->options[0].key, "card");
	fl_assert_str_eq(d->options[0].value, "/dev/dri/card1");
	/* The first '=' ends the key: a value may hold more. */
	fl_assert_str_eq(d->options[1].key, "mode-hint");
	fl_assert_str_eq(d->options[1].value, "a=b");
	fl_assert_str_eq(d->options[2].key, "x");
	fl_assert_str_eq(d->options[2].value, "1");
	fl_assert_int_eq(cfg->devices[1].n_options, 0);
	fl__display_config_free(cfg);
}

FL_TEST(config_mode_timings)
{
	struct fl_display_mode m;

	/* 1080p60 is CEA-861's mode exactly. */
	fl_assert_int_eq(fl__display_mode_make(1920, 1080, 60, &m), 0);
	fl_assert_int_eq(m.clock, 148500);
	fl_assert_int_eq(m.htotal, 2200);
	fl_assert_int_eq(m.hsync_start, 2008);
	fl_assert_int_eq(m.hsync_end, 2052);
	fl_assert_int_eq(m.vtotal, 1125);
	fl_assert_int_eq(m.vsync_start, 1084);
	fl_assert_int_eq(m.vsync_end, 1089);
	fl_assert_int_eq(m.vrefresh, 60);
	fl_assert_str_eq(m.name, "1920x1080");
	/* Every size and rate the format allows gives back its rate. */
	for (uint32_t hz = 1; hz <= 1000; hz += 37) {
		fl_assert_int_eq(fl__display_mode_make(1, 1, hz, &m), 0);
		fl_assert_int_eq(fl__display_mode_vrefresh(&m), hz);
		fl_assert_int_eq(fl__display_mode_make(65255, 65490, hz, &m), 0);
		fl_assert_int_eq(fl__display_mode_vrefresh(&m), hz);
	}
	fl_assert_int_eq(fl__display_mode_make(65256, 10, 60, &m), -EINVAL);
	fl_assert_int_eq(fl__display_mode_make(10, 65491, 60, &m), -EINVAL);
	fl_assert_int_eq(fl__display_mode_make(0, 10, 60, &m), -EINVAL);
	fl_assert_int_eq(fl__display_mode_make(10, 10, 0, &m), -EINVAL);
	fl_assert_int_eq(fl__display_mode_make(10, 10, 1001, &m), -EINVAL);
}

static int accept_custom(void *data, const struct fl_display_driver_buffer *buf, size_t index,
			 struct fl_display_error *e)
{
	return 0;
}

FL_TEST(config_instantiates_model_devices)
{
	static const struct fl_display_driver_ops ops = { .validate_custom_format = accept_custom };
	const char *text = "[device d]\ndriver = v\n"
			   "[interface a]\ntype = custom:LVDS\nmodes = 800x600@60\n"
			   "current-mode = 800x600@60\nconnected = yes\nsize-mm = 10x20\n"
			   "[engine e]\nformats = fourcc:T16x\ninterfaces = a\n";
	struct fl__display_config *cfg = parse(text);
	struct fl__display_set *d = fl__display_create();
	struct fl__display_device *dev, *first;
	struct fl_display_interface_data q = { 0 };
	struct fl_display_error e = { 0 };

	/* A custom format needs the driver's op: refused, and no device is left. */
	fl_assert_int_eq(fl__display_device_create(d, "first", NULL, NULL, 0, &first, NULL), 0);
	fl_assert_int_eq(fl__display_config_instantiate(&cfg->devices[0], d, NULL, NULL, &dev, &e),
			 -EINVAL);
	fl_assert(strstr(e.msg, "T16x is not standard"));
	fl_assert(!fl__display_device_get(d, 1));
	fl_assert_int_eq(
		fl__display_config_instantiate(&cfg->devices[0], d, &ops, NULL, &dev, NULL), 0);
	fl_assert_int_eq(fl__display_device_id(dev), 1);
	fl_assert_int_eq(fl__display_interface_data(fl__display_interface_get(dev, 0), &q, NULL),
			 0);
	fl_assert_int_eq(q.type, 128);
	fl_assert_str_eq(fl__display_interface_type_str(fl__display_interface_get(dev, 0)), "LVDS");
	fl_assert_int_eq(q.hotplug_detect, 1);
	fl_assert_int_eq(q.n_modes, 1);
	fl_assert_int_eq(q.current_mode.hdisplay, 800);
	fl_assert_int_eq(q.width_mm, 10);
	fl_assert_int_eq(q.height_mm, 20);
	fl_assert(fl__display_attach_allowed(dev, 0, 0));
	fl_assert(fl__display_engine_supports(fl__display_engine_get(dev, 0), FMT("T16x")));
	fl__display_destroy(d);
	fl__display_config_free(cfg);
}

/* Appends a 800x600 link of gang "p" at @tile. Return: the bytes written. */
static int link(char *at, size_t room, const char *name, const char *tile)
{
	return snprintf(at, room,
			"[interface %s]\ntype = DSI\nmodes = 800x600@60\n"
			"current-mode = 800x600@60\nconnected = yes\ngang = p\ngang-tile = %s\n",
			name, tile);
}

FL_TEST(config_gangs_and_backgrounds_reach_the_model)
{
	const char *head = "[device d]\ndriver = v\n";
	char text[2048];
	struct fl__display_config *cfg;
	struct fl__display_set *d = fl__display_create();
	struct fl__display_device *dev;
	struct fl_display_gang g;
	struct fl_display_error e = { 0 };
	uint32_t w, h;
	int n;

	/* Four links in a 2 × 2 grid, written out of order; one more interface without a gang. */
	n = snprintf(text, sizeof(text), "%s", head);
	n += link(text + n, sizeof(text) - (size_t)n, "br", "1,1");
	n += link(text + n, sizeof(text) - (size_t)n, "tl", "0,0");
	n += snprintf(text + n, sizeof(text) - (size_t)n,
		      "[interface hdmi]\ntype = HDMI\nbackground = 0x0A0b0C\n");
	n += link(text + n, sizeof(text) - (size_t)n, "bl", "0,1");
	link(text + n, sizeof(text) - (size_t)n, "tr", "1,0");
	cfg = parse(text);
	fl_assert_int_eq(cfg->devices[0].intfs[2].background, 0xff0a0b0c);
	fl_assert_int_eq(cfg->devices[0].intfs[0].background, 0xff000000);
	fl_assert_int_eq(fl__display_config_instantiate(&cfg->devices[0], d, NULL, NULL, &dev, &e),
			 0);
	fl_assert_int_eq(fl__display_interface_gang(fl__display_interface_get(dev, 2), &g),
			 -ENODATA);
	fl_assert_int_eq(fl__display_interface_gang(fl__display_interface_get(dev, 4), &g), 0);
	fl_assert_int_eq(g.n_members, 4);
	fl_assert_int_eq(g.members[0], 0);
	fl_assert_int_eq(g.members[1], 1);
	fl_assert_int_eq(g.members[2], 3);
	fl_assert_int_eq(g.members[3], 4);
	fl_assert_int_eq(g.col, 1);
	fl_assert_int_eq(g.row, 0);
	fl_assert_int_eq(g.cols, 2);
	fl_assert_int_eq(g.rows, 2);
	fl__display_interface_frame_size(fl__display_interface_get(dev, 0), &w, &h);
	fl_assert_int_eq(w, 1600);
	fl_assert_int_eq(h, 1200);
	fl__display_interface_frame_size(fl__display_interface_get(dev, 2), &w, &h);
	fl_assert_int_eq(w, 0); /* unplugged, no mode */
	fl__display_config_free(cfg);

	/* Tiles that leave a hole in the grid, or a tile twice: refused with the gang's line. */
	n = snprintf(text, sizeof(text), "%s", head);
	n += link(text + n, sizeof(text) - (size_t)n, "a", "0,0");
	link(text + n, sizeof(text) - (size_t)n, "b", "1,1");
	expect_parse_error(text, "t.ini:3:1: ",
			   "gang 'p': a gang of 2 interfaces does not fill its 2x2 grid of tiles");
	n = snprintf(text, sizeof(text), "%s", head);
	n += link(text + n, sizeof(text) - (size_t)n, "a", "1,0");
	link(text + n, sizeof(text) - (size_t)n, "b", "1,0");
	expect_parse_error(text, "t.ini:3:1: ",
			   "gang 'p': members 0 and 1 of the gang have the same tile 1,0");
	fl__display_destroy(d);
}

static char *read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 16);

	fl_assert(f && buf);
	*ret_len = fread(buf, 1, 1 << 16, f);
	fl_assert(*ret_len < 1 << 16);
	fclose(f);
	return buf;
}

/* The built-in config is data/displays.ini, and is the device issue 17 describes. */
FL_TEST(config_default_is_the_phone_of_issue_17)
{
	static const char *const engine_formats[][9] = {
		{ "XRGB8888", "ARGB8888", "XBGR8888", "ABGR8888", "RGBX8888", "RGBA8888",
		  "BGRX8888", "BGRA8888", NULL },
		{ "RGB565", NULL },
		{ "NV12", NULL },
		{ "YUV420", NULL },
	};
	size_t len, file_len;
	const char *text = fl__display_config_default(&len);
	char *file = read_file(FL_DATA_DIR "/displays.ini", &file_len);
	struct fl__display_config *cfg = NULL;
	struct fl__display_set *d = fl__display_create();
	struct fl__display_device *dev;
	struct fl__display_interface *panel, *hdmi, *wb;
	const struct fl_display_mode *cur;
	bool alpha = false, opaque = false;
	size_t n;

	fl_assert_int_eq(len, file_len);
	fl_assert(!memcmp(text, file, len));
	free(file);
	fl_assert_int_eq(
		fl__display_config_parse(text, len, "displays.ini", &cfg, err, sizeof(err)), 0);
	fl_assert_int_eq(cfg->n_devices, 1);
	fl_assert_str_eq(cfg->devices[0].driver, "virtual");
	fl_assert_int_eq(
		fl__display_config_instantiate(&cfg->devices[0], d, NULL, NULL, &dev, NULL), 0);
	fl_assert_int_eq(fl__display_device_id(dev), 0);
	fl_assert_int_eq(fl__display_device_num_interfaces(dev), 3);
	fl_assert_int_eq(fl__display_device_num_engines(dev), 4);

	/* Display 0: a primary DSI panel, connected, 1920x1080@60 current. */
	panel = fl__display_interface_get(dev, 0);
	fl_assert_int_eq(fl__display_interface_type(panel), FL_DISPLAY_INTF_DSI);
	fl_assert_int_eq(fl__display_interface_flags(panel), FL_DISPLAY_INTF_PRIMARY);
	fl_assert(fl__display_interface_connected(panel));
	fl_assert_int_eq(fl__display_interface_dpms(panel), FL_DISPLAY_DPMS_OFF);
	cur = fl__display_interface_current_mode(panel);
	fl_assert_int_eq(cur->hdisplay, 1920);
	fl_assert_int_eq(cur->vdisplay, 1080);
	fl_assert_int_eq(cur->vrefresh, 60);
	fl_assert(!memcmp(cur, fl__display_interface_modes(panel, &n), sizeof(*cur)));

	/* An external HDMI, unplugged, with modes for when it is plugged in. */
	hdmi = fl__display_interface_get(dev, 1);
	fl_assert_int_eq(fl__display_interface_type(hdmi), FL_DISPLAY_INTF_HDMI);
	fl_assert_int_eq(fl__display_interface_flags(hdmi), FL_DISPLAY_INTF_EXTERNAL);
	fl_assert(!fl__display_interface_connected(hdmi));
	fl_assert_int_ge(cfg->devices[0].intfs[1].n_modes, 1);

	/* A memory-writeback interface. */
	wb = fl__display_interface_get(dev, 2);
	fl_assert_int_eq(fl__display_interface_type(wb), FL_DISPLAY_INTF_MEMORY);
	fl_assert(fl__display_interface_connected(wb));

	/* Four engines: 8888 RGB with and without alpha, RGB565, NV12, YUV420. */
	for (uint32_t id = 0; id < 4; id++) {
		struct fl__display_engine *eng = fl__display_engine_get(dev, id);
		uint32_t formats[16];
		struct fl_display_engine_data q = { .formats = formats, .n_formats = 16 };
		size_t k = 0;

		fl_assert_int_eq(fl__display_engine_data(eng, &q, NULL), 0);
		for (; engine_formats[id][k]; k++) {
			const struct fl__display_format *f = fl__display_format_by_name(
				engine_formats[id][k], strlen(engine_formats[id][k]));

			fl_assert(f && formats[k] == f->fourcc);
			if (id == 0)
				*(f->alpha ? &alpha : &opaque) = true;
		}
		fl_assert_int_eq(q.n_formats, k);
		/* Every engine on every interface: allowed, none attached yet. */
		for (uint32_t i = 0; i < 3; i++) {
			fl_assert(fl__display_attach_allowed(dev, id, i));
			fl_assert(!fl__display_attached(dev, id, i));
		}
	}
	fl_assert(alpha && opaque);
	fl__display_destroy(d);
	fl__display_config_free(cfg);
}

FL_TEST(config_message_is_cut_to_the_buffer)
{
	struct fl__display_config *cfg = (void *)0x5e17;
	char small[12];

	memset(small, 0x7f, sizeof(small));
	fl_assert_int_eq(fl__display_config_parse("[device d]\n", 11, "t.ini", &cfg, small, 9),
			 -EINVAL);
	fl_assert_str_eq(small, "t.ini...");
	fl_assert_int_eq(small[9], 0x7f);
	/* Not NUL-terminated input: nothing past @len is read (ASan and valgrind check). */
	{
		char *exact = malloc(11);

		fl_assert(exact);
		memcpy(exact, "[device d]\n", 11);
		fl_assert_int_eq(fl__display_config_parse(exact, 10, "t.ini", &cfg, NULL, 0),
				 -EINVAL);
		free(exact);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the display config (src/display/config.c). Input: the
 * config's text.
 *
 * Checks, beyond "no crash, no leak, no read past the text" (ASan, UBSan):
 *   - a rejected text gets -EINVAL and a message "fuzz:LINE:COLUMN: ..."
 *     pointing into the input (fuzz-ini.c), and a small message buffer is
 *     NUL-terminated and never overrun;
 *   - an accepted config makes a model device of every one of its devices
 *     (the parser checks all the model would refuse, given a driver that
 *     validates custom formats), and each device shows what the config
 *     said: interfaces connected with their modes and current mode, DPMS
 *     off, every engine's formats and allowed attachments;
 *   - a buffer that exactly fits each engine's first standard format
 *     passes the post check, and the same buffer one byte short does not.
 *
 * Built with libFuzzer under clang, and with fuzz-main.c under every
 * compiler.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "display-config.h"
#include "fuzz-ini.h"
#include "fuzz.h"

static int accept_custom(void *data, const struct fl_display_driver_buffer *buf, size_t index,
			 struct fl_display_error *e)
{
	return 0;
}

static const struct fl_display_driver_ops ops = { .validate_custom_format = accept_custom };

static void check_interface(struct fl__display_interface *intf,
			    const struct fl__display_config_interface *ci)
{
	struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
	struct fl_display_interface_data q = { .modes = modes, .n_modes = FL_DISPLAY_MAX_MODES };

	CHECK(fl__display_interface_data(intf, &q, NULL) == 0);
	CHECK(strcmp(q.name, ci->name) == 0);
	CHECK(q.type == ci->type && q.flags == ci->flags);
	CHECK(q.dpms_state == FL_DISPLAY_DPMS_OFF);
	CHECK(q.hotplug_detect == ci->connected);
	CHECK(q.n_modes == (ci->connected ? ci->n_modes : 0));
	CHECK(memcmp(modes, ci->modes, q.n_modes * sizeof(modes[0])) == 0);
	if (ci->current >= 0)
		CHECK(memcmp(&q.current_mode, &ci->modes[ci->current], sizeof(q.current_mode)) ==
		      0);
	else
		CHECK(q.current_mode.hdisplay == 0 && q.current_mode.clock == 0);
	for (size_t i = 0; i < q.n_modes; i++)
		CHECK(modes[i].vrefresh == fl__display_mode_vrefresh(&modes[i]));
	/* A gang the parser accepted is one the model made, each member at its tile. */
	if (ci->gang[0]) {
		struct fl_display_gang g;

		CHECK(fl__display_interface_gang(intf, &g) == 0);
		CHECK(g.col == ci->gang_tile[0] && g.row == ci->gang_tile[1]);
		CHECK(g.n_members >= 2 && g.n_members == g.cols * g.rows);
	} else {
		struct fl_display_gang g;

		CHECK(fl__display_interface_gang(intf, &g) == -ENODATA);
	}
}

/* The smallest buffer of standard format @f on engine @id: it must fit exactly. */
static void check_post(struct fl__display_device *dev, uint32_t id,
		       const struct fl__display_format *f)
{
	struct fl_display_driver_buffer b = { .engine = id, .w = 8, .h = 8, .format = f->fourcc };
	unsigned int last = f->planes - 1u;

	b.n_planes = f->planes;
	for (unsigned int p = 0; p < f->planes; p++) {
		uint32_t w = p ? 8u / f->hsub : 8u, h = p ? 8u / f->vsub : 8u;

		b.pitch[p] = w * f->cpp[p];
		b.size[p] = (uint64_t)b.pitch[p] * h;
	}
	CHECK(fl__display_post_check(dev, NULL, 0, &b, 1, 0, NULL) == 0);
	b.size[last]--;
	CHECK(fl__display_post_check(dev, NULL, 0, &b, 1, 0, NULL) == -EINVAL);
}

static void check_device(struct fl__display_device *dev, const struct fl__display_config_device *cd)
{
	CHECK(fl__display_device_num_interfaces(dev) == cd->n_intfs);
	CHECK(fl__display_device_num_engines(dev) == cd->n_engines);
	CHECK(fl__display_device_padding(dev) == cd->padding);
	for (uint32_t i = 0; i < cd->n_intfs; i++)
		check_interface(fl__display_interface_get(dev, i), &cd->intfs[i]);
	for (uint32_t e = 0; e < cd->n_engines; e++) {
		const struct fl__display_config_engine *ce = &cd->engines[e];
		const struct fl__display_format *f = fl__display_format_find(ce->formats[0]);
		size_t allowed = 0;

		for (uint32_t i = 0; i < cd->n_intfs; i++)
			allowed += fl__display_attach_allowed(dev, e, i);
		CHECK(allowed == ce->n_interfaces);
		for (size_t j = 0; j < ce->n_interfaces; j++)
			CHECK(fl__display_attach_allowed(dev, e, (uint32_t)ce->interfaces[j]));
		for (size_t j = 0; j < ce->n_formats; j++)
			CHECK(fl__display_engine_supports(fl__display_engine_get(dev, e),
							  ce->formats[j]));
		if (f)
			check_post(dev, e, f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct fl__display_config *cfg = NULL, *again = NULL;
	char err[512], small[9];
	struct fl__display_set *d;
	int r, r_small;

	memset(err, 0x7f, sizeof(err));
	r = fl__display_config_parse(text, size, "fuzz", &cfg, err, sizeof(err));
	CHECK(r == 0 || r == -EINVAL);
	memset(small, 0x7f, sizeof(small));
	r_small = fl__display_config_parse(text, size, "fuzz", &again, small, sizeof(small) - 1);
	CHECK(r_small == r);
	CHECK(small[sizeof(small) - 1] == 0x7f);
	fl__display_config_free(again);
	if (r) {
		CHECK(memchr(err, '\0', sizeof(err)));
		CHECK(memchr(small, '\0', sizeof(small) - 1));
		fuzz_check_ini_error(text, size, err);
		return 0;
	}
	d = fl__display_create();
	CHECK(d);
	for (size_t i = 0; i < cfg->n_devices; i++) {
		struct fl__display_device *dev;

		CHECK(fl__display_config_instantiate(&cfg->devices[i], d, &ops, NULL, &dev, NULL) ==
		      0);
		CHECK(fl__display_device_id(dev) == i);
		check_device(dev, &cfg->devices[i]);
	}
	fl__display_destroy(d);
	fl__display_config_free(cfg);
	return 0;
}

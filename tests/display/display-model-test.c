/* SPDX-License-Identifier: MIT */
/*
 * ADF's object model (src/display/model.c, docs/display.md "The model"):
 * ids, interface and engine init rules, attach/detach, DPMS, modes and
 * hotplug with the errors spec adf-ion.md §1.16 lists, the two-call data
 * queries, and the synchronous checks of a post, against a recording
 * driver whose every op can be made to fail.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "display-model.h"
#include "runner.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define AR24 FL_FOURCC('A', 'R', '2', '4')
#define NV12 FL_FOURCC('N', 'V', '1', '2')
#define TILE FL_FOURCC('T', 'I', 'L', 'E') /* the driver's custom format */

/* A driver that records its calls; each op fails with its *_ret if set. */
struct rec {
	char log[512]; /* "attach 0.1;blank 0 3;flush;" ... */
	int attach_ret, detach_ret, blank_ret, modeset_ret, custom_ret, data_ret;
	int blank_ret_for[8]; /* per interface, when blank_ret is 0 */
	size_t data_size;
	bool custom_sets_msg;
};

__attribute__((format(printf, 2, 3))) static void logf_(struct rec *r, const char *fmt, ...)
{
	size_t n = strlen(r->log);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->log + n, sizeof(r->log) - n, fmt, ap);
	va_end(ap);
}

static int rec_attach(void *data, uint32_t eng, uint32_t intf)
{
	struct rec *r = data;

	logf_(r, "attach %u.%u;", eng, intf);
	return r->attach_ret;
}

static int rec_detach(void *data, uint32_t eng, uint32_t intf)
{
	struct rec *r = data;

	logf_(r, "detach %u.%u;", eng, intf);
	return r->detach_ret;
}

static int rec_blank(void *data, uint32_t intf, enum fl_display_dpms state)
{
	struct rec *r = data;

	logf_(r, "blank %u %u;", intf, state);
	return r->blank_ret ? r->blank_ret : r->blank_ret_for[intf & 7];
}

static int rec_modeset(void *data, uint32_t intf, const struct fl_display_mode *mode)
{
	struct rec *r = data;

	logf_(r, "modeset %u %u;", intf, mode->hdisplay);
	return r->modeset_ret;
}

static int rec_custom(void *data, const struct fl_display_driver_buffer *buf, size_t index,
		      struct fl_display_error *e)
{
	struct rec *r = data;

	logf_(r, "custom %u %u;", (unsigned int)index, buf->w);
	if (r->custom_ret && r->custom_sets_msg)
		return fl__display_fail(e, r->custom_ret, "tiles are 16 wide");
	return r->custom_ret;
}

static int rec_data(void *data, enum fl_display_object_kind kind, uint32_t id, void *buf,
		    size_t *size)
{
	struct rec *r = data;

	(void)id;
	logf_(r, "data %u %u;", (unsigned int)kind, kind == FL_DISPLAY_OBJ_ENGINE);
	/* Claims data_size bytes, writes no more than the buffer holds. */
	memset(buf, 0xab,
	       r->data_size < FL_DISPLAY_MAX_CUSTOM_DATA ? r->data_size
							 : FL_DISPLAY_MAX_CUSTOM_DATA);
	*size = r->data_size;
	return r->data_ret;
}

static const struct fl_display_driver_ops rec_ops = {
	.attach = rec_attach,
	.detach = rec_detach,
	.blank = rec_blank,
	.modeset = rec_modeset,
	.validate_custom_format = rec_custom,
	.custom_data = rec_data,
};

static void rec_flush(struct fl__display_device *dev, void *data)
{
	logf_(data, "flush %u%u;", fl__display_device_id(dev), 0);
}

/* A device: interfaces DSI (primary), HDMI (external); engines XR24+AR24, NV12+TILE. */
struct fixture {
	struct fl__display_set *d;
	struct fl__display_device *dev;
	struct fl__display_interface *dsi, *hdmi;
	struct fl__display_engine *rgb, *yuv;
	struct rec rec;
};

static void setup(struct fixture *f)
{
	static const uint32_t rgb[] = { XR24, AR24 }, yuv[] = { NV12, TILE };

	memset(f, 0, sizeof(*f));
	f->d = fl__display_create();
	fl_assert(f->d);
	fl_assert_int_eq(fl__display_device_create(f->d, "dev", &rec_ops, &f->rec,
						   FL_DISPLAY_PADDED_TO_PITCH, &f->dev, NULL),
			 0);
	fl__display_device_set_flush(f->dev, rec_flush, &f->rec);
	fl_assert_int_eq(fl__display_interface_add(f->dev, FL_DISPLAY_INTF_DSI, NULL,
						   FL_DISPLAY_INTF_PRIMARY, "dsi", 62, 110, &f->dsi,
						   NULL),
			 0);
	fl_assert_int_eq(fl__display_interface_add(f->dev, FL_DISPLAY_INTF_HDMI, NULL,
						   FL_DISPLAY_INTF_EXTERNAL, "hdmi", 0, 0, &f->hdmi,
						   NULL),
			 0);
	fl_assert_int_eq(fl__display_engine_add(f->dev, "rgb", rgb, 2, &f->rgb, NULL), 0);
	fl_assert_int_eq(fl__display_engine_add(f->dev, "yuv", yuv, 2, &f->yuv, NULL), 0);
	fl_assert_int_eq(fl__display_attachment_allow(f->rgb, f->dsi, NULL), 0);
	fl_assert_int_eq(fl__display_attachment_allow(f->rgb, f->hdmi, NULL), 0);
	fl_assert_int_eq(fl__display_attachment_allow(f->yuv, f->dsi, NULL), 0);
}

/* Calls @expr, which must fail with @err, with @what in the message. */
#define expect_error(expr, want, what)                                               \
	do {                                                                         \
		struct fl_display_error e_ = { 0 };                                  \
		struct fl_display_error *e = &e_;                                    \
		int r_ = (expr);                                                     \
		if (r_ != (want) || e_.err != (want) || !strstr(e_.msg, what))       \
			fl__test_fail(__FILE__, __LINE__,                            \
				      "%s: got %d (%d, \"%s\"), want %d "            \
				      "with \"%s\"",                                 \
				      #expr, r_, e_.err, e_.msg, (int)(want), what); \
	} while (0)

static struct fl_display_mode mode(uint16_t w, uint16_t h)
{
	struct fl_display_mode m = { .clock = 148500, .hdisplay = w, .vdisplay = h };

	m.htotal = (uint16_t)(w + 280);
	m.vtotal = (uint16_t)(h + 45);
	fl__display_mode_set_name(&m);
	m.vrefresh = fl__display_mode_vrefresh(&m);
	return m;
}

FL_TEST(model_device_ids_are_the_lowest_free)
{
	struct fl__display_set *d = fl__display_create();
	struct fl__display_device *a, *b, *c;

	fl_assert_int_eq(fl__display_device_create(d, "a", NULL, NULL, 0, &a, NULL), 0);
	fl_assert_int_eq(fl__display_device_create(d, "b", NULL, NULL, 0, &b, NULL), 0);
	fl_assert_int_eq(fl__display_device_id(a), 0);
	fl_assert_int_eq(fl__display_device_id(b), 1);
	fl__display_device_destroy(a);
	fl_assert(!fl__display_device_get(d, 0));
	fl_assert(fl__display_device_get(d, 1) == b);
	fl_assert_int_eq(fl__display_device_create(d, "c", NULL, NULL, 0, &c, NULL), 0);
	fl_assert_int_eq(fl__display_device_id(c), 0);
	fl_assert_str_eq(fl__display_device_name(c), "c");
	expect_error(fl__display_device_create(d, "", NULL, NULL, 0, &a, e), -EINVAL, "name");
	expect_error(fl__display_device_create(d, "0123456789012345678901234567890123", NULL, NULL,
					       0, &a, e),
		     -EINVAL, "1 to 31 bytes");
	expect_error(fl__display_device_create(d, "x", NULL, NULL, 2, &a, e), -EINVAL, "padding");
	fl__display_destroy(d);
}

FL_TEST(model_interface_ids_idx_and_initial_state)
{
	struct fixture f;
	struct fl__display_interface *dsi1;
	size_t n;

	setup(&f);
	fl_assert_int_eq(fl__display_interface_id(f.dsi), 0);
	fl_assert_int_eq(fl__display_interface_id(f.hdmi), 1);
	fl_assert_int_eq(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_DSI, NULL, 0, "dsi1", 0,
						   0, &dsi1, NULL),
			 0);
	fl_assert_int_eq(fl__display_interface_id(dsi1), 2);
	fl_assert_int_eq(fl__display_interface_idx(f.dsi), 0);
	fl_assert_int_eq(fl__display_interface_idx(f.hdmi), 0);
	fl_assert_int_eq(fl__display_interface_idx(dsi1), 1); /* DSI.1 */
	fl_assert(fl__display_interface_get(f.dev, 2) == dsi1);
	fl_assert(!fl__display_interface_get(f.dev, 3));
	fl_assert(fl__display_interface_device(dsi1) == f.dev);
	/* ADF's initial state: OFF, not connected, no modes, zeroed mode. */
	fl_assert_int_eq(fl__display_interface_dpms(dsi1), FL_DISPLAY_DPMS_OFF);
	fl_assert(!fl__display_interface_connected(dsi1));
	fl_assert(fl__display_interface_modes(dsi1, &n) == NULL);
	fl_assert_int_eq(n, 0);
	fl_assert_int_eq(fl__display_interface_current_mode(dsi1)->hdisplay, 0);
	fl_assert_str_eq(fl__display_interface_type_str(f.hdmi), "HDMI");
	fl_assert_int_eq(fl__display_engine_id(f.yuv), 1);
	fl_assert(fl__display_engine_get(f.dev, 1) == f.yuv);
	fl_assert(!fl__display_engine_get(f.dev, 2));
	fl_assert_int_eq(fl__display_device_num_interfaces(f.dev), 3);
	fl_assert_int_eq(fl__display_device_num_engines(f.dev), 2);
	fl__display_destroy(f.d);
}

FL_TEST(model_interface_types_and_flags_are_adfs)
{
	struct fixture f;
	struct fl__display_interface *i;

	setup(&f);
	for (uint32_t t = 7; t < 128; t += 40)
		expect_error(fl__display_interface_add(f.dev, t, NULL, 0, "x", 0, 0, &i, e),
			     -EINVAL, "reserved");
	expect_error(fl__display_interface_add(f.dev, 127, NULL, 0, "x", 0, 0, &i, e), -EINVAL,
		     "reserved");
	expect_error(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_TYPE_MAX, "x", 0, "x", 0, 0,
					       &i, e),
		     -EINVAL, "reserved");
	expect_error(fl__display_interface_add(f.dev, 128, NULL, 0, "x", 0, 0, &i, e), -EINVAL,
		     "needs its name");
	expect_error(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_DSI, "LVDS", 0, "x", 0, 0, &i,
					       e),
		     -EINVAL, "only driver");
	expect_error(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_DSI, NULL, 1u << 2, "x", 0, 0,
					       &i, e),
		     -EINVAL, "0x4");
	expect_error(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_DSI, NULL, 0, NULL, 0, 0, &i,
					       e),
		     -EINVAL, "interface name");
	/* Memory writeback and the first driver type, which ADF's off-by-one refused. */
	fl_assert_int_eq(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_MEMORY, NULL, 0, "wb", 0,
						   0, &i, NULL),
			 0);
	fl_assert_str_eq(fl__display_interface_type_str(i), "memory");
	fl_assert_int_eq(fl__display_interface_add(f.dev, 128, "LVDS", 3, "lvds", 0, 0, &i, NULL),
			 0);
	fl_assert_str_eq(fl__display_interface_type_str(i), "LVDS");
	fl_assert_int_eq(fl__display_interface_flags(i), 3);
	fl__display_destroy(f.d);
}

FL_TEST(model_engine_formats_are_checked)
{
	static const uint32_t dup[] = { XR24, NV12, XR24 }, custom[] = { TILE };
	struct fixture f;
	struct fl__display_device *plain;
	struct fl__display_engine *eng;

	setup(&f);
	expect_error(fl__display_engine_add(f.dev, "e", dup, 0, &eng, e), -EINVAL, "not 0");
	expect_error(fl__display_engine_add(f.dev, "e", dup, 1025, &eng, e), -EINVAL, "not 1025");
	expect_error(fl__display_engine_add(f.dev, "e", dup, 3, &eng, e), -EINVAL,
		     "XR24 is listed twice");
	fl_assert_int_eq(fl__display_device_create(f.d, "plain", NULL, NULL, 0, &plain, NULL), 0);
	expect_error(fl__display_engine_add(plain, "e", custom, 1, &eng, e), -EINVAL,
		     "TILE is not standard");
	fl_assert(fl__display_engine_supports(f.yuv, TILE));
	fl_assert(!fl__display_engine_supports(f.yuv, XR24));
	fl__display_destroy(f.d);
}

FL_TEST(model_allowed_attachments_are_declared_once_per_device)
{
	struct fixture f;
	struct fl__display_device *other;
	struct fl__display_interface *foreign;

	setup(&f);
	expect_error(fl__display_attachment_allow(f.rgb, f.dsi, e), -EALREADY, "already allowed");
	fl_assert_int_eq(fl__display_device_create(f.d, "other", NULL, NULL, 0, &other, NULL), 0);
	fl_assert_int_eq(fl__display_interface_add(other, 0, NULL, 0, "o", 0, 0, &foreign, NULL),
			 0);
	expect_error(fl__display_attachment_allow(f.rgb, foreign, e), -EINVAL, "not on one");
	fl_assert(fl__display_attach_allowed(f.dev, 0, 1));
	fl_assert(!fl__display_attach_allowed(f.dev, 1, 1));
	fl__display_destroy(f.d);
}

/* libadf's `attach` test, and the pair and veto rules of ADF_ATTACH/DETACH. */
/*
 * adf_device_attach()'s first check after the ids: a device with
 * ADF_MAX_ATTACHMENTS (512) pairs attached refuses every attach with
 * -ENOMEM, before it looks whether the pair is allowed or attached already.
 */
FL_TEST(model_attach_when_512_are_attached_is_enomem)
{
	static const uint32_t rgb[] = { XR24 };
	struct fl__display_set *d = fl__display_create();
	struct fl__display_device *dev;
	struct fl__display_interface *intf;
	struct fl_display_error err;
	struct rec rec = { 0 };

	fl_assert(d);
	fl_assert_int_eq(fl__display_device_create(d, "many", &rec_ops, &rec,
						   FL_DISPLAY_PADDED_TO_PITCH, &dev, NULL),
			 0);
	fl_assert_int_eq(fl__display_interface_add(dev, FL_DISPLAY_INTF_DSI, NULL,
						   FL_DISPLAY_INTF_PRIMARY, "dsi", 0, 0, &intf,
						   NULL),
			 0);
	for (int i = 0; i < FL_DISPLAY_MAX_ATTACHMENTS; i++) {
		struct fl__display_engine *eng;
		char name[16];

		snprintf(name, sizeof(name), "e%d", i);
		fl_assert_int_eq(fl__display_engine_add(dev, name, rgb, 1, &eng, NULL), 0);
		fl_assert_int_eq(fl__display_attachment_allow(eng, intf, NULL), 0);
		fl_assert_int_eq(fl__display_attach(dev, (uint32_t)i, 0, NULL), 0);
	}
	fl_assert_int_eq(fl__display_attach(dev, 0, 0, &err), -ENOMEM);
	fl_assert(strstr(err.msg, "512"));
	/* One detached: room again, and the pair's own error. */
	fl_assert_int_eq(fl__display_detach(dev, 5, 0, NULL), 0);
	fl_assert_int_eq(fl__display_attach(dev, 0, 0, NULL), -EALREADY);
	fl_assert_int_eq(fl__display_attach(dev, 5, 0, NULL), 0);
	fl__display_destroy(d);
}

FL_TEST(model_attach_and_detach_errors)
{
	struct fixture f;

	setup(&f);
	fl_assert_int_eq(fl__display_attach(f.dev, 0, 0, NULL), 0);
	fl_assert(fl__display_attached(f.dev, 0, 0));
	expect_error(fl__display_attach(f.dev, 0, 0, e), -EALREADY, "already attached");
	fl_assert_int_eq(fl__display_detach(f.dev, 0, 0, NULL), 0);
	fl_assert(!fl__display_attached(f.dev, 0, 0));
	expect_error(fl__display_detach(f.dev, 0, 0, e), -EINVAL, "not attached");
	/* Bogus ids, as libadf's test: interface 1024. */
	expect_error(fl__display_attach(f.dev, 0, 1024, e), -EINVAL, "no interface 1024");
	expect_error(fl__display_detach(f.dev, 0, 1024, e), -EINVAL, "no interface 1024");
	expect_error(fl__display_attach(f.dev, 7, 0, e), -EINVAL, "no overlay engine 7");
	/* yuv -> hdmi is not allowed: -EINVAL, and the driver is not asked. */
	f.rec.log[0] = '\0';
	expect_error(fl__display_attach(f.dev, 1, 1, e), -EINVAL, "not an allowed");
	expect_error(fl__display_detach(f.dev, 1, 1, e), -EINVAL, "not attached");
	fl_assert_str_eq(f.rec.log, "");
	/* The driver's veto is the call's error, and nothing changes. */
	f.rec.attach_ret = -EBUSY;
	expect_error(fl__display_attach(f.dev, 0, 1, e), -EBUSY, "refused to attach");
	fl_assert(!fl__display_attached(f.dev, 0, 1));
	f.rec.attach_ret = 0;
	fl_assert_int_eq(fl__display_attach(f.dev, 0, 1, NULL), 0);
	f.rec.detach_ret = -EPERM;
	expect_error(fl__display_detach(f.dev, 0, 1, e), -EPERM, "refused to detach");
	fl_assert(fl__display_attached(f.dev, 0, 1));
	fl_assert_str_eq(f.rec.log, "attach 0.1;attach 0.1;detach 0.1;");
	fl__display_destroy(f.d);
}

/* libadf's `blank` test, and ADF_BLANK's order of checks and flush. */
FL_TEST(model_dpms_rules)
{
	struct fixture f;
	struct fl__display_device *plain;
	struct fl__display_interface *i;

	setup(&f);
	expect_error(fl__display_interface_blank(f.dsi, 255, e), -EINVAL, "255 does not exist");
	expect_error(fl__display_interface_blank(f.dsi, 4, e), -EINVAL, "does not exist");
	/*
	 * Interfaces start OFF: blanking to OFF is the no-op change. As
	 * adf_interface_blank(), a state other than ON flushes the queue
	 * before the -EBUSY check: the no-op still drains it.
	 */
	expect_error(fl__display_interface_blank(f.dsi, FL_DISPLAY_DPMS_OFF, e), -EBUSY, "already");
	fl_assert_str_eq(f.rec.log, "flush 00;");
	fl_assert_int_eq(fl__display_interface_blank(f.dsi, FL_DISPLAY_DPMS_ON, NULL), 0);
	expect_error(fl__display_interface_blank(f.dsi, FL_DISPLAY_DPMS_ON, e), -EBUSY, "already");
	/* Unblanking does not flush; every other state flushes before the driver. */
	fl_assert_str_eq(f.rec.log, "flush 00;blank 0 0;");
	fl_assert_int_eq(fl__display_interface_blank(f.dsi, FL_DISPLAY_DPMS_STANDBY, NULL), 0);
	fl_assert_int_eq(fl__display_interface_blank(f.dsi, FL_DISPLAY_DPMS_OFF, NULL), 0);
	expect_error(fl__display_interface_blank(f.dsi, FL_DISPLAY_DPMS_OFF, e), -EBUSY, "already");
	fl_assert_str_eq(f.rec.log,
			 "flush 00;blank 0 0;flush 00;blank 0 1;flush 00;blank 0 3;flush 00;");
	/* A driver failure leaves the state as it was. */
	f.rec.blank_ret = -EIO;
	expect_error(fl__display_interface_blank(f.dsi, FL_DISPLAY_DPMS_ON, e), -EIO, "failed");
	fl_assert_int_eq(fl__display_interface_dpms(f.dsi), FL_DISPLAY_DPMS_OFF);
	/* No blank op: -EOPNOTSUPP before anything else, even a bogus state. */
	fl_assert_int_eq(fl__display_device_create(f.d, "plain", NULL, NULL, 0, &plain, NULL), 0);
	fl_assert_int_eq(fl__display_interface_add(plain, 0, NULL, 0, "p", 0, 0, &i, NULL), 0);
	expect_error(fl__display_interface_blank(i, 255, e), -EOPNOTSUPP, "cannot be blanked");
	fl__display_destroy(f.d);
}

FL_TEST(model_modeset_flushes_then_asks_the_driver)
{
	struct fixture f;
	struct fl__display_device *plain;
	struct fl__display_interface *i;
	struct fl_display_mode m = mode(1920, 1080), odd = mode(1234, 567);

	setup(&f);
	fl_assert_int_eq(m.vrefresh, 60);
	fl_assert_str_eq(m.name, "1920x1080");
	fl_assert_int_eq(fl__display_interface_set_mode(f.dsi, &m, NULL), 0);
	fl_assert_str_eq(f.rec.log, "flush 00;modeset 0 1920;");
	fl_assert_int_eq(fl__display_interface_current_mode(f.dsi)->hdisplay, 1920);
	/* Not checked against the list (it is empty): the driver decides. */
	f.rec.modeset_ret = -ERANGE;
	expect_error(fl__display_interface_set_mode(f.dsi, &odd, e), -ERANGE,
		     "refused mode 1234x567");
	fl_assert_int_eq(fl__display_interface_current_mode(f.dsi)->hdisplay, 1920);
	f.rec.modeset_ret = 0;
	fl_assert_int_eq(fl__display_interface_set_mode(f.dsi, &odd, NULL), 0);
	fl_assert_int_eq(fl__display_interface_current_mode(f.dsi)->vdisplay, 567);
	fl_assert_int_eq(fl__display_device_create(f.d, "plain", NULL, NULL, 0, &plain, NULL), 0);
	fl_assert_int_eq(fl__display_interface_add(plain, 0, NULL, 0, "p", 0, 0, &i, NULL), 0);
	expect_error(fl__display_interface_set_mode(i, &m, e), -EOPNOTSUPP, "cannot change modes");
	fl__display_destroy(f.d);
}

FL_TEST(model_mode_refresh_and_name_as_adf)
{
	struct fl_display_mode m = mode(1920, 1080);

	/* 148.5 MHz over 2200 × 1125: CEA-861's 1080p60. */
	fl_assert_int_eq(fl__display_mode_vrefresh(&m), 60);
	m.flags = FL_DISPLAY_MODE_FLAG_INTERLACE;
	fl_assert_int_eq(fl__display_mode_vrefresh(&m), 120);
	fl__display_mode_set_name(&m);
	fl_assert_str_eq(m.name, "1920x1080i");
	m.flags = FL_DISPLAY_MODE_FLAG_DBLSCAN;
	fl_assert_int_eq(fl__display_mode_vrefresh(&m), 30);
	m.flags = 0;
	m.vscan = 3;
	fl_assert_int_eq(fl__display_mode_vrefresh(&m), 20);
	m.htotal = 0;
	fl_assert_int_eq(fl__display_mode_vrefresh(&m), 0);
	/* 59.94 rounds to 60, 59.4 to 59. */
	m = mode(1920, 1080);
	m.clock = 148352;
	fl_assert_int_eq(fl__display_mode_vrefresh(&m), 60);
	m.clock = 147015;
	fl_assert_int_eq(fl__display_mode_vrefresh(&m), 59);
}

FL_TEST(model_hotplug_replaces_the_mode_list_at_once)
{
	struct fl_display_mode modes[FL_DISPLAY_MAX_MODES + 1];
	const struct fl_display_mode *list;
	struct fixture f;
	size_t n;

	setup(&f);
	for (size_t i = 0; i <= FL_DISPLAY_MAX_MODES; i++)
		modes[i] = mode((uint16_t)(640 + i), 480);
	fl_assert_int_eq(fl__display_interface_hotplug(f.hdmi, true, modes, 2, NULL), 0);
	fl_assert(fl__display_interface_connected(f.hdmi));
	list = fl__display_interface_modes(f.hdmi, &n);
	fl_assert_int_eq(n, 2);
	fl_assert_int_eq(list[1].hdisplay, 641);
	/* 61 modes: refused (adf_hotplug_notify_connected()'s -ENOMEM), the old list and state stay. */
	expect_error(fl__display_interface_hotplug(f.hdmi, true, modes, 61, e), -ENOMEM,
		     "at most 60");
	list = fl__display_interface_modes(f.hdmi, &n);
	fl_assert_int_eq(n, 2);
	fl_assert_int_eq(list[0].hdisplay, 640);
	expect_error(fl__display_interface_hotplug(f.hdmi, false, modes, 1, e), -EINVAL,
		     "disconnected");
	fl_assert(fl__display_interface_connected(f.hdmi));
	fl_assert_int_eq(fl__display_interface_hotplug(f.hdmi, true, modes + 1, 60, NULL), 0);
	list = fl__display_interface_modes(f.hdmi, &n);
	fl_assert_int_eq(n, 60);
	fl_assert_int_eq(list[59].hdisplay, 700);
	fl_assert_int_eq(fl__display_interface_hotplug(f.hdmi, false, NULL, 0, NULL), 0);
	fl_assert(!fl__display_interface_connected(f.hdmi));
	fl_assert(fl__display_interface_modes(f.hdmi, &n) == NULL);
	fl_assert_int_eq(n, 0);
	fl__display_destroy(f.d);
}

FL_TEST(model_device_data_is_a_two_call_query)
{
	struct fl_display_attachment att[4], allowed[2];
	struct fl_display_device_data q;
	unsigned char custom[8] = { 0 };
	struct fixture f;

	setup(&f);
	fl_assert_int_eq(fl__display_attach(f.dev, 0, 0, NULL), 0);
	fl_assert_int_eq(fl__display_attach(f.dev, 1, 0, NULL), 0);
	f.rec.data_size = 6;
	/* Call 1: counts only. */
	memset(&q, 0, sizeof(q));
	fl_assert_int_eq(fl__display_device_data(f.dev, &q, NULL), 0);
	fl_assert_str_eq(q.name, "dev");
	fl_assert_int_eq(q.n_attachments, 2);
	fl_assert_int_eq(q.n_allowed, 3);
	fl_assert_int_eq(q.custom_data_size, 6);
	/* Call 2, with less room than there is: what fits, and the true counts. */
	memset(&q, 0, sizeof(q));
	q.attachments = att;
	q.n_attachments = 4;
	q.allowed = allowed;
	q.n_allowed = 2;
	q.custom_data = custom;
	q.custom_data_size = 4;
	fl_assert_int_eq(fl__display_device_data(f.dev, &q, NULL), 0);
	fl_assert_int_eq(q.n_attachments, 2);
	fl_assert_int_eq(att[1].engine, 1);
	fl_assert_int_eq(att[1].interface, 0);
	fl_assert_int_eq(q.n_allowed, 3);
	fl_assert_int_eq(allowed[1].interface, 1);
	fl_assert_int_eq(q.custom_data_size, 6);
	fl_assert_int_eq(custom[3], 0xab);
	fl_assert_int_eq(custom[4], 0);
	/* Above ADF's maxima: -EINVAL, and nothing is written. */
	memset(&q, 0, sizeof(q));
	q.n_attachments = FL_DISPLAY_MAX_ATTACHMENTS + 1;
	q.attachments = att;
	expect_error(fl__display_device_data(f.dev, &q, e), -EINVAL, "at most 512");
	fl_assert_int_eq(q.n_attachments, FL_DISPLAY_MAX_ATTACHMENTS + 1);
	fl_assert_str_eq(q.name, "");
	memset(&q, 0, sizeof(q));
	q.custom_data = custom;
	q.custom_data_size = FL_DISPLAY_MAX_CUSTOM_DATA + 1;
	expect_error(fl__display_device_data(f.dev, &q, e), -EINVAL, "at most 4096");
	memset(&q, 0, sizeof(q));
	q.n_allowed = 1;
	expect_error(fl__display_device_data(f.dev, &q, e), -EINVAL, "no array");
	/* The driver's failure, and a driver writing too much, fail the query. */
	memset(&q, 0, sizeof(q));
	f.rec.data_ret = -EIO;
	expect_error(fl__display_device_data(f.dev, &q, e), -EIO, "describe");
	f.rec.data_ret = 0;
	f.rec.data_size = FL_DISPLAY_MAX_CUSTOM_DATA + 1;
	memset(&q, 0, sizeof(q));
	expect_error(fl__display_device_data(f.dev, &q, e), -EIO, "over 4096");
	fl__display_destroy(f.d);
}

FL_TEST(model_interface_and_engine_data)
{
	struct fl_display_mode modes[3] = { mode(1920, 1080), mode(1280, 720), mode(640, 480) };
	struct fl_display_interface_data q;
	struct fl_display_engine_data eq;
	uint32_t formats[1];
	struct fixture f;

	setup(&f);
	fl_assert_int_eq(fl__display_interface_hotplug(f.dsi, true, modes, 3, NULL), 0);
	fl__display_interface_set_current_mode(f.dsi, &modes[0]);
	memset(&q, 0, sizeof(q));
	fl_assert_int_eq(fl__display_interface_data(f.dsi, &q, NULL), 0);
	fl_assert_str_eq(q.name, "dsi");
	fl_assert_int_eq(q.type, FL_DISPLAY_INTF_DSI);
	fl_assert_int_eq(q.flags, FL_DISPLAY_INTF_PRIMARY);
	fl_assert_int_eq(q.dpms_state, FL_DISPLAY_DPMS_OFF);
	fl_assert_int_eq(q.hotplug_detect, 1);
	fl_assert_int_eq(q.width_mm, 62);
	fl_assert_int_eq(q.height_mm, 110);
	fl_assert_int_eq(q.n_modes, 3);
	fl_assert_str_eq(q.current_mode.name, "1920x1080");
	memset(&q, 0, sizeof(q));
	q.modes = modes; /* overwritten in place: what the query returns */
	q.n_modes = 1;
	fl__display_interface_hotplug(f.dsi, true, (struct fl_display_mode[]){ mode(800, 600) }, 1,
				      NULL);
	fl_assert_int_eq(fl__display_interface_data(f.dsi, &q, NULL), 0);
	fl_assert_int_eq(modes[0].hdisplay, 800);
	fl_assert_int_eq(modes[1].hdisplay, 1280);
	q.n_modes = FL_DISPLAY_MAX_MODES + 1;
	expect_error(fl__display_interface_data(f.dsi, &q, e), -EINVAL, "at most 60");

	memset(&eq, 0, sizeof(eq));
	fl_assert_int_eq(fl__display_engine_data(f.yuv, &eq, NULL), 0);
	fl_assert_str_eq(eq.name, "yuv");
	fl_assert_int_eq(eq.n_formats, 2);
	eq.formats = formats;
	eq.n_formats = 1;
	fl_assert_int_eq(fl__display_engine_data(f.yuv, &eq, NULL), 0);
	fl_assert_int_eq(formats[0], NV12);
	fl_assert_int_eq(eq.n_formats, 2);
	eq.n_formats = FL_DISPLAY_MAX_FORMATS + 1;
	expect_error(fl__display_engine_data(f.yuv, &eq, e), -EINVAL, "at most 1024");
	fl_assert_str_eq(f.rec.log, "data 1 0;data 1 0;data 2 1;data 2 1;");
	fl__display_destroy(f.d);
}

static struct fl_display_driver_buffer xrgb(uint32_t engine, uint32_t w, uint32_t h)
{
	struct fl_display_driver_buffer b = { .engine = engine, .w = w, .h = h, .format = XR24 };

	b.n_planes = 1;
	b.pitch[0] = w * 4;
	b.size[0] = (uint64_t)w * 4 * h;
	return b;
}

FL_TEST(model_post_check_limits_and_ids)
{
	struct fl_display_driver_buffer bufs[FL_DISPLAY_MAX_BUFFERS + 1];
	uint32_t intfs[] = { 0, 1 }, bad_intfs[] = { 0, 2 };
	struct fixture f;

	setup(&f);
	for (size_t i = 0; i <= FL_DISPLAY_MAX_BUFFERS; i++)
		bufs[i] = xrgb(0, 16, 16);
	fl_assert_int_eq(fl__display_post_check(f.dev, intfs, 2, bufs, 56, 4096, NULL), 0);
	fl_assert_int_eq(fl__display_post_check(f.dev, NULL, 0, NULL, 0, 0, NULL), 0);
	expect_error(fl__display_post_check(f.dev, intfs, 2, bufs, 57, 0, e), -EINVAL,
		     "57 buffers");
	expect_error(fl__display_post_check(f.dev, intfs, 2, bufs, 1, 4097, e), -EINVAL,
		     "4097 bytes");
	expect_error(fl__display_post_check(f.dev, intfs, 1025, bufs, 1, 0, e), -EINVAL,
		     "1025 interfaces");
	expect_error(fl__display_post_check(f.dev, bad_intfs, 2, bufs, 1, 0, e), -EINVAL,
		     "interface 1 of the post: device dev has no interface 2");
	bufs[3].n_planes = 5;
	expect_error(fl__display_post_check(f.dev, intfs, 2, bufs, 4, 0, e), -EINVAL,
		     "buffer 3: 5 planes");
	bufs[3].n_planes = 1;
	/* An unknown engine is -ENOENT (ADF's import), found before any format error. */
	bufs[1].format = NV12;
	bufs[2].engine = 9;
	expect_error(fl__display_post_check(f.dev, intfs, 2, bufs, 3, 0, e), -ENOENT,
		     "buffer 2: device dev has no overlay engine 9");
	expect_error(fl__display_post_check(f.dev, intfs, 2, bufs, 2, 0, e), -EINVAL,
		     "buffer 1: overlay engine rgb does not scan out NV12");
	/* Attachments are the driver's business: nothing is attached here. */
	fl_assert(!fl__display_attached(f.dev, 0, 0));
	fl__display_destroy(f.d);
}

FL_TEST(model_post_check_runs_the_buffer_check_or_the_driver)
{
	struct fl_display_driver_buffer b[2] = { xrgb(0, 16, 16), xrgb(1, 16, 16) };
	struct fixture f;

	setup(&f);
	b[1].format = TILE;
	fl_assert_int_eq(fl__display_post_check(f.dev, NULL, 0, b, 2, 0, NULL), 0);
	fl_assert_str_eq(f.rec.log, "custom 1 16;");
	b[0].size[0]--;
	expect_error(fl__display_post_check(f.dev, NULL, 0, b, 2, 0, e), -EINVAL,
		     "buffer 0 plane 0: offset 0");
	b[0].size[0]++;
	f.rec.custom_ret = -EINVAL;
	f.rec.custom_sets_msg = true;
	expect_error(fl__display_post_check(f.dev, NULL, 0, b, 2, 0, e), -EINVAL,
		     "tiles are 16 wide");
	/* A driver that gives no reason still gets one to its caller. */
	f.rec.custom_sets_msg = false;
	f.rec.custom_ret = -E2BIG;
	expect_error(fl__display_post_check(f.dev, NULL, 0, b, 2, 0, e), -E2BIG,
		     "buffer 1: the driver refused custom format TILE");
	fl__display_destroy(f.d);
}

/* A gang: one panel's links, blanked, set and posted together. */
FL_TEST(model_gang_rules)
{
	static const uint32_t grid[][2] = { { 1, 0 }, { 0, 0 } },
			      hole[][2] = { { 0, 0 }, { 1, 1 } };
	struct fixture f;
	struct fl__display_interface *l, *r, *wb;
	struct fl_display_driver_buffer b = xrgb(0, 16, 16);
	struct fl_display_mode m = mode(960, 1080);
	struct fl_display_gang g;
	uint32_t w, h;

	setup(&f);
	fl_assert_int_eq(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_DSI, NULL, 0, "l", 0, 0,
						   &l, NULL),
			 0);
	fl_assert_int_eq(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_DSI, NULL, 0, "r", 0, 0,
						   &r, NULL),
			 0);
	fl_assert_int_eq(fl__display_interface_add(f.dev, FL_DISPLAY_INTF_MEMORY, NULL, 0, "wb", 0,
						   0, &wb, NULL),
			 0);
	expect_error(fl__display_gang_add(f.dev, (uint32_t[]){ 2 }, grid, 1, e), -EINVAL,
		     "a gang has 2 to 8 interfaces, not 1");
	expect_error(fl__display_gang_add(f.dev, (uint32_t[]){ 2, 9 }, grid, 2, e), -EINVAL,
		     "device dev has no interface 9");
	expect_error(fl__display_gang_add(f.dev, (uint32_t[]){ 2, 4 }, grid, 2, e), -EINVAL,
		     "interface wb is memory writeback");
	expect_error(fl__display_gang_add(f.dev, (uint32_t[]){ 2, 2 }, grid, 2, e), -EINVAL,
		     "interface l is named twice in a gang");
	expect_error(fl__display_gang_add(f.dev, (uint32_t[]){ 2, 3 }, hole, 2, e), -EINVAL,
		     "does not fill its 2x2 grid");
	fl_assert_int_eq(fl__display_interface_gang(l, &g), -ENODATA);
	/* Given in any order, the members are kept in id order; the tiles stay each one's. */
	fl_assert_int_eq(fl__display_gang_add(f.dev, (uint32_t[]){ 3, 2 }, grid, 2, NULL), 0);
	fl_assert_int_eq(fl__display_interface_gang(l, &g), 0);
	fl_assert_int_eq(g.n_members, 2);
	fl_assert_int_eq(g.members[0], 2);
	fl_assert_int_eq(g.members[1], 3);
	fl_assert_int_eq(g.col, 0);
	fl_assert_int_eq(fl__display_interface_gang(r, &g), 0);
	fl_assert_int_eq(g.col, 1);
	expect_error(fl__display_gang_add(f.dev, (uint32_t[]){ 0, 3 }, grid, 2, e), -EALREADY,
		     "interface r is ganged already");

	/* DPMS of any link is the panel's, the driver called for each in id order. */
	fl_assert_int_eq(fl__display_interface_blank(r, FL_DISPLAY_DPMS_ON, NULL), 0);
	fl_assert_str_eq(f.rec.log, "blank 2 0;blank 3 0;");
	fl_assert_int_eq(fl__display_interface_dpms(l), FL_DISPLAY_DPMS_ON);
	expect_error(fl__display_interface_blank(l, FL_DISPLAY_DPMS_ON, e), -EBUSY, "already");
	/* A link the driver cannot blank: those done are put back, and nothing changed. */
	f.rec.log[0] = '\0';
	f.rec.blank_ret_for[3] = -EIO;
	expect_error(fl__display_interface_blank(l, FL_DISPLAY_DPMS_OFF, e), -EIO,
		     "interface r in DPMS state 3");
	fl_assert_str_eq(f.rec.log, "flush 00;blank 2 3;blank 3 3;blank 2 0;");
	fl_assert_int_eq(fl__display_interface_dpms(l), FL_DISPLAY_DPMS_ON);
	fl_assert_int_eq(fl__display_interface_dpms(r), FL_DISPLAY_DPMS_ON);
	/* A modeset of one link sets every link's mode; the frame is the whole panel. */
	f.rec.log[0] = '\0';
	fl_assert_int_eq(fl__display_interface_set_mode(r, &m, NULL), 0);
	fl_assert_str_eq(f.rec.log, "flush 00;modeset 2 960;modeset 3 960;");
	fl_assert_int_eq(fl__display_interface_current_mode(l)->hdisplay, 960);
	fl__display_interface_frame_size(r, &w, &h);
	fl_assert_int_eq(w, 1920);
	fl_assert_int_eq(h, 1080);
	/* A post names all of a gang or none of it. */
	expect_error(fl__display_post_check(f.dev, (uint32_t[]){ 0, 3 }, 2, &b, 1, 0, e), -EINVAL,
		     "interface 1 of the post: interface 3 is ganged with interface 2, which the "
		     "post does not name");
	fl_assert_int_eq(fl__display_post_check(f.dev, (uint32_t[]){ 3, 0, 2 }, 3, &b, 1, 0, NULL),
			 0);
	fl__display_destroy(f.d);
}

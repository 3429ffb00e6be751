/* SPDX-License-Identifier: MIT */
/*
 * The display protocol's requests other than posts (src/proto/display.h):
 * handles, the two-call data queries, attach, blank, modes, events,
 * simple buffers, hotplug, capture, dump and stats. Each answers with
 * ADF's errno and, where there is one, the model's or driver's reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "display-virtual.h"
#include "display.h"
#include "displayd-private.h"
#include "dump.h"
#include "util.h"

static uint8_t reply_buf[FL_DPROTO_MAX_REPLY];

/* Appends @len bytes of @src to the reply being built in reply_buf, at *@at. */
static void put(size_t *at, const void *src, size_t len)
{
	memcpy(reply_buf + *at, src, len);
	*at += len;
}

bool displayd_reply(struct dconn *c, const struct fl_msg_hdr *req, const void *body, size_t len,
		    const int *fds, unsigned int nfds)
{
	return fl__server_reply(&c->conn, req, body, len, fds, nfds);
}

bool displayd_reply_status(struct dconn *c, const struct fl_msg_hdr *req, int status,
			   const struct fl_display_error *e)
{
	struct {
		struct fl_msg_reply r;
		char msg[FL_DISPLAY_ERROR_MAX];
	} b = { { status, 0 }, "" };
	size_t len = sizeof(b.r);

	if (status < 0) {
		snprintf(b.msg, sizeof(b.msg), "%s", e && e->msg[0] ? e->msg : strerror(-status));
		len += strlen(b.msg) + 1;
	}
	return displayd_reply(c, req, &b, len, NULL, 0);
}

bool displayd_fail(struct dconn *c, const struct fl_msg_hdr *req, int status, const char *fmt, ...)
{
	struct fl_display_error e = { status, "" };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	return displayd_reply_status(c, req, status, &e);
}

/* ---- handles ---- */

struct handle *displayd_handle_get(struct dconn *c, uint32_t h, uint32_t kind)
{
	if (h >= MAX_HANDLES || !c->handles[h].used)
		return NULL;
	if (kind != UINT32_MAX && c->handles[h].kind != kind)
		return NULL;
	return &c->handles[h];
}

/*
 * Whether a handle other than @except subscribes to @type on @except's
 * object: the driver's event is on while anyone's is (ADF's refcount).
 */
static bool others_subscribed(const struct handle *except, uint32_t type)
{
	for (struct fl_server_conn *c = fl__server_conn_next(dd.server, NULL); c;
	     c = fl__server_conn_next(dd.server, c)) {
		struct dconn *dc = displayd_conn_of(c);

		for (size_t h = 0; h < MAX_HANDLES; h++) {
			const struct handle *o = &dc->handles[h];

			if (o != except && o->used && o->kind == except->kind &&
			    o->device == except->device && o->id == except->id &&
			    displayd_bit(o->subscribed, type))
				return true;
		}
	}
	return false;
}

/* Drop @h's subscriptions and its pipe. */
void displayd_handle_close(struct handle *h)
{
	struct ddev *d = displayd_dev_by_id(h->device);

	for (uint32_t t = FL_DISPLAY_EVENT_DEVICE_CUSTOM; t < FL_DISPLAY_EVENT_TYPE_MAX; t++)
		if (displayd_bit(h->subscribed, t) && d && d->drv->set_event &&
		    !others_subscribed(h, t))
			d->drv->set_event(d->drv_data, h->kind, h->id, t, false);
	close(h->events);
	memset(h, 0, sizeof(*h));
}

/* ---- handlers ---- */

static bool do_hello(struct dconn *c, const struct fl_dproto_request *q)
{
	struct fl_dmsg_hello_reply r = { { 0, 0 }, 0, (uint32_t)getpid() };

	r.version = q->u.hello.version < FL_DPROTO_VERSION ? q->u.hello.version : FL_DPROTO_VERSION;
	c->version = r.version;
	return displayd_reply(c, &q->hdr, &r, sizeof(r), NULL, 0);
}

static bool do_devices(struct dconn *c, const struct fl_dproto_request *q)
{
	struct fl_dmsg_devices_reply r = { { 0, 0 }, (uint32_t)dd.n_devs, 0 };
	uint32_t ids[FL_DISPLAY_CONFIG_MAX_DEVICES];

	for (size_t i = 0; i < dd.n_devs; i++)
		ids[i] = fl__display_device_id(dd.devs[i].dev);
	memcpy(reply_buf, &r, sizeof(r));
	memcpy(reply_buf + sizeof(r), ids, dd.n_devs * sizeof(ids[0]));
	return displayd_reply(c, &q->hdr, reply_buf, sizeof(r) + dd.n_devs * sizeof(ids[0]), NULL,
			      0);
}

static bool do_open(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_open *o = &q->u.open;
	struct ddev *d = displayd_dev_by_id(o->device);
	struct fl_dmsg_open_reply r = { { 0, 0 }, 0, 0 };
	int p[2];
	size_t h;
	bool ok;

	if (!d)
		return displayd_fail(c, &q->hdr, -ENODEV, "no display device %" PRIu32, o->device);
	if (o->kind == FL_DISPLAY_OBJ_INTERFACE && !fl__display_interface_get(d->dev, o->id))
		return displayd_fail(c, &q->hdr, -ENODEV, "device %s has no interface %" PRIu32,
				     fl__display_device_name(d->dev), o->id);
	if (o->kind == FL_DISPLAY_OBJ_ENGINE && !fl__display_engine_get(d->dev, o->id))
		return displayd_fail(c, &q->hdr, -ENODEV,
				     "device %s has no overlay engine %" PRIu32,
				     fl__display_device_name(d->dev), o->id);
	for (h = 0; h < MAX_HANDLES && c->handles[h].used; h++)
		;
	if (h == MAX_HANDLES)
		return displayd_fail(c, &q->hdr, -EMFILE, "%d handles open already", MAX_HANDLES);
	if (pipe2(p, O_CLOEXEC) < 0)
		return displayd_fail(c, &q->hdr, -errno, "cannot make the handle's event pipe");
	/* ADF's per-file ring: 4096 bytes (a page, the least a pipe holds); full drops. */
	(void)!fcntl(p[1], F_SETPIPE_SZ, FL_DISPLAY_EVENT_RING);
	(void)!fcntl(p[1], F_SETFL, O_NONBLOCK);
	c->handles[h] = (struct handle){ true, o->kind, o->device, o->id, p[1], { 0 } };
	r.handle = (uint32_t)h;
	ok = displayd_reply(c, &q->hdr, &r, sizeof(r), &p[0], 1);
	close(p[0]);
	return ok;
}

static bool do_close(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.handle.handle, UINT32_MAX);

	if (!h)
		return displayd_fail(c, &q->hdr, -EBADF, "no handle %" PRIu32, q->u.handle.handle);
	displayd_handle_close(h);
	return displayd_reply_status(c, &q->hdr, 0, NULL);
}

bool displayd_wrong_kind(struct dconn *c, const struct fl_msg_hdr *req, uint32_t h,
			 const char *want)
{
	/* ADF: a standard ioctl on the wrong kind of object is -EINVAL. */
	return displayd_fail(c, req, h < MAX_HANDLES ? -EINVAL : -EBADF,
			     "handle %" PRIu32 " is not %s", h, want);
}

static bool do_device_data(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_DEVICE);
	static struct fl_display_attachment att[FL_DISPLAY_MAX_ATTACHMENTS],
		allowed[FL_DISPLAY_MAX_ATTACHMENTS];
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	struct fl_display_device_data data = { "",
					       att,
					       FL_DISPLAY_MAX_ATTACHMENTS,
					       allowed,
					       FL_DISPLAY_MAX_ATTACHMENTS,
					       custom,
					       sizeof(custom) };
	struct fl_dmsg_device_data_reply r = { { 0, 0 }, "", 0, 0, 0, 0 };
	struct fl_display_error e;
	size_t at;
	int err;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.handle.handle, "a device");
	err = fl__display_device_data(displayd_dev_by_id(h->device)->dev, &data, &e);
	if (err)
		return displayd_reply_status(c, &q->hdr, err, &e);
	memcpy(r.name, data.name, sizeof(r.name));
	r.n_attachments = (uint32_t)data.n_attachments;
	r.n_allowed = (uint32_t)data.n_allowed;
	r.custom_size = (uint32_t)data.custom_data_size;
	at = 0;
	put(&at, &r, sizeof(r));
	put(&at, att, data.n_attachments * sizeof(att[0]));
	put(&at, allowed, data.n_allowed * sizeof(allowed[0]));
	put(&at, custom, data.custom_data_size);
	return displayd_reply(c, &q->hdr, reply_buf, at, NULL, 0);
}

/* What ADF's device data does not say: how many interfaces and engines (ids 0 to n - 1). */
static bool do_device_info(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_DEVICE);
	struct fl_dmsg_device_info_reply r;
	struct ddev *d;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.handle.handle, "a device");
	d = displayd_dev_by_id(h->device);
	memset(&r, 0, sizeof(r));
	r.n_interfaces = (uint32_t)fl__display_device_num_interfaces(d->dev);
	r.n_engines = (uint32_t)fl__display_device_num_engines(d->dev);
	snprintf(r.driver, sizeof(r.driver), "%s", d->drv->name);
	/* A version 2 client checks the reply's size: it gets the one it knows. */
	return displayd_reply(c, &q->hdr, &r,
			      c->version == 2 ? FL_DMSG_DEVICE_INFO_V2_SIZE : sizeof(r), NULL, 0);
}

/* The drivers this service knows and whether each can run here (fl_display_drivers()). */
static bool do_drivers(struct dconn *c, const struct fl_dproto_request *q)
{
	struct fl_display_driver_info info[FL_DPROTO_MAX_DRIVERS];
	struct fl_dmsg_drivers_reply r = { { 0, 0 }, 0, 0 };
	size_t n = displayd_drivers_info(info, FL_DPROTO_MAX_DRIVERS);

	r.count = (uint32_t)(n < FL_DPROTO_MAX_DRIVERS ? n : FL_DPROTO_MAX_DRIVERS);
	memcpy(reply_buf, &r, sizeof(r));
	memcpy(reply_buf + sizeof(r), info, r.count * sizeof(info[0]));
	return displayd_reply(c, &q->hdr, reply_buf, sizeof(r) + r.count * sizeof(info[0]), NULL,
			      0);
}

static bool do_type_name(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_dmsg_type_name_reply r;
	const struct fl__display_interface *intf;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.handle.handle, "an interface");
	intf = fl__display_interface_get(displayd_dev_by_id(h->device)->dev, h->id);
	memset(&r, 0, sizeof(r));
	r.type = fl__display_interface_type(intf);
	snprintf(r.name, sizeof(r.name), "%s", fl__display_interface_type_str(intf));
	return displayd_reply(c, &q->hdr, &r, sizeof(r), NULL, 0);
}

static bool do_interface_data(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_INTERFACE);
	static struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	struct fl_display_interface_data data;
	struct fl_dmsg_interface_data_reply r;
	struct fl_display_error e;
	size_t at;
	int err;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.handle.handle, "an interface");
	memset(&data, 0, sizeof(data));
	data.modes = modes;
	data.n_modes = FL_DISPLAY_MAX_MODES;
	data.custom_data = custom;
	data.custom_data_size = sizeof(custom);
	err = fl__display_interface_data(
		fl__display_interface_get(displayd_dev_by_id(h->device)->dev, h->id), &data, &e);
	if (err)
		return displayd_reply_status(c, &q->hdr, err, &e);
	memset(&r, 0, sizeof(r));
	memcpy(r.name, data.name, sizeof(r.name));
	r.type = data.type;
	r.id = data.id;
	r.flags = data.flags;
	r.dpms_state = data.dpms_state;
	r.hotplug_detect = data.hotplug_detect;
	r.width_mm = data.width_mm;
	r.height_mm = data.height_mm;
	r.current_mode = data.current_mode;
	r.n_modes = (uint32_t)data.n_modes;
	r.custom_size = (uint32_t)data.custom_data_size;
	at = 0;
	put(&at, &r, sizeof(r));
	put(&at, modes, data.n_modes * sizeof(modes[0]));
	put(&at, custom, data.custom_data_size);
	return displayd_reply(c, &q->hdr, reply_buf, at, NULL, 0);
}

static bool do_engine_data(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_ENGINE);
	static uint32_t formats[FL_DISPLAY_MAX_FORMATS];
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	struct fl_display_engine_data data = { "", formats, FL_DISPLAY_MAX_FORMATS, custom,
					       sizeof(custom) };
	struct fl_dmsg_engine_data_reply r;
	struct fl_display_error e;
	size_t at;
	int err;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.handle.handle, "an overlay engine");
	err = fl__display_engine_data(
		fl__display_engine_get(displayd_dev_by_id(h->device)->dev, h->id), &data, &e);
	if (err)
		return displayd_reply_status(c, &q->hdr, err, &e);
	memset(&r, 0, sizeof(r));
	memcpy(r.name, data.name, sizeof(r.name));
	r.n_formats = (uint32_t)data.n_formats;
	r.custom_size = (uint32_t)data.custom_data_size;
	at = 0;
	put(&at, &r, sizeof(r));
	put(&at, formats, data.n_formats * sizeof(formats[0]));
	put(&at, custom, data.custom_data_size);
	return displayd_reply(c, &q->hdr, reply_buf, at, NULL, 0);
}

static bool do_attach(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_attach *a = &q->u.attach;
	struct handle *h = displayd_handle_get(c, a->handle, FL_DISPLAY_OBJ_DEVICE);
	struct fl_display_error e;
	struct fl__display_device *dev;
	int r;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, a->handle, "a device");
	dev = displayd_dev_by_id(h->device)->dev;
	r = q->hdr.op == FL_DOP_ATTACH ? fl__display_attach(dev, a->engine, a->interface, &e)
				       : fl__display_detach(dev, a->engine, a->interface, &e);
	return displayd_reply_status(c, &q->hdr, r, &e);
}

static bool do_blank(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.blank.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_display_error e;
	int r;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.blank.handle, "an interface");
	r = fl__display_interface_blank(
		fl__display_interface_get(displayd_dev_by_id(h->device)->dev, h->id),
		q->u.blank.state, &e);
	if (!r)
		displayd_kick(displayd_dev_by_id(h->device));
	return displayd_reply_status(c, &q->hdr, r, &e);
}

static bool do_set_mode(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.set_mode.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_display_mode m = q->u.set_mode.mode;
	struct fl_display_error e;
	int r;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.set_mode.handle, "an interface");
	/* A peer's name may lack its NUL: the model copies it whole. */
	m.name[sizeof(m.name) - 1] = '\0';
	r = fl__display_interface_set_mode(
		fl__display_interface_get(displayd_dev_by_id(h->device)->dev, h->id), &m, &e);
	return displayd_reply_status(c, &q->hdr, r, &e);
}

static bool do_set_event(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_set_event *s = &q->u.set_event;
	struct handle *h = displayd_handle_get(c, s->handle, UINT32_MAX);
	struct ddev *d;
	bool custom =
		s->type >= FL_DISPLAY_EVENT_DEVICE_CUSTOM && s->type < FL_DISPLAY_EVENT_TYPE_MAX;
	bool std = h && h->kind == FL_DISPLAY_OBJ_INTERFACE &&
		   (s->type == FL_DISPLAY_EVENT_VSYNC || s->type == FL_DISPLAY_EVENT_HOTPLUG);
	bool driver;
	int r;

	if (!h)
		return displayd_fail(c, &q->hdr, -EBADF, "no handle %" PRIu32, s->handle);
	d = displayd_dev_by_id(h->device);
	/* The driver says, as data, which kinds of object have events of its own. */
	driver = d->drv->set_event && (d->drv->event_objects & (1u << h->kind));
	/* ADF's order: an object with no events at all, then a type it lacks. */
	if (h->kind != FL_DISPLAY_OBJ_INTERFACE && !driver)
		return displayd_fail(c, &q->hdr, -EOPNOTSUPP, "this object has no events");
	if (!std && !(custom && driver))
		return displayd_fail(c, &q->hdr, -EINVAL,
				     "event type %" PRIu32 " is not one of this object's", s->type);
	if (displayd_bit(h->subscribed, s->type) == !!s->enabled)
		return displayd_fail(c, &q->hdr, -EALREADY, "event type %" PRIu32 " is %s already",
				     s->type, s->enabled ? "on" : "off");
	if (custom && !others_subscribed(h, s->type)) {
		r = d->drv->set_event(d->drv_data, h->kind, h->id, s->type, s->enabled);
		if (r < 0)
			return displayd_fail(c, &q->hdr, r,
					     "the driver refused event type %" PRIu32, s->type);
	}
	h->subscribed[s->type / 8] ^= (uint8_t)(1u << (s->type % 8));
	return displayd_reply_status(c, &q->hdr, 0, NULL);
}

static bool do_simple_alloc(struct dconn *c, const struct fl_dproto_request *q)
{
	const struct fl_dmsg_simple_alloc *a = &q->u.simple_alloc;
	struct handle *h = displayd_handle_get(c, a->handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_dmsg_simple_alloc_reply r = { { 0, 0 }, 0, 0 };
	const struct fl__display_format *f = fl__display_format_find(a->format);
	struct ddev *d;
	char fcc[5];
	int fd, err;
	bool ok;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, a->handle, "an interface");
	d = displayd_dev_by_id(h->device);
	if (!d->drv->alloc_simple_buffer)
		return displayd_fail(c, &q->hdr, -EOPNOTSUPP, "the driver has no simple buffers");
	if (!f || !f->rgb)
		return displayd_fail(c, &q->hdr, -EINVAL,
				     "format %s is not one of ADF's RGB formats",
				     fl__display_format_str(a->format, fcc));
	if (!a->w || !a->h || a->w > UINT16_MAX || a->h > UINT16_MAX)
		return displayd_fail(c, &q->hdr, -EINVAL,
				     "a simple buffer is 1 to 65535 pixels a side");
	err = d->drv->alloc_simple_buffer(d->drv_data, h->id, a->w, a->h, a->format, &fd, &r.offset,
					  &r.pitch);
	if (err < 0)
		return displayd_fail(c, &q->hdr, err,
				     "the driver could not allocate a %" PRIu32 "x%" PRIu32
				     " simple buffer",
				     a->w, a->h);
	ok = displayd_reply(c, &q->hdr, &r, sizeof(r), &fd, 1);
	close(fd);
	return ok;
}

static bool do_set_connected(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h =
		displayd_handle_get(c, q->u.set_connected.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct ddev *d;
	int r;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.set_connected.handle, "an interface");
	d = displayd_dev_by_id(h->device);
	if (!d->drv->set_connected)
		return displayd_fail(c, &q->hdr, -EOPNOTSUPP, "the driver cannot simulate hotplug");
	r = d->drv->set_connected(d->drv_data, h->id, q->u.set_connected.connected);
	return displayd_reply_status(c, &q->hdr, r, NULL);
}

static bool do_capture(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.capture.handle, FL_DISPLAY_OBJ_INTERFACE);
	struct fl_dmsg_capture_reply r = { { 0, 0 }, 0, 0, 0, q->u.capture.format };
	struct fl_display_driver_buffer dst = { 0 };
	const struct fl_display_mode *m;
	struct ddev *d;
	char fcc[5];
	int fd, err;
	bool ok;

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.capture.handle, "an interface");
	d = displayd_dev_by_id(h->device);
	if (!d->drv->capture)
		return displayd_fail(c, &q->hdr, -EOPNOTSUPP, "the driver cannot show its frames");
	if (r.format != FL_FOURCC('X', 'R', '2', '4') && r.format != FL_FOURCC('A', 'R', '2', '4'))
		return displayd_fail(c, &q->hdr, -EINVAL,
				     "a capture is XRGB8888 or ARGB8888, not %s",
				     fl__display_format_str(r.format, fcc));
	m = fl__display_interface_current_mode(fl__display_interface_get(d->dev, h->id));
	if (!m->hdisplay || !m->vdisplay)
		return displayd_fail(c, &q->hdr, -ENODEV,
				     "the interface has no mode: nothing to show");
	r.w = m->hdisplay;
	r.h = m->vdisplay;
	r.pitch = r.w * 4;
	fd = memfd_create("fl-display-capture", MFD_CLOEXEC);
	if (fd < 0)
		return displayd_fail(c, &q->hdr, -errno, "cannot make the capture's memory");
	dst = (struct fl_display_driver_buffer){ .w = r.w,
						 .h = r.h,
						 .format = r.format,
						 .n_planes = 1,
						 .pitch = { r.pitch },
						 .size = { (uint64_t)r.pitch * r.h },
						 .fd = { fd, -1, -1, -1 },
						 .in_fence = -1 };
	err = ftruncate(fd, (off_t)dst.size[0]) < 0 ? -errno : 0;
	if (!err)
		err = d->drv->capture(d->drv_data, h->id, &dst);
	if (err) {
		close(fd);
		return displayd_fail(c, &q->hdr, err, "the frame could not be composed: %s",
				     err == -EFAULT ? "a buffer on screen shrank while it was read"
						    : strerror(-err));
	}
	ok = displayd_reply(c, &q->hdr, &r, sizeof(r), &fd, 1);
	close(fd);
	return ok;
}

static bool do_dump(struct dconn *c, const struct fl_dproto_request *q)
{
	struct fl_msg_reply r = { 0, 0 };
	int fd, err = displayd_dump(q->u.dump.flags, &fd);
	bool ok;

	if (err)
		return displayd_fail(c, &q->hdr, err, "cannot write the dump: %s", strerror(-err));
	ok = displayd_reply(c, &q->hdr, &r, sizeof(r), &fd, 1);
	close(fd);
	return ok;
}

static bool do_stats(struct dconn *c, const struct fl_dproto_request *q)
{
	struct handle *h = displayd_handle_get(c, q->u.handle.handle, FL_DISPLAY_OBJ_DEVICE);
	struct fl_dmsg_stats_reply r = { { 0, 0 }, { 0 } };

	if (!h)
		return displayd_wrong_kind(c, &q->hdr, q->u.handle.handle, "a device");
	r.stats = displayd_dev_by_id(h->device)->st;
	return displayd_reply(c, &q->hdr, &r, sizeof(r), NULL, 0);
}

/* The size of the memory @fd holds: a memfd's, a file's, a dma-buf's. */
bool displayd_handle_request(struct dconn *c, const struct fl_dproto_request *q, int *fds)
{
	switch (q->hdr.op) {
	case FL_DOP_HELLO:
		return do_hello(c, q);
	case FL_DOP_DEVICES:
		return do_devices(c, q);
	case FL_DOP_DRIVERS:
		return do_drivers(c, q);
	case FL_DOP_OPEN:
		return do_open(c, q);
	case FL_DOP_CLOSE:
		return do_close(c, q);
	case FL_DOP_DEVICE_DATA:
		return do_device_data(c, q);
	case FL_DOP_INTERFACE_DATA:
		return do_interface_data(c, q);
	case FL_DOP_ENGINE_DATA:
		return do_engine_data(c, q);
	case FL_DOP_ATTACH:
	case FL_DOP_DETACH:
		return do_attach(c, q);
	case FL_DOP_BLANK:
		return do_blank(c, q);
	case FL_DOP_SET_MODE:
		return do_set_mode(c, q);
	case FL_DOP_SET_EVENT:
		return do_set_event(c, q);
	case FL_DOP_SIMPLE_ALLOC:
		return do_simple_alloc(c, q);
	case FL_DOP_POST:
		return displayd_do_post(c, q, fds);
	case FL_DOP_POST_FDS:
		memcpy(c->stash + c->n_stash, fds, q->nfds * sizeof(int));
		c->n_stash += q->nfds;
		for (unsigned int i = 0; i < q->nfds; i++)
			fds[i] = -1;
		return true;
	case FL_DOP_SIMPLE_POST:
		return displayd_do_simple_post(c, q, fds);
	case FL_DOP_SET_CONNECTED:
		return do_set_connected(c, q);
	case FL_DOP_CAPTURE:
		return do_capture(c, q);
	case FL_DOP_DUMP:
		return do_dump(c, q);
	case FL_DOP_SET_SOURCE:
		return displayd_do_set_source(c, q, fds);
	case FL_DOP_DEVICE_INFO:
		return do_device_info(c, q);
	case FL_DOP_INTERFACE_TYPE_NAME:
		return do_type_name(c, q);
	default: /* FL_DOP_STATS */
		return do_stats(c, q);
	}
}

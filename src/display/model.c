/* SPDX-License-Identifier: MIT */
/*
 * ADF's object model (display-model.h). Each rule names the ADF function it
 * follows; docs/display.md lists where fenceline deliberately differs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "display-model.h"

struct fl__display_interface {
	struct fl__display_device *dev;
	uint32_t id, type, idx, flags;
	char name[FL_DISPLAY_NAME_LEN];
	char type_str[FL_DISPLAY_NAME_LEN]; /* a driver type's */
	uint16_t width_mm, height_mm;
	enum fl_display_dpms dpms;
	bool connected;
	struct fl_display_mode current;
	struct fl_display_mode *modes;
	size_t n_modes;
	/* Its gang (n_members 0: none): a copy per member, kept equal by the gang's calls. */
	struct fl_display_gang gang;
};

struct fl__display_engine {
	struct fl__display_device *dev;
	uint32_t id;
	char name[FL_DISPLAY_NAME_LEN];
	uint32_t *formats;
	size_t n_formats;
};

struct fl__display_device {
	struct fl__display_set *root;
	uint32_t id;
	char name[FL_DISPLAY_NAME_LEN];
	const struct fl_display_driver_ops *ops;
	void *data;
	enum fl__display_padding padding;
	fl__display_flush_fn flush;
	void *flush_data;
	struct fl__display_interface **intfs;
	size_t n_intfs;
	struct fl__display_engine **engs;
	size_t n_engs;
	/* Both bounded by ADF_MAX_ATTACHMENTS; attached is a subset of allowed. */
	struct fl_display_attachment allowed[FL_DISPLAY_MAX_ATTACHMENTS];
	size_t n_allowed;
	struct fl_display_attachment attached[FL_DISPLAY_MAX_ATTACHMENTS];
	size_t n_attached;
};

struct fl__display_set {
	struct fl__display_device **devs;
	size_t n_devs;
};

static const struct fl_display_driver_ops no_ops;

static const char *const type_names[] = {
	[FL_DISPLAY_INTF_DSI] = "DSI",	     [FL_DISPLAY_INTF_EDP] = "eDP",
	[FL_DISPLAY_INTF_DPI] = "DPI",	     [FL_DISPLAY_INTF_VGA] = "VGA",
	[FL_DISPLAY_INTF_DVI] = "DVI",	     [FL_DISPLAY_INTF_HDMI] = "HDMI",
	[FL_DISPLAY_INTF_MEMORY] = "memory",
};

uint32_t fl__display_mode_vrefresh(const struct fl_display_mode *m)
{
	uint64_t total = (uint64_t)m->htotal * m->vtotal;
	uint64_t hz;

	if (!total)
		return 0;
	/* In mHz, so that interlace and doublescan round once, at the end. */
	hz = (uint64_t)m->clock * 1000 * 1000 / total;
	if (m->flags & FL_DISPLAY_MODE_FLAG_INTERLACE)
		hz *= 2;
	if (m->flags & FL_DISPLAY_MODE_FLAG_DBLSCAN)
		hz /= 2;
	if (m->vscan > 1)
		hz /= m->vscan;
	return (uint32_t)((hz + 500) / 1000);
}

void fl__display_mode_set_name(struct fl_display_mode *m)
{
	bool interlaced = m->flags & FL_DISPLAY_MODE_FLAG_INTERLACE;

	snprintf(m->name, sizeof(m->name), "%ux%u%s", m->hdisplay, m->vdisplay,
		 interlaced ? "i" : "");
}

/* Copies a 1 to FL_DISPLAY_NAME_LEN - 1 byte name into @out. */
static int copy_name(char out[FL_DISPLAY_NAME_LEN], const char *name, const char *what,
		     struct fl_display_error *e)
{
	size_t n = name ? strnlen(name, FL_DISPLAY_NAME_LEN) : 0;

	if (n == 0 || n == FL_DISPLAY_NAME_LEN)
		return fl__display_fail(e, -EINVAL, "%s name must be 1 to %d bytes", what,
					FL_DISPLAY_NAME_LEN - 1);
	memcpy(out, name, n + 1);
	return 0;
}

/* Makes room for one more pointer in @*array of @n. */
static int grow(void *array, size_t n)
{
	void ***a = array;
	void **more;

	if (n & (n - 1) && n) /* capacity is the next power of two */
		return 0;
	more = realloc(*a, (n ? 2 * n : 1) * sizeof(void *));
	if (!more)
		return -ENOMEM;
	*a = more;
	return 0;
}

struct fl__display_set *fl__display_create(void)
{
	return calloc(1, sizeof(struct fl__display_set));
}

void fl__display_destroy(struct fl__display_set *d)
{
	if (!d)
		return;
	while (d->n_devs)
		fl__display_device_destroy(d->devs[d->n_devs - 1]);
	free(d->devs);
	free(d);
}

int fl__display_device_create(struct fl__display_set *d, const char *name,
			      const struct fl_display_driver_ops *ops, void *data,
			      enum fl__display_padding padding, struct fl__display_device **ret_dev,
			      struct fl_display_error *e)
{
	struct fl__display_device *dev;
	uint32_t id = 0;
	int r;

	if (padding != FL_DISPLAY_PADDED_TO_PITCH && padding != FL_DISPLAY_UNPADDED)
		return fl__display_fail(e, -EINVAL, "unknown buffer padding quirk %d",
					(int)padding);
	/* ADF's idr: the lowest id no live device has. */
	for (bool taken = true; taken;) {
		taken = false;
		for (size_t i = 0; i < d->n_devs && !taken; i++)
			if (d->devs[i]->id == id)
				taken = true;
		if (taken)
			id++;
	}
	if (id > INT32_MAX)
		return fl__display_fail(e, -ENOSPC, "no device id left");
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return fl__display_fail(e, -ENOMEM, "out of memory");
	r = copy_name(dev->name, name, "a device", e);
	if (!r)
		r = grow(&d->devs, d->n_devs);
	if (r) {
		free(dev);
		return r == -ENOMEM ? fl__display_fail(e, r, "out of memory") : r;
	}
	dev->root = d;
	dev->id = id;
	dev->ops = ops ? ops : &no_ops;
	dev->data = data;
	dev->padding = padding;
	d->devs[d->n_devs++] = dev;
	*ret_dev = dev;
	return 0;
}

void fl__display_device_destroy(struct fl__display_device *dev)
{
	struct fl__display_set *d = dev->root;

	for (size_t i = 0; i < d->n_devs; i++) {
		if (d->devs[i] != dev)
			continue;
		memmove(&d->devs[i], &d->devs[i + 1], (d->n_devs - i - 1) * sizeof(d->devs[0]));
		d->n_devs--;
		break;
	}
	for (size_t i = 0; i < dev->n_intfs; i++) {
		free(dev->intfs[i]->modes);
		free(dev->intfs[i]);
	}
	for (size_t i = 0; i < dev->n_engs; i++) {
		free(dev->engs[i]->formats);
		free(dev->engs[i]);
	}
	free(dev->intfs);
	free(dev->engs);
	free(dev);
}

struct fl__display_device *fl__display_device_get(struct fl__display_set *d, uint32_t id)
{
	for (size_t i = 0; i < d->n_devs; i++)
		if (d->devs[i]->id == id)
			return d->devs[i];
	return NULL;
}

void fl__display_device_set_flush(struct fl__display_device *dev, fl__display_flush_fn fn,
				  void *data)
{
	dev->flush = fn;
	dev->flush_data = data;
}

uint32_t fl__display_device_id(const struct fl__display_device *dev)
{
	return dev->id;
}

const char *fl__display_device_name(const struct fl__display_device *dev)
{
	return dev->name;
}

enum fl__display_padding fl__display_device_padding(const struct fl__display_device *dev)
{
	return dev->padding;
}

size_t fl__display_device_num_interfaces(const struct fl__display_device *dev)
{
	return dev->n_intfs;
}

size_t fl__display_device_num_engines(const struct fl__display_device *dev)
{
	return dev->n_engs;
}

int fl__display_interface_add(struct fl__display_device *dev, uint32_t type, const char *type_str,
			      uint32_t flags, const char *name, uint16_t width_mm,
			      uint16_t height_mm, struct fl__display_interface **ret_intf,
			      struct fl_display_error *e)
{
	struct fl__display_interface *intf;
	bool custom = type >= FL_DISPLAY_INTF_CUSTOM;
	int r;

	if ((type > FL_DISPLAY_INTF_MEMORY && !custom) || type == FL_DISPLAY_INTF_TYPE_MAX)
		return fl__display_fail(e, -EINVAL,
					"interface type %" PRIu32
					" is reserved (types are 0 to 6, and 128 and up for "
					"driver types)",
					type);
	if (custom != (type_str != NULL))
		return fl__display_fail(e, -EINVAL, "%s",
					custom ? "a driver interface type needs its name"
					       : "only driver interface types have a type name");
	if (flags & ~(FL_DISPLAY_INTF_PRIMARY | FL_DISPLAY_INTF_EXTERNAL))
		return fl__display_fail(e, -EINVAL,
					"interface flags 0x%" PRIx32
					" has bits other than PRIMARY and EXTERNAL",
					flags);
	if (dev->n_intfs == FL_DISPLAY_MAX_INTERFACES)
		return fl__display_fail(e, -ENOSPC, "device %s has %d interfaces already",
					dev->name, FL_DISPLAY_MAX_INTERFACES);
	intf = calloc(1, sizeof(*intf));
	if (!intf)
		return fl__display_fail(e, -ENOMEM, "out of memory");
	r = copy_name(intf->name, name, "an interface", e);
	if (!r && custom)
		r = copy_name(intf->type_str, type_str, "an interface type", e);
	if (!r && grow(&dev->intfs, dev->n_intfs))
		r = fl__display_fail(e, -ENOMEM, "out of memory");
	if (r) {
		free(intf);
		return r;
	}
	intf->dev = dev;
	intf->id = (uint32_t)dev->n_intfs;
	intf->type = type;
	for (size_t i = 0; i < dev->n_intfs; i++)
		intf->idx += dev->intfs[i]->type == type;
	intf->flags = flags;
	intf->width_mm = width_mm;
	intf->height_mm = height_mm;
	intf->dpms = FL_DISPLAY_DPMS_OFF;
	dev->intfs[dev->n_intfs++] = intf;
	*ret_intf = intf;
	return 0;
}

int fl__display_engine_add(struct fl__display_device *dev, const char *name,
			   const uint32_t *formats, size_t n_formats,
			   struct fl__display_engine **ret_eng, struct fl_display_error *e)
{
	struct fl__display_engine *eng;
	char fcc[5];
	int r;

	if (n_formats == 0 || n_formats > FL_DISPLAY_MAX_FORMATS)
		return fl__display_fail(e, -EINVAL,
					"an overlay engine lists 1 to %d formats, not %zu",
					FL_DISPLAY_MAX_FORMATS, n_formats);
	for (size_t i = 0; i < n_formats; i++) {
		fl__display_format_str(formats[i], fcc);
		if (!fl__display_format_find(formats[i]) && !dev->ops->validate_custom_format)
			return fl__display_fail(e, -EINVAL,
						"format %s is not standard, and the driver cannot "
						"validate custom formats",
						fcc);
		for (size_t j = 0; j < i; j++)
			if (formats[j] == formats[i])
				return fl__display_fail(e, -EINVAL, "format %s is listed twice",
							fcc);
	}
	if (dev->n_engs == FL_DISPLAY_MAX_ENGINES)
		return fl__display_fail(e, -ENOSPC, "device %s has %d overlay engines already",
					dev->name, FL_DISPLAY_MAX_ENGINES);
	eng = calloc(1, sizeof(*eng));
	if (!eng)
		return fl__display_fail(e, -ENOMEM, "out of memory");
	r = copy_name(eng->name, name, "an overlay engine", e);
	if (!r) {
		eng->formats = malloc(n_formats * sizeof(*formats));
		if (!eng->formats || grow(&dev->engs, dev->n_engs))
			r = fl__display_fail(e, -ENOMEM, "out of memory");
	}
	if (r) {
		free(eng->formats);
		free(eng);
		return r;
	}
	memcpy(eng->formats, formats, n_formats * sizeof(*formats));
	eng->n_formats = n_formats;
	eng->dev = dev;
	eng->id = (uint32_t)dev->n_engs;
	dev->engs[dev->n_engs++] = eng;
	*ret_eng = eng;
	return 0;
}

struct fl__display_interface *fl__display_interface_get(struct fl__display_device *dev, uint32_t id)
{
	return id < dev->n_intfs ? dev->intfs[id] : NULL;
}

struct fl__display_engine *fl__display_engine_get(struct fl__display_device *dev, uint32_t id)
{
	return id < dev->n_engs ? dev->engs[id] : NULL;
}

uint32_t fl__display_interface_id(const struct fl__display_interface *intf)
{
	return intf->id;
}

struct fl__display_device *fl__display_interface_device(const struct fl__display_interface *intf)
{
	return intf->dev;
}

uint32_t fl__display_engine_id(const struct fl__display_engine *eng)
{
	return eng->id;
}

struct fl__display_device *fl__display_engine_device(const struct fl__display_engine *eng)
{
	return eng->dev;
}

bool fl__display_engine_supports(const struct fl__display_engine *eng, uint32_t fourcc)
{
	for (size_t i = 0; i < eng->n_formats; i++)
		if (eng->formats[i] == fourcc)
			return true;
	return false;
}

static ptrdiff_t find_pair(const struct fl_display_attachment *list, size_t n, uint32_t eng,
			   uint32_t intf)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].engine == eng && list[i].interface == intf)
			return (ptrdiff_t)i;
	return -1;
}

int fl__display_attachment_allow(struct fl__display_engine *eng, struct fl__display_interface *intf,
				 struct fl_display_error *e)
{
	struct fl__display_device *dev = eng->dev;

	if (intf->dev != dev)
		return fl__display_fail(e, -EINVAL,
					"overlay engine %s and interface %s are not on one device",
					eng->name, intf->name);
	if (find_pair(dev->allowed, dev->n_allowed, eng->id, intf->id) >= 0)
		return fl__display_fail(e, -EALREADY,
					"overlay engine %s is already allowed on interface %s",
					eng->name, intf->name);
	if (dev->n_allowed == FL_DISPLAY_MAX_ATTACHMENTS)
		return fl__display_fail(e, -ENOSPC, "device %s allows %d attachments already",
					dev->name, FL_DISPLAY_MAX_ATTACHMENTS);
	dev->allowed[dev->n_allowed].engine = eng->id;
	dev->allowed[dev->n_allowed].interface = intf->id;
	dev->n_allowed++;
	return 0;
}

/* Resolves a pair of ids from userspace; unknown ids are ADF's -EINVAL. */
static int lookup_pair(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id,
		       struct fl__display_engine **eng, struct fl__display_interface **intf,
		       struct fl_display_error *e)
{
	*eng = fl__display_engine_get(dev, eng_id);
	*intf = fl__display_interface_get(dev, intf_id);
	if (!*eng)
		return fl__display_fail(e, -EINVAL, "device %s has no overlay engine %" PRIu32,
					dev->name, eng_id);
	if (!*intf)
		return fl__display_fail(e, -EINVAL, "device %s has no interface %" PRIu32,
					dev->name, intf_id);
	return 0;
}

int fl__display_attach(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id,
		       struct fl_display_error *e)
{
	struct fl__display_engine *eng;
	struct fl__display_interface *intf;
	int r = lookup_pair(dev, eng_id, intf_id, &eng, &intf, e);

	if (r)
		return r;
	/* adf_device_attach()'s order: the count, allowed, attached already, then the driver. */
	if (dev->n_attached == FL_DISPLAY_MAX_ATTACHMENTS)
		return fl__display_fail(e, -ENOMEM, "device %s has %d attachments already",
					dev->name, FL_DISPLAY_MAX_ATTACHMENTS);
	if (find_pair(dev->allowed, dev->n_allowed, eng_id, intf_id) < 0)
		return fl__display_fail(e, -EINVAL,
					"overlay engine %s cannot be attached to interface %s "
					"(not an allowed attachment)",
					eng->name, intf->name);
	if (find_pair(dev->attached, dev->n_attached, eng_id, intf_id) >= 0)
		return fl__display_fail(e, -EALREADY,
					"overlay engine %s is already attached to interface %s",
					eng->name, intf->name);
	if (dev->ops->attach) {
		r = dev->ops->attach(dev->data, eng->id, intf->id);
		if (r)
			return fl__display_fail(e, r < 0 ? r : -EIO,
						"the driver refused to attach overlay engine %s to "
						"interface %s",
						eng->name, intf->name);
	}
	dev->attached[dev->n_attached].engine = eng_id;
	dev->attached[dev->n_attached].interface = intf_id;
	dev->n_attached++;
	return 0;
}

int fl__display_detach(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id,
		       struct fl_display_error *e)
{
	struct fl__display_engine *eng;
	struct fl__display_interface *intf;
	int r = lookup_pair(dev, eng_id, intf_id, &eng, &intf, e);
	ptrdiff_t at;

	if (r)
		return r;
	at = find_pair(dev->attached, dev->n_attached, eng_id, intf_id);
	if (at < 0)
		return fl__display_fail(e, -EINVAL,
					"overlay engine %s is not attached to interface %s",
					eng->name, intf->name);
	if (dev->ops->detach) {
		r = dev->ops->detach(dev->data, eng->id, intf->id);
		if (r)
			return fl__display_fail(e, r < 0 ? r : -EIO,
						"the driver refused to detach overlay engine %s "
						"from interface %s",
						eng->name, intf->name);
	}
	/* Keeps the order of the rest: GET_DEVICE_DATA lists them as attached. */
	memmove(&dev->attached[at], &dev->attached[at + 1],
		(dev->n_attached - (size_t)at - 1) * sizeof(dev->attached[0]));
	dev->n_attached--;
	return 0;
}

bool fl__display_attached(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id)
{
	return find_pair(dev->attached, dev->n_attached, eng_id, intf_id) >= 0;
}

bool fl__display_attach_allowed(struct fl__display_device *dev, uint32_t eng_id, uint32_t intf_id)
{
	return find_pair(dev->allowed, dev->n_allowed, eng_id, intf_id) >= 0;
}

uint32_t fl__display_interface_type(const struct fl__display_interface *intf)
{
	return intf->type;
}

const char *fl__display_interface_type_str(const struct fl__display_interface *intf)
{
	if (intf->type <= FL_DISPLAY_INTF_MEMORY)
		return type_names[intf->type];
	return intf->type_str[0] ? intf->type_str : "custom";
}

uint32_t fl__display_interface_idx(const struct fl__display_interface *intf)
{
	return intf->idx;
}

uint32_t fl__display_interface_flags(const struct fl__display_interface *intf)
{
	return intf->flags;
}

enum fl_display_dpms fl__display_interface_dpms(const struct fl__display_interface *intf)
{
	return intf->dpms;
}

bool fl__display_interface_connected(const struct fl__display_interface *intf)
{
	return intf->connected;
}

const struct fl_display_mode *
fl__display_interface_current_mode(const struct fl__display_interface *intf)
{
	return &intf->current;
}

const struct fl_display_mode *fl__display_interface_modes(const struct fl__display_interface *intf,
							  size_t *ret_n)
{
	*ret_n = intf->n_modes;
	return intf->modes;
}

static void flush(struct fl__display_device *dev)
{
	if (dev->flush)
		dev->flush(dev, dev->flush_data);
}

/* The interfaces a DPMS change or modeset of @intf acts on: its gang, else itself. */
static size_t gang_of(struct fl__display_interface *intf,
		      struct fl__display_interface *out[FL_DISPLAY_GANG_MAX])
{
	if (!intf->gang.n_members) {
		out[0] = intf;
		return 1;
	}
	for (uint32_t i = 0; i < intf->gang.n_members; i++)
		out[i] = intf->dev->intfs[intf->gang.members[i]];
	return intf->gang.n_members;
}

int fl__display_interface_blank(struct fl__display_interface *intf, uint32_t state,
				struct fl_display_error *e)
{
	struct fl__display_device *dev = intf->dev;
	struct fl__display_interface *all[FL_DISPLAY_GANG_MAX];
	size_t n = gang_of(intf, all), done;
	int r = 0;

	if (!dev->ops->blank)
		return fl__display_fail(e, -EOPNOTSUPP, "interface %s cannot be blanked",
					intf->name);
	if (state > FL_DISPLAY_DPMS_OFF)
		return fl__display_fail(e, -EINVAL,
					"DPMS state %" PRIu32
					" does not exist (0 on, 1 standby, 2 suspend, 3 off)",
					state);
	/* adf_interface_blank()'s order: the flush comes before the -EBUSY check. */
	if (state != FL_DISPLAY_DPMS_ON)
		flush(dev);
	if (state == intf->dpms)
		return fl__display_fail(e, -EBUSY,
					"interface %s is in DPMS state %" PRIu32 " already",
					intf->name, state);
	/* A gang is one panel: its links change state together or not at all. */
	for (done = 0; done < n; done++) {
		r = dev->ops->blank(dev->data, all[done]->id, (enum fl_display_dpms)state);
		if (r)
			break;
	}
	if (r) {
		for (size_t i = 0; i < done; i++)
			(void)dev->ops->blank(dev->data, all[i]->id, all[i]->dpms);
		return fl__display_fail(
			e, r < 0 ? r : -EIO,
			"the driver failed to put interface %s in DPMS state %" PRIu32,
			all[done]->name, state);
	}
	for (size_t i = 0; i < n; i++)
		all[i]->dpms = (enum fl_display_dpms)state;
	return 0;
}

int fl__display_interface_set_mode(struct fl__display_interface *intf,
				   const struct fl_display_mode *mode, struct fl_display_error *e)
{
	struct fl__display_device *dev = intf->dev;
	struct fl__display_interface *all[FL_DISPLAY_GANG_MAX];
	struct fl_display_mode copy = *mode;
	size_t n = gang_of(intf, all), done;
	int r = 0;

	if (!dev->ops->modeset)
		return fl__display_fail(e, -EOPNOTSUPP, "interface %s cannot change modes",
					intf->name);
	flush(dev);
	/* Every link of a gang scans out a tile of the same mode (struct fl_display_gang). */
	for (done = 0; done < n; done++) {
		copy = *mode;
		r = dev->ops->modeset(dev->data, all[done]->id, &copy);
		if (r)
			break;
	}
	if (r) {
		for (size_t i = 0; i < done; i++) {
			struct fl_display_mode old = all[i]->current;

			(void)dev->ops->modeset(dev->data, all[i]->id, &old);
		}
		return fl__display_fail(e, r < 0 ? r : -EIO,
					"the driver refused mode %ux%u@%" PRIu32 " on interface %s",
					copy.hdisplay, copy.vdisplay, copy.vrefresh,
					all[done]->name);
	}
	for (size_t i = 0; i < n; i++)
		all[i]->current = copy;
	return 0;
}

int fl__display_gang_grid(const uint32_t (*tiles)[2], size_t n, uint32_t *ret_cols,
			  uint32_t *ret_rows, struct fl_display_error *e)
{
	uint32_t cols = 0, rows = 0;

	if (n < 2 || n > FL_DISPLAY_GANG_MAX)
		return fl__display_fail(e, -EINVAL, "a gang has 2 to %d interfaces, not %zu",
					FL_DISPLAY_GANG_MAX, n);
	for (size_t i = 0; i < n; i++) {
		if (tiles[i][0] >= FL_DISPLAY_GANG_MAX || tiles[i][1] >= FL_DISPLAY_GANG_MAX)
			return fl__display_fail(e, -EINVAL,
						"tile %" PRIu32 ",%" PRIu32 " is outside any grid "
						"of %d tiles",
						tiles[i][0], tiles[i][1], FL_DISPLAY_GANG_MAX);
		cols = tiles[i][0] + 1 > cols ? tiles[i][0] + 1 : cols;
		rows = tiles[i][1] + 1 > rows ? tiles[i][1] + 1 : rows;
	}
	/* Each tile of the grid exactly once: a panel has no holes and no overlap. */
	if ((uint64_t)cols * rows != n)
		return fl__display_fail(e, -EINVAL,
					"a gang of %zu interfaces does not fill its %" PRIu32
					"x%" PRIu32 " grid of tiles",
					n, cols, rows);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (tiles[i][0] == tiles[j][0] && tiles[i][1] == tiles[j][1])
				return fl__display_fail(e, -EINVAL,
							"members %zu and %zu of the gang have the "
							"same tile %" PRIu32 ",%" PRIu32,
							j, i, tiles[i][0], tiles[i][1]);
	*ret_cols = cols;
	*ret_rows = rows;
	return 0;
}

int fl__display_gang_add(struct fl__display_device *dev, const uint32_t *ids,
			 const uint32_t (*tiles)[2], size_t n, struct fl_display_error *e)
{
	struct fl_display_gang g = { 0 };
	uint32_t cols = 0, rows = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		struct fl__display_interface *intf = fl__display_interface_get(dev, ids[i]);

		if (!intf)
			return fl__display_fail(e, -EINVAL, "device %s has no interface %" PRIu32,
						dev->name, ids[i]);
		if (intf->gang.n_members)
			return fl__display_fail(e, -EALREADY, "interface %s is ganged already",
						intf->name);
		if (intf->type == FL_DISPLAY_INTF_MEMORY)
			return fl__display_fail(e, -EINVAL,
						"interface %s is memory writeback: it scans out no "
						"panel to gang",
						intf->name);
		for (size_t j = 0; j < i; j++)
			if (ids[j] == ids[i])
				return fl__display_fail(e, -EINVAL,
							"interface %s is named twice in a gang",
							intf->name);
	}
	r = fl__display_gang_grid(tiles, n, &cols, &rows, e);
	if (r)
		return r;
	g.n_members = (uint32_t)n;
	g.cols = cols;
	g.rows = rows;
	memcpy(g.members, ids, n * sizeof(ids[0]));
	/* In increasing order: members[0], the lowest id, names the gang. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && g.members[j - 1] > g.members[j]; j--) {
			uint32_t t = g.members[j];

			g.members[j] = g.members[j - 1];
			g.members[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		struct fl__display_interface *intf = dev->intfs[ids[i]];

		intf->gang = g;
		intf->gang.col = tiles[i][0];
		intf->gang.row = tiles[i][1];
	}
	return 0;
}

int fl__display_interface_gang(const struct fl__display_interface *intf,
			       struct fl_display_gang *ret)
{
	if (!intf->gang.n_members)
		return -ENODATA;
	*ret = intf->gang;
	return 0;
}

void fl__display_interface_frame_size(const struct fl__display_interface *intf, uint32_t *ret_w,
				      uint32_t *ret_h)
{
	uint32_t k = intf->gang.n_members ? intf->gang.cols : 1;
	uint32_t l = intf->gang.n_members ? intf->gang.rows : 1;

	*ret_w = intf->current.hdisplay * k;
	*ret_h = intf->current.vdisplay * l;
}

int fl__display_interface_hotplug(struct fl__display_interface *intf, bool connected,
				  const struct fl_display_mode *modes, size_t n_modes,
				  struct fl_display_error *e)
{
	struct fl_display_mode *copy = NULL;

	/* adf_hotplug_notify_connected()'s errno. */
	if (n_modes > FL_DISPLAY_MAX_MODES)
		return fl__display_fail(e, -ENOMEM, "%zu modes for interface %s: at most %d",
					n_modes, intf->name, FL_DISPLAY_MAX_MODES);
	if (!connected && n_modes)
		return fl__display_fail(e, -EINVAL, "a disconnected interface has no modes");
	if (n_modes) {
		copy = malloc(n_modes * sizeof(*copy));
		if (!copy)
			return fl__display_fail(e, -ENOMEM, "out of memory");
		memcpy(copy, modes, n_modes * sizeof(*copy));
	}
	free(intf->modes);
	intf->modes = copy;
	intf->n_modes = n_modes;
	intf->connected = connected;
	return 0;
}

void fl__display_interface_set_current_mode(struct fl__display_interface *intf,
					    const struct fl_display_mode *mode)
{
	intf->current = *mode;
}

/* The room a caller gave for an array: at most @max, and an array unless 0. */
static int check_room(const void *array, size_t cap, size_t max, const char *what,
		      struct fl_display_error *e)
{
	if (cap > max)
		return fl__display_fail(e, -EINVAL, "room for %zu %s asked: at most %zu", cap, what,
					max);
	if (cap && !array)
		return fl__display_fail(e, -EINVAL, "room for %zu %s but no array", cap, what);
	return 0;
}

/* One array of a two-call query: copies what fits and reports the true count. */
static void copy_out(void *dst, size_t *n_inout, const void *src, size_t n, size_t elem)
{
	if (n && *n_inout)
		memcpy(dst, src, (*n_inout < n ? *n_inout : n) * elem);
	*n_inout = n;
}

/*
 * The driver's custom data of one object, into the caller's room; the last
 * check of every query, so that a refusal leaves the caller's data as it was.
 */
static int custom_out(struct fl__display_device *dev, const struct fl__display_interface *intf,
		      const struct fl__display_engine *eng, void *dst, size_t *size_inout,
		      struct fl_display_error *e)
{
	unsigned char buf[FL_DISPLAY_MAX_CUSTOM_DATA];
	size_t n = 0;
	int r = check_room(dst, *size_inout, FL_DISPLAY_MAX_CUSTOM_DATA, "bytes of custom data", e);

	if (r)
		return r;
	if (dev->ops->custom_data) {
		r = dev->ops->custom_data(dev->data,
					  intf	? FL_DISPLAY_OBJ_INTERFACE
					  : eng ? FL_DISPLAY_OBJ_ENGINE
						: FL_DISPLAY_OBJ_DEVICE,
					  intf	? intf->id
					  : eng ? eng->id
						: dev->id,
					  buf, &n);
		if (r)
			return fl__display_fail(e, r < 0 ? r : -EIO,
						"the driver failed to describe its object");
		/* A driver bug, not the caller's: never read past our buffer. */
		if (n > sizeof(buf))
			return fl__display_fail(e, -EIO,
						"the driver's custom data is %zu bytes, over %d", n,
						FL_DISPLAY_MAX_CUSTOM_DATA);
	}
	copy_out(dst, size_inout, buf, n, 1);
	return 0;
}

int fl__display_device_data(struct fl__display_device *dev, struct fl_display_device_data *data,
			    struct fl_display_error *e)
{
	const size_t elem = sizeof(struct fl_display_attachment);
	int r = check_room(data->attachments, data->n_attachments, FL_DISPLAY_MAX_ATTACHMENTS,
			   "attachments", e);

	if (!r)
		r = check_room(data->allowed, data->n_allowed, FL_DISPLAY_MAX_ATTACHMENTS,
			       "allowed attachments", e);
	if (!r)
		r = custom_out(dev, NULL, NULL, data->custom_data, &data->custom_data_size, e);
	if (r)
		return r;
	memcpy(data->name, dev->name, sizeof(data->name));
	copy_out(data->attachments, &data->n_attachments, dev->attached, dev->n_attached, elem);
	copy_out(data->allowed, &data->n_allowed, dev->allowed, dev->n_allowed, elem);
	return 0;
}

int fl__display_interface_data(struct fl__display_interface *intf,
			       struct fl_display_interface_data *data, struct fl_display_error *e)
{
	int r = check_room(data->modes, data->n_modes, FL_DISPLAY_MAX_MODES, "modes", e);

	if (!r)
		r = custom_out(intf->dev, intf, NULL, data->custom_data, &data->custom_data_size,
			       e);
	if (r)
		return r;
	memcpy(data->name, intf->name, sizeof(data->name));
	data->type = intf->type;
	data->id = intf->idx;
	data->flags = intf->flags;
	data->dpms_state = (uint8_t)intf->dpms;
	data->hotplug_detect = intf->connected;
	data->width_mm = intf->width_mm;
	data->height_mm = intf->height_mm;
	data->current_mode = intf->current;
	copy_out(data->modes, &data->n_modes, intf->modes, intf->n_modes, sizeof(*data->modes));
	return 0;
}

int fl__display_engine_data(struct fl__display_engine *eng, struct fl_display_engine_data *data,
			    struct fl_display_error *e)
{
	int r = check_room(data->formats, data->n_formats, FL_DISPLAY_MAX_FORMATS, "formats", e);

	if (!r)
		r = custom_out(eng->dev, NULL, eng, data->custom_data, &data->custom_data_size, e);
	if (r)
		return r;
	memcpy(data->name, eng->name, sizeof(data->name));
	copy_out(data->formats, &data->n_formats, eng->formats, eng->n_formats,
		 sizeof(*data->formats));
	return 0;
}

static int custom_format(struct fl__display_device *dev, const struct fl_display_driver_buffer *b,
			 size_t i, struct fl_display_error *e)
{
	struct fl_display_error mine = { 0 };
	char fcc[5];
	/* Listed by the engine, so the driver has the op (fl__display_engine_add()). */
	int r = dev->ops->validate_custom_format(dev->data, b, i, &mine);

	if (!r)
		return 0;
	if (r > 0)
		r = -EIO;
	/* The driver's reason if it gave one; the caller always gets one. */
	if (mine.msg[0])
		return fl__display_fail(e, r, "%s", mine.msg);
	return fl__display_fail(e, r, "buffer %zu: the driver refused custom format %s", i,
				fl__display_format_str(b->format, fcc));
}

int fl__display_post_check(struct fl__display_device *dev, const uint32_t *intf_ids, size_t n_intfs,
			   const struct fl_display_driver_buffer *bufs, size_t n_bufs,
			   size_t custom_size, struct fl_display_error *e)
{
	if (n_intfs > FL_DISPLAY_MAX_INTERFACES)
		return fl__display_fail(e, -EINVAL, "%zu interfaces in a post: at most %d", n_intfs,
					FL_DISPLAY_MAX_INTERFACES);
	if (n_bufs > FL_DISPLAY_MAX_BUFFERS)
		return fl__display_fail(e, -EINVAL, "%zu buffers in a post: at most %d", n_bufs,
					FL_DISPLAY_MAX_BUFFERS);
	if (custom_size > FL_DISPLAY_MAX_CUSTOM_DATA)
		return fl__display_fail(e, -EINVAL, "%zu bytes of custom data: at most %d",
					custom_size, FL_DISPLAY_MAX_CUSTOM_DATA);
	for (size_t i = 0; i < n_intfs; i++)
		if (!fl__display_interface_get(dev, intf_ids[i]))
			return fl__display_fail(e, -EINVAL,
						"interface %zu of the post: device %s has no "
						"interface %" PRIu32,
						i, dev->name, intf_ids[i]);
	/*
	 * A gang is one panel and its frame one picture: a post that named
	 * one link without the others would tear it (as KMS's tiled
	 * connectors, which userspace must commit together).
	 */
	for (size_t i = 0; i < n_intfs; i++) {
		const struct fl_display_gang *g = &dev->intfs[intf_ids[i]]->gang;

		for (uint32_t m = 0; m < g->n_members; m++) {
			bool named = false;

			for (size_t j = 0; j < n_intfs && !named; j++)
				named = intf_ids[j] == g->members[m];
			if (!named)
				return fl__display_fail(
					e, -EINVAL,
					"interface %zu of the post: interface %" PRIu32
					" is ganged with interface %" PRIu32
					", which the post does not name: a post names every "
					"member of a gang",
					i, intf_ids[i], g->members[m]);
		}
	}
	/* Import (spec §1.5 step 4) for all buffers before validating any. */
	for (size_t i = 0; i < n_bufs; i++) {
		if (bufs[i].n_planes > FL_DISPLAY_MAX_PLANES)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: %" PRIu32 " planes, at most %d", i,
						bufs[i].n_planes, FL_DISPLAY_MAX_PLANES);
		if (!fl__display_engine_get(dev, bufs[i].engine))
			return fl__display_fail(
				e, -ENOENT, "buffer %zu: device %s has no overlay engine %" PRIu32,
				i, dev->name, bufs[i].engine);
	}
	for (size_t i = 0; i < n_bufs; i++) {
		const struct fl_display_driver_buffer *b = &bufs[i];
		const struct fl__display_engine *eng = dev->engs[b->engine];
		char fcc[5];
		int r;

		if (!fl__display_engine_supports(eng, b->format))
			return fl__display_fail(
				e, -EINVAL, "buffer %zu: overlay engine %s does not scan out %s", i,
				eng->name, fl__display_format_str(b->format, fcc));
		if (fl__display_format_find(b->format))
			r = fl__display_buffer_check(b, i, dev->padding, e);
		else
			r = custom_format(dev, b, i, e);
		if (r)
			return r;
	}
	return 0;
}

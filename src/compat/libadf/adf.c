/* SPDX-License-Identifier: MIT */
/*
 * libadf (<adf/adf.h>) on the native display API (<fenceline/display.h>).
 *
 * libadf's calls take fds where the native API takes handles, so the fds
 * given out are dup()s of the handles' own event fds (pipes), and a table
 * finds the handle back from the file an fd refers to (its st_dev and
 * st_ino): any dup() of a given-out fd works, as any dup of an ADF node's fd
 * did. The caller close()s its fds, so the library cannot know when one goes;
 * it looks, at each open and device close, for the files no fd of the
 * process refers to besides the handle's own, and closes those handles.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <adf/adf.h>
#include <fenceline/display.h>
#include <fenceline/export.h>

#include "libadf-private.h"

/* The uapi structs the native API shares: libadf's arrays are handed over as they are. */
_Static_assert(sizeof(struct adf_attachment_config) == sizeof(struct fl_display_attachment),
	       "attachment layout");
_Static_assert(sizeof(struct drm_mode_modeinfo) == sizeof(struct fl_display_mode) &&
		       sizeof(struct drm_mode_modeinfo) == 68,
	       "mode layout");
_Static_assert(sizeof(struct adf_buffer_config) == 72 && ADF_MAX_BUFFERS == 56, "buffer layout");
_Static_assert(sizeof(struct adf_vsync_event) == 16 && sizeof(struct adf_hotplug_event) == 12,
	       "event layout");

struct entry {
	struct fl_display_handle *h;
	dev_t dev;
	ino_t ino;
	uint32_t kind;
	struct entry *next;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *table;

/* The handle of the file @fd refers to: -EBADF for no fd, -ENOTTY for a file not ours. */
static int lookup(int fd, struct fl_display_handle **ret, uint32_t *ret_kind)
{
	struct stat st;
	int r = -ENOTTY;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	pthread_mutex_lock(&table_lock);
	for (struct entry *e = table; e; e = e->next) {
		if (e->dev == st.st_dev && e->ino == st.st_ino) {
			*ret = e->h;
			if (ret_kind)
				*ret_kind = e->kind;
			r = 0;
			break;
		}
	}
	pthread_mutex_unlock(&table_lock);
	return r;
}

struct file_id {
	dev_t dev;
	ino_t ino;
};

/* The files the process's fds refer to, but for the handles' own fds. */
static size_t open_files(struct file_id **ret)
{
	struct file_id *ids = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	*ret = NULL;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct stat st;
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		bool own = false;

		if (*end || end == de->d_name || fd == dirfd(d) || fstat((int)fd, &st) < 0)
			continue;
		for (struct entry *e = table; e && !own; e = e->next)
			own = fl_display_get_fd(e->h) == fd;
		if (own)
			continue;
		if (n == cap) {
			struct file_id *m = realloc(ids, (cap = cap ? 2 * cap : 32) * sizeof(*ids));

			if (!m)
				break;
			ids = m;
		}
		ids[n++] = (struct file_id){ st.st_dev, st.st_ino };
	}
	closedir(d);
	*ret = ids;
	return n;
}

void fl__adf_reap(void)
{
	struct entry **pp, *dead = NULL;
	struct file_id *ids;
	size_t n;

	pthread_mutex_lock(&table_lock);
	n = open_files(&ids);
	/* Without the list (no /proc, no memory) every handle is kept: a leak, never a wrong close. */
	for (pp = &table; ids && *pp;) {
		struct entry *e = *pp;
		bool used = false;

		for (size_t i = 0; i < n && !used; i++)
			used = ids[i].dev == e->dev && ids[i].ino == e->ino;
		if (used) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = dead;
		dead = e;
	}
	pthread_mutex_unlock(&table_lock);
	free(ids);
	while (dead) {
		struct entry *e = dead;

		dead = e->next;
		fl_display_close(e->h);
		free(e);
	}
}

/* Gives the caller a new fd on @h and files the handle under it; takes @h in every case. */
static int give_out(struct fl_display_handle *h, uint32_t kind, int flags)
{
	struct entry *e = malloc(sizeof(*e));
	struct stat st;
	int fd;

	if (!e) {
		fl_display_close(h);
		return -ENOMEM;
	}
	fd = fcntl(fl_display_get_fd(h), (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = -errno;

		if (fd >= 0)
			close(fd);
		free(e);
		fl_display_close(h);
		return r;
	}
	if (flags & O_NONBLOCK)
		(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	*e = (struct entry){ h, st.st_dev, st.st_ino, kind, NULL };
	pthread_mutex_lock(&table_lock);
	e->next = table;
	table = e;
	pthread_mutex_unlock(&table_lock);
	return fd;
}

/* The handle of an fd given out for an object of @kind; -EINVAL for another kind (ADF's wrong-object error). */
static int handle_of(int fd, uint32_t kind, struct fl_display_handle **ret)
{
	uint32_t k;
	int r = lookup(fd, ret, &k);

	if (r == 0 && k != kind)
		return -EINVAL;
	return r;
}

/*
 * @dev's device handle, from @dev->fd as libadf's ioctls used it. The calls
 * that found objects by the device's id alone (@by_id: the enumerations and
 * the opens) work as libadf's with a closed or foreign @dev->fd: a handle is
 * then opened for the call (*@tmp, for put_device()).
 */
static int get_device(struct adf_device *dev, bool by_id, struct fl_display_handle **ret,
		      struct fl_display_handle **tmp)
{
	int r;

	*tmp = NULL;
	if (!dev)
		return -EFAULT;
	r = handle_of(dev->fd, FL_DISPLAY_OBJ_DEVICE, ret);
	if (r == 0 || !by_id)
		return r;
	r = fl_display_device_open(dev->id, tmp);
	if (r == -ENODEV)
		return -ENOENT;
	*ret = *tmp;
	return r;
}

static void put_device(struct fl_display_handle *tmp)
{
	fl_display_close(tmp);
}

/* An array of @n elements for the second query, NULL for none; clears *@ok when out of memory. */
static void *room(size_t n, size_t elem, bool *ok)
{
	void *a = n ? calloc(n, elem) : NULL;

	if (n && !a)
		*ok = false;
	return a;
}

/* What the second query copied: counts that grew since the first are cut to the arrays libadf made. */
static size_t cut(size_t got, size_t made)
{
	return got < made ? got : made;
}

static ssize_t id_array(const adf_id_t *ids, size_t n, adf_id_t **out)
{
	/* Never NULL, also for none: callers free() it and test it. */
	adf_id_t *a = malloc(n ? n * sizeof(*a) : 1);

	if (!a)
		return -ENOMEM;
	if (n)
		memcpy(a, ids, n * sizeof(*a));
	*out = a;
	return (ssize_t)n;
}

FL_EXPORT ssize_t adf_devices(adf_id_t **ids)
{
	uint32_t *native = NULL;
	int n = fl_display_devices(&native);
	ssize_t r;

	if (n < 0)
		return n;
	r = id_array(native, (size_t)n, ids);
	free(native);
	return r;
}

FL_EXPORT int adf_device_open(adf_id_t id, int flags, struct adf_device *dev)
{
	struct fl_display_handle *h;
	int r, fd;

	dev->id = id;
	dev->fd = -1;
	fl__adf_reap();
	r = fl_display_device_open(id, &h);
	if (r < 0)
		return r == -ENODEV ? -ENOENT : r;
	fd = give_out(h, FL_DISPLAY_OBJ_DEVICE, flags);
	if (fd < 0)
		return fd;
	dev->fd = fd;
	return 0;
}

FL_EXPORT void adf_device_close(struct adf_device *dev)
{
	/* -1 after: libadf left the number, which a second close could take from another file. */
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = -1;
	fl__adf_reap();
}

FL_EXPORT int adf_get_device_data(struct adf_device *dev, struct adf_device_data *data)
{
	struct fl_display_device_data d = { 0 };
	struct fl_display_handle *h, *tmp;
	size_t na, nl, nc;
	bool ok = true;
	int r;

	memset(data, 0, sizeof(*data));
	if (get_device(dev, false, &h, &tmp) < 0)
		return -ENOMEM; /* libadf's: any failure of the first query */
	if (fl_display_device_get_data(h, &d, NULL) < 0) {
		put_device(tmp);
		return -ENOMEM;
	}
	na = d.n_attachments;
	nl = d.n_allowed;
	nc = d.custom_data_size;
	d.attachments = room(na, sizeof(*d.attachments), &ok);
	d.allowed = room(nl, sizeof(*d.allowed), &ok);
	d.custom_data = room(nc, 1, &ok);
	data->attachments = (struct adf_attachment_config *)d.attachments;
	data->allowed_attachments = (struct adf_attachment_config *)d.allowed;
	data->custom_data = d.custom_data;
	r = ok ? fl_display_device_get_data(h, &d, NULL) : -ENOMEM;
	data->n_attachments = cut(d.n_attachments, na);
	data->n_allowed_attachments = cut(d.n_allowed, nl);
	data->custom_data_size = cut(d.custom_data_size, nc);
	memcpy(data->name, d.name, ADF_NAME_LEN);
	put_device(tmp);
	if (r < 0) {
		adf_free_device_data(data);
		memset(data, 0, sizeof(*data));
	}
	return r;
}

FL_EXPORT void adf_free_device_data(struct adf_device_data *data)
{
	/* NULL after, as libadf's last version: a second free is harmless. */
	free(data->attachments);
	data->attachments = NULL;
	free(data->allowed_attachments);
	data->allowed_attachments = NULL;
	free(data->custom_data);
	data->custom_data = NULL;
}

/* @bufs as the native API's; NULL and *@err set on failure. */
static struct fl_display_buffer *native_bufs(const struct adf_buffer_config *bufs, size_t n,
					     int *err)
{
	struct fl_display_buffer *b;

	/* ADF checks the counts before it reads a buffer: so does this, before it allocates. */
	if (n > ADF_MAX_BUFFERS || (n && !bufs)) {
		*err = n > ADF_MAX_BUFFERS ? -EINVAL : -EFAULT;
		return NULL;
	}
	b = calloc(n ? n : 1, sizeof(*b));
	if (!b) {
		*err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		b[i] = (struct fl_display_buffer){
			.engine = bufs[i].overlay_engine,
			.w = bufs[i].w,
			.h = bufs[i].h,
			.format = bufs[i].format,
			.n_planes = bufs[i].n_planes,
			.acquire_fence = bufs[i].acquire_fence < 0 ? -1 : bufs[i].acquire_fence
		};
		/* Planes past n_planes are ignored, as ADF does; more than 4 the service refuses. */
		for (size_t p = 0; p < ADF_MAX_PLANES; p++) {
			b[i].fd[p] = p < bufs[i].n_planes ? bufs[i].fd[p] : -1;
			b[i].offset[p] = bufs[i].offset[p];
			b[i].pitch[p] = bufs[i].pitch[p];
		}
	}
	return b;
}

static int post(struct adf_device *dev, adf_id_t *interfaces, size_t n_interfaces,
		struct adf_buffer_config *bufs, size_t n_bufs, void *custom_data,
		uint64_t custom_data_size, uint32_t type, int *fence)
{
	struct fl_display_handle *h, *tmp;
	struct fl_display_buffer *b;
	struct fl_display_post p;
	int r;

	if (n_interfaces > ADF_MAX_INTERFACES || n_bufs > ADF_MAX_BUFFERS ||
	    custom_data_size > ADF_MAX_CUSTOM_DATA_SIZE)
		return -EINVAL;
	/* Arrays the kernel would have copied from NULL: copy_from_user()'s -EFAULT. */
	if (n_interfaces && !interfaces)
		return -EFAULT;
	b = native_bufs(bufs, n_bufs, &r);
	if (!b)
		return r;
	if (custom_data_size && !custom_data) {
		free(b);
		return -EFAULT;
	}
	r = get_device(dev, false, &h, &tmp);
	if (r == 0) {
		p = (struct fl_display_post){ .intfs = interfaces,
					      .n_intfs = n_interfaces,
					      .bufs = b,
					      .n_bufs = n_bufs,
					      .custom = custom_data,
					      .custom_size = (size_t)custom_data_size,
					      .fence_type = type };
		r = fl_display_post(h, &p, fence, NULL);
		put_device(tmp);
	}
	free(b);
	return r;
}

FL_EXPORT int adf_device_post(struct adf_device *dev, adf_id_t *interfaces, size_t n_interfaces,
			      struct adf_buffer_config *bufs, size_t n_bufs, void *custom_data,
			      size_t custom_data_size)
{
	int fence = -1;
	int r = post(dev, interfaces, n_interfaces, bufs, n_bufs, custom_data, custom_data_size,
		     FL_DISPLAY_FENCE_RELEASE, &fence);

	return r < 0 ? r : fence;
}

FL_EXPORT int adf_device_post_v2(struct adf_device *dev, adf_id_t *interfaces, __u32 n_interfaces,
				 struct adf_buffer_config *bufs, __u32 n_bufs, void *custom_data,
				 __u64 custom_data_size,
				 enum adf_complete_fence_type complete_fence_type,
				 int *complete_fence)
{
	/* The uapi field is a __u8: the type the kernel saw was the low byte. */
	return post(dev, interfaces, n_interfaces, bufs, n_bufs, custom_data, custom_data_size,
		    (uint8_t)complete_fence_type, complete_fence);
}

static int attachment(struct adf_device *dev, adf_id_t eng, adf_id_t intf, bool attach)
{
	struct fl_display_handle *h, *tmp;
	int r = get_device(dev, false, &h, &tmp);

	if (r < 0)
		return r;
	r = attach ? fl_display_attach(h, eng, intf, NULL) : fl_display_detach(h, eng, intf, NULL);
	put_device(tmp);
	return r;
}

FL_EXPORT int adf_device_attach(struct adf_device *dev, adf_id_t overlay_engine, adf_id_t interface)
{
	return attachment(dev, overlay_engine, interface, true);
}

FL_EXPORT int adf_device_detach(struct adf_device *dev, adf_id_t overlay_engine, adf_id_t interface)
{
	return attachment(dev, overlay_engine, interface, false);
}

/*
 * The ids of @dev's objects of @kind: 0, 1, … up to the device's count
 * (docs/display.md), as libadf's scan of /dev found them.
 */
static ssize_t objects(struct adf_device *dev, uint32_t kind, adf_id_t **out)
{
	struct fl_display_device_info info;
	struct fl_display_handle *h, *tmp;
	adf_id_t *ids;
	size_t n;
	ssize_t r = get_device(dev, true, &h, &tmp);

	/* libadf's scan of /dev found no node of a device that does not exist: none, no error. */
	if (r == -ENOENT)
		return id_array(NULL, 0, out);
	if (r < 0)
		return r;
	r = fl_display_device_get_info(h, &info, sizeof(info), NULL);
	put_device(tmp);
	if (r < 0)
		return r;
	n = kind == FL_DISPLAY_OBJ_INTERFACE ? info.n_interfaces : info.n_engines;
	/* Never NULL, also for none: callers free() it and test it. */
	ids = malloc(n ? n * sizeof(*ids) : 1);
	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		ids[i] = (adf_id_t)i;
	*out = ids;
	return (ssize_t)n;
}

FL_EXPORT ssize_t adf_interfaces(struct adf_device *dev, adf_id_t **interfaces)
{
	return objects(dev, FL_DISPLAY_OBJ_INTERFACE, interfaces);
}

FL_EXPORT ssize_t adf_overlay_engines(struct adf_device *dev, adf_id_t **overlay_engines)
{
	return objects(dev, FL_DISPLAY_OBJ_ENGINE, overlay_engines);
}

/* The other half of the allowed pairs whose @engine_side half is @id. */
static ssize_t allowed_with(struct adf_device *dev, adf_id_t id, bool engine_side, adf_id_t **out)
{
	struct adf_device_data data;
	adf_id_t *ids;
	size_t n = 0;
	ssize_t r = adf_get_device_data(dev, &data);

	if (r < 0)
		return r;
	ids = malloc((data.n_allowed_attachments ? data.n_allowed_attachments : 1) * sizeof(*ids));
	if (!ids) {
		adf_free_device_data(&data);
		return -ENOMEM;
	}
	for (size_t i = 0; i < data.n_allowed_attachments; i++) {
		const struct adf_attachment_config *a = &data.allowed_attachments[i];

		if ((engine_side ? a->overlay_engine : a->interface) == id)
			ids[n++] = engine_side ? a->interface : a->overlay_engine;
	}
	adf_free_device_data(&data);
	r = id_array(ids, n, out);
	free(ids);
	return r;
}

FL_EXPORT ssize_t adf_interfaces_for_overlay_engine(struct adf_device *dev, adf_id_t overlay_engine,
						    adf_id_t **interfaces)
{
	return allowed_with(dev, overlay_engine, true, interfaces);
}

FL_EXPORT ssize_t adf_overlay_engines_for_interface(struct adf_device *dev, adf_id_t interface,
						    adf_id_t **overlay_engines)
{
	return allowed_with(dev, interface, false, overlay_engines);
}

/*
 * Keeps the @in ids whose object @keep() accepts (1; 0 drops, -errno fails
 * the filter); opens each, as libadf did.
 */
static ssize_t filter(struct adf_device *dev, bool engines, const adf_id_t *in, size_t n_in,
		      adf_id_t **out, int (*keep)(int fd, const void *arg), const void *arg)
{
	adf_id_t *ids;
	size_t n = 0;
	ssize_t r;

	if (n_in && !in)
		return -EFAULT;
	ids = malloc((n_in ? n_in : 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (size_t i = 0; i < n_in; i++) {
		int fd = engines ? adf_overlay_engine_open(dev, in[i], O_RDONLY | O_CLOEXEC)
				 : adf_interface_open(dev, in[i], O_RDONLY | O_CLOEXEC);
		int k;

		if (fd < 0) {
			free(ids);
			return fd;
		}
		k = keep(fd, arg);
		close(fd);
		if (k < 0) {
			free(ids);
			return k;
		}
		if (k)
			ids[n++] = in[i];
	}
	r = id_array(ids, n, out);
	free(ids);
	fl__adf_reap();
	return r;
}

struct intf_match {
	bool by_flag;
	__u32 value;
};

/* 1 to keep, 0 not, -errno when the data cannot be had (errno is left alone: libadf's was). */
static int intf_keep(int fd, const void *arg)
{
	const struct intf_match *m = arg;
	struct adf_interface_data d;
	int r = adf_get_interface_data(fd, &d);
	int k;

	if (r < 0)
		return r;
	k = m->by_flag ? (d.flags & m->value) != 0 : d.type == m->value;
	adf_free_interface_data(&d);
	return k;
}

FL_EXPORT ssize_t adf_interfaces_filter_by_type(struct adf_device *dev,
						enum adf_interface_type type, adf_id_t *in,
						size_t n_in, adf_id_t **out)
{
	struct intf_match m = { false, (__u32)type };

	return filter(dev, false, in, n_in, out, intf_keep, &m);
}

FL_EXPORT ssize_t adf_interfaces_filter_by_flag(struct adf_device *dev, __u32 flag, adf_id_t *in,
						size_t n_in, adf_id_t **out)
{
	struct intf_match m = { true, flag };

	return filter(dev, false, in, n_in, out, intf_keep, &m);
}

struct format_match {
	const __u32 *formats;
	size_t n;
};

/* As intf_keep(), for an engine listing one of the formats. */
static int engine_keep(int fd, const void *arg)
{
	const struct format_match *m = arg;
	struct adf_overlay_engine_data d;
	int r = adf_get_overlay_engine_data(fd, &d);
	int k = 0;

	if (r < 0)
		return r;
	for (size_t i = 0; i < d.n_supported_formats && !k; i++)
		for (size_t j = 0; j < m->n && !k; j++)
			k = d.supported_formats[i] == m->formats[j];
	adf_free_overlay_engine_data(&d);
	return k;
}

FL_EXPORT ssize_t adf_overlay_engines_filter_by_format(struct adf_device *dev, const __u32 *formats,
						       size_t n_formats, adf_id_t *in, size_t n_in,
						       adf_id_t **out)
{
	struct format_match m = { formats, formats ? n_formats : 0 };

	return filter(dev, true, in, n_in, out, engine_keep, &m);
}

static int open_object(struct adf_device *dev, adf_id_t id, int flags, uint32_t kind)
{
	struct fl_display_handle *h, *tmp, *o;
	int r;

	fl__adf_reap();
	r = get_device(dev, true, &h, &tmp);
	if (r < 0)
		return r;
	r = kind == FL_DISPLAY_OBJ_INTERFACE ? fl_display_interface_open(h, id, &o)
					     : fl_display_engine_open(h, id, &o);
	put_device(tmp);
	if (r < 0)
		return r == -ENODEV ? -ENOENT : r;
	return give_out(o, kind, flags);
}

FL_EXPORT int adf_interface_open(struct adf_device *dev, adf_id_t id, int flags)
{
	return open_object(dev, id, flags, FL_DISPLAY_OBJ_INTERFACE);
}

FL_EXPORT int adf_overlay_engine_open(struct adf_device *dev, adf_id_t id, int flags)
{
	return open_object(dev, id, flags, FL_DISPLAY_OBJ_ENGINE);
}

FL_EXPORT int adf_get_interface_data(int fd, struct adf_interface_data *data)
{
	struct fl_display_interface_data d = { 0 };
	struct fl_display_handle *h;
	size_t nm, nc;
	bool ok = true;
	int r;

	memset(data, 0, sizeof(*data));
	r = handle_of(fd, FL_DISPLAY_OBJ_INTERFACE, &h);
	if (r == 0)
		r = fl_display_interface_get_data(h, &d, NULL);
	if (r < 0)
		return r;
	nm = d.n_modes;
	nc = d.custom_data_size;
	d.modes = room(nm, sizeof(*d.modes), &ok);
	d.custom_data = room(nc, 1, &ok);
	data->available_modes = (struct drm_mode_modeinfo *)d.modes;
	data->custom_data = d.custom_data;
	r = ok ? fl_display_interface_get_data(h, &d, NULL) : -ENOMEM;
	if (r < 0) {
		adf_free_interface_data(data);
		memset(data, 0, sizeof(*data));
		return r;
	}
	memcpy(data->name, d.name, ADF_NAME_LEN);
	data->type = d.type;
	data->id = d.id;
	data->flags = d.flags;
	data->dpms_state = d.dpms_state;
	data->hotplug_detect = d.hotplug_detect;
	data->width_mm = d.width_mm;
	data->height_mm = d.height_mm;
	memcpy(&data->current_mode, &d.current_mode, sizeof(data->current_mode));
	data->n_available_modes = cut(d.n_modes, nm);
	data->custom_data_size = cut(d.custom_data_size, nc);
	return 0;
}

FL_EXPORT void adf_free_interface_data(struct adf_interface_data *data)
{
	/* NULL after, as libadf's last version: a second free is harmless. */
	free(data->available_modes);
	data->available_modes = NULL;
	free(data->custom_data);
	data->custom_data = NULL;
}

FL_EXPORT int adf_interface_blank(int fd, __u8 mode)
{
	struct fl_display_handle *h;
	int r = handle_of(fd, FL_DISPLAY_OBJ_INTERFACE, &h);

	return r < 0 ? r : fl_display_blank(h, mode, NULL);
}

FL_EXPORT int adf_interface_set_mode(int fd, struct drm_mode_modeinfo *mode)
{
	struct fl_display_mode m;
	struct fl_display_handle *h;
	int r = handle_of(fd, FL_DISPLAY_OBJ_INTERFACE, &h);

	if (r < 0)
		return r;
	if (!mode)
		return -EFAULT;
	memcpy(&m, mode, sizeof(m));
	return fl_display_set_mode(h, &m, NULL);
}

FL_EXPORT int adf_interface_simple_buffer_alloc(int fd, __u32 w, __u32 h, __u32 format,
						__u32 *offset, __u32 *pitch)
{
	struct fl_display_handle *intf;
	int r = handle_of(fd, FL_DISPLAY_OBJ_INTERFACE, &intf), buf;

	if (r < 0)
		return r;
	if (!offset || !pitch)
		return -EFAULT;
	r = fl_display_simple_buffer_alloc(intf, w, h, format, &buf, offset, pitch, NULL);
	return r < 0 ? r : buf;
}

static int simple_post(int fd, adf_id_t eng, __u32 w, __u32 h, __u32 format, int buf_fd,
		       __u32 offset, __u32 pitch, int acquire_fence, uint32_t type, int *fence)
{
	struct fl_display_buffer b = { .engine = eng,
				       .w = w,
				       .h = h,
				       .format = format,
				       .n_planes = 1,
				       .fd = { buf_fd, -1, -1, -1 },
				       .offset = { offset },
				       .pitch = { pitch },
				       .acquire_fence = acquire_fence < 0 ? -1 : acquire_fence };
	struct fl_display_handle *intf;
	int r = handle_of(fd, FL_DISPLAY_OBJ_INTERFACE, &intf);

	return r < 0 ? r : fl_display_simple_post(intf, &b, type, fence, NULL);
}

FL_EXPORT int adf_interface_simple_post(int fd, adf_id_t overlay_engine, __u32 w, __u32 h,
					__u32 format, int buf_fd, __u32 offset, __u32 pitch,
					int acquire_fence)
{
	int fence = -1;
	int r = simple_post(fd, overlay_engine, w, h, format, buf_fd, offset, pitch, acquire_fence,
			    FL_DISPLAY_FENCE_RELEASE, &fence);

	return r < 0 ? r : fence;
}

FL_EXPORT int adf_interface_simple_post_v2(int fd, adf_id_t overlay_engine, __u32 w, __u32 h,
					   __u32 format, int buf_fd, __u32 offset, __u32 pitch,
					   int acquire_fence,
					   enum adf_complete_fence_type complete_fence_type,
					   int *complete_fence)
{
	return simple_post(fd, overlay_engine, w, h, format, buf_fd, offset, pitch, acquire_fence,
			   (uint8_t)complete_fence_type, complete_fence);
}

FL_EXPORT int adf_get_overlay_engine_data(int fd, struct adf_overlay_engine_data *data)
{
	struct fl_display_engine_data d = { 0 };
	struct fl_display_handle *h;
	size_t nf, nc;
	bool ok = true;
	int r;

	memset(data, 0, sizeof(*data));
	r = handle_of(fd, FL_DISPLAY_OBJ_ENGINE, &h);
	if (r == 0)
		r = fl_display_engine_get_data(h, &d, NULL);
	if (r < 0)
		return r;
	nf = d.n_formats;
	nc = d.custom_data_size;
	d.formats = room(nf, sizeof(*d.formats), &ok);
	d.custom_data = room(nc, 1, &ok);
	data->supported_formats = d.formats;
	data->custom_data = d.custom_data;
	r = ok ? fl_display_engine_get_data(h, &d, NULL) : -ENOMEM;
	if (r < 0) {
		adf_free_overlay_engine_data(data);
		memset(data, 0, sizeof(*data));
		return r;
	}
	memcpy(data->name, d.name, ADF_NAME_LEN);
	data->n_supported_formats = cut(d.n_formats, nf);
	data->custom_data_size = cut(d.custom_data_size, nc);
	return 0;
}

FL_EXPORT void adf_free_overlay_engine_data(struct adf_overlay_engine_data *data)
{
	/* NULL after, as libadf's last version: a second free is harmless. */
	free(data->supported_formats);
	data->supported_formats = NULL;
	free(data->custom_data);
	data->custom_data = NULL;
}

FL_EXPORT bool adf_overlay_engine_supports_format(int fd, __u32 format)
{
	struct format_match m = { &format, 1 };

	return engine_keep(fd, &m) > 0;
}

FL_EXPORT int adf_set_event(int fd, enum adf_event_type type, bool enabled)
{
	struct fl_display_handle *h;
	int r = lookup(fd, &h, NULL);

	/* struct adf_set_event carries a __u8. */
	return r < 0 ? r : fl_display_set_event(h, (uint8_t)type, enabled, NULL);
}

/* The native reader reads ADF's stream: the same header, so the same event. */
_Static_assert(sizeof(struct adf_event) == sizeof(struct fl_display_event) &&
		       offsetof(struct adf_event, length) ==
			       offsetof(struct fl_display_event, length),
	       "struct adf_event is struct fl_display_event");

FL_EXPORT int adf_read_event(int fd, struct adf_event **event)
{
	struct fl_display_event *ev;
	int r = fl_display_read_event_fd(fd, &ev);

	if (r == 0)
		*event = (struct adf_event *)ev;
	return r;
}

FL_EXPORT void adf_format_str(__u32 format, char buf[ADF_FORMAT_STR_SIZE])
{
	for (int i = 0; i < 4; i++)
		buf[i] = (char)(format >> (8 * i));
	buf[4] = '\0';
}

/* ADF's RGB list (adf_format_is_rgb(), without the 4444 family): what NULL formats mean. */
static const __u32 any_rgb[] = {
	DRM_FORMAT_C8,		DRM_FORMAT_RGB332,	DRM_FORMAT_BGR233,
	DRM_FORMAT_XRGB1555,	DRM_FORMAT_XBGR1555,	DRM_FORMAT_RGBX5551,
	DRM_FORMAT_BGRX5551,	DRM_FORMAT_ARGB1555,	DRM_FORMAT_ABGR1555,
	DRM_FORMAT_RGBA5551,	DRM_FORMAT_BGRA5551,	DRM_FORMAT_RGB565,
	DRM_FORMAT_BGR565,	DRM_FORMAT_RGB888,	DRM_FORMAT_BGR888,
	DRM_FORMAT_XRGB8888,	DRM_FORMAT_XBGR8888,	DRM_FORMAT_RGBX8888,
	DRM_FORMAT_BGRX8888,	DRM_FORMAT_XRGB2101010, DRM_FORMAT_XBGR2101010,
	DRM_FORMAT_RGBX1010102, DRM_FORMAT_BGRX1010102, DRM_FORMAT_ARGB2101010,
	DRM_FORMAT_ABGR2101010, DRM_FORMAT_RGBA1010102, DRM_FORMAT_BGRA1010102,
	DRM_FORMAT_ARGB8888,	DRM_FORMAT_ABGR8888,	DRM_FORMAT_RGBA8888,
	DRM_FORMAT_BGRA8888,
};

/* The first engine allowed with @intf listing one of @formats. */
static bool engine_for(struct adf_device *dev, const __u32 *formats, size_t n_formats,
		       adf_id_t intf, adf_id_t *eng)
{
	adf_id_t *engs, *fit;
	ssize_t n = adf_overlay_engines_for_interface(dev, intf, &engs), nf;

	if (n <= 0) {
		if (n == 0)
			free(engs);
		return false;
	}
	nf = adf_overlay_engines_filter_by_format(dev, formats, n_formats, engs, (size_t)n, &fit);
	free(engs);
	if (nf < 0)
		return false;
	if (nf > 0)
		*eng = fit[0];
	free(fit);
	return nf > 0;
}

FL_EXPORT int adf_find_simple_post_configuration(struct adf_device *dev, const __u32 *formats,
						 size_t n_formats, adf_id_t *interface,
						 adf_id_t *overlay_engine)
{
	adf_id_t *intfs, *primary;
	ssize_t n = adf_interfaces(dev, &intfs), np;
	bool found = false;

	if (n <= 0) {
		if (n == 0)
			free(intfs);
		return n < 0 ? (int)n : -ENODEV;
	}
	np = adf_interfaces_filter_by_flag(dev, ADF_INTF_FLAG_PRIMARY, intfs, (size_t)n, &primary);
	free(intfs);
	if (np <= 0) {
		if (np == 0)
			free(primary);
		return np < 0 ? (int)np : -ENODEV;
	}
	if (!formats) {
		formats = any_rgb;
		n_formats = sizeof(any_rgb) / sizeof(any_rgb[0]);
	}
	for (ssize_t i = 0; i < np && !found; i++) {
		found = engine_for(dev, formats, n_formats, primary[i], overlay_engine);
		if (found)
			*interface = primary[i];
	}
	free(primary);
	return found ? 0 : -ENODEV;
}

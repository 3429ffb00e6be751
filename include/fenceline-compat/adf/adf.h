/* SPDX-License-Identifier: MIT */
/*
 * fenceline's libadf compatibility API: AOSP libadf's <adf/adf.h> (its last
 * version, with the V2 posts and adf_find_simple_post_configuration()),
 * every function with libadf's signature and errors, served by fenceline's
 * display service (docs/display.md) through the native API
 * (<fenceline/display.h>). docs/compat.md ("libadf and libadfhwc") says
 * what is exact and what differs.
 *
 * Every function returns -errno on failure, as libadf does; besides the
 * errors named below, any call may return the native API's (-ECONNREFUSED:
 * no display service could be started; -ECONNRESET: it went away).
 *
 * Objects and fds. There is no /dev/adf*: adf_devices() asks the service,
 * and adf_device_open(), adf_interface_open() and adf_overlay_engine_open()
 * open a native handle and return a new fd on it (a pipe: poll() it, read()
 * its events, as ADF's fds). The fds are the caller's: close() an
 * interface's or engine's fd, adf_device_close() a device. Behind each fd the
 * library keeps the native handle in a table keyed by the fd's file, so
 * dup()s of the fd work too; the handle is let go once no fd of the process
 * refers to that file, which the library checks at the next
 * adf_*_open(), adf_device_close() or adf_hwc_close(). As with ADF, an
 * interface fd stays usable after its device is closed. The functions that
 * take an fd return -EBADF for a closed one and -ENOTTY (what ioctl() gave
 * for a file that is not ADF's) for an fd the library did not give out.
 */
#ifndef _LIBADF_ADF_H_
#define _LIBADF_ADF_H_

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <video/adf.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef __u32 adf_id_t;

/* An open device: its id and an fd the caller holds (adf_device_close() closes it). */
struct adf_device {
	adf_id_t id;
	int fd;
};

/**
 * adf_devices() - the ids of the display service's devices
 * @ids: set to a malloc()ed array, the caller's to free(); never NULL on
 *	success, also with no device
 * Return: how many, or -errno.
 */
ssize_t adf_devices(adf_id_t **ids);

/**
 * adf_device_open() - open device @id into @dev
 * @flags: open(2) flags; O_CLOEXEC and O_NONBLOCK apply to the fd, the
 *	access mode is not checked (the service has no permissions per object)
 * Return: 0; -ENOENT (no such device: open() of a missing /dev/adf<id>).
 */
int adf_device_open(adf_id_t id, int flags, struct adf_device *dev);

/*
 * Close @dev's fd (not when it is negative) and set it to -1; the handles of
 * every fd closed so far go with it.
 */
void adf_device_close(struct adf_device *dev);

/**
 * adf_get_device_data() - @dev's name, attachments, allowed attachments and
 * custom data, in arrays allocated here (free them with
 * adf_free_device_data())
 *
 * libadf's quirk: when the first query fails the return is -ENOMEM, not its
 * errno. Counts that grow between the two queries are cut to the arrays.
 * Return: 0, -ENOMEM, the second query's -errno (nothing to free then).
 */
int adf_get_device_data(struct adf_device *dev, struct adf_device_data *data);

/* Free what adf_get_device_data() allocated in @data, and set its pointers to NULL. */
void adf_free_device_data(struct adf_device_data *data);

/**
 * adf_device_post() - post a whole frame: @bufs on @interfaces, with
 * driver @custom_data (V1, ADF_POST_CONFIG)
 *
 * The fds in @bufs stay the caller's. Checked before it returns (every
 * error is the post's own; nothing is queued on failure).
 * Return: a release fence fd, the caller's, that signals when this frame
 * has left the screen; -EINVAL (counts over ADF_MAX_*, an unknown interface,
 * a buffer that breaks ADF's rules, an acquire fence that is not an open
 * fence fd...), -EFAULT (a NULL array with a count or size, as the ioctl's
 * copy), -EBADF (a plane fd that is not open), -ENOENT (an unknown overlay
 * engine).
 */
int adf_device_post(struct adf_device *dev, adf_id_t *interfaces, size_t n_interfaces,
		    struct adf_buffer_config *bufs, size_t n_bufs, void *custom_data,
		    size_t custom_data_size);

/**
 * adf_device_post_v2() - as adf_device_post(), with the fence of
 * @complete_fence_type in *@complete_fence (-1 for NONE); a NULL
 * @complete_fence closes it
 * Return: 0 or as adf_device_post() (never -ENOTTY: the service has V2);
 * -EINVAL for a @complete_fence_type (its low byte, the uapi's __u8) that
 * is not NONE, PRESENT or RELEASE. *@complete_fence is set only on success.
 */
int adf_device_post_v2(struct adf_device *dev, adf_id_t *interfaces, __u32 n_interfaces,
		       struct adf_buffer_config *bufs, __u32 n_bufs, void *custom_data,
		       __u64 custom_data_size, enum adf_complete_fence_type complete_fence_type,
		       int *complete_fence);

/**
 * adf_device_attach() - attach @overlay_engine to @interface
 * Return: 0; -EALREADY; -EINVAL (an unknown id, a pair not allowed).
 */
int adf_device_attach(struct adf_device *dev, adf_id_t overlay_engine, adf_id_t interface);

/* Detach them. Return: 0; -EINVAL (unknown id, not attached). */
int adf_device_detach(struct adf_device *dev, adf_id_t overlay_engine, adf_id_t interface);

/**
 * adf_interfaces() - the ids of @dev's interfaces, in a malloc()ed array
 * (the caller's)
 * Return: how many (0 when there is no device @dev->id, as libadf's scan of
 * /dev found none), or -errno.
 */
ssize_t adf_interfaces(struct adf_device *dev, adf_id_t **interfaces);

/* The interfaces @overlay_engine may be attached to (its allowed pairs); as adf_interfaces(). */
ssize_t adf_interfaces_for_overlay_engine(struct adf_device *dev, adf_id_t overlay_engine,
					  adf_id_t **interfaces);

/**
 * adf_interfaces_filter_by_type() - those of the @n_in ids in @in whose
 * type is @type, in a malloc()ed *@out
 * Return: how many; -errno of the first interface that cannot be opened
 * or queried.
 */
ssize_t adf_interfaces_filter_by_type(struct adf_device *dev, enum adf_interface_type type,
				      adf_id_t *in, size_t n_in, adf_id_t **out);

/* As adf_interfaces_filter_by_type(), keeping those with any bit of @flag. */
ssize_t adf_interfaces_filter_by_flag(struct adf_device *dev, __u32 flag, adf_id_t *in, size_t n_in,
				      adf_id_t **out);

/**
 * adf_interface_open() - open interface @id of @dev
 * @flags: as adf_device_open()'s
 * Return: an fd, the caller's to close(); -ENOENT (no such interface).
 */
int adf_interface_open(struct adf_device *dev, adf_id_t id, int flags);

/* As adf_get_device_data(), for an interface fd (but every error is its -errno). */
int adf_get_interface_data(int fd, struct adf_interface_data *data);

/* Free what adf_get_interface_data() allocated, and set its pointers to NULL. */
void adf_free_interface_data(struct adf_interface_data *data);

/**
 * adf_interface_blank() - set the interface's DPMS state (DRM_MODE_DPMS_*)
 * Return: 0; -EINVAL (a state above OFF, an fd of an overlay engine or a
 * device); -EBUSY (already in that state).
 */
int adf_interface_blank(int fd, __u8 mode);

/* Switch the interface to @mode (not checked against its list: the driver decides). */
int adf_interface_set_mode(int fd, struct drm_mode_modeinfo *mode);

/**
 * adf_interface_simple_buffer_alloc() - a @w × @h single-plane buffer in
 * RGB @format the interface can scan out
 * Return: its fd (the caller's: mmap() @pitch × @h bytes at @offset);
 * -EINVAL (a format not in ADF's RGB list, a size of 0 or above 65535).
 */
int adf_interface_simple_buffer_alloc(int fd, __u32 w, __u32 h, __u32 format, __u32 *offset,
				      __u32 *pitch);

/**
 * adf_interface_simple_post() - show one buffer on the interface through
 * @overlay_engine, without driver data
 * @acquire_fence: a fence fd to wait for (borrowed), or -1
 * Return: a release fence fd (the caller's), or as adf_device_post().
 */
int adf_interface_simple_post(int fd, adf_id_t overlay_engine, __u32 w, __u32 h, __u32 format,
			      int buf_fd, __u32 offset, __u32 pitch, int acquire_fence);

/* As adf_interface_simple_post(), with the fence choice of adf_device_post_v2(). */
int adf_interface_simple_post_v2(int fd, adf_id_t overlay_engine, __u32 w, __u32 h, __u32 format,
				 int buf_fd, __u32 offset, __u32 pitch, int acquire_fence,
				 enum adf_complete_fence_type complete_fence_type,
				 int *complete_fence);

/* The ids of @dev's overlay engines; as adf_interfaces(). */
ssize_t adf_overlay_engines(struct adf_device *dev, adf_id_t **overlay_engines);

/* The overlay engines that may be attached to @interface; as adf_interfaces(). */
ssize_t adf_overlay_engines_for_interface(struct adf_device *dev, adf_id_t interface,
					  adf_id_t **overlay_engines);

/*
 * Those of @in whose engine lists at least one of the @n_formats @formats;
 * as adf_interfaces_filter_by_type().
 */
ssize_t adf_overlay_engines_filter_by_format(struct adf_device *dev, const __u32 *formats,
					     size_t n_formats, adf_id_t *in, size_t n_in,
					     adf_id_t **out);

/* As adf_interface_open(), for overlay engine @id. */
int adf_overlay_engine_open(struct adf_device *dev, adf_id_t id, int flags);

/* As adf_get_interface_data(), for an overlay engine fd. */
int adf_get_overlay_engine_data(int fd, struct adf_overlay_engine_data *data);

/* Free what adf_get_overlay_engine_data() allocated, and set its pointers to NULL. */
void adf_free_overlay_engine_data(struct adf_overlay_engine_data *data);

/* Whether the engine of @fd lists @format (false on any error). */
bool adf_overlay_engine_supports_format(int fd, __u32 format);

/**
 * adf_set_event() - subscribe the object of @fd (every dup of it: the
 * subscription is the open file's) to events of @type, or stop
 * Return: 0; -EINVAL (a type the object has not, ADF_EVENT_TYPE_MAX
 * included); -EALREADY (subscribed already, or not subscribed).
 */
int adf_set_event(int fd, enum adf_event_type type, bool enabled);

/**
 * adf_read_event() - read the next event of @fd, blocking unless the fd is
 * non-blocking; libadf's way: the 8-byte header, then length - 8 bytes
 * @event: a malloc()ed event, the caller's to free()
 * Return: 0; -EIO (a short read, a length below the header's); -ENOMEM;
 * read()'s -errno (-EAGAIN on a non-blocking fd with nothing queued).
 * Works on any fd, as libadf's, which only calls read().
 */
int adf_read_event(int fd, struct adf_event **event);

#define ADF_FORMAT_STR_SIZE 5
/* @format's four characters, NUL-terminated. */
void adf_format_str(__u32 format, char buf[ADF_FORMAT_STR_SIZE]);

/**
 * adf_find_simple_post_configuration() - an interface and an overlay engine
 * to show a simple buffer on, as recovery's UI wants
 * @formats: acceptable formats, or NULL for any of ADF's RGB list
 *
 * The first interface with ADF_INTF_FLAG_PRIMARY, in id order, that has an
 * engine allowed with it listing one of @formats; the first such engine.
 * Return: 0; -ENODEV (no interface, no primary one, no engine fits).
 */
int adf_find_simple_post_configuration(struct adf_device *dev, const __u32 *formats,
				       size_t n_formats, adf_id_t *interface,
				       adf_id_t *overlay_engine);

#ifdef __cplusplus
}
#endif

#endif /* _LIBADF_ADF_H_ */

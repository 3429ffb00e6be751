/* SPDX-License-Identifier: MIT */
/*
 * The ADF uapi names, as the kernel's <video/adf.h> gave them to libadf
 * (spec adf-ion.md §1.4, §8): the enums, limits and structs in their exact
 * layouts and values, for code written against libadf (<adf/adf.h>). There
 * is no ADF kernel driver behind them: fenceline's display service
 * (docs/display.md) serves the calls of <adf/adf.h>, and the ioctl numbers
 * at the end are there for documentation and for code that names them; no
 * fd of fenceline answers them (ioctl() on one fails with ENOTTY).
 *
 * The DRM names ADF takes from <drm/drm_mode.h> and <drm/drm_fourcc.h>
 * (struct drm_mode_modeinfo, DRM_MODE_DPMS_*, DRM_FORMAT_*) come from
 * those headers when the include path has them (linux-libc-dev's or
 * libdrm's); otherwise the part ADF uses is declared here, under those
 * headers' include guards, so a later include of them adds nothing.
 */
#ifndef _UAPI_VIDEO_ADF_H_
#define _UAPI_VIDEO_ADF_H_

#include <linux/ioctl.h>
#include <linux/types.h>
#include <stddef.h>

#if defined(__has_include)
#if __has_include(<drm/drm_mode.h>) && __has_include(<drm/drm_fourcc.h>)
#include <drm/drm_fourcc.h>
#include <drm/drm_mode.h>
#endif
#endif

#ifndef _DRM_MODE_H
#define _DRM_MODE_H
#define DRM_DISPLAY_MODE_LEN  32
#define DRM_MODE_DPMS_ON      0
#define DRM_MODE_DPMS_STANDBY 1
#define DRM_MODE_DPMS_SUSPEND 2
#define DRM_MODE_DPMS_OFF     3
/* DRM's mode: timings in pixels and lines, clock in kHz, 68 bytes. */
struct drm_mode_modeinfo {
	__u32 clock;
	__u16 hdisplay;
	__u16 hsync_start;
	__u16 hsync_end;
	__u16 htotal;
	__u16 hskew;
	__u16 vdisplay;
	__u16 vsync_start;
	__u16 vsync_end;
	__u16 vtotal;
	__u16 vscan;
	__u32 vrefresh;
	__u32 flags;
	__u32 type;
	char name[DRM_DISPLAY_MODE_LEN];
};
#endif

#ifndef DRM_FOURCC_H
#define DRM_FOURCC_H
#define fourcc_code(a, b, c, d) \
	((__u32)(a) | ((__u32)(b) << 8) | ((__u32)(c) << 16) | ((__u32)(d) << 24))
/* The formats ADF's generic check knows (spec §1.5). */
#define DRM_FORMAT_C8	       fourcc_code('C', '8', ' ', ' ')
#define DRM_FORMAT_RGB332      fourcc_code('R', 'G', 'B', '8')
#define DRM_FORMAT_BGR233      fourcc_code('B', 'G', 'R', '8')
#define DRM_FORMAT_XRGB4444    fourcc_code('X', 'R', '1', '2')
#define DRM_FORMAT_XBGR4444    fourcc_code('X', 'B', '1', '2')
#define DRM_FORMAT_RGBX4444    fourcc_code('R', 'X', '1', '2')
#define DRM_FORMAT_BGRX4444    fourcc_code('B', 'X', '1', '2')
#define DRM_FORMAT_ARGB4444    fourcc_code('A', 'R', '1', '2')
#define DRM_FORMAT_ABGR4444    fourcc_code('A', 'B', '1', '2')
#define DRM_FORMAT_RGBA4444    fourcc_code('R', 'A', '1', '2')
#define DRM_FORMAT_BGRA4444    fourcc_code('B', 'A', '1', '2')
#define DRM_FORMAT_XRGB1555    fourcc_code('X', 'R', '1', '5')
#define DRM_FORMAT_XBGR1555    fourcc_code('X', 'B', '1', '5')
#define DRM_FORMAT_RGBX5551    fourcc_code('R', 'X', '1', '5')
#define DRM_FORMAT_BGRX5551    fourcc_code('B', 'X', '1', '5')
#define DRM_FORMAT_ARGB1555    fourcc_code('A', 'R', '1', '5')
#define DRM_FORMAT_ABGR1555    fourcc_code('A', 'B', '1', '5')
#define DRM_FORMAT_RGBA5551    fourcc_code('R', 'A', '1', '5')
#define DRM_FORMAT_BGRA5551    fourcc_code('B', 'A', '1', '5')
#define DRM_FORMAT_RGB565      fourcc_code('R', 'G', '1', '6')
#define DRM_FORMAT_BGR565      fourcc_code('B', 'G', '1', '6')
#define DRM_FORMAT_RGB888      fourcc_code('R', 'G', '2', '4')
#define DRM_FORMAT_BGR888      fourcc_code('B', 'G', '2', '4')
#define DRM_FORMAT_XRGB8888    fourcc_code('X', 'R', '2', '4')
#define DRM_FORMAT_XBGR8888    fourcc_code('X', 'B', '2', '4')
#define DRM_FORMAT_RGBX8888    fourcc_code('R', 'X', '2', '4')
#define DRM_FORMAT_BGRX8888    fourcc_code('B', 'X', '2', '4')
#define DRM_FORMAT_ARGB8888    fourcc_code('A', 'R', '2', '4')
#define DRM_FORMAT_ABGR8888    fourcc_code('A', 'B', '2', '4')
#define DRM_FORMAT_RGBA8888    fourcc_code('R', 'A', '2', '4')
#define DRM_FORMAT_BGRA8888    fourcc_code('B', 'A', '2', '4')
#define DRM_FORMAT_XRGB2101010 fourcc_code('X', 'R', '3', '0')
#define DRM_FORMAT_XBGR2101010 fourcc_code('X', 'B', '3', '0')
#define DRM_FORMAT_RGBX1010102 fourcc_code('R', 'X', '3', '0')
#define DRM_FORMAT_BGRX1010102 fourcc_code('B', 'X', '3', '0')
#define DRM_FORMAT_ARGB2101010 fourcc_code('A', 'R', '3', '0')
#define DRM_FORMAT_ABGR2101010 fourcc_code('A', 'B', '3', '0')
#define DRM_FORMAT_RGBA1010102 fourcc_code('R', 'A', '3', '0')
#define DRM_FORMAT_BGRA1010102 fourcc_code('B', 'A', '3', '0')
#define DRM_FORMAT_YUYV	       fourcc_code('Y', 'U', 'Y', 'V')
#define DRM_FORMAT_YVYU	       fourcc_code('Y', 'V', 'Y', 'U')
#define DRM_FORMAT_UYVY	       fourcc_code('U', 'Y', 'V', 'Y')
#define DRM_FORMAT_VYUY	       fourcc_code('V', 'Y', 'U', 'Y')
#define DRM_FORMAT_AYUV	       fourcc_code('A', 'Y', 'U', 'V')
#define DRM_FORMAT_NV12	       fourcc_code('N', 'V', '1', '2')
#define DRM_FORMAT_NV21	       fourcc_code('N', 'V', '2', '1')
#define DRM_FORMAT_NV16	       fourcc_code('N', 'V', '1', '6')
#define DRM_FORMAT_NV61	       fourcc_code('N', 'V', '6', '1')
#define DRM_FORMAT_YUV410      fourcc_code('Y', 'U', 'V', '9')
#define DRM_FORMAT_YVU410      fourcc_code('Y', 'V', 'U', '9')
#define DRM_FORMAT_YUV411      fourcc_code('Y', 'U', '1', '1')
#define DRM_FORMAT_YVU411      fourcc_code('Y', 'V', '1', '1')
#define DRM_FORMAT_YUV420      fourcc_code('Y', 'U', '1', '2')
#define DRM_FORMAT_YVU420      fourcc_code('Y', 'V', '1', '2')
#define DRM_FORMAT_YUV422      fourcc_code('Y', 'U', '1', '6')
#define DRM_FORMAT_YVU422      fourcc_code('Y', 'V', '1', '6')
#define DRM_FORMAT_YUV444      fourcc_code('Y', 'U', '2', '4')
#define DRM_FORMAT_YVU444      fourcc_code('Y', 'V', '2', '4')
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ADF_NAME_LEN		 32
#define ADF_MAX_CUSTOM_DATA_SIZE 4096

enum adf_interface_type {
	ADF_INTF_DSI = 0,
	ADF_INTF_eDP = 1,
	ADF_INTF_DPI = 2,
	ADF_INTF_VGA = 3,
	ADF_INTF_DVI = 4,
	ADF_INTF_HDMI = 5,
	ADF_INTF_MEMORY = 6,
	ADF_INTF_TYPE_DEVICE_CUSTOM = 128,
	ADF_INTF_TYPE_MAX = (~(__u32)0),
};

#define ADF_INTF_FLAG_PRIMARY  (1 << 0)
#define ADF_INTF_FLAG_EXTERNAL (1 << 1)

/* 2 to 127 are ADF's, reserved; drivers use 128 to 254. */
enum adf_event_type {
	ADF_EVENT_VSYNC = 0,
	ADF_EVENT_HOTPLUG = 1,
	ADF_EVENT_DEVICE_CUSTOM = 128,
	ADF_EVENT_TYPE_MAX = 255,
};

/* What a V2 post returns: no fence, one for "on screen", one for "left the screen" (V1's). */
enum adf_complete_fence_type {
	ADF_COMPLETE_FENCE_NONE = 0,
	ADF_COMPLETE_FENCE_PRESENT = 1,
	ADF_COMPLETE_FENCE_RELEASE = 2,
};

/* ADF_SET_EVENT's argument. */
struct adf_set_event {
	__u8 type;
	__u8 enabled;
};

/* What read() gives on an object's fd: this header (8 bytes), then the payload; @length counts both. */
struct adf_event {
	__u8 type;
	__u32 length;
};

/* ADF_EVENT_VSYNC (16 bytes): @timestamp in CLOCK_MONOTONIC ns. */
struct adf_vsync_event {
	struct adf_event base;
	__aligned_u64 timestamp;
};

/* ADF_EVENT_HOTPLUG (12 bytes). */
struct adf_hotplug_event {
	struct adf_event base;
	__u8 connected;
};

#define ADF_MAX_PLANES 4

/*
 * One buffer of a post (72 bytes): its overlay engine, size in pixels, DRM
 * fourcc, per plane an fd, the byte offset of the first pixel and the pitch,
 * and an acquire fence fd (< 0: ready).
 */
struct adf_buffer_config {
	__u32 overlay_engine;

	__u32 w;
	__u32 h;
	__u32 format;

	__s32 fd[ADF_MAX_PLANES];
	__u32 offset[ADF_MAX_PLANES];
	__u32 pitch[ADF_MAX_PLANES];
	__u8 n_planes;

	__s32 acquire_fence;
};
#define ADF_MAX_BUFFERS (4096 / sizeof(struct adf_buffer_config))

/* ADF_POST_CONFIG (V1: a release fence back in @complete_fence). */
struct adf_post_config {
	size_t n_interfaces;
	__u32 *interfaces;

	size_t n_bufs;
	struct adf_buffer_config *bufs;

	size_t custom_data_size;
	void *custom_data;

	__s32 complete_fence;
};

/* ADF_POST_CONFIG_V2: pointers carried in __u64, the fence of @complete_fence_type back. */
struct adf_post_config_v2 {
	__u32 n_interfaces;
	__u64 interfaces;

	__u32 n_bufs;
	__u64 bufs;

	__u64 custom_data_size;
	__u64 custom_data;

	__s32 complete_fence;
	__u8 complete_fence_type;
};
#define ADF_MAX_INTERFACES (4096 / sizeof(__u32))

/* ADF_SIMPLE_BUFFER_ALLOC: in @w, @h, @format (an RGB fourcc); out @fd, @offset, @pitch. */
struct adf_simple_buffer_alloc {
	__u16 w;
	__u16 h;
	__u32 format;

	__s32 fd;
	__u32 offset;
	__u32 pitch;
};

/* ADF_SIMPLE_POST_CONFIG: one buffer on the interface, a release fence back. */
struct adf_simple_post_config {
	struct adf_buffer_config buf;
	__s32 complete_fence;
};

/* ADF_SIMPLE_POST_CONFIG_V2. */
struct adf_simple_post_config_v2 {
	struct adf_buffer_config buf;
	__s32 complete_fence;
	__u8 complete_fence_type;
};

/* An (overlay engine, interface) pair. */
struct adf_attachment_config {
	__u32 overlay_engine;
	__u32 interface;
};

/* ADF_GET_DEVICE_DATA: the two-call protocol (counts in, true counts out). */
struct adf_device_data {
	char name[ADF_NAME_LEN];

	size_t n_attachments;
	struct adf_attachment_config *attachments;

	size_t n_allowed_attachments;
	struct adf_attachment_config *allowed_attachments;

	size_t custom_data_size;
	void *custom_data;
};
#define ADF_MAX_ATTACHMENTS (4096 / sizeof(struct adf_attachment_config))

/* ADF_GET_INTERFACE_DATA; @type and @id name it (DSI.1 is type DSI, id 1). */
struct adf_interface_data {
	char name[ADF_NAME_LEN];

	__u32 type;
	__u32 id;
	__u32 flags;

	__u8 dpms_state;
	__u8 hotplug_detect;
	__u16 width_mm;
	__u16 height_mm;

	struct drm_mode_modeinfo current_mode;
	size_t n_available_modes;
	struct drm_mode_modeinfo *available_modes;

	size_t custom_data_size;
	void *custom_data;
};
#define ADF_MAX_MODES (4096 / sizeof(struct drm_mode_modeinfo))

/* ADF_GET_OVERLAY_ENGINE_DATA. */
struct adf_overlay_engine_data {
	char name[ADF_NAME_LEN];

	size_t n_supported_formats;
	__u32 *supported_formats;

	size_t custom_data_size;
	void *custom_data;
};
#define ADF_MAX_SUPPORTED_FORMATS (4096 / sizeof(__u32))

/* The kernel's ioctl numbers, for reference only (see the top of this file). */
#define ADF_IOCTL_TYPE		    'D'
#define ADF_IOCTL_NR_CUSTOM	    128

#define ADF_SET_EVENT		    _IOW(ADF_IOCTL_TYPE, 0, struct adf_set_event)
#define ADF_BLANK		    _IOW(ADF_IOCTL_TYPE, 1, __u8)
#define ADF_POST_CONFIG		    _IOW(ADF_IOCTL_TYPE, 2, struct adf_post_config)
#define ADF_SET_MODE		    _IOW(ADF_IOCTL_TYPE, 3, struct drm_mode_modeinfo)
#define ADF_GET_DEVICE_DATA	    _IOR(ADF_IOCTL_TYPE, 4, struct adf_device_data)
#define ADF_GET_INTERFACE_DATA	    _IOR(ADF_IOCTL_TYPE, 5, struct adf_interface_data)
#define ADF_GET_OVERLAY_ENGINE_DATA _IOR(ADF_IOCTL_TYPE, 6, struct adf_overlay_engine_data)
#define ADF_SIMPLE_POST_CONFIG	    _IOW(ADF_IOCTL_TYPE, 7, struct adf_simple_post_config)
#define ADF_SIMPLE_BUFFER_ALLOC	    _IOW(ADF_IOCTL_TYPE, 8, struct adf_simple_buffer_alloc)
#define ADF_ATTACH		    _IOW(ADF_IOCTL_TYPE, 9, struct adf_attachment_config)
#define ADF_DETACH		    _IOW(ADF_IOCTL_TYPE, 10, struct adf_attachment_config)
#define ADF_POST_CONFIG_V2	    _IOW(ADF_IOCTL_TYPE, 11, struct adf_post_config_v2)
#define ADF_SIMPLE_POST_CONFIG_V2   _IOW(ADF_IOCTL_TYPE, 12, struct adf_simple_post_config_v2)

#ifdef __cplusplus
}
#endif

#endif /* _UAPI_VIDEO_ADF_H_ */

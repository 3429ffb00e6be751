/* SPDX-License-Identifier: MIT */
/*
 * fenceline's libadfhwc compatibility API: AOSP libadfhwc's
 * <adfhwc/adfhwc.h>, the glue an HWC module puts between the HWC HAL and
 * libadf (<adf/adf.h>), on fenceline's display service. docs/compat.md
 * ("libadf and libadfhwc") says what differs: mainly adf_hwc_close()
 * stops the event thread through a pipe, not SIGUSR2, and config handles
 * are per display and stable.
 *
 * The HAL names the header uses come from Android's <hardware/hwcomposer.h>
 * and <hardware/hwcomposer2.h> when the include path has them; otherwise
 * the few it needs are declared here with Android's values.
 */
#ifndef _LIBADFHWC_ADFHWC_H_
#define _LIBADFHWC_ADFHWC_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <video/adf.h>

#if defined(__has_include)
#if __has_include(<hardware/hwcomposer.h>) && __has_include(<hardware/hwcomposer2.h>)
#include <hardware/hwcomposer.h>
#include <hardware/hwcomposer2.h>
#define FL_ADFHWC_HAVE_HARDWARE 1
#endif
#endif

#ifndef FL_ADFHWC_HAVE_HARDWARE
/* <system/graphics.h>'s HAL pixel formats. */
enum {
	HAL_PIXEL_FORMAT_RGBA_8888 = 1,
	HAL_PIXEL_FORMAT_RGBX_8888 = 2,
	HAL_PIXEL_FORMAT_RGB_888 = 3,
	HAL_PIXEL_FORMAT_RGB_565 = 4,
	HAL_PIXEL_FORMAT_BGRA_8888 = 5,
	HAL_PIXEL_FORMAT_YCbCr_422_SP = 0x10,
	HAL_PIXEL_FORMAT_YCrCb_420_SP = 0x11,
	HAL_PIXEL_FORMAT_YCbCr_422_I = 0x14,
	HAL_PIXEL_FORMAT_YV12 = 0x32315659,
};
/* <hardware/hwcomposer_defs.h>: display types, events and HWC1 attributes. */
enum {
	HWC_DISPLAY_PRIMARY = 0,
	HWC_DISPLAY_EXTERNAL = 1,
	HWC_DISPLAY_VIRTUAL = 2,
	HWC_NUM_PHYSICAL_DISPLAY_TYPES = 2,
	HWC_NUM_DISPLAY_TYPES = 3,
};
enum {
	HWC_DISPLAY_PRIMARY_BIT = 1 << HWC_DISPLAY_PRIMARY,
	HWC_DISPLAY_EXTERNAL_BIT = 1 << HWC_DISPLAY_EXTERNAL,
	HWC_DISPLAY_VIRTUAL_BIT = 1 << HWC_DISPLAY_VIRTUAL,
};
enum {
	HWC_EVENT_VSYNC = 0,
};
enum {
	HWC_DISPLAY_NO_ATTRIBUTE = 0,
	HWC_DISPLAY_VSYNC_PERIOD = 1,
	HWC_DISPLAY_WIDTH = 2,
	HWC_DISPLAY_HEIGHT = 3,
	HWC_DISPLAY_DPI_X = 4,
	HWC_DISPLAY_DPI_Y = 5,
};
/* <hardware/hwcomposer2.h>'s hwc2_attribute_t. */
typedef enum {
	HWC2_ATTRIBUTE_INVALID = 0,
	HWC2_ATTRIBUTE_WIDTH = 1,
	HWC2_ATTRIBUTE_HEIGHT = 2,
	HWC2_ATTRIBUTE_VSYNC_PERIOD = 3,
	HWC2_ATTRIBUTE_DPI_X = 4,
	HWC2_ATTRIBUTE_DPI_Y = 5,
} hwc2_attribute_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A helper: its interfaces' fds (dups), the event thread, the display configs. */
struct adf_hwc_helper;

/*
 * What the event thread calls, on itself (never on the caller's thread), one
 * event at a time: @vsync with the vsync's CLOCK_MONOTONIC ns, @hotplug,
 * @custom_event for driver events of type 128 and up (@event is freed when
 * it returns). Each may be NULL, as may the whole struct: its events are
 * then dropped (libadfhwc took them and called through NULL). A callback
 * must not call adf_hwc_close() on its own helper.
 */
struct adf_hwc_event_callbacks {
	void (*vsync)(void *data, int disp, uint64_t timestamp);
	void (*hotplug)(void *data, int disp, bool connected);
	void (*custom_event)(void *data, int disp, struct adf_event *event);
};

/* The fourcc of a HAL pixel format, 0 for one with none. */
static inline uint32_t adf_fourcc_for_hal_pixel_format(int format)
{
	switch (format) {
	case HAL_PIXEL_FORMAT_RGBA_8888:
		return DRM_FORMAT_RGBA8888;
	case HAL_PIXEL_FORMAT_RGBX_8888:
		return DRM_FORMAT_RGBX8888;
	case HAL_PIXEL_FORMAT_RGB_888:
		return DRM_FORMAT_RGB888;
	case HAL_PIXEL_FORMAT_RGB_565:
		return DRM_FORMAT_RGB565;
	case HAL_PIXEL_FORMAT_BGRA_8888:
		return DRM_FORMAT_BGRA8888;
	case HAL_PIXEL_FORMAT_YV12:
		return DRM_FORMAT_YVU420;
	case HAL_PIXEL_FORMAT_YCbCr_422_SP:
		return DRM_FORMAT_NV16;
	case HAL_PIXEL_FORMAT_YCrCb_420_SP:
		return DRM_FORMAT_NV21;
	case HAL_PIXEL_FORMAT_YCbCr_422_I:
		return DRM_FORMAT_YUYV;
	default:
		return 0;
	}
}

/* The ADF interface flag of an HWC display type, 0 for one with none. */
static inline uint32_t adf_hwc_interface_flag_for_disp(int disp)
{
	switch (disp) {
	case HWC_DISPLAY_PRIMARY:
		return ADF_INTF_FLAG_PRIMARY;
	case HWC_DISPLAY_EXTERNAL:
		return ADF_INTF_FLAG_EXTERNAL;
	default:
		return 0;
	}
}

/**
 * adf_hwc_open() - a helper for the @n_intfs interface fds @intf_fds (from
 * adf_interface_open()), indexed by HWC display type
 *
 * The fds stay the caller's: the helper dup()s them. Each is subscribed to
 * HOTPLUG (an interface without it is skipped, as libadfhwc ignores -EINVAL;
 * the subscription is the fd's open file's, shared with the caller's fd),
 * and one event thread polls them all and calls @event_cb with
 * @event_cb_data.
 * Return: 0 and *@dev; -EINVAL (no fd, a NULL @dev); dup()'s,
 * adf_set_event()'s or pthread_create()'s error.
 */
int adf_hwc_open(int *intf_fds, size_t n_intfs, const struct adf_hwc_event_callbacks *event_cb,
		 void *event_cb_data, struct adf_hwc_helper **dev);

/* Stop and join the event thread, close the dups, free @dev. NULL is ignored. */
void adf_hwc_close(struct adf_hwc_helper *dev);

/**
 * adf_eventControl() - HWC's eventControl: vsync events of display @disp on
 * (@enabled 1) or off (0)
 * Return: 0; -EINVAL (@enabled not 0 or 1, no display @disp, an event
 * other than HWC_EVENT_VSYNC); adf_set_event()'s (-EALREADY).
 */
int adf_eventControl(struct adf_hwc_helper *dev, int disp, int event, int enabled);

/* HWC's blank: DPMS OFF when @blank, else ON. Return: adf_interface_blank()'s; -EINVAL (no @disp). */
int adf_blank(struct adf_hwc_helper *dev, int disp, int blank);

/* HWC_DISPLAY_PRIMARY_BIT with one interface or more, HWC_DISPLAY_EXTERNAL_BIT with two or more. */
int adf_query_display_types_supported(struct adf_hwc_helper *dev, int *value);

/**
 * adf_getDisplayConfigs() - HWC's getDisplayConfigs: the current mode of
 * @disp, then its other distinct modes
 * @configs: gets the handles of the first *@numConfigs of them
 * @numConfigs: in, the room in @configs; out, how many configs there are
 *
 * Handles are 0, 1, … for display @disp as of this call: each call lists
 * the display's configs afresh (libadfhwc appended them to one vector for
 * all displays on every call, which grew forever).
 * Return: 0; -EINVAL (no @disp); -ENODEV (nothing plugged in); the query's.
 */
int adf_getDisplayConfigs(struct adf_hwc_helper *dev, int disp, uint32_t *configs,
			  size_t *numConfigs);

/**
 * adf_getDisplayAttributes() - HWC's getDisplayAttributes: for each of
 * @attributes up to HWC_DISPLAY_NO_ATTRIBUTE, the config's value in @values:
 * vsync period in ns (1e9 / refresh; 0 if unknown), width, height, DPI × 1000
 * (0 when the size in mm is unknown); -EINVAL for an attribute it does not know
 * Return: 0; -EINVAL (no @disp, no such config); the query's.
 */
int adf_getDisplayAttributes(struct adf_hwc_helper *dev, int disp, uint32_t config,
			     const uint32_t *attributes, int32_t *values);

/* As adf_getDisplayAttributes(), with HWC2's attributes, up to HWC2_ATTRIBUTE_INVALID. */
int adf_getDisplayAttributes_hwc2(struct adf_hwc_helper *dev, int disp, uint32_t config,
				  const uint32_t *attributes, int32_t *values);

/* HWC2's setActiveConfig: the config's mode set on @disp. Return: 0; -EINVAL; adf_interface_set_mode()'s. */
int adf_set_active_config_hwc2(struct adf_hwc_helper *dev, int disp, uint32_t config);

#ifdef __cplusplus
}
#endif

#endif /* _LIBADFHWC_ADFHWC_H_ */

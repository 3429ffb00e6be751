/* SPDX-License-Identifier: MIT */
/*
 * The libadf and libadfhwc drop-in headers alone, with the single include
 * path `pkg-config --cflags fenceline-compat` gives, as C (and as C++ from
 * compat-adf-headers-test.cpp): the uapi layouts and numbers of spec
 * adf-ion.md §8 on LP64, and every function linked.
 */
#include <adf/adf.h>
#include <adfhwc/adfhwc.h>
#include <video/adf.h>

#include <stdio.h>

#ifdef __cplusplus
#define FL_STATIC_ASSERT static_assert
#else
#define FL_STATIC_ASSERT _Static_assert
#endif

FL_STATIC_ASSERT(sizeof(struct adf_buffer_config) == 72, "adf_buffer_config");
FL_STATIC_ASSERT(ADF_MAX_BUFFERS == 56 && ADF_MAX_INTERFACES == 1024, "limits");
FL_STATIC_ASSERT(ADF_MAX_ATTACHMENTS == 512 && ADF_MAX_MODES == 60, "limits");
FL_STATIC_ASSERT(ADF_MAX_SUPPORTED_FORMATS == 1024 && ADF_MAX_PLANES == 4, "limits");
FL_STATIC_ASSERT(sizeof(struct drm_mode_modeinfo) == 68, "drm_mode_modeinfo");
FL_STATIC_ASSERT(sizeof(struct adf_event) == 8 && sizeof(struct adf_vsync_event) == 16 &&
			 sizeof(struct adf_hotplug_event) == 12,
		 "events");
FL_STATIC_ASSERT(sizeof(struct adf_simple_buffer_alloc) == 20, "simple alloc");
FL_STATIC_ASSERT(sizeof(struct adf_simple_post_config) == 76, "simple post");
FL_STATIC_ASSERT(sizeof(struct adf_simple_post_config_v2) == 80, "simple post v2");
FL_STATIC_ASSERT(sizeof(struct adf_attachment_config) == 8, "attachment");
#if defined(__LP64__)
FL_STATIC_ASSERT(sizeof(struct adf_post_config) == 56 && sizeof(struct adf_post_config_v2) == 56,
		 "posts");
FL_STATIC_ASSERT(sizeof(struct adf_device_data) == 80 && sizeof(struct adf_interface_data) == 152 &&
			 sizeof(struct adf_overlay_engine_data) == 64,
		 "data");
FL_STATIC_ASSERT(ADF_SET_EVENT == 0x40024400 && ADF_BLANK == 0x40014401 &&
			 ADF_POST_CONFIG == 0x40384402 && ADF_POST_CONFIG_V2 == 0x4038440b,
		 "ioctl numbers");
/* The rest of spec §8's table: direction, size and number as the kernel's uapi has them. */
FL_STATIC_ASSERT(ADF_SET_MODE == 0x40444403 && ADF_GET_DEVICE_DATA == 0x80504404 &&
			 ADF_GET_INTERFACE_DATA == 0x80984405 &&
			 ADF_GET_OVERLAY_ENGINE_DATA == 0x80404406,
		 "ioctl numbers 3-6");
FL_STATIC_ASSERT(ADF_SIMPLE_POST_CONFIG == 0x404c4407 && ADF_SIMPLE_BUFFER_ALLOC == 0x40144408 &&
			 ADF_ATTACH == 0x40084409 && ADF_DETACH == 0x4008440a &&
			 ADF_SIMPLE_POST_CONFIG_V2 == 0x4050440c,
		 "ioctl numbers 7-12");
#endif
FL_STATIC_ASSERT(ADF_EVENT_TYPE_MAX == 255 && ADF_COMPLETE_FENCE_RELEASE == 2 &&
			 ADF_INTF_MEMORY == 6 && ADF_INTF_TYPE_DEVICE_CUSTOM == 128,
		 "enums");

/* Taking every function's address makes the link prove the library exports it. */
static void *const functions[] = {
	(void *)adf_devices,
	(void *)adf_device_open,
	(void *)adf_device_close,
	(void *)adf_get_device_data,
	(void *)adf_free_device_data,
	(void *)adf_device_post,
	(void *)adf_device_post_v2,
	(void *)adf_device_attach,
	(void *)adf_device_detach,
	(void *)adf_interfaces,
	(void *)adf_interfaces_for_overlay_engine,
	(void *)adf_interfaces_filter_by_type,
	(void *)adf_interfaces_filter_by_flag,
	(void *)adf_interface_open,
	(void *)adf_get_interface_data,
	(void *)adf_free_interface_data,
	(void *)adf_interface_blank,
	(void *)adf_interface_set_mode,
	(void *)adf_interface_simple_buffer_alloc,
	(void *)adf_interface_simple_post,
	(void *)adf_interface_simple_post_v2,
	(void *)adf_overlay_engines,
	(void *)adf_overlay_engines_for_interface,
	(void *)adf_overlay_engines_filter_by_format,
	(void *)adf_overlay_engine_open,
	(void *)adf_get_overlay_engine_data,
	(void *)adf_free_overlay_engine_data,
	(void *)adf_overlay_engine_supports_format,
	(void *)adf_set_event,
	(void *)adf_read_event,
	(void *)adf_format_str,
	(void *)adf_find_simple_post_configuration,
	(void *)adf_hwc_open,
	(void *)adf_hwc_close,
	(void *)adf_eventControl,
	(void *)adf_blank,
	(void *)adf_query_display_types_supported,
	(void *)adf_getDisplayConfigs,
	(void *)adf_getDisplayAttributes,
	(void *)adf_getDisplayAttributes_hwc2,
	(void *)adf_set_active_config_hwc2,
};

int main(void)
{
	char s[ADF_FORMAT_STR_SIZE];

	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
		if (!functions[i])
			return 1;
	adf_format_str(adf_fourcc_for_hal_pixel_format(HAL_PIXEL_FORMAT_RGB_565), s);
	if (s[0] != 'R' || s[1] != 'G' || s[2] != '1' || s[3] != '6' || s[4])
		return 1;
	puts("ok");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The libadfhwc drop-in (include/fenceline-compat/adfhwc/adfhwc.h) against
 * a private fl-displayd with the built-in phone device (panel = HWC display
 * 0, HDMI = display 1): the event thread's vsync callbacks with increasing
 * timestamps, hotplug callbacks when the HDMI port is plugged through the
 * native API, the HWC ops (display types, configs, attributes, blank,
 * eventControl), and a close that joins the thread without touching the
 * program's signals.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <adf/adf.h>
#include <adfhwc/adfhwc.h>

#include <fenceline/display.h>

#include "runner.h"

#define VSYNCS 5

struct seen {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int vsyncs;
	uint64_t ts[VSYNCS];
	bool monotonic;
	int hotplugs;
	bool connected[4];
	int hotplug_disp[4];
	pthread_t thread;
	bool other_thread;
};

static void on_vsync(void *data, int disp, uint64_t timestamp)
{
	struct seen *s = data;

	pthread_mutex_lock(&s->lock);
	s->other_thread |= pthread_equal(pthread_self(), s->thread) != 0;
	if (disp == 0 && s->vsyncs < VSYNCS) {
		if (s->vsyncs > 0 && timestamp <= s->ts[s->vsyncs - 1])
			s->monotonic = false;
		s->ts[s->vsyncs++] = timestamp;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void on_hotplug(void *data, int disp, bool connected)
{
	struct seen *s = data;

	pthread_mutex_lock(&s->lock);
	if (s->hotplugs < 4) {
		s->hotplug_disp[s->hotplugs] = disp;
		s->connected[s->hotplugs] = connected;
	}
	s->hotplugs++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static const struct adf_hwc_event_callbacks callbacks = { on_vsync, on_hotplug, NULL };

static void wait_for(struct seen *s, int *counter, int n)
{
	pthread_mutex_lock(&s->lock);
	while (*counter < n)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

struct hwc {
	struct adf_device dev;
	int fds[2];
	struct adf_hwc_helper *helper;
	struct seen seen;
};

static void hwc_open(struct hwc *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->seen.lock, NULL);
	pthread_cond_init(&h->seen.cond, NULL);
	h->seen.monotonic = true;
	h->seen.thread = pthread_self();
	fl_assert_int_eq(adf_device_open(0, O_RDWR, &h->dev), 0);
	for (int i = 0; i < 2; i++) {
		h->fds[i] = adf_interface_open(&h->dev, (adf_id_t)i, O_RDWR);
		fl_assert_int_ge(h->fds[i], 0);
	}
	fl_assert_int_eq(adf_hwc_open(h->fds, 2, &callbacks, &h->seen, &h->helper), 0);
}

static void hwc_close(struct hwc *h)
{
	adf_hwc_close(h->helper);
	close(h->fds[0]);
	close(h->fds[1]);
	adf_device_close(&h->dev);
	fl_display_disconnect();
}

FL_TEST(adfhwc_vsync)
{
	struct hwc h;
	struct sigaction sa;
	sigset_t mask;

	hwc_open(&h);
	fl_assert_int_eq(adf_eventControl(h.helper, 0, HWC_EVENT_VSYNC, 2), -EINVAL);
	fl_assert_int_eq(adf_eventControl(h.helper, 0, HWC_EVENT_VSYNC + 1, 1), -EINVAL);
	fl_assert_int_eq(adf_eventControl(h.helper, 2, HWC_EVENT_VSYNC, 1), -EINVAL);
	fl_assert_int_eq(adf_blank(h.helper, 0, 0), 0);
	fl_assert_int_eq(adf_eventControl(h.helper, 0, HWC_EVENT_VSYNC, 1), 0);
	fl_assert_int_eq(adf_eventControl(h.helper, 0, HWC_EVENT_VSYNC, 1), -EALREADY);
	wait_for(&h.seen, &h.seen.vsyncs, VSYNCS);
	fl_assert(h.seen.monotonic);
	fl_assert(!h.seen.other_thread); /* never on the caller's thread */
	fl_assert_int_eq(adf_eventControl(h.helper, 0, HWC_EVENT_VSYNC, 0), 0);
	fl_assert_int_eq(adf_blank(h.helper, 0, 1), 0);
	fl_assert_int_eq(adf_blank(h.helper, 0, 1), -EBUSY);
	hwc_close(&h);
	/* The program's SIGUSR2 is as it was: neither taken over nor blocked. */
	fl_assert_int_eq(sigaction(SIGUSR2, NULL, &sa), 0);
	fl_assert(sa.sa_handler == SIG_DFL);
	fl_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &mask), 0);
	fl_assert(!sigismember(&mask, SIGUSR2));
}

FL_TEST(adfhwc_hotplug)
{
	struct fl_display_handle *dev, *hdmi;
	struct hwc h;

	hwc_open(&h);
	fl_assert_int_eq(fl_display_device_open(0, &dev), 0);
	fl_assert_int_eq(fl_display_interface_open(dev, 1, &hdmi), 0);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 1, NULL), 0);
	wait_for(&h.seen, &h.seen.hotplugs, 1);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 0, NULL), 0);
	wait_for(&h.seen, &h.seen.hotplugs, 2);
	fl_assert_int_eq(h.seen.hotplugs, 2);
	fl_assert(h.seen.hotplug_disp[0] == 1 && h.seen.connected[0]);
	fl_assert(h.seen.hotplug_disp[1] == 1 && !h.seen.connected[1]);
	fl_display_close(hdmi);
	fl_display_close(dev);
	hwc_close(&h);
}

FL_TEST(adfhwc_configs)
{
	struct fl_display_handle *dev, *hdmi;
	struct hwc h;
	uint32_t configs[8];
	size_t n = 8;
	int types;
	const uint32_t attrs[] = { HWC_DISPLAY_VSYNC_PERIOD, HWC_DISPLAY_WIDTH, HWC_DISPLAY_HEIGHT,
				   HWC_DISPLAY_DPI_X,	     HWC_DISPLAY_DPI_Y, 99,
				   HWC_DISPLAY_NO_ATTRIBUTE };
	const uint32_t attrs2[] = { HWC2_ATTRIBUTE_WIDTH, HWC2_ATTRIBUTE_VSYNC_PERIOD,
				    HWC2_ATTRIBUTE_INVALID };
	int32_t v[7];

	hwc_open(&h);
	fl_assert_int_eq(adf_query_display_types_supported(h.helper, &types), 0);
	fl_assert_int_eq(types, HWC_DISPLAY_PRIMARY_BIT | HWC_DISPLAY_EXTERNAL_BIT);
	/* The panel: its one mode is current. Twice: the handles stay 0.. (libadfhwc's grew). */
	for (int i = 0; i < 2; i++) {
		n = 8;
		fl_assert_int_eq(adf_getDisplayConfigs(h.helper, 0, configs, &n), 0);
		fl_assert_int_eq(n, 1);
		fl_assert_int_eq(configs[0], 0);
	}
	fl_assert_int_eq(adf_getDisplayAttributes(h.helper, 0, 0, attrs, v), 0);
	fl_assert_int_eq(v[0], 1000000000 / 60);
	fl_assert_int_eq(v[1], 1920);
	fl_assert_int_eq(v[2], 1080);
	fl_assert_int_eq(v[3], (int32_t)(1000 * (1920 * 25.4f) / 121));
	fl_assert_int_eq(v[4], (int32_t)(1000 * (1080 * 25.4f) / 68));
	fl_assert_int_eq(v[5], -EINVAL);
	fl_assert_int_eq(adf_getDisplayAttributes_hwc2(h.helper, 0, 0, attrs2, v), 0);
	fl_assert(v[0] == 1920 && v[1] == 1000000000 / 60);
	fl_assert_int_eq(adf_getDisplayAttributes(h.helper, 0, 1, attrs, v), -EINVAL);
	/* HDMI unplugged: -ENODEV; plugged: its current mode, then its three. */
	fl_assert_int_eq(adf_getDisplayConfigs(h.helper, 1, configs, &n), -ENODEV);
	fl_assert_int_eq(fl_display_device_open(0, &dev), 0);
	fl_assert_int_eq(fl_display_interface_open(dev, 1, &hdmi), 0);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 1, NULL), 0);
	wait_for(&h.seen, &h.seen.hotplugs, 1); /* as an HWC: configs once the display is there */
	n = 2;
	fl_assert_int_eq(adf_getDisplayConfigs(h.helper, 1, configs, &n), 0);
	fl_assert(n >= 3);
	fl_assert(configs[0] == 0 && configs[1] == 1);
	fl_assert_int_eq(adf_getDisplayAttributes_hwc2(h.helper, 1, (uint32_t)n - 1, attrs2, v), 0);
	fl_assert(v[0] == 3840 && v[1] == 1000000000 / 30);
	fl_assert_int_eq(adf_set_active_config_hwc2(h.helper, 1, (uint32_t)n - 1), 0);
	n = 8;
	fl_assert_int_eq(adf_getDisplayConfigs(h.helper, 1, configs, &n), 0);
	fl_assert_int_eq(adf_getDisplayAttributes_hwc2(h.helper, 1, 0, attrs2, v), 0);
	fl_assert_int_eq(v[0], 3840); /* now the current mode: config 0 */
	fl_display_close(hdmi);
	fl_display_close(dev);
	hwc_close(&h);
}

FL_TEST(adfhwc_formats)
{
	fl_assert_int_eq(adf_fourcc_for_hal_pixel_format(HAL_PIXEL_FORMAT_RGBA_8888),
			 DRM_FORMAT_RGBA8888);
	fl_assert_int_eq(adf_fourcc_for_hal_pixel_format(HAL_PIXEL_FORMAT_RGB_565),
			 DRM_FORMAT_RGB565);
	fl_assert_int_eq(adf_fourcc_for_hal_pixel_format(HAL_PIXEL_FORMAT_YV12), DRM_FORMAT_YVU420);
	fl_assert_int_eq(adf_fourcc_for_hal_pixel_format(HAL_PIXEL_FORMAT_YCrCb_420_SP),
			 DRM_FORMAT_NV21);
	fl_assert_int_eq(adf_fourcc_for_hal_pixel_format(HAL_PIXEL_FORMAT_YCbCr_422_I),
			 DRM_FORMAT_YUYV);
	fl_assert_int_eq(adf_fourcc_for_hal_pixel_format(0x7fff), 0);
	fl_assert_int_eq(adf_hwc_interface_flag_for_disp(HWC_DISPLAY_EXTERNAL),
			 ADF_INTF_FLAG_EXTERNAL);
	fl_assert_int_eq(adf_hwc_interface_flag_for_disp(2), 0);
	fl_assert_int_eq(adf_hwc_open((int[]){ 0 }, 0, &callbacks, NULL,
				      &(struct adf_hwc_helper *){ NULL }),
			 -EINVAL);
}

/*
 * libadfhwc took any callbacks (only n_intfs 0 was -EINVAL): an HWC that
 * leaves vsync or hotplug NULL, or passes no callbacks at all, opens, and
 * the events it has no callback for are dropped (libadfhwc would have
 * called through NULL when one came).
 */
FL_TEST(adfhwc_callbacks_may_be_null)
{
	static const struct adf_hwc_event_callbacks hotplug_only = { NULL, on_hotplug, NULL };
	struct fl_display_handle *dev, *hdmi;
	struct adf_hwc_helper *none;
	int other[2];
	struct hwc h;

	hwc_open(&h);
	adf_hwc_close(h.helper);
	/* New open files: the closed helper's HOTPLUG subscription stays with the old ones, as on ADF. */
	for (int i = 0; i < 2; i++) {
		close(h.fds[i]);
		h.fds[i] = adf_interface_open(&h.dev, (adf_id_t)i, O_RDWR);
		other[i] = adf_interface_open(&h.dev, (adf_id_t)i, O_RDWR);
		fl_assert(h.fds[i] >= 0 && other[i] >= 0);
	}
	fl_assert_int_eq(adf_hwc_open(h.fds, 2, &hotplug_only, &h.seen, &h.helper), 0);
	fl_assert_int_eq(adf_hwc_open(other, 2, NULL, NULL, &none), 0);
	fl_assert_int_eq(adf_blank(h.helper, 0, 0), 0);
	fl_assert_int_eq(adf_eventControl(h.helper, 0, HWC_EVENT_VSYNC, 1), 0);
	fl_assert_int_eq(adf_eventControl(none, 0, HWC_EVENT_VSYNC, 1), 0);
	fl_assert_int_eq(fl_display_device_open(0, &dev), 0);
	fl_assert_int_eq(fl_display_interface_open(dev, 1, &hdmi), 0);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 1, NULL), 0);
	/* Vsyncs came meanwhile, with no callback to take them. */
	wait_for(&h.seen, &h.seen.hotplugs, 1);
	fl_assert(h.seen.hotplug_disp[0] == 1 && h.seen.connected[0]);
	fl_assert_int_eq(h.seen.vsyncs, 0);
	fl_assert_int_eq(fl_display_set_connected(hdmi, 0, NULL), 0);
	wait_for(&h.seen, &h.seen.hotplugs, 2);
	adf_hwc_close(none);
	close(other[0]);
	close(other[1]);
	fl_display_close(hdmi);
	fl_display_close(dev);
	fl_assert_int_eq(adf_blank(h.helper, 0, 1), 0);
	hwc_close(&h);
}

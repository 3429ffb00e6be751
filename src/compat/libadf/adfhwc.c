/* SPDX-License-Identifier: MIT */
/*
 * libadfhwc (<adfhwc/adfhwc.h>) on libadf's drop-in.
 *
 * The event thread polls the interfaces' fds and a pipe of its own;
 * adf_hwc_close() writes to that pipe and joins. libadfhwc instead sent the
 * thread SIGUSR2, whose handler called pthread_exit(): a library that takes
 * a signal over from its program, and exits a thread wherever the signal
 * finds it (inside malloc(), holding a lock, in the middle of a callback).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <adf/adf.h>
#include <adfhwc/adfhwc.h>
#include <fenceline/export.h>

#include "libadf-private.h"

/* Android's HAL_PRIORITY_URGENT_DISPLAY: the nice value libadfhwc gave the thread. */
#define URGENT_DISPLAY_NICE (-8)

struct configs {
	struct drm_mode_modeinfo *modes;
	size_t n;
};

struct adf_hwc_helper {
	const struct adf_hwc_event_callbacks *cb;
	void *cb_data;
	int *fds;
	size_t n;
	int stop[2];
	pthread_t thread;
	bool closing_self; /* adf_hwc_close() from a callback: the thread frees the helper */
	pthread_mutex_t lock; /* the configs */
	struct configs *configs;
};

static void helper_free(struct adf_hwc_helper *dev)
{
	for (size_t i = 0; i < dev->n; i++) {
		if (dev->fds[i] >= 0)
			close(dev->fds[i]);
		if (dev->configs)
			free(dev->configs[i].modes);
	}
	if (dev->stop[0] >= 0)
		close(dev->stop[0]);
	if (dev->stop[1] >= 0)
		close(dev->stop[1]);
	free(dev->fds);
	free(dev->configs);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
	fl__adf_reap();
}

static void handle_event(struct adf_hwc_helper *dev, int disp)
{
	/* libadfhwc took any callbacks: an event with none is dropped (it called through NULL). */
	static const struct adf_hwc_event_callbacks no_callbacks;
	const struct adf_hwc_event_callbacks *cb = dev->cb ? dev->cb : &no_callbacks;
	struct adf_event *ev;
	int r = adf_read_event(dev->fds[disp], &ev);

	if (r < 0) {
		fprintf(stderr, "adfhwc: cannot read an event of display %d: %s\n", disp,
			strerror(-r));
		return;
	}
	if (ev->type == ADF_EVENT_VSYNC && ev->length >= sizeof(struct adf_vsync_event)) {
		struct adf_vsync_event v;

		memcpy(&v, ev, sizeof(v));
		if (cb->vsync)
			cb->vsync(dev->cb_data, disp, v.timestamp);
	} else if (ev->type == ADF_EVENT_HOTPLUG &&
		   ev->length >= sizeof(struct adf_hotplug_event)) {
		if (cb->hotplug)
			cb->hotplug(dev->cb_data, disp,
				    ((struct adf_hotplug_event *)ev)->connected);
	} else if (ev->type >= ADF_EVENT_DEVICE_CUSTOM && cb->custom_event) {
		cb->custom_event(dev->cb_data, disp, ev);
	} else {
		fprintf(stderr, "adfhwc: display %d: unhandled event type %u\n", disp, ev->type);
	}
	free(ev);
}

static void *event_thread(void *arg)
{
	struct adf_hwc_helper *dev = arg;
	struct pollfd *p = calloc(dev->n + 1, sizeof(*p));
	bool stop = false;

	(void)setpriority(PRIO_PROCESS, 0, URGENT_DISPLAY_NICE); /* a wish: needs privilege */
	if (!p) {
		fprintf(stderr, "adfhwc: no memory for the event thread\n");
		return NULL;
	}
	for (size_t i = 0; i < dev->n; i++)
		p[i] = (struct pollfd){ dev->fds[i], POLLIN | POLLPRI, 0 };
	p[dev->n] = (struct pollfd){ dev->stop[0], POLLIN, 0 };
	while (!stop) {
		if (poll(p, dev->n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "adfhwc: event thread: %s\n", strerror(errno));
			break;
		}
		if (p[dev->n].revents)
			break;
		for (size_t i = 0; i < dev->n && !stop; i++) {
			if (p[i].revents & (POLLIN | POLLPRI)) {
				handle_event(dev, (int)i);
			} else if (p[i].revents) {
				/*
				 * Hung up with nothing to read (the service went
				 * away): poll would report it forever. The display
				 * is left out; libadfhwc spun here.
				 */
				fprintf(stderr, "adfhwc: display %zu hung up\n", i);
				p[i].fd = -1;
			}
			stop = __atomic_load_n(&dev->closing_self, __ATOMIC_ACQUIRE);
		}
	}
	free(p);
	if (__atomic_load_n(&dev->closing_self, __ATOMIC_ACQUIRE))
		helper_free(dev);
	return NULL;
}

FL_EXPORT int adf_hwc_open(int *intf_fds, size_t n_intfs,
			   const struct adf_hwc_event_callbacks *event_cb, void *event_cb_data,
			   struct adf_hwc_helper **dev)
{
	struct adf_hwc_helper *d;
	sigset_t all, old;
	int r;

	if (!n_intfs || !intf_fds || !dev)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cb = event_cb;
	d->cb_data = event_cb_data;
	d->stop[0] = d->stop[1] = -1;
	pthread_mutex_init(&d->lock, NULL);
	d->fds = malloc(n_intfs * sizeof(*d->fds));
	d->configs = calloc(n_intfs, sizeof(*d->configs));
	if (!d->fds || !d->configs || pipe2(d->stop, O_CLOEXEC) < 0) {
		r = d->fds && d->configs ? -errno : -ENOMEM;
		helper_free(d);
		return r;
	}
	for (size_t i = 0; i < n_intfs; i++) {
		d->fds[i] = fcntl(intf_fds[i], F_DUPFD_CLOEXEC, 0);
		if (d->fds[i] < 0) {
			r = -errno;
			d->n = i;
			helper_free(d);
			return r;
		}
		d->n = i + 1;
		r = adf_set_event(d->fds[i], ADF_EVENT_HOTPLUG, true);
		if (r < 0 && r != -EINVAL) {
			helper_free(d);
			return r;
		}
	}
	/* The thread takes no signal of the program's: they stay with the program's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&d->thread, NULL, event_thread, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		helper_free(d);
		return r;
	}
	*dev = d;
	return 0;
}

FL_EXPORT void adf_hwc_close(struct adf_hwc_helper *dev)
{
	char c = 0;

	if (!dev)
		return;
	if (pthread_equal(pthread_self(), dev->thread)) {
		/* From a callback: the thread cannot join itself; it frees the helper on its way out. */
		__atomic_store_n(&dev->closing_self, true, __ATOMIC_RELEASE);
		pthread_detach(dev->thread);
		return;
	}
	while (write(dev->stop[1], &c, 1) < 0 && errno == EINTR)
		;
	pthread_join(dev->thread, NULL);
	helper_free(dev);
}

static bool disp_ok(const struct adf_hwc_helper *dev, int disp)
{
	return dev && disp >= 0 && (size_t)disp < dev->n;
}

FL_EXPORT int adf_eventControl(struct adf_hwc_helper *dev, int disp, int event, int enabled)
{
	if (enabled != !!enabled || !disp_ok(dev, disp))
		return -EINVAL;
	if (event != HWC_EVENT_VSYNC)
		return -EINVAL;
	return adf_set_event(dev->fds[disp], ADF_EVENT_VSYNC, enabled);
}

FL_EXPORT int adf_blank(struct adf_hwc_helper *dev, int disp, int blank)
{
	if (!disp_ok(dev, disp))
		return -EINVAL;
	return adf_interface_blank(dev->fds[disp], blank ? DRM_MODE_DPMS_OFF : DRM_MODE_DPMS_ON);
}

FL_EXPORT int adf_query_display_types_supported(struct adf_hwc_helper *dev, int *value)
{
	if (!dev || !value)
		return -EINVAL;
	*value = 0;
	if (dev->n > 0)
		*value |= HWC_DISPLAY_PRIMARY_BIT;
	if (dev->n > 1)
		*value |= HWC_DISPLAY_EXTERNAL_BIT;
	return 0;
}

FL_EXPORT int adf_getDisplayConfigs(struct adf_hwc_helper *dev, int disp, uint32_t *configs,
				    size_t *numConfigs)
{
	struct adf_interface_data data;
	struct drm_mode_modeinfo *list;
	size_t n = 0;
	int r;

	if (!disp_ok(dev, disp) || !numConfigs || (*numConfigs && !configs))
		return -EINVAL;
	r = adf_get_interface_data(dev->fds[disp], &data);
	if (r < 0)
		return r;
	if (!data.hotplug_detect) {
		adf_free_interface_data(&data);
		return -ENODEV;
	}
	list = malloc((data.n_available_modes + 1) * sizeof(*list));
	if (!list) {
		adf_free_interface_data(&data);
		return -ENOMEM;
	}
	list[n++] = data.current_mode;
	for (size_t i = 0; i < data.n_available_modes; i++)
		if (memcmp(&data.available_modes[i], &data.current_mode, sizeof(data.current_mode)))
			list[n++] = data.available_modes[i];
	adf_free_interface_data(&data);
	pthread_mutex_lock(&dev->lock);
	free(dev->configs[disp].modes);
	dev->configs[disp] = (struct configs){ list, n };
	pthread_mutex_unlock(&dev->lock);
	for (size_t i = 0; i < n && i < *numConfigs; i++)
		configs[i] = (uint32_t)i;
	*numConfigs = n;
	return 0;
}

/* The mode of config @config of display @disp, as its last adf_getDisplayConfigs() listed it. */
static bool config_mode(struct adf_hwc_helper *dev, int disp, uint32_t config,
			struct drm_mode_modeinfo *ret)
{
	bool have;

	pthread_mutex_lock(&dev->lock);
	have = config < dev->configs[disp].n;
	if (have)
		*ret = dev->configs[disp].modes[config];
	pthread_mutex_unlock(&dev->lock);
	return have;
}

/* 1000 × dots per inch, as libadfhwc computed it (in float). */
static int32_t dpi(uint16_t res, uint16_t size_mm)
{
	return size_mm ? (int32_t)(1000 * (res * 25.4f) / size_mm) : 0;
}

enum attr { A_END, A_PERIOD, A_WIDTH, A_HEIGHT, A_DPI_X, A_DPI_Y, A_UNKNOWN };

/* HWC1's and HWC2's attribute codes, each table ending with its list's terminator. */
struct attr_code {
	uint32_t code;
	enum attr attr;
};

static const struct attr_code hwc1_codes[] = {
	{ HWC_DISPLAY_VSYNC_PERIOD, A_PERIOD }, { HWC_DISPLAY_WIDTH, A_WIDTH },
	{ HWC_DISPLAY_HEIGHT, A_HEIGHT },	{ HWC_DISPLAY_DPI_X, A_DPI_X },
	{ HWC_DISPLAY_DPI_Y, A_DPI_Y },		{ HWC_DISPLAY_NO_ATTRIBUTE, A_END },
};

static const struct attr_code hwc2_codes[] = {
	{ HWC2_ATTRIBUTE_VSYNC_PERIOD, A_PERIOD }, { HWC2_ATTRIBUTE_WIDTH, A_WIDTH },
	{ HWC2_ATTRIBUTE_HEIGHT, A_HEIGHT },	   { HWC2_ATTRIBUTE_DPI_X, A_DPI_X },
	{ HWC2_ATTRIBUTE_DPI_Y, A_DPI_Y },	   { HWC2_ATTRIBUTE_INVALID, A_END },
};

static enum attr which(const struct attr_code *codes, uint32_t code)
{
	for (size_t i = 0;; i++)
		if (codes[i].code == code || codes[i].attr == A_END)
			return codes[i].code == code ? codes[i].attr : A_UNKNOWN;
}

static int attributes(struct adf_hwc_helper *dev, int disp, uint32_t config, const uint32_t *attrs,
		      int32_t *values, const struct attr_code *codes)
{
	struct adf_interface_data data;
	struct drm_mode_modeinfo mode;
	int r;

	if (!disp_ok(dev, disp) || !attrs || !values || !config_mode(dev, disp, config, &mode))
		return -EINVAL;
	r = adf_get_interface_data(dev->fds[disp], &data);
	if (r < 0)
		return r;
	for (size_t i = 0; which(codes, attrs[i]) != A_END; i++) {
		switch (which(codes, attrs[i])) {
		case A_PERIOD:
			values[i] = mode.vrefresh ? (int32_t)(1000000000 / mode.vrefresh) : 0;
			break;
		case A_WIDTH:
			values[i] = mode.hdisplay;
			break;
		case A_HEIGHT:
			values[i] = mode.vdisplay;
			break;
		case A_DPI_X:
			values[i] = dpi(mode.hdisplay, data.width_mm);
			break;
		case A_DPI_Y:
			values[i] = dpi(mode.vdisplay, data.height_mm);
			break;
		default:
			values[i] = -EINVAL;
			break;
		}
	}
	adf_free_interface_data(&data);
	return 0;
}

FL_EXPORT int adf_getDisplayAttributes(struct adf_hwc_helper *dev, int disp, uint32_t config,
				       const uint32_t *attributes_, int32_t *values)
{
	return attributes(dev, disp, config, attributes_, values, hwc1_codes);
}

FL_EXPORT int adf_getDisplayAttributes_hwc2(struct adf_hwc_helper *dev, int disp, uint32_t config,
					    const uint32_t *attributes_, int32_t *values)
{
	return attributes(dev, disp, config, attributes_, values, hwc2_codes);
}

FL_EXPORT int adf_set_active_config_hwc2(struct adf_hwc_helper *dev, int disp, uint32_t config)
{
	struct drm_mode_modeinfo mode;

	if (!disp_ok(dev, disp) || !config_mode(dev, disp, config, &mode))
		return -EINVAL;
	return adf_interface_set_mode(dev->fds[disp], &mode);
}

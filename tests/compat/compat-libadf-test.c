/* SPDX-License-Identifier: MIT */
/*
 * The libadf drop-in (include/fenceline-compat/adf/adf.h) against a private
 * fl-displayd with the built-in phone device: libadf's own gtest cases
 * (spec adf-ion.md §1.16, adf_test.cpp as of 52ae36ed5) written as C tests
 * against the drop-in headers, a recovery UI as minui's ADF backend drives
 * one (spec display.md §5.3), and the drop-in's own rules: the fd table,
 * dups, the wrong kinds of fd, libadf's quirks.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <adf/adf.h>
#include <android/sync.h>

#include <fenceline/display.h>

#include "runner.h"

static const __u32 fmt8888[] = {
	DRM_FORMAT_XRGB8888, DRM_FORMAT_XBGR8888, DRM_FORMAT_RGBX8888, DRM_FORMAT_BGRX8888,
	DRM_FORMAT_ARGB8888, DRM_FORMAT_ABGR8888, DRM_FORMAT_RGBA8888, DRM_FORMAT_BGRA8888,
};
#define N_FMT8888 (sizeof(fmt8888) / sizeof(fmt8888[0]))

/* adf_test's fixture: device 0, its simple-post interface and engine, both opened. */
struct fixture {
	struct adf_device dev;
	adf_id_t intf_id, eng_id;
	int intf, eng;
};

static void set_up(struct fixture *f)
{
	fl_assert_int_eq(adf_device_open(0, O_RDWR, &f->dev), 0);
	fl_assert_int_eq(adf_find_simple_post_configuration(&f->dev, fmt8888, N_FMT8888,
							    &f->intf_id, &f->eng_id),
			 0);
	f->intf = adf_interface_open(&f->dev, f->intf_id, O_RDWR);
	fl_assert_int_ge(f->intf, 0);
	f->eng = adf_overlay_engine_open(&f->dev, f->eng_id, O_RDWR);
	fl_assert_int_ge(f->eng, 0);
}

/* As adf_test's TearDown, then the library's connection (the runner counts its socket). */
static void tear_down(struct fixture *f)
{
	close(f->intf);
	close(f->eng);
	adf_device_close(&f->dev);
	fl_display_disconnect();
}

/* adf_test's blank(): -EBUSY means the state is there already. */
static void blank(struct fixture *f, __u8 mode)
{
	int err = adf_interface_blank(f->intf, mode);

	if (err != -EBUSY)
		fl_assert_int_eq(err, 0);
}

static void attach(struct fixture *f)
{
	int err = adf_device_attach(&f->dev, f->eng_id, f->intf_id);

	if (err != -EALREADY)
		fl_assert_int_eq(err, 0);
}

/* adf_test's get8888Format(): the first 8888 format the engine lists. */
static __u32 format8888(struct fixture *f)
{
	struct adf_overlay_engine_data data;
	__u32 fmt = 0;

	fl_assert_int_eq(adf_get_overlay_engine_data(f->eng, &data), 0);
	for (size_t i = 0; i < data.n_supported_formats && !fmt; i++)
		for (size_t j = 0; j < N_FMT8888 && !fmt; j++)
			if (data.supported_formats[i] == fmt8888[j])
				fmt = fmt8888[j];
	adf_free_overlay_engine_data(&data);
	fl_assert(fmt != 0);
	return fmt;
}

static void current_mode(struct fixture *f, __u32 *w, __u32 *h)
{
	struct adf_interface_data data;

	fl_assert_int_eq(adf_get_interface_data(f->intf, &data), 0);
	*w = data.current_mode.hdisplay;
	*h = data.current_mode.vdisplay;
	adf_free_interface_data(&data);
	fl_assert(*w > 0 && *h > 0);
}

/* adf_test's drawCheckerboard(): a simple buffer of the mode, four quadrants. */
static int checkerboard(struct fixture *f, __u32 fmt, __u32 *w, __u32 *h, __u32 *offset,
			__u32 *pitch, uint32_t c)
{
	int buf;
	uint8_t *p;

	current_mode(f, w, h);
	buf = adf_interface_simple_buffer_alloc(f->intf, *w, *h, fmt, offset, pitch);
	fl_assert_int_ge(buf, 0);
	fl_assert(*pitch >= *w * 4);
	p = mmap(NULL, (size_t)*pitch * *h, PROT_WRITE, MAP_SHARED, buf, *offset);
	fl_assert(p != MAP_FAILED);
	for (__u32 y = 0; y < *h; y++)
		for (__u32 x = 0; x < *w; x++) {
			uint32_t v = ((x < *w / 2) ^ (y < *h / 2)) ? c : ~c;

			memcpy(p + (size_t)y * *pitch + (size_t)x * 4, &v, 4);
		}
	munmap(p, (size_t)*pitch * *h);
	return buf;
}

/* A checkerboard simple buffer of the mode as one post buffer (no acquire fence), attached. */
static struct adf_buffer_config posted_buffer(struct fixture *f, int *buf)
{
	__u32 w, h, offset, pitch, fmt = format8888(f);

	*buf = checkerboard(f, fmt, &w, &h, &offset, &pitch, 0xFF00FF00);
	attach(f);
	return (struct adf_buffer_config){ .overlay_engine = f->eng_id,
					   .w = w,
					   .h = h,
					   .format = fmt,
					   .fd = { *buf, -1, -1, -1 },
					   .offset = { offset },
					   .pitch = { pitch },
					   .n_planes = 1,
					   .acquire_fence = -1 };
}

FL_TEST(libadf_devices)
{
	adf_id_t *ids = NULL;
	ssize_t n = adf_devices(&ids);

	fl_assert_int_ge(n, 1);
	fl_assert(ids != NULL);
	fl_assert_int_eq(ids[0], 0);
	free(ids);
	fl_display_disconnect();
}

FL_TEST(libadf_device_data)
{
	struct fixture f;
	struct adf_device_data data;

	set_up(&f);
	fl_assert_int_eq(adf_get_device_data(&f.dev, &data), 0);
	fl_assert(data.n_attachments < ADF_MAX_ATTACHMENTS);
	fl_assert(data.n_allowed_attachments > 0);
	fl_assert(data.n_allowed_attachments < ADF_MAX_ATTACHMENTS);
	fl_assert(data.custom_data_size < ADF_MAX_CUSTOM_DATA_SIZE);
	fl_assert_str_eq(data.name, "phone");
	adf_free_device_data(&data);
	tear_down(&f);
}

FL_TEST(libadf_interface_data)
{
	struct fixture f;
	struct adf_interface_data data;

	set_up(&f);
	fl_assert_int_eq(adf_get_interface_data(f.intf, &data), 0);
	fl_assert(data.type < ADF_INTF_TYPE_MAX);
	fl_assert(data.dpms_state <= DRM_MODE_DPMS_OFF);
	fl_assert_int_eq(data.hotplug_detect, 1);
	fl_assert(data.n_available_modes > 0);
	fl_assert(data.available_modes != NULL);
	fl_assert(data.custom_data_size < ADF_MAX_CUSTOM_DATA_SIZE);
	fl_assert(data.flags & ADF_INTF_FLAG_PRIMARY);
	fl_assert_int_eq(data.current_mode.hdisplay, 1920);
	fl_assert_int_eq(data.available_modes[0].vrefresh, 60);
	adf_free_interface_data(&data);
	tear_down(&f);
}

FL_TEST(libadf_overlay_engine_data)
{
	struct fixture f;
	struct adf_overlay_engine_data data;

	set_up(&f);
	fl_assert_int_eq(adf_get_overlay_engine_data(f.eng, &data), 0);
	fl_assert(data.n_supported_formats > 0);
	fl_assert(data.n_supported_formats < ADF_MAX_SUPPORTED_FORMATS);
	fl_assert(data.custom_data_size < ADF_MAX_CUSTOM_DATA_SIZE);
	adf_free_overlay_engine_data(&data);
	fl_assert(adf_overlay_engine_supports_format(f.eng, format8888(&f)));
	fl_assert(!adf_overlay_engine_supports_format(f.eng, DRM_FORMAT_NV12));
	tear_down(&f);
}

FL_TEST(libadf_blank)
{
	struct fixture f;
	struct adf_interface_data data;

	set_up(&f);
	fl_assert_int_eq(adf_interface_blank(f.intf, (__u8)-1), -EINVAL);
	fl_assert_int_eq(adf_interface_blank(f.eng, DRM_MODE_DPMS_OFF), -EINVAL);
	blank(&f, DRM_MODE_DPMS_OFF);
	fl_assert_int_eq(adf_interface_blank(f.intf, DRM_MODE_DPMS_OFF), -EBUSY);
	blank(&f, DRM_MODE_DPMS_ON);
	fl_assert_int_eq(adf_interface_blank(f.intf, DRM_MODE_DPMS_ON), -EBUSY);
	fl_assert_int_eq(adf_get_interface_data(f.intf, &data), 0);
	fl_assert_int_eq(data.dpms_state, DRM_MODE_DPMS_ON);
	adf_free_interface_data(&data);
	tear_down(&f);
}

FL_TEST(libadf_event)
{
	struct fixture f;
	uint64_t last = 0;

	set_up(&f);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_TYPE_MAX, true), -EINVAL);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_TYPE_MAX, false), -EINVAL);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, true), 0);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, true), -EALREADY);
	blank(&f, DRM_MODE_DPMS_ON);
	for (int i = 0; i < 2; i++) {
		struct adf_event *ev;
		struct adf_vsync_event v;

		fl_assert_int_eq(adf_read_event(f.intf, &ev), 0);
		fl_assert_int_eq(ev->type, ADF_EVENT_VSYNC);
		fl_assert_int_eq(ev->length, sizeof(struct adf_vsync_event));
		memcpy(&v, ev, sizeof(v));
		fl_assert(v.timestamp > last);
		last = v.timestamp;
		free(ev);
	}
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, false), 0);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, false), -EALREADY);
	tear_down(&f);
}

/* The virtual driver's custom event (type 128 on the device, every 4th post shown), as libadf reads it. */
FL_TEST(libadf_driver_event)
{
	struct fixture f;
	struct adf_event *ev = NULL;
	__u32 w, h, offset, pitch, fmt;
	__u64 flips;
	int buf, fence, prev = -1;

	set_up(&f);
	fl_assert_int_eq(adf_set_event(f.eng, ADF_EVENT_DEVICE_CUSTOM, true), -EOPNOTSUPP);
	fl_assert_int_eq(adf_set_event(f.dev.fd, ADF_EVENT_DEVICE_CUSTOM + 1, true), -EINVAL);
	fl_assert_int_eq(adf_set_event(f.dev.fd, ADF_EVENT_DEVICE_CUSTOM, true), 0);
	fl_assert_int_eq(adf_set_event(f.dev.fd, ADF_EVENT_DEVICE_CUSTOM, true), -EALREADY);
	fmt = format8888(&f);
	buf = checkerboard(&f, fmt, &w, &h, &offset, &pitch, 0xFF0000FF);
	attach(&f);
	blank(&f, DRM_MODE_DPMS_ON);
	/* Four posts on screen, each seen by the release fence of the one before (ADF's V1). */
	for (int i = 0; i < 5; i++) {
		fence = adf_interface_simple_post(f.intf, f.eng_id, w, h, fmt, buf, offset, pitch,
						  -1);
		fl_assert_int_ge(fence, 0);
		if (prev >= 0) {
			fl_assert_int_eq(sync_wait(prev, 10000), 0);
			close(prev);
		}
		prev = fence;
	}
	close(prev);
	fl_assert_int_eq(adf_read_event(f.dev.fd, &ev), 0);
	fl_assert_int_eq(ev->type, ADF_EVENT_DEVICE_CUSTOM);
	fl_assert_int_eq(ev->length, 24);
	memcpy(&flips, (const char *)ev + 8, sizeof(flips));
	fl_assert(flips > 0 && flips % 4 == 0);
	free(ev);
	fl_assert_int_eq(adf_set_event(f.dev.fd, ADF_EVENT_DEVICE_CUSTOM, false), 0);
	close(buf);
	tear_down(&f);
}

FL_TEST(libadf_attach)
{
	struct fixture f;
	struct adf_device_data data;

	set_up(&f);
	attach(&f);
	fl_assert_int_eq(adf_device_attach(&f.dev, f.eng_id, f.intf_id), -EALREADY);
	fl_assert_int_eq(adf_device_detach(&f.dev, f.eng_id, f.intf_id), 0);
	fl_assert_int_eq(adf_device_detach(&f.dev, f.eng_id, f.intf_id), -EINVAL);
	fl_assert_int_eq(adf_device_attach(&f.dev, f.eng_id, 1024), -EINVAL);
	fl_assert_int_eq(adf_device_detach(&f.dev, f.eng_id, 1024), -EINVAL);
	/* Beyond adf_test: which is the engine and which the interface (rgb565 on the writeback). */
	fl_assert_int_eq(adf_device_attach(&f.dev, 1, 2), 0);
	fl_assert_int_eq(adf_get_device_data(&f.dev, &data), 0);
	fl_assert_int_eq(data.n_attachments, 1);
	fl_assert(data.attachments[0].overlay_engine == 1 && data.attachments[0].interface == 2);
	adf_free_device_data(&data);
	tear_down(&f);
}

FL_TEST(libadf_simple_buffer_alloc)
{
	struct fixture f;
	__u32 w, h, offset, pitch;
	struct stat st;
	int buf;

	set_up(&f);
	current_mode(&f, &w, &h);
	buf = adf_interface_simple_buffer_alloc(f.intf, w, h, format8888(&f), &offset, &pitch);
	fl_assert_int_ge(buf, 0);
	fl_assert(pitch >= w * 4);
	/* Its memory holds the buffer at the offset given. */
	fl_assert_int_eq(fstat(buf, &st), 0);
	fl_assert((uint64_t)st.st_size >= (uint64_t)offset + (uint64_t)pitch * h);
	close(buf);
	fl_assert_int_eq(adf_interface_simple_buffer_alloc(f.intf, w, h, 0xDEADBEEF, &offset,
							   &pitch),
			 -EINVAL);
	tear_down(&f);
}

FL_TEST(libadf_simple_buffer)
{
	struct fixture f;
	__u32 w, h, offset, pitch, fmt;
	int buf, fence;

	set_up(&f);
	fmt = format8888(&f);
	buf = checkerboard(&f, fmt, &w, &h, &offset, &pitch, 0xFF0000FF);
	attach(&f);
	blank(&f, DRM_MODE_DPMS_ON);
	fence = adf_interface_simple_post(f.intf, f.eng_id, w, h, fmt, buf, offset, pitch, -1);
	fl_assert_int_ge(fence, 0);
	close(fence);
	close(buf);
	tear_down(&f);
}

FL_TEST(libadf_simple_buffer_v2)
{
	struct fixture f;
	__u32 w, h, offset, pitch, fmt;
	int buf, release, present, none = 0;

	set_up(&f);
	fmt = format8888(&f);
	buf = checkerboard(&f, fmt, &w, &h, &offset, &pitch, 0xFF0000FF);
	attach(&f);
	blank(&f, DRM_MODE_DPMS_ON);
	fl_assert_int_eq(adf_interface_simple_post_v2(f.intf, f.eng_id, w, h, fmt, buf, offset,
						      pitch, -1, ADF_COMPLETE_FENCE_RELEASE,
						      &release),
			 0);
	fl_assert_int_ge(release, 0);
	/* adf_test waits 1 s for it not to signal; it cannot while no later post exists. */
	fl_assert_int_eq(sync_wait(release, 0), -1);
	fl_assert_int_eq(errno, ETIME);
	fl_assert_int_eq(adf_interface_simple_post_v2(f.intf, f.eng_id, w, h, fmt, buf, offset,
						      pitch, -1, ADF_COMPLETE_FENCE_PRESENT,
						      &present),
			 0);
	fl_assert_int_ge(present, 0);
	fl_assert_int_eq(sync_wait(present, -1), 0);
	fl_assert_int_eq(sync_wait(release, 0), 0);
	fl_assert_int_eq(adf_interface_simple_post_v2(f.intf, f.eng_id, w, h, fmt, buf, offset,
						      pitch, -1, ADF_COMPLETE_FENCE_NONE, &none),
			 0);
	fl_assert_int_eq(none, -1);
	/* A NULL fence pointer: the library closes the fence itself (the fd-leak check sees it). */
	fl_assert_int_eq(adf_interface_simple_post_v2(f.intf, f.eng_id, w, h, fmt, buf, offset,
						      pitch, -1, ADF_COMPLETE_FENCE_PRESENT, NULL),
			 0);
	close(release);
	close(present);
	close(buf);
	tear_down(&f);
}

/*
 * A recovery UI as minui's ADF backend is one: RGB565 found by
 * adf_find_simple_post_configuration(), attach (-EALREADY is fine), two
 * simple buffers of the current mode mmap()ed, flips with V1 release
 * fences that are waited for before a buffer is drawn again, blank and
 * unblank after the first flip, the device closed at exit (the C++
 * MinuiBackendAdf; the C one closed the device early: libadf_fds_and_quirks).
 */
FL_TEST(libadf_recovery_ui)
{
	struct adf_device dev;
	struct adf_interface_data data;
	adf_id_t *ids, intf_id, eng_id;
	__u32 format = DRM_FORMAT_RGB565, w, h, offset[2], pitch[2];
	int intf, buf[2], release[2] = { -1, -1 }, err;
	uint16_t *px[2];
	struct fl_display_handle *native;
	struct fl_display_stats stats;
	ssize_t n = adf_devices(&ids);

	fl_assert_int_ge(n, 1);
	fl_assert_int_eq(adf_device_open(ids[0], O_RDWR, &dev), 0);
	free(ids);
	fl_assert_int_eq(adf_find_simple_post_configuration(&dev, &format, 1, &intf_id, &eng_id),
			 0);
	err = adf_device_attach(&dev, eng_id, intf_id);
	fl_assert(err == 0 || err == -EALREADY);
	intf = adf_interface_open(&dev, intf_id, O_RDWR);
	fl_assert_int_ge(intf, 0);
	fl_assert_int_eq(adf_get_interface_data(intf, &data), 0);
	w = data.current_mode.hdisplay;
	h = data.current_mode.vdisplay;
	adf_free_interface_data(&data);
	for (int i = 0; i < 2; i++) {
		buf[i] = adf_interface_simple_buffer_alloc(intf, w, h, format, &offset[i],
							   &pitch[i]);
		fl_assert_int_ge(buf[i], 0);
		fl_assert(pitch[i] >= w * 2);
		px[i] = mmap(NULL, (size_t)pitch[i] * h, PROT_WRITE, MAP_SHARED, buf[i], offset[i]);
		fl_assert(px[i] != MAP_FAILED);
	}
	for (int frame = 0; frame < 6; frame++) {
		int b = frame % 2;

		if (release[b] >= 0) {
			fl_assert_int_eq(sync_wait(release[b], -1), 0);
			close(release[b]);
		}
		for (__u32 y = 0; y < h; y++)
			for (__u32 x = 0; x < w; x++)
				px[b][(size_t)y * (pitch[b] / 2) + x] = (uint16_t)(x ^ y ^ frame);
		release[b] = adf_interface_simple_post(intf, eng_id, w, h, format, buf[b],
						       offset[b], pitch[b], -1);
		fl_assert_int_ge(release[b], 0);
		if (frame == 0) {
			err = adf_interface_blank(intf, DRM_MODE_DPMS_OFF);
			fl_assert(err == 0 || err == -EBUSY); /* interfaces start OFF */
			fl_assert_int_eq(adf_interface_blank(intf, DRM_MODE_DPMS_ON), 0);
		}
	}
	/* The post before last has left the screen. */
	fl_assert_int_eq(sync_wait(release[0], -1), 0);
	/* Once the last one is on screen (vsync by vsync), its V1 fence stays unsignalled. */
	fl_assert_int_eq(fl_display_device_open(0, &native), 0);
	fl_assert_int_eq(adf_set_event(intf, ADF_EVENT_VSYNC, true), 0);
	do {
		struct adf_event *ev;

		fl_assert_int_eq(adf_read_event(intf, &ev), 0);
		free(ev);
		fl_assert_int_eq(fl_display_device_get_stats(native, &stats, NULL), 0);
	} while (stats.flipped < 6);
	fl_display_close(native);
	fl_assert_int_eq(sync_wait(release[1], 0), -1);
	fl_assert_int_eq(errno, ETIME);
	for (int i = 0; i < 2; i++) {
		close(release[i]);
		munmap(px[i], (size_t)pitch[i] * h);
		close(buf[i]);
	}
	close(intf);
	adf_device_close(&dev);
	fl_display_disconnect();
}

FL_TEST(libadf_enumeration)
{
	struct fixture f;
	adf_id_t *ids, *out;
	ssize_t n;

	set_up(&f);
	/* The default phone: panel, hdmi, writeback; rgb32, rgb565, nv12, yuv420. */
	n = adf_interfaces(&f.dev, &ids);
	fl_assert_int_eq(n, 3);
	fl_assert(ids[0] == 0 && ids[1] == 1 && ids[2] == 2);
	fl_assert_int_eq(adf_interfaces_filter_by_type(&f.dev, ADF_INTF_HDMI, ids, 3, &out), 1);
	fl_assert_int_eq(out[0], 1);
	free(out);
	fl_assert_int_eq(
		adf_interfaces_filter_by_flag(&f.dev, ADF_INTF_FLAG_EXTERNAL, ids, 3, &out), 1);
	fl_assert_int_eq(out[0], 1);
	free(out);
	/* Any bit of the flag, as libadf's !!(flags & flag): the panel and the HDMI; 0 keeps none. */
	fl_assert_int_eq(adf_interfaces_filter_by_flag(
				 &f.dev, ADF_INTF_FLAG_PRIMARY | ADF_INTF_FLAG_EXTERNAL, ids, 3,
				 &out),
			 2);
	fl_assert(out[0] == 0 && out[1] == 1);
	free(out);
	fl_assert_int_eq(adf_interfaces_filter_by_flag(&f.dev, 0, ids, 3, &out), 0);
	free(out);
	fl_assert_int_eq(adf_interfaces_filter_by_type(&f.dev, ADF_INTF_VGA, ids, 3, &out), 0);
	fl_assert(out != NULL);
	free(out);
	free(ids);
	fl_assert_int_eq(adf_overlay_engines(&f.dev, &ids), 4);
	fl_assert_int_eq(adf_overlay_engines_filter_by_format(
				 &f.dev, (const __u32[]){ DRM_FORMAT_NV12, DRM_FORMAT_YUV420 }, 2,
				 ids, 4, &out),
			 2);
	fl_assert(out[0] == 2 && out[1] == 3);
	free(out);
	free(ids);
	fl_assert_int_eq(adf_overlay_engines_for_interface(&f.dev, 0, &ids), 4);
	free(ids);
	fl_assert_int_eq(adf_interfaces_for_overlay_engine(&f.dev, 1, &ids), 3);
	free(ids);
	/* NULL formats: any of ADF's RGB list; rgb32 is engine 0. */
	fl_assert_int_eq(adf_find_simple_post_configuration(&f.dev, NULL, 0, &f.intf_id, &f.eng_id),
			 0);
	fl_assert(f.intf_id == 0 && f.eng_id == 0);
	/* The first engine (in id order) listing any of the formats, whatever their order: rgb565. */
	fl_assert_int_eq(adf_find_simple_post_configuration(
				 &f.dev, (const __u32[]){ DRM_FORMAT_NV12, DRM_FORMAT_RGB565 }, 2,
				 &f.intf_id, &f.eng_id),
			 0);
	fl_assert(f.intf_id == 0 && f.eng_id == 1);
	/* NV21 is on no engine. */
	fl_assert_int_eq(adf_find_simple_post_configuration(&f.dev,
							    (const __u32[]){ DRM_FORMAT_NV21 }, 1,
							    &f.intf_id, &f.eng_id),
			 -ENODEV);
	tear_down(&f);
}

FL_TEST(libadf_fds_and_quirks)
{
	struct fixture f;
	struct adf_device_data dd;
	struct adf_device bad = { 0, -1 };
	struct adf_event *ev;
	adf_id_t *ids;
	char str[ADF_FORMAT_STR_SIZE];
	int p[2], d;

	set_up(&f);
	/* A dup() of an interface fd is the same open file: same handle, same subscription. */
	d = dup(f.intf);
	fl_assert_int_ge(d, 0);
	fl_assert_int_eq(adf_set_event(d, ADF_EVENT_VSYNC, true), 0);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, true), -EALREADY);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, false), 0);
	close(d);
	/* Fds not given out, and closed ones. */
	fl_assert_int_eq(pipe(p), 0);
	fl_assert_int_eq(adf_interface_blank(p[0], DRM_MODE_DPMS_ON), -ENOTTY);
	fl_assert_int_eq(adf_interface_blank(-1, DRM_MODE_DPMS_ON), -EBADF);
	/* The wrong kind of object: ADF's -EINVAL. */
	fl_assert_int_eq(adf_interface_blank(f.dev.fd, DRM_MODE_DPMS_ON), -EINVAL);
	fl_assert_int_eq(adf_interface_simple_buffer_alloc(f.eng, 64, 64, DRM_FORMAT_XRGB8888,
							   &(__u32){ 0 }, &(__u32){ 0 }),
			 -EINVAL);
	/* libadf's quirk: a first query that fails is -ENOMEM. */
	fl_assert_int_eq(adf_get_device_data(&bad, &dd), -ENOMEM);
	/* Unknown objects: what open() of a missing node gave. */
	fl_assert_int_eq(adf_interface_open(&f.dev, 77, O_RDWR), -ENOENT);
	fl_assert_int_eq(adf_device_open(77, O_RDWR, &bad), -ENOENT);
	/* adf_read_event(): header first, -EIO on a short read or a length below the header. */
	fl_assert_int_eq(write(p[1], &(struct adf_event){ .type = 0, .length = 4 },
			       sizeof(struct adf_event)),
			 sizeof(struct adf_event));
	fl_assert_int_eq(adf_read_event(p[0], &ev), -EIO);
	fl_assert_int_eq(write(p[1], &(struct adf_event){ .type = 0, .length = 16 },
			       sizeof(struct adf_event)),
			 sizeof(struct adf_event));
	fl_assert_int_eq(write(p[1], "abc", 3), 3);
	fl_assert_int_eq(adf_read_event(p[0], &ev), -EIO);
	fl_assert_int_eq(write(p[1], "abc", 3), 3);
	fl_assert_int_eq(adf_read_event(p[0], &ev), -EIO);
	close(p[0]);
	close(p[1]);
	adf_format_str(DRM_FORMAT_RGB565, str);
	fl_assert_str_eq(str, "RG16");
	/* V1 post of the device: a release fence; counts over ADF's limits are -EINVAL. */
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, NULL, ADF_MAX_BUFFERS + 1, NULL, 0),
			 -EINVAL);
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, NULL, 0, NULL,
					 ADF_MAX_CUSTOM_DATA_SIZE + 1),
			 -EINVAL);
	/* minui's C backend: the interface outlives its device's fd. */
	adf_device_close(&f.dev);
	fl_assert_int_eq(f.dev.fd, -1);
	fl_assert_int_eq(adf_interface_blank(f.intf, DRM_MODE_DPMS_ON), 0);
	fl_assert_int_eq(adf_interface_blank(f.intf, DRM_MODE_DPMS_ON), -EBUSY);
	/* Calls that found objects by the device id alone still work without its fd. */
	fl_assert_int_eq(adf_interfaces(&f.dev, &ids), 3);
	free(ids);
	/* Those that used its fd do not. */
	fl_assert_int_eq(adf_device_attach(&f.dev, f.eng_id, f.intf_id), -EBADF);
	tear_down(&f);
}

/* An interface fd the program closed is let go at the next open: the service forgets its handle. */
FL_TEST(libadf_closed_fd_reaped)
{
	struct fixture f;
	struct adf_interface_data data;
	int again;

	set_up(&f);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, true), 0);
	close(f.intf);
	/* A new open file: a new handle, whose subscription is its own. */
	again = adf_interface_open(&f.dev, f.intf_id, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	fl_assert_int_ge(again, 0);
	fl_assert(fcntl(again, F_GETFD) & FD_CLOEXEC);
	fl_assert(fcntl(again, F_GETFL) & O_NONBLOCK);
	fl_assert_int_eq(adf_set_event(again, ADF_EVENT_VSYNC, true), 0);
	fl_assert_int_eq(adf_get_interface_data(again, &data), 0);
	adf_free_interface_data(&data);
	/* Non-blocking and nothing queued (the interface is OFF: no vsync). */
	fl_assert_int_eq(adf_read_event(again, &(struct adf_event *){ NULL }), -EAGAIN);
	f.intf = again;
	tear_down(&f);
}

/*
 * ADF's errors for the fds of a post (spec §1.5 step 4, adf_buffer_import()):
 * a plane fd that is not open is dma_buf_get()'s -EBADF, an acquire fence
 * fd that is not open -EINVAL; and each is that post's error only: the
 * calls after it work (a bad fd once cost the program its connection, and
 * every handle -ECONNRESET).
 */
FL_TEST(libadf_post_bad_fds)
{
	struct fixture f;
	struct adf_buffer_config b;
	int buf, fence, closed;

	set_up(&f);
	b = posted_buffer(&f, &buf);
	closed = dup(buf);
	fl_assert_int_ge(closed, 0);
	close(closed);
	b.fd[0] = -1;
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, &b, 1, NULL, 0), -EBADF);
	b.fd[0] = closed;
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, &b, 1, NULL, 0), -EBADF);
	b.fd[0] = buf;
	b.acquire_fence = closed;
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, &b, 1, NULL, 0), -EINVAL);
	fl_assert_int_eq(adf_interface_simple_post(f.intf, f.eng_id, b.w, b.h, b.format, closed,
						   b.offset[0], b.pitch[0], -1),
			 -EBADF);
	fl_assert_int_eq(adf_interface_simple_post(f.intf, f.eng_id, b.w, b.h, b.format, buf,
						   b.offset[0], b.pitch[0], closed),
			 -EINVAL);
	/* The program goes on: the same handles post and answer. */
	b.acquire_fence = -1;
	fence = adf_device_post(&f.dev, &f.intf_id, 1, &b, 1, NULL, 0);
	fl_assert_int_ge(fence, 0);
	close(fence);
	fence = adf_interface_simple_post(f.intf, f.eng_id, b.w, b.h, b.format, buf, b.offset[0],
					  b.pitch[0], -1);
	fl_assert_int_ge(fence, 0);
	close(fence);
	close(buf);
	tear_down(&f);
}

/*
 * A V2 post with a complete_fence_type that is none of ADF's three is
 * refused with -EINVAL and *complete_fence left alone (libadf writes it only
 * on success); the type is the uapi's __u8, so 0x102 is RELEASE. The
 * program's next calls work: such a post once reached the service, which
 * cut the connection off as malformed.
 */
FL_TEST(libadf_post_v2_fence_type)
{
	struct fixture f;
	struct adf_buffer_config b;
	int buf, fence = 77;

	set_up(&f);
	b = posted_buffer(&f, &buf);
	fl_assert_int_eq(adf_device_post_v2(&f.dev, &f.intf_id, 1, &b, 1, NULL, 0,
					    (enum adf_complete_fence_type)3, &fence),
			 -EINVAL);
	fl_assert_int_eq(fence, 77);
	fl_assert_int_eq(adf_interface_simple_post_v2(f.intf, f.eng_id, b.w, b.h, b.format, buf,
						      b.offset[0], b.pitch[0], -1,
						      (enum adf_complete_fence_type)3, &fence),
			 -EINVAL);
	fl_assert_int_eq(fence, 77);
	fl_assert_int_eq(adf_device_post_v2(&f.dev, &f.intf_id, 1, &b, 1, NULL, 0,
					    (enum adf_complete_fence_type)0x102, &fence),
			 0);
	fl_assert_int_ge(fence, 0);
	/* A RELEASE fence: not signalled while its post is the last one. */
	fl_assert_int_eq(sync_wait(fence, 0), -1);
	close(fence);
	close(buf);
	tear_down(&f);
}

/*
 * libadf's conventions on bad arguments, as its ioctls had them: an array
 * the kernel would read from a NULL pointer is -EFAULT (copy_from_user()),
 * after the counts' -EINVAL; the free calls clear the pointers they free
 * (libadf's last, C++ version did: a second free, or a free after a failed
 * query, is harmless).
 */
FL_TEST(libadf_bad_arguments_and_ownership)
{
	struct fixture f;
	struct adf_buffer_config b = { 0 };
	struct adf_device_data dd;
	struct adf_interface_data id;
	struct adf_overlay_engine_data ed;
	int fence = 77;

	set_up(&f);
	fl_assert_int_eq(adf_device_post(&f.dev, NULL, 1, &b, 0, NULL, 0), -EFAULT);
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, &b, 0, NULL, 4), -EFAULT);
	fl_assert_int_eq(adf_device_post_v2(&f.dev, NULL, 1, &b, 0, NULL, 0,
					    ADF_COMPLETE_FENCE_PRESENT, &fence),
			 -EFAULT);
	fl_assert_int_eq(adf_device_post_v2(&f.dev, &f.intf_id, 1, &b, 0, NULL, 4,
					    ADF_COMPLETE_FENCE_PRESENT, &fence),
			 -EFAULT);
	fl_assert_int_eq(fence, 77);
	/* The counts come first, as the kernel's checks. */
	fl_assert_int_eq(adf_device_post(&f.dev, NULL, ADF_MAX_INTERFACES + 1, NULL, 0, NULL, 0),
			 -EINVAL);
	fl_assert_int_eq(adf_device_post(&f.dev, NULL, 1, NULL, 0, NULL,
					 ADF_MAX_CUSTOM_DATA_SIZE + 1),
			 -EINVAL);
	fl_assert_int_eq(adf_get_device_data(&f.dev, &dd), 0);
	fl_assert(dd.allowed_attachments != NULL);
	adf_free_device_data(&dd);
	fl_assert(dd.attachments == NULL && dd.allowed_attachments == NULL &&
		  dd.custom_data == NULL);
	adf_free_device_data(&dd);
	fl_assert_int_eq(adf_get_interface_data(f.intf, &id), 0);
	adf_free_interface_data(&id);
	fl_assert(id.available_modes == NULL && id.custom_data == NULL);
	adf_free_interface_data(&id);
	fl_assert_int_eq(adf_get_overlay_engine_data(f.eng, &ed), 0);
	adf_free_overlay_engine_data(&ed);
	fl_assert(ed.supported_formats == NULL && ed.custom_data == NULL);
	adf_free_overlay_engine_data(&ed);
	tear_down(&f);
}

/*
 * ADF imports every buffer (spec §1.5 step 4: planes, engine, plane fds,
 * acquire fence, buffer by buffer) before it validates any: a buffer whose
 * acquire fence is no fence, or whose plane is no memory, is refused with
 * -EINVAL before a later buffer's unknown engine (-ENOENT) is seen; an
 * earlier buffer's unknown engine still comes first.
 */
FL_TEST(libadf_post_import_order)
{
	struct fixture f;
	struct adf_buffer_config b[2];
	int buf, p[2];

	set_up(&f);
	b[1] = b[0] = posted_buffer(&f, &buf);
	fl_assert_int_eq(pipe(p), 0);
	b[0].acquire_fence = p[0];
	b[1].overlay_engine = 99;
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, b, 2, NULL, 0), -EINVAL);
	b[0].acquire_fence = -1;
	b[0].fd[0] = p[0];
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, b, 2, NULL, 0), -EINVAL);
	/* The unknown engine first: its buffer is imported first. */
	b[0].overlay_engine = 99;
	b[1].overlay_engine = f.eng_id;
	fl_assert_int_eq(adf_device_post(&f.dev, &f.intf_id, 1, b, 2, NULL, 0), -ENOENT);
	close(p[0]);
	close(p[1]);
	close(buf);
	tear_down(&f);
}

/*
 * libadf found a device's objects by their /dev names alone: for a device
 * id with no device there are none (0 and an array), and
 * adf_find_simple_post_configuration() says -ENODEV; only opening one is
 * open()'s -ENOENT.
 */
FL_TEST(libadf_objects_of_a_missing_device)
{
	struct adf_device none = { 77, -1 };
	adf_id_t *ids = NULL, intf, eng;

	fl_assert_int_eq(adf_interfaces(&none, &ids), 0);
	fl_assert(ids != NULL);
	free(ids);
	ids = NULL;
	fl_assert_int_eq(adf_overlay_engines(&none, &ids), 0);
	fl_assert(ids != NULL);
	free(ids);
	fl_assert_int_eq(adf_find_simple_post_configuration(&none, NULL, 0, &intf, &eng), -ENODEV);
	fl_assert_int_eq(adf_interface_open(&none, 0, O_RDWR), -ENOENT);
	fl_display_disconnect();
}

/*
 * libadf's calls return -errno and leave errno to the system calls they
 * make: a call that succeeds never sets errno to 0 (POSIX: no function
 * does), so a program's errno survives a format check or a filter.
 */
FL_TEST(libadf_errno_left_alone)
{
	struct fixture f;
	adf_id_t ids[2] = { 0, 1 }, *out;

	set_up(&f);
	errno = EINTR;
	fl_assert(adf_overlay_engine_supports_format(f.eng, format8888(&f)));
	fl_assert_int_eq(errno, EINTR);
	fl_assert_int_eq(adf_interfaces_filter_by_type(&f.dev, ADF_INTF_DSI, ids, 2, &out), 1);
	free(out);
	fl_assert_int_eq(errno, EINTR);
	fl_assert_int_eq(
		adf_overlay_engines_filter_by_format(&f.dev, fmt8888, N_FMT8888, ids, 2, &out), 1);
	free(out);
	fl_assert_int_eq(errno, EINTR);
	tear_down(&f);
}

/*
 * The rest of the audit's rules (docs/compat.md, "Verified against spec
 * §1"): every call on the wrong kind of object is ADF's -EINVAL, the event
 * type is the uapi's __u8 and reserved types are -EINVAL, simple buffers are
 * RGB only (C8 included, 4444 not), fds come back O_CLOEXEC, and a post is
 * not checked against the attachments.
 */
FL_TEST(libadf_wrong_kinds_types_and_fds)
{
	struct fixture f;
	struct adf_device as_intf;
	struct drm_mode_modeinfo m;
	struct adf_interface_data id;
	struct adf_overlay_engine_data ed;
	__u32 w, h, offset, pitch, fmt;
	int buf, fence, c8;

	set_up(&f);
	as_intf = (struct adf_device){ 0, f.intf };
	memset(&m, 0, sizeof(m));
	fl_assert_int_eq(adf_interface_set_mode(f.eng, &m), -EINVAL);
	fl_assert_int_eq(adf_get_interface_data(f.eng, &id), -EINVAL);
	fl_assert_int_eq(adf_get_overlay_engine_data(f.intf, &ed), -EINVAL);
	fl_assert_int_eq(adf_device_attach(&as_intf, f.eng_id, f.intf_id), -EINVAL);
	fl_assert_int_eq(adf_device_post(&as_intf, &f.intf_id, 1, NULL, 0, NULL, 0), -EINVAL);
	/* Events: none on the engine, reserved types, the __u8. */
	fl_assert_int_eq(adf_set_event(f.eng, ADF_EVENT_VSYNC, true), -EOPNOTSUPP);
	fl_assert_int_eq(adf_set_event(f.intf, (enum adf_event_type)2, true), -EINVAL);
	fl_assert_int_eq(adf_set_event(f.intf, (enum adf_event_type)200, true), -EINVAL);
	fl_assert_int_eq(adf_set_event(f.intf, (enum adf_event_type)0x100, true), 0);
	fl_assert_int_eq(adf_set_event(f.intf, ADF_EVENT_VSYNC, true), -EALREADY);
	/* Simple buffers: ADF's RGB list. */
	c8 = adf_interface_simple_buffer_alloc(f.intf, 64, 64, DRM_FORMAT_C8, &offset, &pitch);
	fl_assert_int_ge(c8, 0);
	fl_assert(pitch >= 64);
	fl_assert(fcntl(c8, F_GETFD) & FD_CLOEXEC);
	close(c8);
	fl_assert_int_eq(adf_interface_simple_buffer_alloc(f.intf, 64, 64, DRM_FORMAT_ARGB4444,
							   &offset, &pitch),
			 -EINVAL);
	fl_assert_int_eq(adf_interface_simple_buffer_alloc(f.intf, 64, 64, DRM_FORMAT_NV12, &offset,
							   &pitch),
			 -EINVAL);
	/* Not attached: ADF posts anyway (routing is the driver's). */
	fmt = format8888(&f);
	buf = checkerboard(&f, fmt, &w, &h, &offset, &pitch, 0xFF0000FF);
	fl_assert(fcntl(buf, F_GETFD) & FD_CLOEXEC);
	(void)adf_device_detach(&f.dev, f.eng_id, f.intf_id); /* if attached: now it is not */
	fl_assert_int_eq(adf_device_detach(&f.dev, f.eng_id, f.intf_id), -EINVAL);
	fence = adf_interface_simple_post(f.intf, f.eng_id, w, h, fmt, buf, offset, pitch, -1);
	fl_assert_int_ge(fence, 0);
	fl_assert(fcntl(fence, F_GETFD) & FD_CLOEXEC);
	close(fence);
	close(buf);
	tear_down(&f);
}

/* SPDX-License-Identifier: MIT */
/* What the display service tests share (disp-fixture.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "disp-fixture.h"
#include "runner.h"

void disp_open(struct disp *d)
{
	struct fl_display_device_data dd = { 0 };
	struct fl_display_attachment allowed[FL_DISPLAY_MAX_ATTACHMENTS];
	uint32_t *ids = NULL;
	bool found = false;

	memset(d, 0, sizeof(*d));
	fl_assert(fl_display_devices(&ids) >= 1);
	fl_assert_int_eq(ids[0], 0);
	free(ids);
	fl_assert_int_eq(fl_display_device_open(0, &d->dev), 0);
	dd.allowed = allowed;
	dd.n_allowed = FL_DISPLAY_MAX_ATTACHMENTS;
	fl_assert_int_eq(fl_display_device_get_data(d->dev, &dd, NULL), 0);
	/* adf_find_simple_post_configuration(): the primary interface, an allowed XR24 engine. */
	for (size_t i = 0; i < dd.n_allowed && !found; i++) {
		struct fl_display_handle *intf, *eng;
		struct fl_display_interface_data id = { 0 };
		struct fl_display_engine_data ed = { 0 };
		uint32_t formats[64];

		fl_assert_int_eq(fl_display_interface_open(d->dev, allowed[i].interface, &intf), 0);
		fl_assert_int_eq(fl_display_interface_get_data(intf, &id, NULL), 0);
		fl_assert_int_eq(fl_display_engine_open(d->dev, allowed[i].engine, &eng), 0);
		ed.formats = formats;
		ed.n_formats = 64;
		fl_assert_int_eq(fl_display_engine_get_data(eng, &ed, NULL), 0);
		for (size_t f = 0; f < ed.n_formats && f < 64; f++)
			found |= (id.flags & FL_DISPLAY_INTF_PRIMARY) && formats[f] == XR24;
		if (found) {
			d->intf = intf;
			d->eng = eng;
			d->intf_id = allowed[i].interface;
			d->eng_id = allowed[i].engine;
			d->mode = id.current_mode;
		} else {
			fl_display_close(intf);
			fl_display_close(eng);
		}
	}
	fl_assert(found);
}

void disp_close(struct disp *d)
{
	fl_display_close(d->intf);
	fl_display_close(d->eng);
	fl_display_close(d->dev);
	fl_display_disconnect();
}

uint32_t dpms_of(struct fl_display_handle *intf)
{
	struct fl_display_interface_data id = { 0 };

	fl_assert_int_eq(fl_display_interface_get_data(intf, &id, NULL), 0);
	return id.dpms_state;
}

/* A simple buffer of the mode's size, filled with @px. */
int simple_buffer(struct disp *d, uint32_t px, struct fl_display_buffer *b)
{
	uint32_t off, pitch, *p;
	int fd;

	fl_assert_int_eq(fl_display_simple_buffer_alloc(d->intf, d->mode.hdisplay, d->mode.vdisplay,
							XR24, &fd, &off, &pitch, NULL),
			 0);
	p = mmap(NULL, (size_t)pitch * d->mode.vdisplay + off, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	fl_assert(p != MAP_FAILED);
	for (uint32_t y = 0; y < d->mode.vdisplay; y++)
		for (uint32_t x = 0; x < d->mode.hdisplay; x++)
			/* adf_test's checkerboard: four quadrants. */
			p[(off + (size_t)y * pitch) / 4 + x] =
				((x < d->mode.hdisplay / 2) ^ (y < d->mode.vdisplay / 2)) ? px
											  : ~px;
	munmap(p, (size_t)pitch * d->mode.vdisplay + off);
	*b = (struct fl_display_buffer){ .engine = d->eng_id,
					 .w = d->mode.hdisplay,
					 .h = d->mode.vdisplay,
					 .format = XR24,
					 .n_planes = 1,
					 .fd = { fd },
					 .offset = { off },
					 .pitch = { pitch },
					 .acquire_fence = -1 };
	return fd;
}

void attach_and_light(struct disp *d)
{
	int r = fl_display_attach(d->dev, d->eng_id, d->intf_id, NULL);

	fl_assert(r == 0 || r == -EALREADY);
	if (dpms_of(d->intf) != FL_DISPLAY_DPMS_ON)
		fl_assert_int_eq(fl_display_blank(d->intf, FL_DISPLAY_DPMS_ON, NULL), 0);
}

int raw_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *dir = getenv("XDG_RUNTIME_DIR");
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	fl_assert(fd >= 0 && dir);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/displayd.sock", dir);
	fl_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/*
 * The pid of the display service, from its DHELLO reply (its socket's
 * credentials are those of the process that listened, which forked it).
 */
pid_t service_pid(void)
{
	uint32_t hello[6] = { 128, 0, 1, 8, 1, 0 }, rep[8] = { 0 };
	int fd = raw_connect();

	fl_assert_int_eq(send(fd, hello, sizeof(hello), 0), sizeof(hello));
	fl_assert_int_eq(recv(fd, rep, sizeof(rep), 0), 32);
	fl_assert_int_eq(rep[0], 128u | 0x80000000u);
	fl_assert_int_eq((int32_t)rep[4], 0);
	close(fd);
	return (pid_t)rep[7];
}

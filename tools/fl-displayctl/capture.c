/* SPDX-License-Identifier: MIT */
/*
 * fl-displayctl capture: what an interface shows now (fl_display_capture(),
 * composed by the driver only because somebody looks), written as a PNG
 * by the project's own writer (src/display/display-png.h). A writeback
 * interface is captured the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "display-png.h"
#include "displayctl.h"

const char dctl_capture_usage[] =
	"usage: fl-displayctl capture [DEVICE.INTERFACE] -o FILE.png\n"
	"Writes the frame the interface shows now as an RGB PNG (black where no\n"
	"buffer is). Without DEVICE.INTERFACE: device 0's primary interface.\n";

/* Device 0's primary interface, else its interface 0: the display a program gets by default. */
static int open_default(struct dctl_target *t)
{
	uint32_t pick = 0, n = 0;
	int r = dctl_open_device("0", t);

	if (r)
		return r;
	r = dctl_count(t->dev, false, &n);
	if (r < 0)
		return dctl_fail(r, NULL, "counting the interfaces of %s", t->dev_name);
	for (uint32_t id = 0; id < n; id++) {
		struct fl_display_interface_data d = { 0 };
		struct fl_display_handle *h;
		int s = fl_display_interface_open(t->dev, id, &h);

		if (s == 0) {
			s = fl_display_interface_get_data(h, &d, NULL);
			fl_display_close(h);
		}
		if (s < 0)
			return dctl_fail(s, NULL, "finding the primary interface of %s",
					 t->dev_name);
		if (d.flags & FL_DISPLAY_INTF_PRIMARY) {
			pick = id;
			break;
		}
	}
	snprintf(t->intf_name, sizeof(t->intf_name), "%u", pick);
	r = fl_display_interface_open(t->dev, pick, &t->intf);
	if (r < 0)
		return dctl_fail(r, NULL, "opening interface %u of %s", pick, t->dev_name);
	{
		struct fl_display_interface_data d = { 0 };

		if (fl_display_interface_get_data(t->intf, &d, NULL) == 0)
			snprintf(t->intf_name, sizeof(t->intf_name), "%s", d.name);
	}
	t->intf_id = pick;
	return 0;
}

int dctl_cmd_capture(int argc, char **argv)
{
	const uint32_t xr24 = FL_FOURCC('X', 'R', '2', '4');
	struct dctl_target t = { 0 };
	struct fl_display_error e = { 0 };
	struct fl_display_compose_target frame;
	const char *spec = NULL, *out = NULL;
	uint32_t w, h, pitch;
	void *map;
	int fd, r;

	if (dctl_wants_help(argc, argv)) {
		fputs(dctl_capture_usage, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] == '-' || spec)
			return dctl_usage(dctl_capture_usage, "capture: unexpected '%s'", argv[i]);
		else
			spec = argv[i];
	}
	if (!out)
		return dctl_usage(dctl_capture_usage, "capture: -o FILE.png is required");
	r = spec ? dctl_open_interface(spec, &t) : open_default(&t);
	if (r)
		goto out;
	r = fl_display_capture(t.intf, xr24, &fd, &w, &h, &pitch, &e);
	if (r < 0) {
		r = dctl_fail(r, &e, "capture of %s.%s", t.dev_name, t.intf_name);
		goto out;
	}
	map = mmap(NULL, (size_t)pitch * h, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		r = dctl_fail(-errno, NULL, "mapping the capture of %s.%s", t.dev_name,
			      t.intf_name);
		close(fd);
		goto out;
	}
	frame = (struct fl_display_compose_target){
		map, (uint64_t)pitch * h, 0, pitch, xr24, w, h
	};
	r = fl__display_png_write(out, &frame, &e);
	munmap(map, (size_t)pitch * h);
	close(fd);
	if (r < 0)
		r = dctl_fail(r, &e, "writing %s", out);
	else
		printf("%s.%s: %ux%u frame written to %s\n", t.dev_name, t.intf_name, w, h, out);
out:
	dctl_target_close(&t);
	return r;
}

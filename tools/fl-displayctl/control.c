/* SPDX-License-Identifier: MIT */
/*
 * The commands that change one thing and say what happened: hotplug and
 * unplug, blank, mode, attach and detach; and stats, which reads a
 * device's counters. Each is one call of the native API; its refusal is
 * printed with the service's reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "displayctl.h"

const char dctl_connect_usage[] =
	"usage: fl-displayctl hotplug DEVICE.INTERFACE\n"
	"       fl-displayctl unplug DEVICE.INTERFACE\n"
	"Plugs or unplugs an interface whose driver simulates hotplug (the virtual one);\n"
	"it takes its configured modes when plugged, and a HOTPLUG event follows.\n";

const char dctl_blank_usage[] =
	"usage: fl-displayctl blank DEVICE.INTERFACE on|standby|suspend|off\n"
	"Sets the interface's DPMS state (ADF_BLANK). A state other than on\n"
	"first flushes the device's post queue.\n";

const char dctl_mode_usage[] =
	"usage: fl-displayctl mode DEVICE.INTERFACE WxH[@HZ]\n"
	"Switches the interface to the first of its modes of that size (and refresh).\n";

const char dctl_attach_usage[] =
	"usage: fl-displayctl attach DEVICE ENGINE INTERFACE\n"
	"       fl-displayctl detach DEVICE ENGINE INTERFACE\n"
	"Attaches an overlay engine to an interface, or detaches it (ADF_ATTACH,\n"
	"ADF_DETACH); only the pairs `list` shows as allowed can be attached.\n";

const char dctl_stats_usage[] =
	"usage: fl-displayctl stats DEVICE\n"
	"Prints the device's post queue and its counters, and its driver's own\n"
	"(the kms driver's zero-copy imports and copies into dumb buffers).\n";

/* argv[0] COMMAND, then exactly @n operands; --help handled. -1 to go on, else an exit status. */
static int operands(int argc, char **argv, int n, const char *usage)
{
	if (dctl_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1])
			return dctl_usage(usage, "%s: unknown option '%s'", argv[0], argv[i]);
	if (argc - 1 != n)
		return dctl_usage(usage, "%s: %s operands", argv[0],
				  argc - 1 < n ? "missing" : "too many");
	return -1;
}

int dctl_cmd_connect(int argc, char **argv)
{
	struct dctl_target t = { 0 };
	struct fl_display_error e = { 0 };
	bool plug = !strcmp(argv[0], "hotplug");
	int r = operands(argc, argv, 1, dctl_connect_usage);

	if (r >= 0)
		return r;
	r = dctl_open_interface(argv[1], &t);
	if (r)
		goto out;
	r = fl_display_set_connected(t.intf, plug, &e);
	if (r == -EALREADY)
		r = (fprintf(stderr, "fl-displayctl: %s.%s is %s already\n", t.dev_name,
			     t.intf_name, plug ? "connected" : "disconnected"),
		     DCTL_EXIT_FAIL);
	else if (r < 0)
		r = dctl_fail(r, &e, "%s %s.%s", argv[0], t.dev_name, t.intf_name);
	else
		printf("%s.%s %s\n", t.dev_name, t.intf_name, plug ? "connected" : "disconnected");
out:
	dctl_target_close(&t);
	return r;
}

int dctl_cmd_blank(int argc, char **argv)
{
	struct dctl_target t = { 0 };
	struct fl_display_error e = { 0 };
	int r = operands(argc, argv, 2, dctl_blank_usage);
	unsigned int state;

	if (r >= 0)
		return r;
	for (state = 0; state < 4; state++)
		if (!strcmp(argv[2], dctl_dpms(state)))
			break;
	if (state == 4)
		return dctl_usage(dctl_blank_usage, "blank: unknown DPMS state '%s'", argv[2]);
	r = dctl_open_interface(argv[1], &t);
	if (r)
		goto out;
	r = fl_display_blank(t.intf, state, &e);
	if (r == -EBUSY)
		r = (fprintf(stderr, "fl-displayctl: %s.%s is in DPMS %s already\n", t.dev_name,
			     t.intf_name, argv[2]),
		     DCTL_EXIT_FAIL);
	else if (r < 0)
		r = dctl_fail(r, &e, "blank %s.%s %s", t.dev_name, t.intf_name, argv[2]);
	else
		printf("%s.%s DPMS %s\n", t.dev_name, t.intf_name, argv[2]);
out:
	dctl_target_close(&t);
	return r;
}

/* "WxH" or "WxH@HZ" (refresh 0: any). */
static bool parse_mode(const char *s, unsigned int *w, unsigned int *h, unsigned int *hz)
{
	char tail;
	int n;

	*hz = 0;
	n = sscanf(s, "%5ux%5u%c%4u%c", w, h, &tail, hz, &tail);
	if (n == 2)
		return strspn(s, "0123456789x") == strlen(s) && *w && *h;
	return n == 4 && tail == '@' && strspn(s, "0123456789x@") == strlen(s) && *w && *h && *hz;
}

int dctl_cmd_mode(int argc, char **argv)
{
	struct dctl_target t = { 0 };
	struct fl_display_interface_data d = { 0 };
	struct fl_display_error e = { 0 };
	const struct fl_display_mode *m = NULL;
	unsigned int w, h, hz;
	char buf[48];
	int r = operands(argc, argv, 2, dctl_mode_usage);

	if (r >= 0)
		return r;
	if (!parse_mode(argv[2], &w, &h, &hz))
		return dctl_usage(dctl_mode_usage, "mode: '%s' is not WxH or WxH@HZ", argv[2]);
	r = dctl_open_interface(argv[1], &t);
	if (r)
		goto out;
	r = dctl_interface_data(t.intf, &d, &e);
	if (r < 0) {
		r = dctl_fail(r, &e, "reading %s.%s", t.dev_name, t.intf_name);
		goto out;
	}
	for (size_t i = 0; i < d.n_modes && !m; i++)
		if (d.modes[i].hdisplay == w && d.modes[i].vdisplay == h &&
		    (!hz || d.modes[i].vrefresh == hz))
			m = &d.modes[i];
	if (!m) {
		fprintf(stderr, "fl-displayctl: %s.%s has no mode %s (its modes:", t.dev_name,
			t.intf_name, argv[2]);
		for (size_t i = 0; i < d.n_modes; i++)
			fprintf(stderr, " %s", dctl_mode(&d.modes[i], buf));
		fprintf(stderr, "%s)\n", d.n_modes ? "" : " none");
		r = DCTL_EXIT_FAIL;
		goto out;
	}
	r = fl_display_set_mode(t.intf, m, &e);
	if (r < 0)
		r = dctl_fail(r, &e, "mode %s.%s %s", t.dev_name, t.intf_name, argv[2]);
	else
		printf("%s.%s mode %s\n", t.dev_name, t.intf_name, dctl_mode(m, buf));
out:
	free(d.modes);
	dctl_target_close(&t);
	return r;
}

int dctl_cmd_attach(int argc, char **argv)
{
	struct dctl_target t = { 0 };
	struct fl_display_error e = { 0 };
	char eng_name[FL_DISPLAY_NAME_LEN], intf_name[FL_DISPLAY_NAME_LEN];
	bool attach = !strcmp(argv[0], "attach");
	uint32_t eng, intf;
	int r = operands(argc, argv, 3, dctl_attach_usage);

	if (r >= 0)
		return r;
	r = dctl_open_device(argv[1], &t);
	if (!r)
		r = dctl_find_object(&t, true, argv[2], &eng, eng_name);
	if (!r)
		r = dctl_find_object(&t, false, argv[3], &intf, intf_name);
	if (r)
		goto out;
	r = attach ? fl_display_attach(t.dev, eng, intf, &e)
		   : fl_display_detach(t.dev, eng, intf, &e);
	if (r < 0)
		r = dctl_fail(r, &e, "%s %s: engine %s, interface %s", argv[0], t.dev_name,
			      eng_name, intf_name);
	else
		printf("%s: engine %s %s interface %s\n", t.dev_name, eng_name,
		       attach ? "attached to" : "detached from", intf_name);
out:
	dctl_target_close(&t);
	return r;
}

/*
 * The driver's own counters of device @id (the kms driver's copies and
 * imports), from the service's dump: its "driver counters:" line, one
 * counter a line. Nothing when the driver keeps none or no dump is had.
 */
static void driver_counters(uint32_t id)
{
	char head[32], *text = NULL, *sec, *end, *line;
	struct stat st;
	int fd = -1;

	if (fl_introspect_display_dump(0, &fd) < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < (1 << 24) &&
	    (text = calloc(1, (size_t)st.st_size + 1)) &&
	    pread(fd, text, (size_t)st.st_size, 0) == st.st_size) {
		snprintf(head, sizeof(head), "device %u '", id);
		sec = strstr(text, head);
		end = sec ? strstr(sec + 1, "\ndevice ") : NULL;
		if (end)
			*end = '\0';
		line = sec ? strstr(sec, "  driver counters:") : NULL;
		if (line) {
			char *save = NULL, *item;

			line[strcspn(line, "\n")] = '\0';
			printf("  driver counters:\n");
			for (item = strtok_r(line + strlen("  driver counters:"), ",", &save); item;
			     item = strtok_r(NULL, ",", &save)) {
				char name[64];
				unsigned long long v;

				if (sscanf(item, " %63s %llu", name, &v) == 2)
					printf("    %-17s %llu\n", name, v);
			}
		}
	}
	free(text);
	close(fd);
}

int dctl_cmd_stats(int argc, char **argv)
{
	struct dctl_target t = { 0 };
	struct fl_display_error e = { 0 };
	struct fl_display_stats s;
	int r = operands(argc, argv, 1, dctl_stats_usage);

	if (r >= 0)
		return r;
	r = dctl_open_device(argv[1], &t);
	if (r)
		goto out;
	r = fl_display_device_get_stats(t.dev, &s, &e);
	if (r < 0) {
		r = dctl_fail(r, &e, "stats of %s", t.dev_name);
		goto out;
	}
	printf("device %u: %s\n", t.dev_id, t.dev_name);
	printf("  queued             %llu\n", (unsigned long long)s.queued);
	printf("  posted             %llu\n", (unsigned long long)s.posted);
	printf("  flipped            %llu\n", (unsigned long long)s.flipped);
	printf("  dropped            %llu\n", (unsigned long long)s.dropped);
	printf("  fence_failures     %llu\n", (unsigned long long)s.fence_failures);
	printf("  on_screen_buffers  %llu\n", (unsigned long long)s.on_screen_buffers);
	printf("  vsyncs             %llu\n", (unsigned long long)s.vsyncs);
	driver_counters(t.dev_id);
out:
	dctl_target_close(&t);
	return r;
}

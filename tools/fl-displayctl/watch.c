/* SPDX-License-Identifier: MIT */
/*
 * fl-displayctl watch: VSYNC and HOTPLUG events as they come, one line
 * each, with the time (the vsync's own timestamp; for other events when
 * the tool read them) and, for vsyncs, the period since the interface's
 * previous one and how many frames of its current mode that is, so a
 * skipped frame shows.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "displayctl.h"

const char dctl_watch_usage[] =
	"usage: fl-displayctl watch [--count N] [DEVICE.INTERFACE]\n"
	"Prints VSYNC and HOTPLUG events as they come (every interface of every device,\n"
	"or the one named) with their CLOCK_MONOTONIC time in seconds and, for vsyncs,\n"
	"the period since the previous one. Stops after N events with --count, else on\n"
	"Ctrl-C. Only an interface that is DPMS on, connected and has a mode has vsyncs.\n";

/* Interfaces watched at most: every interface of every device is a lot of fds. */
#define MAX_WATCHED 256

struct watched {
	struct fl_display_handle *dev, *intf;
	char name[2 * FL_DISPLAY_NAME_LEN + 1];
	uint64_t last_vsync; /* 0: none yet */
	uint64_t frame_ns; /* of the current mode, 0 when unknown */
	bool owns_dev;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The current mode's frame time from its timings (0 for a mode without them). */
static void read_frame_time(struct watched *w)
{
	struct fl_display_interface_data d = { 0 };
	const struct fl_display_mode *m = &d.current_mode;

	w->frame_ns = 0;
	if (fl_display_interface_get_data(w->intf, &d, NULL) < 0 || !m->clock)
		return;
	w->frame_ns = (uint64_t)m->htotal * m->vtotal * 1000000ull / m->clock;
}

/*
 * Subscribes @w to VSYNC and HOTPLUG. Watching everything, a type an
 * interface lacks is skipped; named, every refusal is an error. Returns the
 * number of types subscribed, or a negative errno.
 */
static int subscribe(struct watched *w, bool strict, struct fl_display_error *e)
{
	static const uint32_t types[] = { FL_DISPLAY_EVENT_VSYNC, FL_DISPLAY_EVENT_HOTPLUG };
	int n = 0;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int r = fl_display_set_event(w->intf, types[i], 1, e);

		if (r == 0)
			n++;
		else if (strict || (r != -EINVAL && r != -EOPNOTSUPP))
			return r;
	}
	return n;
}

static void print_event(struct watched *w, const struct fl_display_event *ev)
{
	uint64_t t;

	if (ev->type == FL_DISPLAY_EVENT_VSYNC &&
	    ev->length >= sizeof(struct fl_display_vsync_event)) {
		t = ((const struct fl_display_vsync_event *)ev)->timestamp;
		printf("%llu.%09llu %s vsync", (unsigned long long)(t / 1000000000ull),
		       (unsigned long long)(t % 1000000000ull), w->name);
		if (w->last_vsync && t > w->last_vsync) {
			uint64_t p = t - w->last_vsync;

			printf(" period %.3f ms", (double)p / 1e6);
			if (w->frame_ns)
				printf(" (%llu frame%s)",
				       (unsigned long long)((p + w->frame_ns / 2) / w->frame_ns),
				       (p + w->frame_ns / 2) / w->frame_ns == 1 ? "" : "s");
		}
		w->last_vsync = t;
	} else if (ev->type == FL_DISPLAY_EVENT_HOTPLUG &&
		   ev->length >= sizeof(struct fl_display_hotplug_event)) {
		t = now_ns();
		printf("%llu.%09llu %s hotplug %s", (unsigned long long)(t / 1000000000ull),
		       (unsigned long long)(t % 1000000000ull), w->name,
		       ((const struct fl_display_hotplug_event *)ev)->connected ? "connected"
										: "disconnected");
		/* Its modes changed: the next vsync's period starts afresh. */
		w->last_vsync = 0;
		read_frame_time(w);
	} else {
		t = now_ns();
		printf("%llu.%09llu %s event type %u (%u bytes)",
		       (unsigned long long)(t / 1000000000ull),
		       (unsigned long long)(t % 1000000000ull), w->name, ev->type, ev->length);
	}
	putchar('\n');
	fflush(stdout);
}

/* Adds every interface of every device that has events to @w (*@n of them); returns 0 or an exit status. */
static int watch_all(struct watched *w, int *n)
{
	uint32_t *ids = NULL;
	int nd = fl_display_devices(&ids), r = 0;

	if (nd < 0)
		return dctl_fail(nd, NULL, "listing display devices");
	for (int i = 0; i < nd && !r; i++) {
		struct fl_display_device_data dd = { 0 };
		struct fl_display_handle *dev;
		uint32_t n_intfs = 0;
		bool used = false;

		r = fl_display_device_open(ids[i], &dev);
		if (r == -ENODEV) {
			r = 0;
			continue;
		}
		if (r == 0 && ((r = fl_display_device_get_data(dev, &dd, NULL)) < 0 ||
			       (r = dctl_count(dev, false, &n_intfs)) < 0))
			fl_display_close(dev);
		if (r < 0) {
			r = dctl_fail(r, NULL, "opening display device %u", ids[i]);
			break;
		}
		for (uint32_t id = 0; id < n_intfs && *n < MAX_WATCHED; id++) {
			struct fl_display_interface_data d = { 0 };
			struct fl_display_error e = { 0 };
			struct watched *x = &w[*n];
			int s;

			x->intf = NULL; /* a skipped interface's handle, closed, may be here */
			s = fl_display_interface_open(dev, id, &x->intf);
			if (s == 0)
				s = fl_display_interface_get_data(x->intf, &d, &e);
			snprintf(x->name, sizeof(x->name), "%s.%s", dd.name, d.name);
			if (s == 0)
				s = subscribe(x, false, &e);
			if (s < 0) {
				fl_display_close(x->intf);
				r = dctl_fail(s, &e, "watching interface %u of %s", id, dd.name);
				break;
			}
			if (s == 0) {
				fl_display_close(x->intf);
				continue;
			}
			x->dev = dev;
			x->owns_dev = !used;
			used = true;
			(*n)++;
		}
		if (!used)
			fl_display_close(dev);
	}
	free(ids);
	if (!r && *n == MAX_WATCHED)
		fprintf(stderr,
			"fl-displayctl: watching the first %d interfaces only; name one to watch "
			"it\n",
			MAX_WATCHED);
	return r;
}

int dctl_cmd_watch(int argc, char **argv)
{
	struct watched *w = calloc(MAX_WATCHED, sizeof(*w));
	struct pollfd *pfd = calloc(MAX_WATCHED, sizeof(*pfd));
	const char *spec = NULL;
	unsigned long count = 0, seen = 0;
	int n = 0, r = 0;

	if (!w || !pfd) {
		r = dctl_fail(-ENOMEM, NULL, "watch");
		goto out;
	}
	if (dctl_wants_help(argc, argv)) {
		fputs(dctl_watch_usage, stdout);
		goto out;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--count") && i + 1 < argc) {
			char *end;

			errno = 0;
			count = strtoul(argv[++i], &end, 10);
			if (*end || errno || !count || argv[i][0] == '-') {
				r = dctl_usage(dctl_watch_usage, "watch: bad --count '%s'",
					       argv[i]);
				goto out;
			}
		} else if (argv[i][0] == '-' || spec) {
			r = dctl_usage(dctl_watch_usage, "watch: unexpected '%s'", argv[i]);
			goto out;
		} else {
			spec = argv[i];
		}
	}
	if (spec) {
		struct dctl_target t = { 0 };
		struct fl_display_error e = { 0 };
		int s;

		r = dctl_open_interface(spec, &t);
		if (r) {
			dctl_target_close(&t);
			goto out;
		}
		w[0] = (struct watched){ t.dev, t.intf, "", 0, 0, true };
		snprintf(w[0].name, sizeof(w[0].name), "%s.%s", t.dev_name, t.intf_name);
		n = 1;
		s = subscribe(&w[0], true, &e);
		if (s < 0) {
			r = dctl_fail(s, &e, "watching %s", w[0].name);
			goto out;
		}
	} else {
		r = watch_all(w, &n);
		if (r)
			goto out;
		if (n == 0) {
			fprintf(stderr, "fl-displayctl: no interface to watch\n");
			r = DCTL_EXIT_FAIL;
			goto out;
		}
	}
	/* Subscribed: from here on no event is missed. Scripts wait for these lines. */
	for (int i = 0; i < n; i++) {
		read_frame_time(&w[i]);
		pfd[i] = (struct pollfd){ .fd = fl_display_get_fd(w[i].intf), .events = POLLIN };
		printf("# watching %s\n", w[i].name);
	}
	fflush(stdout);
	while (!count || seen < count) {
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = dctl_fail(-errno, NULL, "watch: poll");
			goto out;
		}
		for (int i = 0; i < n && (!count || seen < count); i++) {
			struct fl_display_event *ev;
			int s;

			if (!pfd[i].revents)
				continue;
			/* Events still queued are read before a hang-up is believed. */
			if (!(pfd[i].revents & POLLIN)) {
				/* The write end is the service's: it went away. */
				r = dctl_fail(-ECONNRESET, NULL, "watching %s", w[i].name);
				goto out;
			}
			s = fl_display_read_event(w[i].intf, &ev);
			if (s < 0) {
				r = dctl_fail(s, NULL, "reading an event of %s", w[i].name);
				goto out;
			}
			print_event(&w[i], ev);
			free(ev);
			seen++;
		}
	}
out:
	for (int i = 0; w && i < n; i++) {
		fl_display_close(w[i].intf);
		if (w[i].owns_dev)
			fl_display_close(w[i].dev);
	}
	free(w);
	free(pfd);
	return r;
}

/* SPDX-License-Identifier: MIT */
/*
 * For fencectl-display-trace-test.py: a few posts on display 0 while a trace
 * session records, then the trace in FILE (argv[1]). Display 0's primary
 * interface is lit, so flips wait for its vsyncs. The posts, in order:
 *   1: an acquire fence "acq-1" on a timeline of ours, signalled after the
 *      post was queued; a PRESENT fence
 *   2: no acquire fence; a RELEASE fence (signals when 3 is on screen)
 *   3: no acquire fence; a PRESENT fence
 *   4: an acquire fence "acq-4" whose timeline dies unsignalled: never shown
 *   5: no acquire fence; a PRESENT fence (on screen after 4 was dropped)
 *   6: the same, one frame more before the session stops: fl-displayd's
 *      events reach the daemon on its own connection, and those of 1..5
 *      were sent a frame before the STOP is
 * Prints "posts FIRST" (the device's sequence number of post 1) and, for
 * posts 1, 3 and 5, "present SEQ TS" with the present fence's timestamp.
 * Exits 0, or 1 with a line on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/display.h>
#include <fenceline/introspect.h>
#include <fenceline/shared.h>

#define XR24 0x34325258u /* 'XR24' */

static struct fl_display_handle *dev, *intf;
static struct fl_display_buffer buf;

#define FAIL(...)                                               \
	do {                                                    \
		fprintf(stderr, "display-trace: " __VA_ARGS__); \
		fputc('\n', stderr);                            \
		exit(1);                                        \
	} while (0)

/* Post the buffer with @acquire (-1: none); *@fence gets a @type fence (NULL: none). */
static void post(int acquire, uint32_t type, int *fence)
{
	struct fl_display_error e = { 0, "" };
	struct fl_display_buffer b = buf;

	b.acquire_fence = acquire;
	if (fl_display_simple_post(intf, &b, type, fence, &e) < 0)
		FAIL("post: %s", e.msg);
}

static uint64_t stamp(int fence)
{
	struct fl_fence_info info;

	if (fl_fence_fd_wait(fence, 10000) != 0 || fl_fence_fd_get_info(fence, &info, NULL, 0) < 0)
		FAIL("a present fence did not signal");
	return info.timestamp_ns;
}

int main(int argc, char **argv)
{
	struct fl_display_interface_data id = { 0 };
	struct fl_display_stats st;
	struct fl_display_error e = { 0, "" };
	uint32_t off, pitch;
	int tl1, tl4, acq1, acq4, p1, r2, p3, p5, mem, fd, r;
	size_t len;
	char *text;
	FILE *out;

	if (argc != 2)
		FAIL("usage: display-trace FILE");
	if (fl_display_device_open(0, &dev) < 0 || fl_display_interface_open(dev, 0, &intf) < 0 ||
	    fl_display_interface_get_data(intf, &id, &e) < 0 ||
	    fl_display_simple_buffer_alloc(intf, id.current_mode.hdisplay, id.current_mode.vdisplay,
					   XR24, &mem, &off, &pitch, &e) < 0)
		FAIL("display 0: %s", e.msg);
	r = fl_display_blank(intf, FL_DISPLAY_DPMS_ON, &e);
	if (r < 0 && r != -EBUSY)
		FAIL("blank on: %s", e.msg);
	buf = (struct fl_display_buffer){ .engine = 0,
					  .w = id.current_mode.hdisplay,
					  .h = id.current_mode.vdisplay,
					  .format = XR24,
					  .n_planes = 1,
					  .fd = { mem },
					  .offset = { off },
					  .pitch = { pitch } };
	if (fl_display_device_get_stats(dev, &st, &e) < 0)
		FAIL("stats: %s", e.msg);
	printf("posts %" PRIu64 "\n", st.posted + 1);

	r = fl_daemon_connect();
	r = r < 0 ? r : fl_introspect_trace_start(0);
	if (r < 0)
		FAIL("trace start: %s", strerror(-r));
	if (fl_timeline_fd_create("producer-1", 0, &tl1) < 0 ||
	    fl_fence_fd_create(tl1, 1, "acq-1", &acq1) < 0 ||
	    fl_timeline_fd_create("producer-4", 0, &tl4) < 0 ||
	    fl_fence_fd_create(tl4, 1, "acq-4", &acq4) < 0)
		FAIL("fences");
	post(acq1, FL_DISPLAY_FENCE_PRESENT, &p1);
	if (fl_timeline_fd_inc(tl1, 1) < 0)
		FAIL("signal acq-1");
	printf("present 1 %" PRIu64 "\n", stamp(p1));
	post(-1, FL_DISPLAY_FENCE_RELEASE, &r2);
	post(-1, FL_DISPLAY_FENCE_PRESENT, &p3);
	printf("present 3 %" PRIu64 "\n", stamp(p3));
	if (stamp(r2) == 0)
		FAIL("post 2's release fence");
	post(acq4, FL_DISPLAY_FENCE_NONE, NULL);
	/* Its producer goes away: acq-4 fails with -ENOENT, post 4 is never shown. */
	if (fl_timeline_fd_close(tl4) < 0)
		FAIL("close producer-4");
	post(-1, FL_DISPLAY_FENCE_PRESENT, &p5);
	printf("present 5 %" PRIu64 "\n", stamp(p5));
	close(p5);
	post(-1, FL_DISPLAY_FENCE_PRESENT, &p5);
	stamp(p5);

	r = fl_introspect_trace_stop(&fd);
	if (r < 0)
		FAIL("trace stop: %s", strerror(-r));
	if (fl_introspect_read(fd, NULL, 0, &len) != -ENOBUFS || !(text = malloc(len + 1)) ||
	    fl_introspect_read(fd, text, len + 1, &len) < 0)
		FAIL("trace read");
	out = fopen(argv[1], "we");
	if (!out || fwrite(text, 1, len, out) != len || fclose(out) != 0)
		FAIL("%s: %s", argv[1], strerror(errno));
	free(text);
	close(fd);
	close(p1);
	close(r2);
	close(p3);
	close(p5);
	close(acq1);
	close(acq4);
	close(tl1);
	close(mem);
	fl_display_close(intf);
	fl_display_close(dev);
	return 0;
}

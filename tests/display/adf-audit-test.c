/* SPDX-License-Identifier: MIT */
/*
 * The native display API's argument checks found by the audit against
 * spec adf-ion.md §1 (docs/compat.md, "Verified against spec §1"): a bad
 * argument is the call's error, with ADF's errno where ADF had one, and
 * never reaches the service as a malformed message (which cuts the
 * connection off, and every handle of the program with it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fenceline/display.h>

#include "disp-fixture.h"
#include "runner.h"

/* The program's connection survived the refused call: its handles still answer. */
static void still_connected(struct disp *d)
{
	struct fl_display_interface_data data = { 0 };

	fl_assert_int_eq(fl_display_interface_get_data(d->intf, &data, NULL), 0);
}

FL_TEST(post_flags_and_fence_types_the_service_does_not_know_are_einval)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_post p = { 0 };
	struct fl_display_error e = { 0 };
	int fd, fence = 7;

	disp_open(&d);
	fd = simple_buffer(&d, 0x123456ffu, &b);
	attach_and_light(&d);
	p.intfs = &d.intf_id;
	p.n_intfs = 1;
	p.bufs = &b;
	p.n_bufs = 1;
	p.fence_type = FL_DISPLAY_FENCE_PRESENT;
	p.flags = FL_DISPLAY_POST_TEST_ONLY << 1;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EINVAL);
	fl_assert(strstr(e.msg, "flags"));
	still_connected(&d);
	p.flags = 0;
	p.fence_type = FL_DISPLAY_FENCE_RELEASE + 1;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EINVAL);
	fl_assert(strstr(e.msg, "fence type"));
	fl_assert_int_eq(fence, 7);
	still_connected(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_RELEASE + 1, &fence,
						&e),
			 -EINVAL);
	still_connected(&d);
	close(fd);
	disp_close(&d);
}

/*
 * ADF's errors for a post's fds (spec §1.5 step 4): a plane fd that is not
 * open -EBADF, an acquire fence fd that is not open -EINVAL, and likewise a
 * writeback destination -EBADF; checked before anything is sent, so the
 * connection stays.
 */
FL_TEST(post_fds_that_are_not_open_are_refused_before_sending)
{
	struct disp d;
	struct fl_display_buffer b;
	struct fl_display_post p = { 0 };
	struct fl_display_error e = { 0 };
	struct fl_display_writeback wb = { 0 };
	uint32_t wb_intf = 2; /* the default phone's memory interface */
	int fd, closed, fence = 7;

	disp_open(&d);
	fd = simple_buffer(&d, 0x123456ffu, &b);
	attach_and_light(&d);
	closed = dup(fd);
	fl_assert_int_ge(closed, 0);
	close(closed);
	p.intfs = &d.intf_id;
	p.n_intfs = 1;
	p.bufs = &b;
	p.n_bufs = 1;
	p.fence_type = FL_DISPLAY_FENCE_PRESENT;
	b.fd[0] = closed;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EBADF);
	fl_assert(strstr(e.msg, "buffer 0 plane 0"));
	still_connected(&d);
	b.fd[0] = fd;
	b.acquire_fence = closed;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EINVAL);
	fl_assert(strstr(e.msg, "acquire fence"));
	still_connected(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_PRESENT, &fence, &e),
			 -EINVAL);
	still_connected(&d);
	b.acquire_fence = -1;
	wb = (struct fl_display_writeback){ closed,	     XR24, d.mode.hdisplay,
					    d.mode.vdisplay, 0,	   4u * d.mode.hdisplay };
	p.intfs = &wb_intf;
	p.writeback = &wb;
	p.n_bufs = 0;
	fl_assert_int_eq(fl_display_post(d.dev, &p, &fence, &e), -EBADF);
	fl_assert(strstr(e.msg, "writeback"));
	still_connected(&d);
	fl_assert_int_eq(fence, 7);
	close(fd);
	disp_close(&d);
}

/*
 * ADF's per-file ring is a 4096-byte circular buffer, which holds at most
 * 4095 bytes (CIRC_SPACE): 255 vsync events of 16 bytes, and the 256th is
 * dropped. A handle that does not read keeps exactly that much, while
 * another handle of the same interface reads on.
 */
FL_TEST_TIMEOUT(an_unread_handle_holds_what_adf_s_ring_holds, 60)
{
	struct disp d;
	struct fl_display_handle *idle;
	int queued = -1;

	disp_open(&d);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_interface_open(d.dev, d.intf_id, &idle), 0);
	fl_assert_int_eq(fl_display_set_event(idle, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	/* 260 vsyncs seen by the reader: the idle handle had 5 more than its ring holds. */
	for (int i = 0; i < 260; i++) {
		struct fl_display_event *ev;

		fl_assert_int_eq(fl_display_read_event(d.intf, &ev), 0);
		fl_assert_int_eq(ev->type, FL_DISPLAY_EVENT_VSYNC);
		free(ev);
	}
	fl_assert_int_eq(ioctl(fl_display_get_fd(idle), FIONREAD, &queued), 0);
	fl_assert_int_eq(queued, 255 * (int)sizeof(struct fl_display_vsync_event));
	fl_display_close(idle);
	disp_close(&d);
}

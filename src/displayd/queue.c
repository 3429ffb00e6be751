/* SPDX-License-Identifier: MIT */
/*
 * The queue of each device (docs/display.md, "The flip"): posts wait FIFO
 * for their acquire fences (loop fd sources, never a thread or a blocking
 * wait) and flip at the first vsync after the last one signalled. A post's
 * fences are points on two timelines of the device's, made through
 * fencelined like any client's: "present" reaches post N when N is flipped,
 * "release" when N + 1 is, which is also when N's buffers are let go.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* fl-displayd tells a recording trace of its events (docs/tracing.md). */
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>
#include <fenceline/shared.h>

#include "display-virtual.h"
#include "display.h"
#include "displayd-private.h"
#include "sync-file-status.h"
#include "util.h"

/* ---- events ---- */

bool displayd_bit(const uint8_t *bits, uint32_t n)
{
	return bits[n / 8] & (1u << (n % 8));
}

/*
 * ADF's ring: a whole event or none, dropped when it does not fit. The ring
 * was a 4096-byte circular buffer, which holds 4095 bytes (255 vsyncs, not
 * the pipe's 256): what the pipe holds already is counted first.
 */
static void ring_write(int fd, const void *ev, size_t len)
{
	int queued;

	if (ioctl(fd, FIONREAD, &queued) == 0 && (size_t)queued + len > FL_DISPLAY_EVENT_RING - 1)
		return;
	(void)!write(fd, ev, len);
}

void displayd_send_event(uint32_t kind, uint32_t device, uint32_t id, uint32_t type, const void *ev,
			 size_t len)
{
	for (struct fl_server_conn *c = fl__server_conn_next(dd.server, NULL); c;
	     c = fl__server_conn_next(dd.server, c)) {
		struct dconn *dc = displayd_conn_of(c);

		for (size_t h = 0; h < MAX_HANDLES; h++) {
			struct handle *hd = &dc->handles[h];

			if (hd->used && hd->kind == kind && hd->device == device && hd->id == id &&
			    displayd_bit(hd->subscribed, type))
				ring_write(hd->events, ev, len);
		}
	}
}

/* ---- traces ---- */

void displayd_trace(struct ddev *d, const struct dpost *p, struct fl_trace_display_event *ev,
		    int fence_fd)
{
	ev->device = d->host.device;
	if (p)
		ev->post = p->seq;
	if (!ev->ts_ns)
		ev->ts_ns = fl__now_ns();
	/* A trace missing an event is no reason to hold a frame back: errors are dropped. */
	(void)fl_introspect_trace_display(ev, fence_fd);
}

/* ---- fences ---- */

int displayd_timelines(struct ddev *d)
{
	char name[FL_DISPLAY_NAME_LEN + 16];
	int r;

	if (d->tl_release >= 0)
		return 0;
	snprintf(name, sizeof(name), "%s-present", fl__display_device_name(d->dev));
	r = fl_timeline_fd_create(name, 0, &d->tl_present);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%s-release", fl__display_device_name(d->dev));
	r = fl_timeline_fd_create(name, 0, &d->tl_release);
	if (r < 0) {
		close(d->tl_present);
		d->tl_present = -1;
		return r;
	}
	return 0;
}

/* @ts: the vsync that flipped, the time the points report (0: now, an unpaced flip). */
static void advance(int tl, uint64_t *at, uint64_t to, uint64_t ts)
{
	int r;

	if (tl < 0 || to <= *at)
		return;
	r = ts ? fl_timeline_fd_inc_at(tl, to - *at, ts) : -EINVAL;
	/* A driver's time that is ahead of the clock or behind the last must not keep a fence back. */
	if (r == -EINVAL)
		r = fl_timeline_fd_inc(tl, to - *at);
	if (r < 0)
		displayd_log("cannot signal a fence timeline: %s", strerror(-r));
	*at = to;
}

/* ---- posts ---- */

void displayd_post_free(struct dpost *p)
{
	struct ddev *d = p->d;

	if (p->owner)
		p->owner->fds_held -= p->nfds;
	if (d->drv->state_free)
		d->drv->state_free(d->drv_data, p->state);
	for (size_t i = 0; i < p->n_bufs; i++) {
		for (uint32_t k = 0; k < p->bufs[i].n_planes; k++)
			close(p->bufs[i].fd[k]);
		if (p->bufs[i].in_fence >= 0)
			close(p->bufs[i].in_fence);
	}
	for (size_t i = 0; i < p->n_acquire; i++) {
		fl__loop_source_remove(p->acq_src[i]);
		if (p->acquire[i] >= 0)
			close(p->acquire[i]);
	}
	fl__loop_source_remove(p->timeout);
	if (p->wb.fd[0] >= 0)
		close(p->wb.fd[0]);
	free(p->intfs);
	free(p);
}

static void unlink_head(struct ddev *d)
{
	struct dpost *p = d->head;

	d->head = p->next;
	if (!d->head)
		d->tail = NULL;
	d->st.queued--;
	if (p->owner)
		p->owner->queued--;
}

/* Post @p is on screen since @vsync_ns (0: now): its fences, and the one before it goes. */
static void shown(struct ddev *d, struct dpost *p, uint32_t intf, uint64_t vsync_ns)
{
	struct dpost *prev = d->on_screen;

	if (fl_introspect_tracing()) {
		struct fl_trace_display_event ev = { .type = FL_TRACE_DISPLAY_FLIP,
						     .ts_ns = vsync_ns,
						     .vsync_ns = vsync_ns,
						     .ready_ns = p->ready_ns,
						     .index = vsync_ns ? intf : 0 };

		displayd_trace(d, p, &ev, -1);
		if (prev) {
			ev = (struct fl_trace_display_event){ .type = FL_TRACE_DISPLAY_RELEASE,
							      .ts_ns = vsync_ns,
							      .by_post = p->seq };
			displayd_trace(d, prev, &ev, -1);
		}
	}
	d->on_screen = p;
	d->st.flipped++;
	d->st.on_screen_buffers = p->n_bufs;
	/* Posts dropped before this one reach both their points now: they will never show. */
	/*
	 * Release first: whoever sees N + 1 present finds N released (libadf's
	 * simple_buffer_v2 test waits on the one and checks the other).
	 */
	advance(d->tl_release, &d->release_at, p->seq - 1, vsync_ns);
	advance(d->tl_present, &d->present_at, p->seq, vsync_ns);
	if (prev)
		displayd_post_free(prev);
}

static void flip(struct ddev *d, uint32_t intf, uint64_t vsync_ns)
{
	struct dpost *p = d->head;

	unlink_head(d);
	d->drv->post(d->drv_data, p->state);
	if (!(d->drv->caps & FL_DISPLAY_CAP_ASYNC_FLIP)) {
		shown(d, p, intf, vsync_ns);
		return;
	}
	/* The hardware shows it at a vblank to come: flipped() says when. */
	p->next = NULL;
	if (d->in_flight_tail)
		d->in_flight_tail->next = p;
	else
		d->in_flight = p;
	d->in_flight_tail = p;
}

void displayd_flipped(struct ddev *d, uint64_t ts)
{
	struct dpost *p = d->in_flight;

	if (!p) {
		displayd_log("device %s: a flip reported with none in flight",
			     fl__display_device_name(d->dev));
		return;
	}
	d->in_flight = p->next;
	if (!d->in_flight)
		d->in_flight_tail = NULL;
	p->next = NULL;
	shown(d, p, p->n_intfs ? p->intfs[0] : 0, ts);
	displayd_try_flip(d, UINT32_MAX, 0);
}

void displayd_drop_head(struct ddev *d)
{
	struct dpost *p = d->head;

	unlink_head(d);
	d->st.dropped++;
	if (fl_introspect_tracing()) {
		struct fl_trace_display_event ev = { .type = FL_TRACE_DISPLAY_DROP,
						     .status = p->fail_status ? p->fail_status
									      : -ECANCELED };

		displayd_trace(d, p, &ev, -1);
	}
	displayd_post_free(p);
}

/* Whether interface @id of @d has a vsync now: lit, connected, with timings. */
static bool ticking(struct ddev *d, uint32_t id)
{
	struct fl__display_interface *intf = fl__display_interface_get(d->dev, id);
	const struct fl_display_mode *m;

	/* Vsync runs in ON and STANDBY, as ADF's vsync_active(). */
	if (!intf ||
	    (fl__display_interface_dpms(intf) != FL_DISPLAY_DPMS_ON &&
	     fl__display_interface_dpms(intf) != FL_DISPLAY_DPMS_STANDBY) ||
	    !fl__display_interface_connected(intf) || !(d->drv->caps & FL_DISPLAY_CAP_VSYNC))
		return false;
	m = fl__display_interface_current_mode(intf);
	return m->clock && m->htotal && m->vtotal;
}

static bool paced_by_vsync(struct ddev *d, const struct dpost *p)
{
	for (size_t i = 0; i < p->n_intfs; i++)
		if (ticking(d, p->intfs[i]))
			return true;
	return false;
}

/*
 * At a vsync of interface @vsync_intf (UINT32_MAX: none, the kick), flip
 * the head of the queue if its fences are done and this is its moment:
 * a vsync of one of its interfaces, or any time when none of them has one
 * (a blanked panel, memory writeback). Posts that failed go first.
 */
void displayd_try_flip(struct ddev *d, uint32_t vsync_intf, uint64_t vsync_ns)
{
	while (d->head && !d->head->pending && d->head->failed)
		displayd_drop_head(d);
	if (!d->head || d->head->pending)
		return;
	/* The kernel paces an asynchronous flip to the vblank: one in flight at a time. */
	if (d->drv->caps & FL_DISPLAY_CAP_ASYNC_FLIP) {
		if (!d->in_flight)
			flip(d, UINT32_MAX, 0);
		return;
	}
	if (paced_by_vsync(d, d->head)) {
		bool mine = false;

		for (size_t i = 0; i < d->head->n_intfs; i++)
			mine |= d->head->intfs[i] == vsync_intf;
		/*
		 * Hardware latches at the vsync itself: a post that became ready after
		 * it (while a loaded loop was still waking up to it) waits for the next.
		 */
		if (!mine || (vsync_ns && d->head->ready_ns > vsync_ns))
			return;
		flip(d, vsync_intf, vsync_ns);
		return;
	}
	flip(d, UINT32_MAX, 0);
	/* Unpaced posts may follow at once. */
	displayd_try_flip(d, UINT32_MAX, 0);
}

static void kick_fn(void *data)
{
	struct ddev *d = data;

	d->kick = NULL;
	displayd_try_flip(d, UINT32_MAX, 0);
}

void displayd_kick(struct ddev *d)
{
	if (!d->kick)
		d->kick = fl__loop_add_idle(dd.loop, kick_fn, d);
}

int displayd_fence_status(int fd, bool kernel)
{
	return kernel ? fl__sync_file_status(fd) : fl_fence_fd_get_status(fd);
}

void displayd_acquire_done(struct dpost *p, size_t i, int status)
{
	fl__loop_source_remove(p->acq_src[i]);
	p->acq_src[i] = NULL;
	close(p->acquire[i]);
	p->acquire[i] = -1;
	if (fl_introspect_tracing()) {
		struct fl_trace_display_event ev = { .type = FL_TRACE_DISPLAY_ACQUIRED,
						     .status = status < 0 ? status : 0,
						     .index = (uint32_t)p->acq_buf[i] };

		displayd_trace(p->d, p, &ev, -1);
	}
	if (status < 0) {
		if (!p->failed)
			p->fail_status = status;
		p->failed = true;
		p->d->st.fence_failures++;
		displayd_log("post %" PRIu64
			     " of device %s: acquire fence %zu failed (%s): not shown",
			     p->seq, fl__display_device_name(p->d->dev), i, strerror(-status));
	}
	if (--p->pending == 0) {
		/*
		 * Ready when the last fence signalled, not when this loop saw it: a
		 * loaded loop that wakes late must not hold a frame back a vsync
		 * (nor flip one at a vsync it came after: displayd_try_flip()).
		 * Clamped to [queued, now]: a fence's time is its producer's word.
		 */
		uint64_t now = fl__now_ns();

		p->ready_ns = p->acq_signal_ns > now ? now : p->acq_signal_ns;
		if (p->ready_ns < p->queued_ns)
			p->ready_ns = p->queued_ns;
		fl__loop_source_remove(p->timeout);
		p->timeout = NULL;
		displayd_kick(p->d);
	}
}

void displayd_acquire_ready(int fd, uint32_t events, void *data)
{
	struct dpost *p = data;
	int st;

	(void)events;
	for (size_t i = 0; i < p->n_acquire; i++) {
		if (p->acquire[i] != fd)
			continue;
		st = displayd_fence_status(fd, p->acq_kernel[i]);
		if (st > 0) {
			struct fl_fence_info info;

			/* A sync_file's time would take a second FILE_INFO: now is later, never early. */
			if (p->acq_kernel[i] || fl_fence_fd_get_info(fd, &info, NULL, 0) < 0 ||
			    !info.timestamp_ns)
				info.timestamp_ns = fl__now_ns();
			if (info.timestamp_ns > p->acq_signal_ns)
				p->acq_signal_ns = info.timestamp_ns;
		}
		if (st != 0)
			displayd_acquire_done(p, i, st > 0 ? 0 : st);
		return;
	}
}

void displayd_acquire_timeout(void *data)
{
	struct dpost *p = data;

	p->timeout = NULL;
	for (size_t i = 0; i < p->n_acquire; i++)
		if (p->acquire[i] >= 0)
			displayd_acquire_done(p, i, -ETIME);
}

/*
 * The model's flush hook: blank(non-ON) and modeset drain the queue first,
 * as ADF's. With FL_DISPLAY_CAP_ASYNC_FLIP the newest ready post is handed
 * to the driver, which may have one in flight already (its commit waits in
 * the kernel for that one: no hang, at most a frame); both show with their
 * flipped() later.
 */
/* Never block the loop: what is not ready now is dropped, as its buffers never showed. */
static void settle(struct dpost *p)
{
	for (size_t i = 0; i < p->n_acquire; i++)
		if (p->acquire[i] >= 0) {
			int st = displayd_fence_status(p->acquire[i], p->acq_kernel[i]);

			displayd_acquire_done(p, i, st > 0 ? 0 : st == 0 ? -ECANCELED : st);
		}
	/*
	 * In-fences too: the driver's commit of a flush waits for the one in
	 * flight blocking, and would wait for a pending in-fence as long.
	 */
	for (size_t i = 0; i < p->n_bufs && !p->failed; i++)
		if (p->bufs[i].in_fence >= 0) {
			int st = fl__sync_file_status(p->bufs[i].in_fence);

			if (st <= 0) {
				p->failed = true;
				p->fail_status = st ? st : -ECANCELED;
				p->d->st.fence_failures++;
			}
		}
}

/* Whether a post after @p will be shown (an asynchronous driver shows only the newest). */
static bool shown_later(const struct dpost *p)
{
	for (const struct dpost *q = p->next; q; q = q->next)
		if (!q->failed)
			return true;
	return false;
}

void displayd_flush(struct fl__display_device *dev, void *data)
{
	struct ddev *d = data;
	bool async = d->drv->caps & FL_DISPLAY_CAP_ASYNC_FLIP;

	(void)dev;
	/*
	 * An asynchronous driver takes one commit at a time: of the ready posts
	 * only the newest is shown (the others reach their points with it, as
	 * dropped ones do), and the driver waits for the one in flight itself.
	 * So every post's fences are settled first, to know which is the newest.
	 */
	for (struct dpost *p = d->head; async && p; p = p->next)
		settle(p);
	while (d->head) {
		struct dpost *p = d->head;

		settle(p);
		if (p->failed || (async && shown_later(p)))
			displayd_drop_head(d);
		else
			flip(d, UINT32_MAX, 0);
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * Posts (docs/display.md, "Posts"): decoded (src/proto/display.c), their
 * planes' sizes resolved from their fds, checked by the model
 * (fl__display_post_check()), the layers and the writeback destination,
 * then by the driver's validate, with no side effect: every refusal goes
 * back to the caller with its errno and reason. TEST_ONLY stops there;
 * otherwise the post is queued (queue.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fl-displayd tells a recording trace of its events (docs/tracing.md). */
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>
#include <fenceline/shared.h>

#include "compose.h"
#include "display.h"
#include "displayd-private.h"
#include "start.h"
#include "sync-file-status.h"
#include "util.h"

static uint64_t fd_size(int fd)
{
	struct stat st;
	off_t end;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		return (uint64_t)st.st_size;
	end = lseek(fd, 0, SEEK_END);
	return end > 0 ? (uint64_t)end : 0;
}

/*
 * The layers of a post (NULL: none), checked before the driver sees them:
 * what every software-composing driver would refuse, with the buffer named.
 */
int displayd_check_layers(struct ddev *d, const uint32_t *intfs, size_t n_intfs,
			  const struct fl_display_driver_buffer *bufs,
			  const struct fl_display_layer *layers, size_t n_bufs,
			  struct fl_display_error *e)
{
	for (size_t i = 0; layers && i < n_bufs; i++) {
		const struct fl_display_layer *l = &layers[i];
		const struct fl_display_driver_buffer *b = &bufs[i];

		if (!(l->flags & FL_DISPLAY_LAYER_ENABLED)) {
			if (l->flags)
				return fl__display_fail(e, -EINVAL,
							"buffer %zu: unknown layer flags 0x%x", i,
							l->flags);
			continue;
		}
		if (l->flags & ~FL_DISPLAY_LAYER_ENABLED || l->reserved[0] || l->reserved[1])
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: unknown layer flags 0x%x or reserved "
						"fields not 0",
						i, l->flags);
		if (!l->src_w || !l->src_h)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: layer source rect has zero size", i);
		if ((uint64_t)l->src_x + l->src_w > (uint64_t)b->w << 16 ||
		    (uint64_t)l->src_y + l->src_h > (uint64_t)b->h << 16)
			return fl__display_fail(
				e, -EINVAL,
				"buffer %zu: layer source rect %.4f,%.4f %.4fx%.4f is outside the "
				"buffer's %ux%u",
				i, l->src_x / 65536.0, l->src_y / 65536.0, l->src_w / 65536.0,
				l->src_h / 65536.0, b->w, b->h);
		if (l->blend > FL_DISPLAY_BLEND_COVERAGE)
			return fl__display_fail(e, -EINVAL, "buffer %zu: unknown blend mode %u", i,
						l->blend);
		if (l->transform > FL_DISPLAY_TRANSFORM_MAX)
			return fl__display_fail(e, -EINVAL, "buffer %zu: unknown transform %u", i,
						l->transform);
		if (l->filter > FL_DISPLAY_FILTER_NEAREST)
			return fl__display_fail(e, -EINVAL, "buffer %zu: unknown filter %u", i,
						l->filter);
		if (l->alpha > 0xffff)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: plane alpha 0x%x is above 0xffff", i,
						l->alpha);
		/* The bound holds where no interface of the post has a mode to bound it. */
		if (!l->dst_w || !l->dst_h || l->dst_x < 0 || l->dst_y < 0 ||
		    l->dst_w > FL_DISPLAY_COMPOSE_MAX_SIZE ||
		    l->dst_h > FL_DISPLAY_COMPOSE_MAX_SIZE)
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: layer destination rect %d,%d %ux%u is "
						"empty, starts off the screen or is over %d pixels",
						i, l->dst_x, l->dst_y, l->dst_w, l->dst_h,
						FL_DISPLAY_COMPOSE_MAX_SIZE);
		for (size_t k = 0; k < n_intfs; k++) {
			struct fl__display_interface *intf =
				fl__display_interface_get(d->dev, intfs[k]);
			struct fl_display_gang g;
			uint32_t fw = 0, fh = 0;

			/* A gang's frame is its whole panel: the layers are in its coordinates. */
			if (intf)
				fl__display_interface_frame_size(intf, &fw, &fh);
			if (!fw || !fh)
				continue;
			if ((uint64_t)(uint32_t)l->dst_x + l->dst_w > fw ||
			    (uint64_t)(uint32_t)l->dst_y + l->dst_h > fh)
				return fl__display_fail(
					e, -EINVAL,
					"buffer %zu: layer destination rect %d,%d %ux%u is outside "
					"interface %u's %s %ux%u",
					i, l->dst_x, l->dst_y, l->dst_w, l->dst_h, intfs[k],
					fl__display_interface_gang(intf, &g) ? "mode"
									     : "gang's panel",
					fw, fh);
		}
		for (size_t j = 0; j < i; j++)
			if ((layers[j].flags & FL_DISPLAY_LAYER_ENABLED) &&
			    layers[j].zpos == l->zpos)
				return fl__display_fail(
					e, -EINVAL, "buffers %zu and %zu have the same z order %u",
					j, i, l->zpos);
	}
	return 0;
}

/*
 * A writeback destination (@wb, NULL: none): only with a memory interface
 * among the post's, of its mode's size, a format the compositor writes,
 * its pitch and memory big enough and aligned as pixman wants them.
 */
static int check_writeback(struct ddev *d, const uint32_t *intfs, size_t n_intfs,
			   const struct fl_display_driver_buffer *wb, struct fl_display_error *e)
{
	const struct fl_display_mode *m = NULL;
	const struct fl__display_format *f;
	uint32_t mem = 0;

	if (!wb)
		return 0;
	for (size_t k = 0; k < n_intfs && !m; k++) {
		struct fl__display_interface *intf = fl__display_interface_get(d->dev, intfs[k]);

		if (intf && fl__display_interface_type(intf) == FL_DISPLAY_INTF_MEMORY) {
			m = fl__display_interface_current_mode(intf);
			mem = intfs[k];
		}
	}
	if (!m)
		return fl__display_fail(e, -EINVAL,
					"writeback: the post names no memory-writeback interface");
	if (wb->w != m->hdisplay || wb->h != m->vdisplay)
		return fl__display_fail(e, -EINVAL,
					"writeback: %ux%u is not interface %u's mode %ux%u", wb->w,
					wb->h, mem, m->hdisplay, m->vdisplay);
	f = fl__display_format_find(wb->format);
	if (!f || !fl__display_compose_format_ok(wb->format, FL_DISPLAY_COMPOSE_TARGET))
		return fl__display_fail(e, -EINVAL,
					"writeback: format 0x%08x is not an RGB format the "
					"compositor writes",
					wb->format);
	if ((uint64_t)wb->pitch[0] < (uint64_t)wb->w * f->cpp[0] || wb->pitch[0] % 4 ||
	    wb->offset[0] % 4)
		return fl__display_fail(
			e, -EINVAL,
			"writeback: pitch %u (at least %u x %u bytes) and offset %u "
			"must be multiples of 4",
			wb->pitch[0], wb->w, f->cpp[0], wb->offset[0]);
	if ((uint64_t)wb->offset[0] + (uint64_t)wb->pitch[0] * wb->h > wb->size[0])
		return fl__display_fail(e, -EINVAL,
					"writeback: offset %u + %u lines of pitch %u end past its "
					"%llu-byte memory",
					wb->offset[0], wb->h, wb->pitch[0],
					(unsigned long long)wb->size[0]);
	return 0;
}

/*
 * ADF's import of a post's fds (spec §1.5 step 4), buffer by buffer after
 * that buffer's plane count and engine: a plane that is no memory is
 * -EINVAL (dma_buf_get() of a file that is not a dma-buf), an acquire fence
 * that is neither a fenceline fence nor a kernel sync_file -EINVAL (each
 * marked in @kernel). Before any buffer is validated, so such a buffer is
 * refused before a later buffer's unknown engine (-ENOENT); the model's
 * check reports the plane counts and engines themselves.
 */
static int import_fds(struct ddev *d, const struct fl_display_driver_buffer *bufs,
		      const int *acquire, bool *kernel, size_t n_bufs, struct fl_display_error *e)
{
	for (size_t i = 0; i < n_bufs; i++) {
		int st;

		if (bufs[i].n_planes > FL_DISPLAY_MAX_PLANES ||
		    !fl__display_engine_get(d->dev, bufs[i].engine))
			return 0;
		for (uint32_t pl = 0; pl < bufs[i].n_planes; pl++)
			if (!bufs[i].size[pl])
				return fl__display_fail(e, -EINVAL,
							"buffer %zu plane %" PRIu32
							": its fd holds no memory",
							i, pl);
		if (acquire[i] < 0)
			continue;
		st = fl_fence_fd_get_status(acquire[i]);
		kernel[i] = (st == -ENOTTY || st == -EBADF) &&
			    fl__sync_file_status(acquire[i]) != -EINVAL;
		if ((st == -ENOTTY || st == -EBADF) && !kernel[i])
			return fl__display_fail(e, -EINVAL,
						"buffer %zu: its acquire fence is not a fence "
						"(neither fenceline's nor a kernel "
						"sync_file)",
						i);
	}
	return 0;
}

/*
 * FL_DISPLAY_CAP_IN_FENCES: when every pending acquire fence of the post
 * is a kernel sync_file, each becomes its buffer's in_fence (taken from
 * @acquire): the driver's commit waits for them, not the service. A
 * fenceline fence among them and the service waits for all, as it must
 * for that one anyway.
 */
static void hand_in_fences(struct ddev *d, struct dpost *p, int *acquire, const bool *kernel)
{
	const uint32_t both = FL_DISPLAY_CAP_IN_FENCES | FL_DISPLAY_CAP_ASYNC_FLIP;
	bool pending[FL_DISPLAY_MAX_BUFFERS] = { false };

	if ((d->drv->caps & both) != both)
		return;
	for (size_t i = 0; i < p->n_bufs; i++) {
		if (acquire[i] < 0)
			continue;
		pending[i] = displayd_fence_status(acquire[i], kernel[i]) == 0;
		if (pending[i] && !kernel[i])
			return;
	}
	/* Those done already are judged by the service: a failed one is never shown. */
	for (size_t i = 0; i < p->n_bufs; i++)
		if (pending[i]) {
			p->bufs[i].in_fence = acquire[i];
			acquire[i] = -1;
		}
}

/* A post that was checked but never queued (TEST_ONLY or refused): its fds closed, it freed. */
static void unqueued_free(struct dpost *p, const int *acquire, size_t n_bufs)
{
	for (size_t i = 0; i < n_bufs; i++) {
		for (uint32_t pl = 0; pl < p->bufs[i].n_planes; pl++)
			close(p->bufs[i].fd[pl]);
		if (p->bufs[i].in_fence >= 0)
			close(p->bufs[i].in_fence);
		if (acquire[i] >= 0)
			close(acquire[i]);
	}
	if (p->wb.fd[0] >= 0)
		close(p->wb.fd[0]);
	free(p->intfs);
	free(p);
}

/*
 * A post's checks and its queueing (POST and SIMPLE_POST). @fds: the
 * post's, in wire order (taken: each is closed or kept).
 */
static bool post(struct dconn *c, const struct fl_msg_hdr *req, struct ddev *d, uint32_t flags,
		 uint32_t fence_type, const uint32_t *intfs, size_t n_intfs,
		 const struct fl_dmsg_buffer *wb, const struct fl_display_layer *layers,
		 size_t n_bufs, const void *custom, size_t custom_size,
		 const struct fl_dmsg_writeback *dest, int *fds, unsigned int nfds)
{
	struct fl_dmsg_post_reply r = { { 0, 0 }, 0, 0 };
	struct fl_display_driver_post dp;
	struct fl_display_error e = { 0, "" };
	struct dpost *p;
	unsigned int k = 0;
	int acquire[FL_DISPLAY_MAX_BUFFERS], fence = -1, err;
	bool kernel[FL_DISPLAY_MAX_BUFFERS] = { false };
	void *state = NULL;
	bool ok;

	p = calloc(1, sizeof(*p) + n_bufs * sizeof(p->bufs[0]));
	if (!p) {
		err = -ENOMEM;
		goto refuse;
	}
	p->d = d;
	p->n_bufs = n_bufs;
	p->wb.fd[0] = -1;
	p->wb.in_fence = -1;
	for (size_t i = 0; i < n_bufs; i++) {
		struct fl_display_driver_buffer *b = &p->bufs[i];

		b->engine = wb[i].engine;
		b->w = wb[i].w;
		b->h = wb[i].h;
		b->format = wb[i].format;
		b->n_planes = wb[i].n_planes;
		b->in_fence = -1;
		for (uint32_t pl = 0; pl < FL_DISPLAY_MAX_PLANES; pl++) {
			b->offset[pl] = wb[i].offset[pl];
			b->pitch[pl] = wb[i].pitch[pl];
			b->fd[pl] = pl < b->n_planes ? fds[k++] : -1;
			b->size[pl] = pl < b->n_planes ? fd_size(b->fd[pl]) : 0;
		}
		acquire[i] = wb[i].flags & FL_DBUF_ACQUIRE ? fds[k++] : -1;
	}
	if (dest) {
		p->wb = (struct fl_display_driver_buffer){ .in_fence = -1,
							   .w = dest->w,
							   .h = dest->h,
							   .format = dest->format,
							   .n_planes = 1,
							   .offset = { dest->offset },
							   .pitch = { dest->pitch },
							   .fd = { fds[k], -1, -1, -1 } };
		p->wb.size[0] = fd_size(fds[k]);
		k++;
	}
	err = import_fds(d, p->bufs, acquire, kernel, n_bufs, &e);
	if (!err)
		err = fl__display_post_check(d->dev, intfs, n_intfs, p->bufs, n_bufs, custom_size,
					     &e);
	if (!err)
		err = displayd_check_layers(d, intfs, n_intfs, p->bufs, layers, n_bufs, &e);
	if (!err)
		err = check_writeback(d, intfs, n_intfs, dest ? &p->wb : NULL, &e);
	if (err)
		goto refuse;
	hand_in_fences(d, p, acquire, kernel);
	dp = (struct fl_display_driver_post){ intfs,  n_intfs,	   p->bufs, n_bufs,
					      custom, custom_size, layers,  dest ? &p->wb : NULL };
	err = d->drv->validate(d->drv_data, &dp, &state, &e);
	if (err) {
		if (!e.msg[0])
			fl__display_fail(&e, err, "the driver refused the post");
		goto refuse;
	}
	if (flags & FL_DISPLAY_POST_TEST_ONLY) {
		/* Checked as a real post; nothing is queued, kept or signalled. */
		if (d->drv->state_free)
			d->drv->state_free(d->drv_data, state);
		goto done_closing;
	}
	if (c->queued >= MAX_QUEUED) {
		err = fl__display_fail(&e, -EBUSY,
				       "%u posts of this client wait to flip already (at most %d)",
				       c->queued, MAX_QUEUED);
		goto refuse_state;
	}
	/* Else one client's posts could take every fd the service has, and others' requests fail. */
	if (c->fds_held + nfds > dd.cfg.max_fds_client) {
		err = fl__display_fail(
			&e, -EBUSY,
			"this client's posts hold %u fds of the service; another %u "
			"would pass its budget of %u (FENCELINE_DISPLAY_CLIENT_MAX_FDS)",
			c->fds_held, nfds, dd.cfg.max_fds_client);
		goto refuse_state;
	}
	p->intfs = malloc((n_intfs ? n_intfs : 1) * sizeof(*p->intfs));
	if (!p->intfs) {
		err = -ENOMEM;
		goto refuse_state;
	}
	memcpy(p->intfs, intfs, n_intfs * sizeof(*intfs));
	err = displayd_timelines(d);
	if (err) {
		fl__display_fail(&e, err, "cannot make the device's fences (fencelined: %s)",
				 strerror(-err));
		goto refuse_state;
	}
	p->seq = d->seq + 1;
	if (fence_type == FL_DISPLAY_FENCE_RELEASE || fence_type == FL_DISPLAY_FENCE_PRESENT) {
		bool rel = fence_type == FL_DISPLAY_FENCE_RELEASE;

		err = fl_fence_fd_create(rel ? d->tl_release : d->tl_present, p->seq,
					 rel ? "display-release" : "display-present", &fence);
		if (err) {
			fl__display_fail(&e, err, "cannot make the post's fence: %s",
					 strerror(-err));
			goto refuse_state;
		}
	}
	p->n_intfs = n_intfs;
	p->state = state;
	p->owner = c;
	p->queued_ns = fl__now_ns();
	p->nfds = nfds;
	c->fds_held += nfds;
	p->ready_ns = p->queued_ns;
	c->queued++;
	d->seq = p->seq;
	d->st.posted++;
	d->st.queued++;
	if (d->tail)
		d->tail->next = p;
	else
		d->head = p;
	d->tail = p;
	if (fl_introspect_tracing()) {
		struct fl_trace_display_event ev = { .type = FL_TRACE_DISPLAY_POST,
						     .ts_ns = p->queued_ns,
						     .pid = (uint32_t)c->conn.pid,
						     .buffers = (uint32_t)n_bufs };

		for (size_t i = 0; i < n_bufs; i++)
			ev.acquire += acquire[i] >= 0 || p->bufs[i].in_fence >= 0;
		displayd_trace(d, p, &ev, -1);
		for (size_t i = 0; i < n_bufs; i++)
			if (acquire[i] >= 0) {
				ev = (struct fl_trace_display_event){
					.type = FL_TRACE_DISPLAY_ACQUIRE,
					.ts_ns = p->queued_ns,
					.index = (uint32_t)i
				};
				displayd_trace(d, p, &ev, acquire[i]);
			}
	}
	for (size_t i = 0; i < n_bufs; i++) {
		int st;

		if (acquire[i] < 0)
			continue;
		st = displayd_fence_status(acquire[i], kernel[i]);
		p->acquire[p->n_acquire] = acquire[i];
		p->acq_kernel[p->n_acquire] = kernel[i];
		p->acq_buf[p->n_acquire] = i;
		p->pending++;
		p->n_acquire++;
		if (st != 0) {
			displayd_acquire_done(p, p->n_acquire - 1, st > 0 ? 0 : st);
			continue;
		}
		p->acq_src[p->n_acquire - 1] =
			fl__loop_add_fd(dd.loop, acquire[i], EPOLLIN, displayd_acquire_ready, p);
		if (!p->acq_src[p->n_acquire - 1])
			displayd_acquire_done(p, p->n_acquire - 1, -ENOMEM);
	}
	if (p->pending) {
		p->timeout = fl__loop_add_timer(dd.loop, displayd_acquire_timeout, p);
		if (p->timeout)
			fl__loop_timer_arm(
				p->timeout,
				fl__now_ns() + (uint64_t)dd.cfg.fence_timeout_ms * 1000000u, 0);
	} else {
		displayd_kick(d);
	}
	r.flags = fence >= 0 ? FL_DPOST_R_FENCE : 0;
	ok = displayd_reply(c, req, &r, sizeof(r), &fence, fence >= 0);
	if (fence >= 0)
		close(fence);
	return ok;

done_closing:
	unqueued_free(p, acquire, n_bufs);
	return displayd_reply(c, req, &r, sizeof(r), NULL, 0);

refuse_state:
	if (d->drv->state_free)
		d->drv->state_free(d->drv_data, state);
refuse:
	if (p) {
		unqueued_free(p, acquire, n_bufs);
	} else {
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
	}
	return displayd_reply_status(c, req, err, &e);
}

bool displayd_do_post(struct dconn *c, const struct fl_dproto_request *q, int *fds)
{
	const struct fl_dmsg_post *pm = &q->u.post;
	struct handle *h = displayd_handle_get(c, pm->handle, FL_DISPLAY_OBJ_DEVICE);
	static uint32_t intfs[FL_DISPLAY_MAX_INTERFACES];
	static struct fl_dmsg_buffer bufs[FL_DISPLAY_MAX_BUFFERS];
	static struct fl_display_layer layers[FL_DISPLAY_MAX_BUFFERS];
	struct fl_dmsg_writeback dest;
	int all[FL_DPROTO_POST_MAX_FDS];
	unsigned int n = 0;

	/* The stash first, then the message's: the wire order. */
	memcpy(all, c->stash, c->n_stash * sizeof(int));
	n = c->n_stash;
	c->n_stash = 0;
	memcpy(all + n, fds, q->nfds * sizeof(int));
	n += q->nfds;
	for (unsigned int i = 0; i < q->nfds; i++)
		fds[i] = -1;
	if (!h) {
		for (unsigned int i = 0; i < n; i++)
			close(all[i]);
		return displayd_wrong_kind(c, &q->hdr, pm->handle, "a device");
	}
	memcpy(intfs, q->intfs, pm->n_intfs * sizeof(uint32_t));
	memcpy(bufs, q->bufs, pm->n_bufs * sizeof(bufs[0]));
	if (q->layers)
		memcpy(layers, q->layers, pm->n_bufs * sizeof(layers[0]));
	if (q->writeback)
		memcpy(&dest, q->writeback, sizeof(dest));
	return post(c, &q->hdr, displayd_dev_by_id(h->device),
		    pm->flags & ~(FL_DPOST_LAYERS | FL_DPOST_WRITEBACK), pm->fence_type, intfs,
		    pm->n_intfs, bufs, q->layers ? layers : NULL, pm->n_bufs, q->custom,
		    pm->custom_size, q->writeback ? &dest : NULL, all, n);
}

bool displayd_do_simple_post(struct dconn *c, const struct fl_dproto_request *q, int *fds)
{
	const struct fl_dmsg_simple_post *s = &q->u.simple_post;
	struct handle *h = displayd_handle_get(c, s->handle, FL_DISPLAY_OBJ_INTERFACE);
	static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
	int mine[FL_DISPLAY_MAX_PLANES + 1];
	size_t custom_size = 0;
	struct ddev *d;

	memcpy(mine, fds, q->nfds * sizeof(int));
	for (unsigned int i = 0; i < q->nfds; i++)
		fds[i] = -1;
	if (!h) {
		for (unsigned int i = 0; i < q->nfds; i++)
			close(mine[i]);
		return displayd_wrong_kind(c, &q->hdr, s->handle, "an interface");
	}
	d = displayd_dev_by_id(h->device);
	if (d->drv->describe_simple_post) {
		struct fl_display_driver_buffer b = { .engine = s->buf.engine,
						      .w = s->buf.w,
						      .h = s->buf.h,
						      .format = s->buf.format,
						      .n_planes = s->buf.n_planes,
						      .in_fence = -1 };
		int r = d->drv->describe_simple_post(d->drv_data, h->id, &b, custom, &custom_size);

		if (r < 0 || custom_size > sizeof(custom)) {
			for (unsigned int i = 0; i < q->nfds; i++)
				close(mine[i]);
			return displayd_fail(c, &q->hdr, r < 0 ? r : -EIO,
					     "the driver could not describe the simple post");
		}
	}
	return post(c, &q->hdr, d, 0, s->fence_type, &h->id, 1, &s->buf, NULL, 1, custom,
		    custom_size, NULL, mine, q->nfds);
}

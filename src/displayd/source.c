/* SPDX-License-Identifier: MIT */
/*
 * Live sources (docs/display.md, "Live sources"): SET_SOURCE on an engine
 * handle, checked here as a post is, synchronously and without side
 * effects, before the driver gets it: the type, the size, a format the
 * engine lists, the layer, and a stream that is a stream socket. What is
 * shown, and the reading of a stream, are the driver's. A source lives as
 * long as the connection that set it, as its posts do.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "compose.h"
#include "display.h"
#include "displayd-private.h"

#define XR24 FL_FOURCC('X', 'R', '2', '4')
#define AR24 FL_FOURCC('A', 'R', '2', '4')
/* A source's frame, at most: a scan-out buffer's 32 MiB (data/heaps.ini's display-scanout). */
#define MAX_FRAME_BYTES (32ull << 20)

static int check(struct ddev *d, uint32_t eng, const struct fl_display_source *s,
		 struct fl_display_error *e)
{
	struct fl_display_driver_buffer b = {
		.engine = eng, .w = s->w, .h = s->h, .n_planes = 1, .in_fence = -1
	};
	int type = 0;
	socklen_t len = sizeof(type);
	char fcc[5];

	if (!d->drv->set_source)
		return fl__display_fail(e, -EOPNOTSUPP, "driver %s has no live sources",
					d->drv->name);
	if (s->type == FL_DISPLAY_SOURCE_NONE)
		return 0;
	if (!s->w || !s->h || s->w > FL_DISPLAY_COMPOSE_MAX_SIZE ||
	    s->h > FL_DISPLAY_COMPOSE_MAX_SIZE || (uint64_t)s->w * s->h * 4 > MAX_FRAME_BYTES)
		return fl__display_fail(e, -EINVAL,
					"source: %ux%u is empty, over %d pixels a side or over "
					"%llu bytes a frame",
					s->w, s->h, FL_DISPLAY_COMPOSE_MAX_SIZE,
					(unsigned long long)MAX_FRAME_BYTES);
	if (s->format != XR24 && (s->format != AR24 || s->type != FL_DISPLAY_SOURCE_STREAM))
		return fl__display_fail(e, -EINVAL,
					"source: format %s: a pattern is XRGB8888, a stream "
					"XRGB8888 or ARGB8888",
					fl__display_format_str(s->format, fcc));
	if (!fl__display_engine_supports(fl__display_engine_get(d->dev, eng), s->format))
		return fl__display_fail(e, -EINVAL,
					"source: overlay engine %u does not scan out %s", eng,
					fl__display_format_str(s->format, fcc));
	/* Shown where its layer says: there is no "top-left at its size" for a stream. */
	if (!(s->layer.flags & FL_DISPLAY_LAYER_ENABLED))
		return fl__display_fail(e, -EINVAL, "source: its layer is not enabled");
	b.format = s->format;
	if (displayd_check_layers(d, NULL, 0, &b, &s->layer, 1, e))
		return e ? e->err : -EINVAL;
	/*
	 * A socket, so that every read can be MSG_DONTWAIT: a pipe's reads
	 * wait unless O_NONBLOCK is set, and any holder of the pipe can clear
	 * that flag under the service.
	 */
	if (s->type == FL_DISPLAY_SOURCE_STREAM &&
	    (getsockopt(s->fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM))
		return fl__display_fail(e, -EINVAL,
					"source: a stream is a connected SOCK_STREAM socket");
	return 0;
}

bool displayd_do_set_source(struct dconn *c, const struct fl_dproto_request *q, int *fds)
{
	const struct fl_dmsg_set_source *m = &q->u.set_source;
	struct handle *h = displayd_handle_get(c, m->handle, FL_DISPLAY_OBJ_ENGINE);
	struct fl_display_error e = { 0, "" };
	struct fl_display_source s;
	struct ddev *d;
	int fd = q->nfds ? fds[0] : -1, r;

	if (q->nfds)
		fds[0] = -1;
	if (!h) {
		if (fd >= 0)
			close(fd);
		return displayd_wrong_kind(c, &q->hdr, m->handle, "an overlay engine");
	}
	d = displayd_dev_by_id(h->device);
	s = (struct fl_display_source){ m->type, m->w, m->h, m->format, fd, { 0, 0, 0 }, m->layer };
	r = check(d, h->id, &s, &e);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return displayd_reply_status(c, &q->hdr, r, &e);
	}
	if (h->id >= FL_DISPLAY_CONFIG_MAX_OBJECTS) {
		if (fd >= 0)
			close(fd);
		fl__display_fail(&e, -EINVAL, "source: engine %u is past the config's %d", h->id,
				 FL_DISPLAY_CONFIG_MAX_OBJECTS);
		return displayd_reply_status(c, &q->hdr, -EINVAL, &e);
	}
	/* The fd is the driver's from here, also when it refuses. */
	r = d->drv->set_source(d->drv_data, h->id, &s, &e);
	if (r < 0 && !e.msg[0])
		fl__display_fail(&e, r, "the driver refused the source");
	if (r == 0)
		d->source_owner[h->id] = s.type == FL_DISPLAY_SOURCE_NONE ? NULL : c;
	return displayd_reply_status(c, &q->hdr, r, &e);
}

void displayd_sources_forget(struct dconn *c)
{
	static const struct fl_display_source none = { .type = FL_DISPLAY_SOURCE_NONE, .fd = -1 };

	for (size_t i = 0; i < dd.n_devs; i++) {
		struct ddev *d = &dd.devs[i];

		for (uint32_t k = 0; k < FL_DISPLAY_CONFIG_MAX_OBJECTS; k++) {
			if (d->source_owner[k] != c)
				continue;
			/* Removing cannot fail: no memory, no fd, no check. */
			(void)d->drv->set_source(d->drv_data, k, &none, NULL);
			d->source_owner[k] = NULL;
		}
	}
}

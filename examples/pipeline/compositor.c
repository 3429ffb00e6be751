/* SPDX-License-Identifier: MIT */
/*
 * pipeline-demo's compositor (compositor.h). Who waits on what:
 * - it never waits on a producer: a queued buffer is latched on the first vsync at which its
 *   acquire fence has signalled (a zero-timeout status read), and until then the layer keeps
 *   showing its previous buffer; a buffer that missed vsyncs that way is a late frame, blamed on
 *   that acquire fence; one whose fence failed (a reset) is given back and never shown;
 * - the hardware composer gets only signalled buffers, so its posts never wait either;
 * - the producers wait on the release fences the HWC gives for the buffers it let go (a buffer
 *   that was on an overlay is free once the next frame is on screen).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>
#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#include <fenceline/hwc.h>

#include "compositor.h"
#include "scene.h"
#include "sheet.h"

#define XR24	     FL_FOURCC('X', 'R', '2', '4')
#define MAX_PRESENTS 8u
#define MAX_LATENCY  4096u
#define MAX_LATE     16u
#define MAX_CAPTURES 24u

struct held {
	uint64_t buffer_id;
	unsigned int slot;
};

struct pending {
	bool valid;
	unsigned int slot;
	int fence;
	const struct fl_bufferqueue_buffer *buffer;
	uint64_t frame_number, queue_ns;
	unsigned int vsyncs_waited;
};

struct layer {
	struct scene_geom g;
	struct fl_bufferqueue_consumer *q;
	bool connected, gone;
	struct pending pending;
	struct pending current; /* latched: what the HWC is given */
	bool fresh; /* latched this vsync */
	struct held held[FL_BUFFERQUEUE_MAX_SLOTS];
	unsigned int n_held;
	/* Counts for the summary. */
	unsigned int latched, late, dropped, failed, on_overlay, composed, shown;
	uint64_t lat_ns[MAX_LATENCY];
	unsigned int n_lat;
	uint64_t failed_frame; /* the queue's frame number of the first failed buffer */
	int fail_status;
	unsigned int latched_after_fail;
	unsigned int others_at_fail[SCENE_LAYERS]; /* the other layers' latched counts then */
};

struct present {
	int fence;
	unsigned int frame;
	struct {
		unsigned int layer;
		uint64_t queue_ns;
	} fresh[SCENE_LAYERS];
	unsigned int n_fresh;
};

struct late {
	unsigned int layer, vsyncs;
	bool dropped; /* replaced by a newer buffer while its fence kept it waiting */
	uint64_t frame_number;
	char fence[32];
};

/* A dropped buffer's acquire fence, still pending when dropped. */
struct watched {
	int fence;
	unsigned int layer;
	uint64_t frame_number;
};
#define MAX_WATCHED 8u

struct comp {
	const struct compositor_opts *o;
	struct fl_display_handle *dev, *intf;
	struct fl_hwc *hwc;
	uint32_t w, h, hz;
	struct layer L[SCENE_LAYERS];
	struct present presents[MAX_PRESENTS];
	unsigned int n_presents;
	struct late late[MAX_LATE];
	unsigned int n_late, n_late_all;
	unsigned int vsyncs, posted, frames, unchanged, captures, capture_errors;
	uint64_t capture_due_ns;
	unsigned int full_since; /* the vsync that found every layer on screen, or 0 */
	int full_fence; /* the first post with every layer: its present fence, or -1 */
	struct watched watched[MAX_WATCHED];
	unsigned int n_watched;
	struct sheet sheet;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what, int r, const struct fl_display_error *e)
{
	fprintf(stderr, "pipeline-demo: compositor: %s: %s\n", what,
		e && e->err && e->msg[0] ? e->msg : strerror(-r));
	return r;
}

static uint64_t buffer_id(unsigned int layer, uint64_t frame_number)
{
	return (uint64_t)(layer + 1) << 48 | frame_number;
}

/* The first connected interface with a mode that is not memory writeback, as pipeline-screen. */
static int open_display(struct comp *c, uint32_t *ret_dev, uint32_t *ret_intf)
{
	struct fl_display_device_info info = { 0 };
	uint32_t *ids = NULL;
	int n, r;

	n = fl_display_devices(&ids);
	if (n <= 0) {
		free(ids);
		return fail("no display device", n < 0 ? n : -ENODEV, NULL);
	}
	*ret_dev = ids[0];
	free(ids);
	r = fl_display_device_open(*ret_dev, &c->dev);
	if (r < 0)
		return fail("opening the display device", r, NULL);
	r = fl_display_device_get_info(c->dev, &info, sizeof(info), NULL);
	if (r < 0)
		return fail("reading the display device", r, NULL);
	for (uint32_t i = 0; i < info.n_interfaces; i++) {
		struct fl_display_interface_data d = { 0 };
		struct fl_display_handle *h;

		if (fl_display_interface_open(c->dev, i, &h) < 0)
			continue;
		if (fl_display_interface_get_data(h, &d, NULL) == 0 && d.hotplug_detect &&
		    d.current_mode.hdisplay && d.type != FL_DISPLAY_INTF_MEMORY) {
			c->w = d.current_mode.hdisplay;
			c->h = d.current_mode.vdisplay;
			c->hz = d.current_mode.vrefresh ? d.current_mode.vrefresh : 60;
			*ret_intf = i;
			fl_display_close(h);
			return 0;
		}
		fl_display_close(h);
	}
	return fail("no connected interface with a mode", -ENODEV, NULL);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Give a buffer back to its queue with @fence (borrowed) as its release fence. */
static void give_back(struct comp *c, unsigned int l, unsigned int slot, int fence)
{
	int r = fl_bufferqueue_consumer_release(c->L[l].q, slot, fence);

	if (r < 0)
		fail("releasing a buffer", r, NULL);
}

static void note_late(struct comp *c, unsigned int l, const struct pending *p, bool dropped)
{
	struct fl_fence_info info = { 0 };
	struct late *lt;

	if (!dropped)
		c->L[l].late++;
	c->n_late_all++;
	if (c->n_late >= MAX_LATE)
		return;
	lt = &c->late[c->n_late++];
	lt->layer = l;
	lt->dropped = dropped;
	lt->vsyncs = p->vsyncs_waited;
	lt->frame_number = p->frame_number;
	if (fl_fence_fd_get_info(p->fence, &info, NULL, 0) >= 0)
		snprintf(lt->fence, sizeof(lt->fence), "%s", info.name);
	else
		snprintf(lt->fence, sizeof(lt->fence), "?");
}

/*
 * Give back layer @l's pending buffer unshown: replaced by a newer one (it goes back with its own
 * acquire fence as its release fence: free once its producer is done with it), or failed (a
 * reset, or a producer gone: the layer keeps its last good buffer).
 */
static void note_failed(struct comp *c, unsigned int l, uint64_t frame_number, int st)
{
	struct layer *L = &c->L[l];

	if (!L->failed) {
		L->failed_frame = frame_number;
		L->fail_status = st;
		for (unsigned int o = 0; o < SCENE_LAYERS; o++)
			L->others_at_fail[o] = c->L[o].latched;
	}
	L->failed++;
}

/*
 * Fences of buffers dropped unsignalled: one may still fail (a reset whose news reaches this
 * process after the producer's next buffer), and that buffer counts as failed, not dropped.
 */
static void watch_dropped(struct comp *c, unsigned int l, const struct pending *p)
{
	struct watched *w;

	if (c->n_watched == MAX_WATCHED) {
		close(c->watched[0].fence);
		memmove(&c->watched[0], &c->watched[1], sizeof(c->watched[0]) * (MAX_WATCHED - 1));
		c->n_watched--;
	}
	w = &c->watched[c->n_watched];
	w->fence = dup(p->fence);
	if (w->fence < 0)
		return;
	w->layer = l;
	w->frame_number = p->frame_number;
	c->n_watched++;
}

static void check_watched(struct comp *c)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < c->n_watched; i++) {
		struct watched *w = &c->watched[i];
		int st = fl_fence_fd_get_status(w->fence);

		if (st == 0) {
			c->watched[k++] = *w;
			continue;
		}
		if (st < 0) {
			c->L[w->layer].dropped--;
			note_failed(c, w->layer, w->frame_number, st);
		}
		close(w->fence);
	}
	c->n_watched = k;
}

static void drop_pending(struct comp *c, unsigned int l)
{
	struct layer *L = &c->L[l];
	int st = fl_fence_fd_get_status(L->pending.fence);

	if (st < 0) {
		note_failed(c, l, L->pending.frame_number, st);
		give_back(c, l, L->pending.slot, -1);
	} else {
		L->dropped++;
		/* Dropped because its fence kept it from a vsync it was queued for: that fence's. */
		if (L->pending.vsyncs_waited)
			note_late(c, l, &L->pending, true);
		if (st == 0)
			watch_dropped(c, l, &L->pending);
		give_back(c, l, L->pending.slot, L->pending.fence);
	}
	close_fd(&L->pending.fence);
	L->pending.valid = false;
}

/*
 * Latch layer @l's newest buffer whose acquire fence has signalled; newer buffers replace an
 * older one still being written.
 */
static void latch(struct comp *c, unsigned int l, uint64_t next_vsync_ns)
{
	struct layer *L = &c->L[l];
	struct fl_bufferqueue_acquired a;
	int st;

	L->fresh = false;
	while (fl_bufferqueue_consumer_acquire(L->q, 0, &a) == 0) {
		L->dropped += (unsigned int)a.dropped;
		if (L->pending.valid)
			drop_pending(c, l);
		L->pending = (struct pending){ true,	 a.slot,	 a.acquire_fence_fd,
					       a.buffer, a.frame_number, a.queue_time_ns,
					       0 };
		/*
		 * SurfaceFlinger's hint: the buffer is wanted by the next vsync. A trace then
		 * shows each acquire fence that missed it as late, with its critical path.
		 */
		fl_fence_fd_set_deadline(a.acquire_fence_fd, next_vsync_ns);
	}
	if (!L->pending.valid)
		return;
	st = fl_fence_fd_get_status(L->pending.fence);
	if (st == 0) {
		L->pending.vsyncs_waited++;
		return;
	}
	if (st < 0) {
		drop_pending(c, l);
		return;
	}
	if (L->pending.vsyncs_waited)
		note_late(c, l, &L->pending, false);
	close_fd(&L->pending.fence);
	/* The one it replaces is still the HWC's: it comes back in a result's released list. */
	if (L->current.valid && L->n_held < FL_BUFFERQUEUE_MAX_SLOTS)
		L->held[L->n_held++] =
			(struct held){ buffer_id(l, L->current.frame_number), L->current.slot };
	L->current = L->pending;
	L->pending.valid = false;
	L->fresh = true;
	L->latched++;
	if (L->failed)
		L->latched_after_fail++;
}

static void release_from_hwc(struct comp *c, const struct fl_hwc_release *rel)
{
	unsigned int l = (unsigned int)rel->layer_id - 1;
	struct layer *L;

	if (l >= SCENE_LAYERS)
		return;
	L = &c->L[l];
	for (unsigned int i = 0; i < L->n_held; i++)
		if (L->held[i].buffer_id == rel->buffer_id) {
			give_back(c, l, L->held[i].slot, rel->fence);
			L->held[i] = L->held[--L->n_held];
			return;
		}
	/* The current one (its layer went): nothing else is held. */
	if (L->current.valid && buffer_id(l, L->current.frame_number) == rel->buffer_id) {
		give_back(c, l, L->current.slot, rel->fence);
		L->current.valid = false;
	}
}

/* Present fences that have signalled: their frames' latency, queue to on screen. */
static void reap_presents(struct comp *c, bool wait)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < c->n_presents; i++) {
		struct present *p = &c->presents[i];
		struct fl_fence_info info = { 0 };
		int st = wait ? fl_fence_fd_wait(p->fence, 2000) : fl_fence_fd_get_status(p->fence);

		if (st == 0 || st == -ETIME) {
			c->presents[k++] = *p;
			continue;
		}
		if (fl_fence_fd_get_info(p->fence, &info, NULL, 0) >= 0 && info.status == 1) {
			for (unsigned int f = 0; f < p->n_fresh; f++) {
				struct layer *L = &c->L[p->fresh[f].layer];
				uint64_t lat = info.timestamp_ns - p->fresh[f].queue_ns;

				if (info.timestamp_ns > p->fresh[f].queue_ns &&
				    L->n_lat < MAX_LATENCY)
					L->lat_ns[L->n_lat++] = lat;
				if (!c->o->quiet)
					printf("frame %u: %s on screen %.2f ms after it was "
					       "queued\n",
					       p->frame, L->g.name, (double)lat / 1e6);
			}
		}
		close(p->fence);
	}
	c->n_presents = k;
}

static void capture(struct comp *c)
{
	struct fl_display_error e = { 0 };
	uint32_t w, h, pitch;
	uint8_t *map;
	size_t len;
	int fd, r;

	r = fl_display_capture(c->intf, XR24, &fd, &w, &h, &pitch, &e);
	if (r < 0) {
		if (!c->capture_errors++)
			fail("capture", r, &e);
		return;
	}
	len = (size_t)pitch * h;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	if (c->o->sheet)
		sheet_add(&c->sheet, (const uint32_t *)map, pitch);
	if (c->o->capture_dir) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/capture-%03u.png", c->o->capture_dir, c->captures);
		r = sheet_write_png(path, (const uint32_t *)map, w, h, pitch);
		if (r < 0)
			fail(path, r, NULL);
	}
	c->captures++;
	munmap(map, len);
}

static int frame(struct comp *c, uint64_t vsync_ns)
{
	struct fl_hwc_layer hl[SCENE_LAYERS];
	struct fl_hwc_result res;
	struct fl_display_error e = { 0 };
	static const struct fl_hwc_rect none[1];
	unsigned int n = 0, idx[SCENE_LAYERS];
	int r;

	c->vsyncs++;
	check_watched(c);
	if (c->full_fence >= 0) {
		int st = fl_fence_fd_get_status(c->full_fence);

		/* Failed (the service reset the display): the next full post is watched. */
		if (st != 0)
			close_fd(&c->full_fence);
		if (st == 1)
			c->full_since = c->vsyncs;
	}
	for (unsigned int l = 0; l < SCENE_LAYERS; l++)
		latch(c, l, vsync_ns + 1000000000u / c->hz);
	for (unsigned int l = 0; l < SCENE_LAYERS; l++) {
		struct layer *L = &c->L[l];
		const struct fl_bufferqueue_buffer *b = L->current.buffer;
		struct fl_hwc_layer *h = &hl[n];

		if (!L->current.valid)
			continue;
		memset(h, 0, sizeof(*h));
		h->id = l + 1;
		h->buffer_id = buffer_id(l, L->current.frame_number);
		h->buffer.w = b->width;
		h->buffer.h = b->height;
		h->buffer.format = b->format;
		h->buffer.n_planes = b->num_planes;
		for (unsigned int p = 0; p < FL_DISPLAY_MAX_PLANES; p++) {
			h->buffer.fd[p] = p < b->num_planes ? b->fd : -1;
			h->buffer.offset[p] = p < b->num_planes ? b->offsets[p] : 0;
			h->buffer.pitch[p] = p < b->num_planes ? b->pitches[p] : 0;
		}
		h->buffer.acquire_fence = -1; /* latched: signalled already */
		h->layer = (struct fl_display_layer){ .flags = FL_DISPLAY_LAYER_ENABLED,
						      .src_w = b->width << 16,
						      .src_h = b->height << 16,
						      .dst_x = L->g.x,
						      .dst_y = L->g.y,
						      .dst_w = b->width,
						      .dst_h = b->height,
						      .zpos = L->g.z,
						      .blend = L->g.blend,
						      .alpha = 0xffff };
		/* A buffer shown before changed nothing; a new one: all of it (no damage given). */
		h->damage = L->fresh ? NULL : none;
		h->n_damage = 0;
		idx[n++] = l;
	}
	memset(&res, 0, sizeof(res));
	r = fl_hwc_present(c->hwc, hl, n, &res, &e);
	if (r < 0)
		return fail("fl_hwc_present", r, &e);
	c->frames++;
	for (size_t i = 0; i < res.n_released; i++) {
		release_from_hwc(c, &res.released[i]);
		if (res.released[i].fence >= 0)
			close(res.released[i].fence);
	}
	for (unsigned int i = 0; i < n; i++) {
		struct layer *L = &c->L[idx[i]];

		L->shown++;
		if (res.layers[i].composition == FL_HWC_COMPOSITION_DEVICE)
			L->on_overlay++;
		else
			L->composed++;
	}
	/*
	 * Once every layer is on screen, every Nth vsync is captured half a period later: what
	 * the screen shows while the producers write their next buffers. On screen means the
	 * present fence of the first post with all of them signalled: a loaded machine may flip
	 * it many vsyncs after the post, and a capture before then shows a layer missing.
	 */
	if (n == SCENE_LAYERS && !c->full_since && c->full_fence < 0 &&
	    (res.flags & FL_HWC_FRAME_POSTED) && res.present_fence >= 0)
		c->full_fence = fcntl(res.present_fence, F_DUPFD_CLOEXEC, 0);
	if ((c->o->sheet || c->o->capture_dir) && c->o->capture_every && c->full_since &&
	    c->vsyncs % c->o->capture_every == 0 && c->captures < MAX_CAPTURES)
		c->capture_due_ns = now_ns() + 500000000u / c->hz;
	if (!(res.flags & FL_HWC_FRAME_POSTED)) {
		c->unchanged++;
		return 0;
	}
	c->posted++;
	if (res.present_fence >= 0) {
		struct present *p;

		if (c->n_presents == MAX_PRESENTS)
			reap_presents(c, true);
		if (c->n_presents == MAX_PRESENTS) {
			close(res.present_fence);
		} else {
			p = &c->presents[c->n_presents++];
			p->fence = res.present_fence;
			p->frame = c->vsyncs;
			p->n_fresh = 0;
			for (unsigned int l = 0; l < SCENE_LAYERS; l++)
				if (c->L[l].fresh)
					p->fresh[p->n_fresh].layer = l,
					p->fresh[p->n_fresh++].queue_ns = c->L[l].current.queue_ns;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void summary(struct comp *c, double cpu_us)
{
	struct fl_hwc_stats hs = { 0 };
	static const char *const names[] = { "camera", "video", "app", "statusbar" };

	fl_hwc_get_stats(c->hwc, &hs);
	printf("compositor: %u vsyncs at %u Hz on %ux%u, %u frames posted, %u unchanged (nothing "
	       "posted)\n",
	       c->vsyncs, c->hz, c->w, c->h, c->posted, c->unchanged);
	printf("latency, queue -> on screen (present fence's time; vsync period %.2f ms):\n",
	       1000.0 / c->hz);
	for (unsigned int l = 0; l < SCENE_LAYERS; l++) {
		struct layer *L = &c->L[l];

		qsort(L->lat_ns, L->n_lat, sizeof(L->lat_ns[0]), cmp_u64);
		printf("  %-9s %4u latched  p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  late %u  "
		       "dropped %u\n",
		       names[l], L->latched, L->n_lat ? (double)L->lat_ns[L->n_lat / 2] / 1e6 : 0.0,
		       L->n_lat ? (double)L->lat_ns[L->n_lat * 99 / 100] / 1e6 : 0.0,
		       L->n_lat ? (double)L->lat_ns[L->n_lat - 1] / 1e6 : 0.0, L->late, L->dropped);
	}
	printf("late and dropped frames: %u (a buffer queued but not latched at a vsync: its "
	       "acquire fence had not signalled; dropped when a newer one came meanwhile)\n",
	       c->n_late_all);
	for (unsigned int i = 0; i < c->n_late; i++)
		printf("  %s buffer #%llu %s after %u vsync(s): waited on fence %s (the %s's "
		       "acquire "
		       "fence)\n",
		       names[c->late[i].layer], (unsigned long long)c->late[i].frame_number,
		       c->late[i].dropped ? "dropped" : "late", c->late[i].vsyncs, c->late[i].fence,
		       names[c->late[i].layer]);
	if (c->n_late_all > c->n_late)
		printf("  ... and %u more\n", c->n_late_all - c->n_late);
	printf("hwc: per layer, frames on an overlay / composed into the client target:\n");
	for (unsigned int l = 0; l < SCENE_LAYERS; l++)
		printf("  %-9s overlay %u composed %u\n", names[l], c->L[l].on_overlay,
		       c->L[l].composed);
	printf("hwc: %llu plans chosen with %llu TEST_ONLY posts (%llu refused), plan reused on "
	       "%llu frames, %llu frames composed (%llu pixels), %llu unchanged\n",
	       (unsigned long long)hs.plans, (unsigned long long)hs.test_only,
	       (unsigned long long)hs.test_only_refused, (unsigned long long)hs.plans_reused,
	       (unsigned long long)hs.composed_frames, (unsigned long long)hs.composed_pixels,
	       (unsigned long long)hs.unchanged);
	printf("compositor CPU: %.0f us per vsync (user + system, getrusage)\n", cpu_us);
	for (unsigned int l = 0; l < SCENE_LAYERS; l++) {
		struct layer *L = &c->L[l];

		if (!L->failed)
			continue;
		printf("reset: the %s's buffer #%llu failed (%s): %u of its buffers never shown, "
		       "its last good buffer stayed on screen; %u latched after it\n",
		       names[l], (unsigned long long)L->failed_frame, strerror(-L->fail_status),
		       L->failed, L->latched_after_fail);
		for (unsigned int o = 0; o < SCENE_LAYERS; o++)
			if (o != l)
				printf("  since then %s: %u latched\n", names[o],
				       c->L[o].latched - L->others_at_fail[o]);
	}
}

int compositor_run(const struct compositor_opts *o)
{
	struct comp *c = calloc(1, sizeof(*c));
	struct fl_hwc_options hopts = { 0 };
	struct fl_display_error e = { 0 };
	struct rusage ru0, ru1;
	uint32_t dev_id, intf_id, size[2];
	uint64_t stop_ns = o->end_ns + (uint64_t)o->timeout_s * 1000000000u;
	int r;

	if (!c)
		return fail("calloc", -ENOMEM, NULL);
	c->o = o;
	for (unsigned int l = 0; l < SCENE_LAYERS; l++)
		c->L[l].pending.fence = c->L[l].current.fence = -1;
	c->full_fence = -1;
	r = open_display(c, &dev_id, &intf_id);
	if (r < 0)
		goto out;
	hopts.flags = o->no_overlays ? FL_HWC_NO_OVERLAYS : 0;
	r = fl_hwc_create(dev_id, intf_id, &hopts, &c->hwc, &e);
	if (r < 0) {
		fail("fl_hwc_create", r, &e);
		goto out;
	}
	c->intf = fl_hwc_get_interface(c->hwc);
	r = fl_display_blank(c->intf, FL_DISPLAY_DPMS_ON, &e);
	if (r < 0 && r != -EBUSY) {
		fail("lighting the screen", r, &e);
		goto out;
	}
	r = fl_display_set_event(c->intf, FL_DISPLAY_EVENT_VSYNC, 1, &e);
	if (r < 0 && r != -EALREADY) {
		fail("subscribing to VSYNC", r, &e);
		goto out;
	}
	{
		struct scene_geom g[SCENE_LAYERS];

		r = scene_layout(c->w, c->h, g);
		if (r < 0) {
			fail("the screen is too small for the scene", r, NULL);
			goto out;
		}
		for (unsigned int l = 0; l < SCENE_LAYERS; l++)
			c->L[l].g = g[l];
	}
	for (unsigned int l = 0; l < SCENE_LAYERS; l++) {
		char path[4096];
		struct fl_bufferqueue_config qc = { 0 };

		snprintf(path, sizeof(path), "%s/%s.sock", o->dir, c->L[l].g.name);
		qc.name = c->L[l].g.name;
		qc.path = path;
		/*
		 * FIFO, and latch() takes every queued buffer each vsync, keeping the newest whose
		 * fence has signalled (SurfaceFlinger's latch): every buffer passes through the
		 * compositor, so each drop and each failed fence (a reset) is seen and named; a
		 * mailbox would replace buffers unseen. Three slots: one on screen, one latched for
		 * the next, one being written. With two (--slots 2) the producer gets the buffer
		 * just replaced on screen every time, still scanned out until its release fence:
		 * item 7's poison check is sharpest there.
		 */
		qc.num_slots = o->slots;
		qc.mode = FL_BUFFERQUEUE_FIFO;
		qc.flags = FL_BUFFERQUEUE_SCANOUT;
		r = fl_bufferqueue_consumer_create(&qc, &c->L[l].q);
		if (r < 0) {
			fail("making a buffer queue", r, NULL);
			goto out;
		}
	}
	if (o->sheet && sheet_init(&c->sheet, c->w, c->h, 4, 6) < 0)
		fail("the contact sheet", -ENOMEM, NULL);
	size[0] = c->w;
	size[1] = c->h;
	if (write(o->ready_fd, size, sizeof(size)) != (ssize_t)sizeof(size)) {
		r = fail("telling the demo", -errno, NULL);
		goto out;
	}
	getrusage(RUSAGE_SELF, &ru0);
	for (;;) {
		struct pollfd pfd[SCENE_LAYERS + 1];
		unsigned int gone = 0;
		uint64_t t = now_ns();

		alarm(o->timeout_s);
		for (unsigned int l = 0; l < SCENE_LAYERS; l++)
			gone += c->L[l].gone;
		if (gone == SCENE_LAYERS || t > stop_ns)
			break;
		pfd[0] = (struct pollfd){ .fd = fl_display_get_fd(c->intf), .events = POLLIN };
		for (unsigned int l = 0; l < SCENE_LAYERS; l++)
			pfd[l + 1] =
				(struct pollfd){ .fd = fl_bufferqueue_consumer_get_fd(c->L[l].q),
						 .events = POLLIN };
		if (poll(pfd, SCENE_LAYERS + 1, c->capture_due_ns ? 1 : 100) < 0 &&
		    errno != EINTR) {
			r = fail("poll", -errno, NULL);
			goto out;
		}
		for (unsigned int l = 0; l < SCENE_LAYERS; l++) {
			unsigned int ev = 0;

			if (!pfd[l + 1].revents)
				continue;
			fl_bufferqueue_consumer_dispatch(c->L[l].q, &ev);
			if (ev & FL_BUFFERQUEUE_EVENT_CONNECTED)
				c->L[l].connected = true;
			if ((ev & FL_BUFFERQUEUE_EVENT_DISCONNECTED) && c->L[l].connected)
				c->L[l].gone = true;
		}
		if (pfd[0].revents & POLLIN) {
			struct fl_display_event *ev = NULL;

			r = fl_display_read_event(c->intf, &ev);
			if (r < 0) {
				fail("reading the display's events", r, NULL);
				goto out;
			}
			if (ev->type == FL_DISPLAY_EVENT_VSYNC &&
			    ev->length >= sizeof(struct fl_display_vsync_event))
				r = frame(c, ((struct fl_display_vsync_event *)ev)->timestamp);
			free(ev);
			if (r < 0)
				goto out;
		}
		reap_presents(c, false);
		if (c->capture_due_ns && now_ns() >= c->capture_due_ns) {
			c->capture_due_ns = 0;
			capture(c);
		}
	}
	/* The last dropped buffers' fences have had a vsync's time at least to complete. */
	check_watched(c);
	getrusage(RUSAGE_SELF, &ru1);
	reap_presents(c, true);
	{
		double us = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec +
				     ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) *
				    1e6 +
			    (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
				     ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec);

		summary(c, c->vsyncs ? us / c->vsyncs : 0);
	}
	if (o->sheet && c->sheet.n) {
		/* Only the rows of tiles that were filled. */
		uint32_t rows = (c->sheet.n + c->sheet.cols - 1) / c->sheet.cols;

		r = sheet_write_png(o->sheet, c->sheet.px, c->sheet.w,
				    4 + rows * (c->sheet.tile_h + 4), c->sheet.w * 4);
		if (r < 0)
			fail(o->sheet, r, NULL);
		else
			printf("contact sheet: %s (%u captures, every %u vsyncs)\n", o->sheet,
			       c->sheet.n, o->capture_every);
	}
	fflush(stdout);
	r = 0;
out:
	for (unsigned int i = 0; i < c->n_presents; i++)
		close(c->presents[i].fence);
	for (unsigned int i = 0; i < c->n_watched; i++)
		close(c->watched[i].fence);
	close_fd(&c->full_fence);
	for (unsigned int l = 0; l < SCENE_LAYERS; l++) {
		close_fd(&c->L[l].pending.fence);
		fl_bufferqueue_consumer_destroy(c->L[l].q);
	}
	fl_hwc_destroy(c->hwc);
	if (c->dev)
		fl_display_close(c->dev);
	sheet_free(&c->sheet);
	fl_display_disconnect();
	free(c);
	return r;
}

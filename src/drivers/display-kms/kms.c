/* SPDX-License-Identifier: MIT */
/*
 * The kms display driver (docs/display.md, "The kms driver"): a DRM/KMS
 * card through libdrm, atomic only.
 *
 *   [device kms]
 *   driver = kms
 *   options = card=/dev/dri/card0
 *
 * (card: optional, default the first /dev/dri/cardN with atomic KMS.) The
 * device's objects come from the card: connectors are interfaces, planes
 * are overlay engines, each connector driven by one CRTC chosen here from
 * its encoders. A post is one atomic commit of every plane of its CRTC
 * (the unused ones off), tested with TEST_ONLY in validate and made
 * non-blocking with a page-flip event in post: the kernel shows it at the
 * next vblank and the event's timestamp is the host's flipped(). Vsync
 * events come from vblank events queued on the CRTC, one frame at a time.
 *
 * Buffers: dma-bufs are imported with PRIME (zero-copy); memfds become
 * dma-bufs through /dev/udmabuf when they are sealed against shrinking,
 * else they are copied into dumb buffers at each flip, counted in the
 * device's dump. A framebuffer is removed only when no commit uses it:
 * with its post's state, after the next post flipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/sync_file.h>
#include <linux/udmabuf.h>

#include <drm_fourcc.h>
#include <xf86drm.h>
#include <xf86drmMode.h>

#include "display-kms.h"

/* The most connectors, CRTCs and planes a card may have here (bitmasks of 64). */
#define KMAX 64

enum {
	P_FB_ID,
	P_CRTC_ID,
	P_SRC_X,
	P_SRC_Y,
	P_SRC_W,
	P_SRC_H,
	P_CRTC_X,
	P_CRTC_Y,
	P_CRTC_W,
	P_CRTC_H,
	P_ZPOS,
	P_ALPHA,
	P_BLEND,
	P_ROTATION,
	P_TYPE,
	P_IN_FENCE_FD,
	N_PP
};
static const char *const plane_prop_names[N_PP] = { "FB_ID",
						    "CRTC_ID",
						    "SRC_X",
						    "SRC_Y",
						    "SRC_W",
						    "SRC_H",
						    "CRTC_X",
						    "CRTC_Y",
						    "CRTC_W",
						    "CRTC_H",
						    "zpos",
						    "alpha",
						    "pixel blend mode",
						    "rotation",
						    "type",
						    "IN_FENCE_FD" };
enum { C_ACTIVE, C_MODE_ID, C_OUT_FENCE_PTR, N_CP };
static const char *const crtc_prop_names[N_CP] = { "ACTIVE", "MODE_ID", "OUT_FENCE_PTR" };
enum { K_CRTC_ID, K_WB_FB_ID, K_WB_OUT_FENCE_PTR, N_KP };
static const char *const conn_prop_names[N_KP] = { "CRTC_ID", "WRITEBACK_FB_ID",
						   "WRITEBACK_OUT_FENCE_PTR" };

struct kplane {
	uint32_t id, possible_crtcs;
	uint64_t type; /* DRM_PLANE_TYPE_* */
	uint32_t prop[N_PP];
	bool zpos_mutable;
	uint64_t zmin, zmax;
	uint64_t
		blend[3]; /* the "pixel blend mode" enum's values: None, Pre-multiplied, Coverage */
	char name[FL_DISPLAY_NAME_LEN];
};

struct kconn {
	uint32_t id, type;
	int crtc; /* index in crtcs, -1: none can drive it */
	uint32_t prop[N_KP];
	bool writeback;
	bool on; /* DPMS ON in the model */
};

struct kcrtc {
	uint32_t id;
	uint32_t prop[N_CP];
	uint64_t route; /* the connectors it drives now, a bit each */
	bool active;
	bool seq_armed;
};

/* A framebuffer of one buffer: imported (zero-copy), or a dumb buffer copied to or from. */
struct kfb {
	uint32_t fb;
	uint32_t dumb; /* its dumb buffer's handle, 0: imported */
	void *map; /* the dumb buffer, mapped */
	size_t map_len;
	uint32_t pitch; /* the dumb buffer's */
	const struct fl_display_driver_buffer *src; /* the service's, for the copy */
};

struct kms;

/* What validate made of a post: the commit's framebuffers and routing. */
struct kstate {
	struct kms *k;
	int crtc;
	uint64_t route;
	uint32_t mode_blob;
	size_t n;
	struct {
		struct kfb fb;
		int plane;
		struct fl_display_layer layer;
		struct fl_display_driver_buffer buf;
	} b[FL_DISPLAY_MAX_BUFFERS];
	bool wb;
	int wb_conn;
	struct kfb wbfb;
	struct fl_display_driver_buffer wbbuf;
	int32_t wb_fence;
	int32_t out_fence; /* the commit's OUT_FENCE_PTR: signalled at the flip's vblank */
	struct fl_display_source *out_src;
	bool out_pending;
	struct fl_display_source *wb_src;
	bool event_pending, wb_pending, posted;
	uint64_t posted_ns;
	uint64_t ts;
	struct kstate *next; /* in flight */
};

struct kms {
	const struct fl_display_host *host;
	int fd;
	char path[64];
	struct kconn conns[KMAX];
	size_t n_conns;
	struct kcrtc crtcs[KMAX];
	size_t n_crtcs;
	struct kplane planes[KMAX];
	size_t n_planes;
	struct fl_display_driver_interface *intfs;
	struct fl_display_driver_engine *engines;
	struct fl_display_source *drm_src, *done_timer, *uevent_src, *watchdog;
	int udmabuf, uevent;
	struct kstate *in_flight, *in_flight_tail;
	struct kstate *last[KMAX]; /* per CRTC, the newest post committed: what it shows */
	uint64_t zero_copy_frames, udmabuf_frames, copied_frames, copied_bytes, out_fence_flips;
	uint64_t in_fence_commits; /* commits that carried a plane's IN_FENCE_FD */
};

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fl-displayd: kms: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- properties ---- */

/* The ids of @names on object @obj of @type into @ids (0: it lacks one); @p: a plane's extras. */
static void props_find(int fd, uint32_t obj, uint32_t type, const char *const *names, size_t n,
		       uint32_t *ids, struct kplane *p)
{
	drmModeObjectProperties *props = drmModeObjectGetProperties(fd, obj, type);

	memset(ids, 0, n * sizeof(*ids));
	if (!props)
		return;
	for (uint32_t i = 0; i < props->count_props; i++) {
		drmModePropertyRes *pr = drmModeGetProperty(fd, props->props[i]);

		if (!pr)
			continue;
		for (size_t k = 0; k < n; k++)
			if (!strcmp(pr->name, names[k]))
				ids[k] = pr->prop_id;
		if (p && !strcmp(pr->name, "type"))
			p->type = props->prop_values[i];
		if (p && !strcmp(pr->name, "zpos")) {
			p->zpos_mutable = !(pr->flags & DRM_MODE_PROP_IMMUTABLE);
			if ((pr->flags & DRM_MODE_PROP_RANGE) && pr->count_values >= 2) {
				p->zmin = pr->values[0];
				p->zmax = pr->values[1];
			}
		}
		if (p && !strcmp(pr->name, "pixel blend mode"))
			for (int e = 0; e < pr->count_enums; e++) {
				if (!strcmp(pr->enums[e].name, "None"))
					p->blend[0] = pr->enums[e].value;
				else if (!strcmp(pr->enums[e].name, "Pre-multiplied"))
					p->blend[1] = pr->enums[e].value;
				else if (!strcmp(pr->enums[e].name, "Coverage"))
					p->blend[2] = pr->enums[e].value;
			}
		drmModeFreeProperty(pr);
	}
	drmModeFreeObjectProperties(props);
}

static int add(drmModeAtomicReq *req, uint32_t obj, uint32_t prop, uint64_t v)
{
	if (!prop)
		return -EINVAL;
	return drmModeAtomicAddProperty(req, obj, prop, v) < 0 ? -ENOMEM : 0;
}

/* ---- the card ---- */

static bool card_usable(int fd, char *why, size_t len)
{
	drmModeRes *res;
	bool ok;

	if (drmSetClientCap(fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) < 0 ||
	    drmSetClientCap(fd, DRM_CLIENT_CAP_ATOMIC, 1) < 0) {
		snprintf(why, len, "no atomic modesetting (the kms driver is atomic only)");
		return false;
	}
	res = drmModeGetResources(fd);
	ok = res && res->count_crtcs > 0 && res->count_connectors > 0;
	if (!ok)
		snprintf(why, len, "no KMS (no CRTC or connector)");
	drmModeFreeResources(res);
	return ok;
}

/*
 * Whether this machine has a card the driver can run (@where, else the
 * first with atomic KMS), opened and closed again: nothing left behind.
 */
static int probe(const char *where, char *why, size_t len)
{
	char path[160], last[128] = "";

	for (int i = where ? -1 : 0; i < 16; i++) {
		int fd;
		bool ok, master;

		if (i < 0 && where)
			snprintf(path, sizeof(path), "%s", where);
		else
			snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (fd < 0) {
			if (where) {
				snprintf(why, len, "%s: %s", where, strerror(errno));
				return -errno;
			}
			continue;
		}
		ok = card_usable(fd, last, sizeof(last));
		master = ok && (drmIsMaster(fd) || drmSetMaster(fd) == 0);
		close(fd);
		if (ok && !master)
			snprintf(last, sizeof(last),
				 "another program is its DRM master (a compositor, another "
				 "fl-displayd)");
		if (ok && master)
			return 0;
		if (where) {
			snprintf(why, len, "%s: %s", where, last);
			return ok ? -EBUSY : -ENODEV;
		}
		snprintf(why, len, "%s: %s", path, last);
		if (ok)
			return -EBUSY;
	}
	if (!last[0])
		snprintf(why, len, "no /dev/dri card with KMS");
	return -ENODEV;
}

static int card_open(struct kms *k, const char *card)
{
	char why[128] = "no /dev/dri/card*";

	if (card) {
		snprintf(k->path, sizeof(k->path), "%s", card);
		k->fd = open(card, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (k->fd < 0) {
			int r = -errno;

			logf_("%s: %s", card, strerror(-r));
			return r;
		}
		if (!card_usable(k->fd, why, sizeof(why))) {
			logf_("%s: %s", card, why);
			return -EOPNOTSUPP;
		}
		return 0;
	}
	for (int i = 0; i < 16; i++) {
		snprintf(k->path, sizeof(k->path), "/dev/dri/card%d", i);
		k->fd = open(k->path, O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (k->fd < 0)
			continue;
		if (card_usable(k->fd, why, sizeof(why)))
			return 0;
		close(k->fd);
		k->fd = -1;
	}
	logf_("no /dev/dri card with atomic KMS (last: %s)", why);
	return -ENODEV;
}

static uint32_t intf_type(uint32_t t, uint32_t *flags)
{
	switch (t) {
	case DRM_MODE_CONNECTOR_HDMIA:
	case DRM_MODE_CONNECTOR_HDMIB:
		*flags |= FL_DISPLAY_INTF_EXTERNAL;
		return FL_DISPLAY_INTF_HDMI;
	case DRM_MODE_CONNECTOR_DSI:
		return FL_DISPLAY_INTF_DSI;
	case DRM_MODE_CONNECTOR_eDP:
		return FL_DISPLAY_INTF_EDP;
	case DRM_MODE_CONNECTOR_DPI:
		return FL_DISPLAY_INTF_DPI;
	case DRM_MODE_CONNECTOR_VGA:
		*flags |= FL_DISPLAY_INTF_EXTERNAL;
		return FL_DISPLAY_INTF_VGA;
	case DRM_MODE_CONNECTOR_DVII:
	case DRM_MODE_CONNECTOR_DVID:
	case DRM_MODE_CONNECTOR_DVIA:
		*flags |= FL_DISPLAY_INTF_EXTERNAL;
		return FL_DISPLAY_INTF_DVI;
	case DRM_MODE_CONNECTOR_WRITEBACK:
		return FL_DISPLAY_INTF_MEMORY;
	default:
		return FL_DISPLAY_INTF_CUSTOM;
	}
}

static void mode_from_drm(const drmModeModeInfo *m, struct fl_display_mode *ret)
{
	*ret = (struct fl_display_mode){ m->clock,     m->hdisplay, m->hsync_start, m->hsync_end,
					 m->htotal,    m->hskew,    m->vdisplay,    m->vsync_start,
					 m->vsync_end, m->vtotal,   m->vscan,	    m->vrefresh,
					 m->flags,     m->type,	    { 0 } };
	memcpy(ret->name, m->name, sizeof(ret->name) - 1);
}

static void mode_to_drm(const struct fl_display_mode *m, drmModeModeInfo *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->clock = m->clock;
	ret->hdisplay = m->hdisplay;
	ret->hsync_start = m->hsync_start;
	ret->hsync_end = m->hsync_end;
	ret->htotal = m->htotal;
	ret->hskew = m->hskew;
	ret->vdisplay = m->vdisplay;
	ret->vsync_start = m->vsync_start;
	ret->vsync_end = m->vsync_end;
	ret->vtotal = m->vtotal;
	ret->vscan = m->vscan;
	ret->vrefresh = m->vrefresh;
	ret->flags = m->flags;
	ret->type = m->type;
	memcpy(ret->name, m->name, sizeof(ret->name) - 1);
}

/* Interface @i's description from its connector now (name, type, modes, connected). */
static int conn_describe(struct kms *k, size_t i, struct fl_display_driver_interface *di)
{
	drmModeConnector *c = drmModeGetConnector(k->fd, k->conns[i].id);
	const char *tn;

	if (!c)
		return -errno;
	memset(di, 0, sizeof(*di));
	tn = drmModeGetConnectorTypeName(c->connector_type);
	snprintf(di->name, sizeof(di->name), "%s-%u", tn ? tn : "Unknown", c->connector_type_id);
	di->type = intf_type(c->connector_type, &di->flags);
	if (di->type == FL_DISPLAY_INTF_CUSTOM)
		snprintf(di->type_name, sizeof(di->type_name), "%s", tn ? tn : "Unknown");
	di->width_mm = (uint16_t)c->mmWidth;
	di->height_mm = (uint16_t)c->mmHeight;
	/* A writeback connector reports "unknown": it is always there. */
	di->connected = c->connection == DRM_MODE_CONNECTED ||
			(k->conns[i].writeback && c->connection != DRM_MODE_DISCONNECTED);
	di->current = -1;
	for (int m = 0; m < c->count_modes && di->n_modes < FL_DISPLAY_MAX_MODES; m++) {
		mode_from_drm(&c->modes[m], &di->modes[di->n_modes]);
		if (di->current < 0 && (c->modes[m].type & DRM_MODE_TYPE_PREFERRED))
			di->current = (int)di->n_modes;
		di->n_modes++;
	}
	if (di->current < 0 && di->n_modes)
		di->current = 0;
	if (!di->n_modes)
		di->connected = false;
	drmModeFreeConnector(c);
	return 0;
}

static int card_scan(struct kms *k)
{
	drmModeRes *res = drmModeGetResources(k->fd);
	drmModePlaneRes *pres = drmModeGetPlaneResources(k->fd);
	uint32_t taken = 0;
	int r = 0;

	if (!res || !pres) {
		r = -errno ? -errno : -EIO;
		goto out;
	}
	for (int i = 0; i < res->count_crtcs && k->n_crtcs < KMAX; i++) {
		struct kcrtc *c = &k->crtcs[k->n_crtcs++];

		c->id = res->crtcs[i];
		props_find(k->fd, c->id, DRM_MODE_OBJECT_CRTC, crtc_prop_names, N_CP, c->prop,
			   NULL);
	}
	for (int i = 0; i < res->count_connectors && k->n_conns < KMAX; i++) {
		drmModeConnector *mc = drmModeGetConnector(k->fd, res->connectors[i]);
		struct kconn *c;
		uint32_t possible = 0;

		if (!mc)
			continue;
		c = &k->conns[k->n_conns++];
		c->id = mc->connector_id;
		c->type = mc->connector_type;
		c->writeback = mc->connector_type == DRM_MODE_CONNECTOR_WRITEBACK;
		for (int e = 0; e < mc->count_encoders; e++) {
			drmModeEncoder *enc = drmModeGetEncoder(k->fd, mc->encoders[e]);

			if (enc)
				possible |= enc->possible_crtcs;
			drmModeFreeEncoder(enc);
		}
		drmModeFreeConnector(mc);
		/* A CRTC of its own where one is free, else the first it can have (shared). */
		c->crtc = -1;
		for (size_t x = 0; x < k->n_crtcs && x < 32; x++)
			if ((possible & 1u << x) && !(taken & 1u << x)) {
				c->crtc = (int)x;
				break;
			}
		for (size_t x = 0; c->crtc < 0 && x < k->n_crtcs && x < 32; x++)
			if (possible & 1u << x)
				c->crtc = (int)x;
		if (c->crtc >= 0 && !c->writeback)
			taken |= 1u << c->crtc;
		props_find(k->fd, c->id, DRM_MODE_OBJECT_CONNECTOR, conn_prop_names, N_KP, c->prop,
			   NULL);
	}
	for (uint32_t i = 0; i < pres->count_planes && k->n_planes < KMAX; i++) {
		drmModePlane *mp = drmModeGetPlane(k->fd, pres->planes[i]);
		struct kplane *p;
		static const char *const kinds[] = { "overlay", "primary", "cursor" };

		if (!mp)
			continue;
		p = &k->planes[k->n_planes++];
		p->id = mp->plane_id;
		p->possible_crtcs = mp->possible_crtcs;
		drmModeFreePlane(mp);
		props_find(k->fd, p->id, DRM_MODE_OBJECT_PLANE, plane_prop_names, N_PP, p->prop, p);
		snprintf(p->name, sizeof(p->name), "%s-%u", p->type < 3 ? kinds[p->type] : "plane",
			 p->id);
	}
out:
	drmModeFreeResources(res);
	drmModeFreePlaneResources(pres);
	return r;
}

/* ---- commits ---- */

static int commit(struct kms *k, drmModeAtomicReq *req, uint32_t flags, void *data)
{
	return drmModeAtomicCommit(k->fd, req, flags, data) < 0 ? -errno : 0;
}

/*
 * The route of CRTC @c set to @route (a connector bit each) with @mode_blob
 * and ACTIVE when one of them is lit: a modeset.
 */
static int add_route(struct kms *k, drmModeAtomicReq *req, int c, uint64_t route,
		     uint32_t mode_blob)
{
	struct kcrtc *cr = &k->crtcs[c];
	bool active = false;
	int r = 0;

	for (size_t j = 0; j < k->n_conns; j++) {
		if (k->conns[j].crtc != c)
			continue;
		if ((route >> j & 1) != (cr->route >> j & 1))
			r |= add(req, k->conns[j].id, k->conns[j].prop[K_CRTC_ID],
				 route >> j & 1 ? cr->id : 0);
		active |= (route >> j & 1) && k->conns[j].on;
	}
	r |= add(req, cr->id, cr->prop[C_MODE_ID], route ? mode_blob : 0);
	r |= add(req, cr->id, cr->prop[C_ACTIVE], active && route);
	return r ? -EINVAL : 0;
}

static bool route_active(struct kms *k, int c, uint64_t route)
{
	for (size_t j = 0; j < k->n_conns; j++)
		if (k->conns[j].crtc == c && (route >> j & 1) && k->conns[j].on)
			return true;
	return false;
}

/* The planes of @st into @req: buffer @only's alone (-1: all), the CRTC's other planes off. */
static int add_planes(struct kms *k, const struct kstate *st, drmModeAtomicReq *req, long only,
		      bool with_wb)
{
	struct kcrtc *cr = &k->crtcs[st->crtc];
	uint32_t zorder[FL_DISPLAY_MAX_BUFFERS] = { 0 };
	bool used[KMAX] = { false };
	int r = 0;

	/* The layers' z orders ranked among the post's, from each plane's minimum. */
	for (size_t i = 0; i < st->n; i++)
		for (size_t j = 0; j < st->n; j++)
			if (st->b[j].layer.zpos < st->b[i].layer.zpos)
				zorder[i]++;
	for (size_t i = 0; i < st->n; i++) {
		const struct fl_display_layer *l = &st->b[i].layer;
		const struct kplane *p = &k->planes[st->b[i].plane];
		uint32_t pid = p->id;

		if (only >= 0 && (size_t)only != i)
			continue;
		used[st->b[i].plane] = true;
		r |= add(req, pid, p->prop[P_FB_ID], st->b[i].fb.fb);
		r |= add(req, pid, p->prop[P_CRTC_ID], cr->id);
		r |= add(req, pid, p->prop[P_SRC_X], l->src_x);
		r |= add(req, pid, p->prop[P_SRC_Y], l->src_y);
		r |= add(req, pid, p->prop[P_SRC_W], l->src_w);
		r |= add(req, pid, p->prop[P_SRC_H], l->src_h);
		r |= add(req, pid, p->prop[P_CRTC_X], (uint64_t)(int64_t)l->dst_x);
		r |= add(req, pid, p->prop[P_CRTC_Y], (uint64_t)(int64_t)l->dst_y);
		r |= add(req, pid, p->prop[P_CRTC_W], l->dst_w);
		r |= add(req, pid, p->prop[P_CRTC_H], l->dst_h);
		if (p->prop[P_ZPOS] && p->zpos_mutable)
			r |= add(req, pid, p->prop[P_ZPOS],
				 p->zmin + zorder[i] > p->zmax ? p->zmax : p->zmin + zorder[i]);
		if (p->prop[P_ALPHA])
			r |= add(req, pid, p->prop[P_ALPHA], l->alpha);
		if (p->prop[P_BLEND] && l->blend < 3)
			r |= add(req, pid, p->prop[P_BLEND], p->blend[l->blend]);
	}
	for (size_t i = 0; i < k->n_planes; i++)
		if (!used[i] && (k->planes[i].possible_crtcs >> st->crtc & 1)) {
			r |= add(req, k->planes[i].id, k->planes[i].prop[P_FB_ID], 0);
			r |= add(req, k->planes[i].id, k->planes[i].prop[P_CRTC_ID], 0);
		}
	if (st->wb && with_wb) {
		const struct kconn *c = &k->conns[st->wb_conn];

		r |= add(req, c->id, c->prop[K_WB_FB_ID], st->wbfb.fb);
	}
	return r ? -EINVAL : 0;
}

/* @st's commit into a new request: routing when it changes, then its planes. */
static drmModeAtomicReq *build(struct kms *k, const struct kstate *st, long only, bool with_wb,
			       uint32_t *flags)
{
	drmModeAtomicReq *req = drmModeAtomicAlloc();

	if (!req)
		return NULL;
	if (st->route != k->crtcs[st->crtc].route) {
		*flags |= DRM_MODE_ATOMIC_ALLOW_MODESET;
		if (add_route(k, req, st->crtc, st->route, st->mode_blob) < 0)
			goto fail;
	}
	if (add_planes(k, st, req, only, with_wb) < 0)
		goto fail;
	return req;
fail:
	drmModeAtomicFree(req);
	return NULL;
}

static int test(struct kms *k, const struct kstate *st, long only, bool with_wb)
{
	uint32_t flags = DRM_MODE_ATOMIC_TEST_ONLY;
	drmModeAtomicReq *req = build(k, st, only, with_wb, &flags);
	int r;

	if (!req)
		return -EINVAL;
	r = commit(k, req, flags, NULL);
	drmModeAtomicFree(req);
	return r;
}

/* ---- buffers ---- */

static void fb_free(struct kms *k, struct kfb *f)
{
	/* Only when no commit uses it: RMFB of a scanned-out framebuffer turns its plane off. */
	if (f->fb)
		drmModeRmFB(k->fd, f->fb);
	if (f->map)
		munmap(f->map, f->map_len);
	if (f->dumb)
		drmModeDestroyDumbBuffer(k->fd, f->dumb);
	memset(f, 0, sizeof(*f));
}

/* A memfd sealed against shrinking, as a dma-buf of its @size bytes (udmabuf); -1 otherwise. */
static int udmabuf_of(struct kms *k, int fd, uint64_t size)
{
	struct udmabuf_create c = {
		.memfd = (uint32_t)fd, .flags = UDMABUF_FLAGS_CLOEXEC, .offset = 0, .size = size
	};
	long page = sysconf(_SC_PAGESIZE);
	int seals = fcntl(fd, F_GET_SEALS);

	if (k->udmabuf < 0 || seals < 0 || !(seals & F_SEAL_SHRINK) || !size ||
	    size % (uint64_t)page)
		return -1;
	return ioctl(k->udmabuf, UDMABUF_CREATE, &c);
}

/*
 * A framebuffer of @b: its planes' fds imported with PRIME (dma-bufs, or
 * memfds made dma-bufs by udmabuf), else a dumb buffer of one plane that
 * post() copies into (or, for a writeback destination, out of).
 */
static int fb_make(struct kms *k, const struct fl_display_driver_buffer *b, struct kfb *f,
		   bool *ret_copy, struct fl_display_error *e, const char *what)
{
	uint32_t handles[4] = { 0 }, pitches[4] = { 0 }, offsets[4] = { 0 };
	int udma[4] = { -1, -1, -1, -1 };
	bool prime = true, via_udmabuf = false;
	int r;

	memset(f, 0, sizeof(*f));
	f->src = b;
	for (uint32_t p = 0; p < b->n_planes && p < 4; p++) {
		if (drmPrimeFDToHandle(k->fd, b->fd[p], &handles[p]) == 0)
			continue;
		udma[p] = udmabuf_of(k, b->fd[p], b->size[p]);
		if (udma[p] < 0 || drmPrimeFDToHandle(k->fd, udma[p], &handles[p]) < 0) {
			prime = false;
			break;
		}
		via_udmabuf = true;
	}
	for (uint32_t p = 0; p < 4; p++)
		if (udma[p] >= 0)
			close(udma[p]);
	if (prime) {
		memcpy(pitches, b->pitch, sizeof(pitches));
		memcpy(offsets, b->offset, sizeof(offsets));
		r = drmModeAddFB2(k->fd, b->w, b->h, b->format, handles, pitches, offsets, &f->fb,
				  0) < 0
			    ? -errno
			    : 0;
		/* The framebuffer holds the objects: the handles go (each once). */
		for (uint32_t p = 0; p < b->n_planes && p < 4; p++) {
			bool dup = false;

			for (uint32_t q = 0; q < p; q++)
				dup |= handles[q] == handles[p];
			if (handles[p] && !dup)
				drmCloseBufferHandle(k->fd, handles[p]);
		}
		if (r < 0) {
			snprintf(e->msg, sizeof(e->msg),
				 "%s: the kernel refused a framebuffer of %ux%u %.4s (%s)", what,
				 b->w, b->h, (const char *)&b->format, strerror(-r));
			return r;
		}
		*ret_copy = false;
		if (via_udmabuf)
			k->udmabuf_frames++;
		return 0;
	}
	for (uint32_t p = 0; p < 4; p++)
		if (handles[p])
			drmCloseBufferHandle(k->fd, handles[p]);
	{
		unsigned int planes, cpp[FL_DISPLAY_MAX_PLANES];
		uint32_t size32;
		uint64_t size, off;

		if (k->host->layout(k->host, b->format, &planes, cpp) < 0 || planes != 1) {
			snprintf(
				e->msg, sizeof(e->msg),
				"%s: a %.4s buffer that is no dma-buf (nor a memfd udmabuf takes): "
				"only one-plane formats are copied",
				what, (const char *)&b->format);
			return -EINVAL;
		}
		if (drmModeCreateDumbBuffer(k->fd, b->w, b->h, cpp[0] * 8, 0, &f->dumb, &f->pitch,
					    &size) < 0) {
			r = -errno;
			snprintf(e->msg, sizeof(e->msg), "%s: no dumb buffer of %ux%u (%s)", what,
				 b->w, b->h, strerror(-r));
			return r;
		}
		handles[0] = f->dumb;
		size32 = f->pitch;
		pitches[0] = size32;
		offsets[0] = 0;
		if (drmModeAddFB2(k->fd, b->w, b->h, b->format, handles, pitches, offsets, &f->fb,
				  0) < 0 ||
		    drmModeMapDumbBuffer(k->fd, f->dumb, &off) < 0) {
			r = -errno;
			snprintf(e->msg, sizeof(e->msg),
				 "%s: the kernel refused a framebuffer of %ux%u %.4s (%s)", what,
				 b->w, b->h, (const char *)&b->format, strerror(-r));
			fb_free(k, f);
			return r;
		}
		f->map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd,
			      (off_t)off);
		if (f->map == MAP_FAILED) {
			r = -errno;
			f->map = NULL;
			snprintf(e->msg, sizeof(e->msg), "%s: cannot map a dumb buffer (%s)", what,
				 strerror(-r));
			fb_free(k, f);
			return r;
		}
		f->map_len = (size_t)size;
		*ret_copy = true;
	}
	return 0;
}

/* The rows of a copied buffer: into its dumb buffer, or out of it (@out: writeback). */
/*
 * The rows of a copied buffer: into its dumb buffer, or out of it (@out:
 * writeback). A client's memory is mapped only when it is sealed against
 * shrinking (and big enough): a client that shrinks its memfd under a
 * mapping would kill the service with SIGBUS. Any other is read with
 * pread() (written with pwrite()): a shrunk one gives a short read, the
 * rest of the frame stale.
 */
static void fb_copy(struct kms *k, struct kfb *f, bool out)
{
	const struct fl_display_driver_buffer *b = f->src;
	unsigned int planes, cpp[FL_DISPLAY_MAX_PLANES];
	int seals = out ? -1 : fcntl(b->fd[0], F_GET_SEALS);
	struct stat sb;
	size_t row;
	uint8_t *m = MAP_FAILED;

	if (!f->dumb || k->host->layout(k->host, b->format, &planes, cpp) < 0)
		return;
	row = (size_t)b->w * cpp[0];
	if (seals >= 0 && (seals & F_SEAL_SHRINK) && fstat(b->fd[0], &sb) == 0 &&
	    (uint64_t)sb.st_size >= b->size[0])
		m = mmap(NULL, (size_t)b->size[0], PROT_READ, MAP_SHARED, b->fd[0], 0);
	for (uint32_t y = 0; y < b->h; y++) {
		off_t at = (off_t)b->offset[0] + (off_t)y * b->pitch[0];
		uint8_t *dumb = (uint8_t *)f->map + (size_t)y * f->pitch;

		if (m != MAP_FAILED)
			memcpy(dumb, m + at, row);
		else if ((out ? pwrite(b->fd[0], dumb, row, at) : pread(b->fd[0], dumb, row, at)) <
			 (ssize_t)row)
			break;
	}
	if (m != MAP_FAILED)
		munmap(m, (size_t)b->size[0]);
	k->copied_frames++;
	k->copied_bytes += (uint64_t)row * b->h;
}

/* ---- posts ---- */

static void state_free(void *data, void *state)
{
	struct kms *k = data;
	struct kstate *st = state;

	if (!st)
		return;
	/* In flight still (the device goes): out of the list, its event unanswered. */
	for (struct kstate **pp = &k->in_flight; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	k->in_flight_tail = NULL;
	for (struct kstate *s = k->in_flight; s; s = s->next)
		k->in_flight_tail = s;
	for (size_t c = 0; c < k->n_crtcs; c++)
		if (k->last[c] == st)
			k->last[c] = NULL;
	for (size_t i = 0; i < st->n; i++)
		fb_free(k, &st->b[i].fb);
	fb_free(k, &st->wbfb);
	k->host->source_remove(st->wb_src);
	if (st->wb_fence >= 0)
		close(st->wb_fence);
	k->host->source_remove(st->out_src);
	if (st->out_fence >= 0)
		close(st->out_fence);
	if (st->mode_blob)
		drmModeDestroyPropertyBlob(k->fd, st->mode_blob);
	free(st);
}

/* Which of @st's planes or properties the kernel refuses, in @e (@r: the whole commit's error). */
static void explain(struct kms *k, const struct kstate *st, int r, struct fl_display_error *e)
{
	struct kstate none = *st;

	none.n = 0;
	none.wb = false;
	if (test(k, &none, -1, false) < 0) {
		snprintf(e->msg, sizeof(e->msg),
			 "the kernel refused CRTC %u's mode or routing (MODE_ID, ACTIVE, CRTC_ID) "
			 "(%s)",
			 k->crtcs[st->crtc].id, strerror(-r));
		return;
	}
	for (size_t i = 0; i < st->n; i++)
		if (test(k, st, (long)i, false) < 0) {
			const struct fl_display_layer *l = &st->b[i].layer;

			snprintf(e->msg, sizeof(e->msg),
				 "buffer %zu: the kernel refused plane %s (engine %d): FB_ID %ux%u "
				 "%.4s, SRC %u,%u %ux%u, CRTC %d,%d %ux%u (%s)",
				 i, k->planes[st->b[i].plane].name, st->b[i].plane, st->b[i].buf.w,
				 st->b[i].buf.h, (const char *)&st->b[i].buf.format, l->src_x >> 16,
				 l->src_y >> 16, l->src_w >> 16, l->src_h >> 16, l->dst_x, l->dst_y,
				 l->dst_w, l->dst_h, strerror(-r));
			return;
		}
	if (st->wb && test(k, st, -1, false) == 0) {
		snprintf(e->msg, sizeof(e->msg),
			 "the kernel refused the writeback destination (WRITEBACK_FB_ID %ux%u "
			 "%.4s on connector %u) (%s)",
			 st->wbbuf.w, st->wbbuf.h, (const char *)&st->wbbuf.format,
			 k->conns[st->wb_conn].id, strerror(-r));
		return;
	}
	snprintf(e->msg, sizeof(e->msg),
		 "the kernel refused these %zu planes together (each alone passes) (%s)", st->n,
		 strerror(-r));
}

static int validate(void *data, const struct fl_display_driver_post *post, void **ret_state,
		    struct fl_display_error *e)
{
	struct kms *k = data;
	struct kstate *st = calloc(1, sizeof(*st));
	struct fl_display_mode mode;
	drmModeModeInfo dm;
	bool connected, copy;
	uint32_t first = UINT32_MAX;
	int r;

	if (!k->intfs) {
		free(st);
		snprintf(e->msg, sizeof(e->msg),
			 "a kms device takes its objects from the card: its config lists none");
		return -EINVAL;
	}
	if (!st)
		return -ENOMEM;
	st->k = k;
	st->crtc = -1;
	st->wb_fence = -1;
	st->out_fence = -1;
	st->wb_conn = -1;
	for (size_t i = 0; i < post->n_intfs; i++) {
		uint32_t j = post->intfs[i];

		if (j >= k->n_conns || k->conns[j].crtc < 0) {
			snprintf(e->msg, sizeof(e->msg), "interface %u has no CRTC", j);
			r = -EINVAL;
			goto fail;
		}
		if (st->crtc >= 0 && st->crtc != k->conns[j].crtc) {
			snprintf(e->msg, sizeof(e->msg),
				 "interfaces %u and %u are on different CRTCs: one post per CRTC",
				 first, j);
			r = -EINVAL;
			goto fail;
		}
		if (first == UINT32_MAX || (k->conns[first].writeback && !k->conns[j].writeback))
			first = j;
		st->crtc = k->conns[j].crtc;
		st->route |= 1ull << j;
		if (k->conns[j].writeback)
			st->wb_conn = (int)j;
	}
	if (st->crtc < 0) {
		snprintf(e->msg, sizeof(e->msg), "a post names at least one interface");
		r = -EINVAL;
		goto fail;
	}
	/* The mode the CRTC gets if this post routes it anew. */
	if (k->host->intf_state(k->host, first, &mode, &connected) < 0 || !mode.clock) {
		snprintf(e->msg, sizeof(e->msg), "interface %u has no mode", first);
		r = -EINVAL;
		goto fail;
	}
	mode_to_drm(&mode, &dm);
	if (drmModeCreatePropertyBlob(k->fd, &dm, sizeof(dm), &st->mode_blob) < 0) {
		r = -errno;
		snprintf(e->msg, sizeof(e->msg), "no mode blob (%s)", strerror(-r));
		goto fail;
	}
	for (size_t i = 0; i < post->n_bufs; i++) {
		const struct fl_display_driver_buffer *b = &post->bufs[i];
		char what[32];

		if (b->engine >= k->n_planes ||
		    !(k->planes[b->engine].possible_crtcs >> st->crtc & 1)) {
			snprintf(e->msg, sizeof(e->msg),
				 "buffer %zu: engine %u cannot scan out to CRTC %u", i, b->engine,
				 k->crtcs[st->crtc].id);
			r = -EINVAL;
			goto fail;
		}
		for (size_t j = 0; j < i; j++)
			if (post->bufs[j].engine == b->engine) {
				snprintf(e->msg, sizeof(e->msg),
					 "buffers %zu and %zu are on one engine (plane %s)", j, i,
					 k->planes[b->engine].name);
				r = -EINVAL;
				goto fail;
			}
		st->b[i].plane = (int)b->engine;
		st->b[i].buf = *b;
		if (post->layers && (post->layers[i].flags & FL_DISPLAY_LAYER_ENABLED)) {
			st->b[i].layer = post->layers[i];
			if (post->layers[i].transform) {
				snprintf(e->msg, sizeof(e->msg),
					 "buffer %zu: plane %s: transforms are not supported", i,
					 k->planes[b->engine].name);
				r = -EINVAL;
				goto fail;
			}
		} else {
			/* No layer: at the top-left corner at its own size, under those with one. */
			st->b[i].layer = (struct fl_display_layer){
				.flags = FL_DISPLAY_LAYER_ENABLED,
				.src_w = b->w << 16,
				.src_h = b->h << 16,
				.dst_w = b->w,
				.dst_h = b->h,
				.zpos = (uint32_t)i,
				.blend = FL_DISPLAY_BLEND_PREMULTIPLIED,
				.alpha = 0xffff,
			};
		}
		st->n = i + 1;
		snprintf(what, sizeof(what), "buffer %zu", i);
		r = fb_make(k, &st->b[i].buf, &st->b[i].fb, &copy, e, what);
		if (r < 0)
			goto fail;
		st->b[i].fb.src = &st->b[i].buf;
		if (!copy)
			st->b[i].fb.src = NULL;
	}
	if (post->writeback) {
		if (st->wb_conn < 0) {
			snprintf(e->msg, sizeof(e->msg),
				 "a writeback destination needs a "
				 "writeback interface");
			r = -EINVAL;
			goto fail;
		}
		st->wb = true;
		st->wbbuf = *post->writeback;
		r = fb_make(k, &st->wbbuf, &st->wbfb, &copy, e, "the writeback destination");
		if (r < 0)
			goto fail;
		st->wbfb.src = copy ? &st->wbbuf : NULL;
	} else if (st->wb_conn >= 0) {
		snprintf(e->msg, sizeof(e->msg),
			 "a post to writeback interface %d needs a writeback destination",
			 st->wb_conn);
		r = -EINVAL;
		goto fail;
	}
	r = test(k, st, -1, true);
	if (r < 0) {
		explain(k, st, r, e);
		goto fail;
	}
	*ret_state = st;
	return 0;
fail:
	state_free(k, st);
	return r;
}

/*
 * How long a flip may stay in flight before it is taken as done: a lost
 * page-flip event or a writeback fence that never signals (seen on VKMS
 * under a starved TCG) must not hold the queue, and the service, forever.
 * Weston's pageflip-timeout, for the same reason.
 */
#define KMS_FLIP_TIMEOUT_NS 2000000000ull

static void watchdog_arm(struct kms *k)
{
	k->host->timer_arm(k->watchdog,
			   k->in_flight ? k->in_flight->posted_ns + KMS_FLIP_TIMEOUT_NS : 0);
}

/* The oldest post in flight is done if its flip and its writeback are: the service is told. */
static void complete(struct kms *k)
{
	struct kstate *st = k->in_flight;

	if (!st || st->event_pending || st->wb_pending || st->out_pending) {
		watchdog_arm(k);
		return;
	}
	k->in_flight = st->next;
	if (!k->in_flight)
		k->in_flight_tail = NULL;
	st->next = NULL;
	if (st->wb && st->wbfb.src)
		fb_copy(k, &st->wbfb, true);
	k->host->flipped(k->host, st->ts);
	complete(k);
}

static void done_fire(void *data)
{
	complete(data);
}

static void watchdog_fire(void *data)
{
	struct kms *k = data;
	struct kstate *st = k->in_flight;

	if (!st)
		return;
	logf_("%s: a flip was not done %llu ms after its commit (%s): taken as done", k->path,
	      KMS_FLIP_TIMEOUT_NS / 1000000ull,
	      st->event_pending ? "no page-flip event" : "the writeback fence did not signal");
	k->host->source_remove(st->wb_src);
	k->host->source_remove(st->out_src);
	st->wb_src = st->out_src = NULL;
	st->event_pending = st->wb_pending = st->out_pending = false;
	st->ts = k->host->now(k->host);
	complete(k);
}

/* Whether kernel sync_file @fd is done, and when it signalled (0: unknown). */
static bool fence_done(int fd, uint64_t *ret_ts)
{
	struct sync_fence_info info;
	struct sync_file_info fi = { .num_fences = 1, .sync_fence_info = (uintptr_t)&info };

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &fi) < 0)
		return true; /* no sync_file: nothing to wait for */
	*ret_ts = fi.status ? info.timestamp_ns : 0;
	return fi.status != 0;
}

/*
 * Kernel sync_file @fd of @st, watched by *@src, is done: the source goes,
 * *@pending is cleared and *@ret_ts is its signal time (0: unknown).
 * False while it is pending.
 */
static bool fence_step(struct kstate *st, int fd, struct fl_display_source **src, bool *pending,
		       uint64_t *ret_ts)
{
	if (!fence_done(fd, ret_ts))
		return false;
	st->k->host->source_remove(*src);
	*src = NULL;
	*pending = false;
	return true;
}

/*
 * The commit's out fence signalled: the kernel signals it at the vblank
 * that showed the commit, with that vblank's time, which is the post's
 * present time (the page-flip event's, from a sync_file).
 */
static void out_done(int fd, uint32_t events, void *data)
{
	struct kstate *st = data;
	uint64_t ts = 0;

	(void)events;
	if (!fence_step(st, fd, &st->out_src, &st->out_pending, &ts))
		return;
	if (ts) {
		st->ts = ts;
		st->k->out_fence_flips++;
	}
	complete(st->k);
}

/* The frame is in memory when the writeback fence signalled: its time is the kernel's. */
static void wb_done(int fd, uint32_t events, void *data)
{
	struct kstate *st = data;
	uint64_t ts = 0;

	(void)events;
	if (!fence_step(st, fd, &st->wb_src, &st->wb_pending, &ts))
		return;
	if (ts && !st->ts)
		st->ts = ts;
	complete(st->k);
}

static void arm_vblank(struct kms *k, int c);

static void post(void *data, void *state)
{
	struct kms *k = data;
	struct kstate *st = state;
	struct kcrtc *cr = &k->crtcs[st->crtc];
	uint32_t flags = DRM_MODE_ATOMIC_NONBLOCK;
	bool active = route_active(k, st->crtc, st->route), in_fences = false;
	drmModeAtomicReq *req;
	int r;

	for (size_t i = 0; i < st->n; i++) {
		if (st->b[i].fb.src)
			fb_copy(k, &st->b[i].fb, false);
		else
			k->zero_copy_frames++;
	}
	/* No event comes from a CRTC that is off: the flip is done when the commit is. */
	if (active)
		flags |= DRM_MODE_PAGE_FLIP_EVENT;
	req = build(k, st, -1, true, &flags);
	/*
	 * The acquire fences the service did not wait for: the kernel holds the
	 * flip until they signal (TEST_ONLY commits carry none: the kernel
	 * checks nothing of them but that they are sync_files).
	 */
	for (size_t i = 0; req && i < st->n; i++) {
		const struct kplane *pl = &k->planes[st->b[i].plane];

		if (st->b[i].buf.in_fence >= 0 && pl->prop[P_IN_FENCE_FD]) {
			add(req, pl->id, pl->prop[P_IN_FENCE_FD], (uint64_t)st->b[i].buf.in_fence);
			in_fences = true;
		}
	}
	if (req && st->wb)
		add(req, k->conns[st->wb_conn].id, k->conns[st->wb_conn].prop[K_WB_OUT_FENCE_PTR],
		    (uintptr_t)&st->wb_fence);
	if (req && active && cr->prop[C_OUT_FENCE_PTR])
		add(req, cr->id, cr->prop[C_OUT_FENCE_PTR], (uintptr_t)&st->out_fence);
	r = req ? commit(k, req, flags, st) : -ENOMEM;
	/* One in flight already (a flush): this commit waits for it in the kernel. */
	if (r == -EBUSY)
		r = commit(k, req, flags & ~(uint32_t)DRM_MODE_ATOMIC_NONBLOCK, st);
	drmModeAtomicFree(req);
	st->posted = true;
	if (r < 0) {
		logf_("a commit validated earlier failed (%s): the post is not shown",
		      strerror(-r));
	} else {
		k->in_fence_commits += in_fences;
		cr->route = st->route;
		cr->active = active;
		k->last[st->crtc] = st;
		st->event_pending = active;
		if (st->wb && st->wb_fence >= 0) {
			st->wb_src = k->host->fd_add(k->host, st->wb_fence, EPOLLIN, wb_done, st);
			st->wb_pending = st->wb_src != NULL;
		}
		if (st->out_fence >= 0) {
			st->out_src =
				k->host->fd_add(k->host, st->out_fence, EPOLLIN, out_done, st);
			st->out_pending = st->out_src != NULL;
		}
		if (active)
			arm_vblank(k, st->crtc);
	}
	st->next = NULL;
	st->posted_ns = k->host->now(k->host);
	if (k->in_flight_tail)
		k->in_flight_tail->next = st;
	else
		k->in_flight = st;
	k->in_flight_tail = st;
	watchdog_arm(k);
	if (!st->event_pending && !st->wb_pending) {
		st->ts = k->host->now(k->host);
		k->host->timer_arm(k->done_timer, k->host->now(k->host));
	}
}

/* ---- events ---- */

static void arm_vblank(struct kms *k, int c)
{
	struct kcrtc *cr = &k->crtcs[c];
	uint64_t seq;

	if (cr->seq_armed || !cr->active)
		return;
	if (drmCrtcQueueSequence(k->fd, cr->id, DRM_CRTC_SEQUENCE_RELATIVE, 1, &seq,
				 (uint64_t)c + 1) == 0)
		cr->seq_armed = true;
}

static struct kms *event_kms; /* the device whose events drmHandleEvent() is reading */

static void on_sequence_k(int fd, uint64_t sequence, uint64_t ns, uint64_t user_data)
{
	struct kms *k = event_kms;
	int c = (int)user_data - 1;

	(void)fd;
	(void)sequence;
	if (c < 0 || (size_t)c >= k->n_crtcs)
		return;
	k->crtcs[c].seq_armed = false;
	arm_vblank(k, c);
	for (size_t j = 0; j < k->n_conns; j++)
		if (k->crtcs[c].route >> j & 1 && k->conns[j].on)
			k->host->vsync(k->host, (uint32_t)j, ns);
}

static void on_flip(int fd, unsigned int seq, unsigned int sec, unsigned int usec,
		    unsigned int crtc_id, void *user_data)
{
	struct kstate *st = user_data;
	struct kms *k = event_kms;

	(void)fd;
	(void)seq;
	(void)crtc_id;
	for (struct kstate *s = k->in_flight; s; s = s->next)
		if (s == st) {
			/* The out fence's time, when there is one, has the nanoseconds. */
			if (!st->out_pending && !st->ts)
				st->ts = (uint64_t)sec * 1000000000u + (uint64_t)usec * 1000u;
			st->event_pending = false;
			complete(k);
			return;
		}
}

static void drm_readable(int fd, uint32_t events, void *data)
{
	drmEventContext ev = { .version = 4,
			       .page_flip_handler2 = on_flip,
			       .sequence_handler = on_sequence_k };

	(void)events;
	event_kms = data;
	drmHandleEvent(fd, &ev);
	event_kms = NULL;
}

/* ---- the model's ops ---- */

/* A kms device's objects are the card's (objects()): a config that lists its own is refused. */
static int described(struct kms *k)
{
	if (k->intfs)
		return 0;
	logf_("%s: a kms device takes its interfaces and engines from the card: its config "
	      "lists none",
	      k->path);
	return -EINVAL;
}

static int blank(void *data, uint32_t intf, enum fl_display_dpms state)
{
	struct kms *k = data;
	struct kconn *c;
	struct kcrtc *cr;
	drmModeAtomicReq *req;
	struct fl_display_mode mode;
	drmModeModeInfo dm;
	uint32_t blob = 0;
	bool connected, was = false;
	int r;

	if (described(k) < 0)
		return -EINVAL;
	if (intf >= k->n_conns || k->conns[intf].crtc < 0)
		return -ENODEV;
	c = &k->conns[intf];
	cr = &k->crtcs[c->crtc];
	was = c->on;
	c->on = state == FL_DISPLAY_DPMS_ON;
	if (!c->on && !(cr->route >> intf & 1))
		return 0;
	req = drmModeAtomicAlloc();
	if (!req) {
		c->on = was;
		return -ENOMEM;
	}
	if (c->on) {
		/* Lit: this connector is the CRTC's output, in its current mode. */
		r = k->host->intf_state(k->host, intf, &mode, &connected);
		if (r == 0 && !mode.clock)
			r = -EINVAL;
		if (r == 0) {
			mode_to_drm(&mode, &dm);
			r = drmModeCreatePropertyBlob(k->fd, &dm, sizeof(dm), &blob) < 0 ? -errno
											 : 0;
		}
		if (r == 0)
			r = add_route(k, req, c->crtc, 1ull << intf, blob);
	} else {
		r = add(req, cr->id, cr->prop[C_ACTIVE], 0);
	}
	/* Blocking: the kernel waits for a flip in flight (a frame at most). */
	if (r == 0)
		r = commit(k, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL);
	drmModeAtomicFree(req);
	if (blob)
		drmModeDestroyPropertyBlob(k->fd, blob);
	if (r < 0) {
		c->on = was;
		return r;
	}
	if (c->on)
		cr->route = 1ull << intf;
	cr->active = route_active(k, c->crtc, cr->route);
	arm_vblank(k, c->crtc);
	return 0;
}

static int modeset(void *data, uint32_t intf, const struct fl_display_mode *mode)
{
	struct kms *k = data;
	struct kcrtc *cr;
	drmModeAtomicReq *req;
	drmModeModeInfo dm;
	uint32_t blob;
	int r;

	if (intf >= k->n_conns || k->conns[intf].crtc < 0)
		return -ENODEV;
	cr = &k->crtcs[k->conns[intf].crtc];
	/* Not its CRTC's output now: the mode is taken when it is lit or posted to. */
	if (!(cr->route >> intf & 1) || !cr->active)
		return 0;
	mode_to_drm(mode, &dm);
	if (drmModeCreatePropertyBlob(k->fd, &dm, sizeof(dm), &blob) < 0)
		return -errno;
	req = drmModeAtomicAlloc();
	r = req ? add(req, cr->id, cr->prop[C_MODE_ID], blob) : -ENOMEM;
	if (r == 0)
		r = commit(k, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL);
	drmModeAtomicFree(req);
	drmModeDestroyPropertyBlob(k->fd, blob);
	return r;
}

static int alloc_simple_buffer(void *data, uint32_t intf, uint32_t w, uint32_t h, uint32_t format,
			       int *ret_fd, uint32_t *ret_offset, uint32_t *ret_pitch)
{
	struct kms *k = data;
	unsigned int planes, cpp[FL_DISPLAY_MAX_PLANES];
	uint32_t handle, pitch;
	uint64_t size;
	int fd, r;

	(void)intf;
	if (k->host->layout(k->host, format, &planes, cpp) < 0 || planes != 1)
		return -EINVAL;
	/* A dumb buffer as a dma-buf: posted back, it is imported, never copied. */
	if (drmModeCreateDumbBuffer(k->fd, w, h, cpp[0] * 8, 0, &handle, &pitch, &size) < 0)
		return -errno;
	r = drmPrimeHandleToFD(k->fd, handle, DRM_CLOEXEC | DRM_RDWR, &fd) < 0 ? -errno : 0;
	drmModeDestroyDumbBuffer(k->fd, handle);
	if (r < 0)
		return r;
	*ret_fd = fd;
	*ret_offset = 0;
	*ret_pitch = pitch;
	return 0;
}

/*
 * The frame of interface @intf through its CRTC's writeback connector: the
 * planes of the newest post again, the writeback connector the CRTC's only
 * output for one frame (the clone check of VKMS and most hardware refuses
 * a writeback beside another output), then the interface again. Both are
 * blocking modesets: the screen is dark for the few frames the capture
 * takes; a test's and a debugger's tool, not a screen recorder.
 */
static int capture(void *data, uint32_t intf, const struct fl_display_driver_buffer *dst)
{
	struct kms *k = data;
	struct fl_display_error e = { 0 };
	struct fl_display_mode mode;
	drmModeModeInfo dm;
	drmModeAtomicReq *req;
	struct kstate *cap;
	struct kcrtc *cr;
	uint64_t route;
	uint32_t flags;
	bool connected, copy, was;
	int c, w = -1, r;

	if (described(k) < 0)
		return -EINVAL;
	if (intf >= k->n_conns || (c = k->conns[intf].crtc) < 0)
		return -ENODEV;
	cr = &k->crtcs[c];
	for (size_t j = 0; j < k->n_conns; j++)
		if (k->conns[j].writeback && k->conns[j].crtc == c)
			w = (int)j;
	if (w < 0 || k->conns[intf].writeback)
		return -EOPNOTSUPP;
	/* Not what its CRTC shows now (dark, or another connector's): nothing to capture. */
	if (!(cr->route >> intf & 1) || !cr->active)
		return -ENODATA;
	route = cr->route;
	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return -ENOMEM;
	if (k->last[c])
		*cap = *k->last[c]; /* its framebuffers borrowed, never freed here */
	cap->k = k;
	cap->crtc = c;
	cap->next = NULL;
	cap->wb = true;
	cap->wb_conn = w;
	cap->wb_fence = -1;
	cap->wb_src = NULL;
	cap->mode_blob = 0;
	memset(&cap->wbfb, 0, sizeof(cap->wbfb));
	cap->wbbuf = *dst;
	r = k->host->intf_state(k->host, intf, &mode, &connected);
	if (r == 0) {
		mode_to_drm(&mode, &dm);
		r = drmModeCreatePropertyBlob(k->fd, &dm, sizeof(dm), &cap->mode_blob) < 0 ? -errno
											   : 0;
	}
	if (r == 0)
		r = fb_make(k, &cap->wbbuf, &cap->wbfb, &copy, &e, "the capture");
	if (r < 0)
		goto out;
	cap->wbfb.src = copy ? &cap->wbbuf : NULL;
	was = k->conns[w].on;
	k->conns[w].on = true;
	cap->route = 1ull << w;
	flags = 0;
	req = build(k, cap, -1, true, &flags);
	r = req ? add(req, k->conns[w].id, k->conns[w].prop[K_WB_OUT_FENCE_PTR],
		      (uintptr_t)&cap->wb_fence)
		: -ENOMEM;
	if (r == 0)
		r = commit(k, req, flags, NULL);
	drmModeAtomicFree(req);
	k->conns[w].on = was;
	if (r < 0) {
		logf_("a capture through writeback connector %u failed: %s", k->conns[w].id,
		      strerror(-r));
		goto out;
	}
	cr->route = cap->route;
	{
		struct pollfd pfd = { cap->wb_fence, POLLIN, 0 };

		/* The writeback of one frame: a vblank or two; bounded all the same. */
		r = poll(&pfd, 1, 1000) == 1 ? 0 : -ETIME;
	}
	if (r == 0 && cap->wbfb.src)
		fb_copy(k, &cap->wbfb, true);
	/* The interface again, with the same planes. */
	cap->wb = false;
	cap->route = route;
	flags = 0;
	req = build(k, cap, -1, false, &flags);
	if (!req || commit(k, req, flags, NULL) < 0)
		logf_("the output could not be given back after a capture: %s", strerror(errno));
	else
		cr->route = route;
	drmModeAtomicFree(req);
out:
	fb_free(k, &cap->wbfb);
	if (cap->wb_fence >= 0)
		close(cap->wb_fence);
	if (cap->mode_blob)
		drmModeDestroyPropertyBlob(k->fd, cap->mode_blob);
	free(cap);
	return r;
}

static int objects(void *data, struct fl_display_driver_objects *ret)
{
	struct kms *k = data;

	free(k->intfs);
	free(k->engines);
	k->intfs = calloc(k->n_conns ? k->n_conns : 1, sizeof(*k->intfs));
	k->engines = calloc(k->n_planes ? k->n_planes : 1, sizeof(*k->engines));
	if (!k->intfs || !k->engines)
		return -ENOMEM;
	for (size_t i = 0; i < k->n_conns; i++) {
		int r = conn_describe(k, i, &k->intfs[i]);

		if (r < 0)
			return r;
	}
	/*
	 * ADF's primary interface (the one a simple post configuration, a
	 * recovery console, looks for): the first built-in connector, else the
	 * first that is not writeback.
	 */
	for (int pass = 0; pass < 2; pass++) {
		size_t i = 0;

		while (i < k->n_conns &&
		       (k->conns[i].writeback ||
			(!pass && (k->intfs[i].flags & FL_DISPLAY_INTF_EXTERNAL))))
			i++;
		if (i < k->n_conns) {
			k->intfs[i].flags |= FL_DISPLAY_INTF_PRIMARY;
			break;
		}
	}
	for (size_t i = 0; i < k->n_planes; i++) {
		struct fl_display_driver_engine *de = &k->engines[i];
		drmModePlane *mp = drmModeGetPlane(k->fd, k->planes[i].id);
		unsigned int planes, cpp[FL_DISPLAY_MAX_PLANES];

		snprintf(de->name, sizeof(de->name), "%s", k->planes[i].name);
		/* The formats the service knows (the standard ones), in the plane's order. */
		for (uint32_t f = 0; mp && f < mp->count_formats; f++) {
			bool dup = false;

			for (size_t g = 0; g < de->n_formats; g++)
				dup |= de->formats[g] == mp->formats[f];
			if (!dup && de->n_formats < FL_DISPLAY_DRIVER_MAX_FORMATS &&
			    k->host->layout(k->host, mp->formats[f], &planes, cpp) == 0)
				de->formats[de->n_formats++] = mp->formats[f];
		}
		drmModeFreePlane(mp);
		for (size_t j = 0; j < k->n_conns; j++)
			if (k->conns[j].crtc >= 0 &&
			    (k->planes[i].possible_crtcs >> k->conns[j].crtc & 1))
				de->intfs[de->n_intfs++] = (uint32_t)j;
	}
	*ret = (struct fl_display_driver_objects){ k->intfs, k->n_conns, k->engines, k->n_planes };
	return 0;
}

static size_t stats(void *data, struct fl_display_driver_stat *ret, size_t cap)
{
	struct kms *k = data;
	const struct fl_display_driver_stat all[] = {
		{ "zero_copy_frames", k->zero_copy_frames },
		{ "udmabuf_imports", k->udmabuf_frames },
		{ "copied_frames", k->copied_frames },
		{ "copied_bytes", k->copied_bytes },
		{ "out_fence_flips", k->out_fence_flips },
		{ "in_fence_commits", k->in_fence_commits },
	};
	size_t n = sizeof(all) / sizeof(all[0]);

	n = n < cap ? n : cap;
	memcpy(ret, all, n * sizeof(all[0]));
	return n;
}

/* ---- hotplug ---- */

/*
 * A change uevent of our card (the kernel's HOTPLUG=1 after a probe, or a
 * synthetic one: `echo change > /sys/class/drm/card0/uevent`, udevadm
 * trigger): the connectors are read again (a probe), each change reported.
 */
static void uevent_readable(int fd, uint32_t events, void *data)
{
	struct kms *k = data;
	char buf[4096], dev[80];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	bool drm = false, change = false, ours = false;
	const char *base = strrchr(k->path, '/');

	(void)events;
	if (n <= 0)
		return;
	buf[n] = 0;
	snprintf(dev, sizeof(dev), "DEVNAME=dri/%s", base ? base + 1 : k->path);
	for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
		drm |= !strcmp(p, "SUBSYSTEM=drm");
		change |= !strcmp(p, "ACTION=change");
		ours |= !strcmp(p, dev);
	}
	if (!drm || !change || !ours || !k->intfs)
		return;
	for (size_t i = 0; i < k->n_conns; i++) {
		struct fl_display_driver_interface di;

		if (conn_describe(k, i, &di) < 0)
			continue;
		if (di.connected == k->intfs[i].connected && di.n_modes == k->intfs[i].n_modes &&
		    !memcmp(di.modes, k->intfs[i].modes, di.n_modes * sizeof(di.modes[0])))
			continue;
		k->intfs[i] = di;
		k->host->hotplug(k->host, (uint32_t)i, di.connected, di.modes, di.n_modes);
	}
}

static void uevent_open(struct kms *k)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };

	k->uevent = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
			   NETLINK_KOBJECT_UEVENT);
	if (k->uevent < 0)
		return;
	/* No hotplug where the kernel's uevents cannot be heard (a container): a note, no failure. */
	if (bind(k->uevent, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(k->uevent);
		k->uevent = -1;
	}
}

/* ---- create, destroy ---- */

static void destroy(void *data)
{
	struct kms *k = data;

	while (k->in_flight)
		state_free(k, k->in_flight);
	k->host->source_remove(k->drm_src);
	k->host->source_remove(k->uevent_src);
	k->host->source_remove(k->done_timer);
	k->host->source_remove(k->watchdog);
	if (k->uevent >= 0)
		close(k->uevent);
	if (k->udmabuf >= 0)
		close(k->udmabuf);
	if (k->fd >= 0)
		close(k->fd);
	free(k->intfs);
	free(k->engines);
	free(k);
}

/* Everything of ours off, as the model starts (every interface DPMS OFF, no plane). */
static void all_off(struct kms *k)
{
	drmModeAtomicReq *req = drmModeAtomicAlloc();

	if (!req)
		return;
	for (size_t i = 0; i < k->n_planes; i++) {
		add(req, k->planes[i].id, k->planes[i].prop[P_FB_ID], 0);
		add(req, k->planes[i].id, k->planes[i].prop[P_CRTC_ID], 0);
	}
	for (size_t i = 0; i < k->n_conns; i++)
		add(req, k->conns[i].id, k->conns[i].prop[K_CRTC_ID], 0);
	for (size_t i = 0; i < k->n_crtcs; i++) {
		add(req, k->crtcs[i].id, k->crtcs[i].prop[C_ACTIVE], 0);
		add(req, k->crtcs[i].id, k->crtcs[i].prop[C_MODE_ID], 0);
	}
	if (commit(k, req, DRM_MODE_ATOMIC_ALLOW_MODESET, NULL) < 0)
		logf_("%s: cannot turn the outputs off at start (%s)", k->path, strerror(errno));
	drmModeAtomicFree(req);
}

static int create(const struct fl_display_host *host, void **ret_data)
{
	struct kms *k = calloc(1, sizeof(*k));
	const char *card = host->option(host, "card");
	int r;

	if (!k)
		return -ENOMEM;
	k->host = host;
	k->fd = k->udmabuf = k->uevent = -1;
	r = card_open(k, card);
	if (r < 0)
		goto fail;
	/* Commits need the master: another (a compositor, another service) has it. */
	if (!drmIsMaster(k->fd) && drmSetMaster(k->fd) < 0) {
		logf_("%s: another program is its DRM master (a compositor, another "
		      "fl-displayd)",
		      k->path);
		r = -EBUSY;
		goto fail;
	}
	drmSetClientCap(k->fd, DRM_CLIENT_CAP_WRITEBACK_CONNECTORS, 1);
	r = card_scan(k);
	if (r < 0)
		goto fail;
	k->udmabuf = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	all_off(k);
	k->done_timer = host->timer_add(host, done_fire, k);
	k->watchdog = host->timer_add(host, watchdog_fire, k);
	if (!k->done_timer || !k->watchdog) {
		r = -ENOMEM;
		goto fail;
	}
	*ret_data = k;
	return 0;
fail:
	destroy(k);
	return r;
}

/*
 * The fds go on the loop at the first op after create (create may not add
 * them): objects(), which the service calls right after create for a
 * device without config objects, or the first blank.
 */
static int kms_objects(void *data, struct fl_display_driver_objects *ret)
{
	struct kms *k = data;

	if (!k->drm_src) {
		k->drm_src = k->host->fd_add(k->host, k->fd, EPOLLIN, drm_readable, k);
		if (!k->drm_src)
			return -errno;
		uevent_open(k);
		if (k->uevent >= 0)
			k->uevent_src =
				k->host->fd_add(k->host, k->uevent, EPOLLIN, uevent_readable, k);
	}
	return objects(data, ret);
}

const struct fl_display_driver_ops fl__display_kms_ops = {
	.name = "kms",
	.caps = FL_DISPLAY_CAP_VSYNC | FL_DISPLAY_CAP_HOTPLUG | FL_DISPLAY_CAP_SIMPLE_BUFFERS |
		FL_DISPLAY_CAP_ASYNC_FLIP | FL_DISPLAY_CAP_IN_FENCES,
	.create = create,
	.destroy = destroy,
	.probe = probe,
	.objects = kms_objects,
	.stats = stats,
	.blank = blank,
	.modeset = modeset,
	.validate = validate,
	.post = post,
	.state_free = state_free,
	.alloc_simple_buffer = alloc_simple_buffer,
	.capture = capture,
};

/* SPDX-License-Identifier: MIT */
/*
 * The display service's parts and what they share (docs/display.md, "The
 * service"). One thread runs them all, so nothing here takes a lock:
 *   service.c  - devices from the config, connections, the loop, set-up;
 *   requests.c - the requests other than posts, handles and their events;
 *   post.c     - posts: decoded, sized, checked, queued;
 *   queue.c    - the queue per device: acquire fences, the flip, the
 *                present and release fences, events sent to handles;
 *   host.c     - the host ops a driver calls (timers, fds, vsync, hotplug,
 *                composition);
 *   source.c   - live sources set on engines, checked for the driver.
 */
#ifndef FL_DISPLAYD_PRIVATE_H
#define FL_DISPLAYD_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fenceline/driver/display.h>

#include "conn.h"
#include "display-config.h"
#include "display-model.h"
#include "displayd.h"
#include "loop.h"
#include "service.h"

/* Handles one connection may hold open. */
#define MAX_HANDLES 256
/* Messages read from one client per readable event: the others get their turn. */
#define BATCH 16
/*
 * Posts one client may have waiting to flip, on all devices: ADF had no
 * bound, so a client posting faster than the display (or with fences that
 * never signal) grew the queue, and the fds it holds, without end.
 */
#define MAX_QUEUED 16

struct dpost;

struct ddev {
	struct fl__display_device *dev;
	const struct fl_display_driver_ops *drv;
	void *drv_data;
	struct fl_display_host host;
	const struct fl__display_config_device *cd;
	/* A device its driver's objects() described (NULL: the config's): what cd points at. */
	struct fl__display_config_device *own_cd;
	uint32_t options_asked; /* bit i: the driver asked for cd->options[i] */
	/* The fence timelines (fenceline fds, fencelined's), made at the first post; -1 before. */
	int tl_present, tl_release;
	uint64_t present_at, release_at; /* the values they reached */
	uint64_t seq; /* the last post's number */
	struct dpost *head, *tail; /* the queue */
	struct dpost *on_screen;
	/* FL_DISPLAY_CAP_ASYNC_FLIP: posted, not yet flipped(), oldest first (one, but a flush's). */
	struct dpost *in_flight, *in_flight_tail;
	struct fl_loop_source *kick; /* an idle source: flip what needs no vsync */
	struct fl_display_stats st;
	uint64_t last_vsync[FL_DISPLAY_CONFIG_MAX_OBJECTS]; /* per interface, for the dump */
	/* Per engine, the connection whose live source it shows (NULL: none). */
	struct dconn *source_owner[FL_DISPLAY_CONFIG_MAX_OBJECTS];
};

struct dconn;

struct dpost {
	struct ddev *d;
	struct dconn *owner; /* NULL once its client is gone */
	struct dpost *next;
	uint64_t seq;
	void *state;
	unsigned int pending; /* acquire fences not yet signalled */
	uint64_t acq_signal_ns; /* the latest signal time of its acquire fences seen so far */
	bool failed; /* one failed or timed out: never shown */
	struct fl_loop_source *timeout;
	uint32_t *intfs;
	size_t n_intfs;
	size_t n_acquire;
	int acquire[FL_DISPLAY_MAX_BUFFERS];
	/* The writeback destination (its fd ours; -1 without), lent to the driver's state. */
	struct fl_display_driver_buffer wb;
	size_t acq_buf[FL_DISPLAY_MAX_BUFFERS]; /* the buffer each acquire fence is for */
	bool acq_kernel
		[FL_DISPLAY_MAX_BUFFERS]; /* each a kernel sync_file, not a fenceline fence */
	uint64_t queued_ns; /* for the dump's age */
	unsigned int nfds; /* the fds it brought, counted in its owner's fds_held */
	uint64_t ready_ns; /* its last acquire fence done (or queued_ns): for traces */
	int fail_status; /* the first acquire failure's, for traces */
	struct fl_loop_source *acq_src[FL_DISPLAY_MAX_BUFFERS];
	size_t n_bufs;
	struct fl_display_driver_buffer bufs[]; /* their fds are ours */
};

struct handle {
	bool used;
	uint32_t kind, device, id;
	int events; /* the write end of the handle's event pipe (non-blocking) */
	uint8_t subscribed[32]; /* a bit per event type */
};

struct dconn {
	struct fl_server_conn conn;
	struct handle handles[MAX_HANDLES];
	int stash[FL_DPROTO_POST_MAX_FDS]; /* POST_FDS's, for the next POST */
	unsigned int n_stash;
	unsigned int queued; /* its posts in the devices' queues */
	unsigned int fds_held; /* the fds its posts brought, until each post is let go */
	uint32_t version; /* agreed by its HELLO (0: none yet, which is answered as the newest) */
};

/* What the parts share: set by displayd_serve(), read by all. */
struct displayd_state {
	struct displayd_config cfg;
	struct fl_loop *loop;
	struct fl_server *server;
	struct ddev devs[FL_DISPLAY_CONFIG_MAX_DEVICES];
	size_t n_devs;
	/* The software compositor the drivers' compose() uses, made on first use. */
	struct fl_display_compositor *compositor;
};
extern struct displayd_state dd;

/* ---- service.c ---- */
struct dconn *displayd_conn_of(struct fl_server_conn *conn);
/* The device with ADF id @id, or NULL. */
struct ddev *displayd_dev_by_id(uint32_t id);

/* ---- host.c ---- */
/* Fill @d's host ops, the calls its driver makes into the service. */
void displayd_host_init(struct ddev *d);

/* ---- requests.c ---- */
/* Answer @q; false when @c was cut off (stop reading it). Takes the fds it keeps (sets them -1). */
bool displayd_handle_request(struct dconn *c, const struct fl_dproto_request *q, int *fds);
bool displayd_reply(struct dconn *c, const struct fl_msg_hdr *req, const void *body, size_t len,
		    const int *fds, unsigned int nfds);
/* A status reply with the model's or driver's reason (@e may be NULL). */
bool displayd_reply_status(struct dconn *c, const struct fl_msg_hdr *req, int status,
			   const struct fl_display_error *e);
bool displayd_fail(struct dconn *c, const struct fl_msg_hdr *req, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* @c's open handle @h of @kind (FL_DISPLAY_KIND_*), or NULL. */
struct handle *displayd_handle_get(struct dconn *c, uint32_t h, uint32_t kind);
bool displayd_wrong_kind(struct dconn *c, const struct fl_msg_hdr *req, uint32_t h,
			 const char *want);
void displayd_handle_close(struct handle *h);

/* ---- post.c ---- */
/*
 * The layers of @n_bufs buffers (@layers NULL: none), checked against the
 * buffers' sizes and the modes of @intfs: 0 or -EINVAL naming the buffer.
 */
int displayd_check_layers(struct ddev *d, const uint32_t *intfs, size_t n_intfs,
			  const struct fl_display_driver_buffer *bufs,
			  const struct fl_display_layer *layers, size_t n_bufs,
			  struct fl_display_error *e);
bool displayd_do_post(struct dconn *c, const struct fl_dproto_request *q, int *fds);
bool displayd_do_simple_post(struct dconn *c, const struct fl_dproto_request *q, int *fds);

/* ---- source.c ---- */
/* SET_SOURCE: a live source checked, then given to the driver. Takes the stream's fd. */
bool displayd_do_set_source(struct dconn *c, const struct fl_dproto_request *q, int *fds);
/* @c is going: the live sources it set are removed, as its posts are. */
void displayd_sources_forget(struct dconn *c);

/* ---- queue.c ---- */
bool displayd_bit(const uint8_t *bits, uint32_t n);
/* Send event @ev (@len bytes) to every handle of (@kind, @device, @id) subscribed to @type. */
void displayd_send_event(uint32_t kind, uint32_t device, uint32_t id, uint32_t type, const void *ev,
			 size_t len);
/* Make @d's present and release timelines if not yet made. Return: 0 or a negative errno. */
int displayd_timelines(struct ddev *d);
void displayd_post_free(struct dpost *p);
/* Drop the head of @d's queue unshown (its fences fail). */
void displayd_drop_head(struct ddev *d);
/* Flip what is ready at a vsync of interface @vsync_intf, at @vsync_ns (the fences' time). */
void displayd_try_flip(struct ddev *d, uint32_t vsync_intf, uint64_t vsync_ns);
/*
 * Tell a recording trace (fencectl trace, docs/tracing.md) of display event
 * @type about post @p (NULL: none) of @d, filled in from @p and @ev (its
 * type's fields); @fence_fd: an ACQUIRE's fence, else -1. Call only when
 * fl_introspect_tracing() says a session records: that load is the whole
 * cost otherwise.
 */
struct fl_trace_display_event;
void displayd_trace(struct ddev *d, const struct dpost *p, struct fl_trace_display_event *ev,
		    int fence_fd);
/* Flip, on an idle pass, what needs no vsync (blanked or writeback-only). */
void displayd_kick(struct ddev *d);
/*
 * The status of acquire fence @fd now, a kernel sync_file when @kernel
 * (else a fenceline fence): 0 pending, 1 signalled, or its negative error.
 */
int displayd_fence_status(int fd, bool kernel);
/* Acquire fence @i of @p is done with @status (0, or a negative errno: not shown). */
void displayd_acquire_done(struct dpost *p, size_t i, int status);
void displayd_acquire_ready(int fd, uint32_t events, void *data);
void displayd_acquire_timeout(void *data);
void displayd_flush(struct fl__display_device *dev, void *data);
/* FL_DISPLAY_CAP_ASYNC_FLIP: the oldest post in flight on @d showed at @ts. */
void displayd_flipped(struct ddev *d, uint64_t ts);

/* ---- drivers.c: which driver runs a device ---- */

/* The driver named @name, or NULL (none, or this service was built without it). */
const struct fl_display_driver_ops *displayd_driver_find(const char *name);
/*
 * Whether driver @name can run here (its probe, at @where: NULL for its
 * default). Return: 0, or -ENOENT (no such driver), -ENOSYS (built
 * without it) or the probe's -errno, with the reason in @why.
 */
int displayd_driver_probe(const char *name, const char *where, char *why, size_t len);
/* Every driver known, up to @cap into @ret (see fl_display_drivers()). Return: how many are known. */
size_t displayd_drivers_info(struct fl_display_driver_info *ret, size_t cap);
/*
 * The config that the display choice @choice stands for, into *@ret
 * (fl__display_config_free()); "auto" probes the drivers. Return: 0, or a
 * negative errno with the reason in @err.
 */
int displayd_choose(const char *choice, struct fl__display_config **ret, char *err, size_t len);

#endif /* FL_DISPLAYD_PRIVATE_H */

/* SPDX-License-Identifier: MIT */
/*
 * The display service (docs/display.md, "The service"): the devices of the
 * display config, each with its driver, served to clients on the server
 * framework. One thread, one loop: requests, the drivers' timers, the
 * acquire fences (fd sources, never a thread or a blocking wait) and the
 * flips all run here, so every call on a device is serialised (ADF's
 * client lock) without a lock.
 *
 * This file makes the devices, runs the loop and keeps the connections;
 * requests.c and post.c answer requests, queue.c flips, host.c is what
 * drivers call (displayd-private.h lists the parts).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fenceline/shared.h>

#include "acceptor.h"
#include "compose.h"
#include "display.h"
#include "displayd-private.h"
#include "dump.h"
#include "start.h"
#include "util.h"

struct displayd_state dd;
static struct fl_acceptor *acceptor;
static struct fl__display_set *set;
static struct fl__display_config *config;
static bool stopping;

void displayd_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fl-displayd[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

struct dconn *displayd_conn_of(struct fl_server_conn *conn)
{
	return FL_SERVER_CONTAINER_OF(conn, struct dconn, conn);
}

struct ddev *displayd_dev_by_id(uint32_t id)
{
	for (size_t i = 0; i < dd.n_devs; i++)
		if (fl__display_device_id(dd.devs[i].dev) == id)
			return &dd.devs[i];
	return NULL;
}

/* ---- dump.h: what the dump reads ---- */

size_t displayd_dump_devices(void)
{
	return dd.n_devs;
}

void displayd_dump_device(size_t i, struct displayd_dump_dev *ret)
{
	*ret = (struct displayd_dump_dev){ .dev = dd.devs[i].dev,
					   .driver = dd.devs[i].drv->name,
					   .st = dd.devs[i].st,
					   .last_vsync = dd.devs[i].last_vsync };
	if (dd.devs[i].drv->stats)
		ret->n_drv_stats = dd.devs[i].drv->stats(dd.devs[i].drv_data, ret->drv_stats,
							 DISPLAYD_DUMP_DRIVER_STATS);
}

static const struct dpost *post_view(const struct dpost *p, struct displayd_dump_post *ret)
{
	if (!p)
		return NULL;
	*ret = (struct displayd_dump_post){
		.seq = p->seq,
		.queued_ns = p->queued_ns,
		.owner_pid = p->owner ? (int)p->owner->conn.pid : 0,
		.failed = p->failed,
		.pending = p->pending,
		.intfs = p->intfs,
		.n_intfs = p->n_intfs,
		.bufs = p->bufs,
		.n_bufs = p->n_bufs,
		.acquire = p->acquire,
		.acq_buf = p->acq_buf,
		.n_acquire = p->n_acquire,
	};
	return p;
}

const struct dpost *displayd_dump_on_screen(size_t i, struct displayd_dump_post *ret)
{
	return post_view(dd.devs[i].on_screen, ret);
}

const struct dpost *displayd_dump_queued(size_t i, const struct dpost *prev,
					 struct displayd_dump_post *ret)
{
	return post_view(prev ? prev->next : dd.devs[i].head, ret);
}

/* ---- events ---- */

/* ---- connections ---- */

static void readable(struct fl_server_conn *conn)
{
	static uint8_t buf[FL_DPROTO_MAX_REQUEST + 1];
	struct dconn *c = displayd_conn_of(conn);

	for (int i = 0; i < BATCH; i++) {
		int fds[FL_DPROTO_MAX_FDS];
		struct fl_server_msg m;
		struct fl_dproto_request q;
		int r = fl__server_conn_recv(conn, buf, sizeof(buf), fds, FL_DPROTO_MAX_FDS, &m);
		bool ok;

		if (r <= 0)
			return;
		r = fl__dproto_decode(buf, m.len, m.nfds, m.flags != 0, c->n_stash, &q);
		if (r < 0) {
			char why[96];

			for (unsigned int k = 0; k < m.nfds; k++)
				close(fds[k]);
			snprintf(why, sizeof(why), "malformed %s request (%s)",
				 fl__dproto_op_name(q.hdr.op), strerror(-r));
			/* A peer that sends what the protocol forbids is cut off, after one answer. */
			displayd_reply_status(c, &q.hdr, r, NULL);
			fl__server_conn_disconnect(conn, why);
			return;
		}
		ok = displayd_handle_request(c, &q, fds);
		for (unsigned int k = 0; k < m.nfds; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		if (!ok || conn->fd < 0)
			return;
	}
	/* More may be queued: its next readable event comes at once (level-triggered). */
}

static void disconnecting(struct fl_server_conn *conn, const char *why)
{
	struct dconn *c = displayd_conn_of(conn);

	if (why && dd.cfg.foreground)
		displayd_log("pid %d: %s", (int)conn->pid, why);
	for (size_t h = 0; h < MAX_HANDLES; h++)
		if (c->handles[h].used)
			displayd_handle_close(&c->handles[h]);
	for (unsigned int i = 0; i < c->n_stash; i++)
		close(c->stash[i]);
	c->n_stash = 0;
	displayd_sources_forget(c);
	/* Its queued posts go: a client that is gone leaves nothing waiting. */
	for (size_t i = 0; i < dd.n_devs; i++) {
		struct ddev *d = &dd.devs[i];
		struct dpost **pp = &d->head, *last = NULL;

		while (*pp) {
			struct dpost *p = *pp;

			if (p->owner != c) {
				last = p;
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			d->st.queued--;
			d->st.dropped++;
			displayd_post_free(p);
		}
		d->tail = last;
		if (d->on_screen && d->on_screen->owner == c)
			d->on_screen->owner = NULL;
		/* In flight: the hardware reads its buffers until it flips; it goes then. */
		for (struct dpost *p = d->in_flight; p; p = p->next)
			if (p->owner == c)
				p->owner = NULL;
		displayd_kick(d);
	}
}

static void release(struct fl_server_conn *conn)
{
	free(displayd_conn_of(conn));
}

static bool reject(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status,
		   const char *why)
{
	(void)req;
	(void)status;
	fl__server_conn_disconnect(conn, why);
	return false;
}

static const struct fl_server_host_ops host_ops = {
	.reject = reject,
	.readable = readable,
	.disconnecting = disconnecting,
	.release = release,
};

static void refuse(int fd, int status, void *data)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_reply r;
	} no = { { FL_DOP_HELLO | FL_OP_REPLY, 0, 0, sizeof(struct fl_msg_reply) }, { status, 0 } };

	(void)data;
	(void)!send(fd, &no, sizeof(no), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void accepted(struct fl_acceptor *acc, int fd, pid_t pid, uid_t uid, void *data)
{
	struct dconn *c;

	(void)data;
	/* One user's service: its socket is 0600 in a private directory; say so anyway. */
	if (uid != geteuid()) {
		fl__acceptor_turn_away(acc, fd, -EACCES);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fl__acceptor_turn_away(acc, fd, -ENOMEM);
		return;
	}
	if (fl__server_conn_start(dd.server, &c->conn, fd, pid, uid) < 0) {
		close(fd);
		free(c);
	}
}

static const struct fl_acceptor_ops acceptor_ops = {
	.accepted = accepted,
	.refuse = refuse,
};

/* ---- set-up ---- */

/*
 * A config device of @cd's name, driver and options whose interfaces and
 * engines are those the driver found on its hardware (its objects() op),
 * for a device whose config lists none: *@ret, freed by objects_free().
 */
static int objects_config(struct ddev *d, const struct fl__display_config_device *cd,
			  struct fl__display_config_device **ret)
{
	struct fl_display_driver_objects o = { 0 };
	struct fl__display_config_device *c;
	char customs[FL_DISPLAY_CONFIG_MAX_OBJECTS][FL_DISPLAY_NAME_LEN];
	size_t n_customs = 0;
	int r = d->drv->objects(d->drv_data, &o);

	if (r < 0)
		return r;
	if (o.n_intfs > FL_DISPLAY_CONFIG_MAX_OBJECTS ||
	    o.n_engines > FL_DISPLAY_CONFIG_MAX_OBJECTS)
		return -E2BIG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = *cd;
	c->intfs = o.n_intfs ? calloc(o.n_intfs, sizeof(*c->intfs)) : NULL;
	c->engines = o.n_engines ? calloc(o.n_engines, sizeof(*c->engines)) : NULL;
	c->n_intfs = o.n_intfs;
	c->n_engines = o.n_engines;
	*ret = c;
	if ((o.n_intfs && !c->intfs) || (o.n_engines && !c->engines))
		return -ENOMEM;
	for (size_t i = 0; i < o.n_intfs; i++) {
		const struct fl_display_driver_interface *di = &o.intfs[i];
		struct fl__display_config_interface *ci = &c->intfs[i];
		size_t k = 0;

		if (di->n_modes > FL_DISPLAY_MAX_MODES ||
		    (di->current >= 0 && (size_t)di->current >= di->n_modes))
			return -EINVAL;
		memcpy(ci->name, di->name, sizeof(ci->name));
		ci->name[sizeof(ci->name) - 1] = 0;
		ci->type = di->type;
		/* The config's numbering: the device's k-th distinct custom type is CUSTOM + k. */
		if (di->type >= FL_DISPLAY_INTF_CUSTOM) {
			while (k < n_customs &&
			       strncmp(customs[k], di->type_name, FL_DISPLAY_NAME_LEN))
				k++;
			if (k == n_customs) {
				memcpy(customs[k], di->type_name, FL_DISPLAY_NAME_LEN);
				customs[k][FL_DISPLAY_NAME_LEN - 1] = 0;
				n_customs++;
			}
			ci->type = FL_DISPLAY_INTF_CUSTOM + (uint32_t)k;
			memcpy(ci->type_str, customs[k], sizeof(ci->type_str));
		}
		ci->flags = di->flags;
		ci->width_mm = di->width_mm;
		ci->height_mm = di->height_mm;
		ci->connected = di->connected;
		memcpy(ci->modes, di->modes, di->n_modes * sizeof(di->modes[0]));
		ci->n_modes = di->n_modes;
		ci->current = di->connected ? di->current : -1;
		ci->background = 0xff000000u;
		ci->line = cd->line;
	}
	for (size_t i = 0; i < o.n_engines; i++) {
		const struct fl_display_driver_engine *de = &o.engines[i];
		struct fl__display_config_engine *ce = &c->engines[i];

		if (de->n_formats > FL_DISPLAY_CONFIG_MAX_FORMATS ||
		    de->n_intfs > FL_DISPLAY_CONFIG_MAX_OBJECTS)
			return -EINVAL;
		memcpy(ce->name, de->name, sizeof(ce->name));
		ce->name[sizeof(ce->name) - 1] = 0;
		memcpy(ce->formats, de->formats, de->n_formats * sizeof(de->formats[0]));
		ce->n_formats = de->n_formats;
		for (size_t j = 0; j < de->n_intfs; j++) {
			if (de->intfs[j] >= o.n_intfs)
				return -EINVAL;
			ce->interfaces[j] = de->intfs[j];
		}
		ce->n_interfaces = de->n_intfs;
		ce->line = cd->line;
	}
	return 0;
}

static void objects_free(struct fl__display_config_device *c)
{
	if (!c)
		return;
	free(c->intfs);
	free(c->engines);
	free(c);
}

static int devices_make(void)
{
	char err[256];
	int r;

	if (dd.cfg.display)
		r = displayd_choose(dd.cfg.display, &config, err, sizeof(err));
	else
		r = fl__display_config_parse(dd.cfg.config_text, dd.cfg.config_len,
					     dd.cfg.config_origin, &config, err, sizeof(err));
	if (r < 0) {
		displayd_log("%s", err);
		return r;
	}
	set = fl__display_create();
	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < config->n_devices; i++) {
		const struct fl__display_config_device *cd = &config->devices[i];
		struct ddev *d = &dd.devs[dd.n_devs];
		const char *origin = dd.cfg.display ? "--display" : dd.cfg.config_origin;
		struct fl_display_error e;
		char why[FL_DISPLAY_WHY_LEN];

		/* Only whether it exists: its probe knows not the config's options (a card, a tty). */
		r = displayd_driver_probe(cd->driver, NULL, why, sizeof(why));
		if (r == -ENOENT || r == -ENOSYS) {
			displayd_log("%s:%u: %s", origin, cd->line, why);
			return -EINVAL;
		}
		memset(d, 0, sizeof(*d));
		d->drv = displayd_driver_find(cd->driver);
		d->cd = cd;
		d->tl_present = d->tl_release = -1;
		displayd_host_init(d);
		r = d->drv->create(&d->host, &d->drv_data);
		if (r < 0) {
			displayd_log("%s:%u: the %s driver failed: %s", origin, cd->line,
				     cd->driver, strerror(-r));
			return r;
		}
		/* An option the driver never asked for is a typo or another driver's. */
		for (size_t o = 0; o < cd->n_options; o++)
			if (!(d->options_asked & 1u << o)) {
				displayd_log("%s:%u: the %s driver takes no option '%s'", origin,
					     cd->line, cd->driver, cd->options[o].key);
				d->drv->destroy(d->drv_data);
				return -EINVAL;
			}
		/* A device described by its hardware: the driver lists what it found. */
		if (!cd->n_intfs && !cd->n_engines && d->drv->objects) {
			r = objects_config(d, cd, &d->own_cd);
			if (r < 0) {
				displayd_log("%s:%u: the %s driver cannot list its objects: %s",
					     dd.cfg.config_origin, cd->line, cd->driver,
					     strerror(-r));
				objects_free(d->own_cd);
				d->drv->destroy(d->drv_data);
				return r;
			}
			cd = d->cd = d->own_cd;
		}
		r = fl__display_config_instantiate(cd, set, d->drv, d->drv_data, &d->dev, &e);
		if (r < 0) {
			displayd_log("%s:%u: %s", origin, cd->line, e.msg);
			d->drv->destroy(d->drv_data);
			objects_free(d->own_cd);
			return r;
		}
		d->host.device = fl__display_device_id(d->dev);
		fl__display_device_set_flush(d->dev, displayd_flush, d);
		dd.n_devs++;
	}
	return 0;
}

static void devices_free(void)
{
	for (size_t i = 0; i < dd.n_devs; i++) {
		struct ddev *d = &dd.devs[i];

		while (d->head)
			displayd_drop_head(d);
		if (d->on_screen)
			displayd_post_free(d->on_screen);
		d->on_screen = NULL;
		while (d->in_flight) {
			struct dpost *p = d->in_flight;

			d->in_flight = p->next;
			displayd_post_free(p);
		}
		d->in_flight_tail = NULL;
		fl__loop_source_remove(d->kick);
		d->drv->destroy(d->drv_data);
		objects_free(d->own_cd);
		/* Closing the timelines fails what is still pending: no waiter hangs. */
		if (d->tl_present >= 0)
			fl_timeline_fd_close(d->tl_present);
		if (d->tl_release >= 0)
			fl_timeline_fd_close(d->tl_release);
	}
	dd.n_devs = 0;
	fl__display_destroy(set);
	fl__display_config_free(config);
	fl__display_compose_free(dd.compositor);
	dd.compositor = NULL;
}

static void on_signal(int sfd, uint32_t events, void *data)
{
	struct signalfd_siginfo si;

	(void)events;
	(void)data;
	if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (dd.cfg.foreground)
			displayd_log("signal %u: exiting", si.ssi_signo);
		stopping = true;
	}
}

static bool busy(void)
{
	if (fl__server_conn_count(dd.server))
		return true;
	for (size_t i = 0; i < dd.n_devs; i++)
		if (dd.devs[i].head || dd.devs[i].in_flight)
			return true;
	return false;
}

int displayd_serve(int lfd, const struct displayd_config *c)
{
	uint64_t idle_since = fl__now_ns();
	int sfd, r;

	dd.cfg = *c;
	dd.loop = fl__loop_create();
	if (!dd.loop)
		return -errno;
	r = devices_make();
	if (r < 0)
		goto out;
	sfd = fl__server_stop_signals();
	if (sfd < 0) {
		r = sfd;
		goto out;
	}
	dd.server = fl__server_create(dd.loop, &host_ops);
	acceptor = dd.server ? fl__acceptor_create(dd.loop, lfd, &acceptor_ops, NULL) : NULL;
	if (!acceptor || !fl__loop_add_fd(dd.loop, sfd, EPOLLIN, on_signal, NULL)) {
		r = -ENOMEM;
		goto out_sfd;
	}
	while (!stopping) {
		int timeout = -1;

		if (dd.cfg.idle_ms && !busy()) {
			uint64_t idle = fl__now_ns() - idle_since;

			if (idle >= (uint64_t)dd.cfg.idle_ms * 1000000u)
				break;
			timeout =
				(int)(((uint64_t)dd.cfg.idle_ms * 1000000u - idle) / 1000000u) + 1;
		}
		r = fl__loop_dispatch(dd.loop, timeout);
		if (r < 0 && r != -EINTR)
			break;
		r = 0;
		if (busy())
			idle_since = fl__now_ns();
	}
	if (dd.cfg.foreground)
		displayd_log("exiting");
	for (struct fl_server_conn *conn; (conn = fl__server_conn_next(dd.server, NULL));)
		fl__server_conn_disconnect(conn, NULL);
	fl__server_release_gone(dd.server);
out_sfd:
	fl__acceptor_destroy(acceptor);
	close(sfd);
out:
	devices_free();
	fl__server_destroy(dd.server);
	fl__loop_destroy(dd.loop);
	return r;
}

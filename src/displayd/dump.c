/* SPDX-License-Identifier: MIT */
/*
 * The display service's dump (DUMP, docs/fencectl.md "displays"): per
 * device its interfaces, what is on screen, the queue and the counters.
 * The point is a post that does not reach the screen: for each acquire
 * fence it still waits for, the fence as fencelined knows it (from the
 * service's own copy of the fd) and who should signal it. fencelined
 * already finds the processes holding each timeline for `fencectl dump`
 * (it walks /proc by inode), so this asks it for that dump, once, instead
 * of walking /proc a second time here with rules of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>
#include <fenceline/shared.h>

#include "display-config.h"
#include "display-model.h"
#include "display.h"
#include "dump.h"
#include "json.h"
#include "util.h"

/* Points shown per fence: a merge of more is cut short, with a count. */
#define MAX_POINTS 16
/*
 * Fences described per dump: each is a round trip to fencelined made in
 * the service's loop, so a client asking for dumps while hundreds of posts
 * wait cannot stall the flips for long.
 */
#define MAX_DESCRIBED 256
#define STR_(x)	      #x
#define STR(x)	      STR_(x)

struct out {
	FILE *f;
	bool json;
	uint64_t now;
	/* fencelined's dump, as JSON, fetched at the first pending fence */
	bool asked;
	int daemon_err;
	unsigned int described;
	struct json *daemon;
};

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p > 0x7e)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/*
 * A name in the text dump: fence and timeline names and comms come from
 * other processes, so a newline in one must not forge a line of the dump.
 */
static void text_str(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p < 0x20 || *p > 0x7e ? '?' : *p, f);
}

static const char *dpms_name(unsigned int s)
{
	static const char *const n[] = { "on", "standby", "suspend", "off" };

	return s < 4 ? n[s] : "?";
}

/* fencelined's timeline @id in its dump, or NULL (gone, or no dump). */
static const struct json *timeline_of(struct out *o, uint64_t id)
{
	const struct json *tls;

	if (!o->asked) {
		int fd = -1;
		size_t len = 0;
		char *text = NULL;
		struct json_error e;

		o->asked = true;
		o->daemon_err = fl_introspect_dump(FL_INTROSPECT_JSON, &fd);
		if (!o->daemon_err) {
			o->daemon_err = fl_introspect_read(fd, NULL, 0, &len);
			if (o->daemon_err == -ENOBUFS)
				o->daemon_err = (text = malloc(len + 1)) ? 0 : -ENOMEM;
			if (!o->daemon_err)
				o->daemon_err = fl_introspect_read(fd, text, len + 1, &len);
			if (!o->daemon_err)
				o->daemon_err = json_parse(text, len, &o->daemon, &e);
			free(text);
			close(fd);
		}
	}
	tls = json_get(o->daemon, "timelines");
	for (size_t i = 0; tls && tls->type == JSON_ARRAY && i < tls->n_items; i++) {
		const struct json *id_v = json_get(tls->items[i], "id");

		if (id_v && id_v->type == JSON_NUMBER && id_v->is_int && (uint64_t)id_v->i == id)
			return tls->items[i];
	}
	return NULL;
}

/* Who should signal point @pt: the timeline's owner and the holders of its fd. */
static void signallers(struct out *o, const struct fl_sync_pt_info *pt)
{
	const struct json *tl = timeline_of(o, pt->timeline_id);
	const struct json *owner = json_get(tl, "owner"), *holders = json_get(tl, "holders");
	const struct json *daemon = json_get(json_get(o->daemon, "daemon"), "pid");
	size_t n = holders && holders->type == JSON_ARRAY ? holders->n_items : 0, shown = 0;

	if (o->json && owner && owner->type == JSON_NUMBER)
		fprintf(o->f, ",\"owner\":%" PRId64, owner->i);
	if (o->json)
		fputs(",\"holders\":[", o->f);
	else if (!tl)
		fprintf(o->f, "; its signallers are unknown (%s)",
			o->daemon_err ? strerror(-o->daemon_err)
				      : "fencelined has no such timeline");
	else if (owner && owner->type == JSON_NUMBER)
		fprintf(o->f, "; owner pid %" PRId64, owner->i);
	for (size_t i = 0; i < n; i++) {
		const struct json *pid = json_get(holders->items[i], "pid");
		const struct json *comm = json_get(holders->items[i], "comm");
		int64_t p = pid && pid->type == JSON_NUMBER ? pid->i : 0;
		const char *c = comm && comm->type == JSON_STRING ? comm->str : "";

		/* fencelined's own copy is no one's to signal with. */
		if (daemon && daemon->type == JSON_NUMBER && p == daemon->i)
			continue;
		if (o->json) {
			fprintf(o->f, "%s{\"pid\":%" PRId64 ",\"comm\":", shown ? "," : "", p);
			json_str(o->f, c);
			fputc('}', o->f);
		} else {
			fprintf(o->f, "%spid %" PRId64 " (", shown ? ", " : "; held by: ", p);
			text_str(o->f, c);
			fputc(')', o->f);
		}
		shown++;
	}
	if (o->json)
		fputc(']', o->f);
	else if (tl && !shown)
		fputs("; held by no process: nobody can signal it", o->f);
}

/* Acquire fence @fd, of buffer @buf, as fencelined knows it. */
static void fence(struct out *o, int fd, size_t buf, bool first)
{
	struct fl_sync_pt_info pts[MAX_POINTS];
	struct fl_fence_info info;
	int n = o->described++ < MAX_DESCRIBED ? fl_fence_fd_get_info(fd, &info, pts, MAX_POINTS)
					       : -E2BIG;
	const char *why =
		n == -E2BIG
			? "not described: the dump describes " STR(MAX_DESCRIBED) " fences at most"
		: n < 0 ? strerror(-n)
			: "";

	if (o->json) {
		fprintf(o->f, "%s{\"buffer\":%zu,", first ? "" : ",", buf);
		if (n < 0) {
			fprintf(o->f, "\"error\":");
			json_str(o->f, why);
			fputs(",\"points\":[]}", o->f);
			return;
		}
		fputs("\"name\":", o->f);
		json_str(o->f, info.name);
		fprintf(o->f, ",\"status\":%" PRId32 ",\"points\":[", info.status);
	} else if (n < 0) {
		fprintf(o->f, "      buffer %zu waits for a fence (%s)\n", buf, why);
		return;
	} else {
		fprintf(o->f, "      buffer %zu waits for fence '", buf);
		text_str(o->f, info.name);
		fprintf(o->f, "' (%s)\n",
			info.status == 0  ? "active"
			: info.status > 0 ? "signalled"
					  : "failed");
	}
	for (int i = 0, shown = 0; i < n; i++) {
		const struct fl_sync_pt_info *pt = &pts[i];

		/* The points already signalled are no one's to signal. */
		if (pt->status != 0)
			continue;
		if (o->json) {
			fprintf(o->f, "%s{\"timeline\":", shown ? "," : "");
			json_str(o->f, pt->timeline_name);
			fprintf(o->f, ",\"timeline_id\":%" PRIu64 ",\"value\":\"%" PRIu64 "\"",
				pt->timeline_id, pt->value);
			signallers(o, pt);
			fputc('}', o->f);
		} else {
			fprintf(o->f, "        point %" PRIu64 " of timeline '", pt->value);
			text_str(o->f, pt->timeline_name);
			fprintf(o->f, "' (id %" PRIu64 ")", pt->timeline_id);
			signallers(o, pt);
			fputc('\n', o->f);
		}
		shown++;
	}
	if (!o->json && info.num_points > MAX_POINTS)
		fprintf(o->f, "        (%" PRIu32 " points more not shown)\n",
			info.num_points - MAX_POINTS);
	if (o->json)
		fputs("]}", o->f);
}

static void post(struct out *o, const struct displayd_dump_post *p, bool queued)
{
	char fcc[5];

	if (o->json) {
		fprintf(o->f,
			"{\"post\":%" PRIu64 ",\"age_ns\":%" PRIu64 ",\"pid\":%d,\"failed\":%s,"
			"\"pending_fences\":%u,\"interfaces\":[",
			p->seq, o->now - p->queued_ns, p->owner_pid, p->failed ? "true" : "false",
			p->pending);
		for (size_t i = 0; i < p->n_intfs; i++)
			fprintf(o->f, "%s%" PRIu32, i ? "," : "", p->intfs[i]);
		fputs("],\"buffers\":[", o->f);
		for (size_t i = 0; i < p->n_bufs; i++) {
			fprintf(o->f,
				"%s{\"engine\":%" PRIu32 ",\"w\":%" PRIu32 ",\"h\":%" PRIu32
				",\"format\":",
				i ? "," : "", p->bufs[i].engine, p->bufs[i].w, p->bufs[i].h);
			/* A driver's own fourcc may be any four bytes. */
			json_str(o->f, fl__display_format_str(p->bufs[i].format, fcc));
			fputc('}', o->f);
		}
		fputs("],\"waits_for\":[", o->f);
	} else {
		fprintf(o->f, "    post %" PRIu64 ", queued %.1f ms ago by ", p->seq,
			(double)(o->now - p->queued_ns) / 1e6);
		if (p->owner_pid)
			fprintf(o->f, "pid %d", p->owner_pid);
		else
			fputs("a client now gone", o->f);
		if (queued)
			fprintf(o->f, ": %s",
				p->failed    ? "an acquire fence failed, it will not be shown"
				: p->pending ? "waits for its acquire fences"
					     : "waits for the vsync");
		fputc('\n', o->f);
		for (size_t i = 0; i < p->n_bufs; i++) {
			fprintf(o->f,
				"      buffer %zu: engine %" PRIu32 ", %" PRIu32 "x%" PRIu32 " ", i,
				p->bufs[i].engine, p->bufs[i].w, p->bufs[i].h);
			text_str(o->f, fl__display_format_str(p->bufs[i].format, fcc));
			fputc('\n', o->f);
		}
	}
	for (size_t i = 0, n = 0; queued && i < p->n_acquire; i++)
		if (p->acquire[i] >= 0)
			fence(o, p->acquire[i], p->acq_buf[i], !n++);
	if (o->json)
		fputs("]}", o->f);
}

static void interfaces(struct out *o, const struct displayd_dump_dev *d)
{
	size_t n = fl__display_device_num_interfaces(d->dev);

	if (o->json)
		fputs("\"interfaces\":[", o->f);
	for (uint32_t id = 0; id < n; id++) {
		static struct fl_display_mode modes[FL_DISPLAY_MAX_MODES];
		static uint8_t custom[FL_DISPLAY_MAX_CUSTOM_DATA];
		struct fl__display_interface *intf = fl__display_interface_get(d->dev, id);
		struct fl_display_interface_data data = { .modes = modes,
							  .n_modes = FL_DISPLAY_MAX_MODES,
							  .custom_data = custom,
							  .custom_data_size = sizeof(custom) };
		const struct fl_display_mode *m = fl__display_interface_current_mode(intf);
		uint64_t vs = id < FL_DISPLAY_CONFIG_MAX_OBJECTS ? d->last_vsync[id] : 0;
		struct fl_display_error e;

		if (fl__display_interface_data(intf, &data, &e) < 0)
			snprintf(data.name, sizeof(data.name), "?");
		if (o->json) {
			fprintf(o->f, "%s{\"id\":%" PRIu32 ",\"name\":", id ? "," : "", id);
			json_str(o->f, data.name);
			fputs(",\"type\":", o->f);
			json_str(o->f, fl__display_interface_type_str(intf));
			fprintf(o->f, ",\"primary\":%s,\"dpms\":\"%s\",\"connected\":%s,\"mode\":",
				fl__display_interface_flags(intf) & FL_DISPLAY_INTF_PRIMARY
					? "true"
					: "false",
				dpms_name(fl__display_interface_dpms(intf)),
				fl__display_interface_connected(intf) ? "true" : "false");
			if (m->hdisplay) {
				fprintf(o->f, "{\"w\":%u,\"h\":%u,\"refresh\":%" PRIu32 "}",
					m->hdisplay, m->vdisplay, fl__display_mode_vrefresh(m));
			} else {
				fputs("null", o->f);
			}
			fprintf(o->f, ",\"last_vsync_ns\":%" PRIu64 "}", vs);
			continue;
		}
		fprintf(o->f, "  interface %" PRIu32 " '%s' %s%s: DPMS %s, %s", id, data.name,
			fl__display_interface_type_str(intf),
			fl__display_interface_flags(intf) & FL_DISPLAY_INTF_PRIMARY ? " primary"
										    : "",
			dpms_name(fl__display_interface_dpms(intf)),
			fl__display_interface_connected(intf) ? "connected" : "disconnected");
		if (m->hdisplay)
			fprintf(o->f, ", mode %ux%u@%" PRIu32, m->hdisplay, m->vdisplay,
				fl__display_mode_vrefresh(m));
		else
			fputs(", no mode", o->f);
		if (vs)
			fprintf(o->f, ", last vsync %" PRIu64 " ns (%.1f ms ago)\n", vs,
				o->now > vs ? (double)(o->now - vs) / 1e6 : 0.0);
		else
			fputs(", no vsync yet\n", o->f);
	}
	if (o->json)
		fputs("],", o->f);
}

static void counters(struct out *o, const struct fl_display_stats *s)
{
	fprintf(o->f,
		o->json ? "\"counters\":{\"queued\":%" PRIu64 ",\"posted\":%" PRIu64
			  ",\"flipped\":%" PRIu64 ",\"dropped\":%" PRIu64
			  ",\"fence_failures\":%" PRIu64 ",\"on_screen_buffers\":%" PRIu64
			  ",\"vsyncs\":%" PRIu64 "}"
			: "  counters: queued %" PRIu64 ", posted %" PRIu64 ", flipped %" PRIu64
			  ", dropped %" PRIu64 ", fence failures %" PRIu64
			  ", on-screen buffers %" PRIu64 ", vsyncs %" PRIu64 "\n",
		s->queued, s->posted, s->flipped, s->dropped, s->fence_failures,
		s->on_screen_buffers, s->vsyncs);
}

/* The driver's own counters, after the service's. */
static void driver_counters(struct out *o, const struct displayd_dump_dev *d)
{
	if (!d->n_drv_stats)
		return;
	fputs(o->json ? ",\"driver_counters\":{" : "  driver counters:", o->f);
	for (size_t i = 0; i < d->n_drv_stats && i < DISPLAYD_DUMP_DRIVER_STATS; i++) {
		if (o->json) {
			fputs(i ? "," : "", o->f);
			json_str(o->f, d->drv_stats[i].name);
			fprintf(o->f, ":%" PRIu64, d->drv_stats[i].value);
		} else {
			fprintf(o->f, "%s %s %" PRIu64, i ? "," : "", d->drv_stats[i].name,
				d->drv_stats[i].value);
		}
	}
	fputs(o->json ? "}" : "\n", o->f);
}

static void device(struct out *o, size_t i)
{
	struct displayd_dump_dev d;
	struct displayd_dump_post p;
	const struct dpost *it;
	size_t n = 0;

	displayd_dump_device(i, &d);
	if (o->json) {
		fprintf(o->f, "%s{\"id\":%" PRIu32 ",\"name\":", i ? "," : "",
			fl__display_device_id(d.dev));
		json_str(o->f, fl__display_device_name(d.dev));
		fputs(",\"driver\":", o->f);
		json_str(o->f, d.driver);
		fputc(',', o->f);
	} else {
		fprintf(o->f, "device %" PRIu32 " '%s' (driver %s)\n", fl__display_device_id(d.dev),
			fl__display_device_name(d.dev), d.driver);
	}
	interfaces(o, &d);
	fputs(o->json ? "\"on_screen\":" : "  on screen:", o->f);
	if (displayd_dump_on_screen(i, &p)) {
		fputs(o->json ? "" : "\n", o->f);
		post(o, &p, false);
	} else {
		fputs(o->json ? "null" : " nothing\n", o->f);
	}
	for (it = NULL; (it = displayd_dump_queued(i, it, &p)); n++)
		;
	if (o->json)
		fputs(",\"queue\":[", o->f);
	else
		fprintf(o->f, "  queue: %zu post%s\n", n, n == 1 ? "" : "s");
	n = 0;
	for (it = NULL; (it = displayd_dump_queued(i, it, &p)); n++) {
		if (o->json && n)
			fputc(',', o->f);
		post(o, &p, true);
	}
	fputs(o->json ? "]," : "", o->f);
	counters(o, &d.st);
	driver_counters(o, &d);
	fputs(o->json ? "}" : "\n", o->f);
}

int displayd_dump(uint32_t flags, int *ret_fd)
{
	struct out o = { .json = flags & FL_DDUMP_JSON, .now = fl__now_ns() };
	char *text = NULL;
	size_t len = 0;
	int fd, r = 0;

	o.f = open_memstream(&text, &len);
	if (!o.f)
		return -errno;
	if (o.json)
		fprintf(o.f, "{\"version\":1,\"service\":{\"pid\":%d},\"devices\":[",
			(int)getpid());
	else
		fprintf(o.f, "fl-displayd pid %d\n\n", (int)getpid());
	for (size_t i = 0; i < displayd_dump_devices(); i++)
		device(&o, i);
	if (o.json)
		fputs("]}\n", o.f);
	json_free(o.daemon);
	if (fclose(o.f) != 0) {
		free(text);
		return -ENOMEM;
	}
	fd = memfd_create("fl-displayd-dump", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, text + off, len - off);

		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			goto out;
		}
		off += (size_t)w;
	}
	/* Sealed, as fencelined's views: the reader can trust what it reads. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(fd, 0, SEEK_SET) != 0)
		r = -errno;
out:
	free(text);
	if (r < 0 && fd >= 0)
		close(fd);
	if (r == 0)
		*ret_fd = fd;
	return r;
}

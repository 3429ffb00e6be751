/* SPDX-License-Identifier: MIT */
/*
 * The debug dump (layout documented in include/fenceline/debug.h), like the
 * kernel's sync debugfs file: every live timeline with its pending points,
 * then every live fence with its points.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fenceline/debug.h>

#include "core.h"
#include "host.h"

static void print_status(FILE *out, int status, uint64_t ts)
{
	if (status == 0) {
		fputs("active", out);
		return;
	}
	if (status > 0)
		fputs("signaled", out);
	else
		fprintf(out, "error %s", strerrorname_np(-status) ? strerrorname_np(-status) : "?");
	fprintf(out, " @%" PRIu64 ".%09" PRIu64, ts / UINT64_C(1000000000),
		ts % UINT64_C(1000000000));
}

static void pt_value(const struct fl_sync_pt *pt, char *buf, size_t size)
{
	if (pt->tl->ops->pt_value_str) {
		buf[0] = '\0';
		pt->tl->ops->pt_value_str(pt, buf, size);
		buf[size - 1] = '\0';
	} else {
		snprintf(buf, size, "%" PRIu64, pt->value);
	}
}

static int cmp_pts(const void *a, const void *b)
{
	return fl__pt_compare(*(struct fl_sync_pt *const *)a, *(struct fl_sync_pt *const *)b);
}

/*
 * Under tl->lock: the timeline's value as its driver prints it (into
 * @value, 64 bytes), and its pending points in signal order (*ret_pts, to
 * free; NULL when there are none or no memory). Return: how many pend.
 */
static uint32_t snapshot_locked(struct fl_timeline *tl, char *value, struct fl_sync_pt ***ret_pts)
{
	uint32_t n = tl->heap_len;

	value[0] = '\0';
	if (tl->ops->timeline_value_str) {
		tl->ops->timeline_value_str(tl, value, 64);
		value[63] = '\0';
	}
	*ret_pts = n ? malloc(n * sizeof(**ret_pts)) : NULL;
	if (*ret_pts) {
		memcpy(*ret_pts, tl->heap, n * sizeof(**ret_pts));
		fl__sort(*ret_pts, n, sizeof(**ret_pts), cmp_pts);
	}
	return n;
}

static void dump_timeline(FILE *out, struct fl_timeline *tl, fl__dump_extra_fn extra, void *arg)
{
	char value[64], pv[64];
	struct fl_sync_pt **pts;
	uint32_t n;

	pthread_mutex_lock(&tl->lock);
	n = snapshot_locked(tl, value, &pts);
	fprintf(out, "%s %s%s%s (%u pending)%s\n", tl->name, tl->ops->driver_name,
		*value ? ": " : "", value, n, tl->dead ? " dead" : "");
	for (uint32_t i = 0; pts && i < n; i++) {
		pt_value(pts[i], pv, sizeof(pv));
		fprintf(out, "  pt %s active\n", pv);
	}
	pthread_mutex_unlock(&tl->lock);
	free(pts);
	if (extra)
		extra(out, tl, false, false, arg);
	fputc('\n', out);
}

static void dump_fence(FILE *out, struct fl_fence *f, fl__dump_extra_fn extra, void *arg)
{
	int status = fl__fence_compute_status(f);
	int sticky = atomic_load(&f->status);

	if (sticky)
		status = sticky;
	fprintf(out, "%s: ", f->name);
	print_status(out, status, fl__fence_timestamp(f, status));
	fputc('\n', out);
	for (uint32_t i = 0; i < f->n; i++) {
		struct fl_sync_pt *pt = f->m[i].pt;
		char pv[64], tv[64] = "";
		int s = atomic_load_explicit(&pt->status, memory_order_acquire);

		pt_value(pt, pv, sizeof(pv));
		if (pt->tl->ops->timeline_value_str) {
			pthread_mutex_lock(&pt->tl->lock);
			pt->tl->ops->timeline_value_str(pt->tl, tv, sizeof(tv));
			pthread_mutex_unlock(&pt->tl->lock);
			tv[sizeof(tv) - 1] = '\0';
		}
		fprintf(out, "  %s_pt %s%s%s ", pt->tl->name, pv, *tv ? " / " : "", tv);
		print_status(out, s, atomic_load(&pt->timestamp_ns));
		fputc('\n', out);
	}
	if (extra)
		extra(out, f, true, false, arg);
	fputc('\n', out);
}

FL_EXPORT int fl_debug_dump(char **ret_text, size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	fl_return_if(!ret_text, -EINVAL);
	out = open_memstream(&text, &len);
	if (!out)
		return -ENOMEM;
	fl__registry_lock();
	fputs("timelines:\n--------------\n", out);
	for (struct fl_timeline *tl = fl__registry_timelines(); tl; tl = tl->reg_next)
		dump_timeline(out, tl, NULL, NULL);
	fputs("fences:\n--------------\n", out);
	for (struct fl_fence *f = fl__registry_fences(); f; f = f->reg_next)
		dump_fence(out, f, NULL, NULL);
	fl__registry_unlock();
	if (fclose(out) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	*ret_text = text;
	if (ret_len)
		*ret_len = len;
	return 0;
}

FL_EXPORT int fl_debug_print(FILE *out)
{
	char *text;
	size_t len;
	int r;

	fl_return_if(!out, -EINVAL);
	r = fl_debug_dump(&text, &len);
	if (r < 0)
		return r;
	if (fwrite(text, 1, len, out) != len)
		r = -EIO;
	fflush(out);
	free(text);
	return r;
}

void fl__dump_on_timeout(void)
{
	const char *env = getenv("FENCELINE_DUMP_ON_TIMEOUT");

	if (env && !strcmp(env, "0"))
		return;
	fputs("fenceline: fence wait timed out; sync state follows\n", stderr);
	fl_debug_print(stderr);
}

void fl__json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void json_timeline(FILE *out, struct fl_timeline *tl, fl__dump_extra_fn extra, void *arg)
{
	char value[64], pv[64];
	struct fl_sync_pt **pts;
	uint32_t n;

	pthread_mutex_lock(&tl->lock);
	n = snapshot_locked(tl, value, &pts);
	fprintf(out, "{\"id\":%" PRIu64 ",\"name\":", tl->id);
	fl__json_str(out, tl->name);
	fputs(",\"driver\":", out);
	fl__json_str(out, tl->ops->driver_name);
	fputs(",\"value\":", out);
	fl__json_str(out, value);
	fprintf(out, ",\"dead\":%s,\"pending\":[", tl->dead ? "true" : "false");
	for (uint32_t i = 0; pts && i < n; i++) {
		pt_value(pts[i], pv, sizeof(pv));
		fputs(i ? "," : "", out);
		fl__json_str(out, pv);
	}
	pthread_mutex_unlock(&tl->lock);
	free(pts);
	fputc(']', out);
	if (extra)
		extra(out, tl, false, true, arg);
	fputc('}', out);
}

static void json_fence(FILE *out, struct fl_fence *f, fl__dump_extra_fn extra, void *arg)
{
	int status = fl__fence_compute_status(f), sticky = atomic_load(&f->status);

	if (sticky)
		status = sticky;
	fprintf(out, "{\"id\":%" PRIu64 ",\"name\":", f->id);
	fl__json_str(out, f->name);
	fprintf(out,
		",\"status\":%d,\"timestamp_ns\":%" PRIu64 ",\"created_ns\":%" PRIu64
		",\"points\":[",
		status, fl__fence_timestamp(f, status), f->created_ns);
	for (uint32_t i = 0; i < f->n; i++) {
		struct fl_sync_pt *pt = f->m[i].pt;
		int s = atomic_load_explicit(&pt->status, memory_order_acquire);
		char pv[64];

		pt_value(pt, pv, sizeof(pv));
		fputs(i ? ",{\"timeline\":" : "{\"timeline\":", out);
		fl__json_str(out, pt->tl->name);
		fprintf(out, ",\"timeline_id\":%" PRIu64 ",\"value\":", pt->tl->id);
		fl__json_str(out, pv);
		fprintf(out, ",\"status\":%d,\"timestamp_ns\":%" PRIu64 "}", s,
			s ? atomic_load(&pt->timestamp_ns) : 0);
	}
	fputc(']', out);
	if (extra)
		extra(out, f, true, true, arg);
	fputc('}', out);
}

uint64_t fl__fence_created_ns(const void *fence)
{
	return ((const struct fl_fence *)fence)->created_ns;
}

int fl__dump_write(FILE *out, bool json, fl__dump_extra_fn extra, void *arg)
{
	bool first = true;

	fl__registry_lock();
	fputs(json ? "\"timelines\":[" : "timelines:\n--------------\n", out);
	for (struct fl_timeline *tl = fl__registry_timelines(); tl; tl = tl->reg_next) {
		if (json) {
			fputs(first ? "" : ",", out);
			json_timeline(out, tl, extra, arg);
		} else {
			dump_timeline(out, tl, extra, arg);
		}
		first = false;
	}
	fputs(json ? "],\"fences\":[" : "fences:\n--------------\n", out);
	first = true;
	for (struct fl_fence *f = fl__registry_fences(); f; f = f->reg_next) {
		if (json) {
			fputs(first ? "" : ",", out);
			json_fence(out, f, extra, arg);
		} else {
			dump_fence(out, f, extra, arg);
		}
		first = false;
	}
	fl__registry_unlock();
	if (json)
		fputc(']', out);
	return ferror(out) ? -EIO : 0;
}

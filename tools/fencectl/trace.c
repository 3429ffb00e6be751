/* SPDX-License-Identifier: MIT */
/*
 * Loading a trace: one pass over traceEvents appends what each event says
 * to per-kind arrays, then sorting merges the pieces of one object (a
 * fence's begin, end and deadlines; a timeline's create, destroy and name)
 * and makes the lookups binary searches.
 */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct loader {
	struct trace *t;
	char *msg;
	size_t msg_size;
	size_t index; /* of the event being read */
	const char *what; /* its kind, for messages */
	size_t cap_processes, cap_threads, cap_timelines, cap_steps, cap_signals, cap_fences,
		cap_waits, cap_deadlocks, cap_displays, cap_resets;
};

static int bad(struct loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct loader *ld, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	n = (size_t)snprintf(ld->msg, ld->msg_size, "event %zu (%s): ", ld->index, ld->what);
	if (n < ld->msg_size) {
		va_start(ap, fmt);
		vsnprintf(ld->msg + n, ld->msg_size - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int grow(void *arrayp, size_t *cap, size_t n, size_t elem)
{
	void **array = arrayp, *more;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : 16;
	more = realloc(*array, c * elem);
	if (!more)
		return -ENOMEM;
	memset((char *)more + *cap * elem, 0, (c - *cap) * elem);
	*array = more;
	*cap = c;
	return 0;
}

/* Member getters: 1 when an optional member is absent, 0 when read, < 0 on error. */
static const char *type_of(const struct json *v)
{
	if (v->type == JSON_NUMBER && !v->is_int)
		return "a non-integer number";
	return json_type_name(v->type);
}

static int get_int(struct loader *ld, const struct json *obj, const char *where, const char *key,
		   bool required, int64_t *out)
{
	const struct json *v = json_get(obj, key);

	if (!v)
		return required ? bad(ld, "%s%s is missing", where, key) : 1;
	if (v->type != JSON_NUMBER || !v->is_int)
		return bad(ld, "%s%s is %s, not an integer", where, key, type_of(v));
	*out = v->i;
	return 0;
}

static int get_id(struct loader *ld, const struct json *obj, const char *where, const char *key,
		  int64_t *out)
{
	int r = get_int(ld, obj, where, key, true, out);

	if (r == 0 && *out <= 0)
		return bad(ld, "%s%s is %" PRId64 ", not a positive id", where, key, *out);
	return r;
}

static int get_num(struct loader *ld, const struct json *obj, const char *where, const char *key,
		   bool required, double *out)
{
	const struct json *v = json_get(obj, key);

	if (!v)
		return required ? bad(ld, "%s%s is missing", where, key) : 1;
	if (v->type != JSON_NUMBER)
		return bad(ld, "%s%s is %s, not a number", where, key, json_type_name(v->type));
	*out = v->num;
	return 0;
}

static int get_str(struct loader *ld, const struct json *obj, const char *where, const char *key,
		   bool required, const char **out)
{
	const struct json *v = json_get(obj, key);

	if (!v)
		return required ? bad(ld, "%s%s is missing", where, key) : 1;
	if (v->type != JSON_STRING)
		return bad(ld, "%s%s is %s, not a string", where, key, json_type_name(v->type));
	*out = v->str;
	return 0;
}

static int get_args(struct loader *ld, const struct json *ev, const struct json **out)
{
	const struct json *args = json_get(ev, "args");

	if (!args || args->type != JSON_OBJECT)
		return bad(ld, "args is %s, not an object",
			   args ? json_type_name(args->type) : "missing");
	*out = args;
	return 0;
}

static int get_status(struct loader *ld, const struct json *obj, const char *key, bool required,
		      int *out)
{
	int64_t v = 0;
	int r = get_int(ld, obj, "args.", key, required, &v);

	if (r < 0)
		return r;
	if (v < -4095 || v > 1)
		return bad(ld, "args.%s is %" PRId64 ", not 0, 1 or -errno", key, v);
	*out = (int)v;
	return r;
}

static int dup_str(const char *s, char **out)
{
	*out = strdup(s ? s : "");
	return *out ? 0 : -ENOMEM;
}

/* The [int, ...] array @key of @args into a new vector (empty if absent). */
static int get_int_array(struct loader *ld, const struct json *args, const char *key, int64_t **out,
			 size_t *n)
{
	const struct json *v = json_get(args, key);

	*out = NULL;
	*n = 0;
	if (!v)
		return 0;
	if (v->type != JSON_ARRAY)
		return bad(ld, "args.%s is %s, not an array", key, json_type_name(v->type));
	if (!v->n_items)
		return 0;
	*out = calloc(v->n_items, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < v->n_items; i++) {
		if (v->items[i]->type != JSON_NUMBER || !v->items[i]->is_int) {
			free(*out);
			*out = NULL;
			return bad(ld, "args.%s[%zu] is %s, not an integer", key, i,
				   type_of(v->items[i]));
		}
		(*out)[i] = v->items[i]->i;
	}
	*n = v->n_items;
	return 0;
}

static int add_process(struct loader *ld, int64_t pid, const char *name)
{
	struct trace *t = ld->t;
	struct tr_process *p;

	if (grow(&t->processes, &ld->cap_processes, t->n_processes, sizeof(*p)) < 0)
		return -ENOMEM;
	p = &t->processes[t->n_processes];
	p->pid = pid;
	p->name = NULL;
	if (name && dup_str(name, &p->name) < 0)
		return -ENOMEM;
	t->n_processes++;
	return 0;
}

/* A timeline piece: merged with the others of its id after loading. */
static int add_timeline(struct loader *ld, int64_t id, const char *name, int64_t creator,
			double create_ts, double destroy_ts)
{
	struct trace *t = ld->t;
	struct tr_timeline *tl;

	if (grow(&t->timelines, &ld->cap_timelines, t->n_timelines, sizeof(*tl)) < 0)
		return -ENOMEM;
	tl = &t->timelines[t->n_timelines];
	tl->id = id;
	tl->name = NULL;
	if (name && dup_str(name, &tl->name) < 0)
		return -ENOMEM;
	tl->creator_pid = creator;
	tl->create_ts = create_ts;
	tl->destroy_ts = destroy_ts;
	t->n_timelines++;
	return 0;
}

static int load_metadata(struct loader *ld, const struct json *ev, const char *name)
{
	const struct json *args = NULL;
	const char *label = NULL;
	int64_t pid = 0, tid = 0;
	int r;

	ld->what = name;
	if (strcmp(name, "process_name") && strcmp(name, "thread_name"))
		return 0;
	if ((r = get_int(ld, ev, "", "pid", true, &pid)) < 0 || (r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_str(ld, args, "args.", "name", true, &label)) < 0)
		return r;
	if (!strcmp(name, "process_name"))
		return pid == TR_TIMELINE_PID ? 0 : add_process(ld, pid, label);
	if ((r = get_int(ld, ev, "", "tid", true, &tid)) < 0)
		return r;
	if (pid == TR_TIMELINE_PID) {
		/* "timeline <name> #<id>": the name of a timeline whose create is not in the trace. */
		const char *hash = strrchr(label, '#');
		size_t len;
		char *copy;

		if (tid <= 0)
			return bad(ld, "tid %" PRId64 " is not a timeline id", tid);
		if (!strncmp(label, "timeline ", 9))
			label += 9;
		len = strlen(label);
		if (hash && hash > label) {
			len = (size_t)(hash - label);
			/* The space before '#' only: a hostile label may have another byte
			 * there, the end of a UTF-8 sequence the name must keep whole. */
			if (label[len - 1] == ' ')
				len--;
		}
		copy = strndup(label, len);
		if (!copy)
			return -ENOMEM;
		r = add_timeline(ld, tid, copy, 0, NAN, NAN);
		free(copy);
		return r;
	}
	if (grow(&ld->t->threads, &ld->cap_threads, ld->t->n_threads, sizeof(struct tr_thread)) < 0)
		return -ENOMEM;
	ld->t->threads[ld->t->n_threads] = (struct tr_thread){ pid, tid, NULL };
	if (dup_str(label, &ld->t->threads[ld->t->n_threads].name) < 0)
		return -ENOMEM;
	ld->t->n_threads++;
	return 0;
}

static int load_timeline_event(struct loader *ld, const struct json *ev, const char *name,
			       double ts)
{
	const struct json *args = NULL;
	const char *tlname = NULL;
	int64_t id = 0, creator = 0, value = 0;
	int r;

	ld->what = name;
	if ((r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_id(ld, args, "args.", "timeline", &id)) < 0)
		return r;
	if (!strcmp(name, "timeline_create")) {
		if ((r = get_str(ld, args, "args.", "name", true, &tlname)) < 0 ||
		    (r = get_int(ld, args, "args.", "pid", false, &creator)) < 0 ||
		    (r = get_int(ld, args, "args.", "value", false, &value)) < 0)
			return r;
		return add_timeline(ld, id, tlname, creator, ts, NAN);
	}
	if (!strcmp(name, "timeline_destroy"))
		return add_timeline(ld, id, NULL, 0, NAN, ts);
	return 0;
}

static int load_value_slice(struct loader *ld, const struct json *ev, double ts)
{
	struct trace *t = ld->t;
	const struct json *args = NULL;
	struct tr_step *s;
	double dur = 0;
	int64_t id = 0, value = 0;
	int r;

	ld->what = "value slice";
	if ((r = get_num(ld, ev, "", "dur", true, &dur)) < 0 || (r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_id(ld, args, "args.", "timeline", &id)) < 0 ||
	    (r = get_int(ld, args, "args.", "value", true, &value)) < 0)
		return r;
	if (dur < 0)
		return bad(ld, "dur is negative");
	if (grow(&t->steps, &ld->cap_steps, t->n_steps, sizeof(*s)) < 0)
		return -ENOMEM;
	s = &t->steps[t->n_steps++];
	*s = (struct tr_step){ id, ts, dur, value };
	return 0;
}

static int load_signal(struct loader *ld, const struct json *ev, double ts)
{
	struct trace *t = ld->t;
	const struct json *args = NULL;
	struct tr_signal s = { .ts = ts };
	int r;

	ld->what = "signal";
	if ((r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_id(ld, args, "args.", "timeline", &s.timeline)) < 0 ||
	    (r = get_int(ld, args, "args.", "value", true, &s.value)) < 0 ||
	    (r = get_status(ld, args, "status", true, &s.status)) < 0 ||
	    (r = get_int(ld, args, "args.", "by_pid", true, &s.by_pid)) < 0 ||
	    (r = get_int(ld, args, "args.", "by_tid", false, &s.by_tid)) < 0)
		return r;
	s.from = s.value;
	if ((r = get_int(ld, args, "args.", "from", false, &s.from)) < 0)
		return r;
	if (s.status == 1)
		return bad(ld, "args.status is 1: a signal is done or failed");
	if (grow(&t->signals, &ld->cap_signals, t->n_signals, sizeof(s)) < 0)
		return -ENOMEM;
	r = get_int_array(ld, args, "fences", &s.fences, &s.n_fences);
	if (r < 0)
		return r;
	t->signals[t->n_signals++] = s;
	return 0;
}

/* A 'fail' instant (docs/trace-format.md): the points it failed are the fences' own ends. */
static int load_reset(struct loader *ld, const struct json *ev, double ts)
{
	struct trace *t = ld->t;
	const struct json *args = NULL;
	struct tr_reset s = { .ts = ts };
	int r;

	ld->what = "fail";
	if ((r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_id(ld, args, "args.", "timeline", &s.timeline)) < 0 ||
	    (r = get_int(ld, args, "args.", "value", true, &s.value)) < 0 ||
	    (r = get_status(ld, args, "status", true, &s.status)) < 0 ||
	    (r = get_int(ld, args, "args.", "failed", false, &s.failed)) < 0 ||
	    (r = get_int(ld, args, "args.", "by_pid", false, &s.by_pid)) < 0)
		return r;
	if (s.status >= 0)
		return bad(ld, "args.status is not an error");
	if (grow(&t->resets, &ld->cap_resets, t->n_resets, sizeof(s)) < 0)
		return -ENOMEM;
	t->resets[t->n_resets++] = s;
	return 0;
}

static struct tr_fence *new_fence(struct loader *ld, int64_t id)
{
	struct trace *t = ld->t;
	struct tr_fence *f;

	if (grow(&t->fences, &ld->cap_fences, t->n_fences, sizeof(*f)) < 0)
		return NULL;
	f = &t->fences[t->n_fences++];
	memset(f, 0, sizeof(*f));
	f->id = id;
	f->kind = TR_FENCE_UNKNOWN;
	return f;
}

static int get_points(struct loader *ld, const struct json *args, struct tr_fence *f)
{
	const struct json *v = json_get(args, "points");

	if (!v)
		return 0;
	if (v->type != JSON_ARRAY)
		return bad(ld, "args.points is %s, not an array", json_type_name(v->type));
	if (!v->n_items)
		return 0;
	f->points = calloc(v->n_items, sizeof(*f->points));
	if (!f->points)
		return -ENOMEM;
	for (size_t i = 0; i < v->n_items; i++) {
		const struct json *p = v->items[i];

		if (p->type != JSON_ARRAY || p->n_items != 2 || p->items[0]->type != JSON_NUMBER ||
		    !p->items[0]->is_int || p->items[0]->i <= 0 ||
		    p->items[1]->type != JSON_NUMBER || !p->items[1]->is_int)
			return bad(ld, "args.points[%zu] is not [timeline id, value]", i);
		f->points[i] = (struct tr_point){ p->items[0]->i, p->items[1]->i };
		f->n_points = i + 1;
	}
	return 0;
}

static int load_fence(struct loader *ld, const struct json *ev, const char *ph, double ts)
{
	const struct json *args = NULL;
	const char *name = NULL, *kind = NULL;
	struct tr_fence *f;
	int64_t id = 0, pid = 0, tid = 0;
	int r;

	ld->what = *ph == 'b' ? "fence begin" : "fence end";
	if ((r = get_str(ld, ev, "", "name", true, &name)) < 0 ||
	    (r = get_int(ld, ev, "", "pid", true, &pid)) < 0 ||
	    (r = get_int(ld, ev, "", "tid", true, &tid)) < 0 || (r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_id(ld, args, "args.", "fence", &id)) < 0)
		return r;
	f = new_fence(ld, id);
	if (!f || dup_str(name, &f->name) < 0)
		return -ENOMEM;
	f->pid = pid;
	f->tid = tid;
	if (*ph == 'b') {
		f->has_begin = true;
		f->begin_ts = ts;
		if ((r = get_str(ld, args, "args.", "kind", false, &kind)) < 0)
			return r;
		if (kind)
			f->kind = !strcmp(kind, "create")   ? TR_FENCE_CREATE
				  : !strcmp(kind, "merge")  ? TR_FENCE_MERGE
				  : !strcmp(kind, "import") ? TR_FENCE_IMPORT
							    : TR_FENCE_UNKNOWN;
		if ((r = get_points(ld, args, f)) < 0)
			return r;
		return get_int_array(ld, args, "inputs", &f->inputs, &f->n_inputs);
	}
	f->has_end = true;
	f->end_ts = ts;
	if ((r = get_status(ld, args, "status", true, &f->status)) < 0 ||
	    (r = get_int(ld, args, "args.", "timeline", false, &f->end_point.timeline)) < 0)
		return r;
	if (r == 0) {
		if ((r = get_int(ld, args, "args.", "value", true, &f->end_point.value)) < 0)
			return r;
		f->has_end_point = f->end_point.timeline > 0;
	}
	return 0;
}

static int load_deadline(struct loader *ld, const struct json *ev)
{
	const struct json *args = NULL;
	struct tr_fence *f;
	double deadline = 0;
	int64_t id = 0, pid = 0;
	int r;

	ld->what = "deadline";
	if ((r = get_int(ld, ev, "", "pid", false, &pid)) < 0 ||
	    (r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_id(ld, args, "args.", "fence", &id)) < 0 ||
	    (r = get_num(ld, args, "args.", "deadline_us", true, &deadline)) < 0)
		return r;
	f = new_fence(ld, id);
	if (!f)
		return -ENOMEM;
	f->has_deadline = true;
	f->deadline = deadline;
	f->deadline_pid = pid;
	return 0;
}

static int load_wait(struct loader *ld, const struct json *ev, double ts)
{
	struct trace *t = ld->t;
	const struct json *args = NULL;
	const char *name = NULL;
	struct tr_wait w = { .ts = ts };
	double dur = 0;
	int r;

	ld->what = "wait";
	if ((r = get_str(ld, ev, "", "name", true, &name)) < 0 ||
	    (r = get_int(ld, ev, "", "pid", true, &w.pid)) < 0 ||
	    (r = get_int(ld, ev, "", "tid", true, &w.tid)) < 0 ||
	    (r = get_num(ld, ev, "", "dur", true, &dur)) < 0 || (r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_id(ld, args, "args.", "fence", &w.fence)) < 0 ||
	    (r = get_status(ld, args, "result", true, &w.result)) < 0)
		return r;
	if (dur < 0)
		return bad(ld, "dur is negative");
	w.end = ts + dur;
	if (grow(&t->waits, &ld->cap_waits, t->n_waits, sizeof(w)) < 0 ||
	    dup_str(name, &w.name) < 0)
		return -ENOMEM;
	t->waits[t->n_waits++] = w;
	return 0;
}

static int load_deadlock(struct loader *ld, const struct json *ev, double ts)
{
	struct trace *t = ld->t;
	const struct json *args = json_get(ev, "args");
	const char *text = "";
	int r;

	ld->what = "deadlock";
	if (args && (r = get_str(ld, args, "args.", "text", false, &text)) < 0)
		return r;
	if (grow(&t->deadlocks, &ld->cap_deadlocks, t->n_deadlocks, sizeof(*t->deadlocks)) < 0)
		return -ENOMEM;
	t->deadlocks[t->n_deadlocks].ts = ts;
	if (dup_str(text, &t->deadlocks[t->n_deadlocks].text) < 0)
		return -ENOMEM;
	t->n_deadlocks++;
	return 0;
}

/* A display instant; other names (and the frame slices, which the reader recomputes) are skipped. */
static int load_display(struct loader *ld, const struct json *ev, const char *name, double ts)
{
	static const char *const names[] = { "post",	"flip",		  "vsync",
					     "release", "acquire_failed", "drop" };
	struct trace *t = ld->t;
	const struct json *args = NULL;
	struct tr_display d = { .ts = ts, .interface = -1, .vsync = NAN, .ready = NAN };
	size_t k = 0;
	int r;

	while (k < sizeof(names) / sizeof(names[0]) && strcmp(names[k], name))
		k++;
	if (k == sizeof(names) / sizeof(names[0]))
		return 0;
	d.kind = (enum tr_display_kind)k;
	ld->what = name;
	if ((r = get_args(ld, ev, &args)) < 0 ||
	    (r = get_int(ld, args, "args.", "device", true, &d.device)) < 0 ||
	    (r = get_int(ld, args, "args.", "post", true, &d.post)) < 0)
		return r;
	switch (d.kind) {
	case TR_DISPLAY_POST:
		r = get_int(ld, args, "args.", "pid", true, &d.pid);
		if (r >= 0)
			r = get_int(ld, args, "args.", "buffers", true, &d.buffers);
		if (r >= 0)
			r = get_int(ld, args, "args.", "acquire_count", false, &d.acquire);
		break;
	case TR_DISPLAY_FLIP:
		r = get_num(ld, args, "args.", "ready_us", true, &d.ready);
		if (r >= 0)
			r = get_int(ld, args, "args.", "interface", false, &d.interface);
		if (r >= 0)
			r = get_num(ld, args, "args.", "vsync_us", false, &d.vsync);
		break;
	case TR_DISPLAY_VSYNC:
		r = get_int(ld, args, "args.", "interface", true, &d.interface);
		break;
	case TR_DISPLAY_RELEASE:
		r = get_int(ld, args, "args.", "by_post", true, &d.by_post);
		break;
	case TR_DISPLAY_ACQUIRE_FAILED:
	case TR_DISPLAY_DROP:
		if (d.kind == TR_DISPLAY_ACQUIRE_FAILED)
			r = get_int(ld, args, "args.", "buffer", true, &d.buffer);
		if (r >= 0)
			r = get_status(ld, args, "status", true, &d.status);
		if (r >= 0 && d.status >= 0)
			return bad(ld, "args.status is %d, not -errno", d.status);
		break;
	}
	if (r < 0)
		return r;
	if (d.device < 0 || d.post < 0)
		return bad(ld, "args.device or args.post is negative");
	if (grow(&t->displays, &ld->cap_displays, t->n_displays, sizeof(d)) < 0)
		return -ENOMEM;
	t->displays[t->n_displays++] = d;
	return 0;
}

static int load_event(struct loader *ld, const struct json *ev, double *min_ts, double *max_ts)
{
	const char *ph = "", *cat = "", *name = "";
	double ts = 0, dur = 0;
	bool known;
	int r;

	ld->what = "event";
	if (ev->type != JSON_OBJECT)
		return bad(ld, "%s, not an object", json_type_name(ev->type));
	if ((r = get_str(ld, ev, "", "ph", true, &ph)) < 0 ||
	    (r = get_str(ld, ev, "", "cat", false, &cat)) < 0 ||
	    (r = get_str(ld, ev, "", "name", false, &name)) < 0)
		return r;
	if (!strcmp(ph, "M"))
		return load_metadata(ld, ev, name);
	ld->what = name;
	known = !strcmp(ph, "X") || !strcmp(ph, "i") || !strcmp(ph, "I") || !strcmp(ph, "b") ||
		!strcmp(ph, "e");
	if ((r = get_num(ld, ev, "", "ts", known, &ts)) < 0)
		return r;
	if (r == 1)
		return 0; /* a kind of event this reader does not know, without a time */
	/* Its reader checks the dur of an event it knows; others may have any. */
	if (!strcmp(ph, "X") && get_num(ld, ev, "", "dur", false, &dur) != 0)
		dur = 0;
	if (ts < *min_ts)
		*min_ts = ts;
	if (ts + (dur > 0 ? dur : 0) > *max_ts)
		*max_ts = ts + (dur > 0 ? dur : 0);

	if (!strcmp(ph, "i") || !strcmp(ph, "I")) {
		if (!strcmp(cat, "timeline"))
			return load_timeline_event(ld, ev, name, ts);
		if (!strcmp(cat, "signal") && !strcmp(name, "signal"))
			return load_signal(ld, ev, ts);
		if (!strcmp(cat, "signal") && !strcmp(name, "fail"))
			return load_reset(ld, ev, ts);
		if (!strcmp(cat, "deadline") && !strcmp(name, "deadline"))
			return load_deadline(ld, ev);
		if (!strcmp(cat, "deadlock"))
			return load_deadlock(ld, ev, ts);
		if (!strcmp(cat, "display"))
			return load_display(ld, ev, name, ts);
		return 0;
	}
	if (!strcmp(ph, "X")) {
		if (!strcmp(cat, "timeline"))
			return load_value_slice(ld, ev, ts);
		if (!strcmp(cat, "wait"))
			return load_wait(ld, ev, ts);
		return 0;
	}
	if ((!strcmp(ph, "b") || !strcmp(ph, "e")) && !strcmp(cat, "fence"))
		return load_fence(ld, ev, ph, ts);
	return 0;
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_dbl(double a, double b)
{
	return a < b ? -1 : a > b;
}

static int cmp_process(const void *a, const void *b)
{
	return cmp_i64(((const struct tr_process *)a)->pid, ((const struct tr_process *)b)->pid);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct tr_thread *x = a, *y = b;

	return x->pid != y->pid ? cmp_i64(x->pid, y->pid) : cmp_i64(x->tid, y->tid);
}

static int cmp_timeline(const void *a, const void *b)
{
	return cmp_i64(((const struct tr_timeline *)a)->id, ((const struct tr_timeline *)b)->id);
}

static int cmp_step(const void *a, const void *b)
{
	const struct tr_step *x = a, *y = b;

	return x->timeline != y->timeline ? cmp_i64(x->timeline, y->timeline)
					  : cmp_dbl(x->ts, y->ts);
}

static int cmp_signal(const void *a, const void *b)
{
	const struct tr_signal *x = a, *y = b;

	if (x->timeline != y->timeline)
		return cmp_i64(x->timeline, y->timeline);
	if (x->ts != y->ts)
		return cmp_dbl(x->ts, y->ts);
	return cmp_i64(x->value, y->value);
}

/* By id; within an id, the begin first, so that merging keeps its name. */
static int cmp_fence(const void *a, const void *b)
{
	const struct tr_fence *x = a, *y = b;

	if (x->id != y->id)
		return cmp_i64(x->id, y->id);
	return (int)y->has_begin - (int)x->has_begin;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct tr_wait *x = a, *y = b;

	return x->pid != y->pid ? cmp_i64(x->pid, y->pid) : cmp_dbl(x->end, y->end);
}

static int cmp_display(const void *a, const void *b)
{
	const struct tr_display *x = a, *y = b;
	int c = cmp_i64(x->device, y->device);

	return c ? c : cmp_dbl(x->ts, y->ts);
}

static int cmp_deadlock(const void *a, const void *b)
{
	return cmp_dbl(((const struct tr_deadlock *)a)->ts, ((const struct tr_deadlock *)b)->ts);
}

/* qsort() and bsearch() want a non-NULL array even when it is empty. */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static void *find(const void *key, const void *base, size_t n, size_t size,
		  int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

static void free_fence(struct tr_fence *f)
{
	free(f->name);
	free(f->points);
	free(f->inputs);
}

/* Folds the pieces of each fence (begin, end, deadlines) into one. */
static int merge_fences(struct trace *t, char *msg, size_t msg_size)
{
	size_t out = 0;

	sort(t->fences, t->n_fences, sizeof(*t->fences), cmp_fence);
	/* Refuse before moving anything, so that trace_free() frees every piece once. */
	for (size_t i = 0; i < t->n_fences;) {
		bool begin = false, end = false;
		size_t j;

		for (j = i; j < t->n_fences && t->fences[j].id == t->fences[i].id; j++) {
			if ((begin && t->fences[j].has_begin) || (end && t->fences[j].has_end)) {
				snprintf(msg, msg_size, "fence %" PRId64 " %s twice",
					 t->fences[i].id,
					 t->fences[j].has_begin ? "begins" : "ends");
				return -EINVAL;
			}
			begin |= t->fences[j].has_begin;
			end |= t->fences[j].has_end;
		}
		i = j;
	}
	for (size_t i = 0; i < t->n_fences;) {
		struct tr_fence f = t->fences[i];
		size_t j;

		for (j = i + 1; j < t->n_fences && t->fences[j].id == f.id; j++) {
			struct tr_fence *p = &t->fences[j];

			if (p->has_end) {
				f.has_end = true;
				f.end_ts = p->end_ts;
				f.status = p->status;
				f.has_end_point = p->has_end_point;
				f.end_point = p->end_point;
				if (!f.has_begin) {
					f.pid = p->pid;
					f.tid = p->tid;
				}
			}
			if (p->has_deadline && (!f.has_deadline || p->deadline < f.deadline)) {
				f.has_deadline = true;
				f.deadline = p->deadline;
				f.deadline_pid = p->deadline_pid;
			}
			if (!f.name) {
				f.name = p->name;
				p->name = NULL;
			}
			free_fence(p);
		}
		/* No end: still pending when the trace ended. */
		if (!f.has_end)
			f.status = 1;
		t->fences[out++] = f;
		i = j;
	}
	t->n_fences = out;
	return 0;
}

/*
 * Folds the pieces of each timeline and adds those only signals, slices or
 * points name. A create event's name beats the track's (metadata) name.
 */
static int merge_timelines(struct loader *ld)
{
	struct trace *t = ld->t;
	size_t out = 0;

	for (size_t i = 0; i < t->n_steps; i++)
		if (add_timeline(ld, t->steps[i].timeline, NULL, 0, NAN, NAN) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < t->n_signals; i++)
		if (add_timeline(ld, t->signals[i].timeline, NULL, 0, NAN, NAN) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < t->n_fences; i++)
		for (size_t k = 0; k < t->fences[i].n_points; k++)
			if (add_timeline(ld, t->fences[i].points[k].timeline, NULL, 0, NAN, NAN) <
			    0)
				return -ENOMEM;
	sort(t->timelines, t->n_timelines, sizeof(*t->timelines), cmp_timeline);
	for (size_t i = 0; i < t->n_timelines;) {
		struct tr_timeline tl = t->timelines[i];
		int rank = tl.name ? (!isnan(tl.create_ts) ? 2 : 1) : 0;
		size_t j;

		for (j = i + 1; j < t->n_timelines && t->timelines[j].id == tl.id; j++) {
			struct tr_timeline *p = &t->timelines[j];
			int prank = p->name ? (!isnan(p->create_ts) ? 2 : 1) : 0;

			if (!isnan(p->create_ts)) {
				tl.create_ts = p->create_ts;
				tl.creator_pid = p->creator_pid;
			}
			if (!isnan(p->destroy_ts))
				tl.destroy_ts = p->destroy_ts;
			if (prank > rank) {
				char *swap = tl.name;

				tl.name = p->name;
				p->name = swap;
				rank = prank;
			}
			free(p->name);
		}
		t->timelines[out++] = tl;
		i = j;
	}
	t->n_timelines = out;

	sort(t->steps, t->n_steps, sizeof(*t->steps), cmp_step);
	sort(t->signals, t->n_signals, sizeof(*t->signals), cmp_signal);
	for (size_t i = 0, s = 0, g = 0; i < t->n_timelines; i++) {
		struct tr_timeline *tl = &t->timelines[i];

		size_t first_step;

		while (s < t->n_steps && t->steps[s].timeline < tl->id)
			s++;
		first_step = s;
		while (s < t->n_steps && t->steps[s].timeline == tl->id)
			s++;
		/* No pointer arithmetic on a NULL array (a trace without slices). */
		tl->steps = s > first_step ? t->steps + first_step : NULL;
		tl->n_steps = s - first_step;
		while (g < t->n_signals && t->signals[g].timeline < tl->id)
			g++;
		tl->first_signal = g;
		while (g < t->n_signals && t->signals[g].timeline == tl->id)
			g++;
		tl->n_signals = g - tl->first_signal;
	}
	return 0;
}

/* One process per pid: the named ones, and every pid that did something. */
static int merge_processes(struct loader *ld)
{
	struct trace *t = ld->t;
	size_t out = 0;

	for (size_t i = 0; i < t->n_fences; i++)
		if (add_process(ld, t->fences[i].pid, NULL) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < t->n_waits; i++)
		if (add_process(ld, t->waits[i].pid, NULL) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < t->n_signals; i++)
		if (t->signals[i].by_pid && add_process(ld, t->signals[i].by_pid, NULL) < 0)
			return -ENOMEM;
	sort(t->processes, t->n_processes, sizeof(*t->processes), cmp_process);
	for (size_t i = 0; i < t->n_processes;) {
		struct tr_process p = t->processes[i];
		size_t j;

		for (j = i + 1; j < t->n_processes && t->processes[j].pid == p.pid; j++) {
			if (!p.name) {
				p.name = t->processes[j].name;
				t->processes[j].name = NULL;
			}
			free(t->processes[j].name);
		}
		t->processes[out++] = p;
		i = j;
	}
	t->n_processes = out;
	sort(t->threads, t->n_threads, sizeof(*t->threads), cmp_thread);
	return 0;
}

int trace_load(const struct json *root, struct trace *t, char *msg, size_t msg_size)
{
	struct loader ld = { .t = t, .msg = msg, .msg_size = msg_size };
	const struct json *events, *other, *producer, *format;
	double min_ts = INFINITY, max_ts = -INFINITY, v = 0;
	int r;

	memset(t, 0, sizeof(*t));
	snprintf(msg, msg_size, "?");
	if (root->type != JSON_OBJECT) {
		snprintf(msg, msg_size, "not a fenceline trace: the top level is %s, not an object",
			 json_type_name(root->type));
		return -EPROTO;
	}
	other = json_get(root, "otherData");
	producer = json_get(other, "producer");
	if (!producer || producer->type != JSON_STRING || strcmp(producer->str, "fenceline")) {
		snprintf(msg, msg_size,
			 "not a fenceline trace: otherData.producer is not \"fenceline\"");
		return -EPROTO;
	}
	format = json_get(other, "format");
	if (!format || format->type != JSON_NUMBER || !format->is_int || format->i < 1) {
		snprintf(msg, msg_size, "otherData.format is missing or not a positive integer");
		return -EINVAL;
	}
	if (format->i > 1) {
		snprintf(msg, msg_size,
			 "trace format %" PRId64 " is newer than this fencectl reads (1)",
			 format->i);
		return -EPROTO;
	}
	events = json_get(root, "traceEvents");
	if (!events || events->type != JSON_ARRAY) {
		snprintf(msg, msg_size, "traceEvents is %s, not an array",
			 events ? json_type_name(events->type) : "missing");
		return -EINVAL;
	}
	for (size_t i = 0; i < events->n_items; i++) {
		ld.index = i;
		r = load_event(&ld, events->items[i], &min_ts, &max_ts);
		if (r < 0)
			goto err;
	}
	t->n_events = events->n_items;
	r = merge_fences(t, msg, msg_size);
	if (r == 0)
		r = merge_timelines(&ld);
	if (r == 0)
		r = merge_processes(&ld);
	if (r < 0)
		goto err;
	sort(t->waits, t->n_waits, sizeof(*t->waits), cmp_wait);
	sort(t->deadlocks, t->n_deadlocks, sizeof(*t->deadlocks), cmp_deadlock);
	sort(t->displays, t->n_displays, sizeof(*t->displays), cmp_display);

	t->start_us = min_ts;
	t->end_us = max_ts;
	if (json_get(other, "start_us") &&
	    get_num(&ld, other, "otherData.", "start_us", true, &v) == 0)
		t->start_us = v;
	if (json_get(other, "end_us") &&
	    get_num(&ld, other, "otherData.", "end_us", true, &v) == 0 && v > t->end_us)
		t->end_us = v;
	if (!isfinite(t->start_us))
		t->start_us = isfinite(t->end_us) ? t->end_us : 0;
	if (!isfinite(t->end_us) || t->end_us < t->start_us)
		t->end_us = t->start_us;
	return 0;
err:
	if (r == -ENOMEM)
		snprintf(msg, msg_size, "out of memory");
	trace_free(t);
	return r;
}

void trace_free(struct trace *t)
{
	for (size_t i = 0; i < t->n_processes; i++)
		free(t->processes[i].name);
	for (size_t i = 0; i < t->n_threads; i++)
		free(t->threads[i].name);
	for (size_t i = 0; i < t->n_timelines; i++)
		free(t->timelines[i].name);
	for (size_t i = 0; i < t->n_signals; i++)
		free(t->signals[i].fences);
	for (size_t i = 0; i < t->n_fences; i++)
		free_fence(&t->fences[i]);
	for (size_t i = 0; i < t->n_waits; i++)
		free(t->waits[i].name);
	for (size_t i = 0; i < t->n_deadlocks; i++)
		free(t->deadlocks[i].text);
	free(t->displays);
	free(t->processes);
	free(t->threads);
	free(t->timelines);
	free(t->steps);
	free(t->signals);
	free(t->fences);
	free(t->waits);
	free(t->deadlocks);
	free(t->resets);
	memset(t, 0, sizeof(*t));
}

const struct tr_fence *trace_fence(const struct trace *t, int64_t id)
{
	struct tr_fence key = { .id = id };

	/* cmp_fence also orders by has_begin, but ids are unique after merging. */
	for (size_t lo = 0, hi = t->n_fences; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->fences[mid].id == key.id)
			return &t->fences[mid];
		if (t->fences[mid].id < key.id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct tr_timeline *trace_timeline(const struct trace *t, int64_t id)
{
	struct tr_timeline key = { .id = id };

	return find(&key, t->timelines, t->n_timelines, sizeof(key), cmp_timeline);
}

const struct tr_process *trace_process(const struct trace *t, int64_t pid)
{
	struct tr_process key = { .pid = pid };

	return find(&key, t->processes, t->n_processes, sizeof(key), cmp_process);
}

const struct tr_signal *trace_signal_reaching(const struct trace *t, int64_t tl, int64_t value)
{
	const struct tr_timeline *timeline = trace_timeline(t, tl);
	const struct tr_signal *s;
	size_t lo = 0, hi;

	if (!timeline || !timeline->n_signals)
		return NULL;
	s = &t->signals[timeline->first_signal];
	hi = timeline->n_signals;
	/*
	 * Values only grow along a timeline, so the first signal reaching @value
	 * is found by bisection. A malformed trace whose values fall back gets
	 * some signal reaching it, never a wrong memory access.
	 */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].value < value)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < timeline->n_signals; lo++)
		if (s[lo].status == 0 && s[lo].value >= value)
			return &s[lo];
	return NULL;
}

const struct tr_wait *trace_last_wait_before(const struct trace *t, int64_t pid, int64_t tid,
					     double ts)
{
	size_t lo = 0, hi = t->n_waits;

	/* The first wait of a later pid, or of @pid ending after @ts. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tr_wait *w = &t->waits[mid];

		if (w->pid < pid || (w->pid == pid && w->end <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct tr_wait *w = &t->waits[lo];

		if (w->pid != pid)
			break;
		if ((tid == 0 || w->tid == tid) && w->ts < ts)
			return w;
	}
	return NULL;
}

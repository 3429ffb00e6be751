/* SPDX-License-Identifier: MIT */
/*
 * Heap tables (<fenceline/heap-table.h>, docs/heap-table.md): loading,
 * opening the heaps, and allocating by the set of devices that will touch
 * a buffer. The parser is table-parse.c, the kinds table-kinds.c.
 *
 * fl_heap_table_alloc() and fl_heap_table_explain() share one evaluation,
 * judge(), so that what explain says is what alloc does.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/heap-table.h>
#include <fenceline/heap.h>

#include "table-internal.h"

#define TBL_REASON_MAX 192

static void table_free(struct fl_heap_table *t)
{
	for (size_t i = 0; i < t->num_heaps; i++)
		fl_heap_close(t->heaps[i].heap);
	free(t->heaps);
	free(t->devices);
	free(t);
}

void fl_heap_table_close(struct fl_heap_table *table)
{
	if (table)
		table_free(table);
}

static int open_heaps(struct fl_heap_table *t, char *err, size_t err_size)
{
	for (size_t i = 0; i < t->num_heaps; i++) {
		struct tbl_heap *h = &t->heaps[i];
		const char *why = "not available on this machine";
		int r;

		if (!h->kind->open) {
			h->unavailable = h->kind->unavailable;
			continue;
		}
		r = h->kind->open(h, &h->heap, &why);
		if (r == -ENODEV) {
			h->heap = NULL;
			h->unavailable = why;
		} else if (r) {
			h->heap = NULL;
			fl__ini_msg(err, err_size, "cannot open heap '%s': %s", h->name,
				    strerror(-r));
			return r;
		}
	}
	return 0;
}

int fl_heap_table_load_string(const char *text, size_t len, const char *origin,
			      struct fl_heap_table **ret_table, char *err, size_t err_size)
{
	struct fl_heap_table *t;
	long page;
	int r;

	if ((!text && len) || !ret_table) {
		fl__ini_msg(err, err_size, "invalid argument");
		return -EINVAL;
	}
	if (!origin)
		origin = "<string>";
	if (len > FL_HEAP_TABLE_MAX_BYTES) {
		fl__ini_msg(err, err_size, "%s: %zu bytes, more than a table may have (%d)", origin,
			    len, FL_HEAP_TABLE_MAX_BYTES);
		return -EFBIG;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		fl__ini_msg(err, err_size, "%s: out of memory", origin);
		return -ENOMEM;
	}
	page = sysconf(_SC_PAGESIZE);
	t->page_size = page > 0 ? (size_t)page : 4096;
	r = fl__tbl_parse(text ? text : "", len, origin, t, err, err_size);
	if (r == -ENOMEM)
		fl__ini_msg(err, err_size, "%s: out of memory", origin);
	if (!r)
		r = open_heaps(t, err, err_size);
	if (r) {
		table_free(t);
		return r;
	}
	*ret_table = t;
	return 0;
}

static int read_file(const char *path, char **ret_text, size_t *ret_len, char *err, size_t err_size)
{
	struct stat st;
	size_t len = 0, cap;
	char *text;
	int fd, r = 0;

	/* O_NONBLOCK: a FIFO named by mistake must not hang the caller. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		fl__ini_msg(err, err_size, "%s: cannot open: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		fl__ini_msg(err, err_size, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		fl__ini_msg(err, err_size, "%s: is a directory, not a table file", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		fl__ini_msg(err, err_size, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_size > FL_HEAP_TABLE_MAX_BYTES) {
		r = -EFBIG;
		fl__ini_msg(err, err_size, "%s: %jd bytes, more than a table may have (%d)", path,
			    (intmax_t)st.st_size, FL_HEAP_TABLE_MAX_BYTES);
		goto out;
	}
	/* The size is a hint: the file may change under us, and /proc files say 0. */
	cap = (size_t)st.st_size + 1;
	text = malloc(cap);
	if (!text) {
		r = -ENOMEM;
		fl__ini_msg(err, err_size, "%s: out of memory", path);
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *more = cap > FL_HEAP_TABLE_MAX_BYTES ? NULL : realloc(text, 2 * cap);

			if (!more) {
				r = cap > FL_HEAP_TABLE_MAX_BYTES ? -EFBIG : -ENOMEM;
				fl__ini_msg(err, err_size, "%s: %s", path,
					    r == -EFBIG ? "more bytes than a table may have"
							: "out of memory");
				free(text);
				goto out;
			}
			text = more;
			cap *= 2;
		}
		n = read(fd, text + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			fl__ini_msg(err, err_size, "%s: cannot read: %s", path, strerror(errno));
			free(text);
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > FL_HEAP_TABLE_MAX_BYTES) {
		r = -EFBIG;
		fl__ini_msg(err, err_size, "%s: more bytes than a table may have (%d)", path,
			    FL_HEAP_TABLE_MAX_BYTES);
		free(text);
		goto out;
	}
	*ret_text = text;
	*ret_len = len;
out:
	close(fd);
	return r;
}

int fl_heap_table_load_file(const char *path, struct fl_heap_table **ret_table, char *err,
			    size_t err_size)
{
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!path || !ret_table) {
		fl__ini_msg(err, err_size, "invalid argument");
		return -EINVAL;
	}
	r = read_file(path, &text, &len, err, err_size);
	if (r)
		return r;
	r = fl_heap_table_load_string(text, len, path, ret_table, err, err_size);
	free(text);
	return r;
}

int fl_heap_table_load_default(struct fl_heap_table **ret_table, char *err, size_t err_size)
{
	return fl_heap_table_load_string(fl__tbl_default_text, fl__tbl_default_len,
					 "heaps.ini (built-in)", ret_table, err, err_size);
}

int fl_heap_table_load_system(struct fl_heap_table **ret_table, char *err, size_t err_size)
{
	/* secure_getenv: a setuid program must not read a file its caller names. */
	const char *path = secure_getenv("FENCELINE_HEAP_TABLE");

	if (path && *path)
		return fl_heap_table_load_file(path, ret_table, err, err_size);
	return fl_heap_table_load_default(ret_table, err, err_size);
}

int fl_heap_table_get_heap(struct fl_heap_table *table, const char *name, struct fl_heap **ret_heap)
{
	if (!table || !name || !ret_heap)
		return -EINVAL;
	for (size_t i = 0; i < table->num_heaps; i++) {
		if (strcmp(table->heaps[i].name, name))
			continue;
		if (!table->heaps[i].heap)
			return -ENODEV;
		*ret_heap = table->heaps[i].heap;
		return 0;
	}
	return -ENOENT;
}

int fl_heap_table_buffer_free(struct fl_heap_table *table, int fd)
{
	struct stat st;

	if (!table)
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	/* fl_heap_buffer_free() says -EINVAL for a buffer that is not its heap's. */
	for (size_t i = 0; i < table->num_heaps; i++) {
		int r;

		if (!table->heaps[i].heap)
			continue;
		r = fl_heap_buffer_free(table->heaps[i].heap, fd);
		if (r != -EINVAL)
			return r;
	}
	return -EINVAL;
}

/* The deprecated name, kept exported for one release: the same code. */
int fl_heap_table_free(struct fl_heap_table *table, int fd)
	__attribute__((alias("fl_heap_table_buffer_free")));

/* The evaluation of a request, shared by alloc and explain. */

enum stage {
	ST_UNLISTED, /* not listed by every device */
	ST_UNAVAILABLE,
	ST_CONSTRAINT, /* a constraint rules it out */
	ST_CANDIDATE, /* would be tried */
	ST_NOMEM, /* was tried, and was out of memory */
};

struct verdict {
	size_t heap;
	unsigned int worst, sum; /* positions in the devices' lists */
	enum stage stage;
	int err;
	uint64_t size; /* what it would allocate */
	char reason[TBL_REASON_MAX];
};

struct request {
	size_t dev[TBL_MAX_REQUEST];
	size_t n;
	size_t len;
	char label[TBL_MAX_REQUEST * (TBL_NAME_MAX + 2)]; /* "camera, display-scanout" */
	struct verdict v[TBL_MAX_HEAPS];
	size_t nv;
};

static int resolve(struct fl_heap_table *t, const char *const *names, size_t n, size_t len,
		   struct request *q, char *err, size_t err_size)
{
	size_t at = 0;

	q->n = 0;
	q->len = len;
	q->label[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t d = 0, k = 0;

		if (!names[i]) {
			fl__ini_msg(err, err_size, "device name %zu is NULL", i);
			return -EINVAL;
		}
		while (d < t->num_devices && strcmp(t->devices[d].name, names[i]))
			d++;
		if (d == t->num_devices) {
			char known[TBL_MAX_DEVICES * 8];
			size_t kat = 0;

			known[0] = '\0';
			for (size_t j = 0; j < t->num_devices && kat < sizeof(known); j++)
				kat += (size_t)snprintf(known + kat, sizeof(known) - kat, "%s%s",
							j ? ", " : "", t->devices[j].name);
			fl__ini_msg(err, err_size, "no device '%s' in the table (it has: %s)",
				    names[i], known);
			return -ENODEV;
		}
		while (k < q->n && q->dev[k] != d)
			k++;
		if (k < q->n)
			continue; /* a repeat */
		q->dev[q->n++] = d;
		at += (size_t)snprintf(q->label + at, sizeof(q->label) - at, "%s%s",
				       q->n > 1 ? ", " : "", t->devices[d].name);
	}
	return 0;
}

static int position(const struct tbl_device *d, size_t heap)
{
	for (size_t i = 0; i < d->num_heaps; i++)
		if (d->heaps[i] == heap)
			return (int)i;
	return -1;
}

/* Checks @h against the devices of @q; 0 if it passes, else the reason. */
static int check_heap(const struct fl_heap_table *t, const struct request *q, size_t heap,
		      struct verdict *v)
{
	const struct tbl_heap *h = &t->heaps[heap];
	uint64_t align = h->align > t->page_size ? h->align : t->page_size;
	uint64_t capacity;

	if ((uint64_t)q->len > UINT64_MAX - (align - 1)) {
		snprintf(v->reason, sizeof(v->reason), "size %zu is too large to round up", q->len);
		return -E2BIG;
	}
	v->size = ((uint64_t)q->len + align - 1) & ~(align - 1);
	if (v->size > SIZE_MAX) {
		snprintf(v->reason, sizeof(v->reason), "size %zu is too large to round up", q->len);
		return -E2BIG;
	}
	for (size_t i = 0; i < q->n; i++) {
		const struct tbl_device *d = &t->devices[q->dev[i]];

		if (d->contiguous && !h->contiguous) {
			snprintf(v->reason, sizeof(v->reason),
				 "%s needs contiguous memory, and the heap is not contiguous",
				 d->name);
			return -EINVAL;
		}
		if (d->align > align) {
			snprintf(v->reason, sizeof(v->reason),
				 "%s needs align %" PRIu64 ", and the heap gives %" PRIu64, d->name,
				 d->align, align);
			return -EINVAL;
		}
	}
	if (h->max_size && v->size > h->max_size) {
		snprintf(v->reason, sizeof(v->reason),
			 "size %" PRIu64 " exceeds its max-size %" PRIu64, v->size, h->max_size);
		return -E2BIG;
	}
	if (v->size < h->min_size) {
		snprintf(v->reason, sizeof(v->reason),
			 "size %" PRIu64 " is below its min-size %" PRIu64, v->size, h->min_size);
		return -EINVAL;
	}
	capacity = (h->size + t->page_size - 1) / t->page_size * t->page_size;
	if (h->kind->is_carveout && v->size > capacity) {
		snprintf(v->reason, sizeof(v->reason),
			 "size %" PRIu64 " exceeds its capacity %" PRIu64, v->size, capacity);
		return -E2BIG;
	}
	return 0;
}

static bool before(const struct verdict *a, const struct verdict *b)
{
	if ((a->stage == ST_UNLISTED) != (b->stage == ST_UNLISTED))
		return b->stage == ST_UNLISTED;
	if (a->stage != ST_UNLISTED) {
		if (a->worst != b->worst)
			return a->worst < b->worst;
		if (a->sum != b->sum)
			return a->sum < b->sum;
	}
	return a->heap < b->heap;
}

/*
 * Fills q->v with every heap any device of @q lists, in the order alloc
 * tries them. Return: 0, or a device's own limit's error (the message in
 * @err), which no heap can get round.
 */
static int judge(const struct fl_heap_table *t, struct request *q, char *err, size_t err_size)
{
	bool seen[TBL_MAX_HEAPS] = { false };

	for (size_t i = 0; i < q->n; i++) {
		const struct tbl_device *d = &t->devices[q->dev[i]];

		if (d->max_size && q->len > d->max_size) {
			fl__ini_msg(err, err_size, "%s: size %zu exceeds its max-size %" PRIu64,
				    d->name, q->len, d->max_size);
			return -E2BIG;
		}
		if (q->len < d->min_size) {
			fl__ini_msg(err, err_size, "%s: size %zu is below its min-size %" PRIu64,
				    d->name, q->len, d->min_size);
			return -EINVAL;
		}
	}
	q->nv = 0;
	for (size_t i = 0; i < q->n; i++) {
		const struct tbl_device *d = &t->devices[q->dev[i]];

		for (size_t j = 0; j < d->num_heaps; j++) {
			size_t heap = d->heaps[j];
			struct verdict *v = &q->v[q->nv];

			if (seen[heap])
				continue;
			seen[heap] = true;
			memset(v, 0, sizeof(*v));
			v->heap = heap;
			v->stage = ST_CANDIDATE;
			for (size_t k = 0; k < q->n; k++) {
				const struct tbl_device *o = &t->devices[q->dev[k]];
				int at = position(o, heap);

				if (at < 0) {
					v->stage = ST_UNLISTED;
					v->err = -ENODEV;
					snprintf(v->reason, sizeof(v->reason), "not listed by %s",
						 o->name);
					break;
				}
				v->worst =
					(unsigned int)at > v->worst ? (unsigned int)at : v->worst;
				v->sum += (unsigned int)at;
			}
			if (v->stage == ST_CANDIDATE && !t->heaps[heap].heap) {
				v->stage = ST_UNAVAILABLE;
				v->err = -ENODEV;
				snprintf(v->reason, sizeof(v->reason), "unavailable: %s",
					 t->heaps[heap].unavailable);
			}
			if (v->stage == ST_CANDIDATE) {
				v->err = check_heap(t, q, heap, v);
				if (v->err)
					v->stage = ST_CONSTRAINT;
			}
			/* Insertion sort: at most TBL_MAX_HEAPS entries. */
			for (size_t k = q->nv++; k > 0 && before(&q->v[k], &q->v[k - 1]); k--) {
				struct verdict tmp = q->v[k];

				q->v[k] = q->v[k - 1];
				q->v[k - 1] = tmp;
			}
		}
	}
	return 0;
}

/* The error of the verdict that got furthest, and every reason in @err. */
static int fail_all(const struct fl_heap_table *t, const struct request *q, char *err,
		    size_t err_size)
{
	char msg[FL_HEAP_TABLE_ERROR_MAX * 2];
	const struct verdict *best = NULL;
	size_t at;

	at = (size_t)snprintf(msg, sizeof(msg), "%s: no heap can hold %zu bytes", q->label, q->len);
	for (size_t i = 0; i < q->nv; i++) {
		const struct verdict *v = &q->v[i];

		if (!best || v->stage > best->stage)
			best = v;
		if (at < sizeof(msg))
			at += (size_t)snprintf(msg + at, sizeof(msg) - at, "%s heap '%s': %s",
					       i ? ";" : ":", t->heaps[v->heap].name, v->reason);
	}
	fl__ini_msg(err, err_size, "%s", msg);
	return best ? best->err : -ENODEV;
}

static int check_request(struct fl_heap_table *table, const char *const *devices,
			 size_t num_devices, size_t len, char *err, size_t err_size)
{
	if (!table || !devices || !num_devices || num_devices > TBL_MAX_REQUEST || !len) {
		fl__ini_msg(err, err_size,
			    "invalid argument (a table, 1 to %d devices and a size are needed)",
			    TBL_MAX_REQUEST);
		return -EINVAL;
	}
	return 0;
}

int fl_heap_table_alloc(struct fl_heap_table *table, const char *const *devices, size_t num_devices,
			size_t len, unsigned int flags, int *ret_fd, struct fl_heap **ret_heap,
			char *err, size_t err_size)
{
	struct request *q;
	int r;

	r = check_request(table, devices, num_devices, len, err, err_size);
	if (r)
		return r;
	if (flags || !ret_fd) {
		fl__ini_msg(err, err_size, flags ? "flags must be 0" : "invalid argument");
		return -EINVAL;
	}
	q = malloc(sizeof(*q));
	if (!q) {
		fl__ini_msg(err, err_size, "out of memory");
		return -ENOMEM;
	}
	r = resolve(table, devices, num_devices, len, q, err, err_size);
	if (!r)
		r = judge(table, q, err, err_size);
	for (size_t i = 0; !r && i < q->nv; i++) {
		struct verdict *v = &q->v[i];
		struct tbl_heap *h = &table->heaps[v->heap];
		struct fl_heap_info info;
		int fd = -1, e;

		if (v->stage != ST_CANDIDATE)
			continue;
		/* check_heap() made sure the size fits a size_t. */
		e = fl_heap_alloc(h->heap, (size_t)v->size, 0, &fd);
		if (!e) {
			*ret_fd = fd;
			if (ret_heap)
				*ret_heap = h->heap;
			free(q);
			return 0;
		}
		if (e == -EMFILE) {
			fl__ini_msg(err, err_size, "%s: heap '%s': out of file descriptors",
				    q->label, h->name);
			free(q);
			return e;
		}
		v->stage = ST_NOMEM;
		v->err = e;
		if (h->kind->is_carveout && !fl_heap_get_info(h->heap, &info))
			snprintf(v->reason, sizeof(v->reason),
				 "out of memory (largest free block %" PRIu64 ")",
				 info.largest_free);
		else
			snprintf(v->reason, sizeof(v->reason), "%s", strerror(-e));
	}
	if (!r)
		r = fail_all(table, q, err, err_size);
	free(q);
	return r;
}

static const char *errno_name(int e)
{
	switch (e) {
	case -EINVAL:
		return "-EINVAL";
	case -ENODEV:
		return "-ENODEV";
	case -E2BIG:
		return "-E2BIG";
	case -ENOMEM:
		return "-ENOMEM";
	default:
		return "an error";
	}
}

int fl_heap_table_explain(struct fl_heap_table *table, const char *const *devices,
			  size_t num_devices, size_t len, FILE *out)
{
	static const char *const stage_names[] = {
		[ST_UNLISTED] = "ruled out",   [ST_UNAVAILABLE] = "skipped",
		[ST_CONSTRAINT] = "ruled out", [ST_CANDIDATE] = "candidate",
		[ST_NOMEM] = "ruled out",
	};
	char msg[FL_HEAP_TABLE_ERROR_MAX];
	const struct verdict *pick = NULL;
	struct request *q;
	int r;

	if (!out)
		return -EINVAL;
	r = check_request(table, devices, num_devices, len, NULL, 0);
	if (r)
		return r;
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	r = resolve(table, devices, num_devices, len, q, NULL, 0);
	if (r) {
		free(q);
		return r;
	}
	fprintf(out, "%s, %zu bytes:\n", q->label, len);
	r = judge(table, q, msg, sizeof(msg));
	if (r) {
		fprintf(out, "  no heap is judged: %s\nresult: %s\n", msg, errno_name(r));
		free(q);
		return ferror(out) ? -EIO : 0;
	}
	for (size_t i = 0; i < q->nv; i++) {
		const struct verdict *v = &q->v[i];
		const struct tbl_heap *h = &table->heaps[v->heap];
		struct fl_heap_info info;

		fprintf(out, "  %-20s %-20s %s: ", h->name, h->kind_name, stage_names[v->stage]);
		if (v->stage != ST_CANDIDATE) {
			fprintf(out, "%s\n", v->reason);
			continue;
		}
		if (!pick)
			pick = v;
		fprintf(out, "%" PRIu64 " bytes", v->size);
		if (h->kind->is_carveout && !fl_heap_get_info(h->heap, &info))
			fprintf(out, ", largest free block now %" PRIu64 "%s", info.largest_free,
				info.largest_free < v->size ? " (would not fit now)" : "");
		fputc('\n', out);
	}
	if (pick)
		fprintf(out, "result: heap '%s' first\n", table->heaps[pick->heap].name);
	else
		fprintf(out, "result: %s\n", errno_name(fail_all(table, q, NULL, 0)));
	free(q);
	return ferror(out) ? -EIO : 0;
}

static void print_quoted(FILE *out, const char *key, const char *text)
{
	fprintf(out, "%s = \"", key);
	for (; *text; text++) {
		if (*text == '"' || *text == '\\')
			fputc('\\', out);
		fputc(*text, out);
	}
	fputs("\"\n", out);
}

static void print_limits(FILE *out, uint64_t align, uint64_t min_size, uint64_t max_size)
{
	if (align)
		fprintf(out, "align = %" PRIu64 "\n", align);
	if (min_size)
		fprintf(out, "min-size = %" PRIu64 "\n", min_size);
	if (max_size)
		fprintf(out, "max-size = %" PRIu64 "\n", max_size);
}

int fl_heap_table_print(struct fl_heap_table *table, FILE *out)
{
	if (!table || !out)
		return -EINVAL;
	for (size_t i = 0; i < table->num_heaps; i++) {
		const struct tbl_heap *h = &table->heaps[i];

		fprintf(out, "%s[heap %s]\nkind = %s\n", i ? "\n" : "", h->name, h->kind_name);
		if (h->description[0])
			print_quoted(out, "description", h->description);
		if (h->kind->is_carveout)
			fprintf(out, "size = %" PRIu64 "\n", h->size);
		print_limits(out, h->align, h->min_size, h->max_size);
		if (h->kind->contiguous_settable)
			fprintf(out, "contiguous = %s\n", h->contiguous ? "yes" : "no");
		fprintf(out, "# align %" PRIu64 ", %scontiguous, %s%s\n",
			h->align > table->page_size ? h->align : (uint64_t)table->page_size,
			h->contiguous ? "" : "not ",
			h->heap ? "available" : "unavailable: ", h->heap ? "" : h->unavailable);
	}
	for (size_t i = 0; i < table->num_devices; i++) {
		const struct tbl_device *d = &table->devices[i];

		fprintf(out, "\n[device %s]\n", d->name);
		if (d->description[0])
			print_quoted(out, "description", d->description);
		fputs("heaps = ", out);
		for (size_t j = 0; j < d->num_heaps; j++)
			fprintf(out, "%s%s", j ? ", " : "", table->heaps[d->heaps[j]].name);
		fputc('\n', out);
		print_limits(out, d->align, d->min_size, d->max_size);
		fprintf(out, "contiguous = %s\n", d->contiguous ? "yes" : "no");
	}
	return ferror(out) ? -EIO : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * DUMP: the daemon's state for fencectl, as text or JSON (docs/fencectl.md),
 * in a sealed memfd. The core writes its timelines and fences; we add who
 * holds each fd (from /proc/<pid>/fd, where an fd of ours reads
 * socket:[ino] or pipe:[ino]), which process owns a timeline's counter, and the clients.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fenceline/fence.h>
#include <fenceline/timeline.h>

#include "host.h"
#include "server.h"
#include "util.h"

struct ino_pid {
	ino_t ino;
	pid_t pid;
};

struct obj_pid {
	const void *object;
	pid_t pid;
	bool fence; /* else a timeline */
	uint64_t id; /* a timeline's id (0 for a fence) */
};

struct holders {
	struct ino_pid *fds; /* every socket fd of every process we may look at */
	size_t nfds, fds_cap;
	struct obj_pid *objs; /* (object, holder), sorted, without repeats */
	size_t nobjs, objs_cap;
	fld_owner_fn owner;
	void *owner_arg;
};

static int grow(void **array, size_t *cap, size_t n, size_t size)
{
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*array, (*cap ? *cap * 2 : 64) * size);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = *cap ? *cap * 2 : 64;
	return 0;
}

/* Socket fds of @pid; processes we may not look at are skipped. */
static void scan_process(struct holders *h, pid_t pid)
{
	char path[64], link[64];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned long long ino;
		ssize_t n;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		/* Fence fds are pipes or sockets (docs/architecture.md), timeline fds pipes. */
		if ((sscanf(link, "socket:[%llu]", &ino) != 1 &&
		     sscanf(link, "pipe:[%llu]", &ino) != 1) ||
		    grow((void **)&h->fds, &h->fds_cap, h->nfds, sizeof(*h->fds)) < 0)
			continue;
		h->fds[h->nfds++] = (struct ino_pid){ (ino_t)ino, pid };
	}
	closedir(d);
}

static int cmp_ino(const void *a, const void *b)
{
	const struct ino_pid *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int cmp_obj(const void *a, const void *b)
{
	const struct obj_pid *x = a, *y = b;

	if (x->object != y->object)
		return (uintptr_t)x->object < (uintptr_t)y->object ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* fl__sink_foreach(): each process holding this fd's inode holds the object. */
static void add_sink(const void *object, bool fence, dev_t dev, ino_t ino, void *arg)
{
	struct holders *h = arg;
	struct ino_pid key = { ino, 0 };
	struct ino_pid *hit;

	(void)dev;
	if (!object)
		return;
	hit = fl__search(&key, h->fds, h->nfds, sizeof(*h->fds), cmp_ino);
	if (!hit)
		return;
	while (hit > h->fds && hit[-1].ino == ino)
		hit--;
	for (; hit < h->fds + h->nfds && hit->ino == ino; hit++) {
		/*
		 * A pipe fence's write end has the inode of its fd: our own
		 * write ends are how we complete fences, not holds on them
		 * (they come and go as owners keep their ends or not).
		 */
		if (fence && hit->pid == getpid())
			continue;
		if (grow((void **)&h->objs, &h->objs_cap, h->nobjs, sizeof(*h->objs)) < 0)
			return;
		h->objs[h->nobjs++] = (struct obj_pid){ object, hit->pid, fence,
							fence ? 0 : fl_timeline_get_id(object) };
	}
}

void fld_comm_of(pid_t pid, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void json_comm(FILE *out, pid_t pid)
{
	char comm[32];

	fld_comm_of(pid, comm, sizeof(comm));
	fl__json_str(out, comm);
}

/* The first (object, holder) entry of @object, or NULL. */
static struct obj_pid *first_holder(const struct holders *h, const void *object)
{
	size_t lo = 0, hi = h->nobjs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if ((uintptr_t)h->objs[mid].object < (uintptr_t)object)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->nobjs && h->objs[lo].object == object ? &h->objs[lo] : NULL;
}

/* fl__dump_extra_fn: the holders of each object, and a timeline's owner. */
static void extra(FILE *out, const void *object, bool fence, bool json, void *arg)
{
	struct holders *h = arg;
	struct obj_pid *p = first_holder(h, object);
	pid_t owner = fence ? 0 : h->owner(object, h->owner_arg);
	bool first = true;

	if (json) {
		if (owner > 0)
			fprintf(out, ",\"owner\":%d", (int)owner);
		fputs(",\"holders\":[", out);
	} else if (owner > 0) {
		char comm[32];

		fld_comm_of(owner, comm, sizeof(comm));
		fprintf(out, "  owner: pid %d (%s)\n", (int)owner, comm);
	}
	for (; p && p < h->objs + h->nobjs && p->object == object; p++) {
		if (json) {
			fprintf(out, "%s{\"pid\":%d,\"comm\":", first ? "" : ",", (int)p->pid);
			json_comm(out, p->pid);
			fputc('}', out);
		} else {
			char comm[32];

			fld_comm_of(p->pid, comm, sizeof(comm));
			fprintf(out, "%s pid %d (%s)", first ? "  held by:" : ",", (int)p->pid,
				comm);
		}
		first = false;
	}
	if (json)
		fputc(']', out);
	else if (!first)
		fputc('\n', out);
	if (fence && !json) {
		uint64_t age = fl__now_ns() - fl__fence_created_ns(object);

		fprintf(out, "  age: %" PRIu64 ".%03" PRIu64 " s\n", age / 1000000000,
			age / 1000000 % 1000);
	}
}

/* Which of the socket fds in @h->fds (sorted by inode) are our objects' fds. */
static void map_holders(struct holders *h)
{
	fl__sink_foreach(add_sink, h);
	fl__sort(h->objs, h->nobjs, sizeof(*h->objs), cmp_obj);
	/* A process holding two copies of one fd holds the object once. */
	size_t j = 0;

	for (size_t i = 0; i < h->nobjs; i++)
		if (!j || h->objs[j - 1].object != h->objs[i].object ||
		    h->objs[j - 1].pid != h->objs[i].pid)
			h->objs[j++] = h->objs[i];
	h->nobjs = j;
}

/* Every process's socket fds, then which of them are our objects' fds. */
static void find_holders(struct holders *h)
{
	struct dirent *e;
	DIR *d = opendir("/proc");

	if (d) {
		while ((e = readdir(d)))
			if (isdigit((unsigned char)e->d_name[0]))
				scan_process(h, (pid_t)atoi(e->d_name));
		closedir(d);
	}
	fl__sort(h->fds, h->nfds, sizeof(*h->fds), cmp_ino);
	map_holders(h);
}

/*
 * The /proc walk of a DUMP, a few processes at a time: a walk takes
 * milliseconds, which the loop must not spend in one go while other clients
 * wait. It keeps inodes and pids only, no pointers to objects, so it stays
 * valid while objects come and go; each dump maps it to the objects alive
 * when it is written.
 */
struct fld_scan {
	DIR *proc;
	struct holders h; /* fds only */
	bool done;
};

struct fld_scan *fld_scan_start(void)
{
	struct fld_scan *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->proc = opendir("/proc");
	if (!s->proc)
		s->done = true; /* nothing to learn: every dump shows no holders */
	return s;
}

bool fld_scan_step(struct fld_scan *s, uint64_t budget_ns)
{
	uint64_t start = fl__now_ns();
	struct dirent *e;

	while (!s->done) {
		e = readdir(s->proc);
		if (!e) {
			closedir(s->proc);
			s->proc = NULL;
			fl__sort(s->h.fds, s->h.nfds, sizeof(*s->h.fds), cmp_ino);
			s->done = true;
			break;
		}
		if (isdigit((unsigned char)e->d_name[0]))
			scan_process(&s->h, (pid_t)atoi(e->d_name));
		if (fl__now_ns() - start >= budget_ns)
			break;
	}
	return s->done;
}

void fld_scan_free(struct fld_scan *s)
{
	if (!s)
		return;
	if (s->proc)
		closedir(s->proc);
	free(s->h.fds);
	free(s);
}

static int cmp_pid(const void *a, const void *b)
{
	const struct obj_pid *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->fence != y->fence)
		return x->fence ? 1 : -1; /* timelines first */
	return (uintptr_t)x->object < (uintptr_t)y->object   ? -1
	       : (uintptr_t)x->object > (uintptr_t)y->object ? 1
							     : 0;
}

/* One object a process holds, as a line or a JSON object. */
static void write_held(FILE *out, const struct obj_pid *o, bool json, bool first, uint64_t now)
{
	char value[64] = "";

	if (!o->fence) {
		struct fl_timeline *tl = (struct fl_timeline *)o->object;

		fl_timeline_get_value_str(tl, value, sizeof(value));
		if (json) {
			fputs(first ? "{\"kind\":\"timeline\",\"name\":"
				    : ",{\"kind\":\"timeline\",\"name\":",
			      out);
			fl__json_str(out, fl_timeline_get_name(tl));
			fputs(",\"value\":", out);
			fl__json_str(out, value);
			fputc('}', out);
		} else {
			fprintf(out, "  timeline %s: %s\n", fl_timeline_get_name(tl), value);
		}
		return;
	}
	struct fl_fence *f = (struct fl_fence *)o->object;
	uint64_t age = now - fl__fence_created_ns(f);
	int status = fl_fence_get_status(f);

	if (json) {
		fputs(first ? "{\"kind\":\"fence\",\"name\":" : ",{\"kind\":\"fence\",\"name\":",
		      out);
		fl__json_str(out, fl_fence_get_name(f));
		fprintf(out, ",\"status\":%d,\"age_ns\":%" PRIu64 "}", status, age);
	} else {
		fprintf(out, "  fence %s: %s, age %" PRIu64 ".%03" PRIu64 " s\n",
			fl_fence_get_name(f),
			status == 0  ? "active"
			: status > 0 ? "signaled"
				     : "error",
			age / 1000000000, age / 1000000 % 1000);
	}
}

/*
 * By process (fencectl fds): what each holds, pending fences first in the
 * counts, so that a leak (a count that only grows) is easy to see.
 */
static void write_by_process(FILE *out, bool json, struct holders *h, pid_t only)
{
	uint64_t now = fl__now_ns();
	bool first_proc = true;

	fl__sort(h->objs, h->nobjs, sizeof(*h->objs), cmp_pid);
	fputs(json ? "{\"version\":1,\"processes\":[" : "", out);
	for (size_t i = 0; i < h->nobjs;) {
		pid_t pid = h->objs[i].pid;
		unsigned int fences = 0, pending = 0, timelines = 0;
		size_t end = i;
		char comm[32];

		for (; end < h->nobjs && h->objs[end].pid == pid; end++) {
			if (!h->objs[end].fence)
				timelines++;
			else if (fences++,
				 fl_fence_get_status((struct fl_fence *)h->objs[end].object) == 0)
				pending++;
		}
		if (only && pid != only) {
			i = end;
			continue;
		}
		fld_comm_of(pid, comm, sizeof(comm));
		if (json) {
			fprintf(out, "%s{\"pid\":%d,\"comm\":", first_proc ? "" : ",", (int)pid);
			fl__json_str(out, comm);
			fprintf(out, ",\"fences\":%u,\"pending\":%u,\"timelines\":%u,\"objects\":[",
				fences, pending, timelines);
		} else {
			fprintf(out, "pid %d (%s): %u fences (%u pending), %u timelines\n",
				(int)pid, comm, fences, pending, timelines);
		}
		for (size_t k = i; k < end; k++)
			write_held(out, &h->objs[k], json, k == i, now);
		fputs(json ? "]}" : "\n", out);
		first_proc = false;
		i = end;
	}
	fputs(json ? "]}\n" : "", out);
}

static void write_clients(FILE *out, bool json, const struct fld_client_info *clients, size_t n)
{
	fprintf(out,
		json ? "{\"version\":1,\"daemon\":{\"pid\":%d,\"passes\":%" PRIu64 "},\"clients\":["
		     : "fencelined pid %d\n\nclients:\n--------------\n",
		(int)getpid(), fld_loop_passes);
	for (size_t i = 0; i < n; i++) {
		const struct fld_client_info *c = &clients[i];

		if (json) {
			fprintf(out, "%s{\"pid\":%d,\"uid\":%u,\"comm\":", i ? "," : "",
				(int)c->pid, (unsigned int)c->uid);
			json_comm(out, c->pid);
			fprintf(out, ",\"timelines\":%u,\"fences\":%u}", c->timelines, c->fences);
		} else {
			char comm[32];

			fld_comm_of(c->pid, comm, sizeof(comm));
			fprintf(out, "pid %d (%s) uid %u: %u timelines, %u fences\n", (int)c->pid,
				comm, (unsigned int)c->uid, c->timelines, c->fences);
		}
	}
	fputs(json ? "]," : "\n", out);
}

int fld_memfd_sealed(const char *text, size_t len, int *ret_fd)
{
	int fd = memfd_create("fenceline-dump", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			close(fd);
			return -e;
		}
		off += (size_t)n;
	}
	/* Sealed: the reader can trust what it maps or reads. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		int e = errno ? errno : EIO;

		close(fd);
		return -e;
	}
	*ret_fd = fd;
	return 0;
}

struct fld_holders *fld_holders_find(void)
{
	struct holders *h = calloc(1, sizeof(*h));

	if (h)
		find_holders(h);
	return (struct fld_holders *)h;
}

struct fld_holders *fld_holders_from_scan(const struct fld_scan *s)
{
	struct holders *h;

	if (!s || !s->done)
		return fld_holders_find();
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	if (s->h.nfds) {
		h->fds = malloc(s->h.nfds * sizeof(*h->fds));
		if (!h->fds) {
			free(h);
			return NULL;
		}
		memcpy(h->fds, s->h.fds, s->h.nfds * sizeof(*h->fds));
		h->nfds = h->fds_cap = s->h.nfds;
	}
	map_holders(h);
	return (struct fld_holders *)h;
}

size_t fld_holders_of_timeline(const struct fld_holders *hs, uint64_t id, pid_t *pids, size_t cap)
{
	const struct holders *h = (const struct holders *)hs;
	size_t n = 0;

	for (size_t i = 0; i < h->nobjs; i++)
		if (!h->objs[i].fence && h->objs[i].id == id && h->objs[i].pid != getpid()) {
			if (n < cap)
				pids[n] = h->objs[i].pid;
			n++;
		}
	return n;
}

void fld_holders_free(struct fld_holders *hs)
{
	struct holders *h = (struct holders *)hs;

	if (!h)
		return;
	free(h->fds);
	free(h->objs);
	free(h);
}

int fld_dump_write(bool json, bool by_process, pid_t only, const struct fld_client_info *clients,
		   size_t nclients, fld_owner_fn owner, void *owner_arg,
		   const struct fld_scan *scan, int *ret_fd)
{
	struct holders h = { .owner = owner, .owner_arg = owner_arg };
	char *text = NULL;
	size_t len = 0;
	int r = 0;
	FILE *out;

	if (scan && scan->done) {
		/* Borrowed: map_holders() only reads them. */
		h.fds = scan->h.fds;
		h.nfds = scan->h.nfds;
		map_holders(&h);
	} else {
		find_holders(&h);
	}
	out = open_memstream(&text, &len);
	if (!out) {
		r = -ENOMEM;
		goto out;
	}
	if (by_process) {
		write_by_process(out, json, &h, only);
	} else {
		write_clients(out, json, clients, nclients);
		r = fl__dump_write(out, json, extra, &h);
		if (json)
			fputs(",\"waiters\":", out);
		fld_waits_write(out, json);
		if (json)
			fputs("}\n", out);
	}
	if (fclose(out) != 0 || !text)
		r = -ENOMEM;
	if (r == 0)
		r = fld_memfd_sealed(text, len, ret_fd);
out:
	free(text);
	if (!scan || !scan->done)
		free(h.fds);
	free(h.objs);
	return r;
}

struct value_query {
	uint64_t id;
	char *buf;
	size_t size;
};

static void value_of(struct fl_timeline *tl, void *arg)
{
	struct value_query *q = arg;

	if (fl_timeline_get_id(tl) == q->id)
		fl_timeline_get_value_str(tl, q->buf, q->size);
}

void fld_timeline_value_str(uint64_t id, char *buf, size_t size)
{
	struct value_query q = { id, buf, size };

	fl__timeline_foreach(value_of, &q);
}

/* SPDX-License-Identifier: MIT */
/*
 * The allocation service: fencelined allocates from heaps of its own and
 * sends the buffer's fd, so that a client needs no permission beyond its
 * socket (docs/heap.md, "Through the daemon").
 *
 * A buffer is charged to the connection that allocated it from HEAP_ALLOC
 * until that connection frees it (HEAP_FREE) or ends. The daemon keeps one
 * fd of each such buffer, because the native heap gives a buffer back only
 * through one of its fds (fl_heap_buffer_free()) and the end of a connection must
 * return its carveout ranges; watching for the last close elsewhere was not
 * chosen (docs/heap.md, "Who pays"). So a buffer's memory lives at least
 * until it is freed, and other fds and mappings keep it alive after that,
 * as a dma-buf outlives ion_free().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/heap.h>

#include "heapsvc.h"
#include "host.h"
#include "pool-gate.h" /* the pool's per-size decisions, for the dump */
#include "server.h"
#include "service.h"
#include "util.h"

/* The daemon's heaps at libion's ids, highest id (ION's priority) first. */
static struct dheap {
	const char *name;
	uint32_t id;
	struct fl_heap *heap; /* NULL: not offered (a carveout of 0 bytes) */
} heaps[] = {
	{ "carveout", 2, NULL },
	{ "system", 0, NULL },
};
#define NHEAPS FL_ARRAY_SIZE(heaps)

struct account {
	uint64_t bytes, buffers, peak_bytes, peak_buffers;
};

struct dbuf {
	struct dbuf *next; /* in its hash bucket */
	dev_t dev;
	ino_t ino;
	int fd; /* ours, for fl_heap_buffer_free() */
	uint64_t size;
	uint32_t group;
	unsigned int heap; /* index in heaps[] */
};

/* Buckets by inode: a client's buffers, found again by any fd of each. */
#define BUCKETS 256

struct fld_heap_client {
	pid_t pid;
	struct account total, per[NHEAPS];
	uint64_t refused; /* allocations refused for the limit */
	struct dbuf *bucket[BUCKETS];
	struct fld_heap_client *prev, *next;
};

static struct fld_heap_client *hclients;
static uint64_t client_limit;
static size_t page_size;

int fld_heapsvc_init(uint64_t carveout_bytes, uint64_t limit)
{
	long page = sysconf(_SC_PAGESIZE);
	int r = 0;

	page_size = page > 0 ? (size_t)page : 4096;
	client_limit = limit;
	if (carveout_bytes > SIZE_MAX)
		return -ENOMEM;
	if (carveout_bytes)
		r = fl_heap_open_carveout(heaps[0].name, (size_t)carveout_bytes, &heaps[0].heap);
	if (r == 0)
		r = fl_heap_open_system(heaps[1].name, &heaps[1].heap);
	if (r < 0)
		fld_heapsvc_fini();
	return r;
}

void fld_heapsvc_fini(void)
{
	while (hclients)
		fld_heapsvc_client_end(hclients);
	for (size_t i = 0; i < NHEAPS; i++) {
		fl_heap_close(heaps[i].heap);
		heaps[i].heap = NULL;
	}
}

static int heap_index(const char *name)
{
	for (size_t i = 0; i < NHEAPS; i++)
		if (heaps[i].heap && !strcmp(heaps[i].name, name))
			return (int)i;
	return -ENODEV;
}

static void account_add(struct account *a, uint64_t size)
{
	a->bytes += size;
	a->buffers++;
	if (a->bytes > a->peak_bytes)
		a->peak_bytes = a->bytes;
	if (a->buffers > a->peak_buffers)
		a->peak_buffers = a->buffers;
}

static void account_sub(struct account *a, uint64_t size)
{
	a->bytes -= size;
	a->buffers--;
}

static bool is_pow2(uint64_t n)
{
	return n && !(n & (n - 1));
}

/*
 * Say why a client got -ENOMEM, for whoever reads the daemon's log; a
 * client retrying in a loop gets lines at the 1st, 2nd, 4th, 8th...
 * refusal, so it cannot flood the log.
 */
static void log_refusal(const struct fld_heap_client *hc, const char *heap, uint64_t size)
{
	char comm[32];

	if (!is_pow2(hc->refused))
		return;
	fld_comm_of(hc->pid, comm, sizeof(comm));
	fld_log("client pid %d (%s): refused %" PRIu64 " bytes from heap '%s': it holds %" PRIu64
		" of its limit of %" PRIu64 " bytes (--heap-limit-mb); ENOMEM (%" PRIu64
		" refusals)",
		(int)hc->pid, comm, size, heap, hc->total.bytes, client_limit, hc->refused);
}

static struct fld_heap_client *client_new(pid_t pid)
{
	struct fld_heap_client *hc = calloc(1, sizeof(*hc));

	if (!hc)
		return NULL;
	hc->pid = pid;
	hc->next = hclients;
	if (hclients)
		hclients->prev = hc;
	hclients = hc;
	return hc;
}

int fld_heapsvc_alloc(struct fld_heap_client **hcp, pid_t pid, const struct fl_msg_heap_alloc *q,
		      struct fl_msg_heap_alloc_reply *ret, int *ret_fd)
{
	struct fld_heap_client *hc = *hcp;
	int h = heap_index(q->heap), fd, r;
	uint64_t mask = page_size - 1, rounded;
	struct dbuf *b;
	struct stat st;

	if (h < 0)
		return h;
	if (q->size == 0)
		return -EINVAL;
	/* Too large to round up is too large for any heap. */
	rounded = q->size > UINT64_MAX - mask ? UINT64_MAX : (q->size + mask) & ~mask;
	if (!hc && !(hc = *hcp = client_new(pid)))
		return -ENOMEM;
	if (hc->total.buffers >= FLD_HEAP_MAX_BUFFERS)
		return -EMFILE;
	/*
	 * The heaps refuse more than half of RAM per buffer, so the sums stay
	 * far from 2^64; still, a count that would wrap is a refusal, never
	 * a small number (fencectl heaps showed a peak of 2^63 + 2^62).
	 */
	if (rounded > UINT64_MAX - hc->total.bytes)
		return -ENOMEM;
	if (client_limit && (rounded > client_limit || hc->total.bytes > client_limit - rounded)) {
		hc->refused++;
		log_refusal(hc, heaps[h].name, q->size);
		return -ENOMEM;
	}
	if (q->size > SIZE_MAX)
		return -ENOMEM;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	r = fl_heap_alloc(heaps[h].heap, (size_t)q->size, q->flags, &fd);
	if (r == 0 && fstat(fd, &st) < 0) {
		r = -errno;
		if (fl_heap_buffer_free(heaps[h].heap, fd) < 0)
			close(fd);
	}
	if (r < 0) {
		free(b);
		return r;
	}
	*b = (struct dbuf){ .dev = st.st_dev,
			    .ino = st.st_ino,
			    .fd = fd,
			    .size = (uint64_t)st.st_size,
			    .group = q->group,
			    .heap = (unsigned int)h };
	b->next = hc->bucket[b->ino % BUCKETS];
	hc->bucket[b->ino % BUCKETS] = b;
	account_add(&hc->total, b->size);
	account_add(&hc->per[h], b->size);
	*ret = (struct fl_msg_heap_alloc_reply){ .heap_id = heaps[h].id, .size = b->size };
	*ret_fd = fd;
	return 0;
}

static void buf_free(struct fld_heap_client *hc, struct dbuf **pp)
{
	struct dbuf *b = *pp;

	*pp = b->next;
	account_sub(&hc->total, b->size);
	account_sub(&hc->per[b->heap], b->size);
	/* Ours is a buffer of this heap by construction: this closes it. */
	if (fl_heap_buffer_free(heaps[b->heap].heap, b->fd) < 0)
		close(b->fd);
	free(b);
}

int fld_heapsvc_free(struct fld_heap_client *hc, int fd, uint32_t group, uint64_t *ret_freed)
{
	struct fl__fd_stat st;

	*ret_freed = 0;
	if (fd < 0) {
		for (unsigned int k = 0; hc && k < BUCKETS; k++)
			for (struct dbuf **pp = &hc->bucket[k]; *pp;) {
				if ((*pp)->group == group) {
					buf_free(hc, pp);
					++*ret_freed;
				} else {
					pp = &(*pp)->next;
				}
			}
		return 0;
	}
	/* The client's fd may be any file: ask no filesystem (fl__fd_stat()). */
	if (!hc || fl__fd_stat(fd, &st) < 0)
		return -EINVAL;
	for (struct dbuf **pp = &hc->bucket[st.ino % BUCKETS]; *pp; pp = &(*pp)->next)
		if ((*pp)->ino == st.ino && (*pp)->dev == st.dev) {
			buf_free(hc, pp);
			*ret_freed = 1;
			return 0;
		}
	return -EINVAL;
}

int fld_heapsvc_info(const struct fld_heap_client *hc, const char *heap,
		     struct fl_msg_heap_info_reply *ret)
{
	static const struct account none;
	const struct account *a = &none;
	struct fl_heap_info info;

	memset(ret, 0, sizeof(*ret));
	if (heap[0]) {
		int h = heap_index(heap);

		if (h < 0)
			return h;
		if (hc)
			a = &hc->per[h];
		fl_heap_get_info(heaps[h].heap, &info);
		ret->heap_capacity = info.capacity;
		ret->heap_allocated = info.allocated;
		ret->heap_buffers = info.buffers;
	} else if (hc) {
		a = &hc->total;
	}
	ret->limit = client_limit;
	ret->bytes = a->bytes;
	ret->buffers = a->buffers;
	ret->peak_bytes = a->peak_bytes;
	ret->peak_buffers = a->peak_buffers;
	ret->refused = hc ? hc->refused : 0;
	return 0;
}

void fld_heapsvc_client_end(struct fld_heap_client *hc)
{
	if (!hc)
		return;
	for (unsigned int k = 0; k < BUCKETS; k++)
		while (hc->bucket[k])
			buf_free(hc, &hc->bucket[k]);
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		hclients = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	free(hc);
}

static void write_json_account(FILE *out, const struct account *a)
{
	fprintf(out,
		"\"bytes\":%" PRIu64 ",\"buffers\":%" PRIu64 ",\"peak_bytes\":%" PRIu64
		",\"peak_buffers\":%" PRIu64,
		a->bytes, a->buffers, a->peak_bytes, a->peak_buffers);
}

static void write_json(FILE *out)
{
	bool first = true;

	fprintf(out,
		"{\"version\":1,\"daemon\":{\"pid\":%d,\"client_limit\":%" PRIu64 "},\"heaps\":[",
		(int)getpid(), client_limit);
	for (size_t i = 0; i < NHEAPS; i++) {
		struct fl_heap_info info;
		bool first_client = true;

		if (!heaps[i].heap)
			continue;
		fl_heap_get_info(heaps[i].heap, &info);
		fprintf(out, "%s{\"name\":", first ? "" : ",");
		fl__json_str(out, info.name);
		fputs(",\"kind\":", out);
		fl__json_str(out, info.kind);
		fprintf(out,
			",\"id\":%" PRIu32 ",\"capacity\":%" PRIu64 ",\"allocated\":%" PRIu64
			",\"peak_allocated\":%" PRIu64 ",\"buffers\":%" PRIu64
			",\"peak_buffers\":%" PRIu64 ",\"allocations\":%" PRIu64
			",\"failures\":%" PRIu64 ",\"free_blocks\":%" PRIu64
			",\"largest_free\":%" PRIu64,
			heaps[i].id, info.capacity, info.allocated, info.peak_allocated,
			info.buffers, info.peak_buffers, info.allocations, info.failures,
			info.free_blocks, info.largest_free);
		fprintf(out,
			",\"pool\":{\"max\":%" PRIu64 ",\"buffers\":%" PRIu64 ",\"hits\":%" PRIu64
			",\"misses\":%" PRIu64 ",\"sizes\":",
			info.pool_max, info.pool_buffers, info.pool_hits, info.pool_misses);
		fl__heap_pool_write_sizes(heaps[i].heap, out, true);
		fputs("},\"clients\":[", out);
		for (const struct fld_heap_client *hc = hclients; hc; hc = hc->next) {
			char comm[32];

			if (!hc->per[i].peak_buffers)
				continue; /* never used this heap */
			fld_comm_of(hc->pid, comm, sizeof(comm));
			fprintf(out, "%s{\"pid\":%d,\"comm\":", first_client ? "" : ",",
				(int)hc->pid);
			fl__json_str(out, comm);
			fputc(',', out);
			write_json_account(out, &hc->per[i]);
			fputc('}', out);
			first_client = false;
		}
		fputs("]}", out);
		first = false;
	}
	fputs("],\"clients\":[", out);
	for (const struct fld_heap_client *hc = hclients; hc; hc = hc->next) {
		char comm[32];

		fld_comm_of(hc->pid, comm, sizeof(comm));
		fprintf(out, "%s{\"pid\":%d,\"comm\":", hc == hclients ? "" : ",", (int)hc->pid);
		fl__json_str(out, comm);
		fputc(',', out);
		write_json_account(out, &hc->total);
		fprintf(out, ",\"refused\":%" PRIu64 "}", hc->refused);
	}
	fputs("]}\n", out);
}

#define RULE "---------------------------------------------------------------------------------\n"

/* Like ION's debugfs heap files: a client table per heap, then the totals. */
static void write_text(FILE *out)
{
	fprintf(out, "fencelined pid %d heaps; per-client limit ", (int)getpid());
	if (client_limit)
		fprintf(out, "%" PRIu64 " bytes\n", client_limit);
	else
		fputs("none\n", out);
	for (size_t i = 0; i < NHEAPS; i++) {
		struct fl_heap_info info;

		if (!heaps[i].heap)
			continue;
		fl_heap_get_info(heaps[i].heap, &info);
		fprintf(out, "\nheap '%s' (%s, id %" PRIu32 ")\n", info.name, info.kind,
			heaps[i].id);
		fprintf(out, "%16s %10s %16s %10s %16s\n", "client", "pid", "size", "buffers",
			"peak size");
		fputs(RULE, out);
		for (const struct fld_heap_client *hc = hclients; hc; hc = hc->next) {
			const struct account *a = &hc->per[i];
			char comm[32];

			if (!a->peak_buffers)
				continue;
			fld_comm_of(hc->pid, comm, sizeof(comm));
			fprintf(out, "%16s %10d %16" PRIu64 " %10" PRIu64 " %16" PRIu64 "\n", comm,
				(int)hc->pid, a->bytes, a->buffers, a->peak_bytes);
		}
		fputs(RULE, out);
		fprintf(out, "%16s %10s %16" PRIu64 " %10" PRIu64 " %16" PRIu64 "\n", "total", "",
			info.allocated, info.buffers, info.peak_allocated);
		fprintf(out, "%16s %" PRIu64 ", failed %" PRIu64 "\n", "allocations",
			info.allocations, info.failures);
		if (info.capacity)
			fprintf(out,
				"%16s %" PRIu64 ", free %" PRIu64 " in %" PRIu64
				" blocks, largest free block %" PRIu64 "\n",
				"capacity", info.capacity, info.capacity - info.allocated,
				info.free_blocks, info.largest_free);
		if (info.pool_max) {
			fprintf(out,
				"%16s max %" PRIu64 ", %" PRIu64 " buffers ready; %" PRIu64
				" hits, %" PRIu64 " misses\n",
				"pool", info.pool_max, info.pool_buffers, info.pool_hits,
				info.pool_misses);
			fl__heap_pool_write_sizes(heaps[i].heap, out, false);
		}
		fputs(RULE, out);
	}
	fputs("\nclients (all heaps):\n", out);
	fprintf(out, "%16s %10s %16s %10s %16s %10s\n", "client", "pid", "size", "buffers",
		"peak size", "refused");
	fputs(RULE, out);
	for (const struct fld_heap_client *hc = hclients; hc; hc = hc->next) {
		char comm[32];

		fld_comm_of(hc->pid, comm, sizeof(comm));
		fprintf(out, "%16s %10d %16" PRIu64 " %10" PRIu64 " %16" PRIu64 " %10" PRIu64 "\n",
			comm, (int)hc->pid, hc->total.bytes, hc->total.buffers,
			hc->total.peak_bytes, hc->refused);
	}
	fputs(RULE, out);
}

int fld_heapsvc_dump(bool json, int *ret_fd)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int r;

	if (!out)
		return -ENOMEM;
	if (json)
		write_json(out);
	else
		write_text(out);
	if (fclose(out) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	r = fld_memfd_sealed(text, len, ret_fd);
	free(text);
	return r;
}

/*
 * The allocation service on the server framework: its requests, its state
 * on a connection and its part of DUMP. The fds it holds for a client count
 * against the client's quotas through the host (fld_conn_fds_charge()).
 */

/*
 * The allocation service's state on a connection, made by its first
 * HEAP_ALLOC and found again by its destroy listener.
 */
struct heap_conn {
	struct fl_server_listener gone;
	struct fld_heap_client *heap; /* its buffers; NULL: none yet */
	unsigned int buffers; /* buffers it holds (each a daemon fd) */
};

/* The connection ended: the buffers were ours on its behalf. */
static void heap_conn_gone(struct fl_server_listener *l, struct fl_server_conn *conn)
{
	struct heap_conn *h = FL_SERVER_CONTAINER_OF(l, struct heap_conn, gone);

	fld_conn_fds_uncharge(conn, h->buffers);
	fld_heapsvc_client_end(h->heap);
	free(h);
}

/* @conn's heap state; NULL when it has none (and @make is false, or out of memory). */
static struct heap_conn *heap_conn_of(struct fl_server_conn *conn, bool make)
{
	struct fl_server_listener *l = fl__server_conn_get_destroy_listener(conn, heap_conn_gone);
	struct heap_conn *h;

	if (l)
		return FL_SERVER_CONTAINER_OF(l, struct heap_conn, gone);
	if (!make || !(h = calloc(1, sizeof(*h))))
		return NULL;
	h->gone.notify = heap_conn_gone;
	fl__server_conn_add_destroy_listener(conn, &h->gone);
	return h;
}

/* HEAP_ALLOC: the daemon keeps its fd of the buffer (fld_heapsvc_alloc()). */
static bool op_heap_alloc(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct heap_conn *h = heap_conn_of(conn, true);
	struct fl_msg_heap_alloc_reply rep;
	int fd, r = h ? fld_conn_fds_charge(conn, 1, "a buffer") : -ENOMEM;

	if (r == 0 && (r = fld_heapsvc_alloc(&h->heap, conn->pid, &q->u.heap_alloc, &rep, &fd)) < 0)
		fld_conn_fds_uncharge(conn, 1);
	if (r < 0)
		return fld_conn_reply_status(conn, &q->hdr, r);
	h->buffers++;
	return fld_conn_reply(conn, &q->hdr, &rep, sizeof(rep), fd);
}

static bool op_heap_free(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct heap_conn *h = heap_conn_of(conn, false);
	struct fl_msg_heap_free_reply rep = { { 0, 0 }, 0 };

	rep.r.status = fld_heapsvc_free(h ? h->heap : NULL, q->nfds ? fds[0] : -1,
					q->u.heap_free.group, &rep.freed);
	fld_conn_fds_uncharge(conn, (unsigned int)rep.freed);
	if (h)
		h->buffers -= (unsigned int)rep.freed;
	if (rep.r.status < 0)
		return fld_conn_reply_status(conn, &q->hdr, rep.r.status);
	return fld_conn_reply(conn, &q->hdr, &rep, sizeof(rep), -1);
}

static bool op_heap_info(struct fl_server_conn *conn, const struct fl_proto_request *q, int *fds)
{
	struct heap_conn *h = heap_conn_of(conn, false);
	struct fl_msg_heap_info_reply rep;
	int r = fld_heapsvc_info(h ? h->heap : NULL, q->u.heap_info.heap, &rep);

	if (r < 0)
		return fld_conn_reply_status(conn, &q->hdr, r);
	return fld_conn_reply(conn, &q->hdr, &rep, sizeof(rep), -1);
}
/* The service (service.h): HEAP_ALLOC, HEAP_FREE, HEAP_INFO and DUMP's heaps view. */
#define HEAP_FIRST FL_PROTO_HEAP_FIRST
static const struct fl_server_op heap_ops[] = {
	[FL_OP_HEAP_ALLOC - HEAP_FIRST] = { op_heap_alloc },
	/* No fd frees a group. */
	[FL_OP_HEAP_FREE - HEAP_FIRST] = { op_heap_free, 0, 1, 0, true },
	[FL_OP_HEAP_INFO - HEAP_FIRST] = { op_heap_info },
};

static int heap_dump(void *data, uint32_t flags, int *ret_fd)
{
	return fld_heapsvc_dump(flags & FL_DUMP_JSON, ret_fd);
}

const struct fl_server_service_ops fld_heap_service = {
	.name = "heap",
	.first_op = HEAP_FIRST,
	.last_op = FL_OP_HEAP_INFO,
	.ops = heap_ops,
	.dump = heap_dump,
	.id = FL_PROTO_SVC_HEAP,
	.version = FL_PROTO_HEAP_VERSION,
};

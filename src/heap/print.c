/* SPDX-License-Identifier: MIT */
/*
 * A heap's accounting, buffers and free blocks, for people (fl_heap_print())
 * and for programs (fl_heap_print_json(), schema in docs/heap.md). Both
 * format into memory under the heap's lock and write to the stream after
 * dropping it, so the lock never waits on a slow reader.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <fenceline/heap.h>

#include "avl.h"
#include "heap-internal.h"

static const char *flags_text(unsigned int flags)
{
	switch (flags & FL_HEAP_FLAGS_ALL) {
	case FL_HEAP_FLAG_CACHED:
		return "cached";
	case FL_HEAP_FLAG_NEEDS_SYNC:
		return "needs-sync";
	case FL_HEAP_FLAGS_ALL:
		return "cached,needs-sync";
	default:
		return "-";
	}
}

static void text_buffer(struct fl_avl_node *n, void *data)
{
	const struct fl_heap_buffer *b = fl__heap_buffer_of(n);
	FILE *out = data;

	fprintf(out, "  %16" PRIu64 " ", (uint64_t)b->ino);
	if (b->offset == FL_HEAP_NO_OFFSET)
		fprintf(out, "%16s", "-");
	else
		fprintf(out, "%16" PRIu64, b->offset);
	fprintf(out, " %16" PRIu64 " %s\n", b->size, flags_text(b->flags));
}

static void text_free(uint64_t offset, uint64_t size, void *data)
{
	fprintf(data, "  %16" PRIu64 " %16" PRIu64 "\n", offset, size);
}

static void text_locked(struct fl_heap *heap, FILE *mem)
{
	struct fl_heap_info info;

	fl__heap_fill_info_locked(heap, &info);
	fprintf(mem, "heap '%s' (%s, %s, granule %" PRIu64 ")\n", info.name, info.kind,
		info.backing, info.granule);
	if (info.capacity)
		fprintf(mem,
			"  capacity %" PRIu64 ", free %" PRIu64 " in %" PRIu64
			" blocks, largest free block %" PRIu64 "\n",
			info.capacity, info.capacity - info.allocated, info.free_blocks,
			info.largest_free);
	fprintf(mem,
		"  allocated %" PRIu64 " (peak %" PRIu64 ") in %" PRIu64 " buffers (peak %" PRIu64
		"); %" PRIu64 " allocations, %" PRIu64 " failed\n",
		info.allocated, info.peak_allocated, info.buffers, info.peak_buffers,
		info.allocations, info.failures);
	if (info.pool_max)
		fprintf(mem,
			"  pool: max %" PRIu64 ", %" PRIu64 " bytes in %" PRIu64
			" buffers, %" PRIu64 " being made; %" PRIu64 " hits, %" PRIu64 " misses\n",
			info.pool_max, info.pool_bytes, info.pool_buffers, info.pool_pending,
			info.pool_hits, info.pool_misses);
	if (info.pool_max)
		fl__heap_gate_write(&heap->pool.gates, mem, false);
	fprintf(mem, "  %16s %16s %16s %s\n", "inode", "offset", "size", "flags");
	fl__avl_walk(&heap->buffers, text_buffer, mem);
	if (heap->ops->walk_free) {
		fprintf(mem, "  free blocks:\n  %16s %16s\n", "offset", "size");
		heap->ops->walk_free(heap, text_free, mem);
	}
}

/* @s as a JSON string: the heap's name is the caller's, any bytes at all. */
static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			/* Bytes, not code points: a truncated UTF-8 name stays valid JSON. */
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

struct json_walk {
	FILE *out;
	int n;
};

static void json_buffer(struct fl_avl_node *node, void *data)
{
	const struct fl_heap_buffer *b = fl__heap_buffer_of(node);
	struct json_walk *w = data;

	fprintf(w->out, "%s{\"inode\":%" PRIu64 ",\"offset\":", w->n++ ? "," : "",
		(uint64_t)b->ino);
	if (b->offset == FL_HEAP_NO_OFFSET)
		fprintf(w->out, "null");
	else
		fprintf(w->out, "%" PRIu64, b->offset);
	fprintf(w->out, ",\"size\":%" PRIu64 ",\"flags\":[", b->size);
	if (b->flags & FL_HEAP_FLAG_CACHED)
		fprintf(w->out, "\"cached\"%s", b->flags & FL_HEAP_FLAG_NEEDS_SYNC ? "," : "");
	if (b->flags & FL_HEAP_FLAG_NEEDS_SYNC)
		fprintf(w->out, "\"needs-sync\"");
	fprintf(w->out, "]}");
}

static void json_free(uint64_t offset, uint64_t size, void *data)
{
	struct json_walk *w = data;

	fprintf(w->out, "%s{\"offset\":%" PRIu64 ",\"size\":%" PRIu64 "}", w->n++ ? "," : "",
		offset, size);
}

static void json_locked(struct fl_heap *heap, FILE *mem)
{
	struct fl_heap_info info;
	struct json_walk w = { mem, 0 };

	fl__heap_fill_info_locked(heap, &info);
	fprintf(mem, "{\"name\":");
	json_string(mem, info.name);
	fprintf(mem, ",\"kind\":");
	json_string(mem, info.kind);
	fprintf(mem, ",\"backing\":");
	json_string(mem, info.backing);
	fprintf(mem,
		",\"granule\":%" PRIu64 ",\"capacity\":%" PRIu64 ",\"allocated\":%" PRIu64
		",\"peak_allocated\":%" PRIu64 ",\"live_buffers\":%" PRIu64
		",\"peak_buffers\":%" PRIu64 ",\"allocations\":%" PRIu64 ",\"failures\":%" PRIu64
		",\"largest_free\":%" PRIu64,
		info.granule, info.capacity, info.allocated, info.peak_allocated, info.buffers,
		info.peak_buffers, info.allocations, info.failures, info.largest_free);
	fprintf(mem,
		",\"pool\":{\"max\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"buffers\":%" PRIu64
		",\"pending\":%" PRIu64 ",\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"sizes\":",
		info.pool_max, info.pool_bytes, info.pool_buffers, info.pool_pending,
		info.pool_hits, info.pool_misses);
	fl__heap_gate_write(&heap->pool.gates, mem, true);
	fprintf(mem, "},\"buffers\":[");
	fl__avl_walk(&heap->buffers, json_buffer, &w);
	fprintf(mem, "],\"free_blocks\":[");
	w.n = 0;
	if (heap->ops->walk_free)
		heap->ops->walk_free(heap, json_free, &w);
	fprintf(mem, "]}\n");
}

static int print(struct fl_heap *heap, FILE *out, void (*fmt)(struct fl_heap *heap, FILE *mem))
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int r = 0;

	if (!heap || !out)
		return -EINVAL;
	mem = open_memstream(&text, &len);
	if (!mem)
		return -ENOMEM;
	pthread_mutex_lock(&heap->lock);
	fmt(heap, mem);
	pthread_mutex_unlock(&heap->lock);
	if (fclose(mem) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	if (fwrite(text, 1, len, out) != len || fflush(out) != 0)
		r = -EIO;
	free(text);
	return r;
}

void fl__heap_pool_write_sizes(struct fl_heap *heap, FILE *out, bool json)
{
	pthread_mutex_lock(&heap->lock);
	if (heap->pool.max || json)
		fl__heap_gate_write(&heap->pool.gates, out, json);
	pthread_mutex_unlock(&heap->lock);
}

FL_EXPORT int fl_heap_print(struct fl_heap *heap, FILE *out)
{
	return print(heap, out, text_locked);
}

FL_EXPORT int fl_heap_print_json(struct fl_heap *heap, FILE *out)
{
	return print(heap, out, json_locked);
}

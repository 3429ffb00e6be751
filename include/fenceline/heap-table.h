/* SPDX-License-Identifier: MIT */
/**
 * DOC: heap tables - which heap a buffer comes from, by who will touch it
 *
 * A heap table maps devices and usages (``camera``, ``gpu-render``,
 * ``display-scanout``, ...) to ordered lists of the heaps each accepts,
 * with each device's constraints (alignment, size limits, contiguous
 * memory) and each heap's properties. It is an INI file; docs/heap-table.md
 * describes the format and the default table, data/heaps.ini, which is also
 * built into the library.
 *
 * fl_heap_table_alloc() takes the set of devices that will touch a buffer
 * and allocates it from the best heap that every one of them lists and
 * whose constraints all pass. Which heap is best does not depend on the
 * order in which the devices are named: among the heaps every device
 * lists, the one whose worst position in any device's list is the highest
 * wins; ties go to the smaller sum of positions, then to the heap defined
 * first in the file. A heap that runs out of memory passes the request on
 * to the next candidate, as ION's heap mask did; a table that must not fall
 * back lists one heap. When no heap fits, the error message names every
 * candidate and the device and constraint that ruled it out.
 *
 * Ownership: the table owns the heaps it opens (one per ``[heap]``
 * section whose kind this library provides), for its whole life; a heap
 * whose kind is not available here (``system-contig``, ``dma-heap:NAME``
 * in this version) is skipped as "unavailable". Buffers are fds the caller
 * owns, given back with fl_heap_table_buffer_free().
 *
 * Messages: functions that can fail for a reason a person must read take
 * ``err`` and ``err_size``, a buffer the caller owns, and write a
 * NUL-terminated message there on failure (cut to fit, ending in "...",
 * when the buffer is too small; @err NULL or @err_size 0 writes nothing).
 * The library never prints on its own. Parse errors read like a
 * compiler's: ``FILE:LINE:COLUMN: what was wrong``.
 *
 * Threads: once loaded, a table is never changed, so every function but
 * fl_heap_table_close() may be called from any thread at any time.
 */
#ifndef FENCELINE_HEAP_TABLE_H
#define FENCELINE_HEAP_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include <fenceline/export.h>
#include <fenceline/heap.h>

FL_BEGIN_DECLS

struct fl_heap_table;

/** A message buffer of this size holds any parse error and most others whole. */
#define FL_HEAP_TABLE_ERROR_MAX 512

/** The largest table file or string the loaders accept, in bytes. */
#define FL_HEAP_TABLE_MAX_BYTES (1024 * 1024)

/**
 * fl_heap_table_load_string() - parse a table from memory
 * @text: the table's text (borrowed); need not be NUL-terminated
 * @len: bytes of @text, at most %FL_HEAP_TABLE_MAX_BYTES
 * @origin: the name messages give the text, e.g. a file name; NULL gives
 *	"<string>"
 * @ret_table: on success, the table, owned by the caller
 *	(fl_heap_table_close())
 * @err: on failure, the message (see the DOC section); may be NULL
 * @err_size: bytes of @err
 *
 * Parses the whole text, then opens one heap per ``[heap]`` section whose
 * kind is available.
 * Return: 0; -EINVAL (a parse error, with ``ORIGIN:LINE:COLUMN:`` in the
 * message; or @text NULL with @len not 0, or @ret_table NULL); -EFBIG (@len
 * over %FL_HEAP_TABLE_MAX_BYTES); -ENOMEM.
 */
FL_EXPORT int fl_heap_table_load_string(const char *text, size_t len, const char *origin,
					struct fl_heap_table **ret_table, char *err,
					size_t err_size);

/**
 * fl_heap_table_load_file() - read and parse a table file
 * @path: the file (borrowed)
 * @ret_table: on success, the table, owned by the caller
 * @err: on failure, the message, naming @path; may be NULL
 * @err_size: bytes of @err
 *
 * As fl_heap_table_load_string() with the file's contents and @path as
 * the origin.
 * Return: 0; -EINVAL (a parse error; @path or @ret_table NULL; @path is
 * not a regular file); -ENOENT, -EACCES, -EISDIR and the other errors of
 * open() and read(); -EFBIG (larger than %FL_HEAP_TABLE_MAX_BYTES);
 * -ENOMEM.
 */
FL_EXPORT int fl_heap_table_load_file(const char *path, struct fl_heap_table **ret_table, char *err,
				      size_t err_size);

/**
 * fl_heap_table_load_default() - the built-in default table
 * @ret_table: on success, the table, owned by the caller
 * @err: on failure, the message; may be NULL
 * @err_size: bytes of @err
 *
 * The text of data/heaps.ini as it was when the library was built (the
 * build embeds the file, so the two cannot differ), with origin
 * "heaps.ini (built-in)".
 * Return: 0, -EINVAL (@ret_table NULL) or -ENOMEM.
 */
FL_EXPORT int fl_heap_table_load_default(struct fl_heap_table **ret_table, char *err,
					 size_t err_size);

/**
 * fl_heap_table_load_system() - the table this system should use
 * @ret_table: on success, the table, owned by the caller
 * @err: on failure, the message; may be NULL
 * @err_size: bytes of @err
 *
 * The file named by the environment variable ``FENCELINE_HEAP_TABLE`` if
 * it is set and not empty, otherwise the built-in default. A file that
 * fails to load is an error, never a silent fall back to the default.
 * Return: as fl_heap_table_load_file() or fl_heap_table_load_default().
 */
FL_EXPORT int fl_heap_table_load_system(struct fl_heap_table **ret_table, char *err,
					size_t err_size);

/**
 * fl_heap_table_close() - close a table and the heaps it opened
 * @table: the table, owned by the caller; NULL does nothing
 *
 * As fl_heap_close() for each heap: buffers never freed stay valid, owned
 * by whoever holds their fds. Do not call this while another thread still
 * uses @table, or a heap from fl_heap_table_get_heap().
 */
FL_EXPORT void fl_heap_table_close(struct fl_heap_table *table);

/**
 * fl_heap_table_alloc() - allocate a buffer that every named device accepts
 * @table: the table (borrowed)
 * @devices: the names of the devices or usages that will touch the buffer
 *	(borrowed); the order does not matter, repeats are ignored
 * @num_devices: entries of @devices, 1 to 64
 * @len: the buffer's size in bytes; the buffer is @len rounded up to the
 *	chosen heap's alignment (a carveout's ``align``, else the page size)
 * @flags: reserved, must be 0
 * @ret_fd: on success, the buffer's fd (as fl_heap_alloc()), owned by the
 *	caller; give it back with fl_heap_table_buffer_free()
 * @ret_heap: on success, if not NULL, the heap it came from (borrowed from
 *	@table, valid until fl_heap_table_close())
 * @err: on failure, the message; may be NULL
 * @err_size: bytes of @err
 *
 * Each device's own limits (``min-size``, ``max-size``) are checked first.
 * Then the candidates, the heaps every device lists, are tried in the
 * order the DOC section defines: a candidate is skipped when it is
 * unavailable, when a device's constraint (``align``, ``contiguous``) or
 * one of the heap's (``min-size``, ``max-size``, a carveout's capacity)
 * fails, or when it is out of memory. The message then names, for each
 * heap, the device and constraint that ruled it out, e.g.
 * "display-scanout: size 40000000 exceeds its max-size 33554432".
 * Return: 0; -EINVAL (@table, @devices or @ret_fd NULL, @num_devices 0 or
 * over 64, @len 0, @flags not 0, or a constraint ruled out the best
 * candidate); -ENODEV (a name is no device of @table, no heap is listed by
 * every device, or every such heap is unavailable); -E2BIG (@len exceeds a
 * device's max-size, or the size limits of every candidate that got that
 * far); -ENOMEM (every candidate that passed the constraints was out of
 * memory); -EMFILE. When several candidates fail, the error is that of the
 * one that got furthest (unavailable, then constraints, then memory), the
 * best-placed one on a tie.
 */
FL_EXPORT int fl_heap_table_alloc(struct fl_heap_table *table, const char *const *devices,
				  size_t num_devices, size_t len, unsigned int flags, int *ret_fd,
				  struct fl_heap **ret_heap, char *err, size_t err_size);

/**
 * fl_heap_table_buffer_free() - give back a buffer from fl_heap_table_alloc()
 * @table: the table that allocated it (borrowed)
 * @fd: any fd of the buffer; closed on success
 *
 * fl_heap_buffer_free() on the heap of @table that holds the buffer.
 * Return: 0; -EINVAL (@table NULL, or @fd is no live buffer of any heap of
 * @table: it stays open); -EBADF (@fd is not an open fd).
 */
FL_EXPORT int fl_heap_table_buffer_free(struct fl_heap_table *table, int fd);

/**
 * fl_heap_table_free() - the old name of fl_heap_table_buffer_free()
 * @table: the table that allocated it (borrowed)
 * @fd: any fd of the buffer; closed on success
 *
 * Deprecated: the name said it frees the table, but it frees a buffer (the
 * table goes with fl_heap_table_close()). The same function as
 * fl_heap_table_buffer_free(), exported under this name too; the next
 * release still has it, the one after drops it (docs/changelog.md).
 * Return: as fl_heap_table_buffer_free().
 */
FL_EXPORT int fl_heap_table_free(struct fl_heap_table *table, int fd)
	FL_DEPRECATED("fl_heap_table_free() frees a buffer: use fl_heap_table_buffer_free()");

/**
 * fl_heap_table_explain() - write why each heap would or would not be used
 * @table: the table (borrowed)
 * @devices: the devices, as for fl_heap_table_alloc() (borrowed)
 * @num_devices: entries of @devices, 1 to 64
 * @len: the buffer size to judge
 * @out: the stream (borrowed)
 *
 * Writes, for the heaps any of the devices lists, one line each in the
 * order fl_heap_table_alloc() would try them (the heaps not listed by every
 * device last): the heap's name and kind and either "candidate" with the
 * size it would allocate, or why it is ruled out. A carveout also shows
 * its largest free block now, which says whether the allocation would fit
 * at this moment. The last line says which heap fl_heap_table_alloc()
 * would pick first, or what it would return. Nothing is allocated. For
 * people, not parsers: the format may change.
 * Return: 0 (whatever the verdict); -EINVAL (@table, @devices or @out NULL,
 * @num_devices 0 or over 64, @len 0); -ENODEV (a name is no device of
 * @table; nothing written); -EIO (writing failed).
 */
FL_EXPORT int fl_heap_table_explain(struct fl_heap_table *table, const char *const *devices,
				    size_t num_devices, size_t len, FILE *out);

/**
 * fl_heap_table_get_heap() - one of the table's heaps, by its section name
 * @table: the table (borrowed)
 * @name: the name in ``[heap NAME]``
 * @ret_heap: on success, the heap, borrowed from @table (valid until
 *	fl_heap_table_close()), e.g. for fl_heap_get_info()
 *
 * Return: 0; -EINVAL (an argument NULL); -ENOENT (no such heap in @table);
 * -ENODEV (the heap's kind is unavailable here).
 */
FL_EXPORT int fl_heap_table_get_heap(struct fl_heap_table *table, const char *name,
				     struct fl_heap **ret_heap);

/**
 * fl_heap_table_print() - write the table back as INI, as it was understood
 * @table: the table (borrowed)
 * @out: the stream (borrowed)
 *
 * Writes each heap with its kind and the keys that were set, sizes in
 * bytes, and a comment with its effective alignment, whether it is
 * contiguous and whether it is available here (or why not); then each
 * device with its list and constraints. Comments in the source are not
 * kept. The output parses again into the same table, and prints the same.
 * Return: 0, -EINVAL (an argument NULL) or -EIO.
 */
FL_EXPORT int fl_heap_table_print(struct fl_heap_table *table, FILE *out);

FL_END_DECLS

#endif /* FENCELINE_HEAP_TABLE_H */

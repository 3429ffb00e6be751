/* SPDX-License-Identifier: MIT */
/*
 * Heap tables (<fenceline/heap-table.h>, docs/heap-table.md): the parser's
 * every error class with its line and column, loading files and the
 * environment override, the default table on this machine, the choice of
 * heap for a set of devices, and the messages that name the device and
 * the constraint that failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/heap-table.h>

#include "helpers.h"
#include "runner.h"

static char err[FL_HEAP_TABLE_ERROR_MAX];

static struct fl_heap_table *load(const char *text)
{
	struct fl_heap_table *t = NULL;
	int r;

	/* No dma-heap exists, whatever the machine has: "unavailable" is the same everywhere. */
	setenv("FENCELINE_DMA_HEAP_DIR", "/nonexistent/fenceline-test", 1);
	r = fl_heap_table_load_string(text, strlen(text), "t.ini", &t, err, sizeof(err));

	if (r)
		fl__test_fail(__FILE__, __LINE__, "load: %d: %s", r, err);
	return t;
}

/* Loading @text fails with -EINVAL and a message starting with @where. */
#define expect_parse_error(text, where, what) \
	expect_parse_error_at(__LINE__, text, strlen(text), where, what)

static void expect_parse_error_at(int line, const char *text, size_t len, const char *where,
				  const char *what)
{
	struct fl_heap_table *t = (void *)0x5e17;
	int r;

	err[0] = '\0';
	r = fl_heap_table_load_string(text, len, "t.ini", &t, err, sizeof(err));
	if (r != -EINVAL || t != (void *)0x5e17)
		fl__test_fail(__FILE__, line, "got %d, want -EINVAL (%s)", r, err);
	if (strncmp(err, where, strlen(where)) || !strstr(err, what))
		fl__test_fail(__FILE__, line, "message \"%s\", want \"%s...%s...\"", err, where,
			      what);
}

static char *print_table(struct fl_heap_table *t)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	fl_assert(out != NULL);
	fl_assert_int_eq(fl_heap_table_print(t, out), 0);
	fl_assert_int_eq(fclose(out), 0);
	return text;
}

static char *explain(struct fl_heap_table *t, const char *const *devs, size_t n, size_t len)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	fl_assert(out != NULL);
	fl_assert_int_eq(fl_heap_table_explain(t, devs, n, len, out), 0);
	fl_assert_int_eq(fclose(out), 0);
	return text;
}

static int alloc_from(struct fl_heap_table *t, const char *const *devs, size_t n, size_t len,
		      const char *want_heap)
{
	struct fl_heap *heap = NULL, *want = NULL;
	int fd = -1;

	if (fl_heap_table_alloc(t, devs, n, len, 0, &fd, &heap, err, sizeof(err)))
		fl__test_fail(__FILE__, __LINE__, "alloc of %zu for %s: %s", len, devs[0], err);
	fl_assert_int_eq(fl_heap_table_get_heap(t, want_heap, &want), 0);
	if (heap != want) {
		struct fl_heap_info info;

		fl_heap_get_info(heap, &info);
		fl__test_fail(__FILE__, __LINE__, "allocated from '%s', want '%s'", info.name,
			      want_heap);
	}
	return fd;
}

static void expect_alloc_error(int line, struct fl_heap_table *t, const char *const *devs, size_t n,
			       size_t len, int want, const char *what)
{
	int fd = 0x5e17, r;

	err[0] = '\0';
	r = fl_heap_table_alloc(t, devs, n, len, 0, &fd, NULL, err, sizeof(err));
	if (r != want || fd != 0x5e17)
		fl__test_fail(__FILE__, line, "got %d (%s), want %d", r, err, want);
	if (!strstr(err, what))
		fl__test_fail(__FILE__, line, "message \"%s\" lacks \"%s\"", err, what);
}

#define DEVS(...)  ((const char *const[]){ __VA_ARGS__ })
#define NDEVS(...) (sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))
#define expect_alloc_fails(t, len, want, what, ...) \
	expect_alloc_error(__LINE__, t, DEVS(__VA_ARGS__), NDEVS(__VA_ARGS__), len, want, what)

/* Parsing */

FL_TEST(valid_table_with_comments_quotes_suffixes_and_crlf_parses)
{
	static const char text[] =
		"# a comment\r\n"
		"; another\n"
		"\n"
		"  [heap  sys]   # trailing comment\n"
		"kind=system\n"
		"description = \"pageable \\\"memory\\\" \\\\ ; # not a comment\"\n"
		"\t[heap co]\n"
		"  kind  =  carveout\r\n"
		"size = 1M ; a comment after a value\n"
		"align = 64KiB\n"
		"max-size = 512K\n"
		"[heap cma]\n"
		"kind = \"dma-heap:linux,cma\"\n"
		"contiguous = true\n"
		"[device cam.era_2]\n"
		"heaps = co ,sys,  cma\n"
		"min-size = 0\n"
		"max-size = 1G\n"
		"align = 4096\n"
		"contiguous = no";
	struct fl_heap_table *t = load(text);
	char *printed = print_table(t);

	fl_assert(strstr(printed,
			 "[heap sys]\nkind = system\n"
			 "description = \"pageable \\\"memory\\\" \\\\ ; # not a comment\"\n"));
	fl_assert(strstr(printed, "[heap co]\nkind = carveout\nsize = 1048576\nalign = 65536\n"
				  "max-size = 524288\n# align 65536, contiguous, available\n"));
	fl_assert(strstr(printed, "[heap cma]\nkind = dma-heap:linux,cma\ncontiguous = yes\n"
				  "# align "));
	fl_assert(strstr(printed, "unavailable: the kernel has no such dma-heap"));
	fl_assert(strstr(printed, "[device cam.era_2]\nheaps = co, sys, cma\nalign = 4096\n"
				  "max-size = 1073741824\ncontiguous = no\n"));
	free(printed);
	fl_heap_table_close(t);
}

FL_TEST(printed_table_parses_back_to_the_same_table)
{
	struct fl_heap_table *t, *again;
	char *first, *second;

	fl_assert_int_eq(fl_heap_table_load_default(&t, err, sizeof(err)), 0);
	first = print_table(t);
	again = load(first);
	second = print_table(again);
	fl_assert_str_eq(first, second);
	free(first);
	free(second);
	fl_heap_table_close(t);
	fl_heap_table_close(again);
}

FL_TEST(every_parse_error_names_line_and_column)
{
	static const char heap[] = "[heap h]\nkind = system\n";
	static const char dev[] = "[device d]\nheaps = h\n";
	char text[4096];

	/* Lines and characters */
	expect_parse_error("[heap h]\nkind = sys\x01tem\n",
			   "t.ini:2:11:", "control character 0x01");
	expect_parse_error_at(__LINE__, "[heap h]\nkind = sys\0tem\n", 23,
			      "t.ini:2:11:", "control character 0x00");
	memset(text, 'x', sizeof(text));
	memcpy(text, "# ", 2);
	text[1030] = '\0';
	expect_parse_error(text, "t.ini:1:1025:", "line longer than 1024 bytes");
	expect_parse_error("[heap h]\nkind = syst\xc3\xa9m\n",
			   "t.ini:2:12:", "byte 0xc3 outside quotes");
	expect_parse_error("[heap h]\nkind = system\n\r[device d]\n",
			   "t.ini:3:1:", "control character 0x0d");

	/* Sections */
	expect_parse_error("kind = system\n", "t.ini:1:1:", "'kind' before the first");
	expect_parse_error("[heapx h]\n", "t.ini:1:2:", "unknown section type 'heapx'");
	expect_parse_error("[ ]\n", "t.ini:1:3:", "expected 'heap' or 'device'");
	expect_parse_error("[heap]\n", "t.ini:1:6:", "expected a space and a name after 'heap'");
	expect_parse_error("[heap h\n", "t.ini:1:8:", "expected ']' to close the section");
	expect_parse_error("[heap h i]\n", "t.ini:1:9:", "expected ']', not 'i'");
	expect_parse_error("[heap h] x\n", "t.ini:1:10:", "unexpected 'x' after ']'");
	expect_parse_error("[heap -h]\n", "t.ini:1:7:", "starts with a letter or digit, not '-'");
	expect_parse_error("[heap h/x]\n", "t.ini:1:8:", "'/' in a heap name");
	expect_parse_error("[device aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n",
			   "t.ini:1:9:", "longer than 31 bytes");
	snprintf(text, sizeof(text), "%s%s[heap h]\nkind = system\n", heap, dev);
	expect_parse_error(text, "t.ini:5:1:", "duplicate section [heap h] (first at line 1)");
	snprintf(text, sizeof(text), "%s%s\n[device d]\n", heap, dev);
	expect_parse_error(text, "t.ini:6:1:", "duplicate section [device d] (first at line 3)");

	/* Keys and values */
	expect_parse_error("[heap h]\nknd = system\n", "t.ini:2:1:",
			   "unknown key 'knd' in a [heap] section (known: kind, size");
	expect_parse_error("[heap h]\nheaps = a\n", "t.ini:2:1:", "unknown key 'heaps'");
	expect_parse_error("[device d]\nkind = system\n",
			   "t.ini:2:1:", "unknown key 'kind' in a [device] section (known: heaps");
	expect_parse_error("[heap h]\nkind = system\nkind = system\n",
			   "t.ini:3:1:", "duplicate key 'kind' (first set at line 2)");
	expect_parse_error("[heap h]\nkind system\n", "t.ini:2:6:", "expected '=' after 'kind'");
	expect_parse_error("[heap h]\nkind = # nothing\n", "t.ini:2:8:", "'kind' has no value");
	expect_parse_error("[heap h]\n=system\n", "t.ini:2:1:", "expected a key, a [section]");
	expect_parse_error("[heap h]\nkind = \"system\n", "t.ini:2:8:", "unterminated string");
	expect_parse_error("[heap h]\nkind = \"sys\\tem\"\n", "t.ini:2:12:", "unknown escape");
	expect_parse_error("[heap h]\nkind = \"system\" x\n",
			   "t.ini:2:17:", "unexpected 'x' after the closing '\"'");
	expect_parse_error("[heap h]\nkind = sytem\n", "t.ini:2:8:", "unknown kind 'sytem'");
	expect_parse_error("[heap h]\nkind = dma-heap:\n", "t.ini:2:8:", "takes a name");
	expect_parse_error("[heap h]\nkind = dma-heap:a/b\n",
			   "t.ini:2:18:", "'/' in a dma-heap name");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 1X\n",
			   "t.ini:3:9:", "unknown size suffix 'X'");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 1 M\n",
			   "t.ini:3:9:", "unknown size suffix ' M'");
	expect_parse_error("[heap h]\nkind = carveout\nsize = -1\n",
			   "t.ini:3:8:", "'size' takes a size");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 65T\n",
			   "t.ini:3:8:", "too large (at most 64T)");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 99999999999999999999999\n",
			   "t.ini:3:8:", "too large");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 0\n",
			   "t.ini:3:8:", "size must be at least 1");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 1M\nalign = 3K\n",
			   "t.ini:4:9:", "align 3072 is not a power of two");
	expect_parse_error("[device d]\ncontiguous = maybe\n",
			   "t.ini:2:14:", "'contiguous' is yes or no, not 'maybe'");
	snprintf(text, sizeof(text), "[heap h]\nkind = system\ndescription = \"%0200d\"\n", 0);
	expect_parse_error(text, "t.ini:3:15:", "description longer than 127 bytes");

	/* A section's keys together */
	expect_parse_error("[heap h]\nsize = 1M\n[device d]\n",
			   "t.ini:1:1:", "[heap h] has no 'kind'");
	expect_parse_error("[heap h]\nkind = carveout\n", "t.ini:1:1:", "needs 'size'");
	expect_parse_error("[heap h]\nkind = system\nsize = 1M\n", "t.ini:3:1:",
			   "'size' is only for carveout heaps, and kind 'system' is not one");
	expect_parse_error("[heap h]\nkind = system\nalign = 1M\n",
			   "t.ini:3:1:", "'align' can only be set on a carveout");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 1M\ncontiguous = no\n",
			   "t.ini:4:1:", "kind 'carveout' is always contiguous");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 100K\nalign = 64K\n",
			   "t.ini:3:1:", "size 102400 is not a multiple of align 65536");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 64K\nalign = 1M\n",
			   "t.ini:4:1:", "align 1048576 exceeds the size 65536");
	expect_parse_error("[heap h]\nkind = carveout\nsize = 64K\nmin-size = 1M\n",
			   "t.ini:4:1:", "no buffer could fit");
	expect_parse_error("[heap h]\nkind = system\nmin-size = 2M\nmax-size = 1M\n",
			   "t.ini:3:1:", "min-size 2097152 exceeds max-size 1048576");
	expect_parse_error("[device d]\nmin-size = 2M\nmax-size = 1M\nheaps = h\n",
			   "t.ini:2:1:", "min-size 2097152 exceeds max-size 1048576");
	expect_parse_error("[device d]\nalign = 4K\n", "t.ini:1:1:", "[device d] has no 'heaps'");

	/* Lists of heaps */
	expect_parse_error("[device d]\nheaps = a,,b\n", "t.ini:2:11:", "empty name in the list");
	expect_parse_error("[device d]\nheaps = a, b,\n", "t.ini:2:14:", "empty name in the list");
	expect_parse_error("[device d]\nheaps = a, b, a\n",
			   "t.ini:2:15:", "heap 'a' is listed twice");
	expect_parse_error("[device d]\nheaps = a b\n", "t.ini:2:10:", "a space in a heap name");
	expect_parse_error("[device d]\nheaps = \"a\"\n", "t.ini:2:9:", "not a quoted string");
	expect_parse_error("[device d]\nheaps = a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\n",
			   "t.ini:2:41:", "more than 16 heaps in one list");
	snprintf(text, sizeof(text), "%s[device d]\nheaps = h, carvout\n", heap);
	expect_parse_error(text, "t.ini:4:12:",
			   "device 'd' lists heap 'carvout', which no [heap] section defines");

	/* The table as a whole */
	expect_parse_error("", "t.ini:1:1:", "the table has no [device] section");
	expect_parse_error("# only\n# comments\n", "t.ini:2:1:", "no [device] section");
	expect_parse_error(heap, "t.ini:2:1:", "no [device] section");
}

FL_TEST(too_many_sections_is_an_error_at_the_one_too_many)
{
	size_t size = 80 * 64, at = 0;
	char *text = malloc(size);

	fl_assert(text != NULL);
	for (int i = 0; i < 65; i++)
		at += (size_t)snprintf(text + at, size - at, "[heap h%d]\nkind = system\n", i);
	expect_parse_error(text, "t.ini:129:1:", "more than 64 [heap] sections");
	at = 0;
	for (int i = 0; i < 129; i++)
		at += (size_t)snprintf(text + at, size - at, "[device d%d]\nheaps = h\n", i);
	expect_parse_error(text, "t.ini:257:1:", "more than 128 [device] sections");
	free(text);
}

FL_TEST(origin_names_the_string_and_a_small_buffer_gets_a_cut_message)
{
	struct fl_heap_table *t;
	char small[16];

	fl_assert_int_eq(fl_heap_table_load_string("!", 1, NULL, &t, err, sizeof(err)), -EINVAL);
	fl_assert_str_eq(err, "<string>:1:1: expected a key, a [section] or a comment, not '!'");
	memset(small, 'z', sizeof(small));
	fl_assert_int_eq(fl_heap_table_load_string("x", 1, NULL, &t, small, sizeof(small)),
			 -EINVAL);
	fl_assert_str_eq(small, "<string>:1:1...");
	/* No buffer: still the error, and nothing written anywhere. */
	fl_assert_int_eq(fl_heap_table_load_string("x", 1, NULL, &t, NULL, 0), -EINVAL);
	fl_assert_int_eq(fl_heap_table_load_string("x", 1, NULL, &t, small, 0), -EINVAL);
	fl_assert_str_eq(small, "<string>:1:1...");
}

FL_TEST(text_without_a_final_newline_or_nul_is_read_to_its_length_only)
{
	static const char text[] = "[heap h]\nkind = system\n[device d]\nheaps = h, junk";
	struct fl_heap_table *t = NULL;

	/* Cut before ", junk": the bytes after @len are never read. */
	fl_assert_int_eq(
		fl_heap_table_load_string(text, strlen(text) - 6, "t", &t, err, sizeof(err)), 0);
	fl_heap_table_close(t);
	fl_assert_int_eq(fl_heap_table_load_string(text, sizeof(text) - 1, "t", &t, err,
						   sizeof(err)),
			 -EINVAL);
	fl_assert_str_eq(err,
			 "t:4:12: device 'd' lists heap 'junk', which no [heap] section defines");
}

/* Files and the environment */

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "we");

	fl_assert(f != NULL);
	fl_assert_int_eq(fwrite(text, 1, len, f), len);
	fl_assert_int_eq(fclose(f), 0);
}

FL_TEST(file_errors_name_the_file_and_keep_the_errno)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	char path[512], fifo[512];
	struct fl_heap_table *t = (void *)0x5e17;
	char *big;

	fl_assert(dir != NULL);
	snprintf(path, sizeof(path), "%s/missing.ini", dir);
	fl_assert_int_eq(fl_heap_table_load_file(path, &t, err, sizeof(err)), -ENOENT);
	fl_assert(strstr(err, "missing.ini: cannot open: No such file or directory"));
	fl_assert_int_eq(fl_heap_table_load_file(dir, &t, err, sizeof(err)), -EISDIR);
	fl_assert(strstr(err, "is a directory"));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	fl_assert_int_eq(mkfifo(fifo, 0600), 0);
	fl_assert_int_eq(fl_heap_table_load_file(fifo, &t, err, sizeof(err)), -EINVAL);
	fl_assert(strstr(err, "not a regular file"));

	big = malloc(FL_HEAP_TABLE_MAX_BYTES + 1);
	fl_assert(big != NULL);
	memset(big, '\n', FL_HEAP_TABLE_MAX_BYTES + 1);
	snprintf(path, sizeof(path), "%s/big.ini", dir);
	write_file(path, big, FL_HEAP_TABLE_MAX_BYTES + 1);
	fl_assert_int_eq(fl_heap_table_load_file(path, &t, err, sizeof(err)), -EFBIG);
	fl_assert(strstr(err, "big.ini: 1048577 bytes, more than a table may have"));
	fl_assert_int_eq(fl_heap_table_load_string(big, FL_HEAP_TABLE_MAX_BYTES + 1, "big", &t, err,
						   sizeof(err)),
			 -EFBIG);
	/* Exactly the limit is allowed: it is then a table without devices. */
	write_file(path, big, FL_HEAP_TABLE_MAX_BYTES);
	fl_assert_int_eq(fl_heap_table_load_file(path, &t, err, sizeof(err)), -EINVAL);
	fl_assert(strstr(err, "big.ini:1048576:1: the table has no [device] section"));
	free(big);

	snprintf(path, sizeof(path), "%s/bad.ini", dir);
	write_file(path, "[heap h]\nkind = system\n[device d]\nheaps = h\nalign = 5\n",
		   strlen("[heap h]\nkind = system\n[device d]\nheaps = h\nalign = 5\n"));
	fl_assert_int_eq(fl_heap_table_load_file(path, &t, err, sizeof(err)), -EINVAL);
	fl_assert(strstr(err, "/bad.ini:5:9: align 5 is not a power of two"));
	fl_assert(t == (void *)0x5e17);
}

FL_TEST(built_in_default_is_data_heaps_ini)
{
	struct fl_heap_table *builtin, *file;
	char *a, *b;

	fl_assert_int_eq(fl_heap_table_load_default(&builtin, err, sizeof(err)), 0);
	fl_assert_int_eq(fl_heap_table_load_file(FL_DATA_DIR "/heaps.ini", &file, err, sizeof(err)),
			 0);
	a = print_table(builtin);
	b = print_table(file);
	fl_assert_str_eq(a, b);
	free(a);
	free(b);
	fl_heap_table_close(builtin);
	fl_heap_table_close(file);
}

FL_TEST(system_table_is_FENCELINE_HEAP_TABLE_or_the_default)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	struct fl_heap_table *t;
	struct fl_heap *heap;
	char path[512];

	snprintf(path, sizeof(path), "%s/mine.ini", dir);
	write_file(path, "[heap mine]\nkind = system\n[device d]\nheaps = mine\n",
		   strlen("[heap mine]\nkind = system\n[device d]\nheaps = mine\n"));
	fl_assert_int_eq(setenv("FENCELINE_HEAP_TABLE", path, 1), 0);
	fl_assert_int_eq(fl_heap_table_load_system(&t, err, sizeof(err)), 0);
	fl_assert_int_eq(fl_heap_table_get_heap(t, "mine", &heap), 0);
	fl_heap_table_close(t);

	/* A broken or missing file is an error, not the default in disguise. */
	snprintf(path, sizeof(path), "%s/none.ini", dir);
	fl_assert_int_eq(setenv("FENCELINE_HEAP_TABLE", path, 1), 0);
	fl_assert_int_eq(fl_heap_table_load_system(&t, err, sizeof(err)), -ENOENT);
	fl_assert(strstr(err, "none.ini"));

	fl_assert_int_eq(setenv("FENCELINE_HEAP_TABLE", "", 1), 0);
	fl_assert_int_eq(fl_heap_table_load_system(&t, err, sizeof(err)), 0);
	fl_assert_int_eq(fl_heap_table_get_heap(t, "carveout", &heap), 0);
	fl_heap_table_close(t);
	fl_assert_int_eq(unsetenv("FENCELINE_HEAP_TABLE"), 0);
	fl_assert_int_eq(fl_heap_table_load_system(&t, err, sizeof(err)), 0);
	fl_assert_int_eq(fl_heap_table_get_heap(t, "mine", &heap), -ENOENT);
	fl_heap_table_close(t);
}

/* The default table on this machine */

static const char *const default_devices[] = {
	"cpu", "gpu-render", "display-scanout", "camera", "video-decode", "video-encode",
};
#define NUM_DEFAULT_DEVICES (sizeof(default_devices) / sizeof(default_devices[0]))

FL_TEST(default_table_allocates_for_every_device_and_every_pair)
{
	struct fl_heap_table *t;

	fl_assert_int_eq(fl_heap_table_load_default(&t, err, sizeof(err)), 0);
	for (size_t i = 0; i < NUM_DEFAULT_DEVICES; i++) {
		for (size_t j = i; j < NUM_DEFAULT_DEVICES; j++) {
			const char *devs[] = { default_devices[i], default_devices[j] };
			struct fl_heap *heap;
			struct stat st;
			int fd = -1;

			if (fl_heap_table_alloc(t, devs, 2, 1 << 20, 0, &fd, &heap, err,
						sizeof(err)))
				fl__test_fail(__FILE__, __LINE__, "%s", err);
			fl_assert_int_eq(fstat(fd, &st), 0);
			fl_assert_int_eq(st.st_size, 1 << 20);
			fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
		}
	}
	fl_heap_table_close(t);
}

/* Without a cma dma-heap (none here: see load()), system-contig is next for contiguous users. */
FL_TEST(default_table_puts_contiguous_users_in_system_contig_without_cma)
{
	struct fl_heap_table *t;
	int fd;

	setenv("FENCELINE_DMA_HEAP_DIR", "/nonexistent/fenceline-test", 1);
	fl_assert_int_eq(fl_heap_table_load_default(&t, err, sizeof(err)), 0);
	fd = alloc_from(t, DEVS("camera"), 1, 4096, "system");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fd = alloc_from(t, DEVS("camera", "gpu-render"), 2, 4096, "system");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fd = alloc_from(t, DEVS("camera", "display-scanout"), 2, 3840 * 2160 * 4, "system-contig");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fd = alloc_from(t, DEVS("video-decode"), 1, 4096, "system-contig");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	expect_alloc_fails(t, 40000000, -E2BIG,
			   "display-scanout: size 40000000 exceeds its max-size 33554432", "camera",
			   "display-scanout");
	fl_heap_table_close(t);
}

/* Choosing a heap */

static const char choice_table[] = "[heap a]\nkind = system\n"
				   "[heap b]\nkind = system\n"
				   "[heap c]\nkind = system\n"
				   "[device x]\nheaps = a, b, c\n"
				   "[device y]\nheaps = c, b, a\n"
				   "[device z]\nheaps = b, c\n";

FL_TEST(choice_does_not_depend_on_the_order_devices_are_named)
{
	struct fl_heap_table *t = load(choice_table);
	int fd;

	fd = alloc_from(t, DEVS("x"), 1, 1, "a");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fd = alloc_from(t, DEVS("y"), 1, 1, "c");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	/* x, y: every heap's worst position is 2 but b's (1): b, either way round. */
	fd = alloc_from(t, DEVS("x", "y"), 2, 1, "b");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fd = alloc_from(t, DEVS("y", "x"), 2, 1, "b");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	/* y, z: c is 0 and 1, b is 1 and 0: a tie on both, so the first defined, b. */
	fd = alloc_from(t, DEVS("z", "y"), 2, 1, "b");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	/* Repeats are ignored. */
	fd = alloc_from(t, DEVS("x", "x", "x"), 3, 1, "a");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fl_heap_table_close(t);
}

FL_TEST(full_carveout_passes_the_buffer_to_the_next_heap)
{
	struct fl_heap_table *t = load("[heap small]\nkind = carveout\nsize = 2\n"
				       "[heap big]\nkind = system\n"
				       "[device d]\nheaps = small, big\n"
				       "[device only]\nheaps = small\n");
	int a, b;

	a = alloc_from(t, DEVS("d"), 1, 1, "small");
	b = alloc_from(t, DEVS("d"), 1, 1, "big");
	expect_alloc_fails(
		t, 1, -ENOMEM,
		"only: no heap can hold 1 bytes: heap 'small': out of memory (largest free "
		"block 0)",
		"only");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, a), 0);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, b), 0);
	a = alloc_from(t, DEVS("only"), 1, 1, "small");
	fl_assert_int_eq(fl_heap_table_buffer_free(t, a), 0);
	fl_heap_table_close(t);
}

FL_TEST(carveout_align_rounds_every_buffer_up_to_it)
{
	struct fl_heap_table *t = load("[heap co]\nkind = carveout\nsize = 1M\nalign = 64K\n"
				       "[heap sys]\nkind = system\n"
				       "[device codec]\nheaps = sys, co\nalign = 64K\n"
				       "[device any]\nheaps = sys, co\n");
	struct fl_heap *co;
	struct fl_heap_info info;
	struct stat st;
	int fd;

	/* The system heap gives only the page size: the codec gets the carveout. */
	fd = alloc_from(t, DEVS("codec"), 1, 1, "co");
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert_int_eq(st.st_size, 65536);
	fl_assert_int_eq(fl_heap_table_get_heap(t, "co", &co), 0);
	fl_assert_int_eq(fl_heap_get_info(co, &info), 0);
	fl_assert_int_eq(info.allocated, 65536);
	fl_assert_int_eq(info.largest_free, (1 << 20) - 65536);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fd = alloc_from(t, DEVS("any"), 1, 1, "sys");
	fl_assert_int_eq(fstat(fd, &st), 0);
	fl_assert_int_eq(st.st_size, fl_test_page_size());
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fl_heap_table_close(t);
}

static const char constraint_table[] =
	"[heap sys]\nkind = system\nmax-size = 1M\n"
	"[heap co]\nkind = carveout\nsize = 256K\nmin-size = 8K\n"
	"[heap contig]\nkind = dma-heap:none-contig\ncontiguous = yes\n"
	"[heap cma]\nkind = dma-heap:linux,cma\ncontiguous = yes\n"
	"[device scanout]\nheaps = cma, contig, co, sys\ncontiguous = yes\nmax-size = 2M\n"
	"[device gpu]\nheaps = sys, co, contig\n"
	"[device codec]\nheaps = co, sys\nalign = 1M\nmin-size = 4K\n"
	"[device cpu]\nheaps = sys\n"
	"[device isp]\nheaps = contig, cma\n";

FL_TEST(rejections_name_the_device_and_the_constraint)
{
	struct fl_heap_table *t = load(constraint_table);

	/* A device's own limits come first, whatever the heaps. */
	expect_alloc_fails(t, 3 << 20, -E2BIG, "scanout: size 3145728 exceeds its max-size 2097152",
			   "gpu", "scanout");
	expect_alloc_fails(t, 100, -EINVAL, "codec: size 100 is below its min-size 4096", "codec");
	/* Then each candidate, in order, with what ruled it out. */
	expect_alloc_fails(t, 512 << 10, -E2BIG,
			   "scanout: no heap can hold 524288 bytes: "
			   "heap 'cma': unavailable: the kernel has no such dma-heap; "
			   "heap 'contig': unavailable: the kernel has no such dma-heap; "
			   "heap 'co': size 524288 exceeds its capacity 262144; "
			   "heap 'sys': scanout needs contiguous memory, and the heap is not "
			   "contiguous",
			   "scanout");
	expect_alloc_fails(
		t, 4096, -EINVAL,
		"codec: no heap can hold 4096 bytes: heap 'co': codec needs align 1048576, "
		"and the heap gives ",
		"codec");
	expect_alloc_fails(t, 2 << 20, -E2BIG,
			   "heap 'sys': size 2097152 exceeds its max-size 1048576", "gpu");
	expect_alloc_fails(t, 4096, -EINVAL, "heap 'co': size 4096 is below its min-size 8192",
			   "scanout");
	/* No heap on every list: the device that left each one out. */
	expect_alloc_fails(t, 4096, -EINVAL,
			   "cpu, codec: no heap can hold 4096 bytes: heap 'sys': codec needs align "
			   "1048576",
			   "cpu", "codec");
	expect_alloc_fails(t, 4096, -EINVAL, "heap 'co': not listed by cpu", "codec", "cpu");
	expect_alloc_fails(t, 4096, -EINVAL, "heap 'cma': not listed by gpu", "scanout", "gpu",
			   "cpu");
	/* Only heaps some device leaves out: -ENODEV. */
	expect_alloc_fails(t, 4096, -ENODEV,
			   "cpu, isp: no heap can hold 4096 bytes: heap 'sys': not listed by isp; "
			   "heap 'contig': not listed by cpu; heap 'cma': not listed by cpu",
			   "cpu", "isp");
	/* Unknown devices, and bad arguments. */
	expect_alloc_fails(
		t, 4096, -ENODEV,
		"no device 'gpu-render' in the table (it has: scanout, gpu, codec, cpu, isp)",
		"gpu", "gpu-render");
	fl_heap_table_close(t);
}

FL_TEST(only_unavailable_heaps_is_enodev_and_says_so)
{
	struct fl_heap_table *t = load("[heap contig]\nkind = dma-heap:none-contig\n"
				       "[device d]\nheaps = contig\n");
	struct fl_heap *heap;

	expect_alloc_fails(t, 4096, -ENODEV,
			   "d: no heap can hold 4096 bytes: heap 'contig': unavailable: the kernel "
			   "has no such dma-heap",
			   "d");
	fl_assert_int_eq(fl_heap_table_get_heap(t, "contig", &heap), -ENODEV);
	fl_assert_int_eq(fl_heap_table_get_heap(t, "nope", &heap), -ENOENT);
	fl_heap_table_close(t);
}

FL_TEST(bad_alloc_arguments_are_einval_with_a_message)
{
	struct fl_heap_table *t = load(choice_table);
	const char *null_name[] = { "x", NULL };
	int fd = 0x5e17;

	fl_assert_int_eq(fl_heap_table_alloc(t, DEVS("x"), 1, 1, 1, &fd, NULL, err, sizeof(err)),
			 -EINVAL);
	fl_assert_str_eq(err, "flags must be 0");
	fl_assert_int_eq(fl_heap_table_alloc(t, DEVS("x"), 1, 0, 0, &fd, NULL, err, sizeof(err)),
			 -EINVAL);
	fl_assert_int_eq(fl_heap_table_alloc(t, DEVS("x"), 0, 1, 0, &fd, NULL, err, sizeof(err)),
			 -EINVAL);
	fl_assert_int_eq(fl_heap_table_alloc(t, DEVS("x"), 65, 1, 0, &fd, NULL, err, sizeof(err)),
			 -EINVAL);
	fl_assert_int_eq(fl_heap_table_alloc(t, null_name, 2, 1, 0, &fd, NULL, err, sizeof(err)),
			 -EINVAL);
	fl_assert_str_eq(err, "device name 1 is NULL");
	fl_assert_int_eq(fl_heap_table_alloc(t, DEVS("x"), 1, SIZE_MAX, 0, &fd, NULL, err,
					     sizeof(err)),
			 -E2BIG);
	fl_assert(strstr(err, "too large to round up"));
	fl_assert_int_eq(fd, 0x5e17);
	fl_heap_table_close(t);
}

FL_TEST(free_finds_the_heap_and_refuses_other_fds)
{
	struct fl_heap_table *t = load(choice_table);
	struct fl_heap *other;
	int fd, dupfd, foreign;

	fd = alloc_from(t, DEVS("y"), 1, 1, "c");
	dupfd = dup(fd);
	fl_assert_int_ge(dupfd, 0);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, dupfd), 0);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), -EINVAL); /* already given back */
	close(fd);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), -EBADF);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, -1), -EBADF);

	fl_assert_int_eq(fl_heap_open_system("other", &other), 0);
	fl_assert_int_eq(fl_heap_alloc(other, 1, 0, &foreign), 0);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, foreign), -EINVAL);
	fl_assert_int_eq(fcntl(foreign, F_GETFD), FD_CLOEXEC); /* still open */
	fl_assert_int_eq(fl_heap_buffer_free(other, foreign), 0);
	fl_heap_close(other);
	fl_heap_table_close(t);
}

/* Explaining */

FL_TEST(explain_lists_each_heap_in_order_with_its_verdict)
{
	struct fl_heap_table *t = load(constraint_table);
	char *text;

	text = explain(t, DEVS("scanout", "gpu"), 2, 64 << 10);
	fl_assert_str_eq(
		text, "scanout, gpu, 65536 bytes:\n"
		      "  co                   carveout             candidate: 65536 bytes, largest "
		      "free block now 262144\n"
		      "  contig               dma-heap:none-contig skipped: unavailable: the "
		      "kernel has no such dma-heap\n"
		      "  sys                  system               ruled out: scanout needs "
		      "contiguous memory, and the heap is not contiguous\n"
		      "  cma                  dma-heap:linux,cma   ruled out: not listed by gpu\n"
		      "result: heap 'co' first\n");
	free(text);
	text = explain(t, DEVS("scanout"), 1, 3 << 20);
	fl_assert_str_eq(text, "scanout, 3145728 bytes:\n"
			       "  no heap is judged: scanout: size 3145728 exceeds its max-size "
			       "2097152\nresult: -E2BIG\n");
	free(text);
	text = explain(t, DEVS("cpu", "codec"), 2, 4096);
	fl_assert(strstr(text, "result: -EINVAL\n"));
	free(text);
	fl_assert_int_eq(fl_heap_table_explain(t, DEVS("nope"), 1, 1, stdout), -ENODEV);
	fl_assert_int_eq(fl_heap_table_explain(t, DEVS("cpu"), 1, 1, NULL), -EINVAL);
	fl_heap_table_close(t);
}

FL_TEST(explain_shows_a_full_carveout_would_not_fit_now)
{
	struct fl_heap_table *t = load("[heap co]\nkind = carveout\nsize = 2\n"
				       "[device d]\nheaps = co\n");
	int fd = alloc_from(t, DEVS("d"), 1, 1, "co");
	char *text = explain(t, DEVS("d"), 1, 1);

	fl_assert(strstr(text, "largest free block now 0 (would not fit now)\nresult: heap 'co'"));
	free(text);
	fl_assert_int_eq(fl_heap_table_buffer_free(t, fd), 0);
	fl_heap_table_close(t);
}

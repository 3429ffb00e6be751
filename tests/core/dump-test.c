/* SPDX-License-Identifier: MIT */
/*
 * fl_debug_dump() and the dump a timed-out wait writes to stderr, checked
 * against the layout documented in include/fenceline/debug.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "helpers.h"
#include "runner.h"

static char *dump(void)
{
	char *text = NULL;
	size_t len = 0;

	fl_assert_int_eq(fl_debug_dump(&text, &len), 0);
	fl_assert(text != NULL);
	fl_assert_int_eq(strlen(text), len);
	return text;
}

static void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fl__test_fail(__FILE__, __LINE__, "dump lacks \"%s\":\n%s", needle, text);
}

static void assert_lacks(const char *text, const char *needle)
{
	if (strstr(text, needle))
		fl__test_fail(__FILE__, __LINE__, "dump still has \"%s\":\n%s", needle, text);
}

/* The line of @text that starts with @prefix, or a failure. */
static const char *line_starting(const char *text, const char *prefix)
{
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	fl__test_fail(__FILE__, __LINE__, "no line starts with \"%s\":\n%s", prefix, text);
}

static struct fl_timeline *new_timeline(const char *name, uint64_t value)
{
	struct fl_timeline *tl = NULL;

	fl_assert_int_eq(fl_sw_sync_timeline_create(name, 0, &tl), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, value), 0);
	return tl;
}

FL_TEST(dump_has_both_sections)
{
	char *text = dump();

	assert_contains(text, "timelines:\n--------------\n");
	assert_contains(text, "fences:\n--------------\n");
	fl_assert(strstr(text, "timelines:") < strstr(text, "fences:"));
	free(text);
}

FL_TEST(dump_lists_timeline_with_value_and_pending_points)
{
	struct fl_timeline *tl = new_timeline("gpu", 41);
	struct fl_fence *a = fl_test_fence_new(tl, 43, "a"), *b = fl_test_fence_new(tl, 42, "b");
	char *text = dump();
	const char *line = line_starting(text, "gpu sw_sync: 41 (2 pending)\n");

	/* Pending points follow their timeline, in signal order. */
	line = strchr(line, '\n') + 1;
	fl_assert_int_eq(strncmp(line, "  pt 42 active\n", 15), 0);
	line = strchr(line, '\n') + 1;
	fl_assert_int_eq(strncmp(line, "  pt 43 active\n", 15), 0);
	free(text);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(tl, 1), 0);
	text = dump();
	line_starting(text, "gpu sw_sync: 42 (1 pending)\n");
	assert_lacks(text, "  pt 42 active\n");
	free(text);
	fl_fence_unref(a);
	fl_fence_unref(b);
	fl_timeline_unref(tl);
}

FL_TEST(dump_lists_fence_with_points)
{
	struct fl_timeline *gpu = new_timeline("gpu", 41), *display = new_timeline("display", 12);
	struct fl_fence *g = fl_test_fence_new(gpu, 42, "g"),
			*d = fl_test_fence_new(display, 12, "d");
	struct fl_sync_pt_info pts[2];
	struct fl_fence *frame;
	char expect[128];
	char *text;

	fl_assert_int_eq(fl_fence_merge(g, d, "frame-12", 0, &frame), 0);
	fl_assert_int_eq(fl_fence_get_info(frame, NULL, pts, 2), 2);
	text = dump();
	line_starting(text, "frame-12: active\n");
	assert_contains(text, "frame-12: active\n  gpu_pt 42 / 41 active\n");
	snprintf(expect, sizeof(expect), "\n  display_pt 12 / 12 signaled @%llu.%09llu\n",
		 (unsigned long long)(pts[1].timestamp_ns / 1000000000u),
		 (unsigned long long)(pts[1].timestamp_ns % 1000000000u));
	assert_contains(text, expect);
	free(text);

	fl_assert_int_eq(fl_sw_sync_timeline_inc(gpu, 1), 0);
	text = dump();
	line_starting(text, "frame-12: signaled @");
	assert_contains(text, "  gpu_pt 42 / 42 signaled @");
	free(text);

	fl_fence_unref(frame);
	fl_fence_unref(g);
	fl_fence_unref(d);
	fl_timeline_unref(display);
	fl_timeline_unref(gpu);
}

FL_TEST(dump_shows_errors_by_errno_name)
{
	struct fl_timeline *tl = new_timeline("doomed", 0);
	struct fl_fence *f = fl_test_fence_new(tl, 5, "orphan");
	char *text;

	fl_timeline_kill(tl);
	text = dump();
	line_starting(text, "orphan: error ENOENT @");
	assert_contains(text, "  doomed_pt 5 / 0 error ENOENT @");
	free(text);
	fl_fence_unref(f);
}

FL_TEST(destroyed_objects_disappear_from_dump)
{
	struct fl_timeline *tl = new_timeline("ephemeral-tl", 0);
	struct fl_fence *f = fl_test_fence_new(tl, 1, "ephemeral-fence");
	char *text = dump();

	assert_contains(text, "ephemeral-tl sw_sync");
	assert_contains(text, "ephemeral-fence: active");
	free(text);

	fl_fence_unref(f);
	text = dump();
	assert_lacks(text, "ephemeral-fence");
	free(text);

	fl_timeline_unref(tl);
	text = dump();
	assert_lacks(text, "ephemeral-tl");
	free(text);
}

FL_TEST(debug_print_writes_the_dump)
{
	struct fl_timeline *tl = new_timeline("printed", 3);
	char *text = dump(), *printed = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&printed, &size);

	fl_assert(out != NULL);
	fl_assert_int_eq(fl_debug_print(out), 0);
	fl_assert_int_eq(fclose(out), 0);
	fl_assert_str_eq(printed, text);
	free(printed);
	free(text);
	fl_timeline_unref(tl);
}

/*
 * Runs fl_fence_wait(@f, @timeout_ms) with stderr sent to a temporary file
 * and returns what was written there.
 */
static char *wait_capturing_stderr(struct fl_fence *f, int timeout_ms, int *ret_wait)
{
	FILE *capture = tmpfile();
	char *text;
	long size;
	int saved;

	fl_assert(capture != NULL);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	fl_assert_int_ge(saved, 0);
	fl_assert_int_ge(dup2(fileno(capture), STDERR_FILENO), 0);
	*ret_wait = fl_fence_wait(f, timeout_ms);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);

	size = lseek(fileno(capture), 0, SEEK_END);
	fl_assert_int_ge(size, 0);
	text = calloc(1, (size_t)size + 1);
	fl_assert(text != NULL);
	fl_assert_int_eq(pread(fileno(capture), text, (size_t)size, 0), size);
	fclose(capture);
	return text;
}

FL_TEST(wait_timeout_prints_dump_to_stderr)
{
	struct fl_timeline *tl = new_timeline("stuck-tl", 0);
	struct fl_fence *f = fl_test_fence_new(tl, 1, "stuck-fence");
	char *err;
	int r;

	unsetenv("FENCELINE_DUMP_ON_TIMEOUT");
	err = wait_capturing_stderr(f, 10, &r);
	fl_assert_int_eq(r, -ETIME);
	assert_contains(err, "timelines:\n");
	assert_contains(err, "stuck-tl sw_sync: 0 (1 pending)\n");
	assert_contains(err, "stuck-fence: active\n");
	free(err);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(dump_on_timeout_env_0_suppresses_it)
{
	struct fl_timeline *tl = new_timeline("quiet-tl", 0);
	struct fl_fence *f = fl_test_fence_new(tl, 1, "quiet-fence");
	char *err;
	int r;

	setenv("FENCELINE_DUMP_ON_TIMEOUT", "0", 1);
	err = wait_capturing_stderr(f, 10, &r);
	fl_assert_int_eq(r, -ETIME);
	assert_lacks(err, "quiet-fence");
	assert_lacks(err, "timelines:");
	free(err);
	unsetenv("FENCELINE_DUMP_ON_TIMEOUT");
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(wait_with_timeout_0_never_dumps)
{
	struct fl_timeline *tl = new_timeline("poll-tl", 0);
	struct fl_fence *f = fl_test_fence_new(tl, 1, "poll-fence");
	char *err;
	int r;

	unsetenv("FENCELINE_DUMP_ON_TIMEOUT");
	err = wait_capturing_stderr(f, 0, &r);
	fl_assert_int_eq(r, -ETIME);
	fl_assert_str_eq(err, "");
	free(err);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

FL_TEST(wait_that_succeeds_never_dumps)
{
	struct fl_timeline *tl = new_timeline("done-tl", 1);
	struct fl_fence *f = fl_test_fence_new(tl, 1, "done-fence");
	char *err;
	int r;

	unsetenv("FENCELINE_DUMP_ON_TIMEOUT");
	err = wait_capturing_stderr(f, 10, &r);
	fl_assert_int_eq(r, 0);
	fl_assert_str_eq(err, "");
	free(err);
	fl_fence_unref(f);
	fl_timeline_unref(tl);
}

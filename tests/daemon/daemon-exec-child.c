/* SPDX-License-Identifier: MIT */
/*
 * Run by daemon-test (fence_and_timeline_fds_survive_fork_and_exec) after
 * fork() + exec(): a program that shares nothing with the test but the fds
 * it inherited, named in argv:
 *
 *   daemon-exec-child TIMELINE_FD FENCE_FD
 *
 * The fence is at value 1 of the timeline, which is at 0 and named
 * "exec-tl"; the fence is named "exec-fence". The program checks the
 * fence is pending and what it holds, merges it with a fence of a timeline
 * of its own, signals the inherited timeline, and waits for both.
 * Exit status: 0 when everything held, else the number of the failed step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#define LONG_WAIT_MS 30000

static int parse_fd(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= 0 && v < 1 << 20 ? (int)v : -1;
}

int main(int argc, char **argv)
{
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	int tl, fence, own_tl, own, merged;
	uint64_t value;

	if (argc != 3)
		return 2;
	tl = parse_fd(argv[1]);
	fence = parse_fd(argv[2]);
	if (tl < 0 || fence < 0)
		return 3;
	/* The test cleared O_CLOEXEC; anything else would be a different fd. */
	if (fl_fence_fd_get_status(fence) != FL_STATUS_ACTIVE)
		return 4;
	if (fl_timeline_fd_get_value(tl, &value) != 0 || value != 0)
		return 5;
	if (fl_fence_fd_get_info(fence, &info, pts, 2) != 1)
		return 6;
	if (strcmp(info.name, "exec-fence") || info.status != 0 || info.num_points != 1 ||
	    pts[0].value != 1 || strcmp(pts[0].timeline_name, "exec-tl"))
		return 7;

	if (fl_timeline_fd_create("exec-own", 0, &own_tl) != 0)
		return 10;
	if (fl_fence_fd_create(own_tl, 1, "exec-own", &own) != 0)
		return 11;
	if (fl_fence_fd_merge(fence, own, "exec-merged", 0, &merged) != 0)
		return 12;
	if (fl_fence_fd_get_info(merged, &info, pts, 2) != 2 || info.num_points != 2 ||
	    strcmp(info.name, "exec-merged") || info.status != 0)
		return 13;

	if (fl_timeline_fd_inc(tl, 1) != 0)
		return 20;
	if (fl_fence_fd_wait(fence, LONG_WAIT_MS) != 0)
		return 21;
	/* Half signalled: the merged fence still waits for our own timeline. */
	if (fl_fence_fd_wait(merged, 0) != -ETIME)
		return 22;
	if (fl_timeline_fd_inc(own_tl, 1) != 0)
		return 23;
	if (fl_fence_fd_wait(merged, LONG_WAIT_MS) != 0)
		return 24;
	if (fl_fence_fd_get_info(merged, &info, NULL, 0) != 0 || info.status != 1)
		return 25;
	if (fl_timeline_fd_get_value(tl, &value) != 0 || value != 1)
		return 26;

	close(merged);
	close(own);
	close(own_tl);
	close(fence);
	close(tl);
	return 0;
}

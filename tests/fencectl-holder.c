/* SPDX-License-Identifier: MIT */
/*
 * For fencectl-test.py: holds two timelines and three fences (one merged, one
 * name with a quote), signals one timeline part way, says "ready" and waits
 * for its stdin to close.
 */
#include <stdio.h>
#include <unistd.h>

#include <fenceline/shared.h>

int main(void)
{
	int gpu = -1, display = -1, frame = -1, vblank = -1, both = -1;
	char c;

	if (fl_timeline_fd_create("gpu", 0, &gpu) < 0 ||
	    fl_timeline_fd_create("disp\"lay", 0, &display) < 0 ||
	    fl_fence_fd_create(gpu, 5, "frame-1", &frame) < 0 ||
	    fl_fence_fd_create(display, 2, "vblank", &vblank) < 0 ||
	    fl_fence_fd_merge(frame, vblank, "both", 0, &both) < 0 ||
	    fl_timeline_fd_inc(gpu, 2) < 0)
		return 1;
	fl_daemon_flush();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

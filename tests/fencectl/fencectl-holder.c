/* SPDX-License-Identifier: MIT */
/*
 * For fencectl-test.py: holds two timelines and three fences (one merged, one
 * name with a quote), signals one timeline part way, says "ready" and waits
 * for its stdin to close. With "leak": also makes a fence every 20 ms and
 * never closes it, as a leaking program would. With "abandon": also makes
 * 200 fences on a timeline "abandon" that it holds and never signals, and
 * closes them at once.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stdbool.h>
#include <stdint.h>

#include <fenceline/shared.h>

int main(int argc, char **argv)
{
	int gpu = -1, display = -1, frame = -1, vblank = -1, both = -1, leaked;
	bool leak = argc > 1 && !strcmp(argv[1], "leak");
	bool abandon = argc > 1 && !strcmp(argv[1], "abandon");
	int kept = -1;
	struct pollfd in = { 0, POLLIN, 0 };
	char c;

	if (fl_timeline_fd_create("gpu", 0, &gpu) < 0 ||
	    fl_timeline_fd_create("disp\"lay", 0, &display) < 0 ||
	    fl_fence_fd_create(gpu, 5, "frame-1", &frame) < 0 ||
	    fl_fence_fd_create(display, 2, "vblank", &vblank) < 0 ||
	    fl_fence_fd_merge(frame, vblank, "both", 0, &both) < 0 ||
	    fl_timeline_fd_inc(gpu, 2) < 0)
		return 1;
	if (abandon) {
		if (fl_timeline_fd_create("abandon", 0, &kept) < 0)
			return 1;
		for (uint64_t v = 1; v <= 200; v++) {
			int fd;

			if (fl_fence_fd_create(kept, v, "abandoned", &fd) < 0)
				return 1;
			close(fd);
		}
	}
	fl_daemon_flush();
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (uint64_t v = 100;; v++) {
		if (poll(&in, 1, leak ? 20 : -1) == 1 && read(0, &c, 1) <= 0)
			return 0;
		if (leak && fl_fence_fd_create(gpu, v, "leaked", &leaked) < 0)
			return 1;
	}
}

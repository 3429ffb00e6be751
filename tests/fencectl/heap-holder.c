/* SPDX-License-Identifier: MIT */
/*
 * For fencectl-heaps-test.py: holds buffers from the daemon's heaps (1 MiB
 * from the carveout, 3 pages and then 1 page from the system heap, the 3
 * freed again so that its peak shows), says "ready PID" and waits for its
 * stdin to close.
 */
#include <stdio.h>
#include <unistd.h>

#include <fenceline/heap-daemon.h>

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int carve = -1, sys = -1, gone = -1;
	char c;

	if (fl_heap_daemon_alloc(FL_HEAP_DAEMON_CARVEOUT, 1 << 20, 0, &carve) < 0 ||
	    fl_heap_daemon_alloc(FL_HEAP_DAEMON_SYSTEM, 3 * (size_t)page, 0, &gone) < 0 ||
	    fl_heap_daemon_alloc(FL_HEAP_DAEMON_SYSTEM, (size_t)page, 0, &sys) < 0 ||
	    fl_heap_daemon_buffer_free(gone) < 0)
		return 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

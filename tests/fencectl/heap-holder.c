/* SPDX-License-Identifier: MIT */
/*
 * For fencectl-heaps-test.py: holds buffers from the daemon's heaps (1 MiB
 * from the carveout, 3 pages and then 1 page from the system heap, the 3
 * freed again so that its peak shows), says "ready PID" and waits for its
 * stdin to close.
 *
 * "heap-holder churn PAGES N": allocates and frees a buffer of PAGES pages
 * from the system heap N times (the daemon's pool gate's samples), says
 * "done" and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/heap-daemon.h>

static int churn(size_t len, long n)
{
	for (long i = 0; i < n; i++) {
		int fd = -1;

		if (fl_heap_daemon_alloc(FL_HEAP_DAEMON_SYSTEM, len, 0, &fd) < 0 ||
		    fl_heap_daemon_buffer_free(fd) < 0)
			return 1;
	}
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	int carve = -1, sys = -1, gone = -1;
	char c;

	if (argc == 4 && !strcmp(argv[1], "churn"))
		return churn((size_t)page * strtoul(argv[2], NULL, 10), strtol(argv[3], NULL, 10));

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

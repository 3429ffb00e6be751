/* SPDX-License-Identifier: MIT */
/*
 * A heap pool's worker gone wrong, for heap-pool-test: started in place of
 * fl-heap-worker (FENCELINE_HEAP_WORKER), it takes the recipe like the real
 * one and then answers the first request as FL_BAD_WORKER_MODE says:
 * "exit" (hangs up), "version", "count" (claims more fds than it attaches),
 * "excess" (settles more buffers than were asked), "junk" (a short
 * message) or "framing" (a message without the transfer's header). The pool must stop asking, close what it got and go on
 * allocating by itself.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/transfer.h>

#include "worker-proto.h"

int main(void)
{
	const char *mode = getenv("FL_BAD_WORKER_MODE");
	struct fl_heap_worker_req req;
	struct fl_heap_worker_made m = { .version = FL_HEAP_WORKER_VERSION };
	struct stat st;
	int fds[FL_HEAP_WORKER_BATCH], fd;
	unsigned int nfds;
	size_t len;

	if (fork() != 0)
		_exit(0);
	if (fl_recv(FL_HEAP_WORKER_FD, &req, sizeof(req), &len, fds, FL_HEAP_WORKER_BATCH, &nfds) <
		    0 ||
	    !mode || !strcmp(mode, "exit"))
		return 0;
	if (fl_recv(FL_HEAP_WORKER_FD, &req, sizeof(req), &len, fds, FL_HEAP_WORKER_BATCH, &nfds) <
		    0 ||
	    req.nmake == 0)
		return 0;
	fd = memfd_create("bad", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)req.make[0].size) < 0 || fstat(fd, &st) < 0)
		return 1;
	m.size = req.make[0].size;
	m.asked = 1;
	m.n = 1;
	m.id[0].dev = st.st_dev;
	m.id[0].ino = st.st_ino;
	if (!strcmp(mode, "version"))
		m.version++;
	else if (!strcmp(mode, "count"))
		m.n = m.asked = 2; /* with one fd */
	else if (!strcmp(mode, "excess"))
		m.asked = req.make[0].count + 5;
	if (!strcmp(mode, "framing")) {
		/* Not even the transfer's header: a bare sendmsg(). */
		if (write(FL_HEAP_WORKER_FD, &m, sizeof(m)) < 0)
			return 1;
	} else {
		fl_send(FL_HEAP_WORKER_FD, &m, !strcmp(mode, "junk") ? 3 : sizeof(m), &fd, 1);
	}
	close(fd);
	/* Then waits for the pool to hang up, as a real worker would. */
	while (fl_recv(FL_HEAP_WORKER_FD, &req, sizeof(req), &len, fds, FL_HEAP_WORKER_BATCH,
		       &nfds) == 0)
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
	return 0;
}

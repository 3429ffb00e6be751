/* SPDX-License-Identifier: MIT */
/*
 * fl-heap-worker: a heap pool's helper process (docs/heap.md, "Pools").
 *
 * A process, not a thread: a thread that makes and frees files while the
 * program maps and unmaps buffers shares its address space, so every
 * munmap() in the program becomes a TLB shootdown IPI to the CPU the thread
 * runs on (2-3x the cost of the munmap on a VM, measured). In its own
 * process it shares only the files.
 *
 * Started by pool.c with its socket at fd 3 (worker-proto.h). It forks at
 * once and the first process exits, so the program that started it never
 * gets a SIGCHLD for it later and never has to reap it; the worker leaves
 * the session so that a terminal's ^C goes to the program only, and exits
 * when the pool hangs up (fl_heap_close(), or the program's death).
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/transfer.h>

#include "worker-proto.h"

static int sock = FL_HEAP_WORKER_FD;
static struct fl_heap_recipe recipe;

/* One message and its fds (CLOEXEC): its length, or -1 at EOF or on an error. */
static ssize_t receive(struct fl_heap_worker_req *req, int *fds, unsigned int *nfds)
{
	size_t len = 0;

	*nfds = 0;
	if (fl_recv(sock, req, sizeof(*req), &len, fds, FL_HEAP_WORKER_BATCH, nfds) < 0)
		return -1;
	return (ssize_t)len;
}

/* Sends @m with its fds; false if the pool is gone. */
static int send_made(struct fl_heap_worker_made *m, const int *fds)
{
	struct timespec ts;

	/* What pooling costs in this process: the pool weighs it by how busy the machine is. */
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
		m->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return fl_send(sock, m, sizeof(*m), fds, m->n) == 0;
}

/* Makes @count buffers of @size, sent in batches. False if the pool is gone. */
static int make(uint64_t size, uint32_t count)
{
	while (count) {
		struct fl_heap_worker_made m = { .version = FL_HEAP_WORKER_VERSION, .size = size };
		int fds[FL_HEAP_WORKER_BATCH], ok;

		m.asked = count < FL_HEAP_WORKER_BATCH ? count : FL_HEAP_WORKER_BATCH;
		while (m.n < m.asked) {
			struct stat st;
			int fd, r = fl__heap_make(&recipe, (size_t)size, &fd);

			if (r == 0 && fstat(fd, &st) < 0) {
				r = -errno;
				close(fd);
			}
			if (r < 0) {
				m.error = r;
				break;
			}
			m.id[m.n].dev = st.st_dev;
			m.id[m.n].ino = st.st_ino;
			fds[m.n++] = fd;
		}
		ok = send_made(&m, fds);
		for (uint32_t i = 0; i < m.n; i++)
			close(fds[i]);
		if (!ok)
			return 0;
		/* Out of memory or fds: the rest would fail too; the pool asks again. */
		if (m.error) {
			m.asked = count - m.asked;
			m.n = 0;
			if (m.asked && !send_made(&m, fds))
				return 0;
			return 1;
		}
		count -= m.asked;
	}
	return 1;
}

static int setup(void)
{
	struct fl_heap_worker_req buf, req;
	unsigned int nfds;
	int fds[FL_HEAP_WORKER_BATCH];
	ssize_t n = receive(&buf, fds, &nfds);

	if (n < 0 || !fl__heap_worker_req_ok(&buf, (size_t)n, nfds, &req) ||
	    req.type != FL_HEAP_WORKER_SETUP) {
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
		return 0;
	}
	recipe = req.recipe;
	recipe.dev_fd = nfds ? fds[0] : -1;
	return 1;
}

static int serve(void)
{
	struct fl_heap_worker_req buf, req;
	int fds[FL_HEAP_WORKER_BATCH];
	unsigned int nfds;
	ssize_t n = receive(&buf, fds, &nfds);
	int ok = n >= 0 && fl__heap_worker_req_ok(&buf, (size_t)n, nfds, &req) &&
		 req.type == FL_HEAP_WORKER_WORK;

	/* Freed buffers first: their memory may be what the new ones need. */
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
	for (uint32_t i = 0; ok && i < req.nmake; i++)
		ok = make(req.make[i].size, req.make[i].count);
	return ok;
}

int main(int argc, char **argv)
{
	struct stat st;
	pid_t pid;

	(void)argv;
	if (argc != 1 || fstat(sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr,
			"fl-heap-worker: started by the fenceline library's heap pools, "
			"with their socket at fd %d; not a command\n",
			FL_HEAP_WORKER_FD);
		return 2;
	}
	/*
	 * Whatever else the program let through exec (a pipe's write end,
	 * say) is not the worker's to hold open.
	 */
	close_range(FL_HEAP_WORKER_FD + 1, ~0u, 0);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0)
		_exit(0);
	setsid();
	if (!setup())
		return 1;
	while (serve())
		;
	return 0;
}

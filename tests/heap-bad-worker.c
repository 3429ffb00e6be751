/* SPDX-License-Identifier: MIT */
/*
 * A heap pool's worker gone wrong, for heap-pool-test: started in place of
 * fl-heap-worker (FENCELINE_HEAP_WORKER), it takes the recipe like the real
 * one and then answers the first request as FL_BAD_WORKER_MODE says:
 * "exit" (hangs up), "version", "count" (claims more fds than it attaches),
 * "excess" (settles more buffers than were asked) or "junk" (a short
 * message). The pool must stop asking, close what it got and go on
 * allocating by itself.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker-proto.h"

static void send_with_fd(const void *buf, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	memset(&ctl, 0, sizeof(ctl));
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	sendmsg(FL_HEAP_WORKER_FD, &msg, MSG_NOSIGNAL);
}

int main(void)
{
	const char *mode = getenv("FL_BAD_WORKER_MODE");
	struct fl_heap_worker_req req;
	struct fl_heap_worker_made m = { .version = FL_HEAP_WORKER_VERSION };
	struct stat st;
	char ctl[256];
	struct iovec iov = { &req, sizeof(req) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl };
	int fd;

	if (fork() != 0)
		_exit(0);
	msg.msg_controllen = sizeof(ctl);
	if (recvmsg(FL_HEAP_WORKER_FD, &msg, 0) <= 0 || !mode || !strcmp(mode, "exit"))
		return 0;
	msg.msg_controllen = sizeof(ctl);
	if (recvmsg(FL_HEAP_WORKER_FD, &msg, 0) <= 0 || req.nmake == 0)
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
		m.n = 2;
	else if (!strcmp(mode, "excess"))
		m.asked = req.make[0].count + 5;
	send_with_fd(&m, !strcmp(mode, "junk") ? 3 : sizeof(m), fd);
	close(fd);
	/* Then waits for the pool to hang up, as a real worker would. */
	msg.msg_controllen = sizeof(ctl);
	while (recvmsg(FL_HEAP_WORKER_FD, &msg, 0) > 0)
		msg.msg_controllen = sizeof(ctl);
	return 0;
}

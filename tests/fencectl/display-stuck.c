/* SPDX-License-Identifier: MIT */
/*
 * For fencectl-displays-test.py: a post that cannot reach the screen. A
 * child makes a timeline (TIMELINE, a name that tries to forge a line of
 * the text dump) and a fence "stuck-frame" on it at point 1, hands the
 * fence up and keeps the timeline without ever signalling it; this process
 * posts a simple buffer on display 0 with that fence as its acquire fence,
 * says "ready PID CHILD_PID" and waits for its stdin to close (then the
 * child, seeing our end close, exits too). With "many": also MANY_POSTS
 * posts of 56 small buffers, each waiting for the same fence: more than
 * one dump describes (256 fences).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/shared.h>

#define MANY_POSTS 5
#define XR24	   0x34325258u /* 'XR24' */
/* A name that tries to forge a line of the text dump, and needs escaping in JSON. */
#define TIMELINE "stuck-producer\nheld by: pid 1"

static int send_fd(int sock, int fd)
{
	char c = 0, ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &c, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1 || !(cm = CMSG_FIRSTHDR(&m)) ||
	    cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static int producer(int sock)
{
	int tl, fence;
	char c;

	if (fl_timeline_fd_create(TIMELINE, 0, &tl) < 0 ||
	    fl_fence_fd_create(tl, 1, "stuck-frame", &fence) < 0 || send_fd(sock, fence) < 0)
		return 1;
	close(fence);
	fl_daemon_flush();
	/* Hold the timeline, never signal it, until the poster is gone. */
	while (read(sock, &c, 1) < 0 && errno == EINTR)
		;
	return 0;
}

/* MANY_POSTS posts of FL_DISPLAY_MAX_BUFFERS 64x64 buffers on engine 0, all waiting for @fence. */
static int post_many(struct fl_display_handle *dev, int fence, struct fl_display_error *e)
{
	static struct fl_display_buffer bufs[FL_DISPLAY_MAX_BUFFERS];
	const uint32_t intf = 0;
	struct fl_display_post p = { &intf, 1, bufs, FL_DISPLAY_MAX_BUFFERS,
				     NULL,  0, 0,    FL_DISPLAY_FENCE_NONE };
	int mem = memfd_create("display-stuck", MFD_CLOEXEC);

	if (mem < 0 || ftruncate(mem, 64 * 256) < 0)
		return -1;
	for (size_t i = 0; i < FL_DISPLAY_MAX_BUFFERS; i++)
		bufs[i] = (struct fl_display_buffer){ .engine = 0,
						      .w = 64,
						      .h = 64,
						      .format = XR24,
						      .n_planes = 1,
						      .fd = { mem },
						      .pitch = { 256 },
						      .acquire_fence = fence };
	for (int i = 0; i < MANY_POSTS; i++)
		if (fl_display_post(dev, &p, NULL, e) < 0)
			return -1;
	close(mem);
	return 0;
}

int main(int argc, char **argv)
{
	struct fl_display_handle *dev, *intf;
	struct fl_display_interface_data id = { 0 };
	struct fl_display_error e = { 0, "" };
	struct fl_display_buffer b;
	uint32_t off, pitch;
	int sv[2], fence, buf, r;
	pid_t child;
	char c;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(sv[0]);
		_exit(producer(sv[1]));
	}
	close(sv[1]);
	fence = recv_fd(sv[0]);
	if (fence < 0) {
		fprintf(stderr, "display-stuck: no fence from the producer\n");
		return 1;
	}
	if (fl_display_device_open(0, &dev) < 0 || fl_display_interface_open(dev, 0, &intf) < 0 ||
	    fl_display_interface_get_data(intf, &id, &e) < 0 ||
	    fl_display_simple_buffer_alloc(intf, id.current_mode.hdisplay, id.current_mode.vdisplay,
					   XR24, &buf, &off, &pitch, &e) < 0) {
		fprintf(stderr, "display-stuck: display 0: %s\n", e.msg);
		return 1;
	}
	b = (struct fl_display_buffer){ .engine = 0,
					.w = id.current_mode.hdisplay,
					.h = id.current_mode.vdisplay,
					.format = XR24,
					.n_planes = 1,
					.fd = { buf },
					.offset = { off },
					.pitch = { pitch },
					.acquire_fence = fence };
	r = fl_display_simple_post(intf, &b, FL_DISPLAY_FENCE_NONE, NULL, &e);
	if (r < 0) {
		fprintf(stderr, "display-stuck: post: %s\n", e.msg);
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "many") && post_many(dev, fence, &e) < 0) {
		fprintf(stderr, "display-stuck: many posts: %s\n", e.msg);
		return 1;
	}
	close(fence);
	printf("ready %d %d\n", (int)getpid(), (int)child);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Hostile clients of the display service (issue 17 item 10, docs/display.md
 * "Hostile clients"): fd floods, 56 buffers of 4 bad plane fds, custom
 * data past the limit or lying about its size, posts as fast as a client
 * can make them. Each is refused or bounded, the service keeps no fd of
 * it, and a well-behaved client in another process goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "disp-fixture.h"
#include "runner.h"

/*
 * Wait until the service is back at @want fds: what a client sent is closed
 * on the service's loop, a moment after the reply the client saw.
 */
static void service_fds_settle(pid_t pid, int want)
{
	struct fl_display_stats st;
	struct disp d;

	/* A request answered after everything sent before it was handled. */
	disp_open(&d);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	disp_close(&d);
	for (int i = 0; i < 2000 && dl_proc_fd_count(pid) != want; i++)
		usleep(1000);
	fl_assert_int_eq(dl_proc_fd_count(pid), want);
}

/*
 * The fds the service holds when idle, but for @ret_keeper: a bare
 * connection that keeps it from its idle exit until the test closes it.
 */
static int service_fds_idle(pid_t *ret_pid, int *ret_keeper)
{
	struct fl_display_stats st;
	struct disp d;

	disp_open(&d);
	fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
	*ret_keeper = raw_connect();
	disp_close(&d);
	*ret_pid = service_pid();
	/* Once the disconnects above are handled. */
	return dl_daemon_fd_baseline(*ret_pid);
}

FL_TEST(a_post_of_56_buffers_of_4_bad_plane_fds_is_refused_and_leaks_nothing)
{
	struct fl_display_buffer bufs[FL_DISPLAY_MAX_BUFFERS];
	struct fl_display_error e = { 0 };
	struct disp d;
	int bad[4], idle, keeper, fence = -1;
	pid_t pid;
	int sv[2], pfd[2];

	idle = service_fds_idle(&pid, &keeper);
	disp_open(&d);
	/* Four kinds of fd that are no memory: a pipe, a socket, an eventfd, /dev/null. */
	fl_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	bad[0] = pfd[0];
	bad[1] = sv[0];
	bad[2] = eventfd(0, EFD_CLOEXEC);
	bad[3] = open("/dev/null", O_RDWR | O_CLOEXEC);
	fl_assert(bad[2] >= 0 && bad[3] >= 0);
	for (size_t i = 0; i < FL_DISPLAY_MAX_BUFFERS; i++) {
		bufs[i] = (struct fl_display_buffer){ .engine = d.eng_id,
						      .w = 64,
						      .h = 64,
						      .format = XR24,
						      .n_planes = 4,
						      .acquire_fence = -1 };
		for (size_t p = 0; p < 4; p++) {
			bufs[i].fd[p] = bad[(i + p) % 4];
			bufs[i].pitch[p] = 256;
		}
	}
	{
		struct fl_display_post post = { .intfs = &d.intf_id,
						.n_intfs = 1,
						.bufs = bufs,
						.n_bufs = FL_DISPLAY_MAX_BUFFERS,
						.fence_type = FL_DISPLAY_FENCE_RELEASE };

		fl_assert_int_eq(fl_display_post(d.dev, &post, &fence, &e), -EINVAL);
	}
	/* The reason names the buffer and the rule. */
	fl_assert(strstr(e.msg, "buffer 0") != NULL);
	/* The same with one plane each, the right count for XR24: the fd is what is wrong. */
	for (size_t i = 0; i < FL_DISPLAY_MAX_BUFFERS; i++)
		bufs[i].n_planes = 1;
	{
		struct fl_display_post post = { .intfs = &d.intf_id,
						.n_intfs = 1,
						.bufs = bufs,
						.n_bufs = FL_DISPLAY_MAX_BUFFERS };

		memset(&e, 0, sizeof(e));
		fl_assert_int_eq(fl_display_post(d.dev, &post, NULL, &e), -EINVAL);
		fl_assert(strstr(e.msg, "buffer 0") && strstr(e.msg, "plane 0"));
	}
	/* This client goes on, and the service kept none of the 224 fds. */
	attach_and_light(&d);
	fl_assert_int_eq(dpms_of(d.intf), FL_DISPLAY_DPMS_ON);
	disp_close(&d);
	service_fds_settle(pid, idle);
	for (size_t i = 0; i < 4; i++)
		close(bad[i]);
	close(pfd[1]);
	close(sv[1]);
	close(keeper);
}

/* Send a message with @nfds copies of @fd attached. */
static ssize_t send_with_fds(int sock, const void *msg, size_t len, int fd, unsigned int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 128)];
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	if (nfds) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		for (unsigned int i = 0; i < nfds; i++)
			memcpy(CMSG_DATA(cm) + i * sizeof(int), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

/* Read replies until the service hangs up; false if it does not within 10 s. */
static bool hung_up(int fd)
{
	unsigned char rep[512];
	struct pollfd p = { fd, POLLIN, 0 };

	for (;;) {
		if (poll(&p, 1, 10000) != 1)
			return false;
		ssize_t n = recv(fd, rep, sizeof(rep), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}

FL_TEST(fd_floods_are_cut_off_and_leave_no_fd_behind)
{
	int idle, keeper, fd, null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	uint32_t hello[6] = { 128, 0, 1, 8, 1, 0 };
	uint32_t post_fds[4] = { 142, 0, 1, 0 };
	pid_t pid;
	struct disp d;

	fl_assert(null >= 0);
	idle = service_fds_idle(&pid, &keeper);
	/* fds with a request that takes none: one answer, then the end. */
	fd = raw_connect();
	fl_assert_int_eq(send_with_fds(fd, hello, sizeof(hello), null, 128), sizeof(hello));
	fl_assert(hung_up(fd));
	close(fd);
	/* More fds ahead of a POST than any POST can take (56 × 5 + 1): cut off at the excess. */
	fd = raw_connect();
	for (int i = 0; i < 3; i++) {
		post_fds[2] = (uint32_t)i + 1;
		if (send_with_fds(fd, post_fds, sizeof(post_fds), null, 128) < 0) {
			fl_assert(errno == EPIPE || errno == ECONNRESET);
			break;
		}
	}
	fl_assert(hung_up(fd));
	close(fd);
	/* fds the service would keep, then the client goes: it keeps none of them. */
	fd = raw_connect();
	fl_assert_int_eq(send_with_fds(fd, post_fds, sizeof(post_fds), null, 128),
			 sizeof(post_fds));
	close(fd);
	service_fds_settle(pid, idle);
	/* Connections until this process runs out of fds: the service sheds or serves them, and
	 * a client connected before goes on. */
	disp_open(&d);
	{
		struct rlimit rl;
		int *held, n = 0, max;

		fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
		max = rl.rlim_cur > 1500 ? 1500 : (int)rl.rlim_cur;
		held = calloc((size_t)max, sizeof(int));
		fl_assert(held != NULL);
		for (; n < max; n++) {
			struct sockaddr_un a = { .sun_family = AF_UNIX };
			const char *dir = getenv("XDG_RUNTIME_DIR");

			held[n] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
			if (held[n] < 0)
				break;
			snprintf(a.sun_path, sizeof(a.sun_path), "%s/displayd.sock", dir);
			if (connect(held[n], (struct sockaddr *)&a, sizeof(a)) < 0) {
				close(held[n]);
				break;
			}
		}
		fl_assert(n >= 100);
		fl_assert_int_eq(fl_display_blank(d.intf, FL_DISPLAY_DPMS_ON, NULL), 0);
		fl_assert_int_eq(dpms_of(d.intf), FL_DISPLAY_DPMS_ON);
		for (int i = 0; i < n; i++)
			close(held[i]);
		free(held);
	}
	disp_close(&d);
	service_fds_settle(pid, idle);
	close(null);
	close(keeper);
}

FL_TEST(custom_data_past_the_limit_or_lying_about_its_size_is_refused)
{
	static unsigned char big[FL_DISPLAY_MAX_CUSTOM_DATA + 1];
	struct fl_display_error e = { 0 };
	struct fl_display_buffer b;
	struct disp d;
	int fd, buf;

	disp_open(&d);
	buf = simple_buffer(&d, 0x336699ffu, &b);
	{
		struct fl_display_post post = { .intfs = &d.intf_id,
						.n_intfs = 1,
						.bufs = &b,
						.n_bufs = 1,
						.custom = big,
						.custom_size = sizeof(big),
						.flags = FL_DISPLAY_POST_TEST_ONLY };

		fl_assert_int_eq(fl_display_post(d.dev, &post, NULL, &e), -EINVAL);
		fl_assert_str_eq(e.msg, "4097 bytes of custom data: ADF allows at most 4096");
	}
	/* On the wire: a POST that claims 1 MiB of custom data and brings 8 bytes. */
	fd = raw_connect();
	{
		struct {
			uint32_t hdr[4];
			uint32_t post[6];
			uint8_t custom[8];
		} m = { { 141, 0, 1, 24 + 8 }, { 0, 0, 0, 0, 0, 1u << 20 }, { 0 } };

		fl_assert_int_eq(send(fd, &m, sizeof(m), 0), sizeof(m));
	}
	fl_assert(hung_up(fd));
	close(fd);
	/* A message past the largest request: cut off, not truncated into something else. */
	fd = raw_connect();
	{
		static uint32_t m[FL_DISPLAY_MAX_CUSTOM_DATA * 8];

		m[0] = 141;
		m[2] = 1;
		m[3] = sizeof(m) - 16;
		fl_assert_int_eq(send(fd, m, sizeof(m), 0), sizeof(m));
	}
	fl_assert(hung_up(fd));
	close(fd);
	/* The well-behaved post still passes. */
	{
		struct fl_display_post post = { .intfs = &d.intf_id,
						.n_intfs = 1,
						.bufs = &b,
						.n_bufs = 1,
						.custom_size = 0,
						.flags = FL_DISPLAY_POST_TEST_ONLY };

		fl_assert_int_eq(fl_display_post(d.dev, &post, NULL, NULL), 0);
	}
	close(buf);
	disp_close(&d);
}

/*
 * A child posts as fast as it can (tens of kHz on a blanked panel, queue
 * full on a lit one), while this process watches its own vsync events and
 * asks for stats: neither waits on the flood.
 */
FL_TEST(posts_as_fast_as_a_client_can_make_them_do_not_stall_another)
{
	int go[2], stop[2], counted[2];
	pid_t child;
	struct disp d;
	uint64_t last = 0, posts = 0;
	int seen = 0;

	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(stop, O_CLOEXEC | O_NONBLOCK), 0);
	fl_assert_int_eq(pipe2(counted, O_CLOEXEC), 0);
	child = fork();
	fl_assert(child >= 0);
	if (child == 0) {
		struct disp c;
		struct fl_display_buffer b;
		uint64_t n = 0;
		char x;
		int buf, r = 0;

		disp_open(&c);
		buf = simple_buffer(&c, 0x804020ffu, &b);
		attach_and_light(&c);
		(void)!write(go[1], "g", 1);
		while (read(stop[0], &x, 1) != 1) {
			/* Real posts with no fence: they queue until the bound, then -EBUSY. */
			r = fl_display_simple_post(c.intf, &b, FL_DISPLAY_FENCE_NONE, NULL, NULL);
			if (r < 0 && r != -EBUSY)
				_exit(2);
			n++;
		}
		(void)!write(counted[1], &n, sizeof(n));
		close(buf);
		disp_close(&c);
		_exit(0);
	}
	{
		char x;

		fl_assert_int_eq(read(go[0], &x, 1), 1);
	}
	disp_open(&d);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_set_event(d.intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL), 0);
	/* 60 vsyncs (a second at 60 Hz) while the flood runs, each answered with stats. */
	while (seen < 60) {
		struct pollfd p = { fl_display_get_fd(d.intf), POLLIN, 0 };
		struct fl_display_event *ev = NULL;
		struct fl_display_stats st;

		fl_assert_int_eq(poll(&p, 1, 10000), 1);
		fl_assert_int_eq(fl_display_read_event(d.intf, &ev), 0);
		if (ev->type == FL_DISPLAY_EVENT_VSYNC) {
			const struct fl_display_vsync_event *v = (const void *)ev;

			fl_assert(v->timestamp > last);
			last = v->timestamp;
			seen++;
		}
		free(ev);
		fl_assert_int_eq(fl_display_device_get_stats(d.dev, &st, NULL), 0);
		/* The flood's posts wait within the per-client bound (MAX_QUEUED in the service). */
		fl_assert(st.queued <= 16);
	}
	fl_assert_int_eq(write(stop[1], "s", 1), 1);
	fl_assert_int_eq(read(counted[0], &posts, sizeof(posts)), sizeof(posts));
	{
		int status;

		fl_assert_int_eq(waitpid(child, &status, 0), child);
		fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	fprintf(stderr, "the flood made %" PRIu64 " post calls during 60 vsyncs\n", posts);
	/* It did flood: far more posts than vsyncs, so most were refused with -EBUSY. */
	fl_assert(posts > 600);
	disp_close(&d);
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(stop[i]);
		close(counted[i]);
	}
}

/* 56 YUV420 buffers of 64 × 64 in one memfd, each with @acquire: 224 fds a post. */
static void yuv_post(struct fl_display_buffer *b, int mem, int acquire)
{
	for (int i = 0; i < FL_DISPLAY_MAX_BUFFERS; i++)
		b[i] = (struct fl_display_buffer){
			.engine = 3, /* the default config's yuv420 engine */
			.w = 64,
			.h = 64,
			.format = FL_FOURCC('Y', 'U', '1', '2'),
			.n_planes = 3,
			.fd = { mem, mem, mem },
			.offset = { 0, 4096, 5120 },
			.pitch = { 64, 32, 32 },
			.acquire_fence = acquire
		};
}

/*
 * A child queues posts of 224 fds each, held by a fence it never signals,
 * until the service says no; reports how many it queued and the refusal.
 */
static void hoard(int report)
{
	struct fl_display_buffer b[FL_DISPLAY_MAX_BUFFERS];
	struct fl_display_error e = { 0 };
	struct disp c;
	int mem = memfd_create("yuv", MFD_CLOEXEC), tl = -1, acq = -1, n = 0, r;

	disp_open(&c);
	if (mem < 0 || ftruncate(mem, 6144) < 0 || fl_timeline_fd_create("never", 0, &tl) < 0 ||
	    fl_fence_fd_create(tl, 1, "never", &acq) < 0)
		_exit(2);
	yuv_post(b, mem, acq);
	{
		struct fl_display_post p = { .intfs = &c.intf_id,
					     .n_intfs = 1,
					     .bufs = b,
					     .n_bufs = FL_DISPLAY_MAX_BUFFERS };

		while ((r = fl_display_post(c.dev, &p, NULL, &e)) == 0 && n < 64)
			n++;
	}
	(void)!write(report, &n, sizeof(n));
	(void)!write(report, &r, sizeof(r));
	(void)!write(report, e.msg, sizeof(e.msg));
	/* Hold the posts until the parent is done. */
	pause();
	_exit(0);
}

static pid_t hoarder(int *ret_n, int *ret_r, char *msg)
{
	int rep[2];
	pid_t child;

	fl_assert_int_eq(pipe2(rep, O_CLOEXEC), 0);
	child = fork();
	fl_assert(child >= 0);
	if (child == 0) {
		close(rep[0]);
		hoard(rep[1]);
	}
	close(rep[1]);
	fl_assert_int_eq(read(rep[0], ret_n, sizeof(*ret_n)), sizeof(*ret_n));
	fl_assert_int_eq(read(rep[0], ret_r, sizeof(*ret_r)), sizeof(*ret_r));
	fl_assert_int_eq(read(rep[0], msg, FL_DISPLAY_ERROR_MAX), FL_DISPLAY_ERROR_MAX);
	close(rep[0]);
	return child;
}

/* The service started under a 1024-fd limit, as a user's session may give it. */
FL_TEST(a_client_whose_queued_posts_hold_thousands_of_fds_does_not_starve_another)
{
	struct rlimit rl = { 1024, 1024 };
	char msg[FL_DISPLAY_ERROR_MAX];
	struct fl_display_buffer b;
	struct disp d;
	int n, r, buf, status;
	pid_t child;

	fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	child = hoarder(&n, &r, msg);
	fprintf(stderr, "the hoarder queued %d posts, then: %d (%s)\n", n, r, msg);
	/* It was told no with -EBUSY, not cut off or failed by a service out of fds. */
	fl_assert_int_eq(r, -EBUSY);
	fl_assert(n >= 1);
	/* Another client connects, opens handles (each an event pipe) and posts. */
	disp_open(&d);
	buf = simple_buffer(&d, 0x204080ffu, &b);
	attach_and_light(&d);
	fl_assert_int_eq(fl_display_simple_post(d.intf, &b, FL_DISPLAY_FENCE_NONE, NULL, NULL), 0);
	close(buf);
	disp_close(&d);
	kill(child, SIGKILL);
	fl_assert_int_eq(waitpid(child, &status, 0), child);
}

FL_TEST(a_client_s_fd_budget_refuses_the_post_past_it_naming_it)
{
	char msg[FL_DISPLAY_ERROR_MAX];
	int n, r, status;
	pid_t child;

	/* Two posts of 224 fds fit 600, a third does not. */
	setenv("FENCELINE_DISPLAY_CLIENT_MAX_FDS", "600", 1);
	child = hoarder(&n, &r, msg);
	unsetenv("FENCELINE_DISPLAY_CLIENT_MAX_FDS");
	fl_assert_int_eq(n, 2);
	fl_assert_int_eq(r, -EBUSY);
	fl_assert_str_eq(msg, "this client's posts hold 448 fds of the service; another 224 would "
			      "pass its budget of 600 (FENCELINE_DISPLAY_CLIENT_MAX_FDS)");
	kill(child, SIGKILL);
	fl_assert_int_eq(waitpid(child, &status, 0), child);
}

/* SPDX-License-Identifier: MIT */
/*
 * observe-scenario: situations for tests/fencectl/fencectl-observe-test.py to look
 * at with fencectl (deadlocks, trace, stats, dump's waiters).
 *
 *   observe-scenario cycle2       two processes wait on each other for good
 *   observe-scenario cycle3       three, through merged fences
 *   observe-scenario never        a wait on a timeline whose only fd is in flight
 *   observe-scenario pipeline N   camera and gpu producers, a compositor that
 *                                 merges and waits, a display that sets
 *                                 deadlines and waits; N frames, frame 3 late
 *   observe-scenario handoff      a timeline stepped twice by a child it was
 *                                 passed to, while the parent waits
 *
 * The blocking ones print "ready PID..." once every process waits, then
 * stay until SIGTERM (processes ignore nothing: the test kills the group).
 * pipeline prints "done" and handoff "done CHILD-PID"; both exit 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>

static void die(const char *what, int r)
{
	fprintf(stderr, "observe-scenario: %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(1);
}

static int timeline(const char *name)
{
	int fd = -1, r = fl_timeline_fd_create(name, 0, &fd);

	if (r < 0)
		die("timeline", r);
	return fd;
}

static int fence(int tl, uint64_t value, const char *name)
{
	int fd = -1, r = fl_fence_fd_create(tl, value, name, &fd);

	if (r < 0)
		die("fence", r);
	return fd;
}

static int merge(int a, int b, const char *name)
{
	int fd = -1, r = fl_fence_fd_merge(a, b, name, 0, &fd);

	if (r < 0)
		die("merge", r);
	return fd;
}

static void send_fd(int sock, int fd)
{
	int r = fl_send(sock, "f", 1, &fd, 1);

	if (r < 0)
		die("send", r);
}

static int recv_fd(int sock)
{
	char c;
	size_t len;
	int fd = -1, r;
	unsigned int n = 0;

	r = fl_recv(sock, &c, 1, &len, &fd, 1, &n);
	if (r < 0 || n != 1)
		die("recv", r < 0 ? r : -EPROTO);
	return fd;
}

/* A ring of @n processes, each waiting on the previous one's fence, forever. */
static int ring(int n, int merged)
{
	int links[3][2], ready[2];
	pid_t pids[3];

	if (pipe(ready) < 0)
		die("pipe", errno);
	for (int i = 0; i < n; i++)
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, links[i]) < 0)
			die("socketpair", errno);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char name[32];
			int tl, mine, theirs, on;

			snprintf(name, sizeof(name), "ring-%d", i);
			tl = timeline(name);
			snprintf(name, sizeof(name), "ring-%d-out", i);
			mine = fence(tl, merged ? 2 : 1, name);
			send_fd(links[i][0], mine);
			theirs = recv_fd(links[(i + n - 1) % n][1]);
			on = theirs;
			if (merged) {
				int done = fence(tl, 1, "done");

				fl_timeline_fd_inc(tl, 1);
				on = merge(theirs, done, "ring-merge");
			}
			/* Staggered, so the last to wait closes the cycle. */
			usleep(100000u * (unsigned int)i);
			if (write(ready[1], "r", 1) != 1)
				_exit(1);
			fl_fence_fd_wait(on, -1);
			_exit(0);
		}
	}
	for (int i = 0; i < n; i++) {
		char c;

		if (read(ready[0], &c, 1) != 1)
			die("ready", EPIPE);
	}
	usleep(50000); /* the last one is inside its wait by now */
	printf("ready");
	for (int i = 0; i < n; i++)
		printf(" %d", (int)pids[i]);
	printf("\n");
	fflush(stdout);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	return 0;
}

/* The timeline's last fd sits in a socket nobody reads: nothing can signal it. */
static int never(void)
{
	int sv[2], tl, f;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair", errno);
	tl = timeline("orphan");
	f = fence(tl, 1, "orphan-fence");
	send_fd(sv[0], tl);
	close(tl);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	fl_fence_fd_wait(f, -1);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A small frame pipeline in three processes: producers camera and gpu
 * (one process, two timelines), a compositor that merges their fences and
 * waits on the merge before signalling its own timeline, and a display
 * that sets each composed frame's deadline, waits, and advances its
 * display timeline per flip. Frame 3's camera is 30 ms late.
 */
static int pipeline(int frames)
{
	int to_comp[2], to_disp[2];
	pid_t prod, comp;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, to_comp) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, to_disp) < 0)
		die("socketpair", errno);
	prod = fork();
	if (prod == 0) {
		int cam = timeline("camera"), gpu = timeline("gpu");

		for (int n = 1; n <= frames; n++) {
			char name[32];
			int a, b;

			snprintf(name, sizeof(name), "camera-%d", n);
			a = fence(cam, (uint64_t)n, name);
			snprintf(name, sizeof(name), "gpu-%d", n);
			b = fence(gpu, (uint64_t)n, name);
			/*
			 * Made in the daemon now: the trace stamps a fence when the daemon makes
			 * it, which on a loaded machine could be most of the late frame's 35 ms.
			 */
			fl_daemon_flush();
			send_fd(to_comp[0], a);
			send_fd(to_comp[0], b);
			close(a);
			close(b);
			usleep(n == 3 ? 35000 : 4000);
			fl_timeline_fd_inc(cam, 1);
			usleep(1000);
			fl_timeline_fd_inc(gpu, 1);
			usleep(10000);
		}
		_exit(0);
	}
	comp = fork();
	if (comp == 0) {
		int tl = timeline("compositor");

		for (int n = 1; n <= frames; n++) {
			int a = recv_fd(to_comp[1]), b = recv_fd(to_comp[1]);
			int m = merge(a, b, "inputs");
			int out;
			char name[32];

			snprintf(name, sizeof(name), "composed-%d", n);
			out = fence(tl, (uint64_t)n, name);
			send_fd(to_disp[0], out);
			close(out);
			if (fl_fence_fd_wait(m, 5000) < 0)
				_exit(1);
			usleep(1500); /* compose */
			fl_timeline_fd_inc(tl, 1);
			close(m);
			close(a);
			close(b);
		}
		_exit(0);
	}
	{
		int disp = timeline("display");
		uint64_t start = now_ns();

		for (int n = 1; n <= frames; n++) {
			int f = recv_fd(to_disp[1]);

			/* Due at the vsync after the one it started at (16 ms apart). */
			fl_fence_fd_set_deadline(f,
						 start + (uint64_t)n * 16000000ull + 12000000ull);
			if (fl_fence_fd_wait(f, 5000) < 0)
				return 1;
			fl_timeline_fd_inc(disp, 1);
			close(f);
		}
		close(disp);
	}
	waitpid(prod, NULL, 0);
	waitpid(comp, NULL, 0);
	printf("done\n");
	return 0;
}

/*
 * A timeline signalled by a process that did not make it: its fd is passed
 * to a child, which steps it twice (through the daemon, not the owner's
 * counter) while the parent waits on a fence at each step.
 */
static int handoff(void)
{
	int sv[2], tl, f[2];
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair", errno);
	tl = timeline("handoff");
	f[0] = fence(tl, 1, "handed-1");
	f[1] = fence(tl, 2, "handed-2");
	child = fork();
	if (child == 0) {
		int theirs = recv_fd(sv[1]);

		for (int i = 0; i < 2; i++) {
			/* Long enough for the parent to be inside its wait. */
			usleep(30000);
			if (fl_timeline_fd_inc(theirs, 1) < 0)
				_exit(1);
		}
		_exit(0);
	}
	send_fd(sv[0], tl);
	for (int i = 0; i < 2; i++)
		if (fl_fence_fd_wait(f[i], 5000) < 0)
			return 1;
	waitpid(child, NULL, 0);
	printf("done %d\n", (int)child);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "cycle2"))
		return ring(2, 0);
	if (argc >= 2 && !strcmp(argv[1], "cycle3"))
		return ring(3, 1);
	if (argc >= 2 && !strcmp(argv[1], "never"))
		return never();
	if (argc >= 3 && !strcmp(argv[1], "pipeline"))
		return pipeline(atoi(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "handoff"))
		return handoff();
	fprintf(stderr, "usage: observe-scenario cycle2|cycle3|never|pipeline N|handoff\n");
	return 2;
}

/* SPDX-License-Identifier: MIT */
/*
 * <fenceline/introspect.h>: each call against the test's own daemon (the
 * runner's, or one started here), what it returns and its errors: bad
 * arguments, buffers too small, no daemon (none is ever started), a daemon
 * that went away or does not answer. fencectl's output formats are checked
 * by the fencectl*-test.py scripts; here only that each view is the one
 * asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/fenceline.h>
#include <fenceline/heap-daemon.h>
#include <fenceline/introspect.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "runner.h"

/* The whole of a view fd (which is closed), read the way the header suggests. */
static char *view_text(int fd)
{
	size_t len = 0, got = 0;
	char *text;

	fl_assert_int_eq(fl_introspect_read(fd, NULL, 0, &len), -ENOBUFS);
	text = malloc(len + 1);
	fl_assert(text);
	fl_assert_int_eq(fl_introspect_read(fd, text, len + 1, &got), 0);
	fl_assert_int_eq(got, len);
	fl_assert_int_eq(strlen(text), len);
	close(fd);
	return text;
}

/* @r, a view call's result, must be 0: then the text of the view in *@fd (closed). */
static char *answered(int r, const int *fd)
{
	fl_assert_int_eq(r, 0);
	return view_text(*fd);
}

/* A daemon timeline "<name>-tl" and a fence "<name>-fence" on it at 1. */
static void timeline_and_fence(const char *name, int *ret_tl, int *ret_fence)
{
	char tl_name[32], fence_name[32];

	snprintf(tl_name, sizeof(tl_name), "%s-tl", name);
	snprintf(fence_name, sizeof(fence_name), "%s-fence", name);
	fl_assert_int_eq(fl_timeline_fd_create(tl_name, 0, ret_tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(*ret_tl, 1, fence_name, ret_fence), 0);
}

static void expect_contains(const char *text, const char *what)
{
	if (!strstr(text, what))
		fprintf(stderr, "missing '%s' in:\n%s\n", what, text);
	fl_assert(strstr(text, what));
}

FL_TEST(dump_shows_live_timelines_and_fences_as_text_or_json)
{
	int tl, f, fd = -1;
	char *text;

	timeline_and_fence("introspect-dump", &tl, &f);
	fl_assert_int_eq(fl_introspect_dump(0, &fd), 0);
	/* A sealed memfd: nobody can change what was answered. */
	fl_assert_int_eq(fcntl(fd, F_GET_SEALS) & (F_SEAL_WRITE | F_SEAL_SHRINK),
			 F_SEAL_WRITE | F_SEAL_SHRINK);
	fl_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	text = view_text(fd);
	expect_contains(text, "introspect-dump-tl");
	expect_contains(text, "introspect-dump-fence");
	fl_assert(text[0] != '{');
	free(text);

	text = answered(fl_introspect_dump(FL_INTROSPECT_JSON, &fd), &fd);
	fl_assert(text[0] == '{');
	expect_contains(text, "\"name\":\"introspect-dump-tl\"");
	expect_contains(text, "\"name\":\"introspect-dump-fence\"");
	free(text);
	close(f);
	close(tl);
}

FL_TEST(dump_fds_lists_the_processes_asked_for)
{
	int tl, f, fd = -1;
	char mine[64], *text;

	timeline_and_fence("introspect-fds", &tl, &f);
	text = answered(fl_introspect_dump_fds(getpid(), 0, &fd), &fd);
	snprintf(mine, sizeof(mine), "pid %d (", (int)getpid());
	expect_contains(text, mine);
	expect_contains(text, "introspect-fds-fence");
	free(text);

	text = answered(fl_introspect_dump_fds(0, FL_INTROSPECT_JSON, &fd), &fd);
	snprintf(mine, sizeof(mine), "\"pid\":%d,", (int)getpid());
	expect_contains(text, "\"processes\":[");
	expect_contains(text, mine);
	free(text);

	/* init holds none of this daemon's fds: nothing listed. */
	text = answered(fl_introspect_dump_fds(1, FL_INTROSPECT_JSON, &fd), &fd);
	expect_contains(text, "\"processes\":[]");
	free(text);
	close(f);
	close(tl);
}

FL_TEST(dump_waits_shows_a_reported_wait)
{
	struct fl_wait_report w;
	int tl, f, fd = -1;
	char tid[64], *text;

	timeline_and_fence("introspect-waits", &tl, &f);
	fl_assert_int_eq(fl_fence_fd_wait_begin(f, -1, 0, &w), 0);
	fl_assert(w.token != 0);
	/* WAIT_BEGIN is one-way on the same connection: the daemon has it before this. */
	text = answered(fl_introspect_dump_waits(FL_INTROSPECT_JSON, &fd), &fd);
	snprintf(tid, sizeof(tid), "\"tid\":%ld,", (long)syscall(SYS_gettid));
	expect_contains(text, "\"waits\":[");
	expect_contains(text, tid);
	expect_contains(text, "introspect-waits-fence");
	/* What the detector found (this thread waits on its own timeline) is not ours to judge. */
	expect_contains(text, "\"deadlocks\":[");
	expect_contains(text, "\"never_signal\":[");
	free(text);

	text = answered(fl_introspect_dump_waits(0, &fd), &fd);
	fl_assert(text[0] != '{');
	expect_contains(text, "introspect-waits-fence");
	free(text);
	fl_fence_fd_wait_end(&w, -ETIME);
	close(f);
	close(tl);
}

FL_TEST(dump_stats_counts_completions_until_reset)
{
	int tl, f, fd = -1;
	char *text;

	/* Digits fold to '#' in the names' groups. */
	timeline_and_fence("introspect-7", &tl, &f);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(f, -1), 0);
	text = answered(fl_introspect_dump_stats(FL_INTROSPECT_JSON | FL_INTROSPECT_RESET, &fd),
			&fd);
	expect_contains(text, "\"name\":\"introspect-#-fence\"");
	free(text);
	text = answered(fl_introspect_dump_stats(FL_INTROSPECT_JSON, &fd), &fd);
	fl_assert(!strstr(text, "introspect-#-fence"));
	free(text);
	text = answered(fl_introspect_dump_stats(0, &fd), &fd);
	expect_contains(text, "by timeline:");
	free(text);
	close(f);
	close(tl);
}

FL_TEST(dump_heaps_shows_a_buffer_this_process_holds)
{
	int buf = -1, fd = -1;
	char mine[64], *text;

	fl_assert_int_eq(fl_heap_daemon_alloc(FL_HEAP_DAEMON_SYSTEM, 4096, 0, &buf), 0);
	text = answered(fl_introspect_dump_heaps(FL_INTROSPECT_JSON, &fd), &fd);
	snprintf(mine, sizeof(mine), "\"pid\":%d,", (int)getpid());
	expect_contains(text, "\"heaps\":[");
	expect_contains(text, mine);
	free(text);
	text = answered(fl_introspect_dump_heaps(0, &fd), &fd);
	expect_contains(text, "system");
	free(text);
	fl_assert_int_eq(fl_heap_daemon_buffer_free(buf), 0);
}

FL_TEST(trace_records_between_start_and_stop_of_one_process)
{
	int tl, f, fd = -1;
	char *text;
	pid_t child;

	fl_assert_int_eq(fl_introspect_trace_start(1000), 0);
	fl_assert_int_eq(fl_introspect_trace_start(0), -EBUSY);
	/* Another process (its own connection) can neither start one nor take this one. */
	child = dl_fork();
	if (child == 0) {
		int cfd = -1;

		fl_assert_int_eq(fl_introspect_trace_start(0), -EBUSY);
		fl_assert_int_eq(fl_introspect_trace_stop(&cfd), -EPERM);
		fl_assert_int_eq(cfd, -1);
		exit(0);
	}
	dl_wait_child_ok(child);
	timeline_and_fence("introspect-trace", &tl, &f);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(f, -1), 0);
	text = answered(fl_introspect_trace_stop(&fd), &fd);
	expect_contains(text, "\"traceEvents\"");
	expect_contains(text, "introspect-trace-tl");
	free(text);
	fd = -1;
	fl_assert_int_eq(fl_introspect_trace_stop(&fd), -ENOENT);
	fl_assert_int_eq(fd, -1);
	close(f);
	close(tl);
}

/*
 * A service reports its trace events one way, on its own connection, and
 * may signal a fence the moment after: a tracer that saw the fence and
 * stopped must find the event in the trace. Here the daemon is stopped
 * while a busy client (the daemon serves those that asked little first)
 * queues a few events, then the STOP comes on another connection: every
 * event must be in.
 */
#define QUEUED_EVENTS 8 /* under net.unix.max_dgram_qlen (10), or the send blocks */

FL_TEST(a_trace_has_every_event_reported_before_its_stop)
{
	int ready[2], go[2], fd = -1, n = 0;
	pid_t daemon, child, waker;
	char c, *text, *at;

	fl_assert_int_eq(fl_introspect_get_daemon_pid(&daemon), 0);
	fl_assert_int_eq(fl_introspect_trace_start(100000), 0);
	fl_assert_int_eq(pipe(ready), 0);
	fl_assert_int_eq(pipe(go), 0);
	child = dl_fork();
	if (child == 0) {
		pid_t pid;

		close(go[1]);
		/* Connected, seeing the session, and in debt before the daemon stops. */
		fl_assert_int_eq(fl_introspect_get_daemon_pid(&pid), 0);
		for (int i = 0; i < 200; i++) {
			int view = -1;

			fl_assert_int_eq(fl_introspect_dump_stats(0, &view), 0);
			close(view);
		}
		fl_assert(fl_introspect_tracing());
		fl_assert_int_eq(write(ready[1], "r", 1), 1);
		fl_assert_int_eq(read(go[0], &c, 1), 1);
		for (int i = 1; i <= QUEUED_EVENTS; i++) {
			struct fl_trace_display_event ev = { .type = FL_TRACE_DISPLAY_FLIP,
							     .device = 7,
							     .post = (uint64_t)i,
							     .ts_ns = (uint64_t)i,
							     .ready_ns = (uint64_t)i };

			fl_assert_int_eq(fl_introspect_trace_display(&ev, -1), 0);
		}
		fl_assert_int_eq(write(ready[1], "d", 1), 1);
		/* Stay connected until the parent has its trace. */
		fl_assert_int_eq(read(go[0], &c, 1), 0);
		exit(0);
	}
	fl_assert_int_eq(read(ready[0], &c, 1), 1);
	fl_assert_int_eq(kill(daemon, SIGSTOP), 0);
	fl_assert_int_eq(write(go[1], "g", 1), 1);
	fl_assert_int_eq(read(ready[0], &c, 1), 1);
	/* The STOP is sent after all of them: the daemon wakes with both queued. */
	waker = fork();
	fl_assert(waker >= 0);
	if (waker == 0) {
		usleep(100000);
		kill(daemon, SIGCONT);
		_exit(0);
	}
	text = answered(fl_introspect_trace_stop(&fd), &fd);
	dl_wait_child_ok(waker);
	close(go[1]);
	dl_wait_child_ok(child);
	for (at = text; (at = strstr(at, "\"name\":\"flip\"")); at++)
		n++;
	fl_assert_int_eq(n, QUEUED_EVENTS);
	free(text);
	close(go[0]);
	close(ready[0]);
	close(ready[1]);
}

FL_TEST(trace_session_ends_with_its_connection)
{
	int r, fd = -1;

	fl_assert_int_eq(fl_introspect_trace_start(0), 0);
	fl_daemon_disconnect();
	/*
	 * The daemon sees the old connection go in its own time: until then
	 * the session is another connection's. It never comes back.
	 */
	for (int i = 0; (r = fl_introspect_trace_stop(&fd)) == -EPERM && i < 10000; i++)
		usleep(1000);
	fl_assert_int_eq(r, -ENOENT);
	fl_assert_int_eq(fl_introspect_trace_start(0), 0);
	fl_assert_int_eq(fl_introspect_trace_stop(&fd), 0);
	close(fd);
}

FL_TEST(read_wants_room_for_the_whole_view_and_its_nul)
{
	char small[4] = "abc", *buf;
	size_t len = 0, got = 12345;
	int fd = -1, p[2];

	fl_assert_int_eq(fl_introspect_dump(0, &fd), 0);
	fl_assert_int_eq(fl_introspect_read(fd, NULL, 0, &len), -ENOBUFS);
	fl_assert(len > sizeof(small));
	/* Too small: nothing but the length is written. */
	fl_assert_int_eq(fl_introspect_read(fd, small, sizeof(small), &got), -ENOBUFS);
	fl_assert_int_eq(got, len);
	fl_assert_str_eq(small, "abc");
	buf = malloc(len + 1);
	fl_assert(buf);
	/* Exactly the contents, no room for the NUL. */
	fl_assert_int_eq(fl_introspect_read(fd, buf, len, &got), -ENOBUFS);
	fl_assert_int_eq(fl_introspect_read(fd, buf, len + 1, &got), 0);
	fl_assert_int_eq(got, len);
	fl_assert_int_eq(buf[len], '\0');
	/* pread(): the offset stays, so a second read gives the same. */
	fl_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
	fl_assert_int_eq(fl_introspect_read(fd, buf, len + 1, &got), 0);
	fl_assert_int_eq(got, len);
	free(buf);

	fl_assert_int_eq(fl_introspect_read(fd, NULL, 1, &got), -EINVAL);
	fl_assert_int_eq(fl_introspect_read(fd, small, sizeof(small), NULL), -EINVAL);
	close(fd);
	fl_assert_int_eq(fl_introspect_read(fd, small, sizeof(small), &got), -EBADF);
	fl_assert_int_eq(fl_introspect_read(-1, small, sizeof(small), &got), -EBADF);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_introspect_read(p[0], small, sizeof(small), &got), -EINVAL);
	close(p[0]);
	close(p[1]);
}

FL_TEST(bad_arguments_are_einval_and_write_nothing)
{
	int fd = -1;
	pid_t pid = 0;

	fl_assert_int_eq(fl_introspect_dump(0, NULL), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump(1u << 7, &fd), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump(FL_INTROSPECT_RESET, &fd), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_fds(0, 0, NULL), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_fds(-1, 0, &fd), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_fds(0, FL_INTROSPECT_RESET, &fd), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_waits(0, NULL), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_waits(FL_INTROSPECT_RESET, &fd), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_stats(0, NULL), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_stats(1u << 7, &fd), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_heaps(0, NULL), -EINVAL);
	fl_assert_int_eq(fl_introspect_dump_heaps(FL_INTROSPECT_RESET, &fd), -EINVAL);
	fl_assert_int_eq(fl_introspect_trace_stop(NULL), -EINVAL);
	fl_assert_int_eq(fl_introspect_get_daemon_pid(NULL), -EINVAL);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(pid, 0);
}

/* Every call, with no daemon: -ENOENT, and none is started. */
FL_TEST(no_daemon_is_enoent_and_none_is_started)
{
	char path[256];
	size_t len;
	int fd = -1;
	pid_t pid = 0;

	dl_runtime_path("nobody.sock", path, sizeof(path));
	setenv("FENCELINE_SOCKET", path, 1);
	fl_daemon_disconnect();
	fl_assert_int_eq(fl_introspect_dump(0, &fd), -ENOENT);
	fl_assert_int_eq(fl_introspect_dump_fds(0, 0, &fd), -ENOENT);
	fl_assert_int_eq(fl_introspect_dump_waits(0, &fd), -ENOENT);
	fl_assert_int_eq(fl_introspect_dump_stats(FL_INTROSPECT_RESET, &fd), -ENOENT);
	fl_assert_int_eq(fl_introspect_dump_heaps(0, &fd), -ENOENT);
	fl_assert_int_eq(fl_introspect_trace_start(0), -ENOENT);
	fl_assert_int_eq(fl_introspect_trace_stop(&fd), -ENOENT);
	fl_assert_int_eq(fl_introspect_get_daemon_pid(&pid), -ENOENT);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(pid, 0);
	fl_assert_int_eq(access(path, F_OK), -1);
	fl_assert_int_eq(errno, ENOENT);
	/* A daemon reading a memfd it was never given is not a thing: the read is local. */
	fl_assert_int_eq(fl_introspect_read(-1, NULL, 0, &len), -EBADF);
	unsetenv("FENCELINE_SOCKET");
}

FL_TEST(calls_ask_the_daemon_of_the_socket_and_see_it_go)
{
	char path[256];
	pid_t daemon, pid = 0;
	char want[64], *text;
	int fd = -1;

	dl_runtime_path("own.sock", path, sizeof(path));
	daemon = dl_daemon_start(path, NULL);
	setenv("FENCELINE_SOCKET", path, 1);
	fl_daemon_disconnect();
	fl_assert_int_eq(fl_introspect_get_daemon_pid(&pid), 0);
	fl_assert_int_eq(pid, daemon);
	text = answered(fl_introspect_dump(FL_INTROSPECT_JSON, &fd), &fd);
	snprintf(want, sizeof(want), "\"pid\":%d", (int)daemon);
	expect_contains(text, want);
	free(text);
	dl_daemon_stop(daemon);
	/* Gone: the next calls say so, and start none. */
	fd = -1;
	fl_assert_int_eq(fl_introspect_get_daemon_pid(&pid), -ENOENT);
	fl_assert_int_eq(fl_introspect_dump(0, &fd), -ENOENT);
	fl_assert_int_eq(fd, -1);
	unsetenv("FENCELINE_SOCKET");
	fl_daemon_disconnect();
}

/* A listener that never answers: each call gives up after the request timeout. */
FL_TEST(a_silent_daemon_is_etimedout)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), fd = -1;
	pid_t pid = 0;

	fl_assert_int_ge(s, 0);
	dl_runtime_path("silent.sock", a.sun_path, sizeof(a.sun_path));
	fl_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	fl_assert_int_eq(listen(s, 8), 0);
	setenv("FENCELINE_SOCKET", a.sun_path, 1);
	setenv("FENCELINE_REQUEST_TIMEOUT_MS", "50", 1);
	fl_daemon_disconnect();
	fl_assert_int_eq(fl_introspect_dump(0, &fd), -ETIMEDOUT);
	fl_assert_int_eq(fl_introspect_get_daemon_pid(&pid), -ETIMEDOUT);
	fl_assert_int_eq(fd, -1);
	unsetenv("FENCELINE_REQUEST_TIMEOUT_MS");
	unsetenv("FENCELINE_SOCKET");
	close(s);
}

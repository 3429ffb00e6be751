/* SPDX-License-Identifier: MIT */
/*
 * The display client against a hostile program and a squatted socket, as
 * fencelined's client is tested (tests/daemon/client-hostile-test.c): a
 * program that dup2()s over the library's connection must get nothing
 * written into its own socket, a forked child drops its copy of the
 * parent's connection, and a listener of another uid on the service's
 * socket path is refused before anything is sent to it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/display.h>
#include <fenceline/fenceline.h>

#include "runner.h"

/* nobody on Debian; any uid other than ours will do. */
#define OTHER_UID 65534

/* The socket fds this process holds, as a bit set of numbers below 1024. */
static void socket_fds(unsigned char set[128])
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	memset(set, 0, 128);
	fl_assert(d != NULL);
	while ((e = readdir(d))) {
		struct stat st;
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d) || fd >= 1024)
			continue;
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
			set[fd / 8] |= (unsigned char)(1u << (fd % 8));
	}
	closedir(d);
}

/* The one socket fd that the first display call made. */
static int display_connection(void)
{
	unsigned char before[128], after[128];
	uint32_t *ids = NULL;
	int found = -1;

	fl_display_disconnect();
	socket_fds(before);
	fl_assert(fl_display_devices(&ids) >= 1);
	free(ids);
	socket_fds(after);
	for (int i = 0; i < 1024; i++)
		if (((after[i / 8] >> (i % 8)) & 1) && !((before[i / 8] >> (i % 8)) & 1)) {
			fl_assert_int_eq(found, -1);
			found = i;
		}
	fl_assert(found >= 0);
	return found;
}

FL_TEST(dup2_over_the_display_connection_sends_nothing_into_the_programs_socket)
{
	int conn = display_connection(), sp[2];
	uint32_t *ids = NULL;
	char buf[256];

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	fl_assert_int_eq(dup2(sp[0], conn), conn);
	/* The library connects again and leaves the program's socket alone. */
	fl_assert(fl_display_devices(&ids) >= 1);
	free(ids);
	fl_assert_int_eq(recv(sp[1], buf, sizeof(buf), MSG_DONTWAIT), -1);
	fl_assert_int_eq(errno, EAGAIN);
	/* And it never closes the number, which is the program's now. */
	fl_assert(fcntl(conn, F_GETFD) >= 0);
	fl_display_disconnect();
	fl_assert(fcntl(conn, F_GETFD) >= 0);
	close(conn);
	close(sp[0]);
	close(sp[1]);
}

/* Does this process hold an fd of the file @st names? */
static bool holds_file(const struct stat *st)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	bool found = false;

	fl_assert(d != NULL);
	while (!found && (e = readdir(d))) {
		struct stat o;
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(d) && fstat(fd, &o) == 0)
			found = o.st_dev == st->st_dev && o.st_ino == st->st_ino;
	}
	closedir(d);
	return found;
}

FL_TEST(a_forked_child_closes_its_copy_of_the_parents_display_connection)
{
	struct stat parents;
	pid_t pid;
	int ws;

	fl_assert_int_eq(fstat(display_connection(), &parents), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		uint32_t *ids = NULL;

		if (fl_display_devices(&ids) < 1)
			_exit(2);
		free(ids);
		/* Its own connection instead of the parent's copy, not beside it. */
		_exit(holds_file(&parents) ? 3 : 0);
	}
	fl_assert_int_eq(waitpid(pid, &ws, 0), pid);
	fl_assert(WIFEXITED(ws));
	fl_assert_int_eq(WEXITSTATUS(ws), 0);
	fl_display_disconnect();
}

FL_TEST(a_display_service_socket_held_by_another_uid_is_refused)
{
	char dir[] = "/tmp/fl-squat-XXXXXX", path[64];
	const char *old = getenv("FENCELINE_DISPLAY_SOCKET");
	char *saved = old ? strdup(old) : NULL;
	int go[2], ws;
	uint32_t *ids = NULL;
	pid_t pid;
	char c;

	if (geteuid() != 0)
		fl_test_skip("needs root to listen as another uid");
	fl_assert(mkdtemp(dir) != NULL);
	fl_assert_int_eq(chmod(dir, 0777), 0);
	snprintf(path, sizeof(path), "%s/displayd.sock", dir);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	fl_assert(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int l, s;

		if (setgid(OTHER_UID) < 0 || setuid(OTHER_UID) < 0)
			_exit(2);
		l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 4) < 0)
			_exit(3);
		(void)!write(go[1], "l", 1);
		/* A squatter that answers nothing: whatever the client sends, it keeps. */
		s = accept(l, NULL, NULL);
		if (s >= 0) {
			char b[64];

			_exit(recv(s, b, sizeof(b), MSG_DONTWAIT) > 0 ? 4 : 0);
		}
		_exit(0);
	}
	close(go[1]);
	fl_assert_int_eq(read(go[0], &c, 1), 1);
	close(go[0]);
	setenv("FENCELINE_DISPLAY_SOCKET", path, 1);
	fl_display_disconnect();
	fl_assert_int_eq(fl_display_devices(&ids), -EPERM);
	fl_assert(ids == NULL);
	if (saved)
		setenv("FENCELINE_DISPLAY_SOCKET", saved, 1);
	else
		unsetenv("FENCELINE_DISPLAY_SOCKET");
	free(saved);
	/* The squatter got no request (it exits 4 if it did). */
	kill(pid, SIGKILL);
	fl_assert_int_eq(waitpid(pid, &ws, 0), pid);
	fl_assert(!WIFEXITED(ws) || WEXITSTATUS(ws) == 0);
	unlink(path);
	rmdir(dir);
}

/* @len bytes of an event of @type whose header says @length, then nothing more. */
static void put_event(int fd, uint8_t type, uint32_t length, size_t len)
{
	unsigned char buf[64];
	struct fl_display_event h = { type, length };

	fl_assert(len <= sizeof(buf));
	memset(buf, 0x5a, sizeof(buf));
	memcpy(buf, &h, sizeof(h) < len ? sizeof(h) : len);
	fl_assert_int_eq(write(fd, buf, len), (ssize_t)len);
}

/*
 * The event stream is read as libadf reads it (adf_read_event() is this
 * reader): the header, then the rest; a short read or a length below the
 * header's is -EIO, whatever lies in the stream.
 */
FL_TEST(an_event_stream_is_read_header_first_as_libadf_reads_it)
{
	struct fl_display_event *ev = NULL;
	int p[2];

	fl_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	fl_assert_int_eq(fl_display_read_event_fd(p[0], NULL), -EINVAL);
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), -EAGAIN);
	/* Two events back to back: each read takes exactly its own bytes. */
	put_event(p[1], 1, 24, 24);
	put_event(p[1], 2, sizeof(struct fl_display_event), sizeof(struct fl_display_event));
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), 0);
	fl_assert_int_eq(ev->type, 1);
	fl_assert_int_eq(ev->length, 24);
	fl_assert_int_eq(((unsigned char *)ev)[23], 0x5a);
	free(ev);
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), 0);
	fl_assert_int_eq(ev->type, 2);
	free(ev);
	/* A length below the header's: -EIO, the header read. */
	put_event(p[1], 3, 4, sizeof(struct fl_display_event));
	ev = NULL;
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), -EIO);
	fl_assert(ev == NULL);
	/* A body shorter than the header says: -EIO, nothing returned. */
	put_event(p[1], 4, 32, 20);
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), -EIO);
	fl_assert(ev == NULL);
	/* A header cut short. */
	put_event(p[1], 5, 8, 3);
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), -EIO);
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), -EAGAIN);
	close(p[0]);
	close(p[1]);
	fl_assert_int_eq(fl_display_read_event_fd(p[0], &ev), -EBADF);
}

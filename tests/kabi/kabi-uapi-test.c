/* SPDX-License-Identifier: MIT */
/*
 * The kernel's sw_sync and sync_file uapi with plain ioctls, as programs
 * written for the kernel use it: no fenceline header. Run under
 * libfenceline-kabi.so (meson sets LD_PRELOAD); on a kernel with sw_sync
 * and without the preload it exercises the kernel itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sync_file.h>
#include <stddef.h>
#include <sys/select.h>
#include <sys/syscall.h>

#include "../lib/seccomp-forbid.h"
#include "sw-sync-uapi.h"

struct sw_sync_get_deadline {
	uint64_t deadline_ns;
	uint32_t pad;
	int32_t fence_fd;
};
#define SW_SYNC_GET_DEADLINE _IOWR(SW_SYNC_IOC_MAGIC, 2, struct sw_sync_get_deadline)

/* linux/sync_file.h has it since 6.3. */
struct set_deadline {
	uint64_t deadline_ns;
	uint64_t pad;
};
#define SET_DEADLINE _IOW(SYNC_IOC_MAGIC, 5, struct set_deadline)

static int failed;
/* No daemon socket when we started: the test above can tell if we made one. */
static int daemon_was_absent;

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "%s:%d: %s: check failed: %s (errno %d)\n", __FILE__, \
				__LINE__, __func__, #cond, errno);                            \
			failed = 1;                                                           \
			return;                                                               \
		}                                                                             \
	} while (0)

static int open_timeline(void)
{
	int fd = open("/sys/kernel/debug/sync/sw_sync", O_RDWR);

	if (fd < 0)
		fd = open("/dev/sw_sync", O_RDWR);
	return fd;
}

static int create_fence(int tl, uint32_t value, const char *name)
{
	struct sw_sync_create_fence_data data;

	memset(&data, 0, sizeof(data));
	data.value = value;
	snprintf(data.name, sizeof(data.name), "%s", name);
	return ioctl(tl, SW_SYNC_IOC_CREATE_FENCE, &data) < 0 ? -1 : data.fence;
}

static int inc(int tl, uint32_t count)
{
	return ioctl(tl, SW_SYNC_IOC_INC, &count);
}

static int ready(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static int select_ready(int fd)
{
	struct timeval zero = { 0, 0 };
	fd_set set;

	FD_ZERO(&set);
	FD_SET(fd, &set);
	return select(fd + 1, &set, NULL, NULL, &zero) == 1 && FD_ISSET(fd, &set);
}

/* FILE_INFO's two calls; returns the status of the second, entries in @fi. */
static int file_info(int fd, struct sync_fence_info *fi, uint32_t max, uint32_t *count)
{
	struct sync_file_info info;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0)
		return -1000 - errno;
	*count = info.num_fences;
	if (info.num_fences > max)
		return -2000;
	info.sync_fence_info = (uint64_t)(uintptr_t)fi;
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0)
		return -1000 - errno;
	return info.status;
}

static int merge(int a, int b, const char *name)
{
	struct sync_merge_data m;

	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "%s", name);
	m.fd2 = b;
	return ioctl(a, SYNC_IOC_MERGE, &m) < 0 ? -1 : m.fence;
}

/* FILE_INFO's name, from the count-only call. */
static int file_name(int fd, char *name)
{
	struct sync_file_info info;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0)
		return -1;
	memcpy(name, info.name, sizeof(info.name));
	return 0;
}

static int get_deadline(int tl, int fence, uint64_t *ns)
{
	struct sw_sync_get_deadline g;

	memset(&g, 0, sizeof(g));
	g.fence_fd = fence;
	if (ioctl(tl, SW_SYNC_GET_DEADLINE, &g) < 0)
		return -errno;
	*ns = g.deadline_ns;
	return 0;
}

static int set_deadline(int fence, uint64_t ns)
{
	struct set_deadline d = { ns, 0 };

	return ioctl(fence, SET_DEADLINE, &d) < 0 ? -errno : 0;
}

/*
 * Requests on fds that are not fenceline's reach the kernel without the
 * library asking (or starting) the daemon: run first, with no daemon yet.
 */
static void test_other_fds_do_not_start_a_daemon(void)
{
	const char *sock = getenv("FENCELINE_SOCKET");
	struct sync_file_info info;
	uint32_t one = 1;
	int pipefd[2];

	CHECK(pipe(pipefd) == 0);
	memset(&info, 0, sizeof(info));
	CHECK(ioctl(pipefd[0], SYNC_IOC_FILE_INFO, &info) < 0 && errno == ENOTTY);
	CHECK(ioctl(pipefd[1], SW_SYNC_IOC_INC, &one) < 0 && errno == ENOTTY);
	close(pipefd[0]);
	close(pipefd[1]);
	if (sock && daemon_was_absent)
		CHECK(access(sock, F_OK) < 0);
}

static void test_open_gives_a_timeline_and_fences_signal_in_order(void)
{
	int tl = open_timeline(), f1, f2;

	CHECK(tl >= 0);
	/* Opened without O_CLOEXEC, as the device would be. */
	CHECK(!(fcntl(tl, F_GETFD) & FD_CLOEXEC));
	f1 = create_fence(tl, 1, "one");
	f2 = create_fence(tl, 2, "two");
	CHECK(f1 >= 0 && f2 >= 0);
	/* New fence fds are O_CLOEXEC, like sync_file's. */
	CHECK(fcntl(f1, F_GETFD) & FD_CLOEXEC);
	CHECK(!ready(f1) && !ready(f2));
	CHECK(!select_ready(f1));
	CHECK(inc(tl, 1) == 0);
	CHECK(ready(f1) && !ready(f2));
	/* select() sees what poll() sees. */
	CHECK(select_ready(f1) && !select_ready(f2));
	CHECK(inc(tl, 1) == 0);
	CHECK(ready(f2));
	close(f1);
	close(f2);
	close(tl);
}

static void test_file_info_two_calls(void)
{
	struct sync_fence_info fi[2];
	struct sync_file_info info;
	int tl = open_timeline(), f;
	uint32_t n = 0;

	CHECK(tl >= 0);
	f = create_fence(tl, 1, "frame");
	CHECK(f >= 0);
	CHECK(file_info(f, fi, 2, &n) == 0);
	CHECK(n == 1);
	CHECK(strcmp(fi[0].driver_name, "sw_sync") == 0);
	CHECK(fi[0].status == 0 && fi[0].timestamp_ns == 0);
	CHECK(inc(tl, 1) == 0);
	CHECK(file_info(f, fi, 2, &n) == 1);
	CHECK(fi[0].status == 1 && fi[0].timestamp_ns != 0);

	/* Nonzero flags or pad: EINVAL. */
	memset(&info, 0, sizeof(info));
	info.flags = 1;
	CHECK(ioctl(f, SYNC_IOC_FILE_INFO, &info) < 0 && errno == EINVAL);
	/* A bad pointer: EFAULT, not a crash. */
	CHECK(ioctl(f, SYNC_IOC_FILE_INFO, (void *)16) < 0 && errno == EFAULT);
	memset(&info, 0, sizeof(info));
	info.num_fences = 1;
	info.sync_fence_info = 16;
	CHECK(ioctl(f, SYNC_IOC_FILE_INFO, &info) < 0 && errno == EFAULT);
	close(f);
	close(tl);
}

static void test_merge_and_its_errors(void)
{
	struct sync_merge_data m;
	struct sync_fence_info fi[4];
	int tl1 = open_timeline(), tl2 = open_timeline(), a, b, pipefd[2];
	uint32_t n = 0;

	CHECK(tl1 >= 0 && tl2 >= 0);
	a = create_fence(tl1, 1, "a");
	b = create_fence(tl2, 1, "b");
	CHECK(a >= 0 && b >= 0);
	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "a+b");
	m.fd2 = b;
	CHECK(ioctl(a, SYNC_IOC_MERGE, &m) == 0);
	CHECK(m.fence >= 0);
	CHECK(file_info(m.fence, fi, 4, &n) == 0 && n == 2);
	CHECK(inc(tl1, 1) == 0);
	CHECK(!ready(m.fence));
	CHECK(inc(tl2, 1) == 0);
	CHECK(ready(m.fence));
	close(m.fence);

	/* fd2 that is no fence: ENOENT; flags or pad: EINVAL. */
	CHECK(pipe(pipefd) == 0);
	m.fd2 = pipefd[0];
	CHECK(ioctl(a, SYNC_IOC_MERGE, &m) < 0 && errno == ENOENT);
	m.fd2 = -1;
	CHECK(ioctl(a, SYNC_IOC_MERGE, &m) < 0 && errno == ENOENT);
	m.fd2 = b;
	m.flags = 1;
	CHECK(ioctl(a, SYNC_IOC_MERGE, &m) < 0 && errno == EINVAL);
	m.flags = 0;
	m.pad = 1;
	CHECK(ioctl(a, SYNC_IOC_MERGE, &m) < 0 && errno == EINVAL);
	CHECK(ioctl(a, SYNC_IOC_MERGE, (void *)16) < 0 && errno == EFAULT);
	close(pipefd[0]);
	close(pipefd[1]);
	close(a);
	close(b);
	close(tl1);
	close(tl2);
}

static void test_wrong_requests_and_other_fds(void)
{
	struct sync_merge_data m;
	int tl = open_timeline(), f, pipefd[2], avail = -1;
	uint32_t one = 1;

	CHECK(tl >= 0);
	f = create_fence(tl, 1, "f");
	CHECK(f >= 0);
	/* sw_sync requests on a fence, sync_file requests on a timeline: ENOTTY. */
	CHECK(ioctl(f, SW_SYNC_IOC_INC, &one) < 0 && errno == ENOTTY);
	memset(&m, 0, sizeof(m));
	m.fd2 = f;
	CHECK(ioctl(tl, SYNC_IOC_MERGE, &m) < 0 && errno == ENOTTY);
	CHECK(ioctl(tl, _IO(SW_SYNC_IOC_MAGIC, 9)) < 0 && errno == ENOTTY);
	/*
	 * The legacy SYNC_IOC_WAIT, merge and FENCE_INFO (numbers 0 to 2):
	 * ENOTTY on mainline, which libsync's fallbacks key on.
	 */
	CHECK(ioctl(f, _IOW(SYNC_IOC_MAGIC, 0, int32_t), &(int32_t){ 0 }) < 0 && errno == ENOTTY);
	CHECK(ioctl(f, _IOWR(SYNC_IOC_MAGIC, 1, char[40]), &m) < 0 && errno == ENOTTY);
	CHECK(ioctl(f, _IOWR(SYNC_IOC_MAGIC, 2, char[40]), &m) < 0 && errno == ENOTTY);
	CHECK(ioctl(tl, SW_SYNC_IOC_INC, (void *)16) < 0 && errno == EFAULT);
	/* Every other fd and request goes to the kernel untouched. */
	CHECK(pipe(pipefd) == 0);
	CHECK(write(pipefd[1], "xyz", 3) == 3);
	CHECK(ioctl(pipefd[0], FIONREAD, &avail) == 0 && avail == 3);
	CHECK(ioctl(pipefd[0], SYNC_IOC_FILE_INFO, &m) < 0 && errno == ENOTTY);
	CHECK(ioctl(-1, SW_SYNC_IOC_INC, &one) < 0 && errno == EBADF);
	close(pipefd[0]);
	close(pipefd[1]);
	close(f);
	close(tl);
}

/*
 * Arguments on the caller's stack, up to its very top, and just past it:
 * a thread whose stack is a mapping of our own, with an inaccessible page
 * right above its top. In the stack the ioctls work; at the top, or
 * straddling it, they are EFAULT, not a crash (a copy that trusted any
 * address above the caller's frame would fault there).
 */
#define EDGE_PAGE  4096
#define EDGE_STACK (1024 * EDGE_PAGE)

struct edge_args {
	int tl;
	char *top; /* the stack's top: the inaccessible page starts here */
	int inc_in_stack, inc_at_top, create_straddling, create_in_stack, fence;
};

static void *stack_edge_main(void *arg)
{
	struct edge_args *e = arg;
	struct sw_sync_create_fence_data data;
	uint32_t *last = (uint32_t *)(void *)(e->top - sizeof(uint32_t));
	char *data_at_top = e->top - sizeof(data);

	*last = 1;
	e->inc_in_stack = ioctl(e->tl, SW_SYNC_IOC_INC, last) < 0 ? errno : 0;
	e->inc_at_top = ioctl(e->tl, SW_SYNC_IOC_INC, e->top) < 0 ? errno : 0;
	e->create_straddling =
		ioctl(e->tl, SW_SYNC_IOC_CREATE_FENCE, e->top - sizeof(data) / 2) < 0 ? errno : 0;
	memset(&data, 0, sizeof(data));
	data.value = 5;
	memcpy(data_at_top, &data, sizeof(data));
	e->create_in_stack = ioctl(e->tl, SW_SYNC_IOC_CREATE_FENCE, data_at_top) < 0 ? errno : 0;
	memcpy(&data, data_at_top, sizeof(data));
	e->fence = e->create_in_stack ? -1 : data.fence;
	return NULL;
}

static void test_arguments_at_the_top_of_a_stack(void)
{
	struct edge_args e = { .tl = open_timeline(), .fence = -1 };
	pthread_attr_t attr;
	pthread_t thread;
	char *map;
	uint32_t count = 0;

	CHECK(e.tl >= 0);
	map = mmap(NULL, EDGE_STACK + EDGE_PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED);
	e.top = map + EDGE_STACK;
	CHECK(mprotect(e.top, EDGE_PAGE, PROT_NONE) == 0);
	CHECK(pthread_attr_init(&attr) == 0);
	CHECK(pthread_attr_setstack(&attr, map, EDGE_STACK) == 0);
	CHECK(pthread_create(&thread, &attr, stack_edge_main, &e) == 0);
	CHECK(pthread_join(thread, NULL) == 0);
	pthread_attr_destroy(&attr);
	munmap(map, EDGE_STACK + EDGE_PAGE);
	CHECK(e.inc_in_stack == 0);
	CHECK(e.inc_at_top == EFAULT);
	CHECK(e.create_straddling == EFAULT);
	CHECK(e.create_in_stack == 0 && e.fence >= 0);
	/* The one INC went through: the fence at 5 is pending, the timeline at 1. */
	CHECK(!ready(e.fence));
	count = 4;
	CHECK(ioctl(e.tl, SW_SYNC_IOC_INC, &count) == 0 && ready(e.fence));
	close(e.fence);
	close(e.tl);
}

static void test_closing_the_timeline_fails_pending_fences(void)
{
	struct sync_fence_info fi[1];
	int tl = open_timeline(), f;
	uint32_t n = 0;

	CHECK(tl >= 0);
	f = create_fence(tl, 5, "pending");
	CHECK(f >= 0);
	CHECK(!ready(f));
	/* As on the kernel, the fence has failed when close() returns (IGT checks it). */
	close(tl);
	CHECK(ready(f));
	CHECK(file_info(f, fi, 1, &n) == -ENOENT && n == 1);
	close(f);
}

/*
 * sync_file_get_name(): a sw_sync fence is "sw_sync-<comm><context>-<seqno>"
 * whatever CREATE_FENCE was told; a merge keeps the name it was given. Two
 * fences made for one pending value are one fence: same name, same stamp.
 */
static void test_names_are_the_kernels(void)
{
	char comm[32] = "", name[32], name2[32], want[64];
	struct sync_fence_info fi[1], fi2[1];
	int tl = open_timeline(), a, b, m;
	FILE *f = fopen("/proc/self/comm", "r");
	uint32_t n;

	CHECK(f && fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	CHECK(tl >= 0);
	a = create_fence(tl, 7, "ignored");
	b = create_fence(tl, 7, "other");
	CHECK(a >= 0 && b >= 0);
	CHECK(file_name(a, name) == 0 && file_name(b, name2) == 0);
	snprintf(want, sizeof(want), "sw_sync-%s", comm);
	CHECK(strncmp(name, want, strlen(want)) == 0);
	CHECK(strcmp(name + strlen(name) - 2, "-7") == 0);
	CHECK(strcmp(name, name2) == 0);
	m = merge(a, a, "kept name");
	CHECK(m >= 0 && file_name(m, name2) == 0 && strcmp(name2, "kept name") == 0);
	CHECK(inc(tl, 7) == 0);
	CHECK(file_info(a, fi, 1, &n) == 1 && file_info(b, fi2, 1, &n) == 1);
	CHECK(fi[0].timestamp_ns && fi[0].timestamp_ns == fi2[0].timestamp_ns);
	close(m);
	close(a);
	close(b);
	close(tl);
}

/*
 * dma_fence_unwrap_merge(): completed fences are left out (their errors
 * too), and a merge of nothing pending is the signalled "stub" fence,
 * stamped with the latest timestamp of what was left out.
 */
static void test_merge_leaves_out_completed_fences(void)
{
	struct sync_fence_info fi[4], done[2];
	int tl1 = open_timeline(), tl2 = open_timeline(), tl3 = open_timeline();
	int p1, p2, s, m2, m3, d1, d2, stub, gone, me;
	uint32_t n = 0;

	CHECK(tl1 >= 0 && tl2 >= 0 && tl3 >= 0);
	p1 = create_fence(tl1, 10, "");
	p2 = create_fence(tl2, 10, "");
	s = create_fence(tl3, 0, ""); /* born signalled */
	m2 = merge(p1, p2, "two");
	m3 = merge(m2, s, "three");
	CHECK(m2 >= 0 && m3 >= 0);
	CHECK(file_info(m3, fi, 4, &n) == 0 && n == 2);

	d1 = create_fence(tl1, 1, "");
	d2 = create_fence(tl2, 1, "");
	CHECK(inc(tl1, 1) == 0 && inc(tl2, 1) == 0);
	CHECK(file_info(d1, done, 1, &n) == 1 && file_info(d2, done + 1, 1, &n) == 1);
	stub = merge(d1, d2, "stub");
	CHECK(stub >= 0 && ready(stub));
	CHECK(file_info(stub, fi, 4, &n) == 1 && n == 1);
	CHECK(strcmp(fi[0].driver_name, "stub") == 0 && strcmp(fi[0].obj_name, "stub") == 0);
	CHECK(fi[0].timestamp_ns == (done[0].timestamp_ns > done[1].timestamp_ns
					     ? done[0].timestamp_ns
					     : done[1].timestamp_ns));

	/* An error is lost in a merge with a pending fence. */
	gone = create_fence(tl3, 5, "");
	close(tl3);
	CHECK(file_info(gone, fi, 1, &n) == -ENOENT);
	me = merge(gone, p1, "lost");
	CHECK(me >= 0 && file_info(me, fi, 4, &n) == 0 && n == 1);
	CHECK(inc(tl1, 9) == 0 && file_info(me, fi, 4, &n) == 1);
	close(me);
	close(gone);
	close(stub);
	close(d1);
	close(d2);
	close(m3);
	close(m2);
	close(s);
	close(p1);
	close(p2);
	close(tl1);
	close(tl2);
}

/*
 * Deadlines: SET_DEADLINE on any fence (pad must be 0), GET_DEADLINE on a
 * timeline for a one-point sw_sync fence: the earliest set, ENOENT before
 * any, EINVAL for a merge of two or for input that is not zeroed. Copies
 * of one fence in two processes share it.
 */
static void test_deadlines(void)
{
	struct set_deadline bad = { 1, 1 };
	struct sw_sync_get_deadline g;
	int tl1 = open_timeline(), tl2 = open_timeline(), a, b, m, status;
	uint64_t ns = 0;
	pid_t pid;

	CHECK(tl1 >= 0 && tl2 >= 0);
	a = create_fence(tl1, 1, "");
	b = create_fence(tl2, 1, "");
	CHECK(a >= 0 && b >= 0);
	CHECK(get_deadline(tl1, a, &ns) == -ENOENT);
	CHECK(ioctl(a, SET_DEADLINE, &bad) < 0 && errno == EINVAL);
	CHECK(set_deadline(a, 2000) == 0 && set_deadline(a, 3000) == 0);
	/* Any sw_sync timeline answers for any sw_sync fence. */
	CHECK(get_deadline(tl2, a, &ns) == 0 && ns == 2000);
	pid = fork();
	if (pid == 0)
		_exit(set_deadline(a, 1000) == 0 ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK(get_deadline(tl1, a, &ns) == 0 && ns == 1000);

	m = merge(a, b, "both");
	CHECK(m >= 0);
	CHECK(set_deadline(m, 500) == 0);
	CHECK(get_deadline(tl1, m, &ns) == -EINVAL);
	CHECK(get_deadline(tl1, b, &ns) == 0 && ns == 500);
	memset(&g, 0, sizeof(g));
	g.fence_fd = a;
	g.deadline_ns = 1;
	CHECK(ioctl(tl1, SW_SYNC_GET_DEADLINE, &g) < 0 && errno == EINVAL);
	CHECK(get_deadline(tl1, tl2, &ns) == -EINVAL);
	CHECK(ioctl(tl1, SW_SYNC_GET_DEADLINE, (void *)16) < 0 && errno == EFAULT);
	CHECK(ioctl(a, SET_DEADLINE, (void *)16) < 0 && errno == EFAULT);
	CHECK(ioctl(tl1, SW_SYNC_IOC_CREATE_FENCE, (void *)16) < 0 && errno == EFAULT);
	CHECK(get_deadline(tl1, -1, &ns) == -EINVAL);
	/* A signalled fence takes no deadline, without an error. */
	CHECK(inc(tl2, 1) == 0);
	close(b);
	b = create_fence(tl2, 1, "");
	CHECK(ready(b));
	CHECK(set_deadline(b, 1) == 0);
	CHECK(get_deadline(tl1, b, &ns) == -ENOENT);
	close(m);
	close(a);
	close(b);
	close(tl1);
	close(tl2);
}

/* A sync_file cannot be read or written: an error, not a hang or a forged status. */
static void test_read_and_write_on_a_fence_fail(void)
{
	int tl = open_timeline(), f;
	char c = 0;

	CHECK(tl >= 0);
	f = create_fence(tl, 1, "");
	CHECK(f >= 0);
	CHECK(read(f, &c, 1) < 0 && errno == EINVAL);
	/* Opened read-only by the kernel. */
	CHECK(write(f, &c, 1) < 0 && errno == EBADF);
	CHECK(!ready(f));
	CHECK(inc(tl, 1) == 0 && ready(f));
	CHECK(read(f, &c, 1) < 0 && errno == EINVAL);
	close(f);
	close(tl);
}

static int open_timeline_flags(int flags)
{
	int fd = open("/sys/kernel/debug/sync/sw_sync", flags);

	if (fd < 0)
		fd = open("/dev/sw_sync", flags);
	return fd;
}

/*
 * The sw_sync file has no read or write op: EINVAL, or EBADF in a direction
 * it was not opened for. Nothing written reaches the timeline.
 */
static void test_read_and_write_on_a_timeline_fail(void)
{
	static const struct {
		int flags, read_errno, write_errno;
	} modes[] = {
		{ O_RDWR, EINVAL, EINVAL },
		{ O_RDONLY, EINVAL, EBADF },
		{ O_WRONLY, EBADF, EINVAL },
	};
	char record[16];

	memset(record, 0xff, sizeof(record));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		int tl = open_timeline_flags(modes[i].flags), f;

		CHECK(tl >= 0);
		f = create_fence(tl, 1, "");
		CHECK(f >= 0);
		CHECK(write(tl, record, sizeof(record)) < 0 && errno == modes[i].write_errno);
		/* Non-blocking, so that a read that reached a socket could not hang the test. */
		CHECK(fcntl(tl, F_SETFL, fcntl(tl, F_GETFL) | O_NONBLOCK) == 0);
		CHECK(read(tl, record, sizeof(record)) < 0 && errno == modes[i].read_errno);
		CHECK(!ready(f));
		CHECK(inc(tl, 1) == 0 && ready(f));
		close(f);
		close(tl);
	}
}

/* Test suites look before they open (the kernel's selftests stat() the path). */
static void test_stat_and_access_show_the_debugfs_file(void)
{
	struct stat st;

	CHECK(stat("/sys/kernel/debug/sync/sw_sync", &st) == 0);
	CHECK(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0644);
	CHECK(access("/sys/kernel/debug/sync/sw_sync", R_OK) == 0);
	CHECK(access("/sys/kernel/debug/sync/sw_sync", X_OK) < 0 && errno == EACCES);
	CHECK(stat("/nonexistent/sw_sync", &st) < 0 && errno == ENOENT);
}

/* Wait up to 5 s for @fd to become ready. */
static int wait_ready(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, 5000) == 1 && (p.revents & POLLIN);
}

static int child_status(pid_t pid)
{
	int st = -1;

	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The timeline fd crosses fork(): the child's INC wakes the parent's fence. */
static void test_forked_child_signals_through_inherited_timeline(void)
{
	int tl = open_timeline(), f;
	pid_t pid;

	CHECK(tl >= 0);
	f = create_fence(tl, 1, "parent's");
	CHECK(f >= 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(inc(tl, 1) == 0 ? 0 : 1);
	CHECK(child_status(pid) == 0);
	CHECK(wait_ready(f));
	close(f);
	close(tl);
}

static int send_fd(int sock, int fd)
{
	char c = 'f', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1 || !(cm = CMSG_FIRSTHDR(&msg)) ||
	    cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * A fence sent over a Unix socket to a process that was forked before the
 * fence existed: it waits there and FILE_INFO works there.
 */
static void test_fence_passed_with_scm_rights_waits_and_answers_elsewhere(void)
{
	struct sync_fence_info fi[1];
	int sv[2], tl, f;
	uint32_t n = 0;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int got = recv_fd(sv[1]);

		_exit(got >= 0 && wait_ready(got) && file_info(got, fi, 1, &n) == 1 && n == 1 ? 0
											      : 1);
	}
	tl = open_timeline();
	CHECK(tl >= 0);
	f = create_fence(tl, 3, "sent");
	CHECK(f >= 0);
	CHECK(send_fd(sv[0], f) == 0);
	CHECK(inc(tl, 3) == 0);
	CHECK(child_status(pid) == 0);
	close(sv[0]);
	close(sv[1]);
	close(f);
	close(tl);
}

#define THREADS	    4
#define THREAD_RUNS 100

static void *thread_main(void *arg)
{
	int tl = open_timeline(), bad = tl < 0;

	for (uint32_t i = 1; !bad && i <= THREAD_RUNS; i++) {
		int f = create_fence(tl, i, "t");

		bad = f < 0 || ready(f) || inc(tl, 1) != 0 || !ready(f);
		if (f >= 0)
			close(f);
	}
	if (tl >= 0)
		close(tl);
	*(int *)arg = bad;
	return NULL;
}

/* Threads each on a timeline of their own, all through one library. */
static void test_threads_create_and_signal_at_once(void)
{
	pthread_t t[THREADS];
	int bad[THREADS];

	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, thread_main, &bad[i]) == 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK(!bad[i]);
	}
}

/*
 * As a container runtime's seccomp profile may: process_vm_readv() and
 * process_vm_writev() fail with EPERM. The emulation must still tell good
 * pointers from bad ones.
 */
static int forbid_process_vm(void)
{
	static const long nrs[] = { SYS_process_vm_readv, SYS_process_vm_writev };

	return fl_test_seccomp_forbid(nrs, 2, SECCOMP_RET_ERRNO | EPERM);
}

/*
 * FILE_INFO's count call has no timestamp to return, so a signalled fence
 * costs no more than a pending one: no scratch pipe to peek at its record
 * (a child that dies at its first pipe2() or tee() asks). The second
 * call's entry still has the fence's timestamp, the same as before.
 */
static void test_file_info_count_of_a_signalled_fence_peeks_no_pipe(void)
{
	struct sync_fence_info fi[1];
	int tl = open_timeline(), f;
	uint64_t stamp;
	uint32_t n = 0;
	pid_t pid;

	CHECK(tl >= 0);
	f = create_fence(tl, 1, "stamped");
	CHECK(f >= 0);
	CHECK(inc(tl, 1) == 0);
	CHECK(file_info(f, fi, 1, &n) == 1 && n == 1);
	stamp = fi[0].timestamp_ns;
	CHECK(stamp != 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct sync_file_info info;

		/*
		 * A forked child's first request connects it again, and the
		 * status page comes with the connection: that one asks the
		 * daemon, the next is answered from the page.
		 */
		memset(&info, 0, sizeof(info));
		if (ioctl(f, SYNC_IOC_FILE_INFO, &info) < 0)
			_exit(2);
		if (fl_test_forbid_scratch_pipes() < 0)
			_exit(77);
		memset(&info, 0, sizeof(info));
		_exit(ioctl(f, SYNC_IOC_FILE_INFO, &info) == 0 && info.num_fences == 1 &&
				      info.status == 1 && info.name[0]
			      ? 0
			      : 1);
	}
	n = (uint32_t)child_status(pid);
	/* 128: killed, by SIGSYS (a pipe); 77: no filter on this machine. */
	CHECK(n == 0 || n == 77);
	CHECK(file_info(f, fi, 1, &n) == 1 && n == 1 && fi[0].timestamp_ns == stamp);
	close(f);
	close(tl);
}

int main(int argc, char **argv)
{
	struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{ "other_fds_do_not_start_a_daemon", test_other_fds_do_not_start_a_daemon },
		{ "open_gives_a_timeline_and_fences_signal_in_order",
		  test_open_gives_a_timeline_and_fences_signal_in_order },
		{ "file_info_two_calls", test_file_info_two_calls },
		{ "file_info_count_of_a_signalled_fence_peeks_no_pipe",
		  test_file_info_count_of_a_signalled_fence_peeks_no_pipe },
		{ "merge_and_its_errors", test_merge_and_its_errors },
		{ "wrong_requests_and_other_fds", test_wrong_requests_and_other_fds },
		{ "arguments_at_the_top_of_a_stack", test_arguments_at_the_top_of_a_stack },
		{ "closing_the_timeline_fails_pending_fences",
		  test_closing_the_timeline_fails_pending_fences },
		{ "forked_child_signals_through_inherited_timeline",
		  test_forked_child_signals_through_inherited_timeline },
		{ "fence_passed_with_scm_rights_waits_and_answers_elsewhere",
		  test_fence_passed_with_scm_rights_waits_and_answers_elsewhere },
		{ "threads_create_and_signal_at_once", test_threads_create_and_signal_at_once },
		{ "names_are_the_kernels", test_names_are_the_kernels },
		{ "merge_leaves_out_completed_fences", test_merge_leaves_out_completed_fences },
		{ "deadlines", test_deadlines },
		{ "read_and_write_on_a_fence_fail", test_read_and_write_on_a_fence_fail },
		{ "read_and_write_on_a_timeline_fail", test_read_and_write_on_a_timeline_fail },
		{ "stat_and_access_show_the_debugfs_file",
		  test_stat_and_access_show_the_debugfs_file },
	};
	const char *sock = getenv("FENCELINE_SOCKET");
	int nfailed = 0;

	daemon_was_absent = sock && access(sock, F_OK) < 0;
	if (argc > 1 && strcmp(argv[1], "--no-process-vm") == 0) {
		if (forbid_process_vm() < 0) {
			perror("seccomp");
			return 1;
		}
		/* The daemon this test starts inherits the filter, and does not care. */
		if (syscall(SYS_process_vm_readv, getpid(), NULL, 0, NULL, 0, 0) >= 0 ||
		    errno != EPERM) {
			fprintf(stderr, "the seccomp filter did not take\n");
			return 1;
		}
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		failed = 0;
		tests[i].fn();
		printf("%s %s\n", failed ? "FAIL" : "ok", tests[i].name);
		nfailed += failed;
	}
	printf("%zu passed, %d failed\n", sizeof(tests) / sizeof(tests[0]) - (size_t)nfailed,
	       nfailed);
	return nfailed ? 1 : 0;
}

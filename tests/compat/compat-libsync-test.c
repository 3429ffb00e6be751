/* SPDX-License-Identifier: MIT */
/*
 * The libsync compat API: Android's libsync unit tests and the kernel
 * selftests re-expressed as FL_TESTs, plus the error paths, fd flags,
 * timeline death, wrap-around and fd passing. The threaded stress tests
 * and the random merges: compat-libsync-stress-test.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <android/sync.h>
#include <sw_sync.h>

#include <fenceline/fence.h>
#include <fenceline/libsync-legacy.h>
#include <fenceline/shared.h>

#include "libsync-helpers.h"

#include "runner.h"

/* Long enough never to fire on a loaded machine; the runner's timeout is the real bound. */
#define LONG_WAIT_MS 10000

/* Entries whose status is exactly @status (so -ENOENT is not "-1"), like AOSP's counters. */
static int count_with_status(int fd, int32_t status)
{
	struct sync_file_info *i = ls_info(fd);
	struct sync_fence_info *e = sync_get_fence_info(i);
	int n = 0;

	for (uint32_t k = 0; k < i->num_fences; k++)
		n += e[k].status == status;
	sync_file_info_free(i);
	return n;
}

static int count_active(int fd)
{
	return count_with_status(fd, 0);
}

static int count_signaled(int fd)
{
	return count_with_status(fd, 1);
}

static int32_t status_of(int fd)
{
	struct sync_file_info *i = ls_info(fd);
	int32_t s = i->status;

	sync_file_info_free(i);
	return s;
}

static bool is_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

FL_TEST(timeline_create_gives_valid_fd)
{
	int tl = ls_timeline();

	fl_assert_int_ge(fcntl(tl, F_GETFD), 0);
	close(tl);
}

FL_TEST(fence_create_gives_valid_fd_with_matching_infos)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "allocFence", 1);

	fl_assert_int_ge(fcntl(f, F_GETFD), 0);
	ls_check_modern_legacy_agree(f);
	close(f);
	close(tl);
}

FL_TEST(fence_create_on_negative_timeline_fd_fails_ebadf)
{
	int tl = ls_timeline();

	fl_assert(tl > 0);
	fl_assert_errno(sw_sync_fence_create(-1, "fence", 1), EBADF);
	close(tl);
}

FL_TEST(sync_wait_reports_etime_until_value_reached)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "allocFence", 5);

	fl_assert_errno(sync_wait(f, 0), ETIME);
	ls_inc(tl, 1);
	fl_assert_errno(sync_wait(f, 0), ETIME);
	ls_inc(tl, 4);
	fl_assert_int_eq(sync_wait(f, 0), 0);
	/* Overshooting keeps it signalled. */
	ls_inc(tl, 10);
	fl_assert_int_eq(sync_wait(f, 0), 0);
	close(f);
	close(tl);
}

FL_TEST(sync_wait_with_timeout_on_pending_fence_reports_etime)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "pending", 1);

	fl_assert_errno(sync_wait(f, 20), ETIME);
	close(f);
	close(tl);
}

FL_TEST(select_reports_fence_readable_once_signaled)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "allocFence", 100);
	struct timeval tv = { 0, 0 };
	fd_set set;

	FD_ZERO(&set);
	FD_SET(f, &set);
	fl_assert_int_eq(select(f + 1, &set, NULL, NULL, &tv), 0);

	ls_inc(tl, 100);
	ls_inc(tl, 100);
	FD_ZERO(&set);
	FD_SET(f, &set);
	tv = (struct timeval){ 0, 0 };
	fl_assert_int_eq(select(f + 1, &set, NULL, NULL, &tv), 1);
	fl_assert(FD_ISSET(f, &set));
	close(f);
	close(tl);
}

FL_TEST(merge_on_one_timeline_keeps_only_latest_point)
{
	int tl = ls_timeline();
	int a = ls_fence(tl, "allocFence", 1);
	int b = ls_fence(tl, "allocFence", 2);
	int c = ls_fence(tl, "allocFence", 3);
	int ab = ls_merge("mergeFence", a, b);
	int d = ls_merge("mergeFence", ab, c);

	close(ab);
	fl_assert_int_eq(count_active(a), 1);
	fl_assert_int_eq(count_active(b), 1);
	fl_assert_int_eq(count_active(c), 1);
	fl_assert_int_eq(count_active(d), 1);
	ls_check_modern_legacy_agree(d);

	ls_inc(tl, 1);
	fl_assert_int_eq(count_signaled(a), 1);
	fl_assert_int_eq(count_active(d), 1);
	ls_check_modern_legacy_agree(d);

	ls_inc(tl, 1);
	fl_assert_int_eq(count_signaled(b), 1);
	fl_assert_int_eq(count_active(d), 1);

	ls_inc(tl, 1);
	fl_assert_int_eq(count_signaled(c), 1);
	fl_assert_int_eq(count_active(d), 0);
	fl_assert_int_eq(count_signaled(d), 1);
	ls_check_modern_legacy_agree(d);
	for (int fd = 0, fds[] = { a, b, c, d }; fd < 4; fd++)
		close(fds[fd]);
	close(tl);
}

FL_TEST(merge_of_fence_with_itself_gives_one_entry)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "allocFence", 5);
	int self = ls_merge("selfMergeFence", f, f);

	fl_assert_int_eq(ls_size_of(self), 1);
	fl_assert_int_eq(count_signaled(self), 0);
	ls_check_modern_legacy_agree(self);
	ls_inc(tl, 5);
	fl_assert_int_eq(count_signaled(self), 1);
	ls_check_modern_legacy_agree(self);
	close(self);
	close(f);
	close(tl);
}

FL_TEST(merge_of_three_timelines_reports_each_point)
{
	int tla = ls_timeline(), tlb = ls_timeline(), tlc = ls_timeline();
	int a = ls_fence(tla, "allocFence", 5);
	int b = ls_fence(tlb, "allocFence", 5);
	int c = ls_fence(tlc, "allocFence", 5);
	int ba = ls_merge("mergeFence", b, a);
	int m = ls_merge("mergeFence", c, ba);

	close(ba);
	fl_assert_int_eq(count_active(m), 3);
	fl_assert_errno(sync_wait(m, 0), ETIME);

	ls_inc(tla, 5);
	fl_assert_int_eq(count_active(m), 2);
	fl_assert_int_eq(count_signaled(m), 1);
	ls_check_modern_legacy_agree(m);

	ls_inc(tlb, 5);
	fl_assert_int_eq(count_active(m), 1);
	fl_assert_int_eq(count_signaled(m), 2);
	ls_check_modern_legacy_agree(m);

	ls_inc(tlc, 5);
	fl_assert_int_eq(count_active(m), 0);
	fl_assert_int_eq(count_signaled(m), 3);
	ls_check_modern_legacy_agree(m);

	fl_assert_int_eq(sync_wait(m, 100), 0);
	for (int k = 0, fds[] = { a, b, c, m, tla, tlb, tlc }; k < 7; k++)
		close(fds[k]);
}

FL_TEST(info_of_active_fence_has_names_and_no_timestamp)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "allocFence", 1);
	struct sync_file_info *i = ls_info(f);
	struct sync_fence_info *e = sync_get_fence_info(i);

	fl_assert_int_eq(i->num_fences, 1);
	fl_assert_int_eq(i->status, 0);
	fl_assert(e[0].obj_name[0] != '\0');
	fl_assert(e[0].driver_name[0] != '\0');
	fl_assert(e[0].timestamp_ns == 0);
	fl_assert_int_eq(e[0].status, 0);
	fl_assert_int_eq(e[0].flags, 0);
	sync_file_info_free(i);
	close(f);
	close(tl);
}

FL_TEST(info_of_signaled_fence_has_timestamp)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "allocFence", 1);
	struct sync_file_info *i;
	struct sync_fence_info *e;

	ls_inc(tl, 1);
	fl_assert_int_eq(sync_wait(f, -1), 0);
	i = ls_info(f);
	e = sync_get_fence_info(i);
	fl_assert_int_eq(i->num_fences, 1);
	fl_assert_int_eq(i->status, 1);
	fl_assert(e[0].obj_name[0] != '\0');
	fl_assert(e[0].driver_name[0] != '\0');
	fl_assert(e[0].timestamp_ns > 0);
	fl_assert_int_eq(e[0].status, 1);
	sync_file_info_free(i);
	close(f);
	close(tl);
}

FL_TEST(info_names_fence_timeline_and_driver)
{
	char comm[17] = "";
	int tl = ls_timeline();
	int f = ls_fence(tl, "a-fence-name-longer-than-31-bytes-is-cut", 1);
	int g = ls_fence(tl, NULL, 2);
	int m = ls_merge("merged-name", f, g);
	struct sync_file_info *i = ls_info(f);
	struct sync_fence_info *e = sync_get_fence_info(i);

	fl_assert_int_eq(prctl(PR_GET_NAME, comm, 0, 0, 0), 0);
	fl_assert_str_eq(i->name, "a-fence-name-longer-than-31-byt");
	fl_assert_str_eq(e[0].obj_name, comm);
	fl_assert_str_eq(e[0].driver_name, "sw_sync");
	sync_file_info_free(i);

	i = ls_info(m);
	fl_assert_str_eq(i->name, "merged-name");
	sync_file_info_free(i);
	close(m);
	close(g);
	close(f);
	close(tl);
}

FL_TEST(info_status_is_first_entry_not_signaled_like_kernel)
{
	int tla = ls_timeline(), tlb = ls_timeline();
	int a = ls_fence(tla, "a", 1);
	int b = ls_fence(tlb, "b", 1);
	int m = ls_merge("m", a, b);
	struct sync_file_info *i;
	struct sync_fence_info *e;

	/* Kill b's timeline: its point fails while a's is still pending. */
	close(tlb);
	fl_assert_int_eq(sync_wait(b, LONG_WAIT_MS), 0);

	i = ls_info(m);
	e = sync_get_fence_info(i);
	fl_assert_int_eq(i->num_fences, 2);
	fl_assert_int_eq(e[0].status, 0);
	fl_assert_int_eq(e[1].status, -ENOENT);
	fl_assert_int_eq(i->status, 0);
	sync_file_info_free(i);
	/* The merged fence waits for every point, like a dma_fence_array. */
	fl_assert_errno(sync_wait(m, 0), ETIME);
	ls_check_modern_legacy_agree(m);

	ls_inc(tla, 1);
	fl_assert_int_eq(status_of(m), -ENOENT);
	/* Completed with an error is still "ready" for poll, hence for sync_wait. */
	fl_assert_int_eq(sync_wait(m, 0), 0);
	ls_check_modern_legacy_agree(m);
	close(m);
	close(b);
	close(a);
	close(tla);
}

FL_TEST(timeline_close_fails_pending_fence_with_enoent)
{
	int tl = ls_timeline();
	int done = ls_fence(tl, "signaled", 1);
	int pending = ls_fence(tl, "pending", 2);
	struct pollfd p = { .fd = pending, .events = POLLIN };

	ls_inc(tl, 1);
	fl_assert(!is_ready(pending));
	close(tl);

	/* The core notices the close from its own thread, so allow it a moment. */
	fl_assert_int_eq(poll(&p, 1, LONG_WAIT_MS), 1);
	/*
	 * Readable, as a signalled sync_file is; a fence fd that is a pipe
	 * reads end-of-file too (POLLHUP), which sync_wait() takes as ready.
	 * Never an error: sync_wait() fails on POLLERR or POLLNVAL.
	 */
	fl_assert(p.revents & POLLIN);
	fl_assert_int_eq(p.revents & ~(POLLIN | POLLHUP), 0);
	fl_assert_int_eq(status_of(pending), -ENOENT);
	fl_assert_int_eq(sync_wait(pending, 0), 0);
	ls_check_modern_legacy_agree(pending);
	/* What had signalled before the close stays signalled. */
	fl_assert_int_eq(status_of(done), 1);
	close(pending);
	close(done);
}

FL_TEST(timeline_dup_keeps_timeline_alive_until_last_close)
{
	int tl = ls_timeline();
	int copy = dup(tl);
	int f = ls_fence(tl, "f", 1);
	int g = ls_fence(tl, "g", 2);

	fl_assert_int_ge(copy, 0);
	close(tl);
	ls_inc(copy, 1);
	fl_assert_int_eq(sync_wait(f, LONG_WAIT_MS), 0);
	fl_assert_int_eq(status_of(f), 1);
	fl_assert_int_eq(status_of(g), 0);
	close(copy);
	fl_assert_int_eq(sync_wait(g, LONG_WAIT_MS), 0);
	fl_assert_int_eq(status_of(g), -ENOENT);
	close(g);
	close(f);
}

FL_TEST(fence_create_on_closed_timeline_fd_fails_ebadf)
{
	int tl = ls_timeline();

	close(tl);
	fl_assert_errno(sw_sync_fence_create(tl, "late", 1), EBADF);
	fl_assert_errno(sw_sync_timeline_inc(tl, 1), EBADF);
}

FL_TEST(timeline_wraps_around_at_32_bits)
{
	int tl = ls_timeline();
	int behind, ahead, far;

	ls_inc(tl, 0xFFFFFFF0u);
	/* 0x20 ahead across the wrap: pending. */
	ahead = ls_fence(tl, "ahead", 0x10);
	fl_assert_errno(sync_wait(ahead, 0), ETIME);
	/* 2^31 + 1 ahead is, in 32-bit wrap arithmetic, behind: born signalled. */
	far = ls_fence(tl, "far", 0xFFFFFFF0u + 0x80000001u);
	fl_assert_int_eq(sync_wait(far, 0), 0);
	behind = ls_fence(tl, "behind", 0xFFFFFFEFu);
	fl_assert_int_eq(sync_wait(behind, 0), 0);

	ls_inc(tl, 0x1F);
	fl_assert_errno(sync_wait(ahead, 0), ETIME);
	ls_inc(tl, 1);
	fl_assert_int_eq(sync_wait(ahead, 0), 0);
	fl_assert_int_eq(status_of(ahead), 1);
	close(behind);
	close(far);
	close(ahead);
	close(tl);
}

FL_TEST(timeline_fd_is_inheritable_and_fence_fds_are_cloexec)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "f", 1);
	int m = ls_merge("m", f, f);

	fl_assert_int_eq(fcntl(tl, F_GETFD) & FD_CLOEXEC, 0);
	fl_assert_int_eq(fcntl(f, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	fl_assert_int_eq(fcntl(m, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(m);
	close(f);
	close(tl);
}

FL_TEST(sync_wait_rejects_bad_fds)
{
	int p[2];

	fl_assert_errno(sync_wait(-1, 0), EINVAL);
	fl_assert_errno(sync_wait(-1, -1), EINVAL);
	fl_assert_int_eq(pipe(p), 0);
	close(p[0]);
	/* libsync's rule: poll() flags a closed fd with POLLNVAL, reported as EINVAL. */
	fl_assert_errno(sync_wait(p[0], 0), EINVAL);
	close(p[1]);
}

FL_TEST(sync_wait_works_on_any_pollable_fd)
{
	int p[2];

	fl_assert_int_eq(pipe(p), 0);
	fl_assert_errno(sync_wait(p[0], 0), ETIME);
	fl_assert_int_eq(write(p[1], "x", 1), 1);
	fl_assert_int_eq(sync_wait(p[0], 0), 0);
	close(p[0]);
	close(p[1]);
}

FL_TEST(sync_merge_rejects_bad_fds_like_the_ioctl)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "f", 1);
	int p[2], closed;

	fl_assert_int_eq(pipe(p), 0);
	closed = dup(p[0]);
	close(closed);

	/* fd1 is the ioctl's own fd: EBADF if not open, ENOTTY if not a fence. */
	fl_assert_errno(sync_merge("m", -1, f), EBADF);
	fl_assert_errno(sync_merge("m", closed, f), EBADF);
	fl_assert_errno(sync_merge("m", p[0], f), ENOTTY);
	fl_assert_errno(sync_merge("m", tl, f), ENOTTY);
	/* fd2 is an argument: ENOENT whatever is wrong with it. */
	fl_assert_errno(sync_merge("m", f, -1), ENOENT);
	fl_assert_errno(sync_merge("m", f, closed), ENOENT);
	fl_assert_errno(sync_merge("m", f, p[0]), ENOENT);
	fl_assert_errno(sync_merge("m", f, tl), ENOENT);
	close(p[0]);
	close(p[1]);
	close(f);
	close(tl);
}

FL_TEST(sync_merge_with_null_name_works)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "f", 1);
	int m = ls_merge(NULL, f, f);

	fl_assert_int_eq(ls_size_of(m), 1);
	close(m);
	close(f);
	close(tl);
}

FL_TEST(info_calls_reject_bad_fds)
{
	int tl = ls_timeline();
	int p[2], closed;

	fl_assert_int_eq(pipe(p), 0);
	closed = dup(p[0]);
	close(closed);

	errno = 0;
	fl_assert(sync_file_info(-1) == NULL && errno == EBADF);
	errno = 0;
	fl_assert(sync_file_info(closed) == NULL && errno == EBADF);
	errno = 0;
	fl_assert(sync_file_info(p[0]) == NULL && errno == ENOTTY);
	errno = 0;
	fl_assert(sync_file_info(tl) == NULL && errno == ENOTTY);

	errno = 0;
	fl_assert(sync_fence_info(-1) == NULL && errno == EBADF);
	errno = 0;
	fl_assert(sync_fence_info(closed) == NULL && errno == EBADF);
	errno = 0;
	fl_assert(sync_fence_info(p[0]) == NULL && errno == ENOTTY);
	errno = 0;
	fl_assert(sync_fence_info(tl) == NULL && errno == ENOTTY);

	fl_assert(sync_pt_info(NULL, NULL) == NULL);
	sync_file_info_free(NULL);
	sync_fence_info_free(NULL);
	close(p[0]);
	close(p[1]);
	close(tl);
}

FL_TEST(sw_sync_calls_reject_bad_fds)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "f", 1);
	int p[2];

	fl_assert_int_eq(pipe(p), 0);
	fl_assert_errno(sw_sync_timeline_inc(-1, 1), EBADF);
	fl_assert_errno(sw_sync_timeline_inc(p[0], 1), ENOTTY);
	fl_assert_errno(sw_sync_timeline_inc(f, 1), ENOTTY);
	fl_assert_errno(sw_sync_fence_create(-1, "x", 1), EBADF);
	fl_assert_errno(sw_sync_fence_create(p[0], "x", 1), ENOTTY);
	fl_assert_errno(sw_sync_fence_create(f, "x", 1), ENOTTY);
	close(p[0]);
	close(p[1]);
	close(f);
	close(tl);
}

FL_TEST(fence_create_with_null_name_works)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, NULL, 1);

	fl_assert_int_eq(count_active(f), 1);
	close(f);
	close(tl);
}

FL_TEST(legacy_info_packs_sw_sync_entries_with_driver_data)
{
	int tl[3], f[3], ab, m;
	struct sync_fence_info_data *legacy;
	struct sync_pt_info *itr = NULL, pt;
	uint32_t value;

	for (int k = 0; k < 3; k++) {
		tl[k] = ls_timeline();
		f[k] = ls_fence(tl[k], "f", 10u + (unsigned)k);
	}
	ab = ls_merge("ab", f[0], f[1]);
	m = ls_merge("abc", ab, f[2]);
	legacy = sync_fence_info(m);
	fl_assert(legacy != NULL);
	fl_assert_str_eq(legacy->name, "abc");
	fl_assert_int_eq(legacy->len, 40 + 3 * 84);
	for (int k = 0; k < 3; k++) {
		itr = sync_pt_info(legacy, itr);
		fl_assert(itr != NULL);
		ls_read_pt(itr, &pt);
		fl_assert_int_eq(pt.len, 84);
		fl_assert_str_eq(pt.driver_name, "sw_sync");
		memcpy(&value, (const uint8_t *)itr + offsetof(struct sync_pt_info, driver_data),
		       sizeof(value));
		fl_assert_int_eq(value, 10 + k);
	}
	fl_assert(sync_pt_info(legacy, itr) == NULL);
	sync_fence_info_free(legacy);
	close(m);
	close(ab);
	for (int k = 0; k < 3; k++) {
		close(f[k]);
		close(tl[k]);
	}
}

/* (4096 - 40) / 84 = 48 sw_sync entries fit the legacy block; 49 do not. */
FL_TEST(legacy_info_fails_enomem_rather_than_truncate)
{
	enum { N = 49 };
	int tl[N], acc, next, r;
	struct sync_fence_info_data *legacy;

	for (int k = 0; k < N; k++)
		tl[k] = ls_timeline();
	acc = ls_fence(tl[0], "f", 1);
	for (int k = 1; k < N; k++) {
		int f = ls_fence(tl[k], "f", 1);

		next = ls_merge("acc", acc, f);
		close(f);
		close(acc);
		acc = next;
		if (k == N - 2) {
			legacy = sync_fence_info(acc);
			fl_assert(legacy != NULL);
			fl_assert_int_eq(legacy->len, 40 + (N - 1) * 84);
			sync_fence_info_free(legacy);
		}
	}
	fl_assert_int_eq(ls_size_of(acc), N);
	errno = 0;
	legacy = sync_fence_info(acc);
	r = errno;
	fl_assert(legacy == NULL);
	fl_assert_int_eq(r, ENOMEM);
	close(acc);
	for (int k = 0; k < N; k++)
		close(tl[k]);
}

FL_TEST(forked_child_waits_on_inherited_fence_fd)
{
	int tl = ls_timeline();
	int f = ls_fence(tl, "shared", 1);
	int ready[2], status;
	char c;
	pid_t pid;

	fl_assert_int_eq(pipe(ready), 0);
	pid = fork();
	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		int ok = sync_wait(f, 0) == -1 && errno == ETIME;

		/* Only now may the parent signal: the first check must see it pending. */
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		ok = ok && sync_wait(f, -1) == 0;
		_exit(ok ? 0 : 1);
	}
	fl_assert_int_eq(read(ready[0], &c, 1), 1);
	ls_inc(tl, 1);
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
	close(ready[0]);
	close(ready[1]);
	close(f);
	close(tl);
}

/*
 * In in-process mode a forked child holds copies of the parent's fences and
 * timelines, frozen at fork time. It must not be handed those copies: its
 * info would claim "active" for a fence the parent has signalled, and its
 * increments would move a timeline nobody else sees. Only polling is
 * meaningful there. (In daemon mode the child shares the real objects:
 * tests/daemon-test.c.)
 */
FL_TEST(in_process_forked_child_gets_no_stale_copies_of_fences_or_timelines)
{
	int tl, f;

	fl_mode_set(FL_MODE_IN_PROCESS);
	tl = ls_timeline();
	f = ls_fence(tl, "shared", 1);
	int go[2], status;
	char c;
	pid_t pid;

	fl_assert_int_eq(pipe(go), 0);
	pid = fork();
	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sync_file_info *i;
		int ok;

		if (read(go[0], &c, 1) != 1 || sync_wait(f, -1) != 0)
			_exit(2);
		i = sync_file_info(f);
		ok = i ? i->status == 1 : errno == ENOTTY;
		sync_file_info_free(i);
		ok = ok && sw_sync_timeline_inc(tl, 1) == -1 && errno == ENOTTY;
		_exit(ok ? 0 : 1);
	}
	ls_inc(tl, 1);
	fl_assert_int_eq(write(go[1], "g", 1), 1);
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status));
	fl_assert_int_eq(WEXITSTATUS(status), 0);
	close(go[0]);
	close(go[1]);
	close(f);
	close(tl);
}

/* The kernel's own sw_sync, when this machine has it (root and debugfs). */
static int kernel_timeline(void)
{
	int fd = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fl_test_skip("no kernel sw_sync: %s", strerror(errno));
	return fd;
}

struct kernel_create_fence {
	uint32_t value;
	char name[32];
	int32_t fence;
};

#define KERNEL_SW_SYNC_CREATE_FENCE _IOWR('W', 0, struct kernel_create_fence)
#define KERNEL_SW_SYNC_INC	    _IOW('W', 1, uint32_t)

static int kernel_fence(int tl, uint32_t value)
{
	struct kernel_create_fence data = { .value = value, .name = "k" };

	fl_assert_int_eq(ioctl(tl, KERNEL_SW_SYNC_CREATE_FENCE, &data), 0);
	return data.fence;
}

FL_TEST(kernel_sync_files_pass_through)
{
	int ktl = kernel_timeline();
	int ka = kernel_fence(ktl, 1), kb = kernel_fence(ktl, 2);
	int tl = ls_timeline();
	int f = ls_fence(tl, "f", 1);
	int m = ls_merge("kernel", ka, kb);
	uint32_t one = 1;

	fl_assert_int_eq(ls_size_of(m), 1);
	fl_assert_int_eq(count_active(m), 1);
	ls_check_modern_legacy_agree(m);
	/* Mixing the two kinds is not supported (yet): the kernel's answers. */
	fl_assert_errno(sync_merge("mixed", ka, f), ENOENT);
	fl_assert_errno(sync_merge("mixed", f, ka), ENOENT);
	fl_assert_int_eq(ioctl(ktl, KERNEL_SW_SYNC_INC, &one), 0);
	fl_assert_int_eq(ioctl(ktl, KERNEL_SW_SYNC_INC, &one), 0);
	fl_assert_int_eq(sync_wait(m, -1), 0);
	fl_assert_int_eq(status_of(m), 1);
	for (int k = 0, fds[] = { m, f, tl, kb, ka, ktl }; k < 6; k++)
		close(fds[k]);
}

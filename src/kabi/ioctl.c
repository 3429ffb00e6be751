/* SPDX-License-Identifier: MIT */
/*
 * The sync_file and sw_sync ioctls on fenceline fds, with the kernel's
 * argument checks and errnos (drivers/dma-buf/sync_file.c, sw_sync.c):
 * EFAULT for memory we cannot read or write, EINVAL for nonzero flags or
 * padding, ENOENT for a merge partner that is not a fence, ENOTTY for a
 * request the fd's kind does not know. Merges follow today's kernel
 * (FL_MERGE_MAINLINE) and names are the kernel's (sync_file_get_name()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include <fenceline/fence.h>
#include <fenceline/shared.h>

#include "kabi.h"

/*
 * copy_from_user()/copy_to_user(): the kernel answers EFAULT for a bad
 * pointer instead of crashing, and so must we. process_vm_readv() on
 * ourselves checks the range the same way. Where it is missing (kernels
 * without CONFIG_CROSS_MEMORY_ATTACH) or forbidden (seccomp profiles of
 * container runtimes), a pipe does the same: write() and read() fail with
 * EFAULT on memory we may not read or write.
 */
static atomic_bool no_process_vm;

/* Through a pipe, in pieces that fit it: the caller's memory only ever meets the kernel. */
static int copy_via_pipe(void *dst, const void *src, size_t len)
{
	int p[2], r = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	for (size_t done = 0; done < len && r == 0; done += 4096) {
		size_t n = FL_KABI_MIN(len - done, (size_t)4096);
		ssize_t w = syscall(SYS_write, p[1], (const char *)src + done, n), rd = -1;

		/*
		 * Only the caller's side can fail: at once with EFAULT, or part
		 * way with a short count.
		 */
		if (w == (ssize_t)n)
			rd = syscall(SYS_read, p[0], (char *)dst + done, n);
		if (w != (ssize_t)n || rd != (ssize_t)n)
			r = -EFAULT;
	}
	close(p[0]);
	close(p[1]);
	return r;
}

static bool process_vm_missing(void)
{
	if (errno == ENOSYS || errno == EPERM)
		atomic_store(&no_process_vm, true);
	return atomic_load(&no_process_vm);
}

/*
 * The calling thread's stack, [lo, hi), learned on its first request; lo
 * == hi: not known (never taken as the stack). Whatever lies between a
 * frame of ours and the top of the stack it is on is the live stack of the
 * frames that called us, mapped and writable: an argument there (a local
 * variable, as nearly every caller passes) is copied without a syscall,
 * where process_vm_readv() and its getpid() cost the kernel's whole ioctl
 * several times over. A frame on another stack (sigaltstack(), a
 * coroutine's, a thread the program cloned without TLS of its own) is not
 * inside the range: that caller's memory goes through the checked copy.
 */
static __thread uintptr_t stack_lo, stack_hi;
static __thread bool stack_known;

static void learn_stack(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	stack_known = true;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		stack_lo = (uintptr_t)addr;
		stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

/* Is [@p, @p + @len) inside the live part of the calling thread's stack? */
static __attribute__((noinline)) bool on_live_stack(const void *p, size_t len)
{
	/* An address in this frame: everything above it up to the top is live. */
	volatile char here = 0;
	uintptr_t sp = (uintptr_t)&here, a = (uintptr_t)p;

	if (!stack_known)
		learn_stack();
	return sp >= stack_lo && sp < stack_hi && a > sp && a < stack_hi && len <= stack_hi - a;
}

/*
 * As the kernel copies: whatever the caller's objects there are (a program
 * may pass a smaller variable than the request's size). Byte by byte
 * through volatile pointers, so that no memcpy() call, which a sanitizer
 * intercepts and checks against the caller's objects, is made of it.
 */
__attribute__((no_sanitize_address)) static void stack_copy(void *dst, const void *src, size_t len)
{
	volatile unsigned char *d = dst;
	const volatile unsigned char *s = src;

	for (size_t i = 0; i < len; i++)
		d[i] = s[i];
}

static int copy_in(void *dst, const void *src, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)src, len };

	if (on_live_stack(src, len)) {
		stack_copy(dst, src, len);
		return 0;
	}
	if (!atomic_load_explicit(&no_process_vm, memory_order_relaxed)) {
		if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len)
			return 0;
		if (!process_vm_missing())
			return -EFAULT;
	}
	return copy_via_pipe(dst, src, len);
}

static int copy_out(void *dst, const void *src, size_t len)
{
	struct iovec local = { (void *)src, len }, remote = { dst, len };

	if (on_live_stack(dst, len)) {
		stack_copy(dst, src, len);
		return 0;
	}
	if (!atomic_load_explicit(&no_process_vm, memory_order_relaxed)) {
		if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len)
			return 0;
		if (!process_vm_missing())
			return -EFAULT;
	}
	return copy_via_pipe(dst, src, len);
}

static void copy_name(char *dst, size_t size, const char *src)
{
	size_t len = strnlen(src, size - 1);

	memcpy(dst, src, len);
	memset(dst + len, 0, size - len);
}

/*
 * The requests are tried on @fd directly: fenceline's fd API answers
 * -ENOTTY (or -EBADF) for an fd that is not one of its own of the right
 * kind, and then the kernel answers, as it would without us. On one of our
 * sockets the kernel's answer to a sync request is ENOTTY, which is also
 * the sync_file's and sw_sync's answer to a request of the other kind. So
 * no request pays for asking the daemon what an fd is, except on error
 * paths where the kernel's order of checks needs it.
 */
static bool not_ours(int r)
{
	return r == -ENOTTY || r == -EBADF;
}

static bool is_our_timeline(int fd)
{
	uint64_t value;

	return FL(fl_timeline_fd_get_value)(fd, &value) == 0;
}

static bool is_our_fence(int fd)
{
	struct fl_fence_info info;

	return FL(fl_fence_fd_get_info_flags)(fd, FL_INFO_NO_TIMESTAMPS, &info, NULL, 0) >= 0;
}

/* An error the kernel finds only after it has dispatched on @fd's kind. */
static int error_if_ours(int r, bool ours)
{
	return ours ? r : FL_KABI_NOT_OURS;
}

static int sw_sync_create_fence(int tl, void *arg)
{
	struct fl_kabi_sw_sync_create_fence_data data;
	int r, fd;

	r = copy_in(&data, arg, sizeof(data));
	if (r < 0)
		return error_if_ours(r, is_our_timeline(tl));
	/* The kernel ignores the name: sync_file_get_name() makes one up. */
	r = FL(fl_fence_fd_create)(tl, data.value, NULL, &fd);
	if (r < 0)
		return not_ours(r) ? FL_KABI_NOT_OURS : r;
	data.fence = fd;
	r = copy_out(arg, &data, sizeof(data));
	if (r < 0)
		close(fd);
	else
		fl__kabi_mark_fence(fd);
	return r;
}

static int sw_sync_inc(int tl, void *arg)
{
	uint32_t count;
	int r = copy_in(&count, arg, sizeof(count));

	if (r < 0)
		return error_if_ours(r, is_our_timeline(tl));
	r = FL(fl_timeline_fd_inc)(tl, count);
	return not_ours(r) ? FL_KABI_NOT_OURS : r;
}

/* Only a fence that is one sw_sync point has a deadline; anything else is EINVAL. */
static int sw_sync_get_deadline(int tl, void *arg)
{
	struct fl_kabi_sw_sync_get_deadline data;
	int r;

	if (!is_our_timeline(tl))
		return FL_KABI_NOT_OURS;
	r = copy_in(&data, arg, sizeof(data));
	if (r < 0)
		return r;
	if (data.deadline_ns || data.pad)
		return -EINVAL;
	r = FL(fl_fence_fd_get_deadline)(data.fence_fd, &data.deadline_ns);
	if (not_ours(r))
		r = -EINVAL;
	return r < 0 ? r : copy_out(arg, &data, sizeof(data));
}

/* Is @fd a kernel sync_file (it answers the real FILE_INFO)? */
static bool is_kernel_sync_file(int fd)
{
	struct sync_file_info info;

	memset(&info, 0, sizeof(info));
	return fl__kabi_real_ioctl(fd, SYNC_IOC_FILE_INFO, &info) == 0;
}

/*
 * dma_fence_unwrap_merge(): completed fences left out, then a
 * dma_fence_array. Either side may be a real kernel sync_file (from a GPU
 * driver): the daemon imports it, watching it for us, and merges that.
 */
static int merge_importing(int fd, int fd2, const char *name, int *ret_fence)
{
	const unsigned int flags = FL_MERGE_WAIT_ALL | FL_MERGE_MAINLINE;
	int r = FL(fl_fence_fd_merge)(fd, fd2, name, flags, ret_fence), imported;

	if (r == -ENOTTY || r == -EBADF) {
		/* @fd is not ours: the kernel's, unless it is a kernel sync_file and @fd2 ours. */
		if (!is_our_fence(fd2) || !is_kernel_sync_file(fd) ||
		    FL(fl_fence_fd_import)(fd, NULL, &imported) < 0)
			return FL_KABI_NOT_OURS;
		r = FL(fl_fence_fd_merge)(imported, fd2, name, flags, ret_fence);
		close(imported);
	} else if (r == -ENOENT) {
		/* @fd2 is not ours: a kernel sync_file, or not a fence at all. */
		if (FL(fl_fence_fd_import)(fd2, NULL, &imported) < 0)
			return -ENOENT;
		r = FL(fl_fence_fd_merge)(fd, imported, name, flags, ret_fence);
		close(imported);
	}
	return r;
}

static int sync_merge(int fd, void *arg)
{
	struct sync_merge_data data;
	int r, fence;

	r = copy_in(&data, arg, sizeof(data));
	if (r < 0)
		return error_if_ours(r, is_our_fence(fd));
	if (data.flags || data.pad)
		return error_if_ours(-EINVAL, is_our_fence(fd));
	data.name[sizeof(data.name) - 1] = '\0';
	r = merge_importing(fd, data.fd2, data.name, &fence);
	if (r < 0)
		return r;
	fl__kabi_mark_fence(fd);
	data.fence = fence;
	r = copy_out(arg, &data, sizeof(data));
	if (r < 0)
		close(fence);
	else
		fl__kabi_mark_fence(fence);
	return r;
}

/*
 * sync_file_get_name(): the name given to the merge, else one made from the
 * fence: "<driver>-<timeline><context>-<seqno>". sw_sync's fences have no
 * name of their own; fenceline gives a nameless fence "<timeline>-<value>",
 * which we recognise. A merge of several points is a dma_fence_array, on
 * the "unbound" timeline at seqno 1 (its context we cannot reproduce: 0).
 */
static void kernel_name(char *dst, size_t size, const struct fl_fence_info *summary,
			const struct fl_sync_pt_info *pt0)
{
	char fallback[FL_NAME_MAX + 24], made[2 * FL_NAME_MAX + 48];

	if (summary->num_points == 1) {
		snprintf(fallback, sizeof(fallback), "%s-%" PRIu64, pt0->timeline_name, pt0->value);
		fallback[FL_NAME_MAX - 1] = '\0';
		if (!summary->name[0] || (strcmp(pt0->driver_name, "sw_sync") == 0 &&
					  strcmp(summary->name, fallback) == 0)) {
			snprintf(made, sizeof(made), "%s-%s%" PRIu64 "-%" PRIu64, pt0->driver_name,
				 pt0->timeline_name,
				 strcmp(pt0->driver_name, "stub") ? pt0->timeline_id : 0,
				 pt0->value);
			copy_name(dst, size, made);
			return;
		}
	} else if (!summary->name[0]) {
		copy_name(dst, size, "dma_fence_array-unbound0-1");
		return;
	}
	copy_name(dst, size, summary->name);
}

/* Points fetched with the summary: most fences have fewer, so one round trip. */
#define INFO_POINTS 16

/*
 * The two-call pattern: with num_fences 0, the count (and name, status);
 * then, with room for at least that many, the entries. The status of the
 * second call is the first entry's that is not signalled, else 1.
 */
static int sync_file_info(int fd, void *arg)
{
	struct fl_sync_pt_info stack_pts[INFO_POINTS], *pts = stack_pts;
	struct sync_fence_info *out = NULL;
	struct fl_fence_info summary;
	struct sync_file_info info;
	unsigned int flags = 0;
	bool have_arg = false;
	uint32_t n;
	int copied = 0, r;

	/*
	 * Only the entries carry timestamps, and finding a daemon fence's can
	 * cost more than the rest of the call: the count call (num_fences 0),
	 * or one that fails, goes without. That needs the argument before the
	 * info; reading it first costs a syscall where it is not on the stack,
	 * wasted on a kernel sync_file passing through, so only for an fd seen
	 * as ours. Its error still comes after the fd's (the kernel's order).
	 */
	if (fl__kabi_fence_marked(fd)) {
		copied = copy_in(&info, arg, sizeof(info));
		have_arg = true;
		if (copied < 0 || info.flags || info.pad || !info.num_fences)
			flags = FL_INFO_NO_TIMESTAMPS;
	}
	r = FL(fl_fence_fd_get_info_flags)(fd, flags, &summary, stack_pts, INFO_POINTS);
	if (r < 0)
		return not_ours(r) ? FL_KABI_NOT_OURS : r;
	fl__kabi_mark_fence(fd);
	n = summary.num_points;
	if (!have_arg)
		copied = copy_in(&info, arg, sizeof(info));
	if (copied < 0)
		return copied;
	if (info.flags || info.pad)
		return -EINVAL;
	kernel_name(info.name, sizeof(info.name), &summary, &stack_pts[0]);
	info.status = summary.status;
	if (info.num_fences) {
		if (info.num_fences < n)
			return -EINVAL;
		if (n > INFO_POINTS)
			pts = calloc(n, sizeof(*pts));
		out = calloc(n ? n : 1, sizeof(*out));
		r = pts && out ? 0 : -ENOMEM;
		if (r == 0 && n > INFO_POINTS)
			r = FL(fl_fence_fd_get_info_flags)(fd, 0, NULL, pts, n);
		if (r >= 0) {
			info.status = 1;
			for (uint32_t i = 0; i < n; i++) {
				copy_name(out[i].obj_name, sizeof(out[i].obj_name),
					  pts[i].timeline_name);
				copy_name(out[i].driver_name, sizeof(out[i].driver_name),
					  pts[i].driver_name);
				out[i].status = pts[i].status;
				out[i].flags = 0;
				out[i].timestamp_ns = pts[i].timestamp_ns;
				if (info.status == 1 && pts[i].status <= 0)
					info.status = pts[i].status;
			}
			r = copy_out((void *)(uintptr_t)info.sync_fence_info, out,
				     n * sizeof(*out));
		}
		if (pts != stack_pts)
			free(pts);
		free(out);
		if (r < 0)
			return r;
	}
	info.num_fences = n;
	return copy_out(arg, &info, sizeof(info));
}

/* A hint, which the kernel accepts even where nobody records it. */
static int sync_set_deadline(int fd, void *arg)
{
	struct fl_kabi_sync_set_deadline data;
	int r = copy_in(&data, arg, sizeof(data));

	if (r < 0)
		return error_if_ours(r, is_our_fence(fd));
	if (data.pad)
		return error_if_ours(-EINVAL, is_our_fence(fd));
	r = FL(fl_fence_fd_set_deadline)(fd, data.deadline_ns);
	if (not_ours(r))
		return FL_KABI_NOT_OURS;
	fl__kabi_mark_fence(fd);
	return r;
}

int fl__kabi_ioctl(int fd, unsigned long request, void *arg)
{
	int r;

	switch (request) {
	case FL_KABI_SW_SYNC_IOC_CREATE_FENCE:
		r = sw_sync_create_fence(fd, arg);
		break;
	case FL_KABI_SW_SYNC_IOC_INC:
		r = sw_sync_inc(fd, arg);
		break;
	case FL_KABI_SW_SYNC_GET_DEADLINE:
		r = sw_sync_get_deadline(fd, arg);
		break;
	case SYNC_IOC_MERGE:
		r = sync_merge(fd, arg);
		break;
	case SYNC_IOC_FILE_INFO:
		r = sync_file_info(fd, arg);
		break;
	case FL_KABI_SYNC_IOC_SET_DEADLINE:
		r = sync_set_deadline(fd, arg);
		break;
	default:
		/* Unknown to sync_file and sw_sync alike: ENOTTY from every fd we make. */
		return FL_KABI_NOT_OURS;
	}
	if (r == FL_KABI_NOT_OURS)
		return r;
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

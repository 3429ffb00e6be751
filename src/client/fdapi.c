/* SPDX-License-Identifier: MIT */
/*
 * The fd API (<fenceline/shared.h>): each call checks its arguments, looks
 * at the fd once (fl__fdref_get()) and hands it to the backends in turn
 * (fdbackend.h): this process's core first, which answers for the fds it
 * made, then the daemon, which answers for its own and says -ENOTTY for
 * the rest. Calls that make an object from nothing go to the backend of
 * a context's mode (context.c; the default context's is the process's).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/context.h>
#include <fenceline/fence.h>
#include <fenceline/shared.h>
#include <fenceline/sw_sync.h>
#include <fenceline/sync_file.h>
#include <fenceline/timeline.h>

#include "client.h"
#include "fdbackend.h"
#include "host.h"
#include "util.h"

static atomic_int mode = -1;

FL_EXPORT int fl_mode_set(enum fl_mode m)
{
	fl_return_if(m != FL_MODE_DAEMON && m != FL_MODE_IN_PROCESS, -EINVAL);
	atomic_store(&mode, (int)m);
	return 0;
}

FL_EXPORT enum fl_mode fl_mode_get(void)
{
	int m = atomic_load(&mode);

	if (m < 0) {
		const char *env = getenv("FENCELINE_MODE");

		m = env && (!strcmp(env, "in-process") || !strcmp(env, "inprocess"))
			    ? FL_MODE_IN_PROCESS
			    : FL_MODE_DAEMON;
		atomic_store(&mode, m);
	}
	return (enum fl_mode)m;
}

int fl__fdref_get(int fd, struct fl__fdref *ref)
{
	/* A socket or a pipe of mode 0: what a fence or timeline fd of ours can be. */
	int r = fl__fd_identity(fd, &ref->dev, &ref->ino, &ref->pipe);

	ref->fd = fd;
	return r;
}

/* Ask this process's core about the fd, then the daemon. */
#define ON_FD(ref, op, ...)                                                            \
	({                                                                             \
		int r_ = fl__fd_local_ops.op((ref), __VA_ARGS__);                      \
		r_ == FL__FD_NOT_MINE ? fl__fd_daemon_ops.op((ref), __VA_ARGS__) : r_; \
	})

FL_EXPORT int fl_timeline_fd_create(const char *name, unsigned int flags, int *ret_fd)
{
	return fl_timeline_fd_create_ctx(NULL, name, flags, ret_fd);
}

FL_EXPORT int fl_timeline_fd_inc(int timeline_fd, uint64_t count)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(timeline_fd < 0, -EBADF);
	r = fl__fdref_get(timeline_fd, &ref);
	return r < 0 ? r : ON_FD(&ref, timeline_inc, count, 0);
}

FL_EXPORT int fl_timeline_fd_inc_at(int timeline_fd, uint64_t count, uint64_t timestamp_ns)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(!timestamp_ns, -EINVAL);
	fl_return_if(timeline_fd < 0, -EBADF);
	r = fl__fdref_get(timeline_fd, &ref);
	return r < 0 ? r : ON_FD(&ref, timeline_inc, count, timestamp_ns);
}

FL_EXPORT int fl_timeline_fd_fail_pending(int timeline_fd, int status)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(status >= 0 || status < -4095, -EINVAL);
	fl_return_if(timeline_fd < 0, -EBADF);
	r = fl__fdref_get(timeline_fd, &ref);
	return r < 0 ? r : ON_FD(&ref, timeline_fail, status);
}

FL_EXPORT int fl_timeline_fd_get_value(int timeline_fd, uint64_t *ret_value)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(!ret_value, -EINVAL);
	fl_return_if(timeline_fd < 0, -EBADF);
	r = fl__fdref_get(timeline_fd, &ref);
	return r < 0 ? r : ON_FD(&ref, timeline_get_value, ret_value);
}

FL_EXPORT int fl_timeline_fd_close(int fd)
{
	struct fl__fdref ref;
	struct fl_timeline *local = NULL;
	bool maybe_daemons = fl__fdref_get(fd, &ref) == 0;

	fl_return_if(fd < 0, -EBADF);
	/*
	 * Whatever the process's mode, a context may have made this fd in
	 * either place: only this process's core knows its own, for free.
	 */
	if (maybe_daemons && fl__timeline_from_key(ref.dev, ref.ino, &local) == 0) {
		fl_timeline_unref(local);
		maybe_daemons = false;
	}
	/*
	 * Fences of ours still on their one-way way to the daemon were made
	 * before this close: the daemon must read them before it can see the
	 * hang-up, or it finds no timeline to make them on (they would read
	 * -ENOENT as no fence at all: info -ENOTTY, merges refused). Costs a
	 * round trip only when creations are outstanding.
	 */
	if (maybe_daemons)
		fl__client_flush_all();
	if (close(fd) < 0)
		return -errno;
	/*
	 * Closing the last copy hung the daemon's end up in the kernel, just
	 * now: a PING it answers only after handling such hang-ups returns
	 * once the timeline has died. A daemon that is gone failed them all;
	 * without a connection we have made no timeline to wait for.
	 */
	if (maybe_daemons)
		fl__client_sync_closes();
	return 0;
}

FL_EXPORT int fl_fence_fd_create(int timeline_fd, uint64_t value, const char *name, int *ret_fd)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(!ret_fd, -EINVAL);
	fl_return_if(timeline_fd < 0, -EBADF);
	r = fl__fdref_get(timeline_fd, &ref);
	return r < 0 ? r : ON_FD(&ref, fence_create, value, name ? name : "", ret_fd);
}

FL_EXPORT int fl_fence_fd_merge(int fd1, int fd2, const char *name, unsigned int flags, int *ret_fd)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(!ret_fd || (flags & ~(unsigned int)(FL_MERGE_WAIT_ALL | FL_MERGE_MAINLINE)),
		     -EINVAL);
	fl_return_if(fd1 < 0, -EBADF);
	r = fl__fdref_get(fd1, &ref);
	return r < 0 ? r : ON_FD(&ref, fence_merge, fd2, name ? name : "", flags, ret_fd);
}

FL_EXPORT int fl_fence_fd_get_info(int fd, struct fl_fence_info *ret_info,
				   struct fl_sync_pt_info *points, uint32_t max_points)
{
	return fl_fence_fd_get_info_flags(fd, 0, ret_info, points, max_points);
}

FL_EXPORT int fl_fence_fd_get_info_flags(int fd, unsigned int flags, struct fl_fence_info *ret_info,
					 struct fl_sync_pt_info *points, uint32_t max_points)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(!points && max_points, -EINVAL);
	fl_return_if(flags & ~(unsigned int)FL_INFO_NO_TIMESTAMPS, -EINVAL);
	fl_return_if(fd < 0, -EBADF);
	r = fl__fdref_get(fd, &ref);
	if (r < 0)
		return r;
	r = ON_FD(&ref, fence_get_info, flags, ret_info, points, max_points);
	/*
	 * Here, not in the backends: the same 0 whichever answered, also
	 * where one had the time for free (the core, the daemon's reply).
	 */
	if (r >= 0 && (flags & FL_INFO_NO_TIMESTAMPS)) {
		if (ret_info)
			ret_info->timestamp_ns = 0;
		for (int i = 0; i < r; i++)
			points[i].timestamp_ns = 0;
	}
	return r;
}

FL_EXPORT int fl_fence_fd_import(int sync_file_fd, const char *name, int *ret_fd)
{
	return fl_fence_fd_import_ctx(NULL, sync_file_fd, name, ret_fd);
}

FL_EXPORT int fl_fence_fd_set_deadline(int fd, uint64_t deadline_ns)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(fd < 0, -EBADF);
	r = fl__fdref_get(fd, &ref);
	return r < 0 ? r : ON_FD(&ref, fence_set_deadline, deadline_ns);
}

FL_EXPORT int fl_fence_fd_get_deadline(int fd, uint64_t *ret_ns)
{
	struct fl__fdref ref;
	int r;

	fl_return_if(!ret_ns, -EINVAL);
	fl_return_if(fd < 0, -EBADF);
	r = fl__fdref_get(fd, &ref);
	return r < 0 ? r : ON_FD(&ref, fence_get_deadline, ret_ns);
}

FL_EXPORT int fl_daemon_connect(void)
{
	return fl__client_daemon_pid();
}

FL_EXPORT void fl_daemon_flush(void)
{
	fl__client_flush_all();
}

FL_EXPORT void fl_daemon_disconnect(void)
{
	fl__client_flush_all();
	fl__client_disconnect();
}

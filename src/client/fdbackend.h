/* SPDX-License-Identifier: MIT */
/*
 * The fd API's two backends (private to src/client): the calls of
 * <fenceline/shared.h> look at an fd once (fl__fdref_get()), then hand it to
 * the in-process backend (this process's core made it) and, if that one
 * says it is not its own, to the daemon backend (fencelined answers for
 * everything else, and says -ENOTTY for what it does not know). Calls that
 * make a new object without an fd go to the backend of a context's mode
 * (fl__context_maker(); the default context's is fl_mode_get()).
 */
#ifndef FL_CLIENT_FDBACKEND_H
#define FL_CLIENT_FDBACKEND_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <fenceline/fence.h>

/* An fd as the fd API saw it, once per call. */
struct fl__fdref {
	int fd; /* borrowed */
	dev_t dev;
	ino_t ino;
	bool pipe; /* a pipe of mode 0 (else a socket) */
};

/*
 * fl__fdref_get() - read what @fd is, once
 * Return: 0 and *@ref; -EBADF (not open) or -ENOTTY (neither a socket nor
 * a pipe of mode 0: no fenceline fd of any kind).
 */
int fl__fdref_get(int fd, struct fl__fdref *ref);

/*
 * An fd-taking op's "not one of mine: ask the next backend": neither an
 * errno nor a result (fence_get_info() returns a count of points, and 1
 * used to read as this, sending a one-point in-process fence's info to
 * the daemon, which said -ENOTTY).
 */
#define FL__FD_NOT_MINE INT_MIN

/*
 * What a backend does. The ops taking a struct fl__fdref return 0 or a
 * negative errno as the public call documents, or FL__FD_NOT_MINE (only
 * the in-process backend, which is asked first). Ownership of fds and
 * out-parameters as in <fenceline/shared.h>; arguments are checked there
 * before a backend is called.
 */
struct fl__fd_backend_ops {
	const char *name;
	int (*timeline_create)(const char *name, unsigned int flags, int *ret_fd);
	/* @stamp_ns: the time the points get (fl_timeline_fd_inc_at()), 0 for now. */
	int (*timeline_inc)(const struct fl__fdref *tl, uint64_t count, uint64_t stamp_ns);
	int (*timeline_get_value)(const struct fl__fdref *tl, uint64_t *ret_value);
	/* Return: how many points failed, or a negative errno. */
	int (*timeline_fail)(const struct fl__fdref *tl, int status);
	int (*fence_create)(const struct fl__fdref *tl, uint64_t value, const char *name,
			    int *ret_fd);
	/* @b: fd2, which may be anything (-ENOENT unless a fence of the same backend). */
	int (*fence_merge)(const struct fl__fdref *a, int b, const char *name, unsigned int flags,
			   int *ret_fd);
	/*
	 * @flags: FL_INFO_NO_TIMESTAMPS lets the backend skip what only finds
	 * timestamps; the caller zeroes them (fdapi.c), so a backend that has
	 * them for free may fill them anyway.
	 */
	int (*fence_get_info)(const struct fl__fdref *f, unsigned int flags,
			      struct fl_fence_info *ret_info, struct fl_sync_pt_info *points,
			      uint32_t max_points);
	int (*fence_import)(int sync_file_fd, const char *name, int *ret_fd);
	int (*fence_set_deadline)(const struct fl__fdref *f, uint64_t deadline_ns);
	int (*fence_get_deadline)(const struct fl__fdref *f, uint64_t *ret_ns);
};

/* This process's core (fd-local.c). */
extern const struct fl__fd_backend_ops fl__fd_local_ops;

/*
 * fl__fd_page_info() - fence_get_info() of a daemon's pipe fence fd from
 * its status page's info record, with no round trip (fd-pageinfo.c);
 * @flags as fence_get_info()'s
 * Return: the number of points written, as fence_get_info(); or
 * FL__FD_NOT_MINE when the page cannot answer exactly (ask the daemon).
 */
int fl__fd_page_info(const struct fl__fdref *ref, unsigned int flags,
		     struct fl_fence_info *ret_info, struct fl_sync_pt_info *points,
		     uint32_t max_points);

/* fencelined (fd-daemon.c). */
extern const struct fl__fd_backend_ops fl__fd_daemon_ops;

struct fl_context;

/* The backend that makes @ctx's new objects (NULL: the default context's). */
const struct fl__fd_backend_ops *fl__context_maker(const struct fl_context *ctx);

#endif /* FL_CLIENT_FDBACKEND_H */

/* SPDX-License-Identifier: MIT */
/**
 * DOC: contexts - where a library's timelines live, chosen per library
 *
 * The fd API of <fenceline/shared.h> makes new timelines and imported
 * fences in the process's mode (fl_mode_set(), FENCELINE_MODE): one choice
 * for the whole process. A library inside a program that chose otherwise
 * (a compositor's plug-in that wants its fences in-process while the
 * program shares its own through the daemon) makes a context of its own
 * and creates through it; the process-global calls keep working on the
 * default context, fl_context_default().
 *
 * Only the calls that make an object from nothing take a context: an
 * object made on a context carries it. A timeline fd made on an in-process
 * context is this process's core's, and every fence made from it
 * (fl_fence_fd_create()), every merge of those and every call on their fds
 * is served in-process, whatever the process's mode; the same holds for a
 * daemon context's fds and the daemon. Fences of both kinds can be waited
 * on together; merging an in-process fence with a daemon fence fails with
 * -ENOENT, as it does today.
 *
 * Daemon contexts use the process's connection to fencelined (the one at
 * FENCELINE_SOCKET): a connection is per process, not per context, so that
 * every fd the daemon handed this process is known on the connection that
 * asks about it. Requests on it are pipelined: a thread waiting for a slow
 * answer does not hold up another thread's request.
 *
 * A context is a small object that holds no fd and no daemon resource: its
 * fds are the caller's from the moment they are returned, and outlive the
 * context.
 */
#ifndef FENCELINE_CONTEXT_H
#define FENCELINE_CONTEXT_H

#include <stdint.h>

#include <fenceline/export.h>
#include <fenceline/shared.h>

FL_BEGIN_DECLS

/** struct fl_context - where new fd-API objects live (opaque) */
struct fl_context;

/**
 * struct fl_context_options - what fl_context_new() makes
 * @size: sizeof(struct fl_context_options), so that fields can be added
 *	after @mode without breaking callers built against this header
 * @mode: %FL_MODE_DAEMON or %FL_MODE_IN_PROCESS
 * @flags: 0 (reserved)
 */
struct fl_context_options {
	uint32_t size;
	enum fl_mode mode;
	uint32_t flags;
};

/**
 * fl_context_new() - make a context of its own for a library
 * @options: the context's mode (read, not kept)
 * @ret_ctx: on success, the new context, the caller's to fl_context_destroy()
 *
 * An in-process context never starts or talks to a daemon. A daemon
 * context connects (starting the daemon) on the first call that needs to.
 * Context: any thread.
 * Return: 0; -EINVAL for a NULL argument, a @size smaller than the fields
 * up to @flags, an unknown mode or a flag; -ENOMEM.
 */
FL_EXPORT int fl_context_new(const struct fl_context_options *options, struct fl_context **ret_ctx);

/**
 * fl_context_destroy() - free a context made by fl_context_new()
 * @ctx: the context (consumed); NULL and fl_context_default() are ignored
 *
 * The timeline and fence fds made through @ctx stay valid: they are the
 * caller's, and each keeps being served where it was made. No other
 * thread may use @ctx during or after the call.
 */
FL_EXPORT void fl_context_destroy(struct fl_context *ctx);

/**
 * fl_context_default() - the process's context
 *
 * Its mode is the process's (fl_mode_get(): fl_mode_set() or
 * FENCELINE_MODE); the calls of <fenceline/shared.h> that take no context
 * use it. It lives as long as the process and is never freed.
 * Return: the default context, never NULL.
 */
FL_EXPORT struct fl_context *fl_context_default(void);

/**
 * fl_context_get_mode() - the mode of the objects @ctx makes
 * @ctx: a context, or NULL for the default one
 * Return: the context's mode (for the default context, fl_mode_get()).
 */
FL_EXPORT enum fl_mode fl_context_get_mode(const struct fl_context *ctx);

/**
 * fl_timeline_fd_create_ctx() - fl_timeline_fd_create() on a context
 * @ctx: where the timeline lives, or NULL for the default context
 * @name: the timeline's name, truncated to 31 bytes; NULL gives "sw_sync"
 * @flags: 0 or %FL_SW_SYNC_32BIT (<fenceline/sw_sync.h>)
 * @ret_fd: on success, a new O_CLOEXEC fd owned by the caller
 *
 * The fences made from the fd (fl_fence_fd_create()) live where the
 * timeline does.
 * Return: as fl_timeline_fd_create(): 0; -EINVAL (bad flags or pointer);
 * -EMFILE, -ENFILE, -ENOMEM; on a daemon context the daemon errors of
 * <fenceline/fenceline.h> (-EACCES, -ECONNREFUSED...).
 */
FL_EXPORT int fl_timeline_fd_create_ctx(struct fl_context *ctx, const char *name,
					unsigned int flags, int *ret_fd);

/**
 * fl_fence_fd_import_ctx() - fl_fence_fd_import() on a context
 * @ctx: where the fence lives, or NULL for the default context
 * @sync_file_fd: a kernel sync_file fd (borrowed)
 * @name: the fence's name; NULL gives ""
 * @ret_fd: on success, a new O_CLOEXEC fence fd owned by the caller
 * Return: as fl_fence_fd_import(): 0; -EBADF (@sync_file_fd not open);
 * -EINVAL (not a sync_file, or a NULL @ret_fd); -EMFILE, -ENFILE, -ENOMEM;
 * in-process, -ENOSPC (see fl_sync_file_import()); on a daemon context the
 * daemon errors (-ECONNRESET if the daemon has died).
 */
FL_EXPORT int fl_fence_fd_import_ctx(struct fl_context *ctx, int sync_file_fd, const char *name,
				     int *ret_fd);

FL_END_DECLS

#endif /* FENCELINE_CONTEXT_H */

/* SPDX-License-Identifier: MIT */
/*
 * Contexts (<fenceline/context.h>): the mode a library's new objects get,
 * chosen per library instead of per process. A context only picks the
 * backend that makes an object from nothing (fdbackend.h); every later
 * call finds the backend by the fd, so an object carries its context
 * without the context being stored anywhere, and a context holds nothing
 * that has to be given back but its own memory.
 */
#include <stdlib.h>

#include <fenceline/context.h>
#include <fenceline/sw_sync.h>

#include "fdbackend.h"
#include "util.h"

struct fl_context {
	/* -1 for the default context: the process's mode, read at each use. */
	int mode;
};

static struct fl_context default_context = { .mode = -1 };

FL_EXPORT int fl_context_new(const struct fl_context_options *options, struct fl_context **ret_ctx)
{
	struct fl_context *ctx;

	fl_return_if(!options || !ret_ctx, -EINVAL);
	fl_return_if(options->size < sizeof(struct fl_context_options), -EINVAL);
	fl_return_if(options->mode != FL_MODE_DAEMON && options->mode != FL_MODE_IN_PROCESS,
		     -EINVAL);
	fl_return_if(options->flags, -EINVAL);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->mode = (int)options->mode;
	*ret_ctx = ctx;
	return 0;
}

FL_EXPORT void fl_context_destroy(struct fl_context *ctx)
{
	if (ctx && ctx != &default_context)
		free(ctx);
}

FL_EXPORT struct fl_context *fl_context_default(void)
{
	return &default_context;
}

FL_EXPORT enum fl_mode fl_context_get_mode(const struct fl_context *ctx)
{
	if (!ctx || ctx->mode < 0)
		return fl_mode_get();
	return (enum fl_mode)ctx->mode;
}

const struct fl__fd_backend_ops *fl__context_maker(const struct fl_context *ctx)
{
	return fl_context_get_mode(ctx) == FL_MODE_IN_PROCESS ? &fl__fd_local_ops
							      : &fl__fd_daemon_ops;
}

FL_EXPORT int fl_timeline_fd_create_ctx(struct fl_context *ctx, const char *name,
					unsigned int flags, int *ret_fd)
{
	fl_return_if(!ret_fd || (flags & ~(unsigned int)FL_SW_SYNC_32BIT), -EINVAL);
	return fl__context_maker(ctx)->timeline_create(name, flags, ret_fd);
}

FL_EXPORT int fl_fence_fd_import_ctx(struct fl_context *ctx, int sync_file_fd, const char *name,
				     int *ret_fd)
{
	fl_return_if(!ret_fd, -EINVAL);
	fl_return_if(sync_file_fd < 0, -EBADF);
	return fl__context_maker(ctx)->fence_import(sync_file_fd, name, ret_fd);
}

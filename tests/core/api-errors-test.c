/* SPDX-License-Identifier: MIT */
/*
 * The error contract of the public API (include/fenceline/fenceline.h):
 * every public fl_* function called with bad arguments returns the
 * negative errno its header documents, leaves its ret_* outputs untouched
 * and does not crash; every function has a row of the codes it may return,
 * checked against its header's documentation and fenceline.h's error
 * table; and the daemon's errors, provoked with a daemon that is missing,
 * silent, broken or dead, are among them. One table, so a new function is
 * one more row.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/bufferqueue.h>
#include <fenceline/display.h>
#include <fenceline/fenceline.h>
#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "mock-driver.h"
#include "runner.h"

/* Objects and fds the rows use; outputs start as sentinels. */
struct fixture {
	struct fl_timeline *tl; /* sw_sync */
	struct fl_timeline *other_tl; /* sw_sync, holding only fx->other */
	struct mock_timeline *mock; /* not sw_sync */
	struct fl_fence *fence; /* pending */
	struct fl_fence *other; /* pending, on its own timeline */
	struct fl_fence *done; /* signalled */
	int fence_fd, timeline_fd;
	int closed_fd, file_fd, pipe_fd;

	struct fl_fence_cb cb, queued_cb;
	struct fl_fence_info info;
	struct fl_heap_info heap_info;
	struct fl_wait_report wait;
	char buf[64];

	/* outputs */
	struct fl_timeline *out_tl;
	struct fl_fence *out_fence;
	struct fl_heap *out_heap;
	struct fl_context *out_ctx;
	struct fl_heap_table *out_table;
	struct fl_display_event *out_event;
	struct fl_bufferqueue_consumer *out_consumer;
	struct fl_bufferqueue_producer *out_producer;
	struct fl_bufferqueue_config bq_config;
	struct fl_bufferqueue_acquired bq_acquired;
	struct fl_bufferqueue_dequeued bq_dequeued;
	struct fl_bufferqueue_request bq_request;
	int out_fd;
	uint64_t out_value;
	char *out_text;
	size_t out_len;
};

#define SENTINEL_PTR ((void *)0x5e17)
#define SENTINEL_INT 0x5e17

static void never_called(struct fl_fence *fence, struct fl_fence_cb *cb)
{
	fl__test_fail(__FILE__, __LINE__, "callback of a failed or removed add ran");
}

static const char *const table_devices[] = { "cpu" };
/* Longer than any socket address (108 bytes). */
static const char long_path[] = "/tmp/"
				"0123456789012345678901234567890123456789"
				"0123456789012345678901234567890123456789"
				"0123456789012345678901234567890123456789";

static int no_signal(struct fl_sync_pt *pt)
{
	return 0;
}

static const struct fl_timeline_ops no_name_ops = { .has_signaled = no_signal };
static const struct fl_timeline_ops no_check_ops = { .driver_name = "broken" };
static const struct fl_timeline_ops good_ops = { .driver_name = "good", .has_signaled = no_signal };

/*
 * X(name, expected, expression): the expression runs with `fx` in scope and
 * must evaluate to an integer; pointer and string results are turned into
 * 0 (the documented "nothing" answer) or 1 by the helpers below.
 */
#define IS_NULL(p)  ((p) == NULL ? 0 : 1)
#define IS_EMPTY(s) ((s) != NULL && (s)[0] == '\0' ? 0 : 1)

#define API_ERROR_CASES(X)                                                                         \
	/* timeline.h */                                                                           \
	X(timeline_ref_null, 0, IS_NULL(fl_timeline_ref(NULL)))                                    \
	X(timeline_unref_null, 0, IS_NULL(fl_timeline_unref(NULL)))                                \
	X(timeline_kill_null, 0, (fl_timeline_kill(NULL), 0))                                      \
	X(timeline_destroy_null, 0, (fl_timeline_destroy(NULL), 0))                                \
	X(timeline_signal_null, -EINVAL, fl_timeline_signal(NULL))                                 \
	X(timeline_fail_pending_null, -EINVAL, fl_timeline_fail_pending(NULL, -EIO))               \
	X(timeline_get_name_null, 0, IS_EMPTY(fl_timeline_get_name(NULL)))                         \
	X(timeline_get_driver_name_null, 0, IS_EMPTY(fl_timeline_get_driver_name(NULL)))           \
	X(timeline_get_id_null, 0, (long long)fl_timeline_get_id(NULL))                            \
	X(timeline_is_alive_null, -EINVAL, fl_timeline_is_alive(NULL))                             \
	X(timeline_get_pending_count_null, -EINVAL, fl_timeline_get_pending_count(NULL))           \
	X(timeline_get_value_str_null_tl, -EINVAL,                                                 \
	  fl_timeline_get_value_str(NULL, fx->buf, sizeof(fx->buf)))                               \
	X(timeline_get_value_str_null_buf, -EINVAL,                                                \
	  fl_timeline_get_value_str(fx->tl, NULL, sizeof(fx->buf)))                                \
	X(timeline_get_value_str_zero_size, -EINVAL,                                               \
	  fl_timeline_get_value_str(fx->tl, fx->buf, 0))                                           \
	X(timeline_export_fd_null_tl, -EINVAL, fl_timeline_export_fd(NULL, &fx->out_fd))           \
	X(timeline_export_fd_null_ret, -EINVAL, fl_timeline_export_fd(fx->tl, NULL))               \
	X(timeline_from_fd_minus_1, -EBADF, fl_timeline_from_fd(-1, &fx->out_tl))                  \
	X(timeline_from_fd_closed, -EBADF, fl_timeline_from_fd(fx->closed_fd, &fx->out_tl))        \
	X(timeline_from_fd_file, -ENOTTY, fl_timeline_from_fd(fx->file_fd, &fx->out_tl))           \
	X(timeline_from_fd_pipe, -ENOTTY, fl_timeline_from_fd(fx->pipe_fd, &fx->out_tl))           \
	X(timeline_from_fd_fence_fd, -ENOTTY, fl_timeline_from_fd(fx->fence_fd, &fx->out_tl))      \
	X(timeline_from_fd_null_ret, -EINVAL, fl_timeline_from_fd(fx->timeline_fd, NULL))          \
	/* fence.h */                                                                              \
	X(fence_ref_null, 0, IS_NULL(fl_fence_ref(NULL)))                                          \
	X(fence_unref_null, 0, IS_NULL(fl_fence_unref(NULL)))                                      \
	X(fence_merge_null_a, -EINVAL, fl_fence_merge(NULL, fx->fence, "m", 0, &fx->out_fence))    \
	X(fence_merge_null_b, -EINVAL, fl_fence_merge(fx->fence, NULL, "m", 0, &fx->out_fence))    \
	X(fence_merge_null_ret, -EINVAL, fl_fence_merge(fx->fence, fx->other, "m", 0, NULL))       \
	X(fence_merge_unknown_flag, -EINVAL,                                                       \
	  fl_fence_merge(fx->fence, fx->other, "m", 1u << 2, &fx->out_fence))                      \
	X(fence_merge_high_flag, -EINVAL,                                                          \
	  fl_fence_merge(fx->fence, fx->other, "m", 1u << 31, &fx->out_fence))                     \
	X(fence_set_deadline_null, -EINVAL, fl_fence_set_deadline(NULL, 1))                        \
	X(fence_get_deadline_null, -EINVAL, fl_fence_get_deadline(NULL, &fx->out_value))           \
	X(fence_get_deadline_null_ret, -EINVAL, fl_fence_get_deadline(fx->fence, NULL))            \
	X(fence_get_deadline_none_set, -ENOENT, fl_fence_get_deadline(fx->fence, &fx->out_value))  \
	X(fence_get_status_null, -EINVAL, fl_fence_get_status(NULL))                               \
	X(fence_wait_null, -EINVAL, fl_fence_wait(NULL, 0))                                        \
	X(fence_wait_null_forever, -EINVAL, fl_fence_wait(NULL, -1))                               \
	X(fence_add_callback_null_fence, -EINVAL,                                                  \
	  fl_fence_add_callback(NULL, &fx->cb, never_called))                                      \
	X(fence_add_callback_null_cb, -EINVAL,                                                     \
	  fl_fence_add_callback(fx->fence, NULL, never_called))                                    \
	X(fence_add_callback_null_func, -EINVAL, fl_fence_add_callback(fx->fence, &fx->cb, NULL))  \
	X(fence_add_callback_signaled, -ENOENT,                                                    \
	  fl_fence_add_callback(fx->done, &fx->cb, never_called))                                  \
	X(fence_remove_callback_null_fence, -EINVAL, fl_fence_remove_callback(NULL, &fx->cb))      \
	X(fence_remove_callback_null_cb, -EINVAL, fl_fence_remove_callback(fx->fence, NULL))       \
	X(fence_remove_callback_never_queued, 0, fl_fence_remove_callback(fx->fence, &fx->cb))     \
	X(fence_remove_callback_other_fence, -EINVAL,                                              \
	  fl_fence_remove_callback(fx->fence, &fx->queued_cb))                                     \
	X(fence_get_name_null, 0, IS_EMPTY(fl_fence_get_name(NULL)))                               \
	X(fence_get_num_points_null, -EINVAL, fl_fence_get_num_points(NULL))                       \
	X(fence_get_info_null, -EINVAL, fl_fence_get_info(NULL, &fx->info, NULL, 0))               \
	X(fence_get_info_null_points, -EINVAL, fl_fence_get_info(fx->fence, &fx->info, NULL, 4))   \
	X(fence_get_point_driver_data_null, -EINVAL,                                               \
	  fl_fence_get_point_driver_data(NULL, 0, fx->buf, sizeof(fx->buf)))                       \
	X(fence_get_point_driver_data_index_out_of_range, -EINVAL,                                 \
	  fl_fence_get_point_driver_data(fx->fence, 1, fx->buf, sizeof(fx->buf)))                  \
	X(fence_get_point_driver_data_huge_index, -EINVAL,                                         \
	  fl_fence_get_point_driver_data(fx->fence, UINT32_MAX, fx->buf, sizeof(fx->buf)))         \
	X(fence_get_point_driver_data_null_buf, -EINVAL,                                           \
	  fl_fence_get_point_driver_data(fx->fence, 0, NULL, 4))                                   \
	X(fence_get_point_driver_data_short_buf, -ENOMEM,                                          \
	  fl_fence_get_point_driver_data(fx->fence, 0, fx->buf, 1))                                \
	X(fence_export_fd_null_fence, -EINVAL, fl_fence_export_fd(NULL, &fx->out_fd))              \
	X(fence_export_fd_null_ret, -EINVAL, fl_fence_export_fd(fx->fence, NULL))                  \
	X(fence_get_fd_null, -EINVAL, fl_fence_get_fd(NULL))                                       \
	X(fence_from_fd_minus_1, -EBADF, fl_fence_from_fd(-1, &fx->out_fence))                     \
	X(fence_from_fd_closed, -EBADF, fl_fence_from_fd(fx->closed_fd, &fx->out_fence))           \
	X(fence_from_fd_file, -ENOTTY, fl_fence_from_fd(fx->file_fd, &fx->out_fence))              \
	X(fence_from_fd_pipe, -ENOTTY, fl_fence_from_fd(fx->pipe_fd, &fx->out_fence))              \
	X(fence_from_fd_timeline_fd, -ENOTTY, fl_fence_from_fd(fx->timeline_fd, &fx->out_fence))   \
	X(fence_from_fd_null_ret, -EINVAL, fl_fence_from_fd(fx->fence_fd, NULL))                   \
	X(fence_fd_get_status_minus_1, -EBADF, fl_fence_fd_get_status(-1))                         \
	X(fence_fd_get_status_closed, -EBADF, fl_fence_fd_get_status(fx->closed_fd))               \
	X(fence_fd_get_status_file, -ENOTTY, fl_fence_fd_get_status(fx->file_fd))                  \
	X(fence_fd_get_status_pipe, -ENOTTY, fl_fence_fd_get_status(fx->pipe_fd))                  \
	X(fence_fd_wait_minus_1, -EBADF, fl_fence_fd_wait(-1, 0))                                  \
	X(fence_fd_wait_closed, -EBADF, fl_fence_fd_wait(fx->closed_fd, 0))                        \
	X(fence_fd_wait_file, -ENOTTY, fl_fence_fd_wait(fx->file_fd, 0))                           \
	X(fence_fd_wait_pipe, -ENOTTY, fl_fence_fd_wait(fx->pipe_fd, 0))                           \
	X(fence_fd_wait_closed_forever, -EBADF, fl_fence_fd_wait(fx->closed_fd, -1))               \
	X(fence_fd_wait_flags_unknown, -EINVAL, fl_fence_fd_wait_flags(fx->fence_fd, 0, 2))        \
	X(fence_fd_wait_flags_file, -ENOTTY,                                                       \
	  fl_fence_fd_wait_flags(fx->file_fd, -1, FL_WAIT_DEADLOCK_ERROR))                         \
	X(fence_fd_wait_begin_null, -EINVAL, fl_fence_fd_wait_begin(fx->fence_fd, -1, 0, NULL))    \
	X(fence_fd_wait_begin_unknown_flag, -EINVAL,                                               \
	  fl_fence_fd_wait_begin(fx->fence_fd, -1, 2, &fx->wait))                                  \
	X(fence_fd_wait_begin_minus_1_reports_nothing, 0,                                          \
	  fl_fence_fd_wait_begin(-1, -1, 0, &fx->wait) || fx->wait.token ||                        \
		  fx->wait.notify_fd != -1)                                                        \
	X(fence_fd_wait_notified_null, -EINVAL, fl_fence_fd_wait_notified(NULL))                   \
	X(fence_fd_wait_end_null, 0, (fl_fence_fd_wait_end(NULL, 1), 0))                           \
	/* shared.h */                                                                             \
	X(mode_set_unknown, -EINVAL, fl_mode_set((enum fl_mode)7))                                 \
	X(mode_get_is_a_mode, 1,                                                                   \
	  fl_mode_get() == FL_MODE_DAEMON || fl_mode_get() == FL_MODE_IN_PROCESS)                  \
	X(timeline_fd_create_unknown_flag, -EINVAL,                                                \
	  fl_timeline_fd_create("x", 1u << 1, &fx->out_fd))                                        \
	X(timeline_fd_create_null_ret, -EINVAL, fl_timeline_fd_create("x", 0, NULL))               \
	X(timeline_fd_inc_minus_1, -EBADF, fl_timeline_fd_inc(-1, 1))                              \
	X(timeline_fd_inc_closed, -EBADF, fl_timeline_fd_inc(fx->closed_fd, 1))                    \
	X(timeline_fd_inc_file, -ENOTTY, fl_timeline_fd_inc(fx->file_fd, 1))                       \
	X(timeline_fd_inc_pipe, -ENOTTY, fl_timeline_fd_inc(fx->pipe_fd, 1))                       \
	X(timeline_fd_inc_fence_fd, -ENOTTY, fl_timeline_fd_inc(fx->fence_fd, 1))                  \
	X(timeline_fd_fail_pending_minus_1, -EBADF, fl_timeline_fd_fail_pending(-1, -EIO))         \
	X(timeline_fd_fail_pending_file, -ENOTTY, fl_timeline_fd_fail_pending(fx->file_fd, -EIO))  \
	X(timeline_fd_fail_pending_fence_fd, -ENOTTY,                                              \
	  fl_timeline_fd_fail_pending(fx->fence_fd, -EIO))                                         \
	X(timeline_fd_fail_pending_positive, -EINVAL,                                              \
	  fl_timeline_fd_fail_pending(fx->fence_fd, 0))                                            \
	X(timeline_fd_inc_at_minus_1, -EBADF, fl_timeline_fd_inc_at(-1, 1, 1))                     \
	X(timeline_fd_inc_at_no_time, -EINVAL, fl_timeline_fd_inc_at(fx->fence_fd, 1, 0))          \
	X(timeline_fd_inc_at_file, -ENOTTY, fl_timeline_fd_inc_at(fx->file_fd, 1, 1))              \
	X(timeline_fd_get_value_null_ret, -EINVAL,                                                 \
	  fl_timeline_fd_get_value(fx->timeline_fd, NULL))                                         \
	X(timeline_fd_get_value_minus_1, -EBADF, fl_timeline_fd_get_value(-1, &fx->out_value))     \
	X(timeline_fd_get_value_file, -ENOTTY,                                                     \
	  fl_timeline_fd_get_value(fx->file_fd, &fx->out_value))                                   \
	X(timeline_fd_get_value_fence_fd, -ENOTTY,                                                 \
	  fl_timeline_fd_get_value(fx->fence_fd, &fx->out_value))                                  \
	X(fence_fd_create_minus_1, -EBADF, fl_fence_fd_create(-1, 1, "f", &fx->out_fd))            \
	X(fence_fd_create_closed, -EBADF, fl_fence_fd_create(fx->closed_fd, 1, "f", &fx->out_fd))  \
	X(fence_fd_create_file, -ENOTTY, fl_fence_fd_create(fx->file_fd, 1, "f", &fx->out_fd))     \
	X(fence_fd_create_fence_fd, -ENOTTY,                                                       \
	  fl_fence_fd_create(fx->fence_fd, 1, "f", &fx->out_fd))                                   \
	X(fence_fd_create_null_ret, -EINVAL, fl_fence_fd_create(fx->timeline_fd, 1, "f", NULL))    \
	X(fence_fd_merge_minus_1, -EBADF,                                                          \
	  fl_fence_fd_merge(-1, fx->fence_fd, "m", 0, &fx->out_fd))                                \
	X(fence_fd_merge_file, -ENOTTY,                                                            \
	  fl_fence_fd_merge(fx->file_fd, fx->fence_fd, "m", 0, &fx->out_fd))                       \
	X(fence_fd_merge_timeline_fd, -ENOTTY,                                                     \
	  fl_fence_fd_merge(fx->timeline_fd, fx->fence_fd, "m", 0, &fx->out_fd))                   \
	X(fence_fd_merge_fd2_file, -ENOENT,                                                        \
	  fl_fence_fd_merge(fx->fence_fd, fx->file_fd, "m", 0, &fx->out_fd))                       \
	X(fence_fd_merge_fd2_minus_1, -ENOENT,                                                     \
	  fl_fence_fd_merge(fx->fence_fd, -1, "m", 0, &fx->out_fd))                                \
	X(fence_fd_merge_unknown_flag, -EINVAL,                                                    \
	  fl_fence_fd_merge(fx->fence_fd, fx->fence_fd, "m", 1u << 2, &fx->out_fd))                \
	X(fence_fd_merge_null_ret, -EINVAL,                                                        \
	  fl_fence_fd_merge(fx->fence_fd, fx->fence_fd, "m", 0, NULL))                             \
	X(fence_fd_get_info_minus_1, -EBADF, fl_fence_fd_get_info(-1, &fx->info, NULL, 0))         \
	X(fence_fd_get_info_file, -ENOTTY, fl_fence_fd_get_info(fx->file_fd, &fx->info, NULL, 0))  \
	X(fence_fd_get_info_timeline_fd, -ENOTTY,                                                  \
	  fl_fence_fd_get_info(fx->timeline_fd, &fx->info, NULL, 0))                               \
	X(fence_fd_get_info_null_points, -EINVAL,                                                  \
	  fl_fence_fd_get_info(fx->fence_fd, &fx->info, NULL, 4))                                  \
	X(fence_fd_get_info_flags_unknown, -EINVAL,                                                \
	  fl_fence_fd_get_info_flags(fx->fence_fd, 1u << 1, &fx->info, NULL, 0))                   \
	X(fence_fd_get_info_flags_minus_1, -EBADF,                                                 \
	  fl_fence_fd_get_info_flags(-1, FL_INFO_NO_TIMESTAMPS, &fx->info, NULL, 0))               \
	X(fence_fd_get_info_flags_file, -ENOTTY,                                                   \
	  fl_fence_fd_get_info_flags(fx->file_fd, FL_INFO_NO_TIMESTAMPS, &fx->info, NULL, 0))      \
	X(fence_fd_get_info_flags_null_points, -EINVAL,                                            \
	  fl_fence_fd_get_info_flags(fx->fence_fd, FL_INFO_NO_TIMESTAMPS, &fx->info, NULL, 4))     \
	X(timeline_fd_close_minus_1, -EBADF, fl_timeline_fd_close(-1))                             \
	X(timeline_fd_close_closed, -EBADF, fl_timeline_fd_close(fx->closed_fd))                   \
	X(fence_fd_import_minus_1, -EBADF, fl_fence_fd_import(-1, "x", &fx->out_fd))               \
	X(fence_fd_import_file, -EINVAL, fl_fence_fd_import(fx->file_fd, "x", &fx->out_fd))        \
	X(fence_fd_import_fence_fd, -EINVAL, fl_fence_fd_import(fx->fence_fd, "x", &fx->out_fd))   \
	X(fence_fd_import_null_ret, -EINVAL, fl_fence_fd_import(fx->pipe_fd, "x", NULL))           \
	/* context.h */                                                                            \
	X(context_new_null_options, -EINVAL, fl_context_new(NULL, &fx->out_ctx))                   \
	X(context_new_null_ret, -EINVAL,                                                           \
	  fl_context_new(&(struct fl_context_options){ sizeof(struct fl_context_options),          \
						       FL_MODE_IN_PROCESS, 0 },                    \
			 NULL))                                                                    \
	X(context_new_short_size, -EINVAL,                                                         \
	  fl_context_new(&(struct fl_context_options){ 4, FL_MODE_IN_PROCESS, 0 }, &fx->out_ctx))  \
	X(context_new_unknown_mode, -EINVAL,                                                       \
	  fl_context_new(&(struct fl_context_options){ sizeof(struct fl_context_options),          \
						       (enum fl_mode)7, 0 },                       \
			 &fx->out_ctx))                                                            \
	X(context_new_unknown_flag, -EINVAL,                                                       \
	  fl_context_new(&(struct fl_context_options){ sizeof(struct fl_context_options),          \
						       FL_MODE_DAEMON, 1 },                        \
			 &fx->out_ctx))                                                            \
	X(context_destroy_null, 0, (fl_context_destroy(NULL), 0))                                  \
	X(context_destroy_default, 1,                                                              \
	  (fl_context_destroy(fl_context_default()), fl_context_default() != NULL))                \
	X(context_default_is_the_default, 1,                                                       \
	  fl_context_get_mode(fl_context_default()) == fl_mode_get())                              \
	X(context_get_mode_null_is_default, 1, fl_context_get_mode(NULL) == fl_mode_get())         \
	X(timeline_fd_create_ctx_null_ret, -EINVAL, fl_timeline_fd_create_ctx(NULL, "x", 0, NULL)) \
	X(timeline_fd_create_ctx_unknown_flag, -EINVAL,                                            \
	  fl_timeline_fd_create_ctx(NULL, "x", 1u << 1, &fx->out_fd))                              \
	X(fence_fd_import_ctx_minus_1, -EBADF, fl_fence_fd_import_ctx(NULL, -1, "x", &fx->out_fd)) \
	X(fence_fd_import_ctx_file, -EINVAL,                                                       \
	  fl_fence_fd_import_ctx(NULL, fx->file_fd, "x", &fx->out_fd))                             \
	X(fence_fd_import_ctx_null_ret, -EINVAL,                                                   \
	  fl_fence_fd_import_ctx(NULL, fx->pipe_fd, "x", NULL))                                    \
	X(fence_fd_set_deadline_minus_1, -EBADF, fl_fence_fd_set_deadline(-1, 1))                  \
	X(fence_fd_set_deadline_file, -ENOTTY, fl_fence_fd_set_deadline(fx->file_fd, 1))           \
	X(fence_fd_set_deadline_timeline_fd, -ENOTTY,                                              \
	  fl_fence_fd_set_deadline(fx->timeline_fd, 1))                                            \
	X(fence_fd_get_deadline_minus_1, -EBADF, fl_fence_fd_get_deadline(-1, &fx->out_value))     \
	X(fence_fd_get_deadline_file, -ENOTTY,                                                     \
	  fl_fence_fd_get_deadline(fx->file_fd, &fx->out_value))                                   \
	X(fence_fd_get_deadline_null_ret, -EINVAL, fl_fence_fd_get_deadline(fx->fence_fd, NULL))   \
	X(fence_fd_get_deadline_none_set, -ENOENT,                                                 \
	  fl_fence_fd_get_deadline(fx->fence_fd, &fx->out_value))                                  \
	X(daemon_connect_answers, 1, fl_daemon_connect() > 0)                                      \
	X(daemon_flush_returns, 0, (fl_daemon_flush(), 0))                                         \
	X(daemon_disconnect_returns, 0, (fl_daemon_disconnect(), 0))                               \
	/* display.h: every bad argument is refused before the service is asked */                 \
	/* bufferqueue.h */                                                                        \
	X(bufferqueue_consumer_create_null, -EINVAL,                                               \
	  fl_bufferqueue_consumer_create(NULL, &fx->out_consumer))                                 \
	X(bufferqueue_consumer_create_no_slots, -EINVAL,                                           \
	  fl_bufferqueue_consumer_create(&fx->bq_config, &fx->out_consumer))                       \
	X(bufferqueue_consumer_destroy_null, 0, (fl_bufferqueue_consumer_destroy(NULL), 0))        \
	X(bufferqueue_consumer_get_fd_null, -EINVAL, fl_bufferqueue_consumer_get_fd(NULL))         \
	X(bufferqueue_consumer_dispatch_null, -EINVAL,                                             \
	  fl_bufferqueue_consumer_dispatch(NULL, NULL))                                            \
	X(bufferqueue_consumer_wait_null, -EINVAL, fl_bufferqueue_consumer_wait(NULL, 0))          \
	X(bufferqueue_consumer_acquire_null, -EINVAL,                                              \
	  fl_bufferqueue_consumer_acquire(NULL, 0, &fx->bq_acquired))                              \
	X(bufferqueue_consumer_release_null, -EINVAL,                                              \
	  fl_bufferqueue_consumer_release(NULL, 0, -1))                                            \
	X(bufferqueue_consumer_connect_fd_null, -EINVAL,                                           \
	  fl_bufferqueue_consumer_connect_fd(NULL, &fx->out_fd))                                   \
	X(bufferqueue_producer_connect_null, -EINVAL,                                              \
	  fl_bufferqueue_producer_connect(NULL, &fx->out_producer))                                \
	X(bufferqueue_producer_connect_long, -ENAMETOOLONG,                                        \
	  fl_bufferqueue_producer_connect(long_path, &fx->out_producer))                           \
	X(bufferqueue_producer_connect_fd_closed, -EBADF,                                          \
	  fl_bufferqueue_producer_connect_fd(-1, &fx->out_producer))                               \
	X(bufferqueue_producer_connect_fd_file, -EINVAL,                                           \
	  fl_bufferqueue_producer_connect_fd(fx->file_fd, &fx->out_producer))                      \
	X(bufferqueue_producer_destroy_null, 0, (fl_bufferqueue_producer_destroy(NULL), 0))        \
	X(bufferqueue_producer_get_fd_null, -EINVAL, fl_bufferqueue_producer_get_fd(NULL))         \
	X(bufferqueue_producer_dispatch_null, -EINVAL, fl_bufferqueue_producer_dispatch(NULL))     \
	X(bufferqueue_producer_get_num_slots_null, -EINVAL,                                        \
	  fl_bufferqueue_producer_get_num_slots(NULL, NULL))                                       \
	X(bufferqueue_producer_dequeue_null, -EINVAL,                                              \
	  fl_bufferqueue_producer_dequeue(NULL, &fx->bq_request, 0, &fx->bq_dequeued))             \
	X(bufferqueue_producer_queue_null, -EINVAL,                                                \
	  fl_bufferqueue_producer_queue(NULL, 0, -1, NULL, &fx->out_value))                        \
	X(bufferqueue_producer_cancel_null, -EINVAL, fl_bufferqueue_producer_cancel(NULL, 0, -1))  \
	X(display_disconnect_returns, 0, (fl_display_disconnect(), 0))                             \
	X(display_socket_path_null, -EINVAL, fl_display_socket_path(NULL, 10))                     \
	X(display_socket_path_short, -ENAMETOOLONG, fl_display_socket_path(fx->buf, 4))            \
	X(display_devices_null, -EINVAL, fl_display_devices(NULL))                                 \
	X(display_device_open_null_ret, -EINVAL, fl_display_device_open(0, NULL))                  \
	X(display_interface_open_null, -EINVAL, fl_display_interface_open(NULL, 0, NULL))          \
	X(display_engine_open_null, -EINVAL, fl_display_engine_open(NULL, 0, NULL))                \
	X(display_close_null, 0, (fl_display_close(NULL), 0))                                      \
	X(display_get_fd_null, -EINVAL, fl_display_get_fd(NULL))                                   \
	X(display_device_get_data_null, -EINVAL, fl_display_device_get_data(NULL, NULL, NULL))     \
	X(display_interface_get_data_null, -EINVAL,                                                \
	  fl_display_interface_get_data(NULL, NULL, NULL))                                         \
	X(display_engine_get_data_null, -EINVAL, fl_display_engine_get_data(NULL, NULL, NULL))     \
	X(display_attach_null, -EINVAL, fl_display_attach(NULL, 0, 0, NULL))                       \
	X(display_detach_null, -EINVAL, fl_display_detach(NULL, 0, 0, NULL))                       \
	X(display_blank_null, -EINVAL, fl_display_blank(NULL, 0, NULL))                            \
	X(display_set_mode_null, -EINVAL, fl_display_set_mode(NULL, NULL, NULL))                   \
	X(display_set_event_null, -EINVAL, fl_display_set_event(NULL, 0, 1, NULL))                 \
	X(display_read_event_null, -EINVAL, fl_display_read_event(NULL, NULL))                     \
	X(display_read_event_fd_null, -EINVAL, fl_display_read_event_fd(fx->closed_fd, NULL))      \
	X(display_read_event_fd_closed, -EBADF,                                                    \
	  fl_display_read_event_fd(fx->closed_fd, &fx->out_event))                                 \
	X(display_device_get_info_null, -EINVAL, fl_display_device_get_info(NULL, NULL, 0, NULL))  \
	X(display_interface_type_name_null, -EINVAL,                                               \
	  fl_display_interface_type_name(NULL, NULL, NULL))                                        \
	X(display_drivers_null, -EINVAL, fl_display_drivers(NULL, 1, NULL))                        \
	X(display_simple_buffer_alloc_null, -EINVAL,                                               \
	  fl_display_simple_buffer_alloc(NULL, 1, 1, 0, &fx->out_fd, NULL, NULL, NULL))            \
	X(display_post_null, -EINVAL, fl_display_post(NULL, NULL, &fx->out_fd, NULL))              \
	X(display_simple_post_null, -EINVAL,                                                       \
	  fl_display_simple_post(NULL, NULL, 0, &fx->out_fd, NULL))                                \
	X(display_set_connected_null, -EINVAL, fl_display_set_connected(NULL, 1, NULL))            \
	X(display_device_get_stats_null, -EINVAL, fl_display_device_get_stats(NULL, NULL, NULL))   \
	X(display_capture_null, -EINVAL,                                                           \
	  fl_display_capture(NULL, 0, &fx->out_fd, NULL, NULL, NULL, NULL))                        \
	X(display_engine_set_source_null, -EINVAL, fl_display_engine_set_source(NULL, NULL, NULL)) \
	/* sync_file.h */                                                                          \
	X(sync_file_import_minus_1, -EBADF, fl_sync_file_import(-1, "x", &fx->out_fence))          \
	X(sync_file_import_closed, -EBADF,                                                         \
	  fl_sync_file_import(fx->closed_fd, "x", &fx->out_fence))                                 \
	X(sync_file_import_file, -EINVAL, fl_sync_file_import(fx->file_fd, "x", &fx->out_fence))   \
	X(sync_file_import_pipe, -EINVAL, fl_sync_file_import(fx->pipe_fd, "x", &fx->out_fence))   \
	X(sync_file_import_fence_fd, -EINVAL,                                                      \
	  fl_sync_file_import(fx->fence_fd, "x", &fx->out_fence))                                  \
	X(sync_file_import_null_ret, -EINVAL, fl_sync_file_import(fx->pipe_fd, "x", NULL))         \
	/* sw_sync.h */                                                                            \
	X(sw_sync_timeline_create_unknown_flag, -EINVAL,                                           \
	  fl_sw_sync_timeline_create("x", 1u << 1, &fx->out_tl))                                   \
	X(sw_sync_timeline_create_null_ret, -EINVAL, fl_sw_sync_timeline_create("x", 0, NULL))     \
	X(sw_sync_timeline_inc_null, -EINVAL, fl_sw_sync_timeline_inc(NULL, 1))                    \
	X(sw_sync_timeline_inc_not_sw_sync, -EINVAL, fl_sw_sync_timeline_inc(fx->mock->tl, 1))     \
	X(sw_sync_fence_create_null_tl, -EINVAL,                                                   \
	  fl_sw_sync_fence_create(NULL, 1, "f", &fx->out_fence))                                   \
	X(sw_sync_fence_create_not_sw_sync, -EINVAL,                                               \
	  fl_sw_sync_fence_create(fx->mock->tl, 1, "f", &fx->out_fence))                           \
	X(sw_sync_fence_create_null_ret, -EINVAL, fl_sw_sync_fence_create(fx->tl, 1, "f", NULL))   \
	X(sw_sync_timeline_get_value_null_tl, -EINVAL,                                             \
	  fl_sw_sync_timeline_get_value(NULL, &fx->out_value))                                     \
	X(sw_sync_timeline_get_value_null_ret, -EINVAL,                                            \
	  fl_sw_sync_timeline_get_value(fx->tl, NULL))                                             \
	X(sw_sync_timeline_get_value_not_sw_sync, -EINVAL,                                         \
	  fl_sw_sync_timeline_get_value(fx->mock->tl, &fx->out_value))                             \
	X(timeline_is_sw_sync_null, 0, fl_timeline_is_sw_sync(NULL))                               \
	/* transfer.h */                                                                           \
	X(send_negative_sock, -EBADF, fl_send(-1, fx->buf, 1, NULL, 0))                            \
	X(send_closed_sock, -EBADF, fl_send(fx->closed_fd, fx->buf, 1, NULL, 0))                   \
	X(send_null_payload, -EINVAL, fl_send(fx->fence_fd, NULL, 4, NULL, 0))                     \
	X(send_null_fds, -EINVAL, fl_send(fx->fence_fd, fx->buf, 1, NULL, 1))                      \
	X(send_too_many_fds, -EINVAL, fl_send(fx->fence_fd, fx->buf, 1, &fx->fence_fd, 29))        \
	X(send_payload_too_long, -EINVAL, fl_send(fx->fence_fd, fx->buf, 65537, NULL, 0))          \
	X(recv_negative_sock, -EBADF, fl_recv(-1, fx->buf, 1, &fx->out_len, NULL, 0, NULL))        \
	X(recv_closed_sock, -EBADF,                                                                \
	  fl_recv(fx->closed_fd, fx->buf, 1, &fx->out_len, NULL, 0, NULL))                         \
	X(recv_null_payload, -EINVAL, fl_recv(fx->fence_fd, NULL, 4, NULL, NULL, 0, NULL))         \
	X(recv_null_fds, -EINVAL, fl_recv(fx->fence_fd, fx->buf, 1, NULL, NULL, 1, NULL))          \
	X(fence_send_negative_sock, -EBADF, fl_fence_send(-1, fx->fence, NULL, 0))                 \
	X(fence_send_null_fence, -EINVAL, fl_fence_send(fx->fence_fd, NULL, NULL, 0))              \
	X(fence_send_null_payload, -EINVAL, fl_fence_send(fx->fence_fd, fx->fence, NULL, 1))       \
	X(fence_recv_negative_sock, -EBADF, fl_fence_recv(-1, &fx->out_fd, NULL, 0, NULL))         \
	X(fence_recv_null_ret, -EINVAL, fl_fence_recv(fx->fence_fd, NULL, NULL, 0, &fx->out_len))  \
	X(timeline_send_negative_sock, -EBADF, fl_timeline_send(-1, fx->tl, NULL, 0))              \
	X(timeline_send_null_tl, -EINVAL, fl_timeline_send(fx->fence_fd, NULL, NULL, 0))           \
	X(timeline_recv_negative_sock, -EBADF,                                                     \
	  fl_timeline_recv(-1, &fx->out_fd, NULL, 0, &fx->out_len))                                \
	X(timeline_recv_null_ret, -EINVAL,                                                         \
	  fl_timeline_recv(fx->fence_fd, NULL, NULL, 0, &fx->out_len))                             \
	/* heap.h */                                                                               \
	X(heap_open_system_null_ret, -EINVAL, fl_heap_open_system("h", NULL))                      \
	X(heap_open_carveout_zero_size, -EINVAL, fl_heap_open_carveout("h", 0, &fx->out_heap))     \
	X(heap_close_null, 0, (fl_heap_close(NULL), 0))                                            \
	X(heap_alloc_null_heap, -EINVAL, fl_heap_alloc(NULL, 4096, 0, &fx->out_fd))                \
	X(heap_buffer_free_null_heap, -EINVAL, fl_heap_buffer_free(NULL, fx->pipe_fd))             \
	X(heap_free_null_heap, -EINVAL, fl_heap_free(NULL, fx->pipe_fd))                           \
	X(heap_get_info_null_heap, -EINVAL, fl_heap_get_info(NULL, &fx->heap_info))                \
	X(heap_print_null_heap, -EINVAL, fl_heap_print(NULL, stderr))                              \
	/* heap-daemon.h: refused before any request */                                            \
	X(heap_daemon_alloc_null_heap, -EINVAL, fl_heap_daemon_alloc(NULL, 4096, 0, &fx->out_fd))  \
	X(heap_daemon_alloc_group_null_ret, -EINVAL,                                               \
	  fl_heap_daemon_alloc_group("system", 4096, 0, 0, NULL))                                  \
	X(heap_daemon_buffer_free_negative_fd, -EBADF, fl_heap_daemon_buffer_free(-1))             \
	X(heap_daemon_free_negative_fd, -EBADF, fl_heap_daemon_free(-1))                           \
	X(heap_daemon_free_closed_fd, -EBADF, fl_heap_daemon_free(fx->closed_fd))                  \
	X(heap_daemon_group_new_null, -EINVAL, fl_heap_daemon_group_new(NULL))                     \
	X(heap_daemon_group_free_zero, -EINVAL, fl_heap_daemon_group_free(0))                      \
	X(heap_daemon_free_group_zero, -EINVAL, fl_heap_daemon_free_group(0))                      \
	X(heap_daemon_get_usage_null, -EINVAL, fl_heap_daemon_get_usage(NULL, NULL))               \
	X(heap_print_json_null_heap, -EINVAL, fl_heap_print_json(NULL, stderr))                    \
	X(heap_open_system_contig_null_ret, -EINVAL, fl_heap_open_system_contig("h", NULL))        \
	X(heap_open_dma_heap_slash, -EINVAL, fl_heap_open_dma_heap("../x", &fx->out_heap))         \
	X(heap_open_dma_heap_null_name, -EINVAL, fl_heap_open_dma_heap(NULL, &fx->out_heap))       \
	X(heap_for_each_dma_heap_null_fn, -EINVAL, fl_heap_for_each_dma_heap(NULL, NULL))          \
	X(heap_buffer_get_flags_null_heap, -EINVAL,                                                \
	  fl_heap_buffer_get_flags(NULL, fx->pipe_fd, (unsigned int *)&fx->out_fd))                \
	X(heap_set_pool_max_null_heap, -EINVAL, fl_heap_set_pool_max(NULL, 1))                     \
	X(heap_buffer_begin_cpu_access_no_dir, -EINVAL,                                            \
	  fl_heap_buffer_begin_cpu_access(fx->file_fd, 0))                                         \
	X(heap_buffer_begin_cpu_access_closed_fd, -EBADF,                                          \
	  fl_heap_buffer_begin_cpu_access(fx->closed_fd, FL_HEAP_SYNC_READ))                       \
	X(heap_buffer_export_fence_no_dir, -EINVAL,                                                \
	  fl_heap_buffer_export_fence(fx->file_fd, 0, NULL, &fx->out_fence))                       \
	X(heap_buffer_export_fence_closed_fd, -EBADF,                                              \
	  fl_heap_buffer_export_fence(fx->closed_fd, FL_HEAP_SYNC_READ, NULL, &fx->out_fence))     \
	X(heap_buffer_export_fence_not_dmabuf, -EOPNOTSUPP,                                        \
	  fl_heap_buffer_export_fence(fx->file_fd, FL_HEAP_SYNC_READ, NULL, &fx->out_fence))       \
	X(heap_buffer_export_fence_fd_null, -EINVAL,                                               \
	  fl_heap_buffer_export_fence_fd(fx->file_fd, FL_HEAP_SYNC_READ, NULL, NULL))              \
	X(heap_buffer_export_fence_fd_not_dmabuf, -EOPNOTSUPP,                                     \
	  fl_heap_buffer_export_fence_fd(fx->file_fd, FL_HEAP_SYNC_WRITE, NULL, &fx->out_fd))      \
	X(heap_buffer_import_sync_file_no_dir, -EINVAL,                                            \
	  fl_heap_buffer_import_sync_file(fx->file_fd, 4, fx->file_fd))                            \
	X(heap_buffer_import_sync_file_not_dmabuf, -EOPNOTSUPP,                                    \
	  fl_heap_buffer_import_sync_file(fx->file_fd, FL_HEAP_SYNC_WRITE, fx->file_fd))           \
	X(heap_buffer_end_cpu_access_bad_dir, -EINVAL,                                             \
	  fl_heap_buffer_end_cpu_access(fx->file_fd, 4))                                           \
	X(heap_buffer_end_cpu_access_pipe, -ENOTTY,                                                \
	  fl_heap_buffer_end_cpu_access(fx->pipe_fd, FL_HEAP_SYNC_RW))                             \
	/* heap-table.h */                                                                         \
	X(heap_table_load_string_null_ret, -EINVAL,                                                \
	  fl_heap_table_load_string("", 0, NULL, NULL, NULL, 0))                                   \
	X(heap_table_load_string_null_text, -EINVAL,                                               \
	  fl_heap_table_load_string(NULL, 1, NULL, &fx->out_table, NULL, 0))                       \
	X(heap_table_load_file_null_path, -EINVAL,                                                 \
	  fl_heap_table_load_file(NULL, &fx->out_table, NULL, 0))                                  \
	X(heap_table_load_default_null_ret, -EINVAL, fl_heap_table_load_default(NULL, NULL, 0))    \
	X(heap_table_load_system_null_ret, -EINVAL, fl_heap_table_load_system(NULL, NULL, 0))      \
	X(heap_table_close_null, 0, (fl_heap_table_close(NULL), 0))                                \
	X(heap_table_alloc_null_table, -EINVAL,                                                    \
	  fl_heap_table_alloc(NULL, table_devices, 1, 4096, 0, &fx->out_fd, &fx->out_heap, NULL,   \
			      0))                                                                  \
	X(heap_table_buffer_free_null_table, -EINVAL,                                              \
	  fl_heap_table_buffer_free(NULL, fx->pipe_fd))                                            \
	X(heap_table_free_null_table, -EINVAL, fl_heap_table_free(NULL, fx->pipe_fd))              \
	X(heap_table_explain_null_table, -EINVAL,                                                  \
	  fl_heap_table_explain(NULL, table_devices, 1, 4096, stderr))                             \
	X(heap_table_get_heap_null_table, -EINVAL,                                                 \
	  fl_heap_table_get_heap(NULL, "system", &fx->out_heap))                                   \
	X(heap_table_print_null_table, -EINVAL, fl_heap_table_print(NULL, stderr))                 \
	/* debug.h */                                                                              \
	X(debug_dump_null_ret, -EINVAL, fl_debug_dump(NULL, &fx->out_len))                         \
	X(debug_print_null, -EINVAL, fl_debug_print(NULL))                                         \
	/* driver/timeline.h */                                                                    \
	X(timeline_watch_fd_null, -EINVAL, fl_timeline_watch_fd(NULL, fx->pipe_fd))                \
	X(timeline_watch_fd_minus_1, -EINVAL, fl_timeline_watch_fd(fx->tl, -1))                    \
	X(timeline_watch_fd_regular_file, -EINVAL, fl_timeline_watch_fd(fx->tl, fx->file_fd))      \
	X(timeline_watch_fd_closed, -EBADF, fl_timeline_watch_fd(fx->tl, fx->closed_fd))           \
	X(timeline_create_null_ops, -EINVAL, fl_timeline_create(NULL, "t", NULL, &fx->out_tl))     \
	X(timeline_create_no_driver_name, -EINVAL,                                                 \
	  fl_timeline_create(&no_name_ops, "t", NULL, &fx->out_tl))                                \
	X(timeline_create_no_has_signaled, -EINVAL,                                                \
	  fl_timeline_create(&no_check_ops, "t", NULL, &fx->out_tl))                               \
	X(timeline_create_null_ret, -EINVAL, fl_timeline_create(&good_ops, "t", NULL, NULL))       \
	X(timeline_get_driver_data_null, 0, IS_NULL(fl_timeline_get_driver_data(NULL)))            \
	X(timeline_get_ops_null, 0, IS_NULL(fl_timeline_get_ops(NULL)))                            \
	X(fence_create_null_tl, -EINVAL,                                                           \
	  fl_fence_create(NULL, 1, "f", NULL, NULL, &fx->out_fence))                               \
	X(fence_create_null_ret, -EINVAL, fl_fence_create(fx->mock->tl, 1, "f", NULL, NULL, NULL)) \
	/* introspect.h: refused before any request */                                             \
	X(introspect_dump_null_ret, -EINVAL, fl_introspect_dump(0, NULL))                          \
	X(introspect_client_stats_null, -EINVAL, fl_introspect_client_stats(NULL, 1))              \
	X(introspect_dump_unknown_flag, -EINVAL, fl_introspect_dump(1u << 7, &fx->out_fd))         \
	X(introspect_dump_fds_negative_pid, -EINVAL, fl_introspect_dump_fds(-1, 0, &fx->out_fd))   \
	X(introspect_dump_waits_null_ret, -EINVAL, fl_introspect_dump_waits(0, NULL))              \
	X(introspect_dump_stats_null_ret, -EINVAL, fl_introspect_dump_stats(0, NULL))              \
	X(introspect_dump_heaps_null_ret, -EINVAL, fl_introspect_dump_heaps(0, NULL))              \
	X(introspect_display_dump_null_ret, -EINVAL, fl_introspect_display_dump(0, NULL))          \
	X(introspect_display_dump_unknown_flag, -EINVAL,                                           \
	  fl_introspect_display_dump(1u << 7, &fx->out_fd))                                        \
	X(introspect_trace_stop_null_ret, -EINVAL, fl_introspect_trace_stop(NULL))                 \
	X(introspect_read_null_len, -EINVAL, fl_introspect_read(fx->file_fd, fx->buf, 4, NULL))    \
	X(introspect_trace_display_null, -EINVAL, fl_introspect_trace_display(NULL, -1))           \
	X(introspect_read_null_buf, -EINVAL,                                                       \
	  fl_introspect_read(fx->file_fd, NULL, 4, &fx->out_len))                                  \
	X(introspect_read_closed, -EBADF,                                                          \
	  fl_introspect_read(fx->closed_fd, fx->buf, sizeof(fx->buf), &fx->out_len))               \
	X(introspect_read_pipe, -EINVAL,                                                           \
	  fl_introspect_read(fx->pipe_fd, fx->buf, sizeof(fx->buf), &fx->out_len))                 \
	X(introspect_get_daemon_pid_null, -EINVAL, fl_introspect_get_daemon_pid(NULL))

#define DEFINE_CASE(name, expected, expr)                \
	static long long case_##name(struct fixture *fx) \
	{                                                \
		return (long long)(expr);                \
	}
/* The deprecated names have rows too: they are exported. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
API_ERROR_CASES(DEFINE_CASE)
#pragma GCC diagnostic pop

struct api_case {
	const char *name;
	long long expected;
	long long (*call)(struct fixture *fx);
	const char *expr;
};

#define TABLE_ROW(name, expected, expr) { #name, expected, case_##name, #expr },
static const struct api_case cases[] = { API_ERROR_CASES(TABLE_ROW) };

/*
 * The contract: for every public function, the codes it may return on
 * failure (0 ends a list). include/fenceline/fenceline.h's error table
 * documents each code and the groups; each function's "Return:" names its
 * own. A call that returns a code its row does not list fails the test, a
 * code no row lists must leave fenceline.h's table and a code a row lists
 * must be in it, and the codes a function's documentation names must be in
 * its row.
 */
#define DAEMON_ERRORS                                                                              \
	ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPROTO, EPROTONOSUPPORT, EACCES, EPERM, ENAMETOOLONG, \
		EMFILE, ENFILE, ENOMEM
#define NEW_FD_ERRORS EMFILE, ENFILE, ENOMEM
#define STATUS_ERRORS ENOENT, ECONNRESET
#define SEND_ERRORS                                                                               \
	EBADF, ENOTSOCK, EOPNOTSUPP, EAGAIN, EMSGSIZE, EPIPE, ECONNREFUSED, ECONNRESET, ENOTCONN, \
		ENOBUFS, ENOMEM, EINTR
#define RECV_ERRORS \
	EBADF, ENOTSOCK, EOPNOTSUPP, EAGAIN, EMSGSIZE, ENOTCONN, ECONNRESET, EPROTO, ENOMEM, EINTR
#define FILE_ERRORS ENOENT, EACCES, EISDIR, ENOTDIR, ELOOP, ENAMETOOLONG, EMFILE, ENFILE, EIO, EFBIG

struct contract {
	const char *function;
	int errors[32];
};

static const struct contract contracts[] = {
	/* timeline.h */
	{ "fl_timeline_ref", { 0 } },
	{ "fl_timeline_unref", { 0 } },
	{ "fl_timeline_kill", { 0 } },
	{ "fl_timeline_destroy", { 0 } },
	{ "fl_timeline_signal", { EINVAL } },
	{ "fl_timeline_fail_pending", { EINVAL, ENOENT } },
	{ "fl_timeline_get_name", { 0 } },
	{ "fl_timeline_get_driver_name", { 0 } },
	{ "fl_timeline_get_id", { 0 } },
	{ "fl_timeline_is_alive", { EINVAL } },
	{ "fl_timeline_get_pending_count", { EINVAL } },
	{ "fl_timeline_get_value_str", { EINVAL } },
	{ "fl_timeline_export_fd", { EINVAL, ENOENT, NEW_FD_ERRORS } },
	{ "fl_timeline_from_fd", { EINVAL, EBADF, ENOTTY } },
	/* fence.h */
	{ "fl_fence_ref", { 0 } },
	{ "fl_fence_unref", { 0 } },
	{ "fl_fence_merge", { EINVAL, ENOMEM } },
	{ "fl_fence_set_deadline", { EINVAL } },
	{ "fl_fence_get_deadline", { EINVAL, ENOENT } },
	{ "fl_fence_get_status", { EINVAL, STATUS_ERRORS } },
	{ "fl_fence_wait", { EINVAL, ETIME, STATUS_ERRORS } },
	{ "fl_fence_add_callback", { EINVAL, ENOENT } },
	{ "fl_fence_remove_callback", { EINVAL } },
	{ "fl_fence_get_name", { 0 } },
	{ "fl_fence_get_num_points", { EINVAL } },
	{ "fl_fence_get_info", { EINVAL } },
	{ "fl_fence_get_point_driver_data", { EINVAL, ENOMEM } },
	{ "fl_fence_export_fd", { EINVAL, NEW_FD_ERRORS } },
	{ "fl_fence_get_fd", { EINVAL, NEW_FD_ERRORS } },
	{ "fl_fence_from_fd", { EINVAL, EBADF, ENOTTY } },
	{ "fl_fence_fd_get_status", { EBADF, ENOTTY, STATUS_ERRORS } },
	{ "fl_fence_fd_wait", { EBADF, ENOTTY, ETIME, EDEADLK, ENOMEM, STATUS_ERRORS } },
	{ "fl_fence_fd_wait_flags",
	  { EINVAL, EBADF, ENOTTY, ETIME, EDEADLK, ENOMEM, STATUS_ERRORS } },
	/* shared.h: the fd API; in daemon mode it talks to the daemon */
	{ "fl_mode_set", { EINVAL } },
	{ "fl_mode_get", { 0 } },
	{ "fl_timeline_fd_create", { EINVAL, DAEMON_ERRORS } },
	{ "fl_timeline_fd_inc", { EINVAL, EBADF, ENOTTY, DAEMON_ERRORS } },
	{ "fl_timeline_fd_fail_pending",
	  { EINVAL, EBADF, ENOTTY, ENOENT, EOPNOTSUPP, DAEMON_ERRORS } },
	{ "fl_timeline_fd_inc_at", { EINVAL, EBADF, ENOTTY, DAEMON_ERRORS } },
	{ "fl_timeline_fd_get_value", { EINVAL, EBADF, ENOTTY, DAEMON_ERRORS } },
	{ "fl_timeline_fd_close", { EBADF, EINTR, EIO } },
	{ "fl_fence_fd_create", { EINVAL, EBADF, ENOTTY, DAEMON_ERRORS } },
	{ "fl_fence_fd_merge", { EINVAL, EBADF, ENOTTY, ENOENT, DAEMON_ERRORS } },
	{ "fl_fence_fd_get_info", { EINVAL, EBADF, ENOTTY, DAEMON_ERRORS } },
	{ "fl_fence_fd_get_info_flags", { EINVAL, EBADF, ENOTTY, DAEMON_ERRORS } },
	{ "fl_fence_fd_import", { EINVAL, EBADF, ENOSPC, DAEMON_ERRORS } },
	{ "fl_fence_fd_set_deadline", { EINVAL, EBADF, ENOTTY, DAEMON_ERRORS } },
	{ "fl_fence_fd_get_deadline", { EINVAL, EBADF, ENOTTY, ENOENT, DAEMON_ERRORS } },
	{ "fl_daemon_connect", { DAEMON_ERRORS } },
	{ "fl_daemon_flush", { 0 } },
	{ "fl_daemon_disconnect", { 0 } },
	{ "fl_fence_fd_wait_begin", { EINVAL, NEW_FD_ERRORS } },
	{ "fl_fence_fd_wait_notified", { EINVAL, EDEADLK } },
	{ "fl_fence_fd_wait_end", { 0 } },
	/* context.h */
	{ "fl_context_new", { EINVAL, ENOMEM } },
	{ "fl_context_destroy", { 0 } },
	{ "fl_context_default", { 0 } },
	{ "fl_context_get_mode", { 0 } },
	{ "fl_timeline_fd_create_ctx", { EINVAL, NEW_FD_ERRORS, DAEMON_ERRORS } },
	{ "fl_fence_fd_import_ctx", { EINVAL, EBADF, ENOSPC, NEW_FD_ERRORS, DAEMON_ERRORS } },
	/* sync_file.h */
	{ "fl_sync_file_import", { EINVAL, EBADF, ENOSPC, NEW_FD_ERRORS } },
	/* sw_sync.h */
	{ "fl_sw_sync_timeline_create", { EINVAL, ENOMEM } },
	{ "fl_sw_sync_timeline_inc", { EINVAL, ENOENT } },
	{ "fl_sw_sync_fence_create", { EINVAL, ENOENT, ENOMEM } },
	{ "fl_sw_sync_timeline_get_value", { EINVAL } },
	{ "fl_timeline_is_sw_sync", { 0 } },
	/* transfer.h */
	{ "fl_send", { EINVAL, SEND_ERRORS } },
	{ "fl_recv", { EINVAL, RECV_ERRORS } },
	{ "fl_fence_send", { EINVAL, ENFILE, SEND_ERRORS, EMFILE } },
	{ "fl_fence_recv", { EINVAL, RECV_ERRORS } },
	{ "fl_timeline_send", { EINVAL, ENOENT, ENFILE, SEND_ERRORS, EMFILE } },
	{ "fl_timeline_recv", { EINVAL, RECV_ERRORS } },
	/* heap.h */
	{ "fl_heap_open_system", { EINVAL, NEW_FD_ERRORS } },
	{ "fl_heap_open_carveout", { EINVAL, NEW_FD_ERRORS } },
	{ "fl_heap_open_system_contig", { EINVAL, NEW_FD_ERRORS } },
	{ "fl_heap_open_dma_heap", { EINVAL, ENODEV, EPERM, EACCES, NEW_FD_ERRORS } },
	{ "fl_heap_for_each_dma_heap", { EINVAL, EPERM, EACCES, NEW_FD_ERRORS } },
	{ "fl_heap_close", { 0 } },
	{ "fl_heap_alloc", { EINVAL, NEW_FD_ERRORS } },
	{ "fl_heap_buffer_free", { EINVAL, EBADF } },
	{ "fl_heap_free", { EINVAL, EBADF } },
	{ "fl_heap_buffer_get_flags", { EINVAL, EBADF } },
	{ "fl_heap_get_info", { EINVAL } },
	{ "fl_heap_print", { EINVAL, ENOMEM, EIO } },
	{ "fl_heap_print_json", { EINVAL, ENOMEM, EIO } },
	{ "fl_heap_set_pool_max", { EINVAL } },
	{ "fl_heap_buffer_begin_cpu_access", { EINVAL, EBADF, ENOTTY } },
	{ "fl_heap_buffer_export_fence", { EINVAL, EBADF, EOPNOTSUPP, ENOMEM, EMFILE } },
	{ "fl_heap_buffer_export_fence_fd",
	  { EINVAL, EBADF, EOPNOTSUPP, ENOMEM, EMFILE, DAEMON_ERRORS } },
	{ "fl_heap_buffer_import_sync_file", { EINVAL, EBADF, EOPNOTSUPP, ENOMEM } },
	{ "fl_heap_buffer_end_cpu_access", { EINVAL, EBADF, ENOTTY } },
	/* heap-daemon.h */
	{ "fl_heap_daemon_alloc", { EINVAL, ENODEV, DAEMON_ERRORS } },
	{ "fl_heap_daemon_alloc_group", { EINVAL, ENODEV, DAEMON_ERRORS } },
	{ "fl_heap_daemon_buffer_free", { EINVAL, EBADF, DAEMON_ERRORS } },
	{ "fl_heap_daemon_free", { EINVAL, EBADF, DAEMON_ERRORS } },
	{ "fl_heap_daemon_group_new", { EINVAL, DAEMON_ERRORS } },
	{ "fl_heap_daemon_group_free", { EINVAL, DAEMON_ERRORS } },
	{ "fl_heap_daemon_free_group", { EINVAL, DAEMON_ERRORS } },
	{ "fl_heap_daemon_get_usage", { EINVAL, ENODEV, DAEMON_ERRORS } },
	/* heap-table.h */
	{ "fl_heap_table_load_string", { EINVAL, ENOMEM, EFBIG } },
	{ "fl_heap_table_load_file", { EINVAL, ENOMEM, FILE_ERRORS } },
	{ "fl_heap_table_load_default", { EINVAL, ENOMEM } },
	{ "fl_heap_table_load_system", { EINVAL, ENOMEM, FILE_ERRORS } },
	{ "fl_heap_table_close", { 0 } },
	{ "fl_heap_table_alloc", { EINVAL, E2BIG, ENODEV, NEW_FD_ERRORS } },
	{ "fl_heap_table_buffer_free", { EINVAL, EBADF } },
	{ "fl_heap_table_free", { EINVAL, EBADF } },
	{ "fl_heap_table_explain", { EINVAL, ENODEV, ENOMEM, EIO } },
	{ "fl_heap_table_get_heap", { EINVAL, ENODEV, ENOENT } },
	{ "fl_heap_table_print", { EINVAL, EIO } },
	/* debug.h */
	{ "fl_debug_dump", { EINVAL, ENOMEM } },
	{ "fl_debug_print", { EINVAL, ENOMEM, EIO } },
	/* fd.h */
	{ "fl_fd_reserve", { EMFILE, ENOMEM } },
	/* driver/timeline.h */
	{ "fl_timeline_create", { EINVAL, ENOMEM } },
	{ "fl_timeline_get_driver_data", { 0 } },
	{ "fl_timeline_get_ops", { 0 } },
	{ "fl_fence_create", { EINVAL, ENOENT, ENOMEM } },
	{ "fl_timeline_watch_fd", { EINVAL, EBADF, EEXIST, ENOSPC, ENOENT, NEW_FD_ERRORS } },
	{ "fl_sync_pt_get_value", { 0 } },
	{ "fl_sync_pt_get_timeline", { 0 } },
	{ "fl_sync_pt_get_driver_data", { 0 } },
	{ "fl_sync_pt_get_status", { EINVAL, STATUS_ERRORS } },
	/* introspect.h: never starts a daemon, so -ENOENT when none runs */
	{ "fl_introspect_dump", { EINVAL, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_dump_fds", { EINVAL, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_dump_waits", { EINVAL, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_dump_stats", { EINVAL, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_dump_heaps", { EINVAL, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_display_dump", { EINVAL, ENOENT, EOPNOTSUPP, DAEMON_ERRORS } },
	{ "fl_introspect_trace_start", { EBUSY, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_trace_stop", { EINVAL, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_read", { EINVAL, EBADF, ENOBUFS, EFBIG, EIO, EINTR, EISDIR } },
	{ "fl_introspect_get_daemon_pid", { EINVAL, ENOENT, DAEMON_ERRORS } },
	{ "fl_introspect_tracing", { 0 } },
	{ "fl_introspect_trace_display", { EINVAL, ENOENT, EBADF, DAEMON_ERRORS } },
	{ "fl_introspect_client_stats", { EINVAL } },
	/* display.h: every call may meet the service as the daemon errors say */
	/* bufferqueue.h */
	{ "fl_bufferqueue_consumer_create",
	  { EINVAL, ENAMETOOLONG, EADDRINUSE, EPERM, EPROTO, ENODEV, FILE_ERRORS, ENFILE,
	    ENOMEM } },
	{ "fl_bufferqueue_consumer_destroy", { 0 } },
	{ "fl_bufferqueue_consumer_get_fd", { EINVAL } },
	{ "fl_bufferqueue_consumer_dispatch", { EINVAL } },
	{ "fl_bufferqueue_consumer_wait", { EINVAL, ETIME, EINTR } },
	{ "fl_bufferqueue_consumer_acquire", { EINVAL, EAGAIN } },
	{ "fl_bufferqueue_consumer_release", { EINVAL, EBADF, EMFILE } },
	{ "fl_bufferqueue_consumer_connect_fd", { EINVAL, EBUSY, NEW_FD_ERRORS } },
	{ "fl_bufferqueue_producer_connect",
	  { EINVAL, ENAMETOOLONG, ENOENT, EACCES, ECONNREFUSED, EBUSY, EPIPE, EPROTO, EINTR,
	    NEW_FD_ERRORS } },
	{ "fl_bufferqueue_producer_connect_fd",
	  { EINVAL, EBADF, EBUSY, EPIPE, EPROTO, EINTR, NEW_FD_ERRORS } },
	{ "fl_bufferqueue_producer_destroy", { 0 } },
	{ "fl_bufferqueue_producer_get_fd", { EINVAL } },
	{ "fl_bufferqueue_producer_dispatch", { EINVAL, EPIPE, EPROTO } },
	{ "fl_bufferqueue_producer_get_num_slots", { EINVAL } },
	{ "fl_bufferqueue_producer_dequeue",
	  { EINVAL, EAGAIN, ETIME, ENODEV, E2BIG, ENOMEM, EPIPE, EPROTO, EINTR, EMFILE } },
	{ "fl_bufferqueue_producer_queue", { EINVAL, EBADF, EPIPE, EPROTO, EINTR } },
	{ "fl_bufferqueue_producer_cancel", { EINVAL, EBADF, EPIPE, EPROTO, EINTR } },
	{ "fl_display_disconnect", { 0 } },
	{ "fl_display_socket_path", { EINVAL, ENAMETOOLONG, ENOENT } },
	{ "fl_display_devices", { EINVAL, DAEMON_ERRORS } },
	{ "fl_display_device_open", { EINVAL, ENODEV, DAEMON_ERRORS } },
	{ "fl_display_interface_open", { EINVAL, ENODEV, DAEMON_ERRORS } },
	{ "fl_display_engine_open", { EINVAL, ENODEV, DAEMON_ERRORS } },
	{ "fl_display_close", { 0 } },
	{ "fl_display_get_fd", { EINVAL } },
	{ "fl_display_device_get_data", { EINVAL, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_interface_get_data", { EINVAL, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_engine_get_data", { EINVAL, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_attach", { EINVAL, EALREADY, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_detach", { EINVAL, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_blank", { EINVAL, EBUSY, EOPNOTSUPP, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_set_mode", { EINVAL, EOPNOTSUPP, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_set_event", { EINVAL, EOPNOTSUPP, EALREADY, EBADF, DAEMON_ERRORS } },
	{ "fl_display_read_event", { EINVAL, EIO, EAGAIN, EINTR, EBADF, ENOMEM } },
	{ "fl_display_read_event_fd", { EINVAL, EIO, EAGAIN, EINTR, EBADF, ENOMEM } },
	{ "fl_display_device_get_info", { EINVAL, EOPNOTSUPP, EBADF, DAEMON_ERRORS } },
	{ "fl_display_interface_type_name", { EINVAL, EOPNOTSUPP, EBADF, DAEMON_ERRORS } },
	{ "fl_display_drivers", { EINVAL, EOPNOTSUPP, ENOMEM, DAEMON_ERRORS } },
	{ "fl_display_simple_buffer_alloc",
	  { EINVAL, EOPNOTSUPP, E2BIG, ENODEV, EBADF, DAEMON_ERRORS } },
	{ "fl_display_post", { EINVAL, ENOENT, EBUSY, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_simple_post",
	  { EINVAL, ENOENT, EBUSY, EOPNOTSUPP, EBADF, EIO, DAEMON_ERRORS } },
	{ "fl_display_set_connected",
	  { EINVAL, EALREADY, EOPNOTSUPP, ENOENT, EBADF, DAEMON_ERRORS } },
	{ "fl_display_device_get_stats", { EINVAL, EBADF, DAEMON_ERRORS } },
	{ "fl_display_capture", { EINVAL, ENODEV, EOPNOTSUPP, EBADF, DAEMON_ERRORS } },
	{ "fl_display_engine_set_source", { EINVAL, EOPNOTSUPP, ENOMEM, EBADF, DAEMON_ERRORS } },
};

static const struct contract *contract_of(const char *function)
{
	for (size_t i = 0; i < sizeof(contracts) / sizeof(contracts[0]); i++)
		if (strcmp(contracts[i].function, function) == 0)
			return &contracts[i];
	return NULL;
}

static bool contract_allows(const struct contract *c, int err)
{
	for (size_t i = 0; i < sizeof(c->errors) / sizeof(c->errors[0]) && c->errors[i]; i++)
		if (c->errors[i] == err)
			return true;
	return false;
}

/* The public function a bad-argument row calls: the first fl_ call in its text. */
static void function_of_row(const char *expr, char *buf, size_t size)
{
	const char *p = strstr(expr, "fl_");
	size_t n = 0;

	while (p && n + 1 < size &&
	       (p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9')))
		n++;
	snprintf(buf, size, "%.*s", (int)n, p ? p : "");
}

/* @r, from @function: 0 or more, or a code its contract lists. */
static bool result_allowed(const char *function, long long r, const char *what)
{
	const struct contract *c = contract_of(function);

	if (r >= 0)
		return true;
	if (!c) {
		fprintf(stderr, "%s: %s has no contract row\n", what, function);
		return false;
	}
	if (r < -4095 || !contract_allows(c, (int)-r)) {
		fprintf(stderr, "%s: %s returned %lld (%s), which its contract does not list\n",
			what, function, r, r >= -4095 ? strerrorname_np((int)-r) : "?");
		return false;
	}
	return true;
}

static void reset_outputs(struct fixture *fx)
{
	fx->out_tl = SENTINEL_PTR;
	fx->out_fence = SENTINEL_PTR;
	fx->out_heap = SENTINEL_PTR;
	fx->out_ctx = SENTINEL_PTR;
	fx->out_table = SENTINEL_PTR;
	fx->out_event = SENTINEL_PTR;
	fx->out_consumer = SENTINEL_PTR;
	fx->out_producer = SENTINEL_PTR;
	fx->out_fd = SENTINEL_INT;
	fx->out_value = SENTINEL_INT;
	fx->out_text = SENTINEL_PTR;
	fx->out_len = SENTINEL_INT;
}

static int outputs_untouched(const struct fixture *fx)
{
	return fx->out_tl == SENTINEL_PTR && fx->out_fence == SENTINEL_PTR &&
	       fx->out_heap == SENTINEL_PTR && fx->out_table == SENTINEL_PTR &&
	       fx->out_event == SENTINEL_PTR && fx->out_ctx == SENTINEL_PTR &&
	       fx->out_consumer == SENTINEL_PTR && fx->out_producer == SENTINEL_PTR &&
	       fx->out_fd == SENTINEL_INT && fx->out_value == SENTINEL_INT &&
	       fx->out_text == SENTINEL_PTR && fx->out_len == SENTINEL_INT;
}

static void setup(struct fixture *fx)
{
	char path[] = "/tmp/fl-api-errors-XXXXXX";
	int fds[2];

	memset(fx, 0, sizeof(*fx));
	fl_assert_int_eq(fl_sw_sync_timeline_create("api", 0, &fx->tl), 0);
	fl_assert_int_eq(mock_timeline_create(0, "mock", &fx->mock), 0);
	fl_assert_int_eq(fl_sw_sync_fence_create(fx->tl, 5, "pending", &fx->fence), 0);
	fl_assert_int_eq(fl_sw_sync_fence_create(fx->tl, 0, "done", &fx->done), 0);
	fl_assert_int_eq(fl_sw_sync_timeline_create("other", 0, &fx->other_tl), 0);
	fl_assert_int_eq(fl_sw_sync_fence_create(fx->other_tl, 1, "other", &fx->other), 0);
	fl_assert_int_eq(fl_fence_add_callback(fx->other, &fx->queued_cb, never_called), 0);
	fl_assert_int_eq(fl_fence_export_fd(fx->fence, &fx->fence_fd), 0);
	fl_assert_int_eq(fl_timeline_export_fd(fx->tl, &fx->timeline_fd), 0);

	fx->file_fd = mkostemp(path, O_CLOEXEC);
	fl_assert_int_ge(fx->file_fd, 0);
	unlink(path);
	fl_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	fx->pipe_fd = fds[0];
	close(fds[1]);
	/* An fd number that is surely closed: just freed, nothing opened since. */
	fx->closed_fd = dup(fx->file_fd);
	fl_assert_int_ge(fx->closed_fd, 0);
	close(fx->closed_fd);
}

static void teardown(struct fixture *fx)
{
	fl_assert_int_eq(fl_fence_remove_callback(fx->other, &fx->queued_cb), 1);
	close(fx->fence_fd);
	close(fx->timeline_fd);
	close(fx->file_fd);
	close(fx->pipe_fd);
	fl_fence_unref(fx->fence);
	fl_fence_unref(fx->other);
	fl_fence_unref(fx->done);
	fl_timeline_unref(fx->tl);
	fl_timeline_unref(fx->other_tl);
	mock_timeline_free(fx->mock);
}

FL_TEST(every_public_function_rejects_bad_arguments_with_a_listed_errno)
{
	struct fixture fx;
	int failures = 0;

	setup(&fx);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct api_case *c = &cases[i];
		long long r;

		reset_outputs(&fx);
		r = c->call(&fx);
		if (r != c->expected) {
			fprintf(stderr, "%s: returned %lld (%s), want %lld (%s)\n", c->name, r,
				r < 0 ? strerror((int)-r) : "-", c->expected,
				c->expected < 0 ? strerror((int)-c->expected) : "-");
			failures++;
		} else {
			char function[64];

			function_of_row(c->expr, function, sizeof(function));
			if (!result_allowed(function, r, c->name))
				failures++;
		}
		if (!outputs_untouched(&fx)) {
			fprintf(stderr, "%s: wrote an output parameter on failure\n", c->name);
			failures++;
		}
	}
	/* The objects the rows borrowed are unharmed. */
	fl_assert_int_eq(fl_fence_get_status(fx.fence), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fx.fence_fd), 0);
	fl_assert_int_eq(fl_timeline_is_alive(fx.tl), 1);
	teardown(&fx);
	if (failures)
		fl__test_fail(__FILE__, __LINE__, "%d of %zu rows failed", failures,
			      sizeof(cases) / sizeof(cases[0]));
}

/* Public functions with no argument they can reject, tested elsewhere. */
static const char *const exempt[] = {
	"fl_fd_reserve", /* any count is valid: see fd_reserve_accepts_any_count */
	"fl_introspect_trace_start", /* any count is valid: introspect-test starts sessions */
	"fl_introspect_tracing", /* no argument: fencectl-display-trace reads it */
	/* Driver-side accessors of a point the core handed to the driver. */
	"fl_sync_pt_get_value",
	"fl_sync_pt_get_timeline",
	"fl_sync_pt_get_driver_data",
	"fl_sync_pt_get_status",
};

static int has_row(const char *function)
{
	size_t len = strlen(function) - strlen("fl_");

	for (size_t i = 0; i < sizeof(exempt) / sizeof(exempt[0]); i++)
		if (strcmp(exempt[i], function) == 0)
			return 1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strncmp(cases[i].name, function + 3, len) == 0 && cases[i].name[len] == '_')
			return 1;
	return 0;
}

static char *read_text(const char *path)
{
	char *text = NULL;
	size_t size = 0;
	FILE *in;

	in = fopen(path, "re");
	if (!in)
		fl__test_fail(__FILE__, __LINE__, "%s: %s", path, strerror(errno));
	fl_assert_int_ge(getdelim(&text, &size, '\0', in), 1);
	fclose(in);
	return text;
}

static const char *const public_headers[] = {
	"fenceline/debug.h",	   "fenceline/fd.h",	      "fenceline/fence.h",
	"fenceline/heap.h",	   "fenceline/heap-daemon.h", "fenceline/heap-table.h",
	"fenceline/shared.h",	   "fenceline/sw_sync.h",     "fenceline/sync_file.h",
	"fenceline/timeline.h",	   "fenceline/transfer.h",    "fenceline/driver/timeline.h",
	"fenceline/introspect.h",  "fenceline/context.h",     "fenceline/display.h",
	"fenceline/bufferqueue.h",
};

/* The errno whose name is the @len bytes at @name ("EINVAL"), or 0. */
static int errno_named(const char *name, size_t len)
{
	for (int e = 1; e < 4096; e++) {
		const char *n = strerrorname_np(e);

		if (n && strlen(n) == len && strncmp(n, name, len) == 0)
			return e;
	}
	return 0;
}

/*
 * Calls @fn with the name of every FL_EXPORT function declared in @path
 * and the "Return:" part of the doc comment just before it ("" if none).
 * Return: how many calls said no.
 */
static int for_each_export(const char *path, int (*fn)(const char *name, const char *ret_doc))
{
	char *text = read_text(path), *p;
	int failed = 0;

	for (p = text; (p = strstr(p, "FL_EXPORT ")); p++) {
		char *paren = strchr(p, '('), *name = paren, name_buf[64], *doc_end, *doc, *ret;
		char *doc_copy = NULL;

		if (!paren)
			break;
		/* The function's name is the identifier just before its '('. */
		while (name > p && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') ||
				    (name[-1] >= '0' && name[-1] <= '9')))
			name--;
		snprintf(name_buf, sizeof(name_buf), "%.*s", (int)(paren - name), name);
		if (strncmp(name_buf, "fl_", 3) != 0)
			continue;
		/* Its doc comment ends right before it: "*" "/" then blank space. */
		doc_end = p;
		while (doc_end > text && (doc_end[-1] == '\n' || doc_end[-1] == ' '))
			doc_end--;
		doc = NULL;
		if (doc_end - text >= 2 && doc_end[-1] == '/' && doc_end[-2] == '*') {
			*(doc_end - 2) = '\0';
			doc = strrchr(text, '/');
			while (doc && !(doc[1] == '*' && doc[2] == '*'))
				doc = doc > text ? memrchr(text, '/', (size_t)(doc - text)) : NULL;
			if (doc)
				doc_copy = strdup(doc);
			*(doc_end - 2) = '*';
		}
		ret = doc_copy ? strstr(doc_copy, "Return:") : NULL;
		if (!fn(name_buf, ret ? ret : ""))
			failed++;
		free(doc_copy);
	}
	free(text);
	return failed;
}

static int has_row_in(const char *function, const char *ret_doc)
{
	if (has_row(function))
		return 1;
	fprintf(stderr, "no bad-argument row for %s\n", function);
	return 0;
}

FL_TEST(table_covers_every_public_function)
{
	int missing = 0;

	for (size_t i = 0; i < sizeof(public_headers) / sizeof(public_headers[0]); i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", FL_INCLUDE_DIR, public_headers[i]);
		missing += for_each_export(path, has_row_in);
	}
	fl_assert_int_eq(missing, 0);
}

static bool declared[sizeof(contracts) / sizeof(contracts[0])];

/* @function has a contract, and each code its Return: names is in it. */
static int contract_matches_doc(const char *function, const char *ret_doc)
{
	const struct contract *c = contract_of(function);
	int ok = 1;

	if (!c) {
		fprintf(stderr, "%s: no contract row\n", function);
		return 0;
	}
	declared[c - contracts] = true;
	for (const char *p = ret_doc; (p = strstr(p, "-E")); p++) {
		size_t len = 1;
		int e;

		while ((p[len] >= 'A' && p[len] <= 'Z') || (p[len] >= '0' && p[len] <= '9'))
			len++;
		e = errno_named(p + 1, len - 1);
		if (e && !contract_allows(c, e)) {
			fprintf(stderr, "%s: its header documents -%s, which its contract lacks\n",
				function, strerrorname_np(e));
			ok = 0;
		}
	}
	return ok;
}

/* The codes of fenceline.h's error table: a row starts " * ``-ENAME``". */
static size_t header_table(int *codes, size_t cap)
{
	char path[512], *text, *p;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/fenceline/fenceline.h", FL_INCLUDE_DIR);
	text = read_text(path);
	for (p = text; (p = strstr(p, "\n * ``-E")); p++) {
		const char *name = p + strlen("\n * ``-");
		const char *end = strstr(name, "``");
		int e = end ? errno_named(name, (size_t)(end - name)) : 0;

		if (!e)
			fl__test_fail(__FILE__, __LINE__,
				      "fenceline.h: a row names no errno: %.20s", name);
		if (n < cap)
			codes[n++] = e;
	}
	free(text);
	return n;
}

FL_TEST(contracts_match_the_headers_and_the_error_table)
{
	int table[128], bad = 0;
	size_t ntable = header_table(table, 128);

	fl_assert(ntable > 0 && ntable < 128);
	for (size_t i = 0; i < sizeof(public_headers) / sizeof(public_headers[0]); i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", FL_INCLUDE_DIR, public_headers[i]);
		bad += for_each_export(path, contract_matches_doc);
	}
	for (size_t i = 0; i < sizeof(contracts) / sizeof(contracts[0]); i++) {
		const struct contract *c = &contracts[i];

		if (!declared[i]) {
			fprintf(stderr, "%s: a contract row, but no header declares it\n",
				c->function);
			bad++;
		}
		for (size_t k = 0; k < sizeof(c->errors) / sizeof(c->errors[0]) && c->errors[k];
		     k++) {
			size_t t = 0;

			while (t < ntable && table[t] != c->errors[k])
				t++;
			if (t == ntable) {
				fprintf(stderr, "%s: -%s is not in fenceline.h's error table\n",
					c->function, strerrorname_np(c->errors[k]));
				bad++;
			}
		}
	}
	/* Every fl_ symbol the library exports (tests/symbols.txt) has a row. */
	{
		char *symbols = read_text(FL_SYMBOLS_FILE), *line, *save = NULL;

		for (line = strtok_r(symbols, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *at = strchr(line, '@');

			if (strncmp(line, "fl_", 3) != 0)
				continue;
			if (at)
				*at = '\0';
			if (!contract_of(line)) {
				fprintf(stderr, "%s: exported, but no contract row\n", line);
				bad++;
			}
		}
		free(symbols);
	}
	/* And the table lists no code that no function returns. */
	for (size_t t = 0; t < ntable; t++) {
		bool used = false;

		for (size_t i = 0; i < sizeof(contracts) / sizeof(contracts[0]) && !used; i++)
			used = contract_allows(&contracts[i], table[t]);
		if (!used) {
			fprintf(stderr, "fenceline.h lists -%s, which no contract has\n",
				strerrorname_np(table[t]));
			bad++;
		}
	}
	fl_assert_int_eq(bad, 0);
}

FL_TEST(fd_reserve_accepts_any_count)
{
	fl_assert_int_ge(fl_fd_reserve(0), 0);
	fl_assert_int_ge(fl_fd_reserve(64), 64);
}

/* A second watch of an fd already watched: a listed code, and the first watch still works. */
FL_TEST(timeline_watch_fd_of_a_watched_fd_is_listed)
{
	struct fl_timeline *tl;
	uint64_t one = 1;
	int e = eventfd(0, EFD_CLOEXEC), r;

	fl_assert_int_ge(e, 0);
	fl_assert_int_eq(fl_sw_sync_timeline_create("watched", 0, &tl), 0);
	fl_assert_int_eq(fl_timeline_watch_fd(tl, e), 0);
	r = fl_timeline_watch_fd(tl, e);
	fl_assert(result_allowed("fl_timeline_watch_fd", r, "second watch"));
	fl_assert_int_eq(r, -EEXIST);
	/* The watch fires and the core closes its fd, which is how it ends. */
	fl_assert_int_eq(write(e, &one, sizeof(one)), (int)sizeof(one));
	while (fcntl(e, F_GETFD) >= 0)
		usleep(1000);
	fl_timeline_unref(tl);
}

/*
 * The deprecated names (the headers, docs/changelog.md) still link
 * and do what the new ones do, for programs built before the renames: the
 * only in-tree caller of them, so that dropping one is a visible decision.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
FL_TEST(deprecated_names_still_work)
{
	static const char table_text[] = "[heap only]\nkind = system\n[device cpu]\nheaps = only\n";
	const char *const devices[] = { "cpu" };
	struct fl_timeline *tl, *other;
	struct fl_fence *pending;
	struct fl_heap_table *table;
	struct fl_heap_info info;
	struct fl_heap *heap;
	int fd;

	/*
	 * Each is the same function as its new name, not a copy of it: read
	 * through volatile, since a compiler may take two functions' addresses
	 * to differ without looking (clang does).
	 */
	void (*volatile old_kill)(struct fl_timeline *) = fl_timeline_destroy;
	int (*volatile old_free)(struct fl_heap *, int) = fl_heap_free;
	int (*volatile old_table_free)(struct fl_heap_table *, int) = fl_heap_table_free;

	fl_assert(old_kill == fl_timeline_kill);
	fl_assert(old_free == fl_heap_buffer_free);
	fl_assert(old_table_free == fl_heap_table_buffer_free);

	/* fl_timeline_destroy(): kills, drops only the caller's handle. */
	fl_assert_int_eq(fl_sw_sync_timeline_create("old-name", 0, &tl), 0);
	fl_assert_int_eq(fl_sw_sync_fence_create(tl, 1, "pending", &pending), 0);
	other = fl_timeline_ref(tl);
	fl_timeline_destroy(tl);
	fl_assert_int_eq(fl_fence_get_status(pending), -ENOENT);
	fl_assert_int_eq(fl_timeline_is_alive(other), 0);
	fl_timeline_unref(other);
	fl_fence_unref(pending);

	/* fl_heap_free(): gives the buffer back and closes the fd. */
	fl_assert_int_eq(fl_heap_open_system("old-name", &heap), 0);
	fl_assert_int_eq(fl_heap_alloc(heap, 4096, 0, &fd), 0);
	fl_assert_int_eq(fl_heap_free(heap, fd), 0);
	fl_assert_int_eq(fl_heap_get_info(heap, &info), 0);
	fl_assert_int_eq(info.buffers, 0);
	fl_heap_close(heap);

	/* fl_heap_table_free(): the same through a table. */
	fl_assert_int_eq(fl_heap_table_load_string(table_text, strlen(table_text), "t.ini", &table,
						   NULL, 0),
			 0);
	fl_assert_int_eq(fl_heap_table_alloc(table, devices, 1, 4096, 0, &fd, NULL, NULL, 0), 0);
	fl_assert_int_eq(fl_heap_table_free(table, fd), 0);
	fl_assert_int_eq(fl_heap_table_free(table, fd), -EBADF); /* closed by the first */
	fl_heap_table_close(table);
}
#pragma GCC diagnostic pop

/*
 * Daemon errors, provoked: each scenario runs in a child of its own (its own
 * connection and environment) against a daemon that is missing, silent,
 * hangs up, answers nonsense, or died, and calls the functions that talk to
 * it. Every code they return must be one their contract lists, and the
 * scenario's own code must come out where the contract promises it.
 */
/* What the daemon calls use; out_fd is closed after each call that made one. */
struct daemon_fx {
	int tl, fence, out_fd, memfd;
	uint64_t value;
	uint32_t group;
	pid_t pid;
	struct fl_fence_info info;
	struct fl_heap_daemon_usage usage;
};

/* X(name, expression): the first call of a list is the scenario's probe. */
#define CONNECTING_CALLS(X)                                                                      \
	X(connect, fl_daemon_connect())                                                          \
	X(timeline_fd_create, fl_timeline_fd_create("t", 0, &d->out_fd))                         \
	X(heap_daemon_alloc, fl_heap_daemon_alloc("system", 4096, 0, &d->out_fd))                \
	X(heap_daemon_alloc_group, fl_heap_daemon_alloc_group("system", 4096, 0, 1, &d->out_fd)) \
	X(heap_daemon_group_new, fl_heap_daemon_group_new(&d->group))                            \
	X(heap_daemon_group_free, fl_heap_daemon_group_free(1))                                  \
	X(heap_daemon_get_usage, fl_heap_daemon_get_usage("system", &d->usage))                  \
	X(heap_daemon_buffer_free, fl_heap_daemon_buffer_free(d->memfd))                         \
	X(introspect_get_daemon_pid, fl_introspect_get_daemon_pid(&d->pid))                      \
	X(introspect_dump, fl_introspect_dump(0, &d->out_fd))

/* On fds a daemon made, for after it died. */
#define FD_CALLS(X)                                                                       \
	X(timeline_fd_inc, fl_timeline_fd_inc(d->tl, 1))                                  \
	X(timeline_fd_fail_pending, fl_timeline_fd_fail_pending(d->tl, -EIO))             \
	X(timeline_fd_get_value, fl_timeline_fd_get_value(d->tl, &d->value))              \
	X(fence_fd_create, fl_fence_fd_create(d->tl, 5, "f", &d->out_fd))                 \
	X(fence_fd_merge, fl_fence_fd_merge(d->fence, d->fence, "m", 0, &d->out_fd))      \
	X(fence_fd_get_info, fl_fence_fd_get_info(d->fence, &d->info, NULL, 0))           \
	X(fence_fd_get_info_flags,                                                        \
	  fl_fence_fd_get_info_flags(d->fence, FL_INFO_NO_TIMESTAMPS, &d->info, NULL, 0)) \
	X(fence_fd_set_deadline, fl_fence_fd_set_deadline(d->fence, 1))                   \
	X(fence_fd_get_deadline, fl_fence_fd_get_deadline(d->fence, &d->value))           \
	X(fence_fd_get_status, fl_fence_fd_get_status(d->fence))                          \
	X(fence_fd_wait, fl_fence_fd_wait(d->fence, 0))                                   \
	X(fence_fd_wait_flags, fl_fence_fd_wait_flags(d->fence, 0, FL_WAIT_DEADLOCK_ERROR))

struct daemon_call {
	const char *expr;
	long long (*call)(struct daemon_fx *d);
};

#define DEFINE_DAEMON_CALL(name, expr)                           \
	static long long daemon_call_##name(struct daemon_fx *d) \
	{                                                        \
		return (long long)(expr);                        \
	}
#define DAEMON_CALL_ROW(name, expr) { #expr, daemon_call_##name },
CONNECTING_CALLS(DEFINE_DAEMON_CALL)
FD_CALLS(DEFINE_DAEMON_CALL)
static const struct daemon_call connecting_calls[] = { CONNECTING_CALLS(DAEMON_CALL_ROW) };
static const struct daemon_call fd_calls[] = { FD_CALLS(DAEMON_CALL_ROW) };

/*
 * Runs @calls; fails unless each result is in its function's contract and
 * the first call (the scenario's probe) returned one of @want (0-ended).
 */
static void run_calls(const char *scenario, const struct daemon_call *calls, size_t n, int tl,
		      int fence, const int *want)
{
	struct daemon_fx d = { .tl = tl, .fence = fence };
	int bad = 0;

	d.memfd = memfd_create("not-a-daemon-buffer", MFD_CLOEXEC);
	fl_assert_int_ge(d.memfd, 0);
	for (size_t i = 0; i < n; i++) {
		char function[64];
		bool wanted = i > 0;
		long long r;

		d.out_fd = -1;
		r = calls[i].call(&d);
		if (d.out_fd >= 0)
			close(d.out_fd);
		function_of_row(calls[i].expr, function, sizeof(function));
		if (!result_allowed(function, r, scenario))
			bad++;
		for (const int *w = want; *w && !wanted; w++)
			wanted = r == -*w;
		if (!wanted) {
			fprintf(stderr, "%s: %s returned %lld, not the scenario's code\n", scenario,
				function, r);
			bad++;
		}
	}
	close(d.memfd); /* no daemon took it: every call failed */
	fl_assert_int_eq(bad, 0);
}

enum fake { FAKE_SILENT, FAKE_HANG_UP, FAKE_JUNK };

struct fake_daemon {
	int listener;
	enum fake kind;
};

/* Serves connections on the listener until the child exits. */
static void *fake_daemon_main(void *arg)
{
	struct fake_daemon *d = arg;

	for (;;) {
		char buf[256];
		int c = accept4(d->listener, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0)
			continue;
		if (d->kind == FAKE_JUNK && read(c, buf, sizeof(buf)) > 0) {
			/* Shorter than any header: no reply the protocol allows. */
			(void)!write(c, "xyz", 3);
			/* Kept open: a hang-up would be -ECONNRESET instead. */
			continue;
		}
		close(c);
	}
	return NULL;
}

/*
 * A fresh directory for a socket, in the test's runtime directory, which
 * the runner removes even when the test fails before removing its own.
 */
static void make_socket_dir(char *dir, size_t dir_cap, char *path, size_t path_cap)
{
	const char *base = getenv("XDG_RUNTIME_DIR");

	snprintf(dir, dir_cap, "%s/api-errors-XXXXXX", base ? base : "/tmp");
	fl_assert(mkdtemp(dir) != NULL);
	snprintf(path, path_cap, "%s/fl.sock", dir);
	fl_assert(strlen(path) < sizeof(((struct sockaddr_un *)0)->sun_path));
}

/* @path, the library's lock file beside it, and @dir. */
static void remove_socket_dir(const char *dir, const char *path)
{
	char lock[160];

	snprintf(lock, sizeof(lock), "%s.lock", path);
	unlink(path);
	unlink(lock);
	fl_assert_int_eq(rmdir(dir), 0);
}

/* In a child: point the library at @path, which no real daemon may serve. */
static void use_socket(const char *path)
{
	setenv("FENCELINE_SOCKET", path, 1);
	setenv("FENCELINE_DAEMON", "/nonexistent/fencelined", 1);
	setenv("FENCELINE_REQUEST_TIMEOUT_MS", "200", 1);
	fl_assert_int_eq(fl_mode_set(FL_MODE_DAEMON), 0);
}

static void fake_daemon_scenario(const char *scenario, int kind, const int *want)
{
	pid_t pid = fork();
	int status;

	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		char dir[80], path[128];
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		struct fake_daemon d = { -1, (enum fake)kind };
		pthread_t t;

		make_socket_dir(dir, sizeof(dir), path, sizeof(path));
		if (kind >= 0) {
			d.listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
			fl_assert_int_ge(d.listener, 0);
			memcpy(a.sun_path, path, strlen(path) + 1); /* fits: make_socket_dir() */
			fl_assert_int_eq(bind(d.listener, (struct sockaddr *)&a, sizeof(a)), 0);
			fl_assert_int_eq(listen(d.listener, 16), 0);
			if (kind != FAKE_SILENT)
				fl_assert_int_eq(pthread_create(&t, NULL, fake_daemon_main, &d), 0);
		}
		use_socket(path);
		run_calls(scenario, connecting_calls,
			  sizeof(connecting_calls) / sizeof(connecting_calls[0]), -1, -1, want);
		remove_socket_dir(dir, path);
		_exit(0);
	}
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Under valgrind each attempt to start a daemon forks the whole tool (about
 * 4 s here): the scenarios that start one would need minutes. They check
 * codes, not memory, and the native runs check them.
 */
static void skip_daemon_starts_under_valgrind(void)
{
	if (getenv("FL_TEST_UNDER_VALGRIND"))
		fl_test_skip("starts daemons, minutes under valgrind; run natively");
}

FL_TEST(daemon_errors_without_a_daemon_are_listed)
{
	static const int refused[] = { ECONNREFUSED, 0 };

	skip_daemon_starts_under_valgrind();

	fake_daemon_scenario("no daemon", -1, refused);
}

FL_TEST(daemon_errors_of_a_silent_daemon_are_listed)
{
	static const int timed_out[] = { ETIMEDOUT, 0 };

	fake_daemon_scenario("silent daemon", FAKE_SILENT, timed_out);
}

FL_TEST(daemon_errors_of_a_daemon_hanging_up_are_listed)
{
	static const int hung_up[] = { ECONNREFUSED, ECONNRESET, 0 };

	skip_daemon_starts_under_valgrind();

	fake_daemon_scenario("daemon hanging up", FAKE_HANG_UP, hung_up);
}

FL_TEST(daemon_errors_of_a_daemon_answering_junk_are_listed)
{
	static const int junk[] = { EPROTO, 0 };

	fake_daemon_scenario("daemon answering junk", FAKE_JUNK, junk);
}

FL_TEST(daemon_errors_of_a_socket_path_too_long_are_listed)
{
	static const int too_long[] = { ENAMETOOLONG, 0 };
	pid_t pid = fork();
	int status;

	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		char path[200];

		memset(path, 'x', sizeof(path) - 1);
		path[0] = '/';
		path[sizeof(path) - 1] = '\0';
		use_socket(path);
		run_calls("socket path too long", connecting_calls,
			  sizeof(connecting_calls) / sizeof(connecting_calls[0]), -1, -1, too_long);
		_exit(0);
	}
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A daemon of its own (started by the library on a private socket) makes a
 * timeline and a fence, then dies: the calls on their fds say so.
 */
FL_TEST(daemon_errors_after_the_daemon_died_are_listed)
{
	static const int reset[] = { ECONNRESET, 0 };
	pid_t pid;
	int status;

	skip_daemon_starts_under_valgrind();
	pid = fork();

	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		char dir[80], path[128];
		int tl, fence, daemon;

		make_socket_dir(dir, sizeof(dir), path, sizeof(path));
		setenv("FENCELINE_SOCKET", path, 1);
		fl_assert_int_eq(fl_mode_set(FL_MODE_DAEMON), 0);
		fl_assert_int_eq(fl_timeline_fd_create("doomed", 0, &tl), 0);
		fl_assert_int_eq(fl_fence_fd_create(tl, 1, "doomed", &fence), 0);
		daemon = fl_daemon_connect();
		fl_assert_int_ge(daemon, 1);
		fl_assert_int_eq(kill(daemon, SIGKILL), 0);
		/* Not our child: gone once signal 0 finds nobody (no timing assumed). */
		while (kill(daemon, 0) == 0)
			usleep(1000);
		/* And no new daemon for the next calls to find. */
		setenv("FENCELINE_DAEMON", "/nonexistent/fencelined", 1);
		run_calls("daemon died", fd_calls, sizeof(fd_calls) / sizeof(fd_calls[0]), tl,
			  fence, reset);
		close(fence);
		close(tl);
		remove_socket_dir(dir, path);
		_exit(0);
	}
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A wait that asked to fail on a deadlock, on a timeline only its own thread can signal. */
FL_TEST_TIMEOUT(daemon_error_of_a_deadlocked_wait_is_listed, 120)
{
	int tl, fence;
	long long r;

	fl_assert_int_eq(fl_mode_set(FL_MODE_DAEMON), 0);
	fl_assert_int_eq(fl_timeline_fd_create("self", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "self", &fence), 0);
	/* Bounded, so that a detector that missed it fails the test with -ETIME. */
	r = fl_fence_fd_wait_flags(fence, 20000, FL_WAIT_DEADLOCK_ERROR);
	fl_assert(result_allowed("fl_fence_fd_wait_flags", r, "deadlocked wait"));
	fl_assert_int_eq(r, -EDEADLK);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	close(fence);
	close(tl);
}

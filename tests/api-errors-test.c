/* SPDX-License-Identifier: MIT */
/*
 * Every public fl_* function called with bad arguments: each must return
 * the negative errno its header documents, from the fixed vocabulary of
 * include/fenceline/fenceline.h, leave its ret_* outputs untouched, and not
 * crash. One table, so a new function is one more row.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

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
	uint64_t mem[2]; /* a counter's memory, never attached */

	/* outputs */
	struct fl_timeline *out_tl;
	struct fl_fence *out_fence;
	struct fl_heap *out_heap;
	struct fl_heap_table *out_table;
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

#define API_ERROR_CASES(X)                                                                        \
	/* timeline.h */                                                                          \
	X(timeline_ref_null, 0, IS_NULL(fl_timeline_ref(NULL)))                                   \
	X(timeline_unref_null, 0, IS_NULL(fl_timeline_unref(NULL)))                               \
	X(timeline_kill_null, 0, (fl_timeline_kill(NULL), 0))                                     \
	X(timeline_destroy_null, 0, (fl_timeline_destroy(NULL), 0))                               \
	X(timeline_signal_null, -EINVAL, fl_timeline_signal(NULL))                                \
	X(timeline_get_name_null, 0, IS_EMPTY(fl_timeline_get_name(NULL)))                        \
	X(timeline_get_driver_name_null, 0, IS_EMPTY(fl_timeline_get_driver_name(NULL)))          \
	X(timeline_get_id_null, 0, (long long)fl_timeline_get_id(NULL))                           \
	X(timeline_is_alive_null, -EINVAL, fl_timeline_is_alive(NULL))                            \
	X(timeline_get_pending_count_null, -EINVAL, fl_timeline_get_pending_count(NULL))          \
	X(timeline_get_value_str_null_tl, -EINVAL,                                                \
	  fl_timeline_get_value_str(NULL, fx->buf, sizeof(fx->buf)))                              \
	X(timeline_get_value_str_null_buf, -EINVAL,                                               \
	  fl_timeline_get_value_str(fx->tl, NULL, sizeof(fx->buf)))                               \
	X(timeline_get_value_str_zero_size, -EINVAL,                                              \
	  fl_timeline_get_value_str(fx->tl, fx->buf, 0))                                          \
	X(timeline_export_fd_null_tl, -EINVAL, fl_timeline_export_fd(NULL, &fx->out_fd))          \
	X(timeline_export_fd_null_ret, -EINVAL, fl_timeline_export_fd(fx->tl, NULL))              \
	X(timeline_from_fd_minus_1, -EBADF, fl_timeline_from_fd(-1, &fx->out_tl))                 \
	X(timeline_from_fd_closed, -EBADF, fl_timeline_from_fd(fx->closed_fd, &fx->out_tl))       \
	X(timeline_from_fd_file, -ENOTTY, fl_timeline_from_fd(fx->file_fd, &fx->out_tl))          \
	X(timeline_from_fd_pipe, -ENOTTY, fl_timeline_from_fd(fx->pipe_fd, &fx->out_tl))          \
	X(timeline_from_fd_fence_fd, -ENOTTY, fl_timeline_from_fd(fx->fence_fd, &fx->out_tl))     \
	X(timeline_from_fd_null_ret, -EINVAL, fl_timeline_from_fd(fx->timeline_fd, NULL))         \
	/* fence.h */                                                                             \
	X(fence_ref_null, 0, IS_NULL(fl_fence_ref(NULL)))                                         \
	X(fence_unref_null, 0, IS_NULL(fl_fence_unref(NULL)))                                     \
	X(fence_merge_null_a, -EINVAL, fl_fence_merge(NULL, fx->fence, "m", 0, &fx->out_fence))   \
	X(fence_merge_null_b, -EINVAL, fl_fence_merge(fx->fence, NULL, "m", 0, &fx->out_fence))   \
	X(fence_merge_null_ret, -EINVAL, fl_fence_merge(fx->fence, fx->other, "m", 0, NULL))      \
	X(fence_merge_unknown_flag, -EINVAL,                                                      \
	  fl_fence_merge(fx->fence, fx->other, "m", 1u << 2, &fx->out_fence))                     \
	X(fence_merge_high_flag, -EINVAL,                                                         \
	  fl_fence_merge(fx->fence, fx->other, "m", 1u << 31, &fx->out_fence))                    \
	X(fence_set_deadline_null, -EINVAL, fl_fence_set_deadline(NULL, 1))                       \
	X(fence_get_deadline_null, -EINVAL, fl_fence_get_deadline(NULL, &fx->out_value))          \
	X(fence_get_deadline_null_ret, -EINVAL, fl_fence_get_deadline(fx->fence, NULL))           \
	X(fence_get_deadline_none_set, -ENOENT, fl_fence_get_deadline(fx->fence, &fx->out_value)) \
	X(fence_get_status_null, -EINVAL, fl_fence_get_status(NULL))                              \
	X(fence_wait_null, -EINVAL, fl_fence_wait(NULL, 0))                                       \
	X(fence_wait_null_forever, -EINVAL, fl_fence_wait(NULL, -1))                              \
	X(fence_add_callback_null_fence, -EINVAL,                                                 \
	  fl_fence_add_callback(NULL, &fx->cb, never_called))                                     \
	X(fence_add_callback_null_cb, -EINVAL,                                                    \
	  fl_fence_add_callback(fx->fence, NULL, never_called))                                   \
	X(fence_add_callback_null_func, -EINVAL, fl_fence_add_callback(fx->fence, &fx->cb, NULL)) \
	X(fence_add_callback_signaled, -ENOENT,                                                   \
	  fl_fence_add_callback(fx->done, &fx->cb, never_called))                                 \
	X(fence_remove_callback_null_fence, -EINVAL, fl_fence_remove_callback(NULL, &fx->cb))     \
	X(fence_remove_callback_null_cb, -EINVAL, fl_fence_remove_callback(fx->fence, NULL))      \
	X(fence_remove_callback_never_queued, 0, fl_fence_remove_callback(fx->fence, &fx->cb))    \
	X(fence_remove_callback_other_fence, -EINVAL,                                             \
	  fl_fence_remove_callback(fx->fence, &fx->queued_cb))                                    \
	X(fence_get_name_null, 0, IS_EMPTY(fl_fence_get_name(NULL)))                              \
	X(fence_get_num_points_null, -EINVAL, fl_fence_get_num_points(NULL))                      \
	X(fence_get_info_null, -EINVAL, fl_fence_get_info(NULL, &fx->info, NULL, 0))              \
	X(fence_get_info_null_points, -EINVAL, fl_fence_get_info(fx->fence, &fx->info, NULL, 4))  \
	X(fence_get_point_driver_data_null, -EINVAL,                                              \
	  fl_fence_get_point_driver_data(NULL, 0, fx->buf, sizeof(fx->buf)))                      \
	X(fence_get_point_driver_data_index_out_of_range, -EINVAL,                                \
	  fl_fence_get_point_driver_data(fx->fence, 1, fx->buf, sizeof(fx->buf)))                 \
	X(fence_get_point_driver_data_huge_index, -EINVAL,                                        \
	  fl_fence_get_point_driver_data(fx->fence, UINT32_MAX, fx->buf, sizeof(fx->buf)))        \
	X(fence_get_point_driver_data_null_buf, -EINVAL,                                          \
	  fl_fence_get_point_driver_data(fx->fence, 0, NULL, 4))                                  \
	X(fence_get_point_driver_data_short_buf, -ENOMEM,                                         \
	  fl_fence_get_point_driver_data(fx->fence, 0, fx->buf, 1))                               \
	X(fence_export_fd_null_fence, -EINVAL, fl_fence_export_fd(NULL, &fx->out_fd))             \
	X(fence_export_fd_null_ret, -EINVAL, fl_fence_export_fd(fx->fence, NULL))                 \
	X(fence_get_fd_null, -EINVAL, fl_fence_get_fd(NULL))                                      \
	X(fence_from_fd_minus_1, -EBADF, fl_fence_from_fd(-1, &fx->out_fence))                    \
	X(fence_from_fd_closed, -EBADF, fl_fence_from_fd(fx->closed_fd, &fx->out_fence))          \
	X(fence_from_fd_file, -ENOTTY, fl_fence_from_fd(fx->file_fd, &fx->out_fence))             \
	X(fence_from_fd_pipe, -ENOTTY, fl_fence_from_fd(fx->pipe_fd, &fx->out_fence))             \
	X(fence_from_fd_timeline_fd, -ENOTTY, fl_fence_from_fd(fx->timeline_fd, &fx->out_fence))  \
	X(fence_from_fd_null_ret, -EINVAL, fl_fence_from_fd(fx->fence_fd, NULL))                  \
	X(fence_fd_get_status_minus_1, -EBADF, fl_fence_fd_get_status(-1))                        \
	X(fence_fd_get_status_closed, -EBADF, fl_fence_fd_get_status(fx->closed_fd))              \
	X(fence_fd_get_status_file, -ENOTTY, fl_fence_fd_get_status(fx->file_fd))                 \
	X(fence_fd_get_status_pipe, -ENOTTY, fl_fence_fd_get_status(fx->pipe_fd))                 \
	X(fence_fd_wait_minus_1, -EBADF, fl_fence_fd_wait(-1, 0))                                 \
	X(fence_fd_wait_closed, -EBADF, fl_fence_fd_wait(fx->closed_fd, 0))                       \
	X(fence_fd_wait_file, -ENOTTY, fl_fence_fd_wait(fx->file_fd, 0))                          \
	X(fence_fd_wait_pipe, -ENOTTY, fl_fence_fd_wait(fx->pipe_fd, 0))                          \
	X(fence_fd_wait_closed_forever, -EBADF, fl_fence_fd_wait(fx->closed_fd, -1))              \
	X(fence_fd_wait_flags_unknown, -EINVAL, fl_fence_fd_wait_flags(fx->fence_fd, 0, 2))       \
	X(fence_fd_wait_flags_file, -ENOTTY,                                                      \
	  fl_fence_fd_wait_flags(fx->file_fd, -1, FL_WAIT_DEADLOCK_ERROR))                        \
	X(fence_fd_wait_begin_null, -EINVAL, fl_fence_fd_wait_begin(fx->fence_fd, -1, 0, NULL))   \
	X(fence_fd_wait_begin_unknown_flag, -EINVAL,                                              \
	  fl_fence_fd_wait_begin(fx->fence_fd, -1, 2, &fx->wait))                                 \
	X(fence_fd_wait_begin_minus_1_reports_nothing, 0,                                         \
	  fl_fence_fd_wait_begin(-1, -1, 0, &fx->wait) || fx->wait.token ||                       \
		  fx->wait.notify_fd != -1)                                                       \
	X(fence_fd_wait_notified_null, -EINVAL, fl_fence_fd_wait_notified(NULL))                  \
	X(fence_fd_wait_end_null, 0, (fl_fence_fd_wait_end(NULL, 1), 0))                          \
	/* shared.h */                                                                            \
	X(mode_set_unknown, -EINVAL, fl_mode_set((enum fl_mode)7))                                \
	X(mode_get_is_a_mode, 1,                                                                  \
	  fl_mode_get() == FL_MODE_DAEMON || fl_mode_get() == FL_MODE_IN_PROCESS)                 \
	X(timeline_fd_create_unknown_flag, -EINVAL,                                               \
	  fl_timeline_fd_create("x", 1u << 1, &fx->out_fd))                                       \
	X(timeline_fd_create_null_ret, -EINVAL, fl_timeline_fd_create("x", 0, NULL))              \
	X(timeline_fd_inc_minus_1, -EBADF, fl_timeline_fd_inc(-1, 1))                             \
	X(timeline_fd_inc_closed, -EBADF, fl_timeline_fd_inc(fx->closed_fd, 1))                   \
	X(timeline_fd_inc_file, -ENOTTY, fl_timeline_fd_inc(fx->file_fd, 1))                      \
	X(timeline_fd_inc_pipe, -ENOTTY, fl_timeline_fd_inc(fx->pipe_fd, 1))                      \
	X(timeline_fd_inc_fence_fd, -ENOTTY, fl_timeline_fd_inc(fx->fence_fd, 1))                 \
	X(timeline_fd_get_value_null_ret, -EINVAL,                                                \
	  fl_timeline_fd_get_value(fx->timeline_fd, NULL))                                        \
	X(timeline_fd_get_value_minus_1, -EBADF, fl_timeline_fd_get_value(-1, &fx->out_value))    \
	X(timeline_fd_get_value_file, -ENOTTY,                                                    \
	  fl_timeline_fd_get_value(fx->file_fd, &fx->out_value))                                  \
	X(timeline_fd_get_value_fence_fd, -ENOTTY,                                                \
	  fl_timeline_fd_get_value(fx->fence_fd, &fx->out_value))                                 \
	X(fence_fd_create_minus_1, -EBADF, fl_fence_fd_create(-1, 1, "f", &fx->out_fd))           \
	X(fence_fd_create_closed, -EBADF, fl_fence_fd_create(fx->closed_fd, 1, "f", &fx->out_fd)) \
	X(fence_fd_create_file, -ENOTTY, fl_fence_fd_create(fx->file_fd, 1, "f", &fx->out_fd))    \
	X(fence_fd_create_fence_fd, -ENOTTY,                                                      \
	  fl_fence_fd_create(fx->fence_fd, 1, "f", &fx->out_fd))                                  \
	X(fence_fd_create_null_ret, -EINVAL, fl_fence_fd_create(fx->timeline_fd, 1, "f", NULL))   \
	X(fence_fd_merge_minus_1, -EBADF,                                                         \
	  fl_fence_fd_merge(-1, fx->fence_fd, "m", 0, &fx->out_fd))                               \
	X(fence_fd_merge_file, -ENOTTY,                                                           \
	  fl_fence_fd_merge(fx->file_fd, fx->fence_fd, "m", 0, &fx->out_fd))                      \
	X(fence_fd_merge_timeline_fd, -ENOTTY,                                                    \
	  fl_fence_fd_merge(fx->timeline_fd, fx->fence_fd, "m", 0, &fx->out_fd))                  \
	X(fence_fd_merge_fd2_file, -ENOENT,                                                       \
	  fl_fence_fd_merge(fx->fence_fd, fx->file_fd, "m", 0, &fx->out_fd))                      \
	X(fence_fd_merge_fd2_minus_1, -ENOENT,                                                    \
	  fl_fence_fd_merge(fx->fence_fd, -1, "m", 0, &fx->out_fd))                               \
	X(fence_fd_merge_unknown_flag, -EINVAL,                                                   \
	  fl_fence_fd_merge(fx->fence_fd, fx->fence_fd, "m", 1u << 2, &fx->out_fd))               \
	X(fence_fd_merge_null_ret, -EINVAL,                                                       \
	  fl_fence_fd_merge(fx->fence_fd, fx->fence_fd, "m", 0, NULL))                            \
	X(fence_fd_get_info_minus_1, -EBADF, fl_fence_fd_get_info(-1, &fx->info, NULL, 0))        \
	X(fence_fd_get_info_file, -ENOTTY, fl_fence_fd_get_info(fx->file_fd, &fx->info, NULL, 0)) \
	X(fence_fd_get_info_timeline_fd, -ENOTTY,                                                 \
	  fl_fence_fd_get_info(fx->timeline_fd, &fx->info, NULL, 0))                              \
	X(fence_fd_get_info_null_points, -EINVAL,                                                 \
	  fl_fence_fd_get_info(fx->fence_fd, &fx->info, NULL, 4))                                 \
	X(timeline_fd_close_minus_1, -EBADF, fl_timeline_fd_close(-1))                            \
	X(timeline_fd_close_closed, -EBADF, fl_timeline_fd_close(fx->closed_fd))                  \
	X(fence_fd_import_minus_1, -EBADF, fl_fence_fd_import(-1, "x", &fx->out_fd))              \
	X(fence_fd_import_file, -EINVAL, fl_fence_fd_import(fx->file_fd, "x", &fx->out_fd))       \
	X(fence_fd_import_fence_fd, -EINVAL, fl_fence_fd_import(fx->fence_fd, "x", &fx->out_fd))  \
	X(fence_fd_import_null_ret, -EINVAL, fl_fence_fd_import(fx->pipe_fd, "x", NULL))          \
	X(fence_fd_set_deadline_minus_1, -EBADF, fl_fence_fd_set_deadline(-1, 1))                 \
	X(fence_fd_set_deadline_file, -ENOTTY, fl_fence_fd_set_deadline(fx->file_fd, 1))          \
	X(fence_fd_set_deadline_timeline_fd, -ENOTTY,                                             \
	  fl_fence_fd_set_deadline(fx->timeline_fd, 1))                                           \
	X(fence_fd_get_deadline_minus_1, -EBADF, fl_fence_fd_get_deadline(-1, &fx->out_value))    \
	X(fence_fd_get_deadline_file, -ENOTTY,                                                    \
	  fl_fence_fd_get_deadline(fx->file_fd, &fx->out_value))                                  \
	X(fence_fd_get_deadline_null_ret, -EINVAL, fl_fence_fd_get_deadline(fx->fence_fd, NULL))  \
	X(fence_fd_get_deadline_none_set, -ENOENT,                                                \
	  fl_fence_fd_get_deadline(fx->fence_fd, &fx->out_value))                                 \
	X(daemon_connect_answers, 1, fl_daemon_connect() > 0)                                     \
	X(daemon_flush_returns, 0, (fl_daemon_flush(), 0))                                        \
	X(daemon_disconnect_returns, 0, (fl_daemon_disconnect(), 0))                              \
	/* sync_file.h */                                                                         \
	X(sync_file_import_minus_1, -EBADF, fl_sync_file_import(-1, "x", &fx->out_fence))         \
	X(sync_file_import_closed, -EBADF,                                                        \
	  fl_sync_file_import(fx->closed_fd, "x", &fx->out_fence))                                \
	X(sync_file_import_file, -EINVAL, fl_sync_file_import(fx->file_fd, "x", &fx->out_fence))  \
	X(sync_file_import_pipe, -EINVAL, fl_sync_file_import(fx->pipe_fd, "x", &fx->out_fence))  \
	X(sync_file_import_fence_fd, -EINVAL,                                                     \
	  fl_sync_file_import(fx->fence_fd, "x", &fx->out_fence))                                 \
	X(sync_file_import_null_ret, -EINVAL, fl_sync_file_import(fx->pipe_fd, "x", NULL))        \
	/* sw_sync.h */                                                                           \
	X(sw_sync_timeline_create_unknown_flag, -EINVAL,                                          \
	  fl_sw_sync_timeline_create("x", 1u << 1, &fx->out_tl))                                  \
	X(sw_sync_timeline_create_null_ret, -EINVAL, fl_sw_sync_timeline_create("x", 0, NULL))    \
	X(sw_sync_timeline_inc_null, -EINVAL, fl_sw_sync_timeline_inc(NULL, 1))                   \
	X(sw_sync_timeline_inc_not_sw_sync, -EINVAL, fl_sw_sync_timeline_inc(fx->mock->tl, 1))    \
	X(sw_sync_fence_create_null_tl, -EINVAL,                                                  \
	  fl_sw_sync_fence_create(NULL, 1, "f", &fx->out_fence))                                  \
	X(sw_sync_fence_create_not_sw_sync, -EINVAL,                                              \
	  fl_sw_sync_fence_create(fx->mock->tl, 1, "f", &fx->out_fence))                          \
	X(sw_sync_fence_create_null_ret, -EINVAL, fl_sw_sync_fence_create(fx->tl, 1, "f", NULL))  \
	X(sw_sync_timeline_get_value_null_tl, -EINVAL,                                            \
	  fl_sw_sync_timeline_get_value(NULL, &fx->out_value))                                    \
	X(sw_sync_timeline_get_value_null_ret, -EINVAL,                                           \
	  fl_sw_sync_timeline_get_value(fx->tl, NULL))                                            \
	X(sw_sync_timeline_get_value_not_sw_sync, -EINVAL,                                        \
	  fl_sw_sync_timeline_get_value(fx->mock->tl, &fx->out_value))                            \
	X(timeline_is_sw_sync_null, 0, fl_timeline_is_sw_sync(NULL))                              \
	X(sw_sync_timeline_attach_counter_null_tl, -EINVAL,                                       \
	  fl_sw_sync_timeline_attach_counter(NULL, fx->mem, sizeof(fx->mem), &fx->mem[0]))        \
	X(sw_sync_timeline_attach_counter_not_sw_sync, -EINVAL,                                   \
	  fl_sw_sync_timeline_attach_counter(fx->mock->tl, fx->mem, 16, &fx->mem[0]))             \
	X(sw_sync_timeline_attach_counter_null_map, -EINVAL,                                      \
	  fl_sw_sync_timeline_attach_counter(fx->tl, NULL, sizeof(fx->mem), &fx->mem[0]))         \
	X(sw_sync_timeline_attach_counter_outside_map, -EINVAL,                                   \
	  fl_sw_sync_timeline_attach_counter(fx->tl, fx->mem, sizeof(fx->mem[0]), &fx->mem[1]))   \
	X(sw_sync_timeline_attach_counter_misaligned, -EINVAL,                                    \
	  fl_sw_sync_timeline_attach_counter(fx->tl, fx->mem, sizeof(fx->mem),                    \
					     (uint64_t *)((uintptr_t)fx->mem + 1)))               \
	X(sw_sync_timeline_catch_up_null, -EINVAL, fl_sw_sync_timeline_catch_up(NULL))            \
	X(sw_sync_timeline_catch_up_not_sw_sync, -EINVAL,                                         \
	  fl_sw_sync_timeline_catch_up(fx->mock->tl))                                             \
	X(sw_sync_timeline_catch_up_without_counter, 0, fl_sw_sync_timeline_catch_up(fx->tl))     \
	/* transfer.h */                                                                          \
	X(send_negative_sock, -EBADF, fl_send(-1, fx->buf, 1, NULL, 0))                           \
	X(send_closed_sock, -EBADF, fl_send(fx->closed_fd, fx->buf, 1, NULL, 0))                  \
	X(send_null_payload, -EINVAL, fl_send(fx->fence_fd, NULL, 4, NULL, 0))                    \
	X(send_null_fds, -EINVAL, fl_send(fx->fence_fd, fx->buf, 1, NULL, 1))                     \
	X(send_too_many_fds, -EINVAL, fl_send(fx->fence_fd, fx->buf, 1, &fx->fence_fd, 29))       \
	X(send_payload_too_long, -EINVAL, fl_send(fx->fence_fd, fx->buf, 65537, NULL, 0))         \
	X(recv_negative_sock, -EBADF, fl_recv(-1, fx->buf, 1, &fx->out_len, NULL, 0, NULL))       \
	X(recv_closed_sock, -EBADF,                                                               \
	  fl_recv(fx->closed_fd, fx->buf, 1, &fx->out_len, NULL, 0, NULL))                        \
	X(recv_null_payload, -EINVAL, fl_recv(fx->fence_fd, NULL, 4, NULL, NULL, 0, NULL))        \
	X(recv_null_fds, -EINVAL, fl_recv(fx->fence_fd, fx->buf, 1, NULL, NULL, 1, NULL))         \
	X(fence_send_negative_sock, -EBADF, fl_fence_send(-1, fx->fence, NULL, 0))                \
	X(fence_send_null_fence, -EINVAL, fl_fence_send(fx->fence_fd, NULL, NULL, 0))             \
	X(fence_send_null_payload, -EINVAL, fl_fence_send(fx->fence_fd, fx->fence, NULL, 1))      \
	X(fence_recv_negative_sock, -EBADF, fl_fence_recv(-1, &fx->out_fd, NULL, 0, NULL))        \
	X(fence_recv_null_ret, -EINVAL, fl_fence_recv(fx->fence_fd, NULL, NULL, 0, &fx->out_len)) \
	X(timeline_send_negative_sock, -EBADF, fl_timeline_send(-1, fx->tl, NULL, 0))             \
	X(timeline_send_null_tl, -EINVAL, fl_timeline_send(fx->fence_fd, NULL, NULL, 0))          \
	X(timeline_recv_negative_sock, -EBADF,                                                    \
	  fl_timeline_recv(-1, &fx->out_fd, NULL, 0, &fx->out_len))                               \
	X(timeline_recv_null_ret, -EINVAL,                                                        \
	  fl_timeline_recv(fx->fence_fd, NULL, NULL, 0, &fx->out_len))                            \
	/* heap.h */                                                                              \
	X(heap_open_system_null_ret, -EINVAL, fl_heap_open_system("h", NULL))                     \
	X(heap_open_carveout_zero_size, -EINVAL, fl_heap_open_carveout("h", 0, &fx->out_heap))    \
	X(heap_close_null, 0, (fl_heap_close(NULL), 0))                                           \
	X(heap_alloc_null_heap, -EINVAL, fl_heap_alloc(NULL, 4096, 0, &fx->out_fd))               \
	X(heap_buffer_free_null_heap, -EINVAL, fl_heap_buffer_free(NULL, fx->pipe_fd))            \
	X(heap_free_null_heap, -EINVAL, fl_heap_free(NULL, fx->pipe_fd))                          \
	X(heap_get_info_null_heap, -EINVAL, fl_heap_get_info(NULL, &fx->heap_info))               \
	X(heap_print_null_heap, -EINVAL, fl_heap_print(NULL, stderr))                             \
	/* heap-daemon.h: refused before any request */                                           \
	X(heap_daemon_alloc_null_heap, -EINVAL, fl_heap_daemon_alloc(NULL, 4096, 0, &fx->out_fd)) \
	X(heap_daemon_alloc_group_null_ret, -EINVAL,                                              \
	  fl_heap_daemon_alloc_group("system", 4096, 0, 0, NULL))                                 \
	X(heap_daemon_free_negative_fd, -EBADF, fl_heap_daemon_free(-1))                          \
	X(heap_daemon_free_closed_fd, -EBADF, fl_heap_daemon_free(fx->closed_fd))                 \
	X(heap_daemon_group_new_null, -EINVAL, fl_heap_daemon_group_new(NULL))                    \
	X(heap_daemon_free_group_zero, -EINVAL, fl_heap_daemon_free_group(0))                     \
	X(heap_daemon_get_usage_null, -EINVAL, fl_heap_daemon_get_usage(NULL, NULL))              \
	X(heap_print_json_null_heap, -EINVAL, fl_heap_print_json(NULL, stderr))                   \
	X(heap_open_system_contig_null_ret, -EINVAL, fl_heap_open_system_contig("h", NULL))       \
	X(heap_open_dma_heap_slash, -EINVAL, fl_heap_open_dma_heap("../x", &fx->out_heap))        \
	X(heap_open_dma_heap_null_name, -EINVAL, fl_heap_open_dma_heap(NULL, &fx->out_heap))      \
	X(heap_for_each_dma_heap_null_fn, -EINVAL, fl_heap_for_each_dma_heap(NULL, NULL))         \
	X(heap_buffer_get_flags_null_heap, -EINVAL,                                               \
	  fl_heap_buffer_get_flags(NULL, fx->pipe_fd, (unsigned int *)&fx->out_fd))               \
	X(heap_set_pool_max_null_heap, -EINVAL, fl_heap_set_pool_max(NULL, 1))                    \
	X(heap_buffer_begin_cpu_access_no_dir, -EINVAL,                                           \
	  fl_heap_buffer_begin_cpu_access(fx->file_fd, 0))                                        \
	X(heap_buffer_begin_cpu_access_closed_fd, -EBADF,                                         \
	  fl_heap_buffer_begin_cpu_access(fx->closed_fd, FL_HEAP_SYNC_READ))                      \
	X(heap_buffer_end_cpu_access_bad_dir, -EINVAL,                                            \
	  fl_heap_buffer_end_cpu_access(fx->file_fd, 4))                                          \
	X(heap_buffer_end_cpu_access_pipe, -ENOTTY,                                               \
	  fl_heap_buffer_end_cpu_access(fx->pipe_fd, FL_HEAP_SYNC_RW))                            \
	/* heap-table.h */                                                                        \
	X(heap_table_load_string_null_ret, -EINVAL,                                               \
	  fl_heap_table_load_string("", 0, NULL, NULL, NULL, 0))                                  \
	X(heap_table_load_string_null_text, -EINVAL,                                              \
	  fl_heap_table_load_string(NULL, 1, NULL, &fx->out_table, NULL, 0))                      \
	X(heap_table_load_file_null_path, -EINVAL,                                                \
	  fl_heap_table_load_file(NULL, &fx->out_table, NULL, 0))                                 \
	X(heap_table_load_default_null_ret, -EINVAL, fl_heap_table_load_default(NULL, NULL, 0))   \
	X(heap_table_load_system_null_ret, -EINVAL, fl_heap_table_load_system(NULL, NULL, 0))     \
	X(heap_table_close_null, 0, (fl_heap_table_close(NULL), 0))                               \
	X(heap_table_alloc_null_table, -EINVAL,                                                   \
	  fl_heap_table_alloc(NULL, table_devices, 1, 4096, 0, &fx->out_fd, &fx->out_heap, NULL,  \
			      0))                                                                 \
	X(heap_table_buffer_free_null_table, -EINVAL,                                             \
	  fl_heap_table_buffer_free(NULL, fx->pipe_fd))                                           \
	X(heap_table_free_null_table, -EINVAL, fl_heap_table_free(NULL, fx->pipe_fd))             \
	X(heap_table_explain_null_table, -EINVAL,                                                 \
	  fl_heap_table_explain(NULL, table_devices, 1, 4096, stderr))                            \
	X(heap_table_get_heap_null_table, -EINVAL,                                                \
	  fl_heap_table_get_heap(NULL, "system", &fx->out_heap))                                  \
	X(heap_table_print_null_table, -EINVAL, fl_heap_table_print(NULL, stderr))                \
	/* debug.h */                                                                             \
	X(debug_dump_null_ret, -EINVAL, fl_debug_dump(NULL, &fx->out_len))                        \
	X(debug_print_null, -EINVAL, fl_debug_print(NULL))                                        \
	/* driver/timeline.h */                                                                   \
	X(timeline_watch_fd_null, -EINVAL, fl_timeline_watch_fd(NULL, fx->pipe_fd))               \
	X(timeline_watch_fd_minus_1, -EINVAL, fl_timeline_watch_fd(fx->tl, -1))                   \
	X(timeline_watch_fd_regular_file, -EINVAL, fl_timeline_watch_fd(fx->tl, fx->file_fd))     \
	X(timeline_create_null_ops, -EINVAL, fl_timeline_create(NULL, "t", NULL, &fx->out_tl))    \
	X(timeline_create_no_driver_name, -EINVAL,                                                \
	  fl_timeline_create(&no_name_ops, "t", NULL, &fx->out_tl))                               \
	X(timeline_create_no_has_signaled, -EINVAL,                                               \
	  fl_timeline_create(&no_check_ops, "t", NULL, &fx->out_tl))                              \
	X(timeline_create_null_ret, -EINVAL, fl_timeline_create(&good_ops, "t", NULL, NULL))      \
	X(timeline_get_driver_data_null, 0, IS_NULL(fl_timeline_get_driver_data(NULL)))           \
	X(timeline_get_ops_null, 0, IS_NULL(fl_timeline_get_ops(NULL)))                           \
	X(fence_create_null_tl, -EINVAL,                                                          \
	  fl_fence_create(NULL, 1, "f", NULL, NULL, &fx->out_fence))                              \
	X(fence_create_null_ret, -EINVAL, fl_fence_create(fx->mock->tl, 1, "f", NULL, NULL, NULL))

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
};

#define TABLE_ROW(name, expected, expr) { #name, expected, case_##name },
static const struct api_case cases[] = { API_ERROR_CASES(TABLE_ROW) };

static const int vocabulary[] = { EINVAL, EBADF,  ENOTTY, ETIME, ENOENT,
				  EMFILE, ENOMEM, EPERM,  ENODEV };

static int in_vocabulary(long long r)
{
	for (size_t i = 0; i < sizeof(vocabulary) / sizeof(vocabulary[0]); i++)
		if (r == -vocabulary[i])
			return 1;
	return 0;
}

static void reset_outputs(struct fixture *fx)
{
	fx->out_tl = SENTINEL_PTR;
	fx->out_fence = SENTINEL_PTR;
	fx->out_heap = SENTINEL_PTR;
	fx->out_table = SENTINEL_PTR;
	fx->out_fd = SENTINEL_INT;
	fx->out_value = SENTINEL_INT;
	fx->out_text = SENTINEL_PTR;
	fx->out_len = SENTINEL_INT;
}

static int outputs_untouched(const struct fixture *fx)
{
	return fx->out_tl == SENTINEL_PTR && fx->out_fence == SENTINEL_PTR &&
	       fx->out_heap == SENTINEL_PTR && fx->out_table == SENTINEL_PTR &&
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

FL_TEST(every_public_function_rejects_bad_arguments_with_documented_errno)
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
		} else if (r < 0 && !in_vocabulary(r)) {
			fprintf(stderr, "%s: %lld is not in the error vocabulary\n", c->name, r);
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

/* Calls @fn with the name of every FL_EXPORT function declared in @path. */
static int for_each_export(const char *path, int (*fn)(const char *name))
{
	char *text = NULL, *p;
	size_t size = 0;
	int missing = 0;
	FILE *in;

	in = fopen(path, "re");
	if (!in)
		fl__test_fail(__FILE__, __LINE__, "%s: %s", path, strerror(errno));
	fl_assert_int_ge(getdelim(&text, &size, '\0', in), 1);
	fclose(in);
	for (p = text; (p = strstr(p, "FL_EXPORT ")); p++) {
		char *paren = strchr(p, '('), *name = paren, name_buf[64];

		if (!paren)
			break;
		/* The function's name is the identifier just before its '('. */
		while (name > p && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') ||
				    (name[-1] >= '0' && name[-1] <= '9')))
			name--;
		snprintf(name_buf, sizeof(name_buf), "%.*s", (int)(paren - name), name);
		if (strncmp(name_buf, "fl_", 3) != 0)
			continue;
		if (!fn(name_buf)) {
			fprintf(stderr, "%s: no bad-argument row for %s\n", path, name_buf);
			missing++;
		}
	}
	free(text);
	return missing;
}

FL_TEST(table_covers_every_public_function)
{
	static const char *const headers[] = {
		"fenceline/debug.h",	       "fenceline/fd.h",
		"fenceline/fence.h",	       "fenceline/heap.h",
		"fenceline/heap-daemon.h",     "fenceline/shared.h",
		"fenceline/heap-table.h",      "fenceline/shared.h",
		"fenceline/sw_sync.h",	       "fenceline/sync_file.h",
		"fenceline/timeline.h",	       "fenceline/transfer.h",
		"fenceline/driver/timeline.h",
	};
	int missing = 0;

	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", FL_INCLUDE_DIR, headers[i]);
		missing += for_each_export(path, has_row);
	}
	fl_assert_int_eq(missing, 0);
}

FL_TEST(fd_reserve_accepts_any_count)
{
	fl_assert_int_ge(fl_fd_reserve(0), 0);
	fl_assert_int_ge(fl_fd_reserve(64), 64);
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

	/* Each is the same function as its new name, not a copy of it. */
	fl_assert(fl_timeline_destroy == fl_timeline_kill);
	fl_assert(fl_heap_free == fl_heap_buffer_free);
	fl_assert(fl_heap_table_free == fl_heap_table_buffer_free);

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

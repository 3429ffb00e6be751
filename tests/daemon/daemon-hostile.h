/* SPDX-License-Identifier: MIT */
/*
 * What the daemon-hostile-*-test.c files share: raw requests built from the
 * wire protocol's header, fd maps of the daemon, and a child on a daemon of
 * its own; and, through daemon-procs.h, the fd API shorthands. Failures
 * fail the test (runner.h).
 */
#ifndef FL_TESTS_DAEMON_HOSTILE_H
#define FL_TESTS_DAEMON_HOSTILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "daemon-procs.h"
#include "protocol.h"

/* One full round of the fd API through the library: it must keep working. */
void library_round(void);

#define NOBODY 65534

/* A raw connection to the library's daemon (its socket). */
int raw_connect(void);

/* HELLO on @sock, which must succeed. */
void raw_hello(int sock);

/* PING on @sock, which must be answered with success. */
void raw_ping_ok(int sock, uint32_t seq);

/* The most fds a reply carries: POOL_FILL with signal ends. */
/* A fill with signal ends: the fence fds, their ends, and the kick pipe. */
#define RAW_MAX_FDS (2 * FL_PROTO_POOL_FILL_MAX + 1)

/*
 * raw_reply() for the replies that may carry fds (TIMELINE_CREATE,
 * TIMELINE_BIND, POOL_FILL): receives them with SCM_RIGHTS instead of
 * letting the kernel drop them. On success the body (status first) must be
 * exactly @size bytes and goes to @body; the fds go to @fds (room for
 * @cap), their number to *@nfds. An error must be a bare status without
 * fds. Returns the status, or 1 on EOF (disconnected).
 */
int raw_reply_fds(int sock, uint32_t op, uint32_t seq, void *body, size_t size, int *fds,
		  unsigned int cap, unsigned int *nfds);

/* Closes the @n fds of @fds. */
void close_fds(const int *fds, unsigned int n);

/*
 * TIMELINE_CREATE with @flags (0 or FL_SW_SYNC_32BIT): returns the timeline
 * fd that came with the reply, its handle in *@handle, and the shared
 * counter's memfd in *@memfd (closed if @memfd is NULL).
 */
int raw_timeline_create_flags(int sock, uint32_t seq, const char *name, uint32_t flags,
			      uint32_t *handle, int *memfd);

/* TIMELINE_CREATE: returns the timeline fd that came with the reply, its handle in *@handle. */
int raw_timeline_create(int sock, uint32_t seq, const char *name, uint32_t *handle);

/* TIMELINE_BIND of @fd: returns the status, the handle in *@handle on success. */
int raw_bind(int sock, uint32_t seq, int fd, uint32_t *handle);

/* Sends POOL_FILL of @count with @flags, without reading the reply. */
void raw_send_pool_fill(int sock, uint32_t seq, uint32_t count, uint32_t flags);

/* A POOL_FILL that must work in full: @count fds, slots @first onwards, to @fds. */
void raw_pool_fill_ok(int sock, uint32_t seq, uint32_t count, uint32_t first, int *fds);

/* Sends FENCE_NEW of pooled @slot at @value on @handle, without reading a reply. */
void raw_send_fence_new(int sock, uint32_t seq, uint32_t flags, uint64_t value, uint32_t handle,
			uint32_t slot);

/*
 * POOL_FILL with FL_POOL_F_SIGNAL_ENDS that must work in full: @count fence
 * fds (slots @first onwards) to @fds, then their signal ends in the same
 * order (pipe write ends), then the connection's kick pipe: room for
 * 2 * @count + 1.
 */
void raw_pool_fill_ends_ok(int sock, uint32_t seq, uint32_t count, uint32_t first, int *fds);

/* FENCE_NEW of the next pooled slot with @flags (plus the answer), which must work. */
void raw_fence_new_flags_ok(int sock, uint32_t seq, uint32_t flags, uint64_t value, uint32_t handle,
			    uint32_t slot);

/* FENCE_NEW of the next pooled slot that must work (asks for the answer). */
void raw_fence_new_ok(int sock, uint32_t seq, uint64_t value, uint32_t handle, uint32_t slot);

/* Sends TIMELINE_SYNC of @handle (@pad as given), without reading the reply. */
void raw_send_timeline_sync(int sock, uint32_t seq, uint32_t handle, uint32_t pad);

/* TIMELINE_SYNC of @handle: returns the status (1: disconnected). */
int raw_timeline_sync(int sock, uint32_t seq, uint32_t handle);

/* TIMELINE_SIGNAL of @handle by @count: returns the status. */
int raw_timeline_signal(int sock, uint32_t seq, uint32_t handle, uint64_t count);

/* Receives a reply of exactly @size bytes after the header that must be a success. */
void raw_reply_body(int sock, uint32_t op, uint32_t seq, void *body, size_t size);

/* TIMELINE_GET_VALUE of @tl, which must work. */
uint64_t raw_get_value(int sock, uint32_t seq, int tl);

/* FENCE_INFO of @fd, asking for no points. */
void raw_send_fence_info(int sock, uint32_t seq, int fd);

/* The status of fence @fd as the daemon has it (FENCE_INFO, no points). */
int raw_fence_status(int sock, uint32_t seq, int fd);

/* Maps the shared counter @memfd read-write; must work. */
struct fl_proto_shared_timeline *counter_map(int memfd);

/* Unmaps a counter_map() mapping. */
void counter_unmap(struct fl_proto_shared_timeline *ctr);

/* Stores @value as the counter's value, as an owner does. */
void counter_set(struct fl_proto_shared_timeline *ctr, uint64_t value);

/* Is @fd the read end of a mode-0 pipe? */
void expect_fence_pipe(int fd);

/*
 * @fence and @end are a pipe fence fd and its signal end: the same pipe,
 * the end its write end. A tag written into the end comes out of the fence
 * fd (which holds nothing else before it is a fence).
 */
void expect_end_of(int fence, int end, uint64_t tag);

#define FD_MAP_SIZE 4096

/* Mark in @open_fd (FD_MAP_SIZE entries) the fds process @pid has open; return the highest. */
int open_fd_map(pid_t pid, bool *open_fd);

/* Sets process @pid's soft RLIMIT_NOFILE to @soft, its hard limit kept. */
void set_fd_limit(pid_t pid, rlim_t soft);

/*
 * Start a daemon of our own on socket @name, run @child in a process of its
 * own against it, and check the daemon's fds are back to where they were.
 * Return: the daemon, still running (the caller stops it).
 */
pid_t child_on_own_daemon(const char *name, void (*child)(const char *path, pid_t daemon));

/* TIMELINE_INC with the fd: the status. */
int raw_inc(int sock, uint32_t seq, int tl, uint64_t count);

/* WAIT_BEGIN (one-way) by this thread on @fence, with @notify (-1: none). */
void raw_wait_begin(int sock, uint32_t seq, int fence, int notify);

/* The lines of file @path that contain @what. */
int count_lines(const char *path, const char *what);

/*
 * dl_daemon_start() of a daemon at the runtime path @sock with @args, its
 * stderr (its log) in the runtime file @logname, whose path goes to @log.
 */
pid_t daemon_start_logged(const char *sock, const char *logname, const char *const *args, char *log,
			  size_t cap);

/* Sends DUMP (no flags), without reading the reply. */
void raw_send_dump(int sock, uint32_t seq);

/* The text of the sealed memfd that comes with the reply to (@op, @seq) (malloc()ed). */
char *raw_reply_text(int sock, uint32_t op, uint32_t seq);

/* Sends TRACE @cmd (FL_TRACE_START with @max_events, FL_TRACE_STOP), without reading the reply. */
void raw_send_trace(int sock, uint32_t seq, uint32_t cmd, uint32_t max_events);

#endif /* FL_TESTS_DAEMON_HOSTILE_H */

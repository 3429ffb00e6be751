/* SPDX-License-Identifier: MIT */
/*
 * fencelined's parts: main.c (set-up), conn.c (its glue to the server
 * framework, src/server, and the loop's pass) and the services.
 */
#ifndef FLD_SERVER_H
#define FLD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "protocol.h"
#include "util.h"

#define FLD_MAX_ALLOW 32

struct server_config {
	unsigned int idle_ms; /* 0: never exit for idleness */
	unsigned int max_timelines, max_fences; /* per process, all its connections */
	/* Daemon fds held for one process, and for one uid but ours; 0: half of RLIMIT_NOFILE. */
	unsigned int max_fds_process, max_fds_uid;
	bool foreground;
	bool allow_all; /* every uid may connect */
	uid_t allow[FLD_MAX_ALLOW];
	unsigned int n_allow;
	uint64_t carveout_bytes; /* the allocation service's carveout; 0: none */
	uint64_t heap_limit; /* bytes of buffers per client; 0: no limit */
	unsigned int trace_max_events; /* a trace session's cap; 0: FLD_TRACE_MAX_EVENTS */
};

/*
 * Serve clients on the listening socket @lfd until idle or SIGTERM/SIGINT.
 * Return: 0, or a negative errno if the loop could not run.
 */
int fld_serve(int lfd, const struct server_config *cfg);

/* A connected client, for DUMP. */
struct fld_client_info {
	pid_t pid;
	uid_t uid;
	unsigned int timelines, fences; /* live objects it made */
};

/* The pid of the process whose counter drives @timeline, or 0. */
typedef pid_t (*fld_owner_fn)(const void *timeline, void *arg);

/*
 * dump.c: the /proc walk of DUMP (who holds which of our fds), done a few
 * processes at a time by fld_scan_step() with @budget_ns each, which says
 * true once the walk is complete. fld_scan_start() returns NULL when out
 * of memory.
 */
struct fld_scan;
struct fld_scan *fld_scan_start(void);
bool fld_scan_step(struct fld_scan *s, uint64_t budget_ns);
void fld_scan_free(struct fld_scan *s);

/*
 * fld_dump_write() - the daemon's state (docs/fencectl.md) in a new sealed
 * memfd, *@ret_fd, owned by the caller
 * @json: JSON instead of text
 * @by_process: what each process holds (fencectl fds), only @only's if not 0
 * @scan: a complete walk of /proc to take the holders from (NULL: walk now)
 * Return: 0, -ENOMEM, or memfd_create()'s and write()'s errors.
 */
int fld_dump_write(bool json, bool by_process, pid_t only, const struct fld_client_info *clients,
		   size_t nclients, fld_owner_fn owner, void *owner_arg,
		   const struct fld_scan *scan, int *ret_fd);

/*
 * Log a line to stderr ("fencelined[pid]: ..."), within the log's rate
 * limit: FLD_LOG_BURST lines at once, FLD_LOG_PER_SEC a second after
 * that; lines beyond it are counted and the count logged when it allows.
 */
#define FLD_LOG_BURST	50
#define FLD_LOG_PER_SEC 10
void fld_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Log how many lines were suppressed, if any and if the limit allows now.
 * Return: ms until it should be called again, -1 when nothing is pending.
 */
int fld_log_flush(void);

/*
 * dump.c: @len bytes of @text in a new sealed memfd, *@ret_fd, read from
 * its start (the reply of DUMP and TRACE). Return: 0, or memfd_create()'s
 * and write()'s errors.
 */
int fld_memfd_sealed(const char *text, size_t len, int *ret_fd);
/* /proc/<pid>/comm into @buf ("" if it cannot be read). */
void fld_comm_of(pid_t pid, char *buf, size_t size);
/*
 * shared.c: catch up with every owner's shared counter. Completes the
 * fences whose points the owners passed, so it runs callbacks: waits end,
 * their records are freed (waits.c calls it before it looks at them).
 */
void fld_shared_sync_all(void);
/* dump.c: timeline @id's value as text from the core's registry alone, "?" if gone. */
void fld_timeline_value_str(uint64_t id, char *buf, size_t size);
/* Who holds which fd of ours, from one scan of /proc (expensive: on demand only). */
struct fld_holders;
struct fld_holders *fld_holders_find(void); /* NULL: out of memory */
/* The same from a walk done a slice at a time (one not complete: walks now). */
struct fld_holders *fld_holders_from_scan(const struct fld_scan *scan);
/* The processes (never this one) holding a fd of timeline @id; returns how many, fills <= @cap. */
size_t fld_holders_of_timeline(const struct fld_holders *h, uint64_t id, pid_t *pids, size_t cap);
void fld_holders_free(struct fld_holders *h);

/*
 * waits.c: the blocking waits clients report (WAIT_BEGIN/WAIT_END), and
 * (deadlock.c) the deadlock and never-signal detector that looks at them.
 */
struct fl_fence;
struct fl_msg_wait_begin;
/*
 * A client's thread blocks on @f (borrowed); @notify_fd (taken; -1: none)
 * is answered if this wait closes a cycle. @client is the client's key.
 * Whenever waits.c closes a notify fd it took, it calls
 * fld_notify_closed(@client), once per fd.
 * Return: 0, -ENOMEM, -EMFILE (too many waits of this process, @pid).
 */
int fld_wait_begin(const void *client, pid_t pid, const struct fl_msg_wait_begin *b,
		   struct fl_fence *f, int notify_fd);
void fld_wait_end(const void *client, uint64_t token, int result);
/*
 * limits.c: a daemon fd held for @client is closed: a notify fd that
 * fld_wait_begin() took, or a sent fd fld_received_close() queued.
 */
void fld_notify_closed(const void *client);

/*
 * received.c: closing the fds clients send without blocking the loop
 * (docs/daemon.md, "fds clients send").
 * fld_received_init() - make the eventfd the loop watches; call once.
 * Return: the fd (the loop calls fld_received_reap() when it is readable), or -errno.
 */
int fld_received_init(void);
/*
 * The fds of the request being handled, each statted at most once: the
 * handler's identification of a fence fd, its pipe check and the close
 * after it (fld_received_inline()) share one statx(). fld_rx_begin()
 * before the handler, fld_rx_end() after the request's fds are closed;
 * they nest (fld_fence_of() may handle another client's request first).
 * @fds is the request's own array: a slot a handler took (set to -1) is
 * looked at no more.
 */
struct fld_rx {
	const int *fds;
	int nfds;
	unsigned int known; /* bit k: st[k] is fds[k]'s */
	struct fl__fd_stat st[FL_PROTO_MAX_FDS];
	struct fld_rx *outer;
};
void fld_rx_begin(struct fld_rx *rx, const int *fds, int nfds);
void fld_rx_end(struct fld_rx *rx);
/* The fds the request being handled still holds (its handler took none yet): 0 without one. */
unsigned int fld_rx_nfds(void);
/*
 * fld_fd_stat() - fl__fd_stat() of @fd, from the memo when it is a slot
 * of a request being handled.
 */
int fld_fd_stat(int fd, struct fl__fd_stat *ret);
/* fld_fd_identity() - fl__fd_identity() of @fd (no pipe flag) through fld_fd_stat(). */
int fld_fd_identity(int fd, dev_t *ret_dev, ino_t *ret_ino);
/*
 * fld_received_inline() - whether closing @fd (a client's) cannot wait on
 * anyone: an AF_UNIX socket, a pipe or FIFO, an anonymous inode, a shmem
 * file. Asks no filesystem.
 */
bool fld_received_inline(int fd);
/*
 * fld_received_close() - close @fd (taken), which @owner's client sent.
 * Return: false when it was closed now; true when the closer thread took
 * it: the caller counts it as a daemon fd of @owner (and holds a
 * reference), and the loop's fld_received_reap() calls
 * fld_notify_closed(@owner) once it is closed.
 */
bool fld_received_close(int fd, const void *owner);
/* fld_received_reap() - call fld_notify_closed() for each fd the closer has closed. */
void fld_received_reap(void);
/* The client disconnected: its waits are over. */
void fld_waits_client_gone(const void *client);
/*
 * deadlock.c: run the detector if it is due. When it needs a walk of /proc (some
 * process is blocked, so who else holds its timelines matters), it sets
 * *@ret_walk instead of walking: the caller does one a slice at a time
 * (fld_scan_step()) and then calls fld_waits_walked(). Return: ms until
 * it wants to run again, -1 when no wait is in progress.
 */
int fld_waits_check(bool *ret_walk);
/* Run the detector with @scan, a complete walk (NULL: walk now, in one go). */
void fld_waits_walked(const struct fld_scan *scan);
/* The waits in progress: a JSON array, or text lines. */
void fld_waits_write(FILE *out, bool json);
/* fencectl deadlocks: the detector's findings (runs it first, with @scan as fld_waits_walked()). */
int fld_deadlocks_write(FILE *out, bool json, const struct fld_scan *scan);
void fld_waits_shutdown(void);
/* A trace session ends: record the waits still going on as unfinished. */
void fld_waits_trace_pending(void);

/*
 * trace.c: events for fencectl trace (docs/trace-format.md) while a session
 * runs, and the statistics (fencectl stats) always. Every fld_trace_*
 * call costs one branch while nobody traces.
 */
extern bool fld_tracing;
/*
 * conn.c: the loop's passes so far (one per return from epoll_wait()), in
 * dump --json: a daemon that is busy for nothing shows it.
 */
extern uint64_t fld_loop_passes;
/* Events a trace session keeps at most, whatever its client asks (--trace-max-events). */
#define FLD_TRACE_MAX_EVENTS 1000000u
/*
 * Start the session of client @by, keeping @max_events (0: @cap) but never
 * more than @cap (0: FLD_TRACE_MAX_EVENTS). Return: 0, -EBUSY.
 */
int fld_trace_start(pid_t by, uint32_t max_events, uint32_t cap);
/* Stop and write the trace as Chrome JSON into a sealed memfd. */
int fld_trace_stop(int *ret_fd);
void fld_trace_timeline_new(pid_t pid, uint64_t id, const char *name, uint64_t value);
void fld_trace_signal(uint64_t tl, uint64_t from, uint64_t to, pid_t by, uint64_t ts, int status);
/* @by failed the @failed pending points of @tl (at @value) with @status at @ts. */
void fld_trace_fail(uint64_t tl, uint64_t value, int failed, pid_t by, uint64_t ts, int status);
/* A fence made by @pid: kind "create", "merge" or "import"; merges name their two inputs. */
void fld_trace_fence_new(pid_t pid, struct fl_fence *f, const char *kind, uint64_t in_a,
			 uint64_t in_b);
void fld_trace_deadline(pid_t pid, uint64_t fence, uint64_t deadline_ns);
/* A wait ended; @signal_tl: the timeline whose signal released it (0: none). */
void fld_trace_wait(pid_t pid, pid_t tid, uint64_t fence, const char *name, uint64_t begin_ns,
		    uint64_t end_ns, int result, int timeout_ms, uint64_t signal_tl,
		    uint64_t signal_ns);
void fld_trace_deadlock(const char *text, const pid_t *pids, size_t n);
/* Another service's event (TRACE_EVENT) sent by @by; @fence: an ACQUIRE's fence id (0: unknown). */
struct fl_msg_trace_event;
void fld_trace_display(pid_t by, const struct fl_msg_trace_event *m, uint64_t fence);
/* Core observer (installed at start): fence completions and timeline deaths. */
void fld_trace_init(void);
void fld_trace_shutdown(void);
/* The trace session's client, or 0. */
pid_t fld_trace_owner(void);
/* The point that completed @f (the failing one if it failed): 0, or -ENOENT. */
struct fl_sync_pt_info;
int fld_completing_point(struct fl_fence *f, struct fl_sync_pt_info *ret);

/*
 * stats.c: per timeline and per fence name (digits folded to '#'), how long
 * fences took from creation to completion, how long waits took, timeouts
 * and errors: log-scale histograms for fencectl stats.
 * @tl: the timeline (0: none, e.g. a wait on a merge still pending).
 */
void fld_stats_fence_done(const char *fence_name, uint64_t tl, const char *tl_name, int status,
			  uint64_t latency_ns);
void fld_stats_wait(const char *fence_name, uint64_t tl, const char *tl_name, uint64_t waited_ns,
		    int result);
int fld_stats_write(FILE *out, bool json, bool reset);
void fld_stats_start(void);
void fld_stats_free(void);

/*
 * conn.c: what the services (src/server/service.h) ask of the daemon
 * about a connection of its own (@conn is a client's).
 * fld_conn_reply() - answer @req with @len bytes of @body and, unless @fd is -1,
 * a copy of @fd (still the caller's); fld_conn_reply_status() - with a bare
 * status. Return: false when the client was hung up on (it does not read
 * its replies, or is gone): the handler returns false too.
 */
struct fl_server_conn;
struct fl_msg_hdr;
bool fld_conn_reply(struct fl_server_conn *conn, const struct fl_msg_hdr *req, const void *body,
		    size_t len, int fd);
bool fld_conn_reply_status(struct fl_server_conn *conn, const struct fl_msg_hdr *req, int status);
/*
 * fld_conn_fds_charge() - count @n more daemon fds held for @conn's process and
 * uid, within their quotas (docs/daemon.md); @what names them in the log.
 * Return: 0, or -EMFILE (logged, rate-limited). fld_conn_fds_uncharge() gives
 * @n back.
 */
int fld_conn_fds_charge(struct fl_server_conn *conn, unsigned int n, const char *what);
void fld_conn_fds_uncharge(struct fl_server_conn *conn, unsigned int n);

#endif /* FLD_SERVER_H */

/* SPDX-License-Identifier: MIT */
/*
 * What a process hosting the core for others (fencelined) needs beyond the
 * public API: fence fds whose socket pair a client made, a callback when the
 * last copy of a handed-out fd is closed (for per-client accounting), the
 * fd watcher in its own loop, and a count of the fds still open; and, for
 * the client library's fd API, lookups by inode. Private to src/: the
 * daemon and src/client use it.
 */
#ifndef FL_CORE_HOST_H
#define FL_CORE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <fenceline/fence.h>
#include <fenceline/timeline.h>

/*
 * What the core asks of the code hosting it in a client process (the
 * library's daemon side, src/client), for fence fds that another process
 * made: the core knows nothing of the daemon, the host does. Installed
 * once (fl__host_set_ops()); every op may be NULL.
 */
struct fl__host_ops {
	/*
	 * Before a fence fd's status is read (fl_fence_fd_get_status()):
	 * make the fences this process asked for with one-way requests
	 * exist, so that their fds read as what was asked.
	 */
	void (*settle)(void);
	/*
	 * A pipe fence fd of another process reads as completed but its
	 * status record is gone (a holder read it out): the status from the
	 * daemon that made it, or -ECONNRESET when no daemon knows it (its
	 * maker died).
	 */
	int (*status)(int fence_fd);
	/*
	 * Reports of blocking waits on fence fds (fl_fence_fd_wait()), so
	 * that the daemon can see who waits on what (deadlock detection,
	 * traces); called around the poll, only when it is about to block.
	 * wait_begin() returns a token for wait_end() (0: not reported) and
	 * may set *@notify_fd to an fd to poll beside the fence: readable
	 * when the wait is refused (its status then comes from
	 * wait_notified(): the status the wait must return, or 0 to go on).
	 * wait_end(): the wait is over; @result is 1 when the fence completed
	 * (the daemon ends such waits itself), else what the wait returns
	 * (-ETIME, -EDEADLK, ...); it closes @notify_fd (-1: none). The three
	 * come together: all set or none.
	 */
	uint64_t (*wait_begin)(int fence_fd, int timeout_ms, unsigned int flags, int *notify_fd);
	int (*wait_notified)(uint64_t token, int notify_fd);
	void (*wait_end)(uint64_t token, int result, int notify_fd);
};

/* fl__host_set_ops() - install @ops (static: it stays the caller's), or NULL for none. */
void fl__host_set_ops(const struct fl__host_ops *ops);

/*
 * Called once when a tracked fd is gone: from the core's fd watcher, which
 * is a thread of its own, or the host's loop after fl__watcher_host_fd().
 */
typedef void (*fl__host_release_fn)(void *owner);

/*
 * fl__fence_adopt_fds() - make a client-made socket pair a fence fd of @f
 * @f: the fence (borrowed; the new fd holds its own reference)
 * @sink: the pair's end the core keeps (ownership passes to the core)
 * @user: the end the client keeps; this process's copy is closed here
 * @release, @owner: called when every copy of @user is closed; may be NULL
 *
 * Checks that both are connected AF_UNIX stream sockets of one pair (a
 * random probe sent through @user must arrive at @sink) and that @user is
 * not already a fenceline fd, so nobody can make a known fd stand for
 * another fence. Both fds are closed on every error path; when the pair
 * qualified but could not be taken, the error is first written to @sink,
 * so the user end reads as a fence that failed with it.
 * Return: 0; -EBADF, -ENOTSOCK or -EINVAL for fds that do not qualify;
 * -EEXIST if @user is already a fenceline fd; -ENOMEM, -EMFILE, -EIO (the
 * fence fd then carries the error).
 */
int fl__fence_adopt_fds(struct fl_fence *f, int sink, int user, fl__host_release_fn release,
			void *owner);

/*
 * fl__fence_adopt_sink() - fl__fence_adopt_fds() for a pair the host made
 * itself, so there is nothing to check
 * @sink: the end the core keeps (ownership passes to the core)
 * @dev, @ino: the inode of the other end, which the host gave out
 *
 * On failure the error is written to @sink before it is closed, so the
 * other end reads as a fence that failed with it.
 * Return: 0, -ENOMEM, -EEXIST (the inode is already a fenceline fd), or an
 * epoll_ctl() error.
 */
int fl__fence_adopt_sink(struct fl_fence *f, int sink, dev_t dev, ino_t ino,
			 fl__host_release_fn release, void *owner);

/*
 * fl__timeline_from_key() - the timeline whose fd has inode (@dev, @ino)
 *
 * fl_timeline_from_fd() for a host that remembers a client's timeline by
 * inode instead of receiving the fd each time. The caller owns the
 * reference. Return: 0, or -ENOENT when no live timeline fd has that inode.
 */
int fl__timeline_from_key(dev_t dev, ino_t ino, struct fl_timeline **ret);

/*
 * fl__fence_from_key() - the fence whose fd has inode (@dev, @ino), made
 * by this process's core: fl_fence_from_fd() for a caller that read the
 * fd's identity already (fl__fd_identity()), so the lookup costs no
 * syscall. The caller owns the reference. Return: 0, or -ENOENT when no
 * live fence fd of this process has that inode.
 */
int fl__fence_from_key(dev_t dev, ino_t ino, struct fl_fence **ret);

/*
 * fl__fence_pipe_republish() - publish the info record of the active pipe
 * fence fd (@dev, @ino) again if the status page has none for it (a fuller
 * table evicted it): its holders then answer info from the page again.
 * Nothing for a completed, given or unknown one, or without a page.
 */
void fl__fence_pipe_republish(dev_t dev, ino_t ino);

/*
 * fl__timeline_export_fd_tracked() - fl_timeline_export_fd() with a
 * release callback (see fl__fence_adopt_fds()). The fd is a pipe's read
 * end of mode 0, as in-process (a socket with FENCELINE_FD_KIND=socket).
 */
int fl__timeline_export_fd_tracked(struct fl_timeline *tl, int *ret_fd, fl__host_release_fn release,
				   void *owner);

/*
 * fl__fd_pair_fail() - complete a fence fd pair that never got a fence
 * @sink: the core's end of a client-made pair (closed here)
 * @status: the negative errno the fd's holders will read as its status
 */
void fl__fd_pair_fail(int sink, int status);

/*
 * fl__watcher_host_fd() - run the fd watcher in the host's own loop
 *
 * Instead of a thread, the core's watcher becomes an epoll fd that the
 * host polls (it can sit in the host's own epoll set): readable when a
 * handed-out fd was closed everywhere (or the fd table should grow), and
 * then the host calls fl__watcher_dispatch(), which releases those objects
 * (timelines die, fences go, release callbacks run) in the host's thread.
 * A single-threaded host then has no lock contention with a watcher, no
 * wake-ups of a second thread, and no RCU stall when its fd table grows.
 * Call it once, before the first fd is made; the fd stays the core's.
 * Return: the fd, -EBUSY if a watcher thread runs already, or a negative
 * errno from epoll_create1() or eventfd().
 */
int fl__watcher_host_fd(void);

/*
 * fl__watcher_dispatch() - do what the watcher fd has (never blocks), and
 * sweep completed pipe fences when fl__watcher_timeout_ms() said it is time
 */
void fl__watcher_dispatch(void);

/*
 * fl__watcher_timeout_ms() - how long the host's loop may wait before it
 * must call fl__watcher_dispatch() even if the watcher fd stayed quiet:
 * completed pipe fences (fl__fence_pipe_new()) give no signal when their
 * last holder closes them, so the core sweeps them now and then (from
 * 100 ms, backing off to 10 s while sweeps find nothing to release); new
 * ones (fl__fence_pipe_adopt()) are polled at once each time their number
 * doubled, and every 100 ms, when those still open join the watcher fd.
 * Return: milliseconds, or -1 when nothing is due.
 */
int fl__watcher_timeout_ms(void);

/*
 * fl__watcher_sweep() - sweep pipe fences now (host's thread): for a host
 * about to refuse a quota that fences already closed everywhere may still
 * be holding. Costs a poll() of the new ones' write ends and a read of
 * /proc/self/fdinfo; free when none is listed. Return: how many were
 * released.
 */
size_t fl__watcher_sweep(void);

/*
 * fl__watcher_sweep_fresh() - release now the pending pipe fences made in
 * the last moments whose every fd was closed (host's thread): their close
 * shows in no epoll set until a sweep polls them, so a host that promises
 * "every close before this request was handled" (PING with
 * FL_MSG_F_AFTER_CLOSES) sweeps first. Costs a poll() of the new ones'
 * write ends (64 at a time); free when none is listed. Return: how many
 * were released.
 */
size_t fl__watcher_sweep_fresh(void);

struct fl__sink;

/*
 * fl__fence_pipes_ok() - whether fl__fence_pipe_new() may be used: false
 * under FENCELINE_FD_KIND=socket and where /proc/self/fdinfo cannot be
 * read (the sweep of completed pipe fences needs it); the host then makes
 * socket pairs as before.
 */
bool fl__fence_pipes_ok(void);

/*
 * fl__fence_pipe_new() - a fence fd that is not a fence yet (a pool entry)
 * @ret_sink: the core's side (its pipe's write end), for
 *	fl__fence_pipe_adopt() or fl__fence_pipe_discard(), exactly one of them
 * @ret_user_fd: the pipe's read end, mode 0, for the host to give out and
 *	then close its copy (the caller owns it)
 * @ret_dev, @ret_ino: its inode (may be NULL)
 *
 * The read end is registered where the sweep finds it (see
 * fl__watcher_timeout_ms()) before it leaves this process. Needs
 * fl__watcher_host_fd() first. With a status page (fl__status_page_create()
 * in src/util/statuspage.h), the fd is published there as active; its
 * completion (before the pipe's end-of-file), discard and release update it.
 * Return: 0; -ENOMEM, -EMFILE, -ENFILE, -EEXIST (inode still known: an
 * old fd of ours lives on), -ENOSYS (no registry).
 */
int fl__fence_pipe_new(struct fl__sink **ret_sink, int *ret_user_fd, dev_t *ret_dev,
		       ino_t *ret_ino);

/*
 * fl__fence_pipe_adopt() - make @s, from fl__fence_pipe_new(), a fence fd of @f
 * @f: the fence (borrowed; the fd holds its own reference)
 * @release, @owner: as in fl__fence_adopt_fds()
 *
 * On completion the core writes the status record into the pipe and
 * closes its write end: the end-of-file, which no holder can consume or
 * cause, is the readiness. @s belongs to the core afterwards, also on error
 * (it is then discarded with the error as the fd's status). The fd's last
 * close is found by the host loop's sweeps (fl__watcher_timeout_ms()).
 * Return: 0 (no error is left since the sink is no longer put in an epoll
 * set here; callers may still check).
 */
int fl__fence_pipe_adopt(struct fl_fence *f, struct fl__sink *s, fl__host_release_fn release,
			 void *owner);

/*
 * fl__fence_pipe_discard() - a pool entry never became a fence: its fd
 * reads as ready with @status (a negative errno); @s is freed
 */
void fl__fence_pipe_discard(struct fl__sink *s, int status);

/*
 * fl__fence_pipe_end() - the write end of @s (from fl__fence_pipe_new(),
 * not adopted yet) to send to a timeline's owner, who completes the fence
 * itself by writing the record and closing its copy
 * @user_fd: the pipe's read end, still held by the caller: registered so
 *	that the host hears (fl__fence_pipe_set_end_hook()) when every write
 *	end is closed after fl__fence_pipe_give()
 * @ret_end: the core's own end, borrowed: the host sends it (SCM_RIGHTS
 *	makes the owner's copy) before anything else is done with @s, and
 *	never closes it. Not a dup() of it: a copy here would cost an
 *	fcntl() and a close() per pooled fence, for the same file.
 *
 * Until fl__fence_pipe_give(), the core keeps its own write end: the fence
 * completes as any pooled pipe's, and the owner's copy only delays the
 * end-of-file until the owner closes it too.
 * Return: 0, or a negative errno (no fd, epoll_ctl()).
 */
int fl__fence_pipe_end(struct fl__sink *s, int user_fd, int *ret_end);

/*
 * fl__fence_pipe_give() - the core closes its write end of @s (adopted with
 * fl__fence_pipe_adopt()), named @cookie for the host's given_done hook
 * (fl__fence_pipe_set_hooks()), so the owner's copy from fl__fence_pipe_end()
 * is the only one: the owner's close is the fd's readiness, and no daemon
 * needs to run for its waiters to wake. When every write end is closed,
 * the host's end hook runs (from fl__fence_pipe_ends_check()); the host then
 * completes the fence or fails it (fl__fence_fail_pending()). The sink is
 * released once its read end is closed everywhere, as a completed pipe
 * fence's is. Does nothing once the fence completed (its end is closed).
 */
void fl__fence_pipe_give(struct fl__sink *s, uint64_t cookie);

/*
 * fl__fence_pipe_ends_check() - run the host's end hook for the given pipe
 * fences whose every write end was closed since the last check. Nothing
 * wakes the host for those (an owner's signal closes its end, and waking
 * the host then would only compete with the waiters): the host checks
 * before it completes points the owner may have lost its end before
 * (catching up with a counter, another's signal), before answering for a
 * fence, and now and then. Host-driven cores only, in the host's thread.
 */
void fl__fence_pipe_ends_check(void);

/*
 * fl__fence_pipe_ends_checks() - how many fl__fence_pipe_ends_check()s ran
 * (wrapping): a host that checked during a turn of its loop need not check
 * again at its end, one epoll_wait() less per request.
 */
unsigned int fl__fence_pipe_ends_checks(void);

/*
 * fl__fence_pipe_set_hooks() - the host's part in given pipe fences
 * (fl__fence_pipe_give())
 * @end_closed: every write end of one is closed; with the fence (borrowed).
 *	Once, at most, per fence; from fl__fence_pipe_ends_check().
 * @given_done: one completed here while its owner still may hold the only
 *	write end, which the owner must then close (after writing the record:
 *	@status, @ts); @owner is the fence's release owner, @cookie what the
 *	host named it with in fl__fence_pipe_give().
 *	Called under the fence's lock: must not block or call into the core.
 */
void fl__fence_pipe_set_hooks(void (*end_closed)(struct fl_fence *f),
			      void (*given_done)(void *owner, uint64_t cookie, int status,
						 uint64_t ts));

/*
 * fl__pt_gate_close() - put a gate on @f's one point: while gates are
 * engaged (fl__pt_gates_engage()), its timeline reaching it (or failing it)
 * asks the hook (fl__pt_gate_set_hook()), and if the hook holds it, only
 * records the outcome: every fence with that point (@f, merges of it) stays
 * pending, as the point does in every status and info, until the gate
 * opens (fl__pt_gates_open(), fl__fence_gate_open()). For a given pipe
 * fence (fl__fence_pipe_give()), whose fd is ready only when its owner
 * closes its end: what is made of it must not be ready before it.
 * Reached while gates are not engaged, it completes as any point.
 * @owner, @cookie: for the hook. Does nothing to a fence of more than one
 * point, or one complete already.
 * Return: 0, -EINVAL, -EALREADY (complete), -ENOMEM.
 */
int fl__pt_gate_close(struct fl_fence *f, void *owner, uint64_t cookie);

/*
 * fl__pt_gates_engage() - whether gated points this thread's signal passes
 * reach are offered to the hook to hold (a host's step on behalf of a
 * process that is not the points' owner), or complete as any point.
 */
void fl__pt_gates_engage(bool on);

/*
 * fl__pt_gate_set_hook() - @hook is asked, under the timeline's lock, about
 * a gated point reached (or failed: @status) while gates are engaged: a
 * non-zero token holds it until fl__pt_gates_open() lets that token go; 0
 * lets it complete now. It must not block or call into the core.
 */
void fl__pt_gate_set_hook(uint64_t (*hook)(void *owner, uint64_t cookie, int status, uint64_t ts));

/*
 * fl__pt_gates_open() - complete the points held for @owner with a token
 * of at most @upto, with the outcome their timelines gave them.
 */
void fl__pt_gates_open(void *owner, uint64_t upto);

/* fl__pt_gates_held_tl() - how many points of @tl are held (fl__pt_gate_close()). */
int fl__pt_gates_held_tl(const struct fl_timeline *tl);

/*
 * fl__fence_gate_open() - open the gate of @f's point for good: held, it
 * completes now; pending, it completes as any other when its timeline gets
 * there. Return: the outcome it completed with here (1 or a negative
 * errno), 0 if none.
 */
int fl__fence_gate_open(struct fl_fence *f);

/*
 * fl__fence_gate_told() - whether @f's point is gated and the hook was told
 * of its outcome (so that the host need not be told again).
 */
bool fl__fence_gate_told(const struct fl_fence *f);

/*
 * fl__fence_pipe_return() - an owner gives back @end, its write end of a
 * given pipe fence (fl__fence_pipe_give()), which the core then keeps as
 * its own: the fence completes as any pooled pipe's again. @end is
 * consumed (closed unless kept). A fence that completed meanwhile gets its
 * record through @end before it is closed.
 * @ret_fence: the fence (a reference) if the core took the end back and it
 *	is still pending, so the host completes it; else NULL
 * Return: 0; -EINVAL (not a pipe's write end), -ENOENT (no given fence).
 */
int fl__fence_pipe_return(int end, struct fl_fence **ret_fence);

/*
 * fl__fence_fail_pending() - fail @f's points that are still pending with
 * @status (a negative errno), as a dying timeline fails its points, and
 * complete the fences waiting on them; points that signalled by now are
 * left as they are. Return: how many points failed, or -EINVAL.
 */
int fl__fence_fail_pending(struct fl_fence *f, int status);

/*
 * fl__dump_extra_fn - what a host adds to one object of a dump
 * @object: the struct fl_timeline or (@fence) struct fl_fence being written
 * @json: write members (",\"key\":value...") of the object's JSON object;
 *	else indented text lines, each ending in a newline
 * Called under the core's registry lock: must not create or free objects.
 */
typedef void (*fl__dump_extra_fn)(FILE *out, const void *object, bool fence, bool json, void *arg);

/*
 * fl__dump_write() - every live timeline and fence, with @extra's additions
 * @json: false for fl_debug_dump()'s text; true for two JSON members,
 *	"timelines":[...],"fences":[...], without the enclosing braces (the
 *	host writes those and its own members); schema in docs/fencectl.md
 * Return: 0, or -EIO if @out failed.
 */
int fl__dump_write(FILE *out, bool json, fl__dump_extra_fn extra, void *arg);

/*
 * fl__json_str() - @s as a JSON string: `"`, `\` and bytes outside
 * printable ASCII escaped (names and comms are bytes anybody chose)
 */
void fl__json_str(FILE *out, const char *s);

/* When a fence (a struct fl_fence given to fl__dump_extra_fn) was made, CLOCK_MONOTONIC ns. */
uint64_t fl__fence_created_ns(const void *fence);

/*
 * fl__sink_foreach() - every fence and timeline fd still open somewhere:
 * @fn gets the object it stands for (struct fl_fence if @fence, else struct
 * fl_timeline; NULL for a fence already gone) and the inode of the fd's end that was
 * given out, which /proc/<pid>/fd shows as socket:[ino] (fences) or pipe:[ino]
 * (timelines). Under the sink lock: @fn must not call into the core.
 */
void fl__sink_foreach(void (*fn)(const void *object, bool fence, dev_t dev, ino_t ino, void *arg),
		      void *arg);

/*
 * fl__timeline_signal_stamp() - the timestamp this thread's signal passes
 * give the points they complete, instead of the clock (0: the clock again).
 * For a host that learns late of a signal that happened earlier: the
 * daemon catching up with an owner's counter uses the owner's stamp.
 */
void fl__timeline_signal_stamp(uint64_t ns);

/*
 * fl__timeline_last_stamp() - the latest timestamp @tl gave a point or
 * was given by a signal pass (0: none yet): a stamp given later that is
 * earlier than this is raised to it, so a timeline's points complete in
 * time order.
 */
uint64_t fl__timeline_last_stamp(struct fl_timeline *tl);

/*
 * fl__pipe_peek_record() - the last whole status record queued in the
 * pipe fence fd @fd (borrowed), copied out with tee(), so it stays there
 * for every holder
 * Return: 1 and *@ret; 0 when none is whole (end-of-file, a holder read
 * it out, not a record); -EAGAIN when nothing is queued and the pipe is
 * not at end-of-file (pending); -ENOTTY (not a pipe), or pipe2()'s error.
 */
struct fl__record;
int fl__pipe_peek_record(int fd, struct fl__record *ret);

/*
 * fl__pipe_page_status() - the status of the daemon's pipe fence fd @fd
 * (borrowed; read end (@dev, @ino)) from the status page this process
 * maps, in *@ret, as every holder reads it: an owner's fence (held) reads
 * active until its fd is ready, an active one only while its fd is not.
 * Return: true, or false when the page does not say (ask the pipe or the
 * daemon). Does not wait for this process's one-way requests.
 */
bool fl__pipe_page_status(int fd, dev_t dev, ino_t ino, int *ret);

/*
 * fl__pipe_stamp_of() - the time a signalled one-point pipe fence fd @fd
 * (borrowed) reports, given @stamp_ns, the one its maker's books have: the
 * record its completer wrote, when that is earlier (an owner's step, which
 * the daemon saw later, or with a later step's stamp), or when the pipe
 * holds two successes, its owner's and the daemon's, and that record is
 * not in the future: a fence born signalled, which its owner completed at
 * its creation, before the daemon made it (and maybe caught up with the
 * owner's counter, whose step's stamp is older). Return: that time.
 */
uint64_t fl__pipe_stamp_of(int fd, uint64_t stamp_ns);

/* A fence's id: unique in this process, counting from 1 (dumps and traces name fences by it). */
uint64_t fl__fence_id(const void *fence);

/*
 * struct fl__observer - what a host (the daemon's tracer) hears of the core
 * @fence_done: a fence completed with @status at @timestamp_ns; in the
 *	completing thread with no core lock held, before the fence's
 *	callbacks run. Must not block; may look at the fence.
 * @timeline_dead: @tl died (its last handle went, or it was destroyed),
 *	after its pending points failed.
 */
struct fl__observer {
	void (*fence_done)(struct fl_fence *f, int status, uint64_t timestamp_ns, void *arg);
	void (*timeline_dead)(struct fl_timeline *tl, void *arg);
};

/* Install @o (NULL: none); one observer per process. Costs a load per completion when unset. */
void fl__observer_set(const struct fl__observer *o, void *arg);

/*
 * fl__timeline_foreach(), fl__fence_foreach() - every live timeline (dead
 * ones still referenced too) or fence, under the registry lock: @fn may
 * read them (names, ids, values, fl_fence_get_info()) but must not create,
 * free, ref or signal anything.
 */
void fl__timeline_foreach(void (*fn)(struct fl_timeline *tl, void *arg), void *arg);
void fl__fence_foreach(void (*fn)(struct fl_fence *f, void *arg), void *arg);

/* How many fence and timeline fds of this core are still open somewhere. */
size_t fl__sink_count(void);

#endif /* FL_CORE_HOST_H */

/* SPDX-License-Identifier: MIT */
/*
 * The connection to fencelined: finding the socket, starting the daemon,
 * and what the fd API needs of it (the pool of fence fds made ahead, the
 * timelines this process owns). Requests of any number of threads are
 * pipelined over the one connection (rpc.c: why, and how replies find
 * their waiters); conn.rpc.lock also guards everything of conn here.
 *
 * Why every fd here has an identity (struct fdid): a program may close fds
 * it did not open (close_range() after fork, a daemon closing everything,
 * dup2() over "free" numbers), and then open its own at the same numbers.
 * The library must never write to, read from, close or return one of those.
 * So it remembers the inode of each fd it holds and checks it before use:
 * the connection once per call (one fstat(), before anything is sent on it),
 * a pooled fd before it is returned, a signal end before a record goes into
 * it, and every fd before it is closed. A number that no longer holds our
 * file is forgotten, never closed: it is the program's now. The connection
 * check is the one that matters most, and it is sound on its own for a
 * mass close: fds are handed out lowest first, so a program that closed
 * everything and opened anything at all reused or freed our lowest number.
 * The per-fd checks cover a program that closes or replaces only some of
 * our numbers (closefrom() above the connection, dup2()). What no check can
 * cover is a thread of the program closing our fd between our check and our
 * use of it; such a program races with itself.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "counter.h"
#include "fdpool-gate.h"
#include "kept.h"
#include "rpc.h"
#include "service.h"
#include "statuspage.h"
#include "transport.h"
#include "util.h"

extern char **environ;

/* How long a caller waits for a daemon it started to answer. */
#define START_TIMEOUT_MS 5000

/* How long one request waits for the daemon ($FENCELINE_REQUEST_TIMEOUT_MS). */
#define REQUEST_TIMEOUT_MS 10000

/*
 * Pooled fds unused for this long ($FENCELINE_POOL_IDLE_MS) go back: a
 * program that made fences and stopped should not keep 32 extra fds.
 */
#define POOL_IDLE_MS 500

/* The watcher's poll timeout when there is no pool to give back: how soon it notices a stop that could not wake it. */
#define WATCH_TICK_MS 1000

/* Name of the fences that use up the slots of pooled fds we no longer have. */
#define UNUSED_SLOT_NAME "fl-unused-slot"

/* What makes an fd ours: its file's inode. */
static unsigned int env_ms(const char *name, unsigned int def)
{
	const char *env = getenv(name);
	char *end;
	unsigned long v;

	if (!env || !env[0])
		return def;
	errno = 0;
	v = strtoul(env, &end, 10);
	return *end || errno || v > 24u * 3600 * 1000 ? def : (unsigned int)v;
}

/*
 * Owned timelines (see fl__client_owned_signal()): how many this process
 * signals itself. And how many signal ends of their fences it keeps open
 * at most: each is an fd, so KEPT_MIN within the usual RLIMIT_NOFILE of
 * KEPT_FDS_USUAL, plus a quarter of what the program raised it by, up to
 * KEPT_MAX (kept_limit()). A program with the usual limit keeps 64 as it
 * always did; one that raised its limit to hold thousands of fence fds
 * gets room for the ends of thousands, and its steps need no daemon for
 * them (a limit of 20000 keeps 4096).
 */
#define OWNED_MAX      64
#define KEPT_MIN       64
#define KEPT_MAX       4096
#define KEPT_FDS_USUAL 1024
/*
 * Signal ends cost an fd each on the way here and a close; they pay off
 * only for fences this process signals itself before it drops them. Keep
 * score: an end given up unused counts down, and pool fills ask for ends
 * only while the score is not negative. A fence completed through its end,
 * or a signal of a timeline with fences made without ends (ends would have
 * served), lifts the score to at least 1 (ends_useful_locked()).
 */
#define ENDS_SCORE_MAX 64

/*
 * Watches the connection for the daemon's death while signal ends are kept.
 * conn owns it and its fds, and joins the thread before closing them, so
 * that a program that counts its fds after fl_daemon_disconnect() finds
 * them all closed.
 */
struct watch {
	unsigned int seq; /* conn.watch_ended takes it when the thread ends unfreed */
	atomic_bool stop; /* conn is letting go: exit without taking conn.rpc.lock */
	atomic_bool done; /* the thread has finished (the connection hung up) */
	atomic_int conn_fd; /* a copy of the connection; -1 once @kick_fd tells the same */
	int stop_fd; /* eventfd: wakes the thread to look at @stop (and @kick_fd) */
	/*
	 * The read end of the daemon's kick pipe (it comes with pool fills
	 * with pipe signal ends), -1 until one came; set under conn.rpc.lock,
	 * read by the thread when it wakes. Readable when the daemon completed
	 * fences whose pipe signal ends we keep (kept_settle_locked()); hung
	 * up when the daemon dropped us or died. A pipe signal end is kept
	 * only while there is one.
	 */
	atomic_int kick_fd;
	struct fdid conn_id, stop_id, kick_id;
	unsigned int generation;
	unsigned int seen_uses; /* conn.uses at the last tick */
};

/* The fds a reply may carry: a POOL_FILL with signal ends (two a slot) and the kick pipe. */
#define READ_ROOM (2 * FL_PROTO_POOL_FILL_MAX + 1)

static void rpc_seen(uint32_t seq);
static bool rpc_unclaimed(const unsigned char *buf, int n, int *fds, unsigned int nfds, bool cut);
static void rpc_dropping(void);
static void rpc_dropped(void);

static const struct fl__rpc_ops rpc_ops = {
	.what = "daemon",
	.seen = rpc_seen,
	.unclaimed = rpc_unclaimed,
	.dropping = rpc_dropping,
	.dropped = rpc_dropped,
};

/* The reader's buffer (rpc.c: one reader at a time). */
static unsigned char read_buf[FL_PROTO_MAX_REPLY];

static struct {
	struct fl__rpc rpc; /* the connection; its lock guards the rest of conn */
	pid_t pid; /* the process that made fd */
	unsigned int timeout_ms; /* a request's bound (0: none), read at connect */
	unsigned int idle_ms; /* give the pool back after this (0: never) */
	unsigned int pool_max; /* pooled fds at most (0: fill one per fence) */
	struct fl__fdpool_gate gate; /* does the pool pay here (fdpool-gate.c) */
	unsigned int uses; /* fences made: the watcher's sign of activity */
	pid_t daemon_pid;
	/* Per enum fl_proto_service_id: the version HELLO agreed on, 0 for none. */
	uint32_t served[FL_PROTO_MAX_SERVICES];
	unsigned int told; /* services whose absence was written to stderr, by id bit */
	bool atfork_done;
	atomic_bool in_use; /* connected since the process started or forked */
	atomic_bool unflushed; /* one-way requests sent since the last reply */
	/*
	 * Born-signalled fences sent since the last reply: their fds are
	 * ready, so no status call waits, but a timeline's close does.
	 */
	atomic_bool born_unflushed;
	/*
	 * Fence fds from POOL_FILL not made fences yet, oldest first. -1 for
	 * a slot whose fd we do not have (the kernel could not install it, or
	 * we gave it back): such a slot is used up with a FENCE_NEW of its own
	 * before the next, as the daemon takes slots strictly in order.
	 */
	int pool[FL_PROTO_POOL_FILL_MAX];
	struct fdid pool_id[FL_PROTO_POOL_FILL_MAX];
	int pool_sig[FL_PROTO_POOL_FILL_MAX]; /* their signal ends, or -1 */
	struct fdid pool_sig_id[FL_PROTO_POOL_FILL_MAX];
	unsigned int pool_head, pool_count;
	uint32_t pool_slot; /* the daemon's slot number of pool[pool_head] */
	unsigned int
		pool_batch; /* the last POOL_FILL's size (0: none since the pool was given back) */
	/* A POOL_FILL whose reply is still to be read (fill_per 0: none). */
	uint32_t fill_seq, fill_count;
	unsigned int fill_per; /* fds per slot asked for: 1, or 2 with signal ends */
	/* Timelines this connection created, with their shared counters. */
	struct owned {
		uint32_t handle;
		bool unkept; /* made a fence without an end since the last signal */
		struct fl__counter counter;
		struct fdid tl_id; /* the timeline fd's file: a rebind of it keeps it ours */
		/* Signal ends of its pending fences, in signal order. */
		struct fl__kept_list kept;
		/* The page's failed count when a step last caught up with the daemon's failures. */
		uint64_t failed_seen;
		/*
		 * A one-way merge named a pending point of it: while that
		 * merge is unflushed (conn.merge_unflushed), every step goes
		 * through the daemon (fl__client_merge_oneway()).
		 */
		bool merge_sent;
	} owned[OWNED_MAX];
	unsigned int nowned;
	unsigned int nkept; /* signal ends kept, of every owned timeline */
	unsigned int kept_max; /* how many it may keep: kept_limit() */
	unsigned int
		kept_sweep_wait; /* full creations before the next sweep (kept_prepare_locked()) */
	/* Kicks read from this connection's kick pipe, for KICK_ACK (one pipe per connection). */
	uint64_t kicks_read;
	int ends_score;
	struct watch *watch; /* running while anything is kept */
	unsigned int watch_seq; /* watchers started */
	/*
	 * The seq of the last watcher that ended and left its struct watch
	 * to us: the futex that pool_drop_locked() waits on, in place of a
	 * pthread_join() (the threads are detached, see watch_start_kick_locked()).
	 */
	atomic_int watch_ended;
	int fill_result; /* how the last fill went (pool_fill_take_locked()); 1: on its way */
	unsigned int fill_got; /* the fds the last fill brought */
	uint32_t oneway_seq; /* the last one-way request that a reply after it settles */
	/* A one-way merge of pending points (seq merge_seq) no reply after it has settled. */
	bool merge_unflushed;
	uint32_t merge_seq;
	struct fl__client_stats stats; /* since the process started or forked */
} conn = { .rpc = FL__RPC_INIT(&rpc_ops, read_buf, READ_ROOM) };

static void watch_free(struct watch *w)
{
	fl__fdid_close(atomic_load(&w->conn_fd), &w->conn_id);
	fl__fdid_close(w->stop_fd, &w->stop_id);
	fl__fdid_close(atomic_load(&w->kick_fd), &w->kick_id);
	free(w);
}

/*
 * Close the kept signal ends. A pipe's is the fence's only write end: its
 * holders then see it ready, and the daemon fails it (-ENOENT) unless our
 * counter reached it; a dead daemon's reads as -ECONNRESET. A socket
 * pair's (FENCELINE_FD_KIND=socket): the daemon completes the fence itself
 * (it keeps its own end), or, if it is gone, closing ours is what makes
 * their holders read end-of-file.
 */
static bool kept_close(struct fl__kept *k, void *arg)
{
	(void)arg;
	fl__fdid_close(k->fd, &k->id);
	return false;
}

static void kept_drop_locked(void)
{
	for (unsigned int i = 0; i < conn.nowned; i++) {
		fl__kept_list_filter(&conn.owned[i].kept, kept_close, NULL);
		fl__kept_list_free(&conn.owned[i].kept);
	}
	conn.nkept = 0;
}

/* Pooled fds belong to one connection: gone with it (and not inherited). */
static void pool_drop_locked(void)
{
	for (; conn.pool_count; conn.pool_count--, conn.pool_head++) {
		unsigned int at = conn.pool_head % FL_PROTO_POOL_FILL_MAX;

		fl__fdid_close(conn.pool[at], &conn.pool_id[at]);
		fl__fdid_close(conn.pool_sig[at], &conn.pool_sig_id[at]);
	}
	conn.pool_head = 0;
	conn.pool_slot = 0;
	conn.pool_batch = 0;
	conn.fill_per = 0;
	conn.ends_score = 0;
	kept_drop_locked();
	for (unsigned int i = 0; i < conn.nowned; i++)
		fl__counter_unmap(&conn.owned[i].counter);
	conn.nowned = 0;
	if (conn.watch) {
		uint64_t one = 1;

		/*
		 * The thread never waits for conn.rpc.lock once it sees @stop: join it
		 * here. If the program took the eventfd's number, the thread sees
		 * @stop at its next tick instead.
		 */
		atomic_store(&conn.watch->stop, true);
		if (fl__fdid_is(conn.watch->stop_fd, &conn.watch->stop_id))
			(void)!write(conn.watch->stop_fd, &one, sizeof(one));
		for (;;) {
			int ended = atomic_load_explicit(&conn.watch_ended, memory_order_acquire);

			if ((unsigned int)ended == conn.watch->seq)
				break;
			fl__futex_wait(&conn.watch_ended, ended, -1);
		}
		watch_free(conn.watch);
		conn.watch = NULL;
	}
}

/* Under conn.rpc.lock: does the pool hold any fd of ours? */
static bool pool_has_fds_locked(void)
{
	for (unsigned int i = 0; i < conn.pool_count; i++)
		if (conn.pool[(conn.pool_head + i) % FL_PROTO_POOL_FILL_MAX] >= 0)
			return true;
	return false;
}

/*
 * Under conn.rpc.lock: close the pooled fds (and their signal ends). Their
 * slots stay in the pool as slots without an fd, used up by the next
 * fence (see conn.pool), and the next fills start small again. A fill
 * still on its way is left alone: its fds are in the socket, not in our
 * fd table, until a request reads them.
 */
static void pool_give_back_locked(void)
{
	for (unsigned int i = 0; i < conn.pool_count; i++) {
		unsigned int at = (conn.pool_head + i) % FL_PROTO_POOL_FILL_MAX;

		fl__fdid_close(conn.pool[at], &conn.pool_id[at]);
		fl__fdid_close(conn.pool_sig[at], &conn.pool_sig_id[at]);
		conn.pool[at] = -1;
		conn.pool_sig[at] = -1;
	}
	conn.pool_batch = 0;
}

/*
 * Under conn.rpc.lock: close the signal ends of fences that nobody holds any
 * more (every copy of the fence fd was closed: the end hangs up). Nobody
 * can wait on such a fence, and the daemon lets go of it too; without this
 * a program that drops pending fences would keep their ends until the
 * timeline is signalled past them.
 */
/* An entry whose end kept_sweep_locked() closed (fd -1) goes. */
static bool kept_open(struct fl__kept *k, void *arg)
{
	(void)arg;
	return k->fd >= 0;
}

static void kept_sweep_locked(void)
{
	struct pollfd p[64];

	for (unsigned int o = 0; o < conn.nowned; o++) {
		struct fl__kept_list *l = &conn.owned[o].kept;

		for (unsigned int i = l->head; i < l->n; i += FL_ARRAY_SIZE(p)) {
			unsigned int m = FL_MIN(l->n - i, (unsigned int)FL_ARRAY_SIZE(p));

			for (unsigned int j = 0; j < m; j++)
				p[j] = (struct pollfd){ l->v[i + j].fd, 0, 0 };
			if (poll(p, m, 0) <= 0)
				continue;
			/* Every holder gone: POLLHUP on a socket, POLLERR on a pipe's write end. */
			for (unsigned int j = 0; j < m; j++)
				if (p[j].revents & (POLLHUP | POLLERR | POLLNVAL)) {
					fl__fdid_close(l->v[i + j].fd, &l->v[i + j].id);
					l->v[i + j].fd = -1;
				}
		}
		conn.nkept -= fl__kept_list_filter(l, kept_open, NULL);
	}
}

/*
 * A write into a pipe whose readers are all gone raises SIGPIPE, which
 * would kill a program that does not ignore it (a pipe has no
 * MSG_NOSIGNAL). So it is blocked around our writes, once for all the ends
 * one signal completes, and one we raised is taken before the mask is
 * restored. Only a thread that blocked SIGPIPE itself can have one pending
 * already (the program's, which stays).
 */
struct sigpipe_guard {
	bool blocked, theirs;
	bool raised; /* a write of ours failed with EPIPE: a SIGPIPE of ours is pending */
	sigset_t old;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
	sigset_t set, pending;

	if (g->blocked)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
	g->theirs = sigismember(&g->old, SIGPIPE) && sigpending(&pending) == 0 &&
		    sigismember(&pending, SIGPIPE);
	g->blocked = true;
}

static void sigpipe_restore(struct sigpipe_guard *g)
{
	sigset_t set, pending;
	struct timespec zero = { 0, 0 };

	if (!g->blocked)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	/* One syscall when nothing failed: a signaller's waiters may share its CPU. */
	if (g->raised && !g->theirs && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
		while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
	g->blocked = false;
	g->raised = false;
}

/*
 * Write @len bytes of @buf into pipe end @fd, raising no SIGPIPE: with
 * RWF_NOSIGNAL where the kernel has it, no mask (the owner's signal is on
 * its waiters' path: a same-CPU waiter wakes at the write), else @g's mask.
 */
static void pipe_write_nosignal(int fd, const void *buf, size_t len, struct sigpipe_guard *g)
{
	if (fl__pipe_write_nosignal(fd, buf, len) != -EOPNOTSUPP)
		return;
	sigpipe_block(g);
	if (write(fd, buf, len) < 0 && errno == EPIPE)
		g->raised = true;
}

/*
 * Under conn.rpc.lock: complete the fence of the kept end @k (checked ours)
 * with @rec, and close the end. A pipe's end is the fence's only write end
 * (the daemon closed its own on FENCE_NEW): a success's record goes in
 * twice in one write, as the core writes it (holders in other processes
 * read the status from the byte count), and our close is the fd's
 * readiness. Nothing is written into a pipe that holds a record already:
 * the daemon failed the fence (a FENCE_NEW it refused), and the status
 * must stay what it was. Only @look says to look (FIONREAD): the daemon
 * flags a timeline's page (its failed word) before it writes such a
 * record, so a step of a timeline whose page is not flagged writes at once
 * (one syscall less per fence, of five). A socket pair's end (FENCELINE_FD_KIND=socket)
 * gets one record; EPIPE there means the daemon completed it already. No
 * shutdown: the daemon sees our record and adds none, while a shutdown
 * would wake its fd watcher, which then competes with the waiters for a
 * CPU just as they wake.
 */
static void kept_complete(const struct fl__kept *k, const struct fl__record *rec, bool look,
			  struct sigpipe_guard *g)
{
	if (k->id.fifo) {
		struct fl__record recs[2] = { *rec, *rec };
		size_t len = rec->status == 1 ? sizeof(recs) : sizeof(*rec);
		int queued = -1;

		if (!look || (ioctl(k->fd, FIONREAD, &queued) == 0 && queued == 0))
			pipe_write_nosignal(k->fd, recs, len, g);
	} else {
		(void)!send(k->fd, rec, sizeof(*rec), MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	close(k->fd);
}

/*
 * Under conn.rpc.lock: read the kick pipe @fd (struct fl_proto_kick): the
 * daemon completed fences whose pipe signal ends we keep (another process
 * signalled the timeline through it, the timeline died, or a step of ours
 * went through it). Their ends get the daemon's record and are closed.
 * Run when the kick pipe is readable and after our own requests, which may
 * have done either.
 */
static void kept_kicked_locked(int fd)
{
	struct sigpipe_guard g = { false };
	struct fl_proto_kick k[16];
	bool ack = false;
	ssize_t n;

	while ((n = read(fd, k, sizeof(k))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(k[0]); i++) {
			struct fl__record rec = { FL__RECORD_MAGIC, k[i].status,
						  k[i].timestamp_ns };

			conn.kicks_read++;
			conn.stats.kicks++;
			if (k[i].flags & FL_KICK_F_ACK)
				ack = true;

			for (unsigned int j = 0; j < conn.nowned; j++) {
				struct fl__kept_list *l = &conn.owned[j].kept;
				struct fl__kept *e =
					fl__kept_list_find_slot(l, (uint32_t)k[i].slot);

				if (!e || !e->id.fifo)
					continue;
				if (fl__fdid_is(e->fd, &e->id))
					kept_complete(e, &rec, true, &g);
				fl__kept_list_remove(l, e);
				conn.nkept--;
				break;
			}
		}
		if (n < (ssize_t)sizeof(k))
			break;
	}
	sigpipe_restore(&g);
	/*
	 * Another process's inc waits until these ends are closed (its
	 * SW_SYNC_IOC_INC returns with the fds ready): tell the daemon they
	 * are. One-way and never waiting; a daemon that is gone answers nobody.
	 */
	if (ack && conn.rpc.fd >= 0 && fl__fdid_is(conn.rpc.fd, &conn.rpc.id)) {
		struct fl_msg_hdr h = { FL_OP_KICK_ACK, 0, 0, sizeof(struct fl_msg_kick_ack) };
		struct fl_msg_kick_ack a = { conn.kicks_read };

		(void)fl__rpc_send_locked(&conn.rpc, &h, &a, sizeof(a), NULL, 0, MSG_DONTWAIT);
	}
}

/*
 * Under conn.rpc.lock, in watcher @w about to go with nothing kept: the
 * kicks that came since its last look are read (another process's step may
 * wait for them), and the daemon is told that nobody reads the pipe any
 * more (FL_KICK_ACK_GONE), so that no step waits for this process's
 * acknowledgement until a fill brings the pipe back to a new watcher. A
 * kick written after this is about an end we no longer keep.
 */
static void kick_pipe_leave_locked(struct watch *w)
{
	int kick = atomic_load(&w->kick_fd);
	struct fl_msg_hdr h = { FL_OP_KICK_ACK, 0, 0, sizeof(struct fl_msg_kick_ack) };
	struct fl_msg_kick_ack a = { FL_KICK_ACK_GONE };

	if (kick < 0 || !fl__fdid_is(kick, &w->kick_id))
		return;
	kept_kicked_locked(kick);
	/* A daemon before sync 4 has no KICK_ACK, and waits for nobody. */
	if (conn.served[FL_PROTO_SVC_SYNC] >= FL_KICK_ACK_SINCE && conn.rpc.fd >= 0 &&
	    fl__fdid_is(conn.rpc.fd, &conn.rpc.id))
		(void)fl__rpc_send_locked(&conn.rpc, &h, &a, sizeof(a), NULL, 0, MSG_DONTWAIT);
}

/* Under conn.rpc.lock: what the kick pipe holds now, if there is one. */
static void kept_settle_locked(void)
{
	if (conn.watch && atomic_load(&conn.watch->kick_fd) >= 0 &&
	    fl__fdid_is(atomic_load(&conn.watch->kick_fd), &conn.watch->kick_id))
		kept_kicked_locked(atomic_load(&conn.watch->kick_fd));
}

/*
 * The watcher, a thread that runs while this process holds signal ends or
 * pooled fds. Signal ends: a process that keeps them would otherwise keep
 * its fences' pipes open after the daemon died, and their waiters would
 * hang instead of reading end-of-file; when the connection (or the kick
 * pipe, which hangs up with it) hangs up, close them. And it completes the
 * kept fences the daemon tells it of through the kick pipe (another
 * process signalled, the timeline died). Pooled fds: once the program has made no fence for a tick (the
 * idle period), give them back. With nothing left to watch, it exits and
 * closes its own fds, so an idle program holds no more fds than its
 * connection.
 */
static void *watch_main(void *arg)
{
	struct watch *w = arg;
	struct pollfd p[3] = { { atomic_load(&w->conn_fd), POLLRDHUP, 0 },
			       { w->stop_fd, POLLIN, 0 },
			       { -1, POLLIN, 0 } };
	bool kicked;
	/*
	 * Ticks are at most WATCH_TICK_MS apart, so that a stop that could not
	 * wake us is seen soon; the pool goes back after enough idle ticks.
	 */
	unsigned int tick =
		conn.idle_ms ? FL_MIN(conn.idle_ms, (unsigned int)WATCH_TICK_MS) : WATCH_TICK_MS;
	unsigned int idle_ticks = 0, ticks_to_idle = (conn.idle_ms + tick - 1) / tick;
	bool hung_up = false, locked;

	pthread_setname_np(pthread_self(), "fl-conn-watch");

	while (!atomic_load(&w->stop)) {
		int n;

		/* Its hang-up tells what the connection's would (watch_give_kick_locked()). */
		if (p[2].fd < 0 && atomic_load(&w->kick_fd) >= 0) {
			p[2].fd = atomic_load(&w->kick_fd);
			p[0].fd = -1;
		}
		n = poll(p, 3, (int)tick);
		if (n < 0 || atomic_load(&w->stop))
			continue;
		kicked = false;
		/* A number the program took is polled no more. */
		if (p[0].fd >= 0 && !fl__fdid_is(p[0].fd, &w->conn_id))
			p[0].fd = -1;
		else if (n > 0 && p[0].revents)
			hung_up = true;
		if (!fl__fdid_is(w->stop_fd, &w->stop_id)) {
			p[1].fd = -1;
		} else if (n > 0 && p[1].revents) {
			uint64_t v;

			/* Not a stop: woken to poll the kick pipe too. */
			(void)!read(w->stop_fd, &v, sizeof(v));
		}
		if (p[2].fd >= 0 && !fl__fdid_is(p[2].fd, &w->kick_id)) {
			p[2].fd = -1;
		} else if (p[2].fd >= 0 && n > 0 && (p[2].revents & POLLIN)) {
			kicked = true;
		} else if (p[2].fd >= 0 && n > 0 && p[2].revents) {
			/* The daemon closed its end: it is gone, or dropped us. */
			hung_up = true;
		}
		/*
		 * conn.rpc.lock's holder may be joining us (it dropped the
		 * connection meanwhile), so never block on the lock: try, and
		 * give up once told to stop. A request waiting for its answer
		 * counts as holding it: its thread settles the kicks when the
		 * answer comes (call()), and a watcher that took the lock for
		 * each kick would make that thread wait for it, a wake-up and
		 * a switch per request (3x slower in a loop of an owner's
		 * signals and merges).
		 */
		locked = false;
		for (unsigned int tries = 0; !atomic_load(&w->stop); tries++) {
			/*
			 * But kicks the waiter's answer may depend on: another
			 * process's inc waits for our KICK_ACK, and may be what
			 * our waiter waits for (each signalling a timeline the
			 * other owns). After a few tries, settle them anyway.
			 */
			if (pthread_mutex_trylock(&conn.rpc.lock) == 0) {
				if (!conn.rpc.waiters || (kicked && tries >= 2)) {
					locked = true;
					break;
				}
				pthread_mutex_unlock(&conn.rpc.lock);
			}
			poll(NULL, 0, 1);
		}
		if (!locked)
			break;
		if (atomic_load(&conn.rpc.generation) != w->generation) {
			pthread_mutex_unlock(&conn.rpc.lock);
			break;
		}
		/* Polled no more: the kick pipe took its place. Under the lock, as fork reads it. */
		if (p[0].fd < 0 && atomic_load(&w->conn_fd) >= 0)
			fl__fdid_close(atomic_exchange(&w->conn_fd, -1), &w->conn_id);
		if (hung_up) {
			kept_drop_locked();
			pthread_mutex_unlock(&conn.rpc.lock);
			FL_LOG("daemon", "connection hung up: signal ends closed");
			break;
		}
		if (kicked)
			kept_kicked_locked(p[2].fd);
		idle_ticks = conn.uses == w->seen_uses ? idle_ticks + 1 : 0;
		if (conn.idle_ms && idle_ticks >= ticks_to_idle) {
			if (pool_has_fds_locked())
				FL_LOG("daemon", "pool idle for %u ms: pooled fds given back",
				       conn.idle_ms);
			pool_give_back_locked();
			kept_sweep_locked();
		}
		w->seen_uses = conn.uses;
		if (!conn.nkept && !pool_has_fds_locked() &&
		    idle_ticks >= FL_MAX(ticks_to_idle, 1u)) {
			/*
			 * Nothing to watch, and idle for a while: gone, and nobody
			 * waits for us. A busy program must not start and end a
			 * thread per fence (the cost). The fds go under the lock,
			 * so that no fork() copies them.
			 */
			kick_pipe_leave_locked(w);
			fl__fdid_close(atomic_load(&w->conn_fd), &w->conn_id);
			fl__fdid_close(w->stop_fd, &w->stop_id);
			fl__fdid_close(atomic_load(&w->kick_fd), &w->kick_id);
			conn.watch = NULL;
			pthread_mutex_unlock(&conn.rpc.lock);
			free(w);
			return NULL;
		}
		pthread_mutex_unlock(&conn.rpc.lock);
	}
	{
		int seq = (int)w->seq;

		/* Nothing of @w after this: the joiner frees it once it sees @seq. */
		atomic_store(&w->done, true);
		atomic_store_explicit(&conn.watch_ended, seq, memory_order_release);
		fl__futex_wake_all(&conn.watch_ended);
	}
	return NULL;
}

static int watch_start_kick_locked(int kick);
static void watch_give_kick_locked(int fd);

/* Under conn.rpc.lock, connected: make sure a watcher runs. */
static int watch_start_locked(void)
{
	return watch_start_kick_locked(-1);
}

/*
 * Under conn.rpc.lock, connected: make sure a watcher runs, started with the
 * kick pipe @kick (ours to close; -1: none) instead of a copy of the
 * connection when it has one: its hang-up tells the same.
 */
static int watch_start_kick_locked(int kick)
{
	struct watch *w;
	pthread_attr_t attr;
	pthread_t thread;
	int r, fd;

	if (conn.watch) {
		r = atomic_load(&conn.watch->done) ? -ECONNRESET : 0;
		if (kick >= 0)
			watch_give_kick_locked(kick);
		return r;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		fl__close(kick);
		return -ENOMEM;
	}
	fd = kick >= 0 ? -1 : fcntl(conn.rpc.fd, F_DUPFD_CLOEXEC, 0);
	atomic_init(&w->conn_fd, fd);
	atomic_init(&w->kick_fd, kick);
	w->stop_fd = eventfd(0, EFD_CLOEXEC);
	if ((kick < 0 && (fd < 0 || fl__fdid_get(fd, &w->conn_id) < 0)) ||
	    (kick >= 0 && fl__fdid_get(kick, &w->kick_id) < 0) || w->stop_fd < 0 ||
	    fl__fdid_get(w->stop_fd, &w->stop_id) < 0) {
		r = -errno;
		fl__close(fd);
		fl__close(kick);
		fl__close(w->stop_fd);
		free(w);
		return r;
	}
	w->generation = atomic_load(&conn.rpc.generation);
	w->seen_uses = conn.uses;
	w->seq = ++conn.watch_seq;
	if (w->seq == (unsigned int)atomic_load(&conn.watch_ended))
		w->seq = ++conn.watch_seq; /* wrapped onto the last one's: never taken as ended */
	/*
	 * Detached, and waited for through conn.watch_ended instead of a
	 * join: a child forked while a watcher ran gets that thread's stack,
	 * and so its pthread_t, for its own first thread, and gcc 12's
	 * ThreadSanitizer, which keeps the parent's threads in a child, kills
	 * a program that joins or detaches a thread whose id two of its
	 * threads had ("dup thread with used id").
	 */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	r = fl__thread_start(&thread, &attr, watch_main, w);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		watch_free(w);
		return -r;
	}
	conn.watch = w;
	return 0;
}

/* The connection that answered this thread's last fl__client_call(). */
static _Thread_local unsigned int answered_generation;

unsigned int fl__client_answered_generation(void)
{
	return answered_generation;
}

bool fl__client_in_use(void)
{
	return atomic_load_explicit(&conn.in_use, memory_order_relaxed);
}

unsigned int fl__client_generation(void)
{
	return atomic_load_explicit(&conn.rpc.generation, memory_order_relaxed);
}

static void atfork_prepare(void)
{
	fl__rpc_fork_prepare(&conn.rpc);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&conn.rpc.lock);
}

static void atfork_child(void)
{
	atomic_store(&conn.in_use, false);
	atomic_store(&conn.unflushed, false);
	atomic_store(&conn.born_unflushed, false);
	fl__rpc_forked_locked(&conn.rpc);
	/* No watcher thread in the child: only its copies of the watcher's fds. */
	if (conn.watch) {
		watch_free(conn.watch);
		conn.watch = NULL;
	}
	pool_drop_locked();
	memset(&conn.stats, 0, sizeof(conn.stats));
	fl__status_page_forked();
	pthread_mutex_unlock(&conn.rpc.lock);
}

/* One request: a send that timed out (SO_SNDTIMEO) is -ETIMEDOUT. */
static int send_packet(int fd, const void *buf, size_t len, const int *fds, unsigned int nfds)
{
	ssize_t n = fl__proto_send(fd, buf, len, NULL, 0, fds, nfds, 0);

	if (n < 0)
		return n == -EAGAIN || n == -EWOULDBLOCK ? -ETIMEDOUT : (int)n;
	return n == (ssize_t)len ? 0 : -EPROTO;
}

/*
 * Read one reply carrying up to @max fds (fl__proto_recv_reply()). Our
 * control buffer holds the largest reply, a POOL_FILL with signal ends (a
 * fence fd and an end a slot, and the kick pipe), so more than @max is
 * -EPROTO, and fewer with MSG_CTRUNC is our fd table, not the room.
 */
static int recv_packet_fds(int fd, void *buf, size_t cap, int *fds, unsigned int max,
			   unsigned int *ret_nfds, bool *ret_short)
{
	return fl__proto_recv_reply(fd, buf, cap, fds, max, 2 * FL_PROTO_POOL_FILL_MAX + 1,
				    ret_nfds, ret_short);
}

int32_t fl__client_reply_status(const void *reply)
{
	return fl__rpc_status(reply);
}

/*
 * HELLO on a fresh connection, saying which services we speak; @served
 * gets what the daemon serves of them, @ret_page the fds of its status
 * page and of its info page (the caller's; -1: none).
 * Return: the daemon's pid or a negative errno.
 */
static int hello(int fd, uint32_t served[FL_PROTO_MAX_SERVICES], int ret_page[2])
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 0, sizeof(struct fl_msg_hello) },
		  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
	unsigned char buf[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_hello_reply)];
	struct fl_msg_hello_reply rep;
	unsigned int nfds = 0;
	int r, n, page[2] = { -1, -1 };
	bool page_short;

	r = send_packet(fd, &req, sizeof(req), NULL, 0);
	/*
	 * A daemon that refuses us answers before reading and hangs up, so our
	 * send can fail with EPIPE while its reply (-EACCES) waits to be read.
	 */
	if (r < 0 && r != -EPIPE && r != -ECONNRESET)
		return r;
	/* A page our full fd table could not take (page_short) is only a page less. */
	n = recv_packet_fds(fd, buf, sizeof(buf), page, 2, &nfds, &page_short);
	if (n <= 0)
		return n < 0 && r == 0 ? n : -ECONNRESET;
	memset(&rep, 0, sizeof(rep));
	r = fl__rpc_check(buf, n, FL_OP_HELLO, 0);
	/*
	 * A daemon of core version 8 or older checks HELLO's size before its
	 * version, and ours is longer: its answer -EPROTO means another
	 * protocol too. (A reply we cannot read stays -EPROTO.)
	 */
	if (r == 0)
		r = fl__client_reply_status(buf) == -EPROTO ? -EPROTONOSUPPORT
							    : fl__client_reply_status(buf);
	if (r == 0 && n != (int)sizeof(buf))
		r = -EPROTO;
	if (r == 0) {
		memcpy(&rep, buf + sizeof(struct fl_msg_hdr), sizeof(rep));
		r = rep.pid > 0 ? (int)rep.pid : -EPROTO;
	}
	/* It may only serve what we asked for, in a version we know. */
	for (unsigned int i = 0; r > 0 && i < FL_PROTO_MAX_SERVICES; i++)
		if (rep.services[i] > req.b.services[i])
			r = -EPROTO;
	if (r > 0)
		memcpy(served, rep.services, sizeof(rep.services));
	/* The info page only beside a status page, as the second fd. */
	if (r > 0 && nfds && (rep.flags & FL_HELLO_F_STATUS_PAGE)) {
		ret_page[0] = page[0];
		page[0] = -1;
		if (nfds == 2 && (rep.flags & FL_HELLO_F_INFO_PAGE)) {
			ret_page[1] = page[1];
			page[1] = -1;
		}
	}
	for (unsigned int i = 0; i < nfds; i++)
		fl__close(page[i]);
	return r;
}

static const char *daemon_binary(void)
{
	const char *env = getenv("FENCELINE_DAEMON");

	if (env && env[0])
		return env;
	if (access(FL_DAEMON_PATH, X_OK) == 0)
		return FL_DAEMON_PATH;
	return FL_DAEMON_BUILD_PATH;
}

/*
 * Start a daemon for @path. The daemon detaches by itself once it listens
 * (or finds another one starting), so the process we spawn exits soon and
 * is reaped here.
 */
static int spawn_daemon(const char *path)
{
	return fl__service_spawn("daemon", daemon_binary(), path);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Under conn.rpc.lock: is conn.rpc.fd still our connection? One fstat() per
 * call that uses it (see the top of this file). A number the program
 * closed or took loses us the connection and everything that came with it:
 * what is still ours is closed, what is not is forgotten.
 */
static bool conn_live_locked(void)
{
	return fl__rpc_live_locked(&conn.rpc);
}

/* What connect_daemon() found: a connection that said HELLO. */
struct fresh {
	int fd;
	struct fdid id;
	int page[2]; /* its status page's and info page's fds, or -1 */
	pid_t daemon_pid;
	unsigned int timeout_ms;
	uint32_t served[FL_PROTO_MAX_SERVICES];
};

/*
 * Connect to the daemon at this process's socket, starting one if none
 * answers and @may_spawn, and say HELLO. Touches nothing of conn: it runs
 * without conn.rpc.lock (ensure_connected_locked()).
 * Return: 0 and *@ret, or a negative errno (said on stderr when it is the
 * user's to mend).
 */
static int connect_daemon(bool may_spawn, struct fresh *ret)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint64_t deadline = 0;
	unsigned int backoff = 1, timeout_ms;
	bool spawned = false;
	int fd, r;

	r = fl__socket_path(path, sizeof(path));
	if (r < 0)
		return r;
	timeout_ms = env_ms("FENCELINE_REQUEST_TIMEOUT_MS", REQUEST_TIMEOUT_MS);
	for (;;) {
		fd = fl__service_connect(path, timeout_ms);
		if (fd >= 0) {
			r = fl__service_peer_trusted(fd, "daemon", path);
			if (r < 0) {
				close(fd);
				return r;
			}
			ret->page[0] = ret->page[1] = -1;
			r = hello(fd, ret->served, ret->page);
			if (r > 0 && fl__fdid_get(fd, &ret->id) == 0) {
				ret->fd = fd;
				ret->daemon_pid = r;
				ret->timeout_ms = timeout_ms;
				return 0;
			}
			fl__close(ret->page[0]);
			fl__close(ret->page[1]);
			close(fd);
			if (r == -EACCES)
				fprintf(stderr,
					"fenceline: the daemon at %s refuses uid %u (start it with "
					"--allow-uid, or use your own FENCELINE_SOCKET)\n",
					path, (unsigned int)geteuid());
			if (r == -EMFILE)
				fprintf(stderr,
					"fenceline: the daemon at %s is out of fds (see "
					"docs/daemon.md, \"File descriptor limits\")\n",
					path);
			if (r == -EPROTONOSUPPORT)
				fprintf(stderr,
					"fenceline: the daemon at %s speaks another protocol "
					"version than this library (%d)\n",
					path, FL_PROTO_VERSION);
			if (r == -ETIMEDOUT)
				fprintf(stderr,
					"fenceline: the daemon at %s did not answer within %u ms "
					"(FENCELINE_REQUEST_TIMEOUT_MS)\n",
					path, timeout_ms);
			/* ECONNRESET: a daemon exiting while idle; try again. */
			if (r != -ECONNRESET && r != -EPIPE)
				return r;
		} else if (fd != -ENOENT && fd != -ECONNREFUSED && fd != -ECONNRESET) {
			if (fd == -ETIMEDOUT)
				fprintf(stderr,
					"fenceline: connecting to %s timed out after %u ms: its "
					"daemon does not accept connections\n",
					path, timeout_ms);
			if (fd == -EACCES)
				fprintf(stderr, "fenceline: cannot connect to %s: %s\n", path,
					strerror(EACCES));
			return fd;
		}
		if (!spawned && !may_spawn)
			return -ENOENT;
		if (!spawned) {
			r = spawn_daemon(path);
			if (r < 0)
				return r;
			spawned = true;
			deadline = fl__now_ns() + START_TIMEOUT_MS * 1000000ull;
			continue;
		}
		if (fl__now_ns() > deadline) {
			fprintf(stderr, "fenceline: no daemon answers at %s\n", path);
			return -ECONNREFUSED;
		}
		sleep_ms(backoff);
		backoff = FL_MIN(backoff * 2, 50u);
	}
}

/*
 * Under conn.rpc.lock: make sure conn.rpc.fd is this process's live connection.
 * The connect, the HELLO and starting a daemon (up to START_TIMEOUT_MS)
 * run with conn.rpc.lock released, so that the threads that need no
 * connection (a close's sync, the watcher) are not held up; those that
 * need one wait here for the one thread connecting, as does fork()
 * (atfork_prepare()), so that no child inherits a half-made connection.
 */
/* What fl__rpc_connect_locked() runs, the lock released. */
struct connect_arg {
	bool may_spawn;
	struct fresh f;
};

static int connect_cb(void *arg)
{
	struct connect_arg *a = arg;
	int r = connect_daemon(a->may_spawn, &a->f);

	return r < 0 ? r : a->f.fd;
}

static int ensure_connected_locked(bool may_spawn)
{
	struct connect_arg a = { may_spawn, { .fd = -1, .page = { -1, -1 } } };
	struct fresh f;
	int r;

	if (!conn.atfork_done) {
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		conn.atfork_done = true;
	}
	r = fl__rpc_connect_locked(&conn.rpc, connect_cb, &a);
	if (r < 0) {
		fl__close(a.f.page[0]);
		fl__close(a.f.page[1]);
	}
	if (r <= 0)
		return r;
	f = a.f;
	/*
	 * The page is mapped (over the last connection's, see drop_locked())
	 * under the lock that its unmapping takes, and its fd closed at once:
	 * the program cannot close or replace what we use. A page that does
	 * not check out is only a page less.
	 */
	if (f.page[0] >= 0) {
		int m = fl__status_page_map(f.page[0], f.page[1]);

		if (m < 0)
			FL_LOG("daemon", "status page not used: %s", strerror(-m));
		close(f.page[0]);
	}
	fl__close(f.page[1]);
	memcpy(conn.served, f.served, sizeof(conn.served));
	conn.told = 0;
	conn.timeout_ms = f.timeout_ms;
	conn.idle_ms = env_ms("FENCELINE_POOL_IDLE_MS", POOL_IDLE_MS);
	conn.pool_max = FL_MIN(env_ms("FENCELINE_POOL_MAX", FL_PROTO_POOL_FILL_MAX),
			       (unsigned int)FL_PROTO_POOL_FILL_MAX);
	fl__fdpool_gate_init(&conn.gate);
	conn.pid = getpid();
	conn.oneway_seq = 0;
	conn.merge_unflushed = false;
	conn.kicks_read = 0;
	conn.daemon_pid = f.daemon_pid;
	atomic_store(&conn.in_use, true);
	return 0;
}

/*
 * Under conn.rpc.lock, before we let go of a connection the daemon may still
 * read: give back the pipe signal ends we keep (FENCE_RETURN), so that the
 * daemon completes their fences instead of failing them when our copies
 * close. One-way, each with its end; a send that fails leaves the rest to
 * fail (the daemon is gone or not reading).
 */
static void kept_return_locked(void)
{
	struct fl_msg_hdr h = { FL_OP_FENCE_RETURN, 0, 0, 0 };

	if (conn.rpc.fd < 0 || !fl__fdid_is(conn.rpc.fd, &conn.rpc.id))
		return;
	for (unsigned int i = 0; i < conn.nowned; i++)
		fl__kept_list_for_each(k, &conn.owned[i].kept)
		{
			if (!k->id.fifo || !fl__fdid_is(k->fd, &k->id))
				continue;
			/* Never waits: a daemon that reads nothing gets nothing back. */
			if (fl__rpc_send_locked(&conn.rpc, &h, NULL, 0, &k->fd, 1, MSG_DONTWAIT) <
			    0)
				return;
		}
}

/* Under conn.rpc.lock: the connection is about to go (rpc.c). */
static void rpc_dropping(void)
{
	if (conn.nkept)
		kept_return_locked();
}

/* Under conn.rpc.lock: it has gone, and its waiters have failed. */
static void rpc_dropped(void)
{
	/* What was sent on it is done or never will be. */
	atomic_store(&conn.unflushed, false);
	atomic_store(&conn.born_unflushed, false);
	conn.merge_unflushed = false;
	pool_drop_locked();
	/* The next daemon may not be this one: its page would tell nothing true. */
	fl__status_page_unmap();
}

static void drop_locked(void)
{
	fl__rpc_drop_locked(&conn.rpc);
}

/*
 * Under conn.rpc.lock, after a wait for an answer: drop the connection of
 * @generation if it is still ours (another thread may have dropped it
 * meanwhile, and connected again).
 */
static void lost_locked(unsigned int generation)
{
	fl__rpc_lost_locked(&conn.rpc, generation);
}

static void close_fds(const int *fds, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
}

static int pool_fill_take_locked(const unsigned char *buf, int n, int *fds, unsigned int nfds,
				 bool cut);

/*
 * Under conn.rpc.lock, for every reply read: the daemon has read every request
 * before this one, so the one-way requests sent before it are done.
 */
static void rpc_seen(uint32_t seq)
{
	if ((int32_t)(seq - conn.oneway_seq) > 0) {
		atomic_store(&conn.unflushed, false);
		atomic_store(&conn.born_unflushed, false);
	}
	if (conn.merge_unflushed && (int32_t)(seq - conn.merge_seq) > 0)
		conn.merge_unflushed = false;
}

/* Under conn.rpc.lock: a reply nobody waits for is a fill sent ahead, into the pool. */
static bool rpc_unclaimed(const unsigned char *buf, int n, int *fds, unsigned int nfds, bool cut)
{
	struct fl_msg_hdr h;

	memcpy(&h, buf, sizeof(h));
	if (!conn.fill_per || h.seq != conn.fill_seq)
		return false;
	(void)pool_fill_take_locked(buf, n, fds, nfds, cut);
	return true;
}

static void pump_locked(void)
{
	fl__rpc_pump_locked(&conn.rpc);
}

static int await_locked(struct fl__rpc_waiter *w)
{
	return fl__rpc_await_locked(&conn.rpc, w);
}

static int pool_settle_locked(void);

/*
 * Whether the daemon, serving @op, may complete fences whose signal ends the
 * requester keeps, and must have them closed before the call returns: a
 * step, a failure, a flush after one-way creations. Merges, info and
 * deadlines only catch up with counters, which completes what the owner
 * reached itself (no kick): reading the kick pipe after them (an fstat()
 * and a read()) found nothing, and a kick another process's request
 * caused meanwhile is the watcher's to read, as at any other time.
 */
static bool may_kick_requester(uint32_t op)
{
	switch (op) {
	case FL_OP_FENCE_MERGE:
	case FL_OP_FENCE_INFO:
	case FL_OP_FENCE_SET_DEADLINE:
	case FL_OP_FENCE_GET_DEADLINE:
		return false;
	default:
		return true;
	}
}

/*
 * Under conn.rpc.lock, connected: does the daemon serve @op, in a version of
 * its service that has it? A newer library than its daemon uses the
 * services both know; a call into the rest fails here, said once per
 * connection and service on stderr, instead of being refused by the
 * daemon, which would hang up on us.
 * Return: 0 or -EPROTONOSUPPORT.
 */
static int served_locked(uint32_t op)
{
	static const char *const names[] = { "sync", "heap", "observe" };
	uint32_t svc;
	int since = fl__proto_op_since(op, &svc);

	if (since < 0 || svc == FL_PROTO_SVC_CORE || conn.served[svc] >= (uint32_t)since)
		return 0;
	FL_LOG("daemon", "%s needs version %d of service %u, the daemon serves %u",
	       fl__proto_op_name(op), since, svc, conn.served[svc]);
	if (!(conn.told & (1u << svc))) {
		conn.told |= 1u << svc;
		fprintf(stderr,
			"fenceline: the daemon (pid %d) does not serve the %s service in version "
			"%d or later (it serves %u): its requests fail with EPROTONOSUPPORT\n",
			(int)conn.daemon_pid, svc < 3 ? names[svc] : "?", since, conn.served[svc]);
	}
	return -EPROTONOSUPPORT;
}

static int call(unsigned int generation, uint32_t op, uint32_t flags, const void *body,
		size_t body_len, const int *fds, unsigned int nfds, int oneway, void *reply,
		size_t reply_cap, int *ret_fd, bool may_spawn)
{
	struct fl_msg_hdr h = { op, flags, 0, (uint32_t)body_len };
	struct fl__rpc_waiter w = { .buf = reply, .cap = reply_cap };
	int r, n, attempt = 0, got = -1;

	if (ret_fd)
		*ret_fd = -1;
	if (sizeof(h) + body_len > FL_PROTO_MAX_REQUEST)
		return -EINVAL;
	pthread_mutex_lock(&conn.rpc.lock);
retry:
	/*
	 * A request naming a handle must go to the connection that gave it;
	 * that check is the connection's (one fstat() a call, not two).
	 */
	if (generation &&
	    (!conn_live_locked() || atomic_load(&conn.rpc.generation) != generation)) {
		r = -ESTALE;
		goto out;
	}
	r = generation ? 0 : ensure_connected_locked(may_spawn);
	if (r == 0)
		r = served_locked(op);
	if (r < 0)
		goto out;
	if (!oneway && pool_settle_locked() < 0) {
		r = -ECONNRESET;
		goto out;
	}
	r = fl__rpc_send_locked(&conn.rpc, &h, body, body_len, fds, nfds, 0);
	if (r == -ECONNRESET) {
		drop_locked();
		FL_LOG("daemon", "connection lost while sending %s", fl__proto_op_name(op));
		/* Nothing was done yet; a request naming no object can go to a new daemon. */
		if (nfds == 0 && attempt++ == 0)
			goto retry;
		r = -ECONNRESET;
		goto out;
	}
	if (r == -ETIMEDOUT) {
		drop_locked();
		FL_LOG("daemon", "%s timed out", fl__proto_op_name(op));
		goto out;
	}
	if (r < 0)
		goto out;
	if (oneway) {
		conn.oneway_seq = h.seq;
		atomic_store(&conn.unflushed, true);
		goto out;
	}
	w.seq = h.seq;
	w.fds = &got;
	w.max_fds = ret_fd ? 1 : 0;
	n = await_locked(&w);
	if (n >= 0 && ret_fd)
		*ret_fd = w.nfds ? got : -1;
	if (n >= 0 && fl__rpc_check(reply, n, op, h.seq) < 0) {
		if (ret_fd) {
			fl__close(*ret_fd);
			*ret_fd = -1;
		}
		n = -EPROTO;
	}
	if (n < 0 && n != -EMFILE) {
		lost_locked(w.generation);
		FL_LOG("daemon", "connection lost waiting for %s: %d", fl__proto_op_name(op), n);
		if (n == -ECONNRESET && nfds == 0 && attempt++ == 0 && op != FL_OP_TIMELINE_CREATE)
			goto retry;
		r = n;
		goto out;
	}
	if (n < 0) {
		r = n; /* the fd it carried did not fit in our fd table */
		goto out;
	}
	r = n;
	answered_generation = w.generation;
	/* It may have completed fences whose ends we keep (a step, a timeline's death). */
	if (conn.nkept && may_kick_requester(op))
		kept_settle_locked();
out:
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

/*
 * Under conn.rpc.lock, connected: send @req (@len bytes with its header, no
 * fds; the seq is set here) and read its reply, which must be @reply_len
 * bytes on success, with up to @max fds (*@nfds of them in @fds, the
 * caller's when this returns 0; closed otherwise), and in *@ret_generation
 * the generation of the connection that answered. conn.rpc.lock is released
 * while waiting for the reply.
 * Return: the reply's status, -EPROTO for a reply of the wrong size, or a
 * connection error (the connection is then dropped).
 */
static int roundtrip_fds_locked(void *req, size_t len, void *reply, size_t reply_len, int *fds,
				unsigned int max, unsigned int *nfds, unsigned int *ret_generation)
{
	struct fl_msg_hdr h;
	int r, n = 0, attempt = 0;

	*nfds = 0;
retry:
	r = pool_settle_locked();
	if (r < 0)
		return r;
	memcpy(&h, req, sizeof(h));
	r = fl__rpc_send_locked(&conn.rpc, &h, (char *)req + sizeof(h), len - sizeof(h), NULL, 0,
				0);
	if (r < 0) {
		drop_locked();
	} else {
		struct fl__rpc_waiter w = {
			.seq = h.seq, .buf = reply, .cap = reply_len, .fds = fds, .max_fds = max
		};

		n = await_locked(&w);
		*nfds = n >= 0 ? w.nfds : 0;
		*ret_generation = w.generation;
		if (n >= 0 && fl__rpc_check(reply, n, h.op, h.seq) < 0) {
			close_fds(fds, *nfds);
			n = -EPROTO;
		}
		if (n == -EMFILE)
			return n; /* read whole: the connection is fine */
		if (n < 0) {
			*nfds = 0;
			lost_locked(w.generation);
			r = n;
		}
	}
	/*
	 * A daemon that died since our last request (killed while we were
	 * idle) is found out only now. These requests carry no fds and create
	 * what they answer, so a new daemon can take them: the next call must
	 * work, not the one after it.
	 */
	if (r == -ECONNRESET && attempt++ == 0) {
		FL_LOG("daemon", "connection lost: %s again on a new one", fl__proto_op_name(h.op));
		r = ensure_connected_locked(true);
		if (r < 0)
			return r;
		goto retry;
	}
	if (r < 0)
		return r;
	r = fl__client_reply_status(reply);
	if (r == 0 && n != (int)reply_len)
		r = -EPROTO;
	if (r < 0) {
		close_fds(fds, *nfds);
		*nfds = 0;
	}
	return r;
}

/*
 * Under conn.rpc.lock, connected: ask for @count more pooled fds. The reply is
 * taken into the pool by whichever thread reads it (rpc_unclaimed()); one
 * that needs it now waits for it with pool_fill_recv_locked().
 */
static int pool_fill_send_locked(uint32_t count)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_pool_fill b;
	} req = { { FL_OP_POOL_FILL, 0, 0, sizeof(struct fl_msg_pool_fill) }, { count, 0 } };
	int r;

	/* Signal ends are only of use for fences of timelines we own. */
	req.b.flags = conn.nowned && conn.ends_score >= 0 ? FL_POOL_F_SIGNAL_ENDS : 0;
	/* The fds' identities with them: one fstat() per fill, not one per fd. */
	if (conn.served[FL_PROTO_SVC_SYNC] >= FL_POOL_INODES_SINCE)
		req.b.flags |= FL_POOL_F_INODES;
	r = fl__rpc_send_locked(&conn.rpc, &req.h, &req.b, sizeof(req.b), NULL, 0, 0);
	if (r < 0) {
		drop_locked();
		return r;
	}
	conn.fill_seq = req.h.seq;
	conn.fill_count = count;
	conn.stats.pool_fills++;
	conn.fill_per = req.b.flags & FL_POOL_F_SIGNAL_ENDS ? 2 : 1;
	conn.fill_result = 1;
	return 0;
}

static int watch_start_locked(void);

/*
 * A pooled fd's identity: from the fill's inode numbers (FL_POOL_F_INODES)
 * once one fstat() of the fill has given pipefs's st_dev and found its
 * first inode as the daemon said (@dev non-NULL), else its own fstat().
 * An identity that is wrong only makes the fd unusable (fl__fdid_is()).
 */
static int pool_fdid(int fd, const dev_t *dev, uint64_t ino, struct fdid *ret)
{
	if (!dev)
		return fl__fdid_get(fd, ret);
	*ret = (struct fdid){ *dev, (ino_t)ino, true };
	return 0;
}

/*
 * Under conn.rpc.lock, with a fill sent: take its reply (@n bytes at @buf, or
 * the connection's error, with @nfds @fds, taken; @cut: our full fd table
 * dropped some) into the pool. Near our fd limit the kernel installs only
 * the fds that fit: the fence fds come first, so we keep what arrived and
 * the slots whose fds did not become slots without an fd (see conn.pool);
 * the signal ends, which come last, are the first to go. Fills then start
 * small again and ask for no ends, which cost an fd each.
 */
static int pool_fill_take_locked(const unsigned char *buf, int n, int *fds, unsigned int nfds,
				 bool cut)
{
	enum { BASE = sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_pool_reply) };
	unsigned char reply[BASE + FL_PROTO_POOL_FILL_MAX * sizeof(uint64_t)] = { 0 };
	struct fl_msg_pool_reply rep = { { 0, 0 }, 0, 0 };
	uint64_t ino[FL_PROTO_POOL_FILL_MAX] = { 0 };
	unsigned int per = conn.fill_per;
	const dev_t *pipefs = NULL;
	struct fdid first;
	int r, kick = -1;

	conn.fill_per = 0;
	if (n > (int)sizeof(reply)) {
		close_fds(fds, nfds);
		nfds = 0;
		n = -EPROTO;
	} else if (n > 0) {
		memcpy(reply, buf, (size_t)n);
	}
	if (n >= 0 && fl__rpc_check(reply, n, FL_OP_POOL_FILL, conn.fill_seq) < 0)
		n = -EPROTO;
	r = n < 0 ? n : fl__client_reply_status(reply);
	if (r == 0) {
		memcpy(&rep, reply + sizeof(struct fl_msg_hdr), sizeof(rep));
		/* Pipe signal ends come with the kick pipe, last (the first to go when cut). */
		bool kicked = !cut && per == 2 && nfds == 2 * rep.count + 1;

		/* Sync 5's inode numbers follow, for pipes, or nothing does. */
		if ((n != BASE && n != (int)(BASE + rep.count * sizeof(uint64_t))) ||
		    (cut ? nfds > rep.count * per : rep.count * per != nfds && !kicked) ||
		    (!nfds && !cut) || !rep.count || rep.count > conn.fill_count ||
		    rep.first != conn.pool_slot + conn.pool_count ||
		    conn.pool_count + rep.count > FL_PROTO_POOL_FILL_MAX)
			r = -EPROTO;
	}
	conn.fill_result = r;
	conn.fill_got = r < 0 ? 0 : nfds;
	if (r < 0) {
		close_fds(fds, nfds);
		/* A refusal (-EMFILE, -ENOSPC) keeps the connection. */
		if (n < 0 || r == -EPROTO)
			drop_locked();
		return r;
	}
	if (!cut && per == 2 && nfds == 2 * rep.count + 1)
		kick = fds[--nfds];
	if (n > BASE && nfds) {
		memcpy(ino, reply + BASE, rep.count * sizeof(uint64_t));
		if (fl__fdid_get(fds[0], &first) == 0 && first.fifo && first.ino == ino[0])
			pipefs = &first.dev;
	}
	for (unsigned int i = 0; i < rep.count; i++) {
		unsigned int at = (conn.pool_head + conn.pool_count + i) % FL_PROTO_POOL_FILL_MAX;
		unsigned int sig = rep.count + i;

		conn.pool[at] = i < nfds ? fds[i] : -1;
		conn.pool_sig[at] = per == 2 && sig < nfds ? fds[sig] : -1;
		if (conn.pool[at] >= 0 &&
		    pool_fdid(conn.pool[at], pipefs, ino[i], &conn.pool_id[at]) < 0)
			conn.pool[at] = -1;
		if (conn.pool_sig[at] >= 0 &&
		    pool_fdid(conn.pool_sig[at], pipefs, ino[i], &conn.pool_sig_id[at]) < 0)
			conn.pool_sig[at] = -1;
	}
	conn.pool_count += rep.count;
	conn.stats.pool_fills_taken++;
	if (cut) {
		FL_LOG("daemon", "fd table full: %u of %u pooled fds arrived", nfds,
		       rep.count * per);
		conn.pool_batch = 0;
		conn.ends_score = -ENDS_SCORE_MAX;
	}
	/* Given back once the program is idle (the watcher), which also polls the kick pipe. */
	if (kick >= 0)
		(void)watch_start_kick_locked(kick);
	else if (conn.idle_ms && nfds)
		(void)watch_start_locked();
	return 0;
}

/*
 * Under conn.rpc.lock, with a fill sent: wait until its reply is in the pool
 * (whichever thread reads it takes it there, rpc_unclaimed()).
 * Return: 0, the daemon's refusal, or a connection error.
 */
static int pool_fill_recv_locked(void)
{
	unsigned int generation = atomic_load(&conn.rpc.generation);

	while (conn.fill_per && conn.rpc.fd >= 0 && atomic_load(&conn.rpc.generation) == generation)
		pump_locked();
	if (conn.rpc.fd < 0 || atomic_load(&conn.rpc.generation) != generation)
		return conn.fill_result < 0 ? conn.fill_result : -ECONNRESET;
	return conn.fill_result > 0 ? -ECONNRESET : conn.fill_result;
}

/*
 * Under conn.rpc.lock, before a request that waits for its reply: is there a
 * connection to send it on? A fill sent ahead no longer has to be read
 * first: replies go to their askers by number (rpc.c).
 */
static int pool_settle_locked(void)
{
	return conn.rpc.fd >= 0 ? 0 : -ECONNRESET;
}

/*
 * Under conn.rpc.lock: the oldest slot's request went out; its signal end,
 * if it still has one, goes (the daemon keeps its own write end).
 */
static void pool_used_locked(void)
{
	unsigned int at = conn.pool_head % FL_PROTO_POOL_FILL_MAX;

	fl__fdid_close(conn.pool_sig[at], &conn.pool_sig_id[at]);
	conn.pool_sig[at] = -1;
	conn.pool_head++;
	conn.pool_count--;
	conn.pool_slot++;
}

/*
 * Under conn.rpc.lock, connected: use up the oldest slot, whose fd we do not
 * have, with a fence of its own (of @handle, for value 0: complete at once
 * and held by nobody, it goes as soon as it comes), so that the next slot
 * is the oldest. The daemon takes slots strictly in order.
 */
static int slot_skip_locked(uint32_t handle)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_new b;
	} req = { { FL_OP_FENCE_NEW, 0, 0, sizeof(struct fl_msg_fence_new) },
		  { .value = 0, .handle = handle } };
	int r;

	fl__name_copy(req.b.name, sizeof(req.b.name), UNUSED_SLOT_NAME);
	req.b.slot = conn.pool_slot;
	r = fl__rpc_send_locked(&conn.rpc, &req.h, &req.b, sizeof(req.b), NULL, 0, 0);
	if (r < 0) {
		drop_locked();
		return r;
	}
	pool_used_locked();
	return 0;
}

/*
 * Under conn.rpc.lock, connected: have a pooled fd of ours at the head of the
 * pool, for a fence of @handle. Only an empty pool waits here: the first
 * fill of a connection (4 fds: a process making one fence should not hold
 * 32), or one after the pool was given back; the rest are asked for ahead
 * and grow (8, 16, 32) in pool_fill_ahead_locked(). At most conn.pool_max
 * unused (32).
 * Return: 0; -EMFILE when a fill brought no fd (our fd table is full); a
 * connection error or the daemon's.
 */
static int pool_take_ready_locked(uint32_t handle)
{
	/* A pool that does not pay (fdpool-gate.c) is as if FENCELINE_POOL_MAX were 0. */
	unsigned int max = fl__fdpool_gate_pooling(&conn.gate) ? conn.pool_max : 0;
	bool filled = false;
	int r;

	for (;;) {
		while (conn.pool_count) {
			unsigned int at = conn.pool_head % FL_PROTO_POOL_FILL_MAX;

			if (fl__fdid_is(conn.pool[at], &conn.pool_id[at]))
				return 0;
			if (conn.pool[at] >= 0)
				FL_LOG("daemon",
				       "pooled fd %d is no longer ours: its slot goes unused",
				       conn.pool[at]);
			r = slot_skip_locked(handle);
			if (r < 0)
				return r;
		}
		/*
		 * A fill that brought fds which other threads took while we
		 * waited is no sign of a full fd table: fill again.
		 */
		if (filled && !conn.fill_got)
			return -EMFILE;
		if (!filled)
			conn.stats.pool_waits++;
		if (!conn.fill_per) {
			conn.pool_batch = conn.pool_batch
						  ? FL_MIN(conn.pool_batch * 2, FL_MAX(max, 1u))
						  : FL_MIN(4u, FL_MAX(max, 1u));
			r = pool_fill_send_locked(conn.pool_batch);
			if (r < 0)
				return r;
		}
		r = pool_fill_recv_locked();
		if (r < 0)
			return r;
		filled = true;
	}
}

/*
 * Under conn.rpc.lock, before a fence takes a pooled fd (and before its
 * request is sent): keep the pool from running dry without ever waiting
 * while it still has fds. Once it is down to half
 * the last fill, the next (twice as large, up to conn.pool_max unused) is
 * asked for ahead; its reply is taken once it has come, looked for when
 * the pool is down to a quarter, an eighth, ... (a poll() each time, no
 * read until it is there). Only a pool that is empty waits for a fill
 * (pool_take_ready_locked()), so a loop making fences of its own timeline
 * (fl-displayd's, every frame) does not block on the daemon once it runs.
 */
static void pool_fill_ahead_locked(void)
{
	unsigned int max = fl__fdpool_gate_pooling(&conn.gate) ? conn.pool_max : 0, next;

	if (conn.rpc.fd < 0 || !max)
		return;
	if (conn.fill_per) {
		/* At 8, 4, 2 and 1 left of 32: a few poll()s a fill, not one a fence. */
		if (conn.pool_count <= conn.pool_batch / 4 &&
		    !(conn.pool_count & (conn.pool_count - 1)))
			fl__rpc_read_arrived_locked(&conn.rpc);
		return;
	}
	if (!conn.pool_batch || conn.pool_count > conn.pool_batch / 2 || conn.pool_count >= max)
		return;
	next = FL_MIN(conn.pool_batch * 2, max);
	conn.pool_batch = next;
	(void)pool_fill_send_locked(FL_MIN(next, max - conn.pool_count));
}

/*
 * Signal ends served (or would have served) a signal: ask for them again at
 * once. One use outweighs any number of ends given up before it, so a
 * process that signals its fences keeps getting ends even if it also drops
 * many; only one that never signals stops asking.
 */
static void ends_useful_locked(void)
{
	conn.ends_score = FL_MIN(FL_MAX(conn.ends_score, 0) + 1, ENDS_SCORE_MAX);
}

static struct owned *owned_find_locked(uint32_t handle)
{
	for (unsigned int i = 0; i < conn.nowned; i++)
		if (conn.owned[i].handle == handle)
			return &conn.owned[i];
	return NULL;
}

int fl__client_owned_point(uint64_t timeline_id, uint64_t value)
{
	int r = -1;

	if (!timeline_id)
		return -1;
	pthread_mutex_lock(&conn.rpc.lock);
	for (unsigned int i = 0; i < conn.nowned; i++) {
		struct fl__counter *c = &conn.owned[i].counter;

		/* The page's id is the daemon's; the owner could only mislabel its own. */
		if (__atomic_load_n(&c->page->id, __ATOMIC_ACQUIRE) != timeline_id)
			continue;
		/* A point of it failed, or is about to: the counter no longer tells. */
		if (!__atomic_load_n(&c->page->failed, __ATOMIC_ACQUIRE))
			r = fl__counter_reached(c, fl__counter_read(c), value);
		break;
	}
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

/*
 * Under conn.rpc.lock: the daemon reuses the handle of a timeline that is gone,
 * so a handle it gives again no longer names a timeline we own.
 */
static void owned_forget_locked(uint32_t handle)
{
	for (unsigned int i = 0; i < conn.nowned; i++)
		if (conn.owned[i].handle == handle) {
			conn.nkept -= fl__kept_list_filter(&conn.owned[i].kept, kept_close, NULL);
			fl__kept_list_free(&conn.owned[i].kept);
			fl__counter_unmap(&conn.owned[i].counter);
			conn.owned[i] = conn.owned[--conn.nowned];
			break;
		}
}

void fl__client_bound(unsigned int generation, uint32_t handle, int timeline_fd)
{
	struct owned *o;

	pthread_mutex_lock(&conn.rpc.lock);
	/*
	 * The daemon answers a timeline bound already with the handle it has:
	 * if that is the timeline we own (its fd's file), it stays ours, with
	 * its kept signal ends; only a handle given to another one means ours
	 * is gone.
	 */
	if (conn_live_locked() && atomic_load(&conn.rpc.generation) == generation &&
	    (!(o = owned_find_locked(handle)) || !fl__fdid_is(timeline_fd, &o->tl_id)))
		owned_forget_locked(handle);
	pthread_mutex_unlock(&conn.rpc.lock);
}

/*
 * Under conn.rpc.lock, with a watcher: does it poll the kick pipe? A pipe
 * signal end is kept only then, as only the kick tells us of fences the
 * daemon completed.
 */
static bool watch_has_kick_locked(void)
{
	return atomic_load(&conn.watch->kick_fd) >= 0;
}

/*
 * Under conn.rpc.lock: the kick pipe's read end @fd came with a pool fill. The
 * watcher takes it (and is woken to poll it) if it has none; else it goes.
 */
static void watch_give_kick_locked(int fd)
{
	uint64_t one = 1;

	if (!conn.watch || atomic_load(&conn.watch->kick_fd) >= 0 ||
	    fl__fdid_get(fd, &conn.watch->kick_id) < 0) {
		close(fd);
		return;
	}
	atomic_store(&conn.watch->kick_fd, fd);
	/*
	 * The kick pipe hangs up when the daemon drops us or dies, as the
	 * connection does: once woken, the thread polls it instead of its
	 * copy of the connection, which it closes (only it, so that no other
	 * thread closes a number it polls).
	 */
	if (fl__fdid_is(conn.watch->stop_fd, &conn.watch->stop_id))
		(void)!write(conn.watch->stop_fd, &one, sizeof(one));
}

/* How many signal ends the program's fd limit lets us keep (KEPT_FDS_USUAL). */
static unsigned int kept_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur <= KEPT_FDS_USUAL)
		return KEPT_MIN;
	if (rl.rlim_cur == RLIM_INFINITY ||
	    (rl.rlim_cur - KEPT_FDS_USUAL) / 4 >= KEPT_MAX - KEPT_MIN)
		return KEPT_MAX;
	return KEPT_MIN + (unsigned int)((rl.rlim_cur - KEPT_FDS_USUAL) / 4);
}

/* For fl__kept_list_filter(): keep what @arg's counter has not reached, close the rest. */
static bool kept_unreached(struct fl__kept *k, void *arg)
{
	struct owned *o = arg;

	if (!fl__counter_reached(&o->counter, fl__counter_read(&o->counter), k->value))
		return true;
	fl__fdid_close(k->fd, &k->id);
	return false;
}

/*
 * Under conn.rpc.lock, before FENCE_NEW: whether to keep @sig, the signal end
 * of a new fence of @handle for @value: only for a timeline of ours whose
 * counter has not reached the value, while there is room. The daemon is
 * told (FL_MSG_F_KEPT) and leaves that fence to us when our counter gets
 * there, so a kept end is only ever let go of once its fence is complete
 * (or its timeline, or the connection, is gone). Return: true (the caller
 * owns @sig and keeps it once the request is sent), or false (closed).
 */
static bool kept_prepare_locked(uint32_t handle, uint64_t value, int sig, const struct fdid *sig_id)
{
	struct owned *o = owned_find_locked(handle);

	/*
	 * An end is checked when it is used (a record written, a close), not
	 * here: an end whose number the program took is then left alone, and
	 * its fence left to the daemon. Keeping it costs no syscall.
	 */
	if (sig < 0) {
		if (o)
			o->unkept = true;
		return false;
	}
	if (!o || fl__counter_reached(&o->counter, fl__counter_read(&o->counter), value)) {
		fl__fdid_close(sig, sig_id);
		return false;
	}
	/* The limit follows the program's: read again when it is reached. */
	if (conn.nkept >= conn.kept_max)
		conn.kept_max = kept_limit();
	if (conn.nkept >= conn.kept_max) {
		/* Make room: ends of fences others signalled through the daemon go. */
		unsigned int gone = 0;

		for (unsigned int i = 0; i < conn.nowned; i++)
			gone += fl__kept_list_filter(&conn.owned[i].kept, kept_unreached,
						     &conn.owned[i]);
		conn.ends_score = FL_MAX(conn.ends_score - (int)gone, -ENDS_SCORE_MAX);
		conn.nkept -= gone;
	}
	/*
	 * Then ends of pending fences the program dropped (nobody holds them):
	 * their fds go now, not when the connection idles, and they count as
	 * ends given up unused. A poll() per 64 ends; a sweep that freed
	 * little waits a quarter of the limit's creations, so that a program
	 * holding its fences pays O(1) polls per fence, not one sweep each.
	 */
	if (conn.nkept >= conn.kept_max && conn.kept_sweep_wait) {
		conn.kept_sweep_wait--;
	} else if (conn.nkept >= conn.kept_max) {
		unsigned int gone = conn.nkept;

		kept_sweep_locked();
		gone -= conn.nkept;
		conn.ends_score = FL_MAX(conn.ends_score - (int)gone, -ENDS_SCORE_MAX);
		conn.kept_sweep_wait = gone < conn.kept_max / 4 ? conn.kept_max / 4 : 0;
	}
	/*
	 * Full of pending fences, or no watcher (without one the daemon's
	 * death could leave this fence's waiters hanging), or no memory to
	 * list it: the daemon completes this one.
	 */
	if (conn.nkept >= conn.kept_max || fl__kept_list_reserve(&o->kept) < 0 ||
	    watch_start_locked() < 0 || (sig_id->fifo && !watch_has_kick_locked())) {
		conn.ends_score = FL_MAX(conn.ends_score - 1, -ENDS_SCORE_MAX);
		fl__fdid_close(sig, sig_id);
		return false;
	}
	return true;
}

/*
 * Under conn.rpc.lock, connected, before a fence takes a pooled fd: the
 * pool's gate (fdpool-gate.c) picks how. A bare sample first makes one fd
 * with a round trip of its own, into the pool's tail, and times it; it
 * waits for a fill already on its way first, as only one is ever out.
 * *@ret_t0 and *@ret_waits are for fdpool_sample_end_locked().
 */
static int fdpool_sample_begin_locked(enum fl__fdpool_pick *ret_pick, uint64_t *ret_t0,
				      uint64_t *ret_waits)
{
	struct fl__fdpool_gate *g = &conn.gate;
	bool timed = fl__fdpool_gate_timed(g);
	uint64_t t0;
	int r;

	*ret_pick = fl__fdpool_gate_pick(g);
	*ret_waits = conn.stats.pool_waits;
	*ret_t0 = *ret_pick != FL_FDPOOL_PICK_POOL && timed ? fl__fdpool_gate_now() : 0;
	if (*ret_pick != FL_FDPOOL_PICK_BARE_SAMPLE || !timed) {
		if (*ret_pick == FL_FDPOOL_PICK_BARE_SAMPLE)
			fl__fdpool_gate_record(g, true, 0);
		return 0;
	}
	*ret_pick = FL_FDPOOL_PICK_POOL;
	/*
	 * Not into an empty pool with no fill on its way: the fence waits
	 * for a fill anyway, and after a sample's fill of one it would leave
	 * the pool empty, with none asked for ahead (a connection's first).
	 */
	if (!conn.pool_count && !conn.fill_per)
		return 0;
	r = conn.fill_per ? pool_fill_recv_locked() : 0;
	/*
	 * No room for the sample's fd in a full pool: its reply would not fit
	 * (pool_fill_take_locked() takes that for a protocol error and drops
	 * the connection; found by the fence-state fuzzer). No sample then.
	 */
	if (r == 0 && conn.pool_count >= FL_PROTO_POOL_FILL_MAX)
		return 0;
	t0 = fl__fdpool_gate_now();
	if (r == 0)
		r = pool_fill_send_locked(1);
	if (r == 0)
		r = pool_fill_recv_locked();
	/* A sample only: the fence goes on as it would have, and fails only with the connection. */
	if (r == 0)
		fl__fdpool_gate_record(g, true, fl__fdpool_gate_now() - t0);
	return conn.rpc.fd < 0 ? -ECONNRESET : 0;
}

/* The pool's part of a fence creation, timed if it did not have to wait for a fill. */
static void fdpool_sample_end_locked(enum fl__fdpool_pick pick, uint64_t t0, uint64_t waits)
{
	if (pick != FL_FDPOOL_PICK_POOL_SAMPLE || conn.stats.pool_waits != waits)
		return;
	if (fl__fdpool_gate_record(&conn.gate, false,
				   fl__fdpool_gate_timed(&conn.gate) ? fl__fdpool_gate_now() - t0
								     : 0))
		FL_LOG("daemon",
		       "fence fds made ahead do not pay here (%llu ns a fence against "
		       "%llu ns a round trip): each fence waits for its own from now on",
		       (unsigned long long)conn.gate.pooled_ns,
		       (unsigned long long)conn.gate.bare_ns);
}

/*
 * Under conn.rpc.lock: a new fence of our own timeline for a value our
 * counter reached is born signalled, as the kernel's (timestamp: now, its
 * creation). The pooled pipe's signal end *@sig (ours, -1 if none) gets
 * the success's two records, as the core writes them, and is closed: the
 * fd polls ready (POLLIN) before FENCE_NEW is even sent, with no round
 * trip, and reads signalled from its bytes (32 queued) in any process. The
 * daemon, which keeps its own write end until FENCE_NEW, then completes
 * it as signalled too (the same counter): its records come after ours,
 * and its end-of-file. Return: true if done; false (no pipe end: wait for
 * the daemon instead).
 */
static bool born_complete(int *sig, struct fdid *sig_id)
{
	struct fl__record rec = { FL__RECORD_MAGIC, 1, fl__now_ns() };
	struct fl__record recs[2] = { rec, rec };
	bool done;

	if (*sig < 0 || !sig_id->fifo)
		return false;
	/* Our copy of the read end is in the pool: no EPIPE, and 32 bytes always fit. */
	done = fl__fdid_is(*sig, sig_id);
	if (done) {
		done = write(*sig, recs, sizeof(recs)) == sizeof(recs);
		close(*sig); /* checked just now: still ours */
	}
	*sig = -1;
	if (done)
		ends_useful_locked();
	return done;
}

int fl__client_fence_new(unsigned int generation, uint32_t handle, uint64_t value, const char *name,
			 bool reply_wanted, int *ret_fd)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_new b;
	} req = { { FL_OP_FENCE_NEW, reply_wanted ? FL_MSG_F_REPLY : 0, 0,
		    sizeof(struct fl_msg_fence_new) },
		  { .value = value, .handle = handle } };
	struct fl__rpc_waiter w = { .buf = reply, .cap = sizeof(reply) };
	enum fl__fdpool_pick pick;
	struct fdid fid, sig_id;
	uint64_t t0, waits;
	unsigned int at;
	int r, n, fd, sig;
	bool keep, born = false;

	fl__name_copy(req.b.name, sizeof(req.b.name), name);
	pthread_mutex_lock(&conn.rpc.lock);
	/* The handle is from the connection of that generation only. */
	if (!conn_live_locked() || atomic_load(&conn.rpc.generation) != generation) {
		r = -ESTALE;
		goto out;
	}
	/*
	 * A fence for a value already reached is born signalled: its fd must
	 * poll ready when we return. We can tell only for a timeline we own;
	 * for any other we wait for the daemon. For ours, the pooled fd's
	 * signal end completes it below, else we wait too.
	 */
	if (!reply_wanted) {
		struct owned *o = owned_find_locked(handle);

		born = o && fl__counter_reached(&o->counter, fl__counter_read(&o->counter), value);
		reply_wanted = !o;
	}
	conn.uses++;
	r = fdpool_sample_begin_locked(&pick, &t0, &waits);
	if (r < 0)
		goto out;
	/*
	 * Before our own request goes out, not after: a reply read here must
	 * find its waiter registered (rpc.c), and ours would not be yet.
	 */
	pool_fill_ahead_locked();
	if (conn.rpc.fd < 0) {
		r = -ECONNRESET;
		goto out;
	}
	r = pool_take_ready_locked(handle);
	if (r < 0)
		goto out;
	fdpool_sample_end_locked(pick, t0, waits);
	at = conn.pool_head % FL_PROTO_POOL_FILL_MAX;
	fd = conn.pool[at];
	fid = conn.pool_id[at];
	sig = conn.pool_sig[at];
	sig_id = conn.pool_sig_id[at];
	conn.pool_sig[at] = -1;
	if (born && !born_complete(&sig, &sig_id)) {
		reply_wanted = true;
		/* An end would have served: have the next fills bring them again. */
		ends_useful_locked();
	}
	if (reply_wanted)
		req.h.flags |= FL_MSG_F_REPLY;
	keep = kept_prepare_locked(handle, value, sig, &sig_id);
	if (keep)
		req.h.flags |= FL_MSG_F_KEPT;
	req.b.slot = conn.pool_slot;
	r = fl__rpc_send_locked(&conn.rpc, &req.h, &req.b, sizeof(req.b), NULL, 0, 0);
	if (r < 0) {
		if (keep)
			fl__fdid_close(sig, &sig_id);
		drop_locked();
		goto out;
	}
	conn.pool_head++;
	conn.pool_count--;
	conn.pool_slot++;
	if (keep) {
		/* Listed after the send, room made before it (kept_prepare_locked()). */
		struct owned *o = owned_find_locked(handle);

		fl__kept_list_add(&o->kept, o->counter.is32,
				  &(struct fl__kept){ value, sig, sig_id, req.b.slot });
		conn.nkept++;
	}
	if (!reply_wanted) {
		/*
		 * A born-signalled one's fd is ready already: no status call
		 * need wait. Closing its timeline must (fl_timeline_fd_close()),
		 * or the daemon may see the timeline die before it made it.
		 */
		conn.oneway_seq = req.h.seq;
		atomic_store(born ? &conn.born_unflushed : &conn.unflushed, true);
		*ret_fd = fd;
		goto out;
	}
	w.seq = req.h.seq;
	n = await_locked(&w);
	if (n >= 0 && fl__rpc_check(reply, n, FL_OP_FENCE_NEW, req.h.seq) < 0)
		n = -EPROTO;
	if (n < 0) {
		fl__fdid_close(fd, &fid);
		lost_locked(w.generation);
		r = n;
		goto out;
	}
	r = fl__client_reply_status(reply);
	if (r < 0) {
		fl__fdid_close(fd, &fid);
		/* Unless its connection went meanwhile, and its kept ends with it. */
		if (atomic_load(&conn.rpc.generation) != w.generation || conn.rpc.fd < 0)
			keep = false;
		struct owned *o = keep ? owned_find_locked(handle) : NULL;
		struct fl__kept *k = o ? fl__kept_list_find_slot(&o->kept, req.b.slot) : NULL;

		if (k && k->fd == sig) {
			fl__fdid_close(sig, &sig_id);
			fl__kept_list_remove(&o->kept, k);
			conn.nkept--;
		}
	} else {
		*ret_fd = fd;
	}
out:
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

/*
 * Under conn.rpc.lock, connected: FENCE_MERGE_INTO of @fd1 and @fd2
 * (borrowed) into the oldest pooled slot, which stays the caller's to use
 * up (pool_used_locked()). Return: the request's seq, or -EAGAIN: nothing
 * sent, merge with the round trip, which tells what is wrong (EBADF: fd2
 * is no longer open; any other error dropped the connection).
 */
static int64_t merge_into_send_locked(int fd1, int fd2, const char *name, uint32_t flags)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_merge_into b;
	} req = { { FL_OP_FENCE_MERGE_INTO, 0, 0, sizeof(struct fl_msg_fence_merge_into) },
		  { .flags = flags, .slot = conn.pool_slot } };
	int fds[2] = { fd1, fd2 };
	int r;

	fl__name_copy(req.b.name, sizeof(req.b.name), name);
	r = fl__rpc_send_locked(&conn.rpc, &req.h, &req.b, sizeof(req.b), fds, 2, 0);
	if (r < 0) {
		if (r != -EBADF)
			drop_locked();
		return -EAGAIN;
	}
	return req.h.seq;
}

int fl__client_merge_signalled(int fd1, int fd2, const char *name, uint32_t flags, int *ret_fd)
{
	struct fl__record rec = { FL__RECORD_MAGIC, 1, 0 };
	struct fl__record recs[2] = { rec, rec };
	int r = -EAGAIN, queued = -1, since;
	int64_t seq;
	uint32_t svc;
	unsigned int at;

	pthread_mutex_lock(&conn.rpc.lock);
	/*
	 * Our daemon only, one that serves it (an older one: the round trip,
	 * with nothing said), and a ready slot of ours with its signal end.
	 */
	since = fl__proto_op_since(FL_OP_FENCE_MERGE_INTO, &svc);
	if (!conn_live_locked() || since < 0 || conn.served[svc] < (uint32_t)since)
		goto out;
	conn.uses++;
	pool_fill_ahead_locked();
	at = conn.pool_head % FL_PROTO_POOL_FILL_MAX;
	if (conn.rpc.fd < 0 || !conn.pool_count || conn.pool_sig[at] < 0 ||
	    !conn.pool_sig_id[at].fifo || !fl__fdid_is(conn.pool[at], &conn.pool_id[at]) ||
	    !fl__fdid_is(conn.pool_sig[at], &conn.pool_sig_id[at]))
		goto out;
	seq = merge_into_send_locked(fd1, fd2, name, flags);
	if (seq < 0)
		goto out;
	/*
	 * Ready before we return, in every process: the success's records,
	 * stamped 0 so that every reader takes the daemon's time (the
	 * merge's, as the round trip's would be: fl__pipe_stamp_of()). Not
	 * into a pipe the daemon completed first, which keeps its records.
	 */
	if (ioctl(conn.pool_sig[at], FIONREAD, &queued) == 0 && queued == 0)
		(void)!write(conn.pool_sig[at], recs, sizeof(recs));
	/* Checked ours above, under the lock, as born_complete() closes its end. */
	close(conn.pool_sig[at]);
	conn.pool_sig[at] = -1;
	*ret_fd = conn.pool[at];
	pool_used_locked();
	ends_useful_locked();
	conn.oneway_seq = (uint32_t)seq;
	atomic_store(&conn.born_unflushed, true);
	r = 0;
out:
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

static void ping_locked(uint32_t flags);

/* Under conn.rpc.lock: the owned timeline the daemon calls @id, or NULL. */
static struct owned *owned_by_id_locked(uint64_t id)
{
	for (unsigned int i = 0; id && i < conn.nowned; i++)
		if (__atomic_load_n(&conn.owned[i].counter.page->id, __ATOMIC_ACQUIRE) == id)
			return &conn.owned[i];
	return NULL;
}

/*
 * Under conn.rpc.lock: is every point of @pts still pending on a timeline
 * we own, with nothing failed there? Only our steps (under this lock) and
 * the daemon's for another process move our counters.
 */
static bool merge_points_pending_locked(const struct fl__merge_point *pts, unsigned int npts)
{
	for (unsigned int i = 0; i < npts; i++) {
		struct owned *o = owned_by_id_locked(pts[i].timeline_id);

		if (!o || __atomic_load_n(&o->counter.page->failed, __ATOMIC_SEQ_CST) ||
		    fl__counter_reached(&o->counter, fl__counter_read(&o->counter), pts[i].value))
			return false;
	}
	return true;
}

int fl__client_kept_point(dev_t dev, ino_t ino, struct fl__merge_point *ret)
{
	int r = -ENOENT;

	pthread_mutex_lock(&conn.rpc.lock);
	for (unsigned int i = 0; r < 0 && i < conn.nowned; i++) {
		uint64_t id = __atomic_load_n(&conn.owned[i].counter.page->id, __ATOMIC_ACQUIRE);

		if (!id)
			continue;
		/* A signal end is a copy of the fence pipe's write end: the same inode. */
		fl__kept_list_for_each(e, &conn.owned[i].kept)
		{
			if (e->id.fifo && e->id.ino == ino && e->id.dev == dev) {
				*ret = (struct fl__merge_point){ id, e->value };
				r = 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

int fl__client_merge_oneway(int fd1, int fd2, const char *name, uint32_t flags,
			    const struct fl__merge_point *pts, unsigned int npts, int *ret_fd)
{
	int r = -EAGAIN;
	unsigned int at;
	int64_t seq;

	pthread_mutex_lock(&conn.rpc.lock);
	if (!conn_live_locked() || conn.served[FL_PROTO_SVC_SYNC] < FL_MERGE_ONEWAY_SINCE)
		goto out;
	/*
	 * Checked under the lock that our steps take: a step of ours either
	 * came before (and the merge goes the round trip) or comes after and
	 * sees merge_sent. The page's flag before the send: another process's
	 * step that the daemon answers after our send reads it, and then our
	 * queue (protocol.h, FENCE_MERGE_INTO). The pool is filled ahead only
	 * for a merge that takes a pooled fd.
	 */
	if (!merge_points_pending_locked(pts, npts))
		goto out;
	conn.uses++;
	pool_fill_ahead_locked();
	at = conn.pool_head % FL_PROTO_POOL_FILL_MAX;
	if (conn.rpc.fd < 0 || !conn.pool_count || conn.pool[at] < 0 ||
	    !fl__fdid_is(conn.pool[at], &conn.pool_id[at]))
		goto out;
	for (unsigned int i = 0; i < npts; i++) {
		struct owned *o = owned_by_id_locked(pts[i].timeline_id);

		o->merge_sent = true;
		if (!__atomic_load_n(&o->counter.page->oneway_merges, __ATOMIC_SEQ_CST))
			__atomic_store_n(&o->counter.page->oneway_merges, 1, __ATOMIC_SEQ_CST);
	}
	seq = merge_into_send_locked(fd1, fd2, name, flags);
	if (seq < 0)
		goto out;
	/* The daemon writes this fd; a signal end the slot came with is of no use. */
	*ret_fd = conn.pool[at];
	pool_used_locked();
	conn.oneway_seq = conn.merge_seq = (uint32_t)seq;
	conn.merge_unflushed = true;
	/* A timeline's close waits for it, as for a born-signalled creation. */
	atomic_store(&conn.born_unflushed, true);
	/*
	 * Another process's step (or failure) that the daemon answered before
	 * it could read our queue and after our check: wait until the daemon
	 * has made the merge, which then finds that point completed.
	 */
	if (!merge_points_pending_locked(pts, npts))
		ping_locked(0);
	r = 0;
out:
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

int fl__client_oneway_fd(uint32_t op, const void *body, size_t body_len, int fd)
{
	struct fl_msg_hdr h = { op, 0, 0, (uint32_t)body_len };
	uint32_t svc;
	int since = fl__proto_op_since(op, &svc), r = -EAGAIN;

	pthread_mutex_lock(&conn.rpc.lock);
	/* Asked only about the daemon we are connected to: never a new one. */
	if (since < 0 || !conn_live_locked() ||
	    (svc != FL_PROTO_SVC_CORE && conn.served[svc] < (uint32_t)since))
		goto out;
	r = fl__rpc_send_locked(&conn.rpc, &h, body, body_len, &fd, 1, 0);
	if (r < 0 && r != -EBADF) {
		drop_locked();
		r = -EAGAIN;
		goto out;
	}
	/* A deadline changes no status: nothing for a status call to wait for. */
out:
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

int fl__client_timeline_create(const char *name, unsigned int flags, int *ret_fd,
			       uint32_t *ret_handle, unsigned int *ret_generation)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_bind_reply)];
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} req = { { FL_OP_TIMELINE_CREATE, 0, 0, sizeof(struct fl_msg_timeline_create) },
		  { .flags = flags } };
	struct fl_msg_bind_reply rep;
	struct fl__counter counter;
	int fds[2], r;
	unsigned int nfds = 0, generation = 0;

	fl__name_copy(req.b.name, sizeof(req.b.name), name);
	pthread_mutex_lock(&conn.rpc.lock);
	r = ensure_connected_locked(true);
	if (r == 0)
		r = served_locked(FL_OP_TIMELINE_CREATE);
	if (r < 0)
		goto out;
	r = roundtrip_fds_locked(&req, sizeof(req), reply, sizeof(reply), fds, 2, &nfds,
				 &generation);
	if (r < 0)
		goto out;
	memcpy(&rep, reply + sizeof(struct fl_msg_hdr), sizeof(rep));
	if (nfds != ((rep.flags & FL_BIND_F_SHARED) ? 2u : 1u)) {
		close_fds(fds, nfds);
		r = -EPROTO;
		goto out;
	}
	/* Another thread may have dropped that connection since it answered. */
	if (atomic_load(&conn.rpc.generation) == generation && conn.rpc.fd >= 0)
		owned_forget_locked(rep.handle);
	if (nfds == 2) {
		/* Without room to track it, the timeline just goes through the daemon. */
		if (conn.nowned < OWNED_MAX && rep.handle < FL_PROTO_MAX_HANDLES &&
		    atomic_load(&conn.rpc.generation) == generation && conn.rpc.fd >= 0) {
			struct fdid tl_id;

			if (fl__counter_map(&counter, fds[1], flags != 0) == 0) {
				if (fl__fdid_get(fds[0], &tl_id) < 0)
					fl__counter_unmap(&counter);
				else
					conn.owned[conn.nowned++] =
						(struct owned){ rep.handle, false, counter, tl_id };
			}
		}
		close(fds[1]);
	}
	*ret_fd = fds[0];
	*ret_handle = rep.handle;
	*ret_generation = generation;
out:
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

/*
 * Under conn.rpc.lock, on the live connection: TIMELINE_SYNC of our
 * timeline @handle, the daemon's catch-up with our counter, and its answer.
 * A connection that broke is dropped (-ECONNRESET).
 */
static int timeline_sync_locked(uint32_t handle, unsigned int generation)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_sync b;
	} req = { { FL_OP_TIMELINE_SYNC, 0, 0, sizeof(struct fl_msg_timeline_sync) },
		  { handle, 0 } };
	int r, n;

	r = pool_settle_locked();
	if (r < 0)
		return r;
	r = fl__rpc_send_locked(&conn.rpc, &req.h, &req.b, sizeof(req.b), NULL, 0, 0);
	if (r == 0) {
		struct fl__rpc_waiter w = { .seq = req.h.seq, .buf = reply, .cap = sizeof(reply) };

		n = await_locked(&w);
		if (n >= 0 && fl__rpc_check(reply, n, FL_OP_TIMELINE_SYNC, req.h.seq) < 0)
			n = -EPROTO;
		r = n < 0 ? n : fl__client_reply_status(reply);
	}
	if (r == -EPIPE || r == -ENOTCONN || r == -ECONNRESET || r == -EPROTO ||
	    (r < 0 && r != -ENOENT && r != -EINVAL)) {
		lost_locked(generation);
		if (r == -EPIPE || r == -ENOTCONN)
			r = -ECONNRESET;
	}
	return r;
}

/*
 * Under conn.rpc.lock: the daemon is failing or failed points of one of
 * our timelines (its page's failed count moved) and the step about to
 * write kept ends may reach some. A PING, answered once the daemon's one
 * thread is done with the request it was in (the failure, whose kicks it
 * writes before it returns), then those kicks: the kept ends it failed get
 * its failure and leave the list, so that the step signals only the
 * others. A PING, not TIMELINE_SYNC: the daemon must not catch up with our
 * counter (and complete merges of these fences) before we wrote their
 * ends. Without a live connection there is no daemon to contradict.
 * Return: 0, or -ECONNRESET (the connection was lost: our entries for
 * owned timelines may be gone).
 */
static int kept_failures_locked(void)
{
	if (!conn_live_locked())
		return 0;
	ping_locked(0);
	kept_settle_locked();
	return conn_live_locked() ? 0 : -ECONNRESET;
}

int fl__client_owned_signal(unsigned int generation, uint32_t handle, uint64_t count,
			    uint64_t stamp_ns)
{
	struct fl__record rec = { FL__RECORD_MAGIC, 1, 0 };
	struct sigpipe_guard sigpipe = { false };
	struct owned *o;
	uint64_t now, failed;
	bool lost_end = false, look;
	int r, sync_r = 0;

	pthread_mutex_lock(&conn.rpc.lock);
	/*
	 * The connection's identity (an fstat()) is checked only where the
	 * connection is used: the counter, its page and the kept ends are ours
	 * whatever the program did to the connection's fd number, and a step
	 * no other process waits for needs nothing more (the fstat() alone
	 * costs about 2 getppids, the kernel's whole INC 1.1).
	 */
	if (conn.rpc.fd < 0 || atomic_load(&conn.rpc.generation) != generation) {
		r = -ESTALE;
		goto out;
	}
	o = owned_find_locked(handle);
	rec.timestamp_ns = stamp_ns;
	r = o ? fl__counter_add(&o->counter, count, &rec.timestamp_ns, &now) : -ENOSYS;
	if (r < 0)
		goto out;
	if (o->unkept) {
		o->unkept = false;
		ends_useful_locked();
	}
	/*
	 * Another process's TIMELINE_FAIL may have failed a kept fence this
	 * step reaches, its kick not read yet: our signalled record would
	 * contradict the daemon. The daemon counts `failed` up before it reads
	 * the counter, we after adding to it (both seq_cst), so either it saw
	 * our addition (and fails none of these) or we see its count: then we
	 * read its kicks first (kept_failures_locked()).
	 */
	failed = __atomic_load_n(&o->counter.page->failed, __ATOMIC_SEQ_CST);
	if (failed != o->failed_seen &&
	    fl__kept_list_next_reached(&o->kept, o->counter.is32, now)) {
		sync_r = kept_failures_locked();
		o = owned_find_locked(handle);
		if (!o) {
			r = sync_r < 0 ? sync_r : -ECONNRESET;
			goto out;
		}
		if (sync_r == 0)
			o->failed_seen = failed;
	}
	/*
	 * Our own fences first, straight into their fds: their waiters
	 * wake now, without waiting for the daemon to be scheduled.
	 */
	/* A daemon without the page's id (older) flags nothing: look then. */
	look = failed != 0 || !__atomic_load_n(&o->counter.page->id, __ATOMIC_ACQUIRE);
	for (struct fl__kept *k;
	     (k = fl__kept_list_next_reached(&o->kept, o->counter.is32, now));) {
		if (fl__fdid_is(k->fd, &k->id)) {
			kept_complete(k, &rec, look, &sigpipe);
		} else {
			/* The program took its number: the daemon must complete this one. */
			lost_end = true;
		}
		fl__kept_list_remove(&o->kept, k);
		conn.nkept--;
		ends_useful_locked();
	}
	sigpipe_restore(&sigpipe);
	/*
	 * A one-way merge of a pending point of ours that the daemon may not
	 * have read: it has not lowered sync_at for it, and does not catch up
	 * with our counter when it reads it, so our TIMELINE_SYNC completes it
	 * (fl__client_merge_oneway()).
	 */
	if (o->merge_sent && !conn.merge_unflushed)
		o->merge_sent = false;
	/*
	 * Then the daemon completes every other point before we return, if
	 * we reached one: below sync_at every pending point is one of ours.
	 * Even then, a daemon that died must not go unnoticed.
	 */
	if (!fl__counter_needs_daemon(&o->counter, now) && !lost_end && !o->merge_sent) {
		struct pollfd p = { conn.rpc.fd, POLLRDHUP, 0 };
		/* The status page's alive word tells with a load; else the connection's poll(). */
		int alive = fl__status_page_daemon_alive();

		r = sync_r;
		if (alive < 0)
			alive = !(poll(&p, 1, 0) > 0 &&
				  (p.revents & (POLLRDHUP | POLLHUP | POLLERR)));
		/* A number the program reused is not our connection: no news of the daemon. */
		if (!alive && conn_live_locked()) {
			drop_locked();
			r = -ECONNRESET;
		}
		goto out;
	}
	/* Added already: the caller has the daemon catch up through another connection. */
	if (!conn_live_locked()) {
		r = -EINPROGRESS;
		goto out;
	}
	r = timeline_sync_locked(handle, generation);
out:
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

/* Under conn.rpc.lock, on the live connection: a PING and its answer. */
static void ping_locked(uint32_t flags)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	struct fl_msg_hdr h = { FL_OP_PING, flags, 0, 0 };
	struct fl__rpc_waiter w = { .buf = reply, .cap = sizeof(reply) };
	int n = fl__rpc_send_locked(&conn.rpc, &h, NULL, 0, NULL, 0, 0);

	if (n < 0) {
		drop_locked();
		return;
	}
	w.seq = h.seq;
	n = await_locked(&w);
	if (n < 0 || fl__rpc_check(reply, n, FL_OP_PING, h.seq) < 0)
		lost_locked(w.generation);
}

static void flush(bool born_too)
{
	if (!atomic_load(&conn.unflushed) && !(born_too && atomic_load(&conn.born_unflushed)))
		return;
	pthread_mutex_lock(&conn.rpc.lock);
	/*
	 * Only this process's live connection has anything to flush; never
	 * connect (or start a daemon) just for this.
	 */
	if (conn_live_locked() &&
	    (atomic_load(&conn.unflushed) || (born_too && atomic_load(&conn.born_unflushed))) &&
	    pool_settle_locked() == 0)
		ping_locked(0); /* its answer settles what was sent before it (rpc_seen()) */
	pthread_mutex_unlock(&conn.rpc.lock);
}

void fl__client_flush(void)
{
	flush(false);
}

void fl__client_flush_all(void)
{
	flush(true);
}

void fl__client_sync_closes(void)
{
	pthread_mutex_lock(&conn.rpc.lock);
	if (conn_live_locked() && pool_settle_locked() == 0) {
		ping_locked(FL_MSG_F_AFTER_CLOSES);
		/* A timeline that died failed its fences: those whose ends we keep too. */
		if (conn.nkept)
			kept_settle_locked();
	}
	pthread_mutex_unlock(&conn.rpc.lock);
}

int fl__client_call(uint32_t op, uint32_t flags, const void *body, size_t body_len, const int *fds,
		    unsigned int nfds, int oneway, void *reply, size_t reply_cap, int *ret_fd)
{
	return call(0, op, flags, body, body_len, fds, nfds, oneway, reply, reply_cap, ret_fd,
		    true);
}

int fl__client_call_no_spawn(uint32_t op, const void *body, size_t body_len, const int *fds,
			     unsigned int nfds, void *reply, size_t reply_cap, int *ret_fd)
{
	return call(0, op, 0, body, body_len, fds, nfds, 0, reply, reply_cap, ret_fd, false);
}

int fl__client_call_on(unsigned int generation, uint32_t op, const void *body, size_t body_len,
		       void *reply, size_t reply_cap)
{
	return call(generation, op, 0, body, body_len, NULL, 0, 0, reply, reply_cap, NULL, true);
}

int fl__client_report(uint32_t op, uint32_t flags, const void *body, size_t body_len,
		      const int *fds, unsigned int nfds)
{
	struct fl_msg_hdr h = { op, flags, 0, (uint32_t)body_len };
	int r;

	if (sizeof(h) + body_len > FL_PROTO_MAX_REQUEST)
		return -EINVAL;
	pthread_mutex_lock(&conn.rpc.lock);
	r = ensure_connected_locked(false);
	if (r == 0)
		r = served_locked(op);
	if (r == 0) {
		r = fl__rpc_send_locked(&conn.rpc, &h, body, body_len, fds, nfds, 0);
		if (r == -ECONNRESET || r == -ETIMEDOUT)
			drop_locked();
	}
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

void fl__client_disconnect(void)
{
	pthread_mutex_lock(&conn.rpc.lock);
	drop_locked();
	atomic_store(&conn.unflushed, false);
	atomic_store(&conn.born_unflushed, false);
	pthread_mutex_unlock(&conn.rpc.lock);
}

static int daemon_pid(bool may_spawn)
{
	int r;

	pthread_mutex_lock(&conn.rpc.lock);
	r = ensure_connected_locked(may_spawn);
	if (r == 0) {
		struct pollfd p = { conn.rpc.fd, POLLRDHUP, 0 };

		/* A daemon that died since is no answer: this call goes to the next one. */
		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			drop_locked();
			r = ensure_connected_locked(may_spawn);
		}
	}
	if (r == 0)
		r = conn.daemon_pid;
	pthread_mutex_unlock(&conn.rpc.lock);
	return r;
}

int fl__client_daemon_pid(void)
{
	return daemon_pid(true);
}

int fl__client_daemon_pid_no_spawn(void)
{
	return daemon_pid(false);
}

void fl__client_stats(struct fl__client_stats *ret)
{
	pthread_mutex_lock(&conn.rpc.lock);
	*ret = conn.stats;
	ret->pool_pooled = fl__fdpool_gate_pooling(&conn.gate);
	ret->pool_pooled_ns = conn.gate.pooled_ns;
	ret->pool_bare_ns = conn.gate.bare_ns;
	ret->pool_offs = conn.gate.pay.offs;
	pthread_mutex_unlock(&conn.rpc.lock);
}

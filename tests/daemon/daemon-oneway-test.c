/* SPDX-License-Identifier: MIT */
/*
 * The calls that no longer wait for the daemon (docs/architecture.md, "No
 * waiting for the daemon"): a born-signalled fence of a timeline we own, a
 * deadline hint. Each is made while the daemon is stopped: a call that
 * waited for it would fail with -ETIMEDOUT (FENCELINE_REQUEST_TIMEOUT_MS),
 * one that does not returns at once. Then what other processes see of the
 * result. A merge of our own pending fences goes one-way too
 * (FENCE_MERGE_INTO): what it must keep when the owner, or another
 * process, completes its inputs before the daemon has read it; any other
 * merge still waits for the daemon; and the daemon's side of the op.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "daemon-helpers.h"
#include "daemon-hostile.h"
#include "daemon-procs.h"
#include "helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"

/* A private daemon for this test, and this process pointed at it. */
static pid_t own_daemon(const char *name)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	pid_t d;

	dl_runtime_path(name, path, sizeof(path));
	d = dl_daemon_start(path, args);
	/* The runner's daemon may have answered already: the next call connects anew. */
	fl_daemon_disconnect();
	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	/* A call that waited for the stopped daemon fails, instead of hanging. */
	fl_assert_int_eq(setenv("FENCELINE_REQUEST_TIMEOUT_MS", "2000", 1), 0);
	/*
	 * The pool always on: the calls made while the daemon is stopped take pooled fds, and a
	 * gate that turned the pool off (where it does not pay), or a sample that left it empty
	 * (daemon-pool-test's a_connections_first_fence_leaves_fds_pooled_ahead), would make them
	 * wait for the daemon instead (-ETIMEDOUT).
	 */
	fl_assert_int_eq(setenv("FENCELINE_POOL_COST", "none", 1), 0);
	return d;
}

/* The end of a test on own_daemon()'s daemon @d: this process lets go of it first. */
static void own_daemon_stop(pid_t d)
{
	fl_daemon_disconnect();
	dl_daemon_stop(d);
}

/*
 * The pool's fds (and signal ends) go back after FENCELINE_POOL_IDLE_MS
 * without a fence made: on a loaded machine the time between the warm-up
 * and the fence made while the daemon is stopped can be that long, and the
 * fence then waits for a fill nobody answers (seen in a parallel run).
 */
static void keep_pool_while_idle(void)
{
	setenv("FENCELINE_POOL_IDLE_MS", "0", 1);
}

/*
 * fl_timeline_fd_inc(): "when this returns, every fence fd of a point at
 * or below the new value is readable, in every process", merges included.
 * A merge of the owner's own pending fences is one-way: the step must
 * still return with it complete, which the daemon does at the
 * TIMELINE_SYNC the step owes while the merge may be unread (without it,
 * the step returned with the merge still active). Inputs on one timeline
 * and on two; fresh (no info record yet: their kept ends name them) and
 * flushed (the info page lists them).
 */
static void merge_then_step(const char *sock, bool two, bool flush)
{
	pid_t d = own_daemon(sock);
	int tl = new_timeline("oneway"), tl2 = two ? new_timeline("oneway2") : tl;

	for (uint64_t v = 2; v <= 200; v += 2) {
		int a = new_fence(tl, v - 1, "a"), b = new_fence(tl2, v, "b"), m;

		if (flush)
			fl_daemon_flush();
		fl_assert_int_eq(fl_fence_fd_merge(a, b, "m", 0, &m), 0);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 2), 0);
		if (two)
			fl_assert_int_eq(fl_timeline_fd_inc(tl2, 2), 0);
		fl_assert(polls_ready(m));
		fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_SIGNALED);
		close(m);
		close(a);
		close(b);
	}
	if (two)
		close(tl2);
	close(tl);
	own_daemon_stop(d);
}

FL_TEST(a_merge_reads_signalled_once_the_owners_step_returned)
{
	merge_then_step("oneway-step.sock", false, false);
	merge_then_step("oneway-step2.sock", true, true);
}

/*
 * A merge of two pending fences of timelines this process owns does not
 * wait for the daemon: made while the daemon is stopped (a round trip
 * would fail with -ETIMEDOUT), it reads active everywhere until its
 * inputs signal, then signalled, with both points in its info.
 */
FL_TEST(a_merge_of_our_pending_fences_does_not_wait_for_the_daemon)
{
	struct fl_sync_pt_info pts[2];
	struct fl_fence_info info;
	struct stopped_daemon sd;
	pid_t d, reader;
	int tl, tl2, a, b, m = -1;

	keep_pool_while_idle();
	d = own_daemon("oneway-merge.sock");
	tl = new_timeline("oneway");
	tl2 = new_timeline("oneway2");
	a = new_fence(tl, 1, "a");
	b = new_fence(tl2, 3, "b");
	fl_daemon_flush();
	daemon_stop(&sd);
	fl_assert_int_eq(fl_fence_fd_merge(a, b, "m", 0, &m), 0);
	fl_assert(!polls_ready(m));
	fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
	daemon_resume(&sd);
	reader = dl_fork();
	if (reader == 0) {
		fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
		fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
		fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
		fl_assert_str_eq(info.name, "m");
		_exit(0);
	}
	dl_wait_child_ok(reader);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_inc(tl2, 3), 0);
	fl_assert(polls_ready(m));
	fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 2);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(pts[0].status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(pts[1].status, FL_STATUS_SIGNALED);
	close(m);
	close(a);
	close(b);
	close(tl2);
	close(tl);
	own_daemon_stop(d);
}

/* One-way requests queued before the merge: more than a turn reads (BATCH), fewer than a socket holds. */
#define HINTS 200

/*
 * Another process steps (or fails) our timeline through the daemon while
 * our one-way merge of its points is still queued behind HINTS other
 * one-way requests of ours (deadline hints: more than the daemon reads of
 * one client in a turn). Its call must return with the merge complete, in
 * its own process: the daemon reads our queue before it answers (the
 * page's oneway_merges). The inputs are fences that process made on our
 * timeline, which the daemon completes itself: for fences whose signal
 * ends we keep, the step would wait for our KICK_ACK, queued after the
 * merge, anyway. Without the read, the step returned with the merge
 * still active.
 */
static void another_process_completes_a_one_way_merge(const char *sock, bool fail)
{
	struct stopped_daemon sd;
	struct fl_fence_info info;
	pid_t d, other;
	int tl, warm, a, b, m = -1, sv[2];
	char c = 0;

	keep_pool_while_idle();
	d = own_daemon(sock);
	tl = new_timeline("oneway");
	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	other = dl_fork();
	if (other == 0) {
		int mm;

		/* Its fences, and bound to the timeline now: the step below is one request. */
		a = new_fence(tl, 1, "a");
		b = new_fence(tl, 2, "b");
		dl_send_fd(sv[1], a);
		dl_send_fd(sv[1], b);
		fl_assert_int_eq(read(sv[1], &c, 1), 1);
		if (fail)
			fl_assert_int_eq(fl_timeline_fd_fail_pending(tl, -ETIMEDOUT), 2);
		else
			fl_assert_int_eq(fl_timeline_fd_inc(tl, 2), 0);
		mm = dl_recv_fd(sv[1]);
		fl_assert(polls_ready(mm));
		fl_assert_int_eq(fl_fence_fd_get_status(mm),
				 fail ? -ETIMEDOUT : FL_STATUS_SIGNALED);
		_exit(0);
	}
	a = dl_recv_fd(sv[0]);
	b = dl_recv_fd(sv[0]);
	/*
	 * Their records in the info page, which the merge reads its inputs' points from: the
	 * daemon may not have read that process's FENCE_NEWs yet (a merge of inputs without one
	 * waits for the daemon, and the stopped daemon then failed it with -ETIMEDOUT).
	 */
	fl_assert_int_eq(fl_fence_fd_get_info(a, &info, NULL, 0), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(b, &info, NULL, 0), 0);
	/* Our pool, for the merge's fd (another timeline: nothing of ours on tl to kick us about). */
	warm = new_timeline("warm");
	close(new_fence(warm, 1, "warm"));
	fl_daemon_flush();
	daemon_stop(&sd);
	/* Its step goes first into the stopped daemon's queues. */
	fl_assert_int_eq(write(sv[0], &c, 1), 1);
	usleep(100 * 1000);
	for (int i = 0; i < HINTS; i++)
		fl_assert_int_eq(fl_fence_fd_set_deadline(a, 1000 + (uint64_t)i), 0);
	fl_assert_int_eq(fl_fence_fd_merge(a, b, "m", 0, &m), 0);
	dl_send_fd(sv[0], m);
	daemon_resume(&sd);
	dl_wait_child_ok(other);
	fl_assert(polls_ready(m));
	close(m);
	close(sv[0]);
	close(sv[1]);
	close(a);
	close(b);
	close(warm);
	close(tl);
	own_daemon_stop(d);
}

/* A few times: a daemon that does not read our queue first fails about half of the runs. */
FL_TEST(another_process_step_completes_our_one_way_merge_before_it_returns)
{
	for (int i = 0; i < 3; i++)
		another_process_completes_a_one_way_merge("oneway-other-inc.sock", false);
}

FL_TEST(another_process_failure_completes_our_one_way_merge_before_it_returns)
{
	for (int i = 0; i < 3; i++)
		another_process_completes_a_one_way_merge("oneway-other-fail.sock", true);
}

/* FENCE_MERGE_INTO of @a and @b into pooled @slot, unless the queue is full: false then. */
static bool try_merge_into(int s, uint32_t seq, uint32_t slot, int a, int b)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_merge_into b;
	} req = { { FL_OP_FENCE_MERGE_INTO, 0, seq, sizeof(struct fl_msg_fence_merge_into) },
		  { "raw", 0, slot } };
	int fds[2] = { a, b };

	return raw_try_send(s, &req, sizeof(req), fds, 2);
}

/* FENCE_MERGE_INTO of @a and @b into pooled @slot, into a queue with room for it. */
static void send_merge_into(int s, uint32_t seq, uint32_t slot, int a, int b)
{
	fl_assert(try_merge_into(s, seq, slot, a, b));
}

/* FENCE_HINT_DEADLINE of @f at @ns, unless the queue is full: false then. */
static bool try_hint(int s, uint32_t seq, int f, uint64_t ns)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_set_deadline b;
	} req = { { FL_OP_FENCE_HINT_DEADLINE, 0, seq, sizeof(struct fl_msg_fence_set_deadline) },
		  { ns } };

	return raw_try_send(s, &req, sizeof(req), &f, 1);
}

#define FLOOD_POINTS 1024
#define FLOOD_SLOTS  FL_PROTO_POOL_MAX

/* A fence of FLOOD_POINTS pending points, each on a timeline of its own, and a signalled one. */
struct flood_fences {
	int tls[FLOOD_POINTS];
	int big, sig_tl, sig;
};

/* Makes @f in this process (through the library's daemon); skips without 8192 fds. */
static void flood_fences_make(struct flood_fences *f)
{
	struct rlimit rl;

	/* A timeline fd per point, and the daemon's two fds for each. */
	fl_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 8192 && rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
		fl_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	if (rl.rlim_cur < 8192)
		fl_test_skip("needs 8192 fds (RLIMIT_NOFILE)");
	f->big = -1;
	for (int i = 0; i < FLOOD_POINTS; i++) {
		int p, m;

		f->tls[i] = new_timeline("flood-point");
		p = new_fence(f->tls[i], 1, "p");
		if (f->big < 0) {
			f->big = p;
			continue;
		}
		fl_assert_int_eq(fl_fence_fd_merge(f->big, p, "big", 0, &m), 0);
		close(f->big);
		close(p);
		f->big = m;
	}
	f->sig_tl = new_timeline("signalled");
	f->sig = new_fence(f->sig_tl, 1, "sig");
	fl_assert_int_eq(fl_timeline_fd_inc(f->sig_tl, 1), 0);
	fl_daemon_flush();
}

static void flood_fences_close(struct flood_fences *f)
{
	for (int i = 0; i < FLOOD_POINTS; i++)
		close(f->tls[i]);
	close(f->big);
	close(f->sig);
	close(f->sig_tl);
}

/*
 * Deadline hints of @f's big fence on @s, each earlier than the last (each
 * tells every point): @max at most, and no more than half of @s's send
 * buffer. Return: how many.
 */
static int flood_hints(int s, uint32_t *seq, const struct flood_fences *f, int max)
{
	int hints = 0, sndbuf = 0, queued = 0;

	fl_assert_int_eq(getsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, &(socklen_t){ sizeof(int) }),
			 0);
	while (hints < max && ioctl(s, SIOCOUTQ, &queued) == 0 && queued < sndbuf / 2 &&
	       try_hint(s, *seq, f->big, UINT64_MAX / 2 - (uint64_t)hints))
		hints++, (*seq)++;
	return hints;
}

/* A raw connection to the test's daemon, HELLO done. */
static int raw_client(void)
{
	int s = raw_connect_to(getenv("FENCELINE_SOCKET"));

	raw_hello(s);
	return s;
}

/* A raw connection with HELLO done, and @n pooled fds (slots 0 on) into @pooled. */
static int raw_pooled_client(uint32_t *seq, int *pooled, uint32_t n)
{
	int s = raw_client();

	for (uint32_t i = 0; i < n; i += FL_PROTO_POOL_FILL_MAX) {
		uint32_t k = n - i < FL_PROTO_POOL_FILL_MAX ? n - i : FL_PROTO_POOL_FILL_MAX;

		raw_pool_fill_ok(s, (*seq)++, k, i, pooled + i);
	}
	return s;
}

/*
 * A bystander that took some of the daemon's time (@pings PINGs), less
 * than a flood's first turn: served by debt, it comes after a client with
 * less and before the flooder's next turn.
 */
static int bystander_in_debt(uint32_t pings)
{
	int by = raw_client();

	for (uint32_t i = 0; i < pings; i++)
		raw_ping_ok(by, 100 + i);
	return by;
}

/*
 * One-way merges of @f's big fence with itself into @o's pooled slots 0 on,
 * @max at most (the queue's room), then one of two signalled fences, the
 * probe: ready once the daemon read it. Return: the probe's slot.
 */
static int flood_merges(int o, uint32_t *seq, const struct flood_fences *f, int max)
{
	int n = 0;

	while (n < max && try_merge_into(o, *seq, (uint32_t)n, f->big, f->big))
		n++, (*seq)++;
	fl_assert(n >= 16);
	while (!try_merge_into(o, *seq, (uint32_t)n, f->sig, f->sig))
		fl_assert(!"the flood left no room for the probe");
	(*seq)++;
	return n;
}

/*
 * Resumes the stopped daemon and takes the bystander's PING reply (seq 1).
 * Fails unless it came before the probe (@probe) was read: before the
 * flood's end. Return: when the daemon was resumed.
 */
static uint64_t resume_bystander_first(struct stopped_daemon *sd, int by, int probe, int hints,
				       int n)
{
	uint64_t t0 = fl_test_now_ns(), t1;
	bool late;

	daemon_resume(sd);
	fl_assert_int_eq(raw_reply(by, FL_OP_PING, 1), 0);
	t1 = fl_test_now_ns();
	late = polls_ready(probe);
	fprintf(stderr,
		"%d hints and %d merges of %d points queued: the bystander answered after %.2f "
		"ms\n",
		hints, n, FLOOD_POINTS, (double)(t1 - t0) / 1e6);
	if (late)
		fl__test_fail(__FILE__, __LINE__,
			      "the bystander waited for the flooder's whole queue");
	return t0;
}

/* After resume_bystander_first() returned @t0: how long @what waited. */
static void print_wait(uint64_t t0, const char *what)
{
	fprintf(stderr, "the %s answered after %.2f ms\n", what,
		(double)(fl_test_now_ns() - t0) / 1e6);
}

/*
 * An owner that set its page's oneway_merges and filled its queue with
 * costly one-way requests (deadline hints of a fence of FLOOD_POINTS
 * points, then merges of it with itself, as many as its pool allows),
 * then a one-way merge of two signalled fences, while another process
 * steps its timeline and a bystander pings. The daemon reads the owner's
 * queue for the step only within a budget of its time, and the step's
 * reply waits for the rest, read in the owner's own turns: the bystander
 * is answered before the flood's last request is read (it used to wait
 * for the whole flood, 16-20 ms here, read in the middle of the step),
 * and the step returns with it read (exact, as for an honest owner).
 */
FL_TEST_TIMEOUT(a_flooding_owner_holds_up_only_the_steps_of_its_timeline, 120)
{
	uint64_t t0;
	struct fl_msg_hdr h_inc = { FL_OP_TIMELINE_INC, 0, 0, sizeof(struct fl_msg_timeline_inc) };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_inc b;
	} inc = { h_inc, { 1 } };
	struct fl_proto_shared_timeline *ctr;
	static struct flood_fences ff;
	static int pooled[FLOOD_SLOTS];
	struct stopped_daemon sd;
	uint32_t seq = 2, handle;
	int o, st, by, tl, memfd, n = 0, hints;
	struct fl_fence_info info;
	struct fl_msg_hdr ping = { FL_OP_PING, 0, 1, 0 };
	pid_t d;

	d = own_daemon("oneway-flood.sock");
	flood_fences_make(&ff);

	o = raw_pooled_client(&seq, pooled, FLOOD_SLOTS);
	tl = raw_timeline_create_flags(o, seq++, "flooder", 0, &handle, &memfd);
	ctr = counter_map(memfd);
	__atomic_store_n(&ctr->oneway_merges, 1, __ATOMIC_SEQ_CST);
	st = raw_client();
	by = bystander_in_debt(100);

	daemon_stop(&sd);
	/* The flood: deadline hints of the big fence in half of the queue; then merges of it. */
	hints = flood_hints(o, &seq, &ff, 4096);
	n = flood_merges(o, &seq, &ff, FLOOD_SLOTS - 1);
	inc.h.seq = 1;
	raw_send(st, &inc, sizeof(inc), &tl, 1);
	raw_send(by, &ping, sizeof(ping), NULL, 0);
	t0 = resume_bystander_first(&sd, by, pooled[n], hints, n);
	fl_assert_int_eq(raw_reply(st, FL_OP_TIMELINE_INC, 1), 0);
	print_wait(t0, "step");
	/* The step's points are reached for everyone: so is the merge the owner sent before it. */
	fl_assert(polls_ready(pooled[n]));
	fl_assert_int_eq(fl_fence_fd_get_status(pooled[n]), FL_STATUS_SIGNALED);
	/* All of the owner's queue is read, in order: each merge a fence of the big one's points. */
	for (int i = 0; i < n; i++)
		fl_assert_int_eq(fl_fence_fd_get_status(pooled[i]), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_fence_fd_get_info(pooled[0], &info, NULL, 0), 0);
	fl_assert_int_eq(info.num_points, FLOOD_POINTS);
	/* The step counted, and both connections go on. */
	fl_assert_int_eq(raw_get_value(st, 2, tl), 1);
	raw_ping_ok(o, seq++);
	raw_ping_ok(st, 3);
	raw_ping_ok(by, 2);
	close(by);

	counter_unmap(ctr);
	close(memfd);
	close(o);
	close(st);
	close(tl);
	for (int i = 0; i < FLOOD_SLOTS; i++)
		close(pooled[i]);
	flood_fences_close(&ff);
	own_daemon_stop(d);
}

/*
 * A maker that filled its queue with the same costly flood, then a one-way
 * merge of two signalled fences (the probe: ready once read), then the
 * FENCE_NEW of a pooled fd it passed on. Another client asks about that fd
 * (FENCE_INFO) while a bystander pings. The daemon cannot answer before it
 * has read that FENCE_NEW, but it reads the maker's queue for the victim
 * only within a budget of its time, and the victim's request waits for the
 * rest, read in the maker's own turns: the bystander is answered before
 * the probe is read (it used to wait for the whole flood, read inside the
 * victim's request: 17-31 ms here), and the victim gets the exact answer,
 * in order with what it sent after.
 */
FL_TEST_TIMEOUT(a_flooding_maker_holds_up_only_requests_about_its_fds, 120)
{
	uint64_t t0;
	static struct flood_fences ff;
	static int pooled[FLOOD_SLOTS];
	struct stopped_daemon sd;
	struct fl_msg_info_reply rep;
	struct fl_msg_hdr ping = { FL_OP_PING, 0, 1, 0 };
	uint32_t seq = 2, handle;
	int o, v, v2, by, tl, n = 0, hints, base;
	pid_t d;

	d = own_daemon("oneway-maker-flood.sock");
	flood_fences_make(&ff);
	base = dl_daemon_fd_baseline(d);
	o = raw_pooled_client(&seq, pooled, FLOOD_SLOTS);
	tl = raw_timeline_create(o, seq++, "maker", &handle);
	v = raw_client();
	v2 = raw_client();
	by = bystander_in_debt(100);

	daemon_stop(&sd);
	hints = flood_hints(o, &seq, &ff, 4096);
	/* Slots 0..n-1 merges of the big fence, slot n the probe, slot n + 1 the fence passed on. */
	n = flood_merges(o, &seq, &ff, FLOOD_SLOTS - 2);
	raw_send_fence_new(o, seq++, 0, 1, handle, (uint32_t)n + 1);
	raw_send_fence_info(v, 1, pooled[n + 1]);
	/* A second victim waits with the first, and does not read the maker's queue again. */
	raw_send_fence_info(v2, 1, pooled[n + 1]);
	ping.seq = 2;
	raw_send(v, &ping, sizeof(ping), NULL, 0);
	ping.seq = 1;
	raw_send(by, &ping, sizeof(ping), NULL, 0);
	t0 = resume_bystander_first(&sd, by, pooled[n], hints, n);
	raw_reply_body(v, FL_OP_FENCE_INFO, 1, &rep, sizeof(rep));
	print_wait(t0, "victim");
	/* Exact: the fence the maker made, and everything the maker sent before it is read. */
	fl_assert_int_eq(rep.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(rep.num_points, 1);
	fl_assert(polls_ready(pooled[n]));
	fl_assert_int_eq(fl_fence_fd_get_status(pooled[n]), FL_STATUS_SIGNALED);
	raw_reply_body(v2, FL_OP_FENCE_INFO, 1, &rep, sizeof(rep));
	fl_assert_int_eq(rep.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(rep.num_points, 1);
	/* What the victim sent after it is answered after it. */
	fl_assert_int_eq(raw_reply(v, FL_OP_PING, 2), 0);
	raw_ping_ok(v, 3);
	raw_ping_ok(o, seq++);
	raw_ping_ok(by, 2);

	close(by);
	close(v);
	close(v2);
	close(o);
	close(tl);
	for (int i = 0; i < FLOOD_SLOTS; i++)
		close(pooled[i]);
	flood_fences_close(&ff);
	/* The request kept aside, and its fd, went with it. */
	dl_expect_daemon_fds_back(d, base);
	own_daemon_stop(d);
}

/* HELLO on a new connection @s: true when served, false when refused (a quota). */
static bool hello_served(int s)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_hello b;
	} req = { { FL_OP_HELLO, 0, 7, sizeof(struct fl_msg_hello) },
		  { FL_PROTO_VERSION, 0, FL_PROTO_SERVICES_ALL } };
	unsigned char buf[FL_PROTO_MAX_REPLY];
	struct fl_msg_reply r;
	ssize_t n;

	raw_send(s, &req, sizeof(req), NULL, 0);
	do
		n = recv(s, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)(sizeof(struct fl_msg_hdr) + sizeof(r)))
		return false;
	memcpy(&r, buf + sizeof(struct fl_msg_hdr), sizeof(r));
	return r.status == 0;
}

/*
 * The victim of a_request_kept_aside_is_charged_to_its_quota, in a process
 * of its own: connections with pooled fds (held, so that none goes back)
 * until its process's fd quota is used up, then, once @go is readable,
 * FENCE_INFO of @fd. Exits 0 when the answer is exact.
 */
static void victim_at_quota(int ready, int go, int fd)
{
	struct fl_msg_info_reply rep;
	struct fl_msg_pool_reply prep;
	int v, fds[RAW_MAX_FDS], r = 0, conns = 0;
	unsigned int n;
	char byte;

	v = raw_client();
	while (r == 0) {
		int s = raw_connect_to(getenv("FENCELINE_SOCKET"));

		/* No room for a connection: none for anything else either. */
		if (!hello_served(s))
			break;
		conns++;
		for (uint32_t seq = 1; r == 0 && seq <= FL_PROTO_POOL_MAX / FL_PROTO_POOL_FILL_MAX;
		     seq++) {
			raw_send_pool_fill(s, seq, FL_PROTO_POOL_FILL_MAX, 0);
			r = raw_reply_fds(s, FL_OP_POOL_FILL, seq, &prep, sizeof(prep), fds,
					  RAW_MAX_FDS, &n);
		}
	}
	fl_assert(conns > 0);
	fl_assert(r == 0 || r == -EMFILE);
	dl_write_all(ready, "r", 1);
	dl_read_all(go, &byte, 1);
	raw_send_fence_info(v, 1, fd);
	dl_write_all(ready, "s", 1);
	raw_reply_body(v, FL_OP_FENCE_INFO, 1, &rep, sizeof(rep));
	fl_assert_int_eq(rep.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(rep.num_points, 1);
	raw_ping_ok(v, 2);
	_exit(0);
}

/*
 * A request kept aside holds its fds in the daemon (defer.c): they are
 * charged to its client's quota while it waits. A victim whose process is
 * at its fd quota asks about a fd of a flooding maker; the daemon does not
 * keep the request (it would hold the fd beyond the quota: a process with
 * many connections could make it hold 4 fds more on each) but reads the
 * maker's queue inline, as before there was a budget, says so in its log,
 * and answers exactly.
 */
FL_TEST_TIMEOUT(a_request_kept_aside_is_charged_to_its_quota, 120)
{
	static const char *const args[] = { "--idle-timeout", "0", "--max-fds-per-process", "4000",
					    NULL };
	static struct flood_fences ff;
	static int pooled[FLOOD_SLOTS];
	struct stopped_daemon sd;
	char path[256], log[256], byte;
	uint32_t seq = 2, handle;
	int o, tl, n, ready[2], go[2];
	pid_t d, victim;

	d = daemon_start_logged("oneway-kept-quota.sock", "oneway-kept-quota.log", args, log,
				sizeof(log));
	dl_runtime_path("oneway-kept-quota.sock", path, sizeof(path));
	fl_daemon_disconnect();
	fl_assert_int_eq(setenv("FENCELINE_SOCKET", path, 1), 0);
	fl_assert_int_eq(setenv("FENCELINE_REQUEST_TIMEOUT_MS", "2000", 1), 0);
	fl_assert_int_eq(setenv("FENCELINE_POOL_COST", "none", 1), 0);

	flood_fences_make(&ff);
	o = raw_pooled_client(&seq, pooled, FLOOD_SLOTS);
	tl = raw_timeline_create(o, seq++, "maker", &handle);
	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	victim = dl_fork();
	if (victim == 0)
		victim_at_quota(ready[1], go[0], pooled[FLOOD_SLOTS - 1]);
	dl_read_all(ready[0], &byte, 1);

	daemon_stop(&sd);
	flood_hints(o, &seq, &ff, 4096);
	n = flood_merges(o, &seq, &ff, FLOOD_SLOTS - 2);
	fl_assert(n < FLOOD_SLOTS - 1);
	raw_send_fence_new(o, seq++, 0, 1, handle, FLOOD_SLOTS - 1);
	/* The victim's request is queued behind the flood before the daemon goes on. */
	dl_write_all(go[1], "g", 1);
	dl_read_all(ready[0], &byte, 1);
	daemon_resume(&sd);
	dl_wait_child_ok(victim);
	raw_ping_ok(o, seq++);
	if (count_lines(log, "the fds of a request kept aside") < 1)
		fl__test_fail(__FILE__, __LINE__,
			      "the request was kept aside beyond its process's quota (%s)", log);

	close_fds(ready, 2);
	close_fds(go, 2);
	close(o);
	close(tl);
	for (int i = 0; i < FLOOD_SLOTS; i++)
		close(pooled[i]);
	flood_fences_close(&ff);
	own_daemon_stop(d);
}

/*
 * A tracer stops its trace while a client's queue holds the flood, then a
 * TIMELINE_CREATE of a timeline named "flood-traced", and a bystander
 * pings. The STOP reads the other clients' queues within a budget of our
 * time, and its reply waits for the rest, read in the flooder's own turns:
 * the bystander is answered before the flood's probe is read (it waited
 * for 256 of the flooder's requests, read inside the STOP: 24-41 ms here),
 * and the trace still has what the flooder sent before the STOP.
 */
FL_TEST_TIMEOUT(a_trace_stop_waits_for_a_flooders_queue_alone, 120)
{
	static struct flood_fences ff;
	static int pooled[FLOOD_SLOTS];
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_create b;
	} create = { { FL_OP_TIMELINE_CREATE, 0, 0, sizeof(struct fl_msg_timeline_create) },
		     { "flood-traced", 0, 0 } };
	struct fl_msg_bind_reply made;
	struct stopped_daemon sd;
	uint32_t seq = 2, tseq = 2, create_seq;
	int fds[RAW_MAX_FDS], o, t, by, n, hints;
	unsigned int nfds;
	uint64_t t0;
	char *text;
	pid_t d;

	d = own_daemon("oneway-trace-flood.sock");
	flood_fences_make(&ff);
	/* The STOP reads the latest connections first: the flooder's before the bystander's. */
	by = bystander_in_debt(100);
	o = raw_pooled_client(&seq, pooled, FLOOD_SLOTS);
	t = raw_client();
	raw_send_trace(t, tseq, FL_TRACE_START, 4096);
	fl_assert_int_eq(raw_reply(t, FL_OP_TRACE, tseq++), 0);
	/* The START's cost forgotten (halved every 100 ms): served by debt, the STOP comes first. */
	fl_test_sleep_ms(500);

	daemon_stop(&sd);
	hints = flood_hints(o, &seq, &ff, 4096);
	n = flood_merges(o, &seq, &ff, FLOOD_SLOTS - 1);
	create_seq = create.h.seq = seq++;
	raw_send(o, &create, sizeof(create), NULL, 0);
	raw_send_trace(t, 1, FL_TRACE_STOP, 0);
	raw_send(by, &(struct fl_msg_hdr){ FL_OP_PING, 0, 1, 0 }, sizeof(struct fl_msg_hdr), NULL,
		 0);
	t0 = resume_bystander_first(&sd, by, pooled[n], hints, n);
	text = raw_reply_text(t, FL_OP_TRACE, 1);
	print_wait(t0, "STOP");
	if (!strstr(text, "flood-traced"))
		fl__test_fail(__FILE__, __LINE__,
			      "the trace misses a timeline created before the STOP");
	free(text);
	fl_assert_int_eq(raw_reply_fds(o, FL_OP_TIMELINE_CREATE, create_seq, &made, sizeof(made),
				       fds, RAW_MAX_FDS, &nfds),
			 0);
	close_fds(fds, nfds);
	raw_ping_ok(t, tseq++);
	raw_ping_ok(o, seq++);
	raw_ping_ok(by, 2);

	close(by);
	close(t);
	close(o);
	for (int i = 0; i < FLOOD_SLOTS; i++)
		close(pooled[i]);
	flood_fences_close(&ff);
	own_daemon_stop(d);
}

/*
 * The request kept aside may be one-way: a merge into the victim's own
 * pooled fd of the maker's fd (FENCE_MERGE_INTO), then, from the same
 * client, FENCE_INFO of the merge. The info waits behind the merge, and
 * finds it made: the merge's points, the maker's fence's among them.
 */
FL_TEST_TIMEOUT(a_request_kept_aside_keeps_its_clients_order, 120)
{
	static struct flood_fences ff;
	int mpooled[2], vpooled[1];
	struct stopped_daemon sd;
	struct fl_msg_info_reply rep;
	uint32_t seq = 2, vseq = 2, handle;
	int o, v, tl;
	pid_t d;

	d = own_daemon("oneway-kept-order.sock");
	flood_fences_make(&ff);
	o = raw_pooled_client(&seq, mpooled, 2);
	tl = raw_timeline_create(o, seq++, "maker", &handle);
	v = raw_pooled_client(&vseq, vpooled, 1);

	daemon_stop(&sd);
	fl_assert(flood_hints(o, &seq, &ff, 200) >= 20);
	raw_send_fence_new(o, seq++, 0, 1, handle, 0);
	send_merge_into(v, vseq++, 0, mpooled[0], ff.sig);
	raw_send_fence_info(v, vseq, vpooled[0]);
	daemon_resume(&sd);
	raw_reply_body(v, FL_OP_FENCE_INFO, vseq++, &rep, sizeof(rep));
	fl_assert_int_eq(rep.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(rep.num_points, 2);
	raw_ping_ok(v, vseq++);
	raw_ping_ok(o, seq++);

	close(v);
	close(vpooled[0]);
	close(o);
	close(tl);
	close(mpooled[0]);
	close(mpooled[1]);
	flood_fences_close(&ff);
	own_daemon_stop(d);
}

/*
 * Two makers, each asking about the other's pooled fd behind a flood of its
 * own, each fd's FENCE_NEW after the request: were both kept aside, each
 * would wait for the other's queue, whose reading its own wait stops. One
 * is not kept (it gets "no fence", as a request about a pooled fd its
 * maker passed on too early always may), and both are answered, as is a
 * bystander; nothing is left behind.
 */
FL_TEST_TIMEOUT(requests_kept_aside_never_wait_for_each_other, 120)
{
	static struct flood_fences ff;
	int apooled[1], bpooled[1], a, b, by, atl, btl, base, ra, rb;
	uint32_t aseq = 2, bseq = 2, ah, bh;
	struct stopped_daemon sd;
	pid_t d;

	d = own_daemon("oneway-kept-cycle.sock");
	flood_fences_make(&ff);
	base = dl_daemon_fd_baseline(d);
	a = raw_pooled_client(&aseq, apooled, 1);
	atl = raw_timeline_create(a, aseq++, "maker-a", &ah);
	b = raw_pooled_client(&bseq, bpooled, 1);
	btl = raw_timeline_create(b, bseq++, "maker-b", &bh);
	by = raw_client();

	daemon_stop(&sd);
	/* b's flood the longer: a asks first, and waits for b's queue. */
	fl_assert(flood_hints(a, &aseq, &ff, 20) == 20);
	fl_assert(flood_hints(b, &bseq, &ff, 80) >= 40);
	raw_send_fence_info(a, aseq, bpooled[0]);
	raw_send_fence_new(a, aseq + 1, 0, 1, ah, 0);
	raw_send_fence_info(b, bseq, apooled[0]);
	raw_send_fence_new(b, bseq + 1, 0, 1, bh, 0);
	daemon_resume(&sd);
	ra = raw_reply(a, FL_OP_FENCE_INFO, aseq);
	rb = raw_reply(b, FL_OP_FENCE_INFO, bseq);
	fprintf(stderr, "a's FENCE_INFO: %d, b's: %d\n", ra, rb);
	fl_assert(ra == 0 || ra == -ENOTTY);
	fl_assert(rb == 0 || rb == -ENOTTY);
	aseq += 2;
	bseq += 2;
	raw_ping_ok(by, 1);
	raw_ping_ok(a, aseq++);
	raw_ping_ok(b, bseq++);

	close(by);
	close(a);
	close(b);
	close(atl);
	close(btl);
	close(apooled[0]);
	close(bpooled[0]);
	flood_fences_close(&ff);
	dl_expect_daemon_fds_back(d, base);
	own_daemon_stop(d);
}

/*
 * An owner whose DUMP is parked (waiting for a walk of /proc) has a one-way
 * merge of its pending fence queued behind it when another process steps
 * its timeline: the daemon cannot read the merge before the DUMP is
 * answered, so the step's reply waits until it has (it used to be answered
 * at once, the merge still unread: active after the step).
 */
FL_TEST(a_step_waits_for_the_merge_a_parked_owner_queued)
{
	struct fl_msg_hdr h_inc = { FL_OP_TIMELINE_INC, 0, 1, sizeof(struct fl_msg_timeline_inc) };
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_timeline_inc b;
	} inc = { h_inc, { 1 } };
	struct fl_proto_shared_timeline *ctr;
	struct stopped_daemon sd;
	uint32_t seq = 2, handle, dump_seq;
	int o, st, tl, memfd, pooled[2];
	pid_t d;

	d = own_daemon("oneway-parked.sock");
	o = raw_connect_to(getenv("FENCELINE_SOCKET"));
	raw_hello(o);
	tl = raw_timeline_create_flags(o, seq++, "parked", 0, &handle, &memfd);
	ctr = counter_map(memfd);
	__atomic_store_n(&ctr->oneway_merges, 1, __ATOMIC_SEQ_CST);
	raw_pool_fill_ok(o, seq++, 2, 0, pooled);
	/* Its pending fence at 1, made by now. */
	raw_send_fence_new(o, seq++, 0, 1, handle, 0);
	raw_ping_ok(o, seq++);
	st = raw_connect_to(getenv("FENCELINE_SOCKET"));
	raw_hello(st);

	daemon_stop(&sd);
	dump_seq = seq++;
	raw_send_dump(o, dump_seq);
	send_merge_into(o, seq++, 1, pooled[0], pooled[0]);
	raw_send(st, &inc, sizeof(inc), &tl, 1);
	daemon_resume(&sd);
	fl_assert_int_eq(raw_reply(st, FL_OP_TIMELINE_INC, 1), 0);
	fl_assert(polls_ready(pooled[0]));
	if (!polls_ready(pooled[1]))
		fl__test_fail(__FILE__, __LINE__,
			      "the step was answered before the parked owner's merge was read");
	fl_assert_int_eq(fl_fence_fd_get_status(pooled[1]), FL_STATUS_SIGNALED);
	fl_assert_int_eq(raw_reply(o, FL_OP_DUMP, dump_seq), 0);
	raw_ping_ok(o, seq++);

	counter_unmap(ctr);
	close(memfd);
	close(pooled[0]);
	close(pooled[1]);
	close(o);
	close(st);
	close(tl);
	own_daemon_stop(d);
}

FL_TEST(a_merge_still_refuses_a_bad_fd_at_once)
{
	pid_t d = own_daemon("oneway-bad.sock");
	int tl = new_timeline("oneway"), a = new_fence(tl, 1, "a"), m = -1, p[2];

	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fl_fence_fd_merge(a, 1000, "m", 0, &m), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_merge(a, p[0], "m", 0, &m), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_merge(a, tl, "m", 0, &m), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_merge(1000, a, "m", 0, &m), -EBADF);
	fl_assert_int_eq(fl_fence_fd_merge(p[0], a, "m", 0, &m), -ENOTTY);
	fl_assert_int_eq(m, -1);
	close(p[0]);
	close(p[1]);
	close(a);
	close(tl);
	own_daemon_stop(d);
}

/*
 * A pooled fd that another client never made a fence of reads active in
 * the status page, as a pending fence does: merged with, it is refused at
 * once (the daemon reads what its maker queued first and finds no fence).
 */
FL_TEST(a_merge_whose_input_is_no_fence_is_refused)
{
	pid_t d = own_daemon("oneway-nofence.sock");
	int tl = new_timeline("oneway"), a = new_fence(tl, 1, "a"), s, fake, m = -1;

	s = raw_connect_to(getenv("FENCELINE_SOCKET"));
	raw_hello(s);
	raw_pool_fill_ok(s, 2, 1, 0, &fake);
	fl_assert_int_eq(fl_fence_fd_merge(a, fake, "m", 0, &m), -ENOENT);
	fl_assert_int_eq(m, -1);
	close(s);
	close(fake);
	close(a);
	close(tl);
	own_daemon_stop(d);
}

FL_TEST(a_born_signalled_fence_does_not_wait_for_the_daemon)
{
	struct stopped_daemon sd;
	struct fl_sync_pt_info pt;
	struct fl_fence_info info;
	pid_t d, reader;
	int tl, warm, f;
	uint64_t before, after;

	keep_pool_while_idle();
	d = own_daemon("oneway-born.sock");
	tl = new_timeline("oneway");
	warm = new_fence(tl, 5, "warm");

	fl_assert_int_eq(fl_timeline_fd_inc(tl, 3), 0);
	/* The creations before are handled: a status call asks only then. */
	fl_daemon_flush();
	daemon_stop(&sd);
	before = fl_test_now_ns();
	fl_assert_int_eq(fl_fence_fd_create(tl, 2, "born", &f), 0);
	after = fl_test_now_ns();
	fl_assert(polls_ready(f));
	fl_assert_int_eq(fl_fence_fd_get_status(f), FL_STATUS_SIGNALED);
	reader = dl_fork();
	if (reader == 0) {
		fl_assert_int_eq(fl_fence_fd_get_status(f), FL_STATUS_SIGNALED);
		fl_assert_int_eq(fl_fence_fd_wait(f, 0), 0);
		_exit(0);
	}
	dl_wait_child_ok(reader);
	daemon_resume(&sd);
	/* Stamped when it was made, as the kernel's sw_sync stamps one. */
	fl_assert_int_eq(fl_fence_fd_get_info(f, &info, &pt, 1), 1);
	fl_assert_int_eq(info.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(pt.status, FL_STATUS_SIGNALED);
	fl_assert_str_eq(pt.timeline_name, "oneway");
	fl_assert_str_eq(pt.driver_name, "sw_sync");
	fl_assert(pt.timestamp_ns >= before && pt.timestamp_ns <= after);
	fl_assert_int_eq(info.timestamp_ns, pt.timestamp_ns);
	fl_assert_int_eq(fl_fence_fd_get_status(warm), FL_STATUS_ACTIVE);
	close(f);
	close(warm);
	close(tl);
	own_daemon_stop(d);
}

FL_TEST(a_deadline_does_not_wait_for_the_daemon)
{
	struct stopped_daemon sd;
	pid_t d = own_daemon("oneway-deadline.sock");
	int tl = new_timeline("oneway"), a = new_fence(tl, 1, "a"), p[2];
	uint64_t ns = 0;

	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	/* The creations before are handled: a status call asks only then. */
	fl_daemon_flush();
	daemon_stop(&sd);
	fl_assert_int_eq(fl_fence_fd_set_deadline(a, 123456789), 0);
	/* Errors are still the kernel's, at once: no waiting for them either. */
	fl_assert_int_eq(fl_fence_fd_set_deadline(1000, 1), -EBADF);
	fl_assert_int_eq(fl_fence_fd_set_deadline(p[1], 1), -ENOTTY);
	daemon_resume(&sd);
	fl_assert_int_eq(fl_fence_fd_get_deadline(a, &ns), 0);
	fl_assert_int_eq(ns, 123456789);
	close(p[0]);
	close(p[1]);
	close(a);
	close(tl);
	own_daemon_stop(d);
}

/*
 * A raw client's FENCE_MERGE_INTO naming a slot it was not given (none at
 * all, or not the oldest) is a protocol violation: answered, then hung up.
 * One naming the right slot with inputs that are no fences fails that
 * slot's fd, and the connection goes on.
 */
FL_TEST(a_merge_into_a_slot_not_given_is_refused)
{
	pid_t d = own_daemon("oneway-raw.sock");
	int tl = new_timeline("oneway"), a = new_fence(tl, 1, "a"), s, pooled[2], p[2];

	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	s = raw_connect_to(getenv("FENCELINE_SOCKET"));
	raw_hello(s);
	send_merge_into(s, 2, 0, a, a);
	fl_assert_int_eq(raw_reply(s, FL_OP_FENCE_MERGE_INTO, 2), -EBADMSG);
	fl_assert_int_eq(raw_reply(s, FL_OP_FENCE_MERGE_INTO, 2), 1);
	close(s);

	s = raw_connect_to(getenv("FENCELINE_SOCKET"));
	raw_hello(s);
	raw_pool_fill_ok(s, 2, 2, 0, pooled);
	send_merge_into(s, 3, 0, p[0], a);
	dl_expect_fence_status(pooled[0], -ENOENT);
	raw_ping_ok(s, 4);
	send_merge_into(s, 5, 0, a, a);
	fl_assert_int_eq(raw_reply(s, FL_OP_FENCE_MERGE_INTO, 5), -EBADMSG);
	fl_assert_int_eq(raw_reply(s, FL_OP_FENCE_MERGE_INTO, 5), 1);
	close(s);
	dl_expect_fence_status(pooled[1], -ECONNRESET);
	close(pooled[0]);
	close(pooled[1]);
	close(p[0]);
	close(p[1]);
	close(a);
	close(tl);
	own_daemon_stop(d);
}

/*
 * A process that made more pending fences than it keeps signal ends for
 * stops asking for ends (they went unused); a fence born signalled that
 * found none asks again, so that the next ones need not wait either.
 */
FL_TEST(born_signalled_fences_bring_signal_ends_back)
{
	struct stopped_daemon sd;
	pid_t d;
	int tl, pending[100], f;

	keep_pool_while_idle();
	d = own_daemon("oneway-ends.sock");
	tl = new_timeline("oneway");

	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	for (int i = 0; i < 100; i++)
		pending[i] = new_fence(tl, 1000 + (uint64_t)i, "pending");
	/*
	 * Each creation sends the next pool fill once the pool is half used,
	 * and a round trip takes it in: the pool is not empty at the stop. An
	 * info of our own pending fence was that round trip until it came to
	 * be answered from the status page: then a fill still on its way at
	 * the stop, with the pool used up, left the next creation waiting for
	 * the stopped daemon (-ECONNRESET after the 2 s request timeout, about
	 * one run in 1000 under load).
	 */
	for (int i = 0; i < 100; i++) {
		close(new_fence(tl, 1, "born"));
		fl_daemon_flush(); /* a round trip: a born fence's creation is outstanding */
	}
	daemon_stop(&sd);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "born", &f), 0);
	fl_assert(polls_ready(f));
	fl_assert_int_eq(fl_fence_fd_get_status(f), FL_STATUS_SIGNALED);
	daemon_resume(&sd);
	close(f);
	for (int i = 0; i < 100; i++)
		close(pending[i]);
	close(tl);
	own_daemon_stop(d);
}

/* SPDX-License-Identifier: MIT */
/*
 * fencelined against the world, floods and fairness: many clients hammering at once, hostile
 * waiters, trace and log caps, a DUMP flood against a bystander, and the
 * order in which the loop serves a pooled fd's maker and its asker.
 *
 * Each test that can checks the daemon's own fds (/proc/PID/fd) return to
 * their count from before, since a leak inside the daemon is invisible to
 * the runner's check of the test process. Helpers: daemon-hostile.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>
#include <fenceline/transfer.h>

#include "daemon-helpers.h"
#include "daemon-hostile.h"
#include "helpers.h"
#include "protocol.h"
#include "raw-helpers.h"
#include "runner.h"
#include "statuspage.h"

/* ---- many clients ---- */

#define HAMMER_PROCS 32
#define HAMMER_ITERS 25

/*
 * One of a pair of processes: each round makes a timeline and fences,
 * merges, queries and signals them, and swaps a fence with its partner,
 * which merges it with one of its own.
 */
static void hammer_process(int index, int partner_sock, int start)
{
	char byte, name[32];

	snprintf(name, sizeof(name), "hammer-%d", index);
	dl_read_all(start, &byte, 1);
	for (int it = 0; it < HAMMER_ITERS; it++) {
		struct fl_sync_pt_info pts[2];
		struct fl_fence_info info;
		int tl = new_timeline(name);
		int f1 = new_fence(tl, 1, "one"), f2 = new_fence(tl, 2, "two");
		int m = new_merge(f1, f2, name), theirs, both;
		uint64_t v;

		fl_assert_int_eq(fl_fence_fd_get_info(m, &info, pts, 2), 1);
		fl_assert_int_eq(pts[0].value, 2);
		fl_assert_str_eq(info.name, name);
		dl_send_fd(partner_sock, f2);
		theirs = dl_recv_fd(partner_sock);
		both = new_merge(theirs, f2, "both");
		fl_assert_int_eq(fl_fence_fd_get_info(both, &info, pts, 2), 2);
		fl_assert_int_eq(info.status, FL_STATUS_ACTIVE);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(f1, DL_LONG_WAIT_MS), 0);
		fl_assert_int_eq(fl_fence_fd_get_status(m), FL_STATUS_ACTIVE);
		fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
		fl_assert_int_eq(fl_fence_fd_wait(m, DL_LONG_WAIT_MS), 0);
		/* Needs the partner's timeline too, which it signals in its own round. */
		fl_assert_int_eq(fl_fence_fd_wait(both, DL_LONG_WAIT_MS), 0);
		/*
		 * Not wait(theirs, 0): "both" and "theirs" are separate fences of
		 * the partner's point, and one fd may turn readable a moment
		 * before the other.
		 */
		fl_assert_int_eq(fl_fence_fd_wait(theirs, DL_LONG_WAIT_MS), 0);
		fl_assert_int_eq(fl_timeline_fd_get_value(tl, &v), 0);
		fl_assert_int_eq(v, 2);
		/* Keep the partner's timeline alive until both are done with it. */
		dl_write_all(partner_sock, "d", 1);
		dl_read_all(partner_sock, &byte, 1);
		close(both);
		close(theirs);
		close(m);
		close(f2);
		close(f1);
		close(tl);
	}
	_exit(0);
}

FL_TEST_TIMEOUT(many_processes_hammer_one_daemon_without_leaking, 180)
{
	pid_t pids[HAMMER_PROCS], daemon = fl_daemon_connect();
	int start[2], base;

	fl_assert(daemon > 0);
	/* Let the daemon settle (a connection, a round trip) before counting. */
	library_round();
	base = dl_daemon_fd_baseline(daemon);

	fl_assert_int_eq(pipe2(start, O_CLOEXEC), 0);
	for (int i = 0; i < HAMMER_PROCS; i += 2) {
		int sv[2];

		/* Stream pairs: fl_send() frames the payload byte; the "d" bytes are raw. */
		fl_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
		for (int k = 0; k < 2; k++) {
			pids[i + k] = dl_fork();
			if (pids[i + k] == 0) {
				close(start[1]);
				close(sv[1 - k]);
				hammer_process(i + k, sv[k], start[0]);
			}
		}
		close(sv[0]);
		close(sv[1]);
	}
	close(start[0]);
	/* All at once. */
	for (int i = 0; i < HAMMER_PROCS; i++)
		dl_write_all(start[1], "s", 1);
	for (int i = 0; i < HAMMER_PROCS; i++)
		dl_wait_child_ok(pids[i]);
	close(start[1]);
	fl_assert_int_eq(fl_daemon_connect(), daemon);
	library_round();
	/* Our own connection's ready fence fds are the daemon's too: hand them back. */
	fl_daemon_disconnect();
	dl_expect_daemon_fds_back(daemon, base);
}

/* ---- hostile waiters ---- */

/* FENCE_CREATE of a fence at @value on @tl, answered: returns its fence fd. */
static int raw_fence_create(int sock, uint32_t seq, int tl, uint64_t value)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_fence_create b;
	} req = { { FL_OP_FENCE_CREATE, FL_MSG_F_REPLY, seq, sizeof(struct fl_msg_fence_create) },
		  { value, "raw" } };
	int sv[2], three[3];

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	three[0] = tl;
	three[1] = sv[0];
	three[2] = sv[1];
	raw_send(sock, &req, sizeof(req), three, 3);
	close(sv[0]);
	fl_assert_int_eq(raw_reply(sock, FL_OP_FENCE_CREATE, seq), 0);
	return sv[1];
}

/* DUMP with @flags: the text that comes with the reply (malloc()ed). */
static char *raw_dump(int sock, uint32_t seq, uint32_t flags)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_dump b;
	} req = { { FL_OP_DUMP, 0, seq, sizeof(struct fl_msg_dump) }, { flags, 0 } };

	raw_send(sock, &req, sizeof(req), NULL, 0);
	return raw_reply_text(sock, FL_OP_DUMP, seq);
}

/*
 * The owner of a shared-counter timeline passes a point without telling the
 * daemon and waits on it from its only thread: until the daemon catches up,
 * it looks like a process stuck on itself. The detector must catch up
 * before it reports, not while it describes the finding: that completed the
 * fence, freed the wait being described and used it after (ASan:
 * heap-use-after-free in refuse()), and logged a false cycle of 1.
 */
static void owner_passes_own_point_child(const char *path, pid_t daemon)
{
	struct fl_proto_shared_timeline *ctr;
	uint32_t seq = 1, handle;
	int s, tl, mfd, fence, p[2];
	struct pollfd pfd;
	char byte, *text;

	(void)daemon;
	s = raw_connect_to(path);
	raw_hello(s);
	tl = raw_timeline_create_flags(s, seq++, "own", 0, &handle, &mfd);
	ctr = counter_map(mfd);
	fence = raw_fence_create(s, seq++, tl, 1);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	counter_set(ctr, 1);
	raw_wait_begin(s, seq++, fence, p[1]);
	close(p[1]);
	/* Only the detector catches up with the counter here: it has run once this is readable. */
	pfd = (struct pollfd){ .fd = fence, .events = POLLIN };
	fl_assert_int_eq(poll(&pfd, 1, -1), 1);
	raw_ping_ok(s, seq++);
	dl_expect_fence_status(fence, FL_STATUS_SIGNALED);
	text = raw_dump(s, seq++, FL_DUMP_DEADLOCKS);
	if (strstr(text, "cycle of"))
		fl__test_fail(__FILE__, __LINE__, "a signalled fence was reported:\n%s", text);
	free(text);
	/* The wait ended without a notice: the daemon's copy is closed. */
	fl_assert_int_eq(read(p[0], &byte, 1), 0);
	close(p[0]);
	counter_unmap(ctr);
	close(mfd);
	close(fence);
	close(tl);
	close(s);
	_exit(0);
}

FL_TEST(owner_waiting_on_a_point_it_passed_is_no_deadlock)
{
	dl_daemon_stop(child_on_own_daemon("passed.sock", owner_passes_own_point_child));
}

/* A blocking pipe (or socket pair, @sock) whose write end @w[1] cannot take a byte more. */
static void full_channel(int w[2], bool sock)
{
	char junk[4096] = { 0 };
	int fl;

	if (sock)
		fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, w), 0);
	else
		fl_assert_int_eq(pipe2(w, O_CLOEXEC), 0);
	fl = fcntl(w[1], F_GETFL);
	fl_assert_int_eq(fcntl(w[1], F_SETFL, fl | O_NONBLOCK), 0);
	while (write(w[1], junk, sizeof(junk)) > 0)
		;
	while (write(w[1], junk, 1) > 0)
		;
	fl_assert(errno == EAGAIN);
	/* Blocking again, as the daemon gets it. */
	fl_assert_int_eq(fcntl(w[1], F_SETFL, fl), 0);
}

/*
 * A process waits on a fence of its own timeline (a cycle of one) with a
 * notify fd that is full and blocking: telling it EDEADLK must not block
 * the daemon, which then answers every client, and keeps to its finding.
 */
static void full_notify_child(const char *path, pid_t daemon)
{
	uint32_t seq = 1, handle;
	int s, other, tl, fence, w[2], k;

	(void)daemon;
	s = raw_connect_to(path);
	other = raw_connect_to(path);
	raw_hello(s);
	raw_hello(other);
	tl = raw_timeline_create(s, seq++, "cycle", &handle);
	for (k = 0; k < 2; k++) {
		char *text;

		fence = raw_fence_create(s, seq++, tl, (uint64_t)k + 1);
		full_channel(w, k == 1);
		raw_wait_begin(s, seq++, fence, w[1]);
		close(w[1]);
		/* DUMP's deadlock view runs the detector, which finds the cycle at once. */
		text = raw_dump(s, seq++, FL_DUMP_DEADLOCKS);
		if (!strstr(text, "deadlock: a cycle of 1 process"))
			fl__test_fail(__FILE__, __LINE__, "no cycle found:\n%s", text);
		free(text);
		raw_ping_ok(other, seq++);
		raw_ping_ok(s, seq++);
		close(w[0]);
		close(fence);
	}
	close(tl);
	close(other);
	close(s);
	_exit(0);
}

FL_TEST_TIMEOUT(full_notify_fd_does_not_block_the_daemon, 30)
{
	/* The cycle needs a process whose every thread waits; TSan's runtime thread never does. */
	if (FL_TEST_UNDER_TSAN)
		fl_test_skip("TSan's own thread keeps any process from looking blocked");
	dl_daemon_stop(child_on_own_daemon("notify.sock", full_notify_child));
}

/* ---- trace caps ---- */

/* The unsigned number after "@key": in @json, which must have it. */
static unsigned long long json_number(const char *json, const char *key)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	at = strstr(json, pat);
	if (!at)
		fl__test_fail(__FILE__, __LINE__, "no %s in the trace", key);
	return strtoull(at + strlen(pat), NULL, 10);
}

/*
 * A trace whose client asks to keep 2^32 - 1 events, then makes @incs
 * signals: returns the trace (malloc()ed).
 */
static char *greedy_trace(const char *path, int incs)
{
	uint32_t seq = 1, handle;
	int s = raw_connect_to(path), tl;
	char *text;

	raw_hello(s);
	tl = raw_timeline_create(s, seq++, "traced", &handle);
	raw_send_trace(s, seq, FL_TRACE_START, UINT32_MAX);
	fl_assert_int_eq(raw_reply(s, FL_OP_TRACE, seq++), 0);
	for (int i = 0; i < incs; i++)
		fl_assert_int_eq(raw_inc(s, seq++, tl, 1), 0);
	raw_send_trace(s, seq, FL_TRACE_STOP, 0);
	text = raw_reply_text(s, FL_OP_TRACE, seq++);
	close(tl);
	close(s);
	return text;
}

FL_TEST(trace_keeps_no_more_events_than_the_daemon_allows)
{
	static const char *const small[] = { "--idle-timeout", "0", "--trace-max-events", "50",
					     NULL };
	static const char *const dflt[] = { "--idle-timeout", "0", NULL };
	char path[256], *text;
	pid_t d;

	/* The default cap, whatever the client asked. */
	dl_runtime_path("trace-default.sock", path, sizeof(path));
	d = dl_daemon_start(path, dflt);
	text = greedy_trace(path, 1);
	fl_assert_int_eq(json_number(text, "max_events"), 1000000);
	free(text);
	dl_daemon_stop(d);

	/* A smaller one: events beyond it are counted, not kept. */
	dl_runtime_path("trace-small.sock", path, sizeof(path));
	d = dl_daemon_start(path, small);
	text = greedy_trace(path, 100);
	fl_assert_int_eq(json_number(text, "max_events"), 50);
	fl_assert_int_eq(json_number(text, "events"), 50);
	fl_assert(json_number(text, "dropped") >= 50);
	free(text);
	dl_daemon_stop(d);
}

#define GARBAGE_CLIENTS 2000

/*
 * Clients that send garbage are each worth a log line, but thousands of
 * them must not flood the log: the daemon keeps to its rate (50 lines at
 * once, 10 a second after that) and says how many lines it held back.
 */
FL_TEST(daemon_log_is_rate_limited_and_counts_what_it_drops)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256], log[256];
	uint64_t start, elapsed_ms;
	int saved, fd, lines;
	pid_t d;

	dl_runtime_path("garbage.sock", path, sizeof(path));
	dl_runtime_path("garbage.log", log, sizeof(log));
	/* The daemon writes its log to our stderr: a file, for the while it starts. */
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fl_assert(fd >= 0);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	fl_assert(saved >= 0);
	fl_assert_int_eq(dup2(fd, 2), 2);
	d = dl_daemon_start(path, args);
	fl_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	close(fd);

	start = fl_test_now_ns();
	for (int i = 0; i < GARBAGE_CLIENTS; i++) {
		int s = raw_connect_to(path);
		char junk[3] = { 1, 2, 3 }, byte;

		raw_send(s, junk, sizeof(junk), NULL, 0);
		/* Hung up on, after the line about it. */
		fl_assert_int_eq(read(s, &byte, 1), 0);
		close(s);
	}
	elapsed_ms = (fl_test_now_ns() - start) / 1000000;
	/* Each line was written before its client was hung up on. */
	lines = count_lines(log, "malformed");
	/* What the rate allows for the time it took (not a timing assertion: a bound from it). */
	if ((uint64_t)lines > 50 + 10 * (elapsed_ms / 1000 + 2))
		fl__test_fail(__FILE__, __LINE__, "%d lines about garbage in %llu ms", lines,
			      (unsigned long long)elapsed_ms);
	fl_assert(lines >= 1);
	/* Held back lines are counted in a line of their own, once the rate allows. */
	while (count_lines(log, "messages suppressed") == 0)
		fl_test_sleep_ms(20);
	/* Still serving. */
	fd = raw_connect_to(path);
	raw_hello(fd);
	raw_ping_ok(fd, 2);
	close(fd);
	dl_daemon_stop(d);
}

/* ---- fairness ---- */

#define FLOOD_DUMPS 48

/*
 * A client with many DUMPs in flight (each walks /proc) must not hold up
 * the others: the daemon schedules by cost. With the daemon stopped, one
 * client queues 48 DUMPs and then an INC of a timeline, and a bystander
 * asks for the timeline's value; once the daemon runs again, the
 * bystander must be answered before the INC behind the DUMPs (it used to
 * handle 64 requests of one client before looking at another).
 * Then a flooder that never reads its replies must not keep the bystander
 * from being answered.
 */
FL_TEST_TIMEOUT(dump_flood_cannot_starve_a_bystander, 120)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	char path[256];
	int flooder, bystander, tl;
	uint32_t seq = 10, handle;
	pid_t d;

	dl_runtime_path("flood.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	flooder = raw_connect_to(path);
	bystander = raw_connect_to(path);
	raw_hello(flooder);
	raw_hello(bystander);
	tl = raw_timeline_create(flooder, seq++, "behind-dumps", &handle);

	fl_assert_int_eq(kill(d, SIGSTOP), 0);
	for (int i = 0; i < FLOOD_DUMPS; i++)
		raw_send_dump(flooder, seq++);
	{
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_timeline_inc b;
		} inc = { { FL_OP_TIMELINE_INC, 0, seq++, sizeof(struct fl_msg_timeline_inc) },
			  { 1 } };
		struct fl_msg_hdr h = { FL_OP_TIMELINE_GET_VALUE, 0, 1, 0 };
		struct fl_msg_value_reply rep;

		raw_send(flooder, &inc, sizeof(inc), &tl, 1);
		raw_send(bystander, &h, sizeof(h), &tl, 1);
		fl_assert_int_eq(kill(d, SIGCONT), 0);
		raw_reply_body(bystander, FL_OP_TIMELINE_GET_VALUE, 1, &rep, sizeof(rep));
		if (rep.value != 0)
			fl__test_fail(__FILE__, __LINE__,
				      "the bystander waited for all %d DUMPs of another client",
				      FLOOD_DUMPS);
	}
	close(flooder);
	close(tl);

	/* A flooder that never reads: the bystander is answered all along. */
	flooder = raw_connect_to(path);
	raw_hello(flooder);
	for (int round = 0; round < 50; round++) {
		struct fl_msg_hdr h = { FL_OP_PING, 0, (uint32_t)round + 2, 0 };
		struct {
			struct fl_msg_hdr h;
			struct fl_msg_dump b;
		} req = { { FL_OP_DUMP, 0, seq++, sizeof(struct fl_msg_dump) }, { 0, 0 } };

		for (int i = 0; i < 8; i++)
			(void)!send(flooder, &req, sizeof(req), MSG_DONTWAIT | MSG_NOSIGNAL);
		raw_send(bystander, &h, sizeof(h), NULL, 0);
		fl_assert_int_eq(raw_reply(bystander, FL_OP_PING, (uint32_t)round + 2), 0);
	}
	close(flooder);
	close(bystander);
	dl_daemon_stop(d);
}

/* The daemon's loop passes so far, from a DUMP in JSON. */
static uint64_t daemon_passes(int sock, uint32_t seq)
{
	char *text = raw_dump(sock, seq, FL_DUMP_JSON);
	const char *p = strstr(text, "\"passes\":");
	uint64_t n;

	fl_assert(p);
	n = strtoull(p + strlen("\"passes\":"), NULL, 10);
	free(text);
	return n;
}

/*
 * A client that is read no further until its DUMP is answered (parked for
 * a walk of /proc) and sent more behind it: its socket stays readable, and
 * the loop must not wake for it on every pass until the answer. It did,
 * spinning through each walk: 70 times the passes of the same DUMPs sent
 * one at a time (21251 against 298 here).
 */
FL_TEST_TIMEOUT(a_client_sending_behind_its_parked_dump_leaves_the_loop_asleep, 120)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	uint64_t p0, p1, p2;
	uint32_t seq = 10;
	char path[256];
	int s;
	pid_t d;

	dl_runtime_path("parked-more.sock", path, sizeof(path));
	d = dl_daemon_start(path, args);
	s = raw_connect_to(path);
	raw_hello(s);

	p0 = daemon_passes(s, seq++);
	for (int i = 0; i < 10; i++) {
		struct fl_msg_hdr ping = { FL_OP_PING, 0, seq + 1, 0 };

		raw_send_dump(s, seq);
		raw_send(s, &ping, sizeof(ping), NULL, 0);
		free(raw_reply_text(s, FL_OP_DUMP, seq));
		fl_assert_int_eq(raw_reply(s, FL_OP_PING, seq + 1), 0);
		seq += 2;
	}
	p1 = daemon_passes(s, seq++);
	for (int i = 0; i < 10; i++) {
		free(raw_dump(s, seq++, 0));
		raw_ping_ok(s, seq++);
	}
	p2 = daemon_passes(s, seq++);
	fprintf(stderr, "loop passes: %llu with a PING behind each DUMP, %llu without\n",
		(unsigned long long)(p1 - p0), (unsigned long long)(p2 - p1));
	if (p1 - p0 > 3 * (p2 - p1) + 100)
		fl__test_fail(__FILE__, __LINE__,
			      "the loop woke for a parked client's queue: %llu passes against %llu",
			      (unsigned long long)(p1 - p0), (unsigned long long)(p2 - p1));
	close(s);
	dl_daemon_stop(d);
}

/*
 * A pooled fd passed on before its FENCE_NEW (one-way) was read: maker a
 * and asker b, with the daemon stopped while the requests queue up. The
 * maker has just cost it a DUMP (a walk of /proc), so the asker, with less
 * debt, is served first (see serve_ready()) and what it sends before
 * pass_early_go() comes before the FENCE_NEW.
 */
struct pass_early {
	pid_t d;
	int a, b, bystander, tl, pooled;
	uint32_t handle;
};

static void pass_early_begin(struct pass_early *e, const char *name, bool bystander)
{
	static const char *const args[] = { "--idle-timeout", "0", NULL };
	struct fl_msg_hdr ping = { FL_OP_PING, 0, 20, 0 };
	char path[256];

	dl_runtime_path(name, path, sizeof(path));
	e->d = dl_daemon_start(path, args);
	e->a = raw_connect_to(path);
	raw_hello(e->a);
	e->b = raw_connect_to(path);
	raw_hello(e->b);
	e->bystander = -1;
	if (bystander) {
		e->bystander = raw_connect_to(path);
		raw_hello(e->bystander);
	}
	e->tl = raw_timeline_create(e->a, 10, name, &e->handle);
	fl_assert(e->tl >= 0);
	raw_pool_fill_ok(e->a, 11, 1, 0, &e->pooled);
	free(raw_dump(e->a, 14, 0));

	fl_assert_int_eq(kill(e->d, SIGSTOP), 0);
	raw_send(e->b, &ping, sizeof(ping), NULL, 0);
	raw_send_fence_new(e->a, 12, 0, 5, e->handle, 0);
}

/* The daemon goes on; b's PING (seq 20) is answered. */
static void pass_early_go(struct pass_early *e)
{
	fl_assert_int_eq(kill(e->d, SIGCONT), 0);
	fl_assert_int_eq(raw_reply(e->b, FL_OP_PING, 20), 0);
}

/* And once it is a fence, it completes as one: a signals point 5. */
static void pass_early_end(struct pass_early *e)
{
	fl_assert_int_eq(raw_inc(e->a, 13, e->tl, 5), 0);
	fl_assert_int_eq(fl_fence_fd_wait(e->pooled, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(e->pooled), FL_STATUS_SIGNALED);
}

static void pass_early_close(struct pass_early *e)
{
	if (e->bystander >= 0)
		close(e->bystander);
	close(e->pooled);
	close(e->tl);
	close(e->a);
	close(e->b);
	dl_daemon_stop(e->d);
}

/*
 * Such an fd is still a fence to whoever asks about it: the daemon reads on
 * in the maker's connection, the only one its pool index names (not the
 * bystander's, another idle connection).
 */
FL_TEST(a_pooled_fd_passed_before_its_fence_new_was_read_is_a_fence)
{
	struct fl_msg_info_reply rep;
	struct pass_early e;

	pass_early_begin(&e, "pass-early", true);
	raw_send_fence_info(e.b, 21, e.pooled);
	pass_early_go(&e);
	raw_reply_body(e.b, FL_OP_FENCE_INFO, 21, &rep, sizeof(rep));
	fl_assert_int_eq(rep.status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(rep.num_points, 1);
	pass_early_end(&e);
	raw_ping_ok(e.bystander, 30);
	pass_early_close(&e);
}

/* Does the waiters part of a FL_DUMP_DEADLOCKS @text name @who? */
static bool waiters_name(const char *text, const char *who)
{
	const char *hit = strstr(text, who), *findings = strstr(text, "findings:");

	return hit && (!findings || hit < findings);
}

/*
 * The same for a wait reported on such an fd (WAIT_BEGIN, one-way): the
 * waiter got the fd after its FENCE_NEW was sent, so its wait is on a
 * fence, and the deadlock detector must know it. It was dropped as "not a
 * fence we know", and a two-process cycle whose fences had just been made
 * went unreported now and then (deadlock-test, 1 run in ~500 under load).
 */
FL_TEST(a_wait_on_a_pooled_fd_passed_before_its_fence_new_was_read_is_tracked)
{
	struct {
		struct fl_msg_hdr h;
		struct fl_msg_wait_begin b;
	} wait = { { FL_OP_WAIT_BEGIN, 0, 22, sizeof(struct fl_msg_wait_begin) },
		   { 77, (uint32_t)gettid(), -1 } };
	struct pass_early e;
	char me[64], *text;

	snprintf(me, sizeof(me), "thread %d ", (int)gettid());
	pass_early_begin(&e, "wait-early", false);
	raw_send(e.b, &wait, sizeof(wait), &e.pooled, 1);
	pass_early_go(&e);
	text = raw_dump(e.b, 23, FL_DUMP_DEADLOCKS);
	if (!waiters_name(text, me))
		fprintf(stderr, "the wait is not tracked:\n%s\n", text);
	fl_assert(waiters_name(text, me));
	free(text);
	/* It ends when its fence does. */
	pass_early_end(&e);
	text = raw_dump(e.b, 24, FL_DUMP_DEADLOCKS);
	if (waiters_name(text, me))
		fprintf(stderr, "the wait outlived its fence:\n%s\n", text);
	fl_assert(!waiters_name(text, me));
	free(text);
	pass_early_close(&e);
}

/* SPDX-License-Identifier: MIT */
/*
 * Contexts (<fenceline/context.h>): a library's own mode beside the
 * program's. Timelines made on a context live where the context says, the
 * fences made from them follow, both kinds work side by side in one
 * process, and a context leaves nothing behind. Requests of several
 * threads on one connection: context-pipeline-test.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <fenceline/context.h>
#include <fenceline/fenceline.h>

#include "runner.h"

static struct fl_context *context_of(enum fl_mode mode)
{
	struct fl_context_options o = { sizeof(o), mode, 0 };
	struct fl_context *ctx = NULL;

	fl_assert_int_eq(fl_context_new(&o, &ctx), 0);
	fl_assert(ctx != NULL);
	fl_assert_int_eq(fl_context_get_mode(ctx), mode);
	return ctx;
}

/* Is @fd this process's core's (in-process) timeline fd, or fence fd? */
static bool in_process(int fd, bool timeline)
{
	struct fl_timeline *tl = NULL;
	struct fl_fence *f = NULL;

	if (timeline ? fl_timeline_from_fd(fd, &tl) < 0 : fl_fence_from_fd(fd, &f) < 0)
		return false;
	if (tl)
		fl_timeline_unref(tl);
	if (f)
		fl_fence_unref(f);
	return true;
}

/* A timeline on @ctx, a fence on it, signalled through the fd API: the whole round. */
static void make_and_signal(struct fl_context *ctx, bool want_in_process)
{
	int tl = -1, fence = -1;

	fl_assert_int_eq(fl_timeline_fd_create_ctx(ctx, "ctx-tl", 0, &tl), 0);
	fl_assert_int_eq(in_process(tl, true), want_in_process);
	fl_assert_int_eq(fl_fence_fd_create(tl, 2, "ctx-fence", &fence), 0);
	fl_assert_int_eq(in_process(fence, false), want_in_process);
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fence), FL_STATUS_ACTIVE);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fence, 10000), 0);
	close(fence);
	fl_assert_int_eq(fl_timeline_fd_close(tl), 0);
}

FL_TEST(in_process_context_beside_a_daemon_program)
{
	struct fl_context *local = context_of(FL_MODE_IN_PROCESS);

	fl_assert_int_eq(fl_mode_get(), FL_MODE_DAEMON);
	make_and_signal(local, true);
	/* The program's own calls still go to the daemon. */
	make_and_signal(NULL, false);
	make_and_signal(fl_context_default(), false);
	fl_context_destroy(local);
}

FL_TEST(daemon_context_beside_an_in_process_program)
{
	struct fl_context *shared = context_of(FL_MODE_DAEMON);

	fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
	fl_assert_int_eq(fl_context_get_mode(fl_context_default()), FL_MODE_IN_PROCESS);
	make_and_signal(shared, false);
	make_and_signal(NULL, true);
	fl_context_destroy(shared);
	/* The runner checks the connection only in daemon mode: give it back. */
	fl_daemon_disconnect();
}

/*
 * fl_timeline_fd_close() returns once the daemon has failed the timeline's
 * pending fences: also for a daemon context's timeline in a process whose
 * own mode is in-process.
 */
FL_TEST(closing_a_daemon_contexts_timeline_fails_its_fences_at_once)
{
	struct fl_context *shared = context_of(FL_MODE_DAEMON);
	int tl = -1, fence = -1;

	fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
	fl_assert_int_eq(fl_timeline_fd_create_ctx(shared, "closed", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 5, "orphan", &fence), 0);
	fl_assert_int_eq(fl_timeline_fd_close(tl), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(fence), -ENOENT);
	close(fence);
	fl_context_destroy(shared);
	fl_daemon_disconnect();
}

FL_TEST(fences_of_two_contexts_wait_together_but_do_not_merge)
{
	struct fl_context *local = context_of(FL_MODE_IN_PROCESS);
	struct fl_context *shared = context_of(FL_MODE_DAEMON);
	int ltl = -1, stl = -1, lf = -1, sf = -1, m = -1, lm = -1, lf2 = -1;

	fl_assert_int_eq(fl_timeline_fd_create_ctx(local, "l", 0, &ltl), 0);
	fl_assert_int_eq(fl_timeline_fd_create_ctx(shared, "s", 0, &stl), 0);
	fl_assert_int_eq(fl_fence_fd_create(ltl, 1, "lf", &lf), 0);
	fl_assert_int_eq(fl_fence_fd_create(stl, 1, "sf", &sf), 0);
	/* Each merge is served where fd1 lives: the other kind is no fence there. */
	fl_assert_int_eq(fl_fence_fd_merge(lf, sf, "m", 0, &m), -ENOENT);
	fl_assert_int_eq(fl_fence_fd_merge(sf, lf, "m", 0, &m), -ENOENT);
	fl_assert_int_eq(m, -1);
	/* A merge within a context stays there. */
	fl_assert_int_eq(fl_fence_fd_create(ltl, 2, "lf2", &lf2), 0);
	fl_assert_int_eq(fl_fence_fd_merge(lf, lf2, "lm", 0, &lm), 0);
	fl_assert(in_process(lm, false));
	fl_assert_int_eq(fl_timeline_fd_inc(ltl, 2), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(stl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(lm, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_wait(sf, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_wait(lf, 10000), 0);
	close(lm);
	close(lf2);
	close(lf);
	close(sf);
	close(ltl);
	close(stl);
	fl_context_destroy(shared);
	fl_context_destroy(local);
}

/* A context's fds are the caller's: they outlive it, and it keeps none of its own. */
FL_TEST(fds_outlive_their_context_which_keeps_no_fd)
{
	struct fl_test_fd_snapshot base;
	struct fl_context *local, *shared;
	int ltl = -1, stl = -1, lf = -1, sf = -1;

	fl_test_fd_snapshot(&base);
	local = context_of(FL_MODE_IN_PROCESS);
	shared = context_of(FL_MODE_DAEMON);
	fl_test_expect_new_fds(&base, 0);
	fl_assert_int_eq(fl_timeline_fd_create_ctx(local, "l", 0, &ltl), 0);
	fl_assert_int_eq(fl_timeline_fd_create_ctx(shared, "s", 0, &stl), 0);
	fl_assert_int_eq(fl_fence_fd_create(ltl, 1, "lf", &lf), 0);
	fl_assert_int_eq(fl_fence_fd_create(stl, 1, "sf", &sf), 0);
	fl_context_destroy(local);
	fl_context_destroy(shared);
	fl_assert_int_eq(fl_timeline_fd_inc(ltl, 1), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(stl, 1), 0);
	fl_assert_int_eq(fl_fence_fd_wait(lf, 10000), 0);
	fl_assert_int_eq(fl_fence_fd_wait(sf, 10000), 0);
	close(lf);
	close(sf);
	close(ltl);
	close(stl);
	/* The connection's pooled fds go with it: nothing is left of either context. */
	fl_daemon_disconnect();
	fl_test_wait_fds_back(&base);
}

struct worker {
	struct fl_context *ctx;
	bool in_process;
	int done;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 50; i++)
		make_and_signal(w->ctx, w->in_process);
	w->done = 1;
	return NULL;
}

/* Two libraries, each on its own thread and context, at once. */
FL_TEST(two_contexts_of_different_modes_on_two_threads)
{
	struct worker a = { context_of(FL_MODE_IN_PROCESS), true, 0 };
	struct worker b = { context_of(FL_MODE_DAEMON), false, 0 };
	pthread_t ta, tb;

	fl_assert_int_eq(pthread_create(&ta, NULL, work, &a), 0);
	fl_assert_int_eq(pthread_create(&tb, NULL, work, &b), 0);
	fl_assert_int_eq(pthread_join(ta, NULL), 0);
	fl_assert_int_eq(pthread_join(tb, NULL), 0);
	fl_assert(a.done && b.done);
	fl_context_destroy(a.ctx);
	fl_context_destroy(b.ctx);
}

/*
 * A wait on a daemon context's fence is reported to the daemon (so that
 * fencectl sees it, and its deadlock detector) also in a process whose own
 * mode is in-process; an in-process fence's wait is not.
 */
FL_TEST(waits_on_a_daemon_contexts_fences_are_reported_in_an_in_process_program)
{
	struct fl_context *shared = context_of(FL_MODE_DAEMON);
	struct fl_wait_report w = { 0, -1 };
	int tl = -1, fence = -1, ltl = -1, lf = -1;

	fl_assert_int_eq(fl_mode_set(FL_MODE_IN_PROCESS), 0);
	fl_assert_int_eq(fl_timeline_fd_create_ctx(shared, "reported", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "reported", &fence), 0);
	fl_assert_int_eq(fl_fence_fd_wait_begin(fence, -1, 0, &w), 0);
	fl_assert(w.token != 0);
	fl_fence_fd_wait_end(&w, -ETIME);
	fl_assert_int_eq(fl_timeline_fd_create(NULL, 0, &ltl), 0);
	fl_assert_int_eq(fl_fence_fd_create(ltl, 1, "local", &lf), 0);
	fl_assert_int_eq(fl_fence_fd_wait_begin(lf, -1, 0, &w), 0);
	fl_assert_int_eq(w.token, 0);
	close(lf);
	close(ltl);
	close(fence);
	close(tl);
	fl_context_destroy(shared);
	fl_daemon_disconnect();
}

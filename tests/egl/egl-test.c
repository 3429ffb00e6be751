/* SPDX-License-Identifier: MIT */
/*
 * GPU fences (<fenceline/egl.h>) on a real driver: Mesa's surfaceless
 * platform with llvmpipe (egl-helpers.h). Whatever path the display takes
 * runs; the other path's tests skip, saying why. A machine without EGL or
 * the surfaceless platform skips (77).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/egl.h>
#include <fenceline/fenceline.h>

#include "egl-helpers.h"
#include "helpers.h"
#include "runner.h"

FL_TEST(reports_extensions_and_the_path_taken)
{
	struct gl g;
	int path;

	fl_test_gl_open(&g);
	path = fl_egl_fence_path(g.dpy);
	fprintf(stderr, "EGL %s, GL renderer %s\nextensions: %s\npath: %s\n",
		eglQueryString(g.dpy, EGL_VERSION), (const char *)glGetString(GL_RENDERER),
		eglQueryString(g.dpy, EGL_EXTENSIONS), fl_egl_fence_path_name(path));
	fl_assert(path == FL_EGL_PATH_NATIVE || path == FL_EGL_PATH_KHR);
	fl_assert_int_eq(path == FL_EGL_PATH_NATIVE,
			 strstr(eglQueryString(g.dpy, EGL_EXTENSIONS),
				"EGL_ANDROID_native_fence_sync") != NULL);
	fl_assert_str_eq(fl_egl_fence_path_name(FL_EGL_PATH_KHR), "khr");
	fl_assert_str_eq(fl_egl_fence_path_name(FL_EGL_PATH_NATIVE), "native");
	fl_assert_str_eq(fl_egl_fence_path_name(-EOPNOTSUPP), "none");
	fl_test_gl_close(&g);
}

FL_TEST(khr_fence_signals_once_the_gpu_is_done)
{
	struct gl g;

	fl_test_gl_open(&g);
	fl_test_gl_need_path(&g, FL_EGL_PATH_KHR);
	fl_test_gl_fence_covers_the_work(&g);
	fl_test_gl_close(&g);
}

FL_TEST(khr_fence_in_process_mode)
{
	struct gl g;

	fl_mode_set(FL_MODE_IN_PROCESS);
	fl_test_gl_open(&g);
	fl_test_gl_need_path(&g, FL_EGL_PATH_KHR);
	fl_test_gl_fence_covers_the_work(&g);
	fl_test_gl_close(&g);
}

FL_TEST(native_fence_signals_once_the_gpu_is_done)
{
	struct gl g;

	fl_test_gl_open(&g);
	fl_test_gl_need_path(&g, FL_EGL_PATH_NATIVE);
	fl_test_gl_fence_covers_the_work(&g);
	fl_test_gl_close(&g);
}

FL_TEST(env_var_forces_the_khr_path)
{
	struct gl g;

	setenv("FENCELINE_EGL_PATH", "khr", 1);
	fl_test_gl_open(&g);
	fl_assert_int_eq(fl_egl_fence_path(g.dpy), FL_EGL_PATH_KHR);
	fl_test_gl_fence_covers_the_work(&g);
	fl_test_gl_close(&g);
}

FL_TEST(env_var_none_makes_every_call_eopnotsupp)
{
	struct gl g;
	int fd = -1, tl = -1, f = -1;

	setenv("FENCELINE_EGL_PATH", "none", 1);
	fl_test_gl_open(&g);
	fl_assert_int_eq(fl_egl_fence_path(g.dpy), -EOPNOTSUPP);
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fd), -EOPNOTSUPP);
	fl_assert_int_eq(fd, -1);
	fl_assert_int_eq(fl_timeline_fd_create("t", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "f", &f), 0);
	fl_assert_int_eq(fl_egl_wait(g.dpy, f), -EOPNOTSUPP);
	close(f);
	fl_timeline_fd_close(tl);
	fl_test_gl_close(&g);
}

FL_TEST(env_var_native_without_the_extension_is_eopnotsupp)
{
	struct gl g;

	setenv("FENCELINE_EGL_PATH", "native", 1);
	fl_test_gl_open(&g);
	if (strstr(eglQueryString(g.dpy, EGL_EXTENSIONS), "EGL_ANDROID_native_fence_sync")) {
		fl_test_gl_close(&g);
		fl_test_skip("this driver has EGL_ANDROID_native_fence_sync");
	}
	fl_assert_int_eq(fl_egl_fence_path(g.dpy), -EOPNOTSUPP);
	fl_test_gl_close(&g);
}

FL_TEST(many_fences_in_flight_signal_in_order)
{
	enum { N = 64 };
	EGLSyncKHR raw[N];
	int fds[N];
	struct gl g;

	fl_test_gl_open(&g);
	for (int i = 0; i < N; i++) {
		fl_test_gl_draw(&g, i % 4 == 0 ? 1 : 0, 0, 0, 1);
		raw[i] = fl_test_gl_raw_fence(&g);
		fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fds[i]), 0);
	}
	/* Each covers its work, and none signals before an earlier one. */
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(fl_fence_fd_wait(fds[i], -1), 0);
		fl_assert(fl_test_gl_raw_signalled(&g, raw[i]));
		for (int j = 0; j < i; j++)
			fl_assert_int_eq(fl_fence_fd_get_status(fds[j]), 1);
	}
	for (int i = 0; i < N; i++) {
		g.destroy_sync(g.dpy, raw[i]);
		close(fds[i]);
	}
	fl_test_gl_close(&g);
}

struct waiter_arg {
	struct gl g;
	int fence_fd;
	_Atomic int released; /* the test has signalled the fence */
	_Atomic int drawn; /* the GL thread passed the wait */
	int wait_result, saw_released, done_fd;
};

/* The GL thread: wait for the fence, then draw and fence the draw. */
static void *gl_thread(void *p)
{
	struct waiter_arg *a = p;

	fl_assert(eglMakeCurrent(a->g.dpy, a->g.surf, a->g.surf, a->g.ctx));
	a->wait_result = fl_egl_wait(a->g.dpy, a->fence_fd);
	a->saw_released = a->released;
	fl_test_gl_draw(&a->g, 1, 1, 0, 0);
	fl_assert_int_eq(fl_egl_fence_create(a->g.dpy, "after", &a->done_fd), 0);
	a->drawn = 1;
	fl_assert(eglMakeCurrent(a->g.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT));
	eglReleaseThread();
	return NULL;
}

FL_TEST(gl_waits_for_a_fence_a_timeline_signals_later)
{
	struct waiter_arg a = { .fence_fd = -1, .done_fd = -1 };
	pthread_t t;
	int tl;

	fl_test_gl_open(&a.g);
	fl_assert_int_eq(fl_timeline_fd_create("release", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "release", &a.fence_fd), 0);
	fl_assert(eglMakeCurrent(a.g.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT));
	fl_assert_int_eq(pthread_create(&t, NULL, gl_thread, &a), 0);
	/* However long this takes, the draw behind the wait must not have happened. */
	fl_test_sleep_ms(100);
	fl_assert_int_eq(a.drawn, 0);
	a.released = 1;
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	pthread_join(t, NULL);
	fl_assert_int_eq(a.wait_result, 0);
	fl_assert_int_eq(a.saw_released, 1);
	fl_assert_int_eq(fl_fence_fd_wait(a.done_fd, -1), 0);
	fl_assert(eglMakeCurrent(a.g.dpy, a.g.surf, a.g.surf, a.g.ctx));
	fl_assert_int_eq(fl_test_gl_pixel(1, 1), 0xff0000ff);
	close(a.done_fd);
	close(a.fence_fd);
	fl_timeline_fd_close(tl);
	fl_test_gl_close(&a.g);
}

FL_TEST(wait_reports_a_failed_fence_and_passes_a_signalled_one)
{
	int tl, f1, f2, egl_fd;
	struct gl g;

	fl_test_gl_open(&g);
	fl_assert_int_eq(fl_timeline_fd_create("t", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "one", &f1), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 2, "two", &f2), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_egl_wait(g.dpy, f1), 0);
	/* The timeline dies: its pending point fails, and the wait says so. */
	fl_assert_int_eq(fl_timeline_fd_close(tl), 0);
	fl_assert_int_eq(fl_egl_wait(g.dpy, f2), -ENOENT);
	/* Our own fences go in too (waited on the CPU). */
	fl_test_gl_draw(&g, 1, 1, 1, 1);
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &egl_fd), 0);
	fl_assert_int_eq(fl_egl_wait(g.dpy, egl_fd), 0);
	fl_assert_int_eq(fl_fence_fd_get_status(egl_fd), 1);
	close(f1);
	close(f2);
	close(egl_fd);
	fl_test_gl_close(&g);
}

/* Opens @g and queues @n fences of two heavy draws each: the GPU is busy for a while. */
static void open_with_fences_in_flight(struct gl *g, int *fds, int n)
{
	fl_test_gl_open(g);
	for (int i = 0; i < n; i++) {
		fl_test_gl_draw(g, 2, 1, 0, 1);
		fl_assert_int_eq(fl_egl_fence_create(g->dpy, NULL, &fds[i]), 0);
	}
}

FL_TEST(release_with_pending_fences_completes_or_fails_them)
{
	enum { N = 24 };
	int fds[N], signalled = 0;
	struct gl g;

	open_with_fences_in_flight(&g, fds, N);
	fl_egl_display_release(g.dpy);
	/* Nothing is left pending once the release has returned. */
	for (int i = 0; i < N; i++) {
		int s = fl_fence_fd_get_status(fds[i]);

		fl_assert(s == 1 || (fl_egl_fence_path(g.dpy) == FL_EGL_PATH_KHR && s == -ENOENT));
		signalled += s == 1;
		close(fds[i]);
	}
	fprintf(stderr, "%d of %d signalled at the release, the rest failed\n", signalled, N);
	/* The display starts afresh. */
	fl_test_gl_draw(&g, 1, 0, 1, 0);
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fds[0]), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fds[0], -1), 0);
	close(fds[0]);
	fl_test_gl_close(&g);
}

FL_TEST(terminated_display_never_leaves_a_fence_pending)
{
	enum { N = 24 };
	int fds[N], failed = 0;
	struct gl g;

	open_with_fences_in_flight(&g, fds, N);
	/*
	 * With the context still current, the terminate does not wait for the
	 * GPU (unbinding it would): fences still queued then meet a dead display.
	 */
	fl_assert(eglTerminate(g.dpy));
	for (int i = 0; i < N; i++) {
		int s = fl_fence_fd_wait(fds[i], -1);

		fl_assert(s == 0 || s == -ENODEV);
		failed += s == -ENODEV;
		close(fds[i]);
	}
	fprintf(stderr, "%d of %d failed with the display\n", failed, N);
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fds[0]), -ENODEV);
	fl_egl_display_release(g.dpy);
	/* Only now are the context and surface freed, the terminate having marked them. */
	eglMakeCurrent(g.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
	fl_assert_int_eq(fl_egl_fence_path(g.dpy), -ENODEV);
	eglReleaseThread();
}

FL_TEST(bad_input_gets_an_errno)
{
	int fd = 12345, pipefd[2], file;
	struct gl g;

	fl_assert_int_eq(fl_egl_fence_create(EGL_NO_DISPLAY, NULL, &fd), -EINVAL);
	fl_assert_int_eq(fl_egl_fence_path(EGL_NO_DISPLAY), -EINVAL);
	fl_test_gl_open(&g);
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, NULL), -EINVAL);
	fl_assert_int_eq(fl_egl_wait(g.dpy, -1), -EBADF);
	fl_assert_int_eq(fl_egl_wait(EGL_NO_DISPLAY, 0), -EINVAL);
	fl_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	close(pipefd[1]);
	fl_assert_int_eq(fl_egl_wait(g.dpy, pipefd[1]), -EBADF);
	file = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	fl_assert_int_ge(file, 0);
	fl_assert_int_eq(fl_egl_wait(g.dpy, file), -EINVAL);
	close(file);
	close(pipefd[0]);
	/* No context current: nothing to fence. */
	fl_assert(eglMakeCurrent(g.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT));
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fd), -EINVAL);
	fl_assert_int_eq(fd, 12345);
	fl_assert(eglMakeCurrent(g.dpy, g.surf, g.surf, g.ctx));
	fl_test_gl_close(&g);
	/* Terminated: the library kept nothing after the release. */
	fl_assert_int_eq(fl_egl_fence_path(g.dpy), -ENODEV);
	fl_egl_display_release(g.dpy); /* unknown display: nothing */
}

struct thread_arg {
	struct gl *g;
	pthread_barrier_t *go;
	int fds[16];
};

/* Threads of one display sharing its waiter, each with a context of its own. */
static void *fence_thread(void *p)
{
	static const EGLint ctx_attribs[] = { EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE };
	struct thread_arg *a = p;
	EGLContext ctx =
		eglCreateContext(a->g->dpy, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, ctx_attribs);

	fl_assert(ctx != EGL_NO_CONTEXT);
	fl_assert(eglMakeCurrent(a->g->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx));
	pthread_barrier_wait(a->go);
	for (int i = 0; i < 16; i++) {
		glClearColor(0, 0, (float)i / 16, 1);
		glClear(GL_COLOR_BUFFER_BIT);
		fl_assert_int_eq(fl_egl_fence_create(a->g->dpy, NULL, &a->fds[i]), 0);
	}
	fl_assert(eglMakeCurrent(a->g->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT));
	eglDestroyContext(a->g->dpy, ctx);
	eglReleaseThread();
	return NULL;
}

FL_TEST(threads_fence_one_display_at_once)
{
	struct thread_arg a[3];
	pthread_barrier_t go;
	pthread_t t[3];
	struct gl g;

	fl_test_gl_open(&g);
	pthread_barrier_init(&go, NULL, 3);
	for (int i = 0; i < 3; i++) {
		a[i].g = &g;
		a[i].go = &go;
		fl_assert_int_eq(pthread_create(&t[i], NULL, fence_thread, &a[i]), 0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 16; j++) {
			fl_assert_int_eq(fl_fence_fd_wait(a[i].fds[j], -1), 0);
			close(a[i].fds[j]);
		}
	pthread_barrier_destroy(&go);
	fl_test_gl_close(&g);
}

/*
 * A producer killed mid-frame: its GPU fences, handed to another process,
 * complete there (those whose work was done) or fail with -ENOENT (the
 * producer's timeline died with it); none hangs the consumer.
 */
FL_TEST(producer_killed_mid_frame_fails_its_fences_in_the_consumer)
{
	enum { N = 8 };
	int sv[2], fds[N], status, failed = 0;
	unsigned int n = 0;
	char byte;
	pid_t pid;

	fl_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	fl_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct gl g;

		close(sv[0]);
		/* In-process fences would fail with -ECONNRESET instead: no timeline outlives us. */
		fl_mode_set(FL_MODE_DAEMON);
		open_with_fences_in_flight(&g, fds, N);
		fl_assert_int_eq(fl_send(sv[1], "f", 1, fds, N), 0);
		raise(SIGKILL);
	}
	close(sv[1]);
	if (fl_recv(sv[0], &byte, 1, NULL, fds, N, &n) < 0) {
		fl_assert_int_eq(waitpid(pid, &status, 0), pid);
		close(sv[0]);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
			fl_test_skip("the producer found no surfaceless EGL display");
		fl_assert(!"the producer sent no fences");
	}
	fl_assert_int_eq(waitpid(pid, &status, 0), pid);
	fl_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	fl_assert_int_eq(n, N);
	for (int i = 0; i < N; i++) {
		int s = fl_fence_fd_wait(fds[i], -1);

		fl_assert(s == 0 || s == -ENOENT);
		failed += s == -ENOENT;
		close(fds[i]);
	}
	fprintf(stderr, "%d of %d failed with their producer\n", failed, N);
	close(sv[0]);
}

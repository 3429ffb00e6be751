/* SPDX-License-Identifier: MIT */
/*
 * The native path (EGL_ANDROID_native_fence_sync) where the driver lacks
 * it, as llvmpipe does: this program stands in for the driver's part. It
 * defines eglQueryString() and eglGetProcAddress(), which come before
 * libEGL's for the library because the executable's definitions do (the
 * fd may be asked for only after a glFlush(), which egl-helpers.c counts),
 * and
 * adds the extension on top of llvmpipe's EGL_KHR_fence_sync:
 *
 * - a native fence sync made without an fd is a real fence sync plus a
 *   fake kernel sync_file (tests/lib/fake-sync-file.c: a pipe that its
 *   ioctl() answers SYNC_IOC_FILE_INFO for);
 *   a thread waits for the real sync and then signals the fake, as a
 *   kernel driver signals its sync_file when the GPU is done;
 * - a native fence sync made from an fd owns that fd (EGL's rule), and
 *   eglWaitSyncKHR() on it, which a real driver queues on the GPU, waits
 *   on the CPU here and counts.
 *
 * So the library's native code runs against the extension's contract: the
 * attribute lists, the flush before the dup, the fd ownership both ways, the
 * import through the sync_file driver. The fences are in-process ones: in
 * daemon mode fencelined would import the fake sync_file in its own
 * process, where no ioctl() answers for it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/egl.h>
#include <fenceline/fenceline.h>

#include "egl-helpers.h"
#include "fake-sync-file.h"
#include "helpers.h"
#include "runner.h"

/* Native fences one test may make. */
#define MAX_FAKES 64

struct fake_sync {
	int fd; /* the sync_file: ours to dup from, or the one EGL was given */
	int flushes_at_create;
};

/* The driver's thread of a fence: the GPU signals the kernel fence. */
struct signaller {
	EGLDisplay dpy;
	EGLSyncKHR real;
	int fake;
	pthread_t thread;
};

/* The fake syncs alive, to tell them from Mesa's in eglDestroySyncKHR(). */
static struct fake_sync *live[MAX_FAKES];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static struct fake_sync *fake_sync_new(void)
{
	struct fake_sync *fs = calloc(1, sizeof(*fs));

	fl_assert(fs);
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < MAX_FAKES; i++)
		if (!live[i]) {
			live[i] = fs;
			break;
		}
	pthread_mutex_unlock(&live_lock);
	return fs;
}

static struct signaller *signallers[MAX_FAKES];
static int nsignallers;
static _Atomic int server_waits, fail_dup;

static PFNEGLCREATESYNCKHRPROC real_create_sync;
static PFNEGLDESTROYSYNCKHRPROC real_destroy_sync;
static PFNEGLCLIENTWAITSYNCKHRPROC real_client_wait_sync;

static void *signal_main(void *p)
{
	struct signaller *s = p;

	fl_assert_int_eq(real_client_wait_sync(s->dpy, s->real, 0, EGL_FOREVER_KHR),
			 EGL_CONDITION_SATISFIED_KHR);
	real_destroy_sync(s->dpy, s->real);
	fl_test_fake_sync_file_signal(s->fake, 1);
	return NULL;
}

static EGLSyncKHR fake_create_sync(EGLDisplay dpy, EGLenum type, const EGLint *attribs)
{
	struct fake_sync *fs;
	struct signaller *s;
	int fd = -1;

	if (type != EGL_SYNC_NATIVE_FENCE_ANDROID)
		return real_create_sync(dpy, type, attribs);
	for (const EGLint *a = attribs; a && *a != EGL_NONE; a += 2)
		if (a[0] == EGL_SYNC_NATIVE_FENCE_FD_ANDROID)
			fd = a[1];
	fs = fake_sync_new();
	fs->flushes_at_create = fl_test_gl_flushes;
	if (fd >= 0) {
		fs->fd = fd; /* EGL owns it from here */
		return fs;
	}
	s = calloc(1, sizeof(*s));
	fl_assert(s);
	s->dpy = dpy;
	s->real = real_create_sync(dpy, EGL_SYNC_FENCE_KHR, NULL);
	fl_assert(s->real != EGL_NO_SYNC_KHR);
	s->fake = fl_test_fake_sync_file(&fs->fd);
	fl_assert(nsignallers < MAX_FAKES);
	signallers[nsignallers++] = s;
	fl_assert_int_eq(pthread_create(&s->thread, NULL, signal_main, s), 0);
	return fs;
}

/* Takes @fs out of the live list: 1 if it was one of ours, else 0 (Mesa's). */
static int fake_sync_take(void *sync)
{
	int found = 0;

	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < MAX_FAKES && !found; i++)
		if (live[i] && live[i] == sync) {
			live[i] = NULL;
			found = 1;
		}
	pthread_mutex_unlock(&live_lock);
	return found;
}

static EGLBoolean fake_destroy_sync(EGLDisplay dpy, EGLSyncKHR sync)
{
	struct fake_sync *fs = sync;

	if (!fake_sync_take(sync))
		return real_destroy_sync(dpy, sync);
	close(fs->fd);
	free(fs);
	return EGL_TRUE;
}

static EGLint fake_dup_native_fence_fd(EGLDisplay dpy, EGLSyncKHR sync)
{
	struct fake_sync *fs = sync;

	/* A real driver has no fd to give before the flush. */
	fl_assert(fs->flushes_at_create < fl_test_gl_flushes);
	if (fail_dup)
		return EGL_NO_NATIVE_FENCE_FD_ANDROID;
	return fcntl(fs->fd, F_DUPFD_CLOEXEC, 0);
}

static EGLint fake_wait_sync(EGLDisplay dpy, EGLSyncKHR sync, EGLint flags)
{
	struct fake_sync *fs = sync;
	struct pollfd p = { .fd = fs->fd, .events = POLLIN };

	/* A driver queues this on the GPU; llvmpipe cannot, so the CPU waits. */
	server_waits++;
	fl_assert_int_eq(poll(&p, 1, -1), 1);
	return EGL_TRUE;
}

/* The library's view of EGL: llvmpipe's, plus the extension. */
__eglMustCastToProperFunctionPointerType eglGetProcAddress(const char *name)
{
	static __eglMustCastToProperFunctionPointerType (*real)(const char *);

	if (!real)
		real = (__eglMustCastToProperFunctionPointerType(*)(const char *))dlsym(
			RTLD_NEXT, "eglGetProcAddress");
	if (strcmp(name, "eglCreateSyncKHR") == 0) {
		real_create_sync = (PFNEGLCREATESYNCKHRPROC)real(name);
		return (__eglMustCastToProperFunctionPointerType)fake_create_sync;
	}
	if (strcmp(name, "eglDestroySyncKHR") == 0) {
		real_destroy_sync = (PFNEGLDESTROYSYNCKHRPROC)real(name);
		return (__eglMustCastToProperFunctionPointerType)fake_destroy_sync;
	}
	if (strcmp(name, "eglClientWaitSyncKHR") == 0)
		real_client_wait_sync = (PFNEGLCLIENTWAITSYNCKHRPROC)real(name);
	if (strcmp(name, "eglDupNativeFenceFDANDROID") == 0)
		return (__eglMustCastToProperFunctionPointerType)fake_dup_native_fence_fd;
	if (strcmp(name, "eglWaitSyncKHR") == 0)
		return (__eglMustCastToProperFunctionPointerType)fake_wait_sync;
	return real(name);
}

const char *eglQueryString(EGLDisplay dpy, EGLint name)
{
	static const char *(*real)(EGLDisplay, EGLint);
	static char buf[4096];
	const char *s;

	if (!real)
		real = (const char *(*)(EGLDisplay, EGLint))dlsym(RTLD_NEXT, "eglQueryString");
	s = real(dpy, name);
	if (!s || dpy == EGL_NO_DISPLAY || name != EGL_EXTENSIONS)
		return s;
	snprintf(buf, sizeof(buf), "%s EGL_ANDROID_native_fence_sync", s);
	return buf;
}

static void open_native(struct gl *g)
{
	fl_mode_set(FL_MODE_IN_PROCESS);
	signal(SIGPIPE, SIG_IGN);
	nsignallers = 0;
	fl_test_gl_open(g);
	/* The extension is ours to give: taking another path is a failure, not a skip. */
	fl_assert_int_eq(fl_egl_fence_path(g->dpy), FL_EGL_PATH_NATIVE);
}

/* Joins the driver's threads: their fds are closed when this returns. */
static void close_native(struct gl *g)
{
	for (int i = 0; i < nsignallers; i++) {
		pthread_join(signallers[i]->thread, NULL);
		free(signallers[i]);
	}
	nsignallers = 0;
	fl_test_gl_close(g);
}

FL_TEST(native_fence_signals_once_the_gpu_is_done)
{
	struct gl g;

	open_native(&g);
	fl_test_gl_fence_covers_the_work(&g);
	fl_assert_int_eq(nsignallers, 1);
	close_native(&g);
}

FL_TEST(native_fence_is_an_import_of_the_drivers_sync_file)
{
	struct fl_sync_pt_info pt;
	struct fl_fence_info info;
	struct gl g;
	int fd;

	open_native(&g);
	fl_test_gl_draw(&g, 1, 1, 0, 0);
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fd), 0);
	fl_assert_int_eq(fl_fence_fd_wait(fd, -1), 0);
	fl_assert_int_eq(fl_fence_fd_get_info(fd, &info, &pt, 1), 1);
	fl_assert_str_eq(info.name, "egl");
	fl_assert_str_eq(pt.driver_name, "sync_file");
	fl_assert_str_eq(pt.timeline_name, "fake-gpu");
	close(fd);
	close_native(&g);
}

FL_TEST(native_many_fences_in_flight)
{
	enum { N = 32 };
	int fds[N];
	struct gl g;

	open_native(&g);
	for (int i = 0; i < N; i++) {
		fl_test_gl_draw(&g, i % 8 == 0, 0, 0, 1);
		fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fds[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		fl_assert_int_eq(fl_fence_fd_wait(fds[i], -1), 0);
		close(fds[i]);
	}
	close_native(&g);
}

FL_TEST(native_driver_without_an_fd_is_eio)
{
	struct gl g;
	int fd = 12345;

	open_native(&g);
	fail_dup = 1;
	fl_assert_int_eq(fl_egl_fence_create(g.dpy, NULL, &fd), -EIO);
	fl_assert_int_eq(fd, 12345);
	fail_dup = 0;
	close_native(&g);
}

struct wait_arg {
	struct gl *g;
	int fd, result;
	_Atomic int released, saw_released;
};

static void *wait_thread(void *p)
{
	struct wait_arg *a = p;

	fl_assert(eglMakeCurrent(a->g->dpy, a->g->surf, a->g->surf, a->g->ctx));
	a->result = fl_egl_wait(a->g->dpy, a->fd);
	a->saw_released = a->released;
	fl_assert(eglMakeCurrent(a->g->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT));
	eglReleaseThread();
	return NULL;
}

FL_TEST(native_wait_hands_a_sync_file_to_the_gpu)
{
	struct wait_arg a = { 0 };
	struct gl g;
	pthread_t t;
	int fake;

	open_native(&g);
	a.g = &g;
	fake = fl_test_fake_sync_file(&a.fd);
	fl_assert(eglMakeCurrent(g.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT));
	fl_assert_int_eq(pthread_create(&t, NULL, wait_thread, &a), 0);
	fl_test_sleep_ms(50);
	a.released = 1;
	fl_test_fake_sync_file_signal(fake, 1);
	pthread_join(t, NULL);
	fl_assert_int_eq(a.result, 0);
	fl_assert_int_eq(a.saw_released, 1);
	/* The GPU's wait, not the CPU's; EGL got a copy, ours stays open. */
	fl_assert_int_eq(server_waits, 1);
	fl_assert_int_ge(fcntl(a.fd, F_GETFD), 0);
	close(a.fd);
	fl_assert(eglMakeCurrent(g.dpy, g.surf, g.surf, g.ctx));
	close_native(&g);
}

FL_TEST(native_wait_on_a_fenceline_fence_waits_on_the_cpu)
{
	int tl, f, fake, sf;
	struct gl g;

	open_native(&g);
	fl_assert_int_eq(fl_timeline_fd_create("t", 0, &tl), 0);
	fl_assert_int_eq(fl_fence_fd_create(tl, 1, "f", &f), 0);
	fl_assert_int_eq(fl_timeline_fd_inc(tl, 1), 0);
	fl_assert_int_eq(fl_egl_wait(g.dpy, f), 0);
	fl_assert_int_eq(server_waits, 0);
	/* A sync_file that has failed: its error, and no wait at all. */
	fake = fl_test_fake_sync_file(&sf);
	fl_test_fake_sync_file_signal(fake, -EIO);
	fl_assert_int_eq(fl_egl_wait(g.dpy, sf), -EIO);
	fl_assert_int_eq(server_waits, 0);
	close(sf);
	/* A GPU wait needs a context of the display. */
	fake = fl_test_fake_sync_file(&sf);
	fl_assert(eglMakeCurrent(g.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT));
	fl_assert_int_eq(fl_egl_wait(g.dpy, sf), -EINVAL);
	fl_assert(eglMakeCurrent(g.dpy, g.surf, g.surf, g.ctx));
	fl_assert_int_eq(server_waits, 0);
	fl_test_fake_sync_file_signal(fake, 1);
	close(sf);
	close(f);
	fl_timeline_fd_close(tl);
	close_native(&g);
}

FL_TEST(env_var_khr_takes_the_khr_path_over_native)
{
	struct gl g;

	setenv("FENCELINE_EGL_PATH", "khr", 1);
	fl_mode_set(FL_MODE_IN_PROCESS);
	fl_test_gl_open(&g);
	fl_assert_int_eq(fl_egl_fence_path(g.dpy), FL_EGL_PATH_KHR);
	fl_test_gl_fence_covers_the_work(&g);
	fl_assert_int_eq(nsignallers, 0);
	fl_test_gl_close(&g);
}

/* SPDX-License-Identifier: MIT */
/*
 * libfenceline-egl: GPU fences as fenceline fences (include/fenceline/egl.h,
 * docs/egl.md). Built on the public API only, as a library of its own, so
 * that libfenceline never loads libEGL.
 *
 * One struct display per EGLDisplay seen, in a list. On the KHR path it owns
 * a timeline fd and a FIFO of sync objects; point N of the timeline is the
 * N-th sync made since the timeline was, and the waiter, the only thread
 * that advances the timeline, pops the head once it has signalled. The
 * waiter calls eglClientWaitSyncKHR() without the display's lock, so that a
 * thread making a fence never waits for the GPU (Mesa 22.3 lets other
 * threads make syncs while one waits, which was checked by hand).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>
#include <linux/sync_file.h>

#include <fenceline/egl.h>
#include <fenceline/fenceline.h>

/* The waiter's longest EGL wait: how long a release waits for it at most. */
#define WAIT_SLICE_NS (50ull * 1000 * 1000)

struct entry {
	EGLSyncKHR sync;
	struct entry *next;
};

struct display {
	EGLDisplay dpy;
	struct display *next;
	int path;

	PFNEGLCREATESYNCKHRPROC create_sync;
	PFNEGLDESTROYSYNCKHRPROC destroy_sync;
	PFNEGLCLIENTWAITSYNCKHRPROC client_wait_sync;
	PFNEGLWAITSYNCKHRPROC wait_sync;
	PFNEGLDUPNATIVEFENCEFDANDROIDPROC dup_native_fence_fd;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t waiter;
	bool waiter_started, stop;
	int timeline_fd; /* -1 until the first KHR fence, and after a death */
	uint64_t made; /* the value of the last point made on it */
	struct entry *head, **tail;
};

static pthread_mutex_t displays_lock = PTHREAD_MUTEX_INITIALIZER;
static struct display *displays;

static bool has_extension(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; p && (p = strstr(p, name)); p += len)
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
			return true;
	return false;
}

/* The path @dpy's extensions and FENCELINE_EGL_PATH give, or -EOPNOTSUPP. */
static int choose_path(struct display *d, const char *exts)
{
	const char *want = getenv("FENCELINE_EGL_PATH");
	bool native = has_extension(exts, "EGL_ANDROID_native_fence_sync") && d->create_sync &&
		      d->dup_native_fence_fd && d->wait_sync;
	bool khr =
		has_extension(exts, "EGL_KHR_fence_sync") && d->create_sync && d->client_wait_sync;

	/* Both paths need the sync objects themselves. */
	if (!d->destroy_sync)
		return -EOPNOTSUPP;
	if (want && *want && strcmp(want, "auto") != 0) {
		if (strcmp(want, "native") == 0)
			return native ? FL_EGL_PATH_NATIVE : -EOPNOTSUPP;
		if (strcmp(want, "khr") == 0)
			return khr ? FL_EGL_PATH_KHR : -EOPNOTSUPP;
		return -EOPNOTSUPP; /* "none", and anything unknown: never a silent default */
	}
	if (native)
		return FL_EGL_PATH_NATIVE;
	return khr ? FL_EGL_PATH_KHR : -EOPNOTSUPP;
}

/* @d's state, made at the first call for @dpy; NULL with *@err set. */
static struct display *display_get(EGLDisplay dpy, int *err)
{
	struct display *d;
	const char *exts;

	if (dpy == EGL_NO_DISPLAY) {
		*err = -EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&displays_lock);
	for (d = displays; d && d->dpy != dpy; d = d->next)
		;
	if (d) {
		pthread_mutex_unlock(&displays_lock);
		return d;
	}
	/* Not initialized, terminated, or no display at all: nothing is kept. */
	exts = eglQueryString(dpy, EGL_EXTENSIONS);
	if (!exts) {
		pthread_mutex_unlock(&displays_lock);
		*err = -ENODEV;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		pthread_mutex_unlock(&displays_lock);
		*err = -ENOMEM;
		return NULL;
	}
	d->dpy = dpy;
	d->create_sync = (PFNEGLCREATESYNCKHRPROC)eglGetProcAddress("eglCreateSyncKHR");
	d->destroy_sync = (PFNEGLDESTROYSYNCKHRPROC)eglGetProcAddress("eglDestroySyncKHR");
	d->client_wait_sync =
		(PFNEGLCLIENTWAITSYNCKHRPROC)eglGetProcAddress("eglClientWaitSyncKHR");
	d->wait_sync = (PFNEGLWAITSYNCKHRPROC)eglGetProcAddress("eglWaitSyncKHR");
	d->dup_native_fence_fd =
		(PFNEGLDUPNATIVEFENCEFDANDROIDPROC)eglGetProcAddress("eglDupNativeFenceFDANDROID");
	d->path = choose_path(d, exts);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->timeline_fd = -1;
	d->tail = &d->head;
	d->next = displays;
	displays = d;
	pthread_mutex_unlock(&displays_lock);
	return d;
}

/* Its path, or the error that stops every call on it. */
static struct display *display_with_path(EGLDisplay dpy, int *err)
{
	struct display *d = display_get(dpy, err);

	if (d && d->path < 0) {
		*err = d->path;
		return NULL;
	}
	return d;
}

FL_EXPORT int fl_egl_fence_path(EGLDisplay dpy)
{
	int r = 0;
	struct display *d = display_get(dpy, &r);

	return d ? d->path : r;
}

FL_EXPORT const char *fl_egl_fence_path_name(int path)
{
	switch (path) {
	case FL_EGL_PATH_NATIVE:
		return "native";
	case FL_EGL_PATH_KHR:
		return "khr";
	default:
		return "none";
	}
}

static bool context_current_on(EGLDisplay dpy)
{
	return eglGetCurrentDisplay() == dpy && eglGetCurrentContext() != EGL_NO_CONTEXT;
}

/* Our errno for what EGL said last in this thread. */
static int egl_errno(void)
{
	switch (eglGetError()) {
	case EGL_NOT_INITIALIZED:
	case EGL_BAD_DISPLAY:
		return -ENODEV;
	case EGL_BAD_MATCH:
	case EGL_BAD_PARAMETER:
	case EGL_BAD_ATTRIBUTE:
		return -EINVAL;
	case EGL_BAD_ALLOC:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static int native_fence_create(struct display *d, const char *name, int *ret_fd)
{
	static const EGLint attribs[] = { EGL_SYNC_NATIVE_FENCE_FD_ANDROID,
					  EGL_NO_NATIVE_FENCE_FD_ANDROID, EGL_NONE };
	EGLSyncKHR sync = d->create_sync(d->dpy, EGL_SYNC_NATIVE_FENCE_ANDROID, attribs);
	int kfd, r;

	if (sync == EGL_NO_SYNC_KHR)
		return egl_errno();
	/* The driver makes the sync_file when the fence reaches it: at the flush. */
	glFlush();
	kfd = d->dup_native_fence_fd(d->dpy, sync);
	r = kfd < 0 ? egl_errno() : 0;
	d->destroy_sync(d->dpy, sync);
	if (r < 0)
		return r;
	r = fl_fence_fd_import(kfd, name, ret_fd);
	close(kfd);
	/* The driver's fd must be a sync_file; anything else is the driver's fault. */
	return r == -EINVAL ? -EIO : r;
}

/*
 * Fails everything in @list with @status and closes the timeline they are
 * points of (-ENOENT: its death alone fails them).
 */
static void fail_pending(struct display *d, struct entry *list, int timeline_fd, int status)
{
	while (list) {
		struct entry *e = list;

		list = e->next;
		d->destroy_sync(d->dpy, e->sync);
		free(e);
	}
	if (timeline_fd < 0)
		return;
	if (status != -ENOENT)
		fl_timeline_fd_fail_pending(timeline_fd, status);
	/* The last handle: its pending points fail before this returns. */
	fl_timeline_fd_close(timeline_fd);
}

static void *waiter_main(void *arg)
{
	struct display *d = arg;

	pthread_setname_np(pthread_self(), "fl-egl-waiter");
	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct entry *e;
		EGLint r;
		int tl;

		while (!d->head && !d->stop)
			pthread_cond_wait(&d->cond, &d->lock);
		if (d->stop)
			break;
		e = d->head;
		pthread_mutex_unlock(&d->lock);
		/* A slice, not forever: a release must not wait on the GPU. */
		r = d->client_wait_sync(d->dpy, e->sync, 0, WAIT_SLICE_NS);
		pthread_mutex_lock(&d->lock);
		if (r == EGL_TIMEOUT_EXPIRED_KHR)
			continue;
		if (r == EGL_CONDITION_SATISFIED_KHR) {
			d->head = e->next;
			if (!d->head)
				d->tail = &d->head;
			tl = d->timeline_fd;
			pthread_mutex_unlock(&d->lock);
			d->destroy_sync(d->dpy, e->sync);
			free(e);
			fl_timeline_fd_inc(tl, 1);
			pthread_mutex_lock(&d->lock);
			continue;
		}
		/*
		 * The display is gone (terminated) or the sync with it: no sync of
		 * the queue will ever say it signalled, so fail them all, saying
		 * why (-ENODEV). The next fence starts a new timeline.
		 */
		struct entry *list = d->head;

		tl = d->timeline_fd;
		d->head = NULL;
		d->tail = &d->head;
		d->timeline_fd = -1;
		d->made = 0;
		pthread_mutex_unlock(&d->lock);
		fail_pending(d, list, tl, -ENODEV);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static int khr_fence_create(struct display *d, const char *name, int *ret_fd)
{
	struct entry *e = malloc(sizeof(*e));
	int r = 0;

	if (!e)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	if (d->timeline_fd < 0) {
		r = fl_timeline_fd_create("egl", 0, &d->timeline_fd);
		if (r < 0)
			goto out;
		d->made = 0;
	}
	if (!d->waiter_started) {
		r = -pthread_create(&d->waiter, NULL, waiter_main, d);
		if (r < 0)
			goto out;
		d->waiter_started = true;
	}
	e->sync = d->create_sync(d->dpy, EGL_SYNC_FENCE_KHR, NULL);
	if (e->sync == EGL_NO_SYNC_KHR) {
		r = egl_errno();
		goto out;
	}
	/* Unflushed, the fence might never reach the GPU: the waiter cannot flush. */
	glFlush();
	r = fl_fence_fd_create(d->timeline_fd, d->made + 1, name, ret_fd);
	if (r < 0) {
		d->destroy_sync(d->dpy, e->sync);
		goto out;
	}
	d->made++;
	e->next = NULL;
	*d->tail = e;
	d->tail = &e->next;
	pthread_cond_signal(&d->cond);
	e = NULL;
out:
	pthread_mutex_unlock(&d->lock);
	free(e);
	return r;
}

FL_EXPORT int fl_egl_fence_create(EGLDisplay dpy, const char *name, int *ret_fd)
{
	int r = 0;
	struct display *d;

	if (!ret_fd)
		return -EINVAL;
	d = display_with_path(dpy, &r);
	if (!d)
		return r;
	if (!context_current_on(dpy))
		return -EINVAL;
	if (!name)
		name = "egl";
	if (d->path == FL_EGL_PATH_NATIVE)
		return native_fence_create(d, name, ret_fd);
	return khr_fence_create(d, name, ret_fd);
}

/* 1 if @fd is a kernel sync_file (its status in *@status), else 0. */
static int is_sync_file(int fd, int *status)
{
	struct sync_file_info info;

	memset(&info, 0, sizeof(info));
	if (ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0)
		return 0;
	*status = info.status;
	return 1;
}

static int native_wait(struct display *d, int sync_file)
{
	EGLint attribs[] = { EGL_SYNC_NATIVE_FENCE_FD_ANDROID, -1, EGL_NONE };
	EGLSyncKHR sync;
	int r = 0;

	if (!context_current_on(d->dpy))
		return -EINVAL;
	/* EGL owns the fd it is given once the sync exists. */
	attribs[1] = fcntl(sync_file, F_DUPFD_CLOEXEC, 0);
	if (attribs[1] < 0)
		return -errno;
	sync = d->create_sync(d->dpy, EGL_SYNC_NATIVE_FENCE_ANDROID, attribs);
	if (sync == EGL_NO_SYNC_KHR) {
		r = egl_errno();
		close(attribs[1]);
		return r == -EINVAL ? -EIO : r;
	}
	if (!d->wait_sync(d->dpy, sync, 0))
		r = egl_errno();
	d->destroy_sync(d->dpy, sync);
	return r;
}

/* Waits for a kernel sync_file on the CPU: its status once complete. */
static int sync_file_cpu_wait(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int status = 0;

	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	is_sync_file(fd, &status);
	return status;
}

FL_EXPORT int fl_egl_wait(EGLDisplay dpy, int fence_fd)
{
	int r = 0, status;
	struct display *d;

	if (fence_fd < 0 || fcntl(fence_fd, F_GETFD) < 0)
		return -EBADF;
	d = display_with_path(dpy, &r);
	if (!d)
		return r;
	if (is_sync_file(fence_fd, &status)) {
		if (status != 0)
			return status > 0 ? 0 : status;
		if (d->path == FL_EGL_PATH_NATIVE)
			return native_wait(d, fence_fd);
		status = sync_file_cpu_wait(fence_fd);
		return status > 0 ? 0 : status < 0 ? status : -EIO;
	}
	/* A fenceline fence: no EGL sync can stand for it, so the CPU waits. */
	status = fl_fence_fd_get_status(fence_fd);
	if (status == -ENOTTY)
		return -EINVAL;
	if (status == 0)
		status = fl_fence_fd_wait(fence_fd, -1);
	return status > 0 ? 0 : status;
}

FL_EXPORT void fl_egl_display_release(EGLDisplay dpy)
{
	struct display *d, **pp;
	struct entry *list;

	pthread_mutex_lock(&displays_lock);
	for (pp = &displays; *pp && (*pp)->dpy != dpy; pp = &(*pp)->next)
		;
	d = *pp;
	if (d)
		*pp = d->next;
	pthread_mutex_unlock(&displays_lock);
	if (!d)
		return;
	if (d->waiter_started) {
		pthread_mutex_lock(&d->lock);
		d->stop = true;
		pthread_cond_signal(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->waiter, NULL);
	}
	/* What the GPU has finished signals; a terminated display fails at once. */
	while (d->head &&
	       d->client_wait_sync(d->dpy, d->head->sync, 0, 0) == EGL_CONDITION_SATISFIED_KHR) {
		struct entry *e = d->head;

		d->head = e->next;
		d->destroy_sync(d->dpy, e->sync);
		free(e);
		fl_timeline_fd_inc(d->timeline_fd, 1);
	}
	list = d->head;
	fail_pending(d, list, d->timeline_fd, -ENOENT);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

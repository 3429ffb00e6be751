/* SPDX-License-Identifier: MIT */
/**
 * DOC: egl - GPU fences: EGL/GL sync objects as fenceline fences
 *
 * Two directions between a GL context and fenceline:
 *
 * - fl_egl_fence_create(): after GL commands have been issued, a fenceline
 *   fence fd that signals when the GPU has finished them (a producer hands
 *   it on as its acquire fence);
 * - fl_egl_wait(): GL commands issued after the call execute only once a
 *   fenceline fence has completed (a producer honouring a release fence).
 *
 * Each display gets one of two paths, chosen at its first call and kept
 * (fl_egl_fence_path() says which):
 *
 * - %FL_EGL_PATH_NATIVE where the display offers EGL_ANDROID_native_fence_sync:
 *   the driver gives a kernel sync_file (eglDupNativeFenceFDANDROID()),
 *   imported with fl_fence_fd_import(); no thread of ours. A kernel
 *   sync_file passed to fl_egl_wait() becomes an
 *   EGL_SYNC_NATIVE_FENCE_ANDROID sync that the GPU waits on
 *   (eglWaitSyncKHR(), no CPU wait).
 * - %FL_EGL_PATH_KHR where it offers only EGL_KHR_fence_sync: each fence
 *   is a point on a timeline of the display's (made with
 *   fl_timeline_fd_create(), in the default context's mode), and one
 *   waiter thread per display (named "fl-egl-waiter") waits for the sync
 *   objects in creation order with eglClientWaitSyncKHR() and signals the
 *   timeline. Fences of one display signal in the order they were made,
 *   whichever context made them.
 *
 * A fenceline fence that is not a kernel sync_file (every fenceline fence
 * fd, on either path) is waited for on the CPU by fl_egl_wait(), in the
 * calling thread: EGL has no way for the GPU to wait on it.
 *
 * FENCELINE_EGL_PATH (docs/env-vars.md) overrides the choice for tests:
 * "native", "khr" or "none" (as if the display had neither extension).
 *
 * Threads and contexts: the calls may be made from any thread.
 * fl_egl_fence_create() needs a context of @dpy current in the calling
 * thread (its commands are the ones fenced, and it flushes them);
 * fl_egl_wait() needs one for a GPU wait (a sync_file on the native path),
 * and orders the commands of the calling thread's current context. The
 * waiter thread makes no context current: it only waits on sync objects
 * and destroys them, which EGL allows from any thread.
 *
 * Teardown: fl_egl_display_release() before eglTerminate() stops the
 * display's waiter and completes or fails its pending fences. A display
 * terminated without it fails the fences still pending in its waiter with
 * -ENODEV once the waiter sees the display gone; none stays pending forever.
 *
 * Errors follow fenceline's (include/fenceline/fenceline.h): 0 or more on
 * success, a negative errno on failure.
 *
 * Link with libfenceline-egl (pkg-config fenceline-egl), which links
 * libEGL and libGLESv2; libfenceline itself does not.
 */
#ifndef FENCELINE_EGL_H
#define FENCELINE_EGL_H

#include <EGL/egl.h>

#include <fenceline/export.h>

FL_BEGIN_DECLS

/**
 * enum fl_egl_path - how a display's fences are made
 * @FL_EGL_PATH_NATIVE: EGL_ANDROID_native_fence_sync and the sync_file driver
 * @FL_EGL_PATH_KHR: EGL_KHR_fence_sync and a waiter thread that signals a
 *	timeline
 */
enum fl_egl_path {
	FL_EGL_PATH_NATIVE = 1,
	FL_EGL_PATH_KHR = 2,
};

/**
 * fl_egl_fence_path() - which path a display's fences take
 * @dpy: an initialized EGL display
 *
 * Chooses the path at the first call for @dpy (this or any other
 * fl_egl_* call) from the display's extensions and FENCELINE_EGL_PATH, and
 * keeps it until fl_egl_display_release().
 * Return: %FL_EGL_PATH_NATIVE or %FL_EGL_PATH_KHR; -EINVAL for
 * EGL_NO_DISPLAY; -ENODEV if @dpy is not an initialized display;
 * -EOPNOTSUPP if it offers neither EGL_KHR_fence_sync nor
 * EGL_ANDROID_native_fence_sync (or FENCELINE_EGL_PATH asks for one it
 * lacks, or for "none"); -ENOMEM.
 */
FL_EXPORT int fl_egl_fence_path(EGLDisplay dpy);

/**
 * fl_egl_fence_path_name() - a path's name, for logs
 * @path: a value of &enum fl_egl_path
 * Return: "native", "khr", or "none" for anything else (a static string).
 */
FL_EXPORT const char *fl_egl_fence_path_name(int path);

/**
 * fl_egl_fence_create() - a fence fd for the GL commands issued so far
 * @dpy: the display of the context current in the calling thread
 * @name: the fence's name, truncated to 31 bytes; NULL gives "egl"
 * @ret_fd: on success, a new O_CLOEXEC fenceline fence fd, owned by the
 *	caller (close() it)
 *
 * Inserts a fence sync object into the current context's command stream
 * and flushes it (glFlush()), so the fence signals without any further
 * call from this thread: the fd completes with status 1 once the GPU has
 * finished every command the context had issued before this call. On the
 * native path the fence is an import of the driver's kernel sync_file; on
 * the KHR path a point on the display's timeline, signalled by its waiter.
 * Return: 0; -EINVAL (EGL_NO_DISPLAY, NULL @ret_fd, or no context of @dpy
 * current in the calling thread); -ENODEV (@dpy not initialized, or
 * terminated); -EOPNOTSUPP (see fl_egl_fence_path()); -EIO (the driver
 * made no sync object or no fd); -ENOMEM, -EMFILE, -ENFILE; the daemon
 * errors of <fenceline/shared.h> in daemon mode.
 */
FL_EXPORT int fl_egl_fence_create(EGLDisplay dpy, const char *name, int *ret_fd);

/**
 * fl_egl_wait() - make later GL commands wait for a fence
 * @dpy: an initialized EGL display
 * @fence_fd: a fenceline fence fd or a kernel sync_file (borrowed: never
 *	closed, and EGL gets a copy)
 *
 * On the native path a kernel sync_file becomes a native fence sync that
 * the GPU waits on (eglWaitSyncKHR()): the call returns at once and the
 * context current in the calling thread (one of @dpy's, which this then
 * needs) executes its later commands only after the fence. Any other
 * fence (a fenceline fence fd on either path, a sync_file on the KHR
 * path) is waited for here, on the CPU, so that the calling thread issues
 * its later commands only after the fence has completed.
 * Return: 0 when the GPU waits or the fence signalled; the fence's own
 * negative error if it failed (later commands are not held back then:
 * the caller decides); -EBADF (@fence_fd not open); -EINVAL
 * (EGL_NO_DISPLAY, @fence_fd neither a fence fd nor a sync_file, or a GPU
 * wait without a context of @dpy current); -ENODEV; -EOPNOTSUPP (see
 * fl_egl_fence_path()); -EIO (the driver refused the sync_file);
 * -EMFILE, -ENFILE.
 */
FL_EXPORT int fl_egl_wait(EGLDisplay dpy, int fence_fd);

/**
 * fl_egl_display_release() - forget a display: stop its waiter
 * @dpy: a display passed to an fl_egl_* call before (may be terminated)
 *
 * Call it before eglTerminate() (or after: then every fence still pending
 * fails). Joins the display's waiter, which finishes its current wait of
 * at most 50 ms; signals the pending fences whose GPU work is done, and
 * fails the rest with -ENOENT (their timeline dies). Never blocks on the
 * GPU. The next fl_egl_* call on @dpy starts afresh. Does nothing for a
 * display this library has not seen.
 */
FL_EXPORT void fl_egl_display_release(EGLDisplay dpy);

FL_END_DECLS

#endif /* FENCELINE_EGL_H */

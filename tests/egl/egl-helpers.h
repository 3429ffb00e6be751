/* SPDX-License-Identifier: MIT */
/*
 * The GL side of the egl tests: a GLES2 context and a pbuffer on Mesa's
 * surfaceless platform (EGL_MESA_platform_surfaceless: no X, no /dev/dri),
 * heavy draws, pixels, and raw EGL fences to compare with.
 */
#ifndef FL_TESTS_EGL_HELPERS_H
#define FL_TESTS_EGL_HELPERS_H

#include <stdint.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>

/* The pbuffer's width and height. */
#define FL_TEST_GL_SIZE 256

struct gl {
	EGLDisplay dpy;
	EGLContext ctx;
	EGLSurface surf;
	GLuint prog;
	GLint color_loc;
	PFNEGLCREATESYNCKHRPROC create_sync;
	PFNEGLCLIENTWAITSYNCKHRPROC client_wait_sync;
	PFNEGLDESTROYSYNCKHRPROC destroy_sync;
};

/* How many glFlush() calls this process made, the library's included. */
extern _Atomic int fl_test_gl_flushes;

/* Makes @g current in this thread, or skips the test where EGL cannot. */
void fl_test_gl_open(struct gl *g);
/* Releases the display (fl_egl_display_release()) and terminates it. */
void fl_test_gl_close(struct gl *g);
/* A clear and @draws full-screen heavy draws in colour (r, g, b). */
void fl_test_gl_draw(struct gl *g, int draws, float r, float gr, float b);
/* The pixel at (x, y) of the current surface as 0xRRGGBBAA. */
uint32_t fl_test_gl_pixel(int x, int y);
/* A raw EGL fence sync of the work so far (flushed), owned by the caller. */
EGLSyncKHR fl_test_gl_raw_fence(struct gl *g);
int fl_test_gl_raw_signalled(struct gl *g, EGLSyncKHR s);
/* Closes @g and skips the test unless its display takes @path. */
void fl_test_gl_need_path(struct gl *g, int path);
/*
 * Draws, fences with fl_egl_fence_create() right after a raw fence, and
 * checks that ours signals, never ahead of the raw one, with the pixels there.
 */
void fl_test_gl_fence_covers_the_work(struct gl *g);

#endif /* FL_TESTS_EGL_HELPERS_H */

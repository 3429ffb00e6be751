/* SPDX-License-Identifier: MIT */
/*
 * The app's GPU (docs/pipeline.md, "The app"): it draws pattern_app_rects() with OpenGL ES on
 * Mesa's surfaceless EGL (llvmpipe) into a pbuffer, fences that work with <fenceline/egl.h>,
 * and copies the pixels into the queue's buffer once that fence has signalled: llvmpipe cannot
 * render into our memfds. Built where libfenceline-egl is (PIPELINE_HAVE_GL).
 */
#ifndef PIPELINE_APP_GL_H
#define PIPELINE_APP_GL_H

#include <stddef.h>
#include <stdint.h>

struct app_gl;

/*
 * A GL context for @w x @h frames. Return: 0; -EOPNOTSUPP with the reason in @why (no EGL in
 * this build, no surfaceless platform, no fence path); -ENOMEM.
 */
int app_gl_open(uint32_t w, uint32_t h, struct app_gl **ret, char *why, size_t why_size);

/* What runs it: "OpenGL ES on RENDERER, fences by the khr|native path". */
const char *app_gl_describe(const struct app_gl *g);

/*
 * Frame @frame: draw it, fence it (fl_egl_fence_create()), wait for that fence, and read the
 * pixels back into @px (premultiplied ARGB8888, @pitch bytes a line). Return: 0 or -errno.
 */
int app_gl_draw(struct app_gl *g, uint32_t frame, uint32_t *px, uint32_t pitch);

/* NULL is fine. */
void app_gl_close(struct app_gl *g);

#endif

/* SPDX-License-Identifier: MIT */
/* The app's GPU (app-gl.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app-gl.h"

#ifdef PIPELINE_HAVE_GL
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>

#include <fenceline/egl.h>
#include <fenceline/fenceline.h>

#include "pattern.h"

struct app_gl {
	EGLDisplay dpy;
	EGLContext ctx;
	EGLSurface surf;
	uint32_t w, h;
	uint8_t *rgba; /* glReadPixels()'s bytes */
	uint32_t *strip; /* the strip's cells, drawn small on the CPU for their values */
	char what[160];
};

int app_gl_open(uint32_t w, uint32_t h, struct app_gl **ret, char *why, size_t why_size)
{
	static const EGLint cfg_attribs[] = { EGL_SURFACE_TYPE,
					      EGL_PBUFFER_BIT,
					      EGL_RENDERABLE_TYPE,
					      EGL_OPENGL_ES2_BIT,
					      EGL_RED_SIZE,
					      8,
					      EGL_GREEN_SIZE,
					      8,
					      EGL_BLUE_SIZE,
					      8,
					      EGL_ALPHA_SIZE,
					      8,
					      EGL_NONE };
	static const EGLint ctx_attribs[] = { EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE };
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
	PFNEGLGETPLATFORMDISPLAYEXTPROC get_display;
	EGLint pb_attribs[] = { EGL_WIDTH, (EGLint)w, EGL_HEIGHT, (EGLint)h, EGL_NONE };
	struct app_gl *g;
	EGLConfig cfg;
	EGLint n = 0;
	int path;

	if (!client || !strstr(client, "EGL_MESA_platform_surfaceless")) {
		snprintf(why, why_size, "EGL has no surfaceless platform");
		return -EOPNOTSUPP;
	}
	get_display =
		(PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->w = w;
	g->h = h;
	g->dpy = get_display ? get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL)
			     : EGL_NO_DISPLAY;
	if (g->dpy == EGL_NO_DISPLAY || !eglInitialize(g->dpy, NULL, NULL)) {
		snprintf(why, why_size, "the surfaceless EGL display does not initialize");
		g->dpy = EGL_NO_DISPLAY;
		goto fail;
	}
	if (!eglChooseConfig(g->dpy, cfg_attribs, &cfg, 1, &n) || n < 1 ||
	    !eglBindAPI(EGL_OPENGL_ES_API)) {
		snprintf(why, why_size, "no RGBA8 GLES2 pbuffer config");
		goto fail;
	}
	g->ctx = eglCreateContext(g->dpy, cfg, EGL_NO_CONTEXT, ctx_attribs);
	g->surf = eglCreatePbufferSurface(g->dpy, cfg, pb_attribs);
	if (g->ctx == EGL_NO_CONTEXT || g->surf == EGL_NO_SURFACE ||
	    !eglMakeCurrent(g->dpy, g->surf, g->surf, g->ctx)) {
		snprintf(why, why_size, "no GLES2 context (0x%x)", eglGetError());
		goto fail;
	}
	path = fl_egl_fence_path(g->dpy);
	if (path < 0) {
		snprintf(why, why_size, "no GPU fences: %s", strerror(-path));
		goto fail;
	}
	g->rgba = malloc((size_t)w * h * 4);
	g->strip = malloc((size_t)PATTERN_CELLS * PATTERN_CELL * PATTERN_CELL * 4);
	if (!g->rgba || !g->strip) {
		app_gl_close(g);
		return -ENOMEM;
	}
	snprintf(g->what, sizeof(g->what), "OpenGL ES on %s, fences by the %s path",
		 (const char *)glGetString(GL_RENDERER), fl_egl_fence_path_name(path));
	*ret = g;
	return 0;
fail:
	app_gl_close(g);
	return -EOPNOTSUPP;
}

const char *app_gl_describe(const struct app_gl *g)
{
	return g->what;
}

/* A premultiplied ARGB fill of a rect (top-down coordinates: the read-back is in GL's rows). */
static void fill(uint32_t x, uint32_t y, uint32_t w, uint32_t h, uint32_t argb)
{
	glScissor((GLint)x, (GLint)y, (GLsizei)w, (GLsizei)h);
	glClearColor((float)(argb >> 16 & 0xff) / 255.0f, (float)(argb >> 8 & 0xff) / 255.0f,
		     (float)(argb & 0xff) / 255.0f, (float)(argb >> 24) / 255.0f);
	glClear(GL_COLOR_BUFFER_BIT);
}

int app_gl_draw(struct app_gl *g, uint32_t frame, uint32_t *px, uint32_t pitch)
{
	struct pattern_rect r[PATTERN_APP_RECTS];
	size_t n = pattern_app_rects(frame, g->w, g->h, r);
	uint32_t sw = PATTERN_CELLS * PATTERN_CELL;
	char name[32];
	int fence, st;

	/* Transparent black, then the cards (they do not overlap: no blending needed). */
	glDisable(GL_SCISSOR_TEST);
	glClearColor(0, 0, 0, 0);
	glClear(GL_COLOR_BUFFER_BIT);
	glEnable(GL_SCISSOR_TEST);
	for (size_t k = 0; k < n; k++)
		if (r[k].w && r[k].h)
			fill((uint32_t)r[k].x, (uint32_t)r[k].y, r[k].w, r[k].h, r[k].argb);
	/* The frame-number strip over them: its cells' values from the pattern itself. */
	pattern_app_argb(frame, sw, PATTERN_CELL, g->strip, sw * 4);
	for (uint32_t c = 0; c < PATTERN_CELLS && (c + 1) * PATTERN_CELL <= g->w; c++)
		fill(c * PATTERN_CELL, 0, PATTERN_CELL, PATTERN_CELL,
		     g->strip[(PATTERN_CELL / 2) * sw + c * PATTERN_CELL + PATTERN_CELL / 2]);
	/* The GPU's fence gates the read-back: only finished pixels reach the buffer. */
	snprintf(name, sizeof(name), "app-gl-%u", frame);
	st = fl_egl_fence_create(g->dpy, name, &fence);
	if (st < 0)
		return st;
	st = fl_fence_fd_wait(fence, 10000);
	close(fence);
	if (st < 0)
		return st;
	glReadPixels(0, 0, (GLsizei)g->w, (GLsizei)g->h, GL_RGBA, GL_UNSIGNED_BYTE, g->rgba);
	if (glGetError() != GL_NO_ERROR)
		return -EIO;
	for (uint32_t y = 0; y < g->h; y++) {
		const uint8_t *s = g->rgba + (size_t)y * g->w * 4;
		uint32_t *d = (uint32_t *)((uint8_t *)px + (size_t)y * pitch);

		for (uint32_t x = 0; x < g->w; x++, s += 4)
			d[x] = (uint32_t)s[3] << 24 | (uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 |
			       s[2];
	}
	return 0;
}

void app_gl_close(struct app_gl *g)
{
	if (!g)
		return;
	if (g->dpy != EGL_NO_DISPLAY) {
		fl_egl_display_release(g->dpy);
		eglMakeCurrent(g->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
		if (g->surf != EGL_NO_SURFACE)
			eglDestroySurface(g->dpy, g->surf);
		if (g->ctx != EGL_NO_CONTEXT)
			eglDestroyContext(g->dpy, g->ctx);
		eglTerminate(g->dpy);
		eglReleaseThread();
	}
	free(g->rgba);
	free(g->strip);
	free(g);
}

#else /* !PIPELINE_HAVE_GL */

int app_gl_open(uint32_t w, uint32_t h, struct app_gl **ret, char *why, size_t why_size)
{
	snprintf(why, why_size, "this build has no libfenceline-egl (EGL and GLES not found)");
	return -EOPNOTSUPP;
}

const char *app_gl_describe(const struct app_gl *g)
{
	return "";
}

int app_gl_draw(struct app_gl *g, uint32_t frame, uint32_t *px, uint32_t pitch)
{
	return -EOPNOTSUPP;
}

void app_gl_close(struct app_gl *g)
{
}

#endif

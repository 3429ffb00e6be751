/* SPDX-License-Identifier: MIT */
/*
 * fl-bench-egl: what a GPU fence costs as a fenceline fence
 * (<fenceline/egl.h>, docs/benchmarks.md section `egl`). A program of its
 * own because it links libfenceline-egl, which is built only where EGL is.
 *
 * On Mesa's surfaceless platform (llvmpipe), the same GL work is fenced two
 * ways: a bare EGL fence sync waited on with eglClientWaitSyncKHR() (the
 * baseline), and fl_egl_fence_create() waited on as a fence fd with
 * fl_fence_fd_wait(), once with a trivial clear (the overhead shows) and
 * once with a full-screen draw (the work shows). Each pair is printed with
 * its ratio.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>

#include <fenceline/egl.h>
#include <fenceline/fenceline.h>

#include "bench.h"

static EGLDisplay dpy;
static PFNEGLCREATESYNCKHRPROC create_sync;
static PFNEGLCLIENTWAITSYNCKHRPROC client_wait_sync;
static PFNEGLDESTROYSYNCKHRPROC destroy_sync;

/*
 * The work fenced: a clear of a 16x16 corner (next to nothing: the fence's
 * own cost shows), or a full clear and a full-screen draw of the 1024x1024
 * pbuffer.
 */
static int heavy;

static void work(void)
{
	if (heavy)
		glDisable(GL_SCISSOR_TEST);
	else
		glEnable(GL_SCISSOR_TEST);
	glScissor(0, 0, 16, 16);
	glClearColor(0.2f, 0.4f, 0.6f, 1);
	glClear(GL_COLOR_BUFFER_BIT);
	if (heavy)
		glDrawArrays(GL_TRIANGLES, 0, 3);
}

static double b_bare(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		EGLSyncKHR s;

		work();
		s = create_sync(dpy, EGL_SYNC_FENCE_KHR, NULL);
		glFlush();
		if (client_wait_sync(dpy, s, 0, EGL_FOREVER_KHR) != EGL_CONDITION_SATISFIED_KHR)
			fl__bench_die("eglClientWaitSyncKHR", -EIO);
		destroy_sync(dpy, s);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_fenceline(void *arg, long ops)
{
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++) {
		int fd, r;

		work();
		r = fl_egl_fence_create(dpy, "bench", &fd);
		if (r < 0)
			fl__bench_die("fl_egl_fence_create", r);
		r = fl_fence_fd_wait(fd, -1);
		if (r < 0)
			fl__bench_die("fl_fence_fd_wait", r);
		close(fd);
	}
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

/*
 * The two ways take turns batch by batch (a warm-up of each first), so that
 * a load that comes and goes on the machine falls on both: each figure is
 * the median of its batches.
 */
static void pair(const char *work_name, int is_heavy, long ops)
{
	double bare[FL_BENCH_REPS], fenced[FL_BENCH_REPS];
	char name[64], name2[64], ratio[64];

	heavy = is_heavy;
	b_bare(NULL, ops / 4 + 1);
	b_fenceline(NULL, ops / 4 + 1);
	for (int i = 0; i < FL_BENCH_REPS; i++) {
		bare[i] = b_bare(NULL, ops);
		fenced[i] = b_fenceline(NULL, ops);
	}
	snprintf(name, sizeof(name), "egl_%s_bare_eglclientwaitsync", work_name);
	snprintf(name2, sizeof(name2), "egl_%s_fenceline_fence_fd", work_name);
	snprintf(ratio, sizeof(ratio), "egl_%s_ratio", work_name);
	fl__bench_out(name, fl__bench_median(bare, FL_BENCH_REPS), "ns");
	fl__bench_out(name2, fl__bench_median(fenced, FL_BENCH_REPS), "ns");
	fl__bench_ratio(ratio, name2, name);
}

static const char *vs_src = "attribute vec2 pos;\n"
			    "void main() { gl_Position = vec4(pos, 0.0, 1.0); }\n";
static const char *fs_src =
	"precision mediump float;\n"
	"void main() { gl_FragColor = vec4(gl_FragCoord.xy * 0.001, 0.5, 1.0); }\n";

static int gl_open(void)
{
	static const EGLint cfg_attribs[] = { EGL_SURFACE_TYPE, EGL_PBUFFER_BIT,
					      EGL_RENDERABLE_TYPE, EGL_OPENGL_ES2_BIT, EGL_NONE };
	static const EGLint ctx_attribs[] = { EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE };
	static const EGLint pb_attribs[] = { EGL_WIDTH, 1024, EGL_HEIGHT, 1024, EGL_NONE };
	static const GLfloat tri[] = { -1, -1, 3, -1, -1, 3 };
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
	PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display;
	EGLContext ctx;
	EGLSurface surf;
	EGLConfig cfg;
	EGLint n = 0;
	GLuint prog;

	if (!client || !strstr(client, "EGL_MESA_platform_surfaceless"))
		return -ENODEV;
	get_platform_display =
		(PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
	dpy = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
	if (dpy == EGL_NO_DISPLAY || !eglInitialize(dpy, NULL, NULL))
		return -ENODEV;
	if (!eglChooseConfig(dpy, cfg_attribs, &cfg, 1, &n) || n < 1 ||
	    !eglBindAPI(EGL_OPENGL_ES_API))
		return -ENODEV;
	ctx = eglCreateContext(dpy, cfg, EGL_NO_CONTEXT, ctx_attribs);
	surf = eglCreatePbufferSurface(dpy, cfg, pb_attribs);
	if (ctx == EGL_NO_CONTEXT || surf == EGL_NO_SURFACE ||
	    !eglMakeCurrent(dpy, surf, surf, ctx))
		return -ENODEV;
	create_sync = (PFNEGLCREATESYNCKHRPROC)eglGetProcAddress("eglCreateSyncKHR");
	client_wait_sync = (PFNEGLCLIENTWAITSYNCKHRPROC)eglGetProcAddress("eglClientWaitSyncKHR");
	destroy_sync = (PFNEGLDESTROYSYNCKHRPROC)eglGetProcAddress("eglDestroySyncKHR");

	prog = glCreateProgram();
	for (int i = 0; i < 2; i++) {
		GLuint s = glCreateShader(i ? GL_FRAGMENT_SHADER : GL_VERTEX_SHADER);

		glShaderSource(s, 1, i ? &fs_src : &vs_src, NULL);
		glCompileShader(s);
		glAttachShader(prog, s);
		glDeleteShader(s);
	}
	glBindAttribLocation(prog, 0, "pos");
	glLinkProgram(prog);
	glUseProgram(prog);
	glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, tri);
	glEnableVertexAttribArray(0);
	glViewport(0, 0, 1024, 1024);
	return 0;
}

int main(int argc, char **argv)
{
	int path;

	if (argc > 1 && strcmp(argv[1], "-q") == 0)
		fl__bench_quick = 1;
	if (gl_open() < 0) {
		fl__bench_comment("egl: no surfaceless EGL display with a GLES2 pbuffer; skipped");
		return 0;
	}
	path = fl_egl_fence_path(dpy);
	if (path < 0) {
		fl__bench_comment("egl: the display has no fence sync (%d); skipped", path);
		return 0;
	}
	fl__bench_comment("egl: %s, %s, path %s, mode %s", eglQueryString(dpy, EGL_VERSION),
			  (const char *)glGetString(GL_RENDERER), fl_egl_fence_path_name(path),
			  fl_mode_get() == FL_MODE_DAEMON ? "daemon" : "in-process");
	pair("clear", 0, fl__bench_iters(1000, 40));
	pair("draw", 1, fl__bench_iters(100, 4));
	fl_egl_display_release(dpy);
	eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
	eglTerminate(dpy);
	return 0;
}

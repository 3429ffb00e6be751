/* SPDX-License-Identifier: MIT */
/*
 * The GL side of the egl tests (egl-helpers.h). The work is made heavy
 * enough (a fragment shader looping per pixel) that the GPU is still busy
 * when the fences are looked at, so an early signal shows: a raw EGL fence
 * made just before ours covers less work, and must have signalled whenever
 * ours has.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/egl.h>
#include <fenceline/fenceline.h>

#include "egl-helpers.h"
#include "runner.h"

#define SIZE FL_TEST_GL_SIZE
static const char *vs_src = "attribute vec2 pos;\n"
			    "void main() { gl_Position = vec4(pos, 0.0, 1.0); }\n";
/*
 * The loop is the weight; min(c, 0.0) is 0 for every pixel, which the
 * compiler cannot know, so it keeps the loop and the colour stays exact.
 */
/*
 * The loop is the weight; min(c, 0.0) is 0 for every pixel, which the
 * compiler cannot know, so it keeps the loop and the colour stays exact.
 */
#define FS_SRC(rounds)                                                          \
	"precision highp float;\n"                                              \
	"uniform vec4 color;\n"                                                 \
	"void main() {\n"                                                       \
	"  float c = gl_FragCoord.x * 0.001;\n"                                 \
	"  for (int i = 0; i < " #rounds "; i++) c = fract(c * 1.37 + 0.11);\n" \
	"  gl_FragColor = color + vec4(min(c, 0.0));\n"                         \
	"}\n"

_Atomic int fl_test_gl_flushes;

/* Counted, for the library's calls too: the executable's definition comes first. */
void glFlush(void)
{
	static void (*real)(void);

	if (!real)
		real = (void (*)(void))dlsym(RTLD_NEXT, "glFlush");
	fl_test_gl_flushes++;
	real();
}

/*
 * Keeps Mesa's DRI driver (and so its dependencies) loaded past
 * eglTerminate(): valgrind can then name the driver in the stacks of its
 * leaks, which tests/egl/mesa.supp suppresses by that name.
 */
static int pin_dri(struct dl_phdr_info *info, size_t size, void *data)
{
	if (info->dlpi_name && strstr(info->dlpi_name, "_dri.so"))
		dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	return 0;
}

static GLuint compile(GLenum type, const char *src)
{
	GLuint s = glCreateShader(type);
	GLint ok = 0;

	glShaderSource(s, 1, &src, NULL);
	glCompileShader(s);
	glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
	fl_assert(ok);
	return s;
}

/* Makes @g current in this thread, or skips the test where EGL cannot. */
void fl_test_gl_open(struct gl *g)
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
	static const EGLint pb_attribs[] = { EGL_WIDTH, SIZE, EGL_HEIGHT, SIZE, EGL_NONE };
	static const GLfloat tri[] = { -1, -1, 3, -1, -1, 3 };
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
	PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display;
	EGLConfig cfg;
	EGLint n = 0;
	GLuint vs, fs;
	GLint ok = 0;

	memset(g, 0, sizeof(*g));
	if (!client || !strstr(client, "EGL_MESA_platform_surfaceless"))
		fl_test_skip("EGL has no surfaceless platform (EGL_MESA_platform_surfaceless): "
			     "install libegl-mesa0 and libgl1-mesa-dri");
	get_platform_display =
		(PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
	fl_assert(get_platform_display);
	g->dpy = get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
	if (g->dpy == EGL_NO_DISPLAY || !eglInitialize(g->dpy, NULL, NULL))
		fl_test_skip("the surfaceless EGL display does not initialize (0x%x): is "
			     "libgl1-mesa-dri (swrast/llvmpipe) installed?",
			     eglGetError());
	if (!eglChooseConfig(g->dpy, cfg_attribs, &cfg, 1, &n) || n < 1)
		fl_test_skip("no RGBA8 GLES2 pbuffer config on the surfaceless display");
	fl_assert(eglBindAPI(EGL_OPENGL_ES_API));
	g->ctx = eglCreateContext(g->dpy, cfg, EGL_NO_CONTEXT, ctx_attribs);
	fl_assert(g->ctx != EGL_NO_CONTEXT);
	g->surf = eglCreatePbufferSurface(g->dpy, cfg, pb_attribs);
	fl_assert(g->surf != EGL_NO_SURFACE);
	fl_assert(eglMakeCurrent(g->dpy, g->surf, g->surf, g->ctx));
	g->create_sync = (PFNEGLCREATESYNCKHRPROC)eglGetProcAddress("eglCreateSyncKHR");
	g->client_wait_sync =
		(PFNEGLCLIENTWAITSYNCKHRPROC)eglGetProcAddress("eglClientWaitSyncKHR");
	g->destroy_sync = (PFNEGLDESTROYSYNCKHRPROC)eglGetProcAddress("eglDestroySyncKHR");

	vs = compile(GL_VERTEX_SHADER, vs_src);
	/* Under valgrind the JIT's code runs ~50x slower: the weight is not the point there. */
	fs = compile(GL_FRAGMENT_SHADER,
		     getenv("FL_TEST_UNDER_VALGRIND") ? FS_SRC(30) : FS_SRC(3000));
	dl_iterate_phdr(pin_dri, NULL);
	g->prog = glCreateProgram();
	glAttachShader(g->prog, vs);
	glAttachShader(g->prog, fs);
	glBindAttribLocation(g->prog, 0, "pos");
	glLinkProgram(g->prog);
	glGetProgramiv(g->prog, GL_LINK_STATUS, &ok);
	fl_assert(ok);
	glDeleteShader(vs);
	glDeleteShader(fs);
	glUseProgram(g->prog);
	g->color_loc = glGetUniformLocation(g->prog, "color");
	glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, tri);
	glEnableVertexAttribArray(0);
	glViewport(0, 0, SIZE, SIZE);
}

void fl_test_gl_close(struct gl *g)
{
	fl_egl_display_release(g->dpy);
	glDeleteProgram(g->prog);
	eglMakeCurrent(g->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
	eglDestroySurface(g->dpy, g->surf);
	eglDestroyContext(g->dpy, g->ctx);
	eglTerminate(g->dpy);
	eglReleaseThread();
}

/* A clear and @draws full-screen heavy draws in colour (r, g, b). */
void fl_test_gl_draw(struct gl *g, int draws, float r, float gr, float b)
{
	glClearColor(0, 0, 0, 1);
	glClear(GL_COLOR_BUFFER_BIT);
	glUniform4f(g->color_loc, r, gr, b, 1);
	for (int i = 0; i < draws; i++)
		glDrawArrays(GL_TRIANGLES, 0, 3);
	fl_assert_int_eq(glGetError(), GL_NO_ERROR);
}

uint32_t fl_test_gl_pixel(int x, int y)
{
	uint8_t p[4];

	glReadPixels(x, y, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, p);
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A raw EGL fence sync of the work so far: the baseline the tests compare with. */
EGLSyncKHR fl_test_gl_raw_fence(struct gl *g)
{
	EGLSyncKHR s = g->create_sync(g->dpy, EGL_SYNC_FENCE_KHR, NULL);

	fl_assert(s != EGL_NO_SYNC_KHR);
	glFlush();
	return s;
}

int fl_test_gl_raw_signalled(struct gl *g, EGLSyncKHR s)
{
	return g->client_wait_sync(g->dpy, s, 0, 0) == EGL_CONDITION_SATISFIED_KHR;
}

/* Skips unless the display takes the KHR path (the one llvmpipe has). */
void fl_test_gl_need_path(struct gl *g, int path)
{
	int r = fl_egl_fence_path(g->dpy);

	if (r != path) {
		fprintf(stderr, "display path: %s (%d); extensions: %s\n",
			fl_egl_fence_path_name(r), r, eglQueryString(g->dpy, EGL_EXTENSIONS));
		fl_test_gl_close(g);
		fl_test_skip("this display does not take the %s path (it lacks %s)",
			     fl_egl_fence_path_name(path),
			     path == FL_EGL_PATH_NATIVE ? "EGL_ANDROID_native_fence_sync"
							: "EGL_KHR_fence_sync");
	}
}

/* Both paths: the fence covers the work, and pixels are there once it has signalled. */
void fl_test_gl_fence_covers_the_work(struct gl *g)
{
	struct fl_fence_info info;
	EGLSyncKHR before;
	int fd = -1, flushes;

	fl_test_gl_draw(g, 4, 0, 1, 0);
	before = fl_test_gl_raw_fence(g);
	flushes = fl_test_gl_flushes;
	fl_assert_int_eq(fl_egl_fence_create(g->dpy, "frame", &fd), 0);
	/* Unflushed, a fence may never reach the GPU (llvmpipe's does anyway). */
	fl_assert_int_ge(fl_test_gl_flushes, flushes + 1);
	fl_assert_int_eq(fl_fence_fd_wait(fd, -1), 0);
	/* Signal order: our fence came after the raw one, so it cannot be ahead of it. */
	fl_assert(fl_test_gl_raw_signalled(g, before));
	fl_assert(fl_fence_fd_get_info(fd, &info, NULL, 0) >= 0);
	fl_assert_str_eq(info.name, "frame");
	fl_assert_int_eq(fl_test_gl_pixel(SIZE / 2, SIZE / 2), 0x00ff00ff);
	g->destroy_sync(g->dpy, before);
	close(fd);
}

/* SPDX-License-Identifier: MIT */
/*
 * Section "outputs" (issue 18 item 8): what each display driver pays per
 * frame to show a 1920×1080 frame, beside a memcpy of the frame's 8.29 MB
 * in the same run. So far the terminal driver's picture
 * (src/drivers/display-terminal/term-encode.c): the frame scaled into
 * 200 × 60 cells of 24-bit half blocks, a frame that changes everywhere
 * (a moving gradient), one that changes in one 64 × 64 corner, and one
 * that does not change, with the bytes each writes to the terminal.
 * memcpy and the encoder take turns round after round, so that both see
 * the same machine. Then the window driver's (src/drivers/display-window):
 * the CPU that fl-displayd spends a frame showing a 1080p60 panel in a
 * window of an Xvfb of our own (capture, texture upload, present), over
 * what the same service spends on the same panel with the virtual driver,
 * and what Xvfb spends a frame taking the picture.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/display.h>

#include "bench.h"
#include "term-encode.h"

#define W 1920
#define H 1080

struct out_ctx {
	uint32_t *frame, *copy;
	struct fl_term_screen *screen;
	char *out;
	size_t cap;
	long bytes, frames;
	uint32_t tick;
	int mode; /* 0 everything moves, 1 a corner, 2 nothing */
};

/* The next frame: a gradient that moves a pixel a frame, everywhere or in a corner only. */
static void next_frame(struct out_ctx *c)
{
	uint32_t t = ++c->tick;

	if (c->mode == 2)
		return;
	for (uint32_t y = 0; y < (c->mode ? 64u : H); y++)
		for (uint32_t x = 0; x < (c->mode ? 64u : W); x++)
			c->frame[(size_t)y * W + x] =
				((x + t) & 0xff) << 16 | ((y + t) & 0xff) << 8 | ((x ^ y) & 0xff);
}

static double b_memcpy(void *arg, long ops)
{
	struct out_ctx *c = arg;
	uint64_t t0 = fl__bench_now_ns();

	for (long i = 0; i < ops; i++)
		memcpy(c->copy, c->frame, (size_t)W * H * 4);
	return (double)(fl__bench_now_ns() - t0) / (double)ops;
}

static double b_encode(void *arg, long ops)
{
	struct out_ctx *c = arg;
	uint64_t spent = 0;

	for (long i = 0; i < ops; i++) {
		uint64_t t0;
		long n;

		next_frame(c); /* not timed: the producer's work */
		t0 = fl__bench_now_ns();
		n = fl__term_encode(c->screen, c->frame, W, H, W * 4, c->out, c->cap);
		spent += fl__bench_now_ns() - t0;
		if (n < 0)
			fl__bench_die("fl__term_encode", (int)-n);
		c->bytes += n;
		c->frames++;
	}
	return (double)spent / (double)ops;
}

/* CPU time of every thread of @pid so far, ns (the scheduler's own count, not ticks). */
static uint64_t cpu_ns(pid_t pid)
{
	char path[64];
	uint64_t sum = 0;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		char p[300];
		unsigned long long ns;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
		f = fopen(p, "re");
		if (f && fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

/* An Xvfb of our own on a display number it picks (-displayfd): its pid, or -1 without one. */
static pid_t xvfb_start(char *display, size_t len)
{
	int p[2];
	char num[16] = "", fdarg[16];
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		dup2(p[1], 3);
		snprintf(fdarg, sizeof(fdarg), "3");
		execlp("Xvfb", "Xvfb", "-displayfd", fdarg, "-screen", "0", "1920x1080x24",
		       "-noreset", "-nolisten", "tcp", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (pid > 0 && got < (ssize_t)sizeof(num) - 1 &&
	       (n = read(p[0], num + got, sizeof(num) - 1 - (size_t)got)) > 0) {
		got += n;
		if (strchr(num, '\n'))
			break;
	}
	close(p[0]);
	if (pid > 0 && (got <= 0 || num[0] < '0' || num[0] > '9')) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return -1;
	}
	num[strcspn(num, "\n")] = '\0';
	snprintf(display, len, ":%s", num);
	return pid;
}

struct win_run {
	uint64_t service_ns, x_ns; /* CPU while the frames were shown */
	long frames; /* vsyncs seen */
	double fps;
};

/* Wait until the service at the current socket is gone (it is not our child: the library's). */
static void service_stop(pid_t pid)
{
	char path[64];

	if (pid <= 0 || kill(pid, SIGTERM) < 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 3000 && access(path, F_OK) == 0; i++) {
		FILE *f = fopen(path, "re");
		char st = 0;

		if (f && fscanf(f, "%*d (%*[^)]) %c", &st) == 1 && st == 'Z') {
			fclose(f);
			break;
		}
		if (f)
			fclose(f);
		usleep(10000);
	}
}

/*
 * A service on @dir's socket with one 1920x1080@60 panel run by @driver,
 * showing one full-screen buffer: @frames vsyncs after a warm-up, with the
 * CPU the service and Xvfb (@xvfb) spent meanwhile. Return: 0 or -errno.
 */
static int window_run(const char *dir, const char *driver, pid_t xvfb, long frames,
		      struct win_run *ret)
{
	static const char cfg_text[] = "[device bench]\ndriver = %s\n[interface screen]\n"
				       "type = HDMI\nflags = primary\nmodes = 1920x1080@60\n"
				       "current-mode = 1920x1080@60\nconnected = yes\n"
				       "[engine rgb32]\nformats = XRGB8888\ninterfaces = screen\n";
	char cfg[300], sock[300];
	struct fl_display_handle *dev = NULL, *intf = NULL;
	struct fl_display_buffer b;
	struct fl_display_post post;
	struct fl_display_event *ev;
	uint32_t id = 0, off, pitch, *px;
	uint64_t s0, x0, t0;
	pid_t svc;
	int fd = -1, r;
	FILE *f;

	snprintf(cfg, sizeof(cfg), "%s/%s.ini", dir, driver);
	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, driver);
	f = fopen(cfg, "we");
	if (!f)
		return -errno;
	fprintf(f, cfg_text, driver);
	fclose(f);
	setenv("FENCELINE_DISPLAY_CONFIG", cfg, 1);
	setenv("FENCELINE_DISPLAY_SOCKET", sock, 1);
	fl_display_disconnect();
	r = fl_display_device_open(0, &dev);
	if (r == 0)
		r = fl_display_interface_open(dev, 0, &intf);
	if (r == 0)
		r = fl_display_simple_buffer_alloc(intf, 1920, 1080, FL_FOURCC('X', 'R', '2', '4'),
						   &fd, &off, &pitch, NULL);
	if (r < 0)
		goto out;
	px = mmap(NULL, (size_t)off + (size_t)pitch * 1080, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  0);
	if (px == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	for (uint32_t y = 0; y < 1080; y++)
		for (uint32_t x = 0; x < 1920; x++)
			px[(off + (size_t)y * pitch) / 4 + x] =
				(x & 0xff) << 16 | (y & 0xff) << 8 | ((x ^ y) & 0xff);
	munmap(px, (size_t)off + (size_t)pitch * 1080);
	r = fl_display_attach(dev, 0, 0, NULL);
	if (r < 0 && r != -EALREADY)
		goto out;
	b = (struct fl_display_buffer){ .engine = 0,
					.w = 1920,
					.h = 1080,
					.format = FL_FOURCC('X', 'R', '2', '4'),
					.n_planes = 1,
					.fd = { fd },
					.offset = { off },
					.pitch = { pitch },
					.acquire_fence = -1 };
	post = (struct fl_display_post){ .intfs = &id,
					 .n_intfs = 1,
					 .bufs = &b,
					 .n_bufs = 1,
					 .fence_type = FL_DISPLAY_FENCE_NONE };
	r = fl_display_post(dev, &post, NULL, NULL);
	if (r == 0)
		r = fl_display_blank(intf, FL_DISPLAY_DPMS_ON, NULL);
	if (r == 0)
		r = fl_display_set_event(intf, FL_DISPLAY_EVENT_VSYNC, 1, NULL);
	/* A second of warm-up: the window mapped, the textures made, the caches warm. */
	for (int i = 0; r == 0 && i < 60; i++)
		if ((r = fl_display_read_event(intf, &ev)) == 0)
			free(ev);
	svc = fl__bench_display_service_pid();
	s0 = cpu_ns(svc);
	x0 = cpu_ns(xvfb);
	t0 = fl__bench_now_ns();
	for (long i = 0; r == 0 && i < frames; i++)
		if ((r = fl_display_read_event(intf, &ev)) == 0)
			free(ev);
	if (r == 0) {
		ret->service_ns = cpu_ns(svc) - s0;
		ret->x_ns = cpu_ns(xvfb) - x0;
		ret->frames = frames;
		ret->fps = (double)frames * 1e9 / (double)(fl__bench_now_ns() - t0);
	}
	fl_display_blank(intf, FL_DISPLAY_DPMS_OFF, NULL);
	service_stop(svc);
out:
	if (fd >= 0)
		close(fd);
	if (intf)
		fl_display_close(intf);
	if (dev)
		fl_display_close(dev);
	fl_display_disconnect();
	unlink(cfg);
	return r;
}

/* outputs 2: the window driver, with SDL's OpenGL renderer (Mesa's under Xvfb) and its software one. */
static void part_window(void)
{
	static const char *const renderers[] = { "opengl", "software" };
	const char *keep_cfg = getenv("FENCELINE_DISPLAY_CONFIG"),
		   *keep_sock = getenv("FENCELINE_DISPLAY_SOCKET"), *keep_x = getenv("DISPLAY");
	char dir[] = "/tmp/fl-bench-window.XXXXXX", display[32], name[96], ratio[128];
	char *saved[3] = { keep_cfg ? strdup(keep_cfg) : NULL, keep_sock ? strdup(keep_sock) : NULL,
			   keep_x ? strdup(keep_x) : NULL };
	static const char *const names[3] = { "FENCELINE_DISPLAY_CONFIG",
					      "FENCELINE_DISPLAY_SOCKET", "DISPLAY" };
	long frames = fl__bench_iters(300, 60);
	struct win_run base = { 0 }, w;
	pid_t xvfb;
	int r;

	xvfb = xvfb_start(display, sizeof(display));
	if (xvfb < 0 || !mkdtemp(dir)) {
		fl__bench_comment("outputs 2: the window driver: skipped (no Xvfb to show it on: "
				  "Debian xvfb)");
		if (xvfb > 0) {
			kill(xvfb, SIGTERM);
			waitpid(xvfb, NULL, 0);
		}
		goto restore;
	}
	setenv("DISPLAY", display, 1);
	fl__bench_comment("outputs 2: the window driver showing a 1920x1080@60 panel (one "
			  "full-screen buffer) 1:1 in a window of Xvfb %s, %ld frames: the "
			  "service's CPU a frame over the virtual driver's (capture, upload, "
			  "present), and Xvfb's CPU a frame",
			  display, frames);
	r = window_run(dir, "virtual", xvfb, frames, &base);
	if (r < 0) {
		fl__bench_comment("outputs 2: the virtual driver's service: %s", strerror(-r));
		goto out;
	}
	fl__bench_out("outputs_virtual_service_cpu", (double)base.service_ns / (double)frames,
		      "ns");
	for (size_t i = 0; i < sizeof(renderers) / sizeof(renderers[0]); i++) {
		setenv("SDL_RENDER_DRIVER", renderers[i], 1);
		r = window_run(dir, "window", xvfb, frames, &w);
		unsetenv("SDL_RENDER_DRIVER");
		if (r < 0) {
			fl__bench_comment("outputs 2: the window driver (%s): %s", renderers[i],
					  strerror(-r));
			continue;
		}
		snprintf(name, sizeof(name), "outputs_window_%s", renderers[i]);
		fl__bench_out(name,
			      ((double)w.service_ns - (double)base.service_ns) / (double)frames,
			      "ns");
		snprintf(ratio, sizeof(ratio), "ratio_outputs_window_%s_over_memcpy", renderers[i]);
		fl__bench_ratio(ratio, name, "baseline_memcpy_1080p");
		snprintf(name, sizeof(name), "outputs_window_%s_xvfb", renderers[i]);
		fl__bench_out(name, (double)w.x_ns / (double)frames, "ns");
		snprintf(name, sizeof(name), "outputs_window_%s_fps", renderers[i]);
		fl__bench_out(name, w.fps, "Hz");
	}
out:
	kill(xvfb, SIGTERM);
	waitpid(xvfb, NULL, 0);
	rmdir(dir);
restore:
	for (int i = 0; i < 3; i++) {
		if (saved[i])
			setenv(names[i], saved[i], 1);
		else
			unsetenv(names[i]);
		free(saved[i]);
	}
}

void fl__bench_outputs(void)
{
	static const char *const what[] = { "moving", "corner", "static" };
	struct out_ctx c = { 0 };
	long n = fl__bench_iters(40, 4);

	fl__bench_comment("section outputs: a 1920x1080 XRGB8888 frame shown by each driver, "
			  "beside a memcpy of its 8.29 MB; median of %d batches of %ld",
			  FL_BENCH_REPS, n);
	c.frame = calloc((size_t)W * H, 4);
	c.copy = calloc((size_t)W * H, 4);
	c.screen = fl__term_screen_new(200, 60);
	if (!c.frame || !c.copy || !c.screen)
		fl__bench_die("outputs set-up", ENOMEM);
	c.cap = fl__term_encode_max(c.screen);
	c.out = malloc(c.cap);
	if (!c.out)
		fl__bench_die("outputs set-up", ENOMEM);
	fl__bench_comment("outputs 1: the terminal driver's picture, 200 x 60 cells of half "
			  "blocks (200 x 120 pixels), only changed cells written");
	fl__bench_out("baseline_memcpy_1080p", fl__bench_batch_median(b_memcpy, &c, n), "ns");
	for (int m = 0; m < 3; m++) {
		char name[64], ratio[96];

		c.mode = m;
		c.bytes = c.frames = 0;
		next_frame(&c);
		fl__term_screen_invalidate(c.screen);
		fl__term_encode(c.screen, c.frame, W, H, W * 4, c.out, c.cap);
		snprintf(name, sizeof(name), "outputs_terminal_%s", what[m]);
		fl__bench_out(name, fl__bench_batch_median(b_encode, &c, n), "ns");
		snprintf(ratio, sizeof(ratio), "ratio_outputs_terminal_%s_over_memcpy", what[m]);
		fl__bench_ratio(ratio, name, "baseline_memcpy_1080p");
		snprintf(name, sizeof(name), "outputs_terminal_%s_bytes", what[m]);
		fl__bench_out(name, (double)c.bytes / (double)c.frames, "bytes");
	}
	fl__term_screen_free(c.screen);
	free(c.out);
	free(c.frame);
	free(c.copy);
	part_window();
}

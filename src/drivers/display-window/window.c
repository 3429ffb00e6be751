/* SPDX-License-Identifier: MIT */
/*
 * The window display driver (docs/display.md, "The window driver"): the
 * virtual driver (its model, clock, composition, simple buffers), whose
 * frames this presenter shows in a desktop window through SDL2, on X11 or
 * Wayland, and whose keys come back as the terminal driver's key events.
 *
 *   [device desk]
 *   driver = window
 *   options = title=phone, scale=2, interface=0
 *
 * SDL is loaded with dlopen() when the first window device is made, never
 * linked: Debian's libSDL2 pulls in some fifty libraries (X11, Wayland,
 * PulseAudio, D-Bus, systemd...), which a service without a window device
 * must not load. It stays loaded once loaded: libraries it brought in
 * (PulseAudio's, D-Bus) are not safe to unload.
 *
 * Nothing here waits on the service's loop: the renderer is made without
 * PRESENTVSYNC and with vsync forced off (the virtual driver's clock paces
 * the frames: SDL2 offers no presentation timestamp to pace them by), and
 * SDL's events are read when the display server's connection is readable
 * (its fd on the loop) and after every call into SDL, which may have read
 * them off the connection already.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <SDL.h>
#include <SDL_syswm.h>

#include "display-presented.h"
#include "display-window.h"
#include "win-keys.h"

/* The SDL functions the driver calls, looked up in the library dlopen() gave. */
#define SDL_FN(n) __typeof__(SDL_##n) *n
static struct {
	SDL_FN(SetHint);
	SDL_FN(SetHintWithPriority);
	SDL_FN(InitSubSystem);
	SDL_FN(QuitSubSystem);
	SDL_FN(WasInit);
	SDL_FN(Quit);
	SDL_FN(GetError);
	SDL_FN(CreateWindow);
	SDL_FN(DestroyWindow);
	SDL_FN(GetWindowID);
	SDL_FN(ShowWindow);
	SDL_FN(HideWindow);
	SDL_FN(GetWindowWMInfo);
	SDL_FN(CreateRenderer);
	SDL_FN(DestroyRenderer);
	SDL_FN(GetRendererInfo);
	SDL_FN(GetRendererOutputSize);
	SDL_FN(CreateTexture);
	SDL_FN(DestroyTexture);
	SDL_FN(SetTextureScaleMode);
	SDL_FN(UpdateTexture);
	SDL_FN(SetRenderDrawColor);
	SDL_FN(RenderClear);
	SDL_FN(RenderCopy);
	SDL_FN(RenderPresent);
	SDL_FN(PollEvent);
	SDL_FN(GetCurrentVideoDriver);
	SDL_FN(iconv_string);
	SDL_FN(free);
} sdl;
#undef SDL_FN

#define SDL_SYM(n)                         \
	{                                  \
		"SDL_" #n, (void **)&sdl.n \
	}
static const struct {
	const char *name;
	void **fn;
} sdl_syms[] = {
	SDL_SYM(SetHint),
	SDL_SYM(SetHintWithPriority),
	SDL_SYM(InitSubSystem),
	SDL_SYM(QuitSubSystem),
	SDL_SYM(WasInit),
	SDL_SYM(Quit),
	SDL_SYM(GetError),
	SDL_SYM(CreateWindow),
	SDL_SYM(DestroyWindow),
	SDL_SYM(GetWindowID),
	SDL_SYM(ShowWindow),
	SDL_SYM(HideWindow),
	SDL_SYM(GetWindowWMInfo),
	SDL_SYM(CreateRenderer),
	SDL_SYM(DestroyRenderer),
	SDL_SYM(GetRendererInfo),
	SDL_SYM(GetRendererOutputSize),
	SDL_SYM(CreateTexture),
	SDL_SYM(DestroyTexture),
	SDL_SYM(SetTextureScaleMode),
	SDL_SYM(UpdateTexture),
	SDL_SYM(SetRenderDrawColor),
	SDL_SYM(RenderClear),
	SDL_SYM(RenderCopy),
	SDL_SYM(RenderPresent),
	SDL_SYM(PollEvent),
	SDL_SYM(GetCurrentVideoDriver),
	SDL_SYM(iconv_string),
	SDL_SYM(free),
};
#undef SDL_SYM
static void *sdl_lib;

struct win {
	const struct fl_display_host *host;
	void *v; /* the virtual driver's state, for its frames */
	uint32_t intf;
	char title[128];
	uint32_t scale;
	struct fl__display_frame frame;
	SDL_Window *window;
	uint32_t window_id;
	SDL_Renderer *renderer;
	SDL_Texture *texture;
	uint32_t tw, th; /* the texture's size: the frame's */
	int conn; /* a dup of the display server's connection, watched for events */
	struct fl_display_source *conn_src;
	bool closed; /* the window was closed: its interface is unplugged */
	bool keys_on;
	bool key_held; /* a key down whose text (SDL_TEXTINPUT) may follow */
	struct fl_display_terminal_key held;
	struct win *next;
};

/* Every window of the process: SDL's event queue is one, each event goes to its window. */
static struct win *windows;

/* The display server's connection broke: SDL's video is dead for the rest of the process. */
static bool server_lost;

/* Why the window driver cannot run here: 0, or -errno with a one-line reason in @why. */
static int unavailable(char *why, size_t len)
{
	const char *drv = getenv("SDL_VIDEODRIVER");

	if (!drv && !getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY")) {
		snprintf(why, len,
			 "no X11 or Wayland display: $DISPLAY and $WAYLAND_DISPLAY are unset");
		return -ENODEV;
	}
	if (sdl_lib)
		return 0;
	sdl_lib = dlopen("libSDL2-2.0.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!sdl_lib) {
		snprintf(why, len, "cannot load SDL2: %s", dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(sdl_syms) / sizeof(sdl_syms[0]); i++) {
		*sdl_syms[i].fn = dlsym(sdl_lib, sdl_syms[i].name);
		if (!*sdl_syms[i].fn) {
			snprintf(why, len, "libSDL2-2.0.so.0 has no %s: too old", sdl_syms[i].name);
			dlclose(sdl_lib);
			sdl_lib = NULL;
			return -ENOENT;
		}
	}
	return 0;
}

/* SDL's video, started for this window device (counted by SDL: one start per device). */
static int video_start(char *why, size_t len)
{
	int r = unavailable(why, len);

	if (r < 0)
		return r;
	/* The service handles its signals: SDL must not take SIGINT/SIGTERM. */
	sdl.SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1");
	/* Closing the window unplugs the interface; it does not ask the process to quit. */
	sdl.SetHint(SDL_HINT_QUIT_ON_LAST_WINDOW_CLOSE, "0");
	sdl.SetHint(SDL_HINT_VIDEO_ALLOW_SCREENSAVER, "1");
	/*
	 * SDL's software renderer draws into the window's framebuffer: the
	 * display server's own (X11's shared memory), not one that SDL would
	 * otherwise present through OpenGL, which without a GPU (Mesa's
	 * llvmpipe) costs more CPU than the whole frame (docs/benchmarks.md).
	 */
	sdl.SetHint(SDL_HINT_FRAMEBUFFER_ACCELERATION, "0");
	/* Never wait for the panel's vsync on the loop, whatever the environment says. */
	sdl.SetHintWithPriority(SDL_HINT_RENDER_VSYNC, "0", SDL_HINT_OVERRIDE);
	/*
	 * Only a desktop's display servers: left to itself SDL would also try
	 * KMS/DRM on a console, taking the DRM master from whoever has it. The
	 * user's SDL_VIDEODRIVER wins (a hint of normal priority does not
	 * override its environment variable).
	 */
	sdl.SetHint(SDL_HINT_VIDEODRIVER, getenv("WAYLAND_DISPLAY") ? "wayland,x11" : "x11");
	if (sdl.InitSubSystem(SDL_INIT_VIDEO) < 0) {
		snprintf(why, len, "SDL_Init: %s", sdl.GetError());
		return -ENODEV;
	}
	return 0;
}

static void video_stop(void)
{
	sdl.QuitSubSystem(SDL_INIT_VIDEO);
	/* The last one: SDL lets go of what it keeps for the process (its hints, its threads). */
	if (!sdl.WasInit(0))
		sdl.Quit();
}

static void emit_key(struct win *w, const struct fl_display_terminal_key *k)
{
	if (w->keys_on && k->code | k->ch)
		w->host->event(w->host, FL_DISPLAY_OBJ_DEVICE, 0, FL_DISPLAY_TERMINAL_EVENT_KEY, k,
			       sizeof(*k));
}

/* A key down with no text after it: it goes as it is, with a terminal's character for Enter and the like. */
static void flush_key(struct win *w)
{
	if (!w->key_held)
		return;
	w->key_held = false;
	if (!w->held.ch)
		w->held.ch = fl__win_key_control_ch(w->held.code);
	emit_key(w, &w->held);
}

/*
 * The text typed (SDL_TEXTINPUT, in UTF-8): its first character is the held
 * key's; text without a key down (an input method's) is a character of no
 * key of its own.
 */
static void text_typed(struct win *w, const char *text)
{
	/* Big-endian whatever the host: SDL's "UCS-4-INTERNAL" is not every iconv's. */
	unsigned char *u =
		(unsigned char *)sdl.iconv_string("UTF-32BE", "UTF-8", text, strlen(text) + 1);
	struct fl_display_terminal_key key = {
		0, 0,
		u ? (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3] : 0
	};

	sdl.free(u);
	if (w->key_held) {
		w->held.ch = key.ch;
		w->key_held = false;
		emit_key(w, &w->held);
		return;
	}
	emit_key(w, &key);
}

/* The frame, fitted to the window with its aspect kept, centred, black around. */
static void draw(struct win *w)
{
	int ow, oh;
	SDL_Rect r;

	if (!w->texture || w->closed || server_lost ||
	    sdl.GetRendererOutputSize(w->renderer, &ow, &oh) < 0)
		return;
	if ((uint64_t)w->tw * (uint64_t)oh >= (uint64_t)w->th * (uint64_t)ow) {
		r.w = ow;
		r.h = (int)(((uint64_t)w->th * (uint64_t)ow + w->tw / 2) / w->tw);
	} else {
		r.h = oh;
		r.w = (int)(((uint64_t)w->tw * (uint64_t)oh + w->th / 2) / w->th);
	}
	r.x = (ow - r.w) / 2;
	r.y = (oh - r.h) / 2;
	sdl.SetRenderDrawColor(w->renderer, 0, 0, 0, 255);
	sdl.RenderClear(w->renderer);
	sdl.RenderCopy(w->renderer, w->texture, NULL, &r);
	sdl.RenderPresent(w->renderer);
}

static struct win *window_of(uint32_t id)
{
	for (struct win *w = windows; w; w = w->next)
		if (w->window && w->window_id == id)
			return w;
	return NULL;
}

/* The window was closed: its interface is unplugged, as a monitor's cable pulled. */
static void closed(struct win *w)
{
	w->closed = true;
	sdl.HideWindow(w->window);
	fl__display_virtual_set_connected(w->v, w->intf, false);
}

/* Every event SDL has, to its window; never waits. */
static void pump(void)
{
	SDL_Event e;
	struct win *w;

	while (sdl.PollEvent(&e)) {
		switch (e.type) {
		case SDL_WINDOWEVENT:
			w = window_of(e.window.windowID);
			if (!w)
				break;
			if (e.window.event == SDL_WINDOWEVENT_CLOSE)
				closed(w);
			else if (e.window.event == SDL_WINDOWEVENT_SIZE_CHANGED ||
				 e.window.event == SDL_WINDOWEVENT_EXPOSED)
				draw(w);
			break;
		case SDL_KEYDOWN:
			w = window_of(e.key.windowID);
			if (!w)
				break;
			flush_key(w);
			w->held = (struct fl_display_terminal_key){
				fl__win_key_code(e.key.keysym.scancode),
				fl__win_key_mods(e.key.keysym.mod), 0
			};
			/*
			 * Held for the text that may follow. A modifier alone is no key;
			 * another key without a code is sent by its text alone, if any.
			 */
			w->key_held = w->held.code != 0;
			break;
		case SDL_TEXTINPUT:
			w = window_of(e.text.windowID);
			if (w)
				text_typed(w, e.text.text);
			break;
		}
	}
	for (w = windows; w; w = w->next)
		flush_key(w);
}

/*
 * After SDL was called: if the display server went (a call into SDL found
 * its connection broken), every window is unplugged and its connection no
 * longer watched (a broken one is readable for ever); SDL is not called for
 * them again.
 */
static void check_server(void)
{
	if (!server_lost)
		return;
	for (struct win *w = windows; w; w = w->next) {
		w->host->source_remove(w->conn_src);
		w->conn_src = NULL;
		if (!w->closed) {
			w->closed = true;
			fl__display_virtual_set_connected(w->v, w->intf, false);
		}
	}
}

static void conn_readable(int fd, uint32_t events, void *data)
{
	(void)fd;
	(void)events;
	(void)data;
	pump();
	check_server();
}

#ifdef SDL_VIDEO_DRIVER_X11
static int x_io_error(Display *dpy)
{
	(void)dpy;
	fprintf(stderr, "fl-displayd: window: the X server's connection broke: the windows "
			"are unplugged\n");
	return 0;
}

static void x_io_exit(Display *dpy, void *data)
{
	(void)dpy;
	(void)data;
	server_lost = true;
}

/*
 * Xlib's answer to a broken connection is exit(1), from its default I/O
 * error handler: the service would end, and every client's display with
 * it. Since libX11 1.7 a handler may return, and then the connection's exit
 * handler runs instead of exit(); Xlib's calls on that connection fail at
 * once from then on, and the driver unplugs the windows (check_server()).
 * An older libX11 (no XSetIOErrorExitHandler) is left as it is: there a
 * handler that returns is followed by exit() all the same.
 */
static void x_survive(Display *dpy)
{
	void *x = dlopen("libX11.so.6", RTLD_NOW | RTLD_NOLOAD);
	void (*set_exit)(Display *, XIOErrorExitHandler, void *) = NULL;
	XIOErrorHandler (*set_error)(XIOErrorHandler) = NULL;

	if (!x)
		return;
	*(void **)&set_exit = dlsym(x, "XSetIOErrorExitHandler");
	*(void **)&set_error = dlsym(x, "XSetIOErrorHandler");
	if (set_exit && set_error) {
		set_error(x_io_error);
		set_exit(dpy, x_io_exit, NULL);
	}
	dlclose(x);
}
#endif

/* The display server's connection, for the loop to watch: -1 where SDL does not say. */
static int connection_fd(SDL_Window *window)
{
	SDL_SysWMinfo info;

	SDL_VERSION(&info.version);
	if (!sdl.GetWindowWMInfo(window, &info))
		return -1;
#ifdef SDL_VIDEO_DRIVER_X11
	if (info.subsystem == SDL_SYSWM_X11) {
		x_survive(info.info.x11.display);
		return ConnectionNumber(info.info.x11.display);
	}
#endif
#ifdef SDL_VIDEO_DRIVER_WAYLAND
	if (info.subsystem == SDL_SYSWM_WAYLAND) {
		/* libwayland-client is SDL's: found where SDL loaded it. */
		void *wl = dlopen("libwayland-client.so.0", RTLD_NOW | RTLD_NOLOAD);
		int (*get_fd)(struct wl_display *) = NULL;
		int fd = -1;

		if (wl) {
			*(void **)&get_fd = dlsym(wl, "wl_display_get_fd");
			if (get_fd)
				fd = get_fd(info.info.wl.display);
			dlclose(wl);
		}
		return fd;
	}
#endif
	return -1;
}

/* The window, made at the first frame at the mode's size × scale. Return: 0 or -errno. */
static int open_window(struct win *w)
{
	SDL_RendererInfo info;
	int fd;

	w->window = sdl.CreateWindow(w->title, SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED,
				     (int)(w->frame.w * w->scale), (int)(w->frame.h * w->scale),
				     SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
	if (!w->window)
		goto sdl_error;
	w->window_id = sdl.GetWindowID(w->window);
	w->renderer = sdl.CreateRenderer(w->window, -1, 0);
	if (!w->renderer)
		goto sdl_error;
	/* What SDL chose, for whoever reads the service's log: its cost depends on it. */
	if (sdl.GetRendererInfo(w->renderer, &info) == 0)
		fprintf(stderr, "fl-displayd: window \"%s\": %ux%u, SDL renderer %s\n", w->title,
			w->frame.w * w->scale, w->frame.h * w->scale, info.name);
	fd = connection_fd(w->window);
	if (fd < 0) {
		/* A video driver of SDL's without one (SDL_VIDEODRIVER=offscreen): no input to wait for. */
		fprintf(stderr,
			"fl-displayd: window: SDL's %s video has no connection to watch: "
			"its events are read after each frame only\n",
			sdl.GetCurrentVideoDriver());
		return 0;
	}
	/* A dup: each window device watches its own, on the one connection SDL has. */
	w->conn = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (w->conn < 0)
		return -errno;
	w->conn_src = w->host->fd_add(w->host, w->conn, EPOLLIN, conn_readable, w);
	return w->conn_src ? 0 : -errno;
sdl_error:
	fprintf(stderr, "fl-displayd: window: %s\n", sdl.GetError());
	return -ENODEV;
}

static void close_window(struct win *w)
{
	w->host->source_remove(w->conn_src);
	w->conn_src = NULL;
	if (w->conn >= 0)
		close(w->conn);
	w->conn = -1;
	/*
	 * After the display server went, SDL's X11 code waits for events that
	 * will never come (it loops on XIfEvent() for the unmap): its objects
	 * are let go of without a word to SDL, which is dead for this process.
	 */
	if (server_lost)
		return;
	if (w->texture)
		sdl.DestroyTexture(w->texture);
	if (w->renderer)
		sdl.DestroyRenderer(w->renderer);
	if (w->window)
		sdl.DestroyWindow(w->window);
	w->texture = NULL;
	w->renderer = NULL;
	w->window = NULL;
}

static void present(void *p, uint32_t intf)
{
	struct win *w = p;

	if (intf != w->intf || server_lost)
		return;
	if (fl__display_virtual_capture_frame(w->v, w->host, intf, "fl-window-frame", &w->frame) <
	    0)
		return;
	if (!w->window && open_window(w) < 0) {
		/* Nowhere to show it: the interface is unplugged rather than failing each frame. */
		close_window(w);
		w->closed = true;
		fl__display_virtual_set_connected(w->v, w->intf, false);
		return;
	}
	/* Plugged again (fl-displayctl) after the window was closed: it comes back. */
	if (w->closed) {
		w->closed = false;
		sdl.ShowWindow(w->window);
	}
	if (!w->texture || w->tw != w->frame.w || w->th != w->frame.h) {
		if (w->texture)
			sdl.DestroyTexture(w->texture);
		w->texture = sdl.CreateTexture(w->renderer, SDL_PIXELFORMAT_XRGB8888,
					       SDL_TEXTUREACCESS_STREAMING, (int)w->frame.w,
					       (int)w->frame.h);
		if (!w->texture)
			return;
		/* Whole pixels at any scale: a 2× window shows each pixel as 2 × 2, nothing blurred. */
		sdl.SetTextureScaleMode(w->texture, SDL_ScaleModeNearest);
		w->tw = w->frame.w;
		w->th = w->frame.h;
	}
	/*
	 * Straight from the capture's mapping: one copy into the texture (a
	 * lock would give SDL's staging memory, to which the capture, which
	 * writes through an fd, cannot compose, so it would add a copy).
	 */
	sdl.UpdateTexture(w->texture, NULL, w->frame.px, (int)(w->frame.w * 4));
	draw(w);
	pump();
	check_server();
}

static int set_event(void *p, uint32_t type, bool enabled)
{
	struct win *w = p;

	if (type != FL_DISPLAY_TERMINAL_EVENT_KEY)
		return -EINVAL;
	w->keys_on = enabled;
	return 0;
}

static void destroy(void *p)
{
	struct win *w = p;

	close_window(w);
	for (struct win **pp = &windows; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	fl__display_frame_free(&w->frame);
	if (!server_lost)
		video_stop();
	free(w);
}

static int create(const struct fl_display_host *host, void *v, void **ret)
{
	const char *title = host->option(host, "title");
	struct win *w = calloc(1, sizeof(*w));
	char why[256];
	int r;

	if (!w)
		return -ENOMEM;
	w->host = host;
	w->v = v;
	w->frame.fd = -1;
	w->conn = -1;
	w->scale = 1;
	snprintf(w->title, sizeof(w->title), "%s", title ? title : "fenceline display");
	if (fl__display_presenter_option_uint(host, "interface", 0, FL_DISPLAY_MAX_INTERFACES - 1,
					      &w->intf) < 0 ||
	    fl__display_presenter_option_uint(host, "scale", 1, 8, &w->scale) < 0) {
		free(w);
		return -EINVAL;
	}
	r = video_start(why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "fl-displayd: window: %s\n", why);
		free(w);
		return r;
	}
	w->next = windows;
	windows = w;
	*ret = w;
	return 0;
}

/*
 * Whether a window can be opened: a display server named, SDL2 loaded, and
 * SDL's video started (it connects to the display server) and stopped
 * again. SDL stays loaded (see above), nothing else is left.
 */
static int window_probe(const char *where, char *why, size_t len)
{
	int r;

	(void)where;
	r = video_start(why, len);
	if (r == 0)
		video_stop();
	return r;
}

FL__DISPLAY_PRESENTED_DRIVER(fl__display_window_ops, "window", create, destroy, present, set_event,
			     window_probe);

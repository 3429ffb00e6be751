/* SPDX-License-Identifier: MIT */
/*
 * libfenceline-fbdev.so (docs/fbdev.md): /dev/fb0 for unmodified fbdev
 * programs on any fenceline display, run under `fenceline-fbdev PROGRAM`
 * (an LD_PRELOAD), as ADF's fbdev helper (spec adf-ion.md §1.13) serves
 * one from an interface and an engine.
 *
 * /dev/fb0 is one device for every process, as a kernel's is: its memory
 * and its state live in two files beside the display service's socket
 * (its private directory): "fb0", the framebuffer memory (the mode's
 * width, twice its height, for page flipping, at the pitch the display's
 * simple buffers have), and "fb0.state", the var, the format and the pan,
 * read and written under an flock. What one program draws, another (fbcat)
 * reads; what one sets (fbset), another sees.
 *   open     the first one of a process finds the display's simple post
 *            configuration (libadf's), attaches it and turns it on; every
 *            open posts the framebuffer. The fd is the memory file, so
 *            mmap(), read() and write() reach the framebuffer directly.
 *   ioctl    FBIOGET_VSCREENINFO/FSCREENINFO, FBIOPUT_VSCREENINFO with the
 *            helper's checks, FBIOPAN_DISPLAY (a re-post at the offset),
 *            FBIOBLANK (DPMS), FBIO_WAITFORVSYNC, FBIOGET/PUTCMAP (the
 *            helper's 16-entry pseudo palette), FBIOGET_CON2FBMAP.
 *   close    the last one of a process lets its display connection go; the
 *            frame stays on screen, the memory in its file.
 * An fd is ours when it is the memory file (its inode), however the
 * program got it (dup, fork, SCM_RIGHTS).
 */
/* With 64-bit offsets glibc names open() open64(): we define both, each under its own name. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <adf/adf.h>
#include <android/sync.h>
#include <fenceline/display.h>

#define EXPORT __attribute__((visibility("default")))

/* The fb paths served: Linux's, devfs's and Android's. */
static bool is_fb_path(const char *path)
{
	const char *env = getenv("FENCELINE_FBDEV_PATH");

	if (!path)
		return false;
	if (env && env[0])
		return !strcmp(path, env);
	return !strcmp(path, "/dev/fb0") || !strcmp(path, "/dev/fb/0") ||
	       !strcmp(path, "/dev/graphics/fb0");
}

/* The fourccs the helper knows, with their fbdev bitfields (offset, length: r, g, b, a). */
static const struct layout {
	uint32_t fourcc;
	uint32_t bpp;
	uint8_t bits[4][2];
} layouts[] = {
	{ DRM_FORMAT_XRGB8888, 32, { { 16, 8 }, { 8, 8 }, { 0, 8 }, { 0, 0 } } },
	{ DRM_FORMAT_ARGB8888, 32, { { 16, 8 }, { 8, 8 }, { 0, 8 }, { 24, 8 } } },
	{ DRM_FORMAT_XBGR8888, 32, { { 0, 8 }, { 8, 8 }, { 16, 8 }, { 0, 0 } } },
	{ DRM_FORMAT_ABGR8888, 32, { { 0, 8 }, { 8, 8 }, { 16, 8 }, { 24, 8 } } },
	{ DRM_FORMAT_RGBX8888, 32, { { 24, 8 }, { 16, 8 }, { 8, 8 }, { 0, 0 } } },
	{ DRM_FORMAT_BGRX8888, 32, { { 8, 8 }, { 16, 8 }, { 24, 8 }, { 0, 0 } } },
	{ DRM_FORMAT_RGB565, 16, { { 11, 5 }, { 5, 6 }, { 0, 5 }, { 0, 0 } } },
	{ DRM_FORMAT_BGR565, 16, { { 0, 5 }, { 5, 6 }, { 11, 5 }, { 0, 0 } } },
};
#define N_LAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/* The shared state, "fb0.state". */
#define STATE_MAGIC 0x30626666u /* "ffb0" */
struct state {
	uint32_t magic;
	uint32_t device, intf, eng; /* the display it was made for */
	struct drm_mode_modeinfo mode; /* its mode then: another mode remakes it */
	uint32_t fourcc;
	uint32_t pitch, size; /* the memory file's layout */
	struct fb_var_screeninfo var;
	uint16_t cmap[3][16];
};

/* This process's side. */
struct fb {
	int opens; /* fds of ours the program holds, as far as close() tells us */
	struct adf_device dev;
	adf_id_t intf_id, eng_id;
	int intf;
	int mem; /* the memory file: every fd we return is a dup of it */
	int statefd;
	dev_t mem_dev;
	ino_t mem_ino;
	bool vsync_on;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fb *fb;
/*
 * Set while this thread works on the framebuffer under the lock: the
 * close() and ioctl() that libfenceline makes meanwhile reach libc.
 */
static __thread bool inside;

static void enter(void)
{
	pthread_mutex_lock(&lock);
	inside = true;
}

static void leave(void)
{
	inside = false;
	pthread_mutex_unlock(&lock);
}

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*ioctl_fn)(int, unsigned long, ...);
typedef int (*close_fn)(int);

static ioctl_fn libc_ioctl;
static close_fn libc_close;

__attribute__((constructor)) static void find_libc(void)
{
	libc_ioctl = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
	libc_close = (close_fn)dlsym(RTLD_NEXT, "close");
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("fenceline-fbdev: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct layout *layout_of(uint32_t fourcc)
{
	for (size_t i = 0; i < N_LAYOUTS; i++)
		if (layouts[i].fourcc == fourcc)
			return &layouts[i];
	return NULL;
}

/* The var's pixel layout: its bpp and bitfields as one of the helper's table. */
static const struct layout *layout_of_var(const struct fb_var_screeninfo *v)
{
	for (size_t i = 0; i < N_LAYOUTS; i++) {
		const struct layout *l = &layouts[i];

		if (v->bits_per_pixel == l->bpp && v->red.offset == l->bits[0][0] &&
		    v->red.length == l->bits[0][1] && v->green.offset == l->bits[1][0] &&
		    v->green.length == l->bits[1][1] && v->blue.offset == l->bits[2][0] &&
		    v->blue.length == l->bits[2][1] && v->transp.length == l->bits[3][1] &&
		    (!l->bits[3][1] || v->transp.offset == l->bits[3][0]))
			return l;
	}
	return NULL;
}

static void set_layout(struct fb_var_screeninfo *v, const struct layout *l)
{
	struct fb_bitfield *f[4] = { &v->red, &v->green, &v->blue, &v->transp };

	v->bits_per_pixel = l->bpp;
	for (int i = 0; i < 4; i++)
		*f[i] = (struct fb_bitfield){ l->bits[i][0], l->bits[i][1], 0 };
}

/* The var's timings from a DRM mode (the helper's conversion: margins from the sync positions). */
static void set_timings(struct fb_var_screeninfo *v, const struct drm_mode_modeinfo *m)
{
	v->xres = m->hdisplay;
	v->yres = m->vdisplay;
	v->pixclock = m->clock ? (uint32_t)(1000000000ull / m->clock) : 0; /* kHz to ps */
	v->left_margin = m->htotal - m->hsync_end;
	v->right_margin = m->hsync_start - m->hdisplay;
	v->hsync_len = m->hsync_end - m->hsync_start;
	v->upper_margin = m->vtotal - m->vsync_end;
	v->lower_margin = m->vsync_start - m->vdisplay;
	v->vsync_len = m->vsync_end - m->vsync_start;
	v->sync = ((m->flags & 1) ? FB_SYNC_HOR_HIGH_ACT : 0) |
		  ((m->flags & 4) ? FB_SYNC_VERT_HIGH_ACT : 0);
	v->vmode = (m->flags & 16) ? FB_VMODE_INTERLACED : FB_VMODE_NONINTERLACED;
}

/*
 * Show the visible part of the framebuffer at the var's offsets, and wait
 * until it is on screen (a frame at most): a program that draws after a
 * pan or an open draws on what it sees, as on a kernel's framebuffer.
 */
static int post(struct fb *f, const struct state *st)
{
	const struct layout *l = layout_of(st->fourcc);
	uint32_t off = st->var.yoffset * st->pitch + st->var.xoffset * (l->bpp / 8);
	int fence = -1, r;

	r = adf_interface_simple_post_v2(f->intf, f->eng_id, st->var.xres, st->var.yres, st->fourcc,
					 f->mem, off, st->pitch, -1, ADF_COMPLETE_FENCE_PRESENT,
					 &fence);
	if (r < 0)
		return r;
	if (fence >= 0) {
		if (sync_wait(fence, 1000) < 0)
			r = -errno;
		libc_close(fence);
	}
	return r;
}

/* The shared state, locked (flock) for the caller; unlock_state() writes it back. */
static int lock_state(struct fb *f, struct state *st)
{
	ssize_t n;

	if (flock(f->statefd, LOCK_EX) < 0)
		return -errno;
	n = pread(f->statefd, st, sizeof(*st), 0);
	if (n != (ssize_t)sizeof(*st) || st->magic != STATE_MAGIC)
		memset(st, 0, sizeof(*st));
	return 0;
}

static int unlock_state(struct fb *f, const struct state *st, bool write)
{
	int r = 0;

	if (write && pwrite(f->statefd, st, sizeof(*st), 0) != (ssize_t)sizeof(*st))
		r = -EIO;
	flock(f->statefd, LOCK_UN);
	return r;
}

static void fb_free(struct fb *f)
{
	if (f->mem >= 0)
		libc_close(f->mem);
	if (f->statefd >= 0)
		libc_close(f->statefd);
	if (f->intf >= 0)
		libc_close(f->intf);
	adf_device_close(&f->dev);
	free(f);
}

/* The display: its simple post configuration for @fourcc (0: the first of ours it has). */
static int find_display(struct fb *f, uint32_t fourcc, uint32_t *ret_fourcc)
{
	static const uint32_t want[] = { DRM_FORMAT_XRGB8888, DRM_FORMAT_RGB565,
					 DRM_FORMAT_XBGR8888, DRM_FORMAT_BGRX8888 };
	adf_id_t *ids = NULL;
	ssize_t n = adf_devices(&ids);
	int r = -ENODEV;

	if (n <= 0) {
		say("no display: %s", n < 0 ? strerror((int)-n) : "no device");
		return n < 0 ? (int)n : -ENODEV;
	}
	r = adf_device_open(ids[0], O_RDWR, &f->dev);
	free(ids);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint32_t fmt = fourcc ? fourcc : want[i];

		r = adf_find_simple_post_configuration(&f->dev, &fmt, 1, &f->intf_id, &f->eng_id);
		if (r == 0 || fourcc) {
			*ret_fourcc = fmt;
			break;
		}
	}
	if (r < 0)
		say("no simple post configuration for an RGB format: %s", strerror(-r));
	return r;
}

/* A fresh state and memory file for the display's mode @m. Locked state. */
static int fb_init_state(struct fb *f, struct state *st, const struct drm_mode_modeinfo *m,
			 uint32_t fourcc, uint16_t width_mm, uint16_t height_mm, int memfd)
{
	uint32_t offset, pitch;
	int probe;

	/* The pitch the display wants for its simple buffers: ask for one, and keep its layout. */
	probe = adf_interface_simple_buffer_alloc(f->intf, m->hdisplay, (uint32_t)m->vdisplay * 2,
						  fourcc, &offset, &pitch);
	if (probe < 0) {
		say("the display gives no simple buffer of %ux%u: %s", m->hdisplay, m->vdisplay * 2,
		    strerror(-probe));
		return probe;
	}
	libc_close(probe);
	memset(st, 0, sizeof(*st));
	st->magic = STATE_MAGIC;
	st->device = f->dev.id;
	st->intf = f->intf_id;
	st->eng = f->eng_id;
	st->mode = *m;
	st->fourcc = fourcc;
	st->pitch = pitch;
	st->size = pitch * m->vdisplay * 2;
	if (ftruncate(memfd, 0) < 0 || ftruncate(memfd, st->size) < 0)
		return -errno;
	set_timings(&st->var, m);
	st->var.xres_virtual = m->hdisplay;
	st->var.yres_virtual = (uint32_t)m->vdisplay * 2;
	st->var.width = width_mm;
	st->var.height = height_mm;
	set_layout(&st->var, layout_of(fourcc));
	return 0;
}

/* The first open of this process: the display, the shared files. Return: 0 or a negative errno. */
static int fb_make(struct fb **ret)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 16], *slash;
	struct fb *f = calloc(1, sizeof(*f));
	struct adf_interface_data data;
	struct state st;
	struct stat sb;
	uint32_t fourcc = 0;
	int r;

	if (!f)
		return -ENOMEM;
	f->intf = f->mem = f->statefd = -1;
	/* The files live beside the display service's socket, in its private directory. */
	r = fl_display_socket_path(path, sizeof(path) - 16);
	if (r < 0) {
		free(f);
		return r;
	}
	slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "fb0.state");
	f->statefd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	strcpy(slash ? slash + 1 : path, "fb0");
	f->mem = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (f->statefd < 0 || f->mem < 0 || fstat(f->mem, &sb) < 0) {
		r = -errno;
		say("cannot open %s: %s", path, strerror(-r));
		fb_free(f);
		return r;
	}
	f->mem_dev = sb.st_dev;
	f->mem_ino = sb.st_ino;
	r = lock_state(f, &st);
	if (r < 0)
		goto fail;
	/* The format the framebuffer has, if it has one: another process may have set it. */
	r = find_display(f, st.magic ? st.fourcc : 0, &fourcc);
	if (r < 0 && st.magic) {
		adf_device_close(&f->dev);
		r = find_display(f, 0, &fourcc);
	}
	if (r < 0)
		goto fail_unlock;
	r = adf_device_attach(&f->dev, f->eng_id, f->intf_id);
	if (r < 0 && r != -EALREADY)
		goto fail_unlock;
	f->intf = adf_interface_open(&f->dev, f->intf_id, O_RDWR);
	if (f->intf < 0) {
		r = f->intf;
		goto fail_unlock;
	}
	r = adf_get_interface_data(f->intf, &data);
	if (r < 0)
		goto fail_unlock;
	if (!data.current_mode.hdisplay || !data.current_mode.vdisplay) {
		adf_free_interface_data(&data);
		say("the display has no current mode");
		r = -ENODEV;
		goto fail_unlock;
	}
	/* Made for another display or mode (or never): made anew. */
	if (!st.magic || st.device != f->dev.id || st.intf != f->intf_id || st.eng != f->eng_id ||
	    memcmp(&st.mode, &data.current_mode, sizeof(st.mode)) || fstat(f->mem, &sb) < 0 ||
	    (uint64_t)sb.st_size < st.size)
		r = fb_init_state(f, &st, &data.current_mode, fourcc, data.width_mm, data.height_mm,
				  f->mem);
	adf_free_interface_data(&data);
	if (r < 0)
		goto fail_unlock;
	r = adf_interface_blank(f->intf, DRM_MODE_DPMS_ON);
	if (r < 0 && r != -EBUSY)
		goto fail_unlock;
	r = unlock_state(f, &st, true);
	if (r < 0)
		goto fail;
	*ret = f;
	return 0;
fail_unlock:
	unlock_state(f, &st, false);
fail:
	fb_free(f);
	return r;
}

static int open_fb(int flags)
{
	struct state st;
	int fd, r;

	enter();
	if (!fb) {
		struct fb *made = NULL;

		r = fb_make(&made);
		if (r < 0) {
			leave();
			errno = -r;
			return -1;
		}
		__atomic_store_n(&fb, made, __ATOMIC_RELEASE);
	}
	fd = fcntl(fb->mem, (flags & O_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
	if (fd >= 0) {
		fb->opens++;
		/* Every open shows the framebuffer, as the helper's. */
		if (lock_state(fb, &st) == 0) {
			post(fb, &st);
			unlock_state(fb, &st, false);
		}
	}
	leave();
	return fd;
}

/* Whether @fd is the framebuffer (any fd of its memory file). Called with the lock held. */
static bool is_ours(int fd)
{
	struct stat st;

	return fb && fd >= 0 && fd != fb->mem && fstat(fd, &st) == 0 && st.st_ino == fb->mem_ino &&
	       st.st_dev == fb->mem_dev;
}

static mode_t mode_of(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

#define DEFINE_OPEN(name)                                        \
	EXPORT int name(const char *path, int flags, ...)        \
	{                                                        \
		static open_fn real;                             \
		va_list ap;                                      \
		mode_t mode;                                     \
                                                                 \
		if (is_fb_path(path))                            \
			return open_fb(flags);                   \
		if (!real)                                       \
			real = (open_fn)dlsym(RTLD_NEXT, #name); \
		va_start(ap, flags);                             \
		mode = mode_of(flags, ap);                       \
		va_end(ap);                                      \
		return real(path, flags, mode);                  \
	}

#define DEFINE_OPENAT(name)                                          \
	EXPORT int name(int dirfd, const char *path, int flags, ...) \
	{                                                            \
		static openat_fn real;                               \
		va_list ap;                                          \
		mode_t mode;                                         \
                                                                     \
		if (is_fb_path(path))                                \
			return open_fb(flags);                       \
		if (!real)                                           \
			real = (openat_fn)dlsym(RTLD_NEXT, #name);   \
		va_start(ap, flags);                                 \
		mode = mode_of(flags, ap);                           \
		va_end(ap);                                          \
		return real(dirfd, path, flags, mode);               \
	}

#define DEFINE_OPEN2(name)                                                          \
	EXPORT int name(const char *path, int flags)                                \
	{                                                                           \
		static int (*real)(const char *, int);                              \
                                                                                    \
		if (is_fb_path(path))                                               \
			return open_fb(flags);                                      \
		if (!real)                                                          \
			real = (int (*)(const char *, int))dlsym(RTLD_NEXT, #name); \
		return real(path, flags);                                           \
	}

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);

DEFINE_OPEN(open)
DEFINE_OPEN(open64)
DEFINE_OPENAT(openat)
DEFINE_OPENAT(openat64)
DEFINE_OPEN2(__open_2)
DEFINE_OPEN2(__open64_2)

/* FBIOPUT_VSCREENINFO: the helper's check_var, then set_par. */
static int put_var(struct fb *f, struct state *st, struct fb_var_screeninfo *v, bool *changed)
{
	struct fb_var_screeninfo want = *v, cur = st->var;
	const struct layout *l = layout_of_var(&want);
	struct adf_overlay_engine_data ed;
	struct drm_mode_modeinfo mode = st->mode;
	bool ok = l && !want.grayscale && !want.nonstd, mode_change;
	int r;

	/* A format the engine scans out, and a framebuffer that fits the memory there is. */
	if (ok) {
		int eng = adf_overlay_engine_open(&f->dev, f->eng_id, O_RDONLY);
		bool listed = false;

		if (eng >= 0 && adf_get_overlay_engine_data(eng, &ed) == 0) {
			for (size_t i = 0; i < ed.n_supported_formats; i++)
				listed |= ed.supported_formats[i] == l->fourcc;
			adf_free_overlay_engine_data(&ed);
		}
		if (eng >= 0)
			libc_close(eng);
		ok = listed && want.xres_virtual >= want.xres && want.yres_virtual >= want.yres &&
		     (uint64_t)want.xres_virtual * (l->bpp / 8) <= st->pitch &&
		     (uint64_t)want.yres_virtual * st->pitch <= st->size &&
		     (uint64_t)want.xoffset + want.xres <= want.xres_virtual &&
		     (uint64_t)want.yoffset + want.yres <= want.yres_virtual;
	}
	/* A size that is one of the interface's modes. */
	mode_change = ok && (want.xres != cur.xres || want.yres != cur.yres);
	if (mode_change) {
		struct adf_interface_data data;

		ok = false;
		if (adf_get_interface_data(f->intf, &data) == 0) {
			for (size_t i = 0; i < data.n_available_modes && !ok; i++)
				if (data.available_modes[i].hdisplay == want.xres &&
				    data.available_modes[i].vdisplay == want.yres) {
					mode = data.available_modes[i];
					ok = true;
				}
			adf_free_interface_data(&data);
		}
	}
	if (!ok) {
		/* The helper keeps only what the timings say, and restores the rest. */
		*v = cur;
		v->activate = want.activate;
		return -EINVAL;
	}
	if ((want.activate & FB_ACTIVATE_MASK) == FB_ACTIVATE_TEST) {
		set_layout(v, l);
		return 0;
	}
	if (mode_change) {
		r = adf_interface_set_mode(f->intf, &mode);
		if (r < 0)
			return r;
		st->mode = mode;
	}
	st->fourcc = l->fourcc;
	st->var.xres_virtual = want.xres_virtual;
	st->var.yres_virtual = want.yres_virtual;
	st->var.xoffset = want.xoffset;
	st->var.yoffset = want.yoffset;
	set_timings(&st->var, &st->mode);
	set_layout(&st->var, l);
	*changed = true;
	r = post(f, st);
	*v = st->var;
	return r;
}

static int fb_ioctl(struct fb *f, struct state *st, unsigned long req, void *arg, bool *changed)
{
	switch (req) {
	case FBIOGET_VSCREENINFO:
		memcpy(arg, &st->var, sizeof(st->var));
		return 0;
	case FBIOPUT_VSCREENINFO:
		return put_var(f, st, arg, changed);
	case FBIOGET_FSCREENINFO: {
		struct fb_fix_screeninfo fix = { .smem_start = 0,
						 .smem_len = st->size,
						 .type = FB_TYPE_PACKED_PIXELS,
						 .visual = FB_VISUAL_TRUECOLOR,
						 .xpanstep = 1,
						 .ypanstep = 1,
						 .line_length = st->pitch,
						 .accel = FB_ACCEL_NONE };

		snprintf(fix.id, sizeof(fix.id), "fenceline");
		memcpy(arg, &fix, sizeof(fix));
		return 0;
	}
	case FBIOPAN_DISPLAY: {
		const struct fb_var_screeninfo *v = arg;

		if ((uint64_t)v->xoffset + st->var.xres > st->var.xres_virtual ||
		    (uint64_t)v->yoffset + st->var.yres > st->var.yres_virtual)
			return -EINVAL;
		st->var.xoffset = v->xoffset;
		st->var.yoffset = v->yoffset;
		*changed = true;
		return post(f, st);
	}
	case FBIOBLANK: {
		/* The helper's mapping of fbdev's blank levels to DPMS. */
		static const uint8_t dpms[] = { DRM_MODE_DPMS_ON, DRM_MODE_DPMS_STANDBY,
						DRM_MODE_DPMS_SUSPEND, DRM_MODE_DPMS_STANDBY,
						DRM_MODE_DPMS_OFF };
		unsigned long level = (unsigned long)arg;
		int r;

		if (level >= sizeof(dpms))
			return -EINVAL;
		r = adf_interface_blank(f->intf, dpms[level]);
		return r == -EBUSY ? 0 : r;
	}
	case FBIOGET_CON2FBMAP: {
		/* Every console is on this framebuffer (fb 0), as on a machine with one. */
		struct fb_con2fbmap *m = arg;

		if (m->console < 1 || m->console > 63)
			return -EINVAL;
		m->framebuffer = 0;
		return 0;
	}
	case FBIOGETCMAP:
	case FBIOPUTCMAP: {
		struct fb_cmap *c = arg;

		if (c->start + c->len > 16 || c->start + c->len < c->start)
			return -EINVAL;
		for (uint32_t i = 0; i < c->len; i++) {
			__u16 *chan[3] = { c->red, c->green, c->blue };

			for (int k = 0; k < 3; k++) {
				if (!chan[k])
					continue;
				if (req == FBIOGETCMAP)
					chan[k][i] = st->cmap[k][c->start + i];
				else
					st->cmap[k][c->start + i] = chan[k][i];
			}
		}
		*changed = req == FBIOPUTCMAP;
		return 0;
	}
	}
	return -ENOTTY;
}

/* FBIO_WAITFORVSYNC: outside the state's lock, which another process may want meanwhile. */
static int wait_vsync(struct fb *f, uint32_t crtc)
{
	struct adf_event *ev = NULL;
	int r;

	if (crtc != 0)
		return -ENODEV; /* one CRTC */
	if (!f->vsync_on) {
		r = adf_set_event(f->intf, ADF_EVENT_VSYNC, true);
		if (r < 0)
			return r;
		f->vsync_on = true;
	}
	do {
		free(ev);
		ev = NULL;
		r = adf_read_event(f->intf, &ev);
	} while (r == 0 && ev->type != ADF_EVENT_VSYNC);
	free(ev);
	return r;
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!libc_ioctl)
		find_libc();
	if (inside || !__atomic_load_n(&fb, __ATOMIC_ACQUIRE))
		return libc_ioctl(fd, req, arg);
	enter();
	if (!is_ours(fd)) {
		leave();
		return libc_ioctl(fd, req, arg);
	}
	if (req == FBIO_WAITFORVSYNC) {
		r = wait_vsync(fb, *(const uint32_t *)arg);
	} else {
		struct state st;
		bool changed = false;

		r = lock_state(fb, &st);
		if (r == 0) {
			r = fb_ioctl(fb, &st, req, arg, &changed);
			unlock_state(fb, &st, changed);
		}
	}
	leave();
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

EXPORT int close(int fd)
{
	if (!libc_close)
		find_libc();
	if (!inside && __atomic_load_n(&fb, __ATOMIC_ACQUIRE)) {
		enter();
		if (is_ours(fd) && --fb->opens <= 0) {
			/* The last one: the display goes, the frame stays on screen. */
			fb_free(fb);
			__atomic_store_n(&fb, NULL, __ATOMIC_RELEASE);
		}
		leave();
	}
	return libc_close(fd);
}

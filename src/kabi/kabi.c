/* SPDX-License-Identifier: MIT */
/*
 * libfenceline-kabi.so: the kernel's sw_sync and sync_file uapi for
 * programs that talk to the kernel directly, on kernels without
 * CONFIG_SW_SYNC. Loaded with LD_PRELOAD (fenceline-run does that), it
 * answers open() of the sw_sync paths with a fenceline timeline fd and
 * the sync ioctls on fenceline fds; every other path, fd and request goes
 * to libc untouched. Uses libfenceline's public and libsync APIs only.
 */
/*
 * With 64-bit file offsets glibc renames open() to open64() (and openat()
 * to openat64()); we define all four, each under its own name.
 */
#undef _FILE_OFFSET_BITS

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "kabi.h"

#define KABI_EXPORT __attribute__((visibility("default")))

static struct fl__kabi_lib lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void find_lib(void)
{
	/*
	 * By its soname (from our RUNPATH or the system's library path, as
	 * a DT_NEEDED entry would be found; the linker drops that entry, as
	 * we name none of its symbols), or the copy already loaded. Global,
	 * as a dependency of a preload is.
	 */
	void *handle = dlopen(FL_KABI_LIBFENCELINE, RTLD_NOW | RTLD_GLOBAL);

	if (!handle) {
		fprintf(stderr, "libfenceline-kabi: cannot load %s: %s\n", FL_KABI_LIBFENCELINE,
			dlerror());
		abort();
	}
	/*
	 * dlsym() on a handle searches that library and its dependencies
	 * only, never the program: these are libfenceline's definitions.
	 */
#define FIND(name)                                                                                 \
	lib.name = (__typeof__(lib.name))dlsym(handle, #name);                                     \
	if (!lib.name) {                                                                           \
		fprintf(stderr, "libfenceline-kabi: %s has no %s\n", FL_KABI_LIBFENCELINE, #name); \
		abort();                                                                           \
	}
	FL_KABI_CALLS(FIND)
#undef FIND
}

const struct fl__kabi_lib *fl__kabi_lib(void)
{
	pthread_once(&lib_once, find_lib);
	return &lib;
}

/* When we are loaded: dlopen() may not be called in a signal handler (a close()). */
__attribute__((constructor)) static void load_lib(void)
{
	fl__kabi_lib();
}

bool fl__kabi_is_sw_sync_path(const char *path)
{
	return path && (strcmp(path, "/sys/kernel/debug/sync/sw_sync") == 0 ||
			strcmp(path, "/dev/sw_sync") == 0);
}

/*
 * Like opening the device: libsync's sw_sync_timeline_create() makes the
 * same timeline (32-bit, named after the opening thread's comm, without
 * O_CLOEXEC); the flag is the caller's to ask for.
 */
static void mark_timeline(int fd, int flags);

static int open_timeline(int flags)
{
	int fd = FL(sw_sync_timeline_create)(), fdflags, err;

	if (fd < 0)
		return fd;
	mark_timeline(fd, flags);
	if (!(flags & O_CLOEXEC))
		return fd;
	fdflags = fcntl(fd, F_GETFD);
	if (fdflags < 0 || fcntl(fd, F_SETFD, fdflags | FD_CLOEXEC) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* The next definition of @name after ours (libc's), looked up once. */
#define REAL(type, name)         \
	static type real_##name; \
	if (!real_##name)        \
	real_##name = (type)dlsym(RTLD_NEXT, #name)

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
typedef int (*ioctl_fn)(int, unsigned long, ...);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*close_fn)(int);

/* The mode argument exists only with O_CREAT or O_TMPFILE. */
static mode_t mode_of(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

#define DEFINE_OPEN(name)                                      \
	KABI_EXPORT int name(const char *path, int flags, ...) \
	{                                                      \
		va_list ap;                                    \
		mode_t mode;                                   \
		REAL(open_fn, name);                           \
                                                               \
		if (fl__kabi_is_sw_sync_path(path))            \
			return open_timeline(flags);           \
		va_start(ap, flags);                           \
		mode = mode_of(flags, ap);                     \
		va_end(ap);                                    \
		return real_##name(path, flags, mode);         \
	}

#define DEFINE_OPENAT(name)                                               \
	KABI_EXPORT int name(int dirfd, const char *path, int flags, ...) \
	{                                                                 \
		va_list ap;                                               \
		mode_t mode;                                              \
		REAL(openat_fn, name);                                    \
                                                                          \
		if (fl__kabi_is_sw_sync_path(path))                       \
			return open_timeline(flags);                      \
		va_start(ap, flags);                                      \
		mode = mode_of(flags, ap);                                \
		va_end(ap);                                               \
		return real_##name(dirfd, path, flags, mode);             \
	}

/* The _FORTIFY_SOURCE entry points, which take no mode. */
#define DEFINE_OPEN2(name)                                                        \
	KABI_EXPORT int name(const char *path, int flags)                         \
	{                                                                         \
		REAL(open2_fn, name);                                             \
		return fl__kabi_is_sw_sync_path(path) ? open_timeline(flags)      \
						      : real_##name(path, flags); \
	}

#define DEFINE_OPENAT2(name)                                                             \
	KABI_EXPORT int name(int dirfd, const char *path, int flags)                     \
	{                                                                                \
		REAL(openat2_fn, name);                                                  \
		return fl__kabi_is_sw_sync_path(path) ? open_timeline(flags)             \
						      : real_##name(dirfd, path, flags); \
	}

/* glibc declares these only under _FORTIFY_SOURCE. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

DEFINE_OPEN(open)
DEFINE_OPEN(open64)
DEFINE_OPENAT(openat)
DEFINE_OPENAT(openat64)
DEFINE_OPEN2(__open_2)
DEFINE_OPEN2(__open64_2)
DEFINE_OPENAT2(__openat_2)
DEFINE_OPENAT2(__openat64_2)

/*
 * libc's ioctl, read, write and close, looked up when we are loaded:
 * write() and close() may be called from a signal handler, where dlsym()
 * may not. Again on first use, for a library constructor that runs first.
 */
static ioctl_fn libc_ioctl;
static read_fn libc_read;
static write_fn libc_write;
static close_fn libc_close;

__attribute__((constructor)) static void find_libc(void)
{
	libc_ioctl = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
	libc_read = (read_fn)dlsym(RTLD_NEXT, "read");
	libc_write = (write_fn)dlsym(RTLD_NEXT, "write");
	libc_close = (close_fn)dlsym(RTLD_NEXT, "close");
}

#define LIBC(name) (libc_##name ? libc_##name : (find_libc(), libc_##name))

int fl__kabi_real_ioctl(int fd, unsigned long request, void *arg)
{
	return LIBC(ioctl)(fd, request, arg);
}

KABI_EXPORT int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;
	int r;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	/* Only sync_file's and sw_sync's requests can be ours. */
	if (_IOC_TYPE(request) == SYNC_IOC_MAGIC || _IOC_TYPE(request) == FL_KABI_SW_SYNC_MAGIC) {
		r = fl__kabi_ioctl(fd, request, arg);
		if (r != FL_KABI_NOT_OURS)
			return r;
	}
	return LIBC(ioctl)(fd, request, arg);
}

/*
 * A sync_file cannot be read (EINVAL: no read op) or written (EBADF: it is
 * opened read-only), nor can the sw_sync file (EINVAL: no read or write
 * op; EBADF for a direction it was not opened for). Ours are sockets,
 * where a read() would block or eat a status record and a write() would
 * reach the fence's or the daemon's end. Checking every fd would cost
 * every read() a syscall, so we check only fds we have seen as fences
 * (made by our ioctls or passed to them) and the timelines opened here:
 * one bit each, until the fd is closed or a check finds the number reused
 * for something else.
 *
 * Closing a sw_sync fd fails its pending fences before close() returns;
 * closing ours, the daemon notices a moment later. So close() of a
 * timeline fd opened here (a bit of its own) waits for the daemon.
 */
#define MARKED_FDS 65536
#define WORD_BITS  (8 * sizeof(unsigned long))
static atomic_ulong fence_bits[MARKED_FDS / WORD_BITS], timeline_bits[MARKED_FDS / WORD_BITS];
/* The timelines opened O_WRONLY (no read) and O_RDONLY (no write). */
static atomic_ulong unreadable_bits[MARKED_FDS / WORD_BITS],
	unwritable_bits[MARKED_FDS / WORD_BITS];

static void mark(atomic_ulong *bits, int fd)
{
	if (fd >= 0 && fd < MARKED_FDS)
		atomic_fetch_or_explicit(&bits[fd / WORD_BITS], 1ul << (fd % WORD_BITS),
					 memory_order_relaxed);
}

/* Clear @fd's bit in @bits; whether it was set. */
static bool unmark(atomic_ulong *bits, int fd)
{
	unsigned long bit = 1ul << ((unsigned int)fd % WORD_BITS);

	if (fd < 0 || fd >= MARKED_FDS ||
	    !(atomic_load_explicit(&bits[fd / WORD_BITS], memory_order_relaxed) & bit))
		return false;
	return atomic_fetch_and_explicit(&bits[fd / WORD_BITS], ~bit, memory_order_relaxed) & bit;
}

static bool marked(const atomic_ulong *bits, int fd)
{
	return fd >= 0 && fd < MARKED_FDS &&
	       (atomic_load_explicit(&bits[fd / WORD_BITS], memory_order_relaxed) &
		(1ul << (fd % WORD_BITS)));
}

void fl__kabi_mark_fence(int fd)
{
	mark(fence_bits, fd);
}

bool fl__kabi_fence_marked(int fd)
{
	return marked(fence_bits, fd);
}

static void mark_timeline(int fd, int flags)
{
	int acc = flags & O_ACCMODE;

	/* Set or clear both: the number may have been a timeline closed behind our back. */
	unmark(unreadable_bits, fd);
	unmark(unwritable_bits, fd);
	if (acc != O_RDONLY && acc != O_RDWR)
		mark(unreadable_bits, fd);
	if (acc != O_WRONLY && acc != O_RDWR)
		mark(unwritable_bits, fd);
	mark(timeline_bits, fd);
}

/*
 * The errno of a read() (@writing false) or write() on @fd if it is a
 * timeline opened here, else 0: EINVAL, or EBADF for a direction it was
 * not opened for (vfs_read()'s and vfs_write()'s order of checks).
 */
static int marked_timeline_error(int fd, bool writing)
{
	uint64_t value;

	if (!marked(timeline_bits, fd))
		return 0;
	if (FL(fl_timeline_fd_get_value)(fd, &value) < 0) {
		unmark(timeline_bits, fd);
		return 0;
	}
	return marked(writing ? unwritable_bits : unreadable_bits, fd) ? EBADF : EINVAL;
}

/* Whether @fd is a fence fd we have seen (then errno is @err). */
static bool is_marked_fence(int fd, int err)
{
	struct fl_fence_info info;

	if (!marked(fence_bits, fd))
		return false;
	if (FL(fl_fence_fd_get_info_flags)(fd, FL_INFO_NO_TIMESTAMPS, &info, NULL, 0) < 0) {
		unmark(fence_bits, fd);
		return false;
	}
	errno = err;
	return true;
}

KABI_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	int err;

	/* sync_file has no read op: EINVAL. */
	if (is_marked_fence(fd, EINVAL))
		return -1;
	err = marked_timeline_error(fd, false);
	if (err) {
		errno = err;
		return -1;
	}
	return LIBC(read)(fd, buf, count);
}

KABI_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	int err;

	/* A sync_file is opened read-only: EBADF. */
	if (is_marked_fence(fd, EBADF))
		return -1;
	err = marked_timeline_error(fd, true);
	if (err) {
		errno = err;
		return -1;
	}
	return LIBC(write)(fd, buf, count);
}

KABI_EXPORT int close(int fd)
{
	int r;

	unmark(fence_bits, fd);
	if (!unmark(timeline_bits, fd))
		return LIBC(close)(fd);
	r = FL(fl_timeline_fd_close)(fd);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

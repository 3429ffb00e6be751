/* SPDX-License-Identifier: MIT */
/*
 * Small helpers every part may use: argument checks, clocks, futexes, fd
 * wrappers and debug logging. Depends on nothing but libc.
 */
#ifndef FL_UTIL_H
#define FL_UTIL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define FL_MIN(a, b)	 ((a) < (b) ? (a) : (b))
#define FL_MAX(a, b)	 ((a) > (b) ? (a) : (b))

/* Check a public entry point's argument; never aborts (style.md §5). */
#define fl_return_if(cond, err)       \
	do {                          \
		if (cond)             \
			return (err); \
	} while (0)

/* Copy a name into a fixed 32-byte field, truncating and NUL-terminating. */
void fl__name_copy(char *dst, size_t size, const char *src);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t fl__now_ns(void);

/*
 * Wait while *word == expected, at most timeout_ns (< 0: forever).
 * Return: 0 when woken or the value differs, -ETIMEDOUT, -EINTR.
 */
int fl__futex_wait(atomic_int *word, int expected, int64_t timeout_ns);
/* Wake every thread waiting on word. */
void fl__futex_wake_all(atomic_int *word);

/*
 * The status record a completed fence fd carries (see src/core/fdsink.c):
 * written once into the end the fd's holders do not have, then that end's
 * write side is shut down. The core writes it, and so does a client that
 * signals a timeline it owns through the daemon (src/client).
 */
#define FL__RECORD_MAGIC 0x31464c46u /* "FLF1" */
struct fl__record {
	uint32_t magic;
	int32_t status;
	uint64_t timestamp_ns;
};

/* fd helpers (src/util/fd.c is the one place that makes raw fd syscalls). */
/* qsort() and bsearch() that take an empty array, NULL or not (src/util/sort.c). */
void fl__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void *fl__search(const void *key, const void *base, size_t n, size_t size,
		 int (*cmp)(const void *, const void *));

/*
 * The daemon's socket path: $FENCELINE_SOCKET, else
 * $XDG_RUNTIME_DIR/fenceline.sock, else /tmp/fenceline-UID/fenceline.sock
 * when that directory is ours with mode 0700, else /run/user/UID or
 * ~/.fenceline (another user may have made /tmp/fenceline-UID first; said
 * once on stderr). Return: 0, -EPERM when no private directory can be had
 * (with a message on stderr), -ENAMETOOLONG past sun_path.
 */
int fl__socket_path(char *buf, size_t cap);
/*
 * The display service's socket path: $FENCELINE_DISPLAY_SOCKET, else in
 * the directory of fl__socket_path() (with $FENCELINE_SOCKET set, that
 * socket's directory) displayd.sock, or displayd-DRIVER[WHERE].sock when
 * $FENCELINE_DISPLAY chooses the output (WHERE's slashes made dashes:
 * displayd-kms-dev-dri-card0.sock). Return: as fl__socket_path(), and
 * -EINVAL for a $FENCELINE_DISPLAY that fl__display_spec_parse() refuses.
 */
int fl__display_socket_path(char *buf, size_t cap);
/*
 * A display choice, "NAME[:WHERE]" ($FENCELINE_DISPLAY, --display):
 * @driver: auto, virtual, window, terminal or kms
 * @where: empty, or an absolute path: a terminal's, or a card's
 *	("kms:card1" is /dev/dri/card1)
 */
struct fl__display_spec {
	char driver[16];
	char where[128];
};
/* Parses @spec into @ret. Return: 0, or -EINVAL (an unknown name, a WHERE the driver does not take). */
int fl__display_spec_parse(const char *spec, struct fl__display_spec *ret);
/* The choices, for a usage message ("auto, virtual, ..."). */
const char *fl__display_spec_names(void);
int fl__socketpair_cloexec(int sv[2]);
/*
 * fl__fd_stat() - @fd's type and permission bits, device and inode, as
 * fstat() encodes them, from what the kernel has cached: never a request
 * to the file's filesystem (statx() with AT_STATX_DONT_SYNC), so an fd on
 * a FUSE or network filesystem whose server does not answer cannot block
 * the caller.
 * Return: 0, or -errno (-EBADF when @fd is not open).
 */
struct fl__fd_stat {
	mode_t mode;
	dev_t dev;
	ino_t ino;
};
int fl__fd_stat(int fd, struct fl__fd_stat *ret);
/* fl__fd_inode() - the inode of socket @fd. Return: 0, -errno, or -ENOTTY for a non-socket. */
int fl__fd_inode(int fd, dev_t *ret_dev, ino_t *ret_ino);
/*
 * fl__fd_identity() - the identity of @fd as a possible fenceline fd: the
 * inode of a socket (a daemon's fd) or of a pipe with mode 0 (an
 * in-process fd; see src/core/fdsink.c), the same in every dup and every
 * process. *@ret_pipe (may be NULL) says which.
 * Return: 0, -EBADF, or -ENOTTY for any other kind of file.
 */
int fl__fd_identity(int fd, dev_t *ret_dev, ino_t *ret_ino, bool *ret_pipe);
/*
 * fl__fd_identity_of() - the same from a stat already taken: @stat_r is
 * fl__fd_stat()'s return, *@st what it filled in (for a caller that keeps
 * one statx() per fd, the daemon's request memo).
 */
int fl__fd_identity_of(int stat_r, const struct fl__fd_stat *st, dev_t *ret_dev, ino_t *ret_ino,
		       bool *ret_pipe);
void fl__close(int fd);
/*
 * fl__pipe_write_nosignal() - write @len bytes of @buf into pipe end @fd
 * with pwritev2()'s RWF_NOSIGNAL (Linux 6.18): a pipe whose readers are all
 * gone fails with EPIPE and raises no SIGPIPE, with no signal mask around
 * the write (two syscalls, and the first one before the write that wakes
 * the pipe's pollers). Return: the bytes written, -errno, or -EOPNOTSUPP
 * when the kernel lacks the flag (remembered: later calls fail at once);
 * the caller then writes with SIGPIPE blocked.
 */
ssize_t fl__pipe_write_nosignal(int fd, const void *buf, size_t len);
/* Fill @buf with random bytes (getrandom). Return: 0 or -errno. */
int fl__random(void *buf, size_t len);
/*
 * The fd-table reserve (see fd.c). fl__fd_reserve_init() reads the table size
 * (call it off the hot path). fl__fd_grow_target(fd) says whether a new fd
 * warrants growing the table: it returns the size to grow to, and then the
 * caller must make sure fl__fd_grow() runs (in another thread), or 0.
 */
void fl__fd_reserve_init(void);
unsigned int fl__fd_grow_target(int fd);
void fl__fd_grow(unsigned int target);

/*
 * pthread_create() with every signal blocked in the new thread, so that the
 * application's signal handlers never run on a fenceline thread; returns
 * once the thread runs @fn. A thread's start allocates (the C library's, a
 * sanitizer's), and an allocator without fork handlers (gcc 12's ASan)
 * left its lock taken in a child the program forked right then, whose
 * first allocation hung (the client-hostile test that forks while the
 * library's watcher runs, about 1 run in 45 under load).
 */
#include <pthread.h>
int fl__thread_start(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/*
 * Debug logging, enabled by FENCELINE_DEBUG=<topic>[,<topic>...] or "all"
 * (read once at load time). FL_LOG costs one load of a global when off.
 */
extern bool fl__log_on;
bool fl__log_enabled(const char *topic);
void fl__log(const char *topic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define FL_LOG(topic, ...)                           \
	do {                                         \
		if (fl__log_on)                      \
			fl__log(topic, __VA_ARGS__); \
	} while (0)

/*
 * USDT probes (provider "fenceline"; docs/tracing.md lists them). Built with
 * sys/sdt.h, each is a nop and an ELF note, so a probe nobody attached to
 * costs that nop; bpftrace or perf turn it into a trap while they trace.
 */
#ifdef FL_HAVE_SDT
#include <sys/sdt.h>
#define FL_PROBE1(name, a)	    DTRACE_PROBE1(fenceline, name, a)
#define FL_PROBE2(name, a, b)	    DTRACE_PROBE2(fenceline, name, a, b)
#define FL_PROBE3(name, a, b, c)    DTRACE_PROBE3(fenceline, name, a, b, c)
#define FL_PROBE4(name, a, b, c, d) DTRACE_PROBE4(fenceline, name, a, b, c, d)
#else
#define FL_PROBE1(name, a)	    ((void)0)
#define FL_PROBE2(name, a, b)	    ((void)0)
#define FL_PROBE3(name, a, b, c)    ((void)0)
#define FL_PROBE4(name, a, b, c, d) ((void)0)
#endif

#endif /* FL_UTIL_H */

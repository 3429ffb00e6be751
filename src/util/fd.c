/* SPDX-License-Identifier: MIT */
/*
 * Raw fd syscalls (src/proto/transport.c makes sendmsg/recvmsg), and the fd-table reserve.
 *
 * Why the reserve: Linux doubles a process's fd table when an fd lands past
 * its end, and when the table is shared by several threads it waits for an
 * RCU grace period first (expand_fdtable() -> synchronize_rcu()). The
 * thread creating the fd stalls for milliseconds. Threads whose new fd fits
 * the current table are not held up while a resize is in progress, so we
 * grow the table from a short-lived helper thread as soon as fds reach half
 * of it: the stall lands on the helper, not on whoever creates fences. The
 * helper is the core's fd watcher thread (src/core/fdsink.c), which exists
 * whenever fenceline fds do: it asks fl__fd_grow_target() on every new fd
 * and, when told to, calls fl__fd_grow() in its own thread.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fenceline/fd.h>

#include "util.h"

int fl__socketpair_cloexec(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	return 0;
}

/*
 * The cached attributes only: fstat() on a FUSE or NFS file whose cached
 * attributes have expired asks the server and waits for its answer, and a
 * client of the daemon may send such an fd on purpose (docs/architecture.md).
 * The type, device and inode of an open file never change, so nothing is
 * lost by not refreshing them.
 */
int fl__fd_stat(int fd, struct fl__fd_stat *ret)
{
	struct statx stx;

	if (fd < 0)
		return -EBADF;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MODE | STATX_INO,
		  &stx) < 0)
		return -errno;
	ret->mode = stx.stx_mode;
	/* As fstat() encodes it: identities from both are compared. */
	ret->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	ret->ino = (ino_t)stx.stx_ino;
	return 0;
}

int fl__fd_inode(int fd, dev_t *ret_dev, ino_t *ret_ino)
{
	struct fl__fd_stat st;
	int r = fl__fd_stat(fd, &st);

	if (r < 0)
		return r;
	if (!S_ISSOCK(st.mode))
		return -ENOTTY;
	*ret_dev = st.dev;
	*ret_ino = st.ino;
	return 0;
}

int fl__fd_identity_of(int stat_r, const struct fl__fd_stat *st, dev_t *ret_dev, ino_t *ret_ino,
		       bool *ret_pipe)
{
	if (stat_r < 0)
		return stat_r == -EBADF ? -EBADF : -ENOTTY;
	if (!S_ISSOCK(st->mode) && !(S_ISFIFO(st->mode) && (st->mode & 07777) == 0))
		return -ENOTTY;
	*ret_dev = st->dev;
	*ret_ino = st->ino;
	if (ret_pipe)
		*ret_pipe = S_ISFIFO(st->mode);
	return 0;
}

int fl__fd_identity(int fd, dev_t *ret_dev, ino_t *ret_ino, bool *ret_pipe)
{
	struct fl__fd_stat st;
	int r = fl__fd_stat(fd, &st);

	return fl__fd_identity_of(r, &st, ret_dev, ret_ino, ret_pipe);
}

void fl__close(int fd)
{
	/* Never retry close() on Linux: the fd is gone even on EINTR. */
	if (fd >= 0)
		close(fd);
}

#ifndef RWF_NOSIGNAL
#define RWF_NOSIGNAL 0x00000100
#endif
static atomic_bool no_rwf_nosignal;

ssize_t fl__pipe_write_nosignal(int fd, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t n;

	if (atomic_load_explicit(&no_rwf_nosignal, memory_order_relaxed))
		return -EOPNOTSUPP;
	n = pwritev2(fd, &iov, 1, -1, RWF_NOSIGNAL);
	if (n >= 0)
		return n;
	/* An unknown flag: EOPNOTSUPP (glibc's emulation says the same, ENOTSUP). */
	if (errno == EOPNOTSUPP || errno == ENOSYS) {
		atomic_store_explicit(&no_rwf_nosignal, true, memory_order_relaxed);
		return -EOPNOTSUPP;
	}
	return -errno;
}

/* Current size of the fd table (FDSize in /proc/self/status), or -1. */
/* A field of /proc/self/status ("FDSize:", "Threads:"), or -1. */
static int read_status_field(const char *field)
{
	char line[128];
	int value = -1;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, n)) {
			value = atoi(line + n);
			break;
		}
	}
	fclose(f);
	return value;
}

static int read_fdsize(void)
{
	return read_status_field("FDSize:");
}

static unsigned int soft_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1u << 20;
	return rl.rlim_cur > (1u << 30) ? (1u << 30) : (unsigned int)rl.rlim_cur;
}

FL_EXPORT int fl_fd_reserve(unsigned int count)
{
	int size, probe, fd;
	unsigned int limit = soft_limit();

	if (count == 0)
		return read_fdsize() < 0 ? 0 : read_fdsize();
	if (count > limit)
		count = limit;
	size = read_fdsize();
	if (size >= 0 && (unsigned int)size >= count)
		return size;
	probe = eventfd(0, EFD_CLOEXEC);
	if (probe < 0)
		return -errno;
	/* Placing an fd at count-1 makes the kernel size the table for it. */
	fd = fcntl(probe, F_DUPFD_CLOEXEC, (int)count - 1);
	if (fd < 0) {
		int err = -errno;

		close(probe);
		return err == -EINVAL ? -EMFILE : err;
	}
	close(fd);
	close(probe);
	size = read_fdsize();
	return size < 0 ? (int)count : size;
}

static atomic_int table_size; /* 0: unknown, or the reserve is disabled */
static atomic_bool growing;

/* Below this size the table fills faster than a growth completes: grow it at once. */
#define FL_FD_TABLE_FLOOR 1024u

static bool reserve_disabled(void)
{
	const char *env = getenv("FENCELINE_FD_RESERVE");

	return env && !strcmp(env, "0");
}

/*
 * At load time most programs still have one thread, and then growing the
 * table costs nothing: do it now. In a process that already has threads
 * (a late dlopen()) leave it to the watcher rather than stall the loader.
 */
__attribute__((constructor)) static void reserve_at_load(void)
{
	if (reserve_disabled() || read_status_field("Threads:") != 1)
		return;
	fl_fd_reserve(FL_MIN(FL_FD_TABLE_FLOOR, soft_limit()));
}

void fl__fd_reserve_init(void)
{
	int size;

	if (atomic_load(&table_size) || reserve_disabled())
		return;
	size = read_fdsize();
	/*
	 * A burst of fd creation fills the upper half of a 64- or 128-slot
	 * table in about one RCU grace period, outrunning a growth started at
	 * the half-way mark; a 1024-slot table (8 KiB) costs nothing and gives
	 * the watcher time.
	 */
	if (size > 0 && (unsigned int)size < FL_FD_TABLE_FLOOR) {
		int grown = fl_fd_reserve(FL_MIN(FL_FD_TABLE_FLOOR, soft_limit()));

		if (grown > size)
			size = grown;
	}
	atomic_store(&table_size, size);
}

unsigned int fl__fd_grow_target(int fd)
{
	int size = atomic_load_explicit(&table_size, memory_order_relaxed);
	unsigned int target;

	if (size <= 0 || fd < size / 2)
		return 0;
	target = FL_MIN((unsigned int)size * 2, soft_limit());
	if (target <= (unsigned int)size || atomic_exchange(&growing, true))
		return 0;
	return target;
}

void fl__fd_grow(unsigned int target)
{
	int size = fl_fd_reserve(target);

	if (size > 0)
		atomic_store(&table_size, size);
	atomic_store(&growing, false);
}

int fl__random(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

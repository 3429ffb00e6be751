/* SPDX-License-Identifier: MIT */
/*
 * stat() and access() of the sw_sync paths. Test suites look before they
 * open: the kernel's selftests skip themselves unless stat() of the debugfs
 * file succeeds. We describe what debugfs shows (a root-owned regular file,
 * mode 0644, size 0); every other path goes to libc.
 */
#undef _FILE_OFFSET_BITS

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kabi.h"

#define KABI_EXPORT  __attribute__((visibility("default")))

#define SW_SYNC_MODE (S_IFREG | 0644)

#define REAL(type, name)         \
	static type real_##name; \
	if (!real_##name)        \
	real_##name = (type)dlsym(RTLD_NEXT, #name)

/* One filler for struct stat and struct stat64 (their fields share names). */
#define FILL_STAT(st)                           \
	do {                                    \
		memset((st), 0, sizeof(*(st))); \
		(st)->st_mode = SW_SYNC_MODE;   \
		(st)->st_nlink = 1;             \
		(st)->st_blksize = 4096;        \
	} while (0)

typedef int (*stat_fn)(const char *, struct stat *);
typedef int (*stat64_fn)(const char *, struct stat64 *);
typedef int (*fstatat_fn)(int, const char *, struct stat *, int);
typedef int (*fstatat64_fn)(int, const char *, struct stat64 *, int);
typedef int (*xstat_fn)(int, const char *, struct stat *);
typedef int (*xstat64_fn)(int, const char *, struct stat64 *);
typedef int (*fxstatat_fn)(int, int, const char *, struct stat *, int);
typedef int (*fxstatat64_fn)(int, int, const char *, struct stat64 *, int);
typedef int (*statx_fn)(int, const char *, int, unsigned int, struct statx *);
typedef int (*access_fn)(const char *, int);
typedef int (*faccessat_fn)(int, const char *, int, int);

#define DEFINE_STAT(name, st_type, fn_type)                        \
	KABI_EXPORT int name(const char *path, struct st_type *st) \
	{                                                          \
		REAL(fn_type, name);                               \
		if (!fl__kabi_is_sw_sync_path(path))               \
			return real_##name(path, st);              \
		FILL_STAT(st);                                     \
		return 0;                                          \
	}

#define DEFINE_FSTATAT(name, st_type, fn_type)                                           \
	KABI_EXPORT int name(int dirfd, const char *path, struct st_type *st, int flags) \
	{                                                                                \
		REAL(fn_type, name);                                                     \
		if (!fl__kabi_is_sw_sync_path(path))                                     \
			return real_##name(dirfd, path, st, flags);                      \
		FILL_STAT(st);                                                           \
		return 0;                                                                \
	}

/* Before glibc 2.33 programs called these versioned wrappers instead. */
#define DEFINE_XSTAT(name, st_type, fn_type)                                \
	KABI_EXPORT int name(int ver, const char *path, struct st_type *st) \
	{                                                                   \
		REAL(fn_type, name);                                        \
		if (!fl__kabi_is_sw_sync_path(path))                        \
			return real_##name(ver, path, st);                  \
		FILL_STAT(st);                                              \
		return 0;                                                   \
	}

#define DEFINE_FXSTATAT(name, st_type, fn_type)                                                   \
	KABI_EXPORT int name(int ver, int dirfd, const char *path, struct st_type *st, int flags) \
	{                                                                                         \
		REAL(fn_type, name);                                                              \
		if (!fl__kabi_is_sw_sync_path(path))                                              \
			return real_##name(ver, dirfd, path, st, flags);                          \
		FILL_STAT(st);                                                                    \
		return 0;                                                                         \
	}

int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

DEFINE_STAT(stat, stat, stat_fn)
DEFINE_STAT(stat64, stat64, stat64_fn)
DEFINE_STAT(lstat, stat, stat_fn)
DEFINE_STAT(lstat64, stat64, stat64_fn)
DEFINE_FSTATAT(fstatat, stat, fstatat_fn)
DEFINE_FSTATAT(fstatat64, stat64, fstatat64_fn)
DEFINE_XSTAT(__xstat, stat, xstat_fn)
DEFINE_XSTAT(__xstat64, stat64, xstat64_fn)
DEFINE_XSTAT(__lxstat, stat, xstat_fn)
DEFINE_XSTAT(__lxstat64, stat64, xstat64_fn)
DEFINE_FXSTATAT(__fxstatat, stat, fxstatat_fn)
DEFINE_FXSTATAT(__fxstatat64, stat64, fxstatat64_fn)

KABI_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	REAL(statx_fn, statx);
	if (!fl__kabi_is_sw_sync_path(path))
		return real_statx(dirfd, path, flags, mask, stx);
	memset(stx, 0, sizeof(*stx));
	stx->stx_mask = STATX_BASIC_STATS & ~(unsigned int)STATX_BLOCKS;
	stx->stx_mode = SW_SYNC_MODE;
	stx->stx_nlink = 1;
	stx->stx_blksize = 4096;
	return 0;
}

/* Mode 0644 and owned by root: everyone may read, only root may write. */
static int sw_sync_access(int mode)
{
	if (!(mode & X_OK) && (!(mode & W_OK) || geteuid() == 0))
		return 0;
	errno = EACCES;
	return -1;
}

KABI_EXPORT int access(const char *path, int mode)
{
	REAL(access_fn, access);
	return fl__kabi_is_sw_sync_path(path) ? sw_sync_access(mode) : real_access(path, mode);
}

KABI_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	REAL(faccessat_fn, faccessat);
	return fl__kabi_is_sw_sync_path(path) ? sw_sync_access(mode)
					      : real_faccessat(dirfd, path, mode, flags);
}

/* SPDX-License-Identifier: MIT */
/*
 * Knowing when nobody holds a buffer any more (docs/heap.md, "Reclaim").
 *
 * A carveout's range comes back at fl_heap_buffer_free(), but ION users close()
 * their buffers instead, and a buffer may live on in a mapping or in
 * another process. The heap must not keep a reference itself (that would
 * keep every buffer alive), and a process cannot see the open file
 * descriptions of others: /proc shows only processes it may trace, and a
 * buffer sent to another user's process would be missed. The kernel knows:
 * a memfd has no name, so when its last file reference goes (the last fd
 * in any process, the last mapping) its dentry goes, and inotify drops
 * every watch on the inode (IN_IGNORED). A watch is no reference: it
 * neither keeps the inode nor its pages. So each carveout buffer gets a
 * watch when it is made, and a buffer whose watch is gone is held by
 * nobody, in any process of any user.
 *
 * Which watches are alive is read from the inotify fd's fdinfo (one line
 * per watch), not pieced together from events: events can overflow the
 * queue, the list cannot. The events are only counted, so that a heap does
 * not read the list again while nothing has died since it last did.
 *
 * One inotify instance per process (the instances a user may have are
 * few), shared by every heap, made with the first watch and closed when
 * the last heap that watched is closed: closing an instance that has held
 * watches waits for the kernel to retire them (about 10 ms here), too much
 * for every time the last buffer of a heap is freed. In the child of a
 * fork() it is replaced: the child's copy of the fd is the parent's
 * instance, whose watches only the parent may remove.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "heap-internal.h"

/* Drain the events (only counted) after this many new watches. */
#define DRAIN_EVERY 1024

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static int watch_fd = -1;
static bool watch_failed; /* inotify_init1() failed: no watches until the users are 0 again */
static unsigned int watch_users; /* open heaps that have watched */
static unsigned int watch_gen = 1; /* of watch_fd; a wd of another generation is no watch */
static unsigned int adds_since_drain;
static uint64_t deaths; /* IN_IGNORED and overflows seen so far */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Held across fork(), so that the child's copy of the state is whole. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&watch_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&watch_lock);
}

/*
 * Under watch_lock: forget the inotify instance. Its watches go with it, and
 * the records still naming them keep an old generation, so none is taken
 * for one of a later instance.
 */
static void watch_drop_locked(void)
{
	if (watch_fd >= 0)
		close(watch_fd);
	watch_fd = -1;
	watch_failed = false;
	watch_gen++;
}

static void atfork_child(void)
{
	/* The parent's watches are not ours. */
	watch_drop_locked();
	pthread_mutex_unlock(&watch_lock);
}

static void atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Reads what is queued, counting the deaths. Under watch_lock. */
static void drain_locked(void)
{
	/* Aligned as the kernel writes the records. */
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	adds_since_drain = 0;
	while (watch_fd >= 0 && (n = read(watch_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p + sizeof(struct inotify_event) <= buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			if (e->mask & (IN_IGNORED | IN_Q_OVERFLOW))
				deaths++;
			p += sizeof(*e) + e->len;
		}
	}
}

void fl__heap_watch_add(struct fl_heap *heap, int fd, struct fl_heap_watch *ret)
{
	char path[32];
	int ifd;

	ret->wd = -1;
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&watch_lock);
	if (!heap->watching) {
		heap->watching = true;
		watch_users++;
	}
	if (watch_fd < 0 && !watch_failed) {
		watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		watch_failed = watch_fd < 0;
	}
	ifd = watch_fd;
	ret->gen = watch_gen;
	if (ifd >= 0 && ++adds_since_drain >= DRAIN_EVERY)
		drain_locked();
	pthread_mutex_unlock(&watch_lock);
	if (ifd < 0)
		return;
	/*
	 * The fd's inode, through its /proc link: a memfd has no other path.
	 * Without /proc, or past the user's max_user_watches, no watch: the
	 * buffer is never reclaimed, only freed.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ret->wd = inotify_add_watch(ifd, path, IN_DELETE_SELF);
}

void fl__heap_watch_put(struct fl_heap *heap)
{
	if (!heap->watching)
		return;
	heap->watching = false;
	pthread_mutex_lock(&watch_lock);
	if (--watch_users == 0)
		watch_drop_locked();
	pthread_mutex_unlock(&watch_lock);
}

uint64_t fl__heap_watch_deaths(void)
{
	uint64_t n;

	pthread_mutex_lock(&watch_lock);
	drain_locked();
	n = deaths;
	pthread_mutex_unlock(&watch_lock);
	return n;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int fl__heap_watch_live(struct fl_heap_watch_live *ret)
{
	char path[48], *line = NULL;
	size_t cap = 0, len = 0, linecap = 0;
	int *wds = NULL, ifd;
	FILE *f;

	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&watch_lock);
	drain_locked();
	ifd = watch_fd;
	ret->gen = watch_gen;
	ret->deaths = deaths;
	pthread_mutex_unlock(&watch_lock);
	if (ifd < 0)
		return -ENOENT;
	/*
	 * Read after the deaths were counted: a watch that died before is
	 * missing from the list; one that dies later is counted next time.
	 */
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", ifd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &linecap, f) > 0) {
		unsigned int wd;

		/* "inotify wd:%x ino:%lx sdev:%x mask:%x ..." (fs/notify/fdinfo.c) */
		if (sscanf(line, "inotify wd:%x ", &wd) != 1)
			continue;
		if (len == cap) {
			size_t ncap = cap ? 2 * cap : 256;
			int *n = realloc(wds, ncap * sizeof(*n));

			if (!n) {
				free(wds);
				free(line);
				fclose(f);
				return -ENOMEM;
			}
			wds = n;
			cap = ncap;
		}
		wds[len++] = (int)wd;
	}
	free(line);
	fclose(f);
	if (len)
		qsort(wds, len, sizeof(*wds), cmp_int);
	ret->wds = wds;
	ret->n = len;
	return 0;
}

bool fl__heap_watch_is_live(const struct fl_heap_watch_live *live, const struct fl_heap_watch *w)
{
	/* No watch, or one of another instance: we cannot tell, so it lives. */
	if (w->wd < 0 || w->gen != live->gen)
		return true;
	return live->n && bsearch(&w->wd, live->wds, live->n, sizeof(*live->wds), cmp_int) != NULL;
}

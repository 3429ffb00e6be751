/* SPDX-License-Identifier: MIT */
/*
 * Fence and timeline file descriptors.
 *
 * A fence fd is the read end of a mode-0 pipe; the core keeps the only
 * write end (the "sink"), so no holder can write into it, shut it down or
 * make it ready early. When the fence completes, the core stores the status
 * in the sink, writes the 16-byte status record into the pipe (twice, in
 * one write, for a success) and closes the write end: the end-of-file is
 * the readiness, sticky for every holder in every process. In this process
 * the status comes from the sink, found by the fd's inode, never from bytes
 * in the fd; another process reads it from the daemon's status page when
 * the daemon made the fd (src/util/statuspage.h: its pipe fences are
 * published there), else reads the records without consuming them.
 * Before completion the last close of the read end shows as POLLERR on
 * the write end: a new fence's is polled by sweeps of the fresh list (see
 * fresh_head), one that lived a while is in the watcher's epoll set. After
 * completion nothing shows it, so every read end sits in a registry epoll
 * set, from its birth, that a sweep of its fdinfo reads (see done_head).
 * A watcher thread does the releases (in a host that asked for it, its
 * own loop does: fl__watcher_host_fd()). A strong sink's release drops its
 * fence reference; for a pending fence nothing else needs, that is the
 * last one (fl_fence_unref() drops the fence's own with it), and the
 * fence and its points are freed, as a kernel sync_pt is.
 * FENCELINE_FD_KIND=socket gives the old AF_UNIX socket pairs, whose
 * record holders read with MSG_PEEK. The daemon's fences of a timeline's
 * owner are pipes too, whose only write end the owner keeps
 * (fl__fence_pipe_give(); docs/architecture.md).
 *
 * A timeline fd is a pipe too, without records: the sink holds a timeline
 * handle, dropped when the last copy of the fd is closed, which is what
 * kills a timeline whose fd was closed even if nobody calls us again.
 *
 * fds are identified by the (st_dev, st_ino) of the user's end, which is
 * the same for every dup and in every process.
 *
 * The same watcher serves drivers: fl_timeline_watch_fd() registers a
 * driver's fd (a "watch", not in the table), and when it polls readable the
 * watcher signals the driver's timeline.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "core.h"
#include "host.h"
#include "statuspage.h"

enum sink_kind { SINK_FENCE, SINK_TIMELINE, SINK_WATCH };

struct fl__sink {
	/*
	 * The core's end; -1 in a forked child, and for a pipe fence once it
	 * completed (set under the fence lock: the completion closes it).
	 */
	int fd;
	dev_t dev;
	ino_t ino;
	enum sink_kind kind;
	bool strong; /* holds a reference on fence (or a timeline handle) */
	bool on_fence_list; /* on fence->sinks, under fence->lock */
	bool adopted; /* a host's pair: others may hold this end too (signal ends) */
	bool pipe; /* fd is a pipe's write end, the user's fd its read end */
	bool inherited; /* a forked child's copy: the objects are the parent's */
	bool on_done; /* on the done list, under sink_lock */
	bool on_fresh; /* on the fresh list, under sink_lock */
	bool fd_lost; /* fd is no longer our write end: never close it (claimer only) */
	/*
	 * In the status page (a host's fl__fence_pipe_new() with a page);
	 * cleared, for a fence's sink under its lock, by the release.
	 */
	bool published;
	bool given; /* its only write end is the owner's (fl__fence_pipe_give()), under sink_lock */
	uint64_t cookie; /* the host's name for it, with given */
	struct fl_fence *fence; /* may be NULL: a weak sink whose fence is gone */
	struct fl_timeline *tl;
	struct fl__sink *next; /* fence->sinks, under fence->lock */
	struct fl__sink *hash_next; /* under sink_lock */
	struct fl__sink *done_prev, *done_next; /* the done list, under sink_lock */
	struct fl__sink *fresh_prev, *fresh_next; /* the fresh list, under sink_lock */
	fl__host_release_fn release; /* host accounting, may be NULL */
	void *owner;
	uint64_t key; /* epoll data: slot and generation (see slot_claim()) */
	uint64_t seq; /* creation order, for the sweep */
	/*
	 * A pipe fence's status, stored before its fd becomes ready; its
	 * timestamp is the fence's (fl_fence_fd_get_info() finds the fence).
	 */
	atomic_int status;
};

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * A forked child closes the write ends it finds in the table (see
 * atfork_child()); a copy it cannot find would hold its fence's
 * end-of-file back for as long as the child lives. So a write end is never
 * open outside the table while fork() copies the fd table: a thread is
 * "busy" from pipe2() (or socketpair()) until the sink is in the table,
 * and from a sink's leaving it until its fd is closed, and
 * atfork_prepare() waits until no thread is. @fork_busy counts the busy
 * threads, @fork_pending the fork()s in progress; a thread becomes busy
 * only while none is (it waits otherwise, so a stream of threads making
 * fds cannot starve a fork()). Each side writes its count and then reads
 * the other's, all seq_cst, so one of them sees the other. Not a pthread
 * rwlock: a forked child cannot release one that its parent's thread
 * write-locked (glibc knows a writer by its thread id). Entered after a
 * fence lock and before sink_lock; never by a thread already busy.
 */
static atomic_int fork_busy, fork_pending;

static void fork_guard_exit(void)
{
	if (atomic_fetch_sub(&fork_busy, 1) == 1 && atomic_load(&fork_pending))
		fl__futex_wake_all(&fork_busy);
}

static void fork_guard_enter(void)
{
	for (;;) {
		int p;

		atomic_fetch_add(&fork_busy, 1);
		if (!atomic_load(&fork_pending))
			return;
		fork_guard_exit();
		while ((p = atomic_load(&fork_pending)) != 0)
			(void)fl__futex_wait(&fork_pending, p, -1);
	}
}
static struct fl__sink **table;
static size_t table_size, table_count;

/*
 * Epoll data is a slot handle, not a pointer: a sink can be released by
 * more than one path (its write end's EPOLLERR, harvested by the watcher or
 * by a reaping thread, or a sweep of completed pipe fences), and an event
 * harvested by one may still be in hand when another released the sink.
 * The handle's generation no longer matches then, and the event is
 * dropped. Slot 0 is the watcher's eventfd. Under sink_lock.
 */
static struct fl__sink **slots;
static uint32_t *slot_gen;
static uint32_t slot_cap, slot_used, *slot_free, slot_nfree;

/*
 * Completed pipe fences whose fd may still be open somewhere. Their write
 * end is closed (that is the fd's readiness), so nothing tells us when the
 * last holder closes the read end; instead the read end sits in a second
 * epoll set (@reg_fd) that nobody waits on, and the kernel drops it from
 * there when the file is released. A sweep reads the set's items from
 * /proc/self/fdinfo and releases the sinks whose read end is gone, each
 * time the list has doubled since the last sweep (amortized O(1) a fence),
 * and when the watcher would otherwise idle. Under sink_lock.
 */
static struct fl__sink *done_head;
static size_t done_count, done_after_sweep;
/*
 * The fds the last sweep read (every open pipe fence's, pending ones too):
 * what the next one costs. The sweep waits for as many completions as half
 * of them, so a sweep costs O(1) a completed fence, however many pending
 * fences are held (a sweep every 64 completions read all 8000 held fds: 57%
 * of a loop of fences made, signalled and closed beside them).
 */
static size_t done_sweep_fds;
/*
 * Pending pipe fences that are in no epoll set we wait on. Watching each
 * write end for EPOLLERR (its last reader gone) would cost an epoll_ctl()
 * a fence and a wake-up of the watcher at every close; most fence fds are
 * closed soon after they are made. So a new pipe fence only goes on this
 * list, and a sweep polls the listed write ends at once for POLLERR: the
 * making thread each time the list doubled since the last sweep (and when
 * fds ran out), so closed fds come back at the pace they are closed; and
 * the watcher (or a host's loop) every WATCHER_FRESH_MS, which puts the
 * ones that survived a whole period in its epoll set, where a long-lived
 * fence is released as soon as its last fd is closed, as before. Under
 * sink_lock.
 */
static struct fl__sink *fresh_head;
static size_t fresh_count, fresh_after_sweep;
static uint64_t sink_seq;
static int reg_fd = -1;
/*
 * The read ends of pipe fences whose write end may go to a timeline's
 * owner (fl__fence_pipe_end()), in an epoll set that nobody waits on
 * either: each one's EPOLLHUP (every write end closed) waits on its ready
 * list until the host looks (fl__fence_pipe_ends_check()). Waiting on it
 * would wake the host at every owner's signal, and the host would then
 * compete for a CPU with the waiters that signal woke. A host's, made with
 * its watcher; under sink_lock.
 */
static int end_fd = -1;
/*
 * The watcher waits with no timeout: nothing would make it sweep. The
 * first completion that goes on the done list then wakes it (once: it
 * then waits with the sweep's timeout). Under sink_lock.
 */
static bool watcher_forever;
/*
 * Set once this process made a pipe fd or was asked about one:
 * fl_fence_fd_get_status() then looks at the kind first.
 */
static bool pipes_made;
/*
 * 0 unknown, 1 pipes, 2 pipes for timelines only (no /proc/self/fdinfo for
 * the sweep), -1 sockets only (FENCELINE_FD_KIND=socket).
 */
static int pipes_ok;
static size_t watch_count; /* fl_timeline_watch_fd() registrations not yet fired */
static int epfd = -1;
static int wake_fd = -1; /* wakes the watcher to grow the fd table */
static atomic_uint grow_target;
static bool watcher_running;
/* fl__watcher_host_fd(): the host's loop runs the watcher, no thread. */
static bool host_driven;

/* How long the watcher stays after the last fenceline fd is closed. */
#define WATCHER_LINGER_MS 100
static bool atfork_done;

/*
 * Sinks made since the epoll set's ready list was last drained. The watcher
 * is one thread among the program's: threads that make and close fds
 * faster than it runs would pile up closed fds until EMFILE. So every
 * REAP_EVERY new sinks, the thread making one reaps what is ready itself,
 * and closed fds come back at the pace they are closed.
 */
#define REAP_EVERY 64
static atomic_uint unreaped;

static bool use_pipes(enum sink_kind kind);
static void write_record(int fd, const struct fl__record *rec);
static bool attach_locked(struct fl_fence *f, struct fl__sink *s, bool queue);
static void attach(struct fl_fence *f, struct fl__sink *s);

struct fl__sink *fl__sink_next(struct fl__sink *s)
{
	return s->next;
}

void fl__sink_set_next(struct fl__sink *s, struct fl__sink *next)
{
	s->next = next;
	s->on_fence_list = next != NULL;
}

/* Under f->lock: take @s off @f's list of sinks waiting for a record, if it is on it. */
static void sink_unlink_locked(struct fl_fence *f, struct fl__sink *s)
{
	struct fl__sink **pp = &f->sinks;

	if (!s->on_fence_list)
		return;
	while (*pp != s)
		pp = &(*pp)->next;
	*pp = s->next;
	s->on_fence_list = false;
}

static size_t bucket(dev_t dev, ino_t ino, size_t size)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return (size_t)(h >> 17) & (size - 1);
}

/* Under sink_lock. */
static int hash_insert(struct fl__sink *s)
{
	if (table_count + 1 > table_size / 2) {
		/*
		 * Rehashing runs on the export path under the lock; start big
		 * enough (8 KiB) that a process under the default 1024-fd limit
		 * never rehashes.
		 */
		size_t size = table_size ? table_size * 2 : 2048;
		struct fl__sink **t = calloc(size, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < table_size; i++) {
			struct fl__sink *e, *next;

			for (e = table[i]; e; e = next) {
				size_t b = bucket(e->dev, e->ino, size);

				next = e->hash_next;
				e->hash_next = t[b];
				t[b] = e;
			}
		}
		free(table);
		table = t;
		table_size = size;
	}
	size_t b = bucket(s->dev, s->ino, table_size);

	s->hash_next = table[b];
	table[b] = s;
	table_count++;
	return 0;
}

static void hash_remove(struct fl__sink *s)
{
	struct fl__sink **pp = &table[bucket(s->dev, s->ino, table_size)];

	for (; *pp; pp = &(*pp)->hash_next) {
		if (*pp == s) {
			*pp = s->hash_next;
			table_count--;
			return;
		}
	}
}

static struct fl__sink *hash_find(dev_t dev, ino_t ino)
{
	if (!table_size)
		return NULL;
	for (struct fl__sink *s = table[bucket(dev, ino, table_size)]; s; s = s->hash_next)
		if (s->ino == ino && s->dev == dev)
			return s;
	return NULL;
}

/* Under sink_lock: give @s a slot, whose handle is its epoll data. */
static int slot_alloc(struct fl__sink *s)
{
	uint32_t i;

	if (slot_nfree) {
		i = slot_free[--slot_nfree];
	} else {
		if (slot_used + 1 >= slot_cap) {
			uint32_t cap = slot_cap ? slot_cap * 2 : 1024;
			struct fl__sink **ns = realloc(slots, cap * sizeof(*ns));
			uint32_t *ng, *nf;

			if (!ns)
				return -ENOMEM;
			slots = ns;
			ng = realloc(slot_gen, cap * sizeof(*ng));
			if (!ng)
				return -ENOMEM;
			slot_gen = ng;
			nf = realloc(slot_free, cap * sizeof(*nf));
			if (!nf)
				return -ENOMEM;
			slot_free = nf;
			memset(slots + slot_cap, 0, (cap - slot_cap) * sizeof(*ns));
			memset(slot_gen + slot_cap, 0, (cap - slot_cap) * sizeof(*ng));
			slot_cap = cap;
		}
		i = ++slot_used; /* slot 0 is the eventfd's */
	}
	slots[i] = s;
	s->key = (uint64_t)slot_gen[i] << 32 | i;
	return 0;
}

/* Under sink_lock: the sink behind @key, or NULL if it was released already. */
static struct fl__sink *slot_get(uint64_t key)
{
	uint32_t i = (uint32_t)key;

	if (i == 0 || i > slot_used || slot_gen[i] != (uint32_t)(key >> 32))
		return NULL;
	return slots[i];
}

/*
 * Under sink_lock: take the sink behind @key out of its slot; the caller
 * then owns its release. NULL if another path owns it already.
 */
static struct fl__sink *slot_claim(uint64_t key)
{
	struct fl__sink *s = slot_get(key);
	uint32_t i = (uint32_t)key;

	if (s) {
		slots[i] = NULL;
		slot_gen[i]++;
		slot_free[slot_nfree++] = i;
	}
	return s;
}

/* Under sink_lock. */
static void done_unlink(struct fl__sink *s)
{
	if (!s->on_done)
		return;
	if (s->done_prev)
		s->done_prev->done_next = s->done_next;
	else
		done_head = s->done_next;
	if (s->done_next)
		s->done_next->done_prev = s->done_prev;
	s->on_done = false;
	__atomic_store_n(&done_count, done_count - 1, __ATOMIC_RELAXED);
}

/* Under sink_lock. */
static void done_link(struct fl__sink *s)
{
	s->done_prev = NULL;
	s->done_next = done_head;
	if (done_head)
		done_head->done_prev = s;
	done_head = s;
	s->on_done = true;
	__atomic_store_n(&done_count, done_count + 1, __ATOMIC_RELAXED);
}

/* Under sink_lock. */
static void fresh_unlink(struct fl__sink *s)
{
	if (!s->on_fresh)
		return;
	if (s->fresh_prev)
		s->fresh_prev->fresh_next = s->fresh_next;
	else
		fresh_head = s->fresh_next;
	if (s->fresh_next)
		s->fresh_next->fresh_prev = s->fresh_prev;
	s->on_fresh = false;
	__atomic_store_n(&fresh_count, fresh_count - 1, __ATOMIC_RELAXED);
}

/* Under sink_lock. */
static void fresh_link(struct fl__sink *s)
{
	s->fresh_prev = NULL;
	s->fresh_next = fresh_head;
	if (fresh_head)
		fresh_head->fresh_prev = s;
	fresh_head = s;
	s->on_fresh = true;
	__atomic_store_n(&fresh_count, fresh_count + 1, __ATOMIC_RELAXED);
}

/* Release @s, which the caller claimed (slot_claim()). */
static void release_sink(struct fl__sink *s)
{
	struct fl_fence *f;
	bool published;
	int fd;

	/* A strong sink's fence never changes (it holds a reference on it). */
	f = s->kind == SINK_FENCE && s->strong ? s->fence : NULL;
	if (f) {
		/*
		 * The fence may still be pending: take the sink off its list
		 * first. Its completion no longer touches the fd: we claimed
		 * the sink.
		 */
		pthread_mutex_lock(&f->lock);
		sink_unlink_locked(f, s);
		/* Under the lock: a completion after this must not publish again. */
		published = s->published;
		s->published = false;
		pthread_mutex_unlock(&f->lock);
	} else {
		published = s->published;
	}
	if (published)
		fl__status_page_remove(s->dev, s->ino);
	/* In the table until closed, for a fork meanwhile (see fork_busy). */
	fork_guard_enter();
	pthread_mutex_lock(&sink_lock);
	if (s->kind == SINK_WATCH)
		watch_count--;
	else
		hash_remove(s);
	done_unlink(s);
	fresh_unlink(s);
	fd = s->fd;
	s->fd = -1;
	pthread_mutex_unlock(&sink_lock);
	if (s->kind == SINK_WATCH)
		FL_LOG("fd", "watched fd %d is readable", fd);
	else
		FL_LOG("fd", "every copy of a %s fd closed; closing core end %d",
		       s->kind == SINK_FENCE ? "fence" : "timeline", fd);
	if (fd >= 0 && !s->fd_lost) {
		/*
		 * No EPOLL_CTL_DEL: the registration is one-shot and already
		 * disabled, so even a sink whose file lives on in another
		 * process (an adopted one a client kept a copy of) reports
		 * nothing more. One syscall less per fd.
		 */
		fl__close(fd);
	}
	fork_guard_exit();
	/* A given pipe's fd is gone everywhere: nothing is left for its gate to keep in order. */
	if (f && s->given)
		(void)fl__fence_gate_open(f);
	if (f)
		fl_fence_unref(f);
	if (s->kind == SINK_TIMELINE)
		fl_timeline_unref(s->tl);
	if (s->release)
		s->release(s->owner);
	free(s);
}

/* The wake-up event: grow the fd table here, where its stall hurts nobody. */
static void grow_fd_table(int wake)
{
	eventfd_t v;
	unsigned int target;

	(void)!eventfd_read(wake, &v);
	target = atomic_exchange(&grow_target, 0);
	if (target)
		fl__fd_grow(target);
}

/*
 * The epoll data of a given pipe fence's read end (fl__fence_pipe_end()):
 * its sink's key with this bit, which no slot number has.
 */
#define KEY_END_CLOSED (1ull << 31)
static void (*end_hook)(struct fl_fence *f);
static void (*given_done_hook)(void *owner, uint64_t cookie, int status, uint64_t ts);

/* Every write end of a pipe fence of @key is closed: tell the host, if the owner had the only one. */
static void end_closed(uint64_t key)
{
	struct fl_fence *f = NULL;
	struct fl__sink *s;

	pthread_mutex_lock(&sink_lock);
	s = slot_get(key);
	if (s && s->given && s->fence)
		f = fl_fence_ref(s->fence);
	pthread_mutex_unlock(&sink_lock);
	if (f && end_hook)
		end_hook(f);
	fl_fence_unref(f);
}

/* One watcher pass over @ep: what epoll_wait() gave. */
static void watch_events(int ep, int wake, const struct epoll_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		struct fl__sink *s;

		if (!ev[i].data.u64) {
			grow_fd_table(wake);
			continue;
		}
		pthread_mutex_lock(&sink_lock);
		s = slot_claim(ev[i].data.u64);
		pthread_mutex_unlock(&sink_lock);
		if (s)
			release_sink(s);
	}
}

/* The item of the wake eventfd in reg_fd, which proves a read of its fdinfo is of reg_fd. */
#define REG_SENTINEL UINT64_MAX

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The data of every item of epoll set @fd (its fdinfo), sorted, in *ret
 * (the caller frees it). Return: how many, or -1 if the set could not be
 * read or the sentinel is missing.
 */
static ssize_t read_reg_items(int fdinfo, uint64_t **ret)
{
	size_t cap = 64 * 1024, len = 0, n = 0, ncap = 0;
	char *buf = malloc(cap), *line;
	uint64_t *items = NULL;
	bool sentinel = false;
	ssize_t r;

	if (!buf)
		return -1;
	while ((r = read(fdinfo, buf + len, cap - len - 1)) > 0) {
		len += (size_t)r;
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (r < 0) {
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	for (line = strstr(buf, "data:"); line; line = strstr(line + 5, "data:")) {
		uint64_t v = strtoull(line + 5, NULL, 16);

		if (v == REG_SENTINEL) {
			sentinel = true;
			continue;
		}
		if (n == ncap) {
			uint64_t *ni = realloc(items, (ncap ? ncap * 2 : 256) * sizeof(*ni));

			if (!ni) {
				free(items);
				free(buf);
				return -1;
			}
			items = ni;
			ncap = ncap ? ncap * 2 : 256;
		}
		items[n++] = v;
	}
	free(buf);
	if (!sentinel) {
		free(items);
		return -1;
	}
	if (n)
		qsort(items, n, sizeof(*items), cmp_u64);
	*ret = items;
	return (ssize_t)n;
}

/*
 * Release the completed pipe fences whose read end is gone everywhere (see
 * done_head). Takes sink_lock; the caller holds no fenceline lock.
 */
static void sweep_done(const char *why)
{
	struct fl__sink *s, *next, *dead = NULL;
	uint64_t *live = NULL, upto;
	size_t left;
	char path[64];
	ssize_t n;
	int info;

	pthread_mutex_lock(&sink_lock);
	if (reg_fd < 0 || !done_count) {
		pthread_mutex_unlock(&sink_lock);
		return;
	}
	/* Opened under the lock: reg_fd is ours while the list is not empty. */
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", reg_fd);
	info = open(path, O_RDONLY | O_CLOEXEC);
	upto = sink_seq;
	pthread_mutex_unlock(&sink_lock);
	if (info < 0)
		return;
	n = read_reg_items(info, &live);
	close(info);
	if (n < 0)
		return;

	pthread_mutex_lock(&sink_lock);
	for (s = done_head; s; s = next) {
		next = s->done_next;
		/* Made after the read began: its item may be missing from it. */
		if (s->seq > upto ||
		    (n && bsearch(&s->key, live, (size_t)n, sizeof(*live), cmp_u64)))
			continue;
		done_unlink(s);
		if (slot_claim(s->key)) {
			s->done_next = dead;
			dead = s;
		}
	}
	left = done_count;
	__atomic_store_n(&done_after_sweep, left, __ATOMIC_RELAXED);
	__atomic_store_n(&done_sweep_fds, (size_t)n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sink_lock);
	FL_LOG("fd", "sweep (%s): %zd pipe fence fds open, %zu completed ones left listed", why, n,
	       left);
	free(live);
	for (; dead; dead = next) {
		next = dead->done_next;
		release_sink(dead);
	}
}

/*
 * A sweep is due once the done list doubled since the last one, and grew
 * by half the fds that one read (see done_sweep_fds).
 */
static bool sweep_due(void)
{
	size_t n = __atomic_load_n(&done_count, __ATOMIC_RELAXED);

	return n >=
	       2 * __atomic_load_n(&done_after_sweep, __ATOMIC_RELAXED) +
		       FL_MAX((size_t)64, __atomic_load_n(&done_sweep_fds, __ATOMIC_RELAXED) / 2);
}

/* A sweep of the fresh list is due once it doubled since the last one. */
static bool fresh_due(void)
{
	size_t n = __atomic_load_n(&fresh_count, __ATOMIC_RELAXED);

	return n >= 2 * __atomic_load_n(&fresh_after_sweep, __ATOMIC_RELAXED) + 64;
}

/* Is @fd an end of the pipe whose inode is (@dev, @ino)? */
static bool fd_is_end_of(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_ino == ino && st.st_dev == dev;
}

/* poll() refuses more fds than RLIMIT_NOFILE: the write ends go in chunks. */
#define FRESH_POLL_CHUNK 64

/*
 * Release the pending pipe fences on the fresh list whose read end is
 * closed everywhere: their write end polls POLLERR. All under sink_lock: a
 * listed sink's fd is ours and open (a completion takes the sink off the
 * list under it before closing the fd, a release claims it first), so no
 * other thread closes or reuses a number while we look at it. The lock is
 * held for a poll() per 64 listed fences, once each time their number
 * doubled. @watch_upto: in the watcher's pass, the survivors made up to
 * that sequence number go in its epoll set and off the list (0: none).
 * The caller holds no fenceline lock. Return: how many were released.
 */
static size_t sweep_fresh(uint64_t watch_upto)
{
	struct fl__sink *s, *next, *dead = NULL, *chunk[FRESH_POLL_CHUNK];
	struct pollfd pf[FRESH_POLL_CHUNK];
	size_t released = 0;

	pthread_mutex_lock(&sink_lock);
	for (s = fresh_head; s;) {
		nfds_t k = 0;

		for (; s && k < FRESH_POLL_CHUNK; s = s->fresh_next) {
			chunk[k] = s;
			pf[k++] = (struct pollfd){ .fd = s->fd };
		}
		/* A limit lowered below the chunk: one at a time. */
		if (poll(pf, k, 0) < 0)
			for (nfds_t j = 0; j < k; j++)
				if (poll(&pf[j], 1, 0) < 0)
					pf[j].revents = 0;
		for (nfds_t j = 0; j < k; j++) {
			struct fl__sink *d = chunk[j];

			if (!(pf[j].revents & POLLERR) || slot_get(d->key) != d)
				continue;
			/*
			 * A program that closed our write end (close_range(), a
			 * dup2() over it) may have a file of its own at that
			 * number now, which may poll POLLERR too: the pipe's
			 * inode tells ours. A host is our own program: nothing
			 * else closes its numbers.
			 */
			d->fd_lost = !host_driven && !fd_is_end_of(d->fd, d->dev, d->ino);
			slot_claim(d->key);
			fresh_unlink(d);
			d->fresh_next = dead;
			dead = d;
		}
	}
	for (s = watch_upto && epfd >= 0 ? fresh_head : NULL; s; s = next) {
		struct epoll_event ev = { .events = EPOLLONESHOT, .data.u64 = s->key };

		next = s->fresh_next;
		if (s->seq > watch_upto)
			continue;
		/* Made a while ago: is the number still ours (see above)? */
		if (!host_driven && !fd_is_end_of(s->fd, s->dev, s->ino)) {
			slot_claim(s->key);
			fresh_unlink(s);
			s->fd_lost = true;
			s->fresh_next = dead;
			dead = s;
			continue;
		}
		/* Its EPOLLERR, if its last reader is gone already, is reported at once. */
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev) == 0)
			fresh_unlink(s);
	}
	__atomic_store_n(&fresh_after_sweep, fresh_count, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sink_lock);
	for (; dead; dead = next) {
		next = dead->fresh_next;
		release_sink(dead);
		released++;
	}
	return released;
}

/*
 * How often the watcher sweeps the fresh list (and moves its survivors
 * into its epoll set) while it is not empty.
 */
#define WATCHER_FRESH_MS 100

/*
 * How long the watcher waits for an event, while completed pipe fences are
 * listed, before it sweeps them: from 100 ms, doubling while sweeps find
 * nothing to release (their fds are in use), up to 10 s, so that an idle
 * process holding fence fds wakes rarely.
 */
#define WATCHER_SWEEP_MIN_MS 100
#define WATCHER_SWEEP_MAX_MS 10000

/*
 * An idle sweep: sweep_done(), then the wait before the next one, from
 * @ms: back to the shortest when the sweep released something, else
 * twice as long, up to the longest (closed fds of a busy program are
 * found soon; a program that holds its fences costs a look every 10 s).
 */
static int sweep_backing_off(int ms)
{
	size_t before = __atomic_load_n(&done_count, __ATOMIC_RELAXED);

	sweep_done("idle");
	if (__atomic_load_n(&done_count, __ATOMIC_RELAXED) < before)
		return WATCHER_SWEEP_MIN_MS;
	return ms < WATCHER_SWEEP_MAX_MS ? ms * 2 : ms;
}

/* Milliseconds from @now to @at (0 if past), for a poll timeout. */
static int ms_until(uint64_t now, uint64_t at)
{
	return at <= now ? 0 : (int)FL_MIN((at - now + 999999) / 1000000, (uint64_t)INT32_MAX);
}

static void *watcher(void *arg)
{
	int fd = (int)(intptr_t)arg, wake = wake_fd, reg = reg_fd;
	struct epoll_event ev[32];
	bool sweeping = false, freshening = false;
	int sweep_ms = WATCHER_SWEEP_MIN_MS;
	/* When the next sweep of each list is due (0: none), and the fresh sweep's mark. */
	uint64_t sweep_at = 0, fresh_at = 0, fresh_mark = 0;

	/* "fl-" threads never signal a timeline: the deadlock detector skips them. */
	pthread_setname_np(pthread_self(), "fl-watcher");

	bool idle = false;

	fl__fd_reserve_init();
	for (;;) {
		uint64_t now = fl__now_ns(), at = freshening ? fresh_at : 0;
		int timeout = -1;

		if (sweeping && (!at || sweep_at < at))
			at = sweep_at;
		/*
		 * With nothing left to watch, wait a little longer and then exit,
		 * so an idle process has no fenceline thread, while a program
		 * that makes and closes fds in a loop does not restart us each
		 * time. The next fd starts a new watcher.
		 */
		if (idle)
			timeout = WATCHER_LINGER_MS;
		else if (at)
			timeout = ms_until(now, at);
		int n = epoll_wait(fd, ev, FL_ARRAY_SIZE(ev), timeout);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		watch_events(fd, wake, ev, n);
		if (n < (int)FL_ARRAY_SIZE(ev))
			atomic_store_explicit(&unreaped, 0, memory_order_relaxed);
		now = fl__now_ns();
		if (freshening && now >= fresh_at) {
			(void)sweep_fresh(fresh_mark);
			fresh_at = 0;
		}
		if (sweeping && now >= sweep_at) {
			sweep_ms = sweep_backing_off(sweep_ms);
			sweep_at = 0;
		} else if (n > 0) {
			sweep_ms = WATCHER_SWEEP_MIN_MS;
		}
		pthread_mutex_lock(&sink_lock);
		idle = table_count == 0 && watch_count == 0;
		sweeping = !idle && done_count > 0;
		freshening = !idle && fresh_count > 0;
		if (sweeping && !sweep_at)
			sweep_at = now + (uint64_t)sweep_ms * 1000000ull;
		/* The next pass moves what is listed now, if it is still pending then. */
		if (freshening && !fresh_at) {
			fresh_at = now + (uint64_t)WATCHER_FRESH_MS * 1000000ull;
			fresh_mark = sink_seq;
		}
		watcher_forever = !idle && !sweeping && !freshening;
		if (idle && n == 0 && epfd == fd) {
			epfd = -1;
			wake_fd = -1;
			reg_fd = -1;
			watcher_running = false;
			pthread_mutex_unlock(&sink_lock);
			break;
		}
		pthread_mutex_unlock(&sink_lock);
	}
	/* A growth asked for just before going idle still happens. */
	if (atomic_load(&grow_target))
		grow_fd_table(wake);
	close(wake);
	if (reg >= 0)
		close(reg);
	close(fd);
	return NULL;
}

static void atfork_prepare(void)
{
	int busy;

	atomic_fetch_add(&fork_pending, 1);
	while ((busy = atomic_load(&fork_busy)) != 0)
		(void)fl__futex_wait(&fork_busy, busy, -1);
	pthread_mutex_lock(&sink_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&sink_lock);
	if (atomic_fetch_sub(&fork_pending, 1) == 1)
		fl__futex_wake_all(&fork_pending);
}

/*
 * In a forked child, in-process objects are copies: the child must not keep
 * the parent's sinks open (that would keep the parent's fds from ever
 * hanging up) nor share its epoll set. Fence fds themselves stay valid.
 */
static void atfork_child(void)
{
	for (size_t i = 0; i < table_size; i++) {
		for (struct fl__sink *s = table[i]; s; s = s->hash_next) {
			/*
			 * A pipe's write end too: the parent's fences must still
			 * reach end-of-file. Not a number the program took over
			 * (close_range(), a dup2() over ours): not ours to close.
			 */
			if (s->fd >= 0 && !s->fd_lost &&
			    (!s->pipe || fd_is_end_of(s->fd, s->dev, s->ino)))
				close(s->fd);
			s->fd = -1;
			s->inherited = true;
			s->on_done = s->on_fresh = false;
		}
	}
	if (epfd >= 0)
		close(epfd);
	if (wake_fd >= 0)
		close(wake_fd);
	if (reg_fd >= 0)
		close(reg_fd);
	if (end_fd >= 0)
		close(end_fd);
	epfd = -1;
	wake_fd = -1;
	reg_fd = -1;
	end_fd = -1;
	/* The parent's completed fences are not ours to sweep. */
	done_head = NULL;
	done_count = done_after_sweep = done_sweep_fds = 0;
	fresh_head = NULL;
	fresh_count = fresh_after_sweep = 0;
	watcher_running = false;
	pthread_mutex_unlock(&sink_lock);
	/* The only thread: nobody else is busy, and the parent's other fork()s are not ours. */
	atomic_store(&fork_busy, 0);
	atomic_store(&fork_pending, 0);
}

/* Under sink_lock. */
static int start_watcher_locked(void)
{
	pthread_attr_t attr;
	pthread_t thread;
	int fd, r;

	if (watcher_running)
		return 0;
	if (!atfork_done && !host_driven) {
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		atfork_done = true;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return -errno;
	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, wake_fd, &ev) < 0) {
		r = -errno;
		if (wake_fd >= 0)
			close(wake_fd);
		wake_fd = -1;
		close(fd);
		return r;
	}
	/* The registry of pipe fences' read ends (see done_head), with its sentinel. */
	ev = (struct epoll_event){ .events = EPOLLONESHOT, .data.u64 = REG_SENTINEL };
	reg_fd = epoll_create1(EPOLL_CLOEXEC);
	if (reg_fd < 0 || epoll_ctl(reg_fd, EPOLL_CTL_ADD, wake_fd, &ev) < 0) {
		r = -errno;
		if (reg_fd >= 0)
			close(reg_fd);
		reg_fd = -1;
		close(wake_fd);
		wake_fd = -1;
		close(fd);
		return r;
	}
	if (host_driven) {
		/* Only a host gives write ends away (fl__fence_pipe_end()). */
		if (end_fd < 0)
			end_fd = epoll_create1(EPOLL_CLOEXEC);
		epfd = fd;
		watcher_running = true;
		return 0;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	r = -fl__thread_start(&thread, &attr, watcher, (void *)(intptr_t)fd);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		close(reg_fd);
		reg_fd = -1;
		close(wake_fd);
		wake_fd = -1;
		close(fd);
		return r;
	}
	epfd = fd;
	watcher_running = true;
	watcher_forever = true;
	return 0;
}

int fl__watcher_host_fd(void)
{
	int r;

	pthread_mutex_lock(&sink_lock);
	if (watcher_running && !host_driven) {
		r = -EBUSY;
	} else {
		host_driven = true;
		r = start_watcher_locked();
		if (r == 0)
			r = epfd;
	}
	pthread_mutex_unlock(&sink_lock);
	return r;
}

/*
 * The host's sweep clock (the watcher thread's sweep_ms, for a host loop):
 * when the next sweep of completed pipe fences is due (0: none planned),
 * and the back-off it uses. Only the host's thread touches them.
 */
static uint64_t host_sweep_at;
static int host_sweep_ms = WATCHER_SWEEP_MIN_MS;
/* The same for the fresh list: the next pass, and the mark it moves up to. */
static uint64_t host_fresh_at, host_fresh_mark;

void fl__watcher_dispatch(void)
{
	struct epoll_event ev[32];
	bool events = false;
	int n;

	do {
		n = epoll_wait(epfd, ev, FL_ARRAY_SIZE(ev), 0);
		if (n > 0) {
			watch_events(epfd, wake_fd, ev, n);
			events = true;
		}
	} while (n == (int)FL_ARRAY_SIZE(ev));
	if (events)
		host_sweep_ms = WATCHER_SWEEP_MIN_MS;
	if (fresh_due()) {
		(void)sweep_fresh(0);
	} else if (host_fresh_at && fl__now_ns() >= host_fresh_at) {
		(void)sweep_fresh(host_fresh_mark);
		host_fresh_at = 0;
	}
	if (sweep_due()) {
		sweep_done("due");
	} else if (host_sweep_at && fl__now_ns() >= host_sweep_at) {
		host_sweep_ms = sweep_backing_off(host_sweep_ms);
		host_sweep_at = 0;
	}
}

int fl__watcher_timeout_ms(void)
{
	uint64_t now = 0;
	int fresh = -1, done;

	if (!__atomic_load_n(&fresh_count, __ATOMIC_RELAXED)) {
		host_fresh_at = 0;
	} else if (fresh_due()) {
		return 0;
	} else {
		now = fl__now_ns();
		/* The next pass moves what is listed now, if it is still pending then. */
		if (!host_fresh_at) {
			host_fresh_at = now + (uint64_t)WATCHER_FRESH_MS * 1000000ull;
			pthread_mutex_lock(&sink_lock);
			host_fresh_mark = sink_seq;
			pthread_mutex_unlock(&sink_lock);
		}
		fresh = ms_until(now, host_fresh_at);
	}
	if (!__atomic_load_n(&done_count, __ATOMIC_RELAXED)) {
		host_sweep_at = 0;
		return fresh;
	}
	if (sweep_due())
		return 0;
	if (!now)
		now = fl__now_ns();
	if (!host_sweep_at)
		host_sweep_at = now + (uint64_t)host_sweep_ms * 1000000ull;
	done = ms_until(now, host_sweep_at);
	return fresh >= 0 && fresh < done ? fresh : done;
}

size_t fl__watcher_sweep_fresh(void)
{
	return sweep_fresh(0);
}

size_t fl__watcher_sweep(void)
{
	size_t released = sweep_fresh(0), before = __atomic_load_n(&done_count, __ATOMIC_RELAXED);

	if (!before)
		return released;
	sweep_done("asked");
	return released + before - FL_MIN(before, __atomic_load_n(&done_count, __ATOMIC_RELAXED));
}

bool fl__fence_pipes_ok(void)
{
	int ok = __atomic_load_n(&pipes_ok, __ATOMIC_RELAXED);

	if (!ok) {
		(void)use_pipes(SINK_TIMELINE);
		ok = __atomic_load_n(&pipes_ok, __ATOMIC_RELAXED);
	}
	return ok == 1;
}

int fl__fence_pipe_new(struct fl__sink **ret_sink, int *ret_user_fd, dev_t *ret_dev, ino_t *ret_ino)
{
	struct epoll_event reg = { .events = EPOLLONESHOT };
	struct fl__sink *s = calloc(1, sizeof(*s));
	int p[2], r;

	if (!s)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		free(s);
		return r;
	}
	/* Nobody but root may reopen either end through /proc/self/fd. */
	r = fchmod(p[0], 0) < 0 ? -errno : 0;
	if (r == 0)
		r = fl__fd_identity(p[0], &s->dev, &s->ino, NULL);
	if (r < 0)
		goto fail;
	s->kind = SINK_FENCE;
	s->pipe = true;
	s->strong = true;
	s->fd = p[1];
	pthread_mutex_lock(&sink_lock);
	r = start_watcher_locked();
	if (r == 0 && (reg_fd < 0 || hash_find(s->dev, s->ino)))
		r = reg_fd < 0 ? -ENOSYS : -EEXIST;
	if (r == 0)
		r = hash_insert(s);
	if (r == 0) {
		r = slot_alloc(s);
		if (r < 0)
			hash_remove(s);
	}
	if (r == 0) {
		s->seq = ++sink_seq;
		reg.data.u64 = s->key;
		/* The read end goes out with the reply: registered now, while we hold it. */
		if (epoll_ctl(reg_fd, EPOLL_CTL_ADD, p[0], &reg) < 0) {
			r = -errno;
			slot_claim(s->key);
			hash_remove(s);
		}
	}
	if (r == 0) {
		unsigned int target = fl__fd_grow_target(FL_MAX(p[0], p[1]));

		if (target) {
			atomic_store(&grow_target, target);
			(void)!eventfd_write(wake_fd, 1);
		}
	}
	pthread_mutex_unlock(&sink_lock);
	if (r < 0)
		goto fail;
	__atomic_store_n(&pipes_made, true, __ATOMIC_RELAXED);
	/* A full page publishes nothing: holders read the pipe, as without a page. */
	s->published = fl__status_page_publish(s->dev, s->ino, FL_STATUS_ACTIVE, 0, false) == 0;
	*ret_sink = s;
	*ret_user_fd = p[0];
	if (ret_dev)
		*ret_dev = s->dev;
	if (ret_ino)
		*ret_ino = s->ino;
	return 0;
fail:
	close(p[0]);
	close(p[1]);
	free(s);
	return r;
}

/*
 * The status page's entry for a published pipe fence, with the fence's
 * info record (fl_fence_fd_get_info() in the daemon's clients answers
 * from it): its name, points and whether those are final (see struct
 * fl_info_body). Without a fence, the status alone.
 */
static void page_publish_key(dev_t dev, ino_t ino, struct fl_fence *f, int status, uint64_t ts,
			     bool held)
{
	struct fl_sync_pt_info pts[FL_INFO_POINTS];
	struct fl_fence_info info;
	struct fl_info_body b;
	bool done = true;
	int n = f ? fl_fence_get_info(f, &info, pts, FL_INFO_POINTS) : -EINVAL;

	if (n < 0) {
		fl__status_page_publish(dev, ino, status, ts, held);
		return;
	}
	memset(&b, 0, sizeof(b));
	memcpy(b.name, info.name, sizeof(b.name));
	b.num_points = info.num_points;
	for (int i = 0; i < n; i++) {
		struct fl_info_point *o = &b.points[i];

		memcpy(o->timeline_name, pts[i].timeline_name, sizeof(o->timeline_name));
		memcpy(o->driver_name, pts[i].driver_name, sizeof(o->driver_name));
		o->status = pts[i].status;
		o->flags = pts[i].flags;
		o->timestamp_ns = pts[i].timestamp_ns;
		o->value = pts[i].value;
		o->timeline_id = pts[i].timeline_id;
		if (!pts[i].status)
			done = false;
	}
	/*
	 * A completed fence's points can still change while one is pending
	 * (a failure does not wait for the rest), and an active merge's
	 * points change without the fence hearing of it: neither's points
	 * are answered from the page. An active one-point fence's point is
	 * the fence.
	 */
	b.points_final = info.num_points <= FL_INFO_POINTS &&
			 (status ? done : info.num_points == 1 && n == 1 && pts[0].status == 0);
	fl__status_page_publish_info(dev, ino, status, ts, held, &b);
}

static void page_publish(struct fl__sink *s, struct fl_fence *f, int status, uint64_t ts, bool held)
{
	page_publish_key(s->dev, s->ino, f, status, ts, held);
}

void fl__fence_pipe_republish(dev_t dev, ino_t ino)
{
	struct fl_fence *f = NULL;
	struct fl__sink *s;
	bool active;

	if (fl__status_page_info_listed(dev, ino))
		return;
	pthread_mutex_lock(&sink_lock);
	s = hash_find(dev, ino);
	if (s && s->kind == SINK_FENCE && !s->inherited && s->published && !s->given && s->fence &&
	    fl__fence_ref_unless_zero(s->fence))
		f = s->fence;
	pthread_mutex_unlock(&sink_lock);
	if (!f)
		return;
	/*
	 * Under the fence lock, as a completion publishes (pipe_complete_locked()):
	 * either it published already and the fence reads complete here, or it
	 * publishes after us. The sink is looked up again: it may have gone.
	 */
	pthread_mutex_lock(&f->lock);
	pthread_mutex_lock(&sink_lock);
	s = hash_find(dev, ino);
	active = s && s->fence == f && !s->given && s->published &&
		 atomic_load(&s->status) == FL_STATUS_ACTIVE &&
		 atomic_load(&f->status) == FL_STATUS_ACTIVE;
	pthread_mutex_unlock(&sink_lock);
	if (active)
		page_publish_key(dev, ino, f, FL_STATUS_ACTIVE, 0, false);
	pthread_mutex_unlock(&f->lock);
	fl_fence_unref(f);
}

int fl__fence_pipe_adopt(struct fl_fence *f, struct fl__sink *s, fl__host_release_fn release,
			 void *owner)
{
	fl__fence_status(f);
	/*
	 * Listed first (see fresh_head): if the fence completes meanwhile,
	 * its completion takes it off that list, which must not happen before
	 * it is on it. The sweeps run in this host's own loop, so nothing
	 * releases the sink before we return, even when its read end is gone
	 * already.
	 */
	pthread_mutex_lock(&sink_lock);
	s->fence = fl_fence_ref(f);
	s->release = release;
	s->owner = owner;
	fresh_link(s);
	pthread_mutex_unlock(&sink_lock);
	/*
	 * Its info, while it is active: a completed one is published by the
	 * completion that attach() runs, once its records are in the pipe.
	 */
	if (s->published && atomic_load(&f->status) == FL_STATUS_ACTIVE)
		page_publish(s, f, FL_STATUS_ACTIVE, 0, false);
	attach(f, s);
	FL_LOG("fd", "pooled pipe became a fence fd (core end %d)", s->fd);
	return 0;
}

void fl__fence_pipe_discard(struct fl__sink *s, int status)
{
	struct fl__record rec = { FL__RECORD_MAGIC, status, fl__now_ns() };

	if (!s)
		return;
	if (s->published)
		fl__status_page_remove(s->dev, s->ino);
	atomic_store(&s->status, status);
	write_record(s->fd, &rec);
	pthread_mutex_lock(&sink_lock);
	/* Forgotten now: a holder that asks us about it later is told it failed. */
	if (slot_get(s->key) == s)
		slot_claim(s->key);
	hash_remove(s);
	pthread_mutex_unlock(&sink_lock);
	fl__close(s->fd);
	free(s);
}

int fl__fence_pipe_end(struct fl__sink *s, int user_fd, int *ret_end)
{
	struct epoll_event ev = { .events = EPOLLONESHOT };
	int r = 0;

	/*
	 * Registered now, while we hold the read end; the registration lives
	 * as long as the read end does anywhere, and reports its EPOLLHUP
	 * (every write end closed) once. Until the owner has the only write
	 * end, end_closed() ignores it.
	 */
	pthread_mutex_lock(&sink_lock);
	ev.data.u64 = s->key | KEY_END_CLOSED;
	if (end_fd < 0 || epoll_ctl(end_fd, EPOLL_CTL_ADD, user_fd, &ev) < 0)
		r = end_fd < 0 ? -ENOSYS : -errno;
	pthread_mutex_unlock(&sink_lock);
	if (r == 0)
		*ret_end = s->fd;
	return r;
}

/* Host-driven only: the host's one thread. */
static unsigned int ends_checks;

unsigned int fl__fence_pipe_ends_checks(void)
{
	return ends_checks;
}

void fl__fence_pipe_ends_check(void)
{
	static bool busy;
	struct epoll_event ev[32];
	int n, fd;

	/* The host's end hook catches up, which looks here again: once is enough. */
	if (busy)
		return;
	ends_checks++;
	pthread_mutex_lock(&sink_lock);
	fd = end_fd;
	pthread_mutex_unlock(&sink_lock);
	if (fd < 0)
		return;
	busy = true;
	do {
		n = epoll_wait(fd, ev, FL_ARRAY_SIZE(ev), 0);
		for (int i = 0; i < n; i++)
			end_closed(ev[i].data.u64 & ~KEY_END_CLOSED);
	} while (n == (int)FL_ARRAY_SIZE(ev));
	busy = false;
}

void fl__fence_pipe_give(struct fl__sink *s, uint64_t cookie)
{
	struct fl_fence *f = s->fence;
	void *owner = s->owner;
	bool closed = false;
	int fd;

	if (!f)
		return;
	/* Under the fence lock, as completion closes the end under it. */
	pthread_mutex_lock(&f->lock);
	fd = s->fd;
	pthread_mutex_lock(&sink_lock);
	/*
	 * Listed as a completed one: with no write end of ours, nothing but
	 * the sweep would see its last reader go, if the owner's end goes
	 * first. Unless a release path owns it already (its last reader is
	 * gone): then it closes fd.
	 */
	if (fd >= 0 && slot_get(s->key) == s) {
		/* A fresh one is in no epoll set yet (sweep_fresh() adds it as it leaves the list). */
		bool watched = !s->on_fresh;

		s->given = true;
		s->cookie = cookie;
		fresh_unlink(s);
		done_link(s);
		s->fd = -1;
		closed = true;
		/*
		 * Out of the watcher's set: the sweep releases it now, and the
		 * owner's close of the last write end then releases a file in
		 * no epoll set, which is quicker on its waiters' CPU.
		 */
		if (watched)
			(void)epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
	}
	pthread_mutex_unlock(&sink_lock);
	pthread_mutex_unlock(&f->lock);
	if (closed) {
		fl__close(fd);
		FL_LOG("fd", "pipe fence's write end given to its owner (core end %d closed)", fd);
		/*
		 * Its fd is ready only once the owner closes its end, which may
		 * be long after another process's step reached it (an owner
		 * that is stopped or slow): the host's step holds the point
		 * back meanwhile, and every fence made of it, merges too,
		 * which would otherwise be ready before it (architecture.md,
		 * "What is made of such a fence waits for it too"). Without
		 * memory for a gate: as before.
		 */
		(void)fl__pt_gate_close(f, owner, cookie);
	}
}

int fl__fence_pipe_return(int end, struct fl_fence **ret_fence)
{
	struct fl_fence *f = NULL;
	struct fl__sink *s;
	uint64_t key = 0;
	bool pipe, taken = false;
	dev_t dev;
	ino_t ino;
	int flags = fcntl(end, F_GETFL), status = 0, r;

	*ret_fence = NULL;
	r = fl__fd_identity(end, &dev, &ino, &pipe);
	if (r < 0 || !pipe || flags < 0 || (flags & O_ACCMODE) != O_WRONLY) {
		fl__close(end);
		return -EINVAL;
	}
	pthread_mutex_lock(&sink_lock);
	s = hash_find(dev, ino);
	if (s && s->kind == SINK_FENCE && s->given && s->fence) {
		f = fl_fence_ref(s->fence);
		key = s->key;
	}
	pthread_mutex_unlock(&sink_lock);
	if (!f) {
		fl__close(end);
		return -ENOENT;
	}
	/* Under the fence lock: completion must see either no end or this one. */
	pthread_mutex_lock(&f->lock);
	pthread_mutex_lock(&sink_lock);
	if (slot_get(key) == s && s->given) {
		status = atomic_load(&s->status);
		if (!f->completed) {
			s->given = false;
			done_unlink(s);
			s->fd = end;
			/* Its last reader's close shows on our end again: swept like a new one. */
			fresh_link(s);
			taken = true;
		}
	}
	pthread_mutex_unlock(&sink_lock);
	if (!taken && status && f->completed) {
		struct fl__record rec = { FL__RECORD_MAGIC, status,
					  fl__fence_timestamp(f, status) };
		int queued = -1;

		/* Completed meanwhile: its record, unless one is there already, and the close. */
		if (ioctl(end, FIONREAD, &queued) == 0 && queued == 0)
			write_record(end, &rec);
	}
	pthread_mutex_unlock(&f->lock);
	if (!taken) {
		fl__close(end);
		fl_fence_unref(f);
		return 0;
	}
	FL_LOG("fd", "pipe fence's write end back from its owner (core end %d)", end);
	/* Reached meanwhile: it completes now, its records through @end. */
	(void)fl__fence_gate_open(f);
	*ret_fence = f;
	return 0;
}

void fl__fence_pipe_set_hooks(void (*closed)(struct fl_fence *f),
			      void (*done)(void *owner, uint64_t cookie, int status, uint64_t ts))
{
	end_hook = closed;
	given_done_hook = done;
}

/*
 * Release, in the calling thread, the fence sinks whose fds were closed
 * everywhere. Only fence sinks without a host callback: their release
 * frees memory and closes an fd, nothing else. A timeline's last handle
 * (failing its fences, running callbacks) and a driver's watch (signalling
 * it) must not run inside an unrelated export call, so those are re-armed
 * for the watcher, which still reports them. Never in a host-driven core:
 * the host's release callbacks run in its loop only. The caller holds no
 * fenceline lock. Return: how many sinks were released.
 */
static int reap_closed(void)
{
	struct epoll_event ev[64];
	int released = 0, n;

	do {
		int now = 0;

		pthread_mutex_lock(&sink_lock);
		/* Under the lock: the watcher closes epfd only under it. */
		n = epfd >= 0 && !host_driven ? epoll_wait(epfd, ev, FL_ARRAY_SIZE(ev), 0) : 0;
		for (int i = 0; i < n; i++) {
			uint64_t key = ev[i].data.u64;
			struct fl__sink *s = slot_get(key);

			ev[i].data.ptr = NULL;
			/* 0 is the watcher's eventfd: level-triggered, it stays ready for it. */
			if (!s)
				continue;
			if (s->kind == SINK_FENCE && !s->release) {
				ev[i].data.ptr = slot_claim(key);
				continue;
			}
			struct epoll_event again = { .events = EPOLLONESHOT, .data.u64 = key };

			if (s->kind == SINK_WATCH)
				again.events |= EPOLLIN;
			(void)epoll_ctl(epfd, EPOLL_CTL_MOD, s->fd, &again);
		}
		pthread_mutex_unlock(&sink_lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr) {
				release_sink(ev[i].data.ptr);
				now++;
			}
		}
		released += now;
		/* Stop when drained, or when only what we re-armed is left. */
		if (now == 0)
			break;
	} while (n == (int)FL_ARRAY_SIZE(ev));
	atomic_store_explicit(&unreaped, 0, memory_order_relaxed);
	return released;
}

/* Before making a sink: reap if REAP_EVERY sinks were made since the last drain. */
static void reap_if_due(void)
{
	if (atomic_fetch_add_explicit(&unreaped, 1, memory_order_relaxed) >= REAP_EVERY)
		reap_closed();
	if (fresh_due())
		(void)sweep_fresh(0);
	if (sweep_due())
		sweep_done("due");
}

/*
 * A sink could not be made for want of fds (@r): were closed ones waiting to
 * be released? True if some were, and the caller should try again.
 */
static bool reap_for_retry(int r)
{
	if (r != -EMFILE && r != -ENFILE)
		return false;
	/* Both: each may hold closed fds. */
	size_t released = (size_t)reap_closed();

	return released + sweep_fresh(0) > 0;
}

/* A watch fired: the driver's fd is readable, so its points may have signalled. */
static void watch_fired(void *owner)
{
	struct fl_timeline *tl = owner;

	fl_timeline_signal(tl);
	fl_timeline_unref(tl);
}

FL_EXPORT int fl_timeline_watch_fd(struct fl_timeline *tl, int fd)
{
	/* One-shot: EPOLLIN (or a hang-up or error) once, then disabled. */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	struct fl__sink *s;
	int r;

	fl_return_if(!tl || fd < 0, -EINVAL);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->kind = SINK_WATCH;
	s->fd = fd;
	s->release = watch_fired;
	s->owner = fl_timeline_ref(tl);
	pthread_mutex_lock(&sink_lock);
	r = start_watcher_locked();
	if (r == 0)
		r = slot_alloc(s);
	ev.data.u64 = s->key;
	if (r == 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		r = -errno;
		slot_claim(s->key);
	}
	if (r == 0)
		watch_count++;
	pthread_mutex_unlock(&sink_lock);
	if (r < 0) {
		fl_timeline_unref(tl);
		free(s);
		return r == -EPERM ? -EINVAL : r;
	}
	return 0;
}

/*
 * Whether this process's fds of @kind are pipes (see "Fence fds" in
 * docs/architecture.md): fence fds not in a host (a host makes its pipe
 * fences with fl__fence_pipe_new(); the pairs it adopts are sockets, which
 * owners' signal ends rely on), and only where the sweep of completed
 * fences can read /proc/self/fdinfo.
 * FENCELINE_FD_KIND=socket asks for socket pairs, for comparisons.
 */
static bool use_pipes(enum sink_kind kind)
{
	int ok = __atomic_load_n(&pipes_ok, __ATOMIC_RELAXED);

	if (!ok) {
		const char *e = getenv("FENCELINE_FD_KIND");

		ok = e && strcmp(e, "socket") == 0	     ? -1
		     : access("/proc/self/fdinfo", R_OK) < 0 ? 2
							     : 1;
		__atomic_store_n(&pipes_ok, ok, __ATOMIC_RELAXED);
	}
	/*
	 * A timeline fd never completes, so it needs no sweep: a pipe
	 * everywhere, the daemon's too (its clients' libraries look pipes up
	 * as they do sockets).
	 */
	if (kind == SINK_TIMELINE)
		return ok > 0;
	return ok == 1 && !host_driven;
}

/*
 * Register and watch a sink for the pair (@sink_fd, user end at dev/ino).
 * On failure nothing is registered and the caller still owns both fds.
 */
static int sink_register(struct fl__sink *s, int sink_fd, int user_fd)
{
	/*
	 * EPOLLHUP (a socket's peer gone) and EPOLLERR (a pipe's last reader
	 * gone) are always reported; once, then the registration is disabled.
	 */
	struct epoll_event ev = { .events = EPOLLONESHOT };
	bool fresh = s->pipe && s->kind == SINK_FENCE;
	int r;

	s->fd = sink_fd;
	pthread_mutex_lock(&sink_lock);
	r = start_watcher_locked();
	if (r == 0 && hash_find(s->dev, s->ino))
		r = -EEXIST; /* only reachable through fl__fence_adopt_fds() */
	if (r == 0)
		r = hash_insert(s);
	if (r == 0) {
		r = slot_alloc(s);
		if (r < 0)
			hash_remove(s);
	}
	ev.data.u64 = s->key;
	s->seq = ++sink_seq;
	/* A pipe fence goes on the fresh list instead (see fresh_head). */
	if (r == 0 && !fresh && epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0)
		r = -errno;
	/*
	 * A pipe fence's read end in the registry, where the sweep looks for
	 * it once the fence completed and its write end is closed. No events:
	 * nobody waits on that set, and no wake-up of the fd costs anything there.
	 */
	if (r == 0 && fresh) {
		struct epoll_event reg = { .events = EPOLLONESHOT, .data.u64 = s->key };

		if (epoll_ctl(reg_fd, EPOLL_CTL_ADD, user_fd, &reg) < 0)
			r = -errno;
	}
	if (r == 0 && fresh) {
		fresh_link(s);
		/* The first one wakes a watcher that waits for nothing else (once). */
		if (watcher_forever) {
			watcher_forever = false;
			(void)!eventfd_write(wake_fd, 1);
		}
	}
	if (r < 0 && slot_get(s->key) == s) {
		slot_claim(s->key);
		hash_remove(s);
	}
	if (r == 0) {
		unsigned int target = fl__fd_grow_target(FL_MAX(sink_fd, user_fd));

		if (target) {
			atomic_store(&grow_target, target);
			(void)!eventfd_write(wake_fd, 1);
		}
	}
	pthread_mutex_unlock(&sink_lock);
	return r;
}

/*
 * Make a socket pair and a sink for it. On success the sink is registered
 * and watched, and *ret_user_fd is the end to give out.
 */
static int sink_new_tracked(enum sink_kind kind, bool strong, struct fl_fence *f,
			    struct fl_timeline *tl, fl__host_release_fn release, void *owner,
			    struct fl__sink **ret_sink, int *ret_user_fd)
{
	struct fl__sink *s;
	int sv[2], r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pipe = kind == SINK_TIMELINE ? use_pipes(kind) : !release && use_pipes(kind);
	/* Until the core's end is in the table (see fork_busy). */
	fork_guard_enter();
	if (s->pipe) {
		int p[2];

		/* sv[0] stays the core's end, sv[1] the user's, as with a socket pair. */
		r = pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0 ? -errno : 0;
		if (r < 0) {
			fork_guard_exit();
			free(s);
			return r;
		}
		sv[0] = p[1];
		sv[1] = p[0];
		__atomic_store_n(&pipes_made, true, __ATOMIC_RELAXED);
		/* Nobody but root may reopen either end through /proc/self/fd. */
		r = fchmod(sv[1], 0) < 0 ? -errno : 0;
		if (r == 0)
			r = fl__fd_identity(sv[1], &s->dev, &s->ino, NULL);
	} else {
		r = fl__socketpair_cloexec(sv);
		if (r < 0) {
			fork_guard_exit();
			free(s);
			return r;
		}
		r = fl__fd_inode(sv[1], &s->dev, &s->ino);
	}
	if (r < 0)
		goto fail;
	s->kind = kind;
	s->strong = strong;
	s->fence = f;
	s->tl = tl;
	s->release = release;
	s->owner = owner;
	r = sink_register(s, sv[0], sv[1]);
	if (r < 0)
		goto fail;
	fork_guard_exit();
	FL_LOG("fd", "new %s fd %d (core end %d)", kind == SINK_FENCE ? "fence" : "timeline", sv[1],
	       sv[0]);
	*ret_sink = s;
	*ret_user_fd = sv[1];
	return 0;
fail:
	fl__close(sv[0]);
	fl__close(sv[1]);
	fork_guard_exit();
	free(s);
	return r;
}

static int sink_new(enum sink_kind kind, bool strong, struct fl_fence *f, struct fl_timeline *tl,
		    struct fl__sink **ret_sink, int *ret_user_fd)
{
	return sink_new_tracked(kind, strong, f, tl, NULL, NULL, ret_sink, ret_user_fd);
}

/*
 * Write @rec into a pipe whose readers may all be gone. A pipe has no
 * MSG_NOSIGNAL: EPIPE comes with a SIGPIPE to this thread, which would kill
 * a program that does not ignore it. So SIGPIPE is blocked around the write,
 * and one it raised is taken before the mask is restored. Only a thread
 * that blocked SIGPIPE itself can have one pending already (which is the
 * program's, and stays); only then is it worth a sigpending(). That is one
 * syscall before the write, which is what wakes the fd's pollers, so where
 * the kernel has pwritev2()'s RWF_NOSIGNAL (Linux 6.18) the write raises no
 * signal and needs no mask. Non-blocking: a root holder may have reopened
 * the pipe for writing and filled it.
 */
static void write_record(int fd, const struct fl__record *rec)
{
	/*
	 * Success writes the record twice, in one write: a reader in
	 * another process then learns it from the byte count alone
	 * (FIONREAD, see foreign_pipe_status()), and no holder can turn a
	 * failure (one record) into that count, as nobody can write into
	 * the pipe.
	 */
	struct fl__record recs[2] = { *rec, *rec };
	size_t len = rec->status == FL_STATUS_SIGNALED ? sizeof(recs) : sizeof(*rec);
	sigset_t pipe_set, old, pending;
	bool theirs;

	/* No mask where the kernel has RWF_NOSIGNAL: no syscall before the waking write. */
	if (fl__pipe_write_nosignal(fd, recs, len) != -EOPNOTSUPP)
		return;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	theirs = sigismember(&old, SIGPIPE) && sigpending(&pending) == 0 &&
		 sigismember(&pending, SIGPIPE);
	if (write(fd, recs, len) < 0 && errno == EPIPE && !theirs) {
		struct timespec zero = { 0, 0 };

		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * Under the fence lock: a pipe fence completes. Its outcome goes where
 * this process reads it first; then the record into the pipe, for holders
 * in other processes (and for POLLIN); then the status page; then the
 * write end is closed, and the end-of-file, which no holder can consume
 * or cause, is the readiness.
 *
 * The page never runs ahead of the fd: whoever reads a final status
 * there finds the fd ready (the record is in it, or the owner closed its
 * end: see below). And whoever sees the end-of-file finds the outcome in
 * the page; one who saw the record before the page was written finds the
 * page still active for a ready fd, which sends it to the record.
 */
static void pipe_complete_locked(struct fl__sink *s, int status, uint64_t ts)
{
	struct fl__record rec = { FL__RECORD_MAGIC, status, ts };
	int fd = s->fd;

	atomic_store(&s->status, status);
	if (fd < 0) {
		/*
		 * The owner has the only write end, and closes it after the
		 * hook's kick: published held, so that readers take the
		 * outcome only once the fd reads ready.
		 */
		if (s->published)
			page_publish(s, s->fence, status, ts, s->given);
		/* A held point's owner was told when its timeline reached it. */
		if (s->given && given_done_hook && !fl__fence_gate_told(s->fence))
			given_done_hook(s->owner, s->cookie, status, ts);
		return;
	}
	write_record(fd, &rec);
	if (s->published)
		page_publish(s, s->fence, status, ts, false);
	/* Out of the table only once closed (see fork_busy). */
	fork_guard_enter();
	pthread_mutex_lock(&sink_lock);
	/* Unless a release path owns it already (its last reader is gone): then it closes fd. */
	if (slot_get(s->key) == s) {
		fresh_unlink(s);
		done_link(s);
		s->fd = -1;
		if (watcher_forever) {
			watcher_forever = false;
			(void)!eventfd_write(wake_fd, 1);
		}
	}
	pthread_mutex_unlock(&sink_lock);
	if (s->fd < 0)
		fl__close(fd);
	fork_guard_exit();
}

void fl__sink_write_locked(struct fl__sink *s, int status, uint64_t ts)
{
	struct fl__record rec = { FL__RECORD_MAGIC, status, ts };
	int queued = 0;

	if (s->pipe) {
		pipe_complete_locked(s, status, ts);
		return;
	}
	if (s->fd < 0)
		return;
	/*
	 * A timeline's owner writes the record of its own fences through a
	 * copy of an adopted end (and does not shut it down: that would wake
	 * our fd watcher as its waiters wake). Readers only peek, so a record
	 * there is still queued: it stands, and we add none.
	 * Cannot block: 16 bytes into an empty socket. EPIPE when every
	 * holder is gone (or the write side was shut down).
	 */
	if (!s->adopted || ioctl(s->fd, SIOCOUTQ, &queued) < 0 || queued == 0)
		(void)!send(s->fd, &rec, sizeof(rec), MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(s->fd, SHUT_WR);
}

void fl__sink_fence_destroyed(struct fl_fence *f)
{
	if (!f->own_sink)
		return;
	pthread_mutex_lock(&sink_lock);
	f->own_sink->fence = NULL;
	pthread_mutex_unlock(&sink_lock);
	/* Its sink is released by the watcher once every copy of this fd is closed. */
	fl__close(f->own_fd);
}

/*
 * Under f->lock: give a new sink its record now if the fence has completed;
 * otherwise queue it (@queue; the own sink is written through f->own_sink)
 * and arm the fence. True if the caller must then link members, unlocked.
 */
static bool attach_locked(struct fl_fence *f, struct fl__sink *s, bool queue)
{
	int status;

	if (f->completed) {
		status = atomic_load(&f->status);
		fl__sink_write_locked(s, status, fl__fence_timestamp(f, status));
		return false;
	}
	if (queue) {
		s->next = f->sinks;
		s->on_fence_list = true;
		f->sinks = s;
	}
	return !atomic_load(&f->status) && fl__fence_arm_locked(f);
}

/* A strong sink joins @f: attach_locked() under the lock, members linked after it. */
static void attach(struct fl_fence *f, struct fl__sink *s)
{
	bool link;

	pthread_mutex_lock(&f->lock);
	link = attach_locked(f, s, true);
	pthread_mutex_unlock(&f->lock);
	if (link)
		fl__fence_link_members(f);
}

FL_EXPORT int fl_fence_export_fd(struct fl_fence *f, int *ret_fd)
{
	struct fl__sink *s;
	int fd, r;

	fl_return_if(!f || !ret_fd, -EINVAL);
	fl__fence_status(f); /* complete it now if its points already are */
	reap_if_due();
	while ((r = sink_new(SINK_FENCE, true, fl_fence_ref(f), NULL, &s, &fd)) < 0) {
		fl_fence_unref(f);
		if (!reap_for_retry(r))
			return r;
	}
	attach(f, s);
	*ret_fd = fd;
	return 0;
}

FL_EXPORT int fl_fence_get_fd(struct fl_fence *f)
{
	struct fl__sink *s;
	bool link;
	int fd, r;

	fl_return_if(!f, -EINVAL);
	fl__fence_status(f);
	if (f->own_fd < 0)
		reap_if_due();
again:
	pthread_mutex_lock(&f->lock);
	if (f->own_fd >= 0) {
		fd = f->own_fd;
		pthread_mutex_unlock(&f->lock);
		return fd;
	}
	/* Weak: the fence itself holds the user end, so the sink must not hold the fence. */
	r = sink_new(SINK_FENCE, false, f, NULL, &s, &fd);
	if (r < 0) {
		pthread_mutex_unlock(&f->lock);
		/* Unlocked: reaping may release another sink of this fence. */
		if (reap_for_retry(r))
			goto again;
		return r;
	}
	f->own_sink = s;
	f->own_fd = fd;
	link = attach_locked(f, s, false);
	pthread_mutex_unlock(&f->lock);
	if (link)
		fl__fence_link_members(f);
	return fd;
}

/* Under sink_lock: the sink of this process's @kind with that inode, or -ENOTTY. */
static int lookup_key(dev_t dev, ino_t ino, enum sink_kind kind, struct fl__sink **ret)
{
	struct fl__sink *s = hash_find(dev, ino);

	/* Inherited through fork: the parent's objects are not ours. */
	if (!s || s->kind != kind || s->inherited)
		return -ENOTTY;
	*ret = s;
	return 0;
}

static int lookup(int fd, enum sink_kind kind, struct fl__sink **ret)
{
	dev_t dev;
	ino_t ino;
	int r = fl__fd_identity(fd, &dev, &ino, NULL);

	return r < 0 ? r : lookup_key(dev, ino, kind, ret);
}

/* Under sink_lock: a reference to the fence of sink @s (0), or -ENOTTY. */
static int sink_fence_ref(struct fl__sink *s, struct fl_fence **ret)
{
	if (!(s->fence && fl__fence_ref_unless_zero(s->fence)))
		return -ENOTTY;
	*ret = s->fence;
	return 0;
}

FL_EXPORT int fl_fence_from_fd(int fd, struct fl_fence **ret_fence)
{
	struct fl__sink *s;
	int r;

	fl_return_if(!ret_fence, -EINVAL);
	pthread_mutex_lock(&sink_lock);
	r = lookup(fd, SINK_FENCE, &s);
	if (r == 0)
		r = sink_fence_ref(s, ret_fence);
	pthread_mutex_unlock(&sink_lock);
	return r;
}

int fl__fence_from_key(dev_t dev, ino_t ino, struct fl_fence **ret)
{
	struct fl__sink *s;
	int r;

	pthread_mutex_lock(&sink_lock);
	r = lookup_key(dev, ino, SINK_FENCE, &s);
	if (r == 0)
		r = sink_fence_ref(s, ret);
	pthread_mutex_unlock(&sink_lock);
	return r == 0 ? 0 : -ENOENT;
}

FL_EXPORT int fl_timeline_export_fd(struct fl_timeline *tl, int *ret_fd)
{
	struct fl__sink *s;
	int fd, r;

	fl_return_if(!tl || !ret_fd, -EINVAL);
	reap_if_due();
	while ((r = sink_new(SINK_TIMELINE, true, NULL, fl_timeline_ref(tl), &s, &fd)) < 0) {
		fl_timeline_unref(tl);
		if (!reap_for_retry(r))
			return r;
	}
	*ret_fd = fd;
	return 0;
}

FL_EXPORT int fl_timeline_from_fd(int fd, struct fl_timeline **ret_timeline)
{
	struct fl__sink *s;
	int r;

	fl_return_if(!ret_timeline, -EINVAL);
	pthread_mutex_lock(&sink_lock);
	r = lookup(fd, SINK_TIMELINE, &s);
	if (r == 0)
		*ret_timeline = fl_timeline_ref(s->tl);
	pthread_mutex_unlock(&sink_lock);
	return r;
}

static int is_unix_stream(int fd)
{
	int v;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != AF_UNIX)
		return 0;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_STREAM)
		return 0;
	return 1;
}

static const struct fl__host_ops *_Atomic host_ops;

void fl__host_set_ops(const struct fl__host_ops *ops)
{
	atomic_store(&host_ops, ops);
}

/* Fences this process asked the daemon for exist by now (fl__host_ops.settle). */
static void host_settle(void)
{
	const struct fl__host_ops *ops = atomic_load_explicit(&host_ops, memory_order_acquire);

	if (ops && ops->settle)
		ops->settle();
}

/*
 * The status of a pipe fence fd made by another process (or by our parent
 * before a fork): the record its completer wrote, copied out with tee(),
 * which leaves it in the pipe. No whole record, though the fd reads as
 * completed: a holder read it (or part of it) out, or the maker died
 * before completing it. The daemon that made it still knows (the hook asks
 * it); a dead maker's fence failed.
 */
uint64_t fl__pipe_stamp_of(int fd, uint64_t stamp_ns)
{
	struct fl__record rec;
	int queued = 0;

	if (fl__pipe_peek_record(fd, &rec) != 1 || rec.status != 1 || !rec.timestamp_ns ||
	    rec.timestamp_ns == stamp_ns)
		return stamp_ns;
	if (rec.timestamp_ns < stamp_ns)
		return rec.timestamp_ns;
	/* Records are 16 bytes, a success two of them: two successes are 64. */
	if (ioctl(fd, FIONREAD, &queued) == 0 && queued >= 4 * (int)sizeof(rec) &&
	    rec.timestamp_ns <= fl__now_ns())
		return rec.timestamp_ns;
	return stamp_ns;
}

int fl__pipe_peek_record(int fd, struct fl__record *ret)
{
	struct fl__record recs[2];
	int p[2], r;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	/*
	 * Reads consume from the front, so the last 16 bytes are a whole
	 * record as long as 16 or more are left: a holder that read part of
	 * a success's first copy leaves the second intact.
	 */
	n = tee(fd, p[1], sizeof(recs), SPLICE_F_NONBLOCK);
	if (n >= (ssize_t)sizeof(*ret) && read(p[0], recs, (size_t)n) != n)
		n = 0;
	if (n < 0 && errno == EAGAIN) {
		r = -EAGAIN;
	} else if (n < 0) {
		r = -ENOTTY;
	} else if (n >= (ssize_t)sizeof(*ret)) {
		memcpy(ret, (const char *)recs + n - sizeof(*ret), sizeof(*ret));
		r = ret->magic == FL__RECORD_MAGIC;
	} else {
		r = 0; /* end-of-file, or less than a record left */
	}
	close(p[0]);
	close(p[1]);
	return r;
}

static int foreign_pipe_status(int fd)
{
	const struct fl__host_ops *ops;
	struct fl__record rec;
	int r, avail;

	host_settle();
	/*
	 * The common cases in one or two syscalls: two records are a success
	 * (write_record()), nothing queued and no end-of-file is a pending
	 * fence. Anything else (a failure's single record, a record a holder
	 * read out in part or whole, a dead maker) is looked at closely.
	 */
	if (ioctl(fd, FIONREAD, &avail) == 0) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (avail == 2 * (int)sizeof(rec))
			return FL_STATUS_SIGNALED;
		if (avail == 0 && poll(&pf, 1, 0) == 0)
			return FL_STATUS_ACTIVE;
	}
	r = fl__pipe_peek_record(fd, &rec);
	if (r == -EAGAIN)
		return FL_STATUS_ACTIVE;
	if (r == 1)
		return rec.status;
	if (r < 0)
		return r; /* -ENOTTY, or no pipe for tee() */
	ops = atomic_load_explicit(&host_ops, memory_order_acquire);
	return ops && ops->status ? ops->status(fd) : -ECONNRESET;
}

/*
 * The status of a daemon's pipe fence fd from the status page it maps to
 * us in *@ret (host.h); false when it does not say (then ask the pipe). A final
 * status there is the daemon's, published before it closed its write
 * end, and true for good; but an owner's fence (held) is ready only once
 * the owner closed its end after the daemon's kick, and reads active
 * until then, as the fd does. An active one is taken only while the pipe
 * is not at end-of-file: a fence whose write end someone else holds (an
 * owner's) may have completed before the daemon heard of it, and a
 * daemon that died left its page behind with its fences active (they
 * read as failed now).
 */
bool fl__pipe_page_status(int fd, dev_t dev, ino_t ino, int *ret)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	int status, found;

	found = fl__status_page_lookup(dev, ino, &status, NULL);
	if (!found)
		return false;
	*ret = status;
	if (status == FL_STATUS_ACTIVE)
		return poll(&pf, 1, 0) == 0;
	if (found == 2 && poll(&pf, 1, 0) == 0)
		*ret = FL_STATUS_ACTIVE;
	return true;
}

/* The status of a pipe fence fd: from our sink if we made it, else from the page or the pipe. */
static int pipe_status(int fd, dev_t dev, ino_t ino)
{
	struct fl__sink *s;
	bool ours;
	int r = 0;

	pthread_mutex_lock(&sink_lock);
	s = hash_find(dev, ino);
	ours = s && s->pipe && !s->inherited;
	/* A timeline fd reads as a fence that never completes, as a socket's did. */
	if (ours && s->kind == SINK_FENCE)
		r = atomic_load(&s->status);
	pthread_mutex_unlock(&sink_lock);
	if (ours)
		return r;
	host_settle();
	if (fl__pipe_page_status(fd, dev, ino, &r))
		return r;
	return foreign_pipe_status(fd);
}

/* Status of a fence fd that is not a socket: a pipe of ours or of another process's core. */
static int status_not_socket(int fd)
{
	bool pipe;
	dev_t dev;
	ino_t ino;
	int r = fl__fd_identity(fd, &dev, &ino, &pipe);

	if (r < 0)
		return r;
	return pipe ? pipe_status(fd, dev, ino) : -ENOTTY;
}

FL_EXPORT int fl_fence_fd_get_status(int fd)
{
	struct fl__record rec;
	ssize_t n;

	fl_return_if(fd < 0, -EBADF);
	/*
	 * A process that made pipe fds asks which kind first; one that did
	 * not (a daemon client) tries the socket's peek first, whose
	 * ENOTSOCK is cheap, so its fds cost one syscall as before.
	 */
	if (__atomic_load_n(&pipes_made, __ATOMIC_RELAXED)) {
		struct stat st;

		if (fstat(fd, &st) < 0)
			return errno == EBADF ? -EBADF : -ENOTTY;
		if (!S_ISSOCK(st.st_mode))
			return S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == 0
				       ? pipe_status(fd, st.st_dev, st.st_ino)
				       : -ENOTTY;
	}
	host_settle();
	n = recv(fd, &rec, sizeof(rec), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && errno == ENOTSOCK) {
		/* The daemon's fence fds are pipes too: look at the kind first from now on. */
		__atomic_store_n(&pipes_made, true, __ATOMIC_RELAXED);
		return status_not_socket(fd);
	}
	if (n == (ssize_t)sizeof(rec))
		return rec.magic == FL__RECORD_MAGIC ? rec.status : -ENOTTY;
	if (n == 0)
		return is_unix_stream(fd) ? -ECONNRESET : -ENOTTY;
	if (n > 0)
		return -ENOTTY;
	switch (errno) {
	case EAGAIN:
		return is_unix_stream(fd) ? FL_STATUS_ACTIVE : -ENOTTY;
	case EBADF:
		return -EBADF;
	default:
		return -ENOTTY;
	}
}

/* FENCELINE_WAIT_EDEADLK=1: every fd wait asks for FL_WAIT_DEADLOCK_ERROR. */
static unsigned int default_wait_flags(void)
{
	static int env = -1;

	if (env < 0) {
		const char *e = getenv("FENCELINE_WAIT_EDEADLK");

		env = e && *e == '1' ? (int)FL_WAIT_DEADLOCK_ERROR : 0;
	}
	return (unsigned int)env;
}

FL_EXPORT int fl_fence_fd_wait_flags(int fd, int timeout_ms, unsigned int flags)
{
	uint64_t deadline = timeout_ms > 0 ? fl__now_ns() + (uint64_t)timeout_ms * 1000000ull : 0;
	const struct fl__host_ops *ops = NULL;
	uint64_t token = 0;
	int s, notify = -1, ret;
	bool watch_notify = false, completed = false;

	fl_return_if(flags & ~FL_WAIT_DEADLOCK_ERROR, -EINVAL);
	s = fl_fence_fd_get_status(fd);
	if (s == FL_STATUS_ACTIVE && timeout_ms != 0) {
		/* About to block: tell the daemon who waits on what. */
		ops = atomic_load_explicit(&host_ops, memory_order_acquire);
		if (ops && ops->wait_begin)
			token = ops->wait_begin(fd, timeout_ms, flags | default_wait_flags(),
						&notify);
		watch_notify = notify >= 0;
		FL_PROBE3(fd_wait_begin, fd, timeout_ms, token);
	}
	while (s == FL_STATUS_ACTIVE) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = notify, .events = POLLIN } };
		int left = timeout_ms, r;

		if (timeout_ms > 0) {
			uint64_t now = fl__now_ns();

			left = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
		}
		r = poll(p, watch_notify ? 2 : 1, left);
		if (r < 0 && errno != EINTR) {
			s = -errno;
			break;
		}
		if (r == 0) {
			s = -ETIME;
			break;
		}
		if (r > 0 && (p[0].revents & POLLNVAL)) {
			s = -EBADF;
			break;
		}
		if (r > 0 && watch_notify && p[1].revents) {
			int n = ops->wait_notified(token, notify);

			if (n < 0) {
				s = n;
				break;
			}
			/* Hung up: the daemon is done with this wait (the fence completed). */
			if (p[1].revents & (POLLHUP | POLLERR))
				watch_notify = false;
		}
		s = fl_fence_fd_get_status(fd);
		/* A status record: the fence completed (the daemon saw it too). */
		completed =
			s != FL_STATUS_ACTIVE && s != -EBADF && s != -ENOTTY && s != -ECONNRESET;
	}
	ret = s == FL_STATUS_SIGNALED ? 0 : s;
	if (token) {
		FL_PROBE2(fd_wait_end, fd, ret);
		ops->wait_end(token, completed ? 1 : ret, notify);
	} else if (notify >= 0) {
		close(notify);
	}
	return ret;
}

FL_EXPORT int fl_fence_fd_wait(int fd, int timeout_ms)
{
	return fl_fence_fd_wait_flags(fd, timeout_ms, 0);
}

/*
 * Random nonces for check_pair(), 16 bytes each, from a buffer refilled by
 * getrandom() once per 256 probes (syscalls are what adoption costs).
 */
static pthread_mutex_t nonce_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t nonce_buf[512];
static size_t nonce_left;

static int next_nonce(uint64_t nonce[2])
{
	int r = 0;

	pthread_mutex_lock(&nonce_lock);
	if (nonce_left < 2) {
		r = fl__random(nonce_buf, sizeof(nonce_buf));
		nonce_left = r < 0 ? 0 : FL_ARRAY_SIZE(nonce_buf);
	}
	if (r == 0) {
		nonce_left -= 2;
		memcpy(nonce, &nonce_buf[nonce_left], 2 * sizeof(*nonce));
		memset(&nonce_buf[nonce_left], 0, 2 * sizeof(*nonce));
	}
	pthread_mutex_unlock(&nonce_lock);
	return r;
}

/*
 * Are @sink and @user the two ends of one connected socket pair? Bytes
 * nobody can guess, sent through @user, must come out of @sink first. That
 * also rules out non-sockets (send() fails) and a sink with stale data
 * queued (it would be read first and differ).
 */
static int check_pair(int sink, int user)
{
	uint64_t nonce[2], got[2];
	ssize_t n;

	if (next_nonce(nonce) < 0)
		return -EIO;
	if (send(user, nonce, sizeof(nonce), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(nonce))
		return errno == ENOTSOCK ? -ENOTSOCK : -EINVAL;
	n = recv(sink, got, sizeof(got), MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(got) || memcmp(nonce, got, sizeof(got)) != 0)
		return -EINVAL;
	return 0;
}

int fl__timeline_from_key(dev_t dev, ino_t ino, struct fl_timeline **ret)
{
	struct fl__sink *s;
	int r;

	pthread_mutex_lock(&sink_lock);
	r = lookup_key(dev, ino, SINK_TIMELINE, &s);
	if (r == 0)
		*ret = fl_timeline_ref(s->tl);
	pthread_mutex_unlock(&sink_lock);
	return r == 0 ? 0 : -ENOENT;
}

/* Register @s (dev/ino set) as @f's sink @sink; @user only sizes the fd table. */
static int adopt_sink(struct fl_fence *f, struct fl__sink *s, int sink, int user,
		      fl__host_release_fn release, void *owner)
{
	bool link;
	int r;

	s->kind = SINK_FENCE;
	s->strong = true;
	s->adopted = true;
	s->fence = fl_fence_ref(f);
	s->release = release;
	s->owner = owner;
	s->fd = sink;
	fl__fence_status(f);
	/*
	 * Attach before the watcher can see the sink: unlike an fd we export,
	 * this one's user end is out there already, and if every copy of it is
	 * closed, the watcher releases (frees) the sink as soon as it is
	 * registered.
	 */
	pthread_mutex_lock(&f->lock);
	link = attach_locked(f, s, true);
	pthread_mutex_unlock(&f->lock);
	r = sink_register(s, sink, user);
	if (r < 0) {
		pthread_mutex_lock(&f->lock);
		sink_unlink_locked(f, s);
		pthread_mutex_unlock(&f->lock);
	}
	/* Armed by attach_locked(): link it even without the sink, so it completes. */
	if (link)
		fl__fence_link_members(f);
	if (r < 0)
		fl_fence_unref(f);
	return r;
}

int fl__fence_adopt_sink(struct fl_fence *f, int sink, dev_t dev, ino_t ino,
			 fl__host_release_fn release, void *owner)
{
	struct fl__sink *s = calloc(1, sizeof(*s));
	int r = s ? 0 : -ENOMEM;

	if (s) {
		s->dev = dev;
		s->ino = ino;
		r = adopt_sink(f, s, sink, sink, release, owner);
	}
	if (r < 0) {
		free(s);
		fl__fd_pair_fail(sink, r);
		return r;
	}
	FL_LOG("fd", "adopted pooled fence fd pair (core end %d)", sink);
	return 0;
}

int fl__fence_adopt_fds(struct fl_fence *f, int sink, int user, fl__host_release_fn release,
			void *owner)
{
	struct fl__sink *s;
	int r;

	if (!f || sink < 0 || user < 0) {
		r = -EBADF;
		goto fail_fds;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = -ENOMEM;
		goto fail_fds;
	}
	r = fl__fd_inode(user, &s->dev, &s->ino);
	if (r == 0)
		r = check_pair(sink, user);
	if (r == 0)
		r = adopt_sink(f, s, sink, user, release, owner);
	if (r < 0)
		goto fail;
	FL_LOG("fd", "adopted fence fd pair (core end %d)", sink);
	fl__close(user);
	return 0;
fail:
	free(s);
fail_fds:
	/*
	 * A pair that is not one gets nothing written to it. A real one that
	 * we could not take (no memory, no fds) carries the error to whoever
	 * holds the user end, like a fence that failed.
	 */
	if (r == -EBADF || r == -ENOTSOCK || r == -EINVAL || r == -EEXIST)
		fl__close(sink);
	else
		fl__fd_pair_fail(sink, r);
	if (user >= 0)
		fl__close(user);
	return r;
}

int fl__timeline_export_fd_tracked(struct fl_timeline *tl, int *ret_fd, fl__host_release_fn release,
				   void *owner)
{
	struct fl__sink *s;
	int fd, r;

	fl_return_if(!tl || !ret_fd, -EINVAL);
	r = sink_new_tracked(SINK_TIMELINE, true, NULL, fl_timeline_ref(tl), release, owner, &s,
			     &fd);
	if (r < 0) {
		fl_timeline_unref(tl);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

void fl__sink_foreach(void (*fn)(const void *object, bool fence, dev_t dev, ino_t ino, void *arg),
		      void *arg)
{
	pthread_mutex_lock(&sink_lock);
	for (size_t i = 0; i < table_size; i++)
		for (struct fl__sink *s = table[i]; s; s = s->hash_next)
			fn(s->kind == SINK_FENCE ? (const void *)s->fence : (const void *)s->tl,
			   s->kind == SINK_FENCE, s->dev, s->ino, arg);
	pthread_mutex_unlock(&sink_lock);
}

size_t fl__sink_count(void)
{
	size_t n;

	pthread_mutex_lock(&sink_lock);
	n = table_count;
	pthread_mutex_unlock(&sink_lock);
	return n;
}

void fl__fd_pair_fail(int sink, int status)
{
	struct fl__record rec = { FL__RECORD_MAGIC, status, fl__now_ns() };

	if (sink < 0)
		return;
	/* The record stays queued for the user end after we close ours. */
	(void)!send(sink, &rec, sizeof(rec), MSG_NOSIGNAL | MSG_DONTWAIT);
	fl__close(sink);
}

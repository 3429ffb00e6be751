/* SPDX-License-Identifier: MIT */
/*
 * The status page (statuspage.h): the table, the daemon's page and the
 * clients' mapping.
 *
 * The entries use a sequence count without fences (which TSan does not
 * model): the writer makes the count odd, stores the fields with release
 * (each store is ordered after the odd count), then makes it even with
 * release; a reader loads the count with acquire, the fields with acquire
 * (the second load of the count cannot move above them) and the count
 * again. Seeing a field from a write means seeing its odd count after it,
 * so a torn entry always shows as a changed count.
 *
 * Tombstones, not backward shifts: an entry never moves, so a lookup that
 * runs while the daemon deletes another key cannot miss its own (a shift
 * would move a key behind a reader's position); an empty slot never comes
 * back, so an empty slot still ends a probe correctly. Tombstones only
 * lengthen the lookups of absent keys, which the probe bound caps, and an
 * insertion reuses them, so the table never needs a cleanup.
 *
 * The info page's records (fl_fence_fd_get_info() without a round trip)
 * follow the same rules in a small table of their own, written with the
 * key's entry under the same lock; a full probe range evicts the oldest
 * record, which only sends that fence's info to the daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statuspage.h"

#define LD(p)	   __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ST(p, v)   __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define READ_TRIES 4

_Static_assert(sizeof(struct fl_status_entry) == 32, "entries are 32 bytes");
_Static_assert(sizeof(struct fl_status_page_header) <= FL_STATUS_PAGE_HEADER, "header fits");
_Static_assert((FL_STATUS_PAGE_SLOTS & (FL_STATUS_PAGE_SLOTS - 1)) == 0, "slots: power of two");

/*
 * The inode number itself, not a mix of its bits: the kernel hands out
 * pipe inode numbers from a counter (in per-CPU runs), so the daemon's
 * live fences have nearby numbers and fill nearby slots. They then touch
 * few pages of the memfd (memory is only taken where entries land), and
 * keys a counter made do not collide until they are 65536 apart. Nobody
 * picks an inode number; one who steers collisions (by making inodes in
 * between) only sends lookups to the slow path.
 */
uint32_t fl__status_table_home(dev_t dev, ino_t ino)
{
	return (uint32_t)((uint64_t)ino + (uint64_t)dev * 0x9e3779b9u) & (FL_STATUS_PAGE_SLOTS - 1);
}

static bool is_live(uint32_t state)
{
	return state == FL_STATUS_E_LIVE || state == FL_STATUS_E_HELD;
}

static struct fl_status_entry *slot(void *entries, uint32_t home, uint32_t i)
{
	return (struct fl_status_entry *)entries + ((home + i) & (FL_STATUS_PAGE_SLOTS - 1));
}

/* The writer's side of the sequence count. */
static void write_entry(struct fl_status_entry *e, uint32_t state, uint32_t dev, uint64_t ino,
			int status, uint64_t stamp_ns)
{
	uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&e->seq, seq + 1, __ATOMIC_RELAXED);
	ST(&e->state, state);
	ST(&e->dev, dev);
	ST(&e->ino, ino);
	ST(&e->status, (int32_t)status);
	ST(&e->stamp_ns, stamp_ns);
	ST(&e->seq, seq + 2);
}

/* A consistent copy of @e, or false after READ_TRIES changes under us. */
static bool read_entry(const struct fl_status_entry *e, struct fl_status_entry *out)
{
	for (int i = 0; i < READ_TRIES; i++) {
		uint32_t seq = LD(&e->seq);

		if (seq & 1)
			continue;
		out->state = LD(&e->state);
		out->dev = LD(&e->dev);
		out->ino = LD(&e->ino);
		out->status = LD(&e->status);
		out->stamp_ns = LD(&e->stamp_ns);
		if (LD(&e->seq) == seq)
			return true;
	}
	return false;
}

/* Insert or update; the slot index, or a negative errno as fl__status_table_put(). */
static int put_entry(void *entries, dev_t dev, ino_t ino, int status, uint64_t stamp_ns, bool held)
{
	uint32_t live = held ? FL_STATUS_E_HELD : FL_STATUS_E_LIVE;
	uint32_t home = fl__status_table_home(dev, ino);
	struct fl_status_entry *free_slot = NULL;

	if ((uint64_t)dev > UINT32_MAX)
		return -ERANGE;
	for (uint32_t i = 0; i < FL_STATUS_PAGE_PROBE; i++) {
		struct fl_status_entry *e = slot(entries, home, i);
		uint32_t state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);

		if (is_live(state) && __atomic_load_n(&e->dev, __ATOMIC_RELAXED) == dev &&
		    __atomic_load_n(&e->ino, __ATOMIC_RELAXED) == (uint64_t)ino) {
			write_entry(e, live, (uint32_t)dev, ino, status, stamp_ns);
			return (int)(e - (struct fl_status_entry *)entries);
		}
		if (!is_live(state) && !free_slot)
			free_slot = e;
		if (state == FL_STATUS_E_EMPTY)
			break;
	}
	if (!free_slot)
		return -ENOSPC;
	write_entry(free_slot, live, (uint32_t)dev, ino, status, stamp_ns);
	return (int)(free_slot - (struct fl_status_entry *)entries);
}

int fl__status_table_put(void *entries, dev_t dev, ino_t ino, int status, uint64_t stamp_ns,
			 bool held)
{
	int r = put_entry(entries, dev, ino, status, stamp_ns, held);

	return r < 0 ? r : 0;
}

/*
 * An info record: a sequence word, odd while written, then the body in
 * words, with the entries' discipline (release stores after the odd
 * count, acquire loads between the two reads of it).
 */
#define INFO_WORDS (sizeof(struct fl_info_body) / sizeof(uint64_t))
struct info_record {
	uint64_t seq;
	uint64_t w[INFO_WORDS];
};
union info_words {
	struct fl_info_body b;
	uint64_t w[INFO_WORDS];
};
_Static_assert(sizeof(struct fl_info_body) % sizeof(uint64_t) == 0, "info body: whole words");
_Static_assert(sizeof(struct info_record) <= FL_INFO_RECORD_SIZE, "info record fits");

static struct info_record *info_slot(const void *info, uint32_t i)
{
	return (struct info_record *)((char *)info + (size_t)i * FL_INFO_RECORD_SIZE);
}

static void write_info(struct info_record *rec, const union info_words *u)
{
	uint64_t seq = __atomic_load_n(&rec->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&rec->seq, seq + 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < INFO_WORDS; i++)
		ST(&rec->w[i], u->w[i]);
	ST(&rec->seq, seq + 2);
}

static bool read_info(const struct info_record *rec, union info_words *out)
{
	for (int t = 0; t < READ_TRIES; t++) {
		uint64_t seq = LD(&rec->seq);

		if (seq & 1)
			continue;
		for (size_t i = 0; i < INFO_WORDS; i++)
			out->w[i] = LD(&rec->w[i]);
		if (LD(&rec->seq) == seq)
			return true;
	}
	return false;
}

/* Orders the records by their writes (the writer's, under its lock), for eviction. */
static uint32_t info_born;

/* Where a key's probe starts in the info table. */
static uint32_t info_home(dev_t dev, ino_t ino)
{
	return (uint32_t)((uint64_t)ino + (uint64_t)dev * 0x9e3779b9u) & (FL_INFO_SLOTS - 1);
}

/* The words of a record's body up to its age: all a probe looks at. */
#define INFO_HEAD_WORDS                                                                    \
	((offsetof(struct fl_info_body, born) + sizeof(uint32_t) + sizeof(uint64_t) - 1) / \
	 sizeof(uint64_t))

/*
 * The writer's view of record @i's key, state and age: one writer, so
 * plain (relaxed) loads do. Only those words: a probe passes up to
 * FL_INFO_PROBE records of 512 bytes, and copying them whole was 4% of the
 * daemon's time making pooled fences.
 */
static void peek_head(const void *info, uint32_t i, union info_words *out)
{
	const struct info_record *rec = info_slot(info, i);

	for (size_t k = 0; k < INFO_HEAD_WORDS; k++)
		out->w[k] = __atomic_load_n(&rec->w[k], __ATOMIC_RELAXED);
}

/*
 * The slot of the key's live record, or (@free_slot) of the first slot a
 * new one may take; -1: none. The table is small (memory for a few hundred
 * live fences, whatever their number): a key finds no free slot in its
 * probe range when many are live, and then has no record (info asks the
 * daemon).
 */
static int info_find(const void *info, dev_t dev, ino_t ino, int *free_slot)
{
	uint32_t home = info_home(dev, ino), oldest = UINT32_MAX;
	int victim = -1;

	*free_slot = -1;
	for (uint32_t k = 0; k < FL_INFO_PROBE; k++) {
		uint32_t i = (home + k) & (FL_INFO_SLOTS - 1);
		union info_words u;

		peek_head(info, i, &u);
		if (is_live(u.b.state) && u.b.dev == (uint32_t)dev && u.b.ino == (uint64_t)ino)
			return (int)i;
		if (!is_live(u.b.state) && *free_slot < 0)
			*free_slot = (int)i;
		if (u.b.state == FL_STATUS_E_EMPTY)
			break;
		if (is_live(u.b.state) && u.b.born < oldest) {
			oldest = u.b.born;
			victim = (int)i;
		}
	}
	/*
	 * All taken: the oldest record gives way. Fences whose fds were closed
	 * keep their entries until the daemon's next sweep, and a new fence is
	 * the likelier to be asked about; a key without its record only asks
	 * the daemon.
	 */
	if (*free_slot < 0)
		*free_slot = victim;
	return -1;
}

int fl__status_table_put_info(void *entries, void *info, dev_t dev, ino_t ino, int status,
			      uint64_t stamp_ns, bool held, const struct fl_info_body *body)
{
	int i = put_entry(entries, dev, ino, status, stamp_ns, held), at, free_slot;
	union info_words u;

	if (i < 0 || !info)
		return i < 0 ? i : 0;
	at = info_find(info, dev, ino, &free_slot);
	memset(&u, 0, sizeof(u));
	if (body) {
		if (at < 0)
			at = free_slot;
		u.b = *body;
		u.b.born = ++info_born;
		u.b.state = held ? FL_STATUS_E_HELD : FL_STATUS_E_LIVE;
		u.b.dev = (uint32_t)dev;
		u.b.ino = (uint64_t)ino;
		u.b.status = (int32_t)status;
		u.b.timestamp_ns = stamp_ns;
	} else {
		/* A status without info: the key's record goes (a tombstone), never left stale. */
		u.b.state = FL_STATUS_E_GONE;
	}
	if (at >= 0)
		write_info(info_slot(info, (uint32_t)at), &u);
	return 0;
}

/* The key's record becomes a tombstone, if it has one. */
static void info_del(void *info, dev_t dev, ino_t ino)
{
	union info_words u;
	int free_slot, at = info_find(info, dev, ino, &free_slot);

	if (at < 0)
		return;
	memset(&u, 0, sizeof(u));
	u.b.state = FL_STATUS_E_GONE;
	write_info(info_slot(info, (uint32_t)at), &u);
}

/* The slot index of the key's live entry, or -1. */
static int del_entry(void *entries, dev_t dev, ino_t ino);

int fl__status_table_del(void *entries, dev_t dev, ino_t ino)
{
	return del_entry(entries, dev, ino) < 0 ? -ENOENT : 0;
}

static int del_entry(void *entries, dev_t dev, ino_t ino)
{
	uint32_t home = fl__status_table_home(dev, ino);

	if ((uint64_t)dev > UINT32_MAX)
		return -1;
	for (uint32_t i = 0; i < FL_STATUS_PAGE_PROBE; i++) {
		struct fl_status_entry *e = slot(entries, home, i);
		uint32_t state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);

		if (state == FL_STATUS_E_EMPTY)
			break;
		if (is_live(state) && __atomic_load_n(&e->dev, __ATOMIC_RELAXED) == dev &&
		    __atomic_load_n(&e->ino, __ATOMIC_RELAXED) == (uint64_t)ino) {
			write_entry(e, FL_STATUS_E_GONE, 0, 0, 0, 0);
			return (int)(e - (struct fl_status_entry *)entries);
		}
	}
	return -1;
}

/* The key's live entry in *@c and its slot index, or -1. */
static int find_entry(const void *entries, dev_t dev, ino_t ino, struct fl_status_entry *c);

int fl__status_table_get(const void *entries, dev_t dev, ino_t ino, int *ret_status,
			 uint64_t *ret_stamp_ns)
{
	struct fl_status_entry c;

	if (find_entry(entries, dev, ino, &c) < 0)
		return 0;
	if (ret_status)
		*ret_status = c.status;
	if (ret_stamp_ns)
		*ret_stamp_ns = c.stamp_ns;
	return c.state == FL_STATUS_E_HELD ? 2 : 1;
}

bool fl__status_table_get_info(const void *info, dev_t dev, ino_t ino, struct fl_info_body *ret)
{
	uint32_t home = info_home(dev, ino);

	if ((uint64_t)dev > UINT32_MAX)
		return false;
	for (uint32_t k = 0; k < FL_INFO_PROBE; k++) {
		union info_words u;

		/* Being written: not empty (never written back), so the probe goes on. */
		if (!read_info(info_slot(info, (home + k) & (FL_INFO_SLOTS - 1)), &u))
			continue;
		if (u.b.state == FL_STATUS_E_EMPTY)
			return false;
		if (is_live(u.b.state) && u.b.dev == (uint32_t)dev && u.b.ino == (uint64_t)ino) {
			*ret = u.b;
			return true;
		}
	}
	return false;
}

static int find_entry(const void *entries, dev_t dev, ino_t ino, struct fl_status_entry *out)
{
	uint32_t home = fl__status_table_home(dev, ino);

	if ((uint64_t)dev > UINT32_MAX)
		return -1;
	for (uint32_t i = 0; i < FL_STATUS_PAGE_PROBE; i++) {
		const struct fl_status_entry *e = slot((void *)entries, home, i);
		struct fl_status_entry c;

		/*
		 * Being written: it is not empty (an empty slot is never
		 * written back), so the probe goes on past it. If it is our
		 * key, we miss it, which only costs the slow path.
		 */
		if (!read_entry(e, &c))
			continue;
		if (c.state == FL_STATUS_E_EMPTY)
			return -1;
		if (is_live(c.state) && c.dev == dev && c.ino == (uint64_t)ino) {
			*out = c;
			return (int)((home + i) & (FL_STATUS_PAGE_SLOTS - 1));
		}
	}
	return -1;
}

/* The writer's page: set once, in the daemon. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static char *write_page;
static int page_fd = -1;
/* The info page's writable mapping (NULL: none) and its read-only fd. */
static char *write_info_page;
static int write_info_fd = -1;
static bool atfork_done;

/* A forked child is not the daemon: it must not change the daemon's page. */
static void atfork_child(void)
{
	__atomic_store_n(&write_page, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&write_info_page, NULL, __ATOMIC_RELAXED);
	pthread_mutex_init(&write_lock, NULL);
}

/*
 * A sealed memfd of @size, mapped writable in *@ret_map, whose
 * read-only fd is returned (or a negative errno). Our writable mapping
 * stays; no new one can be made, by anybody; clients get a read-only fd,
 * so write() and PROT_WRITE mappings fail twice over.
 */
static int make_sealed(const char *name, size_t size, void **ret_map)
{
	int fd, r;
	void *m;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		r = -errno;
		goto out_close;
	}
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		r = -errno;
		goto out_close;
	}
	/* The header first: nothing else will ever change it. */
	*ret_map = m;
	return fd;
out_close:
	close(fd);
	return r;
}

/* Seal @fd (from make_sealed(), its header written) and swap it for a read-only fd. */
static int seal(int fd, void *m, size_t size)
{
	const unsigned int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
	char path[64];
	int ro, r;

	if (fcntl(fd, F_ADD_SEALS, seals) < 0) {
		r = -errno;
		munmap(m, size);
		close(fd);
		return r;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro >= 0) {
		close(fd);
		fd = ro;
	}
	return fd;
}

/*
 * The alive word: a robust, process-shared mutex at @at, locked by the
 * calling thread for good. glibc puts it on the thread's robust list, and
 * when the thread dies the kernel sets FUTEX_OWNER_DIED in its futex
 * word, the mutex's first int (glibc's __lock). Only with glibc, whose
 * layout that is. Return: 0, or a negative errno (then no word).
 */
static int alive_word_take(void *at)
{
#ifdef __GLIBC__
	pthread_mutexattr_t a;
	pthread_mutex_t *m = at;
	int r;

	_Static_assert(FL_STATUS_PAGE_ALIVE_OFF + sizeof(pthread_mutex_t) <= FL_STATUS_PAGE_HEADER,
		       "the alive word fits in the header page");
	_Static_assert(offsetof(pthread_mutex_t, __data.__lock) == 0,
		       "the futex word is the mutex's first int");
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	r = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	if (r == 0)
		r = pthread_mutex_lock(m);
	return -r;
#else
	(void)at;
	return -ENOTSUP;
#endif
}

int fl__status_page_create(void)
{
	struct fl_status_page_header *h;
	struct fl_info_page_header *ih;
	void *m, *im;
	bool made = false;
	int fd, ifd;

	pthread_mutex_lock(&write_lock);
	if (write_page) {
		pthread_mutex_unlock(&write_lock);
		return page_fd;
	}
	fd = make_sealed("fenceline-status", FL_STATUS_PAGE_SIZE, &m);
	if (fd < 0)
		goto out;
	h = m;
	h->magic = FL_STATUS_PAGE_MAGIC;
	h->slots = FL_STATUS_PAGE_SLOTS;
	h->entry_size = sizeof(struct fl_status_entry);
	h->probe = FL_STATUS_PAGE_PROBE;
	fd = seal(fd, m, FL_STATUS_PAGE_SIZE);
	if (fd < 0)
		goto out;
	/* Without the info page, the status page alone: info asks the daemon. */
	ifd = make_sealed("fenceline-info", FL_INFO_PAGE_SIZE, &im);
	if (ifd >= 0) {
		ih = im;
		ih->magic = FL_INFO_PAGE_MAGIC;
		ih->slots = FL_INFO_SLOTS;
		ih->probe = FL_INFO_PROBE;
		ih->record_size = FL_INFO_RECORD_SIZE;
		ih->points = FL_INFO_POINTS;
		ifd = seal(ifd, im, FL_INFO_PAGE_SIZE);
	}
	if (ifd >= 0) {
		__atomic_store_n(&write_info_page, (char *)im, __ATOMIC_RELEASE);
		write_info_fd = ifd;
	}
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, atfork_child);
		atfork_done = true;
	}
	__atomic_store_n(&write_page, (char *)m, __ATOMIC_RELEASE);
	page_fd = fd;
	made = true;
out:
	pthread_mutex_unlock(&write_lock);
	/*
	 * The alive word last, with no lock of ours held: a mutex locked for
	 * good comes before every lock this thread takes later, and taking it
	 * under write_lock would order it after write_lock too (a cycle, to
	 * ThreadSanitizer). Our writable mapping stays writable under the
	 * seals; the daemon sends the page only after this returns.
	 */
	if (made && alive_word_take((char *)m + FL_STATUS_PAGE_ALIVE_OFF) == 0)
		__atomic_store_n(&h->alive_off, FL_STATUS_PAGE_ALIVE_OFF, __ATOMIC_RELEASE);
	return fd;
}

int fl__status_page_info_fd(void)
{
	int fd;

	pthread_mutex_lock(&write_lock);
	fd = write_page ? write_info_fd : -1;
	pthread_mutex_unlock(&write_lock);
	return fd;
}

bool fl__status_page_writing(void)
{
	return __atomic_load_n(&write_page, __ATOMIC_RELAXED) != NULL;
}

int fl__status_page_publish(dev_t dev, ino_t ino, int status, uint64_t stamp_ns, bool held)
{
	/* The slot's info record is cleared: it would no longer match the entry. */
	return fl__status_page_publish_info(dev, ino, status, stamp_ns, held, NULL);
}

int fl__status_page_publish_info(dev_t dev, ino_t ino, int status, uint64_t stamp_ns, bool held,
				 const struct fl_info_body *body)
{
	int r = -ENODEV;

	pthread_mutex_lock(&write_lock);
	if (write_page)
		r = fl__status_table_put_info(
			write_page + FL_STATUS_PAGE_HEADER,
			write_info_page ? write_info_page + FL_INFO_PAGE_HEADER : NULL, dev, ino,
			status, stamp_ns, held, body);
	pthread_mutex_unlock(&write_lock);
	return r;
}

bool fl__status_page_info_listed(dev_t dev, ino_t ino)
{
	struct fl_info_body b;
	bool r = false;

	pthread_mutex_lock(&write_lock);
	if (write_page && write_info_page)
		r = fl__status_table_get_info(write_info_page + FL_INFO_PAGE_HEADER, dev, ino, &b);
	pthread_mutex_unlock(&write_lock);
	return r;
}

void fl__status_page_remove(dev_t dev, ino_t ino)
{
	pthread_mutex_lock(&write_lock);
	if (write_page) {
		int i = del_entry(write_page + FL_STATUS_PAGE_HEADER, dev, ino);

		/* Its record goes with it: a reused inode must not find it. */
		if (i >= 0 && write_info_page)
			info_del(write_info_page + FL_INFO_PAGE_HEADER, dev, ino);
	}
	pthread_mutex_unlock(&write_lock);
}

void fl__status_page_set_tracing(bool on)
{
	pthread_mutex_lock(&write_lock);
	if (write_page)
		__atomic_store_n(&((struct fl_status_page_header *)write_page)->tracing,
				 (uint64_t)on, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&write_lock);
}

/*
 * The reader's side. The process maps the page once, at one address kept
 * for its whole life: a new connection's page is mapped over the old one
 * (MAP_FIXED), and a dropped connection's range is mapped to zeros. A
 * remapping waits until no lookup is in the page: a lookup announces
 * itself in a counter (one of READER_SLOTS, by thread, so that threads do
 * not share a cache line), then checks @read_valid; a remapping clears
 * @read_valid, then waits for the counters to drain (lookups never block,
 * so that is short). Either the lookup sees the page invalid and leaves,
 * or the remapping sees it and waits: the two sides use seq_cst, so at
 * least one of them sees the other (Dekker). A lookup thus never reads a
 * mapping while it is replaced, and never a blank one.
 */
#define READER_SLOTS 16

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *read_page;
static bool read_valid;
/*
 * The info page, mapped at one address for life like read_page; its
 * records are used only with read_info_ok (set before read_valid).
 */
static const char *info_page;
static bool read_info_ok;
static struct {
	_Alignas(64) unsigned int n;
} readers[READER_SLOTS];
static unsigned int reader_next;
static _Thread_local unsigned int reader_slot; /* slot + 1; 0: none yet */

/* Under map_lock: no lookup is in the page (and none gets in) when this returns. */
static void readers_out_locked(void)
{
	__atomic_store_n(&read_valid, false, __ATOMIC_SEQ_CST);
	for (unsigned int i = 0; i < READER_SLOTS; i++)
		while (__atomic_load_n(&readers[i].n, __ATOMIC_SEQ_CST))
			sched_yield();
}

/* Under map_lock, readers out: the mapping at @at (@size bytes) becomes zeros (an empty table). */
static void blank_at(const char *at, size_t size)
{
	void *m = mmap((void *)at, size, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);

	/* Where even that fails, the old pages stay, but unused: read_valid stays false. */
	(void)m;
}

static void blank_locked(void)
{
	blank_at(read_page, FL_STATUS_PAGE_SIZE);
	__atomic_store_n(&read_info_ok, false, __ATOMIC_RELAXED);
	if (info_page)
		blank_at(info_page, FL_INFO_PAGE_SIZE);
}

/* A sealed, read-only memfd of @size that nobody can shrink or write: 0 or -EPROTO. */
static int check_sealed(int fd, size_t size)
{
	const unsigned int need = F_SEAL_SHRINK | F_SEAL_FUTURE_WRITE;
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0)
		return -errno;
	seals = fcntl(fd, F_GET_SEALS);
	if (!S_ISREG(st.st_mode) || st.st_size != (off_t)size || seals < 0 ||
	    ((unsigned int)seals & need) != need)
		return -EPROTO;
	return 0;
}

/*
 * Under map_lock, readers out, the status page valid: map @fd's info page
 * at info_page (an address kept for life, like read_page's). A page that
 * does not check out is only no info: read_info_ok stays false.
 */
static void map_info_locked(int fd)
{
	const struct fl_info_page_header *h;
	void *m;

	if (fd < 0 || check_sealed(fd, FL_INFO_PAGE_SIZE) < 0)
		return;
	m = mmap((void *)info_page, FL_INFO_PAGE_SIZE, PROT_READ,
		 MAP_SHARED | (info_page ? MAP_FIXED : 0), fd, 0);
	if (m == MAP_FAILED) {
		if (info_page)
			blank_at(info_page, FL_INFO_PAGE_SIZE);
		return;
	}
	if (!info_page)
		__atomic_store_n(&info_page, (const char *)m, __ATOMIC_RELEASE);
	h = m;
	if (h->magic != FL_INFO_PAGE_MAGIC || h->slots != FL_INFO_SLOTS ||
	    h->probe != FL_INFO_PROBE || h->record_size != FL_INFO_RECORD_SIZE ||
	    h->points != FL_INFO_POINTS) {
		blank_at(info_page, FL_INFO_PAGE_SIZE);
		return;
	}
	__atomic_store_n(&read_info_ok, true, __ATOMIC_RELAXED);
}

int fl__status_page_map(int fd, int info_fd)
{
	const struct fl_status_page_header *h;
	int r;
	void *m;

	r = check_sealed(fd, FL_STATUS_PAGE_SIZE);
	if (r < 0)
		return r;
	pthread_mutex_lock(&map_lock);
	readers_out_locked();
	m = mmap((void *)read_page, FL_STATUS_PAGE_SIZE, PROT_READ,
		 MAP_SHARED | (read_page ? MAP_FIXED : 0), fd, 0);
	if (m == MAP_FAILED) {
		r = -errno;
		if (read_page)
			blank_locked();
		pthread_mutex_unlock(&map_lock);
		return r;
	}
	h = m;
	if (h->magic != FL_STATUS_PAGE_MAGIC || h->slots != FL_STATUS_PAGE_SLOTS ||
	    h->entry_size != sizeof(struct fl_status_entry) || h->probe != FL_STATUS_PAGE_PROBE)
		r = -EPROTO;
	if (!read_page)
		__atomic_store_n(&read_page, (const char *)m, __ATOMIC_RELEASE);
	if (r < 0) {
		blank_locked();
	} else {
		/* The last connection's info must not answer for this one's entries. */
		__atomic_store_n(&read_info_ok, false, __ATOMIC_RELAXED);
		if (info_page)
			blank_at(info_page, FL_INFO_PAGE_SIZE);
		map_info_locked(info_fd);
		__atomic_store_n(&read_valid, true, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&map_lock);
	return r;
}

void fl__status_page_unmap(void)
{
	pthread_mutex_lock(&map_lock);
	if (read_page) {
		readers_out_locked();
		blank_locked();
	}
	pthread_mutex_unlock(&map_lock);
}

void fl__status_page_forked(void)
{
	/* The threads that were in a lookup at the fork do not exist here. */
	for (unsigned int i = 0; i < READER_SLOTS; i++)
		__atomic_store_n(&readers[i].n, 0, __ATOMIC_RELAXED);
	pthread_mutex_init(&map_lock, NULL);
	fl__status_page_unmap();
}

int fl__status_page_lookup(dev_t dev, ino_t ino, int *ret_status, uint64_t *ret_stamp_ns)
{
	const char *p = __atomic_load_n(&read_page, __ATOMIC_ACQUIRE);
	unsigned int *n;
	uint64_t stamp;
	int status, r = 0;

	if (!p)
		return 0;
	if (!reader_slot)
		reader_slot =
			__atomic_fetch_add(&reader_next, 1, __ATOMIC_RELAXED) % READER_SLOTS + 1;
	n = &readers[reader_slot - 1].n;
	__atomic_fetch_add(n, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&read_valid, __ATOMIC_SEQ_CST))
		r = fl__status_table_get(p + FL_STATUS_PAGE_HEADER, dev, ino, &status, &stamp);
	__atomic_fetch_sub(n, 1, __ATOMIC_RELEASE);
	if (r <= 0)
		return 0;
	*ret_status = status;
	if (ret_stamp_ns)
		*ret_stamp_ns = stamp;
	return r;
}

bool fl__status_page_info(dev_t dev, ino_t ino, struct fl_info_body *ret)
{
	const char *p = __atomic_load_n(&read_page, __ATOMIC_ACQUIRE);
	unsigned int *n;
	bool r = false;

	if (!p)
		return false;
	if (!reader_slot)
		reader_slot =
			__atomic_fetch_add(&reader_next, 1, __ATOMIC_RELAXED) % READER_SLOTS + 1;
	n = &readers[reader_slot - 1].n;
	__atomic_fetch_add(n, 1, __ATOMIC_SEQ_CST);
	/* read_info_ok and info_page are set before read_valid (seq_cst), and read after it. */
	if (__atomic_load_n(&read_valid, __ATOMIC_SEQ_CST) &&
	    __atomic_load_n(&read_info_ok, __ATOMIC_RELAXED))
		r = fl__status_table_get_info(__atomic_load_n(&info_page, __ATOMIC_ACQUIRE) +
						      FL_INFO_PAGE_HEADER,
					      dev, ino, ret);
	__atomic_fetch_sub(n, 1, __ATOMIC_RELEASE);
	return r;
}

int fl__status_page_daemon_alive(void)
{
	const char *p = __atomic_load_n(&read_page, __ATOMIC_ACQUIRE);
	const struct fl_status_page_header *h = (const void *)p;
	uint32_t off, word;

	/*
	 * No lookup guard, as for tracing: the address stays mapped once
	 * set. A remapping between the two loads reads a blank page's 0 or
	 * the next daemon's word at the same offset: never a death that did
	 * not happen.
	 */
	if (!p)
		return -1;
	off = __atomic_load_n(&h->alive_off, __ATOMIC_ACQUIRE);
	if (off != FL_STATUS_PAGE_ALIVE_OFF)
		return -1;
	word = __atomic_load_n((const uint32_t *)(p + off), __ATOMIC_ACQUIRE);
	if (word & FUTEX_OWNER_DIED)
		return 0;
	return (word & FUTEX_TID_MASK) ? 1 : -1;
}

bool fl__status_page_tracing(void)
{
	const char *p = __atomic_load_n(&read_page, __ATOMIC_ACQUIRE);

	/* The address stays mapped once set (a blank page reads 0): no lookup guard needed. */
	return p && __atomic_load_n(&((const struct fl_status_page_header *)p)->tracing,
				    __ATOMIC_ACQUIRE) != 0;
}

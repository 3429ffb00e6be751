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
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
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

int fl__status_table_put(void *entries, dev_t dev, ino_t ino, int status, uint64_t stamp_ns,
			 bool held)
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
			return 0;
		}
		if (!is_live(state) && !free_slot)
			free_slot = e;
		if (state == FL_STATUS_E_EMPTY)
			break;
	}
	if (!free_slot)
		return -ENOSPC;
	write_entry(free_slot, live, (uint32_t)dev, ino, status, stamp_ns);
	return 0;
}

int fl__status_table_del(void *entries, dev_t dev, ino_t ino)
{
	uint32_t home = fl__status_table_home(dev, ino);

	if ((uint64_t)dev > UINT32_MAX)
		return -ENOENT;
	for (uint32_t i = 0; i < FL_STATUS_PAGE_PROBE; i++) {
		struct fl_status_entry *e = slot(entries, home, i);
		uint32_t state = __atomic_load_n(&e->state, __ATOMIC_RELAXED);

		if (state == FL_STATUS_E_EMPTY)
			break;
		if (is_live(state) && __atomic_load_n(&e->dev, __ATOMIC_RELAXED) == dev &&
		    __atomic_load_n(&e->ino, __ATOMIC_RELAXED) == (uint64_t)ino) {
			write_entry(e, FL_STATUS_E_GONE, 0, 0, 0, 0);
			return 0;
		}
	}
	return -ENOENT;
}

int fl__status_table_get(const void *entries, dev_t dev, ino_t ino, int *ret_status,
			 uint64_t *ret_stamp_ns)
{
	uint32_t home = fl__status_table_home(dev, ino);

	if ((uint64_t)dev > UINT32_MAX)
		return 0;
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
			return 0;
		if (is_live(c.state) && c.dev == dev && c.ino == (uint64_t)ino) {
			if (ret_status)
				*ret_status = c.status;
			if (ret_stamp_ns)
				*ret_stamp_ns = c.stamp_ns;
			return c.state == FL_STATUS_E_HELD ? 2 : 1;
		}
	}
	return 0;
}

/* The writer's page: set once, in the daemon. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static char *write_page;
static int page_fd = -1;
static bool atfork_done;

/* A forked child is not the daemon: it must not change the daemon's page. */
static void atfork_child(void)
{
	__atomic_store_n(&write_page, NULL, __ATOMIC_RELAXED);
	pthread_mutex_init(&write_lock, NULL);
}

int fl__status_page_create(void)
{
	const unsigned int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
	struct fl_status_page_header *h;
	char path[64];
	int fd, ro, r;
	void *m;

	pthread_mutex_lock(&write_lock);
	if (write_page) {
		pthread_mutex_unlock(&write_lock);
		return page_fd;
	}
	fd = memfd_create("fenceline-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (ftruncate(fd, (off_t)FL_STATUS_PAGE_SIZE) < 0) {
		r = -errno;
		goto out_close;
	}
	m = mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		r = -errno;
		goto out_close;
	}
	h = m;
	h->magic = FL_STATUS_PAGE_MAGIC;
	h->slots = FL_STATUS_PAGE_SLOTS;
	h->entry_size = sizeof(struct fl_status_entry);
	h->probe = FL_STATUS_PAGE_PROBE;
	/* Our writable mapping stays; no new one can be made, by anybody. */
	if (fcntl(fd, F_ADD_SEALS, seals) < 0) {
		r = -errno;
		munmap(m, FL_STATUS_PAGE_SIZE);
		goto out_close;
	}
	/* Clients get a read-only fd: write() and PROT_WRITE mappings fail twice over. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro >= 0) {
		close(fd);
		fd = ro;
	}
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, atfork_child);
		atfork_done = true;
	}
	__atomic_store_n(&write_page, (char *)m, __ATOMIC_RELEASE);
	page_fd = fd;
	pthread_mutex_unlock(&write_lock);
	return fd;
out_close:
	close(fd);
out:
	pthread_mutex_unlock(&write_lock);
	return r;
}

bool fl__status_page_writing(void)
{
	return __atomic_load_n(&write_page, __ATOMIC_RELAXED) != NULL;
}

int fl__status_page_publish(dev_t dev, ino_t ino, int status, uint64_t stamp_ns, bool held)
{
	int r = -ENODEV;

	pthread_mutex_lock(&write_lock);
	if (write_page)
		r = fl__status_table_put(write_page + FL_STATUS_PAGE_HEADER, dev, ino, status,
					 stamp_ns, held);
	pthread_mutex_unlock(&write_lock);
	return r;
}

void fl__status_page_remove(dev_t dev, ino_t ino)
{
	pthread_mutex_lock(&write_lock);
	if (write_page)
		(void)fl__status_table_del(write_page + FL_STATUS_PAGE_HEADER, dev, ino);
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

/* Under map_lock, readers out: the mapping at read_page becomes zeros (an empty table). */
static void blank_locked(void)
{
	void *m = mmap((void *)read_page, FL_STATUS_PAGE_SIZE, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);

	/* Where even that fails, the old pages stay, but unused: read_valid stays false. */
	(void)m;
}

int fl__status_page_map(int fd)
{
	const unsigned int need = F_SEAL_SHRINK | F_SEAL_FUTURE_WRITE;
	const struct fl_status_page_header *h;
	struct stat st;
	int seals, r = 0;
	void *m;

	if (fstat(fd, &st) < 0)
		return -errno;
	seals = fcntl(fd, F_GET_SEALS);
	if (!S_ISREG(st.st_mode) || st.st_size != (off_t)FL_STATUS_PAGE_SIZE || seals < 0 ||
	    ((unsigned int)seals & need) != need)
		return -EPROTO;
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
	if (r < 0)
		blank_locked();
	else
		__atomic_store_n(&read_valid, true, __ATOMIC_SEQ_CST);
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

bool fl__status_page_tracing(void)
{
	const char *p = __atomic_load_n(&read_page, __ATOMIC_ACQUIRE);

	/* The address stays mapped once set (a blank page reads 0): no lookup guard needed. */
	return p && __atomic_load_n(&((const struct fl_status_page_header *)p)->tracing,
				    __ATOMIC_ACQUIRE) != 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The status page's table and mapping (src/util/statuspage.c, compiled into
 * this test): insert, update, delete, tombstones, a full probe range, a
 * reader racing the writer (run under TSan: suite 'threaded'), the seals,
 * and a mapping replaced under readers in other threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "runner.h"
#include "statuspage.h"

#define DEV 13u

static void *new_table(void)
{
	void *t = calloc(1, FL_STATUS_PAGE_ENTRIES);

	fl_assert(t != NULL);
	return t;
}

/* @n inode numbers from @from on whose keys all start probing at @home. */
static void same_home(uint32_t home, ino_t from, ino_t *out, unsigned int n)
{
	for (ino_t ino = from; n; ino++) {
		if (fl__status_table_home(DEV, ino) == home) {
			*out++ = ino;
			n--;
		}
	}
}

static int get(const void *t, ino_t ino, int *status, uint64_t *stamp)
{
	return fl__status_table_get(t, DEV, ino, status, stamp);
}

FL_TEST(status_table_inserts_updates_and_deletes)
{
	void *t = new_table();
	uint64_t stamp = 1;
	int status = 7;

	fl_assert_int_eq(get(t, 100, &status, &stamp), 0);
	fl_assert_int_eq(fl__status_table_put(t, DEV, 100, FL_STATUS_ACTIVE, 0, false), 0);
	fl_assert_int_eq(fl__status_table_put(t, DEV, 101, FL_STATUS_ACTIVE, 0, false), 0);
	fl_assert_int_eq(get(t, 100, &status, &stamp), 1);
	fl_assert_int_eq(status, FL_STATUS_ACTIVE);
	fl_assert_int_eq(stamp, 0);
	/* Same inode on another device: another key. */
	fl_assert_int_eq(fl__status_table_get(t, DEV + 1, 100, &status, &stamp), 0);

	fl_assert_int_eq(fl__status_table_put(t, DEV, 100, FL_STATUS_SIGNALED, 12345, false), 0);
	fl_assert_int_eq(get(t, 100, &status, &stamp), 1);
	fl_assert_int_eq(status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(stamp, 12345);
	fl_assert_int_eq(fl__status_table_put(t, DEV, 101, -ENOENT, 999, false), 0);
	fl_assert_int_eq(get(t, 101, &status, &stamp), 1);
	fl_assert_int_eq(status, -ENOENT);

	fl_assert_int_eq(fl__status_table_del(t, DEV, 100), 0);
	fl_assert_int_eq(get(t, 100, &status, &stamp), 0);
	fl_assert_int_eq(fl__status_table_del(t, DEV, 100), -ENOENT);
	fl_assert_int_eq(get(t, 101, &status, &stamp), 1);
	fl_assert_int_eq(status, -ENOENT);
	free(t);
}

/* An owner's fence (its write end held): the same key, told apart by the lookup. */
FL_TEST(status_table_tells_held_entries_apart)
{
	void *t = new_table();
	uint64_t stamp = 0;
	int status = 7;

	fl_assert_int_eq(fl__status_table_put(t, DEV, 300, FL_STATUS_ACTIVE, 0, false), 0);
	fl_assert_int_eq(fl__status_table_put(t, DEV, 300, FL_STATUS_SIGNALED, 5, true), 0);
	fl_assert_int_eq(get(t, 300, &status, &stamp), 2);
	fl_assert_int_eq(status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(stamp, 5);
	/* Updated in place, not a second entry: deleting it leaves none. */
	fl_assert_int_eq(fl__status_table_put(t, DEV, 300, -EIO, 6, false), 0);
	fl_assert_int_eq(get(t, 300, &status, &stamp), 1);
	fl_assert_int_eq(status, -EIO);
	fl_assert_int_eq(fl__status_table_put(t, DEV, 300, -EIO, 6, true), 0);
	fl_assert_int_eq(fl__status_table_del(t, DEV, 300), 0);
	fl_assert_int_eq(get(t, 300, &status, &stamp), 0);
	fl_assert_int_eq(fl__status_table_del(t, DEV, 300), -ENOENT);
	free(t);
}

/* st_dev beyond 32 bits is not published (the entry keeps 32), so it cannot alias another. */
FL_TEST(status_table_refuses_a_device_beyond_32_bits)
{
	void *t = new_table();
	dev_t big = (dev_t)1 << 33 | DEV;
	int status;

	fl_assert_int_eq(fl__status_table_put(t, big, 100, FL_STATUS_SIGNALED, 1, false), -ERANGE);
	fl_assert_int_eq(fl__status_table_put(t, DEV, 100, FL_STATUS_ACTIVE, 0, false), 0);
	fl_assert_int_eq(fl__status_table_get(t, big, 100, &status, NULL), 0);
	fl_assert_int_eq(fl__status_table_del(t, big, 100), -ENOENT);
	fl_assert_int_eq(get(t, 100, &status, NULL), 1);
	fl_assert_int_eq(status, FL_STATUS_ACTIVE);
	free(t);
}

/*
 * Keys that collide: a deleted one leaves a tombstone that lookups of the
 * keys behind it step over and the next insertion reuses; a key's probe
 * range full of live keys publishes nothing.
 */
FL_TEST(status_table_tombstones_keep_later_keys_and_are_reused_when_full)
{
	ino_t k[FL_STATUS_PAGE_PROBE + 2];
	uint32_t home = fl__status_table_home(DEV, 5000);
	void *t = new_table();
	int status;

	same_home(home, 5000, k, FL_STATUS_PAGE_PROBE + 2);
	for (unsigned int i = 0; i < FL_STATUS_PAGE_PROBE; i++)
		fl_assert_int_eq(fl__status_table_put(t, DEV, k[i], (int)i, i, false), 0);
	/* Full: the next colliding key is not published, and reads as unknown. */
	fl_assert_int_eq(fl__status_table_put(t, DEV, k[FL_STATUS_PAGE_PROBE], 1, 1, false),
			 -ENOSPC);
	fl_assert_int_eq(get(t, k[FL_STATUS_PAGE_PROBE], &status, NULL), 0);

	fl_assert_int_eq(fl__status_table_del(t, DEV, k[3]), 0);
	for (unsigned int i = 0; i < FL_STATUS_PAGE_PROBE; i++) {
		fl_assert_int_eq(get(t, k[i], &status, NULL), i != 3);
		if (i != 3)
			fl_assert_int_eq(status, (int)i);
	}
	/* The tombstone is the one free slot: the new key takes it. */
	fl_assert_int_eq(fl__status_table_put(t, DEV, k[FL_STATUS_PAGE_PROBE], -EIO, 7, false), 0);
	fl_assert_int_eq(get(t, k[FL_STATUS_PAGE_PROBE], &status, NULL), 1);
	fl_assert_int_eq(status, -EIO);
	fl_assert_int_eq(fl__status_table_put(t, DEV, k[FL_STATUS_PAGE_PROBE + 1], 1, 1, false),
			 -ENOSPC);
	/* An update of a key behind the reused slot stays in place. */
	fl_assert_int_eq(fl__status_table_put(t, DEV, k[FL_STATUS_PAGE_PROBE - 1], 1, 2, false), 0);
	fl_assert_int_eq(get(t, k[FL_STATUS_PAGE_PROBE - 1], &status, NULL), 1);
	fl_assert_int_eq(status, 1);
	free(t);
}

/*
 * An entry the daemon is writing (odd count: it may have stopped or died
 * right there) is never taken, whatever its fields say: the lookup says
 * "unknown", and the caller asks the pipe.
 */
FL_TEST(status_table_reader_never_takes_an_entry_being_written)
{
	struct fl_status_entry *t = new_table(), *e = &t[fl__status_table_home(DEV, 900)];
	int status = 7;

	fl_assert_int_eq(fl__status_table_put(t, DEV, 900, FL_STATUS_ACTIVE, 0, false), 0);
	fl_assert_int_eq(e->ino, 900);
	/* Half a completion: the count made odd, the status stored, the stamp not yet. */
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&e->status, FL_STATUS_SIGNALED, __ATOMIC_RELEASE);
	fl_assert_int_eq(get(t, 900, &status, NULL), 0);
	fl_assert_int_eq(status, 7);
	__atomic_store_n(&e->stamp_ns, 55, __ATOMIC_RELEASE);
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
	fl_assert_int_eq(get(t, 900, &status, NULL), 1);
	fl_assert_int_eq(status, FL_STATUS_SIGNALED);
	free(t);
}

struct race {
	void *t;
	ino_t keys[3]; /* colliding: the writer churns the first two in front of the third */
	atomic_bool stop;
	long torn, hits;
};

/* Every entry the writer publishes has stamp == status * 3 + 1: a torn read would not. */
static void *race_writer(void *arg)
{
	struct race *r = arg;

	for (int i = 1; !atomic_load(&r->stop); i++) {
		int s = i % 1000000;

		fl__status_table_put(r->t, DEV, r->keys[2], s, (uint64_t)s * 3 + 1, false);
		if (i % 8 == 0) {
			fl__status_table_del(r->t, DEV, r->keys[i % 16 ? 0 : 1]);
			fl__status_table_put(r->t, DEV, r->keys[i % 16 ? 0 : 1], -s,
					     (uint64_t)s * 3 + 1, false);
		}
		if (i % 64 == 0) {
			fl__status_table_del(r->t, DEV, r->keys[2]);
			sched_yield();
		}
	}
	return NULL;
}

/*
 * The daemon writing while a client reads, for real: under TSan (suite
 * 'threaded') every access must be an ordered atomic one, and no read may
 * mix two writes.
 */
FL_TEST_TIMEOUT(status_table_reader_never_sees_a_torn_entry, 120)
{
	struct race r = { .t = new_table() };
	long rounds = FL_TEST_UNDER_TSAN ? 200000 : 3000000;
	pthread_t w;

	same_home(fl__status_table_home(DEV, 77), 77, r.keys, 3);
	fl_assert_int_eq(fl__status_table_put(r.t, DEV, r.keys[0], 0, 1, false), 0);
	fl_assert_int_eq(fl__status_table_put(r.t, DEV, r.keys[1], 0, 1, false), 0);
	fl_assert_int_eq(pthread_create(&w, NULL, race_writer, &r), 0);
	for (long i = 0; i < rounds; i++) {
		for (int k = 0; k < 3; k++) {
			uint64_t stamp = 0;
			int status = 0, s;

			if (!get(r.t, r.keys[k], &status, &stamp))
				continue;
			s = status < 0 ? -status : status;
			r.hits++;
			if (stamp != (uint64_t)s * 3 + 1)
				r.torn++;
		}
	}
	atomic_store(&r.stop, true);
	fl_assert_int_eq(pthread_join(w, NULL), 0);
	fl_assert_int_eq(r.torn, 0);
	fl_assert(r.hits > 0);
	free(r.t);
}

/* What clients get cannot be written, by them or anybody else but the daemon's mapping. */
FL_TEST(status_page_is_sealed_and_read_only)
{
	int fd = fl__status_page_create(), rw, seals;
	char path[64], zero = 0;
	void *m;

	fl_assert(fd >= 0);
	fl_assert(fl__status_page_writing());
	/* Once per process. */
	fl_assert_int_eq(fl__status_page_create(), fd);
	fl_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	seals = fcntl(fd, F_GET_SEALS);
	fl_assert_int_eq(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
	fl_assert(mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) ==
		  MAP_FAILED);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rw = open(path, O_RDWR | O_CLOEXEC);
	fl_assert(rw >= 0);
	fl_assert(mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0) ==
		  MAP_FAILED);
	fl_assert_int_eq(errno, EPERM);
	fl_assert_errno(write(rw, &zero, 1), EPERM);
	fl_assert_errno(ftruncate(rw, 4096), EPERM);
	close(rw);
	m = mmap(NULL, FL_STATUS_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	fl_assert(m != MAP_FAILED);
	fl_assert_errno(mprotect(m, FL_STATUS_PAGE_SIZE, PROT_READ | PROT_WRITE), EACCES);
	munmap(m, FL_STATUS_PAGE_SIZE);
	/* The module's fd, for every client: closed only for the runner's fd count, at the end. */
	close(fd);
}

/* A memfd of @size with a page's header and @seals (0: none). */
static int memfd_with(size_t size, unsigned int seals)
{
	struct fl_status_page_header h = { FL_STATUS_PAGE_MAGIC, FL_STATUS_PAGE_SLOTS,
					   sizeof(struct fl_status_entry), FL_STATUS_PAGE_PROBE };
	int fd = memfd_create("not-a-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	fl_assert(fd >= 0);
	fl_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	fl_assert_int_eq(pwrite(fd, &h, sizeof(h), 0), sizeof(h));
	if (seals)
		fl_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

/* A page anybody could shrink (a fault in every reader) or write (lies) is not used. */
FL_TEST(status_page_map_refuses_what_is_not_a_sealed_page)
{
	const unsigned int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE;
	int p[2], fd;

	fd = memfd_with(FL_STATUS_PAGE_SIZE, 0);
	fl_assert_int_eq(fl__status_page_map(fd), -EPROTO);
	close(fd);
	fd = memfd_with(FL_STATUS_PAGE_SIZE, F_SEAL_SHRINK | F_SEAL_GROW);
	fl_assert_int_eq(fl__status_page_map(fd), -EPROTO);
	close(fd);
	fd = memfd_with(4096, seals);
	fl_assert_int_eq(fl__status_page_map(fd), -EPROTO);
	close(fd);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fl__status_page_map(p[0]), -EPROTO);
	close(p[0]);
	close(p[1]);
	/* Sealed and sized, but another layout: mapped, checked, blanked. */
	fd = memfd_create("not-a-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	fl_assert_int_eq(ftruncate(fd, (off_t)FL_STATUS_PAGE_SIZE), 0);
	fl_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	fl_assert_int_eq(fl__status_page_map(fd), -EPROTO);
	close(fd);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 1, &p[0], NULL), 0);
	/* The control: the same page sealed is taken. */
	fd = memfd_with(FL_STATUS_PAGE_SIZE, seals);
	fl_assert_int_eq(fl__status_page_map(fd), 0);
	close(fd);
}

struct remap {
	atomic_bool stop;
	atomic_long hits, wrong;
};

static void *remap_reader(void *arg)
{
	struct remap *r = arg;

	while (!atomic_load(&r->stop)) {
		int status = 0;
		uint64_t stamp = 0;

		if (fl__status_page_lookup(DEV, 4242, &status, &stamp)) {
			atomic_fetch_add(&r->hits, 1);
			if (status != FL_STATUS_SIGNALED || stamp != 77)
				atomic_fetch_add(&r->wrong, 1);
		}
	}
	return NULL;
}

/*
 * A client maps the page of each connection over the last one's, and
 * blanks it when the connection goes: readers in other threads meanwhile
 * read the one or the other, or nothing, and never fault.
 */
FL_TEST_TIMEOUT(status_page_mapped_over_and_blanked_under_readers, 120)
{
	int fd = fl__status_page_create(), status = 0;
	struct remap r = { 0 };
	pthread_t th[2];

	fl_assert(fd >= 0);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 0);
	fl_assert_int_eq(fl__status_page_publish(DEV, 4242, FL_STATUS_SIGNALED, 77, false), 0);
	fl_assert_int_eq(fl__status_page_map(fd), 0);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 1);
	fl_assert_int_eq(status, FL_STATUS_SIGNALED);
	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_create(&th[i], NULL, remap_reader, &r), 0);
	for (int i = 0; i < (FL_TEST_UNDER_TSAN ? 200 : 2000); i++) {
		fl__status_page_unmap();
		fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 0);
		fl_assert_int_eq(fl__status_page_map(fd), 0);
	}
	atomic_store(&r.stop, true);
	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_join(th[i], NULL), 0);
	fl_assert_int_eq(atomic_load(&r.wrong), 0);
	/* Deleted by the writer: gone for the readers. */
	fl__status_page_remove(DEV, 4242);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 0);
	close(fd);
}

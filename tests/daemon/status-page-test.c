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
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* An info body whose every word says @n: a read that mixes two writes shows two values. */
static void info_body_of(struct fl_info_body *b, uint32_t n)
{
	memset(b, (int)(n & 0xff), sizeof(*b));
	b->num_points = n;
	b->points_final = n;
}

static bool info_body_whole(const struct fl_info_body *b)
{
	const unsigned char *p = (const unsigned char *)b->name;
	size_t len = sizeof(*b) - offsetof(struct fl_info_body, name);

	if (b->points_final != b->num_points || b->status != (int32_t)b->num_points ||
	    b->timestamp_ns != (uint64_t)b->num_points * 5)
		return false;
	for (size_t i = 0; i < len; i++)
		if (p[i] != (b->num_points & 0xff))
			return false;
	return true;
}

struct info_race {
	void *t, *info;
	atomic_bool stop;
};

static void *info_writer(void *arg)
{
	struct info_race *r = arg;
	struct fl_info_body b;

	for (uint32_t i = 1; !atomic_load(&r->stop); i++) {
		info_body_of(&b, i % 251 + 1);
		fl__status_table_put_info(r->t, r->info, DEV, 4711, (int)b.num_points,
					  (uint64_t)b.num_points * 5, false, &b);
		/* A status alone clears the record: never an older record for a newer entry. */
		if (i % 32 == 0)
			fl__status_table_put_info(r->t, r->info, DEV, 4711, 0, 0, false, NULL);
		/* As the daemon, which writes between requests: readers get whole records too. */
		if (i % 4 == 0)
			sched_yield();
	}
	return NULL;
}

/*
 * Info records under a writer, for real (TSan in suite 'threaded'): a
 * reader gets a whole record that names its key and matches its entry's
 * status, or nothing.
 */
FL_TEST_TIMEOUT(info_record_reader_never_sees_a_torn_record, 120)
{
	struct info_race r = { .t = new_table(),
			       .info = calloc(FL_INFO_SLOTS, FL_INFO_RECORD_SIZE) };
	long rounds = FL_TEST_UNDER_TSAN ? 50000 : 1000000, hits = 0, torn = 0;
	struct fl_info_body b;
	pthread_t w;

	fl_assert(r.info != NULL);
	fl_assert(!fl__status_table_get_info(r.info, DEV, 4711, &b));
	fl_assert_int_eq(pthread_create(&w, NULL, info_writer, &r), 0);
	for (long i = 0; i < rounds; i++) {
		if (!fl__status_table_get_info(r.info, DEV, 4711, &b))
			continue;
		hits++;
		if (b.ino != 4711 || b.dev != DEV || b.state != FL_STATUS_E_LIVE ||
		    !info_body_whole(&b))
			torn++;
	}
	atomic_store(&r.stop, true);
	fl_assert_int_eq(pthread_join(w, NULL), 0);
	fl_assert_int_eq(torn, 0);
	fl_assert(hits > 0);
	/* A status without info: the key's record is gone. */
	fl_assert_int_eq(fl__status_table_put_info(r.t, r.info, DEV, 4711, FL_STATUS_SIGNALED, 3,
						   false, NULL),
			 0);
	fl_assert(!fl__status_table_get_info(r.info, DEV, 4711, &b));
	free(r.info);
	free(r.t);
}

/*
 * The info table is small whatever the number of fences: a key beyond a
 * full probe range takes the oldest record's slot (that key's info then
 * asks the daemon) while every status stays published, and a status
 * without info frees its key's slot.
 */
FL_TEST(info_table_is_bounded_and_evicts_the_oldest)
{
	void *t = new_table(), *info = calloc(FL_INFO_SLOTS, FL_INFO_RECORD_SIZE);
	struct fl_info_body b = { .num_points = 1 };
	ino_t keys[FL_INFO_PROBE + 2];
	unsigned int n = 0;
	int status;

	fl_assert(info != NULL);
	/* Keys that share a home in the info table. */
	for (ino_t ino = 5000; n < FL_INFO_PROBE + 2; ino++)
		if (((uint64_t)ino + (uint64_t)DEV * 0x9e3779b9u) % FL_INFO_SLOTS ==
		    ((uint64_t)5000 + (uint64_t)DEV * 0x9e3779b9u) % FL_INFO_SLOTS)
			keys[n++] = ino;
	for (unsigned int i = 0; i <= FL_INFO_PROBE; i++)
		fl_assert_int_eq(fl__status_table_put_info(t, info, DEV, keys[i], FL_STATUS_ACTIVE,
							   0, false, &b),
				 0);
	/* The first (oldest) gave way to the last. */
	fl_assert(!fl__status_table_get_info(info, DEV, keys[0], &b));
	for (unsigned int i = 1; i <= FL_INFO_PROBE; i++)
		fl_assert(fl__status_table_get_info(info, DEV, keys[i], &b));
	fl_assert_int_eq(get(t, keys[0], &status, NULL), 1);
	/* Updating a key keeps its slot and makes it the newest: the next to go is keys[2]. */
	fl_assert_int_eq(fl__status_table_put_info(t, info, DEV, keys[1], FL_STATUS_SIGNALED, 7,
						   false, &b),
			 0);
	fl_assert_int_eq(fl__status_table_put_info(t, info, DEV, keys[FL_INFO_PROBE + 1],
						   FL_STATUS_ACTIVE, 0, false, &b),
			 0);
	fl_assert(!fl__status_table_get_info(info, DEV, keys[2], &b));
	fl_assert(fl__status_table_get_info(info, DEV, keys[1], &b));
	fl_assert_int_eq(b.status, FL_STATUS_SIGNALED);
	fl_assert_int_eq(b.timestamp_ns, 7);
	/* A status without info takes the record away; the next key gets its slot. */
	fl_assert_int_eq(fl__status_table_put_info(t, info, DEV, keys[3], FL_STATUS_SIGNALED, 9,
						   false, NULL),
			 0);
	fl_assert(!fl__status_table_get_info(info, DEV, keys[3], &b));
	fl_assert_int_eq(fl__status_table_put_info(t, info, DEV, keys[0], FL_STATUS_SIGNALED, 5,
						   false, &b),
			 0);
	fl_assert(fl__status_table_get_info(info, DEV, keys[0], &b));
	fl_assert(fl__status_table_get_info(info, DEV, keys[4], &b));
	free(info);
	free(t);
}

/* What clients get cannot be written, by them or anybody else but the daemon's mapping. */
FL_TEST(status_page_is_sealed_and_read_only)
{
	int fd = fl__status_page_create(), rw, seals, fd2;
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
	/* The info page, made with it, likewise. */
	fd2 = fl__status_page_info_fd();
	fl_assert(fd2 >= 0);
	fl_assert_int_eq(fcntl(fd2, F_GETFL) & O_ACCMODE, O_RDONLY);
	fl_assert_int_eq(fcntl(fd2, F_GET_SEALS), seals);
	fl_assert(mmap(NULL, FL_INFO_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0) ==
		  MAP_FAILED);
	/* The module's fds, for every client: closed only for the runner's fd count, at the end. */
	close(fd2);
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
	fl_assert_int_eq(fl__status_page_map(fd, -1), -EPROTO);
	close(fd);
	fd = memfd_with(FL_STATUS_PAGE_SIZE, F_SEAL_SHRINK | F_SEAL_GROW);
	fl_assert_int_eq(fl__status_page_map(fd, -1), -EPROTO);
	close(fd);
	fd = memfd_with(4096, seals);
	fl_assert_int_eq(fl__status_page_map(fd, -1), -EPROTO);
	close(fd);
	fl_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fl_assert_int_eq(fl__status_page_map(p[0], -1), -EPROTO);
	close(p[0]);
	close(p[1]);
	/* Sealed and sized, but another layout: mapped, checked, blanked. */
	fd = memfd_create("not-a-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	fl_assert_int_eq(ftruncate(fd, (off_t)FL_STATUS_PAGE_SIZE), 0);
	fl_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	fl_assert_int_eq(fl__status_page_map(fd, -1), -EPROTO);
	close(fd);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 1, &p[0], NULL), 0);
	/* The control: the same page sealed is taken. */
	fd = memfd_with(FL_STATUS_PAGE_SIZE, seals);
	fl_assert_int_eq(fl__status_page_map(fd, -1), 0);
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

		struct fl_info_body b;

		if (fl__status_page_lookup(DEV, 4242, &status, &stamp)) {
			atomic_fetch_add(&r->hits, 1);
			if (status != FL_STATUS_SIGNALED || stamp != 77)
				atomic_fetch_add(&r->wrong, 1);
		}
		if (fl__status_page_info(DEV, 4242, &b)) {
			atomic_fetch_add(&r->hits, 1);
			if (b.status != FL_STATUS_SIGNALED || b.timestamp_ns != 77 ||
			    b.num_points != 3)
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
	int fd = fl__status_page_create(), status = 0, ifd = fl__status_page_info_fd();
	struct fl_info_body b = { .num_points = 3 };
	struct remap r = { 0 };
	pthread_t th[2];

	fl_assert(fd >= 0 && ifd >= 0);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 0);
	fl_assert_int_eq(fl__status_page_publish_info(DEV, 4242, FL_STATUS_SIGNALED, 77, false, &b),
			 0);
	/* Without the info page, no info; with it, the record. */
	fl_assert_int_eq(fl__status_page_map(fd, -1), 0);
	fl_assert(!fl__status_page_info(DEV, 4242, &b));
	fl_assert_int_eq(fl__status_page_map(fd, ifd), 0);
	fl_assert(fl__status_page_info(DEV, 4242, &b));
	fl_assert_int_eq(b.num_points, 3);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 1);
	fl_assert_int_eq(status, FL_STATUS_SIGNALED);
	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_create(&th[i], NULL, remap_reader, &r), 0);
	for (int i = 0; i < (FL_TEST_UNDER_TSAN ? 200 : 2000); i++) {
		fl__status_page_unmap();
		fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 0);
		fl_assert(!fl__status_page_info(DEV, 4242, &b));
		fl_assert_int_eq(fl__status_page_map(fd, ifd), 0);
	}
	atomic_store(&r.stop, true);
	for (int i = 0; i < 2; i++)
		fl_assert_int_eq(pthread_join(th[i], NULL), 0);
	fl_assert_int_eq(atomic_load(&r.wrong), 0);
	/* Deleted by the writer: gone for the readers. */
	fl__status_page_remove(DEV, 4242);
	fl_assert_int_eq(fl__status_page_lookup(DEV, 4242, &status, NULL), 0);
	fl_assert(!fl__status_page_info(DEV, 4242, &b));
	close(ifd);
	close(fd);
}

/*
 * A child that made a page (as the daemon does, from its loop thread) and
 * then ends as @how says: the alive word reads 1 while it lives, 0 once it
 * is gone, in a process that mapped its page; a blank page cannot tell.
 */
static void alive_word_after(int how)
{
	int go[2], ready[2], fd, status;
	char path[64], byte = 0;
	pid_t child;

	fl_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	fl_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	child = fork();
	fl_assert(child >= 0);
	if (child == 0) {
		int pfd = fl__status_page_create();

		if (pfd < 0 || write(ready[1], &pfd, sizeof(pfd)) != sizeof(pfd))
			_exit(1);
		(void)!read(go[0], &byte, 1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	fl_assert_int_eq(read(ready[0], &fd, sizeof(fd)), sizeof(fd));
	close(ready[0]);
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)child, fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	fl_assert(fd >= 0);
	fl_assert_int_eq(fl__status_page_daemon_alive(), -1); /* nothing mapped yet */
	fl_assert_int_eq(fl__status_page_map(fd, -1), 0);
	close(fd);
	fl_assert_int_eq(fl__status_page_daemon_alive(), 1);
	if (how == SIGKILL)
		fl_assert_int_eq(kill(child, SIGKILL), 0);
	else
		fl_assert_int_eq(write(go[1], &byte, 1), 1);
	fl_assert_int_eq(waitpid(child, &status, 0), child);
	close(go[1]);
	fl_assert_int_eq(fl__status_page_daemon_alive(), 0);
	fl__status_page_unmap();
	fl_assert_int_eq(fl__status_page_daemon_alive(), -1);
}

FL_TEST(status_page_alive_word_reads_a_killed_writer_dead)
{
	alive_word_after(SIGKILL);
}

FL_TEST(status_page_alive_word_reads_an_exited_writer_dead)
{
	alive_word_after(0);
}

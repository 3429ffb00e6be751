/* SPDX-License-Identifier: MIT */
/*
 * The status page: the daemon's table of the statuses of the pipe fence
 * fds it made, in a sealed memfd that its clients map read-only, so that
 * fl_fence_fd_get_status() on such an fd costs an fstat() and a lookup,
 * with no daemon round trip (docs/architecture.md, "The status page").
 *
 * Layout: a header page (struct fl_status_page_header), then
 * FL_STATUS_PAGE_SLOTS entries (struct fl_status_entry), an open-addressing
 * hash keyed by the (st_dev, st_ino) of the pipe's read end, linear probing
 * over at most FL_STATUS_PAGE_PROBE slots from a key's home. Entries are
 * never moved: a deleted one becomes a tombstone, which a lookup steps over
 * and an insertion reuses, so a reader that probes while the daemon writes
 * never misses a key that stays in the table. Each entry has a sequence
 * count (odd while the daemon writes it): a reader that sees it change
 * retries, and after a few tries treats the entry as unknown. Unknown is
 * always safe: the caller then asks the pipe and the daemon, as before.
 *
 * Only the daemon writes (one writer, under a lock). Private to src/; the
 * core (writer hooks and reader), the client (mapping) and the daemon
 * (creation) use it.
 */
#ifndef FL_UTIL_STATUSPAGE_H
#define FL_UTIL_STATUSPAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FL_STATUS_PAGE_MAGIC   0x31505346u /* "FSP1" */
#define FL_STATUS_PAGE_SLOTS   65536u /* a power of two */
#define FL_STATUS_PAGE_PROBE   16u
#define FL_STATUS_PAGE_HEADER  4096u
#define FL_STATUS_PAGE_ENTRIES ((size_t)FL_STATUS_PAGE_SLOTS * sizeof(struct fl_status_entry))
#define FL_STATUS_PAGE_SIZE    (FL_STATUS_PAGE_HEADER + FL_STATUS_PAGE_ENTRIES)

/*
 * The info page (issue 20): a second sealed memfd, a header page (struct
 * fl_info_page_header) and then FL_INFO_SLOTS records of
 * FL_INFO_RECORD_SIZE bytes, an open-addressing hash of its own keyed like
 * the entries (linear probing over FL_INFO_PROBE slots, tombstones), each
 * record what fl_fence_fd_get_info() returns for one fence, up to
 * FL_INFO_POINTS points inline. Small on purpose: 64 KiB whatever the
 * number of fences, so that a daemon with many thousand live fences pays
 * no more memory for them; a fence whose probe range is full takes the
 * slot of the oldest record there, whose fence then asks the daemon. Sent with HELLO's reply beside the
 * status page to clients that speak sync 4 (FL_HELLO_F_INFO_PAGE).
 */
#define FL_INFO_PAGE_MAGIC  0x31495346u /* "FSI1" */
#define FL_INFO_POINTS	    4u
#define FL_INFO_RECORD_SIZE 512u
#define FL_INFO_SLOTS	    128u /* a power of two */
#define FL_INFO_PROBE	    8u
#define FL_INFO_PAGE_HEADER 4096u
#define FL_INFO_PAGE_SIZE   (FL_INFO_PAGE_HEADER + (size_t)FL_INFO_SLOTS * FL_INFO_RECORD_SIZE)

struct fl_info_page_header {
	uint32_t magic; /* FL_INFO_PAGE_MAGIC */
	uint32_t slots; /* FL_INFO_SLOTS */
	uint32_t record_size; /* FL_INFO_RECORD_SIZE */
	uint32_t points; /* FL_INFO_POINTS */
	uint32_t probe; /* FL_INFO_PROBE */
	uint32_t pad; /* 0 */
	uint64_t reserved[5]; /* 0 */
};

struct fl_status_page_header {
	uint32_t magic; /* FL_STATUS_PAGE_MAGIC */
	uint32_t slots; /* FL_STATUS_PAGE_SLOTS */
	uint32_t entry_size; /* sizeof(struct fl_status_entry) */
	uint32_t probe; /* FL_STATUS_PAGE_PROBE */
	/*
	 * 1 while a trace session records (fencectl trace), else 0: other
	 * services send their events for it (TRACE_EVENT) only then, at the
	 * cost of this load otherwise. Older daemons leave it 0.
	 */
	uint64_t tracing;
	/*
	 * Where in the header page the daemon's alive word is (0: none, an
	 * older daemon's or another libc's): the futex word of a robust,
	 * process-shared mutex that the daemon's loop thread locked and
	 * never unlocks. When that thread dies (the daemon exits or is
	 * killed), the kernel sets FUTEX_OWNER_DIED in it, before it closes
	 * any of the daemon's fds; a client reads the daemon's death there
	 * with one load instead of a poll() of its connection.
	 */
	uint32_t alive_off;
	uint32_t pad; /* 0 */
	uint64_t reserved[4]; /* 0 */
};

/* The alive word's place in the header page (fl_status_page_header.alive_off). */
#define FL_STATUS_PAGE_ALIVE_OFF 2048u

enum fl_status_entry_state {
	FL_STATUS_E_EMPTY = 0, /* never used: ends a probe */
	FL_STATUS_E_LIVE = 1,
	FL_STATUS_E_GONE = 2, /* a tombstone */
	/*
	 * Live, and the fence's write end is held by its owner, who closes it
	 * after the daemon published the outcome: a final status here holds
	 * for a reader only once the fd reads ready (a status never runs
	 * ahead of the fd's readiness).
	 */
	FL_STATUS_E_HELD = 3,
};

/* Every field is accessed with __atomic builtins (see statuspage.c). */
struct fl_status_entry {
	uint32_t seq; /* odd while being written */
	int32_t status; /* FL_STATUS_ACTIVE (0), FL_STATUS_SIGNALED (1) or -errno */
	uint64_t ino;
	uint32_t dev; /* st_dev, which Linux encodes in 32 bits; others are not published */
	uint32_t state; /* enum fl_status_entry_state */
	uint64_t stamp_ns; /* CLOCK_MONOTONIC completion time; 0 while active */
};

/* One point of an info record: struct fl_sync_pt_info's fields, names in words. */
struct fl_info_point {
	uint64_t timeline_name[4]; /* FL_NAME_MAX bytes, NUL-terminated */
	uint64_t driver_name[4];
	int32_t status;
	uint32_t flags;
	uint64_t timestamp_ns;
	uint64_t value;
	uint64_t timeline_id;
};

/*
 * The body of an info record (the record is a sequence word and this):
 * what fl_fence_fd_get_info() returns for the fence fd (@dev, @ino), as
 * the daemon published it together with the slot's entry.
 */
struct fl_info_body {
	uint32_t state; /* as an entry's: FL_STATUS_E_EMPTY, _LIVE, _HELD or _GONE (a tombstone) */
	uint32_t dev;
	uint64_t ino;
	int32_t status;
	uint32_t num_points; /* all of the fence's, even beyond FL_INFO_POINTS */
	uint64_t timestamp_ns;
	/*
	 * 1 when the inline points are what info returns now and until the
	 * next publication: the fence completed and so did every point
	 * (none can change any more), or it is active with one point (whose
	 * status is the fence's). 0: a point may change without the fence
	 * (an active merge, a failed fence with pending points): only the
	 * fence's own fields are answered from here.
	 */
	uint32_t points_final;
	uint32_t born; /* the writer's count of record writes: the oldest is evicted first */
	uint64_t name[4]; /* the fence's name, FL_NAME_MAX bytes */
	struct fl_info_point points[FL_INFO_POINTS];
};

/*
 * The table alone, on @entries (FL_STATUS_PAGE_ENTRIES bytes, zeroed at
 * first): what the page functions below use, and what the unit tests drive.
 */

/* The slot where a key's probe starts. */
uint32_t fl__status_table_home(dev_t dev, ino_t ino);

/*
 * fl__status_table_put_info() - fl__status_table_put(), and the key's info
 * record in @info (the info page's records, or NULL: none) set to @body,
 * or deleted when @body is NULL (a status without info: a reader must not
 * take an older record for it). A key whose probe range in @info is full
 * takes the slot of the oldest record there. @body's state, dev, ino, status and timestamp_ns are set
 * here from the other arguments.
 */
int fl__status_table_put_info(void *entries, void *info, dev_t dev, ino_t ino, int status,
			      uint64_t stamp_ns, bool held, const struct fl_info_body *body);

/*
 * fl__status_table_get_info() - lock-free lookup of the key's info record
 * in @info, safe against one concurrent writer
 * Return: true and *@ret when the key has a live record, read
 * consistently; false otherwise.
 */
bool fl__status_table_get_info(const void *info, dev_t dev, ino_t ino, struct fl_info_body *ret);

/*
 * fl__status_table_put() - insert a key or update its status (one writer
 * at a time: the caller serializes)
 * @held: the entry is FL_STATUS_E_HELD, not FL_STATUS_E_LIVE.
 * Return: 0; -ENOSPC when the key's FL_STATUS_PAGE_PROBE slots are all
 * live (nothing is published: readers fall back); -ERANGE for a @dev
 * beyond 32 bits.
 */
int fl__status_table_put(void *entries, dev_t dev, ino_t ino, int status, uint64_t stamp_ns,
			 bool held);

/* fl__status_table_del() - make the key's entry a tombstone. Return: 0 or -ENOENT. */
int fl__status_table_del(void *entries, dev_t dev, ino_t ino);

/*
 * fl__status_table_get() - lock-free lookup, safe against one concurrent
 * writer (in this or another process)
 * Return: 1 (FL_STATUS_E_LIVE) or 2 (FL_STATUS_E_HELD) and *@ret_status,
 * *@ret_stamp_ns (either may be NULL) when the key is live; 0 when it is
 * not there or could not be read consistently.
 */
int fl__status_table_get(const void *entries, dev_t dev, ino_t ino, int *ret_status,
			 uint64_t *ret_stamp_ns);

/*
 * The writer: the daemon.
 *
 * fl__status_page_create() - make the page and start publishing to it
 *
 * A memfd of FL_STATUS_PAGE_SIZE, mapped writable here, then sealed
 * (no shrinking, growing, new writable mappings or writes, no more seals):
 * nobody else can ever write it. Call once, in the process that will
 * publish (a forked child of it stops publishing).
 * Return: a read-only fd of the page to send to clients (the module's:
 * do not close it), or a negative errno (memfd_create(), ftruncate(),
 * mmap(), F_ADD_SEALS).
 *
 * The info page is made with it, the same way; without it (its memfd
 * failed), the status page alone is published.
 */
int fl__status_page_create(void);

/* The info page's read-only fd (the module's), or -1: none. */
int fl__status_page_info_fd(void);

/* Whether fl__status_page_create() succeeded in this process. */
bool fl__status_page_writing(void);

/*
 * fl__status_page_publish() - the fence fd with read end (@dev, @ino) has
 * @status (@stamp_ns when completed); inserts or updates; @held as
 * fl__status_table_put()
 * Return: 0, -ENODEV (no page in this process), or as fl__status_table_put().
 */
int fl__status_page_publish(dev_t dev, ino_t ino, int status, uint64_t stamp_ns, bool held);

/*
 * fl__status_page_publish_info() - fl__status_page_publish() with the
 * fence's info record (@body; NULL clears the slot's record)
 */
int fl__status_page_publish_info(dev_t dev, ino_t ino, int status, uint64_t stamp_ns, bool held,
				 const struct fl_info_body *body);

/*
 * fl__status_page_info_listed() - whether the fence fd (@dev, @ino) has an
 * info record on this process's page (false without a page)
 */
bool fl__status_page_info_listed(dev_t dev, ino_t ino);

/* fl__status_page_remove() - the daemon let go of that fence fd. */
void fl__status_page_remove(dev_t dev, ino_t ino);

/* fl__status_page_set_tracing() - say whether a trace session records (the header's @tracing). */
void fl__status_page_set_tracing(bool on);

/*
 * The readers: clients.
 *
 * fl__status_page_map() - map the page a daemon sent (@fd stays the
 * caller's), and its info page @info_fd (the caller's; -1: none)
 *
 * Checks that @fd is a memfd of the right size sealed against shrinking
 * and writing (so reading it can neither fault nor be fooled by another
 * client), maps it read-only and checks its header. The process has one
 * mapping, at one address for its whole life: a new page is mapped over
 * the old one (MAP_FIXED), once no lookup is in it, so a reader in another
 * thread never touches unmapped or half-replaced memory. The info page is
 * checked the same way and mapped likewise; one that does not check out
 * is only no info (info then asks the daemon).
 * Return: 0, -EPROTO (not such a page), or mmap()'s errno.
 */
int fl__status_page_map(int fd, int info_fd);

/*
 * fl__status_page_daemon_alive() - what the mapped page's alive word says
 * of the daemon that sent it
 * Return: 1 while its loop thread lives, 0 once it died (the process
 * exited or was killed), -1 when the page cannot tell (none mapped, a
 * blank one, or a daemon without the word): ask the connection.
 */
int fl__status_page_daemon_alive(void);

/*
 * fl__status_page_unmap() - the connection is gone: its page no longer
 * tells anything. The address is kept, mapped to zeros (an empty table).
 */
void fl__status_page_unmap(void);

/*
 * fl__status_page_forked() - in the child of a fork(): unmap (the child
 * has no connection yet), forgetting the lookups that the parent's other
 * threads were in (they do not exist in the child). Call it first thing.
 */
void fl__status_page_forked(void);

/*
 * fl__status_page_lookup() - the status the mapped page holds for the
 * fence fd with read end (@dev, @ino)
 * Return: 1 (or 2: FL_STATUS_E_HELD, see there) and *@ret_status (and
 * *@ret_stamp_ns, may be NULL), or 0: not known (no page, not published,
 * or not read consistently).
 */
int fl__status_page_lookup(dev_t dev, ino_t ino, int *ret_status, uint64_t *ret_stamp_ns);

/*
 * fl__status_page_info() - the info record the mapped page holds for the
 * fence fd with read end (@dev, @ino)
 * Return: true and *@ret (read consistently, naming the key), or false:
 * not known (no page, no info page, not published, no record with the
 * entry, or not read consistently).
 */
bool fl__status_page_info(dev_t dev, ino_t ino, struct fl_info_body *ret);

/*
 * fl__status_page_tracing() - whether the mapped page says a trace
 * session records: one load, no syscall (false with no page mapped).
 */
bool fl__status_page_tracing(void);

#endif /* FL_UTIL_STATUSPAGE_H */

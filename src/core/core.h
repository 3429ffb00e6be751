/* SPDX-License-Identifier: MIT */
/*
 * Private to src/core: the object layouts and the functions the core's files
 * share. Nothing outside src/core includes this.
 *
 * Locks, in the order they may nest:
 *   fence->lock  >  timeline->lock        (arming links a fence's members)
 *   sink registry lock  >  nothing        (never held while taking another)
 *   registry lock (dump)  >  timeline->lock, fence->lock (dump only)
 * Callbacks and fence completion run with no lock held, except that sink
 * records are written under the fence lock (two non-blocking syscalls).
 */
#ifndef FL_CORE_H
#define FL_CORE_H

#define FL_USE_UNSTABLE_DRIVER_API
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <fenceline/driver/timeline.h>
#include <fenceline/fence.h>
#include <fenceline/timeline.h>

#include "util.h"

struct fl__sink;

struct fl_timeline {
	atomic_int handles; /* users who may signal; 0 -> dead */
	atomic_int refs; /* memory: 1 while handles > 0, +1 per point */
	const struct fl_timeline_ops *ops;
	void *driver_data;
	uint64_t id;
	char name[FL_NAME_MAX];

	pthread_mutex_t lock;
	bool dead; /* under lock */
	struct fl_sync_pt **heap; /* pending points, min-heap in signal order */
	uint32_t heap_len, heap_cap;
	/*
	 * Under lock: the latest timestamp a signal pass gave points or was
	 * given (fl__timeline_signal_stamp()), the floor for the next stamp.
	 */
	uint64_t last_stamp;

	struct fl_timeline *reg_prev, *reg_next; /* registry, under its lock */
};

/* A fence's link on one of its points, inline in the fence. */
struct fl__member {
	struct fl_sync_pt *pt;
	struct fl_fence *fence;
	struct fl__member *next, **pprev; /* on pt->waiters, under pt's timeline lock */
};

struct fl_sync_pt {
	struct fl_timeline *tl;
	atomic_int refs;
	atomic_int status; /* 0, 1, -errno; set once under tl->lock */
	_Atomic uint64_t timestamp_ns; /* stored before status */
	uint64_t value;
	uint32_t heap_idx; /* FL__NOT_QUEUED when not pending */
	struct fl__member *waiters; /* under tl->lock */
	struct fl__pt_gate *gate; /* fl__pt_gate_close(); under tl->lock */
	_Alignas(16) unsigned char data[]; /* ops->pt_data_size bytes */
};

#define FL__NOT_QUEUED UINT32_MAX

struct fl_fence {
	atomic_int refs;
	atomic_int status; /* 0 until complete; then final; futex word */
	atomic_int pending; /* members not yet complete (valid once armed) */
	atomic_int nwaiters; /* threads blocked in fl_fence_wait() */
	unsigned int flags; /* FL_MERGE_* */
	char name[FL_NAME_MAX];

	pthread_mutex_t lock;
	pthread_cond_t cb_done; /* signalled when running_cb finishes */
	bool armed; /* members linked on their points (until it is freed) */
	/*
	 * The reference an armed fence holds on itself until it completes,
	 * or until nothing needs its completion (fl_fence_unref()). Written
	 * under the lock; read without it only as a hint.
	 */
	atomic_bool self_ref;
	bool completed; /* sinks written, callbacks taken */
	struct fl_fence_cb *cbs; /* queued callbacks, FIFO */
	struct fl_fence_cb **cbs_tail;
	struct fl_fence_cb *running_cb; /* may be NULL */
	pthread_t running_thread;
	struct fl__sink *sinks; /* fds still to be written on completion */
	struct fl__sink *own_sink; /* the sink behind fl_fence_get_fd(); may be NULL */
	int own_fd; /* its peer end, -1 until asked */

	bool published; /* on the registry */
	struct fl_fence *reg_prev, *reg_next; /* registry */
	struct fl_fence *complete_next; /* a signaller's to-complete list */

	uint64_t created_ns; /* CLOCK_MONOTONIC, for the age fencectl shows */
	uint64_t id; /* unique in this process, from 1: names it in dumps and traces */
	uint32_t n;
	struct fl__member m[];
};

/* fence.c: the host's observer (host.h), or NULL */
struct fl__observer;
const struct fl__observer *fl__observer_get(void **ret_arg);

/* timeline.c */
void fl__timeline_mem_ref(struct fl_timeline *tl);
void fl__timeline_mem_unref(struct fl_timeline *tl);
int fl__pt_compare(const struct fl_sync_pt *a, const struct fl_sync_pt *b);
/* Evaluate a new point under tl->lock: set its status or queue it. */
void fl__pt_activate_locked(struct fl_sync_pt *pt);
struct fl_sync_pt *fl__pt_alloc(struct fl_timeline *tl, uint64_t value);

/*
 * A gated point (fl__pt_gate_close()). Reached while gates are engaged
 * (fl__pt_gates_engage()), and held by the host's hook: its outcome waits
 * here, and every fence it is a member of stays pending, until the gate
 * opens. Under the timeline's lock; the held list under its own.
 */
struct fl__pt_gate {
	bool open;
	bool held; /* reached, its outcome kept: @status, @ts; on the held list */
	_Atomic bool told; /* the hook was told of its outcome */
	int status;
	uint64_t ts;
	void *owner; /* the hook's and fl__pt_gates_open()'s */
	uint64_t cookie;
	uint64_t token; /* the hook's, for fl__pt_gates_open() */
	struct fl_sync_pt *pt; /* its point; a reference on it while held */
	struct fl__pt_gate *next_held;
};
void fl__pt_unref(struct fl_sync_pt *pt);
void fl__pt_ref(struct fl_sync_pt *pt);
/* Completes fences collected by a signal pass, dropping the refs taken. */
void fl__complete_list(struct fl_fence *list);

/* fence.c */
struct fl_fence *fl__fence_alloc(uint32_t n, const char *name, unsigned int flags);
void fl__fence_publish(struct fl_fence *f);
/* Called under the member's timeline lock when its point completed. */
bool fl__member_done(struct fl_fence *f, int status);
bool fl__fence_ref_unless_zero(struct fl_fence *f);
int fl__fence_compute_status(const struct fl_fence *f);
uint64_t fl__fence_timestamp(const struct fl_fence *f, int status);
/* Run completion (sinks, waiters, callbacks) once; caller holds a ref. */
void fl__fence_complete(struct fl_fence *f);
/* Make sure members are linked; returns the status if already complete. */
int fl__fence_arm(struct fl_fence *f);
/* Under f->lock: arm if needed; true if the caller must then link members (unlocked). */
bool fl__fence_arm_locked(struct fl_fence *f);
/* Link members; the caller just set armed under the lock. */
void fl__fence_link_members(struct fl_fence *f);
/* Status after folding in a fresh observation (may complete the fence). */
int fl__fence_status(struct fl_fence *f);

/* fdsink.c */
void fl__sink_write_locked(struct fl__sink *s, int status, uint64_t ts);
void fl__sink_fence_destroyed(struct fl_fence *f);
struct fl__sink *fl__sink_next(struct fl__sink *s);
void fl__sink_set_next(struct fl__sink *s, struct fl__sink *next);

/* registry.c */
void fl__registry_add_timeline(struct fl_timeline *tl);
void fl__registry_del_timeline(struct fl_timeline *tl);
void fl__registry_add_fence(struct fl_fence *f);
void fl__registry_del_fence(struct fl_fence *f);
void fl__registry_lock(void);
void fl__registry_unlock(void);
struct fl_timeline *fl__registry_timelines(void);
struct fl_fence *fl__registry_fences(void);

/* dump.c */
void fl__dump_on_timeout(void);

#endif /* FL_CORE_H */

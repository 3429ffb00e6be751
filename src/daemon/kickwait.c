/* SPDX-License-Identifier: MIT */
/*
 * A step through the daemon (TIMELINE_INC, TIMELINE_INC_AT, TIMELINE_SIGNAL,
 * and TIMELINE_FAIL, which fails the pending points)
 * of a process that is not the timeline's owner may reach fences whose only
 * write end the owner keeps: the daemon cannot make their fds ready, it can
 * only kick the owner (shared.c). SW_SYNC_IOC_INC returns with every point
 * it reached signalled for everyone, so the step's reply waits here until
 * the owner has read that kick and closed those ends (KICK_ACK), or is gone
 * (its ends closed with it, or given back before it went). The owner's
 * connection watcher does that without its program's help; an owner that
 * is stopped holds the reply until it runs again (docs/architecture.md,
 * "Owned timelines").
 *
 * The same wait holds a step whose owner may have queued a one-way merge
 * of the points it reached (FENCE_MERGE_INTO, the page's oneway_merges)
 * that we could not read within the step's share of our time: the reply
 * waits until the owner's queue from before the step is read, in the
 * owner's own turns (fld_kickwait_drain()), so a flood of costly requests
 * holds up only the steps of its own timelines, never the other clients.
 */
#include <stdlib.h>

#include "daemon.h"
#include "host.h"

struct kick_wait {
	struct client *c; /* the signaller, a reference */
	struct client *owner; /* a reference */
	struct fl_msg_hdr hdr;
	uint64_t seq; /* the owner's kicks_sent that its KICK_ACK must reach */
	bool drain; /* and the owner's queue read past this mark */
	struct fld_queue_mark mark;
	int status;
	bool has_value; /* TIMELINE_FAIL: the reply carries @value (how many failed) */
	uint64_t value;
	struct kick_wait *next;
};
static struct kick_wait *waits;

/* The step being handled: whose reply waits for which owner's kick, or queue. */
static struct client *stepping;
static struct client *step_owner;
static uint64_t step_seq;
static bool step_drain;
static struct fld_queue_mark step_mark;

void fld_kickwait_begin(struct client *c)
{
	stepping = c;
	step_owner = NULL;
	step_seq = 0;
	step_drain = false;
}

void fld_kickwait_save(struct fld_kickwait_step *st)
{
	*st = (struct fld_kickwait_step){ .stepping = stepping,
					  .owner = step_owner,
					  .seq = step_seq,
					  .drain = step_drain,
					  .mark = step_mark };
	stepping = step_owner = NULL;
	step_seq = 0;
	step_drain = false;
}

void fld_kickwait_restore(const struct fld_kickwait_step *st)
{
	stepping = st->stepping;
	step_owner = st->owner;
	step_seq = st->seq;
	step_drain = st->drain;
	step_mark = st->mark;
}

bool fld_kickwait_wanted(const struct client *owner)
{
	return stepping && owner != stepping && !owner->kick_unread &&
	       owner->conn.versions[FL_PROTO_SVC_SYNC] >= FL_KICK_ACK_SINCE;
}

void fld_kickwait_sent(struct client *owner)
{
	step_owner = owner;
	step_seq = owner->kicks_sent;
}

/*
 * A step concerns one timeline, so the owner it kicks and the owner whose
 * queue it waits for are the same client; were they not, the kicks' wait
 * wins and the queue's is not waited for (only a merge could read late).
 */
void fld_kickwait_drain(struct client *owner)
{
	if (!stepping || owner == stepping || (step_owner && step_owner != owner))
		return;
	step_owner = owner;
	step_drain = true;
	step_mark = fld_queue_mark(owner);
}

/* @w's owner has done what the step waits for. */
static bool wait_done(const struct kick_wait *w)
{
	const struct client *o = w->owner;

	if (o->conn.fd < 0)
		return true;
	if (o->kicks_acked < w->seq)
		return false;
	return !w->drain || fld_queue_passed(o, w->mark, FLD_OWNER_READ_MAX);
}

/* The step's answer: its status, or TIMELINE_FAIL's count. */
static bool answer_step(struct client *c, const struct fl_msg_hdr *req, int status, bool has_value,
			uint64_t value)
{
	struct fl_msg_value_reply rep = { { 0, 0 }, value };

	if (!has_value || status < 0)
		return fld_reply_status(c, req, status);
	return fld_reply_send(c, req, &rep, sizeof(rep), -1);
}

static void wait_free(struct kick_wait *w, bool answer)
{
	if (answer && w->c->conn.fd >= 0)
		answer_step(w->c, &w->hdr, w->status, w->has_value, w->value);
	if (w->drain)
		w->owner->queue_waits--;
	fld_client_unref(w->c);
	fld_client_unref(w->owner);
	free(w);
}

static bool reply_after_kicks(struct client *c, const struct fl_msg_hdr *req, int status,
			      bool has_value, uint64_t value)
{
	struct client *owner = step_owner;
	struct kick_wait *w;

	stepping = step_owner = NULL;
	if (!owner)
		return answer_step(c, req, status, has_value, value);
	w = malloc(sizeof(*w));
	/* No memory to wait with: answer now, as before this wait existed. */
	if (!w)
		return answer_step(c, req, status, has_value, value);
	*w = (struct kick_wait){ .c = c,
				 .owner = owner,
				 .hdr = *req,
				 .seq = step_seq,
				 .drain = step_drain,
				 .mark = step_mark,
				 .status = status,
				 .has_value = has_value,
				 .value = value,
				 .next = waits };
	step_drain = false;
	if (wait_done(w)) {
		free(w);
		return answer_step(c, req, status, has_value, value);
	}
	atomic_fetch_add(&c->refs, 1);
	atomic_fetch_add(&owner->refs, 1);
	if (w->drain)
		owner->queue_waits++;
	waits = w;
	return true;
}

bool fld_kickwait_reply(struct client *c, const struct fl_msg_hdr *req, int status)
{
	return reply_after_kicks(c, req, status, false, 0);
}

bool fld_kickwait_reply_value(struct client *c, const struct fl_msg_hdr *req, int status,
			      uint64_t value)
{
	return reply_after_kicks(c, req, status, true, value);
}

/*
 * Answer the waits on @owner that its acknowledgements let go; and those
 * whose owner is @gone, or drop those whose signaller is.
 */
static void waits_release(const struct client *owner, const struct client *gone)
{
	for (struct kick_wait **p = &waits; *p;) {
		struct kick_wait *w = *p;
		bool mine = w->owner == owner && wait_done(w);

		if (!mine && w->c != gone && w->owner != gone) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		wait_free(w, w->c != gone);
	}
}

void fld_kickwait_ack(struct client *c, uint64_t count)
{
	/*
	 * Its watcher stopped with nothing kept: what it did not read is about
	 * ends it no longer has, so nobody waits for it until it reads again.
	 */
	if (count == FL_KICK_ACK_GONE) {
		c->kick_unread = true;
		count = c->kicks_sent;
	}
	/* It can only say it read what we sent: more is a lie about its own fences. */
	if (count > c->kicks_sent)
		count = c->kicks_sent;
	if (count > c->kicks_acked)
		c->kicks_acked = count;
	/*
	 * It closed the ends it acknowledges: the points held for them open
	 * now (fl__pt_gate_close()), so that what was made of them, merges,
	 * completes no sooner than their fds, and before the step is answered.
	 */
	fl__pt_gates_open(c, c->kicks_acked);
	fld_shared_holds_acked(c);
	waits_release(c, NULL);
}

void fld_kickwait_read(struct client *c)
{
	if (waits)
		waits_release(c, NULL);
}

void fld_kickwait_client_gone(struct client *c)
{
	/* Its ends close with it (or its watcher closes them as it sees the hang-up). */
	fl__pt_gates_open(c, UINT64_MAX);
	waits_release(NULL, c);
}

/* SPDX-License-Identifier: MIT */
/*
 * fl_fence_fd_get_info() of the daemon's pipe fence fds from the info
 * records of its status page (docs/architecture.md, "The status page"):
 * no round trip where the page can answer exactly, the round trip where
 * it cannot (fd-daemon.c).
 */
#include <poll.h>
#include <string.h>

#include <fenceline/fence.h>
#include <fenceline/shared.h>

#include "client.h"
#include "fdbackend.h"
#include "host.h"
#include "statuspage.h"
#include "util.h"

/* Whether the fd is at end-of-file or has a record: ready, in every process. */
static bool fd_ready(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return poll(&pf, 1, 0) != 0;
}

/*
 * An active merge's points, which the record published when the merge was
 * made and which may have changed since: a completed one stays completed
 * (the record's word is final), and a pending one on a timeline this
 * process owns is pending while the owner's counter has not reached it
 * (the counter is that timeline's value). Any other (a pending point of
 * another process's timeline, or one our counter reached that the daemon
 * may not have completed yet) is the daemon's to tell. The fd's readiness,
 * checked after this, says whether the fence itself completed meanwhile.
 */
static bool active_points_known(const struct fl_info_body *b, uint32_t n)
{
	if (b->status != FL_STATUS_ACTIVE || b->state != FL_STATUS_E_LIVE)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (b->points[i].status == FL_STATUS_ACTIVE &&
		    fl__client_owned_point(b->points[i].timeline_id, b->points[i].value) != 0)
			return false;
	return true;
}

int fl__fd_page_info(const struct fl__fdref *ref, unsigned int flags,
		     struct fl_fence_info *ret_info, struct fl_sync_pt_info *points,
		     uint32_t max_points)
{
	struct fl_info_body b;
	uint32_t n;
	bool active = false;

	if (!ref->pipe || !fl__status_page_info(ref->dev, ref->ino, &b))
		return FL__FD_NOT_MINE;
	n = FL_MIN(max_points, b.num_points);
	/* Points the page cannot vouch for, or has not got: the daemon's. */
	if (n &&
	    (b.num_points > FL_INFO_POINTS || (!b.points_final && !active_points_known(&b, n))))
		return FL__FD_NOT_MINE;
	if (b.status == FL_STATUS_ACTIVE) {
		/*
		 * Taken only while the pipe agrees: a ready fd completed where
		 * the page does not say yet (records in, page not written; a
		 * dead daemon's page; an owner's own signal).
		 */
		if (fd_ready(ref->fd))
			return FL__FD_NOT_MINE;
	} else if (b.state == FL_STATUS_E_HELD) {
		/*
		 * The owner closes its end after the daemon published: until
		 * then the fence reads active, as the fd does, which for one
		 * point says what its point is too. A merge is never held.
		 */
		if (!fd_ready(ref->fd)) {
			if (b.num_points != 1)
				return FL__FD_NOT_MINE;
			active = true;
		}
	}
	/*
	 * The time its completer wrote into the pipe, as FENCE_INFO says
	 * (sync.c's owner_stamp()): an owner's step's own, or a born-signalled
	 * fence's creation, which its owner wrote before the daemon made it.
	 * Five syscalls for the timestamp alone: not for a caller that drops it.
	 */
	if (!active && b.status == FL_STATUS_SIGNALED && b.num_points == 1 &&
	    !(flags & FL_INFO_NO_TIMESTAMPS)) {
		b.timestamp_ns = fl__pipe_stamp_of(ref->fd, b.timestamp_ns);
		b.points[0].timestamp_ns = b.timestamp_ns;
	}
	if (ret_info) {
		memset(ret_info, 0, sizeof(*ret_info));
		memcpy(ret_info->name, b.name, sizeof(ret_info->name));
		ret_info->name[sizeof(ret_info->name) - 1] = '\0';
		ret_info->status = active ? FL_STATUS_ACTIVE : b.status;
		ret_info->num_points = b.num_points;
		ret_info->timestamp_ns = active ? 0 : b.timestamp_ns;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct fl_info_point *p = &b.points[i];
		struct fl_sync_pt_info *o = &points[i];

		memset(o, 0, sizeof(*o));
		memcpy(o->timeline_name, p->timeline_name, sizeof(o->timeline_name));
		o->timeline_name[sizeof(o->timeline_name) - 1] = '\0';
		memcpy(o->driver_name, p->driver_name, sizeof(o->driver_name));
		o->driver_name[sizeof(o->driver_name) - 1] = '\0';
		o->status = active ? FL_STATUS_ACTIVE : p->status;
		o->flags = p->flags;
		o->timestamp_ns = active ? 0 : p->timestamp_ns;
		o->value = p->value;
		o->timeline_id = p->timeline_id;
	}
	return (int)n;
}

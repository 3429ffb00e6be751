/* SPDX-License-Identifier: MIT */
/*
 * <fenceline/introspect.h>: fencectl's requests (DUMP and its views, TRACE)
 * as typed calls, so that tools need neither the wire format nor the
 * client's private calls. None of them may start a daemon: each goes
 * through fl__client_call_no_spawn().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "client.h"
#include "protocol.h"
#include "statuspage.h"
#include "util.h"

/*
 * One request whose success carries exactly one fd when @ret_fd is not
 * NULL, and none when it is: anything else from the daemon is -EPROTO.
 */
static int ask(uint32_t op, const void *body, size_t body_len, int *ret_fd)
{
	unsigned char reply[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_reply)];
	int r, fd = -1;

	r = fl__client_call_no_spawn(op, body, body_len, NULL, 0, reply, sizeof(reply), &fd);
	if (r >= 0)
		r = fl__client_reply_status(reply);
	if (r > 0 || (r == 0 && (fd >= 0) != (ret_fd != NULL)))
		r = -EPROTO;
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (ret_fd)
		*ret_fd = fd;
	return 0;
}

static int dump(uint32_t view, unsigned int flags, pid_t pid, int *ret_fd)
{
	struct fl_msg_dump body = { view, (uint32_t)pid };

	fl_return_if(!ret_fd || (flags & ~FL_INTROSPECT_JSON), -EINVAL);
	if (flags & FL_INTROSPECT_JSON)
		body.flags |= FL_DUMP_JSON;
	return ask(FL_OP_DUMP, &body, sizeof(body), ret_fd);
}

FL_EXPORT int fl_introspect_dump(unsigned int flags, int *ret_fd)
{
	return dump(0, flags, 0, ret_fd);
}

FL_EXPORT int fl_introspect_dump_fds(pid_t pid, unsigned int flags, int *ret_fd)
{
	fl_return_if(pid < 0, -EINVAL);
	return dump(FL_DUMP_FDS, flags, pid, ret_fd);
}

FL_EXPORT int fl_introspect_dump_waits(unsigned int flags, int *ret_fd)
{
	return dump(FL_DUMP_DEADLOCKS, flags, 0, ret_fd);
}

FL_EXPORT int fl_introspect_dump_stats(unsigned int flags, int *ret_fd)
{
	uint32_t view = FL_DUMP_STATS;

	if (flags & FL_INTROSPECT_RESET)
		view |= FL_DUMP_RESET;
	return dump(view, flags & ~FL_INTROSPECT_RESET, 0, ret_fd);
}

FL_EXPORT int fl_introspect_dump_heaps(unsigned int flags, int *ret_fd)
{
	return dump(FL_DUMP_HEAPS, flags, 0, ret_fd);
}

FL_EXPORT int fl_introspect_trace_start(unsigned int max_events)
{
	struct fl_msg_trace body = { FL_TRACE_START, max_events };

	return ask(FL_OP_TRACE, &body, sizeof(body), NULL);
}

FL_EXPORT int fl_introspect_trace_stop(int *ret_fd)
{
	struct fl_msg_trace body = { FL_TRACE_STOP, 0 };

	fl_return_if(!ret_fd, -EINVAL);
	return ask(FL_OP_TRACE, &body, sizeof(body), ret_fd);
}

FL_EXPORT bool fl_introspect_tracing(void)
{
	return fl__status_page_tracing();
}

FL_EXPORT int fl_introspect_trace_display(const struct fl_trace_display_event *ev, int fence_fd)
{
	struct fl_msg_trace_event m;

	fl_return_if(!ev || !ev->type || ev->type > FL_PROTO_TRACE_EVENT_TYPES || !ev->ts_ns ||
			     ev->status > 0 || ev->index > UINT16_MAX ||
			     (fence_fd >= 0 && ev->type != FL_TRACE_DISPLAY_ACQUIRE),
		     -EINVAL);
	/* The cost when nobody traces: this load. */
	if (!fl__status_page_tracing())
		return -ENOENT;
	if (fence_fd >= 0 && fcntl(fence_fd, F_GETFD) < 0)
		return -EBADF;
	memset(&m, 0, sizeof(m));
	m.type = (uint16_t)ev->type;
	m.device = ev->device;
	m.post = ev->post;
	m.ts_ns = ev->ts_ns;
	/* The wire's a and b are the type's own (struct fl_msg_trace_event). */
	m.a = ev->type == FL_TRACE_DISPLAY_POST	     ? ev->buffers
	      : ev->type == FL_TRACE_DISPLAY_FLIP    ? ev->vsync_ns
	      : ev->type == FL_TRACE_DISPLAY_RELEASE ? ev->by_post
						     : 0;
	m.b = ev->type == FL_TRACE_DISPLAY_POST	  ? ev->acquire
	      : ev->type == FL_TRACE_DISPLAY_FLIP ? ev->ready_ns
						  : 0;
	m.status = ev->status;
	m.pid = ev->pid;
	m.index = (uint16_t)ev->index;
	return fl__client_report(FL_OP_TRACE_EVENT, fence_fd >= 0 ? FL_MSG_F_FENCE : 0, &m,
				 sizeof(m), &fence_fd, fence_fd >= 0 ? 1 : 0);
}

FL_EXPORT int fl_introspect_read(int fd, char *buf, size_t cap, size_t *ret_len)
{
	struct stat st;
	size_t len, got = 0;

	fl_return_if(!ret_len || (!buf && cap), -EINVAL);
	fl_return_if(fd < 0, -EBADF);
	if (fstat(fd, &st) < 0)
		return -errno;
	fl_return_if(!S_ISREG(st.st_mode), -EINVAL);
	if ((uint64_t)st.st_size >= SIZE_MAX)
		return -EFBIG;
	len = (size_t)st.st_size;
	if (cap <= len) {
		*ret_len = len;
		return -ENOBUFS;
	}
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		/* A file that shrank since fstat() (not a sealed view): what is there. */
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*ret_len = got;
	return 0;
}

FL_EXPORT int fl_introspect_get_daemon_pid(pid_t *ret_pid)
{
	int r;

	fl_return_if(!ret_pid, -EINVAL);
	r = fl__client_daemon_pid_no_spawn();
	if (r < 0)
		return r;
	*ret_pid = r;
	return 0;
}

FL_EXPORT int fl_introspect_client_stats(struct fl_introspect_client_stats *ret, size_t size)
{
	struct fl_introspect_client_stats st;
	struct fl__client_stats c;

	fl_return_if(!ret || !size, -EINVAL);
	fl__client_stats(&c);
	st = (struct fl_introspect_client_stats){ c.pool_fills,	    c.pool_fills_taken,
						  c.pool_waits,	    c.pool_pooled,
						  c.pool_pooled_ns, c.pool_bare_ns,
						  c.pool_offs,	    c.kicks };
	memcpy(ret, &st, FL_MIN(size, sizeof(st)));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * <fenceline/heap-daemon.h>: buffers from fencelined's allocation service
 * (HEAP_ALLOC, HEAP_FREE, HEAP_INFO in docs/protocol.md). Each call is one
 * round trip on this process's connection; nothing is cached here, so a
 * new connection (after fork() or fl_daemon_disconnect()) simply starts
 * with nothing charged to it.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/heap-daemon.h>

#include "client.h"
#include "util.h"

/* The heap's name in the request's field; -ENODEV if it cannot be a daemon heap's. */
static int heap_name(char dst[FL_PROTO_NAME_LEN], const char *heap)
{
	size_t len = strlen(heap);

	if (len >= FL_PROTO_NAME_LEN)
		return -ENODEV;
	memset(dst, 0, FL_PROTO_NAME_LEN);
	memcpy(dst, heap, len);
	return 0;
}

/*
 * One request whose success reply is exactly @reply_len bytes of body.
 * Return: 0 (the body in @reply), or a negative errno.
 */
static int request(uint32_t op, const void *body, size_t body_len, const int *fds,
		   unsigned int nfds, void *reply, size_t reply_len, int *ret_fd)
{
	unsigned char buf[sizeof(struct fl_msg_hdr) + sizeof(struct fl_msg_heap_info_reply)];
	int fd = -1, n;

	n = fl__client_call(op, 0, body, body_len, fds, nfds, 0, buf, sizeof(buf),
			    ret_fd ? &fd : NULL);
	if (n < 0)
		return n;
	if (fl__client_reply_status(buf) < 0) {
		fl__close(fd);
		return fl__client_reply_status(buf);
	}
	if ((size_t)n != sizeof(struct fl_msg_hdr) + reply_len || (ret_fd && fd < 0)) {
		fl__close(fd);
		return -EPROTO;
	}
	memcpy(reply, buf + sizeof(struct fl_msg_hdr), reply_len);
	if (ret_fd)
		*ret_fd = fd;
	return 0;
}

FL_EXPORT int fl_heap_daemon_alloc_group(const char *heap, size_t size, unsigned int flags,
					 uint32_t group, int *ret_fd)
{
	struct fl_msg_heap_alloc q = { .size = size, .flags = flags, .group = group };
	struct fl_msg_heap_alloc_reply rep;
	int r;

	fl_return_if(!heap || !heap[0] || !ret_fd, -EINVAL);
	r = heap_name(q.heap, heap);
	if (r == 0)
		r = request(FL_OP_HEAP_ALLOC, &q, sizeof(q), NULL, 0, &rep, sizeof(rep), ret_fd);
	return r;
}

FL_EXPORT int fl_heap_daemon_alloc(const char *heap, size_t size, unsigned int flags, int *ret_fd)
{
	return fl_heap_daemon_alloc_group(heap, size, flags, 0, ret_fd);
}

FL_EXPORT int fl_heap_daemon_buffer_free(int fd)
{
	struct fl_msg_heap_free q = { 0, 0 };
	struct fl_msg_heap_free_reply rep;
	int r;

	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	r = request(FL_OP_HEAP_FREE, &q, sizeof(q), &fd, 1, &rep, sizeof(rep), NULL);
	if (r == 0)
		close(fd);
	return r;
}

FL_EXPORT int fl_heap_daemon_group_new(uint32_t *ret_group)
{
	static atomic_uint next = 1;
	uint32_t g;

	fl_return_if(!ret_group, -EINVAL);
	do
		g = atomic_fetch_add(&next, 1);
	while (g == 0);
	*ret_group = g;
	return 0;
}

FL_EXPORT int fl_heap_daemon_group_free(uint32_t group)
{
	struct fl_msg_heap_free q = { group, 0 };
	struct fl_msg_heap_free_reply rep;
	int r;

	fl_return_if(group == 0, -EINVAL);
	r = request(FL_OP_HEAP_FREE, &q, sizeof(q), NULL, 0, &rep, sizeof(rep), NULL);
	if (r < 0)
		return r;
	return rep.freed > INT32_MAX ? INT32_MAX : (int)rep.freed;
}

/* The old names (docs/changelog.md), the same code at the same symbol version. */
FL_EXPORT int fl_heap_daemon_free(int fd) __attribute__((alias("fl_heap_daemon_buffer_free")));
FL_EXPORT int fl_heap_daemon_free_group(uint32_t group)
	__attribute__((alias("fl_heap_daemon_group_free")));

FL_EXPORT int fl_heap_daemon_get_usage(const char *heap, struct fl_heap_daemon_usage *ret_usage)
{
	struct fl_msg_heap_info q;
	struct fl_msg_heap_info_reply rep = { 0 }; /* gcc -O3 cannot see request() fill it */
	int r;

	fl_return_if(!ret_usage, -EINVAL);
	r = heap_name(q.heap, heap ? heap : "");
	if (r == 0)
		r = request(FL_OP_HEAP_INFO, &q, sizeof(q), NULL, 0, &rep, sizeof(rep), NULL);
	if (r < 0)
		return r;
	*ret_usage = (struct fl_heap_daemon_usage){
		.limit = rep.limit,
		.bytes = rep.bytes,
		.buffers = rep.buffers,
		.peak_bytes = rep.peak_bytes,
		.peak_buffers = rep.peak_buffers,
		.refused = rep.refused,
		.heap_capacity = rep.heap_capacity,
		.heap_allocated = rep.heap_allocated,
		.heap_buffers = rep.heap_buffers,
	};
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * What the two sides of a buffer queue share (src/bufferqueue/): the
 * buffer layout of each format and the framing of one message.
 */
#ifndef FL_BUFFERQUEUE_PRIVATE_H
#define FL_BUFFERQUEUE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fenceline/bufferqueue.h>

/*
 * fl__bq_layout() - the planes of a @width x @height buffer of @format,
 * rows 64-byte aligned. Return: 0, or -EINVAL for a size or format the
 * queue does not allocate.
 */
int fl__bq_layout(uint32_t width, uint32_t height, uint32_t format,
		  struct fl_bufferqueue_buffer *ret);

/*
 * fl__bq_send() - one message on a queue's socket, never blocking: -EAGAIN
 * means the peer's socket is full (it does not read).
 */
int fl__bq_send(int sock, uint32_t op, uint32_t seq, const void *body, size_t len, const int *fds,
		unsigned int nfds);

/*
 * fl__bq_fence_fd_ok() - whether @fd can be a fenceline fence fd (a socket,
 * or a pipe of mode 0), judged from what the kernel has cached: never a
 * request to a FUSE server. A peer's regular files, devices and the like
 * are refused before anyone waits on them.
 */
bool fl__bq_fence_fd_ok(int fd);

/* A file descriptor's copy (F_DUPFD_CLOEXEC): the new fd, or -EBADF, -EMFILE. */
int fl__bq_dup(int fd);

#endif /* FL_BUFFERQUEUE_PRIVATE_H */

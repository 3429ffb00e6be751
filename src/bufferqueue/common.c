// SPDX-License-Identifier: MIT
/* What the consumer and the producer share (bufferqueue-private.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bufferqueue-private.h"
#include "bufferqueue.h"
#include "transport.h"
#include "util.h"

#define PITCH_ALIGN 64u

static uint32_t align_pitch(uint64_t bytes)
{
	return (uint32_t)((bytes + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN);
}

int fl__bq_layout(uint32_t width, uint32_t height, uint32_t format,
		  struct fl_bufferqueue_buffer *ret)
{
	struct fl_bufferqueue_buffer b;
	uint32_t cw = (width + 1) / 2, ch = (height + 1) / 2;
	unsigned int bpp = 0;

	if (!width || !height || width > FL_BUFFERQUEUE_MAX_DIM || height > FL_BUFFERQUEUE_MAX_DIM)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	b.fd = -1;
	b.width = width;
	b.height = height;
	b.format = format;
	switch (format) {
	case FL_FOURCC('X', 'R', '2', '4'):
	case FL_FOURCC('A', 'R', '2', '4'):
	case FL_FOURCC('X', 'B', '2', '4'):
	case FL_FOURCC('A', 'B', '2', '4'):
		bpp = 4;
		break;
	case FL_FOURCC('R', 'G', '1', '6'):
		bpp = 2;
		break;
	case FL_FOURCC('N', 'V', '1', '2'):
		b.num_planes = 2;
		b.pitches[0] = align_pitch(width);
		b.pitches[1] = align_pitch(2ull * cw);
		b.offsets[1] = b.pitches[0] * height;
		b.size = (uint64_t)b.offsets[1] + (uint64_t)b.pitches[1] * ch;
		break;
	case FL_FOURCC('Y', 'U', '1', '2'):
		b.num_planes = 3;
		b.pitches[0] = align_pitch(width);
		b.pitches[1] = b.pitches[2] = align_pitch(cw);
		b.offsets[1] = b.pitches[0] * height;
		b.offsets[2] = b.offsets[1] + b.pitches[1] * ch;
		b.size = (uint64_t)b.offsets[2] + (uint64_t)b.pitches[2] * ch;
		break;
	default:
		return -EINVAL;
	}
	if (bpp) {
		b.num_planes = 1;
		b.pitches[0] = align_pitch((uint64_t)width * bpp);
		b.size = (uint64_t)b.pitches[0] * height;
	}
	*ret = b;
	return 0;
}

int fl__bq_send(int sock, uint32_t op, uint32_t seq, const void *body, size_t len, const int *fds,
		unsigned int nfds)
{
	struct fl_msg_hdr hdr = { .op = op, .flags = 0, .seq = seq, .len = (uint32_t)len };
	ssize_t n;

	n = fl__proto_send(sock, &hdr, sizeof(hdr), body, len, fds, nfds, MSG_DONTWAIT);
	if (n < 0)
		return (int)n;
	return 0;
}

int fl__bq_dup(int fd)
{
	int r;

	if (fd < 0)
		return -EBADF;
	r = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	return r < 0 ? -errno : r;
}

bool fl__bq_fence_fd_ok(int fd)
{
	dev_t dev;
	ino_t ino;

	return fl__fd_identity(fd, &dev, &ino, NULL) == 0;
}

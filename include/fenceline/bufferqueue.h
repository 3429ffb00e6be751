/* SPDX-License-Identifier: MIT */
/**
 * DOC: buffer queues - Android's BufferQueue between two processes
 *
 * A consumer (a compositor, an encoder) owns a queue of N slots, each of
 * which may hold one buffer. One producer (a camera, a GPU client, a video
 * decoder) in another process connects to it over a Unix socket and:
 *
 * - dequeues a free slot: it gets the slot's **release fence**, which it
 *   must wait for (or hand to its GPU) before it writes the buffer, and the
 *   slot's buffer the first time it uses the slot, or after the consumer
 *   reallocated it. Both sides cache each slot's buffer: its fd crosses the
 *   socket once per slot and allocation;
 * - queues it back with an **acquire fence** (signalled when its write is
 *   done), the damaged rectangles and a desired present time, and gets the
 *   buffer's frame number.
 *
 * The consumer acquires the oldest queued buffer (FIFO) or the newest
 * (MAILBOX: queueing over an unacquired buffer gives that one back to the
 * producer at once), receives its acquire fence, and later releases the
 * slot with a release fence (e.g. the display's), which becomes the fence
 * of the slot's next dequeue. docs/bufferqueue.md has the whole contract
 * and how it maps to Android's dequeueBuffer, queueBuffer, acquireBuffer
 * and releaseBuffer.
 *
 * Buffers come from a heap table (<fenceline/heap-table.h>, the gralloc
 * role), for the producer's usage (device names such as ``camera`` or
 * ``gpu-render``) plus the consumer's (``display-scanout`` when it may scan
 * the buffer out). A dequeue asking for another size, format or usage than
 * the slot's buffer has reallocates that slot.
 *
 * Events: neither side uses threads. Each side has an fd for its event
 * loop, readable when fl_bufferqueue_consumer_dispatch() or
 * fl_bufferqueue_producer_dispatch() has something to do, and the blocking
 * calls take timeouts. The consumer never blocks on its producer: it reads
 * and writes without blocking, keeps no queue of its own per connection,
 * and cuts off a producer that sends what the protocol forbids or lets its
 * socket fill by not reading.
 *
 * Fds: fds passed in are borrowed (the library takes copies); fds handed
 * out in ``ret`` arguments are the caller's to close; buffers described by
 * a struct fl_bufferqueue_buffer stay owned by the queue object and are
 * valid until the slot is reallocated or the object is destroyed.
 *
 * Threads: an object is used by one thread at a time.
 */
#ifndef FENCELINE_BUFFERQUEUE_H
#define FENCELINE_BUFFERQUEUE_H

#include <stdint.h>

#include <fenceline/display.h>
#include <fenceline/export.h>
#include <fenceline/heap-table.h>

FL_BEGIN_DECLS

struct fl_bufferqueue_consumer;
struct fl_bufferqueue_producer;

/** The most slots a queue has. */
#define FL_BUFFERQUEUE_MAX_SLOTS 32
/** The most damage rectangles one queued buffer carries; more merge into their bounds. */
#define FL_BUFFERQUEUE_MAX_DAMAGE 16
/** The most planes a buffer has. */
#define FL_BUFFERQUEUE_MAX_PLANES 4
/** The longest usage list (comma-separated device names), NUL included. */
#define FL_BUFFERQUEUE_USAGE_MAX 64
/** The largest width or height of a buffer. */
#define FL_BUFFERQUEUE_MAX_DIM 16384

/** Which queued buffer fl_bufferqueue_consumer_acquire() takes. */
enum fl_bufferqueue_mode {
	/** The oldest: every queued frame is shown, the producer waits for free slots. */
	FL_BUFFERQUEUE_FIFO = 0,
	/**
	 * The newest: a buffer queued over an unacquired one gives that one
	 * back to the producer at once (Android's async mode, Vulkan's mailbox).
	 */
	FL_BUFFERQUEUE_MAILBOX = 1,
};

/** struct fl_bufferqueue_config's flags: the consumer may scan buffers out. */
#define FL_BUFFERQUEUE_SCANOUT (1u << 0)

/**
 * struct fl_bufferqueue_config - how a consumer makes its queue
 * @name: a name for messages (borrowed; NULL gives "bufferqueue"), at
 *	most 31 bytes used
 * @path: a socket path to listen on for the producer (borrowed), created
 *	here and unlinked by fl_bufferqueue_consumer_destroy(); NULL listens
 *	nowhere: producers then come through fl_bufferqueue_consumer_connect_fd()
 * @num_slots: 1 to %FL_BUFFERQUEUE_MAX_SLOTS
 * @mode: enum fl_bufferqueue_mode
 * @flags: %FL_BUFFERQUEUE_SCANOUT or 0
 * @usage: the consumer's own usage, comma-separated device names of the
 *	heap table (e.g. "gpu-render" for a GL compositor); NULL or "" for
 *	none. %FL_BUFFERQUEUE_SCANOUT adds "display-scanout"
 * @table: the heap table to allocate from (borrowed; it must outlive the
 *	consumer); NULL loads fl_heap_table_load_system() for the consumer
 */
struct fl_bufferqueue_config {
	const char *name;
	const char *path;
	unsigned int num_slots;
	unsigned int mode;
	unsigned int flags;
	const char *usage;
	struct fl_heap_table *table;
};

/**
 * struct fl_bufferqueue_buffer - one slot's buffer, as both sides cache it
 * @fd: the buffer (a heap buffer fd: memfd or dma-buf); owned by the queue
 *	object, valid until the slot is reallocated or the object destroyed.
 *	Map it or dup it; do not close it
 * @width: pixels
 * @height: pixels
 * @format: DRM fourcc (FL_FOURCC()): XR24, AR24, XB24, AB24, RG16, NV12, YU12
 * @num_planes: 1 to 3
 * @size: bytes of the buffer's planes (the fd may be larger: heap alignment)
 * @offsets: each plane's offset in bytes
 * @pitches: each plane's bytes per row (rows 64-byte aligned)
 */
struct fl_bufferqueue_buffer {
	int fd;
	uint32_t width;
	uint32_t height;
	uint32_t format;
	uint32_t num_planes;
	uint64_t size;
	uint32_t offsets[FL_BUFFERQUEUE_MAX_PLANES];
	uint32_t pitches[FL_BUFFERQUEUE_MAX_PLANES];
};

/** A damaged rectangle, in buffer pixels. */
struct fl_bufferqueue_rect {
	int32_t x, y, width, height;
};

/** struct fl_bufferqueue_dequeued's flags: the slot's buffer is new to this producer. */
#define FL_BUFFERQUEUE_BUFFER_NEW (1u << 0)
/** ... and it replaces the slot's previous buffer (Android's BUFFER_NEEDS_REALLOCATION). */
#define FL_BUFFERQUEUE_BUFFER_REALLOCATED (1u << 1)

/**
 * struct fl_bufferqueue_request - what a producer asks a dequeue for
 * @width: pixels, 1 to %FL_BUFFERQUEUE_MAX_DIM
 * @height: pixels, 1 to %FL_BUFFERQUEUE_MAX_DIM
 * @format: a fourcc of struct fl_bufferqueue_buffer
 * @usage: the producer's usage, comma-separated device names of the
 *	consumer's heap table ("camera", "gpu-render", "video-decode"...);
 *	shorter than %FL_BUFFERQUEUE_USAGE_MAX (borrowed; NULL or "" for "cpu")
 */
struct fl_bufferqueue_request {
	uint32_t width;
	uint32_t height;
	uint32_t format;
	const char *usage;
};

/**
 * struct fl_bufferqueue_dequeued - a dequeued slot
 * @slot: the slot, below the queue's number of slots
 * @flags: %FL_BUFFERQUEUE_BUFFER_NEW, %FL_BUFFERQUEUE_BUFFER_REALLOCATED
 *	(drop what you cached of the slot's old buffer, mappings included)
 * @release_fence_fd: the fence to wait for before writing the buffer,
 *	owned by the caller; -1 when the buffer is free already
 * @buffer: the slot's buffer, borrowed from the producer (see
 *	struct fl_bufferqueue_buffer)
 */
struct fl_bufferqueue_dequeued {
	unsigned int slot;
	unsigned int flags;
	int release_fence_fd;
	const struct fl_bufferqueue_buffer *buffer;
};

/**
 * struct fl_bufferqueue_queue_info - what comes with a queued buffer
 * @desired_present_ns: CLOCK_MONOTONIC time at which the producer wants
 *	the frame on screen; 0 for as soon as possible
 * @num_damage: entries of @damage; 0 means the whole buffer changed
 * @damage: the changed rectangles (borrowed); more than
 *	%FL_BUFFERQUEUE_MAX_DAMAGE are sent as their bounding box
 */
struct fl_bufferqueue_queue_info {
	uint64_t desired_present_ns;
	unsigned int num_damage;
	const struct fl_bufferqueue_rect *damage;
};

/**
 * struct fl_bufferqueue_acquired - a buffer the consumer acquired
 * @slot: its slot
 * @acquire_fence_fd: the producer's fence, signalled when the buffer is
 *	written; owned by the caller; -1 when the producer sent none
 * @buffer: the slot's buffer, borrowed from the consumer
 * @frame_number: 1 for the queue's first queued buffer, then one more per
 *	queued buffer (across producers)
 * @queue_time_ns: CLOCK_MONOTONIC time at which the consumer took the queue request
 * @desired_present_ns: as the producer queued it
 * @num_damage: entries of @damage used; 0: the whole buffer
 * @damage: the damaged rectangles
 * @dropped: buffers given back unacquired since the previous acquire (a
 *	mailbox's replaced buffers, and those an expected present time skipped)
 */
struct fl_bufferqueue_acquired {
	unsigned int slot;
	int acquire_fence_fd;
	const struct fl_bufferqueue_buffer *buffer;
	uint64_t frame_number;
	uint64_t queue_time_ns;
	uint64_t desired_present_ns;
	unsigned int num_damage;
	struct fl_bufferqueue_rect damage[FL_BUFFERQUEUE_MAX_DAMAGE];
	uint64_t dropped;
};

/** fl_bufferqueue_consumer_dispatch() events: a buffer was queued. */
#define FL_BUFFERQUEUE_EVENT_FRAME_AVAILABLE (1u << 0)
/** A producer connected. */
#define FL_BUFFERQUEUE_EVENT_CONNECTED (1u << 1)
/** The producer went away, or was cut off; another may connect. */
#define FL_BUFFERQUEUE_EVENT_DISCONNECTED (1u << 2)

/**
 * fl_bufferqueue_consumer_create() - make a queue and wait for its producer
 * @config: the queue (borrowed; see struct fl_bufferqueue_config)
 * @ret_consumer: on success, the consumer, owned by the caller
 *	(fl_bufferqueue_consumer_destroy())
 *
 * Return: 0; -EINVAL (a NULL argument, @num_slots 0 or over
 * %FL_BUFFERQUEUE_MAX_SLOTS, an unknown mode or flag, a usage too long or
 * naming no device of the table); -ENAMETOOLONG (@path too long for a
 * socket address); -EADDRINUSE (something listens on @path already: a
 * stale socket nobody listens on is replaced); the errors of
 * fl_heap_table_load_system(), socket(), bind() and listen(); -ENOMEM.
 */
FL_EXPORT int fl_bufferqueue_consumer_create(const struct fl_bufferqueue_config *config,
					     struct fl_bufferqueue_consumer **ret_consumer);

/**
 * fl_bufferqueue_consumer_destroy() - end the queue
 * @consumer: the consumer; NULL does nothing
 *
 * Disconnects the producer (its next call fails with -EPIPE), frees every
 * buffer and fence the queue holds and unlinks the socket path. Buffers and
 * fences handed out stay valid for whoever holds their fds.
 */
FL_EXPORT void fl_bufferqueue_consumer_destroy(struct fl_bufferqueue_consumer *consumer);

/**
 * fl_bufferqueue_consumer_get_fd() - the fd for the consumer's event loop
 * @consumer: the consumer (borrowed)
 *
 * Readable (EPOLLIN) when fl_bufferqueue_consumer_dispatch() has work: a
 * producer connecting, a request, a producer gone. Owned by @consumer.
 * Return: the fd, or -EINVAL (@consumer NULL).
 */
FL_EXPORT int fl_bufferqueue_consumer_get_fd(struct fl_bufferqueue_consumer *consumer);

/**
 * fl_bufferqueue_consumer_dispatch() - serve the producer without blocking
 * @consumer: the consumer (borrowed)
 * @ret_events: NULL, or where to put what happened (FL_BUFFERQUEUE_EVENT_*)
 *
 * Accepts a producer (a second one is refused with -EBUSY), serves its
 * pending requests (at most 64 per call, so that a flooding producer does
 * not hold the caller's loop) and notices it leaving. A producer that
 * breaks the protocol or does not read its replies is disconnected: its
 * dequeued slots become free, its queued buffers stay acquirable.
 * Return: 0; -EINVAL (@consumer NULL). Errors of the producer are its own,
 * never the consumer's.
 */
FL_EXPORT int fl_bufferqueue_consumer_dispatch(struct fl_bufferqueue_consumer *consumer,
					       unsigned int *ret_events);

/**
 * fl_bufferqueue_consumer_wait() - wait for a frame, serving the producer
 * @consumer: the consumer (borrowed)
 * @timeout_ms: milliseconds; 0 does not wait, -1 waits forever
 *
 * Serves the producer, as fl_bufferqueue_consumer_dispatch() does, until a
 * buffer is queued (due or not: see fl_bufferqueue_consumer_acquire()).
 * The events it met are reported by the next
 * fl_bufferqueue_consumer_dispatch().
 * Return: 0 (a buffer is queued); -ETIME (none within @timeout_ms); -EINVAL
 * (@consumer NULL); -EINTR (a signal interrupted the wait).
 */
FL_EXPORT int fl_bufferqueue_consumer_wait(struct fl_bufferqueue_consumer *consumer,
					   int timeout_ms);

/**
 * fl_bufferqueue_consumer_acquire() - take the next queued buffer
 * @consumer: the consumer (borrowed)
 * @expected_present_ns: CLOCK_MONOTONIC time at which the caller's next
 *	frame reaches the screen (the next vsync), or 0 to take the next
 *	buffer whatever its desired present time
 * @ret: on success, the buffer (see struct fl_bufferqueue_acquired; its
 *	acquire fence fd is the caller's)
 *
 * FIFO takes the oldest queued buffer, MAILBOX the only one (the newest).
 * With @expected_present_ns, as Android's acquireBuffer(expectedPresent):
 * a buffer is due when its desired present time is 0, at most
 * @expected_present_ns, or more than a second after it (a time that far
 * is taken for a mistake); a queued buffer with a desired present time
 * followed by one whose time is in the second up to @expected_present_ns
 * is dropped (given back free, counted in @ret->dropped), as often as
 * that holds; and if the buffer left is not due yet, nothing is acquired.
 * The slot stays the consumer's until fl_bufferqueue_consumer_release().
 * Does not wait: dispatch first, or use fl_bufferqueue_consumer_wait().
 * Return: 0; -EAGAIN (nothing queued, or nothing due by
 * @expected_present_ns); -EINVAL (an argument NULL).
 */
FL_EXPORT int fl_bufferqueue_consumer_acquire(struct fl_bufferqueue_consumer *consumer,
					      uint64_t expected_present_ns,
					      struct fl_bufferqueue_acquired *ret);

/**
 * fl_bufferqueue_consumer_release() - give an acquired buffer back
 * @consumer: the consumer (borrowed)
 * @slot: the acquired slot
 * @release_fence_fd: a fence signalled when the consumer no longer reads
 *	the buffer (borrowed: a copy is kept), or -1 when it is done already
 *
 * The slot becomes free; the fence becomes the release fence of its next
 * dequeue. A producer waiting for a free slot is told.
 * Return: 0; -EINVAL (@consumer NULL, @slot out of range or not acquired,
 * @release_fence_fd no fenceline fence fd: a pipe or a socket; import a
 * kernel sync_file with fl_fence_fd_import() first); -EBADF
 * (@release_fence_fd is not an open fd); -EMFILE.
 */
FL_EXPORT int fl_bufferqueue_consumer_release(struct fl_bufferqueue_consumer *consumer,
					      unsigned int slot, int release_fence_fd);

/**
 * fl_bufferqueue_consumer_connect_fd() - a connection for a producer, as an fd
 * @consumer: the consumer (borrowed)
 * @ret_fd: on success, the producer's end of a new connected socket, owned
 *	by the caller, to pass to the producer (inherited across fork(), sent
 *	with fl_send()) and open there with fl_bufferqueue_producer_connect_fd()
 *
 * The way a parent hands each child its queue, with no path on the file
 * system. The connection takes the producer's place at once.
 * Return: 0; -EINVAL (an argument NULL); -EBUSY (a producer is connected);
 * -EMFILE, -ENFILE, -ENOMEM.
 */
FL_EXPORT int fl_bufferqueue_consumer_connect_fd(struct fl_bufferqueue_consumer *consumer,
						 int *ret_fd);

/**
 * fl_bufferqueue_producer_connect() - connect to a consumer's socket
 * @path: the consumer's socket path (borrowed)
 * @ret_producer: on success, the producer, owned by the caller
 *	(fl_bufferqueue_producer_destroy())
 *
 * Connects and introduces itself; blocks until the consumer dispatches.
 * Return: 0; -EINVAL (an argument NULL); -ENAMETOOLONG; -ENOENT,
 * -ECONNREFUSED (no consumer); -EBUSY (the queue has its producer);
 * -EPIPE (the consumer went away while answering); -EPROTO (the peer
 * speaks no buffer queue protocol); -ENOMEM, -EMFILE.
 */
FL_EXPORT int fl_bufferqueue_producer_connect(const char *path,
					      struct fl_bufferqueue_producer **ret_producer);

/**
 * fl_bufferqueue_producer_connect_fd() - the producer on a connection it was given
 * @fd: a connected socket from fl_bufferqueue_consumer_connect_fd(); the
 *	producer takes it over on success (and closes it when destroyed); on
 *	failure it stays the caller's
 * @ret_producer: on success, the producer, owned by the caller
 *
 * Return: as fl_bufferqueue_producer_connect(), and -EBADF (@fd is not open).
 */
FL_EXPORT int fl_bufferqueue_producer_connect_fd(int fd,
						 struct fl_bufferqueue_producer **ret_producer);

/**
 * fl_bufferqueue_producer_destroy() - disconnect from the queue
 * @producer: the producer; NULL does nothing
 *
 * Closes the connection and every cached buffer fd. The consumer frees the
 * slots the producer had dequeued.
 */
FL_EXPORT void fl_bufferqueue_producer_destroy(struct fl_bufferqueue_producer *producer);

/**
 * fl_bufferqueue_producer_get_fd() - the fd for the producer's event loop
 * @producer: the producer (borrowed)
 *
 * Readable when a slot became free after a dequeue found none, or when the
 * consumer went away: call fl_bufferqueue_producer_dispatch(). Owned by
 * @producer.
 * Return: the fd, or -EINVAL (@producer NULL).
 */
FL_EXPORT int fl_bufferqueue_producer_get_fd(struct fl_bufferqueue_producer *producer);

/**
 * fl_bufferqueue_producer_dispatch() - read the consumer's events without blocking
 * @producer: the producer (borrowed)
 *
 * Return: 1 (a slot became free since the last dequeue found none: dequeue
 * again); 0 (nothing); -EPIPE (the consumer is gone); -EPROTO (the
 * consumer sent what the protocol does not allow: the connection is
 * closed); -EINVAL (@producer NULL).
 */
FL_EXPORT int fl_bufferqueue_producer_dispatch(struct fl_bufferqueue_producer *producer);

/**
 * fl_bufferqueue_producer_get_num_slots() - the queue's slot count and mode
 * @producer: the producer (borrowed)
 * @ret_mode: NULL, or where to put the queue's enum fl_bufferqueue_mode
 *
 * Return: the number of slots, or -EINVAL (@producer NULL).
 */
FL_EXPORT int fl_bufferqueue_producer_get_num_slots(struct fl_bufferqueue_producer *producer,
						    unsigned int *ret_mode);

/**
 * fl_bufferqueue_producer_dequeue() - get a free slot to write
 * @producer: the producer (borrowed)
 * @req: the buffer wanted (borrowed)
 * @timeout_ms: how long to wait for a free slot: 0 not at all, -1 forever
 * @ret: on success, the slot (see struct fl_bufferqueue_dequeued: wait for
 *	its release fence before writing, and close it)
 *
 * Prefers a free slot whose buffer already fits @req, least recently
 * released first; else allocates (or reallocates) one from the consumer's
 * heap table for @req's usage plus the consumer's. The buffer's fd comes
 * with the first dequeue of each slot and after each reallocation, and is
 * cached by the producer.
 * Return: 0; -EAGAIN (@timeout_ms 0 and no slot free); -ETIME (no slot
 * free within @timeout_ms); -EINVAL (an argument NULL, a size, format or
 * usage the queue cannot allocate: zero or over %FL_BUFFERQUEUE_MAX_DIM,
 * an unknown fourcc, a usage too long; or a constraint of the heap table);
 * -ENODEV (a usage names no device of the table, or no heap serves them
 * all); -E2BIG, -ENOMEM (the heap table's); -EPIPE (the consumer is gone);
 * -EPROTO (the consumer broke the protocol; the connection is closed);
 * -EINTR; -EMFILE.
 */
FL_EXPORT int fl_bufferqueue_producer_dequeue(struct fl_bufferqueue_producer *producer,
					      const struct fl_bufferqueue_request *req,
					      int timeout_ms, struct fl_bufferqueue_dequeued *ret);

/**
 * fl_bufferqueue_producer_queue() - hand a written slot to the consumer
 * @producer: the producer (borrowed)
 * @slot: a slot this producer dequeued
 * @acquire_fence_fd: a fence signalled when the write is done (borrowed:
 *	the consumer gets a copy), or -1 when it is done already
 * @info: damage and desired present time (borrowed); NULL: the whole
 *	buffer, as soon as possible
 * @ret_frame_number: NULL, or where to put the buffer's frame number
 *
 * Return: 0; -EINVAL (@producer NULL, @slot not dequeued by this producer,
 * @info's damage NULL with @num_damage not 0 or a rect outside 0 to
 * %FL_BUFFERQUEUE_MAX_DIM, @acquire_fence_fd no fenceline fence fd: the
 * consumer takes pipes and sockets only); -EBADF (@acquire_fence_fd not
 * open); -EPIPE (the consumer is gone); -EPROTO; -EINTR.
 */
FL_EXPORT int fl_bufferqueue_producer_queue(struct fl_bufferqueue_producer *producer,
					    unsigned int slot, int acquire_fence_fd,
					    const struct fl_bufferqueue_queue_info *info,
					    uint64_t *ret_frame_number);

/**
 * fl_bufferqueue_producer_cancel() - give a dequeued slot back unwritten
 * @producer: the producer (borrowed)
 * @slot: a slot this producer dequeued
 * @fence_fd: a fence signalled when the producer no longer touches the
 *	buffer (borrowed), or -1; it becomes the slot's release fence
 *
 * Android's cancelBuffer(): the slot is free again, no frame is made.
 * Return: as fl_bufferqueue_producer_queue().
 */
FL_EXPORT int fl_bufferqueue_producer_cancel(struct fl_bufferqueue_producer *producer,
					     unsigned int slot, int fence_fd);

FL_END_DECLS

#endif /* FENCELINE_BUFFERQUEUE_H */

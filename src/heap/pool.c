/* SPDX-License-Identifier: MIT */
/*
 * A heap's pool: fresh buffers made ahead of time by a worker process, and
 * freed buffers closed there (docs/heap.md, "Pools and deferred freeing").
 *
 * A freed buffer itself is never handed out again. Its fd may have been
 * dup()ed, sent to another process or mapped, and nothing the kernel offers
 * proves that every such holder is gone (docs/heap.md says why leases and
 * /proc do not). So a free only tells the pool that its size is in use:
 * the freed fd goes to the worker, which closes it, and the pool asks the
 * worker for fresh buffers of that size. A pooled buffer is a file that
 * nobody has ever held, zero-filled by the kernel, so nothing can leak
 * through the pool and nothing needs clearing.
 *
 * The worker is a process of its own (worker.c says why not a thread),
 * spoken to over a socketpair in batches (worker-proto.h): the caller's
 * fast path is a pop from an array, and the syscalls it saves (making the
 * file, and the last close that frees its memory) run in the worker. A
 * message goes out when a size runs low or enough freed buffers wait, and
 * replies are read when a size runs out, never waited for.
 *
 * Bookkeeping runs under the heap's lock; sending, receiving, starting
 * the worker and closing fds run without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fenceline/heap.h>
#include <fenceline/transfer.h>

#include "heap-internal.h"

extern char **environ;

/* Bumped in the child of every fork(): a pool from before is the parent's. */
static unsigned int fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	fork_gen++;
}

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static struct fl_heap_pool_class *class_find(struct fl_heap_pool *p, uint64_t size)
{
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++)
		if (p->cls[i].size == size)
			return &p->cls[i];
	return NULL;
}

/* The class of @size, taking a slot that holds nothing if need be. */
static struct fl_heap_pool_class *class_get(struct fl_heap_pool *p, uint64_t size)
{
	struct fl_heap_pool_class *c = class_find(p, size);

	for (int i = 0; !c && i < FL_HEAP_POOL_SIZES; i++) {
		struct fl_heap_pool_class *e = &p->cls[i];

		if (e->ready == 0 && e->asked == 0 && e->want == 0) {
			c = e;
			c->size = size;
		}
	}
	return c;
}

static bool fits(const struct fl_heap_pool *p, uint64_t size)
{
	return p->buffers < FL_HEAP_POOL_BUFFERS && size <= p->max && p->bytes <= p->max - size;
}

/* One buffer of @size that was counted is not coming after all. */
static void unwant(struct fl_heap_pool *p, uint64_t size)
{
	p->bytes -= size;
	p->buffers--;
}

/* Nothing more will come from the worker: drop what was asked. */
static void drop_asked(struct fl_heap_pool *p)
{
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++) {
		struct fl_heap_pool_class *c = &p->cls[i];

		for (; c->asked; c->asked--)
			unwant(p, c->size);
		for (; c->want; c->want--)
			unwant(p, c->size);
	}
}

/*
 * In the child of a fork(), the pool's fds are copies of the parent's, which
 * the parent hands out: the child drops them all and starts afresh. The
 * one place fds are closed under the lock; it happens once per child.
 */
static void drop_if_forked(struct fl_heap_pool *p)
{
	if (p->gen == fork_gen)
		return;
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++) {
		struct fl_heap_pool_class *c = &p->cls[i];

		for (; c->ready; c->ready--)
			close(c->entry[c->ready - 1].fd);
		c->asked = c->want = 0;
		c->size = 0;
	}
	for (unsigned int i = 0; i < p->ndoomed; i++)
		close(p->doomed[i]);
	if (p->sock >= 0)
		close(p->sock);
	p->ndoomed = 0;
	p->doomed_bytes = 0;
	p->bytes = p->buffers = 0;
	p->sock = -1;
	p->starting = p->failed = p->gates.no_worker = false;
	p->worker_cpu_ns = 0;
	p->gen = fork_gen;
}

static const char *worker_path(void)
{
	const char *env = getenv("FENCELINE_HEAP_WORKER");

	if (env && *env)
		return env;
	if (access(FL_HEAP_WORKER_PATH, X_OK) == 0)
		return FL_HEAP_WORKER_PATH;
	return FL_HEAP_WORKER_BUILD_PATH;
}

/*
 * Starts a worker for @heap and sends it the recipe: its socket, or
 * -errno. The process posix_spawn() makes exits at once (worker.c), and
 * is reaped here.
 */
static int spawn_worker(const struct fl_heap *heap)
{
	struct fl_heap_worker_req req = {
		.version = FL_HEAP_WORKER_VERSION,
		.type = FL_HEAP_WORKER_SETUP,
		.recipe = heap->recipe,
	};
	char *argv[] = { (char *)"fl-heap-worker", NULL };
	const char *path = worker_path();
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int sv[2], child, status = 0, r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* The pool's end only: the pool never waits for its worker. */
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0) {
		r = errno;
		close(sv[0]);
		close(sv[1]);
		return -r;
	}
	/* dup2() of an fd onto itself would leave it close-on-exec. */
	child = sv[1] == FL_HEAP_WORKER_FD ? fcntl(sv[1], F_DUPFD_CLOEXEC, FL_HEAP_WORKER_FD + 1)
					   : sv[1];
	r = child < 0 ? errno : 0;
	if (r == 0) {
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, child, FL_HEAP_WORKER_FD);
		posix_spawnattr_init(&attr);
		sigemptyset(&none);
		sigfillset(&all);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setsigdefault(&attr, &all);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
		r = posix_spawn(&pid, path, &fa, &attr, argv, environ);
		posix_spawnattr_destroy(&attr);
		posix_spawn_file_actions_destroy(&fa);
		if (child != sv[1])
			close(child);
	}
	close(sv[1]);
	if (r == 0) {
		/* ECHILD: the program reaps every child itself; the worker forked anyway. */
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			r = EPROTO;
	}
	if (r == 0) {
		req.recipe.dev_fd = -1;
		/* The socket is empty: this cannot be -EAGAIN. */
		r = -fl_send(sv[0], &req, sizeof(req), &heap->recipe.dev_fd,
			     heap->recipe.how == FL_HEAP_MAKE_DMA_HEAP ? 1 : 0);
	}
	if (r != 0) {
		fl__heap_log("heap '%s': the pool's worker %s did not start (%s); the pool "
			     "makes nothing ahead",
			     heap->name, path, strerror(r));
		close(sv[0]);
		return -r;
	}
	return sv[0];
}

void fl__heap_pool_init(struct fl_heap *heap)
{
	const char *s = getenv("FENCELINE_HEAP_POOL_MAX");

	pthread_once(&atfork_once, atfork_register);
	fl__heap_gate_init(&heap->pool.gates);
	heap->pool.sock = -1;
	heap->pool.gen = fork_gen;
	if (s && *s >= '0' && *s <= '9') {
		char *end;
		unsigned long long v = strtoull(s, &end, 10);

		if (*end == '\0')
			heap->pool.max = v;
	}
}

void fl__heap_pool_fini(struct fl_heap *heap)
{
	struct fl_heap_pool *p = &heap->pool;

	/* The worker sees the hang-up, closes what it holds and exits. */
	if (p->sock >= 0)
		close(p->sock);
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++)
		for (unsigned int j = 0; j < p->cls[i].ready; j++)
			close(p->cls[i].entry[j].fd);
	for (unsigned int i = 0; i < p->ndoomed; i++)
		close(p->doomed[i]);
}

uint64_t fl__heap_pool_pending(const struct fl_heap *heap)
{
	uint64_t n = 0;

	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++)
		n += heap->pool.cls[i].asked;
	return n;
}

int fl__heap_pool_take(struct fl_heap *heap, uint64_t size, bool may_receive, dev_t *ret_dev,
		       ino_t *ret_ino)
{
	struct fl_heap_pool *p = &heap->pool;
	struct fl_heap_pool_class *c;
	struct fl_heap_pool_entry *e;

	if (!p->max)
		return -1;
	drop_if_forked(p);
	c = class_find(p, size);
	if (!c || !c->ready) {
		if (may_receive && c && c->asked && p->sock >= 0 && !p->failed)
			return -2;
		p->misses++;
		return -1;
	}
	e = &c->entry[--c->ready];
	p->bytes -= size;
	p->buffers--;
	p->hits++;
	*ret_dev = e->dev;
	*ret_ino = e->ino;
	return e->fd;
}

/* A MADE message that makes sense for what was asked. */
static bool made_ok(struct fl_heap_pool *p, const struct fl_heap_worker_made *buf, size_t len,
		    unsigned int nfds, struct fl_heap_worker_made *ret_made)
{
	struct fl_heap_pool_class *c;

	if (!fl__heap_worker_made_ok(buf, len, nfds, ret_made))
		return false;
	c = class_find(p, ret_made->size);
	return c && ret_made->asked <= c->asked;
}

void fl__heap_pool_receive(struct fl_heap *heap)
{
	struct fl_heap_pool *p = &heap->pool;
	int sock;

	pthread_mutex_lock(&heap->lock);
	drop_if_forked(p);
	sock = p->sock >= 0 && !p->failed && fl__heap_pool_pending(heap) ? p->sock : -1;
	pthread_mutex_unlock(&heap->lock);
	/* A few messages at most: the caller wants a buffer, not all of them. */
	for (int round = 0; sock >= 0 && round < 4; round++) {
		struct fl_heap_worker_made buf, m;
		int fds[FL_HEAP_WORKER_BATCH], doomed[FL_HEAP_WORKER_BATCH];
		unsigned int nfds = 0, ndoomed = 0;
		struct fl_heap_pool_class *c;
		size_t len = 0;
		int r = fl_recv(sock, &buf, sizeof(buf), &len, fds, FL_HEAP_WORKER_BATCH, &nfds);

		if (r == -EAGAIN)
			break;
		pthread_mutex_lock(&heap->lock);
		if (r < 0 || !made_ok(p, &buf, len, nfds, &m)) {
			/* Gone (-ENOTCONN) or talking nonsense: make no more ahead. */
			if (!p->failed)
				fl__heap_log("heap '%s': the pool's worker %s; the pool makes "
					     "nothing ahead from now on",
					     heap->name,
					     r == -ENOTCONN || r == -ECONNRESET ? "went away"
										: "sent nonsense");
			p->failed = p->gates.no_worker = true;
			drop_asked(p);
			pthread_mutex_unlock(&heap->lock);
			/* fl_recv() closed what came with a failure. */
			for (unsigned int i = 0; r == 0 && i < nfds; i++)
				close(fds[i]);
			break;
		}
		/* The worker's work since its last message, per buffer made (its first has its start-up). */
		if (p->worker_cpu_ns && m.cpu_ns > p->worker_cpu_ns && m.n)
			fl__heap_gate_worker(&p->gates, m.size,
					     (m.cpu_ns - p->worker_cpu_ns) / m.n);
		if (m.cpu_ns > p->worker_cpu_ns)
			p->worker_cpu_ns = m.cpu_ns;
		c = class_find(p, m.size);
		c->asked -= m.asked;
		for (unsigned int i = 0; i < m.asked; i++) {
			/* The limit may have dropped since, or the size is no longer pooled. */
			if (i < nfds && p->bytes <= p->max && c->ready < FL_HEAP_POOL_BUFFERS &&
			    fl__heap_gate_pooling(&p->gates, m.size)) {
				c->entry[c->ready++] =
					(struct fl_heap_pool_entry){ fds[i], (dev_t)m.id[i].dev,
								     (ino_t)m.id[i].ino };
				continue;
			}
			unwant(p, m.size);
			if (i < nfds)
				doomed[ndoomed++] = fds[i];
		}
		pthread_mutex_unlock(&heap->lock);
		for (unsigned int i = 0; i < ndoomed; i++)
			close(doomed[i]);
	}
}

/* Moves the freed fds that wait for a message into @out. */
static void take_doomed(struct fl_heap_pool *p, struct fl_heap_pool_flush *out)
{
	memcpy(out->fds, p->doomed, p->ndoomed * sizeof(int));
	out->nfds = p->ndoomed;
	p->ndoomed = 0;
	p->doomed_bytes = 0;
}

/* Moves the freed fds and the buffers to ask for into @out. */
static void fill_flush(struct fl_heap_pool *p, struct fl_heap_pool_flush *out)
{
	take_doomed(p, out);
	out->nmake = 0;
	for (int i = 0; i < FL_HEAP_POOL_SIZES; i++) {
		struct fl_heap_pool_class *c = &p->cls[i];

		if (!c->want)
			continue;
		out->make[out->nmake].size = c->size;
		out->make[out->nmake++].count = c->want;
		c->asked += c->want;
		c->want = 0;
	}
}

bool fl__heap_pool_give(struct fl_heap *heap, uint64_t size, uint64_t held, int fd,
			struct fl_heap_pool_flush *out)
{
	struct fl_heap_pool *p = &heap->pool;
	struct fl_heap_pool_class *c;
	bool low = false;

	out->what = FL_POOL_NOTHING;
	if (!p->max)
		return false;
	drop_if_forked(p);
	if (p->failed) {
		/* Freed fds that waited for a message that will never go: closed now. */
		if (p->ndoomed) {
			take_doomed(p, out);
			out->what = FL_POOL_CLOSE;
		}
		return false;
	}
	/* A size that does not pay is neither made ahead nor closed by the worker. */
	if (!fl__heap_gate_pooling(&p->gates, size))
		return false;
	p->doomed[p->ndoomed++] = fd;
	p->doomed_bytes += held;
	c = fits(p, size) ? class_get(p, size) : NULL;
	if (c) {
		while (c->ready + c->asked + c->want < FL_HEAP_POOL_DEPTH && fits(p, size)) {
			c->want++;
			p->bytes += size;
			p->buffers++;
		}
		/*
		 * A quarter of the stock to ask for: ask now, while the rest
		 * lasts (the worker needs a wake-up and a few syscalls per
		 * buffer before the first arrives).
		 */
		low = c->want && 4 * c->want >= c->ready + c->asked + c->want;
	}
	if (!low && p->ndoomed < FL_HEAP_WORKER_BATCH &&
	    p->doomed_bytes < FL_HEAP_POOL_DOOMED_BYTES)
		return true;
	if (p->starting) {
		/* Another thread is starting the worker: what cannot wait is closed here. */
		if (p->ndoomed == FL_HEAP_WORKER_BATCH) {
			take_doomed(p, out);
			out->what = FL_POOL_CLOSE;
		}
		return true;
	}
	fill_flush(p, out);
	out->sock = p->sock;
	out->what = p->sock >= 0 ? FL_POOL_SEND : FL_POOL_START;
	p->starting = p->sock < 0;
	return true;
}

/* Undoes fill_flush()'s asks after a failed send; @broken: no worker from now on. */
static void unask(struct fl_heap *heap, const struct fl_heap_pool_flush *out, bool broken)
{
	struct fl_heap_pool *p = &heap->pool;

	for (unsigned int i = 0; i < out->nmake; i++) {
		struct fl_heap_pool_class *c = class_find(p, out->make[i].size);

		for (uint32_t k = 0; c && k < out->make[i].count && c->asked; k++) {
			c->asked--;
			unwant(p, c->size);
		}
	}
	if (broken) {
		p->failed = p->gates.no_worker = true;
		drop_asked(p);
	}
}

void fl__heap_pool_flush(struct fl_heap *heap, struct fl_heap_pool_flush *out)
{
	struct fl_heap_pool *p = &heap->pool;
	struct fl_heap_worker_req req = {
		.version = FL_HEAP_WORKER_VERSION,
		.type = FL_HEAP_WORKER_WORK,
	};
	int r = 0;

	if (out->what == FL_POOL_NOTHING)
		return;
	if (out->what == FL_POOL_START) {
		int sock = spawn_worker(heap);

		pthread_mutex_lock(&heap->lock);
		p->starting = false;
		if (sock >= 0 && p->gen == fork_gen) {
			p->sock = sock;
		} else {
			if (sock >= 0)
				close(sock);
			unask(heap, out, true);
			out->nmake = 0;
			r = -1;
		}
		pthread_mutex_unlock(&heap->lock);
		out->sock = sock;
	}
	if (r == 0 && out->what != FL_POOL_CLOSE) {
		req.nclose = out->nfds;
		req.nmake = out->nmake;
		for (unsigned int i = 0; i < out->nmake; i++) {
			req.make[i].size = out->make[i].size;
			req.make[i].count = out->make[i].count;
		}
		r = fl_send(out->sock, &req, sizeof(req), out->fds, out->nfds);
		if (r < 0) {
			/* EAGAIN: the worker is behind; these few are closed here instead. */
			pthread_mutex_lock(&heap->lock);
			if (r != -EAGAIN && !p->failed)
				fl__heap_log("heap '%s': the pool's worker is gone (%s); the pool "
					     "makes nothing ahead from now on",
					     heap->name, strerror(-r));
			unask(heap, out, r != -EAGAIN);
			pthread_mutex_unlock(&heap->lock);
		}
	}
	/* Sent, these closes are not the last: the worker's are. */
	for (unsigned int i = 0; i < out->nfds; i++)
		close(out->fds[i]);
	out->what = FL_POOL_NOTHING;
}

void fl__heap_pool_set_max(struct fl_heap *heap, uint64_t max, int **ret_fds, size_t *ret_n)
{
	struct fl_heap_pool *p = &heap->pool;
	int *fds = NULL;
	size_t n = 0;

	drop_if_forked(p);
	p->max = max;
	/* Buffers not asked for yet go first: they cost nothing to drop. */
	for (int i = 0; i < FL_HEAP_POOL_SIZES && p->bytes > max; i++)
		for (; p->cls[i].want && p->bytes > max; p->cls[i].want--)
			unwant(p, p->cls[i].size);
	if (p->bytes > max || (max == 0 && p->ndoomed))
		fds = malloc((FL_HEAP_POOL_BUFFERS + FL_HEAP_WORKER_BATCH) * sizeof(*fds));
	for (int i = 0; fds && i < FL_HEAP_POOL_SIZES && p->bytes > max; i++) {
		struct fl_heap_pool_class *c = &p->cls[i];

		for (; c->ready && p->bytes > max; c->ready--) {
			fds[n++] = c->entry[c->ready - 1].fd;
			unwant(p, c->size);
		}
	}
	/* Off: the freed ones waiting for a message are closed now. */
	for (unsigned int i = 0; fds && max == 0 && i < p->ndoomed; i++)
		fds[n++] = p->doomed[i];
	if (fds && max == 0) {
		p->ndoomed = 0;
		p->doomed_bytes = 0;
	}
	/* Buffers on their way are closed when they come (fl__heap_pool_receive()). */
	*ret_fds = fds;
	*ret_n = n;
}

size_t fl__heap_pool_drop_size(struct fl_heap *heap, uint64_t size, int *fds)
{
	struct fl_heap_pool *p = &heap->pool;
	struct fl_heap_pool_class *c;
	size_t n = 0;

	drop_if_forked(p);
	c = class_find(p, size);
	if (!c)
		return 0;
	for (; c->want; c->want--)
		unwant(p, size);
	for (; c->ready; c->ready--) {
		fds[n++] = c->entry[c->ready - 1].fd;
		unwant(p, size);
	}
	return n;
}

/* SPDX-License-Identifier: MIT */
/* A SIGBUS in a peer's shrunk memory replaced by zeros (sigbus.h). */
#include "sigbus.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/*
 * The guarded mappings of every thread, in slots a signal handler can scan
 * without a lock (no thread-local list: in a library loaded with dlopen()
 * that is dynamic TLS, which LeakSanitizer's thread walk trips over). A
 * slot's address is 0 when free, 1 while it is being claimed or let go.
 */
#define SLOTS 1024

static struct slot {
	_Atomic uintptr_t addr;
	_Atomic size_t len;
	atomic_int faulted;
} slots[SLOTS];
static struct sigaction previous;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int install_err;

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
	uintptr_t a = (uintptr_t)info->si_addr;
	int saved = errno;

	for (unsigned int i = 0; i < SLOTS; i++) {
		uintptr_t start = atomic_load_explicit(&slots[i].addr, memory_order_acquire);
		size_t len = atomic_load_explicit(&slots[i].len, memory_order_relaxed);

		if (start <= 1 || a < start || a - start >= len)
			continue;
		/* The same address, private zeros: the faulting access is retried and succeeds. */
		if (mmap((void *)start, len, PROT_READ | PROT_WRITE,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			break;
		atomic_store(&slots[i].faulted, 1);
		errno = saved;
		return;
	}
	errno = saved;
	if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
		previous.sa_sigaction(sig, info, uctx);
		return;
	}
	if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/*
	 * Nobody else wanted it (a fault cannot be ignored): the default, which
	 * the retried access then meets, killing as it would have.
	 */
	signal(SIGBUS, SIG_DFL);
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &previous) < 0)
		install_err = -errno;
}

int fl__sigbus_guard_begin(struct fl__sigbus_guard *g, void *addr, size_t len)
{
	pthread_once(&once, install);
	if (install_err)
		return install_err;
	for (unsigned int i = 0; i < SLOTS; i++) {
		uintptr_t free_slot = 0;

		if (!atomic_compare_exchange_strong(&slots[i].addr, &free_slot, 1))
			continue;
		atomic_store_explicit(&slots[i].len, len, memory_order_relaxed);
		atomic_store(&slots[i].faulted, 0);
		/* Listed last: the handler sees the whole guard once it sees its address. */
		atomic_store_explicit(&slots[i].addr, (uintptr_t)addr, memory_order_release);
		g->addr = addr;
		g->len = len;
		g->slot = i;
		return 0;
	}
	return -EBUSY;
}

bool fl__sigbus_guard_end(struct fl__sigbus_guard *g)
{
	struct slot *s = &slots[g->slot];
	bool faulted;

	atomic_store(&s->addr, 1);
	faulted = atomic_load(&s->faulted);
	atomic_store(&s->addr, 0);
	return faulted;
}

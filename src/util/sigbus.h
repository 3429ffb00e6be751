/* SPDX-License-Identifier: MIT */
/*
 * Reading a peer's shared memory without dying of it.
 *
 * A peer that shrinks a memfd (or truncates a file) we have mapped turns
 * our next access past its new end into SIGBUS, which kills the process:
 * a hostile client could bring the display service or a compositor down
 * with one ftruncate(). As libwayland does for wl_shm buffers
 * (wl_shm_buffer_begin_access()), a thread declares the mappings it is
 * about to touch; a SIGBUS inside one of them maps zero pages over that
 * mapping and lets the access go on, and the thread learns of it at the
 * end. A SIGBUS anywhere else goes to the handler that was there before
 * (the default one kills, with the faulting address, as it would have).
 */
#ifndef FL_UTIL_SIGBUS_H
#define FL_UTIL_SIGBUS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * struct fl__sigbus_guard - one mapping a thread is about to access
 * @addr, @len: the mapping (as mmap() returned it: page-aligned)
 * @slot: where the process's handler finds it
 */
struct fl__sigbus_guard {
	void *addr;
	size_t len;
	unsigned int slot;
};

/*
 * fl__sigbus_guard_begin() - guard @g, the mapping [@addr, @addr + @len),
 * until fl__sigbus_guard_end(@g), in whichever thread touches it. Installs the
 * process's SIGBUS handler the first time (keeping the one there before).
 * Return: 0, or -errno if the handler could not be installed, -EBUSY if
 * 1024 mappings are guarded already (then the mapping is not guarded: do
 * not touch memory a peer may shrink).
 */
int fl__sigbus_guard_begin(struct fl__sigbus_guard *g, void *addr, size_t len);

/*
 * fl__sigbus_guard_end() - stop guarding @g (begun in this thread).
 * Return: true if an access faulted: the mapping now holds zeros from
 * anonymous memory (munmap() it as usual), and what was read from it is
 * garbage. Say so to whoever owns the memory.
 */
bool fl__sigbus_guard_end(struct fl__sigbus_guard *g);

#endif

/* SPDX-License-Identifier: MIT */
/**
 * DOC: fenceline - explicit synchronization for Linux userspace
 *
 * Umbrella header: include this and you get the whole public API.
 *
 * Conventions that hold for every function unless its own documentation says
 * otherwise:
 *
 * Ownership: pointer and fd arguments are *borrowed* (the callee takes no
 * reference and does not close them). Returned pointers and fds are *new
 * references the caller owns*: release a pointer with its ``_unref`` and an
 * fd with close(). Output parameters are named ``ret_*``, come after the
 * inputs, and are written on success only. fd ownership moves only on
 * success.
 *
 * Errors: functions return ``>= 0`` on success and a negative errno on
 * failure. The vocabulary is fixed: every code any function of the native
 * API returns is in this table, and a function returns no other. Each
 * function's own documentation names the codes it returns for its own
 * reasons; the groups below add to it where they apply. (The compat calls
 * of fenceline-compat keep libsync's and libion's conventions instead.)
 *
 * ===================== ===============================================
 * ``-EINVAL``           bad argument, or a nonzero reserved field
 * ``-EBADF``            not an open fd
 * ``-ENOTTY``           the fd is open but is not a fenceline fence,
 *                       timeline (or buffer)
 * ``-ETIME``            a wait on a fence timed out (libsync's code), or
 *                       a buffer queue's wait for a slot or a frame
 * ``-ENOENT``           timeline gone, the fence already signalled on
 *                       fl_fence_add_callback(), nothing of that name
 *                       (no deadline set, no such heap, no trace
 *                       session), no daemon runs (introspect.h, which
 *                       never starts one), or a file that does not exist
 * ``-EMFILE``           out of file descriptors here, or over a quota
 *                       of the daemon (fds, timelines, fences)
 * ``-ENFILE``           the system is out of open files
 * ``-ENOMEM``           out of memory (here or in the daemon), or no
 *                       room in a heap
 * ``-EPERM``            not your timeline, no permission for a device,
 *                       or a socket directory that is not safe to use
 * ``-EACCES``           the daemon refuses this user; no permission to
 *                       open a file
 * ``-ENODEV``           no such device or heap (a dma-heap the kernel
 *                       does not have, a heap the daemon does not offer,
 *                       a display device, interface or engine); egl.h:
 *                       an EGL display not initialized or terminated
 * ``-EBUSY``            a counter is already attached to the timeline;
 *                       a trace session is recording already; a display
 *                       interface is in that DPMS state already, or a
 *                       display client has as many posts waiting as it may;
 *                       a buffer queue has its producer already
 * ``-EALREADY``         display.h: attached, subscribed or plugged already
 * ``-EEXIST``           fl_timeline_watch_fd(): the fd is watched already
 * ``-ENOSPC``           fl_timeline_watch_fd() (and the imports of kernel
 *                       sync_files, which use it): the user's epoll watches
 *                       are used up (max_user_watches)
 * ``-EDEADLK``          a wait asked to fail on a deadlock
 *                       (%FL_WAIT_DEADLOCK_ERROR, FENCELINE_WAIT_EDEADLK)
 *                       would have closed a cycle of waits
 * ``-EIO``              writing to the FILE, closing the fd or reading a
 *                       view failed; egl.h: the EGL driver made no sync
 *                       object or fd
 * ``-EINTR``            close() was interrupted (fl_timeline_fd_close());
 *                       bufferqueue.h: a signal interrupted a wait
 * ``-E2BIG``            a heap table: larger than a constraint allows
 * ``-EFBIG``            a heap table, or a view to read: a file larger
 *                       than it may be
 * ``-EISDIR``           a heap table: the path is a directory
 * ``-ENOTDIR``          a heap table: a component of the path is no
 *                       directory
 * ``-ELOOP``            a heap table: too many symbolic links in the path
 * ``-ECONNREFUSED``     no daemon answers and none could be started;
 *                       on a datagram socket, the peer is gone
 * ``-ECONNRESET``       the daemon went away during the call, or the fd
 *                       belongs to a daemon that is gone; a socket's
 *                       peer hung up in the middle of a message
 * ``-ETIMEDOUT``        the daemon did not answer a request in time
 *                       (FENCELINE_REQUEST_TIMEOUT_MS); fence waits say
 *                       ``-ETIME`` instead
 * ``-EPROTO``           the daemon's reply, or a received message, is
 *                       not what the protocol allows
 * ``-EPROTONOSUPPORT``  the daemon speaks another protocol version
 * ``-ENAMETOOLONG``     the daemon's socket path is too long
 * ``-ENOTSOCK``         fl_send() and fl_recv(): not a socket
 * ``-EOPNOTSUPP``       fl_send() and fl_recv(): a socket type other than
 *                       stream, seqpacket or datagram; display.h: the
 *                       driver or the object cannot do that; egl.h: the
 *                       display has neither fence sync extension
 * ``-EAGAIN``           fl_send() and fl_recv(): a non-blocking socket
 *                       has nothing to give or no room; a display
 *                       handle's non-blocking fd has no event;
 *                       bufferqueue.h: no free slot, nothing queued
 * ``-EMSGSIZE``         fl_send() and fl_recv(): a message or its fds
 *                       exceed what the socket or the buffer takes
 * ``-ENOTCONN``         fl_recv(): the peer closed at a message boundary
 * ``-EPIPE``            fl_send(): the peer is gone; bufferqueue.h: the
 *                       consumer is gone
 * ``-EADDRINUSE``       bufferqueue.h: a consumer listens on the path
 * ``-ENOBUFS``          fl_send(): the kernel has no buffer space;
 *                       fl_introspect_read(): the buffer is too small
 * ===================== ===============================================
 *
 * The groups, where a function's documentation names them:
 *
 * - Daemon errors: a call that talks to fencelined (the fd API of
 *   shared.h in daemon mode, context.h's calls on a daemon context,
 *   heap-daemon.h, introspect.h,
 *   fl_daemon_connect()) or to the display service (display.h) may also
 *   return ``-ECONNREFUSED``, ``-ECONNRESET``, ``-ETIMEDOUT``,
 *   ``-EPROTO``, ``-EPROTONOSUPPORT``, ``-EACCES``, ``-EPERM``,
 *   ``-ENAMETOOLONG``, ``-EMFILE``, ``-ENFILE`` and ``-ENOMEM``.
 * - A fence's status: a call that returns one (fl_fence_get_status(),
 *   fl_fence_wait(), fl_fence_fd_get_status(), fl_fence_fd_wait(),
 *   fl_sync_pt_get_status()) gives ``-ENOENT`` when the timeline died,
 *   ``-ECONNRESET`` when the daemon that held the fence died, or the error
 *   the fence's driver set (for a kernel sync_file, the kernel's).
 * - Socket errors: fl_send(), fl_recv() and the calls built on them pass
 *   on the errors of sendmsg() and recvmsg() listed above.
 * - File errors: the heap-table loaders return the errors of open() and
 *   read() on the path (``-ENOENT``, ``-EACCES``, ``-EISDIR``,
 *   ``-ENOTDIR``, ``-ELOOP``, ``-ENAMETOOLONG``, ``-EMFILE``, ``-ENFILE``,
 *   ``-EIO``).
 *
 * Threads: every function may be called from any thread at any time, unless
 * its documentation restricts it. Callbacks run in the thread that signals
 * the timeline, with no fenceline lock held.
 */
#ifndef FENCELINE_FENCELINE_H
#define FENCELINE_FENCELINE_H

#define FL_VERSION_MAJOR 0
#define FL_VERSION_MINOR 1
#define FL_VERSION_MICRO 0

#include <fenceline/context.h>
#include <fenceline/debug.h>
#include <fenceline/fd.h>
#include <fenceline/fence.h>
#include <fenceline/heap-daemon.h>
#include <fenceline/heap-table.h>
#include <fenceline/heap.h>
#include <fenceline/shared.h>
#include <fenceline/sw_sync.h>
#include <fenceline/sync_file.h>
#include <fenceline/timeline.h>
#include <fenceline/transfer.h>

#endif /* FENCELINE_FENCELINE_H */

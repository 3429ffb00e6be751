/* SPDX-License-Identifier: MIT */
/*
 * The library's side of the daemon connection (client.c), used by the fd
 * API (fdapi.c). Private to src/client.
 */
#ifndef FL_CLIENT_H
#define FL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

/*
 * fl__client_call() - send one request and, unless @oneway, wait for its
 * reply
 * @op, @flags, @body, @body_len: the request (the header is filled here)
 * @fds, @nfds: fds sent with it (borrowed: the caller closes its copies)
 * @oneway: do not wait for a reply
 * @reply, @reply_cap: buffer for the whole reply packet (header included);
 *	may be NULL when @oneway
 * @ret_fd: if not NULL, receives the fd a reply carries (or -1)
 *
 * Connects (starting a daemon) first if this process has no connection,
 * including in a child after fork(). A connection that fails mid-call is
 * dropped, so the next call reconnects.
 * Return: the reply's length (>= sizeof(struct fl_msg_hdr) +
 * sizeof(struct fl_msg_reply)), 0 for a one-way request, or a negative
 * errno: -ECONNRESET if the daemon went away, -EPROTO for a reply that
 * makes no sense, or a connect error (see fl_daemon_connect()).
 */
int fl__client_call(uint32_t op, uint32_t flags, const void *body, size_t body_len, const int *fds,
		    unsigned int nfds, int oneway, void *reply, size_t reply_cap, int *ret_fd);

/* The status field of a reply packet returned by fl__client_call(). */
int32_t fl__client_reply_status(const void *reply);

/*
 * Wait until the daemon has handled every one-way request this process
 * sent (fence creations), so that a fence made for a value the timeline
 * has already passed reads as signalled at once. Free when there are none.
 */
void fl__client_flush(void);

/* Changes whenever this process's connection (so maybe its daemon) changes. */
unsigned int fl__client_generation(void);

/* Connect if needed; the daemon's pid (> 0) or a negative errno. */
int fl__client_daemon_pid(void);

#endif /* FL_CLIENT_H */

/* SPDX-License-Identifier: MIT */
/* fencelined's parts: main.c (set-up) and server.c (the loop). */
#ifndef FLD_SERVER_H
#define FLD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FLD_MAX_ALLOW 32

struct server_config {
	unsigned int idle_ms; /* 0: never exit for idleness */
	unsigned int max_timelines, max_fences; /* per client */
	bool foreground;
	bool allow_all; /* every uid may connect */
	uid_t allow[FLD_MAX_ALLOW];
	unsigned int n_allow;
	uint64_t carveout_bytes; /* the allocation service's carveout; 0: none */
	uint64_t heap_limit; /* bytes of buffers per client; 0: no limit */
};

/*
 * Serve clients on the listening socket @lfd until idle or SIGTERM/SIGINT.
 * Return: 0, or a negative errno if the loop could not run.
 */
int fld_serve(int lfd, const struct server_config *cfg);

/* A connected client, for DUMP. */
struct fld_client_info {
	pid_t pid;
	uid_t uid;
	unsigned int timelines, fences; /* live objects it made */
};

/* The pid of the process whose counter drives @timeline, or 0. */
typedef pid_t (*fld_owner_fn)(const void *timeline, void *arg);

/*
 * fld_dump_write() - the daemon's state (docs/fencectl.md) in a new sealed
 * memfd, *@ret_fd, owned by the caller
 * @json: JSON instead of text
 * @by_process: what each process holds (fencectl fds), only @only's if not 0
 * Return: 0, -ENOMEM, or memfd_create()'s and write()'s errors.
 */
int fld_dump_write(bool json, bool by_process, pid_t only, const struct fld_client_info *clients,
		   size_t nclients, fld_owner_fn owner, void *owner_arg, int *ret_fd);

/* /proc/@pid/comm into @buf ("" if it cannot be read). */
void fld_comm_of(pid_t pid, char *buf, size_t size);

/*
 * fld_dump_seal() - @len bytes of @text in a new sealed memfd, *@ret_fd,
 * read from its start. Return: 0, or memfd_create()'s and write()'s errors.
 */
int fld_dump_seal(const char *text, size_t len, int *ret_fd);

/* Log a line to stderr ("fencelined[pid]: ..."). */
void fld_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* FLD_SERVER_H */

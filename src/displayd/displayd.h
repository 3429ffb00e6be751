/* SPDX-License-Identifier: MIT */
/*
 * fl-displayd's parts: main.c (set-up: socket, lock, daemonising) and
 * service.c (the display service on the server framework: devices from the
 * config, their drivers, clients, posts and the flip).
 */
#ifndef FL_DISPLAYD_H
#define FL_DISPLAYD_H

#include <stdbool.h>
#include <stddef.h>

struct displayd_config {
	unsigned int idle_ms; /* 0: never exit for idleness */
	unsigned int fence_timeout_ms; /* an acquire fence not signalled by then fails */
	/* fds one client's posts may make the service hold (0: a quarter of its fd limit) */
	unsigned int max_fds_client;
	bool foreground;
	const char *config_text; /* the display config */
	size_t config_len;
	const char *config_origin; /* its file name, for messages */
	/* NULL, or the display choice ("window", "kms:card0") that stands for the config */
	const char *display;
};

/*
 * Serve display clients on the listening socket @lfd until idle or
 * SIGTERM/SIGINT. Return: 0, or a negative errno (the config did not make
 * a device, the loop could not run).
 */
int displayd_serve(int lfd, const struct displayd_config *cfg);

/* Log a line to stderr ("fl-displayd[pid]: ..."). */
void displayd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* FL_DISPLAYD_H */

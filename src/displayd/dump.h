/* SPDX-License-Identifier: MIT */
/*
 * The display service's dump (dump.c, docs/fencectl.md "displays"): what
 * it reads of service.c's devices and queues, through views that borrow
 * the service's state. Called from the loop only, so nothing changes
 * while the dump reads it.
 */
#ifndef FL_DISPLAYD_DUMP_H
#define FL_DISPLAYD_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <fenceline/display.h>
#ifndef FL_USE_UNSTABLE_DRIVER_API
#define FL_USE_UNSTABLE_DRIVER_API
#endif
#include <fenceline/driver/display.h>

struct fl__display_device;
struct dpost;

/* The most driver counters the dump shows. */
#define DISPLAYD_DUMP_DRIVER_STATS 16

struct displayd_dump_dev {
	struct fl__display_device *dev;
	const char *driver;
	struct fl_display_stats st;
	const uint64_t *last_vsync; /* by interface id, CLOCK_MONOTONIC ns; 0: none yet */
	/* The driver's own counters (its stats() op: the kms driver's buffer copies). */
	struct fl_display_driver_stat drv_stats[DISPLAYD_DUMP_DRIVER_STATS];
	size_t n_drv_stats;
};

/* A post, queued or on screen; the arrays are the service's (borrowed). */
struct displayd_dump_post {
	uint64_t seq;
	uint64_t queued_ns; /* when it was queued, CLOCK_MONOTONIC */
	int owner_pid; /* 0: its client is gone */
	bool failed; /* an acquire fence failed or timed out: it will be dropped */
	unsigned int pending; /* acquire fences not signalled yet */
	const uint32_t *intfs;
	size_t n_intfs;
	const struct fl_display_driver_buffer *bufs;
	size_t n_bufs;
	const int *acquire; /* the service's copies of the fences; -1 once done */
	const size_t *acq_buf; /* the buffer each is for */
	size_t n_acquire;
};

/* service.c: the devices, in the config's order. */
size_t displayd_dump_devices(void);
void displayd_dump_device(size_t i, struct displayd_dump_dev *ret);
/* Device @i's post on screen, or NULL. */
const struct dpost *displayd_dump_on_screen(size_t i, struct displayd_dump_post *ret);
/* The queue of device @i, oldest first: the post after @prev (NULL: the first), or NULL. */
const struct dpost *displayd_dump_queued(size_t i, const struct dpost *prev,
					 struct displayd_dump_post *ret);

/*
 * dump.c: every device's interfaces, screen, queue and counters, text or
 * JSON (FL_DDUMP_JSON in @flags), in a new sealed memfd *@ret_fd (the
 * caller's). For each acquire fence still pending it asks fencelined (one
 * fl_introspect_dump()) who holds the fence's timelines.
 * Return: 0, -ENOMEM, or memfd_create()'s and write()'s errors.
 */
int displayd_dump(uint32_t flags, int *ret_fd);

#endif /* FL_DISPLAYD_DUMP_H */

/* SPDX-License-Identifier: MIT */
/*
 * What the display service tests share: device 0 of the built-in phone
 * device opened through the native API, simple buffers, a raw connection
 * to the service for what the library would never send.
 */
#ifndef FL_TEST_DISP_FIXTURE_H
#define FL_TEST_DISP_FIXTURE_H

#include <stdint.h>
#include <sys/types.h>

#include <fenceline/display.h>

#define XR24 FL_FOURCC('X', 'R', '2', '4')

/* Device 0 opened, its primary interface and an engine scanning XR24 out on it. */
struct disp {
	struct fl_display_handle *dev, *intf, *eng;
	uint32_t intf_id, eng_id;
	struct fl_display_mode mode;
};

/* Open device 0 as adf_find_simple_post_configuration() does; asserts on failure. */
void disp_open(struct disp *d);
/* Close what disp_open() opened, and the connection. */
void disp_close(struct disp *d);
/* @intf's DPMS state. */
uint32_t dpms_of(struct fl_display_handle *intf);
/* A simple buffer of the mode's size, a checkerboard of @px and ~@px; returns its fd (the caller's). */
int simple_buffer(struct disp *d, uint32_t px, struct fl_display_buffer *b);
/* Attach the engine to the interface (if not yet) and turn the interface on. */
void attach_and_light(struct disp *d);
/* A bare connection to the service's socket, no HELLO sent. */
int raw_connect(void);
/* The display service's pid, from its HELLO reply. */
pid_t service_pid(void);

#endif

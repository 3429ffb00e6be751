/* SPDX-License-Identifier: MIT */
/*
 * fl-recovery's keys (recovery.h): the terminal on stdin, decoded by the
 * terminal driver's decoder (term-input.h), and evdev keyboards, both as
 * evdev key codes, so the menu handles one kind of key.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/input.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <adf/adf.h>

#include "recovery.h"

#define MAX_EVDEV 16

/* The terminal driver's key event (src/drivers/display-terminal/display-terminal.h). */
#define DISPLAY_EVENT_KEY (ADF_EVENT_DEVICE_CUSTOM + 1)

struct display_key_event {
	struct adf_event base;
	uint16_t code, mods;
	uint32_t ch;
};

struct input {
	int in_fd; /* stdin, -1 once at its end */
	int display; /* the display device's fd when its driver sends keys, else -1 */
	bool raw; /* stdin was put in raw mode: @saved restores it */
	struct termios saved;
	struct fl_term_input dec;
	int esc_held;
	int ev[MAX_EVDEV];
	size_t n_ev;
	uint16_t ev_mods;
};

/* Whether evdev device @fd has the keys a menu needs. */
static bool is_keyboard(int fd)
{
	unsigned long bits[KEY_MAX / (8 * sizeof(long)) + 1] = { 0 };

	if (ioctl(fd, EVIOCGBIT(EV_KEY, sizeof(bits)), bits) < 0)
		return false;
#define HAS(k) (bits[(k) / (8 * sizeof(long))] >> ((k) % (8 * sizeof(long))) & 1)
	return HAS(KEY_ENTER) || HAS(KEY_POWER);
#undef HAS
}

static void evdev_open(struct input *in)
{
	DIR *d = opendir("/dev/input");

	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && in->n_ev < MAX_EVDEV;) {
		char path[300];
		int fd;

		if (strncmp(e->d_name, "event", 5))
			continue;
		snprintf(path, sizeof(path), "/dev/input/%s", e->d_name);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (is_keyboard(fd))
			in->ev[in->n_ev++] = fd;
		else
			close(fd);
	}
	closedir(d);
}

struct input *input_new(bool evdev, bool stdin_keys, int display_dev)
{
	struct input *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->in_fd = stdin_keys ? 0 : -1;
	/* A driver without keys refuses the type (-EINVAL, -EOPNOTSUPP): then there are none. */
	in->display = display_dev >= 0 && adf_set_event(display_dev, DISPLAY_EVENT_KEY, true) == 0
			      ? display_dev
			      : -1;
	fl__term_input_init(&in->dec);
	if (stdin_keys && isatty(0) && tcgetattr(0, &in->saved) == 0) {
		struct termios raw = in->saved;

		/* Keys as they are typed, no echo; Ctrl+C still stops us (ISIG kept). */
		raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR | IGNCR | ISTRIP | BRKINT);
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		in->raw = tcsetattr(0, TCSANOW, &raw) == 0;
	}
	if (evdev)
		evdev_open(in);
	return in;
}

/* Return: false when the device is gone (unplugged). */
static bool evdev_read(struct input *in, int fd, void (*key)(const struct fl_term_key *, void *),
		       void *data)
{
	struct input_event ev[16];
	ssize_t n;

	while ((n = read(fd, ev, sizeof(ev))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(ev[0]); i++) {
			uint16_t m = 0;

			if (ev[i].type != EV_KEY)
				continue;
			if (ev[i].code == KEY_LEFTSHIFT || ev[i].code == KEY_RIGHTSHIFT)
				m = FL_TERM_MOD_SHIFT;
			else if (ev[i].code == KEY_LEFTCTRL || ev[i].code == KEY_RIGHTCTRL)
				m = FL_TERM_MOD_CTRL;
			else if (ev[i].code == KEY_LEFTALT || ev[i].code == KEY_RIGHTALT)
				m = FL_TERM_MOD_ALT;
			if (m) {
				in->ev_mods = ev[i].value ? (uint16_t)(in->ev_mods | m)
							  : (uint16_t)(in->ev_mods & ~m);
				continue;
			}
			/* A press or an auto-repeat. */
			if (ev[i].value == 1 || ev[i].value == 2) {
				struct fl_term_key k = { ev[i].code, in->ev_mods, 0 };

				key(&k, data);
			}
		}
	}
	return n == 0 || errno == EAGAIN || errno == EINTR;
}

int input_wait(struct input *in, int timeout_ms, void (*key)(const struct fl_term_key *, void *),
	       void *data)
{
	struct pollfd p[2 + MAX_EVDEV];
	size_t n = 0;
	int r;

	if (in->in_fd >= 0)
		p[n++] = (struct pollfd){ in->in_fd, POLLIN, 0 };
	if (in->display >= 0)
		p[n++] = (struct pollfd){ in->display, POLLIN, 0 };
	for (size_t i = 0; i < in->n_ev; i++)
		p[n++] = (struct pollfd){ in->ev[i], POLLIN, 0 };
	if (!n)
		return -ENODATA;
	/* A lone ESC is the Escape key once nothing follows it for a moment. */
	if (in->esc_held && (timeout_ms < 0 || timeout_ms > (int)(FL_TERM_ESC_WAIT_NS / 1000000)))
		timeout_ms = (int)(FL_TERM_ESC_WAIT_NS / 1000000);
	r = poll(p, n, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0) {
		if (in->esc_held) {
			fl__term_input_flush(&in->dec, key, data);
			in->esc_held = 0;
			return 1;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (!p[i].revents)
			continue;
		if (p[i].fd == in->display) {
			struct adf_event *ev = NULL;
			int e = adf_read_event(in->display, &ev);

			if (e == 0 && ev->type == DISPLAY_EVENT_KEY &&
			    ev->length >= sizeof(struct display_key_event)) {
				const struct display_key_event *k = (const void *)ev;
				struct fl_term_key fk = { k->code, k->mods, k->ch };

				key(&fk, data);
			}
			free(ev);
			/* The display is gone (its service died): there is nothing to draw on. */
			if ((e < 0 && e != -EAGAIN && e != -EINTR) ||
			    (p[i].revents & (POLLHUP | POLLERR)))
				return -EPIPE;
		} else if (p[i].fd == in->in_fd) {
			unsigned char buf[256];
			ssize_t got = read(in->in_fd, buf, sizeof(buf));

			if (got > 0) {
				in->esc_held =
					fl__term_input_feed(&in->dec, buf, (size_t)got, key, data);
			} else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
				fl__term_input_flush(&in->dec, key, data);
				in->in_fd = -1; /* its end: no more keys from there */
			}
		} else if (!evdev_read(in, p[i].fd, key, data)) {
			for (size_t k = 0; k < in->n_ev; k++)
				if (in->ev[k] == p[i].fd) {
					close(in->ev[k]);
					in->ev[k] = in->ev[--in->n_ev];
					break;
				}
		}
	}
	return 1;
}

void input_free(struct input *in)
{
	if (!in)
		return;
	if (in->raw)
		tcsetattr(0, TCSANOW, &in->saved);
	for (size_t i = 0; i < in->n_ev; i++)
		close(in->ev[i]);
	free(in);
}

/* SPDX-License-Identifier: MIT */
/*
 * The terminal display driver (docs/display.md, "The terminal driver"): the
 * virtual driver (its model, clock, composition, simple buffers), whose
 * frames this presenter shows in a terminal in 24-bit colour with half
 * blocks (term-encode.h), and whose keys come back as driver events
 * (term-input.h). The config names the terminal:
 *
 *   [device term]
 *   driver = terminal
 *   options = tty=/dev/pts/3, interface=0
 *
 * tty: the terminal (default /dev/tty, the service's own, for a service run
 * with --foreground in it); interface: the id of the interface it shows
 * (default 0). The terminal is put in raw mode (keys are the display's, not
 * signals) and given back as it was when the device goes.
 *
 * At each vsync of that interface (the mode's refresh: the frame-rate cap)
 * the frame is composed and only its changed cells written. A terminal that
 * cannot take the bytes as fast drops frames, never blocks the service;
 * its size is read each frame, so a resize lays the picture out again. A
 * terminal that goes away (hung up, closed) unplugs the interface.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "display-presented.h"
#include "display-terminal.h"
#include "term-encode.h"
#include "term-input.h"

struct term {
	const struct fl_display_host *host;
	void *v; /* the virtual driver's state, for its frames */
	uint32_t intf;
	int tty, out; /* out: a dup of tty, watched for room while bytes wait */
	bool raw; /* tty was put in raw mode: @saved gives it back */
	struct termios saved;
	bool gone;
	struct fl_display_source *in_src, *out_src, *esc_timer;
	struct fl_term_input dec;
	bool keys_on;
	unsigned short cols, rows;
	struct fl_term_screen *screen;
	struct fl__display_frame frame;
	char *buf;
	size_t cap, len, off; /* bytes encoded, and how many of them were written */
};

static void send_key(const struct fl_term_key *k, void *data)
{
	struct term *t = data;
	struct fl_display_terminal_key key = { k->code, k->mods, k->ch };

	if (t->keys_on)
		t->host->event(t->host, FL_DISPLAY_OBJ_DEVICE, 0, FL_DISPLAY_TERMINAL_EVENT_KEY,
			       &key, sizeof(key));
}

/* The terminal is gone: its interface is unplugged, and nothing is read or written. */
static void lost(struct term *t)
{
	if (t->gone)
		return;
	t->gone = true;
	t->host->source_remove(t->in_src);
	t->host->source_remove(t->out_src);
	t->in_src = t->out_src = NULL;
	t->host->hotplug(t->host, t->intf, false, NULL, 0);
}

static void esc_fire(void *data)
{
	struct term *t = data;

	fl__term_input_flush(&t->dec, send_key, t);
}

static void readable(int fd, uint32_t events, void *data)
{
	struct term *t = data;
	unsigned char in[256];
	ssize_t n = read(fd, in, sizeof(in));

	(void)events;
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		lost(t);
		return;
	}
	if (n < 0)
		return;
	/* A lone ESC waits for the rest of its sequence, 50 ms at most. */
	if (fl__term_input_feed(&t->dec, in, (size_t)n, send_key, t))
		t->host->timer_arm(t->esc_timer, t->host->now(t->host) + FL_TERM_ESC_WAIT_NS);
	else
		t->host->timer_arm(t->esc_timer, 0);
}

/* Write what waits, as much as the terminal takes now. */
static void flush_out(struct term *t);

static void writable(int fd, uint32_t events, void *data)
{
	(void)fd;
	(void)events;
	flush_out(data);
}

static void flush_out(struct term *t)
{
	while (t->off < t->len) {
		ssize_t n = write(t->out, t->buf + t->off, t->len - t->off);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			lost(t);
			return;
		}
		t->off += (size_t)n;
	}
	if (t->off < t->len && !t->out_src)
		t->out_src = t->host->fd_add(t->host, t->out, EPOLLOUT, writable, t);
	if (t->off == t->len && t->out_src) {
		t->host->source_remove(t->out_src);
		t->out_src = NULL;
	}
}

/* The picture's screen at the terminal's size now; a new size is drawn whole. */
static int fit_screen(struct term *t)
{
	struct winsize ws = { 0 };

	if (ioctl(t->tty, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row) {
		ws.ws_col = 80;
		ws.ws_row = 24;
	}
	if (t->screen && ws.ws_col == t->cols && ws.ws_row == t->rows)
		return 0;
	fl__term_screen_free(t->screen);
	t->screen =
		fl__term_screen_new(ws.ws_col < FL_TERM_MAX_COLS ? ws.ws_col : FL_TERM_MAX_COLS,
				    ws.ws_row < FL_TERM_MAX_ROWS ? ws.ws_row : FL_TERM_MAX_ROWS);
	if (!t->screen)
		return -ENOMEM;
	t->cols = ws.ws_col;
	t->rows = ws.ws_row;
	free(t->buf);
	t->cap = fl__term_encode_max(t->screen);
	t->buf = malloc(t->cap);
	t->len = t->off = 0;
	return t->buf ? 0 : -ENOMEM;
}

static void present(void *p, uint32_t intf)
{
	struct term *t = p;
	long n;

	/* A terminal slower than the frame rate: this frame is dropped, the next one drawn. */
	if (intf != t->intf || t->gone || t->off < t->len)
		return;
	if (fit_screen(t) < 0 || fl__display_virtual_capture_frame(
					 t->v, t->host, intf, "fl-terminal-frame", &t->frame) < 0)
		return;
	n = fl__term_encode(t->screen, t->frame.px, t->frame.w, t->frame.h, t->frame.w * 4, t->buf,
			    t->cap);
	if (n <= 0)
		return;
	t->len = (size_t)n;
	t->off = 0;
	flush_out(t);
}

static int set_event(void *p, uint32_t type, bool enabled)
{
	struct term *t = p;

	if (type != FL_DISPLAY_TERMINAL_EVENT_KEY)
		return -EINVAL;
	t->keys_on = enabled;
	return 0;
}

static void destroy(void *p)
{
	struct term *t = p;
	/* Reset colours, show the cursor; the picture stays. */
	static const char bye[] = "\x1b[0m\x1b[?25h\r\n";

	t->host->source_remove(t->in_src);
	t->host->source_remove(t->out_src);
	t->host->source_remove(t->esc_timer);
	if (!t->gone) {
		(void)!write(t->out, bye, sizeof(bye) - 1);
		if (t->raw)
			tcsetattr(t->tty, TCSANOW, &t->saved);
	}
	close(t->out);
	close(t->tty);
	fl__display_frame_free(&t->frame);
	fl__term_screen_free(t->screen);
	free(t->buf);
	free(t);
}

static int create(const struct fl_display_host *host, void *v, void **ret)
{
	const char *tty = host->option(host, "tty");
	struct term *t = calloc(1, sizeof(*t));
	struct termios raw;
	int r;

	if (!t)
		return -ENOMEM;
	t->host = host;
	t->v = v;
	t->frame.fd = -1;
	fl__term_input_init(&t->dec);
	if (fl__display_presenter_option_uint(host, "interface", 0, FL_DISPLAY_MAX_INTERFACES - 1,
					      &t->intf) < 0) {
		free(t);
		return -EINVAL;
	}
	t->tty = open(tty ? tty : "/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (t->tty < 0) {
		r = -errno;
		free(t);
		return r;
	}
	t->out = fcntl(t->tty, F_DUPFD_CLOEXEC, 0);
	if (t->out < 0 || !isatty(t->tty)) {
		r = t->out < 0 ? -errno : -ENOTTY;
		if (t->out >= 0)
			close(t->out);
		close(t->tty);
		free(t);
		return r;
	}
	/* The keys are the display's: no echo, no line editing, no signals from them. */
	if (tcgetattr(t->tty, &t->saved) == 0) {
		raw = t->saved;
		raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR | IGNCR | ISTRIP | BRKINT);
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		t->raw = tcsetattr(t->tty, TCSANOW, &raw) == 0;
	}
	t->esc_timer = host->timer_add(host, esc_fire, t);
	t->in_src = host->fd_add(host, t->tty, EPOLLIN, readable, t);
	if (!t->esc_timer || !t->in_src) {
		destroy(t);
		return -ENOMEM;
	}
	*ret = t;
	return 0;
}

/* Whether @where (default: the controlling terminal) opens as a terminal, as create will. */
static int terminal_probe(const char *where, char *why, size_t len)
{
	const char *path = where ? where : "/dev/tty";
	int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC), r = 0;

	if (fd < 0) {
		r = -errno;
		if (!where && r == -ENXIO)
			snprintf(why, len,
				 "no terminal: the service has no controlling terminal "
				 "(give one: --display terminal:/dev/pts/N)");
		else
			snprintf(why, len, "cannot open %s: %s", path, strerror(-r));
		return r == -ENXIO ? -ENODEV : r;
	}
	if (!isatty(fd)) {
		snprintf(why, len, "%s is not a terminal", path);
		r = -ENOTTY;
	}
	close(fd);
	return r;
}

FL__DISPLAY_PRESENTED_DRIVER(fl__display_terminal_ops, "terminal", create, destroy, present,
			     set_event, terminal_probe);

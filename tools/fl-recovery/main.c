/* SPDX-License-Identifier: MIT */
/*
 * fl-recovery (docs/fl-recovery.md): a recovery console on any fenceline
 * display, through the libadf drop-in's simple-buffer path only.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/input-event-codes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <adf/adf.h>

#include "display-choice.h"
#include "recovery.h"

static const char *const default_items[] = {
	"Reboot system now",	   "Apply update from ADB",
	"Wipe data/factory reset", "Wipe cache partition",
	"Mount /system",	   "View recovery logs",
	"Run graphics test",	   "Power off",
};

struct state {
	struct ui ui;
	bool changed, done;
	const char *result;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: fl-recovery [OPTION]...\n"
		"A recovery console, drawn through libadf's simple buffers on any fenceline "
		"display.\n"
		"Up/Down (or Volume Up/Down, k/j) move, Enter (or Power, Right) selects, Esc or q\n"
		"leaves. Keys come from the terminal on stdin, from evdev keyboards and from the\n"
		"display itself where its driver has keys (the terminal driver).\n\n"
		"  -d, --device ID    use display device ID (default: the first that can)\n"
		"      --display CHOICE  the display service that shows on CHOICE:\n"
		"                     " FL_TOOL_DISPLAY_CHOICES "\n"
		"                     (FENCELINE_DISPLAY; \"terminal\" alone is this one)\n"
		"  -t, --title TEXT   the title (default \"fenceline recovery\")\n"
		"  -i, --item TEXT    a menu item (repeatable; default: recovery's menu)\n"
		"      --no-evdev     read no evdev keyboard\n"
		"      --layout       print where the menu and log lines are drawn, then run\n"
		"  -h, --help         show this help\n");
}

static void on_key(const struct fl_term_key *k, void *data)
{
	struct state *s = data;
	struct ui *ui = &s->ui;

	switch (k->code) {
	case KEY_UP:
	case KEY_VOLUMEUP:
	case KEY_K:
		if (k->code != KEY_K || k->ch == 'k')
			ui->selected = ui->selected ? ui->selected - 1 : ui->n_items - 1;
		break;
	case KEY_DOWN:
	case KEY_VOLUMEDOWN:
	case KEY_J:
		if (k->code != KEY_J || k->ch == 'j')
			ui->selected = (ui->selected + 1) % ui->n_items;
		break;
	case KEY_HOME:
		ui->selected = 0;
		break;
	case KEY_END:
		ui->selected = ui->n_items - 1;
		break;
	case KEY_ENTER:
	case KEY_POWER:
	case KEY_RIGHT: {
		const char *item = ui->items[ui->selected];

		ui_log(ui, "-- %s", item);
		if (!strcmp(item, "Reboot system now") || !strcmp(item, "Power off")) {
			s->result = item;
			s->done = true;
		} else {
			ui_log(ui, "   (a console for tests and bring-up: nothing is changed)");
		}
		break;
	}
	case KEY_ESC:
	case KEY_Q:
		if (k->code != KEY_Q || k->ch == 'q') {
			s->result = "leave";
			s->done = true;
		}
		break;
	default:
		return;
	}
	s->changed = true;
}

static void print_layout(const struct gr *g, const struct ui *ui)
{
	size_t logs = ui_log_lines(g->w, g->h, ui->n_items);

	printf("screen %u %u scale %u format %s\n", g->w, g->h, ui_scale(g->w, g->h),
	       g->format == DRM_FORMAT_RGB565 ? "RGB565" : "XRGB8888");
	for (size_t i = 0; i < ui->n_items; i++) {
		struct ui_rect r = ui_item_rect(g->w, g->h, i);

		printf("item %zu %d %d %d %d\n", i, r.x, r.y, r.w, r.h);
	}
	for (size_t i = 0; i < logs; i++) {
		struct ui_rect r = ui_log_rect(g->w, g->h, ui->n_items, i);

		printf("log %zu %d %d %d %d\n", i, r.x, r.y, r.w, r.h);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "display", required_argument, NULL, 'D' },
		{ "title", required_argument, NULL, 't' },
		{ "item", required_argument, NULL, 'i' },
		{ "no-evdev", no_argument, NULL, 'E' },
		{ "layout", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct state s = { .ui = { .title = "fenceline recovery" } };
	bool evdev = true, layout = false;
	int device = -1, o, r;
	const char *choice, *tty;
	struct input *in;
	struct gr g;

	while ((o = getopt_long(argc, argv, "d:t:i:h", opts, NULL)) != -1) {
		switch (o) {
		case 'd':
			device = atoi(optarg);
			break;
		case 'D':
			if (fl_tool_display_choose("fl-recovery", optarg) < 0)
				return 2;
			break;
		case 't':
			s.ui.title = optarg;
			break;
		case 'i':
			if (s.ui.n_items == UI_MAX_ITEMS) {
				fprintf(stderr, "fl-recovery: at most %d items\n", UI_MAX_ITEMS);
				return 2;
			}
			s.ui.items[s.ui.n_items++] = optarg;
			break;
		case 'E':
			evdev = false;
			break;
		case 'L':
			layout = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!s.ui.n_items)
		for (size_t i = 0; i < sizeof(default_items) / sizeof(default_items[0]); i++)
			s.ui.items[s.ui.n_items++] = default_items[i];
	r = gr_init(&g, device);
	if (r < 0)
		return 1;
	choice = getenv("FENCELINE_DISPLAY");
	tty = ttyname(STDIN_FILENO);
	/* A display in this very terminal reads its keys: two readers would split them. */
	in = input_new(evdev,
		       !(choice && tty && !strncmp(choice, "terminal:", 9) &&
			 !strcmp(choice + 9, tty)),
		       g.dev);
	if (!in) {
		gr_exit(&g);
		return 1;
	}
	if (layout)
		print_layout(&g, &s.ui);
	ui_log(&s.ui, "fenceline recovery on a %ux%u display", g.w, g.h);
	s.changed = true;
	while (!s.done) {
		if (s.changed) {
			ui_draw(&s.ui, &g);
			r = gr_flip(&g);
			if (r < 0)
				break;
			s.changed = false;
		}
		r = input_wait(in, -1, on_key, &s);
		if (r == -ENODATA) {
			r = 0;
			break; /* no keys will come */
		}
		if (r == -EPIPE)
			fprintf(stderr, "fl-recovery: the display went away\n");
		if (r < 0)
			break;
	}
	if (s.changed && r >= 0) {
		ui_draw(&s.ui, &g);
		r = gr_flip(&g);
	}
	if (s.result)
		printf("result: %s\n", s.result);
	input_free(in);
	gr_exit(&g);
	ui_free(&s.ui);
	return r < 0 ? 1 : 0;
}

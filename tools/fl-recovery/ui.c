/* SPDX-License-Identifier: MIT */
/*
 * fl-recovery's picture (recovery.h): as Android's recovery lays it out,
 * a title, the menu with the selected item on a highlight bar, a rule, and
 * the log pane below with its newest lines, in the built-in font scaled so
 * that about 60 columns fit the width.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "font.h"
#include "recovery.h"

#define COLUMNS 60
#define MARGIN	1 /* cells around everything */

unsigned int ui_scale(uint32_t w, uint32_t h)
{
	unsigned int s = w / (FL_FONT_CELL_W * COLUMNS);

	/* And at least 20 lines high. */
	if (s > h / (FL_FONT_CELL_H * 20))
		s = h / (FL_FONT_CELL_H * 20);
	return s ? s : 1;
}

/* A text line's top, in lines of the scaled font from the top margin. */
static int line_y(uint32_t w, uint32_t h, size_t line)
{
	return (int)((MARGIN + line) * FL_FONT_CELL_H * ui_scale(w, h));
}

struct ui_rect ui_item_rect(uint32_t w, uint32_t h, size_t i)
{
	unsigned int s = ui_scale(w, h);

	/* The title, a blank line, then the items. */
	return (struct ui_rect){ 0, line_y(w, h, 2 + i), (int)w, FL_FONT_CELL_H * (int)s };
}

/* The rule below the menu, and the log pane's first line after it. */
static size_t log_first_line(size_t n_items)
{
	return 2 + n_items + 2;
}

size_t ui_log_lines(uint32_t w, uint32_t h, size_t n_items)
{
	unsigned int s = ui_scale(w, h);
	size_t lines = h / (FL_FONT_CELL_H * s), used = MARGIN * 2 + log_first_line(n_items);

	return lines > used ? lines - used : 0;
}

struct ui_rect ui_log_rect(uint32_t w, uint32_t h, size_t n_items, size_t i)
{
	unsigned int s = ui_scale(w, h);

	return (struct ui_rect){ (int)(MARGIN * FL_FONT_CELL_W * s),
				 line_y(w, h, log_first_line(n_items) + i),
				 (int)(w - 2 * MARGIN * FL_FONT_CELL_W * s),
				 FL_FONT_CELL_H * (int)s };
}

void ui_log(struct ui *ui, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	char *copy;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("%s\n", line);
	fflush(stdout);
	copy = strdup(line);
	if (!copy)
		return;
	if (ui->n_log == UI_MAX_LOG) {
		free(ui->log[ui->log_first]);
		ui->log[ui->log_first] = copy;
		ui->log_first = (ui->log_first + 1) % UI_MAX_LOG;
	} else {
		ui->log[(ui->log_first + ui->n_log++) % UI_MAX_LOG] = copy;
	}
}

static void fill(struct gr *g, struct ui_rect r, uint32_t c)
{
	for (int y = r.y < 0 ? 0 : r.y; y < r.y + r.h && y < (int)g->h; y++)
		for (int x = r.x < 0 ? 0 : r.x; x < r.x + r.w && x < (int)g->w; x++)
			g->canvas[(size_t)y * g->w + (size_t)x] = c;
}

static void text(struct gr *g, int x, int y, const char *s, uint32_t fg)
{
	fl__font_draw(g->canvas, g->w, g->w, g->h, x, y, ui_scale(g->w, g->h), s, fg, 0, 0);
}

void ui_draw(const struct ui *ui, struct gr *g)
{
	unsigned int s = ui_scale(g->w, g->h);
	int left = (int)(MARGIN * FL_FONT_CELL_W * s);
	size_t shown = ui_log_lines(g->w, g->h, ui->n_items), skip;

	fill(g, (struct ui_rect){ 0, 0, (int)g->w, (int)g->h }, UI_BG);
	text(g, left, line_y(g->w, g->h, 0), ui->title, UI_TITLE);
	for (size_t i = 0; i < ui->n_items; i++) {
		struct ui_rect r = ui_item_rect(g->w, g->h, i);
		bool sel = i == ui->selected;

		if (sel)
			fill(g, r, UI_HIGHLIGHT);
		text(g, left, r.y, ui->items[i], sel ? UI_SELECTED : UI_ITEM);
	}
	/* The rule: a line of 1/4 a cell's height, in the middle of its line. */
	fill(g,
	     (struct ui_rect){ left,
			       line_y(g->w, g->h, 2 + ui->n_items) + (int)(FL_FONT_CELL_H * s) / 2,
			       (int)g->w - 2 * left, (int)(FL_FONT_CELL_H * s) / 4 + 1 },
	     UI_RULE);
	skip = ui->n_log > shown ? ui->n_log - shown : 0;
	for (size_t i = skip; i < ui->n_log; i++) {
		struct ui_rect r = ui_log_rect(g->w, g->h, ui->n_items, i - skip);

		text(g, r.x, r.y, ui->log[(ui->log_first + i) % UI_MAX_LOG], UI_LOG);
	}
}

void ui_free(struct ui *ui)
{
	for (size_t i = 0; i < ui->n_log; i++)
		free(ui->log[(ui->log_first + i) % UI_MAX_LOG]);
	ui->n_log = 0;
}

/* SPDX-License-Identifier: MIT */
/* --display for the display tools (display-choice.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fenceline/display.h>

#include "display-choice.h"

int fl_tool_display_choose(const char *prog, const char *choice)
{
	char path[PATH_MAX + 16];
	const char *tty;
	int r;

	if (!strcmp(choice, "terminal")) {
		tty = ttyname(STDIN_FILENO);
		if (!tty) {
			fprintf(stderr,
				"%s: --display terminal: stdin is not a terminal (%s); "
				"name one: --display terminal:/dev/pts/N\n",
				prog, strerror(errno));
			return -EINVAL;
		}
		snprintf(path, sizeof(path), "terminal:%s", tty);
		choice = path;
	}
	if (setenv("FENCELINE_DISPLAY", choice, 1) < 0)
		return -errno;
	/* The library's own reading of it, so that tool and library never disagree; empty is unset there. */
	r = choice[0] ? fl_display_socket_path((char[PATH_MAX]){ 0 }, PATH_MAX) : -EINVAL;
	if (r == -EINVAL) {
		fprintf(stderr, "%s: --display %s: not a display choice (%s)\n", prog, choice,
			FL_TOOL_DISPLAY_CHOICES);
		unsetenv("FENCELINE_DISPLAY");
	}
	return r == -EINVAL ? r : 0;
}

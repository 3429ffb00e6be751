/* SPDX-License-Identifier: MIT */
/* --display for the display tools (docs/display.md, "Choosing the output"). */
#ifndef FL_TOOLS_DISPLAY_CHOICE_H
#define FL_TOOLS_DISPLAY_CHOICE_H

#define FL_TOOL_DISPLAY_CHOICES "auto, virtual, window, terminal[:TTY], kms[:CARD]"

/*
 * fl_tool_display_choose() - make @choice this process's display: sets
 * FENCELINE_DISPLAY (inherited by the service the library starts, and by
 * programs the tool runs), so every call talks to the service of that
 * choice. "terminal" alone is the caller's terminal (its stdin's), since a
 * service started for it has none.
 * @prog: the tool's name, for the message
 * Return: 0, or -EINVAL (not a choice; a message on stderr) or setenv()'s -errno.
 */
int fl_tool_display_choose(const char *prog, const char *choice);

#endif

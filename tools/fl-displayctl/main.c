/* SPDX-License-Identifier: MIT */
/*
 * fl-displayctl: look at and poke the display service's devices, for
 * people bringing up or debugging a display stack (docs/fl-displayctl.md).
 * Unlike fencectl it starts the service when none runs, as any display
 * client does: a display has state (DPMS, modes, hotplug) worth setting
 * before a compositor comes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "display-choice.h"
#include "displayctl.h"

static const char usage_text[] =
	"usage: fl-displayctl [--display CHOICE | --socket PATH] COMMAND [ARGS...]\n"
	"\n"
	"Commands:\n"
	"  list [--json]                      devices, interfaces, engines, attachments\n"
	"  watch [--count N] [DEV.INTF]       vsync and hotplug events as they come\n"
	"  hotplug DEV.INTF                   plug a (virtual) interface in\n"
	"  unplug DEV.INTF                    unplug it\n"
	"  blank DEV.INTF on|standby|suspend|off   set the DPMS state\n"
	"  mode DEV.INTF WxH[@HZ]             switch to one of the interface's modes\n"
	"  attach DEV ENGINE INTF             attach an overlay engine to an interface\n"
	"  detach DEV ENGINE INTF             detach it\n"
	"  capture [DEV.INTF] -o FILE.png     the frame on screen, as PNG\n"
	"  stats DEV                          the device's post queue and counters\n"
	"  drivers                            the display drivers: in use, available, why not\n"
	"  help [COMMAND]                     this, or a command's usage\n"
	"\n"
	"Devices, interfaces and engines go by id or by name (0.panel, phone.1).\n"
	"--display CHOICE talks to the display service that shows on "
	"CHOICE: " FL_TOOL_DISPLAY_CHOICES "\n"
	"(FENCELINE_DISPLAY; \"terminal\" alone is this terminal). --socket PATH talks to the\n"
	"display service at PATH (FENCELINE_DISPLAY_SOCKET). Either is started if none\n"
	"answers. --version prints the version.\n"
	"Exit status: 0 done, 1 failed (the message says why), 2 usage.\n";

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
};

static const struct command commands[] = {
	{ "list", dctl_cmd_list, dctl_list_usage },
	{ "watch", dctl_cmd_watch, dctl_watch_usage },
	{ "hotplug", dctl_cmd_connect, dctl_connect_usage },
	{ "unplug", dctl_cmd_connect, dctl_connect_usage },
	{ "blank", dctl_cmd_blank, dctl_blank_usage },
	{ "mode", dctl_cmd_mode, dctl_mode_usage },
	{ "attach", dctl_cmd_attach, dctl_attach_usage },
	{ "detach", dctl_cmd_attach, dctl_attach_usage },
	{ "capture", dctl_cmd_capture, dctl_capture_usage },
	{ "stats", dctl_cmd_stats, dctl_stats_usage },
	{ "drivers", dctl_cmd_drivers, dctl_drivers_usage },
};

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct command *c;
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("fl-displayctl %s\n", FL_VERSION);
			return 0;
		}
		if (!strcmp(argv[i], "--socket") && i + 1 < argc && argv[i + 1][0]) {
			/* The library reads it at its first connection, which no call has made yet. */
			setenv("FENCELINE_DISPLAY_SOCKET", argv[i + 1], 1);
			i += 2;
			continue;
		}
		if (!strcmp(argv[i], "--display") && i + 1 < argc) {
			if (fl_tool_display_choose("fl-displayctl", argv[i + 1]) < 0)
				return DCTL_EXIT_USAGE;
			i += 2;
			continue;
		}
		return dctl_usage(usage_text, "unknown option '%s'", argv[i]);
	}
	if (i >= argc)
		return dctl_usage(usage_text, "no command");
	if (!strcmp(argv[i], "help")) {
		if (i + 1 >= argc) {
			fputs(usage_text, stdout);
			return 0;
		}
		c = find(argv[i + 1]);
		if (!c)
			return dctl_usage(usage_text, "no command '%s'", argv[i + 1]);
		fputs(c->usage, stdout);
		return 0;
	}
	c = find(argv[i]);
	if (!c)
		return dctl_usage(usage_text, "unknown command '%s'", argv[i]);
	return c->run(argc - i, argv + i);
}

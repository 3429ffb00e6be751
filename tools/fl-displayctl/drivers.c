/* SPDX-License-Identifier: MIT */
/*
 * fl-displayctl drivers: which display drivers the service has, which runs
 * its devices, and why the others cannot run here (docs/display.md,
 * "Choosing the output").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "displayctl.h"

const char dctl_drivers_usage[] =
	"usage: fl-displayctl drivers\n"
	"Lists the display drivers the service knows: the one in use (and by how many\n"
	"devices), those that could run here, and why each of the others cannot. The\n"
	"service answers as itself: its $DISPLAY and devices, not the caller's.\n";

int dctl_cmd_drivers(int argc, char **argv)
{
	struct fl_display_driver_info info[16];
	struct fl_display_error e = { 0 };
	int n;

	if (dctl_wants_help(argc, argv)) {
		fputs(dctl_drivers_usage, stdout);
		return 0;
	}
	if (argc > 1)
		return dctl_usage(dctl_drivers_usage, "drivers: takes no operands");
	n = fl_display_drivers(info, sizeof(info) / sizeof(info[0]), &e);
	if (n < 0)
		return dctl_fail(n, &e, "asking the display service for its drivers");
	for (int i = 0; i < n && i < (int)(sizeof(info) / sizeof(info[0])); i++) {
		const struct fl_display_driver_info *d = &info[i];

		if (d->devices)
			printf("%-9s in use (%u device%s)\n", d->name, d->devices,
			       d->devices == 1 ? "" : "s");
		else if (d->status == 0)
			printf("%-9s available\n", d->name);
		else
			printf("%-9s unavailable: %s\n", d->name,
			       d->why[0] ? d->why : strerror(-d->status));
	}
	return 0;
}

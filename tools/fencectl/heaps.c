/* SPDX-License-Identifier: MIT */
/*
 * fencectl heaps: the allocation service's heaps and what each client holds,
 * like ION's debugfs heap files, or as JSON (docs/fencectl.md, "heaps"). The
 * daemon writes it (fl_introspect_dump_heaps()); this only copies it out.
 */
#include <stdbool.h>

#define FL_USE_UNSTABLE_INTROSPECT_API
#include <fenceline/introspect.h>

#include "fencectl.h"
#include "heaps.h"

const char fencectl_heaps_usage[] =
	"usage: fencectl heaps [--json]\n"
	"\n"
	"The daemon's heaps (system, carveout): for each, the clients holding buffers\n"
	"from it (comm, pid, bytes, buffers, peak), the totals and high-water marks,\n"
	"and a carveout's free space; then each client's total over all heaps, with\n"
	"the per-client limit and the allocations it refused.\n"
	"\n"
	"  --json   one JSON object instead of text; schema in docs/fencectl.md\n";

int fencectl_heaps(int argc, char **argv)
{
	bool json = false;
	int r = fencectl_parse_flags(argc, argv, "heaps", fencectl_heaps_usage, &json, NULL);

	if (r >= 0)
		return r;
	return fencectl_view("heaps", VIEW_HEAPS, json ? FL_INTROSPECT_JSON : 0);
}

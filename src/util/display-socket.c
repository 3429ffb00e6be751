/* SPDX-License-Identifier: MIT */
/*
 * Where the display service's socket lives (util.h): beside fencelined's,
 * by fl__socket_path()'s rule. A file of its own, so that fencelined, which
 * links util statically, carries nothing of the display.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "util.h"

int fl__display_socket_path(char *buf, size_t cap)
{
	const char *env = getenv("FENCELINE_DISPLAY_SOCKET");
	char *slash;
	int n, r;

	if (env && env[0])
		n = snprintf(buf, cap, "%s", env);
	else {
		/* fencelined's directory, chosen (and its traps refused) by the same rule. */
		r = fl__socket_path(buf, cap);
		if (r < 0)
			return r;
		slash = strrchr(buf, '/');
		if (slash)
			slash[1] = '\0';
		else
			buf[0] = '\0';
		n = (int)strlen(buf);
		n += snprintf(buf + n, cap - (size_t)n, "displayd.sock");
	}
	if (n < 0 || (size_t)n >= cap || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Where the per-user daemon's socket lives. One home for the rule: the
 * library connects there and fencelined, started by hand without --socket,
 * listens there, so both must pick the same place and refuse the same traps.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

/* A directory only we can have made and only we can enter: ours, and closed to others. */
static bool dir_is_ours(const char *dir)
{
	struct stat st;

	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077);
}

/*
 * The socket directory when /tmp/fenceline-UID is not ours (anybody can
 * create that name first): /run/user/UID, which only root creates, else
 * ~/.fenceline, in a home that others cannot write to. Return: 0 with the
 * directory in @dir, or -EPERM.
 */
static int fallback_dir(const char *squatted, char *dir, size_t cap)
{
	static atomic_bool told;
	const char *home = getenv("HOME");
	struct stat st;
	int n;

	snprintf(dir, cap, "/run/user/%u", (unsigned int)geteuid());
	if (dir_is_ours(dir))
		goto found;
	if (home && home[0] == '/' && lstat(home, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && !(st.st_mode & 022)) {
		n = snprintf(dir, cap, "%s/.fenceline", home);
		if (n > 0 && (size_t)n < cap && (mkdir(dir, 0700) == 0 || errno == EEXIST) &&
		    dir_is_ours(dir))
			goto found;
	}
	fprintf(stderr,
		"fenceline: refusing the daemon socket directory %s: it must be a directory "
		"owned by uid %u with mode 0700, and neither /run/user/%u nor $HOME/.fenceline "
		"can stand in for it (set XDG_RUNTIME_DIR or FENCELINE_SOCKET)\n",
		squatted, (unsigned int)geteuid(), (unsigned int)geteuid());
	return -EPERM;
found:
	if (!atomic_exchange(&told, true))
		fprintf(stderr,
			"fenceline: %s is not a private directory of uid %u (somebody else "
			"made it?): using %s instead\n",
			squatted, (unsigned int)geteuid(), dir);
	return 0;
}

int fl__socket_path(char *buf, size_t cap)
{
	const char *env = getenv("FENCELINE_SOCKET");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int n, r;

	if (env && env[0])
		n = snprintf(buf, cap, "%s", env);
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, cap, "%s/fenceline.sock", xdg);
	else {
		char tmp[64];

		snprintf(tmp, sizeof(tmp), "/tmp/fenceline-%u", (unsigned int)geteuid());
		/* Somebody else's directory, or one others can write to, is a trap. */
		if ((mkdir(tmp, 0700) == 0 || errno == EEXIST) && dir_is_ours(tmp)) {
			snprintf(dir, sizeof(dir), "%s", tmp);
		} else {
			r = fallback_dir(tmp, dir, sizeof(dir));
			if (r < 0)
				return r;
		}
		n = snprintf(buf, cap, "%s/fenceline.sock", dir);
	}
	if (n < 0 || (size_t)n >= cap || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Starting and reaching the library's services: see service.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "service.h"
#include "util.h"

int fl__fdid_get(int fd, struct fdid *ret)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		*ret = (struct fdid){ 0, 0, false };
		return -EBADF;
	}
	*ret = (struct fdid){ st.st_dev, st.st_ino, S_ISFIFO(st.st_mode) };
	return 0;
}

bool fl__fdid_is(int fd, const struct fdid *id)
{
	struct stat st;

	return fd >= 0 && id->ino && fstat(fd, &st) == 0 && st.st_ino == id->ino &&
	       st.st_dev == id->dev;
}

void fl__fdid_close(int fd, const struct fdid *id)
{
	if (fl__fdid_is(fd, id))
		close(fd);
	else if (fd >= 0)
		FL_LOG("daemon", "fd %d is no longer the library's: left alone", fd);
}

/* Whether @lib, an LD_PRELOAD entry, is one of our preloads (fenceline-run's, fenceline-fbdev's). */
static bool our_preload(const char *lib)
{
	return strstr(lib, "libfenceline-kabi") || strstr(lib, "libfenceline-fbdev");
}

/*
 * environ for a service, without our preloads in LD_PRELOAD (a program run
 * under fenceline-run or fenceline-fbdev starts the services too, and the
 * preload would load a second copy of the library into them, and
 * interpose on their opens and ioctls). Returns a new array (free it, and
 * *@ret_preload, its new LD_PRELOAD entry), or NULL: use environ as it is.
 */
static char **service_environ(char **ret_preload)
{
	size_t n = 0, at = 0;
	char **env, *val, *out, *item, *save;
	int pre = -1;

	*ret_preload = NULL;
	for (; environ[n]; n++)
		if (strncmp(environ[n], "LD_PRELOAD=", 11) == 0 && our_preload(environ[n]))
			pre = (int)n;
	if (pre < 0)
		return NULL;
	env = calloc(n + 1, sizeof(*env));
	val = strdup(environ[pre] + 11);
	out = malloc(strlen(environ[pre]) + 1);
	if (!env || !val || !out) {
		free(env);
		free(val);
		free(out);
		return NULL;
	}
	strcpy(out, "LD_PRELOAD=");
	for (item = strtok_r(val, ": ", &save); item; item = strtok_r(NULL, ": ", &save)) {
		if (our_preload(item))
			continue;
		if (out[11])
			strcat(out, ":");
		strcat(out, item);
	}
	free(val);
	for (size_t i = 0; i < n; i++)
		if ((int)i != pre)
			env[at++] = environ[i];
		else if (out[11])
			env[at++] = out;
	*ret_preload = out;
	return env;
}

int fl__service_spawn(const char *what, const char *binary, const char *socket_path)
{
	char *argv[] = { (char *)binary, (char *)"--socket", (char *)socket_path, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	char **envp, *preload;
	pid_t pid;
	int r, status;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
						POSIX_SPAWN_SETSID);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	if (!getenv("FENCELINE_DAEMON_STDERR"))
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	envp = service_environ(&preload);
	r = posix_spawn(&pid, argv[0], &fa, &attr, argv, envp ? envp : environ);
	free(envp);
	free(preload);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r != 0) {
		fprintf(stderr, "fenceline: cannot start the %s %s: %s\n", what, argv[0],
			strerror(r));
		return -ECONNREFUSED;
	}
	FL_LOG("daemon", "started %s --socket %s (pid %d)", argv[0], socket_path, (int)pid);
	/* ECHILD is fine: the application may reap children itself. */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

int fl__service_connect(const char *path, unsigned int timeout_ms)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000 };
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (timeout_ms && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
			   setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)) {
		int r = -errno;

		close(fd);
		return r;
	}
	while (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int r = -errno;

		if (r == -EINTR)
			continue;
		close(fd);
		return r == -EAGAIN ? -ETIMEDOUT : r;
	}
	return fd;
}

int fl__service_peer_trusted(int fd, const char *what, const char *path)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	const char *env = getenv("FENCELINE_DAEMON_UID");
	char *end;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	if (uc.uid == geteuid() || uc.uid == 0)
		return 0;
	if (env && env[0] && strtoul(env, &end, 10) == uc.uid && !*end)
		return 0;
	fprintf(stderr,
		"fenceline: refusing the %s at %s: it runs as uid %u, not as uid %u or root "
		"(FENCELINE_DAEMON_UID=%u would trust it)\n",
		what, path, (unsigned int)uc.uid, (unsigned int)geteuid(), (unsigned int)uc.uid);
	return -EPERM;
}

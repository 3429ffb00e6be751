/* memprobe: VmRSS of fencelined holding N live (pending) fences.
 * Usage: memprobe [N=100000] [per_child=50000] [daemon=/fencelined]
 * Raises fs.nr_open and RLIMIT_NOFILE (needs root / CAP_SYS_RESOURCE) before
 * the first library call, so the spawned daemon inherits a big hard limit.
 * The daemon caps fences per client (default 65536), so the fences are made
 * by child processes of per_child fences each (each is its own client). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>
#include <fenceline/shared.h>

#include "bench.h"

/* The number after "@field:" in a /proc file of "Name: value kB" lines, or -1. */
static long proc_field_kib(const char *path, const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0 && line[len] == ':')
			v = strtol(line + len + 1, NULL, 10);
	fclose(f);
	return v;
}

static long status_kib(int pid, const char *field)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return proc_field_kib(path, field);
}

static long meminfo_kib(const char *field)
{
	return proc_field_kib("/proc/meminfo", field);
}

static void print_limits(int pid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Max open files", 14) == 0)
			printf("# daemon limits: %s", line);
	fclose(f);
}

struct snap {
	long rss, anon, file, shmem, data, hwm, fds, slab, sunreclaim, memavail;
};

static void snap(int pid, struct snap *s, const char *tag)
{
	s->rss = status_kib(pid, "VmRSS");
	s->anon = status_kib(pid, "RssAnon");
	s->file = status_kib(pid, "RssFile");
	s->shmem = status_kib(pid, "RssShmem");
	s->data = status_kib(pid, "VmData");
	s->hwm = status_kib(pid, "VmHWM");
	s->fds = fl__bench_proc_fds(pid);
	s->slab = meminfo_kib("Slab");
	s->sunreclaim = meminfo_kib("SUnreclaim");
	s->memavail = meminfo_kib("MemAvailable");
	printf("%s_daemon_vmrss %ld KiB\n%s_daemon_rssanon %ld KiB\n%s_daemon_rssfile %ld KiB\n"
	       "%s_daemon_rssshmem %ld KiB\n%s_daemon_vmdata %ld KiB\n%s_daemon_vmhwm %ld KiB\n"
	       "%s_daemon_fds %ld fds\n%s_slab %ld KiB\n%s_sunreclaim %ld KiB\n"
	       "%s_memavailable %ld KiB\n",
	       tag, s->rss, tag, s->anon, tag, s->file, tag, s->shmem, tag, s->data, tag, s->hwm,
	       tag, s->fds, tag, s->slab, tag, s->sunreclaim, tag, s->memavail);
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void holder(long count, int ready_w, int go_r)
{
	int tl, fd = -1, r, bad = 0;
	char c = 1;

	r = fl_timeline_fd_create("mem", 0, &tl);
	if (r < 0) {
		fprintf(stderr, "child: fl_timeline_fd_create: %s\n", strerror(-r));
		_exit(2);
	}
	for (long i = 0; i < count; i++) {
		r = fl_fence_fd_create(tl, 1, "m", &fd);
		if (r < 0) {
			fprintf(stderr, "child: fl_fence_fd_create #%ld: %s\n", i, strerror(-r));
			_exit(3);
		}
	}
	fl_daemon_flush();
	/* the last fence, and a sample of earlier ones (fds are consecutive) */
	r = fl_fence_fd_get_status(fd);
	if (r != 0) {
		fprintf(stderr, "child: last fence status %d (want 0 = pending)\n", r);
		bad = 1;
	}
	for (long i = 0; i < count; i += 997) {
		int s = fl_fence_fd_get_status(fd - (int)i);
		if (s != 0) {
			fprintf(stderr, "child: fence fd %d status %d\n", fd - (int)i, s);
			bad = 1;
			break;
		}
	}
	if (bad)
		c = 0;
	if (write(ready_w, &c, 1) != 1)
		_exit(1);
	close(ready_w);
	if (read(go_r, &c, 1) != 0)
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? atol(argv[1]) : 100000;
	long per_child = argc > 2 ? atol(argv[2]) : 50000;
	const char *daemon = argc > 3 ? argv[3] : "/fencelined";
	struct rlimit rl = { 1048576, 1048576 };
	struct snap s0, s1, s2;
	int ready[2], go[2], nchildren, pid, ok = 1;
	double t0, t1;
	FILE *f;

	f = fopen("/proc/sys/fs/nr_open", "w");
	if (f) {
		fprintf(f, "%ld\n", (long)rl.rlim_max);
		fclose(f);
	}
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		perror("setrlimit (falling back to the hard limit)");
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("# memprobe: %ld fences, %ld per child; own RLIMIT_NOFILE %lu/%lu\n", count,
	       per_child, (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max);
	setenv("FENCELINE_SOCKET", "/tmp/fl.sock", 1);
	setenv("FENCELINE_DAEMON", daemon, 1);
	setenv("FENCELINE_DAEMON_STDERR", "1", 1);
	pid = fl_daemon_connect();
	if (pid < 0) {
		fprintf(stderr, "fl_daemon_connect: %s\n", strerror(-pid));
		return 1;
	}
	printf("daemon_pid %d pid\n", pid);
	print_limits(pid);
	sleep(1);
	snap(pid, &s0, "before");

	nchildren = (int)((count + per_child - 1) / per_child);
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		return 1;
	pid_t *pids = calloc((size_t)nchildren, sizeof(*pids));
	t0 = now_s();
	for (int i = 0; i < nchildren; i++) {
		long share = count / nchildren + (i < count % nchildren);

		pids[i] = fork();
		if (pids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			holder(share, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (int i = 0; i < nchildren; i++) {
		char c;
		if (read(ready[0], &c, 1) != 1 || c != 1)
			ok = 0;
	}
	t1 = now_s();
	printf("fences_created %ld fences\nchildren %d count\ncreate_wall %.2f s\nall_pending %d "
	       "bool\n",
	       count, nchildren, t1 - t0, ok);
	sleep(2); /* let the daemon settle */
	snap(pid, &s1, "after");
	printf("delta_daemon_vmrss %ld KiB\n", s1.rss - s0.rss);
	printf("delta_daemon_rssanon %ld KiB\n", s1.anon - s0.anon);
	printf("delta_daemon_fds %ld fds\n", s1.fds - s0.fds);
	printf("delta_slab %ld KiB\n", s1.slab - s0.slab);
	printf("delta_sunreclaim %ld KiB\n", s1.sunreclaim - s0.sunreclaim);
	printf("delta_memavailable %ld KiB\n", s1.memavail - s0.memavail);
	printf("daemon_rss_delta_mib %.2f MiB\n", (double)(s1.rss - s0.rss) / 1024.0);
	printf("daemon_rss_per_fence %.1f bytes\n",
	       (double)(s1.rss - s0.rss) * 1024.0 / (double)count);
	printf("daemon_rss_delta_per_100k %.2f MiB\n",
	       (double)(s1.rss - s0.rss) / 1024.0 * 100000.0 / (double)count);
	printf("slab_per_fence %.1f bytes\n", (double)(s1.slab - s0.slab) * 1024.0 / (double)count);
	printf("daemon_fds_per_fence %.3f fds\n", (double)(s1.fds - s0.fds) / (double)count);
	fflush(stdout);

	close(go[1]);
	t0 = now_s();
	for (int i = 0; i < nchildren; i++) {
		int st;
		waitpid(pids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			printf("# child %d exit status 0x%x\n", i, st);
	}
	while (fl__bench_proc_fds(pid) > s0.fds + 16 && now_s() - t0 < 120)
		usleep(10000);
	t1 = now_s();
	printf("release_wall %.2f s\n", t1 - t0);
	sleep(1);
	snap(pid, &s2, "released");
	/* The daemon trims its heap at most once a second: look again after that. */
	sleep(2);
	snap(pid, &s2, "released_3s");
	printf("memprobe_rc %d code\n", ok ? 0 : 1);
	return ok ? 0 : 1;
}

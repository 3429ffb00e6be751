/* SPDX-License-Identifier: MIT */
/*
 * The test runner (see runner.h for the command line). The parent never
 * calls into fenceline, so it stays single-threaded and fork() is safe; each
 * test runs in its own child, which reports a failure reason to the parent
 * through a pipe so the parent can print one line per test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fenceline/fenceline.h>

#include "runner.h"

#if FL_TEST_UNDER_TSAN
#include <sanitizer/common_interface_defs.h>
#endif

#define DEFAULT_TIMEOUT_S 60
#define LEAK_GRACE_MS	  3000
#define LEAK_POLL_MS	  10
#define EXIT_SKIP	  77
#define MAX_REASON	  1024
#define MAX_TRACKED_FDS	  1024

/*
 * Set by tests/meson.build for the areas whose tests use the daemon: the
 * runner then connects before it counts fds. Elsewhere no daemon is started.
 */
#ifndef FL_TEST_NEEDS_DAEMON
#define FL_TEST_NEEDS_DAEMON 0
#endif

extern const struct fl_test __start_fl_tests[];
extern const struct fl_test __stop_fl_tests[];

#if FL_TEST_UNDER_TSAN
/*
 * ThreadSanitizer sleeps a second in every exiting process so late reports
 * can come in; with a forked child per test that is most of the run time.
 * And a test holding a fenceline fd runs multi-threaded (the core's fd
 * watcher), so a helper process it forks that then uses fenceline (and so
 * starts threads) would die without die_after_fork=0.
 * TSAN_OPTIONS still overrides both.
 */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "atexit_sleep_ms=0:die_after_fork=0";
}

/*
 * clang's ThreadSanitizer names code through an llvm-symbolizer process
 * that it starts the first time it needs a name (to match a suppression,
 * say a race inside Mesa), and the two pipes to it would read as the test's
 * fd leak: start it before the fds are counted. gcc's names code in
 * process and opens nothing.
 */
static void symbolizer_warm_up(void)
{
	char name[256];

	__sanitizer_symbolize_pc(__builtin_return_address(0), "%p %F %L", name, sizeof(name));
}

#else
static void symbolizer_warm_up(void)
{
}
#endif

#if FL_TEST_UNDER_TSAN || FL_TEST_UNDER_ASAN
/* Is every other thread of this process asleep in the kernel (state S)? */
static bool other_threads_asleep(void)
{
	DIR *d = opendir("/proc/self/task");
	long self = syscall(SYS_gettid);
	bool asleep = true;
	struct dirent *e;

	if (!d)
		return true;
	while (asleep && (e = readdir(d))) {
		char path[300], stat[512], *state;
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.' || atol(e->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone meanwhile */
		n = read(fd, stat, sizeof(stat) - 1);
		close(fd);
		if (n <= 0)
			continue;
		stat[n] = '\0';
		state = strrchr(stat, ')'); /* the name may hold anything */
		if (state && state[1] == ' ' && state[2] != 'S')
			asleep = false;
	}
	closedir(d);
	return asleep;
}

/*
 * The ThreadSanitizer and AddressSanitizer runtimes of gcc 12 and clang 14
 * do not lock their allocator around fork(): a child forked while another
 * thread held one of its size classes' locks (a thread allocating, or
 * ending and giving its cache back) hangs for ever the first time one of
 * its threads needs that class (under ASan: a test that forked its owner
 * right after the library's watcher went idle, in CI, no output for 60 s). The tests fork beside fenceline's threads on purpose; a fork
 * waits here (200 ms at most) until the process's other threads sleep.
 * Registered before the library's own handler, so that it runs after it
 * (prepare handlers run in reverse order), with the library's connection
 * lock already held.
 */
static void fork_quiesce(void)
{
	for (int i = 0; i < 200 && !other_threads_asleep(); i++)
		usleep(1000);
}

static void fork_quiesce_install(void)
{
	pthread_atfork(fork_quiesce, NULL, NULL);
}
#else
static void fork_quiesce_install(void)
{
}
#endif

/* The running test, and where the child writes its failure reason. */
static const struct fl_test *current;
static int reason_fd = -1;

static void report_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void report_reason(const char *fmt, ...)
{
	char buf[MAX_REASON];
	va_list ap;
	int n;

	if (reason_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	/* The pipe holds far more than MAX_REASON, so one write is enough. */
	if (write(reason_fd, buf, n) < 0)
		return;
}

void fl__test_fail(const char *file, int line, const char *fmt, ...)
{
	char msg[MAX_REASON];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s:%d: %s\n", file, line, msg);
	report_reason("%s:%d: %s", file, line, msg);
	fflush(stdout);
	fflush(stderr);
	_exit(1);
}

void fl_test_skip(const char *fmt, ...)
{
	char msg[MAX_REASON];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (reason_fd >= 0)
		report_reason("%s", msg);
	else
		printf("skip %s: %s\n", current ? current->name : "?", msg);
	fflush(stdout);
	fflush(stderr);
	_exit(EXIT_SKIP);
}

/* Calls @fn for every open fd except the one used to list them. */
static int for_each_fd(void (*fn)(int fd, void *data), void *data)
{
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir("/proc/self/fd");
	if (!dir)
		fl__test_fail(__FILE__, __LINE__, "opendir /proc/self/fd: %s", strerror(errno));
	while ((de = readdir(dir))) {
		char *end;
		long fd;

		if (de->d_name[0] == '.')
			continue;
		fd = strtol(de->d_name, &end, 10);
		if (*end || fd == dirfd(dir))
			continue;
		if (fn)
			fn((int)fd, data);
		n++;
	}
	closedir(dir);
	return n;
}

int fl_test_count_fds(void)
{
	return for_each_fd(NULL, NULL);
}

struct snapshot_fill {
	struct fl_test_fd_snapshot *snap;
	bool complete;
};

static void snapshot_fd(int fd, void *data)
{
	struct snapshot_fill *fill = data;
	struct fl_test_fd_snapshot *snap = fill->snap;
	char path[64];
	ssize_t len;

	if (snap->n == FL_TEST_SNAPSHOT_MAX) {
		fill->complete = false;
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	len = readlink(path, snap->links[snap->n], sizeof(snap->links[0]) - 1);
	if (len < 0)
		return; /* closed meanwhile */
	snap->links[snap->n][len] = '\0';
	snap->fds[snap->n++] = fd;
}

/* Returns false if there were too many fds to record. */
static bool snapshot_take(struct fl_test_fd_snapshot *snap)
{
	struct snapshot_fill fill = { .snap = snap, .complete = true };

	snap->n = 0;
	for_each_fd(snapshot_fd, &fill);
	return fill.complete;
}

void fl_test_fd_snapshot(struct fl_test_fd_snapshot *snap)
{
	if (!snapshot_take(snap))
		fl__test_fail(__FILE__, __LINE__, "more than %d open fds to snapshot",
			      FL_TEST_SNAPSHOT_MAX);
}

int fl_test_fds_new_since(const struct fl_test_fd_snapshot *base, char *what, size_t size)
{
	struct fl_test_fd_snapshot now;
	int count = 0;

	if (!snapshot_take(&now))
		return FL_TEST_SNAPSHOT_MAX;
	for (int i = 0; i < now.n; i++) {
		bool known = false;

		for (int j = 0; j < base->n && !known; j++)
			known = base->fds[j] == now.fds[i] && !strcmp(base->links[j], now.links[i]);
		if (known)
			continue;
		if (count++ == 0 && what)
			snprintf(what, size, "fd %d -> %s", now.fds[i], now.links[i]);
	}
	return count;
}

void fl__test_expect_new_fds(const char *file, int line, const struct fl_test_fd_snapshot *base,
			     int want)
{
	char what[128] = "";
	int count = fl_test_fds_new_since(base, what, sizeof(what));

	if (count != want)
		fl__test_fail(file, line, "%d new fds, want %d (first: %s)", count, want, what);
}

void fl__test_wait_fds_back(const char *file, int line, const struct fl_test_fd_snapshot *base)
{
	for (int i = 0;
	     i < LEAK_GRACE_MS / LEAK_POLL_MS && fl_test_fds_new_since(base, NULL, 0) > 0; i++)
		usleep(LEAK_POLL_MS * 1000);
	fl__test_expect_new_fds(file, line, base, 0);
}

struct fd_set_list {
	int fds[MAX_TRACKED_FDS];
	int n;
};

static void collect_fd(int fd, void *data)
{
	struct fd_set_list *set = data;

	if (set->n < MAX_TRACKED_FDS)
		set->fds[set->n++] = fd;
}

static bool fd_in(const struct fd_set_list *set, int fd)
{
	for (int i = 0; i < set->n; i++)
		if (set->fds[i] == fd)
			return true;
	return false;
}

struct leak_report {
	const struct fd_set_list *baseline;
	char text[MAX_REASON];
	size_t len;
};

static void describe_extra_fd(int fd, void *data)
{
	struct leak_report *r = data;
	char path[64], target[PATH_MAX];
	ssize_t n;
	int w;

	if (fd_in(r->baseline, fd))
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		n = snprintf(target, sizeof(target), "?");
	target[n] = '\0';
	if (r->len >= sizeof(r->text))
		return;
	w = snprintf(r->text + r->len, sizeof(r->text) - r->len, " %d -> %s", fd, target);
	if (w > 0)
		r->len += (size_t)w;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/*
 * The core starts its fd-watcher thread (and its epoll fd) the first time
 * an fd is exported and keeps them for the life of the process; do that
 * before the baseline so they are not counted as the test's leak.
 */
static void warm_up(void)
{
	struct fl_timeline *tl = NULL;
	struct fl_fence *fence = NULL;
	int fd, r;

	r = fl_sw_sync_timeline_create("runner-warm-up", 0, &tl);
	if (r < 0)
		fl__test_fail(__FILE__, __LINE__, "warm-up timeline: %s", strerror(-r));
	r = fl_sw_sync_fence_create(tl, 1, "runner-warm-up", &fence);
	if (r < 0)
		fl__test_fail(__FILE__, __LINE__, "warm-up fence: %s", strerror(-r));
	r = fl_fence_export_fd(fence, &fd);
	if (r < 0)
		fl__test_fail(__FILE__, __LINE__, "warm-up fence fd: %s", strerror(-r));
	close(fd);
	r = fl_timeline_export_fd(tl, &fd);
	if (r < 0)
		fl__test_fail(__FILE__, __LINE__, "warm-up timeline fd: %s", strerror(-r));
	close(fd);
	fl_fence_unref(fence);
	fl_timeline_unref(tl);
}

struct new_fds {
	const struct fd_set_list *before;
	struct leak_report report;
	int n;
};

static void find_new_fd(int fd, void *data)
{
	struct new_fds *nf = data;

	if (!fd_in(nf->before, fd))
		nf->n++;
}

/*
 * The warm-up closed its fds, but the core closes its own ends of them (and
 * its watcher's epoll fd, once idle) later, from the watcher thread: wait
 * for that, or they would vanish during the test and hide a leak of as many
 * fds. Anything the core still holds after the grace period is reported
 * and counted in the baseline.
 */
static void wait_warm_up_settled(const struct fd_set_list *before)
{
	long deadline = now_ms() + LEAK_GRACE_MS;
	struct new_fds nf;

	for (;;) {
		nf = (struct new_fds){ .before = before };
		for_each_fd(find_new_fd, &nf);
		if (nf.n == 0)
			return;
		if (now_ms() >= deadline)
			break;
		usleep(LEAK_POLL_MS * 1000);
	}
	nf.report.baseline = before;
	for_each_fd(describe_extra_fd, &nf.report);
	fprintf(stderr, "note: fenceline still holds fds after the warm-up:%s\n", nf.report.text);
}

/* Runs the test body in this process with the fd-leak check around it. */
static void run_body(const struct fl_test *t)
{
	static struct fd_set_list before_warm_up, baseline;
	struct leak_report report = { .baseline = &baseline };
	int base_count, count;
	long deadline;

	current = t;
	/*
	 * The library keeps one connection to the daemon for the life of the
	 * process: in an area that uses the daemon, make it before anything is
	 * counted, unless the test runs in in-process mode (it must then never
	 * start a daemon). In other areas a connection the test makes is a
	 * new fd, so the leak check below catches a test that needs one.
	 */
	if (FL_TEST_NEEDS_DAEMON && fl_mode_get() == FL_MODE_DAEMON) {
		int r = fl_daemon_connect();

		if (r < 0)
			fl__test_fail(__FILE__, __LINE__, "daemon connection: %s", strerror(-r));
	}
	symbolizer_warm_up();
	for_each_fd(collect_fd, &before_warm_up);
	warm_up();
	wait_warm_up_settled(&before_warm_up);
	base_count = for_each_fd(collect_fd, &baseline);

	t->run();

	/* Its connection was counted, but not the fence fds it keeps ready since. */
	if (FL_TEST_NEEDS_DAEMON && fl_mode_get() == FL_MODE_DAEMON) {
		fl_daemon_disconnect();
		fl_daemon_connect();
	}
	/* The core closes its side of closed fds asynchronously: give it time. */
	deadline = now_ms() + LEAK_GRACE_MS;
	while ((count = fl_test_count_fds()) > base_count && now_ms() < deadline)
		usleep(LEAK_POLL_MS * 1000);
	if (count <= base_count)
		return;
	for_each_fd(describe_extra_fd, &report);
	fprintf(stderr, "%s: fd leak: %d open fds, %d before the test:%s\n", t->name, count,
		base_count, report.text);
	report_reason("fd leak:%s", report.text);
	fflush(stdout);
	fflush(stderr);
	_exit(1);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static char *make_runtime_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (asprintf(&dir, "%s/fl-test-XXXXXX", tmp) < 0)
		return NULL;
	if (!mkdtemp(dir)) {
		fprintf(stderr, "mkdtemp %s: %s\n", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	return dir;
}

static void remove_runtime_dir(char *dir)
{
	if (!dir)
		return;
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static double timeout_multiplier(void)
{
	const char *s = getenv("FL_TEST_TIMEOUT_MULTIPLIER");
	char *end;
	double m;

	if (!s || !*s)
		return 1.0;
	m = strtod(s, &end);
	if (*end || m <= 0) {
		fprintf(stderr, "ignoring bad FL_TEST_TIMEOUT_MULTIPLIER=%s\n", s);
		return 1.0;
	}
	return m;
}

enum outcome {
	OUTCOME_PASS,
	OUTCOME_FAIL,
	OUTCOME_SKIP,
};

static void read_reason(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	/*
	 * Non-blocking: a process the test started outside its group may
	 * still hold the write end, but the child itself has exited.
	 */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
}

/*
 * Waits for @pid until @timeout_ms; SIGCHLD is blocked in the parent so
 * sigtimedwait() can sleep on it. Returns false on timeout.
 */
static bool wait_child(pid_t pid, long timeout_ms, int *ret_status)
{
	long deadline = now_ms() + timeout_ms;
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		struct timespec ts;
		long left;
		pid_t r;

		r = waitpid(pid, ret_status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR) {
			perror("waitpid");
			exit(1);
		}
		left = deadline - now_ms();
		if (left <= 0)
			return false;
		/* Wake at least every second in case a SIGCHLD was merged away. */
		if (left > 1000)
			left = 1000;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (left % 1000) * 1000000L;
		sigtimedwait(&chld, NULL, &ts);
	}
}

static void child_main(const struct fl_test *t, int pipe_fd, const char *runtime_dir)
{
	sigset_t chld;

	/* Die with the runner, and let the runner kill anything we spawn. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setpgid(0, 0);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &chld, NULL);
	if (runtime_dir)
		setenv("XDG_RUNTIME_DIR", runtime_dir, 1);
	reason_fd = pipe_fd;
	run_body(t);
	fflush(stdout);
	fflush(stderr);
	/* exit(), not _exit(): LeakSanitizer reports from an atexit hook. */
	exit(0);
}

static enum outcome run_forked(const struct fl_test *t, double multiplier)
{
	char reason[MAX_REASON] = "";
	char *runtime_dir;
	bool finished;
	long timeout_ms;
	int pipefd[2];
	int status = 0;
	pid_t pid;
	bool failed;

	timeout_ms = (long)((t->timeout_s ? t->timeout_s : DEFAULT_TIMEOUT_S) * multiplier * 1000);
	runtime_dir = make_runtime_dir();
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		perror("pipe2");
		exit(1);
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		close(pipefd[0]);
		child_main(t, pipefd[1], runtime_dir);
	}
	close(pipefd[1]);
	/* Both sides set the group, so whichever runs first wins the race. */
	setpgid(pid, pid);

	finished = wait_child(pid, timeout_ms, &status);
	if (!finished) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	/* Anything the test left running in its process group goes too. */
	kill(-pid, SIGKILL);
	read_reason(pipefd[0], reason, sizeof(reason));
	close(pipefd[0]);
	remove_runtime_dir(runtime_dir);

	if (finished && WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP) {
		printf("skip %s: %s\n", t->name, reason[0] ? reason : "no reason given");
		return OUTCOME_SKIP;
	}
	failed = !finished || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	if (!failed && !t->must_fail) {
		printf("ok %s\n", t->name);
		return OUTCOME_PASS;
	}
	if (failed && t->must_fail) {
		printf("ok %s (failed as expected)\n", t->name);
		return OUTCOME_PASS;
	}
	if (!failed) {
		printf("FAIL %s (passed, but must fail)\n", t->name);
	} else if (!finished) {
		printf("FAIL %s (timeout after %ld ms)\n", t->name, timeout_ms);
	} else if (WIFSIGNALED(status)) {
		printf("FAIL %s (killed by signal %d, %s)\n", t->name, WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
	} else if (reason[0]) {
		printf("FAIL %s (%s)\n", t->name, reason);
	} else {
		printf("FAIL %s (exit status %d)\n", t->name, WEXITSTATUS(status));
	}
	return OUTCOME_FAIL;
}

static const struct fl_test *find_test(const char *name)
{
	for (const struct fl_test *t = __start_fl_tests; t < __stop_fl_tests; t++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

static int run_no_fork(const char *name)
{
	const struct fl_test *t = find_test(name);
	char *runtime_dir;

	if (!t) {
		fprintf(stderr, "no test named '%s'\n", name);
		return 1;
	}
	runtime_dir = make_runtime_dir();
	if (runtime_dir)
		setenv("XDG_RUNTIME_DIR", runtime_dir, 1);
	run_body(t);
	remove_runtime_dir(runtime_dir);
	printf("ok %s%s\n", t->name, t->must_fail ? " (but it must fail)" : "");
	return t->must_fail ? 1 : 0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [NAME...]\n"
		"       %s --no-fork NAME\n"
		"       %s --list\n",
		argv0, argv0, argv0);
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	double multiplier;
	sigset_t chld;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	fork_quiesce_install();
	/* Each test has its own runtime dir, so its own daemon: let them go soon. */
	setenv("FENCELINE_IDLE_MS", "500", 0);
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (const struct fl_test *t = __start_fl_tests; t < __stop_fl_tests; t++)
			printf("%s\n", t->name);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--no-fork") == 0)
		return run_no_fork(argv[2]);
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			usage(argv[0]);
			return 1;
		}
		if (!find_test(argv[i])) {
			fprintf(stderr, "no test named '%s'\n", argv[i]);
			return 1;
		}
	}

	multiplier = timeout_multiplier();
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);

	for (const struct fl_test *t = __start_fl_tests; t < __stop_fl_tests; t++) {
		bool selected = argc == 1;

		for (i = 1; i < argc && !selected; i++)
			selected = strcmp(argv[i], t->name) == 0;
		if (!selected)
			continue;
		switch (run_forked(t, multiplier)) {
		case OUTCOME_PASS:
			passed++;
			break;
		case OUTCOME_FAIL:
			failed++;
			break;
		case OUTCOME_SKIP:
			skipped++;
			break;
		}
	}

	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	if (failed)
		return 1;
	if (skipped && !passed)
		return EXIT_SKIP;
	return 0;
}

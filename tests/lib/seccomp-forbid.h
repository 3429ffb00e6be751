/* SPDX-License-Identifier: MIT */
/*
 * Seccomp filters for tests: syscalls that a process must not make from a
 * point on, to count syscalls no load can change, or to act as a container
 * runtime's profile does. Header-only, so that a plain-ioctl test linked
 * with nothing of ours (tests/kabi) can use it.
 */
#ifndef FL_TESTS_SECCOMP_FORBID_H
#define FL_TESTS_SECCOMP_FORBID_H

#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define FL_TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FL_TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define FL_TEST_FORBID_MAX 8

/* Whether fl_test_seccomp_forbid() knows this machine's arch. */
static inline int fl_test_can_forbid(void)
{
#ifdef FL_TEST_AUDIT_ARCH
	return 1;
#else
	return 0;
#endif
}

/*
 * fl_test_seccomp_forbid() - from here on (this process and its children),
 * the @n syscalls @nrs (at most FL_TEST_FORBID_MAX) return @action
 * (SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO | EPERM, ...); others run.
 * Return: 0, or -1 (no filter for this arch, too many, or the kernel
 * refused it: skip the check).
 */
static inline int fl_test_seccomp_forbid(const long *nrs, unsigned int n, uint32_t action)
{
#ifdef FL_TEST_AUDIT_ARCH
	struct sock_filter code[6 + FL_TEST_FORBID_MAX];
	struct sock_fprog prog = { 0, code };
	unsigned int k = 0;

	if (n > FL_TEST_FORBID_MAX)
		return -1;
	code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, arch));
	code[k++] =
		(struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FL_TEST_AUDIT_ARCH, 1, 0);
	code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, nr));
	/* A match jumps over the matches left and the allow, to @action. */
	for (unsigned int i = 0; i < n; i++)
		code[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							 (uint32_t)nrs[i], (uint8_t)(n - i), 0);
	code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
	prog.len = (unsigned short)k;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
			       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0
		       ? 0
		       : -1;
#else
	(void)nrs;
	(void)n;
	(void)action;
	return -1;
#endif
}

/*
 * fl_test_forbid_scratch_pipes() - from here on, the process dies of SIGSYS
 * at its first pipe(), pipe2() or tee(): what peeking a pipe fence's record
 * for its timestamp takes (fl__pipe_peek_record()).
 * Return: as fl_test_seccomp_forbid().
 */
static inline int fl_test_forbid_scratch_pipes(void)
{
	static const long nrs[] = {
		SYS_pipe2,
		SYS_tee,
#ifdef SYS_pipe
		SYS_pipe,
#endif
	};

	return fl_test_seccomp_forbid(nrs, sizeof(nrs) / sizeof(nrs[0]), SECCOMP_RET_KILL_PROCESS);
}

#endif /* FL_TESTS_SECCOMP_FORBID_H */

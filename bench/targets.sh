#!/usr/bin/env bash
# Issue 20's targets (docs/benchmarks.md, "Targets"), each a ratio from one
# fl-bench run of sections daemon and heap on this machine, with its limit
# and whether it is met. The kernel-uapi targets need the kernel anchor's
# figures: bench/kabi/syncbench-ratio.sh prints those.
#
# Usage: bench/targets.sh [BUILD_DIR]   (default: build)
#        FROM=file bench/targets.sh     (the table of a kept fl-bench output)
set -eu
build=${1:-build}
out=${FROM:-}
if [ -z "$out" ]; then
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	"$build/bench/fl-bench" -s daemon,heap >"$out"
fi

grep -E '^# (fl-bench|nproc|kernel|cpu)' "$out" || true
awk '
# bound: the floor (for <=) or ceiling (for >=) of the ratio in the same run, what
# no design that keeps the guarantees can beat here (docs/benchmarks.md,
# "Floors"); a target beyond it cannot be met on this machine.
function row(what, name, op, limit, bound,    v, ok, b, past) {
	if (!(name in fig)) {
		printf "%-58s %10s %-8s %s\n", what, "-", op " " limit, "not measured"
		return
	}
	v = fig[name]
	ok = op == "<=" ? v <= limit : v >= limit
	b = ""
	if (bound != "" && (bound in fig)) {
		past = op == "<=" ? fig[bound] > limit : fig[bound] < limit
		b = sprintf(" (%s %s%s)", op == "<=" ? "floor" : "ceiling", fig[bound],
			    past ? ", beyond the limit" : "")
	}
	printf "%-58s %10s %-8s %s%s\n", what, v, op " " limit, ok ? "met" : "missed", b
	met += ok
	all++
}
/^[a-z]/ { fig[$1] = $2 }
END {
	printf "%-58s %10s %-8s %s\n", "target (issue 20)", "ratio", "limit", "result"
	row("merge across processes / (in-process merge + poll(0))",
	    "ratio_daemon_merge_call_over_inproc_merge_poll0_p50", "<=", 3,
	    "ratio_floor_merge_fd_checks_over_inproc_merge_poll0_p50")
	row("info, pending 1 point / (in-process info + poll(0))",
	    "ratio_daemon_info_1pt_fresh_over_local_plus_poll0", "<=", 3)
	row("info, signalled 2-point merge / (in-process + poll(0))",
	    "ratio_daemon_info_2pt_signalled_over_local_plus_poll0", "<=", 3)
	row("info, active 2-point merge / (in-process + poll(0))",
	    "ratio_daemon_info_2pt_over_local_plus_poll0", "<=", 3)
	row("non-owner wake / eventfd across CPUs, p50",
	    "ratio_daemon_wake_fence_nonowner_over_eventfd_cross_p50", "<=", 1.5,
	    "ratio_floor_wake_nonowner_over_eventfd_cross_p50")
	row("owner wake / eventfd on one CPU, p50",
	    "ratio_daemon_wake_fence_over_eventfd_same_p50", "<=", 1.5,
	    "ratio_floor_wake_owner_over_eventfd_same_p50")
	row("daemon throughput, 32 clients / 1 client",
	    "ratio_daemon_tput_32_over_1clients", ">=", 3,
	    "daemon_tput_32_over_1clients_ceiling")
	n = split("4k 64k 1m 8m 33m", sz, " ")
	for (i = 1; i <= n; i++) {
		on = "heap_pooled_" sz[i] "_pooled"
		r = "ratio_heap_pooled_" sz[i] "_over_bare_paired"
		if (!(r in fig))
			continue
		if ((on in fig) && fig[on] == 0) {
			printf "%-58s %10s %-8s %s\n", "pooled heap " sz[i] " / bare memfd (paired)",
			       fig[r], "<= 1", "met (pool off)"
			met++
			all++
		} else {
			row("pooled heap " sz[i] " / bare memfd (paired)", r, "<=", 1)
		}
	}
	printf "%d of %d met\n", met, all
}' "$out"

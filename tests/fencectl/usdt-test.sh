#!/bin/sh
# SPDX-License-Identifier: MIT
# The USDT probes of docs/tracing.md are in the library and the daemon (ELF
# stapsdt notes, which bpftrace and perf read); where bpftrace can attach
# (root, a kernel with uprobes), examples/bpftrace/fence-waits.bt also runs
# against a traced pipeline and must count its waits and signals.
#
# usage: usdt-test.sh HAVE_SDT LIBFENCELINE FENCELINED SCENARIO BT_SCRIPT
set -u
have_sdt=$1 lib=$2 daemon=$3 scenario=$4 script=$5

if [ "$have_sdt" != 1 ]; then
	echo "built without sys/sdt.h (Debian: systemtap-sdt-dev): no probes"
	exit 77
fi
fail=0
probes() { readelf -n "$1" | sed -n 's/^ *Name: //p' | sort -u | tr '\n' ' '; }
lib_probes=$(probes "$lib")
daemon_probes=$(probes "$daemon")
for p in fence_create fence_merge fence_signal timeline_signal timeline_dead wait_begin wait_end \
	fd_wait_begin fd_wait_end; do
	case " $lib_probes" in *" $p "*) ;; *) echo "FAIL: $lib has no probe $p"; fail=1 ;; esac
done
for p in fence_create fence_merge fence_signal timeline_signal timeline_dead deadlock; do
	case " $daemon_probes" in *" $p "*) ;; *) echo "FAIL: $daemon has no probe $p"; fail=1 ;; esac
done
readelf -n "$lib" | grep -q 'Provider: fenceline' || { echo "FAIL: provider is not fenceline"; fail=1; }
echo "library probes: $lib_probes"
echo "daemon probes: $daemon_probes"

if command -v bpftrace >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
	timeout 30 bpftrace -e 'BEGIN { exit(); }' >/dev/null 2>&1; then
	tmp=$(mktemp -d)
	export FENCELINE_SOCKET="$tmp/fl.sock"
	timeout -s INT 20 bpftrace "$script" "$lib" "$daemon" >"$tmp/bt.txt" 2>&1 &
	bt=$!
	# Attached once it says so; then a pipeline with 12 blocking waits.
	for _ in $(seq 100); do grep -q Attaching "$tmp/bt.txt" && break; sleep 0.1; done
	sleep 1
	"$scenario" pipeline 6 >/dev/null || { echo "FAIL: pipeline"; fail=1; }
	kill -INT $bt
	wait $bt
	cat "$tmp/bt.txt"
	grep -q '@wait_us\[observe-scenari\]' "$tmp/bt.txt" || { echo "FAIL: no waits seen"; fail=1; }
	grep -q '@fences_completed\[1\]: ' "$tmp/bt.txt" || { echo "FAIL: no signals seen"; fail=1; }
	rm -rf "$tmp"
else
	echo "bpftrace cannot attach here: only the probes' presence was checked"
fi
exit $fail

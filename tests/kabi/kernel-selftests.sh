#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Builds the Linux kernel's own sync selftests (tools/testing/selftests/sync)
# and runs them under libfenceline-kabi.so, through fenceline-run. Passes
# only if every test in the TAP output is ok, none skipped.
#
# Usage: kernel-selftests.sh WORKDIR FENCELINE-RUN
#   WORKDIR        where the sources are extracted (and kept for the next run),
#                  the binary built and the daemon's socket made
#   FENCELINE-RUN  the fenceline-run wrapper (or set FENCELINE_RUN)
# Environment:
#   LINUX_SRC           an extracted kernel tree to take the selftests from;
#                       else the newest linux-source-X.Y.tar.xz (or .tar.bz2),
#                       Debian's linux-source-X.Y package, in
#   FENCELINE_KSRC_DIR  (default /usr/src)
#   CC                  the compiler (default cc)
#   FENCELINE_KABI, FENCELINE_DAEMON  as for fenceline-run; FENCELINE_SOCKET
#                       defaults to WORKDIR/fenceline.sock, FENCELINE_IDLE_MS to 500
# Exits 0 when all pass, 77 (meson's SKIP) when no kernel source is found,
# 1 otherwise (including the selftests skipping themselves: under the preload
# the sync framework must be there).
set -uo pipefail

me=kernel-selftests
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 WORKDIR [FENCELINE-RUN]" >&2
	exit 2
fi
work=$1
run=${2:-${FENCELINE_RUN:-}}
if [ -z "$run" ]; then
	echo "$me: no fenceline-run given (second argument or FENCELINE_RUN)" >&2
	exit 1
fi
mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd) || exit 1

# The selftests directory: LINUX_SRC's, or one extracted from the tarball.
sel=
if [ -n "${LINUX_SRC:-}" ]; then
	sel=$LINUX_SRC/tools/testing/selftests
	if [ ! -f "$sel/sync/sync_test.c" ] || [ ! -f "$sel/kselftest.h" ]; then
		echo "$me: LINUX_SRC=$LINUX_SRC has no tools/testing/selftests/sync/sync_test.c" >&2
		exit 1
	fi
	echo "$me: selftests from $sel"
else
	ksrc=${FENCELINE_KSRC_DIR:-/usr/src}
	tarball=$(for f in "$ksrc"/linux-source-*.tar.xz "$ksrc"/linux-source-*.tar.bz2; do
		if [ -f "$f" ]; then echo "$f"; fi
	done | sort -V | tail -n 1)
	if [ -z "$tarball" ]; then
		echo "$me: SKIP: no kernel source: set LINUX_SRC to an extracted kernel tree," \
			"or install Debian's linux-source-X.Y package" \
			"(apt-get install linux-source-6.1), which puts $ksrc/linux-source-X.Y.tar.xz"
		exit 77
	fi
	sel=$work/src/selftests
	stamp=$work/src.stamp
	id="$tarball $(stat -c '%s %Y' "$tarball")"
	if [ -f "$sel/sync/sync_test.c" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$id" ]; then
		echo "$me: selftests from $tarball (extracted before)"
	else
		echo "$me: extracting the sync selftests from $tarball"
		start=$SECONDS
		rm -rf "$work/src" "$work/src.tmp" "$stamp"
		mkdir -p "$work/src.tmp" || exit 1
		# The whole stream is decompressed either way; xz -T decompresses
		# the multi-block .xz that Debian ships on every core.
		case $tarball in
		*.xz) if command -v xz >/dev/null; then unpack=(xz -T0 -dc); else unpack=(unxz -c); fi ;;
		*) unpack=(bzip2 -dc) ;;
		esac
		# sync_test.c and its files include only each other, kselftest.h
		# and the system's headers (<linux/sync_file.h> from linux-libc-dev).
		if ! "${unpack[@]}" "$tarball" | tar -x -C "$work/src.tmp" --wildcards \
			'*/tools/testing/selftests/sync/*' '*/tools/testing/selftests/kselftest.h'; then
			echo "$me: extracting $tarball failed" >&2
			exit 1
		fi
		found=$(find "$work/src.tmp" -path '*/tools/testing/selftests/sync/sync_test.c' | head -n 1)
		if [ -z "$found" ] || [ ! -f "${found%/sync/sync_test.c}/kselftest.h" ]; then
			echo "$me: $tarball has no tools/testing/selftests/sync/sync_test.c" >&2
			exit 1
		fi
		mkdir -p "$work/src" && mv "${found%/sync/sync_test.c}" "$sel" && rm -rf "$work/src.tmp" ||
			exit 1
		echo "$id" >"$stamp"
		echo "$me: extracted in $((SECONDS - start)) s"
	fi
fi

# Built as the selftests' Makefile does (its lib.mk needs the whole tree),
# plus -rdynamic: the selftests carry their own libsync (sync/sync.c defines
# sw_sync_timeline_create(), sync_wait(), sync_merge(), ...), and exported,
# those names come first in the lookup scope; the preload must still never
# call them (docs/kabi.md, "Programs that carry their own libsync").
start=$SECONDS
bin=$work/sync_test
rm -f "$bin"
# shellcheck disable=SC2086 # CC may be a command with arguments (ccache cc).
if ! ${CC:-cc} -O2 -g -std=gnu89 -pthread -rdynamic -Wall -Wextra -I"$sel" -o "$bin" \
	"$sel"/sync/*.c; then
	echo "$me: building sync_test failed" >&2
	exit 1
fi
echo "$me: built sync_test in $((SECONDS - start)) s"

export FENCELINE_SOCKET=${FENCELINE_SOCKET:-$work/fenceline.sock}
export FENCELINE_IDLE_MS=${FENCELINE_IDLE_MS:-500}
log=$work/sync_test.log
start=$SECONDS
sh "$run" "$bin" | tee "$log"
status=${PIPESTATUS[0]}
echo "$me: sync_test exited $status after $((SECONDS - start)) s"

# Judge the TAP: a plan of N > 0 tests, N "ok" lines, no "not ok", no SKIP,
# and "# Totals: pass:N fail:0 ... skip:0 error:0".
plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
oks=$(grep -c '^ok [0-9]' "$log")
not_oks=$(grep -c '^not ok' "$log")
skips=$(grep -c -i '# *skip' "$log")
totals=$(grep '^# Totals:' "$log" | tail -n 1)
pass=$(echo "$totals" | sed -n 's/.* pass:\([0-9][0-9]*\).*/\1/p')
ok=1
why=
if [ "$status" != 0 ]; then ok=0; why="$why; exit status $status"; fi
if [ -z "$plan" ]; then ok=0; why="$why; no TAP plan"; elif [ "$plan" = 0 ]; then ok=0; why="$why; plan 1..0"; fi
if [ "$oks" != "$plan" ]; then ok=0; why="$why; $oks of ${plan:-?} tests ok"; fi
if [ "$not_oks" != 0 ]; then ok=0; why="$why; $not_oks not ok"; fi
if [ "$skips" != 0 ]; then ok=0; why="$why; skipped (the preload must provide sw_sync)"; fi
case $totals in
*" fail:0 "*) ;;
*) ok=0; why="$why; totals: '${totals:-none}'" ;;
esac
case $totals in
*" skip:"* | *" error:"*)
	case $totals in *" skip:0 "*) ;; *) ok=0; why="$why; totals report skips" ;; esac
	case $totals in *" error:0"*) ;; *) ok=0; why="$why; totals report errors" ;; esac
	;;
esac
if [ -z "$pass" ] || [ "$pass" != "$plan" ]; then ok=0; why="$why; pass:${pass:-?} of ${plan:-?}"; fi
if [ "$ok" != 1 ]; then
	echo "$me: FAILED${why/#;/:}" >&2
	exit 1
fi
echo "$me: all $plan kernel sync selftests passed"
exit 0

#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs a libFuzzer target for a bounded time on a scratch copy of its seed
# corpus, so the new inputs it finds never land in the source tree. Exits 0
# if the fuzzer found nothing, and 1 when it found a crash, a leak or a
# timeout, whose input it leaves in ARTIFACT_DIR (replay it with
# `FUZZER FILE`). libFuzzer's own failure status is 77, which meson would
# count as a skip: hence -error_exitcode.
#
# usage: run-libfuzzer.sh FUZZER CORPUS_DIR ARTIFACT_DIR [LIBFUZZER_OPTION]...
set -u

if [ $# -lt 3 ]; then
	echo "usage: $0 FUZZER CORPUS_DIR ARTIFACT_DIR [LIBFUZZER_OPTION]..." >&2
	exit 2
fi
fuzzer=$1
corpus=$2
artifacts=$3
shift 3

work=$(mktemp -d "${TMPDIR:-/tmp}/fl-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cp "$corpus"/* "$work"/ || exit 1
mkdir -p "$artifacts" || exit 1

status=0
"$fuzzer" -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$artifacts/" "$@" "$work" ||
	status=$?
if [ "$status" -ne 0 ]; then
	echo "$(basename "$fuzzer") failed (exit $status); inputs it saved:" >&2
	ls -1t "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* \
		"$artifacts"/oom-* >&2 2>/dev/null
	exit 1
fi

#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Fails, showing a diff, when the dynamic symbols exported by the shared
# library differ from the committed list: every ABI change must be made on
# purpose, by updating symbols.txt in the same commit.
#
# Usage: symbols-test.sh LIBFENCELINE.SO SYMBOLS.TXT
# To refresh the list after an intended change:
#   nm -D --defined-only build/src/libfenceline.so | awk '{print $3}' | LC_ALL=C sort \
#       > tests/symbols.txt
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 LIBRARY.so SYMBOLS.txt" >&2
	exit 2
fi
lib=$1
expected=$2
NM=${NM:-nm}

actual=$(mktemp)
trap 'rm -f "$actual"' EXIT INT TERM

"$NM" -D --defined-only "$lib" | awk '{print $3}' | LC_ALL=C sort >"$actual"
if [ ! -s "$actual" ]; then
	echo "$0: no dynamic symbols read from '$lib'" >&2
	exit 1
fi

if ! diff -u "$expected" "$actual"; then
	echo "$0: exported symbols of '$lib' differ from '$expected'" >&2
	echo "(lines with - are missing from the library, + are new exports)" >&2
	exit 1
fi

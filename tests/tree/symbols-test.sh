#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Fails, showing a diff, when the dynamic symbols exported by the shared
# library differ from the committed list: every ABI change must be made on
# purpose, by updating symbols.txt in the same commit.
#
# Also fails when a call inside fenceline binds by name at run time to a
# function fenceline exports: a program that defines and exports one of
# those names (its own libsync or libion, linked with -rdynamic) would get
# the call (docs/kabi.md, "Programs that carry their own libsync"). So
#   - libfenceline.so has no dynamic relocation against a symbol it defines
#     (it is linked with -Bsymbolic-functions);
#   - libfenceline-kabi.so, when given, has none against a symbol that
#     libfenceline.so or the preload itself defines (it looks libfenceline's
#     functions up in libfenceline.so, src/kabi/kabi.h FL_KABI_CALLS).
#
# Usage: symbols-test.sh LIBFENCELINE.SO SYMBOLS.TXT [LIBFENCELINE-KABI.SO]
# To refresh the list after an intended change:
#   nm -D --defined-only build/src/libfenceline.so | awk '{print $3}' | LC_ALL=C sort \
#       > tests/symbols.txt
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 LIBRARY.so SYMBOLS.txt [KABI.so]" >&2
	exit 2
fi
lib=$1
expected=$2
kabi=${3:-}
NM=${NM:-nm}
READELF=${READELF:-readelf}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
actual=$tmp/actual

"$NM" -D --defined-only "$lib" | awk '{print $3}' | LC_ALL=C sort >"$actual"
if [ ! -s "$actual" ]; then
	echo "$0: no dynamic symbols read from '$lib'" >&2
	exit 1
fi

status=0
if ! diff -u "$expected" "$actual"; then
	echo "$0: exported symbols of '$lib' differ from '$expected'" >&2
	echo "(lines with - are missing from the library, + are new exports)" >&2
	status=1
fi

# The names of the symbols that the dynamic relocations of $1 refer to (a
# relocation with a symbol has its value in column 4 and its name in 5).
reloc_names() {
	"$READELF" -rW "$1" | awk 'NF >= 5 && $4 ~ /^[0-9a-f]+$/ { sub(/@.*/, "", $5); print $5 }' |
		LC_ALL=C sort -u
}

# The names $1 defines in its dynamic symbol table, without versions.
defined_names() {
	"$NM" -D --defined-only "$1" | awk '{ sub(/@.*/, "", $3); print $3 }' | LC_ALL=C sort -u
}

# Fails when a relocation of $1 names a symbol in the file $2 (sorted names).
check_binds() {
	reloc_names "$1" >"$tmp/relocs"
	if [ ! -s "$tmp/relocs" ]; then
		echo "$0: no dynamic relocations read from '$1'" >&2
		status=1
		return
	fi
	LC_ALL=C comm -12 "$tmp/relocs" "$2" >"$tmp/bound"
	if [ -s "$tmp/bound" ]; then
		echo "$0: '$1' calls these fenceline functions by name, so a program that" \
			"exports the same names would get the calls:" >&2
		sed 's/^/  /' "$tmp/bound" >&2
		status=1
	fi
}

defined_names "$lib" >"$tmp/lib-names"
check_binds "$lib" "$tmp/lib-names"
if [ -n "$kabi" ]; then
	defined_names "$kabi" | LC_ALL=C sort -u - "$tmp/lib-names" >"$tmp/all-names"
	check_binds "$kabi" "$tmp/all-names"
fi
exit $status

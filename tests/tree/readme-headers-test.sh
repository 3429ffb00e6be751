#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The README's table of public headers names every header installed under
# include/fenceline/ (as `name.h`, or `driver/name.h`) and no header that
# is gone: a new header without a line there, or a removed one still
# listed, fails.
#
# usage: readme-headers-test.sh SOURCE_ROOT

set -u
root=$(cd "${1:-.}" && pwd) || exit 1
readme=$root/README.md
status=0

cd "$root/include/fenceline" || exit 1
for h in $(find . -name '*.h' | sed 's|^\./||' | LC_ALL=C sort); do
	if ! grep -q "^| \`$h\` |" "$readme"; then
		echo "README.md: no line for include/fenceline/$h in the header table" >&2
		status=1
	fi
done
for h in $(sed -n 's/^| `\([a-z_/-]*\.h\)` |.*/\1/p' "$readme"); do
	if [ ! -f "$h" ]; then
		echo "README.md: lists $h, which include/fenceline/ does not have" >&2
		status=1
	fi
done
exit $status

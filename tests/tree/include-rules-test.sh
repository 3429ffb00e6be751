#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Checks the include rules of docs/architecture.md that the per-target
# include directories cannot catch on their own:
#   - nothing under src/ reaches up with #include "../";
#   - src/drivers, src/compat and src/egl include only <fenceline/...>, system headers
#     and headers of their own folder, never a core-private header; a driver
#     may also include the headers the in-tree drivers share (src/drivers/*.h),
#     which are held to the same rules.
#
# usage: include-rules-test.sh SOURCE_ROOT

set -u
root=${1:-.}
cd "$root/src" || exit 1
status=0

fail()
{
	echo "$1: $2" >&2
	status=1
}

# Every header under src/ is private to some part: a driver or compat file
# naming one by <...> would be reaching into another part.
private_headers=$(find . -name '*.h' -exec basename {} \; | sort -u)

is_system_header()
{
	printf '#include <%s>\n' "$1" | ${CC:-cc} -E -x c - >/dev/null 2>&1
}

check_file()
{
	file=$1
	dir=$(dirname "$file")
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1/p' "$file" |
	while IFS= read -r inc; do
		name=${inc#?}
		name=${name%?}
		case $inc in
		\"*)
			case $name in
			*..*) fail "$file" "includes $inc from outside its folder" ;;
			*)
				[ -f "$dir/$name" ] || { case $file in
					drivers/*) [ -f "drivers/$name" ] ;;
					*) false ;;
					esac; } ||
					fail "$file" "includes $inc, which is not in its own folder"
				;;
			esac
			;;
		\<fenceline/*) ;;
		*)
			for h in $private_headers; do
				[ "${name##*/}" = "$h" ] || continue
				# A private header may share its name with a system one
				# (util's time.h): only the system one is allowed.
				is_system_header "$name" ||
					fail "$file" "includes the private header $inc"
			done
			;;
		esac
	done
}

if grep -rn --include='*.c' --include='*.h' '#[[:space:]]*include[[:space:]]*"\.\./' . >&2; then
	echo 'src/ must not include "../" paths: use the include directories meson gives' >&2
	status=1
fi

files=$(find drivers compat egl -name '*.[ch]' 2>/dev/null | sort)
for f in $files; do
	# The while loop above runs in a subshell, so it reports through output.
	out=$(check_file "$f" 2>&1)
	if [ -n "$out" ]; then
		echo "$out" >&2
		status=1
	fi
done

exit $status

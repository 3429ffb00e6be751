#!/bin/sh
# syncbench-ratio.sh [BUILD_DIR]: the kernel anchor's own probe, run under
# fenceline-run on this machine, against the kernel's figures (issue 20,
# item 4: every call but timeline creation <= 2x the kernel's cost in
# getppids). Builds syncbench from the anchor's syncbench.c (never kept in
# the tree), runs `syncbench -s base,tput` RUNS times through the build
# tree's preload and daemon, and prints one row per figure: ours in
# getppids of the same run (range over the runs), the kernel's from the
# anchor's RESULTS.md (its "x getppid" column), and the ratio.
#
# Environment: ANCHOR (the anchor's folder, /work/shared/anchors/kernel-qemu),
# RUNS (3), SB_N (5000 operations a repetition), SB_R (5 repetitions, median),
# TARGET (2: the ratio a row must not pass), RAW (a folder to keep each
# run's output in, as run-N.txt), FROM (a folder of such files: print
# their table, run nothing; to pool runs made in turns with another build).
# The machine must be otherwise idle: see the `# loadavg`
# lines; compare the ratios, never the nanoseconds.
set -eu
build=${1:-build}
anchor=${ANCHOR:-/work/shared/anchors/kernel-qemu}
runs=${RUNS:-3}
n=${SB_N:-5000}
r=${SB_R:-5}
target=${TARGET:-2}
need="$anchor/RESULTS.md"
if [ -z "${FROM:-}" ]; then
	need="$need $anchor/syncbench.c $build/src/kabi/libfenceline-kabi.so"
	need="$need $build/src/kabi/fenceline-run $build/src/daemon/fencelined"
fi
for f in $need; do
	if [ ! -e "$f" ]; then
		echo "syncbench-ratio: $f is missing (ANCHOR, or build fenceline first)" >&2
		exit 2
	fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/syncbench-ratio.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
echo "# cpu $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "# nproc $(nproc), kernel $(uname -sr)"
# The commit of the tree the build directory is in (a build elsewhere: unknown).
echo "# commit $(git -C "$build" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "${FROM:-}" ]; then
	echo "# anchor $anchor/RESULTS.md; runs from $FROM"
	runs=0
	for f in "$FROM"/run-*.txt; do
		runs=$((runs + 1))
		cp "$f" "$work/run-$runs.txt"
		grep '^# loadavg' "$f" || true
	done
else
	echo "# anchor $anchor/RESULTS.md; syncbench -s base,tput -n $n -r $r, $runs runs"
	# Dynamically linked, unlike the anchor's static build: the preload must reach its calls.
	${CC:-cc} -O2 -pthread -o "$work/syncbench" "$anchor/syncbench.c"
fi
i=1
while [ -z "${FROM:-}" ] && [ "$i" -le "$runs" ]; do
	echo "# loadavg before run $i: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$work/run-$i.txt"
	# A daemon of its own for each run, gone once idle.
	FENCELINE_SOCKET="$work/fl-$i.sock" FENCELINE_DAEMON="$build/src/daemon/fencelined" \
		FENCELINE_KABI="$build/src/kabi/libfenceline-kabi.so" FENCELINE_IDLE_MS=500 \
		sh "$build/src/kabi/fenceline-run" "$work/syncbench" -s base,tput -n "$n" -r "$r" \
		>>"$work/run-$i.txt"
	if [ -n "${RAW:-}" ]; then
		# Numbered after what is there already: several invocations can fill one folder.
		mkdir -p "$RAW"
		k=$(find "$RAW" -name 'run-*.txt' | wc -l)
		cp "$work/run-$i.txt" "$RAW/run-$((k + 1)).txt"
	fi
	i=$((i + 1))
done
# The anchor's table rows: | `name` (note) | median | range | x getppid | lean cfg |
awk -v target="$target" -v runs="$runs" '
FNR == 1 { file++ }
file == 1 && /^\| `/ {
	split($0, col, "|")
	name = col[2]
	gsub(/[` ]/, "", name)
	sub(/\(.*\)$/, "", name)
	k = col[5]
	gsub(/ /, "", k)
	kernel[name] = k
	next
}
file > 1 && NF == 3 && $3 == "ns/op" {
	run = file - 1
	val[run, $1] = $2
	if (run == 1)
		order[++nnames] = $1
}
END {
	printf "| syncbench figure | preload (x getppid) | kernel (x getppid) | ratio | <= %sx |\n", target
	printf "| --- | ---: | ---: | ---: | --- |\n"
	for (i = 1; i <= nnames; i++) {
		name = order[i]
		if (name == "syscall_getppid" || name == "clock_gettime" || !(name in kernel))
			continue
		lo = hi = -1
		for (run = 1; run <= runs; run++) {
			g = val[run, "syscall_getppid"]
			if (g <= 0 || !((run, name) in val))
				continue
			x = val[run, name] / g
			if (lo < 0 || x < lo)
				lo = x
			if (hi < 0 || x > hi)
				hi = x
		}
		if (lo < 0)
			continue
		ours = lo == hi || sprintf("%.1f", lo) == sprintf("%.1f", hi) ? sprintf("%.1f", lo) : sprintf("%.1f-%.1f", lo, hi)
		rlo = lo / kernel[name]
		rhi = hi / kernel[name]
		ratio = sprintf("%.1f", rlo) == sprintf("%.1f", rhi) ? sprintf("%.1f", rlo) : sprintf("%.1f-%.1f", rlo, rhi)
		met = name == "timeline_open_close" ? "exempt" : name ~ /^eventfd/ ? "(no sync)" : rhi <= target ? "yes" : rlo <= target ? "partly" : "no"
		printf "| `%s` | %s | %s | %s | %s |\n", name, ours, kernel[name], ratio, met
	}
	gl = gh = -1
	for (run = 1; run <= runs; run++) {
		g = val[run, "syscall_getppid"]
		if (gl < 0 || g < gl)
			gl = g
		if (gh < 0 || g > gh)
			gh = g
	}
	printf "\n# getppid %.0f-%.0f ns in these runs (the kernel anchor: 603 ns under TCG)\n", gl, gh
}' "$anchor/RESULTS.md" "$work"/run-*.txt

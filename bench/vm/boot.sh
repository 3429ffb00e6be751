#!/usr/bin/env bash
# fencelined's memory with 100000 live fences, measured in a qemu VM where we
# are real root (a container's fd limit may not allow 100000 fds). Builds the
# kernel with the kernel-qemu anchor's script (cached), a build of this tree,
# an initramfs with fencelined + memprobe (+ fl-bench), boots, prints results.
# Knobs: ANCHOR, WORK, MEM (MiB, 4096), SMP (2), N (100000), PER (50000),
#        BENCH (1: also fl-bench -s daemon), SMALL (1: also 10000 fences), TIMEOUT (2400),
#        KABI (1: the kernel uapi tests on the VM's real sw_sync, with and without the preload)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
ANCHOR=${ANCHOR:-/work/shared/anchors/kernel-qemu}
WORK=${WORK:-/tmp/fl-vm}
REF_DIR=${REF_DIR:-$WORK/ref}
MEM=${MEM:-4096} SMP=${SMP:-2} N=${N:-100000} PER=${PER:-50000} BENCH=${BENCH:-1} SMALL=${SMALL:-1}
KABI=${KABI:-1}
TIMEOUT=${TIMEOUT:-2400}
BUILD=$WORK/build
mkdir -p "$WORK"

# The anchor's kernel build, with the options fencelined needs, stopping before its own userspace.
cp "$ANCHOR/run.sh" "$ANCHOR/init.sh" "$ANCHOR/kernel.fragment" "$WORK/"
chmod u+w "$WORK"/run.sh "$WORK"/init.sh "$WORK"/kernel.fragment
cat "$HERE/kernel.fragment.extra" >> "$WORK/kernel.fragment"
sed -i 's|^# -* userspace$|[ "${BUILD_ONLY:-0}" = 1 ] \&\& { log "kernel ready: $KIMG"; exit 0; }\n&|' "$WORK/run.sh"
grep -q BUILD_ONLY "$WORK/run.sh" || { echo "boot.sh: cannot patch $WORK/run.sh" >&2; exit 1; }
REF_DIR=$REF_DIR JOBS=${JOBS:-2} BUILD_ONLY=1 "$WORK/run.sh"
KIMG=$REF_DIR/build/arch/x86/boot/bzImage

[ -f "$BUILD/build.ninja" ] ||
	meson setup "$BUILD" "$SRC" --buildtype=debugoptimized -Dtests=false -Dexamples=false >/dev/null
ninja -C "$BUILD" -j2 src/daemon/fencelined bench/fl-bench src/libfenceline.a \
	src/kabi/libfenceline-kabi.so >/dev/null
gcc -O2 -Wall -D_GNU_SOURCE -I"$SRC/include" -I"$SRC/bench" -o "$WORK/memprobe" "$HERE/memprobe.c" \
	"$SRC/bench/bench-util.c" "$BUILD/src/libfenceline.a" -lpthread -lm
# The uapi tests use plain ioctls and no fenceline header.
for t in kabi-uapi-test kabi-mixed-test; do
	gcc -O2 -Wall -D_GNU_SOURCE -pthread -o "$WORK/$t" "$SRC/tests/kabi/$t.c"
done

IRD=$WORK/initramfs
rm -rf "$IRD"
mkdir -p "$IRD"/{bin,proc,sys,dev,tmp,lib64,lib/x86_64-linux-gnu}
cp "$REF_DIR/busybox/bin/busybox" "$IRD/bin/busybox"
cp "$HERE/fl-init.sh" "$IRD/init"
chmod +x "$IRD/init"
cp "$BUILD/src/daemon/fencelined" "$BUILD/bench/fl-bench" "$WORK/memprobe" "$WORK/kabi-uapi-test" \
	"$WORK/kabi-mixed-test" "$BUILD/src/kabi/fenceline-run" "$IRD/"
cp -L "$BUILD/src/libfenceline.so.0" "$BUILD/src/kabi/libfenceline-kabi.so" "$IRD/lib/x86_64-linux-gnu/"
for b in "$IRD/fencelined" "$IRD/fl-bench" "$IRD/memprobe" "$IRD/kabi-uapi-test"; do
	ldd "$b" | awk '/=> \//{print $3}' | grep -v libfenceline |
		while read -r l; do cp -L "$l" "$IRD/lib/x86_64-linux-gnu/"; done
done
cp -L /lib64/ld-linux-x86-64.so.2 "$IRD/lib64/"
(cd "$IRD" && find . | cpio -o -H newc --quiet | gzip -1) > "$WORK/initramfs.cpio.gz"

OUT=$WORK/runs/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
echo "[fl-vm] booting: MEM=$MEM SMP=$SMP N=$N PER=$PER BENCH=$BENCH; console: $OUT/console.log" >&2
t0=$(date +%s)
set +e
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$SMP" -m "$MEM" \
	-nographic -no-reboot -net none -kernel "$KIMG" -initrd "$WORK/initramfs.cpio.gz" \
	-append "console=ttyS0 quiet loglevel=1 panic=-1 fl.n=$N fl.per=$PER fl.bench=$BENCH fl.small=$SMALL fl.kabi=$KABI" \
	> "$OUT/console.log" 2>&1 </dev/null
echo "[fl-vm] qemu rc=$? after $(( $(date +%s) - t0 )) s" >&2
set -e
{
	echo "# qemu $(qemu-system-x86_64 --version | head -1) MEM=$MEM SMP=$SMP"
	tr -d '\r' < "$OUT/console.log" | awk '/@@END/{on=0} on{print} /@@BEGIN/{on=1}'
} > "$OUT/results.txt"
cat "$OUT/results.txt"
echo "[fl-vm] results: $OUT/results.txt" >&2

#!/usr/bin/env bash
# Run fenceline's heap tests in a qemu VM whose kernel has dma-heaps
# (/dev/dma_heap/system) and udmabuf, which this machine and CI lack: the
# dma-heap heap kind and DMA_BUF_IOCTL_SYNC run against the real kernel code.
# A manual check, not a meson test (minutes of TCG). See docs/dma-heap-vm.md.
#
# Kernel: the workplace's kernel-qemu anchor (ANCHOR) builds it: its run.sh
# and kernel.fragment are copied to WORK, kernel.fragment.extra (next to this
# script) is appended, and the copy stops after the kernel build. Downloads,
# source and kernel objects are cached under REF_DIR, apart from the
# anchor's own cache (the config differs).
# Userspace: a meson build of this tree in WORK/meson; each test program is
# relinked statically from meson's objects and src/libfenceline.a, with a
# static fencelined; dma-heap-vm-test.c (next to this script) is built the
# same way. The VM's /init is init.sh (next to this script).
# Knobs: ANCHOR, REF_DIR, WORK, MEM (MiB, 1024), SMP (2), CMA (32M),
#        ACCEL (tcg; kvm where /dev/kvm can run an ordinary kernel),
#        TIMEOUT (s, 1200), MULT (test timeout multiplier, 4), BOOTS (tries
#        when the VM dies before /init, 3), TESTS (heap-kinds heap heap-pool
#        compat-libion dma-heap-vm; any other NAME of meson's tests/NAME-test works too),
#        REQUIRED, REBUILD (1: rebuild the kernel), KERNEL_ONLY (1: stop
#        once the kernel is built).
set -eu
set -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
ANCHOR=${ANCHOR:-/work/shared/anchors/kernel-qemu}
REF_DIR=${REF_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fenceline-dma-heap-vm}
WORK=${WORK:-/tmp/fl-dma-heap-vm}
MEM=${MEM:-1024}
SMP=${SMP:-2}
CMA=${CMA:-32M}
TIMEOUT=${TIMEOUT:-1200}
MULT=${MULT:-4}
BOOTS=${BOOTS:-3}
TESTS=${TESTS:-heap-kinds heap heap-pool compat-libion dma-heap-vm}
# Tests that must pass, not skip (PROGRAM:TEST, checked if PROGRAM runs).
REQUIRED=${REQUIRED:-heap-kinds:dma_heap_gives_dma_bufs_where_the_kernel_has_them
dma-heap-vm:every_dma_heap_gives_zeroed_dma_bufs_that_map_and_sync
dma-heap-vm:cpu_access_on_a_dma_buf_takes_each_direction_and_rejects_bad_ones
dma-heap-vm:cma_dma_heap_beyond_its_area_is_enomem
dma-heap-vm:udmabuf_of_a_heap_memfd_is_a_dma_buf_that_syncs}
BUILD=$WORK/meson

log() { printf '[dma-heap-vm] %s\n' "$*" >&2; }
START=$(date +%s)
mkdir -p "$WORK" "$REF_DIR/debs"

# ------------------------------------------------------------------ kernel
# Share the anchor's downloaded .debs when they are there (read only).
ANCHOR_DEBS=${XDG_CACHE_HOME:-$HOME/.cache}/kernel-anchor/debs
if [ -d "$ANCHOR_DEBS" ] && ! ls "$REF_DIR"/debs/*.deb >/dev/null 2>&1; then
	cp "$ANCHOR_DEBS"/*.deb "$REF_DIR/debs/" 2>/dev/null || true
fi
cp "$ANCHOR/run.sh" "$ANCHOR/kernel.fragment" "$WORK/"
chmod u+w "$WORK/run.sh" "$WORK/kernel.fragment"
cat "$HERE/kernel.fragment.extra" >>"$WORK/kernel.fragment"
# The anchor checks that every option of the fragment applied; stop it before
# its own userspace (syncbench).
# shellcheck disable=SC2016 # $KIMG and log belong to run.sh
sed -i 's|^# -* userspace$|[ "${BUILD_ONLY:-0}" = 1 ] \&\& { log "kernel ready: $KIMG"; exit 0; }\n&|' \
	"$WORK/run.sh"
grep -q BUILD_ONLY "$WORK/run.sh" || {
	log "cannot patch $WORK/run.sh"
	exit 1
}
t0=$(date +%s)
REF_DIR=$REF_DIR JOBS=${JOBS:-$(($(nproc) + 1))} BUILD_ONLY=1 REBUILD=${REBUILD:-0} "$WORK/run.sh"
log "kernel step took $(($(date +%s) - t0)) s"
KIMG=$REF_DIR/build/arch/x86/boot/bzImage
KCONFIG=$REF_DIR/build/.config
for opt in DMA_SHARED_BUFFER DMABUF_HEAPS DMABUF_HEAPS_SYSTEM DMABUF_HEAPS_CMA MEMFD_CREATE UDMABUF UNIX; do
	grep -qx "CONFIG_$opt=y" "$KCONFIG" || {
		log "CONFIG_$opt=y did not apply"
		exit 1
	}
done
[ "${KERNEL_ONLY:-0}" = 1 ] && exit 0

# ------------------------------------------------------------------ userspace
BIN=$WORK/bin
mkdir -p "$BIN"
# A build directory of another checkout would build that one: start afresh.
if [ "$(cat "$BUILD/.dma-heap-vm-src" 2>/dev/null)" != "$SRC" ]; then
	rm -rf "$BUILD"
	meson setup "$BUILD" "$SRC" -Dbench=false -Dexamples=false >/dev/null
	echo "$SRC" >"$BUILD/.dma-heap-vm-src"
fi
targets="src/libfenceline.a src/daemon/fencelined src/heap/fl-heap-worker tests/heap/heap-bad-worker"
for t in $TESTS; do
	# dma-heap-vm-test links heap-test's runner.c and helpers.c objects.
	[ "$t" = dma-heap-vm ] && t=heap
	targets="$targets tests/$t-test"
done
# shellcheck disable=SC2086 # word splitting wanted
ninja -C "$BUILD" $targets >/dev/null
static_link() { # $1 = output, then objects and archives
	out=$1
	shift
	cc -static -o "$out" "$@" -pthread 2>"$WORK/link.log" || {
		cat "$WORK/link.log" >&2
		exit 1
	}
}
static_link "$BIN/fencelined" "$BUILD"/src/daemon/fencelined.p/*.o -Wl,--start-group \
	"$BUILD"/src/core/libfl-core.a "$BUILD"/src/drivers/sw_sync/libfl-sw-sync.a \
	"$BUILD"/src/drivers/sync_file/libfl-sync-file.a "$BUILD"/src/util/libfl-util.a \
	"$BUILD"/src/proto/libfl-proto.a "$BUILD"/src/heap/libfl-heap.a -Wl,--end-group
# The pools' worker process, found through FENCELINE_HEAP_WORKER (init.sh),
# and heap-pool-test's worker gone wrong, at the path that test was built with.
static_link "$BIN/fl-heap-worker" "$BUILD"/src/heap/fl-heap-worker.p/*.o \
	"$BUILD"/src/util/libfl-util.a
static_link "$WORK/heap-bad-worker" "$BUILD"/tests/heap/heap-bad-worker.p/*.o "$BUILD/src/libfenceline.a"
for t in $TESTS; do
	if [ "$t" = dma-heap-vm ]; then
		# The warnings of meson.build, as an error.
		cc -std=gnu11 -O1 -g -Wall -Wextra -Wundef -Wmissing-prototypes -Wstrict-prototypes \
			-Wshadow -Wformat=2 -Wvla -Wno-unused-parameter -Wno-missing-field-initializers \
			-Werror -D_GNU_SOURCE -I"$SRC/include" -I"$SRC/tests/lib" \
			-c -o "$WORK/dma-heap-vm-test.o" "$HERE/dma-heap-vm-test.c"
		static_link "$BIN/$t-test" "$WORK/dma-heap-vm-test.o" "$BUILD"/tests/heap-test.p/lib_runner.c.o \
			"$BUILD"/tests/heap-test.p/lib_helpers.c.o "$BUILD/src/libfenceline.a"
	else
		static_link "$BIN/$t-test" "$BUILD/tests/$t-test.p/"*.o "$BUILD/src/libfenceline.a"
	fi
done

IRD=$WORK/initramfs
rm -rf "$IRD"
mkdir -p "$IRD/bin" "$IRD/proc" "$IRD/sys" "$IRD/dev" "$IRD/tmp"
cp "$REF_DIR/busybox/bin/busybox" "$IRD/bin/busybox"
cp "$HERE/init.sh" "$IRD/init"
chmod +x "$IRD/init"
cp "$BIN"/* "$IRD/"
mkdir -p "$IRD/$BUILD/tests/heap"
cp "$WORK/heap-bad-worker" "$IRD/$BUILD/tests/heap/heap-bad-worker"
(cd "$IRD" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initramfs.cpio.gz"

# ------------------------------------------------------------------ boot
# TCG: this machine's /dev/kvm cannot run an ordinary kernel (the anchor's
# README says why); ACCEL=kvm where it can.
case "${ACCEL:-tcg}" in
kvm) QACCEL="-enable-kvm -cpu host" ;;
*) QACCEL="-accel tcg,thread=multi -cpu max" ;;
esac
OUT=$WORK/runs/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
tests_arg=$(echo "$TESTS" | tr ' ' ,)
boot=1
while :; do
	log "boot $boot: $SMP vCPUs, ${MEM}M, cma=$CMA; console: $OUT/console.log"
	t0=$(date +%s)
	set +e
	# shellcheck disable=SC2086 # QACCEL is several words
	timeout "$TIMEOUT" qemu-system-x86_64 $QACCEL -smp "$SMP" -m "$MEM" \
		-nographic -no-reboot -net none -kernel "$KIMG" -initrd "$WORK/initramfs.cpio.gz" \
		-append "console=ttyS0 quiet loglevel=1 panic=-1 cma=$CMA fl.tests=$tests_arg fl.mult=$MULT" \
		>"$OUT/console.log" 2>&1 </dev/null
	qrc=$?
	set -e
	log "VM finished in $(($(date +%s) - t0)) s (qemu rc=$qrc)"
	# About one TCG boot in three panics before /init (bench/vm/README.md): boot again.
	if grep -q '@@BEGIN' "$OUT/console.log" || [ "$boot" -ge "$BOOTS" ]; then
		break
	fi
	log "the VM died before /init; last lines:"
	tr -d '\r' <"$OUT/console.log" | tail -5 >&2
	boot=$((boot + 1))
done
tr -d '\r' <"$OUT/console.log" | awk '/@@END/{on=0} on{print} /@@BEGIN/{on=1}' >"$OUT/results.txt"

# ------------------------------------------------------------------ verdict
pass=0 fail=0 skip=0 bad=0
for t in $TESTS; do
	sed -n "/^@@TEST $t\$/,/^@@RC $t /p" "$OUT/results.txt" >"$OUT/$t.txt"
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$OUT/$t.txt" | tail -1 || true)
	rc=$(sed -n "s/^@@RC $t //p" "$OUT/$t.txt")
	if [ -z "$summary" ]; then
		log "$t: no summary (rc=${rc:-none}): it did not finish"
		bad=1
		continue
	fi
	# shellcheck disable=SC2086 # "P passed, F failed, S skipped" into $1 $3 $5
	set -- $summary
	pass=$((pass + $1)) fail=$((fail + $3)) skip=$((skip + $5))
	[ "$rc" = 0 ] || [ "$rc" = 77 ] || bad=1
done
for r in $REQUIRED; do
	case " $TESTS " in
	*" ${r%%:*} "*) ;;
	*) continue ;;
	esac
	grep -q "^ok ${r#*:}\$" "$OUT/${r%%:*}.txt" || {
		log "required test did not pass: $r"
		bad=1
	}
done
grep -v '^@@' "$OUT/results.txt"
echo "dma-heap-vm: $pass passed, $fail failed, $skip skipped"
log "results: $OUT/results.txt ($(($(date +%s) - START)) s in all)"
[ "$bad" = 0 ] && [ "$fail" = 0 ]

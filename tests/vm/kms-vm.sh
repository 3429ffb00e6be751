#!/usr/bin/env bash
# Run programs in a qemu VM whose kernel has VKMS, the kernel's virtual KMS
# driver: real DRM atomic modesetting, vblank events, overlay planes and a
# writeback connector, which no Debian kernel enables (docs/kms-vm.md).
#
#   tests/vm/kms-vm.sh PROGRAM...     run each PROGRAM named NAME-test in the
#                                     VM, print its output, exit 0 if every
#                                     one exited 0; the others (fencelined,
#                                     fl-displayd) are only packed, at /NAME
#   KERNEL_ONLY=1 tests/vm/kms-vm.sh  build (or find) the kernel only
#
# The kernel is Debian's linux-source-6.12 built from `make tinyconfig` and
# kms.fragment (next to this script), cached under FL_VM_CACHE by a hash of
# the source package's version and the fragment: only the first run on a
# machine builds it (minutes); later runs boot the cached bzImage. Each
# PROGRAM is copied into a busybox initramfs with the shared libraries ldd
# finds for it; init.sh is its /init, as for dma-heap-vm.sh. The VM runs headless under TCG.
# Exit 77 (a skip, for meson) where qemu or the kernel source cannot be had.
# Knobs: FL_VM_CACHE, SRC_PKG, FL_VM_INSTALL (1: apt-get what is missing,
# the default as root), JOBS (2), ACCEL (tcg|kvm), SMP (2), MEM (1024),
# TIMEOUT (s, 900), BOOTS (3), MULT (test timeout multiplier, 8),
# REBUILD (1), KERNEL_ONLY (1), VKMS (module options for the command line).
set -eu
set -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${FL_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fenceline-vm}
SRC_PKG=${SRC_PKG:-linux-source-6.12}
JOBS=${JOBS:-2}
SMP=${SMP:-2}
MEM=${MEM:-1024}
TIMEOUT=${TIMEOUT:-900}
BOOTS=${BOOTS:-3}
MULT=${MULT:-8}
VKMS=${VKMS:-vkms.enable_overlay=1 vkms.enable_cursor=1 vkms.enable_writeback=1}
FRAGMENT=$HERE/kms.fragment
if [ -z "${FL_VM_INSTALL:-}" ]; then
	if [ "$(id -u)" = 0 ]; then FL_VM_INSTALL=1; else FL_VM_INSTALL=0; fi
fi

log() { printf '[kms-vm] %s\n' "$*" >&2; }
skip() {
	echo "kms-vm: skipped: $*"
	exit 77
}
START=$(date +%s)
mkdir -p "$CACHE/debs"

# ------------------------------------------------------------------ host tools
apt_updated=0
apt_install() { # packages...
	[ "$FL_VM_INSTALL" = 1 ] || return 1
	if [ "$apt_updated" = 0 ]; then
		apt-get update -qq >/dev/null 2>&1 || return 1
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1
}
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
for t in make flex bison bc cpio xz gzip perl; do
	command -v "$t" >/dev/null || need+=("$t")
done
dpkg -s libelf-dev >/dev/null 2>&1 || need+=(libelf-dev)
if [ ${#need[@]} -gt 0 ]; then
	[ "$FL_VM_INSTALL" = 1 ] && log "installing ${need[*]}"
	# xz's package is xz-utils.
	pkgs=("${need[@]/#xz/xz-utils}")
	apt_install "${pkgs[@]}" ||
		skip "needs ${need[*]} (apt-get failed or FL_VM_INSTALL=0)"
fi

# ------------------------------------------------------------------ sources
newest() { # package: the newest of its .debs in the cache, or nothing
	find "$CACHE/debs" -maxdepth 1 -name "${1}_*.deb" | sort -V | tail -1
}
# The tarball of an installed linux-source package, or its .deb downloaded
# into the cache.
TARBALL=/usr/src/$SRC_PKG.tar.xz
if [ -f "$TARBALL" ] && SRC_VER=$(dpkg-query -W -f '${Version}' "$SRC_PKG" 2>/dev/null) && [ -n "$SRC_VER" ]; then
	:
else
	deb=$(newest "${SRC_PKG}")
	if [ -z "$deb" ]; then
		log "apt-get download $SRC_PKG"
		(cd "$CACHE/debs" && apt-get download "$SRC_PKG" >/dev/null 2>&1) ||
			{ [ "$FL_VM_INSTALL" = 1 ] && apt-get update -qq >/dev/null 2>&1 &&
				(cd "$CACHE/debs" && apt-get download "$SRC_PKG" >/dev/null 2>&1); } ||
			skip "the kernel source ($SRC_PKG) is neither installed nor downloadable"
		deb=$(newest "${SRC_PKG}")
	fi
	SRC_VER=$(dpkg-deb -f "$deb" Version)
	TARBALL=
fi
BB=$CACHE/busybox/bin/busybox
if [ ! -x "$BB" ]; then
	bbdeb=$(newest busybox-static)
	if [ -z "$bbdeb" ]; then
		(cd "$CACHE/debs" && apt-get download busybox-static >/dev/null 2>&1) ||
			skip "busybox-static cannot be downloaded"
		bbdeb=$(newest busybox-static)
	fi
	rm -rf "$CACHE/busybox"
	dpkg -x "$bbdeb" "$CACHE/busybox"
fi

# ------------------------------------------------------------------ kernel
HASH=$( (echo "$SRC_PKG $SRC_VER" && cat "$FRAGMENT") | sha256sum | cut -c1-16)
KDIR=$CACHE/kernels/$HASH
KIMG=$KDIR/bzImage
# One build at a time per cache (meson and a person may start it together).
exec 9>"$CACHE/lock"
flock 9
if [ ! -f "$KIMG" ] || [ "${REBUILD:-0}" = 1 ]; then
	KSRC=$CACHE/src/$SRC_PKG
	if [ ! -f "$KSRC/Makefile" ] || [ "$(cat "$CACHE/src/.version" 2>/dev/null)" != "$SRC_VER" ]; then
		log "extracting $SRC_PKG $SRC_VER"
		rm -rf "$CACHE/src" "$CACHE/pkg"
		mkdir -p "$CACHE/src"
		if [ -z "$TARBALL" ]; then
			dpkg -x "$deb" "$CACHE/pkg"
			TARBALL=$CACHE/pkg/usr/src/$SRC_PKG.tar.xz
		fi
		tar -xf "$TARBALL" -C "$CACHE/src"
		rm -rf "$CACHE/pkg"
		echo "$SRC_VER" >"$CACHE/src/.version"
	fi
	OBJ=$CACHE/build
	mkdir -p "$OBJ"
	log "configuring $SRC_PKG $SRC_VER: tinyconfig + $(basename "$FRAGMENT")"
	make -s -C "$KSRC" O="$OBJ" tinyconfig >/dev/null
	"$KSRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config" "$FRAGMENT" >/dev/null
	make -s -C "$KSRC" O="$OBJ" olddefconfig >/dev/null
	# Every option of the fragment must have survived olddefconfig.
	bad=0
	while IFS= read -r l; do
		case "$l" in
		"# CONFIG_"*" is not set")
			k=${l#\# }
			k=${k%% *}
			if grep -q "^$k=" "$OBJ/.config"; then
				log "config: $k should be unset"
				bad=1
			fi
			;;
		CONFIG_*)
			grep -qx "$l" "$OBJ/.config" || {
				log "config: $l did not apply"
				bad=1
			}
			;;
		esac
	done <"$FRAGMENT"
	[ "$bad" = 0 ] || exit 1
	log "building the kernel (nice -n 19, -j$JOBS; minutes, once per machine)"
	t0=$(date +%s)
	nice -n 19 make -s -C "$KSRC" O="$OBJ" -j"$JOBS" bzImage >"$OBJ/build.log" 2>&1 || {
		tail -30 "$OBJ/build.log" >&2
		exit 1
	}
	mkdir -p "$KDIR"
	cp "$OBJ/arch/x86/boot/bzImage" "$KIMG.tmp"
	cp "$OBJ/.config" "$KDIR/config"
	mv "$KIMG.tmp" "$KIMG"
	echo "kernel_build_s $(($(date +%s) - t0))" | tee "$KDIR/build-time" >&2
fi
flock -u 9
log "kernel: $KIMG ($SRC_PKG $SRC_VER, config $HASH)"
[ "${KERNEL_ONLY:-0}" = 1 ] && exit 0
[ $# -gt 0 ] || {
	echo "usage: $0 PROGRAM... (or KERNEL_ONLY=1 $0)" >&2
	exit 2
}

# ------------------------------------------------------------------ initramfs
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fl-kms-vm.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
IRD=$WORK/initramfs
mkdir -p "$IRD/bin" "$IRD/proc" "$IRD/sys" "$IRD/dev" "$IRD/tmp"
cp "$BB" "$IRD/bin/busybox"
cp "$HERE/init.sh" "$IRD/init"
chmod +x "$IRD/init"
names=
for p in "$@"; do
	n=$(basename "$p")
	[ -x "$p" ] || {
		echo "kms-vm: $p is not an executable" >&2
		exit 1
	}
	cp "$p" "$IRD/$n"
	# NAME-test programs are run; others (fencelined, fl-displayd) are there for them.
	case "$n" in
	*-test) names="$names,${n%-test}" ;;
	esac
	# The program's shared libraries and loader, at the paths ldd gives.
	for lib in $(ldd "$p" 2>/dev/null | grep -oE '/[^ ]+' || true); do
		case "$lib" in
		/lib/* | /lib64/* | /usr/*) dest=$lib ;;
		# A build tree's library (its path may be under /tmp, which /init
		# mounts a tmpfs over): in /lib/fl, on LD_LIBRARY_PATH.
		*) dest=/lib/fl/$(basename "$lib") ;;
		esac
		[ -e "$IRD$dest" ] && continue
		mkdir -p "$IRD$(dirname "$dest")"
		cp -L "$lib" "$IRD$dest"
		# A build tree's RUNPATH is relative to the program ($ORIGIN): /init
		# puts every library's directory on LD_LIBRARY_PATH instead.
		dirname "$dest" >>"$IRD/.libdirs"
	done
done
(cd "$IRD" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/initramfs.cpio.gz"

# ------------------------------------------------------------------ boot
case "${ACCEL:-tcg}" in
kvm) QACCEL="-enable-kvm -cpu host" ;;
*) QACCEL="-accel tcg,thread=multi -cpu max" ;;
esac
CONSOLE=$WORK/console.log
boot=1
while :; do
	log "boot $boot: $SMP vCPUs, ${MEM}M, $VKMS"
	t0=$(date +%s)
	set +e
	# shellcheck disable=SC2086 # QACCEL is several words
	timeout "$TIMEOUT" qemu-system-x86_64 $QACCEL -smp "$SMP" -m "$MEM" \
		-display none -serial stdio -monitor none -no-reboot -net none \
		-kernel "$KIMG" -initrd "$WORK/initramfs.cpio.gz" \
		-append "console=ttyS0 quiet loglevel=1 panic=-1 $VKMS fl.tests=${names#,} fl.mult=$MULT" \
		>"$CONSOLE" 2>&1 </dev/null
	qrc=$?
	set -e
	log "VM finished in $(($(date +%s) - t0)) s (qemu rc=$qrc)"
	# TCG boots sometimes die before /init (bench/vm/README.md): boot again.
	if grep -q '@@BEGIN' "$CONSOLE" || [ "$boot" -ge "$BOOTS" ]; then
		break
	fi
	log "the VM died before /init; last lines:"
	tr -d '\r' <"$CONSOLE" | tail -5 >&2
	boot=$((boot + 1))
done
# The first marker can share its line with the firmware's escape sequences.
tr -d '\r' <"$CONSOLE" | awk '/@@END/{on=0} on{print} /@@BEGIN/{on=1}' >"$WORK/results.txt"
if [ -n "${KEEP:-}" ]; then cp "$CONSOLE" "$KEEP"; fi

# ------------------------------------------------------------------ verdict
bad=0
grep -v '^@@' "$WORK/results.txt" || true
for p in "$@"; do
	n=$(basename "$p")
	case "$n" in *-test) ;; *) continue ;; esac
	n=${n%-test}
	rc=$(sed -n "s/^@@RC $n //p" "$WORK/results.txt")
	if [ "$rc" != 0 ]; then
		log "$n: exit status ${rc:-none (it did not finish)}"
		bad=1
	fi
done
if [ "$bad" != 0 ]; then
	log "last console lines:"
	tr -d '\r' <"$CONSOLE" | tail -15 >&2
fi
echo "vm_wall_s $(($(date +%s) - START))"
[ "$bad" = 0 ]

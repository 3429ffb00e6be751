#!/bin/busybox sh
# /init of the VMs of tests/vm (dma-heap-vm.sh, kms-vm.sh): list the
# dma-heaps and DRM cards, run each test program /NAME-test of fl.tests,
# print everything between @@BEGIN and @@END, power off.
# shellcheck shell=dash
set -eu
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/shm
mount -t tmpfs tmpfs /dev/shm
# sw_sync lives in debugfs.
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true

TESTS=
MULT=4
# shellcheck disable=SC2013 # words, not lines
for w in $(cat /proc/cmdline); do
	case "$w" in
	fl.tests=*) TESTS=$(echo "${w#fl.tests=}" | tr , ' ') ;;
	fl.mult=*) MULT=${w#fl.mult=} ;;
	esac
done
export FENCELINE_DAEMON=/fencelined FENCELINE_HEAP_WORKER=/fl-heap-worker TMPDIR=/tmp
# The display service, for the kms driver's tests (kms-vm.sh packs it).
export FENCELINE_DISPLAYD=/fl-displayd
# Services' messages (the kms driver's) go to the console, with the tests'.
export FENCELINE_DAEMON_STDERR=1
export FL_TEST_TIMEOUT_MULTIPLIER=$MULT
# Dynamically linked programs (kms-vm.sh) come with their libraries: a build
# tree's RUNPATH is relative to where the program was built.
if [ -f /.libdirs ]; then
	LD_LIBRARY_PATH=$(sort -u /.libdirs | tr '\n' : | sed 's/:$//')
	export LD_LIBRARY_PATH
fi

echo "@@BEGIN"
echo "# kernel $(cat /proc/version)"
echo "# cmdline $(cat /proc/cmdline)"
echo "# cpus $(nproc), $(grep MemTotal /proc/meminfo | tr -s ' ')"
for h in /dev/dma_heap/*; do
	# shellcheck disable=SC2012 # the numbers, as ls shows them
	if [ -e "$h" ]; then echo "# dma-heap $h $(ls -l "$h" | awk '{print $1, $5, $6}')"; fi
done
if [ -e /dev/udmabuf ]; then
	# shellcheck disable=SC2012
	echo "# udmabuf /dev/udmabuf $(ls -l /dev/udmabuf | awk '{print $1, $5, $6}')"
fi
for c in /sys/class/drm/card*; do
	if [ -e "$c" ]; then echo "# drm $(basename "$c") $(grep DRIVER= "$c/device/uevent" 2>/dev/null || true)"; fi
done
dmesg | grep -iE 'cma|dma.?heap|udmabuf|drm|vkms' | sed 's/^/# dmesg: /' || true
for t in $TESTS; do
	echo "@@TEST $t"
	rc=0
	"/$t-test" 2>&1 || rc=$?
	echo "@@RC $t $rc"
done
# The kernel's side of anything that went wrong (OOM kills, warnings).
dmesg | grep -iE 'oom|killed process|warning|bug:|cma_alloc|udmabuf|dma.?heap|vkms' |
	grep -v 'ommand line' | sed 's/^/# dmesg-end: /' || true
echo "# uptime $(cut -d' ' -f1 /proc/uptime) s"
echo "@@END"
sync
reboot -f

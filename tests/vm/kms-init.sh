#!/bin/busybox sh
# /init of the KMS VM (tests/vm/kms-vm.sh): run each program of fl.tests
# (in /t), print everything between @@BEGIN and @@END, power off.
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
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true

TESTS=
MULT=8
# shellcheck disable=SC2013 # words, not lines
for w in $(cat /proc/cmdline); do
	case "$w" in
	fl.tests=*) TESTS=$(echo "${w#fl.tests=}" | tr , ' ') ;;
	fl.mult=*) MULT=${w#fl.mult=} ;;
	esac
done
export TMPDIR=/tmp FL_TEST_TIMEOUT_MULTIPLIER=$MULT
if [ -f /t/.libdirs ]; then
	LD_LIBRARY_PATH=$(sort -u /t/.libdirs | tr '\n' : | sed 's/:$//')
	export LD_LIBRARY_PATH
fi

echo "@@BEGIN"
echo "# kernel $(cat /proc/version)"
echo "# cmdline $(cat /proc/cmdline)"
for c in /sys/class/drm/card*; do
	if [ -e "$c" ]; then echo "# drm $(basename "$c") $(grep DRIVER= "$c/device/uevent" 2>/dev/null || true)"; fi
done
dmesg | grep -iE 'vkms|drm' | sed 's/^/# dmesg: /' || true
for t in $TESTS; do
	echo "@@TEST $t"
	rc=0
	"/t/$t" 2>&1 || rc=$?
	echo "@@RC $t $rc"
done
dmesg | grep -iE 'warning|bug:|oops|vkms|drm' | sed 's/^/# dmesg-end: /' || true
echo "# uptime $(cut -d' ' -f1 /proc/uptime) s"
echo "@@END"
sync
reboot -f

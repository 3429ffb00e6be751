#!/bin/busybox sh
# /init of the fenceline memory VM: run memprobe (and optionally fl-bench -s daemon),
# print results between @@BEGIN/@@END, power off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm 2>/dev/null || { mkdir -p /dev/shm; mount -t tmpfs tmpfs /dev/shm; }
N=100000 PER=50000 BENCH=1 SMALL=1 KABI=1
for w in $(cat /proc/cmdline); do
	case "$w" in
	fl.n=*) N=${w#fl.n=} ;;
	fl.per=*) PER=${w#fl.per=} ;;
	fl.bench=*) BENCH=${w#fl.bench=} ;;
	fl.small=*) SMALL=${w#fl.small=} ;;
	fl.kabi=*) KABI=${w#fl.kabi=} ;;
	esac
done
sleep 1
echo "@@BEGIN"
echo "kernel_release $(uname -r) str"
echo "# kernel_version $(cat /proc/version)"
echo "guest_cpus $(nproc) count"
echo "# whoami uid=$(id -u) nr_open=$(cat /proc/sys/fs/nr_open) file-max=$(cat /proc/sys/fs/file-max)"
grep -E 'MemTotal|MemFree|MemAvailable|Slab|SUnreclaim' /proc/meminfo | sed 's/^/# meminfo0 /'
if [ "$SMALL" = 1 ]; then
	echo "# --- memprobe 10000 fences (linearity check)"
	/memprobe 10000 5000 /fencelined 2>&1 | sed 's/^\([a-z]\)/small_\1/'
	sleep 2
fi
if [ "$KABI" = 1 ]; then
	# The same uapi test on the kernel's own sw_sync, then under the preload,
	# then kernel sync_files merged with emulated ones.
	mkdir -p /sys/kernel/debug
	mount -t debugfs debugfs /sys/kernel/debug
	KL=/lib/x86_64-linux-gnu/libfenceline-kabi.so
	/kabi-uapi-test > /tmp/k.out 2>&1
	echo "kabi_uapi_kernel_exit $? code"
	sed 's/^/# kernel: /' /tmp/k.out
	FENCELINE_DAEMON=/fencelined LD_PRELOAD=$KL /kabi-uapi-test > /tmp/p.out 2>&1
	echo "kabi_uapi_preload_exit $? code"
	sed 's/^/# preload: /' /tmp/p.out
	FENCELINE_DAEMON=/fencelined LD_PRELOAD=$KL /kabi-mixed-test > /tmp/m.out 2>&1
	echo "kabi_mixed_exit $? code"
	sed 's/^/# mixed: /' /tmp/m.out
	# Where the kernel has sw_sync, --passthrough steps aside: no preload.
	echo "kabi_run_passthrough_preload [$(FENCELINE_KABI=$KL sh /fenceline-run --passthrough \
		sh -c 'echo "$LD_PRELOAD"')] str"
	echo "kabi_run_preload [$(FENCELINE_KABI=$KL sh /fenceline-run sh -c 'echo "$LD_PRELOAD"')] str"
fi
echo "# --- memprobe $N fences, $PER per child"
/memprobe "$N" "$PER" /fencelined 2>&1
echo "memprobe_exit $? code"
grep -E '^(sock_inode_cache|UNIX|skbuff|dentry|filp|kmalloc|shmem|inode)' /proc/slabinfo 2>/dev/null | sed 's/^/# slabinfo_end /'
if [ "$BENCH" = 1 ]; then
	sleep 2
	echo "# --- fl-bench -s daemon"
	FENCELINE_DAEMON=/fencelined timeout 1500 /fl-bench -s daemon 2>&1 | sed 's/^/flbench: /'
	echo "flbench_exit $? code"
fi
echo "@@END"
sync
reboot -f

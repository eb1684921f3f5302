#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# MXBD against NVMe-oF RDMA in the same guest boot, the same fio jobs on
# /dev/mxbd0 (orfs-server volume) and on /dev/nvme0n1 (nvmet target with
# nvme_rdma), both over rxe0 and both backed by a file in tmpfs (buffered:
# tmpfs refuses O_DIRECT on 6.1): 1 MiB sequential read and write at depth
# 16, 4 KiB random read and write at depth 1 (mean and p99 latency) and at
# depth 32 (IOPS). Each figure is the median of BENCH_ROUNDS runs
# (default 4) of BENCH_SECONDS (default 10) on each device.
# timeout: 1800
. "$(dirname "$0")/../guest/lib.sh"
out=$ORFS_RESULTS/mxbd.tsv
: > "$out"
secs=${BENCH_SECONDS:-10}
rounds=${BENCH_ROUNDS:-4}
size=256M

# MXBD.
truncate -s 512M /tmp/mx.img
start_server -b mx=/tmp/mx.img
modprobe -a ib_core rdma_cm
insmod "$ORFS_KMOD/regcache/regcache.ko"
insmod "$ORFS_KMOD/knet/knet.ko"
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mx
on_exit "rmmod mxbd; rmmod knet; rmmod regcache"

# NVMe-oF RDMA, target and host in this guest.
truncate -s 512M /tmp/nv.img
modprobe -a nvmet nvmet_rdma nvme_rdma
cfg=/sys/kernel/config/nvmet
mkdir $cfg/subsystems/bench
echo 1 > $cfg/subsystems/bench/attr_allow_any_host
mkdir $cfg/subsystems/bench/namespaces/1
echo /tmp/nv.img > $cfg/subsystems/bench/namespaces/1/device_path
[ -e $cfg/subsystems/bench/namespaces/1/buffered_io ] && echo 1 > $cfg/subsystems/bench/namespaces/1/buffered_io
echo 1 > $cfg/subsystems/bench/namespaces/1/enable
mkdir $cfg/ports/1
echo rdma > $cfg/ports/1/addr_trtype
echo ipv4 > $cfg/ports/1/addr_adrfam
echo "$ORFS_ADDR" > $cfg/ports/1/addr_traddr
echo 4420 > $cfg/ports/1/addr_trsvcid
ln -s $cfg/subsystems/bench $cfg/ports/1/subsystems/bench
echo "transport=rdma,traddr=$ORFS_ADDR,trsvcid=4420,nqn=bench" > /dev/nvme-fabrics
for ((i = 0; i < 100; i++)); do [ -b /dev/nvme0n1 ] && break; sleep 0.1; done
[ -b /dev/nvme0n1 ] || fail "NVMe-oF namespace did not appear"
on_exit "echo 1 > /sys/class/nvme/nvme0/delete_controller"

# run NAME DEVICE RW BS QD: one fio job; prints "MBps lat_us p99_us iops".
run() {
	fio_figures "$1" --filename="$2" --direct=1 --ioengine=libaio --rw="$3" --bs="$4" \
		--iodepth="$5" --size=$size --time_based --runtime="$secs" --ramp_time=2
}

# Fill both, so that reads read written blocks.
for dev in /dev/mxbd0 /dev/nvme0n1; do
	dd if=/dev/zero of=$dev bs=1M count=256 oflag=direct status=none
done

row() { bench_row "$out" "$@"; }
# Each job runs ROUNDS times on each device, alternating which goes first;
# the table has the median of each figure (single runs in this guest vary by
# up to 40%). Fields: bw lat p99 iops, as fio_figures prints them.
jobs=("seqread_1M_qd16 read 1M 16" "seqwrite_1M_qd16 write 1M 16"
      "randread_4k_qd1 randread 4k 1" "randwrite_4k_qd1 randwrite 4k 1"
      "randread_4k_qd32 randread 4k 32" "randwrite_4k_qd32 randwrite 4k 32")
declare -A fig
for ((round = 1; round <= rounds; round++)); do
	for job in "${jobs[@]}"; do
		set -- $job
		for d in $(turns $round mx nv); do
			dev=/dev/mxbd0
			[ $d = nv ] && dev=/dev/nvme0n1
			v=$(run "$d-$1-$round" $dev "$2" "$3" "$4")
			echo "round $round $d $1: $v"
			fig[$d-$1]+="$v;"
		done
	done
done
# pick D JOB FIELD: the median of FIELD (1-4) over the rounds of D's JOB
pick() {
	median $(tr ';' '\n' <<< "${fig[$1-$2]}" | awk -v f="$3" 'NF { print $f }')
}
for job in "${jobs[@]}"; do
	set -- $job
	case $1 in
	*_1M_*) row "${1}_MBps" "$(pick mx "$1" 1)" "$(pick nv "$1" 1)" MBps ;;
	*_qd1)
		row "${1}_lat_us" "$(pick mx "$1" 2)" "$(pick nv "$1" 2)" us
		row "${1}_p99_us" "$(pick mx "$1" 3)" "$(pick nv "$1" 3)" us
		;;
	*_qd32) row "${1}_iops" "$(pick mx "$1" 4)" "$(pick nv "$1" 4)" IOPS ;;
	esac
done

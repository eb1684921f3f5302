#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# MXBD against NVMe-oF RDMA in the same guest boot, the same fio jobs on
# /dev/mxbd0 (orfs-server volume) and on /dev/nvme0n1 (nvmet target with
# nvme_rdma), both over rxe0 and both backed by a file in tmpfs (buffered:
# tmpfs refuses O_DIRECT on 6.1): 1 MiB sequential read and write at depth
# 16, 4 KiB random read and write at depth 1 (mean and p99 latency) and at
# depth 32 (IOPS, and the guest's CPU time a request: at that depth both
# are bound by the two vCPUs). Each figure is the median of BENCH_ROUNDS runs
# (default 4) of BENCH_SECONDS (default 10) on each device.
# With BENCH_TRANSPORT=tcp (tests/bench/mxbd-tcp.sh) MXBD goes over knet's
# TCP transport and its peer is NVMe/TCP (nvmet_tcp, nvme_tcp), on the
# same address; a third device, MXBD over RDMA, runs the same jobs, and
# rows named *_vs_rdma give each TCP figure beside it. The server listens
# on both then, and gets -T twice the CPUs: each transport's threads as many as the
# CPUs, as a server listening on one of them has by default. Over TCP a
# NOP's round trip from the kernel (knet_test.ko, a third volume) is
# measured each round too, beside NVMe/TCP's 4 KiB read at depth 1.
# timeout: 1800
. "$(dirname "$0")/../guest/lib.sh"
tr=${BENCH_TRANSPORT:-rdma}
name=mxbd
[ "$tr" = rdma ] || name=mxbd-$tr
out=$ORFS_RESULTS/$name.tsv
: > "$out"
secs=${BENCH_SECONDS:-10}
rounds=${BENCH_ROUNDS:-4}
size=256M

# MXBD.
truncate -s 512M /tmp/mx.img
if [ "$tr" = tcp ]; then
	truncate -s 512M /tmp/mr.img
	truncate -s 1M /tmp/np.img
	start_server -a "tcp://$ORFS_ADDR" -T $((2 * $(nproc))) -b mx=/tmp/mx.img -b mr=/tmp/mr.img \
		-b np=/tmp/np.img
else
	start_server -b mx=/tmp/mx.img
fi
modprobe -a ib_core rdma_cm libcrc32c
insmod "$ORFS_KMOD/regcache/regcache.ko"
insmod "$ORFS_KMOD/knet/knet.ko"
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mx transport="$tr"
on_exit "rmmod mxbd; rmmod knet; rmmod regcache"
grep -qx "$tr" /sys/block/mxbd0/mxbd/transport || fail "mxbd0 is not over $tr"
devs="mx nv"
if [ "$tr" = tcp ]; then
	# Ours over RDMA beside it, as /dev/mxbd1.
	echo "server=$ORFS_ADDR volume=mr transport=rdma" > /sys/class/mxbd/attach
	grep -qx rdma /sys/block/mxbd1/mxbd/transport || fail "mxbd1 is not over rdma"
	devs="mx nv mr"
	# The test device, for NOPs from the kernel over TCP (the np volume).
	insmod "$ORFS_KMOD/tests/kmod/knet_test.ko"
	on_exit "rmmod knet_test"
fi

# NVMe-oF over the same transport, target and host in this guest.
truncate -s 512M /tmp/nv.img
modprobe -a nvmet "nvmet_$tr" "nvme_$tr"
cfg=/sys/kernel/config/nvmet
mkdir $cfg/subsystems/bench
echo 1 > $cfg/subsystems/bench/attr_allow_any_host
mkdir $cfg/subsystems/bench/namespaces/1
echo /tmp/nv.img > $cfg/subsystems/bench/namespaces/1/device_path
[ -e $cfg/subsystems/bench/namespaces/1/buffered_io ] && echo 1 > $cfg/subsystems/bench/namespaces/1/buffered_io
echo 1 > $cfg/subsystems/bench/namespaces/1/enable
mkdir $cfg/ports/1
echo "$tr" > $cfg/ports/1/addr_trtype
echo ipv4 > $cfg/ports/1/addr_adrfam
echo "$ORFS_ADDR" > $cfg/ports/1/addr_traddr
echo 4420 > $cfg/ports/1/addr_trsvcid
ln -s $cfg/subsystems/bench $cfg/ports/1/subsystems/bench
echo "transport=$tr,traddr=$ORFS_ADDR,trsvcid=4420,nqn=bench" > /dev/nvme-fabrics
for ((i = 0; i < 100; i++)); do [ -b /dev/nvme0n1 ] && break; sleep 0.1; done
[ -b /dev/nvme0n1 ] || fail "NVMe-oF namespace did not appear"
on_exit "echo 1 > /sys/class/nvme/nvme0/delete_controller"

# run NAME DEVICE RW BS QD: one fio job; prints "MBps lat_us p99_us iops".
run() {
	fio_figures "$1" --filename="$2" --direct=1 --ioengine=libaio --rw="$3" --bs="$4" \
		--iodepth="$5" --size=$size --time_based --runtime="$secs" --ramp_time=2
}

# busy_io DEV: "BUSY IOS": the CPU time of all the vCPUs not idle
# (/proc/stat: user, nice, system, irq, softirq and steal, in clock
# ticks) and the requests DEV has completed (reads and writes). An NVMe
# multipath head (nvmeAnB) counts them itself on 6.12, only its paths
# (nvmeAcCnB) do on 6.1: the larger of the two.
busy_io() {
	local own paths
	own=$(awk '{ print $1 + $5 }' "/sys/block/$1/stat")
	paths=$(cat /sys/block/"${1%n*}"c*n"${1##*n}"/stat 2>/dev/null |
		awk '{ n += $1 + $5 } END { print n + 0 }')
	echo "$(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat)" \
	     "$((own > paths ? own : paths))"
}
# run_cpu NAME DEVICE RW BS QD: run, plus the guest's CPU time a request
# (us, everything on both vCPUs: fio, the client, rxe, the server) over
# the steady part of the job, from 1 s after its ramp to 1 s before its
# end; prints "MBps lat_us p99_us iops cpu_us".
run_cpu() {
	local a b f=/tmp/$1.fig win=$((secs > 3 ? secs - 2 : 1)) pid
	run "$@" > "$f" &
	pid=$!
	sleep 3
	read -r -a a < <(busy_io "${2#/dev/}")
	sleep "$win"
	read -r -a b < <(busy_io "${2#/dev/}")
	wait "$pid" || fail "fio $1"
	echo "$(cat "$f") $(awk -v t=$((b[0] - a[0])) -v n=$((b[1] - a[1])) -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.1f", n ? t / hz * 1e6 / n : 0 }')"
}

# dev_of D: the device of D (mx, nv, mr)
dev_of() {
	case $1 in
	mx) echo /dev/mxbd0 ;;
	nv) echo /dev/nvme0n1 ;;
	mr) echo /dev/mxbd1 ;;
	esac
}

# Fill them, so that reads read written blocks.
for d in $devs; do
	dev=$(dev_of "$d")
	dd if=/dev/zero of=$dev bs=1M count=256 oflag=direct status=none
done

row() { bench_row "$out" "$@"; }
# Each job runs ROUNDS times on each device, alternating which goes first;
# the table has the median of each figure (single runs in this guest vary by
# up to 40%). Fields: bw lat p99 iops, as fio_figures prints them, and
# at depth 32 the CPU time a request (run_cpu).
jobs=("seqread_1M_qd16 read 1M 16" "seqwrite_1M_qd16 write 1M 16"
      "randread_4k_qd1 randread 4k 1" "randwrite_4k_qd1 randwrite 4k 1"
      "randread_4k_qd32 randread 4k 32" "randwrite_4k_qd32 randwrite 4k 32")
declare -A fig
nops=()
for ((round = 1; round <= rounds; round++)); do
	for job in "${jobs[@]}"; do
		set -- $job
		# shellcheck disable=SC2046 # the devices in this round's order
		for d in $(turns $round mx nv) $( [ "$tr" = rdma ] || echo mr); do
			dev=$(dev_of "$d")
			if [ "$4" = 32 ]; then
				v=$(run_cpu "$d-$1-$round" $dev "$2" "$3" "$4")
			else
				v=$(run "$d-$1-$round" $dev "$2" "$3" "$4")
			fi
			echo "round $round $d $1: $v"
			fig[$d-$1]+="$v;"
		done
	done
	# A NOP's round trip from the kernel over TCP: what any request to
	# the server costs before it does anything.
	if [ "$tr" = tcp ]; then
		v=$(KTEST_TRANSPORT=tcp "$ORFS_BIN/knet-test" -a "$ORFS_ADDR" -n np -s block -w nop -N 2000 |
		    nop_mean 2000)
		[ -n "$v" ] || fail "no NOP figure over TCP"
		echo "round $round nop: $v"
		nops+=("$v")
	fi
done
# pick D JOB FIELD: the median of FIELD (1-4) over the rounds of D's JOB
pick() {
	local v
	mapfile -t v < <(tr ';' '\n' <<< "${fig[$1-$2]}" | awk -v f="$3" 'NF { print $f }')
	median "${v[@]}"
}
for job in "${jobs[@]}"; do
	set -- $job
	case $1 in
	*_1M_*) row "${1}_MBps" "$(pick mx "$1" 1)" "$(pick nv "$1" 1)" MBps ;;
	*_qd1)
		row "${1}_lat_us" "$(pick mx "$1" 2)" "$(pick nv "$1" 2)" us
		row "${1}_p99_us" "$(pick mx "$1" 3)" "$(pick nv "$1" 3)" us
		;;
	*_qd32)
		row "${1}_iops" "$(pick mx "$1" 4)" "$(pick nv "$1" 4)" IOPS
		row "${1}_cpu_us" "$(pick mx "$1" 5)" "$(pick nv "$1" 5)" us
		;;
	esac
done
# Over TCP: the NOP's round trip beside NVMe/TCP's whole 4 KiB read at
# depth 1 (a floor of ours against the peer's figure, not a like job).
[ "$tr" = rdma ] || row nop_rtt_us_vs_nvme_read "$(median "${nops[@]}")" \
	"$(pick nv randread_4k_qd1 2)" us
# Over TCP: each TCP figure beside ours over RDMA, in the same boot.
[ "$tr" = rdma ] || for job in "${jobs[@]}"; do
	set -- $job
	case $1 in
	*_1M_*) row "${1}_MBps_vs_rdma" "$(pick mx "$1" 1)" "$(pick mr "$1" 1)" MBps ;;
	*_qd1) row "${1}_lat_us_vs_rdma" "$(pick mx "$1" 2)" "$(pick mr "$1" 2)" us ;;
	*_qd32) row "${1}_iops_vs_rdma" "$(pick mx "$1" 4)" "$(pick mr "$1" 4)" IOPS ;;
	esac
done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The server under many clients: aggregate throughput of 64 KiB writes with
# 8, 64 and 256 concurrent streams (one connection each, one request in
# flight each), and the server's peak resident memory in each run, on a
# fresh server with a 64 MiB buffer pool. Peers: for throughput, the
# 8-stream figure (the target is >= 95% of it at 256 streams); for memory,
# the pool size (the target is the pool plus a small constant). Then fair
# service: a 1 MiB writer beside a 4 KiB depth-64 writer on two volumes,
# against the same on two namespaces of an NVMe-oF RDMA target.
# timeout: 1000
. "$(dirname "$0")/../guest/lib.sh"

out=$ORFS_RESULTS/server.tsv
: > "$out"
pool=64
secs=${BENCH_SECONDS:-10}
truncate -s 1G /tmp/benchvol
# One host runs every stream here; a server lets one host hold 64
# connections by default (security.md, "Per-host bounds").
printf 'peer_connections 256\n' > /tmp/bench-server.conf

declare -A streams_mbps
for n in 8 64 256; do
	start_server -c /tmp/bench-server.conf -b bench=/tmp/benchvol -m $pool
	"$ORFS_BIN/knet-load" -a "$ORFS_ADDR" -n bench -w write -S $n -q 1 -b 65536 -T "$secs" \
		> "/tmp/load-$n.out" 2>&1 || { cat "/tmp/load-$n.out"; fail "knet-load with $n streams"; }
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$ORFS_SERVER_PID/status")
	stop_server
	grep '^write:' "/tmp/load-$n.out"
	mbps=$(sed -n 's/^result: .* MBps=\([0-9.]*\) .*/\1/p' "/tmp/load-$n.out")
	[ -n "$mbps" ] && [ -n "$hwm" ] || fail "no figures for $n streams"
	streams_mbps[$n]=$mbps
	printf 'rss_MB_%s\t%.1f\t%s\tMB\n' "$n" "$(echo "$hwm / 1024" | bc -l)" "$pool" >> "/tmp/rss.tsv"
	echo "$n streams: $mbps MB/s, server peak RSS $((hwm / 1024)) MiB"
done
{
	printf 'write_MBps_8\t%s\t\tMBps\n' "${streams_mbps[8]}"
	printf 'write_MBps_64\t%s\t%s\tMBps\n' "${streams_mbps[64]}" "${streams_mbps[8]}"
	printf 'write_MBps_256\t%s\t%s\tMBps\n' "${streams_mbps[256]}" "${streams_mbps[8]}"
} >> "$out"
cat /tmp/rss.tsv >> "$out"
# /tmp is half the guest's memory: the next part's four files need the room.
rm -f /tmp/benchvol

# Fair service: a 1 MiB writer (depth 1) on one volume beside a 4 KiB
# random writer at depth 64 on another volume of the same server, for
# BENCH_SECONDS; the worst and mean completion of a 1 MiB write and the
# bytes each got. Peer: the same two jobs on two namespaces of one NVMe-oF
# RDMA target (nvmet + nvme_rdma) in this boot, both backed by tmpfs files.
truncate -s 512M /tmp/fa /tmp/fb /tmp/na /tmp/nb
start_server -b fa=/tmp/fa -b fb=/tmp/fb
modprobe -a ib_core rdma_cm libcrc32c nvmet nvmet_rdma nvme_rdma
insmod "$ORFS_KMOD/regcache/regcache.ko"
insmod "$ORFS_KMOD/knet/knet.ko"
insmod "$ORFS_KMOD/mxbd/mxbd.ko"
on_exit "rmmod mxbd; rmmod knet; rmmod regcache"
for v in fa fb; do "$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" $v > /dev/null; done
on_exit '"$ORFS_PROJ/tools/mxbdctl" detach mxbd1; "$ORFS_PROJ/tools/mxbdctl" detach mxbd0'
cfg=/sys/kernel/config/nvmet
mkdir $cfg/subsystems/fair
echo 1 > $cfg/subsystems/fair/attr_allow_any_host
for n in 1 2; do
	mkdir $cfg/subsystems/fair/namespaces/$n
	echo "/tmp/n$([ $n = 1 ] && echo a || echo b)" > $cfg/subsystems/fair/namespaces/$n/device_path
	[ -e $cfg/subsystems/fair/namespaces/$n/buffered_io ] &&
		echo 1 > $cfg/subsystems/fair/namespaces/$n/buffered_io
	echo 1 > $cfg/subsystems/fair/namespaces/$n/enable
done
mkdir $cfg/ports/1
echo rdma > $cfg/ports/1/addr_trtype
echo ipv4 > $cfg/ports/1/addr_adrfam
echo "$ORFS_ADDR" > $cfg/ports/1/addr_traddr
echo 4420 > $cfg/ports/1/addr_trsvcid
ln -s $cfg/subsystems/fair $cfg/ports/1/subsystems/fair
echo "transport=rdma,traddr=$ORFS_ADDR,trsvcid=4420,nqn=fair" > /dev/nvme-fabrics
for ((i = 0; i < 100; i++)); do [ -b /dev/nvme0n2 ] && break; sleep 0.1; done
[ -b /dev/nvme0n2 ] || fail "NVMe-oF namespaces did not appear"
on_exit "echo 1 > /sys/class/nvme/nvme0/delete_controller"

# mixed SMALL BIG: the two jobs at once; prints "worst_ms mean_ms big_MBps small_MBps".
mixed() {
	fio --output-format=json --output=/tmp/fair.json --direct=1 --ioengine=libaio \
		--time_based --runtime="$secs" \
		--name=small --filename="$1" --rw=randwrite --bs=4k --iodepth=64 \
		--name=big --filename="$2" --rw=write --bs=1M --iodepth=1 > /dev/null || fail "fio on $1 and $2"
	python3 - /tmp/fair.json <<'PY'
import json, sys
jobs = {j["jobname"]: j["write"] for j in json.load(open(sys.argv[1]))["jobs"]}
b, s = jobs["big"], jobs["small"]
print("%.1f %.1f %.2f %.2f" % (b["clat_ns"]["max"] / 1e6, b["clat_ns"]["mean"] / 1e6,
                              b["bw_bytes"] / 1e6, s["bw_bytes"] / 1e6))
PY
}
read -r mw mm mb ms < <(mixed /dev/mxbd0 /dev/mxbd1)
read -r nw nm nb ns < <(mixed /dev/nvme0n1 /dev/nvme0n2)
echo "MXBD: 1 MiB writes worst $mw ms, mean $mm ms, $mb MB/s beside 4 KiB at $ms MB/s"
echo "NVMe-oF: 1 MiB writes worst $nw ms, mean $nm ms, $nb MB/s beside 4 KiB at $ns MB/s"
bench_row "$out" big_1M_worst_ms_beside_4k_qd64 "$mw" "$nw" ms
bench_row "$out" big_1M_mean_ms_beside_4k_qd64 "$mm" "$nm" ms
bench_row "$out" big_1M_MBps_beside_4k_qd64 "$mb" "$nb" MBps
bench_row "$out" small_4k_qd64_MBps_beside_1M "$ms" "$ns" MBps

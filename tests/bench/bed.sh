#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Calibration of the test bed: what raw soft-RoCE gives between two
# userspace processes in this guest (perftest over rdma_cm on rxe0). Every
# other benchmark's figures are bounded by these; they have no peer.
# timeout: 600
. "$(dirname "$0")/../guest/lib.sh"

out=$ORFS_RESULTS/bed.tsv
: > "$out"
# perf NAME UNIT COLUMN TOOL ARGS...: run a perftest pair, record one figure
perf() {
	local metric=$1 unit=$2 v
	shift 2
	v=$(perftest "$@") || fail "$2 failed"
	printf '%s\t%s\t\t%s\n' "$metric" "$v" "$unit" >> "$out"
	echo "$metric $v $unit"
}

# Bandwidth tools print: bytes iterations peak average msgrate.
perf rdma_write_bw_1M MBps 4 ib_write_bw -s 1048576 -n 200 -F
perf rdma_read_bw_1M MBps 4 ib_read_bw -s 1048576 -n 200 -F
# Latency tools print: bytes iterations min max typical avg stdev 99% 99.9%.
perf rdma_send_lat_64 us 6 ib_send_lat -s 64 -n 2000 -F
perf rdma_read_lat_4k us 6 ib_read_lat -s 4096 -n 1000 -F

# Our request/reply round trip (knet-ping NOPs to orfs-server, both waiting
# on completion channels) against perftest's send/recv round trip (twice its
# one-way figure, busy polling): the control cost of one request.
mkdir -p /tmp/bench-export
start_server -e bench=/tmp/bench-export,no_root_squash
"$ORFS_BIN/knet-ping" -a "$ORFS_ADDR" -n bench -c 2000 > /tmp/nop.out || { cat /tmp/nop.out; fail "knet-ping"; }
cat /tmp/nop.out
ours=$(nop_mean 2000 < /tmp/nop.out)
peer=$(awk -F'\t' '$1 == "rdma_send_lat_64" { printf "%.2f", 2 * $2 }' "$out")
[ -n "$ours" ] && [ -n "$peer" ] || fail "no NOP figure"
printf 'request_rtt_nop\t%s\t%s\tus\n' "$ours" "$peer" >> "$out"
stop_server

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The server under many clients: aggregate throughput of 64 KiB writes with
# 8, 64 and 256 concurrent streams (one connection each, one request in
# flight each), and the server's peak resident memory in each run, on a
# fresh server with a 64 MiB buffer pool. Peers: for throughput, the
# 8-stream figure (the target is >= 95% of it at 256 streams); for memory,
# the pool size (the target is the pool plus a small constant).
# timeout: 900
. "$(dirname "$0")/../guest/lib.sh"

out=$ORFS_RESULTS/server.tsv
: > "$out"
pool=64
secs=${BENCH_SECONDS:-10}
truncate -s 1G /tmp/benchvol

for n in 8 64 256; do
	start_server -b bench=/tmp/benchvol -m $pool
	"$ORFS_BIN/knet-load" -a "$ORFS_ADDR" -n bench -w write -S $n -q 1 -b 65536 -T "$secs" \
		> "/tmp/load-$n.out" 2>&1 || { cat "/tmp/load-$n.out"; fail "knet-load with $n streams"; }
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$ORFS_SERVER_PID/status")
	stop_server
	grep '^write:' "/tmp/load-$n.out"
	mbps=$(sed -n 's/^result: .* MBps=\([0-9.]*\) .*/\1/p' "/tmp/load-$n.out")
	[ -n "$mbps" ] && [ -n "$hwm" ] || fail "no figures for $n streams"
	eval "mbps_$n=$mbps"
	printf 'rss_MB_%s\t%.1f\t%s\tMB\n' "$n" "$(echo "$hwm / 1024" | bc -l)" "$pool" >> "/tmp/rss.tsv"
	echo "$n streams: $mbps MB/s, server peak RSS $((hwm / 1024)) MiB"
done
printf 'write_MBps_8\t%s\t\tMBps\n' "$mbps_8" >> "$out"
printf 'write_MBps_64\t%s\t%s\tMBps\n' "$mbps_64" "$mbps_8" >> "$out"
printf 'write_MBps_256\t%s\t%s\tMBps\n' "$mbps_256" "$mbps_8" >> "$out"
cat /tmp/rss.tsv >> "$out"

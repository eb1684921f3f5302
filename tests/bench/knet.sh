#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# knet from the kernel against orfs-server, through the test device:
# latency of a 4 KiB request with each completion strategy (one at a time:
# the caller sleeping on its request, wait-for-any, callbacks, completion
# groups of two endpoints with a serving thread each), and the
# bandwidth of 1 MiB transfers kept 8 deep against perftest's
# ib_write_bw/ib_read_bw between two processes on the same rxe device; and
# the cost of user memory per request (reads into the program's buffer)
# for 8 KiB to 1 MiB (smaller reads travel inline through a kernel buffer,
# copied out by knet_call()): a registration-cache hit against pinning per request
# (cache off), and a cache miss (a buffer never used) against the same.
# timeout: 600
. "$(dirname "$0")/../guest/lib.sh"
out=$ORFS_RESULTS/knet.tsv
: > "$out"
kt() { "$ORFS_BIN/knet-test" -a "$ORFS_ADDR" "$@"; }
row() { bench_row "$out" "$@"; }

load_suite
insmod "$ORFS_KMOD/tests/kmod/knet_test.ko"
on_exit "rmmod knet_test"
truncate -s 512M /tmp/bvol
start_server -b bvol=/tmp/bvol

# One request at a time: NOPs through knet_call(), 4 KiB block requests
# (inline: under the inline size) with wait-any and with callbacks.
nop=$(kt -n bvol -w nop -N 2000 | nop_mean 2000)
wa=$(kt -n bvol -w batch -b 4096 -N 1000 -q 1 | sed -n 's/.* \([0-9.]*\) us per request.*/\1/p')
cb=$(kt -n bvol -w batch-cb -b 4096 -N 1000 -q 1 | sed -n 's/.* \([0-9.]*\) us per request.*/\1/p')
gr=$(kt -n bvol -w batch-groups -Q 2 -b 4096 -N 1000 -q 1 | sed -n 's/.* \([0-9.]*\) us per request.*/\1/p')
[ -n "$nop" ] && [ -n "$wa" ] && [ -n "$cb" ] && [ -n "$gr" ] || fail "no latency figures"
row nop_call_lat_us "$nop" "" us
row req_4k_waitany_lat_us "$wa" "" us
row req_4k_callback_lat_us "$cb" "" us
row req_4k_groups_lat_us "$gr" "" us

# User memory. Per request, end to end: a registration-cache hit against
# pinning per request (cache off). Inside regcache (its own clock): the
# time of a hit and of a miss (pin, map, notifier) against a pin with the
# cache off, from the counters of its debugfs stats.
stats=/sys/kernel/debug/regcache/$ORFS_RDMA_DEV/stats
st() { awk -v k="$1" '$1 == k { print $2 }' "$stats"; }
us_of() { sed -n 's/.*mean \([0-9.]*\) us per request/\1/p'; }
per_us() { echo "$1 $2" | awk '{ printf "%.2f", $2 ? $1 / $2 / 1000 : 0 }'; }
for bs in 8192 65536 1048576; do
	n=$((bs > 65536 ? 64 : 400))
	h0=$(st hits); hn0=$(st hit_ns)
	hit=$(kt -n bvol -w reuse -b $bs -N $n -m user | us_of)
	hit_in=$(per_us $(($(st hit_ns) - hn0)) $(($(st hits) - h0)))
	m0=$(st misses); mn0=$(st miss_ns)
	kt -n bvol -w fresh -b $bs -N $n -m user > /dev/null
	miss_in=$(per_us $(($(st miss_ns) - mn0)) $(($(st misses) - m0)))
	m0=$(st misses); mn0=$(st miss_ns)
	off=$(kt -n bvol -w reuse -b $bs -N $n -m user-nocache | us_of)
	off_in=$(per_us $(($(st miss_ns) - mn0)) $(($(st misses) - m0)))
	[ -n "$hit" ] && [ -n "$off" ] || fail "no regcache figures for $bs"
	row "user_req_${bs}_cache_on_us" "$hit" "$off" us
	row "regcache_hit_${bs}_us" "$hit_in" "$off_in" us
	row "regcache_miss_${bs}_us" "$miss_in" "$off_in" us
done
cat "$stats"

# Bandwidth: 1 MiB blocks, 8 in flight, written then read back. The
# server pulls written data with RDMA READ and pushes read data with RDMA
# WRITE: each pass against the perftest run of that operation.
kt -n bvol -w batch -b 1048576 -N 256 -q 8 > /tmp/bw.out
cat /tmp/bw.out
bw=$(sed -n 's/.*depth 8: \([0-9.]*\) MB\/s.*/\1/p' /tmp/bw.out)
bw_w=$(sed -n 's/^passes: write \([0-9.]*\) MB\/s, read .*/\1/p' /tmp/bw.out)
bw_r=$(sed -n 's/^passes: write .*, read \([0-9.]*\) MB\/s$/\1/p' /tmp/bw.out)
stop_server
wbw=$(perftest 4 ib_write_bw -s 1048576 -n 200 -F) || fail "ib_write_bw failed"
rbw=$(perftest 4 ib_read_bw -s 1048576 -n 200 -F) || fail "ib_read_bw failed"
[ -n "$bw" ] && [ -n "$bw_w" ] && [ -n "$bw_r" ] && [ -n "$wbw" ] && [ -n "$rbw" ] ||
	fail "no bandwidth figures"
row bw_1M_q8_write_MBps "$bw_w" "$rbw" MBps
row bw_1M_q8_read_MBps "$bw_r" "$wbw" MBps
row bw_1M_q8_MBps "$bw" "$(echo "($wbw + $rbw) / 2" | bc -l | xargs printf '%.2f')" MBps

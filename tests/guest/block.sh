#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The block service end to end over rxe, with the userspace client: data
# pulled by the server (RDMA READ, or R2T and DATA in a TCP run) for writes
# and pushed (RDMA WRITE, or DATA) for reads, through a pool small enough that requests must queue for buffers,
# with segment lists that straddle the server's chunks, and inline for
# small blocks; every byte read back is compared, and the backing file is
# checked independently. A read-only volume refuses writes. The server
# busy-polls (-B), so both ways of waiting for completions are covered by
# the guest tests (the others sleep in epoll), and it runs two progress
# threads (-T 2), which share out the connections and the 4 buffers.
# lanes: check=6.12/siw all=*
# timeout: 300
. "$(dirname "$0")/lib.sh"
load() { timeout 120 "$ORFS_BIN/knet-load" -a "$ORFS_ADDR" "$@"; }

truncate -s 64M /tmp/vol0
truncate -s 8M /tmp/ro0
# A 64 MiB volume on a 2 MiB file system: writes past 2 MiB fail.
mkdir -p /tmp/small
mount -t tmpfs -o size=2m tmpfs /tmp/small
on_exit "umount /tmp/small"
truncate -s 64M /tmp/small/full0
# 1 MiB of pool in 256 KiB chunks: 4 buffers for everything. A TCP run has
# two threads for RDMA and two for TCP, which are the odd ones.
threads=2 pair="0 1"
[ "$ORFS_TRANSPORT" = rdma ] || threads=4 pair="1 3"
start_server -b vol0=/tmp/vol0 -b ro0=/tmp/ro0,ro -b full0=/tmp/small/full0 -m 1 -C 256 -t 2 \
	-T $threads -B 500
expect_grep " $threads progress threads, poll 500 us\$" "$ORFS_SERVER_LOG"

step "INFO gives the volume's geometry"
load -n vol0 -w info | tee /tmp/info.out
expect_grep '^volume: size 67108864 logical_block 512 physical_block 4096 max_io 1048576 flags 0x6$' /tmp/info.out
load -n ro0 -w info > /tmp/info.out
expect_grep 'size 8388608 .* flags 0x1$' /tmp/info.out

step "64 KiB blocks, 4 streams x depth 4, 3 segments each: write then verify"
load -n vol0 -w verify -S 4 -q 4 -b 65536 -N 64 -g 3 -r 11 | tee /tmp/v1.out
expect_grep '^result: op=verify streams=4 bs=65536 .* errors=0 mismatches=0$' /tmp/v1.out

expect_eq "progress threads of the four streams' connections" "$(conn_threads volume vol0)" "$pair"

step "four clients connecting at once are spread over both threads"
n0=$(log_lines)
pids=()
for i in 1 2 3 4; do
	load -n vol0 -w read -S 1 -q 2 -b 65536 -T 2 > /tmp/burst$i.out &
	pids+=($!)
done
for i in 1 2 3 4; do
	wait "${pids[$((i - 1))]}" || { cat /tmp/burst$i.out; fail "client $i failed"; }
	expect_grep '^result: op=read .* errors=0 ' /tmp/burst$i.out
done
expect_eq "progress threads of the four clients" "$(conn_threads volume vol0 "$n0")" "$pair"

step "1 MiB blocks (4 chunks each) in 7 uneven segments, FUA"
load -n vol0 -w verify -S 2 -q 2 -b 1048576 -N 8 -g 7 -F -r 12 | tee /tmp/v2.out
expect_grep 'errors=0 mismatches=0$' /tmp/v2.out

step "small blocks travel inline"
load -n vol0 -w verify -S 1 -q 4 -b 4096 -N 256 -i -r 13 | tee /tmp/v3.out
expect_grep 'inline.* 0 errors, 0 mismatches' /tmp/v3.out

step "the bytes on the backing file are the ones written (1 MiB run, stream 0)"
python3 - /tmp/vol0 13 4096 256 <<'PY'
import struct, sys
path, seed, bs, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(path, 'rb') as f:
    data = f.read(bs * n)
for i in range(0, len(data), 8):
    want = ((i * 0x9e3779b97f4a7c15) & (2**64 - 1)) ^ seed
    got = struct.unpack_from('<Q', data, i)[0]
    if got != want:
        sys.exit('offset %d: %016x, want %016x' % (i, got, want))
print('backing file matches the pattern over %d bytes' % len(data))
PY

step "DISCARD, WRITE_ZEROES and FLUSH over the wire: zeroes exactly where trimmed"
load -n vol0 -w zero -S 2 -q 4 -b 65536 -N 32 -g 2 -r 14 | tee /tmp/z.out
expect_grep '^result: op=zero .* errors=0 mismatches=0$' /tmp/z.out

step "a read-only volume serves reads and refuses writes with EROFS"
load -n ro0 -w read -S 1 -b 65536 -T 1 > /tmp/ro.out
expect_grep 'errors=0' /tmp/ro.out
set +e
load -n ro0 -w write -S 1 -b 65536 -N 1 > /tmp/ro.out 2>&1; rc=$?
set -e
expect_eq "exit code of a refused write" "$rc" 1
expect_grep 'Read-only file system' /tmp/ro.out

step "a backing store that fails gives the client the error, not success"
set +e
load -n full0 -w write -S 1 -q 2 -b 65536 -N 64 > /tmp/full.out 2>&1; rc=$?
set -e
cat /tmp/full.out
expect_eq "exit code" "$rc" 1
expect_grep 'No space left on device' /tmp/full.out

step "the server waited for buffers, did small I/O of its tmpfs volumes without a worker, found work by polling, and ends cleanly"
stop_server
cat "$ORFS_SERVER_LOG" | tail -n 5
expect_grep 'stopped \([1-9][0-9]* waits for a buffer, [1-9][0-9]* jobs done without a worker \(0 file service requests\), [1-9][0-9]* polls found work, [0-9]+ open files used again, [0-9]+ directories used again\)' "$ORFS_SERVER_LOG"
echo ok

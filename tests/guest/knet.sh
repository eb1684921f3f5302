#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# knet in the kernel against the real server over rxe, through the test
# device: the connect protocol (accepted, refused with its reason), NOPs,
# and verified block I/O whose data knet moves from kernel memory of every
# kind it describes (inline, a kmalloc buffer through FRWR, pages at page
# and odd offsets, 1 MiB spanning 257 pages); then a server that lies, one
# that dies, no server at all, and unloading with a live endpoint; every
# object knet counts is gone at the end.
# lanes: check=6.12/siw,6.1/tcp all=*
# timeout: 300
. "$(dirname "$0")/lib.sh"
kt() { timeout 120 "$ORFS_BIN/knet-test" -a "$ORFS_ADDR" "$@"; }

load_suite
insmod "$ORFS_KMOD/tests/kmod/knet_test.ko"
on_exit "rmmod knet_test"
truncate -s 64M /tmp/kvol
start_server -b kvol=/tmp/kvol

step "knet connects with the protocol's framing and gets the server's limits"
kt -n kvol -w connect | tee /tmp/out
# The server's 1 MiB, or less when the device maps less in one go.
maxio=$(dev_max_io)
echo "largest request on $ORFS_RDMA_DEV: $maxio bytes"
expect_grep "^connected: credits 32 inline_max [0-9]+ max_io $maxio\$" /tmp/out
expect_grep "connected to $ORFS_ADDR:20077 \(volume 'kvol'\)" <(dmesg)

step "a refused connection reports the server's reason"
set +e
kt -n nosuch -w connect > /tmp/out; rc=$?
set -e
cat /tmp/out
expect_eq "exit code" "$rc" 3
expect_grep 'rejected: no such export or volume' /tmp/out

step "NOP round trips"
kt -n kvol -w nop -N 500 | tee /tmp/out
expect_grep '^500 NOPs: mean ' /tmp/out

step "verified I/O through every kind of descriptor"
for args in "-b 2048 -N 16 -m kvec" "-b 65536 -N 16 -m kvec" "-b 65536 -N 16 -m pages" \
	    "-b 65536 -N 16 -m pages -o 100" "-b $maxio -N 4 -m pages" "-b $maxio -N 4 -m pages -o 3000"; do
	kt -n kvol -w verify $args | tee /tmp/out
	expect_grep '^verified ' /tmp/out
done
expect_grep 'kvec, page offset 0, 1 pieces\): 16 read inline' <(kt -n kvol -w verify -b 2048 -N 16 -m kvec)

step "asynchronous requests, 48 in flight over 32 credits: both completion strategies"
kt -n kvol -w batch -b 65536 -N 200 -q 48 | tee /tmp/out
expect_grep '^batch wait-any: 200 blocks .* 0 errors, 0 mismatches, [1-9][0-9]* credit waits$' /tmp/out
kt -n kvol -w batch-cb -b 16384 -N 300 -q 8 -o 512 | tee /tmp/out
expect_grep '^batch callbacks: 300 blocks .* 0 errors, 0 mismatches' /tmp/out
kt -n kvol -w batch-cb -b 1024 -N 300 -q 16 | tee /tmp/out
expect_grep '^batch callbacks: 300 blocks .* 0 errors, 0 mismatches' /tmp/out

step "tracepoints on the request path: submit and complete"
tr=/sys/kernel/tracing
mountpoint -q $tr || { mount -t tracefs nodev $tr && on_exit "umount $tr"; }
# Left on, enabling an event also hooks the scheduler's own tracepoints (to
# record command names), which patches the scheduler's hot code while the
# other vCPU runs it: QEMU's TCG was seen to get that wrong ("Oops: int3" in
# ttwu_do_activate; Documentation/testbed.md). Our events need no such hook.
echo 0 > $tr/options/record-cmd
echo 1 > $tr/events/knet/enable
on_exit "echo 0 > $tr/events/knet/enable"
: > $tr/trace
kt -n kvol -w verify -b 65536 -N 4 -m pages > /dev/null
echo 0 > $tr/events/knet/enable
echo 1 > $tr/options/record-cmd
grep -E 'knet_(submit|complete)' $tr/trace | head -n 4
expect_grep 'knet_submit: ep=[0-9]+ tag=0x[0-9a-f]+ op=[0-9]+ len=65536 rdma' $tr/trace
expect_grep 'knet_complete: ep=[0-9]+ tag=0x[0-9a-f]+ error=0 status=0 [0-9]+ us' $tr/trace

step "completion groups: 3 endpoints, requests steered across them, one kernel thread each"
kt -n kvol -w batch-groups -Q 3 -b 65536 -N 300 -q 40 | tee /tmp/out
expect_grep '^groups: 3 endpoints, one thread each; the least busy collected [1-9][0-9]*$' /tmp/out
expect_grep '^batch groups: 300 blocks .* 0 errors, 0 mismatches' /tmp/out
expect_grep 'connected to .*kvol' <(dmesg)

step "the endpoint's counters: requests, in flight, bytes inline and by RDMA, credit stalls, latency"
# One process keeps an endpoint open while we read its debugfs entry.
kt -n kvol -w batch -b 65536 -N 400 -q 24 > /tmp/out &
bg=$!
on_exit "kill $bg 2>/dev/null; wait $bg 2>/dev/null"
# Each look takes one snapshot of the file and checks that snapshot: the
# batch may end, and its entry go, between two reads of the file.
ep=""
found=0
for ((i = 0; i < 100; i++)); do
	ep=$(ls -d /sys/kernel/debug/knet/endpoints/* 2>/dev/null | sort -t / -k 7 -n | tail -n 1 || true)
	if [ -n "$ep" ] && cat "$ep/stats" > /tmp/stats 2>/dev/null &&
	   grep -q '^requests [1-9]' /tmp/stats; then
		found=1
		break
	fi
	sleep 0.1
done
[ "$found" = 1 ] || fail "no endpoint with requests in debugfs while the batch ran (last seen: '${ep:-none}')"
wait $bg
cat /tmp/stats
expect_grep "^peer $ORFS_ADDR:20077$" /tmp/stats
expect_grep '^requests [1-9][0-9]*$' /tmp/stats
expect_grep '^bytes_rdma [1-9][0-9]*$' /tmp/stats
expect_grep '^errors 0$' /tmp/stats
expect_grep '^in_flight [0-9]+$' /tmp/stats
# Taken while the batch runs: at least its first request, never more than its depth.
peak=$(awk '$1 == "in_flight_peak" { print $2 }' /tmp/stats)
[ "${peak:-0}" -ge 1 ] && [ "$peak" -le 24 ] || fail "in_flight_peak '$peak' for a batch of depth 24"
expect_grep '^latency_us <16:[0-9]+ <32:' /tmp/stats
[ ! -e "$ep" ] || fail "the endpoint's debugfs entry outlived it"

step "a server that lies: the request fails with EPROTO, the endpoint is dropped, no oops"
for fault in tag inline body opcode; do
	stop_server
	ORFS_SERVER_FAULT=$fault start_server -F -b kvol=/tmp/kvol
	set +e
	kt -n kvol -w verify -b 2048 -N 8 -m kvec > /tmp/out 2>&1; rc=$?
	set -e
	cat /tmp/out
	expect_eq "exit code with a lying server ($fault)" "$rc" 1
	expect_grep 'Protocol error' /tmp/out
done
dmesg | grep -E 'knet: (reply for no request|malformed reply|reply that does not fit)' | tail -n 4
expect_grep 'knet: reply that does not fit its request \(operation, size\)' <(dmesg)
stop_server
start_server -b kvol=/tmp/kvol

step "a server that keeps writing into a read's memory after the client gave up: nothing lands once the call returned"
for m in kvec pages; do
	stop_server
	ORFS_SERVER_FAULT=late-write start_server -F -b kvol=/tmp/kvol
	kt -n kvol -w late -b 262144 -N 1500 -m $m > /tmp/out 2>&1 || { cat /tmp/out; fail "late writes ($m)"; }
	cat /tmp/out
	# Over TCP the second DATA of the same range is already a lie.
	why="Connection timed out"
	[ "$ORFS_TRANSPORT" != tcp ] || why="Protocol error"
	expect_grep "^late: the read ended with $why; 0 bytes of its memory changed" /tmp/out
	late() { grep -q 'late-write fault: [0-9]* RDMA WRITEs' "$ORFS_SERVER_LOG"; }
	wait_until 100 late || fail "the server's late writes did not end"
	n=$(sed -n 's/.*late-write fault: \([0-9]*\) RDMA WRITEs.*/\1/p' "$ORFS_SERVER_LOG")
	echo "the server wrote the read's data $n times before its writes stopped reaching the client"
	[ "$n" -gt 1 ] || fail "the server did not keep writing ($n)"
done
# The request ended only once the server could no longer reach its memory.
expect_grep 'knet: [0-9]+ requests ended once the server could no longer reach their memory' <(dmesg)
stop_server
start_server -b kvol=/tmp/kvol

step "the server dies: requests fail, nothing hangs, the module unloads"
kt -n kvol -w verify -b "$maxio" -N 400 -m pages > /tmp/bg.out 2>&1 &
bg=$!
sleep 3
kill_server
set +e
wait $bg; rc=$?
set -e
cat /tmp/bg.out
[ "$rc" -ne 0 ] || fail "the client did not notice the server's death"
echo ok

step "nobody listening: the connect is refused at once, without a server's reason"
t0=$(date +%s)
set +e
kt -n kvol -w connect > /tmp/out; rc=$?
set -e
cat /tmp/out
expect_eq "exit code with no server" "$rc" 3
expect_grep '^connect: Connection refused$' /tmp/out
[ $(($(date +%s) - t0)) -le "$(slow 5)" ] || fail "a refused connect took $(($(date +%s) - t0)) s"

step "unloading with a live endpoint is refused; once it is gone knet holds nothing"
start_server -b kvol=/tmp/kvol
objs=/sys/kernel/debug/knet/objects
obj() { awk -v k="$1" '$1 == k { print $2 }' "$objs"; }
obj_is() { [ "$(obj "$1")" = "$2" ]; }
kt -n kvol -w batch -b 65536 -N 3000 -q 8 > /tmp/bg.out 2>&1 &
bg=$!
wait_until 100 obj_is endpoints 1 || true
cat "$objs"
expect_eq "live endpoints" "$(obj endpoints)" 1
if [ "$ORFS_TRANSPORT" = tcp ]; then
	expect_eq "registrations of a TCP endpoint" "$(obj mrs)" 0
else
	[ "$(obj mrs)" -gt 0 ] || fail "no registration counted for a live endpoint"
fi
expect_fail rmmod knet_test
expect_fail rmmod knet
kill "$bg"
wait "$bg" 2>/dev/null || true
wait_until 100 obj_is endpoints 0 || true
cat "$objs"
for o in endpoints groups mrs user_pins dma_maps; do
	expect_eq "knet $o once the process is gone" "$(obj $o)" 0
done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# orfs-server in the guest over rxe, driven by the userspace client: the
# connect protocol (accept, reject with a reason), credits, NOP round trips,
# malformed messages answered with an error while the link survives, a
# message too short to answer drops the link, and a clean SIGTERM.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 180
. "$(dirname "$0")/lib.sh"
ping() { timeout 60 "$ORFS_BIN/knet-ping" -a "$ORFS_ADDR" "$@"; }

mkdir -p /tmp/export
truncate -s 16M /tmp/volume
start_server -e data=/tmp/export,no_root_squash -b vol0=/tmp/volume

step "a client connects to an export and gets credits and limits"
ping -n data -c 200 | tee /tmp/ping.out
expect_grep '^connected: version 1 credits 8 ' /tmp/ping.out
expect_grep '^200 NOPs: mean ' /tmp/ping.out

step "the block service is a separate namespace"
ping -s block -n vol0 -c 5 > /tmp/ping.out
expect_grep '^5 NOPs' /tmp/ping.out
set +e
ping -s block -n data -c 1 > /tmp/ping.out; rc=$?
set -e
expect_eq "exit code for an export asked as a volume" "$rc" 3
expect_grep 'rejected: no such export or volume' /tmp/ping.out

step "unknown names and other versions are rejected with their reason"
set +e
ping -n nosuch -c 1 > /tmp/ping.out; rc=$?
set -e
expect_eq "exit code" "$rc" 3
expect_grep 'rejected: no such export or volume' /tmp/ping.out
set +e
ping -n data -V 7 -c 1 > /tmp/ping.out; rc=$?
set -e
expect_eq "exit code" "$rc" 3
expect_grep 'rejected: unsupported protocol version \(server speaks version 1\)' /tmp/ping.out

step "malformed messages get an error reply and the connection goes on"
for kind in magic reply segs length truncated; do
	ping -n data -c 3 -x "$kind" > /tmp/ping.out || { cat /tmp/ping.out; fail "$kind"; }
	expect_grep "^malformed '$kind': answered with status 74 " /tmp/ping.out
	expect_grep '^3 NOPs' /tmp/ping.out
done
ping -n data -c 3 -x version > /tmp/ping.out
expect_grep "^malformed 'version': answered with status 71 " /tmp/ping.out
ping -n data -c 3 -x opcode > /tmp/ping.out
expect_grep "^malformed 'opcode': answered with status 95 " /tmp/ping.out

step "a message too short to answer drops only that connection"
ping -n data -c 0 -x tiny | tee /tmp/ping.out
expect_grep 'dropped the connection, as it must' /tmp/ping.out
expect_grep 'unreadable message, dropping the connection' "$ORFS_SERVER_LOG"
ping -n data -c 3 > /tmp/ping.out
expect_grep '^3 NOPs' /tmp/ping.out

step "the server logged connections and rejections readably"
cat "$ORFS_SERVER_LOG"
expect_grep 'connected to export .data.' "$ORFS_SERVER_LOG"
expect_grep "rejecting a connection: no such export or volume \('nosuch', service 1\)" "$ORFS_SERVER_LOG"

step "SIGTERM stops the server cleanly"
stop_server
expect_grep 'stopped' "$ORFS_SERVER_LOG"
# Every request is over, the dropped connection's too: none is counted twice.
expect_grep 'draining 0 requests' "$ORFS_SERVER_LOG"
echo ok

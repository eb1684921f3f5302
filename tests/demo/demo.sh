#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What `make demo` shows inside the guest. It runs the real components and
# prints what they report; it fails if any step fails.
# timeout: 300
. "$(dirname "$0")/../guest/lib.sh"
dbg=/sys/kernel/debug
say() { echo; echo ">>> $*"; }

say "Guest kernel $(uname -r); soft-RoCE device $ORFS_RDMA_DEV on $ORFS_DEV ($ORFS_ADDR)"
rdma link show

say "Loading the suite: regcache, knet, orfs, mxbd"
load_suite
lsmod | awk 'NR == 1 || /^(regcache|knet|orfs|mxbd) /'

say "knet sees these RDMA devices (debugfs knet/devices)"
cat $dbg/knet/devices
say "Upper layers registered with knet (debugfs knet/ulps)"
cat $dbg/knet/ulps
say "Registration cache of $ORFS_RDMA_DEV (debugfs regcache/$ORFS_RDMA_DEV/stats)"
cat "$dbg/regcache/$ORFS_RDMA_DEV/stats"
say "ORFS file system type and MXBD block major"
grep orfs /proc/filesystems
awk '$2 == "mxbd"' /proc/devices

say "RDMA over the bed: rdma_cm ping-pong with data verification (rping, 10 x 4 KiB)"
rping -s -a "$ORFS_ADDR" -p 7175 -C 10 -S 4096 > /tmp/rs.log 2>&1 &
sleep 1
n=$(rping -c -a "$ORFS_ADDR" -p 7175 -C 10 -S 4096 -V -v | grep -c '^ping data')
wait
echo "$n of 10 pings came back and verified"
expect_eq "verified pings" "$n" 10

say "Not in this build yet: the server, 'mount -t orfs' and attaching /dev/mxbd0"
if mount -t orfs "$ORFS_ADDR:/demo" /tmp 2>/dev/null; then fail "mount unexpectedly worked"; fi
dmesg | grep 'orfs: this build' | tail -n 1

say "Unloading the suite"
unload_suite
echo "all modules unloaded; demo done"

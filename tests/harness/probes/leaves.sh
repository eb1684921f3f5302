#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 60
#
# Guest half of tests/harness/test-freeze.sh: a script that passes but
# leaves behind one of each thing the guest's init clears between
# scripts: a process, a mount, a loop device, a device-mapper target and
# one of our modules. The init must clear them all and fail it.
set -e
sleep 600 &
mkdir -p /tmp/leaves
mount -t tmpfs tmpfs /tmp/leaves
truncate -s 8M /tmp/leaves.img
modprobe loop
modprobe dm_mod
loop=$(losetup -f --show /tmp/leaves.img)
dmsetup create leaves --noudevsync --table "0 8192 linear $loop 0"
insmod "$ORFS_KMOD/regcache/regcache.ko"
echo "leaves: left pid $! ($(cat /proc/$!/comm)), /tmp/leaves, $loop, dm leaves, regcache"

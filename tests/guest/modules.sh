#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The four modules load, register what they register, follow the RDMA
# devices that come and go, refuse unloading while used, and unload cleanly.
# lanes: check=6.12/rxe,6.1/rxe all=*/rxe
# timeout: 120
. "$(dirname "$0")/lib.sh"
dbg=/sys/kernel/debug

step "modules load in dependency order"
load_suite
for m in "${ORFS_MODULES[@]}"; do
	module_loaded "$m" || fail "$m is not loaded"
done

step "orfs registered its file system type"
expect_grep '[[:space:]]orfs$' /proc/filesystems

step "mxbd registered a block major and its attach and detach control files"
major=$(awk '$2 == "mxbd" { print $1 }' /proc/devices)
[ -n "$major" ] || fail "no mxbd major in /proc/devices"
expect_eq "control files" "$(ls /sys/class/mxbd | tr '\n' ' ')" "attach detach "

step "both upper layers are registered with knet"
expect_grep '^orfs service 1$' $dbg/knet/ulps
expect_grep '^mxbd service 2$' $dbg/knet/ulps

step "knet found the soft-RoCE device, with FRWR, and made its cache"
expect_grep "^$ORFS_RDMA_DEV ports 1 iwarp 0 frwr 1 " $dbg/knet/devices
expect_grep '^hits 0$' "$dbg/regcache/$ORFS_RDMA_DEV/stats"
expect_grep '^pinned_bytes 0$' "$dbg/regcache/$ORFS_RDMA_DEV/stats"

step "a device removed and added again is released and found again"
rdma link delete "$ORFS_RDMA_DEV"
if grep -q "^$ORFS_RDMA_DEV " $dbg/knet/devices; then fail "knet still lists $ORFS_RDMA_DEV"; fi
[ ! -e "$dbg/regcache/$ORFS_RDMA_DEV" ] || fail "the regcache of $ORFS_RDMA_DEV outlived it"
rdma link add "$ORFS_RDMA_DEV" type rxe netdev "$ORFS_DEV"
expect_grep "^$ORFS_RDMA_DEV " $dbg/knet/devices

step "a mount with bad options or no server is refused with a clear message"
# The kernel's own checks: -i, so that an installed mount.orfs (which
# refuses a bad source itself) is not run (tests/guest/packages.sh).
mkdir -p /tmp/mnt
expect_fail mount -i -t orfs -o rsize=100 "$ORFS_ADDR:/x" /tmp/mnt
expect_grep 'orfs: rsize=100: a multiple of 4096 up to 1 MiB' <(dmesg)
expect_fail mount -i -t orfs -o bogus "$ORFS_ADDR:/x" /tmp/mnt
expect_fail mount -i -t orfs "nohost/x" /tmp/mnt
expect_grep 'orfs: source nohost/x: expected SERVER:/EXPORT' <(dmesg)
expect_fail mount -i -t orfs "$ORFS_ADDR:/x" /tmp/mnt
expect_grep "orfs: cannot reach $ORFS_ADDR:20077 export 'x'" <(dmesg)
if grep -q ' /tmp/mnt ' /proc/mounts; then fail "a refused mount is mounted"; fi

step "knet and regcache cannot be unloaded while used"
expect_fail rmmod knet
expect_fail rmmod regcache
module_loaded knet || fail "knet went away while orfs and mxbd use it"

step "everything unloads and leaves nothing behind"
unload_suite
for m in "${ORFS_MODULES[@]}"; do
	if module_loaded "$m"; then fail "$m is still loaded"; fi
done
if grep -q orfs /proc/filesystems; then fail "orfs is still a file system type"; fi
if grep -q mxbd /proc/devices; then fail "the mxbd major is still registered"; fi
for d in knet regcache mxbd; do
	[ ! -e "$dbg/$d" ] || fail "debugfs $d outlived its module"
done

step "a second load and unload cycle works"
load_suite
unload_suite
echo "ok"

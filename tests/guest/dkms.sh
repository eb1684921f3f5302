#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The modules DKMS built for this kernel (scripts/dkms-build.sh, which make
# check runs before booting a guest) are the suite an admin gets: they pass
# the modules test, then mount an export and attach a volume whose data
# reads back.
# timeout: 240
. "$(dirname "$0")/lib.sh"
ORFS_KMOD=$ORFS_PROJ/build/dkms/kmod/$ORFS_KVER
export ORFS_KMOD

step "DKMS built the four modules for this kernel"
for m in "${ORFS_MODULES[@]}"; do
	[ -f "$ORFS_KMOD/$m/$m.ko" ] ||
		fail "no $ORFS_KMOD/$m/$m.ko: run scripts/dkms-build.sh (make check does)"
done
expect_eq "their kernel" "$(modinfo -F vermagic "$ORFS_KMOD/knet/knet.ko" | cut -d' ' -f1)" \
	"$ORFS_KVER"

step "the modules test passes with them"
"$(dirname "$0")/modules.sh" || fail "modules.sh with the modules DKMS built"

step "an export is mounted and a volume attached through them"
load_suite	# from $ORFS_KMOD: DKMS's
mkdir -p /tmp/dx /tmp/mnt
truncate -s 64M /tmp/dv
start_server -e data=/tmp/dx,no_root_squash -b vol=/tmp/dv
mount -t orfs "$ORFS_ADDR:/data" /tmp/mnt
on_exit "umount /tmp/mnt 2>/dev/null || true"
head -c 1048576 /dev/urandom > /tmp/ref
cp /tmp/ref /tmp/mnt/f
umount /tmp/mnt
cmp /tmp/ref /tmp/dx/f || fail "a file written through ORFS differs on the server"
dev=$("$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vol)
on_exit "$ORFS_PROJ/tools/mxbdctl detach ${dev#/dev/} force 2>/dev/null || true"
dd if=/tmp/ref of="$dev" bs=1M oflag=direct status=none
cmp <(dd if="$dev" bs=1M count=1 iflag=direct status=none) /tmp/ref ||
	fail "a volume's block read back differs"
cmp <(head -c 1048576 /tmp/dv) /tmp/ref || fail "the volume's file differs on the server"
"$ORFS_PROJ/tools/mxbdctl" detach "${dev#/dev/}"
stop_server
echo ok

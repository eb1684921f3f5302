#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS mount options: what /proc/mounts shows, bad options and sources
# refused with a message, the mount helper; remounts that change the
# attribute cache, soft/hard and ro/rw, and refuse what cannot change.
# lanes: check=6.12/siw all=*
# timeout: 180
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

step "mount: the options in effect are in /proc/mounts"
mnt -o acregmax=10,soft,timeo=50,retrans=2,regcache=off,rsize=262144
on_exit "umount -f /tmp/mnt 2>/dev/null || true"
grep ' /tmp/mnt ' /proc/mounts | tee /tmp/out
# Without nconnect=, a connection per CPU, four at most.
ncpu=$(nproc)
auto=$((ncpu < 4 ? ncpu : 4))
# The server's 1 MiB, or what the RDMA device maps in one registration.
expect_grep "^$ORFS_ADDR:/data /tmp/mnt orfs rw,.*addr=$ORFS_ADDR,port=20077,rsize=262144,wsize=$(dev_max_io),acregmin=3,acregmax=10,acdirmin=30,acdirmax=60,soft,timeo=50,retrans=2,regcache=off,nconnect=$auto,largefolio=$lf,locks=remote,writeback=unstable,transport=$ORFS_TRANSPORT " /tmp/out
expect_eq "knet endpoints of a mount on $ncpu CPUs" "$(ep_count)" $auto
umnt
mnt -o nconnect=1
expect_grep "addr=$ORFS_ADDR,.*,nconnect=1," /proc/mounts
expect_eq "knet endpoints with nconnect=1" "$(ep_count)" 1
umnt
expect_fail mnt -o acregmin=20,acregmax=10
expect_grep 'attribute cache minimum above its maximum' <(dmesg)
expect_fail mnt -o nconnect=0
expect_fail mnt -o nconnect=9
expect_grep 'nconnect=9: 1 to 8 connections' <(dmesg)
expect_fail mnt -o srcaddr=10.77.0
expect_grep 'srcaddr=10.77.0 is not an IPv4 or IPv6 address' <(dmesg)
# An address this host does not have: nothing to connect from.
expect_fail mnt -o srcaddr=192.0.2.9
mnt -o "srcaddr=$ORFS_ADDR"
expect_grep "addr=$ORFS_ADDR,.*,srcaddr=$ORFS_ADDR," /proc/mounts
umnt
mount -t orfs "$ORFS_ADDR:/nosuch" /tmp/mnt 2>/dev/null && fail "an unknown export mounted"
expect_grep "export 'nosuch' refused: no such export or volume" <(dmesg)
mnt -o ro
expect_fail touch /tmp/mnt/ro-test
umnt
# The mount helper resolves names (localhost: the kernel is handed 127.0.0.1).
"$ORFS_PROJ/tools/mount.orfs" "$ORFS_ADDR:/data" /tmp/mnt -o acregmin=1
expect_grep "addr=$ORFS_ADDR,.*acregmin=1," /proc/mounts
umnt
expect_fail "$ORFS_PROJ/tools/mount.orfs" localhost:/data /tmp/mnt
expect_grep "orfs: cannot reach 127.0.0.1:20077 export 'data'" <(dmesg)
expect_fail "$ORFS_PROJ/tools/mount.orfs" no-such-host.invalid:/data /tmp/mnt

step "remount: attribute cache times, soft/hard and ro/rw change; what cannot change is refused"
mnt -o actimeo=3600,nconnect=2
on_exit "umount -f /tmp/mnt 2>/dev/null || true"
echo one > $exp/rm-f
expect_eq "first read" "$(cat /tmp/mnt/rm-f)" one
# Changed on the server: the cached attributes (for an hour) hide it.
echo three > $exp/rm-f
expect_eq "size within the attribute timeout" "$(stat -c %s /tmp/mnt/rm-f)" 4
mount -o remount,noac,soft,retrans=5 /tmp/mnt
grep ' /tmp/mnt ' /proc/mounts | tee /tmp/out
expect_grep ",noac,soft,timeo=600,retrans=5," /tmp/out
expect_eq "size after a remount with noac" "$(stat -c %s /tmp/mnt/rm-f)" 6
expect_fail mount -o remount,ac,hard,acregmax=7 /tmp/mnt	# acregmin is 3600
expect_grep "attribute cache minimum above its maximum" <(dmesg | tail -n 3)
grep ' /tmp/mnt ' /proc/mounts | tee /tmp/out
expect_grep "acregmin=3600,acregmax=3600,.*,noac,soft," /tmp/out	# nothing changed
mount -o remount,ac,hard,actimeo=7 /tmp/mnt
grep ' /tmp/mnt ' /proc/mounts | tee /tmp/out
expect_grep "acregmin=7,acregmax=7,acdirmin=7,acdirmax=7,hard," /tmp/out
if grep -q noac /tmp/out; then fail "noac still shown after remount,ac"; fi
# What the mount's connections and page cache were made with stays.
fixed="rsize=65536 wsize=65536 nconnect=1 port=20078 timeo=50 addr=10.77.0.2 srcaddr=$ORFS_ADDR"
fixed="$fixed locks=local"
# (6.1 refuses largefolio=on at any mount: it has no folio size bound)
((k612 == 0)) || fixed="$fixed largefolio=off"
for o in $fixed; do
	expect_fail mount -o "remount,$o" /tmp/mnt
	expect_grep "${o%%=*}= cannot change on a remount" <(dmesg | tail -n 3)
done
grep ' /tmp/mnt ' /proc/mounts > /tmp/out2
cmp /tmp/out /tmp/out2 || fail "a refused remount changed the options"
# ... but given again as they are, they are taken (mount(8) may repeat them).
rsize=$(sed -n 's/.*,rsize=\([0-9]*\),.*/\1/p' /tmp/out2)
mount -o "remount,rsize=$rsize,nconnect=2,port=20077,addr=$ORFS_ADDR,timeo=600,locks=remote" /tmp/mnt
# Read-only: refused while a file is open for writing; then writes fail
# with EROFS and reads go on; read-write again.
exec 8>> /tmp/mnt/rm-f
expect_fail mount -o remount,ro /tmp/mnt
exec 8>&-
echo dirty > /tmp/mnt/rm-g
mount -o remount,ro /tmp/mnt
expect_grep "^$ORFS_ADDR:/data /tmp/mnt orfs ro," /proc/mounts
expect_eq "written before ro" "$(cat $exp/rm-g)" dirty
if touch /tmp/mnt/rm-h 2> /tmp/err; then fail "a create on a read-only remount"; fi
expect_grep "Read-only file system" /tmp/err
expect_eq "read on a read-only remount" "$(cat /tmp/mnt/rm-f)" three
mount -o remount,rw /tmp/mnt
touch /tmp/mnt/rm-h
rm /tmp/mnt/rm-f /tmp/mnt/rm-g /tmp/mnt/rm-h
umnt
echo ok

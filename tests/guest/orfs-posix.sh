#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS passes the POSIX checks of orfs-fstest on an ext4 export (first on
# ext4 itself, to check the checks), as root and as uid 1000; device
# nodes; on an export in memory the checks pass as on tmpfs, root's name
# operations on the progress thread; what the export's file system can do
# (reflink, dedupe, collapse, insert on XFS) passes through; a copy
# between two mounts goes through the client. The random
# sequences of operations are orfs-fsx.sh's.
# lanes: check=6.12/siw all=*
# timeout: 600
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

step "the POSIX checks pass on ext4 (the reference) and on ORFS exporting it, as root and uid 1000"
"$ft" /tmp/e4/ref 1000 | tee /tmp/ref.out || true	# counted below
mnt
mkdir /tmp/mnt/fs
"$ft" /tmp/mnt/fs 1000 | tee /tmp/orfs.out
expect_eq "checks passed on ORFS" "$(grep -c '^ok ' /tmp/orfs.out)" 21
# A mapped store past the end of a file shows once the file grows, on
# 6.1's ext4 (not on 6.12's): the reference is right on the others.
expect_eq "checks passed on ext4" "$(grep -v '^ok mmap-eof$' /tmp/ref.out | grep -c '^ok ')" 20
((!k612)) || expect_grep '^ok mmap-eof$' /tmp/ref.out
expect_grep '^direct: alignment 1$' /tmp/orfs.out
# A device node made through ORFS is one on the server too, and opens
# here as this host's device unless the mount says nodev.
mknod /tmp/mnt/fs/nulldev c 1 3
[ -c "$exp/fs/nulldev" ] && [ "$(stat -c %t:%T "$exp/fs/nulldev")" = 1:3 ] ||
	fail "the server's node is not character device 1:3"
echo gone > /tmp/mnt/fs/nulldev
mount -o remount,nodev /tmp/mnt
if (echo gone > /tmp/mnt/fs/nulldev) 2> /tmp/err; then fail "a device node opened on a nodev mount"; fi
expect_grep 'Permission denied' /tmp/err
mount -o remount,dev /tmp/mnt
rm -rf /tmp/mnt/fs
[ -z "$(ls -A $exp)" ] || fail "rm -rf left $(ls -A $exp)"
umnt

step "an export in memory, where root's name operations run on the server's progress thread: the POSIX checks pass as on tmpfs"
# /tmp is tmpfs. The reference is tmpfs itself: 6.1's has no user xattrs
# nor O_DIRECT, so what it fails ORFS over it may fail too, nothing more.
mkdir /tmp/memx /tmp/memref
stop_server
start_server -s $state -e data=$exp,no_root_squash -e mem=/tmp/memx,no_root_squash
mount -t orfs "$ORFS_ADDR:/mem" /tmp/mnt
"$ft" /tmp/memref 1000 > /tmp/ref.out || true
"$ft" /tmp/mnt 1000 > /tmp/orfs.out || true
cat /tmp/orfs.out
for c in $(sed -n 's/^ok //p' /tmp/ref.out); do
	grep -qx "ok $c" /tmp/orfs.out || fail "check $c passes on tmpfs, not on ORFS over tmpfs"
done
[ "$(grep -c '^ok ' /tmp/ref.out)" -ge 10 ] || fail "the reference passes too few checks"
expect_grep '^ok mmap-eof$' /tmp/orfs.out
find /tmp/mnt -mindepth 1 -delete
[ -z "$(ls -A /tmp/memx)" ] || fail "removing it all through ORFS left $(ls -A /tmp/memx)"
umnt
stop_server
n=$(names_here)
echo "$n file service requests ran on the progress thread"
[ "${n:-0}" -ge 200 ] || fail "only '$n' requests ran on the progress thread"
start_server -s $state -e data=$exp,no_root_squash

step "what the export's file system can do passes through: reflink, dedupe, collapse and insert on XFS; ext4 refuses reflink"
# An XFS export (reflink by default) beside the ext4 one; every result is
# checked against the bytes it must give and against the server's file.
modprobe xfs
mkfs.xfs -q -f /dev/ram1
mkdir -p /tmp/xfs
mount /dev/ram1 /tmp/xfs
on_exit "umount /tmp/xfs"
mkdir /tmp/xfs/exp
stop_server
start_server -s $state -e data=$exp,no_root_squash -e xfs=/tmp/xfs/exp,no_root_squash
mount -t orfs "$ORFS_ADDR:/xfs" /tmp/mnt
head -c 4M /dev/urandom > /tmp/mnt/src
cp --reflink=always /tmp/mnt/src /tmp/mnt/clone || fail "FICLONE through ORFS"
cmp /tmp/mnt/src /tmp/mnt/clone || fail "the clone reads differently"
cmp /tmp/xfs/exp/src /tmp/xfs/exp/clone || fail "the server's clone differs"
# The server's two files share their blocks (FIEMAP_EXTENT_SHARED, 0x2000).
xfs_io -r -c "fiemap -v" /tmp/xfs/exp/clone | awk 'NR > 2 { print $NF }' > /tmp/flags
grep -q '0x[0-9a-f]*2[0-9a-f][0-9a-f][0-9a-f]$' /tmp/flags || { cat /tmp/flags; fail "no shared extent"; }
# FICLONERANGE of 1 MiB into the middle of another file.
head -c 4M /dev/zero > /tmp/mnt/part
xfs_io -c "reflink /tmp/mnt/src 1048576 2097152 1048576" /tmp/mnt/part > /dev/null ||
	fail "FICLONERANGE through ORFS"
python3 - /tmp/mnt/src /tmp/mnt/part <<'EOF'
import sys
s, p = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
want = bytes(2 << 20) + s[1 << 20:2 << 20] + bytes(1 << 20)
sys.exit(0 if p == want else "the cloned range reads wrong")
EOF
# FIDEDUPERANGE: same bytes are shared, different bytes are refused.
cp /tmp/mnt/src /tmp/mnt/same
xfs_io -c "dedupe /tmp/mnt/src 0 0 4194304" /tmp/mnt/same | tee /tmp/out
expect_grep 'deduped 4194304/4194304 bytes' /tmp/out
xfs_io -c "dedupe /tmp/mnt/src 0 0 4194304" /tmp/mnt/part > /tmp/out 2>&1 || true
cat /tmp/out
expect_grep '(differ|did not match)' /tmp/out
# Collapse and insert move what follows, in the cache as on the server.
cp /tmp/mnt/src /tmp/mnt/shift
cat /tmp/mnt/shift > /dev/null	# cached before the shift
xfs_io -c "fcollapse 65536 65536" /tmp/mnt/shift || fail "FALLOC_FL_COLLAPSE_RANGE"
xfs_io -c "finsert 0 4096" /tmp/mnt/shift || fail "FALLOC_FL_INSERT_RANGE"
python3 - /tmp/mnt/src /tmp/mnt/shift /tmp/xfs/exp/shift <<'EOF'
import sys
s = open(sys.argv[1], "rb").read()
want = bytes(4096) + s[:65536] + s[131072:]
for f in sys.argv[2:]:
    if open(f, "rb").read() != want:
        sys.exit(f"{f}: collapse then insert read wrong")
EOF
echo "clone, range clone, dedupe, collapse and insert: all verified"
# copy_file_range from this mount to another, through the client.
mkdir -p /tmp/mnt2
mount -t orfs "$ORFS_ADDR:/data" /tmp/mnt2
on_exit "! mountpoint -q /tmp/mnt2 || umount /tmp/mnt2"
copy_across /tmp/mnt/src /tmp/mnt2/copied "$exp/copied"
rm /tmp/mnt2/copied
umount /tmp/mnt2
umnt
# ext4 shares no blocks: its error, not ours.
mnt
head -c 64k /dev/urandom > /tmp/mnt/e4src
if cp --reflink=always /tmp/mnt/e4src /tmp/mnt/e4clone 2> /tmp/err; then
	fail "a reflink on ext4 succeeded"
fi
cat /tmp/err
expect_grep 'Operation not supported' /tmp/err
rm -f /tmp/mnt/e4src /tmp/mnt/e4clone
umnt
stop_server
start_server -s $state -e data=$exp,no_root_squash
echo ok

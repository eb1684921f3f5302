#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The kernel code's compatibility branches (tests/compat-branches), each
# run once with its result checked: make check runs this on 6.1, which
# builds the other side of every branch, and on 6.12 (the areas' own
# scripts run on 6.1 in make check-all). ORFS: permissions and time
# stamps set through the client, an ACL set on the server enforced and
# read here, buffered writes and their write-back, vectored O_DIRECT,
# copy_file_range between two mounts, POSIX and flock locks between two
# clients; MXBD attached over TCP through the class's files, its queue
# limits, writes sent from pages and read back.
# lanes: check=6.12/rxe,6.1/rxe all=*/rxe
# timeout: 300
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

mkdir -p /tmp/e4/two /tmp/mnt2
truncate -s 64M /tmp/cvol
stop_server
# A TCP listener beside RDMA for MXBD (start_server adds one in a TCP run);
# no grace period, which would hold the first lock for a lease (60 s).
# shellcheck disable=SC2046 # one option and its value, or none
start_server -s $state -G 0 $([ "$ORFS_TRANSPORT" = tcp ] || echo "-a tcp://$ORFS_ADDR") \
	-b cvol=/tmp/cvol -e data=$exp,no_root_squash -e two=/tmp/e4/two,no_root_squash
mnt
on_exit "! mountpoint -q /tmp/mnt2 || umount /tmp/mnt2; ! mountpoint -q /tmp/mnt || umount /tmp/mnt"

step "permissions and times set through ORFS (ORFS_HAVE_MNT_IDMAP, ORFS_HAVE_INODE_TIME_ACCESSORS)"
echo secret > /tmp/mnt/p
chmod 600 /tmp/mnt/p
as_user cat /tmp/mnt/p 2> /dev/null && fail "uid 1000 read a 0600 file of root"
chmod 644 /tmp/mnt/p
expect_eq "read by uid 1000 once 0644" "$(as_user cat /tmp/mnt/p)" secret
touch -m -d '2001-02-03 04:05:06.7' /tmp/mnt/p
expect_eq "mtime here" "$(stat -c %y /tmp/mnt/p)" "2001-02-03 04:05:06.700000000 +0000"
expect_eq "mtime on the server" "$(stat -c %y $exp/p)" "2001-02-03 04:05:06.700000000 +0000"

step "an ACL set on the server: enforced here, and read here as set (ORFS_HAVE_GET_INODE_ACL)"
echo acl > $exp/aclf
chmod 600 $exp/aclf
# user::rw-, user:1000:r--, group::---, mask::r--, other::---
acl $exp/aclf 1:6:-1 2:4:1000 4:0:-1 0x10:4:-1 0x20:0:-1
expect_eq "read through the ACL's entry for uid 1000" "$(as_user cat /tmp/mnt/aclf)" acl
python3 - /tmp/mnt/aclf $exp/aclf <<'PY' || fail "the ACL read through ORFS differs"
import os, sys
a, b = (os.getxattr(p, "system.posix_acl_access") for p in sys.argv[1:])
sys.exit(0 if a == b else f"{a!r} != {b!r}")
PY

step "buffered writes and their write-back; vectored O_DIRECT (ORFS_WRITE_BEGIN_FOLIO, ORFS_WRITEPAGE_T_FOLIO, ORFS_HAVE_FOLIO_ORDER, KNET_HAVE_ITER_IOV)"
head -c 3M /dev/urandom > /tmp/data
dd if=/tmp/data of=/tmp/mnt/buf bs=100k status=none
sync /tmp/mnt/buf
cmp /tmp/data $exp/buf || fail "the server's copy of a buffered write differs"
echo 3 > /proc/sys/vm/drop_caches
cmp /tmp/data /tmp/mnt/buf || fail "a buffered write read back differs"
python3 "$(dirname "$0")/common/vec-direct.py" /tmp/mnt/vec "$exp/vec"

step "copy_file_range between two mounts, which the server cannot copy (ORFS_HAVE_SPLICE_COPY_FILE_RANGE, ORFS_HAVE_FILEMAP_SPLICE_READ)"
mount -t orfs "$ORFS_ADDR:/two" /tmp/mnt2
copy_across /tmp/mnt/buf /tmp/mnt2/copied /tmp/e4/two/copied
umount /tmp/mnt2

step "POSIX and flock locks between two clients (ORFS_HAVE_FILE_LOCK_CORE)"
mount -t orfs "$ORFS_ADDR:/data" /tmp/mnt2
python3 - /tmp/mnt/buf /tmp/mnt2/buf <<'PY' || fail "locks between two clients"
import errno, fcntl, sys
one, two = (open(p, "r+b") for p in sys.argv[1:])
for lock in (lambda f, t: fcntl.lockf(f, t, 10, 0), lambda f, t: fcntl.flock(f, t)):
    lock(one, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        lock(two, fcntl.LOCK_EX | fcntl.LOCK_NB)
        sys.exit("another client took a held lock")
    except OSError as e:
        if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise
    lock(one, fcntl.LOCK_UN)
    lock(two, fcntl.LOCK_EX | fcntl.LOCK_NB)
    lock(two, fcntl.LOCK_UN)
print("POSIX and flock locks: held against the other client, free after")
PY
umount /tmp/mnt2
umnt

step "MXBD over TCP through the class's files: queue limits, writes from pages read back (MXBD_CLASS_CONST, MXBD_QUEUE_LIMITS_AT_ALLOC, MSG_SPLICE_PAGES)"
echo "server=$ORFS_ADDR volume=cvol transport=tcp" > /sys/class/mxbd/attach
on_exit "[ ! -e /sys/block/mxbd0 ] || echo mxbd0 > /sys/class/mxbd/detach"
[ -b /dev/mxbd0 ] || fail "no /dev/mxbd0"
expect_eq "transport" "$(cat /sys/block/mxbd0/mxbd/transport)" tcp
expect_eq "size" "$(blockdev --getsize64 /dev/mxbd0)" $((64 << 20))
expect_eq "logical block size" "$(cat /sys/block/mxbd0/queue/logical_block_size)" 512
(($(cat /sys/block/mxbd0/queue/max_hw_sectors_kb) >= 64)) ||
	fail "max_hw_sectors_kb $(cat /sys/block/mxbd0/queue/max_hw_sectors_kb)"
head -c 8M /dev/urandom > /tmp/bdata
dd if=/tmp/bdata of=/dev/mxbd0 bs=1M oflag=direct status=none
cmp <(dd if=/dev/mxbd0 bs=1M count=8 iflag=direct status=none) /tmp/bdata ||
	fail "the volume reads other bytes than were written"
cmp <(head -c 8M /tmp/cvol) /tmp/bdata || fail "the server's volume differs"
echo mxbd0 > /sys/class/mxbd/detach
[ ! -e /sys/block/mxbd0 ] || fail "mxbd0 is still there after its detach"
echo ok

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# MXBD over rxe against the real server: attach a volume at load, mkfs,
# mount, a tree of files, umount, a clean fsck, the files intact after a
# remount; fio with crc32c verification over mixed block sizes and queue
# depths; discard reading back as zeroes; a clean detach at unload.
# timeout: 400
. "$(dirname "$0")/lib.sh"

truncate -s 256M /tmp/mvol
head -c 8M /dev/urandom > /tmp/mro
start_server -b mvol=/tmp/mvol -b mro=/tmp/mro,ro
modprobe -a ib_core rdma_cm
insmod "$ORFS_KMOD/regcache/regcache.ko"
insmod "$ORFS_KMOD/knet/knet.ko"
on_exit "rmmod knet; rmmod regcache"
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mvol
on_exit "module_loaded mxbd && rmmod mxbd"

step "the volume is /dev/mxbd0, with the server's size and block size"
[ -b /dev/mxbd0 ] || fail "no /dev/mxbd0"
expect_eq "size" "$(blockdev --getsize64 /dev/mxbd0)" 268435456
expect_eq "logical block" "$(blockdev --getss /dev/mxbd0)" 512
expect_grep "mxbd0: volume 'mvol' of $ORFS_ADDR, 268435456 bytes" <(dmesg)
# One hardware queue per CPU, each on its own connection (a knet completion group).
expect_eq "hardware queues" "$(ls /sys/block/mxbd0/mq | wc -l)" "$(nproc)"
expect_eq "endpoints" "$(ls /sys/kernel/debug/knet/endpoints | wc -l)" "$(nproc)"

step "mkfs.ext4, mount, a tree of files, umount, fsck clean"
mkfs.ext4 -q -F /dev/mxbd0
mkdir -p /tmp/m
mount /dev/mxbd0 /tmp/m
on_exit "umount /tmp/m 2>/dev/null"
cp -a /usr/include/linux /tmp/m/
head -c 24M /dev/urandom > /tmp/m/random.bin
mkdir /tmp/m/many && for i in $(seq 1 200); do echo "file $i" > /tmp/m/many/f$i; done
(cd /tmp/m && find . -type f -print0 | sort -z | xargs -0 sha256sum) > /tmp/sums
umount /tmp/m
fsck.ext4 -fn /dev/mxbd0 > /tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; fail "fsck found problems"; }
tail -n 1 /tmp/fsck.out

step "after a remount every file reads back the same"
mount /dev/mxbd0 /tmp/m
(cd /tmp/m && sha256sum --quiet -c /tmp/sums) || fail "files changed"
echo "$(wc -l < /tmp/sums) files verified"
umount /tmp/m

step "fio: random writes of 4 KiB to 256 KiB at depth 16, every block verified (crc32c)"
fio --name=verify --filename=/dev/mxbd0 --direct=1 --ioengine=libaio --rw=randwrite \
	--bsrange=4k-256k --iodepth=16 --size=48M --offset=160M --verify=crc32c \
	--verify_fatal=1 --do_verify=1 --verify_state_save=0 --output=/tmp/fio.out || { cat /tmp/fio.out; fail "fio"; }
grep -E 'err=|WRITE:|READ:' /tmp/fio.out
expect_grep 'err= 0' /tmp/fio.out

step "discard: the range reads back as zeroes"
dd if=/dev/urandom of=/dev/mxbd0 bs=1M count=2 seek=200 oflag=direct status=none
blkdiscard -f -o $((200 << 20)) -l $((2 << 20)) /dev/mxbd0
cmp <(dd if=/dev/mxbd0 bs=1M count=2 skip=200 iflag=direct status=none) <(head -c 2M /dev/zero) ||
	fail "discarded blocks do not read as zeroes"

step "unload detaches the device"
rmmod mxbd
[ ! -e /dev/mxbd0 ] || fail "/dev/mxbd0 outlived the module"

step "a read-only volume: reads give its bytes, writes are refused"
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mro
expect_eq "read-only" "$(blockdev --getro /dev/mxbd0)" 1
cmp <(dd if=/dev/mxbd0 bs=1M iflag=direct status=none) /tmp/mro || fail "read-only volume reads differ"
if dd if=/dev/zero of=/dev/mxbd0 bs=4k count=1 oflag=direct status=none 2>/tmp/dd.err; then
	fail "a write to a read-only volume succeeded"
fi
cat /tmp/dd.err
rmmod mxbd

step "a server that answers with garbage gives I/O errors, never a crash"
stop_server
ORFS_SERVER_FAULT=tag start_server -b mvol=/tmp/mvol
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mvol
if dd if=/dev/mxbd0 of=/dev/null bs=4k count=64 iflag=direct status=none 2>/tmp/dd.err; then
	fail "reads from a lying server succeeded"
fi
cat /tmp/dd.err
expect_grep 'Input/output error' /tmp/dd.err
rmmod mxbd
[ ! -e /dev/mxbd0 ] || fail "/dev/mxbd0 outlived the module"
echo ok

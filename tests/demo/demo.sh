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

say "Starting orfs-server on $ORFS_ADDR, over RDMA and TCP: export 'demo' (a directory), volume 'vol0' (a file)"
mkdir -p /tmp/demo-export
truncate -s 64M /tmp/demo-volume
start_server -a "tcp://$ORFS_ADDR" -s /tmp/demo-state -e demo=/tmp/demo-export,no_root_squash -b vol0=/tmp/demo-volume
cat "$ORFS_SERVER_LOG"

say "A userspace client connects over RDMA and sends 100 NOP requests within its credits"
"$ORFS_BIN/knet-ping" -a "$ORFS_ADDR" -n demo -c 100

say "Asking for a volume that does not exist is refused with a reason"
"$ORFS_BIN/knet-ping" -a "$ORFS_ADDR" -s block -n nosuch -c 1 || true

say "A malformed request is answered with an error; the connection goes on"
"$ORFS_BIN/knet-ping" -a "$ORFS_ADDR" -n demo -c 3 -x length

say "The file service: a directory, a 1 MiB file through server-driven RDMA, a listing"
dd if=/dev/urandom of=/tmp/demo-src bs=1M count=1 status=none
printf 'mkdir photos 755\nput /tmp/demo-src photos/a.jpg\nget photos/a.jpg /tmp/demo-back\nsymlink a.jpg photos/latest\nls photos\nstat photos/a.jpg\n' > /tmp/demo.fs
"$ORFS_BIN/knet-fs" -a "$ORFS_ADDR" -n demo -f /tmp/demo.fs
cmp /tmp/demo-src /tmp/demo-back && echo "the 1 MiB file read back is identical"
echo "on the server: $(ls -l /tmp/demo-export/photos | tail -n +2 | wc -l) entries in /tmp/demo-export/photos"

say "A user may not write where the permissions say no (uid 1000 in a root 0755 directory)"
"$ORFS_BIN/knet-fs" -a "$ORFS_ADDR" -n demo -u 1000 -g 1000 create photos/mine 644 || true

say "Moving verified data to the volume: 4 streams of 64 KiB blocks, every byte read back"
"$ORFS_BIN/knet-load" -a "$ORFS_ADDR" -n vol0 -w verify -S 4 -q 2 -b 65536 -N 32 | grep -v '^result'

say "From the kernel: knet connects to the volume and moves pages through per-request FRWR"
insmod "$ORFS_KMOD/tests/kmod/knet_test.ko"
"$ORFS_BIN/knet-test" -a "$ORFS_ADDR" -n vol0 -w verify -b 1048576 -N 4 -m pages -o 100
"$ORFS_BIN/knet-test" -a "$ORFS_ADDR" -n vol0 -w batch -b 65536 -N 128 -q 24
dmesg | grep 'knet: connected' | tail -n 1
rmmod knet_test

say "MXBD: the volume as /dev/mxbd0, an ext4 file system on it, checked by fsck"
unload_suite
modprobe -a ib_core rdma_cm libcrc32c
insmod "$ORFS_KMOD/regcache/regcache.ko"
insmod "$ORFS_KMOD/knet/knet.ko"
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=vol0
dmesg | grep 'mxbd0: volume' | tail -n 1
mkfs.ext4 -q -F /dev/mxbd0
mkdir -p /tmp/mnt && mount /dev/mxbd0 /tmp/mnt
cp -a /usr/include/linux /tmp/mnt/ && df -h /tmp/mnt | tail -n 1
umount /tmp/mnt
fsck.ext4 -fn /dev/mxbd0 | tail -n 1
rmmod mxbd
insmod "$ORFS_KMOD/orfs/orfs.ko"
insmod "$ORFS_KMOD/mxbd/mxbd.ko"

say "ORFS: the export mounted with 'mount -t orfs', used like a local file system"
mkdir -p /tmp/orfs
mount -t orfs "$ORFS_ADDR:/demo" /tmp/orfs
grep ' /tmp/orfs ' /proc/mounts
cp -a /usr/include/linux /tmp/orfs/include && du -sh /tmp/orfs/include
diff -r /usr/include/linux /tmp/orfs/include && echo "the copied tree is identical"
ls -l /tmp/orfs/photos
say "O_DIRECT: zero copy from the program's buffer (regcache pins it once, then hits)"
dd if=/tmp/demo-src of=/tmp/orfs/direct bs=256k oflag=direct status=none
dd if=/tmp/orfs/direct of=/tmp/demo-back2 bs=256k iflag=direct status=none
cmp /tmp/demo-src /tmp/demo-back2 && echo "1 MiB written and read back with O_DIRECT"
grep -E '^(hits|misses|pinned_bytes)' "$dbg/regcache/$ORFS_RDMA_DEV/stats"
df -h /tmp/orfs | tail -n 1
umount /tmp/orfs

say "Without RDMA: the same export over TCP (transport=tcp); the server still asks for the data it moves"
mount -t orfs -o transport=tcp "$ORFS_ADDR:/demo" /tmp/orfs
grep -o ' /tmp/orfs orfs .*transport=tcp' /proc/mounts
dd if=/tmp/demo-src of=/tmp/orfs/over-tcp bs=256k oflag=direct status=none
cmp /tmp/demo-src /tmp/orfs/over-tcp && echo "1 MiB written with O_DIRECT over TCP, identical"
diff -r /usr/include/linux /tmp/orfs/include && echo "the tree copied over RDMA reads the same over TCP"
grep "on TCP)" "$ORFS_SERVER_LOG" | tail -n 1
umount /tmp/orfs

say "MXBD at run time: 'mxbdctl attach' makes a device, 'mxbdctl list' shows it"
ctl() { "$ORFS_PROJ/tools/mxbdctl" "$@"; }
dev=$(ctl attach "$ORFS_ADDR" vol0 io_timeout=5 loss_timeout=60)
echo "attached: $dev"
ctl list

say "The server is killed in the middle of a 48 MiB write and started again: the device holds its I/O, reconnects, and the data arrives whole"
writes_done() { local st; read -r -a st < "/sys/block/${dev#/dev/}/stat"; echo "${st[4]}"; }
head -c 48M /dev/urandom > /tmp/demo-blk
dd if=/tmp/demo-blk of="$dev" bs=256k oflag=direct status=none &
writer=$!
wait_until 300 eval '[ "$(writes_done)" -gt 20 ]' || fail "the write never started"
kill -KILL "$ORFS_SERVER_PID"; { wait "$ORFS_SERVER_PID"; } 2>/dev/null || true; ORFS_SERVER_PID=
echo "server killed after $(writes_done) writes; the device is $(cat "/sys/block/${dev#/dev/}/mxbd/state")"
sleep 1
start_server -a "tcp://$ORFS_ADDR" -s /tmp/demo-state -e demo=/tmp/demo-export,no_root_squash -b vol0=/tmp/demo-volume
wait $writer || fail "the write failed across the restart"
cmp <(dd if="$dev" bs=1M count=48 iflag=direct status=none) /tmp/demo-blk || fail "the data differs"
echo "48 MiB written across the restart read back identical"
dmesg | grep "${dev#/dev/}: reconnected" | tail -n 1
grep -E '^(reconnects|held|failed) ' "/sys/block/${dev#/dev/}/mxbd/stats"
ctl detach "${dev#/dev/}"
echo "detached; devices left: $(($(ctl list | wc -l) - 1))"

say "Stopping the server (SIGTERM)"
stop_server
tail -n 4 "$ORFS_SERVER_LOG"

say "Unloading the suite"
unload_suite
echo "all modules unloaded; demo done"

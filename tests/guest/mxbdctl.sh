#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# MXBD at run time through tools/mxbdctl and /sys/class/mxbd: several
# devices from two servers, each with its own data; per-device sysfs;
# refused attaches with the kernel's reason; a volume that grows; a busy
# device refused a plain detach; a forced detach under load that fails the
# I/O in flight instead of hanging; queue depth and largest I/O lowered by
# the attach and by module parameters; a table of volumes attached and
# detached by up and down; unload with devices attached.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 300
. "$(dirname "$0")/lib.sh"

ctl() { "$ORFS_PROJ/tools/mxbdctl" "$@"; }
port2=20078
truncate -s 64M /tmp/va /tmp/vb
truncate -s 32M /tmp/vc
start_server -b va=/tmp/va -b vb=/tmp/vb
# A second server, on another port
"$ORFS_BIN/orfs-server" --insecure -a "$ORFS_ADDR" -p $port2 -b vc=/tmp/vc > /tmp/server2.log 2>&1 &
server2=$!
on_exit "kill $server2 2>/dev/null; wait $server2 2>/dev/null"
for ((i = 0; i < 100; i++)); do grep -q 'listening on' /tmp/server2.log && break; sleep 0.1; done
expect_grep 'listening on' /tmp/server2.log

modprobe -a ib_core rdma_cm libcrc32c
insmod "$ORFS_KMOD/regcache/regcache.ko"
insmod "$ORFS_KMOD/knet/knet.ko"
on_exit "rmmod knet; rmmod regcache"
insmod "$ORFS_KMOD/mxbd/mxbd.ko" rescan_interval=1
on_exit "module_loaded mxbd && rmmod mxbd"

detached() { dmesg | grep -c 'mxbd[0-9]*: detached' || true; }
detached0=$(detached)

step "nothing attached: list shows the header only"
expect_eq "lines" "$(ctl list | wc -l)" 1

step "three volumes from two servers are mxbd0, mxbd1 and mxbd2"
expect_eq "first" "$(ctl attach "$ORFS_ADDR" va queues=2)" /dev/mxbd0
expect_eq "second" "$(ctl attach "$ORFS_ADDR" vb io_timeout=7 loss_timeout=-1 ro)" /dev/mxbd1
expect_eq "third" "$(ctl attach "$ORFS_ADDR" vc port=$port2 loss_timeout=9 srcaddr=$ORFS_ADDR)" /dev/mxbd2
ctl list | tee /tmp/list
expect_eq "lines" "$(wc -l < /tmp/list)" 4
expect_grep "^mxbd0 +$ORFS_ADDR:20077 +va +live +64 +0 +2 " /tmp/list
expect_grep "^mxbd1 +$ORFS_ADDR:20077 +vb +live +64 +1 " /tmp/list
expect_grep "^mxbd2 +$ORFS_ADDR:$port2 +vc +live +32 +0 " /tmp/list
expect_eq "mxbd1 io_timeout" "$(cat /sys/block/mxbd1/mxbd/io_timeout)" 7
expect_eq "mxbd1 loss_timeout" "$(cat /sys/block/mxbd1/mxbd/loss_timeout)" -1
expect_eq "mxbd2 loss_timeout" "$(cat /sys/block/mxbd2/mxbd/loss_timeout)" 9
expect_eq "mxbd2 srcaddr" "$(cat /sys/block/mxbd2/mxbd/srcaddr)" "$ORFS_ADDR"
expect_eq "mxbd0 srcaddr" "$(cat /sys/block/mxbd0/mxbd/srcaddr)" 0.0.0.0
expect_eq "mxbd0 hardware queues" "$(ls /sys/block/mxbd0/mq | wc -l)" 2
expect_grep '^reconnects 0$' /sys/block/mxbd0/mxbd/stats

step "each device has its own data"
head -c 4M /dev/urandom > /tmp/a.bin
head -c 4M /dev/urandom > /tmp/c.bin
dd if=/tmp/a.bin of=/dev/mxbd0 bs=1M oflag=direct status=none
dd if=/tmp/c.bin of=/dev/mxbd2 bs=1M oflag=direct status=none
cmp <(dd if=/dev/mxbd0 bs=1M count=4 iflag=direct status=none) /tmp/a.bin || fail "mxbd0 reads differ"
cmp <(dd if=/dev/mxbd2 bs=1M count=4 iflag=direct status=none) /tmp/c.bin || fail "mxbd2 reads differ"
cmp <(head -c 4M /tmp/va) /tmp/a.bin || fail "va does not hold mxbd0's data"
cmp <(head -c 4M /tmp/vc) /tmp/c.bin || fail "vc does not hold mxbd2's data"
expect_fail dd if=/dev/zero of=/dev/mxbd1 bs=4k count=1 oflag=direct status=none

step "refused attaches say why and make no device"
attach_fails() {
	local want=$1
	shift
	if ctl attach "$@" > /tmp/out 2>&1; then cat /tmp/out; fail "attach $* succeeded"; fi
	cat /tmp/out
	expect_grep "$want" /tmp/out
}
attach_fails "volume 'va' of $ORFS_ADDR:20077 is attached already" "$ORFS_ADDR" va
attach_fails "refused: no such export or volume" "$ORFS_ADDR" nosuch
attach_fails "unknown option 'bogus'" "$ORFS_ADDR" va bogus=1
attach_fails "bad value '0' for queues" "$ORFS_ADDR" vb queues=0
attach_fails "bad value 'x' for loss_timeout" "$ORFS_ADDR" vb loss_timeout=x
attach_fails "'10.1.2' is not an IPv4 or IPv6 address" 10.1.2 va
attach_fails "srcaddr '10.1.2' is not an IPv4 or IPv6 address" "$ORFS_ADDR" vb srcaddr=10.1.2
attach_fails "bad value '0' for queue_depth" "$ORFS_ADDR" vb queue_depth=0
attach_fails "bad value '6' for max_io_kb" "$ORFS_ADDR" vb max_io_kb=6
attach_fails "bad value 'maybe' for ro" "$ORFS_ADDR" vb ro=maybe
# Connection errors by name, with what to look at.
attach_fails "of $ORFS_ADDR:1: -ECONNREFUSED: refused: no server listens at that address and port" \
	"$ORFS_ADDR" vb port=1
# detach takes mxbdN (or /dev/mxbdN) and nothing like it.
for bad in mxbd1abc mxbd1/ 1 mxbd01 mxbd+1 /dev/sda; do
	if echo "$bad" > /sys/class/mxbd/detach 2>/dev/null; then fail "detach '$bad' was taken"; fi
	dmesg | tail -n 2 > /tmp/why
	name=${bad#/dev/}
	expect_grep "detach: '${name//+/\\+}' is not a device name \\(mxbdN\\)" /tmp/why
done
if echo mxbd9 > /sys/class/mxbd/detach 2>/dev/null; then fail "detach of mxbd9 was taken"; fi
expect_grep "detach: no device mxbd9 is attached" <(dmesg | tail -n 2)
expect_eq "devices" "$(ls -d /sys/block/mxbd* | wc -l)" 3

step "a volume that grows: seen at once on rescan, and by itself within seconds"
truncate -s 96M /tmp/va
ctl rescan mxbd0
expect_eq "mxbd0 size" "$(blockdev --getsize64 /dev/mxbd0)" $((96 << 20))
dd if=/tmp/a.bin of=/dev/mxbd0 bs=1M seek=92 oflag=direct status=none
cmp <(dd if=/dev/mxbd0 bs=1M skip=92 iflag=direct status=none) /tmp/a.bin || fail "the new blocks read back wrong"
truncate -s 48M /tmp/vc
for ((i = 0; i < 100; i++)); do
	[ "$(blockdev --getsize64 /dev/mxbd2)" = $((48 << 20)) ] && break
	sleep 0.1
done
expect_eq "mxbd2 size" "$(blockdev --getsize64 /dev/mxbd2)" $((48 << 20))
expect_grep "mxbd2: the volume is now 50331648 bytes" <(dmesg)

step "a mounted device is not detached without force"
mkfs.ext4 -q -F /dev/mxbd2
mkdir -p /tmp/m2
mount /dev/mxbd2 /tmp/m2
on_exit "umount /tmp/m2 2>/dev/null"
if ctl detach mxbd2 > /tmp/out 2>&1; then fail "detached a mounted device"; fi
cat /tmp/out
expect_grep "mxbd2 is open" /tmp/out
echo hello > /tmp/m2/f
umount /tmp/m2
ctl detach mxbd2
[ ! -e /sys/block/mxbd2 ] || fail "mxbd2 is still there"

step "a forced detach under load fails the I/O in flight and does not hang"
fio --name=load --filename=/dev/mxbd0 --direct=1 --ioengine=libaio --rw=randrw --bs=64k \
	--iodepth=16 --size=64M --time_based --runtime=60 --output=/tmp/fio.out > /dev/null 2>&1 &
fio=$!
for ((i = 0; i < 100; i++)); do
	read -r -a st < /sys/block/mxbd0/stat
	[ "${st[4]}" -gt 50 ] && break
	sleep 0.1
done
[ "${st[4]}" -gt 50 ] || fail "the load never started"
t0=$(date +%s)
timeout 60 "$ORFS_PROJ/tools/mxbdctl" detach mxbd0 force || fail "the detach failed or hung"
wait $fio && fail "fio saw no error though its device went away"
t1=$(date +%s)
echo "detached under load in $((t1 - t0)) s"
[ $((t1 - t0)) -lt "$(slow 20)" ] || fail "the detach took $((t1 - t0)) s"
[ ! -e /sys/block/mxbd0 ] || fail "mxbd0 is still there"
grep -E 'err=' /tmp/fio.out || true

step "the device left is unharmed; a new attach takes the free index"
cmp <(dd if=/dev/mxbd1 bs=1M count=4 iflag=direct status=none) <(head -c 4M /tmp/vb) || fail "mxbd1 reads differ"
expect_eq "again" "$(ctl attach "$ORFS_ADDR" va)" /dev/mxbd0
cmp <(dd if=/dev/mxbd0 bs=1M count=4 iflag=direct status=none) <(head -c 4M /tmp/va) || fail "mxbd0 reads differ"

step "queue depth and largest I/O: the attach lowers the server's, never raises them"
expect_eq "mxbd0 largest I/O (the server's)" "$(cat /sys/block/mxbd0/queue/max_hw_sectors_kb)" 1024
expect_eq "lowered" "$(ctl attach "$ORFS_ADDR" vc port=$port2 queue_depth=4 max_io_kb=64)" /dev/mxbd2
expect_eq "mxbd2 tags" "$(cat /sys/block/mxbd2/mq/0/nr_tags)" 4
expect_eq "mxbd2 largest I/O" "$(cat /sys/block/mxbd2/queue/max_hw_sectors_kb)" 64
expect_grep "mxbd2: volume 'vc' .* queues of depth 4, largest I/O 64 KiB" <(dmesg)
# 1 MiB writes 16 deep: the block layer cuts them to 64 KiB, at most 4 in flight.
fio --name=low --filename=/dev/mxbd2 --direct=1 --ioengine=libaio --rw=write --bs=1M \
	--iodepth=16 --size=16M --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fio.out || { cat /tmp/fio.out; fail "fio on mxbd2"; }
expect_grep 'err= 0' /tmp/fio.out
read -r -a st < /sys/block/mxbd2/stat
echo "mxbd2: ${st[4]} writes of ${st[6]} sectors"
[ "${st[4]}" -ge 256 ] && [ "${st[6]}" -le $((st[4] * 128)) ] ||
	fail "writes larger than 64 KiB: ${st[4]} for ${st[6]} sectors"
peak=$(ep_max in_flight_peak 2 $port2)
echo "mxbd2: at most $peak requests in flight on a connection"
# Four tags, and the once-a-second rescan's INFO, which needs no tag
[ "$peak" -ge 1 ] && [ "$peak" -le 5 ] || fail "in flight at once: $peak (depth 4)"
ctl detach mxbd2
expect_eq "raised" "$(ctl attach "$ORFS_ADDR" vc port=$port2 queue_depth=4096 max_io_kb=65536)" /dev/mxbd2
tags=$(cat /sys/block/mxbd2/mq/0/nr_tags)
grant=$(ep_max credits 4 $port2)
echo "mxbd2: $tags tags a queue; the server granted at most $grant credits a connection"
[ "$tags" -gt 4 ] && [ "$tags" -le "$grant" ] || fail "$tags tags for a grant of $grant"
expect_eq "mxbd2 largest I/O" "$(cat /sys/block/mxbd2/queue/max_hw_sectors_kb)" 1024
ctl detach mxbd2

step "mxbdctl up and down: the volumes of a table; those attached already, or not, left as they are"
cat > /tmp/volumes <<TABLE
# volumes to attach
$ORFS_ADDR va                  # mxbd0 already
$ORFS_ADDR vc port=$port2 ro=1

$ORFS_ADDR
$ORFS_ADDR nosuch
TABLE
set +e
ctl up /tmp/volumes > /tmp/out 2> /tmp/err; rc=$?
set -e
cat /tmp/out /tmp/err
expect_eq "up's exit code with two wrong lines" "$rc" 1
expect_grep "^$ORFS_ADDR va: /dev/mxbd0, attached already$" /tmp/out
expect_grep "^$ORFS_ADDR vc: /dev/mxbd2$" /tmp/out
expect_grep "^mxbdctl: /tmp/volumes:5: expected HOST VOLUME" /tmp/err
expect_grep "^mxbdctl: /tmp/volumes:6: $ORFS_ADDR nosuch was not attached" /tmp/err
expect_grep "refused: no such export or volume" /tmp/err
expect_eq "mxbd2 read-only, as its line says" "$(cat /sys/block/mxbd2/ro)" 1
expect_eq "devices" "$(($(ctl list | wc -l) - 1))" 3
sed -i '/^[^#]*$/{/ v[ac]/!d}' /tmp/volumes
cat /tmp/volumes
ctl up /tmp/volumes > /tmp/out
expect_grep "^$ORFS_ADDR vc: /dev/mxbd2, attached already$" /tmp/out
ctl down /tmp/volumes | tee /tmp/out
expect_grep "^$ORFS_ADDR va: /dev/mxbd0 detached$" /tmp/out
expect_grep "^$ORFS_ADDR vc: /dev/mxbd2 detached$" /tmp/out
ctl list | tee /tmp/list
expect_eq "devices left" "$(($(wc -l < /tmp/list) - 1))" 1
expect_grep "^mxbd1 +$ORFS_ADDR:20077 +vb " /tmp/list
ctl down /tmp/volumes > /tmp/out
expect_eq "down when none is attached" "$(grep -c ': not attached$' /tmp/out)" 2
# A busy device is not detached: down says so and goes on.
ctl up /tmp/volumes
exec 7< /dev/mxbd0
set +e
ctl down /tmp/volumes > /tmp/out 2> /tmp/err; rc=$?
set -e
exec 7<&-
cat /tmp/out /tmp/err
expect_eq "down's exit code with a device open" "$rc" 1
expect_grep "^mxbdctl: /tmp/volumes:2: $ORFS_ADDR va \(/dev/mxbd0\) was not detached" /tmp/err
expect_grep "^$ORFS_ADDR vc: /dev/mxbd2 detached$" /tmp/out
[ -e /sys/block/mxbd0 ] || fail "the open device was detached"
expect_fail ctl up /nonexistent/volumes

step "unloading the module detaches what is left"
rmmod mxbd
[ -z "$(ls -d /sys/block/mxbd* 2>/dev/null)" ] || fail "devices outlived the module"
expect_eq "detached" "$(($(detached) - detached0))" 9

step "module parameters set the defaults: depth and largest I/O at load; bad ones refused"
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=va queue_depth=2 max_io_kb=32
expect_eq "mxbd0 tags" "$(cat /sys/block/mxbd0/mq/0/nr_tags)" 2
expect_eq "mxbd0 largest I/O" "$(cat /sys/block/mxbd0/queue/max_hw_sectors_kb)" 32
cmp <(dd if=/dev/mxbd0 bs=1M count=4 iflag=direct status=none) <(head -c 4M /tmp/va) || fail "mxbd0 reads differ"
rmmod mxbd
expect_fail insmod "$ORFS_KMOD/mxbd/mxbd.ko" max_io_kb=6
expect_grep "mxbd: max_io_kb is whole pages of 4 KiB" <(dmesg)
expect_fail insmod "$ORFS_KMOD/mxbd/mxbd.ko" queue_depth=5000
expect_grep "mxbd: queue_depth is at most 4096" <(dmesg)
echo ok

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# One server on two RDMA devices: a second soft-RoCE device on a second
# interface. Each device gets its own progress threads, queues and
# registration of their buffers; a connection is served on the device it
# came on. ORFS mounts and an MXBD volume through either address, data
# moved both ways (RDMA READ and WRITE through each device's pool), the
# status report and the configuration check naming both devices; the
# volume attached through both, its two devices of one identity, joined
# by dm-multipath, which goes on through one when the other is taken
# away under verified writes; a server on any address serving both; the
# second device removed under I/O and added again, under both servers.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 300
. "$(dirname "$0")/lib.sh"

dev2=dummy1
addr2=10.78.0.1
rdma2=rxe1
modprobe dummy numdummies=0
ip link add "$dev2" type dummy
on_exit "ip link del $dev2 2>/dev/null || true"
ip addr add "$addr2/24" dev "$dev2"
ip link set "$dev2" up
rdma link add "$rdma2" type rxe netdev "$dev2"
on_exit "rdma link delete $rdma2 2>/dev/null || true"
wait_gid "$rdma2" 0000:0000:0000:0000:0000:ffff:0a4e:0001
# sent_pkts DEV: the packets DEV has sent so far (0 while it is away)
sent_pkts() { cat /sys/class/infiniband/"$1"/ports/1/hw_counters/sent_pkts 2>/dev/null || echo 0; }

mkdir -p /tmp/ed /tmp/m1 /tmp/m2
truncate -s 64M /tmp/vd
step "a server on an address of each device, asked for one progress thread, takes one a device"
start_server -a "$addr2" -T 1 -e ed=/tmp/ed,no_root_squash -b vd=/tmp/vd
cat "$ORFS_SERVER_LOG"
expect_grep "progress threads: 2, one for each of 2 RDMA devices \(not 1\)" "$ORFS_SERVER_LOG"
expect_grep "listening on $ORFS_ADDR port 20077, $addr2 port 20077 \($ORFS_RDMA_DEV, $rdma2\): .* 2 progress threads," \
	"$ORFS_SERVER_LOG"
load_suite

step "a mount through each address is served on its own device; data goes through that device only"
mount_orfs nconnect=1 "$ORFS_ADDR:/ed" /tmp/m1
mount_orfs nconnect=1 "$addr2:/ed" /tmp/m2
expect_grep "$ORFS_ADDR connected to export 'ed' \(credits [0-9]+, progress thread 0 on $ORFS_RDMA_DEV\)" \
	"$ORFS_SERVER_LOG"
expect_grep "$addr2 connected to export 'ed' \(credits [0-9]+, progress thread 1 on $rdma2\)" \
	"$ORFS_SERVER_LOG"
# through MOUNT, 8 MiB written with O_DIRECT to file F and read back: the
# server pulls and pushes it through its pool as registered with the
# device of MOUNT's address. Prints the packets each device sent.
through() {
	local p1 p2
	p1=$(sent_pkts "$ORFS_RDMA_DEV")
	p2=$(sent_pkts "$rdma2")
	dd if=/tmp/src of="$1/$2" bs=1M oflag=direct status=none
	dd if="$1/$2" of=/tmp/back bs=1M iflag=direct status=none
	cmp /tmp/src /tmp/back
	cmp /tmp/src "/tmp/ed/$2"
	echo "$(($(sent_pkts "$ORFS_RDMA_DEV") - p1)) $(($(sent_pkts "$rdma2") - p2))"
}
# through_only MOUNT F DEV: through() on MOUNT, whose packets all went
# through DEV: 16 MiB is at least 4096 packets (4 KiB at most each); the
# other device sends at most a keep-alive or two meanwhile.
through_only() {
	local n1 n2 on off
	read -r n1 n2 < <(through "$1" "$2")
	echo "through $1: $ORFS_RDMA_DEV sent $n1 packets, $rdma2 $n2"
	if [ "$3" = "$ORFS_RDMA_DEV" ]; then on=$n1 off=$n2; else on=$n2 off=$n1; fi
	if [ "$on" -lt 4096 ] || [ "$off" -ge 100 ]; then
		fail "the transfer through $1 did not stay on $3"
	fi
}
head -c 8M /dev/urandom > /tmp/src
through_only /tmp/m1 f "$ORFS_RDMA_DEV"
through_only /tmp/m2 g "$rdma2"
cmp /tmp/m1/g /tmp/m2/f

step "an MXBD volume through the second device"
"$ORFS_PROJ/tools/mxbdctl" attach "$addr2" vd | tee /tmp/out
devname=$(awk '{ print $NF }' /tmp/out)
expect_grep "^/dev/mxbd[0-9]+$" <(echo "$devname")
on_exit "'$ORFS_PROJ/tools/mxbdctl' detach $devname 2>/dev/null || true"
dd if=/tmp/src of="$devname" bs=1M oflag=direct status=none
dd if="$devname" of=/tmp/back3 bs=1M count=8 iflag=direct status=none
cmp /tmp/src /tmp/back3
cmp /tmp/src <(head -c 8M /tmp/vd)
expect_grep "$addr2 connected to volume 'vd' \(credits [0-9]+, progress thread 1 on $rdma2\)" \
	"$ORFS_SERVER_LOG"

step "the volume through the other device too: two paths with one identity, for multipath"
"$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vd | tee /tmp/out
devname1=$(awk '{ print $NF }' /tmp/out)
on_exit "'$ORFS_PROJ/tools/mxbdctl' detach $devname1 2>/dev/null || true"
[ "$devname1" != "$devname" ] || fail "one device for two paths"
id=$(cat "/sys/block/${devname#/dev/}/mxbd/uuid")
echo "identity: $id"
expect_grep '^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' <(echo "$id")
expect_eq "identity through $ORFS_ADDR" "$(cat "/sys/block/${devname1#/dev/}/mxbd/uuid")" "$id"
cmp /tmp/src <(dd if="$devname1" bs=1M count=8 iflag=direct status=none)
# The udev rule names both by the identity (what multipath-tools groups by).
mkdir -p /run/udev/rules.d
cp "$ORFS_PROJ/tools/60-mxbd.rules" /run/udev/rules.d/
on_exit "rm -f /run/udev/rules.d/60-mxbd.rules"
for d in "$devname" "$devname1"; do
	udevadm test --action=add "/sys/block/${d#/dev/}" > /tmp/udev.out 2>&1 || true
	expect_grep "^ID_SERIAL=mxbd-$id$" /tmp/udev.out
	expect_grep "^DEVLINKS=.*/dev/disk/by-id/mxbd-$id" /tmp/udev.out
done
"$ORFS_PROJ/tools/mxbdctl" detach "$devname1"

# status_report [PID LOG THREADS]: ask the server (default the one
# start_server started, with two threads) for a status report; its lines
# in /tmp/status once each thread wrote its own
status_report() {
	local pid=${1:-$ORFS_SERVER_PID} log=${2:-$ORFS_SERVER_LOG} threads=${3:-2} n0 i
	n0=$(wc -l < "$log")
	kill -USR1 "$pid"
	for ((i = 0; i < 50; i++)); do
		tail -n +$((n0 + 1)) "$log" > /tmp/status
		[ "$(grep -c 'status: progress thread [0-9]* on' /tmp/status)" -eq "$threads" ] && break
		sleep 0.1
	done
	[ "$i" -lt 50 ] || fail "no status report from $threads threads"
	# A thread's connection lines follow its own line at once.
	sleep 0.3
	tail -n +$((n0 + 1)) "$log" > /tmp/status
}

step "the status report names each thread's device"
status_report
cat /tmp/status
expect_grep "status: progress thread 0 on $ORFS_RDMA_DEV: 1 connections," /tmp/status
expect_grep "status: progress thread 1 on $rdma2: [0-9]+ connections," /tmp/status

step "the configuration check names both devices"
"$ORFS_BIN/orfs-server" --insecure -n -a "$ORFS_ADDR" -a "$addr2" -e ed=/tmp/ed,no_root_squash -s /tmp/s2 > /tmp/check.out 2>&1
cat /tmp/check.out
expect_grep "configuration checked: listen $ORFS_ADDR port 20077, $addr2 port 20077 on $ORFS_RDMA_DEV, $rdma2, 1 exports" \
	/tmp/check.out

step "a server on any address serves every device, a connection on the device it came on"
for any in 0.0.0.0 ::; do
	"$ORFS_BIN/orfs-server" --insecure -n -a "$any" -e ed=/tmp/ed,no_root_squash -s /tmp/s4 > /tmp/check.out 2>&1 ||
		{ cat /tmp/check.out; fail "the check of $any failed"; }
	cat /tmp/check.out
	expect_grep "configuration checked: listen $any port 20077 on $ORFS_RDMA_DEV, $rdma2, 1 exports" \
		/tmp/check.out
done
# The IPv6 any address takes IPv4 clients too. This server stays for the
# removal below.
start_other /tmp/any.log -a :: -p 20092 -s /tmp/s4 -e ed=/tmp/ed,no_root_squash
anysrv=$OTHER_PID
cat /tmp/any.log
expect_grep "listening on :: port 20092 \($ORFS_RDMA_DEV, $rdma2\): .* 2 progress threads," /tmp/any.log
mkdir -p /tmp/m3 /tmp/m4
mount_orfs nconnect=1,port=20092 "$ORFS_ADDR:/ed" /tmp/m3
mount_orfs nconnect=1,port=20092 "$addr2:/ed" /tmp/m4
expect_grep "$ORFS_ADDR connected to export 'ed' \(credits [0-9]+, progress thread [0-9] on $ORFS_RDMA_DEV\)" \
	/tmp/any.log
expect_grep "$addr2 connected to export 'ed' \(credits [0-9]+, progress thread [0-9] on $rdma2\)" \
	/tmp/any.log
through_only /tmp/m3 k "$ORFS_RDMA_DEV"
through_only /tmp/m4 l "$rdma2"
# A device added after the start is named once, not served, and its
# removal waits for nothing of this server.
ip link add dummy2 type dummy
on_exit "ip link del dummy2 2>/dev/null || true"
ip addr add 10.79.0.1/24 dev dummy2
ip link set dummy2 up
rdma link add rxe2 type rxe netdev dummy2
on_exit "rdma link delete rxe2 2>/dev/null || true"
wait_gid rxe2 0000:0000:0000:0000:0000:ffff:0a4f:0001
wait_until 50 grep -q "RDMA device rxe2 is not served: it came after the start" /tmp/any.log ||
	{ cat /tmp/any.log; fail "the server on any address did not name rxe2"; }
# A connection through it is refused (libfabric knows the devices of its
# start only), and leaves librdmacm a hold on it.
expect_fail timeout 30 "$ORFS_BIN/knet-ping" -a 10.79.0.1 -p 20092 -n ed -s file -c 1 > /tmp/ping.out 2>&1
cat /tmp/ping.out
expect_grep "Connection refused" /tmp/ping.out
expect_grep "a connection request refused: it came on an RDMA device added after the start" /tmp/any.log
t0=$SECONDS
timeout 60 rdma link delete rxe2 || fail "the removal of rxe2 did not end"
echo "the removal of rxe2 took $((SECONDS - t0)) s"
[ $((SECONDS - t0)) -le "$(slow 10)" ] || fail "the removal of rxe2 took $((SECONDS - t0)) s"
wait_until 50 grep -q "RDMA device rxe2, not served, is gone" /tmp/any.log ||
	{ cat /tmp/any.log; fail "the server on any address did not see rxe2 go"; }

step "dm-multipath joins the two paths; I/O goes on through one when the other is taken away"
modprobe -a dm-multipath dm-round-robin
"$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vd | tee /tmp/out
devname1=$(awk '{ print $NF }' /tmp/out)
expect_eq "identity through $ORFS_ADDR" "$(cat "/sys/block/${devname1#/dev/}/mxbd/uuid")" "$id"
sectors=$(cat "/sys/block/${devname#/dev/}/size")
# Both paths in one group, taken in turns.
dmsetup create mxbd-mp --noudevsync \
	--table "0 $sectors multipath 0 0 1 1 round-robin 0 2 1 $devname 1 $devname1 1"
on_exit "dmsetup remove --noudevsync mxbd-mp 2>/dev/null || true"
dmsetup status mxbd-mp
# Its node, as the kernel names it (no udev here to make /dev/mapper's).
mp=/dev/$(dmsetup info -c --noheadings -o blkdevname mxbd-mp)
[ -b "$mp" ] || fail "no block device $mp"
# vd_in ADDR: bytes the server took in on its connections to vd from ADDR,
# by a status report
vd_in() {
	status_report
	awk -v a="$1" -v v="'vd'" '$2 == "status:" && $3 == a && $5 == v { n += $(NF - 4) }
		END { print n + 0 }' /tmp/status
}
in1=$(vd_in "$ORFS_ADDR")
in2=$(vd_in "$addr2")
fio --name=mp --filename="$mp" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=64k --iodepth=8 --size=16M --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fio-mp.out || { cat /tmp/fio-mp.out; fail "fio on both paths"; }
expect_grep 'err= 0' /tmp/fio-mp.out
in1=$(($(vd_in "$ORFS_ADDR") - in1))
in2=$(($(vd_in "$addr2") - in2))
echo "written through $ORFS_ADDR: $in1 bytes, through $addr2: $in2 bytes"
[ "$in1" -ge $((1 << 20)) ] || fail "little went through $ORFS_ADDR"
[ "$in2" -ge $((1 << 20)) ] || fail "little went through $addr2"
# Verified writes again, four passes; the path through the first device
# goes during them, with its requests in flight.
fio --name=mp --filename="$mp" --direct=1 --ioengine=libaio --rw=randwrite \
	--bs=64k --iodepth=8 --size=48M --loops=4 --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fio-mp.out &
fio=$!
sleep 2
kill -0 $fio 2>/dev/null || { cat /tmp/fio-mp.out; fail "fio ended before a path went"; }
gone=$(cat "/sys/block/${devname1#/dev/}/dev")
"$ORFS_PROJ/tools/mxbdctl" detach "${devname1#/dev/}" force
wait $fio || { cat /tmp/fio-mp.out; fail "fio failed when a path went"; }
grep -E 'err=|WRITE:|READ:' /tmp/fio-mp.out
expect_grep 'err= 0' /tmp/fio-mp.out
dmsetup status mxbd-mp | tee /tmp/mp.status
# Each path: its device, A(ctive) or F(ailed), its count of failures.
expect_grep " $(cat "/sys/block/${devname#/dev/}/dev") A 0 " /tmp/mp.status
expect_grep " $gone F [1-9][0-9]*( |$)" /tmp/mp.status
dmsetup remove --noudevsync mxbd-mp

step "three threads on two devices: each device gets half the pool, split among its threads"
start_other /tmp/server3.log -a "$ORFS_ADDR" -a "$addr2" -p 20091 -T 3 -s /tmp/s3 -b vd3=/tmp/vd
server3=$OTHER_PID
status_report "$server3" /tmp/server3.log 3
cat /tmp/status
# The default pool: 256 chunks of 256 KiB.
expect_grep "progress thread 0 on $ORFS_RDMA_DEV: 0 connections, 0 requests in service, 64 of 64 buffer chunks free" \
	/tmp/status
expect_grep "progress thread 2 on $ORFS_RDMA_DEV: 0 connections, 0 requests in service, 64 of 64 buffer chunks free" \
	/tmp/status
expect_grep "progress thread 1 on $rdma2: 0 connections, 0 requests in service, 128 of 128 buffer chunks free" \
	/tmp/status
kill -TERM "$server3"
wait "$server3" || fail "the third server exited with $?"

step "the second device removed under I/O, then added again: the removal ends at once, the first device serves on, the second comes back"
# Two servers hold the device: the first through its address, the second
# through any address (a listener on no device: it watches the device
# list), with a mount through it.
# Verified writes through the second device, slow enough to span it all.
fio --name=rm --filename="$devname" --direct=1 --ioengine=libaio --rw=write --bs=64k \
	--iodepth=4 --size=16M --rate=2m --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fio-rm.out &
fio=$!
sleep 2
n0=$(log_lines)
t0=$SECONDS
# Before, the server's and knet's hold on the device kept this waiting.
timeout 60 rdma link delete "$rdma2" || fail "the removal of $rdma2 did not end"
echo "the removal of $rdma2 took $((SECONDS - t0)) s"
[ $((SECONDS - t0)) -le "$(slow 10)" ] || fail "the removal of $rdma2 took $((SECONDS - t0)) s"
expect_grep "knet: $rdma2 is being removed: closing [0-9]+ endpoints on it" <(dmesg)
expect_grep "knet: released RDMA device $rdma2" <(dmesg)
if grep -q "^$rdma2 " /sys/kernel/debug/knet/devices; then fail "knet still lists $rdma2"; fi
tail -n +$((n0 + 1)) "$ORFS_SERVER_LOG" > /tmp/removal.log
expect_grep "RDMA device $rdma2 removed: its connections close; serving on 1 of 2 devices" /tmp/removal.log
expect_grep "RDMA device $rdma2 released" /tmp/removal.log
expect_grep "RDMA device $rdma2 removed: its connections close; serving on 1 of 2 devices" /tmp/any.log
expect_grep "RDMA device $rdma2 released" /tmp/any.log
# A write through the mount of the gone device waits (hard mount) for it.
dd if=/tmp/src of=/tmp/m2/h bs=1M oflag=direct status=none &
dd2=$!
# The first device serves on meanwhile.
read -r n1 n2 < <(through /tmp/m1 i)
echo "through $ORFS_ADDR with $rdma2 gone: $ORFS_RDMA_DEV sent $n1 packets"
[ "$n1" -ge 4096 ] || fail "the transfer through $ORFS_ADDR did not use $ORFS_RDMA_DEV"
kill -0 $fio 2>/dev/null || { cat /tmp/fio-rm.out; fail "fio ended while $rdma2 was gone"; }
expect_eq "the volume through $addr2" "$(cat "/sys/block/${devname#/dev/}/mxbd/state")" reconnecting
wait_until 100 grep -q "RDMA device $rdma2 is gone: the server holds nothing of it" \
	"$ORFS_SERVER_LOG" || fail "the server did not see $rdma2 go"
rdma link add "$rdma2" type rxe netdev "$dev2"
wait_gid "$rdma2" 0000:0000:0000:0000:0000:ffff:0a4e:0001
wait_until 100 grep -q "RDMA device $rdma2 is back: serving on it again" "$ORFS_SERVER_LOG" ||
	{ cat "$ORFS_SERVER_LOG"; fail "the server did not serve on $rdma2 again"; }
wait_until 100 grep -q "RDMA device $rdma2 is back: serving on it again" /tmp/any.log ||
	{ cat /tmp/any.log; fail "the server on any address did not serve on $rdma2 again"; }
wait $fio || { cat /tmp/fio-rm.out; fail "fio failed across the removal"; }
grep -E 'err=|WRITE:|READ:' /tmp/fio-rm.out
expect_grep 'err= 0' /tmp/fio-rm.out
expect_grep "mxbd: ${devname#/dev/}: reconnected to $addr2 after" <(dmesg)
wait $dd2 || fail "the write through $addr2 failed across the removal"
cmp /tmp/src /tmp/ed/h
# The second device carries both again.
read -r n1 n2 < <(through /tmp/m2 j)
echo "through $addr2 once back: $rdma2 sent $n2 packets"
[ "$n2" -ge 4096 ] || fail "the transfer through $addr2 did not use $rdma2"
read -r n1 n2 < <(through /tmp/m4 m)
echo "through $addr2 to the server on any address once back: $rdma2 sent $n2 packets"
[ "$n2" -ge 4096 ] || fail "the transfer through $addr2 did not use $rdma2"
tail -n +$((n0 + 1)) "$ORFS_SERVER_LOG"
cat /tmp/any.log

step "everything ends cleanly; no request waited out its time-out"
# Nothing here keeps a server from answering: a time-out would be knet's.
if dmesg | grep 'knet: no answer within'; then fail "a request timed out"; fi
"$ORFS_PROJ/tools/mxbdctl" detach "$devname"
umount /tmp/m1
umount /tmp/m2
umount /tmp/m3
umount /tmp/m4
kill -TERM "$anysrv"
wait "$anysrv" || fail "the server on any address exited with $?"
stop_server
echo "ok"

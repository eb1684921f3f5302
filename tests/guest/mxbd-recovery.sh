#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# MXBD when the server goes away: killed and restarted under a verified
# fio run (I/O is held, resent, and fio finds every block right); flushed
# data survives a kill; a server that hangs is found by the I/O time-out
# and I/O resumes when it wakes; a server that never comes back fails I/O
# after the loss time-out, and the failed device detaches. A volume keeps
# its identity across restarts; a server that serves another file under
# its name fails the device rather than take its writes. The host's only
# RDMA device removed and added again under verified writes.
# lanes: check=6.12/tcp all=*/rxe,*/tcp
# timeout: 400
. "$(dirname "$0")/lib.sh"

ctl() { "$ORFS_PROJ/tools/mxbdctl" "$@"; }
# Fresh files: a script run before in this boot may have left its own.
rm -f /tmp/rvol /tmp/rvol2
truncate -s 128M /tmp/rvol
start_server -b rvol=/tmp/rvol
modprobe -a ib_core rdma_cm libcrc32c
insmod "$ORFS_KMOD/regcache/regcache.ko"
insmod "$ORFS_KMOD/knet/knet.ko"
on_exit "rmmod knet; rmmod regcache"
insmod "$ORFS_KMOD/mxbd/mxbd.ko"
on_exit "module_loaded mxbd && rmmod mxbd"

# writes_done: writes the block layer has completed on mxbd0
writes_done() { local st; read -r -a st < /sys/block/mxbd0/stat; echo "${st[4]}"; }
stat_of() { awk -v k="$1" '$1 == k { print $2 }' /sys/block/mxbd0/mxbd/stats; }

step "server killed and restarted under verified fio: no error, every block right"
expect_eq "attach" "$(ctl attach "$ORFS_ADDR" rvol io_timeout=5 loss_timeout=60)" /dev/mxbd0
fio --name=verify --filename=/dev/mxbd0 --direct=1 --ioengine=libaio --rw=randwrite \
	--bsrange=4k-128k --iodepth=16 --size=96M --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --verify_state_save=0 --output=/tmp/fio.out &
fio=$!
for ((i = 0; i < 300; i++)); do [ "$(writes_done)" -gt 200 ] && break; sleep 0.1; done
[ "$(writes_done)" -gt 200 ] || fail "fio's writes never flowed"
kill_server KILL
sleep 1
expect_eq "state with the server gone" "$(cat /sys/block/mxbd0/mxbd/state)" reconnecting
sleep 1
start_server -b rvol=/tmp/rvol
wait $fio || { cat /tmp/fio.out; fail "fio failed across the restart"; }
grep -E 'err=|WRITE:|READ:' /tmp/fio.out
expect_grep 'err= 0' /tmp/fio.out
cat /sys/block/mxbd0/mxbd/stats
[ "$(stat_of reconnects)" -ge 1 ] || fail "no reconnect counted"
[ "$(stat_of held)" -ge 1 ] || fail "no request was held"
expect_eq "failed requests" "$(stat_of failed)" 0
expect_eq "state" "$(cat /sys/block/mxbd0/mxbd/state)" live
expect_grep 'mxbd0: reconnected to' <(dmesg)

step "data acknowledged by a flush survives a killed server"
head -c 8M /dev/urandom > /tmp/flushed.bin
dd if=/tmp/flushed.bin of=/dev/mxbd0 bs=1M seek=100 conv=fsync status=none
kill_server KILL
start_server -b rvol=/tmp/rvol
cmp <(dd if=/dev/mxbd0 bs=1M skip=100 count=8 iflag=direct status=none) /tmp/flushed.bin ||
	fail "flushed data was lost"
cmp <(dd if=/tmp/rvol bs=1M skip=100 count=8 status=none) /tmp/flushed.bin ||
	fail "the volume file does not hold the flushed data"

step "a hung server: the I/O time-out drops the connection, I/O resumes when it wakes"
r0=$(stat_of reconnects)
kill -STOP "$ORFS_SERVER_PID"
on_exit "kill -CONT $ORFS_SERVER_PID 2>/dev/null"
dd if=/dev/mxbd0 of=/tmp/read.bin bs=1M count=8 skip=100 iflag=direct status=none &
dd_pid=$!
timed_out() { dmesg | grep -q 'no answer within 5000 ms'; }
wait_until 200 timed_out || fail "no I/O time-out while the server was stopped"
kill -0 $dd_pid 2>/dev/null || fail "the read finished while the server was stopped"
kill -CONT "$ORFS_SERVER_PID"
wait $dd_pid || fail "the read failed"
cmp /tmp/read.bin /tmp/flushed.bin || fail "the read after the hang differs"
[ "$(stat_of reconnects)" -gt "$r0" ] || fail "no reconnect after the hang"
expect_eq "failed requests" "$(stat_of failed)" 0

step "the volume keeps its identity across a restart; another file under its name is refused"
id=$(cat /sys/block/mxbd0/mxbd/uuid)
echo "identity: $id"
expect_grep '^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' <(echo "$id")
r0=$(stat_of reconnects)
kill_server KILL
start_server -b rvol=/tmp/rvol
dd if=/dev/mxbd0 of=/dev/null bs=4k count=1 iflag=direct status=none
[ "$(stat_of reconnects)" -gt "$r0" ] || fail "no reconnect after the restart"
expect_eq "identity after a restart" "$(cat /sys/block/mxbd0/mxbd/uuid)" "$id"
# The server now serves another file as rvol: the client must not write
# what was meant for the first one there.
truncate -s 128M /tmp/rvol2
kill_server KILL
start_server -b rvol=/tmp/rvol2
if dd if=/dev/urandom of=/dev/mxbd0 bs=4k count=1 oflag=direct status=none 2>/tmp/dd.err; then
	fail "a write went to another volume"
fi
cat /tmp/dd.err
expect_grep "mxbd0: the volume's identity changed from $id to [0-9a-f-]{36}: not the volume attached" \
	<(dmesg)
expect_eq "state" "$(cat /sys/block/mxbd0/mxbd/state)" failed
expect_eq "bytes written to the other file" "$(tr -d '\0' < /tmp/rvol2 | wc -c)" 0
ctl detach mxbd0
# uuid= gives the identity: the same volume, served from a second path or
# by another server (shared storage), says so.
kill_server KILL
start_server -b "rvol=/tmp/rvol2,uuid=$id"
expect_eq "attach" "$(ctl attach "$ORFS_ADDR" rvol)" /dev/mxbd0
expect_eq "identity given by uuid=" "$(cat /sys/block/mxbd0/mxbd/uuid)" "$id"

step "the host's only RDMA device removed under verified writes and added again: the server stops so the removal ends, and once restarted fio finishes clean"
fio --name=rm --filename=/dev/mxbd0 --direct=1 --ioengine=libaio --rw=write --bs=64k \
	--iodepth=4 --size=16M --rate=2m --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fio-rm.out &
fio=$!
sleep 2
server=$ORFS_SERVER_PID
t0=$SECONDS
timeout 60 rdma link delete "$ORFS_RDMA_DEV" || fail "the removal of $ORFS_RDMA_DEV did not end"
echo "the removal of $ORFS_RDMA_DEV took $((SECONDS - t0)) s"
[ $((SECONDS - t0)) -le "$(slow 10)" ] || fail "the removal of $ORFS_RDMA_DEV took $((SECONDS - t0)) s"
# librdmacm lets a removed device go only while it lists another: with
# none left, the server ends (its supervisor starts it again).
wait_until 100 ended "$server" || fail "the server did not stop"
rc=0
wait "$server" || rc=$?
ORFS_SERVER_PID=
expect_eq "the server's exit status" "$rc" 1
expect_grep "no RDMA device is left on this host: stopping, so that the removal of $ORFS_RDMA_DEV can end" \
	"$ORFS_SERVER_LOG"
expect_grep "knet: released RDMA device $ORFS_RDMA_DEV" <(dmesg)
expect_eq "state while the device is away" "$(cat /sys/block/mxbd0/mxbd/state)" reconnecting
kill -0 $fio 2>/dev/null || { cat /tmp/fio-rm.out; fail "fio ended while the device was away"; }
rdma link add "$ORFS_RDMA_DEV" type rxe netdev "$ORFS_DEV"
wait_gid "$ORFS_RDMA_DEV" 0000:0000:0000:0000:0000:ffff:0a4d:0001
start_server -b "rvol=/tmp/rvol2,uuid=$id"
wait $fio || { cat /tmp/fio-rm.out; fail "fio failed across the removal"; }
grep -E 'err=|WRITE:|READ:' /tmp/fio-rm.out
expect_grep 'err= 0' /tmp/fio-rm.out
expect_grep 'mxbd0: reconnected to' <(dmesg | tail -n 20)
expect_eq "state" "$(cat /sys/block/mxbd0/mxbd/state)" live

step "a server that never comes back: I/O fails after the loss time-out"
ctl detach mxbd0
expect_eq "attach" "$(ctl attach "$ORFS_ADDR" rvol io_timeout=5 loss_timeout=4)" /dev/mxbd0
kill_server KILL
t0=$(date +%s)
if dd if=/dev/mxbd0 of=/dev/null bs=4k count=1 iflag=direct status=none 2>/tmp/dd.err; then
	fail "a read without a server succeeded"
fi
t1=$(date +%s)
cat /tmp/dd.err
expect_grep 'Input/output error' /tmp/dd.err
echo "failed after $((t1 - t0)) s"
[ $((t1 - t0)) -ge 3 ] || fail "I/O failed before the loss time-out ($((t1 - t0)) s)"
# The loss is seen at once (the server's end closes the connections) and
# the last try comes at the deadline: a second or two of slack.
[ $((t1 - t0)) -le "$(slow 6)" ] || fail "I/O failed only after $((t1 - t0)) s"
expect_eq "state" "$(cat /sys/block/mxbd0/mxbd/state)" failed
expect_grep 'mxbd0: no server for 4 s: failing I/O' <(dmesg)
if dd if=/dev/mxbd0 of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null; then
	fail "a failed device served a read"
fi
ctl detach mxbd0
[ ! -e /sys/block/mxbd0 ] || fail "mxbd0 is still there"
echo ok

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# knet over TCP against the real server: an MXBD volume and an ORFS export
# served on a TCP listener beside the RDMA one; mkfs, files and fio with
# verification through both, O_DIRECT from user buffers, the page cache;
# the transport shown in sysfs, /proc/mounts and debugfs; "auto" choosing
# RDMA where rxe routes; a server restart under I/O; CRC32C digests
# asked for, granted, checked both ways, and lied about; the userspace
# clients over TCP (tcp-conduct.sh has them facing a lying server, and
# the server facing clients that break the protocol); READs sent
# from the page cache through pipes (from memory and from a disk file
# system, past the end of a shrunk store, not with a data digest, clients
# killed mid-read); WRITEs received into it through pipes (a pipe filled
# by small segments, not with a data digest, clients killed mid-write);
# MXBD's queue_rq and ORFS's callers sending their requests themselves.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 540
. "$(dirname "$0")/lib.sh"

truncate -s 256M /tmp/tvol
mkdir -p /tmp/texp /tmp/m /tmp/mnt /tmp/disk
# A volume on a disk file system (ext4 on a loop device), not in memory:
# its large READs go to the workers.
truncate -s 64M /tmp/disk.img
mkfs.ext4 -q -F /tmp/disk.img
modprobe loop
mount -o loop /tmp/disk.img /tmp/disk
on_exit "umount /tmp/disk"
truncate -s 32M /tmp/disk/dvol
tstart() { start_server -a "tcp://$ORFS_ADDR" -s /tmp/tstate -b tvol=/tmp/tvol \
	-b dvol=/tmp/disk/dvol -e data=/tmp/texp,no_root_squash; }
tstart
# No rescan of MXBD's own: a step shrinks a store under the server and
# reads past its end, which a rescan that came first would cut short.
load_suite mxbd:rescan_interval=0

step "the server listens on TCP beside RDMA"
expect_grep "listening on $ORFS_ADDR port 20077, tcp://$ORFS_ADDR port 20077" "$ORFS_SERVER_LOG"
ss -ltn | grep -q ":20077 " || fail "no TCP listener on port 20077"

step "an MXBD volume attached over TCP: sysfs, debugfs and the log say so"
echo "server=$ORFS_ADDR volume=tvol transport=tcp queues=2" > /sys/class/mxbd/attach
on_exit "echo mxbd0 > /sys/class/mxbd/detach 2>/dev/null"
[ -b /dev/mxbd0 ] || fail "no /dev/mxbd0"
expect_eq "transport" "$(cat /sys/block/mxbd0/mxbd/transport)" tcp
expect_eq "size" "$(blockdev --getsize64 /dev/mxbd0)" 268435456
expect_eq "endpoints over tcp" "$(ep_each transport | grep -c tcp)" 2
expect_grep "knet: connected to $ORFS_ADDR:20077 \(volume 'tvol'\) over tcp" <(dmesg)
expect_grep "connected to volume 'tvol' \(credits [0-9]+, progress thread [0-9]+ on TCP\)" "$ORFS_SERVER_LOG"

step "fio over TCP: random writes of 512 B to 1 MiB at depth 16, every block verified"
fio --name=tv --filename=/dev/mxbd0 --direct=1 --ioengine=libaio --rw=randwrite \
	--bsrange=512-1m --iodepth=16 --size=64M --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --verify_state_save=0 --output=/tmp/fio.out || { cat /tmp/fio.out; fail "fio"; }
expect_grep 'err= 0' /tmp/fio.out
# Large writes went by R2T and DATA, small ones inline.
(($(ep_sum bytes_rdma) > 32 * 1048576)) || fail "hardly any data went by R2T/DATA: $(ep_sum bytes_rdma)"
(($(ep_sum bytes_inline) > 0)) || fail "no data went inline"
# MXBD's queues may sleep: queue_rq sends requests itself, not the work item.
(($(ep_sum submitter_sends) > 100)) || fail "queue_rq hardly sent: $(ep_sum submitter_sends)"

step "block READs over TCP go from the page cache by reference; past a shrunk store, zeroes"
# The TCP threads' counts of chunks moved by pipe, from the status report:
# read (READ chunks sent), write (WRITE chunks received), full (WRITE pipes
# that filled up, their data then copied).
pipes() {
	local n0 re
	case $1 in
	read) re='\([0-9]*\) READ chunks sent from the page cache' ;;
	write) re='\([0-9]*\) WRITE chunks received into it' ;;
	full) re='(\([0-9]*\) pipes filled up)' ;;
	esac
	n0=$(log_lines)
	kill -USR1 "$ORFS_SERVER_PID"
	# Every thread's line, as many as the report's first line counts.
	wait_until 50 report_whole "$n0" || fail "the status report did not come whole"
	tail -n +$((n0 + 1)) "$ORFS_SERVER_LOG" | grep 'on TCP: ' | sed -n "s/.* $re.*/\1/p" |
		awk '{ s += $1 } END { print s + 0 }'
}
report_whole() {
	tail -n +$(($1 + 1)) "$ORFS_SERVER_LOG" | awk '
		/status: [0-9]+ connections, .* progress threads/ {
			for (i = 1; i < NF; i++) if ($(i + 1) == "progress") want = $i
		}
		/status: progress thread [0-9]+ on / { n++ }
		END { exit !(want && n >= want) }'
}
spliced() { pipes read; }
head -c 16M /dev/urandom > /tmp/src
dd if=/tmp/src of=/dev/mxbd0 bs=1M seek=192 oflag=direct status=none
n0=$(spliced)
cmp /tmp/src <(dd if=/dev/mxbd0 bs=1M skip=192 count=16 iflag=direct status=none) ||
	fail "a volume read over TCP differs"
n1=$(spliced)
# 16 MiB in chunks of 256 KiB: 64 of them, whatever the requests' sizes.
((n1 - n0 >= 64)) || fail "READ chunks sent from the page cache: $n0 then $n1"
# The store shrinks under the server (it still serves 256 MiB): what is past its end reads as zeroes.
truncate -s $((200 * 1048576 + 12345)) /tmp/tvol
head -c $((8 * 1048576 + 12345)) /tmp/src > /tmp/shrunk.exp
head -c $((8 * 1048576 - 12345)) /dev/zero >> /tmp/shrunk.exp
cmp /tmp/shrunk.exp <(dd if=/dev/mxbd0 bs=1M skip=192 count=16 iflag=direct status=none) ||
	fail "a read across the shrunk end of the store is not its data then zeroes"
truncate -s 256M /tmp/tvol
# From a volume on disk, through the workers: large reads by pipe, small ones copied.
echo "server=$ORFS_ADDR volume=dvol transport=tcp" > /sys/class/mxbd/attach
[ -b /dev/mxbd1 ] || fail "no /dev/mxbd1"
dd if=/tmp/src of=/dev/mxbd1 bs=1M oflag=direct status=none
sync /tmp/disk/dvol
echo 3 > /proc/sys/vm/drop_caches
n0=$(spliced)
cmp /tmp/src <(dd if=/dev/mxbd1 bs=1M count=16 iflag=direct status=none) ||
	fail "a read of a volume on disk over TCP differs"
cmp <(head -c 1M /tmp/src) <(dd if=/dev/mxbd1 bs=8k count=128 iflag=direct status=none) ||
	fail "small reads of a volume on disk over TCP differ"
n1=$(spliced)
((n1 - n0 >= 64)) || fail "READ chunks of a volume on disk sent from the page cache: $n0 then $n1"
echo mxbd1 > /sys/class/mxbd/detach

step "block WRITEs over TCP go from the socket into the page cache by pipe; a full pipe is copied"
head -c 16M /dev/urandom > /tmp/wsrc
n0=$(pipes write)
dd if=/tmp/wsrc of=/dev/mxbd0 bs=1M seek=128 oflag=direct status=none
n1=$(pipes write)
((n1 - n0 >= 64)) || fail "WRITE chunks received into the page cache: $n0 then $n1"
cmp /tmp/wsrc <(dd if=/tmp/tvol bs=1M skip=128 count=16 status=none) ||
	fail "a volume written over TCP by pipe holds other bytes"
cmp /tmp/wsrc <(dd if=/dev/mxbd0 bs=1M skip=128 count=16 iflag=direct status=none) ||
	fail "a volume written over TCP by pipe reads back other bytes"
# A client sending its data in 512-byte segments fills a pipe before a
# chunk is in: what it holds, then the rest, go to the chunk.
f0=$(pipes full)
KNET_DRIP=512 timeout 120 "$ORFS_BIN/knet-load" -a "$ORFS_ADDR" -t tcp -n tvol -w verify -q 1 \
	-b 1048576 -N 1 -r 7 | tee /tmp/out
expect_grep '^result: op=verify .* errors=0 mismatches=0$' /tmp/out
f1=$(pipes full)
((f1 - f0 >= 2)) || fail "pipes filled up by a client's small segments: $f0 then $f1"
# A 1500-byte network's segments (1400 bytes of data here): a chunk's fit its pipe.
w0=$(pipes write)
KNET_DRIP=1400 timeout 120 "$ORFS_BIN/knet-load" -a "$ORFS_ADDR" -t tcp -n tvol -w verify -q 1 \
	-b 262144 -N 2 -r 8 | tee /tmp/out
expect_grep '^result: op=verify .* errors=0 mismatches=0$' /tmp/out
w1=$(pipes write)
f2=$(pipes full)
expect_eq "pipes filled up by 1400-byte segments" "$f2" "$f1"
((w1 - w0 >= 2)) || fail "WRITE chunks of 1400-byte segments received by pipe: $w0 then $w1"

step "mkfs, a tree of files, a clean fsck, the files intact after a remount"
mkfs.ext4 -q -F /dev/mxbd0
mount /dev/mxbd0 /tmp/m
on_exit "umount /tmp/m 2>/dev/null"
cp -a /usr/include/linux /tmp/m/
head -c 16M /dev/urandom > /tmp/m/random.bin
(cd /tmp/m && find . -type f -print0 | sort -z | xargs -0 sha256sum) > /tmp/sums
umount /tmp/m
fsck.ext4 -fn /dev/mxbd0 > /tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; fail "fsck found problems"; }
mount /dev/mxbd0 /tmp/m
echo 3 > /proc/sys/vm/drop_caches
(cd /tmp/m && sha256sum --quiet -c /tmp/sums) || fail "files changed"

step "the server restarts under writes: MXBD reconnects over TCP, nothing is lost"
fio --name=rs --filename=/tmp/m/rs.bin --size=32M --rw=write --bs=64k --ioengine=psync \
	--rate=,4m --fsync=8 --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/rs.out &
fpid=$!
sleep 3
kill_server
sleep 1
tstart
wait $fpid || { cat /tmp/rs.out; fail "fio across a server restart over TCP"; }
expect_grep 'err= 0' /tmp/rs.out
(($(cat /sys/block/mxbd0/mxbd/stats | awk '$1 == "reconnects" { print $2 }') >= 1)) ||
	fail "no reconnect counted"
expect_eq "transport after the restart" "$(cat /sys/block/mxbd0/mxbd/transport)" tcp
umount /tmp/m
echo mxbd0 > /sys/class/mxbd/detach

step "ORFS over TCP: /proc/mounts says so; page cache and O_DIRECT from user buffers"
mount -t orfs -o transport=tcp,nconnect=2 "$ORFS_ADDR:/data" /tmp/mnt
on_exit "umount -f /tmp/mnt 2>/dev/null"
expect_grep "/tmp/mnt orfs .*,transport=tcp" /proc/mounts
head -c 24M /dev/urandom > /tmp/src
cp /tmp/src /tmp/mnt/cached
dd if=/tmp/src of=/tmp/mnt/direct bs=1M oflag=direct status=none
dd if=/tmp/src of=/tmp/mnt/small bs=3000 count=100 oflag=direct status=none
sync
cmp /tmp/src /tmp/texp/cached || fail "a page cache write differs on the server"
cmp /tmp/src /tmp/texp/direct || fail "an O_DIRECT write differs on the server"
cmp <(head -c 300000 /tmp/src) /tmp/texp/small || fail "small O_DIRECT writes differ"
# Its requests wait for a credit when none is free: their senders send them.
(($(ep_sum submitter_sends) > 100)) || fail "ORFS's callers hardly sent: $(ep_sum submitter_sends)"
echo 3 > /proc/sys/vm/drop_caches
cmp /tmp/src /tmp/mnt/cached || fail "a page cache read differs"
cmp <(dd if=/tmp/mnt/direct bs=1M iflag=direct status=none) /tmp/src ||
	fail "an O_DIRECT read differs"
fio --name=fv --directory=/tmp/mnt --size=16M --rw=randrw --bsrange=4k-512k --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fv.out || { cat /tmp/fv.out; fail "fio on ORFS over TCP"; }
expect_grep 'err= 0' /tmp/fv.out
# Asynchronous O_DIRECT writes end in io_work, the task that read their
# answers, not on a work item woken for each (knet_srq task_done).
e0=$(mount_stat /tmp/mnt connections ended_here)
fio --name=fw --directory=/tmp/mnt --filename=fw --size=4M --rw=randwrite --bs=4k \
	--number_ios=200 --direct=1 --ioengine=libaio --iodepth=2 --output=/tmp/fw.out ||
	{ cat /tmp/fw.out; fail "fio's writes on ORFS over TCP"; }
expect_grep 'err= 0' /tmp/fw.out
(($(mount_stat /tmp/mnt connections ended_here) - e0 >= 200)) ||
	fail "of 200 O_DIRECT writes, $(($(mount_stat /tmp/mnt connections ended_here) - e0)) ended in their completion's task"
mkdir /tmp/mnt/d && touch /tmp/mnt/d/a && mv /tmp/mnt/d/a /tmp/mnt/d/b && rm /tmp/mnt/d/b &&
	rmdir /tmp/mnt/d || fail "metadata operations over TCP"
umount /tmp/mnt

step "the userspace clients over TCP: knet-ping, knet-fs, knet-load; auto as the kernel's"
uc() { timeout 120 "$ORFS_BIN/$1" -a "$ORFS_ADDR" "${@:2}"; }
uc knet-ping -t tcp -s block -n tvol -c 5 | tee /tmp/out
expect_grep '^connected: .* over tcp$' /tmp/out
expect_grep '^5 NOPs' /tmp/out
uc knet-ping -t auto -n data -c 1 | tee /tmp/out
expect_grep '^connected: .* over rdma$' /tmp/out
# A short message is answered with an error, as over RDMA; a tiny one cuts the link.
uc knet-ping -t tcp -n data -c 1 -x truncated | tee /tmp/out
expect_grep "^malformed 'truncated': answered with status" /tmp/out
uc knet-ping -t tcp -n data -c 1 -x tiny | tee /tmp/out
expect_grep "^malformed 'tiny': the server dropped the connection" /tmp/out
# 1 MiB in 7 uneven segments (offsets into the request's data), and inline.
uc knet-load -t tcp -n tvol -w verify -S 2 -q 4 -b 1048576 -N 8 -g 7 -r 21 | tee /tmp/out
expect_grep '^result: op=verify .* errors=0 mismatches=0$' /tmp/out
uc knet-load -t tcp -n tvol -w verify -S 1 -q 8 -b 4096 -N 128 -i -r 22 | tee /tmp/out
expect_grep '^result: op=verify .* errors=0 mismatches=0$' /tmp/out
uc knet-load -t tcp -n tvol -w zero -S 2 -q 4 -b 65536 -N 16 -g 2 -r 23 | tee /tmp/out
expect_grep '^result: op=zero .* errors=0 mismatches=0$' /tmp/out
head -c 3M /dev/urandom > /tmp/u.bin
uc knet-fs -t tcp -n data put /tmp/u.bin u.bin | tee /tmp/out
expect_grep '^ok wrote 3145728$' /tmp/out
cmp /tmp/u.bin /tmp/texp/u.bin || fail "knet-fs over TCP wrote other bytes"
uc knet-fs -t tcp -n data get u.bin /tmp/u.back | tee /tmp/out
cmp /tmp/u.bin /tmp/u.back || fail "knet-fs over TCP read other bytes"
# Clients killed with reads or writes in flight: their pipes are dropped,
# never given to the next chunk with bytes in them.
for i in 1 2 3; do
	for op in read write; do
		timeout -s KILL 0.$((3 * i)) "$ORFS_BIN/knet-load" -a "$ORFS_ADDR" -t tcp -n tvol \
			-w $op -S 2 -q 16 -b 1048576 -T 5 > /dev/null 2>&1 || true
	done
done
uc knet-load -t tcp -n tvol -w verify -S 2 -q 8 -b 1048576 -N 64 -g 3 -r 24 | tee /tmp/out
expect_grep '^result: op=verify .* errors=0 mismatches=0$' /tmp/out
if grep -q "internal error" "$ORFS_SERVER_LOG"; then
	grep "internal error" "$ORFS_SERVER_LOG"
	fail "the server met an internal error"
fi

step "over TCP anyone's name operations run on the progress thread, each as its caller"
# A TCP progress thread opens no verbs device, so it may switch to a
# caller's credentials as a worker does (an RDMA one runs only root's).
mkdir -m 1777 /tmp/texp/pub
cat > /tmp/names.txt <<'OPS'
as 1000 1000
mkdir pub/r 755
create pub/r/f1 644
create denied 644
as 1001 1001
rm pub/r/f1
as 0 0
create pub/rootfile 600
as 1000 1000
rm pub/rootfile
OPS
stop_server
tstart
uc knet-fs -t tcp -n data -f /tmp/names.txt | tee /tmp/out
stop_server
expect_eq "errors" "$(grep -c '^error' /tmp/out)" 3
expect_eq "refused: a user creating in root's directory, another removing from a user's" \
	"$(grep -c '^error EACCES' /tmp/out)" 2
expect_eq "refused: the sticky bit" "$(grep -c '^error EPERM' /tmp/out)" 1
expect_eq "the user's directory" "$(stat -c %u:%g:%a /tmp/texp/pub/r)" 1000:1000:755
expect_eq "the user's file" "$(stat -c %u:%g /tmp/texp/pub/r/f1)" 1000:1000
expect_eq "root's file" "$(stat -c %u:%g /tmp/texp/pub/rootfile)" 0:0
[ ! -e /tmp/texp/denied ] || fail "a user created a file in root's directory"
# MKDIR, CREATE, UNLINK, CREATE and UNLINK after a LOOKUP of pub, the two
# under r after one of r too, and the CREATE in the export's root: 13.
expect_eq "requests run without a worker" "$(names_here)" 13
rm -r /tmp/texp/pub
tstart

step "CRC32C digests, asked for at mount and attach: granted, shown, data intact"
mount -t orfs -o transport=tcp,digest=both "$ORFS_ADDR:/data" /tmp/mnt
expect_grep "/tmp/mnt orfs .*,transport=tcp,digest=both" /proc/mounts
expect_eq "endpoints with both digests" "$(ep_each digests | sort -u)" both
expect_grep "connected to export 'data' \(credits [0-9]+, progress thread [0-9]+ on TCP, digests both\)" \
	"$ORFS_SERVER_LOG"
expect_grep "knet: connected to $ORFS_ADDR:20077 \(export 'data'\) over tcp: .*, digests both" <(dmesg)
cp /tmp/src /tmp/mnt/dg
dd if=/tmp/src of=/tmp/mnt/dgd bs=1M oflag=direct status=none
sync
cmp /tmp/src /tmp/texp/dg || fail "a write with digests differs on the server"
cmp /tmp/src /tmp/texp/dgd || fail "an O_DIRECT write with digests differs on the server"
echo 3 > /proc/sys/vm/drop_caches
cmp /tmp/src /tmp/mnt/dg || fail "a read with digests differs"
cmp <(dd if=/tmp/mnt/dgd bs=1M iflag=direct status=none) /tmp/src ||
	fail "an O_DIRECT read with digests differs"
expect_fail mount -o remount,digest=none /tmp/mnt
umount /tmp/mnt
expect_fail mount -t orfs -o transport=tcp,digest=md5 "$ORFS_ADDR:/data" /tmp/mnt
for dg in header data; do
	n0=$(spliced)
	w0=$(pipes write)
	echo "server=$ORFS_ADDR volume=tvol transport=tcp digest=$dg" > /sys/class/mxbd/attach
	expect_eq "digest of the volume" "$(cat /sys/block/mxbd0/mxbd/digest)" $dg
	dd if=/tmp/src of=/dev/mxbd0 bs=1M count=8 oflag=direct status=none
	cmp <(head -c 8M /tmp/src) <(dd if=/dev/mxbd0 bs=1M count=8 iflag=direct status=none) ||
		fail "the volume read back with digest=$dg differs"
	echo mxbd0 > /sys/class/mxbd/detach
	# A data digest is made over the bytes: they go through the pool, copied.
	n1=$(spliced)
	w1=$(pipes write)
	if [ $dg = data ]; then
		expect_eq "READ chunks sent from the page cache with digest=data" "$n1" "$n0"
		expect_eq "WRITE chunks received into the page cache with digest=data" "$w1" "$w0"
	else
		((n1 - n0 >= 32)) || fail "digest=header: READ chunks sent from the page cache: $n0 then $n1"
		((w1 - w0 >= 32)) || fail "digest=header: WRITE chunks received by pipe: $w0 then $w1"
	fi
done
expect_fail sh -c "echo 'server=$ORFS_ADDR volume=tvol transport=tcp digest=crc' > /sys/class/mxbd/attach"
expect_grep "attach: bad value 'crc' for digest" <(dmesg)

step "-B polls a TCP thread's sockets: requests found while it spins"
# NOPs only: no worker's result can be what the polls find.
start_other /tmp/poll.log -a tcp://127.0.0.1:20087 -s /tmp/tstate3 -e data=/tmp/texp -T 1 -B 20000
"$ORFS_BIN/knet-ping" -t tcp -a 127.0.0.1 -p 20087 -n data -c 50 | tee /tmp/out
expect_grep '^50 NOPs' /tmp/out
kill "$OTHER_PID"
wait "$OTHER_PID" || fail "the polling server did not stop cleanly"
expect_grep " [1-9][0-9]* polls found work" /tmp/poll.log

step "transport=auto takes RDMA where an RDMA device routes to the server"
mount -t orfs -o transport=auto "$ORFS_ADDR:/data" /tmp/mnt
expect_grep "/tmp/mnt orfs .*,transport=rdma" /proc/mounts
cmp /tmp/src /tmp/mnt/cached
umount /tmp/mnt

step "a server on TCP alone (no RDMA address at all): auto takes TCP where no RDMA device routes, IPv4 and IPv6"
truncate -s 32M /tmp/tvol2
start_other /tmp/other.log -a tcp://127.0.0.1:20088 -a "tcp://[::1]:20088" -s /tmp/tstate2 \
	-e data=/tmp/texp,no_root_squash -b tvol2=/tmp/tvol2
expect_grep "listening on tcp://127.0.0.1 port 20088, tcp://::1 port 20088" /tmp/other.log
mount -t orfs -o transport=auto,port=20088 127.0.0.1:/data /tmp/mnt
expect_grep "/tmp/mnt orfs .*,transport=tcp" /proc/mounts
cmp /tmp/src /tmp/mnt/cached
umount /tmp/mnt
mount -t orfs -o transport=tcp,port=20088 "[::1]:/data" /tmp/mnt
expect_grep "/tmp/mnt orfs .*addr=::1,port=20088,.*transport=tcp" /proc/mounts
cmp /tmp/src /tmp/mnt/cached
umount /tmp/mnt
echo "server=127.0.0.1 port=20088 volume=tvol2 transport=auto" > /sys/class/mxbd/attach
expect_eq "transport auto chose" "$(cat /sys/block/mxbd0/mxbd/transport)" tcp
dd if=/tmp/src of=/dev/mxbd0 bs=1M count=8 oflag=direct status=none
cmp <(head -c 8M /tmp/src) <(dd if=/dev/mxbd0 bs=1M count=8 iflag=direct status=none)
echo mxbd0 > /sys/class/mxbd/detach
"$ORFS_BIN/knet-ping" -t auto -a 127.0.0.1 -p 20088 -n data -c 1 | tee /tmp/out
expect_grep '^connected: .* over tcp$' /tmp/out
# An RDMA client finds no RDMA listener there: refused, not hung.
expect_fail mount -t orfs -o transport=rdma,port=20088 "$ORFS_ADDR:/data" /tmp/mnt
# Nothing on TCP there: the hint speaks of TCP, not of RDMA devices.
expect_fail mount -t orfs -o transport=tcp,port=20089 "$ORFS_ADDR:/data" /tmp/mnt
expect_grep "refused: no server listens on TCP at that address and port" <(dmesg)
kill "$OTHER_PID"
wait "$OTHER_PID" || fail "the TCP-only server did not stop cleanly"

step "bad transport options are refused with a clear error"
expect_fail mount -t orfs -o transport=udp "$ORFS_ADDR:/data" /tmp/mnt
expect_fail sh -c "echo 'server=$ORFS_ADDR volume=tvol transport=udp' > /sys/class/mxbd/attach"
expect_grep "attach: bad value 'udp' for transport" <(dmesg)

step "knet over TCP: verified I/O through every kind of descriptor, both completion strategies"
insmod "$ORFS_KMOD/tests/kmod/knet_test.ko"
on_exit "rmmod knet_test"
kt() { KTEST_TRANSPORT=tcp timeout 120 "$ORFS_BIN/knet-test" "$@"; }
for args in "-b 2048 -N 16 -m kvec" "-b 65536 -N 16 -m kvec" "-b 65536 -N 16 -m pages -o 100" \
	    "-b 1048576 -N 4 -m pages -o 3000" "-b 65536 -N 16 -m user -o 100" \
	    "-b 262144 -N 8 -m user-nocache" "-b 65536 -N 8 -m user -V 4"; do
	kt -a "$ORFS_ADDR" -n tvol -w verify $args | tee /tmp/out
	expect_grep '^verified ' /tmp/out
done
kt -a "$ORFS_ADDR" -n tvol -w batch -b 65536 -N 200 -q 48 | tee /tmp/out
expect_grep '^batch wait-any: 200 blocks .* 0 errors, 0 mismatches' /tmp/out
kt -a "$ORFS_ADDR" -n tvol -w batch-cb -b 16384 -N 300 -q 8 -o 512 | tee /tmp/out
expect_grep '^batch callbacks: 300 blocks .* 0 errors, 0 mismatches' /tmp/out
# With digests: data and replies summed as they go out and checked as they come in.
for args in "-b 1048576 -N 4 -m pages -o 3000" "-b 262144 -N 8 -m user -V 4" "-b 2048 -N 16 -m kvec"; do
	KTEST_DIGEST=both kt -a "$ORFS_ADDR" -n tvol -w verify $args | tee /tmp/out
	expect_grep '^verified ' /tmp/out
done

step "a lying TCP server: every lie ends the connection with an error, never a crash or a write past the request"
for lie in r2t-range r2t-tag data-long data-tag bad-type huge reply-tag cut hdgst ddgst; do
	"$ORFS_BIN/tcp-peer" server 20099 $lie > /tmp/liar.out 2>&1 &
	lpid=$!
	wait_until 50 grep -q listening /tmp/liar.out || fail "tcp-peer server $lie did not start"
	n=$(dmesg | grep -c 'knet: .*disconnecting\|knet: connection to .* lost')
	dg=none
	[[ $lie != ?dgst ]] || dg=both
	set +e
	KTEST_DIGEST=$dg KTEST_PORT=20099 kt -a "$ORFS_ADDR" -n tvol -w verify -b 65536 -N 2 -m pages \
		> /tmp/kt.out 2>&1
	rc=$?
	set -e
	wait $lpid || { cat /tmp/liar.out; fail "tcp-peer server $lie"; }
	cat /tmp/kt.out
	[ "$rc" -eq 1 ] || fail "lie $lie: knet-test exited $rc, not 1"
	(($(dmesg | grep -c 'knet: .*disconnecting\|knet: connection to .* lost') > n)) ||
		fail "lie $lie: knet did not say it cut the connection"
	echo "lie $lie: refused"
done
expect_grep "the server asks for data no request offered" <(dmesg)
expect_grep "data for no request, or beyond what it asked" <(dmesg)
expect_grep "PDU of an unknown type from the server" <(dmesg)
expect_grep "message of a size no reply has" <(dmesg)
expect_grep "reply for no request" <(dmesg)
expect_grep "header digest mismatch: resetting the connection" <(dmesg)
expect_grep "data digest mismatch: resetting the connection" <(dmesg)

step "a server that does not grant the digests asked for is refused"
KTEST_DIGEST=both KTEST_PORT=20099 tcp_liar cut /tmp/kt.out \
	kt -a "$ORFS_ADDR" -n tvol -w verify -b 65536 -N 2 -m pages
[ "$rc" -ne 0 ] || fail "a connection without the digests asked for was taken"
expect_grep "the server grants digests 'none' for 'both' asked: refused" <(dmesg)

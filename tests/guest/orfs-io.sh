#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS's data path: large folios and what write-back sends of them;
# mountstats and orfsstat; write stability (COMMIT, fsync, syncfs, close,
# writeback=stable); fio with verification through the page cache,
# O_DIRECT with libaio, vectored (preadv, pwritev) and io_uring (requests
# kept in flight); nconnect=2
# spread over the server's progress threads, across a restart.
# lanes: check=6.12/tcp all=*
# timeout: 420
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

step "large folios ($lf here): in the page cache of what is read and written; write-back sends only the pages written, and all of them"
fc="$ORFS_BIN/folio-count"
dd if=/dev/urandom of=$exp/lf bs=1M count=4 status=none
mnt
expect_grep "addr=$ORFS_ADDR,.*,largefolio=$lf," /proc/mounts
echo 3 > /proc/sys/vm/drop_caches
cat /tmp/mnt/lf > /dev/null
"$fc" /tmp/mnt/lf | tee /tmp/out
read -r _ npages _ nlarge < /tmp/out
expect_eq "pages of the file" "$npages" 1024
if [ $lf = on ]; then
	((nlarge >= 1000)) || fail "read ahead: only $nlarge of 1024 pages in large folios"
else
	expect_eq "pages in large folios" "$nlarge" 0
fi
# Written through ORFS, 1 MiB a write: large folios too, and the server has it.
dd if=$exp/lf of=/tmp/mnt/lfw bs=1M status=none
"$fc" /tmp/mnt/lfw | tee /tmp/out
read -r _ npages _ nlarge < /tmp/out
if [ $lf = on ]; then
	((nlarge >= 1000)) || fail "written: only $nlarge of 1024 pages in large folios"
else
	expect_eq "pages in large folios" "$nlarge" 0
fi
sync
cmp $exp/lf $exp/lfw
# An unaligned write into a file not in the cache: the folios it lands in
# are read where the write does not cover them, and only there.
echo 3 > /proc/sys/vm/drop_caches
cp $exp/lf /tmp/lf.ref
dd if=/dev/urandom of=/tmp/lf.patch bs=1000 count=700 status=none
dd if=/tmp/lf.patch of=/tmp/lf.ref bs=700000 seek=262244 oflag=seek_bytes conv=notrunc status=none
dd if=/tmp/lf.patch of=/tmp/mnt/lf bs=700000 seek=262244 oflag=seek_bytes conv=notrunc status=none
cmp /tmp/mnt/lf /tmp/lf.ref
sync
cmp $exp/lf /tmp/lf.ref
# Another writer changes the file on the server while this client holds it
# in its cache, open: the client's write of page 128 must not send back
# the rest of its folio (page 129 with it), stale, over the other's write.
page() { dd if=/dev/zero bs=4096 count=1 status=none | tr '\0' "$1"; }
dd if=/dev/zero bs=1M count=1 status=none | tr '\0' A > $exp/clob
cp $exp/clob /tmp/clob.ref
page C | dd of=/tmp/clob.ref bs=4096 seek=128 conv=notrunc status=none
page B | dd of=/tmp/clob.ref bs=4096 seek=129 conv=notrunc status=none
exec 3<> /tmp/mnt/clob
cat /tmp/mnt/clob > /dev/null
"$fc" /tmp/mnt/clob 128 | tee /tmp/out
[ $lf = off ] || expect_grep '^together 128 yes$' /tmp/out
page B | dd of=$exp/clob bs=4096 seek=129 conv=notrunc status=none
# Through the descriptor held: a new open would see the change and drop the cache.
page C | dd bs=4096 seek=128 iflag=fullblock conv=notrunc status=none >&3
exec 3>&-
cmp $exp/clob /tmp/clob.ref
# A write() dirties page 130 of a large folio, then a store through a
# shared mapping dirties page 128 of the same folio: write-back sends both.
# (The mapping is made first: mmap() calls fstat(), which writes back.)
dd if=/dev/zero bs=1M count=1 status=none | tr '\0' A > $exp/mix
echo 3 > /proc/sys/vm/drop_caches
cat /tmp/mnt/mix > /dev/null
"$fc" /tmp/mnt/mix 128 > /tmp/out
"$fc" /tmp/mnt/mix 129 >> /tmp/out
cat /tmp/out
[ $lf = off ] || expect_eq "pages 128 to 130 in one folio" "$(grep -c 'yes$' /tmp/out)" 2
python3 - /tmp/mnt/mix <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 4096, offset=128 * 4096)
os.pwrite(fd, b'W' * 100, 130 * 4096)
m[0:200] = b'M' * 200
m.flush()
m.close()
os.close(fd)
PY
expect_eq "the mapped store, on the server" \
	"$(dd if=$exp/mix bs=4096 skip=128 count=1 status=none | head -c 200 | tr -d M | wc -c)" 0
expect_eq "the write, on the server" \
	"$(dd if=$exp/mix bs=4096 skip=130 count=1 status=none | head -c 100 | tr -d W | wc -c)" 0
rm /tmp/mnt/lf /tmp/mnt/lfw /tmp/mnt/clob /tmp/mnt/mix /tmp/lf.ref /tmp/lf.patch /tmp/clob.ref
umnt
if [ $lf = on ]; then
	mnt -o largefolio=off
	expect_grep "addr=$ORFS_ADDR,.*,largefolio=off," /proc/mounts
	dd if=/dev/urandom of=/tmp/mnt/lf bs=1M count=1 status=none
	"$fc" /tmp/mnt/lf | tee /tmp/out
	expect_grep '^pages 256 large 0$' /tmp/out
	rm /tmp/mnt/lf
	umnt
else
	expect_fail mnt -o largefolio=on
	expect_grep 'largefolio=on: this kernel has no folio size bound' <(dmesg)
fi

step "statistics: mountstats and orfsstat count each operation's calls, errors and data"
mnt -o nconnect=2
grep -A 40 ' /tmp/mnt with fstype orfs' /proc/self/mountstats | tee /tmp/out
expect_grep "with fstype orfs statvers=1\$" /tmp/out
expect_grep "^	server $ORFS_ADDR port [0-9]+ export data\$" /tmp/out
expect_grep '^	connections 2 reconnects 0 resent 0 ended_here 0$' /tmp/out
expect_eq "SESSION calls, one a connection" "$(ms SESSION 2)" 2
expect_eq "GETROOT calls" "$(ms GETROOT 2)" 1
mkdir /tmp/mnt/st
c0=$(ms CREATE 2) w0=$(ms WRITE 7) r0=$(ms READ 7) f0=$(ms_sum 4)
for i in 1 2 3 4 5; do : > /tmp/mnt/st/f$i; done
expect_eq "CREATE calls for five new files" "$(($(ms CREATE 2) - c0))" 5
l0=$(ms LOOKUP 3)
expect_fail stat /tmp/mnt/st/absent
expect_eq "LOOKUP errors for a name that is not there" "$(($(ms LOOKUP 3) - l0))" 1
head -c 4M /dev/urandom > /tmp/st.data
dd if=/tmp/st.data of=/tmp/mnt/st/big bs=1M oflag=direct status=none
expect_eq "WRITE data of a 4 MiB O_DIRECT write" "$(($(ms WRITE 7) - w0))" 4194304
dd if=/tmp/mnt/st/big of=/dev/null bs=1M iflag=direct status=none
expect_eq "READ data of a 4 MiB O_DIRECT read" "$(($(ms READ 7) - r0))" 4194304
expect_eq "failures with the server up" "$(($(ms_sum 4) - f0))" 0
[ "$(ms WRITE 8)" -gt 0 ] || fail "WRITE took no time"
# The connections' calls (one at a time here: all on the first) are the
# operations' calls but the SESSIONs.
awk '$1 == "device" { on = $5 == "/tmp/mnt" && $8 == "orfs" }
	on && $1 == "conn" { print $4 }' /proc/self/mountstats > /tmp/st.conn
expect_eq "connection lines" "$(wc -l < /tmp/st.conn)" 2
expect_eq "calls by connection, summed" "$(awk '{ s += $1 } END { print s }' /tmp/st.conn)" \
	"$(($(ms_sum 2) - $(ms SESSION 2)))"
"$ORFS_PROJ/tools/orfsstat" /tmp/mnt | tee /tmp/out
expect_grep "^/tmp/mnt: $ORFS_ADDR:/data, 2 connections, " /tmp/out
expect_grep "^  CREATE +$(ms CREATE 2) +0 +0 +[0-9.]+ +0.00$" /tmp/out
expect_grep "^  WRITE +$(ms WRITE 2) +0 +0 +[0-9.]+ +4.19$" /tmp/out
# Over an interval: what the interval did, as rates (three creates in 5 s).
"$ORFS_PROJ/tools/orfsstat" -i 5 -c 1 /tmp/mnt > /tmp/st.int &
st_pid=$!
# Its first reading is taken once it sleeps through the interval (a fixed
# pause was too short on the debug kernel).
wait_until 100 pgrep -P $st_pid -x sleep > /dev/null || fail "orfsstat -i did not start its interval"
for i in 6 7 8; do : > /tmp/mnt/st/f$i; done
wait $st_pid || fail "orfsstat -i"
cat /tmp/st.int
expect_grep "^  CREATE +0.6 +0 +0 " /tmp/st.int
expect_fail "$ORFS_PROJ/tools/orfsstat" /tmp
rm -r /tmp/mnt/st /tmp/st.data
umnt
mnt
expect_eq "CREATE calls of a new mount" "$(ms CREATE 2)" 0
umnt

step "write stability: write-back is held until a COMMIT; fsync, close and syncfs commit; writeback=stable"
# wb FIELD: the mount's write stability count FIELD (mountstats)
wb() { mount_stat /tmp/mnt writeback "$1"; }
# A program: 4 MiB written back (sync_file_range) and held; then HOW
# (fsync, syncfs, close) and the held bytes before and after it.
cat > /tmp/ws.py <<'PY'
import ctypes, os, sys
def held():
    on = False
    for line in open("/proc/self/mountstats"):
        f = line.split()
        if f and f[0] == "device":
            on = f[4] == "/tmp/mnt" and f[7] == "orfs"
        elif on and f and f[0] == "writeback":
            return int(f[f.index("held") + 1])
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"w" * (4 << 20))
if libc.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0), ctypes.c_uint(7)):
    sys.exit("sync_file_range: " + os.strerror(ctypes.get_errno()))
before = held()
if sys.argv[2] == "fsync":
    os.fsync(fd)
elif sys.argv[2] == "syncfs":
    if libc.syncfs(fd):
        sys.exit("syncfs: " + os.strerror(ctypes.get_errno()))
os.close(fd)
print(before, held())
PY
expect_fail mnt -o writeback=maybe
mnt
for how in fsync syncfs close; do
	c0=$(wb commits) u0=$(wb unstable)
	read -r before after < <(python3 /tmp/ws.py /tmp/mnt/ws-$how $how) || fail "$how: the program failed"
	echo "$how: held $before bytes before, $after after"
	[ "$before" -ge 4194304 ] || fail "$how: 4 MiB written back is not held ($before)"
	expect_eq "held after $how" "$after" 0
	[ $(($(wb commits) - c0)) -ge 1 ] || fail "$how sent no COMMIT"
	[ $(($(wb unstable) - u0)) -ge 4194304 ] || fail "$how: the write-back was not unstable"
	cmp <(head -c 4M /dev/zero | tr '\0' w) $exp/ws-$how || fail "$how: the server's copy differs"
done
expect_eq "resent with the server up" "$(wb resent)" 0
expect_eq "lost with the server up" "$(wb lost)" 0
# writeback=stable: WRITEs synced one by one, nothing held, no COMMIT needed.
mount -o remount,writeback=stable /tmp/mnt
expect_grep ",writeback=stable" <(grep ' /tmp/mnt ' /proc/mounts)
u0=$(wb unstable)
read -r before after < <(python3 /tmp/ws.py /tmp/mnt/ws-stable close) || fail "stable: the program failed"
expect_eq "held with writeback=stable" "$before" 0
expect_eq "unstable bytes with writeback=stable" "$(($(wb unstable) - u0))" 0
"$ORFS_PROJ/tools/orfsstat" /tmp/mnt | tee /tmp/out
expect_grep "^  write-back: [0-9.]+ MB unstable, [0-9]+ commits, 0.00 MB resent, 0 lost, 0.00 MB held$" /tmp/out
rm /tmp/mnt/ws-*
umnt

step "fio with crc32c verification: through the page cache, and O_DIRECT with libaio"
mnt
fio --name=buffered --directory=/tmp/mnt --size=32M --rw=randwrite --bsrange=1k-256k \
	--ioengine=psync --verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
	--output=/tmp/fio1.out || { cat /tmp/fio1.out; fail "fio buffered"; }
expect_grep 'err= 0' /tmp/fio1.out
fio --name=direct --directory=/tmp/mnt --size=32M --rw=randwrite --bsrange=4k-1m --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fio2.out || { cat /tmp/fio2.out; fail "fio direct"; }
expect_grep 'err= 0' /tmp/fio2.out
# Small asynchronous O_DIRECT pieces of odd sizes in buffers at odd
# addresses (some across a page boundary): written inline, and read back
# inline into the program's pinned pages, so nothing moves by RDMA.
b0=$(ep_sum bytes_rdma)
fio --name=small --directory=/tmp/mnt --size=2M --rw=write --bsrange=700-4096 --bs_unaligned=1 \
	--iomem_align=100 --direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --verify_state_save=0 --output=/tmp/fio4.out || { cat /tmp/fio4.out; fail "fio small"; }
expect_grep 'err= 0' /tmp/fio4.out
expect_eq "bytes moved by RDMA for pieces of 4 KiB at most" "$(($(ep_sum bytes_rdma) - b0))" 0
# Vectored O_DIRECT: memory that knet takes as the user's iovec.
python3 "$(dirname "$0")/common/vec-direct.py" /tmp/mnt/vec "$exp/vec"
# Asynchronous O_DIRECT reads end straight from their completion, over
# RDMA in its softirq; writes take the inode's i_lock, never taken in
# softirq: over RDMA they end on a work item, over TCP in io_work's task.
for rw in randwrite randread; do
	e0=$(mount_stat /tmp/mnt connections ended_here)
	fio --name=ends --directory=/tmp/mnt --filename=ends --size=1M --rw=$rw --bs=4k \
		--number_ios=100 --direct=1 --ioengine=libaio --iodepth=4 --output=/tmp/fio6.out ||
		{ cat /tmp/fio6.out; fail "fio $rw"; }
	expect_grep 'err= 0' /tmp/fio6.out
	n=$(($(mount_stat /tmp/mnt connections ended_here) - e0))
	echo "$rw: $n of 100 ended in their completion's context"
	if [ $rw = randread ] || [ "$ORFS_TRANSPORT" = tcp ]; then
		((n >= 100)) || fail "$rw: $n of 100 ended in their completion's context, want all"
	else
		expect_eq "$rw over RDMA: ended in their completion's (softirq) context" "$n" 0
	fi
done
grep -E 'WRITE:|READ:' /tmp/fio1.out /tmp/fio2.out /tmp/fio4.out
rm -f /tmp/mnt/buffered.* /tmp/mnt/direct.* /tmp/mnt/small.* /tmp/mnt/ends /tmp/mnt/vec
umnt

step "asynchronous O_DIRECT through io_uring: verified, as many requests in flight as fio keeps"
# A fresh mount's endpoint starts with no peak; at depth 1 it stays 1 (the
# metadata calls around the job wait for their answers too), at depth 8
# every I/O is its own request, sent without waiting for the others. One
# connection, so that all of them are on it.
for depth in 1 8; do
	mnt -o nconnect=1
	expect_eq "requests in flight at most, a new mount" "$(ep_max in_flight_peak)" 1
	fio --name=ring --directory=/tmp/mnt --size=8M --rw=randwrite --bsrange=4k-64k --direct=1 \
		--ioengine=io_uring --iodepth=$depth --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--verify_state_save=0 --output=/tmp/fio5.out || { cat /tmp/fio5.out; fail "fio io_uring"; }
	expect_grep 'err= 0' /tmp/fio5.out
	peak=$(ep_max in_flight_peak)
	echo "io_uring depth $depth: at most $peak requests in flight"
	if [ $depth = 1 ]; then
		expect_eq "requests in flight at most, depth 1" "$peak" 1
	elif [ "$peak" -lt 6 ]; then
		fail "depth $depth kept at most $peak requests in flight"
	fi
	expect_eq "requests in flight after the job" "$(ep_sum in_flight)" 0
	rm -f /tmp/mnt/ring.*
	umnt
done

step "nconnect=2: a connection on each progress thread, both carry requests, both come back after a restart"
# Two for RDMA, and in a TCP run two more for TCP (tests/guest/lib.sh).
if [ "$ORFS_TRANSPORT" = tcp ]; then
	expect_grep ' 4 progress threads, ' "$ORFS_SERVER_LOG"
else
	expect_grep ' 2 progress threads, ' "$ORFS_SERVER_LOG"
fi
n0=$(log_lines)
mnt -o nconnect=2,timeo=20
expect_grep "addr=$ORFS_ADDR,.*,nconnect=2," /proc/mounts
expect_eq "knet endpoints of the mount" "$(ep_count)" 2
expect_eq "progress threads of the mount's connections" \
	"$(conn_threads export data "$n0" | wc -w)" 2
fio --name=nc --directory=/tmp/mnt --size=24M --rw=randwrite --bsrange=4k-1m --direct=1 \
	--ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 --do_verify=1 \
	--verify_state_save=0 --output=/tmp/fio6.out || { cat /tmp/fio6.out; fail "fio nconnect"; }
expect_grep 'err= 0' /tmp/fio6.out
# Each endpoint took about half of the requests.
ep_each requests > /tmp/nc.req
cat /tmp/nc.req
total=$(awk '{ s += $1 } END { print s }' /tmp/nc.req)
least=$(sort -n /tmp/nc.req | head -n 1)
[ "$least" -ge $((total / 3)) ] || fail "requests split $(tr '\n' ' ' < /tmp/nc.req)"
fio_restarts ncre 32 1
ep_stats | grep '^group_reconnects' | tee /tmp/out
expect_eq "connections that reconnected" "$(grep -c '^group_reconnects [1-9]' /tmp/out)" 2
rm -f /tmp/mnt/nc.* /tmp/mnt/ncre.*
umnt
echo ok

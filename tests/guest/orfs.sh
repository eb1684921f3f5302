#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS against the real server over rxe: mount options and remounts, the POSIX checks of
# orfs-fstest (first on ext4, to check the checks, then on ORFS, as root
# and as a user), close-to-open consistency with changes made on the
# server, fio with verification through the page cache and O_DIRECT
# (libaio, and io_uring keeping its queue depth in flight), a
# server restarted during a verified run on a hard mount, a caught signal
# that neither ends a hard mount's call nor hurries its tries, a soft mount
# that gives EIO, umount -f with a dead server, and a lying server (bad
# framing, and well-framed replies no file system could give).
# timeout: 540
. "$(dirname "$0")/lib.sh"
ft="$ORFS_BIN/orfs-fstest"
exp=/tmp/e4/exp
state=/tmp/orfs-state
load_suite
# The export and the reference are directories of one ext4 file system
# on a RAM disk (tmpfs of 6.1 has neither user xattrs nor O_DIRECT).
modprobe brd rd_nr=2 rd_size=$((512 * 1024))
on_exit "rmmod brd"
mkfs.ext4 -q -F /dev/ram0
mkdir -p /tmp/e4 /tmp/mnt
mount /dev/ram0 /tmp/e4
on_exit "umount /tmp/e4"
mkdir /tmp/e4/exp /tmp/e4/ref
start_server -s $state -e data=$exp,no_root_squash
mnt() { mount -t orfs "$@" "$ORFS_ADDR:/data" /tmp/mnt; }
# Large folios by default where the kernel bounds a file's folio size
# (mapping_set_folio_order_range(): 6.12 has it, 6.1 does not).
kv=$(uname -r)
kmaj=${kv%%.*} kmin=${kv#*.} kmin=${kmin%%.*}
if ((kmaj > 6 || (kmaj == 6 && kmin >= 12))); then k612=1 lf=on; else k612=0 lf=off; fi
umnt() { umount /tmp/mnt; }
restart_server() {
	kill_server
	start_server -s $state -e data=$exp,no_root_squash
}
# ms OP FIELD: a counter of the mount at /tmp/mnt (FIELD 2 calls, 3 errors,
# 4 failures, 7 data, 8 microseconds); ms_sum FIELD: of all its operations
ms() {
	awk -v op="$1" -v f="$2" '$1 == "device" { on = $5 == "/tmp/mnt" && $8 == "orfs" }
		on && $1 == op && NF == 8 { print $f }' /proc/self/mountstats
}
ms_sum() {
	awk -v f="$1" '$1 == "device" { on = $5 == "/tmp/mnt" && $8 == "orfs" }
		on && NF == 8 && $2 ~ /^[0-9]+$/ { s += $f } END { print s + 0 }' /proc/self/mountstats
}
# fio_restarts NAME MB RESTARTS: a verified fio write of MB MiB in
# /tmp/mnt during which the server is killed and restarted RESTARTS
# times, 3 s in and then every 2 s; fio must never see it. The writes are
# held to 4 MiB/s, so that they are still going at every restart however
# fast the guest runs (a run that ended first tested no restart).
fio_restarts() {
	local pid i
	fio --name="$1" --directory=/tmp/mnt --size="$2M" --rw=write --bs=64k --ioengine=psync \
		--rate=,4m --fsync=16 --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--verify_state_save=0 --output="/tmp/$1.out" &
	pid=$!
	sleep 3
	for ((i = 0; i < $3; i++)); do
		((i == 0)) || sleep 2
		kill -0 $pid 2>/dev/null || fail "fio $1 ended before restart $((i + 1)) of $3"
		restart_server
	done
	wait $pid || { cat "/tmp/$1.out"; fail "fio $1 across server restarts"; }
	expect_grep 'err= 0' "/tmp/$1.out"
}

step "mount: the options in effect are in /proc/mounts"
mnt -o acregmax=10,soft,timeo=50,retrans=2,regcache=off,rsize=262144
on_exit "umount -f /tmp/mnt 2>/dev/null || true"
grep ' /tmp/mnt ' /proc/mounts | tee /tmp/out
# Without nconnect=, a connection per CPU, four at most.
ncpu=$(nproc)
auto=$((ncpu < 4 ? ncpu : 4))
# The server's 1 MiB, or what the RDMA device maps in one registration.
expect_grep "^$ORFS_ADDR:/data /tmp/mnt orfs rw,.*addr=$ORFS_ADDR,port=20077,rsize=262144,wsize=$(dev_max_io),acregmin=3,acregmax=10,acdirmin=30,acdirmax=60,soft,timeo=50,retrans=2,regcache=off,nconnect=$auto,largefolio=$lf,locks=remote,writeback=unstable " /tmp/out
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

step "a seeded random sequence of operations gives the same files on ORFS, on its server and on ext4"
mkdir /tmp/mnt/fsx1 /tmp/e4/ref/fsx1 /tmp/mnt/fsx2 /tmp/e4/ref/fsx2
timeout 200 "$ORFS_BIN/orfs-fsx" /tmp/mnt/fsx1 /tmp/e4/ref/fsx1 1 400 $exp/fsx1 | tee /tmp/out
expect_grep '^ok 400 steps$' /tmp/out
timeout 200 "$ORFS_BIN/orfs-fsx" /tmp/mnt/fsx2 /tmp/e4/ref/fsx2 20261121 400 $exp/fsx2 | tee /tmp/out
expect_grep '^ok 400 steps$' /tmp/out
rm -rf /tmp/mnt/fsx1 /tmp/mnt/fsx2

step "what the client writes is on the server; a change on the server shows at the next open"
echo one > /tmp/mnt/c2o
expect_eq "on the server" "$(cat $exp/c2o)" one
expect_eq "through ORFS" "$(cat /tmp/mnt/c2o)" one
echo "two, longer" > $exp/c2o
expect_eq "after the server's change" "$(cat /tmp/mnt/c2o)" "two, longer"
# Pages a process keeps mapped are no exception: while one maps two pages
# of a file and has stored into the first, the server's copy of the
# second changes; a new open must read the server's second page through
# read() and the mapping, and keep the store (written back first). With
# large folios both pages are in one folio, and the store must send only
# the page it went to, not the stale second one over the server's.
dd if=/dev/zero bs=8192 count=1 status=none | tr '\0' A > $exp/mapped
python3 - /tmp/mnt/mapped $exp/mapped "$ORFS_BIN/folio-count" $lf <<'PY'
import mmap, os, subprocess, sys, time
orfs, server, fc, lf = sys.argv[1:]
fd = os.open(orfs, os.O_RDWR)
m = mmap.mmap(fd, 8192)
assert m[0:1] + m[4096:4097] == b'AA', 'the file as first read'
together = subprocess.run([fc, orfs, '0'], check=True, capture_output=True, text=True).stdout
assert ('together 0 yes' in together) == (lf == 'on'), 'folios: %r' % together
m[0:10] = b'M' * 10
with open(server, 'r+b') as f:
    f.seek(4096)
    f.write(b'S' * 4096)
time.sleep(0.05)    # an open within the tick of the last answer asks nothing
fd2 = os.open(orfs, os.O_RDONLY)
got = os.pread(fd2, 8192, 0)
assert got[:11] == b'M' * 10 + b'A', 'read() lost the mapped store: %r' % got[:11]
assert got[4096:] == b'S' * 4096, 'read() of the changed page: %r' % got[4096:4106]
assert m[4096:4106] == b'S' * 10, 'the mapping of the changed page: %r' % m[4096:4106]
assert m[0:11] == b'M' * 10 + b'A', 'the mapping lost its store: %r' % m[0:11]
m.close()
os.close(fd2)
os.close(fd)
with open(server, 'rb') as f:
    assert f.read(11) == b'M' * 10 + b'A', 'the store is not on the server'
print('mapped pages: ok')
PY
rm /tmp/mnt/mapped
# Two writers in one page: while this client holds a file cached, another
# changes bytes on the server in the page this client then writes, but
# not the bytes it writes. Write-back sends only the bytes written, so the
# server keeps both clients' bytes: a write inside one page, one from
# mid-page across into the next (one request that starts mid-page), two
# writes apart around the other's bytes in one page and in one large
# folio (each sent alone), and five in one page around them (four runs
# kept apart: the two closest join, not around the other's bytes).
python3 - /tmp/mnt $exp <<'PY'
import os, sys
mnt, exp = sys.argv[1:]
cases = (('shared1', 4096, (2000,), ((0, b'C' * 100),)),
         ('shared2', 12288, (100, 6000), ((3000, b'D' * 2000),)),
         ('shared3', 4096, (2000,), ((0, b'E' * 100), (3000, b'E' * 100))),
         ('shared4', 65536, (20000,), ((100, b'F' * 100), (40000, b'F' * 5000))),
         ('shared5', 4096, (2000,), tuple((at, b'G' * 100) for at in (0, 500, 1000, 1500, 2500))))
fds = []
for name, size, theirs, ours in cases:
    with open(os.path.join(exp, name), 'wb') as f:
        f.write(b'A' * size)
    fd = os.open(os.path.join(mnt, name), os.O_RDWR)
    assert os.pread(fd, size, 0) == b'A' * size, 'the file as first read'
    fds.append(fd)
for (name, size, theirs, ours), fd in zip(cases, fds):
    with open(os.path.join(exp, name), 'r+b') as f:
        for off in theirs:
            f.seek(off)
            f.write(b'B' * 100)
    for at, data in ours:
        os.pwrite(fd, data, at)
    os.fsync(fd)
    os.close(fd)
    want = bytearray(b'A' * size)
    for off in theirs:
        want[off:off + 100] = b'B' * 100
    for at, data in ours:
        want[at:at + len(data)] = data
    with open(os.path.join(exp, name), 'rb') as f:
        got = f.read()
    bad = [i for i in range(size) if got[i] != want[i]]
    assert not bad, '%s: the server has %d wrong bytes from %d: %r' % (
        name, len(bad), bad[0], got[bad[0]:bad[0] + 8])
print('two writers in one page: ok')
PY
rm /tmp/mnt/shared1 /tmp/mnt/shared2 /tmp/mnt/shared3 /tmp/mnt/shared4 /tmp/mnt/shared5
# Bytes a mapping stored past the end of a file (not part of it, never
# sent) must not show when another client grows the file, nor go to the
# server: it has zeroes there. Once with the page written back before,
# once with it dirty (a store inside the file too), which write-back
# then sends up to the new end.
for dirty in 0 1; do
	printf end > $exp/eof
	python3 - /tmp/mnt/eof $exp/eof $dirty <<'PY'
import ctypes, mmap, os, sys, time
orfs, server, dirty = sys.argv[1], sys.argv[2], sys.argv[3] == '1'
# Python's mmap will not map past the end of a file: libc's will.
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
fd = os.open(orfs, os.O_RDWR)
addr = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
m = (ctypes.c_char * 4096).from_address(addr)
m[100:110] = b'J' * 10
if dirty:
    m[0:3] = b'END'
else:
    assert libc.msync(addr, 4096, 4) == 0, 'msync'    # MS_SYNC
head = b'END' if dirty else b'end'
os.truncate(server, 8192)
time.sleep(0.05)
fd2 = os.open(orfs, os.O_RDONLY)
got = os.pread(fd2, 8192, 0)
assert got[:3] == head and got[3:] == bytes(8189), 'read(): %r' % got[:120]
assert m[100:110] == bytes(10), 'the mapping: %r' % m[100:110]
assert libc.munmap(addr, 4096) == 0, 'munmap'
os.close(fd2)
os.close(fd)
print('past the end, %s: ok' % ('dirty' if dirty else 'clean'))
PY
	expect_eq "the server's copy (dirty $dirty)" "$(tr -d '\0' < $exp/eof)" "$( ((dirty)) && echo END || echo end)"
	expect_eq "the server's size (dirty $dirty)" "$(stat -c %s $exp/eof)" 8192
	rm /tmp/mnt/eof
done
cp /usr/bin/bash /tmp/mnt/bash && cmp /usr/bin/bash $exp/bash
echo 3 > /proc/sys/vm/drop_caches
/tmp/mnt/bash -c 'echo executed from ORFS' | tee /tmp/out
expect_grep '^executed from ORFS$' /tmp/out
umnt

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
n=$(sed -n 's/.*(\([0-9]*\) file service requests).*/\1/p' "$ORFS_SERVER_LOG")
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

step "negative dentries: a name created on the server appears once the directory's cache expires"
mnt -o actimeo=1
stat /tmp/mnt/late 2>/dev/null && fail "late exists too early"
touch $exp/late
sleep 1.5
stat /tmp/mnt/late > /dev/null || fail "a name created on the server stayed invisible"
umnt

step "an ACL changed on the server reaches the client's permission checks within the attribute timeout"
# acl FILE TAG:PERM:ID...: set FILE's access ACL on the server (the
# kernel's xattr form; the guest has no setfacl). ID -1: no qualifier.
acl() {
	python3 - "$@" <<'PY'
import os, struct, sys
b = struct.pack("<I", 2)
for e in sys.argv[2:]:
    t, p, i = e.split(":")
    b += struct.pack("<HHI", int(t, 0), int(p), int(i) & 0xffffffff)
os.setxattr(sys.argv[1], "system.posix_acl_access", b)
PY
}
as_user() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
echo secret > $exp/aclf
chmod 600 $exp/aclf
mnt -o actimeo=1
as_user test -r /tmp/mnt/aclf && fail "uid 1000 may read a 0600 file of root"
# Granted: the mode's group bits become the mask (r), the ctime moves.
acl $exp/aclf 1:6:-1 2:4:1000 4:0:-1 0x10:4:-1 0x20:0:-1
sleep 1.5
as_user test -r /tmp/mnt/aclf || fail "an ACL entry granted on the server is not seen"
expect_eq "read through a granted ACL entry" "$(as_user cat /tmp/mnt/aclf)" secret
# Moved to another user: mode, owner and mtime stay, only the ctime moves.
acl $exp/aclf 1:6:-1 2:4:1001 4:0:-1 0x10:4:-1 0x20:0:-1
sleep 1.5
as_user test -r /tmp/mnt/aclf && fail "an ACL entry removed on the server is still honoured"
expect_fail as_user cat /tmp/mnt/aclf
rm /tmp/mnt/aclf
umnt

step "two clients: a name one creates is seen by the other at its next walk (noac)"
# /tmp/mnt asks the server at each walk (noac); /tmp/mnt2 is a second
# client. Each round: the second client changes the directory, the first
# finds a name absent (with the directory's attributes just fetched), the
# second creates it, and the first must see it. The directory's ctime
# moves once a clock tick (4 ms); the server adds a count of its changes
# so that a create within the tick moves the attribute too (the unit test
# checks the count: here the three round trips take longer than a tick,
# which the count of same ctimes printed shows).
mnt -o noac
mkdir -p /tmp/mnt2 /tmp/mnt/nd
mount -t orfs "$ORFS_ADDR:/data" /tmp/mnt2
EXP=$exp python3 - <<'PY' || fail "a name created by another client stayed absent"
import os
exp = os.environ["EXP"] + "/nd"
stale = same = 0
for i in range(100):
    os.close(os.open(f"/tmp/mnt2/nd/a{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    if os.path.lexists(f"/tmp/mnt/nd/x{i}"):
        raise SystemExit(f"x{i} exists before its create")
    os.close(os.open(f"/tmp/mnt2/nd/x{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    if not os.path.lexists(f"/tmp/mnt/nd/x{i}"):
        stale += 1
for i in range(100):
    same += os.stat(f"{exp}/a{i}").st_ctime_ns == os.stat(f"{exp}/x{i}").st_ctime_ns
print(f"{stale} of 100 names stayed absent; {same} created in the ctime tick of the one before")
raise SystemExit(stale > 0)
PY
umount /tmp/mnt2
rm -r /tmp/mnt/nd
umnt

step "cached names, present and absent, are answered without asking the server"
mnt -o actimeo=60
touch /tmp/mnt/cached
lookups() {
	python3 - <<'PY'
import os
for _ in range(500):
    os.stat('/tmp/mnt/cached')
    if os.path.lexists('/tmp/mnt/absent'):
        raise SystemExit('absent appeared')
PY
}
# The first round fetches what the create left stale (the directory's attributes).
lookups || fail "cached lookups"
asked=$(($(ep_sum requests) - $(ep_sum keepalives)))
lookups || fail "cached lookups"
expect_eq "requests for 1000 cached lookups" "$(($(ep_sum requests) - $(ep_sum keepalives) - asked))" 0
rm /tmp/mnt/cached
umnt

step "a name is trusted for its directory's attribute timeout, not its file's"
# Files' attributes for 1 s, directories' (and their names) for 30: an
# unlink 1.5 s after the create sends the UNLINK alone.
mnt -o acregmin=1,acregmax=1
touch /tmp/mnt/aged
sleep 1.5
l0=$(ms LOOKUP 2) u0=$(ms UNLINK 2)
rm /tmp/mnt/aged
expect_eq "LOOKUPs to unlink a name older than its file's timeout" "$(($(ms LOOKUP 2) - l0))" 0
expect_eq "UNLINKs" "$(($(ms UNLINK 2) - u0))" 1
umnt
# With the directories' timeout at 1 s, a name removed on the server is
# gone from the client after it.
mnt -o actimeo=1
touch /tmp/mnt/gone
stat /tmp/mnt/gone > /dev/null
rm $exp/gone
sleep 1.5
l0=$(ms LOOKUP 2)
expect_fail stat /tmp/mnt/gone
[ "$(($(ms LOOKUP 2) - l0))" -ge 1 ] || fail "the expired name was not looked up"
umnt

step "statistics: mountstats and orfsstat count each operation's calls, errors and data"
mnt -o nconnect=2
grep -A 40 ' /tmp/mnt with fstype orfs' /proc/self/mountstats | tee /tmp/out
expect_grep "with fstype orfs statvers=1\$" /tmp/out
expect_grep "^	server $ORFS_ADDR port [0-9]+ export data\$" /tmp/out
expect_grep '^	connections 2$' /tmp/out
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
wb() {
	awk -v f="$1" '$1 == "device" { on = $5 == "/tmp/mnt" && $8 == "orfs" }
		on && $1 == "writeback" { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' \
		/proc/self/mountstats
}
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
grep -E 'WRITE:|READ:' /tmp/fio1.out /tmp/fio2.out /tmp/fio4.out
rm -f /tmp/mnt/buffered.* /tmp/mnt/direct.* /tmp/mnt/small.*
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
expect_grep ' 2 progress threads, ' "$ORFS_SERVER_LOG"
n0=$(log_lines)
mnt -o nconnect=2,timeo=20
expect_grep "addr=$ORFS_ADDR,.*,nconnect=2," /proc/mounts
expect_eq "knet endpoints of the mount" "$(ep_count)" 2
expect_eq "progress threads of the mount's connections" "$(conn_threads export data "$n0")" "0 1"
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
ep_stats | grep '^session_reconnects' | tee /tmp/out
expect_eq "sessions that reconnected" "$(grep -c '^session_reconnects [1-9]' /tmp/out)" 2
rm -f /tmp/mnt/nc.* /tmp/mnt/ncre.*
umnt

step "hard mount: the server is killed and restarted during a verified run; fio never sees it"
mnt -o timeo=20
fio_restarts restart 48 2
dmesg | grep -E 'knet: .*(reconnected|not responding)' | tail -n 4
expect_grep 'knet: .*reconnected' <(dmesg)
ep_stats | grep -E '^session_(reconnects|resent)' | tee /tmp/out
expect_grep '^session_reconnects [1-9]' /tmp/out
expect_grep '^session_resent [1-9]' /tmp/out
umnt

step "O_DIRECT from and into shared mappings of files of the same mount, across server restarts"
# The pages of the buffers are not cached: pinning them faults them in
# through read-ahead on the very sessions that carry the O_DIRECT
# requests, while reconnections replace their connections. 6.12 (not
# 6.1) will not pin a shared file mapping for long to write into it: the
# reads into one are pinned for their I/O only (regcache's "uncacheable").
# The writes are O_DSYNC: an unstable O_DIRECT write a restart loses
# fails, by design, with EIO.
rcstats="/sys/kernel/debug/regcache/$ORFS_RDMA_DEV/stats"
u0=$(awk '$1 == "uncacheable" { print $2 }' "$rcstats")
mnt -o timeo=20
dd if=/dev/urandom of=$exp/msrc bs=1M count=2 status=none
dd if=/dev/zero of=$exp/mbuf bs=1M count=2 status=none
python3 - /tmp/mnt /tmp/mmdio.stop > /tmp/mmdio.out 2>&1 <<'PY' &
import mmap, os, sys
d, stop = sys.argv[1], sys.argv[2]
size, chunk = 2 << 20, 256 << 10
ref = open(d + '/msrc', 'rb').read()
rounds = 0
while not os.path.exists(stop) or rounds < 2:
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3')
    sfd = os.open(d + '/msrc', os.O_RDONLY)
    bfd = os.open(d + '/mbuf', os.O_RDWR)
    dfd = os.open(d + '/mdst', os.O_RDWR | os.O_CREAT | os.O_DIRECT | os.O_DSYNC, 0o644)
    src = mmap.mmap(sfd, size, prot=mmap.PROT_READ)
    buf = mmap.mmap(bfd, size)
    sv, bv = memoryview(src), memoryview(buf)
    for off in range(0, size, chunk):
        n = os.pwrite(dfd, sv[off:off + chunk], off)
        assert n == chunk, ('write', off, n)
    for off in range(0, size, chunk):
        n = os.preadv(dfd, [bv[off:off + chunk]], off)
        assert n == chunk, ('read', off, n)
    assert bytes(bv) == ref, 'the mapping read into differs'
    buf.flush()
    sv.release()
    bv.release()
    src.close()
    buf.close()
    for fd in (sfd, bfd, dfd):
        os.close(fd)
    rounds += 1
print('rounds', rounds)
PY
pid=$!
sleep 3
restart_server
sleep 2
kill -0 $pid 2>/dev/null || { cat /tmp/mmdio.out; fail "the mapped O_DIRECT copy ended before the second restart"; }
restart_server
sleep 2
touch /tmp/mmdio.stop
wait $pid || { cat /tmp/mmdio.out; fail "O_DIRECT through mappings of the mount"; }
cat /tmp/mmdio.out
expect_grep '^rounds ([2-9]|[1-9][0-9]+)$' /tmp/mmdio.out
cmp $exp/msrc $exp/mdst
cmp $exp/msrc $exp/mbuf
u1=$(awk '$1 == "uncacheable" { print $2 }' "$rcstats")
echo "reads pinned for their I/O only: $((u1 - u0))"
# 6.12 refuses a long-term write pin of such a mapping; 6.1 makes it.
if ((k612)); then
	[ $((u1 - u0)) -ge 16 ] || fail "only $((u1 - u0)) reads into a mapped file were pinned uncached"
fi
rm -f /tmp/mnt/msrc /tmp/mnt/mbuf /tmp/mnt/mdst /tmp/mmdio.stop
umnt

step "hard mount, dead server: a caught signal neither ends the call nor hurries its tries"
mnt -o timeo=20
kill_server
# A name never looked up: the stat must ask the server. The program catches
# SIGUSR1, so the signal stays pending, not fatal, while the call waits.
python3 - > /tmp/sig.out 2>&1 <<'PY' &
import errno, os, signal
signal.signal(signal.SIGUSR1, lambda s, f: print("caught", flush=True))
print("waiting", flush=True)
try:
    os.stat("/tmp/mnt/sig-new")
    print("found")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
sig_pid=$!
wait_until 100 grep -q waiting /tmp/sig.out || fail "the program did not start"
sleep 1
kill -USR1 $sig_pid
sleep 4
ended $sig_pid && { cat /tmp/sig.out; fail "a caught signal ended a call on a hard mount"; }
start_server -s $state -e data=$exp,no_root_squash
wait_until 200 ended $sig_pid || fail "the call outlived the server's return"
cat /tmp/sig.out
expect_grep '^ENOENT$' /tmp/sig.out
expect_grep '^caught$' /tmp/sig.out
# Tries back off (0.1 s doubling to 4 s): a handful in these 5 s; a sleep
# that the pending signal cut short made them hundreds (656 measured).
fails=$(ep_max session_connect_failures)
echo "$fails failed reconnection attempts in about 5 s"
[ "$fails" -ge 1 ] || fail "no reconnection attempt failed while the server was dead"
[ "$fails" -le 20 ] || fail "$fails reconnection attempts in about 5 s: the backoff did not hold"
umnt

step "a server that hangs (SIGSTOP): the request times out, the hard mount reconnects once it answers"
mnt -o timeo=20
echo before > /tmp/mnt/hang
kill -STOP "$ORFS_SERVER_PID"
dd if=/tmp/mnt/hang of=/tmp/hang.out bs=4k iflag=direct status=none &
dd_pid=$!
sleep 5
kill -0 $dd_pid || fail "the read did not wait for the hung server"
kill -CONT "$ORFS_SERVER_PID"
wait $dd_pid || fail "the read failed after the server came back"
expect_eq "read after the hang" "$(cat /tmp/hang.out)" before
expect_grep 'knet: (no answer within 2000 ms|request [0-9]+ timed out)' <(dmesg)
umnt

step "an idle mount notices a server that stopped answering (keep-alive) and recovers"
mnt -o timeo=20
ls /tmp/mnt > /dev/null
no_answers() { dmesg | grep -c 'knet: no answer within 2000 ms' || true; }
n0=$(no_answers)
kill -STOP "$ORFS_SERVER_PID"
# The server is resumed before any verdict, so that a failure leaves it running.
noticed=0
wait_until 80 eval '[ "$(no_answers)" -gt "$n0" ]' && noticed=1
kill -CONT "$ORFS_SERVER_PID"
[ $noticed = 1 ] || fail "an idle mount did not notice the hung server"
ls /tmp/mnt > /dev/null || fail "the mount did not recover"
ep_stats | grep '^keepalives'
umnt

step "soft mount: a dead server gives EIO after timeo x retrans"
mnt -o soft,timeo=10,retrans=2
echo data > /tmp/mnt/soft
f0=$(ms_sum 4) e0=$(ms_sum 3)
kill_server
t0=$(date +%s)
set +e
stat /tmp/mnt/soft-new > /tmp/out 2>&1; rc=$?
set -e
cat /tmp/out
[ "$rc" -ne 0 ] || fail "stat worked with the server dead"
expect_grep 'Input/output error' /tmp/out
# The call that gave up is counted as a failure, not as the server's error.
[ "$(ms_sum 4)" -gt "$f0" ] || fail "no failure counted"
expect_eq "server errors counted with the server dead" "$(ms_sum 3)" "$e0"
echo "gave up after $(($(date +%s) - t0)) s"
umount -f /tmp/mnt || umount -l /tmp/mnt

step "hard mount, dead server: umount -f ends the waiting calls"
start_server -s $state -e data=$exp,no_root_squash
mnt
kill_server
stat /tmp/mnt/hard-new > /tmp/out 2>&1 &
st_pid=$!
sleep 2
ended $st_pid && fail "a hard mount gave up"
umount -f /tmp/mnt || umount -l /tmp/mnt
wait_until 200 ended $st_pid || fail "a call outlived umount -f"
grep -q ' /tmp/mnt ' /proc/mounts && fail "still mounted"

step "a server whose answers are random, well framed: calls fail or succeed, nothing crashes or hangs"
mkdir -p $exp/rnd/sub
for i in 0 1 2 3 4 5 6; do echo "file $i" > $exp/rnd/f$i; done
echo kept > $exp/rnd/keep
head -c 300000 /dev/urandom > $exp/rnd/big
ln -sf f1 $exp/rnd/l
# rnd_op I: call I of sixteen kinds on the mount
rnd_op() {
	local i=$1 f=/tmp/mnt/rnd/f$(($1 % 7))
	case $((i % 16)) in
	0) ls -la /tmp/mnt/rnd ;;
	1) stat $f ;;
	2) cat $f ;;
	3) echo $i >> $f ;;
	4) mkdir /tmp/mnt/rnd/d$i ;;
	5) mv $f /tmp/mnt/rnd/g$((i % 5)) ;;
	6) readlink /tmp/mnt/rnd/l && cat /tmp/mnt/rnd/l ;;
	7) find /tmp/mnt/rnd ;;
	8) dd if=/tmp/mnt/rnd/big of=/dev/null bs=64k iflag=direct ;;
	9) dd if=/tmp/mnt/rnd/big of=/dev/null bs=64k ;;
	10) df /tmp/mnt && flock -n $f true ;;
	11) touch /tmp/mnt/rnd/t$i && chmod 600 /tmp/mnt/rnd/t$i ;;
	12) ln -s f2 /tmp/mnt/rnd/s$i && ln $f /tmp/mnt/rnd/h$i ;;
	13) truncate -s $((i * 100)) $f ;;
	14) rm -f /tmp/mnt/rnd/t$((i - 3)) /tmp/mnt/rnd/s$((i - 2)) &&
	    rmdir /tmp/mnt/rnd/d$((i - 10)) ;;
	15) dd if=/dev/urandom of=/tmp/mnt/rnd/w$((i % 3)) bs=16k count=4 oflag=direct ;;
	esac
}
: > /tmp/rnd-err
for seed in 1 2; do
	ORFS_SERVER_FAULT=fs-random ORFS_SERVER_FAULT_SEED=$seed start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1,noac
	read -r ok bad < <(tally 128 rnd_op /tmp/rnd-err)
	echo "seed $seed: $ok calls succeeded, $bad failed"
	[ "$ok" -gt 0 ] && [ "$bad" -gt 0 ] || fail "seed $seed: $ok succeeded, $bad failed: no mix"
	umount /tmp/mnt || umount -f /tmp/mnt || umount -l /tmp/mnt
	grep -q ' /tmp/mnt ' /proc/mounts && fail "still mounted"
	stop_server
done
# Every error a program saw is one it knows: no status the server made up,
# no kernel-internal code (ERESTARTSYS, EIOCBQUEUED...) passed through.
only_known_errors /tmp/rnd-err
dmesg | grep -E 'knet: reply with status|orfs: ' | sed 's/^\[[ 0-9.]*\] //' | sort | uniq -c | sort -rn | awk 'NR <= 8'
# The truth is intact for a server that tells it.
start_server -s $state -e data=$exp,no_root_squash
mnt
expect_eq "a file the random run only read" "$(cat /tmp/mnt/rnd/keep)" kept
rm -rf /tmp/mnt/rnd
umnt
stop_server

step "a server that lies (after the mount): calls fail with EIO, no oops, the mount goes away"
for fault in tag inline body; do
	ORFS_SERVER_FAULT=$fault start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1
	set +e
	ls -la /tmp/mnt > /tmp/out 2>&1; rc=$?
	set -e
	cat /tmp/out
	[ "$rc" -ne 0 ] || fail "a lying server's listing was taken ($fault)"
	expect_grep 'Input/output error' /tmp/out
	umnt
	stop_server
done
dmesg | grep -E 'knet: (reply for no request|malformed reply|reply larger)' | tail -n 3

step "file service lies, well framed: each call fails with its error, the rest of the mount works; statuses no errno has; a busy server"
mkdir -p $exp/lie/sub
head -c 3000 /dev/urandom > $exp/lie/small
head -c 65536 /dev/urandom > $exp/lie/big
echo truth > $exp/plain
# lie FAULT EXPECTED-MESSAGE COMMAND...: COMMAND fails with that message
lie() {
	local rc
	set +e
	"${@:3}" > /tmp/out 2>&1; rc=$?
	set -e
	cat /tmp/out
	[ "$rc" -ne 0 ] || fail "a lie was taken ($1: ${*:3})"
	expect_grep "$2" /tmp/out
}
for fault in fs-name fs-count fs-attr fs-mode fs-owner fs-loop; do
	ORFS_SERVER_FAULT=$fault start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1
	case $fault in
	fs-name)
		lie $fault 'Input/output error' ls /tmp/mnt/lie
		dmesg | tail -n 20 | grep -q 'malformed directory listing' ||
			fail "no word of the bad listing in the log"
		;;
	fs-count)
		lie $fault 'Input/output error' cat /tmp/mnt/lie/small
		lie $fault 'Input/output error' dd if=/tmp/mnt/lie/big of=/dev/null bs=64k iflag=direct
		dmesg | tail -n 20 | grep -q 'answer to an I/O did not add up' ||
			fail "no word of the bad count in the log"
		;;
	fs-attr | fs-mode | fs-owner)
		lie $fault 'Input/output error' stat /tmp/mnt/lie/small
		;;
	fs-loop)
		lie $fault 'Too many levels of symbolic links' stat /tmp/mnt/lie/sub
		;;
	esac
	# What the lie does not touch still works.
	if [ $fault != fs-name ]; then
		ls /tmp/mnt > /tmp/out
		expect_grep '^plain$' /tmp/out
	fi
	if [ $fault = fs-name ] || [ $fault = fs-loop ]; then
		expect_eq "$fault: a file the lie does not touch" "$(cat /tmp/mnt/plain)" truth
	fi
	umnt
	stop_server
done
# Statuses no errno has (the numbering's holes 41 and 58, past its end,
# kernel-internal codes): EIO, and a word in the log. An errno passes.
for st in 41 58 134 512 524 4294967295 13; do
	ORFS_SERVER_FAULT=fs-status ORFS_SERVER_FAULT_STATUS=$st start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1
	if [ $st = 13 ]; then
		lie fs-status 'Permission denied' stat /tmp/mnt/lie/small
	else
		lie fs-status 'Input/output error' stat /tmp/mnt/lie/small
		expect_grep "knet: reply with status $st, which is no errno: taken as EIO" <(dmesg)
	fi
	umount /tmp/mnt || umount -f /tmp/mnt
	stop_server
done
# A server that says "your first try still runs" for ever: a soft mount
# gives up after timeo x retrans, a hard one waits until the call is killed
# or the mount forced away.
ORFS_SERVER_FAULT=fs-busy start_server -F -s $state -e data=$exp,no_root_squash
mnt -o soft,timeo=10,retrans=2
t0=$(date +%s)
lie fs-busy 'Input/output error' timeout -s KILL 60 stat /tmp/mnt/lie/small
t=$(($(date +%s) - t0))
echo "soft mount, busy server: EIO after $t s"
[ $t -le 10 ] || fail "the soft mount gave up after $t s, past timeo x retrans"
umnt
mnt -o timeo=10
stat /tmp/mnt/lie/big > /dev/null 2>&1 &
st=$!
# Another name: a lookup of the same one would wait (in D state, as
# the VFS makes it) for the first, killed or not.
stat /tmp/mnt/plain > /dev/null 2>&1 &
st2=$!
sleep 3
if ended $st || ended $st2; then fail "a hard mount gave up on a busy server"; fi
kill -9 $st
wait_until 50 ended $st ||
	fail "a killed call on a hard mount did not end: $(cat /proc/$st/stat /proc/$st/stack 2>&1)"
# As with a dead server, umount -f (umount(8) without it asks statfs first).
umount -f /tmp/mnt || umount -l /tmp/mnt
wait_until 50 ended $st2 || fail "umount -f left a call waiting on a busy server"
wait $st $st2 2>/dev/null || true
grep -q ' /tmp/mnt ' /proc/mounts && fail "still mounted"
stop_server
rm -r $exp/lie $exp/plain
echo ok

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Power cuts of the server's host, simulated. The volume the server
# serves is a device-mapper log-writes target, which logs every write,
# FLUSH and FUA that reaches it in the order they became durable. A
# "power cut" is the server killed, a mark in the log, and the log
# replayed (tests/src/log-replay.c) onto a fresh copy of the device up to the
# mark, keeping only what a FLUSH or FUA made durable: what a real power
# cut leaves. The server then serves the replayed copy.
#
# MXBD: ext4 and XFS, a run each, on /dev/mxbdN, a program that
# appends numbered records with fsync() after each; after the cut the file
# system checks clean and every record the program was told is durable is
# there; so ext4 does at flush points spread over a run.
#
# ORFS: the export is ext4 on the logged device; records made durable one
# by one (fsync, fdatasync, O_DSYNC, msync) and files made durable
# are all there after the cut; so is what fio wrote with verification
# headers and fsync() before the cut. Data written back unstable when the cut
# comes is sent again at the program's fsync() (the server's write
# verifier changed), and is there after a second cut. A server that
# does not flush (the no-sync fault) loses them, and the check says so.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 600
. "$(dirname "$0")/lib.sh"

dir=/tmp/crash
replay=$ORFS_BIN/log-replay
mkdir -p $dir /tmp/cm
modprobe dm_log_writes
modprobe loop
modprobe xfs
load_suite

# lw_create NAME BASE LOG: a log-writes target NAME logging BASE's writes
# to LOG; prints its node, as the kernel names it (no udev here to make
# /dev/mapper's)
lw_create() {
	dmsetup create "$1" --noudevsync --table "0 $(blockdev --getsz "$2") log-writes $2 $3"
	local node
	node=/dev/$(dmsetup info -c --noheadings -o blkdevname "$1")
	[ -b "$node" ] || fail "no block device $node for $1"
	echo "$node"
}

# acked_past N: the writer was told more than N records are durable (the
# count may be caught empty while the writer rewrites it: none yet)
acked_past() {
	local n
	n=$(cat "$dir/acked")
	[ "${n:-0}" -gt "$1" ]
}

# The file system of the MXBD runs ($fs: ext4 or xfs) and its volume's size.
fs=ext4
vol_size() { if [ $fs = xfs ]; then echo 320M; else echo 64M; fi; }
# fs_check DEV: the file system's own check, read-only
fs_check() {
	if [ $fs = xfs ]; then xfs_repair -n "$1"; else fsck.ext4 -fn "$1"; fi
}

# cut_run NAME [FAULT]: one run: a fresh volume logged, $fs made on it
# through MXBD, records appended until the power cut. Leaves the replayed
# volume in $dir/NAME.img and the last record acknowledged in $dir/acked.
cut_run() {
	local name=$1 fault=${2:-} dev base log lw i
	rm -f $dir/*.img $dir/acked
	truncate -s "$(vol_size)" $dir/dev.img
	truncate -s 256M $dir/log.img
	base=$(losetup -f --show $dir/dev.img)
	log=$(losetup -f --show $dir/log.img)
	# The log starts from a device of zeros: so does its replay.
	lw=$(lw_create crashlw "$base" "$log")
	on_exit "dmsetup remove --noudevsync crashlw 2>/dev/null || true"
	if [ -n "$fault" ]; then
		ORFS_SERVER_FAULT=$fault start_server -F -b vol="$lw"
	else
		start_server -b vol="$lw"
	fi
	dev=$("$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vol io_timeout=2 loss_timeout=2)
	on_exit "umount -l /tmp/cm 2>/dev/null; $ORFS_PROJ/tools/mxbdctl detach ${dev#/dev/} force 2>/dev/null || true"
	if [ $fs = xfs ]; then mkfs.xfs -q -f -K "$dev"; else mkfs.ext4 -q -F "$dev"; fi
	mount "$dev" /tmp/cm
	# From here on, every flush point holds a file system (points_check).
	dmsetup message crashlw 0 mark made
	echo 0 > $dir/acked
	# Records, each made durable by dd's fsync() before the next.
	(
		for ((i = 1; ; i++)); do
			printf 'record %08d\n' $i |
				dd of=/tmp/cm/records oflag=append conv=notrunc,fsync status=none ||
				exit 0
			echo $i > $dir/acked
		done
	) 2> /dev/null &
	local writer=$!
	wait_until 300 acked_past $((20 + RANDOM % 100)) || fail "the records did not start: $(cat $dir/acked)"
	sleep 0.$((RANDOM % 10))
	# The cut: the server's host stops; the log is marked where it was.
	kill_server
	dmsetup message crashlw 0 mark cut
	wait "$writer" 2> /dev/null || true
	echo "$name ($fs): cut after record $(cat $dir/acked)"
	umount -l /tmp/cm 2> /dev/null || true
	"$ORFS_PROJ/tools/mxbdctl" detach "${dev#/dev/}" force 2> /dev/null || true
	dmsetup remove --noudevsync crashlw
	"$replay" -n "$log" > $dir/points
	echo "$name: the log has $(cat $dir/points) flush points"
	truncate -s "$(vol_size)" $dir/$name.img
	"$replay" -m cut "$log" $dir/$name.img
	losetup -d "$log" "$base"
}

# check NAME: serve the replayed volume; $fs recovers and checks clean,
# and every acknowledged record is there. Returns 1 if not.
check() {
	local name=$1 dev acked got ok=0
	acked=$(cat $dir/acked)
	start_server -b vol=$dir/$name.img
	dev=$("$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vol)
	if mount "$dev" /tmp/cm 2> $dir/mount.err; then
		got=$(grep -c '^record ' /tmp/cm/records 2> /dev/null || true)
		echo "$name: $acked records acknowledged, ${got:-0} there"
		for ((i = 1; i <= acked; i++)); do printf 'record %08d\n' $i; done > $dir/want
		head -n "$acked" /tmp/cm/records > $dir/have 2> /dev/null || true
		cmp -s $dir/want $dir/have || ok=1
		umount /tmp/cm
		fs_check "$dev" > $dir/fsck.out 2>&1 || { cat $dir/fsck.out; ok=1; }
	else
		echo "$name: the replayed file system does not mount: $(cat $dir/mount.err)"
		ok=1
	fi
	"$ORFS_PROJ/tools/mxbdctl" detach "${dev#/dev/}"
	stop_server
	return $ok
}

step "log-replay reads a log-writes log as the kernel writes it"
truncate -s 8M $dir/t.img
truncate -s 64M $dir/tlog.img
tb=$(losetup -f --show $dir/t.img)
tl=$(losetup -f --show $dir/tlog.img)
tw=$(lw_create crashlw "$tb" "$tl")
# block CHAR: 4096 bytes of CHAR
block() { printf "$1%.0s" $(seq 4096); }
block A | dd of="$tw" bs=4096 seek=3 oflag=direct status=none
sync "$tw"
block B | dd of="$tw" bs=4096 seek=5 oflag=direct,dsync status=none
block C | dd of="$tw" bs=4096 seek=7 oflag=direct status=none
dmsetup message crashlw 0 mark end
dmsetup remove --noudevsync crashlw
"$replay" -l "$tl" > $dir/list
cat $dir/list
truncate -s 8M $dir/r.img
"$replay" -m end "$tl" $dir/r.img
# A was flushed, B was written through (a flush or FUA), C never was.
expect_eq "block 3 after the replay" "$(dd if=$dir/r.img bs=4096 skip=3 count=1 status=none | tr -d A | wc -c)" 0
expect_eq "block 5 after the replay" "$(dd if=$dir/r.img bs=4096 skip=5 count=1 status=none | tr -d B | wc -c)" 0
expect_eq "block 7 after the replay" "$(dd if=$dir/r.img bs=4096 skip=7 count=1 status=none | tr -d '\0' | wc -c)" 0
# Replayed whole (C's write included as the log has it): -m is what cuts.
truncate -s 8M $dir/all.img
"$replay" -a "$tl" $dir/all.img
expect_eq "block 7 of a replay of every entry" "$(dd if=$dir/all.img bs=4096 skip=7 count=1 status=none | tr -d C | wc -c)" 0
losetup -d "$tl" "$tb"

# points_check: the log of the last run, replayed to flush points after
# the file system was made (a dozen, spread, and the last): at each, ext4
# mounts (its journal recovers) and checks clean, as fstests' generic/482.
points_check() {
	local first last k step n=0
	first=$("$replay" -l $dir/log.img | awk '/ mark made$/ { print p + 1; exit } / (flush|fua)/ { p++ }')
	last=$(cat $dir/points)
	[ -n "$first" ] && [ "$first" -le "$last" ] || fail "no flush point after the mark: $first of $last"
	step=$(((last - first) / 8 + 1))
	for ((k = first; k <= last; k += step)); do
		points_one "$k"
		n=$((n + 1))
	done
	[ $(((last - first) % step)) -eq 0 ] || { points_one "$last"; n=$((n + 1)); }
	echo "flush points $first to $last: $n replayed, each clean"
}

# points_one K: replay to flush point K and check the file system there
points_one() {
	local loop
	rm -f $dir/p.img
	truncate -s 64M $dir/p.img
	"$replay" -p "$1" $dir/log.img $dir/p.img
	loop=$(losetup -f --show $dir/p.img)
	mount "$loop" /tmp/cm || fail "flush point $1: ext4 does not mount"
	umount /tmp/cm
	fsck.ext4 -fn "$loop" > $dir/fsck.out 2>&1 || { cat $dir/fsck.out; fail "flush point $1: fsck"; }
	losetup -d "$loop"
}

step "MXBD: ext4, then XFS, and fsync'd records across power cuts"
for run in 1 2; do
	[ $run -lt 2 ] || fs=xfs
	cut_run "cut$run"
	check "cut$run" || fail "run $run: an acknowledged record was lost or $fs is damaged"
	[ $run -ne 1 ] || points_check
done
fs=ext4

step "a server that does not flush loses acknowledged records, and the check says so"
cut_run nosync no-sync
if check nosync; then
	fail "the check found nothing lost from a server that never flushed"
fi

# A program's durable work on ORFS: numbered records appended, each made
# durable in turn by fsync(), fdatasync(), an O_DSYNC write and
# msync(MS_SYNC) of a shared mapping (the file grown first); every tenth
# record, a new file made durable by fsync() of it under a temporary
# name, a rename to its own and fsync() of its directory, as POSIX asks.
# It writes the last record and file it was told are durable to
# $dir/acked and $dir/made, and ends at its first error.
cat > $dir/writer.py <<'PY'
import mmap, os, sys
top, acked, made = sys.argv[1:4]
rec_path = os.path.join(top, "records")
def tell(path, i):
    with open(path + ".new", "w") as f:
        f.write("%d\n" % i)
    os.rename(path + ".new", path)
try:
    for i in range(1, 1 << 30):
        rec = b"record %08d\n" % i
        how = i % 4
        if how == 2:
            fd = os.open(rec_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_DSYNC, 0o644)
            os.write(fd, rec)
        elif how == 3:
            fd = os.open(rec_path, os.O_RDWR | os.O_CREAT, 0o644)
            end = os.fstat(fd).st_size
            os.ftruncate(fd, end + len(rec))
            m = mmap.mmap(fd, end + len(rec))
            m[end:] = rec
            m.flush()       # msync(MS_SYNC)
            m.close()
        else:
            fd = os.open(rec_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(fd, rec)
            os.fsync(fd) if how == 0 else os.fdatasync(fd)
        os.close(fd)
        if i % 10 == 0:
            d = os.open(os.path.join(top, "made"), os.O_RDONLY | os.O_DIRECTORY)
            name = os.path.join(top, "made", "f%d" % i)
            f = os.open(name + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(f, b"file %d" % i)
            os.fsync(f)
            os.close(f)
            os.rename(name + ".tmp", name)
            os.fsync(d)
            os.close(d)
            tell(made, i)
        tell(acked, i)
except OSError:
    pass
PY
orfs_writer() { python3 $dir/writer.py /tmp/mnt $dir/acked $dir/made; }

# store_up: a fresh export store, ext4 on a log-writes target (crashlw)
# over 64 MiB of zeros, mounted on $dir/fs with journal commits once a
# minute (what is durable is what fsync made so), open to all; its loop
# devices in $st_base and $st_log.
store_up() {
	local lw
	rm -f $dir/*.img
	truncate -s 64M $dir/dev.img
	truncate -s 256M $dir/log.img
	st_base=$(losetup -f --show $dir/dev.img)
	st_log=$(losetup -f --show $dir/log.img)
	lw=$(lw_create crashlw "$st_base" "$st_log")
	mkfs.ext4 -q -F "$lw"
	mount -o commit=60 "$lw" $dir/fs
	chmod 0777 $dir/fs
	sync -f $dir/fs
}

# store_cut MARK IMG: the server killed and the log marked MARK, the
# store goes, and its log is replayed to MARK onto IMG (64 MiB of zeros):
# what the power cut left.
store_cut() {
	umount $dir/fs
	dmsetup remove --noudevsync crashlw
	truncate -s 64M "$2"
	"$replay" -m "$1" "$st_log" "$2"
	losetup -d "$st_log" "$st_base"
}

# orfs_cut NAME [FAULT]: one ORFS run to a power cut and back; fails the
# test if the server comes back without all it was told is durable,
# unless FAULT is given: then returns 1 if something is missing.
orfs_cut() {
	local name=$1 fault=${2:-} loop acked made i lost=0
	rm -f $dir/acked $dir/made
	store_up
	mkdir $dir/fs/made
	sync -f $dir/fs
	if [ -n "$fault" ]; then
		ORFS_SERVER_FAULT=$fault start_server -F -e data=$dir/fs,no_root_squash
	else
		start_server -e data=$dir/fs,no_root_squash
	fi
	mount_orfs soft,timeo=10,retrans=1 "$ORFS_ADDR:/data" /tmp/mnt
	echo 0 > $dir/acked
	echo 0 > $dir/made
	orfs_writer 2> /dev/null &
	writer=$!
	wait_until 300 acked_past $((20 + RANDOM % 100)) || fail "the records did not start: $(cat $dir/acked)"
	kill_server
	dmsetup message crashlw 0 mark cut
	wait "$writer" 2> /dev/null || true
	acked=$(cat $dir/acked)
	made=$(cat $dir/made)
	echo "$name: cut after record $acked, file $made"
	umount -f /tmp/mnt 2> /dev/null || umount -l /tmp/mnt
	store_cut cut $dir/orfs.img
	# The server's host comes back: its file system recovers and checks clean.
	loop=$(losetup -f --show $dir/orfs.img)
	mount "$loop" $dir/fs || fail "$name: the export's ext4 does not mount after the cut"
	umount $dir/fs
	fsck.ext4 -fn "$loop" > $dir/fsck.out 2>&1 || { cat $dir/fsck.out; fail "$name: fsck"; }
	mount "$loop" $dir/fs
	start_server -e data=$dir/fs,no_root_squash
	mount_orfs hard "$ORFS_ADDR:/data" /tmp/mnt
	for ((i = 1; i <= acked; i++)); do printf 'record %08d\n' $i; done > $dir/want
	head -n "$acked" /tmp/mnt/records > $dir/have 2> /dev/null || true
	if ! cmp -s $dir/want $dir/have; then
		echo "$name: of $acked acknowledged records, $(grep -c . $dir/have) came back"
		lost=1
	fi
	for ((i = 10; i <= made; i += 10)); do
		if [ "$(cat /tmp/mnt/made/f$i 2> /dev/null)" != "file $i" ]; then
			echo "$name: file f$i, made durable, is missing or wrong"
			lost=1
		fi
	done
	[ $lost -eq 1 ] || echo "$name: $acked records and $((made / 10)) files there"
	umount /tmp/mnt
	stop_server
	umount $dir/fs
	losetup -d "$loop"
	[ $lost -eq 0 ] || [ -n "$fault" ] || fail "$name: what was acknowledged as durable was lost"
	return $lost
}

step "ORFS: fsync'd records and files across power cuts of an ext4 export"
mkdir -p /tmp/mnt $dir/fs
orfs_cut orfs1

# fio_job FILE ARGS...: the verified job of fio_cut, the same each time
fio_job() {
	local f=$1
	shift
	fio --name=durable --filename="$f" --size=8M --bs=16k --rw=randwrite \
		--ioengine=psync --randrepeat=1 --verify=crc32c --verify_state_save=0 \
		--output=$dir/fio.out "$@"
}

# fio_cut: fio writes 8 MiB at random with crc32c verification headers,
# fsync() after every 8 writes and at the end, and reports them done;
# then, while another file is being written and nothing synced, the
# power is cut. After the server's host comes back, fio verifies every
# block it was told is durable.
fio_cut() {
	local loop noise
	store_up
	start_server -e data=$dir/fs,no_root_squash
	mount_orfs soft,timeo=10,retrans=1 "$ORFS_ADDR:/data" /tmp/mnt
	fio_job /tmp/mnt/fio.dat --fsync=8 --end_fsync=1 --do_verify=0 ||
		{ cat $dir/fio.out; fail "fio's write pass"; }
	# The last durable step before the cut: a file replaced by a rename,
	# made durable by fsync() of its directory alone.
	python3 -c 'import os
f = os.open("/tmp/mnt/kept.tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(f, b"kept"); os.fsync(f); os.close(f)
os.rename("/tmp/mnt/kept.tmp", "/tmp/mnt/kept")
d = os.open("/tmp/mnt", os.O_RDONLY | os.O_DIRECTORY); os.fsync(d); os.close(d)' ||
		fail "the durable rename failed"
	# Written, never synced, when the cut comes: not checked.
	dd if=/dev/urandom of=/tmp/mnt/noise bs=64k count=400 status=none 2> /dev/null &
	noise=$!
	sleep 1
	kill_server
	dmsetup message crashlw 0 mark cut
	wait "$noise" 2> /dev/null || true
	umount -f /tmp/mnt 2> /dev/null || umount -l /tmp/mnt
	store_cut cut $dir/orfs.img
	loop=$(losetup -f --show $dir/orfs.img)
	fsck.ext4 -fn "$loop" > $dir/fsck.out 2>&1 || { cat $dir/fsck.out; fail "fio: fsck"; }
	mount "$loop" $dir/fs
	start_server -e data=$dir/fs,no_root_squash
	mount_orfs hard "$ORFS_ADDR:/data" /tmp/mnt
	fio_job /tmp/mnt/fio.dat --verify_only=1 ||
		{ cat $dir/fio.out; fail "fio's verification after the cut"; }
	grep -q 'err= 0' $dir/fio.out && grep -q 'READ:.* io=8192KiB' $dir/fio.out ||
		{ cat $dir/fio.out; fail "fio's verification after the cut"; }
	echo "fio: 8 MiB fsync'd before the cut, verified after it"
	expect_eq "the file renamed into place, its directory fsync'd, after the cut" \
		"$(cat /tmp/mnt/kept 2> /dev/null)" kept
	umount /tmp/mnt
	stop_server
	umount $dir/fs
	losetup -d "$loop"
}

step "ORFS: fio's verified writes and a durable rename, before a power cut, are there after it"
fio_cut

# wb_stat FIELD: the mount's write-back count FIELD (unstable, commits,
# resent, lost, held), from mountstats
wb_stat() { mount_stat /tmp/mnt writeback "$1"; }

# The program of the unstable run: a durable empty file, 1 MiB written
# back (sync_file_range) but not committed; READY made; then, once GO
# exists, fsync() and its result.
cat > $dir/unstable.py <<'PY'
import ctypes, os, sys, time
path, ready, go = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
d = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
f = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
os.fsync(f)
os.fsync(d)
os.write(f, bytes((i * 7 + 3) & 0xff for i in range(1 << 20)))
# SYNC_FILE_RANGE_WAIT_BEFORE | _WRITE | _WAIT_AFTER: written back, no fsync.
if libc.sync_file_range(f, ctypes.c_longlong(0), ctypes.c_longlong(0), ctypes.c_uint(7)):
    sys.exit("sync_file_range: " + os.strerror(ctypes.get_errno()))
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.1)
try:
    os.fsync(f)
    print("fsync ok")
except OSError as e:
    print("fsync failed:", e)
PY

# pattern_ok FILE: FILE holds the program's 1 MiB
pattern_ok() {
	python3 -c 'import sys
want = bytes((i * 7 + 3) & 0xff for i in range(1 << 20))
sys.exit(0 if open(sys.argv[1], "rb").read() == want else 1)' "$1" 2> /dev/null
}

# resend_cut: data written back unstable, the cut before any COMMIT: the
# client stays mounted, the server comes back on what the cut left, and
# the program's fsync() sends the data again (the verifier changed) and
# returns once it is durable: a second cut right after finds it there.
resend_cut() {
	local lw loop log2 r0 r1
	rm -f $dir/ready $dir/go
	store_up
	start_server -e data=$dir/fs,no_root_squash
	mount_orfs hard,timeo=10 "$ORFS_ADDR:/data" /tmp/mnt
	# No flusher run before the cut: it would commit (write_inode). Not 0,
	# which turns the periodic flush off but wakes the flusher at once
	# whenever an inode is dirtied, and it then writes back and commits
	# whatever is over the new mount's small background share.
	sysctl -q vm.dirty_writeback_centisecs=360000
	on_exit "sysctl -q vm.dirty_writeback_centisecs=500"
	python3 $dir/unstable.py /tmp/mnt/u $dir/ready $dir/go > $dir/u.out 2>&1 &
	local prog=$!
	on_exit "kill $prog 2> /dev/null"
	wait_until 300 test -e $dir/ready || fail "the program did not write: $(cat $dir/u.out)"
	[ "$(wb_stat held)" -ge 1048576 ] || fail "1 MiB written back unstable is not held: $(wb_stat held)"
	r0=$(wb_stat resent)
	kill_server
	dmsetup message crashlw 0 mark cut
	store_cut cut $dir/orfs.img
	loop=$(losetup -f --show $dir/orfs.img)
	# What the cut left: the file, durable, but not the data never committed.
	mount "$loop" $dir/fs
	[ -e $dir/fs/u ] || fail "the file made durable is not there after the cut"
	! pattern_ok $dir/fs/u || fail "the data was durable before any COMMIT: nothing to send again"
	umount $dir/fs
	cp $dir/orfs.img $dir/orfs2.img
	truncate -s 256M $dir/log2.img
	log2=$(losetup -f --show $dir/log2.img)
	lw=$(lw_create crashlw "$loop" "$log2")
	mount -o commit=60 "$lw" $dir/fs
	start_server -e data=$dir/fs,no_root_squash
	touch $dir/go
	wait "$prog" || true
	grep -qx "fsync ok" $dir/u.out || fail "fsync after the restart: $(cat $dir/u.out)"
	r1=$(wb_stat resent)
	echo "resend: $((r1 - r0)) bytes sent again after the restart"
	[ $((r1 - r0)) -ge 1048576 ] || fail "fsync sent again $((r1 - r0)) bytes, not the 1 MiB lost"
	[ "$(wb_stat held)" -eq 0 ] || fail "$(wb_stat held) bytes still held after fsync"
	# The second cut, right after fsync() returned: the data is there.
	kill_server
	dmsetup message crashlw 0 mark cut2
	umount -f /tmp/mnt 2> /dev/null || umount -l /tmp/mnt
	sysctl -q vm.dirty_writeback_centisecs=500
	umount $dir/fs
	dmsetup remove --noudevsync crashlw
	"$replay" -m cut2 "$log2" $dir/orfs2.img
	losetup -d "$log2" "$loop"
	loop=$(losetup -f --show $dir/orfs2.img)
	fsck.ext4 -fn "$loop" > $dir/fsck.out 2>&1 || { cat $dir/fsck.out; fail "resend: fsck"; }
	mount "$loop" $dir/fs
	pattern_ok $dir/fs/u || fail "the data fsync() said durable is not there after the second cut"
	umount $dir/fs
	losetup -d "$loop"
}

step "ORFS: data written back unstable is sent again when the server lost it"
resend_cut

step "a file server that does not fsync loses acknowledged records, and the check says so"
if orfs_cut orfs-nosync no-sync; then
	fail "the check found nothing lost from a server that never synced"
fi

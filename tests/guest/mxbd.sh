#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# MXBD over rxe against the real server: attach a volume at load, mkfs,
# mount, a tree of files, umount, a clean fsck, the files intact after a
# remount; fio with crc32c verification over mixed block sizes and queue
# depths; discard reading back as zeroes; a clean detach at unload; a
# read-only volume; servers that lie, one of them at random.
# lanes: check=6.12/siw all=*
# timeout: 460
. "$(dirname "$0")/lib.sh"

truncate -s 256M /tmp/mvol
head -c 8M /dev/urandom > /tmp/mro
start_server -b mvol=/tmp/mvol -b mro=/tmp/mro,ro
modprobe -a ib_core rdma_cm libcrc32c
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
expect_eq "endpoints" "$(ep_count)" "$(nproc)"

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

step "fio: reads and writes at depth 32 and 1, discards beside them, every block verified"
# Three jobs at once on separate ranges: a mixed read/write job of 512 B to
# 1 MiB at depth 32, 4 KiB to 128 KiB writes one at a time, and discards of
# a range filled beforehand, which must read back as zeroes afterwards.
dd if=/dev/urandom of=/dev/mxbd0 bs=1M count=16 seek=96 oflag=direct status=none
cat > /tmp/mix.fio <<EOF
[global]
filename=/dev/mxbd0
direct=1
ioengine=libaio
verify_state_save=0
[rw32]
rw=randrw
bsrange=512-1M
iodepth=32
offset=64M
size=16M
verify=crc32c
verify_fatal=1
do_verify=1
[w1]
rw=randwrite
bsrange=4k-128k
iodepth=1
offset=80M
size=16M
verify=crc32c
verify_fatal=1
do_verify=1
[trim]
rw=trim
bs=64k
iodepth=8
offset=96M
size=16M
EOF
fio /tmp/mix.fio --output=/tmp/fio.out || { cat /tmp/fio.out; fail "fio"; }
grep -E 'err=|read:|write:|trim:' /tmp/fio.out
expect_eq "jobs without error" "$(grep -c 'err= 0' /tmp/fio.out)" 3
cmp <(dd if=/dev/mxbd0 bs=1M count=16 skip=96 iflag=direct status=none) <(head -c 16M /dev/zero) ||
	fail "the range fio discarded does not read as zeroes"

step "one CPU's deep stream goes over every queue's connection; single requests stay on its own"
# blk-mq gives a request the hardware queue of the CPU that submits it; a
# request then takes the connection with the fewest requests in flight, its
# own queue's on a tie. fio held on CPU 0: 1 MiB reads 16 deep, then 4 KiB
# reads one at a time. The requests each connection carried are counted.
# spread DEPTH BYTES COUNT: the requests of each endpoint during one fio run
# of COUNT reads of BYTES
spread() {
	local before
	before=$(ep_each requests)
	taskset -c 0 fio --name=spread --filename=/dev/mxbd0 --direct=1 --ioengine=libaio \
		--rw=read --bs="$2" --iodepth="$1" --size=$(($2 * $3)) --output=/tmp/fio.out ||
		{ cat /tmp/fio.out; fail "fio at depth $1"; }
	paste <(echo "$before") <(ep_each requests) | awk '{ print $2 - $1 }'
}
spread 16 $((1 << 20)) 64 > /tmp/deep
spread 1 4096 512 > /tmp/single
echo "requests on each connection: depth 16 $(paste -sd ' ' /tmp/deep), depth 1 $(paste -sd ' ' /tmp/single)"
# Depth 16: every connection carries a fair share (a quarter of an even one).
awk -v n="$(nproc)" '{ c[NR] = $1; s += $1 } END { if (NR != n || s < 64) exit 1
	for (i = 1; i <= NR; i++) if (c[i] * 4 * n < s) exit 1 }' /tmp/deep ||
	fail "a connection carried less than a quarter of its share of a deep stream"
# Depth 1: one connection carries them all, but for a keep-alive or a rescan.
awk '$1 > m { m = $1 } { s += $1 } END { exit !(s >= 512 && s - m <= 4) }' /tmp/single ||
	fail "single requests left their CPU's connection"

step "discard and write-zeroes: the range reads back as zeroes, nothing else changes"
dd if=/dev/urandom of=/dev/mxbd0 bs=1M count=2 seek=200 oflag=direct status=none
blkdiscard -f -o $((200 << 20)) -l $((2 << 20)) /dev/mxbd0
cmp <(dd if=/dev/mxbd0 bs=1M count=2 skip=200 iflag=direct status=none) <(head -c 2M /dev/zero) ||
	fail "discarded blocks do not read as zeroes"
# WRITE_ZEROES (BLKZEROOUT): 12 KiB in the middle of a written MiB, the rest
# kept; sent as such (the block layer would write zeroes for a disk without it)
[ "$(cat /sys/block/mxbd0/queue/write_zeroes_max_bytes)" -gt 0 ] || fail "no write-zeroes"
head -c 1M /dev/urandom > /tmp/wz
dd if=/tmp/wz of=/dev/mxbd0 bs=1M seek=203 oflag=direct status=none
blkdiscard -f -z -o $(((203 << 20) + 8192)) -l 12288 /dev/mxbd0
dd if=/dev/zero of=/tmp/wz bs=4k seek=2 count=3 conv=notrunc status=none
cmp <(dd if=/dev/mxbd0 bs=1M count=1 skip=203 iflag=direct status=none) /tmp/wz ||
	fail "write-zeroes: the range is not zeroes, or more than the range changed"

step "unload detaches the device"
rmmod mxbd
[ ! -e /dev/mxbd0 ] || fail "/dev/mxbd0 outlived the module"

step "parameters out of range, or values that would carry options, fail the load and say why"
bad_load() {
	local want=$1
	shift
	if insmod "$ORFS_KMOD/mxbd/mxbd.ko" "$@" 2>/tmp/insmod.err; then
		rmmod mxbd
		fail "insmod mxbd $* loaded"
	fi
	dmesg | tail -n 3 > /tmp/why
	expect_grep "mxbd: $want" /tmp/why
}
bad_load "io_timeout=3601: seconds, 0 to 3600" io_timeout=3601
# Once a 704 ms time-out (x 1000 wrapped), an I/O failed at once, a rescan every 0.8 s.
bad_load "io_timeout=4294968: seconds" io_timeout=4294968
bad_load "loss_timeout=86401: seconds, 0 to 86400, or -1" loss_timeout=86401
bad_load "loss_timeout=10000000: seconds" loss_timeout=10000000
bad_load "loss_timeout=-2: seconds" loss_timeout=-2
bad_load "rescan_interval=17179870: seconds, 0 \\(never\\) to 86400" rescan_interval=17179870
bad_load "nr_queues=17: 0 \\(one per CPU\\) to 16" nr_queues=17
bad_load "server= and volume= are an address and a name, without spaces, commas or '='" \
	server="$ORFS_ADDR" volume=mvol,ro
[ ! -e /sys/module/mxbd ] || fail "mxbd stayed loaded"

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
ORFS_SERVER_FAULT=tag start_server -F -b mvol=/tmp/mvol
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mvol
if dd if=/dev/mxbd0 of=/dev/null bs=4k count=64 iflag=direct status=none 2>/tmp/dd.err; then
	fail "reads from a lying server succeeded"
fi
cat /tmp/dd.err
expect_grep 'Input/output error' /tmp/dd.err
rmmod mxbd
[ ! -e /dev/mxbd0 ] || fail "/dev/mxbd0 outlived the module"
stop_server

step "an INFO that no disk has is refused: the rescan fails, the device keeps its geometry"
ORFS_SERVER_FAULT=block-info start_server -F -b mvol=/tmp/mvol
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mvol rescan_interval=0
pbs=$(cat /sys/block/mxbd0/queue/physical_block_size)
# A connection's first two answers are true (the attach's INFO is one), every
# INFO after them says 3000: the third and fourth rescan at least are refused.
refused=0
for i in 1 2 3 4; do
	echo 1 2>> /tmp/rescan.err > /sys/block/mxbd0/mxbd/rescan || refused=$((refused + 1))
done
cat /tmp/rescan.err
[ "$refused" -ge 2 ] || fail "$refused rescans of 4 refused"
expect_grep 'Protocol error' /tmp/rescan.err
expect_grep "volume 'mvol' of $ORFS_ADDR: INFO refused: physical block size not a power of two" <(dmesg)
expect_eq "physical block" "$(cat /sys/block/mxbd0/queue/physical_block_size)" "$pbs"
expect_eq "state" "$(cat /sys/block/mxbd0/mxbd/state)" live
dd if=/dev/mxbd0 of=/dev/null bs=64k count=4 iflag=direct status=none || fail "reads after a refused INFO"
rmmod mxbd
stop_server

step "a server that answers at random: errors a program knows, never a crash; a true server works again"
# rnd_op I: block operation I of eight kinds
rnd_op() {
	local i=$1
	case $((i % 8)) in
	0 | 4) dd if=/dev/mxbd0 of=/dev/null bs=4k count=1 skip=$((i * 7)) iflag=direct status=none ;;
	1) dd if=/dev/urandom of=/dev/mxbd0 bs=4k count=1 seek=$((i * 5)) oflag=direct status=none ;;
	2) dd if=/dev/mxbd0 of=/dev/null bs=64k count=2 skip=$i iflag=direct status=none ;;
	3) dd if=/dev/urandom of=/dev/mxbd0 bs=64k count=1 seek=$((i + 300)) oflag=direct,dsync status=none ;;
	5) blkdiscard -f -o $((i << 16)) -l 65536 /dev/mxbd0 ;;
	6) blkdiscard -f -z -o $((i << 16)) -l 8192 /dev/mxbd0 ;;
	7) echo 1 > /sys/block/mxbd0/mxbd/rescan ;;
	esac
}
: > /tmp/rnd-err
for seed in 3 4; do
	ORFS_SERVER_FAULT=block-random ORFS_SERVER_FAULT_SEED=$seed start_server -F -b mvol=/tmp/mvol
	insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mvol rescan_interval=1
	read -r ok bad < <(tally 96 rnd_op /tmp/rnd-err)
	echo "seed $seed: $ok operations succeeded, $bad failed; state $(cat /sys/block/mxbd0/mxbd/state)"
	[ "$ok" -gt 0 ] && [ "$bad" -gt 0 ] || fail "seed $seed: $ok succeeded, $bad failed: no mix"
	timeout 60 rmmod mxbd || fail "the detach failed or hung"
	[ ! -e /dev/mxbd0 ] || fail "/dev/mxbd0 outlived the module"
	stop_server
done
only_known_errors /tmp/rnd-err
dmesg | grep -E 'knet: reply with status|mxbd' | sed 's/^\[[ 0-9.]*\] //' | sed 's/[0-9]\+/N/g' |
	sort | uniq -c | sort -rn | awk 'NR <= 8'
start_server -b mvol=/tmp/mvol
insmod "$ORFS_KMOD/mxbd/mxbd.ko" server="$ORFS_ADDR" volume=mvol
expect_eq "size" "$(blockdev --getsize64 /dev/mxbd0)" 268435456
head -c 1M /dev/urandom > /tmp/one
dd if=/tmp/one of=/dev/mxbd0 bs=1M seek=100 oflag=direct status=none
cmp <(dd if=/dev/mxbd0 bs=1M count=1 skip=100 iflag=direct status=none) /tmp/one ||
	fail "the device reads back wrong from a true server"
rmmod mxbd
stop_server

step "fair service by bytes: 1 MiB requests beside a 4 KiB depth-64 stream on other volumes of one server"
# Server-driven transfers share the server's buffers and workers by bytes
# (Documentation/server.md): a stream of small requests must not starve
# large ones on other volumes. Each large job must get a quarter of the
# small stream's bytes at least (they get about as many), no request may
# take 10 s (measured worst: under 1 s), and nothing times out.
for v in fa fb fc fd; do truncate -s 128M /tmp/$v; done
start_server -b fa=/tmp/fa -b fb=/tmp/fb -b fc=/tmp/fc -b fd=/tmp/fd
insmod "$ORFS_KMOD/mxbd/mxbd.ko"
for v in fa fb fc fd; do "$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" $v > /dev/null; done
cat > /tmp/fair.fio <<EOF
[global]
direct=1
ioengine=libaio
time_based=1
runtime=10
[small]
filename=/dev/mxbd0
rw=randwrite
bs=4k
iodepth=64
[bigwrite]
filename=/dev/mxbd1
rw=write
bs=1M
iodepth=1
[bigread]
filename=/dev/mxbd2
rw=randread
bs=1M
iodepth=1
[mixed]
filename=/dev/mxbd3
rw=randrw
bsrange=512-1M
iodepth=4
EOF
dmesg_before=$(dmesg | wc -l)
fio /tmp/fair.fio --output-format=json --output=/tmp/fair.json || { cat /tmp/fair.json; fail "fio"; }
python3 - /tmp/fair.json <<'EOF'
import json, sys
jobs = {j["jobname"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
kib = {n: j["read"]["io_kbytes"] + j["write"]["io_kbytes"] for n, j in jobs.items()}
worst = {n: max(j["read"]["clat_ns"]["max"], j["write"]["clat_ns"]["max"]) / 1e9
         for n, j in jobs.items()}
bad = 0
for n in ("small", "bigwrite", "bigread", "mixed"):
    print(f"{n}: {kib[n]} KiB, worst completion {worst[n]:.3f} s")
    if worst[n] >= 10:
        print(f"FAIL: a request of {n} took {worst[n]:.1f} s")
        bad = 1
    if n != "small" and kib[n] * 4 < kib["small"]:
        print(f"FAIL: {n} got {kib[n]} KiB beside the small stream's {kib['small']}")
        bad = 1
sys.exit(bad)
EOF
if dmesg | tail -n +$((dmesg_before + 1)) | grep -E 'timed out|connection to .* lost'; then
	fail "a healthy server caused a time-out"
fi
for d in 3 2 1 0; do "$ORFS_PROJ/tools/mxbdctl" detach mxbd$d; done
rmmod mxbd
echo ok

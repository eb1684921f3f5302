#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# orfs-fsx on ORFS against the export's own file system, ext4 and XFS
# (which clones, dedupes and unshares): the same operations on an ORFS
# mount and on a directory of the server's file system, every answer,
# size and content compared after each step, and the server's copy after
# each sync. Files stay open, so what write-back sent unstable is held
# for a COMMIT while the server collapses, inserts, punches, copies and
# clones under it. Hand-written sequences of past failures first (a size
# left stale by a collapse), then random ones in each way of writing and
# reading (buffered with mappings, mmap, O_DIRECT, AIO, io_uring, an
# 8 MiB file), with write-back held for a COMMIT and with
# writeback=stable; the ext4 and the XFS run of each at once, one a vCPU.
# FSX_STEPS (default 400) sets the steps of a random run, FSX_SEED its
# seed (default: fixed ones). make check-all (CHECK_ALL=1) then runs every
# mode on both exports for FSX_ALL_STEPS (default 5000) with a new seed.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 1500
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

ops=$ORFS_PROJ/tests/guest/fsx
steps=${FSX_STEPS:-400}
modprobe xfs
mkfs.xfs -q -f /dev/ram1
mkdir -p /tmp/xfs /tmp/mntx
mount /dev/ram1 /tmp/xfs
# The server holds files of it open: it stops first.
on_exit "umount /tmp/mnt 2> /dev/null; umount /tmp/mntx 2> /dev/null; stop_server; umount /tmp/xfs"
mkdir /tmp/xfs/exp /tmp/xfs/ref
stop_server
start_server -s $state -e data=$exp,no_root_squash -e xfs=/tmp/xfs/exp,no_root_squash

# mounts OPTIONS: the ext4 export at /tmp/mnt, the XFS one at /tmp/mntx
mounts() {
	mount -t orfs -o "$1" "$ORFS_ADDR:/data" /tmp/mnt
	mount -t orfs -o "$1" "$ORFS_ADDR:/xfs" /tmp/mntx
	echo "mount options $1"
}
umounts() { umount /tmp/mnt; umount /tmp/mntx; }

runs=0 pids=() names=()
# fsx NAME EXPORT SEED STEPS OPTION...: orfs-fsx started in the background
# in directory NAME of EXPORT's mount (data: ext4, xfs) and of the
# reference beside the export, its operations logged; fsx_wait waits.
fsx() {
	local name=$1 export=$2 seed=$3 n=$4 base=/tmp/e4 mnt=/tmp/mnt
	shift 4
	[ "$export" = data ] || base=/tmp/xfs mnt=/tmp/mntx
	mkdir "$mnt/$name" "$base/ref/$name"
	echo "$name: orfs-fsx $* (seed $seed, $n steps, export $export)"
	"$ORFS_BIN/orfs-fsx" -L "/tmp/$name.ops" "$@" "$mnt/$name" "$base/ref/$name" "$seed" "$n" \
		"$base/exp/$name" > "/tmp/$name.out" 2>&1 &
	pids+=($!)
	names+=("$name:$mnt:$base")
}
# fsx_wait: every run started must pass; a failing run's operations are
# kept in the results, for orfs-fsx -R to replay
fsx_wait() {
	local i name mnt base bad=
	for i in "${!pids[@]}"; do
		IFS=: read -r name mnt base <<< "${names[$i]}"
		if wait "${pids[$i]}" && grep -qE '^ok [0-9]+ steps$' "/tmp/$name.out"; then
			echo "$name: $(grep -v ' 0 ok 0 failed$' "/tmp/$name.out" | tr '\n' ' ')"
			rm -rf "${mnt:?}/$name" "${base:?}/ref/$name" "/tmp/$name.ops"
			runs=$((runs + 1))
		else
			echo "$name:"
			cat "/tmp/$name.out"
			cp "/tmp/$name.ops" "$ORFS_RESULTS/fsx-$name.ops"
			bad+=" $name"
		fi
	done
	pids=() names=()
	[ -z "$bad" ] || fail "orfs-fsx$bad: the operations are in the results as fsx-NAME.ops; orfs-fsx -R replays them"
}
# did NAME OPERATION...: run NAME did each OPERATION successfully at least once
did() {
	local name=$1 k n
	shift
	for k in "$@"; do
		n=$(awk -v k="$k" '$1 == k { print $2 }' "/tmp/$name.out")
		[ "${n:-0}" -gt 0 ] || fail "orfs-fsx $name never did $k successfully: $(grep "^$k " "/tmp/$name.out")"
	done
}
# pair NAME SEED STEPS OPTION...: NAME-data on ext4 with SEED (FSX_SEED
# when set) and NAME-xfs on XFS with the next seed, at once
pair() {
	local name=$1 seed=${FSX_SEED:-$2} n=$3
	shift 3
	fsx "$name-data" data "$seed" "$n" "$@"
	fsx "$name-xfs" xfs "$((seed + 1))" "$n" "$@"
	fsx_wait
}

step "the sequences that found a stale size or stale pages after the server moved bytes replay right, write-back held and stable, on ext4 and XFS"
for wb in unstable stable; do
	mounts "writeback=$wb,largefolio=$lf"
	for s in collapse-size shift-held; do
		fsx "$s-data-$wb" data 1 100 -R "$ops/$s.ops"
		fsx "$s-xfs-$wb" xfs 1 100 -R "$ops/$s.ops"
		fsx_wait
	done
	did "shift-held-xfs-$wb" fallocate-collapse fallocate-insert fallocate-punch copy fsync
	umounts
done

step "random operations, buffered and mapped, on ext4 and XFS, write-back held and stable"
mounts "largefolio=$lf"
pair buf 68 "$steps" -m buffered
did buf-data fallocate-collapse fallocate-insert mwrite mread scatter dwrite
did buf-xfs clone dedupe fallocate-unshare fallocate-collapse fallocate-insert fallocate-punch \
	fallocate-zero copy truncate reopen fsync
umounts
mounts "writeback=stable,largefolio=$lf"
pair stable 70 "$steps" -m buffered
umounts

step "random operations through mappings only, in an 8 MiB file, with O_DIRECT, Linux AIO and io_uring"
mounts "largefolio=$lf"
pair mmap 72 "$steps" -m mmap
did mmap-xfs mwrite mread
pair big 74 "$((steps / 2))" -m buffered -l 8M -n 2
pair direct 76 "$steps" -m direct
did direct-data dwrite dread
pair aio 78 "$steps" -m aio
did aio-xfs awrite aread
pair uring 80 "$steps" -m uring
did uring-xfs uwrite uread
umounts

if [ "${CHECK_ALL:-0}" = 1 ]; then
	n=${FSX_ALL_STEPS:-5000}
	s=${FSX_SEED:-$(date +%s)}
	step "every mode on both exports, $n steps each, seed $s"
	for wb in unstable stable; do
		mounts "writeback=$wb,largefolio=$lf"
		for m in buffered mmap direct aio uring; do
			[ $wb = unstable ] || [ $m = buffered ] || continue
			FSX_SEED=$s pair "all-$m-$wb" 0 "$n" -m $m
		done
		umounts
	done
	mounts "largefolio=$lf"
	FSX_SEED=$s pair all-big 0 "$n" -m buffered -l 8M -n 2
	umounts
fi
echo "$runs runs of orfs-fsx passed"
